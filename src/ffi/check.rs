//! Validators by parameter kind. Each returns a clear `MpiError` naming the argument and
//! its value; entry points call them before touching the engine.
//!
//! The validators that take a pointer to the caller's memory (`buffer`, `out`, `inp`,
//! `array`, `plan_array`, `array_mut`, `c_string`) are unsafe fns: they check NULL and
//! MPI_IN_PLACE, but only the MPI caller can vouch for the rest, so each says in its
//! `# Safety` section what the pointer must be valid for. (The entry points' bodies run
//! in an unsafe context, see `mpi_entry!`; other callers say why in a SAFETY line.)
#![deny(clippy::not_unsafe_ptr_arg_deref, clippy::missing_safety_doc)]
use crate::abi::*;
pub use crate::args::*;
use crate::error::{err, MpiResult};
pub use crate::p2p::buf::{buffer, no_alias};
use std::borrow::Cow;
use std::os::raw::c_int;

/// Writes through an output pointer, rejecting NULL.
///
/// # Safety
/// Unless NULL, `p` must be valid for a write of one (aligned) `T`.
pub unsafe fn out<T>(p: *mut T, v: T, arg: &str) -> MpiResult<()> {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{arg} is NULL")));
    }
    // SAFETY: non-NULL (checked); valid for the write (this function's contract).
    unsafe { p.write(v) };
    Ok(())
}

/// Reads an input pointer, rejecting NULL.
///
/// # Safety
/// Unless NULL, `p` must be valid for a read of one (aligned, initialized) `T`.
pub unsafe fn inp<T: Copy>(p: *const T, arg: &str) -> MpiResult<T> {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{arg} is NULL")));
    }
    // SAFETY: non-NULL (checked); valid for the read (this function's contract).
    Ok(unsafe { p.read() })
}

/// An array argument of `n` elements, rejecting NULL when n > 0.
///
/// # Safety
/// When `n > 0` and `p` is not NULL, `p` must point to `n` initialized, aligned `T`
/// that nobody writes for the lifetime `'a` the caller picks.
pub unsafe fn array<'a, T>(p: *const T, n: usize, arg: &str) -> MpiResult<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{arg} is NULL")));
    }
    // SAFETY: non-NULL (checked); `n` valid elements for `'a` (this function's contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// An array argument of `n` elements that a collective's plan reads (counts,
/// displacements, datatypes): an _init call records a copy, which each start of the
/// persistent request reads instead of the program's array (crate::pin).
///
/// # Safety
/// As for [`array`].
pub unsafe fn plan_array<'a, T: Copy + Send + Sync + 'static>(
    p: *const T,
    n: usize,
    arg: &str,
) -> MpiResult<Cow<'a, [T]>> {
    if n > 0 && !p.is_null() {
        if let Some(v) = crate::pin::replayed_array(p, n) {
            return Ok(Cow::Owned(v));
        }
    }
    // SAFETY: this function's contract is `array`'s.
    let a = unsafe { array(p, n, arg)? };
    if n > 0 {
        crate::pin::record_array(p, a);
    }
    Ok(Cow::Borrowed(a))
}

/// A mutable array argument of `n` elements.
///
/// # Safety
/// When `n > 0` and `p` is not NULL, `p` must point to `n` initialized, aligned `T`
/// that nothing else reads or writes for the lifetime `'a` the caller picks.
pub unsafe fn array_mut<'a, T>(p: *mut T, n: usize, arg: &str) -> MpiResult<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{arg} is NULL")));
    }
    // SAFETY: non-NULL (checked); `n` elements exclusively the caller's for `'a` (this
    // function's contract).
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// Copies a Rust string into a C buffer of `cap` bytes (NUL-terminated, truncated) and
/// returns the length written (without the NUL).
///
/// # Safety
/// Unless NULL, `dst` must be valid for writes of `cap` bytes (`cap` at least 1).
pub unsafe fn c_string(
    dst: *mut std::os::raw::c_char,
    cap: usize,
    s: &str,
    arg: &str,
) -> MpiResult<c_int> {
    if dst.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{arg} is NULL")));
    }
    let b = s.as_bytes();
    let n = b.len().min(cap.saturating_sub(1));
    // SAFETY: non-NULL (checked); `n + 1 <= cap` bytes written, which this function's
    // contract makes valid (the MPI_MAX_* length of the argument).
    unsafe {
        std::ptr::copy_nonoverlapping(b.as_ptr(), dst as *mut u8, n);
        *dst.add(n) = 0;
    }
    Ok(n as c_int)
}
