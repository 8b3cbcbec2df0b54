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

/// Packs the five logical words into three for the counter's cache line:
/// [kind<<48|root, op(32)<<32|dtype(32), extra(20)<<44|bytes(44)]; an all-ones field
/// means "not compared".
pub fn pack(w: [u64; 5]) -> [u64; 3] {
    let h32 = |v: u64| {
        if v == ANY {
            0xffff_ffff
        } else {
            v & 0xffff_ffff
        }
    };
    let bytes = if w[3] == ANY {
        (1u64 << 44) - 1
    } else {
        w[3] & ((1u64 << 44) - 1)
    };
    let extra = if w[4] == ANY {
        0xf_ffff
    } else {
        (w[4] ^ (w[4] >> 20) ^ (w[4] >> 40)) & 0xf_fffe
    };
    [w[0], (h32(w[1]) << 32) | h32(w[2]), (extra << 44) | bytes]
}

/// The inverse of [`pack`] (up to the hash of `extra`).
pub fn unpack(p: [u64; 3]) -> [u64; 5] {
    let f32 = |v: u64| if v == 0xffff_ffff { ANY } else { v };
    let bytes = p[2] & ((1u64 << 44) - 1);
    let extra = p[2] >> 44;
    [
        p[0],
        f32(p[1] >> 32),
        f32(p[1] & 0xffff_ffff),
        if bytes == (1u64 << 44) - 1 {
            ANY
        } else {
            bytes
        },
        if extra == 0xf_ffff { ANY } else { extra },
    ]
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

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(root: u64, op: u64, dtype: u64, bytes: u64, extra: u64) -> Desc {
        Desc {
            kind: 4,
            root,
            op,
            dtype,
            bytes,
            extra,
        }
    }

    #[test]
    fn packing_keeps_what_is_compared() {
        let d = desc(3, MPI_SUM as u32 as u64, MPI_DOUBLE as u32 as u64, 80, ANY);
        assert_eq!(unpack(pack(d.encode())), d.encode());
        let any = Desc::kind(7);
        assert_eq!(unpack(pack(any.encode())), any.encode());
    }

    #[test]
    fn disagreements_name_both_ranks_and_values() {
        let size = |_| 8usize;
        let a = desc(
            ANY,
            MPI_SUM as u32 as u64,
            MPI_DOUBLE as u32 as u64,
            80,
            ANY,
        )
        .encode();
        let b = desc(
            ANY,
            MPI_SUM as u32 as u64,
            MPI_DOUBLE as u32 as u64,
            96,
            ANY,
        )
        .encode();
        let e = Desc::disagreement(0, unpack(pack(a)), 3, unpack(pack(b)), size).unwrap();
        assert_eq!(e.class, MPI_ERR_COUNT);
        assert!(
            e.msg.contains(
                "rank 0 passed count=10 MPI_DOUBLE but rank 3 passed count=12 MPI_DOUBLE"
            ),
            "{}",
            e.msg
        );
        let c = desc(
            ANY,
            MPI_MAX as u32 as u64,
            MPI_DOUBLE as u32 as u64,
            80,
            ANY,
        )
        .encode();
        assert_eq!(
            Desc::disagreement(0, a, 1, c, size).unwrap().class,
            MPI_ERR_OP
        );
        let r1 = desc(0, ANY, ANY, 8, ANY).encode();
        let r2 = desc(1, ANY, ANY, 8, ANY).encode();
        assert_eq!(
            Desc::disagreement(0, r1, 1, r2, size).unwrap().class,
            MPI_ERR_ROOT
        );
        let k = Desc::kind(2).encode();
        assert_eq!(
            Desc::disagreement(0, a, 1, k, size).unwrap().class,
            MPI_ERR_NOT_SAME
        );
        let h1 = desc(ANY, ANY, ANY, 8, 12345).encode();
        let h2 = desc(ANY, ANY, ANY, 8, 54321).encode();
        assert_eq!(
            Desc::disagreement(0, unpack(pack(h1)), 1, unpack(pack(h2)), size)
                .unwrap()
                .class,
            MPI_ERR_NOT_SAME
        );
        assert!(Desc::disagreement(0, a, 1, a, size).is_none());
    }
}
