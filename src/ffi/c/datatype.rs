//! MPI §4: derived datatypes, pack / unpack, addresses. The engine is datatype/: the
//! constructors (derived.rs) take the arrays as slices, whose element type says which
//! form (int or MPI_Count) was called; the pack calls are datatype/pack.rs `Packing`.
use crate::abi::*;
use crate::attr;
use crate::datatype::pack::{Packing, Rep};
use crate::datatype::{self, derived};
use crate::error::{err, MpiResult};
use crate::ffi::c::p2p::CStatus;
use crate::ffi::check;
use crate::mpi_entry;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};

type Aint = isize;

/// Checks the output handle pointer, then creates the type and stores its handle.
fn new_type(out: *mut i32, make: impl FnOnce() -> MpiResult<i32>) -> MpiResult<()> {
    crate::runtime::job()?;
    check::not_null(out, "newtype")?;
    let h = make()?;
    // SAFETY: `out`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(out, h, "newtype") }
}

/// An input array of `n` entries (none read when n <= 0).
fn arr<'a, T>(p: *const T, n: impl Into<i64>, arg: &str) -> MpiResult<&'a [T]> {
    // SAFETY: `p`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::array(p, n.into().max(0) as usize, arg) }
}

// Rust callers (the test programs) reach some entry points that `counted!` defines in
// blocks of their own through these declarations of the same symbols.
extern "C" {
    pub fn MPI_Type_contiguous(count: c_int, oldtype: i32, newtype: *mut i32) -> c_int;
    pub fn MPI_Type_vector(n: c_int, bl: c_int, stride: c_int, old: i32, new: *mut i32) -> c_int;
    pub fn MPI_Pack(
        inbuf: *const c_void,
        incount: c_int,
        datatype: i32,
        outbuf: *mut c_void,
        outsize: c_int,
        position: *mut c_int,
        comm: i32,
    ) -> c_int;
}

const BLS: &str = "array_of_blocklengths";
const DISPS: &str = "array_of_displacements";

counted!(MPI_Type_contiguous, PMPI_Type_contiguous, MPI_Type_contiguous_c, PMPI_Type_contiguous_c,
    (count: Count, oldtype: i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    new_type(newtype, || derived::contiguous(count, oldtype))
});

counted!(MPI_Type_vector, PMPI_Type_vector, MPI_Type_vector_c, PMPI_Type_vector_c,
    (count: Count, blocklength: Count, stride: Count, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    new_type(newtype, || derived::vector(count, blocklength, stride, oldtype))
});

counted!(MPI_Type_create_hvector, PMPI_Type_create_hvector, MPI_Type_create_hvector_c,
    PMPI_Type_create_hvector_c,
    (count: Count, blocklength: Count, stride: Disp, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    new_type(newtype, || derived::hvector(count, blocklength, stride, oldtype))
});
mpi_entry!(MPI_Type_hvector, PMPI_Type_hvector,
    (count: c_int, blocklength: c_int, stride: Aint, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    new_type(newtype, || derived::hvector(count, blocklength, stride, oldtype))
});

counted!(MPI_Type_indexed, PMPI_Type_indexed, MPI_Type_indexed_c, PMPI_Type_indexed_c,
    (count: Count, array_of_blocklengths: *const Count, array_of_displacements: *const Count,
     oldtype: i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    new_type(newtype, || {
        let b = arr(array_of_blocklengths, count, BLS)?;
        derived::indexed(count, b, arr(array_of_displacements, count, DISPS)?, oldtype)
    })
});

/// MPI_Type_create_hindexed(_c) and MPI_Type_hindexed.
fn hindexed<C: derived::Arg + Into<i64>, D: derived::Arg>(
    count: C,
    bls: *const C,
    disps: *const D,
    old: i32,
    new: *mut i32,
) -> MpiResult<()> {
    new_type(new, || {
        derived::hindexed(count, arr(bls, count, BLS)?, arr(disps, count, DISPS)?, old)
    })
}
counted!(MPI_Type_create_hindexed, PMPI_Type_create_hindexed, MPI_Type_create_hindexed_c,
    PMPI_Type_create_hindexed_c,
    (count: Count, array_of_blocklengths: *const Count, array_of_displacements: *const Disp,
     oldtype: i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    hindexed(count, array_of_blocklengths, array_of_displacements, oldtype, newtype)
});
mpi_entry!(MPI_Type_hindexed, PMPI_Type_hindexed,
    (count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const Aint,
     oldtype: i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    hindexed(count, array_of_blocklengths, array_of_displacements, oldtype, newtype)
});

counted!(MPI_Type_create_indexed_block, PMPI_Type_create_indexed_block,
    MPI_Type_create_indexed_block_c, PMPI_Type_create_indexed_block_c,
    (count: Count, blocklength: Count, array_of_displacements: *const Count, oldtype: i32,
     newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    new_type(newtype, || {
        let d = arr(array_of_displacements, count, DISPS)?;
        derived::indexed_block(count, blocklength, d, oldtype)
    })
});

counted!(MPI_Type_create_hindexed_block, PMPI_Type_create_hindexed_block,
    MPI_Type_create_hindexed_block_c, PMPI_Type_create_hindexed_block_c,
    (count: Count, blocklength: Count, array_of_displacements: *const Disp, oldtype: i32,
     newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    new_type(newtype, || {
        let d = arr(array_of_displacements, count, DISPS)?;
        derived::hindexed_block(count, blocklength, d, oldtype)
    })
});

/// MPI_Type_create_struct(_c) and MPI_Type_struct.
fn structure<C: derived::Arg + Into<i64>, D: derived::Arg>(
    count: C,
    bls: *const C,
    disps: *const D,
    types: *const i32,
    new: *mut i32,
) -> MpiResult<()> {
    new_type(new, || {
        let (b, d) = (arr(bls, count, BLS)?, arr(disps, count, DISPS)?);
        derived::structure(count, b, d, arr(types, count, "array_of_types")?)
    })
}
counted!(MPI_Type_create_struct, PMPI_Type_create_struct, MPI_Type_create_struct_c,
    PMPI_Type_create_struct_c,
    (count: Count, array_of_blocklengths: *const Count, array_of_displacements: *const Disp,
     array_of_types: *const i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    structure(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype)
});
mpi_entry!(MPI_Type_struct, PMPI_Type_struct,
    (count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const Aint,
     array_of_types: *const i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    structure(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype)
});

counted!(MPI_Type_create_resized, PMPI_Type_create_resized, MPI_Type_create_resized_c,
    PMPI_Type_create_resized_c,
    (oldtype: i32, lb: Disp, extent: Disp, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    new_type(newtype, || derived::resized(oldtype, lb, extent))
});

counted!(MPI_Type_create_subarray, PMPI_Type_create_subarray, MPI_Type_create_subarray_c,
    PMPI_Type_create_subarray_c,
    (ndims: c_int, array_of_sizes: *const Count, array_of_subsizes: *const Count,
     array_of_starts: *const Count, order: c_int, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    new_type(newtype, || {
        let s = arr(array_of_sizes, ndims, "array_of_sizes")?;
        let ss = arr(array_of_subsizes, ndims, "array_of_subsizes")?;
        let st = arr(array_of_starts, ndims, "array_of_starts")?;
        derived::subarray(ndims, s, ss, st, order, oldtype)
    })
});

counted!(MPI_Type_create_darray, PMPI_Type_create_darray, MPI_Type_create_darray_c,
    PMPI_Type_create_darray_c,
    (size: c_int, rank: c_int, ndims: c_int, array_of_gsizes: *const Count,
     array_of_distribs: *const c_int, array_of_dargs: *const c_int,
     array_of_psizes: *const c_int, order: c_int, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    new_type(newtype, || {
        let g = arr(array_of_gsizes, ndims, "array_of_gsizes")?;
        let d = arr(array_of_distribs, ndims, "array_of_distribs")?;
        let a = arr(array_of_dargs, ndims, "array_of_dargs")?;
        let p = arr(array_of_psizes, ndims, "array_of_psizes")?;
        derived::darray(size, rank, ndims, g, d, a, p, order, oldtype)
    })
});

mpi_entry!(MPI_Type_dup, PMPI_Type_dup, (oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    // On failure (an attribute copy callback failed) newtype is MPI_DATATYPE_NULL.
    new_type(newtype, || {
        derived::dup(oldtype).inspect_err(|_| {
            let _ = check::out(newtype, MPI_DATATYPE_NULL, "newtype");
        })
    })
});

// ---------------------------------------------------------------------------------------
// Attributes on datatypes (MPI-2 §6.7.4 of MPI-2.2): keys of their own kind

mpi_entry!(MPI_Type_create_keyval, PMPI_Type_create_keyval,
    (type_copy_attr_fn: Option<attr::CopyFn>, type_delete_attr_fn: Option<attr::DeleteFn>,
     type_keyval: *mut c_int, extra_state: *mut c_void), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    check::not_null(type_keyval, "type_keyval")?;
    let k = attr::create_keyval(attr::Kind::Type, type_copy_attr_fn, type_delete_attr_fn, extra_state);
    check::out(type_keyval, k, "type_keyval")
});

mpi_entry!(MPI_Type_free_keyval, PMPI_Type_free_keyval, (type_keyval: *mut c_int),
    errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let k = check::inp(type_keyval, "type_keyval")?;
    attr::free_keyval(k, attr::Kind::Type)?;
    check::out(type_keyval, MPI_KEYVAL_INVALID, "type_keyval")
});

mpi_entry!(MPI_Type_set_attr, PMPI_Type_set_attr,
    (datatype: i32, type_keyval: c_int, attribute_val: *mut c_void), errcomm = MPI_COMM_WORLD, {
    let t = any_type(datatype)?;
    attr::set(derived::type_owner(datatype, &t), type_keyval, attribute_val as usize)
});

mpi_entry!(MPI_Type_get_attr, PMPI_Type_get_attr,
    (datatype: i32, type_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int),
    errcomm = MPI_COMM_WORLD, {
    let t = any_type(datatype)?;
    check::not_null(attribute_val, "attribute_val")?;
    check::not_null(flag, "flag")?;
    let v = attr::get(derived::type_owner(datatype, &t), type_keyval)?;
    put_attr(v, attribute_val, flag)
});

/// Writes the result of an attribute lookup: the value, if any, and the flag.
///
/// # Safety
/// `val` (a `void **` in C) and `flag` valid as the MPI caller must pass them.
pub unsafe fn put_attr(v: Option<usize>, val: *mut c_void, flag: *mut c_int) -> MpiResult<()> {
    if let Some(v) = v {
        // SAFETY: this function's contract.
        unsafe { check::out(val as *mut usize, v, "attribute_val") }?;
    }
    // SAFETY: this function's contract.
    unsafe { check::out(flag, v.is_some() as c_int, "flag") }
}

mpi_entry!(MPI_Type_delete_attr, PMPI_Type_delete_attr, (datatype: i32, type_keyval: c_int),
    errcomm = MPI_COMM_WORLD, {
    let t = any_type(datatype)?;
    attr::delete(derived::type_owner(datatype, &t), type_keyval)
});

mpi_entry!(MPI_Type_commit, PMPI_Type_commit, (datatype: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    derived::commit(check::inp(datatype, "datatype")?)
});

mpi_entry!(MPI_Type_free, PMPI_Type_free, (datatype: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    derived::free(check::inp(datatype, "datatype")?)?;
    check::out(datatype, MPI_DATATYPE_NULL, "datatype")
});

// ---------------------------------------------------------------------------------------
// Size and bounds

fn any_type(h: i32) -> MpiResult<datatype::TypeRef> {
    crate::runtime::job()?;
    derived::get(h, "datatype")
}

counted!(MPI_Type_size, PMPI_Type_size, MPI_Type_size_c, PMPI_Type_size_c,
    (datatype: i32, size: *mut Count), errcomm = MPI_COMM_WORLD, {
    let s = any_type(datatype)?.size();
    check::out(size, Count::try_from(s).unwrap_or(MPI_UNDEFINED as Count), "size")
});

mpi_entry!(MPI_Type_size_x, PMPI_Type_size_x, (datatype: i32, size: *mut i64),
    errcomm = MPI_COMM_WORLD, {
    check::out(size, any_type(datatype)?.size() as i64, "size")
});

/// (lb, extent), or (true_lb, true_extent) when `truly`, into MPI_Aint or MPI_Count
/// outputs (the same 8 bytes).
fn extent_of<T>(h: i32, lb: *mut T, extent: *mut T, truly: bool) -> MpiResult<()> {
    let t = any_type(h)?;
    let (l, e) = if truly {
        (t.true_lb(), t.true_extent())
    } else {
        (t.lb(), t.extent())
    };
    const { assert!(size_of::<T>() == size_of::<Aint>()) };
    // SAFETY: `lb`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(lb as *mut Aint, l, "lb") }?;
    // SAFETY: `extent`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(extent as *mut Aint, e, "extent") }
}

counted!(MPI_Type_get_extent, PMPI_Type_get_extent, MPI_Type_get_extent_c,
    PMPI_Type_get_extent_c,
    (datatype: i32, lb: *mut Disp, extent: *mut Disp), errcomm = MPI_COMM_WORLD, {
    extent_of(datatype, lb, extent, false)
});

mpi_entry!(MPI_Type_get_extent_x, PMPI_Type_get_extent_x,
    (datatype: i32, lb: *mut i64, extent: *mut i64), errcomm = MPI_COMM_WORLD, {
    extent_of(datatype, lb, extent, false)
});

counted!(MPI_Type_get_true_extent, PMPI_Type_get_true_extent, MPI_Type_get_true_extent_c,
    PMPI_Type_get_true_extent_c,
    (datatype: i32, true_lb: *mut Disp, true_extent: *mut Disp), errcomm = MPI_COMM_WORLD, {
    extent_of(datatype, true_lb, true_extent, true)
});

mpi_entry!(MPI_Type_get_true_extent_x, PMPI_Type_get_true_extent_x,
    (datatype: i32, true_lb: *mut i64, true_extent: *mut i64), errcomm = MPI_COMM_WORLD, {
    extent_of(datatype, true_lb, true_extent, true)
});

mpi_entry!(MPI_Type_extent, PMPI_Type_extent, (datatype: i32, extent: *mut Aint),
    errcomm = MPI_COMM_WORLD, {
    check::out(extent, any_type(datatype)?.extent(), "extent")
});

mpi_entry!(MPI_Type_lb, PMPI_Type_lb, (datatype: i32, displacement: *mut Aint),
    errcomm = MPI_COMM_WORLD, {
    check::out(displacement, any_type(datatype)?.lb(), "displacement")
});

mpi_entry!(MPI_Type_ub, PMPI_Type_ub, (datatype: i32, displacement: *mut Aint),
    errcomm = MPI_COMM_WORLD, {
    check::out(displacement, any_type(datatype)?.ub(), "displacement")
});

// ---------------------------------------------------------------------------------------
// Envelope, contents, names, predefined-type lookups

mpi_entry!(MPI_Type_get_envelope, PMPI_Type_get_envelope,
    (datatype: i32, num_integers: *mut c_int, num_addresses: *mut c_int,
     num_datatypes: *mut c_int, combiner: *mut c_int), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let (ni, na, nd, c) = derived::envelope(datatype)?;
    check::out(num_integers, ni as c_int, "num_integers")?;
    check::out(num_addresses, na as c_int, "num_addresses")?;
    check::out(num_datatypes, nd as c_int, "num_datatypes")?;
    check::out(combiner, c, "combiner")
});

mpi_entry!(MPI_Type_get_envelope_c, PMPI_Type_get_envelope_c,
    (datatype: i32, num_integers: *mut i64, num_addresses: *mut i64,
     num_large_counts: *mut i64, num_datatypes: *mut i64, combiner: *mut c_int),
    errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let (ni, na, nc, nd, c) = derived::envelope_c(datatype)?;
    check::out(num_integers, ni as i64, "num_integers")?;
    check::out(num_addresses, na as i64, "num_addresses")?;
    check::out(num_large_counts, nc as i64, "num_large_counts")?;
    check::out(num_datatypes, nd as i64, "num_datatypes")?;
    check::out(combiner, c, "combiner")
});

/// MPI_Type_get_contents(_c): `max` the max_ arguments (max_large_counts only in the _c
/// form, `counts` NULL in the other).
fn contents(
    datatype: i32,
    max: &[(i64, &str)],
    ints: *mut c_int,
    addrs: *mut Aint,
    counts: *mut i64,
    types: *mut i32,
) -> MpiResult<()> {
    crate::runtime::job()?;
    let [ni, na, nc, nd] = derived::contents_len(datatype, max)?;
    // SAFETY (the four arrays): passed on from the entry point, valid as the MPI caller
    // must pass them; checked before handles are created for the datatypes.
    let io = unsafe { check::array_mut(ints, ni, "array_of_integers") }?;
    // SAFETY: as above.
    let ao = unsafe { check::array_mut(addrs, na, "array_of_addresses") }?;
    // SAFETY: as above.
    let co = unsafe { check::array_mut(counts, nc, "array_of_large_counts") }?;
    // SAFETY: as above.
    let dout = unsafe { check::array_mut(types, nd, "array_of_datatypes") }?;
    let (i, a, c, d) = derived::contents_of(datatype, max)?;
    io.copy_from_slice(&i);
    ao.copy_from_slice(&a);
    co.copy_from_slice(&c);
    dout.copy_from_slice(&d);
    Ok(())
}

mpi_entry!(MPI_Type_get_contents, PMPI_Type_get_contents,
    (datatype: i32, max_integers: c_int, max_addresses: c_int, max_datatypes: c_int,
     array_of_integers: *mut c_int, array_of_addresses: *mut Aint,
     array_of_datatypes: *mut i32), errcomm = MPI_COMM_WORLD, {
    let max = [(max_integers.into(), "max_integers"), (max_addresses.into(), "max_addresses"),
               (max_datatypes.into(), "max_datatypes")];
    let none = std::ptr::null_mut();
    contents(datatype, &max, array_of_integers, array_of_addresses, none, array_of_datatypes)
});

mpi_entry!(MPI_Type_get_contents_c, PMPI_Type_get_contents_c,
    (datatype: i32, max_integers: i64, max_addresses: i64, max_large_counts: i64,
     max_datatypes: i64, array_of_integers: *mut c_int, array_of_addresses: *mut Aint,
     array_of_large_counts: *mut i64, array_of_datatypes: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    let max = [(max_integers, "max_integers"), (max_addresses, "max_addresses"),
               (max_large_counts, "max_large_counts"), (max_datatypes, "max_datatypes")];
    contents(datatype, &max, array_of_integers, array_of_addresses, array_of_large_counts,
             array_of_datatypes)
});

mpi_entry!(MPI_Type_get_name, PMPI_Type_get_name,
    (datatype: i32, type_name: *mut c_char, resultlen: *mut c_int), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let name = derived::get_name(datatype)?;
    check::not_null(resultlen, "resultlen")?;
    let n = check::c_string(type_name, MPI_MAX_OBJECT_NAME as usize, &name, "type_name")?;
    check::out(resultlen, n, "resultlen")
});

mpi_entry!(MPI_Type_set_name, PMPI_Type_set_name,
    (datatype: i32, type_name: *const c_char), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    check::not_null(type_name, "type_name")?;
    // SAFETY: a non-NULL type_name is a NUL-terminated C string per the standard.
    derived::set_name(datatype, &CStr::from_ptr(type_name).to_string_lossy())
});

mpi_entry!(MPI_Type_match_size, PMPI_Type_match_size,
    (typeclass: c_int, size: c_int, datatype: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    check::out(datatype, derived::match_size(typeclass, size)?, "datatype")
});

mpi_entry!(MPI_Type_create_f90_real, PMPI_Type_create_f90_real,
    (p: c_int, r: c_int, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    new_type(newtype, || derived::f90_real(p, r))
});

mpi_entry!(MPI_Type_create_f90_complex, PMPI_Type_create_f90_complex,
    (p: c_int, r: c_int, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    new_type(newtype, || derived::f90_complex(p, r))
});

mpi_entry!(MPI_Type_create_f90_integer, PMPI_Type_create_f90_integer,
    (r: c_int, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    new_type(newtype, || derived::f90_integer(r))
});

// ---------------------------------------------------------------------------------------
// Addresses

mpi_entry!(MPI_Get_address, PMPI_Get_address, (location: *const c_void, address: *mut Aint),
    errcomm = MPI_COMM_WORLD, {
    check::out(address, location as Aint, "address")
});

mpi_entry!(MPI_Address, PMPI_Address, (location: *const c_void, address: *mut Aint),
    errcomm = MPI_COMM_WORLD, {
    check::out(address, location as Aint, "address")
});

/// MPI_Aint_add: base + disp as addresses (wrapping, as pointer arithmetic would).
#[no_mangle]
pub extern "C" fn PMPI_Aint_add(base: Aint, disp: Aint) -> Aint {
    base.wrapping_add(disp)
}
#[no_mangle]
pub extern "C" fn MPI_Aint_add(base: Aint, disp: Aint) -> Aint {
    PMPI_Aint_add(base, disp)
}
/// MPI_Aint_diff: addr1 - addr2.
#[no_mangle]
pub extern "C" fn PMPI_Aint_diff(addr1: Aint, addr2: Aint) -> Aint {
    addr1.wrapping_sub(addr2)
}
#[no_mangle]
pub extern "C" fn MPI_Aint_diff(addr1: Aint, addr2: Aint) -> Aint {
    PMPI_Aint_diff(addr1, addr2)
}

// ---------------------------------------------------------------------------------------
// Pack / unpack, in this machine's representation and in external32

/// MPI_Pack or MPI_Unpack (`pack` says which; their external32 and _c forms too) once
/// `p` checked the counts and the position: `data` is the typed buffer (the inbuf of a
/// pack, the outbuf of an unpack), `packed` the other. Returns the new position.
fn transfer(
    p: Packing,
    pack: bool,
    data: *mut c_void,
    packed: *mut c_void,
    dt: i32,
) -> MpiResult<usize> {
    let (dname, pname) = if pack {
        ("inbuf", "outbuf")
    } else {
        ("outbuf", "inbuf")
    };
    check::check_base(data, p.count, &check::datatype(dt, "datatype")?, dname)?;
    if check::is_in_place(packed) {
        return Err(err(MPI_ERR_BUFFER, format!("{pname} is MPI_IN_PLACE")));
    }
    if p.bytes == 0 {
        return Ok(p.pos);
    }
    let (pos, end) = (p.pos, p.pos + p.bytes);
    // SAFETY: (the arrays) `packed`: passed on from the entry point, valid as the MPI
    // caller must pass it (for the position and the bytes `Packing` checked against its
    // size); (the calls) `data` (possibly MPI_BOTTOM with absolute
    // displacements) holds (or has room for) the instances of `dt` per the standard, and
    // does not overlap `packed`.
    unsafe {
        if pack {
            let out = check::array_mut(packed as *mut u8, end, pname)?;
            p.pack(data as *const u8, &mut out[pos..])
        } else {
            let inp = check::array(packed as *const u8, end, pname)?;
            p.unpack(&inp[pos..], data as *mut u8)
        }
    }
}

counted!(MPI_Pack, PMPI_Pack, MPI_Pack_c, PMPI_Pack_c,
    (inbuf: *const c_void, incount: Count, datatype: i32, outbuf: *mut c_void, outsize: Count,
     position: *mut Count, comm: i32), errcomm = comm, {
    let pos = check::inp(position, "position")?;
    check::comm(comm)?;
    let p = Packing::new(Rep::Native, incount.into(), "incount", datatype, pos.into(), outsize.into(), "outsize")?;
    check::out(position, transfer(p, true, inbuf as *mut c_void, outbuf, datatype)? as Count, "position")
});

counted!(MPI_Unpack, PMPI_Unpack, MPI_Unpack_c, PMPI_Unpack_c,
    (inbuf: *const c_void, insize: Count, position: *mut Count, outbuf: *mut c_void,
     outcount: Count, datatype: i32, comm: i32), errcomm = comm, {
    let pos = check::inp(position, "position")?;
    check::comm(comm)?;
    let p = Packing::new(Rep::Native, outcount.into(), "outcount", datatype, pos.into(), insize.into(), "insize")?;
    check::out(position, transfer(p, false, outbuf, inbuf as *mut c_void, datatype)? as Count, "position")
});

counted!(MPI_Pack_size, PMPI_Pack_size, MPI_Pack_size_c, PMPI_Pack_size_c,
    (incount: Count, datatype: i32, comm: i32, size: *mut Count), errcomm = comm, {
    check::comm(comm)?;
    let bytes = datatype::pack::pack_size(Rep::Native, incount.into(), datatype)?;
    let n = Count::try_from(bytes).map_err(|_| err(MPI_ERR_COUNT, format!(
        "incount={incount}: {bytes} bytes do not fit in an int (the _c form takes an MPI_Count)")))?;
    check::out(size, n, "size")
});

/// The datarep argument of the external32 calls.
fn external32(datarep: *const c_char) -> MpiResult<()> {
    crate::runtime::job()?;
    check::not_null(datarep, "datarep")?;
    // SAFETY: a non-NULL datarep is a NUL-terminated string (standard).
    datatype::external::check_rep(unsafe { CStr::from_ptr(datarep) })
}

counted!(MPI_Pack_external, PMPI_Pack_external, MPI_Pack_external_c, PMPI_Pack_external_c,
    (datarep: *const c_char, inbuf: *const c_void, incount: Count, datatype: i32,
     outbuf: *mut c_void, outsize: Disp, position: *mut Disp), errcomm = MPI_COMM_WORLD, {
    let pos = check::inp(position, "position")?;
    external32(datarep)?;
    let p = Packing::new(Rep::External32, incount.into(), "incount", datatype, pos as i64, outsize as i64, "outsize")?;
    check::out(position, transfer(p, true, inbuf as *mut c_void, outbuf, datatype)? as Disp, "position")
});

counted!(MPI_Unpack_external, PMPI_Unpack_external, MPI_Unpack_external_c,
    PMPI_Unpack_external_c,
    (datarep: *const c_char, inbuf: *const c_void, insize: Disp, position: *mut Disp,
     outbuf: *mut c_void, outcount: Count, datatype: i32), errcomm = MPI_COMM_WORLD, {
    let pos = check::inp(position, "position")?;
    external32(datarep)?;
    let p = Packing::new(Rep::External32, outcount.into(), "outcount", datatype, pos as i64, insize as i64, "insize")?;
    check::out(position, transfer(p, false, outbuf, inbuf as *mut c_void, datatype)? as Disp, "position")
});

counted!(MPI_Pack_external_size, PMPI_Pack_external_size, MPI_Pack_external_size_c,
    PMPI_Pack_external_size_c,
    (datarep: *const c_char, incount: Count, datatype: i32, size: *mut Disp),
    errcomm = MPI_COMM_WORLD, {
    external32(datarep)?;
    let bytes = datatype::pack::pack_size(Rep::External32, incount.into(), datatype)?;
    check::out(size, bytes as Disp, "size")
});

// ---------------------------------------------------------------------------------------
// Elements and count of a received message (MPI_Count results; the int forms are with
// the point-to-point calls)

fn elements(status: *const CStatus, datatype: i32, count: *mut i64) -> MpiResult<()> {
    // SAFETY: `status`: passed on from the entry point, valid as the MPI caller must pass it.
    let st = unsafe { check::inp(status, "status") }?;
    let t = derived::get_signature(datatype, "datatype")?;
    let n = datatype::get_elements(&t, st.count_bytes()).map_or(MPI_UNDEFINED as i64, |n| n as i64);
    // SAFETY: `count`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(count, n, "count") }
}
mpi_entry!(MPI_Get_elements_x, PMPI_Get_elements_x,
    (status: *const CStatus, datatype: i32, count: *mut i64), errcomm = MPI_COMM_WORLD, {
    elements(status, datatype, count)
});
mpi_entry!(MPI_Get_elements_c, PMPI_Get_elements_c,
    (status: *const CStatus, datatype: i32, count: *mut i64), errcomm = MPI_COMM_WORLD, {
    elements(status, datatype, count)
});

mpi_entry!(MPI_Get_count_c, PMPI_Get_count_c,
    (status: *const CStatus, datatype: i32, count: *mut i64), errcomm = MPI_COMM_WORLD, {
    let st = check::inp(status, "status")?;
    let t = derived::get_signature(datatype, "datatype")?;
    let n = datatype::count_of(&t, st.count_bytes()).map_or(MPI_UNDEFINED as i64, |n| n as i64);
    check::out(count, n, "count")
});
