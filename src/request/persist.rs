//! Persistent requests: point-to-point (`MPI_Send_init`, `MPI_Recv_init` and the other
//! send modes) and collective (MPI-4 `MPI_Allreduce_init` and friends). The request keeps
//! the call's arguments and, at each MPI_Start, starts the same operation as the
//! nonblocking call (`MPI_Isend`, `MPI_Iallreduce`, ...), so every start sees the
//! buffers' current contents. An inactive persistent request behaves as
//! MPI_REQUEST_NULL in Wait/Test but keeps its handle; MPI_Request_free releases it when
//! inactive (and, for point-to-point, also when active: it is released once the
//! operation completes, as for any request).
//!
//! Unsafe code: the `Send` and `Sync` of [`Captured`] (see there).
use super::table;
use crate::abi::*;
use crate::error::{err, MpiError, MpiResult};
use std::sync::Arc;

/// Persistent requests use request handles from this index up.
pub const PERSIST_BASE: usize = 1 << 24;

/// Arguments captured by a persistent request (raw user pointers among them).
pub struct Captured<T>(pub T);
// SAFETY: the captured pointers are the MPI caller's buffers, which the standard keeps
// valid for the life of the persistent request; the library runs one MPI call at a time.
unsafe impl<T> Send for Captured<T> {}
// SAFETY: as for Send: the pointers are only handed back (`get`), never dereferenced
// here, and MPI calls run one at a time.
unsafe impl<T> Sync for Captured<T> {}

impl<T: Copy> Captured<T> {
    pub fn get(&self) -> T {
        self.0
    }
}

/// A datatype a persistent request keeps for its whole life: the user may free the
/// handle while the request exists (MPI-3.1 section 4.1.9), so a derived type is
/// duplicated under a handle of the request's own, freed with the request.
pub struct TypeHold {
    handle: i32,
    owned: bool,
}

impl TypeHold {
    /// The handle (a method, so that a closure using it captures the whole hold, not
    /// just the copied field).
    pub fn handle(&self) -> i32 {
        self.handle
    }

    pub fn new(h: i32) -> MpiResult<TypeHold> {
        // (MPI_DATATYPE_NULL gets this far only with count 0: see check::message_datatype)
        if crate::datatype::predefined::lookup(h).is_some() || h == MPI_DATATYPE_NULL {
            return Ok(TypeHold {
                handle: h,
                owned: false,
            });
        }
        Ok(TypeHold {
            handle: crate::datatype::derived::dup_internal(h)?,
            owned: true,
        })
    }
}

impl Drop for TypeHold {
    fn drop(&mut self) {
        if self.owned {
            let _ = crate::datatype::derived::free(self.handle);
        }
    }
}

/// Starts the operation once; returns the engine request.
pub type Starter = Arc<dyn Fn() -> MpiResult<usize> + Send + Sync>;

pub(super) struct Persist {
    name: &'static str,
    start: Starter,
    active: Option<usize>,
    /// A point-to-point request (may be freed while active, and cancelled).
    p2p: bool,
}

fn index(h: i32) -> Option<usize> {
    direct_index(h, OBJ_REQUEST)
        .filter(|&i| i >= PERSIST_BASE)
        .map(|i| i - PERSIST_BASE)
}

/// The context of a persistent collective request: a duplicate of its communicator
/// made by the _init call (which MPI-4.0 makes non-local), freed with the request.
/// Persistent collectives are matched by the order of their _init calls; MPI-4.0 (6.13)
/// lets them be started in any order, which may differ from process to process. Each
/// runs on a context of its own, so two of them started in different orders on
/// different processes, or one started between blocking collectives on the
/// communicator, cannot meet each other's steps.
pub struct OwnContext {
    parent: Arc<crate::comm::Comm>,
    own: Arc<crate::comm::Comm>,
}

impl OwnContext {
    /// Duplicates communicator `comm` (collective over it).
    pub fn new(comm: i32) -> MpiResult<OwnContext> {
        let parent = crate::comm::get(comm)?;
        let own = crate::create::context_dup(&parent)?;
        Ok(OwnContext { parent, own })
    }

    /// The handle to plan a start on; errors raised there go to the error handler the
    /// program's communicator has now.
    pub fn handle(&self) -> i32 {
        use std::sync::atomic::Ordering::Relaxed;
        self.own
            .errhandler
            .store(self.parent.errhandler.load(Relaxed), Relaxed);
        self.own.handle
    }
}

impl Drop for OwnContext {
    fn drop(&mut self) {
        // (no attributes, so no callback can fail)
        let _ = crate::create::free(self.own.handle);
    }
}

/// Creates a persistent collective request on communicator `comm`: `make(c)` plans one
/// run on communicator handle `c`, `start` starts a plan and returns its engine
/// request. The plan is made once now on `comm` (argument errors are reported by the
/// _init call itself) and at every start on the request's [`OwnContext`]. The derived
/// datatypes, communicators, user operations and arrays the first plan looked up stay
/// what they were for every start, and alive while the request exists, whatever the
/// program frees or creates meanwhile (crate::pin).
pub fn create<T>(
    name: &'static str,
    comm: i32,
    make: impl Fn(i32) -> MpiResult<T> + Send + Sync + 'static,
    start: impl Fn(T) -> MpiResult<usize> + Send + Sync + 'static,
) -> MpiResult<i32> {
    let (first, pins) = crate::pin::recording(|| make(comm));
    drop(first?);
    let own = OwnContext::new(comm)?;
    let pins = Arc::new(pins);
    let starter: Starter = Arc::new(move || {
        let on = own.handle();
        start(crate::pin::replaying(&pins, || make(on))?)
    });
    insert(name, starter, false)
}

/// Creates a persistent point-to-point request whose every start calls `start` (its
/// arguments were checked by the caller).
pub fn create_p2p(name: &'static str, start: Starter) -> MpiResult<i32> {
    insert(name, start, true)
}

fn insert(name: &'static str, start: Starter, p2p: bool) -> MpiResult<i32> {
    let mut g = table();
    let t = &mut g.persist;
    let i = match t.iter().position(|x| x.is_none()) {
        Some(i) => i,
        None => {
            t.push(None);
            t.len() - 1
        }
    };
    t[i] = Some(Persist {
        name,
        start,
        active: None,
        p2p,
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

/// The persistent request at index `i` (of handle `h`) in table `t`.
fn live(t: &super::Table, i: usize, h: i32) -> MpiResult<&Persist> {
    t.persist
        .get(i)
        .and_then(|p| p.as_ref())
        .ok_or_else(|| bad(h))
}

/// MPI_Start: starts the request's operation as the nonblocking call does.
pub fn start(h: i32) -> MpiResult<()> {
    let i = index(h).ok_or_else(|| {
        err(
            MPI_ERR_REQUEST,
            format!("request={h:#x} is not a persistent request (MPI_Start needs one)"),
        )
    })?;
    // (the starter runs without the table's lock: starting may run the progress
    // engine, which may look requests up)
    let start = {
        let t = table();
        let p = live(&t, i, h)?;
        if p.active.is_some() {
            return Err(err(MPI_ERR_REQUEST, format!("{}: the persistent request is already active (wait for it before starting it again)", p.name)));
        }
        p.start.clone()
    };
    let id = start()?;
    table().persist[i].as_mut().ok_or_else(|| bad(h))?.active = Some(id);
    Ok(())
}

/// MPI_Startall: starts each request in turn.
pub fn startall(hs: &[i32]) -> MpiResult<()> {
    hs.iter().try_for_each(|&h| start(h))
}

/// The engine request a handle stands for: None for MPI_REQUEST_NULL and for an
/// inactive persistent request.
pub fn resolve(h: i32) -> MpiResult<Option<usize>> {
    match index(h) {
        Some(i) => Ok(live(&table(), i, h)?.active),
        None => super::req_id(h),
    }
}

/// After a request completed: a persistent one becomes inactive (its handle stays), any
/// other handle becomes MPI_REQUEST_NULL.
pub fn release(h: &mut i32) {
    match index(*h) {
        Some(i) => {
            if let Some(Some(p)) = table().persist.get_mut(i) {
                p.active = None;
            }
        }
        None => *h = MPI_REQUEST_NULL,
    }
}

/// Whether `h` is a persistent point-to-point request (which MPI_Cancel accepts).
pub fn is_p2p(h: i32) -> bool {
    index(h).is_some_and(|i| {
        table()
            .persist
            .get(i)
            .is_some_and(|p| p.as_ref().is_some_and(|p| p.p2p))
    })
}

/// MPI_Request_free of a persistent request: allowed when inactive, and for a
/// point-to-point one also when active (its operation then completes on its own).
/// Returns the active engine request to release when it completes.
pub fn free(h: i32) -> MpiResult<Option<usize>> {
    let i = index(h).ok_or_else(|| bad(h))?;
    let mut t = table();
    let p = live(&t, i, h)?;
    if p.active.is_some() && !p.p2p {
        return Err(err(
            MPI_ERR_REQUEST,
            format!(
                "{}: an active persistent collective request cannot be freed (complete it first)",
                p.name
            ),
        ));
    }
    let active = p.active;
    let gone = t.persist[i].take();
    drop(t);
    // (outside the table's lock: dropping the request frees its own context)
    drop(gone);
    Ok(active)
}
