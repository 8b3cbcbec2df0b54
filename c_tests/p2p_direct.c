/* Large point-to-point messages, which the receiver reads straight out of the sender's
 * memory (process_vm_readv) when the system allows it, and through the pipe when not:
 * exchanges, many messages in flight in order, MPI_ANY_SOURCE, sends to itself,
 * truncation (the bytes past the receive buffer untouched), non-contiguous datatypes on
 * either side, matched probes, buffered and synchronous sends, cancelling a send nobody
 * received. Then the last rank installs a seccomp filter that makes process_vm_readv/writev
 * fail with EPERM (as a sandbox would) while the library's cached probe still says it
 * may read: its receives must fall back to the pipe, and everything runs again. Every
 * received byte is checked against the pattern its sender wrote. */
#define _GNU_SOURCE
#include <errno.h>
#include "forbid_copies.h"
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static int rank, size, failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "rank %d: ", rank);                                \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
            failures++;                                                        \
        }                                                                      \
    } while (0)


/* The byte at position i of message `seq` from `src`. */
static unsigned char pat(int src, int seq, size_t i) {
    return (unsigned char)(src * 37 + seq * 11 + i * 7 + (i >> 9));
}

static void fill(unsigned char *b, size_t n, int src, int seq) {
    for (size_t i = 0; i < n; i++)
        b[i] = pat(src, seq, i);
}

/* Whether b[0..n) is the pattern of (src, seq); reports the first wrong byte. */
static int verify(const unsigned char *b, size_t n, int src, int seq, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(src, seq, i)) {
            CHECK(0, "%s: byte %zu from rank %d (message %d) is %d, expected %d", what, i, src, seq, b[i],
                  pat(src, seq, i));
            return 0;
        }
    return 1;
}

#define BIG (300 * 1000 + 3) /* bytes: far above the eager limit, odd */
#define INFLIGHT 6

static void exchanges(int round) {
    int partner = (rank ^ 1) < size ? rank ^ 1 : rank;
    unsigned char *s = malloc(BIG), *r = malloc(BIG);
    /* Irecv + Isend + Waitall, and Sendrecv, several times */
    for (int it = 0; it < 5; it++) {
        fill(s, BIG, rank, round * 100 + it);
        memset(r, 0, BIG);
        MPI_Request q[2];
        MPI_Irecv(r, BIG, MPI_BYTE, partner, it, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(s, BIG, MPI_BYTE, partner, it, MPI_COMM_WORLD, &q[1]);
        MPI_Status st[2];
        int rc = MPI_Waitall(2, q, st);
        CHECK(rc == MPI_SUCCESS, "exchange %d: Waitall rc %d", it, rc);
        int cnt = -1;
        MPI_Get_count(&st[0], MPI_BYTE, &cnt);
        CHECK(cnt == BIG && st[0].MPI_SOURCE == partner && st[0].MPI_TAG == it,
              "exchange %d: count %d source %d tag %d", it, cnt, st[0].MPI_SOURCE, st[0].MPI_TAG);
        verify(r, BIG, partner, round * 100 + it, "Irecv/Isend exchange");
        memset(r, 0, BIG);
        MPI_Sendrecv(s, BIG, MPI_BYTE, partner, 50 + it, r, BIG, MPI_BYTE, partner, 50 + it, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        verify(r, BIG, partner, round * 100 + it, "Sendrecv");
    }
    free(s);
    free(r);
}

/* Every rank sends INFLIGHT large messages with one tag to the next rank, which
 * receives them in order (non-overtaking) after they all were announced. */
static void in_order(int round) {
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    unsigned char *s[INFLIGHT], *r = malloc(BIG);
    MPI_Request q[INFLIGHT];
    for (int k = 0; k < INFLIGHT; k++) {
        size_t n = BIG - (size_t)k * 1000;
        s[k] = malloc(n);
        fill(s[k], n, rank, round * 100 + k);
        MPI_Isend(s[k], (int)n, MPI_BYTE, to, 7, MPI_COMM_WORLD, &q[k]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < INFLIGHT; k++) {
        MPI_Status st;
        MPI_Recv(r, BIG, MPI_BYTE, from, 7, MPI_COMM_WORLD, &st);
        int cnt = -1;
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        CHECK(cnt == BIG - k * 1000, "in order: message %d has %d bytes", k, cnt);
        verify(r, (size_t)cnt, from, round * 100 + k, "in-order messages");
    }
    MPI_Status sst[INFLIGHT];
    MPI_Waitall(INFLIGHT, q, sst);
    for (int k = 0; k < INFLIGHT; k++)
        free(s[k]);
    free(r);
}

/* Rank 0 receives one large message from every rank (itself too) with MPI_ANY_SOURCE,
 * posted before the sends. */
static void any_source(int round) {
    unsigned char *s = malloc(BIG);
    fill(s, BIG, rank, round * 100 + 40);
    if (rank == 0) {
        unsigned char *r = malloc((size_t)size * BIG);
        MPI_Request *q = malloc(sizeof *q * (size_t)size);
        MPI_Status *st = malloc(sizeof *st * (size_t)size);
        for (int k = 0; k < size; k++)
            MPI_Irecv(r + (size_t)k * BIG, BIG, MPI_BYTE, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &q[k]);
        MPI_Request sq;
        MPI_Isend(s, BIG, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &sq);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Waitall(size, q, st);
        MPI_Wait(&sq, MPI_STATUS_IGNORE);
        int seen = 0;
        for (int k = 0; k < size; k++) {
            int src = st[k].MPI_SOURCE;
            CHECK(src >= 0 && src < size && !(seen >> src & 1), "ANY_SOURCE: source %d twice or invalid", src);
            if (src >= 0 && src < size) {
                seen |= 1 << src;
                verify(r + (size_t)k * BIG, BIG, src, round * 100 + 40, "ANY_SOURCE");
            }
        }
        free(r);
        free(q);
        free(st);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Send(s, BIG, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
    }
    free(s);
}

/* A receive buffer shorter than the message: MPI_ERR_TRUNCATE, the count of what fits,
 * and nothing written past the buffer. */
static void truncation(int round) {
    int partner = (rank ^ 1) < size ? rank ^ 1 : rank;
    const int cap = BIG / 2;
    unsigned char *s = malloc(BIG), *r = malloc(BIG);
    fill(s, BIG, rank, round * 100 + 50);
    memset(r, 0xEE, BIG);
    MPI_Request q;
    MPI_Isend(s, BIG, MPI_BYTE, partner, 9, MPI_COMM_WORLD, &q);
    MPI_Status st;
    int rc = MPI_Recv(r, cap, MPI_BYTE, partner, 9, MPI_COMM_WORLD, &st);
    int cls = MPI_SUCCESS, cnt = -1;
    MPI_Error_class(rc, &cls);
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cls == MPI_ERR_TRUNCATE, "truncation: error class %d, expected MPI_ERR_TRUNCATE", cls);
    CHECK(cnt == cap, "truncation: count %d, expected %d", cnt, cap);
    verify(r, (size_t)cap, partner, round * 100 + 50, "truncated receive");
    for (int i = cap; i < BIG; i++)
        if (r[i] != 0xEE) {
            CHECK(0, "truncation: byte %d past the receive buffer was written", i);
            break;
        }
    rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "truncation: the send failed, rc %d", rc);
    free(s);
    free(r);
}

/* Strided datatypes on both sides (different ones: the same signature). */
static void datatypes(int round) {
    int partner = (rank ^ 1) < size ? rank ^ 1 : rank;
    const int n = 40000; /* doubles moved */
    MPI_Datatype every2, every3;
    MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &every2);
    MPI_Type_vector(n, 1, 3, MPI_DOUBLE, &every3);
    MPI_Type_commit(&every2);
    MPI_Type_commit(&every3);
    double *s = malloc(sizeof(double) * 2 * n), *r = malloc(sizeof(double) * 3 * n);
    for (int i = 0; i < 2 * n; i++)
        s[i] = (i % 2) ? -1.0 : rank * 1e6 + round * 1e5 + i / 2;
    for (int i = 0; i < 3 * n; i++)
        r[i] = -2.0;
    MPI_Sendrecv(s, 1, every2, partner, 11, r, 1, every3, partner, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < 3 * n; i++) {
        double want = (i % 3) ? -2.0 : partner * 1e6 + round * 1e5 + i / 3;
        if (r[i] != want) {
            CHECK(0, "strided types: r[%d] = %g, expected %g", i, r[i], want);
            break;
        }
    }
    MPI_Type_free(&every2);
    MPI_Type_free(&every3);
    free(s);
    free(r);
}

/* MPI_Mprobe / MPI_Mrecv, MPI_Bsend, MPI_Ssend of large messages. */
static void modes(int round) {
    int partner = (rank ^ 1) < size ? rank ^ 1 : rank;
    unsigned char *s = malloc(BIG), *r = malloc(BIG);
    /* matched probe */
    fill(s, BIG, rank, round * 100 + 60);
    MPI_Request q;
    MPI_Isend(s, BIG, MPI_BYTE, partner, 12, MPI_COMM_WORLD, &q);
    MPI_Message m;
    MPI_Status st;
    MPI_Mprobe(partner, 12, MPI_COMM_WORLD, &m, &st);
    int cnt = -1;
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == BIG, "Mprobe: count %d", cnt);
    memset(r, 0, BIG);
    MPI_Mrecv(r, BIG, MPI_BYTE, &m, &st);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    verify(r, BIG, partner, round * 100 + 60, "Mprobe/Mrecv");
    /* buffered: the library's own copy is what the receiver reads */
    int bsize = BIG + MPI_BSEND_OVERHEAD;
    void *battach = malloc((size_t)bsize);
    MPI_Buffer_attach(battach, bsize);
    fill(s, BIG, rank, round * 100 + 61);
    MPI_Request rq;
    memset(r, 0, BIG);
    MPI_Irecv(r, BIG, MPI_BYTE, partner, 13, MPI_COMM_WORLD, &rq);
    MPI_Bsend(s, BIG, MPI_BYTE, partner, 13, MPI_COMM_WORLD);
    memset(s, 0x55, BIG); /* the send's bytes are the library's now */
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    verify(r, BIG, partner, round * 100 + 61, "Bsend");
    void *back;
    MPI_Buffer_detach(&back, &bsize);
    free(battach);
    /* synchronous */
    fill(s, BIG, rank, round * 100 + 62);
    memset(r, 0, BIG);
    MPI_Irecv(r, BIG, MPI_BYTE, partner, 14, MPI_COMM_WORLD, &rq);
    MPI_Ssend(s, BIG, MPI_BYTE, partner, 14, MPI_COMM_WORLD);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    verify(r, BIG, partner, round * 100 + 62, "Ssend");
    free(s);
    free(r);
}

/* A large send nobody receives is cancelled; the next one with the same tag is the one
 * received. */
static void cancel(int round) {
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    unsigned char *s = malloc(BIG), *s2 = malloc(BIG), *r = malloc(BIG);
    fill(s, BIG, rank, round * 100 + 70);
    fill(s2, BIG, rank, round * 100 + 71);
    MPI_Request q;
    MPI_Isend(s, BIG, MPI_BYTE, to, 15, MPI_COMM_WORLD, &q);
    MPI_Cancel(&q);
    MPI_Status st;
    MPI_Wait(&q, &st);
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(cancelled, "cancel: the unreceived send was not cancelled");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Isend(s2, BIG, MPI_BYTE, to, 15, MPI_COMM_WORLD, &q);
    memset(r, 0, BIG);
    MPI_Recv(r, BIG, MPI_BYTE, from, 15, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    verify(r, BIG, from, round * 100 + 71, "after a cancelled send");
    free(s);
    free(s2);
    free(r);
}

static void all(int round) {
    exchanges(round);
    in_order(round);
    any_source(round);
    truncation(round);
    datatypes(round);
    modes(round);
    cancel(round);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    all(0);
    /* The last rank can no longer read other processes' memory. */
    if (rank == size - 1)
        forbid_cross_process_copies();
    MPI_Barrier(MPI_COMM_WORLD);
    all(1);
    int total;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("p2p_direct: %s (%d failures)\n", total ? "FAILED" : "ok", total);
    MPI_Finalize();
    return total != 0;
}
