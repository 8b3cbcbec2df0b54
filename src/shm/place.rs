//! Where the ranks run: pinned to a CPU each or left to the scheduler, and how that
//! follows the other processes of the machine (neighbours: another job, a compiler, a
//! browser).
//!
//! - **More ranks than CPUs** (`oversubscribed`): each rank is pinned to the CPU of its
//!   slot (its place among the job's processes) at start-up. Left to itself the kernel
//!   now and then runs three ranks of four on one of two CPUs, and a small
//!   MPI_Allreduce at np 4 then takes 4.6 µs instead of 3.2. But a neighbour on a
//!   pinned rank's CPU takes that CPU for a whole time slice whenever the rank yields
//!   to let its CPU's other rank run: beside one CPU-bound process an np 4 MPI_Allreduce
//!   of 8 bytes took 3.97 ms (4 MiB: 5.0-5.3 ms); unpinned, 7.7 µs (1.2 ms), as the
//!   scheduler may then give the neighbour a CPU of its own; but it need not (two
//!   ranks and the neighbour on one CPU, two on the other, is as stable as pinned),
//!   and what saves the job then is that its waits sleep instead of yielding: a rank
//!   woken by its peer preempts the neighbour, where a yield hands the CPU to whoever
//!   the scheduler picks (14-22 µs and 0.75-1.4 ms pinned, 17 µs and 1.0 ms unpinned;
//!   Open MPI 5.0.11 14-17 µs and 12.3-12.8 ms). So while the machine is crowded
//!   (more runnable tasks than the job's ranks, from /proc/loadavg, sampled at most
//!   every [`LOOK`] by a waiting rank whose mask holds every CPU of the machine: [`CROWDED_ON`] samples in a row to turn it on,
//!   [`CROWDED_OFF`] to turn it off) the ranks are unpinned and their waits skip the
//!   yield phase (shm/wait.rs, [`crowded`]).
//! - **No more ranks than CPUs**: nothing is pinned, so that concurrent jobs do not
//!   pile up on the first CPUs. But a neighbour running on the other CPUs makes it
//!   stable for the scheduler to keep two ranks on one CPU (moving one would not even
//!   out the number of running tasks), and each hand-off between them then costs the
//!   spin phase plus a yield: an np 2 MPI_Allreduce of 8 bytes took 46 µs beside one
//!   CPU-bound process on 2 CPUs, instead of 0.26. A wait that ends right after a
//!   yield that ran another task shows it; after [`CORUN_STREAK`] such waits in a row
//!   the rank moves to its slot's CPU and gives its mask back at once, so that the
//!   ranks have a CPU each and the scheduler stays free to move them (a pinned rank
//!   could not be pulled to a CPU its peer leaves idle and would wait behind the
//!   neighbour): 0.26 µs again.
//!
//! `SHMPI_BIND=none` leaves every placement to the scheduler (a crowded machine still
//! makes an oversubscribed job's waits sleep). The calls affect the
//! thread that makes them (the one that started MPI) and the threads it creates later.
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Waits in a row that ended right after a yield that ran another task, after which a
/// rank that is not oversubscribed moves to its slot's CPU.
const CORUN_STREAK: u32 = 32;
/// The shortest time between two looks at the machine's run queue.
const LOOK: Duration = Duration::from_millis(10);
/// Looks in a row that find the machine crowded before it counts as crowded, and not
/// crowded before it no longer does.
const CROWDED_ON: u32 = 2;
const CROWDED_OFF: u32 = 20;

struct Place {
    /// The number of the job's processes on the machine, from [`start`] (None before
    /// it).
    procs: Option<usize>,
    /// The affinity mask at start-up, and the CPU of the slot in it (None when the mask
    /// has a single CPU).
    mask: Option<(libc::cpu_set_t, usize)>,
    oversubscribed: bool,
    /// Whether the start-up mask holds every online CPU: /proc/loadavg counts the
    /// runnable tasks of the whole machine, which only says something about this
    /// job's CPUs then (not in a container restricted to some of them).
    whole: bool,
    /// The current streak of waits that ended right after a yield that ran another task.
    corun: u32,
    /// Whether the machine counts as crowded, and the looks in a row that disagreed.
    crowded: bool,
    against: u32,
    last_look: Option<Instant>,
}

/// `Place::crowded` of an oversubscribed process, readable without the mutex.
static CROWDED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this oversubscribed process finds the machine crowded (its waits then sleep
/// instead of yielding).
#[inline]
pub fn crowded() -> bool {
    CROWDED.load(std::sync::atomic::Ordering::Relaxed)
}

static PLACE: Mutex<Place> = Mutex::new(Place {
    procs: None,
    mask: None,
    oversubscribed: false,
    whole: false,
    corun: 0,
    crowded: false,
    against: 0,
    last_look: None,
});

fn place() -> std::sync::MutexGuard<'static, Place> {
    PLACE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records this process's `slot` among the `procs` processes of the job on the
/// machine and its affinity mask, and pins it when it is `oversubscribed` (and
/// `SHMPI_BIND` allows).
pub fn start(slot: usize, procs: usize, oversubscribed: bool) {
    let mut p = place();
    p.procs = Some(procs);
    p.oversubscribed = oversubscribed;
    let bind = crate::settings::rank().bind;
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: sched_getaffinity fills a cpu_set_t we own, for the calling thread;
    // sysconf has no preconditions.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut set) != 0 {
            return;
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect();
        if bind && cpus.len() >= 2 {
            p.mask = Some((set, cpus[slot % cpus.len()]));
        }
        p.whole = libc::sysconf(libc::_SC_NPROCESSORS_ONLN) == cpus.len() as libc::c_long;
    }
    if oversubscribed {
        pin(&p, true);
    }
}

/// Pins this process to its slot's CPU (`on`) or gives it its start-up mask back.
fn pin(p: &Place, on: bool) {
    let Some((mask, cpu)) = p.mask else {
        return;
    };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: sched_setaffinity with cpu_set_t values we own, for the calling thread.
    unsafe {
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        libc::sched_setaffinity(0, size, if on { &one } else { &mask });
    }
}

/// A wait of a process that is not oversubscribed ended: `corun`, right after a yield
/// that ran another task; `yielded`, after its spin phase.
pub fn wait_ended(corun: bool, yielded: bool) {
    if !yielded {
        return;
    }
    let mut p = place();
    if !corun {
        p.corun = 0;
        return;
    }
    p.corun += 1;
    if p.corun >= CORUN_STREAK && !p.oversubscribed {
        p.corun = 0;
        // (a running thread leaves a CPU outside its new mask before the call returns)
        pin(&p, true);
        pin(&p, false);
    }
}

/// A waiting rank's look at the machine (at most every [`LOOK`]; `now` is the time):
/// an oversubscribed rank is unpinned while the machine is crowded and pinned again
/// once it is not.
pub fn look(now: Instant) {
    let mut p = place();
    let Some(procs) = p.procs else {
        return;
    };
    if !p.oversubscribed || !p.whole {
        return;
    }
    if p.last_look.is_some_and(|t| now.duration_since(t) < LOOK) {
        return;
    }
    p.last_look = Some(now);
    let Some(running) = runnable() else {
        return;
    };
    if (running > procs) == p.crowded {
        p.against = 0;
        return;
    }
    p.against += 1;
    if p.against >= if p.crowded { CROWDED_OFF } else { CROWDED_ON } {
        p.against = 0;
        p.crowded = !p.crowded;
        CROWDED.store(p.crowded, std::sync::atomic::Ordering::Relaxed);
        if p.mask.is_some() {
            let on = !p.crowded;
            pin(&p, on);
        }
    }
}

/// The number of tasks of the machine that are runnable now (the fourth field of
/// /proc/loadavg, "runnable/total").
fn runnable() -> Option<usize> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    s.split_whitespace().nth(3)?.split('/').next()?.parse().ok()
}
