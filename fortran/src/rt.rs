//! What every wrapper shares: argument translation, IERROR, panics.
use crate::abi;
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Fortran INTEGER (MPI_Fint).
pub type Fint = i32;
/// INTEGER(KIND=MPI_ADDRESS_KIND) (MPI_Aint).
pub type Aint = i64;

/// C's MPI_IN_PLACE.
const C_IN_PLACE: usize = usize::MAX;
/// C's MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE.
const C_STATUS_IGNORE: usize = 1;

/// Runs a wrapper body; a panic becomes MPI_ERR_INTERN instead of crossing into Fortran.
pub fn guard(f: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(abi::MPI_ERR_INTERN)
}

/// Stores the result in IERROR.
pub fn set_ierror(ierror: *mut Fint, rc: c_int) {
    if !ierror.is_null() {
        // SAFETY: IERROR is the caller's INTEGER, passed by reference.
        unsafe { *ierror = rc };
    }
}

/// A choice buffer: MPI_BOTTOM -> NULL, MPI_IN_PLACE -> (void*)-1, others unchanged.
pub fn buffer(p: *mut c_void) -> *mut c_void {
    let a = p as usize;
    if a == abi::addr_mpi_bottom() {
        std::ptr::null_mut()
    } else if a == abi::addr_mpi_in_place() {
        C_IN_PLACE as *mut c_void
    } else {
        p
    }
}

/// An INTEGER(MPI_STATUS_SIZE) status (same layout as C), or MPI_STATUS_IGNORE.
pub fn status(p: *mut Fint) -> *mut c_void {
    if p as usize == abi::addr_mpi_status_ignore() {
        C_STATUS_IGNORE as *mut c_void
    } else {
        p.cast()
    }
}

/// An array of statuses, or MPI_STATUSES_IGNORE.
pub fn statuses(p: *mut Fint) -> *mut c_void {
    if p as usize == abi::addr_mpi_statuses_ignore() {
        C_STATUS_IGNORE as *mut c_void
    } else {
        p.cast()
    }
}

/// A request index C returned (0-based) as Fortran's 1-based one; MPI_UNDEFINED stays.
pub fn fortran_index(p: *mut Fint) {
    if p.is_null() {
        return;
    }
    // SAFETY: the index is the caller's INTEGER, just written by C.
    unsafe {
        if *p >= 0 {
            *p += 1;
        }
    }
}

/// The first `*count` indices of an array C filled, made 1-based.
pub fn fortran_indices(p: *mut Fint, count: *const Fint) {
    if p.is_null() || count.is_null() {
        return;
    }
    // SAFETY: C wrote `*count` indices into the caller's array (MPI_UNDEFINED: none).
    unsafe {
        let n = *count;
        for k in 0..n.max(0) as usize {
            *p.add(k) += 1;
        }
    }
}

/// An INTEGER array of `*count` displacements as the MPI_Aint array C wants (MPI-1
/// routines such as TYPE_HINDEXED and TYPE_STRUCT take default INTEGERs in Fortran).
pub fn aints(p: *const Fint, count: *const Fint) -> Vec<Aint> {
    if p.is_null() || count.is_null() {
        return Vec::new();
    }
    // SAFETY: COUNT is the caller's INTEGER and the array holds that many elements.
    unsafe {
        let n = (*count).max(0) as usize;
        std::slice::from_raw_parts(p, n)
            .iter()
            .map(|&d| Aint::from(d))
            .collect()
    }
}

/// Stores an MPI_Aint C returned into the caller's default INTEGER (MPI-1 TYPE_EXTENT,
/// TYPE_LB, TYPE_UB); MPI_ERR_ARG when the value does not fit.
pub fn fint_out(p: *mut Fint, v: Aint) -> c_int {
    match Fint::try_from(v) {
        Ok(f) => {
            // SAFETY: the caller's INTEGER, passed by reference.
            unsafe { *p = f };
            abi::MPI_SUCCESS
        }
        Err(_) => abi::MPI_ERR_ARG,
    }
}

/// Stores an address into the caller's default INTEGER keeping its low 32 bits (MPI-1
/// ADDRESS): differences of such addresses, which is what programs compute, stay right
/// while they fit an INTEGER.
pub fn fint_out_wrapped(p: *mut Fint, v: Aint) -> c_int {
    // SAFETY: the caller's INTEGER, passed by reference.
    unsafe { *p = v as Fint };
    abi::MPI_SUCCESS
}

/// A Fortran attribute key as C knows it: predefined keys are C + 1 in Fortran.
pub fn keyval_to_c(k: Fint) -> (c_int, bool) {
    match abi::PREDEFINED_KEYVALS.iter().find(|(f, _)| *f == k) {
        Some(&(_, c)) => (c, true),
        None => (k, false),
    }
}

/// Copies a C string result into a blank-padded Fortran CHARACTER; returns the length
/// stored (the C length, cut to the Fortran variable).
pub fn string_out(src: &[u8], dst: *mut u8, dst_len: usize) -> usize {
    let n = src.iter().position(|&b| b == 0).unwrap_or(src.len());
    let k = n.min(dst_len);
    if dst.is_null() {
        return 0;
    }
    // SAFETY: dst is the caller's CHARACTER*(dst_len), whose length gfortran passes.
    let d = unsafe { std::slice::from_raw_parts_mut(dst, dst_len) };
    d[..k].copy_from_slice(&src[..k]);
    d[k..].fill(b' ');
    k
}

/// A Fortran CHARACTER input without its trailing blanks, NUL-terminated for C.
pub fn string_in(src: *const u8, len: usize) -> Vec<u8> {
    let s: &[u8] = if src.is_null() {
        &[]
    } else {
        // SAFETY: src is the caller's CHARACTER*(len), whose length gfortran passes.
        unsafe { std::slice::from_raw_parts(src, len) }
    };
    let end = s.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    let mut v: Vec<u8> = s[..end].iter().copied().filter(|&b| b != 0).collect();
    v.push(0);
    v
}

/// A Fortran CHARACTER input without its leading and trailing blanks, NUL-terminated
/// for C: info keys and values, which the standard strips in Fortran (MPI-3.1 9).
pub fn string_in_stripped(src: *const u8, len: usize) -> Vec<u8> {
    let mut v = string_in(src, len);
    let lead = v.iter().take_while(|&&b| b == b' ').count();
    v.drain(..lead);
    v
}

/// gfortran's .TRUE. (C's 1).
const FORTRAN_TRUE: Fint = 1;
/// Marks the entries of a LOGICAL output array that C did not write.
const NOT_WRITTEN: c_int = c_int::MIN;

/// A LOGICAL array of `*count` elements as the int array of 0 and 1 C wants.
pub fn logicals_in(p: *const Fint, count: *const Fint) -> Vec<c_int> {
    if p.is_null() || count.is_null() {
        return Vec::new();
    }
    // SAFETY: COUNT is the caller's INTEGER and the array holds that many LOGICALs.
    unsafe {
        let n = (*count).max(0) as usize;
        std::slice::from_raw_parts(p, n)
            .iter()
            .map(|&l| c_int::from(l != 0))
            .collect()
    }
}

/// The temporary C fills for a LOGICAL output array of at most `*count` elements.
pub fn logicals_out_tmp(p: *mut Fint, count: *const Fint) -> Vec<c_int> {
    if p.is_null() || count.is_null() {
        return Vec::new();
    }
    // SAFETY: COUNT is the caller's INTEGER.
    let n = unsafe { *count }.max(0) as usize;
    vec![NOT_WRITTEN; n]
}

/// Copies the entries C wrote into `tmp` back to the caller's LOGICAL array.
pub fn logicals_out(p: *mut Fint, tmp: &[c_int]) {
    if p.is_null() {
        return;
    }
    // SAFETY: the caller's array holds tmp.len() LOGICALs (logicals_out_tmp sized it).
    let dst = unsafe { std::slice::from_raw_parts_mut(p, tmp.len()) };
    for (d, &v) in dst.iter_mut().zip(tmp) {
        if v != NOT_WRITTEN {
            *d = if v != 0 { FORTRAN_TRUE } else { 0 };
        }
    }
}

/// The temporary's address, or NULL where Fortran passed none.
pub fn ptr_or_null(p: *const Fint, tmp: &[c_int]) -> *const c_int {
    if p.is_null() {
        std::ptr::null()
    } else {
        tmp.as_ptr()
    }
}

/// The temporary's address, or NULL where Fortran passed none.
pub fn ptr_or_null_mut(p: *mut Fint, tmp: &mut [c_int]) -> *mut c_int {
    if p.is_null() {
        std::ptr::null_mut()
    } else {
        tmp.as_mut_ptr()
    }
}

/// An edge-weights array: MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY (COMMON members,
/// recognised by address) become C's values; other arrays pass unchanged.
pub fn weights(p: *mut Fint) -> *mut c_int {
    let a = p as usize;
    // SAFETY: the C library's constant pointers, set before main and never written.
    unsafe {
        if a == abi::addr_mpi_unweighted() {
            MPI_UNWEIGHTED as *mut c_int
        } else if a == abi::addr_mpi_weights_empty() {
            MPI_WEIGHTS_EMPTY as *mut c_int
        } else {
            p
        }
    }
}

extern "C" {
    static MPI_UNWEIGHTED: *const c_int;
    static MPI_WEIGHTS_EMPTY: *const c_int;
    static mut MPI_F_STATUS_IGNORE: *mut Fint;
    static mut MPI_F_STATUSES_IGNORE: *mut Fint;
}

/// At load time: tell the C library where the Fortran MPI_STATUS_IGNORE and
/// MPI_STATUSES_IGNORE live, for C code handling Fortran statuses (MPI-3.1 17.2.5).
extern "C" fn publish_fortran_ignores() {
    // SAFETY: the C library's pointer variables are written once, before main.
    unsafe {
        MPI_F_STATUS_IGNORE = abi::addr_mpi_status_ignore() as *mut Fint;
        MPI_F_STATUSES_IGNORE = abi::addr_mpi_statuses_ignore() as *mut Fint;
    }
}

#[used]
#[link_section = ".init_array"]
static PUBLISH: extern "C" fn() = publish_fortran_ignores;
