//! Intercommunicators: MPI_Intercomm_create, MPI_Intercomm_merge, and MPI_Comm_dup /
//! split on an intercommunicator.
//!
//! An intercommunicator's channel has both groups as members, group "A" (the one whose
//! rank 0 has the smaller world rank) first, so the step engine of coll/ serves it
//! unchanged: a collective names which channel members contribute and which receive.
#![deny(unsafe_code)]
use super::{alloc_channel as alloc, failed_alloc, no_channel, NOT_ALLOCATING, NO_CHANNEL};
use crate::abi::*;
use crate::coll::Chan;
use crate::comm::{get, Comm};
use crate::create::register;
use crate::error::{err, MpiResult};
use crate::p2p::{self, Mode, SendData};
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn send_u64s(c: &Arc<Comm>, dest: i32, tag: i32, v: &[u64]) -> MpiResult<()> {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let id = p2p::isend(c, SendData::Owned(bytes), dest, tag, Mode::Standard)?;
    p2p::wait(id).map(|_| ())
}

fn recv_u64s(c: &Arc<Comm>, src: i32, tag: i32, n: usize) -> MpiResult<Vec<u64>> {
    let mut b = vec![0u8; n * 8];
    p2p::recv_bytes(c, &mut b, src, tag)?;
    Ok(b.chunks_exact(8)
        .map(|x| u64::from_le_bytes(x.try_into().unwrap()))
        .collect())
}

/// Broadcasts u64 values from `root` over the local communicator.
fn bcast_u64s(c: &Comm, root: usize, v: &mut [u64]) -> MpiResult<()> {
    let mut b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    crate::coll::bcast_bytes(c, &mut b, root)?;
    for (i, x) in b.chunks_exact(8).enumerate() {
        v[i] = u64::from_le_bytes(x.try_into().unwrap());
    }
    Ok(())
}

fn finish(
    local: &Comm,
    ctx: u64,
    group: Vec<usize>,
    rank: usize,
    remote: Vec<usize>,
) -> MpiResult<Arc<Comm>> {
    let j = crate::runtime::job()?;
    let c = Comm::new(0, ctx as usize, group, rank, Some(remote), j.size, "");
    c.errhandler
        .store(local.errhandler.load(Ordering::Relaxed), Ordering::Relaxed);
    Ok(register(c))
}

/// MPI_Intercomm_create.
pub fn create(
    local: &Arc<Comm>,
    local_leader: usize,
    peer: &Arc<Comm>,
    remote_leader: i32,
    tag: i32,
) -> MpiResult<Arc<Comm>> {
    if local.is_inter() {
        return Err(err(MPI_ERR_COMM, "local_comm must be an intracommunicator"));
    }
    let me_leader = local.rank == local_leader;
    // [remote size, ctx, remote world ranks...]
    let mut head = [0u64; 2];
    let mut remote: Vec<u64> = Vec::new();
    if me_leader {
        if remote_leader < 0 || remote_leader as usize >= peer.peer_size() {
            return Err(err(
                MPI_ERR_RANK,
                format!(
                    "remote_leader={remote_leader} is not a rank of peer_comm (size {})",
                    peer.peer_size()
                ),
            ));
        }
        let internal = Arc::new(peer.internal_view());
        let mine: Vec<u64> = local.group.iter().map(|&w| w as u64).collect();
        send_u64s(&internal, remote_leader, tag, &[mine.len() as u64])?;
        send_u64s(&internal, remote_leader, tag, &mine)?;
        let n = recv_u64s(&internal, remote_leader, tag, 1)?[0] as usize;
        remote = recv_u64s(&internal, remote_leader, tag, n)?;
        if remote.iter().any(|w| mine.contains(w)) {
            return Err(err(
                MPI_ERR_COMM,
                "the local and remote groups of MPI_Intercomm_create overlap",
            ));
        }
        // The leader with the smaller world rank allocates the shared channel.
        let my_world = crate::runtime::job()?.rank as u64;
        let their_world = peer.peer_world(remote_leader as usize) as u64;
        let ctx = if my_world < their_world {
            let c = alloc(mine.len() + n);
            send_u64s(&internal, remote_leader, tag, &[c])?;
            c
        } else {
            recv_u64s(&internal, remote_leader, tag, 1)?[0]
        };
        head = [n as u64, ctx];
    }
    bcast_u64s(local, local_leader, &mut head)?;
    remote.resize(head[0] as usize, 0);
    bcast_u64s(local, local_leader, &mut remote)?;
    // One allocation, whose outcome both groups received from their leaders.
    if head[1] == NO_CHANNEL {
        return Err(no_channel(
            "the leader with the smaller MPI_COMM_WORLD rank of the two",
        ));
    }
    finish(
        local,
        head[1],
        local.group.clone(),
        local.rank,
        remote.iter().map(|&w| w as usize).collect(),
    )
}

/// MPI_Intercomm_merge: the group passing high=false comes first; if both groups pass
/// the same value, group "A" comes first.
pub fn merge(inter: &Arc<Comm>, high: bool) -> MpiResult<Arc<Comm>> {
    let remote = inter.remote.as_ref().ok_or_else(|| {
        err(
            MPI_ERR_COMM,
            "MPI_Intercomm_merge needs an intercommunicator",
        )
    })?;
    let t = crate::coll::ticket(inter);
    let _turn = crate::progress::block_on(async { Ok(crate::coll::turn(inter, t).await) })?;
    let ch = crate::progress::block_on(Chan::open(inter))?;
    ch.put_args(&[high as u64]);
    crate::progress::block_on(ch.step())?;
    let local_high = ch.peer_args(inter.chan_of_local(0), 0) != 0;
    let remote_high = ch.peer_args(inter.chan_of_remote(0), 0) != 0;
    let local_first = if local_high == remote_high {
        inter.local_is_a
    } else {
        !local_high
    };
    let group: Vec<usize> = if local_first {
        [inter.group.clone(), remote.clone()].concat()
    } else {
        [remote.clone(), inter.group.clone()].concat()
    };
    let rank = if local_first {
        inter.rank
    } else {
        remote.len() + inter.rank
    };
    // The new rank 0 allocates and publishes the channel.
    let first_is_me = rank == 0;
    let first_chan = if local_first {
        inter.chan_of_local(0)
    } else {
        inter.chan_of_remote(0)
    };
    ch.put_args(&[if first_is_me {
        alloc(group.len())
    } else {
        NO_CHANNEL
    }]);
    crate::progress::block_on(ch.step())?;
    let ctx = ch.peer_args(first_chan, 0);
    // One allocation, whose outcome every member reads.
    if ctx == NO_CHANNEL {
        return Err(no_channel("rank 0 of the merged communicator"));
    }
    let j = crate::runtime::job()?;
    let c = Comm::new(0, ctx as usize, group, rank, None, j.size, "");
    c.errhandler
        .store(inter.errhandler.load(Ordering::Relaxed), Ordering::Relaxed);
    Ok(register(c))
}

/// MPI_Comm_split on an intercommunicator (MPI-2.2): processes of each group with the
/// same colour form an intercommunicator with the processes of the other group that
/// chose that colour; if either side is empty the result is MPI_COMM_NULL.
pub fn split(inter: &Arc<Comm>, color: i32, key: i32) -> MpiResult<Option<Arc<Comm>>> {
    let t = crate::coll::ticket(inter);
    crate::progress::block_on(split_in_turn(inter, t, color, key))
}

/// MPI_Comm_split of an intercommunicator once the collective ticket `t` (taken at the
/// call) is served.
pub(super) async fn split_in_turn(
    inter: &Arc<Comm>,
    t: u64,
    color: i32,
    key: i32,
) -> MpiResult<Option<Arc<Comm>>> {
    let remote = inter.remote.as_ref().unwrap();
    let _turn = crate::coll::turn(inter, t).await;
    let ch = Chan::open(inter).await?;
    ch.put_args(&[color as u32 as u64, key as u32 as u64]);
    ch.step().await?;
    let arg = |i: usize, k: usize| ch.peer_args(i, k) as u32 as i32;
    let pick = |n: usize, chan_of: &dyn Fn(usize) -> usize, c: i32| {
        let mut m: Vec<usize> = (0..n).filter(|&r| arg(chan_of(r), 0) == c).collect();
        m.sort_by_key(|&r| (arg(chan_of(r), 1), r));
        m
    };
    let (local_m, remote_m) = if color == MPI_UNDEFINED {
        (Vec::new(), Vec::new())
    } else {
        (
            pick(inter.group.len(), &|r| inter.chan_of_local(r), color),
            pick(remote.len(), &|r| inter.chan_of_remote(r), color),
        )
    };
    let both = !local_m.is_empty() && !remote_m.is_empty();
    // The allocator: the local leader of this colour if the local group is A, else the
    // remote leader; it publishes in a second step.
    let allocates = both && inter.local_is_a && local_m[0] == inter.rank;
    let mine = if allocates {
        alloc(local_m.len() + remote_m.len())
    } else {
        NOT_ALLOCATING
    };
    ch.put_args(&[mine]);
    ch.step().await?;
    // Every member of both groups fails if any colour's allocator found no context.
    if let Some(i) = failed_alloc(&ch, mine) {
        let a_len = if inter.local_is_a {
            inter.group.len()
        } else {
            remote.len()
        };
        let (in_a, r) = if i < a_len {
            (true, i)
        } else {
            (false, i - a_len)
        };
        let side = if in_a == inter.local_is_a {
            "local"
        } else {
            "remote"
        };
        return Err(no_channel(&format!("rank {r} of the {side} group")));
    }
    if !both {
        return Ok(None);
    }
    let alloc_chan = if inter.local_is_a {
        inter.chan_of_local(local_m[0])
    } else {
        inter.chan_of_remote(remote_m[0])
    };
    let ctx = ch.peer_args(alloc_chan, 0);
    let rank = local_m.iter().position(|&r| r == inter.rank).unwrap();
    let group = local_m.iter().map(|&r| inter.group[r]).collect();
    let rgroup = remote_m.iter().map(|&r| remote[r]).collect();
    finish(inter, ctx, group, rank, rgroup).map(Some)
}

/// MPI_Comm_dup of an intercommunicator.
pub async fn dup_in_turn(inter: &Arc<Comm>, t: u64) -> MpiResult<Arc<Comm>> {
    let c = split_in_turn(inter, t, 0, inter.rank as i32)
        .await?
        .expect("every process has colour 0");
    super::copy_attrs_agreed(inter, &c).await?;
    Ok(c)
}

/// MPI_Comm_create on an intercommunicator: `group` is a subgroup of the local group
/// (the same on every local process); the result connects it with the subgroup the
/// remote processes passed.
pub fn create_sub(
    inter: &Arc<Comm>,
    group: &crate::comm::group::Group,
) -> MpiResult<Option<Arc<Comm>>> {
    let j = crate::runtime::job()?;
    for &w in &group.ranks {
        if !inter.group.contains(&w) {
            return Err(err(
                MPI_ERR_GROUP,
                format!("group contains world rank {w}, which is not in the local group"),
            ));
        }
    }
    // Colour 0 for members, keyed by their rank in `group`; others MPI_UNDEFINED.
    match group.rank_of_world(j.rank) {
        Some(r) => split(inter, 0, r as i32),
        None => split(inter, MPI_UNDEFINED, 0),
    }
}

/// Looks up an intercommunicator handle.
pub fn get_inter(h: i32) -> MpiResult<Arc<Comm>> {
    let c = get(h)?;
    if !c.is_inter() {
        return Err(err(MPI_ERR_COMM, "comm is not an intercommunicator"));
    }
    Ok(c)
}
