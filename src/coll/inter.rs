//! Collectives on intercommunicators (MPI-2.2 §5.2.2 and the "if comm is an
//! intercommunicator" paragraphs of each operation): one group's data goes to the other
//! group. Reductions keep the canonical-order, bitwise-identical promise: each group's
//! reduction is folded over its ranks 0..n-1 in order, by its own members, and copied to
//! every receiver of the other group.
use super::nb::CollFuture;
use super::plan::Plan;
use super::reduce::{self, Part, Reduction};
use super::stage::{RedData, Stage};
use super::Chan;
use crate::abi::*;
use crate::args;
use crate::comm::Comm;
use crate::error::{err, MpiResult};
use crate::p2p::UserBuf;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// The role of this process in a rooted intercommunicator collective.
#[derive(Clone, Copy)]
pub enum Role {
    /// This process is the root (root = MPI_ROOT).
    Root,
    /// In the root's group but not the root (root = MPI_PROC_NULL).
    Idle,
    /// In the other group; the root is remote rank `r`.
    Peer(usize),
}

/// Finds the channel index of the process that passed MPI_ROOT (one step).
pub async fn find_root(ch: &Chan<'_>, me_root: bool) -> MpiResult<usize> {
    ch.put_args(&[me_root as u64]);
    ch.step().await?;
    (0..ch.n)
        .find(|&i| ch.peer_args(i, 0) == 1)
        .ok_or_else(|| err(MPI_ERR_ROOT, "no process passed root=MPI_ROOT"))
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

/// MPI_Reduce on an intercommunicator: `mine` is the byte length this process reduces
/// (0 when idle), `red` the reduction (None when idle), `buf` the root's receive buffer
/// or a peer's input.
pub async fn reduce(
    c: &Comm,
    role: Role,
    mine: usize,
    red: Option<&Reduction<'_>>,
    buf: UserBuf,
) -> MpiResult<()> {
    let ch = Chan::open(c).await?;
    let root_chan = find_root(&ch, matches!(role, Role::Root)).await?;
    ch.put_args(&[mine as u64]);
    ch.step().await?;
    let total = ch.peer_args(root_chan, 0) as usize;
    let none = |send, recv| Part {
        send,
        recv,
        lo: 0,
        hi: 0,
    };
    let (contrib, part) = match (role, red) {
        // The root folds in the one-step path, so it needs the real operation.
        (Role::Root, Some(_)) => (
            remote_chans(c),
            Part {
                hi: total,
                ..none(None, buf)
            },
        ),
        (Role::Peer(r), Some(_)) => {
            if c.chan_of_remote(r) != root_chan {
                return Err(err(
                    MPI_ERR_ROOT,
                    format!("root={r} but another remote process passed MPI_ROOT"),
                ));
            }
            if mine != total {
                return Err(err(
                    MPI_ERR_COUNT,
                    format!("this process reduces {mine} bytes but the root expects {total}"),
                ));
            }
            (local_chans(c), none(Some(buf), UserBuf::empty()))
        }
        _ => (remote_chans(c), none(None, UserBuf::empty())),
    };
    // Any extent divides the agreed length in the steps; an idle member folds nothing.
    let idle = Reduction {
        f: &idle_fold,
        commutative: true,
        extent: 1,
        multi: None,
    };
    let red = red.unwrap_or(&idle);
    reduce::reduce_group(&ch, total, red, &part, &contrib, false, reduce::SMALL).await
}

/// MPI_Reduce on an intercommunicator as a plan: the arguments this process's role
/// makes significant are checked and staged now; the root discovery and the length
/// agreement are steps.
///
/// # Safety
/// `sendbuf` and `recvbuf` are the C caller's, valid as the MPI standard requires.
pub unsafe fn reduce_plan(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: usize,
    datatype: i32,
    op: i32,
    root: c_int,
) -> Plan {
    let role = inter_root(c, root)?;
    let mut st = Stage::default();
    let (rd, buf) = match role {
        Role::Root => {
            let rd = RedData::new(datatype, op)?;
            let recv = rd.output(&mut st, recvbuf, count, "recvbuf")?;
            (Some(rd), recv)
        }
        Role::Peer(_) => {
            args::not_in_place(sendbuf, "sendbuf")?;
            let rd = RedData::new(datatype, op)?;
            let send = rd.input(&mut st, sendbuf, count, "sendbuf")?;
            (Some(rd), send)
        }
        Role::Idle => (None, UserBuf::empty()),
    };
    let mine = match &rd {
        Some(rd) => rd.bytes(count)?,
        None => 0,
    };
    let cc = c.clone();
    let body: CollFuture = Box::pin(async move {
        match rd {
            Some(rd) => {
                let f = rd.func();
                let red = rd.reduction(&f);
                reduce(&cc, role, mine, Some(&red), buf).await?
            }
            None => reduce(&cc, role, mine, None, buf).await?,
        }
        st.finish()
    });
    Ok((c.clone(), body))
}

/// MPI_Allreduce and the reduce-scatters on an intercommunicator as a plan: this
/// group's vector of `sum` instances (`None`: its length overflows); this process
/// receives `my` instances of the other group's reduction, from instance `lo`.
///
/// # Safety
/// As [`reduce_plan`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn both_ways_plan(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    sum: Option<usize>,
    lo: usize,
    my: usize,
    datatype: i32,
    op: i32,
) -> Plan {
    args::not_in_place(sendbuf, "sendbuf")?;
    let rd = RedData::new(datatype, op)?;
    let sum = sum.ok_or_else(|| err(MPI_ERR_COUNT, "the vector's length overflows"))?;
    let (lo, hi, total) = (rd.bytes(lo)?, rd.bytes(lo + my)?, rd.bytes(sum)?);
    let mut st = Stage::default();
    let send = rd.input(&mut st, sendbuf, sum, "sendbuf")?;
    let recv = rd.output(&mut st, recvbuf, my, "recvbuf")?;
    let cc = c.clone();
    let body: CollFuture = Box::pin(async move {
        let f = rd.func();
        let red = rd.reduction(&f);
        both_ways(&cc, &red, total, send, recv, lo, hi).await?;
        st.finish()
    });
    Ok((c.clone(), body))
}

/// Allreduce and reduce-scatter across the groups, in two passes: group A's reduction
/// to B, then B's to A. `total` bytes of input in `send`; `lo..hi` is this process's
/// byte range of the other group's reduced vector, received in `recv`.
pub async fn both_ways(
    c: &Comm,
    red: &Reduction<'_>,
    total: usize,
    send: UserBuf,
    recv: UserBuf,
    lo: usize,
    hi: usize,
) -> MpiResult<()> {
    let ch = Chan::open(c).await?;
    let (a, b): (Vec<usize>, Vec<usize>) = if c.local_is_a {
        (local_chans(c), remote_chans(c))
    } else {
        (remote_chans(c), local_chans(c))
    };
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
        reduce::reduce_group(&ch, total, red, &part, contrib, false, reduce::SMALL).await?;
    }
    Ok(())
}

/// MPI_Bcast on an intercommunicator: the root (`is_root`) sends `buf`, the members of
/// the other group (`receive`) receive it; `role` is this process's root argument.
pub async fn bcast(
    c: &Comm,
    role: Role,
    buf: UserBuf,
    is_root: bool,
    receive: bool,
) -> MpiResult<()> {
    let ch = Chan::open(c).await?;
    let root_chan = find_root(&ch, is_root).await?;
    if let Role::Peer(r) = role {
        if c.chan_of_remote(r) != root_chan {
            return Err(err(
                MPI_ERR_ROOT,
                format!("root={r} is not the remote process that passed MPI_ROOT"),
            ));
        }
    }
    super::bcast::bcast_inter(c, buf, root_chan, receive).await
}

/// MPI_Scatter(v) on an intercommunicator: the root (`is_root`) sends `send` (one piece
/// per channel member), the other group's members receive `recv`.
pub async fn scatter(
    c: &Comm,
    is_root: bool,
    send: &[super::gather::Piece],
    recv: super::gather::Piece,
) -> MpiResult<()> {
    let ch = Chan::open(c).await?;
    let root_chan = find_root(&ch, is_root).await?;
    super::gather::scatter(c, root_chan, send, recv, true).await
}

/// The root argument of a rooted intercommunicator collective: MPI_ROOT, MPI_PROC_NULL
/// or a rank of the remote group.
pub fn inter_root(c: &Comm, root: c_int) -> MpiResult<Role> {
    use Role;
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
