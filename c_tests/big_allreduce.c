/* An MPI_Allreduce whose buffers exceed 2 GiB (count x extent > 2^31 bytes): no 32-bit
 * overflow anywhere. Every element is checked against the closed-form sum. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int count = (1 << 28) + 4099; /* doubles: 2 GiB + 32 KiB per buffer */
    double *x = malloc((size_t)count * sizeof(double)), *y = malloc((size_t)count * sizeof(double));
    if (!x || !y) {
        fprintf(stderr, "rank %d: cannot allocate 2 x %zu bytes\n", rank, (size_t)count * 8);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 0; i < count; i++) x[i] = (double)(i % 1021) + rank;
    MPI_Allreduce(x, y, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    long bad = 0;
    double ranks = size * (size - 1) / 2.0;
    for (int i = 0; i < count; i++)
        if (y[i] != (double)(i % 1021) * size + ranks) bad++;
    /* In place too, on the same > 2 GiB buffer. */
    MPI_Allreduce(MPI_IN_PLACE, x, count, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < count; i++)
        if (x[i] != (double)(i % 1021) + size - 1) bad++;
    long all;
    MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("big_allreduce: %zu bytes per buffer, np=%d: %s (%ld wrong)\n", (size_t)count * 8, size, all ? "FAILED" : "ok", all);
    free(x);
    free(y);
    MPI_Finalize();
    return all ? 1 : 0;
}
