//! Collective entry points: validate, convert, call the engine in coll/.
use crate::abi::*;

use crate::coll::reduce::{self, Part, Reduction};
use crate::comm::Comm;
use crate::error::{err, MpiResult};
use crate::ffi::check::{self, is_in_place, TypeInfo};
use crate::mpi_entry;
use crate::p2p::UserBuf;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

use super::coll_inter;

/// An intracommunicator argument (the intercommunicator forms dispatch earlier).
fn intra(comm: i32) -> MpiResult<Arc<Comm>> {
    let c = check::comm(comm)?;
    if c.is_inter() {
        return Err(err(
            MPI_ERR_COMM,
            "this operation is defined on intracommunicators only",
        ));
    }
    Ok(c)
}

mpi_entry!(MPI_Barrier, PMPI_Barrier, (comm: i32), errcomm = comm, {
    // Over the channel: both groups of an intercommunicator take part, as required.
    let c = check::comm(comm)?;
    crate::coll::barrier(&c)
});


// ---------------------------------------------------------------- reductions

struct RedArgs {
    comm: Arc<Comm>,
    t: TypeInfo,
    op: crate::op::OpRef,
}

fn red_args(count: c_int, datatype: i32, op: i32, comm: i32) -> MpiResult<(RedArgs, usize)> {
    let c = intra(comm)?;
    let n = check::count(count, "count")?;
    let t = check::datatype(datatype, "datatype")?;
    let o = crate::op::resolve(op)?;
    // Validates the (op, datatype) pair even when there is no data.
    if let crate::op::OpRef::Builtin(b) = &o {
        crate::op::kernel_for(*b, datatype)?;
    }
    Ok((RedArgs { comm: c, t, op: o }, n))
}

fn run<R>(a: &RedArgs, body: impl FnOnce(&Reduction) -> MpiResult<R>) -> MpiResult<R> {
    let dt = a.t.handle;
    let ext = a.t.extent.max(1);
    let f = |inv: &[u8], inout: &mut [u8]| crate::op::apply(&a.op, dt, inv, inout, inv.len() / ext);
    let red = Reduction {
        f: &f,
        commutative: crate::op::is_commutative(&a.op),
        extent: a.t.extent,
    };
    body(&red)
}

fn send_or_in_place(
    sendbuf: *const c_void,
    bytes: usize,
    recv: &UserBuf,
) -> MpiResult<Option<UserBuf>> {
    if is_in_place(sendbuf) {
        return Ok(None);
    }
    let s = check::buffer(sendbuf, bytes, "sendbuf")?;
    check::no_alias(&s, recv, "sendbuf/recvbuf")?;
    Ok(Some(s))
}

mpi_entry!(MPI_Allreduce, PMPI_Allreduce, (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::allreduce(&check::comm(comm)?, sendbuf, recvbuf, count, datatype, op);
    }
    let (a, n) = red_args(count, datatype, op, comm)?;
    let total = check::span(&a.t, n)?;
    let recv = check::buffer(recvbuf, total, "recvbuf")?;
    let send = send_or_in_place(sendbuf, total, &recv)?;
    run(&a, |red| reduce::reduce_vector(&a.comm, total, red, &Part { send, recv, lo: 0, hi: total }))
});

mpi_entry!(MPI_Reduce, PMPI_Reduce, (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, root: c_int, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::reduce(&check::comm(comm)?, sendbuf, recvbuf, count, datatype, op, root);
    }
    let (a, n) = red_args(count, datatype, op, comm)?;
    let root = check::root(root, &a.comm)?;
    let total = check::span(&a.t, n)?;
    let is_root = a.comm.rank == root;
    let recv = if is_root { check::buffer(recvbuf, total, "recvbuf")? } else { UserBuf::empty() };
    let send = if is_root {
        send_or_in_place(sendbuf, total, &recv)?
    } else {
        if is_in_place(sendbuf) {
            return Err(err(MPI_ERR_BUFFER, format!("sendbuf is MPI_IN_PLACE on rank {} which is not the root ({root})", a.comm.rank)));
        }
        Some(check::buffer(sendbuf, total, "sendbuf")?)
    };
    let hi = if is_root { total } else { 0 };
    run(&a, |red| reduce::reduce_vector(&a.comm, total, red, &Part { send, recv, lo: 0, hi }))
});

mpi_entry!(MPI_Reduce_scatter_block, PMPI_Reduce_scatter_block, (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: i32, op: i32, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::reduce_scatter_block(&check::comm(comm)?, sendbuf, recvbuf, recvcount, datatype, op);
    }
    let (a, n) = red_args(recvcount, datatype, op, comm)?;
    let size = a.comm.size();
    let block = check::span(&a.t, n)?;
    let total = block.checked_mul(size).ok_or_else(|| err(MPI_ERR_COUNT, "recvcount x size overflows"))?;
    let lo = block * a.comm.rank;
    let (send, recv) = if is_in_place(sendbuf) {
        (None, check::buffer(recvbuf, total, "recvbuf")?)
    } else {
        let recv = check::buffer(recvbuf, block, "recvbuf")?;
        (send_or_in_place(sendbuf, total, &recv)?, recv)
    };
    run(&a, |red| reduce::reduce_vector(&a.comm, total, red, &Part { send, recv, lo, hi: lo + block }))
});

mpi_entry!(MPI_Reduce_scatter, PMPI_Reduce_scatter, (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: i32, op: i32, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::reduce_scatter(&check::comm(comm)?, sendbuf, recvbuf, recvcounts, datatype, op);
    }
    let c = intra(comm)?;
    let counts = check::array(recvcounts, c.size(), "recvcounts")?;
    let mut sum = 0usize;
    let mut lo_elems = 0usize;
    for (i, &k) in counts.iter().enumerate() {
        let k = check::count(k, &format!("recvcounts[{i}]"))?;
        if i < c.rank {
            lo_elems += k;
        }
        sum += k;
    }
    let mine = counts[c.rank] as usize;
    let (a, _) = red_args(0, datatype, op, comm)?;
    let total = check::span(&a.t, sum)?;
    let lo = lo_elems * a.t.extent;
    let block = mine * a.t.extent;
    let (send, recv) = if is_in_place(sendbuf) {
        (None, check::buffer(recvbuf, total, "recvbuf")?)
    } else {
        let recv = check::buffer(recvbuf, block, "recvbuf")?;
        (send_or_in_place(sendbuf, total, &recv)?, recv)
    };
    run(&a, |red| reduce::reduce_vector(&a.comm, total, red, &Part { send, recv, lo, hi: lo + block }))
});

fn scan_entry(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: i32,
    op: i32,
    comm: i32,
    exclusive: bool,
) -> MpiResult<()> {
    let (a, n) = red_args(count, datatype, op, comm)?;
    let total = check::span(&a.t, n)?;
    let recv = check::buffer(recvbuf, total, "recvbuf")?;
    let send = send_or_in_place(sendbuf, total, &recv)?;
    run(&a, |red| {
        reduce::scan(&a.comm, total, red, send, recv, exclusive)
    })
}

mpi_entry!(MPI_Scan, PMPI_Scan, (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, comm: i32), errcomm = comm, {
    scan_entry(sendbuf, recvbuf, count, datatype, op, comm, false)
});
mpi_entry!(MPI_Exscan, PMPI_Exscan, (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, comm: i32), errcomm = comm, {
    scan_entry(sendbuf, recvbuf, count, datatype, op, comm, true)
});

