/* Blocking point-to-point basics: MPI_Send/MPI_Recv of int, double and char arrays in a
 * ring and between all pairs, for sizes from 0 elements up to 4 MiB (eager and
 * rendezvous paths, several pipe segments); MPI_ANY_SOURCE/MPI_ANY_TAG with the status
 * fields checked; MPI_Get_count (including MPI_UNDEFINED); MPI_PROC_NULL as source and
 * destination. Every received element is compared against a value recomputed from the
 * sender's rank and the element index. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank = -1;

#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "p2p_basic: rank %d: %s:%d: check failed: %s: ", g_rank, \
                    __FILE__, __LINE__, #cond);                                       \
            fprintf(stderr, __VA_ARGS__);                                             \
            fprintf(stderr, "\n");                                                    \
            fflush(stderr);                                                           \
            MPI_Abort(MPI_COMM_WORLD, 1);                                             \
        }                                                                             \
    } while (0)

enum { T_INT, T_DOUBLE, T_CHAR, NTYPES };
static const char *type_name[NTYPES] = {"MPI_INT", "MPI_DOUBLE", "MPI_CHAR"};

static MPI_Datatype mpi_type(int t) {
    return t == T_INT ? MPI_INT : t == T_DOUBLE ? MPI_DOUBLE : MPI_CHAR;
}

static size_t elem_size(int t) {
    return t == T_INT ? sizeof(int) : t == T_DOUBLE ? sizeof(double) : sizeof(char);
}

/* The value of element i of a message from `src` with salt `salt`. */
static int val_int(int src, int salt, long i) { return src * 1000003 + salt * 7919 + (int)(i % 999983); }
static double val_double(int src, int salt, long i) { return src + 0.25 * salt + 0.5 * (double)i; }
static char val_char(int src, int salt, long i) { return (char)(' ' + (src * 31 + salt * 5 + i) % 90); }

static void fill(int t, void *buf, long n, int src, int salt) {
    for (long i = 0; i < n; i++) {
        if (t == T_INT) ((int *)buf)[i] = val_int(src, salt, i);
        else if (t == T_DOUBLE) ((double *)buf)[i] = val_double(src, salt, i);
        else ((char *)buf)[i] = val_char(src, salt, i);
    }
}

/* Returns the index of the first wrong element, or -1. */
static long verify(int t, const void *buf, long n, int src, int salt) {
    for (long i = 0; i < n; i++) {
        int ok;
        if (t == T_INT) ok = ((const int *)buf)[i] == val_int(src, salt, i);
        else if (t == T_DOUBLE) ok = ((const double *)buf)[i] == val_double(src, salt, i);
        else ok = ((const char *)buf)[i] == val_char(src, salt, i);
        if (!ok) return i;
    }
    return -1;
}

static void check_recv(int t, const void *buf, long n, int src, int tag, int salt,
                       const MPI_Status *st, const char *what) {
    int count = -1;
    CHECK(st->MPI_SOURCE == src, "%s: status.MPI_SOURCE %d, expected %d", what, st->MPI_SOURCE, src);
    CHECK(st->MPI_TAG == tag, "%s: status.MPI_TAG %d, expected %d", what, st->MPI_TAG, tag);
    CHECK(MPI_Get_count(st, mpi_type(t), &count) == MPI_SUCCESS, "%s: MPI_Get_count failed", what);
    CHECK(count == n, "%s: MPI_Get_count %d, expected %ld", what, count, n);
    long bad = verify(t, buf, n, src, salt);
    CHECK(bad < 0, "%s: %s element %ld of %ld is wrong", what, type_name[t], bad, n);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_rank = rank;

    const long big_bytes = 4L << 20;
    const long sizes[] = {0, 1, 7, 1000, 100000, -1 /* 4 MiB worth of elements */};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    char what[160];

    /* ---- ring: rank r sends to r+1 and receives from r-1 */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int t = 0; t < NTYPES; t++) {
        for (int s = 0; s < nsizes; s++) {
            long n = sizes[s] >= 0 ? sizes[s] : big_bytes / (long)elem_size(t);
            size_t bytes = (size_t)n * elem_size(t);
            void *sbuf = malloc(bytes + 1), *rbuf = malloc(bytes + 1);
            CHECK(sbuf && rbuf, "out of memory");
            int salt = t * 10 + s, tag = 100 + salt;
            fill(t, sbuf, n, rank, salt);
            memset(rbuf, 0xEE, bytes + 1);
            MPI_Status st;
            memset(&st, 0, sizeof st);
            if (size == 1) {
                /* A blocking send to oneself may wait for the receive: post it first. */
                MPI_Request req;
                MPI_Irecv(rbuf, (int)n, mpi_type(t), left, tag, MPI_COMM_WORLD, &req);
                CHECK(MPI_Send(sbuf, (int)n, mpi_type(t), right, tag, MPI_COMM_WORLD) == MPI_SUCCESS, "send to self");
                MPI_Wait(&req, &st);
            } else if (rank % 2 == 0) {
                CHECK(MPI_Send(sbuf, (int)n, mpi_type(t), right, tag, MPI_COMM_WORLD) == MPI_SUCCESS, "send");
                CHECK(MPI_Recv(rbuf, (int)n, mpi_type(t), left, tag, MPI_COMM_WORLD, &st) == MPI_SUCCESS, "recv");
            } else {
                CHECK(MPI_Recv(rbuf, (int)n, mpi_type(t), left, tag, MPI_COMM_WORLD, &st) == MPI_SUCCESS, "recv");
                CHECK(MPI_Send(sbuf, (int)n, mpi_type(t), right, tag, MPI_COMM_WORLD) == MPI_SUCCESS, "send");
            }
            snprintf(what, sizeof what, "ring %s n=%ld from %d", type_name[t], n, left);
            check_recv(t, rbuf, n, left, tag, salt, &st, what);
            CHECK((unsigned char)((char *)rbuf)[bytes] == 0xEE, "%s: wrote past the message end", what);
            free(sbuf);
            free(rbuf);
        }
    }

    /* ---- all pairs: every pair (i<j) exchanges in one global order (i sends first) */
    {
        const long pair_sizes[] = {0, 7, 1000, 100000};
        for (int t = 0; t < NTYPES; t++) {
            for (int s = 0; s < 4; s++) {
                long n = pair_sizes[s];
                size_t bytes = (size_t)n * elem_size(t);
                void *sbuf = malloc(bytes + 1), *rbuf = malloc(bytes + 1);
                CHECK(sbuf && rbuf, "out of memory");
                int salt = 50 + t * 10 + s;
                fill(t, sbuf, n, rank, salt);
                for (int i = 0; i < size; i++) {
                    for (int j = i + 1; j < size; j++) {
                        if (rank != i && rank != j) continue;
                        int peer = rank == i ? j : i;
                        int tag = 1000 + i * size + j;
                        MPI_Status st;
                        memset(rbuf, 0xEE, bytes + 1);
                        if (rank == i) {
                            MPI_Send(sbuf, (int)n, mpi_type(t), peer, tag, MPI_COMM_WORLD);
                            MPI_Recv(rbuf, (int)n, mpi_type(t), peer, tag, MPI_COMM_WORLD, &st);
                        } else {
                            MPI_Recv(rbuf, (int)n, mpi_type(t), peer, tag, MPI_COMM_WORLD, &st);
                            MPI_Send(sbuf, (int)n, mpi_type(t), peer, tag, MPI_COMM_WORLD);
                        }
                        snprintf(what, sizeof what, "pair (%d,%d) %s n=%ld", i, j, type_name[t], n);
                        check_recv(t, rbuf, n, peer, tag, salt, &st, what);
                    }
                }
                free(sbuf);
                free(rbuf);
            }
        }
    }

    /* ---- MPI_ANY_SOURCE / MPI_ANY_TAG: rank r>0 sends r+1 ints with tag 10+r to rank 0 */
    if (rank != 0) {
        int *b = malloc((size_t)(rank + 1) * sizeof *b);
        for (int i = 0; i <= rank; i++) b[i] = rank * 100 + i;
        MPI_Send(b, rank + 1, MPI_INT, 0, 10 + rank, MPI_COMM_WORLD);
        free(b);
    } else {
        int *b = malloc((size_t)(size + 1) * sizeof *b);
        int *seen = calloc((size_t)size, sizeof *seen);
        for (int k = 1; k < size; k++) {
            MPI_Status st;
            for (int i = 0; i <= size; i++) b[i] = -1;
            CHECK(MPI_Recv(b, size + 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st) == MPI_SUCCESS,
                  "wildcard receive");
            int src = st.MPI_SOURCE, count = -1;
            CHECK(src >= 1 && src < size, "wildcard: status.MPI_SOURCE %d out of range", src);
            CHECK(!seen[src], "wildcard: message from %d received twice", src);
            seen[src] = 1;
            CHECK(st.MPI_TAG == 10 + src, "wildcard: status.MPI_TAG %d, expected %d", st.MPI_TAG, 10 + src);
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK(count == src + 1, "wildcard: count %d, expected %d", count, src + 1);
            for (int i = 0; i <= src; i++)
                CHECK(b[i] == src * 100 + i, "wildcard: element %d is %d, expected %d", i, b[i], src * 100 + i);
            CHECK(b[src + 1] == -1, "wildcard: wrote past the message end");
            /* The same status seen as bytes and as a type that does not divide it. */
            MPI_Get_count(&st, MPI_CHAR, &count);
            CHECK(count == (src + 1) * (int)sizeof(int), "wildcard: count in MPI_CHAR %d", count);
            MPI_Get_count(&st, MPI_DOUBLE, &count);
            if (((src + 1) * sizeof(int)) % sizeof(double) != 0)
                CHECK(count == MPI_UNDEFINED, "Get_count of %d ints as MPI_DOUBLE is %d, expected MPI_UNDEFINED",
                      src + 1, count);
            else
                CHECK(count == (int)((src + 1) * sizeof(int) / sizeof(double)), "count as MPI_DOUBLE %d", count);
        }
        free(b);
        free(seen);
    }

    /* ---- wildcard tag with a fixed source, and a zero-length wildcard message (after a
     * barrier, so that the wildcard receives above cannot match it) */
    MPI_Barrier(MPI_COMM_WORLD);
    if (size > 1) {
        if (rank == 1) {
            MPI_Send(NULL, 0, MPI_INT, 0, 4242, MPI_COMM_WORLD);
        } else if (rank == 0) {
            MPI_Status st;
            int count = -1;
            CHECK(MPI_Recv(NULL, 0, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st) == MPI_SUCCESS, "empty recv");
            CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 4242, "empty message: source %d tag %d", st.MPI_SOURCE,
                  st.MPI_TAG);
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK(count == 0, "empty message count %d", count);
        }
    }

    /* ---- MPI_PROC_NULL */
    {
        int b[5] = {1, 2, 3, 4, 5};
        MPI_Status st;
        int count = -1;
        CHECK(MPI_Send(b, 5, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD) == MPI_SUCCESS, "send to MPI_PROC_NULL");
        st.MPI_SOURCE = 12345;
        st.MPI_TAG = 12345;
        CHECK(MPI_Recv(b, 5, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st) == MPI_SUCCESS, "recv from MPI_PROC_NULL");
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "PROC_NULL recv: source %d", st.MPI_SOURCE);
        CHECK(st.MPI_TAG == MPI_ANY_TAG, "PROC_NULL recv: tag %d, expected MPI_ANY_TAG", st.MPI_TAG);
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == 0, "PROC_NULL recv: count %d", count);
        for (int i = 0; i < 5; i++) CHECK(b[i] == i + 1, "PROC_NULL recv modified the buffer");
    }

    /* Every rank reached the end: agree on it with a reduction. */
    int one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == size, "final allreduce %d, expected %d", total, size);
    if (rank == 0) printf("p2p_basic: OK on %d processes\n", size);
    MPI_Finalize();
    return 0;
}
