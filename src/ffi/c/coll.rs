//! Collective entry points: validate, convert, call the engine in coll/.
//!
//! Every collective is written once as a *plan*: the arguments are checked and staged
//! synchronously (so argument errors come back from the call itself), and the rest is
//! an owned `async` body. [`coll_entry!`] makes from one plan both the blocking call
//! (`MPI_Allreduce`: the body runs to completion in place) and its nonblocking twin
//! (`MPI_Iallreduce`: the body becomes the request, polled by the progress engine).
use crate::abi::*;
use crate::coll::agree::{kind_of, Desc};
use crate::coll::direct::Kind;
use crate::coll::nb::CollFuture;
use crate::coll::reduce::{self, Part};
use crate::coll::stage::{RedData, Stage};
use crate::comm::Comm;
use crate::error::{err, MpiResult};
use crate::ffi::check::{self, is_in_place};
use crate::p2p::UserBuf;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

use super::coll_inter;
pub use crate::coll::plan::{
    intra, move_desc, run_plan, start_plan_id, with_desc, with_flows, Plan,
};

/// Starts a plan as a nonblocking collective and returns its request handle.
pub fn start_plan(name: &'static str, p: Plan, request: *mut i32) -> MpiResult<()> {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let id = start_plan_id(name, p)?;
    // SAFETY: `request`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(request, super::p2p::req_handle(id), "request") }
}

/// Creates a persistent collective request (MPI_*_init) running `make`'s plan at each
/// MPI_Start.
pub fn init_plan(
    name: &'static str,
    comm: i32,
    info: i32,
    make: impl Fn(i32) -> Plan + Send + Sync + 'static,
    request: *mut i32,
) -> MpiResult<()> {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    super::info::check_arg(info, "info")?;
    let h = super::persist::create(name, comm, make, move |p| start_plan_id(name, Ok(p)))?;
    // SAFETY: `request`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(request, h, "request") }
}

/// Exports a blocking collective and its nonblocking twin from one plan function taking
/// the blocking call's arguments. With `now = f`, the blocking call first tries
/// `f(args)`, which returns `None` when its fast path does not apply (see
/// [`reduce_now`]).
#[macro_export]
macro_rules! coll_entry {
    ($mpi:ident, $pmpi:ident, $impi:ident, $ipmpi:ident, $init:ident, $pinit:ident, $plan:path, $ec:ident, now = $now:path, ($($a:ident : $t:ty),* $(,)?)) => {
        $crate::mpi_entry!($mpi, $pmpi, ($($a: $t),*), errcomm = $ec, {
            match $now($($a),*) {
                Some(r) => r,
                None => $crate::ffi::c::coll::run_plan($plan($($a),*)),
            }
        });
        $crate::coll_entry!(@rest $impi, $ipmpi, $init, $pinit, $plan, $ec, ($($a: $t),*));
    };
    ($mpi:ident, $pmpi:ident, $impi:ident, $ipmpi:ident, $init:ident, $pinit:ident, $plan:path, $ec:ident, ($($a:ident : $t:ty),* $(,)?)) => {
        $crate::mpi_entry!($mpi, $pmpi, ($($a: $t),*), errcomm = $ec, {
            $crate::ffi::c::coll::run_plan($plan($($a),*))
        });
        $crate::coll_entry!(@rest $impi, $ipmpi, $init, $pinit, $plan, $ec, ($($a: $t),*));
    };
    (@rest $impi:ident, $ipmpi:ident, $init:ident, $pinit:ident, $plan:path, $ec:ident, ($($a:ident : $t:ty),* $(,)?)) => {
        $crate::mpi_entry!($impi, $ipmpi, ($($a: $t,)* request: *mut i32), errcomm = $ec, {
            $crate::ffi::c::coll::start_plan(stringify!($impi), $plan($($a),*), request)
        });
        $crate::mpi_entry!($init, $pinit, ($($a: $t,)* info: i32, request: *mut i32), errcomm = $ec, {
            let args = $crate::ffi::c::persist::Captured(($($a,)*));
            let make = move |on: i32| {
                // Bind the wrapper as a whole, so the closure captures it (not the raw
                // tuple inside) and stays Send.
                let whole = &args;
                let ($($a,)*) = whole.0;
                // (the communicator to plan on: the program's at the _init call, the
                // request's own context at every start)
                let $ec = {
                    let _ = $ec;
                    on
                };
                $plan($($a),*)
            };
            $crate::ffi::c::coll::init_plan(stringify!($init), $ec, info, make, request)
        });
    };
}

fn barrier_plan(comm: i32) -> Plan {
    // Over the channel: both groups of an intercommunicator take part, as required.
    let c = check::comm(comm)?;
    let cc = c.clone();
    Ok((
        c,
        Box::pin(async move {
            cc.coll.set_desc(Desc::kind(kind_of("MPI_Barrier")));
            crate::coll::barrier(&cc).await
        }),
    ))
}

/// The blocking MPI_Barrier without the plan's boxing (see [`reduce_now`]).
fn barrier_now(comm: i32) -> Option<MpiResult<()>> {
    if crate::runtime::state() != crate::runtime::INITIALIZED {
        return None;
    }
    let c = crate::comm::get(comm).ok()?;
    let fut = std::pin::pin!(async {
        c.coll.set_desc(Desc::kind(kind_of("MPI_Barrier")));
        crate::coll::barrier(&c).await
    });
    Some(crate::coll::run(&c, fut))
}

coll_entry!(MPI_Barrier, PMPI_Barrier, MPI_Ibarrier, PMPI_Ibarrier, MPI_Barrier_init, PMPI_Barrier_init, barrier_plan, comm, now = barrier_now, (comm: i32));

// ---------------------------------------------------------------- reductions
//
// The vector is `count` instances; `RedData` (ffi/typed.rs) decides how they are laid
// out in the engine (the user's memory, packed basic elements, or memory images) and
// stages non-contiguous data. With MPI_IN_PLACE on a native layout the engine reads the
// input from the receive buffer itself (Part::send = None).

fn red_args(
    count: i64,
    datatype: i32,
    op: i32,
    comm: i32,
) -> MpiResult<(Arc<Comm>, RedData, usize)> {
    red_args_on(intra(comm)?, count, datatype, op)
}

/// As [`red_args`] for an intracommunicator already looked up.
fn red_args_on(
    c: Arc<Comm>,
    count: i64,
    datatype: i32,
    op: i32,
) -> MpiResult<(Arc<Comm>, RedData, usize)> {
    let n = check::count(count, "count")?;
    Ok((c, RedData::new(datatype, op)?, n))
}

/// The input of `n` instances (`None`: in place with a native layout, read from `recv`).
fn input(
    rd: &RedData,
    st: &mut Stage,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: usize,
    recv: &UserBuf,
) -> MpiResult<Option<UserBuf>> {
    if is_in_place(sendbuf) {
        if rd.native() {
            return Ok(None);
        }
        return rd.input(st, recvbuf, n, "recvbuf").map(Some);
    }
    let s = rd.input(st, sendbuf, n, "sendbuf")?;
    if rd.native() {
        check::no_alias(&s, recv, "sendbuf/recvbuf")?;
    }
    Ok(Some(s))
}

/// The body shared by Reduce, Allreduce and Reduce_scatter(_block): reduce `total` bytes
/// and deliver `part`, then unpack staged outputs.
fn reduce_body(
    c: Arc<Comm>,
    rd: RedData,
    st: Stage,
    total: usize,
    part: Part,
    desc: Desc,
    kind: Kind,
) -> CollFuture {
    Box::pin(async move {
        c.coll.set_desc(desc);
        let f = rd.func();
        let red = rd.reduction(&f);
        reduce::reduce_vector(&c, total, &red, &part, kind).await?;
        st.finish()
    })
}

/// Which reduction a blocking fast path runs (see [`reduce_now`]).
#[derive(Clone, Copy)]
enum Shape<'a, C> {
    /// MPI_Allreduce.
    All,
    /// MPI_Reduce to this root.
    Root(c_int),
    /// MPI_Reduce_scatter_block: `count` is each member's block.
    Block,
    /// MPI_Reduce_scatter with these recvcounts (`count` is unused).
    Counts(&'a [C]),
}

/// The blocking MPI_Allreduce, MPI_Reduce and MPI_Reduce_scatter(_block) with a
/// predefined operation on a predefined datatype it is defined on, over an
/// intracommunicator, with arguments that pass every check: the same engine
/// (`reduce_vector`, after its turn, with the descriptor the full path would publish),
/// without the plan's staging, boxing and bookkeeping, which cost more than a small
/// reduction itself (one rank, 8 bytes: about 1,840 instructions a call through the
/// plan, 750 here). `None`: some condition does not hold, or an argument is wrong:
/// nothing has happened, and the full path runs (and reports it).
fn reduce_now<C: check::CInt>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: i32,
    op_h: i32,
    shape: Shape<'_, C>,
    comm: i32,
) -> Option<MpiResult<()>> {
    use crate::coll::agree::ANY;
    if crate::runtime::state() != crate::runtime::INITIALIZED {
        return None;
    }
    let n = usize::try_from(count.into()).ok()?;
    let b = crate::op::BuiltinOp::from_handle(op_h)?;
    let p = crate::datatype::predefined::lookup(datatype)?;
    let (k, multi) = crate::op::predefined_kernels(b, p)?;
    let c = crate::comm::get(comm).ok()?;
    if c.is_inter() {
        return None;
    }
    let size = c.size();
    // Instances in the whole vector, and the range of it this member receives.
    let (sum, lo_n, my_n) = match shape {
        Shape::All => (n, 0, n),
        Shape::Root(r) if usize::try_from(r).ok()? >= size => return None,
        Shape::Root(r) if r as usize == c.rank => (n, 0, n),
        Shape::Root(_) => (n, 0, 0),
        Shape::Block => (n.checked_mul(size)?, n * c.rank, n),
        Shape::Counts(counts) => {
            let (mut sum, mut lo) = (0usize, 0usize);
            for (i, &k) in counts.iter().enumerate() {
                let k = usize::try_from(k.into()).ok()?;
                sum = sum.checked_add(k)?;
                if i < c.rank {
                    lo += k;
                }
            }
            (sum, lo, usize::try_from(counts[c.rank].into()).ok()?)
        }
    };
    let total = sum.checked_mul(p.extent)?;
    let (lo, hi) = (lo_n * p.extent, (lo_n + my_n) * p.extent);
    let usable = |q: *const c_void| !q.is_null() && !is_in_place(q);
    let in_place = is_in_place(sendbuf);
    let non_root = matches!(shape, Shape::Root(r) if r as usize != c.rank);
    if total == 0
        || (in_place && non_root)
        || !(in_place || usable(sendbuf))
        || ((in_place || my_n > 0) && !usable(recvbuf))
    {
        return None;
    }
    // SAFETY: the standard requires the buffers the call uses to hold that many
    // elements of `datatype` (the bytes the full path's RedData sees); both were checked
    // non-NULL and not MPI_IN_PLACE.
    let buf = |q: *const c_void, bytes: usize| unsafe { UserBuf::new(q as *mut u8, bytes) };
    let (send, recv) = match (in_place, my_n) {
        (true, _) => (None, buf(recvbuf, total)),
        (false, 0) => (Some(buf(sendbuf, total)), UserBuf::empty()),
        (false, _) => (Some(buf(sendbuf, total)), buf(recvbuf, hi - lo)),
    };
    if send
        .as_ref()
        .is_some_and(|s| check::no_alias(s, &recv, "").is_err())
    {
        return None;
    }
    let (name, root, extra, kind) = match shape {
        Shape::All => ("MPI_Allreduce", ANY, ANY, Kind::All),
        Shape::Root(r) => ("MPI_Reduce", r as u64, ANY, Kind::Rooted),
        Shape::Block => (
            "MPI_Reduce_scatter_block",
            ANY,
            counts_hash(std::iter::repeat_n(n, size)),
            Kind::Scatter,
        ),
        Shape::Counts(counts) => (
            "MPI_Reduce_scatter",
            ANY,
            counts_hash(counts.iter().map(|&k| k.into() as usize)),
            if counts.iter().any(|&k| k.into() == 0) {
                Kind::Arena
            } else {
                Kind::Scatter
            },
        ),
    };
    let desc = || Desc {
        kind: kind_of(name),
        root,
        op: op_h as u32 as u64,
        dtype: datatype as u32 as u64,
        bytes: (sum as u64).wrapping_mul(p.size as u64),
        extra,
    };
    let f = |a: &[u8], b: &mut [u8]| {
        k(a, b);
        Ok(())
    };
    let red = reduce::Reduction {
        f: &f,
        commutative: true,
        extent: p.extent,
        multi,
    };
    let part = Part { send, recv, lo, hi };
    Some(reduce::reduce_blocking(&c, total, &red, &part, kind, desc))
}

/// The agreement word of a reduce-scatter's counts (which must be identical everywhere).
fn counts_hash(counts: impl Iterator<Item = usize>) -> u64 {
    counts.fold(0xcbf2_9ce4_8422_2325u64, |h, k| {
        (h ^ k as u64).wrapping_mul(0x100_0000_01b3)
    })
}

fn allreduce_now<C: check::CInt>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: i32,
    op: i32,
    comm: i32,
) -> Option<MpiResult<()>> {
    reduce_now(sendbuf, recvbuf, count, datatype, op, Shape::All, comm)
}

fn reduce_root_now<C: check::CInt>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: i32,
    op: i32,
    root: c_int,
    comm: i32,
) -> Option<MpiResult<()>> {
    reduce_now(
        sendbuf,
        recvbuf,
        count,
        datatype,
        op,
        Shape::Root(root),
        comm,
    )
}

fn reduce_scatter_now<C: check::CInt>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    datatype: i32,
    op: i32,
    comm: i32,
) -> Option<MpiResult<()>> {
    let size = crate::comm::get(comm).ok()?.size();
    // SAFETY: `recvcounts`: passed on from the entry point, valid as the MPI caller must pass it.
    let counts = unsafe { check::array(recvcounts, size, "recvcounts") }.ok()?;
    let n = *counts.first()?;
    reduce_now(
        sendbuf,
        recvbuf,
        n,
        datatype,
        op,
        Shape::Counts(counts),
        comm,
    )
}

fn reduce_scatter_block_now<C: check::CInt>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: C,
    datatype: i32,
    op: i32,
    comm: i32,
) -> Option<MpiResult<()>> {
    reduce_now(
        sendbuf,
        recvbuf,
        recvcount,
        datatype,
        op,
        Shape::Block,
        comm,
    )
}

fn allreduce_plan<C: check::CInt>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: i32,
    op: i32,
    comm: i32,
) -> Plan {
    let count: i64 = count.into();
    let cm = check::comm(comm)?;
    if cm.is_inter() {
        return coll_inter::allreduce(&cm, sendbuf, recvbuf, count, datatype, op);
    }
    let (c, rd, n) = red_args_on(cm, count, datatype, op)?;
    let mut st = Stage::default();
    let total = rd.bytes(n)?;
    let recv = rd.output(&mut st, recvbuf, n, "recvbuf")?;
    let send = input(&rd, &mut st, sendbuf, recvbuf, n, &recv)?;
    let desc = rd.desc("MPI_Allreduce", None, n);
    let part = Part {
        send,
        recv,
        lo: 0,
        hi: total,
    };
    Ok((
        c.clone(),
        reduce_body(c, rd, st, total, part, desc, Kind::All),
    ))
}

coll_entry!(MPI_Allreduce, PMPI_Allreduce, MPI_Iallreduce, PMPI_Iallreduce, MPI_Allreduce_init, PMPI_Allreduce_init, allreduce_plan, comm, now = allreduce_now,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, comm: i32));

fn reduce_plan<C: check::CInt>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: i32,
    op: i32,
    root: c_int,
    comm: i32,
) -> Plan {
    let count: i64 = count.into();
    let cm = check::comm(comm)?;
    if cm.is_inter() {
        return coll_inter::reduce(&cm, sendbuf, recvbuf, count, datatype, op, root);
    }
    let (c, rd, n) = red_args_on(cm, count, datatype, op)?;
    let root = check::root(root, &c)?;
    let mut st = Stage::default();
    let total = rd.bytes(n)?;
    let is_root = c.rank == root;
    let (send, recv) = if is_root {
        let recv = rd.output(&mut st, recvbuf, n, "recvbuf")?;
        (input(&rd, &mut st, sendbuf, recvbuf, n, &recv)?, recv)
    } else {
        if is_in_place(sendbuf) {
            return Err(err(
                MPI_ERR_BUFFER,
                format!(
                    "sendbuf is MPI_IN_PLACE on rank {}, which is not the root ({root})",
                    c.rank
                ),
            ));
        }
        (
            Some(rd.input(&mut st, sendbuf, n, "sendbuf")?),
            UserBuf::empty(),
        )
    };
    let hi = if is_root { total } else { 0 };
    let desc = rd.desc("MPI_Reduce", Some(root), n);
    let part = Part {
        send,
        recv,
        lo: 0,
        hi,
    };
    Ok((
        c.clone(),
        reduce_body(c, rd, st, total, part, desc, Kind::Rooted),
    ))
}

coll_entry!(MPI_Reduce, PMPI_Reduce, MPI_Ireduce, PMPI_Ireduce, MPI_Reduce_init, PMPI_Reduce_init, reduce_plan, comm, now = reduce_root_now,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, root: c_int, comm: i32));

/// Reduce-scatter with `counts[i]` instances to rank i.
fn reduce_scatter_counts(
    c: Arc<Comm>,
    rd: RedData,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &[usize],
    kind: &str,
) -> Plan {
    let me = c.rank;
    let sum: usize = counts.iter().sum();
    let lo_n: usize = counts[..me].iter().sum();
    let mut st = Stage::default();
    let total = rd.bytes(sum)?;
    let lo = rd.bytes(lo_n)?;
    let block = rd.bytes(counts[me])?;
    let (send, recv) = if is_in_place(sendbuf) {
        if rd.native() {
            // SAFETY: `recvbuf`: passed on from the entry point,
            // valid as the MPI caller must pass it.
            (None, unsafe { check::buffer(recvbuf, total, "recvbuf") }?)
        } else {
            // The input is the whole vector in recvbuf; my block goes to its start.
            let s = rd.input(&mut st, recvbuf, sum, "recvbuf")?;
            (Some(s), rd.output(&mut st, recvbuf, counts[me], "recvbuf")?)
        }
    } else {
        let recv = rd.output(&mut st, recvbuf, counts[me], "recvbuf")?;
        (input(&rd, &mut st, sendbuf, recvbuf, sum, &recv)?, recv)
    };
    let mut desc = rd.desc(kind, None, sum);
    // recvcounts must be identical everywhere: compare a hash of them.
    desc.extra = counts_hash(counts.iter().copied());
    let part = Part {
        send,
        recv,
        lo,
        hi: lo + block,
    };
    let kind = if counts.contains(&0) {
        Kind::Arena
    } else {
        Kind::Scatter
    };
    Ok((c.clone(), reduce_body(c, rd, st, total, part, desc, kind)))
}

fn reduce_scatter_block_plan<C: check::CInt>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: C,
    datatype: i32,
    op: i32,
    comm: i32,
) -> Plan {
    let recvcount: i64 = recvcount.into();
    let cm = check::comm(comm)?;
    if cm.is_inter() {
        return coll_inter::reduce_scatter_block(&cm, sendbuf, recvbuf, recvcount, datatype, op);
    }
    let (c, rd, n) = red_args_on(cm, recvcount, datatype, op)?;
    let counts = vec![n; c.size()];
    reduce_scatter_counts(c, rd, sendbuf, recvbuf, &counts, "MPI_Reduce_scatter_block")
}

coll_entry!(MPI_Reduce_scatter_block, PMPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, PMPI_Ireduce_scatter_block, MPI_Reduce_scatter_block_init, PMPI_Reduce_scatter_block_init, reduce_scatter_block_plan, comm, now = reduce_scatter_block_now,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: i32, op: i32, comm: i32));

fn reduce_scatter_plan<C: check::CInt>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    datatype: i32,
    op: i32,
    comm: i32,
) -> Plan {
    let cm = check::comm(comm)?;
    let counts = check::counts(
        // SAFETY: `recvcounts`: passed on from the entry point,
        // valid as the MPI caller must pass it.
        &unsafe { check::plan_array(recvcounts, cm.size(), "recvcounts") }?,
        "recvcounts",
    )?;
    if cm.is_inter() {
        return coll_inter::reduce_scatter(&cm, sendbuf, recvbuf, &counts, datatype, op);
    }
    let (c, rd, _) = red_args_on(cm, 0, datatype, op)?;
    reduce_scatter_counts(c, rd, sendbuf, recvbuf, &counts, "MPI_Reduce_scatter")
}

coll_entry!(MPI_Reduce_scatter, PMPI_Reduce_scatter, MPI_Ireduce_scatter, PMPI_Ireduce_scatter, MPI_Reduce_scatter_init, PMPI_Reduce_scatter_init, reduce_scatter_plan, comm, now = reduce_scatter_now,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: i32, op: i32, comm: i32));

fn scan_plan_impl<C: check::CInt>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: i32,
    op: i32,
    comm: i32,
    exclusive: bool,
) -> Plan {
    let count: i64 = count.into();
    let (c, rd, n) = red_args(count, datatype, op, comm)?;
    let mut st = Stage::default();
    let total = rd.bytes(n)?;
    let recv = rd.output(&mut st, recvbuf, n, "recvbuf")?;
    let send = input(&rd, &mut st, sendbuf, recvbuf, n, &recv)?;
    let cc = c.clone();
    let desc = rd.desc(if exclusive { "MPI_Exscan" } else { "MPI_Scan" }, None, n);
    Ok((
        c,
        Box::pin(async move {
            cc.coll.set_desc(desc);
            let f = rd.func();
            let red = rd.reduction(&f);
            reduce::scan(&cc, total, &red, send, recv, exclusive).await?;
            // MPI_Exscan leaves rank 0's receive buffer undefined: do not write it back.
            if exclusive && cc.rank == 0 {
                return Ok(());
            }
            st.finish()
        }),
    ))
}

fn scan_plan<C: check::CInt>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: i32,
    op: i32,
    comm: i32,
) -> Plan {
    let count: i64 = count.into();
    scan_plan_impl(sendbuf, recvbuf, count, datatype, op, comm, false)
}

fn exscan_plan<C: check::CInt>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: i32,
    op: i32,
    comm: i32,
) -> Plan {
    let count: i64 = count.into();
    scan_plan_impl(sendbuf, recvbuf, count, datatype, op, comm, true)
}

coll_entry!(MPI_Scan, PMPI_Scan, MPI_Iscan, PMPI_Iscan, MPI_Scan_init, PMPI_Scan_init, scan_plan, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, comm: i32));
coll_entry!(MPI_Exscan, PMPI_Exscan, MPI_Iexscan, PMPI_Iexscan, MPI_Exscan_init, PMPI_Exscan_init, exscan_plan, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, comm: i32));

// ---------------------------------------------------------------- MPI-4 large counts
//
// The same plans with MPI_Count counts (`_c`), in blocking, nonblocking and persistent
// forms: vectors past 2^31 elements.

coll_entry!(MPI_Allreduce_c, PMPI_Allreduce_c, MPI_Iallreduce_c, PMPI_Iallreduce_c, MPI_Allreduce_init_c, PMPI_Allreduce_init_c, allreduce_plan, comm, now = allreduce_now,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: i32, op: i32, comm: i32));
coll_entry!(MPI_Reduce_c, PMPI_Reduce_c, MPI_Ireduce_c, PMPI_Ireduce_c, MPI_Reduce_init_c, PMPI_Reduce_init_c, reduce_plan, comm, now = reduce_root_now,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: i32, op: i32, root: c_int, comm: i32));
coll_entry!(MPI_Reduce_scatter_block_c, PMPI_Reduce_scatter_block_c, MPI_Ireduce_scatter_block_c, PMPI_Ireduce_scatter_block_c, MPI_Reduce_scatter_block_init_c, PMPI_Reduce_scatter_block_init_c, reduce_scatter_block_plan, comm, now = reduce_scatter_block_now,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: i64, datatype: i32, op: i32, comm: i32));
coll_entry!(MPI_Reduce_scatter_c, PMPI_Reduce_scatter_c, MPI_Ireduce_scatter_c, PMPI_Ireduce_scatter_c, MPI_Reduce_scatter_init_c, PMPI_Reduce_scatter_init_c, reduce_scatter_plan, comm, now = reduce_scatter_now,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const i64, datatype: i32, op: i32, comm: i32));
coll_entry!(MPI_Scan_c, PMPI_Scan_c, MPI_Iscan_c, PMPI_Iscan_c, MPI_Scan_init_c, PMPI_Scan_init_c, scan_plan, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: i32, op: i32, comm: i32));
coll_entry!(MPI_Exscan_c, PMPI_Exscan_c, MPI_Iexscan_c, PMPI_Iexscan_c, MPI_Exscan_init_c, PMPI_Exscan_init_c, exscan_plan, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: i32, op: i32, comm: i32));
