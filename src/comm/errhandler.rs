//! Error handlers: the predefined ones and user-created communicator handlers.
#![allow(unsafe_code)]
//! Unsafe code here (the one exception of comm/, which denies it): the call of a
//! program's error handler (a C function pointer).
use crate::abi::*;
use crate::error::{err, MpiResult};
use std::os::raw::c_int;
use std::sync::RwLock;

/// `void f(MPI_Comm *, int *, ...)`: called with the two fixed arguments only.
pub type CommErrhandlerFn = unsafe extern "C" fn(*mut c_int, *mut c_int);

static USER: RwLock<Vec<Option<CommErrhandlerFn>>> = RwLock::new(Vec::new());

pub fn create(f: CommErrhandlerFn) -> i32 {
    let mut v = USER.write().unwrap();
    v.push(Some(f));
    direct_handle(OBJ_ERRHANDLER, v.len() - 1)
}

/// Validates an error handler handle.
pub fn check(h: i32) -> MpiResult<()> {
    match h {
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT => Ok(()),
        _ => match direct_index(h, OBJ_ERRHANDLER) {
            Some(i) if USER.read().unwrap().get(i).is_some_and(|f| f.is_some()) => Ok(()),
            _ => Err(err(
                MPI_ERR_ARG,
                if h == MPI_ERRHANDLER_NULL {
                    "errhandler is MPI_ERRHANDLER_NULL".to_string()
                } else {
                    format!("invalid errhandler handle {h:#x}")
                },
            )),
        },
    }
}

/// Frees a user error handler (predefined ones cannot be freed... but freeing them is
/// allowed by MPI-2.2 as a no-op on the object; we accept and ignore it).
pub fn free(h: i32) -> MpiResult<()> {
    check(h)?;
    // Communicators keep using a freed handler until they are freed (the standard's
    // rule), so the function pointer stays in the table.
    Ok(())
}

/// Calls user error handler `eh` for an error `code` on `comm`.
pub fn call_user_errhandler(eh: i32, comm: i32, code: i32) {
    let f = direct_index(eh, OBJ_ERRHANDLER)
        .and_then(|i| USER.read().unwrap().get(i).copied().flatten());
    if let Some(f) = f {
        let mut c = comm;
        let mut e = code;
        // SAFETY: a user-supplied MPI_Comm_errhandler_function, called as the standard
        // prescribes with pointers to the communicator and the error code.
        unsafe { f(&mut c, &mut e) };
    }
}

/// MPI_Comm_call_errhandler: runs the error handler of `c` (handle `h`) for `code`; the
/// fatal ones stop the job.
pub fn invoke(c: &super::Comm, h: i32, code: i32) -> MpiResult<()> {
    match c.errhandler.load(std::sync::atomic::Ordering::Relaxed) {
        MPI_ERRORS_RETURN => Ok(()),
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT => {
            let s = crate::error::code_string(code).unwrap_or_else(|| format!("error code {code}"));
            crate::process::say(&format!(
                "shmpi: rank {}: fatal error (MPI_Comm_call_errhandler): {s}",
                c.rank
            ));
            crate::runtime::abort_job(1)
        }
        eh => {
            call_user_errhandler(eh, h, code);
            Ok(())
        }
    }
}
