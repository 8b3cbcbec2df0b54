/* Overlap of a nonblocking reduction with computation: median times of
 *   comm: MPI_Iallreduce + MPI_Wait,
 *   comp: a computation of about the same length,
 *   both: MPI_Iallreduce, the computation (with an MPI_Test every slice, since progress
 *         happens inside MPI calls), MPI_Wait.
 * overlap = (comm + comp - both) / min(comm, comp): 1 means fully hidden, 0 none.
 * Builds against any MPI; prints one line per size. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

static void compute(long work, MPI_Request *r) {
    double acc = 0;
    for (long i = 0; i < work; i++) {
        acc += (double)i * 1e-9;
        if (r && (i & 4095) == 0) {
            int flag;
            MPI_Test(r, &flag, MPI_STATUS_IGNORE);
        }
    }
    sink = acc;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *label = argc > 1 ? argv[1] : "mpi";
    long sizes[] = {65536, 1048576, 16777216};
    for (int s = 0; s < 3; s++) {
        long n = sizes[s] / 8;
        double *x = malloc(n * 8), *y = malloc(n * 8);
        for (long i = 0; i < n; i++) x[i] = i;
        enum { REPS = 7 };
        double tc[REPS], tp[REPS], tb[REPS];
        MPI_Request r;
        /* Calibrate the computation to the communication time. */
        MPI_Iallreduce(x, y, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        double t0 = MPI_Wtime();
        MPI_Iallreduce(x, y, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        double tcomm = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &tcomm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        compute(1000000, NULL);
        double per = (MPI_Wtime() - t1) / 1000000;
        MPI_Allreduce(MPI_IN_PLACE, &per, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        long work = (long)(tcomm / per) + 1;
        for (int k = 0; k < REPS; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            MPI_Iallreduce(x, y, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            tc[k] = MPI_Wtime() - t0;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            compute(work, NULL);
            tp[k] = MPI_Wtime() - t0;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            MPI_Iallreduce(x, y, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
            compute(work, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            tb[k] = MPI_Wtime() - t0;
        }
        for (int k = 0; k < REPS; k++) {
            MPI_Allreduce(MPI_IN_PLACE, &tc[k], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            MPI_Allreduce(MPI_IN_PLACE, &tp[k], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            MPI_Allreduce(MPI_IN_PLACE, &tb[k], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        }
        qsort(tc, REPS, 8, cmp);
        qsort(tp, REPS, 8, cmp);
        qsort(tb, REPS, 8, cmp);
        double c = tc[REPS / 2], p = tp[REPS / 2], b = tb[REPS / 2];
        double ov = (c + p - b) / (c < p ? c : p);
        if (rank == 0)
            printf("%-8s np=%d %9ld B  comm %9.1f us  comp %9.1f us  both %9.1f us  overlap %.2f\n",
                   label, size, sizes[s], c * 1e6, p * 1e6, b * 1e6, ov);
        free(x);
        free(y);
    }
    MPI_Finalize();
    return 0;
}
