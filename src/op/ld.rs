//! Kernels for the types without a Rust type (C `long double`, its complex,
//! `__float128` and its complex, MPI_LONG_DOUBLE_INT): thin safe wrappers around the C
//! loops of ldkernels.c. Each wrapper computes the element count from the slices, so
//! the C side never reads or writes past them.
//!
//! Unsafe code here (every block has its SAFETY line):
//! - the calls of the C loops of ldkernels.c, on element counts computed from slices.
use super::kernels::Kernel;
use super::BuiltinOp;

type CKernel = unsafe extern "C" fn(inv: *const u8, inout: *mut u8, n: usize);

extern "C" {
    fn shmpi_ld_max(inv: *const u8, inout: *mut u8, n: usize);
    fn shmpi_ld_min(inv: *const u8, inout: *mut u8, n: usize);
    fn shmpi_ld_sum(inv: *const u8, inout: *mut u8, n: usize);
    fn shmpi_ld_prod(inv: *const u8, inout: *mut u8, n: usize);
    fn shmpi_q_max(inv: *const u8, inout: *mut u8, n: usize);
    fn shmpi_q_min(inv: *const u8, inout: *mut u8, n: usize);
    fn shmpi_q_sum(inv: *const u8, inout: *mut u8, n: usize);
    fn shmpi_q_prod(inv: *const u8, inout: *mut u8, n: usize);
    fn shmpi_cld_sum(inv: *const u8, inout: *mut u8, n: usize);
    fn shmpi_cld_prod(inv: *const u8, inout: *mut u8, n: usize);
    fn shmpi_cq_sum(inv: *const u8, inout: *mut u8, n: usize);
    fn shmpi_cq_prod(inv: *const u8, inout: *mut u8, n: usize);
    fn shmpi_ldi_maxloc(inv: *const u8, inout: *mut u8, n: usize);
    fn shmpi_ldi_minloc(inv: *const u8, inout: *mut u8, n: usize);
}

/// Calls C kernel `f` on the whole elements of `EXT` bytes that both slices hold
/// (`SIZE` is the bytes of the last element that are read or written: a final element
/// without its trailing padding still counts).
#[inline(always)]
fn call<const SIZE: usize, const EXT: usize>(f: CKernel, inv: &[u8], inout: &mut [u8]) {
    let len = inv.len().min(inout.len());
    let n = if len < SIZE {
        0
    } else {
        (len - SIZE) / EXT + 1
    };
    if n == 0 {
        return;
    }
    // SAFETY: element i occupies bytes [i*EXT, i*EXT+SIZE) and the C loop touches no
    // others; (n-1)*EXT+SIZE <= len, so every access is inside both slices. The C
    // side uses memcpy for every access, so no alignment is assumed, and `inout` is
    // the only pointer written (it is a unique borrow, distinct from `inv`).
    unsafe { f(inv.as_ptr(), inout.as_mut_ptr(), n) }
}

macro_rules! wrap {
    ($name:ident, $c:ident, $size:expr, $ext:expr) => {
        fn $name(inv: &[u8], inout: &mut [u8]) {
            call::<$size, $ext>($c, inv, inout)
        }
    };
}
// long double: 10 significant bytes in 16 (the C side writes only the 10)
wrap!(ld_max, shmpi_ld_max, 10, 16);
wrap!(ld_min, shmpi_ld_min, 10, 16);
wrap!(ld_sum, shmpi_ld_sum, 10, 16);
wrap!(ld_prod, shmpi_ld_prod, 10, 16);
wrap!(q_max, shmpi_q_max, 16, 16);
wrap!(q_min, shmpi_q_min, 16, 16);
wrap!(q_sum, shmpi_q_sum, 16, 16);
wrap!(q_prod, shmpi_q_prod, 16, 16);
wrap!(cld_sum, shmpi_cld_sum, 26, 32);
wrap!(cld_prod, shmpi_cld_prod, 26, 32);
wrap!(cq_sum, shmpi_cq_sum, 32, 32);
wrap!(cq_prod, shmpi_cq_prod, 32, 32);
wrap!(ldi_maxloc, shmpi_ldi_maxloc, 20, 32);
wrap!(ldi_minloc, shmpi_ldi_minloc, 20, 32);

pub(super) fn long_double(op: BuiltinOp) -> Option<Kernel> {
    Some(match op {
        BuiltinOp::Max => ld_max,
        BuiltinOp::Min => ld_min,
        BuiltinOp::Sum => ld_sum,
        BuiltinOp::Prod => ld_prod,
        _ => return None,
    })
}

pub(super) fn float128(op: BuiltinOp) -> Option<Kernel> {
    Some(match op {
        BuiltinOp::Max => q_max,
        BuiltinOp::Min => q_min,
        BuiltinOp::Sum => q_sum,
        BuiltinOp::Prod => q_prod,
        _ => return None,
    })
}

pub(super) fn complex_long_double(op: BuiltinOp) -> Option<Kernel> {
    Some(match op {
        BuiltinOp::Sum => cld_sum,
        BuiltinOp::Prod => cld_prod,
        _ => return None,
    })
}

pub(super) fn complex_float128(op: BuiltinOp) -> Option<Kernel> {
    Some(match op {
        BuiltinOp::Sum => cq_sum,
        BuiltinOp::Prod => cq_prod,
        _ => return None,
    })
}

pub(super) fn long_double_int(op: BuiltinOp) -> Option<Kernel> {
    Some(match op {
        BuiltinOp::Maxloc => ldi_maxloc,
        BuiltinOp::Minloc => ldi_minloc,
        _ => return None,
    })
}
