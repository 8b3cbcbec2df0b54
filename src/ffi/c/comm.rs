//! Communicator entry points.
use crate::abi::*;
use crate::error::err;
use crate::ffi::check;
use crate::mpi_entry;
use std::os::raw::{c_char, c_int};

mpi_entry!(MPI_Comm_size, PMPI_Comm_size, (comm: i32, size: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    check::out(size, c.size() as c_int, "size")
});

mpi_entry!(MPI_Comm_rank, PMPI_Comm_rank, (comm: i32, rank: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    check::out(rank, c.rank as c_int, "rank")
});

mpi_entry!(MPI_Comm_remote_size, PMPI_Comm_remote_size, (comm: i32, size: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    match &c.remote {
        Some(r) => check::out(size, r.len() as c_int, "size"),
        None => Err(err(MPI_ERR_COMM, "comm is an intracommunicator (MPI_Comm_remote_size needs an intercommunicator)")),
    }
});

mpi_entry!(MPI_Comm_test_inter, PMPI_Comm_test_inter, (comm: i32, flag: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    check::out(flag, c.is_inter() as c_int, "flag")
});

mpi_entry!(MPI_Comm_get_parent, PMPI_Comm_get_parent, (parent: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    check::out(parent, MPI_COMM_NULL, "parent")
});

mpi_entry!(MPI_Comm_set_name, PMPI_Comm_set_name, (comm: i32, comm_name: *const c_char), errcomm = comm, {
    let c = check::comm(comm)?;
    if comm_name.is_null() {
        return Err(err(MPI_ERR_ARG, "comm_name is NULL"));
    }
    // SAFETY: a NUL-terminated string from the caller.
    let s = unsafe { std::ffi::CStr::from_ptr(comm_name) }.to_string_lossy();
    let max = MPI_MAX_OBJECT_NAME as usize - 1;
    let s: String = s.chars().take(max).collect();
    *c.name.lock().unwrap() = s;
    Ok(())
});

mpi_entry!(MPI_Comm_get_name, PMPI_Comm_get_name, (comm: i32, comm_name: *mut c_char, resultlen: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let name = c.name.lock().unwrap().clone();
    let n = check::c_string(comm_name, MPI_MAX_OBJECT_NAME as usize, &name, "comm_name")?;
    check::out(resultlen, n, "resultlen")
});
