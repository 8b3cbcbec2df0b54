//! C entry points, grouped as the standard's chapters.
pub mod coll;
pub mod coll_move;
pub mod comm;
pub mod compat;
pub mod convert;
pub mod datatype;
pub mod greq;
pub mod info;
pub mod init;
pub mod mem;
pub mod neighbor;
pub mod op;
pub mod p2p;
pub mod persist;
pub mod rma;
pub mod spawn;
pub mod topo;
