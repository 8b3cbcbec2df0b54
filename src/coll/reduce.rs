//! MPI_Reduce, MPI_Allreduce, MPI_Reduce_scatter(_block), MPI_Scan, MPI_Exscan.
//!
//! Algorithm (one engine for all of them):
//! - Small vectors (at most `SMALL` bytes): one step. Every member copies its input into
//!   its slot; after the step each member that receives part of the result reduces just
//!   that part, reading all slots in canonical order, straight into its receive buffer.
//!   Cost: 1 synchronisation, 1 copy in, (n-1) x (bytes received) reduction reads.
//! - Larger vectors: a pipeline over chunks (of a slot, or smaller: `chunk_size`). In
//!   step t every member deposits the other members' shares of chunk t in its slot, and
//!   after the step reduces its own 1/n share of chunk t (canonical order; its own
//!   operand straight from its input) into the result buffer, or straight into its
//!   receive buffer where it alone receives those bytes, and copies its part of chunk
//!   t-1 out of the result buffer. Cost: chunks+1 synchronisations; per member (n-1)/n
//!   of a copy in, n x (chunk/n) reduction reads, at most 1 copy out of what it
//!   receives: each element is reduced once, by one member.
//! - Large vectors with more members than CPUs (and very large ones otherwise): the chain
//!   of chain.rs instead, which folds the same operands in the same order.
//!
//! Order: for a commutative op the fold is `acc = x0; acc = x_k op acc` for k = 1..n-1,
//! which for IEEE + and * gives the bits of the sequential left-to-right loop. For a
//! non-commutative user op the fold is `acc = x_{n-1}; acc = x_k op acc` for k = n-2..0,
//! i.e. x0 op (x1 op (... op x_{n-1})), the standard's operand order.
use super::{share, Chan};
use crate::comm::Comm;
use crate::error::MpiResult;
use crate::p2p::buf::Staging;
use crate::p2p::UserBuf;
use std::sync::atomic::Ordering;

/// `inout = in op inout`, element-wise over whole elements.
pub type RedFn<'a> = &'a (dyn Fn(&[u8], &mut [u8]) -> MpiResult<()> + Sync);

pub struct Reduction<'a> {
    pub f: RedFn<'a>,
    pub commutative: bool,
    pub extent: usize,
    /// The same operation as a one-pass fold of several sources, where there is one
    /// (some predefined ops on predefined datatypes: op::predefined_multi).
    pub multi: Option<crate::op::kernels::MultiKernel>,
}

/// Vectors up to this many bytes take the one-step path (more for some kinds of
/// reduction: coll/select.rs `one_step_max`).
pub const SMALL: usize = 16 << 10;

/// The chunk of a multi-chunk reduction whose members take turns on the CPUs.
const SHARED_CPU_CHUNK: usize = 256 << 10;

/// The pipeline's chunk (before rounding to whole elements) for a reduction of `total`
/// bytes over `n` members with slots of `slot` bytes (the same at every member). A
/// vector that fits in a slot goes in one chunk: one step fewer than pipelining it,
/// which at 4 and 8 ranks on 2 CPUs measured 0.6-0.8x the time at 1 MiB. Longer ones
/// take whole slots while every member has a CPU, and also at up to two members per CPU
/// when each byte goes to one member (MPI_Reduce, the reduce-scatters: 0.8-0.95x the
/// time of 256 KiB chunks at 4 ranks on 2 CPUs, 8-64 MiB). Otherwise 256 KiB: with
/// more members per CPU, or when every member copies every chunk out (MPI_Allreduce),
/// 1 MiB chunks took 1.05-1.3x the time of 256 KiB ones at 2-8 MiB.
fn chunk_size(slot: usize, total: usize, n: usize, sole: bool) -> usize {
    let cpus = super::direct::cpus_online();
    if total <= slot || n <= cpus || (sole && n <= 2 * cpus) {
        slot
    } else {
        slot.min(SHARED_CPU_CHUNK)
    }
}

/// What one member contributes and receives.
pub struct Part {
    /// The input vector; `None` means MPI_IN_PLACE: the input is `recv[0..total]`.
    pub send: Option<UserBuf>,
    /// Where this member's part of the result goes.
    pub recv: UserBuf,
    /// The byte range of the result vector this member receives (`lo..hi`), written at
    /// `recv[off - lo]`.
    pub lo: usize,
    pub hi: usize,
}

impl Part {
    pub(super) fn input(&self, off: usize, dst: &mut [u8]) {
        match &self.send {
            Some(s) => s.read_at(off, dst),
            None => self.recv.read_at(off, dst),
        }
    }
    /// Bytes `off..off + len` of the input, where they are.
    pub(super) fn input_slice(&self, off: usize, len: usize) -> &[u8] {
        let whole = match &self.send {
            Some(s) => s.as_slice(),
            None => self.recv.as_slice(),
        };
        &whole[off..off + len]
    }
}

/// 0, 1, ..., n-1: every member of a channel of `n`, in rank order (no allocation for
/// up to 256 members).
pub(super) fn members(n: usize) -> std::borrow::Cow<'static, [usize]> {
    static IOTA: [usize; 256] = {
        let mut a = [0usize; 256];
        let mut i = 0;
        while i < 256 {
            a[i] = i;
            i += 1;
        }
        a
    };
    match IOTA.get(..n) {
        Some(m) => m.into(),
        None => (0..n).collect::<Vec<_>>().into(),
    }
}

/// Member `r`'s share of a chunk of `len` bytes among `k` contributors, in bytes, cut
/// at whole elements of `e` bytes.
fn byte_share(len: usize, e: usize, k: usize, r: usize) -> (usize, usize) {
    let (a, b) = share(len / e, k, r);
    (a * e, b * e)
}

/// Bytes of the accumulator folded at a time: small enough to stay in the first-level
/// cache while every source's block is applied to it, so a long fold streams each source
/// once and the accumulator once instead of once per source.
const FOLD_BLOCK: usize = 8 << 10;

/// Folds `srcs` (in rank order) into `acc` as the module comment says. `acc` must not
/// overlap any source.
pub(crate) fn fold(red: &Reduction<'_>, srcs: &[&[u8]], acc: &mut [u8]) -> MpiResult<()> {
    if let Some(m) = red.multi.filter(|_| red.commutative) {
        // (the same order, in one pass over every source and the accumulator)
        m(srcs, acc);
        return Ok(());
    }
    let n = srcs.len();
    if n == 0 {
        return Ok(());
    }
    let e = red.extent.max(1);
    let block = (FOLD_BLOCK / e).max(1) * e;
    if n > 2 && acc.len() > block {
        // The same fold, block by block (each element still sees the same operands in
        // the same order, so the bits are those of the whole-vector fold).
        let mut blk: Vec<&[u8]> = Vec::with_capacity(n);
        for (i, a) in acc.chunks_mut(block).enumerate() {
            blk.clear();
            blk.extend(srcs.iter().map(|s| &s[i * block..i * block + a.len()]));
            fold_whole(red, &blk, a)?;
        }
        return Ok(());
    }
    fold_whole(red, srcs, acc)
}

fn fold_whole(red: &Reduction<'_>, srcs: &[&[u8]], acc: &mut [u8]) -> MpiResult<()> {
    let n = srcs.len();
    if red.commutative {
        acc.copy_from_slice(srcs[0]);
        for s in &srcs[1..] {
            (red.f)(s, acc)?;
        }
    } else {
        acc.copy_from_slice(srcs[n - 1]);
        for s in srcs[..n - 1].iter().rev() {
            (red.f)(s, acc)?;
        }
    }
    Ok(())
}

/// The reduction of every member's `total`-byte vector; each member receives the part
/// its `Part` names.
pub async fn reduce_vector(
    comm: &Comm,
    total: usize,
    red: &Reduction<'_>,
    part: &Part,
    kind: super::direct::Kind,
) -> MpiResult<()> {
    use super::select::ReducePath;
    let ch = Chan::new(comm)?;
    let path = super::select::reduce(
        kind,
        total,
        red.extent,
        &super::select::Group::of(&ch),
        crate::settings::job(),
    );
    if path == ReducePath::Posted {
        return super::post::reduce(&ch, total, red, part).await;
    }
    ch.settle().await;
    if path == ReducePath::Alone {
        if let Some(s) = &part.send {
            if part.hi > part.lo {
                let mut tmp = vec![0u8; part.hi - part.lo];
                s.read_at(part.lo, &mut tmp);
                part.recv.write_at(0, &tmp);
            }
        } else if part.lo > 0 && part.hi > part.lo {
            // In place with the output at the start of recv (reduce_scatter).
            let mut tmp = vec![0u8; part.hi - part.lo];
            part.recv.read_at(part.lo, &mut tmp);
            part.recv.write_at(0, &tmp);
        }
        return Ok(());
    }
    let fold = match path {
        ReducePath::Adaptive(fold) => return adaptive(&ch, total, red, part, kind, fold).await,
        ReducePath::Direct(fold) => {
            // (boxed: a large future, and a large vector, where one allocation is
            // nothing; inline, its state would be copied with every small reduction's
            // future)
            if Box::pin(super::direct::reduce(&ch, total, red, part)).await? {
                return Ok(());
            }
            fold
        }
        ReducePath::Arena(fold) => fold,
        ReducePath::Posted | ReducePath::Alone => unreachable!("taken above"),
    };
    reduce_fold(&ch, total, red, part, kind, fold).await
}

/// The arena's fold `fold` (coll/select.rs `Fold`) of a reduction of `kind`.
async fn reduce_fold(
    ch: &Chan<'_>,
    total: usize,
    red: &Reduction<'_>,
    part: &Part,
    kind: super::direct::Kind,
    fold: super::select::Fold,
) -> MpiResult<()> {
    match fold {
        super::select::Fold::Chain => Box::pin(super::chain::reduce(ch, total, red, part)).await,
        super::select::Fold::Steps { one } => {
            // Only MPI_Allreduce delivers a byte to more than one member.
            let sole = kind != super::direct::Kind::All;
            reduce_group(ch, total, red, part, &members(ch.n), sole, one).await
        }
    }
}

/// The path word of a channel (shm `CHAN_PATH`): the channel's generation (16 bits),
/// the first step `f` of the latest choice (46 bits), the path from `f` on and the
/// path before it (1 bit each, 1: direct). A word of another generation (an earlier
/// communicator's) says: the arena path everywhere.
fn path_word(gen: u64, f: u64, new: bool, old: bool) -> u64 {
    (gen & 0xffff) << 48 | (f & ((1 << 46) - 1)) << 2 | (new as u64) << 1 | old as u64
}

/// What path word `w` says for generation `gen`: (`f`, path from `f` on, path before).
fn read_path_word(w: u64, gen: u64) -> (u64, bool, bool) {
    if w >> 48 != gen & 0xffff {
        return (0, false, false);
    }
    ((w >> 2) & ((1 << 46) - 1), w & 2 != 0, w & 1 != 0)
}

/// A reduction of coll/select.rs `adaptive`: the direct path or the arena's `fold` (the
/// one-step path, the chain or the pipeline, as without the choice).
///
/// Every member must take the same path without a step spent on agreeing. Member 0
/// alone writes the channel's path word: "from step `f` on, path X; before it, path Y";
/// every member reads it at the start of the call and takes the path it says for the
/// call's first step (the same step number at every member). Member 0 chooses `f`
/// beyond any step another member can have reached (its own step plus twice the post
/// ring's length: a member runs at most one ring ahead of the slowest, plus the chunks
/// of a ring broadcast), so nobody has read the word for a step at or after `f` yet;
/// and it rewrites the word only once every member has passed the
/// previous `f` (so that the path before the new `f`, which it copies, is the one every
/// member took there). Member 0 times its calls and asks its [`super::direct::Chooser`]
/// which path the calls to come should take.
async fn adaptive(
    ch: &Chan<'_>,
    total: usize,
    red: &Reduction<'_>,
    part: &Part,
    kind: super::direct::Kind,
    fold: super::select::Fold,
) -> MpiResult<()> {
    use super::direct::CHOOSER;
    let a = &ch.job.arena;
    let word = a.chan_path(ch.comm.ctx);
    let gen = ch.ctl().post_gen;
    let s0 = ch.comm.coll.step.load(Ordering::Relaxed) + 1;
    let (f, new, old) = read_path_word(word.load(Ordering::Acquire), gen);
    let want_direct = if s0 >= f { new } else { old };
    let t0 = std::time::Instant::now();
    let direct = want_direct && Box::pin(super::direct::reduce(ch, total, red, part)).await?;
    if !direct {
        reduce_fold(ch, total, red, part, kind, fold).await?;
    }
    if ch.me == 0 {
        let now = std::time::Instant::now();
        let mut c = CHOOSER.lock().unwrap_or_else(|e| e.into_inner());
        c.record(kind, total, !direct, now - t0, now);
        let wish = !c.arena(kind, total, now);
        drop(c);
        let (f, new, _) = read_path_word(word.load(Ordering::Relaxed), gen);
        if wish != new && ch.ctl().lowest(a, ch.n).is_some_and(|low| low >= f) {
            // (a member runs at most the post ring ahead of the slowest, plus the
            // chunks of one ring broadcast: 2 rings are beyond reach)
            let at = ch.comm.coll.step.load(Ordering::Relaxed) + 2 * ch.ctl().post_k + 64;
            word.store(path_word(gen, at, wish, new), Ordering::Release);
        }
    }
    Ok(())
}

/// The slices `f(i)` of the members in `contrib`, in order, handed to `g`: on the stack
/// for up to 16 members (a collective's hot path makes no allocation), else in a vector.
pub(super) fn with_sources<'s, R>(
    contrib: &[usize],
    f: impl Fn(usize) -> &'s [u8],
    g: impl FnOnce(&[&'s [u8]]) -> R,
) -> R {
    const ON_STACK: usize = 16;
    // (the common small cases without filling the 16-slot array first)
    if let [a, b] = contrib {
        return g(&[f(*a), f(*b)]);
    }
    if contrib.len() <= 4 {
        let mut buf: [&[u8]; 4] = [&[]; 4];
        for (b, &i) in buf.iter_mut().zip(contrib) {
            *b = f(i);
        }
        return g(&buf[..contrib.len()]);
    }
    if contrib.len() <= ON_STACK {
        let mut buf: [&[u8]; ON_STACK] = [&[]; ON_STACK];
        for (b, &i) in buf.iter_mut().zip(contrib) {
            *b = f(i);
        }
        g(&buf[..contrib.len()])
    } else {
        let v: Vec<&[u8]> = contrib.iter().map(|&i| f(i)).collect();
        g(&v)
    }
}

/// The reduction of the vectors of the channel members `contrib` (in canonical order);
/// the contributors share the work, and every member whose `Part` names a range
/// receives it. Every channel member calls this with the same `total` and `contrib`.
/// `sole` (the same everywhere): no byte of the result goes to more than one member, so
/// a contributor folds the part of its share that it receives itself straight into its
/// receive buffer, not through the result buffer. Vectors of at most `one` bytes (at
/// least [`SMALL`]; the same everywhere) that fit in a chunk go in one step.
pub async fn reduce_group(
    ch: &Chan<'_>,
    total: usize,
    red: &Reduction<'_>,
    part: &Part,
    contrib: &[usize],
    sole: bool,
    one: usize,
) -> MpiResult<()> {
    let e = red.extent.max(1);
    let k = contrib.len();
    let my_share = contrib.iter().position(|&c| c == ch.me);
    let chunk_bytes = chunk_size(ch.slot_bytes, total, ch.n, sole);
    let chunk = (chunk_bytes / e) * e;
    if total > 0 && chunk == 0 {
        return Box::pin(reduce_big(ch, total, red, part, contrib)).await;
    }
    if total <= one.max(SMALL).min(chunk) {
        let (_, p) = ch.next_step();
        if total > 0 && my_share.is_some() {
            // SAFETY: this member's own slot of this step, nobody else's until the step
            // publishes it; the input is the user's buffer, not arena memory.
            part.input(0, unsafe { ch.slice_mut(ch.slot(ch.me, p), total) });
        }
        ch.step().await?;
        if part.hi > part.lo {
            // SAFETY: the receive buffer this reduction owns; the sources are slots.
            let out = unsafe { &mut part.recv.as_mut_slice()[..part.hi - part.lo] };
            with_sources(
                contrib,
                |i| ch.slice(ch.slot(i, p) + part.lo, part.hi - part.lo),
                |srcs| fold(red, srcs, out),
            )?;
        }
        return Ok(());
    }
    let nchunks = total.div_ceil(chunk);
    let nt = crate::p2p::buf::streaming(part.hi - part.lo);
    // The bytes of chunk (start, len) I fold straight into my receive buffer: my share
    // where I alone receive it, not in place (the output would overlap my input).
    let direct = |start: usize, len: usize| -> (usize, usize) {
        match my_share {
            Some(r) if sole && part.send.is_some() => {
                let (a, b) = byte_share(len, e, k, r);
                let (x, y) = ((start + a).max(part.lo), (start + b).min(part.hi));
                if y > x {
                    (x, y)
                } else {
                    (0, 0)
                }
            }
            _ => (0, 0),
        }
    };
    let mut prev: Option<(usize, usize, usize)> = None; // (chunk start, len, parity)
    for t in 0..=nchunks {
        let (_, p) = ch.next_step();
        let cur = (t < nchunks).then(|| {
            let start = t * chunk;
            (start, chunk.min(total - start))
        });
        if let (Some((start, len)), Some(r)) = (cur, my_share) {
            // Only the other members' shares go through my slot: I fold my own share
            // straight from my input (one copy less of an n-th of the vector; at 2
            // members half the copying in).
            let (a, b) = byte_share(len, e, k, r);
            let slot = ch.slot(ch.me, p);
            // SAFETY: this member's own slot of this step (two disjoint ranges, one at
            // a time), nobody else's until the step publishes it.
            part.input(start, unsafe { ch.slice_mut(slot, a) });
            // SAFETY: as above.
            part.input(start + b, unsafe { ch.slice_mut(slot + b, len - b) });
        }
        ch.step().await?;
        if let Some((start, len, pp)) = prev {
            // What I receive of the chunk, but for what I folded there myself.
            let (lo, hi) = (part.lo.max(start), part.hi.min(start + len));
            let (x, y) = match direct(start, len) {
                (x, y) if y > x => (x, y),
                _ => (lo, lo),
            };
            for (lo, hi) in [(lo, x), (y, hi)] {
                if hi > lo {
                    part.recv.write_at_nt(
                        lo - part.lo,
                        ch.slice(ch.result(pp) + (lo - start), hi - lo),
                        nt,
                    );
                }
            }
        }
        if let Some((start, len)) = cur {
            if let Some(r) = my_share {
                let (a, b) = byte_share(len, e, k, r);
                let (x, y) = direct(start, len);
                // My share in up to three pieces (chunk offsets): before what I fold
                // into my receive buffer, that, and after it.
                let (x, y) = if y > x {
                    (x - start, y - start)
                } else {
                    (b, b)
                };
                for (u, v) in [(a, x), (x, y), (y, b)] {
                    if v <= u {
                        continue;
                    }
                    let out = if u == x && v == y {
                        // SAFETY: the receive buffer this reduction owns; `direct` is
                        // only set with a send buffer, so the input is not this buffer.
                        let r = unsafe { part.recv.as_mut_slice() };
                        &mut r[start + u - part.lo..start + v - part.lo]
                    } else {
                        // SAFETY: my share of this step's result area, mine alone until
                        // the next step publishes it (readers wait for that step).
                        unsafe { ch.slice_mut(ch.result(p) + u, v - u) }
                    };
                    let mine = part.input_slice(start + u, v - u);
                    with_sources(
                        contrib,
                        |i| {
                            if i == ch.me {
                                mine
                            } else {
                                ch.slice(ch.slot(i, p) + u, v - u)
                            }
                        },
                        |srcs| fold(red, srcs, out),
                    )?;
                }
            }
            prev = Some((start, len, p));
        }
    }
    Ok(())
}

/// Streams `total` bytes of member `from`'s vector through its slot, a slot at a time:
/// `fill(off, dst)` writes them at `from`, `take(off, chunk)` sees them everywhere after
/// each step (every channel member calls this with the same `from` and `total`).
async fn stream(
    ch: &Chan<'_>,
    from: usize,
    total: usize,
    fill: impl Fn(usize, &mut [u8]),
    mut take: impl FnMut(usize, &[u8]),
) -> MpiResult<()> {
    let slot = ch.slot_bytes;
    for start in (0..total).step_by(slot) {
        let (_, p) = ch.next_step();
        let len = slot.min(total - start);
        if ch.me == from {
            // SAFETY: `from`'s own slot of this step, nobody else's until the step.
            fill(start, unsafe { ch.slice_mut(ch.slot(from, p), len) });
        }
        ch.step().await?;
        take(start, ch.slice(ch.slot(from, p), len));
    }
    Ok(())
}

/// The contributors in the order the fold takes them: `acc = x_first`, then
/// `acc = x op acc` for each following one (module comment).
fn fold_order(red: &Reduction<'_>, contrib: &[usize]) -> Vec<usize> {
    let mut v = contrib.to_vec();
    if !red.commutative {
        v.reverse();
    }
    v
}

/// The reduction when one element (a user operation's datatype extent) is larger than
/// a channel slot, so that no chunk of the pipeline holds a whole element: member 0
/// collects the contributors' whole vectors one after another (each streamed through
/// its owner's slot) and folds each into an accumulator in the canonical order; then it
/// streams the result through its own slot and every member keeps the part it
/// receives. Each element is still reduced once, by one member, and everyone gets the
/// same bits. One step per slot of data per contributor, and two vectors of memory at
/// member 0: only such elements come here.
async fn reduce_big(
    ch: &Chan<'_>,
    total: usize,
    red: &Reduction<'_>,
    part: &Part,
    contrib: &[usize],
) -> MpiResult<()> {
    let folder = ch.me == 0;
    let size = if folder { total } else { 0 };
    // (kept staging vectors: two fresh vectors of a large element, faulted in and
    // cleared by the kernel, cost more than the fold)
    let (mut acc, mut tmp) = (Staging::new(size, true), Staging::new(size, true));
    let mut failed = None;
    for (k, c) in fold_order(red, contrib).into_iter().enumerate() {
        let dst = if k == 0 { &mut acc } else { &mut tmp };
        stream(
            ch,
            c,
            total,
            |off, d| part.input(off, d),
            |off, src| {
                if folder {
                    dst[off..off + src.len()].copy_from_slice(src)
                }
            },
        )
        .await?;
        if folder && k > 0 && failed.is_none() {
            failed = (red.f)(&tmp, &mut acc).err();
        }
    }
    // Member 0 tells everyone whether the fold failed before anyone takes its result.
    if folder {
        ch.put_args(&[failed.is_some() as u64]);
    }
    ch.step().await?;
    if let Some(e) = failed {
        return Err(e);
    }
    if ch.peer_args(0, 0) != 0 {
        return Err(crate::error::err(
            crate::abi::MPI_ERR_OTHER,
            "member 0 of the communicator failed to fold the vectors (its own error says why); no result".to_string(),
        ));
    }
    stream(
        ch,
        0,
        total,
        |off, d| d.copy_from_slice(&acc[off..off + d.len()]),
        |off, src| {
            let lo = part.lo.max(off);
            let hi = part.hi.min(off + src.len());
            if hi > lo {
                part.recv.write_at(lo - part.lo, &src[lo - off..hi - off]);
            }
        },
    )
    .await
}

/// MPI_Scan and MPI_Exscan when one element is larger than a channel slot (see
/// [`reduce_big`]): every member's vector is streamed to all in the fold order, and
/// each member folds the ones it needs (`0..upto`) into an accumulator.
async fn scan_big(
    ch: &Chan<'_>,
    total: usize,
    red: &Reduction<'_>,
    send: Option<UserBuf>,
    recv: UserBuf,
    upto: usize,
) -> MpiResult<()> {
    let size = if upto > 0 { total } else { 0 };
    // (kept staging vectors: two fresh vectors of a large element, faulted in and
    // cleared by the kernel, cost more than the fold)
    let (mut acc, mut tmp) = (Staging::new(size, true), Staging::new(size, true));
    let all: Vec<usize> = (0..ch.n).collect();
    let mut first = true;
    let mut failed = None;
    for c in fold_order(red, &all) {
        let wanted = c < upto;
        let dst = if first { &mut acc } else { &mut tmp };
        stream(
            ch,
            c,
            total,
            |off, d| match &send {
                Some(s) => s.read_at(off, d),
                None => recv.read_at(off, d),
            },
            |off, src| {
                if wanted {
                    dst[off..off + src.len()].copy_from_slice(src)
                }
            },
        )
        .await?;
        if wanted {
            if !first && failed.is_none() {
                failed = (red.f)(&tmp, &mut acc).err();
            }
            first = false;
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    if upto > 0 {
        recv.write_at(0, &acc);
    }
    Ok(())
}

/// MPI_Scan (inclusive) and MPI_Exscan: member i receives the fold of members 0..=i
/// (or 0..i).
pub async fn scan(
    comm: &Comm,
    total: usize,
    red: &Reduction<'_>,
    send: Option<UserBuf>,
    recv: UserBuf,
    exclusive: bool,
) -> MpiResult<()> {
    let ch = Chan::open(comm).await?;
    let n = ch.n;
    let e = red.extent.max(1);
    if n == 1 {
        if let (Some(s), false) = (&send, exclusive) {
            recv.write_at(0, s.as_slice());
        }
        return Ok(());
    }
    let chunk = (ch.slot_bytes / e) * e;
    let upto = if exclusive { ch.me } else { ch.me + 1 };
    if total > 0 && chunk == 0 {
        return Box::pin(scan_big(&ch, total, red, send, recv, upto)).await;
    }
    let nchunks = total.div_ceil(chunk).max(1);
    for t in 0..nchunks {
        let (_, p) = ch.next_step();
        let start = t * chunk;
        let len = chunk.min(total.saturating_sub(start));
        if len > 0 {
            // SAFETY: this member's own slot of this step, nobody else's until the step
            // publishes it; the buffers read are the user's, not arena memory.
            let dst = unsafe { ch.slice_mut(ch.slot(ch.me, p), len) };
            match &send {
                Some(s) => s.read_at(start, dst),
                None => recv.read_at(start, dst),
            }
        }
        ch.step().await?;
        if len > 0 && upto > 0 {
            let srcs: Vec<&[u8]> = (0..upto).map(|i| ch.slice(ch.slot(i, p), len)).collect();
            // SAFETY: the receive buffer this scan owns; the sources are slots.
            let out = unsafe { &mut recv.as_mut_slice()[start..start + len] };
            fold(red, &srcs, out)?;
        }
    }
    Ok(())
}

/// The blocking reduction of `total` bytes over an intracommunicator, with the
/// descriptor `desc` makes: an MPI_Reduce in a posted step when it applies
/// (coll/post.rs), else [`reduce_vector`] run in place.
#[inline(always)]
pub fn reduce_blocking(
    c: &Comm,
    total: usize,
    red: &Reduction<'_>,
    part: &Part,
    kind: super::direct::Kind,
    desc: impl Fn() -> super::agree::Desc,
) -> MpiResult<()> {
    if kind == super::direct::Kind::Rooted {
        if let Some(r) = super::post::reduce_now(c, total, red, part, &desc) {
            return r;
        }
    }
    let desc = desc();
    // Pinned where it is made: moving the engine's future into `run` would copy its
    // whole state (a large part of a small call).
    let fut = std::pin::pin!(async {
        c.coll.set_desc(desc);
        reduce_vector(c, total, red, part, kind).await
    });
    super::run(c, fut)
}
