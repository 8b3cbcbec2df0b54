//! Model checking of the arena's lock-free protocols (src/shm/proto.rs) with loom:
//! `cargo test --release --test loom` (part of `make test`, about a minute).
//!
//! The functions checked are the library's own (`Ring::push`/`pop_all`, `ChanCtl::arrive`
//! /`arrived`/`desc_of`/`room`/`arrive_posted`/`arrived_posted`, `sleep_unless(_for)`,
//! `ring_doorbells(_for)`), instantiated on a loom memory: loom atomics for the control words,
//! loom cells (one per 8-byte word) for the data bytes, and a futex built from a loom
//! mutex and condition variable whose wait has no timeout. Loom runs every interleaving of the threads (up to a preemption bound) and
//! every value a weak-memory load may return, and fails on a data race on a cell (a read
//! or write not ordered by happens-before with a conflicting write), on a wrong value
//! (the assertions below) and on a deadlock (a lost wake-up leaves a thread asleep for
//! ever).
//!
//! Models:
//! - `ring`: one producer pushes frames of 0-40 inline bytes into a 6-frame ring (one
//!   push wraps with a padding frame, one waits for room), one consumer pops them; both
//!   sleep on their doorbells when there is nothing to do.
//! - `channel_2x3`, `channel_3x2`: members run steps as the collectives do: write their
//!   slot of parity s%2, publish a descriptor and arrive, wait for everyone (sleeping on
//!   the doorbell) reading each member's descriptor as soon as it is seen to arrive,
//!   read every slot of the step, write their share of the result buffer of that
//!   parity, and read the whole result of the previous step.
//! - `posted`: two members with post rings of 2 entries take an ordinary step, posted
//!   steps in which one sends (its payload in its post entry) and returns at once while
//!   the other waits for the entry and reads it (`ChanCtl::room`, `arrive_posted`,
//!   `arrived_posted`, `desc_of`), and an ordinary step again, after waiting for every
//!   member to reach the last posted step (coll/post.rs, `Chan::open`).
//! - `doorbell`: a waiter waits for three successive values published by another thread.
//! - `marked_doorbell`: the same with wake marks (`sleep_unless_for`,
//!   `ring_doorbells_for`): a publication whose mark says it is not what the sleeper
//!   waits for skips it.
//!
//! And controls that must fail, to show that the models can: the ring and the channel
//! with their release/acquire orderings weakened to relaxed (loom reports the data race
//! on the frame or slot bytes, or a stale value fails an assertion), all three without
//! the doorbell fences (loom reports the lost wake-up as a deadlock), the marked
//! doorbell with publications marked one step lower than they are (a deadlock), and the posted
//! steps without the room check or without the wait before the ordinary step (a race on
//! a payload or slot cell, or an overwritten descriptor).
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU32, AtomicU64};
use loom::sync::{Arc, Condvar, Mutex};
use shmpi::shm::proto::{
    chan_mark, mark_wakes, ring_doorbells_for, sleep_unless, sleep_unless_for, Bell, ChainPlan,
    ChanCtl, Frame, Ring, Shared, Word32, Word64, ANY, FRAME_HDR,
};
use std::sync::atomic::Ordering;

/// What a control model takes away from the library's protocols.
#[derive(Clone, Copy, PartialEq)]
enum Weak {
    /// Nothing: the real protocols.
    No,
    /// The release stores and acquire loads of the 64-bit words become relaxed.
    Orderings,
    /// The fences of the doorbell protocol are left out.
    Fences,
}

struct W64 {
    a: AtomicU64,
    weak: Weak,
}
impl Word64 for W64 {
    fn load(&self, o: Ordering) -> u64 {
        let o = if self.weak == Weak::Orderings {
            Ordering::Relaxed
        } else {
            o
        };
        self.a.load(o)
    }
    fn store(&self, v: u64, o: Ordering) {
        let o = if self.weak == Weak::Orderings {
            Ordering::Relaxed
        } else {
            o
        };
        self.a.store(v, o)
    }
}

struct W32 {
    a: AtomicU32,
}
impl Word32 for W32 {
    fn load(&self, o: Ordering) -> u32 {
        self.a.load(o)
    }
    fn store(&self, v: u32, o: Ordering) {
        self.a.store(v, o)
    }
    fn fetch_add(&self, v: u32, o: Ordering) -> u32 {
        self.a.fetch_add(v, o)
    }
}

/// A futex: `wait` sleeps (without timeout) unless the word changed; `wake` wakes all.
struct Futex {
    m: Mutex<()>,
    cv: Condvar,
}
impl Futex {
    fn new() -> Futex {
        Futex {
            m: Mutex::new(()),
            cv: Condvar::new(),
        }
    }
    fn wait(&self, w: &W32, v: u32) {
        let g = self.m.lock().unwrap();
        if w.a.load(Ordering::SeqCst) == v {
            drop(self.cv.wait(g).unwrap());
        }
    }
    fn wake(&self) {
        let _g = self.m.lock().unwrap();
        self.cv.notify_all();
    }
}

/// The model's shared memory: atomic words at chosen offsets, data cells from `DATA`.
struct Mem {
    w64: Vec<(usize, W64)>,
    w32: Vec<(usize, W32)>,
    futex: Vec<(usize, Futex)>,
    cells: Vec<UnsafeCell<u64>>,
    weak: Weak,
}

const DATA: usize = 4096;

impl Mem {
    fn new(words: &[usize], bells: &[Bell], data_bytes: usize, weak: Weak) -> Mem {
        Mem {
            w64: words
                .iter()
                .copied()
                .chain(bells.iter().map(|b| b.want))
                .map(|o| {
                    (
                        o,
                        W64 {
                            a: AtomicU64::new(0),
                            weak,
                        },
                    )
                })
                .collect(),
            w32: bells
                .iter()
                .flat_map(|b| [b.bell, b.sleeping])
                .map(|o| {
                    (
                        o,
                        W32 {
                            a: AtomicU32::new(0),
                        },
                    )
                })
                .collect(),
            futex: bells.iter().map(|b| (b.bell, Futex::new())).collect(),
            cells: (0..data_bytes.div_ceil(8))
                .map(|_| UnsafeCell::new(0))
                .collect(),
            weak,
        }
    }

    fn futex(&self, bell: Bell) -> &Futex {
        &self.futex.iter().find(|(o, _)| *o == bell.bell).unwrap().1
    }

    /// Waits until `cond` holds, sleeping on `me`'s doorbell as the library does.
    /// (A condition may consume what it finds, so its first true is the answer.)
    fn wait_until(&self, me: Bell, mut cond: impl FnMut() -> bool) {
        while !cond() {
            if sleep_unless(self, me, &mut cond, |w, v| self.futex(me).wait(w, v)) {
                return;
            }
        }
    }

    /// As [`Mem::wait_until`], sleeping with wake mark `want`.
    fn wait_until_for(&self, me: Bell, want: u64, mut cond: impl FnMut() -> bool) {
        while !cond() {
            if sleep_unless_for(self, me, want, &mut cond, |w, v| self.futex(me).wait(w, v)) {
                return;
            }
        }
    }

    /// Wakes the sleepers among `targets` as the library does after publishing.
    fn wake(&self, targets: &[Bell]) {
        self.wake_for(targets, ANY)
    }

    /// As [`Mem::wake`] after publication `publ` (a wake mark).
    fn wake_for(&self, targets: &[Bell], publ: u64) {
        ring_doorbells_for(self, targets.iter().copied(), publ, |w| {
            let off = self.w32.iter().find(|(_, x)| std::ptr::eq(x, w)).unwrap().0;
            self.futex.iter().find(|(o, _)| *o == off).unwrap().1.wake()
        });
    }

    fn put_u64(&self, off: usize, v: u64) {
        self.put(off, &v.to_le_bytes());
    }
    fn get_u64(&self, off: usize) -> u64 {
        let mut b = [0u8; 8];
        self.get(off, &mut b);
        u64::from_le_bytes(b)
    }
}

impl Shared for Mem {
    type W64 = W64;
    type W32 = W32;
    fn w64(&self, off: usize) -> &W64 {
        &self
            .w64
            .iter()
            .find(|(o, _)| *o == off)
            .unwrap_or_else(|| panic!("no 64-bit word at {off}"))
            .1
    }
    fn w32(&self, off: usize) -> &W32 {
        &self
            .w32
            .iter()
            .find(|(o, _)| *o == off)
            .unwrap_or_else(|| panic!("no 32-bit word at {off}"))
            .1
    }
    fn put(&self, off: usize, src: &[u8]) {
        let off = off - DATA;
        for (k, &b) in src.iter().enumerate() {
            let (w, sh) = ((off + k) / 8, 8 * ((off + k) % 8));
            self.cells[w].with_mut(|p| {
                // SAFETY: loom checks that this access is race-free.
                unsafe { *p = (*p & !(0xff << sh)) | ((b as u64) << sh) }
            });
        }
    }
    fn get(&self, off: usize, dst: &mut [u8]) {
        let off = off - DATA;
        for (k, b) in dst.iter_mut().enumerate() {
            let (w, sh) = ((off + k) / 8, 8 * ((off + k) % 8));
            // SAFETY: loom checks that this access is race-free.
            *b = self.cells[w].with(|p| unsafe { (*p >> sh) as u8 });
        }
    }
    fn fence_seqcst(&self) {
        if self.weak != Weak::Fences {
            loom::sync::atomic::fence(Ordering::SeqCst);
        }
    }
}

fn bell(i: usize) -> Bell {
    Bell {
        bell: 64 * i,
        sleeping: 64 * i + 4,
        want: 64 * i + 16,
    }
}

fn model(bound: usize, f: impl Fn() + Send + Sync + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(f);
}

/// Runs `member(m, 1)` in a second thread and `member(m, 0)` in this one.
fn two_members(m: Arc<Mem>, member: impl Fn(Arc<Mem>, usize) + Copy + Send + 'static) {
    let m2 = m.clone();
    let t = loom::thread::spawn(move || member(m2, 1));
    member(m, 0);
    t.join().unwrap();
}

// ---------------------------------------------------------------- ring

const INLINE: [usize; 4] = [8, 40, 16, 0];

fn payload(k: usize, i: usize) -> u8 {
    (k * 31 + i + 1) as u8
}

fn ring_model(weak: Weak) {
    let ring = Ring {
        head: 1024,
        tail: 1088,
        data: DATA,
        cap: 6 * FRAME_HDR,
    };
    let (pb, cb) = (bell(0), bell(1));
    let m = Arc::new(Mem::new(&[ring.head, ring.tail], &[pb, cb], ring.cap, weak));
    let m2 = m.clone();
    let producer = loom::thread::spawn(move || {
        // the producer's last look at the tail, kept from push to push, as the
        // point-to-point engine keeps it (`Ring::push_seen`)
        let mut tail_seen = 0;
        for (k, &inline) in INLINE.iter().enumerate() {
            let f = Frame {
                kind: 1,
                fbytes: 0,
                ctx: 7,
                tag: k as i32,
                len: inline,
                id: k as u64,
            };
            m2.wait_until(pb, || {
                let fill = |at| {
                    let p: Vec<u8> = (0..inline).map(|i| payload(k, i)).collect();
                    m2.put(at, &p);
                };
                ring.push_seen(&*m2, f, inline, fill, &mut tail_seen)
            });
            m2.wake(&[cb]);
        }
    });
    let mut next = 0;
    while next < INLINE.len() {
        m.wait_until(cb, || {
            ring.pop_all(&*m, |f, at| {
                assert_eq!((f.id, f.tag, f.ctx), (next as u64, next as i32, 7));
                assert_eq!(f.len, INLINE[next]);
                let mut p = vec![0u8; f.len];
                m.get(at, &mut p);
                for (i, &x) in p.iter().enumerate() {
                    assert_eq!(x, payload(next, i), "frame {next} byte {i}");
                }
                next += 1;
            })
        });
        m.wake(&[pb]);
    }
    producer.join().unwrap();
}

#[test]
fn ring() {
    model(3, || ring_model(Weak::No));
}

// ---------------------------------------------------------------- channel

fn channel_model(n: usize, steps: u64, weak: Weak) {
    let ctl = ChanCtl {
        base: 1024,
        stride: 128,
        posts: 1 << 20,
        post_entry: 64,
        post_k: 32,
        post_gen: 0,
    };
    let slot = |i: usize, p: usize| DATA + (2 * i + p) * 8;
    let result = move |i: usize, p: usize| DATA + 16 * n + (p * n + i) * 8;
    let mut words = Vec::new();
    for i in 0..n {
        words.push(ctl.counter(i));
        words.push(ctl.posted_at(i));
        for p in 0..2 {
            words.extend((0..3).map(|k| ctl.desc_at(i, p) + 8 * k));
        }
    }
    let bells: Vec<Bell> = (0..n).map(bell).collect();
    let m = Arc::new(Mem::new(&words, &bells, 32 * n, weak));
    let member = move |m: Arc<Mem>, me: usize| {
        let bells: Vec<Bell> = (0..n).map(bell).collect();
        let others: Vec<Bell> = (0..n).filter(|&j| j != me).map(bell).collect();
        for s in 1..=steps {
            let p = (s % 2) as usize;
            m.put_u64(slot(me, p), 100 * s + me as u64);
            ctl.arrive(&*m, me, s, Some([s, me as u64, 1000 + s]));
            m.wake(&others);
            // Descriptors are read as each member is seen to arrive, as the library does.
            let mut first = 0;
            m.wait_until(bells[me], || {
                ctl.arrived_then(&*m, n, s, &mut first, |i| {
                    let d = ctl.desc_of(&*m, i, s);
                    assert_eq!(d, [s, i as u64, 1000 + s], "desc {i} step {s}");
                })
            });
            for i in 0..n {
                assert_eq!(
                    m.get_u64(slot(i, p)),
                    100 * s + i as u64,
                    "slot {i} step {s}"
                );
                if s > 1 {
                    let q = 1 - p;
                    assert_eq!(m.get_u64(result(i, q)), 200 * (s - 1) + i as u64);
                }
            }
            m.put_u64(result(me, p), 200 * s + me as u64);
        }
    };
    let threads: Vec<_> = (1..n)
        .map(|me| {
            let m = m.clone();
            loom::thread::spawn(move || member(m, me))
        })
        .collect();
    member(m, 0);
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn channel_2x3() {
    model(3, || channel_model(2, 3, Weak::No));
}

#[test]
fn channel_3x2() {
    model(2, || channel_model(3, 2, Weak::No));
}

// ---------------------------------------------------------------- posted steps

/// What a posted-steps control model leaves out.
#[derive(Clone, Copy, PartialEq)]
enum Posted {
    /// Nothing: the library's protocol.
    Whole,
    /// The room check before writing a post entry (coll/post.rs `room`).
    NoRoom,
    /// The wait for every member before an ordinary step (coll/mod.rs `Chan::open`).
    NoDrain,
}

/// Two members, post rings of 2 entries: an ordinary step 1 (both write their slot of
/// parity 1 and read the other's), `posted` (odd) posted steps in which member 0 sends
/// (its payload in its post entry, as the root of a small MPI_Bcast) and returns at once
/// while member 1 waits for each entry and reads it, then an ordinary step whose slots
/// are those of step 1 again. Every member writes its post entry (descriptor, step) in
/// each posted step, once `room` allows it; before the last step each waits for every
/// counter to reach the last posted step. With 3 posted steps the third reuses the
/// first's entry; with 1, only the wait before the ordinary step keeps member 0 from
/// overwriting the slot member 1 reads in step 1.
fn posted_model(posted: u64, leave_out: Posted) {
    let k = 2;
    let ctl = ChanCtl {
        base: 1024,
        stride: 128,
        posts: 2048,
        post_entry: 64,
        post_k: k,
        post_gen: 1,
    };
    // Data cells: the slots of parity 1, then each member's payload cells (one per entry).
    let slot = |i: usize| DATA + 8 * i;
    let payload = move |s: u64| DATA + 16 + 8 * (s % k) as usize;
    let mut words = Vec::new();
    for i in 0..2 {
        words.push(ctl.counter(i));
        words.push(ctl.posted_at(i));
        for p in 0..2 {
            words.extend((0..3).map(|w| ctl.desc_at(i, p) + 8 * w));
        }
        for e in 0..k {
            words.extend((0..4).map(|w| ctl.post(i, e) + 8 * w));
        }
    }
    let m = Arc::new(Mem::new(&words, &[bell(0), bell(1)], 32, Weak::No));
    let member = move |m: Arc<Mem>, me: usize| {
        let other = [bell(1 - me)];
        let ordinary = |s: u64| {
            m.put_u64(slot(me), 100 * s + me as u64);
            ctl.arrive(&*m, me, s, Some([s, me as u64, 9]));
            m.wake(&other);
            let mut first = 0;
            m.wait_until(bell(me), || {
                ctl.arrived_then(&*m, 2, s, &mut first, |i| {
                    assert_eq!(
                        ctl.desc_of(&*m, i, s),
                        [s, i as u64, 9],
                        "desc {i} step {s}"
                    );
                })
            });
            let them = 1 - me;
            assert_eq!(
                m.get_u64(slot(them)),
                100 * s + them as u64,
                "slot step {s}"
            );
        };
        ordinary(1);
        let last = 1 + posted;
        for s in 2..=last {
            if leave_out != Posted::NoRoom && s > k {
                m.wait_until(bell(me), || ctl.room(&*m, 2, s).is_some());
            }
            if me == 0 {
                m.put_u64(payload(s), 10 * s);
            }
            ctl.arrive_posted(&*m, me, s, [s, me as u64, 7]);
            m.wake(&other);
            if me == 1 {
                let mut d = None;
                m.wait_until(bell(me), || {
                    d = ctl.arrived_posted(&*m, 0, s);
                    d.is_some()
                });
                assert_eq!(d, Some([s, 0, 7]), "posted desc step {s}");
                assert_eq!(m.get_u64(payload(s)), 10 * s, "payload step {s}");
            }
        }
        if leave_out != Posted::NoDrain {
            let mut first = 0;
            m.wait_until(bell(me), || ctl.arrived(&*m, 2, last, &mut first));
        }
        ordinary(last + 1);
    };
    two_members(m, member);
}

#[test]
fn posted() {
    model(2, || posted_model(3, Posted::Whole));
    model(3, || posted_model(1, Posted::Whole));
}

// ---------------------------------------------------------------- chain

/// What a chain control model leaves out.
#[derive(Clone, Copy, PartialEq)]
enum Chained {
    /// Nothing: the library's schedule.
    Whole,
    /// The head's wait for room in the ring before it deposits a chunk over an old one.
    NoRoom,
    /// A receiver's wait for the last member before it copies a chunk out.
    NoOutWait,
}

/// Two members, a commutative op (member 0 deposits, member 1 folds): 3 chunks through a
/// ring of 2 entries (the third reuses the first's), on the schedule of coll/chain.rs
/// ([`ChainPlan`]), with `receiver` copying each chunk out. Member 1 folds `x1 + entry`
/// into the entry once member 0's counter says it deposited the chunk; the receiver
/// checks the sum once member 1's counter says it folded it; the head writes over an
/// entry only once every counter reached the plan's room step. Every wait sleeps with the
/// wake mark of the step it waits for, as the library's waits do. Then both wait for
/// each other's last step (the library's closing step).
fn chain_model(receiver: usize, leave_out: Chained) {
    let ctl = ChanCtl {
        base: 1024,
        stride: 128,
        posts: 1 << 20,
        post_entry: 64,
        post_k: 32,
        post_gen: 0,
    };
    let plan = ChainPlan::new(3, 2);
    let entry = move |t: u64| DATA + 8 * plan.entry(t) as usize;
    let x = |me: usize, t: u64| 10 * t + me as u64 + 1;
    let words: Vec<usize> = (0..2).map(|i| ctl.counter(i)).collect();
    let m = Arc::new(Mem::new(&words, &[bell(0), bell(1)], 16, Weak::No));
    let member = move |m: Arc<Mem>, me: usize| {
        let other = [bell(1 - me)];
        let wait = |i: usize, s: u64| {
            m.wait_until_for(bell(me), chan_mark(0, s), || ctl.reached(&*m, i, s))
        };
        for t in 1..=plan.steps() {
            if let Some(c) = plan.fold(t) {
                if me == 0 {
                    if let Some(r) = plan.room(c).filter(|_| leave_out != Chained::NoRoom) {
                        wait(0, r);
                        wait(1, r);
                    }
                    m.put_u64(entry(c), x(0, c));
                } else {
                    wait(0, c);
                    let v = m.get_u64(entry(c));
                    m.put_u64(entry(c), x(1, c) + v);
                }
            }
            if let Some(u) = plan.out(t).filter(|_| me == receiver) {
                if leave_out != Chained::NoOutWait {
                    wait(1, u);
                }
                assert_eq!(m.get_u64(entry(u)), x(0, u) + x(1, u), "chunk {u}");
            }
            ctl.arrive(&*m, me, t, None);
            m.wake_for(&other, chan_mark(0, t));
        }
        wait(1 - me, plan.steps());
    };
    two_members(m, member);
}

#[test]
fn chain() {
    model(3, || chain_model(0, Chained::Whole));
    model(3, || chain_model(1, Chained::Whole));
}

// ---------------------------------------------------------------- doorbell

fn doorbell_model(weak: Weak) {
    let (wb, data) = (bell(0), 1024);
    let m = Arc::new(Mem::new(&[data], &[wb], 8, weak));
    let m2 = m.clone();
    let publisher = loom::thread::spawn(move || {
        for r in 1..=3 {
            m2.w64(data).store(r, Ordering::Release);
            m2.wake(&[wb]);
        }
    });
    // Waits for each value in turn (a value may be overtaken by the next one).
    let mut seen = 0;
    while seen < 3 {
        m.wait_until(wb, || m.w64(data).load(Ordering::Acquire) > seen);
        seen = m.w64(data).load(Ordering::Acquire);
    }
    publisher.join().unwrap();
}

#[test]
fn doorbell() {
    model(3, || doorbell_model(Weak::No));
}

/// A waiter sleeps with wake marks (`sleep_unless_for`) until a channel counter reaches
/// 2, then 4; the publisher raises the counter 1, 2, 3, 4 and rings with each value's
/// mark (`ring_doorbells_for`), so the rings of 1 and 3 skip the sleeper. With
/// `low_marks` the publisher marks each value one lower than it is, so the ring that
/// should wake the waiter skips it too: a control, which must deadlock.
fn marked_doorbell_model(low_marks: bool) {
    let (wb, counter) = (bell(0), 1024);
    let m = Arc::new(Mem::new(&[counter], &[wb], 8, Weak::No));
    let m2 = m.clone();
    let publisher = loom::thread::spawn(move || {
        for v in 1..=4u64 {
            m2.w64(counter).store(v, Ordering::Release);
            m2.wake_for(&[wb], chan_mark(5, if low_marks { v - 1 } else { v }));
        }
    });
    for want in [2, 4] {
        m.wait_until_for(wb, chan_mark(5, want), || {
            m.w64(counter).load(Ordering::Acquire) >= want
        });
    }
    publisher.join().unwrap();
}

#[test]
fn marked_doorbell() {
    model(3, || marked_doorbell_model(false));
    // the marks' rule itself
    assert!(mark_wakes(chan_mark(5, 4), chan_mark(5, 4)));
    assert!(!mark_wakes(chan_mark(5, 4), chan_mark(5, 3)));
    assert!(!mark_wakes(chan_mark(5, 4), chan_mark(5, 5)));
    assert!(mark_wakes(chan_mark(5, 4), chan_mark(6, 1)));
    assert!(mark_wakes(ANY, chan_mark(5, 1)) && mark_wakes(chan_mark(5, 4), ANY));
    assert_eq!(chan_mark(5, 1 << 52), ANY);
}

// ---------------------------------------------------------------- controls

/// The control models, each expected to fail with one of the given messages. Loom's failure
/// aborts the process, so each runs in a child process of this test binary.
const CONTROLS: &[(&str, &str)] = &[
    ("control_ring_relaxed", "Causality violation"),
    ("control_ring_no_fences", "deadlock"),
    // (a stale descriptor or slot value, or the race on the slot itself)
    ("control_channel_relaxed", "Causality violation|desc|slot"),
    ("control_channel_no_fences", "deadlock"),
    // (the race on a payload or slot cell, or the stale value read)
    (
        "control_posted_no_room",
        "Causality violation|payload|posted desc",
    ),
    ("control_posted_no_drain", "Causality violation|slot"),
    ("control_doorbell_no_fences", "deadlock"),
    // (the race on a ring entry, or the stale sum read)
    ("control_chain_no_room", "Causality violation|chunk"),
    ("control_chain_no_out_wait", "Causality violation|chunk"),
    ("control_marked_doorbell_low_marks", "deadlock"),
];

#[test]
fn controls_fail() {
    let exe = std::env::current_exe().unwrap();
    for (name, want) in CONTROLS {
        let out = std::process::Command::new(&exe)
            .args(["--ignored", "--exact", name, "--test-threads", "1"])
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && want.split('|').any(|w| text.contains(w)),
            "control {name} should fail with '{want}', got {}:
{text}",
            out.status
        );
    }
}

#[test]
#[ignore = "a control: must fail (run by controls_fail)"]
fn control_ring_relaxed() {
    model(3, || ring_model(Weak::Orderings));
}

#[test]
#[ignore = "a control: must fail (run by controls_fail)"]
fn control_ring_no_fences() {
    model(3, || ring_model(Weak::Fences));
}

#[test]
#[ignore = "a control: must fail (run by controls_fail)"]
fn control_channel_relaxed() {
    model(2, || channel_model(2, 2, Weak::Orderings));
}

#[test]
#[ignore = "a control: must fail (run by controls_fail)"]
fn control_channel_no_fences() {
    model(2, || channel_model(2, 2, Weak::Fences));
}

#[test]
#[ignore = "a control: must fail (run by controls_fail)"]
fn control_doorbell_no_fences() {
    model(3, || doorbell_model(Weak::Fences));
}

#[test]
#[ignore = "a control: must fail (run by controls_fail)"]
fn control_marked_doorbell_low_marks() {
    model(3, || marked_doorbell_model(true));
}

#[test]
#[ignore = "a control: must fail (run by controls_fail)"]
fn control_posted_no_room() {
    model(2, || posted_model(3, Posted::NoRoom));
}

#[test]
#[ignore = "a control: must fail (run by controls_fail)"]
fn control_posted_no_drain() {
    model(3, || posted_model(1, Posted::NoDrain));
}

#[test]
#[ignore = "a control: must fail (run by controls_fail)"]
fn control_chain_no_room() {
    model(2, || chain_model(1, Chained::NoRoom));
}

#[test]
#[ignore = "a control: must fail (run by controls_fail)"]
fn control_chain_no_out_wait() {
    model(2, || chain_model(0, Chained::NoOutWait));
}
