"""mpi4py on shmpi: the reduction family on numpy arrays, checked, at any process count.

Allreduce, Reduce, Reduce_scatter_block, Reduce_scatter, Reduce_local, a user-defined
Op.Create (commutative and not), and the pickle-based comm.allreduce. Exits non-zero
on the first wrong value.
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def check(ok, what):
    if not ok:
        print(f"rank {rank}: FAIL {what}", flush=True)
        comm.Abort(1)


version = MPI.Get_library_version()
check("shmpi" in version, f"library is shmpi: {version!r}")

# Allreduce: sum of float64 (integers: exact), max of int32, product of int64.
x = np.arange(10, dtype="f8") + rank
r = np.empty_like(x)
comm.Allreduce(x, r, op=MPI.SUM)
check(np.array_equal(r, size * np.arange(10) + size * (size - 1) / 2), "Allreduce SUM f8")
r = np.zeros(3, dtype="i4")
comm.Allreduce(np.array([rank, -rank, 7], dtype="i4"), r, op=MPI.MAX)
check(list(r) == [size - 1, 0, 7], "Allreduce MAX i4")
r = np.zeros(1, dtype="i8")
comm.Allreduce(np.array([2], dtype="i8"), r, op=MPI.PROD)
check(r[0] == 2**size, "Allreduce PROD i8")
buf = np.full(4, rank + 1, dtype="i8")
comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
check(np.all(buf == size * (size + 1) // 2), "Allreduce IN_PLACE")

# Reduce to the last rank.
root = size - 1
x = np.array([rank, 1.5], dtype="f8")
r = np.zeros(2, dtype="f8") if rank == root else None
comm.Reduce(x, r, op=MPI.SUM, root=root)
if rank == root:
    check(list(r) == [size * (size - 1) / 2, 1.5 * size], "Reduce SUM")

# Reduce_scatter_block: rank k gets 3 elements; element k*3+j of rank i is i + k + j.
send = np.array([rank + k + j for k in range(size) for j in range(3)], dtype="i4")
r = np.zeros(3, dtype="i4")
comm.Reduce_scatter_block(send, r, op=MPI.SUM)
base = size * (size - 1) // 2 + size * rank
check(list(r) == [base, base + size, base + 2 * size], "Reduce_scatter_block")

# Reduce_scatter with uneven counts: rank k gets k + 1 elements, all ones summed.
counts = [k + 1 for k in range(size)]
send = np.ones(sum(counts), dtype="f4")
r = np.zeros(rank + 1, dtype="f4")
comm.Reduce_scatter(send, r, recvcounts=counts, op=MPI.SUM)
check(np.all(r == size), "Reduce_scatter")

# Reduce_local.
a = np.array([1, 2, 3], dtype="i8")
b = np.array([10, 20, 30], dtype="i8")
MPI.SUM.Reduce_local(a, b)
check(list(b) == [11, 22, 33], "Reduce_local")


# User-defined operations: sum of absolute values (commutative) and "keep the left
# operand" (not commutative: the result is rank 0's value).
def abs_sum(inbuf, inoutbuf, datatype):
    i = np.frombuffer(inbuf, dtype="i8")
    io = np.frombuffer(inoutbuf, dtype="i8")
    io[:] = np.abs(i) + np.abs(io)


def keep_left(inbuf, inoutbuf, datatype):
    np.frombuffer(inoutbuf, dtype="i8")[:] = np.frombuffer(inbuf, dtype="i8")


op = MPI.Op.Create(abs_sum, commute=True)
check(op.Is_commutative(), "Op.Create commute=True")
r = np.zeros(2, dtype="i8")
comm.Allreduce(np.array([-(rank + 1), rank], dtype="i8"), r, op=op)
# One rank: the op is never applied and the input comes back as it is.
want = [-1, 0] if size == 1 else [size * (size + 1) // 2, size * (size - 1) // 2]
check(list(r) == want, "user op Allreduce")
acc = np.array([-5, 7], dtype="i8")
op.Reduce_local(np.array([3, -4], dtype="i8"), acc)
check(list(acc) == [8, 11], "user op Reduce_local")
op.Free()
left = MPI.Op.Create(keep_left, commute=False)
check(not left.Is_commutative(), "Op.Create commute=False")
r = np.zeros(1, dtype="i8")
comm.Allreduce(np.array([rank + 100], dtype="i8"), r, op=left)
check(r[0] == 100, "non-commutative user op Allreduce")
left.Free()

# The pickle-based lower-case API.
check(comm.allreduce(rank) == size * (size - 1) // 2, "comm.allreduce")
check(comm.allreduce([rank]) == list(range(size)), "comm.allreduce of lists")
check(comm.allreduce(rank, op=MPI.MAX) == size - 1, "comm.allreduce MAX")

comm.Barrier()
if rank == 0:
    print(f"mpi4py {sys.modules['mpi4py'].__version__} ok at np={size}: {version.splitlines()[0]}")
