//! Windows on the processes' own memory (MPI_Win_create, dynamic windows) where the
//! single-copy cross-process copies of shm/peer.rs are not to be had: the system
//! refuses them (a ptrace policy, a seccomp filter), or `SHMPI_DIRECT=0` turns them
//! off. Each member then reads and writes its own memory on the others' behalf.
//!
//! The window's shared mapping holds a mailbox per (target, origin) pair: a header
//! (request and done counters, the kind of access, the number of pieces, the bytes of
//! data, a status), the target pieces as (address, length) pairs and the data. An
//! origin fills its mailbox at the target, bumps the request counter, rings the
//! target's doorbell and waits, running the progress engine (so it serves its own
//! mailboxes meanwhile); the target serves its mailboxes from the progress engine's
//! pollers (a window served so counts as a pending operation while it lives), that is
//! inside any MPI call that waits or progresses, checks each piece against its own
//! window (or its attached regions), moves the data, and publishes the done counter.
//! Transfers larger than a mailbox go in several requests.
//!
//! Passive-target epochs on such windows so need the target to enter MPI now and then
//! (as MPI 4.1 §12.7 allows); the accumulate family keeps its atomicity from the
//! accumulate mutex in the mapping, as for the other windows.
//!
//! Unsafe code here (each block has its SAFETY line): copies between the mailbox (in
//! the mapping) and this process's buffers or its own window memory.
#![allow(unsafe_code)]
use super::{mem, Win};
use crate::abi::*;
use crate::error::{err, MpiResult};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Offsets in a mailbox's header.
const H_REQ: usize = 0;
const H_DONE: usize = 4;
const H_KIND: usize = 8;
const H_PIECES: usize = 12;
const H_LEN: usize = 16;
const H_STATUS: usize = 24;
const HEAD: usize = 32;
/// Kinds of access.
const WRITE: u32 = 0;
const READ: u32 = 1;
/// Statuses.
const OK: u32 = 0;
const OUTSIDE: u32 = 1;

/// A window's mailboxes: where they start in the mapping and the bytes of each.
pub struct Mailboxes {
    off: usize,
    slot: usize,
    /// This process's threads take turns at their mailboxes.
    origin: Mutex<()>,
}

impl Mailboxes {
    /// The mailboxes of a window of `n` members at offset `off`.
    pub fn new(off: usize, n: usize) -> Mailboxes {
        Mailboxes {
            off,
            slot: slot_bytes(n),
            origin: Mutex::new(()),
        }
    }
    /// The bytes all `n * n` of them take.
    pub fn bytes(n: usize) -> usize {
        n * n * slot_bytes(n)
    }
    fn at(&self, n: usize, t: usize, o: usize) -> usize {
        self.off + (t * n + o) * self.slot
    }
}

/// Bytes of one mailbox: 64 KiB, less for large windows (up to 64 MiB in all, at least
/// a page each).
fn slot_bytes(n: usize) -> usize {
    let page = mem::page();
    ((64usize << 20) / (n * n).max(1)).clamp(page, 64 << 10) / page * page
}

/// The windows this process serves, and how many (read without the lock by the poller,
/// which runs in every progress pass while any operation is pending).
static SERVED: Mutex<Vec<Arc<Win>>> = Mutex::new(Vec::new());
static SERVING: AtomicUsize = AtomicUsize::new(0);

/// Starts serving window `w` (it has mailboxes).
pub fn enlist(w: &Arc<Win>) {
    SERVED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(w.clone());
    SERVING.fetch_add(1, Ordering::Relaxed);
    crate::progress::note_started(1);
}

/// Stops serving window `w` (MPI_Win_free: nobody accesses it any more).
pub fn delist(w: &Win) {
    let mut list = SERVED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = list.iter().position(|x| std::ptr::eq(&**x, w)) {
        list.swap_remove(i);
        SERVING.fetch_sub(1, Ordering::Relaxed);
        crate::progress::note_done(1);
    }
}

/// The progress engine's poller: serves every mailbox of this process that holds a
/// request.
pub fn poll() {
    if SERVING.load(Ordering::Relaxed) == 0 {
        return;
    }
    // (another thread serving meanwhile serves for this one too)
    let Ok(list) = SERVED.try_lock() else {
        return;
    };
    for w in list.iter() {
        serve(w);
    }
}

fn serve(w: &Win) {
    let Some(mb) = &w.mailboxes else {
        return;
    };
    let (n, me) = (w.n(), w.me());
    for o in (0..n).filter(|&o| o != me) {
        let s = mb.at(n, me, o);
        let req = w.map.u32_at(s + H_REQ).load(Ordering::Acquire);
        if req == w.map.u32_at(s + H_DONE).load(Ordering::Relaxed) {
            continue;
        }
        let kind = w.map.u32_at(s + H_KIND).load(Ordering::Relaxed);
        let count = w.map.u32_at(s + H_PIECES).load(Ordering::Relaxed) as usize;
        let len = w.map.u64_at(s + H_LEN).load(Ordering::Relaxed) as usize;
        // (what an origin wrote is checked before it is used: the header and the data
        // inside the mailbox, the pieces adding up to the data, each inside the window)
        let room = mb.slot.checked_sub(HEAD + 16 * count);
        let pieces: Pieces = match room {
            Some(_) => (0..count)
                .map(|i| {
                    let e = s + HEAD + 16 * i;
                    (
                        w.map.u64_at(e).load(Ordering::Relaxed) as usize,
                        w.map.u64_at(e + 8).load(Ordering::Relaxed) as usize,
                    )
                })
                .collect(),
            None => Vec::new(),
        };
        let data = s + HEAD + 16 * count;
        let total = pieces.iter().try_fold(0usize, |t, p| t.checked_add(p.1));
        let fits = room.is_some_and(|r| len <= r)
            && total == Some(len)
            && pieces.iter().all(|&p| inside(w, p));
        let status = if fits {
            let mut pos = 0;
            for &(a, l) in &pieces {
                let box_addr = w.map.addr(data + pos);
                // SAFETY: the piece lies in this process's window memory (checked just
                // above against its window or attached regions) and the data bytes in
                // the mailbox (`fits`); the origin does not touch its mailbox until the
                // done counter says so, and other access to these window bytes during
                // the operation is erroneous (MPI 4.1 §12.7).
                unsafe {
                    if kind == READ {
                        std::ptr::copy(a as *const u8, box_addr as *mut u8, l);
                    } else {
                        std::ptr::copy(box_addr as *const u8, a as *mut u8, l);
                    }
                }
                pos += l;
            }
            OK
        } else {
            OUTSIDE
        };
        w.map.u32_at(s + H_STATUS).store(status, Ordering::Relaxed);
        w.map.u32_at(s + H_DONE).store(req, Ordering::Release);
        super::sync::wake(w, o);
    }
}

/// Whether the piece lies in this process's window memory.
fn inside(w: &Win, (a, l): (usize, usize)) -> bool {
    let within = |b: usize, size: usize| a >= b && a.checked_add(l).is_some_and(|e| e <= b + size);
    if l == 0 {
        return true;
    }
    if w.flavor == MPI_WIN_FLAVOR_DYNAMIC {
        return w.attached(w.me()).iter().any(|&(b, s)| within(b, s));
    }
    let local = w.local();
    within(local.base, local.size)
}

/// Writes the packed stream `data` over target `t`'s `pieces` (addresses in its
/// memory), through target `t`.
pub fn write(w: &Win, t: usize, pieces: &[(usize, usize)], data: &[u8]) -> MpiResult<()> {
    for (chunk, pos, len) in chunks(w, pieces) {
        request(w, t, WRITE, &chunk, |area| {
            // SAFETY: `area` is the mailbox's data area, room for `len` bytes (chunks).
            unsafe { mem::copy_in(area, &data[pos..pos + len]) }
        })?;
    }
    Ok(())
}

/// Reads target `t`'s `pieces` as a packed stream into `out`, through target `t`.
pub fn read(w: &Win, t: usize, pieces: &[(usize, usize)], out: &mut [u8]) -> MpiResult<()> {
    for (chunk, pos, len) in chunks(w, pieces) {
        let area = request(w, t, READ, &chunk, |_| {})?;
        // SAFETY: the mailbox's data area holds the `len` bytes the target read; the
        // target does not touch it again before the next request.
        unsafe { mem::copy_out(area, &mut out[pos..pos + len]) };
    }
    Ok(())
}

/// Target pieces: (address, length).
type Pieces = Vec<(usize, usize)>;

/// The pieces split into requests that fit a mailbox: (pieces, stream position,
/// bytes).
fn chunks(w: &Win, pieces: &[(usize, usize)]) -> Vec<(Pieces, usize, usize)> {
    let cap = w.mailboxes.as_ref().map_or(0, |m| m.slot) - HEAD;
    let mut out = Vec::new();
    let (mut cur, mut start, mut bytes) = (Vec::new(), 0usize, 0usize);
    for &(a, l) in pieces.iter().filter(|p| p.1 > 0) {
        let mut done = 0;
        while done < l {
            let room = cap.saturating_sub(16 * (cur.len() + 1) + bytes);
            if room == 0 {
                out.push((std::mem::take(&mut cur), start, bytes));
                start += bytes;
                bytes = 0;
                continue;
            }
            let k = room.min(l - done);
            cur.push((a + done, k));
            bytes += k;
            done += k;
        }
    }
    if !cur.is_empty() {
        out.push((cur, start, bytes));
    }
    out
}

/// One request to target `t`: `fill` writes the data area (at the address it gets);
/// the data area's address once served, MPI_ERR_RMA_RANGE if the target refused the
/// pieces.
fn request(
    w: &Win,
    t: usize,
    kind: u32,
    pieces: &[(usize, usize)],
    fill: impl FnOnce(usize),
) -> MpiResult<usize> {
    let mb = w
        .mailboxes
        .as_ref()
        .expect("a window served by its members has mailboxes");
    let _turn = mb.origin.lock().unwrap_or_else(|e| e.into_inner());
    let s = mb.at(w.n(), t, w.me());
    let len: usize = pieces.iter().map(|p| p.1).sum();
    w.map.u32_at(s + H_KIND).store(kind, Ordering::Relaxed);
    w.map
        .u32_at(s + H_PIECES)
        .store(pieces.len() as u32, Ordering::Relaxed);
    w.map.u64_at(s + H_LEN).store(len as u64, Ordering::Relaxed);
    for (i, &(a, l)) in pieces.iter().enumerate() {
        let e = s + HEAD + 16 * i;
        w.map.u64_at(e).store(a as u64, Ordering::Relaxed);
        w.map.u64_at(e + 8).store(l as u64, Ordering::Relaxed);
    }
    let area = w.map.addr(s + HEAD + 16 * pieces.len());
    fill(area);
    let r = w.map.u32_at(s + H_REQ);
    let req = r.load(Ordering::Relaxed).wrapping_add(1);
    r.store(req, Ordering::Release);
    super::sync::wake(w, t);
    let done = w.map.u32_at(s + H_DONE);
    super::sync::wait_for(
        w,
        // (short: the hang report keeps 64 bytes of it)
        || format!("rank {t} to serve it"),
        || done.load(Ordering::Acquire) == req,
        None,
    )?;
    if w.map.u32_at(s + H_STATUS).load(Ordering::Relaxed) != OK {
        return Err(err(
            MPI_ERR_RMA_RANGE,
            format!("rank {t} found the target bytes outside its window memory"),
        ));
    }
    Ok(area)
}
