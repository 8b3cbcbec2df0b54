/*
 * collbench: median latency of reduction collectives, Bcast and Barrier.
 *
 * For every (collective, size) cell: warm up and calibrate an iteration count
 * so that one batch takes about TARGET/BATCHES seconds, then run BATCHES
 * batches, each preceded by a barrier.  The time per call of a batch is the
 * batch time divided by the iteration count; the max over ranks is taken per
 * batch and the median over batches is reported.  Each collective's result is
 * checked once per size (exact sums of small integers in MPI_DOUBLE) and the
 * job aborts if it is wrong.
 *
 * Output (rank 0, one line per cell):
 *   RESULT <impl> <op> <np> <bytes> <median_us> <min_us> <iters> <batches>
 * For reduce_scatter{,_block}, <bytes> is the size of each rank's send buffer
 * (the whole vector), i.e. each rank receives bytes/np.  Barrier has bytes 0.
 *
 * Options:
 *   -l LABEL      implementation label printed in each line (default "mpi")
 *   -o LIST       comma-separated collectives: reduce,allreduce,rsb,rs,bcast,barrier
 *                 (default all)
 *   -m BYTES      largest size (default 67108864); suffixes K, M accepted
 *   -s LIST       explicit comma-separated sizes instead of the default list
 *   -t SECONDS    target wall time per cell (default 0.15)
 *   -b N          number of timed batches (default 7, 3..31)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 32
#define MAX_BATCHES 31

enum coll { C_REDUCE, C_ALLREDUCE, C_RSB, C_RS, C_BCAST, C_BARRIER, C_COUNT };
static const char *coll_names[C_COUNT] = {"reduce", "allreduce", "rsb", "rs", "bcast", "barrier"};

static int rank, np;
static double *sbuf, *rbuf;
static int *rcounts;

static long parse_size(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end == 'K' || *end == 'k')
        v *= 1024;
    else if (*end == 'M' || *end == 'm')
        v *= 1024 * 1024;
    return v;
}

static void die(const char *msg)
{
    fprintf(stderr, "collbench: rank %d: %s\n", rank, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* Element count of the vector for a byte size; for the reduce-scatter
 * variants the count is rounded to a multiple of np (at least np). */
static int elems(enum coll c, long bytes, int *per_rank)
{
    long n = bytes / (long)sizeof(double);
    if (n < 1)
        n = 1;
    if (c == C_RSB || c == C_RS) {
        long pr = n / np;
        if (pr < 1)
            pr = 1;
        *per_rank = (int)pr;
        n = pr * np;
    } else {
        *per_rank = (int)n;
    }
    return (int)n;
}

static void run_once(enum coll c, int n, int pr)
{
    switch (c) {
    case C_REDUCE:
        MPI_Reduce(sbuf, rbuf, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case C_ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case C_RSB:
        MPI_Reduce_scatter_block(sbuf, rbuf, pr, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case C_RS:
        MPI_Reduce_scatter(sbuf, rbuf, rcounts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case C_BCAST:
        MPI_Bcast(sbuf, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        break;
    case C_BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    default:
        break;
    }
}

static double sendval(int r, long i) { return (double)(r + 1) + (double)(i % 7); }

static double sumval(long i)
{
    return (double)np * (double)(np + 1) / 2.0 + (double)np * (double)(i % 7);
}

static void fill(enum coll c, int n)
{
    for (long i = 0; i < n; i++)
        sbuf[i] = (c == C_BCAST) ? (rank == 0 ? (double)(i % 13) + 1.0 : -1.0) : sendval(rank, i);
}

/* Run the collective once on fresh data and verify it. */
static void check(enum coll c, int n, int pr)
{
    char msg[200];
    fill(c, n);
    for (long i = 0; i < n; i++)
        rbuf[i] = -7.0;
    for (int r = 0; r < np; r++)
        rcounts[r] = pr;
    run_once(c, n, pr);
    switch (c) {
    case C_REDUCE:
        if (rank != 0)
            break;
        /* fall through */
    case C_ALLREDUCE:
        for (long i = 0; i < n; i++)
            if (rbuf[i] != sumval(i)) {
                snprintf(msg, sizeof msg, "%s: wrong result at %ld: %g, expected %g",
                         coll_names[c], i, rbuf[i], sumval(i));
                die(msg);
            }
        break;
    case C_RSB:
    case C_RS:
        for (long i = 0; i < pr; i++) {
            long g = (long)rank * pr + i;
            if (rbuf[i] != sumval(g)) {
                snprintf(msg, sizeof msg, "%s: wrong result at %ld: %g, expected %g",
                         coll_names[c], i, rbuf[i], sumval(g));
                die(msg);
            }
        }
        break;
    case C_BCAST:
        for (long i = 0; i < n; i++)
            if (sbuf[i] != (double)(i % 13) + 1.0) {
                snprintf(msg, sizeof msg, "bcast: wrong value at %ld: %g", i, sbuf[i]);
                die(msg);
            }
        break;
    default:
        break;
    }
}

/* Time `iters` calls after a barrier; returns this rank's seconds. */
static double batch(enum coll c, int n, int pr, long iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long k = 0; k < iters; k++)
        run_once(c, n, pr);
    return MPI_Wtime() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void cell(const char *label, enum coll c, long bytes, double target, int nbatch)
{
    int pr;
    int n = elems(c, bytes, &pr);
    if (c != C_BARRIER)
        check(c, n, pr);
    else
        MPI_Barrier(MPI_COMM_WORLD);

    /* Warm-up and calibration: double the batch until it takes >= 1/4 of
     * a batch's share of the target (max over ranks decides, so all ranks
     * agree on the iteration count). */
    double per_batch = target / nbatch;
    long iters = 1;
    double tmax = 0.0;
    for (;;) {
        double t = batch(c, n, pr, iters);
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (tmax >= per_batch / 4 || iters >= (1L << 30))
            break;
        iters *= (tmax < per_batch / 64) ? 8 : 2;
    }
    long want = (long)(per_batch / (tmax / (double)iters));
    if (want < 1)
        want = 1;
    iters = want;
    /* Calls longer than a batch's share: keep the cell short with 5 batches. */
    if (want == 1 && nbatch > 5)
        nbatch = 5;

    double t[MAX_BATCHES], tm[MAX_BATCHES];
    for (int b = 0; b < nbatch; b++)
        t[b] = batch(c, n, pr, iters) / (double)iters;
    MPI_Reduce(t, tm, nbatch, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        qsort(tm, (size_t)nbatch, sizeof(double), cmp_double);
        printf("RESULT %s %s %d %ld %.3f %.3f %ld %d\n", label, coll_names[c], np,
               c == C_BARRIER ? 0L : bytes, tm[nbatch / 2] * 1e6, tm[0] * 1e6, iters, nbatch);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    const char *label = "mpi";
    int want[C_COUNT];
    long sizes[MAX_SIZES];
    int nsizes = 0;
    long maxbytes = 64L * 1024 * 1024;
    double target = 0.15;
    int nbatch = 7;
    for (int c = 0; c < C_COUNT; c++)
        want[c] = 1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;
        if (v == NULL || a[0] != '-' || strlen(a) != 2) {
            if (rank == 0)
                fprintf(stderr, "usage: collbench [-l label] [-o ops] [-m maxbytes] "
                                "[-s sizes] [-t seconds] [-b batches]\n");
            MPI_Finalize();
            return 2;
        }
        i++;
        switch (a[1]) {
        case 'l':
            label = v;
            break;
        case 'o': {
            char *copy = strdup(v), *save = NULL;
            for (int c = 0; c < C_COUNT; c++)
                want[c] = 0;
            for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int found = 0;
                for (int c = 0; c < C_COUNT; c++)
                    if (strcmp(tok, coll_names[c]) == 0)
                        want[c] = found = 1;
                if (!found)
                    die("unknown collective in -o");
            }
            free(copy);
            break;
        }
        case 'm':
            maxbytes = parse_size(v);
            break;
        case 's': {
            char *copy = strdup(v), *save = NULL;
            for (char *tok = strtok_r(copy, ",", &save); tok && nsizes < MAX_SIZES;
                 tok = strtok_r(NULL, ",", &save))
                sizes[nsizes++] = parse_size(tok);
            free(copy);
            break;
        }
        case 't':
            target = atof(v);
            break;
        case 'b':
            nbatch = atoi(v);
            break;
        default:
            die("unknown option");
        }
    }
    if (nbatch < 3)
        nbatch = 3;
    if (nbatch > MAX_BATCHES)
        nbatch = MAX_BATCHES;
    if (nsizes == 0)
        for (long s = 8; s <= maxbytes && nsizes < MAX_SIZES; s *= 8)
            sizes[nsizes++] = s;
    long big = 8;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > big)
            big = sizes[i];
    /* Reduce-scatter rounds the vector up to np elements. */
    size_t alloc = (size_t)big + (size_t)np * sizeof(double);
    sbuf = malloc(alloc);
    rbuf = malloc(alloc);
    rcounts = malloc((size_t)np * sizeof(int));
    if (!sbuf || !rbuf || !rcounts)
        die("out of memory");
    memset(sbuf, 0, alloc);
    memset(rbuf, 0, alloc);

    for (int c = 0; c < C_COUNT; c++) {
        if (!want[c])
            continue;
        if (c == C_BARRIER) {
            cell(label, (enum coll)c, 0, target, nbatch);
            continue;
        }
        for (int i = 0; i < nsizes; i++)
            cell(label, (enum coll)c, sizes[i], target, nbatch);
    }
    free(sbuf);
    free(rbuf);
    free(rcounts);
    MPI_Finalize();
    return 0;
}
