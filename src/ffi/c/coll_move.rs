//! The data-movement collectives at the C boundary: MPI_Bcast, Gather(v), Scatter(v),
//! Allgather(v), Alltoall(v, w), on intra- and intercommunicators.
//!
//! Each side of an operation is described per peer as (count, byte displacement,
//! datatype); every piece is staged (ffi/typed.rs): contiguous pieces are the user's own
//! bytes, others travel packed and are unpacked at the end. Pieces are indexed by
//! channel member (coll/gather.rs), which for an intercommunicator maps remote rank k to
//! the remote group's channel positions.
use super::coll::Plan;
use crate::abi::*;
use crate::args::offset;
use crate::coll::agree::{self, Arg, Desc, FlowEnd, Flows};
use crate::coll::gather::{self, Piece};
use crate::coll::inter::Role;
use crate::coll::nb::CollFuture;
use crate::coll::stage::Stage;
use crate::comm::Comm;
use crate::error::{err, MpiResult};
use crate::ffi::check::{self, is_in_place, TypeInfo};
use crate::p2p::UserBuf;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// One side of a v/w collective: per peer, (count, byte displacement, datatype).
struct Side(Vec<(usize, isize, TypeInfo)>);

/// The bytes `[lo, hi)` from the first to the last byte that `count` elements of `t`
/// at `buf + disp` touch; None when they touch none.
fn region(buf: *const c_void, disp: isize, count: usize, t: &TypeInfo) -> Option<(isize, isize)> {
    if count == 0 || t.size == 0 || buf.is_null() || is_in_place(buf) {
        return None;
    }
    if t.contiguous {
        // (one block of `size` bytes at displacement 0, extent == size)
        let lo = (buf as isize).checked_add(disp)?;
        return Some((lo, lo.checked_add(count.checked_mul(t.size)? as isize)?));
    }
    let d = crate::datatype::derived::get(t.handle, "datatype").ok()?;
    let lo = (buf as isize).checked_add(disp)?.checked_add(d.true_lb())?;
    let last = (count as isize - 1).checked_mul(d.extent())?;
    let hi = lo.checked_add(last)?.checked_add(d.true_extent())?;
    (hi > lo).then_some((lo, hi))
}

/// MPI's aliasing rule for a call that both sends and receives here: the memory it
/// sends from must not be the memory it receives into (MPI_IN_PLACE is how a program
/// shares one buffer). Reported, before the call takes part in the collective, when a
/// block sent and a block received start at the same byte, or overlap and both types
/// are contiguous (blocks of types with holes may interleave legally).
fn no_alias(
    sendbuf: *const c_void,
    send: &Side,
    recvbuf: *const c_void,
    recv: &Side,
) -> MpiResult<()> {
    fn blocks(buf: *const c_void, side: &Side) -> impl Iterator<Item = (isize, isize, bool)> + '_ {
        side.0.iter().filter_map(move |(n, d, t)| {
            region(buf, *d, *n, t).map(|(lo, hi)| (lo, hi, t.contiguous))
        })
    }
    // (the common case first, without a list: the two hulls are apart, or one is empty)
    let hull = |it: &mut dyn Iterator<Item = (isize, isize, bool)>| {
        it.fold((isize::MAX, isize::MIN), |(a, b), (lo, hi, _)| {
            (a.min(lo), b.max(hi))
        })
    };
    let (s0, s1) = hull(&mut blocks(sendbuf, send));
    let (r0, r1) = hull(&mut blocks(recvbuf, recv));
    if s1 <= r0 || r1 <= s0 {
        return Ok(());
    }
    let r: Vec<_> = blocks(recvbuf, recv).collect();
    for (a0, a1, ac) in blocks(sendbuf, send) {
        for &(b0, b1, bc) in &r {
            if a0 == b0 || (ac && bc && a0 < b1 && b0 < a1) {
                return Err(err(
                    MPI_ERR_BUFFER,
                    format!(
                        "sendbuf and recvbuf alias: bytes {a0:#x}..{a1:#x} are sent and {b0:#x}..{b1:#x} received (MPI forbids aliased buffers; pass MPI_IN_PLACE to share one)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The one block a process sends (or receives) in a gather (or scatter).
fn one_block<C: check::CInt>(count: C, dt: i32, what: &str) -> MpiResult<Side> {
    let t = check::datatype(dt, &format!("{what}type"))?;
    Ok(Side(vec![(
        check::count(count, &format!("{what}count"))?,
        0,
        t,
    )]))
}

fn uniform<C: check::CInt>(count: C, dt: i32, m: usize, what: &str) -> MpiResult<Side> {
    let t = check::datatype(dt, &format!("{what}type"))?;
    let n = check::count(count, &format!("{what}count"))?;
    let stride = check::span(&t, n)? as isize;
    Ok(Side((0..m).map(|k| (n, k as isize * stride, t)).collect()))
}

fn vside<C: check::CInt, D: check::CInt>(
    counts: *const C,
    displs: *const D,
    dt: i32,
    m: usize,
    what: &str,
) -> MpiResult<Side> {
    let t = check::datatype(dt, &format!("{what}type"))?;
    // SAFETY: `counts`: passed on from the entry point, valid as the MPI caller must pass it.
    let c = unsafe { check::plan_array(counts, m, &format!("{what}counts")) }?;
    // SAFETY: `displs`: passed on from the entry point, valid as the MPI caller must pass it.
    let d = unsafe { check::plan_array(displs, m, "displs") }?;
    (0..m)
        .map(|k| {
            Ok((
                check::count(c[k], &format!("{what}counts[{k}]"))?,
                disp(d[k], t.extent, "displs", k)?,
                t,
            ))
        })
        .collect::<MpiResult<_>>()
        .map(Side)
}

/// Displacement `d` (argument `arg`, element `k`) in units of `unit` bytes, as a byte
/// offset.
fn disp<D: Into<i64>>(d: D, unit: usize, arg: &str, k: usize) -> MpiResult<isize> {
    let d: i64 = d.into();
    d.checked_mul(unit as i64)
        .and_then(|b| isize::try_from(b).ok())
        .ok_or_else(|| {
            err(
                MPI_ERR_ARG,
                format!("{arg}[{k}]={d} (x {unit} bytes) overflows an address"),
            )
        })
}

fn wside<C: check::CInt, D: check::CInt>(
    counts: *const C,
    displs: *const D,
    types: *const i32,
    m: usize,
    what: &str,
) -> MpiResult<Side> {
    // SAFETY: `counts`: passed on from the entry point, valid as the MPI caller must pass it.
    let c = unsafe { check::plan_array(counts, m, &format!("{what}counts")) }?;
    // SAFETY: `displs`: passed on from the entry point, valid as the MPI caller must pass it.
    let d = unsafe { check::plan_array(displs, m, &format!("{what}displs")) }?;
    // SAFETY: `types`: passed on from the entry point, valid as the MPI caller must pass it.
    let ty = unsafe { check::plan_array(types, m, &format!("{what}types")) }?;
    let dname = format!("{what}displs");
    (0..m)
        .map(|k| {
            let t = check::datatype(ty[k], &format!("{what}types[{k}]"))?;
            Ok((
                check::count(c[k], &format!("{what}counts[{k}]"))?,
                disp(d[k], 1, &dname, k)?,
                t,
            ))
        })
        .collect::<MpiResult<_>>()
        .map(Side)
}

fn whole(b: UserBuf) -> Piece {
    Piece {
        buf: b,
        off: 0,
        len: b.len(),
    }
}

// ---------------------------------------------------------------- agreement flows

/// This process's ends of `side`'s pieces (coll/agree.rs), counts from argument `arg`.
fn side_ends(side: &Side, arg: Arg) -> Vec<FlowEnd> {
    let mut sig = (0, 0u32);
    side.0
        .iter()
        .enumerate()
        .map(|(k, &(count, _, t))| {
            if sig.0 != t.handle || k == 0 {
                sig = (t.handle, agree::signature(t.handle));
            }
            FlowEnd::new(count, &t, sig.1, arg, k)
        })
        .collect()
}

/// The end of a single (count, datatype) argument pair, or nothing if invalid (the
/// plan reports that).
fn one_end<C: check::CInt>(count: C, dt: i32, arg: Arg) -> FlowEnd {
    match (
        check::count(count, "count"),
        check::datatype(dt, "datatype"),
    ) {
        (Ok(n), Ok(t)) => FlowEnd::new(n, &t, agree::signature(dt), arg, 0),
        _ => FlowEnd::default(),
    }
}

/// The flows of a collective on an intracommunicator when agreement is checked.
fn flows_of(c: &Comm, make: impl FnOnce(usize, usize) -> Flows) -> Option<Box<Flows>> {
    c.coll
        .checks_args()
        .then(|| Box::new(make(c.size(), c.rank)))
}

/// Adds the descriptor of data-movement collective `kind` with its flows to a plan.
fn with_check(p: Plan, kind: &str, root: Option<c_int>, flows: Option<Box<Flows>>) -> Plan {
    let me = p.as_ref().map_or(0, |(c, _)| c.rank);
    let desc = Desc {
        op: flows.as_ref().map_or(0, |f| f.sum(me)) as u64,
        ..super::coll::move_desc(kind, root)
    };
    super::coll::with_flows(p, desc, flows)
}

/// The sides of a gather to `root` (None: every member receives, an allgather).
fn gather_flows(
    c: &Comm,
    sendbuf: *const c_void,
    send: FlowEnd,
    recv: Option<&Side>,
    recv_arg: Arg,
    root: Option<usize>,
) -> Option<Box<Flows>> {
    flows_of(c, |n, me| {
        let mut f = Flows::new(n);
        if let Some(side) = recv {
            f.recv = side_ends(side, recv_arg);
        }
        if !is_in_place(sendbuf) {
            match root {
                Some(r) => f.send[r] = send,
                None => f.send = vec![send; n],
            }
        } else if root.is_none() {
            // Allgather in place: my block of recvbuf goes to every other member.
            let mut mine = f.recv[me];
            mine.in_place = true;
            f.send = vec![mine; n];
            f.send[me] = FlowEnd::default();
            f.recv[me] = FlowEnd::default();
        } else {
            f.recv[me] = FlowEnd::default();
        }
        f
    })
}

/// Stages every piece of `side` at `base` as inputs (`out = false`) or outputs, placing
/// peer k's piece at channel index `chan(k)` of an `n`-entry vector; `skip` leaves one
/// peer out (in place).
fn stage_side(
    st: &mut Stage,
    base: *const c_void,
    side: &Side,
    out: bool,
    n: usize,
    chan: &dyn Fn(usize) -> usize,
    skip: Option<usize>,
    arg: &str,
) -> MpiResult<Vec<Piece>> {
    let mut v = vec![Piece::none(); n];
    for (k, &(count, disp, t)) in side.0.iter().enumerate() {
        if Some(k) == skip {
            continue;
        }
        let p = offset(base, disp);
        let b = if out {
            st.output(p, count, &t, arg)?
        } else {
            st.input(p, count, &t, arg)?
        };
        v[chan(k)] = whole(b);
    }
    Ok(v)
}

fn local(c: &Comm) -> impl Fn(usize) -> usize + '_ {
    move |k| c.chan_of_local(k)
}
fn remote(c: &Comm) -> impl Fn(usize) -> usize + '_ {
    move |k| c.chan_of_remote(k)
}

// ---------------------------------------------------------------- Bcast

fn bcast_plan<C: check::CInt>(
    buffer: *mut c_void,
    count: C,
    datatype: i32,
    root: c_int,
    comm: i32,
) -> Plan {
    let c = check::comm(comm)?;
    let mut st = Stage::default();
    let cc = c.clone();
    if c.is_inter() {
        let r = crate::coll::inter::inter_root(&c, root)?;
        let (buf, is_root, receive) = match r {
            Role::Root => (
                st.input(
                    buffer,
                    check::count(count, "count")?,
                    &check::datatype(datatype, "datatype")?,
                    "buffer",
                )?,
                true,
                false,
            ),
            Role::Peer(_) => (
                st.output(
                    buffer,
                    check::count(count, "count")?,
                    &check::datatype(datatype, "datatype")?,
                    "buffer",
                )?,
                false,
                true,
            ),
            Role::Idle => (UserBuf::empty(), false, false),
        };
        return Ok((
            c,
            Box::pin(async move {
                crate::coll::inter::bcast(&cc, r, buf, is_root, receive).await?;
                st.finish()
            }),
        ));
    }
    let n = check::count(count, "count")?;
    let t = check::datatype(datatype, "datatype")?;
    let root = check::root(root, &c)?;
    let b = if c.rank == root {
        st.input(buffer, n, &t, "buffer")?
    } else {
        st.output(buffer, n, &t, "buffer")?
    };
    let p = crate::datatype::predefined::lookup(t.handle);
    let desc = bcast_desc(t.handle, p, t.size, n, root);
    Ok((
        c,
        Box::pin(async move {
            cc.coll.set_desc(desc);
            crate::coll::bcast::bcast(&cc, b, root).await?;
            st.finish()
        }),
    ))
}

/// The blocking MPI_Bcast of a predefined contiguous datatype over an intracommunicator,
/// with arguments that pass every check: the engine's broadcast with the descriptor the
/// full path would publish, without the plan's boxing and staging (as
/// `coll::reduce_now`). `None`: run the full path, nothing has happened.
fn bcast_now<C: check::CInt>(
    buffer: *mut c_void,
    count: C,
    datatype: i32,
    root: c_int,
    comm: i32,
) -> Option<MpiResult<()>> {
    let count: i64 = count.into();
    if count <= 0 || buffer.is_null() || crate::runtime::state() != crate::runtime::INITIALIZED {
        return None;
    }
    let p = crate::datatype::predefined::lookup(datatype)?;
    if p.size != p.extent || p.true_extent != p.size || check::is_in_place(buffer) {
        return None;
    }
    let c = crate::comm::get(comm).ok()?;
    let root = usize::try_from(root).ok().filter(|&r| r < c.size())?;
    if c.is_inter() {
        return None;
    }
    let bytes = (count as usize).checked_mul(p.size)?;
    // SAFETY: the standard requires `buffer` to hold `count` elements of `datatype`
    // (`bytes` bytes, contiguous); checked non-NULL and not MPI_IN_PLACE.
    let b = unsafe { UserBuf::new(buffer as *mut u8, bytes) };
    let desc = || bcast_desc(datatype, Some(p), p.size, count as usize, root);
    Some(crate::coll::bcast::bcast_blocking(&c, b, root, desc))
}

/// MPI_Bcast's agreement descriptor: count and type signature must agree on every rank
/// (coll/agree.rs). `p` is `datatype`'s predefined entry, if it has one.
fn bcast_desc(
    datatype: i32,
    p: Option<&crate::datatype::predefined::Predef>,
    size: usize,
    n: usize,
    root: usize,
) -> Desc {
    let (sig, dtype) = match p {
        Some(p) => (agree::signature_of(p), datatype as u32 as u64),
        None => (agree::signature(datatype), agree::ANY),
    };
    Desc {
        bytes: (n as u64).wrapping_mul(size as u64),
        op: sig as u64,
        dtype,
        ..super::coll::move_desc("MPI_Bcast", Some(root as c_int))
    }
}

crate::coll_entry!(MPI_Bcast, PMPI_Bcast, MPI_Ibcast, PMPI_Ibcast, MPI_Bcast_init, PMPI_Bcast_init, bcast_plan, comm, now = bcast_now,
    (buffer: *mut c_void, count: c_int, datatype: i32, root: c_int, comm: i32));
crate::coll_entry!(MPI_Bcast_c, PMPI_Bcast_c, MPI_Ibcast_c, PMPI_Ibcast_c, MPI_Bcast_init_c, PMPI_Bcast_init_c, bcast_plan, comm, now = bcast_now,
    (buffer: *mut c_void, count: i64, datatype: i32, root: c_int, comm: i32));

// ---------------------------------------------------------------- Gather(v), Allgather(v)

/// Gather-like: `recv` (if this process receives) per peer; `send` this process's piece.
fn gather_like<C: check::CInt>(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: i32,
    recvbuf: *mut c_void,
    recv: Option<Side>,
    root: Option<c_int>,
    vary: bool,
) -> Plan {
    let n = c.chan_members.len();
    let mut st = Stage::default();
    if c.is_inter() {
        // Rooted: the root receives from the remote group; allgather: everyone does.
        let (sends, receives) = match root {
            Some(r) => match crate::coll::inter::inter_root(c, r)? {
                Role::Root => (false, true),
                Role::Idle => (false, false),
                Role::Peer(_) => (true, false),
            },
            None => (true, true),
        };
        let send = if sends {
            if is_in_place(sendbuf) {
                return Err(err(
                    MPI_ERR_BUFFER,
                    "sendbuf is MPI_IN_PLACE, which intercommunicator collectives do not allow",
                ));
            }
            whole(st.input(
                sendbuf,
                check::count(sendcount, "sendcount")?,
                &check::datatype(sendtype, "sendtype")?,
                "sendbuf",
            )?)
        } else {
            Piece::none()
        };
        let rv = match (receives, &recv) {
            (true, Some(side)) => {
                stage_side(&mut st, recvbuf, side, true, n, &remote(c), None, "recvbuf")?
            }
            _ => vec![Piece::none(); n],
        };
        return Ok(by_sender_body(c, send, rv, true, st));
    }
    let me = c.rank;
    let receives = root.is_none_or(|r| r as usize == me);
    let in_place = is_in_place(sendbuf);
    if in_place && !receives {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("sendbuf is MPI_IN_PLACE on rank {me}, which is not the root"),
        ));
    }
    let side = recv.unwrap_or(Side(Vec::new()));
    let send = if in_place {
        if root.is_none() {
            // Allgather in place: my contribution is at my place in recvbuf.
            let (cnt, disp, t) = side.0[me];
            whole(st.input(offset(recvbuf, disp), cnt, &t, "recvbuf")?)
        } else {
            Piece::none()
        }
    } else {
        whole(st.input(
            sendbuf,
            check::count(sendcount, "sendcount")?,
            &check::datatype(sendtype, "sendtype")?,
            "sendbuf",
        )?)
    };
    let rv = if receives {
        stage_side(
            &mut st,
            recvbuf,
            &side,
            true,
            n,
            &local(c),
            in_place.then_some(me),
            "recvbuf",
        )?
    } else {
        vec![Piece::none(); n]
    };
    if receives && !in_place {
        no_alias(
            sendbuf,
            &one_block(sendcount, sendtype, "send")?,
            recvbuf,
            &side,
        )?;
    }
    Ok(by_sender_body(c, send, rv, vary, st))
}

fn by_sender_body(
    c: &Arc<Comm>,
    send: Piece,
    recv: Vec<Piece>,
    vary: bool,
    st: Stage,
) -> (Arc<Comm>, CollFuture) {
    let cc = c.clone();
    (
        c.clone(),
        Box::pin(async move {
            gather::by_sender(&cc, send, &recv, vary).await?;
            st.finish()
        }),
    )
}

/// The receive side of a rooted gather, significant only where this process receives.
fn root_recv<F: FnOnce(usize) -> MpiResult<Side>>(
    c: &Comm,
    root: c_int,
    make: F,
) -> MpiResult<Option<Side>> {
    let receives = if c.is_inter() {
        root == MPI_ROOT
    } else {
        check::root(root, c)? == c.rank
    };
    if receives {
        make(c.peer_size()).map(Some)
    } else {
        Ok(None)
    }
}

fn gather_plan<C: check::CInt>(
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: i32,
    root: c_int,
    comm: i32,
) -> Plan {
    let c = check::comm(comm)?;
    let recv = root_recv(&c, root, |m| uniform(recvcount, recvtype, m, "recv"))?;
    let flows = gather_flows(
        &c,
        sendbuf,
        one_end(sendcount, sendtype, Arg::SendCount),
        recv.as_ref(),
        Arg::RecvCount,
        Some(root as usize),
    );
    with_check(
        gather_like(
            &c,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            recv,
            Some(root),
            false,
        ),
        "MPI_Gather",
        Some(root),
        flows,
    )
}

crate::coll_entry!(MPI_Gather, PMPI_Gather, MPI_Igather, PMPI_Igather, MPI_Gather_init, PMPI_Gather_init, gather_plan, comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void, recvcount: c_int, recvtype: i32, root: c_int, comm: i32));
crate::coll_entry!(MPI_Gather_c, PMPI_Gather_c, MPI_Igather_c, PMPI_Igather_c, MPI_Gather_init_c, PMPI_Gather_init_c, gather_plan, comm,
    (sendbuf: *const c_void, sendcount: i64, sendtype: i32, recvbuf: *mut c_void, recvcount: i64, recvtype: i32, root: c_int, comm: i32));

fn gatherv_plan<C: check::CInt, D: check::CInt>(
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    displs: *const D,
    recvtype: i32,
    root: c_int,
    comm: i32,
) -> Plan {
    let c = check::comm(comm)?;
    let recv = root_recv(&c, root, |m| vside(recvcounts, displs, recvtype, m, "recv"))?;
    let flows = gather_flows(
        &c,
        sendbuf,
        one_end(sendcount, sendtype, Arg::SendCount),
        recv.as_ref(),
        Arg::RecvCounts,
        Some(root as usize),
    );
    with_check(
        gather_like(
            &c,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            recv,
            Some(root),
            true,
        ),
        "MPI_Gatherv",
        Some(root),
        flows,
    )
}

crate::coll_entry!(MPI_Gatherv, PMPI_Gatherv, MPI_Igatherv, PMPI_Igatherv, MPI_Gatherv_init, PMPI_Gatherv_init, gatherv_plan, comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: i32, root: c_int, comm: i32));
crate::coll_entry!(MPI_Gatherv_c, PMPI_Gatherv_c, MPI_Igatherv_c, PMPI_Igatherv_c, MPI_Gatherv_init_c, PMPI_Gatherv_init_c, gatherv_plan, comm,
    (sendbuf: *const c_void, sendcount: i64, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const i64, displs: *const i64, recvtype: i32, root: c_int, comm: i32));

fn allgather_plan<C: check::CInt>(
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: i32,
    comm: i32,
) -> Plan {
    let c = check::comm(comm)?;
    let recv = uniform(recvcount, recvtype, c.peer_size(), "recv")?;
    let flows = gather_flows(
        &c,
        sendbuf,
        one_end(sendcount, sendtype, Arg::SendCount),
        Some(&recv),
        Arg::RecvCount,
        None,
    );
    with_check(
        gather_like(
            &c,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            Some(recv),
            None,
            c.is_inter(),
        ),
        "MPI_Allgather",
        None,
        flows,
    )
}

crate::coll_entry!(MPI_Allgather, PMPI_Allgather, MPI_Iallgather, PMPI_Iallgather, MPI_Allgather_init, PMPI_Allgather_init, allgather_plan, comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void, recvcount: c_int, recvtype: i32, comm: i32));
crate::coll_entry!(MPI_Allgather_c, PMPI_Allgather_c, MPI_Iallgather_c, PMPI_Iallgather_c, MPI_Allgather_init_c, PMPI_Allgather_init_c, allgather_plan, comm,
    (sendbuf: *const c_void, sendcount: i64, sendtype: i32, recvbuf: *mut c_void, recvcount: i64, recvtype: i32, comm: i32));

fn allgatherv_plan<C: check::CInt, D: check::CInt>(
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    displs: *const D,
    recvtype: i32,
    comm: i32,
) -> Plan {
    let c = check::comm(comm)?;
    let recv = vside(recvcounts, displs, recvtype, c.peer_size(), "recv")?;
    let flows = gather_flows(
        &c,
        sendbuf,
        one_end(sendcount, sendtype, Arg::SendCount),
        Some(&recv),
        Arg::RecvCounts,
        None,
    );
    with_check(
        gather_like(
            &c,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            Some(recv),
            None,
            true,
        ),
        "MPI_Allgatherv",
        None,
        flows,
    )
}

crate::coll_entry!(MPI_Allgatherv, PMPI_Allgatherv, MPI_Iallgatherv, PMPI_Iallgatherv, MPI_Allgatherv_init, PMPI_Allgatherv_init, allgatherv_plan, comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: i32, comm: i32));
crate::coll_entry!(MPI_Allgatherv_c, PMPI_Allgatherv_c, MPI_Iallgatherv_c, PMPI_Iallgatherv_c, MPI_Allgatherv_init_c, PMPI_Allgatherv_init_c, allgatherv_plan, comm,
    (sendbuf: *const c_void, sendcount: i64, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const i64, displs: *const i64, recvtype: i32, comm: i32));

// ---------------------------------------------------------------- Scatter(v)

fn scatter_like<C: check::CInt>(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    send: Option<Side>,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: i32,
    root: c_int,
    vary: bool,
) -> Plan {
    let n = c.chan_members.len();
    let mut st = Stage::default();
    if c.is_inter() {
        let r = crate::coll::inter::inter_root(c, root)?;
        let sv = match (&r, &send) {
            (Role::Root, Some(side)) => stage_side(
                &mut st,
                sendbuf,
                side,
                false,
                n,
                &remote(c),
                None,
                "sendbuf",
            )?,
            _ => vec![Piece::none(); n],
        };
        let rv = if let Role::Peer(_) = r {
            if is_in_place(recvbuf) {
                return Err(err(
                    MPI_ERR_BUFFER,
                    "recvbuf is MPI_IN_PLACE, which intercommunicator collectives do not allow",
                ));
            }
            whole(st.output(
                recvbuf,
                check::count(recvcount, "recvcount")?,
                &check::datatype(recvtype, "recvtype")?,
                "recvbuf",
            )?)
        } else {
            Piece::none()
        };
        let is_root = matches!(r, Role::Root);
        let cc = c.clone();
        return Ok((
            c.clone(),
            Box::pin(async move {
                crate::coll::inter::scatter(&cc, is_root, &sv, rv).await?;
                st.finish()
            }),
        ));
    }
    let me = c.rank;
    let root = check::root(root, c)?;
    let in_place = is_in_place(recvbuf);
    if in_place && me != root {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("recvbuf is MPI_IN_PLACE on rank {me}, which is not the root"),
        ));
    }
    let sv = match &send {
        Some(side) if me == root => stage_side(
            &mut st,
            sendbuf,
            side,
            false,
            n,
            &local(c),
            in_place.then_some(me),
            "sendbuf",
        )?,
        _ => vec![Piece::none(); n],
    };
    let rv = if in_place {
        Piece::none()
    } else {
        whole(st.output(
            recvbuf,
            check::count(recvcount, "recvcount")?,
            &check::datatype(recvtype, "recvtype")?,
            "recvbuf",
        )?)
    };
    if let (Some(side), false) = (&send, in_place || me != root) {
        no_alias(
            sendbuf,
            side,
            recvbuf,
            &one_block(recvcount, recvtype, "recv")?,
        )?;
    }
    let cc = c.clone();
    Ok((
        c.clone(),
        Box::pin(async move {
            gather::scatter(&cc, root, &sv, rv, vary).await?;
            st.finish()
        }),
    ))
}

/// The sides of a scatter from `root`.
fn scatter_flows(
    c: &Comm,
    send: Option<&Side>,
    send_arg: Arg,
    recvbuf: *mut c_void,
    recv: FlowEnd,
    root: usize,
) -> Option<Box<Flows>> {
    flows_of(c, |n, me| {
        let mut f = Flows::new(n);
        if let Some(side) = send {
            f.send = side_ends(side, send_arg);
        }
        if is_in_place(recvbuf) {
            f.send[me] = FlowEnd::default();
        } else {
            f.recv[root] = recv;
        }
        f
    })
}

/// The send side of a rooted scatter, significant only at the root.
fn root_send<F: FnOnce(usize) -> MpiResult<Side>>(
    c: &Comm,
    root: c_int,
    make: F,
) -> MpiResult<Option<Side>> {
    root_recv(c, root, make)
}

fn scatter_plan<C: check::CInt>(
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: i32,
    root: c_int,
    comm: i32,
) -> Plan {
    let c = check::comm(comm)?;
    let send = root_send(&c, root, |m| uniform(sendcount, sendtype, m, "send"))?;
    let flows = scatter_flows(
        &c,
        send.as_ref(),
        Arg::SendCount,
        recvbuf,
        one_end(recvcount, recvtype, Arg::RecvCount),
        root as usize,
    );
    with_check(
        scatter_like(&c, sendbuf, send, recvbuf, recvcount, recvtype, root, false),
        "MPI_Scatter",
        Some(root),
        flows,
    )
}

crate::coll_entry!(MPI_Scatter, PMPI_Scatter, MPI_Iscatter, PMPI_Iscatter, MPI_Scatter_init, PMPI_Scatter_init, scatter_plan, comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void, recvcount: c_int, recvtype: i32, root: c_int, comm: i32));
crate::coll_entry!(MPI_Scatter_c, PMPI_Scatter_c, MPI_Iscatter_c, PMPI_Iscatter_c, MPI_Scatter_init_c, PMPI_Scatter_init_c, scatter_plan, comm,
    (sendbuf: *const c_void, sendcount: i64, sendtype: i32, recvbuf: *mut c_void, recvcount: i64, recvtype: i32, root: c_int, comm: i32));

fn scatterv_plan<C: check::CInt, D: check::CInt>(
    sendbuf: *const c_void,
    sendcounts: *const C,
    displs: *const D,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: i32,
    root: c_int,
    comm: i32,
) -> Plan {
    let c = check::comm(comm)?;
    let send = root_send(&c, root, |m| vside(sendcounts, displs, sendtype, m, "send"))?;
    let flows = scatter_flows(
        &c,
        send.as_ref(),
        Arg::SendCounts,
        recvbuf,
        one_end(recvcount, recvtype, Arg::RecvCount),
        root as usize,
    );
    with_check(
        scatter_like(&c, sendbuf, send, recvbuf, recvcount, recvtype, root, true),
        "MPI_Scatterv",
        Some(root),
        flows,
    )
}

crate::coll_entry!(MPI_Scatterv, PMPI_Scatterv, MPI_Iscatterv, PMPI_Iscatterv, MPI_Scatterv_init, PMPI_Scatterv_init, scatterv_plan, comm,
    (sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: i32, recvbuf: *mut c_void, recvcount: c_int, recvtype: i32, root: c_int, comm: i32));
crate::coll_entry!(MPI_Scatterv_c, PMPI_Scatterv_c, MPI_Iscatterv_c, PMPI_Iscatterv_c, MPI_Scatterv_init_c, PMPI_Scatterv_init_c, scatterv_plan, comm,
    (sendbuf: *const c_void, sendcounts: *const i64, displs: *const i64, sendtype: i32, recvbuf: *mut c_void, recvcount: i64, recvtype: i32, root: c_int, comm: i32));

// ---------------------------------------------------------------- Alltoall(v, w)

fn alltoall_like(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    send: Option<Side>,
    recvbuf: *mut c_void,
    recv: Side,
    vary: bool,
) -> Plan {
    let n = c.chan_members.len();
    let mut st = Stage::default();
    let chan: Box<dyn Fn(usize) -> usize> = if c.is_inter() {
        Box::new(remote(c))
    } else {
        Box::new(local(c))
    };
    let in_place = is_in_place(sendbuf);
    if in_place && c.is_inter() {
        return Err(err(
            MPI_ERR_BUFFER,
            "sendbuf is MPI_IN_PLACE, which intercommunicator collectives do not allow",
        ));
    }
    let skip = in_place.then_some(c.rank);
    // In place: what goes to peer j is what recvbuf holds at j's place, copied (staged
    // or read chunk by chunk before any chunk is written back).
    let sv = match &send {
        Some(side) if !in_place => {
            stage_side(&mut st, sendbuf, side, false, n, &*chan, None, "sendbuf")?
        }
        _ => {
            let mut v = vec![Piece::none(); n];
            for (k, &(count, disp, t)) in recv.0.iter().enumerate() {
                if Some(k) != skip {
                    // Always a private copy: the receive side writes the same bytes.
                    let mut packed =
                        crate::ffi::typed::pack_vec(offset(recvbuf, disp), count, &t, "recvbuf")?;
                    // SAFETY: the vector moves into the stage, whose lifetime covers the
                    // collective; its heap block does not move.
                    let b = unsafe { UserBuf::new(packed.as_mut_ptr(), packed.len()) };
                    st.keep(packed);
                    v[chan(k)] = whole(b);
                }
            }
            v
        }
    };
    let rv = stage_side(&mut st, recvbuf, &recv, true, n, &*chan, skip, "recvbuf")?;
    if let (Some(side), false) = (&send, in_place) {
        no_alias(sendbuf, side, recvbuf, &recv)?;
    }
    let cc = c.clone();
    Ok((
        c.clone(),
        Box::pin(async move {
            gather::alltoall(&cc, &sv, &rv, vary).await?;
            st.finish()
        }),
    ))
}

/// The sides of an all-to-all (`send` None: in place, from the receive side).
fn alltoall_flows(
    c: &Comm,
    send: Option<&Side>,
    send_arg: Arg,
    recv: &Side,
    recv_arg: Arg,
) -> Option<Box<Flows>> {
    flows_of(c, |_, me| {
        let recv = side_ends(recv, recv_arg);
        let mut f = Flows {
            send: match send {
                Some(side) => side_ends(side, send_arg),
                None => recv
                    .iter()
                    .map(|e| FlowEnd {
                        in_place: true,
                        ..*e
                    })
                    .collect(),
            },
            recv,
        };
        if send.is_none() {
            f.send[me] = FlowEnd::default();
            f.recv[me] = FlowEnd::default();
        }
        f
    })
}

fn alltoall_plan<C: check::CInt>(
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: i32,
    comm: i32,
) -> Plan {
    let c = check::comm(comm)?;
    let m = c.peer_size();
    let recv = uniform(recvcount, recvtype, m, "recv")?;
    let send = if is_in_place(sendbuf) {
        None
    } else {
        Some(uniform(sendcount, sendtype, m, "send")?)
    };
    let flows = alltoall_flows(&c, send.as_ref(), Arg::SendCount, &recv, Arg::RecvCount);
    with_check(
        alltoall_like(&c, sendbuf, send, recvbuf, recv, c.is_inter()),
        "MPI_Alltoall",
        None,
        flows,
    )
}

crate::coll_entry!(MPI_Alltoall, PMPI_Alltoall, MPI_Ialltoall, PMPI_Ialltoall, MPI_Alltoall_init, PMPI_Alltoall_init, alltoall_plan, comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void, recvcount: c_int, recvtype: i32, comm: i32));
crate::coll_entry!(MPI_Alltoall_c, PMPI_Alltoall_c, MPI_Ialltoall_c, PMPI_Ialltoall_c, MPI_Alltoall_init_c, PMPI_Alltoall_init_c, alltoall_plan, comm,
    (sendbuf: *const c_void, sendcount: i64, sendtype: i32, recvbuf: *mut c_void, recvcount: i64, recvtype: i32, comm: i32));

fn alltoallv_plan<C: check::CInt, D: check::CInt>(
    sendbuf: *const c_void,
    sendcounts: *const C,
    sdispls: *const D,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    rdispls: *const D,
    recvtype: i32,
    comm: i32,
) -> Plan {
    let c = check::comm(comm)?;
    let m = c.peer_size();
    let recv = vside(recvcounts, rdispls, recvtype, m, "recv")?;
    let send = if is_in_place(sendbuf) {
        None
    } else {
        Some(vside(sendcounts, sdispls, sendtype, m, "send")?)
    };
    let flows = alltoall_flows(&c, send.as_ref(), Arg::SendCounts, &recv, Arg::RecvCounts);
    with_check(
        alltoall_like(&c, sendbuf, send, recvbuf, recv, true),
        "MPI_Alltoallv",
        None,
        flows,
    )
}

crate::coll_entry!(MPI_Alltoallv, PMPI_Alltoallv, MPI_Ialltoallv, PMPI_Ialltoallv, MPI_Alltoallv_init, PMPI_Alltoallv_init, alltoallv_plan, comm,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: i32, comm: i32));
crate::coll_entry!(MPI_Alltoallv_c, PMPI_Alltoallv_c, MPI_Ialltoallv_c, PMPI_Ialltoallv_c, MPI_Alltoallv_init_c, PMPI_Alltoallv_init_c, alltoallv_plan, comm,
    (sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const i64, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const i64, rdispls: *const i64, recvtype: i32, comm: i32));

fn alltoallw_plan<C: check::CInt, D: check::CInt>(
    sendbuf: *const c_void,
    sendcounts: *const C,
    sdispls: *const D,
    sendtypes: *const i32,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    rdispls: *const D,
    recvtypes: *const i32,
    comm: i32,
) -> Plan {
    let c = check::comm(comm)?;
    let m = c.peer_size();
    let recv = wside(recvcounts, rdispls, recvtypes, m, "recv")?;
    let send = if is_in_place(sendbuf) {
        None
    } else {
        Some(wside(sendcounts, sdispls, sendtypes, m, "send")?)
    };
    let flows = alltoall_flows(&c, send.as_ref(), Arg::SendCounts, &recv, Arg::RecvCounts);
    with_check(
        alltoall_like(&c, sendbuf, send, recvbuf, recv, true),
        "MPI_Alltoallw",
        None,
        flows,
    )
}

crate::coll_entry!(MPI_Alltoallw, PMPI_Alltoallw, MPI_Ialltoallw, PMPI_Ialltoallw, MPI_Alltoallw_init, PMPI_Alltoallw_init, alltoallw_plan, comm,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const i32, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const i32, comm: i32));
crate::coll_entry!(MPI_Alltoallw_c, PMPI_Alltoallw_c, MPI_Ialltoallw_c, PMPI_Ialltoallw_c, MPI_Alltoallw_init_c, PMPI_Alltoallw_init_c, alltoallw_plan, comm,
    (sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const i64, sendtypes: *const i32, recvbuf: *mut c_void, recvcounts: *const i64, rdispls: *const i64, recvtypes: *const i32, comm: i32));
