//! Streaming pack / unpack: byte ranges of the packed stream of `count` instances.
//!
//! [`walk`] maps a range of the packed stream to (user offset, stream position, length)
//! pieces in safe code; [`raw`] is the only place that touches user memory.
use super::derived::Type;
use super::layout::Layout;

/// Calls `f(user_offset, pos, len)` for each contiguous piece of packed-stream bytes
/// `[skip, skip + len)` of `count` instances with `extent` bytes between instances;
/// `pos` is relative to `skip`, `user_offset` to the buffer origin.
/// Panics if the range exceeds `count * size` (callers check).
pub fn walk(
    l: &Layout,
    extent: isize,
    count: usize,
    skip: usize,
    len: usize,
    mut f: impl FnMut(isize, usize, usize),
) {
    if len == 0 {
        return;
    }
    let size = l.size;
    assert!(
        size > 0 && skip.checked_add(len).is_some_and(|e| e <= size * count),
        "pack range {skip}+{len} outside {count} x {size} bytes"
    );
    if let Some(d) = l.contiguous_at() {
        f(d + skip as isize, 0, len);
        return;
    }
    let mut inst = skip / size;
    let mut off = skip % size;
    let mut pos = 0usize;
    while pos < len {
        let base = inst as isize * extent;
        let mut j = l.cum.partition_point(|&c| c <= off) - 1;
        while j < l.segs.len() && pos < len {
            let s = l.segs[j];
            let within = off - l.cum[j];
            let mut k = within / s.len;
            let mut b = within % s.len;
            let mut at = base + s.disp + k as isize * s.stride;
            while k < s.count && pos < len {
                let n = (s.len - b).min(len - pos);
                f(at + b as isize, pos, n);
                pos += n;
                off += n;
                b = 0;
                k += 1;
                at += s.stride;
            }
            j += 1;
        }
        inst += 1;
        off = 0;
    }
}

/// Packs bytes `[skip, skip + out.len())` of the packed stream of `count` instances of
/// `t` whose buffer starts at `origin`.
///
/// # Safety
/// Every byte of the type map of the `count` instances, i.e.
/// `origin + [true_lb, true_lb + (count-1)*extent + true_extent)` (see
/// [`super::span`]), must be readable, as the MPI rules require of a send buffer.
pub unsafe fn pack(t: &Type, count: usize, origin: *const u8, out: &mut [u8], skip: usize) {
    let n = out.len();
    walk(&t.layout, t.extent(), count, skip, n, |off, pos, len| {
        // SAFETY: `off..off+len` lies inside the type map of the instances (walk only
        // yields type-map bytes), readable per this function's contract; `pos..pos+len`
        // lies inside `out` (walk keeps pos + len <= out.len()).
        unsafe { raw::read(origin, off, &mut out[pos..pos + len]) }
    });
}

/// Unpacks `inp` as bytes `[skip, skip + inp.len())` of the packed stream of `count`
/// instances of `t` whose buffer starts at `origin`.
///
/// # Safety
/// As [`pack`], with the bytes writable and not aliased by `inp`.
pub unsafe fn unpack(t: &Type, count: usize, origin: *mut u8, inp: &[u8], skip: usize) {
    let n = inp.len();
    walk(&t.layout, t.extent(), count, skip, n, |off, pos, len| {
        // SAFETY: as in `pack`, for writing.
        unsafe { raw::write(origin, off, &inp[pos..pos + len]) }
    });
}

/// The raw user-memory access: two copies.
mod raw {
    /// Copies `dst.len()` bytes from `origin + off` into `dst`.
    ///
    /// # Safety
    /// `origin + off .. + dst.len()` must be readable and not overlap `dst`.
    #[inline]
    pub unsafe fn read(origin: *const u8, off: isize, dst: &mut [u8]) {
        // SAFETY: per the contract above; wrapping_offset + copy read only valid bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(origin.wrapping_offset(off), dst.as_mut_ptr(), dst.len())
        }
    }

    /// Copies `src` to `origin + off`.
    ///
    /// # Safety
    /// `origin + off .. + src.len()` must be writable and not overlap `src`.
    #[inline]
    pub unsafe fn write(origin: *mut u8, off: isize, src: &[u8]) {
        // SAFETY: per the contract above.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), origin.wrapping_offset(off), src.len())
        }
    }
}
