//! Neighbourhood collectives (MPI-3.1 section 7.6): MPI_Neighbor_allgather(v),
//! MPI_Neighbor_alltoall(v, w), in blocking ([`run`]), nonblocking and persistent
//! ([`start`], which each MPI_Start of an `_init` request calls) forms, on communicators
//! with a Cartesian, graph or distributed graph topology.
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
//!
//! The buffers are the C caller's addresses (the functions taking them are unsafe fns);
//! the per-neighbour arrays come as slices, read by the C boundary through the closures
//! these functions call once the topology gives their lengths.
use super::moves::{VArrays, WArrays};
use crate::abi::*;
use crate::args::{count, datatype, is_in_place, span, CInt, TypeInfo};
use crate::comm::topo::{self, Topo};
use crate::comm::Comm;
use crate::error::{err, MpiError, MpiResult};
use crate::p2p::{self, Status};
use std::os::raw::c_void;
use std::sync::Arc;
use std::task::Poll;

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
pub struct Block {
    at: *const c_void,
    count: usize,
    t: TypeInfo,
}

/// A neighbourhood exchange, checked and ready to post. Made only by this module's
/// unsafe fns, whose contract keeps its blocks valid until the exchange completes.
pub struct Exchange {
    comm: Arc<Comm>,
    nb: Neighbors,
    send: Vec<Block>,
    recv: Vec<Block>,
}

/// `base` + `bytes` (the block's address; never dereferenced here).
fn at(base: *const c_void, bytes: isize) -> *const c_void {
    (base as *const u8).wrapping_offset(bytes) as *const c_void
}

/// The blocks of one side as the arguments give them: `make(base, n)` checks them for
/// the `n` neighbours of the side, in the buffer at `base`.
pub trait Blocks: FnOnce(*const c_void, usize) -> MpiResult<Vec<Block>> {}
impl<F: FnOnce(*const c_void, usize) -> MpiResult<Vec<Block>>> Blocks for F {}

/// Blocks of one side where every block has the same count and type (arguments
/// `{side}count`, `{side}type`), at `stride` extents apart (0: the same buffer for all).
pub fn uniform(count_: i64, dt: i32, side: &'static str, stride: bool) -> impl Blocks {
    move |base: *const c_void, n: usize| {
        let count = count(count_, &format!("{side}count"))?;
        let t = datatype(dt, &format!("{side}type"))?;
        let step = if stride { span(&t, count)? as isize } else { 0 };
        Ok((0..n)
            .map(|i| Block {
                at: at(base, step * i as isize),
                count,
                t,
            })
            .collect())
    }
}

/// Blocks with their own counts and displacements (in extents of `dt`), which `arrays`
/// reads.
pub fn varying<'a, C: CInt, D: CInt>(
    dt: i32,
    side: &'static str,
    arrays: impl FnOnce(usize) -> MpiResult<VArrays<'a, C, D>>,
) -> impl Blocks {
    move |base: *const c_void, n: usize| {
        let t = datatype(dt, &format!("{side}type"))?;
        let (counts, displs) = arrays(n)?;
        (0..n)
            .map(|i| {
                let d: i64 = displs[i].into();
                Ok(Block {
                    at: at(base, (d as isize).wrapping_mul(t.extent as isize)),
                    count: count(counts[i], &format!("{side}counts[{i}]"))?,
                    t,
                })
            })
            .collect()
    }
}

/// Blocks with their own counts, byte displacements and types (the w form), which
/// `arrays` reads.
pub fn typed<'a, C: CInt>(
    side: &'static str,
    arrays: impl FnOnce(usize) -> MpiResult<WArrays<'a, C, isize>>,
) -> impl Blocks {
    move |base: *const c_void, n: usize| {
        let (counts, displs, types) = arrays(n)?;
        (0..n)
            .map(|i| {
                Ok(Block {
                    at: at(base, displs[i]),
                    count: count(counts[i], &format!("{side}counts[{i}]"))?,
                    t: datatype(types[i], &format!("{side}types[{i}]"))?,
                })
            })
            .collect()
    }
}

/// Posts the exchange: every receive, then every send. Returns the requests. Every
/// block is checked (and a non-contiguous send block packed) before anything is posted,
/// so an argument error leaves no receive behind.
fn post(x: &Exchange) -> MpiResult<Vec<usize>> {
    let tag = |slot: usize| if x.nb.cart { slot as i32 } else { 0 };
    let mut recvs = Vec::with_capacity(x.recv.len());
    for (i, (&src, b)) in x.nb.sources.iter().zip(&x.recv).enumerate() {
        if src != MPI_PROC_NULL {
            // SAFETY: a block of the exchange (see `Exchange`).
            recvs.push((
                src,
                crate::p2p::buf::recv_into(b.at as *mut c_void, b.count, &b.t, "recvbuf")?,
                tag(i),
            ));
        }
    }
    let mut sends = Vec::with_capacity(x.send.len());
    for (j, (&dst, b)) in x.nb.dests.iter().zip(&x.send).enumerate() {
        if dst != MPI_PROC_NULL {
            // SAFETY: a block of the exchange (see `Exchange`).
            sends.push((
                dst,
                crate::p2p::buf::send_data(b.at, b.count, &b.t, "sendbuf")?,
                tag(j ^ 1),
            ));
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

/// The blocking call `name`: posts the exchange and waits for every transfer.
pub fn run(name: &str, x: Exchange) -> MpiResult<()> {
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

/// The nonblocking call `name` (and each start of a persistent one): posts the exchange
/// and returns the engine request that the progress engine completes once every
/// transfer has.
pub fn start(name: &'static str, x: Exchange) -> MpiResult<usize> {
    let ids = post(&x)?;
    let fut: super::nb::CollFuture = Box::pin(async move {
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
    super::nb::start(&x.comm, fut)
}

// ---------------------------------------------------------------- the exchange

/// A neighbourhood exchange on `c`'s topology: the blocks `send` makes of `sendbuf` for
/// the destinations, and those `recv` makes of `recvbuf` for the sources.
///
/// # Safety
/// The buffers are valid as the MPI standard requires of the caller, until the
/// exchange completes.
pub unsafe fn exchange(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    send: impl Blocks,
    recvbuf: *mut c_void,
    recv: impl Blocks,
) -> MpiResult<Exchange> {
    let nb = neighbors(c)?;
    if is_in_place(sendbuf) {
        return Err(err(
            MPI_ERR_BUFFER,
            "sendbuf is MPI_IN_PLACE, which the neighbourhood collectives do not accept",
        ));
    }
    let send = send(sendbuf, nb.dests.len())?;
    let recv = recv(recvbuf, nb.sources.len())?;
    Ok(Exchange {
        comm: c.clone(),
        nb,
        send,
        recv,
    })
}
