//! Large reductions whose members take turns on the CPUs: a chain through the arena.
//!
//! Algorithm. The fold order (reduce.rs: `acc = x_0; acc = x_k op acc` for k = 1..n-1 for
//! a commutative op, from n-1 down to 0 for a non-commutative one) is walked as a chain:
//! the first member in that order copies each chunk of its input into an entry of a ring
//! that spans the channel's slots, and each following member folds its own chunk into
//! the entry (`entry = x_k op entry`) once its predecessor has, reading its input where it
//! is, in its own memory. After the last member folded a chunk, whoever receives bytes of
//! it copies them out. Each element is reduced once, by the same operands in the same
//! order as in the pipeline of reduce.rs, so the bits are the same.
//!
//! Why. With more members than CPUs the pipeline's steps make every member copy (n-1)/n
//! of its vector into its slot and read n shares back, and every step waits for every
//! member to have been scheduled. Here a member reads its input once, the ring entries
//! stay in the last-level cache (the ring is at most 8 MiB), and a member waits only for its
//! predecessor (and, at the head of the chain, for the ring to have room): it runs over
//! as many chunks as are ready each time it gets a CPU. Memory traffic per call is about
//! that of reading every input once and writing the result once.
//!
//! Steps. A first ordinary step checks the arguments (agree.rs) and frees the slots (every
//! member has finished reading the previous collective's buffers). Then every member
//! takes the chain's steps, each publishing its counter without waiting for anyone;
//! which chunk it folds and copies out in each step, and what each wait waits for, is
//! the schedule of `ChainPlan` (shm/proto.rs, model-checked in tests/loom.rs). A last
//! ordinary step keeps the ring until everyone is done with it and tells everyone
//! whether some member's fold failed.
//!
//! Counters take every value in turn, and every wait is for a counter at an exact step of
//! the channel, so the wake marks of shm/proto.rs wake a sleeping member when what it
//! waits for happens.
use super::reduce::{Part, Reduction};
use super::Chan;
use crate::error::MpiResult;
use crate::shm::proto::ChainPlan;
use std::task::Poll;

/// Bytes of one ring entry (before rounding to whole elements) while every member has a
/// CPU: the members fold at the same time, one entry behind each other, and at 2 ranks on
/// 2 CPUs 256 KiB entries took 0.85-1.0x the time of 1 MiB ones at 16 and 64 MiB. With
/// more members than CPUs an entry is a whole slot (1 MiB up to 8 ranks): a member
/// folds a run of entries each time it gets a CPU, and fewer, larger steps took
/// 0.75-0.95x the time of 256 KiB entries at 8 ranks on 2 CPUs (4-64 MiB, MPI_Reduce
/// and MPI_Allreduce; at 4 ranks within the noise).
const ENTRY: usize = 256 << 10;

/// The ring's bytes at most: the entries between the head and the last member stay in
/// the last-level cache (at 8 ranks on 2 CPUs a ring of the whole 16 MiB of slots took
/// 1.1-1.2x the time of an 8 MiB one at 64 MiB, MPI_Reduce and MPI_Allreduce).
const RING_BYTES: usize = 8 << 20;

/// The geometry of the chain over a channel: entry bytes (whole elements) and ring
/// entries; `None` when an element does not fit an entry or the ring has fewer than two.
fn geometry(ch: &Chan<'_>, extent: usize) -> Option<(usize, usize)> {
    geometry_for(ch.n, super::direct::cpus_online(), ch.slot_bytes, extent)
}

/// [`geometry`] of a channel of `n` members with slots of `slot` bytes on `cpus` CPUs.
pub(super) fn geometry_for(
    n: usize,
    cpus: usize,
    slot: usize,
    extent: usize,
) -> Option<(usize, usize)> {
    let e = extent.max(1);
    let want = if n > cpus { slot } else { ENTRY.min(slot) };
    let entry = (want / e) * e;
    if entry == 0 {
        return None;
    }
    let ring = (2 * n * slot).min(RING_BYTES) / entry;
    (ring >= 2).then_some((entry, ring))
}

/// The smallest vector that takes the chain when the members outnumber the CPUs. At 4
/// and 8 ranks on 2 CPUs (bench/cpuloop.c, MPI_DOUBLE/MPI_SUM, two rounds) the chain
/// took 0.55-0.9x the pipeline's time at 4-8 MiB and 0.6-0.8x at 64 MiB for MPI_Reduce,
/// MPI_Reduce_scatter_block and MPI_Allreduce; at 1 MiB (one step of the pipeline) it
/// took 1.1-2x.
pub const OVERSUBSCRIBED_MIN: usize = 2 << 20;

/// The smallest vector that takes the chain when every member has a CPU: below it the
/// direct path (direct.rs) or the pipeline is as fast or faster; from 16 MiB on (2 ranks
/// on 2 CPUs) the chain took 0.8-1.05x the pipeline's time.
pub const ALONE_MIN: usize = 16 << 20;

/// The reduction of every member's `total`-byte vector along the chain; each member
/// receives the part its `Part` names. Every member of the channel calls this with the
/// same `total` (after coll/select.rs `chain` said yes).
pub async fn reduce(
    ch: &Chan<'_>,
    total: usize,
    red: &Reduction<'_>,
    part: &Part,
) -> MpiResult<()> {
    let (n, me) = (ch.n, ch.me);
    let Some((entry, ring)) = geometry(ch, red.extent) else {
        unreachable!("reduce called where select::chain said no");
    };
    ch.step().await?;
    let s0 = ch.next_step().0 - 1;
    let base = ch.slot(0, 0);
    let plan = ChainPlan::new(total.div_ceil(entry) as u64, ring as u64);
    // Position in the fold order, the member before, and the last member.
    let (pos, pred, last) = if red.commutative {
        (me, me.wrapping_sub(1), n - 1)
    } else {
        (n - 1 - me, me + 1, 0)
    };
    let nt = crate::p2p::buf::streaming(part.hi - part.lo);
    // Chunk t: its bytes of the vector, and where it is in the ring.
    let bytes = |t: u64| {
        let start = (t as usize - 1) * entry;
        (start, entry.min(total - start))
    };
    let at = |t: u64| base + plan.entry(t) as usize * entry;
    let mut failed = None;
    for t in 1..=plan.steps() {
        if let Some(c) = plan.fold(t) {
            let (start, len) = bytes(c);
            if pos == 0 {
                if let Some(r) = plan.room(c) {
                    ch.all_reached(s0 + r).await;
                }
                // SAFETY: chunk c's ring entry is the first member's once everyone left
                // the room step; nobody touches it until this member publishes below.
                part.input(start, unsafe { ch.slice_mut(at(c), len) });
            } else {
                ch.reached(pred, s0 + c).await;
                if failed.is_none() {
                    // SAFETY: the predecessor published chunk c (waited for above), so
                    // its entry is this member's until it publishes below; the input is
                    // the user's buffer, not arena memory.
                    let dst = unsafe { ch.slice_mut(at(c), len) };
                    failed = (red.f)(part.input_slice(start, len), dst).err();
                }
            }
        }
        if let Some(u) = plan.out(t) {
            let (start, len) = bytes(u);
            let (lo, hi) = (part.lo.max(start), part.hi.min(start + len));
            if hi > lo {
                ch.reached(last, s0 + u).await;
                part.recv
                    .write_at_nt(lo - part.lo, ch.slice(at(u) + (lo - start), hi - lo), nt);
            }
        }
        // (a chain step: publish, wait for nobody)
        ch.publish(None);
    }
    // Nobody writes the slots again before everyone is done with the ring; and if some
    // member's fold failed, everyone says so.
    ch.put_args(&[failed.is_some() as u64]);
    ch.step().await?;
    if let Some(e) = failed {
        return Err(e);
    }
    if let Some(i) = (0..n).find(|&i| ch.peer_args(i, 0) != 0) {
        return Err(crate::error::err(
            crate::abi::MPI_ERR_OTHER,
            format!(
                "member {i} of the communicator failed to fold its vector (its own error says why); no result"
            ),
        ));
    }
    Ok(())
}

impl Chan<'_> {
    /// Completes once member `i`'s counter reached `s`.
    pub(super) async fn reached(&self, i: usize, s: u64) {
        let (ctl, a) = (self.ctl(), &self.job.arena);
        std::future::poll_fn(|_| {
            if ctl.reached(a, i, s) {
                Poll::Ready(())
            } else {
                self.waits_for(s)
            }
        })
        .await
    }
}
