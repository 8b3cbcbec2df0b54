//! Datatypes: the predefined table (sizes, extents, element kinds, reduction type
//! classes). Derived constructors and pack/unpack come later.
pub mod predefined;
