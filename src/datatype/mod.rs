//! Datatypes (being written): size and extent of a handle.
use crate::abi::*;

/// (size, extent) of a valid, committed datatype.
pub fn info(h: i32) -> Option<(usize, usize)> {
    match h {
        MPI_FLOAT_INT => Some((8, 8)),
        MPI_DOUBLE_INT => Some((12, 16)),
        MPI_LONG_INT => Some((12, 16)),
        MPI_SHORT_INT => Some((6, 8)),
        MPI_LONG_DOUBLE_INT => Some((20, 32)),
        MPI_DATATYPE_NULL => None,
        _ if handle_kind(h) == KIND_BUILTIN && handle_obj(h) == OBJ_DATATYPE => {
            let s = ((h as u32 >> 8) & 0xff) as usize;
            Some((s, s))
        }
        _ => None,
    }
}
