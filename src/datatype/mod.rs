//! Datatypes: the predefined table (sizes, extents, element kinds, reduction type
//! classes); derived constructors and pack/unpack build on it.
pub mod predefined;

/// (size, extent) of a valid, committed datatype.
pub fn info(h: i32) -> Option<(usize, usize)> {
    predefined::lookup(h).map(|p| (p.size, p.extent))
}
