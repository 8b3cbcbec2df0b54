//! Small MPI_Bcast and MPI_Reduce (at most [`Chan::post_payload`] bytes: 992 up to 8
//! ranks, 224 beyond) in one *posted* step; with more members than CPUs, up to 8 KiB
//! in a chain of posted steps, one per piece ([`Chan::post_limit`]).
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
use crate::shm::proto::{POST_HDR, POST_STEP};
use std::sync::atomic::Ordering;
use std::task::Poll;

/// The most bytes a chain of posted steps carries ([`Chan::post_limit`]).
pub const CHAIN_BYTES: usize = 8 << 10;

/// Whom a member waits for in a posted step.
#[derive(Clone, Copy)]
pub(super) enum Wait {
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

    /// The most bytes a small MPI_Bcast or MPI_Reduce moves through posted steps, in
    /// pieces of `piece` bytes (coll/select.rs `post_limit`). The answer is the same at
    /// every member.
    pub fn post_limit(&self, piece: usize) -> usize {
        super::select::post_limit(&super::select::Group::of(self), piece)
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
        let half = self.ctl().post_k / 2;
        std::future::poll_fn(|_| {
            if self.room_now(s) {
                Poll::Ready(())
            } else {
                self.waits_for(s - half)
            }
        })
        .await
    }

    /// Whether this member may write its post entry for step `s` now: the entry's
    /// previous use, step `s - k`, must be read by everyone (every member has arrived at
    /// the step after it). Looks at the counters only when the lowest it saw last is not
    /// enough, and then asks for room for half the ring (see [`Chan::room`]).
    fn room_now(&self, s: u64) -> bool {
        let (ctl, a) = (self.ctl(), &self.job.arena);
        let k = ctl.post_k;
        if s <= k || self.comm.coll.synced.load(Ordering::Relaxed) >= s + 1 - k {
            return true;
        }
        match ctl.room(a, self.n, s + k / 2 - 1) {
            Some(low) => {
                self.synced(low);
                true
            }
            None => false,
        }
    }

    /// One posted step: `fill` writes this member's payload, then it arrives and waits
    /// as `wait` says; it will then read `read` bytes of the payload of each member it
    /// waits for. Returns the step's number (for `payload`).
    pub(super) async fn post_step(
        &self,
        fill: impl FnOnce(&mut [u8]),
        wait: Wait,
        read: usize,
    ) -> MpiResult<u64> {
        let pending = self.comm.coll.take_desc();
        let s = self.comm.coll.step.load(Ordering::Relaxed) + 1;
        self.room(s).await;
        self.prefetch_posts(s, wait, read);
        let desc = pending
            .as_ref()
            .map(|d| super::agree::pack(d.desc.encode()));
        let wait = self.post_arrive(s, desc, fill, wait);
        self.post_wait(s, desc, wait).await?;
        Ok(s)
    }

    /// A posted step of a blocking call, run in place when it can start at once: its
    /// communicator has no collective in progress (so this one's turn is now) and the
    /// member's post entry is free. Then it takes the turn, arrives with `desc` (the
    /// agreement check's descriptor, made only if the communicator checks) and waits as
    /// `wait` says. None: nothing was done, and the caller runs the collective the
    /// general way (`run`), which waits for the turn and the room.
    ///
    /// This is [`Chan::post_step`] without the future around the whole collective, and
    /// without the descriptor's trip through the communicator: most of a small call's
    /// instructions.
    fn post_step_now(
        &self,
        fill: impl FnOnce(&mut [u8]),
        wait: Wait,
        read: usize,
        desc: impl FnOnce() -> super::agree::Desc,
    ) -> Option<MpiResult<u64>> {
        let comm = self.comm;
        if comm.coll.serving.load(Ordering::Acquire) != comm.coll.ticket.load(Ordering::Relaxed) {
            return None;
        }
        let s = comm.coll.step.load(Ordering::Relaxed) + 1;
        if !self.room_now(s) {
            return None;
        }
        let _turn = super::Turn::take(comm);
        self.prefetch_posts(s, wait, read);
        let desc = comm
            .coll
            .checks_args()
            .then(|| super::agree::pack(desc().encode()));
        let wait = self.post_arrive(s, desc, fill, wait);
        if let Wait::Nobody = wait {
            return Some(Ok(s));
        }
        Some(self.post_wait_now(s, desc, wait).map(|()| s))
    }

    /// Starts loading the two cache lines after the one of the header's tag in step `s`'s
    /// entries of the members `wait` names, as far as this member will read (`read`
    /// bytes of payload), before it fills its own entry and waits: a sender that ran
    /// ahead wrote them already, and they then arrive together with the tag's line
    /// instead of after it (`Arena::prefetch`); the hardware's prefetcher follows a
    /// longer payload. Back-to-back MPI_Reduce of 64 bytes at 2 ranks (the payload ends
    /// in the entry's second line) took 0.097 µs against 0.110 without, with the whole
    /// entry prefetched; that also slowed 8 bytes (0.095 against 0.089), so the tag's
    /// own line is left alone: fetched before the sender writes it, it is only taken
    /// away again. (Two lines against the whole payload: within the noise.)
    fn prefetch_posts(&self, s: u64, wait: Wait, read: usize) {
        let len = read.min(self.post_payload());
        if len == 0 {
            return;
        }
        let a = &self.job.arena;
        let beyond_tag = |i: usize| {
            let tag_line_end = (self.ctl().post(i, s) + POST_STEP) / 64 * 64 + 64;
            let end = self.payload(i, s) + len;
            if end > tag_line_end {
                a.prefetch(tag_line_end, (end - tag_line_end).min(128));
            }
        };
        match wait {
            Wait::Nobody => {}
            Wait::One(r) => beyond_tag(r),
            Wait::All => (0..self.n).filter(|&i| i != self.me).for_each(beyond_tag),
        }
    }

    /// The first half of posted step `s` (its post entry free): `fill` writes this
    /// member's payload, then it arrives with `desc` and rings. Returns whom it waits
    /// for: as `wait` says if it may run ahead, else everyone.
    fn post_arrive(
        &self,
        s: u64,
        desc: Option<[u64; 3]>,
        fill: impl FnOnce(&mut [u8]),
        wait: Wait,
    ) -> Wait {
        // SAFETY: this member's payload of posted step s, its own until it arrives
        // below (its post entry is free: the caller's precondition).
        fill(unsafe { self.slice_mut(self.payload(self.me, s), self.post_payload()) });
        bump(&self.comm.coll.step, Ordering::Relaxed);
        self.comm.coll.posted.store(s, Ordering::Relaxed);
        let a = &self.job.arena;
        self.ctl()
            .arrive_posted(a, self.me, s, desc.unwrap_or_default());
        a.note_step(self.job.rank, s);
        self.ring(s);
        if may_run_ahead(self, desc.is_some()) {
            wait
        } else {
            Wait::All
        }
    }

    /// The second half of posted step `s`: waits for the members `wait` names and
    /// compares their descriptors with `desc`.
    async fn post_wait(&self, s: u64, desc: Option<[u64; 3]>, wait: Wait) -> MpiResult<()> {
        match wait {
            Wait::Nobody => Ok(()),
            Wait::One(r) => std::future::poll_fn(|_| self.one_arrived(r, s, desc)).await,
            Wait::All => {
                self.all_arrived(s, desc).await?;
                self.synced(s);
                Ok(())
            }
        }
    }

    /// [`Chan::post_wait`] of a blocking call (`post_step_now`): the same waits,
    /// without an `async fn`'s state around them.
    fn post_wait_now(&self, s: u64, desc: Option<[u64; 3]>, wait: Wait) -> MpiResult<()> {
        match wait {
            Wait::Nobody => Ok(()),
            Wait::One(r) => {
                crate::progress::block_on(std::future::poll_fn(|_| self.one_arrived(r, s, desc)))
            }
            Wait::All => {
                crate::progress::block_on(self.all_arrived(s, desc))?;
                self.synced(s);
                Ok(())
            }
        }
    }

    /// Whether member `r` arrived at posted step `s`, and if it did, whether its
    /// descriptor agrees with `desc` (this member's, if it checks).
    fn one_arrived(&self, r: usize, s: u64, desc: Option<[u64; 3]>) -> Poll<MpiResult<()>> {
        let Some(theirs) = self.ctl().arrived_posted(&self.job.arena, r, s) else {
            return self.waits_for(s);
        };
        if let Some(d) = desc.filter(|&d| d != theirs) {
            let size_of = |h: i32| crate::datatype::info(h).map_or(0, |x| x.0);
            use super::agree::{unpack, Desc};
            if let Some(e) = Desc::disagreement(r, unpack(theirs), self.me, unpack(d), size_of) {
                return Poll::Ready(Err(e));
            }
        }
        Poll::Ready(Ok(()))
    }

    /// The wait for everyone at posted step `s`: an ordinary step's, looking at the post
    /// entries first.
    fn all_arrived(&self, s: u64, desc: Option<[u64; 3]>) -> AllArrived<'_, '_> {
        AllArrived {
            ch: self,
            s,
            first: 0,
            check: desc.map(|_| Check::new(s)),
            posted: Some(desc.unwrap_or_default()),
        }
    }
}

/// MPI_Bcast of `buf` (at most `post_limit(post_payload())` bytes) from channel member
/// `root`: one posted step per `post_payload()` bytes (one for an empty vector).
pub async fn bcast(ch: &Chan<'_>, buf: &UserBuf, root: usize) -> MpiResult<()> {
    let m = ch.post_payload();
    for lo in (0..buf.len().max(1)).step_by(m) {
        let piece = buf.sub(lo, m.min(buf.len() - lo));
        let (fill, wait) = bcast_roles(ch, &piece, root);
        let s = ch.post_step(fill, wait, piece.len()).await?;
        bcast_out(ch, &piece, root, s);
    }
    Ok(())
}

/// [`bcast`] of a blocking call in place, if it can start at once
/// ([`Chan::post_step_now`]); None: nothing was done. `desc` makes the agreement
/// descriptor.
pub fn bcast_now(
    comm: &crate::comm::Comm,
    buf: &UserBuf,
    root: usize,
    desc: impl FnOnce() -> super::agree::Desc,
) -> Option<MpiResult<()>> {
    if comm.chan_members.len() == 1 {
        return None;
    }
    let ch = Chan::new(comm).ok()?;
    if !super::select::bcast_now(buf.len(), &super::select::Group::of(&ch)) {
        return None;
    }
    let (fill, wait) = bcast_roles(&ch, buf, root);
    Some(
        ch.post_step_now(fill, wait, buf.len(), desc)?
            .map(|s| bcast_out(&ch, buf, root, s)),
    )
}

/// What a member of MPI_Bcast posts (the root its vector) and whom it waits for (a
/// non-root for the root).
fn bcast_roles<'b>(
    ch: &Chan<'_>,
    buf: &'b UserBuf,
    root: usize,
) -> (impl FnOnce(&mut [u8]) + 'b, Wait) {
    let is_root = ch.me == root;
    let fill = move |dst: &mut [u8]| {
        if is_root {
            buf.read_at(0, &mut dst[..buf.len()])
        }
    };
    (
        fill,
        if is_root {
            Wait::Nobody
        } else {
            Wait::One(root)
        },
    )
}

/// A non-root of MPI_Bcast copies the root's payload of step `s` out.
fn bcast_out(ch: &Chan<'_>, buf: &UserBuf, root: usize, s: u64) {
    if ch.me != root && !buf.is_empty() {
        buf.write_at(0, ch.slice(ch.payload(root, s), buf.len()));
    }
}

/// MPI_Reduce of `total` bytes (at most `post_limit(reduce_piece(..))`): the member
/// whose `part` receives the vector is the root. One posted step, or one per piece of
/// whole elements; the root folds each piece as it arrives.
pub async fn reduce(
    ch: &Chan<'_>,
    total: usize,
    red: &Reduction<'_>,
    part: &Part,
) -> MpiResult<()> {
    let m = ch.post_payload();
    // (one step for an empty vector too)
    let piece = if total <= m {
        total.max(1)
    } else {
        reduce_piece(m, red.extent)
    };
    for lo in (0..total.max(1)).step_by(piece) {
        let len = piece.min(total - lo);
        let fill = |dst: &mut [u8]| part.input(lo, &mut dst[..len]);
        let s = ch.post_step(fill, reduce_wait(total, part), len).await?;
        reduce_out(ch, lo, len, red, part, s)?;
    }
    Ok(())
}

/// The bytes of a piece of a chained MPI_Reduce: whole elements of `extent` bytes in a
/// step's payload `m`.
pub fn reduce_piece(m: usize, extent: usize) -> usize {
    let e = extent.max(1);
    (m / e) * e
}

/// [`reduce`] of a blocking call on an intracommunicator in place, if it can start at
/// once ([`Chan::post_step_now`]); None: nothing was done. `desc` makes the agreement
/// descriptor.
pub fn reduce_now(
    comm: &crate::comm::Comm,
    total: usize,
    red: &Reduction<'_>,
    part: &Part,
    desc: impl FnOnce() -> super::agree::Desc,
) -> Option<MpiResult<()>> {
    if comm.chan_members.len() == 1 || comm.is_inter() {
        return None;
    }
    let ch = Chan::new(comm).ok()?;
    if !super::select::reduce_now(total, &super::select::Group::of(&ch)) {
        return None;
    }
    let fill = |dst: &mut [u8]| part.input(0, &mut dst[..total]);
    let s = ch.post_step_now(fill, reduce_wait(total, part), total, desc)?;
    Some(s.and_then(|s| reduce_out(&ch, 0, total, red, part, s)))
}

/// Whom a member of MPI_Reduce waits for: the root everyone, the others nobody. With
/// nothing to reduce the root is not told apart: everyone waits, so that a rank that
/// passed another count still sees the disagreement.
fn reduce_wait(total: usize, part: &Part) -> Wait {
    if part.hi > part.lo || total == 0 {
        Wait::All
    } else {
        Wait::Nobody
    }
}

/// The root of MPI_Reduce folds everyone's payload of step `s` (`len` bytes of the
/// vector from byte `lo`), in canonical order, into its receive buffer.
fn reduce_out(
    ch: &Chan<'_>,
    lo: usize,
    len: usize,
    red: &Reduction<'_>,
    part: &Part,
    s: u64,
) -> MpiResult<()> {
    if part.hi > part.lo {
        // SAFETY: the root's receive buffer, which this reduction owns; the sources
        // are arena payloads, not that buffer.
        let out = unsafe { &mut part.recv.as_mut_slice()[lo..lo + len] };
        with_sources(
            &members(ch.n),
            |i| ch.slice(ch.payload(i, s), len),
            |srcs| fold(red, srcs, out),
        )?;
    }
    Ok(())
}
