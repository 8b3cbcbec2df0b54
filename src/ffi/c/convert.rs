//! Language interoperability (MPI-3.1 17.2): handle conversions between C and Fortran,
//! status conversions, and the data symbols and functions C programs built against
//! MPICH's mpi.h reference by name.
//!
//! Handles are Fortran INTEGERs already, so every `MPI_X_f2c` / `MPI_X_c2f` is the
//! identity. The header also defines them as casting macros (unless the including code
//! defines SHMPI_NO_C2F_MACROS); the functions exist for code that takes their address
//! or was built against another mpi.h.
use crate::abi::*;
use crate::error::err;
use crate::mpi_entry;
use std::os::raw::{c_int, c_void};

macro_rules! identity_conversions {
    ($($f:ident),* $(,)?) => {
        $(
            #[no_mangle]
            pub extern "C" fn $f(handle: c_int) -> c_int {
                handle
            }
        )*
    };
}

identity_conversions!(
    MPI_Comm_f2c,
    MPI_Comm_c2f,
    PMPI_Comm_f2c,
    PMPI_Comm_c2f,
    MPI_Type_f2c,
    MPI_Type_c2f,
    PMPI_Type_f2c,
    PMPI_Type_c2f,
    MPI_Group_f2c,
    MPI_Group_c2f,
    PMPI_Group_f2c,
    PMPI_Group_c2f,
    MPI_Request_f2c,
    MPI_Request_c2f,
    PMPI_Request_f2c,
    PMPI_Request_c2f,
    MPI_Op_f2c,
    MPI_Op_c2f,
    PMPI_Op_f2c,
    PMPI_Op_c2f,
    MPI_Errhandler_f2c,
    MPI_Errhandler_c2f,
    PMPI_Errhandler_f2c,
    PMPI_Errhandler_c2f,
    MPI_Info_f2c,
    MPI_Info_c2f,
    PMPI_Info_f2c,
    PMPI_Info_c2f,
    MPI_Win_f2c,
    MPI_Win_c2f,
    PMPI_Win_f2c,
    PMPI_Win_c2f,
    MPI_Message_f2c,
    MPI_Message_c2f,
    PMPI_Message_f2c,
    PMPI_Message_c2f,
);

/// Words in a status: C MPI_Status and Fortran INTEGER(MPI_STATUS_SIZE) agree.
const STATUS_WORDS: usize = MPI_F_STATUS_SIZE as usize;

/// Copies a status between its C and Fortran forms (identical layouts); the ignore
/// values are not statuses.
///
/// # Safety
/// Unless NULL, `from` must be valid for reads and `to` for writes of `STATUS_WORDS`
/// ints (a status of either form).
unsafe fn copy_status(
    from: *const c_int,
    to: *mut c_int,
    from_ignore: bool,
) -> crate::error::MpiResult<()> {
    if from.is_null() || to.is_null() {
        return Err(err(MPI_ERR_ARG, "status argument is NULL"));
    }
    if from_ignore || from as usize == MPI_STATUS_IGNORE as usize {
        return Err(err(MPI_ERR_ARG, "the input status is MPI_STATUS_IGNORE"));
    }
    // SAFETY: both point at STATUS_WORDS ints (the caller's statuses); copy handles overlap.
    unsafe { std::ptr::copy(from, to, STATUS_WORDS) };
    Ok(())
}

mpi_entry!(MPI_Status_f2c, PMPI_Status_f2c, (f_status: *const c_int, c_status: *mut c_int), errcomm = MPI_COMM_WORLD, {
    // SAFETY: MPI_F_STATUS_IGNORE is only written by the Fortran library's constructor.
    let ignore = unsafe { MPI_F_STATUS_IGNORE } as *const c_int;
    copy_status(f_status, c_status, !ignore.is_null() && f_status == ignore)
});

mpi_entry!(MPI_Status_c2f, PMPI_Status_c2f, (c_status: *const c_int, f_status: *mut c_int), errcomm = MPI_COMM_WORLD, {
    copy_status(c_status, f_status, false)
});

/// A pointer-sized data symbol whose value is fixed at build time.
#[repr(transparent)]
pub struct ConstPtr(*const c_void);
// SAFETY: the pointers are never written and point at objects that are never written
// through them.
unsafe impl Sync for ConstPtr {}

static MPIR_C_MPI_UNWEIGHTED: c_int = 0;
static MPIR_C_MPI_WEIGHTS_EMPTY: c_int = 0;
static MPIR_T_PVAR_ALL_HANDLES_OBJ: c_int = 0;

/// MPI_UNWEIGHTED: a unique non-NULL address (`int * const` in mpi.h).
#[no_mangle]
pub static MPI_UNWEIGHTED: ConstPtr = ConstPtr((&raw const MPIR_C_MPI_UNWEIGHTED).cast());
/// MPI_WEIGHTS_EMPTY: a unique non-NULL address, different from MPI_UNWEIGHTED.
#[no_mangle]
pub static MPI_WEIGHTS_EMPTY: ConstPtr = ConstPtr((&raw const MPIR_C_MPI_WEIGHTS_EMPTY).cast());
/// Whether a weights argument is MPI_UNWEIGHTED. A program built against MPICH holds a
/// copy of the pointer, whose value is still this library's object's address.
pub fn is_unweighted(p: *const c_int) -> bool {
    std::ptr::eq(p, &raw const MPIR_C_MPI_UNWEIGHTED)
}
/// Whether a weights argument is MPI_WEIGHTS_EMPTY.
pub fn is_weights_empty(p: *const c_int) -> bool {
    std::ptr::eq(p, &raw const MPIR_C_MPI_WEIGHTS_EMPTY)
}
/// MPI_T_PVAR_ALL_HANDLES: a unique non-NULL handle value.
#[no_mangle]
pub static MPI_T_PVAR_ALL_HANDLES: ConstPtr =
    ConstPtr((&raw const MPIR_T_PVAR_ALL_HANDLES_OBJ).cast());

/// The Fortran MPI_STATUS_IGNORE as C sees it: NULL until the Fortran library
/// (libmpifort) loads and stores the address of its COMMON member here.
#[no_mangle]
pub static mut MPI_F_STATUS_IGNORE: *mut c_int = std::ptr::null_mut();
/// The Fortran MPI_STATUSES_IGNORE, set like MPI_F_STATUS_IGNORE.
#[no_mangle]
pub static mut MPI_F_STATUSES_IGNORE: *mut c_int = std::ptr::null_mut();

/// The objects MPI_F08_STATUS_IGNORE and MPI_F08_STATUSES_IGNORE point at.
#[no_mangle]
pub static mut MPIR_F08_MPI_STATUS_IGNORE_OBJ: [c_int; STATUS_WORDS] = [0; STATUS_WORDS];
#[no_mangle]
pub static mut MPIR_F08_MPI_STATUSES_IGNORE_OBJ: [c_int; STATUS_WORDS] = [0; STATUS_WORDS];
/// `MPI_F08_status *` in mpi.h.
#[no_mangle]
pub static mut MPI_F08_STATUS_IGNORE: *mut c_int = (&raw mut MPIR_F08_MPI_STATUS_IGNORE_OBJ).cast();
#[no_mangle]
pub static mut MPI_F08_STATUSES_IGNORE: *mut c_int =
    (&raw mut MPIR_F08_MPI_STATUSES_IGNORE_OBJ).cast();

/// What MPI_DUP_FN (and MPI_COMM_DUP_FN, MPI_TYPE_DUP_FN, MPI_WIN_DUP_FN) expand to in
/// mpi.h: copies the attribute value and asks for it to be kept.
#[no_mangle]
pub unsafe extern "C" fn MPIR_Dup_fn(
    _oldcomm: c_int,
    _keyval: c_int,
    _extra_state: *mut c_void,
    attribute_val_in: *mut c_void,
    attribute_val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    if attribute_val_out.is_null() || flag.is_null() {
        return MPI_ERR_ARG;
    }
    // SAFETY: the library calling a copy function passes a `void **` for the copy and an
    // `int *` flag, both checked non-NULL above.
    unsafe {
        *(attribute_val_out as *mut *mut c_void) = attribute_val_in;
        *flag = 1;
    }
    MPI_SUCCESS
}
