//! Persistent requests: the engine's (crate::request::persist), under the names the
//! entry points that create them use.
pub use crate::request::persist::{create, release, resolve, Captured};
