//! Synchronisation (MPI 4.1 §12.5): fence, post/start/complete/wait/test, locks,
//! flushes and MPI_Win_sync, and the epoch bookkeeping that makes a communication call
//! outside an epoch, or a wrong nesting of epochs, an error of class MPI_ERR_RMA_SYNC.
//!
//! Operations complete at their call (see mod.rs), so:
//! - a fence is a barrier of the window's members;
//! - an access epoch of PSCW waits, at its first operation on a target, until that
//!   target posted (MPI_Win_start does not block); MPI_Win_complete counts itself done
//!   on each target and wakes it; MPI_Win_wait waits for every origin of its group;
//! - a lock is a word in the target's control line, taken at MPI_Win_lock (exclusive:
//!   0 -> bit 31; shared: +1 while bit 31 is clear) and given back at MPI_Win_unlock,
//!   which wakes the members that wait for it; MPI_MODE_NOCHECK skips the word;
//! - flushes are memory fences.
use super::Win;
use crate::abi::*;
use crate::error::{err, MpiResult};
use std::sync::atomic::{fence, AtomicBool, AtomicU8, Ordering};
use std::task::Poll;

const EXCL: u32 = 1 << 31;

/// The assertions each call accepts.
pub const FENCE_ASSERTS: i32 =
    MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED;
pub const POST_ASSERTS: i32 = MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT;
pub const START_ASSERTS: i32 = MPI_MODE_NOCHECK;
pub const LOCK_ASSERTS: i32 = MPI_MODE_NOCHECK;

/// MPI_ERR_ASSERT unless `assert` holds only flags of `allowed`.
pub fn check_assert(assert: i32, allowed: i32) -> MpiResult<()> {
    if assert & !allowed != 0 {
        return Err(err(
            MPI_ERR_ASSERT,
            format!(
                "assert={assert:#x} has bits ({:#x}) that are not assertions of this call (allowed: {allowed:#x})",
                assert & !allowed
            ),
        ));
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fence {
    /// No fence epoch (none yet, or the last fence said MPI_MODE_NOSUCCEED).
    Off,
    /// After a fence: an epoch that operations may use; `used` once one did.
    Open { used: bool },
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
enum Lock {
    None = 0,
    Shared = 1,
    Exclusive = 2,
    /// Taken with MPI_MODE_NOCHECK: no lock word was touched.
    NoCheck = 3,
    /// Being taken (the lock word is not ours yet).
    Pending = 4,
}

impl Lock {
    fn of(v: u8) -> Lock {
        match v {
            1 => Lock::Shared,
            2 => Lock::Exclusive,
            3 => Lock::NoCheck,
            4 => Lock::Pending,
            _ => Lock::None,
        }
    }
    /// Whether it is an open epoch.
    fn held(self) -> bool {
        matches!(self, Lock::Shared | Lock::Exclusive | Lock::NoCheck)
    }
}

/// MPI_Win_lock_all's record in [`Open`]: none, taken, taken with MPI_MODE_NOCHECK.
const ALL_NONE: u8 = 0;
const ALL_CHECKED: u8 = 1;
const ALL_NOCHECK: u8 = 2;

/// One member's epochs on one window.
pub struct State {
    fence: Fence,
    /// PSCW access epoch: for each member, whether it is a target, and whether its
    /// post for this epoch has been seen.
    access: Option<Vec<(bool, bool)>>,
    /// PSCW exposure epoch: the origins of the group.
    exposure: Option<Vec<usize>>,
    /// Per member: how many exposure epochs this member posted to it.
    posts_to: Vec<u32>,
    /// Per member: how many access epochs of this member had it as a target.
    starts_to: Vec<u32>,
}

/// The passive-target epochs this process has open on a window, in atomics that the
/// operations, flushes, locks and unlocks read and change without the state mutex
/// (the calls that also look at [`State`] change them under it).
pub struct Open {
    /// MPI_Win_lock_all: ALL_NONE, ALL_CHECKED or ALL_NOCHECK.
    all: AtomicU8,
    /// MPI_Win_lock per target: a [`Lock`].
    each: Box<[AtomicU8]>,
    /// Whether [`State`] has neither a fence epoch nor a PSCW access epoch open: a
    /// lock then needs nothing from it (kept by every release of the state mutex).
    calm: AtomicBool,
    /// Whether a fence epoch is open and no PSCW access epoch: FENCE_NONE, FENCE_OPEN,
    /// or FENCE_USED once an operation used it (the lean paths mark it here, without
    /// the state mutex; the next holder of the mutex folds it into [`State`]).
    fence: AtomicU8,
}

const FENCE_NONE: u8 = 0;
const FENCE_OPEN: u8 = 1;
const FENCE_USED: u8 = 2;

impl Open {
    pub fn new(n: usize) -> Open {
        Open {
            all: AtomicU8::new(ALL_NONE),
            each: (0..n).map(|_| AtomicU8::new(Lock::None as u8)).collect(),
            calm: AtomicBool::new(true),
            fence: AtomicU8::new(FENCE_NONE),
        }
    }
    fn lock(&self, t: usize) -> Lock {
        Lock::of(self.each[t].load(Ordering::Relaxed))
    }
    fn lock_all(&self) -> bool {
        self.all.load(Ordering::Relaxed) != ALL_NONE
    }
    /// Whether a passive-target epoch to target `t` is open.
    pub fn to(&self, t: usize) -> bool {
        self.lock_all() || self.lock(t).held()
    }
    /// Whether an operation may go to any target without the state mutex: a
    /// passive-target epoch to `t` is open, or a fence epoch (then marked used).
    pub fn lean_to(&self, t: usize) -> bool {
        if self.to(t) {
            return true;
        }
        if self.fence.load(Ordering::Relaxed) == FENCE_NONE {
            return false;
        }
        self.fence.store(FENCE_USED, Ordering::Relaxed);
        true
    }
    /// Whether any passive-target epoch is open (or a lock is being taken).
    fn any(&self) -> bool {
        self.lock_all() || (0..self.each.len()).any(|t| self.lock(t) != Lock::None)
    }
}

impl State {
    pub fn new(n: usize) -> State {
        State {
            fence: Fence::Off,
            access: None,
            exposure: None,
            posts_to: vec![0; n],
            starts_to: vec![0; n],
        }
    }
    fn calm(&self) -> bool {
        self.fence == Fence::Off && self.access.is_none()
    }
    /// A fence epoch no operation used ends when another kind of epoch begins; one that
    /// was used must be closed by a fence first.
    fn leave_fence(&mut self, call: &str) -> MpiResult<()> {
        match self.fence {
            Fence::Open { used: true } => Err(err(
                MPI_ERR_RMA_SYNC,
                format!("{call} in a fence epoch that communicated: end it with MPI_Win_fence first (with MPI_MODE_NOSUCCEED)"),
            )),
            _ => {
                self.fence = Fence::Off;
                Ok(())
            }
        }
    }
}

/// Waits until `cond` holds, running the rest of the engine meanwhile; `waiters`, if
/// given, counts this member among those that the one who makes `cond` true wakes.
/// `what` says what it waits for, in the hang report of mpiexec --timeout.
pub(super) fn wait_for(
    w: &Win,
    what: impl FnOnce() -> String,
    cond: impl FnMut() -> bool,
    waiters: Option<&std::sync::atomic::AtomicU32>,
) -> MpiResult<()> {
    wait_counted(w, what, cond, waiters, false)
}

/// [`wait_for`]; `heavy`: a heavy fence follows the count (for a releaser that stores
/// with a light fence only, as `give_acc_mutex` does).
fn wait_counted(
    w: &Win,
    what: impl FnOnce() -> String,
    mut cond: impl FnMut() -> bool,
    waiters: Option<&std::sync::atomic::AtomicU32>,
    heavy: bool,
) -> MpiResult<()> {
    if cond() {
        return Ok(());
    }
    if let Ok(job) = crate::runtime::job() {
        let text = format!("window {:#x}: {}", w.handle, what());
        job.arena.note_wait(w.world(w.me()), &text);
    }
    if let Some(c) = waiters {
        c.fetch_add(1, Ordering::SeqCst);
        if heavy {
            crate::shm::fence::heavy();
        }
    }
    let r = crate::progress::block_on(std::future::poll_fn(|_| {
        if cond() {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }));
    if let Some(w) = waiters {
        w.fetch_sub(1, Ordering::SeqCst);
    }
    r
}

/// Wakes the members that may wait for something this member just made true.
fn wake_all(w: &Win) {
    if let Ok(job) = crate::runtime::job() {
        for t in 0..w.n() {
            if t != w.me() {
                crate::shm::wait::notify(&job.arena, w.world(t));
            }
        }
    }
}

pub(super) fn wake(w: &Win, t: usize) {
    if let Ok(job) = crate::runtime::job() {
        crate::shm::wait::notify(&job.arena, w.world(t));
    }
}

/// The window's state, locked; [`Open::calm`] follows it when the guard goes.
struct Guard<'a> {
    st: std::sync::MutexGuard<'a, State>,
    open: &'a Open,
}

impl std::ops::Deref for Guard<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.st
    }
}

impl std::ops::DerefMut for Guard<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.st
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.open.calm.store(self.st.calm(), Ordering::Relaxed);
        let fence = match self.st.fence {
            Fence::Open { used } if self.st.access.is_none() => {
                if used {
                    FENCE_USED
                } else {
                    FENCE_OPEN
                }
            }
            _ => FENCE_NONE,
        };
        self.open.fence.store(fence, Ordering::Relaxed);
    }
}

fn state(w: &Win) -> Guard<'_> {
    let mut st = w.state.lock().unwrap_or_else(|e| e.into_inner());
    // (an operation on the lean path used the fence epoch)
    if w.open.fence.load(Ordering::Relaxed) == FENCE_USED {
        if let Fence::Open { .. } = st.fence {
            st.fence = Fence::Open { used: true };
        }
    }
    Guard { st, open: &w.open }
}

/// Checks that an operation of `call` on target `t` is inside an access epoch to it
/// (waiting for its post in a PSCW epoch); `passive_only` for the request-based
/// operations, which need a passive-target epoch.
pub fn access(w: &Win, t: usize, call: &str, passive_only: bool) -> MpiResult<()> {
    if w.open.to(t) {
        return Ok(());
    }
    let mut st = state(w);
    if passive_only {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            format!("{call} to rank {t} outside a passive-target epoch (request-based operations need MPI_Win_lock or MPI_Win_lock_all)"),
        ));
    }
    if let Some(a) = &st.access {
        if a[t].0 {
            if !a[t].1 {
                let need = st.starts_to[t];
                drop(st);
                let me = w.me();
                wait_for(
                    w,
                    || format!("the MPI_Win_post of rank {t}"),
                    || w.post_count(t, me).load(Ordering::Acquire) >= need,
                    None,
                )?;
                st = state(w);
                if let Some(a) = st.access.as_mut() {
                    a[t].1 = true;
                }
            }
            return Ok(());
        }
        return Err(err(
            MPI_ERR_RMA_SYNC,
            format!("{call} to rank {t}, which is not in the group of this access epoch (MPI_Win_start)"),
        ));
    }
    if let Fence::Open { .. } = st.fence {
        st.fence = Fence::Open { used: true };
        return Ok(());
    }
    Err(err(
        MPI_ERR_RMA_SYNC,
        format!("{call} to rank {t} outside an access epoch (no MPI_Win_fence, MPI_Win_start, MPI_Win_lock or MPI_Win_lock_all opened one)"),
    ))
}

/// MPI_Win_fence (collective).
pub fn fence_call(w: &Win, assert: i32) -> MpiResult<()> {
    check_assert(assert, FENCE_ASSERTS)?;
    {
        let st = state(w);
        if st.access.is_some() || st.exposure.is_some() {
            return Err(err(
                MPI_ERR_RMA_SYNC,
                "MPI_Win_fence inside a post/start/complete/wait epoch",
            ));
        }
        if w.open.any() {
            return Err(err(
                MPI_ERR_RMA_SYNC,
                "MPI_Win_fence inside a passive-target epoch (a lock is held)",
            ));
        }
    }
    fence(Ordering::SeqCst);
    if w.n() > 1 {
        crate::coll::run(&w.comm, crate::coll::barrier(&w.comm))?;
    }
    fence(Ordering::SeqCst);
    state(w).fence = if assert & MPI_MODE_NOSUCCEED != 0 {
        Fence::Off
    } else {
        Fence::Open { used: false }
    };
    Ok(())
}

/// MPI_Win_post: exposes this member's memory to the members `group` (window ranks).
pub fn post(w: &Win, group: &[usize], assert: i32) -> MpiResult<()> {
    check_assert(assert, POST_ASSERTS)?;
    let mut st = state(w);
    if st.exposure.is_some() {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            "MPI_Win_post while an exposure epoch is open (MPI_Win_wait or MPI_Win_test ends it)",
        ));
    }
    st.leave_fence("MPI_Win_post")?;
    let me = w.me();
    fence(Ordering::SeqCst);
    for &o in group {
        st.posts_to[o] += 1;
        w.post_count(me, o).fetch_add(1, Ordering::Release);
    }
    st.exposure = Some(group.to_vec());
    drop(st);
    fence(Ordering::SeqCst);
    for &o in group {
        wake(w, o);
    }
    Ok(())
}

/// MPI_Win_start: an access epoch to the members `group`.
pub fn start(w: &Win, group: &[usize], assert: i32) -> MpiResult<()> {
    check_assert(assert, START_ASSERTS)?;
    let mut st = state(w);
    if st.access.is_some() {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            "MPI_Win_start while an access epoch is open (MPI_Win_complete ends it)",
        ));
    }
    if w.open.any() {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            "MPI_Win_start inside a passive-target epoch (a lock is held)",
        ));
    }
    st.leave_fence("MPI_Win_start")?;
    let mut a = vec![(false, false); w.n()];
    for &t in group {
        a[t].0 = true;
        st.starts_to[t] += 1;
    }
    st.access = Some(a);
    Ok(())
}

/// MPI_Win_complete.
pub fn complete(w: &Win) -> MpiResult<()> {
    let mut st = state(w);
    let Some(a) = st.access.take() else {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            "MPI_Win_complete without an access epoch (no MPI_Win_start)",
        ));
    };
    drop(st);
    let me = w.me();
    fence(Ordering::SeqCst);
    for (t, &(target, _)) in a.iter().enumerate() {
        if target {
            w.done_count(t, me).fetch_add(1, Ordering::Release);
        }
    }
    fence(Ordering::SeqCst);
    for (t, &(target, _)) in a.iter().enumerate() {
        if target {
            wake(w, t);
        }
    }
    Ok(())
}

fn exposure_done(w: &Win, st: &State, group: &[usize]) -> bool {
    let me = w.me();
    group
        .iter()
        .all(|&o| w.done_count(me, o).load(Ordering::Acquire) >= st.posts_to[o])
}

/// MPI_Win_wait (`block`) or MPI_Win_test: whether the exposure epoch is over.
pub fn wait(w: &Win, block: bool, call: &str) -> MpiResult<bool> {
    let st = state(w);
    let Some(group) = st.exposure.clone() else {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            format!("{call} without an exposure epoch (no MPI_Win_post)"),
        ));
    };
    let counts: Vec<u32> = group.iter().map(|&o| st.posts_to[o]).collect();
    drop(st);
    let me = w.me();
    let done = || {
        group
            .iter()
            .zip(&counts)
            .all(|(&o, &c)| w.done_count(me, o).load(Ordering::Acquire) >= c)
    };
    if block {
        wait_for(
            w,
            || "the MPI_Win_complete of its origins".into(),
            done,
            None,
        )?;
    } else if !done() {
        crate::progress::poll_pending();
        if !done() {
            return Ok(false);
        }
    }
    let mut st = state(w);
    debug_assert!(exposure_done(w, &st, &group));
    st.exposure = None;
    fence(Ordering::SeqCst);
    Ok(true)
}

/// One attempt at taking target `t`'s lock word: shared or exclusive.
fn try_take_word(w: &Win, t: usize, exclusive: bool) -> bool {
    let word = w.lock_word(t);
    let cur = word.load(Ordering::Relaxed);
    if exclusive {
        cur == 0
            && word
                .compare_exchange(0, EXCL, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    } else {
        cur & EXCL == 0
            && word
                .compare_exchange(cur, cur + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }
}

fn take_word(w: &Win, t: usize, exclusive: bool) -> MpiResult<()> {
    let kind = if exclusive {
        "an exclusive"
    } else {
        "a shared"
    };
    wait_for(
        w,
        || format!("{kind} lock of rank {t}"),
        || try_take_word(w, t, exclusive),
        Some(w.lock_waiters(t)),
    )
}

fn give_word(w: &Win, t: usize, exclusive: bool) {
    let word = w.lock_word(t);
    if exclusive {
        word.store(0, Ordering::SeqCst);
    } else {
        word.fetch_sub(1, Ordering::SeqCst);
    }
    if w.lock_waiters(t).load(Ordering::SeqCst) > 0 {
        wake_all(w);
    }
}

/// MPI_Win_lock's lock type: whether it is exclusive.
fn exclusive(lock_type: i32) -> MpiResult<bool> {
    match lock_type {
        MPI_LOCK_EXCLUSIVE => Ok(true),
        MPI_LOCK_SHARED => Ok(false),
        _ => Err(err(
            MPI_ERR_LOCKTYPE,
            format!("lock_type={lock_type} is neither MPI_LOCK_EXCLUSIVE nor MPI_LOCK_SHARED"),
        )),
    }
}

/// Whether this process may open a lock epoch to `t` now (closing an unused fence
/// epoch), and if so marks the lock to `t` as being taken.
fn may_lock(w: &Win, st: &mut State, t: usize) -> MpiResult<()> {
    if w.open.lock_all() {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            format!("MPI_Win_lock of rank {t} inside an MPI_Win_lock_all epoch"),
        ));
    }
    if st.access.is_some() {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            format!("MPI_Win_lock of rank {t} inside a PSCW access epoch (MPI_Win_start)"),
        ));
    }
    if let Fence::Open { used: true } = st.fence {
        return st.leave_fence("MPI_Win_lock");
    }
    pend(w, t)?;
    st.fence = Fence::Off;
    Ok(())
}

/// Marks the lock to `t` as being taken: MPI_ERR_RMA_SYNC if this process holds it.
fn pend(w: &Win, t: usize) -> MpiResult<()> {
    // (a load and a store, not a read-modify-write: two threads of this process
    // locking the same target at once is erroneous, MPI 4.1 §12.5.3)
    let e = &w.open.each[t];
    if e.load(Ordering::Relaxed) != Lock::None as u8 {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            format!("MPI_Win_lock of rank {t}, which this process has locked already"),
        ));
    }
    e.store(Lock::Pending as u8, Ordering::Relaxed);
    Ok(())
}

/// Records how the lock to `t` that [`pend`] marked ended up: `l`, or None.
fn locked(w: &Win, t: usize, l: Lock) {
    w.open.each[t].store(l as u8, Ordering::Relaxed);
    if l == Lock::NoCheck {
        fence(Ordering::SeqCst);
    }
}

/// The kind of lock MPI_Win_lock takes.
fn kind(exclusive: bool, assert: i32) -> Lock {
    if assert & MPI_MODE_NOCHECK != 0 {
        Lock::NoCheck
    } else if exclusive {
        Lock::Exclusive
    } else {
        Lock::Shared
    }
}

/// MPI_Win_lock.
pub fn lock(w: &Win, lock_type: i32, t: usize, assert: i32) -> MpiResult<()> {
    let exclusive = exclusive(lock_type)?;
    check_assert(assert, LOCK_ASSERTS)?;
    may_lock(w, &mut state(w), t)?;
    let l = kind(exclusive, assert);
    if l != Lock::NoCheck {
        if let Err(e) = take_word(w, t, exclusive) {
            locked(w, t, Lock::None);
            return Err(e);
        }
    }
    locked(w, t, l);
    Ok(())
}

/// MPI_Win_lock when it needs no wait, no state mutex and no error: true when the
/// lock is taken, false (nothing done) for [`lock`] to wait or to say what is wrong.
pub fn lock_fast(w: &Win, lock_type: i32, t: usize, assert: i32) -> bool {
    let Ok(exclusive) = exclusive(lock_type) else {
        return false;
    };
    if assert & !LOCK_ASSERTS != 0
        || !w.open.calm.load(Ordering::Relaxed)
        || w.open.lock_all()
        || pend(w, t).is_err()
    {
        return false;
    }
    let l = kind(exclusive, assert);
    if l != Lock::NoCheck && !try_take_word(w, t, exclusive) {
        locked(w, t, Lock::None);
        return false;
    }
    locked(w, t, l);
    true
}

/// MPI_Win_unlock (no state mutex: it changes nothing but the lock to `t`).
pub fn unlock(w: &Win, t: usize) -> MpiResult<()> {
    let l = w.open.lock(t);
    if !l.held() {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            format!("MPI_Win_unlock of rank {t}, which this process has not locked (MPI_Win_lock)"),
        ));
    }
    // (as in `pend`, a plain store; giving the word back is a release, which orders
    // this epoch's accesses)
    w.open.each[t].store(Lock::None as u8, Ordering::Relaxed);
    match l {
        Lock::Exclusive => give_word(w, t, true),
        Lock::Shared => give_word(w, t, false),
        _ => fence(Ordering::SeqCst),
    }
    Ok(())
}

/// MPI_Win_lock_all.
pub fn lock_all(w: &Win, assert: i32) -> MpiResult<()> {
    check_assert(assert, LOCK_ASSERTS)?;
    let mut st = state(w);
    if w.open.any() {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            "MPI_Win_lock_all inside a passive-target epoch (a lock is held already)",
        ));
    }
    if st.access.is_some() {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            "MPI_Win_lock_all inside a PSCW access epoch (MPI_Win_start)",
        ));
    }
    st.leave_fence("MPI_Win_lock_all")?;
    let nocheck = assert & MPI_MODE_NOCHECK != 0;
    drop(st);
    if !nocheck {
        for t in 0..w.n() {
            if let Err(e) = take_word(w, t, false) {
                for u in 0..t {
                    give_word(w, u, false);
                }
                return Err(e);
            }
        }
    }
    fence(Ordering::SeqCst);
    let all = if nocheck { ALL_NOCHECK } else { ALL_CHECKED };
    w.open.all.store(all, Ordering::Relaxed);
    Ok(())
}

/// MPI_Win_unlock_all.
pub fn unlock_all(w: &Win) -> MpiResult<()> {
    let all = w.open.all.swap(ALL_NONE, Ordering::Relaxed);
    if all == ALL_NONE {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            "MPI_Win_unlock_all without MPI_Win_lock_all",
        ));
    }
    fence(Ordering::SeqCst);
    if all == ALL_CHECKED {
        for t in 0..w.n() {
            give_word(w, t, false);
        }
    }
    Ok(())
}

/// MPI_Win_flush and its kin: `t` one target, None all. Every operation is complete
/// already; what is left is ordering memory.
pub fn flush(w: &Win, t: Option<usize>, call: &str) -> MpiResult<()> {
    if !flush_fast(w, t) {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            match t {
                Some(t) => format!("{call} of rank {t} outside a passive-target epoch to it (MPI_Win_lock or MPI_Win_lock_all)"),
                None => format!("{call} outside a passive-target epoch (MPI_Win_lock or MPI_Win_lock_all)"),
            },
        ));
    }
    Ok(())
}

/// [`flush`] when it is right: whether the epoch is open (memory then ordered).
pub fn flush_fast(w: &Win, t: Option<usize>) -> bool {
    let ok = match t {
        Some(t) => w.open.to(t),
        None => w.open.any(),
    };
    // (after a locked instruction, the last data move's, there is nothing to order)
    if ok && !super::atomic::fenced() {
        fence(Ordering::SeqCst);
    }
    ok
}

/// MPI_Win_sync: the public and private copies are one (MPI_WIN_UNIFIED); a full fence
/// orders this process's loads and stores of the window memory with the others'.
pub fn win_sync(_w: &Win) -> MpiResult<()> {
    fence(Ordering::SeqCst);
    Ok(())
}

/// MPI_ERR_RMA_SYNC if an epoch other than a fence epoch is open (MPI_Win_free).
pub fn check_idle(w: &Win, call: &str) -> MpiResult<()> {
    let st = state(w);
    if st.access.is_some() || st.exposure.is_some() {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            format!("{call} with a post/start/complete/wait epoch open"),
        ));
    }
    if w.open.any() {
        return Err(err(
            MPI_ERR_RMA_SYNC,
            format!("{call} with a passive-target epoch open (a lock is held)"),
        ));
    }
    Ok(())
}

/// Takes the accumulate mutex of target `t`'s memory for the duration of `f`: every
/// accumulate-family operation on it is atomic with respect to the others.
pub fn with_acc_mutex<T>(w: &Win, t: usize, f: impl FnOnce() -> MpiResult<T>) -> MpiResult<T> {
    if !spin_acc_mutex(w, t) {
        let word = w.acc_word(t);
        wait_counted(
            w,
            || format!("the accumulate lock of rank {t}"),
            || {
                word.load(Ordering::Relaxed) == 0
                    && word
                        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
            },
            Some(w.acc_waiters(t)),
            w.heavy,
        )?;
    }
    let r = f();
    give_acc_mutex(w, t);
    r
}

/// [`with_acc_mutex`] when the mutex is free within a few spins: Some of what `f`
/// returns, or None (`f` not run) when another process holds it.
pub fn try_acc_mutex<T>(w: &Win, t: usize, f: impl FnOnce() -> T) -> Option<T> {
    if !spin_acc_mutex(w, t) {
        return None;
    }
    let r = f();
    give_acc_mutex(w, t);
    Some(r)
}

/// A few attempts at target `t`'s accumulate mutex: whether it is taken.
fn spin_acc_mutex(w: &Win, t: usize) -> bool {
    let word = w.acc_word(t);
    for _ in 0..64 {
        if word
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return true;
        }
        std::hint::spin_loop();
    }
    false
}

fn give_acc_mutex(w: &Win, t: usize) {
    if w.heavy {
        // A plain store and a light fence: a waiter counts itself and issues a heavy
        // fence before it looks at the word again (`acc_wait`), so that either this
        // sees the count or the waiter sees the mutex free (shm/fence.rs).
        w.acc_word(t).store(0, Ordering::Release);
        crate::shm::fence::light();
        if w.acc_waiters(t).load(Ordering::Relaxed) > 0 {
            wake_all(w);
        }
        return;
    }
    w.acc_word(t).store(0, Ordering::SeqCst);
    if w.acc_waiters(t).load(Ordering::SeqCst) > 0 {
        wake_all(w);
    }
}
