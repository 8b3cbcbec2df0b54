//! MPI §5.9: user-defined operations and the local reduction.
//! MPI_Op_create, MPI_Op_free, MPI_Op_commutative, MPI_Reduce_local.
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::mpi_entry;
use crate::op;
use std::os::raw::{c_int, c_void};

fn check_out_ptr<T>(p: *mut T, what: &str) -> MpiResult<()> {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    Ok(())
}

/// Whether `bytes` bytes at `a` and at `b` overlap.
fn overlaps(a: *const c_void, b: *const c_void, bytes: usize) -> bool {
    let (a, b) = (a as usize, b as usize);
    bytes > 0 && a < b.saturating_add(bytes) && b < a.saturating_add(bytes)
}

fn check_count(count: c_int) -> MpiResult<usize> {
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("count = {count} is negative")));
    }
    Ok(count as usize)
}

fn check_buffer(p: *const c_void, arg: &str, count: usize) -> MpiResult<()> {
    if p as isize == MPI_IN_PLACE {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("{arg} = MPI_IN_PLACE is not allowed in MPI_Reduce_local"),
        ));
    }
    if p.is_null() && count > 0 {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("{arg} is NULL with count = {count}"),
        ));
    }
    Ok(())
}

type UserFnPtr = Option<op::UserFn>;

mpi_entry!(MPI_Op_create, PMPI_Op_create,
    (user_fn: UserFnPtr, commute: c_int, op_out: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    check_out_ptr(op_out, "op (the output handle)")?;
    let f = user_fn.ok_or_else(|| err(MPI_ERR_ARG, "user_fn is NULL"))?;
    *op_out = op::create(op::UserFunc::Int(f), commute != 0)?;
    Ok(())
});

// MPI-4 MPI_Op_create_c: a user function whose length is an MPI_Count; the reductions
// hand it whole counts, even beyond INT_MAX elements.
mpi_entry!(MPI_Op_create_c, PMPI_Op_create_c,
    (user_fn: Option<op::UserFnC>, commute: c_int, op_out: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    check_out_ptr(op_out, "op (the output handle)")?;
    let f = user_fn.ok_or_else(|| err(MPI_ERR_ARG, "user_fn is NULL"))?;
    *op_out = op::create(op::UserFunc::Count(f), commute != 0)?;
    Ok(())
});

mpi_entry!(MPI_Op_free, PMPI_Op_free, (op_inout: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    check_out_ptr(op_inout, "op")?;
    op::free(*op_inout)?;
    *op_inout = MPI_OP_NULL;
    Ok(())
});

mpi_entry!(MPI_Op_commutative, PMPI_Op_commutative,
    (op_h: i32, commute: *mut c_int), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let o = op::resolve(op_h)?;
    check_out_ptr(commute, "commute")?;
    *commute = op::is_commutative(&o) as c_int;
    Ok(())
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
    match op::span(p, count as usize) {
        Some(bytes) if !overlaps(inbuf, inoutbuf, bytes) => {
            // SAFETY: the standard requires both buffers to hold `count` elements of
            // `datatype` (`bytes` bytes); both are non-NULL and not MPI_IN_PLACE.
            let a = std::slice::from_raw_parts(inbuf as *const u8, bytes);
            // SAFETY: as above; the buffers do not overlap, and inoutbuf is written
            // through this one slice only.
            let io = std::slice::from_raw_parts_mut(inoutbuf as *mut u8, bytes);
            k(a, io);
            true
        }
        _ => false,
    }
}

mpi_entry!(MPI_Reduce_local, PMPI_Reduce_local,
    (inbuf: *const c_void, inoutbuf: *mut c_void, count: c_int, datatype: i32, op_h: i32),
    errcomm = MPI_COMM_WORLD,
    fast = { reduce_local_fast(inbuf, inoutbuf, count, datatype, op_h) }, {
    crate::runtime::job()?;
    let n = check_count(count)?;
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
    check_buffer(inbuf, "inbuf", n)?;
    check_buffer(inoutbuf, "inoutbuf", n)?;
    let span = crate::datatype::info(datatype).map_or(0, |(size, ext)| {
        if n == 0 {
            0
        } else {
            (n - 1).saturating_mul(ext).saturating_add(size)
        }
    });
    if n > 0 && (std::ptr::eq(inbuf, inoutbuf) || overlaps(inbuf, inoutbuf, span)) {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("inbuf ({inbuf:p}) and inoutbuf ({inoutbuf:p}) overlap; MPI_Reduce_local needs two distinct buffers"),
        ));
    }
    let o = op::resolve(op_h)?;
    match &o {
        op::OpRef::Builtin(b) if crate::datatype::predefined::lookup(datatype).is_none() => {
            // A derived datatype: pack both buffers, reduce the packed data with the
            // kernel of its basic type, unpack the result into inoutbuf.
            let t = crate::datatype::lookup_arg(datatype, "datatype")?;
            if op::reduce_basic(*b, datatype)?.is_none() || n == 0 {
                return Ok(());
            }
            let bytes = crate::datatype::packed_size(&t, n).ok_or_else(|| {
                err(
                    MPI_ERR_COUNT,
                    format!("count = {n} of datatype {datatype:#010x} overflows"),
                )
            })?;
            let mut a = vec![0u8; bytes];
            let mut b2 = vec![0u8; bytes];
            // SAFETY: the standard requires inbuf and inoutbuf to hold `count` instances
            // of `datatype`; both were checked non-NULL and not MPI_IN_PLACE above.
            crate::datatype::pack(&t, n, inbuf as *const u8, &mut a, 0);
            // SAFETY: as above.
            crate::datatype::pack(&t, n, inoutbuf as *const u8, &mut b2, 0);
            op::apply(&o, datatype, &a, &mut b2, n)?;
            // SAFETY: as above; inoutbuf is writable and `b2` is our own vector.
            crate::datatype::unpack(&t, n, inoutbuf as *mut u8, &b2, 0);
            Ok(())
        }
        op::OpRef::Builtin(b) => {
            let p = op::predefined_type(datatype)?;
            op::check_valid(*b, p)?;
            let bytes = op::span(p, n).ok_or_else(|| {
                err(
                    MPI_ERR_COUNT,
                    format!("count = {n} of {} overflows", p.name),
                )
            })?;
            if bytes == 0 {
                return Ok(());
            }
            // SAFETY: the standard requires inbuf and inoutbuf to hold `count` elements
            // of `datatype`, i.e. at least `bytes` bytes; both were checked non-NULL
            // and not MPI_IN_PLACE above. If they overlap the call is erroneous.
            let a = std::slice::from_raw_parts(inbuf as *const u8, bytes);
            // SAFETY: as above; inoutbuf is written through this one slice only.
            let b = std::slice::from_raw_parts_mut(inoutbuf as *mut u8, bytes);
            op::apply(&o, datatype, a, b, n)
        }
        op::OpRef::User(u) => {
            // valid and committed (the user function gets the handle itself)
            crate::datatype::lookup_arg(datatype, "datatype")?;
            if n == 0 {
                return Ok(());
            }
            // In calls of at most `max_count` elements (INT_MAX for MPI_Op_create's
            // functions; the elements are independent), `extent` bytes apart.
            let ext = crate::datatype::info(datatype).map_or(0, |i| i.1);
            let mut done = 0usize;
            while done < n {
                let k = (n - done).min(u.max_count());
                let off = done * ext;
                // SAFETY: a user op receives the caller's buffers as they are (the
                // datatype may be derived: its layout is the user function's business);
                // elements done..done + k lie `off` bytes on; `k <= max_count`.
                u.call(
                    (inbuf as *mut u8).wrapping_add(off) as *mut c_void,
                    (inoutbuf as *mut u8).wrapping_add(off) as *mut c_void,
                    k,
                    datatype,
                );
                done += k;
            }
            Ok(())
        }
    }
}

// MPI-4 MPI_Reduce_local_c: the same element-wise operation with an MPI_Count count.
crate::mpi_entry!(MPI_Reduce_local_c, PMPI_Reduce_local_c,
    (inbuf: *const c_void, inoutbuf: *mut c_void, count: i64, datatype: i32, op_h: i32),
    errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let n = crate::ffi::check::count(count, "count")?;
    reduce_local(inbuf, inoutbuf, n, datatype, op_h)
});
