//! The "external32" data representation (MPI-2.2 section 13.5.2), for MPI_Pack_external,
//! MPI_Unpack_external and MPI_Pack_external_size: every basic element big-endian, at the
//! standard's sizes. They differ from this machine's for MPI_LONG and MPI_UNSIGNED_LONG
//! (4 bytes, not 8: a value that does not fit is an error, MPI_ERR_CONVERSION), MPI_WCHAR
//! (2 bytes, not 4) and `long double` (IEEE binary128, not the x87 80-bit format in 16
//! bytes); the pair types are their two components without padding.
//!
//! The conversion works on the packed stream (`datatype::pack`'s form: the basic
//! elements back to back, in type-map order) and the datatype's type signature, read
//! from its construction (a derived type other than a struct is its old type repeated).
#![deny(unsafe_code)]
use super::derived::Type;
use super::predefined::{Elem, Predef};
use crate::abi::*;
use crate::error::{err, MpiResult};

/// How one component of a basic element is converted.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Part {
    /// Same size, byte order reversed.
    Swap(usize),
    /// An 8-byte C `long` / `unsigned long` in 4 bytes.
    Long { signed: bool },
    /// A 4-byte `wchar_t` in 2 bytes.
    WChar,
    /// x87 extended precision (16 bytes in memory) as IEEE binary128.
    X87,
}

impl Part {
    fn native(self) -> usize {
        match self {
            Part::Swap(n) => n,
            Part::Long { .. } => 8,
            Part::WChar => 4,
            Part::X87 => 16,
        }
    }
    fn external(self) -> usize {
        match self {
            Part::Swap(n) => n,
            Part::Long { .. } => 4,
            Part::WChar => 2,
            Part::X87 => 16,
        }
    }
}

/// The components of predefined type `p` in its packed form.
fn parts(p: &Predef) -> Vec<Part> {
    use Part::*;
    let long = |h: i32| -> Part {
        match h {
            MPI_LONG | MPI_LONG_INT => Long { signed: true },
            MPI_UNSIGNED_LONG => Long { signed: false },
            _ => Swap(8),
        }
    };
    match p.elem {
        Elem::LbUb => vec![],
        Elem::I8 | Elem::U8 | Elem::Byte | Elem::Char | Elem::CBool | Elem::Packed => {
            vec![Swap(1)]
        }
        Elem::I16 | Elem::U16 | Elem::F16 => vec![Swap(2)],
        Elem::I32 | Elem::U32 | Elem::F32 | Elem::FLogical => vec![Swap(4)],
        Elem::I64 | Elem::U64 => vec![long(p.handle)],
        Elem::F64 => vec![Swap(8)],
        Elem::WChar => vec![WChar],
        Elem::LongDouble => vec![X87],
        Elem::Float128 => vec![Swap(16)],
        Elem::ComplexF32 | Elem::FloatInt | Elem::TwoInt | Elem::TwoInteger | Elem::TwoReal => {
            vec![Swap(4), Swap(4)]
        }
        Elem::ComplexF64 | Elem::TwoDoublePrecision => vec![Swap(8), Swap(8)],
        Elem::ComplexLongDouble => vec![X87, X87],
        Elem::ComplexFloat128 => vec![Swap(16), Swap(16)],
        Elem::DoubleInt => vec![Swap(8), Swap(4)],
        Elem::LongInt => vec![long(p.handle), Swap(4)],
        Elem::ShortInt => vec![Swap(2), Swap(4)],
        Elem::LongDoubleInt => vec![X87, Swap(4)],
    }
}

/// Upper limit on the runs of one instance's signature.
const MAX_RUNS: usize = 1 << 22;

/// The type signature of one instance of `t`: (predefined type, repetitions) runs.
fn signature(t: &Type) -> MpiResult<Vec<(&'static Predef, usize)>> {
    let mut out = Vec::new();
    walk(t, 1, &mut out)?;
    Ok(out)
}

fn push(out: &mut Vec<(&'static Predef, usize)>, p: &'static Predef, n: usize) -> MpiResult<()> {
    match out.last_mut() {
        Some((q, m)) if std::ptr::eq(*q, p) => *m += n,
        _ => {
            if out.len() >= MAX_RUNS {
                return Err(err(
                    MPI_ERR_OTHER,
                    "datatype too irregular for external32: its type signature has too many runs",
                ));
            }
            out.push((p, n))
        }
    }
    Ok(())
}

fn walk(t: &Type, times: usize, out: &mut Vec<(&'static Predef, usize)>) -> MpiResult<()> {
    if times == 0 || t.size() == 0 {
        return Ok(());
    }
    if let Some(p) = t.predefined {
        return push(out, p, times);
    }
    let e = &t.envelope;
    if e.combiner == MPI_COMBINER_STRUCT {
        let mut one = Vec::new();
        for (i, ty) in e.types.iter().enumerate() {
            walk(ty, e.count_arg(1 + i).max(0) as usize, &mut one)?;
        }
        for _ in 0..times {
            for &(p, n) in &one {
                push(out, p, n)?;
            }
        }
        return Ok(());
    }
    // Every other constructor repeats its one old type.
    let Some(old) = e.types.first() else {
        return Ok(());
    };
    walk(old, times * (t.size() / old.size().max(1)), out)
}

/// The datarep argument of MPI_Pack_external and the like: "external32" is the only
/// representation there is.
pub fn check_rep(rep: &std::ffi::CStr) -> MpiResult<()> {
    if rep.to_bytes() == b"external32" {
        return Ok(());
    }
    Err(err(
        MPI_ERR_ARG,
        format!(
            "datarep={:?}: the only representation is \"external32\"",
            rep.to_string_lossy()
        ),
    ))
}

/// External32 bytes of `count` instances of `t`.
pub fn size(t: &Type, count: usize) -> MpiResult<usize> {
    let per: usize = signature(t)?
        .iter()
        .map(|&(p, n)| n * parts(p).iter().map(|q| q.external()).sum::<usize>())
        .sum();
    per.checked_mul(count).ok_or_else(|| {
        err(
            MPI_ERR_COUNT,
            format!("count={count} x {per} external32 bytes overflows"),
        )
    })
}

/// Converts the packed native stream of `count` instances of `t` into external32.
pub fn to_external(t: &Type, count: usize, native: &[u8], out: &mut [u8]) -> MpiResult<()> {
    convert(t, count, native, out, true)
}

/// Converts external32 data of `count` instances of `t` into the packed native stream.
pub fn from_external(t: &Type, count: usize, ext: &[u8], native: &mut [u8]) -> MpiResult<()> {
    convert(t, count, ext, native, false)
}

fn convert(t: &Type, count: usize, src: &[u8], dst: &mut [u8], out: bool) -> MpiResult<()> {
    let sig = signature(t)?;
    let (mut i, mut o) = (0, 0);
    for _ in 0..count {
        for &(p, n) in &sig {
            let ps = parts(p);
            for _ in 0..n {
                for &q in &ps {
                    let (a, b) = if out {
                        (q.native(), q.external())
                    } else {
                        (q.external(), q.native())
                    };
                    let (s, d) = (&src[i..i + a], &mut dst[o..o + b]);
                    if out {
                        encode(q, s, d, p)?;
                    } else {
                        decode(q, s, d);
                    }
                    i += a;
                    o += b;
                }
            }
        }
    }
    Ok(())
}

fn encode(q: Part, s: &[u8], d: &mut [u8], p: &Predef) -> MpiResult<()> {
    match q {
        Part::Swap(_) => {
            for (x, y) in d.iter_mut().zip(s.iter().rev()) {
                *x = *y;
            }
        }
        Part::Long { signed } => {
            let v = i64::from_ne_bytes(s.try_into().unwrap());
            let fits = if signed {
                i32::try_from(v).is_ok()
            } else {
                u32::try_from(v as u64).is_ok()
            };
            if !fits {
                let shown = if signed {
                    v.to_string()
                } else {
                    (v as u64).to_string()
                };
                return Err(err(
                    MPI_ERR_CONVERSION,
                    format!(
                        "a {} value {shown} does not fit in external32's 4 bytes",
                        p.name
                    ),
                ));
            }
            d.copy_from_slice(&(v as u32).to_be_bytes());
        }
        Part::WChar => {
            let v = u32::from_ne_bytes(s.try_into().unwrap());
            if v > 0xffff {
                return Err(err(
                    MPI_ERR_CONVERSION,
                    format!("an MPI_WCHAR value {v:#x} does not fit in external32's 2 bytes"),
                ));
            }
            d.copy_from_slice(&(v as u16).to_be_bytes());
        }
        Part::X87 => d.copy_from_slice(&x87_to_quad(s).to_be_bytes()),
    }
    Ok(())
}

fn decode(q: Part, s: &[u8], d: &mut [u8]) {
    match q {
        Part::Swap(_) => {
            for (x, y) in d.iter_mut().zip(s.iter().rev()) {
                *x = *y;
            }
        }
        Part::Long { signed } => {
            let v = u32::from_be_bytes(s.try_into().unwrap());
            let w = if signed { v as i32 as i64 } else { v as i64 };
            d.copy_from_slice(&w.to_ne_bytes());
        }
        Part::WChar => {
            let v = u16::from_be_bytes(s.try_into().unwrap());
            d.copy_from_slice(&(v as u32).to_ne_bytes());
        }
        Part::X87 => d.copy_from_slice(&quad_to_x87(u128::from_be_bytes(s.try_into().unwrap()))),
    }
}

/// x87 extended (64-bit significand with its integer bit, 15-bit exponent, sign; the
/// 16 bytes of a `long double`) to IEEE binary128 bits. Exact: the same exponent bias,
/// and the significand's 63 fraction bits fit in binary128's 112.
fn x87_to_quad(s: &[u8]) -> u128 {
    let mant = u64::from_le_bytes(s[..8].try_into().unwrap());
    let se = u16::from_le_bytes(s[8..10].try_into().unwrap()) as u128;
    let frac = ((mant & !(1u64 << 63)) as u128) << 49;
    (se << 112) | frac
}

/// IEEE binary128 bits to the 16 bytes of an x87 `long double`, the fraction rounded to
/// 63 bits (to nearest, ties to even).
fn quad_to_x87(q: u128) -> [u8; 16] {
    let mut se = (q >> 112) as u16;
    let exp = se & 0x7fff;
    let frac = q & ((1u128 << 112) - 1);
    let mut m = (frac >> 49) as u64;
    if exp != 0x7fff {
        let rest = frac & ((1u128 << 49) - 1);
        let half = 1u128 << 48;
        if rest > half || (rest == half && m & 1 == 1) {
            m += 1;
            if m >> 63 != 0 {
                // The fraction overflowed into the integer bit: the next binade.
                m = 0;
                se += 1;
            }
        }
    } else if frac != 0 && m == 0 {
        m = 1 << 62; // a NaN whose payload is all below the kept bits stays a NaN
    }
    let exp = se & 0x7fff;
    if exp != 0 {
        m |= 1 << 63; // explicit integer bit of normal numbers, infinities and NaNs
    }
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&m.to_le_bytes());
    out[8..10].copy_from_slice(&se.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x87(v: f64) -> [u8; 16] {
        // f64 -> x87 by hand: same value, exponent rebased, significand widened.
        let b = v.to_bits();
        let sign = (b >> 63) as u16;
        let e = ((b >> 52) & 0x7ff) as i32;
        let f = b & ((1u64 << 52) - 1);
        let mut out = [0u8; 16];
        if e == 0 && f == 0 {
            out[8..10].copy_from_slice(&(sign << 15).to_le_bytes());
            return out;
        }
        let m = (1u64 << 63) | (f << 11);
        let exp = if e == 0x7ff {
            0x7fff
        } else {
            (e - 1023 + 16383) as u16
        };
        let se = (sign << 15) | exp;
        out[..8].copy_from_slice(&m.to_le_bytes());
        out[8..10].copy_from_slice(&se.to_le_bytes());
        out
    }

    #[test]
    fn long_double_round_trips_through_binary128() {
        for v in [1.0, -2.5, std::f64::consts::PI, 1e-300, -1e300, 0.0, -0.0] {
            let a = x87(v);
            let q = x87_to_quad(&a);
            // binary128 of an f64 value: f64's fraction in the top 52 fraction bits.
            let b = v.to_bits();
            let e = ((b >> 52) & 0x7ff) as u128;
            let want = if e == 0 {
                ((b >> 63) as u128) << 127
            } else {
                (((b >> 63) as u128) << 127)
                    | ((e + 16383 - 1023) << 112)
                    | (((b & ((1u64 << 52) - 1)) as u128) << 60)
            };
            assert_eq!(q, want, "{v}");
            assert_eq!(quad_to_x87(q)[..10], a[..10], "{v}");
        }
        // infinity and a quiet NaN keep their class
        let inf = x87_to_quad(&x87(f64::INFINITY));
        assert_eq!(inf, 0x7fffu128 << 112);
        let nan = quad_to_x87((0x7fffu128 << 112) | 1);
        assert_eq!(u16::from_le_bytes([nan[8], nan[9]]), 0x7fff);
        assert_ne!(u64::from_le_bytes(nan[..8].try_into().unwrap()) << 1, 0);
        // rounding: a binary128 fraction half-way between two x87 values, to even
        let q = (16383u128 << 112) | (1u128 << 48);
        assert_eq!(
            u64::from_le_bytes(quad_to_x87(q)[..8].try_into().unwrap()),
            1 << 63
        );
        let q = (16383u128 << 112) | (3u128 << 48);
        assert_eq!(
            u64::from_le_bytes(quad_to_x87(q)[..8].try_into().unwrap()),
            (1 << 63) | 2
        );
    }
}
