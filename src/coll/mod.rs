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
pub mod bcast;
pub mod gather;
pub mod reduce;

use crate::comm::Comm;
use crate::error::MpiResult;
use crate::runtime::Job;
use crate::shm::wait::{notify, Backoff};
use std::sync::atomic::Ordering;

/// A member's handle on the channel of one communicator during one collective.
pub struct Chan<'a> {
    pub job: &'static Job,
    pub comm: &'a Comm,
    pub n: usize,
    pub me: usize,
    pub slot_bytes: usize,
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
        })
    }

    /// The number of the step about to start (1-based) and its buffer parity.
    pub fn next_step(&self) -> (u64, usize) {
        let s = self.comm.step.load(Ordering::Relaxed) + 1;
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

    fn counter(&self, i: usize) -> &std::sync::atomic::AtomicU64 {
        self.job
            .arena
            .u64_at(self.job.arena.lay.chan_counter(self.comm.ctx, i))
    }

    /// Arrives at the next step and waits until every member has arrived.
    pub fn step(&self) -> MpiResult<u64> {
        let s = self.comm.step.fetch_add(1, Ordering::Relaxed) + 1;
        let a = &self.job.arena;
        self.counter(self.me).store(s, Ordering::SeqCst);
        for j in 0..self.n {
            if j != self.me {
                notify(a, self.comm.chan_members[j]);
            }
        }
        let mut first = 0;
        let mut b = Backoff::new(a, self.job.rank, self.job.policy);
        loop {
            while first < self.n && self.counter(first).load(Ordering::Acquire) >= s {
                first += 1;
            }
            if first == self.n {
                return Ok(s);
            }
            crate::p2p::progress();
            b.pause(|| (first..self.n).all(|j| self.counter(j).load(Ordering::SeqCst) >= s));
        }
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
    #[allow(clippy::mut_from_ref)]
    pub fn slice_mut(&self, off: usize, len: usize) -> &mut [u8] {
        self.job.arena.slice_mut(off, len)
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
        let p = (self.comm.step.load(Ordering::Relaxed) % 2) as usize;
        self.job
            .arena
            .u64_at(self.args(i) + 32 * p + 8 * k)
            .load(Ordering::Relaxed)
    }
}

/// Barrier: one step.
pub fn barrier(comm: &Comm) -> MpiResult<()> {
    if comm.chan_members.len() == 1 {
        return Ok(());
    }
    Chan::new(comm)?.step().map(|_| ())
}

/// The split of `m` items among `n` members: member `r` gets `[lo, hi)`.
pub fn share(m: usize, n: usize, r: usize) -> (usize, usize) {
    (m * r / n, m * (r + 1) / n)
}
