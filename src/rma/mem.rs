//! A window's shared mapping: one memfd, created by the window's rank 0 and mapped
//! MAP_SHARED by every member, holding the window's control block (locks, the
//! post/complete counters, dynamic windows' attach tables) and, for MPI_Win_allocate
//! and MPI_Win_allocate_shared, every member's window memory. The others open the
//! creator's descriptor through /proc/<pid>/fd, which needs no name in /dev/shm; where
//! the system refuses that, a POSIX shared memory object named after the creator's pid
//! and unlinked as soon as every member has it open. The mapping lives until
//! MPI_Win_free, which unmaps it; no descriptor outlives the creation.
//!
//! Also the byte copies between a process's own addresses that the window accesses
//! make (`copy_in`, `copy_out`): a datatype addresses window memory by displacement from
//! a base address, which no slice can describe.
//!
//! Unsafe code here (every block has its SAFETY line): memfd/shm_open/mmap/munmap, the
//! atomics at offsets of the mapping (bounds-checked by `at`), and the raw copies.
#![allow(unsafe_code)]
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64};

pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is shared memory that every access reaches through atomics or
// through the window protocol's own synchronisation (epochs); the pointer itself is
// never freed before the Mapping is dropped.
unsafe impl Send for Mapping {}
// SAFETY: as for Send.
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are the mapping made in `map` and not unmapped before.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

fn os_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn map(fd: i32, len: usize) -> io::Result<Mapping> {
    // SAFETY: a fresh shared mapping of a descriptor we hold; the result is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(os_err("mmap"));
    }
    Ok(Mapping { ptr: p.cast(), len })
}

fn close(fd: i32) {
    // SAFETY: closing a descriptor this process opened and owns.
    unsafe { libc::close(fd) };
}

/// The page size (mappings and their lengths are multiples of it).
pub fn page() -> usize {
    // SAFETY: sysconf takes no pointers.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

fn round_len(len: usize) -> usize {
    len.max(1).div_ceil(page()) * page()
}

impl Mapping {
    /// A new mapping of `len` bytes (zeroed) and its descriptor, to hand to the other
    /// members ([`Mapping::open_fd`]) and close once they have it.
    pub fn create(len: usize) -> io::Result<(Mapping, i32)> {
        let len = round_len(len);
        // SAFETY: memfd_create with a valid NUL-terminated name; the result is checked.
        let fd = unsafe { libc::memfd_create(c"shmpi-window".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(os_err("memfd_create"));
        }
        // SAFETY: ftruncate of the descriptor just created.
        if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            let e = os_err(&format!("ftruncate to {len} bytes"));
            close(fd);
            return Err(e);
        }
        match map(fd, len) {
            Ok(m) => Ok((m, fd)),
            Err(e) => {
                close(fd);
                Err(e)
            }
        }
    }

    /// Maps descriptor `fd` of process `pid` (made by [`Mapping::create`]).
    pub fn open_fd(pid: i32, fd: i32, len: usize) -> io::Result<Mapping> {
        let path = std::ffi::CString::new(format!("/proc/{pid}/fd/{fd}")).unwrap();
        // SAFETY: open of a NUL-terminated path; the result is checked.
        let mine = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if mine < 0 {
            return Err(os_err(&format!("open /proc/{pid}/fd/{fd}")));
        }
        let m = map(mine, round_len(len));
        close(mine);
        m
    }

    fn shm_name(pid: i32, seq: u64) -> std::ffi::CString {
        std::ffi::CString::new(format!("/shmpi-win-{pid}-{seq}")).unwrap()
    }

    /// The fallback of [`Mapping::create`]: a named shared memory object (unlink it
    /// with [`Mapping::unlink`] once every member has mapped it).
    pub fn create_named(len: usize, pid: i32, seq: u64) -> io::Result<Mapping> {
        let len = round_len(len);
        let name = Self::shm_name(pid, seq);
        // SAFETY: shm_open of a NUL-terminated name; the result is checked.
        let fd = unsafe {
            libc::shm_open(
                name.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL,
                0o600,
            )
        };
        if fd < 0 {
            return Err(os_err("shm_open"));
        }
        // SAFETY: ftruncate of the descriptor just opened.
        let r = if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            Err(os_err(&format!("ftruncate to {len} bytes")))
        } else {
            map(fd, len)
        };
        close(fd);
        if r.is_err() {
            Self::unlink(pid, seq);
        }
        r
    }

    /// Maps the object [`Mapping::create_named`] made.
    pub fn open_named(len: usize, pid: i32, seq: u64) -> io::Result<Mapping> {
        let name = Self::shm_name(pid, seq);
        // SAFETY: shm_open of a NUL-terminated name; the result is checked.
        let fd = unsafe { libc::shm_open(name.as_ptr(), libc::O_RDWR, 0) };
        if fd < 0 {
            return Err(os_err("shm_open"));
        }
        let m = map(fd, round_len(len));
        close(fd);
        m
    }

    pub fn unlink(pid: i32, seq: u64) {
        let name = Self::shm_name(pid, seq);
        // SAFETY: shm_unlink of a NUL-terminated name.
        unsafe { libc::shm_unlink(name.as_ptr()) };
    }

    pub fn close_fd(fd: i32) {
        close(fd)
    }

    /// The address of byte `off` of the mapping.
    pub fn addr(&self, off: usize) -> usize {
        assert!(
            off <= self.len,
            "offset {off} beyond the {}-byte mapping",
            self.len
        );
        self.ptr as usize + off
    }

    #[inline]
    fn at(&self, off: usize, size: usize) -> *mut u8 {
        assert!(
            off.is_multiple_of(size) && off + size <= self.len,
            "offset {off} outside the mapping"
        );
        self.ptr.wrapping_add(off)
    }

    #[inline]
    pub fn u32_at(&self, off: usize) -> &AtomicU32 {
        // SAFETY: in bounds and aligned (`at`); the mapping outlives `self`'s borrow and
        // is only ever accessed atomically at this offset.
        unsafe { &*(self.at(off, 4) as *const AtomicU32) }
    }

    pub fn u64_at(&self, off: usize) -> &AtomicU64 {
        // SAFETY: as for u32_at.
        unsafe { &*(self.at(off, 8) as *const AtomicU64) }
    }
}

/// Copies `len` bytes from address `from` to address `to` of this process (the two may
/// overlap); beyond the caches (`p2p::buf::streaming`) with streaming stores, which
/// do not read the lines they write.
///
/// # Safety
/// `from .. from + len` must be readable and `to .. to + len` writable memory of this
/// process, that nothing else reads or writes concurrently except as MPI's rules for
/// window memory allow.
pub unsafe fn copy(from: usize, to: usize, len: usize) {
    let apart = to >= from.wrapping_add(len) || from >= to.wrapping_add(len);
    if apart && crate::p2p::buf::streaming(len) {
        // SAFETY: this function's contract; the two ranges do not overlap (checked).
        unsafe {
            crate::p2p::buf::UserBuf::new(to as *mut u8, len).write_at_nt(0, view(from, len), true)
        };
        return;
    }
    // SAFETY: this function's contract.
    unsafe { std::ptr::copy(from as *const u8, to as *mut u8, len) }
}

/// Copies `src` to address `addr` of this process.
///
/// # Safety
/// As for [`copy`]: `addr .. addr + src.len()` writable.
pub unsafe fn copy_in(addr: usize, src: &[u8]) {
    // SAFETY: this function's contract.
    unsafe { copy(src.as_ptr() as usize, addr, src.len()) }
}

/// Copies the bytes at address `addr` of this process into `dst`.
///
/// # Safety
/// As for [`copy`]: `addr .. addr + dst.len()` readable.
pub unsafe fn copy_out(addr: usize, dst: &mut [u8]) {
    // SAFETY: this function's contract.
    unsafe { copy(addr, dst.as_mut_ptr() as usize, dst.len()) }
}

/// A view of `len` bytes at address `addr` of this process.
///
/// # Safety
/// As for [`copy_out`], for the lifetime the caller picks.
pub unsafe fn view<'a>(addr: usize, len: usize) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: this function's contract.
    unsafe { std::slice::from_raw_parts(addr as *const u8, len) }
}

/// A mutable view of `len` bytes at address `addr` of this process.
///
/// # Safety
/// As for [`copy_in`], for the lifetime the caller picks.
pub unsafe fn view_mut<'a>(addr: usize, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: this function's contract.
    unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len) }
}
