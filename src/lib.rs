//! shmpi: a drop-in MPI library whose ranks are processes on one machine that talk
//! through shared memory. The module list, nothing else.
pub mod abi;
pub mod args;
pub mod attr;
pub mod coll;
pub mod comm;
pub mod create;
pub mod datatype;
pub mod error;
pub mod ffi;
pub mod init;
pub mod launch;
pub mod op;
pub mod p2p;
pub mod pin;
pub mod process;
pub mod progress;
pub mod request;
pub mod rma;
pub mod runtime;
pub mod settings;
pub mod shm;
pub mod spawn;
