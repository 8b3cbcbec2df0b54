//! The job's shared arena: one memfd created by mpiexec (or by a singleton for itself),
//! inherited by every rank and mapped MAP_SHARED. Nothing is named in /dev/shm, so a
//! killed job leaks nothing: the memory goes when the last descriptor closes.
//!
//! Layout (all offsets from the base, every hot word on its own cache line):
//!
//! | region   | what                                                          |
//! |----------|---------------------------------------------------------------|
//! | header   | magic, rank count, abort record, channel allocator, the job's |
//! |          | settings (settings.rs: taken from the arena's creator)        |
//! | ranks    | per rank: doorbell (futex word), sleeping flag, pid, state     |
//! | rings    | per ordered pair (src, dst): SPSC ring of message frames       |
//! | pipes    | per ordered pair: a two-segment bulk pipe for large messages  |
//! | channels | NCHAN collective channels, each with per-member counters,     |
//! |          | per-member post rings (coll/post.rs), double-buffered         |
//! |          | per-member slots and a double-buffered result                 |
//!
//! Unsafe code here (every block has its SAFETY line): the arena's mapping (memfd,
//! mmap), its atomics and byte views at offsets (bounds checked by `ptr`; the mutable
//! one, `slice_mut`, is an unsafe fn whose callers hold the protocol's write
//! permission); peer.rs reads and writes another rank's memory (process_vm_readv and
//! writev), wait.rs sleeps and wakes on futexes, fence.rs issues the heavy
//! fences of asymmetric barriers (membarrier) and place.rs sets CPU affinity. proto.rs denies unsafe code.
pub mod fence;
pub mod peer;
pub mod place;
pub mod proto;
pub mod wait;

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

pub const CACHE_LINE: usize = 64;
const MAGIC: u64 = 0x7368_6d70_6931_0005; // "shmpi1" + version

/// Sizes of the arena's regions for a job of `n` process slots (the universe: the
/// ranks mpiexec starts plus room for MPI_Comm_spawn), tuned for `np` started ranks and
/// the job's settings (`SHMPI_SEGMENT`, `SHMPI_PIPE_SEGMENT`), which the arena records:
/// every rank lays it out from the arena's own values ([`Arena::map`]).
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub n: usize,
    pub np: usize,
    pub ring_bytes: usize,
    pub pipe_seg: usize,
    pub nchan: usize,
    pub slot_bytes: usize,
    /// Bytes of one entry of a member's post ring (coll/post.rs).
    pub post_entry: usize,
    /// Entries in a member's post ring: how many steps a member that only posts may
    /// run ahead of the slowest member.
    pub post_k: u64,
    pub ranks_off: usize,
    pub rings_off: usize,
    pub pipes_off: usize,
    pub chans_off: usize,
    pub chan_bytes: usize,
    pub total: usize,
}

pub const RANK_BLOCK: usize = 256;
/// The spawn mailbox (MPI_Comm_spawn's request to mpiexec, comm/spawn.rs), after the
/// header page.
pub const SPAWN_OFF: usize = 4096;
pub const SPAWN_BYTES: usize = 64 << 10;
pub const RING_HDR: usize = 2 * CACHE_LINE;
pub const PIPE_HDR: usize = 4 * CACHE_LINE;
/// Channel header: control line, then per member: the counter line (the step counter and
/// the two parities of the argument-agreement descriptor, coll/agree.rs, so checking it
/// costs no extra cache miss) and an argument line.
pub const CHAN_CTRL: usize = CACHE_LINE;
/// In the channel's control line (after the reference count): its generation.
const CHAN_GEN: usize = 8;
/// In the control line of a channel that is an MPI_COMM_WORLD's: how many of its ranks
/// have entered MPI_Finalize (runtime.rs `finalize`).
const CHAN_FINALIZING: usize = 16;
/// In the channel's control line: which path the large reductions take from which step
/// on (coll/reduce.rs `adaptive`; member 0 writes it).
const CHAN_PATH: usize = 24;
pub const CHAN_MEMBER: usize = 2 * CACHE_LINE;
/// Maximum number of live communicators (channels) in a job.
pub const NCHAN: usize = 2048;
/// The channel of MPI_COMM_WORLD; MPI_COMM_SELF of rank r uses `1 + r`.
pub const WORLD_CHANNEL: usize = 0;

fn round_up(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

impl Layout {
    /// The layout of an arena of `n` slots tuned for `np` ranks (`np <= n`) under the
    /// job's settings `set`: ring, pipe and segment sizes follow `np`, the per-pair and
    /// per-member regions `n`.
    pub fn new(n: usize, np: usize, set: &crate::settings::Job) -> Layout {
        let np = np.clamp(1, n.max(1));
        let ring_bytes = if np <= 32 { 64 << 10 } else { 16 << 10 };
        // A slot holds at least 64 bytes per member (alltoall splits it among them).
        let min_slot = round_up(64 * n, 64);
        let pipe_seg = set
            .pipe_segment
            .map(|v| round_up(v.max(64), 64))
            .unwrap_or(if np <= 32 { 64 << 10 } else { 16 << 10 });
        // 1 MiB up to 8 ranks: against 256 KiB, at 2, 4 and 8 ranks on 2 CPUs,
        // MPI_Bcast of 2-64 MiB took 0.6-0.9x the time, MPI_Reduce and
        // MPI_Reduce_scatter_block 0.8-0.95x at 16-64 MiB at 2 and 4 ranks (fewer
        // steps, each a synchronisation; at 8 ranks runs disagreed, 0.8-1.1x); some
        // oversubscribed reductions keep 256 KiB chunks (coll/reduce.rs `chunk_size`).
        let slot_bytes = set
            .segment
            .map(|v| round_up(v.max(min_slot), 64))
            .unwrap_or(if np <= 8 {
                1 << 20
            } else if np <= 32 {
                64 << 10
            } else {
                16 << 10
            })
            .max(min_slot);
        // Posted steps carry up to 992 bytes up to 8 ranks, 224 beyond. A member that
        // only sends may run `post_k` steps ahead: 256 up to 32 ranks (256 KiB of post
        // ring per member and channel up to 8 ranks, 64 KiB beyond), 32 beyond. With
        // more ranks than CPUs a sender runs until the ring is full and then gives up
        // its CPU, so the ring's depth sets how often ranks switch: back-to-back
        // MPI_Bcast of 8 bytes at 4 and 8 ranks on 2 CPUs took 0.65x the time with 256
        // entries as with 32, MPI_Reduce 0.7x (0.75-0.85x with 128).
        let post_entry = if np <= 8 { 1024 } else { 256 };
        let post_k: u64 = if np <= 32 { 256 } else { 32 };
        let ranks_off = SPAWN_OFF + SPAWN_BYTES;
        let rings_off = round_up(ranks_off + n * RANK_BLOCK, 4096);
        let pipes_off = round_up(rings_off + n * n * (RING_HDR + ring_bytes), 4096);
        let chans_off = round_up(pipes_off + n * n * (PIPE_HDR + 2 * pipe_seg), 4096);
        let chan_bytes = round_up(
            CHAN_CTRL
                + n * CHAN_MEMBER
                + n * post_k as usize * post_entry
                + 2 * n * slot_bytes
                + 2 * slot_bytes,
            4096,
        );
        let total = chans_off + NCHAN * chan_bytes;
        Layout {
            n,
            np,
            ring_bytes,
            pipe_seg,
            nchan: NCHAN,
            slot_bytes,
            post_entry,
            post_k,
            ranks_off,
            rings_off,
            pipes_off,
            chans_off,
            chan_bytes,
            total,
        }
    }
    pub fn rank_block(&self, r: usize) -> usize {
        self.ranks_off + r * RANK_BLOCK
    }
    pub fn ring(&self, src: usize, dst: usize) -> usize {
        self.rings_off + (src * self.n + dst) * (RING_HDR + self.ring_bytes)
    }
    pub fn pipe(&self, src: usize, dst: usize) -> usize {
        self.pipes_off + (src * self.n + dst) * (PIPE_HDR + 2 * self.pipe_seg)
    }
    pub fn chan(&self, c: usize) -> usize {
        self.chans_off + c * self.chan_bytes
    }
    /// The control words of channel `c` (counters and agreement descriptors).
    pub fn chan_ctl(&self, c: usize) -> proto::ChanCtl {
        proto::ChanCtl {
            base: self.chan(c) + CHAN_CTRL,
            stride: CHAN_MEMBER,
            posts: self.chan(c) + CHAN_CTRL + self.n * CHAN_MEMBER,
            post_entry: self.post_entry,
            post_k: self.post_k,
            post_gen: 0,
        }
    }
    /// Offset of member `i`'s counter line in channel `c`.
    pub fn chan_counter(&self, c: usize, i: usize) -> usize {
        self.chan_ctl(c).counter(i)
    }
    /// Offset of member `i`'s argument line in channel `c`.
    pub fn chan_args(&self, c: usize, i: usize) -> usize {
        self.chan_counter(c, i) + CACHE_LINE
    }
    /// Offset of member `i`'s data slot `parity` in channel `c`.
    pub fn chan_slot(&self, c: usize, i: usize, parity: usize) -> usize {
        self.chan_data(c) + (2 * i + parity) * self.slot_bytes
    }
    /// Offset of channel `c`'s result buffer `parity`.
    pub fn chan_result(&self, c: usize, parity: usize) -> usize {
        self.chan_data(c) + (2 * self.n + parity) * self.slot_bytes
    }
    /// Offset of channel `c`'s slots (after the members' control lines and post rings).
    fn chan_data(&self, c: usize) -> usize {
        self.chan(c) + CHAN_CTRL + self.n * (CHAN_MEMBER + self.post_k as usize * self.post_entry)
    }
}

// Header field offsets.
const H_MAGIC: usize = 0;
const H_NRANKS: usize = 8;
const H_NP: usize = 16;
/// The arena's bytes (as its creator laid it out).
const H_TOTAL: usize = 24;
pub const H_ABORT_FLAG: usize = 64;
pub const H_ABORT_CODE: usize = 68;
pub const H_ABORT_RANK: usize = 72;
pub const H_ABORT_KIND: usize = 76;
/// Kinds of abort record.
pub const ABORT_CALLED: u32 = 0;
pub const ABORT_FATAL_ERROR: u32 = 1;
const H_CHAN_LOCK: usize = 128;
const H_CHAN_BITMAP: usize = 192; // NCHAN bits = 256 bytes
/// The job's settings (settings.rs `Job::to_words`), `settings::JOB_WORDS` words.
const H_SETTINGS: usize = 1024;
const _: () = assert!(H_SETTINGS + 8 * crate::settings::JOB_WORDS <= SPAWN_OFF);

// Rank block field offsets.
pub const R_DOORBELL: usize = 0;
pub const R_SLEEPING: usize = 4;
pub const R_PID: usize = 8;
pub const R_STATE: usize = 12;
/// What the rank waits for while it sleeps (a wake mark, shm/proto.rs `chan_mark`).
pub const R_WANT: usize = 16;
/// What the rank is doing now, for hang reports: the MPI function's name (its own cache
/// line: written on every call, read only by mpiexec), then the communicator of the
/// current call and the last collective step it reached (another line). Both are kept
/// off the doorbell's line, which peers read at every step.
pub const R_CALL: usize = 64;
pub const R_CALL_LEN: usize = 64;
pub const R_CALL_COMM: usize = 128;
pub const R_CALL_STEP: usize = 136;
/// Whether the rank is inside an MPI call (the name stays written between calls, so a
/// loop calling one function writes it once).
pub const R_CALL_ACTIVE: usize = 144;
/// Set once by a rank in MPI_Finalize that has nothing left to send: no message of it
/// will arrive anywhere that has not arrived already (p2p `publish_quiet`).
pub const R_QUIET: usize = 192;

/// The name this process last wrote into its rank block (its address: names are
/// static strings).
static LAST_CALL_NAME: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

pub const STATE_STARTED: u32 = 1;
pub const STATE_FINALIZED: u32 = 2;
/// In MPI_Finalize, waiting for the other ranks of its MPI_COMM_WORLD: it takes no
/// step of any communicator again.
pub const STATE_FINALIZING: u32 = 3;

/// Creates a job arena for `n` ranks under the job's settings `set` (the creator's:
/// recorded in the arena, every rank takes them from there) and returns its descriptor
/// (without CLOEXEC, so that exec'd ranks inherit it).
pub fn create_job_arena(n: usize, np: usize, set: &crate::settings::Job) -> io::Result<OwnedFd> {
    let lay = Layout::new(n, np, set);
    // SAFETY: memfd_create with a valid NUL-terminated name; the result is checked.
    let fd = unsafe { libc::memfd_create(c"shmpi-arena".as_ptr(), 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ftruncate on our own descriptor.
    if unsafe { libc::ftruncate(fd, lay.total as libc::off_t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let a = Arena::map_layout(owned.as_raw_fd(), lay)?;
    a.u64_at(H_NRANKS).store(n as u64, Ordering::Relaxed);
    a.u64_at(H_NP).store(lay.np as u64, Ordering::Relaxed);
    a.u64_at(H_TOTAL).store(lay.total as u64, Ordering::Relaxed);
    for (k, w) in set.to_words().iter().enumerate() {
        a.u64_at(H_SETTINGS + 8 * k).store(*w, Ordering::Relaxed);
    }
    // Channel 0 is the first MPI_COMM_WORLD's, channel 1 + r is slot r's MPI_COMM_SELF.
    a.reserve_channel(0);
    a.u64_at(a.lay.chan(0))
        .store(lay.np as u64, Ordering::Relaxed);
    for r in 0..n {
        a.reserve_channel(1 + r);
        a.u64_at(a.lay.chan(1 + r)).store(1, Ordering::Relaxed);
    }
    a.u64_at(H_MAGIC).store(MAGIC, Ordering::Release);
    drop(a);
    Ok(owned)
}

/// The job's settings recorded in the header of the arena behind `fd` (read before it
/// is mapped: its layout depends on them).
fn read_settings(fd: i32) -> io::Result<crate::settings::Job> {
    let mut page = [0u8; H_SETTINGS + 8 * crate::settings::JOB_WORDS];
    // SAFETY: pread into a buffer we own, of its length; the result is checked.
    let got = unsafe { libc::pread(fd, page.as_mut_ptr() as *mut libc::c_void, page.len(), 0) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    let word = |off: usize| u64::from_ne_bytes(page[off..off + 8].try_into().unwrap());
    if got as usize != page.len() || word(H_MAGIC) != MAGIC {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a job arena of this version of shmpi (its header does not match)",
        ));
    }
    let mut w = [0u64; crate::settings::Job::WORDS];
    for (k, v) in w.iter_mut().enumerate() {
        *v = word(H_SETTINGS + 8 * k);
    }
    Ok(crate::settings::Job::from_words(&w))
}

/// A mapping of the job arena.
pub struct Arena {
    base: NonNull<u8>,
    len: usize,
    pub lay: Layout,
    /// Whether mpiexec started this process (not a singleton): a process whose
    /// launcher is gone is orphaned and stops.
    pub launched: bool,
}

// SAFETY: the arena is shared memory accessed only through atomics and through byte
// copies ordered by those atomics; the pointer itself may move between threads.
unsafe impl Send for Arena {}
// SAFETY: as above.
unsafe impl Sync for Arena {}

impl Arena {
    /// Maps the arena behind `fd`, created for `n` slots tuned for `np` ranks, laid out
    /// with the settings its creator recorded in it (not this process's environment).
    pub fn map(fd: i32, n: usize, np: usize) -> io::Result<Arena> {
        let set = read_settings(fd)?;
        Arena::map_layout(fd, Layout::new(n, np, &set))
    }

    /// Maps the arena behind `fd` with layout `lay`.
    fn map_layout(fd: i32, lay: Layout) -> io::Result<Arena> {
        // SAFETY: mapping a shared file of at least lay.total bytes; result checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                lay.total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_NORESERVE,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Arena {
            base: NonNull::new(p as *mut u8).unwrap(),
            len: lay.total,
            lay,
            launched: false,
        })
    }

    /// A private anonymous mapping of `len` bytes (zeroed), shared by the threads of
    /// this process: the protocol tests' arena (shm/proto.rs).
    #[cfg(test)]
    pub fn anonymous(len: usize) -> Arena {
        // SAFETY: an anonymous mapping; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(p != libc::MAP_FAILED, "mmap failed");
        Arena {
            base: NonNull::new(p as *mut u8).unwrap(),
            len,
            lay: Layout::new(1, 1, &crate::settings::Job::from_lookup(|_| None)),
            launched: false,
        }
    }

    /// Called while waiting: if the job is being torn down (a rank aborted, so
    /// mpiexec stops every rank, or mpiexec itself is gone), leaves quietly with a
    /// failure status.
    pub fn check_job_alive(&self) {
        // SAFETY: getppid has no preconditions.
        if self.abort_record().is_some() || (self.launched && unsafe { libc::getppid() } == 1) {
            crate::process::exit_process(1);
        }
    }

    /// Checks that the arena was initialised with this mapping's layout.
    pub fn validate(&self) -> bool {
        self.u64_at(H_MAGIC).load(Ordering::Acquire) == MAGIC
            && self.u64_at(H_NRANKS).load(Ordering::Relaxed) == self.lay.n as u64
            && self.u64_at(H_NP).load(Ordering::Relaxed) == self.lay.np as u64
            && self.u64_at(H_TOTAL).load(Ordering::Relaxed) == self.lay.total as u64
    }

    /// The job's settings its creator recorded (settings.rs: every rank adopts them).
    pub fn settings(&self) -> crate::settings::Job {
        let mut w = [0u64; crate::settings::Job::WORDS];
        for (k, v) in w.iter_mut().enumerate() {
            *v = self.u64_at(H_SETTINGS + 8 * k).load(Ordering::Relaxed);
        }
        crate::settings::Job::from_words(&w)
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn u32_at(&self, off: usize) -> &AtomicU32 {
        assert!(off.is_multiple_of(4) && off + 4 <= self.len);
        // SAFETY: in bounds, aligned, and the arena lives as long as &self; shared memory
        // words are only ever accessed atomically.
        unsafe { &*(self.base.as_ptr().add(off) as *const AtomicU32) }
    }
    pub fn i32_at(&self, off: usize) -> &AtomicI32 {
        assert!(off.is_multiple_of(4) && off + 4 <= self.len);
        // SAFETY: as for u32_at.
        unsafe { &*(self.base.as_ptr().add(off) as *const AtomicI32) }
    }
    pub fn u64_at(&self, off: usize) -> &AtomicU64 {
        assert!(off.is_multiple_of(8) && off + 8 <= self.len);
        // SAFETY: as for u32_at.
        unsafe { &*(self.base.as_ptr().add(off) as *const AtomicU64) }
    }

    /// Raw pointer to `len` bytes at `off` (bounds-checked). Data regions are handed
    /// between ranks by the atomics above: a writer fills a region, then publishes it
    /// with a release store; readers read it after an acquire load.
    pub fn ptr(&self, off: usize, len: usize) -> *mut u8 {
        assert!(off.checked_add(len).is_some_and(|e| e <= self.len));
        // SAFETY: in bounds.
        unsafe { self.base.as_ptr().add(off) }
    }

    /// Asks the CPU to start loading the cache lines of `len` bytes at `off` (a hint:
    /// nothing is read, nothing can fault). A reader about to wait for a flag and then
    /// read data the writer put beside it prefetches the data first, so that the data's
    /// lines come over with the flag's instead of one after the other: a posted step's
    /// payload beyond its header's line took a second cross-CPU miss after the flag.
    pub fn prefetch(&self, off: usize, len: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let start = off & !63;
            let p = self.ptr(start, off + len - start);
            for line in (0..off + len - start).step_by(64) {
                // SAFETY: in bounds (checked by `ptr`); a prefetch only hints the cache.
                unsafe {
                    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                    _mm_prefetch::<_MM_HINT_T0>(p.add(line) as *const i8);
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (off, len);
    }

    /// Copies `src` into the arena at `off`.
    pub fn write(&self, off: usize, src: &[u8]) {
        let p = self.ptr(off, src.len());
        // SAFETY: bounds checked by ptr(); the region is owned by this writer until it
        // is published (see ptr()).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) }
    }

    /// Copies arena bytes at `off` into `dst`.
    pub fn read(&self, off: usize, dst: &mut [u8]) {
        let p = self.ptr(off, dst.len());
        // SAFETY: bounds checked; the region was published to this reader.
        unsafe { std::ptr::copy_nonoverlapping(p, dst.as_mut_ptr(), dst.len()) }
    }

    /// A shared view of `len` bytes at `off`, valid while the protocol guarantees that no
    /// rank writes them.
    pub fn slice(&self, off: usize, len: usize) -> &[u8] {
        let p = self.ptr(off, len);
        // SAFETY: bounds checked; callers hold the protocol's read permission.
        unsafe { std::slice::from_raw_parts(p, len) }
    }

    /// A mutable view of `len` bytes at `off`, valid while the protocol gives this rank
    /// exclusive write permission.
    ///
    /// # Safety
    /// For the returned lifetime the caller must hold the protocol's exclusive write
    /// permission for these bytes (e.g. its own slot in the collective step that owns
    /// it, or a point-to-point cell it claimed and has not yet published): no other
    /// rank or thread reads or writes them, and no other reference to them (from
    /// `slice`, `slice_mut` or a `read`/`write` in flight) is live.
    #[expect(
        clippy::mut_from_ref,
        reason = "an unsafe fn: its # Safety contract is what makes the &mut exclusive"
    )]
    pub unsafe fn slice_mut(&self, off: usize, len: usize) -> &mut [u8] {
        let p = self.ptr(off, len);
        // SAFETY: bounds checked by `ptr`; the caller holds the protocol's exclusive
        // write permission (this function's contract).
        unsafe { std::slice::from_raw_parts_mut(p, len) }
    }

    // ---- job-wide records ----

    /// Records that `rank` aborted the job with `code` (first one wins).
    pub fn record_abort(&self, rank: usize, code: i32) {
        self.record_abort_kind(rank, code, ABORT_CALLED)
    }

    /// What stopped the job: MPI_Abort or a fatal error (once the record is complete).
    pub fn abort_kind(&self) -> u32 {
        self.u32_at(H_ABORT_KIND).load(Ordering::Acquire)
    }

    /// Records an abort of the given kind (first one wins).
    pub fn record_abort_kind(&self, rank: usize, code: i32, kind: u32) {
        if self
            .u32_at(H_ABORT_FLAG)
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.i32_at(H_ABORT_CODE).store(code, Ordering::Relaxed);
            self.u32_at(H_ABORT_KIND).store(kind, Ordering::Relaxed);
            self.i32_at(H_ABORT_RANK)
                .store(rank as i32, Ordering::Release);
            self.u32_at(H_ABORT_FLAG).store(2, Ordering::Release);
        }
    }
    /// The abort record: (rank, code), once complete.
    pub fn abort_record(&self) -> Option<(i32, i32)> {
        if self.u32_at(H_ABORT_FLAG).load(Ordering::Acquire) == 2 {
            Some((
                self.i32_at(H_ABORT_RANK).load(Ordering::Acquire),
                self.i32_at(H_ABORT_CODE).load(Ordering::Relaxed),
            ))
        } else {
            None
        }
    }

    pub fn rank_state(&self, r: usize) -> &AtomicU32 {
        self.u32_at(self.lay.rank_block(r) + R_STATE)
    }
    pub fn rank_pid(&self, r: usize) -> &AtomicU32 {
        self.u32_at(self.lay.rank_block(r) + R_PID)
    }
    /// Whether the process in slot `r` has entered MPI_Finalize (or finished it): it
    /// will take no collective step, nor send anything new, again.
    pub fn in_finalize(&self, r: usize) -> bool {
        matches!(
            self.rank_state(r).load(Ordering::Acquire),
            STATE_FINALIZING | STATE_FINALIZED
        )
    }
    /// Whether the process in slot `r` is in MPI_Finalize (or past it) with nothing left
    /// to send ([`R_QUIET`]): what it sent before is in the rings already.
    pub fn is_quiet(&self, r: usize) -> bool {
        self.u32_at(self.lay.rank_block(r) + R_QUIET)
            .load(Ordering::Acquire)
            != 0
    }
    /// Marks this process's slot `r` quiet ([`Arena::is_quiet`]).
    pub fn set_quiet(&self, r: usize) {
        self.u32_at(self.lay.rank_block(r) + R_QUIET)
            .store(1, Ordering::Release);
    }
    /// The count of ranks that entered MPI_Finalize, in the control line of channel
    /// `c` (an MPI_COMM_WORLD's: such a channel is never released).
    pub fn finalizing_count(&self, c: usize) -> &AtomicU64 {
        self.u64_at(self.lay.chan(c) + CHAN_FINALIZING)
    }
    /// The name of the MPI function rank `r` is in or was in last ("" if none).
    pub fn call_name(&self, r: usize) -> String {
        let s = self.slice(self.lay.rank_block(r) + R_CALL, R_CALL_LEN);
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        String::from_utf8_lossy(&s[..end]).into_owned()
    }

    /// Makes slot `r` ready for a new process (mpiexec, when a spawn reuses the slot of
    /// a finished one): not started, no current call, its MPI_COMM_SELF channel at step 0.
    pub fn reset_slot(&self, r: usize) {
        self.rank_state(r).store(0, Ordering::Relaxed);
        self.rank_pid(r).store(0, Ordering::Relaxed);
        self.set_call(r, "");
        self.u32_at(self.lay.rank_block(r) + R_CALL_ACTIVE)
            .store(0, Ordering::Relaxed);
        self.u32_at(self.lay.rank_block(r) + R_QUIET)
            .store(0, Ordering::Relaxed);
        let ctl = self.lay.chan_ctl(1 + r);
        self.u64_at(ctl.counter(0)).store(0, Ordering::Relaxed);
        self.u64_at(ctl.posted_at(0)).store(0, Ordering::Relaxed);
        self.u32_at(self.lay.rank_block(r) + R_SLEEPING)
            .store(0, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
    }

    /// Records what rank `r` is doing (for hang reports).
    pub fn set_call(&self, r: usize, what: &str) {
        let off = self.lay.rank_block(r) + R_CALL;
        let b = what.as_bytes();
        let n = b.len().min(R_CALL_LEN - 1);
        self.write(off, &b[..n]);
        self.write(off + n, &[0]);
    }
    /// Records the call rank `r` enters (name, communicator) for hang reports.
    pub fn enter_call(&self, r: usize, what: &'static str, comm: i32) {
        let id = what.as_ptr() as usize ^ what.len();
        if LAST_CALL_NAME.load(Ordering::Relaxed) != id {
            LAST_CALL_NAME.store(id, Ordering::Relaxed);
            self.set_call(r, what);
        }
        let b = self.lay.rank_block(r);
        self.u32_at(b + R_CALL_ACTIVE).store(1, Ordering::Relaxed);
        self.i32_at(b + R_CALL_COMM).store(comm, Ordering::Relaxed);
        self.u64_at(b + R_CALL_STEP).store(0, Ordering::Relaxed);
    }
    /// Records what rank `r` waits for inside its current call, for hang reports:
    /// "MPI_Win_lock (window 0xa0000000: the lock of rank 1)". The next call's name
    /// replaces it.
    pub fn note_wait(&self, r: usize, what: &str) {
        let name = self.call_name(r);
        let call = name.split(" (").next().unwrap_or_default();
        self.set_call(r, &format!("{call} ({what})"));
        LAST_CALL_NAME.store(0, Ordering::Relaxed);
    }
    /// Records that rank `r` left its MPI call.
    pub fn leave_call(&self, r: usize) {
        self.u32_at(self.lay.rank_block(r) + R_CALL_ACTIVE)
            .store(0, Ordering::Relaxed);
    }
    /// Records the collective step rank `r` is waiting in.
    pub fn note_step(&self, r: usize, step: u64) {
        self.u64_at(self.lay.rank_block(r) + R_CALL_STEP)
            .store(step, Ordering::Relaxed);
    }
    /// What rank `r` is doing: "MPI_Allreduce (communicator 0x44000000, step 12)", or ""
    /// outside MPI.
    pub fn call_of(&self, r: usize) -> String {
        let name = self.call_name(r);
        let active = self
            .u32_at(self.lay.rank_block(r) + R_CALL_ACTIVE)
            .load(Ordering::Relaxed);
        if name.is_empty() || active == 0 || name.contains(" (") {
            return name;
        }
        let comm = self
            .i32_at(self.lay.rank_block(r) + R_CALL_COMM)
            .load(Ordering::Relaxed);
        let step = self
            .u64_at(self.lay.rank_block(r) + R_CALL_STEP)
            .load(Ordering::Relaxed);
        let kind = if crate::abi::handle_obj(comm) == crate::abi::OBJ_WIN {
            "window"
        } else {
            "communicator"
        };
        if step > 0 {
            format!("{name} ({kind} {comm:#x}, collective step {step})")
        } else {
            format!("{name} ({kind} {comm:#x})")
        }
    }

    // ---- channel allocator ----

    fn chan_lock(&self) -> &AtomicU32 {
        self.u32_at(H_CHAN_LOCK)
    }

    /// Allocates a free collective channel for a communicator of `members` ranks and
    /// resets its counters. Returns its index, which is also the communicator's context
    /// id, unique in the job while it lives.
    pub fn alloc_channel(&self, members: usize) -> Option<usize> {
        let lock = self.chan_lock();
        while lock
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::thread::yield_now();
        }
        let mut found = None;
        for w in 0..NCHAN / 64 {
            let word = self.u64_at(H_CHAN_BITMAP + 8 * w);
            let v = word.load(Ordering::Relaxed);
            if v != u64::MAX {
                let bit = (!v).trailing_zeros() as usize;
                word.store(v | (1u64 << bit), Ordering::Relaxed);
                found = Some(w * 64 + bit);
                break;
            }
        }
        lock.store(0, Ordering::Release);
        let c = found?;
        // Reset: refcount, then every member counter.
        let base = self.lay.chan(c);
        self.u64_at(base).store(members as u64, Ordering::Relaxed);
        let ctl = self.lay.chan_ctl(c);
        for i in 0..self.lay.n {
            self.u64_at(ctl.counter(i)).store(0, Ordering::Relaxed);
            self.u64_at(ctl.posted_at(i)).store(0, Ordering::Relaxed);
        }
        // A new generation instead of clearing the post rings (which would make every
        // page of them resident): entries of earlier generations never match.
        let gen = self.u64_at(base + CHAN_GEN);
        gen.store(gen.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        self.u64_at(base + CHAN_FINALIZING)
            .store(0, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        Some(c)
    }

    /// Marks channel `c` as allocated without resetting it (the predefined
    /// communicators' channels, set up by the launcher).
    pub fn reserve_channel(&self, c: usize) {
        let word = self.u64_at(H_CHAN_BITMAP + 8 * (c / 64));
        word.fetch_or(1u64 << (c % 64), Ordering::AcqRel);
    }

    /// The control words of channel `c`, with its current generation (`ChanCtl::post_gen`;
    /// stable while a communicator holds the channel).
    pub fn chan_ctl(&self, c: usize) -> proto::ChanCtl {
        let mut ctl = self.lay.chan_ctl(c);
        ctl.post_gen = self
            .u64_at(self.lay.chan(c) + CHAN_GEN)
            .load(Ordering::Relaxed);
        ctl
    }

    /// The path word of channel `c` (`CHAN_PATH`).
    pub fn chan_path(&self, c: usize) -> &std::sync::atomic::AtomicU64 {
        self.u64_at(self.lay.chan(c) + CHAN_PATH)
    }

    /// Gives back channel `c`, just allocated by [`Arena::alloc_channel`], when no
    /// communicator came to use it (a collective constructor that failed on another
    /// member): frees it whatever the member count it was allocated for.
    pub fn give_back_channel(&self, c: usize) {
        self.u64_at(self.lay.chan(c)).store(1, Ordering::Relaxed);
        self.release_channel(c);
    }

    /// Drops one member's reference to channel `c`; the last one frees it.
    pub fn release_channel(&self, c: usize) {
        let rc = self.u64_at(self.lay.chan(c));
        if rc.fetch_sub(1, Ordering::AcqRel) == 1 {
            let lock = self.chan_lock();
            while lock
                .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                std::thread::yield_now();
            }
            let word = self.u64_at(H_CHAN_BITMAP + 8 * (c / 64));
            let v = word.load(Ordering::Relaxed);
            word.store(v & !(1u64 << (c % 64)), Ordering::Relaxed);
            lock.store(0, Ordering::Release);
        }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping we created.
        unsafe {
            libc::munmap(self.base.as_ptr() as *mut libc::c_void, self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mapping lays the arena out with the settings its creator recorded, not with
    /// this process's: every rank gets the creator's slots and pipes.
    #[test]
    fn layout_from_the_arena() {
        let set = crate::settings::Job::from_lookup(|k| match k {
            "SHMPI_SEGMENT" => Some("4096".into()),
            "SHMPI_PIPE_SEGMENT" => Some("8192".into()),
            "SHMPI_CHAIN" => Some("1".into()),
            "SHMPI_DIRECT" => Some("require".into()),
            _ => None,
        });
        let fd = create_job_arena(3, 3, &set).expect("create an arena");
        let a = Arena::map(fd.as_raw_fd(), 3, 3).expect("map it");
        assert!(a.validate());
        assert_eq!(a.settings(), set);
        assert_eq!(a.lay.slot_bytes, 4096);
        assert_eq!(a.lay.pipe_seg, 8192);
        assert_eq!(a.lay.total, Layout::new(3, 3, &set).total);
        // A descriptor that is not an arena is refused before it is mapped.
        // SAFETY: memfd_create with a valid name; the result is checked.
        let other = unsafe { libc::memfd_create(c"not-an-arena".as_ptr(), 0) };
        assert!(other >= 0);
        // SAFETY: `other` is a fresh descriptor we own.
        let other = unsafe { OwnedFd::from_raw_fd(other) };
        assert!(Arena::map(other.as_raw_fd(), 3, 3).is_err());
    }
}
