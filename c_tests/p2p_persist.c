/* Persistent point-to-point requests: MPI_Send_init, MPI_Ssend_init, MPI_Rsend_init,
 * MPI_Bsend_init, MPI_Recv_init, started with MPI_Start / MPI_Startall and completed
 * with every Wait/Test form, many times over, each start sending the buffer's current
 * contents (checked by the receiver against what the sender must have had). Also: an
 * inactive request waits as MPI_REQUEST_NULL does (empty status) but keeps its handle,
 * MPI_PROC_NULL peers, a strided datatype, cancelling an active persistent receive and
 * starting it again, freeing inactive and active requests, and starting an active one
 * (an error). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define N 1000
#define BIG 40000 /* past the eager limit: the rendezvous path */

static int cls(int rc) {
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

static int word(int from, int it, int k) { return from * 1000003 + it * 7919 + k; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *sb = malloc(BIG * sizeof(int)), *rb = malloc(BIG * sizeof(int));

    /* A ring, every send mode but ready, small and large, started 50 times each. */
    for (int mode = 0; mode < 3; mode++) {
        for (int n = N; n <= BIG; n += BIG - N) {
            MPI_Request r[2];
            if (mode == 0) MPI_Send_init(sb, n, MPI_INT, right, 5, MPI_COMM_WORLD, &r[0]);
            if (mode == 1) MPI_Ssend_init(sb, n, MPI_INT, right, 5, MPI_COMM_WORLD, &r[0]);
            void *att = NULL;
            if (mode == 2) {
                /* a send holds its buffer space until the neighbour has received
                 * it, which around a ring of `size` ranks may be that many iterations
                 * later */
                int bytes = (size + 1) * (n * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
                att = malloc(bytes);
                MPI_Buffer_attach(att, bytes);
                MPI_Bsend_init(sb, n, MPI_INT, right, 5, MPI_COMM_WORLD, &r[0]);
            }
            MPI_Recv_init(rb, n, MPI_INT, left, 5, MPI_COMM_WORLD, &r[1]);
            for (int it = 0; it < 50; it++) {
                for (int k = 0; k < n; k++) sb[k] = word(rank, it, k);
                MPI_Status st[2];
                if (it % 2) {
                    CHECK(MPI_Startall(2, r) == MPI_SUCCESS, "Startall");
                } else {
                    CHECK(MPI_Start(&r[1]) == MPI_SUCCESS && MPI_Start(&r[0]) == MPI_SUCCESS, "Start");
                }
                if (it % 3 == 0) {
                    CHECK(MPI_Waitall(2, r, st) == MPI_SUCCESS, "Waitall");
                } else if (it % 3 == 1) {
                    int flag = 0;
                    while (!flag) MPI_Testall(2, r, &flag, st);
                } else {
                    MPI_Wait(&r[0], &st[0]);
                    int idx;
                    MPI_Waitany(2, r, &idx, &st[1]);
                    CHECK(idx == 1, "Waitany index %d", idx);
                }
                CHECK(r[0] != MPI_REQUEST_NULL && r[1] != MPI_REQUEST_NULL, "handles kept");
                int cnt;
                MPI_Get_count(&st[1], MPI_INT, &cnt);
                CHECK(st[1].MPI_SOURCE == left && st[1].MPI_TAG == 5 && cnt == n,
                      "status: source %d tag %d count %d", st[1].MPI_SOURCE, st[1].MPI_TAG, cnt);
                int bad = 0;
                for (int k = 0; k < n; k++) bad += rb[k] != word(left, it, k);
                CHECK(!bad, "mode %d n %d iteration %d: %d words wrong", mode, n, it, bad);
            }
            MPI_Request_free(&r[0]);
            MPI_Request_free(&r[1]);
            CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "freed");
            if (att) {
                int sz;
                MPI_Buffer_detach(&att, &sz);
                free(att);
            }
        }
    }

    /* Ready mode: the receive is started before a barrier, the send after it. */
    {
        MPI_Request rs, rr;
        MPI_Rsend_init(sb, N, MPI_INT, right, 6, MPI_COMM_WORLD, &rs);
        MPI_Recv_init(rb, N, MPI_INT, left, 6, MPI_COMM_WORLD, &rr);
        for (int it = 0; it < 20; it++) {
            for (int k = 0; k < N; k++) sb[k] = word(rank, it, k);
            MPI_Start(&rr);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Start(&rs);
            MPI_Wait(&rs, MPI_STATUS_IGNORE);
            MPI_Wait(&rr, MPI_STATUS_IGNORE);
            int bad = 0;
            for (int k = 0; k < N; k++) bad += rb[k] != word(left, it, k);
            CHECK(!bad, "ready mode iteration %d: %d words wrong", it, bad);
        }
        /* An inactive request: Wait and Test return at once with an empty status. */
        MPI_Status st;
        st.MPI_SOURCE = 77;
        CHECK(MPI_Wait(&rr, &st) == MPI_SUCCESS && rr != MPI_REQUEST_NULL, "Wait on inactive");
        CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG, "empty status: %d %d",
              st.MPI_SOURCE, st.MPI_TAG);
        int flag = 0;
        MPI_Test(&rr, &flag, &st);
        CHECK(flag, "Test on inactive");
        MPI_Request_free(&rs);
        MPI_Request_free(&rr);
    }

    /* A strided datatype: every other int of a 2N buffer. */
    {
        MPI_Datatype every2;
        MPI_Type_vector(N, 1, 2, MPI_INT, &every2);
        MPI_Type_commit(&every2);
        MPI_Request r[2];
        MPI_Send_init(sb, 1, every2, right, 7, MPI_COMM_WORLD, &r[0]);
        MPI_Recv_init(rb, N, MPI_INT, left, 7, MPI_COMM_WORLD, &r[1]);
        MPI_Type_free(&every2); /* the requests keep it alive */
        for (int it = 0; it < 10; it++) {
            for (int k = 0; k < 2 * N; k++) sb[k] = word(rank, it, k);
            MPI_Startall(2, r);
            MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
            int bad = 0;
            for (int k = 0; k < N; k++) bad += rb[k] != word(left, it, 2 * k);
            CHECK(!bad, "strided iteration %d: %d words wrong", it, bad);
        }
        MPI_Request_free(&r[0]);
        MPI_Request_free(&r[1]);
    }

    /* MPI_PROC_NULL peers complete at once. */
    {
        MPI_Request r[2];
        MPI_Send_init(sb, N, MPI_INT, MPI_PROC_NULL, 8, MPI_COMM_WORLD, &r[0]);
        MPI_Recv_init(rb, N, MPI_INT, MPI_PROC_NULL, 8, MPI_COMM_WORLD, &r[1]);
        MPI_Status st[2];
        MPI_Startall(2, r);
        MPI_Waitall(2, r, st);
        int cnt;
        MPI_Get_count(&st[1], MPI_INT, &cnt);
        CHECK(st[1].MPI_SOURCE == MPI_PROC_NULL && cnt == 0, "PROC_NULL receive status");
        MPI_Request_free(&r[0]);
        MPI_Request_free(&r[1]);
    }

    /* Cancelling an active persistent receive that nothing matches, then using it. */
    {
        MPI_Request rr;
        MPI_Recv_init(rb, N, MPI_INT, left, 9, MPI_COMM_WORLD, &rr);
        MPI_Start(&rr);
        CHECK(cls(MPI_Start(&rr)) == MPI_ERR_REQUEST, "starting an active request is an error");
        MPI_Cancel(&rr);
        MPI_Status st;
        MPI_Wait(&rr, &st);
        int c = 0;
        MPI_Test_cancelled(&st, &c);
        CHECK(c, "the receive was cancelled");
        CHECK(cls(MPI_Cancel(&rr)) == MPI_ERR_REQUEST, "cancelling an inactive request is an error");
        MPI_Barrier(MPI_COMM_WORLD); /* nobody sends tag 9 before every cancel is done */
        for (int k = 0; k < N; k++) sb[k] = word(rank, 99, k);
        MPI_Start(&rr);
        MPI_Send(sb, N, MPI_INT, right, 9, MPI_COMM_WORLD);
        MPI_Wait(&rr, &st);
        MPI_Test_cancelled(&st, &c);
        int bad = 0;
        for (int k = 0; k < N; k++) bad += rb[k] != word(left, 99, k);
        CHECK(!c && !bad, "restarted after cancel: cancelled %d, %d words wrong", c, bad);
        MPI_Request_free(&rr);
    }

    /* Freeing an active persistent send: it still completes and is received. */
    {
        MPI_Request rs;
        for (int k = 0; k < N; k++) sb[k] = word(rank, 123, k);
        MPI_Send_init(sb, N, MPI_INT, right, 10, MPI_COMM_WORLD, &rs);
        MPI_Start(&rs);
        MPI_Request_free(&rs);
        CHECK(rs == MPI_REQUEST_NULL, "freed while active");
        MPI_Recv(rb, N, MPI_INT, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int bad = 0;
        for (int k = 0; k < N; k++) bad += rb[k] != word(left, 123, k);
        CHECK(!bad, "send freed while active: %d words wrong", bad);
        MPI_Barrier(MPI_COMM_WORLD); /* the freed send is complete everywhere */
    }

    /* Bad arguments are reported by the _init call. */
    MPI_Request bad;
    CHECK(cls(MPI_Send_init(sb, -1, MPI_INT, right, 0, MPI_COMM_WORLD, &bad)) == MPI_ERR_COUNT, "count");
    CHECK(cls(MPI_Recv_init(rb, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &bad)) == MPI_ERR_RANK, "rank");
    CHECK(cls(MPI_Send_init(sb, 1, MPI_DATATYPE_NULL, right, 0, MPI_COMM_WORLD, &bad)) == MPI_ERR_TYPE, "type");

    free(sb);
    free(rb);
    int all;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("p2p_persist: %s\n", all ? "FAILED" : "ok");
    MPI_Finalize();
    return all != 0;
}
