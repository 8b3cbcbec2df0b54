/* MPI_Cancel of sends (MPI-3.1 section 3.8.4): a send nobody has received is
 * withdrawn, whatever its size (eager messages and rendezvous ones), its mode (Isend,
 * Issend, Ibsend, persistent standard and buffered sends) and whether it left the
 * sender yet (a withdrawn buffered send frees its part of the attached buffer); its Wait returns
 * (it must, whatever the receiver does next) with MPI_Test_cancelled true, and no part
 * of it is ever received: a later message with the same tag is the one that arrives.
 * A send already received completes normally (cancelled false). The receives are posted
 * only after every cancel is answered (a receive posted before may take the message,
 * and the cancel then fails, as the standard allows). */
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

static int cancelled_of(MPI_Status *st) {
    int c = -1;
    MPI_Test_cancelled(st, &c);
    return c;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const int sizes[4] = {1, 100, 10000, 300000}; /* ints: eager up to rendezvous */
    int *buf = malloc(sizeof(int) * 300000), *rbuf = malloc(sizeof(int) * 300000);

    int bsize = 2 * 300000 * (int)sizeof(int) + 4 * MPI_BSEND_OVERHEAD;
    char *attached = malloc(bsize);
    MPI_Buffer_attach(attached, bsize);
    for (int mode = 0; mode < 5; mode++) {
        for (int s = 0; s < 4; s++) {
            int n = sizes[s], tag = 100 + 10 * mode + s;
            for (int i = 0; i < n; i++) buf[i] = -7;
            MPI_Request r;
            MPI_Status st;
            if (mode == 0) MPI_Isend(buf, n, MPI_INT, right, tag, MPI_COMM_WORLD, &r);
            if (mode == 1) MPI_Issend(buf, n, MPI_INT, right, tag, MPI_COMM_WORLD, &r);
            if (mode == 2) {
                MPI_Send_init(buf, n, MPI_INT, right, tag, MPI_COMM_WORLD, &r);
                MPI_Start(&r);
            }
            if (mode == 3) MPI_Ibsend(buf, n, MPI_INT, right, tag, MPI_COMM_WORLD, &r);
            if (mode == 4) {
                MPI_Bsend_init(buf, n, MPI_INT, right, tag, MPI_COMM_WORLD, &r);
                MPI_Start(&r);
            }
            CHECK(MPI_Cancel(&r) == MPI_SUCCESS, "MPI_Cancel");
            MPI_Wait(&r, &st);
            CHECK(cancelled_of(&st) == 1, "mode %d, %d ints: the unreceived send was not cancelled", mode, n);
            /* Nobody posts a receive for this tag before every cancel is answered (a
             * receive posted earlier may take the message: the cancel then fails). */
            MPI_Barrier(MPI_COMM_WORLD);
            /* The next message with this tag is the one that arrives. */
            for (int i = 0; i < n; i++) buf[i] = rank * 1000 + i % 1000;
            if (mode == 2 || mode == 4) {
                MPI_Start(&r);
            } else if (mode == 3) {
                MPI_Ibsend(buf, n, MPI_INT, right, tag, MPI_COMM_WORLD, &r);
            } else {
                MPI_Isend(buf, n, MPI_INT, right, tag, MPI_COMM_WORLD, &r);
            }
            MPI_Recv(rbuf, n, MPI_INT, left, tag, MPI_COMM_WORLD, &st);
            int bad = 0;
            for (int i = 0; i < n; i++) bad += rbuf[i] != left * 1000 + i % 1000;
            CHECK(!bad, "mode %d, %d ints: %d wrong after the cancelled one", mode, n, bad);
            MPI_Wait(&r, &st);
            CHECK(cancelled_of(&st) == 0, "mode %d, %d ints: a received send reported cancelled", mode, n);
            if (mode == 2 || mode == 4) MPI_Request_free(&r);
        }
        /* Nothing of the cancelled messages is left behind. */
        MPI_Barrier(MPI_COMM_WORLD);
        int flag = 1;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "mode %d: a cancelled message is still there", mode);
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* A send already received: the cancel fails, the send completes normally. */
    {
        int x = rank, y = -1;
        MPI_Request r;
        MPI_Status st;
        MPI_Isend(&x, 1, MPI_INT, right, 7, MPI_COMM_WORLD, &r);
        MPI_Recv(&y, 1, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        CHECK(cancelled_of(&st) == 0 && y == left, "a received send: cancelled %d, y %d", cancelled_of(&st), y);
    }

    /* Cancelling twice, and through MPI_Test. */
    {
        MPI_Request r;
        MPI_Status st;
        int flag = 0;
        MPI_Issend(buf, 5, MPI_INT, right, 8, MPI_COMM_WORLD, &r);
        MPI_Cancel(&r);
        MPI_Cancel(&r);
        while (!flag) MPI_Test(&r, &flag, &st);
        CHECK(cancelled_of(&st) == 1, "Issend cancelled twice, completed by MPI_Test");
        MPI_Barrier(MPI_COMM_WORLD);
        flag = 1;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "the cancelled Issend is still there");
    }

    /* Every withdrawn buffered send gave its space back: the whole buffer is free. */
    MPI_Barrier(MPI_COMM_WORLD);
    {
        char *big = malloc(bsize - MPI_BSEND_OVERHEAD);
        memset(big, 1, bsize - MPI_BSEND_OVERHEAD);
        MPI_Request r;
        int rc = MPI_Ibsend(big, bsize - MPI_BSEND_OVERHEAD, MPI_CHAR, right, 9, MPI_COMM_WORLD, &r);
        CHECK(rc == MPI_SUCCESS, "the attached buffer is not free again");
        MPI_Recv(big, bsize - MPI_BSEND_OVERHEAD, MPI_CHAR, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        void *p;
        int sz;
        MPI_Buffer_detach(&p, &sz);
        free(big);
    }
    free(attached);
    free(buf);
    free(rbuf);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "FAILED: %d failures\n" : "No Errors\n", total);
    MPI_Finalize();
    return total != 0;
}
