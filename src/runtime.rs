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
            eprintln!("shmpi: fatal error: {full}");
            fatal_stop()
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

/// MPI_Init / MPI_Init_thread: joins the job mpiexec started (or becomes a singleton)
/// and returns the thread level provided.
pub fn init(required: i32) -> MpiResult<i32> {
    match state() {
        INITIALIZED => {
            return Err(err(
                MPI_ERR_OTHER,
                "MPI is already initialised (MPI_Init called twice)",
            ))
        }
        FINALIZED => {
            return Err(err(
                MPI_ERR_OTHER,
                "MPI cannot be initialised again after MPI_Finalize",
            ))
        }
        _ => {}
    }
    let env = |k: &str| std::env::var(k).ok();
    let (rank, size, arena, singleton) = match (
        env("SHMPI_RANK"),
        env("SHMPI_SIZE"),
        env("SHMPI_ARENA_FD"),
    ) {
        (Some(r), Some(s), Some(fd)) => {
            let bad = |what: &str, v: &str| {
                err(MPI_ERR_OTHER, format!("bad {what}={v:?} in the environment (start the program with shmpi's mpiexec)"))
            };
            let rank: usize = r.parse().map_err(|_| bad("SHMPI_RANK", &r))?;
            let size: usize = s.parse().map_err(|_| bad("SHMPI_SIZE", &s))?;
            let fd: i32 = fd.parse().map_err(|_| bad("SHMPI_ARENA_FD", &fd))?;
            if size == 0 || rank >= size {
                return Err(bad("SHMPI_RANK", &r));
            }
            let arena = Arena::map(fd, size).map_err(|e| {
                err(
                    MPI_ERR_OTHER,
                    format!("cannot map the job's shared arena (fd {fd}): {e}"),
                )
            })?;
            if !arena.validate(size) {
                return Err(err(
                    MPI_ERR_OTHER,
                    format!(
                        "the shared arena behind fd {fd} does not belong to a job of {size} ranks"
                    ),
                ));
            }
            (rank, size, arena, false)
        }
        _ => {
            let fd = crate::shm::create_job_arena(1).map_err(|e| {
                err(
                    MPI_ERR_OTHER,
                    format!("cannot create the shared arena: {e}"),
                )
            })?;
            use std::os::fd::AsRawFd;
            let arena = Arena::map(fd.as_raw_fd(), 1)
                .map_err(|e| err(MPI_ERR_OTHER, format!("cannot map the shared arena: {e}")))?;
            (0, 1, arena, true)
        }
    };
    // SAFETY: getpid has no preconditions.
    arena
        .rank_pid(rank)
        .store(unsafe { libc::getpid() } as u32, Ordering::Relaxed);
    arena
        .rank_state(rank)
        .store(crate::shm::STATE_STARTED, Ordering::Release);
    let provided = required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_SERIALIZED);
    let job = Job {
        rank,
        size,
        arena,
        policy: WaitPolicy::detect(size),
        thread_level: provided,
        main_thread: std::thread::current().id(),
        singleton,
    };
    install_job(job)?;
    crate::p2p::init(size);
    crate::comm::init_predefined(rank, size);
    set_state(INITIALIZED);
    Ok(provided)
}

/// MPI_Finalize: a barrier over MPI_COMM_WORLD, then the rank is marked finalised.
pub fn finalize() -> MpiResult<()> {
    let j = job()?;
    let world = crate::comm::get(MPI_COMM_WORLD)?;
    crate::coll::run(&world, crate::coll::barrier(&world))?;
    j.arena
        .rank_state(j.rank)
        .store(crate::shm::STATE_FINALIZED, Ordering::Release);
    set_state(FINALIZED);
    // SAFETY: fflush(NULL) flushes all C streams.
    unsafe {
        libc::fflush(std::ptr::null_mut());
    }
    Ok(())
}
