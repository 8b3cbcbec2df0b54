//! Neighbourhood collectives at the C boundary (the engine: coll/neighbor.rs):
//! MPI_Neighbor_allgather(v), MPI_Neighbor_alltoall(v, w), their nonblocking forms, their
//! MPI-4 persistent forms (`..._init`: each MPI_Start posts the exchange as the
//! nonblocking call does) and their large-count forms (`_c`).
use super::coll_move::{v, w};
use crate::abi::*;
use crate::coll::neighbor::{self, Exchange};
use crate::error::{err, MpiResult};
use crate::ffi::c::p2p::req_handle;
use crate::ffi::check;
use std::os::raw::{c_int, c_void};

type Aint = isize;

/// The nonblocking call: the request of the posted exchange.
fn start(name: &'static str, x: Exchange, request: *mut i32) -> MpiResult<()> {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let id = neighbor::start(name, x)?;
    // SAFETY: `request`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(request, req_handle(id), "request") }
}

/// The persistent call: checks the arguments now (`make` builds the exchange), and at
/// each MPI_Start posts the exchange `make` builds then, with the datatypes and the
/// communicator the first call looked up (crate::pin), whatever the program freed since.
fn init(
    name: &'static str,
    make: impl Fn(i32) -> MpiResult<Exchange> + Send + Sync + 'static,
    comm: i32,
    info: i32,
    request: *mut i32,
) -> MpiResult<()> {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    crate::ffi::c::info::check_arg(info, "info")?;
    let h = crate::ffi::c::persist::create(name, comm, make, move |x| neighbor::start(name, x))?;
    // SAFETY: `request`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(request, h, "request") }
}

/// The blocking, the nonblocking and the persistent entry point of one neighbourhood
/// collective, in its `int` form and its `_c` form (`Count` and `Disp` in the argument
/// list are `int`, or MPI_Count and MPI_Aint), all taking the arguments `$a` (then
/// `$comm`, and a request for the nonblocking one, info and a request for the persistent
/// one) to the exchange `$form` makes of them.
macro_rules! neighbor_entries {
    ($mod:ident, [$($n:ident)*], [$($nc:ident)*], $args:tt, $comm:ident => $form:expr) => {
        pub use $mod::*;
        mod $mod {
            use super::*;
            neighbor_entries!(@one c_int, [$($n)*], $args, $comm => $form);
            const _: () = {
                neighbor_entries!(@one i64, [$($nc)*], $args, $comm => $form);
            };
        }
    };
    (@one $count:ty, [$mpi:ident $pmpi:ident $impi:ident $ipmpi:ident $init:ident $pinit:ident],
        ($($a:ident : $t:ty),*), $comm:ident => $form:expr) => {
        #[allow(dead_code)]
        type Count = $count;
        #[allow(dead_code)]
        type Disp = $count;
        // (`.into()` widens an `int` count; a `_c` one is i64 already)
        #[allow(clippy::useless_conversion)]
        fn form($($a: $t,)* $comm: i32) -> MpiResult<Exchange> {
            // SAFETY: the entry point's buffers, valid as the MPI caller must pass them.
            unsafe { $form }
        }
        crate::mpi_entry!($mpi, $pmpi, ($($a: $t,)* $comm: i32), errcomm = $comm, {
            neighbor::run(stringify!($mpi), form($($a,)* $comm)?)
        });
        crate::mpi_entry!($impi, $ipmpi, ($($a: $t,)* $comm: i32, request: *mut i32), errcomm = $comm, {
            start(stringify!($impi), form($($a,)* $comm)?, request)
        });
        crate::mpi_entry!($init, $pinit, ($($a: $t,)* $comm: i32, info: i32, request: *mut i32), errcomm = $comm, {
            let args = crate::ffi::c::persist::Captured(($($a,)*));
            init(stringify!($init), move |on: i32| {
                let ($($a,)*) = args.get();
                form($($a,)* on)
            }, $comm, info, request)
        });
    };
}

neighbor_entries!(allgather, [MPI_Neighbor_allgather PMPI_Neighbor_allgather MPI_Ineighbor_allgather PMPI_Ineighbor_allgather MPI_Neighbor_allgather_init PMPI_Neighbor_allgather_init], [MPI_Neighbor_allgather_c PMPI_Neighbor_allgather_c MPI_Ineighbor_allgather_c PMPI_Ineighbor_allgather_c MPI_Neighbor_allgather_init_c PMPI_Neighbor_allgather_init_c],
    (sendbuf: *const c_void, sendcount: Count, sendtype: i32, recvbuf: *mut c_void, recvcount: Count, recvtype: i32), comm => neighbor::exchange(&check::comm(comm)?, sendbuf, neighbor::uniform(sendcount.into(), sendtype, "send", false), recvbuf, neighbor::uniform(recvcount.into(), recvtype, "recv", true)));
neighbor_entries!(allgatherv, [MPI_Neighbor_allgatherv PMPI_Neighbor_allgatherv MPI_Ineighbor_allgatherv PMPI_Ineighbor_allgatherv MPI_Neighbor_allgatherv_init PMPI_Neighbor_allgatherv_init], [MPI_Neighbor_allgatherv_c PMPI_Neighbor_allgatherv_c MPI_Ineighbor_allgatherv_c PMPI_Ineighbor_allgatherv_c MPI_Neighbor_allgatherv_init_c PMPI_Neighbor_allgatherv_init_c],
    (sendbuf: *const c_void, sendcount: Count, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: i32), comm => neighbor::exchange(&check::comm(comm)?, sendbuf, neighbor::uniform(sendcount.into(), sendtype, "send", false), recvbuf, neighbor::varying(recvtype, "recv", v(recvcounts, displs, ["recvcounts", "displs"]))));
neighbor_entries!(alltoall, [MPI_Neighbor_alltoall PMPI_Neighbor_alltoall MPI_Ineighbor_alltoall PMPI_Ineighbor_alltoall MPI_Neighbor_alltoall_init PMPI_Neighbor_alltoall_init], [MPI_Neighbor_alltoall_c PMPI_Neighbor_alltoall_c MPI_Ineighbor_alltoall_c PMPI_Ineighbor_alltoall_c MPI_Neighbor_alltoall_init_c PMPI_Neighbor_alltoall_init_c],
    (sendbuf: *const c_void, sendcount: Count, sendtype: i32, recvbuf: *mut c_void, recvcount: Count, recvtype: i32), comm => neighbor::exchange(&check::comm(comm)?, sendbuf, neighbor::uniform(sendcount.into(), sendtype, "send", true), recvbuf, neighbor::uniform(recvcount.into(), recvtype, "recv", true)));
neighbor_entries!(alltoallv, [MPI_Neighbor_alltoallv PMPI_Neighbor_alltoallv MPI_Ineighbor_alltoallv PMPI_Ineighbor_alltoallv MPI_Neighbor_alltoallv_init PMPI_Neighbor_alltoallv_init], [MPI_Neighbor_alltoallv_c PMPI_Neighbor_alltoallv_c MPI_Ineighbor_alltoallv_c PMPI_Ineighbor_alltoallv_c MPI_Neighbor_alltoallv_init_c PMPI_Neighbor_alltoallv_init_c],
    (sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: i32), comm => neighbor::exchange(&check::comm(comm)?, sendbuf, neighbor::varying(sendtype, "send", v(sendcounts, sdispls, ["sendcounts", "sdispls"])), recvbuf, neighbor::varying(recvtype, "recv", v(recvcounts, rdispls, ["recvcounts", "rdispls"]))));
neighbor_entries!(alltoallw, [MPI_Neighbor_alltoallw PMPI_Neighbor_alltoallw MPI_Ineighbor_alltoallw PMPI_Ineighbor_alltoallw MPI_Neighbor_alltoallw_init PMPI_Neighbor_alltoallw_init], [MPI_Neighbor_alltoallw_c PMPI_Neighbor_alltoallw_c MPI_Ineighbor_alltoallw_c PMPI_Ineighbor_alltoallw_c MPI_Neighbor_alltoallw_init_c PMPI_Neighbor_alltoallw_init_c],
    (sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Aint, sendtypes: *const i32, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Aint, recvtypes: *const i32), comm => neighbor::exchange(&check::comm(comm)?, sendbuf, neighbor::typed("send", w(sendcounts, sdispls, sendtypes, "send")), recvbuf, neighbor::typed("recv", w(recvcounts, rdispls, recvtypes, "recv"))));
