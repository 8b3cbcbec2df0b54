//! The completion calls on request handles: MPI_Wait, MPI_Test and their -all, -any
//! and -some forms, MPI_Request_get_status, MPI_Request_free and MPI_Cancel.
//!
//! A handle that is MPI_REQUEST_NULL or an inactive persistent request completes at
//! once with the empty status. A completed request's handle becomes MPI_REQUEST_NULL,
//! a persistent one's stays (inactive). A generalized request's status is what its
//! query callback says (`greq::finish`). The calls that return one status return the
//! request's error; those that return several set each status's MPI_ERROR and return
//! MPI_ERR_IN_STATUS if one failed. An error goes to the handler of the communicator
//! that started the failed request (the first of several).
#![deny(unsafe_code)]
use super::{greq, persist, status_error, wait_for};
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::p2p::{self, ReqId, Status};

/// The error a completion call returns once it wrote its outputs: [`Outcome::result`]
/// hands it to the handler of the communicator it belongs to.
#[must_use]
pub struct Outcome(MpiResult<()>, Option<i32>);

impl Outcome {
    /// The call's result (an error is raised on its communicator, crate::runtime::raise_on).
    pub fn result(self) -> MpiResult<()> {
        raise_on_if(self.0, self.1)
    }

    fn ok() -> Outcome {
        Outcome(Ok(()), None)
    }

    /// MPI_ERR_IN_STATUS if one of several requests failed.
    fn in_status(any_err: bool) -> Outcome {
        if !any_err {
            return Outcome::ok();
        }
        Outcome(
            Err(err(
                MPI_ERR_IN_STATUS,
                "one or more requests failed; see the MPI_ERROR fields of the statuses",
            )),
            None,
        )
    }
}

/// `r`, with its error (if any) raised on communicator `on` (crate::runtime::raise_on).
fn raise_on_if<T>(r: MpiResult<T>, on: Option<i32>) -> MpiResult<T> {
    if r.is_err() {
        crate::runtime::raise_on(on);
    }
    r
}

/// The error of a completed request: a nonblocking collective's own message, or the
/// status's error.
fn request_error(id: ReqId, st: &Status) -> MpiResult<()> {
    if let Some(e) = crate::coll::nb::take_error(id) {
        return Err(e);
    }
    status_error(st)
}

/// Finishes request `id` of handle `h`, which the engine has just completed with
/// `done` (status, communicator): the status (a generalized request's from its query
/// callback), the handle released.
fn finish(h: &mut i32, id: ReqId, done: (Status, Option<i32>)) -> (Status, Option<i32>) {
    let mut st = done.0;
    greq::finish(id, &mut st);
    persist::release(h);
    (st, done.1)
}

/// [`finish`] for one of several requests: the first failure among them (`any_err`
/// not yet set) is raised on its communicator.
fn finish_of_many(
    h: &mut i32,
    id: ReqId,
    done: (Status, Option<i32>),
    any_err: &mut bool,
) -> Status {
    let (st, on) = finish(h, id, done);
    if st.error != MPI_SUCCESS && !*any_err {
        crate::runtime::raise_on(on);
    }
    *any_err |= st.error != MPI_SUCCESS;
    st
}

/// Rejects operations the standard forbids on a nonblocking collective's request.
fn not_collective(id: ReqId, what: &str) -> MpiResult<()> {
    if p2p::is_coll(id) {
        return Err(err(MPI_ERR_REQUEST, format!("{what} is not allowed on the request of a nonblocking collective (wait for it or test it instead)")));
    }
    Ok(())
}

fn ids(reqs: &[i32]) -> MpiResult<Vec<Option<ReqId>>> {
    reqs.iter().map(|&h| persist::resolve(h)).collect()
}

/// A complete request's engine status (None: it was complete but is gone).
fn take(id: ReqId) -> MpiResult<(Status, Option<i32>)> {
    Ok(p2p::test_on(id)?.unwrap_or((Status::empty(), None)))
}

/// MPI_Wait: waits for the request of handle `h`; returns its status and error.
pub fn wait(h: &mut i32) -> MpiResult<(Status, Outcome)> {
    match persist::resolve(*h)? {
        None => Ok((Status::empty(), Outcome::ok())),
        Some(id) => {
            let (st, on) = finish(h, id, p2p::wait_on(id)?);
            let r = request_error(id, &st);
            Ok((st, Outcome(r, on)))
        }
    }
}

/// MPI_Test: as [`wait`] if the request is complete, None if not.
pub fn test(h: &mut i32) -> MpiResult<Option<(Status, Outcome)>> {
    match persist::resolve(*h)? {
        None => Ok(Some((Status::empty(), Outcome::ok()))),
        Some(id) => Ok(match p2p::test_on(id)? {
            Some(done) => {
                let (st, on) = finish(h, id, done);
                let r = request_error(id, &st);
                Some((st, Outcome(r, on)))
            }
            None => None,
        }),
    }
}

/// MPI_Waitall: waits for every request of `reqs` in turn; `put(i, status)` for each.
pub fn waitall(reqs: &mut [i32], mut put: impl FnMut(usize, &Status)) -> MpiResult<Outcome> {
    let ids = ids(reqs)?;
    let mut any_err = false;
    for (i, id) in ids.iter().enumerate() {
        let st = match *id {
            None => Status::empty(),
            Some(id) => finish_of_many(&mut reqs[i], id, p2p::wait_on(id)?, &mut any_err),
        };
        put(i, &st);
    }
    Ok(Outcome::in_status(any_err))
}

/// MPI_Testall: as [`waitall`] if every request of `reqs` is complete, None (and
/// nothing completed) if not.
pub fn testall(
    reqs: &mut [i32],
    mut put: impl FnMut(usize, &Status),
) -> MpiResult<Option<Outcome>> {
    let ids = ids(reqs)?;
    p2p::progress();
    if !ids.iter().all(|id| id.is_none_or(p2p::is_complete)) {
        return Ok(None);
    }
    let mut any_err = false;
    for (i, id) in ids.iter().enumerate() {
        let st = match *id {
            None => Status::empty(),
            Some(id) => finish_of_many(&mut reqs[i], id, take(id)?, &mut any_err),
        };
        put(i, &st);
    }
    Ok(Some(Outcome::in_status(any_err)))
}

/// Completes one of `reqs` if one is complete: Some(Some(index)), its status to `put`;
/// Some(None) if none is active; None if none is complete yet.
fn any(reqs: &mut [i32], put: &mut impl FnMut(&Status)) -> MpiResult<Option<Option<usize>>> {
    let ids = ids(reqs)?;
    if ids.iter().all(|i| i.is_none()) {
        return Ok(Some(None));
    }
    p2p::progress();
    for (i, id) in ids.iter().enumerate() {
        if let Some(id) = *id {
            if p2p::is_complete(id) {
                let (st, on) = finish(&mut reqs[i], id, take(id)?);
                put(&st);
                raise_on_if(status_error(&st), on)?;
                return Ok(Some(Some(i)));
            }
        }
    }
    Ok(None)
}

/// MPI_Waitany: the index of the request it completed (its status to `put`), None
/// (and the empty status) if none of `reqs` is active.
pub fn waitany(reqs: &mut [i32], mut put: impl FnMut(&Status)) -> MpiResult<Option<usize>> {
    let r = wait_for(|| any(reqs, &mut put))?;
    if r.is_none() {
        put(&Status::empty());
    }
    Ok(r)
}

/// MPI_Testany: as [`waitany`] in Some if a request was complete or none is active,
/// None if none is complete yet.
pub fn testany(reqs: &mut [i32], mut put: impl FnMut(&Status)) -> MpiResult<Option<Option<usize>>> {
    let r = any(reqs, &mut put)?;
    if r == Some(None) {
        put(&Status::empty());
    }
    Ok(r)
}

/// Completes every complete request of `reqs`: `indices[k]` is the index of the `k`th,
/// `put(k, status)` its status. Returns how many (None: none active) and whether one
/// failed.
fn some(
    reqs: &mut [i32],
    indices: &mut [i32],
    put: &mut impl FnMut(usize, &Status),
) -> MpiResult<Option<(usize, bool)>> {
    let ids = ids(reqs)?;
    if ids.iter().all(|i| i.is_none()) {
        return Ok(None);
    }
    p2p::progress();
    let mut k = 0;
    let mut any_err = false;
    for (i, id) in ids.iter().enumerate() {
        if let Some(id) = *id {
            if p2p::is_complete(id) {
                let st = finish_of_many(&mut reqs[i], id, take(id)?, &mut any_err);
                indices[k] = i as i32;
                put(k, &st);
                k += 1;
            }
        }
    }
    Ok(Some((k, any_err)))
}

/// The outcount of MPI_Waitsome and MPI_Testsome (None: MPI_UNDEFINED) and their
/// error, MPI_ERR_IN_STATUS if a completed request failed (the indices and statuses
/// name the completed requests, failed or not, as the standard says).
fn some_outcome(r: Option<(usize, bool)>) -> (Option<usize>, Outcome) {
    match r {
        None => (None, Outcome::ok()),
        Some((k, failed)) => (Some(k), Outcome::in_status(failed)),
    }
}

/// MPI_Waitsome: waits until one of `reqs` is complete, then completes all that are
/// (see [`some`]).
pub fn waitsome(
    reqs: &mut [i32],
    indices: &mut [i32],
    mut put: impl FnMut(usize, &Status),
) -> MpiResult<(Option<usize>, Outcome)> {
    let r = wait_for(|| match some(reqs, indices, &mut put)? {
        Some((0, _)) => Ok(None),
        r => Ok(Some(r)),
    })?;
    Ok(some_outcome(r))
}

/// MPI_Testsome: completes the complete requests of `reqs` (see [`some`]).
pub fn testsome(
    reqs: &mut [i32],
    indices: &mut [i32],
    mut put: impl FnMut(usize, &Status),
) -> MpiResult<(Option<usize>, Outcome)> {
    Ok(some_outcome(some(reqs, indices, &mut put)?))
}

/// MPI_Request_get_status: the status if the request is complete (it stays), None if
/// not.
pub fn get_status(h: i32) -> MpiResult<Option<Status>> {
    match persist::resolve(h)? {
        None => Ok(Some(Status::empty())),
        Some(id) if p2p::is_complete(id) => {
            let mut st = p2p::peek(id).unwrap_or_else(Status::empty);
            greq::peek(id, &mut st)?;
            Ok(Some(st))
        }
        Some(_) => Ok(None),
    }
}

/// MPI_Request_free: lets the request of handle `h` complete on its own (the caller
/// sets the handle to MPI_REQUEST_NULL).
pub fn free(h: i32) -> MpiResult<()> {
    if persist::is_persistent(h) {
        if let Some(id) = persist::free(h)? {
            p2p::detach(id)?;
        }
        return Ok(());
    }
    let id =
        super::req_id(h)?.ok_or_else(|| err(MPI_ERR_REQUEST, "request is MPI_REQUEST_NULL"))?;
    not_collective(id, "MPI_Request_free")?;
    if greq::release(id)?.is_none() {
        p2p::detach(id)?;
    }
    Ok(())
}

/// MPI_Cancel of the request of handle `h`: a receive that has not matched is
/// cancelled; anything else completes normally (MPI allows a cancel to fail;
/// MPI_Test_cancelled then says so). A generalized request's cancel callback runs.
pub fn cancel(h: i32) -> MpiResult<()> {
    let persistent = persist::is_persistent(h);
    if persistent && !persist::is_p2p(h) {
        return Err(err(
            MPI_ERR_REQUEST,
            "MPI_Cancel is not allowed on a persistent collective request",
        ));
    }
    match persist::resolve(h)? {
        None if persistent => Err(err(
            MPI_ERR_REQUEST,
            "the persistent request is inactive (MPI_Cancel needs an active one)",
        )),
        None => Err(err(MPI_ERR_REQUEST, "request is MPI_REQUEST_NULL")),
        Some(id) => {
            not_collective(id, "MPI_Cancel")?;
            if greq::cancel(id)?.is_none() {
                p2p::cancel(id)?;
            }
            Ok(())
        }
    }
}
