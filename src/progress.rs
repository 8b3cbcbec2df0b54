//! The progress engine: what runs while a rank waits.
//!
//! It knows no kind of operation by name. MPI_Init installs the *hooks* (init.rs): the
//! point-to-point engine's pass (p2p) and the pollers of pending operations (the
//! nonblocking collectives of coll/nb.rs; one-sided epochs, file I/O and generalized
//! requests with a poll function plug in the same way). Every layer above this one
//! runs the whole engine with [`pass`], and blocks on an operation of its own with
//! [`block_on`], without importing the others: p2p and coll never call each other's
//! progress, they meet here, below both (as MPICH's progress hooks).
//!
//! What is polled says what it waits for ([`waits_for`], a wake mark of shm/proto.rs)
//! so that a blocked rank sleeps until that publication, and says when it can never
//! complete ([`abandon`]: a member it waits for entered MPI_Finalize).
//!
//! Threads: the hooks keep their state behind their own locks, none of which is held
//! while a future is polled or while the rank sleeps.
#![deny(unsafe_code)]
use crate::error::{MpiError, MpiResult};
use crate::shm::proto::ANY;
use crate::shm::wait::Backoff;
use std::cell::Cell;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

/// The hooks of one job (set once by MPI_Init).
pub struct Hooks {
    /// One pass of the point-to-point engine.
    pub engine: fn(),
    /// Pollers of pending operations, in order.
    pub pending: &'static [fn()],
}

static HOOKS: OnceLock<Hooks> = OnceLock::new();

/// How many pending operations the pollers hold (a nonblocking collective counts from
/// its start until it completes): with none, [`poll_pending`] returns at once and the
/// blocking-send shortcut of p2p may skip the engine.
static OUTSTANDING: AtomicUsize = AtomicUsize::new(0);

/// Installs the job's hooks (MPI_Init; a second call is ignored).
pub fn install(h: Hooks) {
    let _ = HOOKS.set(h);
}

/// Runs the progress engine once: point-to-point, then the pending operations.
pub fn pass() {
    if let Some(h) = HOOKS.get() {
        (h.engine)();
    }
    poll_pending();
}

/// Polls the pending operations once (not the point-to-point engine: for its own
/// waits and tests, which run its pass themselves).
pub fn poll_pending() {
    if OUTSTANDING.load(Ordering::Acquire) == 0 {
        return;
    }
    if let Some(h) = HOOKS.get() {
        for poll in h.pending {
            poll();
        }
    }
}

/// Counts `n` more pending operations (started).
pub fn note_started(n: usize) {
    OUTSTANDING.fetch_add(n, Ordering::AcqRel);
}

/// Counts `n` pending operations less (completed).
pub fn note_done(n: usize) {
    OUTSTANDING.fetch_sub(n, Ordering::AcqRel);
}

/// Whether any pending operation needs this rank's progress.
pub fn any_pending() -> bool {
    OUTSTANDING.load(Ordering::Acquire) != 0
}

thread_local! {
    /// The wake mark of what the operation polled last waits for, or `ANY`.
    static WANT: Cell<u64> = const { Cell::new(ANY) };
    /// Why the operation polled last can never complete, for the one that polled it
    /// ([`poll_once`]) to end it with.
    static ABANDONED: Cell<Option<MpiError>> = const { Cell::new(None) };
}

/// Called by a polled operation that is pending: only the publication of wake mark
/// `mark` can end its wait (a blocked rank then sleeps until it).
pub fn waits_for(mark: u64) {
    WANT.set(mark);
}

/// Called by a polled operation that can never complete: the poll that polled it ends
/// it with `e`.
pub fn abandon(e: MpiError) {
    ABANDONED.set(Some(e));
}

/// Polls an operation once: `Ok` with its result (an error if it [`abandon`]ed), or
/// `Err` with the wake mark it [`waits_for`], `ANY` if it did not say. Abandonment is
/// looked at only in the slow phase of a wait (shm/wait.rs `in_slow_wait`), where the
/// operations look for it.
#[inline(always)]
pub fn poll_once<T>(
    fut: Pin<&mut (impl Future<Output = MpiResult<T>> + ?Sized)>,
    cx: &mut Context<'_>,
) -> Result<MpiResult<T>, u64> {
    // WANT is ANY between polls: a poll takes what it holds.
    let slow = crate::shm::wait::in_slow_wait();
    if slow {
        ABANDONED.take();
    }
    match fut.poll(cx) {
        Poll::Ready(v) => {
            // (a part of it may have said what it waits for before another completed)
            WANT.set(ANY);
            Ok(v)
        }
        Poll::Pending => match if slow { ABANDONED.take() } else { None } {
            Some(e) => {
                WANT.set(ANY);
                Ok(Err(e))
            }
            None => Err(WANT.replace(ANY)),
        },
    }
}

/// Runs an operation to completion in place: polls it, running the rest of the engine
/// and backing off between polls, sleeping on the doorbell after a while with the mark
/// of what the operation waits for.
pub fn block_on<T, F: Future<Output = MpiResult<T>>>(fut: F) -> MpiResult<T> {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    if let Ok(v) = poll_once(fut.as_mut(), &mut cx) {
        return v;
    }
    let job = crate::runtime::job_any().expect("MPI is initialised");
    let mut b = Backoff::new(&job.arena, job.rank, job.policy());
    let mut out = None;
    let mut polls = 0u32;
    loop {
        // Point-to-point and other nonblocking operations progress too (a peer may wait
        // for our rendezvous send to reach a collective), but a collective step is what
        // we wait for: run the rest of the engine on every 8th poll, not on the first
        // (a peer that arrives during it goes unnoticed until it is done, and most
        // steps of a small collective complete within a few polls).
        polls = polls.wrapping_add(1);
        if polls.is_multiple_of(8) {
            pass();
        }
        // What the operation waits for, if it says: point-to-point publications and
        // other channels' wake the rank regardless, so the engine's other operations
        // still progress.
        let want = match poll_once(fut.as_mut(), &mut cx) {
            Ok(v) => return v,
            Err(want) => want,
        };
        b.pause_for(want, || {
            // Called only just before the rank sleeps: the rest of the engine may have
            // work that needs no other rank (a queued send, the next segment of a
            // rendezvous it was woken for), and nobody would wake the rank for it.
            pass();
            match poll_once(fut.as_mut(), &mut cx) {
                Ok(v) => {
                    out = Some(v);
                    true
                }
                // The re-check before sleeping may take the operation further (a
                // collective arrives at its next step): then the rank would sleep with
                // the mark of a wait that is over, and the publication it now waits for
                // would not wake it. Do not sleep; the loop polls again and sleeps with
                // the new mark.
                Err(now) => now != want,
            }
        });
        if let Some(v) = out.take() {
            return v;
        }
    }
}
