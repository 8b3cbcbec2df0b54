/* A blocking receive that no message can ever match fails with MPI_ERR_OTHER (under
 * MPI_ERRORS_RETURN here) instead of hanging: one from MPI_ANY_SOURCE once every other
 * rank that could send has called MPI_Finalize with nothing left to send, and one from
 * the waiting rank itself with nothing sent to itself; MPI_Probe and MPI_Mprobe too; and a
 * loop of MPI_Test on a receive from a finalized rank ends with the error.
 * Receives that can still match do
 * not fail: pending receives from MPI_ANY_SOURCE and from itself while rank 0 sleeps in
 * a wait for something else, which it then sends itself; messages sent before their
 * senders finalized, taken by MPI_ANY_SOURCE long after; 300 messages a rank sends
 * itself (more than its ring holds), taken one by one. Rank 0 checks; the others send
 * and finalize. Runs at any np. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int bad = 0;

/* rc must be of class MPI_ERR_OTHER with a message containing `word`. */
static void expect_orphan(const char *what, int rc, const char *word) {
    int cls;
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    if (cls != MPI_ERR_OTHER || !strstr(msg, word)) {
        fprintf(stderr, "%s: class %d, message \"%s\" (wanted MPI_ERR_OTHER, \"%s\")\n", what, cls, msg, word);
        bad++;
    }
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    if (rank > 0) {
        if (rank == 1) {
            usleep(300000); /* rank 0 sleeps in MPI_Wait meanwhile */
            int x = 12;
            MPI_Send(&x, 1, MPI_INT, 0, 12, MPI_COMM_WORLD);
        }
        int mine = 1000 + rank;
        MPI_Send(&mine, 1, MPI_INT, 0, 20, MPI_COMM_WORLD);
        MPI_Finalize();
        return 0;
    }

    /* 1. Receives that can still match do not fail while rank 0 waits for another. */
    int a = -1, b = -1, c = -1, rc;
    MPI_Request r1, r2, r3;
    MPI_Status st;
    MPI_Irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, 10, MPI_COMM_WORLD, &r1);
    MPI_Irecv(&b, 1, MPI_INT, 0, 11, MPI_COMM_WORLD, &r2);
    if (size > 1) {
        MPI_Irecv(&c, 1, MPI_INT, 1, 12, MPI_COMM_WORLD, &r3);
        rc = MPI_Wait(&r3, &st);
        if (rc != MPI_SUCCESS || c != 12) { fprintf(stderr, "message from rank 1: rc %d, got %d\n", rc, c); bad++; }
    }
    int ten = 10, eleven = 11;
    MPI_Send(&ten, 1, MPI_INT, 0, 10, MPI_COMM_WORLD);
    MPI_Send(&eleven, 1, MPI_INT, 0, 11, MPI_COMM_WORLD);
    rc = MPI_Wait(&r1, &st);
    if (rc != MPI_SUCCESS || a != 10 || st.MPI_SOURCE != 0) { fprintf(stderr, "pending MPI_ANY_SOURCE receive: rc %d, got %d from %d\n", rc, a, st.MPI_SOURCE); bad++; }
    rc = MPI_Wait(&r2, &st);
    if (rc != MPI_SUCCESS || b != 11) { fprintf(stderr, "pending receive from itself: rc %d, got %d\n", rc, b); bad++; }

    /* 2. Messages sent before their senders finalized arrive through MPI_ANY_SOURCE. */
    usleep(200000); /* every other rank is in MPI_Finalize by now */
    int seen = 0;
    for (int k = 1; k < size; k++) {
        int x = -1;
        rc = MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, &st);
        if (rc != MPI_SUCCESS || st.MPI_SOURCE < 1 || st.MPI_SOURCE >= size || x != 1000 + st.MPI_SOURCE) {
            fprintf(stderr, "message %d: rc %d, got %d from %d\n", k, rc, x, st.MPI_SOURCE);
            bad++;
        } else {
            seen |= 1 << st.MPI_SOURCE;
        }
    }
    if (size > 1 && seen != ((1 << size) - 2)) { fprintf(stderr, "sources seen: %#x\n", seen); bad++; }

    /* 3. 300 messages to itself, more than its ring holds, all received. */
    enum { M = 300, W = 1024 };
    int *out = malloc(sizeof(int) * M * W);
    MPI_Request sreq[M];
    for (int m = 0; m < M; m++) {
        for (int i = 0; i < W; i++) out[m * W + i] = m * 31 + i;
        MPI_Isend(out + m * W, W, MPI_INT, 0, 30, MPI_COMM_WORLD, &sreq[m]);
    }
    for (int m = 0; m < M; m++) {
        int in[W], wrong = 0;
        rc = MPI_Recv(in, W, MPI_INT, m % 2 ? MPI_ANY_SOURCE : 0, 30, MPI_COMM_WORLD, &st);
        for (int i = 0; i < W; i++) wrong += in[i] != m * 31 + i;
        if (rc != MPI_SUCCESS || wrong) { fprintf(stderr, "message %d to itself: rc %d, %d wrong\n", m, rc, wrong); bad++; break; }
    }
    MPI_Waitall(M, sreq, MPI_STATUSES_IGNORE);
    free(out);

    /* 4. Nothing can come any more: these fail. */
    int x;
    rc = MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    expect_orphan("MPI_Recv from MPI_ANY_SOURCE", rc, "MPI_ANY_SOURCE");
    rc = MPI_Recv(&x, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, &st);
    expect_orphan("MPI_Recv from itself", rc, "itself (tag 5)");
    MPI_Request rq;
    MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &rq);
    rc = MPI_Wait(&rq, &st);
    expect_orphan("MPI_Wait on MPI_Irecv from MPI_ANY_SOURCE", rc, "tag 7");
    if (rq != MPI_REQUEST_NULL) { fprintf(stderr, "the failed request is not freed\n"); bad++; }
    rc = MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_SELF, &st);
    expect_orphan("MPI_Recv from MPI_ANY_SOURCE on MPI_COMM_SELF", rc, "MPI_ANY_SOURCE");

    rc = MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    expect_orphan("MPI_Probe from MPI_ANY_SOURCE", rc, "MPI_ANY_SOURCE");
    MPI_Message msg;
    rc = MPI_Mprobe(0, 6, MPI_COMM_WORLD, &msg, &st);
    expect_orphan("MPI_Mprobe from itself", rc, "itself (tag 6)");
    if (size > 1) {
        rc = MPI_Probe(size - 1, 99, MPI_COMM_WORLD, &st);
        expect_orphan("MPI_Probe from a finalized rank", rc, "MPI_Finalize");
        rc = MPI_Recv(&x, 1, MPI_INT, size - 1, 98, MPI_COMM_WORLD, &st);
        expect_orphan("MPI_Recv from a finalized rank", rc, "tag 98");
        /* a loop of MPI_Test on one ends too */
        MPI_Request tq;
        int flag = 0;
        long k;
        MPI_Irecv(&x, 1, MPI_INT, size - 1, 97, MPI_COMM_WORLD, &tq);
        for (k = 0; k < 10000000 && !flag; k++) rc = MPI_Test(&tq, &flag, &st);
        if (!flag) { fprintf(stderr, "MPI_Test never completed the receive from a finalized rank\n"); bad++; }
        else expect_orphan("MPI_Test on a receive from a finalized rank", rc, "tag 97");
    }

    /* 5. The library stays usable. */
    int y = 77, z = 0;
    rc = MPI_Sendrecv(&y, 1, MPI_INT, 0, 8, &z, 1, MPI_INT, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &st);
    if (rc != MPI_SUCCESS || z != 77) { fprintf(stderr, "MPI_Sendrecv to itself: rc %d, got %d\n", rc, z); bad++; }

    printf("recv_orphan: np=%d: %s\n", size, bad ? "FAILED" : "ok");
    MPI_Finalize();
    return bad ? 1 : 0;
}
