//! Streaming pack / unpack: byte ranges of the packed stream of `count` instances.
//!
//! [`pack`] and [`unpack`] move any range of the stream by block loops (whole
//! instances, whole blocks of a segment, a block cut by an end of the range);
//! [`walk`] maps a range to (user offset, stream position, length) pieces in safe code
//! for callers that do more than copy (one-sided communication).
//!
//! Unsafe code here (every block has its SAFETY line):
//! - the user-memory accesses of the block loops; a datatype addresses bytes by
//!   displacement from an origin, which no slice can describe.
//! - MPI_Pack's and MPI_Unpack's user buffers (`Packing`), the C caller's addresses.
use super::derived::{Type, TypeRef};
use super::external;
use super::layout::Layout;
use crate::abi::*;
use crate::error::{err, MpiResult};

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
    if n == 0 {
        return;
    }
    check_range(&t.layout, count, skip, n);
    if let Some(s) = whole_one_seg(&t.layout, count, skip, n) {
        // SAFETY: every piece lies in the type map (this function's contract) and in
        // `out` (whole instances: `out` holds exactly count * size bytes).
        return unsafe {
            one_seg::<true>(s, t.extent(), count, origin.cast_mut(), out.as_mut_ptr())
        };
    }
    let (l, ext) = (&t.layout, t.extent());
    // SAFETY: the range lies in the stream (checked); its blocks lie in the type map
    // (this function's contract) and `out` holds exactly its bytes.
    unsafe { range::<true>(l, ext, skip, n, origin.cast_mut(), out.as_mut_ptr()) }
}

/// Unpacks `inp` as bytes `[skip, skip + inp.len())` of the packed stream of `count`
/// instances of `t` whose buffer starts at `origin`.
///
/// # Safety
/// As [`pack`], with the bytes writable and not aliased by `inp`.
pub unsafe fn unpack(t: &Type, count: usize, origin: *mut u8, inp: &[u8], skip: usize) {
    let n = inp.len();
    if n == 0 {
        return;
    }
    check_range(&t.layout, count, skip, n);
    if let Some(s) = whole_one_seg(&t.layout, count, skip, n) {
        // SAFETY: as in `pack`, for writing; `inp` is only read.
        return unsafe { one_seg::<false>(s, t.extent(), count, origin, inp.as_ptr().cast_mut()) };
    }
    let (l, ext) = (&t.layout, t.extent());
    // SAFETY: as in `pack`, for writing; `inp` is only read.
    unsafe { range::<false>(l, ext, skip, n, origin, inp.as_ptr().cast_mut()) }
}

/// Copies the type map's bytes of `count` instances of `t` from the buffer at `src` to
/// the one at `dst` (the same displacements from each origin; nothing else of `dst` is
/// written), through a small buffer that stays in the cache: an image of a layout for a
/// user-defined operation (coll/stage.rs) is made and copied back this way, without a
/// packed copy of the whole data.
///
/// # Safety
/// As [`pack`] for `src` and as [`unpack`] for `dst`; the two type maps do not overlap.
pub unsafe fn copy_map(t: &Type, count: usize, src: *const u8, dst: *mut u8) {
    let mut tmp = [0u8; 16 << 10];
    let total = t.size() * count;
    let mut off = 0;
    while off < total {
        let k = (total - off).min(tmp.len());
        // SAFETY: this function's contract; `off .. off + k` lies in the stream.
        unsafe {
            pack(t, count, src, &mut tmp[..k], off);
            unpack(t, count, dst, &tmp[..k], off);
        }
        off += k;
    }
}

/// Panics unless `[skip, skip + len)` lies in the packed stream of `count` instances of
/// `l` (callers check; a wrong range would touch memory outside the type map).
fn check_range(l: &Layout, count: usize, skip: usize, len: usize) {
    assert!(
        l.size > 0 && skip.checked_add(len).is_some_and(|e| e <= l.size * count),
        "pack range {skip}+{len} outside {count} x {} bytes",
        l.size
    );
}

/// Packs (`PACK`) or unpacks bytes `[skip, skip + len)` of the packed stream of
/// instances of layout `l` (`extent` bytes apart) by block loops: whole instances by
/// [`instances`]; in a partial instance, each segment's whole blocks by
/// [`seg_blocks`] and a block cut by either end of the range by its length. A pipe
/// segment of a large message is such a range, where [`walk`]'s call per block is
/// several times slower.
///
/// # Safety
/// The range lies in the stream; every block it covers must be readable (`PACK`) or
/// writable (unpack), `stream` must hold `len` bytes, writable when packing, and the
/// two must not overlap.
unsafe fn range<const PACK: bool>(
    l: &Layout,
    extent: isize,
    skip: usize,
    len: usize,
    origin: *mut u8,
    stream: *mut u8,
) {
    let size = l.size;
    let (mut inst, mut off) = (skip / size, skip % size);
    let mut pos = 0usize;
    // One cut block: `n` bytes at `at` of the user's memory and stream byte `pos`.
    let cut = |at: *mut u8, pos: usize, n: usize| {
        // SAFETY: the callers pass `at .. + n` inside a block of the range and `pos ..
        // + n` inside the stream (this function's contract).
        unsafe {
            let here = stream.add(pos);
            if PACK {
                std::ptr::copy_nonoverlapping(at.cast_const(), here, n)
            } else {
                std::ptr::copy_nonoverlapping(here.cast_const(), at, n)
            }
        }
    };
    while pos < len {
        if off == 0 && len - pos >= size {
            let n = (len - pos) / size;
            // SAFETY: instances inst..inst + n lie in the range; the stream holds their
            // bytes from `pos` on (the contract). A one-segment layout's instances are
            // one block loop (a resized basic type: one byte an instance, where a
            // dispatch per instance took 8 s for 1 GiB).
            unsafe {
                match l.segs.as_slice() {
                    [s] => one_seg::<PACK>(
                        *s,
                        extent,
                        n,
                        origin.wrapping_offset(inst as isize * extent),
                        stream.add(pos),
                    ),
                    _ => instances::<PACK>(l, extent, inst..inst + n, origin, stream.add(pos)),
                }
            };
            pos += n * size;
            inst += n;
            continue;
        }
        let base = origin.wrapping_offset(inst as isize * extent);
        let mut j = l.cum.partition_point(|&c| c <= off) - 1;
        while j < l.segs.len() && pos < len {
            let s = l.segs[j];
            // (the divisions only where the range starts inside the segment: at a few
            // bytes a segment, as in an indexed layout, they cost more than the copy)
            let within = off - l.cum[j];
            let (mut k, b) = if within == 0 {
                (0, 0)
            } else {
                (within / s.len, within % s.len)
            };
            let block = |k: usize| base.wrapping_offset(s.disp + k as isize * s.stride);
            if b != 0 {
                let n = (s.len - b).min(len - pos);
                cut(block(k).wrapping_add(b), pos, n);
                pos += n;
                off += n;
                k += 1;
            }
            let nk = if len - pos >= (s.count - k) * s.len {
                s.count - k
            } else {
                (len - pos) / s.len
            };
            if nk > 0 {
                // SAFETY: blocks k..k + nk of segment `s` of this instance lie in the
                // range and the stream holds their bytes from `pos` on.
                unsafe { seg_dispatch::<PACK>(s, k, nk, base, stream.add(pos)) };
                pos += nk * s.len;
                off += nk * s.len;
                k += nk;
            }
            if k < s.count && pos < len {
                let n = len - pos;
                cut(block(k), pos, n);
                pos += n;
                off += n;
            }
            j += 1;
        }
        inst += 1;
        off = 0;
    }
}

/// Packs (`PACK`) or unpacks whole instances `range` of layout `l` (`extent` bytes
/// apart): per instance, per segment, a block loop whose copy is chosen by the block
/// length as in [`one_seg`], where [`walk`] searches for its place and makes a call
/// per block. A struct {int; double} of 12 bytes an element took 21 ns a block that
/// way.
///
/// # Safety
/// Every block of the instances (`origin + i * extent + s.disp + k * s.stride .. +
/// s.len`) must be readable (`PACK`) or writable (unpack), `stream` must hold the
/// instances' packed bytes (`range.len() * l.size`), writable when packing, and the two
/// must not overlap.
unsafe fn instances<const PACK: bool>(
    l: &Layout,
    extent: isize,
    range: std::ops::Range<usize>,
    origin: *mut u8,
    stream: *mut u8,
) {
    let mut pos = 0usize;
    for i in range {
        let base = origin.wrapping_offset(i as isize * extent);
        for s in &l.segs {
            // SAFETY: the blocks of segment `s` of instance `i` and the next
            // `s.count * s.len` stream bytes, per this function's contract.
            unsafe { seg_dispatch::<PACK>(*s, 0, s.count, base, stream.add(pos)) };
            pos += s.count * s.len;
        }
    }
}

/// Blocks `k0..k0 + nk` of segment `s` of the instance at `base`, to or from
/// `stream`, by [`seg_blocks`] of the block's width.
///
/// # Safety
/// As [`seg_blocks`].
#[inline(always)]
unsafe fn seg_dispatch<const PACK: bool>(
    s: super::layout::Seg,
    k0: usize,
    nk: usize,
    base: *mut u8,
    stream: *mut u8,
) {
    if nk == 1 && s.len <= 64 {
        // One block (most segments of an indexed or struct layout): its copy by
        // width class, without the jump on its exact width, which varies from
        // segment to segment there and is mispredicted.
        let at = base.wrapping_offset(s.disp + k0 as isize * s.stride);
        let (src, dst) = if PACK {
            (at.cast_const(), stream)
        } else {
            (stream.cast_const(), at)
        };
        // SAFETY: block k0 of the segment and its stream bytes (the contract).
        return unsafe { block_copy::<0>(src, dst, s.len) };
    }
    // SAFETY (each arm): this function's contract, with W == s.len or 0.
    unsafe {
        match s.len {
            1 => seg_blocks::<PACK, 1>(s, k0, nk, base, stream),
            2 => seg_blocks::<PACK, 2>(s, k0, nk, base, stream),
            4 => seg_blocks::<PACK, 4>(s, k0, nk, base, stream),
            8 => seg_blocks::<PACK, 8>(s, k0, nk, base, stream),
            16 => seg_blocks::<PACK, 16>(s, k0, nk, base, stream),
            32 => seg_blocks::<PACK, 32>(s, k0, nk, base, stream),
            64 => seg_blocks::<PACK, 64>(s, k0, nk, base, stream),
            _ => seg_blocks::<PACK, 0>(s, k0, nk, base, stream),
        }
    }
}

/// Blocks `k0..k0 + nk` of segment `s` of the instance at `base`, to or from `stream`:
/// `W` bytes each (0: `s.len`, copied with a variable length).
///
/// # Safety
/// Those blocks must be readable (`PACK`) or writable (unpack), `stream` must hold
/// `nk * s.len` bytes, writable when packing, and the two must not overlap.
#[inline(always)]
unsafe fn seg_blocks<const PACK: bool, const W: usize>(
    s: super::layout::Seg,
    k0: usize,
    nk: usize,
    base: *mut u8,
    stream: *mut u8,
) {
    let w = if W == 0 { s.len } else { W };
    let mut at = base.wrapping_offset(s.disp + k0 as isize * s.stride);
    for k in 0..nk {
        // SAFETY: block `k` of the segment and its `w` stream bytes (the contract).
        unsafe {
            let here = stream.add(k * w);
            let (src, dst) = if PACK {
                (at.cast_const(), here)
            } else {
                (here.cast_const(), at)
            };
            block_copy::<W>(src, dst, w);
        }
        at = at.wrapping_offset(s.stride);
    }
}

/// Copies one block of `w` bytes: a fixed-width move when `W` is its width, else (`W`
/// 0) two overlapping fixed-width moves up to 64 bytes, a memcpy beyond (a call of
/// memcpy for each block of a few bytes cost more than the copy).
///
/// # Safety
/// `src .. + w` readable, `dst .. + w` writable, not overlapping.
#[inline(always)]
unsafe fn block_copy<const W: usize>(src: *const u8, dst: *mut u8, w: usize) {
    /// `N` bytes from `s` to `d`, unaligned.
    ///
    /// # Safety
    /// As `block_copy`, for `N` bytes.
    #[inline(always)]
    unsafe fn mv<const N: usize>(s: *const u8, d: *mut u8) {
        // SAFETY: the caller's contract.
        unsafe {
            d.cast::<[u8; N]>()
                .write_unaligned(s.cast::<[u8; N]>().read_unaligned())
        }
    }
    if W != 0 {
        // SAFETY: `w == W` bytes, the contract.
        return unsafe { mv::<W>(src, dst) };
    }
    // SAFETY (every arm): the head and the tail move lie in the block (each move's
    // width is at most `w`), which the contract gives.
    unsafe {
        match w {
            33..=64 => {
                mv::<32>(src, dst);
                mv::<32>(src.add(w - 32), dst.add(w - 32));
            }
            16..=32 => {
                mv::<16>(src, dst);
                mv::<16>(src.add(w - 16), dst.add(w - 16));
            }
            8..=15 => {
                mv::<8>(src, dst);
                mv::<8>(src.add(w - 8), dst.add(w - 8));
            }
            4..=7 => {
                mv::<4>(src, dst);
                mv::<4>(src.add(w - 4), dst.add(w - 4));
            }
            0..=3 => {
                for i in 0..w {
                    *dst.add(i) = *src.add(i);
                }
            }
            _ => std::ptr::copy_nonoverlapping(src, dst, w),
        }
    }
}

/// The segment of a layout made of one (a vector of equal blocks: a resized or strided
/// basic type, MPI_Type_vector of one, ...) when `[skip, skip + len)` is the whole
/// packed stream of `count` instances: then [`one_seg`] moves it.
fn whole_one_seg(l: &Layout, count: usize, skip: usize, len: usize) -> Option<super::layout::Seg> {
    match l.segs.as_slice() {
        [s] if skip == 0 && len > 0 && Some(len) == l.size.checked_mul(count) => Some(*s),
        _ => None,
    }
}

/// Packs (`PACK`) or unpacks the whole stream of `count` instances of a one-segment
/// layout `s`: per instance, the segment's block loop of [`seg_dispatch`], whose block
/// copy is chosen once by the block's length; one block an instance (a resized basic
/// type) is one loop over the instances, as the blocks of a single segment `extent`
/// apart, instead of an inner loop of one block (1 GiB of a resized MPI_CHAR took 8 s
/// with a dispatch per instance).
///
/// # Safety
/// `origin + i * extent + s.disp + k * s.stride .. + s.len` (every instance `i`, every
/// block `k`) must be readable (`PACK`) or writable (unpack), `stream` must hold
/// `count * s.count * s.len` bytes, writable when packing, and the two must not
/// overlap.
unsafe fn one_seg<const PACK: bool>(
    s: super::layout::Seg,
    extent: isize,
    count: usize,
    origin: *mut u8,
    stream: *mut u8,
) {
    let (s, count) = if s.count == 1 && count > 1 {
        let flat = super::layout::Seg {
            count,
            stride: extent,
            ..s
        };
        (flat, 1)
    } else {
        (s, count)
    };
    let per = s.count * s.len;
    for i in 0..count {
        // SAFETY: instance `i`'s blocks (the flattened segment addresses the same ones)
        // and its `per` stream bytes, per this function's contract.
        unsafe {
            seg_dispatch::<PACK>(
                s,
                0,
                s.count,
                origin.wrapping_offset(i as isize * extent),
                stream.add(i * per),
            )
        };
    }
}

// ---------------------------------------------------------------------------------------
// MPI_Pack, MPI_Unpack, MPI_Pack_size and their external32 forms

/// The representation a pack call writes: this machine's (MPI_Pack) or "external32"
/// (MPI_Pack_external, datatype/external.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rep {
    Native,
    External32,
}

/// The bytes of `count` instances of `t` in this machine's packed form (`count` is the
/// argument as given, for the message).
fn native_bytes(t: &Type, n: usize, count: i64) -> MpiResult<usize> {
    super::packed_size(t, n).ok_or_else(|| {
        err(
            MPI_ERR_COUNT,
            format!("count={count} x size {} overflows", t.size()),
        )
    })
}

/// The bytes of `count` instances of `t` in `rep`.
fn rep_bytes(rep: Rep, t: &Type, n: usize, count: i64) -> MpiResult<usize> {
    match rep {
        Rep::Native => native_bytes(t, n, count),
        Rep::External32 => external::size(t, n),
    }
}

/// The position argument: `pos + bytes` must fit in `cap` (`capname` names it).
fn window(rep: Rep, pos: i64, bytes: usize, cap: i64, capname: &str) -> MpiResult<usize> {
    if pos < 0 {
        return Err(err(MPI_ERR_ARG, format!("position={pos} is negative")));
    }
    if cap < 0 {
        return Err(err(MPI_ERR_ARG, format!("{capname}={cap} is negative")));
    }
    if (pos as u64)
        .checked_add(bytes as u64)
        .is_none_or(|end| end > cap as u64)
    {
        let what = match rep {
            Rep::Native => "packed",
            Rep::External32 => "external32",
        };
        return Err(err(
            MPI_ERR_TRUNCATE,
            format!("{bytes} {what} bytes at position={pos} do not fit in {capname}={cap} bytes"),
        ));
    }
    Ok(pos as usize)
}

/// A pack or unpack call whose count, datatype and position arguments are checked:
/// `count` instances of `t` take `bytes` bytes in `rep`, at byte `pos` of the packed
/// buffer.
pub struct Packing {
    pub rep: Rep,
    pub count: usize,
    pub t: TypeRef,
    pub bytes: usize,
    pub pos: usize,
    /// This machine's packed form of the data (external32 converts it).
    native: usize,
}

impl Packing {
    /// Checks the arguments: `count` instances (named `arg`) of `datatype` at
    /// `position` of a packed buffer of `cap` bytes (named `capname`).
    pub fn new(
        rep: Rep,
        count: i64,
        arg: &str,
        datatype: i32,
        position: i64,
        cap: i64,
        capname: &str,
    ) -> MpiResult<Packing> {
        let (n, t, bytes) = typed(rep, count, arg, datatype)?;
        let pos = window(rep, position, bytes, cap, capname)?;
        let native = match rep {
            Rep::Native => bytes,
            Rep::External32 if bytes > 0 => native_bytes(&t, n, count)?,
            Rep::External32 => 0,
        };
        Ok(Packing {
            rep,
            count: n,
            t,
            bytes,
            pos,
            native,
        })
    }

    /// Packs the data at `origin` into `out` (the `bytes` bytes from `pos` on); returns
    /// the new position.
    ///
    /// # Safety
    /// `origin` holds `count` instances of the datatype (MPI_Pack's `inbuf`, valid as the
    /// MPI standard requires of its caller).
    pub unsafe fn pack(&self, origin: *const u8, out: &mut [u8]) -> MpiResult<usize> {
        let (t, n) = (&self.t, self.count);
        match self.rep {
            // SAFETY: `origin` holds `count` instances (this function's contract).
            Rep::Native => unsafe { pack(t, n, origin, out, 0) },
            Rep::External32 => {
                let mut native = vec![0u8; self.native];
                // SAFETY: as above.
                unsafe { pack(t, n, origin, &mut native, 0) };
                external::to_external(t, n, &native, out)?;
            }
        }
        Ok(self.pos + self.bytes)
    }

    /// Unpacks `inp` (the `bytes` bytes from `pos` on) into the data at `origin`;
    /// returns the new position.
    ///
    /// # Safety
    /// `origin` has room for `count` instances of the datatype and does not overlap
    /// `inp` (MPI_Unpack's `outbuf`, valid as the MPI standard requires of its caller).
    pub unsafe fn unpack(&self, inp: &[u8], origin: *mut u8) -> MpiResult<usize> {
        let (t, n) = (&self.t, self.count);
        match self.rep {
            // SAFETY: `origin` has room for `count` instances (this function's contract).
            Rep::Native => unsafe { unpack(t, n, origin, inp, 0) },
            Rep::External32 => {
                let mut native = vec![0u8; self.native];
                external::from_external(t, n, inp, &mut native)?;
                // SAFETY: as above.
                unsafe { unpack(t, n, origin, &native, 0) };
            }
        }
        Ok(self.pos + self.bytes)
    }
}

/// The count and datatype arguments of a pack call: (count, type, bytes in `rep`).
fn typed(rep: Rep, count: i64, arg: &str, datatype: i32) -> MpiResult<(usize, TypeRef, usize)> {
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("{arg}={count} is negative")));
    }
    let n = count as usize;
    let t = super::lookup_arg(datatype, "datatype")?;
    let bytes = rep_bytes(rep, &t, n, count)?;
    Ok((n, t, bytes))
}

/// MPI_Pack_size / MPI_Pack_external_size: the bytes `incount` instances of `datatype`
/// take in `rep`.
pub fn pack_size(rep: Rep, incount: i64, datatype: i32) -> MpiResult<usize> {
    Ok(typed(rep, incount, "incount", datatype)?.2)
}
