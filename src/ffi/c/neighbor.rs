//! Neighbourhood collectives (MPI-3.1 section 7.6): MPI_Neighbor_allgather(v),
//! MPI_Neighbor_alltoall(v, w), their nonblocking forms, their MPI-4 persistent forms
//! (`..._init`: each MPI_Start posts the exchange as the nonblocking call does) and
//! their large-count forms (`_c`), on communicators with a Cartesian, graph or
//! distributed graph topology.
//!
//! Each process receives one block from each in-neighbour (sources, in order) and sends
//! one to each out-neighbour (destinations): point-to-point messages in the
//! communicator's internal context (`p2p::INTERNAL_CTX`), which the program's own
//! receives and probes never see. The receives are posted before the sends, all at the
//! call, so several outstanding calls on one communicator pair up in issue order.
//!
//! Neighbours: for a Cartesian topology, for each dimension d the two ranks
//! `MPI_Cart_shift(comm, d, 1, ...)` gives, source then destination, as both the in- and
//! the out-list; the block sent to list entry j arrives in the receiver's entry j^1 (what
//! it sends "up" is what its upper neighbour gets from "below", as in the standard's
//! example built from MPI_Sendrecv), told apart by tags, so it is right even when both
//! neighbours are one process (a periodic dimension of size 1 or 2). For a graph
//! topology, MPI_Graph_neighbors both ways; for a distributed graph, its sources and
//! destinations; there, several edges between two processes pair up in order.
//! MPI_PROC_NULL neighbours are skipped (their receive blocks are left alone).
use crate::abi::*;
use crate::comm::topo::{self, Topo};
use crate::comm::Comm;
use crate::error::{err, MpiError, MpiResult};
use crate::ffi::c::p2p::req_handle;
use crate::ffi::check::{self, TypeInfo};
use crate::mpi_entry;
use crate::p2p::{self, Status};
use std::os::raw::{c_int, c_void};
use std::sync::Arc;
use std::task::Poll;

type Aint = isize;

/// The in- and out-neighbours of this process, and whether they follow the Cartesian
/// pairing rule (block j arrives in entry j^1).
struct Neighbors {
    sources: Vec<i32>,
    dests: Vec<i32>,
    cart: bool,
}

fn neighbors(c: &Comm) -> MpiResult<Neighbors> {
    if c.is_inter() {
        return Err(err(
            MPI_ERR_COMM,
            "comm is an intercommunicator (neighbourhood collectives need a process topology)",
        ));
    }
    let t = c.topo.read().unwrap().clone();
    match t.as_deref() {
        Some(Topo::Cart { dims, .. }) => {
            let mut l = Vec::with_capacity(2 * dims.len());
            for d in 0..dims.len() {
                let (s, t) = topo::shift(c, d as i32, 1)?;
                l.extend([s, t]);
            }
            Ok(Neighbors {
                sources: l.clone(),
                dests: l,
                cart: true,
            })
        }
        Some(Topo::Graph { .. }) => {
            let l = topo::graph_neighbors(c, c.rank as i32)?;
            Ok(Neighbors {
                sources: l.clone(),
                dests: l,
                cart: false,
            })
        }
        Some(Topo::Dist { sources, dests, .. }) => Ok(Neighbors {
            sources: sources.clone(),
            dests: dests.clone(),
            cart: false,
        }),
        None => Err(err(
            MPI_ERR_TOPOLOGY,
            "comm has no process topology (create it with MPI_Cart_create, MPI_Graph_create or MPI_Dist_graph_create)",
        )),
    }
}

/// One block: its buffer address, count and datatype.
#[derive(Clone, Copy)]
struct Block {
    at: *const c_void,
    count: usize,
    t: TypeInfo,
}

/// A neighbourhood exchange, checked and ready to post.
struct Exchange {
    comm: Arc<Comm>,
    nb: Neighbors,
    send: Vec<Block>,
    recv: Vec<Block>,
}

/// `base` + `bytes` (the block's address; never dereferenced here).
fn at(base: *const c_void, bytes: isize) -> *const c_void {
    (base as *const u8).wrapping_offset(bytes) as *const c_void
}

fn not_in_place(p: *const c_void, arg: &str) -> MpiResult<()> {
    if check::is_in_place(p) {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("{arg} is MPI_IN_PLACE, which the neighbourhood collectives do not accept"),
        ));
    }
    Ok(())
}

/// Blocks of one side where every block has the same count and type, at `stride`
/// extents apart (0: the same buffer for all).
fn uniform<C: check::CInt>(
    base: *const c_void,
    n: usize,
    count: C,
    dt: i32,
    side: &str,
    stride: bool,
) -> MpiResult<Vec<Block>> {
    let count = check::count(count, &format!("{side}count"))?;
    let t = check::datatype(dt, &format!("{side}type"))?;
    let step = if stride {
        check::span(&t, count)? as isize
    } else {
        0
    };
    Ok((0..n)
        .map(|i| Block {
            at: at(base, step * i as isize),
            count,
            t,
        })
        .collect())
}

/// Blocks with their own counts and displacements (in extents of one type).
fn varying<C: check::CInt, D: check::CInt>(
    base: *const c_void,
    n: usize,
    counts: *const C,
    displs: *const D,
    dt: i32,
    side: &str,
    displs_name: &str,
) -> MpiResult<Vec<Block>> {
    let t = check::datatype(dt, &format!("{side}type"))?;
    // SAFETY: `counts`: passed on from the entry point, valid as the MPI caller must pass it.
    let counts = unsafe { check::plan_array(counts, n, &format!("{side}counts")) }?;
    // SAFETY: `displs`: passed on from the entry point, valid as the MPI caller must pass it.
    let displs = unsafe { check::plan_array(displs, n, displs_name) }?;
    (0..n)
        .map(|i| {
            let d: i64 = displs[i].into();
            Ok(Block {
                at: at(base, (d as isize).wrapping_mul(t.extent as isize)),
                count: check::count(counts[i], &format!("{side}counts[{i}]"))?,
                t,
            })
        })
        .collect()
}

/// Blocks with their own counts, byte displacements and types (the w form).
fn typed<C: check::CInt>(
    base: *const c_void,
    n: usize,
    counts: *const C,
    displs: *const Aint,
    types: *const i32,
    side: &str,
) -> MpiResult<Vec<Block>> {
    // SAFETY: `counts`: passed on from the entry point, valid as the MPI caller must pass it.
    let counts = unsafe { check::plan_array(counts, n, &format!("{side}counts")) }?;
    // SAFETY: `displs`: passed on from the entry point, valid as the MPI caller must pass it.
    let displs = unsafe { check::plan_array(displs, n, &format!("{side}displs")) }?;
    // SAFETY: `types`: passed on from the entry point, valid as the MPI caller must pass it.
    let types = unsafe { check::plan_array(types, n, &format!("{side}types")) }?;
    (0..n)
        .map(|i| {
            Ok(Block {
                at: at(base, displs[i]),
                count: check::count(counts[i], &format!("{side}counts[{i}]"))?,
                t: check::datatype(types[i], &format!("{side}types[{i}]"))?,
            })
        })
        .collect()
}

fn topology(comm: i32) -> MpiResult<(Arc<Comm>, Neighbors)> {
    let c = check::comm(comm)?;
    let nb = neighbors(&c)?;
    Ok((c, nb))
}

/// Posts the exchange: every receive, then every send. Returns the requests. Every
/// block is checked (and a non-contiguous send block packed) before anything is posted,
/// so an argument error leaves no receive behind.
fn post(x: &Exchange) -> MpiResult<Vec<usize>> {
    let tag = |slot: usize| if x.nb.cart { slot as i32 } else { 0 };
    let mut recvs = Vec::with_capacity(x.recv.len());
    for (i, (&src, b)) in x.nb.sources.iter().zip(&x.recv).enumerate() {
        if src != MPI_PROC_NULL {
            let into = crate::ffi::typed::recv_into(b.at as *mut c_void, b.count, &b.t, "recvbuf")?;
            recvs.push((src, into, tag(i)));
        }
    }
    let mut sends = Vec::with_capacity(x.send.len());
    for (j, (&dst, b)) in x.nb.dests.iter().zip(&x.send).enumerate() {
        if dst != MPI_PROC_NULL {
            let data = crate::ffi::typed::send_data(b.at, b.count, &b.t, "sendbuf")?;
            sends.push((dst, data, tag(j ^ 1)));
        }
    }
    let mut ids = Vec::with_capacity(recvs.len() + sends.len());
    for (src, into, t) in recvs {
        ids.push(p2p::irecv_internal(&x.comm, into, src, t)?);
    }
    for (dst, data, t) in sends {
        ids.push(p2p::isend_internal(&x.comm, data, dst, t)?);
    }
    Ok(ids)
}

/// The error of a finished block transfer (a receive block too small for what came).
fn transfer_error(st: &Status) -> MpiResult<()> {
    if st.error == MPI_SUCCESS {
        return Ok(());
    }
    Err(err(
        st.error,
        if st.error == MPI_ERR_TRUNCATE {
            format!(
                "the block from rank {} ({} bytes) is larger than its receive block (truncated)",
                st.source, st.count_bytes
            )
        } else {
            "a block transfer failed".to_string()
        },
    ))
}

/// The blocking call: waits for every transfer.
fn run(name: &str, x: Exchange) -> MpiResult<()> {
    let ids = post(&x)?;
    let mut first = Ok(());
    for id in ids {
        let st = p2p::wait(id)?;
        if first.is_ok() {
            first = transfer_error(&st);
        }
    }
    first.map_err(|e| MpiError::new(e.class, format!("{name}: {}", e.msg)))
}

/// The nonblocking call: a request the progress engine completes once every transfer
/// has.
fn start(name: &'static str, x: Exchange, request: *mut i32) -> MpiResult<()> {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let id = start_id(name, x)?;
    // SAFETY: `request`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(request, req_handle(id), "request") }
}

/// The persistent call: checks the arguments now (`make` builds the exchange), and at
/// each MPI_Start posts the exchange `make` builds then, with the datatypes and the
/// communicator the first call looked up (crate::pin), whatever the program freed since.
fn init(
    name: &'static str,
    make: impl Fn(i32) -> MpiResult<Exchange> + Send + Sync + 'static,
    comm: i32,
    info: i32,
    request: *mut i32,
) -> MpiResult<()> {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    crate::ffi::c::info::check_arg(info, "info")?;
    let h = crate::ffi::c::persist::create(name, comm, make, move |x| start_id(name, x))?;
    // SAFETY: `request`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(request, h, "request") }
}

/// Posts the exchange and returns the engine request that completes with it.
fn start_id(name: &'static str, x: Exchange) -> MpiResult<usize> {
    let ids = post(&x)?;
    let fut: crate::coll::nb::CollFuture = Box::pin(async move {
        let mut first = Ok(());
        for id in ids {
            std::future::poll_fn(|_| {
                if p2p::is_complete(id) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
            let st = p2p::test(id)?.unwrap_or_else(Status::empty);
            if first.is_ok() {
                first = transfer_error(&st);
            }
        }
        first.map_err(|e| MpiError::new(e.class, format!("{name}: {}", e.msg)))
    });
    crate::coll::nb::start(&x.comm, fut)
}

// ---------------------------------------------------------------- the argument forms

/// An exchange on `comm`'s topology: `blocks(destinations, sources)` gives the send and
/// the receive blocks.
fn exchange(
    comm: i32,
    sendbuf: *const c_void,
    blocks: impl FnOnce(usize, usize) -> MpiResult<(Vec<Block>, Vec<Block>)>,
) -> MpiResult<Exchange> {
    let (c, nb) = topology(comm)?;
    not_in_place(sendbuf, "sendbuf")?;
    let (send, recv) = blocks(nb.dests.len(), nb.sources.len())?;
    Ok(Exchange {
        comm: c,
        nb,
        send,
        recv,
    })
}

/// Allgather (`spread` false: one send block for every destination) and alltoall
/// (`spread` true: send block j for destination j).
#[allow(clippy::too_many_arguments)]
fn uniform_exchange<C: check::CInt>(
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: i32,
    comm: i32,
    spread: bool,
) -> MpiResult<Exchange> {
    exchange(comm, sendbuf, |nd, ns| {
        Ok((
            uniform(sendbuf, nd, sendcount, sendtype, "send", spread)?,
            uniform(recvbuf, ns, recvcount, recvtype, "recv", true)?,
        ))
    })
}

fn allgather<C: check::CInt>(
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: i32,
    comm: i32,
) -> MpiResult<Exchange> {
    uniform_exchange(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, false,
    )
}

fn alltoall<C: check::CInt>(
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: i32,
    comm: i32,
) -> MpiResult<Exchange> {
    uniform_exchange(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, true,
    )
}

#[allow(clippy::too_many_arguments)]
fn allgatherv<C: check::CInt, D: check::CInt>(
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    displs: *const D,
    recvtype: i32,
    comm: i32,
) -> MpiResult<Exchange> {
    exchange(comm, sendbuf, |nd, ns| {
        Ok((
            uniform(sendbuf, nd, sendcount, sendtype, "send", false)?,
            varying(recvbuf, ns, recvcounts, displs, recvtype, "recv", "displs")?,
        ))
    })
}

#[allow(clippy::too_many_arguments)]
fn alltoallv<C: check::CInt, D: check::CInt>(
    sendbuf: *const c_void,
    sendcounts: *const C,
    sdispls: *const D,
    sendtype: i32,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    rdispls: *const D,
    recvtype: i32,
    comm: i32,
) -> MpiResult<Exchange> {
    exchange(comm, sendbuf, |nd, ns| {
        Ok((
            varying(
                sendbuf, nd, sendcounts, sdispls, sendtype, "send", "sdispls",
            )?,
            varying(
                recvbuf, ns, recvcounts, rdispls, recvtype, "recv", "rdispls",
            )?,
        ))
    })
}

#[allow(clippy::too_many_arguments)]
fn alltoallw<C: check::CInt>(
    sendbuf: *const c_void,
    sendcounts: *const C,
    sdispls: *const Aint,
    sendtypes: *const i32,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    rdispls: *const Aint,
    recvtypes: *const i32,
    comm: i32,
) -> MpiResult<Exchange> {
    exchange(comm, sendbuf, |nd, ns| {
        Ok((
            typed(sendbuf, nd, sendcounts, sdispls, sendtypes, "send")?,
            typed(recvbuf, ns, recvcounts, rdispls, recvtypes, "recv")?,
        ))
    })
}

// ---------------------------------------------------------------- entry points

/// The blocking, the nonblocking and the persistent entry point of one neighbourhood
/// collective, all taking the arguments `$a` (then comm, and a request for the
/// nonblocking one, info and a request for the persistent one) to the argument form
/// `$form`.
macro_rules! neighbor_entries {
    ($mpi:ident, $pmpi:ident, $impi:ident, $ipmpi:ident, $init:ident, $pinit:ident, $form:ident, ($($a:ident : $t:ty),*)) => {
        mpi_entry!($mpi, $pmpi, ($($a: $t),*, comm: i32), errcomm = comm, {
            run(stringify!($mpi), $form($($a),*, comm)?)
        });
        mpi_entry!($impi, $ipmpi, ($($a: $t),*, comm: i32, request: *mut i32), errcomm = comm, {
            start(stringify!($impi), $form($($a),*, comm)?, request)
        });
        mpi_entry!($init, $pinit, ($($a: $t),*, comm: i32, info: i32, request: *mut i32), errcomm = comm, {
            let args = crate::ffi::c::persist::Captured(($($a,)*));
            init(stringify!($init), move |on: i32| {
                let ($($a,)*) = args.get();
                $form($($a),*, on)
            }, comm, info, request)
        });
    };
}

neighbor_entries!(MPI_Neighbor_allgather, PMPI_Neighbor_allgather,
    MPI_Ineighbor_allgather, PMPI_Ineighbor_allgather,
    MPI_Neighbor_allgather_init, PMPI_Neighbor_allgather_init, allgather,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: i32));

neighbor_entries!(MPI_Neighbor_allgather_c, PMPI_Neighbor_allgather_c,
    MPI_Ineighbor_allgather_c, PMPI_Ineighbor_allgather_c,
    MPI_Neighbor_allgather_init_c, PMPI_Neighbor_allgather_init_c, allgather,
    (sendbuf: *const c_void, sendcount: i64, sendtype: i32, recvbuf: *mut c_void,
     recvcount: i64, recvtype: i32));

neighbor_entries!(MPI_Neighbor_allgatherv, PMPI_Neighbor_allgatherv,
    MPI_Ineighbor_allgatherv, PMPI_Ineighbor_allgatherv,
    MPI_Neighbor_allgatherv_init, PMPI_Neighbor_allgatherv_init, allgatherv,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void,
     recvcounts: *const c_int, displs: *const c_int, recvtype: i32));

neighbor_entries!(MPI_Neighbor_allgatherv_c, PMPI_Neighbor_allgatherv_c,
    MPI_Ineighbor_allgatherv_c, PMPI_Ineighbor_allgatherv_c,
    MPI_Neighbor_allgatherv_init_c, PMPI_Neighbor_allgatherv_init_c, allgatherv,
    (sendbuf: *const c_void, sendcount: i64, sendtype: i32, recvbuf: *mut c_void,
     recvcounts: *const i64, displs: *const i64, recvtype: i32));

neighbor_entries!(MPI_Neighbor_alltoall, PMPI_Neighbor_alltoall,
    MPI_Ineighbor_alltoall, PMPI_Ineighbor_alltoall,
    MPI_Neighbor_alltoall_init, PMPI_Neighbor_alltoall_init, alltoall,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: i32, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: i32));

neighbor_entries!(MPI_Neighbor_alltoall_c, PMPI_Neighbor_alltoall_c,
    MPI_Ineighbor_alltoall_c, PMPI_Ineighbor_alltoall_c,
    MPI_Neighbor_alltoall_init_c, PMPI_Neighbor_alltoall_init_c, alltoall,
    (sendbuf: *const c_void, sendcount: i64, sendtype: i32, recvbuf: *mut c_void,
     recvcount: i64, recvtype: i32));

neighbor_entries!(MPI_Neighbor_alltoallv, PMPI_Neighbor_alltoallv,
    MPI_Ineighbor_alltoallv, PMPI_Ineighbor_alltoallv,
    MPI_Neighbor_alltoallv_init, PMPI_Neighbor_alltoallv_init, alltoallv,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: i32,
     recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: i32));

neighbor_entries!(MPI_Neighbor_alltoallv_c, PMPI_Neighbor_alltoallv_c,
    MPI_Ineighbor_alltoallv_c, PMPI_Ineighbor_alltoallv_c,
    MPI_Neighbor_alltoallv_init_c, PMPI_Neighbor_alltoallv_init_c, alltoallv,
    (sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const i64, sendtype: i32,
     recvbuf: *mut c_void, recvcounts: *const i64, rdispls: *const i64, recvtype: i32));

neighbor_entries!(MPI_Neighbor_alltoallw, PMPI_Neighbor_alltoallw,
    MPI_Ineighbor_alltoallw, PMPI_Ineighbor_alltoallw,
    MPI_Neighbor_alltoallw_init, PMPI_Neighbor_alltoallw_init, alltoallw,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const Aint,
     sendtypes: *const i32, recvbuf: *mut c_void, recvcounts: *const c_int,
     rdispls: *const Aint, recvtypes: *const i32));

neighbor_entries!(MPI_Neighbor_alltoallw_c, PMPI_Neighbor_alltoallw_c,
    MPI_Ineighbor_alltoallw_c, PMPI_Ineighbor_alltoallw_c,
    MPI_Neighbor_alltoallw_init_c, PMPI_Neighbor_alltoallw_init_c, alltoallw,
    (sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const Aint,
     sendtypes: *const i32, recvbuf: *mut c_void, recvcounts: *const i64,
     rdispls: *const Aint, recvtypes: *const i32));
