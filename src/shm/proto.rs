//! The lock-free protocols of the arena, written once over an abstract shared memory
//! ([`Shared`]): the library runs them on the mapped arena ([`Arena`]), the model checker
//! runs the very same functions on loom's atomics and cells (tests/loom.rs, `cargo test
//! --release --test loom`), and the unit tests below run them on real threads, natively
//! and under the Rust interpreter's data-race detector (README, "Reliability").
//!
//! Three protocols:
//!
//! - [`Ring`]: the single-producer single-consumer ring of message frames of one ordered
//!   pair of ranks (p2p/mod.rs). The producer writes a frame (header, inline payload, a
//!   padding frame when the frame would straddle the end) at `head`, then publishes the
//!   new `head` with a release store; the consumer reads frames up to the `head` it
//!   acquired and frees them by a release store of `tail`, which the producer acquires
//!   before reusing the space.
//! - [`ChanCtl`]: the step protocol of a collective channel (coll/mod.rs). Member `i`
//!   arrives at step `s` by publishing its argument-agreement descriptor (first step of
//!   a collective, parity `s % 2`) and then `counter[i] = s` (release); a step is complete
//!   for a member once it acquired every counter `>= s`. The data buffers are double
//!   buffered by parity: a member writes parity `s % 2` only before arriving at `s` and
//!   reads it only after the step completed, so nobody overwrites what a slower member
//!   still reads (the model checks this claim on the cells' happens-before relation).
//! - The doorbell ([`sleep_unless`], [`ring_doorbells`]): a waiter stores
//!   `sleeping = 1`, reads its doorbell, fences and re-checks its condition, and sleeps on
//!   the doorbell value it read only if the condition is still false; a publisher makes
//!   its data visible with a release store, fences, and bumps and wakes the doorbell of
//!   every target whose `sleeping` is set. The two fences make this a Dekker pair: the
//!   waiter sees the data or the publisher sees `sleeping`, so no wake-up is lost (the
//!   model checks it with a futex whose wait has no timeout: a lost wake-up is a
//!   deadlock). A waiter may also leave a wake mark ([`sleep_unless_for`]): then a
//!   collective publication of another step of the same channel skips it
//!   ([`ring_doorbells_for`]).
//!
//! Not modelled: the rendezvous pipe (the same head/tail pattern as the ring), the
//! channel allocator, the job's abort record, and the process boundary itself (the
//! model's "ranks" are threads sharing one address space, which is what the mapping
//! gives the ranks).
#![deny(unsafe_code)]
use super::Arena;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// A 64-bit atomic word of shared memory.
pub trait Word64 {
    fn load(&self, o: Ordering) -> u64;
    fn store(&self, v: u64, o: Ordering);
}

/// A 32-bit atomic word of shared memory.
pub trait Word32 {
    fn load(&self, o: Ordering) -> u32;
    fn store(&self, v: u32, o: Ordering);
    fn fetch_add(&self, v: u32, o: Ordering) -> u32;
}

/// The shared memory a protocol runs on: atomic words and plain bytes at offsets.
pub trait Shared {
    type W64: Word64;
    type W32: Word32;
    fn w64(&self, off: usize) -> &Self::W64;
    fn w32(&self, off: usize) -> &Self::W32;
    /// Copies `src` to `off` (the caller holds the protocol's write permission).
    fn put(&self, off: usize, src: &[u8]);
    /// Copies the bytes at `off` into `dst` (the caller holds read permission).
    fn get(&self, off: usize, dst: &mut [u8]);
    /// A sequentially consistent fence.
    fn fence_seqcst(&self);
}

impl Word64 for AtomicU64 {
    #[inline]
    fn load(&self, o: Ordering) -> u64 {
        AtomicU64::load(self, o)
    }
    #[inline]
    fn store(&self, v: u64, o: Ordering) {
        AtomicU64::store(self, v, o)
    }
}

impl Word32 for AtomicU32 {
    #[inline]
    fn load(&self, o: Ordering) -> u32 {
        AtomicU32::load(self, o)
    }
    #[inline]
    fn store(&self, v: u32, o: Ordering) {
        AtomicU32::store(self, v, o)
    }
    #[inline]
    fn fetch_add(&self, v: u32, o: Ordering) -> u32 {
        AtomicU32::fetch_add(self, v, o)
    }
}

impl Shared for Arena {
    type W64 = AtomicU64;
    type W32 = AtomicU32;
    #[inline]
    fn w64(&self, off: usize) -> &AtomicU64 {
        self.u64_at(off)
    }
    #[inline]
    fn w32(&self, off: usize) -> &AtomicU32 {
        self.u32_at(off)
    }
    #[inline]
    fn put(&self, off: usize, src: &[u8]) {
        self.write(off, src)
    }
    #[inline]
    fn get(&self, off: usize, dst: &mut [u8]) {
        self.read(off, dst)
    }
    #[inline]
    fn fence_seqcst(&self) {
        fence(Ordering::SeqCst)
    }
}

// ---------------------------------------------------------------- frame ring

/// Size of a frame header; every frame is a multiple of it.
pub const FRAME_HDR: usize = 32;
/// The frame kind that only fills the ring up to its end.
pub const F_PAD: u32 = 3;

/// A frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub kind: u32,
    /// Bytes the frame takes in the ring (set by [`Ring::push`]).
    pub fbytes: usize,
    pub ctx: u32,
    pub tag: i32,
    pub len: usize,
    pub id: u64,
}

impl Frame {
    pub fn encode(&self) -> [u8; FRAME_HDR] {
        let mut h = [0u8; FRAME_HDR];
        h[0..4].copy_from_slice(&self.kind.to_le_bytes());
        h[4..8].copy_from_slice(&(self.fbytes as u32).to_le_bytes());
        h[8..12].copy_from_slice(&self.ctx.to_le_bytes());
        h[12..16].copy_from_slice(&self.tag.to_le_bytes());
        h[16..24].copy_from_slice(&(self.len as u64).to_le_bytes());
        h[24..32].copy_from_slice(&self.id.to_le_bytes());
        h
    }
    pub fn decode(h: &[u8; FRAME_HDR]) -> Frame {
        let u32_ = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap());
        let u64_ = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap());
        Frame {
            kind: u32_(0),
            fbytes: u32_(4) as usize,
            ctx: u32_(8),
            tag: u32_(12) as i32,
            len: u64_(16) as usize,
            id: u64_(24),
        }
    }
}

/// One SPSC ring: the offsets of its `head` (written by the producer only) and `tail`
/// (consumer only) words, of its data and its capacity (a multiple of [`FRAME_HDR`]).
#[derive(Clone, Copy, Debug)]
pub struct Ring {
    pub head: usize,
    pub tail: usize,
    pub data: usize,
    pub cap: usize,
}

impl Ring {
    /// Producer: appends `f` with `inline` payload bytes, which `fill` writes at the
    /// offset it is given, and publishes it. False if the ring has no room now. The
    /// caller then rings the consumer's doorbell ([`ring_doorbells`]).
    pub fn push<S: Shared + ?Sized>(
        &self,
        s: &S,
        f: Frame,
        inline: usize,
        fill: impl FnOnce(usize),
    ) -> bool {
        self.push_seen(s, f, inline, fill, &mut 0)
    }

    /// As [`Ring::push`], with `tail_seen`, the producer's last look at the consumer's
    /// `tail` (0 at first): the shared word is read again only when that look leaves no
    /// room. `tail` only grows, so an old look never overstates the room, and most
    /// pushes then skip a read of a line the consumer writes (a cache miss each on the
    /// sender's path of a ping-pong).
    pub fn push_seen<S: Shared + ?Sized>(
        &self,
        s: &S,
        mut f: Frame,
        inline: usize,
        fill: impl FnOnce(usize),
        tail_seen: &mut usize,
    ) -> bool {
        // Every frame is a multiple of the header size, so the space left before the end
        // of the ring always holds a whole (padding) header.
        let need = (FRAME_HDR + inline).div_ceil(FRAME_HDR) * FRAME_HDR;
        let mut head = s.w64(self.head).load(Ordering::Relaxed) as usize;
        let pos = head % self.cap;
        let contig = self.cap - pos;
        let pad = if need > contig { contig } else { 0 };
        if head + pad + need - *tail_seen > self.cap {
            *tail_seen = s.w64(self.tail).load(Ordering::Acquire) as usize;
            if head + pad + need - *tail_seen > self.cap {
                return false;
            }
        }
        if pad > 0 {
            let p = Frame {
                kind: F_PAD,
                fbytes: pad,
                ctx: 0,
                tag: 0,
                len: 0,
                id: 0,
            };
            s.put(self.data + pos, &p.encode());
            head += pad;
        }
        let at = self.data + head % self.cap;
        f.fbytes = need;
        s.put(at, &f.encode());
        if inline > 0 {
            fill(at + FRAME_HDR);
        }
        s.w64(self.head)
            .store((head + need) as u64, Ordering::Release);
        true
    }

    /// Consumer: hands every frame published since the last call (padding skipped) to
    /// `visit(frame, payload offset)`, in order, then frees their space. Returns whether
    /// anything was consumed (then the caller rings the producer's doorbell).
    pub fn pop_all<S: Shared + ?Sized>(&self, s: &S, mut visit: impl FnMut(&Frame, usize)) -> bool {
        let mut tail = s.w64(self.tail).load(Ordering::Relaxed) as usize;
        let head = s.w64(self.head).load(Ordering::Acquire) as usize;
        if tail == head {
            return false;
        }
        while tail < head {
            let at = self.data + tail % self.cap;
            let mut h = [0u8; FRAME_HDR];
            s.get(at, &mut h);
            let f = Frame::decode(&h);
            debug_assert!(f.fbytes >= FRAME_HDR && f.fbytes.is_multiple_of(FRAME_HDR));
            if f.kind != F_PAD {
                visit(&f, at + FRAME_HDR);
            }
            tail += f.fbytes;
        }
        s.w64(self.tail).store(tail as u64, Ordering::Release);
        true
    }
}

// ---------------------------------------------------------------- collective channel

/// Words of one member's agreement descriptor (coll/agree.rs) per parity.
pub const DESC_WORDS: usize = 3;

/// Bytes of a post entry's header (the descriptor of its step and the step); the
/// payload follows, up to the end of the entry (`ChanCtl::post_entry` bytes).
pub const POST_HDR: usize = 32;
/// Offset in a post entry's header of its tag: the step it was written for, with the
/// channel's generation above bit 40 (`ChanCtl::post_tag`).
pub const POST_STEP: usize = 8 * DESC_WORDS;

/// The control words of one collective channel: member `i`'s step counter at
/// `counter(i)`, followed in the same cache line by its descriptors of parity 0 and 1
/// and the last step it posted, and member `i`'s post ring at `post(i, s)`.
///
/// Posted steps (coll/post.rs): a member may also arrive at step `s` without waiting
/// for the others, putting its descriptor (and data) in entry `s % post_k` of its post
/// ring instead of its counter line; it writes that entry only once it saw every
/// counter at `s - post_k + 1` or beyond (everyone finished reading the entry's previous
/// use), and before its next ordinary step it waits for every counter to reach its last
/// step (so the double-buffering rule above holds again). A member's descriptor for
/// step `s` is therefore in its post entry for `s` if that entry says `s` (which only a
/// member that posted step `s` or later can have written), and in its counter line
/// otherwise ([`ChanCtl::desc_of`]).
#[derive(Clone, Copy, Debug)]
pub struct ChanCtl {
    /// Offset of member 0's counter.
    pub base: usize,
    /// Distance between two members' counters.
    pub stride: usize,
    /// Offset of member 0's post ring (member `i`'s is `post_k` entries further each).
    pub posts: usize,
    /// Bytes of one post entry (a multiple of 64).
    pub post_entry: usize,
    /// Entries in a member's post ring: how many steps a member that only posts (the
    /// root of a small MPI_Bcast, the others of a small MPI_Reduce) may run ahead of
    /// the slowest member (`Layout::post_k`: 256 up to 32 ranks, 32 beyond).
    pub post_k: u64,
    /// How many times the channel was allocated (mod 2^24): part of every post entry's
    /// tag, so that an entry an earlier communicator left on the channel never matches
    /// a step of this one (the channel is not cleared between communicators).
    pub post_gen: u64,
}

impl ChanCtl {
    pub fn counter(&self, i: usize) -> usize {
        self.base + i * self.stride
    }
    /// Offset of member `i`'s descriptor of parity `p`.
    pub fn desc_at(&self, i: usize, p: usize) -> usize {
        self.counter(i) + 8 + p * 8 * DESC_WORDS
    }
    /// Offset of the last step member `i` posted (after its two descriptors; 0 if none).
    pub fn posted_at(&self, i: usize) -> usize {
        self.counter(i) + 8 + 2 * 8 * DESC_WORDS
    }
    /// The tag of a post entry written for step `s`.
    pub fn post_tag(&self, s: u64) -> u64 {
        s | (self.post_gen & 0xff_ffff) << 40
    }

    /// Offset of member `i`'s post entry for step `s` (header, then payload).
    pub fn post(&self, i: usize, s: u64) -> usize {
        // `post_k` is a power of two (Layout): a mask, not a division, on every call.
        debug_assert!(self.post_k.is_power_of_two());
        self.posts + (i * self.post_k as usize + (s & (self.post_k - 1)) as usize) * self.post_entry
    }

    /// Member `me` arrives at step `s` (1, 2, ...): publishes `desc` (if any) for parity
    /// `s % 2`, then its counter. Whatever the member wrote before (its parity-`s % 2`
    /// buffers) is visible to every member that sees the counter at `s` or beyond. The
    /// caller then rings the other members' doorbells.
    pub fn arrive<S: Shared + ?Sized>(
        &self,
        sh: &S,
        me: usize,
        s: u64,
        desc: Option<[u64; DESC_WORDS]>,
    ) {
        if let Some(d) = desc {
            let p = (s % 2) as usize;
            let at = self.desc_at(me, p);
            for (k, w) in d.iter().enumerate() {
                sh.w64(at + 8 * k).store(*w, Ordering::Relaxed);
            }
        }
        sh.w64(self.counter(me)).store(s, Ordering::Release);
    }

    /// Whether member `i`'s counter reached step `s` (after which what it wrote before
    /// arriving there may be read).
    #[inline]
    pub fn reached<S: Shared + ?Sized>(&self, sh: &S, i: usize, s: u64) -> bool {
        sh.w64(self.counter(i)).load(Ordering::Acquire) >= s
    }

    /// Whether a member may write its post entry for step `s` (its previous use, step
    /// `s - post_k`, is read by everyone: every counter of the `n` reached
    /// `s + 1 - post_k`). Returns the lowest counter seen if it may.
    pub fn room<S: Shared + ?Sized>(&self, sh: &S, n: usize, s: u64) -> Option<u64> {
        let low = self.lowest(sh, n).unwrap_or(s);
        (s <= self.post_k || low + self.post_k > s).then_some(low)
    }

    /// The lowest counter of the `n` members (None for none).
    pub fn lowest<S: Shared + ?Sized>(&self, sh: &S, n: usize) -> Option<u64> {
        (0..n)
            .map(|i| sh.w64(self.counter(i)).load(Ordering::Acquire))
            .min()
    }

    /// Member `me` arrives at step `s` without waiting, with `desc` in its post entry
    /// for `s` (where the caller put its payload too). Only once [`ChanCtl::room`]
    /// allowed it.
    #[inline]
    pub fn arrive_posted<S: Shared + ?Sized>(
        &self,
        sh: &S,
        me: usize,
        s: u64,
        desc: [u64; DESC_WORDS],
    ) {
        let at = self.post(me, s);
        for (k, w) in desc.iter().enumerate() {
            sh.w64(at + 8 * k).store(*w, Ordering::Relaxed);
        }
        sh.w64(at + POST_STEP)
            .store(self.post_tag(s), Ordering::Release);
        sh.w64(self.posted_at(me)).store(s, Ordering::Relaxed);
        sh.w64(self.counter(me)).store(s, Ordering::Release);
    }

    /// Whether member `i` arrived at step `s`, and if it did, its descriptor: a
    /// receiver of a posted step looks at the sender's post entry first (one cache line
    /// holds the step, the descriptor and a small payload), then at its counter (a member
    /// that disagrees may have arrived in an ordinary step).
    #[inline]
    pub fn arrived_posted<S: Shared + ?Sized>(
        &self,
        sh: &S,
        i: usize,
        s: u64,
    ) -> Option<[u64; DESC_WORDS]> {
        let at = self.post(i, s);
        if sh.w64(at + POST_STEP).load(Ordering::Acquire) == self.post_tag(s) {
            return Some(std::array::from_fn(|k| {
                sh.w64(at + 8 * k).load(Ordering::Relaxed)
            }));
        }
        if sh.w64(self.counter(i)).load(Ordering::Acquire) >= s {
            return Some(self.desc_of(sh, i, s));
        }
        None
    }

    /// Member `i`'s descriptor for step `s`, once its counter was seen at `s` or beyond
    /// (and before this member arrives at `s + 1`): from its post entry if it posted step
    /// `s`, else from its counter line. A member that never posted at or after `s` costs
    /// no look at its post ring.
    #[inline(always)]
    pub fn desc_of<S: Shared + ?Sized>(&self, sh: &S, i: usize, s: u64) -> [u64; DESC_WORDS] {
        if sh.w64(self.posted_at(i)).load(Ordering::Relaxed) >= s {
            let at = self.post(i, s);
            if sh.w64(at + POST_STEP).load(Ordering::Relaxed) == self.post_tag(s) {
                return std::array::from_fn(|k| sh.w64(at + 8 * k).load(Ordering::Relaxed));
            }
        }
        self.desc(sh, i, (s % 2) as usize)
    }

    /// Advances `first` past the members (of `n`) whose counter reached `s`; true once
    /// all have, after which the step's parity-`s % 2` buffers may be read.
    pub fn arrived<S: Shared + ?Sized>(&self, sh: &S, n: usize, s: u64, first: &mut usize) -> bool {
        self.arrived_then(sh, n, s, first, |_| {})
    }

    /// As [`ChanCtl::arrived`], calling `seen(i)` as soon as member `i` is seen to have
    /// arrived (in member order), when its descriptor may already be read: it shares
    /// the counter's cache line, which the member will not write again before this one
    /// arrives at the next step.
    pub fn arrived_then<S: Shared + ?Sized>(
        &self,
        sh: &S,
        n: usize,
        s: u64,
        first: &mut usize,
        mut seen: impl FnMut(usize),
    ) -> bool {
        while *first < n && sh.w64(self.counter(*first)).load(Ordering::Acquire) >= s {
            seen(*first);
            *first += 1;
        }
        *first == n
    }

    /// Member `i`'s descriptor of parity `p` (read once the step is complete).
    pub fn desc<S: Shared + ?Sized>(&self, sh: &S, i: usize, p: usize) -> [u64; DESC_WORDS] {
        let at = self.desc_at(i, p);
        let mut w = [0u64; DESC_WORDS];
        for (k, x) in w.iter_mut().enumerate() {
            *x = sh.w64(at + 8 * k).load(Ordering::Relaxed);
        }
        w
    }
}

// ---------------------------------------------------------------- chain

/// The schedule of a chain (coll/chain.rs): `chunks` chunks pass along the members of a
/// channel in fold order through a ring of `ring` entries (chunk `t`, 1-based, in entry
/// `(t - 1) % ring`), and whoever receives bytes of a chunk copies them out `lag` steps
/// after the step in which it folded that chunk. Each member takes steps `t = 1..=steps()`
/// (relative to the step before the chain), each ending with its counter at `t`: then it
/// has folded (the head: deposited) chunk [`ChainPlan::fold`]`(t)` and copied out what it
/// receives of chunk [`ChainPlan::out`]`(t)`. The waits that make this safe:
/// - a member folding chunk `c` waits for its predecessor's counter at `c`;
/// - the head, before depositing chunk `c` over chunk `c - ring`, waits for every counter
///   at [`ChainPlan::room`]`(c)` (chunk `c - ring` folded by all and copied out);
/// - a member copying out chunk `u` waits for the last member's counter at `u`.
///
/// With `1 <= lag < ring` each of these waits for a step that needs no later step of the
/// waiter, so the chain cannot deadlock; tests/loom.rs model-checks the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainPlan {
    pub chunks: u64,
    pub ring: u64,
    pub lag: u64,
}

impl ChainPlan {
    /// `chunks` chunks through `ring` entries (at least 2); the copy-out lags by half
    /// the ring, so that the head may run that far ahead of the receivers.
    pub fn new(chunks: u64, ring: u64) -> ChainPlan {
        debug_assert!(ring >= 2);
        ChainPlan {
            chunks,
            ring,
            lag: (ring / 2).max(1),
        }
    }
    /// The number of steps each member takes.
    pub fn steps(&self) -> u64 {
        self.chunks + self.lag
    }
    /// The ring entry of chunk `t`.
    pub fn entry(&self, t: u64) -> u64 {
        (t - 1) % self.ring
    }
    /// The chunk folded in step `t`, if any.
    pub fn fold(&self, t: u64) -> Option<u64> {
        (t <= self.chunks).then_some(t)
    }
    /// The step every counter must have reached before the head deposits chunk `c`
    /// (none for the first `ring` chunks).
    pub fn room(&self, c: u64) -> Option<u64> {
        (c > self.ring).then(|| c - self.ring + self.lag)
    }
    /// The chunk copied out in step `t`, if any.
    pub fn out(&self, t: u64) -> Option<u64> {
        (t > self.lag && t - self.lag <= self.chunks).then(|| t - self.lag)
    }
}

// ---------------------------------------------------------------- doorbell

/// Where one rank's doorbell (a futex word), sleeping flag and wake mark are.
#[derive(Clone, Copy, Debug)]
pub struct Bell {
    pub bell: usize,
    pub sleeping: usize,
    /// A 64-bit word: what the rank waits for while it sleeps ([`chan_mark`]).
    pub want: usize,
}

/// A wake mark that matches everything: a sleeper that waits for anything, or a
/// publication that any sleeper may be waiting for.
pub const ANY: u64 = 0;
const MARK_STEP_BITS: u32 = 52;
const MARK_STEP: u64 = (1 << MARK_STEP_BITS) - 1;

/// The wake mark of collective channel `chan`'s counters at `step`: for a sleeper, "some
/// counter of `chan` must reach `step`"; for a publisher, "a counter of `chan` is now
/// `step`". (A step beyond 2^52 gives [`ANY`].)
///
/// A member's counter takes every value 1, 2, 3, ... in turn, each published with a
/// ring, so a sleeper that waits for counters to reach `step` needs only the
/// publications of exactly `step`: a member whose counter is already beyond it had
/// rung for `step` before (then the sleeper saw it, or it was not asleep yet), and one
/// further behind will ring for `step` later.
pub fn chan_mark(chan: usize, step: u64) -> u64 {
    let c = chan as u64 + 1;
    if c >> (64 - MARK_STEP_BITS) != 0 || step > MARK_STEP {
        ANY
    } else {
        c << MARK_STEP_BITS | step
    }
}

/// Whether publication `publ` may be what a sleeper that wants `want` waits for: on
/// the same channel, only a counter that reaches exactly the wanted step.
pub fn mark_wakes(want: u64, publ: u64) -> bool {
    want == ANY || publ == ANY || want >> MARK_STEP_BITS != publ >> MARK_STEP_BITS || publ == want
}

/// Waiter side: announces that the rank will sleep, re-checks `cond`, and if it is
/// still false calls `wait(doorbell, value)`, which must return once the doorbell no
/// longer holds `value` (a futex wait; it may also return early). Returns `cond`'s
/// result. As [`sleep_unless_for`] for anything.
pub fn sleep_unless<S: Shared + ?Sized>(
    sh: &S,
    b: Bell,
    cond: impl FnOnce() -> bool,
    wait: impl FnOnce(&S::W32, u32),
) -> bool {
    sleep_unless_for(sh, b, ANY, cond, wait)
}

/// As [`sleep_unless`], telling publishers that only a publication `p` with
/// `mark_wakes(want, p)` can make `cond` true, so the others need not wake the rank.
///
/// A publisher that saw `sleeping` set by this sleep (the Dekker pair's other case:
/// this sleep's re-check sees its publication) reads this sleep's mark or a later one.
/// A later one belongs to a later wait, which starts only once this one ended: a wait
/// for counters of the same channel at a later step, which a publication for an earlier
/// step cannot end, or one of another channel or for anything, which skips nothing of
/// this channel.
pub fn sleep_unless_for<S: Shared + ?Sized>(
    sh: &S,
    b: Bell,
    want: u64,
    cond: impl FnOnce() -> bool,
    wait: impl FnOnce(&S::W32, u32),
) -> bool {
    let sleeping = sh.w32(b.sleeping);
    let bell = sh.w32(b.bell);
    sh.w64(b.want).store(want, Ordering::Relaxed);
    sleeping.store(1, Ordering::SeqCst);
    let v = bell.load(Ordering::SeqCst);
    sh.fence_seqcst();
    let ok = cond();
    if !ok {
        wait(bell, v);
    }
    sleeping.store(0, Ordering::Relaxed);
    ok
}

/// Publisher side, after the data was published with a release store: fences, then
/// bumps and wakes (`wake(doorbell)`, a futex wake) the doorbell of every target that
/// announced it sleeps. As [`ring_doorbells_for`] a publication of anything.
pub fn ring_doorbells<S: Shared + ?Sized>(
    sh: &S,
    targets: impl IntoIterator<Item = Bell>,
    wake: impl FnMut(&S::W32),
) {
    ring_doorbells_for(sh, targets, ANY, wake)
}

/// As [`ring_doorbells`] after publication `publ` ([`chan_mark`]): skips the sleepers
/// whose wake mark says they wait for something else. (When a rank that waits for a
/// slow one sleeps, every step of the slow one used to wake it only to see it was not
/// enough: at 8 ranks on 2 CPUs, small MPI_Reduce calls between barriers took up to
/// 40 µs each instead of 1.)
pub fn ring_doorbells_for<S: Shared + ?Sized>(
    sh: &S,
    targets: impl IntoIterator<Item = Bell>,
    publ: u64,
    mut wake: impl FnMut(&S::W32),
) {
    sh.fence_seqcst();
    for b in targets {
        if sh.w32(b.sleeping).load(Ordering::Acquire) != 0
            && mark_wakes(sh.w64(b.want).load(Ordering::Relaxed), publ)
        {
            let bell = sh.w32(b.bell);
            bell.fetch_add(1, Ordering::SeqCst);
            wake(bell);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The protocols on real threads and a real (anonymous) arena mapping; run natively
    //! by `cargo test --lib` and under the interpreter's data-race and weak-memory checks
    //! by `cargo +nightly miri test --lib shm::proto` (README, "Reliability").
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Duration;

    fn scale(native: usize, interp: usize) -> usize {
        if cfg!(miri) {
            interp
        } else {
            native
        }
    }

    /// Waits for `cond` as the library's Backoff does (yield, then sleep on the
    /// doorbell). A condition may consume what it finds: its first true is the answer.
    fn wait_for(a: &Arena, me: Bell, mut cond: impl FnMut() -> bool) {
        let mut spins = 0;
        while !cond() {
            spins += 1;
            if spins % 4 == 0 {
                if sleep_unless(a, me, &mut cond, |w, v| {
                    crate::shm::wait::futex_wait(w, v, Duration::from_secs(10))
                }) {
                    return;
                }
            } else {
                std::thread::yield_now();
            }
        }
    }

    fn ring_one(a: &Arena, b: Bell) {
        ring_doorbells(a, [b], crate::shm::wait::futex_wake);
    }

    #[test]
    fn ring_delivers_every_frame_in_order() {
        let a = Arc::new(Arena::anonymous(8192));
        let ring = Ring {
            head: 256,
            tail: 320,
            data: 1024,
            cap: 8 * FRAME_HDR,
        };
        let (pb, cb) = (
            Bell {
                bell: 0,
                sleeping: 4,
                want: 16,
            },
            Bell {
                bell: 64,
                sleeping: 68,
                want: 80,
            },
        );
        let frames = scale(20_000, 60);
        let a2 = a.clone();
        let producer = std::thread::spawn(move || {
            for k in 0..frames {
                let inline = (k * 7) % 70;
                let f = Frame {
                    kind: 1,
                    fbytes: 0,
                    ctx: 0,
                    tag: k as i32,
                    len: inline,
                    id: k as u64,
                };
                let payload: Vec<u8> = (0..inline).map(|i| (k + i) as u8).collect();
                wait_for(&a2, pb, || {
                    ring.push(&*a2, f, inline, |at| a2.put(at, &payload))
                });
                ring_one(&a2, cb);
            }
        });
        let mut next = 0;
        while next < frames {
            let mut got = false;
            wait_for(&a, cb, || {
                got = ring.pop_all(&*a, |f, at| {
                    assert_eq!(f.id, next as u64);
                    assert_eq!(f.len, (next * 7) % 70);
                    let mut p = vec![0u8; f.len];
                    a.get(at, &mut p);
                    assert!(p.iter().enumerate().all(|(i, &x)| x == (next + i) as u8));
                    next += 1;
                });
                got
            });
            ring_one(&a, pb);
        }
        producer.join().unwrap();
    }

    #[test]
    fn channel_steps_double_buffer_without_overwriting() {
        let n = 3;
        let steps = scale(5_000, 12) as u64;
        let a = Arc::new(Arena::anonymous(16384));
        let ctl = ChanCtl {
            base: 1024,
            stride: 128,
            posts: 8192,
            post_entry: 64,
            post_k: 2,
            post_gen: 0,
        };
        let slot = |i: usize, p: usize| 4096 + (2 * i + p) * 64;
        let bell = |i: usize| Bell {
            bell: 64 * i,
            sleeping: 64 * i + 4,
            want: 64 * i + 16,
        };
        let failed = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = (0..n)
            .map(|me| {
                let (a, failed) = (a.clone(), failed.clone());
                std::thread::spawn(move || {
                    for s in 1..=steps {
                        let p = (s % 2) as usize;
                        a.put(slot(me, p), &(s * 10 + me as u64).to_le_bytes());
                        ctl.arrive(&*a, me, s, Some([s, me as u64, !s]));
                        ring_doorbells(&*a, (0..n).filter(|&j| j != me).map(bell), |w| {
                            crate::shm::wait::futex_wake(w)
                        });
                        let mut first = 0;
                        wait_for(&a, bell(me), || ctl.arrived(&*a, n, s, &mut first));
                        for i in 0..n {
                            let mut v = [0u8; 8];
                            a.get(slot(i, p), &mut v);
                            if u64::from_le_bytes(v) != s * 10 + i as u64
                                || ctl.desc(&*a, i, p) != [s, i as u64, !s]
                            {
                                failed.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(!failed.load(Ordering::Relaxed));
    }

    #[test]
    fn doorbell_loses_no_wakeup() {
        // The waiter sleeps without a useful timeout: a lost wake-up shows as a 10 s
        // stall per round (and a test timeout).
        let rounds = scale(2_000, 20) as u64;
        let a = Arc::new(Arena::anonymous(4096));
        let wb = Bell {
            bell: 0,
            sleeping: 4,
            want: 16,
        };
        let data = 512;
        let a2 = a.clone();
        let publisher = std::thread::spawn(move || {
            for r in 1..=rounds {
                // Wait until the waiter consumed the previous round (by spinning).
                while a2.w64(data + 8).load(Ordering::Acquire) != r - 1 {
                    std::thread::yield_now();
                }
                a2.w64(data).store(r, Ordering::Release);
                ring_one(&a2, wb);
            }
        });
        let t0 = std::time::Instant::now();
        for r in 1..=rounds {
            loop {
                if a.w64(data).load(Ordering::Acquire) == r {
                    break;
                }
                sleep_unless(
                    &*a,
                    wb,
                    || a.w64(data).load(Ordering::Acquire) == r,
                    |w, v| crate::shm::wait::futex_wait(w, v, Duration::from_secs(10)),
                );
            }
            a.w64(data + 8).store(r, Ordering::Release);
        }
        publisher.join().unwrap();
        if !cfg!(miri) {
            assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        }
    }
}
