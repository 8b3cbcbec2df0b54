//! Process topology entry points (MPI-3.1 chapter 7). The engine is comm/topo.rs.
use super::convert::{is_unweighted, is_weights_empty};
use crate::abi::*;
use crate::comm::topo::{self, Topo};
use crate::error::{err, MpiResult};
use crate::ffi::check;
use crate::mpi_entry;
use std::os::raw::c_int;
use std::sync::Arc;

/// Writes the new communicator's handle (MPI_COMM_NULL where this process is not in
/// it); on an error, MPI_COMM_NULL (as MPICH does, so that a program under
/// MPI_ERRORS_RETURN holds no stale handle) and the error.
fn put_comm(out: *mut i32, c: MpiResult<Option<Arc<crate::comm::Comm>>>) -> MpiResult<()> {
    match c {
        // SAFETY: `out`: passed on from the entry point, valid as the MPI caller must pass it.
        Ok(c) => unsafe { check::out(out, c.map_or(MPI_COMM_NULL, |c| c.handle), "newcomm") },
        Err(e) => {
            // SAFETY: `out`: passed on from the entry point, valid as the MPI caller must pass it.
            let _ = unsafe { check::out(out, MPI_COMM_NULL, "newcomm") };
            Err(e)
        }
    }
}

fn bools(p: *const c_int, n: usize, arg: &str) -> MpiResult<Vec<bool>> {
    // SAFETY: `p`: passed on from the entry point, valid as the MPI caller must pass it.
    Ok(unsafe { check::array(p, n, arg) }?
        .iter()
        .map(|&x| x != 0)
        .collect())
}

/// Copies the first `min(max, v.len())` values of `v` to `dst`.
fn copy_out(dst: *mut c_int, max: usize, v: &[c_int], arg: &str) -> MpiResult<()> {
    let n = max.min(v.len());
    // SAFETY: `dst`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::array_mut(dst, n, arg) }?.copy_from_slice(&v[..n]);
    Ok(())
}

fn cart(c: &crate::comm::Comm) -> MpiResult<(Vec<c_int>, Vec<bool>)> {
    match &*topo::expect(c, MPI_CART)? {
        Topo::Cart { dims, periods } => Ok((dims.clone(), periods.clone())),
        _ => unreachable!("expect checked the kind"),
    }
}

// ---------------------------------------------------------------- Cartesian

mpi_entry!(MPI_Cart_create, PMPI_Cart_create, (comm_old: i32, ndims: c_int, dims: *const c_int, periods: *const c_int, reorder: c_int, comm_cart: *mut i32), errcomm = comm_old, {
    let _ = reorder;
    let c = check::comm(comm_old)?;
    let n = topo::non_negative(ndims, "ndims")?;
    let d = check::array(dims, n, "dims")?;
    let p = bools(periods, n, "periods")?;
    check::not_null(comm_cart, "comm_cart")?;
    put_comm(comm_cart, crate::create::topo::cart_create(&c, d, &p))
});

mpi_entry!(MPI_Dims_create, PMPI_Dims_create, (nnodes: c_int, ndims: c_int, dims: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let n = topo::non_negative(ndims, "ndims")?;
    let d = check::array_mut(dims, n, "dims")?;
    let mut v = d.to_vec();
    topo::dims_create(nnodes, &mut v)?;
    d.copy_from_slice(&v);
    Ok(())
});

mpi_entry!(MPI_Cartdim_get, PMPI_Cartdim_get, (comm: i32, ndims: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let (d, _) = cart(&c)?;
    check::out(ndims, d.len() as c_int, "ndims")
});

mpi_entry!(MPI_Cart_get, PMPI_Cart_get, (comm: i32, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let (d, p) = cart(&c)?;
    let m = topo::non_negative(maxdims, "maxdims")?;
    let p: Vec<c_int> = p.iter().map(|&x| x as c_int).collect();
    copy_out(dims, m, &d, "dims")?;
    copy_out(periods, m, &p, "periods")?;
    copy_out(coords, m, &topo::coords_of(&d, c.rank), "coords")
});

mpi_entry!(MPI_Cart_rank, PMPI_Cart_rank, (comm: i32, coords: *const c_int, rank: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let (d, p) = cart(&c)?;
    let co = check::array(coords, d.len(), "coords")?;
    check::out(rank, topo::rank_of(&d, &p, co)? as c_int, "rank")
});

mpi_entry!(MPI_Cart_coords, PMPI_Cart_coords, (comm: i32, rank: c_int, maxdims: c_int, coords: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let (d, _) = cart(&c)?;
    check::rank(rank, c.size(), "rank", &[])?;
    let m = topo::non_negative(maxdims, "maxdims")?;
    if m < d.len() {
        return Err(err(MPI_ERR_ARG, format!("maxdims={m} is smaller than the topology's {} dimensions", d.len())));
    }
    copy_out(coords, m, &topo::coords_of(&d, rank as usize), "coords")
});

mpi_entry!(MPI_Cart_shift, PMPI_Cart_shift, (comm: i32, direction: c_int, disp: c_int, rank_source: *mut c_int, rank_dest: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let (s, d) = topo::shift(&c, direction, disp)?;
    check::out(rank_source, s, "rank_source")?;
    check::out(rank_dest, d, "rank_dest")
});

mpi_entry!(MPI_Cart_sub, PMPI_Cart_sub, (comm: i32, remain_dims: *const c_int, newcomm: *mut i32), errcomm = comm, {
    let c = check::comm(comm)?;
    let (d, _) = cart(&c)?;
    let keep = bools(remain_dims, d.len(), "remain_dims")?;
    check::not_null(newcomm, "newcomm")?;
    put_comm(newcomm, crate::create::topo::cart_sub(&c, &keep))
});

mpi_entry!(MPI_Cart_map, PMPI_Cart_map, (comm: i32, ndims: c_int, dims: *const c_int, periods: *const c_int, newrank: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let n = topo::non_negative(ndims, "ndims")?;
    let d = check::array(dims, n, "dims")?;
    bools(periods, n, "periods")?;
    let grid = topo::grid_size(d, c.size(), MPI_ERR_DIMS)?;
    check::out(newrank, topo::map_identity(&c, grid)?, "newrank")
});

// ---------------------------------------------------------------- graphs

/// The (index, edges) arguments of MPI_Graph_create / MPI_Graph_map.
fn graph_args<'a>(
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
) -> MpiResult<(&'a [c_int], &'a [c_int])> {
    if nnodes < 0 {
        return Err(err(MPI_ERR_ARG, format!("nnodes={nnodes} is negative")));
    }
    // SAFETY: `index`: passed on from the entry point, valid as the MPI caller must pass it.
    let idx = unsafe { check::array(index, nnodes as usize, "index") }?;
    let ne = topo::check_index(idx)?;
    // SAFETY: `edges`: passed on from the entry point, valid as the MPI caller must pass it.
    let e = unsafe { check::array(edges, ne, "edges") }?;
    topo::check_edges(idx.len(), e)?;
    Ok((idx, e))
}

mpi_entry!(MPI_Graph_create, PMPI_Graph_create, (comm_old: i32, nnodes: c_int, index: *const c_int, edges: *const c_int, reorder: c_int, comm_graph: *mut i32), errcomm = comm_old, {
    let _ = reorder;
    let c = check::comm(comm_old)?;
    let (idx, e) = graph_args(nnodes, index, edges)?;
    check::not_null(comm_graph, "comm_graph")?;
    put_comm(comm_graph, crate::create::topo::graph_create(&c, idx, e))
});

mpi_entry!(MPI_Graph_map, PMPI_Graph_map, (comm: i32, nnodes: c_int, index: *const c_int, edges: *const c_int, newrank: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let (idx, _) = graph_args(nnodes, index, edges)?;
    if idx.len() > c.size() {
        return Err(err(MPI_ERR_ARG, format!("nnodes={} is larger than the communicator's size {}", idx.len(), c.size())));
    }
    check::out(newrank, topo::map_identity(&c, idx.len())?, "newrank")
});

fn graph(c: &crate::comm::Comm) -> MpiResult<(Vec<c_int>, Vec<c_int>)> {
    match &*topo::expect(c, MPI_GRAPH)? {
        Topo::Graph { index, edges } => Ok((index.clone(), edges.clone())),
        _ => unreachable!("expect checked the kind"),
    }
}

mpi_entry!(MPI_Graphdims_get, PMPI_Graphdims_get, (comm: i32, nnodes: *mut c_int, nedges: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let (idx, e) = graph(&c)?;
    check::out(nnodes, idx.len() as c_int, "nnodes")?;
    check::out(nedges, e.len() as c_int, "nedges")
});

mpi_entry!(MPI_Graph_get, PMPI_Graph_get, (comm: i32, maxindex: c_int, maxedges: c_int, index: *mut c_int, edges: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let (idx, e) = graph(&c)?;
    copy_out(index, topo::non_negative(maxindex, "maxindex")?, &idx, "index")?;
    copy_out(edges, topo::non_negative(maxedges, "maxedges")?, &e, "edges")
});

mpi_entry!(MPI_Graph_neighbors_count, PMPI_Graph_neighbors_count, (comm: i32, rank: c_int, nneighbors: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let nb = topo::graph_neighbors(&c, rank)?;
    check::out(nneighbors, nb.len() as c_int, "nneighbors")
});

mpi_entry!(MPI_Graph_neighbors, PMPI_Graph_neighbors, (comm: i32, rank: c_int, maxneighbors: c_int, neighbors: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let nb = topo::graph_neighbors(&c, rank)?;
    copy_out(neighbors, topo::non_negative(maxneighbors, "maxneighbors")?, &nb, "neighbors")
});

mpi_entry!(MPI_Topo_test, PMPI_Topo_test, (comm: i32, status: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    check::out(status, topo::test(&c), "status")
});

// ---------------------------------------------------------------- distributed graphs

/// A weights argument of `n` entries: None for MPI_UNWEIGHTED.
fn weights(p: *const c_int, n: usize, arg: &str) -> MpiResult<Option<Vec<c_int>>> {
    if is_unweighted(p) {
        return Ok(None);
    }
    if is_weights_empty(p) {
        if n > 0 {
            return Err(err(
                MPI_ERR_ARG,
                format!("{arg} is MPI_WEIGHTS_EMPTY but {n} edges need weights"),
            ));
        }
        return Ok(Some(Vec::new()));
    }
    // SAFETY: `p`: passed on from the entry point, valid as the MPI caller must pass it.
    let w = unsafe { check::array(p, n, arg) }?;
    topo::check_weights(w, arg)?;
    Ok(Some(w.to_vec()))
}

mpi_entry!(MPI_Dist_graph_create_adjacent, PMPI_Dist_graph_create_adjacent, (comm_old: i32, indegree: c_int, sources: *const c_int, sourceweights: *const c_int, outdegree: c_int, destinations: *const c_int, destweights: *const c_int, info: i32, reorder: c_int, comm_dist_graph: *mut i32), errcomm = comm_old, {
    let _ = reorder;
    let c = check::comm(comm_old)?;
    let nin = topo::non_negative(indegree, "indegree")?;
    let nout = topo::non_negative(outdegree, "outdegree")?;
    let s = check::array(sources, nin, "sources")?;
    let d = check::array(destinations, nout, "destinations")?;
    topo::check_ranks(s, c.size(), "sources")?;
    topo::check_ranks(d, c.size(), "destinations")?;
    let sw = weights(sourceweights, nin, "sourceweights")?;
    let dw = weights(destweights, nout, "destweights")?;
    super::info::check_arg(info, "info")?;
    check::not_null(comm_dist_graph, "comm_dist_graph")?;
    put_comm(comm_dist_graph, crate::create::topo::dist_adjacent(&c, Topo::dist(s, sw, d, dw)).map(Some))
});

mpi_entry!(MPI_Dist_graph_create, PMPI_Dist_graph_create, (comm_old: i32, n: c_int, sources: *const c_int, degrees: *const c_int, destinations: *const c_int, weights_: *const c_int, info: i32, reorder: c_int, comm_dist_graph: *mut i32), errcomm = comm_old, {
    let _ = reorder;
    let c = check::comm(comm_old)?;
    let n = topo::non_negative(n, "n")?;
    let s = check::array(sources, n, "sources")?;
    topo::check_ranks(s, c.size(), "sources")?;
    let deg = check::array(degrees, n, "degrees")?;
    let mut total: usize = 0;
    for (i, &x) in deg.iter().enumerate() {
        total += topo::non_negative(x, &format!("degrees[{i}]"))?;
    }
    let d = check::array(destinations, total, "destinations")?;
    topo::check_ranks(d, c.size(), "destinations")?;
    let w = weights(weights_, total, "weights")?;
    super::info::check_arg(info, "info")?;
    check::not_null(comm_dist_graph, "comm_dist_graph")?;
    put_comm(comm_dist_graph, crate::create::topo::dist_create(&c, s, deg, d, w.as_deref()).map(Some))
});

mpi_entry!(MPI_Dist_graph_neighbors_count, PMPI_Dist_graph_neighbors_count, (comm: i32, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let t = topo::expect(&c, MPI_DIST_GRAPH)?;
    let Topo::Dist { sources, dests, weighted: w, .. } = &*t else { unreachable!("expect checked the kind") };
    check::out(indegree, sources.len() as c_int, "indegree")?;
    check::out(outdegree, dests.len() as c_int, "outdegree")?;
    check::out(weighted, *w as c_int, "weighted")
});

mpi_entry!(MPI_Dist_graph_neighbors, PMPI_Dist_graph_neighbors, (comm: i32, maxindegree: c_int, sources: *mut c_int, sourceweights: *mut c_int, maxoutdegree: c_int, destinations: *mut c_int, destweights: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let t = topo::expect(&c, MPI_DIST_GRAPH)?;
    let Topo::Dist { sources: s, sweights, dests, dweights, weighted } = &*t else { unreachable!("expect checked the kind") };
    let mi = topo::non_negative(maxindegree, "maxindegree")?;
    let mo = topo::non_negative(maxoutdegree, "maxoutdegree")?;
    copy_out(sources, mi, s, "sources")?;
    copy_out(destinations, mo, dests, "destinations")?;
    // Weights only for a weighted graph, and never through MPI_UNWEIGHTED.
    if *weighted {
        if !is_unweighted(sourceweights) {
            copy_out(sourceweights, mi, sweights, "sourceweights")?;
        }
        if !is_unweighted(destweights) {
            copy_out(destweights, mo, dweights, "destweights")?;
        }
    }
    Ok(())
});

/// For the Fortran bindings: the number of dimensions of `comm`'s Cartesian topology,
/// or -1 (invalid communicator, or no Cartesian topology). Raises no error. Not part of
/// the MPI API.
#[no_mangle]
pub extern "C" fn shmpi_cart_ndims(comm: c_int) -> c_int {
    check::comm(comm)
        .and_then(|c| cart(&c))
        .map_or(-1, |(d, _)| d.len() as c_int)
}
