//! Creating and freeing communicators: MPI_Comm_dup, split, create, create_group, free.
//!
//! Agreement runs over the parent's channel: members publish their arguments in their
//! argument lines (one step), then the leader of each new communicator (its rank 0)
//! allocates a channel in the arena and publishes its index (a second step). The channel
//! index is the new communicator's context id, unique in the job while it lives.
//!
//! The contexts are a job-wide pool, so one leader may find none while another gets one:
//! every member reads every leader's outcome from the second step, and if any failed,
//! all members fail with the same error and the leaders that got a context give it back.
//! The parent stays in step, and a program that frees communicators can go on.
#![deny(unsafe_code)]
pub mod inter;
pub mod topo;

use crate::abi::*;
use crate::attr;
use crate::coll::Chan;
use crate::comm::{get, Comm};
use crate::error::{err, MpiResult};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What a member whose allocation failed publishes.
pub(super) const NO_CHANNEL: u64 = u64::MAX;
/// What a member that allocates nothing publishes in a constructor's allocation step.
pub(super) const NOT_ALLOCATING: u64 = u64::MAX - 1;

pub(super) fn alloc_channel(members: usize) -> u64 {
    crate::runtime::job()
        .ok()
        .and_then(|j| j.arena.alloc_channel(members))
        .map_or(NO_CHANNEL, |c| c as u64)
}

/// The error of a constructor whose context allocation failed at `who` (for example
/// "rank 3 of the parent communicator"): every member of the call returns it.
pub(super) fn no_channel(who: &str) -> crate::error::MpiError {
    err(
        MPI_ERR_OTHER,
        format!(
            "no free communicator context: all {} contexts of this job are taken by live communicators \
             (the allocation at {who} failed, so the call fails on every process); free some with MPI_Comm_free",
            crate::shm::NCHAN
        ),
    )
}

/// The agreement of a constructor on its context allocations, after the step in which
/// every channel member published what it allocated (a context, `NO_CHANNEL` or
/// `NOT_ALLOCATING`; `mine` is this member's value, also when no step was taken): if
/// any allocation failed, this member gives back the context it took, if any, and the
/// channel index of the first member whose allocation failed is returned. Every member
/// sees the same values, so the call fails everywhere or nowhere.
pub(super) fn failed_alloc(ch: &Chan, mine: u64) -> Option<usize> {
    let failed = (0..ch.n).find(|&i| {
        let v = if i == ch.me { mine } else { ch.peer_args(i, 0) };
        v == NO_CHANNEL
    })?;
    if mine != NO_CHANNEL && mine != NOT_ALLOCATING {
        if let Ok(j) = crate::runtime::job() {
            j.arena.give_back_channel(mine as usize);
        }
    }
    Some(failed)
}

/// Registers a new communicator (`comm::register`), first telling point-to-point about
/// members it may never have heard from (spawned processes).
pub fn register(c: Comm) -> Arc<Comm> {
    if let Some(&top) = c.chan_members.iter().max() {
        crate::p2p::connect_up_to(top + 1);
    }
    crate::comm::register(c)
}

/// Builds and registers the communicator of `world_ranks` (in rank order) on channel
/// `ctx`, as seen by the calling process.
fn make(parent: &Comm, ctx: usize, world_ranks: Vec<usize>) -> Arc<Comm> {
    let j = crate::runtime::job_any().unwrap();
    let rank = world_ranks.iter().position(|&w| w == j.rank).unwrap();
    let c = Comm::new(0, ctx, world_ranks, rank, None, j.size, "");
    c.errhandler
        .store(parent.errhandler.load(Ordering::Relaxed), Ordering::Relaxed);
    register(c)
}

/// MPI_Comm_split: members with the same colour form a communicator ordered by (key,
/// parent rank). Returns None for MPI_UNDEFINED.
pub fn split(parent: &Arc<Comm>, color: i32, key: i32) -> MpiResult<Option<Arc<Comm>>> {
    if color < 0 && color != MPI_UNDEFINED {
        return Err(err(
            MPI_ERR_ARG,
            format!("color={color} is negative (only MPI_UNDEFINED may be)"),
        ));
    }
    if parent.is_inter() {
        return inter::split(parent, color, key);
    }
    let t = crate::coll::ticket(parent);
    crate::progress::block_on(split_in_turn(parent, t, color, key))
}

/// MPI_Comm_split of an intracommunicator once this process's collective ticket `t`
/// (taken at the call) is served: the body of the blocking call and of MPI_Comm_idup.
async fn split_in_turn(
    parent: &Arc<Comm>,
    t: u64,
    color: i32,
    key: i32,
) -> MpiResult<Option<Arc<Comm>>> {
    let _turn = crate::coll::turn(parent, t).await;
    parent.coll.set_desc(crate::coll::agree::Desc::kind(
        crate::coll::agree::KIND_COMM_CTOR,
    ));
    let ch = Chan::open(parent).await?;
    let n = ch.n;
    ch.put_args(&[color as u32 as u64, key as u32 as u64]);
    if n > 1 {
        ch.step().await?;
    }
    // Every member's argument `k` (this member's own is `mine`).
    let args = |k: usize, mine: i32| -> Vec<i32> {
        (0..n)
            .map(|i| {
                if i == ch.me {
                    mine
                } else {
                    ch.peer_args(i, k) as u32 as i32
                }
            })
            .collect()
    };
    let (colors, keys) = (args(0, color), args(1, key));
    // Each colour's members in (key, rank) order; the first is the leader.
    let members = |c: i32| {
        let mut m: Vec<usize> = (0..n).filter(|&i| colors[i] == c).collect();
        m.sort_by_key(|&i| (keys[i], i));
        m
    };
    let mine = (color != MPI_UNDEFINED).then(|| members(color));
    let chan = match &mine {
        Some(m) if m[0] == ch.me => alloc_channel(m.len()),
        _ => NOT_ALLOCATING,
    };
    ch.put_args(&[chan]);
    if n > 1 {
        ch.step().await?;
    }
    // Every member, with a colour or not, fails if any leader found no context.
    if let Some(r) = failed_alloc(&ch, chan) {
        return Err(no_channel(&format!("rank {r} of the parent communicator")));
    }
    let Some(m) = mine else { return Ok(None) };
    let ctx = if m[0] == ch.me {
        chan
    } else {
        ch.peer_args(m[0], 0)
    };
    Ok(Some(make(
        parent,
        ctx as usize,
        m.iter().map(|&i| parent.group[i]).collect(),
    )))
}

/// MPI_Comm_dup: same group, new context, same topology; attributes copied by their
/// copy callbacks.
pub fn dup(parent: &Arc<Comm>) -> MpiResult<Arc<Comm>> {
    let t = crate::coll::ticket(parent);
    crate::progress::block_on(dup_in_turn(parent, t))
}

/// MPI_Comm_dup once the collective ticket `t` (taken at the call) is served: the body
/// of the blocking call and of MPI_Comm_idup.
pub async fn dup_in_turn(parent: &Arc<Comm>, t: u64) -> MpiResult<Arc<Comm>> {
    if parent.is_inter() {
        return inter::dup_in_turn(parent, t).await;
    }
    let c = split_in_turn(parent, t, 0, parent.rank as i32)
        .await?
        .expect("colour 0");
    inherit(parent, &c);
    copy_attrs_agreed(parent, &c).await?;
    Ok(c)
}

/// A duplicate of `parent` for the library's own use, the context of a persistent
/// collective request (ffi/c/persist.rs `OwnContext`): the same group (or groups),
/// topology and argument-check hint, a new context, and no attributes (no copy
/// callback runs). Collective over `parent`, in its turn.
pub fn context_dup(parent: &Arc<Comm>) -> MpiResult<Arc<Comm>> {
    let t = crate::coll::ticket(parent);
    crate::progress::block_on(async {
        let c = if parent.is_inter() {
            inter::split_in_turn(parent, t, 0, parent.rank as i32).await?
        } else {
            split_in_turn(parent, t, 0, parent.rank as i32).await?
        }
        .expect("colour 0");
        inherit(parent, &c);
        Ok(c)
    })
}

/// What a duplicate takes from its parent besides the group: the topology (MPI-3.1
/// 7.4; every other constructor starts without) and the argument-check hint.
fn inherit(parent: &Comm, c: &Comm) {
    *c.topo.write().unwrap() = parent.topo.read().unwrap().clone();
    let hint = parent.coll.check_args.load(Ordering::Relaxed);
    c.coll.check_args.store(hint, Ordering::Relaxed);
}

/// Copies the attributes into a new duplicate `c`, then agrees with the other members of
/// `c` on the outcome (one step on its channel): if a copy callback failed on any
/// member, every member frees the duplicate again (the delete callbacks undo the copies
/// made) and returns an error (the failing member its callback's), so that no member
/// keeps a communicator the others do not have.
pub async fn copy_attrs_agreed(parent: &Arc<Comm>, c: &Arc<Comm>) -> MpiResult<()> {
    let mine = attr::copy_all(parent, c);
    let failed = if c.chan_members.len() > 1 {
        let ch = Chan::open(c).await?;
        ch.put_args(&[mine.is_err() as u64]);
        ch.step().await?;
        (0..ch.n).find(|&i| ch.peer_args(i, 0) != 0)
    } else {
        mine.is_err().then_some(0)
    };
    let Some(i) = failed else {
        return mine;
    };
    let _ = free(c.handle);
    mine.and(Err(err(
        MPI_ERR_OTHER,
        format!(
            "an attribute copy callback failed in world rank {} (its own error says how); the duplicate is freed on every process",
            c.chan_members[i]
        ),
    )))
}

/// MPI_Comm_create: `group` must be a subset of the parent's group; since MPI-2.2
/// different processes may pass different, disjoint groups.
pub fn create(
    parent: &Arc<Comm>,
    group: &crate::comm::group::Group,
) -> MpiResult<Option<Arc<Comm>>> {
    if parent.is_inter() {
        return inter::create_sub(parent, group);
    }
    for &w in &group.ranks {
        if parent.from_world.get(w).copied().unwrap_or(-1) < 0 {
            return Err(err(
                MPI_ERR_GROUP,
                format!("group contains world rank {w}, which is not in the communicator"),
            ));
        }
    }
    let me_world = crate::runtime::job()?.rank;
    match group.rank_of_world(me_world) {
        Some(r) => {
            // Colour: the smallest world rank of my group (disjoint groups differ).
            let color = *group.ranks.iter().min().unwrap() as i32;
            let c = split(parent, color, r as i32)?;
            Ok(c)
        }
        None => split(parent, MPI_UNDEFINED, 0),
    }
}

/// MPI_Comm_create_group: collective over the members of `group` only. The leader
/// allocates the channel and sends its index to the others point-to-point on the
/// parent's internal context with `tag`.
pub fn create_group(
    parent: &Arc<Comm>,
    group: &crate::comm::group::Group,
    tag: i32,
) -> MpiResult<Option<Arc<Comm>>> {
    let j = crate::runtime::job()?;
    let Some(me) = group.rank_of_world(j.rank) else {
        return Ok(None);
    };
    for &w in &group.ranks {
        if parent.from_world.get(w).copied().unwrap_or(-1) < 0 {
            return Err(err(
                MPI_ERR_GROUP,
                format!("group contains world rank {w}, which is not in the communicator"),
            ));
        }
    }
    let internal = Arc::new(parent.internal_view());
    let m = group.size();
    let ctx = if me == 0 {
        let c = alloc_channel(m);
        for i in 1..m {
            let dest = parent.from_world[group.ranks[i]];
            let id = crate::p2p::isend(
                &internal,
                crate::p2p::SendData::Owned(c.to_le_bytes().to_vec()),
                dest,
                tag,
                crate::p2p::Mode::Standard,
            )?;
            crate::p2p::wait(id)?;
        }
        c
    } else {
        let mut b = [0u8; 8];
        let src = parent.from_world[group.ranks[0]];
        crate::p2p::recv_bytes(&internal, &mut b, src, tag)?;
        u64::from_le_bytes(b)
    };
    if ctx == NO_CHANNEL {
        // The leader's allocation is the only one, and every member learns its outcome.
        return Err(no_channel(&format!(
            "rank 0 of the group (rank {} of the parent communicator)",
            parent.from_world[group.ranks[0]]
        )));
    }
    Ok(Some(make(parent, ctx as usize, group.ranks.clone())))
}

/// MPI_Comm_free: runs the attribute delete callbacks and drops the handle; the channel
/// goes with the last reference (see `Comm::freed`).
pub fn free(h: i32) -> MpiResult<()> {
    if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
        return Err(err(
            MPI_ERR_COMM,
            "the predefined communicators MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed",
        ));
    }
    let c = get(h)?;
    attr::delete_all(&c)?;
    crate::comm::unregister(h);
    c.freed.store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// MPI_Comm_compare.
pub fn compare(a: &Comm, b: &Comm) -> i32 {
    if a.handle == b.handle {
        return MPI_IDENT;
    }
    if a.is_inter() != b.is_inter() {
        return MPI_UNEQUAL;
    }
    let ga = crate::comm::group::Group {
        ranks: a.group.clone(),
    };
    let gb = crate::comm::group::Group {
        ranks: b.group.clone(),
    };
    match crate::comm::group::compare(&ga, &gb) {
        MPI_IDENT => {
            if a.remote == b.remote {
                MPI_CONGRUENT
            } else {
                MPI_UNEQUAL
            }
        }
        x => x,
    }
}

/// MPI_Comm_idup(_with_info): the nonblocking form of MPI_Comm_dup. It takes its turn
/// among the communicator's collectives now and completes in the progress engine;
/// `done` gets the new handle when it completes (MPI_COMM_NULL if it fails).
/// `check_args`: the hint of the info argument, if any; `name` the call's, for the
/// message of a failure. Returns the request.
pub fn idup(
    c: &Arc<Comm>,
    check_args: Option<bool>,
    name: &'static str,
    done: impl FnOnce(i32) + Send + 'static,
) -> MpiResult<usize> {
    let t = crate::coll::ticket(c);
    let cc = c.clone();
    let fut: crate::coll::nb::CollFuture = Box::pin(async move {
        let r = dup_in_turn(&cc, t).await;
        if let (Ok(d), Some(v)) = (&r, check_args) {
            d.coll.check_args.store(v, Ordering::Relaxed);
        }
        done(r.as_ref().map_or(MPI_COMM_NULL, |d| d.handle));
        r.map(|_| ())
            .map_err(|e| crate::error::MpiError::new(e.class, format!("{name}: {}", e.msg)))
    });
    crate::coll::nb::start(c, fut)
}

/// The one hint shmpi reads: "shmpi_check_args" = "false" turns the collective
/// argument-agreement check off on a communicator (coll/agree.rs); every process must
/// pass the same value. `None`: the info does not set it.
pub fn check_args_hint(info: i32) -> MpiResult<Option<bool>> {
    match crate::comm::info::value(info, "shmpi_check_args", "info")?.as_deref() {
        Some("false") | Some("0") => Ok(Some(false)),
        Some("true") | Some("1") => Ok(Some(true)),
        None => Ok(None),
        Some(v) => Err(err(
            MPI_ERR_INFO,
            format!("info key shmpi_check_args={v:?}: the value must be \"true\" or \"false\""),
        )),
    }
}

/// MPI_Comm_set_info: the hints of `info` that shmpi reads.
pub fn set_info(c: &Comm, info: i32) -> MpiResult<()> {
    if let Some(v) = check_args_hint(info)? {
        c.coll.check_args.store(v, Ordering::Relaxed);
    }
    Ok(())
}

/// MPI_Comm_get_info: a new info object with the hints in use on `c`.
pub fn info_of(c: &Comm) -> i32 {
    let on = c.coll.check_args.load(Ordering::Relaxed);
    crate::comm::info::new_info(vec![("shmpi_check_args".to_string(), on.to_string())])
}

/// MPI_Comm_split_type. Every rank shares this machine's memory: one colour for
/// MPI_COMM_TYPE_SHARED. MPI_COMM_TYPE_HW_GUIDED splits by the resource its info names
/// (key "mpi_hw_resource_type"); the one resource shmpi knows is "mpi_shared_memory"
/// (the machine), and any other, a missing key or MPI_INFO_NULL give MPI_COMM_NULL
/// (MPI-4.0 7.4.2). MPI_COMM_TYPE_HW_UNGUIDED wants a strict subset of the group by
/// some hardware level; ranks are not bound to cores or sockets, so there is none below
/// the machine: MPI_COMM_NULL.
pub fn split_type(c: &Arc<Comm>, kind: i32, key: i32, info: i32) -> MpiResult<Option<Arc<Comm>>> {
    let color = match kind {
        MPI_UNDEFINED | MPI_COMM_TYPE_HW_UNGUIDED => MPI_UNDEFINED,
        MPI_COMM_TYPE_SHARED => 0,
        MPI_COMM_TYPE_HW_GUIDED => {
            let resource = crate::comm::info::value(info, "mpi_hw_resource_type", "info")?;
            if resource.as_deref() == Some("mpi_shared_memory") {
                0
            } else {
                MPI_UNDEFINED
            }
        }
        t => {
            return Err(err(
                MPI_ERR_ARG,
                format!("split_type={t} is not a known split type"),
            ))
        }
    };
    split(c, color, key)
}
