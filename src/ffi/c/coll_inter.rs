//! Collectives on intercommunicators (MPI-2.2 §5.2.2 and the "if comm is an
//! intercommunicator" paragraphs of each operation): one group's data goes to the other
//! group. Reductions keep the canonical-order, bitwise-identical promise: each group's
//! reduction is folded over its ranks 0..n-1 in order, by its own members, and copied to
//! every receiver of the other group.
use super::coll::Plan;
use crate::abi::*;
use crate::coll::reduce::{self, Part, Reduction};
use crate::coll::Chan;
use crate::comm::Comm;
use crate::error::{err, MpiResult};
use crate::ffi::check::{self, is_in_place};
use crate::ffi::typed::{RedData, Stage};
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

/// An idle member never folds: it only takes part in the steps.
fn idle_fold(_: &[u8], _: &mut [u8]) -> MpiResult<()> {
    Ok(())
}

pub fn reduce(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: i32,
    op: i32,
    root: c_int,
) -> Plan {
    let role = role(c, root)?;
    let mut st = Stage::default();
    // Arguments are checked now; the root discovery and length agreement are steps.
    let (mine, is_root, rd, buf) = match role {
        Role::Root => {
            let rd = RedData::new(datatype, op)?;
            let n = check::count(count, "count")?;
            let recv = rd.output(&mut st, recvbuf, n, "recvbuf")?;
            (rd.bytes(n)?, true, Some(rd), recv)
        }
        Role::Peer(_) => {
            no_in_place(sendbuf, "sendbuf")?;
            let rd = RedData::new(datatype, op)?;
            let n = check::count(count, "count")?;
            let send = rd.input(&mut st, sendbuf, n, "sendbuf")?;
            (rd.bytes(n)?, false, Some(rd), send)
        }
        Role::Idle => (0, false, None, UserBuf::empty()),
    };
    let cc = c.clone();
    Ok((
        c.clone(),
        Box::pin(async move {
            let c = &cc;
            let ch = Chan::open(c).await?;
            let root_chan = super::coll_move::find_root(&ch, is_root).await?;
            ch.put_args(&[mine as u64]);
            ch.step().await?;
            let total = ch.peer_args(root_chan, 0) as usize;
            match (role, rd) {
                (Role::Root, Some(rd)) => {
                    let f = rd.func();
                    let red = rd.reduction(&f);
                    let contrib = remote_chans(c);
                    // The root folds in the one-step path, so it needs the real operation.
                    reduce::reduce_group(
                        &ch,
                        total,
                        &red,
                        &Part {
                            send: None,
                            recv: buf,
                            lo: 0,
                            hi: total,
                        },
                        &contrib,
                        false,
                        reduce::SMALL,
                    )
                    .await?;
                }
                (Role::Peer(r), Some(rd)) => {
                    if c.chan_of_remote(r) != root_chan {
                        return Err(err(
                            MPI_ERR_ROOT,
                            format!("root={r} but another remote process passed MPI_ROOT"),
                        ));
                    }
                    if mine != total {
                        return Err(err(
                            MPI_ERR_COUNT,
                            format!(
                                "this process reduces {mine} bytes but the root expects {total}"
                            ),
                        ));
                    }
                    let f = rd.func();
                    let red = rd.reduction(&f);
                    let contrib = local_chans(c);
                    reduce::reduce_group(
                        &ch,
                        total,
                        &red,
                        &Part {
                            send: Some(buf),
                            recv: UserBuf::empty(),
                            lo: 0,
                            hi: 0,
                        },
                        &contrib,
                        false,
                        reduce::SMALL,
                    )
                    .await?;
                }
                _ => {
                    let contrib = remote_chans(c);
                    // Any extent divides the agreed length in the steps; nothing is folded here.
                    let redn = Reduction {
                        f: &idle_fold,
                        commutative: true,
                        extent: 1,
                        multi: None,
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
                        false,
                        reduce::SMALL,
                    )
                    .await?;
                }
            }
            st.finish()
        }),
    ))
}

/// Two passes: group A's reduction to B, then B's to A. `lo..hi` is this process's
/// byte range of the other group's reduced vector.
fn both_ways(
    c: &Arc<Comm>,
    rd: RedData,
    st: Stage,
    total: usize,
    send: UserBuf,
    recv: UserBuf,
    lo: usize,
    hi: usize,
) -> Plan {
    let cc = c.clone();
    Ok((
        c.clone(),
        Box::pin(async move {
            let c = &cc;
            let ch = Chan::open(c).await?;
            let (a, b): (Vec<usize>, Vec<usize>) = if c.local_is_a {
                (local_chans(c), remote_chans(c))
            } else {
                (remote_chans(c), local_chans(c))
            };
            let f = rd.func();
            let red = rd.reduction(&f);
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
                reduce::reduce_group(&ch, total, &red, &part, contrib, false, reduce::SMALL)
                    .await?;
            }
            st.finish()
        }),
    ))
}

pub fn allreduce(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: i32,
    op: i32,
) -> Plan {
    no_in_place(sendbuf, "sendbuf")?;
    let rd = RedData::new(datatype, op)?;
    let n = check::count(count, "count")?;
    let total = rd.bytes(n)?;
    let mut st = Stage::default();
    let send = rd.input(&mut st, sendbuf, n, "sendbuf")?;
    let recv = rd.output(&mut st, recvbuf, n, "recvbuf")?;
    both_ways(c, rd, st, total, send, recv, 0, total)
}

/// Reduce-scatter across the groups: my group's vector of `sum(counts)` instances; I
/// receive `counts[my rank]` instances of the other group's reduction.
fn scatter_counts(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &[usize],
    datatype: i32,
    op: i32,
) -> Plan {
    no_in_place(sendbuf, "sendbuf")?;
    let rd = RedData::new(datatype, op)?;
    let sum: usize = counts.iter().sum();
    let lo = rd.bytes(counts[..c.rank].iter().sum())?;
    let block = rd.bytes(counts[c.rank])?;
    let total = rd.bytes(sum)?;
    let mut st = Stage::default();
    let send = rd.input(&mut st, sendbuf, sum, "sendbuf")?;
    let recv = rd.output(&mut st, recvbuf, counts[c.rank], "recvbuf")?;
    both_ways(c, rd, st, total, send, recv, lo, lo + block)
}

pub fn reduce_scatter_block(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: i64,
    datatype: i32,
    op: i32,
) -> Plan {
    let n = check::count(recvcount, "recvcount")?;
    scatter_counts(c, sendbuf, recvbuf, &vec![n; c.size()], datatype, op)
}

pub fn reduce_scatter(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &[usize],
    datatype: i32,
    op: i32,
) -> Plan {
    scatter_counts(c, sendbuf, recvbuf, counts, datatype, op)
}
