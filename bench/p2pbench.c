/* Point-to-point latency and bandwidth: ranks in pairs (0-1, 2-3, ...; an odd last rank
 * idles), every pair at once.
 *   pingpong: MPI_Send then MPI_Recv (the partner the other way round); time per one-way
 *             message = round trip / 2.
 *   exchange: MPI_Sendrecv with the partner (both directions at once); time per call.
 * For each size: warm-up calls, an iteration count calibrated to about `-t` seconds per
 * batch, then `-b` batches; the time of a batch is the maximum over the ranks, and the
 * line reports the fastest batch and the median batch, in microseconds:
 *   P2P <label> <np> <mode> <bytes> <best us> <median us>
 * Every message is checked once per size (the pattern of its sender). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BATCHES 15

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void step(int mode, int rank, int partner, char *s, char *r, long len)
{
    if (partner < 0)
        return;
    if (mode == 0) {
        if (rank % 2 == 0) {
            MPI_Send(s, (int)len, MPI_BYTE, partner, 1, MPI_COMM_WORLD);
            MPI_Recv(r, (int)len, MPI_BYTE, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(r, (int)len, MPI_BYTE, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(s, (int)len, MPI_BYTE, partner, 1, MPI_COMM_WORLD);
        }
    } else {
        MPI_Sendrecv(s, (int)len, MPI_BYTE, partner, 2, r, (int)len, MPI_BYTE, partner, 2, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    }
}

/* Runs `iters` steps between barriers; returns the slowest rank's seconds. */
static double batch(int mode, int rank, int partner, char *s, char *r, long len, long iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++)
        step(mode, rank, partner, s, r, len);
    double t = MPI_Wtime() - t0, mx;
    MPI_Allreduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mx;
}

int main(int argc, char **argv)
{
    const char *label = "mpi";
    double target = 0.02;
    int nbatch = 7;
    long maxbytes = 16L << 20;
    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-l") == 0)
            label = argv[i + 1];
        else if (strcmp(argv[i], "-t") == 0)
            target = atof(argv[i + 1]);
        else if (strcmp(argv[i], "-b") == 0)
            nbatch = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-m") == 0)
            maxbytes = atol(argv[i + 1]);
    }
    if (nbatch < 3)
        nbatch = 3;
    if (nbatch > MAX_BATCHES)
        nbatch = MAX_BATCHES;
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int partner = (rank ^ 1) < np ? rank ^ 1 : -1;
    char *s = malloc((size_t)maxbytes), *r = malloc((size_t)maxbytes);
    if (!s || !r) {
        fprintf(stderr, "p2pbench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long i = 0; i < maxbytes; i++)
        s[i] = (char)(rank * 31 + i * 7);
    memset(r, 0, (size_t)maxbytes);
    long sizes[] = {8, 1024, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20};
    int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    for (int k = 0; k < nsizes && sizes[k] <= maxbytes; k++) {
        long len = sizes[k];
        for (int mode = 0; mode < 2; mode++) {
            /* check once */
            memset(r, 0, (size_t)len);
            step(mode, rank, partner, s, r, len);
            int bad = 0;
            for (long i = 0; partner >= 0 && i < len; i++)
                if (r[i] != (char)(partner * 31 + i * 7)) {
                    bad = 1;
                    break;
                }
            int anybad;
            MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (anybad) {
                if (rank == 0)
                    fprintf(stderr, "p2pbench: wrong data at %ld bytes\n", len);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            /* calibrate */
            long iters = 1;
            double t;
            for (;;) {
                t = batch(mode, rank, partner, s, r, len, iters);
                if (t >= target / 4 || iters >= (1L << 24))
                    break;
                iters *= (t < target / 64) ? 8 : 2;
            }
            iters = (long)(target / (t / (double)iters));
            if (iters < 1)
                iters = 1;
            double ts[MAX_BATCHES];
            for (int b = 0; b < nbatch; b++)
                ts[b] = batch(mode, rank, partner, s, r, len, iters) / (double)iters * 1e6 / (mode == 0 ? 2 : 1);
            qsort(ts, (size_t)nbatch, sizeof(double), cmp_double);
            if (rank == 0) {
                printf("P2P %s %d %s %ld %.3f %.3f\n", label, np, mode == 0 ? "pingpong" : "exchange", len, ts[0],
                       ts[nbatch / 2]);
                fflush(stdout);
            }
        }
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
