//! MPI §4: derived datatypes, pack / unpack, addresses.
use crate::abi::*;
use crate::datatype::derived::Form;
use crate::datatype::{self, derived};
use crate::error::{err, MpiResult};
use crate::ffi::c::p2p::CStatus;
use crate::ffi::check;
use crate::mpi_entry;
use std::os::raw::{c_char, c_int, c_void};

type Aint = isize;

/// Checks the output handle pointer, then creates the type and stores its handle.
fn new_type(out: *mut i32, make: impl FnOnce() -> MpiResult<i32>) -> MpiResult<()> {
    crate::runtime::job()?;
    if out.is_null() {
        return Err(err(MPI_ERR_ARG, "newtype is NULL"));
    }
    let h = make()?;
    // SAFETY: `out`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(out, h, "newtype") }
}

/// An input array of `n` entries (none read when n <= 0).
fn arr<'a, T>(p: *const T, n: c_int, arg: &str) -> MpiResult<&'a [T]> {
    // SAFETY: `p`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::array(p, n.max(0) as usize, arg) }
}

/// A count, displacement or size argument of a constructor: an int (`MPI_Type_vector`),
/// an MPI_Aint, or an MPI_Count (MPI-4's `MPI_Type_vector_c`).
trait Arg: Copy {
    fn wide(self) -> i64;
}
impl Arg for c_int {
    fn wide(self) -> i64 {
        self.into()
    }
}
impl Arg for i64 {
    fn wide(self) -> i64 {
        self
    }
}
impl Arg for isize {
    fn wide(self) -> i64 {
        self as i64
    }
}

/// The `n` entries (none read when n <= 0) of an input array of counts, widened.
fn counts<T: Arg>(p: *const T, n: impl Arg, arg: &str) -> MpiResult<Vec<i64>> {
    // SAFETY: `p`: passed on from the entry point, valid as the MPI caller must pass it.
    let a = unsafe { check::array(p, n.wide().max(0) as usize, arg) }?;
    Ok(a.iter().map(|x| x.wide()).collect())
}

/// The `n` entries of an input array of byte displacements, as addresses.
fn addrs<T: Arg>(p: *const T, n: impl Arg, arg: &str) -> MpiResult<Vec<Aint>> {
    Ok(counts(p, n, arg)?.into_iter().map(|x| x as Aint).collect())
}

const BLS: &str = "array_of_blocklengths";
const DISPS: &str = "array_of_displacements";

// Each constructor once for both forms: `form` says which was called (derived::Form).

fn contiguous_entry(form: Form, count: impl Arg, old: i32, new: *mut i32) -> MpiResult<()> {
    new_type(new, || derived::contiguous_in(form, count.wide(), old))
}

fn vector_entry<C: Arg>(
    form: Form,
    n: C,
    bl: C,
    stride: C,
    old: i32,
    new: *mut i32,
) -> MpiResult<()> {
    new_type(new, || {
        derived::vector_in(form, n.wide(), bl.wide(), stride.wide(), old)
    })
}

fn hvector_entry<C: Arg>(
    form: Form,
    n: C,
    bl: C,
    stride: impl Arg,
    old: i32,
    new: *mut i32,
) -> MpiResult<()> {
    new_type(new, || {
        derived::hvector_in(form, n.wide(), bl.wide(), stride.wide() as Aint, old)
    })
}

fn indexed_entry<C: Arg>(
    form: Form,
    n: C,
    bls: *const C,
    disps: *const C,
    old: i32,
    new: *mut i32,
) -> MpiResult<()> {
    new_type(new, || {
        let (b, d) = (counts(bls, n, BLS)?, counts(disps, n, DISPS)?);
        derived::indexed_in(form, n.wide(), &b, &d, old)
    })
}

fn hindexed_entry<C: Arg>(
    form: Form,
    n: C,
    bls: *const C,
    disps: *const impl Arg,
    old: i32,
    new: *mut i32,
) -> MpiResult<()> {
    new_type(new, || {
        let (b, d) = (counts(bls, n, BLS)?, addrs(disps, n, DISPS)?);
        derived::hindexed_in(form, n.wide(), &b, &d, old)
    })
}

fn indexed_block_entry<C: Arg>(
    form: Form,
    n: C,
    bl: C,
    disps: *const C,
    old: i32,
    new: *mut i32,
) -> MpiResult<()> {
    new_type(new, || {
        let d = counts(disps, n, DISPS)?;
        derived::indexed_block_in(form, n.wide(), bl.wide(), &d, old)
    })
}

fn hindexed_block_entry<C: Arg>(
    form: Form,
    n: C,
    bl: C,
    disps: *const impl Arg,
    old: i32,
    new: *mut i32,
) -> MpiResult<()> {
    new_type(new, || {
        let d = addrs(disps, n, DISPS)?;
        derived::hindexed_block_in(form, n.wide(), bl.wide(), &d, old)
    })
}

fn struct_entry<C: Arg>(
    form: Form,
    n: C,
    bls: *const C,
    disps: *const impl Arg,
    types: *const i32,
    new: *mut i32,
) -> MpiResult<()> {
    new_type(new, || {
        let (b, d) = (counts(bls, n, BLS)?, addrs(disps, n, DISPS)?);
        // SAFETY: `types`: passed on from the entry point, valid as the MPI caller must pass it.
        let t = unsafe { check::array(types, n.wide().max(0) as usize, "array_of_types") }?;
        derived::structure_in(form, n.wide(), &b, &d, t)
    })
}

fn resized_entry(
    form: Form,
    old: i32,
    lb: impl Arg,
    extent: impl Arg,
    new: *mut i32,
) -> MpiResult<()> {
    new_type(new, || {
        derived::resized_in(form, old, lb.wide() as Aint, extent.wide() as Aint)
    })
}

#[allow(clippy::too_many_arguments)]
fn subarray_entry<C: Arg>(
    form: Form,
    ndims: c_int,
    sizes: *const C,
    subsizes: *const C,
    starts: *const C,
    order: c_int,
    old: i32,
    new: *mut i32,
) -> MpiResult<()> {
    new_type(new, || {
        let s = counts(sizes, ndims, "array_of_sizes")?;
        let ss = counts(subsizes, ndims, "array_of_subsizes")?;
        let st = counts(starts, ndims, "array_of_starts")?;
        derived::subarray_in(form, ndims, &s, &ss, &st, order, old)
    })
}

#[allow(clippy::too_many_arguments)]
fn darray_entry<C: Arg>(
    form: Form,
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const C,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    old: i32,
    new: *mut i32,
) -> MpiResult<()> {
    new_type(new, || {
        let g = counts(gsizes, ndims, "array_of_gsizes")?;
        let d = arr(distribs, ndims, "array_of_distribs")?;
        let a = arr(dargs, ndims, "array_of_dargs")?;
        let p = arr(psizes, ndims, "array_of_psizes")?;
        derived::darray_in(form, size, rank, ndims, &g, d, a, p, order, old)
    })
}

mpi_entry!(MPI_Type_contiguous, PMPI_Type_contiguous,
    (count: c_int, oldtype: i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    contiguous_entry(Form::Int, count, oldtype, newtype)
});
mpi_entry!(MPI_Type_contiguous_c, PMPI_Type_contiguous_c,
    (count: i64, oldtype: i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    contiguous_entry(Form::Large, count, oldtype, newtype)
});

mpi_entry!(MPI_Type_vector, PMPI_Type_vector,
    (count: c_int, blocklength: c_int, stride: c_int, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    vector_entry(Form::Int, count, blocklength, stride, oldtype, newtype)
});
mpi_entry!(MPI_Type_vector_c, PMPI_Type_vector_c,
    (count: i64, blocklength: i64, stride: i64, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    vector_entry(Form::Large, count, blocklength, stride, oldtype, newtype)
});

mpi_entry!(MPI_Type_create_hvector, PMPI_Type_create_hvector,
    (count: c_int, blocklength: c_int, stride: Aint, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    hvector_entry(Form::Int, count, blocklength, stride, oldtype, newtype)
});
mpi_entry!(MPI_Type_hvector, PMPI_Type_hvector,
    (count: c_int, blocklength: c_int, stride: Aint, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    hvector_entry(Form::Int, count, blocklength, stride, oldtype, newtype)
});
mpi_entry!(MPI_Type_create_hvector_c, PMPI_Type_create_hvector_c,
    (count: i64, blocklength: i64, stride: i64, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    hvector_entry(Form::Large, count, blocklength, stride, oldtype, newtype)
});

mpi_entry!(MPI_Type_indexed, PMPI_Type_indexed,
    (count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const c_int,
     oldtype: i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    indexed_entry(Form::Int, count, array_of_blocklengths, array_of_displacements, oldtype, newtype)
});
mpi_entry!(MPI_Type_indexed_c, PMPI_Type_indexed_c,
    (count: i64, array_of_blocklengths: *const i64, array_of_displacements: *const i64,
     oldtype: i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    indexed_entry(Form::Large, count, array_of_blocklengths, array_of_displacements, oldtype, newtype)
});

mpi_entry!(MPI_Type_create_hindexed, PMPI_Type_create_hindexed,
    (count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const Aint,
     oldtype: i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    hindexed_entry(Form::Int, count, array_of_blocklengths, array_of_displacements, oldtype, newtype)
});
mpi_entry!(MPI_Type_hindexed, PMPI_Type_hindexed,
    (count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const Aint,
     oldtype: i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    hindexed_entry(Form::Int, count, array_of_blocklengths, array_of_displacements, oldtype, newtype)
});
mpi_entry!(MPI_Type_create_hindexed_c, PMPI_Type_create_hindexed_c,
    (count: i64, array_of_blocklengths: *const i64, array_of_displacements: *const i64,
     oldtype: i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    hindexed_entry(Form::Large, count, array_of_blocklengths, array_of_displacements, oldtype, newtype)
});

mpi_entry!(MPI_Type_create_indexed_block, PMPI_Type_create_indexed_block,
    (count: c_int, blocklength: c_int, array_of_displacements: *const c_int, oldtype: i32,
     newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    indexed_block_entry(Form::Int, count, blocklength, array_of_displacements, oldtype, newtype)
});
mpi_entry!(MPI_Type_create_indexed_block_c, PMPI_Type_create_indexed_block_c,
    (count: i64, blocklength: i64, array_of_displacements: *const i64, oldtype: i32,
     newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    indexed_block_entry(Form::Large, count, blocklength, array_of_displacements, oldtype, newtype)
});

mpi_entry!(MPI_Type_create_hindexed_block, PMPI_Type_create_hindexed_block,
    (count: c_int, blocklength: c_int, array_of_displacements: *const Aint, oldtype: i32,
     newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    hindexed_block_entry(Form::Int, count, blocklength, array_of_displacements, oldtype, newtype)
});
mpi_entry!(MPI_Type_create_hindexed_block_c, PMPI_Type_create_hindexed_block_c,
    (count: i64, blocklength: i64, array_of_displacements: *const i64, oldtype: i32,
     newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    hindexed_block_entry(Form::Large, count, blocklength, array_of_displacements, oldtype, newtype)
});

mpi_entry!(MPI_Type_create_struct, PMPI_Type_create_struct,
    (count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const Aint,
     array_of_types: *const i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    struct_entry(Form::Int, count, array_of_blocklengths, array_of_displacements, array_of_types, newtype)
});
mpi_entry!(MPI_Type_struct, PMPI_Type_struct,
    (count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const Aint,
     array_of_types: *const i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    struct_entry(Form::Int, count, array_of_blocklengths, array_of_displacements, array_of_types, newtype)
});
mpi_entry!(MPI_Type_create_struct_c, PMPI_Type_create_struct_c,
    (count: i64, array_of_blocklengths: *const i64, array_of_displacements: *const i64,
     array_of_types: *const i32, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    struct_entry(Form::Large, count, array_of_blocklengths, array_of_displacements, array_of_types, newtype)
});

mpi_entry!(MPI_Type_create_resized, PMPI_Type_create_resized,
    (oldtype: i32, lb: Aint, extent: Aint, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    resized_entry(Form::Int, oldtype, lb, extent, newtype)
});
mpi_entry!(MPI_Type_create_resized_c, PMPI_Type_create_resized_c,
    (oldtype: i32, lb: i64, extent: i64, newtype: *mut i32), errcomm = MPI_COMM_WORLD, {
    resized_entry(Form::Large, oldtype, lb, extent, newtype)
});

mpi_entry!(MPI_Type_create_subarray, PMPI_Type_create_subarray,
    (ndims: c_int, array_of_sizes: *const c_int, array_of_subsizes: *const c_int,
     array_of_starts: *const c_int, order: c_int, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    subarray_entry(Form::Int, ndims, array_of_sizes, array_of_subsizes, array_of_starts, order, oldtype, newtype)
});
mpi_entry!(MPI_Type_create_subarray_c, PMPI_Type_create_subarray_c,
    (ndims: c_int, array_of_sizes: *const i64, array_of_subsizes: *const i64,
     array_of_starts: *const i64, order: c_int, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    subarray_entry(Form::Large, ndims, array_of_sizes, array_of_subsizes, array_of_starts, order, oldtype, newtype)
});

mpi_entry!(MPI_Type_create_darray, PMPI_Type_create_darray,
    (size: c_int, rank: c_int, ndims: c_int, array_of_gsizes: *const c_int,
     array_of_distribs: *const c_int, array_of_dargs: *const c_int,
     array_of_psizes: *const c_int, order: c_int, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    darray_entry(Form::Int, size, rank, ndims, array_of_gsizes, array_of_distribs,
                 array_of_dargs, array_of_psizes, order, oldtype, newtype)
});
mpi_entry!(MPI_Type_create_darray_c, PMPI_Type_create_darray_c,
    (size: c_int, rank: c_int, ndims: c_int, array_of_gsizes: *const i64,
     array_of_distribs: *const c_int, array_of_dargs: *const c_int,
     array_of_psizes: *const c_int, order: c_int, oldtype: i32, newtype: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    darray_entry(Form::Large, size, rank, ndims, array_of_gsizes, array_of_distribs,
                 array_of_dargs, array_of_psizes, order, oldtype, newtype)
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

use crate::attr;

mpi_entry!(MPI_Type_create_keyval, PMPI_Type_create_keyval,
    (type_copy_attr_fn: Option<attr::CopyFn>, type_delete_attr_fn: Option<attr::DeleteFn>,
     type_keyval: *mut c_int, extra_state: *mut c_void), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    if type_keyval.is_null() {
        return Err(err(MPI_ERR_ARG, "type_keyval is NULL"));
    }
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
    if attribute_val.is_null() {
        return Err(err(MPI_ERR_ARG, "attribute_val is NULL"));
    }
    if flag.is_null() {
        return Err(err(MPI_ERR_ARG, "flag is NULL"));
    }
    match attr::get(derived::type_owner(datatype, &t), type_keyval)? {
        Some(v) => {
            check::out(attribute_val as *mut usize, v, "attribute_val")?;
            check::out(flag, 1, "flag")
        }
        None => check::out(flag, 0, "flag"),
    }
});

mpi_entry!(MPI_Type_delete_attr, PMPI_Type_delete_attr, (datatype: i32, type_keyval: c_int),
    errcomm = MPI_COMM_WORLD, {
    let t = any_type(datatype)?;
    attr::delete(derived::type_owner(datatype, &t), type_keyval)
});

mpi_entry!(MPI_Type_commit, PMPI_Type_commit, (datatype: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let h = check::inp(datatype, "datatype")?;
    derived::commit(h)
});

mpi_entry!(MPI_Type_free, PMPI_Type_free, (datatype: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let h = check::inp(datatype, "datatype")?;
    derived::free(h)?;
    check::out(datatype, MPI_DATATYPE_NULL, "datatype")
});

// ---------------------------------------------------------------------------------------
// Size and bounds

fn any_type(h: i32) -> MpiResult<datatype::TypeRef> {
    crate::runtime::job()?;
    derived::get(h, "datatype")
}

mpi_entry!(MPI_Type_size, PMPI_Type_size, (datatype: i32, size: *mut c_int),
    errcomm = MPI_COMM_WORLD, {
    let s = any_type(datatype)?.size();
    let v = if s > i32::MAX as usize { MPI_UNDEFINED } else { s as c_int };
    check::out(size, v, "size")
});

mpi_entry!(MPI_Type_size_x, PMPI_Type_size_x, (datatype: i32, size: *mut i64),
    errcomm = MPI_COMM_WORLD, {
    let s = any_type(datatype)?.size();
    check::out(size, s as i64, "size")
});

fn extent_of(h: i32, lb: *mut Aint, extent: *mut Aint, truly: bool) -> MpiResult<()> {
    let t = any_type(h)?;
    let (l, e) = if truly {
        (t.true_lb(), t.true_extent())
    } else {
        (t.lb(), t.extent())
    };
    // SAFETY: `lb`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(lb, l, "lb") }?;
    // SAFETY: `extent`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(extent, e, "extent") }
}

mpi_entry!(MPI_Type_get_extent, PMPI_Type_get_extent,
    (datatype: i32, lb: *mut Aint, extent: *mut Aint), errcomm = MPI_COMM_WORLD, {
    extent_of(datatype, lb, extent, false)
});

mpi_entry!(MPI_Type_get_extent_x, PMPI_Type_get_extent_x,
    (datatype: i32, lb: *mut i64, extent: *mut i64), errcomm = MPI_COMM_WORLD, {
    extent_of(datatype, lb as *mut Aint, extent as *mut Aint, false)
});

mpi_entry!(MPI_Type_get_true_extent, PMPI_Type_get_true_extent,
    (datatype: i32, true_lb: *mut Aint, true_extent: *mut Aint), errcomm = MPI_COMM_WORLD, {
    extent_of(datatype, true_lb, true_extent, true)
});

mpi_entry!(MPI_Type_get_true_extent_x, PMPI_Type_get_true_extent_x,
    (datatype: i32, true_lb: *mut i64, true_extent: *mut i64), errcomm = MPI_COMM_WORLD, {
    extent_of(datatype, true_lb as *mut Aint, true_extent as *mut Aint, true)
});

mpi_entry!(MPI_Type_extent, PMPI_Type_extent, (datatype: i32, extent: *mut Aint),
    errcomm = MPI_COMM_WORLD, {
    let e = any_type(datatype)?.extent();
    check::out(extent, e, "extent")
});

mpi_entry!(MPI_Type_lb, PMPI_Type_lb, (datatype: i32, displacement: *mut Aint),
    errcomm = MPI_COMM_WORLD, {
    let v = any_type(datatype)?.lb();
    check::out(displacement, v, "displacement")
});

mpi_entry!(MPI_Type_ub, PMPI_Type_ub, (datatype: i32, displacement: *mut Aint),
    errcomm = MPI_COMM_WORLD, {
    let v = any_type(datatype)?.ub();
    check::out(displacement, v, "displacement")
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

mpi_entry!(MPI_Type_get_contents, PMPI_Type_get_contents,
    (datatype: i32, max_integers: c_int, max_addresses: c_int, max_datatypes: c_int,
     array_of_integers: *mut c_int, array_of_addresses: *mut Aint,
     array_of_datatypes: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    for (v, what) in [(max_integers, "max_integers"), (max_addresses, "max_addresses"),
                      (max_datatypes, "max_datatypes")] {
        if v < 0 {
            return Err(err(MPI_ERR_ARG, format!("{what}={v} is negative")));
        }
    }
    let (ni, na, nd, _) = derived::envelope(datatype)?;
    // check the output arrays before creating handles for the datatypes
    let io = check::array_mut(array_of_integers, ni, "array_of_integers")?;
    let ao = check::array_mut(array_of_addresses, na, "array_of_addresses")?;
    let dout = check::array_mut(array_of_datatypes, nd, "array_of_datatypes")?;
    let (i, a, d) = derived::contents(
        datatype,
        max_integers as usize,
        max_addresses as usize,
        max_datatypes as usize,
    )?;
    io.copy_from_slice(&i);
    ao.copy_from_slice(&a);
    dout.copy_from_slice(&d);
    Ok(())
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

mpi_entry!(MPI_Type_get_contents_c, PMPI_Type_get_contents_c,
    (datatype: i32, max_integers: i64, max_addresses: i64, max_large_counts: i64,
     max_datatypes: i64, array_of_integers: *mut c_int, array_of_addresses: *mut Aint,
     array_of_large_counts: *mut i64, array_of_datatypes: *mut i32),
    errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    for (v, what) in [(max_integers, "max_integers"), (max_addresses, "max_addresses"),
                      (max_large_counts, "max_large_counts"), (max_datatypes, "max_datatypes")] {
        if v < 0 {
            return Err(err(MPI_ERR_ARG, format!("{what}={v} is negative")));
        }
    }
    let (ni, na, nc, nd, _) = derived::envelope_c(datatype)?;
    // check the output arrays before creating handles for the datatypes
    let io = check::array_mut(array_of_integers, ni, "array_of_integers")?;
    let ao = check::array_mut(array_of_addresses, na, "array_of_addresses")?;
    let co = check::array_mut(array_of_large_counts, nc, "array_of_large_counts")?;
    let dout = check::array_mut(array_of_datatypes, nd, "array_of_datatypes")?;
    let (i, a, c, d) = derived::contents_c(
        datatype,
        max_integers as usize,
        max_addresses as usize,
        max_large_counts as usize,
        max_datatypes as usize,
    )?;
    io.copy_from_slice(&i);
    ao.copy_from_slice(&a);
    co.copy_from_slice(&c);
    dout.copy_from_slice(&d);
    Ok(())
});

mpi_entry!(MPI_Type_get_name, PMPI_Type_get_name,
    (datatype: i32, type_name: *mut c_char, resultlen: *mut c_int), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let name = derived::get_name(datatype)?;
    if resultlen.is_null() {
        return Err(err(MPI_ERR_ARG, "resultlen is NULL"));
    }
    let n = check::c_string(type_name, MPI_MAX_OBJECT_NAME as usize, &name, "type_name")?;
    check::out(resultlen, n, "resultlen")
});

mpi_entry!(MPI_Type_set_name, PMPI_Type_set_name,
    (datatype: i32, type_name: *const c_char), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    if type_name.is_null() {
        return Err(err(MPI_ERR_ARG, "type_name is NULL"));
    }
    // SAFETY: a non-NULL type_name is a NUL-terminated C string per the standard.
    let s = std::ffi::CStr::from_ptr(type_name).to_string_lossy();
    let max = MPI_MAX_OBJECT_NAME as usize - 1;
    let mut cut = s.len().min(max);
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    derived::set_name(datatype, &s[..cut])
});

mpi_entry!(MPI_Type_match_size, PMPI_Type_match_size,
    (typeclass: c_int, size: c_int, datatype: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let h = derived::match_size(typeclass, size)?;
    check::out(datatype, h, "datatype")
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
// Pack / unpack

fn packed_bytes(t: &datatype::Type, n: usize, count: impl std::fmt::Display) -> MpiResult<usize> {
    datatype::packed_size(t, n).ok_or_else(|| {
        err(
            MPI_ERR_COUNT,
            format!("count={count} x size {} overflows", t.size()),
        )
    })
}

/// The position argument: `pos + bytes` must fit in `cap` (`what` names the bytes).
fn window(pos: i64, bytes: usize, cap: i64, capname: &str, what: &str) -> MpiResult<usize> {
    if pos < 0 {
        return Err(err(MPI_ERR_ARG, format!("position={pos} is negative")));
    }
    if cap < 0 {
        return Err(err(MPI_ERR_ARG, format!("{capname}={cap} is negative")));
    }
    if (pos as u64)
        .checked_add(bytes as u64)
        .is_none_or(|end| end > cap as u64)
    {
        return Err(err(
            MPI_ERR_TRUNCATE,
            format!("{bytes} {what} bytes at position={pos} do not fit in {capname}={cap} bytes"),
        ));
    }
    Ok(pos as usize)
}

/// MPI_Pack(_c): packs `incount` instances at position `pos` of `outbuf` (`outsize`
/// bytes); returns the new position.
fn pack_at(
    inbuf: *const c_void,
    incount: i64,
    datatype: i32,
    outbuf: *mut c_void,
    outsize: i64,
    pos: i64,
    comm: i32,
) -> MpiResult<usize> {
    check::comm(comm)?;
    let n = check::count(incount, "incount")?;
    let t = datatype::lookup_arg(datatype, "datatype")?;
    let bytes = packed_bytes(&t, n, incount)?;
    let pos = window(pos, bytes, outsize, "outsize", "packed")?;
    check::check_base(inbuf, n, &check::datatype(datatype, "datatype")?, "inbuf")?;
    if check::is_in_place(outbuf) {
        return Err(err(MPI_ERR_BUFFER, "outbuf is MPI_IN_PLACE"));
    }
    if bytes > 0 {
        // SAFETY: `outbuf as *mut u8`: passed on from the entry point,
        // valid as the MPI caller must pass it.
        let out = unsafe { check::array_mut(outbuf as *mut u8, pos + bytes, "outbuf") }?;
        // SAFETY: inbuf (possibly MPI_BOTTOM with absolute displacements) holds `incount`
        // instances of `datatype` per the standard; `out` is the caller's outbuf.
        unsafe { datatype::pack(&t, n, inbuf as *const u8, &mut out[pos..], 0) };
    }
    Ok(pos + bytes)
}

/// MPI_Unpack(_c): unpacks `outcount` instances from position `pos` of `inbuf`
/// (`insize` bytes); returns the new position.
fn unpack_at(
    inbuf: *const c_void,
    insize: i64,
    pos: i64,
    outbuf: *mut c_void,
    outcount: i64,
    datatype: i32,
    comm: i32,
) -> MpiResult<usize> {
    check::comm(comm)?;
    let n = check::count(outcount, "outcount")?;
    let t = datatype::lookup_arg(datatype, "datatype")?;
    let bytes = packed_bytes(&t, n, outcount)?;
    let pos = window(pos, bytes, insize, "insize", "packed")?;
    check::check_base(outbuf, n, &check::datatype(datatype, "datatype")?, "outbuf")?;
    if check::is_in_place(inbuf) {
        return Err(err(MPI_ERR_BUFFER, "inbuf is MPI_IN_PLACE"));
    }
    if bytes > 0 {
        // SAFETY: `inbuf as *const u8`: passed on from the entry point,
        // valid as the MPI caller must pass it.
        let inp = unsafe { check::array(inbuf as *const u8, pos + bytes, "inbuf") }?;
        // SAFETY: outbuf (possibly MPI_BOTTOM with absolute displacements) has room for
        // `outcount` instances of `datatype` per the standard, and does not overlap inbuf.
        unsafe { datatype::unpack(&t, n, outbuf as *mut u8, &inp[pos..], 0) };
    }
    Ok(pos + bytes)
}

/// MPI_Pack_size(_c): the packed size of `incount` instances.
fn pack_size(incount: i64, datatype: i32, comm: i32) -> MpiResult<usize> {
    check::comm(comm)?;
    let n = check::count(incount, "incount")?;
    let t = datatype::lookup_arg(datatype, "datatype")?;
    packed_bytes(&t, n, incount)
}

/// A size or position for an int output argument (`what` says whose).
fn as_int(v: usize, what: &str) -> MpiResult<c_int> {
    c_int::try_from(v).map_err(|_| {
        err(
            MPI_ERR_COUNT,
            format!("{what}: {v} bytes do not fit in an int (the _c form takes an MPI_Count)"),
        )
    })
}

mpi_entry!(MPI_Pack, PMPI_Pack,
    (inbuf: *const c_void, incount: c_int, datatype: i32, outbuf: *mut c_void, outsize: c_int,
     position: *mut c_int, comm: i32), errcomm = comm, {
    let pos = check::inp(position, "position")?;
    let end = pack_at(inbuf, incount.into(), datatype, outbuf, outsize.into(), pos.into(), comm)?;
    check::out(position, end as c_int, "position")
});

mpi_entry!(MPI_Pack_c, PMPI_Pack_c,
    (inbuf: *const c_void, incount: i64, datatype: i32, outbuf: *mut c_void, outsize: i64,
     position: *mut i64, comm: i32), errcomm = comm, {
    let pos = check::inp(position, "position")?;
    let end = pack_at(inbuf, incount, datatype, outbuf, outsize, pos, comm)?;
    check::out(position, end as i64, "position")
});

mpi_entry!(MPI_Unpack, PMPI_Unpack,
    (inbuf: *const c_void, insize: c_int, position: *mut c_int, outbuf: *mut c_void,
     outcount: c_int, datatype: i32, comm: i32), errcomm = comm, {
    let pos = check::inp(position, "position")?;
    let end = unpack_at(inbuf, insize.into(), pos.into(), outbuf, outcount.into(), datatype, comm)?;
    check::out(position, end as c_int, "position")
});

mpi_entry!(MPI_Unpack_c, PMPI_Unpack_c,
    (inbuf: *const c_void, insize: i64, position: *mut i64, outbuf: *mut c_void,
     outcount: i64, datatype: i32, comm: i32), errcomm = comm, {
    let pos = check::inp(position, "position")?;
    let end = unpack_at(inbuf, insize, pos, outbuf, outcount, datatype, comm)?;
    check::out(position, end as i64, "position")
});

mpi_entry!(MPI_Pack_size, PMPI_Pack_size,
    (incount: c_int, datatype: i32, comm: i32, size: *mut c_int), errcomm = comm, {
    let bytes = pack_size(incount.into(), datatype, comm)?;
    check::out(size, as_int(bytes, &format!("incount={incount}"))?, "size")
});

mpi_entry!(MPI_Pack_size_c, PMPI_Pack_size_c,
    (incount: i64, datatype: i32, comm: i32, size: *mut i64), errcomm = comm, {
    let bytes = pack_size(incount, datatype, comm)?;
    check::out(size, bytes as i64, "size")
});

// ---------------------------------------------------------------------------------------
// The external32 representation (MPI-2.2 section 13.5.2): see datatype/external.rs

fn external32(datarep: *const c_char) -> MpiResult<()> {
    if datarep.is_null() {
        return Err(err(MPI_ERR_ARG, "datarep is NULL"));
    }
    // SAFETY: a non-NULL datarep is a NUL-terminated string (standard).
    let rep = unsafe { std::ffi::CStr::from_ptr(datarep) };
    if rep.to_bytes() != b"external32" {
        return Err(err(
            MPI_ERR_ARG,
            format!(
                "datarep={:?}: the only representation is \"external32\"",
                rep.to_string_lossy()
            ),
        ));
    }
    Ok(())
}

/// MPI_Pack_external(_c): returns the new position.
fn pack_external_at(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: i64,
    datatype: i32,
    outbuf: *mut c_void,
    outsize: i64,
    pos: i64,
) -> MpiResult<usize> {
    crate::runtime::job()?;
    external32(datarep)?;
    let n = check::count(incount, "incount")?;
    let t = datatype::lookup_arg(datatype, "datatype")?;
    let ext = datatype::external::size(&t, n)?;
    let pos = window(pos, ext, outsize, "outsize", "external32")?;
    check::check_base(inbuf, n, &check::datatype(datatype, "datatype")?, "inbuf")?;
    if check::is_in_place(outbuf) {
        return Err(err(MPI_ERR_BUFFER, "outbuf is MPI_IN_PLACE"));
    }
    if ext > 0 {
        let mut native = vec![0u8; packed_bytes(&t, n, incount)?];
        // SAFETY: inbuf (possibly MPI_BOTTOM with absolute displacements) holds `incount`
        // instances of `datatype` per the standard.
        unsafe { datatype::pack(&t, n, inbuf as *const u8, &mut native, 0) };
        // SAFETY: `outbuf as *mut u8`: passed on from the entry point,
        // valid as the MPI caller must pass it.
        let out = unsafe { check::array_mut(outbuf as *mut u8, pos + ext, "outbuf") }?;
        datatype::external::to_external(&t, n, &native, &mut out[pos..])?;
    }
    Ok(pos + ext)
}

/// MPI_Unpack_external(_c): returns the new position.
fn unpack_external_at(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: i64,
    pos: i64,
    outbuf: *mut c_void,
    outcount: i64,
    datatype: i32,
) -> MpiResult<usize> {
    crate::runtime::job()?;
    external32(datarep)?;
    let n = check::count(outcount, "outcount")?;
    let t = datatype::lookup_arg(datatype, "datatype")?;
    let ext = datatype::external::size(&t, n)?;
    let pos = window(pos, ext, insize, "insize", "external32")?;
    check::check_base(outbuf, n, &check::datatype(datatype, "datatype")?, "outbuf")?;
    if check::is_in_place(inbuf) {
        return Err(err(MPI_ERR_BUFFER, "inbuf is MPI_IN_PLACE"));
    }
    if ext > 0 {
        // SAFETY: `inbuf as *const u8`: passed on from the entry point,
        // valid as the MPI caller must pass it.
        let inp = unsafe { check::array(inbuf as *const u8, pos + ext, "inbuf") }?;
        let mut native = vec![0u8; packed_bytes(&t, n, outcount)?];
        datatype::external::from_external(&t, n, &inp[pos..], &mut native)?;
        // SAFETY: outbuf (possibly MPI_BOTTOM with absolute displacements) has room for
        // `outcount` instances of `datatype` per the standard.
        unsafe { datatype::unpack(&t, n, outbuf as *mut u8, &native, 0) };
    }
    Ok(pos + ext)
}

/// MPI_Pack_external_size(_c).
fn pack_external_size(datarep: *const c_char, incount: i64, datatype: i32) -> MpiResult<usize> {
    crate::runtime::job()?;
    external32(datarep)?;
    let n = check::count(incount, "incount")?;
    let t = datatype::lookup_arg(datatype, "datatype")?;
    datatype::external::size(&t, n)
}

mpi_entry!(MPI_Pack_external, PMPI_Pack_external,
    (datarep: *const c_char, inbuf: *const c_void, incount: c_int, datatype: i32,
     outbuf: *mut c_void, outsize: Aint, position: *mut Aint), errcomm = MPI_COMM_WORLD, {
    let pos = check::inp(position, "position")? as i64;
    let end = pack_external_at(datarep, inbuf, incount.into(), datatype, outbuf, outsize as i64, pos)?;
    check::out(position, end as Aint, "position")
});

mpi_entry!(MPI_Pack_external_c, PMPI_Pack_external_c,
    (datarep: *const c_char, inbuf: *const c_void, incount: i64, datatype: i32,
     outbuf: *mut c_void, outsize: i64, position: *mut i64), errcomm = MPI_COMM_WORLD, {
    let pos = check::inp(position, "position")?;
    let end = pack_external_at(datarep, inbuf, incount, datatype, outbuf, outsize, pos)?;
    check::out(position, end as i64, "position")
});

mpi_entry!(MPI_Unpack_external, PMPI_Unpack_external,
    (datarep: *const c_char, inbuf: *const c_void, insize: Aint, position: *mut Aint,
     outbuf: *mut c_void, outcount: c_int, datatype: i32), errcomm = MPI_COMM_WORLD, {
    let pos = check::inp(position, "position")? as i64;
    let end = unpack_external_at(datarep, inbuf, insize as i64, pos, outbuf, outcount.into(), datatype)?;
    check::out(position, end as Aint, "position")
});

mpi_entry!(MPI_Unpack_external_c, PMPI_Unpack_external_c,
    (datarep: *const c_char, inbuf: *const c_void, insize: i64, position: *mut i64,
     outbuf: *mut c_void, outcount: i64, datatype: i32), errcomm = MPI_COMM_WORLD, {
    let pos = check::inp(position, "position")?;
    let end = unpack_external_at(datarep, inbuf, insize, pos, outbuf, outcount, datatype)?;
    check::out(position, end as i64, "position")
});

mpi_entry!(MPI_Pack_external_size, PMPI_Pack_external_size,
    (datarep: *const c_char, incount: c_int, datatype: i32, size: *mut Aint),
    errcomm = MPI_COMM_WORLD, {
    let ext = pack_external_size(datarep, incount.into(), datatype)?;
    check::out(size, ext as Aint, "size")
});

mpi_entry!(MPI_Pack_external_size_c, PMPI_Pack_external_size_c,
    (datarep: *const c_char, incount: i64, datatype: i32, size: *mut i64),
    errcomm = MPI_COMM_WORLD, {
    let ext = pack_external_size(datarep, incount, datatype)?;
    check::out(size, ext as i64, "size")
});

// ---------------------------------------------------------------------------------------
// Elements of a received message

mpi_entry!(MPI_Get_elements_x, PMPI_Get_elements_x,
    (status: *const CStatus, datatype: i32, count: *mut i64), errcomm = MPI_COMM_WORLD, {
    let st = check::inp(status, "status")?;
    let t = derived::get_signature(datatype, "datatype")?;
    let n = datatype::get_elements(&t, st.count_bytes())
        .map_or(MPI_UNDEFINED as i64, |n| n as i64);
    check::out(count, n, "count")
});

// ---------------------------------------------------------------------------------------
// MPI-4 large-count (`_c`) forms: MPI_Count results.

mpi_entry!(MPI_Type_size_c, PMPI_Type_size_c, (datatype: i32, size: *mut i64),
    errcomm = MPI_COMM_WORLD, {
    let s = any_type(datatype)?.size();
    check::out(size, s as i64, "size")
});

mpi_entry!(MPI_Type_get_extent_c, PMPI_Type_get_extent_c,
    (datatype: i32, lb: *mut i64, extent: *mut i64), errcomm = MPI_COMM_WORLD, {
    extent_of(datatype, lb as *mut Aint, extent as *mut Aint, false)
});

mpi_entry!(MPI_Type_get_true_extent_c, PMPI_Type_get_true_extent_c,
    (datatype: i32, true_lb: *mut i64, true_extent: *mut i64), errcomm = MPI_COMM_WORLD, {
    extent_of(datatype, true_lb as *mut Aint, true_extent as *mut Aint, true)
});

mpi_entry!(MPI_Get_elements_c, PMPI_Get_elements_c,
    (status: *const CStatus, datatype: i32, count: *mut i64), errcomm = MPI_COMM_WORLD, {
    let st = check::inp(status, "status")?;
    let t = derived::get_signature(datatype, "datatype")?;
    let n = datatype::get_elements(&t, st.count_bytes())
        .map_or(MPI_UNDEFINED as i64, |n| n as i64);
    check::out(count, n, "count")
});

mpi_entry!(MPI_Get_count_c, PMPI_Get_count_c,
    (status: *const CStatus, datatype: i32, count: *mut i64), errcomm = MPI_COMM_WORLD, {
    let st = check::inp(status, "status")?;
    let t = derived::get_signature(datatype, "datatype")?;
    let bytes = st.count_bytes();
    let size = t.size() as u64;
    let n = if size == 0 {
        if bytes == 0 { 0 } else { MPI_UNDEFINED as i64 }
    } else if bytes % size != 0 {
        MPI_UNDEFINED as i64
    } else {
        (bytes / size) as i64
    };
    check::out(count, n, "count")
});
