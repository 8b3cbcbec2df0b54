//! Tests of the reduction engine against an independent oracle: a per-element scalar
//! implementation written here (integers through i128, floats through explicit case
//! analysis, binary16 through a table of every value, long double / __float128
//! through hand-written converters from f64), never the kernels.
//!
//! Unsafe code here (every block has its SAFETY line):
//! - reading and setting MXCSR (inline asm), and user functions in C's signature.
use super::*;
use crate::datatype::predefined::{Elem, PREDEFINED};
use crate::error::MpiError;

// ---------------------------------------------------------------------------------------
// deterministic pseudo-random data

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn f64_special(r: &mut Rng) -> f64 {
    match r.below(12) {
        0 => f64::NAN,
        // a negative quiet NaN, or a signalling NaN with a payload
        1 if r.below(2) == 0 => -f64::NAN,
        1 => f64::from_bits(0x7ff0_0000_0000_0005),
        2 => f64::INFINITY,
        3 => f64::NEG_INFINITY,
        4 => 0.0,
        5 => -0.0,
        6 => (r.below(7) as f64) - 3.0, // small integers: many ties
        _ => (r.next() as i64 as f64) / 1e15,
    }
}

/// Small exactly-representable values (for long double / binary128, where the oracle
/// computes in f64: sums and products of these are exact in every format).
fn f64_exact(r: &mut Rng) -> f64 {
    match r.below(10) {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        3 => 0.0,
        4 => -0.0,
        _ => (r.below(2001) as f64 - 1000.0) / 8.0,
    }
}

// ---------------------------------------------------------------------------------------
// converters written for the oracle

/// f64 -> x87 80-bit extended (little-endian, 16 bytes with zero padding). Exact.
fn f64_to_x87(v: f64) -> [u8; 16] {
    let bits = v.to_bits();
    let sign = (bits >> 63) as u16;
    let exp = ((bits >> 52) & 0x7ff) as u16;
    let man = bits & ((1u64 << 52) - 1);
    let (e, m): (u16, u64) = if exp == 0x7ff {
        (0x7fff, (1u64 << 63) | (man << 11))
    } else if exp == 0 {
        assert_eq!(man, 0, "no subnormals in the oracle");
        (0, 0)
    } else {
        (exp + 16383 - 1023, (1u64 << 63) | (man << 11))
    };
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&m.to_le_bytes());
    out[8..10].copy_from_slice(&((sign << 15) | e).to_le_bytes());
    out
}

/// x87 -> f64 (exact for the values the oracle produces). NaN maps to f64::NAN with
/// the sign kept.
fn x87_to_f64(b: &[u8]) -> f64 {
    let m = u64::from_le_bytes(b[..8].try_into().unwrap());
    let se = u16::from_le_bytes(b[8..10].try_into().unwrap());
    let sign = if se >> 15 == 1 { -1.0 } else { 1.0 };
    let e = (se & 0x7fff) as i32;
    if e == 0x7fff {
        return if m << 1 == 0 {
            sign * f64::INFINITY
        } else {
            f64::NAN.copysign(sign)
        };
    }
    if e == 0 && m == 0 {
        return sign * 0.0;
    }
    sign * (m as f64) * 2f64.powi(e - 16383 - 63)
}

/// f64 -> IEEE binary128 (little-endian). Exact.
fn f64_to_q(v: f64) -> [u8; 16] {
    let bits = v.to_bits();
    let sign = (bits >> 63) as u128;
    let exp = ((bits >> 52) & 0x7ff) as u128;
    let man = (bits & ((1u64 << 52) - 1)) as u128;
    let (e, m) = if exp == 0x7ff {
        (0x7fffu128, man << 60)
    } else if exp == 0 {
        assert_eq!(man, 0);
        (0, 0)
    } else {
        (exp + 16383 - 1023, man << 60)
    };
    ((sign << 127) | (e << 112) | m).to_le_bytes()
}

fn q_to_f64(b: &[u8]) -> f64 {
    let x = u128::from_le_bytes(b[..16].try_into().unwrap());
    let sign = if x >> 127 == 1 { -1.0 } else { 1.0 };
    let e = ((x >> 112) & 0x7fff) as i32;
    let m = x & ((1u128 << 112) - 1);
    if e == 0x7fff {
        return if m == 0 {
            sign * f64::INFINITY
        } else {
            f64::NAN.copysign(sign)
        };
    }
    if e == 0 && m == 0 {
        return sign * 0.0;
    }
    let full = (1u128 << 112) | m;
    sign * (full as f64) * 2f64.powi(e - 16383 - 112)
}

/// binary16 -> f64 by the definition (sign, exponent, fraction).
fn half_value(h: u16) -> f64 {
    let s = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((h >> 10) & 0x1f) as i32;
    let f = (h & 0x3ff) as f64;
    match e {
        0 => s * f * 2f64.powi(-24),
        31 if f == 0.0 => s * f64::INFINITY,
        31 => f64::NAN,
        _ => s * (1.0 + f / 1024.0) * 2f64.powi(e - 15),
    }
}

/// f64 -> binary16, round to nearest even, by searching the sorted finite values.
fn half_round(v: f64, table: &[(f64, u16)]) -> u16 {
    if v.is_nan() {
        return 0x7e00;
    }
    if v == 0.0 {
        return if v.is_sign_negative() { 0x8000 } else { 0 };
    }
    let max = 65504.0;
    // beyond max + half an ulp (2^15 * 2^-11 / 2 ... = 16) rounds to infinity
    if v.abs() >= max + 16.0 {
        return if v < 0.0 { 0xfc00 } else { 0x7c00 };
    }
    let i = table.partition_point(|&(x, _)| x < v);
    let mut best: Option<(f64, u16)> = None;
    for &(x, h) in &table[i.saturating_sub(1)..(i + 1).min(table.len())] {
        let d = (x - v).abs();
        best = match best {
            None => Some((d, h)),
            Some((bd, bh)) => {
                if d < bd || (d == bd && h & 1 == 0 && bh & 1 == 1) {
                    Some((d, h))
                } else {
                    Some((bd, bh))
                }
            }
        };
    }
    let h = best.unwrap().1;
    // a result that rounds to zero keeps the sign of v
    if h & 0x7fff == 0 {
        return if v < 0.0 { 0x8000 } else { 0 };
    }
    h
}

fn half_table() -> Vec<(f64, u16)> {
    let mut t: Vec<(f64, u16)> = (0..=0xffffu32)
        .map(|h| h as u16)
        .filter(|&h| (h >> 10) & 0x1f != 31 && h != 0x8000)
        .map(|h| (half_value(h), h))
        .collect();
    t.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    t
}

// ---------------------------------------------------------------------------------------
// the oracle

fn truthy(x: i128) -> bool {
    x != 0
}

/// Integer semantics through i128, truncated to `bits` (two's complement wrap).
fn int_op(op: BuiltinOp, a: i128, b: i128, bits: u32, signed: bool) -> i128 {
    let r: i128 = match op {
        BuiltinOp::Max => a.max(b),
        BuiltinOp::Min => a.min(b),
        BuiltinOp::Sum => a + b,
        BuiltinOp::Prod => a.wrapping_mul(b), // low bits exact; only they are kept
        BuiltinOp::Land => (truthy(a) && truthy(b)) as i128,
        BuiltinOp::Lor => (truthy(a) || truthy(b)) as i128,
        BuiltinOp::Lxor => (truthy(a) != truthy(b)) as i128,
        BuiltinOp::Band => a & b,
        BuiltinOp::Bor => a | b,
        BuiltinOp::Bxor => a ^ b,
        _ => unreachable!(),
    };
    let mask = (1i128 << bits) - 1;
    let u = r & mask;
    if signed && u >> (bits - 1) == 1 {
        u - (1i128 << bits)
    } else {
        u
    }
}

fn read_int(b: &[u8], signed: bool) -> i128 {
    let mut v: i128 = 0;
    for (i, &x) in b.iter().enumerate() {
        v |= (x as i128) << (8 * i);
    }
    let bits = 8 * b.len() as u32;
    if signed && (v >> (bits - 1)) & 1 == 1 {
        v - (1i128 << bits)
    } else {
        v
    }
}

fn write_int(v: i128, out: &mut [u8]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = (v >> (8 * i)) as u8;
    }
}

/// The documented float MAX/MIN by case analysis, on f64 values; `pick_a` says which
/// operand's bits the result carries.
fn float_pick(op: BuiltinOp, a: f64, b: f64) -> bool {
    let max = op == BuiltinOp::Max;
    if a.is_nan() {
        return true;
    }
    if b.is_nan() {
        return false;
    }
    if a == 0.0 && b == 0.0 {
        // MAX prefers +0, MIN prefers -0; if both have the same sign either will do
        return if max {
            a.is_sign_positive()
        } else {
            a.is_sign_negative()
        };
    }
    if max {
        a >= b
    } else {
        a <= b
    }
}

/// One pair element: value and index as f64 (exact for every pair type's range here).
fn loc_pick(op: BuiltinOp, av: f64, ai: f64, bv: f64, bi: f64) -> bool {
    match (av.is_nan(), bv.is_nan()) {
        (true, false) => return true,
        (false, true) => return false,
        (true, true) => return ai < bi,
        _ => {}
    }
    if av == bv {
        return ai < bi;
    }
    if op == BuiltinOp::Maxloc {
        av > bv
    } else {
        av < bv
    }
}

/// The expected inout after `inout = a op inout`, one element at a time.
fn oracle(
    op: BuiltinOp,
    p: &Predef,
    a: &[u8],
    b: &[u8],
    count: usize,
    ht: &[(f64, u16)],
) -> Vec<u8> {
    let mut out = b.to_vec();
    let ext = p.extent;
    for i in 0..count {
        let x = &a[i * ext..];
        let y = &b[i * ext..];
        let o = &mut out[i * ext..];
        match p.elem {
            Elem::I8
            | Elem::I16
            | Elem::I32
            | Elem::I64
            | Elem::U8
            | Elem::U16
            | Elem::U32
            | Elem::U64
            | Elem::Byte => {
                let signed = matches!(p.elem, Elem::I8 | Elem::I16 | Elem::I32 | Elem::I64);
                let n = p.size;
                let r = int_op(
                    op,
                    read_int(&x[..n], signed),
                    read_int(&y[..n], signed),
                    8 * n as u32,
                    signed,
                );
                write_int(r, &mut o[..n]);
            }
            Elem::CBool | Elem::FLogical => {
                let n = p.size;
                let (va, vb) = (read_int(&x[..n], true) != 0, read_int(&y[..n], true) != 0);
                let r = match op {
                    BuiltinOp::Land => va && vb,
                    BuiltinOp::Lor => va || vb,
                    BuiltinOp::Lxor => va != vb,
                    _ => unreachable!(),
                };
                write_int(r as i128, &mut o[..n]);
            }
            Elem::F32 | Elem::F64 => {
                let n = p.size;
                let get = |s: &[u8]| -> f64 {
                    if n == 4 {
                        f32::from_le_bytes(s[..4].try_into().unwrap()) as f64
                    } else {
                        f64::from_le_bytes(s[..8].try_into().unwrap())
                    }
                };
                let (va, vb) = (get(x), get(y));
                match op {
                    BuiltinOp::Max | BuiltinOp::Min => {
                        if float_pick(op, va, vb) {
                            o[..n].copy_from_slice(&x[..n]);
                        }
                    }
                    _ => {
                        if n == 4 {
                            let (fa, fb) = (va as f32, vb as f32);
                            let r = if op == BuiltinOp::Sum {
                                fa + fb
                            } else {
                                fa * fb
                            };
                            o[..4].copy_from_slice(&r.to_le_bytes());
                        } else {
                            let r = if op == BuiltinOp::Sum {
                                va + vb
                            } else {
                                va * vb
                            };
                            o[..8].copy_from_slice(&r.to_le_bytes());
                        }
                    }
                }
            }
            Elem::F16 => {
                let ha = u16::from_le_bytes(x[..2].try_into().unwrap());
                let hb = u16::from_le_bytes(y[..2].try_into().unwrap());
                let (va, vb) = (half_value(ha), half_value(hb));
                let r = match op {
                    BuiltinOp::Max | BuiltinOp::Min => {
                        if float_pick(op, va, vb) {
                            ha
                        } else {
                            hb
                        }
                    }
                    BuiltinOp::Sum => half_round(va + vb, ht),
                    _ => half_round(va * vb, ht),
                };
                o[..2].copy_from_slice(&r.to_le_bytes());
            }
            Elem::LongDouble | Elem::Float128 => {
                let ld = p.elem == Elem::LongDouble;
                let get = |s: &[u8]| if ld { x87_to_f64(s) } else { q_to_f64(s) };
                let put = |v: f64| if ld { f64_to_x87(v) } else { f64_to_q(v) };
                let bytes = if ld { 10 } else { 16 };
                let (va, vb) = (get(x), get(y));
                match op {
                    BuiltinOp::Max | BuiltinOp::Min => {
                        if float_pick(op, va, vb) {
                            o[..bytes].copy_from_slice(&x[..bytes]);
                        }
                    }
                    _ => {
                        let r = if op == BuiltinOp::Sum {
                            va + vb
                        } else {
                            va * vb
                        };
                        if r.is_nan() {
                            // NaN payloads differ between formats: mark, compare by class
                            o[..bytes].copy_from_slice(&put(f64::NAN)[..bytes]);
                        } else {
                            o[..bytes].copy_from_slice(&put(r)[..bytes]);
                        }
                    }
                }
            }
            Elem::ComplexF32 | Elem::ComplexF64 => {
                let h = p.size / 2;
                macro_rules! cplx {
                    ($t:ty) => {{
                        let g = |s: &[u8], k: usize| {
                            <$t>::from_le_bytes(s[k * h..(k + 1) * h].try_into().unwrap())
                        };
                        let (ar, ai, br, bi) = (g(x, 0), g(x, 1), g(y, 0), g(y, 1));
                        let (re, im) = if op == BuiltinOp::Sum {
                            (ar + br, ai + bi)
                        } else {
                            (ar * br - ai * bi, ar * bi + ai * br)
                        };
                        o[..h].copy_from_slice(&re.to_le_bytes());
                        o[h..2 * h].copy_from_slice(&im.to_le_bytes());
                    }};
                }
                if h == 4 {
                    cplx!(f32)
                } else {
                    cplx!(f64)
                }
            }
            Elem::ComplexLongDouble | Elem::ComplexFloat128 => {
                let ld = p.elem == Elem::ComplexLongDouble;
                let get = |s: &[u8]| if ld { x87_to_f64(s) } else { q_to_f64(s) };
                let put = |v: f64| if ld { f64_to_x87(v) } else { f64_to_q(v) };
                let bytes = if ld { 10 } else { 16 };
                let (ar, ai, br, bi) = (get(x), get(&x[16..]), get(y), get(&y[16..]));
                let (re, im) = if op == BuiltinOp::Sum {
                    (ar + br, ai + bi)
                } else {
                    (ar * br - ai * bi, ar * bi + ai * br)
                };
                let fix = |v: f64| if v.is_nan() { f64::NAN } else { v };
                o[..bytes].copy_from_slice(&put(fix(re))[..bytes]);
                o[16..16 + bytes].copy_from_slice(&put(fix(im))[..bytes]);
            }
            e if e.is_pair() => {
                let (vn, ioff, in_) = pair_layout(e);
                let val = |s: &[u8]| -> f64 {
                    match e {
                        Elem::FloatInt | Elem::TwoReal => {
                            f32::from_le_bytes(s[..4].try_into().unwrap()) as f64
                        }
                        Elem::DoubleInt | Elem::TwoDoublePrecision => {
                            f64::from_le_bytes(s[..8].try_into().unwrap())
                        }
                        Elem::LongDoubleInt => x87_to_f64(s),
                        _ => read_int(&s[..vn], true) as f64,
                    }
                };
                let idx = |s: &[u8]| -> f64 {
                    match e {
                        Elem::TwoReal => {
                            f32::from_le_bytes(s[ioff..ioff + 4].try_into().unwrap()) as f64
                        }
                        Elem::TwoDoublePrecision => {
                            f64::from_le_bytes(s[ioff..ioff + 8].try_into().unwrap())
                        }
                        _ => read_int(&s[ioff..ioff + in_], true) as f64,
                    }
                };
                if loc_pick(op, val(x), idx(x), val(y), idx(y)) {
                    o[..vn].copy_from_slice(&x[..vn]);
                    o[ioff..ioff + in_].copy_from_slice(&x[ioff..ioff + in_]);
                }
            }
            _ => unreachable!("{:?}", p.elem),
        }
    }
    out
}

/// (value bytes, index offset, index bytes) of a pair kind.
fn pair_layout(e: Elem) -> (usize, usize, usize) {
    match e {
        Elem::FloatInt => (4, 4, 4),
        Elem::DoubleInt => (8, 8, 4),
        Elem::LongInt => (8, 8, 4),
        Elem::ShortInt => (2, 4, 4),
        Elem::LongDoubleInt => (10, 16, 4),
        Elem::TwoInt | Elem::TwoInteger | Elem::TwoReal => (4, 4, 4),
        Elem::TwoDoublePrecision => (8, 8, 8),
        _ => unreachable!(),
    }
}

// ---------------------------------------------------------------------------------------
// data generation

fn int_extreme(r: &mut Rng, n: usize) -> Vec<u8> {
    let v: u64 = match r.below(8) {
        0 => 0,
        1 => u64::MAX,                  // -1 / max unsigned
        2 => 1u64 << (8 * n - 1),       // min signed
        3 => (1u64 << (8 * n - 1)) - 1, // max signed
        4 => 1,
        5 => r.below(5),
        _ => r.next(),
    };
    v.to_le_bytes()[..n].to_vec()
}

fn gen_elem(p: &Predef, r: &mut Rng, ht: &[(f64, u16)]) -> Vec<u8> {
    let mut e = vec![0xA5u8; p.extent]; // padding gets a recognisable pattern
    match p.elem {
        Elem::I8
        | Elem::I16
        | Elem::I32
        | Elem::I64
        | Elem::U8
        | Elem::U16
        | Elem::U32
        | Elem::U64
        | Elem::Byte => e.copy_from_slice(&int_extreme(r, p.size)),
        Elem::CBool => e[0] = [0u8, 1, 2, 0xff, 0x80][r.below(5) as usize],
        Elem::FLogical => {
            let v: i32 = [0, 1, -1, 2, i32::MIN, 0][r.below(6) as usize];
            e.copy_from_slice(&v.to_le_bytes());
        }
        Elem::F32 => e.copy_from_slice(&(f64_special(r) as f32).to_le_bytes()),
        Elem::F64 => e.copy_from_slice(&f64_special(r).to_le_bytes()),
        Elem::F16 => {
            let h = match r.below(4) {
                0 => [0x7e00u16, 0xfe00, 0x7c00, 0xfc00, 0, 0x8000, 0x0001, 0x7bff]
                    [r.below(8) as usize],
                1 => half_round((r.below(9) as f64) - 4.0, ht),
                _ => {
                    let h = r.next() as u16;
                    if (h >> 10) & 0x1f == 31 {
                        h & 0xbfff
                    } else {
                        h
                    }
                }
            };
            e.copy_from_slice(&h.to_le_bytes());
        }
        Elem::LongDouble => e[..10].copy_from_slice(&f64_to_x87(f64_exact(r))[..10]),
        Elem::Float128 => e.copy_from_slice(&f64_to_q(f64_exact(r))),
        Elem::ComplexF32 => {
            for k in 0..2 {
                e[4 * k..4 * k + 4].copy_from_slice(&(f64_special(r) as f32).to_le_bytes());
            }
        }
        Elem::ComplexF64 => {
            for k in 0..2 {
                e[8 * k..8 * k + 8].copy_from_slice(&f64_special(r).to_le_bytes());
            }
        }
        Elem::ComplexLongDouble => {
            for k in 0..2 {
                e[16 * k..16 * k + 10].copy_from_slice(&f64_to_x87(f64_exact(r))[..10]);
            }
        }
        Elem::ComplexFloat128 => {
            for k in 0..2 {
                e[16 * k..16 * k + 16].copy_from_slice(&f64_to_q(f64_exact(r)));
            }
        }
        el if el.is_pair() => {
            let (vn, ioff, in_) = pair_layout(el);
            // few distinct values and indices: many ties
            let v = r.below(4) as f64;
            let v = if r.below(16) == 0 { f64::NAN } else { v };
            let i = r.below(5) as i64 - 2;
            match el {
                Elem::FloatInt | Elem::TwoReal => e[..4].copy_from_slice(&(v as f32).to_le_bytes()),
                Elem::DoubleInt | Elem::TwoDoublePrecision => {
                    e[..8].copy_from_slice(&v.to_le_bytes())
                }
                Elem::LongDoubleInt => e[..10].copy_from_slice(&f64_to_x87(v)[..10]),
                _ => {
                    // (values beyond 32 bits now and then, for the 64-bit ones)
                    let iv = if v.is_nan() {
                        -(r.below(3) as i64)
                    } else if r.below(8) == 0 {
                        (v as i64 - 2) << 40
                    } else {
                        v as i64
                    };
                    e[..vn].copy_from_slice(&iv.to_le_bytes()[..vn]);
                }
            }
            match el {
                Elem::TwoReal => e[ioff..ioff + 4].copy_from_slice(&(i as f32).to_le_bytes()),
                Elem::TwoDoublePrecision => {
                    e[ioff..ioff + 8].copy_from_slice(&(i as f64).to_le_bytes())
                }
                _ => e[ioff..ioff + in_].copy_from_slice(&i.to_le_bytes()[..in_]),
            }
        }
        _ => {}
    }
    e
}

/// `count` floats of `p` (MPI_FLOAT or MPI_DOUBLE): mostly non-zero numbers (small
/// integers, for ties, and random ones), one in 40 a `f64_special` (NaN, ±0, ±inf...).
fn gen_sparse_float(p: &Predef, count: usize, r: &mut Rng) -> Vec<u8> {
    let mut v = Vec::with_capacity(count * p.size);
    for _ in 0..count {
        let x = match r.below(40) {
            0 => f64_special(r),
            1..=15 => [-3.0, -2.0, -1.0, 1.0, 2.0, 3.0][r.below(6) as usize],
            _ => (r.next() as i64 as f64) / 1e15,
        };
        if p.size == 4 {
            v.extend((x as f32).to_le_bytes());
        } else {
            v.extend(x.to_le_bytes());
        }
    }
    v
}

fn gen(p: &Predef, count: usize, r: &mut Rng, ht: &[(f64, u16)]) -> Vec<u8> {
    let mut v = Vec::with_capacity(count * p.extent);
    for _ in 0..count {
        v.extend(gen_elem(p, r, ht));
    }
    v
}

/// Equality of results, with NaN results compared by "is a NaN" where the formats'
/// payloads are not ours to define (long double and binary128 arithmetic).
fn same(p: &Predef, op: BuiltinOp, got: &[u8], want: &[u8]) -> bool {
    let arith = matches!(op, BuiltinOp::Sum | BuiltinOp::Prod);
    match p.elem {
        Elem::LongDouble | Elem::ComplexLongDouble | Elem::Float128 | Elem::ComplexFloat128
            if arith =>
        {
            let ld = matches!(p.elem, Elem::LongDouble | Elem::ComplexLongDouble);
            let get = |s: &[u8]| if ld { x87_to_f64(s) } else { q_to_f64(s) };
            got.chunks(16).zip(want.chunks(16)).all(|(g, w)| {
                let (a, b) = (get(g), get(w));
                (a.is_nan() && b.is_nan()) || (a.to_bits() == b.to_bits() && g[10..] == w[10..])
            })
        }
        Elem::F32 | Elem::F64 | Elem::ComplexF32 | Elem::ComplexF64 | Elem::F16 if arith => {
            // arithmetic NaNs: the hardware picks the payload; compare NaN-ness
            let n = match p.elem {
                Elem::F16 => 2,
                Elem::F32 | Elem::ComplexF32 => 4,
                _ => 8,
            };
            got.chunks(n).zip(want.chunks(n)).all(|(g, w)| {
                let nan = |s: &[u8]| match n {
                    2 => {
                        let h = u16::from_le_bytes(s.try_into().unwrap());
                        (h >> 10) & 0x1f == 31 && h & 0x3ff != 0
                    }
                    4 => f32::from_le_bytes(s.try_into().unwrap()).is_nan(),
                    _ => f64::from_le_bytes(s.try_into().unwrap()).is_nan(),
                };
                if nan(g) || nan(w) {
                    nan(g) && nan(w)
                } else {
                    g == w
                }
            })
        }
        _ => got == want,
    }
}

fn run_one(op: BuiltinOp, p: &Predef, count: usize, offset: usize, seed: u64, ht: &[(f64, u16)]) {
    let mut r = Rng(seed | 1);
    let a = gen(p, count, &mut r, ht);
    let b = gen(p, count, &mut r, ht);
    let want = oracle(op, p, &a, &b, count, ht);
    // copy into buffers shifted by `offset` bytes to exercise unaligned access
    let mut abuf = vec![0u8; a.len() + offset];
    abuf[offset..].copy_from_slice(&a);
    let mut bbuf = vec![0u8; b.len() + offset];
    bbuf[offset..].copy_from_slice(&b);
    let o = OpRef::Builtin(op);
    apply(&o, p.handle, &abuf[offset..], &mut bbuf[offset..], count).unwrap();
    let got = &bbuf[offset..];
    if !same(p, op, got, &want) {
        let bad = (0..count)
            .find(|&i| {
                let s = i * p.extent..(i + 1) * p.extent;
                !same(p, op, &got[s.clone()], &want[s])
            })
            .unwrap_or(0);
        let s = bad * p.extent..(bad + 1) * p.extent;
        panic!(
            "{} on {} count {count} offset {offset}: element {bad}: in {:02x?} inout {:02x?} got {:02x?} want {:02x?}",
            op.name(),
            p.name,
            &a[s.clone()],
            &b[s.clone()],
            &got[s.clone()],
            &want[s]
        );
    }
}

// ---------------------------------------------------------------------------------------
// the tests

#[test]
fn matrix_against_oracle() {
    let ht = half_table();
    let mut checked = 0;
    for p in PREDEFINED.iter() {
        for op in BuiltinOp::ALL {
            if !valid(op, p.class) {
                continue;
            }
            for (k, &count) in [0usize, 1, 2, 3, 7, 31, 64, 1001].iter().enumerate() {
                for offset in [0usize, 1] {
                    run_one(
                        op,
                        p,
                        count,
                        offset,
                        (p.handle as u64) ^ (k as u64 * 7919) ^ offset as u64,
                        &ht,
                    );
                }
            }
            checked += 1;
        }
    }
    // every valid (op, type) pair of the table was exercised
    assert!(checked > 200, "{checked}");
}

#[test]
fn large_counts() {
    let ht = half_table();
    for name in [
        "MPI_DOUBLE",
        "MPI_INT",
        "MPI_FLOAT",
        "MPI_UNSIGNED_CHAR",
        "MPI_LONG_DOUBLE",
        "MPI_DOUBLE_INT",
        "MPI_C_DOUBLE_COMPLEX",
        "MPIX_C_FLOAT16",
        "MPI_LOGICAL",
    ] {
        let p = PREDEFINED.iter().find(|p| p.name == name).unwrap();
        for op in BuiltinOp::ALL {
            if valid(op, p.class) {
                run_one(op, p, 100_003, 1, 42, &ht);
                run_one(op, p, 100_003, 0, 43, &ht);
            }
        }
    }
}

#[test]
fn validity_table_errors() {
    let cases = [
        (MPI_BAND, MPI_DOUBLE),
        (MPI_SUM, MPI_CHAR),
        (MPI_MAX, MPI_CHARACTER),
        (MPI_SUM, MPI_C_BOOL),
        (MPI_LAND, MPI_INTEGER),
        (MPI_LAND, MPI_DOUBLE),
        (MPI_MAX, MPI_C_DOUBLE_COMPLEX),
        (MPI_MINLOC, MPI_INT),
        (MPI_SUM, MPI_2INT),
        (MPI_SUM, MPI_BYTE),
        (MPI_BOR, MPI_LOGICAL),
        (MPI_SUM, MPI_WCHAR),
        (MPI_SUM, MPI_PACKED),
        (MPI_REPLACE, MPI_INT),
        (MPI_NO_OP, MPI_INT),
        (MPI_BXOR, MPI_FLOAT),
        (MPI_LXOR, MPI_AINT),
    ];
    for (o, t) in cases {
        let b = BuiltinOp::from_handle(o).unwrap();
        let e: MpiError = kernel_for(b, t).map(|_| ()).unwrap_err();
        assert_eq!(e.class, MPI_ERR_OP, "{}", e.msg);
        assert!(e.msg.contains(b.name()), "{}", e.msg);
        assert!(
            e.msg.contains(predefined::lookup(t).unwrap().name),
            "{}",
            e.msg
        );
        let mut x = vec![0u8; 64];
        let y = vec![0u8; 64];
        assert_eq!(
            apply(&OpRef::Builtin(b), t, &y, &mut x, 1)
                .unwrap_err()
                .class,
            MPI_ERR_OP
        );
    }
    let e = kernel_for(BuiltinOp::Band, MPI_DOUBLE)
        .map(|_| ())
        .unwrap_err();
    assert_eq!(
        e.msg,
        "MPI_BAND is not defined for datatype MPI_DOUBLE (floating point)"
    );
    // a sample of valid ones
    for (o, t) in [
        (MPI_LAND, MPI_C_BOOL),
        (MPI_LXOR, MPI_LOGICAL),
        (MPI_BAND, MPI_BYTE),
        (MPI_BAND, MPI_INTEGER),
        (MPI_SUM, MPI_AINT),
        (MPI_SUM, MPI_COMPLEX32),
        (MPI_MAX, MPI_REAL16),
        (MPI_MAX, MPI_SIGNED_CHAR),
        (MPI_LAND, MPI_UNSIGNED_CHAR),
        (MPI_MAXLOC, MPI_LONG_DOUBLE_INT),
        (MPI_MINLOC, MPI_2DOUBLE_PRECISION),
        (MPI_PROD, MPI_COUNT),
    ] {
        assert!(
            kernel_for(BuiltinOp::from_handle(o).unwrap(), t).is_ok(),
            "{o:#x} {t:#x}"
        );
    }
}

#[test]
fn datatype_errors() {
    let e = kernel_for(BuiltinOp::Sum, MPI_DATATYPE_NULL)
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.class, MPI_ERR_TYPE);
    assert!(e.msg.contains("MPI_DATATYPE_NULL"));
    let e = kernel_for(BuiltinOp::Sum, 12345).map(|_| ()).unwrap_err();
    assert_eq!(e.class, MPI_ERR_TYPE);
    let e = kernel_for(BuiltinOp::Sum, MPI_INTEGER16)
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.class, MPI_ERR_TYPE);
}

fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}
fn to_f64s(b: &[u8]) -> Vec<f64> {
    b.chunks(8)
        .map(|c| f64::from_ne_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn float_max_min_documented_rules() {
    let nan1 = f64::from_bits(0x7ff8_0000_0000_0001);
    let nan2 = f64::from_bits(0xfff8_0000_0000_0002);
    let a = f64s(&[
        nan1,
        1.0,
        nan1,
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
    ]);
    let b = f64s(&[1.0, nan2, nan2, -0.0, 0.0, f64::NAN, 5.0, -0.0]);
    let (kmax, _) = kernel_for(BuiltinOp::Max, MPI_DOUBLE).unwrap();
    let (kmin, _) = kernel_for(BuiltinOp::Min, MPI_DOUBLE).unwrap();
    let mut x = b.clone();
    kmax(&a, &mut x);
    let r = to_f64s(&x);
    assert_eq!(r[0].to_bits(), nan1.to_bits()); // inv's NaN
    assert_eq!(r[1].to_bits(), nan2.to_bits()); // inout's NaN
    assert_eq!(r[2].to_bits(), nan1.to_bits()); // both: inv's
    assert_eq!(r[3].to_bits(), 0.0f64.to_bits()); // MAX(+0,-0) = +0
    assert_eq!(r[4].to_bits(), 0.0f64.to_bits()); // MAX(-0,+0) = +0
    assert!(r[5].is_nan());
    assert_eq!(r[6], 5.0);
    assert_eq!(r[7].to_bits(), (-0.0f64).to_bits());
    let mut y = b.clone();
    kmin(&a, &mut y);
    let r = to_f64s(&y);
    assert_eq!(r[0].to_bits(), nan1.to_bits());
    assert_eq!(r[3].to_bits(), (-0.0f64).to_bits()); // MIN(+0,-0) = -0
    assert_eq!(r[4].to_bits(), (-0.0f64).to_bits());
    assert_eq!(r[6], f64::NEG_INFINITY);
    // SUM with infinities
    let (ksum, _) = kernel_for(BuiltinOp::Sum, MPI_DOUBLE).unwrap();
    let mut z = f64s(&[f64::NEG_INFINITY, 1.0, -0.0]);
    ksum(&f64s(&[f64::INFINITY, f64::INFINITY, -0.0]), &mut z);
    let r = to_f64s(&z);
    assert!(r[0].is_nan());
    assert_eq!(r[1], f64::INFINITY);
    assert_eq!(r[2].to_bits(), (-0.0f64).to_bits());
}

#[test]
fn long_double_rules() {
    let (kmax, _) = kernel_for(BuiltinOp::Max, MPI_LONG_DOUBLE).unwrap();
    let (kmin, _) = kernel_for(BuiltinOp::Min, MPI_LONG_DOUBLE).unwrap();
    let vals = |v: &[f64]| -> Vec<u8> { v.iter().flat_map(|&x| f64_to_x87(x)).collect() };
    let a = vals(&[0.0, -0.0, f64::NAN, 2.0]);
    let b = vals(&[-0.0, 0.0, 1.0, f64::NAN]);
    let mut x = b.clone();
    // padding of inout keeps its value
    for i in 0..4 {
        x[i * 16 + 10..i * 16 + 16].fill(0xEE);
    }
    kmax(&a, &mut x);
    let r: Vec<f64> = x.chunks(16).map(x87_to_f64).collect();
    assert_eq!(r[0].to_bits(), 0.0f64.to_bits());
    assert_eq!(r[1].to_bits(), 0.0f64.to_bits());
    assert!(r[2].is_nan() && r[3].is_nan());
    assert!(x.chunks(16).all(|c| c[10..] == [0xEE; 6]));
    let mut y = b.clone();
    kmin(&a, &mut y);
    let r: Vec<f64> = y.chunks(16).map(x87_to_f64).collect();
    assert_eq!(r[0].to_bits(), (-0.0f64).to_bits());
    assert_eq!(r[1].to_bits(), (-0.0f64).to_bits());
}

#[test]
fn integer_extremes_wrap() {
    let (ks, _) = kernel_for(BuiltinOp::Sum, MPI_INT).unwrap();
    let (kp, _) = kernel_for(BuiltinOp::Prod, MPI_LONG).unwrap();
    let mut x: Vec<u8> = [i32::MAX, i32::MIN, -1]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    ks(
        &[1i32, -1, 1]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<u8>>(),
        &mut x,
    );
    let r: Vec<i32> = x
        .chunks(4)
        .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(r, vec![i32::MIN, i32::MAX, 0]);
    let mut y = i64::MIN.to_ne_bytes().to_vec();
    kp(&(-1i64).to_ne_bytes(), &mut y);
    assert_eq!(i64::from_ne_bytes(y[..].try_into().unwrap()), i64::MIN);
    let (kmx, _) = kernel_for(BuiltinOp::Max, MPI_UNSIGNED_LONG).unwrap();
    let mut z = 1u64.to_ne_bytes().to_vec();
    kmx(&u64::MAX.to_ne_bytes(), &mut z);
    assert_eq!(u64::from_ne_bytes(z[..].try_into().unwrap()), u64::MAX);
}

#[test]
fn logical_values_other_than_0_1() {
    let (k, _) = kernel_for(BuiltinOp::Land, MPI_LOGICAL).unwrap();
    let mut x: Vec<u8> = [2i32, -1, 0, 7]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    k(
        &[4i32, 1, 3, 0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<u8>>(),
        &mut x,
    );
    let r: Vec<i32> = x
        .chunks(4)
        .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(r, vec![1, 1, 0, 0]);
    let (k, _) = kernel_for(BuiltinOp::Lxor, MPI_C_BOOL).unwrap();
    let mut x = vec![2u8, 0, 0xff, 0];
    k(&[1u8, 5, 3, 0], &mut x);
    assert_eq!(x, vec![0, 1, 0, 0]);
    let (k, _) = kernel_for(BuiltinOp::Lor, MPI_INT).unwrap();
    let mut x: Vec<u8> = [0i32, -5].iter().flat_map(|v| v.to_ne_bytes()).collect();
    k(
        &[0i32, 0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<u8>>(),
        &mut x,
    );
    assert_eq!(
        x,
        [0i32, 1]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<u8>>()
    );
}

#[test]
fn minloc_ties_take_smaller_index() {
    let pack = |v: &[(f64, i32)]| -> Vec<u8> {
        v.iter()
            .flat_map(|&(x, i)| {
                let mut e = vec![0xCCu8; 16];
                e[..8].copy_from_slice(&x.to_ne_bytes());
                e[8..12].copy_from_slice(&i.to_ne_bytes());
                e
            })
            .collect()
    };
    let a = pack(&[(1.0, 5), (1.0, 2), (0.5, 9), (2.0, 1)]);
    let b = pack(&[(1.0, 3), (1.0, 4), (1.0, 0), (2.0, 1)]);
    let (k, ext) = kernel_for(BuiltinOp::Minloc, MPI_DOUBLE_INT).unwrap();
    assert_eq!(ext, 16);
    let mut x = b.clone();
    k(&a, &mut x);
    assert_eq!(x, pack(&[(1.0, 3), (1.0, 2), (0.5, 9), (2.0, 1)]));
    let (k, _) = kernel_for(BuiltinOp::Maxloc, MPI_DOUBLE_INT).unwrap();
    let mut x = b.clone();
    k(&a, &mut x);
    assert_eq!(x, pack(&[(1.0, 3), (1.0, 2), (1.0, 0), (2.0, 1)]));
    // a last element without its padding (count*extent - 4 bytes) is still reduced
    let mut y = b[..60].to_vec();
    apply(
        &OpRef::Builtin(BuiltinOp::Minloc),
        MPI_DOUBLE_INT,
        &a[..60],
        &mut y,
        4,
    )
    .unwrap();
    assert_eq!(y[..], pack(&[(1.0, 3), (1.0, 2), (0.5, 9), (2.0, 1)])[..60]);
}

#[test]
fn count_zero_and_short_buffers() {
    let o = OpRef::Builtin(BuiltinOp::Sum);
    let mut e: Vec<u8> = vec![];
    apply(&o, MPI_DOUBLE, &[], &mut e, 0).unwrap();
    let mut x = vec![0u8; 8];
    let err = apply(&o, MPI_DOUBLE, &[0u8; 8], &mut x, 2).unwrap_err();
    assert_eq!(err.class, MPI_ERR_BUFFER);
}

#[test]
fn f16_conversion_roundtrip() {
    use super::kernels::{f32_to_half, half_to_f32};
    let ht = half_table();
    for h in 0..=0xffffu16 {
        let f = half_to_f32(h);
        if f.is_nan() {
            assert!((h >> 10) & 0x1f == 31 && h & 0x3ff != 0);
            continue;
        }
        assert_eq!(f as f64, half_value(h), "{h:#x}");
        assert_eq!(f32_to_half(f), h, "{h:#x}");
    }
    let mut r = Rng(99);
    for _ in 0..100_000 {
        let f = f32::from_bits(r.next() as u32);
        if f.is_nan() {
            continue;
        }
        assert_eq!(f32_to_half(f), half_round(f as f64, &ht), "{f:e}");
    }
}

// ---------------------------------------------------------------------------------------
// user-defined ops

unsafe extern "C" fn user_sum_i32(a: *mut c_void, b: *mut c_void, len: *mut c_int, dt: *mut i32) {
    // SAFETY: called by apply with `*len` i32 elements at a and b.
    unsafe {
        assert_eq!(*dt, MPI_INT);
        let a = std::slice::from_raw_parts(a as *const i32, *len as usize);
        let b = std::slice::from_raw_parts_mut(b as *mut i32, *len as usize);
        for (x, y) in a.iter().zip(b.iter_mut()) {
            *y = x.wrapping_add(*y);
        }
    }
}

/// Non-commutative: 2x2 matrix product inout = in * inout on f64[4] (as 4 MPI_DOUBLE).
unsafe extern "C" fn user_matmul(a: *mut c_void, b: *mut c_void, len: *mut c_int, _dt: *mut i32) {
    // SAFETY: called by apply with `*len` doubles at a and b, a multiple of 4.
    unsafe {
        let n = *len as usize;
        let a = std::slice::from_raw_parts(a as *const f64, n);
        let b = std::slice::from_raw_parts_mut(b as *mut f64, n);
        for (x, y) in a.chunks(4).zip(b.chunks_mut(4)) {
            let r = [
                x[0] * y[0] + x[1] * y[2],
                x[0] * y[1] + x[1] * y[3],
                x[2] * y[0] + x[3] * y[2],
                x[2] * y[1] + x[3] * y[3],
            ];
            y.copy_from_slice(&r);
        }
    }
}

#[test]
fn user_ops() {
    let h = create(UserFunc::Int(user_sum_i32), true).unwrap();
    assert_eq!(handle_kind(h), KIND_DIRECT);
    assert_eq!(handle_obj(h), OBJ_OP);
    let o = resolve(h).unwrap();
    assert!(is_commutative(&o));
    let a: Vec<u8> = (0..1001i32).flat_map(|v| v.to_ne_bytes()).collect();
    let mut b: Vec<u8> = (0..1001i32)
        .map(|v| v * 3)
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    apply(&o, MPI_INT, &a, &mut b, 1001).unwrap();
    let r: Vec<i32> = b
        .chunks(4)
        .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert!(r.iter().enumerate().all(|(i, &v)| v == 4 * i as i32));

    let m = create(UserFunc::Int(user_matmul), false).unwrap();
    let om = resolve(m).unwrap();
    assert!(!is_commutative(&om));
    let x = f64s(&[1.0, 2.0, 3.0, 4.0]);
    let mut y = f64s(&[0.0, 1.0, 1.0, 0.0]);
    apply(&om, MPI_DOUBLE, &x, &mut y, 4).unwrap();
    // in * inout, not inout * in
    assert_eq!(to_f64s(&y), vec![2.0, 1.0, 4.0, 3.0]);

    // free: the handle dies, an OpRef held by an operation in progress stays usable
    free(m).unwrap();
    assert_eq!(resolve(m).unwrap_err().class, MPI_ERR_OP);
    assert_eq!(free(m).unwrap_err().class, MPI_ERR_OP);
    let mut y = f64s(&[0.0, 1.0, 1.0, 0.0]);
    apply(&om, MPI_DOUBLE, &x, &mut y, 4).unwrap();
    free(h).unwrap();
}

#[test]
fn resolve_and_free_errors() {
    for b in BuiltinOp::ALL {
        assert_eq!(BuiltinOp::from_handle(b.handle()), Some(b));
        assert!(matches!(resolve(b.handle()).unwrap(), OpRef::Builtin(x) if x == b));
        assert!(is_commutative(&resolve(b.handle()).unwrap()));
        let e = free(b.handle()).unwrap_err();
        assert_eq!(e.class, MPI_ERR_OP);
        assert!(e.msg.contains(b.name()));
    }
    let e = resolve(MPI_OP_NULL).unwrap_err();
    assert_eq!(e.class, MPI_ERR_OP);
    assert!(e.msg.contains("MPI_OP_NULL"));
    assert_eq!(free(MPI_OP_NULL).unwrap_err().class, MPI_ERR_OP);
    assert_eq!(resolve(0x1234).unwrap_err().class, MPI_ERR_OP);
    assert_eq!(resolve(MPI_INT).unwrap_err().class, MPI_ERR_OP);
    assert_eq!(
        resolve(direct_handle(OBJ_OP, 0x3ff_0000))
            .unwrap_err()
            .class,
        MPI_ERR_OP
    );
}

#[test]
fn baseline_and_avx2_agree() {
    // The same generic loop compiled twice must give the same bits.
    use super::kernels::SimdLevel;
    if super::kernels::simd_level() < SimdLevel::Avx2 {
        return;
    }
    let ht = half_table();
    let p = PREDEFINED.iter().find(|p| p.name == "MPI_DOUBLE").unwrap();
    let mut r = Rng(5);
    let a = gen(p, 1003, &mut r, &ht);
    let b = gen(p, 1003, &mut r, &ht);
    for op in [
        BuiltinOp::Max,
        BuiltinOp::Min,
        BuiltinOp::Sum,
        BuiltinOp::Prod,
    ] {
        let k = kernel(op, Elem::F64).unwrap();
        let kb = super::kernels::kernel_at(op, Elem::F64, SimdLevel::Baseline).unwrap();
        let (mut x, mut y) = (b.clone(), b.clone());
        k(&a, &mut x);
        kb(&a, &mut y);
        // bit-identical, except that the payload of a NaN made by arithmetic may differ
        // (the compiler may commute the operands of + and *)
        assert!(same(p, op, &x, &y), "{}", op.name());
        if matches!(op, BuiltinOp::Max | BuiltinOp::Min) {
            assert_eq!(x, y, "{}", op.name());
        }
    }
}

/// Timing of the baseline, AVX2 and AVX-512 loops (run by hand:
/// `cargo test --release --lib op::tests::simd_timing -- --ignored --nocapture`).
#[test]
#[ignore]
fn simd_timing() {
    use super::kernels::{kernel_at, SimdLevel};
    use std::time::Instant;
    let cases = [
        (BuiltinOp::Sum, Elem::F64, 8),
        (BuiltinOp::Max, Elem::F64, 8),
        (BuiltinOp::Min, Elem::F32, 4),
        (BuiltinOp::Maxloc, Elem::DoubleInt, 16),
        (BuiltinOp::Sum, Elem::F32, 4),
        (BuiltinOp::Sum, Elem::I32, 4),
        (BuiltinOp::Max, Elem::I32, 4),
        (BuiltinOp::Prod, Elem::I64, 8),
        (BuiltinOp::Band, Elem::U8, 1),
        (BuiltinOp::Max, Elem::I64, 8),
        (BuiltinOp::Land, Elem::I32, 4),
        (BuiltinOp::Prod, Elem::ComplexF64, 16),
        (BuiltinOp::Sum, Elem::F16, 2),
    ];
    for n in [4096usize, 1 << 20] {
        for &(op, elem, sz) in &cases {
            let a = vec![1u8; n * sz + 1];
            let mut b = vec![2u8; n * sz + 1];
            let mut line = format!("{:>8} {:?} {:?}:", n, op, elem);
            for (lvl, off) in [
                (SimdLevel::Baseline, 0),
                (SimdLevel::Avx2, 0),
                (SimdLevel::Avx512, 0),
                (SimdLevel::Baseline, 1),
                (SimdLevel::Avx2, 1),
                (SimdLevel::Avx512, 1),
            ] {
                let k = kernel_at(op, elem, lvl).unwrap();
                let reps = (1 << 26) / (n * sz);
                let t = Instant::now();
                for _ in 0..reps {
                    k(&a[off..off + n * sz], &mut b[off..off + n * sz]);
                    std::hint::black_box(&mut b);
                }
                let ns = t.elapsed().as_nanos() as f64 / reps as f64;
                line += &format!("  {lvl:?}+{off}: {:.2} GB/s", (3 * n * sz) as f64 / ns);
            }
            println!("{line}");
        }
    }
}

#[test]
fn kernel_table_matches_kernel_for() {
    // `op as usize` indexes the table: it must be the op's position in ALL
    for (i, op) in BuiltinOp::ALL.into_iter().enumerate() {
        assert_eq!(op as usize, i);
    }
    for p in PREDEFINED.iter() {
        let p = predefined::lookup(p.handle).unwrap();
        for op in BuiltinOp::ALL {
            let fast = predefined_kernel(op, p);
            let slow = if valid(op, p.class) {
                kernel(op, p.elem).ok()
            } else {
                None
            };
            assert_eq!(
                fast.map(|k| k as usize),
                slow.map(|k| k as usize),
                "{} {}",
                op.name(),
                p.name
            );
        }
    }
    // a Predef that is not an entry of PREDEFINED misses the table
    let copy: &'static Predef = Box::leak(Box::new(PREDEFINED[1]));
    assert!(predefined_kernel(BuiltinOp::Sum, copy).is_none());
}

#[test]
fn hand_written_simd_kernels_match_baseline() {
    // The intrinsics kernels (float MAX/MIN, DOUBLE_INT MINLOC/MAXLOC, 64-bit integer
    // MAX/MIN) against the portable loops, bit for bit: random data with NaNs of both
    // signs and payloads, ±0, ±inf, integer extremes and many ties (for floats also
    // ordinary numbers with rare special values); every length 0..67 and some long
    // ones; both buffers at every misalignment 0..8; padding bytes of inout keep their
    // values.
    use super::kernels::{kernel_at, SimdLevel};
    let levels = vector_levels();
    if levels.is_empty() {
        return;
    }
    let ht = half_table();
    let cases = [
        ("MPI_DOUBLE", BuiltinOp::Max),
        ("MPI_DOUBLE", BuiltinOp::Min),
        ("MPI_FLOAT", BuiltinOp::Max),
        ("MPI_FLOAT", BuiltinOp::Min),
        ("MPI_DOUBLE_INT", BuiltinOp::Maxloc),
        ("MPI_DOUBLE_INT", BuiltinOp::Minloc),
        ("MPI_LONG", BuiltinOp::Max),
        ("MPI_LONG", BuiltinOp::Min),
        ("MPI_UNSIGNED_LONG", BuiltinOp::Max),
        ("MPI_UNSIGNED_LONG", BuiltinOp::Min),
        ("MPI_2INT", BuiltinOp::Maxloc),
        ("MPI_2INT", BuiltinOp::Minloc),
        ("MPI_2INTEGER", BuiltinOp::Minloc),
        ("MPI_FLOAT_INT", BuiltinOp::Maxloc),
        ("MPI_FLOAT_INT", BuiltinOp::Minloc),
        ("MPI_LONG_INT", BuiltinOp::Maxloc),
        ("MPI_LONG_INT", BuiltinOp::Minloc),
        ("MPI_2REAL", BuiltinOp::Maxloc),
        ("MPI_2REAL", BuiltinOp::Minloc),
        ("MPI_2DOUBLE_PRECISION", BuiltinOp::Maxloc),
        ("MPI_2DOUBLE_PRECISION", BuiltinOp::Minloc),
    ];
    let mut r = Rng(77);
    let counts: Vec<usize> = (0..67).chain([255, 256, 257, 1000, 4099]).collect();
    for (name, op) in cases {
        let p = PREDEFINED.iter().find(|p| p.name == name).unwrap();
        let kb = kernel_at(op, p.elem, SimdLevel::Baseline).unwrap();
        for &lvl in &levels {
            let kv = kernel_at(op, p.elem, lvl).unwrap();
            for &count in &counts {
                for off in 0..8 {
                    // half the time floats are ordinary numbers with a rare special
                    // value (the vector kernels' fast blocks, and blocks that leave it)
                    let sparse = matches!(p.elem, Elem::F32 | Elem::F64) && r.below(2) == 0;
                    let g = |r: &mut Rng| {
                        if sparse {
                            gen_sparse_float(p, count, r)
                        } else {
                            gen(p, count, r, &ht)
                        }
                    };
                    let a = g(&mut r);
                    let mut b = g(&mut r);
                    if p.extent != p.size {
                        // mark the padding of inout
                        for e in b.chunks_mut(p.extent) {
                            e[p.size..].fill(0xA5);
                        }
                    }
                    // with a probability of 1/4 make inv equal to inout (all ties), and
                    // of 1/4 equal but for a few elements (blocks where one lane changes)
                    let mut a = match r.below(4) {
                        0 => b.clone(),
                        1 => {
                            let mut c = b.clone();
                            for _ in 0..1 + count / 16 {
                                let e = r.below(count.max(1) as u64) as usize * p.extent;
                                let n = p.size.min(c.len().saturating_sub(e));
                                c[e..e + n].copy_from_slice(&a[e..e + n]);
                            }
                            c
                        }
                        _ => a,
                    };
                    if p.extent != p.size {
                        // inv's padding differs from inout's: it must not be copied
                        for e in a.chunks_mut(p.extent) {
                            e[p.size..].fill(0x5A);
                        }
                    }
                    let need = span(p, count).unwrap();
                    let mut abuf = vec![0u8; need + off];
                    abuf[off..].copy_from_slice(&a[..need]);
                    let mut x = vec![0u8; need + off];
                    x[off..].copy_from_slice(&b[..need]);
                    let mut y = x.clone();
                    kv(&abuf[off..], &mut x[off..]);
                    kb(&abuf[off..], &mut y[off..]);
                    assert_eq!(
                        x,
                        y,
                        "{name} {} {lvl:?} count {count} offset {off}",
                        op.name()
                    );
                    if p.extent != p.size {
                        for e in x[off..].chunks(p.extent) {
                            assert!(e[p.size..].iter().all(|&c| c == 0xA5), "padding written");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn every_level_agrees_with_baseline() {
    // Every kernel at every vector level this CPU has (the generic loops compiled for
    // AVX2 and AVX-512, and the hand-written ones) against the portable loops, on
    // every valid (op, predefined type): bit-identical, except arithmetic NaN payloads.
    use super::kernels::{kernel_at, simd_level, SimdLevel};
    let ht = half_table();
    let mut r = Rng(99);
    for lvl in [SimdLevel::Avx2, SimdLevel::Avx512] {
        if simd_level() < lvl {
            continue;
        }
        for p in PREDEFINED.iter() {
            for op in BuiltinOp::ALL {
                if !valid(op, p.class) {
                    continue;
                }
                let kb = kernel_at(op, p.elem, SimdLevel::Baseline).unwrap();
                let kv = kernel_at(op, p.elem, lvl).unwrap();
                for (count, off) in [(1usize, 0usize), (5, 3), (77, 1), (1003, 0), (1003, 5)] {
                    let a = gen(p, count, &mut r, &ht);
                    let b = gen(p, count, &mut r, &ht);
                    let need = span(p, count).unwrap();
                    let mut abuf = vec![0u8; need + off];
                    abuf[off..].copy_from_slice(&a[..need]);
                    let mut x = vec![0u8; need + off];
                    x[off..].copy_from_slice(&b[..need]);
                    let mut y = x.clone();
                    kv(&abuf[off..], &mut x[off..]);
                    kb(&abuf[off..], &mut y[off..]);
                    assert!(
                        same(p, op, &x[off..], &y[off..]),
                        "{} on {} at {lvl:?}, count {count} offset {off}",
                        op.name(),
                        p.name
                    );
                }
            }
        }
    }
}

#[test]
fn multi_kernels_match_oracle() {
    // The one-pass folds of several sources (kernels::MultiKernel, what the collectives
    // use where there is one) against the scalar oracle applied source by source in the
    // engine's order (acc = s0; acc = s_k op acc), bit for bit: 1 to 9 sources, lengths
    // around the 32-element tile, unaligned buffers.
    let ht = half_table();
    let mut tested = 0;
    let mut big_tested = std::collections::HashSet::new();
    for p in PREDEFINED.iter() {
        let p = predefined::lookup(p.handle).unwrap();
        for op in BuiltinOp::ALL {
            let Some(m) = predefined_multi(op, p) else {
                continue;
            };
            // the same table as the binary kernels
            assert_eq!(
                predefined_kernels(op, p).map(|(k, _)| k as usize),
                predefined_kernel(op, p).map(|k| k as usize)
            );
            tested += 1;
            for k in 1..=9usize {
                for count in [0usize, 1, 2, 31, 32, 33, 71, 300] {
                    for offset in [0usize, 1] {
                        let seed = (k * 1000 + count * 7 + offset) as u64 ^ p.handle as u64;
                        let mut r = Rng(seed | 1);
                        let srcs: Vec<Vec<u8>> =
                            (0..k).map(|_| gen(p, count, &mut r, &ht)).collect();
                        let mut want = srcs[0].clone();
                        for s in &srcs[1..] {
                            want = oracle(op, p, s, &want, count, &ht);
                        }
                        let bufs: Vec<Vec<u8>> = srcs
                            .iter()
                            .map(|s| {
                                let mut b = vec![0u8; s.len() + offset];
                                b[offset..].copy_from_slice(s);
                                b
                            })
                            .collect();
                        let views: Vec<&[u8]> = bufs.iter().map(|b| &b[offset..]).collect();
                        let mut out = vec![0xa5u8; count * p.extent + offset];
                        m(&views, &mut out[offset..]);
                        assert!(
                            same(p, op, &out[offset..], &want),
                            "{} on {}: {k} sources, count {count}, offset {offset}",
                            op.name(),
                            p.name
                        );
                    }
                }
            }
            // across the handover to 256-bit loops (kernels::STREAM_256), three sources,
            // once per distinct fold
            if !big_tested.insert(m as usize) {
                continue;
            }
            let big = super::kernels::STREAM_256 / p.extent;
            for count in [big - 1, big + 33] {
                let mut r = Rng((count as u64) << 8 ^ p.handle as u64 | 1);
                let srcs: Vec<Vec<u8>> = (0..3).map(|_| gen(p, count, &mut r, &ht)).collect();
                let mut want = srcs[0].clone();
                for s in &srcs[1..] {
                    want = oracle(op, p, s, &want, count, &ht);
                }
                let views: Vec<&[u8]> = srcs.iter().map(|b| &b[..]).collect();
                let mut out = vec![0xa5u8; count * p.extent];
                m(&views, &mut out);
                assert!(
                    same(p, op, &out, &want),
                    "{} on {}: 3 sources, count {count}",
                    op.name(),
                    p.name
                );
            }
        }
    }
    // SUM and PROD on the floats, every op on the integer types, logical and bitwise
    assert!(
        tested >= 60,
        "only {tested} (op, type) pairs have a multi-source fold"
    );
    let double = predefined::lookup(crate::abi::MPI_DOUBLE).unwrap();
    assert!(predefined_multi(BuiltinOp::Sum, double).is_some());
    assert!(predefined_multi(BuiltinOp::Max, double).is_none());
}

#[test]
fn vector_levels_beyond_caches_match_baseline() {
    // At the AVX-512 level, buffers of STREAM_256 bytes and more run 256-bit loops (and
    // 8-bit PROD from PROD8_WIDEN bytes a loop that widens to 16 bits), and at both
    // vector levels buffers of STREAM_128 bytes and more run 128-bit ones:
    // whichever loop runs, the bytes are those of the baseline loop, on both sides of
    // each threshold and on an odd length past it, from the allocation's start and
    // 8 bytes on (a different head before the first line).
    use super::kernels::{kernel_at, SimdLevel, PROD8_WIDEN, STREAM_128, STREAM_256};
    let cases = [
        (BuiltinOp::Sum, Elem::F64),
        (BuiltinOp::Prod, Elem::F32),
        (BuiltinOp::Max, Elem::I32),
        (BuiltinOp::Max, Elem::I64),
        (BuiltinOp::Min, Elem::U64),
        (BuiltinOp::Prod, Elem::U64),
        (BuiltinOp::Prod, Elem::I8),
        (BuiltinOp::Bxor, Elem::U8),
        (BuiltinOp::Land, Elem::I16),
    ];
    let levels = vector_levels();
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
    for len in [
        STREAM_256 - 64,
        STREAM_256,
        STREAM_256 + 1000,
        PROD8_WIDEN - 64,
        PROD8_WIDEN + 1000,
        STREAM_128 - 64,
        STREAM_128 + 1000,
    ] {
        let a: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        for &(op, elem) in &cases {
            // (floats finite: which NaN operand's payload a product keeps is not fixed)
            let (a, b) = (finite(elem, &a), finite(elem, &b));
            for off in [0, 8] {
                let mut want = b[off..].to_vec();
                kernel_at(op, elem, SimdLevel::Baseline).unwrap()(&a[off..], &mut want);
                for &l in &levels {
                    let mut got = b.clone();
                    kernel_at(op, elem, l).unwrap()(&a[off..], &mut got[off..]);
                    assert!(
                        got[off..] == want[..] && got[..off] == b[..off],
                        "{} {elem:?} {l:?} len {len} off {off}",
                        op.name()
                    );
                }
            }
        }
    }
}

#[test]
fn float_minmax_across_the_handovers() {
    // At the AVX-512 level, float MAX/MIN of 1 MiB and more run the AVX2 kernel, and at
    // both vector levels those of STREAM_128 bytes and more its 128-bit version: on both
    // sides of each threshold and on odd lengths past it, the bytes are the baseline
    // loop's, with NaNs (random bits), zeros of both signs and subnormals in the data.
    use super::kernels::{kernel_at, SimdLevel, STREAM_128};
    let levels = vector_levels();
    let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
    for len in [
        (1 << 20) - 64,
        1 << 20,
        (1 << 20) + 1000,
        (1 << 21) + 4,
        STREAM_128 - 64,
        STREAM_128 + 1000 + 4,
    ] {
        for elem in [Elem::F64, Elem::F32] {
            let w = if elem == Elem::F64 { 8 } else { 4 };
            let mut data = || -> Vec<u8> {
                let mut v: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                for (i, e) in v.chunks_mut(w).enumerate() {
                    if e.len() < w {
                        continue;
                    }
                    match next() % 16 {
                        0 => e.fill(0), // +0
                        1 => e.iter_mut().enumerate().for_each(|(k, b)| {
                            *b = if k == w - 1 { 0x80 } else { 0 } // -0
                        }),
                        2 => e[w - 1] &= 0x80, // subnormal (or zero)
                        _ if i % 3 == 0 => e[w - 1] &= 0xbf, // finite
                        _ => {}
                    }
                    if w == 4 && e[w - 1] & 0x7f == 0 {
                        e[w - 2] &= 0x7f;
                    }
                }
                v
            };
            let (a, b) = (data(), data());
            for op in [BuiltinOp::Max, BuiltinOp::Min] {
                let mut want = b.clone();
                kernel_at(op, elem, SimdLevel::Baseline).unwrap()(&a, &mut want);
                for &l in &levels {
                    let mut got = b.clone();
                    kernel_at(op, elem, l).unwrap()(&a, &mut got);
                    assert!(got == want, "{} {elem:?} {l:?} len {len}", op.name());
                }
            }
        }
    }
}

/// The vector levels this CPU has (AVX2, AVX-512), to test against the baseline.
fn vector_levels() -> Vec<super::kernels::SimdLevel> {
    use super::kernels::{simd_level, SimdLevel};
    [SimdLevel::Avx2, SimdLevel::Avx512]
        .into_iter()
        .filter(|&l| l <= simd_level())
        .collect()
}

/// `kernel` on `a` and a copy of `b` placed `d` bytes past `a` modulo 4 KiB (the AVX-512
/// level picks its loops by that distance: see `kernels::store_alias`): the result.
fn run_placed(kernel: super::kernels::Kernel, a: &[u8], b: &[u8], d: usize) -> Vec<u8> {
    let mut v = vec![0u8; b.len() + 4096];
    let off = (a.as_ptr() as usize + d + 4096 - v.as_ptr() as usize % 4096) % 4096;
    let got = &mut v[off..off + b.len()];
    got.copy_from_slice(b);
    kernel(a, got);
    got.to_vec()
}

/// Normal floats of `w` bytes (4 or 8) with random signs and exponents over the whole
/// normal range.
fn normal_floats(w: usize, len: usize, next: &mut impl FnMut() -> u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    for e in v.chunks_exact_mut(w) {
        let r = next();
        if w == 8 {
            let exp = 1 + (r >> 53) % 2046; // 1..=2046
            let bits = (r & (1 << 63)) | (exp << 52) | (r & ((1 << 52) - 1));
            e.copy_from_slice(&bits.to_le_bytes());
        } else {
            let r = r as u32;
            let exp = 1 + (r >> 23) % 254; // 1..=254
            let bits = (r & (1 << 31)) | (exp << 23) | (r & ((1 << 23) - 1));
            e.copy_from_slice(&bits.to_le_bytes());
        }
    }
    v
}

/// The thread's MXCSR (the SSE control and status register).
#[cfg(target_arch = "x86_64")]
fn mxcsr() -> u32 {
    let mut x = 0u32;
    // SAFETY: STMXCSR writes the 4 bytes of `x`, a live local.
    unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut x, options(nostack)) };
    x
}

/// Sets the thread's MXCSR to `x` (a value read from it with some bits changed).
#[cfg(target_arch = "x86_64")]
fn set_mxcsr(x: u32) {
    // SAFETY: LDMXCSR reads the 4 bytes of `x`; callers only change the exception flags,
    // the denormal modes and the exception masks, never reserved bits.
    unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &x, options(nostack, readonly)) };
}

/// Puts the thread's MXCSR back as it was when made, also when a test fails.
#[cfg(target_arch = "x86_64")]
struct MxcsrGuard(u32);
#[cfg(target_arch = "x86_64")]
impl Drop for MxcsrGuard {
    fn drop(&mut self) {
        set_mxcsr(self.0);
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn float_minmax_one_special_anywhere_and_no_flags() {
    // The AVX-512 float MAX/MIN take the plain instruction for 256 bytes of `inv` at a
    // time when none of its four vectors has a NaN or zero lane. Normal data over the
    // whole exponent range gives the baseline's bytes and raises no floating-point
    // exception flag (the checks compute nothing); one NaN (quiet or signalling), zero
    // or subnormal in `inv`, at every element position, against a partner in `inout`
    // that makes the plain instruction wrong there (a zero of the other sign, a NaN),
    // gives the baseline's bytes too, at both vector levels and both placements.
    use super::kernels::{kernel_at, SimdLevel};
    let levels = vector_levels();
    let _restore = MxcsrGuard(mxcsr());
    let mut next = xorshift(0xd1b5_4a32_d192_ed03u64);
    for elem in [Elem::F64, Elem::F32] {
        let w = if elem == Elem::F64 { 8 } else { 4 };
        // specials as the top and low bytes of an element: QNaN, SNaN, +0, -0, subnormal
        let top = |sign: u8, hi: u8| -> Vec<u8> {
            let mut e = vec![0u8; w];
            e[w - 1] = sign | 0x7f;
            e[w - 2] = hi;
            e[0] = 1;
            e
        };
        let zero = vec![0u8; w];
        let mut neg_zero = zero.clone();
        neg_zero[w - 1] = 0x80;
        let mut subnormal = zero.clone();
        subnormal[0] = 5;
        let (qnan, snan) = if w == 8 {
            (top(0x80, 0xf8), top(0, 0xf0))
        } else {
            (top(0x80, 0xc0), top(0, 0x80))
        };
        // (special in inv, its partner in inout)
        let cases = [
            (qnan.clone(), zero.clone()),
            (snan, neg_zero.clone()),
            (zero.clone(), neg_zero.clone()),
            (neg_zero.clone(), zero.clone()),
            (subnormal, neg_zero.clone()),
            (zero.clone(), qnan),
        ];
        let len = 1024 + 3 * w;
        let (a, b) = (
            normal_floats(w, len, &mut next),
            normal_floats(w, len, &mut next),
        );
        for op in [BuiltinOp::Max, BuiltinOp::Min] {
            let mut want = b.clone();
            kernel_at(op, elem, SimdLevel::Baseline).unwrap()(&a, &mut want);
            for (&l, d) in levels.iter().flat_map(|l| [(l, 2048), (l, 64)]) {
                set_mxcsr(mxcsr() & !0x3f);
                let got = run_placed(kernel_at(op, elem, l).unwrap(), &a, &b, d);
                let flags = mxcsr() & 0x3f;
                assert!(
                    got == want,
                    "{} {elem:?} {l:?} +{d}: normal data",
                    op.name()
                );
                assert_eq!(flags, 0, "{} {elem:?} {l:?} +{d}: flags raised", op.name());
            }
            for (x, y) in &cases {
                for pos in 0..len / w {
                    let (mut a, mut b) = (a.clone(), b.clone());
                    a[pos * w..][..w].copy_from_slice(x);
                    b[pos * w..][..w].copy_from_slice(y);
                    let mut want = b.clone();
                    kernel_at(op, elem, SimdLevel::Baseline).unwrap()(&a, &mut want);
                    for (&l, d) in levels.iter().flat_map(|l| [(l, 2048), (l, 64)]) {
                        let got = run_placed(kernel_at(op, elem, l).unwrap(), &a, &b, d);
                        assert!(
                            got == want,
                            "{} {elem:?} {l:?} +{d}: {x:02x?} against {y:02x?} at element {pos}",
                            op.name()
                        );
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn levels_agree_under_denormals_are_zero() {
    // A program may run with denormals-are-zero and flush-to-zero set (Fortran's
    // fast-math start-up code sets both): the comparisons then take a subnormal for a
    // zero, at every level alike, and every level gives the baseline's bytes (a
    // subnormal operand comes out with its bits, not as a zero), for float MAX/MIN and
    // for MINLOC/MAXLOC on the pair types of floats, at both placements of inout.
    use super::kernels::{kernel_at, SimdLevel};
    let levels = vector_levels();
    let cases = [
        ("MPI_DOUBLE", BuiltinOp::Max),
        ("MPI_DOUBLE", BuiltinOp::Min),
        ("MPI_FLOAT", BuiltinOp::Max),
        ("MPI_FLOAT", BuiltinOp::Min),
        ("MPI_DOUBLE_INT", BuiltinOp::Maxloc),
        ("MPI_DOUBLE_INT", BuiltinOp::Minloc),
        ("MPI_FLOAT_INT", BuiltinOp::Maxloc),
        ("MPI_2REAL", BuiltinOp::Minloc),
        ("MPI_2DOUBLE_PRECISION", BuiltinOp::Maxloc),
    ];
    let ht = half_table();
    let mut r = Rng(0x94d0_49bb_1331_11eb);
    let _restore = MxcsrGuard(mxcsr());
    set_mxcsr(mxcsr() | 0x8040); // FTZ | DAZ
    for (name, op) in cases {
        let p = PREDEFINED.iter().find(|p| p.name == name).unwrap();
        let vw = if matches!(name, "MPI_FLOAT" | "MPI_FLOAT_INT" | "MPI_2REAL") {
            4
        } else {
            8
        };
        // the float fields of an element: the value, and for 2REAL and
        // 2DOUBLE_PRECISION the index too
        let fields: &[usize] = if matches!(name, "MPI_2REAL" | "MPI_2DOUBLE_PRECISION") {
            &[0, vw]
        } else {
            &[0]
        };
        let count = 8192 / p.extent + 3;
        let data = |r: &mut Rng| -> Vec<u8> {
            let mut v = gen(p, count, r, &ht);
            for e in v.chunks_exact_mut(p.extent) {
                for &f in fields {
                    if r.below(8) == 0 {
                        // a subnormal of either sign (or a zero)
                        e[f + vw - 1] &= 0x80;
                        e[f + vw - 2] &= if vw == 8 { 0x0f } else { 0x7f };
                    }
                }
            }
            v
        };
        let (a, b) = (data(&mut r), data(&mut r));
        let mut want = b.clone();
        kernel_at(op, p.elem, SimdLevel::Baseline).unwrap()(&a, &mut want);
        for (&l, d) in levels.iter().flat_map(|l| [(l, 2048), (l, 64)]) {
            let got = run_placed(kernel_at(op, p.elem, l).unwrap(), &a, &b, d);
            if got != want {
                let e = p.extent;
                let i = (0..got.len()).find(|&i| got[i] != want[i]).unwrap() / e * e;
                panic!(
                    "{} {name} {l:?} +{d} under DAZ: element {}: inv {:02x?} inout {:02x?}, \
                     baseline {:02x?}, got {:02x?}",
                    op.name(),
                    i / e,
                    &a[i..i + e],
                    &b[i..i + e],
                    &want[i..i + e],
                    &got[i..i + e]
                );
            }
        }
    }
}

#[test]
fn wide_integer_ops_across_the_stream_handover() {
    // At the AVX-512 level, MAX/MIN/PROD on 64-bit integers of STREAM_256 bytes and
    // more run the 256-bit kernels, of STREAM_128 bytes and more the 128-bit ones: on
    // both sides of each threshold and on lengths past it that leave a remainder, every
    // element is the one computed here, element by element.
    use super::kernels::{kernel_at, simd_level, SimdLevel, STREAM_128, STREAM_256};
    if simd_level() < SimdLevel::Avx512 {
        return;
    }
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
    let lens = [STREAM_256, STREAM_128]
        .map(|stream| [stream - 128, stream, stream + 8 * 13, stream + 4096 + 24]);
    for len in lens.into_iter().flatten() {
        let words = |next: &mut dyn FnMut() -> u64| -> Vec<u64> {
            (0..len / 8)
                .map(|i| match i % 7 {
                    0 => i64::MIN as u64,
                    1 => u64::MAX,
                    2 => next() % 5,
                    _ => next(),
                })
                .collect()
        };
        let (a, b) = (words(&mut next), words(&mut next));
        let bytes = |v: &[u64]| -> Vec<u8> { v.iter().flat_map(|w| w.to_ne_bytes()).collect() };
        let (ab, bb) = (bytes(&a), bytes(&b));
        for elem in [Elem::I64, Elem::U64] {
            for op in [BuiltinOp::Max, BuiltinOp::Min, BuiltinOp::Prod] {
                let want: Vec<u64> = a
                    .iter()
                    .zip(&b)
                    .map(|(&p, &q)| {
                        let (sp, sq) = (p as i64, q as i64);
                        match (op, elem) {
                            (BuiltinOp::Prod, _) => p.wrapping_mul(q),
                            (BuiltinOp::Max, Elem::I64) => sp.max(sq) as u64,
                            (BuiltinOp::Min, Elem::I64) => sp.min(sq) as u64,
                            (BuiltinOp::Max, _) => p.max(q),
                            _ => p.min(q),
                        }
                    })
                    .collect();
                let mut got = bb.clone();
                kernel_at(op, elem, SimdLevel::Avx512).unwrap()(&ab, &mut got);
                assert!(got == bytes(&want), "{} {elem:?} len {len}", op.name());
            }
        }
    }
}

#[test]
fn kernels_with_output_just_past_input_match_baseline() {
    // At the AVX-512 level, an output that starts a few hundred bytes past an input
    // modulo 4 KiB is reduced by the 256-bit loops (kernels::store_alias): at offsets
    // inside and outside that window, the binary kernels and the multi-source folds (the
    // second source placed so) give the baseline loop's bytes, and the bytes around the
    // output are untouched.
    use super::kernels::{kernel_at, multi_kernel, simd_level, SimdLevel};
    let cases = [
        (BuiltinOp::Sum, Elem::F64),
        (BuiltinOp::Max, Elem::F64),
        (BuiltinOp::Min, Elem::F32),
        (BuiltinOp::Max, Elem::I64),
        (BuiltinOp::Prod, Elem::U64),
        (BuiltinOp::Prod, Elem::I8),
        (BuiltinOp::Band, Elem::U8),
    ];
    let mut next = xorshift(0x6a09_e667_f3bc_c909u64);
    for len in [1000usize, 4096 + 40, 40000] {
        for delta in [64, 192, 700, 1000, 4096 - 64] {
            // inv at a 4 KiB boundary of `store`, the output `delta` bytes past the next
            // boundary after inv's end (modulo 4 KiB: `delta` bytes past inv)
            let span = len.div_ceil(4096) * 4096;
            let mut store = vec![0u8; 2 * span + 3 * 4096];
            let base = (4096 - store.as_ptr() as usize % 4096) % 4096;
            let (ri, ro) = (
                base..base + len,
                base + span + delta..base + span + delta + len,
            );
            let vals: Vec<u8> = (0..2 * len).map(|_| next() as u8).collect();
            for &(op, elem) in &cases {
                // (floats finite: which NaN a SUM keeps is not fixed; MAX/MIN take
                // NaNs in every loop alike, but keep the data plain here)
                let (a, b) = (finite(elem, &vals[..len]), finite(elem, &vals[len..]));
                let mut want = b.clone();
                kernel_at(op, elem, SimdLevel::Baseline).unwrap()(&a, &mut want);
                store.fill(0x5a);
                store[ri.clone()].copy_from_slice(&a);
                store[ro.clone()].copy_from_slice(&b);
                let (head, tail) = store.split_at_mut(ro.start);
                kernel_at(op, elem, simd_level()).unwrap()(&head[ri.clone()], &mut tail[..len]);
                let what = format!("{} {elem:?} len {len} delta {delta}", op.name());
                assert!(store[ro.clone()] == want[..], "{what}");
                assert!(store[ro.end..].iter().all(|&x| x == 0x5a), "{what}");
                assert!(store[ri.end..ro.start].iter().all(|&x| x == 0x5a), "{what}");
                // a fold of two sources (b, then a op b), the second the copy of `a`
                // in `store`, just before the output modulo 4 KiB
                let Some(m) = multi_kernel(op, elem) else {
                    continue;
                };
                store[ro.clone()].fill(0x33);
                let (head, tail) = store.split_at_mut(ro.start);
                m(&[&b, &head[ri.clone()]], &mut tail[..len]);
                assert!(store[ro.clone()] == want[..], "multi {what}");
            }
        }
    }
}

#[test]
fn kernels_align_their_output_to_a_line() {
    // The vector levels first reduce the elements before inout's first 64-byte line
    // (kernels::line_head): at every offset from a line, with inputs at other offsets,
    // on lengths around the 1 KiB from which they do and one past 1 MiB, every element
    // is the one computed here, and the bytes around the output are untouched. Binary
    // kernels at each level the CPU has, and the multi-source folds (two and three
    // sources).
    use super::kernels::{kernel_at, multi_kernel, simd_level, SimdLevel};
    let mut levels = vec![SimdLevel::Baseline];
    if simd_level() >= SimdLevel::Avx2 {
        levels.push(SimdLevel::Avx2);
    }
    if simd_level() >= SimdLevel::Avx512 {
        levels.push(SimdLevel::Avx512);
    }
    // a buffer of `len` bytes starting `off` bytes past a 64-byte line, in `store`
    fn at(store: &mut Vec<u8>, off: usize, len: usize) -> std::ops::Range<usize> {
        store.clear();
        store.resize(len + 192, 0x5a);
        let base = store.as_ptr() as usize;
        let start = (64 - base % 64) % 64 + 64 + off;
        start..start + len
    }
    let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
    type Oracle = fn(&[u8], &[u8]) -> Vec<u8>;
    // element `a` op element `b`, by the method `$f` of `$t`
    macro_rules! by {
        ($t:ty, $f:ident) => {
            |a, b| {
                let (x, y) = (
                    <$t>::from_ne_bytes(a.try_into().unwrap()),
                    <$t>::from_ne_bytes(b.try_into().unwrap()),
                );
                x.$f(y).to_ne_bytes().to_vec()
            }
        };
    }
    use std::ops::Add;
    let cases: [(BuiltinOp, Elem, usize, Oracle); 7] = [
        (BuiltinOp::Prod, Elem::I64, 8, by!(i64, wrapping_mul)),
        // (the float data have no zeros or NaNs: the plain maximum and minimum)
        (BuiltinOp::Max, Elem::F64, 8, by!(f64, max)),
        (BuiltinOp::Min, Elem::F32, 4, by!(f32, min)),
        (BuiltinOp::Sum, Elem::I64, 8, by!(i64, wrapping_add)),
        (BuiltinOp::Band, Elem::U8, 1, |a, b| vec![a[0] & b[0]]),
        (BuiltinOp::Max, Elem::I32, 4, by!(i32, max)),
        // (small integers: exact in any order)
        (BuiltinOp::Sum, Elem::F64, 8, by!(f64, add)),
    ];
    let (mut s0, mut s1, mut s2, mut so) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for &(op, elem, w, f) in &cases {
        // (the last past kernels::STREAM_256, where other loops take over)
        for len in [
            1000 / w * w,
            1024,
            1024 + 3 * w,
            4096 + 5 * w,
            (1 << 20) + 5 * w,
        ] {
            let vals: Vec<Vec<u8>> = (0..3)
                .map(|_| {
                    (0..len / w)
                        .flat_map(|_| {
                            let v = next();
                            match elem {
                                Elem::F64 => ((v % 1000) as f64 + 1.0).to_ne_bytes().to_vec(),
                                Elem::F32 => ((v % 1000) as f32 - 500.5).to_ne_bytes().to_vec(),
                                _ => v.to_ne_bytes()[..w].to_vec(),
                            }
                        })
                        .collect()
                })
                .collect();
            let fold = |srcs: &[&Vec<u8>]| -> Vec<u8> {
                // acc = s0; acc = s_k op acc
                let mut acc = srcs[0].clone();
                for s in &srcs[1..] {
                    acc = s
                        .chunks(w)
                        .zip(acc.chunks(w))
                        .flat_map(|(a, b)| f(a, b))
                        .collect();
                }
                acc
            };
            for off in (0..64).step_by(if w == 1 { 5 } else { w }) {
                let ra = at(&mut s0, (off + 24) % 64, len);
                s0[ra.clone()].copy_from_slice(&vals[0]);
                let ro = at(&mut so, off, len);
                let want = fold(&[&vals[1], &vals[0]]);
                for &l in &levels {
                    so[ro.clone()].copy_from_slice(&vals[1]);
                    let out = &mut so;
                    kernel_at(op, elem, l).unwrap()(&s0[ra.clone()], &mut out[ro.clone()]);
                    assert!(
                        out[ro.clone()] == want[..],
                        "{} {elem:?} {l:?} len {len} off {off}",
                        op.name()
                    );
                    assert!(out[..ro.start].iter().all(|&b| b == 0x5a));
                    assert!(out[ro.end..].iter().all(|&b| b == 0x5a));
                }
                // the multi-source folds (at the detected level)
                let Some(m) = multi_kernel(op, elem) else {
                    continue;
                };
                let r1 = at(&mut s1, (off + 40) % 64, len);
                s1[r1.clone()].copy_from_slice(&vals[1]);
                let r2 = at(&mut s2, (off + 8) % 64, len);
                s2[r2.clone()].copy_from_slice(&vals[2]);
                for k in [2, 3] {
                    let srcs: Vec<&[u8]> =
                        [&s0[ra.clone()], &s1[r1.clone()], &s2[r2.clone()]][..k].to_vec();
                    let want = fold(&[&vals[0], &vals[1], &vals[2]][..k]);
                    so[ro.clone()].fill(0x33);
                    let out = &mut so;
                    m(&srcs, &mut out[ro.clone()]);
                    assert!(
                        out[ro.clone()] == want[..],
                        "multi {} {elem:?} {k} sources len {len} off {off}",
                        op.name()
                    );
                    assert!(out[..ro.start].iter().all(|&b| b == 0x5a));
                    assert!(out[ro.end..].iter().all(|&b| b == 0x5a));
                }
            }
        }
    }
}

/// `v` with every F64 or F32 element of `elem` made finite (the top exponent bits
/// cleared); other kinds as they are.
fn finite(elem: Elem, v: &[u8]) -> Vec<u8> {
    let w = match elem {
        Elem::F64 => 8,
        Elem::F32 => 4,
        _ => return v.to_vec(),
    };
    let mut v = v.to_vec();
    for e in v.chunks_mut(w) {
        if e.len() == w {
            e[w - 1] &= 0x3f;
        }
    }
    v
}

/// A xorshift64 generator from `seed` (not zero): the tests' reproducible random words.
fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

#[test]
fn predefined_ops_on_packed_derived_data() {
    use crate::abi::*;
    use crate::datatype::derived::{commit, contiguous, free, structure, vector};
    use crate::op;
    let v = vector(3, 1, 2, MPI_DOUBLE).unwrap();
    let sum = OpRef::Builtin(BuiltinOp::Sum);
    // uncommitted types are refused
    let a: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]
        .iter()
        .flat_map(|x| x.to_ne_bytes())
        .collect();
    let mut b: Vec<u8> = [10.0f64, 20.0, 30.0, 40.0, 50.0, 60.0]
        .iter()
        .flat_map(|x| x.to_ne_bytes())
        .collect();
    assert_eq!(
        op::apply(&sum, v, &a, &mut b, 2).unwrap_err().class,
        MPI_ERR_TYPE
    );
    commit(v).unwrap();
    assert_eq!(
        op::reduce_basic(BuiltinOp::Sum, v).unwrap(),
        Some((MPI_DOUBLE, 3))
    );
    op::apply(&sum, v, &a, &mut b, 2).unwrap();
    let got: Vec<f64> = b
        .chunks(8)
        .map(|c| f64::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, [11.0, 22.0, 33.0, 44.0, 55.0, 66.0]);
    // not defined on the basic type: MPI_ERR_OP naming both
    let e = op::apply(&OpRef::Builtin(BuiltinOp::Band), v, &a, &mut b, 2).unwrap_err();
    assert_eq!(e.class, MPI_ERR_OP);
    assert!(
        e.msg.contains("MPI_BAND") && e.msg.contains("MPI_DOUBLE"),
        "{}",
        e.msg
    );
    // a mixed type map: MPI_ERR_OP
    let s = structure(2, &[1, 1], &[0, 8], &[MPI_DOUBLE, MPI_INT]).unwrap();
    commit(s).unwrap();
    let e = op::apply(&sum, s, &[0; 12], &mut [0; 12], 1).unwrap_err();
    assert_eq!(e.class, MPI_ERR_OP);
    // a pair type with padding: packed 12-byte (double, int) elements
    let p = contiguous(2, MPI_DOUBLE_INT).unwrap();
    commit(p).unwrap();
    let pair = |v: f64, i: i32| {
        let mut x = v.to_ne_bytes().to_vec();
        x.extend(i.to_ne_bytes());
        x
    };
    let a: Vec<u8> = [pair(5.0, 1), pair(1.0, 1)].concat();
    let mut b: Vec<u8> = [pair(3.0, 2), pair(7.0, 2)].concat();
    op::apply(&OpRef::Builtin(BuiltinOp::Maxloc), p, &a, &mut b, 1).unwrap();
    assert_eq!(b, [pair(5.0, 1), pair(7.0, 2)].concat());
    for x in [v, s, p] {
        free(x).unwrap();
    }
}
