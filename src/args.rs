//! Argument checks by parameter kind that read none of the caller's memory: counts,
//! ranks, roots, tags, datatypes, communicators, buffer addresses. Each returns a clear
//! `MpiError` naming the argument and its value. The C boundary (ffi/check.rs, which
//! adds the checks that dereference the caller's pointers) and the engine's fronts
//! (coll, request) both use them, so a message has one format wherever it is raised.
#![deny(unsafe_code)]
use crate::abi::*;
use crate::comm::Comm;
use crate::error::{err, MpiResult};
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// A communicator argument.
pub fn comm(h: i32) -> MpiResult<Arc<Comm>> {
    crate::runtime::job()?;
    crate::comm::get(h)
}

/// An integer argument type of the C bindings: `int`, `MPI_Count`, `MPI_Aint`.
pub trait CInt: Into<i64> + Copy + Send + Sync + 'static {}
impl<T: Into<i64> + Copy + Send + Sync + 'static> CInt for T {}

pub const IN_PLACE: *const c_void = -1isize as *const c_void;

pub fn is_in_place(p: *const c_void) -> bool {
    p == IN_PLACE
}

/// A count argument (>= 0).
/// (`int` counts and MPI-4 `MPI_Count` counts alike.)
pub fn count(c: impl Into<i64>, arg: &str) -> MpiResult<usize> {
    let c: i64 = c.into();
    if c < 0 {
        Err(err(MPI_ERR_COUNT, format!("{arg}={c} is negative")))
    } else {
        Ok(c as usize)
    }
}

/// Every count of `arr` (named `arg` in messages: `arg[i]=-1 is negative`), without
/// building any message unless one is negative.
pub fn counts<C: CInt>(arr: &[C], arg: &str) -> MpiResult<Vec<usize>> {
    arr.iter()
        .enumerate()
        .map(|(i, &k)| {
            let c: i64 = k.into();
            if c < 0 {
                count(c, &format!("{arg}[{i}]"))
            } else {
                Ok(c as usize)
            }
        })
        .collect()
}

pub use crate::datatype::TypeInfo;

/// The datatype of a point-to-point buffer of `count` elements: as [`datatype`], except
/// that MPI_DATATYPE_NULL with count 0 is an empty buffer (MPICH accepts it, and its
/// test suite and some programs send and receive empty messages that way).
pub fn message_datatype(h: i32, count: usize, arg: &str) -> MpiResult<TypeInfo> {
    if h == MPI_DATATYPE_NULL && count == 0 {
        return datatype(MPI_BYTE, arg);
    }
    datatype(h, arg)
}

/// A datatype argument: valid and committed.
pub fn datatype(h: i32, arg: &str) -> MpiResult<TypeInfo> {
    crate::datatype::type_info(h, arg)
}

/// Bytes spanned by `count` elements of `t`, checked for overflow.
pub fn span(t: &TypeInfo, count: usize) -> MpiResult<usize> {
    count.checked_mul(t.extent).ok_or_else(|| {
        err(
            MPI_ERR_COUNT,
            format!("count={count} x extent {} overflows", t.extent),
        )
    })
}

/// A rank argument in `0..size` (or one of the allowed specials).
pub fn rank(r: c_int, size: usize, arg: &str, allow: &[c_int]) -> MpiResult<()> {
    if allow.contains(&r) || (r >= 0 && (r as usize) < size) {
        Ok(())
    } else {
        Err(err(
            MPI_ERR_RANK,
            format!("{arg}={r} is not a valid rank (communicator size {size})"),
        ))
    }
}

/// A root argument of an intracommunicator collective.
pub fn root(r: c_int, c: &Comm) -> MpiResult<usize> {
    if r >= 0 && (r as usize) < c.size() {
        Ok(r as usize)
    } else {
        Err(err(
            MPI_ERR_ROOT,
            format!(
                "root={r} is out of range for a communicator of size {}",
                c.size()
            ),
        ))
    }
}

/// A tag for sending (0..=TAG_UB).
pub fn send_tag(t: c_int) -> MpiResult<()> {
    if (0..=TAG_UB).contains(&t) {
        Ok(())
    } else {
        Err(err(MPI_ERR_TAG, format!("tag={t} is outside 0..={TAG_UB}")))
    }
}

/// A tag for receiving (0..=TAG_UB or MPI_ANY_TAG).
pub fn recv_tag(t: c_int) -> MpiResult<()> {
    if t == MPI_ANY_TAG {
        Ok(())
    } else {
        send_tag(t)
    }
}

/// The value of the MPI_TAG_UB attribute.
pub const TAG_UB: c_int = 268435455;

/// A buffer argument of an intercommunicator collective, which MPI_IN_PLACE may not be.
pub fn not_in_place(p: *const c_void, arg: &str) -> MpiResult<()> {
    if is_in_place(p) {
        Err(err(
            MPI_ERR_BUFFER,
            format!("{arg} is MPI_IN_PLACE, which intercommunicator collectives do not allow"),
        ))
    } else {
        Ok(())
    }
}

/// An output pointer that is written later (after the work that makes the value),
/// rejected when NULL before that work starts.
pub fn not_null<T>(p: *const T, arg: &str) -> MpiResult<()> {
    if p.is_null() {
        Err(err(MPI_ERR_ARG, format!("{arg} is NULL")))
    } else {
        Ok(())
    }
}

/// A buffer argument of `count` elements that the engine addresses itself (its layout
/// is the datatype's): not MPI_IN_PLACE, and NULL only when empty.
pub fn elements(p: *const c_void, count: usize, arg: &str) -> MpiResult<()> {
    address(p, count, "elements", arg)
}

/// A buffer address holding `n` `what`s ("bytes", "elements"): not MPI_IN_PLACE, and
/// NULL only when `n` is 0.
#[inline(always)]
pub fn address(p: *const c_void, n: usize, what: &str, arg: &str) -> MpiResult<()> {
    if is_in_place(p) {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("{arg} is MPI_IN_PLACE, which this call does not allow here"),
        ));
    }
    if p.is_null() && n > 0 {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("{arg} is NULL but holds {n} {what}"),
        ));
    }
    Ok(())
}

/// Derived types may address absolute memory (MPI_BOTTOM, i.e. NULL); predefined ones
/// may not.
pub fn check_base(p: *const c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<()> {
    if is_in_place(p) {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("{arg} is MPI_IN_PLACE, which this call does not allow here"),
        ));
    }
    if p.is_null() && count > 0 && t.size > 0 {
        // NULL is MPI_BOTTOM: legal only with a derived datatype whose displacements are
        // absolute addresses (which never point into the first page).
        if crate::datatype::predefined::lookup(t.handle).is_some() {
            return Err(err(
                MPI_ERR_BUFFER,
                format!("{arg} is NULL but holds {count} elements"),
            ));
        }
        if t.true_lb < 4096 {
            return Err(err(
                MPI_ERR_BUFFER,
                format!(
                    "{arg} is NULL (MPI_BOTTOM) but datatype {:#x} starts at displacement {}, not at an absolute address",
                    t.handle, t.true_lb
                ),
            ));
        }
    }
    Ok(())
}

/// Address `p` advanced by `bytes` (possibly negative), as the standard's displacement
/// arithmetic does.
pub fn offset(p: *const c_void, bytes: isize) -> *mut c_void {
    (p as *const u8).wrapping_offset(bytes) as *mut c_void
}
