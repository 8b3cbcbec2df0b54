//! The process's MPI state: initialisation, the job arena, error handling, abort.
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
    pub rank: usize,
    pub size: usize,
    pub arena: Arena,
    pub policy: WaitPolicy,
    pub thread_level: i32,
    pub main_thread: std::thread::ThreadId,
    pub singleton: bool,
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
    JOB.get().map(|j| j.rank as i64).unwrap_or(-1)
}

/// Stops the whole job with `code`: records the abort in the arena (mpiexec reads it to
/// report who aborted and exits with that code) and exits this process.
pub fn abort_job(code: i32) -> ! {
    if let Some(j) = JOB.get() {
        j.arena.record_abort(j.rank, code);
    }
    // Flush C stdio too: programs print with printf.
    // SAFETY: fflush(NULL) flushes all C streams.
    unsafe {
        libc::fflush(std::ptr::null_mut());
    }
    std::process::exit(if code == 0 { 1 } else { code & 0xff });
}

/// Called while waiting: if the job is being torn down (another rank aborted), stop.
pub fn check_job_alive() {
    if let Some(j) = JOB.get() {
        if j.arena.abort_record().is_some() {
            // SAFETY: fflush(NULL) flushes all C streams.
            unsafe {
                libc::fflush(std::ptr::null_mut());
            }
            // mpiexec stops every rank; leave quietly with a failure status.
            std::process::exit(1);
        }
        // SAFETY: getppid has no preconditions.
        if !j.singleton && unsafe { libc::getppid() } == 1 {
            std::process::exit(1);
        }
    }
}

/// Hands an error to the error handler of `comm` (or of MPI_COMM_WORLD) and returns the
/// error code the entry point returns.
pub fn handle_error(func: &str, comm: i32, e: MpiError) -> i32 {
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
    let code = crate::error::record(e.class, full.clone());
    let eh = if state() == INITIALIZED {
        crate::comm::errhandler_for_error(comm)
    } else {
        MPI_ERRORS_ARE_FATAL
    };
    match eh {
        MPI_ERRORS_RETURN => code,
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT => {
            eprintln!("shmpi: {who}: fatal error: {full}");
            abort_job(1)
        }
        user => {
            let c = if state() == INITIALIZED && crate::comm::is_valid(comm) {
                comm
            } else {
                MPI_COMM_WORLD
            };
            crate::comm::call_user_errhandler(user, c, code);
            code
        }
    }
}
