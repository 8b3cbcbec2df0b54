/* A small MPI program: every rank contributes rank+1 (and a vector), MPI_Allreduce sums
 * them, and each rank checks the result against the closed form. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    enum { N = 1000 };
    double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (int i = 0; i < N; i++) x[i] = (double)(rank + 1) * (i + 1);
    MPI_Allreduce(x, y, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

    double want_factor = size * (size + 1) / 2.0;
    int bad = 0;
    for (int i = 0; i < N; i++)
        if (y[i] != want_factor * (i + 1)) bad++;

    int sum_of_ranks = 0;
    MPI_Reduce(&rank, &sum_of_ranks, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    printf("rank %d of %d: allreduce of %d doubles %s (y[%d] = %g)\n", rank, size, N,
           bad ? "WRONG" : "correct", N - 1, y[N - 1]);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("sum of ranks = %d (expected %d); library: %s\n", sum_of_ranks, size * (size - 1) / 2, lib);
    free(x);
    free(y);
    MPI_Finalize();
    return bad ? 1 : 0;
}
