//! The window this process used last, for the fast paths of the one-sided calls
//! (ffi/c/rma.rs): one pointer, looked at with one atomic load, no lock, no reference
//! count and no thread-local (whose lookup from a shared library is a call).
//!
//! The pointer owns a reference (an `Arc<Win>` made raw): the window outlives its place
//! in the table as long as it is cached, and a lookup that finds it freed goes to the
//! table, which says so. A window is replaced in the cache by the next one looked up in
//! the table, and leaves it at MPI_Win_free.
//!
//! Unsafe code here: turning the cached `Arc` into a raw pointer and back, and the
//! borrow of the window through it (see [`with`] for why it stays valid).
#![allow(unsafe_code)]
use super::Win;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

static LAST: AtomicPtr<Win> = AtomicPtr::new(std::ptr::null_mut());

/// Runs `f` on window `h` if it is the cached one and not freed; false otherwise, or
/// when `f` says so.
pub fn with(h: i32, f: impl FnOnce(&Win) -> bool) -> bool {
    let p = LAST.load(Ordering::Acquire);
    if p.is_null() {
        return false;
    }
    // SAFETY: a non-null LAST holds a reference made by `set` (Arc::into_raw), given
    // back only by `set` or `forget` after they took it out of LAST. While the window
    // is not freed the table holds another reference, so giving this one back leaves
    // the window alive; once it is freed (checked here before use), using its handle in
    // another thread at the same time as MPI_Win_free is erroneous.
    let w = unsafe { &*p };
    w.handle == h && !w.is_freed() && f(w)
}

/// Whether `w` is the cached window.
pub fn holds(w: &Arc<Win>) -> bool {
    std::ptr::eq(LAST.load(Ordering::Relaxed), Arc::as_ptr(w))
}

/// Caches `w`, giving back the reference to the window cached before.
pub fn set(w: Arc<Win>) {
    let old = LAST.swap(Arc::into_raw(w).cast_mut(), Ordering::AcqRel);
    if !old.is_null() {
        // SAFETY: `old` was made by Arc::into_raw in an earlier `set` and has just been
        // taken out of LAST, so nobody else gives it back.
        drop(unsafe { Arc::from_raw(old) });
    }
}

/// Takes `w` out of the cache if it is there (MPI_Win_free).
pub fn forget(w: &Win) {
    let p = LAST.load(Ordering::Acquire);
    if std::ptr::eq(p, w)
        && LAST
            .compare_exchange(p, std::ptr::null_mut(), Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    {
        // SAFETY: as in `set`: made by Arc::into_raw and just taken out of LAST.
        drop(unsafe { Arc::from_raw(p) });
    }
}
