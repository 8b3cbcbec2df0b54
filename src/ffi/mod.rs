//! The C boundary: the only place with `extern "C"` and raw pointers.
//!
//! Every entry point is written with [`mpi_entry!`], which exports `MPI_X` and its
//! profiling twin `PMPI_X`, catches panics, turns `Err(MpiError)` into an error code
//! and hands it to the error handler of the communicator the call names (or of
//! MPI_COMM_WORLD).
// The C boundary takes raw pointers by design (MPI's signatures); every dereference goes
// through ffi::check or carries its own SAFETY note. MPI functions have many arguments.
#![allow(clippy::missing_safety_doc)]
#![allow(clippy::not_unsafe_ptr_arg_deref)]
#![allow(clippy::too_many_arguments)]
#![allow(clippy::macro_metavars_in_unsafe)]
#![allow(non_snake_case)]

/// Exports an int form and its MPI-4 large-count twin from one declaration: `MPI_X` and
/// `PMPI_X` with `Count` = int and `Disp` = MPI_Aint, `MPI_X_c` and `PMPI_X_c` with both
/// MPI_Count; `NAME` is the MPI name of each. The rest is as [`mpi_entry!`] takes it.
macro_rules! counted {
    ($mpi:ident, $pmpi:ident, $mpic:ident, $pmpic:ident, $($rest:tt)*) => {
        // (the bodies widen `Count` with `into` and `as`, which are the identity in one
        // of the two forms)
        #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
        const _: () = {
            #[allow(dead_code)]
            type Count = ::std::os::raw::c_int;
            #[allow(dead_code)]
            type Disp = isize;
            #[allow(dead_code)]
            const NAME: &str = stringify!($mpi);
            $crate::mpi_entry!($mpi, $pmpi, $($rest)*);
        };
        #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
        const _: () = {
            #[allow(dead_code)]
            type Count = i64;
            #[allow(dead_code)]
            type Disp = i64;
            #[allow(dead_code)]
            const NAME: &str = stringify!($mpic);
            $crate::mpi_entry!($mpic, $pmpic, $($rest)*);
        };
    };
}

pub mod c;
pub mod check;
pub mod typed;

use crate::error::{MpiError, MpiResult};
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Exports `MPI_X` and `PMPI_X` with one body. The body is an expression of type
/// `MpiResult<()>` evaluated in an `unsafe` context; `errcomm` names the communicator
/// whose error handler handles a failure (use `MPI_COMM_WORLD` when there is none).
///
/// With `fast = { ... }` before the body, that block runs first, outside the error
/// handling and the hang-report bookkeeping of [`enter`]: it returns `true` when it
/// completed the call (MPI_SUCCESS), `false` to fall through to the body. It must not
/// block or fail: it is for calls that are cheaper than that bookkeeping.
#[macro_export]
macro_rules! mpi_entry {
    ($mpi:ident, $pmpi:ident, ($($a:ident : $t:ty),* $(,)?), errcomm = $ec:expr, fast = $fast:block, $body:block) => {
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi($($a: $t),*) -> ::std::os::raw::c_int {
            // (a panic there, which would be a bug, falls through to the body, where
            // `enter` turns it into MPI_ERR_INTERN; catch_unwind costs nothing otherwise)
            let done = ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(move || {
                #[allow(unused_unsafe)]
                // SAFETY: as for the body below; the fast block dereferences only what
                // it checked itself.
                unsafe { $fast }
            }));
            if let Ok(true) = done {
                return $crate::abi::MPI_SUCCESS;
            }
            $crate::ffi::enter(stringify!($mpi), $ec, move || {
                #[allow(unused_unsafe)]
                // SAFETY: the caller of an MPI function passes pointers valid as the
                // standard requires for this function; each dereference below goes
                // through ffi::check, which rejects NULL where the standard forbids it.
                unsafe { $body }
            })
        }
        #[no_mangle]
        pub unsafe extern "C" fn $mpi($($a: $t),*) -> ::std::os::raw::c_int {
            $pmpi($($a),*)
        }
    };
    ($mpi:ident, $pmpi:ident, ($($a:ident : $t:ty),* $(,)?), errcomm = $ec:expr, $body:block) => {
        // (a constant `false` fast block: the compiler drops it and its panic guard)
        $crate::mpi_entry!($mpi, $pmpi, ($($a: $t),*), errcomm = $ec, fast = { false }, $body);
    };
}

/// Runs one entry point's body: panics become MPI_ERR_INTERN, errors go to the error
/// handler. `name` is the function's MPI name, used in every message.
pub fn enter<F: FnOnce() -> MpiResult<()>>(name: &'static str, errcomm: i32, f: F) -> c_int {
    // What this rank is doing, for mpiexec's hang report (two small stores).
    let job = crate::runtime::job_any();
    if let Some(j) = job {
        j.arena.enter_call(j.rank, name, errcomm);
    }
    let r = catch_unwind(AssertUnwindSafe(f));
    if let Some(j) = job {
        j.arena.leave_call(j.rank);
    }
    // (taken whatever the outcome, so that it never outlives its call)
    let errcomm = crate::runtime::take_raise_on().unwrap_or(errcomm);
    let e = match r {
        Ok(Ok(())) => return crate::abi::MPI_SUCCESS,
        Ok(Err(e)) => e,
        Err(p) => {
            let what = if let Some(s) = p.downcast_ref::<&str>() {
                s.to_string()
            } else if let Some(s) = p.downcast_ref::<String>() {
                s.clone()
            } else {
                "panic".to_string()
            };
            MpiError::new(
                crate::abi::MPI_ERR_INTERN,
                format!("internal error: {what}"),
            )
        }
    };
    handle_error(name, errcomm, e)
}

/// Hands an error to the error handler of `comm` (or of MPI_COMM_WORLD) and returns the
/// error code the entry point returns.
pub fn handle_error(func: &str, comm: i32, e: MpiError) -> i32 {
    let (code, full) = crate::runtime::error_code(func, &e);
    let initialized = crate::runtime::state() == crate::runtime::INITIALIZED;
    // (`comm` may name a window: its own error handler handles its errors)
    let win_eh = if initialized && crate::abi::handle_obj(comm) == crate::abi::OBJ_WIN {
        crate::rma::errhandler_for_error(comm)
    } else {
        None
    };
    if let Some(eh) = win_eh {
        return match eh {
            crate::abi::MPI_ERRORS_RETURN => code,
            crate::abi::MPI_ERRORS_ARE_FATAL | crate::abi::MPI_ERRORS_ABORT => {
                crate::process::say(&format!("shmpi: fatal error: {full}"));
                crate::runtime::fatal_stop()
            }
            user => {
                crate::comm::call_user_errhandler(user, comm, code);
                code
            }
        };
    }
    let eh = if initialized {
        crate::comm::errhandler_for_error(comm)
    } else {
        crate::abi::MPI_ERRORS_ARE_FATAL
    };
    match eh {
        crate::abi::MPI_ERRORS_RETURN => code,
        crate::abi::MPI_ERRORS_ARE_FATAL | crate::abi::MPI_ERRORS_ABORT => {
            crate::process::say(&format!("shmpi: fatal error: {full}"));
            crate::runtime::fatal_stop()
        }
        user => {
            let c = if crate::runtime::state() == crate::runtime::INITIALIZED
                && crate::comm::is_valid(comm)
            {
                comm
            } else {
                crate::abi::MPI_COMM_WORLD
            };
            crate::comm::call_user_errhandler(user, c, code);
            code
        }
    }
}
