//! The data-movement collectives at the C boundary: MPI_Bcast, Gather(v), Scatter(v),
//! Allgather(v), Alltoall(v, w), on intra- and intercommunicators, each in its blocking,
//! nonblocking, persistent and large-count (`_c`) forms. The engine's front is
//! coll/bcast.rs and coll/moves.rs; here the per-peer arrays become slices.
use super::coll::Plan;
use crate::coll::moves::{self, VArrays, WArrays};
use crate::error::MpiResult;
use crate::ffi::check::{self, CInt};
use std::os::raw::{c_int, c_void};

/// Reads a v side's counts and displacements (the arguments `names`) for the `m` peers
/// the engine asks for.
pub(super) fn v<'a, C: CInt, D: CInt>(
    counts: *const C,
    displs: *const D,
    names: [&'static str; 2],
) -> impl FnOnce(usize) -> MpiResult<VArrays<'a, C, D>> {
    move |m| {
        // SAFETY: the entry point's arrays, valid for `m` elements as the MPI caller
        // must pass them.
        let c = unsafe { check::plan_array(counts, m, names[0]) }?;
        // SAFETY: as above.
        Ok((c, unsafe { check::plan_array(displs, m, names[1]) }?))
    }
}

/// Reads a w side's counts, displacements and datatypes (the arguments `{side}counts`,
/// `{side}displs`, `{side}types`) for the `m` peers the engine asks for.
pub(super) fn w<'a, C: CInt, D: Copy + Send + Sync + 'static>(
    counts: *const C,
    displs: *const D,
    types: *const i32,
    side: &'static str,
) -> impl FnOnce(usize) -> MpiResult<WArrays<'a, C, D>> {
    move |m| {
        // SAFETY: the entry point's arrays, valid for `m` elements as the MPI caller
        // must pass them.
        let c = unsafe { check::plan_array(counts, m, &format!("{side}counts")) }?;
        // SAFETY: as above.
        let d = unsafe { check::plan_array(displs, m, &format!("{side}displs")) }?;
        // SAFETY: as above.
        Ok((c, d, unsafe {
            check::plan_array(types, m, &format!("{side}types"))
        }?))
    }
}

/// One collective in its `int` form and its `_c` form (`Count` and `Disp` in the
/// argument list are `int`, or MPI_Count and MPI_Aint), each with its nonblocking and
/// persistent twins (`coll_entry!`), from one plan expression over the arguments (and
/// with `now =>`, the blocking call's fast path), in module `$mod` (re-exported here).
macro_rules! both {
    ($mod:ident, $ec:ident, [$($n:ident)*], [$($nc:ident)*], $args:tt => $plan:expr $(; now => $now:expr)?) => {
        pub use $mod::*;
        mod $mod {
            use super::*;
            both!(@one c_int, $ec, [$($n)*], $args, $args => $plan $(; now => $now)?);
            const _: () = {
                both!(@one i64, $ec, [$($nc)*], $args, $args => $plan $(; now => $now)?);
            };
        }
    };
    (@one $count:ty, $ec:ident, [$m:ident $pm:ident $i:ident $pi:ident $s:ident $ps:ident],
        $params:tt, ($($a:ident : $t:ty),*) => $plan:expr $(; $nk:ident => $now:expr)?) => {
        #[allow(dead_code)]
        type Count = $count;
        #[allow(dead_code)]
        type Disp = $count;
        // (`.into()` widens an `int` count; a `_c` one is i64 already)
        #[allow(clippy::useless_conversion)]
        fn plan($($a: $t),*) -> Plan {
            // SAFETY: the entry point's buffers, valid as the MPI caller must pass them.
            unsafe { $plan }
        }
        $(#[allow(clippy::useless_conversion)]
        fn now $params -> Option<MpiResult<()>> {
            // SAFETY: as for `plan`.
            unsafe { $now }
        })?
        crate::coll_entry!($m, $pm, $i, $pi, $s, $ps, plan, $ec, $($nk = now,)? ($($a: $t),*));
    };
}

both!(bcast, comm, [MPI_Bcast PMPI_Bcast MPI_Ibcast PMPI_Ibcast MPI_Bcast_init PMPI_Bcast_init], [MPI_Bcast_c PMPI_Bcast_c MPI_Ibcast_c PMPI_Ibcast_c MPI_Bcast_init_c PMPI_Bcast_init_c],
    (buffer: *mut c_void, count: Count, datatype: i32, root: c_int, comm: i32) => crate::coll::bcast::plan(&check::comm(comm)?, buffer, count.into(), datatype, root); now => crate::coll::bcast::now(buffer, count.into(), datatype, root, comm));
both!(gather, comm, [MPI_Gather PMPI_Gather MPI_Igather PMPI_Igather MPI_Gather_init PMPI_Gather_init], [MPI_Gather_c PMPI_Gather_c MPI_Igather_c PMPI_Igather_c MPI_Gather_init_c PMPI_Gather_init_c],
    (sendbuf: *const c_void, sendcount: Count, sendtype: i32, recvbuf: *mut c_void, recvcount: Count, recvtype: i32, root: c_int, comm: i32) => moves::gather(&check::comm(comm)?, "MPI_Gather", sendbuf, sendcount.into(), sendtype, recvbuf, moves::uniform(recvcount.into(), recvtype, "recv"), Some(root)));
both!(gatherv, comm, [MPI_Gatherv PMPI_Gatherv MPI_Igatherv PMPI_Igatherv MPI_Gatherv_init PMPI_Gatherv_init], [MPI_Gatherv_c PMPI_Gatherv_c MPI_Igatherv_c PMPI_Igatherv_c MPI_Gatherv_init_c PMPI_Gatherv_init_c],
    (sendbuf: *const c_void, sendcount: Count, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: i32, root: c_int, comm: i32) => moves::gather(&check::comm(comm)?, "MPI_Gatherv", sendbuf, sendcount.into(), sendtype, recvbuf, moves::varying(recvtype, "recv", v(recvcounts, displs, ["recvcounts", "displs"])), Some(root)));
both!(allgather, comm, [MPI_Allgather PMPI_Allgather MPI_Iallgather PMPI_Iallgather MPI_Allgather_init PMPI_Allgather_init], [MPI_Allgather_c PMPI_Allgather_c MPI_Iallgather_c PMPI_Iallgather_c MPI_Allgather_init_c PMPI_Allgather_init_c],
    (sendbuf: *const c_void, sendcount: Count, sendtype: i32, recvbuf: *mut c_void, recvcount: Count, recvtype: i32, comm: i32) => moves::gather(&check::comm(comm)?, "MPI_Allgather", sendbuf, sendcount.into(), sendtype, recvbuf, moves::uniform(recvcount.into(), recvtype, "recv"), None));
both!(allgatherv, comm, [MPI_Allgatherv PMPI_Allgatherv MPI_Iallgatherv PMPI_Iallgatherv MPI_Allgatherv_init PMPI_Allgatherv_init], [MPI_Allgatherv_c PMPI_Allgatherv_c MPI_Iallgatherv_c PMPI_Iallgatherv_c MPI_Allgatherv_init_c PMPI_Allgatherv_init_c],
    (sendbuf: *const c_void, sendcount: Count, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: i32, comm: i32) => moves::gather(&check::comm(comm)?, "MPI_Allgatherv", sendbuf, sendcount.into(), sendtype, recvbuf, moves::varying(recvtype, "recv", v(recvcounts, displs, ["recvcounts", "displs"])), None));
both!(scatter, comm, [MPI_Scatter PMPI_Scatter MPI_Iscatter PMPI_Iscatter MPI_Scatter_init PMPI_Scatter_init], [MPI_Scatter_c PMPI_Scatter_c MPI_Iscatter_c PMPI_Iscatter_c MPI_Scatter_init_c PMPI_Scatter_init_c],
    (sendbuf: *const c_void, sendcount: Count, sendtype: i32, recvbuf: *mut c_void, recvcount: Count, recvtype: i32, root: c_int, comm: i32) => moves::scatter(&check::comm(comm)?, "MPI_Scatter", sendbuf, moves::uniform(sendcount.into(), sendtype, "send"), recvbuf, recvcount.into(), recvtype, root));
both!(scatterv, comm, [MPI_Scatterv PMPI_Scatterv MPI_Iscatterv PMPI_Iscatterv MPI_Scatterv_init PMPI_Scatterv_init], [MPI_Scatterv_c PMPI_Scatterv_c MPI_Iscatterv_c PMPI_Iscatterv_c MPI_Scatterv_init_c PMPI_Scatterv_init_c],
    (sendbuf: *const c_void, sendcounts: *const Count, displs: *const Disp, sendtype: i32, recvbuf: *mut c_void, recvcount: Count, recvtype: i32, root: c_int, comm: i32) => moves::scatter(&check::comm(comm)?, "MPI_Scatterv", sendbuf, moves::varying(sendtype, "send", v(sendcounts, displs, ["sendcounts", "displs"])), recvbuf, recvcount.into(), recvtype, root));
both!(alltoall, comm, [MPI_Alltoall PMPI_Alltoall MPI_Ialltoall PMPI_Ialltoall MPI_Alltoall_init PMPI_Alltoall_init], [MPI_Alltoall_c PMPI_Alltoall_c MPI_Ialltoall_c PMPI_Ialltoall_c MPI_Alltoall_init_c PMPI_Alltoall_init_c],
    (sendbuf: *const c_void, sendcount: Count, sendtype: i32, recvbuf: *mut c_void, recvcount: Count, recvtype: i32, comm: i32) => moves::alltoall(&check::comm(comm)?, "MPI_Alltoall", sendbuf, moves::uniform(sendcount.into(), sendtype, "send"), recvbuf, moves::uniform(recvcount.into(), recvtype, "recv")));
both!(alltoallv, comm, [MPI_Alltoallv PMPI_Alltoallv MPI_Ialltoallv PMPI_Ialltoallv MPI_Alltoallv_init PMPI_Alltoallv_init], [MPI_Alltoallv_c PMPI_Alltoallv_c MPI_Ialltoallv_c PMPI_Ialltoallv_c MPI_Alltoallv_init_c PMPI_Alltoallv_init_c],
    (sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: i32, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: i32, comm: i32) => moves::alltoall(&check::comm(comm)?, "MPI_Alltoallv", sendbuf, moves::varying(sendtype, "send", v(sendcounts, sdispls, ["sendcounts", "displs"])), recvbuf, moves::varying(recvtype, "recv", v(recvcounts, rdispls, ["recvcounts", "displs"]))));
both!(alltoallw, comm, [MPI_Alltoallw PMPI_Alltoallw MPI_Ialltoallw PMPI_Ialltoallw MPI_Alltoallw_init PMPI_Alltoallw_init], [MPI_Alltoallw_c PMPI_Alltoallw_c MPI_Ialltoallw_c PMPI_Ialltoallw_c MPI_Alltoallw_init_c PMPI_Alltoallw_init_c],
    (sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtypes: *const i32, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtypes: *const i32, comm: i32) => moves::alltoall(&check::comm(comm)?, "MPI_Alltoallw", sendbuf, moves::typed("send", w(sendcounts, sdispls, sendtypes, "send")), recvbuf, moves::typed("recv", w(recvcounts, rdispls, recvtypes, "recv"))));
