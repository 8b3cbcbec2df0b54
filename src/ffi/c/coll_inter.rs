//! Collectives on intercommunicators (MPI-2.2 §5.2.2 and the "if comm is an
//! intercommunicator" paragraphs of each operation): one group's data goes to the other
//! group. Reductions keep the canonical-order, bitwise-identical promise: each group's
//! reduction is folded over its ranks 0..n-1 in order, by its own members, and copied to
//! every receiver of the other group.
use crate::abi::*;
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
    let root_chan = super::coll_move::find_root(&ch, is_root)?;
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

