//! rsmpi (the `mpi` crate) on shmpi: the reduction family with checked results.
//! Run under mpiexec at any process count; exits non-zero on the first wrong value.
use mpi::collective::{SystemOperation, UserOperation};
use mpi::datatype::{DynBuffer, DynBufferMut};
use mpi::traits::*;

fn check(ok: bool, rank: i32, what: &str) {
    if !ok {
        eprintln!("rank {rank}: FAIL {what}");
        std::process::exit(1);
    }
}

fn main() {
    let universe = mpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let rank = world.rank();
    let size = world.size();
    let n = size as i64;
    let version = mpi::environment::library_version().expect("MPI_Get_library_version");
    check(version.contains("shmpi"), rank, "library is shmpi");

    // A process spawned below: sum of (rank + 1) over the parents, and back.
    if let Some(parent) = world.parent() {
        let parents = parent.remote_size() as i64;
        let mut got = 0i64;
        parent.all_reduce_into(&(rank as i64 + 1), &mut got, SystemOperation::sum());
        check(
            got == parents * (parents + 1) / 2,
            rank,
            "spawned: allreduce with parents",
        );
        return;
    }

    // Allreduce: sum and max of i64, product of f64.
    let mine = [rank as i64 + 1, 10 * rank as i64];
    let mut sum = [0i64; 2];
    world.all_reduce_into(&mine[..], &mut sum[..], SystemOperation::sum());
    check(
        sum == [n * (n + 1) / 2, 10 * n * (n - 1) / 2],
        rank,
        "allreduce sum",
    );
    let mut max = 0i64;
    world.all_reduce_into(&(rank as i64), &mut max, SystemOperation::max());
    check(max == n - 1, rank, "allreduce max");
    let mut prod = 0f64;
    world.all_reduce_into(&2f64, &mut prod, SystemOperation::product());
    check(prod == 2f64.powi(size), rank, "allreduce product");

    // Reduce to the last rank.
    let root = world.process_at_rank(size - 1);
    let x = [rank, -rank, 1];
    if rank == size - 1 {
        let mut r = [0i32; 3];
        root.reduce_into_root(&x[..], &mut r[..], SystemOperation::sum());
        let s = (size * (size - 1) / 2) as i32;
        check(r == [s, -s, size], rank, "reduce sum");
    } else {
        root.reduce_into(&x[..], SystemOperation::sum());
    }

    // Reduce_local.
    let a = [1u32, 2, 3];
    let mut b = [10u32, 20, 30];
    mpi::collective::reduce_local_into(&a[..], &mut b[..], SystemOperation::sum());
    check(b == [11, 22, 33], rank, "reduce_local");

    // Reduce_scatter_block: element k*2+j of every rank's send buffer is rank + k + j;
    // rank k receives the sums for its two elements.
    let send: Vec<i32> = (0..size)
        .flat_map(|k| (0..2).map(move |j| rank + k + j))
        .collect();
    let mut recv = [0i32; 2];
    world.reduce_scatter_block_into(&send[..], &mut recv[..], SystemOperation::sum());
    let base = (size * (size - 1) / 2) + size * rank;
    check(recv == [base, base + size], rank, "reduce_scatter_block");

    // A user-defined commutative operation (sum of absolute values) in Allreduce and
    // Reduce_local, and a non-commutative one (keep the left operand) in Allreduce.
    let abs_sum = UserOperation::commutative(|x: DynBuffer, acc: DynBufferMut| {
        let x: &[i64] = x.downcast().unwrap();
        let acc: &mut [i64] = acc.downcast().unwrap();
        for (a, &v) in acc.iter_mut().zip(x) {
            *a = a.abs() + v.abs();
        }
    });
    let mine = [-(rank as i64) - 1, rank as i64];
    let mut r = [0i64; 2];
    world.all_reduce_into(&mine[..], &mut r[..], &abs_sum);
    // One rank: the op is never applied and the input comes back as it is.
    let want = if size == 1 {
        mine
    } else {
        [n * (n + 1) / 2, n * (n - 1) / 2]
    };
    check(r == want, rank, "user op allreduce");
    let mut acc = [-5i64, 7];
    mpi::collective::reduce_local_into(&[3i64, -4][..], &mut acc[..], &abs_sum);
    check(acc == [8, 11], rank, "user op reduce_local");
    let first = UserOperation::associative(|x: DynBuffer, acc: DynBufferMut| {
        let x: &[i32] = x.downcast().unwrap();
        acc.downcast::<i32>().unwrap().copy_from_slice(x);
    });
    let mut r = 0i32;
    world.all_reduce_into(&(rank + 100), &mut r, &first);
    check(r == 100, rank, "non-commutative user op");

    // A periodic 1 x size Cartesian grid through rsmpi: coordinates, rank and shift
    // against the row-major formula (rsmpi's coordinates_to_rank rejects coordinate 0 of
    // a non-periodic dimension, so this grid is periodic), then a non-periodic line.
    let cart = world
        .create_cartesian_communicator(&[1, size], &[true, true], false)
        .expect("MPI_Cart_create");
    check(cart.num_dimensions() == 2, rank, "cart: 2 dimensions");
    let me = cart.rank();
    check(
        cart.rank_to_coordinates(me) == vec![0, me],
        rank,
        "cart: coordinates",
    );
    check(cart.coordinates_to_rank(&[0, me]) == me, rank, "cart: rank");
    let (src, dst) = cart.shift(1, 1);
    check(
        src == Some((me + size - 1) % size) && dst == Some((me + 1) % size),
        rank,
        "cart: periodic shift",
    );
    check(
        cart.shift(0, 1) == (Some(me), Some(me)),
        rank,
        "cart: shift round 1",
    );
    let line = world
        .create_cartesian_communicator(&[size], &[false], false)
        .expect("MPI_Cart_create");
    let (src, dst) = line.shift(0, 1);
    check(
        src == (rank > 0).then(|| rank - 1) && dst == (rank + 1 < size).then(|| rank + 1),
        rank,
        "cart: shift off the edges",
    );

    // MPI_Comm_spawn through rsmpi: two copies of this program, an Allreduce across the
    // intercommunicator (each side gets the other's sum of rank + 1).
    let exe = std::env::current_exe().expect("current_exe");
    let children = world
        .process_at_rank(0)
        .spawn(&std::process::Command::new(exe), 2)
        .expect("MPI_Comm_spawn");
    check(children.remote_size() == 2, rank, "spawn: two children");
    let mut got = 0i64;
    children.all_reduce_into(&(rank as i64 + 1), &mut got, SystemOperation::sum());
    check(got == 3, rank, "spawn: allreduce with children");

    world.barrier();
    if rank == 0 {
        println!(
            "rsmpi ok at np={size}: {}",
            version.lines().next().unwrap_or("")
        );
    }
}
