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
use crate::comm::Comm;
use crate::error::{err, MpiResult};
use crate::p2p::UserBuf;
use std::borrow::Cow;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// An integer argument type of the C bindings: `int`, `MPI_Count`, `MPI_Aint`.
pub trait CInt: Into<i64> + Copy + Send + Sync + 'static {}
impl<T: Into<i64> + Copy + Send + Sync + 'static> CInt for T {}

pub const IN_PLACE: *const c_void = -1isize as *const c_void;

pub fn is_in_place(p: *const c_void) -> bool {
    p == IN_PLACE
}

/// A communicator argument.
pub fn comm(h: i32) -> MpiResult<Arc<Comm>> {
    crate::runtime::job()?;
    crate::comm::get(h)
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

/// A buffer argument of `bytes` bytes: NULL is only allowed when empty; MPI_IN_PLACE is
/// rejected (call `is_in_place` first where it is allowed).
///
/// # Safety
/// Unless NULL, `p` must be valid for reads (and for writes, if the operation writes
/// the buffer) of `bytes` bytes until the operation completes (`UserBuf::new`).
pub unsafe fn buffer(p: *const c_void, bytes: usize, arg: &str) -> MpiResult<UserBuf> {
    if is_in_place(p) {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("{arg} is MPI_IN_PLACE, which this call does not allow here"),
        ));
    }
    if p.is_null() && bytes > 0 {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("{arg} is NULL but holds {bytes} bytes"),
        ));
    }
    // SAFETY: `p` is non-NULL or `bytes` is 0; this function's contract gives the rest.
    Ok(unsafe { UserBuf::new(p as *mut u8, bytes) })
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

/// Two buffers of one call must not overlap (MPI's aliasing rule).
pub fn no_alias(a: &UserBuf, b: &UserBuf, what: &str) -> MpiResult<()> {
    if a.is_empty() || b.is_empty() {
        return Ok(());
    }
    let (a0, a1) = (a.addr(), a.addr() + a.len());
    let (b0, b1) = (b.addr(), b.addr() + b.len());
    if a0 < b1 && b0 < a1 {
        Err(err(
            MPI_ERR_BUFFER,
            format!("{what}: the buffers overlap (sendbuf and recvbuf alias; use MPI_IN_PLACE)"),
        ))
    } else {
        Ok(())
    }
}

/// The root argument of a rooted intercommunicator collective: MPI_ROOT, MPI_PROC_NULL
/// or a rank of the remote group.
pub fn inter_root(c: &Comm, root: c_int) -> MpiResult<crate::coll::inter::Role> {
    use crate::coll::inter::Role;
    match root {
        MPI_ROOT => Ok(Role::Root),
        MPI_PROC_NULL => Ok(Role::Idle),
        r if r >= 0 && (r as usize) < c.peer_size() => Ok(Role::Peer(r as usize)),
        r => Err(err(
            MPI_ERR_ROOT,
            format!("root={r} is neither MPI_ROOT, MPI_PROC_NULL nor a rank of the remote group (size {})", c.peer_size()),
        )),
    }
}

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
    if is_in_place(p) {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("{arg} is MPI_IN_PLACE, which this call does not allow here"),
        ));
    }
    if p.is_null() && count > 0 {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("{arg} is NULL but holds {count} elements"),
        ));
    }
    Ok(())
}
