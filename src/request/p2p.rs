//! What the point-to-point calls share: the checks of their arguments, the blocking
//! send, the send and receive pair of MPI_Sendrecv, probes and matched-message handles.
//!
//! A message handle is a request-space handle, like MPICH's: a matched message lives in
//! the engine's request table until MPI_Mrecv / MPI_Imrecv receives it, and MPI_Imrecv's
//! request keeps the message's id (so the request handle equals the message handle).
#![deny(unsafe_code)]
use super::{req_handle, status_error, wait_for};
use crate::abi::*;
use crate::args;
use crate::comm::Comm;
use crate::datatype::TypeInfo;
use crate::error::{err, MpiResult};
use crate::p2p::{self, Mode, Orphan, RecvInto, ReqId, SendData, Status};
use std::sync::Arc;

/// The checked value arguments of a send or receive: the communicator, the count and
/// the datatype (the buffer is the caller's to check and wrap).
pub type Checked = (Arc<Comm>, usize, TypeInfo);

/// Checks a send's count, datatype, destination, tag and communicator.
#[inline(always)]
pub fn send_check(count: i64, dt: i32, dest: i32, tag: i32, comm: i32) -> MpiResult<Checked> {
    let c = args::comm(comm)?;
    let n = args::count(count, "count")?;
    let t = args::message_datatype(dt, n, "datatype")?;
    args::rank(dest, c.peer_size(), "dest", &[MPI_PROC_NULL])?;
    args::send_tag(tag)?;
    Ok((c, n, t))
}

/// Checks a receive's count, datatype, source, tag and communicator.
#[inline(always)]
pub fn recv_check(count: i64, dt: i32, source: i32, tag: i32, comm: i32) -> MpiResult<Checked> {
    let c = args::comm(comm)?;
    let n = args::count(count, "count")?;
    let t = args::message_datatype(dt, n, "datatype")?;
    source_and_tag(&c, source, tag)?;
    Ok((c, n, t))
}

/// A send whose arguments were checked.
pub struct SendArgs {
    pub comm: Arc<Comm>,
    pub data: SendData,
    pub dest: i32,
    pub tag: i32,
}

impl SendArgs {
    /// Starts the send in `mode` (MPI_Isend and its modes).
    #[inline(always)]
    pub fn start(self, mode: Mode) -> MpiResult<ReqId> {
        p2p::isend(&self.comm, self.data, self.dest, self.tag, mode)
    }

    /// A blocking send in `mode`: straight into the ring when it can
    /// (`p2p::send_now`), else started and waited for. MPI_Bsend's request is complete
    /// at once (the data was copied).
    #[inline(always)]
    pub fn blocking(self, mode: Mode) -> MpiResult<()> {
        if matches!(mode, Mode::Standard | Mode::Ready)
            && p2p::send_now(&self.comm, &self.data, self.dest, self.tag)?
        {
            return Ok(());
        }
        let buffered = mode == Mode::Buffered;
        let st = p2p::wait(self.start(mode)?)?;
        if buffered {
            return Ok(());
        }
        status_error(&st)
    }
}

/// Starts MPI_Sendrecv's receive (into `into` from `source` with `tag` on `c`) and
/// send; with `replace` (MPI_Sendrecv_replace) the send goes from a copy of its data,
/// started first, since the receive overwrites the buffer. Returns (receive, send).
pub fn sendrecv(
    s: SendArgs,
    c: &Arc<Comm>,
    into: RecvInto,
    source: i32,
    tag: i32,
    replace: bool,
) -> MpiResult<(ReqId, ReqId)> {
    if !replace {
        let rid = p2p::irecv_into(c, into, source, tag)?;
        return Ok((rid, s.start(Mode::Standard)?));
    }
    let data = s.data.into_owned();
    let sid = p2p::isend(&s.comm, data, s.dest, s.tag, Mode::Standard)?;
    Ok((p2p::irecv_into(c, into, source, tag)?, sid))
}

/// Waits for the receive and the send [`sendrecv`] started: the receive's status and
/// the call's error (the receive's, else the send's).
pub fn sendrecv_wait(rid: ReqId, sid: ReqId) -> MpiResult<(Status, MpiResult<()>)> {
    let st = p2p::wait(rid)?;
    let sent = p2p::wait(sid)?;
    Ok((st, status_error(&st).and_then(|()| status_error(&sent))))
}

/// Checks a probe's source, tag and communicator.
pub fn probe_args(source: i32, tag: i32, comm: i32) -> MpiResult<Arc<Comm>> {
    let c = args::comm(comm)?;
    source_and_tag(&c, source, tag)?;
    Ok(c)
}

/// Checks the source and tag a receive or probe on `c` matches.
#[inline(always)]
fn source_and_tag(c: &Comm, source: i32, tag: i32) -> MpiResult<()> {
    args::rank(
        source,
        c.peer_size(),
        "source",
        &[MPI_PROC_NULL, MPI_ANY_SOURCE],
    )?;
    args::recv_tag(tag)
}

/// MPI_Iprobe: the status of a matching message, if one is there.
pub fn iprobe(source: i32, tag: i32, comm: i32) -> MpiResult<Option<Status>> {
    let c = probe_args(source, tag, comm)?;
    p2p::iprobe(&c, source, tag)
}

/// MPI_Probe: waits for a matching message and returns its status.
pub fn probe(source: i32, tag: i32, comm: i32) -> MpiResult<Status> {
    let c = probe_args(source, tag, comm)?;
    probe_wait(&c, source, tag, || p2p::iprobe(&c, source, tag))
}

/// [`wait_for`] of a blocking probe of (`source`, `tag`) on `c`: fails with
/// MPI_ERR_OTHER once no message can ever match it (`p2p::probe_orphan`).
fn probe_wait<T>(
    c: &Comm,
    source: i32,
    tag: i32,
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

/// MPI_Improbe: Some((status, message handle)) if a message matched.
pub fn improbe(source: i32, tag: i32, comm: i32) -> MpiResult<Option<(Status, i32)>> {
    let c = probe_args(source, tag, comm)?;
    if source == MPI_PROC_NULL {
        return Ok(Some((Status::proc_null(), MPI_MESSAGE_NO_PROC)));
    }
    Ok(p2p::improbe(&c, source, tag)?.map(|(st, id)| (st, req_handle(id))))
}

/// MPI_Mprobe: waits for a matching message; its status and message handle.
pub fn mprobe(source: i32, tag: i32, comm: i32) -> MpiResult<(Status, i32)> {
    match improbe(source, tag, comm)? {
        Some(f) => Ok(f),
        None => {
            let c = args::comm(comm)?;
            probe_wait(&c, source, tag, || improbe(source, tag, comm))
        }
    }
}

/// A matched message argument: None for MPI_MESSAGE_NO_PROC, the engine id otherwise.
/// Error classes as MPICH's: MPI_ERR_REQUEST for MPI_MESSAGE_NULL and for a value that
/// is no live message, MPI_ERR_ARG for the handle of a request that is not a message.
pub fn message_id(h: i32) -> MpiResult<Option<ReqId>> {
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

/// The communicator whose error handler handles an error of MPI_Mrecv / MPI_Imrecv on
/// message handle `h`: the matched message's, or MPI_COMM_WORLD.
pub fn message_errcomm(h: i32) -> i32 {
    direct_index(h, OBJ_REQUEST)
        .and_then(p2p::message_comm)
        .unwrap_or(MPI_COMM_WORLD)
}

/// Starts the receive of matched message `id` (None: MPI_MESSAGE_NO_PROC, nothing to
/// receive) into `into`.
pub fn mrecv_start(id: Option<ReqId>, into: RecvInto) -> MpiResult<Option<ReqId>> {
    id.map(|id| p2p::imrecv(id, into)).transpose()
}

/// The request MPI_Imrecv returns for message MPI_MESSAGE_NO_PROC: complete, with a
/// receive from MPI_PROC_NULL's status.
pub fn proc_null_request() -> MpiResult<ReqId> {
    p2p::completed(&args::comm(MPI_COMM_WORLD)?, Status::proc_null())
}
