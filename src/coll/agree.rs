//! Collective argument agreement: every member publishes what it called (collective,
//! root, op, datatype, bytes, a hash of recvcounts) next to the counter of the
//! collective's FIRST step, and after that step compares every member's descriptor with
//! member 0's. All members see the same descriptors, so they all detect a disagreement
//! at the same step and return the same error (naming both ranks and both values), and
//! the communicator stays usable. Costs four stores and 4n loads per collective, no
//! extra synchronisation. `SHMPI_CHECK_ARGS=0` turns it off.
use crate::abi::*;
use crate::error::{err, MpiError};
use std::sync::OnceLock;

/// "Not compared" marker for a field.
pub const ANY: u64 = u64::MAX;

/// What one member called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Desc {
    pub kind: u16,
    pub root: u64,
    pub op: u64,
    pub dtype: u64,
    pub bytes: u64,
    pub extra: u64,
}

/// The collectives, by kind number (0 means "no descriptor").
pub const NAMES: &[&str] = &[
    "(none)",
    "MPI_Barrier",
    "MPI_Bcast",
    "MPI_Reduce",
    "MPI_Allreduce",
    "MPI_Reduce_scatter_block",
    "MPI_Reduce_scatter",
    "MPI_Scan",
    "MPI_Exscan",
    "MPI_Gather",
    "MPI_Gatherv",
    "MPI_Scatter",
    "MPI_Scatterv",
    "MPI_Allgather",
    "MPI_Allgatherv",
    "MPI_Alltoall",
    "MPI_Alltoallv",
    "MPI_Alltoallw",
    "a communicator constructor (MPI_Comm_dup/split/create)",
    "MPI_Intercomm_merge",
];

/// The kind of the communicator constructors (one collective step of their own).
pub const KIND_COMM_CTOR: u16 = 18;

pub fn kind_of(name: &str) -> u16 {
    let base = name
        .strip_prefix("MPI_I")
        .map(|r| format!("MPI_{}", upper_first(r)));
    let n = base.as_deref().unwrap_or(name);
    NAMES.iter().position(|k| *k == n).unwrap_or(0) as u16
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("SHMPI_CHECK_ARGS").map_or(true, |v| v != "0"))
}

impl Desc {
    /// A descriptor comparing only the collective kind.
    pub fn kind(kind: u16) -> Desc {
        Desc {
            kind,
            root: ANY,
            op: ANY,
            dtype: ANY,
            bytes: ANY,
            extra: ANY,
        }
    }

    pub fn encode(&self) -> [u64; 5] {
        [
            ((self.kind as u64) << 48) | (self.root & 0xffff_ffff_ffff),
            self.op,
            self.dtype,
            self.bytes,
            self.extra,
        ]
    }

    /// The first disagreement between member `a` (described by `x`) and member `b`.
    pub fn disagreement(
        a: usize,
        x: [u64; 5],
        b: usize,
        y: [u64; 5],
        size_of: impl Fn(i32) -> usize,
    ) -> Option<MpiError> {
        let (kx, ky) = ((x[0] >> 48) as usize, (y[0] >> 48) as usize);
        let kname = |k: usize| NAMES.get(k).copied().unwrap_or("an unknown collective");
        if kx != ky {
            return Some(err(
                MPI_ERR_NOT_SAME,
                format!("rank {a} called {} but rank {b} called {} on the same communicator at the same point", kname(kx), kname(ky)),
            ));
        }
        let root = |w: u64| {
            let r = w & 0xffff_ffff_ffff;
            if r == 0xffff_ffff_ffff {
                None
            } else {
                Some(r as u32 as i32)
            }
        };
        if let (Some(r1), Some(r2)) = (root(x[0]), root(y[0])) {
            if r1 != r2 {
                return Some(err(
                    MPI_ERR_ROOT,
                    format!("rank {a} passed root={r1} but rank {b} passed root={r2}"),
                ));
            }
        }
        if x[1] != ANY && y[1] != ANY && x[1] != y[1] {
            return Some(err(
                MPI_ERR_OP,
                format!(
                    "rank {a} passed op={} but rank {b} passed op={}",
                    op_name(x[1]),
                    op_name(y[1])
                ),
            ));
        }
        if x[4] != y[4] {
            return Some(err(MPI_ERR_NOT_SAME, format!("rank {a} and rank {b} passed different recvcounts (they must be identical on every rank)")));
        }
        let tname = |d: u64| crate::datatype::predefined::name_of(d as u32 as i32);
        if x[3] != y[3] || (x[2] != ANY && y[2] != ANY && x[2] != y[2]) {
            let count = |w: [u64; 5]| {
                let s = if w[2] == ANY {
                    0
                } else {
                    size_of(w[2] as u32 as i32)
                };
                if s == 0 {
                    "?".to_string()
                } else {
                    (w[3] / s as u64).to_string()
                }
            };
            let what = |w: [u64; 5]| {
                if w[2] == ANY {
                    format!("{} bytes", w[3])
                } else {
                    format!("count={} {}", count(w), tname(w[2]))
                }
            };
            let class = if x[2] != y[2] {
                MPI_ERR_TYPE
            } else {
                MPI_ERR_COUNT
            };
            return Some(err(class, format!("rank {a} passed {} but rank {b} passed {} (collective arguments must agree on every rank)", what(x), what(y))));
        }
        None
    }
}

fn op_name(w: u64) -> String {
    let h = w as u32 as i32;
    match crate::op::BuiltinOp::from_handle(h) {
        Some(b) => b.name().to_string(),
        None => format!("{h:#x} (a user-defined op)"),
    }
}
