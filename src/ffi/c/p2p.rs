//! Point-to-point entry points and the completion calls of every request: the C
//! layout of MPI_Status, the checks of the caller's pointers, the calls into
//! crate::request (which holds what they mean).
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::ffi::check;
use crate::mpi_entry;
use crate::p2p::{self, Mode, RecvInto, Status};
use crate::request::{self, p2p::SendArgs, persist};
pub use crate::request::{req_handle, req_id};
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

pub const STATUS_IGNORE: usize = 1;

/// The C MPI_Status, 20 bytes.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct CStatus {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
}

impl CStatus {
    pub fn from(st: &Status) -> CStatus {
        CStatus {
            count_lo: st.count_bytes as u32 as c_int,
            count_hi_and_cancelled: (((st.count_bytes >> 32) as c_int) << 1)
                | st.cancelled as c_int,
            source: st.source,
            tag: st.tag,
            error: st.error,
        }
    }
    pub fn count_bytes(&self) -> u64 {
        (self.count_lo as u32 as u64) | (((self.count_hi_and_cancelled as u32 >> 1) as u64) << 32)
    }
}

/// Writes `st` unless `p` is MPI_STATUS_IGNORE (or NULL), for a call that returns one
/// status: its MPI_ERROR field is left as it was (MPI-3.1 section 3.2.5: only the calls
/// that return several statuses set it; the others return the error itself).
pub fn put_status(p: *mut CStatus, st: &Status) {
    if !p.is_null() && p as usize != STATUS_IGNORE {
        // SAFETY: a non-ignore status pointer is valid for one MPI_Status.
        unsafe {
            let error = (*p).error;
            p.write(CStatus {
                error,
                ..CStatus::from(st)
            })
        };
    }
}

/// Writes status `i` of an array of statuses (MPI_Waitall and the like) unless it is
/// MPI_STATUSES_IGNORE, its MPI_ERROR as `request::in_array` says (`func` names the
/// call).
pub fn put_status_at(p: *mut CStatus, i: usize, st: &Status, func: &str) {
    let st = request::in_array(st, func);
    if !p.is_null() && p as usize != STATUS_IGNORE {
        // SAFETY: the array has one status per request, as the standard requires.
        unsafe { p.add(i).write(CStatus::from(&st)) };
    }
}

/// A send of `count` instances of `dt` at `buf`, checked.
#[inline(always)]
fn send_args(
    buf: *const c_void,
    count: i64,
    dt: i32,
    dest: c_int,
    tag: c_int,
    comm: i32,
) -> MpiResult<SendArgs> {
    let (comm, n, t) = request::p2p::send_check(count, dt, dest, tag, comm)?;
    let data = crate::ffi::typed::send_data(buf, n, &t, "buf")?;
    Ok(SendArgs {
        comm,
        data,
        dest,
        tag,
    })
}

/// A receive into `count` instances of `dt` at `buf`, checked: its communicator and
/// where the message goes.
#[inline(always)]
fn recv_args(
    buf: *mut c_void,
    count: i64,
    dt: i32,
    source: c_int,
    tag: c_int,
    comm: i32,
) -> MpiResult<(Arc<crate::comm::Comm>, RecvInto)> {
    let (c, n, t) = request::p2p::recv_check(count, dt, source, tag, comm)?;
    Ok((c, crate::ffi::typed::recv_into(buf, n, &t, "buf")?))
}

/// Writes the request handle `make` returns through `req`, which is checked first.
///
/// # Safety
/// Unless NULL, `req` must be valid for a write of one handle.
unsafe fn start_into(req: *mut i32, make: impl FnOnce() -> MpiResult<i32>) -> MpiResult<()> {
    if req.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let h = make()?;
    // SAFETY: non-NULL; valid for the write (this function's contract).
    unsafe { check::out(req, h, "request") }
}

counted!(MPI_Send, PMPI_Send, MPI_Send_c, PMPI_Send_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32), errcomm = comm, {
    send_args(buf, count.into(), datatype, dest, tag, comm)?.blocking(Mode::Standard)
});
counted!(MPI_Ssend, PMPI_Ssend, MPI_Ssend_c, PMPI_Ssend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32), errcomm = comm, {
    send_args(buf, count.into(), datatype, dest, tag, comm)?.blocking(Mode::Sync)
});
counted!(MPI_Rsend, PMPI_Rsend, MPI_Rsend_c, PMPI_Rsend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32), errcomm = comm, {
    send_args(buf, count.into(), datatype, dest, tag, comm)?.blocking(Mode::Ready)
});
counted!(MPI_Bsend, PMPI_Bsend, MPI_Bsend_c, PMPI_Bsend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32), errcomm = comm, {
    send_args(buf, count.into(), datatype, dest, tag, comm)?.blocking(Mode::Buffered)
});

counted!(MPI_Isend, PMPI_Isend, MPI_Isend_c, PMPI_Isend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    start_into(request, || Ok(req_handle(send_args(buf, count.into(), datatype, dest, tag, comm)?.start(Mode::Standard)?)))
});
counted!(MPI_Issend, PMPI_Issend, MPI_Issend_c, PMPI_Issend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    start_into(request, || Ok(req_handle(send_args(buf, count.into(), datatype, dest, tag, comm)?.start(Mode::Sync)?)))
});
counted!(MPI_Irsend, PMPI_Irsend, MPI_Irsend_c, PMPI_Irsend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    start_into(request, || Ok(req_handle(send_args(buf, count.into(), datatype, dest, tag, comm)?.start(Mode::Ready)?)))
});
counted!(MPI_Ibsend, PMPI_Ibsend, MPI_Ibsend_c, PMPI_Ibsend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    start_into(request, || Ok(req_handle(send_args(buf, count.into(), datatype, dest, tag, comm)?.start(Mode::Buffered)?)))
});

counted!(MPI_Recv, PMPI_Recv, MPI_Recv_c, PMPI_Recv_c, (buf: *mut c_void, count: Count, datatype: i32, source: c_int, tag: c_int, comm: i32, status: *mut CStatus), errcomm = comm, {
    let (c, b) = recv_args(buf, count.into(), datatype, source, tag, comm)?;
    let st = p2p::wait(p2p::irecv_into(&c, b, source, tag)?)?;
    put_status(status, &st);
    request::status_error(&st)
});

counted!(MPI_Irecv, PMPI_Irecv, MPI_Irecv_c, PMPI_Irecv_c, (buf: *mut c_void, count: Count, datatype: i32, source: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    start_into(request, || {
        let (c, b) = recv_args(buf, count.into(), datatype, source, tag, comm)?;
        Ok(req_handle(p2p::irecv_into(&c, b, source, tag)?))
    })
});

/// A persistent send in `mode`: the arguments are checked now, and every MPI_Start
/// starts the send as the nonblocking call would (reading the buffer then).
/// `a` is (buf, count, dest, tag, comm), `dt` the datatype.
fn send_init(
    name: &'static str,
    dt: i32,
    a: (*const c_void, i64, c_int, c_int, i32),
    req: *mut i32,
    mode: Mode,
) -> MpiResult<()> {
    let make = || {
        send_args(a.0, a.1, dt, a.2, a.3, a.4)?;
        let ty = persist::TypeHold::new(dt)?;
        let args = persist::Captured(a);
        persist::create_p2p(
            name,
            Arc::new(move || {
                let (buf, count, dest, tag, comm) = args.get();
                send_args(buf, count, ty.handle(), dest, tag, comm)?.start(mode)
            }),
        )
    };
    // SAFETY: `req`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { start_into(req, make) }
}

counted!(MPI_Send_init, PMPI_Send_init, MPI_Send_init_c, PMPI_Send_init_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    send_init(NAME, datatype, (buf, count.into(), dest, tag, comm), request, Mode::Standard)
});
counted!(MPI_Ssend_init, PMPI_Ssend_init, MPI_Ssend_init_c, PMPI_Ssend_init_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    send_init(NAME, datatype, (buf, count.into(), dest, tag, comm), request, Mode::Sync)
});
counted!(MPI_Rsend_init, PMPI_Rsend_init, MPI_Rsend_init_c, PMPI_Rsend_init_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    send_init(NAME, datatype, (buf, count.into(), dest, tag, comm), request, Mode::Ready)
});
counted!(MPI_Bsend_init, PMPI_Bsend_init, MPI_Bsend_init_c, PMPI_Bsend_init_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    send_init(NAME, datatype, (buf, count.into(), dest, tag, comm), request, Mode::Buffered)
});

counted!(MPI_Recv_init, PMPI_Recv_init, MPI_Recv_init_c, PMPI_Recv_init_c, (buf: *mut c_void, count: Count, datatype: i32, source: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    let count: i64 = count.into();
    start_into(request, || {
        recv_args(buf, count, datatype, source, tag, comm)?;
        let ty = persist::TypeHold::new(datatype)?;
        let args = persist::Captured((buf, count, source, tag, comm));
        persist::create_p2p(NAME, Arc::new(move || {
            let (buf, count, source, tag, comm) = args.get();
            let (c, b) = recv_args(buf, count, ty.handle(), source, tag, comm)?;
            p2p::irecv_into(&c, b, source, tag)
        }))
    })
});

/// Starts the receive and the send of MPI_Sendrecv and its forms (`replace`: one
/// buffer, see request::p2p::sendrecv): (communicator, receive, send).
fn sendrecv(
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: i32,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: i32,
    source: c_int,
    recvtag: c_int,
    comm: i32,
    replace: bool,
) -> MpiResult<(Arc<crate::comm::Comm>, usize, usize)> {
    let a = send_args(sendbuf, sendcount, sendtype, dest, sendtag, comm)?;
    let (c, b) = recv_args(recvbuf, recvcount, recvtype, source, recvtag, comm)?;
    let (rid, sid) = request::p2p::sendrecv(a, &c, b, source, recvtag, replace)?;
    Ok((c, rid, sid))
}

/// Waits for what [`sendrecv`] started; the receive's status to `status`.
fn sendrecv_wait(
    started: (Arc<crate::comm::Comm>, usize, usize),
    status: *mut CStatus,
) -> MpiResult<()> {
    let (st, r) = request::p2p::sendrecv_wait(started.1, started.2)?;
    put_status(status, &st);
    r
}

/// The request of what [`sendrecv`] started.
fn sendrecv_request(started: (Arc<crate::comm::Comm>, usize, usize)) -> MpiResult<i32> {
    Ok(req_handle(p2p::pair(&started.0, started.1, started.2)?))
}

counted!(MPI_Sendrecv, PMPI_Sendrecv, MPI_Sendrecv_c, PMPI_Sendrecv_c, (sendbuf: *const c_void, sendcount: Count, sendtype: i32, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: Count, recvtype: i32, source: c_int, recvtag: c_int, comm: i32, status: *mut CStatus), errcomm = comm, {
    sendrecv_wait(sendrecv(sendbuf, sendcount.into(), sendtype, dest, sendtag, recvbuf, recvcount.into(), recvtype, source, recvtag, comm, false)?, status)
});

counted!(MPI_Sendrecv_replace, PMPI_Sendrecv_replace, MPI_Sendrecv_replace_c, PMPI_Sendrecv_replace_c, (buf: *mut c_void, count: Count, datatype: i32, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: i32, status: *mut CStatus), errcomm = comm, {
    sendrecv_wait(sendrecv(buf, count.into(), datatype, dest, sendtag, buf, count.into(), datatype, source, recvtag, comm, true)?, status)
});

counted!(MPI_Isendrecv, PMPI_Isendrecv, MPI_Isendrecv_c, PMPI_Isendrecv_c, (sendbuf: *const c_void, sendcount: Count, sendtype: i32, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: Count, recvtype: i32, source: c_int, recvtag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    start_into(request, || sendrecv_request(sendrecv(sendbuf, sendcount.into(), sendtype, dest, sendtag, recvbuf, recvcount.into(), recvtype, source, recvtag, comm, false)?))
});

counted!(MPI_Isendrecv_replace, PMPI_Isendrecv_replace, MPI_Isendrecv_replace_c, PMPI_Isendrecv_replace_c, (buf: *mut c_void, count: Count, datatype: i32, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    start_into(request, || sendrecv_request(sendrecv(buf, count.into(), datatype, dest, sendtag, buf, count.into(), datatype, source, recvtag, comm, true)?))
});

// ---------------------------------------------------------------- completion

mpi_entry!(MPI_Wait, PMPI_Wait, (request: *mut i32, status: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let mut h = check::inp(request, "request")?;
    let (st, r) = request::wait(&mut h)?;
    check::out(request, h, "request")?;
    put_status(status, &st);
    r.result()
});

mpi_entry!(MPI_Test, PMPI_Test, (request: *mut i32, flag: *mut c_int, status: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let mut h = check::inp(request, "request")?;
    match request::test(&mut h)? {
        Some((st, r)) => {
            check::out(request, h, "request")?;
            put_status(status, &st);
            check::out(flag, 1, "flag")?;
            r.result()
        }
        None => check::out(flag, 0, "flag"),
    }
});

/// The `count` request handles at `reqs`, checked.
///
/// # Safety
/// As for `check::array_mut`.
unsafe fn handles<'a>(count: c_int, reqs: *mut i32, arg: &str) -> MpiResult<&'a mut [i32]> {
    crate::runtime::job()?;
    let n = check::count(count, arg)?;
    // SAFETY: this function's contract.
    unsafe { check::array_mut(reqs, n, "array_of_requests") }
}

mpi_entry!(MPI_Waitall, PMPI_Waitall, (count: c_int, array_of_requests: *mut i32, array_of_statuses: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    let reqs = handles(count, array_of_requests, "count")?;
    request::waitall(reqs, |i, st| put_status_at(array_of_statuses, i, st, "MPI_Waitall"))?.result()
});

mpi_entry!(MPI_Testall, PMPI_Testall, (count: c_int, array_of_requests: *mut i32, flag: *mut c_int, array_of_statuses: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    let reqs = handles(count, array_of_requests, "count")?;
    match request::testall(reqs, |i, st| put_status_at(array_of_statuses, i, st, "MPI_Testall"))? {
        Some(r) => {
            check::out(flag, 1, "flag")?;
            r.result()
        }
        None => check::out(flag, 0, "flag"),
    }
});

/// MPI_Waitany's and MPI_Testany's index: MPI_UNDEFINED for None.
fn index_of(i: Option<usize>) -> c_int {
    i.map_or(MPI_UNDEFINED, |i| i as c_int)
}

mpi_entry!(MPI_Waitany, PMPI_Waitany, (count: c_int, array_of_requests: *mut i32, index: *mut c_int, status: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    let reqs = handles(count, array_of_requests, "count")?;
    let i = request::waitany(reqs, |st| put_status(status, st))?;
    check::out(index, index_of(i), "index")
});

mpi_entry!(MPI_Testany, PMPI_Testany, (count: c_int, array_of_requests: *mut i32, index: *mut c_int, flag: *mut c_int, status: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    let reqs = handles(count, array_of_requests, "count")?;
    let r = request::testany(reqs, |st| put_status(status, st))?;
    check::out(index, index_of(r.flatten()), "index")?;
    check::out(flag, r.is_some() as c_int, "flag")
});

/// MPI_Waitsome and MPI_Testsome (`wait`): the completion and its outputs.
///
/// # Safety
/// The pointers are valid as the MPI caller must pass them.
unsafe fn some(
    incount: c_int,
    reqs: *mut i32,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut CStatus,
    wait: bool,
) -> MpiResult<()> {
    // SAFETY: this function's contract.
    let reqs = unsafe { handles(incount, reqs, "incount")? };
    // SAFETY: this function's contract.
    let idx = unsafe { check::array_mut(indices, reqs.len(), "array_of_indices")? };
    let (k, r) = if wait {
        request::waitsome(reqs, idx, |k, st| {
            put_status_at(statuses, k, st, "MPI_Waitsome")
        })?
    } else {
        request::testsome(reqs, idx, |k, st| {
            put_status_at(statuses, k, st, "MPI_Testsome")
        })?
    };
    // SAFETY: this function's contract.
    unsafe { check::out(outcount, index_of(k), "outcount")? };
    r.result()
}

mpi_entry!(MPI_Waitsome, PMPI_Waitsome, (incount: c_int, array_of_requests: *mut i32, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    some(incount, array_of_requests, outcount, array_of_indices, array_of_statuses, true)
});

mpi_entry!(MPI_Testsome, PMPI_Testsome, (incount: c_int, array_of_requests: *mut i32, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    some(incount, array_of_requests, outcount, array_of_indices, array_of_statuses, false)
});

mpi_entry!(MPI_Request_free, PMPI_Request_free, (request: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    request::free(check::inp(request, "request")?)?;
    check::out(request, MPI_REQUEST_NULL, "request")
});

mpi_entry!(MPI_Request_get_status, PMPI_Request_get_status, (request: i32, flag: *mut c_int, status: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let st = request::get_status(request)?;
    if let Some(st) = &st {
        put_status(status, st);
    }
    check::out(flag, st.is_some() as c_int, "flag")
});

mpi_entry!(MPI_Cancel, PMPI_Cancel, (request: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    request::cancel(check::inp(request, "request")?)
});

mpi_entry!(MPI_Start, PMPI_Start, (request: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    persist::start(check::inp(request, "request")?)
});

mpi_entry!(MPI_Startall, PMPI_Startall, (count: c_int, array_of_requests: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let n = check::count(count, "count")?;
    persist::startall(check::array(array_of_requests, n, "array_of_requests")?)
});

mpi_entry!(MPI_Status_set_cancelled, PMPI_Status_set_cancelled, (status: *mut CStatus, flag: c_int), errcomm = MPI_COMM_WORLD, {
    let mut st = check::inp(status, "status")?;
    st.count_hi_and_cancelled = (st.count_hi_and_cancelled & !1) | (flag != 0) as c_int;
    check::out(status, st, "status")
});

/// MPI_Status_set_elements(_x): the status says `count` basic elements of `dt` arrived.
fn set_elements(status: *mut CStatus, dt: i32, count: i64) -> MpiResult<()> {
    let t = crate::datatype::derived::get_signature(dt, "datatype")?;
    let n = check::count(count, "count")?;
    let bytes = crate::datatype::elements_bytes(&t, n as u64)
        // the status holds 63 bits of byte count (MPICH's layout)
        .filter(|&b| b <= i64::MAX as u64)
        .ok_or_else(|| err(MPI_ERR_COUNT, format!("count={count} overflows")))?;
    // SAFETY: `status`: passed on from the entry point, valid as the MPI caller must pass it.
    let mut st = unsafe { check::inp(status, "status") }?;
    st.count_lo = bytes as u32 as c_int;
    st.count_hi_and_cancelled = (((bytes >> 32) as c_int) << 1) | (st.count_hi_and_cancelled & 1);
    // SAFETY: `status`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(status, st, "status") }
}

mpi_entry!(MPI_Status_set_elements, PMPI_Status_set_elements, (status: *mut CStatus, datatype: i32, count: c_int), errcomm = MPI_COMM_WORLD, {
    set_elements(status, datatype, count.into())
});

mpi_entry!(MPI_Status_set_elements_x, PMPI_Status_set_elements_x, (status: *mut CStatus, datatype: i32, count: i64), errcomm = MPI_COMM_WORLD, {
    set_elements(status, datatype, count)
});

mpi_entry!(MPI_Test_cancelled, PMPI_Test_cancelled, (status: *const CStatus, flag: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let st = check::inp(status, "status")?;
    check::out(flag, st.count_hi_and_cancelled & 1, "flag")
});

// ---------------------------------------------------------------- probe, counts

mpi_entry!(MPI_Iprobe, PMPI_Iprobe, (source: c_int, tag: c_int, comm: i32, flag: *mut c_int, status: *mut CStatus), errcomm = comm, {
    let st = request::p2p::iprobe(source, tag, comm)?;
    if let Some(st) = &st {
        put_status(status, st);
    }
    check::out(flag, st.is_some() as c_int, "flag")
});

mpi_entry!(MPI_Probe, PMPI_Probe, (source: c_int, tag: c_int, comm: i32, status: *mut CStatus), errcomm = comm, {
    put_status(status, &request::p2p::probe(source, tag, comm)?);
    Ok(())
});

mpi_entry!(MPI_Improbe, PMPI_Improbe, (source: c_int, tag: c_int, comm: i32, flag: *mut c_int, message: *mut i32, status: *mut CStatus), errcomm = comm, {
    check::not_null(message, "message")?;
    check::not_null(flag, "flag")?;
    match request::p2p::improbe(source, tag, comm)? {
        Some((st, m)) => {
            check::out(message, m, "message")?;
            put_status(status, &st);
            check::out(flag, 1, "flag")
        }
        None => check::out(flag, 0, "flag"),
    }
});

mpi_entry!(MPI_Mprobe, PMPI_Mprobe, (source: c_int, tag: c_int, comm: i32, message: *mut i32, status: *mut CStatus), errcomm = comm, {
    check::not_null(message, "message")?;
    let (st, m) = request::p2p::mprobe(source, tag, comm)?;
    check::out(message, m, "message")?;
    put_status(status, &st);
    Ok(())
});

/// The communicator whose error handler handles an error of MPI_Mrecv / MPI_Imrecv.
fn message_errcomm(message: *const i32) -> i32 {
    if message.is_null() {
        return MPI_COMM_WORLD;
    }
    // SAFETY: a non-NULL message argument points to one MPI_Message (MPI's contract).
    request::p2p::message_errcomm(unsafe { message.read() })
}

/// Starts the receive of a matched message; sets the handle to MPI_MESSAGE_NULL.
/// Returns the receive's request id (None for MPI_MESSAGE_NO_PROC).
///
/// # Safety
/// The pointers are valid as the MPI caller must pass them.
unsafe fn start_mrecv(
    buf: *mut c_void,
    count: i64,
    dt: i32,
    message: *mut i32,
) -> MpiResult<Option<usize>> {
    crate::runtime::job()?;
    // SAFETY: this function's contract.
    let id = request::p2p::message_id(unsafe { check::inp(message, "message") }?)?;
    let n = check::count(count, "count")?;
    let t = check::message_datatype(dt, n, "datatype")?;
    let r = request::p2p::mrecv_start(id, crate::ffi::typed::recv_into(buf, n, &t, "buf")?)?;
    // SAFETY: this function's contract.
    unsafe { check::out(message, MPI_MESSAGE_NULL, "message") }?;
    Ok(r)
}

counted!(MPI_Mrecv, PMPI_Mrecv, MPI_Mrecv_c, PMPI_Mrecv_c, (buf: *mut c_void, count: Count, datatype: i32, message: *mut i32, status: *mut CStatus), errcomm = message_errcomm(message), {
    let st = match start_mrecv(buf, count.into(), datatype, message)? {
        None => Status::proc_null(),
        Some(id) => p2p::wait(id)?,
    };
    put_status(status, &st);
    request::status_error(&st)
});

counted!(MPI_Imrecv, PMPI_Imrecv, MPI_Imrecv_c, PMPI_Imrecv_c, (buf: *mut c_void, count: Count, datatype: i32, message: *mut i32, request: *mut i32), errcomm = message_errcomm(message), {
    start_into(request, || {
        let id = match start_mrecv(buf, count.into(), datatype, message)? {
            Some(id) => id,
            None => request::p2p::proc_null_request()?,
        };
        Ok(req_handle(id))
    })
});

fn count_of(status: *const CStatus, dt: i32) -> MpiResult<c_int> {
    // SAFETY: `status`: passed on from the entry point, valid as the MPI caller must pass it.
    let st = unsafe { check::inp(status, "status") }?;
    let size = crate::datatype::derived::get_signature(dt, "datatype")?.size() as u64;
    let bytes = st.count_bytes();
    if size == 0 {
        return Ok(if bytes == 0 { 0 } else { MPI_UNDEFINED });
    }
    if bytes % size != 0 {
        return Ok(MPI_UNDEFINED);
    }
    let n = bytes / size;
    Ok(if n > i32::MAX as u64 {
        MPI_UNDEFINED
    } else {
        n as c_int
    })
}

mpi_entry!(MPI_Get_count, PMPI_Get_count, (status: *const CStatus, datatype: i32, count: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let n = count_of(status, datatype)?;
    check::out(count, n, "count")
});

mpi_entry!(MPI_Get_elements, PMPI_Get_elements, (status: *const CStatus, datatype: i32, count: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let st = check::inp(status, "status")?;
    let t = crate::datatype::derived::get_signature(datatype, "datatype")?;
    let n = match crate::datatype::get_elements(&t, st.count_bytes()) {
        Some(n) if n <= i32::MAX as u64 => n as c_int,
        _ => MPI_UNDEFINED,
    };
    check::out(count, n, "count")
});
