/* A send that needs its receiver (rendezvous size, or MPI_Ssend) to a rank that calls
 * MPI_Finalize without receiving it fails with MPI_ERR_OTHER (under MPI_ERRORS_RETURN
 * here) instead of waiting forever: MPI_Send, MPI_Ssend, MPI_Isend + MPI_Wait, in a
 * MPI_Waitall with a send that succeeds, sent before and after the receiver entered
 * MPI_Finalize. An MPI_Bsend of rendezvous size is dropped, so MPI_Buffer_detach
 * returns. Messages the receiver did receive, and small (eager) ones it did not, are
 * unaffected, and the library stays usable. The last rank receives one message and
 * finalizes; rank 0 sends; at np 3 rank 1 receives a last message from rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int bad = 0;

static void expect_refused(const char *what, int rc, const char *word) {
    int cls, len;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    if (cls != MPI_ERR_OTHER || !strstr(msg, "without receiving this message") || !strstr(msg, word)) {
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
    const int big = 1 << 18; /* 1 MiB of int: beyond the eager limit */
    int last = size - 1;
    int *v = malloc(sizeof(int) * (size_t)big);
    for (int i = 0; i < big; i++) v[i] = i * 3;

    if (size > 1 && rank == last) {
        int *w = malloc(sizeof(int) * (size_t)big);
        MPI_Recv(w, big, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < big; i++)
            if (w[i] != i * 3) { bad++; break; }
        free(w);
    } else if (size > 1 && rank == 0) {
        int rc;
        /* received: fine */
        rc = MPI_Send(v, big, MPI_INT, last, 1, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) { fprintf(stderr, "received send failed (%d)\n", rc); bad++; }
        /* probably before the receiver is in MPI_Finalize */
        rc = MPI_Send(v, big, MPI_INT, last, 2, MPI_COMM_WORLD);
        expect_refused("MPI_Send", rc, "tag 2, 1048576 bytes");
        usleep(100000); /* the receiver is in MPI_Finalize now */
        int small = 5;
        rc = MPI_Send(&small, 1, MPI_INT, last, 3, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) { fprintf(stderr, "eager send failed (%d)\n", rc); bad++; }
        rc = MPI_Ssend(&small, 1, MPI_INT, last, 4, MPI_COMM_WORLD);
        expect_refused("MPI_Ssend", rc, "tag 4, 4 bytes");
        MPI_Request rq[2];
        MPI_Isend(v, big, MPI_INT, last, 5, MPI_COMM_WORLD, &rq[0]);
        rc = MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        expect_refused("MPI_Wait on MPI_Isend", rc, "tag 5");
        /* MPI_Waitall: one fails, one succeeds (to itself) */
        int self_in = 0, self_out = 9;
        MPI_Request rr;
        MPI_Irecv(&self_in, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, &rr);
        MPI_Isend(v, big, MPI_INT, last, 6, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(&self_out, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, &rq[1]);
        MPI_Status sts[2];
        rc = MPI_Waitall(2, rq, sts);
        int cls;
        MPI_Error_class(rc, &cls);
        if (cls != MPI_ERR_IN_STATUS) { fprintf(stderr, "MPI_Waitall: class %d, not MPI_ERR_IN_STATUS\n", cls); bad++; }
        else {
            expect_refused("MPI_Waitall's failed send", sts[0].MPI_ERROR, "tag 6");
            if (sts[1].MPI_ERROR != MPI_SUCCESS) { fprintf(stderr, "MPI_Waitall's good send: %d\n", sts[1].MPI_ERROR); bad++; }
        }
        MPI_Wait(&rr, MPI_STATUS_IGNORE);
        if (self_in != 9) { fprintf(stderr, "message to itself: %d\n", self_in); bad++; }
        /* MPI_Bsend of rendezvous size: dropped; detach returns */
        int bsize = (int)sizeof(int) * big + MPI_BSEND_OVERHEAD;
        void *bbuf = malloc((size_t)bsize), *back;
        MPI_Buffer_attach(bbuf, bsize);
        rc = MPI_Bsend(v, big, MPI_INT, last, 7, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) { fprintf(stderr, "MPI_Bsend: %d\n", rc); bad++; }
        MPI_Buffer_detach(&back, &bsize);
        free(bbuf);
        /* usable */
        if (size > 2) {
            rc = MPI_Send(v, big, MPI_INT, 1, 8, MPI_COMM_WORLD);
            if (rc != MPI_SUCCESS) { fprintf(stderr, "send to rank 1: %d\n", rc); bad++; }
        }
        printf("send_refused: np=%d: %s\n", size, bad ? "FAILED" : "ok");
    } else if (size > 2 && rank == 1) {
        int *w = malloc(sizeof(int) * (size_t)big);
        MPI_Recv(w, big, MPI_INT, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < big; i++)
            if (w[i] != i * 3) { bad++; break; }
        free(w);
    }
    free(v);
    MPI_Finalize();
    return bad ? 1 : 0;
}
