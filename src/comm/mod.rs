//! Communicators: a group of world ranks, a context id (the index of the collective
//! channel it owns in the arena, unique in the job while the communicator lives), an
//! error handler and a name. Handles are MPICH's: MPI_COMM_WORLD and MPI_COMM_SELF are
//! built-in, user communicators are direct handles indexing the table below.
#![deny(unsafe_code)]
pub mod coll_state;
pub mod errhandler;
pub mod group;
pub mod info;
pub mod topo;

use crate::abi::*;
use crate::error::{err, MpiResult};
pub use coll_state::CollState;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// The index of a free slot of a handle table, one pushed when none is free.
pub fn free_slot<T>(t: &mut Vec<Option<T>>) -> usize {
    t.iter().position(Option::is_none).unwrap_or_else(|| {
        t.push(None);
        t.len() - 1
    })
}

pub struct Comm {
    pub handle: i32,
    /// Context id = collective channel index.
    pub ctx: usize,
    /// World ranks of the (local) group, in rank order.
    pub group: Vec<usize>,
    /// This process's rank in the group.
    pub rank: usize,
    /// For an intercommunicator: the remote group's world ranks.
    pub remote: Option<Vec<usize>>,
    /// world rank -> rank in the group messages come from (remote group for an
    /// intercommunicator), or -1.
    pub from_world: Vec<i32>,
    pub errhandler: AtomicI32,
    pub name: Mutex<String>,
    /// Attributes: (keyval, value).
    pub attrs: crate::attr::Attrs,
    /// The collectives' state on this communicator (coll/).
    pub coll: CollState,
    /// The members of the collective channel, as world ranks: the group for an
    /// intracommunicator; for an intercommunicator both groups, group "A" (the one
    /// whose leader has the smaller world rank) first.
    pub chan_members: Vec<usize>,
    /// This process's index among `chan_members`.
    pub chan_me: usize,
    /// For an intercommunicator: whether the local group is group "A".
    pub local_is_a: bool,
    /// The process topology (intracommunicators only): copied by MPI_Comm_dup only.
    pub topo: RwLock<Option<Arc<topo::Topo>>>,
    /// Set by MPI_Comm_free: the channel is released when the last reference goes,
    /// after the operations still pending on the communicator (which hold references)
    /// have completed, so that no new communicator gets its context id meanwhile.
    pub freed: AtomicBool,
}

impl Drop for Comm {
    fn drop(&mut self) {
        if *self.freed.get_mut() {
            // After MPI_Finalize the arena is gone with everything in it.
            if let Ok(j) = crate::runtime::job() {
                j.arena.release_channel(self.ctx);
            }
        }
    }
}

impl Comm {
    /// MPI_Comm_set_name: the name kept is cut to MPI_MAX_OBJECT_NAME - 1 characters.
    pub fn set_name(&self, s: &str) {
        let max = MPI_MAX_OBJECT_NAME as usize - 1;
        *self.name.lock().unwrap() = s.chars().take(max).collect();
    }

    pub fn size(&self) -> usize {
        self.group.len()
    }
    /// Size of the group point-to-point ranks refer to (remote group for an
    /// intercommunicator).
    pub fn peer_size(&self) -> usize {
        self.remote.as_ref().map_or(self.group.len(), |r| r.len())
    }
    /// World rank of peer `r` (in the remote group for an intercommunicator).
    pub fn peer_world(&self, r: usize) -> usize {
        match &self.remote {
            Some(g) => g[r],
            None => self.group[r],
        }
    }
    pub fn is_inter(&self) -> bool {
        self.remote.is_some()
    }

    /// Channel index of local rank `r`.
    pub fn chan_of_local(&self, r: usize) -> usize {
        match &self.remote {
            Some(rem) if !self.local_is_a => rem.len() + r,
            _ => r,
        }
    }

    /// Channel index of remote rank `r` (intercommunicators).
    pub fn chan_of_remote(&self, r: usize) -> usize {
        if self.local_is_a {
            self.group.len() + r
        } else {
            r
        }
    }

    /// A view of this communicator on its internal point-to-point context, for
    /// messages the library itself exchanges (never matched by user receives).
    pub fn internal_view(&self) -> Comm {
        let j = crate::runtime::job_any().expect("initialised");
        Comm::new(
            self.handle,
            self.ctx | INTERNAL_CTX,
            self.group.clone(),
            self.rank,
            self.remote.clone(),
            j.size,
            "",
        )
    }
}

/// Context bit of the library's internal point-to-point traffic.
pub const INTERNAL_CTX: usize = 1 << 31;

fn build_from_world(nworld: usize, peers: &[usize]) -> Vec<i32> {
    let mut v = vec![-1; nworld];
    for (i, &w) in peers.iter().enumerate() {
        v[w] = i as i32;
    }
    v
}

impl Comm {
    pub fn new(
        handle: i32,
        ctx: usize,
        group: Vec<usize>,
        rank: usize,
        remote: Option<Vec<usize>>,
        nworld: usize,
        name: &str,
    ) -> Comm {
        let from_world = build_from_world(nworld, remote.as_deref().unwrap_or(&group));
        let intra = remote.is_none();
        let local_is_a = match &remote {
            Some(r) => group[0] < r[0],
            None => true,
        };
        let (chan_members, chan_me) = match &remote {
            None => (group.clone(), rank),
            Some(r) if local_is_a => ([group.clone(), r.clone()].concat(), rank),
            Some(r) => ([r.clone(), group.clone()].concat(), r.len() + rank),
        };
        Comm {
            chan_members,
            chan_me,
            local_is_a,
            handle,
            ctx,
            group,
            rank,
            remote,
            from_world,
            errhandler: AtomicI32::new(MPI_ERRORS_ARE_FATAL),
            name: Mutex::new(name.to_string()),
            coll: CollState {
                intra,
                check_args: AtomicBool::new(true),
                ..CollState::default()
            },
            attrs: Mutex::new(Vec::new()),
            topo: RwLock::new(None),
            freed: AtomicBool::new(false),
        }
    }
}

struct Table {
    world: Option<Arc<Comm>>,
    slf: Option<Arc<Comm>>,
    user: Vec<Option<Arc<Comm>>>,
    free: Vec<usize>,
}

static TABLE: RwLock<Table> = RwLock::new(Table {
    world: None,
    slf: None,
    user: Vec::new(),
    free: Vec::new(),
});

/// Sets up MPI_COMM_WORLD (slots `base..base + size` on channel `world_ctx`) and
/// MPI_COMM_SELF at MPI_Init; `slot` is this process's slot of the arena's `slots`.
pub fn init_predefined(slot: usize, base: usize, size: usize, world_ctx: usize, slots: usize) {
    let mut t = TABLE.write().unwrap();
    // (MPI cannot be initialised twice, so these are set once.)
    t.world = Some(Arc::new(Comm::new(
        MPI_COMM_WORLD,
        world_ctx,
        (base..base + size).collect(),
        slot - base,
        None,
        slots,
        "MPI_COMM_WORLD",
    )));
    t.slf = Some(Arc::new(Comm::new(
        MPI_COMM_SELF,
        1 + slot,
        vec![slot],
        0,
        None,
        slots,
        "MPI_COMM_SELF",
    )));
    if let Some(w) = &t.world {
        let _ = WORLD.set(w.clone());
    }
    if let Some(c) = &t.slf {
        let _ = SELF.set(c.clone());
    }
}

/// Registers a new communicator and returns it with its handle filled in (through
/// `create::register`, which connects point-to-point to its members first).
pub fn register(mut c: Comm) -> Arc<Comm> {
    let mut t = TABLE.write().unwrap();
    let idx = match t.free.pop() {
        Some(i) => i,
        None => {
            t.user.push(None);
            t.user.len() - 1
        }
    };
    c.handle = direct_handle(OBJ_COMM, idx);
    let a = Arc::new(c);
    t.user[idx] = Some(a.clone());
    a
}

/// Removes a user communicator from the table.
pub fn unregister(h: i32) {
    // (the parent handle stops being returned)
    let _ = PARENT.compare_exchange(h, MPI_COMM_NULL, Ordering::Relaxed, Ordering::Relaxed);
    if let Some(idx) = direct_index(h, OBJ_COMM) {
        let mut t = TABLE.write().unwrap();
        if idx < t.user.len() && t.user[idx].is_some() {
            t.user[idx] = None;
            t.free.push(idx);
        }
    }
}

/// The handle of a spawned process's parent intercommunicator (MPI_COMM_NULL: none, or
/// freed).
static PARENT: AtomicI32 = AtomicI32::new(MPI_COMM_NULL);

/// Records the parent intercommunicator of a spawned process (spawn.rs).
pub fn set_parent(h: i32) {
    PARENT.store(h, Ordering::Relaxed);
}

/// MPI_Comm_get_parent.
pub fn parent() -> i32 {
    PARENT.load(Ordering::Relaxed)
}

/// The predefined communicators, reachable without the table's lock.
static WORLD: std::sync::OnceLock<Arc<Comm>> = std::sync::OnceLock::new();
static SELF: std::sync::OnceLock<Arc<Comm>> = std::sync::OnceLock::new();

/// Looks a communicator handle up; MPI_ERR_COMM names the value otherwise.
pub fn get(h: i32) -> MpiResult<Arc<Comm>> {
    if h == MPI_COMM_WORLD {
        if let Some(c) = WORLD.get() {
            return Ok(c.clone());
        }
    } else if h == MPI_COMM_SELF {
        if let Some(c) = SELF.get() {
            return Ok(c.clone());
        }
    }
    if let Some(c) = crate::pin::replayed_object::<Arc<Comm>>(h) {
        return Ok(c);
    }
    let t = TABLE.read().unwrap();
    let found = if h == MPI_COMM_WORLD {
        t.world.clone()
    } else if h == MPI_COMM_SELF {
        t.slf.clone()
    } else if let Some(idx) = direct_index(h, OBJ_COMM) {
        t.user.get(idx).cloned().flatten()
    } else {
        None
    };
    if let Some(c) = &found {
        crate::pin::record_object(h, c);
    }
    found.ok_or_else(|| {
        if h == MPI_COMM_NULL {
            err(MPI_ERR_COMM, "communicator is MPI_COMM_NULL")
        } else {
            err(
                MPI_ERR_COMM,
                format!("invalid communicator handle {h:#x} (not a communicator, or freed)"),
            )
        }
    })
}

pub fn is_valid(h: i32) -> bool {
    get(h).is_ok()
}

/// The error handler that handles an error raised in a call on `comm` (MPI_COMM_WORLD's
/// when `comm` is not a valid communicator).
pub fn errhandler_for_error(comm: i32) -> i32 {
    match get(comm).or_else(|_| get(MPI_COMM_WORLD)) {
        Ok(c) => c.errhandler.load(Ordering::Relaxed),
        Err(_) => MPI_ERRORS_ARE_FATAL,
    }
}

pub use errhandler::call_user_errhandler;

/// Number of live user communicators (for leak checks).
pub fn live_user_comms() -> usize {
    TABLE
        .read()
        .unwrap()
        .user
        .iter()
        .filter(|c| c.is_some())
        .count()
}

impl<'a> From<&'a std::sync::Arc<Comm>> for crate::attr::Owner<'a> {
    fn from(c: &'a std::sync::Arc<Comm>) -> Self {
        crate::attr::Owner::from(&**c)
    }
}

impl<'a> From<&'a Comm> for crate::attr::Owner<'a> {
    fn from(c: &'a Comm) -> Self {
        crate::attr::Owner {
            kind: crate::attr::Kind::Comm,
            handle: c.handle,
            attrs: &c.attrs,
        }
    }
}
