//! Point-to-point entry points.
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::ffi::check;
use crate::mpi_entry;
use crate::p2p::{self, Mode, Orphan, SendData, Status};
use std::os::raw::{c_int, c_void};

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

/// Writes status `i` of an array unless it is MPI_STATUSES_IGNORE.
/// Writes status `i` of an array of statuses (MPI_Waitall and the like). The MPI_ERROR
/// of a receive or send that no peer can ever complete is a code whose string says why
/// (`func` names the call); other errors keep their class, which programs compare with
/// (MPI_ERR_TRUNCATE).
pub fn put_status_at(p: *mut CStatus, i: usize, st: &Status, func: &str) {
    let mut st = *st;
    if st.orphan != Orphan::No {
        if let Err(e) = status_error(&st) {
            st.error = crate::runtime::error_code(func, &e).0;
        }
    }
    let st = &st;
    if !p.is_null() && p as usize != STATUS_IGNORE {
        // SAFETY: the array has one status per request, as the standard requires.
        unsafe { p.add(i).write(CStatus::from(st)) };
    }
}

pub fn req_handle(id: usize) -> i32 {
    direct_handle(OBJ_REQUEST, id)
}

pub fn req_id(h: i32) -> MpiResult<Option<usize>> {
    if h == MPI_REQUEST_NULL {
        return Ok(None);
    }
    match direct_index(h, OBJ_REQUEST) {
        Some(i) if p2p::exists(i) => Ok(Some(i)),
        Some(i) if p2p::is_message(i) => Err(err(
            MPI_ERR_REQUEST,
            format!("request={h:#x} is a message handle from MPI_Mprobe/MPI_Improbe, not a request (receive it with MPI_Mrecv or MPI_Imrecv)"),
        )),
        _ => Err(err(
            MPI_ERR_REQUEST,
            format!("request={h:#x} is not a valid request (already completed and freed?)"),
        )),
    }
}

/// The error of a completed request: a nonblocking collective's own message, or the
/// status's error.
fn request_error(id: usize, st: &Status) -> MpiResult<()> {
    if let Some(e) = crate::coll::nb::take_error(id) {
        return Err(e);
    }
    status_error(st)
}

/// The status of a request a Wait/Test call has just completed: a generalized request's
/// comes from its query callback (which runs then, followed by its free callback).
fn finished(id: usize, mut st: Status) -> Status {
    super::greq::finish(id, &mut st);
    st
}

/// Rejects operations the standard forbids on a nonblocking collective's request.
fn not_collective(id: usize, what: &str) -> MpiResult<()> {
    if p2p::is_coll(id) {
        return Err(err(MPI_ERR_REQUEST, format!("{what} is not allowed on the request of a nonblocking collective (wait for it or test it instead)")));
    }
    Ok(())
}

fn status_error(st: &Status) -> MpiResult<()> {
    if st.error == MPI_SUCCESS {
        return Ok(());
    }
    let tag = || {
        if st.tag == MPI_ANY_TAG {
            "any tag".to_string()
        } else {
            format!("tag {}", st.tag)
        }
    };
    let msg = match st.orphan {
        Orphan::SourceGone => format!("rank {} has called MPI_Finalize with nothing left to send while this rank waits to receive from it ({}): the message can never arrive", st.source, tag()),
        Orphan::AllGone => format!("every other rank that could send to this receive from MPI_ANY_SOURCE ({}) has called MPI_Finalize with nothing left to send: no message can arrive", tag()),
        Orphan::FromItself => format!("this rank (rank {}) waits to receive from itself ({}) but has sent itself no matching message, and cannot send one while it waits: the message can never arrive", st.source, tag()),
        Orphan::ReceiverGone => format!("rank {} called MPI_Finalize without receiving this message ({}, {} bytes): it can never be received", st.source, tag(), st.count_bytes),
        Orphan::No if st.error == MPI_ERR_TRUNCATE => format!("message from rank {} with tag {} was longer than the receive buffer (received {} bytes, truncated)", st.source, st.tag, st.count_bytes),
        Orphan::No => "the operation failed".to_string(),
    };
    Err(err(st.error, msg))
}

struct SendArgs {
    comm: std::sync::Arc<crate::comm::Comm>,
    data: SendData,
    dest: c_int,
    tag: c_int,
}

fn send_args(
    buf: *const c_void,
    count: i64,
    dt: i32,
    dest: c_int,
    tag: c_int,
    comm: i32,
) -> MpiResult<SendArgs> {
    let c = check::comm(comm)?;
    let n = check::count(count, "count")?;
    let t = check::message_datatype(dt, n, "datatype")?;
    check::rank(dest, c.peer_size(), "dest", &[MPI_PROC_NULL])?;
    check::send_tag(tag)?;
    let data = crate::ffi::typed::send_data(buf, n, &t, "buf")?;
    Ok(SendArgs {
        comm: c,
        data,
        dest,
        tag,
    })
}

fn start_send(a: SendArgs, mode: Mode) -> MpiResult<usize> {
    p2p::isend(&a.comm, a.data, a.dest, a.tag, mode)
}

fn blocking_send(
    buf: *const c_void,
    count: i64,
    dt: i32,
    dest: c_int,
    tag: c_int,
    comm: i32,
    mode: Mode,
) -> MpiResult<()> {
    let a = send_args(buf, count, dt, dest, tag, comm)?;
    if matches!(mode, Mode::Standard | Mode::Ready)
        && p2p::send_now(&a.comm, &a.data, a.dest, a.tag)?
    {
        return Ok(());
    }
    let id = start_send(a, mode)?;
    status_error(&p2p::wait(id)?)
}

counted!(MPI_Send, PMPI_Send, MPI_Send_c, PMPI_Send_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32), errcomm = comm, {
    blocking_send(buf, count.into(), datatype, dest, tag, comm, Mode::Standard)
});
counted!(MPI_Ssend, PMPI_Ssend, MPI_Ssend_c, PMPI_Ssend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32), errcomm = comm, {
    blocking_send(buf, count.into(), datatype, dest, tag, comm, Mode::Sync)
});
counted!(MPI_Rsend, PMPI_Rsend, MPI_Rsend_c, PMPI_Rsend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32), errcomm = comm, {
    blocking_send(buf, count.into(), datatype, dest, tag, comm, Mode::Ready)
});
counted!(MPI_Bsend, PMPI_Bsend, MPI_Bsend_c, PMPI_Bsend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32), errcomm = comm, {
    let a = send_args(buf, count.into(), datatype, dest, tag, comm)?;
    let id = start_send(a, Mode::Buffered)?;
    // The data was copied: the returned request is already complete.
    p2p::wait(id).map(|_| ())
});

fn isend_entry(
    buf: *const c_void,
    count: i64,
    dt: i32,
    dest: c_int,
    tag: c_int,
    comm: i32,
    req: *mut i32,
    mode: Mode,
) -> MpiResult<()> {
    if req.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let a = send_args(buf, count, dt, dest, tag, comm)?;
    let id = start_send(a, mode)?;
    // SAFETY: `req`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(req, req_handle(id), "request") }
}

counted!(MPI_Isend, PMPI_Isend, MPI_Isend_c, PMPI_Isend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    isend_entry(buf, count.into(), datatype, dest, tag, comm, request, Mode::Standard)
});
counted!(MPI_Issend, PMPI_Issend, MPI_Issend_c, PMPI_Issend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    isend_entry(buf, count.into(), datatype, dest, tag, comm, request, Mode::Sync)
});
counted!(MPI_Irsend, PMPI_Irsend, MPI_Irsend_c, PMPI_Irsend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    isend_entry(buf, count.into(), datatype, dest, tag, comm, request, Mode::Ready)
});
counted!(MPI_Ibsend, PMPI_Ibsend, MPI_Ibsend_c, PMPI_Ibsend_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    isend_entry(buf, count.into(), datatype, dest, tag, comm, request, Mode::Buffered)
});

fn recv_args(
    buf: *mut c_void,
    count: i64,
    dt: i32,
    source: c_int,
    tag: c_int,
    comm: i32,
) -> MpiResult<(std::sync::Arc<crate::comm::Comm>, crate::p2p::RecvInto)> {
    let c = check::comm(comm)?;
    let n = check::count(count, "count")?;
    let t = check::message_datatype(dt, n, "datatype")?;
    check::rank(
        source,
        c.peer_size(),
        "source",
        &[MPI_PROC_NULL, MPI_ANY_SOURCE],
    )?;
    check::recv_tag(tag)?;
    let b = crate::ffi::typed::recv_into(buf, n, &t, "buf")?;
    Ok((c, b))
}

counted!(MPI_Recv, PMPI_Recv, MPI_Recv_c, PMPI_Recv_c, (buf: *mut c_void, count: Count, datatype: i32, source: c_int, tag: c_int, comm: i32, status: *mut CStatus), errcomm = comm, {
    let (c, b) = recv_args(buf, count.into(), datatype, source, tag, comm)?;
    let id = p2p::irecv_into(&c, b, source, tag)?;
    let st = p2p::wait(id)?;
    put_status(status, &st);
    status_error(&st)
});

counted!(MPI_Irecv, PMPI_Irecv, MPI_Irecv_c, PMPI_Irecv_c, (buf: *mut c_void, count: Count, datatype: i32, source: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let (c, b) = recv_args(buf, count.into(), datatype, source, tag, comm)?;
    let id = p2p::irecv_into(&c, b, source, tag)?;
    check::out(request, req_handle(id), "request")
});

/// A persistent send in `mode`: the arguments are checked now, and every MPI_Start
/// starts the send as the nonblocking call would (reading the buffer then).
#[allow(clippy::too_many_arguments)]
fn send_init(
    name: &'static str,
    buf: *const c_void,
    count: i64,
    dt: i32,
    dest: c_int,
    tag: c_int,
    comm: i32,
    req: *mut i32,
    mode: Mode,
) -> MpiResult<()> {
    if req.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    send_args(buf, count, dt, dest, tag, comm)?;
    let ty = super::persist::TypeHold::new(dt)?;
    let args = super::persist::Captured((buf, count, dest, tag, comm));
    let start: super::persist::Starter = std::sync::Arc::new(move || {
        let (buf, count, dest, tag, comm) = args.get();
        start_send(send_args(buf, count, ty.handle(), dest, tag, comm)?, mode)
    });
    // SAFETY: `req`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(req, super::persist::create_p2p(name, start)?, "request") }
}

counted!(MPI_Send_init, PMPI_Send_init, MPI_Send_init_c, PMPI_Send_init_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    send_init(NAME, buf, count.into(), datatype, dest, tag, comm, request, Mode::Standard)
});
counted!(MPI_Ssend_init, PMPI_Ssend_init, MPI_Ssend_init_c, PMPI_Ssend_init_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    send_init(NAME, buf, count.into(), datatype, dest, tag, comm, request, Mode::Sync)
});
counted!(MPI_Rsend_init, PMPI_Rsend_init, MPI_Rsend_init_c, PMPI_Rsend_init_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    send_init(NAME, buf, count.into(), datatype, dest, tag, comm, request, Mode::Ready)
});
counted!(MPI_Bsend_init, PMPI_Bsend_init, MPI_Bsend_init_c, PMPI_Bsend_init_c, (buf: *const c_void, count: Count, datatype: i32, dest: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    send_init(NAME, buf, count.into(), datatype, dest, tag, comm, request, Mode::Buffered)
});

counted!(MPI_Recv_init, PMPI_Recv_init, MPI_Recv_init_c, PMPI_Recv_init_c, (buf: *mut c_void, count: Count, datatype: i32, source: c_int, tag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let count: i64 = count.into();
    recv_args(buf, count, datatype, source, tag, comm)?;
    let ty = super::persist::TypeHold::new(datatype)?;
    let args = super::persist::Captured((buf, count, source, tag, comm));
    let start: super::persist::Starter = std::sync::Arc::new(move || {
        let (buf, count, source, tag, comm) = args.get();
        let (c, b) = recv_args(buf, count, ty.handle(), source, tag, comm)?;
        p2p::irecv_into(&c, b, source, tag)
    });
    check::out(request, super::persist::create_p2p(NAME, start)?, "request")
});

#[allow(clippy::too_many_arguments)]
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
    status: *mut CStatus,
) -> MpiResult<()> {
    let a = send_args(sendbuf, sendcount, sendtype, dest, sendtag, comm)?;
    let (c, b) = recv_args(recvbuf, recvcount, recvtype, source, recvtag, comm)?;
    let rid = p2p::irecv_into(&c, b, source, recvtag)?;
    let sid = start_send(a, Mode::Standard)?;
    let st = p2p::wait(rid)?;
    let sent = p2p::wait(sid)?;
    put_status(status, &st);
    status_error(&st)?;
    status_error(&sent)
}

counted!(MPI_Sendrecv, PMPI_Sendrecv, MPI_Sendrecv_c, PMPI_Sendrecv_c, (sendbuf: *const c_void, sendcount: Count, sendtype: i32, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: Count, recvtype: i32, source: c_int, recvtag: c_int, comm: i32, status: *mut CStatus), errcomm = comm, {
    sendrecv(sendbuf, sendcount.into(), sendtype, dest, sendtag, recvbuf, recvcount.into(), recvtype, source, recvtag, comm, status)
});

counted!(MPI_Sendrecv_replace, PMPI_Sendrecv_replace, MPI_Sendrecv_replace_c, PMPI_Sendrecv_replace_c, (buf: *mut c_void, count: Count, datatype: i32, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: i32, status: *mut CStatus), errcomm = comm, {
    let a = send_args(buf, count.into(), datatype, dest, sendtag, comm)?;
    // The outgoing data must be copied before the incoming message overwrites it.
    let copy = match a.data {
        SendData::User(b) => SendData::Owned(b.as_slice().to_vec()),
        owned => owned,
    };
    let (c, b) = recv_args(buf, count.into(), datatype, source, recvtag, comm)?;
    let sid = p2p::isend(&a.comm, copy, a.dest, a.tag, Mode::Standard)?;
    let rid = p2p::irecv_into(&c, b, source, recvtag)?;
    let st = p2p::wait(rid)?;
    let sent = p2p::wait(sid)?;
    put_status(status, &st);
    status_error(&st)?;
    status_error(&sent)
});

counted!(MPI_Isendrecv, PMPI_Isendrecv, MPI_Isendrecv_c, PMPI_Isendrecv_c, (sendbuf: *const c_void, sendcount: Count, sendtype: i32, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: Count, recvtype: i32, source: c_int, recvtag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let a = send_args(sendbuf, sendcount.into(), sendtype, dest, sendtag, comm)?;
    let (c, b) = recv_args(recvbuf, recvcount.into(), recvtype, source, recvtag, comm)?;
    let rid = p2p::irecv_into(&c, b, source, recvtag)?;
    let sid = start_send(a, Mode::Standard)?;
    check::out(request, req_handle(p2p::pair(&c, rid, sid)?), "request")
});

counted!(MPI_Isendrecv_replace, PMPI_Isendrecv_replace, MPI_Isendrecv_replace_c, PMPI_Isendrecv_replace_c, (buf: *mut c_void, count: Count, datatype: i32, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: i32, request: *mut i32), errcomm = comm, {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let a = send_args(buf, count.into(), datatype, dest, sendtag, comm)?;
    // The outgoing data is copied now: the incoming message may overwrite the buffer.
    let copy = match a.data {
        SendData::User(b) => SendData::Owned(b.as_slice().to_vec()),
        owned => owned,
    };
    let (c, b) = recv_args(buf, count.into(), datatype, source, recvtag, comm)?;
    let sid = p2p::isend(&a.comm, copy, a.dest, a.tag, Mode::Standard)?;
    let rid = p2p::irecv_into(&c, b, source, recvtag)?;
    check::out(request, req_handle(p2p::pair(&c, rid, sid)?), "request")
});

// ---------------------------------------------------------------- completion

/// Waits for one request handle; sets it to MPI_REQUEST_NULL.
fn wait_one(req: *mut i32, status: *mut CStatus) -> MpiResult<()> {
    crate::runtime::job()?;
    // SAFETY: `req`: passed on from the entry point, valid as the MPI caller must pass it.
    let h = unsafe { check::inp(req, "request") }?;
    match super::persist::resolve(h)? {
        None => {
            put_status(status, &Status::empty());
            Ok(())
        }
        Some(id) => {
            let (st, on) = p2p::wait_on(id)?;
            let st = finished(id, st);
            let mut hh = h;
            super::persist::release(&mut hh);
            // SAFETY: `req`: passed on from the entry point, valid as the MPI caller must pass it.
            unsafe { check::out(req, hh, "request") }?;
            put_status(status, &st);
            raise_on_if(request_error(id, &st), on)
        }
    }
}

/// `r`, with its error (if any) raised on communicator `on` (crate::runtime::raise_on).
fn raise_on_if<T>(r: MpiResult<T>, on: Option<i32>) -> MpiResult<T> {
    if r.is_err() {
        crate::runtime::raise_on(on);
    }
    r
}

mpi_entry!(MPI_Wait, PMPI_Wait, (request: *mut i32, status: *mut CStatus), errcomm = MPI_COMM_WORLD, { wait_one(request, status) });

mpi_entry!(MPI_Test, PMPI_Test, (request: *mut i32, flag: *mut c_int, status: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let h = check::inp(request, "request")?;
    match super::persist::resolve(h)? {
        None => {
            put_status(status, &Status::empty());
            check::out(flag, 1, "flag")
        }
        Some(id) => match p2p::test_on(id)? {
            Some((st, on)) => {
                let st = finished(id, st);
                let mut hh = h;
                super::persist::release(&mut hh);
                check::out(request, hh, "request")?;
                put_status(status, &st);
                check::out(flag, 1, "flag")?;
                raise_on_if(request_error(id, &st), on)
            }
            None => check::out(flag, 0, "flag"),
        },
    }
});

fn ids(reqs: &[i32]) -> MpiResult<Vec<Option<usize>>> {
    reqs.iter().map(|&h| super::persist::resolve(h)).collect()
}

mpi_entry!(MPI_Waitall, PMPI_Waitall, (count: c_int, array_of_requests: *mut i32, array_of_statuses: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let n = check::count(count, "count")?;
    let reqs = check::array_mut(array_of_requests, n, "array_of_requests")?;
    let ids = ids(reqs)?;
    let mut any_err = false;
    for (i, id) in ids.iter().enumerate() {
        let st = match id {
            None => Status::empty(),
            Some(id) => {
                let (st, on) = p2p::wait_on(*id)?;
                let st = finished(*id, st);
                super::persist::release(&mut reqs[i]);
                if st.error != MPI_SUCCESS && !any_err {
                    crate::runtime::raise_on(on);
                }
                st
            }
        };
        any_err |= st.error != MPI_SUCCESS;
        put_status_at(array_of_statuses, i, &st, "MPI_Waitall");
    }
    if any_err {
        Err(err(MPI_ERR_IN_STATUS, "one or more requests failed; see the MPI_ERROR fields of the statuses"))
    } else {
        Ok(())
    }
});

mpi_entry!(MPI_Testall, PMPI_Testall, (count: c_int, array_of_requests: *mut i32, flag: *mut c_int, array_of_statuses: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let n = check::count(count, "count")?;
    let reqs = check::array_mut(array_of_requests, n, "array_of_requests")?;
    let ids = ids(reqs)?;
    p2p::progress();
    if !ids.iter().all(|id| id.is_none_or(p2p::is_complete)) {
        return check::out(flag, 0, "flag");
    }
    let mut any_err = false;
    for (i, id) in ids.iter().enumerate() {
        let st = match id {
            None => Status::empty(),
            Some(id) => {
                super::persist::release(&mut reqs[i]);
                let (st, on) = p2p::test_on(*id)?.unwrap_or((Status::empty(), None));
                let st = finished(*id, st);
                if st.error != MPI_SUCCESS && !any_err {
                    crate::runtime::raise_on(on);
                }
                st
            }
        };
        any_err |= st.error != MPI_SUCCESS;
        put_status_at(array_of_statuses, i, &st, "MPI_Testall");
    }
    check::out(flag, 1, "flag")?;
    if any_err {
        Err(err(MPI_ERR_IN_STATUS, "one or more requests failed; see the MPI_ERROR fields of the statuses"))
    } else {
        Ok(())
    }
});

/// Completes one of `reqs` if any is complete: Some(index).
fn any_complete(reqs: &mut [i32], status: *mut CStatus) -> MpiResult<Option<Option<usize>>> {
    let ids = ids(reqs)?;
    if ids.iter().all(|i| i.is_none()) {
        return Ok(Some(None));
    }
    p2p::progress();
    for (i, id) in ids.iter().enumerate() {
        if let Some(id) = id {
            if p2p::is_complete(*id) {
                let (st, on) = p2p::test_on(*id)?.unwrap_or((Status::empty(), None));
                let st = finished(*id, st);
                super::persist::release(&mut reqs[i]);
                put_status(status, &st);
                raise_on_if(status_error(&st), on)?;
                return Ok(Some(Some(i)));
            }
        }
    }
    Ok(None)
}

mpi_entry!(MPI_Waitany, PMPI_Waitany, (count: c_int, array_of_requests: *mut i32, index: *mut c_int, status: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let n = check::count(count, "count")?;
    let reqs = check::array_mut(array_of_requests, n, "array_of_requests")?;
    match wait_for(|| any_complete(reqs, status))? {
        Some(i) => check::out(index, i as c_int, "index"),
        None => {
            put_status(status, &Status::empty());
            check::out(index, MPI_UNDEFINED, "index")
        }
    }
});

mpi_entry!(MPI_Testany, PMPI_Testany, (count: c_int, array_of_requests: *mut i32, index: *mut c_int, flag: *mut c_int, status: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let n = check::count(count, "count")?;
    let reqs = check::array_mut(array_of_requests, n, "array_of_requests")?;
    match any_complete(reqs, status)? {
        Some(Some(i)) => {
            check::out(index, i as c_int, "index")?;
            check::out(flag, 1, "flag")
        }
        Some(None) => {
            put_status(status, &Status::empty());
            check::out(index, MPI_UNDEFINED, "index")?;
            check::out(flag, 1, "flag")
        }
        None => {
            check::out(index, MPI_UNDEFINED, "index")?;
            check::out(flag, 0, "flag")
        }
    }
});

/// Completes every complete request of `reqs`; returns how many (None: all null) and
/// whether one of them failed (its status's MPI_ERROR says how).
fn some_complete(
    func: &str,
    reqs: &mut [i32],
    indices: *mut c_int,
    statuses: *mut CStatus,
) -> MpiResult<Option<(usize, bool)>> {
    let ids = ids(reqs)?;
    if ids.iter().all(|i| i.is_none()) {
        return Ok(None);
    }
    p2p::progress();
    let mut k = 0;
    let mut any_err = false;
    for (i, id) in ids.iter().enumerate() {
        if let Some(id) = id {
            if p2p::is_complete(*id) {
                let (st, on) = p2p::test_on(*id)?.unwrap_or((Status::empty(), None));
                let st = finished(*id, st);
                super::persist::release(&mut reqs[i]);
                // SAFETY: indices has room for count entries (standard).
                unsafe { indices.add(k).write(i as c_int) };
                put_status_at(statuses, k, &st, func);
                if st.error != MPI_SUCCESS && !any_err {
                    crate::runtime::raise_on(on);
                }
                any_err |= st.error != MPI_SUCCESS;
                k += 1;
            }
        }
    }
    Ok(Some((k, any_err)))
}

/// MPI_Waitsome's and MPI_Testsome's outcount for what `some_complete` returned; with a
/// failed request, MPI_ERR_IN_STATUS after outcount (the indices and statuses name the
/// completed requests, failed or not, as the standard says).
fn some_outcount(outcount: *mut c_int, r: Option<(usize, bool)>) -> MpiResult<()> {
    // SAFETY: `outcount`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe {
        check::out(
            outcount,
            r.map_or(MPI_UNDEFINED, |(k, _)| k as c_int),
            "outcount",
        )
    }?;
    if matches!(r, Some((_, true))) {
        return Err(err(
            MPI_ERR_IN_STATUS,
            "one or more requests failed; see the MPI_ERROR fields of the statuses",
        ));
    }
    Ok(())
}

mpi_entry!(MPI_Waitsome, PMPI_Waitsome, (incount: c_int, array_of_requests: *mut i32, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let n = check::count(incount, "incount")?;
    let reqs = check::array_mut(array_of_requests, n, "array_of_requests")?;
    if n > 0 && array_of_indices.is_null() {
        return Err(err(MPI_ERR_ARG, "array_of_indices is NULL"));
    }
    let mut got = None;
    let mut failure = None;
    p2p::wait_until(|| match some_complete("MPI_Waitsome", reqs, array_of_indices, array_of_statuses) {
        Ok(Some((0, _))) => false,
        Ok(r) => {
            got = Some(r);
            true
        }
        Err(e) => {
            failure = Some(e);
            true
        }
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    some_outcount(outcount, got.flatten())
});

mpi_entry!(MPI_Testsome, PMPI_Testsome, (incount: c_int, array_of_requests: *mut i32, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let n = check::count(incount, "incount")?;
    let reqs = check::array_mut(array_of_requests, n, "array_of_requests")?;
    if n > 0 && array_of_indices.is_null() {
        return Err(err(MPI_ERR_ARG, "array_of_indices is NULL"));
    }
    let r = some_complete("MPI_Testsome", reqs, array_of_indices, array_of_statuses)?;
    some_outcount(outcount, r)
});

mpi_entry!(MPI_Request_free, PMPI_Request_free, (request: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let h = check::inp(request, "request")?;
    if super::persist::is_persistent(h) {
        if let Some(id) = super::persist::free(h)? {
            p2p::detach(id)?;
        }
        return check::out(request, MPI_REQUEST_NULL, "request");
    }
    match req_id(h)? {
        None => Err(err(MPI_ERR_REQUEST, "request is MPI_REQUEST_NULL")),
        Some(id) => {
            not_collective(id, "MPI_Request_free")?;
            if super::greq::release(id)?.is_some() {
                return check::out(request, MPI_REQUEST_NULL, "request");
            }
            p2p::detach(id)?;
            check::out(request, MPI_REQUEST_NULL, "request")
        }
    }
});

mpi_entry!(MPI_Request_get_status, PMPI_Request_get_status, (request: i32, flag: *mut c_int, status: *mut CStatus), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    match super::persist::resolve(request)? {
        None => {
            put_status(status, &Status::empty());
            check::out(flag, 1, "flag")
        }
        Some(id) => {
            if p2p::is_complete(id) {
                let mut st = p2p::peek(id).unwrap_or_else(Status::empty);
                super::greq::peek(id, &mut st)?;
                put_status(status, &st);
                check::out(flag, 1, "flag")
            } else {
                check::out(flag, 0, "flag")
            }
        }
    }
});

mpi_entry!(MPI_Cancel, PMPI_Cancel, (request: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let h = check::inp(request, "request")?;
    if super::persist::is_persistent(h) && !super::persist::is_p2p(h) {
        return Err(err(MPI_ERR_REQUEST, "MPI_Cancel is not allowed on a persistent collective request"));
    }
    match super::persist::resolve(h)? {
        None if super::persist::is_persistent(h) => Err(err(MPI_ERR_REQUEST, "the persistent request is inactive (MPI_Cancel needs an active one)")),
        None => Err(err(MPI_ERR_REQUEST, "request is MPI_REQUEST_NULL")),
        Some(id) => {
            not_collective(id, "MPI_Cancel")?;
            if super::greq::cancel(id)?.is_some() {
                return Ok(());
            }
            // Receives that have not matched are cancelled; anything else completes
            // normally (MPI allows a cancel to fail; MPI_Test_cancelled then says so).
            p2p::cancel(id)?;
            Ok(())
        }
    }
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

fn probe_args(
    source: c_int,
    tag: c_int,
    comm: i32,
) -> MpiResult<std::sync::Arc<crate::comm::Comm>> {
    let c = check::comm(comm)?;
    check::rank(
        source,
        c.peer_size(),
        "source",
        &[MPI_PROC_NULL, MPI_ANY_SOURCE],
    )?;
    check::recv_tag(tag)?;
    Ok(c)
}

mpi_entry!(MPI_Iprobe, PMPI_Iprobe, (source: c_int, tag: c_int, comm: i32, flag: *mut c_int, status: *mut CStatus), errcomm = comm, {
    let c = probe_args(source, tag, comm)?;
    match p2p::iprobe(&c, source, tag)? {
        Some(st) => {
            put_status(status, &st);
            check::out(flag, 1, "flag")
        }
        None => check::out(flag, 0, "flag"),
    }
});

/// Runs the progress engine until `poll` finds something (or fails), and returns it.
fn wait_for<T>(mut poll: impl FnMut() -> MpiResult<Option<T>>) -> MpiResult<T> {
    let mut out = None;
    p2p::wait_until(|| match poll() {
        Ok(None) => false,
        Ok(Some(v)) => {
            out = Some(Ok(v));
            true
        }
        Err(e) => {
            out = Some(Err(e));
            true
        }
    })?;
    out.expect("wait_until returns once the condition held")
}

/// [`wait_for`] of a blocking probe of (`source`, `tag`) on `c`: fails with
/// MPI_ERR_OTHER once no message can ever match it (`p2p::probe_orphan`).
fn probe_wait<T>(
    c: &crate::comm::Comm,
    source: c_int,
    tag: c_int,
    mut poll: impl FnMut() -> MpiResult<Option<T>>,
) -> MpiResult<T> {
    wait_for(|| match poll()? {
        Some(v) => Ok(Some(v)),
        None => match p2p::probe_orphan(c, source) {
            Orphan::No => Ok(None),
            why => match poll()? {
                Some(v) => Ok(Some(v)),
                None => {
                    let st = Status {
                        source,
                        tag,
                        error: MPI_ERR_OTHER,
                        orphan: why,
                        ..Status::empty()
                    };
                    status_error(&st).map(|()| None)
                }
            },
        },
    })
}

mpi_entry!(MPI_Probe, PMPI_Probe, (source: c_int, tag: c_int, comm: i32, status: *mut CStatus), errcomm = comm, {
    let c = probe_args(source, tag, comm)?;
    let st = probe_wait(&c, source, tag, || p2p::iprobe(&c, source, tag))?;
    put_status(status, &st);
    Ok(())
});

// ---------------------------------------------------------------- matched probe, receive
//
// A message handle is a request-space handle, like MPICH's: a matched message lives in
// the engine's request table until MPI_Mrecv / MPI_Imrecv receives it, and MPI_Imrecv's
// request keeps the message's id (so the request handle equals the message handle).

/// A matched message argument: None for MPI_MESSAGE_NO_PROC, the engine id otherwise.
/// Error classes as MPICH's: MPI_ERR_REQUEST for MPI_MESSAGE_NULL and for a value that
/// is no live message, MPI_ERR_ARG for the handle of a request that is not a message.
fn message_id(h: i32) -> MpiResult<Option<usize>> {
    if h == MPI_MESSAGE_NO_PROC {
        return Ok(None);
    }
    if h == MPI_MESSAGE_NULL {
        return Err(err(
            MPI_ERR_REQUEST,
            "message is MPI_MESSAGE_NULL (a message can be received only once, after MPI_Mprobe or a successful MPI_Improbe)",
        ));
    }
    match direct_index(h, OBJ_REQUEST) {
        Some(i) if p2p::is_message(i) => Ok(Some(i)),
        Some(i) if p2p::exists(i) => Err(err(
            MPI_ERR_ARG,
            format!(
                "message={h:#x} is a request handle, not a message from MPI_Mprobe/MPI_Improbe"
            ),
        )),
        _ => Err(err(
            MPI_ERR_REQUEST,
            format!("message={h:#x} is not a valid message (already received?)"),
        )),
    }
}

/// The communicator whose error handler handles an error of MPI_Mrecv / MPI_Imrecv:
/// the matched message's, or MPI_COMM_WORLD when there is none.
fn message_errcomm(message: *const i32) -> i32 {
    if message.is_null() {
        return MPI_COMM_WORLD;
    }
    // SAFETY: a non-NULL message argument points to one MPI_Message (MPI's contract).
    let h = unsafe { message.read() };
    direct_index(h, OBJ_REQUEST)
        .and_then(p2p::message_comm)
        .unwrap_or(MPI_COMM_WORLD)
}

/// MPI_Improbe's work: Some((status, message handle)) if a message matched.
fn improbe(source: c_int, tag: c_int, comm: i32) -> MpiResult<Option<(Status, i32)>> {
    let c = probe_args(source, tag, comm)?;
    if source == MPI_PROC_NULL {
        return Ok(Some((Status::proc_null(), MPI_MESSAGE_NO_PROC)));
    }
    Ok(p2p::improbe(&c, source, tag)?.map(|(st, id)| (st, req_handle(id))))
}

mpi_entry!(MPI_Improbe, PMPI_Improbe, (source: c_int, tag: c_int, comm: i32, flag: *mut c_int, message: *mut i32, status: *mut CStatus), errcomm = comm, {
    if message.is_null() {
        return Err(err(MPI_ERR_ARG, "message is NULL"));
    }
    if flag.is_null() {
        return Err(err(MPI_ERR_ARG, "flag is NULL"));
    }
    match improbe(source, tag, comm)? {
        Some((st, m)) => {
            check::out(message, m, "message")?;
            put_status(status, &st);
            check::out(flag, 1, "flag")
        }
        None => check::out(flag, 0, "flag"),
    }
});

mpi_entry!(MPI_Mprobe, PMPI_Mprobe, (source: c_int, tag: c_int, comm: i32, message: *mut i32, status: *mut CStatus), errcomm = comm, {
    if message.is_null() {
        return Err(err(MPI_ERR_ARG, "message is NULL"));
    }
    let (st, m) = match improbe(source, tag, comm)? {
        Some(f) => f,
        None => {
            let c = check::comm(comm)?;
            probe_wait(&c, source, tag, || improbe(source, tag, comm))?
        }
    };
    check::out(message, m, "message")?;
    put_status(status, &st);
    Ok(())
});

/// Starts the receive of a matched message; sets the handle to MPI_MESSAGE_NULL.
/// Returns the receive's request id (None for MPI_MESSAGE_NO_PROC).
fn start_mrecv(
    buf: *mut c_void,
    count: i64,
    dt: i32,
    message: *mut i32,
) -> MpiResult<Option<usize>> {
    crate::runtime::job()?;
    // SAFETY: `message`: passed on from the entry point, valid as the MPI caller must pass it.
    let h = unsafe { check::inp(message, "message") }?;
    let id = message_id(h)?;
    let n = check::count(count, "count")?;
    let t = check::message_datatype(dt, n, "datatype")?;
    let into = crate::ffi::typed::recv_into(buf, n, &t, "buf")?;
    let r = match id {
        None => None,
        Some(id) => Some(p2p::imrecv(id, into)?),
    };
    // SAFETY: `message`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(message, MPI_MESSAGE_NULL, "message") }?;
    Ok(r)
}

counted!(MPI_Mrecv, PMPI_Mrecv, MPI_Mrecv_c, PMPI_Mrecv_c, (buf: *mut c_void, count: Count, datatype: i32, message: *mut i32, status: *mut CStatus), errcomm = message_errcomm(message), {
    let st = match start_mrecv(buf, count.into(), datatype, message)? {
        None => Status::proc_null(),
        Some(id) => p2p::wait(id)?,
    };
    put_status(status, &st);
    status_error(&st)
});

counted!(MPI_Imrecv, PMPI_Imrecv, MPI_Imrecv_c, PMPI_Imrecv_c, (buf: *mut c_void, count: Count, datatype: i32, message: *mut i32, request: *mut i32), errcomm = message_errcomm(message), {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let id = match start_mrecv(buf, count.into(), datatype, message)? {
        Some(id) => id,
        None => p2p::completed(&check::comm(MPI_COMM_WORLD)?, Status::proc_null())?,
    };
    check::out(request, req_handle(id), "request")
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

mpi_entry!(MPI_Start, PMPI_Start, (request: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let h = check::inp(request, "request")?;
    super::persist::start(h)
});

mpi_entry!(MPI_Startall, PMPI_Startall, (count: c_int, array_of_requests: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let n = check::count(count, "count")?;
    let reqs = check::array(array_of_requests, n, "array_of_requests")?;
    for &h in reqs {
        super::persist::start(h)?;
    }
    Ok(())
});
