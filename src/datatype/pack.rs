//! Streaming pack / unpack: byte ranges of the packed stream of `count` instances.
//!
//! [`walk`] maps a range of the packed stream to (user offset, stream position, length)
//! pieces in safe code; [`raw`] is the only place that touches user memory.
//!
//! Unsafe code here (every block has its SAFETY line):
//! - the user-memory accesses of `raw` and the typed block loops; a datatype addresses
//!   bytes by displacement from an origin, which no slice can describe.
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
    if let Some(s) = whole_one_seg(&t.layout, count, skip, n) {
        // SAFETY: every piece lies in the type map (this function's contract) and in
        // `out` (whole instances: `out` holds exactly count * size bytes).
        return unsafe {
            one_seg::<true>(s, t.extent(), count, origin.cast_mut(), out.as_mut_ptr())
        };
    }
    let (l, ext) = (&t.layout, t.extent());
    let piecewise = |skip: usize, out: &mut [u8]| {
        walk(l, ext, count, skip, out.len(), |off, pos, len| {
            // SAFETY: `off..off+len` lies inside the type map of the instances (walk only
            // yields type-map bytes), readable per this function's contract;
            // `pos..pos+len` lies inside `out` (walk keeps pos + len <= out.len()).
            unsafe { raw::read(origin, off, &mut out[pos..pos + len]) }
        })
    };
    let Some((first, last)) = whole_instances(l, skip, n) else {
        return piecewise(skip, out);
    };
    let size = l.size;
    let (head, rest) = out.split_at_mut(first * size - skip);
    let (mid, tail) = rest.split_at_mut((last - first) * size);
    piecewise(skip, head);
    // SAFETY: instances first..last lie in the type map (this function's contract) and
    // `mid` holds exactly their packed bytes.
    unsafe { instances::<true>(l, ext, first..last, origin.cast_mut(), mid.as_mut_ptr()) };
    piecewise(last * size, tail);
}

/// Unpacks `inp` as bytes `[skip, skip + inp.len())` of the packed stream of `count`
/// instances of `t` whose buffer starts at `origin`.
///
/// # Safety
/// As [`pack`], with the bytes writable and not aliased by `inp`.
pub unsafe fn unpack(t: &Type, count: usize, origin: *mut u8, inp: &[u8], skip: usize) {
    let n = inp.len();
    if let Some(s) = whole_one_seg(&t.layout, count, skip, n) {
        // SAFETY: as in `pack`, for writing; `inp` is only read.
        return unsafe { one_seg::<false>(s, t.extent(), count, origin, inp.as_ptr().cast_mut()) };
    }
    let (l, ext) = (&t.layout, t.extent());
    let piecewise = |skip: usize, inp: &[u8]| {
        walk(l, ext, count, skip, inp.len(), |off, pos, len| {
            // SAFETY: as in `pack`, for writing.
            unsafe { raw::write(origin, off, &inp[pos..pos + len]) }
        })
    };
    let Some((first, last)) = whole_instances(l, skip, n) else {
        return piecewise(skip, inp);
    };
    let size = l.size;
    let (head, rest) = inp.split_at(first * size - skip);
    let (mid, tail) = rest.split_at((last - first) * size);
    piecewise(skip, head);
    // SAFETY: as in `pack`, for writing; `mid` is only read.
    unsafe { instances::<false>(l, ext, first..last, origin, mid.as_ptr().cast_mut()) };
    piecewise(last * size, tail);
}

/// The whole instances `first..last` inside packed bytes `[skip, skip + len)` of
/// layout `l`, when there is at least one: [`instances`] moves those, [`walk`] the
/// partial ones around them.
fn whole_instances(l: &Layout, skip: usize, len: usize) -> Option<(usize, usize)> {
    if l.segs.is_empty() || l.size == 0 {
        return None;
    }
    let (first, last) = (skip.div_ceil(l.size), (skip + len) / l.size);
    (last > first).then_some((first, last))
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
            unsafe {
                let here = stream.add(pos);
                match s.len {
                    1 => seg_blocks::<PACK, 1>(*s, base, here),
                    2 => seg_blocks::<PACK, 2>(*s, base, here),
                    4 => seg_blocks::<PACK, 4>(*s, base, here),
                    8 => seg_blocks::<PACK, 8>(*s, base, here),
                    16 => seg_blocks::<PACK, 16>(*s, base, here),
                    _ => seg_blocks::<PACK, 0>(*s, base, here),
                }
            }
            pos += s.count * s.len;
        }
    }
}

/// The blocks of segment `s` of the instance at `base`, to or from `stream`: `W` bytes
/// each (0: `s.len`, copied with a variable length).
///
/// # Safety
/// As [`instances`], for this segment of one instance.
#[inline(always)]
unsafe fn seg_blocks<const PACK: bool, const W: usize>(
    s: super::layout::Seg,
    base: *mut u8,
    stream: *mut u8,
) {
    let w = if W == 0 { s.len } else { W };
    let mut at = base.wrapping_offset(s.disp);
    for k in 0..s.count {
        // SAFETY: block `k` of the segment and its `w` stream bytes (the contract).
        unsafe {
            let here = stream.add(k * w);
            let (src, dst) = if PACK {
                (at.cast_const(), here)
            } else {
                (here.cast_const(), at)
            };
            std::ptr::copy_nonoverlapping(src, dst, w);
        }
        at = at.wrapping_offset(s.stride);
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
/// layout `s`: a loop over instances and blocks whose block copy is chosen once by the
/// block's length (1, 2, 4, 8 or 16 bytes: one load and one store), where [`walk`]
/// makes a call and a variable-length copy per block. A 2 GiB message of a resized
/// MPI_CHAR (extent 2) took 49 s to send and receive that way, 23 s so (most of the
/// rest: first touches of the buffers).
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
    /// One block length: `W` bytes (0: `s.len`, copied with a variable length).
    ///
    /// # Safety
    /// As `one_seg`.
    #[inline(always)]
    unsafe fn blocks<const PACK: bool, const W: usize>(
        s: super::layout::Seg,
        extent: isize,
        count: usize,
        origin: *mut u8,
        stream: *mut u8,
    ) {
        let w = if W == 0 { s.len } else { W };
        let mut pos = 0usize;
        for i in 0..count {
            let mut at = origin.wrapping_offset(i as isize * extent + s.disp);
            for _ in 0..s.count {
                // SAFETY: `at .. at + w` is a block of the type map and `stream + pos ..
                // + w` lies in the stream (pos < count * s.count * w), per the contract.
                unsafe {
                    let here = stream.add(pos);
                    let (src, dst) = if PACK {
                        (at.cast_const(), here)
                    } else {
                        (here.cast_const(), at)
                    };
                    std::ptr::copy_nonoverlapping(src, dst, w);
                }
                pos += w;
                at = at.wrapping_offset(s.stride);
            }
        }
    }
    // SAFETY (each arm): the contract of this function, with W == s.len or 0.
    unsafe {
        match s.len {
            1 => blocks::<PACK, 1>(s, extent, count, origin, stream),
            2 => blocks::<PACK, 2>(s, extent, count, origin, stream),
            4 => blocks::<PACK, 4>(s, extent, count, origin, stream),
            8 => blocks::<PACK, 8>(s, extent, count, origin, stream),
            16 => blocks::<PACK, 16>(s, extent, count, origin, stream),
            _ => blocks::<PACK, 0>(s, extent, count, origin, stream),
        }
    }
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
