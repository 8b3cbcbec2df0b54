/* When a copy between processes fails in the middle of a direct-path collective
 * (coll/direct.rs), every member returns an error, not only the one whose copy failed,
 * nothing hangs, and the library stays usable. The failure is real: after a first
 * direct Allreduce, the last rank installs a seccomp filter that makes
 * process_vm_readv/writev fail with EPERM (as a sandbox would), while its cached probe
 * still says it can take part. Run with SHMPI_DIRECT=require (so every size and member
 * count takes the direct path). */
#define _GNU_SOURCE
#include <errno.h>
#include "forbid_copies.h"
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static int rank, size, failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "rank %d: ", rank);                                \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
            failures++;                                                        \
        }                                                                      \
    } while (0)

/* The library's own probe: may this process read its parent's memory? */
static int peers_readable(void) {
    char byte;
    struct iovec local = {&byte, 1}, remote = {(void *)(uintptr_t)0x1000, 1};
    return process_vm_readv(getppid(), &local, 1, &remote, 1, 0) < 0 && errno == EFAULT;
}


/* An error of class MPI_ERR_OTHER on every rank. */
static void expect_failure(int rc, const char *what) {
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OTHER, "%s: expected an MPI_ERR_OTHER error, got rc %d (class %d)", what, rc, cls);
    if (rc != MPI_SUCCESS && rank == 0) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, msg, &len);
        printf("%s fails as expected: %s\n", what, msg);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int ok = peers_readable(), all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok) {
        if (rank == 0) printf("direct_fail: process_vm_readv is refused on this system; nothing to test\n");
        MPI_Finalize();
        return 0;
    }
    const int n = 1 << 18; /* 2 MiB of doubles */
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    for (int i = 0; i < n; i++) x[i] = rank + i % 7;

    /* 1. A direct Allreduce that works (and caches every rank's probe). */
    int rc = MPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "first Allreduce: rc %d", rc);
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        if (y[i] != (double)size * (size - 1) / 2 + (double)size * (i % 7)) {
            CHECK(0, "first Allreduce: y[%d] = %g", i, y[i]);
            break;
        }

    /* 2. The last rank can no longer copy between processes. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) forbid_cross_process_copies();
    MPI_Barrier(MPI_COMM_WORLD);

    expect_failure(MPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    expect_failure(MPI_Reduce_scatter_block(x, y, n / size, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
                   "MPI_Reduce_scatter_block");
    expect_failure(MPI_Reduce(x, y, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce to rank 0");
    expect_failure(MPI_Reduce(x, y, n, MPI_DOUBLE, MPI_SUM, size - 1, MPI_COMM_WORLD), "MPI_Reduce to the last rank");
    expect_failure(MPI_Bcast(x, n, MPI_DOUBLE, 0, MPI_COMM_WORLD), "MPI_Bcast from rank 0");
    expect_failure(MPI_Bcast(x, n, MPI_DOUBLE, size - 1, MPI_COMM_WORLD), "MPI_Bcast from the last rank");

    /* 3. The library stays usable: small collectives take the arena path. */
    long v = rank + 1, sum = 0;
    rc = MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS && sum == (long)size * (size + 1) / 2, "small Allreduce after the failures: rc %d, sum %ld", rc, sum);
    rc = MPI_Bcast(&v, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS && v == 1, "small Bcast after the failures: rc %d, v %ld", rc, v);

    int bad;
    MPI_Allreduce(&failures, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("direct_fail: np=%d: %s (%d failures)\n", size, bad ? "FAILED" : "ok", bad);
    free(x);
    free(y);
    MPI_Finalize();
    return bad != 0;
}
