/* MPI_Bcast through the ring of coll/ring.rs (the root runs ahead of the receivers until
 * the ring is full). Run with tiny slots (SHMPI_SEGMENT) so that the ring wraps every few
 * calls, and with SHMPI_BCAST_RING=1 so that it is taken at every process count:
 * - back-to-back broadcasts of sizes from 1 byte to several rings, roots changing, a
 *   receiver that sleeps now and then (the root must wait for room, not overwrite);
 * - small broadcasts (posted steps) and ordinary collectives in between;
 * - several MPI_Ibcast outstanding at once, with different roots, and a persistent
 *   MPI_Bcast_init started repeatedly;
 * - a strided derived datatype; a split communicator; MPI_ERRORS_RETURN.
 * Every received byte is compared with the pattern the root wrote. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, bad;

#define CHECK(c, ...)                                                                    \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            if (bad++ < 10) {                                                            \
                fprintf(stderr, "rank %d: ", rank);                                      \
                fprintf(stderr, __VA_ARGS__);                                            \
                fprintf(stderr, "\n");                                                   \
            }                                                                            \
        }                                                                                \
    } while (0)

static unsigned char pat(long call, long i) { return (unsigned char)(call * 131 + i * 7 + (i >> 9)); }

static void fill(unsigned char *b, long n, long call) {
    for (long i = 0; i < n; i++) b[i] = pat(call, i);
}

static long wrong(const unsigned char *b, long n, long call) {
    for (long i = 0; i < n; i++)
        if (b[i] != pat(call, i)) return i;
    return -1;
}

/* One broadcast of n bytes from root on comm, checked (call numbers the pattern). */
static void one(MPI_Comm comm, unsigned char *b, long n, int root, long call) {
    int me;
    MPI_Comm_rank(comm, &me);
    if (me == root) fill(b, n, call);
    else memset(b, 0xee, (size_t)n);
    MPI_Bcast(b, (int)n, MPI_BYTE, root, comm);
    long w = wrong(b, n, call);
    CHECK(w < 0, "call %ld: %ld bytes from root %d: byte %ld wrong", call, n, root, w);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long maxn = 3 << 20;
    unsigned char *b = malloc((size_t)maxn);
    long call = 0;

    /* 1. Sizes from 1 byte up, roots changing, sleeps on one receiver. */
    long sizes[] = {1, 63, 64, 65, 1000, 4096, 8191, 8192, 8193, 20000, 65536, 100001, 1 << 20, 3 << 20};
    int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    for (int rep = 0; rep < 3; rep++)
        for (int k = 0; k < nsizes; k++)
            for (int root = 0; root < size; root++) {
                if (rank == (root + 1) % size && (k + root) % 3 == 0) usleep(2000);
                one(MPI_COMM_WORLD, b, sizes[k], root, ++call);
            }

    /* 2. A long run from one root with a slow receiver: the root fills the ring and
     *    must wait for room. */
    for (int i = 0; i < 200; i++) {
        if (rank == size - 1 && i % 40 == 0) usleep(20000);
        one(MPI_COMM_WORLD, b, 3000 + 17 * i, 0, ++call);
    }

    /* 3. Interleaved with small broadcasts and ordinary collectives. */
    for (int i = 0; i < 100; i++) {
        int root = i % size;
        one(MPI_COMM_WORLD, b, 5000 + 31 * i, root, ++call);
        int small[4] = {0, 0, 0, 0};
        if (rank == root) for (int j = 0; j < 4; j++) small[j] = i * 10 + j;
        MPI_Bcast(small, 4, MPI_INT, root, MPI_COMM_WORLD);
        for (int j = 0; j < 4; j++) CHECK(small[j] == i * 10 + j, "small bcast %d", i);
        if (i % 3 == 0) {
            long x = rank + i, s = 0;
            MPI_Allreduce(&x, &s, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            CHECK(s == (long)size * (size - 1) / 2 + (long)size * i, "allreduce %d", i);
        }
        if (i % 7 == 0) MPI_Barrier(MPI_COMM_WORLD);
    }

    /* 4. Several MPI_Ibcast at once, different roots, then a persistent broadcast. */
    {
        enum { K = 6 };
        long n = 40000;
        unsigned char *bufs = malloc((size_t)(K * n));
        MPI_Request rq[K];
        for (int round = 0; round < 5; round++) {
            for (int k = 0; k < K; k++) {
                int root = (k + round) % size;
                if (rank == root) fill(bufs + k * n, n, call + k);
                else memset(bufs + k * n, 0, (size_t)n);
                MPI_Ibcast(bufs + k * n, (int)n, MPI_BYTE, root, MPI_COMM_WORLD, &rq[k]);
            }
            MPI_Waitall(K, rq, MPI_STATUSES_IGNORE);
            for (int k = 0; k < K; k++) {
                long w = wrong(bufs + k * n, n, call + k);
                CHECK(w < 0, "Ibcast %d of round %d: byte %ld wrong", k, round, w);
            }
            call += K;
        }
        MPI_Request p;
        MPI_Bcast_init(b, 70000, MPI_BYTE, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &p);
        for (int i = 0; i < 10; i++) {
            ++call;
            if (rank == size - 1) fill(b, 70000, call);
            else memset(b, 0, 70000);
            MPI_Start(&p);
            MPI_Wait(&p, MPI_STATUS_IGNORE);
            long w = wrong(b, 70000, call);
            CHECK(w < 0, "persistent broadcast %d: byte %ld wrong", i, w);
        }
        MPI_Request_free(&p);
        free(bufs);
    }

    /* 5. A strided type: every other double of 2n. */
    {
        int n = 9000;
        double *d = malloc(sizeof(double) * 2 * (size_t)n);
        MPI_Datatype vec;
        MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &vec);
        MPI_Type_commit(&vec);
        for (int i = 0; i < 2 * n; i++) d[i] = rank == 1 % size ? i * 0.5 : -1.0;
        MPI_Bcast(d, 1, vec, 1 % size, MPI_COMM_WORLD);
        for (int i = 0; i < 2 * n; i++) {
            double want = (i % 2 == 0 || rank == 1 % size) ? i * 0.5 : -1.0;
            if (d[i] != want) {
                CHECK(0, "strided broadcast: element %d is %g, not %g", i, d[i], want);
                break;
            }
        }
        MPI_Type_free(&vec);
        free(d);
    }

    /* 6. A split communicator (odd and even ranks) with MPI_ERRORS_RETURN, alternating
     *    with the world. */
    {
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
        int hs;
        MPI_Comm_size(half, &hs);
        for (int i = 0; i < 50; i++) {
            one(half, b, 12000 + 101 * i, i % hs, ++call);
            if (i % 5 == 0) one(MPI_COMM_WORLD, b, 9000 + i, i % size, ++call);
        }
        MPI_Comm_free(&half);
    }

    int all;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("bcast_ring: np=%d: %s\n", size, all ? "FAILED" : "ok");
    free(b);
    MPI_Finalize();
    return all ? 1 : 0;
}
