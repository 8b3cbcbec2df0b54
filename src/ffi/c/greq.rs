//! Generalized requests: MPI_Grequest_start and MPI_Grequest_complete, and the calls of
//! the program's callbacks in C's (or Fortran's) conventions. What runs them when is
//! crate::request::greq's.
use crate::abi::*;
use crate::error::err;
use crate::ffi::c::p2p::{req_handle, req_id, CStatus};
use crate::mpi_entry;
use crate::p2p::Status;
use crate::request::greq::{self, Callbacks};
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub type QueryFn = unsafe extern "C" fn(*mut c_void, *mut CStatus) -> c_int;
pub type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
pub type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

/// The Fortran forms: every argument by reference, the extra state an
/// INTEGER(KIND=MPI_ADDRESS_KIND), the error code in a trailing IERROR. A request
/// started from Fortran keeps the address of the program's EXTRA_STATE variable
/// (fortran/src/custom.rs) and hands the callbacks that variable itself.
type FQuery = unsafe extern "C" fn(*mut isize, *mut CStatus, *mut c_int);
type FFree = unsafe extern "C" fn(*mut isize, *mut c_int);
type FCancel = unsafe extern "C" fn(*mut isize, *mut c_int, *mut c_int);

/// The callbacks MPI_Grequest_start was given.
struct Greq {
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    extra: usize,
    /// Fortran procedures (shmpi_grequest_set_fortran).
    fortran: AtomicBool,
}

impl Greq {
    fn fortran(&self) -> bool {
        self.fortran.load(Ordering::Relaxed)
    }
}

impl Callbacks for Greq {
    fn query(&self, st: &mut Status) -> i32 {
        let Some(q) = self.query else {
            return MPI_SUCCESS;
        };
        let mut cs = CStatus::from(st);
        let rc = if self.fortran() {
            // SAFETY: registered from Fortran with this signature; the extra state is the
            // program's variable (it must outlive the request, as with MPICH), the other
            // arguments point to our locals; the status has MPICH's Fortran layout (the C
            // one).
            unsafe {
                let f: FQuery = std::mem::transmute::<QueryFn, FQuery>(q);
                let mut ierr = 0;
                f(self.extra as *mut isize, &mut cs, &mut ierr);
                ierr
            }
        } else {
            // SAFETY: the program's query callback, called as the standard prescribes.
            unsafe { q(self.extra as *mut c_void, &mut cs) }
        };
        st.source = cs.source;
        st.tag = cs.tag;
        st.count_bytes = cs.count_bytes();
        st.cancelled = cs.count_hi_and_cancelled & 1 != 0;
        st.error = if rc != MPI_SUCCESS { rc } else { cs.error };
        rc
    }

    fn free(&self) -> i32 {
        let Some(f) = self.free else {
            return MPI_SUCCESS;
        };
        if self.fortran() {
            // SAFETY: registered from Fortran with this signature; the extra state as above.
            unsafe {
                let f: FFree = std::mem::transmute::<FreeFn, FFree>(f);
                let mut ierr = 0;
                f(self.extra as *mut isize, &mut ierr);
                ierr
            }
        } else {
            // SAFETY: the program's free callback.
            unsafe { f(self.extra as *mut c_void) }
        }
    }

    fn cancel(&self, complete: &dyn Fn() -> bool) -> Option<i32> {
        let c = self.cancel?;
        let complete = complete() as c_int;
        Some(if self.fortran() {
            // SAFETY: registered from Fortran with this signature; the extra state as above.
            unsafe {
                let f: FCancel = std::mem::transmute::<CancelFn, FCancel>(c);
                let (mut flag, mut ierr) = (complete, 0);
                f(self.extra as *mut isize, &mut flag, &mut ierr);
                ierr
            }
        } else {
            // SAFETY: the program's cancel callback.
            unsafe { c(self.extra as *mut c_void, complete) }
        })
    }
}

mpi_entry!(MPI_Grequest_start, PMPI_Grequest_start,
    (query_fn: Option<QueryFn>, free_fn: Option<FreeFn>, cancel_fn: Option<CancelFn>,
     extra_state: *mut c_void, request: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let id = greq::start(Arc::new(Greq {
        query: query_fn,
        free: free_fn,
        cancel: cancel_fn,
        extra: extra_state as usize,
        fortran: AtomicBool::new(false),
    }))?;
    crate::ffi::check::out(request, req_handle(id), "request")
});

/// For the Fortran binding of MPI_GREQUEST_START, right after it: the request's
/// callbacks are Fortran procedures (arguments by reference; the extra state given to
/// MPI_Grequest_start was the value of an INTEGER(KIND=MPI_ADDRESS_KIND)). Not part of
/// the MPI API.
#[no_mangle]
pub extern "C" fn shmpi_grequest_set_fortran(request: c_int) -> c_int {
    let Ok(Some(id)) = req_id(request) else {
        return MPI_ERR_REQUEST;
    };
    let cb = greq::callbacks(id);
    match cb
        .as_deref()
        .and_then(|g| (g as &dyn std::any::Any).downcast_ref::<Greq>())
    {
        Some(g) => {
            g.fortran.store(true, Ordering::Relaxed);
            MPI_SUCCESS
        }
        None => MPI_ERR_REQUEST,
    }
}

mpi_entry!(MPI_Grequest_complete, PMPI_Grequest_complete, (request: i32),
    errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    greq::complete(request)
});
