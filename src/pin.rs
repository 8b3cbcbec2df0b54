//! The objects a persistent collective request named when it was created.
//!
//! `MPI_Allreduce_init` and the other persistent collectives plan every MPI_Start from
//! the call's arguments again. Their handles must keep meaning what they meant at the
//! _init call: the program may free a datatype, a communicator or an operation while
//! the request exists, and a new object may then get the same handle. So the _init call
//! records every derived datatype, communicator and user operation it looks up
//! ([`recording`]), the request
//! keeps those objects alive, and each start looks them up in that record first
//! ([`replaying`]).
//!
//! The array arguments (counts, displacements, datatypes of the v and w forms) are
//! recorded the same way, as copies: the standard has the program keep them unchanged
//! for the request's life, but programs (mpi4py among them) pass temporary arrays that
//! they free once the _init call returns, and MPICH and Open MPI keep copies.
#![deny(unsafe_code)]
use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

/// One looked-up object and its handle.
pub enum Pinned {
    /// A datatype, communicator or user operation (the handle kinds are told apart by
    /// the type of what the handle names: `TypeRef`, `Arc<Comm>`, `Arc<UserOp>`).
    Object(i32, Box<dyn Any + Send + Sync>),
    /// An array argument: its address and a copy of its elements (a `Vec<T>`).
    Array(usize, Box<dyn Any + Send + Sync>),
}

thread_local! {
    /// Lookups are being recorded (by an _init call).
    static RECORD: RefCell<Option<Vec<Pinned>>> = const { RefCell::new(None) };
    /// Lookups are answered from this record first (by a start).
    static REPLAY: RefCell<Option<Arc<Vec<Pinned>>>> = const { RefCell::new(None) };
}

/// Runs `f`, returning what it returned and the objects it looked up.
pub fn recording<R>(f: impl FnOnce() -> R) -> (R, Vec<Pinned>) {
    let outer = RECORD.with(|r| r.replace(Some(Vec::new())));
    let out = f();
    let pins = RECORD.with(|r| r.replace(outer)).unwrap_or_default();
    (out, pins)
}

/// Runs `f` with the handles of `pins` meaning their recorded objects.
pub fn replaying<R>(pins: &Arc<Vec<Pinned>>, f: impl FnOnce() -> R) -> R {
    let outer = REPLAY.with(|r| r.replace(Some(pins.clone())));
    let out = f();
    REPLAY.with(|r| *r.borrow_mut() = outer);
    out
}

/// What `pick` finds in the record, during a replay.
fn replayed<T>(pick: impl Fn(&Pinned) -> Option<T>) -> Option<T> {
    REPLAY.with(|r| r.borrow().as_ref().and_then(|p| p.iter().find_map(&pick)))
}

/// Notes a lookup, while recording.
fn record(p: impl FnOnce() -> Pinned) {
    RECORD.with(|r| {
        if let Some(v) = r.borrow_mut().as_mut() {
            v.push(p());
        }
    })
}

/// The recorded object of type `T` named by handle `h`, during a replay.
pub fn replayed_object<T: Clone + Send + Sync + 'static>(h: i32) -> Option<T> {
    replayed(|x| match x {
        Pinned::Object(k, o) if *k == h => o.downcast_ref::<T>().cloned(),
        _ => None,
    })
}

/// Notes the lookup of handle `h` (which named `o`), while recording.
pub fn record_object<T: Clone + Send + Sync + 'static>(h: i32, o: &T) {
    record(|| Pinned::Object(h, Box::new(o.clone())))
}

/// The recorded copy of the `n`-element array argument at `p`, during a replay.
pub fn replayed_array<T: Copy + Send + Sync + 'static>(p: *const T, n: usize) -> Option<Vec<T>> {
    replayed(|x| match x {
        Pinned::Array(at, v) if *at == p as usize => {
            v.downcast_ref::<Vec<T>>().filter(|v| v.len() == n).cloned()
        }
        _ => None,
    })
}

/// Notes an array argument (`a`, read from `p`), while recording.
pub fn record_array<T: Copy + Send + Sync + 'static>(p: *const T, a: &[T]) {
    record(|| Pinned::Array(p as usize, Box::new(a.to_vec())))
}
