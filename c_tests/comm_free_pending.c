/* MPI_Comm_free with operations still pending on the communicator: the standard says
 * they complete normally and the object goes only when they have. Here a large
 * MPI_Iallreduce (several pipeline chunks) and an MPI_Ibarrier are started, their
 * communicator freed at once, a new communicator created (which must not get the freed
 * one's context while those operations run) and used for a blocking MPI_Allreduce and
 * messages, and only then are the pending requests waited for. Ranks are delayed in turn
 * so that the pending operations are in different states at the free. Every result is
 * compared with the sum computed here. Finally 3000 create/free rounds check that freed
 * communicators do give their contexts back. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size, failures;

#define CHECK(cond, ...)                                                            \
    do {                                                                            \
        if (!(cond)) {                                                              \
            if (failures++ < 10) {                                                  \
                fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                                       \
                fprintf(stderr, "\n");                                              \
            }                                                                       \
        }                                                                           \
    } while (0)

static void spin(long k) {
    volatile double x = 0;
    for (long i = 0; i < k; i++) x += (double)i;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = 300000; /* 2.4 MB of doubles: more than two 1 MiB chunks */
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    for (int i = 0; i < n; i++) a[i] = rank + (double)(i % 1000);
    for (int it = 0; it < 12; it++) {
        MPI_Comm c, d;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        if (rank == it % size) spin(200000 * (it % 3));
        MPI_Request q[2];
        for (int i = 0; i < n; i++) b[i] = -1;
        MPI_Iallreduce(a, b, n, MPI_DOUBLE, MPI_SUM, c, &q[0]);
        MPI_Ibarrier(c, &q[1]);
        MPI_Comm_free(&c);
        CHECK(c == MPI_COMM_NULL, "MPI_Comm_free did not set the handle to MPI_COMM_NULL");
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        /* a different collective on the new communicator while the old ones run */
        long x = rank + 1, s = 0;
        MPI_Allreduce(&x, &s, 1, MPI_LONG, MPI_SUM, d);
        CHECK(s == (long)size * (size + 1) / 2, "round %d: allreduce on the new communicator gave %ld", it, s);
        int token = 100 * it + rank, got = -1;
        MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % size, 7, &got, 1, MPI_INT, (rank + size - 1) % size, 7, d,
                     MPI_STATUS_IGNORE);
        CHECK(got == 100 * it + (rank + size - 1) % size, "round %d: message on the new communicator: %d", it, got);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        int bad = -1;
        for (int i = 0; i < n && bad < 0; i++) {
            double want = (double)size * (size - 1) / 2 + (double)size * (double)(i % 1000);
            if (b[i] != want) bad = i;
        }
        CHECK(bad < 0, "round %d: pending MPI_Iallreduce on the freed communicator: element %d is %g", it,
              bad, bad < 0 ? 0.0 : b[bad]);
        MPI_Comm_free(&d);
    }
    /* Freed communicators give their contexts back (there are far fewer than 3000). */
    for (int it = 0; it < 3000; it++) {
        MPI_Comm c;
        MPI_Request q;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Ibarrier(c, &q);
        MPI_Comm_free(&c);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    free(a);
    free(b);
    int all;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("comm_free_pending: np=%d: %s (%d failures)\n", size, all ? "FAILED" : "ok", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
