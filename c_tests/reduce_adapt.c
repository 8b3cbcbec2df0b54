/* Large MPI_Reduce and MPI_Allreduce with every rank on a CPU of its own choose between
 * the direct path and the arena path call by call (coll/reduce.rs `adaptive`); with
 * SHMPI_ADAPT_FLIP=N member 0 asks for the other path every N calls, so the switching
 * runs hundreds of times. Every rank must take the same path for the same call (else
 * the job hangs or the data is wrong), whatever runs in between: small broadcasts and
 * reductions whose senders run ahead through posted steps, other roots, MPI_IN_PLACE,
 * a duplicate communicator. Every result is checked against a sequential oracle (small
 * integers in doubles: exact). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double val(int rank, long i, int it) { return (double)((rank * 7 + i * 3 + it) % 1000); }

int main(int argc, char **argv) {
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    const long sizes[] = {32768 / 8, 100 * 1024 / 8 + 1, 262144 / 8, 1048576 / 8, 2097152 / 8 + 5};
    const long maxn = 2097152 / 8 + 5;
    double *in = malloc(sizeof(double) * maxn), *out = malloc(sizeof(double) * maxn);
    int iters = argc > 1 ? atoi(argv[1]) : 300;
    for (int it = 0; it < iters && !bad; it++) {
        long n = sizes[it % 5];
        MPI_Comm c = it % 7 == 3 ? dup : MPI_COMM_WORLD;
        for (long i = 0; i < n; i++) in[i] = val(rank, i, it);
        int kind = it % 3; /* 0 reduce, 1 allreduce, 2 allreduce in place */
        int root = (it / 3) % size;
        if (kind == 2) memcpy(out, in, sizeof(double) * n);
        else for (long i = 0; i < n; i++) out[i] = -1;
        if (kind == 0) MPI_Reduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, root, c);
        else MPI_Allreduce(kind == 2 ? MPI_IN_PLACE : in, out, (int)n, MPI_DOUBLE, MPI_SUM, c);
        if (kind != 0 || rank == root) {
            for (long i = 0; i < n; i++) {
                double want = 0;
                for (int r = 0; r < size; r++) want += val(r, i, it);
                if (out[i] != want) {
                    fprintf(stderr, "rank %d iteration %d (kind %d, %ld doubles): element %ld is %g, not %g\n",
                            rank, it, kind, n, i, out[i], want);
                    bad++;
                    break;
                }
            }
        }
        /* small collectives in between: their senders run ahead through posted steps */
        for (int k = 0; k < it % 4; k++) {
            double b = rank == 1 % size ? it + k : -1, s = rank + 1, r = 0;
            MPI_Bcast(&b, 1, MPI_DOUBLE, 1 % size, MPI_COMM_WORLD);
            if (b != it + k) { fprintf(stderr, "rank %d: broadcast %g\n", rank, b); bad++; }
            MPI_Reduce(&s, &r, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank == 0 && r != size * (size + 1) / 2.0) { fprintf(stderr, "small reduce %g\n", r); bad++; }
        }
    }
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("reduce_adapt: np=%d: %s\n", size, all ? "FAILED" : "ok");
    free(in);
    free(out);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return all ? 1 : 0;
}
