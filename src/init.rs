//! MPI_Init and MPI_Finalize: joins the job mpiexec started (or becomes a singleton),
//! sets up every layer (the arena, point-to-point, the predefined communicators, the
//! parent of a spawned job) and takes them down in order.
#![deny(unsafe_code)]
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::runtime::{install_job, job, set_state, state, Job, FINALIZED, INITIALIZED};
use crate::shm::wait::WaitPolicy;
use crate::shm::Arena;
use std::sync::atomic::Ordering;

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
                let mut arena = arena;
                arena.launched = true;
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
    arena
        .rank_pid(rank)
        .store(std::process::id(), Ordering::Release);
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
    crate::shm::place::start(rank, procs, oversubscribed);
    let generation = num("SHMPI_GENERATION", 0)? as u64;
    crate::p2p::init(slots, base + size, generation);
    crate::progress::install(crate::progress::Hooks {
        engine: crate::p2p::progress,
        pending: &[crate::coll::nb::poll_all, crate::rma::serve::poll],
    });
    crate::comm::init_predefined(rank, base, size, world_ctx, slots);
    if let Some((ctx, group)) = parent {
        crate::spawn::init_parent(ctx, group)?;
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
    crate::attr::delete_all(&me)?;
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
    crate::process::flush_c_stdio();
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The predefined attributes of MPI_COMM_WORLD (MPI-3.1 section 8.1.2)

use std::sync::atomic::AtomicI32;

static TAG_UB: AtomicI32 = AtomicI32::new(crate::args::TAG_UB);
static HOST: AtomicI32 = AtomicI32::new(MPI_PROC_NULL);
static IO: AtomicI32 = AtomicI32::new(MPI_ANY_SOURCE);
static WTIME_IS_GLOBAL: AtomicI32 = AtomicI32::new(1);
static APPNUM: AtomicI32 = AtomicI32::new(0);
static UNIVERSE_SIZE: AtomicI32 = AtomicI32::new(1);
// (at least MPI_ERR_LASTCODE, the standard's rule)
static LASTUSEDCODE: AtomicI32 = AtomicI32::new(MPI_ERR_LASTCODE);

/// The value of attribute `key` on communicator `c` (MPI_Comm_get_attr): for a
/// predefined key the address of its int, which lives for the whole process as the
/// standard requires; for a user key the value set, if any.
pub fn comm_attr(c: &crate::comm::Comm, key: i32) -> MpiResult<Option<usize>> {
    let (size, appnum) = job()
        .map(|j| (j.size as i32, j.appnum as i32))
        .unwrap_or((1, 0));
    UNIVERSE_SIZE.store(size, Ordering::Relaxed);
    APPNUM.store(appnum, Ordering::Relaxed);
    let last = crate::error::last_dynamic().unwrap_or(MPI_ERR_LASTCODE);
    LASTUSEDCODE.store(last, Ordering::Relaxed);
    let v = match key {
        MPI_TAG_UB => &TAG_UB,
        MPI_HOST => &HOST,
        MPI_IO => &IO,
        MPI_WTIME_IS_GLOBAL => &WTIME_IS_GLOBAL,
        MPI_APPNUM => &APPNUM,
        MPI_UNIVERSE_SIZE => &UNIVERSE_SIZE,
        MPI_LASTUSEDCODE => &LASTUSEDCODE,
        _ if crate::attr::is_user_keyval(key) => return crate::attr::get(c, key),
        MPI_KEYVAL_INVALID => return Err(err(MPI_ERR_KEYVAL, "comm_keyval is MPI_KEYVAL_INVALID")),
        _ => {
            return Err(err(
                MPI_ERR_KEYVAL,
                format!("comm_keyval={key:#x} is not a valid attribute key"),
            ))
        }
    };
    Ok(Some(v.as_ptr() as usize))
}

/// MPI_Abort: says who called it and stops the job with `errorcode`.
pub fn abort(errorcode: i32) -> ! {
    let r = crate::runtime::rank_for_messages();
    crate::process::say(&format!(
        "shmpi: rank {r} called MPI_Abort with error code {errorcode}"
    ));
    crate::runtime::abort_job(errorcode)
}

/// The MPI level whose API mpi.h declares.
pub const VERSION: (i32, i32) = (3, 1);

/// What MPI_Get_library_version returns.
pub fn library_version() -> String {
    format!(
        "shmpi {} (MPI {}.{}, MPICH ABI; shared-memory ranks on one machine)",
        env!("CARGO_PKG_VERSION"),
        VERSION.0,
        VERSION.1
    )
}
