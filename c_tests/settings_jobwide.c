/* Settings that choose an algorithm or lay out the arena are the job's: rank 1 (only)
 * starts again with other values of SHMPI_SEGMENT, SHMPI_PIPE_SEGMENT, SHMPI_CHAIN,
 * SHMPI_DIRECT, SHMPI_DIRECT_MIN, SHMPI_BCAST_RING and SHMPI_CHECK_ARGS than mpiexec
 * had (it re-executes itself before MPI_Init, keeping the arena descriptor mpiexec gave
 * it), and a 32 MiB MPI_Allreduce (MPI_DOUBLE, MPI_SUM), a 1 MiB MPI_Bcast and a 32 MiB
 * MPI_Reduce still give the exact result on every rank: every rank takes the values
 * mpiexec wrote into the arena. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void restart_rank1(char **argv) {
    const char *r = getenv("SHMPI_RANK");
    if (!r || strcmp(r, "1") != 0 || getenv("SETTINGS_JOBWIDE_RESTARTED")) return;
    setenv("SETTINGS_JOBWIDE_RESTARTED", "1", 1);
    setenv("SHMPI_SEGMENT", "1048576", 1);
    setenv("SHMPI_PIPE_SEGMENT", "4096", 1);
    setenv("SHMPI_CHAIN", "1", 1);
    setenv("SHMPI_DIRECT", "require", 1);
    setenv("SHMPI_DIRECT_MIN", "1", 1);
    setenv("SHMPI_BCAST_RING", "1", 1);
    setenv("SHMPI_CHECK_ARGS", "0", 1);
    execv("/proc/self/exe", argv);
    perror("settings_jobwide: execv /proc/self/exe");
    exit(3);
}

int main(int argc, char **argv) {
    restart_rank1(argv);
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 1 && !getenv("SETTINGS_JOBWIDE_RESTARTED")) {
        fprintf(stderr, "settings_jobwide: rank 1 did not restart\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int count = (32 << 20) / (int)sizeof(double);
    double *x = malloc((size_t)count * sizeof(double)), *y = malloc((size_t)count * sizeof(double));
    if (!x || !y) {
        fprintf(stderr, "rank %d: cannot allocate 2 x 32 MiB\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long bad = 0;
    const double ranks = size * (size - 1) / 2.0;
    for (int i = 0; i < count; i++) x[i] = (double)(i % 1021) + 3.0 * rank;
    MPI_Allreduce(x, y, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < count; i++)
        if (y[i] != (double)(i % 1021) * size + 3.0 * ranks) bad++;
    /* A broadcast beyond the posted steps (ring, direct or pipeline by the settings). */
    const int bcount = (1 << 20) / (int)sizeof(double);
    for (int i = 0; i < bcount; i++) y[i] = rank == 2 ? (double)(i % 977) : -1.0;
    MPI_Bcast(y, bcount, MPI_DOUBLE, 2, MPI_COMM_WORLD);
    for (int i = 0; i < bcount; i++)
        if (y[i] != (double)(i % 977)) bad++;
    /* A rooted reduction, in place at the root. */
    double *in = rank == 0 ? MPI_IN_PLACE : x, *out = rank == 0 ? x : NULL;
    MPI_Reduce(in, out, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < count; i++)
            if (x[i] != (double)(i % 1021) * size + 3.0 * ranks) bad++;
    long all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("settings_jobwide: np=%d: %s (%ld wrong)\n", size, all ? "FAILED" : "ok", all);
    free(x);
    free(y);
    MPI_Finalize();
    return all ? 1 : 0;
}
