//! The reduction kernels for the predefined operations: one type-erased signature
//! ([`Kernel`]), chosen once per call by [`kernel`], never per element.
//!
//! Each kernel is one generic loop over fixed-size byte chunks (`as_chunks`), reading
//! and writing elements with `from_ne_bytes` / `to_ne_bytes`: the compiler turns these
//! into unaligned vector loads and stores, so the same loop serves aligned and
//! unaligned buffers without `unsafe`.
//!
//! Semantics (the same in the C kernels of ldkernels.c):
//! - integers wrap (two's complement) on SUM and PROD;
//! - logical ops (LAND, LOR, LXOR) treat any non-zero value as true and write 0 or 1
//!   (for Fortran LOGICAL too: gfortran's .TRUE. is 1);
//! - MAX / MIN on floating point follow IEEE 754-2019 maximum/minimum: a NaN operand
//!   gives a NaN (the bits of `inv` if it is a NaN, else those of `inout`), and
//!   MAX(-0.0, +0.0) = +0.0, MIN(-0.0, +0.0) = -0.0 whichever operand holds which;
//! - complex PROD is (ar*br - ai*bi, ar*bi + ai*br), without C99 Annex G inf recovery;
//! - MINLOC / MAXLOC (§5.9.4): the better value wins; equal values take the smaller
//!   index; a NaN value wins over a number (NaN propagates), two NaNs take the smaller
//!   index; the padding bytes of the pair types keep their values (the AVX2 kernel stores
//!   them back unchanged; the others never write them).
//!
//! CPU-feature dispatch: every loop also exists compiled with
//! `#[target_feature(enable = "avx2")]` and with AVX-512 (F/BW/VL/DQ), chosen once at
//! run time by what the CPU has (see [`simd_level`]; `SHMPI_SIMD=baseline` or
//! `SHMPI_SIMD=avx2` caps the level). Where the generic loop does not vectorise well
//! there are hand-written intrinsics kernels (modules `avx2` and `avx512`): float
//! MAX/MIN (compare + blend, NaN by an unordered compare), 64-bit integer MAX/MIN (AVX2
//! only: AVX-512 has the instructions), MINLOC/MAXLOC on MPI_DOUBLE_INT (two pairs per
//! vector, padding kept), MPI_LONG_INT, MPI_2INT, MPI_FLOAT_INT, MPI_2REAL and
//! MPI_2DOUBLE_PRECISION (AVX2 only, also used where the CPU has AVX-512; the AVX2
//! kernels' comments give their speed on a Zen 3), and beyond the caches, at the
//! AVX-512 level, 64-bit integer MAX/MIN/PROD on 256-bit and 128-bit vectors
//! (`avx512::wide64`) and 8-bit PROD widened to 16 bits (`avx512::prod_8_widened`).
//! The vector loops first reduce the elements before `inout`'s first 64-byte line, when
//! a whole number of elements reaches it, so that the rest stores whole lines
//! ([`line_head`]); from [`STREAM_256`] bytes on the AVX-512 level runs 256-bit loops,
//! and from [`STREAM_128`] bytes on both vector levels run 128-bit ones.
//!
//! Measured with `op::tests::simd_timing` on a 2-core Xeon VM with AVX-512 (release build,
//! load average 5-7 from other jobs; GB/s of the three streams, aligned / offset by
//! one byte; noisy to 30% or more, single runs show 2x outliers):
//!
//! | 4096 elements (L1/L2)  | baseline (SSE2) | AVX2      | AVX-512   |
//! |------------------------|-----------------|-----------|-----------|
//! | SUM f64                | 59 / 34         | 55 / 55   | 70 / 72   |
//! | MAX f64 (NaN/±0)       | 18 / 16         | 48 / 44   | 46 / 64   |
//! | MIN f32 (NaN/±0)       | 20 / 19         | 46 / 45   | 90 / 85   |
//! | MAXLOC double_int      | 20 / 18         | 21 / 21   | 16 / 22   |
//! | SUM f32                | 61 / 43         | 121 / 81  | 144 / 141 |
//! | MAX i32                | 50 / 49         | 146 / 93  | 155 / 138 |
//! | PROD i64               | 30 / 28         | 60 / 46   | 85 / 72   |
//! | BAND u8                | 42 / 37         | 68 / 78   | 98 / 141  |
//!
//! In cache the vector levels pay 1.5-4x; at 1M elements all are memory-bound
//! (25-30 GB/s of the three streams). The float MAX/MIN kernels use plain stores: a
//! masked store is not forwarded to a load of the next call on the same buffer
//! (measured 2-3x slower at 4 KiB). binary16 converts element by element in scalar
//! code (about 1-4 GB/s); F16C would speed it up.
//!
//! Unsafe code here (every block has its SAFETY line):
//! - the SIMD intrinsics, called only at a `SimdLevel` whose CPU features are present.
use crate::datatype::predefined::Elem;
use crate::error::{err, MpiResult};
use std::sync::OnceLock;

use super::BuiltinOp;

/// A reduction kernel: `inout[i] = inv[i] op inout[i]` for every element. Both slices
/// hold the same number of elements; the element count is `inout.len() / extent` (for
/// the pair types with trailing padding also `(len - size) / extent + 1`, so a final
/// element without its padding is reduced too).
pub type Kernel = fn(inv: &[u8], inout: &mut [u8]);

// ---------------------------------------------------------------------------------------
// Element access

/// An element type the kernels read from `N` native-endian bytes.
pub(crate) trait Elt<const N: usize>: Copy {
    fn get(b: [u8; N]) -> Self;
    fn put(self) -> [u8; N];
}

macro_rules! elt_prim {
    ($($t:ty),*) => {$(
        impl Elt<{ std::mem::size_of::<$t>() }> for $t {
            #[inline(always)]
            fn get(b: [u8; std::mem::size_of::<$t>()]) -> Self { <$t>::from_ne_bytes(b) }
            #[inline(always)]
            fn put(self) -> [u8; std::mem::size_of::<$t>()] { self.to_ne_bytes() }
        }
    )*};
}
elt_prim!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// Op codes as const generic parameters (one monomorphised loop per op).
pub(crate) mod code {
    pub const MAX: u8 = 0;
    pub const MIN: u8 = 1;
    pub const SUM: u8 = 2;
    pub const PROD: u8 = 3;
    pub const LAND: u8 = 4;
    pub const LOR: u8 = 5;
    pub const LXOR: u8 = 6;
    pub const BAND: u8 = 7;
    pub const BOR: u8 = 8;
    pub const BXOR: u8 = 9;
}
use code::*;

/// The element-wise operation `OP` on one element type. Only the combinations that
/// [`kernel`] instantiates are reachable.
pub(crate) trait Combine: Copy + 'static {
    fn combine<const OP: u8>(a: Self, b: Self) -> Self;
}

macro_rules! combine_int {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            #[inline(always)]
            fn combine<const OP: u8>(a: $t, b: $t) -> $t {
                match OP {
                    MAX => if a > b { a } else { b },
                    MIN => if a < b { a } else { b },
                    SUM => a.wrapping_add(b),
                    PROD => a.wrapping_mul(b),
                    LAND => ((a != 0) & (b != 0)) as $t,
                    LOR => ((a != 0) | (b != 0)) as $t,
                    LXOR => ((a != 0) ^ (b != 0)) as $t,
                    BAND => a & b,
                    BOR => a | b,
                    BXOR => a ^ b,
                    _ => unreachable!(),
                }
            }
        }
    )*};
}
combine_int!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! combine_float {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            #[inline(always)]
            fn combine<const OP: u8>(a: $t, b: $t) -> $t {
                match OP {
                    // IEEE 754-2019 maximum / minimum: NaN propagates (a's bits first),
                    // +0 > -0. Written as three independent selects so that the loop
                    // vectorises (compare + blend), not as a branch chain; the selects
                    // pick bits, not floats, so that the compiler cannot make the first
                    // one a MAXPD, which under denormals-are-zero returns a subnormal
                    // as a zero (see `daz`): every operand's bits come out unchanged.
                    MAX => {
                        let (x, y) = (a.to_bits(), b.to_bits());
                        let m = if a > b { x } else { y };
                        let m = if a == b { x & y } else { m };
                        <$t>::from_bits(if a.is_nan() { x } else { m })
                    }
                    MIN => {
                        let (x, y) = (a.to_bits(), b.to_bits());
                        let m = if a < b { x } else { y };
                        let m = if a == b { x | y } else { m };
                        <$t>::from_bits(if a.is_nan() { x } else { m })
                    }
                    SUM => a + b,
                    PROD => a * b,
                    _ => unreachable!(),
                }
            }
        }
    )*};
}
combine_float!(f32, f64);

/// IEEE binary16 (MPIX_C_FLOAT16), computed in f32 and rounded back to nearest-even:
/// f32 carries 24 bits >= 2*11+2, so the double rounding is exact for + and *.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Half(pub u16);

impl Elt<2> for Half {
    #[inline(always)]
    fn get(b: [u8; 2]) -> Self {
        Half(u16::from_ne_bytes(b))
    }
    #[inline(always)]
    fn put(self) -> [u8; 2] {
        self.0.to_ne_bytes()
    }
}

/// binary16 bits -> f32 (exact).
pub(crate) fn half_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match exp {
        0 => {
            // zero or subnormal: man * 2^-24, exact in f32
            let v = man as f32 * (1.0 / 16_777_216.0);
            return f32::from_bits(v.to_bits() | sign);
        }
        31 => sign | 0x7f80_0000 | (man << 13),
        _ => sign | ((exp + 112) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// f32 -> binary16 bits, round to nearest, ties to even; NaN stays NaN (quiet).
pub(crate) fn f32_to_half(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let e = ((x >> 23) & 0xff) as i32;
    let m = x & 0x007f_ffff;
    if e == 255 {
        return sign | 0x7c00 | if m != 0 { 0x200 | (m >> 13) as u16 } else { 0 };
    }
    let e16 = e - 127 + 15;
    if e16 >= 31 {
        return sign | 0x7c00;
    }
    if e16 <= 0 {
        if e16 < -10 {
            return sign;
        }
        let mm = m | 0x0080_0000;
        let shift = (14 - e16) as u32;
        let half = 1u32 << (shift - 1);
        let rem = mm & ((1u32 << shift) - 1);
        let mut r = mm >> shift;
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e16 as u32) << 10) | (m >> 13);
    let rem = m & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

impl Combine for Half {
    #[inline(always)]
    fn combine<const OP: u8>(a: Half, b: Half) -> Half {
        let (x, y) = (half_to_f32(a.0), half_to_f32(b.0));
        match OP {
            MAX => Half(if x > y {
                a.0
            } else if y > x {
                b.0
            } else if x == y {
                a.0 & b.0
            } else if x.is_nan() {
                a.0
            } else {
                b.0
            }),
            MIN => Half(if x < y {
                a.0
            } else if y < x {
                b.0
            } else if x == y {
                a.0 | b.0
            } else if x.is_nan() {
                a.0
            } else {
                b.0
            }),
            SUM => Half(f32_to_half(x + y)),
            PROD => Half(f32_to_half(x * y)),
            _ => unreachable!(),
        }
    }
}

/// A complex number of two `T` (real part first).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Cplx<T>(pub T, pub T);

macro_rules! complex {
    ($t:ty, $n:expr) => {
        impl Elt<{ 2 * $n }> for Cplx<$t> {
            #[inline(always)]
            fn get(b: [u8; 2 * $n]) -> Self {
                let (re, im) = b.split_at($n);
                Cplx(
                    <$t>::from_ne_bytes(re.try_into().unwrap()),
                    <$t>::from_ne_bytes(im.try_into().unwrap()),
                )
            }
            #[inline(always)]
            fn put(self) -> [u8; 2 * $n] {
                let mut out = [0u8; 2 * $n];
                out[..$n].copy_from_slice(&self.0.to_ne_bytes());
                out[$n..].copy_from_slice(&self.1.to_ne_bytes());
                out
            }
        }
        impl Combine for Cplx<$t> {
            #[inline(always)]
            fn combine<const OP: u8>(a: Self, b: Self) -> Self {
                match OP {
                    SUM => Cplx(a.0 + b.0, a.1 + b.1),
                    PROD => Cplx(a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0),
                    _ => unreachable!(),
                }
            }
        }
    };
}
complex!(f32, 4);
complex!(f64, 8);

// ---------------------------------------------------------------------------------------
// The loops

/// The one loop: element-wise `inout = inv OP inout` over `N`-byte chunks.
#[inline(always)]
fn map2<T: Elt<N> + Combine, const N: usize, const OP: u8>(inv: &[u8], inout: &mut [u8]) {
    let (a, _) = inv.as_chunks::<N>();
    let (b, _) = inout.as_chunks_mut::<N>();
    for (x, y) in a.iter().zip(b.iter_mut()) {
        *y = T::combine::<OP>(T::get(*x), T::get(*y)).put();
    }
}

fn k_base<T: Elt<N> + Combine, const N: usize, const OP: u8>(inv: &[u8], inout: &mut [u8]) {
    map2::<T, N, OP>(inv, inout)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn k_avx2_inner<T: Elt<N> + Combine, const N: usize, const OP: u8>(inv: &[u8], inout: &mut [u8]) {
    map2::<T, N, OP>(inv, inout)
}

#[cfg(target_arch = "x86_64")]
fn k_avx2<T: Elt<N> + Combine, const N: usize, const OP: u8>(inv: &[u8], inout: &mut [u8]) {
    if inout.len() >= STREAM_128 {
        return k_stream::<T, N, OP>(inv, inout);
    }
    // SAFETY: this kernel is handed out by `pick` only when `simd_level()` found AVX2
    // on this CPU, so the AVX2 instructions in the callee are supported.
    lined(inv, inout, N, |a, b| unsafe {
        k_avx2_inner::<T, N, OP>(a, b)
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn k_sse4_inner<T: Elt<N> + Combine, const N: usize, const OP: u8>(inv: &[u8], inout: &mut [u8]) {
    map2::<T, N, OP>(inv, inout)
}

/// The loop of the vector levels for buffers of [`STREAM_128`] bytes and more: on
/// 128-bit vectors (SSE4.2), from a line on.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn k_stream<T: Elt<N> + Combine, const N: usize, const OP: u8>(inv: &[u8], inout: &mut [u8]) {
    // SAFETY: called only by kernels handed out at `SimdLevel::Avx2` or above, which
    // `simd_level()` reports only when the CPU has AVX2, and so SSE4.2.
    lined(inv, inout, N, |a, b| unsafe {
        k_sse4_inner::<T, N, OP>(a, b)
    })
}

/// Which vector instruction set the kernels use, detected once. Ordered: a level
/// implies the ones below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SimdLevel {
    Baseline,
    Avx2,
    /// AVX-512 F/BW/VL/DQ.
    Avx512,
}

/// The detected level; `SHMPI_SIMD=baseline` or `SHMPI_SIMD=avx2` caps it.
pub fn simd_level() -> SimdLevel {
    static LEVEL: OnceLock<SimdLevel> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        #[allow(unused_mut)]
        let mut have = SimdLevel::Baseline;
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") {
                have = SimdLevel::Avx2;
                if has!("avx512f") && has!("avx512bw") && has!("avx512vl") && has!("avx512dq") {
                    have = SimdLevel::Avx512;
                }
            }
        }
        match crate::settings::rank().simd {
            crate::settings::SimdCap::Baseline => SimdLevel::Baseline,
            crate::settings::SimdCap::Avx2 => have.min(SimdLevel::Avx2),
            crate::settings::SimdCap::None => have,
        }
    })
}

/// Buffers from this many bytes on are reduced from a line on (see [`line_head`]).
#[cfg(target_arch = "x86_64")]
const LINE_MIN: usize = 1024;

/// How many bytes to reduce first so that the rest of `inout` starts on a 64-byte
/// line: a whole number of `n`-byte elements under 64 bytes, or 0 when the buffer is
/// short or no such number reaches a line. A 512-bit store that straddles two lines
/// costs about twice one that does not: on an AMD Zen 4 a 32 KiB MPI_SUM on doubles
/// 16 bytes past a line took 683 ns against 567 on the line.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn line_head(inout: &[u8], n: usize) -> usize {
    if inout.len() < LINE_MIN {
        // (first, so that a short buffer costs one compare)
        return 0;
    }
    let head = (64 - inout.as_ptr() as usize % 64) % 64;
    if head.is_multiple_of(n) {
        head
    } else {
        0
    }
}

/// `kernel` on the whole buffers, or, when `inout` has a head before its first line
/// ([`line_head`]), on the head and then on the rest: two calls of the one compiled loop,
/// from a function of its own, so that the common path stays a compare and a jump to the
/// loop. (Measured on an AMD Zen 4 against that: the split inside the loop's function,
/// or a second instance of the loop that splits, cost short and aligned buffers 0.3-3 ns
/// a call from 8 bytes to 4 KiB, and the second instances doubled the kernels' code; the
/// two calls inlined here made every call save registers, 1 ns at 8 bytes.)
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn lined(inv: &[u8], inout: &mut [u8], n: usize, kernel: impl Fn(&[u8], &mut [u8])) {
    let head = line_head(inout, n).min(inv.len());
    if head == 0 {
        return kernel(inv, inout);
    }
    split_at_line(inv, inout, head, kernel)
}

/// `kernel` on the first `head` bytes, then on the rest.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
#[cold]
fn split_at_line(inv: &[u8], inout: &mut [u8], head: usize, kernel: impl Fn(&[u8], &mut [u8])) {
    let (inv0, inv1) = inv.split_at(head);
    let (io0, io1) = inout.split_at_mut(head);
    kernel(inv0, io0);
    kernel(inv1, io1)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
fn k_avx512_inner<T: Elt<N> + Combine, const N: usize, const OP: u8>(inv: &[u8], inout: &mut [u8]) {
    map2::<T, N, OP>(inv, inout)
}

#[cfg(target_arch = "x86_64")]
fn k_avx512<T: Elt<N> + Combine, const N: usize, const OP: u8>(inv: &[u8], inout: &mut [u8]) {
    if (inout.len() >= STREAM_256 || store_alias(inv, inout)) && !needs_512::<T, OP>() {
        // (the AVX2 kernel: AVX-512 implies AVX2, `simd_level()` checks AVX2 first)
        return k_avx2::<T, N, OP>(inv, inout);
    }
    // SAFETY: this kernel is handed out by `pick` only at `SimdLevel::Avx512`, which
    // `simd_level()` reports only when the CPU has AVX-512 F/BW/VL/DQ.
    lined(inv, inout, N, |a, b| unsafe {
        k_avx512_inner::<T, N, OP>(a, b)
    })
}

/// Whether `inout` starts 1 to `ALIAS_WINDOW - 1` bytes past `inv` modulo 4 KiB (and
/// has `LINE_MIN` bytes or more). Then the 512-bit loops' loads of `inv` a line or a
/// few ahead share their low 12 address bits with the stores to `inout` just before,
/// and on an AMD Zen 4, in some processes (their placement decides which), wait for
/// them; the 256-bit loops do not. MPI_Reduce_local on doubles with `inout` 64 to 192
/// bytes past `inv` modulo 4 KiB (four processes each, the worst against `inout` on
/// the same line as `inv` modulo 4 KiB): SUM up to 1.9x the time at 4 KiB, 1.65x at
/// 16 KiB, 1.16-1.26x at 32-128 KiB, 1.06x at 512 KiB; MAX 3.4x, 2.5x, 1.4-1.6x and
/// 1.2x; the AVX2 level's loops within 2% up to 128 KiB, within the noise at 512 KiB.
/// (Two buffers of a power-of-two size from malloc lie this way: its header, 16 to 64
/// bytes, apart modulo 4 KiB.) So the AVX-512 level runs its 256-bit loops then.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn store_alias(inv: &[u8], inout: &[u8]) -> bool {
    let d = (inout.as_ptr() as usize).wrapping_sub(inv.as_ptr() as usize) % 4096;
    inout.len() >= LINE_MIN && d != 0 && d < ALIAS_WINDOW
}

/// See [`store_alias`]: 256 to 512 bytes past still cost up to 1.1x at 32 KiB and
/// 1.3x at 4 KiB; 768 and more nothing measurable, nor did `inout` before `inv`.
#[cfg(target_arch = "x86_64")]
const ALIAS_WINDOW: usize = 768;

/// Whether the thread runs with denormals-are-zero (MXCSR bit 6; programs built with
/// -ffast-math or -Ofast set it at start-up). Then VMAXPD/VMINPD return a subnormal
/// operand as a zero of its sign, while the generic loop (compare and select) returns
/// its bits; the hand-written float MAX/MIN kernels hand over to the generic loop then,
/// so that every level gives the same bytes. Asked by rounding the smallest subnormal
/// up to an integer (ROUNDSD, SSE4.1, which every vector level has): 1 normally, 0 under
/// that mode, and no exception flag either way (precision suppressed; ROUNDSD has no
/// denormal flag). Reading MXCSR (STMXCSR) took 4 ns a call on an AMD Zen 4, and a
/// compare of the subnormal with zero sets the denormal flag.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn daz() -> bool {
    let mut x = f64::from_bits(1);
    // SAFETY: ROUNDSD on a register (round up, precision exception suppressed); the
    // vector levels that call this have SSE4.1.
    unsafe {
        std::arch::asm!("roundsd {0}, {0}, 10", inout(xmm_reg) x, options(nomem, nostack, preserves_flags))
    };
    x.to_bits() == 0
}

/// From this many bytes on (two buffers no longer fit the second-level cache) the
/// AVX-512 level runs 256-bit loops: the AVX2 loop, or for what only AVX-512 has
/// (64-bit integer MAX/MIN/PROD) its instructions on 256-bit vectors. On an AMD Zen 4
/// 512-bit vectors stream the third-level cache and memory more slowly than 256-bit
/// ones: `a[i] += b[i]` in C took 48.3-48.9 GB/s against 50.7-50.9 at 2 MiB (output on
/// a line), 21.3-22.4 against 22.9-24.2 at 16 MiB and 10.0-11.8 against 11.8-13.4 at 64
/// MiB (any alignment). MPI_Reduce_local with this threshold at 1 MiB instead of 8 MiB
/// (64-byte aligned buffers, the fastest batch of three alternating runs): 1-4% faster
/// at 1 and 2 MiB for every type and op, 8% for MPI_INT8_T PROD. Inside the
/// second-level cache the two widths were within 5% of each other but at 512 bytes,
/// where the wide loop won by 10%, and for 8-bit PROD, where AVX-512BW's loop is
/// 10-20% faster than the AVX2 one.
pub(crate) const STREAM_256: usize = 1 << 20;

/// From this many bytes on (two buffers half again as large as the third-level cache of
/// the machine measured) the vector levels run 128-bit loops: the generic loop compiled
/// for SSE4.2 ([`k_stream`]), and 128-bit versions of the hand-written float MAX/MIN and
/// 64-bit integer kernels. Beyond the caches, on an AMD Zen 4 with 32 MiB of
/// third-level cache, they read and write memory faster than wider ones: `a[i] += b[i]`
/// on 64 MiB in C (the median of interleaved calls, five runs) took 0.91-0.96x the
/// time of the same loop on 256-bit vectors, 0.79-0.81x that of 512-bit ones and
/// 0.93-0.97x that of a scalar loop; at 32 MiB as long as 256-bit, at 16 MiB 1.08x.
/// MPI_Reduce_local with the generic loop on 128-bit vectors took 0.94-0.97x the time
/// of the 256-bit one at 24 and 32 MiB and 0.90-1.0x at 64 MiB (time relative to a C
/// loop in the same process, alternating runs), but 1.04-1.08x at 16 MiB. (More in
/// BENCHMARKS.md.)
pub(crate) const STREAM_128: usize = 24 << 20;

/// From this many bytes on (two buffers fill three quarters of the third-level cache
/// of the machine measured) up to [`STREAM_128`], 8-bit PROD at the AVX-512 level runs
/// `avx512::prod_8_widened`. On an AMD Zen 4 (MPI_Reduce_local, time relative to a C
/// loop in the same process, alternating runs) it took 0.94-0.96x the time of the
/// 256-bit generic loop at 12 and 16 MiB, 0.97-1.02x at 10 MiB, but 1.05-1.09x at
/// 8 MiB, 1.34-1.35x at 4 MiB and 1.04-1.07x at 64 MiB (against the 128-bit loop there).
pub(crate) const PROD8_WIDEN: usize = 12 << 20;

/// Whether the loop of `OP` on `T` needs AVX-512 instructions to vectorise: 64-bit
/// integer multiply, maximum and minimum (VPMULLQ, VPMAXSQ, ...), which AVX2 lacks.
#[cfg(target_arch = "x86_64")]
fn needs_512<T: 'static, const OP: u8>() -> bool {
    use std::any::TypeId;
    let wide_int =
        TypeId::of::<T>() == TypeId::of::<i64>() || TypeId::of::<T>() == TypeId::of::<u64>();
    wide_int && matches!(OP, MAX | MIN | PROD)
}

fn pick<T: Elt<N> + Combine, const N: usize, const OP: u8>(level: SimdLevel) -> Kernel {
    match level {
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx2 => k_avx2::<T, N, OP>,
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 => k_avx512::<T, N, OP>,
        _ => k_base::<T, N, OP>,
    }
}

fn arith<T: Elt<N> + Combine, const N: usize>(op: BuiltinOp, l: SimdLevel) -> Option<Kernel> {
    Some(match op {
        BuiltinOp::Max => pick::<T, N, MAX>(l),
        BuiltinOp::Min => pick::<T, N, MIN>(l),
        BuiltinOp::Sum => pick::<T, N, SUM>(l),
        BuiltinOp::Prod => pick::<T, N, PROD>(l),
        _ => return None,
    })
}

fn integer<T: Elt<N> + Combine, const N: usize>(op: BuiltinOp, l: SimdLevel) -> Option<Kernel> {
    Some(match op {
        BuiltinOp::Land => pick::<T, N, LAND>(l),
        BuiltinOp::Lor => pick::<T, N, LOR>(l),
        BuiltinOp::Lxor => pick::<T, N, LXOR>(l),
        BuiltinOp::Band => pick::<T, N, BAND>(l),
        BuiltinOp::Bor => pick::<T, N, BOR>(l),
        BuiltinOp::Bxor => pick::<T, N, BXOR>(l),
        _ => return arith::<T, N>(op, l),
    })
}

fn complex<T: Elt<N> + Combine, const N: usize>(op: BuiltinOp, l: SimdLevel) -> Option<Kernel> {
    Some(match op {
        BuiltinOp::Sum => pick::<T, N, SUM>(l),
        BuiltinOp::Prod => pick::<T, N, PROD>(l),
        _ => return None,
    })
}

fn logical<T: Elt<N> + Combine, const N: usize>(op: BuiltinOp, l: SimdLevel) -> Option<Kernel> {
    Some(match op {
        BuiltinOp::Land => pick::<T, N, LAND>(l),
        BuiltinOp::Lor => pick::<T, N, LOR>(l),
        BuiltinOp::Lxor => pick::<T, N, LXOR>(l),
        _ => return None,
    })
}

fn bytewise(op: BuiltinOp, l: SimdLevel) -> Option<Kernel> {
    Some(match op {
        BuiltinOp::Band => pick::<u8, 1, BAND>(l),
        BuiltinOp::Bor => pick::<u8, 1, BOR>(l),
        BuiltinOp::Bxor => pick::<u8, 1, BXOR>(l),
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------
// Folds of several sources

/// A fold of several sources in one pass: `out = s[k-1] op (... op (s[1] op s[0]))`,
/// element-wise (the collectives' fold order for a commutative operation, coll/reduce.rs
/// `fold`), each step the binary kernel's `combine`, so the bits are those of a copy of
/// `s[0]` followed by `k - 1` binary kernel calls. All slices hold the same whole number
/// of elements; `out` overlaps no source.
pub type MultiKernel = fn(srcs: &[&[u8]], out: &mut [u8]);

/// Elements per tile of [`MultiKernel`]s: at 8 bytes, eight AVX2 registers.
const TILE: usize = 32;

#[inline(always)]
fn map_n<T: Elt<N> + Combine, const N: usize, const OP: u8>(srcs: &[&[u8]], out: &mut [u8]) {
    let Some((first, rest)) = srcs.split_first() else {
        return;
    };
    let (o, _) = out.as_chunks_mut::<N>();
    let (s0, _) = first.as_chunks::<N>();
    if let [s1] = rest {
        // (two sources, the common case, and short vectors: one plain loop)
        let (s1, _) = s1.as_chunks::<N>();
        for ((o, a), b) in o.iter_mut().zip(s0).zip(s1) {
            *o = T::combine::<OP>(T::get(*b), T::get(*a)).put();
        }
        return;
    }
    let len = o.len().min(s0.len());
    let tiles = len / TILE * TILE;
    for i in (0..tiles).step_by(TILE) {
        let t0 = &s0[i..i + TILE];
        let mut r: [T; TILE] = std::array::from_fn(|j| T::get(t0[j]));
        for s in rest {
            let (x, _) = s.as_chunks::<N>();
            for (r, x) in r.iter_mut().zip(&x[i..i + TILE]) {
                *r = T::combine::<OP>(T::get(*x), *r);
            }
        }
        for (o, r) in o[i..i + TILE].iter_mut().zip(r) {
            *o = r.put();
        }
    }
    for i in tiles..len {
        let mut r = T::get(s0[i]);
        for s in rest {
            let (x, _) = s.as_chunks::<N>();
            r = T::combine::<OP>(T::get(x[i]), r);
        }
        o[i] = r.put();
    }
}

fn m_base<T: Elt<N> + Combine, const N: usize, const OP: u8>(srcs: &[&[u8]], out: &mut [u8]) {
    map_n::<T, N, OP>(srcs, out)
}

/// Every source cut at `head` bytes, for up to [`MAX_SPLIT`] sources: the heads and
/// the rests, for a fold of `out`'s part before its first 64-byte line and then of the
/// rest (see [`line_head`]). `None` if there are more sources or one is shorter.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(clippy::type_complexity)]
fn split_sources<'a>(
    srcs: &[&'a [u8]],
    head: usize,
) -> Option<([&'a [u8]; MAX_SPLIT], [&'a [u8]; MAX_SPLIT])> {
    if srcs.len() > MAX_SPLIT || srcs.iter().any(|s| s.len() < head) {
        return None;
    }
    let mut heads: [&[u8]; MAX_SPLIT] = [&[]; MAX_SPLIT];
    let mut rests: [&[u8]; MAX_SPLIT] = [&[]; MAX_SPLIT];
    for (k, s) in srcs.iter().enumerate() {
        (heads[k], rests[k]) = s.split_at(head);
    }
    Some((heads, rests))
}

/// Sources a multi-source fold aligns its output for (more fold unaligned).
#[cfg(target_arch = "x86_64")]
const MAX_SPLIT: usize = 16;

/// As [`lined`], for a multi-source fold (the sources cut where `out` is).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn lined_n(srcs: &[&[u8]], out: &mut [u8], n: usize, fold: impl Fn(&[&[u8]], &mut [u8])) {
    let head = line_head(out, n);
    if head == 0 {
        return fold(srcs, out);
    }
    split_n_at_line(srcs, out, head, fold)
}

/// `fold` on the first `head` bytes of every buffer, then on the rest (or on the whole,
/// for more than [`MAX_SPLIT`] sources).
#[cfg(target_arch = "x86_64")]
#[inline(never)]
#[cold]
fn split_n_at_line(
    srcs: &[&[u8]],
    out: &mut [u8],
    head: usize,
    fold: impl Fn(&[&[u8]], &mut [u8]),
) {
    let Some((heads, rests)) = split_sources(srcs, head) else {
        return fold(srcs, out);
    };
    let (o0, o1) = out.split_at_mut(head);
    fold(&heads[..srcs.len()], o0);
    fold(&rests[..srcs.len()], o1)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn m_avx2_inner<T: Elt<N> + Combine, const N: usize, const OP: u8>(srcs: &[&[u8]], out: &mut [u8]) {
    map_n::<T, N, OP>(srcs, out)
}

#[cfg(target_arch = "x86_64")]
fn m_avx2<T: Elt<N> + Combine, const N: usize, const OP: u8>(srcs: &[&[u8]], out: &mut [u8]) {
    // SAFETY: handed out by `pick_multi` only when `simd_level()` found AVX2 on this CPU.
    lined_n(srcs, out, N, |s, o| unsafe {
        m_avx2_inner::<T, N, OP>(s, o)
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
fn m_avx512_inner<T: Elt<N> + Combine, const N: usize, const OP: u8>(
    srcs: &[&[u8]],
    out: &mut [u8],
) {
    map_n::<T, N, OP>(srcs, out)
}

#[cfg(target_arch = "x86_64")]
fn m_avx512<T: Elt<N> + Combine, const N: usize, const OP: u8>(srcs: &[&[u8]], out: &mut [u8]) {
    let alias = || srcs.iter().any(|s| store_alias(s, out));
    if (out.len() >= STREAM_256 || alias()) && !needs_512::<T, OP>() {
        // (256-bit vectors beyond the second-level cache or when a source lies just
        // before `out` modulo 4 KiB, as in `k_avx512`; AVX-512 implies AVX2,
        // `simd_level()` checks AVX2 first)
        return m_avx2::<T, N, OP>(srcs, out);
    }
    // SAFETY: handed out by `pick_multi` only at `SimdLevel::Avx512`, which
    // `simd_level()` reports only when the CPU has AVX-512 F/BW/VL/DQ.
    lined_n(srcs, out, N, |s, o| unsafe {
        m_avx512_inner::<T, N, OP>(s, o)
    })
}

fn pick_multi<T: Elt<N> + Combine, const N: usize, const OP: u8>(level: SimdLevel) -> MultiKernel {
    match level {
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx2 => m_avx2::<T, N, OP>,
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 => m_avx512::<T, N, OP>,
        _ => m_base::<T, N, OP>,
    }
}

/// The integer ops, but MAX/MIN where `minmax` is false (64-bit below AVX-512: the
/// generic loop does not vectorise them, module `avx2` has the binary kernels).
fn multi_int<T: Elt<N> + Combine, const N: usize>(
    op: BuiltinOp,
    l: SimdLevel,
    minmax: bool,
) -> Option<MultiKernel> {
    Some(match op {
        BuiltinOp::Max if minmax => pick_multi::<T, N, MAX>(l),
        BuiltinOp::Min if minmax => pick_multi::<T, N, MIN>(l),
        BuiltinOp::Sum => pick_multi::<T, N, SUM>(l),
        BuiltinOp::Prod => pick_multi::<T, N, PROD>(l),
        BuiltinOp::Land => pick_multi::<T, N, LAND>(l),
        BuiltinOp::Lor => pick_multi::<T, N, LOR>(l),
        BuiltinOp::Lxor => pick_multi::<T, N, LXOR>(l),
        BuiltinOp::Band => pick_multi::<T, N, BAND>(l),
        BuiltinOp::Bor => pick_multi::<T, N, BOR>(l),
        BuiltinOp::Bxor => pick_multi::<T, N, BXOR>(l),
        _ => return None,
    })
}

/// The [`MultiKernel`] of predefined `op` on elements `elem` (a pair the standard
/// defines: the caller checks), where one computes what the binary kernel does: SUM
/// and PROD on floating point, the integer ops (64-bit MAX/MIN only with AVX-512), the
/// logical ops on C_BOOL and LOGICAL, the bitwise ops on MPI_BYTE. `None` for the rest
/// (float MAX/MIN, complex, pairs, long double, binary16): they fold with the binary
/// kernel.
pub fn multi_kernel(op: BuiltinOp, elem: Elem) -> Option<MultiKernel> {
    let l = simd_level();
    let wide_minmax = l >= SimdLevel::Avx512;
    match elem {
        Elem::I8 => multi_int::<i8, 1>(op, l, true),
        Elem::I16 => multi_int::<i16, 2>(op, l, true),
        Elem::I32 => multi_int::<i32, 4>(op, l, true),
        Elem::I64 => multi_int::<i64, 8>(op, l, wide_minmax),
        Elem::U8 | Elem::Byte | Elem::CBool => multi_int::<u8, 1>(op, l, true),
        Elem::U16 => multi_int::<u16, 2>(op, l, true),
        Elem::U32 => multi_int::<u32, 4>(op, l, true),
        Elem::U64 => multi_int::<u64, 8>(op, l, wide_minmax),
        Elem::FLogical => multi_int::<i32, 4>(op, l, true),
        Elem::F32 => match op {
            BuiltinOp::Sum => Some(pick_multi::<f32, 4, SUM>(l)),
            BuiltinOp::Prod => Some(pick_multi::<f32, 4, PROD>(l)),
            _ => None,
        },
        Elem::F64 => match op {
            BuiltinOp::Sum => Some(pick_multi::<f64, 8, SUM>(l)),
            BuiltinOp::Prod => Some(pick_multi::<f64, 8, PROD>(l)),
            _ => None,
        },
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// MINLOC / MAXLOC

/// A value or index of a pair type: compared with `<`, `==` and NaN-aware.
pub(crate) trait Key<const N: usize>: Elt<N> + PartialOrd {}
impl<T: Elt<N> + PartialOrd, const N: usize> Key<N> for T {}

/// Whether the `inv` pair (av, ai) replaces the `inout` pair (bv, bi).
#[inline(always)]
fn loc_takes_a<V: PartialOrd, I: PartialOrd>(av: V, ai: I, bv: V, bi: I, max: bool) -> bool {
    let (a_better, b_better) = if max {
        (av > bv, bv > av)
    } else {
        (av < bv, bv < av)
    };
    if a_better {
        true
    } else if b_better {
        false
    } else {
        // equal, or at least one NaN: a NaN value wins; otherwise the smaller index.
        #[allow(clippy::eq_op)]
        let (an, bn) = (av != av, bv != bv);
        if an != bn {
            an
        } else {
            ai < bi
        }
    }
}

/// MINLOC/MAXLOC over pairs: value `V` at 0, index `I` at `IOFF`, stride `EXT`.
fn loc<
    V: Key<VN>,
    const VN: usize,
    I: Key<IN>,
    const IN: usize,
    const IOFF: usize,
    const EXT: usize,
    const MAX: bool,
>(
    inv: &[u8],
    inout: &mut [u8],
) {
    for (a, b) in inv.chunks(EXT).zip(inout.chunks_mut(EXT)) {
        if a.len() < IOFF + IN || b.len() < IOFF + IN {
            break;
        }
        let av = V::get(a[..VN].try_into().unwrap());
        let bv = V::get(b[..VN].try_into().unwrap());
        let ai = I::get(a[IOFF..IOFF + IN].try_into().unwrap());
        let bi = I::get(b[IOFF..IOFF + IN].try_into().unwrap());
        if loc_takes_a(av, ai, bv, bi, MAX) {
            b[..VN].copy_from_slice(&a[..VN]);
            b[IOFF..IOFF + IN].copy_from_slice(&a[IOFF..IOFF + IN]);
        }
    }
}

fn pair<
    V: Key<VN>,
    const VN: usize,
    I: Key<IN>,
    const IN: usize,
    const IOFF: usize,
    const EXT: usize,
>(
    op: BuiltinOp,
) -> Option<Kernel> {
    match op {
        BuiltinOp::Maxloc => Some(loc::<V, VN, I, IN, IOFF, EXT, true>),
        BuiltinOp::Minloc => Some(loc::<V, VN, I, IN, IOFF, EXT, false>),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Hand-written AVX2 loops where the generic loop does not vectorise well

/// AVX2 kernels written with intrinsics: float MAX/MIN (the generic select chain
/// compiled to 2.5x slower than SUM), MAX/MIN on 64-bit integers, and MINLOC/MAXLOC on
/// MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT (MPI_2INTEGER), MPI_FLOAT_INT, MPI_2REAL and
/// MPI_2DOUBLE_PRECISION (the generic loop is scalar and branchy). Same results, bit for
/// bit, as the generic loops: each ends with the generic loop on the remainder.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{code, loc, map2, Kernel};
    use std::arch::x86_64::*;

    /// IEEE maximum/minimum on vectors `$v` of `$w` bytes (32; 16 in the `_x` kernels,
    /// from `super::STREAM_128` bytes on): `max_pd(a, b)` is `a > b ? a : b`
    /// (`b` when they are equal or either is a NaN); equal values (±0) then take
    /// `a & b` (MAX: +0 wins) or `a | b` (MIN: -0 wins); a NaN `a` wins last.
    ///
    /// Fast path: `max_pd(a, b)` / `min_pd(a, b)` alone is already that result unless
    /// `a` (the `inv` element) is a NaN or a zero (a NaN `b` comes out as `b`; equal
    /// non-zero values have the same bits). One unordered-or-equal compare of `a`
    /// with 0 finds those lanes (under denormals-are-zero the kernel runs the generic
    /// loop instead: see `super::daz`). Four vectors (128
    /// or 64 bytes) at a time take the bare max/min when none has such a lane, else
    /// all four get the full formula, and so do the next 4 KiB, unchecked; the rest
    /// goes vector by vector through the full formula.
    /// On a Zen 3 the full formula alone ran 1.5-2x slower than the bare instruction
    /// in the first- and second-level caches. (Comparing `a == b` instead, as an
    /// earlier attempt did, sends every block of a repeated reduction on the same
    /// buffer to the slow path: after one call most lanes are equal.)
    macro_rules! fminmax {
        ($name:ident, $t:ty, $v:ty, $w:expr, $n:expr, $op:expr, $load:ident, $store:ident,
         $cmp:ident, $blend:ident, $pick:ident, $eqfix:ident, $zero:ident, $or:ident,
         $testz:ident) => {
            #[target_feature(enable = "avx2")]
            pub(super) fn $name(inv: &[u8], inout: &mut [u8]) {
                if super::daz() {
                    return map2::<$t, $n, { $op }>(inv, inout);
                }
                #[inline(always)]
                fn full(a: $v, b: $v) -> $v {
                    // SAFETY: register-only AVX intrinsics; only called from the
                    // AVX2-enabled kernel below.
                    unsafe {
                        let m = $pick(a, b);
                        let m = $blend(m, $eqfix(a, b), $cmp::<_CMP_EQ_OQ>(a, b));
                        $blend(m, a, $cmp::<_CMP_UNORD_Q>(a, a))
                    }
                }
                let len = inv.len().min(inout.len());
                // The four vectors at byte i (i + 4w <= len): the bare max/min if
                // `check` and no lane of `inv` needs the full formula, else the full
                // formula. Returns whether they took the bare one.
                let block = |inout: &mut [u8], i: usize, check: bool| -> bool {
                    // SAFETY: callers keep i + 4w <= len, so bytes i..i+4w lie inside
                    // both slices; unaligned loads and stores; AVX2 is present (see
                    // `kernel_at`).
                    unsafe {
                        let pa = inv.as_ptr().add(i);
                        let pb = inout.as_mut_ptr().add(i);
                        let a = [0, $w, 2 * $w, 3 * $w].map(|o| $load(pa.add(o).cast()));
                        let b =
                            [0, $w, 2 * $w, 3 * $w].map(|o| $load(pb.add(o).cast_const().cast()));
                        let fast = check && {
                            let z = $zero();
                            let s = $or(
                                $or($cmp::<_CMP_EQ_UQ>(a[0], z), $cmp::<_CMP_EQ_UQ>(a[1], z)),
                                $or($cmp::<_CMP_EQ_UQ>(a[2], z), $cmp::<_CMP_EQ_UQ>(a[3], z)),
                            );
                            $testz(s, s) != 0
                        };
                        for k in 0..4 {
                            let r = if fast {
                                $pick(a[k], b[k])
                            } else {
                                full(a[k], b[k])
                            };
                            $store(pb.add($w * k).cast(), r);
                        }
                        fast
                    }
                };
                let mut i = 0;
                while i + 4 * $w <= len {
                    let fast = block(inout, i, true);
                    i += 4 * $w;
                    if !fast {
                        // Data rich in zeros would fail the check block after block,
                        // paying for it (and for mispredicted branches) on top of the
                        // full formula: the next 4 KiB take the full formula unchecked.
                        let stop = (i + 4096).min(len);
                        while i + 4 * $w <= stop {
                            block(inout, i, false);
                            i += 4 * $w;
                        }
                    }
                }
                while i + $w <= len {
                    // SAFETY: bytes i..i+w lie inside both slices; as above.
                    unsafe {
                        let a = $load(inv.as_ptr().add(i).cast());
                        let pb = inout.as_mut_ptr().add(i);
                        let b = $load(pb.cast_const().cast());
                        $store(pb.cast(), full(a, b));
                    }
                    i += $w;
                }
                map2::<$t, $n, { $op }>(&inv[i..], &mut inout[i..]);
            }
        };
    }

    fminmax!(
        max_f64,
        f64,
        __m256d,
        32,
        8,
        code::MAX,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_cmp_pd,
        _mm256_blendv_pd,
        _mm256_max_pd,
        _mm256_and_pd,
        _mm256_setzero_pd,
        _mm256_or_pd,
        _mm256_testz_pd
    );
    fminmax!(
        min_f64,
        f64,
        __m256d,
        32,
        8,
        code::MIN,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_cmp_pd,
        _mm256_blendv_pd,
        _mm256_min_pd,
        _mm256_or_pd,
        _mm256_setzero_pd,
        _mm256_or_pd,
        _mm256_testz_pd
    );
    fminmax!(
        max_f32,
        f32,
        __m256,
        32,
        4,
        code::MAX,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_cmp_ps,
        _mm256_blendv_ps,
        _mm256_max_ps,
        _mm256_and_ps,
        _mm256_setzero_ps,
        _mm256_or_ps,
        _mm256_testz_ps
    );
    fminmax!(
        min_f32,
        f32,
        __m256,
        32,
        4,
        code::MIN,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_cmp_ps,
        _mm256_blendv_ps,
        _mm256_min_ps,
        _mm256_or_ps,
        _mm256_setzero_ps,
        _mm256_or_ps,
        _mm256_testz_ps
    );

    fminmax!(
        max_f64_x,
        f64,
        __m128d,
        16,
        8,
        code::MAX,
        _mm_loadu_pd,
        _mm_storeu_pd,
        _mm_cmp_pd,
        _mm_blendv_pd,
        _mm_max_pd,
        _mm_and_pd,
        _mm_setzero_pd,
        _mm_or_pd,
        _mm_testz_pd
    );
    fminmax!(
        min_f64_x,
        f64,
        __m128d,
        16,
        8,
        code::MIN,
        _mm_loadu_pd,
        _mm_storeu_pd,
        _mm_cmp_pd,
        _mm_blendv_pd,
        _mm_min_pd,
        _mm_or_pd,
        _mm_setzero_pd,
        _mm_or_pd,
        _mm_testz_pd
    );
    fminmax!(
        max_f32_x,
        f32,
        __m128,
        16,
        4,
        code::MAX,
        _mm_loadu_ps,
        _mm_storeu_ps,
        _mm_cmp_ps,
        _mm_blendv_ps,
        _mm_max_ps,
        _mm_and_ps,
        _mm_setzero_ps,
        _mm_or_ps,
        _mm_testz_ps
    );
    fminmax!(
        min_f32_x,
        f32,
        __m128,
        16,
        4,
        code::MIN,
        _mm_loadu_ps,
        _mm_storeu_ps,
        _mm_cmp_ps,
        _mm_blendv_ps,
        _mm_min_ps,
        _mm_or_ps,
        _mm_setzero_ps,
        _mm_or_ps,
        _mm_testz_ps
    );

    /// MAX/MIN on 64-bit integers (signed, or unsigned after flipping both sign bits),
    /// four per 32-byte vector: VPCMPGTQ and a blend. AVX2 has no VPMAXSQ, and the
    /// generic loop stays scalar (25 GB/s of the three streams at 4 KiB on a Zen 3,
    /// against 140 for 32-bit MAX). `a` wins only when strictly better, as in `Combine`.
    #[target_feature(enable = "avx2")]
    fn minmax_i64<const MAX: bool, const UNSIGNED: bool>(inv: &[u8], inout: &mut [u8]) {
        let len = inv.len().min(inout.len());
        let flip = _mm256_set1_epi64x(if UNSIGNED { i64::MIN } else { 0 });
        let mut i = 0;
        while i + 32 <= len {
            // SAFETY: bytes i..i+32 lie inside both slices; unaligned loads and store;
            // AVX2 is present (see `kernel_at`).
            unsafe {
                let a = _mm256_loadu_si256(inv.as_ptr().add(i).cast());
                let pb = inout.as_mut_ptr().add(i);
                let b = _mm256_loadu_si256(pb.cast_const().cast());
                let (fa, fb) = if UNSIGNED {
                    (_mm256_xor_si256(a, flip), _mm256_xor_si256(b, flip))
                } else {
                    (a, b)
                };
                let take = if MAX {
                    _mm256_cmpgt_epi64(fa, fb)
                } else {
                    _mm256_cmpgt_epi64(fb, fa)
                };
                _mm256_storeu_si256(pb.cast(), _mm256_blendv_epi8(b, a, take));
            }
            i += 32;
        }
        let (a, b) = (&inv[i..], &mut inout[i..]);
        match (MAX, UNSIGNED) {
            (true, false) => map2::<i64, 8, { code::MAX }>(a, b),
            (false, false) => map2::<i64, 8, { code::MIN }>(a, b),
            (true, true) => map2::<u64, 8, { code::MAX }>(a, b),
            (false, true) => map2::<u64, 8, { code::MIN }>(a, b),
        }
    }

    /// The value comparisons of `loc_takes_a` on f64 lanes: a's value better, b's value
    /// better (both false if equal or a NaN), a is a NaN, b is a NaN; all-ones masks.
    #[target_feature(enable = "avx2")]
    fn loc_cmp_pd<const MAX: bool>(a: __m256d, b: __m256d) -> [__m256i; 4] {
        let (gt, lt) = (
            _mm256_cmp_pd::<_CMP_GT_OQ>(a, b),
            _mm256_cmp_pd::<_CMP_LT_OQ>(a, b),
        );
        let (ab, bb) = if MAX { (gt, lt) } else { (lt, gt) };
        let an = _mm256_cmp_pd::<_CMP_UNORD_Q>(a, a);
        let bn = _mm256_cmp_pd::<_CMP_UNORD_Q>(b, b);
        [ab, bb, an, bn].map(|m| _mm256_castpd_si256(m))
    }

    /// As [`loc_cmp_pd`], on f32 lanes.
    #[target_feature(enable = "avx2")]
    fn loc_cmp_ps<const MAX: bool>(a: __m256, b: __m256) -> [__m256i; 4] {
        let (gt, lt) = (
            _mm256_cmp_ps::<_CMP_GT_OQ>(a, b),
            _mm256_cmp_ps::<_CMP_LT_OQ>(a, b),
        );
        let (ab, bb) = if MAX { (gt, lt) } else { (lt, gt) };
        let an = _mm256_cmp_ps::<_CMP_UNORD_Q>(a, a);
        let bn = _mm256_cmp_ps::<_CMP_UNORD_Q>(b, b);
        [ab, bb, an, bn].map(|m| _mm256_castps_si256(m))
    }

    /// `x`, unchanged, through an empty `asm!` that LLVM cannot see into. Given a
    /// comparison's mask to shuffle, LLVM knows each dword is 0 or -1 and makes six
    /// instructions (extract, pack, two shuffles, widen, shifts) of the one `vpshufd`;
    /// in the MINLOC/MAXLOC loops below that cost 1.4-2x their time on a Zen 3.
    #[target_feature(enable = "avx2")]
    fn opaque(mut x: __m256i) -> __m256i {
        // SAFETY: the template is a comment: no instruction, no memory, no flags.
        unsafe {
            std::arch::asm!("/* {0} */", inout(ymm_reg) x, options(pure, nomem, nostack, preserves_flags));
        }
        x
    }

    /// `loc_takes_a`'s decision from the masks of [`loc_cmp_pd`] (integer values: no
    /// NaNs, `an` = `bn` = 0) and `il` (a's index smaller): a's value is better, or b's
    /// is not and a's is a NaN against a number, or both or neither are NaNs and a's
    /// index is smaller.
    #[target_feature(enable = "avx2")]
    fn loc_take([ab, bb, an, bn]: [__m256i; 4], il: __m256i) -> __m256i {
        let tie = _mm256_or_si256(
            _mm256_andnot_si256(bn, an),
            _mm256_andnot_si256(_mm256_xor_si256(an, bn), il),
        );
        _mm256_or_si256(ab, _mm256_andnot_si256(bb, tie))
    }

    /// MINLOC/MAXLOC on MPI_DOUBLE_INT (f64 at 0, i32 at 8, 4 padding bytes, extent
    /// 16), two pairs per 32-byte vector. Where neither value of either pair is a NaN,
    /// `loc_takes_a`'s decision is "a's value better, or equal and a's index smaller",
    /// computed in the value's 64-bit lane (the index comparison moved over from the
    /// index's dword); two pairs with a NaN among them take the generic loop. The value
    /// and index dwords of the winning pairs of `inv` are blended into `inout`'s
    /// vector, whose padding dwords are stored back as they were. (A masked store that
    /// leaves the padding alone measured 2x slower than MPICH's scalar loop on an AMD
    /// Zen 3, where such stores are microcoded. Computing the NaN rules in every
    /// vector, as `loc_take` does, measured 11.6 GB/s of buffer on one 4 KiB buffer
    /// reduced again and again, against 14.9 for MPICH's scalar loop, which stores
    /// nothing once `inout` holds the winners.)
    #[target_feature(enable = "avx2")]
    fn loc_double_int<const MAX: bool>(inv: &[u8], inout: &mut [u8]) {
        let len = inv.len().min(inout.len());
        let mut i = 0;
        // the value and index dwords of each pair (not the padding)
        let keep = _mm256_setr_epi32(-1, -1, -1, 0, -1, -1, -1, 0);
        while i + 32 <= len {
            // SAFETY: bytes i..i+32 lie inside both slices (two whole pairs with their
            // padding); unaligned loads and store, which writes back `inout`'s own
            // padding bytes; AVX2 is present (see `kernel_at`).
            let nan = unsafe {
                let a = _mm256_loadu_si256(inv.as_ptr().add(i).cast());
                let pb = inout.as_mut_ptr().add(i);
                let b = _mm256_loadu_si256(pb.cast_const().cast());
                let (av, bv) = (_mm256_castsi256_pd(a), _mm256_castsi256_pd(b));
                // the value lanes only: the index lanes compared as doubles mean nothing
                let nan = _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_UNORD_Q>(av, bv)) & 0b0101;
                if nan == 0 {
                    let better = if MAX {
                        _mm256_cmp_pd::<_CMP_GT_OQ>(av, bv)
                    } else {
                        _mm256_cmp_pd::<_CMP_LT_OQ>(av, bv)
                    };
                    let eq = _mm256_castpd_si256(_mm256_cmp_pd::<_CMP_EQ_OQ>(av, bv));
                    // ai < bi (signed i32) in the index's dword, copied to every dword
                    let il =
                        _mm256_shuffle_epi32::<0b10_10_10_10>(opaque(_mm256_cmpgt_epi32(b, a)));
                    let take =
                        _mm256_or_si256(_mm256_castpd_si256(better), _mm256_and_si256(eq, il));
                    // the decision, valid in the value's dwords, for the whole pair
                    let take = _mm256_shuffle_epi32::<0>(take);
                    let r = _mm256_blendv_epi8(b, a, _mm256_and_si256(take, keep));
                    _mm256_storeu_si256(pb.cast(), r);
                }
                nan
            };
            if nan != 0 {
                loc::<f64, 8, i32, 4, 8, 16, MAX>(&inv[i..i + 32], &mut inout[i..i + 32]);
            }
            i += 32;
        }
        loc::<f64, 8, i32, 4, 8, 16, MAX>(&inv[i..], &mut inout[i..]);
    }

    /// MINLOC/MAXLOC on pairs of a 32-bit value and a 32-bit index without padding
    /// (MPI_2INT and MPI_2INTEGER: i32 value; MPI_FLOAT_INT: f32 value; extent 8), four
    /// pairs per 32-byte vector. `loc_takes_a`'s decision is computed in each value's
    /// dword (with the index comparison moved over from the index's dword) and copied
    /// to both dwords of the pair. The generic loop is scalar and branchy: on a Zen 3,
    /// 64 KiB of random pairs, 5.7 GB/s of buffer (2INT) and 6.5 (FLOAT_INT) against
    /// 29 and 15 here; MPI_Reduce_local repeated on one 64 KiB buffer ran at 8.6 and 5.5
    /// before, 18-33 and 14 with this loop, 30-35 and 21-22 since [`opaque`], MPICH's
    /// and Open MPI's at 5-13 and 5-11.
    ///
    /// With `FIDX` the index is an f32 too (MPI_2REAL; FLOAT must be set), compared as
    /// `ai < bi` in floating point, as the generic loop does.
    #[target_feature(enable = "avx2")]
    fn loc_pair32<const MAX: bool, const FLOAT: bool, const FIDX: bool>(
        inv: &[u8],
        inout: &mut [u8],
    ) {
        let len = inv.len().min(inout.len());
        let mut i = 0;
        while i + 32 <= len {
            // SAFETY: bytes i..i+32 lie inside both slices (four whole pairs); unaligned
            // loads and store; AVX2 is present (see `kernel_at`).
            unsafe {
                let a = _mm256_loadu_si256(inv.as_ptr().add(i).cast());
                let pb = inout.as_mut_ptr().add(i);
                let b = _mm256_loadu_si256(pb.cast_const().cast());
                // ai < bi (signed, or as f32) in the index dwords, moved to the value
                // dwords
                let il = if FIDX {
                    let (af, bf) = (_mm256_castsi256_ps(a), _mm256_castsi256_ps(b));
                    _mm256_castps_si256(_mm256_cmp_ps::<_CMP_LT_OQ>(af, bf))
                } else {
                    _mm256_cmpgt_epi32(b, a)
                };
                let il = _mm256_shuffle_epi32::<0b10_11_00_01>(opaque(il));
                let cmp = if FLOAT {
                    loc_cmp_ps::<MAX>(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b))
                } else {
                    let (gt, lt) = (_mm256_cmpgt_epi32(a, b), _mm256_cmpgt_epi32(b, a));
                    let z = _mm256_setzero_si256();
                    if MAX {
                        [gt, lt, z, z]
                    } else {
                        [lt, gt, z, z]
                    }
                };
                let take = loc_take(cmp, il);
                let take = _mm256_shuffle_epi32::<0b10_10_00_00>(take);
                _mm256_storeu_si256(pb.cast(), _mm256_blendv_epi8(b, a, take));
            }
            i += 32;
        }
        let (a, b) = (&inv[i..], &mut inout[i..]);
        match (FLOAT, FIDX) {
            (true, true) => loc::<f32, 4, f32, 4, 4, 8, MAX>(a, b),
            (true, false) => loc::<f32, 4, i32, 4, 4, 8, MAX>(a, b),
            _ => loc::<i32, 4, i32, 4, 4, 8, MAX>(a, b),
        }
    }

    /// MINLOC/MAXLOC on MPI_2DOUBLE_PRECISION (f64 value, f64 index, extent 16), two
    /// pairs per 32-byte vector: as `loc_pair32` with 64-bit lanes, the index compared
    /// as `ai < bi` in floating point.
    #[target_feature(enable = "avx2")]
    fn loc_2double<const MAX: bool>(inv: &[u8], inout: &mut [u8]) {
        let len = inv.len().min(inout.len());
        let mut i = 0;
        while i + 32 <= len {
            // SAFETY: bytes i..i+32 lie inside both slices (two whole pairs); unaligned
            // loads and store; AVX2 is present (see `kernel_at`).
            unsafe {
                let a = _mm256_loadu_pd(inv.as_ptr().add(i).cast());
                let pb = inout.as_mut_ptr().add(i);
                let b = _mm256_loadu_pd(pb.cast_const().cast());
                // ai < bi in the index qwords, moved to the value qwords
                let il = _mm256_permute_pd::<0b0101>(_mm256_cmp_pd::<_CMP_LT_OQ>(a, b));
                let take = loc_take(loc_cmp_pd::<MAX>(a, b), _mm256_castpd_si256(il));
                // the value qword's decision for both qwords of the pair
                let take = _mm256_permute_pd::<0b0000>(_mm256_castsi256_pd(take));
                let take = _mm256_castpd_si256(take);
                // (a byte blend and a plain store: written as a double blend, the
                // compiler made it a masked store, microcoded on a Zen 3: 2.9 GB/s)
                let (a, b) = (_mm256_castpd_si256(a), _mm256_castpd_si256(b));
                _mm256_storeu_si256(pb.cast(), _mm256_blendv_epi8(b, a, take));
            }
            i += 32;
        }
        loc::<f64, 8, f64, 8, 8, 16, MAX>(&inv[i..], &mut inout[i..]);
    }

    /// MINLOC/MAXLOC on MPI_LONG_INT (i64 at 0, i32 at 8, 4 padding bytes, extent 16),
    /// two pairs per 32-byte vector, as `loc_double_int` with an integer comparison.
    /// 64 KiB of random pairs on a Zen 3: 15.3 GB/s against the generic loop's 11.5. A
    /// reduction repeated on one 4 KiB or 256 KiB buffer, where a scalar loop's branches
    /// become predictable and it stores nothing, runs 28-30 GB/s here (15 before
    /// [`opaque`]) and 15-19 in MPICH's scalar loop, 11-19 in Open MPI's.
    #[target_feature(enable = "avx2")]
    fn loc_long_int<const MAX: bool>(inv: &[u8], inout: &mut [u8]) {
        let len = inv.len().min(inout.len());
        let mut i = 0;
        // the value and index dwords of each pair (not the padding)
        let keep = _mm256_setr_epi32(-1, -1, -1, 0, -1, -1, -1, 0);
        while i + 32 <= len {
            // SAFETY: bytes i..i+32 lie inside both slices (two whole pairs with their
            // padding); unaligned loads and store, which writes back `inout`'s own
            // padding bytes; AVX2 is present (see `kernel_at`).
            unsafe {
                let a = _mm256_loadu_si256(inv.as_ptr().add(i).cast());
                let pb = inout.as_mut_ptr().add(i);
                let b = _mm256_loadu_si256(pb.cast_const().cast());
                let (gt, lt) = (_mm256_cmpgt_epi64(a, b), _mm256_cmpgt_epi64(b, a));
                let z = _mm256_setzero_si256();
                let cmp = if MAX { [gt, lt, z, z] } else { [lt, gt, z, z] };
                // ai < bi (signed i32) in the index's dword (2 of each pair), copied to
                // every dword of the pair
                let il = _mm256_shuffle_epi32::<0b10_10_10_10>(opaque(_mm256_cmpgt_epi32(b, a)));
                let take = loc_take(cmp, il);
                // the decision, valid in the value's dwords, for the whole pair
                let take = _mm256_shuffle_epi32::<0>(take);
                let r = _mm256_blendv_epi8(b, a, _mm256_and_si256(take, keep));
                _mm256_storeu_si256(pb.cast(), r);
            }
            i += 32;
        }
        loc::<i64, 8, i32, 4, 8, 16, MAX>(&inv[i..], &mut inout[i..]);
    }

    /// Float MAX/MIN from a line on (`super::lined`): `$k` on 32-byte vectors, or from
    /// `super::STREAM_128` bytes on `$x` on 16-byte ones. Also the AVX-512 level's kernel
    /// from its handover on.
    macro_rules! fminmax_by_size {
        ($name:ident, $k:ident, $x:ident, $n:expr) => {
            pub(super) fn $name(a: &[u8], b: &mut [u8]) {
                // SAFETY: handed out only at `SimdLevel::Avx2` and above, which
                // `simd_level` reports only when the CPU has AVX2.
                if b.len() >= super::STREAM_128 {
                    super::lined(a, b, $n, |x, y| unsafe { $x(x, y) })
                } else {
                    // SAFETY: as for the branch above.
                    super::lined(a, b, $n, |x, y| unsafe { $k(x, y) })
                }
            }
        };
    }
    fminmax_by_size!(max_f64_k, max_f64, max_f64_x, 8);
    fminmax_by_size!(min_f64_k, min_f64, min_f64_x, 8);
    fminmax_by_size!(max_f32_k, max_f32, max_f32_x, 4);
    fminmax_by_size!(min_f32_k, min_f32, min_f32_x, 4);

    /// The hand-written AVX2 kernel of `op` on `elem`, if there is one. Call only when
    /// the CPU has AVX2.
    pub(super) fn kernel(op: super::BuiltinOp, elem: super::Elem) -> Option<Kernel> {
        use super::{k_stream, BuiltinOp as O, Elem as E};
        // SAFETY (each wrapper): handed out only at `SimdLevel::Avx2`, which
        // `simd_level` reports only when the CPU has AVX2.
        // 64-bit integer MAX/MIN: `minmax_i64`, or from STREAM_128 bytes on the generic
        // loop on 128-bit vectors (SSE4.2 has VPCMPGTQ; see `super::k_stream`).
        macro_rules! minmax64 {
            ($t:ty, $op:expr, $max:expr, $unsigned:expr) => {
                |a, b| {
                    if b.len() >= super::STREAM_128 {
                        k_stream::<$t, 8, { $op }>(a, b)
                    } else {
                        // SAFETY: as for each wrapper of `kernel` (AVX2 present).
                        unsafe { minmax_i64::<$max, $unsigned>(a, b) }
                    }
                }
            };
        }
        Some(match (op, elem) {
            (O::Max, E::F64) => max_f64_k,
            (O::Min, E::F64) => min_f64_k,
            (O::Max, E::F32) => max_f32_k,
            (O::Min, E::F32) => min_f32_k,
            (O::Max, E::I64) => minmax64!(i64, code::MAX, true, false),
            (O::Min, E::I64) => minmax64!(i64, code::MIN, false, false),
            (O::Max, E::U64) => minmax64!(u64, code::MAX, true, true),
            (O::Min, E::U64) => minmax64!(u64, code::MIN, false, true),
            // SAFETY: the AVX2 level only (above).
            (O::Maxloc, E::DoubleInt) => |a, b| unsafe { loc_double_int::<true>(a, b) },
            // SAFETY: the AVX2 level only (above).
            (O::Minloc, E::DoubleInt) => |a, b| unsafe { loc_double_int::<false>(a, b) },
            (O::Maxloc, E::TwoInt | E::TwoInteger) => {
                // SAFETY: the AVX2 level only (above).
                |a, b| unsafe { loc_pair32::<true, false, false>(a, b) }
            }
            (O::Minloc, E::TwoInt | E::TwoInteger) => {
                // SAFETY: the AVX2 level only (above).
                |a, b| unsafe { loc_pair32::<false, false, false>(a, b) }
            }
            // SAFETY: the AVX2 level only (above).
            (O::Maxloc, E::FloatInt) => |a, b| unsafe { loc_pair32::<true, true, false>(a, b) },
            // SAFETY: the AVX2 level only (above).
            (O::Minloc, E::FloatInt) => |a, b| unsafe { loc_pair32::<false, true, false>(a, b) },
            // SAFETY: the AVX2 level only (above).
            (O::Maxloc, E::TwoReal) => |a, b| unsafe { loc_pair32::<true, true, true>(a, b) },
            // SAFETY: the AVX2 level only (above).
            (O::Minloc, E::TwoReal) => |a, b| unsafe { loc_pair32::<false, true, true>(a, b) },
            // SAFETY: the AVX2 level only (above).
            (O::Maxloc, E::TwoDoublePrecision) => |a, b| unsafe { loc_2double::<true>(a, b) },
            // SAFETY: the AVX2 level only (above).
            (O::Minloc, E::TwoDoublePrecision) => |a, b| unsafe { loc_2double::<false>(a, b) },
            // SAFETY: the AVX2 level only (above).
            (O::Maxloc, E::LongInt) => |a, b| unsafe { loc_long_int::<true>(a, b) },
            // SAFETY: the AVX2 level only (above).
            (O::Minloc, E::LongInt) => |a, b| unsafe { loc_long_int::<false>(a, b) },
            _ => return None,
        })
    }
}

/// AVX-512 versions of the hand-written kernels: float MAX/MIN with mask registers
/// (compare into a mask, masked fix-ups).
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{code, map2, Kernel};
    use std::arch::x86_64::*;

    /// As `avx2::fminmax`, with the fix-ups under mask registers, and a fast path:
    /// VMAXPD/VMINPD alone is already the IEEE maximum/minimum unless `a` (the `inv`
    /// element) is a NaN or a zero (a NaN `b` comes out as `b`; equal
    /// non-zero values have the same bits, so `a & b` = `b`). One VFPCLASS per vector
    /// finds those `a`; four vectors (256 bytes) at a time take the plain max/min when
    /// none has one. Where one has, that block and the rest of the next 4 KiB go two
    /// vectors at a time, each pair plain or fixed up. (Under denormals-are-zero the
    /// kernel runs the generic loop instead: see `super::daz`.) On an
    /// AMD Zen 4, blocks of two vectors took 4-8% more time than blocks of four from
    /// 256 bytes to 16 KiB (the VFPCLASS and the branch of every second vector; a C loop
    /// of plain VMAXPD ran as fast as the blocks of four), and the same from 32 KiB on.
    /// Loads and stores are plain: a masked store that a load of the next call on the
    /// same buffer meets cannot be forwarded (measured 2-3x slower at 4 KiB).
    macro_rules! fminmax {
        ($name:ident, $t:ty, $v:ty, $n:expr, $op:expr, $load:ident, $store:ident,
         $cmp:ident, $pick:ident, $fix:ident, $toi:ident, $fromi:ident, $mov:ident,
         $class:ident) => {
            #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
            fn $name(inv: &[u8], inout: &mut [u8]) {
                if super::daz() {
                    return map2::<$t, $n, { $op }>(inv, inout);
                }
                // QNaN 0x01, +0 0x02, -0 0x04, SNaN 0x80
                const SPECIAL: i32 = 0x87;
                #[inline(always)]
                fn full(a: $v, b: $v) -> $v {
                    // SAFETY: register-only AVX-512 F/DQ operations; the caller runs
                    // with those features enabled.
                    unsafe {
                        let m = $pick(a, b);
                        let eq = $cmp::<_CMP_EQ_OQ>(a, b);
                        let m = $fromi($fix($toi(m), eq, $toi(a), $toi(b)));
                        $mov(m, $cmp::<_CMP_UNORD_Q>(a, a), a)
                    }
                }
                let len = inv.len().min(inout.len());
                // The two vectors at byte i (i + 128 <= len): the plain max/min when
                // neither `a` is special, else the fixed-up formula.
                let pair = |inout: &mut [u8], i: usize| {
                    // SAFETY: callers keep i + 128 <= len, so bytes i..i+128 lie inside
                    // both slices; unaligned loads and stores; AVX-512 is present (see
                    // `kernel_at`).
                    unsafe {
                        let pa = inv.as_ptr().add(i);
                        let pb = inout.as_mut_ptr().add(i);
                        let a0 = $load(pa.cast());
                        let a1 = $load(pa.add(64).cast());
                        let b0 = $load(pb.cast_const().cast());
                        let b1 = $load(pb.add(64).cast_const().cast());
                        if $class::<SPECIAL>(a0) | $class::<SPECIAL>(a1) == 0 {
                            $store(pb.cast(), $pick(a0, b0));
                            $store(pb.add(64).cast(), $pick(a1, b1));
                        } else {
                            $store(pb.cast(), full(a0, b0));
                            $store(pb.add(64).cast(), full(a1, b1));
                        }
                    }
                };
                let mut i = 0;
                while i + 256 <= len {
                    // SAFETY: bytes i..i+256 lie inside both slices; as above.
                    let plain = unsafe {
                        let pa = inv.as_ptr().add(i);
                        let pb = inout.as_mut_ptr().add(i);
                        let a = [0, 64, 128, 192].map(|o| $load(pa.add(o).cast()));
                        let plain = ($class::<SPECIAL>(a[0]) | $class::<SPECIAL>(a[1]))
                            | ($class::<SPECIAL>(a[2]) | $class::<SPECIAL>(a[3]))
                            == 0;
                        if plain {
                            for (k, a) in a.into_iter().enumerate() {
                                let q = pb.add(64 * k);
                                $store(q.cast(), $pick(a, $load(q.cast_const().cast())));
                            }
                        }
                        plain
                    };
                    if plain {
                        i += 256;
                    } else {
                        let stop = (i + 4096).min(len);
                        while i + 128 <= stop {
                            pair(inout, i);
                            i += 128;
                        }
                    }
                }
                while i + 128 <= len {
                    pair(inout, i);
                    i += 128;
                }
                if i + 64 <= len {
                    // SAFETY: as above, for bytes i..i+64.
                    unsafe {
                        let pb = inout.as_mut_ptr().add(i);
                        let m = full(
                            $load(inv.as_ptr().add(i).cast()),
                            $load(pb.cast_const().cast()),
                        );
                        $store(pb.cast(), m);
                    }
                    i += 64;
                }
                // the rest (under 64 bytes): the generic loop, compiled here for AVX-512
                map2::<$t, $n, { $op }>(&inv[i..], &mut inout[i..]);
            }
        };
    }
    fminmax!(
        max_f64,
        f64,
        __m512d,
        8,
        code::MAX,
        _mm512_loadu_pd,
        _mm512_storeu_pd,
        _mm512_cmp_pd_mask,
        _mm512_max_pd,
        _mm512_mask_and_epi64,
        _mm512_castpd_si512,
        _mm512_castsi512_pd,
        _mm512_mask_mov_pd,
        _mm512_fpclass_pd_mask
    );
    fminmax!(
        min_f64,
        f64,
        __m512d,
        8,
        code::MIN,
        _mm512_loadu_pd,
        _mm512_storeu_pd,
        _mm512_cmp_pd_mask,
        _mm512_min_pd,
        _mm512_mask_or_epi64,
        _mm512_castpd_si512,
        _mm512_castsi512_pd,
        _mm512_mask_mov_pd,
        _mm512_fpclass_pd_mask
    );
    fminmax!(
        max_f32,
        f32,
        __m512,
        4,
        code::MAX,
        _mm512_loadu_ps,
        _mm512_storeu_ps,
        _mm512_cmp_ps_mask,
        _mm512_max_ps,
        _mm512_mask_and_epi32,
        _mm512_castps_si512,
        _mm512_castsi512_ps,
        _mm512_mask_mov_ps,
        _mm512_fpclass_ps_mask
    );
    fminmax!(
        min_f32,
        f32,
        __m512,
        4,
        code::MIN,
        _mm512_loadu_ps,
        _mm512_storeu_ps,
        _mm512_cmp_ps_mask,
        _mm512_min_ps,
        _mm512_mask_or_epi32,
        _mm512_castps_si512,
        _mm512_castsi512_ps,
        _mm512_mask_mov_ps,
        _mm512_fpclass_ps_mask
    );

    /// MAX/MIN/PROD on 64-bit integers beyond the caches: the AVX-512VL instructions
    /// (VPMAXSQ, VPMINUQ, VPMULLQ, ...) on 256-bit vectors (`_y`), or from
    /// `super::STREAM_128` bytes on 128-bit ones (`_x`). The generic loop of this
    /// level uses 512-bit vectors, which stream memory more slowly on an AMD Zen 4: 64
    /// MiB of PROD took 10.4-11.8 GB/s with 512-bit vectors and 11.9-13.5 with 256-bit
    /// ones (MAX: 10.5-11.9 against 11.9-13.6; the mean of 20 interleaved calls, three
    /// runs), while AVX2 alone has no instruction for either. Integers have one
    /// representation per value, so the instruction's result is `Combine`'s bit for
    /// bit. (The first arm: `$f` on four
    /// vectors of `$w` bytes at a time, then the generic loop on the `$n`-byte elements
    /// of `$t` left; `prod_8_widened` is one too.)
    macro_rules! wide64 {
        ($name:ident, $t:ty, $n:expr, $op:expr, $f:ident, $load:ident, $store:ident, $w:expr) => {
            #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl,avx512dq")]
            fn $name(inv: &[u8], inout: &mut [u8]) {
                let len = inv.len().min(inout.len());
                let mut i = 0;
                while i + 4 * $w <= len {
                    // SAFETY: bytes i..i+4w lie inside both slices (distinct: one is
                    // borrowed mutably); unaligned loads and stores; the CPU has
                    // AVX-512 F/BW/VL/DQ (see `kernel`).
                    unsafe {
                        let pa = inv.as_ptr().add(i);
                        let pb = inout.as_mut_ptr().add(i);
                        for o in [0, $w, 2 * $w, 3 * $w] {
                            let a = $load(pa.add(o).cast());
                            let b = $load(pb.add(o).cast_const().cast());
                            $store(pb.add(o).cast(), $f(a, b));
                        }
                    }
                    i += 4 * $w;
                }
                map2::<$t, $n, { $op }>(&inv[i..], &mut inout[i..]);
            }
        };
        ($y:ident, $x:ident, $t:ty, $op:expr, $f256:ident, $f128:ident) => {
            wide64!(
                $y,
                $t,
                8,
                $op,
                $f256,
                _mm256_loadu_si256,
                _mm256_storeu_si256,
                32
            );
            wide64!($x, $t, 8, $op, $f128, _mm_loadu_si128, _mm_storeu_si128, 16);
        };
    }
    wide64!(
        max_i64_y,
        max_i64_x,
        i64,
        code::MAX,
        _mm256_max_epi64,
        _mm_max_epi64
    );
    wide64!(
        min_i64_y,
        min_i64_x,
        i64,
        code::MIN,
        _mm256_min_epi64,
        _mm_min_epi64
    );
    wide64!(
        max_u64_y,
        max_u64_x,
        u64,
        code::MAX,
        _mm256_max_epu64,
        _mm_max_epu64
    );
    wide64!(
        min_u64_y,
        min_u64_x,
        u64,
        code::MIN,
        _mm256_min_epu64,
        _mm_min_epu64
    );
    wide64!(
        prod_i64_y,
        prod_i64_x,
        i64,
        code::PROD,
        _mm256_mullo_epi64,
        _mm_mullo_epi64
    );
    wide64!(
        prod_u64_y,
        prod_u64_x,
        u64,
        code::PROD,
        _mm256_mullo_epi64,
        _mm_mullo_epi64
    );

    /// The wrapped products of 32 bytes: each widened to 16 bits (VPMOVZXBW into a
    /// 512-bit vector), one VPMULLW, and VPMOVWB back to bytes. The low byte of the
    /// 16-bit product is the wrapped 8-bit product, signed or not.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    fn mul_8(a: __m256i, b: __m256i) -> __m256i {
        _mm512_cvtepi16_epi8(_mm512_mullo_epi16(
            _mm512_cvtepu8_epi16(a),
            _mm512_cvtepu8_epi16(b),
        ))
    }
    // PROD on 8-bit integers, 32 per 256-bit load (`mul_8`), from `super::PROD8_WIDEN`
    // bytes to `super::STREAM_128`.
    wide64!(
        prod_8_widened,
        u8,
        1,
        code::PROD,
        mul_8,
        _mm256_loadu_si256,
        _mm256_storeu_si256,
        32
    );

    /// From this many bytes on (beyond the second-level cache) the float MAX/MIN
    /// kernels of this level hand over to those of AVX2: on an AMD Zen 4 (MPI_Reduce_local,
    /// alternating runs) AVX2 took 21.6-22.1 µs for 1 MiB against 23.0-23.3, and 42.8-43.6
    /// for 2 MiB against 45.8-46.3 (Open MPI's unchecked VMAXPD 42.7-44.9), while at 512
    /// KiB this level's kernel won (10.8-11.0 against 11.1-11.5).
    const FMINMAX_256: usize = 1 << 20;

    /// The hand-written AVX-512 kernel of `op` on `elem`, if there is one. Call only
    /// when the CPU has AVX-512 F/BW/VL/DQ.
    pub(super) fn kernel(op: super::BuiltinOp, elem: super::Elem) -> Option<Kernel> {
        use super::avx2;
        use super::{BuiltinOp as O, Elem as E};
        // This level's kernel `$k`, or from FMINMAX_256 bytes on, and where `b` lies just
        // past `a` modulo 4 KiB (`super::store_alias`), AVX2's (`$avx2`, which from
        // STREAM_128 bytes on runs 128-bit vectors; see there).
        // SAFETY (each wrapper): handed out only at `SimdLevel::Avx512` (the CPU has
        // AVX-512, and so AVX2: `simd_level` checks AVX2 first).
        // Both from a line on (`super::lined`, for `$n`-byte elements).
        macro_rules! by_size {
            ($k:ident, $avx2:ident, $n:expr) => {
                |a, b| {
                    if b.len() >= FMINMAX_256 || super::store_alias(a, b) {
                        avx2::$avx2(a, b)
                    } else {
                        // SAFETY: handed out only at `SimdLevel::Avx512` (see `by_size`).
                        super::lined(a, b, $n, |x, y| unsafe { $k(x, y) })
                    }
                }
            };
        }
        // The generic loop of this level (512-bit vectors), or from STREAM_256 bytes on
        // (and where `super::store_alias`) the 256-bit kernel `$y` of 64-bit integers,
        // from STREAM_128 on the 128-bit `$x` (see `wide64`).
        // SAFETY (each wrapper): as for `by_size`; the callees need AVX-512 F/VL/DQ.
        macro_rules! wide_by_size {
            ($y:ident, $x:ident, $t:ty, $op:expr) => {
                |a, b| {
                    if b.len() >= super::STREAM_128 {
                        // SAFETY: as for each wrapper (AVX-512 F/VL/DQ present).
                        super::lined(a, b, 8, |x, y| unsafe { $x(x, y) })
                    } else if b.len() >= super::STREAM_256 || super::store_alias(a, b) {
                        // SAFETY: as for each wrapper (AVX-512 F/VL/DQ present).
                        super::lined(a, b, 8, |x, y| unsafe { $y(x, y) })
                    } else {
                        super::k_avx512::<$t, 8, { $op }>(a, b)
                    }
                }
            };
        }
        Some(match (op, elem) {
            (O::Max, E::I64) => wide_by_size!(max_i64_y, max_i64_x, i64, code::MAX),
            (O::Min, E::I64) => wide_by_size!(min_i64_y, min_i64_x, i64, code::MIN),
            (O::Prod, E::I64) => wide_by_size!(prod_i64_y, prod_i64_x, i64, code::PROD),
            (O::Max, E::U64) => wide_by_size!(max_u64_y, max_u64_x, u64, code::MAX),
            (O::Min, E::U64) => wide_by_size!(min_u64_y, min_u64_x, u64, code::MIN),
            (O::Prod, E::U64) => wide_by_size!(prod_u64_y, prod_u64_x, u64, code::PROD),
            // (`prod_8_widened` from PROD8_WIDEN bytes up to STREAM_128)
            (O::Prod, E::I8 | E::U8) => |a, b| {
                if (super::PROD8_WIDEN..super::STREAM_128).contains(&b.len()) {
                    // SAFETY: as for `by_size`; the callee needs AVX-512 F/BW/VL.
                    super::lined(a, b, 1, |x, y| unsafe { prod_8_widened(x, y) })
                } else {
                    super::k_avx512::<u8, 1, { code::PROD }>(a, b)
                }
            },
            (O::Max, E::F64) => by_size!(max_f64, max_f64_k, 8),
            (O::Min, E::F64) => by_size!(min_f64, min_f64_k, 8),
            (O::Max, E::F32) => by_size!(max_f32, max_f32_k, 4),
            (O::Min, E::F32) => by_size!(min_f32, min_f32_k, 4),
            // (MINLOC/MAXLOC on MPI_DOUBLE_INT take the AVX2 kernel: an AVX-512 one with
            // four pairs per vector and a masked store that skips the padding ran at
            // 0.57-0.67x its speed at every size from 4 KiB to 4 MiB, and 0.85-0.9x
            // beyond the caches, on an AMD Zen 4, and no faster on the Xeon of the table
            // above.)
            _ => return None,
        })
    }
}

// ---------------------------------------------------------------------------------------
// Selection

/// The kernel of `op` on elements of kind `elem`, or MPI_ERR_OP when the operation is
/// not computable on that kind. This is element-level only; the standard's stricter
/// type-class table is applied by [`super::kernel_for`].
pub fn kernel(op: BuiltinOp, elem: Elem) -> MpiResult<Kernel> {
    kernel_at(op, elem, simd_level())
}

/// As [`kernel`], with the vector level given (capped at what [`simd_level`] found).
pub fn kernel_at(op: BuiltinOp, elem: Elem, level: SimdLevel) -> MpiResult<Kernel> {
    let l = level.min(simd_level());
    #[cfg(target_arch = "x86_64")]
    {
        let k = match l {
            // AVX-512 has VPMAXSQ/VPMAXUQ, which the generic loop uses: the AVX2
            // compare-and-blend for 64-bit integers is not taken there.
            SimdLevel::Avx512 => avx512::kernel(op, elem).or_else(|| match elem {
                Elem::I64 | Elem::U64 => None,
                _ => avx2::kernel(op, elem),
            }),
            SimdLevel::Avx2 => avx2::kernel(op, elem),
            SimdLevel::Baseline => None,
        };
        if let Some(k) = k {
            return Ok(k);
        }
    }
    let k = match elem {
        Elem::I8 => integer::<i8, 1>(op, l),
        Elem::I16 => integer::<i16, 2>(op, l),
        Elem::I32 => integer::<i32, 4>(op, l),
        Elem::I64 => integer::<i64, 8>(op, l),
        Elem::U8 => integer::<u8, 1>(op, l),
        Elem::U16 => integer::<u16, 2>(op, l),
        Elem::U32 => integer::<u32, 4>(op, l),
        Elem::U64 => integer::<u64, 8>(op, l),
        Elem::F32 => arith::<f32, 4>(op, l),
        Elem::F64 => arith::<f64, 8>(op, l),
        Elem::F16 => arith::<Half, 2>(op, l),
        Elem::ComplexF32 => complex::<Cplx<f32>, 8>(op, l),
        Elem::ComplexF64 => complex::<Cplx<f64>, 16>(op, l),
        Elem::CBool => logical::<u8, 1>(op, l),
        Elem::FLogical => logical::<i32, 4>(op, l),
        Elem::Byte => bytewise(op, l),
        Elem::LongDouble => super::ld::long_double(op),
        Elem::Float128 => super::ld::float128(op),
        Elem::ComplexLongDouble => super::ld::complex_long_double(op),
        Elem::ComplexFloat128 => super::ld::complex_float128(op),
        Elem::LongDoubleInt => super::ld::long_double_int(op),
        Elem::FloatInt => pair::<f32, 4, i32, 4, 4, 8>(op),
        Elem::DoubleInt => pair::<f64, 8, i32, 4, 8, 16>(op),
        Elem::LongInt => pair::<i64, 8, i32, 4, 8, 16>(op),
        Elem::ShortInt => pair::<i16, 2, i32, 4, 4, 8>(op),
        Elem::TwoInt | Elem::TwoInteger => pair::<i32, 4, i32, 4, 4, 8>(op),
        Elem::TwoReal => pair::<f32, 4, f32, 4, 4, 8>(op),
        Elem::TwoDoublePrecision => pair::<f64, 8, f64, 8, 8, 16>(op),
        Elem::Char | Elem::WChar | Elem::Packed | Elem::LbUb => None,
    };
    k.ok_or_else(|| {
        err(
            crate::abi::MPI_ERR_OP,
            format!("{} is not defined on elements of kind {elem:?}", op.name()),
        )
    })
}
