//! Hardware atomics for the accumulate family on memory every member maps
//! (MPI_Win_allocate, MPI_Win_allocate_shared).
//!
//! An accumulate-family operation is atomic per element with respect to every other
//! on the same location and predefined type (MPI 4.1 §12.7.1). By default each runs
//! under its target's accumulate mutex (sync.rs) and combines with the reduction
//! kernels. A Fetch_and_op, Compare_and_swap or one-element Accumulate or
//! Get_accumulate of a type of 1, 2, 4 or 8 bytes without padding, at an address
//! aligned to its size,
//! needs no mutex: one locked instruction (an add, an exchange, or a compare-exchange
//! loop around the same kernel) does it. That is only atomic with respect to the
//! others if they update those elements with atomic instructions too, so each
//! target's memory is cut into 64 granules (4 KiB or more, [`shift`]) and a word in
//! the control block has a bit per granule that says whether hardware atomics are on
//! for it:
//! - a bit is set and cleared only by a holder of the target's accumulate mutex;
//! - while it is clear, the mutex alone protects every update in the granule (none is
//!   a hardware one);
//! - while it is set, one-element operations of such types there run without the
//!   mutex ([`lock_free`]), and every operation under the mutex updates the elements
//!   of such types that start in the granule one at a time with atomic instructions
//!   (a compare-exchange per element for the arithmetic ops, plain aligned loads and
//!   stores for MPI_NO_OP and MPI_REPLACE).
//!
//! Clearing a bit must not race with an operation that saw it set and has not
//! finished: each member announces the target of its lock-free operation in its own
//! line of the control block (a plain store and a light fence, shm/fence.rs) before it
//! looks at the bit, and clears the announcement when done; the holder of the mutex
//! that clears bits issues a heavy fence and then waits until no member announces an
//! operation on that target. So an operation either sees the bit clear and takes the
//! mutex, or is seen and waited for. Where the system has no heavy fence
//! (`Win::heavy`), bits stay set.
//!
//! When they go on and off is a rent-or-buy choice on each side, counted per target
//! under its mutex. A one-element operation under the mutex costs a little more than
//! a lock-free one; after [`ON_AFTER`] of them since the bits last went off, or at
//! once when one had to wait for the mutex (lock-free operations do not wait behind a
//! preempted holder), its granule goes on. Under the mutex, elements in granules that are on cost a
//! compare-exchange each (about 25 times a vector kernel: 1 MiB of doubles with
//! MPI_SUM 515 µs against 21); once [`OFF_DEBT`] of them, about the cost of a heavy
//! fence, have been paid since the bits went on, the operation turns the target's
//! granules off and runs the vector kernels. A counter or a lock word goes lock-free,
//! accumulates of whole buffers elsewhere in the window keep the vector kernels, and a
//! program that mixes both on the same bytes pays at most about twice what the better
//! choice would have cost.
//!
//! The announcement words are per process: the lock-free path relies on one thread
//! of a process in the one-sided calls at a time (at most MPI_THREAD_SERIALIZED).
//!
//! Memory of MPI_Win_create and dynamic windows is reached with copies across
//! processes or by serving (ops.rs), which cannot be atomic per element, so it keeps
//! the mutex always.
#![allow(unsafe_code)]
use super::Win;
use crate::abi::*;
use crate::datatype::predefined::{Elem, Predef};
use crate::op::BuiltinOp;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

/// Whether this process's last one-sided data move ended with a locked instruction (a
/// full barrier on x86-64), so that a flush after it has no memory to order (sync.rs
/// `flush_fast`). Every data move clears it (ops.rs), the hardware paths set it.
static FENCED: AtomicBool = AtomicBool::new(false);

/// A data move that may leave plain stores in flight begins.
#[inline]
pub fn note_plain() {
    FENCED.store(false, Ordering::Relaxed);
}

/// A data move ended with a locked instruction.
#[inline]
pub fn note_fenced() {
    FENCED.store(true, Ordering::Relaxed);
}

/// Whether the last data move ended with a full barrier.
#[inline]
pub fn fenced() -> bool {
    cfg!(target_arch = "x86_64") && FENCED.load(Ordering::Relaxed)
}

/// Whether window `w` may use hardware atomics: its memory is mapped by every member.
#[inline]
pub fn window_can(w: &Win) -> bool {
    w.flavor == MPI_WIN_FLAVOR_ALLOCATE || w.flavor == MPI_WIN_FLAVOR_SHARED
}

/// Whether elements of `p` can be updated by one locked instruction.
#[inline]
pub fn capable(p: &Predef) -> bool {
    matches!(p.size, 1 | 2 | 4 | 8) && p.size == p.extent && p.size == p.true_extent
}

/// Whether a one-element operation on `p` at `addr` could run without the mutex once
/// hardware atomics are on for its target.
#[inline]
pub fn element_could(w: &Win, p: &Predef, addr: usize) -> bool {
    // (the size is a power of two: a mask, not a division)
    capable(p) && addr & (p.size - 1) == 0 && window_can(w)
}

/// log2 of the granule size of a target's memory of `size` bytes: 64 granules, of
/// at least 4 KiB.
#[inline]
fn shift(size: usize) -> u32 {
    let bits = usize::BITS - size.saturating_sub(1).leading_zeros();
    bits.saturating_sub(6).max(12)
}

/// The bit of the granule of target `t` that the element at `addr` starts in.
#[inline]
fn bit(w: &Win, t: usize, addr: usize) -> u64 {
    let tg = &w.targets[t];
    let g = (addr.wrapping_sub(tg.base) >> shift(tg.size)).min(63);
    1 << g
}

/// Whether hardware atomics are on for the element at `addr` of target `t`.
#[inline]
pub fn on(w: &Win, t: usize, addr: usize) -> bool {
    w.hw_word(t).load(Ordering::Acquire) & bit(w, t, addr) != 0
}

/// Whether hardware atomics are on anywhere in target `t`'s memory.
#[inline]
pub fn any_on(w: &Win, t: usize) -> bool {
    w.hw_word(t).load(Ordering::Acquire) != 0
}

/// One-element operations under the mutex with hardware atomics off, since they last
/// went off, after which they go on for the element's granule.
pub const ON_AFTER: u32 = 2048;
/// Elements updated one at a time under the mutex, after which the target's hardware
/// atomics go off (about 10 µs of compare-exchanges, the cost of a heavy fence here).
pub const OFF_DEBT: u32 = 2048;

/// Runs `op`, a hardware atomic on the element at `addr` of target `t`, without the
/// mutex if hardware atomics are on there: whether it ran (else the caller takes the
/// mutex).
#[inline]
pub fn lock_free(w: &Win, t: usize, addr: usize, op: &mut impl FnMut()) -> bool {
    let busy = w.busy_word(w.me());
    busy.store(t as u32 + 1, Ordering::Relaxed);
    // (pairs with the heavy fence of `turn_off`: it sees the announcement, or this
    // sees the bit clear)
    crate::shm::fence::light();
    if !on(w, t, addr) {
        busy.store(0, Ordering::Relaxed);
        return false;
    }
    op();
    busy.store(0, Ordering::Release);
    true
}

/// A one-element operation on the element at `addr` of target `t` under its mutex
/// (the caller holds it): counts it and turns hardware atomics on for its granule
/// after [`ON_AFTER`] such operations, or at once when `contended` (the operation
/// waited for the mutex).
pub fn count_single(w: &Win, t: usize, addr: usize, contended: bool) {
    if on(w, t, addr) {
        return;
    }
    let k = w.singles(t).load(Ordering::Relaxed) + 1;
    if contended || k >= ON_AFTER {
        w.singles(t).store(0, Ordering::Relaxed);
        w.debt(t).store(0, Ordering::Relaxed);
        let word = w.hw_word(t);
        word.store(
            word.load(Ordering::Relaxed) | bit(w, t, addr),
            Ordering::Release,
        );
    } else {
        w.singles(t).store(k, Ordering::Relaxed);
    }
}

/// Under target `t`'s mutex, before `len` bytes of elements of `n` bytes at `addr` are
/// updated: charges the elements that start in granules with hardware atomics on, and
/// once that debt reaches [`OFF_DEBT`] turns the target's hardware atomics off.
/// Returns the bits then on.
fn charge(w: &Win, t: usize, addr: usize, len: usize, n: usize) -> u64 {
    let mask = w.hw_word(t).load(Ordering::Acquire);
    if mask == 0 || !w.heavy || len <= n {
        return mask;
    }
    let (base, sh) = (w.targets[t].base, shift(w.targets[t].size));
    let (g0, g1) = (
        (addr.wrapping_sub(base) >> sh).min(63),
        ((addr + len - 1).wrapping_sub(base) >> sh).min(63),
    );
    let mut on_bytes = 0;
    for g in g0..=g1 {
        if mask & 1 << g != 0 {
            let lo = (base + (g << sh)).max(addr);
            let hi = if g == 63 {
                addr + len
            } else {
                (base + ((g + 1) << sh)).min(addr + len)
            };
            on_bytes += hi - lo;
        }
    }
    let debt = w.debt(t).load(Ordering::Relaxed) as usize + on_bytes / n;
    if debt < OFF_DEBT as usize {
        w.debt(t).store(debt as u32, Ordering::Relaxed);
        return mask;
    }
    if turn_off(w, t) {
        0
    } else {
        mask
    }
}

/// Turns every hardware atomic of target `t` off (the caller holds its mutex) and
/// waits until no lock-free operation that saw them on is still running: whether
/// that could be made sure (else they stay on).
fn turn_off(w: &Win, t: usize) -> bool {
    let word = w.hw_word(t);
    let mask = word.swap(0, Ordering::SeqCst);
    if !crate::shm::fence::heavy() {
        word.store(mask, Ordering::SeqCst);
        return false;
    }
    w.debt(t).store(0, Ordering::Relaxed);
    w.singles(t).store(0, Ordering::Relaxed);
    let mark = t as u32 + 1;
    for o in (0..w.n()).filter(|&o| o != w.me()) {
        let busy = w.busy_word(o);
        let mut spins = 0u32;
        // (an announced operation is one instruction; it lasts longer only when its
        // process was switched out, which yielding may let run)
        while busy.load(Ordering::Acquire) == mark {
            spins = spins.wrapping_add(1);
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
                if spins.is_multiple_of(4096) {
                    if let Ok(job) = crate::runtime::job() {
                        job.arena.check_job_alive();
                    }
                }
            }
        }
    }
    true
}

#[inline]
fn to_u(b: &[u8]) -> u64 {
    match b.len() {
        1 => b[0] as u64,
        2 => u16::from_ne_bytes([b[0], b[1]]) as u64,
        4 => u32::from_ne_bytes(b.try_into().unwrap()) as u64,
        _ => u64::from_ne_bytes(b.try_into().unwrap()),
    }
}

#[inline]
fn from_u(v: u64, out: &mut [u8]) {
    match out.len() {
        1 => out[0] = v as u8,
        2 => out.copy_from_slice(&(v as u16).to_ne_bytes()),
        4 => out.copy_from_slice(&(v as u32).to_ne_bytes()),
        _ => out.copy_from_slice(&v.to_ne_bytes()),
    }
}

/// Runs `$body` with `$a` the atomic of `$n` bytes at `$addr`, its value as `u64`.
macro_rules! atomic_at {
    ($n:expr, $addr:expr, |$a:ident, $t:ident| $body:expr) => {
        match $n {
            1 => {
                // SAFETY: the caller's contract: `$addr` is an aligned element of window
                // memory mapped here, only accessed atomically while hardware atomics
                // are on (or under the mutex).
                let $a = unsafe { AtomicU8::from_ptr($addr as *mut u8) };
                type $t = u8;
                $body
            }
            2 => {
                // SAFETY: as above.
                let $a = unsafe { AtomicU16::from_ptr($addr as *mut u16) };
                type $t = u16;
                $body
            }
            4 => {
                // SAFETY: as above.
                let $a = unsafe { AtomicU32::from_ptr($addr as *mut u32) };
                type $t = u32;
                $body
            }
            _ => {
                // SAFETY: as above.
                let $a = unsafe { AtomicU64::from_ptr($addr as *mut u64) };
                type $t = u64;
                $body
            }
        }
    };
}

// The atomic primitives below share one contract: `addr` is aligned to `n` (1, 2, 4
// or 8) and `n` bytes of window memory mapped in this process, which other processes
// update only atomically or under the mutex.

/// The element at `addr`, loaded atomically.
///
/// # Safety
/// The shared contract of the atomic primitives above.
#[allow(
    clippy::unnecessary_cast,
    reason = "one body for every width: the cast is the identity at 8 bytes"
)]
unsafe fn load(addr: usize, n: usize) -> u64 {
    atomic_at!(n, addr, |a, _T| a.load(Ordering::Acquire) as u64)
}

/// `v` stored atomically at `addr`.
///
/// # Safety
/// The shared contract of the atomic primitives.
unsafe fn store(addr: usize, n: usize, v: u64) {
    atomic_at!(n, addr, |a, T| a.store(v as T, Ordering::Release))
}

/// `v` swapped in at `addr`; the value before.
///
/// # Safety
/// The shared contract of the atomic primitives.
#[allow(
    clippy::unnecessary_cast,
    reason = "one body for every width: the cast is the identity at 8 bytes"
)]
unsafe fn swap(addr: usize, n: usize, v: u64) -> u64 {
    atomic_at!(n, addr, |a, T| a.swap(v as T, Ordering::AcqRel) as u64)
}

/// `v` added (wrapping) at `addr`; the value before.
///
/// # Safety
/// The shared contract of the atomic primitives.
#[allow(
    clippy::unnecessary_cast,
    reason = "one body for every width: the cast is the identity at 8 bytes"
)]
unsafe fn fetch_add(addr: usize, n: usize, v: u64) -> u64 {
    atomic_at!(n, addr, |a, T| a.fetch_add(v as T, Ordering::AcqRel) as u64)
}

/// Compare-exchange: Ok(()) when the element held `cur` (now `new`), else the value
/// it holds.
///
/// # Safety
/// The shared contract of the atomic primitives.
#[allow(
    clippy::unnecessary_cast,
    reason = "one body for every width: the cast is the identity at 8 bytes"
)]
unsafe fn cas(addr: usize, n: usize, cur: u64, new: u64) -> Result<(), u64> {
    atomic_at!(n, addr, |a, T| a
        .compare_exchange(cur as T, new as T, Ordering::AcqRel, Ordering::Acquire)
        .map(|_| ())
        .map_err(|v| v as u64))
}

#[inline]
fn integer(p: &Predef) -> bool {
    matches!(
        p.elem,
        Elem::I8 | Elem::I16 | Elem::I32 | Elem::I64 | Elem::U8 | Elem::U16 | Elem::U32 | Elem::U64
    )
}

/// `inv op cur` for one element, by the reduction kernel.
fn apply(k: crate::op::Kernel, inv: &[u8], cur: u64) -> u64 {
    let n = inv.len();
    let mut t = [0u8; 8];
    from_u(cur, &mut t[..n]);
    k(inv, &mut t[..n]);
    to_u(&t[..n])
}

/// The element at `addr` that `cur` was read from, made `inv op` it atomically
/// (retrying on `cur` changing); its value before.
///
/// # Safety
/// As for [`element`].
unsafe fn cas_loop(addr: usize, k: crate::op::Kernel, inv: &[u8], mut cur: u64) -> u64 {
    loop {
        let new = apply(k, inv, cur);
        // SAFETY: this function's contract.
        match unsafe { cas(addr, inv.len(), cur, new) } {
            Ok(()) => return cur,
            Err(v) => cur = v,
        }
    }
}

/// One element of `p` at `addr`, combined atomically: `*addr = inv op *addr` (for
/// MPI_REPLACE `inv`, for MPI_NO_OP unchanged, `inv` then unused). Writes the value
/// before into `old` when given. `op` is valid for `p` (checked by the caller).
///
/// # Safety
/// `addr` is an element of window memory mapped here, aligned to `p.size`, on a
/// target whose hardware atomics are on or whose accumulate mutex the caller holds
/// ([`capable`] `p`); `inv` holds one element unless `op` is MPI_NO_OP.
pub unsafe fn element(
    addr: usize,
    p: &'static Predef,
    op: BuiltinOp,
    inv: &[u8],
    old: Option<&mut [u8]>,
) {
    let n = p.size;
    let prev = match op {
        // SAFETY: this function's contract.
        BuiltinOp::NoOp => unsafe { load(addr, n) },
        BuiltinOp::Replace if old.is_none() => {
            // SAFETY: this function's contract.
            unsafe { store(addr, n, to_u(&inv[..n])) };
            return;
        }
        // SAFETY: this function's contract.
        BuiltinOp::Replace => unsafe { swap(addr, n, to_u(&inv[..n])) },
        // SAFETY: this function's contract.
        BuiltinOp::Sum if integer(p) => unsafe { fetch_add(addr, n, to_u(&inv[..n])) },
        _ => {
            let Some(k) = crate::op::predefined_kernel(op, p) else {
                unreachable!("the caller checked the op against the type");
            };
            // SAFETY: this function's contract.
            unsafe { cas_loop(addr, k, &inv[..n], load(addr, n)) }
        }
    };
    if let Some(o) = old {
        from_u(prev, &mut o[..n]);
    }
}

/// MPI_Compare_and_swap of one element of `p` at `addr`: `new` where it holds
/// `cmp`; its value before into `old`.
///
/// # Safety
/// As for [`element`].
pub unsafe fn compare_swap(addr: usize, p: &Predef, cmp: &[u8], new: &[u8], old: &mut [u8]) {
    let n = p.size;
    let (c, v) = (to_u(&cmp[..n]), to_u(&new[..n]));
    // SAFETY: this function's contract.
    let prev = match unsafe { cas(addr, n, c, v) } {
        Ok(()) => c,
        Err(cur) => cur,
    };
    from_u(prev, &mut old[..n]);
}

/// `len` bytes of elements of `p` at `addr` (a whole number of them) on target `t`,
/// combined with `inv` (for MPI_NO_OP unchanged), the values before into `old` when
/// given: those that start in a granule with hardware atomics on each atomically as
/// [`element`] does one, the others (and unaligned ones, which no hardware operation
/// touches) by the kernel in place.
///
/// # Safety
/// The caller holds `t`'s accumulate mutex; `addr .. addr + len` is window memory of
/// `t` mapped here; `inv` holds `len` bytes unless `op` is MPI_NO_OP; `old` does not
/// overlap the target bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn run(
    w: &Win,
    t: usize,
    addr: usize,
    len: usize,
    p: &'static Predef,
    op: BuiltinOp,
    inv: &[u8],
    mut old: Option<&mut [u8]>,
) {
    let n = p.size;
    let mask = charge(w, t, addr, len, n);
    let (base, sh) = (w.targets[t].base, shift(w.targets[t].size));
    let count = len / n;
    let mut i = 0;
    while i < count {
        let a = addr + i * n;
        let g = (a.wrapping_sub(base) >> sh).min(63);
        // the elements from `i` on that start in granule `g`
        let j = if g == 63 || addr & (n - 1) != 0 || mask == 0 {
            count
        } else {
            let next = base + ((g + 1) << sh);
            count.min(i + (next - a).div_ceil(n))
        };
        let (lo, hi) = (i * n, j * n);
        let iv = if op == BuiltinOp::NoOp {
            &[][..]
        } else {
            &inv[lo..hi]
        };
        let o = old.as_deref_mut().map(|o| &mut o[lo..hi]);
        if mask & (1 << g) != 0 && addr & (n - 1) == 0 {
            // SAFETY: this function's contract, for these elements.
            unsafe { atomic_run(a, hi - lo, p, op, iv, o) };
        } else {
            // SAFETY: this function's contract; the mutex protects these elements.
            let cur = unsafe { super::mem::view_mut(a, hi - lo) };
            if let Some(o) = o {
                o.copy_from_slice(cur);
            }
            match op {
                BuiltinOp::NoOp => {}
                BuiltinOp::Replace => cur.copy_from_slice(iv),
                _ => {
                    let Some(k) = crate::op::predefined_kernel(op, p) else {
                        unreachable!("the caller checked the op against the type");
                    };
                    k(iv, cur)
                }
            }
        }
        i = j;
    }
}

/// [`run`] for aligned elements of a granule with hardware atomics on.
///
/// # Safety
/// As for [`run`], `addr` aligned to `p.size`.
unsafe fn atomic_run(
    addr: usize,
    len: usize,
    p: &'static Predef,
    op: BuiltinOp,
    inv: &[u8],
    mut old: Option<&mut [u8]>,
) {
    let n = p.size;
    let kernel = match op {
        BuiltinOp::NoOp | BuiltinOp::Replace => None,
        BuiltinOp::Sum if integer(p) => None,
        _ => crate::op::predefined_kernel(op, p),
    };
    let Some(k) = kernel else {
        for i in (0..len).step_by(n) {
            let iv = if op == BuiltinOp::NoOp {
                &[][..]
            } else {
                &inv[i..i + n]
            };
            // SAFETY: this function's contract, for the element at `i`.
            unsafe {
                element(
                    addr + i,
                    p,
                    op,
                    iv,
                    old.as_deref_mut().map(|o| &mut o[i..i + n]),
                )
            };
        }
        return;
    };
    // The arithmetic ops: the kernel combines a chunk of snapshots at once, then each
    // element is replaced by a compare-exchange; one that changed meanwhile (by an
    // operation without the mutex) is combined again on its own.
    const CHUNK: usize = 512;
    let (mut before, mut after) = ([0u8; CHUNK], [0u8; CHUNK]);
    let mut at = 0;
    while at < len {
        let m = (len - at).min(CHUNK);
        for i in (0..m).step_by(n) {
            // SAFETY: this function's contract, for the element at `at + i`.
            from_u(unsafe { load(addr + at + i, n) }, &mut before[i..i + n]);
        }
        after[..m].copy_from_slice(&before[..m]);
        k(&inv[at..at + m], &mut after[..m]);
        for i in (0..m).step_by(n) {
            let e = addr + at + i;
            let cur = to_u(&before[i..i + n]);
            // SAFETY: this function's contract, for the element at `e`.
            let prev = match unsafe { cas(e, n, cur, to_u(&after[i..i + n])) } {
                Ok(()) => cur,
                // SAFETY: as above.
                Err(v) => unsafe { cas_loop(e, k, &inv[at + i..at + i + n], v) },
            };
            if let Some(o) = old.as_deref_mut() {
                from_u(prev, &mut o[at + i..at + i + n]);
            }
        }
        at += m;
    }
}
