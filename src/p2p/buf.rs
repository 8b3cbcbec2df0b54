//! Buffers the user lent to an operation that may complete later (MPI's rule: the
//! buffer stays valid and untouched until the request completes).
use std::ptr;

/// A contiguous user buffer: `len` bytes at `ptr`.
#[derive(Clone, Copy, Debug)]
pub struct UserBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer belongs to the MPI caller, who keeps it valid until the operation
// completes; moving the pointer between threads does not access it.
unsafe impl Send for UserBuf {}

impl UserBuf {
    /// # Safety
    /// `ptr` must be valid for reads (and writes, if written through) of `len` bytes
    /// until the operation using it completes, as the MPI standard requires of callers.
    pub unsafe fn new(ptr: *mut u8, len: usize) -> UserBuf {
        UserBuf { ptr, len }
    }
    pub fn empty() -> UserBuf {
        UserBuf {
            ptr: ptr::null_mut(),
            len: 0,
        }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }
    /// Copies `src` into the buffer at byte `off`.
    pub fn write_at(&self, off: usize, src: &[u8]) {
        assert!(off + src.len() <= self.len);
        if src.is_empty() {
            return;
        }
        // SAFETY: in bounds (checked); the caller of `new` promised validity.
        unsafe { ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(off), src.len()) }
    }
    /// Copies bytes at `off` into `dst`.
    pub fn read_at(&self, off: usize, dst: &mut [u8]) {
        assert!(off + dst.len() <= self.len);
        if dst.is_empty() {
            return;
        }
        // SAFETY: in bounds (checked); the caller of `new` promised validity.
        unsafe { ptr::copy_nonoverlapping(self.ptr.add(off), dst.as_mut_ptr(), dst.len()) }
    }
    /// The buffer as a slice (for the duration of a blocking call).
    pub fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the caller of `new` promised validity for `len` bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    /// The buffer as a mutable slice (for the duration of a blocking call).
    #[allow(clippy::mut_from_ref)]
    pub fn as_mut_slice(&self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: the caller of `new` promised validity for `len` writable bytes, and
        // the MPI rules give the operation exclusive use of it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}
