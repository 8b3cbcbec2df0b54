//! Persistent collective requests (MPI-4 `MPI_Allreduce_init` and friends): the request
//! keeps the call's arguments and, at each MPI_Start, runs the same plan as the blocking
//! and nonblocking calls (so every start sees the buffers' current contents). An
//! inactive persistent request behaves as MPI_REQUEST_NULL in Wait/Test but keeps its
//! handle; MPI_Request_free releases it when inactive.
use super::coll::Plan;
use crate::abi::*;
use crate::error::{err, MpiError, MpiResult};
use std::sync::Mutex;

/// Persistent requests use request handles from this index up.
pub const PERSIST_BASE: usize = 1 << 24;

/// Arguments captured by a persistent request (raw user pointers among them).
pub struct Captured<T>(pub T);
// SAFETY: the captured pointers are the MPI caller's buffers, which the standard keeps
// valid for the life of the persistent request; the library runs one MPI call at a time.
unsafe impl<T> Send for Captured<T> {}

struct Persist {
    name: &'static str,
    make: Box<dyn Fn() -> Plan + Send>,
    active: Option<usize>,
}

static TABLE: Mutex<Vec<Option<Persist>>> = Mutex::new(Vec::new());

fn index(h: i32) -> Option<usize> {
    direct_index(h, OBJ_REQUEST)
        .filter(|&i| i >= PERSIST_BASE)
        .map(|i| i - PERSIST_BASE)
}

/// Creates a persistent request; `make` plans one run (validated once now).
pub fn create(name: &'static str, make: Box<dyn Fn() -> Plan + Send>) -> MpiResult<i32> {
    // Argument errors are reported by the _init call itself.
    drop(make()?);
    let mut t = TABLE.lock().unwrap();
    let i = match t.iter().position(|x| x.is_none()) {
        Some(i) => i,
        None => {
            t.push(None);
            t.len() - 1
        }
    };
    t[i] = Some(Persist {
        name,
        make,
        active: None,
    });
    Ok(direct_handle(OBJ_REQUEST, PERSIST_BASE + i))
}

pub fn is_persistent(h: i32) -> bool {
    index(h).is_some()
}

fn bad(h: i32) -> MpiError {
    err(
        MPI_ERR_REQUEST,
        format!("request={h:#x} is not a valid persistent request"),
    )
}

/// MPI_Start: runs the request's collective as a nonblocking one.
pub fn start(h: i32) -> MpiResult<()> {
    let i = index(h).ok_or_else(|| {
        err(
            MPI_ERR_REQUEST,
            format!("request={h:#x} is not a persistent request (MPI_Start needs one)"),
        )
    })?;
    let (name, plan) = {
        let t = TABLE.lock().unwrap();
        let p = t.get(i).and_then(|p| p.as_ref()).ok_or_else(|| bad(h))?;
        if p.active.is_some() {
            return Err(err(MPI_ERR_REQUEST, format!("{}: the persistent request is already active (wait for it before starting it again)", p.name)));
        }
        (p.name, (p.make)())
    };
    let id = super::coll::start_plan_id(name, plan)?;
    TABLE.lock().unwrap()[i]
        .as_mut()
        .ok_or_else(|| bad(h))?
        .active = Some(id);
    Ok(())
}

/// The engine request a handle stands for: None for MPI_REQUEST_NULL and for an
/// inactive persistent request.
pub fn resolve(h: i32) -> MpiResult<Option<usize>> {
    match index(h) {
        Some(i) => {
            let t = TABLE.lock().unwrap();
            let p = t.get(i).and_then(|p| p.as_ref()).ok_or_else(|| bad(h))?;
            Ok(p.active)
        }
        None => super::p2p::req_id(h),
    }
}

/// After a request completed: a persistent one becomes inactive (its handle stays), any
/// other handle becomes MPI_REQUEST_NULL.
pub fn release(h: &mut i32) {
    match index(*h) {
        Some(i) => {
            if let Some(Some(p)) = TABLE.lock().unwrap().get_mut(i) {
                p.active = None;
            }
        }
        None => *h = MPI_REQUEST_NULL,
    }
}

/// MPI_Request_free of a persistent request: allowed when inactive.
pub fn free(h: i32) -> MpiResult<()> {
    let i = index(h).ok_or_else(|| bad(h))?;
    let mut t = TABLE.lock().unwrap();
    let p = t.get(i).and_then(|p| p.as_ref()).ok_or_else(|| bad(h))?;
    if p.active.is_some() {
        return Err(err(
            MPI_ERR_REQUEST,
            format!(
                "{}: an active persistent collective request cannot be freed (complete it first)",
                p.name
            ),
        ));
    }
    t[i] = None;
    Ok(())
}
