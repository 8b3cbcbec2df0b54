/* Truncation: a receive buffer shorter than the incoming message, under
 * MPI_ERRORS_RETURN, makes the receive return an error of class MPI_ERR_TRUNCATE, both for
 * an eager-sized and for a large (rendezvous) message, through MPI_Recv, MPI_Irecv +
 * MPI_Wait and MPI_Irecv + MPI_Waitall, MPI_Testsome and MPI_Waitsome (MPI_ERR_IN_STATUS,
 * outcount, MPI_ERROR of the statuses). The library keeps working afterwards: following
 * exchanges deliver correct data. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int g_rank = -1;

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "p2p_truncate: rank %d: %s:%d: check failed: %s: ", g_rank, \
                    __FILE__, __LINE__, #cond);                                          \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n");                                                       \
            fflush(stderr);                                                              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                \
        }                                                                                \
    } while (0)

static int val(int src, int k, int i) { return src * 1000000 + k * 10000 + i % 9973; }

static int error_class(int rc) {
    int cls = -1;
    CHECK(MPI_Error_class(rc, &cls) == MPI_SUCCESS, "MPI_Error_class(%d) failed", rc);
    return cls;
}

/* A correct exchange around the ring, to show that the library still works. */
static void good_exchange(int rank, int size, int n, int k) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *s = malloc((size_t)n * sizeof *s), *r = malloc((size_t)n * sizeof *r);
    for (int i = 0; i < n; i++) s[i] = val(rank, k, i);
    MPI_Status st;
    int rc = MPI_Sendrecv(s, n, MPI_INT, right, 900 + k, r, n, MPI_INT, left, 900 + k, MPI_COMM_WORLD, &st);
    CHECK(rc == MPI_SUCCESS, "exchange after truncation failed with %d", rc);
    int count = -1;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == n && st.MPI_SOURCE == left, "exchange after truncation: count %d source %d", count,
          st.MPI_SOURCE);
    for (int i = 0; i < n; i++)
        CHECK(r[i] == val(left, k, i), "exchange after truncation: element %d is %d, expected %d", i, r[i],
              val(left, k, i));
    free(s);
    free(r);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    const int ns[2] = {10, 200000}; /* eager-sized and rendezvous-sized */
    for (int c = 0; c < 2; c++) {
        int n = ns[c], short_n = n / 2;
        int *s = malloc((size_t)n * sizeof *s), *r = malloc((size_t)n * sizeof *r);
        for (int i = 0; i < n; i++) s[i] = val(rank, c, i);

        /* 1. MPI_Recv into a half-size buffer */
        MPI_Request sr;
        MPI_Status st;
        MPI_Isend(s, n, MPI_INT, right, 10 + c, MPI_COMM_WORLD, &sr);
        int rc = MPI_Recv(r, short_n, MPI_INT, left, 10 + c, MPI_COMM_WORLD, &st);
        CHECK(rc != MPI_SUCCESS, "MPI_Recv of %d ints into room for %d succeeded", n, short_n);
        CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "MPI_Recv truncation (n=%d): class %d, expected MPI_ERR_TRUNCATE (%d)",
              n, error_class(rc), MPI_ERR_TRUNCATE);
        rc = MPI_Wait(&sr, MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS, "the sender of a truncated message got error %d", rc);
        good_exchange(rank, size, n, 10 * c + 1);

        /* 2. MPI_Irecv + MPI_Wait */
        MPI_Request rr;
        MPI_Irecv(r, short_n, MPI_INT, left, 20 + c, MPI_COMM_WORLD, &rr);
        MPI_Isend(s, n, MPI_INT, right, 20 + c, MPI_COMM_WORLD, &sr);
        rc = MPI_Wait(&rr, &st);
        CHECK(rc != MPI_SUCCESS, "Irecv+Wait of %d ints into room for %d succeeded", n, short_n);
        CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "Wait truncation (n=%d): class %d", n, error_class(rc));
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
        good_exchange(rank, size, n, 10 * c + 2);

        /* 3. MPI_Waitall: MPI_ERR_IN_STATUS and the class in the status' MPI_ERROR */
        MPI_Request rq[2];
        MPI_Status sts[2];
        MPI_Irecv(r, short_n, MPI_INT, left, 30 + c, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(s, n, MPI_INT, right, 30 + c, MPI_COMM_WORLD, &rq[1]);
        rc = MPI_Waitall(2, rq, sts);
        CHECK(rc != MPI_SUCCESS, "Waitall with a truncated receive succeeded");
        CHECK(error_class(rc) == MPI_ERR_IN_STATUS, "Waitall: class %d, expected MPI_ERR_IN_STATUS (%d)",
              error_class(rc), MPI_ERR_IN_STATUS);
        CHECK(error_class(sts[0].MPI_ERROR) == MPI_ERR_TRUNCATE, "Waitall: status[0].MPI_ERROR class %d",
              error_class(sts[0].MPI_ERROR));
        /* The send either completed (MPI_SUCCESS) or, if not, is MPI_ERR_PENDING. */
        if (sts[1].MPI_ERROR != MPI_SUCCESS) {
            CHECK(error_class(sts[1].MPI_ERROR) == MPI_ERR_PENDING, "Waitall: status[1].MPI_ERROR class %d",
                  error_class(sts[1].MPI_ERROR));
            MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
        }
        good_exchange(rank, size, n, 10 * c + 3);
        free(s);
        free(r);
    }

    /* A zero-size receive buffer for a one-element message */
    {
        int x = rank, y = -7;
        MPI_Request sr;
        MPI_Isend(&x, 1, MPI_INT, right, 40, MPI_COMM_WORLD, &sr);
        int rc = MPI_Recv(&y, 0, MPI_INT, left, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(rc != MPI_SUCCESS && error_class(rc) == MPI_ERR_TRUNCATE, "1 int into 0: rc %d", rc);
        CHECK(y == -7, "a zero-count receive wrote its buffer");
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
    }

    /* MPI_Testsome / MPI_Waitsome: with a truncated receive among the completed ones,
     * MPI_ERR_IN_STATUS, and outcount, indices and statuses describe every completed
     * request, failed or not. */
    for (int w = 0; w < 2; w++) {
        const char *fn = w ? "Waitsome" : "Testsome";
        int x[4] = {rank, rank, rank, rank}, a[4], b[2];
        MPI_Request rq[2], sr[2];
        MPI_Irecv(a, 4, MPI_INT, left, 50, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(b, 2, MPI_INT, left, 51, MPI_COMM_WORLD, &rq[1]);
        MPI_Isend(x, 4, MPI_INT, right, 50, MPI_COMM_WORLD, &sr[0]);
        MPI_Isend(x, 4, MPI_INT, right, 51, MPI_COMM_WORLD, &sr[1]);
        int done = 0, truncated = 0;
        for (long guard = 0; done < 2 && guard < 100000000; guard++) {
            int out = -7, idx[2] = {-1, -1};
            MPI_Status st[2];
            int rc = w ? MPI_Waitsome(2, rq, &out, idx, st) : MPI_Testsome(2, rq, &out, idx, st);
            CHECK(out >= 0 && out <= 2, "%s: outcount %d (rc %d)", fn, out, rc);
            if (out < 0 || out > 2) break;
            int has_trunc = 0;
            for (int i = 0; i < out; i++) has_trunc |= idx[i] == 1;
            CHECK((rc == MPI_SUCCESS) == !has_trunc, "%s: rc %d with the truncated receive %s", fn, rc,
                  has_trunc ? "completed" : "pending");
            if (rc != MPI_SUCCESS) {
                CHECK(error_class(rc) == MPI_ERR_IN_STATUS, "%s: class %d", fn, error_class(rc));
                for (int i = 0; i < out; i++)
                    CHECK(idx[i] == 1 ? error_class(st[i].MPI_ERROR) == MPI_ERR_TRUNCATE
                                      : st[i].MPI_ERROR == MPI_SUCCESS,
                          "%s: status of request %d: MPI_ERROR %d", fn, idx[i], st[i].MPI_ERROR);
            }
            truncated += has_trunc;
            done += out;
        }
        CHECK(done == 2 && truncated == 1, "%s: %d completed, %d truncated", fn, done, truncated);
        CHECK(a[0] == left && a[3] == left, "%s: the good receive got %d %d", fn, a[0], a[3]);
        MPI_Waitall(2, sr, MPI_STATUSES_IGNORE);
    }

    good_exchange(rank, size, 100000, 99);
    int one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == size, "final allreduce %d, expected %d", total, size);
    if (rank == 0) printf("p2p_truncate: OK on %d processes\n", size);
    MPI_Finalize();
    return 0;
}
