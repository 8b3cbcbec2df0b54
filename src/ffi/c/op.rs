//! MPI §5.9: user-defined operations and the local reduction.
//! MPI_Op_create, MPI_Op_free, MPI_Op_commutative, MPI_Reduce_local.
use crate::abi::*;
use crate::error::MpiResult;
use crate::ffi::check;
use crate::mpi_entry;
use crate::op;
use crate::p2p::buf::disjoint;
use crate::p2p::UserBuf;
use std::os::raw::{c_int, c_void};

type UserFnPtr = Option<op::UserFn>;

/// A user function argument, rejected when NULL.
fn user_fn<F>(f: Option<F>) -> MpiResult<F> {
    check::not_null(
        f.as_ref().map_or(std::ptr::null(), |f| f as *const F),
        "user_fn",
    )?;
    Ok(f.expect("checked"))
}

/// What MPI_Reduce_local asks for instead of overlapping buffers.
const DISTINCT: &str = "MPI_Reduce_local needs two distinct buffers";

/// `bytes` bytes at each of `inbuf` and `inoutbuf`, as the reduction sees them.
///
/// # Safety
/// Both hold `bytes` bytes, valid for the call (`inoutbuf` writable), as the standard
/// requires of MPI_Reduce_local's caller.
unsafe fn views(inbuf: *const c_void, inoutbuf: *mut c_void, bytes: usize) -> (UserBuf, UserBuf) {
    // SAFETY: this function's contract.
    unsafe {
        (
            UserBuf::new(inbuf as *mut u8, bytes),
            UserBuf::new(inoutbuf as *mut u8, bytes),
        )
    }
}

mpi_entry!(MPI_Op_create, PMPI_Op_create,
    (user_fn: UserFnPtr, commute: c_int, op_out: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    check::not_null(op_out, "op (the output handle)")?;
    *op_out = op::create(op::UserFunc::Int(self::user_fn(user_fn)?), commute != 0)?;
    Ok(())
});

// MPI-4 MPI_Op_create_c: a user function whose length is an MPI_Count; the reductions
// hand it whole counts, even beyond INT_MAX elements.
mpi_entry!(MPI_Op_create_c, PMPI_Op_create_c,
    (user_fn: Option<op::UserFnC>, commute: c_int, op_out: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    check::not_null(op_out, "op (the output handle)")?;
    *op_out = op::create(op::UserFunc::Count(self::user_fn(user_fn)?), commute != 0)?;
    Ok(())
});

mpi_entry!(MPI_Op_free, PMPI_Op_free, (op_inout: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    op::free(check::inp(op_inout, "op")?)?;
    check::out(op_inout, MPI_OP_NULL, "op")
});

mpi_entry!(MPI_Op_commutative, PMPI_Op_commutative,
    (op_h: i32, commute: *mut c_int), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let o = op::resolve(op_h)?;
    check::out(commute, op::is_commutative(&o) as c_int, "commute")
});

/// The common case of MPI_Reduce_local: a predefined op on a predefined datatype it is
/// defined on, a positive count, two distinct buffers, after MPI_Init. True when done;
/// everything else (including every error) takes the full path.
///
/// # Safety
/// Unless NULL or MPI_IN_PLACE, `inbuf` and `inoutbuf` must hold `count` elements of
/// `datatype` (`inoutbuf` writable), as the standard requires of MPI_Reduce_local.
#[inline(always)]
unsafe fn reduce_local_fast(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: c_int,
    datatype: i32,
    op_h: i32,
) -> bool {
    if count <= 0 || crate::runtime::state() != crate::runtime::INITIALIZED {
        return false;
    }
    let (Some(b), Some(p)) = (
        op::BuiltinOp::from_handle(op_h),
        crate::datatype::predefined::lookup(datatype),
    ) else {
        return false;
    };
    let Some(k) = op::predefined_kernel(b, p) else {
        return false;
    };
    let ok = |q: *const c_void| !q.is_null() && q as isize != MPI_IN_PLACE;
    if !ok(inbuf) || !ok(inoutbuf) {
        return false;
    }
    let Some(bytes) = op::span(p, count as usize) else {
        return false;
    };
    // SAFETY: the standard requires both buffers to hold `count` elements of `datatype`
    // (`bytes` bytes); both are non-NULL and not MPI_IN_PLACE.
    let (a, io) = views(inbuf, inoutbuf, bytes);
    if disjoint(&a, &io, "", "").is_err() {
        return false;
    }
    // SAFETY: as above; the buffers do not overlap, and inoutbuf is written through
    // this one slice only.
    k(a.as_slice(), io.as_mut_slice());
    true
}

mpi_entry!(MPI_Reduce_local, PMPI_Reduce_local,
    (inbuf: *const c_void, inoutbuf: *mut c_void, count: c_int, datatype: i32, op_h: i32),
    errcomm = MPI_COMM_WORLD,
    fast = { reduce_local_fast(inbuf, inoutbuf, count, datatype, op_h) }, {
    crate::runtime::job()?;
    let n = check::count(count, "count")?;
    reduce_local(inbuf, inoutbuf, n, datatype, op_h)
});

/// MPI_Reduce_local (and _c) of `n` elements, after the count's check.
///
/// # Safety
/// The buffers are the caller's: as the standard requires, each holds `n` elements of
/// `datatype` (checked here: not NULL, not MPI_IN_PLACE, not overlapping).
unsafe fn reduce_local(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    n: usize,
    datatype: i32,
    op_h: i32,
) -> MpiResult<()> {
    check::elements(inbuf, n, "inbuf")?;
    check::elements(inoutbuf, n, "inoutbuf")?;
    // (at least one byte each with elements: the same address overlaps whatever the
    // datatype)
    let span = match n {
        0 => 0,
        _ => crate::datatype::info(datatype).map_or(1, |(size, ext)| {
            (n - 1).saturating_mul(ext).saturating_add(size).max(1)
        }),
    };
    // SAFETY: views for the overlap check only (nothing is read through them).
    let (a, io) = views(inbuf, inoutbuf, span);
    disjoint(&a, &io, "inbuf/inoutbuf", DISTINCT)?;
    let o = op::resolve(op_h)?;
    // SAFETY: as this function's contract; the buffers were checked above.
    op::reduce_local(&o, datatype, inbuf, inoutbuf, n)
}

// MPI-4 MPI_Reduce_local_c: the same element-wise operation with an MPI_Count count.
crate::mpi_entry!(MPI_Reduce_local_c, PMPI_Reduce_local_c,
    (inbuf: *const c_void, inoutbuf: *mut c_void, count: i64, datatype: i32, op_h: i32),
    errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let n = check::count(count, "count")?;
    reduce_local(inbuf, inoutbuf, n, datatype, op_h)
});
