//! Collective entry points: validate, convert, call the engine in coll/.
use crate::abi::*;
use crate::coll::gather::{self, Piece};
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

fn inter_alltoall(
    comm: i32,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: i32,
) -> MpiResult<()> {
    let c = check::comm(comm)?;
    let m = c.peer_size();
    let st = check::datatype(sendtype, "sendtype")?;
    let rt = check::datatype(recvtype, "recvtype")?;
    let sk = check::span(&st, check::count(sendcount, "sendcount")?)?;
    let rk = check::span(&rt, check::count(recvcount, "recvcount")?)?;
    coll_inter::alltoall(
        &c,
        sendbuf,
        (0..m).map(|j| (j * sk, sk)).collect(),
        recvbuf,
        (0..m).map(|i| (i * rk, rk)).collect(),
    )
}

fn v_list(
    counts: *const c_int,
    displs: *const c_int,
    m: usize,
    t: &TypeInfo,
    what: &str,
) -> MpiResult<Vec<(usize, usize)>> {
    let c = check::array(counts, m, &format!("{what}counts"))?;
    let d = check::array(displs, m, &format!("{what}displs"))?;
    (0..m)
        .map(|i| {
            if d[i] < 0 {
                return Err(err(
                    MPI_ERR_ARG,
                    format!("{what}displs[{i}]={} is negative", d[i]),
                ));
            }
            Ok((
                d[i] as usize * t.extent,
                check::count(c[i], &format!("{what}counts[{i}]"))? * t.extent,
            ))
        })
        .collect()
}

fn inter_alltoallv(
    comm: i32,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: i32,
) -> MpiResult<()> {
    let c = check::comm(comm)?;
    let m = c.peer_size();
    let st = check::datatype(sendtype, "sendtype")?;
    let rt = check::datatype(recvtype, "recvtype")?;
    let s = v_list(sendcounts, sdispls, m, &st, "send")?;
    let r = v_list(recvcounts, rdispls, m, &rt, "recv")?;
    coll_inter::alltoall(&c, sendbuf, s, recvbuf, r)
}

fn w_list(
    counts: *const c_int,
    displs: *const c_int,
    types: *const i32,
    m: usize,
    what: &str,
) -> MpiResult<Vec<(usize, usize)>> {
    let c = check::array(counts, m, &format!("{what}counts"))?;
    let d = check::array(displs, m, &format!("{what}displs"))?;
    let ty = check::array(types, m, &format!("{what}types"))?;
    (0..m)
        .map(|i| {
            let t = check::datatype(ty[i], &format!("{what}types[{i}]"))?;
            if d[i] < 0 {
                return Err(err(
                    MPI_ERR_ARG,
                    format!("{what}displs[{i}]={} is negative", d[i]),
                ));
            }
            Ok((
                d[i] as usize,
                check::count(c[i], &format!("{what}counts[{i}]"))? * t.extent,
            ))
        })
        .collect()
}

fn inter_alltoallw(
    comm: i32,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const i32,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const i32,
) -> MpiResult<()> {
    let c = check::comm(comm)?;
    let m = c.peer_size();
    let s = w_list(sendcounts, sdispls, sendtypes, m, "send")?;
    let r = w_list(recvcounts, rdispls, recvtypes, m, "recv")?;
    coll_inter::alltoall(&c, sendbuf, s, recvbuf, r)
}

mpi_entry!(MPI_Barrier, PMPI_Barrier, (comm: i32), errcomm = comm, {
    // Over the channel: both groups of an intercommunicator take part, as required.
    let c = check::comm(comm)?;
    crate::coll::barrier(&c)
});

mpi_entry!(MPI_Bcast, PMPI_Bcast, (buffer: *mut c_void, count: c_int, datatype: i32, root: c_int, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::bcast_any(&check::comm(comm)?, buffer, count, datatype, root);
    }
    let c = intra(comm)?;
    let n = check::count(count, "count")?;
    let t = check::datatype(datatype, "datatype")?;
    let root = check::root(root, &c)?;
    let b = check::buffer(buffer, check::span(&t, n)?, "buffer")?;
    crate::coll::bcast::bcast(&c, b, root)
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

// ---------------------------------------------------------------- data movement

fn piece(buf: UserBuf, off: usize, len: usize) -> Piece {
    Piece { buf, off, len }
}

/// Per-member counts and displacements of a v-collective, as byte pieces of `buf`.
fn v_pieces(
    buf: UserBuf,
    counts: &[c_int],
    displs: &[c_int],
    t: &TypeInfo,
    what: &str,
) -> MpiResult<Vec<Piece>> {
    counts
        .iter()
        .zip(displs)
        .enumerate()
        .map(|(i, (&c, &d))| {
            let c = check::count(c, &format!("{what}counts[{i}]"))?;
            if d < 0 {
                // Negative displacements are legal with a lower bound, not for plain types.
                return Err(err(MPI_ERR_ARG, format!("displs[{i}]={d} is negative")));
            }
            Ok(piece(buf, d as usize * t.extent, c * t.extent))
        })
        .collect()
}

/// Span of a buffer described by pieces.
fn pieces_span(p: &[Piece]) -> usize {
    p.iter().map(|x| x.off + x.len).max().unwrap_or(0)
}

fn rebase(p: &mut [Piece], buf: UserBuf) {
    for x in p {
        x.buf = buf;
    }
}

#[allow(clippy::too_many_arguments)]
fn gather_impl(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcounts: Option<&[c_int]>,
    recvcount: c_int,
    displs: Option<&[c_int]>,
    recvtype: i32,
    root: Option<c_int>,
    comm: &Arc<Comm>,
) -> MpiResult<()> {
    let size = comm.size();
    let me = comm.rank;
    let receives = root.is_none_or(|r| r as usize == me);
    let in_place = is_in_place(sendbuf);
    if in_place && !receives {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("sendbuf is MPI_IN_PLACE on rank {me} which is not the root"),
        ));
    }
    let mut recv: Vec<Piece> = vec![Piece::none(); size];
    let mut recv_span = 0;
    let mut rt = None;
    if receives {
        let t = check::datatype(recvtype, "recvtype")?;
        recv = match (recvcounts, displs) {
            (Some(c), Some(d)) => v_pieces(UserBuf::empty(), c, d, &t, "recv")?,
            _ => {
                let n = check::count(recvcount, "recvcount")?;
                (0..size)
                    .map(|i| piece(UserBuf::empty(), i * n * t.extent, n * t.extent))
                    .collect()
            }
        };
        recv_span = pieces_span(&recv);
        let rb = check::buffer(recvbuf, recv_span, "recvbuf")?;
        rebase(&mut recv, rb);
        rt = Some(t);
    }
    let send = if in_place {
        let own = recv[me];
        if root.is_none() {
            // Allgather in place: my contribution is already at my place in recvbuf.
            recv[me] = Piece::none();
            own
        } else {
            recv[me] = Piece::none();
            Piece::none()
        }
    } else {
        let t = check::datatype(sendtype, "sendtype")?;
        let n = check::count(sendcount, "sendcount")?;
        let sb = check::buffer(sendbuf, check::span(&t, n)?, "sendbuf")?;
        if receives && recv_span > 0 {
            check::no_alias(&sb, &recv[0].buf_with_len(recv_span), "sendbuf/recvbuf")?;
        }
        if let (Some(rt), true) = (rt, receives) {
            if recv[me].len != sb.len() && rt.handle == t.handle {
                return Err(err(
                    MPI_ERR_TRUNCATE,
                    format!(
                        "rank {me} sends {} bytes but its own receive block holds {}",
                        sb.len(),
                        recv[me].len
                    ),
                ));
            }
        }
        piece(sb, 0, sb.len())
    };
    gather::by_sender(comm, send, &recv, recvcounts.is_some())
}

impl Piece {
    fn buf_with_len(&self, len: usize) -> UserBuf {
        // SAFETY: same base pointer, length validated by check::buffer above.
        unsafe { UserBuf::new(self.buf.addr() as *mut u8, len) }
    }
}

mpi_entry!(MPI_Gather, PMPI_Gather, (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void, recvcount: c_int, recvtype: i32, root: c_int, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::gather(&check::comm(comm)?, sendbuf, sendcount, sendtype, recvbuf, None, recvcount, None, recvtype, root);
    }
    let c = intra(comm)?;
    check::root(root, &c)?;
    gather_impl(sendbuf, sendcount, sendtype, recvbuf, None, recvcount, None, recvtype, Some(root), &c)
});

mpi_entry!(MPI_Gatherv, PMPI_Gatherv, (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: i32, root: c_int, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::gather(&check::comm(comm)?, sendbuf, sendcount, sendtype, recvbuf, Some(recvcounts), 0, Some(displs), recvtype, root);
    }
    let c = intra(comm)?;
    check::root(root, &c)?;
    let is_root = root as usize == c.rank;
    let (rc, dp) = if is_root {
        (Some(check::array(recvcounts, c.size(), "recvcounts")?), Some(check::array(displs, c.size(), "displs")?))
    } else {
        (None, None)
    };
    // Non-roots take part in the length agreement through the v path too.
    gather_v(sendbuf, sendcount, sendtype, recvbuf, rc, dp, recvtype, Some(root), &c)
});

#[allow(clippy::too_many_arguments)]
fn gather_v(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: i32,
    recvbuf: *mut c_void,
    rc: Option<&[c_int]>,
    dp: Option<&[c_int]>,
    recvtype: i32,
    root: Option<c_int>,
    c: &Arc<Comm>,
) -> MpiResult<()> {
    match (rc, dp) {
        (Some(r), Some(d)) => gather_impl(
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            Some(r),
            0,
            Some(d),
            recvtype,
            root,
            c,
        ),
        _ => {
            // A non-root of Gatherv: same path, nothing to receive, lengths vary.
            let me = c.rank;
            let t = check::datatype(sendtype, "sendtype")?;
            let n = check::count(sendcount, "sendcount")?;
            if is_in_place(sendbuf) {
                return Err(err(
                    MPI_ERR_BUFFER,
                    format!("sendbuf is MPI_IN_PLACE on rank {me} which is not the root"),
                ));
            }
            let sb = check::buffer(sendbuf, check::span(&t, n)?, "sendbuf")?;
            let recv = vec![Piece::none(); c.size()];
            gather::by_sender(c, piece(sb, 0, sb.len()), &recv, true)
        }
    }
}

mpi_entry!(MPI_Allgather, PMPI_Allgather, (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void, recvcount: c_int, recvtype: i32, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::allgather(&check::comm(comm)?, sendbuf, sendcount, sendtype, recvbuf, None, recvcount, None, recvtype);
    }
    let c = intra(comm)?;
    gather_impl(sendbuf, sendcount, sendtype, recvbuf, None, recvcount, None, recvtype, None, &c)
});

mpi_entry!(MPI_Allgatherv, PMPI_Allgatherv, (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: i32, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::allgather(&check::comm(comm)?, sendbuf, sendcount, sendtype, recvbuf, Some(recvcounts), 0, Some(displs), recvtype);
    }
    let c = intra(comm)?;
    let rc = check::array(recvcounts, c.size(), "recvcounts")?;
    let dp = check::array(displs, c.size(), "displs")?;
    gather_impl(sendbuf, sendcount, sendtype, recvbuf, Some(rc), 0, Some(dp), recvtype, None, &c)
});

#[allow(clippy::too_many_arguments)]
fn scatter_impl(
    sendbuf: *const c_void,
    sendcounts: Option<&[c_int]>,
    sendcount: c_int,
    displs: Option<&[c_int]>,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: i32,
    root: usize,
    c: &Arc<Comm>,
) -> MpiResult<()> {
    let size = c.size();
    let me = c.rank;
    let in_place = is_in_place(recvbuf);
    if in_place && me != root {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("recvbuf is MPI_IN_PLACE on rank {me} which is not the root"),
        ));
    }
    let mut send = vec![Piece::none(); size];
    if me == root {
        let t = check::datatype(sendtype, "sendtype")?;
        send = match (sendcounts, displs) {
            (Some(sc), Some(d)) => v_pieces(UserBuf::empty(), sc, d, &t, "send")?,
            _ => {
                let n = check::count(sendcount, "sendcount")?;
                (0..size)
                    .map(|i| piece(UserBuf::empty(), i * n * t.extent, n * t.extent))
                    .collect()
            }
        };
        let sb = check::buffer(sendbuf, pieces_span(&send), "sendbuf")?;
        rebase(&mut send, sb);
        if in_place {
            send[me] = Piece::none();
        }
    }
    let recv = if in_place {
        Piece::none()
    } else {
        let t = check::datatype(recvtype, "recvtype")?;
        let n = check::count(recvcount, "recvcount")?;
        let rb = check::buffer(recvbuf as *const c_void, check::span(&t, n)?, "recvbuf")?;
        piece(rb, 0, rb.len())
    };
    gather::scatter(c, root, &send, recv, false)
}

mpi_entry!(MPI_Scatter, PMPI_Scatter, (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void, recvcount: c_int, recvtype: i32, root: c_int, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::scatter(&check::comm(comm)?, sendbuf, None, sendcount, None, sendtype, recvbuf, recvcount, recvtype, root);
    }
    let c = intra(comm)?;
    let root = check::root(root, &c)?;
    scatter_impl(sendbuf, None, sendcount, None, sendtype, recvbuf, recvcount, recvtype, root, &c)
});

mpi_entry!(MPI_Scatterv, PMPI_Scatterv, (sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: i32, recvbuf: *mut c_void, recvcount: c_int, recvtype: i32, root: c_int, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return coll_inter::scatter(&check::comm(comm)?, sendbuf, Some(sendcounts), 0, Some(displs), sendtype, recvbuf, recvcount, recvtype, root);
    }
    let c = intra(comm)?;
    let root = check::root(root, &c)?;
    if c.rank == root {
        let sc = check::array(sendcounts, c.size(), "sendcounts")?;
        let dp = check::array(displs, c.size(), "displs")?;
        scatter_v(sendbuf, Some(sc), Some(dp), sendtype, recvbuf, recvcount, recvtype, root, &c)
    } else {
        scatter_v(sendbuf, None, None, sendtype, recvbuf, recvcount, recvtype, root, &c)
    }
});

#[allow(clippy::too_many_arguments)]
fn scatter_v(
    sendbuf: *const c_void,
    sc: Option<&[c_int]>,
    dp: Option<&[c_int]>,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: i32,
    root: usize,
    c: &Arc<Comm>,
) -> MpiResult<()> {
    let size = c.size();
    let me = c.rank;
    let in_place = is_in_place(recvbuf);
    if in_place && me != root {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("recvbuf is MPI_IN_PLACE on rank {me} which is not the root"),
        ));
    }
    let mut send = vec![Piece::none(); size];
    if let (Some(sc), Some(dp)) = (sc, dp) {
        let t = check::datatype(sendtype, "sendtype")?;
        send = v_pieces(UserBuf::empty(), sc, dp, &t, "send")?;
        let sb = check::buffer(sendbuf, pieces_span(&send), "sendbuf")?;
        rebase(&mut send, sb);
        if in_place {
            send[me] = Piece::none();
        }
    }
    let recv = if in_place {
        Piece::none()
    } else {
        let t = check::datatype(recvtype, "recvtype")?;
        let n = check::count(recvcount, "recvcount")?;
        let rb = check::buffer(recvbuf as *const c_void, check::span(&t, n)?, "recvbuf")?;
        piece(rb, 0, rb.len())
    };
    gather::scatter(c, root, &send, recv, true)
}

#[allow(clippy::too_many_arguments)]
fn alltoall_impl(
    sendbuf: *const c_void,
    send: Vec<Piece>,
    recvbuf: *mut c_void,
    recv: Vec<Piece>,
    vary: bool,
    c: &Arc<Comm>,
) -> MpiResult<()> {
    let mut recv = recv;
    let rb = check::buffer(recvbuf, pieces_span(&recv), "recvbuf")?;
    rebase(&mut recv, rb);
    let send = if is_in_place(sendbuf) {
        // In place: what goes to j is what recvbuf holds at j's place.
        let s = recv.clone();
        recv[c.rank] = Piece::none();
        let mut s = s;
        s[c.rank] = Piece::none();
        s
    } else {
        let mut send = send;
        let sb = check::buffer(sendbuf, pieces_span(&send), "sendbuf")?;
        check::no_alias(&sb, &rb, "sendbuf/recvbuf")?;
        rebase(&mut send, sb);
        send
    };
    if is_in_place(sendbuf) {
        // Every member must deposit before anyone overwrites: the engine deposits a
        // chunk of every piece before the step and copies in after it, so reading and
        // writing the same buffer is safe chunk by chunk.
    }
    gather::alltoall(c, &send, &recv, vary)
}

mpi_entry!(MPI_Alltoall, PMPI_Alltoall, (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void, recvcount: c_int, recvtype: i32, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return inter_alltoall(comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
    }
    let c = intra(comm)?;
    let size = c.size();
    let rt = check::datatype(recvtype, "recvtype")?;
    let rn = check::count(recvcount, "recvcount")?;
    let recv: Vec<Piece> = (0..size).map(|i| piece(UserBuf::empty(), i * rn * rt.extent, rn * rt.extent)).collect();
    let send = if is_in_place(sendbuf) {
        Vec::new()
    } else {
        let st = check::datatype(sendtype, "sendtype")?;
        let sn = check::count(sendcount, "sendcount")?;
        (0..size).map(|i| piece(UserBuf::empty(), i * sn * st.extent, sn * st.extent)).collect()
    };
    alltoall_impl(sendbuf, send, recvbuf, recv, false, &c)
});

mpi_entry!(MPI_Alltoallv, PMPI_Alltoallv, (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: i32, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return inter_alltoallv(comm, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype);
    }
    let c = intra(comm)?;
    let size = c.size();
    let rt = check::datatype(recvtype, "recvtype")?;
    let recv = v_pieces(UserBuf::empty(), check::array(recvcounts, size, "recvcounts")?, check::array(rdispls, size, "rdispls")?, &rt, "recv")?;
    let send = if is_in_place(sendbuf) {
        Vec::new()
    } else {
        let st = check::datatype(sendtype, "sendtype")?;
        v_pieces(UserBuf::empty(), check::array(sendcounts, size, "sendcounts")?, check::array(sdispls, size, "sdispls")?, &st, "send")?
    };
    alltoall_impl(sendbuf, send, recvbuf, recv, true, &c)
});

fn w_pieces(
    counts: &[c_int],
    displs: &[c_int],
    types: &[i32],
    what: &str,
) -> MpiResult<Vec<Piece>> {
    (0..counts.len())
        .map(|i| {
            let n = check::count(counts[i], &format!("{what}counts[{i}]"))?;
            let t = check::datatype(types[i], &format!("{what}types[{i}]"))?;
            if displs[i] < 0 {
                return Err(err(
                    MPI_ERR_ARG,
                    format!("{what}displs[{i}]={} is negative", displs[i]),
                ));
            }
            Ok(piece(UserBuf::empty(), displs[i] as usize, n * t.extent))
        })
        .collect()
}

mpi_entry!(MPI_Alltoallw, PMPI_Alltoallw, (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const i32, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const i32, comm: i32), errcomm = comm, {
    if check::comm(comm)?.is_inter() {
        return inter_alltoallw(comm, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes);
    }
    let c = intra(comm)?;
    let size = c.size();
    let recv = w_pieces(check::array(recvcounts, size, "recvcounts")?, check::array(rdispls, size, "rdispls")?, check::array(recvtypes, size, "recvtypes")?, "recv")?;
    let send = if is_in_place(sendbuf) {
        Vec::new()
    } else {
        w_pieces(check::array(sendcounts, size, "sendcounts")?, check::array(sdispls, size, "sdispls")?, check::array(sendtypes, size, "sendtypes")?, "send")?
    };
    alltoall_impl(sendbuf, send, recvbuf, recv, true, &c)
});
