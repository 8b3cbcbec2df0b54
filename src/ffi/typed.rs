//! The typed user buffers of point-to-point (p2p/buf.rs), under their ffi path.
pub use crate::p2p::buf::{pack_vec, recv_into, send_data};
