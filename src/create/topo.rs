//! Topologies made by communicating: MPI_Cart_create, MPI_Cart_sub, MPI_Graph_create
//! and the distributed graphs are communicators split from their parent, with the
//! topology (comm/topo.rs) attached.
#![allow(unsafe_code)]
//! Unsafe code here (the one exception of create/, which denies it): the `UserBuf`s over
//! the local vectors of a distributed graph's exchange of neighbour lists.
use crate::abi::*;
use crate::comm::topo::*;
use crate::comm::Comm;
use crate::create;
use crate::error::{err, MpiResult};
use std::sync::Arc;

fn attach(c: Option<Arc<Comm>>, t: Topo) -> Option<Arc<Comm>> {
    if let Some(c) = &c {
        *c.topo.write().unwrap() = Some(Arc::new(t));
    }
    c
}

/// The first `n` ranks of `parent`, in order, as a new communicator (collective over
/// `parent`; MPI_COMM_NULL on the others).
fn first_n(parent: &Arc<Comm>, n: usize) -> MpiResult<Option<Arc<Comm>>> {
    let color = if parent.rank < n { 0 } else { MPI_UNDEFINED };
    create::split(parent, color, parent.rank as i32)
}

/// MPI_Cart_create (reorder ignored).
pub fn cart_create(
    parent: &Arc<Comm>,
    dims: &[i32],
    periods: &[bool],
) -> MpiResult<Option<Arc<Comm>>> {
    intra(parent)?;
    let n = grid_size(dims, parent.size(), MPI_ERR_ARG)?;
    let c = first_n(parent, n)?;
    Ok(attach(
        c,
        Topo::Cart {
            dims: dims.to_vec(),
            periods: periods.to_vec(),
        },
    ))
}

/// MPI_Cart_sub: one communicator per sub-grid spanned by the kept dimensions.
pub fn cart_sub(c: &Arc<Comm>, remain: &[bool]) -> MpiResult<Option<Arc<Comm>>> {
    let t = expect(c, MPI_CART)?;
    let Topo::Cart { dims, periods } = &*t else {
        unreachable!()
    };
    let me = coords_of(dims, c.rank);
    // Colour: row-major index of my coordinates along the dropped dimensions; key: my
    // rank, which orders each sub-grid row-major along the kept ones.
    let mut color: i64 = 0;
    let (mut kd, mut kp) = (Vec::new(), Vec::new());
    for i in 0..dims.len() {
        if remain[i] {
            kd.push(dims[i]);
            kp.push(periods[i]);
        } else {
            color = color * dims[i] as i64 + me[i] as i64;
        }
    }
    let sub = create::split(c, color as i32, c.rank as i32)?;
    Ok(attach(
        sub,
        Topo::Cart {
            dims: kd,
            periods: kp,
        },
    ))
}

/// MPI_Graph_create (reorder ignored).
pub fn graph_create(
    parent: &Arc<Comm>,
    index: &[i32],
    edges: &[i32],
) -> MpiResult<Option<Arc<Comm>>> {
    intra(parent)?;
    let nnodes = index.len();
    if nnodes > parent.size() {
        return Err(err(
            MPI_ERR_ARG,
            format!(
                "nnodes={nnodes} is larger than the communicator's size {}",
                parent.size()
            ),
        ));
    }
    check_index(index)?;
    check_edges(nnodes, edges)?;
    if nnodes == 0 {
        return Ok(None);
    }
    let c = first_n(parent, nnodes)?;
    Ok(attach(
        c,
        Topo::Graph {
            index: index.to_vec(),
            edges: edges.to_vec(),
        },
    ))
}

/// MPI_Dist_graph_create_adjacent (reorder ignored): the new communicator has the
/// group of `parent` in the same order.
pub fn dist_adjacent(parent: &Arc<Comm>, t: Topo) -> MpiResult<Arc<Comm>> {
    intra(parent)?;
    let c = create::split(parent, 0, parent.rank as i32)?.expect("colour 0");
    Ok(attach(Some(c), t).expect("a communicator"))
}

/// MPI_Dist_graph_create: every process names some edges; each learns the edges into
/// and out of itself. All edges are gathered by every process (one exchange of the
/// lengths, then the edges); a process's neighbours come in the order (naming process,
/// position in its arrays). This process names `degrees[i]` edges from `sources[i]`,
/// to the next entries of `dests` (with the next entries of `weights`, None for
/// MPI_UNWEIGHTED); the graph is unweighted if any process passed MPI_UNWEIGHTED.
pub fn dist_create(
    parent: &Arc<Comm>,
    sources: &[i32],
    degrees: &[i32],
    dests: &[i32],
    weights: Option<&[i32]>,
) -> MpiResult<Arc<Comm>> {
    let mut mine: Vec<Edge> = Vec::with_capacity(dests.len());
    let mut k = 0;
    for (i, &src) in sources.iter().enumerate() {
        for _ in 0..degrees[i] {
            mine.push((src, dests[k], weights.map_or(1, |w| w[k])));
            k += 1;
        }
    }
    let weighted = weights.is_some();
    intra(parent)?;
    let bytes: Vec<u8> = mine
        .iter()
        .flat_map(|&(s, d, w)| [s, d, w])
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let (all, flags) = allgather_bytes(parent, &bytes, weighted as u64)?;
    let weighted = flags.iter().all(|&f| f != 0);
    let me = parent.rank as i32;
    let (mut sources, mut sweights, mut dests, mut dweights) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for b in &all {
        for e in b.chunks_exact(12) {
            let x = |k: usize| i32::from_le_bytes(e[4 * k..4 * k + 4].try_into().unwrap());
            let (s, d, w) = (x(0), x(1), x(2));
            if d == me {
                sources.push(s);
                sweights.push(w);
            }
            if s == me {
                dests.push(d);
                dweights.push(w);
            }
        }
    }
    if !weighted {
        sweights.clear();
        dweights.clear();
    }
    dist_adjacent(
        parent,
        Topo::Dist {
            sources,
            sweights,
            dests,
            dweights,
            weighted,
        },
    )
}

/// Every member's `mine` (any length) and `flag`, in rank order. One collective on
/// `c`: a step to learn the lengths, then the bytes in slot-sized chunks.
fn allgather_bytes(c: &Arc<Comm>, mine: &[u8], flag: u64) -> MpiResult<(Vec<Vec<u8>>, Vec<u64>)> {
    use crate::coll::{self, agree, gather, Chan};
    let t = coll::ticket(c);
    crate::progress::block_on(async {
        let _turn = coll::turn(c, t).await;
        c.coll.set_desc(agree::Desc::kind(agree::KIND_COMM_CTOR));
        let ch = Chan::open(c).await?;
        ch.put_args(&[mine.len() as u64, flag]);
        if ch.n > 1 {
            ch.step().await?;
        }
        let (lens, flags): (Vec<usize>, Vec<u64>) = (0..ch.n)
            .map(|i| {
                if i == ch.me {
                    (mine.len(), flag)
                } else {
                    (ch.peer_args(i, 0) as usize, ch.peer_args(i, 1))
                }
            })
            .unzip();
        let mut out: Vec<Vec<u8>> = lens.iter().map(|&l| vec![0u8; l]).collect();
        let mut send = mine.to_vec();
        let piece = |v: &mut Vec<u8>| gather::Piece {
            // SAFETY: `send` and `out` live, unmoved, until the exchange below completes.
            buf: unsafe { crate::p2p::UserBuf::new(v.as_mut_ptr(), v.len()) },
            off: 0,
            len: v.len(),
        };
        let sp = piece(&mut send);
        let rp: Vec<gather::Piece> = out.iter_mut().map(piece).collect();
        if lens.iter().any(|&l| l > 0) {
            gather::by_sender(c, sp, &rp, false).await?;
        }
        Ok((out, flags))
    })
}
