/* Message ordering and send modes.
 *  - non-overtaking: many messages of mixed sizes (eager and rendezvous) with the same
 *    (source, tag) arrive in the order sent, also through MPI_ANY_SOURCE;
 *  - messages with different tags may be received out of order: Isend tag A then tag B,
 *    the receiver takes B first (large A / small B, small A / large B, both large);
 *  - MPI_Ssend, MPI_Issend (which must not complete before the receive is posted),
 *    MPI_Rsend/MPI_Irsend to a posted receive;
 *  - MPI_Bsend/MPI_Ibsend with MPI_Buffer_attach/detach, sends completing before the
 *    receiver posts anything; MPI_Bsend with no or too small a buffer returns an error
 *    of class MPI_ERR_BUFFER under MPI_ERRORS_RETURN;
 *  - a blocking MPI_Send after sends still queued in the library arrives after them. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank = -1;

#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "p2p_order: rank %d: %s:%d: check failed: %s: ", g_rank, \
                    __FILE__, __LINE__, #cond);                                       \
            fprintf(stderr, __VA_ARGS__);                                             \
            fprintf(stderr, "\n");                                                    \
            fflush(stderr);                                                           \
            MPI_Abort(MPI_COMM_WORLD, 1);                                             \
        }                                                                             \
    } while (0)

static int val(int src, int msg, int i) { return src * 1000000 + msg * 1000 + (i % 997); }

static void fill(int *b, int n, int src, int msg) {
    for (int i = 0; i < n; i++) b[i] = val(src, msg, i);
}

static void verify(const int *b, int n, int src, int msg, const char *what) {
    for (int i = 0; i < n; i++)
        CHECK(b[i] == val(src, msg, i), "%s: element %d of %d is %d, expected %d", what, i, n, b[i],
              val(src, msg, i));
}

static void check_status(const MPI_Status *st, int src, int tag, int n, const char *what) {
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    CHECK(st->MPI_SOURCE == src, "%s: source %d, expected %d", what, st->MPI_SOURCE, src);
    CHECK(st->MPI_TAG == tag, "%s: tag %d, expected %d", what, st->MPI_TAG, tag);
    CHECK(count == n, "%s: count %d, expected %d", what, count, n);
}

/* Length of message number m in the ordering stream: mostly tiny, every fifth one larger
 * than the eager limit, so both protocols interleave on the same (source, tag). */
static int stream_len(int m) { return m % 5 == 4 ? 6000 + m : 1 + m % 3; }

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_rank = rank;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    char what[128];

    /* ---- 1. non-overtaking along the ring, same tag, mixed protocols */
    {
        enum { M = 120 };
        int *sb[M];
        MPI_Request rq[M];
        int maxlen = stream_len(M - 1) + 10;
        int *rb = malloc((size_t)maxlen * sizeof *rb);
        for (int m = 0; m < M; m++) {
            sb[m] = malloc((size_t)stream_len(m) * sizeof(int));
            fill(sb[m], stream_len(m), rank, m);
            MPI_Isend(sb[m], stream_len(m), MPI_INT, right, 5, MPI_COMM_WORLD, &rq[m]);
        }
        for (int m = 0; m < M; m++) {
            MPI_Status st;
            MPI_Recv(rb, maxlen, MPI_INT, left, 5, MPI_COMM_WORLD, &st);
            snprintf(what, sizeof what, "ordered stream message %d", m);
            check_status(&st, left, 5, stream_len(m), what);
            verify(rb, stream_len(m), left, m, what);
        }
        MPI_Status sst[M]; /* (MPI_STATUSES_IGNORE trips gcc 12's -Wstringop-overflow here) */
        MPI_Waitall(M, rq, sst);
        for (int m = 0; m < M; m++) free(sb[m]);
        free(rb);
    }

    /* ---- 2. non-overtaking per source through MPI_ANY_SOURCE at rank 0 */
    MPI_Barrier(MPI_COMM_WORLD);
    {
        enum { M = 40 };
        if (rank != 0) {
            for (int m = 0; m < M; m++) {
                int n = stream_len(m);
                int *b = malloc((size_t)n * sizeof *b);
                fill(b, n, rank, m);
                MPI_Send(b, n, MPI_INT, 0, 6, MPI_COMM_WORLD);
                free(b);
            }
        } else {
            int *next = calloc((size_t)size, sizeof *next);
            int maxlen = stream_len(M - 1) + 10;
            int *rb = malloc((size_t)maxlen * sizeof *rb);
            for (int k = 0; k < M * (size - 1); k++) {
                MPI_Status st;
                MPI_Recv(rb, maxlen, MPI_INT, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, &st);
                int src = st.MPI_SOURCE;
                CHECK(src > 0 && src < size, "any-source stream: source %d", src);
                CHECK(next[src] < M, "any-source stream: too many messages from %d", src);
                snprintf(what, sizeof what, "any-source stream message %d from %d", next[src], src);
                check_status(&st, src, 6, stream_len(next[src]), what);
                verify(rb, stream_len(next[src]), src, next[src], what);
                next[src]++;
            }
            for (int s = 1; s < size; s++) CHECK(next[s] == M, "got %d messages from %d", next[s], s);
            free(next);
            free(rb);
        }
    }

    /* ---- 3. different tags received out of order: Isend A then B, receive B then A */
    MPI_Barrier(MPI_COMM_WORLD);
    {
        const int cases[3][2] = {{1 << 20, 3}, {3, 1 << 20}, {300000, 200000}};
        for (int c = 0; c < 3; c++) {
            int na = cases[c][0], nb = cases[c][1];
            int *sa = malloc((size_t)na * sizeof *sa), *sbb = malloc((size_t)nb * sizeof *sbb);
            int *ra = malloc((size_t)na * sizeof *ra), *rbb = malloc((size_t)nb * sizeof *rbb);
            fill(sa, na, rank, 2 * c);
            fill(sbb, nb, rank, 2 * c + 1);
            MPI_Request rq[2];
            MPI_Status st;
            MPI_Isend(sa, na, MPI_INT, right, 100 + c, MPI_COMM_WORLD, &rq[0]);
            MPI_Isend(sbb, nb, MPI_INT, right, 200 + c, MPI_COMM_WORLD, &rq[1]);
            MPI_Recv(rbb, nb, MPI_INT, left, 200 + c, MPI_COMM_WORLD, &st);
            snprintf(what, sizeof what, "out-of-order case %d: tag B", c);
            check_status(&st, left, 200 + c, nb, what);
            verify(rbb, nb, left, 2 * c + 1, what);
            MPI_Recv(ra, na, MPI_INT, left, 100 + c, MPI_COMM_WORLD, &st);
            snprintf(what, sizeof what, "out-of-order case %d: tag A", c);
            check_status(&st, left, 100 + c, na, what);
            verify(ra, na, left, 2 * c, what);
            MPI_Status sst[2];
            MPI_Waitall(2, rq, sst);
            free(sa);
            free(sbb);
            free(ra);
            free(rbb);
        }
    }

    /* ---- 4. MPI_Ssend (eager-sized and large) in the ring */
    MPI_Barrier(MPI_COMM_WORLD);
    {
        const int ns[3] = {0, 10, 200000};
        for (int c = 0; c < 3; c++) {
            int n = ns[c];
            int *s = malloc((size_t)n * sizeof *s + 1), *r = malloc((size_t)n * sizeof *r + 1);
            fill(s, n, rank, 30 + c);
            MPI_Status st;
            if (size == 1) {
                MPI_Request rr;
                MPI_Irecv(r, n, MPI_INT, 0, 7, MPI_COMM_WORLD, &rr);
                CHECK(MPI_Ssend(s, n, MPI_INT, 0, 7, MPI_COMM_WORLD) == MPI_SUCCESS, "Ssend to self");
                MPI_Wait(&rr, &st);
            } else if (rank % 2 == 0) {
                CHECK(MPI_Ssend(s, n, MPI_INT, right, 7, MPI_COMM_WORLD) == MPI_SUCCESS, "Ssend");
                MPI_Recv(r, n, MPI_INT, left, 7, MPI_COMM_WORLD, &st);
            } else {
                MPI_Recv(r, n, MPI_INT, left, 7, MPI_COMM_WORLD, &st);
                CHECK(MPI_Ssend(s, n, MPI_INT, right, 7, MPI_COMM_WORLD) == MPI_SUCCESS, "Ssend");
            }
            snprintf(what, sizeof what, "Ssend n=%d", n);
            check_status(&st, left, 7, n, what);
            verify(r, n, left, 30 + c, what);
            free(s);
            free(r);
        }
    }

    /* ---- 5. MPI_Issend does not complete before the matching receive is posted */
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int s[4], r[4] = {0, 0, 0, 0}, flag = 1;
        fill(s, 4, rank, 40);
        MPI_Request rq;
        MPI_Status st;
        MPI_Issend(s, 4, MPI_INT, right, 8, MPI_COMM_WORLD, &rq);
        double t0 = MPI_Wtime();
        while (MPI_Wtime() - t0 < 0.05) {
            MPI_Test(&rq, &flag, &st);
            CHECK(!flag, "MPI_Issend completed before the receiver posted its receive");
        }
        MPI_Barrier(MPI_COMM_WORLD); /* only now do the receivers post */
        MPI_Recv(r, 4, MPI_INT, left, 8, MPI_COMM_WORLD, &st);
        check_status(&st, left, 8, 4, "Issend");
        verify(r, 4, left, 40, "Issend");
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK(rq == MPI_REQUEST_NULL, "request not freed by MPI_Wait");
    }

    /* ---- 6. MPI_Rsend / MPI_Irsend to receives posted before a barrier */
    MPI_Barrier(MPI_COMM_WORLD);
    {
        const int n1 = 5, n2 = 50000;
        int *r1 = malloc((size_t)n1 * sizeof *r1), *r2 = malloc((size_t)n2 * sizeof *r2);
        int *s1 = malloc((size_t)n1 * sizeof *s1), *s2 = malloc((size_t)n2 * sizeof *s2);
        fill(s1, n1, rank, 50);
        fill(s2, n2, rank, 51);
        MPI_Request rr[2], sr;
        MPI_Status st[2];
        MPI_Irecv(r1, n1, MPI_INT, left, 9, MPI_COMM_WORLD, &rr[0]);
        MPI_Irecv(r2, n2, MPI_INT, left, 10, MPI_COMM_WORLD, &rr[1]);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Irsend(s2, n2, MPI_INT, right, 10, MPI_COMM_WORLD, &sr);
        CHECK(MPI_Rsend(s1, n1, MPI_INT, right, 9, MPI_COMM_WORLD) == MPI_SUCCESS, "Rsend");
        MPI_Waitall(2, rr, st);
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
        check_status(&st[0], left, 9, n1, "Rsend");
        verify(r1, n1, left, 50, "Rsend");
        check_status(&st[1], left, 10, n2, "Irsend");
        verify(r2, n2, left, 51, "Irsend");
        free(r1);
        free(r2);
        free(s1);
        free(s2);
    }

    /* ---- 7. buffered sends complete before the receiver posts anything */
    MPI_Barrier(MPI_COMM_WORLD);
    {
        enum { K = 6 };
        const int ns[K] = {1, 0, 100, 5000, 262144, 17};
        int total = 0;
        for (int k = 0; k < K; k++) total += ns[k] * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
        char *pool = malloc((size_t)total);
        CHECK(MPI_Buffer_attach(pool, total) == MPI_SUCCESS, "Buffer_attach");
        int *s = malloc(262144 * sizeof *s), *r = malloc(262144 * sizeof *r);
        MPI_Request ib;
        for (int k = 0; k < K; k++) {
            fill(s, ns[k], rank, 60 + k);
            if (k == 2) { /* (a large MPI_Ibsend is covered by p2p_ibsend) */
                CHECK(MPI_Ibsend(s, ns[k], MPI_INT, right, 20 + k, MPI_COMM_WORLD, &ib) == MPI_SUCCESS, "Ibsend");
                MPI_Wait(&ib, MPI_STATUS_IGNORE); /* completes locally: the data is in the pool */
            } else {
                CHECK(MPI_Bsend(s, ns[k], MPI_INT, right, 20 + k, MPI_COMM_WORLD) == MPI_SUCCESS, "Bsend %d", k);
            }
            /* The send buffer may be reused at once: scribble on it. */
            memset(s, 0x5A, (size_t)ns[k] * sizeof(int));
        }
        MPI_Barrier(MPI_COMM_WORLD); /* every Bsend returned before any receive was posted */
        for (int k = K - 1; k >= 0; k--) { /* in reverse tag order, for good measure */
            MPI_Status st;
            MPI_Recv(r, ns[k], MPI_INT, left, 20 + k, MPI_COMM_WORLD, &st);
            snprintf(what, sizeof what, "Bsend message %d (n=%d)", k, ns[k]);
            check_status(&st, left, 20 + k, ns[k], what);
            verify(r, ns[k], left, 60 + k, what);
        }
        void *back = NULL;
        int back_size = -1;
        CHECK(MPI_Buffer_detach(&back, &back_size) == MPI_SUCCESS, "Buffer_detach");
        CHECK(back == (void *)pool, "Buffer_detach returned %p, expected %p", back, (void *)pool);
        CHECK(back_size == total, "Buffer_detach size %d, expected %d", back_size, total);
        free(pool);
        free(s);
        free(r);
    }

    /* ---- 8. MPI_Bsend without a buffer and with too small a buffer: MPI_ERR_BUFFER */
    MPI_Barrier(MPI_COMM_WORLD);
    {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int s[1000], cls = -1, flag = 0;
        fill(s, 1000, rank, 70);
        int rc = MPI_Bsend(s, 1000, MPI_INT, rank, 30, MPI_COMM_WORLD);
        CHECK(rc != MPI_SUCCESS, "MPI_Bsend with no attached buffer succeeded");
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_BUFFER, "MPI_Bsend with no buffer: class %d, expected MPI_ERR_BUFFER (%d)", cls,
              MPI_ERR_BUFFER);

        int small = 100 * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
        char *pool = malloc((size_t)small);
        MPI_Buffer_attach(pool, small);
        rc = MPI_Bsend(s, 1000, MPI_INT, rank, 31, MPI_COMM_WORLD);
        CHECK(rc != MPI_SUCCESS, "MPI_Bsend of 4000 bytes into a %d-byte buffer succeeded", small);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_BUFFER, "MPI_Bsend too large: class %d, expected MPI_ERR_BUFFER (%d)", cls,
              MPI_ERR_BUFFER);
        /* A message that fits still goes through the same buffer. */
        rc = MPI_Bsend(s, 100, MPI_INT, rank, 32, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "MPI_Bsend that fits failed with %d", rc);
        int r[100];
        MPI_Status st;
        MPI_Recv(r, 100, MPI_INT, rank, 32, MPI_COMM_WORLD, &st);
        check_status(&st, rank, 32, 100, "Bsend after error");
        verify(r, 100, rank, 70, "Bsend after error");
        void *back;
        int back_size;
        MPI_Buffer_detach(&back, &back_size);
        CHECK(back == (void *)pool && back_size == small, "Buffer_detach after errors");
        free(pool);
        /* The failed sends must not have delivered anything. */
        MPI_Iprobe(rank, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        CHECK(!flag, "a failed MPI_Bsend delivered a message (tag %d)", st.MPI_TAG);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }

    /* ---- 7. a blocking send does not overtake the sends queued before it: rank 0
     * starts more small sends to rank 1 than the ring between them holds while rank 1
     * is busy outside MPI (so the rest stay queued in rank 0's library), rank 1 then
     * empties the ring while rank 0 is busy outside MPI, and rank 0 sends one more with
     * MPI_Send; rank 1 must receive them all in the order sent. */
    if (size >= 2) {
        enum { Q = 300, L = 256 }; /* 300 messages of 1 KiB, the ring holds 64 KiB */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (rank == 0) {
            int *sb = malloc((size_t)Q * L * sizeof *sb), last[L];
            MPI_Request *rq = malloc(Q * sizeof *rq);
            for (int m = 0; m < Q; m++) {
                fill(sb + (size_t)m * L, L, 0, m);
                MPI_Isend(sb + (size_t)m * L, L, MPI_INT, 1, 9, MPI_COMM_WORLD, &rq[m]);
            }
            while (MPI_Wtime() - t0 < 0.4)
                ;
            fill(last, L, 0, Q);
            MPI_Send(last, L, MPI_INT, 1, 9, MPI_COMM_WORLD);
            MPI_Status *sst = malloc(Q * sizeof *sst);
            MPI_Waitall(Q, rq, sst);
            free(sst);
            free(sb);
            free(rq);
        } else if (rank == 1) {
            int rb[L];
            while (MPI_Wtime() - t0 < 0.2)
                ;
            for (int m = 0; m <= Q; m++) {
                MPI_Status st;
                MPI_Recv(rb, L, MPI_INT, 0, 9, MPI_COMM_WORLD, &st);
                snprintf(what, sizeof what, "message %d after queued sends", m);
                verify(rb, L, 0, m, what);
            }
        }
    }

    int one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == size, "final allreduce %d, expected %d", total, size);
    if (rank == 0) printf("p2p_order: OK on %d processes\n", size);
    MPI_Finalize();
    return 0;
}
