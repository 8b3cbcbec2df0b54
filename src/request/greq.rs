//! Generalized requests (MPI-2.2 section 12.2): MPI_Grequest_start and
//! MPI_Grequest_complete. The engine holds a request the program completes itself; this
//! module keeps its callbacks and runs them where the standard says:
//! - query_fn by the Wait/Test call that completes the request (its status is what the
//!   call returns, its return value the request's error) and by MPI_Request_get_status;
//! - free_fn right after query_fn in that call, or, for a request released with
//!   MPI_Request_free, by whichever of MPI_Request_free and MPI_Grequest_complete comes
//!   last;
//! - cancel_fn by MPI_Cancel, told whether the request is complete already.
#![deny(unsafe_code)]
use super::{req_handle, req_id, table, GREQS_LIVE as LIVE};
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::p2p::{self, ReqId, Status};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The program's callbacks of a generalized request, as the binding that started it
/// calls them. Each returns the callback's return code.
pub trait Callbacks: std::any::Any + Send + Sync {
    /// query_fn: sets `st` to the status it returns (the error: its return code if not
    /// MPI_SUCCESS, the status's MPI_ERROR otherwise); MPI_SUCCESS without query_fn.
    fn query(&self, st: &mut Status) -> i32;
    /// free_fn (MPI_SUCCESS without one).
    fn free(&self) -> i32;
    /// cancel_fn, told whether the request is complete (`complete` says, asked only if
    /// there is a cancel_fn); None without one.
    fn cancel(&self, complete: &dyn Fn() -> bool) -> Option<i32>;
}

/// A generalized request's entry in the request table.
pub(super) struct Greq(Arc<dyn Callbacks>);

/// The callbacks of generalized request `id` (None: it is not one).
pub fn callbacks(id: ReqId) -> Option<Arc<dyn Callbacks>> {
    if LIVE.load(Ordering::Acquire) == 0 {
        return None;
    }
    table().greqs.get(&id).map(|g| g.0.clone())
}

fn forget(id: ReqId) {
    let mut t = table();
    if t.greqs.remove(&id).is_some() {
        LIVE.fetch_sub(1, Ordering::AcqRel);
    }
}

/// MPI_Grequest_start: a request the program completes, with its callbacks.
pub fn start(cb: Arc<dyn Callbacks>) -> MpiResult<ReqId> {
    let id = p2p::user_request(&crate::args::comm(MPI_COMM_SELF)?)?;
    let mut t = table();
    t.greqs.insert(id, Greq(cb));
    LIVE.fetch_add(1, Ordering::AcqRel);
    Ok(id)
}

/// For a request that a Wait/Test call has just completed and released: if it was a
/// generalized request, runs query_fn (filling `st`) and then free_fn. An error of
/// either becomes the status's error.
pub fn finish(id: ReqId, st: &mut Status) {
    let Some(g) = callbacks(id) else { return };
    forget(id);
    let rc = g.query(st);
    let frc = g.free();
    if rc == MPI_SUCCESS && frc != MPI_SUCCESS {
        st.error = frc;
    }
}

/// For MPI_Request_get_status on a complete request: the status query_fn gives.
pub fn peek(id: ReqId, st: &mut Status) -> MpiResult<()> {
    match callbacks(id) {
        Some(g) => callback_result(g.query(st), "query", id),
        None => Ok(()),
    }
}

/// For MPI_Request_free: Some(()) if `id` is a generalized request (then handled here).
pub fn release(id: ReqId) -> MpiResult<Option<()>> {
    let Some(g) = callbacks(id) else {
        return Ok(None);
    };
    if p2p::is_complete(id) {
        forget(id);
        p2p::detach(id)?;
        callback_result(g.free(), "free", id)?;
    } else {
        // free_fn runs in MPI_Grequest_complete.
        p2p::detach(id)?;
    }
    Ok(Some(()))
}

/// For MPI_Cancel: Some(()) if `id` is a generalized request (cancel_fn has run).
pub fn cancel(id: ReqId) -> MpiResult<Option<()>> {
    let Some(g) = callbacks(id) else {
        return Ok(None);
    };
    if let Some(rc) = g.cancel(&|| p2p::is_complete(id)) {
        callback_result(rc, "cancel", id)?;
    }
    Ok(Some(()))
}

/// MPI_Grequest_complete of request handle `h`; free_fn runs if the program has freed
/// the request already.
pub fn complete(h: i32) -> MpiResult<()> {
    let id = match req_id(h)? {
        Some(id) if callbacks(id).is_some() => id,
        _ => {
            return Err(err(
                MPI_ERR_REQUEST,
                format!("request={h:#x} is not a generalized request (MPI_Grequest_start)"),
            ))
        }
    };
    if p2p::is_complete(id) {
        return Err(err(
            MPI_ERR_REQUEST,
            format!("generalized request {h:#x} is complete already (MPI_Grequest_complete called twice)"),
        ));
    }
    if p2p::complete_user(id)? {
        let g = callbacks(id);
        forget(id);
        if let Some(g) = g {
            callback_result(g.free(), "free", id)?;
        }
    }
    Ok(())
}

fn callback_result(rc: i32, which: &str, id: ReqId) -> MpiResult<()> {
    if rc == MPI_SUCCESS {
        Ok(())
    } else {
        Err(crate::error::from_callback(
            rc,
            format!(
                "the {which} callback of generalized request {:#x} returned {rc}",
                req_handle(id)
            ),
        ))
    }
}
