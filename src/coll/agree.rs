//! Collective argument agreement: every member publishes what it called (collective,
//! root, op, datatype, bytes, a hash of recvcounts) next to the counter of the
//! collective's FIRST step, and after that step compares every member's descriptor with
//! member 0's. All members see the same descriptors, so they all detect a disagreement
//! at the same step and return the same error (naming both ranks and both values), and
//! the communicator stays usable. Costs four stores and 4n loads per collective, no
//! extra synchronisation. `SHMPI_CHECK_ARGS=0` turns it off.
//!
//! The data-movement collectives (Gather(v), Scatter(v), Allgather(v), Alltoall(v, w))
//! must agree pair by pair: what rank i sends to rank j (count x type size, and the
//! type signature) is what j expects from i. Each member describes its side of every
//! pair as [`Flows`] and publishes, in the descriptor's op field, a 32-bit sum: plus a
//! hash of (i, j, bytes, signature) for every non-empty piece it sends, minus the same
//! hash for every piece it expects. The members' sums add up to zero when every pair
//! agrees, so the common case costs no extra step. Otherwise (every member sees the
//! same nonzero total) the members publish their whole [`Flows`] in their slots in one
//! extra step, find the first disagreeing pair in the same canonical order, and all
//! return the same error, e.g. "rank 0 expects 40 bytes from rank 2 (recvcounts[2]=10
//! MPI_INT) but rank 2 sends 48 bytes (sendcount=12 MPI_INT)". A nonzero total with no
//! real disagreement (a piece typed MPI_BYTE on one side and MPI_INT on the other: the
//! signatures match, the hashes do not) costs one more step and is not an error.
#![deny(unsafe_code)]
use crate::abi::*;
use crate::error::{err, MpiError};

pub use crate::comm::coll_state::{Arg, Desc, FlowEnd, Flows, Pending};

/// "Not compared" marker for a field.
pub const ANY: u64 = u64::MAX;

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

/// The kind of MPI_Bcast (its op field carries the datatype's element signature).
pub const KIND_BCAST: u16 = 2;

/// Whether collective `kind` moves data pair by pair (its op field carries the flow sum).
pub fn is_movement(kind: u16) -> bool {
    (9..=17).contains(&kind)
}

impl FlowEnd {
    /// `count` instances of `t` with signature `sig`, from `arg[idx]`.
    pub fn new(
        count: usize,
        t: &crate::datatype::TypeInfo,
        sig: u32,
        arg: Arg,
        idx: usize,
    ) -> FlowEnd {
        let predefined = crate::datatype::predefined::lookup(t.handle).is_some();
        FlowEnd {
            bytes: (count as u64).wrapping_mul(t.size as u64),
            count: count as u64,
            dtype: if predefined { t.handle } else { 0 },
            sig,
            arg,
            idx: idx as u32,
            in_place: false,
        }
    }

    fn encode(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&self.bytes.to_le_bytes());
        b[8..16].copy_from_slice(&self.count.to_le_bytes());
        b[16..20].copy_from_slice(&self.dtype.to_le_bytes());
        b[20..24].copy_from_slice(&self.sig.to_le_bytes());
        b[24] = self.arg as u8;
        b[25] = self.in_place as u8;
        b[28..32].copy_from_slice(&self.idx.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> FlowEnd {
        let u64_ = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let u32_ = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        FlowEnd {
            bytes: u64_(0),
            count: u64_(8),
            dtype: u32_(16) as i32,
            sig: u32_(20),
            arg: match b[24] {
                1 => Arg::SendCounts,
                2 => Arg::RecvCount,
                3 => Arg::RecvCounts,
                _ => Arg::SendCount,
            },
            in_place: b[25] != 0,
            idx: u32_(28),
        }
    }

    /// "recvcounts[2]=10 MPI_INT".
    fn describe(&self) -> String {
        let arg = match self.arg {
            Arg::SendCount => "sendcount".to_string(),
            Arg::SendCounts => format!("sendcounts[{}]", self.idx),
            Arg::RecvCount => "recvcount".to_string(),
            Arg::RecvCounts => format!("recvcounts[{}]", self.idx),
        };
        let tname = if self.dtype != 0 {
            crate::datatype::predefined::name_of(self.dtype)
        } else {
            "of a derived datatype".to_string()
        };
        let note = if self.in_place { ", MPI_IN_PLACE" } else { "" };
        format!("{arg}={} {tname}{note}", self.count)
    }
}

fn mix(src: usize, dst: usize, bytes: u64, sig: u32) -> u32 {
    // splitmix64's finaliser over the pair, the length and the signature.
    let mut z = ((src as u64) << 40 ^ (dst as u64) << 16 ^ sig as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ bytes.wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u32
}

impl Flows {
    /// Empty sides for `n` peers.
    pub fn new(n: usize) -> Flows {
        Flows {
            send: vec![FlowEnd::default(); n],
            recv: vec![FlowEnd::default(); n],
        }
    }

    /// Member `me`'s share of the flow sum (see the module comment).
    pub fn sum(&self, me: usize) -> u32 {
        let mut h = 0u32;
        for (j, e) in self.send.iter().enumerate() {
            if e.bytes > 0 {
                h = h.wrapping_add(mix(me, j, e.bytes, e.sig));
            }
        }
        for (i, e) in self.recv.iter().enumerate() {
            if e.bytes > 0 {
                h = h.wrapping_sub(mix(i, me, e.bytes, e.sig));
            }
        }
        h
    }

    /// Bytes [`Flows::encode`] writes for `n` peers.
    pub fn encoded_len(n: usize) -> usize {
        64 * n
    }

    pub fn encode(&self, out: &mut [u8]) {
        for (k, e) in self.send.iter().chain(self.recv.iter()).enumerate() {
            out[32 * k..32 * k + 32].copy_from_slice(&e.encode());
        }
    }

    pub fn decode(b: &[u8], n: usize) -> Flows {
        let e = |k: usize| FlowEnd::decode(&b[32 * k..32 * k + 32]);
        Flows {
            send: (0..n).map(e).collect(),
            recv: (n..2 * n).map(e).collect(),
        }
    }

    /// The first pair (receiver i, then sender j, ascending) on which the members'
    /// flows (`all[i]` is member i's) disagree, as the error every member returns.
    pub fn disagreement(all: &[Flows]) -> Option<MpiError> {
        let what = |e: &FlowEnd| {
            if e.bytes == 0 {
                ("nothing".to_string(), String::new())
            } else {
                (format!("{} bytes", e.bytes), format!(" ({})", e.describe()))
            }
        };
        for i in 0..all.len() {
            for (j, fj) in all.iter().enumerate() {
                let (r, s) = (all[i].recv[j], fj.send[i]);
                if r.bytes == 0 && s.bytes == 0 {
                    continue;
                }
                let (from, sender) = if i == j {
                    ("itself".to_string(), "it".to_string())
                } else {
                    (format!("rank {j}"), format!("rank {j}"))
                };
                if r.bytes != s.bytes {
                    let ((rb, rd), (sb, sd)) = (what(&r), what(&s));
                    return Some(err(
                        MPI_ERR_TRUNCATE,
                        format!(
                            "rank {i} expects {rb} from {from}{rd} but {sender} sends {sb}{sd}"
                        ),
                    ));
                }
                if r.sig != 0 && s.sig != 0 && r.sig != s.sig {
                    return Some(err(
                        MPI_ERR_TYPE,
                        format!(
                            "rank {i} expects {} from {from} but {sender} sends {}: the type signatures differ",
                            r.describe(),
                            s.describe()
                        ),
                    ));
                }
            }
        }
        None
    }
}

/// The element signature of datatype `h` for pairwise matching: the kind and size of
/// its basic elements when they are all of one predefined numeric type, else 0 (an
/// untyped MPI_BYTE, MPI_PACKED, MPI_CHAR piece, a pair type or a mixed struct matches
/// anything).
pub fn signature(h: i32) -> u32 {
    let Some((b, _)) = crate::datatype::basic_elem(h) else {
        return 0;
    };
    crate::datatype::predefined::lookup(b).map_or(0, signature_of)
}

/// [`signature`] of a predefined datatype.
pub fn signature_of(p: &crate::datatype::predefined::Predef) -> u32 {
    use crate::datatype::predefined::Elem;
    if p.size == 0 {
        return 0;
    }
    let family = match p.elem {
        Elem::I8 | Elem::I16 | Elem::I32 | Elem::I64 => 1,
        Elem::U8 | Elem::U16 | Elem::U32 | Elem::U64 => 1,
        Elem::F16 | Elem::F32 | Elem::F64 | Elem::LongDouble | Elem::Float128 => 2,
        Elem::ComplexF32 | Elem::ComplexF64 | Elem::ComplexLongDouble | Elem::ComplexFloat128 => 3,
        Elem::CBool | Elem::FLogical => 4,
        _ => return 0,
    };
    (family << 16) | p.size as u32
}

/// The kind number of a collective's name (MPI_Iallreduce is MPI_Allreduce's kind).
#[inline]
pub fn kind_of(name: &str) -> u16 {
    // The hot names first, without a search (this runs on every collective call).
    match name {
        "MPI_Allreduce" => 4,
        "MPI_Reduce" => 3,
        "MPI_Bcast" => 2,
        "MPI_Barrier" => 1,
        _ => kind_search(name),
    }
}

fn kind_search(name: &str) -> u16 {
    if let Some(k) = NAMES.iter().position(|k| *k == name) {
        return k as u16;
    }
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
        // (A data-movement collective's op field is its flow sum, compared elsewhere.)
        // MPI_Bcast's op field is the element signature of its datatype (0: untyped),
        // compared instead of the handle: MPI_INT and MPI_INT32_T, or MPI_BYTE and
        // anything, agree.
        let bcast = kx == KIND_BCAST as usize;
        let sig = |w: [u64; 5]| if w[1] == ANY { 0 } else { w[1] as u32 };
        let sigs_differ = bcast && sig(x) != 0 && sig(y) != 0 && sig(x) != sig(y);
        let user = |w: [u64; 5]| w[1] != ANY && w[1] & USER_OP != 0;
        if !is_movement(kx as u16) && !bcast && user(x) && user(y) && x[1] != y[1] {
            let ext = |w: [u64; 5]| w[1] & 0x7fff_ffff;
            return Some(err(
                MPI_ERR_TYPE,
                format!(
                    "rank {a} applies the user-defined op to a datatype of extent {} but rank {b} to one of extent {}: shmpi needs the same extent on every process (the same datatype, as the standard asks within a group)",
                    ext(x),
                    ext(y)
                ),
            ));
        }
        if !is_movement(kx as u16) && !bcast && x[1] != ANY && y[1] != ANY && x[1] != y[1] {
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
        let handles_differ = !bcast && x[2] != ANY && y[2] != ANY && x[2] != y[2];
        if x[3] != y[3] || handles_differ || sigs_differ {
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
            let class = if handles_differ || sigs_differ {
                MPI_ERR_TYPE
            } else {
                MPI_ERR_COUNT
            };
            return Some(err(class, format!("rank {a} passed {} but rank {b} passed {} (collective arguments must agree on every rank)", what(x), what(y))));
        }
        None
    }
}

/// The op word of a reduction with a user-defined operation on elements of `extent`
/// bytes (a builtin op's word is its handle, which never has the top bit set).
pub fn user_op_word(extent: usize) -> u64 {
    USER_OP | (extent as u64 & 0x7fff_ffff)
}

const USER_OP: u64 = 0x8000_0000;

fn op_name(w: u64) -> String {
    let h = w as u32 as i32;
    match crate::op::BuiltinOp::from_handle(h) {
        Some(b) => b.name().to_string(),
        None if w & USER_OP != 0 => "a user-defined op".to_string(),
        None => format!("{h:#x}"),
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

    fn end(bytes: u64, sig: u32, arg: Arg, idx: usize) -> FlowEnd {
        FlowEnd {
            bytes,
            count: bytes / 4,
            dtype: MPI_INT,
            sig,
            arg,
            idx: idx as u32,
            in_place: false,
        }
    }

    /// An alltoallv among 3 members: member i sends 4*(i+j+1) bytes to j.
    fn alltoallv(sig_of: impl Fn(usize, usize) -> u32) -> Vec<Flows> {
        (0..3)
            .map(|me| Flows {
                send: (0..3)
                    .map(|j| end(4 * (me + j + 1) as u64, sig_of(me, j), Arg::SendCounts, j))
                    .collect(),
                recv: (0..3)
                    .map(|i| end(4 * (i + me + 1) as u64, sig_of(i, me), Arg::RecvCounts, i))
                    .collect(),
            })
            .collect()
    }

    #[test]
    fn flow_sums_cancel_exactly_when_pairs_agree() {
        let all = alltoallv(|_, _| 7);
        let total = |all: &[Flows]| (0..3).fold(0u32, |h, i| h.wrapping_add(all[i].sum(i)));
        assert_eq!(total(&all), 0);
        assert!(Flows::disagreement(&all).is_none());
        // Member 2 expects 4 bytes more from member 0.
        let mut bad = all.clone();
        bad[2].recv[0].bytes += 4;
        bad[2].recv[0].count += 1;
        assert_ne!(total(&bad), 0);
        let e = Flows::disagreement(&bad).unwrap();
        assert_eq!(e.class, MPI_ERR_TRUNCATE);
        assert_eq!(
            e.msg,
            "rank 2 expects 16 bytes from rank 0 (recvcounts[0]=4 MPI_INT) but rank 0 sends 12 bytes (sendcounts[2]=3 MPI_INT)"
        );
        // Same bytes, another element type: MPI_ERR_TYPE; an untyped side matches.
        let mut ty = all.clone();
        ty[1].recv[0].sig = 9;
        assert_ne!(total(&ty), 0);
        assert_eq!(Flows::disagreement(&ty).unwrap().class, MPI_ERR_TYPE);
        ty[1].recv[0].sig = 0;
        assert!(Flows::disagreement(&ty).is_none());
    }

    #[test]
    fn flows_survive_the_slot_encoding() {
        let all = alltoallv(|i, j| (i * 3 + j) as u32);
        let mut buf = vec![0u8; Flows::encoded_len(3)];
        all[1].encode(&mut buf);
        let back = Flows::decode(&buf, 3);
        assert_eq!(back.send, all[1].send);
        assert_eq!(back.recv, all[1].recv);
    }

    #[test]
    fn kind_numbers_follow_the_names() {
        for (k, name) in NAMES.iter().enumerate().skip(1) {
            assert_eq!(kind_of(name) as usize, k, "{name}");
        }
        assert_eq!(kind_of("MPI_Iallreduce"), kind_of("MPI_Allreduce"));
        assert_eq!(kind_of("MPI_Ialltoallw"), kind_of("MPI_Alltoallw"));
        assert_eq!(KIND_BCAST, kind_of("MPI_Bcast"));
        assert!(is_movement(kind_of("MPI_Gather")) && is_movement(kind_of("MPI_Alltoallw")));
        assert!(!is_movement(kind_of("MPI_Bcast")) && !is_movement(KIND_COMM_CTOR));
    }

    #[test]
    fn signatures_group_element_kinds() {
        assert_eq!(signature(MPI_INT), signature(MPI_INT32_T));
        assert_ne!(signature(MPI_INT), signature(MPI_FLOAT));
        assert_ne!(signature(MPI_INT), signature(MPI_LONG_LONG));
        assert_eq!(signature(MPI_BYTE), 0);
        assert_eq!(signature(MPI_PACKED), 0);
    }
}
