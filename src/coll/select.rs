//! Which algorithm a collective takes: every choice of a path, in one place. The
//! algorithms (post.rs, ring.rs, direct.rs, chain.rs, reduce.rs, bcast.rs) ask here and
//! run what they are told. Every member of a channel must take the same path, so a
//! choice depends only on what they all know alike: the call's arguments (which the
//! members agree on), the channel ([`Group`]: members, slot and post-ring sizes from
//! the arena's layout), the CPUs online (the same in every process of the machine) and
//! the job-wide settings (settings.rs `Job`: the arena's values at every rank).
//!
//! A nonblocking or persistent call runs the same future as the blocking one, so it
//! takes the same path; only a blocking call may take a posted step at once, in place,
//! without building the future ([`bcast_now`], [`reduce_now`]): the same posted step.
//!
//! "Shared" below: more members than CPUs online. `post_limit`: [`post_limit`]. A
//! forced direct path: `SHMPI_DIRECT=1` or `require`.
//!
//! | family | path | when |
//! |--------|------|------|
//! | reductions (MPI_Reduce, MPI_Allreduce, reduce-scatters; [`reduce`]) | [`ReducePath::Posted`] (post.rs) | MPI_Reduce on an intracommunicator of 2+ members, at most `post_limit` bytes |
//! | | [`ReducePath::Alone`] | one member |
//! | | [`ReducePath::Adaptive`] (the path word and chooser of reduce.rs / direct.rs) | MPI_Reduce and MPI_Allreduce on an intracommunicator, `SHMPI_DIRECT` unset, not shared, from 32 KiB (or `SHMPI_DIRECT_MIN`) below 16 MiB |
//! | | [`ReducePath::Direct`] (direct.rs, else its [`Fold`]) | not in one step, and [`direct_reduce`] (size ranges per kind; unless forced, not shared) |
//! | | [`ReducePath::Arena`] with [`Fold::Chain`] (chain.rs) | not in one step, [`chain`]: `SHMPI_CHAIN=1`, or more than a slot and from 2 MiB (shared) or 16 MiB on; more than one chain entry |
//! | | [`ReducePath::Arena`] with [`Fold::Steps`] (reduce.rs `reduce_group`) | otherwise: one step up to [`one_step_max`] bytes that fit in a chunk, else the pipeline |
//! | MPI_Bcast ([`bcast`]) | [`BcastPath::Posted`] (post.rs) | at most `post_limit` bytes |
//! | | [`BcastPath::Ring`] (ring.rs) | `SHMPI_BCAST_RING=1`, or unset and the direct path not forced, and shared or from 8 KiB; the ring has 2+ units |
//! | | [`BcastPath::Direct`] (direct.rs, else the pipeline) | from 32 KiB (or `SHMPI_DIRECT_MIN`) below 1 MiB (unless forced), not shared (unless forced), `SHMPI_DIRECT` not off |
//! | | [`BcastPath::Pipeline`] (bcast.rs) | otherwise |
//! | rendezvous messages (p2p/mod.rs `direct_wanted`) | read from the sender's memory | `SHMPI_DIRECT` not off, from `SHMPI_DIRECT_MIN` bytes (else beyond the eager limit), this process readable |
//! | barrier, gathers, scatters, all-to-all, scans | one path each | always (steps over the slots: coll/mod.rs, gather.rs, reduce.rs) |
#![deny(unsafe_code)]
use super::direct::Kind;
use super::Chan;
use crate::settings::{Direct, Job};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// What a choice knows of the channel: the same at every member.
#[derive(Clone, Copy, Debug)]
pub struct Group {
    /// Members of the channel.
    pub n: usize,
    /// CPUs online.
    pub cpus: usize,
    /// An intercommunicator's channel.
    pub inter: bool,
    /// Bytes of a slot (the arena's layout).
    pub slot_bytes: usize,
    /// Bytes a posted step carries.
    pub post_payload: usize,
    /// Entries of a member's post ring.
    pub post_k: u64,
}

impl Group {
    /// The facts of channel `ch`.
    pub fn of(ch: &Chan<'_>) -> Group {
        Group {
            n: ch.n,
            cpus: super::direct::cpus_online(),
            inter: ch.comm.is_inter(),
            slot_bytes: ch.slot_bytes,
            post_payload: ch.post_payload(),
            post_k: ch.ctl.post_k,
        }
    }
    /// More members than CPUs: they take turns.
    fn shared(&self) -> bool {
        self.n > self.cpus
    }
}

/// The arena's fold of a reduction's vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    /// The chain of chain.rs.
    Chain,
    /// reduce.rs `reduce_group`: in one step up to `one` bytes that fit in a chunk,
    /// else the pipeline over chunks.
    Steps { one: usize },
}

/// The path of a reduction ([`reduce`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReducePath {
    /// One member: its input is its result.
    Alone,
    /// Posted steps (post.rs `reduce`).
    Posted,
    /// The direct path or the fold, as the channel's path word says (reduce.rs
    /// `adaptive`, direct.rs `Chooser`).
    Adaptive(Fold),
    /// The direct path (direct.rs `reduce`); the fold when a member cannot read the
    /// others' memory.
    Direct(Fold),
    /// The fold through the arena.
    Arena(Fold),
}

/// The path of MPI_Bcast ([`bcast`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BcastPath {
    /// Posted steps (post.rs `bcast`).
    Posted,
    /// The ring of ring.rs.
    Ring,
    /// The direct path (direct.rs `bcast`); the pipeline when a member cannot take it.
    Direct,
    /// The pipeline over slot-sized chunks (bcast.rs).
    Pipeline,
}

/// Whether the direct path is forced (`SHMPI_DIRECT` `1` or `require`): then the
/// reductions do not take the one-step path instead, and MPI_Bcast not the ring.
pub fn direct_forced(set: &Job) -> bool {
    matches!(set.direct, Direct::On | Direct::Require)
}

/// The path of a reduction of `kind` of `total` bytes of elements of `extent` bytes.
pub fn reduce(kind: Kind, total: usize, extent: usize, g: &Group, set: &Job) -> ReducePath {
    if g.n > 1
        && kind == Kind::Rooted
        && !g.inter
        && total <= post_limit(g, super::post::reduce_piece(g.post_payload, extent))
    {
        return ReducePath::Posted;
    }
    if g.n == 1 {
        return ReducePath::Alone;
    }
    let one = one_step_max(kind, total, g);
    // The one-step path comes first where it is taken (the vector fits in a slot, so
    // in one chunk: reduce.rs `chunk_size`), unless the direct path is forced.
    let one_step = total <= one && total <= g.slot_bytes && !direct_forced(set);
    let fold = if !one_step && chain(total, extent, g, set) {
        Fold::Chain
    } else {
        Fold::Steps { one }
    };
    if adaptive(kind, total, g, set) && !g.inter {
        return ReducePath::Adaptive(fold);
    }
    if !one_step && direct_reduce(kind, total, g, set) {
        return ReducePath::Direct(fold);
    }
    ReducePath::Arena(fold)
}

/// The largest vector of `total` bytes that a reduction of `kind` takes in one step
/// (every member deposits its input, every receiver folds its part from all the slots)
/// instead of the direct path or the pipeline, if it fits in a chunk. The pipeline
/// splits the fold among the members but takes two steps; one step costs the receivers
/// the whole fold of what they receive, which pays where they receive little or the
/// steps are dear. Alternating runs on a 2-CPU Zen 4 VM (collbench, µs):
/// - MPI_Reduce at np 2, 128/256/512 KiB: 12-13.5 / 15-16 / 30-35 in one step against
///   15-16.5 / 26-28 / 48-64 on the direct path (Open MPI 14-15 / 26-37 / 56-59);
///   at np 4 (2 ranks per CPU) 32/128/256 KiB: 10 / 19-23 / 30 against 15-16 / 33-35 /
///   52-63, but 512 KiB-1 MiB mixed or slower; at np 8 32-256 KiB: 21-37 / 70 against
///   29-250 / 79-421.
/// - The reduce-scatters at np 2, 256 KiB / 512 KiB / 1 MiB: 17-19 / 23 / 42 against
///   20-24 / 30 / 62-72 (pipeline, direct), but 3.2 / 11.5 against 2.9 / 10.3 at 32 /
///   128 KiB; at np 8 32-256 KiB: 21 / 39-47 / 58 against 28-44 / 57-68 / 74-89, and
///   the same at np 4.
/// - MPI_Allreduce, where every member folds everything, at np 2: the same up to 256
///   KiB, 1.2-1.5x the time at 512 KiB-1 MiB: only reduce.rs `SMALL`.
pub fn one_step_max(kind: Kind, total: usize, g: &Group) -> usize {
    use super::reduce::SMALL;
    let shared = g.shared();
    match kind {
        Kind::All => SMALL,
        Kind::Rooted if shared => 256 * KIB,
        Kind::Rooted => 512 * KIB,
        Kind::Scatter | Kind::Arena if shared => 256 * KIB,
        // (from 256 KiB: below, the pipeline was 10% faster)
        Kind::Scatter | Kind::Arena if total >= 256 * KIB => 1024 * KIB,
        Kind::Scatter | Kind::Arena => SMALL,
    }
}

/// Whether a reduction of `total` bytes takes the chain (chain.rs). Unless
/// `SHMPI_CHAIN` says otherwise: more than a slot, and shared from chain.rs
/// `OVERSUBSCRIBED_MIN` on, else from `ALONE_MIN` on (a vector that fits in a slot goes
/// through the pipeline of reduce.rs in one step). Never on an intercommunicator, nor
/// when the vector does not exceed one entry of the chain's ring.
pub fn chain(total: usize, extent: usize, g: &Group, set: &Job) -> bool {
    use super::chain::{ALONE_MIN, OVERSUBSCRIBED_MIN};
    // (the size first: every small reduction asks, and leaves after one comparison)
    let take = match set.chain {
        Some(f) => f,
        None => {
            let min = if g.shared() {
                OVERSUBSCRIBED_MIN
            } else {
                ALONE_MIN
            };
            total > g.slot_bytes && total >= min
        }
    };
    take && g.n > 1
        && !g.inter
        && super::chain::geometry_for(g.n, g.cpus, g.slot_bytes, extent)
            .is_some_and(|(entry, _)| total > entry)
}

/// Where the automatic choice leaves the direct path for the arena (see
/// [`direct_reduce`]).
const BEYOND_CACHES: usize = 16 * MIB;

/// Whether a reduction of `kind` of `total` bytes tries the direct path. The size
/// limits are where the direct path measured faster than the arena path at 2 ranks on
/// 2 CPUs (bench/collbench.c, `SHMPI_DIRECT=0` against unset): MPI_Reduce_scatter(_block)
/// from 512 KiB up to 16 MiB (on an AVX-512 EPYC 1.2x faster at 512 KiB, 1.5x at 2-4
/// MiB; on a Zen 3 EPYC 0.74-0.76x the arena's time at 2-8 MiB but 1.07x at 16 MiB,
/// 1.19x at 32 MiB and 1.09x at 64 MiB); MPI_Reduce from 64 KiB up to 512 KiB (see
/// direct.rs `Kind::Rooted`). MPI_Allreduce took 1.1-1.15x the arena's time from 1 MiB
/// up to 16 MiB on the AVX-512 EPYC, but 1.25-1.7x on a Zen 4 EPYC (1-8 MiB, five
/// alternating runs at 2 and 8 MiB, every run), so the automatic choice leaves it to the
/// arena. From 16 MiB on, where the vectors are far beyond the caches, the kernel's
/// copies (which cannot stream past the cache) lose to the arena's, whose copies out of
/// the arena stream (p2p/buf.rs `streaming`).
pub fn direct_reduce(kind: Kind, total: usize, g: &Group, set: &Job) -> bool {
    let (lo, hi) = match kind {
        Kind::Arena => return false,
        Kind::Rooted => (MIB / 16, cap(MIB / 2, set)),
        // (an empty range unless the path is forced)
        Kind::All => (MIB, cap(MIB, set)),
        Kind::Scatter => (MIB / 2, cap(BEYOND_CACHES, set)),
    };
    let lo = set.direct_min.unwrap_or(lo);
    g.n > 1 && (lo..hi).contains(&total) && member_count_ok(g, set)
}

/// Whether a reduction of `kind` of `total` bytes chooses between the direct path and
/// the arena path by their recent speed (direct.rs `Chooser`, reduce.rs `adaptive`):
/// MPI_Reduce and MPI_Allreduce from 32 KiB on, with every member on a CPU of its own,
/// unless `SHMPI_DIRECT` decides.
///
/// Why: this VM moves its two virtual CPUs between nearby and distant cores every few
/// seconds (a cache line's round trip between them 55 ns, then 330 ns; bench/pingpong.c).
/// The arena path hands every byte over in lines the other CPU holds modified and took
/// 4-9x longer in the distant phase (MPI_Reduce at 2 ranks of 256 KiB / 2 MiB: 15 / 97
/// µs, then 118 / 920); the direct path reads the other process's clean input and took
/// 26-30 / 230-240 in both (Open MPI 27-35 / 217-224 in both). Neither wins both phases.
///
/// Not from 16 MiB on: there the arena's streaming copies win the near phase by more
/// (MPI_Reduce of 64 MiB at 2 ranks took 8.2 ms through the arena, 12.6-16.8 with the
/// choice, whose probes of the slow path last many calls at that size), and both paths
/// are far from the memory bound in the distant one.
pub fn adaptive(kind: Kind, total: usize, g: &Group, set: &Job) -> bool {
    matches!(kind, Kind::Rooted | Kind::All)
        && set.direct == Direct::Auto
        && g.n > 1
        && !g.shared()
        && (set.direct_min.unwrap_or(32 * KIB)..16 * MIB).contains(&total)
}

/// The upper size limit `hi` of the automatic choice; none when the path is forced.
fn cap(hi: usize, set: &Job) -> usize {
    if direct_forced(set) {
        usize::MAX
    } else {
        hi
    }
}

/// The member-count rule of `SHMPI_DIRECT` (settings.rs `Direct`): off never, forced
/// always, automatic when the communicator has no more members than the machine has
/// CPUs online. With more, the members take turns on the CPUs and the arena path, whose
/// copies each member makes on its own, is the faster (measured at 4 and 8 ranks on 2
/// CPUs: Allreduce 1.25-1.75x and Reduce_scatter_block 1.02-1.3x slower through the
/// direct path).
fn member_count_ok(g: &Group, set: &Job) -> bool {
    match set.direct {
        Direct::Off => false,
        Direct::Auto => !g.shared(),
        Direct::On | Direct::Require => true,
    }
}

/// The most bytes a small MPI_Bcast or MPI_Reduce moves through posted steps, in pieces
/// of `piece` bytes (at most the post payload; whole elements for a reduction): one
/// step's payload, or, shared, a chain of up to post.rs `CHAIN_BYTES` in at most an
/// eighth of the post ring. There an ordinary step needs every member to run before any
/// can return, while a chain lets the senders go on: back-to-back 4 KiB MPI_Bcast at 8
/// ranks on 2 CPUs took 3-4 µs in five steps, 12-16 in one ordinary step; 8 KiB 5-7
/// against 14-17. (16 KiB, beyond the limit, took 12-13 in a 17-step chain against
/// 15-16.)
pub fn post_limit(g: &Group, piece: usize) -> usize {
    let m = g.post_payload;
    if piece == 0 || !g.shared() {
        return m;
    }
    let entries = (g.post_k / 8) as usize;
    super::post::CHAIN_BYTES.min(piece * entries).max(m)
}

/// The path of MPI_Bcast of `total` bytes over a channel of 2+ members.
pub fn bcast(total: usize, g: &Group, set: &Job) -> BcastPath {
    if total <= post_limit(g, g.post_payload) {
        return BcastPath::Posted;
    }
    if ring(total, g, set) {
        return BcastPath::Ring;
    }
    if direct_bcast(total, g, set) {
        return BcastPath::Direct;
    }
    BcastPath::Pipeline
}

/// Whether MPI_Bcast of `total` bytes, more than the posted steps carry, takes the ring
/// (ring.rs): shared always, else from ring.rs `ALONE_MIN` on; not when the direct path
/// is forced; `SHMPI_BCAST_RING` decides instead if set. The ring needs 2+ units.
pub fn ring(total: usize, g: &Group, set: &Job) -> bool {
    set.bcast_ring
        .unwrap_or(!direct_forced(set) && (g.shared() || total >= super::ring::ALONE_MIN))
        && super::ring::geometry_for(g.n, g.slot_bytes).1 >= 2
}

/// Whether MPI_Bcast of `total` bytes tries the direct path: from 32 KiB (or
/// `SHMPI_DIRECT_MIN`) below 1 MiB, with the member-count rule of `SHMPI_DIRECT`;
/// at any size from the minimum when forced.
pub fn direct_bcast(total: usize, g: &Group, set: &Job) -> bool {
    let lo = set.direct_min.unwrap_or(32 * KIB);
    g.n > 1 && (lo..cap(MIB, set)).contains(&total) && member_count_ok(g, set)
}

/// Whether a blocking MPI_Bcast of `total` bytes takes its posted step at once, in
/// place (post.rs `bcast_now`): one step's payload.
pub fn bcast_now(total: usize, g: &Group) -> bool {
    g.n > 1 && total <= g.post_payload
}

/// Whether a blocking MPI_Reduce of `total` bytes takes its posted step at once, in
/// place (post.rs `reduce_now`): one step's payload, on an intracommunicator.
pub fn reduce_now(total: usize, g: &Group) -> bool {
    g.n > 1 && !g.inter && total <= g.post_payload
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(kv: &'static [(&'static str, &'static str)]) -> Job {
        Job::from_lookup(|k| kv.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))
    }

    /// A channel of `n` members on 2 CPUs with the default layout up to 8 ranks (1 MiB
    /// slots, 1024-byte post entries: 992 bytes of payload, 256 of them).
    fn group(n: usize) -> Group {
        Group {
            n,
            cpus: 2,
            inter: false,
            slot_bytes: MIB,
            post_payload: 992,
            post_k: 256,
        }
    }

    const F8: usize = 8;

    #[test]
    fn reduce_rows() {
        let auto = set(&[]);
        let g2 = group(2);
        let g4 = group(4);
        // Posted: MPI_Reduce up to the post limit; shared, a chain of up to 8 KiB.
        assert_eq!(
            reduce(Kind::Rooted, 992, F8, &g2, &auto),
            ReducePath::Posted
        );
        assert_eq!(
            reduce(Kind::Rooted, 8 << 10, F8, &g4, &auto),
            ReducePath::Posted
        );
        assert_ne!(reduce(Kind::All, 992, F8, &g2, &auto), ReducePath::Posted);
        // Alone.
        assert_eq!(
            reduce(Kind::All, 1 << 20, F8, &group(1), &auto),
            ReducePath::Alone
        );
        // Adaptive: Reduce and Allreduce from 32 KiB below 16 MiB, not shared.
        let steps = |one| Fold::Steps { one };
        assert_eq!(
            reduce(Kind::All, 32 << 10, F8, &g2, &auto),
            ReducePath::Adaptive(steps(16 << 10))
        );
        assert_eq!(
            reduce(Kind::Rooted, 256 << 10, F8, &g2, &auto),
            ReducePath::Adaptive(steps(512 << 10))
        );
        assert_eq!(
            reduce(Kind::All, 16 << 20, F8, &g2, &auto),
            ReducePath::Arena(Fold::Chain)
        );
        // Shared: the chain from 2 MiB, else the one-step path or the pipeline.
        assert_eq!(
            reduce(Kind::All, 2 << 20, F8, &g4, &auto),
            ReducePath::Arena(Fold::Chain)
        );
        assert_eq!(
            reduce(Kind::All, 1 << 20, F8, &g4, &auto),
            ReducePath::Arena(steps(16 << 10))
        );
        // Direct: the reduce-scatters from 512 KiB below 16 MiB (one step up to 1 MiB
        // from 256 KiB first).
        assert_eq!(
            reduce(Kind::Scatter, 2 << 20, F8, &g2, &auto),
            ReducePath::Direct(steps(1 << 20))
        );
        assert_eq!(
            reduce(Kind::Scatter, 512 << 10, F8, &g2, &auto),
            ReducePath::Arena(steps(1 << 20))
        );
        assert_eq!(
            reduce(Kind::Arena, 2 << 20, F8, &g2, &auto),
            ReducePath::Arena(steps(1 << 20))
        );
        // Forced: direct at every size and member count, no one-step path.
        let on = set(&[("SHMPI_DIRECT", "require")]);
        assert_eq!(
            reduce(Kind::All, 1 << 20, F8, &g4, &on),
            ReducePath::Direct(steps(16 << 10))
        );
        assert_eq!(
            reduce(Kind::All, 64 << 20, F8, &g2, &on),
            ReducePath::Direct(Fold::Chain)
        );
        assert_eq!(
            reduce(Kind::Scatter, 1 << 10, F8, &g2, &on),
            ReducePath::Arena(steps(16 << 10))
        );
        let min1 = set(&[("SHMPI_DIRECT", "1"), ("SHMPI_DIRECT_MIN", "1")]);
        assert_eq!(
            reduce(Kind::Scatter, 1 << 10, F8, &g2, &min1),
            ReducePath::Direct(steps(16 << 10))
        );
        // Off: never direct, never adaptive.
        let off = set(&[("SHMPI_DIRECT", "0")]);
        assert_eq!(
            reduce(Kind::All, 32 << 10, F8, &g2, &off),
            ReducePath::Arena(steps(16 << 10))
        );
        assert_eq!(
            reduce(Kind::Scatter, 2 << 20, F8, &g2, &off),
            ReducePath::Arena(steps(1 << 20))
        );
        // SHMPI_CHAIN: on from two entries, off never.
        let chain_on = set(&[("SHMPI_CHAIN", "1"), ("SHMPI_DIRECT", "0")]);
        assert_eq!(
            reduce(Kind::Scatter, 2 << 20, F8, &g2, &chain_on),
            ReducePath::Arena(Fold::Chain)
        );
        let chain_off = set(&[("SHMPI_CHAIN", "0")]);
        assert_eq!(
            reduce(Kind::All, 64 << 20, F8, &g4, &chain_off),
            ReducePath::Arena(steps(16 << 10))
        );
        // An intercommunicator: never posted, adaptive or chained.
        let inter = Group { inter: true, ..g2 };
        assert_eq!(
            reduce(Kind::Rooted, 64, F8, &inter, &auto),
            ReducePath::Arena(steps(512 << 10))
        );
        assert_eq!(
            reduce(Kind::All, 64 << 20, F8, &inter, &auto),
            ReducePath::Arena(steps(16 << 10))
        );
    }

    #[test]
    fn one_step_rows() {
        let (g2, g4) = (group(2), group(4));
        assert_eq!(one_step_max(Kind::All, 1 << 20, &g4), 16 << 10);
        assert_eq!(one_step_max(Kind::Rooted, 1 << 20, &g2), 512 << 10);
        assert_eq!(one_step_max(Kind::Rooted, 1 << 20, &g4), 256 << 10);
        assert_eq!(one_step_max(Kind::Scatter, 1 << 20, &g4), 256 << 10);
        assert_eq!(one_step_max(Kind::Scatter, 256 << 10, &g2), 1 << 20);
        assert_eq!(one_step_max(Kind::Scatter, 128 << 10, &g2), 16 << 10);
    }

    #[test]
    fn post_limit_rows() {
        assert_eq!(post_limit(&group(2), 992), 992);
        assert_eq!(post_limit(&group(4), 992), 8 << 10);
        assert_eq!(post_limit(&group(4), 8), 992);
        assert_eq!(post_limit(&group(4), 200), 6400);
        assert_eq!(post_limit(&group(4), 0), 992);
    }

    #[test]
    fn bcast_rows() {
        let auto = set(&[]);
        let (g2, g4) = (group(2), group(4));
        assert_eq!(bcast(992, &g2, &auto), BcastPath::Posted);
        assert_eq!(bcast(8 << 10, &g4, &auto), BcastPath::Posted);
        assert_eq!(bcast(4 << 10, &g2, &auto), BcastPath::Pipeline);
        assert_eq!(bcast(8 << 10, &g2, &auto), BcastPath::Ring);
        assert_eq!(bcast(64 << 20, &g2, &auto), BcastPath::Ring);
        assert_eq!(bcast(9 << 10, &g4, &auto), BcastPath::Ring);
        let no_ring = set(&[("SHMPI_BCAST_RING", "0")]);
        assert_eq!(bcast(64 << 10, &g2, &no_ring), BcastPath::Direct);
        assert_eq!(bcast(1 << 20, &g2, &no_ring), BcastPath::Pipeline);
        assert_eq!(bcast(64 << 10, &g4, &no_ring), BcastPath::Pipeline);
        let on = set(&[("SHMPI_DIRECT", "require")]);
        assert_eq!(bcast(64 << 20, &g4, &on), BcastPath::Direct);
        assert_eq!(bcast(4 << 10, &g2, &on), BcastPath::Pipeline);
        let ring_on = set(&[("SHMPI_DIRECT", "require"), ("SHMPI_BCAST_RING", "1")]);
        assert_eq!(bcast(4 << 10, &g2, &ring_on), BcastPath::Ring);
        let off = set(&[("SHMPI_DIRECT", "0"), ("SHMPI_BCAST_RING", "0")]);
        assert_eq!(bcast(64 << 10, &g2, &off), BcastPath::Pipeline);
        assert!(bcast_now(992, &g2) && !bcast_now(993, &g2) && !bcast_now(8, &group(1)));
        let inter = Group { inter: true, ..g2 };
        assert!(reduce_now(992, &g2) && !reduce_now(992, &inter));
    }
}
