//! C entry points, grouped as the standard's chapters.
//! (being written)
pub mod op;
