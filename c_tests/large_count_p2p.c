/* The MPI-4 large-count forms of point-to-point and MPI_Bcast (MPI_Send_c ...
 * MPI_Bcast_init_c): each moves the same data as its int form, with a derived type
 * too; a negative MPI_Count is MPI_ERR_COUNT naming the call; and with argv[1] "big",
 * at np 2, a message and a broadcast of 2^31 + 5 bytes (more elements than an int
 * holds) arrive whole, MPI_Get_count_c gives the count and MPI_Get_count
 * MPI_UNDEFINED. Ring: rank r sends to r+1 and receives from r-1. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad = 0;
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); bad++; } } while (0)

enum { N = 3000 }; /* beyond the eager limit in bytes for the int pairs */

static void fill(int *v, int n, int who, int salt) {
    for (int i = 0; i < n; i++) v[i] = who * 100003 + salt * 7919 + i;
}
static int wrong(const int *v, int n, int who, int salt) {
    int w = 0;
    for (int i = 0; i < n; i++) w += v[i] != who * 100003 + salt * 7919 + i;
    return w;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int *out = malloc(sizeof(int) * N), *in = malloc(sizeof(int) * N);
    MPI_Status st;
    MPI_Request rq[2];
    MPI_Count cnt;

    /* blocking sends in every mode, against MPI_Recv_c / MPI_Irecv_c */
    int bsize = N * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
    void *bbuf = malloc((size_t)bsize);
    MPI_Buffer_attach(bbuf, bsize);
    for (int mode = 0; mode < 4; mode++) {
        fill(out, N, rank, mode);
        memset(in, 0, sizeof(int) * N);
        MPI_Irecv_c(in, (MPI_Count)N, MPI_INT, prev, mode, MPI_COMM_WORLD, &rq[0]);
        if (mode == 2) MPI_Barrier(MPI_COMM_WORLD); /* ready mode: the receive is posted */
        int rc = mode == 0 ? MPI_Send_c(out, (MPI_Count)N, MPI_INT, next, mode, MPI_COMM_WORLD)
               : mode == 1 ? MPI_Ssend_c(out, (MPI_Count)N, MPI_INT, next, mode, MPI_COMM_WORLD)
               : mode == 2 ? MPI_Rsend_c(out, (MPI_Count)N, MPI_INT, next, mode, MPI_COMM_WORLD)
               : MPI_Bsend_c(out, (MPI_Count)N, MPI_INT, next, mode, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "send mode %d: rc %d", mode, rc);
        MPI_Wait(&rq[0], &st);
        CHECK(!wrong(in, N, prev, mode), "send mode %d: data wrong", mode);
        MPI_Get_count_c(&st, MPI_INT, &cnt);
        CHECK(cnt == N, "send mode %d: MPI_Get_count_c %lld", mode, (long long)cnt);
    }
    /* nonblocking sends in every mode, against MPI_Recv_c */
    for (int mode = 0; mode < 4; mode++) {
        fill(out, N, rank, 10 + mode);
        if (mode == 2) {
            MPI_Irecv_c(in, (MPI_Count)N, MPI_INT, prev, 10 + mode, MPI_COMM_WORLD, &rq[1]);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (mode == 0) MPI_Isend_c(out, (MPI_Count)N, MPI_INT, next, 10, MPI_COMM_WORLD, &rq[0]);
        if (mode == 1) MPI_Issend_c(out, (MPI_Count)N, MPI_INT, next, 11, MPI_COMM_WORLD, &rq[0]);
        if (mode == 2) MPI_Irsend_c(out, (MPI_Count)N, MPI_INT, next, 12, MPI_COMM_WORLD, &rq[0]);
        if (mode == 3) MPI_Ibsend_c(out, (MPI_Count)N, MPI_INT, next, 13, MPI_COMM_WORLD, &rq[0]);
        if (mode == 2) MPI_Wait(&rq[1], &st);
        else MPI_Recv_c(in, (MPI_Count)N, MPI_INT, prev, 10 + mode, MPI_COMM_WORLD, &st);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        CHECK(!wrong(in, N, prev, 10 + mode), "nonblocking send mode %d: data wrong", mode);
    }
    void *back;
    MPI_Buffer_detach(&back, &bsize);
    free(bbuf);

    /* persistent: every send mode against MPI_Recv_init_c, started twice */
    for (int mode = 0; mode < 4; mode++) {
        MPI_Request p[2];
        MPI_Recv_init_c(in, (MPI_Count)N, MPI_INT, prev, 20 + mode, MPI_COMM_WORLD, &p[0]);
        if (mode == 0) MPI_Send_init_c(out, (MPI_Count)N, MPI_INT, next, 20, MPI_COMM_WORLD, &p[1]);
        if (mode == 1) MPI_Ssend_init_c(out, (MPI_Count)N, MPI_INT, next, 21, MPI_COMM_WORLD, &p[1]);
        if (mode == 2) MPI_Rsend_init_c(out, (MPI_Count)N, MPI_INT, next, 22, MPI_COMM_WORLD, &p[1]);
        if (mode == 3) {
            bsize = N * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
            bbuf = malloc((size_t)bsize);
            MPI_Buffer_attach(bbuf, bsize);
            MPI_Bsend_init_c(out, (MPI_Count)N, MPI_INT, next, 23, MPI_COMM_WORLD, &p[1]);
        }
        for (int round = 0; round < 2; round++) {
            fill(out, N, rank, 30 + mode * 2 + round);
            memset(in, 0, sizeof(int) * N);
            MPI_Start(&p[0]);
            MPI_Barrier(MPI_COMM_WORLD); /* (ready mode) */
            MPI_Start(&p[1]);
            MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
            CHECK(!wrong(in, N, prev, 30 + mode * 2 + round), "persistent mode %d round %d: data wrong", mode, round);
        }
        MPI_Request_free(&p[0]);
        MPI_Request_free(&p[1]);
        if (mode == 3) {
            MPI_Buffer_detach(&back, &bsize);
            free(bbuf);
        }
    }

    /* sendrecv and friends, with a strided type on the receiving side */
    MPI_Datatype every2;
    MPI_Type_vector(N / 2, 1, 2, MPI_INT, &every2);
    MPI_Type_commit(&every2);
    fill(out, N / 2, rank, 40);
    for (int i = 0; i < N; i++) in[i] = -1;
    MPI_Sendrecv_c(out, (MPI_Count)(N / 2), MPI_INT, next, 40, in, 1, every2, prev, 40, MPI_COMM_WORLD, &st);
    {
        int w = 0;
        for (int i = 0; i < N / 2; i++) w += in[2 * i] != prev * 100003 + 40 * 7919 + i || in[2 * i + 1] != -1;
        CHECK(!w, "MPI_Sendrecv_c: %d wrong", w);
    }
    fill(in, N, rank, 41);
    MPI_Sendrecv_replace_c(in, (MPI_Count)N, MPI_INT, next, 41, prev, 41, MPI_COMM_WORLD, &st);
    CHECK(!wrong(in, N, prev, 41), "MPI_Sendrecv_replace_c: data wrong");
    fill(out, N, rank, 42);
    MPI_Isendrecv_c(out, (MPI_Count)N, MPI_INT, next, 42, in, (MPI_Count)N, MPI_INT, prev, 42, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], &st);
    CHECK(!wrong(in, N, prev, 42), "MPI_Isendrecv_c: data wrong");
    fill(in, N, rank, 43);
    MPI_Isendrecv_replace_c(in, (MPI_Count)N, MPI_INT, next, 43, prev, 43, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], &st);
    CHECK(!wrong(in, N, prev, 43), "MPI_Isendrecv_replace_c: data wrong");
    MPI_Type_free(&every2);

    /* matched probe */
    fill(out, N, rank, 50);
    MPI_Isend(out, N, MPI_INT, next, 50, MPI_COMM_WORLD, &rq[0]);
    MPI_Message msg;
    MPI_Mprobe(prev, 50, MPI_COMM_WORLD, &msg, &st);
    MPI_Mrecv_c(in, (MPI_Count)N, MPI_INT, &msg, &st);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    CHECK(!wrong(in, N, prev, 50), "MPI_Mrecv_c: data wrong");
    fill(out, N, rank, 51);
    MPI_Isend(out, N, MPI_INT, next, 51, MPI_COMM_WORLD, &rq[0]);
    MPI_Mprobe(prev, 51, MPI_COMM_WORLD, &msg, &st);
    MPI_Imrecv_c(in, (MPI_Count)N, MPI_INT, &msg, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    CHECK(!wrong(in, N, prev, 51), "MPI_Imrecv_c: data wrong");

    /* broadcasts from every root */
    for (int root = 0; root < size; root++) {
        if (rank == root) fill(in, N, root, 60); else memset(in, 0, sizeof(int) * N);
        MPI_Bcast_c(in, (MPI_Count)N, MPI_INT, root, MPI_COMM_WORLD);
        CHECK(!wrong(in, N, root, 60), "MPI_Bcast_c root %d: data wrong", root);
        if (rank == root) fill(in, N, root, 61); else memset(in, 0, sizeof(int) * N);
        MPI_Ibcast_c(in, (MPI_Count)N, MPI_INT, root, MPI_COMM_WORLD, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        CHECK(!wrong(in, N, root, 61), "MPI_Ibcast_c root %d: data wrong", root);
        MPI_Request p;
        MPI_Bcast_init_c(in, (MPI_Count)N, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &p);
        for (int round = 0; round < 2; round++) {
            if (rank == root) fill(in, N, root, 62 + round); else memset(in, 0, sizeof(int) * N);
            MPI_Start(&p);
            MPI_Wait(&p, MPI_STATUS_IGNORE);
            CHECK(!wrong(in, N, root, 62 + round), "MPI_Bcast_init_c root %d round %d: data wrong", root, round);
        }
        MPI_Request_free(&p);
    }

    /* a negative count is MPI_ERR_COUNT, named by the _c call */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    {
        int rc = MPI_Send_c(out, (MPI_Count)-1, MPI_INT, next, 70, MPI_COMM_WORLD), cls, len;
        char m[MPI_MAX_ERROR_STRING];
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, m, &len);
        CHECK(cls == MPI_ERR_COUNT && strstr(m, "MPI_Send_c") && strstr(m, "count=-1"), "negative count: class %d, \"%s\"", cls, m);
        rc = MPI_Recv_c(in, -((MPI_Count)1 << 40), MPI_INT, prev, 70, MPI_COMM_WORLD, &st);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_COUNT, "negative MPI_Recv_c count: class %d", cls);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    /* more elements than an int holds */
    if (argc > 1 && strcmp(argv[1], "big") == 0 && size == 2) {
        const MPI_Count big = ((MPI_Count)1 << 31) + 5;
        unsigned char *b = malloc((size_t)big);
        if (rank == 0) {
            for (MPI_Count i = 0; i < big; i += 4096) b[i] = (unsigned char)(i >> 12);
            b[big - 1] = 0xa5;
            MPI_Send_c(b, big, MPI_BYTE, 1, 80, MPI_COMM_WORLD);
        } else {
            memset(b, 0, (size_t)big);
            MPI_Recv_c(b, big, MPI_BYTE, 0, 80, MPI_COMM_WORLD, &st);
            int w = b[big - 1] != 0xa5;
            for (MPI_Count i = 0; i < big; i += 4096) w += b[i] != (unsigned char)(i >> 12);
            CHECK(!w, "big message: %d wrong", w);
            MPI_Get_count_c(&st, MPI_BYTE, &cnt);
            CHECK(cnt == big, "big message: MPI_Get_count_c %lld", (long long)cnt);
            int small;
            MPI_Get_count(&st, MPI_BYTE, &small);
            CHECK(small == MPI_UNDEFINED, "big message: MPI_Get_count %d", small);
        }
        if (rank == 1) memset(b, 0, (size_t)big);
        else b[big - 2] = 0x5a;
        MPI_Bcast_c(b, big, MPI_BYTE, 0, MPI_COMM_WORLD);
        int w = b[big - 1] != 0xa5 || b[big - 2] != 0x5a;
        for (MPI_Count i = 0; i < big - 2; i += 4096) w += b[i] != (unsigned char)(i >> 12);
        CHECK(!w, "big broadcast: %d wrong", w);
        free(b);
    }

    free(out);
    free(in);
    if (rank == 0) printf("large_count_p2p: np=%d: %s\n", size, bad ? "FAILED" : "ok");
    MPI_Finalize();
    return bad ? 1 : 0;
}
