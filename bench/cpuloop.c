/*
 * cpuloop: wall and CPU time of N back-to-back calls of one large reduction, for A/B
 * tests with more ranks than CPUs (where the summed CPU time of all ranks says more
 * than the wall time of one run).
 *
 *   mpiexec -n NP cpuloop CALLS {reduce|allreduce|rsb} DOUBLES
 *
 * Every rank fills its vector (so that no page is the shared zero page), one call warms
 * up, then CALLS calls are timed. Rank 0 prints the wall time per call and the CPU time
 * (user + system, summed over all ranks by getrusage) per call. MPI_Reduce goes to root
 * 0; rsb is MPI_Reduce_scatter_block of DOUBLES / NP per rank. No result is checked:
 * the tests do that.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static double cpu(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec * 1e-6;
}

static void call(const char *op, const double *s, double *r, long cnt, int size) {
    if (!strcmp(op, "reduce"))
        MPI_Reduce(s, r, (int)cnt, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    else if (!strcmp(op, "rsb"))
        MPI_Reduce_scatter_block(s, r, (int)(cnt / size), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Allreduce(s, r, (int)cnt, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        if (rank == 0) fprintf(stderr, "usage: cpuloop CALLS {reduce|allreduce|rsb} DOUBLES\n");
        MPI_Finalize();
        return 2;
    }
    long n = atol(argv[1]), cnt = atol(argv[3]);
    const char *op = argv[2];
    double *s = malloc(cnt * sizeof(double)), *r = malloc(cnt * sizeof(double));
    if (!s || !r) MPI_Abort(MPI_COMM_WORLD, 1);
    for (long i = 0; i < cnt; i++) {
        s[i] = rank + i * 1e-3;
        r[i] = 0;
    }
    call(op, s, r, cnt, size);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime(), c = cpu();
    for (long i = 0; i < n; i++) call(op, s, r, cnt, size);
    t = MPI_Wtime() - t;
    c = cpu() - c;
    double tc = 0;
    MPI_Reduce(&c, &tc, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%s %ld calls: %.2f ms/call  cpu %.2f ms/call\n", op, n, t / n * 1e3, tc / n * 1e3);
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
