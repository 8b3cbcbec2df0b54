//! Collective entry points: validate, convert, call the engine in coll/.
use crate::abi::*;

use crate::coll::reduce::{self, Part};
use crate::comm::Comm;
use crate::error::{err, MpiResult};
use crate::ffi::check::{self, is_in_place};
use crate::ffi::typed::{RedData, Stage};
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
//
// The vector is `count` instances; `RedData` (ffi/typed.rs) decides how they are laid
// out in the engine (the user's memory, packed basic elements, or memory images) and
// stages non-contiguous data. With MPI_IN_PLACE on a native layout the engine reads the
// input from the receive buffer itself (Part::send = None).

fn red_args(
    count: c_int,
    datatype: i32,
    op: i32,
    comm: i32,
) -> MpiResult<(Arc<Comm>, RedData, usize)> {
    let c = intra(comm)?;
    let n = check::count(count, "count")?;
    Ok((c, RedData::new(datatype, op)?, n))
}

/// The input of `n` instances (`None`: in place with a native layout, read from `recv`).
fn input(
    rd: &RedData,
    st: &mut Stage,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: usize,
    recv: &UserBuf,
) -> MpiResult<Option<UserBuf>> {
    if is_in_place(sendbuf) {
        if rd.native() {
            return Ok(None);
        }
        return rd.input(st, recvbuf, n, "recvbuf").map(Some);
    }
    let s = rd.input(st, sendbuf, n, "sendbuf")?;
    if rd.native() {
        check::no_alias(&s, recv, "sendbuf/recvbuf")?;
    }
    Ok(Some(s))
}

mpi_entry!(MPI_Allreduce, PMPI_Allreduce, (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::allreduce(&check::comm(comm)?, sendbuf, recvbuf, count, datatype, op);
    }
    let (c, rd, n) = red_args(count, datatype, op, comm)?;
    let mut st = Stage::default();
    let total = rd.bytes(n)?;
    let recv = rd.output(&mut st, recvbuf, n, "recvbuf")?;
    let send = input(&rd, &mut st, sendbuf, recvbuf, n, &recv)?;
    rd.with(|red| reduce::reduce_vector(&c, total, red, &Part { send, recv, lo: 0, hi: total }))?;
    st.finish()
});

mpi_entry!(MPI_Reduce, PMPI_Reduce, (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, root: c_int, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::reduce(&check::comm(comm)?, sendbuf, recvbuf, count, datatype, op, root);
    }
    let (c, rd, n) = red_args(count, datatype, op, comm)?;
    let root = check::root(root, &c)?;
    let mut st = Stage::default();
    let total = rd.bytes(n)?;
    let is_root = c.rank == root;
    let (send, recv) = if is_root {
        let recv = rd.output(&mut st, recvbuf, n, "recvbuf")?;
        (input(&rd, &mut st, sendbuf, recvbuf, n, &recv)?, recv)
    } else {
        if is_in_place(sendbuf) {
            return Err(err(MPI_ERR_BUFFER, format!("sendbuf is MPI_IN_PLACE on rank {}, which is not the root ({root})", c.rank)));
        }
        (Some(rd.input(&mut st, sendbuf, n, "sendbuf")?), UserBuf::empty())
    };
    let hi = if is_root { total } else { 0 };
    rd.with(|red| reduce::reduce_vector(&c, total, red, &Part { send, recv, lo: 0, hi }))?;
    st.finish()
});

/// Reduce-scatter with `counts[i]` instances to rank i.
fn reduce_scatter_counts(
    c: &Arc<Comm>,
    rd: &RedData,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &[usize],
) -> MpiResult<()> {
    let me = c.rank;
    let sum: usize = counts.iter().sum();
    let lo_n: usize = counts[..me].iter().sum();
    let mut st = Stage::default();
    let total = rd.bytes(sum)?;
    let lo = rd.bytes(lo_n)?;
    let block = rd.bytes(counts[me])?;
    let (send, recv) = if is_in_place(sendbuf) {
        if rd.native() {
            (None, check::buffer(recvbuf, total, "recvbuf")?)
        } else {
            // The input is the whole vector in recvbuf; my block goes to its start.
            let s = rd.input(&mut st, recvbuf, sum, "recvbuf")?;
            (Some(s), rd.output(&mut st, recvbuf, counts[me], "recvbuf")?)
        }
    } else {
        let recv = rd.output(&mut st, recvbuf, counts[me], "recvbuf")?;
        (input(rd, &mut st, sendbuf, recvbuf, sum, &recv)?, recv)
    };
    rd.with(|red| {
        reduce::reduce_vector(
            c,
            total,
            red,
            &Part {
                send,
                recv,
                lo,
                hi: lo + block,
            },
        )
    })?;
    st.finish()
}

mpi_entry!(MPI_Reduce_scatter_block, PMPI_Reduce_scatter_block, (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: i32, op: i32, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::reduce_scatter_block(&check::comm(comm)?, sendbuf, recvbuf, recvcount, datatype, op);
    }
    let (c, rd, n) = red_args(recvcount, datatype, op, comm)?;
    let counts = vec![n; c.size()];
    reduce_scatter_counts(&c, &rd, sendbuf, recvbuf, &counts)
});

mpi_entry!(MPI_Reduce_scatter, PMPI_Reduce_scatter, (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: i32, op: i32, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::reduce_scatter(&check::comm(comm)?, sendbuf, recvbuf, recvcounts, datatype, op);
    }
    let (c, rd, _) = red_args(0, datatype, op, comm)?;
    let counts = check::array(recvcounts, c.size(), "recvcounts")?
        .iter()
        .enumerate()
        .map(|(i, &k)| check::count(k, &format!("recvcounts[{i}]")))
        .collect::<MpiResult<Vec<usize>>>()?;
    reduce_scatter_counts(&c, &rd, sendbuf, recvbuf, &counts)
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
    let (c, rd, n) = red_args(count, datatype, op, comm)?;
    let mut st = Stage::default();
    let total = rd.bytes(n)?;
    let recv = rd.output(&mut st, recvbuf, n, "recvbuf")?;
    let send = input(&rd, &mut st, sendbuf, recvbuf, n, &recv)?;
    rd.with(|red| reduce::scan(&c, total, red, send, recv, exclusive))?;
    // MPI_Exscan leaves rank 0's receive buffer undefined: do not write it back.
    if exclusive && c.rank == 0 {
        return Ok(());
    }
    st.finish()
}

mpi_entry!(MPI_Scan, PMPI_Scan, (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, comm: i32), errcomm = comm, {
    scan_entry(sendbuf, recvbuf, count, datatype, op, comm, false)
});
mpi_entry!(MPI_Exscan, PMPI_Exscan, (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, comm: i32), errcomm = comm, {
    scan_entry(sendbuf, recvbuf, count, datatype, op, comm, true)
});
