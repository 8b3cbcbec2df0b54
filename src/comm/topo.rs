//! Process topologies (MPI-3.1 chapter 7): Cartesian grids, general graphs and
//! distributed graphs, attached to intracommunicators.
//!
//! A topology is immutable once built and lives with its communicator (`Comm::topo`):
//! MPI_Comm_dup copies it, every other constructor starts without one, and it goes away
//! with the communicator. Reordering is never done (the identity mapping is always
//! legal): the first N ranks of the old communicator form the new one, in order.
//! Cartesian ranks are row-major: the last dimension varies fastest.
#![deny(unsafe_code)]
use super::Comm;
use crate::abi::*;
use crate::error::{err, MpiResult};
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Topo {
    Cart {
        dims: Vec<i32>,
        periods: Vec<bool>,
    },
    Graph {
        index: Vec<i32>,
        edges: Vec<i32>,
    },
    Dist {
        sources: Vec<i32>,
        sweights: Vec<i32>,
        dests: Vec<i32>,
        dweights: Vec<i32>,
        weighted: bool,
    },
}

impl Topo {
    /// A distributed graph's topology: weighted when both weight lists are given.
    pub fn dist(
        sources: &[i32],
        sw: Option<Vec<i32>>,
        dests: &[i32],
        dw: Option<Vec<i32>>,
    ) -> Topo {
        let (sources, dests) = (sources.to_vec(), dests.to_vec());
        match (sw, dw) {
            (Some(sweights), Some(dweights)) => Topo::Dist {
                sources,
                sweights,
                dests,
                dweights,
                weighted: true,
            },
            _ => Topo::Dist {
                sources,
                sweights: Vec::new(),
                dests,
                dweights: Vec::new(),
                weighted: false,
            },
        }
    }

    /// MPI_CART, MPI_GRAPH or MPI_DIST_GRAPH.
    pub fn kind(&self) -> i32 {
        match self {
            Topo::Cart { .. } => MPI_CART,
            Topo::Graph { .. } => MPI_GRAPH,
            Topo::Dist { .. } => MPI_DIST_GRAPH,
        }
    }
}

fn kind_name(k: i32) -> &'static str {
    match k {
        MPI_CART => "a Cartesian topology",
        MPI_GRAPH => "a graph topology",
        MPI_DIST_GRAPH => "a distributed graph topology",
        _ => "no topology",
    }
}

/// The topology of `c`, which must be of kind `want`; MPI_ERR_TOPOLOGY otherwise.
pub fn expect(c: &Comm, want: i32) -> MpiResult<Arc<Topo>> {
    let t = c.topo.read().unwrap().clone();
    match t {
        Some(t) if t.kind() == want => Ok(t),
        other => Err(err(
            MPI_ERR_TOPOLOGY,
            format!(
                "comm has {} ({} needed)",
                other.map_or("no topology", |t| kind_name(t.kind())),
                kind_name(want)
            ),
        )),
    }
}

/// MPI_Topo_test's answer.
pub fn test(c: &Comm) -> i32 {
    if c.is_inter() {
        return MPI_UNDEFINED;
    }
    c.topo
        .read()
        .unwrap()
        .as_ref()
        .map_or(MPI_UNDEFINED, |t| t.kind())
}

pub fn intra(c: &Comm) -> MpiResult<()> {
    if c.is_inter() {
        Err(err(
            MPI_ERR_COMM,
            "comm is an intercommunicator (process topologies need an intracommunicator)",
        ))
    } else {
        Ok(())
    }
}

// ---------------------------------------------------------------- Cartesian

/// Number of processes of a grid; MPI_ERR_DIMS for a non-positive extent, `too_big`'s
/// class when the grid has more than `size` processes.
pub fn grid_size(dims: &[i32], size: usize, too_big: i32) -> MpiResult<usize> {
    let mut n: u64 = 1;
    for (i, &d) in dims.iter().enumerate() {
        if d <= 0 {
            return Err(err(MPI_ERR_DIMS, format!("dims[{i}]={d} is not positive")));
        }
        n = n.saturating_mul(d as u64);
    }
    if n > size as u64 {
        let shown: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
        return Err(err(
            too_big,
            format!(
                "the grid {} has {n} processes, more than the communicator's {size}",
                if shown.is_empty() {
                    "()".to_string()
                } else {
                    shown.join("x")
                }
            ),
        ));
    }
    Ok(n as usize)
}

/// MPI_Cart_map / MPI_Graph_map with the identity mapping: rank, or MPI_UNDEFINED
/// beyond the first `n`.
pub fn map_identity(c: &Comm, n: usize) -> MpiResult<i32> {
    intra(c)?;
    Ok(if c.rank < n {
        c.rank as i32
    } else {
        MPI_UNDEFINED
    })
}

/// Row-major coordinates of `rank` in a grid.
pub fn coords_of(dims: &[i32], rank: usize) -> Vec<i32> {
    let mut v = vec![0; dims.len()];
    let mut r = rank;
    for i in (0..dims.len()).rev() {
        let d = dims[i] as usize;
        v[i] = (r % d) as i32;
        r /= d;
    }
    v
}

/// MPI_Cart_rank: periodic dimensions wrap, others must be in range.
pub fn rank_of(dims: &[i32], periods: &[bool], coords: &[i32]) -> MpiResult<usize> {
    let mut r: usize = 0;
    for i in 0..dims.len() {
        let d = dims[i] as i64;
        let mut x = coords[i] as i64;
        if periods[i] {
            x = x.rem_euclid(d);
        } else if x < 0 || x >= d {
            return Err(err(
                MPI_ERR_ARG,
                format!(
                    "coords[{i}]={} is outside 0..{} and dimension {i} is not periodic",
                    coords[i],
                    d - 1
                ),
            ));
        }
        r = r * d as usize + x as usize;
    }
    Ok(r)
}

/// MPI_Cart_shift: (source, dest).
pub fn shift(c: &Comm, direction: i32, disp: i32) -> MpiResult<(i32, i32)> {
    let t = expect(c, MPI_CART)?;
    let Topo::Cart { dims, periods } = &*t else {
        unreachable!()
    };
    if dims.is_empty() {
        return Err(err(
            MPI_ERR_TOPOLOGY,
            "comm has a zero-dimensional Cartesian topology: there is no direction to shift along",
        ));
    }
    if direction < 0 || direction as usize >= dims.len() {
        return Err(err(
            MPI_ERR_ARG,
            format!(
                "direction={direction} is outside 0..{} (the topology has {} dimensions)",
                dims.len() - 1,
                dims.len()
            ),
        ));
    }
    let k = direction as usize;
    let me = coords_of(dims, c.rank);
    let d = dims[k] as i64;
    let at = |delta: i64| -> i32 {
        let mut x = me[k] as i64 + delta;
        if periods[k] {
            x = x.rem_euclid(d);
        } else if x < 0 || x >= d {
            return MPI_PROC_NULL;
        }
        let mut cc = me.clone();
        cc[k] = x as i32;
        rank_of(dims, periods, &cc).map_or(MPI_PROC_NULL, |r| r as i32)
    };
    Ok((at(-(disp as i64)), at(disp as i64)))
}

/// MPI_Dims_create. `dims` holds the caller's constraints (0: free) and gets the result.
///
/// The free dimensions get the factorisation of `nnodes / product(fixed)` chosen as
/// follows (the choice MPICH makes, measured on every nnodes up to 1100 with 1 to 6
/// dimensions and on large composites): the largest factor is tried from the largest
/// candidate down; for each, the remaining dimensions get the best factorisation of the
/// quotient with factors no larger (recursively); a candidate wins when its spread
/// (largest minus smallest factor) is strictly smaller than the best so far. Factors
/// come out in non-increasing order and fill the free entries left to right.
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> MpiResult<()> {
    if nnodes < 0 {
        return Err(err(MPI_ERR_ARG, format!("nnodes={nnodes} is negative")));
    }
    let mut fixed: u64 = 1;
    for (i, &d) in dims.iter().enumerate() {
        if d < 0 {
            return Err(err(
                MPI_ERR_DIMS,
                format!("dims[{i}]={d} is negative (0 means: choose this extent)"),
            ));
        }
        if d > 0 {
            fixed = fixed.saturating_mul(d as u64);
        }
    }
    let free: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == 0).collect();
    let n = nnodes as u64;
    if dims.is_empty() {
        return if nnodes == 1 {
            Ok(())
        } else {
            Err(err(
                MPI_ERR_ARG,
                format!("ndims=0 describes one process, but nnodes={nnodes}"),
            ))
        };
    }
    if free.is_empty() {
        return if fixed == n {
            Ok(())
        } else {
            Err(err(
                MPI_ERR_DIMS,
                format!(
                    "every dims[] entry is fixed and their product {fixed} is not nnodes={nnodes}"
                ),
            ))
        };
    }
    if n == 0 {
        for &i in &free {
            dims[i] = 0;
        }
        return Ok(());
    }
    if !n.is_multiple_of(fixed) {
        return Err(err(
            MPI_ERR_DIMS,
            format!("nnodes={nnodes} is not a multiple of {fixed}, the product of the fixed dims[] entries"),
        ));
    }
    let f = balanced(n / fixed, free.len());
    for (k, &i) in free.iter().enumerate() {
        dims[i] = f[k] as i32;
    }
    Ok(())
}

/// The factorisation of `n` into `k` factors that [`dims_create`] describes.
pub fn balanced(n: u64, k: usize) -> Vec<u64> {
    let mut s = Search {
        memo: HashMap::default(),
        divs: HashMap::default(),
    };
    let mut out = Vec::with_capacity(k);
    let (mut m, mut cap) = (n, n);
    for left in (1..=k).rev() {
        let (f, _) = s.best(m, left, cap).expect("n itself is a factorisation");
        out.push(f);
        m /= f;
        cap = f;
    }
    out
}

/// A multiplicative hash for the search's small integer keys.
#[derive(Default)]
struct MulHasher(u64);

impl std::hash::Hasher for MulHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

type HashMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<MulHasher>>;

struct Search {
    /// (n, k, cap) -> the winning largest factor and the smallest factor of the winner.
    memo: HashMap<(u64, usize, u64), Option<(u64, u64)>>,
    divs: HashMap<u64, std::rc::Rc<Vec<u64>>>,
}

impl Search {
    /// The best factorisation of `n` into `k` factors none above `cap`, as its largest
    /// and smallest factor (the rest follows from `best(n / largest, k - 1, largest)`).
    fn best(&mut self, n: u64, k: usize, cap: u64) -> Option<(u64, u64)> {
        if k == 1 {
            return (n <= cap).then_some((n, n));
        }
        if let Some(v) = self.memo.get(&(n, k, cap)) {
            return *v;
        }
        let ds = self
            .divs
            .entry(n)
            .or_insert_with(|| std::rc::Rc::new(divisors_desc(n)))
            .clone();
        let mut found = None;
        let mut spread = u64::MAX;
        let start = ds.partition_point(|&f| f > cap);
        for &f in &ds[start..] {
            // f is the largest factor: below the k-th root of n the rest cannot fit.
            if (f as u128).saturating_pow(k as u32) < n as u128 {
                break;
            }
            // The other factors' smallest is at most the (k-1)-th root of n / f: skip a
            // candidate whose spread cannot beat the best so far (smallest <= f - spread).
            if spread <= f
                && ((f - spread + 1) as u128).saturating_pow(k as u32 - 1) > (n / f) as u128
            {
                continue;
            }
            if let Some((_, min)) = self.best(n / f, k - 1, f) {
                if f - min < spread {
                    spread = f - min;
                    found = Some((f, min));
                }
            }
        }
        self.memo.insert((n, k, cap), found);
        found
    }
}

/// The divisors of `n`, largest first.
fn divisors_desc(n: u64) -> Vec<u64> {
    let mut primes = Vec::new();
    let mut m = n;
    let mut p = 2;
    while p * p <= m {
        if m.is_multiple_of(p) {
            let mut e = 0;
            while m.is_multiple_of(p) {
                m /= p;
                e += 1;
            }
            primes.push((p, e));
        }
        p += if p == 2 { 1 } else { 2 };
    }
    if m > 1 {
        primes.push((m, 1));
    }
    let mut ds = vec![1u64];
    for (p, e) in primes {
        let len = ds.len();
        let mut pk = 1;
        for _ in 0..e {
            pk *= p;
            for i in 0..len {
                ds.push(ds[i] * pk);
            }
        }
    }
    ds.sort_unstable_by(|a, b| b.cmp(a));
    ds
}

// ---------------------------------------------------------------- graphs

/// Checks the `index` of a graph description (MPI_Graph_create, MPI_Graph_map):
/// non-decreasing from 0. Returns the number of edges.
pub fn check_index(index: &[i32]) -> MpiResult<usize> {
    let mut prev = 0;
    for (i, &x) in index.iter().enumerate() {
        if x < prev {
            return Err(err(
                MPI_ERR_ARG,
                if i == 0 {
                    format!("index[0]={x} is negative")
                } else {
                    format!(
                        "index[{i}]={x} is smaller than index[{}]={prev} (index holds cumulative degrees)",
                        i - 1
                    )
                },
            ));
        }
        prev = x;
    }
    Ok(prev as usize)
}

/// The first entry of `v` outside 0..n, with its index.
fn outside(v: &[i32], n: usize) -> Option<(usize, i32)> {
    v.iter()
        .copied()
        .enumerate()
        .find(|&(_, x)| x < 0 || x as usize >= n)
}

/// Checks the `edges` of a graph description: every edge a node number.
pub fn check_edges(nnodes: usize, edges: &[i32]) -> MpiResult<()> {
    match outside(edges, nnodes) {
        Some((k, e)) => Err(err(
            MPI_ERR_ARG,
            format!("edges[{k}]={e} is not a node of the graph (nnodes={nnodes})"),
        )),
        None => Ok(()),
    }
}

/// Checks the ranks of a distributed graph's edges (`arg` names the array): every one
/// a rank of comm_old (`size` ranks).
pub fn check_ranks(v: &[i32], size: usize, arg: &str) -> MpiResult<()> {
    match outside(v, size) {
        Some((i, r)) => Err(err(
            MPI_ERR_RANK,
            format!("{arg}[{i}]={r} is not a rank of comm_old (size {size})"),
        )),
        None => Ok(()),
    }
}

/// An argument that counts dimensions, nodes, neighbours or array entries: MPI_ERR_ARG
/// when negative (as MPICH).
pub fn non_negative(n: i32, arg: &str) -> MpiResult<usize> {
    if n < 0 {
        Err(err(MPI_ERR_ARG, format!("{arg}={n} is negative")))
    } else {
        Ok(n as usize)
    }
}

/// Checks edge weights (`arg` names the array): none negative.
pub fn check_weights(w: &[i32], arg: &str) -> MpiResult<()> {
    match w.iter().enumerate().find(|(_, &x)| x < 0) {
        Some((i, x)) => Err(err(
            MPI_ERR_ARG,
            format!("{arg}[{i}]={x} is negative (edge weights are non-negative)"),
        )),
        None => Ok(()),
    }
}

/// The neighbours of `rank` in a graph topology.
pub fn graph_neighbors(c: &Comm, rank: i32) -> MpiResult<Vec<i32>> {
    let t = expect(c, MPI_GRAPH)?;
    let Topo::Graph { index, edges } = &*t else {
        unreachable!()
    };
    if rank < 0 || rank as usize >= index.len() {
        return Err(err(
            MPI_ERR_RANK,
            format!(
                "rank={rank} is not a node of the graph (nnodes={})",
                index.len()
            ),
        ));
    }
    let r = rank as usize;
    let lo = if r == 0 { 0 } else { index[r - 1] as usize };
    Ok(edges[lo..index[r] as usize].to_vec())
}

// ---------------------------------------------------------------- distributed graphs

/// One edge of MPI_Dist_graph_create as exchanged: (source, destination, weight).
pub type Edge = (i32, i32, i32);

#[cfg(test)]
mod tests {
    use super::*;

    /// Values MPICH 4.0's MPI_Dims_create gives (measured).
    #[test]
    fn dims_create_matches_measured_choices() {
        let cases: &[(u64, &[u64])] = &[
            (20, &[5, 2, 2, 1]),
            (360, &[10, 6, 6]),
            (720, &[10, 9, 8]),
            (512, &[32, 16]),
            (1100, &[11, 5, 5, 2, 2, 1]),
            (5040, &[10, 9, 8, 7]),
            (100000, &[25, 20, 20, 10]),
            (196608, &[8, 6, 4, 4, 4, 4, 4, 4]),
            (2147483646, &[331, 217, 198, 151]),
            (999999937, &[999999937, 1, 1]),
            (1 << 30, &[32, 32, 32, 32, 32, 32]),
            (735134400, &[17, 13, 11, 7, 5, 5, 4, 4, 4, 3, 3, 3]),
        ];
        for (n, want) in cases {
            assert_eq!(balanced(*n, want.len()), want.to_vec(), "n={n}");
        }
    }

    #[test]
    fn dims_create_fixed_entries_and_errors() {
        let mut d = [0, 3, 0, 0];
        dims_create(72, &mut d).unwrap();
        assert_eq!(d, [4, 3, 3, 2]);
        let mut d = [0, 7];
        assert_eq!(dims_create(12, &mut d).unwrap_err().class, MPI_ERR_DIMS);
        let mut d = [-1, 0];
        assert_eq!(dims_create(12, &mut d).unwrap_err().class, MPI_ERR_DIMS);
        assert_eq!(dims_create(-1, &mut [0]).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(dims_create(4, &mut []).unwrap_err().class, MPI_ERR_ARG);
        dims_create(1, &mut []).unwrap();
    }

    #[test]
    fn coordinates_are_row_major_and_shift_wraps() {
        let dims = [2, 3, 4];
        for r in 0..24 {
            let c = coords_of(&dims, r);
            assert_eq!(c, vec![(r / 12) as i32, (r / 4 % 3) as i32, (r % 4) as i32]);
            assert_eq!(rank_of(&dims, &[false; 3], &c).unwrap(), r);
        }
        assert_eq!(rank_of(&[4], &[true], &[-1]).unwrap(), 3);
        assert_eq!(rank_of(&[4], &[true], &[13]).unwrap(), 1);
        assert_eq!(
            rank_of(&[4], &[false], &[4]).unwrap_err().class,
            MPI_ERR_ARG
        );
    }
}
