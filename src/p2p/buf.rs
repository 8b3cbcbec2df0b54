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
// SAFETY: sharing the descriptor does not access the buffer; accesses follow MPI's
// rules for the operation that owns it (one MPI call at a time in this library).
unsafe impl Sync for UserBuf {}

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
    /// Bytes `off..off + len` of the buffer.
    pub fn sub(&self, off: usize, len: usize) -> UserBuf {
        assert!(off + len <= self.len);
        if len == 0 {
            return UserBuf::empty();
        }
        UserBuf {
            // SAFETY: in bounds (checked), so the offset pointer stays inside the buffer.
            ptr: unsafe { self.ptr.add(off) },
            len,
        }
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

/// A receive into a non-contiguous datatype: the message lands packed in `tmp` and is
/// unpacked into the user's buffer when the receive completes.
pub struct Unpack {
    pub ty: crate::datatype::TypeRef,
    pub count: usize,
    origin: *mut u8,
    pub tmp: Vec<u8>,
}

// SAFETY: the origin is the MPI caller's receive buffer, valid until the request
// completes; it is only written when the request completes.
unsafe impl Send for Unpack {}

impl Unpack {
    /// # Safety
    /// `origin` must be the address of a receive buffer that holds `count` instances
    /// of `ty` and stays valid until the receive completes.
    pub unsafe fn new(ty: crate::datatype::TypeRef, count: usize, origin: *mut u8) -> Unpack {
        let n = ty.size() * count;
        Unpack {
            ty,
            count,
            origin,
            tmp: vec![0u8; n],
        }
    }
    /// The packed staging buffer the message is received into.
    pub fn target(&mut self) -> UserBuf {
        UserBuf {
            ptr: self.tmp.as_mut_ptr(),
            len: self.tmp.len(),
        }
    }
    /// Unpacks the first `received` bytes into the user's buffer.
    pub fn finish(&self, received: usize) {
        let n = received.min(self.tmp.len());
        if n > 0 {
            // SAFETY: `new`'s contract: the origin holds `count` instances; a prefix of
            // the packed stream touches only bytes of those instances.
            unsafe {
                crate::datatype::unpack(&self.ty, self.count, self.origin, &self.tmp[..n], 0)
            };
        }
    }
}
