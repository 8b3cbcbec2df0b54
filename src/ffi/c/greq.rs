//! Generalized requests (MPI-2.2 section 12.2): MPI_Grequest_start and
//! MPI_Grequest_complete. The engine holds a request the program completes itself; this
//! module keeps its callbacks and runs them where the standard says:
//! - query_fn by the Wait/Test call that completes the request (its status is what the
//!   call returns, its return value the request's error) and by MPI_Request_get_status;
//! - free_fn right after query_fn in that call, or, for a request released with
//!   MPI_Request_free, by whichever of MPI_Request_free and MPI_Grequest_complete comes
//!   last;
//! - cancel_fn by MPI_Cancel, told whether the request is complete already.
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::ffi::c::p2p::{req_handle, req_id, CStatus};
use crate::ffi::check;
use crate::mpi_entry;
use crate::p2p::{self, Status};
use std::collections::HashMap;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

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

#[derive(Clone, Copy)]
struct Greq {
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    extra: usize,
    fortran: bool,
}

static GREQS: Mutex<Option<HashMap<usize, Greq>>> = Mutex::new(None);
/// How many generalized requests exist: completions of other requests skip the table
/// while there are none.
static LIVE: AtomicUsize = AtomicUsize::new(0);

fn with<T>(f: impl FnOnce(&mut HashMap<usize, Greq>) -> T) -> T {
    let mut g = GREQS.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

fn lookup(id: usize) -> Option<Greq> {
    if LIVE.load(Ordering::Acquire) == 0 {
        return None;
    }
    with(|m| m.get(&id).copied())
}

fn forget(id: usize) {
    if with(|m| m.remove(&id)).is_some() {
        LIVE.fetch_sub(1, Ordering::AcqRel);
    }
}

fn run_query(g: &Greq, st: &mut Status) -> c_int {
    let Some(q) = g.query else {
        return MPI_SUCCESS;
    };
    let mut cs = CStatus::from(st);
    let rc = if g.fortran {
        // SAFETY: registered from Fortran with this signature; the extra state is the
        // program's variable (it must outlive the request, as with MPICH), the other
        // arguments point to our locals; the status has MPICH's Fortran layout (the C
        // one).
        unsafe {
            let f: FQuery = std::mem::transmute::<QueryFn, FQuery>(q);
            let mut ierr = 0;
            f(g.extra as *mut isize, &mut cs, &mut ierr);
            ierr
        }
    } else {
        // SAFETY: the program's query callback, called as the standard prescribes.
        unsafe { q(g.extra as *mut c_void, &mut cs) }
    };
    st.source = cs.source;
    st.tag = cs.tag;
    st.count_bytes = cs.count_bytes();
    st.cancelled = cs.count_hi_and_cancelled & 1 != 0;
    st.error = if rc != MPI_SUCCESS { rc } else { cs.error };
    rc
}

fn run_free(g: &Greq) -> c_int {
    let Some(f) = g.free else {
        return MPI_SUCCESS;
    };
    if g.fortran {
        // SAFETY: registered from Fortran with this signature; the extra state as above.
        unsafe {
            let f: FFree = std::mem::transmute::<FreeFn, FFree>(f);
            let mut ierr = 0;
            f(g.extra as *mut isize, &mut ierr);
            ierr
        }
    } else {
        // SAFETY: the program's free callback.
        unsafe { f(g.extra as *mut c_void) }
    }
}

/// For a request that a Wait/Test call has just completed and released: if it was a
/// generalized request, runs query_fn (filling `st`) and then free_fn. An error of
/// either becomes the status's error.
pub fn finish(id: usize, st: &mut Status) {
    let Some(g) = lookup(id) else { return };
    forget(id);
    let rc = run_query(&g, st);
    let frc = run_free(&g);
    if rc == MPI_SUCCESS && frc != MPI_SUCCESS {
        st.error = frc;
    }
}

/// For MPI_Request_get_status on a complete request: the status query_fn gives.
pub fn peek(id: usize, st: &mut Status) -> MpiResult<()> {
    if let Some(g) = lookup(id) {
        let rc = run_query(&g, st);
        if rc != MPI_SUCCESS {
            return Err(crate::error::from_callback(
                rc,
                format!(
                    "the query callback of generalized request {:#x} returned {rc}",
                    req_handle(id)
                ),
            ));
        }
    }
    Ok(())
}

/// For MPI_Request_free: Some(()) if `id` is a generalized request (then handled here).
pub fn release(id: usize) -> MpiResult<Option<()>> {
    let Some(g) = lookup(id) else { return Ok(None) };
    if p2p::is_complete(id) {
        forget(id);
        p2p::detach(id)?;
        callback_result(run_free(&g), "free", id)?;
    } else {
        // free_fn runs in MPI_Grequest_complete.
        p2p::detach(id)?;
    }
    Ok(Some(()))
}

/// For MPI_Cancel: Some(()) if `id` is a generalized request (cancel_fn has run).
pub fn cancel(id: usize) -> MpiResult<Option<()>> {
    let Some(g) = lookup(id) else { return Ok(None) };
    let Some(c) = g.cancel else {
        return Ok(Some(()));
    };
    let complete = p2p::is_complete(id) as c_int;
    let rc = if g.fortran {
        // SAFETY: registered from Fortran with this signature; the extra state as above.
        unsafe {
            let f: FCancel = std::mem::transmute::<CancelFn, FCancel>(c);
            let (mut flag, mut ierr) = (complete, 0);
            f(g.extra as *mut isize, &mut flag, &mut ierr);
            ierr
        }
    } else {
        // SAFETY: the program's cancel callback.
        unsafe { c(g.extra as *mut c_void, complete) }
    };
    callback_result(rc, "cancel", id)?;
    Ok(Some(()))
}

fn callback_result(rc: c_int, which: &str, id: usize) -> MpiResult<()> {
    if rc == MPI_SUCCESS {
        Ok(())
    } else {
        Err(crate::error::from_callback(
            rc,
            format!(
                "the {which} callback of generalized request {:#x} returned {rc}",
                req_handle(id)
            ),
        ))
    }
}

mpi_entry!(MPI_Grequest_start, PMPI_Grequest_start,
    (query_fn: Option<QueryFn>, free_fn: Option<FreeFn>, cancel_fn: Option<CancelFn>,
     extra_state: *mut c_void, request: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let id = p2p::user_request(&check::comm(MPI_COMM_SELF)?)?;
    let g = Greq {
        query: query_fn,
        free: free_fn,
        cancel: cancel_fn,
        extra: extra_state as usize,
        fortran: false,
    };
    with(|m| m.insert(id, g));
    LIVE.fetch_add(1, Ordering::AcqRel);
    check::out(request, req_handle(id), "request")
});

/// For the Fortran binding of MPI_GREQUEST_START, right after it: the request's
/// callbacks are Fortran procedures (arguments by reference; the extra state given to
/// MPI_Grequest_start was the value of an INTEGER(KIND=MPI_ADDRESS_KIND)). Not part of
/// the MPI API.
#[no_mangle]
pub extern "C" fn shmpi_grequest_set_fortran(request: c_int) -> c_int {
    let id = match req_id(request) {
        Ok(Some(id)) => id,
        _ => return MPI_ERR_REQUEST,
    };
    match with(|m| m.get_mut(&id).map(|g| g.fortran = true)) {
        Some(()) => MPI_SUCCESS,
        None => MPI_ERR_REQUEST,
    }
}

mpi_entry!(MPI_Grequest_complete, PMPI_Grequest_complete, (request: i32),
    errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let id = match req_id(request)? {
        Some(id) if lookup(id).is_some() => id,
        _ => {
            return Err(err(
                MPI_ERR_REQUEST,
                format!("request={request:#x} is not a generalized request (MPI_Grequest_start)"),
            ))
        }
    };
    if p2p::is_complete(id) {
        return Err(err(
            MPI_ERR_REQUEST,
            format!("generalized request {request:#x} is complete already (MPI_Grequest_complete called twice)"),
        ));
    }
    let released = p2p::complete_user(id)?;
    if released {
        let g = lookup(id);
        forget(id);
        if let Some(g) = g {
            callback_result(run_free(&g), "free", id)?;
        }
    }
    Ok(())
});
