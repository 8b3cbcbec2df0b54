/* MPI_Allreduce beside CPU-bound neighbours: the latency a job keeps when other
 * processes share its CPUs (`bench/run.py --neighbours` starts them).
 *
 * For 8 B and 4 MiB of doubles (MPI_SUM): 10 warm-up calls (they also measure how long
 * a call takes, the slowest rank's mean), then -r calls (default 300; fewer, but at
 * least 11, where they would take more than -t seconds, default 5), each after an
 * MPI_Barrier, each timed alone with MPI_Wtime on rank 0. The result of
 * the first timed call is checked on every rank (element i is the sum over ranks of
 * rank + i). One line per size:
 *   nbr,<label>,<bytes>,<np>,<median us>,<p90 us>,<total ms>,<calls>
 * (total: the wall time of the whole timed loop, barriers included). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, np, maxreps = 300;
    double limit = 5;
    const char *label = "?";
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-l")) label = argv[i + 1];
        if (!strcmp(argv[i], "-r")) maxreps = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "-t")) limit = atof(argv[i + 1]);
    }
    if (maxreps < 11) maxreps = 11;
    const long counts[2] = {1, 524288};
    double *t = malloc(sizeof(double) * (size_t)maxreps);
    for (int c = 0; c < 2; c++) {
        long n = counts[c];
        double *s = malloc(sizeof(double) * (size_t)n), *d = malloc(sizeof(double) * (size_t)n);
        if (!t || !s || !d) MPI_Abort(MPI_COMM_WORLD, 2);
        for (long i = 0; i < n; i++) s[i] = rank + (double)i;
        double w0 = MPI_Wtime(), per;
        for (int k = 0; k < 10; k++) MPI_Allreduce(s, d, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        w0 = (MPI_Wtime() - w0) / 10;
        MPI_Allreduce(&w0, &per, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        int reps = per * maxreps > limit ? (int)(limit / per) : maxreps;
        if (reps < 11) reps = 11;
        memset(d, 0, sizeof(double) * (size_t)n);
        double t0 = MPI_Wtime();
        for (int k = 0; k < reps; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double a = MPI_Wtime();
            MPI_Allreduce(s, d, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            t[k] = MPI_Wtime() - a;
            if (k == 0)
                for (long i = 0; i < n; i++) {
                    double want = (double)np * (double)(np - 1) / 2 + (double)np * (double)i;
                    if (d[i] != want) {
                        fprintf(stderr, "rank %d: element %ld is %g, expected %g\n", rank, i, d[i], want);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                }
        }
        double total = MPI_Wtime() - t0;
        qsort(t, (size_t)reps, sizeof *t, cmp);
        if (rank == 0)
            printf("nbr,%s,%ld,%d,%.3f,%.3f,%.1f,%d\n", label, n * 8, np, t[reps / 2] * 1e6,
                   t[reps * 9 / 10] * 1e6, total * 1e3, reps);
        fflush(stdout);
        free(s);
        free(d);
    }
    free(t);
    MPI_Finalize();
    return 0;
}
