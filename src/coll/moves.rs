//! The data-movement collectives' front: MPI_Gather(v), Scatter(v), Allgather(v),
//! Alltoall(v, w), on intra- and intercommunicators (MPI_Bcast's is in bcast.rs). Each
//! checks its arguments, stages its buffers and returns a [`Plan`] running one of the
//! patterns of gather.rs.
//!
//! Each side of an operation is described per peer as (count, byte displacement,
//! datatype); every piece is staged (stage.rs): contiguous pieces are the user's own
//! bytes, others travel packed and are unpacked at the end. Pieces are indexed by
//! channel member (gather.rs), which for an intercommunicator maps remote rank k to the
//! remote group's channel positions.
//!
//! The buffers are the C caller's addresses, so the functions taking them are unsafe
//! fns; the per-peer arrays (counts, displacements, datatypes) come as slices, read by
//! the C boundary through the closures these functions call where a side is significant
//! (for a rooted collective, only where this process sends or receives it).
// (the arguments are the MPI signatures')
#![allow(clippy::too_many_arguments)]
use super::agree::{self, Arg, Desc, FlowEnd, Flows};
use super::gather::{self, Piece};
use super::inter::Role;
use super::nb::CollFuture;
use super::plan::Plan;
use super::stage::Stage;
use crate::abi::*;
use crate::args::root as root_arg;
use crate::args::{count, datatype, is_in_place, not_in_place, offset, span};
use crate::args::{CInt, TypeInfo};
use crate::comm::Comm;
use crate::error::{err, MpiResult};
use crate::p2p::UserBuf;
use std::borrow::Cow;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// A v side's per-peer counts and displacements (in extents), as the C boundary read them.
pub type VArrays<'a, C, D> = (Cow<'a, [C]>, Cow<'a, [D]>);
/// A w side's per-peer counts, byte displacements and datatypes.
pub type WArrays<'a, C, D> = (Cow<'a, [C]>, Cow<'a, [D]>, Cow<'a, [i32]>);

/// One side of a v/w collective: per peer, (count, byte displacement, datatype).
pub struct Side(Vec<(usize, isize, TypeInfo)>);

/// The per-peer side of a collective as its arguments give it: `make(m)` reads and
/// checks it for the `m` peers, called only where the side is significant; `counts`: a
/// v or w form (counts per peer, which may differ).
pub struct Peers<F> {
    make: F,
    counts: bool,
}

/// A side of `count` instances of `dt` for every peer, one after the other (arguments
/// `{what}count`, `{what}type`).
pub fn uniform(
    count: i64,
    dt: i32,
    what: &'static str,
) -> Peers<impl FnOnce(usize) -> MpiResult<Side>> {
    Peers {
        make: move |m| uniform_side(count, dt, m, what),
        counts: false,
    }
}

/// A side of per-peer counts and displacements (in extents of `dt`), which `arrays`
/// reads.
pub fn varying<'a, C: CInt, D: CInt>(
    dt: i32,
    what: &'static str,
    arrays: impl FnOnce(usize) -> MpiResult<VArrays<'a, C, D>>,
) -> Peers<impl FnOnce(usize) -> MpiResult<Side>> {
    Peers {
        make: move |m| vside(dt, m, what, arrays),
        counts: true,
    }
}

/// A side of per-peer counts, byte displacements and datatypes, which `arrays` reads.
pub fn typed<'a, C: CInt, D: CInt>(
    what: &'static str,
    arrays: impl FnOnce(usize) -> MpiResult<WArrays<'a, C, D>>,
) -> Peers<impl FnOnce(usize) -> MpiResult<Side>> {
    Peers {
        make: move |m| wside(m, what, arrays),
        counts: true,
    }
}

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
fn one_block(n: i64, dt: i32, what: &str) -> MpiResult<Side> {
    let t = datatype(dt, &format!("{what}type"))?;
    Ok(Side(vec![(count(n, &format!("{what}count"))?, 0, t)]))
}

fn uniform_side(n: i64, dt: i32, m: usize, what: &str) -> MpiResult<Side> {
    let t = datatype(dt, &format!("{what}type"))?;
    let n = count(n, &format!("{what}count"))?;
    let stride = span(&t, n)? as isize;
    Ok(Side((0..m).map(|k| (n, k as isize * stride, t)).collect()))
}

fn vside<'a, C: CInt, D: CInt>(
    dt: i32,
    m: usize,
    what: &str,
    arrays: impl FnOnce(usize) -> MpiResult<VArrays<'a, C, D>>,
) -> MpiResult<Side> {
    let t = datatype(dt, &format!("{what}type"))?;
    let (c, d) = arrays(m)?;
    (0..m)
        .map(|k| {
            Ok((
                count(c[k], &format!("{what}counts[{k}]"))?,
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

fn wside<'a, C: CInt, D: CInt>(
    m: usize,
    what: &str,
    arrays: impl FnOnce(usize) -> MpiResult<WArrays<'a, C, D>>,
) -> MpiResult<Side> {
    let (c, d, ty) = arrays(m)?;
    let dname = format!("{what}displs");
    (0..m)
        .map(|k| {
            let t = datatype(ty[k], &format!("{what}types[{k}]"))?;
            Ok((
                count(c[k], &format!("{what}counts[{k}]"))?,
                disp(d[k], 1, &dname, k)?,
                t,
            ))
        })
        .collect::<MpiResult<_>>()
        .map(Side)
}

/// This process's one piece, `n` instances of `dt` at `buf` (the arguments `names`:
/// count, datatype, buffer), staged as an input or (`out`) an output.
fn one_piece(
    st: &mut Stage,
    buf: *const c_void,
    n: i64,
    dt: i32,
    names: [&str; 3],
    out: bool,
) -> MpiResult<Piece> {
    let n = count(n, names[0])?;
    let t = datatype(dt, names[1])?;
    let b = if out {
        st.output(buf as *mut c_void, n, &t, names[2])?
    } else {
        st.input(buf, n, &t, names[2])?
    };
    Ok(whole(b))
}

fn whole(b: UserBuf) -> Piece {
    Piece {
        buf: b,
        off: 0,
        len: b.len(),
    }
}

// ---------------------------------------------------------------- agreement flows

/// This process's ends of `side`'s pieces (agree.rs), counts from argument `arg`.
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
fn one_end(n: i64, dt: i32, arg: Arg) -> FlowEnd {
    match (count(n, "count"), datatype(dt, "datatype")) {
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
        ..super::plan::move_desc(kind, root)
    };
    super::plan::with_flows(p, desc, flows)
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

// ---------------------------------------------------------------- Gather(v), Allgather(v)

/// Gather-like: `recv` (if this process receives) per peer; `send` this process's piece.
///
/// # Safety
/// The buffers are valid as the MPI standard requires of the caller.
unsafe fn gather_like(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: i32,
    recvbuf: *mut c_void,
    recv: Option<Side>,
    root: Option<c_int>,
    vary: bool,
) -> Plan {
    let n = c.chan_members.len();
    let mut st = Stage::default();
    let names = ["sendcount", "sendtype", "sendbuf"];
    let own = |st: &mut Stage| one_piece(st, sendbuf, sendcount, sendtype, names, false);
    if c.is_inter() {
        // Rooted: the root receives from the remote group; allgather: everyone does.
        let (sends, receives) = match root {
            Some(r) => match super::inter::inter_root(c, r)? {
                Role::Root => (false, true),
                Role::Idle => (false, false),
                Role::Peer(_) => (true, false),
            },
            None => (true, true),
        };
        let send = if sends {
            not_in_place(sendbuf, "sendbuf")?;
            own(&mut st)?
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
        own(&mut st)?
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

/// The per-peer side of a rooted collective, significant only at its root: `make`'s
/// side where this process is the root, else None.
fn at_root<F: FnOnce(usize) -> MpiResult<Side>>(
    c: &Comm,
    root: c_int,
    make: F,
) -> MpiResult<Option<Side>> {
    let is_root = if c.is_inter() {
        root == MPI_ROOT
    } else {
        root_arg(root, c)? == c.rank
    };
    if is_root {
        make(c.peer_size()).map(Some)
    } else {
        Ok(None)
    }
}

/// MPI_Gather(v) (to `root`) and MPI_Allgather(v) (`root` None), the collective `name`,
/// on `c`.
///
/// # Safety
/// The buffers are valid as the MPI standard requires of the caller.
pub unsafe fn gather<F: FnOnce(usize) -> MpiResult<Side>>(
    c: &Arc<Comm>,
    name: &str,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: i32,
    recvbuf: *mut c_void,
    recv: Peers<F>,
    root: Option<c_int>,
) -> Plan {
    let (arg, vary) = if recv.counts {
        (Arg::RecvCounts, true)
    } else {
        (Arg::RecvCount, c.is_inter())
    };
    let recv = match root {
        Some(r) => at_root(c, r, recv.make)?,
        None => Some((recv.make)(c.peer_size())?),
    };
    let send = one_end(sendcount, sendtype, Arg::SendCount);
    let rooted = root.map(|r| r as usize);
    let flows = gather_flows(c, sendbuf, send, recv.as_ref(), arg, rooted);
    // SAFETY: this function's contract, which is gather_like's.
    let p = unsafe { gather_like(c, sendbuf, sendcount, sendtype, recvbuf, recv, root, vary) };
    with_check(p, name, root, flows)
}

// ---------------------------------------------------------------- Scatter(v)

/// Scatter-like: `send` (at the root) per peer; `recv` this process's piece.
///
/// # Safety
/// The buffers are valid as the MPI standard requires of the caller.
unsafe fn scatter_like(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    send: Option<Side>,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: i32,
    root: c_int,
    vary: bool,
) -> Plan {
    let mut st = Stage::default();
    let args = ["recvcount", "recvtype", "recvbuf"];
    let recv_piece = |st: &mut Stage| one_piece(st, recvbuf, recvcount, recvtype, args, true);
    let n = c.chan_members.len();
    if c.is_inter() {
        let r = super::inter::inter_root(c, root)?;
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
            not_in_place(recvbuf, "recvbuf")?;
            recv_piece(&mut st)?
        } else {
            Piece::none()
        };
        let is_root = matches!(r, Role::Root);
        let cc = c.clone();
        return Ok((
            c.clone(),
            Box::pin(async move {
                super::inter::scatter(&cc, is_root, &sv, rv).await?;
                st.finish()
            }),
        ));
    }
    let me = c.rank;
    let root = root_arg(root, c)?;
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
        recv_piece(&mut st)?
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

/// MPI_Scatter(v), the collective `name`, from `root` on `c` (`send` is significant at
/// the root only).
///
/// # Safety
/// The buffers are valid as the MPI standard requires of the caller.
pub unsafe fn scatter<F: FnOnce(usize) -> MpiResult<Side>>(
    c: &Arc<Comm>,
    name: &str,
    sendbuf: *const c_void,
    send: Peers<F>,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: i32,
    root: c_int,
) -> Plan {
    let (arg, vary) = if send.counts {
        (Arg::SendCounts, true)
    } else {
        (Arg::SendCount, c.is_inter())
    };
    let send = at_root(c, root, send.make)?;
    let recv = one_end(recvcount, recvtype, Arg::RecvCount);
    let flows = scatter_flows(c, send.as_ref(), arg, recvbuf, recv, root as usize);
    // SAFETY: this function's contract, which is scatter_like's.
    let p = unsafe { scatter_like(c, sendbuf, send, recvbuf, recvcount, recvtype, root, vary) };
    with_check(p, name, Some(root), flows)
}

// ---------------------------------------------------------------- Alltoall(v, w)

/// All-to-all-like: the send buffer and its side (None: in place), and `recv`, per peer.
///
/// # Safety
/// The buffers are valid as the MPI standard requires of the caller.
unsafe fn alltoall_like(
    c: &Arc<Comm>,
    send: Option<(*const c_void, Side)>,
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
    if c.is_inter() && send.is_none() {
        not_in_place(crate::args::IN_PLACE, "sendbuf")?;
    }
    let skip = send.is_none().then_some(c.rank);
    // In place: what goes to peer j is what recvbuf holds at j's place, copied (staged
    // or read chunk by chunk before any chunk is written back).
    let sv = match &send {
        Some((sendbuf, side)) => {
            stage_side(&mut st, *sendbuf, side, false, n, &*chan, None, "sendbuf")?
        }
        None => {
            let mut v = vec![Piece::none(); n];
            for (k, &(count, disp, t)) in recv.0.iter().enumerate() {
                if Some(k) != skip {
                    // Always a private copy: the receive side writes the same bytes.
                    let p = offset(recvbuf, disp);
                    let packed = crate::p2p::buf::pack_vec(p, count, &t, "recvbuf")?;
                    v[chan(k)] = whole(st.packed(packed));
                }
            }
            v
        }
    };
    let rv = stage_side(&mut st, recvbuf, &recv, true, n, &*chan, skip, "recvbuf")?;
    if let Some((sendbuf, side)) = &send {
        no_alias(*sendbuf, side, recvbuf, &recv)?;
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

/// MPI_Alltoall(v, w), the collective `name`, on `c` (`send` is not read in place).
///
/// # Safety
/// The buffers are valid as the MPI standard requires of the caller.
pub unsafe fn alltoall<F, G>(
    c: &Arc<Comm>,
    name: &str,
    sendbuf: *const c_void,
    send: Peers<F>,
    recvbuf: *mut c_void,
    recv: Peers<G>,
) -> Plan
where
    F: FnOnce(usize) -> MpiResult<Side>,
    G: FnOnce(usize) -> MpiResult<Side>,
{
    let arg = |counts, each, one| if counts { each } else { one };
    let args = (
        arg(send.counts, Arg::SendCounts, Arg::SendCount),
        arg(recv.counts, Arg::RecvCounts, Arg::RecvCount),
    );
    let vary = recv.counts || c.is_inter();
    let m = c.peer_size();
    let recv = (recv.make)(m)?;
    let send = if is_in_place(sendbuf) {
        None
    } else {
        Some((sendbuf, (send.make)(m)?))
    };
    let sides = send.as_ref().map(|(_, side)| side);
    let flows = alltoall_flows(c, sides, args.0, &recv, args.1);
    // SAFETY: this function's contract, which is alltoall_like's.
    let p = unsafe { alltoall_like(c, send, recvbuf, recv, vary) };
    with_check(p, name, None, flows)
}
