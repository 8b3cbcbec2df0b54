//! Collectives over the communicator's channel in the arena.
//!
//! Every collective is a sequence of *steps*. In step `s` a member may write the
//! buffers of parity `s % 2` (its slot, or its share of the result buffer, or a peer's
//! slot in a scatter), then it publishes `counter = s` and waits until every member's
//! counter is at least `s`; after that it may read the parity-`s % 2` buffers and write
//! its share of the result buffer. Because a member only arrives at step `s + 1` after
//! it finished reading in step `s`, and nobody writes parity `s % 2` again before it
//! saw everybody arrive at `s + 1`, double buffering makes a separate "everyone has
//! read" round unnecessary: one synchronisation round per step.
//!
//! Reductions keep the promise of the README: every element is reduced exactly once,
//! in canonical rank order (a sequential left-to-right loop over ranks 0..n-1), by one
//! member, and the same bits are copied to everyone who receives them.
//!
//! Unsafe code here (every block has its SAFETY line):
//! - `Chan::slice_mut`, the mutable view of an arena slot, and its callers in bcast.rs,
//!   chain.rs, direct.rs, gather.rs, post.rs, reduce.rs and ring.rs: a step writes the
//!   slot the protocol gives it (its own, or the result area) through it;
//! - `UserBuf::as_mut_slice` in direct.rs, post.rs and reduce.rs: a reduction folds
//!   into the receive buffer it owns;
//! - `bcast_bytes`, which lends a borrowed slice to a blocking broadcast;
//! - the fronts of the data-movement collectives (bcast.rs, moves.rs, neighbor.rs),
//!   which take the C caller's buffer addresses and make the engine's views of them.
//!
//! agree.rs, nb.rs and select.rs deny unsafe code.
pub mod agree;
pub mod bcast;
pub mod chain;
pub mod direct;
pub mod front;
pub mod gather;
pub mod inter;
pub mod moves;
pub mod nb;
pub mod neighbor;
pub mod plan;
pub mod post;
pub mod reduce;
pub mod ring;
pub mod select;
pub mod stage;

use crate::comm::Comm;
use crate::error::MpiResult;
use crate::runtime::Job;
use crate::shm::proto::chan_mark;
use crate::shm::proto::ChanCtl;
use crate::shm::wait::notify_all;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

/// A member's handle on the channel of one communicator during one collective.
pub struct Chan<'a> {
    pub job: &'static Job,
    pub comm: &'a Comm,
    pub n: usize,
    pub me: usize,
    pub slot_bytes: usize,
    /// The channel's control words (their protocol: shm/proto.rs), read once.
    ctl: ChanCtl,
}

impl<'a> Chan<'a> {
    pub fn new(comm: &'a Comm) -> MpiResult<Chan<'a>> {
        let job = crate::runtime::job()?;
        Ok(Chan {
            job,
            comm,
            n: comm.chan_members.len(),
            me: comm.chan_me,
            slot_bytes: job.arena.lay.slot_bytes,
            ctl: job.arena.chan_ctl(comm.ctx),
        })
    }

    /// As [`Chan::new`], for a collective that takes ordinary steps: first waits, if
    /// this member's last step was a posted one (coll/post.rs), until every member has
    /// arrived at that step, so that the buffers of the coming steps are free again.
    pub async fn open(comm: &'a Comm) -> MpiResult<Chan<'a>> {
        let ch = Chan::new(comm)?;
        ch.settle().await;
        Ok(ch)
    }

    /// The wait of [`Chan::open`], for a collective that already has its `Chan`.
    pub async fn settle(&self) {
        let last = self.comm.coll.step.load(Ordering::Relaxed);
        // (after an ordinary step every member is known to have arrived at it)
        if self.comm.coll.posted.load(Ordering::Relaxed) == last
            && self.comm.coll.synced.load(Ordering::Relaxed) < last
        {
            self.all_at(last).await;
        }
    }

    /// Completes once every member's counter reached `s`; records it in `synced`.
    async fn all_at(&self, s: u64) {
        self.all_reached(s).await;
        self.synced(s);
    }

    /// Completes once every member's counter reached `s` (without recording it: a
    /// chain, coll/chain.rs, goes on past it).
    async fn all_reached(&self, s: u64) {
        let (ctl, a, n) = (self.ctl(), &self.job.arena, self.n);
        let mut first = 0;
        std::future::poll_fn(|_| {
            if ctl.arrived(a, n, s, &mut first) {
                Poll::Ready(())
            } else {
                self.waits_for(s)
            }
        })
        .await
    }

    /// Wakes the other members that sleep waiting for a counter of this channel to reach
    /// `s` (or for anything): call after arriving at step `s`.
    fn ring(&self, s: u64) {
        notify_all(
            &self.job.arena,
            (0..self.n)
                .filter(|&j| j != self.me)
                .map(|j| self.comm.chan_members[j]),
            chan_mark(self.comm.ctx, s),
        );
    }

    /// `Poll::Pending`, for a wait that only a counter of this channel reaching `s` can
    /// end: a blocking call that goes to sleep then asks to be woken only by such a
    /// publication (`crate::progress::block_on`).
    ///
    /// In the slow phase of the wait (shm/wait.rs `in_slow_wait`) it also looks at the
    /// members that have not reached `s`: if one of them has entered MPI_Finalize, it
    /// never will, and the collective ends with an error (`crate::progress::abandon`).
    fn waits_for<T>(&self, s: u64) -> Poll<T> {
        crate::progress::waits_for(chan_mark(self.comm.ctx, s));
        if crate::shm::wait::in_slow_wait() {
            self.check_finalizing(s);
        }
        Poll::Pending
    }

    /// The slow-phase look of [`Chan::waits_for`]: records an error for the collective
    /// if a member that has not reached step `s` has entered MPI_Finalize. (Every
    /// member takes every step of a collective before it can leave it, so such a
    /// member has left, or never made, the call this member waits in.)
    #[cold]
    fn check_finalizing(&self, s: u64) {
        let (ctl, a) = (self.ctl(), &self.job.arena);
        let gone = (0..self.n).find(|&i| {
            i != self.me
                && !ctl.reached(a, i, s)
                && a.in_finalize(self.comm.chan_members[i])
                // (it arrived, if it did, before it entered MPI_Finalize: seen now)
                && !ctl.reached(a, i, s)
        });
        if let Some(i) = gone {
            crate::progress::abandon(self.finalized_member_error(i));
        }
    }

    /// The error of a collective that waits for member `i`, which entered MPI_Finalize.
    fn finalized_member_error(&self, i: usize) -> crate::error::MpiError {
        let slot = self.comm.chan_members[i];
        let who = match &self.comm.remote {
            None => format!("rank {i}"),
            Some(remote) => match remote.iter().position(|&w| w == slot) {
                Some(r) => format!("rank {r} of the remote group"),
                None => {
                    let r = self.comm.group.iter().position(|&w| w == slot);
                    format!("rank {} of the local group", r.unwrap_or(i))
                }
            },
        };
        let name = self.comm.name.lock().map(|n| n.clone()).unwrap_or_default();
        let comm = if name.is_empty() {
            format!("communicator {:#x}", self.comm.handle)
        } else {
            name
        };
        let call = self.job.arena.call_name(self.job.rank);
        let call = if call.is_empty() {
            "a collective".to_string()
        } else {
            call
        };
        crate::error::err(
            crate::abi::MPI_ERR_OTHER,
            format!(
                "{who} called MPI_Finalize while this rank waits for it in {call} on {comm}: \
                 the collective can never complete (its members did not make the same \
                 collective calls)"
            ),
        )
    }

    /// Records that every member reached step `s`.
    fn synced(&self, s: u64) {
        if self.comm.coll.synced.load(Ordering::Relaxed) < s {
            self.comm.coll.synced.store(s, Ordering::Relaxed);
        }
    }

    /// The number of the step about to start (1-based) and its buffer parity.
    pub fn next_step(&self) -> (u64, usize) {
        let s = self.comm.coll.step.load(Ordering::Relaxed) + 1;
        (s, (s % 2) as usize)
    }

    /// Offset of member `i`'s slot of parity `p`.
    pub fn slot(&self, i: usize, p: usize) -> usize {
        self.job.arena.lay.chan_slot(self.comm.ctx, i, p)
    }
    /// Offset of the result buffer of parity `p`.
    pub fn result(&self, p: usize) -> usize {
        self.job.arena.lay.chan_result(self.comm.ctx, p)
    }
    /// Offset of member `i`'s argument line (64 bytes).
    pub fn args(&self, i: usize) -> usize {
        self.job.arena.lay.chan_args(self.comm.ctx, i)
    }

    /// The channel's control words (their protocol: shm/proto.rs).
    fn ctl(&self) -> &ChanCtl {
        &self.ctl
    }

    /// Arrives at the next step; completes when every member has arrived. Never
    /// blocks: a collective is an `async fn` whose steps are these awaits, so the same
    /// code runs to completion in place (blocking calls, [`block_on`]) or is polled by
    /// the progress engine (nonblocking calls, [`nb`]). The first step of a collective
    /// also checks that the members agree on its arguments (agree.rs).
    pub async fn step(&self) -> MpiResult<u64> {
        let pending = self.comm.coll.take_desc();
        let (s, _) = self.next_step();
        let flows_disagree = self
            .sync(pending.as_ref().map(|d| agree::pack(d.desc.encode())))
            .await?;
        if flows_disagree {
            self.check_flows(pending.and_then(|d| d.flows)).await?;
        }
        Ok(s)
    }

    /// One step of the channel protocol (shm/proto.rs), publishing `desc` with it and
    /// then comparing every member's descriptor with member 0's. True: the members'
    /// flow sums (a data-movement collective) do not add up, see `check_flows`.
    async fn sync(&self, desc: Option<[u64; 3]>) -> MpiResult<bool> {
        let s = self.publish(desc);
        let check = desc.map(|_| Check::new(s));
        AllArrived {
            ch: self,
            s,
            first: 0,
            check,
            posted: None,
        }
        .await
    }

    /// Arrives at the next step without waiting: publishes `desc` (if any) and this
    /// member's counter, and wakes those who wait for it. Returns the step.
    fn publish(&self, desc: Option<[u64; 3]>) -> u64 {
        let s = self.publish_chunk(desc);
        self.comm.coll.ordinary_last.store(s, Ordering::Relaxed);
        s
    }

    /// [`Chan::publish`] of a step that uses the slots only as a ring broadcast's chunk
    /// (coll/ring.rs), whose readers publish their counter only after reading.
    fn publish_chunk(&self, desc: Option<[u64; 3]>) -> u64 {
        let s = bump(&self.comm.coll.step, Ordering::Relaxed) + 1;
        let a = &self.job.arena;
        self.ctl().arrive(a, self.me, s, desc);
        a.note_step(self.job.rank, s);
        self.ring(s);
        s
    }

    /// The slow path of the pairwise check: every member publishes its flows in its
    /// slot for one step and all find the same first disagreeing pair. If there is
    /// none (the hashes differ but the signatures match), a second step restores the
    /// parity the collective expects and it goes on.
    async fn check_flows(&self, mine: Option<Box<agree::Flows>>) -> MpiResult<()> {
        let n = self.n;
        let len = agree::Flows::encoded_len(n);
        let (_, p) = self.next_step();
        let mine = mine.unwrap_or_else(|| Box::new(agree::Flows::new(n)));
        // SAFETY: this member's own slot of the step, nobody else's until `sync`.
        mine.encode(unsafe { self.slice_mut(self.slot(self.me, p), len) });
        self.sync(None).await?;
        let all: Vec<agree::Flows> = (0..n)
            .map(|i| agree::Flows::decode(self.slice(self.slot(i, p), len), n))
            .collect();
        if let Some(e) = agree::Flows::disagreement(&all) {
            return Err(e);
        }
        self.sync(None).await?;
        Ok(())
    }

    pub fn write(&self, off: usize, src: &[u8]) {
        self.job.arena.write(off, src)
    }
    pub fn read(&self, off: usize, dst: &mut [u8]) {
        self.job.arena.read(off, dst)
    }
    pub fn slice(&self, off: usize, len: usize) -> &[u8] {
        self.job.arena.slice(off, len)
    }
    /// A mutable view of `len` arena bytes at `off` ([`crate::shm::Arena::slice_mut`]).
    ///
    /// # Safety
    /// For the returned lifetime no other reference to these bytes may be live and no
    /// other rank may touch them: the caller is the step that owns the slot (its own
    /// slot, or the result area, before the step that publishes it), as the
    /// collective's protocol assigns it.
    #[expect(
        clippy::mut_from_ref,
        reason = "an unsafe fn: its # Safety contract is what makes the &mut exclusive"
    )]
    pub unsafe fn slice_mut(&self, off: usize, len: usize) -> &mut [u8] {
        // SAFETY: the caller owns the bytes for the step (this function's contract).
        unsafe { self.job.arena.slice_mut(off, len) }
    }

    /// Publishes up to 4 u64 values in this member's argument line for the next step
    /// (call before `step()`); read them after it with `peer_args(i, k)`. The line is
    /// double-buffered by step parity like the slots.
    pub fn put_args(&self, vals: &[u64]) {
        assert!(vals.len() <= 4);
        let (_, p) = self.next_step();
        let a = &self.job.arena;
        for (k, v) in vals.iter().enumerate() {
            a.u64_at(self.args(self.me) + 32 * p + 8 * k)
                .store(*v, Ordering::Relaxed);
        }
    }
    /// Value `k` member `i` published for the step just completed.
    pub fn peer_args(&self, i: usize, k: usize) -> u64 {
        let p = (self.comm.coll.step.load(Ordering::Relaxed) % 2) as usize;
        self.job
            .arena
            .u64_at(self.args(i) + 32 * p + 8 * k)
            .load(Ordering::Relaxed)
    }
}

/// Barrier: one step.
pub async fn barrier(comm: &Comm) -> MpiResult<()> {
    if comm.chan_members.len() == 1 {
        return Ok(());
    }
    Chan::open(comm).await?.step().await.map(|_| ())
}

/// The future of one step: ready once every member's counter reached `s`.
struct AllArrived<'a, 'b> {
    ch: &'a Chan<'b>,
    s: u64,
    first: usize,
    check: Option<Check>,
    /// A posted step (coll/post.rs), with this member's descriptor (what its own entry
    /// says): each other member's post entry is looked at first.
    posted: Option<[u64; 3]>,
}

/// The agreement check of a first step, done while waiting: each member's descriptor
/// is read as soon as its counter shows it arrived (the same cache line, so the check
/// costs no extra cache miss), and compared with member 0's.
struct Check {
    /// The step.
    s: u64,
    d0: [u64; 3],
    /// Member 0's descriptor words compared raw (the flow sum of a data-movement
    /// collective is left out: it differs between members).
    mask: u64,
    flow: u32,
    err: Option<crate::error::MpiError>,
}

impl Check {
    #[inline]
    fn new(s: u64) -> Check {
        Check {
            s,
            d0: [0; 3],
            mask: u64::MAX,
            flow: 0,
            err: None,
        }
    }

    #[inline(always)]
    fn seen(&mut self, i: usize, d: [u64; 3]) {
        self.flow = self.flow.wrapping_add((d[1] >> 32) as u32);
        if i == 0 {
            self.d0 = d;
            if agree::is_movement((d[0] >> 48) as u16) {
                self.mask = 0xffff_ffff;
            }
        } else if self.err.is_none()
            && (d[0] != self.d0[0] || d[2] != self.d0[2] || (d[1] ^ self.d0[1]) & self.mask != 0)
        {
            let size_of = |h: i32| crate::datatype::info(h).map_or(0, |x| x.0);
            self.err =
                agree::Desc::disagreement(0, agree::unpack(self.d0), i, agree::unpack(d), size_of);
        }
    }
}

impl Future for AllArrived<'_, '_> {
    type Output = MpiResult<bool>;
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        let (n, s) = (self.ch.n, self.s);
        let ctl = self.ch.ctl();
        let a = &self.ch.job.arena;
        let this = &mut *self;
        let done = match &mut this.check {
            _ if this.posted.is_some() => {
                while this.first < n {
                    let i = this.first;
                    // (this member's own entry holds what `posted` says: no need to look)
                    let d = if i == this.ch.me {
                        this.posted.unwrap_or_default()
                    } else {
                        let Some(d) = ctl.arrived_posted(a, i, s) else {
                            break;
                        };
                        d
                    };
                    if let Some(c) = this.check.as_mut() {
                        c.seen(i, d);
                    }
                    this.first += 1;
                }
                this.first == n
            }
            None => ctl.arrived(a, n, s, &mut this.first),
            Some(c) => ctl.arrived_then(a, n, s, &mut this.first, |i| {
                c.seen(i, ctl.desc_of(a, i, c.s))
            }),
        };
        if !done {
            return this.ch.waits_for(s);
        }
        match this.check.take() {
            Some(Check { err: Some(e), .. }) => Poll::Ready(Err(e)),
            Some(c) => Poll::Ready(Ok(c.mask != u64::MAX && c.flow != 0)),
            None => Poll::Ready(Ok(false)),
        }
    }
}

/// Collectives on one communicator run in the order they were issued (the standard's
/// rule for nonblocking collectives, and what keeps every member on the same step
/// numbers): each takes a ticket when issued and waits for its turn.
pub struct Turn<'a> {
    comm: &'a Comm,
}

impl<'a> Turn<'a> {
    /// Takes the next ticket of `comm` and its turn at once: for a blocking call that
    /// saw no collective in progress on `comm` (its ticket is the one served).
    fn take(comm: &'a Comm) -> Turn<'a> {
        ticket(comm);
        Turn { comm }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        // A collective that took no step leaves its descriptor unused: drop it.
        drop(self.comm.coll.take_desc());
        bump(&self.comm.coll.serving, Ordering::Release);
    }
}

/// Increments a per-communicator counter of this process and returns its old value.
/// MPI calls are serialized in a process (the library provides at most
/// MPI_THREAD_SERIALIZED and has no threads of its own), so a load and a store are a
/// race-free increment, without the locked instruction of a `fetch_add` on every call.
fn bump(c: &std::sync::atomic::AtomicU64, store: Ordering) -> u64 {
    let v = c.load(Ordering::Relaxed);
    c.store(v + 1, store);
    v
}

/// Takes the next ticket of `comm` (at issue time).
pub fn ticket(comm: &Comm) -> u64 {
    bump(&comm.coll.ticket, Ordering::Relaxed)
}

/// Waits until `ticket` is served; the returned guard passes the turn on when dropped.
pub async fn turn(comm: &Comm, ticket: u64) -> Turn<'_> {
    std::future::poll_fn(|_| {
        if comm.coll.serving.load(Ordering::Acquire) == ticket {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    Turn { comm }
}

/// Runs one blocking collective on `comm`: waits for its turn, then runs it.
pub fn run<F: Future<Output = MpiResult<()>>>(comm: &Comm, fut: F) -> MpiResult<()> {
    let t = ticket(comm);
    crate::progress::block_on(async {
        let _turn = turn(comm, t).await;
        fut.await
    })
}

/// A blocking broadcast of `buf` from `root` ([`run`] of [`bcast::bcast`]), for the
/// library's own records (create/, spawn.rs).
pub fn bcast_bytes(comm: &Comm, buf: &mut [u8], root: usize) -> MpiResult<()> {
    // SAFETY: `buf` is borrowed, valid and unused elsewhere, until `run` returns, and
    // `run` returns once the broadcast's future is done (or dropped).
    let b = unsafe { crate::p2p::UserBuf::new(buf.as_mut_ptr(), buf.len()) };
    run(comm, bcast::bcast(comm, b, root))
}

/// The split of `m` items among `n` members: member `r` gets `[lo, hi)`.
pub fn share(m: usize, n: usize, r: usize) -> (usize, usize) {
    (m * r / n, m * (r + 1) / n)
}
