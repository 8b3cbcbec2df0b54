/* A receive from a rank that has called MPI_Finalize with nothing left to send can never
 * complete: it fails with MPI_ERR_OTHER (under MPI_ERRORS_RETURN here) instead of hanging,
 * while the messages that rank sent before finalizing are still received, also long after
 * (an eager message, one of rendezvous size, an MPI_Bsend of rendezvous size that the
 * library delivers while its sender waits in MPI_Finalize, and 200 small MPI_Bsend
 * messages, more than the pair's ring holds, so that most wait in the sender's queue
 * when it enters MPI_Finalize). Run at np 2 or more: the
 * last rank sends and finalizes, rank 0 receives. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int big = 1 << 20; /* beyond the eager limit */
    int *v = malloc(sizeof(int) * (size_t)big);
    int last = size - 1;
    if (size > 1 && rank == last) {
        int small = 42;
        MPI_Send(&small, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        for (int i = 0; i < big; i++) v[i] = i ^ 0x5a5a;
        MPI_Send(v, big, MPI_INT, 0, 2, MPI_COMM_WORLD);
        int bsize = (int)sizeof(int) * big + 200 * (4096 + MPI_BSEND_OVERHEAD) + MPI_BSEND_OVERHEAD;
        void *bbuf = malloc((size_t)bsize);
        MPI_Buffer_attach(bbuf, bsize);
        MPI_Bsend(v, big, MPI_INT, 0, 3, MPI_COMM_WORLD);
        for (int m = 0; m < 200; m++) {
            int w[1024];
            for (int i = 0; i < 1024; i++) w[i] = m * 7 + i;
            MPI_Bsend(w, 1024, MPI_INT, 0, 5, MPI_COMM_WORLD);
        }
        /* (the buffer stays attached: MPI_Finalize delivers the message) */
    } else if (size > 1 && rank == 0) {
        usleep(200000); /* the sender is in MPI_Finalize by now */
        int got = 0, rc, cls;
        MPI_Status st;
        rc = MPI_Recv(&got, 1, MPI_INT, last, 1, MPI_COMM_WORLD, &st);
        if (rc != MPI_SUCCESS || got != 42) { fprintf(stderr, "eager message lost (rc %d, got %d)\n", rc, got); bad++; }
        for (int k = 2; k <= 3; k++) {
            memset(v, 0, sizeof(int) * (size_t)big);
            rc = MPI_Recv(v, big, MPI_INT, last, k, MPI_COMM_WORLD, &st);
            int wrong = 0;
            for (int i = 0; i < big; i++) wrong += v[i] != (i ^ 0x5a5a);
            if (rc != MPI_SUCCESS || wrong) { fprintf(stderr, "message %d lost or wrong (rc %d, %d wrong)\n", k, rc, wrong); bad++; }
        }
        for (int m = 0; m < 200; m++) {
            int w[1024], wrong = 0;
            rc = MPI_Recv(w, 1024, MPI_INT, last, 5, MPI_COMM_WORLD, &st);
            for (int i = 0; i < 1024; i++) wrong += w[i] != m * 7 + i;
            if (rc != MPI_SUCCESS || wrong) { fprintf(stderr, "small message %d lost or wrong (rc %d)\n", m, rc); bad++; break; }
        }
        /* Nothing more will come: a blocking and a nonblocking receive fail. */
        rc = MPI_Recv(&got, 1, MPI_INT, last, 4, MPI_COMM_WORLD, &st);
        MPI_Error_class(rc, &cls);
        if (cls != MPI_ERR_OTHER) { fprintf(stderr, "MPI_Recv: class %d, not MPI_ERR_OTHER\n", cls); bad++; }
        else {
            char msg[MPI_MAX_ERROR_STRING];
            int len;
            MPI_Error_string(rc, msg, &len);
            if (!strstr(msg, "MPI_Finalize") || !strstr(msg, "tag 4")) { fprintf(stderr, "message: %s\n", msg); bad++; }
        }
        MPI_Request rq;
        MPI_Irecv(&got, 1, MPI_INT, last, MPI_ANY_TAG, MPI_COMM_WORLD, &rq);
        rc = MPI_Wait(&rq, &st);
        MPI_Error_class(rc, &cls);
        if (cls != MPI_ERR_OTHER) { fprintf(stderr, "MPI_Wait: class %d, not MPI_ERR_OTHER\n", cls); bad++; }
        /* The library stays usable. */
        if (size > 2) {
            int x = 5;
            if (rank == 0) MPI_Send(&x, 1, MPI_INT, 1, 9, MPI_COMM_WORLD);
        }
        printf("recv_finalized: np=%d: %s\n", size, bad ? "FAILED" : "ok");
    } else if (size > 2 && rank == 1) {
        int x = 0;
        MPI_Recv(&x, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (x != 5) bad++;
    }
    free(v);
    MPI_Finalize();
    return bad ? 1 : 0;
}
