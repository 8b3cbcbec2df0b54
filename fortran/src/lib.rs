//! The Fortran binding of shmpi (`include 'mpif.h'` and `use mpi`), built as
//! `libmpifort.so.12` on top of the C library `libmpi.so.12`.
//!
//! Every routine is exported under MPICH's eight names (`mpi_x`, `mpi_x_`, `mpi_x__`,
//! `MPI_X` and the same with `pmpi`), generated from `functions.tsv` by `build.rs`.
//! Arguments arrive by reference; handles are the C integers unchanged; the C `PMPI_`
//! functions do the work, so a C profiling layer sees each call once. Special buffers and
//! statuses (MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE) are the
//! members of COMMON blocks and are recognised by address.
// The boundary takes raw pointers by design (Fortran passes everything by reference).
#![allow(clippy::missing_safety_doc)]
#![allow(clippy::too_many_arguments)]
#![allow(non_snake_case)]
#![allow(non_upper_case_globals)]

mod custom;
mod rt;

/// mpif.h's values and the COMMON blocks, generated from abi/mpich-abi-fortran.tsv.
pub mod abi {
    use crate::rt::Fint;
    include!(concat!(env!("OUT_DIR"), "/abi_consts.rs"));
}

/// The exported routines, generated from functions.tsv.
pub mod exports {
    use crate::abi::MPI_SUCCESS;
    use crate::custom;
    use crate::rt::{self, Aint, Fint};
    use std::os::raw::{c_int, c_void};
    include!(concat!(env!("OUT_DIR"), "/exports.rs"));
}
