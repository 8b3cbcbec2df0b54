//! Requests: what MPI_Wait, MPI_Test and their family complete, whatever started them
//! (point-to-point, nonblocking and persistent collectives, generalized requests).
//!
//! - this file: request handles and engine ids (`req_handle`, `req_id`), the error a
//!   completed operation's status says, the one table of the requests' own state;
//! - `complete.rs`: the completion calls (which request completes, its status, its
//!   error, the MPI_ERR_IN_STATUS rules), MPI_Request_get_status, MPI_Request_free and
//!   MPI_Cancel;
//! - `persist.rs`: persistent requests (their `_init` calls, MPI_Start);
//! - `greq.rs`: generalized requests and their callbacks;
//! - `p2p.rs`: what the point-to-point calls share (their arguments' checks, blocking
//!   sends, probes, matched-message handles).
//!
//! The engine's own request table is p2p's; this layer sits above p2p and coll and
//! works on handle slices and [`Status`] values, the C boundary converts them to and
//! from C's. Unsafe code: the `Send`/`Sync` of a persistent request's captured
//! arguments (`persist::Captured`), which hold the caller's buffer addresses.
pub mod complete;
pub mod greq;
pub mod p2p;
pub mod persist;

pub use complete::*;

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::p2p::{Orphan, ReqId, Status};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Mutex, MutexGuard};

/// The state of the requests this layer keeps: the persistent requests (by index from
/// `persist::PERSIST_BASE`) and the callbacks of the generalized ones (by engine id).
struct Table {
    persist: Vec<Option<persist::Persist>>,
    greqs: BTreeMap<ReqId, greq::Greq>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    persist: Vec::new(),
    greqs: BTreeMap::new(),
});

/// How many entries `Table::greqs` has, read without the lock: completions of other
/// requests skip the table while there are none (changed with the table held).
static GREQS_LIVE: AtomicUsize = AtomicUsize::new(0);

/// The one accessor of [`Table`]. No callback of the program, no starter of a
/// persistent request and no drop of one runs while it is held (they may call MPI).
fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The handle of engine request `id`.
pub fn req_handle(id: ReqId) -> i32 {
    direct_handle(OBJ_REQUEST, id)
}

/// The engine request a (non-persistent) request handle stands for: None for
/// MPI_REQUEST_NULL.
pub fn req_id(h: i32) -> MpiResult<Option<ReqId>> {
    if h == MPI_REQUEST_NULL {
        return Ok(None);
    }
    match direct_index(h, OBJ_REQUEST) {
        Some(i) if crate::p2p::exists(i) => Ok(Some(i)),
        Some(i) if crate::p2p::is_message(i) => Err(err(
            MPI_ERR_REQUEST,
            format!("request={h:#x} is a message handle from MPI_Mprobe/MPI_Improbe, not a request (receive it with MPI_Mrecv or MPI_Imrecv)"),
        )),
        _ => Err(err(
            MPI_ERR_REQUEST,
            format!("request={h:#x} is not a valid request (already completed and freed?)"),
        )),
    }
}

/// The error a completed operation's status says, with a message that says why.
pub fn status_error(st: &Status) -> MpiResult<()> {
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

/// The status as a call that returns several writes it: the MPI_ERROR of a receive or
/// send that no peer can ever complete is a code whose string says why (`func` names
/// the call); other errors keep their class, which programs compare with
/// (MPI_ERR_TRUNCATE).
pub fn in_array(st: &Status, func: &str) -> Status {
    let mut st = *st;
    if st.orphan != Orphan::No {
        if let Err(e) = status_error(&st) {
            st.error = crate::runtime::error_code(func, &e).0;
        }
    }
    st
}

/// Runs the progress engine until `poll` finds something (or fails), and returns it.
pub fn wait_for<T>(mut poll: impl FnMut() -> MpiResult<Option<T>>) -> MpiResult<T> {
    let mut out = None;
    crate::p2p::wait_until(|| match poll() {
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
