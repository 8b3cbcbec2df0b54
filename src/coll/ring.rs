//! MPI_Bcast beyond the posted steps (with more members than CPUs; from [`ALONE_MIN`]
//! when each member has a CPU): a ring of chunks through the channel's slots, where the
//! root never waits for the receivers except when the ring is full.
//!
//! Algorithm. A first posted step (post.rs) carries the call's descriptor: a receiver
//! checks it against the root's, the root does not wait (as in a small broadcast). Then
//! chunk `t` of the vector (at most [`CHUNK`] bytes) is step `s0 + 1 + t`: the root
//! copies it into the ring (the channel's slots, up to [`RING_BYTES`]) and publishes its
//! counter; a receiver waits for the root's counter to reach the step, copies the chunk
//! out, and only then publishes its own counter. So a counter at step `s` says: done with
//! every chunk up to step `s`.
//!
//! Where each chunk goes is the same at every member ([`Placement`]): the ring is cut
//! into units (of 4 KiB, [`ring_geometry`]), a chunk takes the next whole units after
//! the previous chunk's (from the start again if they do not fit), and each unit
//! remembers the step that last wrote it. The root writes a chunk once every counter
//! reached the last step of each of its units, and, if an ordinary step (whose data may
//! be in the slots) came after the last broadcast that waited for it, once everyone
//! reached this broadcast's first step. When it must wait, it waits for room for half
//! the ring, so that a root that outruns the receivers gives up its CPU once per half
//! ring, not once per chunk. Small vectors take small chunks: 256 broadcasts of 32 KiB
//! fit the ring.
//!
//! Why. In the pipeline of bcast.rs every chunk is an ordinary step that every member
//! must reach before any goes on: with more members than CPUs each chunk costs every
//! member a turn on a CPU. Here back-to-back broadcasts run the root up to a ring ahead,
//! and each member copies as many chunks as are ready each time it runs.
//!
//! After the broadcast the member records its last step as posted (`Comm::posted`), so
//! that the next collective with ordinary steps first waits until every member has
//! arrived there (`Chan::settle`): by then every receiver has copied every chunk out.
use super::post::Wait;
use super::Chan;
use crate::error::MpiResult;
use crate::p2p::UserBuf;
use std::sync::atomic::Ordering;

/// Bytes of a chunk at most (and at most a slot): against 128 KiB chunks, 1 MiB ones
/// took 0.7x the time at 2 MiB (4 and 8 ranks on 2 CPUs), the same at 16-64 MiB.
const CHUNK: usize = 1 << 20;

/// The ring's bytes at most (the chunks between the root and the slowest receiver stay
/// in the last-level cache).
const RING_BYTES: usize = 8 << 20;

/// The ring's allocation unit at most (a quarter of a slot with the tests' tiny slots).
const UNIT: usize = 4 << 10;

pub use crate::comm::coll_state::Placement;

impl Placement {
    /// Places a chunk of `len` bytes (at most the ring's `units` units of `unit` bytes)
    /// written at step `s`: returns its unit and the step every counter must reach
    /// before it is written.
    fn place(&mut self, len: usize, unit: usize, units: usize, s: u64) -> (usize, u64) {
        if self.last.len() != units {
            *self = Placement {
                last: vec![0; units],
                ..Placement::default()
            };
        }
        let k = len.div_ceil(unit).max(1);
        if self.cursor + k > units {
            self.cursor = 0;
        }
        let at = self.cursor;
        let range = &mut self.last[at..at + k];
        let need = range.iter().copied().max().unwrap_or(0);
        range.fill(s);
        self.cursor += k;
        (at, need)
    }

    /// The step every counter must reach before the next half of the ring (from the
    /// cursor on, around its end) may be written.
    fn ahead(&self) -> u64 {
        let n = self.last.len();
        (0..n / 2)
            .map(|i| self.last[(self.cursor + i) % n])
            .max()
            .unwrap_or(0)
    }
}

/// The smallest MPI_Bcast that takes the ring when every member has a CPU. At 2 ranks on
/// 2 CPUs, back-to-back calls from one root (three alternating runs against the pipeline
/// of bcast.rs and the direct path of direct.rs): 0.5x the time at 8 KiB, 0.3-0.4x at
/// 32-64 KiB, 0.6x at 256 KiB, 0.9-1.0x at 1-4 MiB, 0.65-0.85x at 16-64 MiB; at 4 KiB
/// 1.4x. With the root changing at every call: 0.8-1.0x at 256 KiB-16 MiB.
pub const ALONE_MIN: usize = 8 << 10;

/// The ring over the channel's slots: its unit's bytes and its units.
fn ring_geometry(ch: &Chan<'_>) -> (usize, usize) {
    geometry_for(ch.n, ch.slot_bytes)
}

/// [`ring_geometry`] of a channel of `n` members with slots of `slot` bytes.
pub(super) fn geometry_for(n: usize, slot: usize) -> (usize, usize) {
    let unit = UNIT.min(slot / 4 / 64 * 64).max(64);
    (unit, (2 * n * slot).min(RING_BYTES) / unit)
}

/// MPI_Bcast of `buf` from channel member `root` through the ring (after coll/select.rs
/// `ring` said yes).
pub async fn bcast(ch: &Chan<'_>, buf: &UserBuf, root: usize) -> MpiResult<()> {
    let (unit, units) = ring_geometry(ch);
    let chunk = CHUNK.min(ch.slot_bytes).min(units / 2 * unit);
    let is_root = ch.me == root;
    let wait = if is_root {
        Wait::Nobody
    } else {
        Wait::One(root)
    };
    let s0 = ch.post_step(|_| {}, wait, 0).await?;
    let comm = ch.comm;
    // Ordinary steps since the last broadcast that waited for them: the slots are free
    // of their data once everyone reached `s0`.
    let floor = {
        let mut p = lock(comm);
        if comm.coll.ordinary_last.load(Ordering::Relaxed) > p.floor {
            p.floor = s0;
            s0
        } else {
            0
        }
    };
    let total = buf.len();
    let base = ch.slot(0, 0);
    let nt = crate::p2p::buf::streaming(total);
    let mut s = s0;
    for start in (0..total).step_by(chunk) {
        s += 1;
        let len = chunk.min(total - start);
        let (first, need) = lock(comm).place(len, unit, units, s);
        let at = base + first * unit;
        if is_root {
            ch.room_for(need.max(floor), s).await;
            // SAFETY: `room_for` waited until every reader left these units; the root
            // alone writes them until it publishes step s; `buf` is not arena memory.
            buf.read_at(start, unsafe { ch.slice_mut(at, len) });
        } else {
            ch.reached(root, s).await;
            buf.write_at_nt(start, ch.slice(at, len), nt);
        }
        let published = ch.publish_chunk(None);
        debug_assert_eq!(published, s);
    }
    comm.coll.posted.store(s, Ordering::Relaxed);
    Ok(())
}

/// The communicator's placement (a poisoned lock still holds a consistent one: it is
/// only written by `place`, which does not panic).
fn lock(comm: &crate::comm::Comm) -> std::sync::MutexGuard<'_, Placement> {
    comm.coll.ring.lock().unwrap_or_else(|e| e.into_inner())
}

impl Chan<'_> {
    /// Completes once every counter reached `need` (below step `s`, the one the root is
    /// about to write). When it must wait, it waits for the next half of the ring to be
    /// free too (`Placement::ahead`).
    async fn room_for(&self, need: u64, s: u64) {
        if self.comm.coll.synced.load(Ordering::Relaxed) >= need {
            return;
        }
        let (ctl, a) = (self.ctl(), &self.job.arena);
        let low = ctl.lowest(a, self.n).unwrap_or(s);
        self.synced(low);
        if low >= need {
            return;
        }
        let ahead = lock(self.comm).ahead();
        self.all_at(need.max(ahead).min(s - 1)).await;
    }
}
