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
    count: c_int,
    datatype: i32,
    op: i32,
    root: c_int,
) -> MpiResult<()> {
    let role = role(c, root)?;
    let ch = Chan::new(c)?;
    let mut st = Stage::default();
    // The root publishes the vector length (its group's other members do not know it).
    let (mine, is_root, rd) = match role {
        Role::Root => {
            let rd = RedData::new(datatype, op)?;
            (rd.bytes(check::count(count, "count")?)?, true, Some(rd))
        }
        Role::Peer(_) => (0, false, Some(RedData::new(datatype, op)?)),
        Role::Idle => (0, false, None),
    };
    let root_chan = super::coll_move::find_root(&ch, is_root)?;
    ch.put_args(&[mine as u64]);
    ch.step()?;
    let total = ch.peer_args(root_chan, 0) as usize;
    match (role, rd) {
        (Role::Root, Some(rd)) => {
            // The root folds in the one-step path, so it needs the real operation.
            let n = check::count(count, "count")?;
            let recv = rd.output(&mut st, recvbuf, n, "recvbuf")?;
            let contrib = remote_chans(c);
            rd.with(|redn| {
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
            })?;
        }
        (Role::Peer(r), Some(rd)) => {
            if c.chan_of_remote(r) != root_chan {
                return Err(err(
                    MPI_ERR_ROOT,
                    format!("root={r} but another remote process passed MPI_ROOT"),
                ));
            }
            no_in_place(sendbuf, "sendbuf")?;
            let n = check::count(count, "count")?;
            let bytes = rd.bytes(n)?;
            if bytes != total {
                return Err(err(
                    MPI_ERR_COUNT,
                    format!("this process reduces {bytes} bytes but the root expects {total}"),
                ));
            }
            let send = rd.input(&mut st, sendbuf, n, "sendbuf")?;
            let contrib = local_chans(c);
            rd.with(|redn| {
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
            })?;
        }
        _ => {
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
            )?;
        }
    }
    st.finish()
}

/// Two passes: group A's reduction to B, then B's to A. `lo..hi` is this process's
/// byte range of the other group's reduced vector.
fn both_ways(
    c: &Arc<Comm>,
    rd: &RedData,
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
    rd.with(|redn| {
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
    let rd = RedData::new(datatype, op)?;
    let n = check::count(count, "count")?;
    let total = rd.bytes(n)?;
    let mut st = Stage::default();
    let send = rd.input(&mut st, sendbuf, n, "sendbuf")?;
    let recv = rd.output(&mut st, recvbuf, n, "recvbuf")?;
    both_ways(c, &rd, total, send, recv, 0, total)?;
    st.finish()
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
) -> MpiResult<()> {
    no_in_place(sendbuf, "sendbuf")?;
    let rd = RedData::new(datatype, op)?;
    let sum: usize = counts.iter().sum();
    let lo = rd.bytes(counts[..c.rank].iter().sum())?;
    let block = rd.bytes(counts[c.rank])?;
    let total = rd.bytes(sum)?;
    let mut st = Stage::default();
    let send = rd.input(&mut st, sendbuf, sum, "sendbuf")?;
    let recv = rd.output(&mut st, recvbuf, counts[c.rank], "recvbuf")?;
    both_ways(c, &rd, total, send, recv, lo, lo + block)?;
    st.finish()
}

pub fn reduce_scatter_block(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: i32,
    op: i32,
) -> MpiResult<()> {
    let n = check::count(recvcount, "recvcount")?;
    scatter_counts(c, sendbuf, recvbuf, &vec![n; c.size()], datatype, op)
}

pub fn reduce_scatter(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: i32,
    op: i32,
) -> MpiResult<()> {
    let counts = check::array(recvcounts, c.size(), "recvcounts")?
        .iter()
        .enumerate()
        .map(|(i, &k)| check::count(k, &format!("recvcounts[{i}]")))
        .collect::<MpiResult<Vec<usize>>>()?;
    scatter_counts(c, sendbuf, recvbuf, &counts, datatype, op)
}
