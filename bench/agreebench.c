/*
 * agreebench: what shmpi's collective argument-agreement check costs on the
 * 8-byte MPI_Allreduce.
 *
 * Two duplicates of MPI_COMM_WORLD: "on" checks arguments (the default), "off"
 * has the check turned off by the info hint shmpi_check_args=false. Timed
 * batches of MPI_Allreduce(8 bytes, MPI_DOUBLE, MPI_SUM) alternate between
 * them in ABBA order, so that whatever else runs on the machine hits both
 * alike; each batch's time per call is the max over ranks. For every pair of
 * adjacent batches the ratio on/off is taken; the median ratio is the
 * overhead estimate.
 *
 * Output (rank 0): AGREE <np> <median_on_us> <median_off_us> <median_ratio> <pairs> <iters>
 * Options: -p PAIRS (default 200), -t SECONDS per batch (default 0.004).
 * On another MPI the hint is ignored and the ratio is about 1.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double batch(MPI_Comm c, long iters)
{
    double s = 1.0, r = 0.0;
    MPI_Barrier(c);
    double t0 = MPI_Wtime();
    for (long k = 0; k < iters; k++)
        MPI_Allreduce(&s, &r, 1, MPI_DOUBLE, MPI_SUM, c);
    double t = (MPI_Wtime() - t0) / (double)iters, tmax;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, c);
    return tmax;
}

int main(int argc, char **argv)
{
    int pairs = 200, rank, np;
    double target = 0.004;
    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-p"))
            pairs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-t"))
            target = atof(argv[i + 1]);
    }
    if (pairs < 2)
        pairs = 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "shmpi_check_args", "false");
    MPI_Comm on, off;
    MPI_Comm_dup(MPI_COMM_WORLD, &on);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &off);
    MPI_Info_free(&info);

    /* The sum is right on both. */
    double one = 1.0, s1 = 0.0, s2 = 0.0;
    MPI_Allreduce(&one, &s1, 1, MPI_DOUBLE, MPI_SUM, on);
    MPI_Allreduce(&one, &s2, 1, MPI_DOUBLE, MPI_SUM, off);
    if (s1 != np || s2 != np) {
        fprintf(stderr, "agreebench: wrong sums %g %g\n", s1, s2);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* Calibrate (warming both up): iterations per batch of about `target`. */
    long iters = 16;
    for (;;) {
        double t = batch(on, iters) + batch(off, iters);
        if (t * (double)iters >= target || iters >= (1L << 24))
            break;
        iters *= 2;
    }

    double *ton = malloc(sizeof(double) * pairs), *toff = malloc(sizeof(double) * pairs);
    double *ratio = malloc(sizeof(double) * pairs);
    for (int p = 0; p < pairs; p++) {
        if (p % 2 == 0) {
            ton[p] = batch(on, iters);
            toff[p] = batch(off, iters);
        } else {
            toff[p] = batch(off, iters);
            ton[p] = batch(on, iters);
        }
        ratio[p] = ton[p] / toff[p];
    }
    if (rank == 0) {
        qsort(ton, pairs, sizeof(double), cmp);
        qsort(toff, pairs, sizeof(double), cmp);
        qsort(ratio, pairs, sizeof(double), cmp);
        printf("AGREE %d %.4f %.4f %.4f %d %ld\n", np, ton[pairs / 2] * 1e6,
               toff[pairs / 2] * 1e6, ratio[pairs / 2], pairs, iters);
        fflush(stdout);
    }
    free(ton);
    free(toff);
    free(ratio);
    MPI_Comm_free(&on);
    MPI_Comm_free(&off);
    MPI_Finalize();
    return 0;
}
