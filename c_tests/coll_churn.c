/* Back-to-back collectives of varying sizes, kinds and roots with no barrier between
 * them, each checked: stale data from an earlier call (in the double-buffered slots or
 * the result buffers) would show. Seeded, so a failure reproduces. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t state = 88172645463325252ULL;
static uint64_t next(void) { state ^= state << 13; state ^= state >> 7; state ^= state << 17; return state; }

int main(int argc, char **argv) {
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *seed = getenv("SHMPI_TEST_SEED");
    if (seed) state = strtoull(seed, NULL, 10) | 1;
    int maxn = 70000;
    long *x = malloc(maxn * sizeof(long) * (size_t)size), *y = malloc(maxn * sizeof(long) * (size_t)size);
    int iters = 400;
    for (int it = 0; it < iters; it++) {
        int kind = (int)(next() % 5);
        int n = (int)(next() % 5 == 0 ? next() % maxn : next() % 300);
        int root = (int)(next() % (uint64_t)size);
        long tag = it * 1000;
        for (int i = 0; i < n * size; i++) x[i] = tag + (long)rank * 7 + i;
        memset(y, 0xee, (size_t)n * size * sizeof(long));
        long sumr = (long)size * (size - 1) / 2 * 7;
        switch (kind) {
        case 0:
            MPI_Allreduce(x, y, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            for (int i = 0; i < n; i++) bad += y[i] != (tag + i) * size + sumr;
            break;
        case 1:
            MPI_Reduce(x, y, n, MPI_LONG, MPI_MAX, root, MPI_COMM_WORLD);
            if (rank == root) for (int i = 0; i < n; i++) bad += y[i] != tag + (long)(size - 1) * 7 + i;
            break;
        case 2:
            MPI_Reduce_scatter_block(x, y, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            for (int i = 0; i < n; i++) bad += y[i] != (tag + (long)rank * n + i) * size + sumr;
            break;
        case 3:
            if (rank != root) memset(x, 0, (size_t)n * sizeof(long));
            else for (int i = 0; i < n; i++) x[i] = tag - i;
            MPI_Bcast(x, n, MPI_LONG, root, MPI_COMM_WORLD);
            for (int i = 0; i < n; i++) bad += x[i] != tag - i;
            break;
        default:
            MPI_Scan(x, y, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            for (int i = 0; i < n; i++) bad += y[i] != (tag + i) * (rank + 1) + (long)rank * (rank + 1) / 2 * 7;
        }
        if (bad) {
            fprintf(stderr, "rank %d: iteration %d (kind %d, n %d, root %d) wrong\n", rank, it, kind, n, root);
            break;
        }
    }
    int all;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("coll_churn: np=%d: %s\n", size, all ? "FAILED" : "ok");
    free(x); free(y);
    MPI_Finalize();
    return all ? 1 : 0;
}
