//! The data moves of one-sided communication (MPI 4.1 §12.3): Put, Get, Accumulate,
//! Get_accumulate, Fetch_and_op and Compare_and_swap, each complete when its call
//! returns.
//!
//! Data travels as the packed stream of the origin datatype (a view of the origin
//! buffer when that is contiguous) and is scattered over, or gathered from, the
//! target's memory along the target datatype's pieces (`datatype::pack::walk`): by
//! copies when the memory is addressable here, by one cross-process copy per 1024
//! pieces otherwise. Every access is checked against the target's window first
//! (MPI_ERR_RMA_RANGE: nothing is written). The accumulate family runs under the
//! target's accumulate mutex (sync.rs) with the reduction kernels of op/ on the
//! packed elements, so each is atomic with respect to every other on that target;
//! one-element operations on mapped memory are hardware atomics (atomic.rs).
//!
//! Unsafe code here (every block has its SAFETY line): the reads and writes of the
//! origin buffers (the MPI caller's addresses) and of window memory addressable here.
#![allow(unsafe_code)]
use super::{atomic, mem, sync, Place, Win};
use crate::abi::*;
use crate::datatype::TypeRef;
use crate::error::{err, MpiResult};
use crate::op::BuiltinOp;
use std::borrow::Cow;

/// An origin-side buffer: address, count and datatype (MPI's triple).
pub struct Buf {
    pub addr: usize,
    pub count: usize,
    pub t: TypeRef,
}

impl Buf {
    fn bytes(&self) -> usize {
        self.count * self.t.size()
    }
    /// The bytes the buffer's instances touch: [lo, hi) as addresses.
    fn range(&self) -> (usize, usize) {
        match crate::datatype::span(&self.t, self.count) {
            Some((lo, len)) if len > 0 => {
                let a = self.addr.wrapping_add_signed(lo);
                (a, a + len)
            }
            _ => (0, 0),
        }
    }
    /// The packed stream of the buffer: a view of it when it is contiguous.
    fn packed(&self) -> Cow<'_, [u8]> {
        let len = self.bytes();
        if len == 0 {
            return Cow::Borrowed(&[]);
        }
        if self.t.is_contiguous() {
            // SAFETY: the MPI caller passes a buffer holding `count` instances; a
            // contiguous type's instances are these `len` bytes at the address.
            return Cow::Borrowed(unsafe { mem::view(self.addr, len) });
        }
        let mut v = vec![0u8; len];
        // SAFETY: the MPI caller passes a buffer holding `count` instances.
        unsafe { crate::datatype::pack(&self.t, self.count, self.addr as *const u8, &mut v, 0) };
        Cow::Owned(v)
    }
    /// Stores a packed stream into the buffer.
    fn store(&self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        // SAFETY: the MPI caller passes a writable buffer with room for `count`
        // instances; `data` is our own memory.
        unsafe { crate::datatype::unpack(&self.t, self.count, self.addr as *mut u8, data, 0) };
    }
}

/// The target side: rank, displacement, count and datatype.
pub struct Tgt {
    pub rank: usize,
    pub disp: i64,
    pub count: usize,
    pub t: TypeRef,
}

impl Tgt {
    fn bytes(&self) -> usize {
        self.count * self.t.size()
    }
}

/// Where the target buffer is: its place and the address its datatype is relative to.
/// MPI_ERR_RMA_RANGE if any byte it touches lies outside the target's window.
fn resolve(w: &Win, tg: &Tgt, call: &str) -> MpiResult<(Place, usize)> {
    let target = w.targets[tg.rank];
    let (lo, len) = crate::datatype::span(&tg.t, tg.count).ok_or_else(|| {
        err(
            MPI_ERR_COUNT,
            format!(
                "{call}: target_count={} of the target datatype overflows the address space",
                tg.count
            ),
        )
    })?;
    if w.flavor == MPI_WIN_FLAVOR_DYNAMIC {
        let addr = tg.disp as usize;
        if len == 0 || tg.t.size() == 0 {
            return Ok((target.place, addr));
        }
        let first = addr.wrapping_add_signed(lo);
        let regions = w.attached(tg.rank);
        let inside = regions
            .iter()
            .any(|&(b, l)| first >= b && first.checked_add(len).is_some_and(|e| e <= b + l));
        if !inside {
            return Err(err(
                MPI_ERR_RMA_RANGE,
                format!(
                    "{call}: target_disp={:#x} with target_count={}: bytes [{first:#x}, {:#x}) of rank {} are not inside a region it attached to the dynamic window ({} attached)",
                    tg.disp,
                    tg.count,
                    first.wrapping_add(len),
                    tg.rank,
                    regions.len()
                ),
            ));
        }
        return Ok((target.place, addr));
    }
    let off = tg.disp as i128 * target.disp_unit as i128;
    if len == 0 || tg.t.size() == 0 {
        return Ok((target.place, target.base));
    }
    let first = off + lo as i128;
    let end = first + len as i128;
    if first < 0 || end > target.size as i128 {
        return Err(err(
            MPI_ERR_RMA_RANGE,
            format!(
                "{call}: target_disp={} (disp_unit {}) with target_count={} touches bytes [{first}, {end}) of rank {}'s window, which has {} bytes",
                tg.disp, target.disp_unit, tg.count, tg.rank, target.size
            ),
        ));
    }
    Ok((target.place, target.base.wrapping_add(off as usize)))
}

fn io_error(call: &str, rank: usize, e: std::io::Error) -> crate::error::MpiError {
    err(
        MPI_ERR_OTHER,
        format!("{call}: the memory of rank {rank}'s window could not be reached: {e}"),
    )
}

/// The target pieces as (address, length), in stream order.
fn pieces(t: &TypeRef, count: usize, addr: usize, len: usize) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    crate::datatype::pack::walk(&t.layout, t.extent(), count, 0, len, |u, _, n| {
        v.push((addr.wrapping_add_signed(u), n))
    });
    v
}

/// Writes the packed stream `data` to the target buffer at `addr`.
fn write_target(
    w: &Win,
    place: Place,
    addr: usize,
    tg: &Tgt,
    data: &[u8],
    call: &str,
) -> MpiResult<()> {
    if data.is_empty() {
        return Ok(());
    }
    match place {
        Place::Here => {
            crate::datatype::pack::walk(
                &tg.t.layout,
                tg.t.extent(),
                tg.count,
                0,
                data.len(),
                |u, pos, n| {
                    // SAFETY: `resolve` checked that every piece is inside the target's
                    // window memory, addressable in this process.
                    unsafe { mem::copy_in(addr.wrapping_add_signed(u), &data[pos..pos + n]) }
                },
            );
            Ok(())
        }
        Place::Proc(pid) => {
            crate::shm::peer::write_pieces(pid, &pieces(&tg.t, tg.count, addr, data.len()), data)
                .map_err(|e| io_error(call, tg.rank, e))
        }
        Place::Served => {
            super::serve::write(w, tg.rank, &pieces(&tg.t, tg.count, addr, data.len()), data)
        }
    }
}

/// Reads the target buffer at `addr` as a packed stream into `out`.
fn read_target(
    w: &Win,
    place: Place,
    addr: usize,
    tg: &Tgt,
    out: &mut [u8],
    call: &str,
) -> MpiResult<()> {
    if out.is_empty() {
        return Ok(());
    }
    match place {
        Place::Here => {
            let len = out.len();
            crate::datatype::pack::walk(
                &tg.t.layout,
                tg.t.extent(),
                tg.count,
                0,
                len,
                |u, pos, n| {
                    // SAFETY: as in write_target, for reading.
                    unsafe { mem::copy_out(addr.wrapping_add_signed(u), &mut out[pos..pos + n]) }
                },
            );
            Ok(())
        }
        Place::Proc(pid) => {
            let p = pieces(&tg.t, tg.count, addr, out.len());
            crate::shm::peer::read_pieces(pid, &p, out).map_err(|e| io_error(call, tg.rank, e))
        }
        Place::Served => {
            let p = pieces(&tg.t, tg.count, addr, out.len());
            super::serve::read(w, tg.rank, &p, out)
        }
    }
}

fn check_sizes(a: usize, what_a: &str, b: usize, call: &str) -> MpiResult<()> {
    if a != b {
        return Err(err(
            MPI_ERR_TYPE,
            format!(
                "{call}: {what_a} holds {a} bytes of data, target_count x target_datatype {b}: the type signatures do not match"
            ),
        ));
    }
    Ok(())
}

/// Whether two address ranges overlap.
/// Runs `go` (one element's hardware atomic at `addr` of `rank`'s window memory) once
/// the element's granule has hardware atomics on: at once if it has, else under the
/// accumulate lock, turning them on first (rma/atomic.rs).
fn granule_on(w: &Win, rank: usize, addr: usize, go: &mut impl FnMut()) -> MpiResult<()> {
    if element_soon(w, rank, addr, go) {
        return Ok(());
    }
    sync::with_acc_mutex(w, rank, || {
        atomic::count_single(w, rank, addr, true);
        go();
        Ok(())
    })
}

/// [`granule_on`] without waiting: whether `go` ran, lock-free or under a free mutex
/// (false when another process holds the mutex).
#[inline]
fn element_soon(w: &Win, rank: usize, addr: usize, go: &mut impl FnMut()) -> bool {
    atomic::lock_free(w, rank, addr, go)
        || sync::try_acc_mutex(w, rank, || {
            atomic::count_single(w, rank, addr, false);
            go()
        })
        .is_some()
}

fn overlap(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < a.1 && b.0 < b.1 && a.0 < b.1 && b.0 < a.1
}

fn target_range(place: Place, addr: usize, tg: &Tgt) -> (usize, usize) {
    match (place, crate::datatype::span(&tg.t, tg.count)) {
        (Place::Here, Some((lo, len))) if len > 0 => {
            let a = addr.wrapping_add_signed(lo);
            (a, a + len)
        }
        _ => (0, 0),
    }
}

/// MPI_Put.
pub fn put(w: &Win, o: &Buf, tg: &Tgt, call: &str) -> MpiResult<()> {
    atomic::note_plain();
    check_sizes(
        o.bytes(),
        "origin_count x origin_datatype",
        tg.bytes(),
        call,
    )?;
    let (place, addr) = resolve(w, tg, call)?;
    let data = o.packed();
    if overlap(o.range(), target_range(place, addr, tg)) {
        let copy = data.to_vec();
        return write_target(w, place, addr, tg, &copy, call);
    }
    write_target(w, place, addr, tg, &data, call)
}

/// MPI_Get.
pub fn get(w: &Win, o: &Buf, tg: &Tgt, call: &str) -> MpiResult<()> {
    atomic::note_plain();
    check_sizes(
        o.bytes(),
        "origin_count x origin_datatype",
        tg.bytes(),
        call,
    )?;
    let (place, addr) = resolve(w, tg, call)?;
    let len = o.bytes();
    if len == 0 {
        return Ok(());
    }
    if o.t.is_contiguous() && !overlap(o.range(), target_range(place, addr, tg)) {
        // SAFETY: the MPI caller passes a writable buffer of `count` instances, which
        // for a contiguous type are these `len` bytes; it overlaps no target memory
        // read here (checked).
        let out = unsafe { mem::view_mut(o.addr, len) };
        return read_target(w, place, addr, tg, out, call);
    }
    let mut v = vec![0u8; len];
    read_target(w, place, addr, tg, &mut v, call)?;
    o.store(&v);
    Ok(())
}

/// The target bytes of the lean paths: `len` bytes at `disp` of target `rank`'s window
/// memory, when that is addressable here, inside a passive-target epoch of this
/// process and inside the window; None otherwise (the full path then checks and says
/// what is wrong).
#[inline]
fn lean_target(w: &Win, rank: i32, disp: i64, len: usize) -> Option<usize> {
    let t = usize::try_from(rank).ok().filter(|&t| t < w.n())?;
    let tg = w.targets[t];
    if w.flavor == MPI_WIN_FLAVOR_DYNAMIC || tg.place != Place::Here {
        return None;
    }
    let off = usize::try_from(disp).ok()?.checked_mul(tg.disp_unit)?;
    // (the epoch last: a fence epoch counts as used from here on)
    (off.checked_add(len)? <= tg.size && w.open.lean_to(t)).then(|| tg.base + off)
}

/// One predefined datatype whose elements are contiguous (size = extent = true
/// extent), and its element size.
fn lean_type(dt: i32) -> Option<&'static crate::datatype::predefined::Predef> {
    crate::datatype::predefined::lookup(dt)
        .filter(|p| p.size > 0 && p.size == p.extent && p.size == p.true_extent)
}

/// The lean path of MPI_Put and MPI_Get (and their request forms): the same predefined
/// contiguous datatype and count on both sides, a target addressable here inside a
/// passive-target epoch, every argument valid. Moves the data and returns true, or
/// does nothing and returns false for the full path to handle (and check) the call.
///
/// # Safety
/// `origin` is the MPI caller's buffer of `count` elements of `dt`: readable for a
/// Put, writable for a Get.
#[allow(clippy::too_many_arguments)]
pub unsafe fn put_get_lean(
    w: &Win,
    get: bool,
    origin: usize,
    count: i64,
    dt: i32,
    rank: i32,
    disp: i64,
    tcount: i64,
    tdt: i32,
) -> bool {
    atomic::note_plain();
    if dt != tdt || count != tcount || count <= 0 || origin == 0 {
        return false;
    }
    let Some(p) = lean_type(dt) else {
        return false;
    };
    let Some(len) = (count as usize).checked_mul(p.size) else {
        return false;
    };
    let Some(addr) = lean_target(w, rank, disp, len) else {
        return false;
    };
    let (from, to) = if get { (addr, origin) } else { (origin, addr) };
    // SAFETY: `origin` holds `len` bytes (the contract); the target bytes are window
    // memory addressable here (lean_target). Both copies allow the two to overlap
    // (the 8-byte one reads before it writes).
    unsafe {
        if len == 8 {
            let v = std::ptr::read_unaligned(from as *const u64);
            std::ptr::write_unaligned(to as *mut u64, v);
        } else {
            mem::copy(from, to, len);
        }
    }
    true
}

/// The lean path of the accumulate family (MPI_Accumulate, MPI_Get_accumulate,
/// MPI_Fetch_and_op and their request forms): as [`put_get_lean`], with a predefined
/// op valid for the type, and a result buffer (`result`: address, count, datatype)
/// of the same count and type for the fetching ones; origin, result and target
/// buffers must not overlap, and the target's accumulate mutex free within a few
/// spins. True when done, false (nothing done) for the full path.
///
/// # Safety
/// `origin` is the MPI caller's buffer of `count` elements of `dt` (unless `op` is
/// MPI_NO_OP, which ignores it), `result` the caller's writable buffer of its count
/// and type.
#[allow(clippy::too_many_arguments)]
pub unsafe fn acc_lean(
    w: &Win,
    origin: (usize, i64, i32),
    result: Option<(usize, i64, i32)>,
    rank: i32,
    disp: i64,
    tcount: i64,
    tdt: i32,
    op: i32,
) -> bool {
    atomic::note_plain();
    let Some(op) = BuiltinOp::from_handle(op) else {
        return false;
    };
    let no_op = op == BuiltinOp::NoOp;
    let fits = |(a, c, d): (usize, i64, i32)| a != 0 && c == tcount && d == tdt;
    if tcount <= 0 || !(no_op && result.is_some() || fits(origin)) || !result.is_none_or(fits) {
        return false;
    }
    let Some(p) = lean_type(tdt) else {
        return false;
    };
    let kernel = match op {
        BuiltinOp::Replace | BuiltinOp::NoOp => None,
        _ => match crate::op::predefined_kernel(op, p) {
            Some(k) => Some(k),
            None => return false,
        },
    };
    let Some(len) = (tcount as usize).checked_mul(p.size) else {
        return false;
    };
    let Some(addr) = lean_target(w, rank, disp, len) else {
        return false;
    };
    let at = |a: usize| (a, a.wrapping_add(len));
    let (tr, o, r) = (at(addr), at(origin.0), result.map(|r| at(r.0)));
    let clash = |x: Option<(usize, usize)>| x.is_some_and(|x| overlap(x, tr));
    if (!no_op && (overlap(o, tr) || r.is_some_and(|r| overlap(r, o)))) || clash(r) {
        return false;
    }
    let t = rank as usize;
    // SAFETY: the origin and result buffers are the caller's (this function's
    // contract), disjoint from the target bytes and from each other (checked).
    let (inv, old) = unsafe {
        (
            if no_op {
                &[][..]
            } else {
                mem::view(origin.0, len)
            },
            result.map(|r| mem::view_mut(r.0, len)),
        )
    };
    if tcount == 1 && atomic::element_could(w, p, addr) {
        let locked = !(no_op || op == BuiltinOp::Replace && old.is_none());
        let mut old = old;
        // SAFETY: one aligned element of memory every member maps (element_could);
        // the op is valid for the type (checked above).
        let mut go = || unsafe { atomic::element(addr, p, op, inv, old.as_deref_mut()) };
        let done = element_soon(w, t, addr, &mut go);
        if done && locked {
            atomic::note_fenced();
        }
        return done;
    }
    sync::try_acc_mutex(w, t, || {
        if atomic::window_can(w) && atomic::capable(p) && atomic::any_on(w, t) {
            // SAFETY: window memory addressable here (lean_target), under the mutex;
            // the buffers as above.
            unsafe { atomic::run(w, t, addr, len, p, op, inv, old) };
            return;
        }
        // SAFETY: the target bytes are window memory addressable here (lean_target);
        // the accumulates of other processes wait for the mutex this closure holds,
        // and other concurrent access to them is erroneous (MPI 4.1 §12.7).
        let cur = unsafe { mem::view_mut(addr, len) };
        if let Some(o) = old {
            o.copy_from_slice(cur);
        }
        if !no_op {
            match kernel {
                Some(k) => k(inv, cur),
                None => cur.copy_from_slice(inv),
            }
        }
    })
    .is_some()
}

/// The lean path of MPI_Compare_and_swap: as [`put_get_lean`] for one element of
/// predefined `dt` (of at most 16 bytes; the caller checked its type class and the
/// three addresses) and a free accumulate mutex as in [`acc_lean`]. True when done,
/// false (nothing done) for the full path.
///
/// # Safety
/// `origin` and `compare` are the MPI caller's readable elements of `dt`, `result` its
/// writable one.
pub unsafe fn cas_lean(
    w: &Win,
    (origin, compare, result): (usize, usize, usize),
    dt: i32,
    rank: i32,
    disp: i64,
) -> bool {
    atomic::note_plain();
    let Some(p) = lean_type(dt).filter(|p| p.size <= 16) else {
        return false;
    };
    let n = p.size;
    let Some(addr) = lean_target(w, rank, disp, n) else {
        return false;
    };
    let (mut new, mut cmp, mut old) = ([0u8; 16], [0u8; 16], [0u8; 16]);
    // SAFETY: the caller's elements (this function's contract), copied first: the
    // result may overlap them.
    unsafe {
        new[..n].copy_from_slice(mem::view(origin, n));
        cmp[..n].copy_from_slice(mem::view(compare, n));
    }
    let t = rank as usize;
    if atomic::element_could(w, p, addr) {
        // SAFETY: one aligned element of memory every member maps (element_could).
        let mut go = || unsafe { atomic::compare_swap(addr, p, &cmp, &new, &mut old) };
        if !element_soon(w, t, addr, &mut go) {
            return false;
        }
        // (a compare-exchange is a locked instruction whether or not it swaps)
        atomic::note_fenced();
        // SAFETY: the caller's writable result element (this function's contract).
        unsafe { mem::copy_in(result, &old[..n]) };
        return true;
    }
    let done = sync::try_acc_mutex(w, t, || {
        // SAFETY: the target element is window memory addressable here (lean_target),
        // under the target's accumulate mutex as in acc_lean.
        unsafe {
            mem::copy_out(addr, &mut old[..n]);
            if old[..n] == cmp[..n] {
                mem::copy_in(addr, &new[..n]);
            }
        }
    });
    if done.is_none() {
        return false;
    }
    // SAFETY: the caller's writable result element (this function's contract).
    unsafe { mem::copy_in(result, &old[..n]) };
    true
}

/// The predefined type the accumulate's datatype `t` is made of (`call` and `arg`
/// name it in errors); None when it holds no data.
fn basic_of(op: BuiltinOp, t: &TypeRef, arg: &str, call: &str) -> MpiResult<Option<i32>> {
    if t.size() == 0 {
        return Ok(None);
    }
    let Some((basic, _)) = t.basic_elem() else {
        return Err(err(
            MPI_ERR_TYPE,
            format!("{call}: {arg} mixes several predefined types; accumulate operations take datatypes made of one"),
        ));
    };
    if !matches!(op, BuiltinOp::Replace | BuiltinOp::NoOp) {
        let p = crate::op::predefined_type(basic)?;
        crate::op::check_valid(op, p).map_err(|e| err(e.class, format!("{call}: {}", e.msg)))?;
    }
    Ok(Some(basic))
}

/// `inout = inv op inout` element-wise on packed elements of predefined `basic`.
fn combine(op: BuiltinOp, basic: i32, inv: &[u8], inout: &mut [u8]) -> MpiResult<()> {
    match op {
        BuiltinOp::Replace => {
            inout.copy_from_slice(inv);
            Ok(())
        }
        BuiltinOp::NoOp => Ok(()),
        _ => {
            let p = crate::op::predefined_type(basic)?;
            let (k, _) = crate::op::kernel_for(op, basic)?;
            let n = inout.len() / p.size;
            if p.size == p.extent {
                k(inv, inout);
                return Ok(());
            }
            // A pair type with padding: the kernels read elements as laid out in memory.
            let a = crate::op::spread_pairs(p, inv, n)?;
            let mut b = crate::op::spread_pairs(p, inout, n)?;
            k(&a, &mut b);
            inout.copy_from_slice(&crate::op::gather_pairs(p, &b, n)?);
            Ok(())
        }
    }
}

/// MPI_Accumulate (`result` None) and MPI_Get_accumulate (`result` the result buffer):
/// atomic per target with every other operation of the family.
pub fn accumulate(
    w: &Win,
    o: &Buf,
    result: Option<&Buf>,
    tg: &Tgt,
    op: BuiltinOp,
    call: &str,
) -> MpiResult<()> {
    atomic::note_plain();
    // No data, nothing to combine: the op need not apply to the types (as in MPICH and
    // Open MPI, and as programs that probe for the call with count 0 expect).
    let (ob, rb) = (o.bytes(), result.map_or(0, |r| r.bytes()));
    if tg.bytes() == 0 && (ob == 0 || op == BuiltinOp::NoOp) && rb == 0 {
        return Ok(());
    }
    let tbasic = basic_of(op, &tg.t, "target_datatype", call)?;
    if op != BuiltinOp::NoOp {
        check_sizes(
            o.bytes(),
            "origin_count x origin_datatype",
            tg.bytes(),
            call,
        )?;
        let obasic = basic_of(op, &o.t, "origin_datatype", call)?;
        if obasic.is_some() && tbasic.is_some() && obasic != tbasic {
            return Err(err(
                MPI_ERR_TYPE,
                format!("{call}: origin_datatype and target_datatype are made of different predefined types"),
            ));
        }
    }
    if let Some(r) = result {
        check_sizes(
            r.bytes(),
            "result_count x result_datatype",
            tg.bytes(),
            call,
        )?;
        if r.bytes() > 0 && basic_of(BuiltinOp::NoOp, &r.t, "result_datatype", call)? != tbasic {
            return Err(err(
                MPI_ERR_TYPE,
                format!("{call}: result_datatype and target_datatype are made of different predefined types"),
            ));
        }
    }
    let (place, addr) = resolve(w, tg, call)?;
    let Some(basic) = tbasic else {
        return Ok(());
    };
    let len = tg.bytes();
    if len == 0 {
        return Ok(());
    }
    if place == Place::Here && tg.t.is_contiguous() {
        return accumulate_here(w, o, result, tg.rank, addr, len, op, basic);
    }
    let inv = if op == BuiltinOp::NoOp {
        Cow::Borrowed(&[][..])
    } else {
        // (a copy: the origin buffer may be window memory the mutex protects)
        Cow::Owned(o.packed().into_owned())
    };
    let hw = crate::datatype::predefined::lookup(basic)
        .filter(|&p| place == Place::Here && atomic::window_can(w) && atomic::capable(p));
    let old = sync::with_acc_mutex(w, tg.rank, || {
        if let Some(p) = hw.filter(|_| atomic::any_on(w, tg.rank)) {
            let mut old = result.map(|_| vec![0u8; len]);
            crate::datatype::pack::walk(
                &tg.t.layout,
                tg.t.extent(),
                tg.count,
                0,
                len,
                |u, pos, n| {
                    let iv = if op == BuiltinOp::NoOp {
                        &[][..]
                    } else {
                        &inv[pos..pos + n]
                    };
                    let o = old.as_mut().map(|o| &mut o[pos..pos + n]);
                    // SAFETY: `resolve` checked that every piece is inside the target's
                    // window memory, addressable here; the mutex is held; `old` is ours.
                    unsafe { atomic::run(w, tg.rank, addr.wrapping_add_signed(u), n, p, op, iv, o) }
                },
            );
            return Ok(old);
        }
        let mut cur = vec![0u8; len];
        if result.is_some() || !matches!(op, BuiltinOp::Replace) {
            read_target(w, place, addr, tg, &mut cur, call)?;
        }
        let old = result.map(|_| cur.clone());
        if op != BuiltinOp::NoOp {
            combine(op, basic, &inv, &mut cur)?;
            write_target(w, place, addr, tg, &cur, call)?;
        }
        Ok(old)
    })?;
    if let (Some(r), Some(old)) = (result, old) {
        r.store(&old);
    }
    Ok(())
}

/// The accumulate family on a contiguous target buffer addressable here: the kernel
/// combines straight into the window memory, without staging copies.
#[allow(clippy::too_many_arguments)]
fn accumulate_here(
    w: &Win,
    o: &Buf,
    result: Option<&Buf>,
    rank: usize,
    addr: usize,
    len: usize,
    op: BuiltinOp,
    basic: i32,
) -> MpiResult<()> {
    let trange = (addr, addr + len);
    // (origin data that is window memory, or that the result overwrites, is copied
    // first)
    let origin_clash =
        overlap(o.range(), trange) || result.is_some_and(|r| overlap(o.range(), r.range()));
    let inv = if op == BuiltinOp::NoOp {
        Cow::Borrowed(&[][..])
    } else if origin_clash {
        Cow::Owned(o.packed().into_owned())
    } else {
        o.packed()
    };
    let direct_result = result.filter(|r| r.t.is_contiguous() && !overlap(r.range(), trange));
    let hw = crate::datatype::predefined::lookup(basic)
        .filter(|&p| atomic::window_can(w) && atomic::capable(p));
    if let Some(p) = hw.filter(|p| len == p.size && atomic::element_could(w, p, addr)) {
        let mut old = [0u8; 8];
        let mut go = || {
            let o = result.map(|_| &mut old[..]);
            // SAFETY: one aligned element of memory every member maps
            // (element_could), inside the target's window (`resolve`); the op is
            // valid for the type (`basic_of`).
            unsafe { atomic::element(addr, p, op, &inv, o) }
        };
        granule_on(w, rank, addr, &mut go)?;
        if let Some(r) = result {
            r.store(&old[..len]);
        }
        return Ok(());
    }
    sync::with_acc_mutex(w, rank, || {
        if let Some(p) = hw.filter(|_| atomic::any_on(w, rank)) {
            let mut old = result.map(|_| vec![0u8; len]);
            // SAFETY: `resolve` checked that the target buffer is window memory
            // addressable here; the mutex is held; `old` is ours.
            unsafe { atomic::run(w, rank, addr, len, p, op, &inv, old.as_deref_mut()) };
            if let (Some(r), Some(old)) = (result, old) {
                r.store(&old);
            }
            return Ok(());
        }
        if let Some(r) = result {
            // SAFETY: `resolve` checked that the target buffer, `len` bytes at `addr`
            // for a contiguous type, is window memory addressable here.
            let cur = unsafe { mem::view(addr, len) };
            match direct_result {
                // SAFETY: the MPI caller's result buffer: `len` bytes for its contiguous
                // type, disjoint from the target buffer (checked).
                Some(_) => unsafe { mem::view_mut(r.addr, len) }.copy_from_slice(cur),
                // (a copy: the result buffer may overlap the target buffer)
                None => {
                    let old = cur.to_vec();
                    r.store(&old)
                }
            }
        }
        if op != BuiltinOp::NoOp {
            // SAFETY: as above; the accumulates of other processes wait for the mutex
            // this closure holds, and other concurrent access to these bytes is
            // erroneous (MPI 4.1 §12.7).
            let cur = unsafe { mem::view_mut(addr, len) };
            combine(op, basic, &inv, cur)?;
        }
        Ok(())
    })
}

/// MPI_Compare_and_swap: one element of predefined `t`.
#[allow(clippy::too_many_arguments)]
pub fn compare_and_swap(
    w: &Win,
    origin: usize,
    compare: usize,
    result: usize,
    t: &TypeRef,
    rank: usize,
    disp: i64,
    call: &str,
) -> MpiResult<()> {
    atomic::note_plain();
    let tg = Tgt {
        rank,
        disp,
        count: 1,
        t: t.clone(),
    };
    let (place, addr) = resolve(w, &tg, call)?;
    let n = t.size();
    let one = |a: usize| Buf {
        addr: a,
        count: 1,
        t: t.clone(),
    };
    let new = one(origin).packed().into_owned();
    let cmp = one(compare).packed().into_owned();
    let p = crate::datatype::predefined::lookup(t.basic_elem().map_or(MPI_DATATYPE_NULL, |b| b.0));
    if let Some(p) = p.filter(|&p| place == Place::Here && atomic::element_could(w, p, addr)) {
        let mut old = vec![0u8; n];
        // SAFETY: one aligned element of memory every member maps (element_could),
        // inside the target's window (`resolve`).
        let mut go = || unsafe { atomic::compare_swap(addr, p, &cmp, &new, &mut old) };
        granule_on(w, rank, addr, &mut go)?;
        one(result).store(&old);
        return Ok(());
    }
    let old = sync::with_acc_mutex(w, rank, || {
        let mut cur = vec![0u8; n];
        read_target(w, place, addr, &tg, &mut cur, call)?;
        if cur == cmp {
            write_target(w, place, addr, &tg, &new, call)?;
        }
        Ok(cur)
    })?;
    one(result).store(&old);
    Ok(())
}
