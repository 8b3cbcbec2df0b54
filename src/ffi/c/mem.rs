//! MPI_Alloc_mem and MPI_Free_mem (MPI-3.1 §8.2): memory for message buffers. shmpi
//! moves data through its shared arena whatever memory a buffer is in, so no memory is
//! special to it: an allocation is ordinary heap memory, aligned to 64 bytes (a cache
//! line, and every vector width the reduction kernels use). Every allocation is recorded,
//! so that MPI_Free_mem of an address it did not hand out is an error of class
//! MPI_ERR_BASE instead of a corrupted heap. No info key changes anything (the standard
//! lets an implementation ignore them); the info handle must still be valid.
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::ffi::check;
use crate::mpi_entry;
use std::alloc::Layout;
use std::collections::HashMap;
use std::os::raw::c_void;
use std::sync::Mutex;

/// MPI_Aint.
type Aint = isize;

const ALIGN: usize = 64;

/// Address -> layout of every allocation not yet freed.
static ALLOCS: Mutex<Option<HashMap<usize, Layout>>> = Mutex::new(None);

fn alloc(size: Aint) -> MpiResult<*mut u8> {
    let bytes =
        usize::try_from(size).map_err(|_| err(MPI_ERR_ARG, format!("size={size} is negative")))?;
    // (a zero-byte request still gets a distinct address that MPI_Free_mem accepts)
    let layout = Layout::from_size_align(bytes.max(1), ALIGN).map_err(|_| {
        err(
            MPI_ERR_NO_MEM,
            format!("size={size} bytes cannot be allocated (too large)"),
        )
    })?;
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { std::alloc::alloc(layout) };
    if p.is_null() {
        return Err(err(
            MPI_ERR_NO_MEM,
            format!("size={size} bytes: out of memory"),
        ));
    }
    ALLOCS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(p as usize, layout);
    Ok(p)
}

fn free(base: *mut c_void) -> MpiResult<()> {
    if base.is_null() {
        // (as C's free(NULL), and as MPICH accepts it)
        return Ok(());
    }
    let layout = ALLOCS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .and_then(|m| m.remove(&(base as usize)))
        .ok_or_else(|| {
            err(
                MPI_ERR_BASE,
                format!(
                    "base={base:p} is not an address MPI_Alloc_mem returned (or it was freed already)"
                ),
            )
        })?;
    // SAFETY: `base` was returned by `std::alloc::alloc` with this layout (the map says
    // so) and has not been freed: it was removed from the map just now.
    unsafe { std::alloc::dealloc(base as *mut u8, layout) };
    Ok(())
}

mpi_entry!(MPI_Alloc_mem, PMPI_Alloc_mem, (size: Aint, info: i32, baseptr: *mut c_void),
    errcomm = MPI_COMM_WORLD, {
    super::info::check_arg(info, "info")?;
    if baseptr.is_null() {
        return Err(err(MPI_ERR_ARG, "baseptr is NULL"));
    }
    let p = alloc(size)?;
    check::out(baseptr as *mut *mut c_void, p as *mut c_void, "baseptr")
});

mpi_entry!(MPI_Free_mem, PMPI_Free_mem, (base: *mut c_void), errcomm = MPI_COMM_WORLD, {
    free(base)
});
