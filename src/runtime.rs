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
    oversubscribed: std::sync::atomic::AtomicBool,
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
    exit_process(if code & 0xff == 0 { 1 } else { code & 0xff })
}

/// The status of the exit in progress, or -1.
static EXITING: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Ends this process with `status`, C stdio flushed (programs print with printf). The
/// first call exits normally, running the program's atexit handlers; such a handler may
/// call MPI again (an MPI_Finalize cleanup, as MPICH's test harness registers), and if
/// that call ends in another request to exit (the job is being torn down), the process
/// ends at once with the first call's status instead of entering exit() again.
pub fn exit_process(status: i32) -> ! {
    // SAFETY: fflush(NULL) flushes all C streams.
    unsafe {
        libc::fflush(std::ptr::null_mut());
    }
    match EXITING.compare_exchange(-1, status, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => std::process::exit(status),
        // SAFETY: _exit ends the process without running anything; always sound.
        Err(first) => unsafe { libc::_exit(first) },
    }
}

/// Writes `line` and a newline to standard error in one write, so that the messages of
/// ranks that fail at the same time do not interleave.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// Called while waiting: if the job is being torn down (another rank aborted), stop.
pub fn check_job_alive() {
    if let Some(j) = JOB.get() {
        if j.arena.abort_record().is_some() {
            // mpiexec stops every rank; leave quietly with a failure status.
            exit_process(1);
        }
        // SAFETY: getppid has no preconditions.
        if !j.singleton && unsafe { libc::getppid() } == 1 {
            exit_process(1);
        }
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
        RAISE_ON.with(|r| r.set(Some(c)));
    }
}

/// Takes what [`raise_on`] set during the current call.
pub fn take_raise_on() -> Option<i32> {
    RAISE_ON.with(|r| r.take())
}

/// Hands an error to the error handler of `comm` (or of MPI_COMM_WORLD) and returns the
/// error code the entry point returns.
pub fn handle_error(func: &str, comm: i32, e: MpiError) -> i32 {
    let (code, full) = error_code(func, &e);
    let eh = if state() == INITIALIZED {
        crate::comm::errhandler_for_error(comm)
    } else {
        MPI_ERRORS_ARE_FATAL
    };
    match eh {
        MPI_ERRORS_RETURN => code,
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT => {
            say(&format!("shmpi: fatal error: {full}"));
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
    // What mpiexec passed (settings.rs `Startup`), by variable name.
    let st = crate::settings::startup();
    let env = |k: &str| -> Option<String> {
        let v = match k {
            "SHMPI_RANK" => &st.rank,
            "SHMPI_SIZE" => &st.size,
            "SHMPI_ARENA_FD" => &st.arena_fd,
            "SHMPI_SLOTS" => &st.slots,
            "SHMPI_NP" => &st.np,
            "SHMPI_GENERATION" => &st.generation,
            "SHMPI_WORLD_BASE" => &st.world_base,
            "SHMPI_WORLD_CTX" => &st.world_ctx,
            "SHMPI_PARENT_CTX" => &st.parent_ctx,
            "SHMPI_PARENT_GROUP" => &st.parent_group,
            "SHMPI_APPNUM" => &st.appnum,
            _ => unreachable!("{k} is not a start-up variable"),
        };
        v.clone()
    };
    let bad = |what: &str, v: &str| {
        err(
            MPI_ERR_OTHER,
            format!("bad {what}={v:?} in the environment (start the program with shmpi's mpiexec)"),
        )
    };
    let num = |k: &str, default: usize| -> MpiResult<usize> {
        match env(k) {
            Some(v) => v.parse().map_err(|_| bad(k, &v)),
            None => Ok(default),
        }
    };
    let (rank, size, arena, singleton) =
        match (env("SHMPI_RANK"), env("SHMPI_SIZE"), env("SHMPI_ARENA_FD")) {
            (Some(r), Some(s), Some(fd)) => {
                let rank: usize = r.parse().map_err(|_| bad("SHMPI_RANK", &r))?;
                let size: usize = s.parse().map_err(|_| bad("SHMPI_SIZE", &s))?;
                let fd: i32 = fd.parse().map_err(|_| bad("SHMPI_ARENA_FD", &fd))?;
                let slots = num("SHMPI_SLOTS", size)?;
                let np = num("SHMPI_NP", size)?;
                if size == 0 || rank >= slots || size > slots {
                    return Err(bad("SHMPI_RANK", &r));
                }
                let arena = Arena::map(fd, slots, np).map_err(|e| {
                    err(
                        MPI_ERR_OTHER,
                        format!("cannot map the job's shared arena (fd {fd}): {e}"),
                    )
                })?;
                if !arena.validate() {
                    return Err(err(
                        MPI_ERR_OTHER,
                        format!(
                        "the shared arena behind fd {fd} does not belong to a job of {slots} slots"
                    ),
                    ));
                }
                (rank, size, arena, false)
            }
            _ => {
                let fd =
                    crate::shm::create_job_arena(1, 1, crate::settings::job()).map_err(|e| {
                        err(
                            MPI_ERR_OTHER,
                            format!("cannot create the shared arena: {e}"),
                        )
                    })?;
                use std::os::fd::AsRawFd;
                let arena = Arena::map(fd.as_raw_fd(), 1, 1)
                    .map_err(|e| err(MPI_ERR_OTHER, format!("cannot map the shared arena: {e}")))?;
                (0, 1, arena, true)
            }
        };
    // The job's settings are the arena's (its creator's), whatever this process's
    // environment says.
    if !crate::settings::adopt_job(arena.settings()) {
        return Err(err(
            MPI_ERR_OTHER,
            "the job's settings were read before MPI_Init with other values than the job's arena holds",
        ));
    }
    // A spawned job's MPI_COMM_WORLD is slots base..base+size on its own channel.
    let base = num("SHMPI_WORLD_BASE", 0)?;
    let world_ctx = num("SHMPI_WORLD_CTX", crate::shm::WORLD_CHANNEL)?;
    let slots = arena.lay.n;
    if base + size > slots || rank < base || rank >= base + size || world_ctx >= crate::shm::NCHAN {
        return Err(bad("SHMPI_WORLD_BASE", &base.to_string()));
    }
    let parent = match (env("SHMPI_PARENT_CTX"), env("SHMPI_PARENT_GROUP")) {
        (Some(c), Some(g)) => {
            let ctx: usize = c.parse().map_err(|_| bad("SHMPI_PARENT_CTX", &c))?;
            let group = g
                .split(',')
                .map(|x| x.parse::<usize>().ok().filter(|&v| v < slots))
                .collect::<Option<Vec<usize>>>()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| bad("SHMPI_PARENT_GROUP", &g))?;
            Some((ctx, group))
        }
        _ => None,
    };
    let appnum = num("SHMPI_APPNUM", 0)?;
    // SAFETY: getpid has no preconditions.
    arena
        .rank_pid(rank)
        .store(unsafe { libc::getpid() } as u32, Ordering::Release);
    arena
        .rank_state(rank)
        .store(crate::shm::STATE_STARTED, Ordering::Release);
    let provided = required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_SERIALIZED);
    // Processes sharing the machine: those mpiexec started first, and the spawned ones
    // up to and including this world.
    let procs = arena.lay.np.max(base + size);
    let job = Job {
        rank,
        size: slots,
        world_base: base,
        world_size: size,
        appnum,
        arena,
        oversubscribed: std::sync::atomic::AtomicBool::new(
            WaitPolicy::detect(procs).oversubscribed,
        ),
        thread_level: provided,
        main_thread: std::thread::current().id(),
        singleton,
    };
    let oversubscribed = job.policy().oversubscribed;
    install_job(job)?;
    crate::shm::wait::bind_oversubscribed(rank, oversubscribed);
    let generation = num("SHMPI_GENERATION", 0)? as u64;
    crate::p2p::init(slots, base + size, generation);
    crate::comm::init_predefined(rank, base, size, world_ctx, slots);
    if let Some((ctx, group)) = parent {
        crate::comm::spawn::init_parent(ctx, group)?;
    }
    set_state(INITIALIZED);
    Ok(provided)
}

/// MPI_Finalize: waits until every rank of MPI_COMM_WORLD has entered it too, then
/// marks the rank finalised.
///
/// The wait is a rendezvous of its own (a count of the ranks that entered MPI_Finalize
/// in the world channel's control line), not a step of MPI_COMM_WORLD's channel: a
/// step there could be taken as a step of a collective another rank made that nobody
/// else matched, which would end that rank's collective wrongly and leave its
/// MPI_Finalize waiting forever. A rank in MPI_Finalize takes no collective step again,
/// so a collective that waits for it ends with an error instead (coll/mod.rs
/// `Chan::waits_for`): it is woken here for that.
pub fn finalize() -> MpiResult<()> {
    let j = job()?;
    // First the equivalent of MPI_Comm_free on MPI_COMM_SELF: its attributes' delete
    // callbacks run while MPI is still initialised (MPI-3.1 section 8.7.1), the last set
    // first.
    let me = crate::comm::get(MPI_COMM_SELF)?;
    crate::comm::attr::delete_all(&me)?;
    let world = crate::comm::get(MPI_COMM_WORLD)?;
    let a = &j.arena;
    a.rank_state(j.rank)
        .store(crate::shm::STATE_FINALIZING, Ordering::Release);
    let entered = a.finalizing_count(world.ctx);
    entered.fetch_add(1, Ordering::AcqRel);
    // Wake every sleeping rank of the job: the other ranks of this world that wait here,
    // and any rank (of this world or, through an intercommunicator, another) whose
    // collective waits for this one and can now never complete.
    for r in 0..a.lay.n {
        if r != j.rank {
            crate::shm::wait::notify(a, r);
        }
    }
    // Point-to-point traffic goes on meanwhile (a send this rank started may still be
    // needed by a receive of a rank that has not arrived); a message of rendezvous size
    // sent to this rank and not received is refused, so that its send fails instead of
    // waiting forever.
    let n = j.world_size as u64;
    crate::p2p::wait_until(|| {
        crate::p2p::refuse_unmatched();
        crate::p2p::publish_quiet();
        entered.load(Ordering::Acquire) >= n
    })?;
    a.rank_state(j.rank)
        .store(crate::shm::STATE_FINALIZED, Ordering::Release);
    set_state(FINALIZED);
    // SAFETY: fflush(NULL) flushes all C streams.
    unsafe {
        libc::fflush(std::ptr::null_mut());
    }
    Ok(())
}
