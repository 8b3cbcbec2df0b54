//! One-sided communication (MPI 4.1 chapter 12): windows, their attributes, names,
//! info and error handlers, the communication calls and the synchronisation calls.
//! The engine is rma/; this file checks the arguments and converts them.
use crate::abi::*;
use crate::attr;
use crate::error::{err, MpiResult};
use crate::ffi::check;
use crate::mpi_entry;
use crate::op::{BuiltinOp, OpRef};
use crate::rma::{self, ops, sync, Win};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// MPI_Aint.
type Aint = isize;

/// The window of handle `h`. Every one-sided call also gives pending operations a
/// turn (one atomic load when there are none): a rank that only makes one-sided calls,
/// such as a loop of MPI_Win_sync waiting for a flag, still serves the accesses of the
/// others to a window its members serve (rma/serve.rs).
fn win(h: i32) -> MpiResult<Arc<Win>> {
    crate::runtime::job()?;
    crate::progress::poll_pending();
    rma::get(h)
}

/// The fast paths of the calls that need no wait: `f` on window `h` when the library
/// is initialised and `h` is the window looked up last; false (`f` did
/// nothing) sends the call to its full path, which checks and names what is wrong.
fn fast(h: i32, f: impl FnOnce(&Win) -> bool) -> bool {
    if crate::runtime::state() != crate::runtime::INITIALIZED {
        return false;
    }
    crate::progress::poll_pending();
    rma::with_cached(h, f)
}

/// A target rank of the fast paths: in the window (not MPI_PROC_NULL).
fn fast_rank(w: &Win, rank: c_int) -> Option<usize> {
    usize::try_from(rank).ok().filter(|&r| r < w.n())
}

/// The window handle a `MPI_Win *` argument holds, for the error handler (MPI_WIN_NULL
/// when the pointer is NULL).
fn win_at(p: *const i32) -> i32 {
    if p.is_null() {
        MPI_WIN_NULL
    } else {
        // SAFETY: a non-NULL `MPI_Win *` of the MPI caller, valid for a read.
        unsafe { p.read() }
    }
}

/// A target rank argument: None for MPI_PROC_NULL (the call does nothing).
fn target_of(w: &Win, r: c_int) -> MpiResult<Option<usize>> {
    if r == MPI_PROC_NULL {
        return Ok(None);
    }
    check::rank(r, w.n(), "target_rank", &[])?;
    Ok(Some(r as usize))
}

fn buf(
    addr: *const c_void,
    count: i64,
    dt: i32,
    count_arg: &str,
    type_arg: &str,
    addr_arg: &str,
) -> MpiResult<ops::Buf> {
    let n = check::count(count, count_arg)?;
    let info = check::datatype(dt, type_arg)?;
    check::check_base(addr, n, &info, addr_arg)?;
    Ok(ops::Buf {
        addr: addr as usize,
        count: n,
        t: crate::datatype::lookup_arg(dt, type_arg)?,
    })
}

fn tgt(rank: usize, disp: i64, count: i64, dt: i32) -> MpiResult<ops::Tgt> {
    let n = check::count(count, "target_count")?;
    check::datatype(dt, "target_datatype")?;
    Ok(ops::Tgt {
        rank,
        disp,
        count: n,
        t: crate::datatype::lookup_arg(dt, "target_datatype")?,
    })
}

/// A predefined op of an accumulate call (user-defined ops are not allowed in them).
fn acc_op(h: i32) -> MpiResult<BuiltinOp> {
    match crate::op::resolve(h)? {
        OpRef::Builtin(b) => Ok(b),
        OpRef::User(_) => Err(err(
            MPI_ERR_OP,
            format!("op={h:#x} is a user-defined operation; one-sided accumulate operations take predefined ones only (MPI 4.1 §12.3.4)"),
        )),
    }
}

/// A completed request, for the request-based operations (complete at their call).
fn done_request(w: &Win, request: *mut i32) -> MpiResult<()> {
    check::not_null(request, "request")?;
    let r = crate::p2p::completed(&w.comm, crate::p2p::Status::empty())?;
    // SAFETY: `request`: non-NULL (checked), an `MPI_Request *` of the MPI caller.
    unsafe { check::out(request, crate::request::req_handle(r), "request") }
}

// ------------------------------------------------------------------ window creation

fn info_entries(info: i32) -> MpiResult<crate::comm::info::Entries> {
    crate::comm::info::check_arg(info, "info")?;
    if info == MPI_INFO_NULL {
        return Ok(Vec::new());
    }
    crate::comm::info::entries_of(info, "info")
}

fn make(
    comm: i32,
    flavor: i32,
    base: *mut c_void,
    size: i64,
    disp_unit: i64,
    info: i32,
) -> MpiResult<Arc<Win>> {
    let c = check::comm(comm)?;
    let spec = rma::check_spec(size, disp_unit).and_then(|()| {
        if flavor == MPI_WIN_FLAVOR_CREATE && base.is_null() && size > 0 {
            return Err(err(MPI_ERR_BASE, format!("base is NULL but size={size}")));
        }
        Ok(rma::Spec {
            flavor,
            size: size as usize,
            disp_unit: disp_unit as usize,
            base: base as usize,
        })
    });
    rma::create_checked(&c, spec, info_entries(info))
}

counted!(MPI_Win_create, PMPI_Win_create, MPI_Win_create_c, PMPI_Win_create_c,
    (base: *mut c_void, size: Aint, disp_unit: Count, info: i32, comm: i32, win: *mut i32),
    errcomm = comm, {
    check::not_null(win, "win")?;
    let w = make(comm, MPI_WIN_FLAVOR_CREATE, base, size as i64, disp_unit as i64, info)?;
    check::out(win, w.handle, "win")
});

fn allocate(
    flavor: i32,
    size: Aint,
    disp_unit: i64,
    info: i32,
    comm: i32,
    baseptr: *mut c_void,
    win: *mut i32,
) -> MpiResult<()> {
    check::not_null(win, "win")?;
    check::not_null(baseptr, "baseptr")?;
    let w = make(
        comm,
        flavor,
        std::ptr::null_mut(),
        size as i64,
        disp_unit,
        info,
    )?;
    // SAFETY: `baseptr` is a `void **` of the MPI caller (non-NULL, checked).
    unsafe { check::out(baseptr as *mut usize, w.local().base, "baseptr")? };
    // SAFETY: `win` is an `MPI_Win *` of the MPI caller (non-NULL, checked).
    unsafe { check::out(win, w.handle, "win") }
}

counted!(MPI_Win_allocate, PMPI_Win_allocate, MPI_Win_allocate_c, PMPI_Win_allocate_c,
    (size: Aint, disp_unit: Count, info: i32, comm: i32, baseptr: *mut c_void, win: *mut i32),
    errcomm = comm, {
    allocate(MPI_WIN_FLAVOR_ALLOCATE, size, disp_unit as i64, info, comm, baseptr, win)
});

counted!(MPI_Win_allocate_shared, PMPI_Win_allocate_shared, MPI_Win_allocate_shared_c, PMPI_Win_allocate_shared_c,
    (size: Aint, disp_unit: Count, info: i32, comm: i32, baseptr: *mut c_void, win: *mut i32),
    errcomm = comm, {
    allocate(MPI_WIN_FLAVOR_SHARED, size, disp_unit as i64, info, comm, baseptr, win)
});

mpi_entry!(MPI_Win_create_dynamic, PMPI_Win_create_dynamic, (info: i32, comm: i32, win: *mut i32),
    errcomm = comm, {
    check::not_null(win, "win")?;
    let w = make(comm, MPI_WIN_FLAVOR_DYNAMIC, std::ptr::null_mut(), 0, 1, info)?;
    check::out(win, w.handle, "win")
});

mpi_entry!(MPI_Win_attach, PMPI_Win_attach, (win: i32, base: *mut c_void, size: Aint), errcomm = win, {
    let w = self::win(win)?;
    if size < 0 {
        return Err(err(MPI_ERR_SIZE, format!("size={size} is negative")));
    }
    if base.is_null() && size > 0 {
        return Err(err(MPI_ERR_RMA_ATTACH, format!("base is NULL but size={size}")));
    }
    rma::attach(&w, base as usize, size as usize)
});

mpi_entry!(MPI_Win_detach, PMPI_Win_detach, (win: i32, base: *const c_void), errcomm = win, {
    rma::detach(&*self::win(win)?, base as usize)
});

mpi_entry!(MPI_Win_free, PMPI_Win_free, (win: *mut i32), errcomm = win_at(win), {
    let h = check::inp(win, "win")?;
    let w = self::win(h)?;
    rma::free(&w)?;
    check::out(win, MPI_WIN_NULL, "win")
});

counted!(MPI_Win_shared_query, PMPI_Win_shared_query, MPI_Win_shared_query_c, PMPI_Win_shared_query_c,
    (win: i32, rank: c_int, size: *mut Aint, disp_unit: *mut Count, baseptr: *mut c_void),
    errcomm = win, {
    let w = self::win(win)?;
    check::not_null(size, "size")?;
    check::not_null(disp_unit, "disp_unit")?;
    check::not_null(baseptr, "baseptr")?;
    let (s, du, base) = rma::shared_query(&w, rank)?;
    check::out(size, s as Aint, "size")?;
    check::out(disp_unit, du as Count, "disp_unit")?;
    check::out(baseptr as *mut usize, base, "baseptr")
});

mpi_entry!(MPI_Win_get_group, PMPI_Win_get_group, (win: i32, group: *mut i32), errcomm = win, {
    let w = self::win(win)?;
    check::not_null(group, "group")?;
    let g = crate::comm::group::register(crate::comm::group::Group { ranks: w.comm.group.clone() });
    check::out(group, g, "group")
});

mpi_entry!(MPI_Win_set_info, PMPI_Win_set_info, (win: i32, info: i32), errcomm = win, {
    let w = self::win(win)?;
    rma::set_info(&w, info_entries(info)?)
});

mpi_entry!(MPI_Win_get_info, PMPI_Win_get_info, (win: i32, info_used: *mut i32), errcomm = win, {
    let w = self::win(win)?;
    check::not_null(info_used, "info_used")?;
    check::out(info_used, crate::comm::info::new_info(rma::info(&w)), "info_used")
});

mpi_entry!(MPI_Win_set_name, PMPI_Win_set_name, (win: i32, win_name: *const c_char), errcomm = win, {
    let w = self::win(win)?;
    check::not_null(win_name, "win_name")?;
    let s = std::ffi::CStr::from_ptr(win_name).to_string_lossy();
    w.set_name(&s);
    Ok(())
});

mpi_entry!(MPI_Win_get_name, PMPI_Win_get_name, (win: i32, win_name: *mut c_char, resultlen: *mut c_int), errcomm = win, {
    let w = self::win(win)?;
    check::not_null(resultlen, "resultlen")?;
    let name = w.name.lock().unwrap().clone();
    let n = check::c_string(win_name, MPI_MAX_OBJECT_NAME as usize, &name, "win_name")?;
    check::out(resultlen, n, "resultlen")
});

// ------------------------------------------------------------------ attributes

mpi_entry!(MPI_Win_create_keyval, PMPI_Win_create_keyval,
    (win_copy_attr_fn: Option<attr::CopyFn>, win_delete_attr_fn: Option<attr::DeleteFn>, win_keyval: *mut c_int, extra_state: *mut c_void),
    errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    check::not_null(win_keyval, "win_keyval")?;
    let k = attr::create_keyval(attr::Kind::Win, win_copy_attr_fn, win_delete_attr_fn, extra_state);
    check::out(win_keyval, k, "win_keyval")
});

mpi_entry!(MPI_Win_free_keyval, PMPI_Win_free_keyval, (win_keyval: *mut c_int), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let k = check::inp(win_keyval, "win_keyval")?;
    attr::free_keyval(k, attr::Kind::Win)?;
    check::out(win_keyval, MPI_KEYVAL_INVALID, "win_keyval")
});

fn not_predefined(key: c_int) -> MpiResult<()> {
    if rma::is_predefined_key(key) {
        return Err(err(
            MPI_ERR_KEYVAL,
            format!("win_keyval={key:#x} is a predefined window attribute, which cannot be set or deleted"),
        ));
    }
    Ok(())
}

mpi_entry!(MPI_Win_set_attr, PMPI_Win_set_attr, (win: i32, win_keyval: c_int, attribute_val: *mut c_void), errcomm = win, {
    let w = self::win(win)?;
    not_predefined(win_keyval)?;
    attr::set(&*w, win_keyval, attribute_val as usize)
});

mpi_entry!(MPI_Win_get_attr, PMPI_Win_get_attr, (win: i32, win_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int), errcomm = win, {
    let w = self::win(win)?;
    check::not_null(attribute_val, "attribute_val")?;
    let v = match rma::predefined_attr(&w, win_keyval) {
        Some(v) => Some(v),
        None if win_keyval == MPI_KEYVAL_INVALID => {
            return Err(err(MPI_ERR_KEYVAL, "win_keyval is MPI_KEYVAL_INVALID"))
        }
        None => attr::get(&*w, win_keyval)?,
    };
    super::datatype::put_attr(v, attribute_val, flag)
});

mpi_entry!(MPI_Win_delete_attr, PMPI_Win_delete_attr, (win: i32, win_keyval: c_int), errcomm = win, {
    let w = self::win(win)?;
    not_predefined(win_keyval)?;
    attr::delete(&*w, win_keyval)
});

/// For the Fortran binding of MPI_WIN_GET_ATTR: the integer value of a predefined
/// window attribute (the address for MPI_WIN_BASE), `*flag` 0 if `keyval` is not one.
/// Not part of the MPI API.
#[no_mangle]
pub extern "C" fn shmpi_win_predefined_attr(
    win: c_int,
    keyval: c_int,
    value: *mut i64,
    flag: *mut c_int,
) -> c_int {
    let v = rma::get(win)
        .ok()
        .and_then(|w| rma::predefined_value(&w, keyval));
    if value.is_null() || flag.is_null() {
        return MPI_ERR_ARG;
    }
    // SAFETY: non-NULL pointers (checked) the Fortran binding passes to its locals.
    unsafe {
        *flag = v.is_some() as c_int;
        if let Some(v) = v {
            *value = v;
        }
    }
    MPI_SUCCESS
}

// ------------------------------------------------------------------ error handlers

mpi_entry!(MPI_Win_create_errhandler, PMPI_Win_create_errhandler,
    (win_errhandler_fn: Option<crate::comm::errhandler::CommErrhandlerFn>, errhandler: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let f = win_errhandler_fn.ok_or_else(|| err(MPI_ERR_ARG, "win_errhandler_fn is NULL"))?;
    check::out(errhandler, crate::comm::errhandler::create(f), "errhandler")
});

mpi_entry!(MPI_Win_set_errhandler, PMPI_Win_set_errhandler, (win: i32, errhandler: i32), errcomm = win, {
    let w = self::win(win)?;
    crate::comm::errhandler::check(errhandler)?;
    w.errhandler.store(errhandler, Ordering::Relaxed);
    Ok(())
});

mpi_entry!(MPI_Win_get_errhandler, PMPI_Win_get_errhandler, (win: i32, errhandler: *mut i32), errcomm = win, {
    let w = self::win(win)?;
    check::out(errhandler, w.errhandler.load(Ordering::Relaxed), "errhandler")
});

mpi_entry!(MPI_Win_call_errhandler, PMPI_Win_call_errhandler, (win: i32, errorcode: c_int), errcomm = MPI_COMM_WORLD, {
    let w = self::win(win)?;
    match w.errhandler.load(Ordering::Relaxed) {
        MPI_ERRORS_RETURN => Ok(()),
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT => {
            let s = crate::error::code_string(errorcode).unwrap_or_else(|| format!("error code {errorcode}"));
            crate::process::say(&format!(
                "shmpi: rank {}: fatal error (MPI_Win_call_errhandler): {s}",
                w.comm.rank
            ));
            crate::runtime::abort_job(1)
        }
        eh => {
            crate::comm::call_user_errhandler(eh, win, errorcode);
            Ok(())
        }
    }
});

// ------------------------------------------------------------------ communication

fn put_get(
    get: bool,
    origin_addr: *const c_void,
    origin_count: i64,
    origin_datatype: i32,
    target_rank: c_int,
    target_disp: i64,
    target_count: i64,
    target_datatype: i32,
    win: i32,
    call: &str,
    passive_only: bool,
) -> MpiResult<Option<Arc<Win>>> {
    let w = self::win(win)?;
    let o = buf(
        origin_addr,
        origin_count,
        origin_datatype,
        "origin_count",
        "origin_datatype",
        "origin_addr",
    )?;
    let Some(t) = target_of(&w, target_rank)? else {
        return Ok(Some(w));
    };
    let tg = tgt(t, target_disp, target_count, target_datatype)?;
    sync::access(&w, t, call, passive_only)?;
    if get {
        ops::get(&w, &o, &tg, call)?;
    } else {
        ops::put(&w, &o, &tg, call)?;
    }
    Ok(Some(w))
}

counted!(MPI_Put, PMPI_Put, MPI_Put_c, PMPI_Put_c,
    (origin_addr: *const c_void, origin_count: Count, origin_datatype: i32, target_rank: c_int,
     target_disp: Aint, target_count: Count, target_datatype: i32, win: i32), errcomm = win,
    // SAFETY: the MPI caller's origin buffer holds origin_count elements of origin_datatype.
    fast = { fast(win, |w| unsafe { ops::put_get_lean(w, false, origin_addr as usize, origin_count as i64,
        origin_datatype, target_rank, target_disp as i64, target_count as i64, target_datatype) }) }, {
    put_get(false, origin_addr, origin_count as i64, origin_datatype, target_rank, target_disp as i64,
            target_count as i64, target_datatype, win, NAME, false).map(|_| ())
});

counted!(MPI_Get, PMPI_Get, MPI_Get_c, PMPI_Get_c,
    (origin_addr: *mut c_void, origin_count: Count, origin_datatype: i32, target_rank: c_int,
     target_disp: Aint, target_count: Count, target_datatype: i32, win: i32), errcomm = win,
    // SAFETY: the MPI caller's origin buffer is writable for origin_count elements of
    // origin_datatype.
    fast = { fast(win, |w| unsafe { ops::put_get_lean(w, true, origin_addr as usize, origin_count as i64,
        origin_datatype, target_rank, target_disp as i64, target_count as i64, target_datatype) }) }, {
    put_get(true, origin_addr, origin_count as i64, origin_datatype, target_rank, target_disp as i64,
            target_count as i64, target_datatype, win, NAME, false).map(|_| ())
});

counted!(MPI_Rput, PMPI_Rput, MPI_Rput_c, PMPI_Rput_c,
    (origin_addr: *const c_void, origin_count: Count, origin_datatype: i32, target_rank: c_int,
     target_disp: Aint, target_count: Count, target_datatype: i32, win: i32, request: *mut i32), errcomm = win, {
    let w = put_get(false, origin_addr, origin_count as i64, origin_datatype, target_rank, target_disp as i64,
            target_count as i64, target_datatype, win, NAME, true)?;
    done_request(&w.unwrap(), request)
});

counted!(MPI_Rget, PMPI_Rget, MPI_Rget_c, PMPI_Rget_c,
    (origin_addr: *mut c_void, origin_count: Count, origin_datatype: i32, target_rank: c_int,
     target_disp: Aint, target_count: Count, target_datatype: i32, win: i32, request: *mut i32), errcomm = win, {
    let w = put_get(true, origin_addr, origin_count as i64, origin_datatype, target_rank, target_disp as i64,
            target_count as i64, target_datatype, win, NAME, true)?;
    done_request(&w.unwrap(), request)
});

/// The accumulate family: `result` is (address, count, datatype) for Get_accumulate.
fn acc(
    origin: (*const c_void, i64, i32),
    result: Option<(*mut c_void, i64, i32)>,
    target_rank: c_int,
    target_disp: i64,
    target_count: i64,
    target_datatype: i32,
    op: i32,
    win: i32,
    call: &str,
    passive_only: bool,
) -> MpiResult<Arc<Win>> {
    let w = self::win(win)?;
    let op = acc_op(op)?;
    // (MPI_NO_OP ignores the origin buffer: its arguments need not be valid)
    let o = if op == BuiltinOp::NoOp && result.is_some() {
        ops::Buf {
            addr: 0,
            count: 0,
            t: crate::datatype::lookup(MPI_BYTE)?,
        }
    } else {
        buf(
            origin.0,
            origin.1,
            origin.2,
            "origin_count",
            "origin_datatype",
            "origin_addr",
        )?
    };
    let r = match result {
        Some((a, c, t)) => Some(buf(
            a,
            c,
            t,
            "result_count",
            "result_datatype",
            "result_addr",
        )?),
        None => None,
    };
    let Some(t) = target_of(&w, target_rank)? else {
        return Ok(w);
    };
    let tg = tgt(t, target_disp, target_count, target_datatype)?;
    sync::access(&w, t, call, passive_only)?;
    ops::accumulate(&w, &o, r.as_ref(), &tg, op, call)?;
    Ok(w)
}

counted!(MPI_Accumulate, PMPI_Accumulate, MPI_Accumulate_c, PMPI_Accumulate_c,
    (origin_addr: *const c_void, origin_count: Count, origin_datatype: i32, target_rank: c_int,
     target_disp: Aint, target_count: Count, target_datatype: i32, op: i32, win: i32), errcomm = win,
    // SAFETY: the MPI caller's origin buffer holds origin_count elements of origin_datatype.
    fast = { fast(win, |w| unsafe { ops::acc_lean(w, (origin_addr as usize, origin_count as i64, origin_datatype),
        None, target_rank, target_disp as i64, target_count as i64, target_datatype, op) }) }, {
    acc((origin_addr, origin_count as i64, origin_datatype), None, target_rank, target_disp as i64,
        target_count as i64, target_datatype, op, win, NAME, false).map(|_| ())
});

counted!(MPI_Raccumulate, PMPI_Raccumulate, MPI_Raccumulate_c, PMPI_Raccumulate_c,
    (origin_addr: *const c_void, origin_count: Count, origin_datatype: i32, target_rank: c_int,
     target_disp: Aint, target_count: Count, target_datatype: i32, op: i32, win: i32, request: *mut i32), errcomm = win, {
    let w = acc((origin_addr, origin_count as i64, origin_datatype), None, target_rank, target_disp as i64,
        target_count as i64, target_datatype, op, win, NAME, true)?;
    done_request(&w, request)
});

counted!(MPI_Get_accumulate, PMPI_Get_accumulate, MPI_Get_accumulate_c, PMPI_Get_accumulate_c,
    (origin_addr: *const c_void, origin_count: Count, origin_datatype: i32, result_addr: *mut c_void,
     result_count: Count, result_datatype: i32, target_rank: c_int, target_disp: Aint, target_count: Count,
     target_datatype: i32, op: i32, win: i32), errcomm = win,
    // SAFETY: the MPI caller's buffers: origin holds its count of its datatype, result
    // is writable for its count of its datatype.
    fast = { fast(win, |w| unsafe { ops::acc_lean(w, (origin_addr as usize, origin_count as i64, origin_datatype),
        Some((result_addr as usize, result_count as i64, result_datatype)), target_rank, target_disp as i64,
        target_count as i64, target_datatype, op) }) }, {
    acc((origin_addr, origin_count as i64, origin_datatype), Some((result_addr, result_count as i64, result_datatype)),
        target_rank, target_disp as i64, target_count as i64, target_datatype, op, win, NAME, false).map(|_| ())
});

counted!(MPI_Rget_accumulate, PMPI_Rget_accumulate, MPI_Rget_accumulate_c, PMPI_Rget_accumulate_c,
    (origin_addr: *const c_void, origin_count: Count, origin_datatype: i32, result_addr: *mut c_void,
     result_count: Count, result_datatype: i32, target_rank: c_int, target_disp: Aint, target_count: Count,
     target_datatype: i32, op: i32, win: i32, request: *mut i32), errcomm = win, {
    let w = acc((origin_addr, origin_count as i64, origin_datatype), Some((result_addr, result_count as i64, result_datatype)),
        target_rank, target_disp as i64, target_count as i64, target_datatype, op, win, NAME, true)?;
    done_request(&w, request)
});

/// The one predefined datatype of MPI_Fetch_and_op and MPI_Compare_and_swap.
fn one_element_type(dt: i32) -> MpiResult<crate::datatype::TypeRef> {
    check::datatype(dt, "datatype")?;
    if crate::datatype::predefined::lookup(dt).is_none() {
        return Err(err(
            MPI_ERR_TYPE,
            format!("datatype={dt:#x} is not a predefined datatype (this call takes one element of a predefined type)"),
        ));
    }
    crate::datatype::lookup_arg(dt, "datatype")
}

mpi_entry!(MPI_Fetch_and_op, PMPI_Fetch_and_op,
    (origin_addr: *const c_void, result_addr: *mut c_void, datatype: i32, target_rank: c_int,
     target_disp: Aint, op: i32, win: i32), errcomm = win,
    // SAFETY: the MPI caller's element of datatype at origin_addr, its writable one at
    // result_addr.
    fast = { fast(win, |w| unsafe { ops::acc_lean(w, (origin_addr as usize, 1, datatype),
        Some((result_addr as usize, 1, datatype)), target_rank, target_disp as i64, 1, datatype, op) }) }, {
    if crate::datatype::predefined::lookup(datatype).is_none() {
        one_element_type(datatype)?;
    }
    acc((origin_addr, 1, datatype), Some((result_addr, 1, datatype)), target_rank, target_disp as i64, 1,
        datatype, op, win, "MPI_Fetch_and_op", false).map(|_| ())
});

/// The type classes MPI_Compare_and_swap allows.
fn cas_class(datatype: i32) -> bool {
    use crate::datatype::predefined::TypeClass as C;
    let class = crate::datatype::predefined::lookup(datatype).map(|p| p.class);
    matches!(
        class,
        Some(C::CInteger | C::FortranInteger | C::Logical | C::Byte)
    )
}

mpi_entry!(MPI_Compare_and_swap, PMPI_Compare_and_swap,
    (origin_addr: *const c_void, compare_addr: *const c_void, result_addr: *mut c_void, datatype: i32,
     target_rank: c_int, target_disp: Aint, win: i32), errcomm = win,
    fast = {
        let addrs = (origin_addr as usize, compare_addr as usize, result_addr as usize);
        cas_class(datatype) && addrs.0 != 0 && addrs.1 != 0 && addrs.2 != 0
            // SAFETY: the MPI caller's elements of datatype, the result one writable.
            && fast(win, |w| unsafe { ops::cas_lean(w, addrs, datatype, target_rank, target_disp as i64) })
    }, {
    let w = self::win(win)?;
    let allowed = cas_class(datatype);
    let t = one_element_type(datatype)?;
    if !allowed {
        return Err(err(
            MPI_ERR_TYPE,
            format!("datatype={datatype:#x} is not of a type class MPI_Compare_and_swap allows (C integer, Fortran integer, logical, byte)"),
        ));
    }
    check::not_null(origin_addr, "origin_addr")?;
    check::not_null(compare_addr, "compare_addr")?;
    check::not_null(result_addr, "result_addr")?;
    let Some(r) = target_of(&w, target_rank)? else {
        return Ok(());
    };
    sync::access(&w, r, "MPI_Compare_and_swap", false)?;
    ops::compare_and_swap(&w, origin_addr as usize, compare_addr as usize, result_addr as usize, &t, r,
                          target_disp as i64, "MPI_Compare_and_swap")
});

// ------------------------------------------------------------------ synchronisation

mpi_entry!(MPI_Win_fence, PMPI_Win_fence, (assert: c_int, win: i32), errcomm = win, {
    sync::fence_call(&*self::win(win)?, assert)
});

/// The window ranks of the members of `group`; MPI_ERR_GROUP if one is not a member.
fn window_ranks(w: &Win, group: i32) -> MpiResult<Vec<usize>> {
    let g = crate::comm::group::get(group, "group")?;
    g.ranks
        .iter()
        .map(|&wr| {
            w.comm.group.iter().position(|&m| m == wr).ok_or_else(|| {
                err(
                    MPI_ERR_GROUP,
                    format!("group holds world rank {wr}, which is not a member of the window"),
                )
            })
        })
        .collect()
}

mpi_entry!(MPI_Win_post, PMPI_Win_post, (group: i32, assert: c_int, win: i32), errcomm = win, {
    let w = self::win(win)?;
    let g = window_ranks(&w, group)?;
    sync::post(&w, &g, assert)
});

mpi_entry!(MPI_Win_start, PMPI_Win_start, (group: i32, assert: c_int, win: i32), errcomm = win, {
    let w = self::win(win)?;
    let g = window_ranks(&w, group)?;
    sync::start(&w, &g, assert)
});

mpi_entry!(MPI_Win_complete, PMPI_Win_complete, (win: i32), errcomm = win, {
    sync::complete(&*self::win(win)?)
});

mpi_entry!(MPI_Win_wait, PMPI_Win_wait, (win: i32), errcomm = win, {
    sync::wait(&*self::win(win)?, true, "MPI_Win_wait").map(|_| ())
});

mpi_entry!(MPI_Win_test, PMPI_Win_test, (win: i32, flag: *mut c_int), errcomm = win, {
    let w = self::win(win)?;
    check::not_null(flag, "flag")?;
    let done = sync::wait(&w, false, "MPI_Win_test")?;
    check::out(flag, done as c_int, "flag")
});

fn lock_rank(w: &Win, rank: c_int) -> MpiResult<Option<usize>> {
    if rank == MPI_PROC_NULL {
        return Ok(None);
    }
    check::rank(rank, w.n(), "rank", &[])?;
    Ok(Some(rank as usize))
}

mpi_entry!(MPI_Win_lock, PMPI_Win_lock, (lock_type: c_int, rank: c_int, assert: c_int, win: i32), errcomm = win,
    fast = { fast(win, |w| fast_rank(w, rank).is_some_and(|r| sync::lock_fast(w, lock_type, r, assert))) }, {
    let w = self::win(win)?;
    match lock_rank(&w, rank)? {
        Some(r) => sync::lock(&w, lock_type, r, assert),
        None => Ok(()),
    }
});

mpi_entry!(MPI_Win_unlock, PMPI_Win_unlock, (rank: c_int, win: i32), errcomm = win,
    fast = { fast(win, |w| fast_rank(w, rank).is_some_and(|r| sync::unlock(w, r).is_ok())) }, {
    let w = self::win(win)?;
    match lock_rank(&w, rank)? {
        Some(r) => sync::unlock(&w, r),
        None => Ok(()),
    }
});

mpi_entry!(MPI_Win_lock_all, PMPI_Win_lock_all, (assert: c_int, win: i32), errcomm = win, {
    sync::lock_all(&*self::win(win)?, assert)
});

mpi_entry!(MPI_Win_unlock_all, PMPI_Win_unlock_all, (win: i32), errcomm = win,
    fast = { fast(win, |w| sync::unlock_all(w).is_ok()) }, {
    sync::unlock_all(&*self::win(win)?)
});

fn flush_one(rank: c_int, win: i32, call: &str) -> MpiResult<()> {
    let w = self::win(win)?;
    match lock_rank(&w, rank)? {
        Some(r) => sync::flush(&w, Some(r), call),
        None => Ok(()),
    }
}

mpi_entry!(MPI_Win_flush, PMPI_Win_flush, (rank: c_int, win: i32), errcomm = win,
    fast = { fast(win, |w| fast_rank(w, rank).is_some_and(|r| sync::flush_fast(w, Some(r)))) }, {
    flush_one(rank, win, "MPI_Win_flush")
});

mpi_entry!(MPI_Win_flush_local, PMPI_Win_flush_local, (rank: c_int, win: i32), errcomm = win,
    fast = { fast(win, |w| fast_rank(w, rank).is_some_and(|r| sync::flush_fast(w, Some(r)))) }, {
    flush_one(rank, win, "MPI_Win_flush_local")
});

mpi_entry!(MPI_Win_flush_all, PMPI_Win_flush_all, (win: i32), errcomm = win,
    fast = { fast(win, |w| sync::flush_fast(w, None)) }, {
    sync::flush(&*self::win(win)?, None, "MPI_Win_flush_all")
});

mpi_entry!(MPI_Win_flush_local_all, PMPI_Win_flush_local_all, (win: i32), errcomm = win,
    fast = { fast(win, |w| sync::flush_fast(w, None)) }, {
    sync::flush(&*self::win(win)?, None, "MPI_Win_flush_local_all")
});

mpi_entry!(MPI_Win_sync, PMPI_Win_sync, (win: i32), errcomm = win,
    fast = { fast(win, |w| sync::win_sync(w).is_ok()) }, {
    sync::win_sync(&*self::win(win)?)
});
