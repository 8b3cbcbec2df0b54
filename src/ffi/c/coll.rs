//! Collective entry points: validate, convert, call the engine in coll/.
//!
//! Every collective is written once as a *plan*: the arguments are checked and staged
//! synchronously (so argument errors come back from the call itself), and the rest is
//! an owned `async` body. [`coll_entry!`] makes from one plan both the blocking call
//! (`MPI_Allreduce`: the body runs to completion in place) and its nonblocking twin
//! (`MPI_Iallreduce`: the body becomes the request, polled by the progress engine).
use crate::abi::*;
use crate::coll::front::{self, Now, Shape};
use crate::error::{err, MpiResult};
use crate::ffi::check::{self, CInt};
use std::os::raw::{c_int, c_void};

pub use crate::coll::plan::{
    intra, move_desc, run_plan, start_plan_id, with_desc, with_flows, Plan,
};

type In = *const c_void;
type Out = *mut c_void;

/// Starts a plan as a nonblocking collective and returns its request handle.
pub fn start_plan(name: &'static str, p: Plan, request: *mut i32) -> MpiResult<()> {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let id = start_plan_id(name, p)?;
    // SAFETY: `request`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(request, super::p2p::req_handle(id), "request") }
}

/// Creates a persistent collective request (MPI_*_init) running `make`'s plan at each
/// MPI_Start.
pub fn init_plan(
    name: &'static str,
    comm: i32,
    info: i32,
    make: impl Fn(i32) -> Plan + Send + Sync + 'static,
    request: *mut i32,
) -> MpiResult<()> {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    super::info::check_arg(info, "info")?;
    let h = super::persist::create(name, comm, make, move |p| start_plan_id(name, Ok(p)))?;
    // SAFETY: `request`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(request, h, "request") }
}

/// Exports a blocking collective and its nonblocking twin from one plan function taking
/// the blocking call's arguments. With `now = f`, the blocking call first tries
/// `f(args)`, which returns `None` when its fast path does not apply (nothing has
/// happened: the full path runs, and reports any wrong argument).
#[macro_export]
macro_rules! coll_entry {
    ($mpi:ident, $pmpi:ident, $impi:ident, $ipmpi:ident, $init:ident, $pinit:ident, $plan:path, $ec:ident, now = $now:path, ($($a:ident : $t:ty),* $(,)?)) => {
        $crate::mpi_entry!($mpi, $pmpi, ($($a: $t),*), errcomm = $ec, {
            match $now($($a),*) {
                Some(r) => r,
                None => $crate::ffi::c::coll::run_plan($plan($($a),*)),
            }
        });
        $crate::coll_entry!(@rest $impi, $ipmpi, $init, $pinit, $plan, $ec, ($($a: $t),*));
    };
    ($mpi:ident, $pmpi:ident, $impi:ident, $ipmpi:ident, $init:ident, $pinit:ident, $plan:path, $ec:ident, ($($a:ident : $t:ty),* $(,)?)) => {
        $crate::mpi_entry!($mpi, $pmpi, ($($a: $t),*), errcomm = $ec, {
            $crate::ffi::c::coll::run_plan($plan($($a),*))
        });
        $crate::coll_entry!(@rest $impi, $ipmpi, $init, $pinit, $plan, $ec, ($($a: $t),*));
    };
    (@rest $impi:ident, $ipmpi:ident, $init:ident, $pinit:ident, $plan:path, $ec:ident, ($($a:ident : $t:ty),* $(,)?)) => {
        $crate::mpi_entry!($impi, $ipmpi, ($($a: $t,)* request: *mut i32), errcomm = $ec, {
            $crate::ffi::c::coll::start_plan(stringify!($impi), $plan($($a),*), request)
        });
        $crate::mpi_entry!($init, $pinit, ($($a: $t,)* info: i32, request: *mut i32), errcomm = $ec, {
            let args = $crate::ffi::c::persist::Captured(($($a,)*));
            let make = move |on: i32| {
                // Bind the wrapper as a whole, so the closure captures it (not the raw
                // tuple inside) and stays Send.
                let whole = &args;
                let ($($a,)*) = whole.0;
                // (the communicator to plan on: the program's at the _init call, the
                // request's own context at every start)
                let $ec = {
                    let _ = $ec;
                    on
                };
                $plan($($a),*)
            };
            $crate::ffi::c::coll::init_plan(stringify!($init), $ec, info, make, request)
        });
    };
}

fn barrier(comm: i32) -> Plan {
    front::barrier(&check::comm(comm)?)
}

fn barrier_now(comm: i32) -> Now {
    front::barrier_now(&front::comm_now(comm)?)
}

coll_entry!(MPI_Barrier, PMPI_Barrier, MPI_Ibarrier, PMPI_Ibarrier, MPI_Barrier_init, PMPI_Barrier_init, barrier, comm, now = barrier_now, (comm: i32));

// ---------------------------------------------------------------- reductions
//
// Each with its blocking fast path (`*_now`): a count it cannot take (negative) or a
// communicator that does not resolve leaves the call to the full path.

/// MPI_Allreduce, or (`BLOCK`) MPI_Reduce_scatter_block.
fn all<const BLOCK: bool>(sb: In, rb: Out, n: impl CInt, dt: i32, op: i32, comm: i32) -> Plan {
    let arg = if BLOCK { "recvcount" } else { "count" };
    let (c, n) = (check::comm(comm)?, check::count(n, arg)?);
    // SAFETY: the buffers: passed on from the entry point, valid as the MPI caller must pass them.
    unsafe { front::reduce(&c, sb, rb, Shape::all(n, BLOCK), dt, op) }
}

fn all_now<const BLOCK: bool>(sb: In, rb: Out, n: impl CInt, dt: i32, op: i32, comm: i32) -> Now {
    let (c, n) = (front::comm_now(comm)?, usize::try_from(n.into()).ok()?);
    // SAFETY: as in `all`.
    unsafe { front::reduce_now(&c, sb, rb, Shape::all(n, BLOCK), dt, op) }
}

fn reduce(sb: In, rb: Out, n: impl CInt, dt: i32, op: i32, root: c_int, comm: i32) -> Plan {
    let (c, n) = (check::comm(comm)?, check::count(n, "count")?);
    // SAFETY: as in `all`.
    unsafe { front::reduce(&c, sb, rb, Shape::root(n, root), dt, op) }
}

fn reduce_now(sb: In, rb: Out, n: impl CInt, dt: i32, op: i32, root: c_int, comm: i32) -> Now {
    let (c, n) = (front::comm_now(comm)?, usize::try_from(n.into()).ok()?);
    // SAFETY: as in `all`.
    unsafe { front::reduce_now(&c, sb, rb, Shape::root(n, root), dt, op) }
}

fn reduce_scatter<C: CInt>(sb: In, rb: Out, counts: *const C, dt: i32, op: i32, comm: i32) -> Plan {
    let c = check::comm(comm)?;
    // SAFETY: `counts`: passed on from the entry point, valid as the MPI caller must pass it.
    let counts = unsafe { check::plan_array(counts, c.size(), "recvcounts") }?;
    let counts = check::counts(&counts, "recvcounts")?;
    // SAFETY: as in `all`.
    unsafe { front::reduce(&c, sb, rb, Shape::Counts(&counts), dt, op) }
}

fn reduce_scatter_now<C>(sb: In, rb: Out, counts: *const C, dt: i32, op: i32, comm: i32) -> Now
where
    C: CInt + TryInto<usize>,
{
    let c = front::comm_now(comm)?;
    // SAFETY: `counts`: passed on from the entry point, valid as the MPI caller must pass it.
    let counts = unsafe { check::array(counts, c.size(), "recvcounts") }.ok()?;
    // SAFETY: as in `all`.
    unsafe { front::reduce_now(&c, sb, rb, Shape::Counts(counts), dt, op) }
}

/// MPI_Scan, or (`EX`) MPI_Exscan.
fn scan<const EX: bool>(sb: In, rb: Out, n: impl CInt, dt: i32, op: i32, comm: i32) -> Plan {
    let (c, n) = (intra(comm)?, check::count(n, "count")?);
    // SAFETY: as in `all`.
    unsafe { front::reduce(&c, sb, rb, Shape::scan(n, EX), dt, op) }
}

coll_entry!(MPI_Allreduce, PMPI_Allreduce, MPI_Iallreduce, PMPI_Iallreduce, MPI_Allreduce_init, PMPI_Allreduce_init, all::<false>, comm, now = all_now::<false>,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, comm: i32));
coll_entry!(MPI_Reduce, PMPI_Reduce, MPI_Ireduce, PMPI_Ireduce, MPI_Reduce_init, PMPI_Reduce_init, reduce, comm, now = reduce_now,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, root: c_int, comm: i32));
coll_entry!(MPI_Reduce_scatter_block, PMPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, PMPI_Ireduce_scatter_block, MPI_Reduce_scatter_block_init, PMPI_Reduce_scatter_block_init, all::<true>, comm, now = all_now::<true>,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: i32, op: i32, comm: i32));
coll_entry!(MPI_Reduce_scatter, PMPI_Reduce_scatter, MPI_Ireduce_scatter, PMPI_Ireduce_scatter, MPI_Reduce_scatter_init, PMPI_Reduce_scatter_init, reduce_scatter, comm, now = reduce_scatter_now,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: i32, op: i32, comm: i32));
coll_entry!(MPI_Scan, PMPI_Scan, MPI_Iscan, PMPI_Iscan, MPI_Scan_init, PMPI_Scan_init, scan::<false>, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, comm: i32));
coll_entry!(MPI_Exscan, PMPI_Exscan, MPI_Iexscan, PMPI_Iexscan, MPI_Exscan_init, PMPI_Exscan_init, scan::<true>, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: i32, op: i32, comm: i32));

// ---------------------------------------------------------------- MPI-4 large counts
//
// The same plans with MPI_Count counts (`_c`), in blocking, nonblocking and persistent
// forms: vectors past 2^31 elements.

coll_entry!(MPI_Allreduce_c, PMPI_Allreduce_c, MPI_Iallreduce_c, PMPI_Iallreduce_c, MPI_Allreduce_init_c, PMPI_Allreduce_init_c, all::<false>, comm, now = all_now::<false>,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: i32, op: i32, comm: i32));
coll_entry!(MPI_Reduce_c, PMPI_Reduce_c, MPI_Ireduce_c, PMPI_Ireduce_c, MPI_Reduce_init_c, PMPI_Reduce_init_c, reduce, comm, now = reduce_now,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: i32, op: i32, root: c_int, comm: i32));
coll_entry!(MPI_Reduce_scatter_block_c, PMPI_Reduce_scatter_block_c, MPI_Ireduce_scatter_block_c, PMPI_Ireduce_scatter_block_c, MPI_Reduce_scatter_block_init_c, PMPI_Reduce_scatter_block_init_c, all::<true>, comm, now = all_now::<true>,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: i64, datatype: i32, op: i32, comm: i32));
coll_entry!(MPI_Reduce_scatter_c, PMPI_Reduce_scatter_c, MPI_Ireduce_scatter_c, PMPI_Ireduce_scatter_c, MPI_Reduce_scatter_init_c, PMPI_Reduce_scatter_init_c, reduce_scatter, comm, now = reduce_scatter_now,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const i64, datatype: i32, op: i32, comm: i32));
coll_entry!(MPI_Scan_c, PMPI_Scan_c, MPI_Iscan_c, PMPI_Iscan_c, MPI_Scan_init_c, PMPI_Scan_init_c, scan::<false>, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: i32, op: i32, comm: i32));
coll_entry!(MPI_Exscan_c, PMPI_Exscan_c, MPI_Iexscan_c, PMPI_Iexscan_c, MPI_Exscan_init_c, PMPI_Exscan_init_c, scan::<true>, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: i32, op: i32, comm: i32));
