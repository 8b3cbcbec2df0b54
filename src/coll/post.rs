//! Small MPI_Bcast and MPI_Reduce (at most [`Chan::post_payload`] bytes: 992 up to 8
//! ranks, 224 beyond) in one *posted* step.
//!
//! Algorithm: every member puts its descriptor, and the data it sends (the root of
//! MPI_Bcast its vector, every member of MPI_Reduce its input), in its post entry for
//! the step (shm/proto.rs) and arrives. A member that receives then waits for the
//! members it receives from and reads their entries: a non-root of MPI_Bcast the root's,
//! the root of MPI_Reduce everyone's, folded in canonical order into its receive buffer.
//! A member that only sends returns at once, so back-to-back calls pipeline: it may run
//! up to `post_k` steps (256 up to 32 ranks, `Layout::post_k`) ahead of the slowest
//! member before it waits for room. Cost: one synchronisation for a receiver (with the
//! members it receives from), none for a sender; one copy in, one copy (or fold) out.
//!
//! Argument agreement: a member that waits compares the descriptors of the members it
//! waited for with its own (or, waiting for all, everyone's with member 0's, as an
//! ordinary step does). A member that returns at once sees no disagreement, so it does
//! so only where that loses nothing: when its error handler on the communicator is
//! MPI_ERRORS_ARE_FATAL or MPI_ERRORS_ABORT (a member that sees the disagreement stops
//! the job with it), or with the check off. Otherwise every member waits for every
//! other, and every member reports a disagreement, as in an ordinary step.
use super::reduce::{fold, members, with_sources, Part, Reduction};
use super::{bump, AllArrived, Chan, Check};
use crate::error::MpiResult;
use crate::p2p::UserBuf;
use crate::shm::proto::POST_HDR;
use std::sync::atomic::Ordering;
use std::task::Poll;

/// Whom a member waits for in a posted step.
#[derive(Clone, Copy)]
enum Wait {
    /// Nobody: it only sends.
    Nobody,
    /// The member it receives from.
    One(usize),
    /// Everyone.
    All,
}

/// Whether a member may wait only for the members it receives from, and one that only
/// sends not at all (module comment): an error it cannot see then still stops the job,
/// or nothing is checked.
fn may_run_ahead(ch: &Chan<'_>, checked: bool) -> bool {
    use crate::abi::{MPI_ERRORS_ABORT, MPI_ERRORS_ARE_FATAL};
    !checked
        || matches!(
            ch.comm.errhandler.load(Ordering::Relaxed),
            MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT
        )
}

impl Chan<'_> {
    /// The most bytes a posted step carries.
    pub fn post_payload(&self) -> usize {
        self.job.arena.lay.post_entry - POST_HDR
    }

    /// Offset of member `i`'s payload for step `s`.
    fn payload(&self, i: usize, s: u64) -> usize {
        self.ctl().post(i, s) + POST_HDR
    }

    /// Waits until this member may write its post entry for step `s` (whose previous
    /// use, step `s - k`, everyone has read), and records the lowest counter it saw.
    /// It waits for room for half the ring (every counter at `s - k/2` or beyond, which
    /// the others reach with the steps already posted): a sender that got `k` steps
    /// ahead then runs `k/2` more before it looks at the counters again, and one that
    /// sleeps is woken once per `k/2` steps of the slowest member, not at each.
    async fn room(&self, s: u64) {
        let (ctl, a, n) = (self.ctl(), &self.job.arena, self.n);
        let half = ctl.post_k / 2;
        let low = std::future::poll_fn(|_| match ctl.room(a, n, s + half - 1) {
            Some(low) => Poll::Ready(low),
            None => self.waits_for(s - half),
        })
        .await;
        self.synced(low);
    }

    /// One posted step: `fill` writes this member's payload, then it arrives and waits
    /// as `wait` says. Returns the step's number (for `payload`).
    async fn post_step(&self, fill: impl FnOnce(&mut [u8]), wait: Wait) -> MpiResult<u64> {
        let pending = self.comm.take_desc();
        let s = self.comm.step.load(Ordering::Relaxed) + 1;
        // The entry's previous use, step s - k, must be read by everyone: every member
        // has arrived at the step after it.
        let k = self.job.arena.lay.post_k;
        if s > k && self.comm.synced.load(Ordering::Relaxed) < s + 1 - k {
            self.room(s).await;
        }
        let desc = pending
            .as_ref()
            .map(|d| super::agree::pack(d.desc.encode()));
        fill(self.slice_mut(self.payload(self.me, s), self.post_payload()));
        bump(&self.comm.step, Ordering::Relaxed);
        self.comm.posted.store(s, Ordering::Relaxed);
        let a = &self.job.arena;
        let ctl = self.ctl();
        ctl.arrive_posted(a, self.me, s, desc.unwrap_or_default());
        a.note_step(self.job.rank, s);
        self.ring(s);
        let wait = if may_run_ahead(self, desc.is_some()) {
            wait
        } else {
            Wait::All
        };
        match wait {
            Wait::Nobody => {}
            Wait::One(r) => {
                let theirs = std::future::poll_fn(|_| match ctl.arrived_posted(a, r, s) {
                    Some(d) => Poll::Ready(d),
                    None => self.waits_for(s),
                })
                .await;
                if let Some(d) = desc.filter(|&d| d != theirs) {
                    let size_of = |h: i32| crate::datatype::info(h).map_or(0, |x| x.0);
                    use super::agree::{unpack, Desc};
                    if let Some(e) =
                        Desc::disagreement(r, unpack(theirs), self.me, unpack(d), size_of)
                    {
                        return Err(e);
                    }
                }
            }
            Wait::All => {
                // As an ordinary step's wait, looking at the post entries first.
                AllArrived {
                    ch: self,
                    s,
                    first: 0,
                    check: desc.map(|_| Check::new(s)),
                    posted: true,
                }
                .await?;
                self.synced(s);
            }
        }
        Ok(s)
    }
}

/// MPI_Bcast of `buf` (at most `post_payload()` bytes) from channel member `root`.
pub async fn bcast(ch: &Chan<'_>, buf: &UserBuf, root: usize) -> MpiResult<()> {
    let total = buf.len();
    let is_root = ch.me == root;
    let wait = if is_root {
        Wait::Nobody
    } else {
        Wait::One(root)
    };
    let fill = |dst: &mut [u8]| {
        if is_root {
            buf.read_at(0, &mut dst[..total])
        }
    };
    let s = ch.post_step(fill, wait).await?;
    if !is_root && total > 0 {
        buf.write_at(0, ch.slice(ch.payload(root, s), total));
    }
    Ok(())
}

/// MPI_Reduce of `total` bytes (at most `post_payload()`): the member whose `part`
/// receives the vector is the root.
pub async fn reduce(
    ch: &Chan<'_>,
    total: usize,
    red: &Reduction<'_>,
    part: &Part,
) -> MpiResult<()> {
    let is_root = part.hi > part.lo;
    // With nothing to reduce the root is not told apart: everyone waits, so that a rank
    // that passed another count still sees the disagreement.
    let wait = if is_root || total == 0 {
        Wait::All
    } else {
        Wait::Nobody
    };
    let s = ch
        .post_step(|dst| part.input(0, &mut dst[..total]), wait)
        .await?;
    if is_root {
        let out = &mut part.recv.as_mut_slice()[..total];
        with_sources(
            &members(ch.n),
            |i| ch.slice(ch.payload(i, s), total),
            |srcs| fold(red, srcs, out),
        )?;
    }
    Ok(())
}
