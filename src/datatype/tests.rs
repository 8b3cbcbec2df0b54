//! Datatype engine tests: hand-computed bounds for every constructor, and random nested
//! types checked against an oracle that expands the type map entry by entry from the
//! standard's recursive definitions (no segments, no merging, no run-length coding).
#![deny(unsafe_code)]
use super::derived::*;
use super::*;
use crate::abi::*;

fn t(h: i32) -> TypeRef {
    derived::get(h, "t").unwrap()
}

/// (size, lb, extent, true_lb, true_extent)
fn dims(h: i32) -> (usize, isize, isize, isize, isize) {
    let x = t(h);
    (x.size(), x.lb(), x.extent(), x.true_lb(), x.true_extent())
}

// ---------------------------------------------------------------------------------------
// The oracle

#[derive(Clone, Debug)]
enum Spec {
    Pre(i32),
    Contig(i32, Box<Spec>),
    Vector(i32, i32, i32, Box<Spec>),
    HVector(i32, i32, isize, Box<Spec>),
    Indexed(Vec<i32>, Vec<i32>, Box<Spec>),
    HIndexed(Vec<i32>, Vec<isize>, Box<Spec>),
    IndexedBlock(i32, Vec<i32>, Box<Spec>),
    HIndexedBlock(i32, Vec<isize>, Box<Spec>),
    Struct(Vec<i32>, Vec<isize>, Vec<Spec>),
    Resized(isize, isize, Box<Spec>),
    Subarray(Vec<i32>, Vec<i32>, Vec<i32>, i32, Box<Spec>),
    Dup(Box<Spec>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Ent {
    /// (disp, bytes, basic element size)
    Data(isize, usize, usize),
    LbM(isize),
    UbM(isize),
    /// A plain upper-bound contribution (a predefined type's or struct's padding).
    Pad(isize),
}

fn shift(es: &[Ent], d: isize) -> Vec<Ent> {
    es.iter()
        .map(|e| match *e {
            Ent::Data(x, l, s) => Ent::Data(x + d, l, s),
            Ent::LbM(x) => Ent::LbM(x + d),
            Ent::UbM(x) => Ent::UbM(x + d),
            Ent::Pad(x) => Ent::Pad(x + d),
        })
        .collect()
}

/// (lb, ub) of a type map per MPI §4.1.6 with markers.
fn bounds(es: &[Ent]) -> (isize, isize) {
    let lbm = es.iter().filter_map(|e| match e {
        Ent::LbM(x) => Some(*x),
        _ => None,
    });
    let ubm = es.iter().filter_map(|e| match e {
        Ent::UbM(x) => Some(*x),
        _ => None,
    });
    let dlo = es.iter().filter_map(|e| match e {
        Ent::Data(x, _, _) => Some(*x),
        Ent::Pad(x) => Some(*x),
        _ => None,
    });
    let dhi = es.iter().filter_map(|e| match e {
        Ent::Data(x, l, _) => Some(*x + *l as isize),
        Ent::Pad(x) => Some(*x),
        _ => None,
    });
    let lb = lbm.clone().min().or(dlo.min());
    let ub = ubm.clone().max().or(dhi.max());
    // A type map with only one kind of marker takes the other bound from it.
    let lb2 = lb.or(ub).unwrap_or(0);
    let ub2 = ub.or(lb).unwrap_or(0);
    (lb2, ub2)
}

fn extent(es: &[Ent]) -> isize {
    let (l, u) = bounds(es);
    u - l
}

fn reps(child: &[Ent], n: usize, stride: isize, at: isize) -> Vec<Ent> {
    let mut v = vec![];
    for i in 0..n {
        v.extend(shift(child, at + i as isize * stride));
    }
    v
}

/// The type map of one instance, in order.
fn typemap(s: &Spec) -> Vec<Ent> {
    match s {
        Spec::Pre(h) => {
            let p = predefined::lookup(*h).unwrap();
            match *h {
                MPI_LB => vec![Ent::LbM(0)],
                MPI_UB => vec![Ent::UbM(0)],
                MPI_DOUBLE_INT => vec![Ent::Data(0, 8, 8), Ent::Data(8, 4, 4), Ent::Pad(16)],
                MPI_SHORT_INT => vec![Ent::Data(0, 2, 2), Ent::Data(4, 4, 4), Ent::Pad(8)],
                MPI_2INT => vec![Ent::Data(0, 4, 4), Ent::Data(4, 4, 4)],
                _ => vec![Ent::Data(0, p.size, p.size), Ent::Pad(p.extent as isize)],
            }
        }
        Spec::Contig(n, c) => {
            let cm = typemap(c);
            reps(&cm, *n as usize, extent(&cm), 0)
        }
        Spec::Vector(n, bl, st, c) => {
            let cm = typemap(c);
            let e = extent(&cm);
            let mut v = vec![];
            for i in 0..*n as isize {
                v.extend(reps(&cm, *bl as usize, e, i * *st as isize * e));
            }
            v
        }
        Spec::HVector(n, bl, st, c) => {
            let cm = typemap(c);
            let e = extent(&cm);
            let mut v = vec![];
            for i in 0..*n as isize {
                v.extend(reps(&cm, *bl as usize, e, i * *st));
            }
            v
        }
        Spec::Indexed(bls, ds, c) => {
            let cm = typemap(c);
            let e = extent(&cm);
            let mut v = vec![];
            for (b, d) in bls.iter().zip(ds) {
                v.extend(reps(&cm, *b as usize, e, *d as isize * e));
            }
            v
        }
        Spec::HIndexed(bls, ds, c) => {
            let cm = typemap(c);
            let e = extent(&cm);
            let mut v = vec![];
            for (b, d) in bls.iter().zip(ds) {
                v.extend(reps(&cm, *b as usize, e, *d));
            }
            v
        }
        Spec::IndexedBlock(bl, ds, c) => {
            typemap(&Spec::Indexed(vec![*bl; ds.len()], ds.clone(), c.clone()))
        }
        Spec::HIndexedBlock(bl, ds, c) => {
            typemap(&Spec::HIndexed(vec![*bl; ds.len()], ds.clone(), c.clone()))
        }
        Spec::Struct(bls, ds, ts) => {
            let mut v = vec![];
            for ((b, d), c) in bls.iter().zip(ds).zip(ts) {
                let cm = typemap(c);
                v.extend(reps(&cm, *b as usize, extent(&cm), *d));
            }
            let has_ub = v.iter().any(|e| matches!(e, Ent::UbM(_)));
            let has_any = !v.is_empty();
            if !has_ub && has_any {
                let (l, u) = bounds(&v);
                // the strictest basic element inside (all basic sizes here are
                // their alignments)
                let a = v
                    .iter()
                    .filter_map(|e| match e {
                        Ent::Data(_, _, es) => Some(*es as isize),
                        _ => None,
                    })
                    .max()
                    .unwrap_or(1);
                let r = (u - l).rem_euclid(a);
                if r != 0 {
                    v.push(Ent::Pad(u + a - r));
                }
            }
            v
        }
        Spec::Resized(lb, ext, c) => {
            let mut v: Vec<Ent> = typemap(c)
                .into_iter()
                .filter(|e| matches!(e, Ent::Data(..)))
                .collect();
            v.push(Ent::LbM(*lb));
            v.push(Ent::UbM(*lb + *ext));
            v
        }
        Spec::Subarray(sizes, subs, starts, order, c) => {
            // element (i0, .., in-1) of the subarray in the memory order
            let cm = typemap(c);
            let e = extent(&cm);
            let nd = sizes.len();
            let fast: Vec<usize> = if *order == MPI_ORDER_C {
                (0..nd).rev().collect()
            } else {
                (0..nd).collect()
            };
            // strides
            let mut stride = vec![0isize; nd];
            let mut acc = e;
            for &d in &fast {
                stride[d] = acc;
                acc *= sizes[d] as isize;
            }
            let total: usize = subs.iter().map(|&x| x as usize).product();
            let mut v = vec![];
            let mut idx = vec![0i32; nd];
            for _ in 0..total {
                let off: isize = (0..nd)
                    .map(|d| (starts[d] + idx[d]) as isize * stride[d])
                    .sum();
                v.extend(shift(&cm, off));
                // increment, fastest dimension first
                for &d in &fast {
                    idx[d] += 1;
                    if idx[d] < subs[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
            let mut v: Vec<Ent> = v
                .into_iter()
                .filter(|e| matches!(e, Ent::Data(..)))
                .collect();
            v.push(Ent::LbM(0));
            v.push(Ent::UbM(acc));
            v
        }
        Spec::Dup(c) => typemap(c),
    }
}

fn build(s: &Spec) -> i32 {
    let r = match s {
        Spec::Pre(h) => return *h,
        Spec::Contig(n, c) => contiguous(*n, build(c)),
        Spec::Vector(n, bl, st, c) => vector(*n, *bl, *st, build(c)),
        Spec::HVector(n, bl, st, c) => hvector(*n, *bl, *st, build(c)),
        Spec::Indexed(b, d, c) => indexed(b.len() as i32, b, d, build(c)),
        Spec::HIndexed(b, d, c) => hindexed(b.len() as i32, b, d, build(c)),
        Spec::IndexedBlock(bl, d, c) => indexed_block(d.len() as i32, *bl, d, build(c)),
        Spec::HIndexedBlock(bl, d, c) => hindexed_block(d.len() as i32, *bl, d, build(c)),
        Spec::Struct(b, d, ts) => {
            let hs: Vec<i32> = ts.iter().map(build).collect();
            structure(b.len() as i32, b, d, &hs)
        }
        Spec::Resized(lb, e, c) => resized(build(c), *lb, *e),
        Spec::Subarray(a, b, c, o, x) => subarray(a.len() as i32, a, b, c, *o, build(x)),
        Spec::Dup(c) => dup(build(c)),
    };
    r.unwrap()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }
}

const BASICS: [i32; 8] = [
    MPI_CHAR,
    MPI_SHORT,
    MPI_INT,
    MPI_DOUBLE,
    MPI_DOUBLE_INT,
    MPI_SHORT_INT,
    MPI_2INT,
    MPI_LONG_DOUBLE,
];

fn gen(r: &mut Rng, depth: u32) -> Spec {
    if depth == 0 || r.range(0, 4) == 0 {
        return Spec::Pre(BASICS[r.range(0, 7) as usize]);
    }
    let c = Box::new(gen(r, depth - 1));
    match r.range(0, 11) {
        0 => Spec::Contig(r.range(0, 4) as i32, c),
        1 => Spec::Vector(
            r.range(0, 4) as i32,
            r.range(0, 3) as i32,
            r.range(-4, 5) as i32,
            c,
        ),
        2 => Spec::HVector(
            r.range(0, 4) as i32,
            r.range(0, 3) as i32,
            r.range(-40, 60) as isize,
            c,
        ),
        3 => {
            let n = r.range(0, 4) as usize;
            Spec::Indexed(
                (0..n).map(|_| r.range(0, 3) as i32).collect(),
                (0..n).map(|_| r.range(-5, 8) as i32).collect(),
                c,
            )
        }
        4 => {
            let n = r.range(0, 4) as usize;
            Spec::HIndexed(
                (0..n).map(|_| r.range(0, 3) as i32).collect(),
                (0..n).map(|_| r.range(-50, 80) as isize).collect(),
                c,
            )
        }
        5 => {
            let n = r.range(0, 4) as usize;
            Spec::IndexedBlock(
                r.range(0, 3) as i32,
                (0..n).map(|_| r.range(-5, 8) as i32).collect(),
                c,
            )
        }
        6 => {
            let n = r.range(0, 4) as usize;
            Spec::HIndexedBlock(
                r.range(0, 3) as i32,
                (0..n).map(|_| r.range(-50, 80) as isize).collect(),
                c,
            )
        }
        7 => {
            let n = r.range(1, 4) as usize;
            let mut ts = vec![*c];
            for _ in 1..n {
                ts.push(if r.range(0, 5) == 0 {
                    Spec::Pre(if r.range(0, 1) == 0 { MPI_LB } else { MPI_UB })
                } else {
                    gen(r, depth - 1)
                });
            }
            Spec::Struct(
                (0..n).map(|_| r.range(0, 3) as i32).collect(),
                (0..n).map(|_| r.range(-40, 80) as isize).collect(),
                ts,
            )
        }
        8 => Spec::Resized(r.range(-30, 30) as isize, r.range(0, 50) as isize, c),
        9 => {
            let nd = r.range(1, 3) as usize;
            let sizes: Vec<i32> = (0..nd).map(|_| r.range(1, 4) as i32).collect();
            let subs: Vec<i32> = sizes.iter().map(|&s| r.range(0, s as i64) as i32).collect();
            let starts: Vec<i32> = sizes
                .iter()
                .zip(&subs)
                .map(|(&s, &ss)| r.range(0, (s - ss) as i64) as i32)
                .collect();
            let order = if r.range(0, 1) == 0 {
                MPI_ORDER_C
            } else {
                MPI_ORDER_FORTRAN
            };
            Spec::Subarray(sizes, subs, starts, order, c)
        }
        10 => Spec::Dup(c),
        _ => Spec::Contig(1, c),
    }
}

/// Oracle pack: every data entry of every instance, in order.
fn oracle_pack(tm: &[Ent], ext: isize, count: usize, buf: &[u8], origin: isize) -> Vec<u8> {
    let mut out = vec![];
    for i in 0..count as isize {
        for e in tm {
            if let Ent::Data(d, l, _) = *e {
                let at = (origin + i * ext + d) as usize;
                out.extend_from_slice(&buf[at..at + l]);
            }
        }
    }
    out
}

fn oracle_unpack(tm: &[Ent], ext: isize, count: usize, buf: &mut [u8], origin: isize, inp: &[u8]) {
    let mut pos = 0;
    for i in 0..count as isize {
        for e in tm {
            if let Ent::Data(d, l, _) = *e {
                let at = (origin + i * ext + d) as usize;
                buf[at..at + l].copy_from_slice(&inp[pos..pos + l]);
                pos += l;
            }
        }
    }
}

fn check_against_oracle(s: &Spec, r: &mut Rng) {
    let h = build(s);
    let ty = t(h);
    let tm = typemap(s);
    let data: Vec<(isize, usize, usize)> = tm
        .iter()
        .filter_map(|e| match *e {
            Ent::Data(d, l, es) => Some((d, l, es)),
            _ => None,
        })
        .collect();
    let size: usize = data.iter().map(|d| d.1).sum();
    let (lb, ub) = bounds(&tm);
    let tlo = data.iter().map(|d| d.0).min().unwrap_or(0);
    let thi = data.iter().map(|d| d.0 + d.1 as isize).max().unwrap_or(0);
    let ctx = format!("{s:?}");
    assert_eq!(ty.size(), size, "size {ctx}");
    assert_eq!((ty.lb(), ty.ub()), (lb, ub), "bounds {ctx}");
    assert_eq!(
        (ty.true_lb(), ty.true_extent()),
        (tlo, thi - tlo),
        "true bounds {ctx}"
    );
    let nelem: usize = data.iter().map(|d| d.1 / d.2).sum();
    assert_eq!(ty.layout.elem_count(), nelem, "elements {ctx}");
    let ext = ty.extent();
    if ext < 0 {
        return;
    }
    for count in [0usize, 1, 2, 3] {
        if size == 0 {
            break;
        }
        let (off, len) = span(&ty, count).unwrap();
        if count > 0 {
            assert_eq!(off, tlo, "{ctx}");
            assert_eq!(
                len as isize,
                (count as isize - 1) * ext + thi - tlo,
                "{ctx}"
            );
        }
        let margin = 16isize;
        let origin = (margin - off).max(0);
        let blen = (origin + off + len as isize + margin) as usize;
        let buf: Vec<u8> = (0..blen).map(|_| r.next() as u8).collect();
        let want = oracle_pack(&tm, ext, count, &buf, origin);
        assert_eq!(want.len(), count * size);
        let mut got = vec![0u8; want.len()];
        pack_slice(&ty, count, &buf, origin as usize, &mut got, 0).unwrap();
        assert_eq!(got, want, "pack count={count} {ctx}");
        // streaming: random splits
        let mut streamed = vec![0u8; want.len()];
        let mut at = 0;
        while at < want.len() {
            let n = (r.range(1, 2 * size as i64 + 3) as usize).min(want.len() - at);
            pack_slice(
                &ty,
                count,
                &buf,
                origin as usize,
                &mut streamed[at..at + n],
                at,
            )
            .unwrap();
            at += n;
        }
        assert_eq!(streamed, want, "streamed pack count={count} {ctx}");
        // unpack, in random pieces, against the oracle
        let mut a = vec![0u8; blen];
        let mut b = vec![0u8; blen];
        oracle_unpack(&tm, ext, count, &mut a, origin, &want);
        let mut at = 0;
        while at < want.len() {
            let n = (r.range(1, 2 * size as i64 + 3) as usize).min(want.len() - at);
            unpack_slice(&ty, count, &mut b, origin as usize, &want[at..at + n], at).unwrap();
            at += n;
        }
        assert_eq!(a, b, "unpack count={count} {ctx}");
        // unpack, whole (a one-segment layout takes the block loop of pack.rs)
        let mut c = vec![0u8; blen];
        unpack_slice(&ty, count, &mut c, origin as usize, &want, 0).unwrap();
        assert_eq!(a, c, "whole unpack count={count} {ctx}");
        // get_elements on every prefix length
        for bytes in 0..=want.len() {
            let full = bytes / size;
            let mut rem = bytes % size;
            let mut n = full * nelem;
            let mut ok = true;
            for d in &data {
                if rem == 0 {
                    break;
                }
                let k = (rem / d.2).min(d.1 / d.2);
                n += k;
                rem -= k * d.2;
                if k < d.1 / d.2 {
                    ok = rem == 0;
                    rem = 0;
                    break;
                }
            }
            let want_n = if ok && rem == 0 { Some(n as u64) } else { None };
            assert_eq!(
                get_elements(&ty, bytes as u64),
                want_n,
                "elements of {bytes} bytes {ctx}"
            );
        }
    }
}

#[test]
fn random_nested_types_match_the_oracle() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..3000 {
        let depth = r.range(1, 3) as u32;
        let s = gen(&mut r, depth);
        check_against_oracle(&s, &mut r);
    }
}

// ---------------------------------------------------------------------------------------
// Hand-computed cases

#[test]
fn contiguous_and_vector() {
    let c = contiguous(5, MPI_INT).unwrap();
    assert_eq!(dims(c), (20, 0, 20, 0, 20));
    assert!(t(c).is_contiguous());
    let v = vector(3, 2, 4, MPI_DOUBLE).unwrap();
    // blocks at 0, 32, 64 of 16 bytes
    assert_eq!(dims(v), (48, 0, 80, 0, 80));
    assert!(!t(v).is_contiguous());
    assert_eq!(basic_elem(v), Some((MPI_DOUBLE, 6)));
    // one segment: vector of a basic type stays compact whatever its count
    let big = vector(1_000_000, 1, 3, MPI_DOUBLE).unwrap();
    assert_eq!(t(big).layout.segs.len(), 1);
    // negative stride
    let n = vector(3, 1, -2, MPI_INT).unwrap();
    assert_eq!(dims(n), (12, -16, 20, -16, 20));
    let z = vector(0, 3, 4, MPI_INT).unwrap();
    assert_eq!(dims(z), (0, 0, 0, 0, 0));
    for h in [c, v, big, n, z] {
        free(h).unwrap();
    }
}

#[test]
fn hvector_indexed_blocks() {
    let h = hvector(2, 3, 100, MPI_SHORT).unwrap();
    assert_eq!(dims(h), (12, 0, 106, 0, 106));
    let i = indexed(3, &[2, 0, 1], &[5, 1, -1], MPI_INT).unwrap();
    // blocks [20,28), [] , [-4,0)
    assert_eq!(dims(i), (12, -4, 32, -4, 32));
    let hi = hindexed(2, &[1, 2], &[-3, 10], MPI_CHAR).unwrap();
    assert_eq!(dims(hi), (3, -3, 15, -3, 15));
    let ib = indexed_block(2, 2, &[3, 0], MPI_FLOAT).unwrap();
    assert_eq!(dims(ib), (16, 0, 20, 0, 20));
    let hb = hindexed_block(2, 1, &[8, 0], MPI_DOUBLE).unwrap();
    assert_eq!(dims(hb), (16, 0, 16, 0, 16));
    // type-map order is the declaration order: hb packs the element at 8 first
    let mut buf = [0u8; 16];
    buf[..8].copy_from_slice(&1.0f64.to_ne_bytes());
    buf[8..].copy_from_slice(&2.0f64.to_ne_bytes());
    let mut out = [0u8; 16];
    pack_slice(&t(hb), 1, &buf, 0, &mut out, 0).unwrap();
    assert_eq!(&out[..8], &2.0f64.to_ne_bytes());
    assert!(!t(hb).is_contiguous());
    assert_eq!(
        indexed(1, &[-1], &[0], MPI_INT).unwrap_err().class,
        MPI_ERR_ARG
    );
    assert_eq!(
        indexed(-1, &[], &[], MPI_INT).unwrap_err().class,
        MPI_ERR_COUNT
    );
    for x in [h, i, hi, ib, hb] {
        free(x).unwrap();
    }
}

#[test]
fn struct_padding_holes_and_markers() {
    // struct { char c; double d; int i; } -> 0, 8, 16; extent 24 (aligned to 8)
    let s = structure(3, &[1, 1, 1], &[0, 8, 16], &[MPI_CHAR, MPI_DOUBLE, MPI_INT]).unwrap();
    assert_eq!(dims(s), (13, 0, 24, 0, 20));
    assert_eq!(basic_elem(s), None);
    // the holes are not packed
    let buf: Vec<u8> = (0..48u8).collect();
    let mut out = vec![0u8; 26];
    pack_slice(&t(s), 2, &buf, 0, &mut out, 0).unwrap();
    let mut want = vec![0u8];
    want.extend(8..20u8);
    want.push(24);
    want.extend(32..44u8);
    assert_eq!(out, want);
    // MPI-1 markers: lb at -8, ub at 40
    let m = structure(
        4,
        &[1, 1, 1, 1],
        &[-8, 0, 4, 40],
        &[MPI_LB, MPI_INT, MPI_INT, MPI_UB],
    )
    .unwrap();
    assert_eq!(dims(m), (8, -8, 48, 0, 8));
    // markers propagate through contiguous: instances 48 apart, lb of the first
    let c = contiguous(2, m).unwrap();
    assert_eq!(dims(c), (16, -8, 96, 0, 56));
    // MPI_UB alone: empty data, ub marker at 16
    let u = structure(2, &[1, 1], &[0, 16], &[MPI_CHAR, MPI_UB]).unwrap();
    assert_eq!(dims(u), (1, 0, 16, 0, 1));
    for x in [s, m, c, u] {
        free(x).unwrap();
    }
}

#[test]
fn resized_and_negative_bounds() {
    let r = resized(MPI_INT, -4, 12).unwrap();
    assert_eq!(dims(r), (4, -4, 12, 0, 4));
    let c = contiguous(3, r).unwrap();
    // ints at 0, 12, 24; lb -4, ub -4+36
    assert_eq!(dims(c), (12, -4, 36, 0, 28));
    let buf: Vec<u8> = (0..40u8).collect();
    let mut out = vec![0u8; 12];
    pack_slice(&t(c), 1, &buf, 0, &mut out, 0).unwrap();
    assert_eq!(out, [0, 1, 2, 3, 12, 13, 14, 15, 24, 25, 26, 27]);
    // resized shrinking below the data: overlapping instances
    let s = resized(MPI_DOUBLE, 0, 4).unwrap();
    assert_eq!(dims(s), (8, 0, 4, 0, 8));
    assert_eq!(span(&t(s), 3), Some((0, 16)));
    // a negative extent: built and queried, refused for communication
    let n = resized(MPI_INT, 8, -8).unwrap();
    assert_eq!(dims(n), (4, 8, -8, 0, 4));
    // three instances at 0, -8, -16: bytes -16 .. 4
    assert_eq!(span(&t(n), 3), Some((-16, 20)));
    commit(n).unwrap();
    assert_eq!(
        get_committed(n, "datatype").unwrap_err().class,
        MPI_ERR_TYPE
    );
    for x in [r, c, s, n] {
        free(x).unwrap();
    }
}

#[test]
fn subarray_c_and_fortran() {
    // 4x5 ints, 2x3 block starting at (1,2), C order: rows of 5
    let c = subarray(2, &[4, 5], &[2, 3], &[1, 2], MPI_ORDER_C, MPI_INT).unwrap();
    assert_eq!(dims(c), (24, 0, 80, 28, 32));
    let f = subarray(2, &[4, 5], &[2, 3], &[1, 2], MPI_ORDER_FORTRAN, MPI_INT).unwrap();
    // column-major: element (i,j) at (i + 4j)*4; first (1,2) = 36, last (2,4) = 72
    assert_eq!(dims(f), (24, 0, 80, 36, 40));
    let buf: Vec<u8> = (0..80u8).collect();
    let mut out = vec![0u8; 24];
    pack_slice(&t(c), 1, &buf, 0, &mut out, 0).unwrap();
    let idx: Vec<u8> = out.chunks(4).map(|w| w[0] / 4).collect();
    assert_eq!(idx, [7, 8, 9, 12, 13, 14]);
    pack_slice(&t(f), 1, &buf, 0, &mut out, 0).unwrap();
    let idx: Vec<u8> = out.chunks(4).map(|w| w[0] / 4).collect();
    assert_eq!(idx, [9, 10, 13, 14, 17, 18]);
    assert_eq!(
        subarray(1, &[4], &[5], &[0], MPI_ORDER_C, MPI_INT)
            .unwrap_err()
            .class,
        MPI_ERR_ARG
    );
    for x in [c, f] {
        free(x).unwrap();
    }
}

#[test]
fn zero_size_types() {
    let z = contiguous(0, MPI_INT).unwrap();
    assert_eq!(dims(z), (0, 0, 0, 0, 0));
    let v = vector(3, 1, 2, z).unwrap();
    assert_eq!(dims(v), (0, 0, 0, 0, 0));
    let ty = t(v);
    assert_eq!(span(&ty, 10), Some((0, 0)));
    pack_slice(&ty, 10, &[], 0, &mut [], 0).unwrap();
    assert_eq!(get_elements(&ty, 0), Some(0));
    assert_eq!(get_elements(&ty, 1), None);
    free(z).unwrap();
    free(v).unwrap();
}

#[test]
fn commit_free_and_lookup_errors() {
    let v = vector(2, 1, 2, MPI_INT).unwrap();
    assert!(info(v).is_none());
    let e = lookup(v).unwrap_err();
    assert_eq!(e.class, MPI_ERR_TYPE);
    assert!(e.msg.contains("not committed"), "{}", e.msg);
    commit(v).unwrap();
    assert_eq!(info(v), Some((8, 12)));
    let held = lookup(v).unwrap();
    free(v).unwrap();
    // the operation holding the type still sees it
    assert_eq!(held.size(), 8);
    let e = lookup(v).unwrap_err();
    assert!(e.msg.contains("freed"), "{}", e.msg);
    assert_eq!(free(v).unwrap_err().class, MPI_ERR_TYPE);
    assert_eq!(free(MPI_DOUBLE).unwrap_err().class, MPI_ERR_TYPE);
    assert_eq!(lookup(MPI_DATATYPE_NULL).unwrap_err().class, MPI_ERR_TYPE);
    assert!(lookup(MPI_DOUBLE_INT).is_ok());
    // derived handles never collide with the pair types' direct handles
    let hs: Vec<i32> = (0..10).map(|_| contiguous(1, MPI_INT).unwrap()).collect();
    for &h in &hs {
        assert!(!predefined::is_reserved_direct(h));
        free(h).unwrap();
    }
}

#[test]
fn envelope_contents_and_names() {
    let v = vector(3, 2, 4, MPI_DOUBLE).unwrap();
    assert_eq!(envelope(v).unwrap(), (3, 0, 1, MPI_COMBINER_VECTOR));
    let (i, a, d) = contents(v, 3, 0, 1).unwrap();
    assert_eq!((i, a, d), (vec![3, 2, 4], vec![], vec![MPI_DOUBLE]));
    let s = structure(2, &[1, 2], &[0, 8], &[v, MPI_INT]).unwrap();
    assert_eq!(envelope(s).unwrap(), (3, 2, 2, MPI_COMBINER_STRUCT));
    let (i, a, d) = contents(s, 3, 2, 2).unwrap();
    assert_eq!(i, vec![2, 1, 2]);
    assert_eq!(a, vec![0, 8]);
    assert_eq!(d[1], MPI_INT);
    assert_eq!(envelope(d[0]).unwrap(), (3, 0, 1, MPI_COMBINER_VECTOR));
    free(d[0]).unwrap();
    assert_eq!(contents(s, 2, 2, 2).unwrap_err().class, MPI_ERR_ARG);
    assert_eq!(envelope(MPI_INT).unwrap(), (0, 0, 0, MPI_COMBINER_NAMED));
    assert!(contents(MPI_INT, 0, 0, 0).is_err());
    let r = resized(v, -8, 100).unwrap();
    assert_eq!(contents(r, 0, 2, 1).unwrap().1, vec![-8, 100]);
    assert_eq!(get_name(MPI_DOUBLE).unwrap(), "MPI_DOUBLE");
    assert_eq!(get_name(v).unwrap(), "");
    set_name(v, "my vector").unwrap();
    assert_eq!(get_name(v).unwrap(), "my vector");
    let dd = dup(v).unwrap();
    assert_eq!(envelope(dd).unwrap(), (0, 0, 1, MPI_COMBINER_DUP));
    assert_eq!(dims(dd), dims(v));
    for x in [v, s, r, dd] {
        free(x).unwrap();
    }
}

#[test]
fn match_size_and_f90() {
    assert_eq!(match_size(MPI_TYPECLASS_REAL, 8).unwrap(), MPI_REAL8);
    assert_eq!(match_size(MPI_TYPECLASS_INTEGER, 2).unwrap(), MPI_INTEGER2);
    assert_eq!(
        match_size(MPI_TYPECLASS_COMPLEX, 16).unwrap(),
        MPI_COMPLEX16
    );
    assert!(match_size(MPI_TYPECLASS_REAL, 3).is_err());
    assert_eq!(f90_real_kind(6, MPI_UNDEFINED).unwrap(), MPI_REAL4);
    assert_eq!(f90_real_kind(15, 300).unwrap(), MPI_REAL8);
    assert_eq!(f90_real_kind(20, MPI_UNDEFINED).unwrap(), MPI_REAL16);
    assert_eq!(f90_complex_kind(10, MPI_UNDEFINED).unwrap(), MPI_COMPLEX16);
    assert_eq!(f90_integer_kind(4).unwrap(), MPI_INTEGER2);
    assert_eq!(f90_integer_kind(9).unwrap(), MPI_INTEGER4);
    assert_eq!(f90_integer_kind(18).unwrap(), MPI_INTEGER8);
    assert!(f90_integer_kind(19).is_err());
    assert!(f90_integer(19).is_err());
    assert!(f90_real(MPI_UNDEFINED, MPI_UNDEFINED).is_err());
}

#[test]
fn f90_types_are_permanent_with_their_arguments() {
    // The F90 combiner and the arguments as given; one handle per distinct call.
    let a = f90_real(15, MPI_UNDEFINED).unwrap();
    assert_eq!(envelope(a).unwrap(), (2, 0, 0, MPI_COMBINER_F90_REAL));
    assert_eq!(contents(a, 2, 0, 0).unwrap().0, vec![15, MPI_UNDEFINED]);
    assert_eq!(f90_real(15, MPI_UNDEFINED).unwrap(), a);
    assert_ne!(f90_real(14, MPI_UNDEFINED).unwrap(), a);
    let i8 = f90_integer(9).unwrap();
    let i9 = f90_integer(8).unwrap();
    assert_ne!(i8, i9);
    assert_eq!(envelope(i8).unwrap(), (1, 0, 0, MPI_COMBINER_F90_INTEGER));
    assert_eq!(contents(i8, 1, 0, 0).unwrap().0, vec![9]);
    let c = f90_complex(3, 10).unwrap();
    assert_eq!(envelope(c).unwrap(), (2, 0, 0, MPI_COMBINER_F90_COMPLEX));
    // Laid out as the kind they select, committed, and never freed.
    let (ta, tc) = (t(a), t(c));
    assert_eq!((ta.size(), ta.extent(), ta.is_committed()), (8, 8, true));
    assert_eq!((tc.size(), tc.extent()), (8, 8));
    assert_eq!(tc.basic_elem(), Some((MPI_COMPLEX8, 1)));
    assert_eq!(free(a).unwrap_err().class, MPI_ERR_TYPE);
    // A duplicate's contents give the F90 type back as itself (nothing to free).
    let d = dup(a).unwrap();
    assert_eq!(contents(d, 0, 0, 1).unwrap().2, vec![a]);
    free(d).unwrap();
    assert_eq!(envelope(a).unwrap().3, MPI_COMBINER_F90_REAL);
}

#[test]
fn pair_types_elements() {
    let x = t(MPI_DOUBLE_INT);
    assert_eq!(get_elements(&x, 12), Some(2));
    assert_eq!(get_elements(&x, 8), Some(1));
    assert_eq!(get_elements(&x, 10), None);
    assert_eq!(get_elements(&x, 24), Some(4));
    let v = vector(2, 1, 2, MPI_DOUBLE).unwrap();
    assert_eq!(get_elements(&t(v), 24), Some(3));
    assert_eq!(get_elements(&t(v), 20), None);
    free(v).unwrap();
}

#[test]
fn streaming_pack_of_a_large_vector() {
    // many instances of a strided type, packed in uneven pieces
    let v = vector(100, 3, 7, MPI_INT).unwrap();
    let ty = t(v);
    let count = 50;
    let (off, len) = span(&ty, count).unwrap();
    assert_eq!(off, 0);
    let buf: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
    let mut whole = vec![0u8; count * ty.size()];
    pack_slice(&ty, count, &buf, 0, &mut whole, 0).unwrap();
    let mut pieces = vec![0u8; whole.len()];
    let mut at = 0;
    let mut step = 1;
    while at < whole.len() {
        let n = step.min(whole.len() - at);
        pack_slice(&ty, count, &buf, 0, &mut pieces[at..at + n], at).unwrap();
        at += n;
        step = step * 3 % 1001 + 1;
    }
    assert_eq!(pieces, whole);
    // the packed stream cannot be read past its end
    assert_eq!(
        pack_slice(&ty, count, &buf, 0, &mut [0u8; 4], whole.len() - 2)
            .unwrap_err()
            .class,
        MPI_ERR_TRUNCATE
    );
    free(v).unwrap();
}

#[test]
#[allow(clippy::needless_range_loop)] // index tuples read clearer as loops
fn darray_partitions_the_array_in_memory_order() {
    let mut r = Rng(12345);
    for _ in 0..300 {
        let nd = r.range(1, 3) as usize;
        let gs: Vec<i32> = (0..nd).map(|_| r.range(1, 7) as i32).collect();
        let ps: Vec<i32> = (0..nd).map(|_| r.range(1, 3) as i32).collect();
        let mut ds = vec![];
        let mut dargs = vec![];
        for i in 0..nd {
            let (d, a) = match r.range(0, 3) {
                0 if ps[i] == 1 => (MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_DFLT_DARG),
                0 | 1 => (MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG),
                2 => (MPI_DISTRIBUTE_CYCLIC, r.range(1, 3) as i32),
                _ => (MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_DFLT_DARG),
            };
            ds.push(d);
            dargs.push(a);
        }
        let order = if r.range(0, 1) == 0 {
            MPI_ORDER_C
        } else {
            MPI_ORDER_FORTRAN
        };
        let size: i32 = ps.iter().product();
        let total: usize = gs.iter().map(|&g| g as usize).product();
        let owner_1d = |i: usize, x: i32| -> i32 {
            let (g, p) = (gs[i], ps[i]);
            match ds[i] {
                MPI_DISTRIBUTE_NONE => 0,
                MPI_DISTRIBUTE_BLOCK => x / ((g + p - 1) / p),
                _ => {
                    let b = if dargs[i] == MPI_DISTRIBUTE_DFLT_DARG {
                        1
                    } else {
                        dargs[i]
                    };
                    (x / b) % p
                }
            }
        };
        let mut seen = vec![0; total];
        for rank in 0..size {
            let h = darray(size, rank, nd as i32, &gs, &ds, &dargs, &ps, order, MPI_INT).unwrap();
            let ty = t(h);
            assert_eq!(ty.extent(), total as isize * 4);
            assert_eq!(ty.lb(), 0);
            // oracle: every element this rank owns, in memory order
            let mut want = vec![];
            for off in 0..total {
                // element index tuple of memory offset `off`
                let mut rem = off;
                let mut idx = vec![0i32; nd];
                let fast: Vec<usize> = if order == MPI_ORDER_C {
                    (0..nd).rev().collect()
                } else {
                    (0..nd).collect()
                };
                for &d in &fast {
                    idx[d] = (rem % gs[d] as usize) as i32;
                    rem /= gs[d] as usize;
                }
                let mut coord_rank = 0;
                for d in 0..nd {
                    coord_rank = coord_rank * ps[d] + owner_1d(d, idx[d]);
                }
                if coord_rank == rank {
                    want.push(off as u32);
                    seen[off] += 1;
                }
            }
            assert_eq!(ty.size(), want.len() * 4, "{gs:?} {ps:?} {ds:?} {dargs:?}");
            let buf: Vec<u8> = (0..total as u32).flat_map(|x| x.to_ne_bytes()).collect();
            let mut out = vec![0u8; ty.size()];
            pack_slice(&ty, 1, &buf, 0, &mut out, 0).unwrap();
            let got: Vec<u32> = out
                .chunks(4)
                .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
                .collect();
            assert_eq!(
                got, want,
                "rank {rank} of {gs:?} {ps:?} {ds:?} {dargs:?} {order}"
            );
            free(h).unwrap();
        }
        assert!(seen.iter().all(|&s| s == 1));
    }
    assert_eq!(
        darray(
            2,
            0,
            1,
            &[4],
            &[MPI_DISTRIBUTE_BLOCK],
            &[1],
            &[2],
            MPI_ORDER_C,
            MPI_INT
        )
        .unwrap_err()
        .class,
        MPI_ERR_ARG
    );
}

#[test]
fn one_segment_layouts_pack_whole_and_in_pieces_alike() {
    // Blocks of 1, 2, 3, 4, 8, 16 and 24 bytes, one or several per instance, with
    // positive and negative strides and extents larger and smaller than the data: the
    // whole-stream block loop gives the bytes of the piecewise walk, both ways.
    let mut r = Rng(0x51ed_2701_a4c3_9b11);
    for (blk, base) in [
        (1, MPI_CHAR),
        (2, MPI_SHORT),
        (3, MPI_CHAR),
        (4, MPI_INT),
        (8, MPI_DOUBLE),
        (16, MPI_LONG_DOUBLE),
        (24, MPI_CHAR),
    ] {
        let esz = t(base).size();
        let per = (blk / esz).max(1) as i32;
        let one = contiguous(per, base).unwrap();
        for (nblk, stride) in [(1, 0), (3, 2), (2, -3)] {
            let v = if nblk == 1 {
                one
            } else {
                hvector(nblk, 1, stride * blk as isize, one).unwrap()
            };
            let ext = t(v).extent().abs() + 5;
            let rz = resized(v, 0, ext).unwrap();
            let ty = t(rz);
            assert_eq!(ty.layout.segs.len(), 1, "block {blk} x {nblk}");
            for count in [1usize, 2, 7] {
                let (off, len) = span(&ty, count).unwrap();
                let origin = (64 - off).max(0);
                let blen = (origin + off + len as isize + 64) as usize;
                let buf: Vec<u8> = (0..blen).map(|_| r.next() as u8).collect();
                let n = count * ty.size();
                let mut whole = vec![0u8; n];
                pack_slice(&ty, count, &buf, origin as usize, &mut whole, 0).unwrap();
                let mut pieces = vec![0u8; n];
                for at in (0..n).step_by(5) {
                    let k = 5.min(n - at);
                    pack_slice(
                        &ty,
                        count,
                        &buf,
                        origin as usize,
                        &mut pieces[at..at + k],
                        at,
                    )
                    .unwrap();
                }
                assert_eq!(whole, pieces, "pack: block {blk} x {nblk}, count {count}");
                let (mut a, mut b) = (vec![0u8; blen], vec![0u8; blen]);
                unpack_slice(&ty, count, &mut a, origin as usize, &whole, 0).unwrap();
                for at in (0..n).step_by(5) {
                    let k = 5.min(n - at);
                    unpack_slice(&ty, count, &mut b, origin as usize, &whole[at..at + k], at)
                        .unwrap();
                }
                assert_eq!(a, b, "unpack: block {blk} x {nblk}, count {count}");
                // and the round trip puts back exactly the type map's bytes
                let mut back = vec![0u8; n];
                pack_slice(&ty, count, &a, origin as usize, &mut back, 0).unwrap();
                assert_eq!(
                    back, whole,
                    "round trip: block {blk} x {nblk}, count {count}"
                );
            }
        }
    }
}

#[test]
fn every_block_width_packs_as_the_oracle_says() {
    // Blocks of every width from 1 to 80 bytes (the fixed-width moves, the two
    // overlapping moves of each width class, the memcpy beyond 64), five a vector, in a
    // resized instance, two and three instances: whole, in pieces that cut blocks, and
    // back, against a loop over the blocks' displacements.
    let mut r = Rng(0x0b10_c4c0_9e5d_7a31);
    for w in 1..=80usize {
        let blk = contiguous(w as i32, MPI_CHAR).unwrap();
        let stride = w as isize + 3;
        let v = hvector(5, 1, stride, blk).unwrap();
        let ext = 5 * stride + 7;
        let ty = t(resized(v, 0, ext).unwrap());
        for count in [2usize, 3] {
            let blen = count * ext as usize + 16;
            let buf: Vec<u8> = (0..blen).map(|_| r.next() as u8).collect();
            let mut want = vec![];
            for i in 0..count {
                for k in 0..5 {
                    let at = i * ext as usize + k * stride as usize;
                    want.extend_from_slice(&buf[at..at + w]);
                }
            }
            let n = want.len();
            assert_eq!(n, count * ty.size(), "width {w}");
            let mut whole = vec![0u8; n];
            pack_slice(&ty, count, &buf, 0, &mut whole, 0).unwrap();
            assert_eq!(whole, want, "pack: width {w}, count {count}");
            let piece = w / 2 + 3;
            let mut pieces = vec![0u8; n];
            for at in (0..n).step_by(piece) {
                let k = piece.min(n - at);
                pack_slice(&ty, count, &buf, 0, &mut pieces[at..at + k], at).unwrap();
            }
            assert_eq!(pieces, want, "pack in pieces: width {w}, count {count}");
            let mut back = vec![0xa5u8; blen];
            for at in (0..n).step_by(piece) {
                let k = piece.min(n - at);
                unpack_slice(&ty, count, &mut back, 0, &want[at..at + k], at).unwrap();
            }
            let mut expect = vec![0xa5u8; blen];
            for i in 0..count {
                for k in 0..5 {
                    let at = i * ext as usize + k * stride as usize;
                    expect[at..at + w].copy_from_slice(&buf[at..at + w]);
                }
            }
            assert_eq!(back, expect, "unpack in pieces: width {w}, count {count}");
        }
    }
}
