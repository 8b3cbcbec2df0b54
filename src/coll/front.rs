//! The collectives' front: MPI_Barrier and the reductions of an already looked-up
//! communicator, with the caller's buffer addresses, counts, datatype and op handles.
//! Each returns a [`Plan`] (the blocking, nonblocking and persistent forms run it), or,
//! as `*_now`, runs the blocking call's fast path.
//!
//! A reduction's arguments are handled once ([`Geometry`], [`Layout`], [`part`]) for
//! both: the plan stages the data as [`RedData`] lays it out, the fast path hands the
//! engine the user's memory as it is ([`Native`]).
//!
//! Unsafe code here: the front functions take the C caller's buffer addresses, valid
//! as the MPI standard requires (each says so in its `# Safety` section).
use super::agree::{kind_of, Desc, ANY};
use super::direct::Kind;
use super::inter;
use super::nb::CollFuture;
use super::plan::Plan;
use super::reduce::{self, Part, Reduction};
use super::stage::{RedData, Stage};
use crate::abi::*;
use crate::args::{self, is_in_place};
use crate::comm::Comm;
use crate::datatype::predefined::Predef;
use crate::error::{err, MpiResult};
use crate::p2p::buf::{buffer, no_alias};
use crate::p2p::UserBuf;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// What a blocking call's fast path returns: `None` when it does not apply (nothing has
/// happened; the full path runs and reports any wrong argument).
pub type Now = Option<MpiResult<()>>;

/// The communicator of a blocking call's fast path: `None` outside MPI_Init..Finalize
/// or for a handle that does not resolve (the full path reports it).
#[inline(always)]
pub fn comm_now(h: i32) -> Option<Arc<Comm>> {
    if crate::runtime::state() != crate::runtime::INITIALIZED {
        return None;
    }
    crate::comm::get(h).ok()
}

/// MPI_Barrier (over the channel: both groups of an intercommunicator take part).
pub fn barrier(c: &Arc<Comm>) -> Plan {
    let cc = c.clone();
    let body: CollFuture = Box::pin(async move {
        cc.coll.set_desc(Desc::kind(kind_of("MPI_Barrier")));
        super::barrier(&cc).await
    });
    Ok((c.clone(), body))
}

/// The blocking MPI_Barrier without the plan's boxing.
#[inline(always)]
pub fn barrier_now(c: &Arc<Comm>) -> Now {
    let fut = std::pin::pin!(async {
        c.coll.set_desc(Desc::kind(kind_of("MPI_Barrier")));
        super::barrier(c).await
    });
    Some(super::run(c, fut))
}

/// Which reduction, with its counts: checked ones (`usize`), or for a fast path the C
/// caller's counts array as it is.
#[derive(Clone, Copy)]
pub enum Shape<'a, C = usize> {
    /// MPI_Allreduce of `n` instances.
    All(usize),
    /// MPI_Reduce of `n` instances to the root argument.
    Root(usize, c_int),
    /// MPI_Reduce_scatter_block: `n` instances to each member.
    Block(usize),
    /// MPI_Reduce_scatter: `counts[i]` instances to member i.
    Counts(&'a [C]),
    /// MPI_Scan of `n` instances, or (`true`) MPI_Exscan.
    Scan(usize, bool),
}

impl Shape<'static> {
    /// MPI_Allreduce of `n` instances, or (`block`) MPI_Reduce_scatter_block of `n`
    /// instances to each member.
    #[inline(always)]
    pub fn all(n: usize, block: bool) -> Self {
        if block {
            Shape::Block(n)
        } else {
            Shape::All(n)
        }
    }

    /// MPI_Reduce of `n` instances to `root`.
    #[inline(always)]
    pub fn root(n: usize, root: c_int) -> Self {
        Shape::Root(n, root)
    }

    /// MPI_Scan of `n` instances, or (`exclusive`) MPI_Exscan.
    pub fn scan(n: usize, exclusive: bool) -> Self {
        Shape::Scan(n, exclusive)
    }
}

/// A reduction as this member sees it, in instances: the whole vector (`sum`), the
/// part it receives (`lo`, `my`), and what the agreement descriptor and the engine are
/// told.
struct Geometry {
    sum: usize,
    lo: usize,
    my: usize,
    /// Whether this member receives (all but the non-roots of MPI_Reduce).
    receives: bool,
    /// The collective's number (`agree::kind_of`).
    coll: u16,
    root: Option<usize>,
    extra: u64,
    kind: Kind,
}

/// The geometry of `shape` on `c`; `None` when a count is negative or the vector's
/// length overflows. `root` is the checked root of MPI_Reduce.
#[inline(always)]
fn geometry<C: Copy + TryInto<usize>>(
    c: &Comm,
    shape: Shape<'_, C>,
    root: Option<usize>,
) -> Option<Geometry> {
    let (me, size) = (c.rank, c.size());
    let g = |sum, lo, my, name, extra, kind| Geometry {
        sum,
        lo,
        my,
        receives: root.is_none_or(|r| r == me),
        coll: kind_of(name),
        root,
        extra,
        kind,
    };
    Some(match shape {
        Shape::All(n) => g(n, 0, n, "MPI_Allreduce", ANY, Kind::All),
        Shape::Scan(n, false) => g(n, 0, n, "MPI_Scan", ANY, Kind::All),
        Shape::Scan(n, true) => g(n, 0, n, "MPI_Exscan", ANY, Kind::All),
        Shape::Root(n, _) if root == Some(me) => g(n, 0, n, "MPI_Reduce", ANY, Kind::Rooted),
        Shape::Root(n, _) => g(n, 0, 0, "MPI_Reduce", ANY, Kind::Rooted),
        Shape::Block(n) => {
            let extra = counts_hash(std::iter::repeat_n(n, size));
            let kind = if n == 0 { Kind::Arena } else { Kind::Scatter };
            g(
                n.checked_mul(size)?,
                n * me,
                n,
                "MPI_Reduce_scatter_block",
                extra,
                kind,
            )
        }
        Shape::Counts(counts) => {
            let (mut sum, mut lo, mut zero) = (0usize, 0usize, false);
            for (i, &k) in counts.iter().enumerate() {
                let k: usize = k.try_into().ok()?;
                sum = sum.checked_add(k)?;
                lo += if i < me { k } else { 0 };
                zero |= k == 0;
            }
            let my = counts[me].try_into().ok()?;
            let extra = counts_hash(counts.iter().map(|&k| k.try_into().ok().unwrap_or(0)));
            let kind = if zero { Kind::Arena } else { Kind::Scatter };
            g(sum, lo, my, "MPI_Reduce_scatter", extra, kind)
        }
    })
}

/// The agreement word of a reduce-scatter's counts (which must be identical everywhere).
fn counts_hash(counts: impl Iterator<Item = usize>) -> u64 {
    counts.fold(0xcbf2_9ce4_8422_2325u64, |h, k| {
        (h ^ k as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// How a reduction's buffers become the engine's bytes: [`RedData`] for every datatype
/// and op, [`Native`] for the fast path's predefined ones.
trait Layout {
    /// What the staging of inputs and outputs keeps ([`Stage`], or nothing).
    type St: Default;
    /// Whether the engine reads the user's memory as it is (MPI_IN_PLACE needs no copy).
    fn native(&self) -> bool;
    fn bytes(&self, n: usize) -> MpiResult<usize>;
    fn input(&self, st: &mut Self::St, p: *const c_void, n: usize, arg: &str)
        -> MpiResult<UserBuf>;
    fn output(&self, st: &mut Self::St, p: *mut c_void, n: usize, arg: &str) -> MpiResult<UserBuf>;
    fn desc(&self, kind: u16, root: Option<usize>, n: usize) -> Desc;
}

impl Layout for RedData {
    type St = Stage;
    fn native(&self) -> bool {
        RedData::native(self)
    }
    fn bytes(&self, n: usize) -> MpiResult<usize> {
        RedData::bytes(self, n)
    }
    fn input(&self, st: &mut Stage, p: *const c_void, n: usize, arg: &str) -> MpiResult<UserBuf> {
        RedData::input(self, st, p, n, arg)
    }
    fn output(&self, st: &mut Stage, p: *mut c_void, n: usize, arg: &str) -> MpiResult<UserBuf> {
        RedData::output(self, st, p, n, arg)
    }
    fn desc(&self, kind: u16, root: Option<usize>, n: usize) -> Desc {
        RedData::desc(self, kind, root, n)
    }
}

/// A predefined datatype (`p`, handle `dt`) with a predefined operation (handle `op`)
/// defined on it: the user's memory as it is, compared by handle in the descriptor
/// (what [`RedData`] does with them).
struct Native {
    p: &'static Predef,
    op: i32,
}

impl Layout for Native {
    type St = ();
    fn native(&self) -> bool {
        true
    }
    #[inline(always)]
    fn bytes(&self, n: usize) -> MpiResult<usize> {
        n.checked_mul(self.p.extent)
            .ok_or_else(|| err(MPI_ERR_COUNT, "count overflows"))
    }
    #[inline(always)]
    fn input(&self, _: &mut (), p: *const c_void, n: usize, arg: &str) -> MpiResult<UserBuf> {
        // SAFETY: the front's contract: the caller's buffer, valid as MPI requires.
        unsafe { buffer(p, self.bytes(n)?, arg) }
    }
    #[inline(always)]
    fn output(&self, st: &mut (), p: *mut c_void, n: usize, arg: &str) -> MpiResult<UserBuf> {
        self.input(st, p, n, arg)
    }
    #[inline(always)]
    fn desc(&self, kind: u16, root: Option<usize>, n: usize) -> Desc {
        Desc {
            kind,
            root: root.map_or(ANY, |r| r as u64),
            op: self.op as u32 as u64,
            dtype: self.p.handle as u32 as u64,
            bytes: (n as u64).wrapping_mul(self.p.size as u64),
            extra: ANY,
        }
    }
}

/// The engine's bytes of a reduction (the whole vector's length) and this member's
/// part, checked and staged in `st`.
///
/// # Safety
/// `sendbuf` and `recvbuf` are the C caller's, valid as the MPI standard requires.
#[inline(always)]
unsafe fn part<L: Layout>(
    l: &L,
    st: &mut L::St,
    c: &Comm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    g: &Geometry,
) -> MpiResult<(usize, Part)> {
    let total = l.bytes(g.sum)?;
    let (lo, my) = (l.bytes(g.lo)?, l.bytes(g.my)?);
    let (send, recv) = if !g.receives {
        if is_in_place(sendbuf) {
            let (me, root) = (c.rank, g.root.unwrap_or(0));
            return Err(err(
                MPI_ERR_BUFFER,
                format!("sendbuf is MPI_IN_PLACE on rank {me}, which is not the root ({root})"),
            ));
        }
        let send = l.input(st, sendbuf, g.sum, "sendbuf")?;
        (Some(send), UserBuf::empty())
    } else if is_in_place(sendbuf) && l.native() {
        // The engine reads the input from the receive buffer itself.
        // SAFETY: this function's contract.
        (None, unsafe { buffer(recvbuf, total, "recvbuf") }?)
    } else if is_in_place(sendbuf) {
        // The input is the whole vector in recvbuf; this member's part goes to its start.
        let send = l.input(st, recvbuf, g.sum, "recvbuf")?;
        (Some(send), l.output(st, recvbuf, g.my, "recvbuf")?)
    } else {
        let recv = l.output(st, recvbuf, g.my, "recvbuf")?;
        let send = l.input(st, sendbuf, g.sum, "sendbuf")?;
        if l.native() {
            no_alias(&send, &recv, "sendbuf/recvbuf")?;
        }
        (Some(send), recv)
    };
    let hi = lo + my;
    Ok((total, Part { send, recv, lo, hi }))
}

/// A reduction as a plan: reduce the vector (or scan it), deliver this member's part,
/// unpack what was staged. The scans are defined on intracommunicators only.
///
/// # Safety
/// `sendbuf` (unless MPI_IN_PLACE) and `recvbuf` are the C caller's, valid as the MPI
/// standard requires of the call.
pub unsafe fn reduce(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    shape: Shape<'_>,
    datatype: i32,
    op: i32,
) -> Plan {
    if c.is_inter() {
        // This group's vector, and the first instance and the number of instances of
        // the other group's that this process receives.
        let (me, size) = (c.rank, c.size());
        let (sum, lo, my) = match shape {
            Shape::Root(n, root) => {
                // SAFETY: this function's contract.
                return unsafe { inter::reduce_plan(c, sendbuf, recvbuf, n, datatype, op, root) };
            }
            Shape::All(n) => (Some(n), 0, n),
            Shape::Scan(..) => return Err(super::plan::intra_only()),
            Shape::Block(n) => (n.checked_mul(size), n.saturating_mul(me), n),
            Shape::Counts(k) => {
                let sum = k.iter().try_fold(0usize, |s, &k| s.checked_add(k));
                (sum, k[..me].iter().sum(), k[me])
            }
        };
        // SAFETY: this function's contract.
        return unsafe { inter::both_ways_plan(c, sendbuf, recvbuf, sum, lo, my, datatype, op) };
    }
    let rd = RedData::new(datatype, op)?;
    let root = match shape {
        Shape::Root(_, r) => Some(args::root(r, c)?),
        _ => None,
    };
    let g = geometry(c, shape, root)
        .ok_or_else(|| err(MPI_ERR_COUNT, "the vector's length overflows"))?;
    let mut st = Stage::default();
    // SAFETY: this function's contract.
    let (total, part) = unsafe { part(&rd, &mut st, c, sendbuf, recvbuf, &g) }?;
    let desc = Desc {
        extra: g.extra,
        ..rd.desc(g.coll, g.root, g.sum)
    };
    let scan = match shape {
        Shape::Scan(_, exclusive) => Some(exclusive),
        _ => None,
    };
    let cc = c.clone();
    let body: CollFuture = Box::pin(async move {
        cc.coll.set_desc(desc);
        let f = rd.func();
        let red = rd.reduction(&f);
        match scan {
            Some(exclusive) => {
                reduce::scan(&cc, total, &red, part.send, part.recv, exclusive).await?;
                // MPI_Exscan leaves rank 0's receive buffer undefined: do not write it
                // back.
                if exclusive && cc.rank == 0 {
                    return Ok(());
                }
            }
            _ => reduce::reduce_vector(&cc, total, &red, &part, g.kind).await?,
        }
        st.finish()
    });
    Ok((c.clone(), body))
}

/// The fast path of the blocking [`reduce`]: with a predefined operation on a
/// predefined datatype it is defined on, over an intracommunicator, with arguments that
/// pass every check, the same engine (`reduce_blocking`, with the descriptor the plan
/// would publish) without the plan's staging, boxing and bookkeeping, which cost more
/// than a small reduction itself. A negative count in `Shape::Counts`: `None`.
///
/// # Safety
/// As [`reduce`].
#[inline(always)]
pub unsafe fn reduce_now<C: Copy + TryInto<usize>>(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    shape: Shape<'_, C>,
    datatype: i32,
    op: i32,
) -> Now {
    let b = crate::op::BuiltinOp::from_handle(op)?;
    let p = crate::datatype::predefined::lookup(datatype)?;
    let (k, multi) = crate::op::predefined_kernels(b, p)?;
    if c.is_inter() {
        return None;
    }
    let root = match shape {
        Shape::Root(_, r) => Some(usize::try_from(r).ok().filter(|&r| r < c.size())?),
        Shape::Scan(..) => return None,
        _ => None,
    };
    let g = geometry(c, shape, root)?;
    let l = Native { p, op };
    // SAFETY: this function's contract.
    let (total, part) = unsafe { part(&l, &mut (), c, sendbuf, recvbuf, &g) }.ok()?;
    if total == 0 {
        return None;
    }
    let f = |a: &[u8], b: &mut [u8]| {
        k(a, b);
        Ok(())
    };
    let red = Reduction {
        f: &f,
        commutative: true,
        extent: p.extent,
        multi,
    };
    let desc = || Desc {
        extra: g.extra,
        ..l.desc(g.coll, g.root, g.sum)
    };
    Some(reduce::reduce_blocking(c, total, &red, &part, g.kind, desc))
}
