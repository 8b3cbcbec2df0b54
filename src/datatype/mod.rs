//! Datatypes: the predefined table (sizes, extents, element kinds, reduction type
//! classes), derived datatypes (MPI §4.1) and the pack / unpack engine.
//!
//! # API for point-to-point, collectives and reductions
//!
//! - [`lookup`]`(h) -> MpiResult<TypeRef>`: a datatype usable in communication (valid
//!   and committed; MPI_ERR_TYPE says which of null / invalid / freed / not committed).
//!   Resolve once per operation and hold the `TypeRef` (an `Arc`): MPI_Type_free
//!   meanwhile is safe. [`lookup_arg`] names the argument in the message.
//! - On a [`Type`]: `size()`, `lb()`, `extent()`, `true_lb()`, `true_extent()`,
//!   `is_contiguous()` (one block of `size` bytes at displacement 0 with extent == size:
//!   `count` instances are the plain bytes `buf[..count*size]`, no packing needed).
//! - [`span`]`(t, count) -> Option<(isize, usize)>`: the user bytes `count` instances
//!   touch, as (offset from the buffer address, length) — for buffer validation.
//! - [`pack`]`(t, count, origin, out, skip)` / [`unpack`]`(t, count, origin, inp, skip)`
//!   (unsafe: `origin` is the user's buffer address): bytes `[skip, skip+len)` of the
//!   packed stream (`count * size` bytes), so a large message can be pipelined segment
//!   by segment. Safe variants over a slice: [`pack_slice`], [`unpack_slice`].
//! - [`basic_elem`]`(h) -> Option<(predefined handle, count per instance)>` if every
//!   data entry of the type map is the same predefined type. Predefined ops reduce a
//!   derived type through it: `op::apply` accepts a derived handle for a predefined op
//!   and then expects PACKED data (`count * size` bytes in each slice).
//! - [`get_elements`]`(t, bytes) -> Option<u64>`: MPI_Get_elements for a received byte
//!   count (None = MPI_UNDEFINED).
//! - [`info`]`(h) -> Option<(size, extent)>` for a committed type (kept for callers that
//!   only need the two numbers).
//!
//! Unsafe code here (every block has its SAFETY line):
//! - `pack_slice`/`unpack_slice` call [`pack::pack`]/[`pack::unpack`] on a slice; pack.rs
//!   walks a datatype's byte displacements from a raw origin (only `pack::raw` touches
//!   user memory). The other submodules deny unsafe code.
pub mod derived;
pub mod external;
pub mod layout;
pub mod pack;
pub mod predefined;

#[cfg(test)]
mod tests;

pub use derived::{Type, TypeRef};
pub use pack::{copy_map, pack, unpack};

use crate::abi::*;
use crate::error::{err, MpiResult};

/// (size, extent) of a valid, committed datatype.
pub fn info(h: i32) -> Option<(usize, usize)> {
    if let Some(p) = predefined::lookup(h) {
        return Some((p.size, p.extent));
    }
    let t = derived::get_committed(h, "datatype").ok()?;
    Some((t.size(), t.extent().max(0) as usize))
}

/// A valid, committed datatype, for communication.
pub fn lookup(h: i32) -> MpiResult<TypeRef> {
    derived::get_committed(h, "datatype")
}

/// As [`lookup`], naming argument `arg` in the error message.
pub fn lookup_arg(h: i32, arg: &str) -> MpiResult<TypeRef> {
    derived::get_committed(h, arg)
}

/// The single predefined type of a homogeneous datatype and its count per instance
/// (a predefined type is its own basic type, count 1). None if the type map mixes
/// types, is empty, or the handle is invalid.
pub fn basic_elem(h: i32) -> Option<(i32, usize)> {
    if let Some(p) = predefined::lookup(h) {
        if p.size == 0 {
            return None;
        }
        return Some((h, 1));
    }
    derived::get(h, "datatype").ok()?.basic_elem()
}

/// The user bytes that `count` instances of `t` touch: (offset from the buffer address,
/// length): from true_lb to (count-1)*extent + true_lb + true_extent, the other way
/// round for a negative extent; (0, 0) when nothing is touched. None on overflow.
pub fn span(t: &Type, count: usize) -> Option<(isize, usize)> {
    if count == 0 || t.size() == 0 {
        return Some((0, 0));
    }
    let last = ((count - 1) as i128) * (t.extent() as i128);
    let lo = t.true_lb() as i128 + last.min(0);
    let hi = t.true_lb() as i128 + t.true_extent() as i128 + last.max(0);
    let len = hi - lo;
    if len < 0 || len > isize::MAX as i128 || lo < isize::MIN as i128 || lo > isize::MAX as i128 {
        return None;
    }
    Some((lo as isize, len as usize))
}

/// Bytes of the packed stream of `count` instances (`count * size`), None on overflow.
pub fn packed_size(t: &Type, count: usize) -> Option<usize> {
    count.checked_mul(t.size())
}

/// MPI_Get_elements: the basic elements in `bytes` bytes of data of type `t` (a whole
/// number of instances plus possibly a prefix of one). None (MPI_UNDEFINED) if the
/// bytes end inside a basic element.
pub fn get_elements(t: &Type, bytes: u64) -> Option<u64> {
    let size = t.size() as u64;
    if size == 0 {
        return if bytes == 0 { Some(0) } else { None };
    }
    let full = bytes / size;
    let mut rem = bytes % size;
    let mut n = full.checked_mul(t.layout.elem_count() as u64)?;
    for &(esz, run) in &t.layout.elems {
        if rem == 0 {
            break;
        }
        let whole = (esz as u64) * (run as u64);
        if rem >= whole {
            rem -= whole;
            n += run as u64;
        } else {
            n += rem / esz as u64;
            rem %= esz as u64;
            break;
        }
    }
    if rem != 0 {
        None
    } else {
        Some(n)
    }
}

/// MPI_Get_count: the whole instances of `t` in `bytes` bytes. None (MPI_UNDEFINED) if
/// the bytes are not a whole number of them.
pub fn count_of(t: &Type, bytes: u64) -> Option<u64> {
    let size = t.size() as u64;
    if size == 0 {
        return (bytes == 0).then_some(0);
    }
    bytes.is_multiple_of(size).then_some(bytes / size)
}

/// The inverse of [`get_elements`]: the bytes that the first `n` basic elements of a
/// sequence of instances of `t` occupy (MPI_Status_set_elements).
pub fn elements_bytes(t: &Type, n: u64) -> Option<u64> {
    let per = t.layout.elem_count() as u64;
    if per == 0 {
        return (n == 0).then_some(0);
    }
    let mut bytes = (n / per).checked_mul(t.size() as u64)?;
    let mut rem = n % per;
    for &(esz, run) in &t.layout.elems {
        let k = rem.min(run as u64);
        bytes = bytes.checked_add(k * esz as u64)?;
        rem -= k;
        if rem == 0 {
            break;
        }
    }
    Some(bytes)
}

/// Checks that `buf` (a slice whose byte `origin` is the buffer address) holds `count`
/// instances of `t`.
fn check_slice(t: &Type, count: usize, buf_len: usize, origin: usize) -> MpiResult<()> {
    let (off, len) = span(t, count)
        .ok_or_else(|| err(MPI_ERR_COUNT, format!("count={count}: the span overflows")))?;
    if len == 0 {
        return Ok(());
    }
    let start = origin as i128 + off as i128;
    if start < 0 || start + len as i128 > buf_len as i128 {
        return Err(err(
            MPI_ERR_BUFFER,
            format!(
                "{count} instances span bytes [{start}, {}) of a {buf_len}-byte buffer",
                start + len as i128
            ),
        ));
    }
    Ok(())
}

fn check_range(t: &Type, count: usize, skip: usize, len: usize) -> MpiResult<()> {
    let total = packed_size(t, count).unwrap_or(usize::MAX);
    if skip.checked_add(len).is_none_or(|e| e > total) {
        return Err(err(
            MPI_ERR_TRUNCATE,
            format!("bytes [{skip}, {skip}+{len}) are beyond the {total}-byte packed stream"),
        ));
    }
    Ok(())
}

/// [`pack`] from a slice whose byte `origin` is the buffer address.
pub fn pack_slice(
    t: &Type,
    count: usize,
    buf: &[u8],
    origin: usize,
    out: &mut [u8],
    skip: usize,
) -> MpiResult<()> {
    check_slice(t, count, buf.len(), origin)?;
    check_range(t, count, skip, out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    // SAFETY: check_slice verified that every byte the instances touch is inside `buf`.
    unsafe { pack(t, count, buf.as_ptr().wrapping_add(origin), out, skip) };
    Ok(())
}

/// [`unpack`] into a slice whose byte `origin` is the buffer address.
pub fn unpack_slice(
    t: &Type,
    count: usize,
    buf: &mut [u8],
    origin: usize,
    inp: &[u8],
    skip: usize,
) -> MpiResult<()> {
    check_slice(t, count, buf.len(), origin)?;
    check_range(t, count, skip, inp.len())?;
    if inp.is_empty() {
        return Ok(());
    }
    // SAFETY: check_slice verified that every byte the instances touch is inside `buf`,
    // which is borrowed mutably and so does not alias `inp`.
    unsafe { unpack(t, count, buf.as_mut_ptr().wrapping_add(origin), inp, skip) };
    Ok(())
}

/// What the engine needs to know of a datatype. For a type that is not `contiguous`,
/// data moves through `datatype::pack` / `datatype::unpack` on the `TypeRef` that
/// `datatype::lookup_arg` returns (hold it for the operation).
#[derive(Clone, Copy, Debug)]
pub struct TypeInfo {
    pub handle: i32,
    pub size: usize,
    pub extent: usize,
    /// One block of `size` bytes at displacement 0 with extent == size.
    pub contiguous: bool,
    pub lb: isize,
    pub true_lb: isize,
}

/// What the engine needs to know of a datatype argument (`arg` names it in errors):
/// valid and committed.
pub fn type_info(h: i32, arg: &str) -> MpiResult<TypeInfo> {
    if let Some(p) = predefined::lookup(h) {
        return Ok(TypeInfo {
            handle: h,
            size: p.size,
            extent: p.extent,
            contiguous: p.size == p.extent && p.true_extent == p.size,
            lb: 0,
            true_lb: 0,
        });
    }
    let t = lookup_arg(h, arg)?;
    Ok(TypeInfo {
        handle: h,
        size: t.size(),
        extent: t.extent().max(0) as usize,
        contiguous: t.is_contiguous(),
        lb: t.lb(),
        true_lb: t.true_lb(),
    })
}
