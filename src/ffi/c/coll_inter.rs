//! Collectives on intercommunicators (MPI-2.2 §5.2.2 and the "if comm is an
//! intercommunicator" paragraphs of each operation): one group's data goes to the other
//! group. Reductions keep the canonical-order, bitwise-identical promise: each group's
//! reduction is folded over its ranks 0..n-1 in order, by its own members, and copied to
//! every receiver of the other group.
use crate::abi::*;
use crate::coll::gather::{self, Piece};
use crate::coll::reduce::{self, Part, Reduction};
use crate::coll::Chan;
use crate::comm::Comm;
use crate::error::{err, MpiResult};
use crate::ffi::check::{self, is_in_place, TypeInfo};
use crate::p2p::UserBuf;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// The role of this process in a rooted intercommunicator collective.
pub enum Role {
    /// This process is the root (root = MPI_ROOT).
    Root,
    /// In the root's group but not the root (root = MPI_PROC_NULL).
    Idle,
    /// In the other group; the root is remote rank `r`.
    Peer(usize),
}

pub fn role(c: &Comm, root: c_int) -> MpiResult<Role> {
    match root {
        MPI_ROOT => Ok(Role::Root),
        MPI_PROC_NULL => Ok(Role::Idle),
        r if r >= 0 && (r as usize) < c.peer_size() => Ok(Role::Peer(r as usize)),
        r => Err(err(
            MPI_ERR_ROOT,
            format!("root={r} is neither MPI_ROOT, MPI_PROC_NULL nor a rank of the remote group (size {})", c.peer_size()),
        )),
    }
}

fn no_in_place(p: *const c_void, arg: &str) -> MpiResult<()> {
    if is_in_place(p) {
        Err(err(
            MPI_ERR_BUFFER,
            format!("{arg} is MPI_IN_PLACE, which intercommunicator collectives do not allow"),
        ))
    } else {
        Ok(())
    }
}

fn local_chans(c: &Comm) -> Vec<usize> {
    (0..c.size()).map(|r| c.chan_of_local(r)).collect()
}
fn remote_chans(c: &Comm) -> Vec<usize> {
    (0..c.peer_size()).map(|r| c.chan_of_remote(r)).collect()
}

/// Finds the channel index of the root: members publish (is_root) in one step.
fn find_root(ch: &Chan, me_root: bool) -> MpiResult<usize> {
    ch.put_args(&[me_root as u64]);
    ch.step()?;
    (0..ch.n)
        .find(|&i| ch.peer_args(i, 0) == 1)
        .ok_or_else(|| err(MPI_ERR_ROOT, "no process passed root=MPI_ROOT"))
}

/// Rooted broadcast with root discovery.
pub fn bcast_any(
    c: &Arc<Comm>,
    buffer: *mut c_void,
    count: c_int,
    datatype: i32,
    root: c_int,
) -> MpiResult<()> {
    let role = role(c, root)?;
    let (buf, is_root, receive) = match role {
        Role::Root | Role::Peer(_) => {
            let t = check::datatype(datatype, "datatype")?;
            let n = check::count(count, "count")?;
            (
                check::buffer(buffer, check::span(&t, n)?, "buffer")?,
                matches!(role, Role::Root),
                matches!(role, Role::Peer(_)),
            )
        }
        Role::Idle => (UserBuf::empty(), false, false),
    };
    let ch = Chan::new(c)?;
    let root_chan = find_root(&ch, is_root)?;
    if let Role::Peer(r) = role {
        if c.chan_of_remote(r) != root_chan {
            return Err(err(
                MPI_ERR_ROOT,
                format!("root={r} but remote rank {} passed MPI_ROOT", root_chan),
            ));
        }
    }
    crate::coll::bcast::bcast_inter(c, buf, root_chan, receive)
}

struct Red {
    t: TypeInfo,
    op: crate::op::OpRef,
}

fn red(datatype: i32, op: i32) -> MpiResult<Red> {
    let t = check::datatype(datatype, "datatype")?;
    let o = crate::op::resolve(op)?;
    if let crate::op::OpRef::Builtin(b) = &o {
        crate::op::kernel_for(*b, datatype)?;
    }
    Ok(Red { t, op: o })
}

fn with_reduction<R>(r: &Red, body: impl FnOnce(&Reduction) -> MpiResult<R>) -> MpiResult<R> {
    let dt = r.t.handle;
    let ext = r.t.extent.max(1);
    let f = |inv: &[u8], inout: &mut [u8]| crate::op::apply(&r.op, dt, inv, inout, inv.len() / ext);
    let red = Reduction {
        f: &f,
        commutative: crate::op::is_commutative(&r.op),
        extent: r.t.extent,
    };
    body(&red)
}

/// An idle member never folds: it only takes part in the steps.
fn idle_fold(_: &[u8], _: &mut [u8]) -> MpiResult<()> {
    Ok(())
}

pub fn reduce(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: i32,
    op: i32,
    root: c_int,
) -> MpiResult<()> {
    let role = role(c, root)?;
    let ch = Chan::new(c)?;
    // The root publishes the vector length (its group's other members do not know it).
    let (mine, is_root) = match role {
        Role::Root => {
            let t = check::datatype(datatype, "datatype")?;
            (check::span(&t, check::count(count, "count")?)?, true)
        }
        _ => (0, false),
    };
    let root_chan = find_root(&ch, is_root)?;
    ch.put_args(&[mine as u64]);
    ch.step()?;
    let total = ch.peer_args(root_chan, 0) as usize;
    match role {
        Role::Root => {
            // The root folds in the one-step path, so it needs the real operation.
            let rd = red(datatype, op)?;
            let recv = check::buffer(recvbuf, total, "recvbuf")?;
            let contrib = remote_chans(c);
            with_reduction(&rd, |redn| {
                reduce::reduce_group(
                    &ch,
                    total,
                    redn,
                    &Part {
                        send: None,
                        recv,
                        lo: 0,
                        hi: total,
                    },
                    &contrib,
                )
            })
        }
        Role::Idle => {
            let contrib = remote_chans(c);
            // Any extent divides the agreed length in the steps; nothing is folded here.
            let redn = Reduction {
                f: &idle_fold,
                commutative: true,
                extent: 1,
            };
            reduce::reduce_group(
                &ch,
                total,
                &redn,
                &Part {
                    send: None,
                    recv: UserBuf::empty(),
                    lo: 0,
                    hi: 0,
                },
                &contrib,
            )
        }
        Role::Peer(r) => {
            if c.chan_of_remote(r) != root_chan {
                return Err(err(
                    MPI_ERR_ROOT,
                    format!("root={r} but another remote process passed MPI_ROOT"),
                ));
            }
            no_in_place(sendbuf, "sendbuf")?;
            let rd = red(datatype, op)?;
            let n = check::count(count, "count")?;
            let bytes = check::span(&rd.t, n)?;
            if bytes != total {
                return Err(err(
                    MPI_ERR_COUNT,
                    format!("this process reduces {bytes} bytes but the root expects {total}"),
                ));
            }
            let send = check::buffer(sendbuf, bytes, "sendbuf")?;
            let contrib = local_chans(c);
            with_reduction(&rd, |redn| {
                reduce::reduce_group(
                    &ch,
                    total,
                    redn,
                    &Part {
                        send: Some(send),
                        recv: UserBuf::empty(),
                        lo: 0,
                        hi: 0,
                    },
                    &contrib,
                )
            })
        }
    }
}

/// Two passes: group A's reduction to B, then B's to A. `lo..hi` is this process's
/// byte range of the other group's reduced vector.
fn both_ways(
    c: &Arc<Comm>,
    rd: &Red,
    total: usize,
    send: UserBuf,
    recv: UserBuf,
    lo: usize,
    hi: usize,
) -> MpiResult<()> {
    let ch = Chan::new(c)?;
    let (a, b): (Vec<usize>, Vec<usize>) = if c.local_is_a {
        (local_chans(c), remote_chans(c))
    } else {
        (remote_chans(c), local_chans(c))
    };
    with_reduction(rd, |redn| {
        for (contrib, i_contribute) in [(&a, c.local_is_a), (&b, !c.local_is_a)] {
            let part = if i_contribute {
                Part {
                    send: Some(send),
                    recv: UserBuf::empty(),
                    lo: 0,
                    hi: 0,
                }
            } else {
                Part {
                    send: Some(send),
                    recv,
                    lo,
                    hi,
                }
            };
            reduce::reduce_group(&ch, total, redn, &part, contrib)?;
        }
        Ok(())
    })
}

pub fn allreduce(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: i32,
    op: i32,
) -> MpiResult<()> {
    no_in_place(sendbuf, "sendbuf")?;
    let rd = red(datatype, op)?;
    let total = check::span(&rd.t, check::count(count, "count")?)?;
    let send = check::buffer(sendbuf, total, "sendbuf")?;
    let recv = check::buffer(recvbuf, total, "recvbuf")?;
    both_ways(c, &rd, total, send, recv, 0, total)
}

pub fn reduce_scatter_block(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: i32,
    op: i32,
) -> MpiResult<()> {
    no_in_place(sendbuf, "sendbuf")?;
    let rd = red(datatype, op)?;
    let block = check::span(&rd.t, check::count(recvcount, "recvcount")?)?;
    let total = block * c.size();
    let send = check::buffer(sendbuf, total, "sendbuf")?;
    let recv = check::buffer(recvbuf, block, "recvbuf")?;
    let lo = block * c.rank;
    both_ways(c, &rd, total, send, recv, lo, lo + block)
}

pub fn reduce_scatter(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: i32,
    op: i32,
) -> MpiResult<()> {
    no_in_place(sendbuf, "sendbuf")?;
    let rd = red(datatype, op)?;
    let counts = check::array(recvcounts, c.size(), "recvcounts")?;
    let mut sum = 0;
    let mut lo = 0;
    for (i, &k) in counts.iter().enumerate() {
        let k = check::count(k, &format!("recvcounts[{i}]"))?;
        if i < c.rank {
            lo += k;
        }
        sum += k;
    }
    let total = check::span(&rd.t, sum)?;
    let lo = lo * rd.t.extent;
    let block = counts[c.rank] as usize * rd.t.extent;
    let send = check::buffer(sendbuf, total, "sendbuf")?;
    let recv = check::buffer(recvbuf, block, "recvbuf")?;
    both_ways(c, &rd, total, send, recv, lo, lo + block)
}

fn piece(buf: UserBuf, off: usize, len: usize) -> Piece {
    Piece { buf, off, len }
}

/// Gather / Gatherv: the root receives from every remote process.
pub fn gather(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcounts: Option<*const c_int>,
    recvcount: c_int,
    displs: Option<*const c_int>,
    recvtype: i32,
    root: c_int,
) -> MpiResult<()> {
    let n = c.chan_members.len();
    let mut recv = vec![Piece::none(); n];
    let mut send = Piece::none();
    match role(c, root)? {
        Role::Root => {
            let t = check::datatype(recvtype, "recvtype")?;
            let m = c.peer_size();
            let (cnts, offs): (Vec<usize>, Vec<usize>) = match (recvcounts, displs) {
                (Some(rc), Some(d)) => {
                    let rc = check::array(rc, m, "recvcounts")?;
                    let d = check::array(d, m, "displs")?;
                    let mut cs = Vec::new();
                    let mut os = Vec::new();
                    for i in 0..m {
                        cs.push(check::count(rc[i], &format!("recvcounts[{i}]"))? * t.extent);
                        if d[i] < 0 {
                            return Err(err(
                                MPI_ERR_ARG,
                                format!("displs[{i}]={} is negative", d[i]),
                            ));
                        }
                        os.push(d[i] as usize * t.extent);
                    }
                    (cs, os)
                }
                _ => {
                    let k = check::count(recvcount, "recvcount")? * t.extent;
                    ((0..m).map(|_| k).collect(), (0..m).map(|i| i * k).collect())
                }
            };
            let span = cnts
                .iter()
                .zip(&offs)
                .map(|(c, o)| c + o)
                .max()
                .unwrap_or(0);
            let rb = check::buffer(recvbuf, span, "recvbuf")?;
            for i in 0..m {
                recv[c.chan_of_remote(i)] = piece(rb, offs[i], cnts[i]);
            }
        }
        Role::Idle => {}
        Role::Peer(_) => {
            no_in_place(sendbuf, "sendbuf")?;
            let t = check::datatype(sendtype, "sendtype")?;
            let k = check::span(&t, check::count(sendcount, "sendcount")?)?;
            send = piece(check::buffer(sendbuf, k, "sendbuf")?, 0, k);
        }
    }
    gather::by_sender(c, send, &recv, true)
}

/// Scatter / Scatterv: the root sends to every remote process.
pub fn scatter(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    sendcounts: Option<*const c_int>,
    sendcount: c_int,
    displs: Option<*const c_int>,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: i32,
    root: c_int,
) -> MpiResult<()> {
    let n = c.chan_members.len();
    let mut send = vec![Piece::none(); n];
    let mut recv = Piece::none();
    let role = role(c, root)?;
    let is_root = matches!(role, Role::Root);
    match role {
        Role::Root => {
            let t = check::datatype(sendtype, "sendtype")?;
            let m = c.peer_size();
            let (cnts, offs): (Vec<usize>, Vec<usize>) = match (sendcounts, displs) {
                (Some(sc), Some(d)) => {
                    let sc = check::array(sc, m, "sendcounts")?;
                    let d = check::array(d, m, "displs")?;
                    let mut cs = Vec::new();
                    let mut os = Vec::new();
                    for i in 0..m {
                        cs.push(check::count(sc[i], &format!("sendcounts[{i}]"))? * t.extent);
                        if d[i] < 0 {
                            return Err(err(
                                MPI_ERR_ARG,
                                format!("displs[{i}]={} is negative", d[i]),
                            ));
                        }
                        os.push(d[i] as usize * t.extent);
                    }
                    (cs, os)
                }
                _ => {
                    let k = check::count(sendcount, "sendcount")? * t.extent;
                    ((0..m).map(|_| k).collect(), (0..m).map(|i| i * k).collect())
                }
            };
            let span = cnts
                .iter()
                .zip(&offs)
                .map(|(c, o)| c + o)
                .max()
                .unwrap_or(0);
            let sb = check::buffer(sendbuf, span, "sendbuf")?;
            for i in 0..m {
                send[c.chan_of_remote(i)] = piece(sb, offs[i], cnts[i]);
            }
        }
        Role::Idle => {}
        Role::Peer(_) => {
            no_in_place(recvbuf, "recvbuf")?;
            let t = check::datatype(recvtype, "recvtype")?;
            let k = check::span(&t, check::count(recvcount, "recvcount")?)?;
            recv = piece(check::buffer(recvbuf, k, "recvbuf")?, 0, k);
        }
    }
    let ch = Chan::new(c)?;
    let root_chan = find_root(&ch, is_root)?;
    gather::scatter(c, root_chan, &send, recv, true)
}

/// Allgather / Allgatherv: every process receives the contributions of the remote group.
pub fn allgather(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcounts: Option<*const c_int>,
    recvcount: c_int,
    displs: Option<*const c_int>,
    recvtype: i32,
) -> MpiResult<()> {
    no_in_place(sendbuf, "sendbuf")?;
    let n = c.chan_members.len();
    let st = check::datatype(sendtype, "sendtype")?;
    let k = check::span(&st, check::count(sendcount, "sendcount")?)?;
    let send = piece(check::buffer(sendbuf, k, "sendbuf")?, 0, k);
    let t = check::datatype(recvtype, "recvtype")?;
    let m = c.peer_size();
    let mut pieces = Vec::new();
    for i in 0..m {
        let (cnt, off) = match (recvcounts, displs) {
            (Some(rc), Some(d)) => {
                let rc = check::array(rc, m, "recvcounts")?;
                let d = check::array(d, m, "displs")?;
                if d[i] < 0 {
                    return Err(err(
                        MPI_ERR_ARG,
                        format!("displs[{i}]={} is negative", d[i]),
                    ));
                }
                (
                    check::count(rc[i], &format!("recvcounts[{i}]"))? * t.extent,
                    d[i] as usize * t.extent,
                )
            }
            _ => {
                let kk = check::count(recvcount, "recvcount")? * t.extent;
                (kk, i * kk)
            }
        };
        pieces.push((cnt, off));
    }
    let span = pieces.iter().map(|(c, o)| c + o).max().unwrap_or(0);
    let rb = check::buffer(recvbuf, span, "recvbuf")?;
    let mut recv = vec![Piece::none(); n];
    for (i, (cnt, off)) in pieces.into_iter().enumerate() {
        recv[c.chan_of_remote(i)] = piece(rb, off, cnt);
    }
    gather::by_sender(c, send, &recv, true)
}

/// Alltoall(v, w): process i of one group sends its j-th piece to process j of the
/// other group. `send`/`recv` are indexed by remote rank.
pub fn alltoall(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    send: Vec<(usize, usize)>,
    recvbuf: *mut c_void,
    recv: Vec<(usize, usize)>,
) -> MpiResult<()> {
    no_in_place(sendbuf, "sendbuf")?;
    let n = c.chan_members.len();
    let sspan = send.iter().map(|(o, l)| o + l).max().unwrap_or(0);
    let rspan = recv.iter().map(|(o, l)| o + l).max().unwrap_or(0);
    let sb = check::buffer(sendbuf, sspan, "sendbuf")?;
    let rb = check::buffer(recvbuf, rspan, "recvbuf")?;
    let mut sp = vec![Piece::none(); n];
    let mut rp = vec![Piece::none(); n];
    for (j, (o, l)) in send.into_iter().enumerate() {
        sp[c.chan_of_remote(j)] = piece(sb, o, l);
    }
    for (i, (o, l)) in recv.into_iter().enumerate() {
        rp[c.chan_of_remote(i)] = piece(rb, o, l);
    }
    gather::alltoall(c, &sp, &rp, true)
}
