//! Nonblocking collectives: the collective's future (the same `async fn` the blocking
//! call runs) is stored with its request and polled by the progress engine, which every
//! MPI call that waits or tests runs (a hook of crate::progress). Collectives on one communicator take their turns
//! in issue order (see `Turn`), so several may be outstanding and the user may wait for
//! them in any order.
#![deny(unsafe_code)]
use crate::error::{MpiError, MpiResult};
use crate::p2p::ReqId;
use std::cell::Cell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::task::{Context, Waker};

pub type CollFuture = Pin<Box<dyn Future<Output = MpiResult<()>> + Send>>;

struct Pending {
    id: ReqId,
    fut: Option<CollFuture>,
}

static PENDING: Mutex<Vec<Pending>> = Mutex::new(Vec::new());
/// How many entries `PENDING` has (kept with it, under its lock): `poll_all` returns at
/// once when none, without taking the lock (every look of every wait calls it).
static PENDING_COUNT: AtomicUsize = AtomicUsize::new(0);
/// Errors of completed nonblocking collectives, until their request is waited for.
static ERRORS: Mutex<Option<HashMap<ReqId, MpiError>>> = Mutex::new(None);

thread_local! {
    static POLLING: Cell<bool> = const { Cell::new(false) };
}

/// Starts a nonblocking collective: registers its request and polls it once.
pub fn start(comm: &std::sync::Arc<crate::comm::Comm>, fut: CollFuture) -> MpiResult<ReqId> {
    let id = crate::p2p::coll_request(comm)?;
    {
        let mut t = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        t.push(Pending { id, fut: Some(fut) });
        PENDING_COUNT.store(t.len(), Ordering::Release);
    }
    crate::progress::note_started(1);
    poll_all();
    Ok(id)
}

/// Polls every outstanding nonblocking collective once, in issue order. Futures are
/// taken out of the table while polled (a user operation they call may call MPI).
pub fn poll_all() {
    if PENDING_COUNT.load(Ordering::Acquire) == 0 || POLLING.with(|p| p.replace(true)) {
        return;
    }
    let taken: Vec<(ReqId, CollFuture)> = {
        let mut t = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        t.iter_mut()
            .filter_map(|p| p.fut.take().map(|f| (p.id, f)))
            .collect()
    };
    let mut cx = Context::from_waker(Waker::noop());
    let mut done = Vec::new();
    let mut back = Vec::new();
    for (id, mut f) in taken {
        // (an error too if it can never complete: a member it waits for entered
        // MPI_Finalize)
        match crate::progress::poll_once(f.as_mut(), &mut cx) {
            Ok(r) => done.push((id, r)),
            Err(_) => back.push((id, f)),
        }
    }
    {
        let mut t = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        for (id, f) in back {
            if let Some(p) = t.iter_mut().find(|p| p.id == id) {
                p.fut = Some(f);
            }
        }
        t.retain(|p| !done.iter().any(|(id, _)| *id == p.id));
        PENDING_COUNT.store(t.len(), Ordering::Release);
    }
    crate::progress::note_done(done.len());
    for (id, r) in done {
        if let Err(e) = &r {
            ERRORS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(HashMap::new)
                .insert(id, e.clone());
        }
        crate::p2p::complete_coll(id, r.err().map(|e| e.class));
    }
    POLLING.with(|p| p.set(false));
}

/// The error a completed nonblocking collective ended with (taken once).
pub fn take_error(id: ReqId) -> Option<MpiError> {
    ERRORS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .and_then(|m| m.remove(&id))
}
