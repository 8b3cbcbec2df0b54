//! Reduction operations (temporary minimal version; replaced by the kernel module).
use crate::abi::*;
use crate::error::{err, MpiResult};
pub enum OpRef {
    Sum,
}
pub fn resolve(h: i32) -> MpiResult<OpRef> {
    if h == MPI_SUM {
        Ok(OpRef::Sum)
    } else {
        Err(err(MPI_ERR_OP, "op"))
    }
}
pub fn is_commutative(_o: &OpRef) -> bool {
    true
}
pub fn apply(_o: &OpRef, dt: i32, inv: &[u8], inout: &mut [u8], _count: usize) -> MpiResult<()> {
    match dt {
        MPI_INT => {
            for (a, b) in inv.chunks_exact(4).zip(inout.chunks_exact_mut(4)) {
                let v = i32::from_ne_bytes(a.try_into().unwrap()).wrapping_add(i32::from_ne_bytes(b.try_into().unwrap()));
                b.copy_from_slice(&v.to_ne_bytes());
            }
        }
        MPI_DOUBLE => {
            for (a, b) in inv.chunks_exact(8).zip(inout.chunks_exact_mut(8)) {
                let v = f64::from_ne_bytes(a.try_into().unwrap()) + f64::from_ne_bytes(b.try_into().unwrap());
                b.copy_from_slice(&v.to_ne_bytes());
            }
        }
        _ => return Err(err(MPI_ERR_OP, "type")),
    }
    Ok(())
}
pub fn check_pair(o: &OpRef, dt: i32) -> MpiResult<()> {
    apply(o, dt, &[], &mut [], 0)
}
