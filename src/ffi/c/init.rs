//! Start-up, environment, error handlers and predefined attributes.
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::ffi::check;
use crate::mpi_entry;
use crate::runtime;
use std::os::raw::{c_char, c_double, c_int, c_void};
use std::sync::atomic::Ordering;

mpi_entry!(MPI_Init, PMPI_Init, (_argc: *mut c_int, _argv: *mut *mut *mut c_char), errcomm = MPI_COMM_WORLD, {
    crate::init::init(MPI_THREAD_SINGLE).map(|_| ())
});

mpi_entry!(MPI_Init_thread, PMPI_Init_thread, (_argc: *mut c_int, _argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int), errcomm = MPI_COMM_WORLD, {
    if !(MPI_THREAD_SINGLE..=MPI_THREAD_MULTIPLE).contains(&required) {
        return Err(err(MPI_ERR_ARG, format!("required={required} is not a thread level (MPI_THREAD_SINGLE..MPI_THREAD_MULTIPLE)")));
    }
    if provided.is_null() {
        return Err(err(MPI_ERR_ARG, "provided is NULL"));
    }
    let p = crate::init::init(required)?;
    check::out(provided, p, "provided")
});

mpi_entry!(MPI_Initialized, PMPI_Initialized, (flag: *mut c_int), errcomm = MPI_COMM_WORLD, {
    check::out(flag, (runtime::state() != runtime::NOT_INITIALIZED) as c_int, "flag")
});

mpi_entry!(MPI_Finalized, PMPI_Finalized, (flag: *mut c_int), errcomm = MPI_COMM_WORLD, {
    check::out(flag, (runtime::state() == runtime::FINALIZED) as c_int, "flag")
});

mpi_entry!(MPI_Finalize, PMPI_Finalize, (), errcomm = MPI_COMM_WORLD, {
    crate::init::finalize()
});

mpi_entry!(MPI_Abort, PMPI_Abort, (comm: i32, errorcode: c_int), errcomm = MPI_COMM_WORLD, {
    let _ = comm;
    crate::init::abort(errorcode)
});

mpi_entry!(MPI_Query_thread, PMPI_Query_thread, (provided: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let j = runtime::job()?;
    check::out(provided, j.thread_level, "provided")
});

mpi_entry!(MPI_Is_thread_main, PMPI_Is_thread_main, (flag: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let j = runtime::job()?;
    check::out(flag, (std::thread::current().id() == j.main_thread) as c_int, "flag")
});

fn now() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[no_mangle]
pub extern "C" fn PMPI_Wtime() -> c_double {
    now()
}
#[no_mangle]
pub extern "C" fn MPI_Wtime() -> c_double {
    now()
}
#[no_mangle]
pub extern "C" fn PMPI_Wtick() -> c_double {
    1e-9
}
#[no_mangle]
pub extern "C" fn MPI_Wtick() -> c_double {
    1e-9
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut c_char, buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

mpi_entry!(MPI_Get_processor_name, PMPI_Get_processor_name, (name: *mut c_char, resultlen: *mut c_int), errcomm = MPI_COMM_WORLD, {
    runtime::job()?;
    let n = check::c_string(name, MPI_MAX_PROCESSOR_NAME as usize, &hostname(), "name")?;
    check::out(resultlen, n, "resultlen")
});

mpi_entry!(MPI_Get_version, PMPI_Get_version, (version: *mut c_int, subversion: *mut c_int), errcomm = MPI_COMM_WORLD, {
    check::out(version, crate::init::VERSION.0, "version")?;
    check::out(subversion, crate::init::VERSION.1, "subversion")
});

mpi_entry!(MPI_Get_library_version, PMPI_Get_library_version, (version: *mut c_char, resultlen: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let n = check::c_string(version, MPI_MAX_LIBRARY_VERSION_STRING as usize, &crate::init::library_version(), "version")?;
    check::out(resultlen, n, "resultlen")
});

mpi_entry!(MPI_Error_string, PMPI_Error_string, (errorcode: c_int, string: *mut c_char, resultlen: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let s = crate::error::code_string(errorcode)
        .ok_or_else(|| err(MPI_ERR_ARG, format!("errorcode={errorcode} is not a valid error code")))?;
    let n = check::c_string(string, MPI_MAX_ERROR_STRING as usize, &s, "string")?;
    check::out(resultlen, n, "resultlen")
});

mpi_entry!(MPI_Add_error_class, PMPI_Add_error_class, (errorclass: *mut c_int), errcomm = MPI_COMM_WORLD, {
    runtime::job()?;
    check::out(errorclass, crate::error::add_dynamic(None)?, "errorclass")
});

mpi_entry!(MPI_Add_error_code, PMPI_Add_error_code, (errorclass: c_int, errorcode: *mut c_int), errcomm = MPI_COMM_WORLD, {
    runtime::job()?;
    check::out(errorcode, crate::error::add_dynamic(Some(errorclass))?, "errorcode")
});

mpi_entry!(MPI_Add_error_string, PMPI_Add_error_string, (errorcode: c_int, string: *const c_char), errcomm = MPI_COMM_WORLD, {
    runtime::job()?;
    if string.is_null() {
        return Err(err(MPI_ERR_ARG, "string is NULL"));
    }
    // SAFETY: a non-NULL string argument is a NUL-terminated C string (the standard).
    let text = unsafe { std::ffi::CStr::from_ptr(string) }.to_string_lossy().into_owned();
    if text.len() >= MPI_MAX_ERROR_STRING as usize {
        return Err(err(MPI_ERR_ARG, format!("string is {} characters long; at most {} fit (MPI_MAX_ERROR_STRING - 1)", text.len(), MPI_MAX_ERROR_STRING - 1)));
    }
    crate::error::set_dynamic_string(errorcode, text)
});

mpi_entry!(MPI_Error_class, PMPI_Error_class, (errorcode: c_int, errorclass: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let c = crate::error::code_class(errorcode)
        .ok_or_else(|| err(MPI_ERR_ARG, format!("errorcode={errorcode} is not a valid error code")))?;
    check::out(errorclass, c, "errorclass")
});

// ---------------------------------------------------------------- error handlers

fn set_errhandler(comm: i32, eh: i32) -> MpiResult<()> {
    let c = check::comm(comm)?;
    crate::comm::errhandler::check(eh)?;
    c.errhandler.store(eh, Ordering::Relaxed);
    Ok(())
}

fn get_errhandler(comm: i32, out: *mut i32) -> MpiResult<()> {
    let c = check::comm(comm)?;
    // SAFETY: `out`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(out, c.errhandler.load(Ordering::Relaxed), "errhandler") }
}

fn create_errhandler(
    f: Option<crate::comm::errhandler::CommErrhandlerFn>,
    out: *mut i32,
) -> MpiResult<()> {
    runtime::job()?;
    let f = f.ok_or_else(|| err(MPI_ERR_ARG, "function is NULL"))?;
    // SAFETY: `out`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(out, crate::comm::errhandler::create(f), "errhandler") }
}

mpi_entry!(MPI_Comm_set_errhandler, PMPI_Comm_set_errhandler, (comm: i32, errhandler: i32), errcomm = comm, { set_errhandler(comm, errhandler) });
mpi_entry!(MPI_Errhandler_set, PMPI_Errhandler_set, (comm: i32, errhandler: i32), errcomm = comm, { set_errhandler(comm, errhandler) });
mpi_entry!(MPI_Comm_get_errhandler, PMPI_Comm_get_errhandler, (comm: i32, errhandler: *mut i32), errcomm = comm, { get_errhandler(comm, errhandler) });
mpi_entry!(MPI_Errhandler_get, PMPI_Errhandler_get, (comm: i32, errhandler: *mut i32), errcomm = comm, { get_errhandler(comm, errhandler) });
mpi_entry!(MPI_Comm_create_errhandler, PMPI_Comm_create_errhandler, (function: Option<crate::comm::errhandler::CommErrhandlerFn>, errhandler: *mut i32), errcomm = MPI_COMM_WORLD, {
    create_errhandler(function, errhandler)
});
mpi_entry!(MPI_Errhandler_create, PMPI_Errhandler_create, (function: Option<crate::comm::errhandler::CommErrhandlerFn>, errhandler: *mut i32), errcomm = MPI_COMM_WORLD, {
    create_errhandler(function, errhandler)
});
mpi_entry!(MPI_Errhandler_free, PMPI_Errhandler_free, (errhandler: *mut i32), errcomm = MPI_COMM_WORLD, {
    runtime::job()?;
    let h = check::inp(errhandler, "errhandler")?;
    crate::comm::errhandler::free(h)?;
    check::out(errhandler, MPI_ERRHANDLER_NULL, "errhandler")
});
mpi_entry!(MPI_Comm_call_errhandler, PMPI_Comm_call_errhandler, (comm: i32, errorcode: c_int), errcomm = MPI_COMM_WORLD, {
    crate::comm::errhandler::invoke(&*check::comm(comm)?, comm, errorcode)
});

// ---------------------------------------------------------------- attributes

fn get_attr(comm: i32, key: c_int, val: *mut c_void, flag: *mut c_int) -> MpiResult<()> {
    let c = check::comm(comm)?;
    check::not_null(val, "attribute_val")?;
    let v = crate::init::comm_attr(&c, key)?;
    // SAFETY: `val` and `flag`: passed on from the entry point, valid as the MPI caller
    // must pass them.
    unsafe { super::datatype::put_attr(v, val, flag) }
}

mpi_entry!(MPI_Comm_get_attr, PMPI_Comm_get_attr, (comm: i32, comm_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int), errcomm = comm, {
    get_attr(comm, comm_keyval, attribute_val, flag)
});
mpi_entry!(MPI_Attr_get, PMPI_Attr_get, (comm: i32, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int), errcomm = comm, {
    get_attr(comm, keyval, attribute_val, flag)
});

// ---------------------------------------------------------------- buffered sends

counted!(MPI_Buffer_attach, PMPI_Buffer_attach, MPI_Buffer_attach_c, PMPI_Buffer_attach_c, (buffer: *mut c_void, size: Count), errcomm = MPI_COMM_WORLD, {
    runtime::job()?;
    let n = check::count(size, "size")?;
    if buffer.is_null() && n > 0 {
        return Err(err(MPI_ERR_BUFFER, "buffer is NULL"));
    }
    crate::p2p::bsend_attach(buffer as usize, n)
});

counted!(MPI_Buffer_detach, PMPI_Buffer_detach, MPI_Buffer_detach_c, PMPI_Buffer_detach_c, (buffer_addr: *mut c_void, size: *mut Count), errcomm = MPI_COMM_WORLD, {
    runtime::job()?;
    check::not_null(buffer_addr, "buffer_addr")?;
    let attached = crate::p2p::bsend_attached()?;
    if Count::try_from(attached).is_err() {
        return Err(err(
            MPI_ERR_COUNT,
            format!("the attached buffer's {attached} bytes do not fit in an int (detach it with MPI_Buffer_detach_c)"),
        ));
    }
    let (addr, n) = crate::p2p::bsend_detach()?;
    check::out(buffer_addr as *mut usize, addr, "buffer_addr")?;
    check::out(size, n as Count, "size")
});
