//! Info objects' entry points. The engine is comm/info.rs; the other entry points that
//! take an info argument check it with [`check_arg`].
use crate::abi::*;
use crate::comm::info;
pub use crate::comm::info::{check_arg, entries_of};
use crate::error::MpiResult;
use crate::ffi::check;
use crate::mpi_entry;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

/// A C string argument, rejecting NULL.
///
/// # Safety
/// Unless NULL, `p` is a NUL-terminated string.
pub unsafe fn c_str(p: *const c_char, arg: &str) -> MpiResult<String> {
    check::not_null(p, arg)?;
    // SAFETY: non-NULL (checked), NUL-terminated (this function's contract).
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// A key argument.
fn key(p: *const c_char) -> MpiResult<String> {
    // SAFETY: `p`: passed on from the entry point, valid as the MPI caller must pass it.
    info::key(unsafe { c_str(p, "key") }?, "key")
}

mpi_entry!(MPI_Info_create, PMPI_Info_create, (info: *mut i32), errcomm = MPI_COMM_WORLD, {
    check::out(info, info::new_info(Vec::new()), "info")
});

// MPI_Info_create_env (MPI-4.0): a new info object with MPI_INFO_ENV's entries; argc
// and argv may be 0 and NULL (the entries come from the process itself).
mpi_entry!(MPI_Info_create_env, PMPI_Info_create_env, (argc: c_int, argv: *mut *mut c_char, info: *mut i32), errcomm = MPI_COMM_WORLD, {
    let _ = (argc, argv);
    check::out(info, info::new_info(info::env_entries()), "info")
});

mpi_entry!(MPI_Info_set, PMPI_Info_set, (info: i32, key: *const c_char, value: *const c_char), errcomm = MPI_COMM_WORLD, {
    info::check_writable(info, "info")?;
    let k = self::key(key)?;
    let v = info::value_arg(c_str(value, "value")?, "value")?;
    info::set(info, &k, v)
});

mpi_entry!(MPI_Info_delete, PMPI_Info_delete, (info: i32, key: *const c_char), errcomm = MPI_COMM_WORLD, {
    info::check_writable(info, "info")?;
    info::delete(info, &self::key(key)?)
});

mpi_entry!(MPI_Info_get, PMPI_Info_get, (info: i32, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let k = self::key(key)?;
    let n = check::count(valuelen, "valuelen")?;
    let v = info::get(info, &k)?;
    if let Some(v) = &v {
        // valuelen excludes the terminating NUL (MPI-3.1 §9).
        check::c_string(value, n + 1, v, "value")?;
    }
    check::out(flag, v.is_some() as c_int, "flag")
});

mpi_entry!(MPI_Info_get_valuelen, PMPI_Info_get_valuelen, (info: i32, key: *const c_char, valuelen: *mut c_int, flag: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let v = info::get(info, &self::key(key)?)?;
    if let Some(v) = &v {
        check::out(valuelen, v.len() as c_int, "valuelen")?;
    }
    check::out(flag, v.is_some() as c_int, "flag")
});

// MPI-4: the value and its length in one call; *buflen is the buffer's size in, the
// value's length plus its NUL out; a buffer of 0 bytes is not written.
mpi_entry!(MPI_Info_get_string, PMPI_Info_get_string, (info: i32, key: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let k = self::key(key)?;
    let cap = check::count(check::inp(buflen, "buflen")?, "buflen")?;
    let v = info::get(info, &k)?;
    if let Some(v) = &v {
        if cap > 0 {
            check::c_string(value, cap, v, "value")?;
        }
        check::out(buflen, v.len() as c_int + 1, "buflen")?;
    }
    check::out(flag, v.is_some() as c_int, "flag")
});

mpi_entry!(MPI_Info_get_nkeys, PMPI_Info_get_nkeys, (info: i32, nkeys: *mut c_int), errcomm = MPI_COMM_WORLD, {
    check::out(nkeys, entries_of(info, "info")?.len() as c_int, "nkeys")
});

mpi_entry!(MPI_Info_get_nthkey, PMPI_Info_get_nthkey, (info: i32, n: c_int, key: *mut c_char), errcomm = MPI_COMM_WORLD, {
    let k = info::nth_key(info, n)?;
    check::c_string(key, MPI_MAX_INFO_KEY as usize, &k, "key").map(|_| ())
});

mpi_entry!(MPI_Info_dup, PMPI_Info_dup, (info: i32, newinfo: *mut i32), errcomm = MPI_COMM_WORLD, {
    let e = entries_of(info, "info")?;
    check::out(newinfo, info::new_info(e), "newinfo")
});

mpi_entry!(MPI_Info_free, PMPI_Info_free, (info: *mut i32), errcomm = MPI_COMM_WORLD, {
    info::free(check::inp(info, "info")?)?;
    check::out(info, MPI_INFO_NULL, "info")
});
