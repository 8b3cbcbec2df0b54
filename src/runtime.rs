//! The job this process belongs to and the library's state (before, during and after
//! MPI_Init): the arena, the rank, error codes and their messages, abort.
#![deny(unsafe_code)]
use crate::abi::*;
use crate::error::{err, MpiError, MpiResult};
use crate::shm::wait::WaitPolicy;
use crate::shm::Arena;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// Library state: 0 before MPI_Init, 1 initialised, 2 finalised.
static STATE: AtomicU8 = AtomicU8::new(0);

pub const NOT_INITIALIZED: u8 = 0;
pub const INITIALIZED: u8 = 1;
pub const FINALIZED: u8 = 2;

/// What every rank knows about its job once initialised.
pub struct Job {
    /// This process's slot in the arena (its rank in MPI_COMM_WORLD plus `world_base`).
    pub rank: usize,
    /// The arena's slot count: the universe of processes the job can hold.
    pub size: usize,
    /// This process's MPI_COMM_WORLD: slots `world_base..world_base + world_size`
    /// (base 0 for the ranks mpiexec starts, above for spawned ones).
    pub world_base: usize,
    pub world_size: usize,
    /// MPI_APPNUM: the command index of MPI_Comm_spawn_multiple that started this process.
    pub appnum: usize,
    pub arena: Arena,
    /// How to wait: whether the machine is oversubscribed (it may become so when
    /// processes are spawned).
    pub oversubscribed: std::sync::atomic::AtomicBool,
    pub thread_level: i32,
    pub main_thread: std::thread::ThreadId,
    pub singleton: bool,
}

impl Job {
    /// The current wait policy.
    pub fn policy(&self) -> WaitPolicy {
        WaitPolicy {
            oversubscribed: self.oversubscribed.load(Ordering::Relaxed),
        }
    }
    /// Records that `procs` processes now share the machine (after MPI_Comm_spawn).
    pub fn note_processes(&self, procs: usize) {
        if WaitPolicy::detect(procs).oversubscribed {
            self.oversubscribed.store(true, Ordering::Relaxed);
        }
    }
}

static JOB: OnceLock<Job> = OnceLock::new();

pub fn state() -> u8 {
    STATE.load(Ordering::Acquire)
}

pub fn set_state(s: u8) {
    STATE.store(s, Ordering::Release)
}

/// The job, if MPI is initialised (and not finalised).
pub fn job() -> MpiResult<&'static Job> {
    match state() {
        INITIALIZED => Ok(JOB.get().expect("job")),
        NOT_INITIALIZED => Err(err(
            MPI_ERR_OTHER,
            "called before MPI_Init (or MPI_Init_thread)",
        )),
        _ => Err(err(MPI_ERR_OTHER, "called after MPI_Finalize")),
    }
}

/// The job even after MPI_Finalize (for the launcher protocol).
pub fn job_any() -> Option<&'static Job> {
    JOB.get()
}

pub fn install_job(j: Job) -> MpiResult<&'static Job> {
    JOB.set(j)
        .map_err(|_| err(MPI_ERR_OTHER, "MPI is already initialised"))?;
    Ok(JOB.get().unwrap())
}

/// The rank to name in messages (-1 before MPI_Init).
pub fn rank_for_messages() -> i64 {
    JOB.get()
        .map(|j| (j.rank - j.world_base) as i64)
        .unwrap_or(-1)
}

/// Stops the whole job with `code`: records the abort in the arena (mpiexec reads it to
/// report who aborted and exits with that code) and exits this process.
pub fn abort_job(code: i32) -> ! {
    abort_job_kind(code, crate::shm::ABORT_CALLED)
}

/// Stops the whole job after a fatal error (the error handler MPI_ERRORS_ARE_FATAL).
pub fn fatal_stop() -> ! {
    abort_job_kind(1, crate::shm::ABORT_FATAL_ERROR)
}

fn abort_job_kind(code: i32, kind: u32) -> ! {
    if let Some(j) = JOB.get() {
        j.arena.record_abort_kind(j.rank, code, kind);
    }
    crate::process::exit_process(if code & 0xff == 0 { 1 } else { code & 0xff })
}

/// Called while waiting: if the job is being torn down (another rank aborted, or
/// mpiexec is gone), stop.
pub fn check_job_alive() {
    if let Some(j) = JOB.get() {
        j.arena.check_job_alive();
    }
}

/// The error code that names error `e` of `func` with its full message (which it also
/// returns): "MPI_Recv: ... [MPI_ERR_OTHER, rank 0]".
pub fn error_code(func: &str, e: &MpiError) -> (i32, String) {
    let rank = rank_for_messages();
    let who = if rank >= 0 {
        format!("rank {rank}")
    } else {
        "process".to_string()
    };
    let full = format!(
        "{func}: {} [{}, {who}]",
        e.msg,
        crate::error::class_name(e.class)
    );
    (crate::error::record(e.class, full.clone()), full)
}

thread_local! {
    /// The communicator whose error handler the current call's error goes to instead of
    /// the call's own (see [`raise_on`]).
    static RAISE_ON: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
}

/// Makes the current call's error go to communicator `comm`'s error handler: MPI_Wait,
/// MPI_Test and the other completion calls take no communicator, and a request's error
/// is raised on the communicator of the call that started it (MPI-3.1 section 8.3).
pub fn raise_on(comm: Option<i32>) {
    if let Some(c) = comm {
        RAISE_ON_USED.store(true, std::sync::atomic::Ordering::Relaxed);
        RAISE_ON.with(|r| r.set(Some(c)));
    }
}

/// Whether any thread ever called [`raise_on`] (until then no call has anything to take).
static RAISE_ON_USED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Takes what [`raise_on`] set during the current call.
pub fn take_raise_on() -> Option<i32> {
    if !RAISE_ON_USED.load(std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    RAISE_ON.with(|r| r.take())
}
