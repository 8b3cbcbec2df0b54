//! Communicator entry points.
use crate::abi::*;
use crate::error::err;
use crate::ffi::check;
use crate::mpi_entry;
use std::os::raw::{c_char, c_int};

mpi_entry!(MPI_Comm_size, PMPI_Comm_size, (comm: i32, size: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    check::out(size, c.size() as c_int, "size")
});

mpi_entry!(MPI_Comm_rank, PMPI_Comm_rank, (comm: i32, rank: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    check::out(rank, c.rank as c_int, "rank")
});

mpi_entry!(MPI_Comm_remote_size, PMPI_Comm_remote_size, (comm: i32, size: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    match &c.remote {
        Some(r) => check::out(size, r.len() as c_int, "size"),
        None => Err(err(MPI_ERR_COMM, "comm is an intracommunicator (MPI_Comm_remote_size needs an intercommunicator)")),
    }
});

mpi_entry!(MPI_Comm_test_inter, PMPI_Comm_test_inter, (comm: i32, flag: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    check::out(flag, c.is_inter() as c_int, "flag")
});

mpi_entry!(MPI_Comm_set_name, PMPI_Comm_set_name, (comm: i32, comm_name: *const c_char), errcomm = comm, {
    let c = check::comm(comm)?;
    c.set_name(&super::info::c_str(comm_name, "comm_name")?);
    Ok(())
});

mpi_entry!(MPI_Comm_get_name, PMPI_Comm_get_name, (comm: i32, comm_name: *mut c_char, resultlen: *mut c_int), errcomm = comm, {
    let c = check::comm(comm)?;
    let name = c.name.lock().unwrap().clone();
    let n = check::c_string(comm_name, MPI_MAX_OBJECT_NAME as usize, &name, "comm_name")?;
    check::out(resultlen, n, "resultlen")
});

// ---------------------------------------------------------------- creation

use crate::attr;
use crate::comm::group;
use crate::create;
use std::os::raw::c_void;

fn put_comm(
    out: *mut i32,
    c: Option<std::sync::Arc<crate::comm::Comm>>,
) -> crate::error::MpiResult<()> {
    // SAFETY: `out`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(out, c.map_or(MPI_COMM_NULL, |c| c.handle), "newcomm") }
}

mpi_entry!(MPI_Comm_dup, PMPI_Comm_dup, (comm: i32, newcomm: *mut i32), errcomm = comm, {
    let c = check::comm(comm)?;
    check::not_null(newcomm, "newcomm")?;
    put_comm(newcomm, Some(dup_or_null(&c, newcomm)?))
});

/// MPI_Comm_idup(_with_info): newcomm is written when the duplicate is made.
fn idup(
    name: &'static str,
    c: &std::sync::Arc<crate::comm::Comm>,
    check_args: Option<bool>,
    newcomm: *mut i32,
    request: *mut i32,
) -> crate::error::MpiResult<()> {
    check::not_null(newcomm, "newcomm")?;
    check::not_null(request, "request")?;
    let out = super::persist::Captured(newcomm);
    // SAFETY: the program keeps newcomm valid until the request completes (MPI-3.1
    // section 6.4.2: it may not be used before).
    let id = create::idup(c, check_args, name, move |h| unsafe { out.get().write(h) })?;
    // SAFETY: `request`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(request, super::p2p::req_handle(id), "request") }
}

mpi_entry!(MPI_Comm_idup, PMPI_Comm_idup, (comm: i32, newcomm: *mut i32, request: *mut i32), errcomm = comm, {
    idup("MPI_Comm_idup", &check::comm(comm)?, None, newcomm, request)
});

mpi_entry!(MPI_Comm_idup_with_info, PMPI_Comm_idup_with_info, (comm: i32, info: i32, newcomm: *mut i32, request: *mut i32), errcomm = comm, {
    let c = check::comm(comm)?;
    // As MPI_Comm_dup_with_info: the duplicate takes the info's hints, not the parent's.
    let hint = create::check_args_hint(info)?.unwrap_or(true);
    idup("MPI_Comm_idup_with_info", &c, Some(hint), newcomm, request)
});

/// MPI_Comm_dup's result; on failure (an attribute copy callback failed) newcomm is
/// MPI_COMM_NULL, as programs check.
fn dup_or_null(
    c: &std::sync::Arc<crate::comm::Comm>,
    newcomm: *mut i32,
) -> crate::error::MpiResult<std::sync::Arc<crate::comm::Comm>> {
    create::dup(c).inspect_err(|_| {
        let _ = put_comm(newcomm, None);
    })
}

mpi_entry!(MPI_Comm_dup_with_info, PMPI_Comm_dup_with_info, (comm: i32, info: i32, newcomm: *mut i32), errcomm = comm, {
    let c = check::comm(comm)?;
    let check_args = create::check_args_hint(info)?.unwrap_or(true);
    check::not_null(newcomm, "newcomm")?;
    let d = dup_or_null(&c, newcomm)?;
    d.coll.check_args.store(check_args, std::sync::atomic::Ordering::Relaxed);
    put_comm(newcomm, Some(d))
});

mpi_entry!(MPI_Comm_set_info, PMPI_Comm_set_info, (comm: i32, info: i32), errcomm = comm, {
    create::set_info(&*check::comm(comm)?, info)
});

mpi_entry!(MPI_Comm_get_info, PMPI_Comm_get_info, (comm: i32, info_used: *mut i32), errcomm = comm, {
    check::out(info_used, create::info_of(&*check::comm(comm)?), "info_used")
});

mpi_entry!(MPI_Comm_split, PMPI_Comm_split, (comm: i32, color: c_int, key: c_int, newcomm: *mut i32), errcomm = comm, {
    let c = check::comm(comm)?;
    check::not_null(newcomm, "newcomm")?;
    put_comm(newcomm, create::split(&c, color, key)?)
});

mpi_entry!(MPI_Comm_split_type, PMPI_Comm_split_type, (comm: i32, split_type: c_int, key: c_int, info: i32, newcomm: *mut i32), errcomm = comm, {
    let c = check::comm(comm)?;
    super::info::check_arg(info, "info")?;
    check::not_null(newcomm, "newcomm")?;
    put_comm(newcomm, create::split_type(&c, split_type, key, info)?)
});

mpi_entry!(MPI_Comm_create, PMPI_Comm_create, (comm: i32, group: i32, newcomm: *mut i32), errcomm = comm, {
    let c = check::comm(comm)?;
    let g = group::get(group, "group")?;
    check::not_null(newcomm, "newcomm")?;
    put_comm(newcomm, create::create(&c, &g)?)
});

mpi_entry!(MPI_Comm_create_group, PMPI_Comm_create_group, (comm: i32, group: i32, tag: c_int, newcomm: *mut i32), errcomm = comm, {
    let c = check::comm(comm)?;
    let g = group::get(group, "group")?;
    check::send_tag(tag)?;
    check::not_null(newcomm, "newcomm")?;
    if c.is_inter() {
        return Err(err(MPI_ERR_COMM, "MPI_Comm_create_group needs an intracommunicator"));
    }
    put_comm(newcomm, create::create_group(&c, &g, tag)?)
});

fn free_comm(comm: *mut i32) -> crate::error::MpiResult<()> {
    crate::runtime::job()?;
    // SAFETY: `comm`: passed on from the entry point, valid as the MPI caller must pass it.
    let h = unsafe { check::inp(comm, "comm") }?;
    create::free(h)?;
    // SAFETY: `comm`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(comm, MPI_COMM_NULL, "comm") }
}

mpi_entry!(MPI_Comm_free, PMPI_Comm_free, (comm: *mut i32), errcomm = MPI_COMM_WORLD, { free_comm(comm) });
mpi_entry!(MPI_Comm_disconnect, PMPI_Comm_disconnect, (comm: *mut i32), errcomm = MPI_COMM_WORLD, {
    // Collective: a barrier over the communicator (both groups of an intercommunicator),
    // then it is freed. Completing pending communication on it is the caller's duty.
    crate::runtime::job()?;
    let h = check::inp(comm, "comm")?;
    crate::spawn::disconnect(h)?;
    check::out(comm, MPI_COMM_NULL, "comm")
});

mpi_entry!(MPI_Comm_compare, PMPI_Comm_compare, (comm1: i32, comm2: i32, result: *mut c_int), errcomm = comm1, {
    let a = check::comm(comm1)?;
    let b = check::comm(comm2)?;
    check::out(result, create::compare(&a, &b), "result")
});

// ---------------------------------------------------------------- groups

mpi_entry!(MPI_Comm_group, PMPI_Comm_group, (comm: i32, group: *mut i32), errcomm = comm, {
    let c = check::comm(comm)?;
    check::out(group, group::register(group::Group { ranks: c.group.clone() }), "group")
});

mpi_entry!(MPI_Comm_remote_group, PMPI_Comm_remote_group, (comm: i32, group: *mut i32), errcomm = comm, {
    let c = check::comm(comm)?;
    match &c.remote {
        Some(r) => check::out(group, group::register(group::Group { ranks: r.clone() }), "group"),
        None => Err(err(MPI_ERR_COMM, "comm is an intracommunicator (MPI_Comm_remote_group needs an intercommunicator)")),
    }
});

mpi_entry!(MPI_Group_size, PMPI_Group_size, (group: i32, size: *mut c_int), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let g = group::get(group, "group")?;
    check::out(size, g.size() as c_int, "size")
});

mpi_entry!(MPI_Group_rank, PMPI_Group_rank, (group: i32, rank: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let j = crate::runtime::job()?;
    let g = group::get(group, "group")?;
    check::out(rank, g.rank_of_world(j.rank).map_or(MPI_UNDEFINED, |r| r as c_int), "rank")
});

fn new_group(out: *mut i32, g: group::Group) -> crate::error::MpiResult<()> {
    // SAFETY: `out`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(out, group::register(g), "newgroup") }
}

mpi_entry!(MPI_Group_incl, PMPI_Group_incl, (group: i32, n: c_int, ranks: *const c_int, newgroup: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let g = group::get(group, "group")?;
    let r = check::array(ranks, check::count(n, "n")?, "ranks")?;
    new_group(newgroup, group::incl(&g, r)?)
});

mpi_entry!(MPI_Group_excl, PMPI_Group_excl, (group: i32, n: c_int, ranks: *const c_int, newgroup: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let g = group::get(group, "group")?;
    let r = check::array(ranks, check::count(n, "n")?, "ranks")?;
    new_group(newgroup, group::excl(&g, r)?)
});

/// A group and the ranks its `n` (first, last, stride) triplets name.
fn ranges_of(
    group: i32,
    n: c_int,
    ranges: *const [c_int; 3],
) -> crate::error::MpiResult<(std::sync::Arc<group::Group>, Vec<c_int>)> {
    crate::runtime::job()?;
    let g = group::get(group, "group")?;
    // SAFETY: `ranges`: passed on from the entry point, valid as the MPI caller must pass it.
    let r = unsafe { check::array(ranges, check::count(n, "n")?, "ranges") }?;
    let ranks = group::expand_ranges(&g, r)?;
    Ok((g, ranks))
}

mpi_entry!(MPI_Group_range_incl, PMPI_Group_range_incl, (group: i32, n: c_int, ranges: *const [c_int; 3], newgroup: *mut i32), errcomm = MPI_COMM_WORLD, {
    let (g, ranks) = ranges_of(group, n, ranges)?;
    new_group(newgroup, group::incl(&g, &ranks)?)
});

mpi_entry!(MPI_Group_range_excl, PMPI_Group_range_excl, (group: i32, n: c_int, ranges: *const [c_int; 3], newgroup: *mut i32), errcomm = MPI_COMM_WORLD, {
    let (g, ranks) = ranges_of(group, n, ranges)?;
    new_group(newgroup, group::excl(&g, &ranks)?)
});

mpi_entry!(MPI_Group_union, PMPI_Group_union, (group1: i32, group2: i32, newgroup: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let (a, b) = (group::get(group1, "group1")?, group::get(group2, "group2")?);
    new_group(newgroup, group::union(&a, &b))
});

mpi_entry!(MPI_Group_intersection, PMPI_Group_intersection, (group1: i32, group2: i32, newgroup: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let (a, b) = (group::get(group1, "group1")?, group::get(group2, "group2")?);
    new_group(newgroup, group::intersection(&a, &b))
});

mpi_entry!(MPI_Group_difference, PMPI_Group_difference, (group1: i32, group2: i32, newgroup: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let (a, b) = (group::get(group1, "group1")?, group::get(group2, "group2")?);
    new_group(newgroup, group::difference(&a, &b))
});

mpi_entry!(MPI_Group_translate_ranks, PMPI_Group_translate_ranks, (group1: i32, n: c_int, ranks1: *const c_int, group2: i32, ranks2: *mut c_int), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let (a, b) = (group::get(group1, "group1")?, group::get(group2, "group2")?);
    let n = check::count(n, "n")?;
    let r1 = check::array(ranks1, n, "ranks1")?;
    let r2 = check::array_mut(ranks2, n, "ranks2")?;
    r2.copy_from_slice(&group::translate(&a, &b, r1)?);
    Ok(())
});

mpi_entry!(MPI_Group_compare, PMPI_Group_compare, (group1: i32, group2: i32, result: *mut c_int), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let (a, b) = (group::get(group1, "group1")?, group::get(group2, "group2")?);
    check::out(result, group::compare(&a, &b), "result")
});

mpi_entry!(MPI_Group_free, PMPI_Group_free, (group: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let h = check::inp(group, "group")?;
    group::free(h)?;
    check::out(group, MPI_GROUP_NULL, "group")
});

// ---------------------------------------------------------------- attributes

fn create_keyval(
    copy: Option<attr::CopyFn>,
    delete: Option<attr::DeleteFn>,
    keyval: *mut c_int,
    extra: *mut c_void,
    arg: &str,
) -> crate::error::MpiResult<()> {
    crate::runtime::job()?;
    // SAFETY: `keyval`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe {
        check::out(
            keyval,
            attr::create_keyval(attr::Kind::Comm, copy, delete, extra),
            arg,
        )
    }
}
mpi_entry!(MPI_Comm_create_keyval, PMPI_Comm_create_keyval, (copy_fn: Option<attr::CopyFn>, delete_fn: Option<attr::DeleteFn>, keyval: *mut c_int, extra_state: *mut c_void), errcomm = MPI_COMM_WORLD, {
    create_keyval(copy_fn, delete_fn, keyval, extra_state, "comm_keyval")
});
mpi_entry!(MPI_Keyval_create, PMPI_Keyval_create, (copy_fn: Option<attr::CopyFn>, delete_fn: Option<attr::DeleteFn>, keyval: *mut c_int, extra_state: *mut c_void), errcomm = MPI_COMM_WORLD, {
    create_keyval(copy_fn, delete_fn, keyval, extra_state, "keyval")
});

fn free_keyval(keyval: *mut c_int) -> crate::error::MpiResult<()> {
    crate::runtime::job()?;
    // SAFETY: `keyval`: passed on from the entry point, valid as the MPI caller must pass it.
    let k = unsafe { check::inp(keyval, "keyval") }?;
    attr::free_keyval(k, attr::Kind::Comm)?;
    // SAFETY: `keyval`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(keyval, MPI_KEYVAL_INVALID, "keyval") }
}
mpi_entry!(MPI_Comm_free_keyval, PMPI_Comm_free_keyval, (keyval: *mut c_int), errcomm = MPI_COMM_WORLD, { free_keyval(keyval) });
mpi_entry!(MPI_Keyval_free, PMPI_Keyval_free, (keyval: *mut c_int), errcomm = MPI_COMM_WORLD, { free_keyval(keyval) });

/// Called by the Fortran binding around the C attribute calls it makes for
/// MPI_COMM_SET_ATTR / MPI_TYPE_SET_ATTR / MPI_ATTR_PUT and their GET forms (`on` 1
/// before, 0 after): values set then are Fortran integers, values read are given in
/// Fortran's form (comm/attr.rs `Value`). Not part of the MPI API.
#[no_mangle]
pub extern "C" fn shmpi_attr_fortran(on: c_int) {
    attr::fortran_calls(on != 0);
}

mpi_entry!(MPI_Comm_set_attr, PMPI_Comm_set_attr, (comm: i32, comm_keyval: c_int, attribute_val: *mut c_void), errcomm = comm, {
    attr::set(&check::comm(comm)?, comm_keyval, attribute_val as usize)
});
mpi_entry!(MPI_Attr_put, PMPI_Attr_put, (comm: i32, keyval: c_int, attribute_val: *mut c_void), errcomm = comm, {
    attr::set(&check::comm(comm)?, keyval, attribute_val as usize)
});
mpi_entry!(MPI_Comm_delete_attr, PMPI_Comm_delete_attr, (comm: i32, comm_keyval: c_int), errcomm = comm, {
    attr::delete(&check::comm(comm)?, comm_keyval)
});
mpi_entry!(MPI_Attr_delete, PMPI_Attr_delete, (comm: i32, keyval: c_int), errcomm = comm, {
    attr::delete(&check::comm(comm)?, keyval)
});

// ---------------------------------------------------------------- intercommunicators

mpi_entry!(MPI_Intercomm_create, PMPI_Intercomm_create, (local_comm: i32, local_leader: c_int, peer_comm: i32, remote_leader: c_int, tag: c_int, newintercomm: *mut i32), errcomm = local_comm, {
    let local = check::comm(local_comm)?;
    let leader = check::root(local_leader, &local).map_err(|_| err(MPI_ERR_RANK, format!("local_leader={local_leader} is not a rank of local_comm (size {})", local.size())))?;
    check::send_tag(tag)?;
    check::not_null(newintercomm, "newintercomm")?;
    // peer_comm is significant only at the local leader.
    let peer = if local.rank == leader { check::comm(peer_comm)? } else { local.clone() };
    let c = crate::create::inter::create(&local, leader, &peer, remote_leader, tag)?;
    check::out(newintercomm, c.handle, "newintercomm")
});

mpi_entry!(MPI_Intercomm_merge, PMPI_Intercomm_merge, (intercomm: i32, high: c_int, newintracomm: *mut i32), errcomm = intercomm, {
    let c = crate::create::inter::get_inter(check::comm(intercomm)?.handle)?;
    check::not_null(newintracomm, "newintracomm")?;
    let m = crate::create::inter::merge(&c, high != 0)?;
    check::out(newintracomm, m.handle, "newintracomm")
});

/// For the Fortran bindings: marks a key created from Fortran (`lang` 1: MPI-2
/// COMM_CREATE_KEYVAL, 2: MPI-1 KEYVAL_CREATE) so its callbacks get Fortran's calling
/// convention. Not part of the MPI API.
#[no_mangle]
pub extern "C" fn shmpi_keyval_set_fortran(keyval: c_int, lang: c_int) -> c_int {
    let l = if lang == 2 {
        attr::Lang::Fortran77
    } else {
        attr::Lang::Fortran
    };
    match attr::set_lang(keyval, l) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => e.class,
    }
}
