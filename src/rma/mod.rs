//! One-sided communication (MPI 4.1 chapter 12): windows, their memory and
//! attributes (this file), synchronisation (sync.rs) and the data moves (ops.rs).
//!
//! Every window has a private duplicate of its communicator (its collectives: creation,
//! fence, free) and one shared mapping (mem.rs) with its control block:
//! - a 64-byte line per member: its lock word (bit 31 exclusive, the low bits the
//!   number of shared holders), how many wait for that lock, the accumulate mutex of
//!   its memory, how many wait for that, in which parts of it hardware atomics are on
//!   and the two counters that decide when they go on and off (atomic.rs);
//! - a 64-byte line per member with its announcement of a hardware atomic in flight
//!   (atomic.rs);
//! - the post/complete counters of the PSCW epochs, `n x n` u32 each;
//! - for a dynamic window, each member's table of attached regions (a seqlock);
//! - for MPI_Win_allocate(_shared), every member's window memory.
//!
//! Window memory is reached in one of three ways. Memory in the mapping (allocate and
//! allocate_shared) is mapped by every member, so a Put is a copy into it and an
//! accumulate a kernel call on it. Memory of MPI_Win_create and of dynamic windows is
//! the program's own: another member's is read and written with single-copy
//! cross-process copies (shm/peer.rs), one's own directly; where the system refuses
//! those copies (or `SHMPI_DIRECT=0`), each member serves the others' accesses to its
//! memory from the progress engine (serve.rs). Every operation is complete when its
//! call returns, so flushes only order memory, and a passive-target epoch on mapped
//! memory needs nothing of the target process.
//!
//! The calls that need no wait have a fast path (ffi/c/rma.rs, before the entry's
//! bookkeeping): the window looked up last is cached (cache.rs, [`with_cached`]), the
//! open passive-target epochs are atomics (sync.rs `Open`), and a Put, Get or
//! accumulate of one predefined contiguous type to mapped memory is a copy or a kernel
//! call (ops.rs `put_get_lean`, `acc_lean`). Everything else, and every error, takes
//! the full path.
#![deny(unsafe_code)]
pub mod atomic;
mod cache;
pub mod mem;
pub mod ops;
pub mod serve;
pub mod sync;

use crate::abi::*;
use crate::attr::Attrs;
use crate::comm::info::Entries;
use crate::comm::Comm;
use crate::error::{err, MpiResult};
use mem::Mapping;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Bytes of a member's line in the control block.
const LINE: usize = 64;
/// Offsets in a line.
const L_LOCK: usize = 0;
const L_LOCK_WAITERS: usize = 4;
const L_ACC: usize = 8;
const L_ACC_WAITERS: usize = 12;
const L_HW: usize = 16;
const L_SINGLES: usize = 24;
const L_DEBT: usize = 28;
/// Where in a page window memory of MPI_Win_allocate(_shared) starts (see `create`).
const ALIAS_SKEW: usize = 2048;
/// Regions a member of a dynamic window may have attached at once.
pub const DYN_MAX: usize = 1023;
/// Bytes of a member's attach table: sequence word, count, (base, size) pairs.
const DYN_BYTES: usize = 16 + 16 * DYN_MAX;

/// Where a member's window memory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Addressable by this process (its own memory, or the shared mapping).
    Here,
    /// In process `pid`, reached by cross-process copies.
    Proc(i32),
    /// In another process, reached through that process (serve.rs).
    Served,
}

/// A member's window memory as this process reaches it.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub place: Place,
    /// Its base address (in this process for `Here`), 0 for a dynamic window.
    pub base: usize,
    pub size: usize,
    pub disp_unit: usize,
}

pub struct Win {
    pub handle: i32,
    /// The window's own duplicate of the communicator it was made on.
    pub comm: Arc<Comm>,
    pub flavor: i32,
    pub targets: Vec<Target>,
    pub map: Mapping,
    /// Offset of the control block's announcement lines and counters and tables in
    /// `map`.
    busy_off: usize,
    post_off: usize,
    done_off: usize,
    dyn_off: usize,
    pub errhandler: AtomicI32,
    pub name: Mutex<String>,
    pub attrs: Attrs,
    info: Mutex<Entries>,
    pub state: Mutex<sync::State>,
    /// The passive-target epochs of `state`, readable without its mutex.
    pub open: sync::Open,
    /// For a window on the processes' own memory that its members serve (serve.rs).
    pub mailboxes: Option<serve::Mailboxes>,
    /// What MPI_Win_get_attr points at for the predefined keys.
    size_attr: Box<isize>,
    disp_unit_attr: Box<i32>,
    flavor_attr: Box<i32>,
    model_attr: Box<i32>,
    /// Set by MPI_Win_free.
    freed: AtomicBool,
    /// Every member registered for the heavy fence of shm/fence.rs (atomic.rs may
    /// turn hardware atomics off again).
    pub heavy: bool,
}

impl Win {
    pub fn n(&self) -> usize {
        self.targets.len()
    }
    pub fn me(&self) -> usize {
        self.comm.rank
    }
    #[inline]
    fn line(&self, t: usize) -> usize {
        t * LINE
    }
    pub fn lock_word(&self, t: usize) -> &std::sync::atomic::AtomicU32 {
        self.map.u32_at(self.line(t) + L_LOCK)
    }
    pub fn lock_waiters(&self, t: usize) -> &std::sync::atomic::AtomicU32 {
        self.map.u32_at(self.line(t) + L_LOCK_WAITERS)
    }
    pub fn acc_word(&self, t: usize) -> &std::sync::atomic::AtomicU32 {
        self.map.u32_at(self.line(t) + L_ACC)
    }
    pub fn acc_waiters(&self, t: usize) -> &std::sync::atomic::AtomicU32 {
        self.map.u32_at(self.line(t) + L_ACC_WAITERS)
    }
    /// Whether hardware atomics are on for member `t`'s memory (atomic.rs).
    #[inline]
    pub fn hw_word(&self, t: usize) -> &std::sync::atomic::AtomicU64 {
        self.map.u64_at(self.line(t) + L_HW)
    }
    /// One-element operations on member `t`'s memory under its accumulate mutex
    /// while hardware atomics were off there (atomic.rs; written under the mutex).
    pub fn singles(&self, t: usize) -> &std::sync::atomic::AtomicU32 {
        self.map.u32_at(self.line(t) + L_SINGLES)
    }
    /// Elements updated one at a time under member `t`'s accumulate mutex since its
    /// hardware atomics went on (atomic.rs; written under the mutex).
    pub fn debt(&self, t: usize) -> &std::sync::atomic::AtomicU32 {
        self.map.u32_at(self.line(t) + L_DEBT)
    }
    /// Member `o`'s announcement: 1 + the member whose memory it updates with a
    /// hardware atomic outside the accumulate mutex, 0 when none (atomic.rs).
    pub fn busy_word(&self, o: usize) -> &std::sync::atomic::AtomicU32 {
        self.map.u32_at(self.busy_off + o * LINE)
    }
    /// How many times target `t` posted an exposure epoch to origin `o`.
    pub fn post_count(&self, t: usize, o: usize) -> &std::sync::atomic::AtomicU32 {
        self.map.u32_at(self.post_off + 4 * (t * self.n() + o))
    }
    /// How many times origin `o` completed an access epoch to target `t`.
    pub fn done_count(&self, t: usize, o: usize) -> &std::sync::atomic::AtomicU32 {
        self.map.u32_at(self.done_off + 4 * (t * self.n() + o))
    }
    fn dyn_table(&self, t: usize) -> usize {
        self.dyn_off + t * DYN_BYTES
    }
    /// The world rank of member `t` (for waking it).
    pub fn world(&self, t: usize) -> usize {
        self.comm.group[t]
    }
    pub fn local(&self) -> Target {
        self.targets[self.me()]
    }
    /// Whether MPI_Win_free has freed it.
    pub fn is_freed(&self) -> bool {
        self.freed.load(Ordering::Relaxed)
    }
    /// The dynamic window's regions member `t` has attached now: (base, size).
    pub fn attached(&self, t: usize) -> Vec<(usize, usize)> {
        let at = self.dyn_table(t);
        loop {
            let s0 = self.map.u64_at(at).load(Ordering::Acquire);
            if s0 % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let n = (self.map.u64_at(at + 8).load(Ordering::Relaxed) as usize).min(DYN_MAX);
            let v: Vec<(usize, usize)> = (0..n)
                .map(|i| {
                    let e = at + 16 + 16 * i;
                    (
                        self.map.u64_at(e).load(Ordering::Relaxed) as usize,
                        self.map.u64_at(e + 8).load(Ordering::Relaxed) as usize,
                    )
                })
                .collect();
            std::sync::atomic::fence(Ordering::Acquire);
            if self.map.u64_at(at).load(Ordering::Relaxed) == s0 {
                return v;
            }
        }
    }
    /// Replaces this member's attach table (it alone writes it).
    fn publish_attached(&self, v: &[(usize, usize)]) {
        let at = self.dyn_table(self.me());
        let seq = self.map.u64_at(at);
        let s = seq.load(Ordering::Relaxed);
        seq.store(s + 1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        for (i, &(b, l)) in v.iter().enumerate() {
            let e = at + 16 + 16 * i;
            self.map.u64_at(e).store(b as u64, Ordering::Relaxed);
            self.map.u64_at(e + 8).store(l as u64, Ordering::Relaxed);
        }
        self.map
            .u64_at(at + 8)
            .store(v.len() as u64, Ordering::Relaxed);
        seq.store(s + 2, Ordering::Release);
    }
}

// ------------------------------------------------------------------------ the table

static TABLE: RwLock<Vec<Option<Arc<Win>>>> = RwLock::new(Vec::new());

/// Runs `f` on window `h` when it is the one looked up last (the fast paths of the
/// communication and synchronisation calls, cache.rs); false when it is not, or when
/// `f` says so.
pub fn with_cached(h: i32, f: impl FnOnce(&Win) -> bool) -> bool {
    cache::with(h, f)
}

/// Looks a window handle up; MPI_ERR_WIN names the value otherwise.
pub fn get(h: i32) -> MpiResult<Arc<Win>> {
    let found =
        direct_index(h, OBJ_WIN).and_then(|i| TABLE.read().unwrap().get(i).cloned().flatten());
    match found {
        Some(w) => {
            if !cache::holds(&w) {
                cache::set(w.clone());
            }
            Ok(w)
        }
        None if h == MPI_WIN_NULL => Err(err(MPI_ERR_WIN, "win is MPI_WIN_NULL")),
        None => Err(err(
            MPI_ERR_WIN,
            format!("win={h:#x} is not a window (never created, or freed)"),
        )),
    }
}

/// The error handler for an error raised in a call on window `h`: its own, or
/// MPI_COMM_WORLD's when `h` is not a window.
pub fn errhandler_for_error(h: i32) -> Option<i32> {
    get(h).ok().map(|w| w.errhandler.load(Ordering::Relaxed))
}

/// Number of windows not yet freed (for leak checks).
pub fn live_windows() -> usize {
    TABLE.read().unwrap().iter().filter(|w| w.is_some()).count()
}

fn register(make: impl FnOnce(i32) -> Win) -> Arc<Win> {
    let mut t = TABLE.write().unwrap();
    let idx = crate::comm::free_slot(&mut t);
    let w = Arc::new(make(direct_handle(OBJ_WIN, idx)));
    t[idx] = Some(w.clone());
    w
}

// ------------------------------------------------------------------------ creation

/// What each member brings to a window's creation.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub flavor: i32,
    /// Bytes of window memory (0 for a dynamic window).
    pub size: usize,
    pub disp_unit: usize,
    /// MPI_Win_create: the memory's address.
    pub base: usize,
}

/// The info keys a window answers MPI_Win_get_info with, given those it was made with.
fn window_info(given: &Entries, flavor: i32) -> Entries {
    let val = |k: &str, d: &str| {
        given
            .iter()
            .rev()
            .find(|(kk, _)| kk == k)
            .map_or(d.to_string(), |(_, v)| v.clone())
    };
    let mut e = vec![
        ("no_locks".to_string(), val("no_locks", "false")),
        (
            "accumulate_ordering".to_string(),
            val("accumulate_ordering", "rar,raw,war,waw"),
        ),
        (
            "accumulate_ops".to_string(),
            val("accumulate_ops", "same_op_no_op"),
        ),
        ("same_size".to_string(), val("same_size", "false")),
        ("same_disp_unit".to_string(), val("same_disp_unit", "false")),
    ];
    if flavor == MPI_WIN_FLAVOR_SHARED {
        e.push((
            "alloc_shared_noncontig".to_string(),
            val("alloc_shared_noncontig", "false"),
        ));
    }
    e
}

/// The members' values of one step of the parent's channel: up to 4 words each.
pub fn exchange(comm: &Comm, vals: &[u64]) -> MpiResult<Vec<[u64; 4]>> {
    let mut mine = [0u64; 4];
    mine[..vals.len()].copy_from_slice(vals);
    if comm.chan_members.len() == 1 {
        return Ok(vec![mine]);
    }
    let mut out = Vec::new();
    crate::coll::run(comm, async {
        let ch = crate::coll::Chan::open(comm).await?;
        ch.put_args(&mine);
        ch.step().await?;
        out = (0..ch.n)
            .map(|i| std::array::from_fn(|k| ch.peer_args(i, k)))
            .collect();
        Ok(())
    })?;
    Ok(out)
}

/// Agrees on whether every member got this far without an error: the first member's
/// error (its own for itself, a message naming it for the others) if not.
fn agree_ok(comm: &Comm, mine: MpiResult<()>, what: &str) -> MpiResult<()> {
    let code = match &mine {
        Ok(()) => 0,
        Err(e) => e.class as u64 + 1,
    };
    let all = exchange(comm, &[code])?;
    mine?;
    match all.iter().position(|v| v[0] != 0) {
        None => Ok(()),
        Some(r) => Err(err(
            (all[r][0] - 1) as i32,
            format!("{what} failed on rank {r} of the communicator (its own error says why); no window was made"),
        )),
    }
}

static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Makes the shared mapping of `len` bytes on every member of `comm` (collective).
fn shared_mapping(comm: &Comm, len: usize) -> MpiResult<Mapping> {
    let job = crate::runtime::job()?;
    let no_mem =
        |e: std::io::Error| err(MPI_ERR_NO_MEM, format!("window memory of {len} bytes: {e}"));
    let pid = std::process::id() as u64;
    if comm.chan_members.len() == 1 {
        return Mapping::create(len)
            .map(|(m, fd)| {
                Mapping::close_fd(fd);
                m
            })
            .map_err(no_mem);
    }
    let leader = comm.rank == 0;
    // First way: the creator's memfd through /proc.
    let made = if leader {
        Some(Mapping::create(len))
    } else {
        None
    };
    let (fd, ok) = match &made {
        Some(Ok((_, fd))) => (*fd as u64, 1),
        _ => (0, 0),
    };
    let v = exchange(comm, &[pid, fd, ok])?;
    if v[0][2] == 0 {
        let e = match made {
            Some(Err(e)) => no_mem(e),
            _ => err(
                MPI_ERR_NO_MEM,
                format!("window memory of {len} bytes: rank 0 could not create it"),
            ),
        };
        return Err(e);
    }
    let mut map = match made {
        Some(Ok((m, _))) => Ok(m),
        _ => Mapping::open_fd(v[0][0] as i32, v[0][1] as i32, len),
    };
    let opened = exchange(comm, &[map.is_ok() as u64])?;
    if leader {
        Mapping::close_fd(v[0][1] as i32);
    }
    if opened.iter().all(|o| o[0] == 1) {
        return map.map_err(no_mem);
    }
    // Second way: a named object, unlinked once every member has it.
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    if leader {
        map = Mapping::create_named(len, pid as i32, seq);
    }
    let v = exchange(comm, &[pid, seq, map.is_ok() as u64])?;
    if !leader && v[0][2] == 1 {
        map = Mapping::open_named(len, v[0][0] as i32, v[0][1]);
    }
    let opened = exchange(comm, &[map.is_ok() as u64])?;
    if leader {
        Mapping::unlink(pid as i32, seq);
    }
    let _ = job;
    match opened.iter().position(|o| o[0] != 1) {
        None => map.map_err(no_mem),
        Some(r) => Err(err(
            MPI_ERR_NO_MEM,
            format!("window memory of {len} bytes: rank {r} could not map it"),
        )),
    }
}

fn align(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

/// Creates a window over `parent` (collective): `spec` is this member's part; `info`
/// the info entries given. Returns the window (for MPI_Win_allocate(_shared), its
/// local memory is `targets[me].base`).
pub fn create(parent: &Arc<Comm>, spec: Spec, info: Entries) -> MpiResult<Arc<Win>> {
    if parent.is_inter() {
        return Err(err(
            MPI_ERR_COMM,
            "comm is an intercommunicator; windows are made on intracommunicators",
        ));
    }
    let job = crate::runtime::job()?;
    let noncontig = info
        .iter()
        .rev()
        .find(|(k, _)| k == "alloc_shared_noncontig")
        .is_some_and(|(_, v)| v == "true");
    // Every member learns every member's size, displacement unit and base; and whether
    // they agree on the flavor (a window is made by one call on all of them).
    let all = exchange(
        parent,
        &[
            spec.size as u64,
            spec.disp_unit as u64,
            spec.base as u64,
            // (the flavor, whether this process can reach the others' memory and
            // whether the heavy fences of the others cover it)
            spec.flavor as u64
                | (reaches_others() as u64) << 32
                | (crate::shm::fence::register() as u64) << 33,
        ],
    )?;
    if let Some(r) = all.iter().position(|v| v[3] as u32 != spec.flavor as u32) {
        return Err(err(
            MPI_ERR_ARG,
            format!(
                "the members of the communicator do not make the same kind of window (rank {r} makes flavor {}, this rank {})",
                all[r][3] as u32, spec.flavor
            ),
        ));
    }
    // Windows on the processes' own memory are reached by single-copy cross-process
    // transfers, which the system may refuse (shm/peer.rs).
    // Where it does not (or SHMPI_DIRECT=0), the members serve each other's accesses
    // (serve.rs); SHMPI_DIRECT=require makes that an error instead.
    let on_own_memory =
        spec.flavor == MPI_WIN_FLAVOR_CREATE || spec.flavor == MPI_WIN_FLAVOR_DYNAMIC;
    let refused = all.iter().position(|v| v[3] >> 32 & 1 == 0);
    let served = on_own_memory && all.len() > 1 && refused.is_some();
    if served && crate::settings::job().direct == crate::settings::Direct::Require {
        return Err(err(
            MPI_ERR_OTHER,
            format!(
                "rank {} of the communicator cannot reach the memory of the others: this system refuses process_vm_readv/writev between the job's processes (a ptrace policy, a seccomp filter, or a program that is not dumpable), and SHMPI_DIRECT=require forbids the way around it",
                refused.unwrap_or(0)
            ),
        ));
    }
    let comm = crate::create::context_dup(parent)?;
    let n = comm.size();
    let me = comm.rank;
    let busy_off = n * LINE;
    let post_off = busy_off + n * LINE;
    let done_off = post_off + align(4 * n * n, 64);
    let dyn_off = done_off + align(4 * n * n, 64);
    let mut seg = dyn_off;
    if spec.flavor == MPI_WIN_FLAVOR_DYNAMIC {
        seg += n * DYN_BYTES;
    }
    let mailboxes = served.then(|| {
        let off = align(seg, mem::page());
        seg = off + serve::Mailboxes::bytes(n);
        serve::Mailboxes::new(off, n)
    });
    let mapped = spec.flavor == MPI_WIN_FLAVOR_ALLOCATE || spec.flavor == MPI_WIN_FLAVOR_SHARED;
    // Window memory starts half a page into a page. A copy whose destination lies a
    // few bytes past its source modulo 4096 stalls on false store-to-load
    // dependencies (4K aliasing): glibc hands out large buffers 16 bytes into a page,
    // and an MPI_Get of 16-64 KiB from page-aligned window memory into one took 1.25-
    // 1.35x the time of the same copy half a page apart.
    let skew = if mapped { ALIAS_SKEW } else { 0 };
    let seg0 = align(seg, mem::page()) + skew;
    let mut offs = Vec::with_capacity(n);
    let mut at = seg0;
    for v in &all {
        if spec.flavor == MPI_WIN_FLAVOR_ALLOCATE || noncontig {
            at = if noncontig {
                align(at, mem::page()) + skew
            } else {
                align(at, 64)
            };
        }
        offs.push(at);
        at = at.checked_add(v[0] as usize).ok_or_else(|| {
            err(
                MPI_ERR_SIZE,
                "the window sizes of the members add up to more than the address space",
            )
        })?;
    }
    let len = if mapped { at } else { seg0 };
    let map = match shared_mapping(&comm, len) {
        Ok(m) => m,
        Err(e) => {
            let _ = crate::create::free(comm.handle);
            return Err(e);
        }
    };
    let pids: Vec<i32> = comm
        .group
        .iter()
        .map(|&w| job.arena.rank_pid(w).load(Ordering::Relaxed) as i32)
        .collect();
    let targets: Vec<Target> = (0..n)
        .map(|t| {
            let (size, du) = (all[t][0] as usize, all[t][1] as usize);
            match spec.flavor {
                MPI_WIN_FLAVOR_ALLOCATE | MPI_WIN_FLAVOR_SHARED => Target {
                    place: Place::Here,
                    base: map.addr(offs[t]),
                    size,
                    disp_unit: du,
                },
                _ => Target {
                    place: if t == me {
                        Place::Here
                    } else if served {
                        Place::Served
                    } else {
                        Place::Proc(pids[t])
                    },
                    base: all[t][2] as usize,
                    size,
                    disp_unit: du,
                },
            }
        })
        .collect();
    let local = targets[me];
    let flavor = spec.flavor;
    let w = register(|handle| Win {
        handle,
        comm: comm.clone(),
        flavor,
        targets,
        map,
        busy_off,
        post_off,
        done_off,
        dyn_off,
        errhandler: AtomicI32::new(MPI_ERRORS_ARE_FATAL),
        name: Mutex::new(String::new()),
        attrs: Mutex::new(Vec::new()),
        info: Mutex::new(window_info(&info, flavor)),
        state: Mutex::new(sync::State::new(n)),
        open: sync::Open::new(n),
        mailboxes,
        size_attr: Box::new(local.size as isize),
        disp_unit_attr: Box::new(local.disp_unit as i32),
        flavor_attr: Box::new(flavor),
        model_attr: Box::new(MPI_WIN_UNIFIED),
        freed: AtomicBool::new(false),
        heavy: all.iter().all(|v| v[3] >> 33 & 1 == 1),
    });
    if served {
        serve::enlist(&w);
    }
    // (no member accesses another's memory before every member has its window)
    if let Err(e) = crate::coll::run(&comm, crate::coll::barrier(&comm)) {
        let _ = release(&w);
        return Err(e);
    }
    Ok(w)
}

/// Whether this process reads and writes the others' memory directly: the system
/// allows it (shm/peer.rs) and SHMPI_DIRECT is not 0.
fn reaches_others() -> bool {
    crate::settings::job().direct != crate::settings::Direct::Off && crate::shm::peer::usable()
}

/// Checks the arguments every creation function has; `Ok` to go on.
pub fn check_spec(size: i64, disp_unit: i64) -> MpiResult<()> {
    if size < 0 {
        return Err(err(MPI_ERR_SIZE, format!("size={size} is negative")));
    }
    if disp_unit <= 0 || disp_unit > i32::MAX as i64 {
        return Err(err(
            MPI_ERR_DISP,
            format!("disp_unit={disp_unit} is not a positive int"),
        ));
    }
    Ok(())
}

/// Creates a window after agreeing on whether every member's arguments were valid
/// (`mine`): an error anywhere fails the creation everywhere, and no member waits.
pub fn create_checked(
    parent: &Arc<Comm>,
    mine: MpiResult<Spec>,
    info: MpiResult<Entries>,
) -> MpiResult<Arc<Win>> {
    let mine = mine.and_then(|s| info.map(|i| (s, i)));
    let r = mine
        .as_ref()
        .map(|_| ())
        .map_err(|e| err(e.class, e.msg.clone()));
    agree_ok(parent, r, "the window's creation")?;
    let (spec, info) = mine?;
    create(parent, spec, info)
}

/// Removes the window from the table and releases its communicator.
fn release(w: &Win) -> MpiResult<()> {
    w.freed.store(true, Ordering::Relaxed);
    if w.mailboxes.is_some() {
        serve::delist(w);
    }
    cache::forget(w);
    if let Some(i) = direct_index(w.handle, OBJ_WIN) {
        if let Some(slot) = TABLE.write().unwrap().get_mut(i) {
            *slot = None;
        }
    }
    crate::create::free(w.comm.handle)
}

/// MPI_Win_free (collective): every epoch must be closed; the attributes' delete
/// callbacks run; the memory is released once every member is done with it.
pub fn free(w: &Win) -> MpiResult<()> {
    sync::check_idle(w, "MPI_Win_free")?;
    crate::attr::delete_all(w)?;
    // (nobody accesses this member's memory any more: every member has arrived here)
    crate::coll::run(&w.comm, crate::coll::barrier(&w.comm))?;
    release(w)
}

impl<'a> From<&'a Win> for crate::attr::Owner<'a> {
    fn from(w: &'a Win) -> Self {
        crate::attr::Owner {
            kind: crate::attr::Kind::Win,
            handle: w.handle,
            attrs: &w.attrs,
        }
    }
}

// ------------------------------------------------------------------------ queries

/// MPI_Win_get_attr of a predefined key: what the attribute value is (an address: of
/// the memory for MPI_WIN_BASE, of an integer for the others); None for other keys.
pub fn predefined_attr(w: &Win, key: i32) -> Option<usize> {
    Some(match key {
        MPI_WIN_BASE => {
            if w.flavor == MPI_WIN_FLAVOR_DYNAMIC {
                0
            } else {
                w.local().base
            }
        }
        MPI_WIN_SIZE => &*w.size_attr as *const isize as usize,
        MPI_WIN_DISP_UNIT => &*w.disp_unit_attr as *const i32 as usize,
        MPI_WIN_CREATE_FLAVOR => &*w.flavor_attr as *const i32 as usize,
        MPI_WIN_MODEL => &*w.model_attr as *const i32 as usize,
        _ => return None,
    })
}

/// The integer value of a predefined attribute (for Fortran).
pub fn predefined_value(w: &Win, key: i32) -> Option<i64> {
    Some(match key {
        MPI_WIN_BASE => predefined_attr(w, key)? as i64,
        MPI_WIN_SIZE => *w.size_attr as i64,
        MPI_WIN_DISP_UNIT => *w.disp_unit_attr as i64,
        MPI_WIN_CREATE_FLAVOR => *w.flavor_attr as i64,
        MPI_WIN_MODEL => *w.model_attr as i64,
        _ => return None,
    })
}

pub fn is_predefined_key(key: i32) -> bool {
    matches!(
        key,
        MPI_WIN_BASE | MPI_WIN_SIZE | MPI_WIN_DISP_UNIT | MPI_WIN_CREATE_FLAVOR | MPI_WIN_MODEL
    )
}

/// MPI_Win_shared_query: (size, disp_unit, base in this process) of member `rank`'s
/// memory, or of the lowest member with memory for MPI_PROC_NULL. Memory this process
/// cannot load and store (another member's MPI_Win_create memory) is size 0 at NULL.
pub fn shared_query(w: &Win, rank: i32) -> MpiResult<(usize, usize, usize)> {
    if w.flavor == MPI_WIN_FLAVOR_DYNAMIC {
        return Err(err(
            MPI_ERR_RMA_FLAVOR,
            "win is a dynamic window (MPI_Win_create_dynamic), which has no memory of its own to query",
        ));
    }
    let n = w.n();
    let t = if rank == MPI_PROC_NULL {
        match (0..n).find(|&t| w.targets[t].size > 0) {
            Some(t) => t,
            None => return Ok((0, w.targets[0].disp_unit, 0)),
        }
    } else if rank < 0 || rank as usize >= n {
        return Err(err(
            MPI_ERR_RANK,
            format!("rank={rank} is not a rank of the window's group (size {n})"),
        ));
    } else {
        rank as usize
    };
    let tg = w.targets[t];
    Ok(match tg.place {
        Place::Here => (tg.size, tg.disp_unit, tg.base),
        Place::Proc(_) | Place::Served => (0, tg.disp_unit, 0),
    })
}

/// MPI_Win_get_info: the keys and the values the window uses.
pub fn info(w: &Win) -> Entries {
    w.info.lock().unwrap().clone()
}

/// MPI_Win_set_info: collective; keys the window knows take the new values given
/// (none of them changes how this implementation works), others are ignored.
pub fn set_info(w: &Win, e: Entries) -> MpiResult<()> {
    {
        let mut cur = w.info.lock().unwrap();
        for (k, v) in e {
            if let Some(slot) = cur.iter_mut().find(|(kk, _)| *kk == k) {
                slot.1 = v;
            }
        }
    }
    crate::coll::run(&w.comm, crate::coll::barrier(&w.comm))
}

impl Win {
    pub fn set_name(&self, s: &str) {
        let max = MPI_MAX_OBJECT_NAME as usize - 1;
        *self.name.lock().unwrap() = s.chars().take(max).collect();
    }
}

// ------------------------------------------------------------------------ dynamic

/// MPI_Win_attach: exposes `size` bytes at `base` in this member's part of a dynamic
/// window.
pub fn attach(w: &Win, base: usize, size: usize) -> MpiResult<()> {
    if w.flavor != MPI_WIN_FLAVOR_DYNAMIC {
        return Err(err(
            MPI_ERR_RMA_FLAVOR,
            "win was not made by MPI_Win_create_dynamic; only dynamic windows take MPI_Win_attach",
        ));
    }
    let _st = w.state.lock().unwrap();
    let mut v = w.attached(w.me());
    if size == 0 {
        return Ok(());
    }
    let end = base.checked_add(size).ok_or_else(|| {
        err(
            MPI_ERR_RMA_ATTACH,
            format!("base={base:#x} size={size}: the region wraps around the address space"),
        )
    })?;
    if let Some(&(b, l)) = v.iter().find(|&&(b, l)| base < b + l && b < end) {
        return Err(err(
            MPI_ERR_RMA_ATTACH,
            format!(
                "base={base:#x} size={size} overlaps the region [{b:#x}, {:#x}) attached already",
                b + l
            ),
        ));
    }
    if v.len() >= DYN_MAX {
        return Err(err(
            MPI_ERR_RMA_ATTACH,
            format!("{DYN_MAX} regions are attached already, the most a process may attach to one window"),
        ));
    }
    v.push((base, size));
    w.publish_attached(&v);
    Ok(())
}

/// MPI_Win_detach: the region attached at `base`.
pub fn detach(w: &Win, base: usize) -> MpiResult<()> {
    if w.flavor != MPI_WIN_FLAVOR_DYNAMIC {
        return Err(err(
            MPI_ERR_RMA_FLAVOR,
            "win was not made by MPI_Win_create_dynamic; only dynamic windows take MPI_Win_detach",
        ));
    }
    let _st = w.state.lock().unwrap();
    let mut v = w.attached(w.me());
    let Some(i) = v.iter().position(|&(b, _)| b == base) else {
        return Err(err(
            MPI_ERR_RMA_ATTACH,
            format!("base={base:#x} is not the address of a region attached to this window"),
        ));
    };
    v.remove(i);
    w.publish_attached(&v);
    Ok(())
}
