//! ABI glue that programs and bindings built for MPICH reference by name.
//!
//! `MPI_File_c2f` / `MPI_File_f2c` (and their PMPI twins): MPICH exports them as
//! functions (MPI_File is a pointer, not an integer handle, so mpi.h has no casting
//! macro for them) and bindings call them unconditionally, e.g. the C shim of rsmpi
//! (the `mpi` crate). shmpi has no MPI-IO, so no file handle other than MPI_FILE_NULL
//! can exist: MPI_FILE_NULL converts to the Fortran 0 and back, as in MPICH.
//!
//! `MPIR_F08_MPI_IN_PLACE` / `MPIR_F08_MPI_BOTTOM`: `extern int` in MPICH's mpi.h (the
//! objects whose addresses MPICH's mpi_f08 module binds MPI_IN_PLACE and MPI_BOTTOM to);
//! defined with MPICH's size so every data symbol that header declares exists here.
use std::os::raw::{c_int, c_void};

macro_rules! file_conversions {
    ($c2f:ident, $f2c:ident) => {
        /// MPI_FILE_NULL (the only file handle there is) is Fortran 0.
        #[no_mangle]
        pub extern "C" fn $c2f(_file: *mut c_void) -> c_int {
            0
        }
        /// Every Fortran file handle is MPI_FILE_NULL.
        #[no_mangle]
        pub extern "C" fn $f2c(_file: c_int) -> *mut c_void {
            std::ptr::null_mut()
        }
    };
}

file_conversions!(MPI_File_c2f, MPI_File_f2c);
file_conversions!(PMPI_File_c2f, PMPI_File_f2c);

/// The `use mpi_f08` MPI_IN_PLACE object of MPICH's ABI (an int; only its address matters).
#[no_mangle]
pub static mut MPIR_F08_MPI_IN_PLACE: c_int = 0;
/// The `use mpi_f08` MPI_BOTTOM object of MPICH's ABI (an int; only its address matters).
#[no_mangle]
pub static mut MPIR_F08_MPI_BOTTOM: c_int = 0;

/// MPI_Pcontrol (MPI-3.1 §14.2.4): a hook for profiling libraries, which intercept it
/// through the PMPI names; "MPI libraries themselves make no use of this routine, and
/// simply return immediately to the user code", so this returns MPI_SUCCESS whatever
/// the level, before MPI_Init as after. C declares it `int MPI_Pcontrol(const int
/// level, ...)`; stable Rust cannot define a variadic function, and on the System V
/// x86-64 and AArch64 Linux ABIs a variadic call passes `level` where this reads it,
/// and the callee need not look at what follows.
#[no_mangle]
pub extern "C" fn PMPI_Pcontrol(_level: c_int) -> c_int {
    crate::abi::MPI_SUCCESS
}
/// See [`PMPI_Pcontrol`].
#[no_mangle]
pub extern "C" fn MPI_Pcontrol(level: c_int) -> c_int {
    PMPI_Pcontrol(level)
}
