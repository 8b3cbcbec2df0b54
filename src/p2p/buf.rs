//! Buffers the user lent to an operation that may complete later (MPI's rule: the
//! buffer stays valid and untouched until the request completes).
//!
//! Unsafe code here (every block has its SAFETY line):
//! - `UserBuf`, the raw pointer and length of a buffer the program lent to an operation
//!   that may complete later (no lifetime can say "until the request completes"), and
//!   its streaming copy; `Typed`'s origin, the buffer of a non-contiguous datatype that
//!   a send packs from and a receive unpacks into as the message moves;
//! - the user buffers of `count` instances of a datatype that a send transmits or a
//!   receive fills (`send_data`, `recv_into`, `pack_vec`), the C caller's addresses.
use super::{RecvInto, SendData};
use crate::abi::MPI_ERR_BUFFER;
use crate::args::check_base;
use crate::datatype::TypeInfo;
use crate::error::{err, MpiResult};
use std::os::raw::c_void;
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
    /// Copies `src` into the buffer at byte `off`, with non-temporal stores when
    /// `streaming` (see [`streaming`]): the written lines go to memory without being
    /// read first and without evicting the cache.
    pub fn write_at_nt(&self, off: usize, src: &[u8], streaming: bool) {
        assert!(off + src.len() <= self.len);
        if !streaming || src.len() < 256 {
            return self.write_at(off, src);
        }
        // SAFETY: in bounds (checked); the caller of `new` promised validity, and the
        // destination (a user buffer) does not overlap `src` (the arena or a staging
        // buffer).
        unsafe { copy_nt(self.ptr.add(off), src) }
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
    ///
    /// # Safety
    /// For the returned lifetime no other reference to the buffer's bytes may be live
    /// (no other slice from this `UserBuf`, a copy of it or an overlapping one, and no
    /// `read_at`/`write_at` through them): the caller is the operation that owns the
    /// buffer, and uses the slice within one step of it.
    #[expect(
        clippy::mut_from_ref,
        reason = "an unsafe fn: its # Safety contract is what makes the &mut exclusive"
    )]
    pub unsafe fn as_mut_slice(&self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: the caller of `new` promised validity for `len` writable bytes, and
        // the MPI rules give the operation exclusive use of it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// Whether an operation that writes `bytes` into a user buffer does so with
/// non-temporal stores: when the buffer is larger than the caches, a plain store first
/// reads every line it writes (and evicts something useful), so a plain copy moves three
/// bytes through memory per byte written where a streaming one moves two (copying 64 MiB
/// out of a cache-resident buffer: 3.6 ms against 6.7 ms here). At 4 ranks on 2 CPUs the
/// arena path of MPI_Allreduce took 0.75-0.85x the time from 16 MiB and MPI_Bcast
/// 0.65-0.7x; from 1 to 4 MiB, where the buffers still fit in the last-level cache,
/// streaming was even or slower. `SHMPI_STREAM_MIN` (bytes, default 8 MiB) moves the
/// threshold. (The cache size the system reports is no guide: this VM reports 256 MiB.)
pub fn streaming(bytes: usize) -> bool {
    bytes >= crate::settings::job().stream_min
}

/// Copies `src` to `dst` with non-temporal (streaming) stores, then fences them, so
/// they are ordered before whatever the caller publishes next (a step's release store
/// does not order streaming stores).
///
/// # Safety
/// `dst` must be valid for writes of `src.len()` bytes and not overlap `src`.
#[cfg(target_arch = "x86_64")]
unsafe fn copy_nt(dst: *mut u8, src: &[u8]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    let n = src.len();
    let s = src.as_ptr();
    // Plain stores up to the first 16-byte boundary of `dst`, streaming ones after.
    let head = (dst as usize).wrapping_neg() & 15;
    // SAFETY: `head < 16 <= n` (the caller copies at least 256 bytes); in bounds.
    unsafe { ptr::copy_nonoverlapping(s, dst, head) };
    let mut i = head;
    while i + 64 <= n {
        // SAFETY: bytes i..i + 64 are in bounds of both; dst + i is 16-byte aligned (SSE2
        // is part of x86_64).
        unsafe {
            let a = _mm_loadu_si128(s.add(i) as *const __m128i);
            let b = _mm_loadu_si128(s.add(i + 16) as *const __m128i);
            let c = _mm_loadu_si128(s.add(i + 32) as *const __m128i);
            let d = _mm_loadu_si128(s.add(i + 48) as *const __m128i);
            _mm_stream_si128(dst.add(i) as *mut __m128i, a);
            _mm_stream_si128(dst.add(i + 16) as *mut __m128i, b);
            _mm_stream_si128(dst.add(i + 32) as *mut __m128i, c);
            _mm_stream_si128(dst.add(i + 48) as *mut __m128i, d);
        }
        i += 64;
    }
    // SAFETY: the tail i..n is in bounds of both; the fence orders the streaming stores.
    unsafe {
        ptr::copy_nonoverlapping(s.add(i), dst.add(i), n - i);
        _mm_sfence();
    }
}

/// [`copy_nt`] where there are no streaming stores: a plain copy.
///
/// # Safety
/// `dst` must be valid for writes of `src.len()` bytes and not overlap `src`.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn copy_nt(dst: *mut u8, src: &[u8]) {
    // SAFETY: the caller's contract.
    unsafe { ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) }
}

/// The buffer of a send or receive of `count` instances of a non-contiguous datatype:
/// the message is packed from it (a send) or unpacked into it (a receive) range by
/// range as it moves, straight to and from the ring frame, the pipe's segments or a
/// small staging buffer, never as a whole (a whole packed copy of a large message is
/// memory the kernel must fault in and clear on every call: two thirds of the time of a
/// 64 MiB vector's ping-pong went there).
pub struct Typed {
    pub ty: crate::datatype::TypeRef,
    pub count: usize,
    origin: *mut u8,
    /// Bytes of the packed stream of the `count` instances.
    len: usize,
}

// SAFETY: the origin is the MPI caller's buffer, valid until the request completes;
// moving the descriptor between threads does not access it.
unsafe impl Send for Typed {}

impl Typed {
    /// # Safety
    /// `origin` must be the address of a buffer that holds `count` instances of `ty`
    /// (readable for a send, writable for a receive), whose packed stream has `len`
    /// bytes, and that stays valid until the operation completes.
    pub unsafe fn new(
        ty: crate::datatype::TypeRef,
        count: usize,
        origin: *mut u8,
        len: usize,
    ) -> Typed {
        Typed {
            ty,
            count,
            origin,
            len,
        }
    }
    /// Bytes of the packed stream.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Packs stream bytes `off .. off + dst.len()` into `dst`.
    pub fn pack_at(&self, off: usize, dst: &mut [u8]) {
        assert!(off + dst.len() <= self.len);
        // SAFETY: `new`'s contract: the origin holds `count` instances, and the range
        // lies in their stream (checked).
        unsafe { crate::datatype::pack(&self.ty, self.count, self.origin, dst, off) }
    }
    /// Unpacks `src` as stream bytes `off ..` of the buffer, what of it fits.
    pub fn unpack_at(&self, off: usize, src: &[u8]) {
        if off >= self.len {
            return;
        }
        let n = src.len().min(self.len - off);
        // SAFETY: `new`'s contract: the origin holds `count` writable instances (this is
        // a receive's buffer), and the range lies in their stream (clamped); `src` is
        // library memory, not the user's buffer.
        unsafe { crate::datatype::unpack(&self.ty, self.count, self.origin, &src[..n], off) }
    }
    /// The whole packed stream in a new vector (a send whose data must outlive the
    /// call: MPI_Bsend, MPI_Sendrecv_replace).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.len];
        self.pack_at(0, &mut v);
        v
    }
}

/// Staging buffers kept for reuse: the packed copies and staging outputs of
/// non-contiguous data in collectives (coll/stage.rs), which a large call would
/// otherwise take fresh from the kernel each time, every page faulted in and cleared (a
/// 64 MiB MPI_Bcast of a vector type spent most of its time there). Up to
/// `SHMPI_STAGE_KEEP` bytes of them (default 256 MiB) stay with the process after a call.
static KEPT: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

/// Buffers smaller than this come from the allocator as usual (it keeps them itself).
const KEEP_MIN: usize = 256 << 10;

/// A staging vector of `n` bytes: a kept one that is large enough when there is one
/// (its bytes as the last user left them unless `zeroed`), else a new one.
pub fn staging(n: usize, zeroed: bool) -> Vec<u8> {
    if n >= KEEP_MIN {
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        // the smallest that fits
        let best = (0..kept.len())
            .filter(|&i| kept[i].capacity() >= n)
            .min_by_key(|&i| kept[i].capacity());
        if let Some(i) = best {
            let mut v = kept.remove(i);
            drop(kept);
            if zeroed {
                v.clear();
            }
            v.resize(n, 0);
            v.truncate(n);
            return v;
        }
    }
    vec![0u8; n]
}

/// Gives a staging vector back for reuse ([`staging`]); the oldest kept ones go when
/// they would exceed the limit.
pub fn recycle(v: Vec<u8>) {
    if v.capacity() < KEEP_MIN {
        return;
    }
    let limit = crate::settings::rank().stage_keep;
    if v.capacity() > limit {
        return;
    }
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    kept.push(v);
    let mut total: usize = kept.iter().map(|v| v.capacity()).sum();
    while total > limit {
        total -= kept.remove(0).capacity();
    }
}

/// A [`staging`] vector that goes back for reuse ([`recycle`]) when dropped.
pub struct Staging(Vec<u8>);

impl Staging {
    /// As [`staging`].
    pub fn new(n: usize, zeroed: bool) -> Staging {
        Staging(staging(n, zeroed))
    }
}

impl std::ops::Deref for Staging {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.0
    }
}

impl std::ops::DerefMut for Staging {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        recycle(std::mem::take(&mut self.0));
    }
}

/// A buffer argument of `bytes` bytes: NULL is only allowed when empty; MPI_IN_PLACE is
/// rejected (call `is_in_place` first where it is allowed).
///
/// # Safety
/// Unless NULL, `p` must be valid for reads (and for writes, if the operation writes
/// the buffer) of `bytes` bytes until the operation completes (`UserBuf::new`).
#[inline(always)]
pub unsafe fn buffer(p: *const c_void, bytes: usize, arg: &str) -> MpiResult<UserBuf> {
    crate::args::address(p, bytes, "bytes", arg)?;
    // SAFETY: `p` is non-NULL or `bytes` is 0; this function's contract gives the rest.
    Ok(unsafe { UserBuf::new(p as *mut u8, bytes) })
}

/// Two buffers of one call must not overlap (MPI's aliasing rule).
#[inline(always)]
pub fn no_alias(a: &UserBuf, b: &UserBuf, what: &str) -> MpiResult<()> {
    disjoint(a, b, what, "sendbuf and recvbuf alias; use MPI_IN_PLACE")
}

/// As [`no_alias`], with what the call asks for instead (`hint`) in the message.
#[inline(always)]
pub fn disjoint(a: &UserBuf, b: &UserBuf, what: &str, hint: &str) -> MpiResult<()> {
    if a.is_empty() || b.is_empty() {
        return Ok(());
    }
    let (a0, a1) = (a.addr(), a.addr().saturating_add(a.len()));
    let (b0, b1) = (b.addr(), b.addr().saturating_add(b.len()));
    if a0 < b1 && b0 < a1 {
        Err(err(
            MPI_ERR_BUFFER,
            format!("{what}: the buffers overlap ({hint})"),
        ))
    } else {
        Ok(())
    }
}

/// Bytes of the packed stream of `count` instances.
pub fn packed_len(t: &TypeInfo, count: usize) -> MpiResult<usize> {
    count.checked_mul(t.size).ok_or_else(|| {
        err(
            crate::abi::MPI_ERR_COUNT,
            format!("count={count} x size {} overflows", t.size),
        )
    })
}

/// The bytes of `count` instances at `p` of a contiguous datatype, as they are. (A safe
/// fn over the C caller's address, as the C boundary calls it and the buffer functions
/// below: they pass addresses valid as the MPI standard requires.)
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn contiguous(p: *const c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<UserBuf> {
    // SAFETY: `p`: the C caller's buffer, valid as the MPI standard requires.
    unsafe { buffer(p, packed_len(t, count)?, arg) }
}

/// Packs `count` instances at `p` into a staging vector ([`staging`]).
pub fn pack_vec(p: *const c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<Vec<u8>> {
    check_base(p, count, t, arg)?;
    let ty = crate::datatype::lookup(t.handle)?;
    let mut v = staging(packed_len(t, count)?, false);
    if !v.is_empty() {
        // SAFETY: checked; the MPI caller guarantees `count` instances of the datatype at `p`.
        unsafe { crate::datatype::pack(&ty, count, p as *const u8, &mut v, 0) };
    }
    Ok(v)
}

/// What a send of `count` instances at `p` transmits.
pub fn send_data(p: *const c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<SendData> {
    if t.contiguous {
        return Ok(SendData::User(contiguous(p, count, t, arg)?));
    }
    check_base(p, count, t, arg)?;
    let ty = crate::datatype::lookup(t.handle)?;
    let len = packed_len(t, count)?;
    // SAFETY: the MPI caller keeps the send buffer valid until the request completes.
    Ok(SendData::Typed(unsafe {
        Typed::new(ty, count, p as *mut u8, len)
    }))
}

/// Where a receive of `count` instances at `p` puts the message.
pub fn recv_into(p: *mut c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<RecvInto> {
    if t.contiguous {
        return Ok(RecvInto::Bytes(contiguous(p, count, t, arg)?));
    }
    check_base(p, count, t, arg)?;
    let ty = crate::datatype::lookup(t.handle)?;
    let len = packed_len(t, count)?;
    // SAFETY: the MPI caller keeps the receive buffer valid until the request completes.
    Ok(RecvInto::Typed(unsafe {
        Typed::new(ty, count, p as *mut u8, len)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streaming copies at every alignment of source and destination and at lengths
    /// around the 64-byte loop, against a plain copy; the bytes around the
    /// destination range stay untouched.
    #[test]
    fn streaming_copy_matches_plain_copy() {
        let src: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        for len in [256, 257, 300, 319, 320, 1023, 1024, 1025, 4000] {
            for soff in [0, 1, 7, 8, 15, 33] {
                for doff in [0, 1, 3, 8, 15, 16, 63] {
                    let mut dst = vec![0xa5u8; len + 200];
                    // SAFETY: dst holds doff + len bytes; src and dst do not overlap.
                    let b = unsafe { UserBuf::new(dst.as_mut_ptr(), dst.len()) };
                    b.write_at_nt(doff, &src[soff..soff + len], true);
                    assert!(dst[..doff].iter().all(|&x| x == 0xa5));
                    assert_eq!(
                        &dst[doff..doff + len],
                        &src[soff..soff + len],
                        "len {len} soff {soff} doff {doff}"
                    );
                    assert!(dst[doff + len..].iter().all(|&x| x == 0xa5));
                }
            }
        }
    }
}
