//! Waiting without starving: spin briefly when every rank has its own core, yield almost
//! at once when the job is oversubscribed, and after a longer wait sleep on the rank's
//! doorbell (a futex word in the arena) until someone rings it.
//!
//! Protocol (a Dekker pair, so no wake-up is lost; shm/proto.rs, model-checked): a
//! waiter stores `sleeping = 1`, reads the doorbell, fences, re-checks its condition and
//! only then sleeps on the doorbell value it read. A publisher makes its data visible
//! with a release store, fences and then, if the target's `sleeping` is set, bumps the
//! doorbell and wakes it.
//!
//! Where the ranks run, and how that follows neighbours on the machine: place.rs.
use super::proto::{self, Bell};
use super::{Arena, R_DOORBELL, R_SLEEPING, R_WANT};
use std::time::{Duration, Instant};

/// Spin this long before yielding, when every rank has a core.
const SPIN: Duration = Duration::from_micros(20);
/// Yield until this long, then sleep on the doorbell.
const YIELD: Duration = Duration::from_micros(100);
/// Sleep sooner when the yields of this long all came straight back.
const LONELY: Duration = Duration::from_micros(30);
/// A yield that took this long let another task run.
const SWITCHED: Duration = Duration::from_micros(2);

/// The longest sleep on the doorbell: it only bounds how long a dead peer goes
/// unnoticed (`check_job_alive` runs after each sleep).
const SLEEP: Duration = Duration::from_millis(20);

/// The spin and yield phases: SPIN and YIELD unless `SHMPI_SPIN_US` / `SHMPI_YIELD_US`
/// (microseconds) say otherwise. On the 2-CPU virtual machine of the benchmarks there are
/// phases in which yielding does not let the awaited peer run and each step lasts until
/// the waiter sleeps; YIELD bounds that stall (it was 300 µs).
static TUNE: std::sync::LazyLock<(Duration, Duration, Duration)> = std::sync::LazyLock::new(|| {
    let s = crate::settings::rank();
    (
        us_or(s.spin_us, SPIN),
        us_or(s.yield_us, YIELD),
        us_or(s.lonely_us, LONELY),
    )
});

/// SLEEP unless `SHMPI_SLEEP_US` says otherwise. The tests set it to many seconds, so
/// that a lost wake-up shows as a test that runs out of time instead of a 20 ms stall.
static SLEEP_MAX: std::sync::LazyLock<Duration> =
    std::sync::LazyLock::new(|| us_or(crate::settings::rank().sleep_us, SLEEP));

fn us_or(us: Option<u64>, d: Duration) -> Duration {
    us.map_or(d, Duration::from_micros)
}

/// How a rank waits, fixed at start-up.
#[derive(Clone, Copy, Debug)]
pub struct WaitPolicy {
    /// More ranks than CPUs this process may run on.
    pub oversubscribed: bool,
}

impl WaitPolicy {
    pub fn detect(nranks: usize) -> WaitPolicy {
        let cpus = available_cpus();
        let oversubscribed = crate::settings::rank()
            .oversubscribed
            .unwrap_or(nranks > cpus);
        WaitPolicy { oversubscribed }
    }
}

/// Number of CPUs in this process's affinity mask.
pub fn available_cpus() -> usize {
    // SAFETY: sched_getaffinity fills a cpu_set_t we own.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let n = libc::CPU_COUNT(&set) as usize;
            if n > 0 {
                return n;
            }
        }
    }
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

pub(crate) fn futex_wait(word: &std::sync::atomic::AtomicU32, val: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT on a valid, aligned u32 in shared memory, with a timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            val,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

pub(crate) fn futex_wake(word: &std::sync::atomic::AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid, aligned u32 in shared memory.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Rank `r`'s doorbell.
#[inline]
pub fn bell_of(arena: &Arena, r: usize) -> Bell {
    let b = arena.lay.rank_block(r);
    Bell {
        bell: b + R_DOORBELL,
        sleeping: b + R_SLEEPING,
        want: b + R_WANT,
    }
}

/// Wakes rank `r` if it sleeps. Call after publishing with a release store.
#[inline]
pub fn notify(arena: &Arena, r: usize) {
    proto::ring_doorbells(arena, [bell_of(arena, r)], futex_wake);
}

/// Wakes every rank of `ranks` that sleeps waiting for what publication `publ` (a wake
/// mark, `proto::chan_mark`) may bring (one fence for all of them).
#[inline]
pub fn notify_all(arena: &Arena, ranks: impl IntoIterator<Item = usize>, publ: u64) {
    proto::ring_doorbells_for(
        arena,
        ranks.into_iter().map(|r| bell_of(arena, r)),
        publ,
        futex_wake,
    );
}

thread_local! {
    /// Whether this thread is in the slow phase of a wait (it sleeps between looks):
    /// then the waits may also look at what is too costly to look at on every spin,
    /// such as whether the awaited peers still live in MPI (coll/mod.rs `waits_for`).
    static SLOW: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

thread_local! {
    /// Until when a peer is expected to be busy on this rank's behalf ([`expect_peer_busy`]).
    static BUSY_UNTIL: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// A peer is about to work for this rank for up to `d` (it reads a large message out of
/// this process's memory, p2p/mod.rs): until then the waits spin (or, oversubscribed,
/// yield) instead of going to sleep, whose wake-up costs tens of microseconds on a
/// virtual machine. At 2 ranks on 2 CPUs a ping-pong of 1 MiB took 105-110 µs one way
/// with the usual phases, 82-87 µs so (MPICH 83, Open MPI 81), 4 MiB 385-395 µs against
/// 335-360.
pub fn expect_peer_busy(d: Duration) {
    let until = Instant::now() + d;
    BUSY_UNTIL.set(Some(BUSY_UNTIL.get().map_or(until, |t| t.max(until))));
}

/// Counts the steps of a long transfer this process made (a pipe segment of a
/// rendezvous message sent or received): a wait that sees it move starts its phases
/// again, so that a stream of many short waits keeps spinning instead of sleeping on
/// each hand-off once the first 20 µs of the whole transfer are over. A 64 MiB
/// non-contiguous message through the pipe at 2 ranks on 2 CPUs took 45 ms with a
/// sleep per segment, 12 ms without.
static STEPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A step of a long transfer was made (see `STEPS`).
#[inline]
pub fn stepped() {
    STEPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Whether the current wait has reached its slow phase (see `SLOW`).
#[inline]
pub fn in_slow_wait() -> bool {
    SLOW.get()
}

/// One wait in progress: call `pause()` each time the awaited condition is false.
pub struct Backoff<'a> {
    arena: &'a Arena,
    me: usize,
    policy: WaitPolicy,
    iter: u32,
    start: Option<Instant>,
    /// Since when every yield returned at once (nobody else ran on this CPU).
    lonely: Option<Instant>,
    /// Once the wait reached its slow phase: what `SLOW` was before (a wait may run
    /// inside another one, from a callback the progress engine calls).
    slow_before: Option<bool>,
    /// `STEPS` at the last pause.
    steps: u64,
    /// Whether the last pause was a yield that ran another task.
    switched: bool,
    /// Whether the wait reached its yield phase.
    yielded: bool,
}

impl Drop for Backoff<'_> {
    fn drop(&mut self) {
        if let Some(before) = self.slow_before {
            SLOW.set(before);
        }
        if !self.policy.oversubscribed {
            super::place::wait_ended(self.switched, self.yielded);
        }
    }
}

impl<'a> Backoff<'a> {
    pub fn new(arena: &'a Arena, me: usize, policy: WaitPolicy) -> Self {
        Backoff {
            arena,
            me,
            policy,
            iter: 0,
            start: None,
            lonely: None,
            slow_before: None,
            steps: STEPS.load(std::sync::atomic::Ordering::Relaxed),
            switched: false,
            yielded: false,
        }
    }

    /// Waits a little. `recheck` is the awaited condition, evaluated again after the
    /// rank has announced that it will sleep (so a publisher cannot be missed).
    pub fn pause(&mut self, recheck: impl FnMut() -> bool) {
        self.pause_for(proto::ANY, recheck)
    }

    /// As [`Backoff::pause`], for a condition that only a publication `p` with
    /// `proto::mark_wakes(want, p)` can make true.
    pub fn pause_for(&mut self, want: u64, recheck: impl FnMut() -> bool) {
        let steps = STEPS.load(std::sync::atomic::Ordering::Relaxed);
        if steps != self.steps {
            self.steps = steps;
            (self.iter, self.start, self.lonely) = (0, None, None);
        }
        self.iter += 1;
        self.switched = false;
        // A few pure spins first: a hand-off between running ranks takes well under a
        // microsecond.
        if self.iter < if self.policy.oversubscribed { 2 } else { 16 } {
            std::hint::spin_loop();
            return;
        }
        let start = *self.start.get_or_insert_with(Instant::now);
        // Reading the clock costs ~20 ns: only every 32nd iteration.
        if !self.policy.oversubscribed && !self.iter.is_multiple_of(32) {
            std::hint::spin_loop();
            return;
        }
        let waited = start.elapsed();
        if let Some(until) = BUSY_UNTIL.get() {
            if Instant::now() >= until {
                BUSY_UNTIL.set(None);
            }
        }
        if BUSY_UNTIL.get().is_some() {
            if self.policy.oversubscribed {
                // SAFETY: sched_yield has no preconditions.
                unsafe {
                    libc::sched_yield();
                }
            } else {
                std::hint::spin_loop();
            }
            return;
        }
        let (spin, yield_, _) = *TUNE;
        if !self.policy.oversubscribed && waited < spin {
            std::hint::spin_loop();
            return;
        }
        if waited < yield_ && !(self.policy.oversubscribed && super::place::crowded()) {
            self.yielded = true;
            let t = Instant::now();
            super::place::look(t);
            // SAFETY: sched_yield has no preconditions.
            unsafe {
                libc::sched_yield();
            }
            // A yield that comes straight back ran nobody: the awaited rank is on
            // another CPU, or will not be run by yielding. Spinning on then only burns
            // a CPU the peer may need (a virtual machine's host may run both virtual
            // CPUs on one core), so after LONELY of such yields, sleep.
            if t.elapsed() >= SWITCHED {
                self.lonely = None;
                self.switched = true;
                return;
            }
            let since = *self.lonely.get_or_insert(t);
            if t.duration_since(since) < TUNE.2 {
                return;
            }
        }
        self.arena.check_job_alive();
        super::place::look(Instant::now());
        // From now on the looks at the awaited condition (the re-check below, the
        // caller's polls after the sleep) may also ask whether it can still come true.
        let before = SLOW.replace(true);
        self.slow_before.get_or_insert(before);
        // The timeout only bounds how long a dead peer goes unnoticed (check_job_alive).
        proto::sleep_unless_for(
            self.arena,
            bell_of(self.arena, self.me),
            want,
            recheck,
            |w, v| futex_wait(w, v, *SLEEP_MAX),
        );
    }
}
