//! A collective written once as a *plan*: its arguments checked and staged at the call
//! (so argument errors come back from the call itself), the rest an owned `async` body
//! that the blocking call runs in place, the nonblocking call turns into a request and a
//! persistent request replays at each start.
use crate::abi::*;
use crate::coll::agree::{kind_of, Desc};
use crate::coll::nb::CollFuture;
use crate::comm::Comm;
use crate::error::{err, MpiError, MpiResult};
use std::os::raw::c_int;
use std::sync::Arc;

/// What a plan hands to the runner: the communicator and the collective's body.
pub type Plan = MpiResult<(Arc<Comm>, CollFuture)>;

/// Adds an argument-agreement descriptor to a plan: published with its first step.
pub fn with_desc(p: Plan, desc: Desc) -> Plan {
    let (c, f) = p?;
    let cc = c.clone();
    Ok((
        c,
        Box::pin(async move {
            cc.coll.set_desc(desc);
            f.await
        }),
    ))
}

/// Adds a data-movement collective's descriptor and flows (coll/agree.rs) to a plan.
pub fn with_flows(p: Plan, desc: Desc, flows: Option<Box<crate::coll::agree::Flows>>) -> Plan {
    let (c, f) = p?;
    let cc = c.clone();
    Ok((
        c,
        Box::pin(async move {
            cc.coll.set_desc_flows(desc, flows);
            f.await
        }),
    ))
}

/// The descriptor of a data-movement collective: kind and (for rooted ones) root.
pub fn move_desc(kind: &str, root: Option<c_int>) -> Desc {
    Desc {
        root: root.map_or(crate::coll::agree::ANY, |r| r as u32 as u64),
        ..Desc::kind(kind_of(kind))
    }
}

/// Runs a plan in place (the blocking call).
pub fn run_plan(p: Plan) -> MpiResult<()> {
    let (c, f) = p?;
    crate::coll::run(&c, f)
}

/// Starts a plan as a nonblocking collective; returns the engine request id.
pub fn start_plan_id(name: &'static str, p: Plan) -> MpiResult<usize> {
    let (c, f) = p?;
    let t = crate::coll::ticket(&c);
    let cc = c.clone();
    let fut: CollFuture = Box::pin(async move {
        let _turn = crate::coll::turn(&cc, t).await;
        f.await
            .map_err(|e| MpiError::new(e.class, format!("{name}: {}", e.msg)))
    });
    crate::coll::nb::start(&c, fut)
}

/// An intracommunicator argument (the intercommunicator forms dispatch earlier).
pub fn intra(comm: i32) -> MpiResult<Arc<Comm>> {
    let c = crate::args::comm(comm)?;
    if c.is_inter() {
        return Err(intra_only());
    }
    Ok(c)
}

/// The error of an intercommunicator passed to an operation defined on
/// intracommunicators only.
pub fn intra_only() -> MpiError {
    err(
        MPI_ERR_COMM,
        "this operation is defined on intracommunicators only",
    )
}
