/* The MPI-4 large-count forms of pack/unpack and of the buffered-send buffer:
 * MPI_Pack_c, MPI_Unpack_c, MPI_Pack_size_c, MPI_Pack_external_c,
 * MPI_Unpack_external_c, MPI_Pack_external_size_c, MPI_Buffer_attach_c,
 * MPI_Buffer_detach_c. Each gives the same bytes and positions as its int form; positions
 * and sizes past 2^31 work (a buffer of 2 GiB + a page, of which only the touched pages
 * are mapped); errors: truncation, negative counts, and an int MPI_Buffer_detach of a
 * buffer too large for its int (MPI_ERR_COUNT, the buffer stays attached). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad = 0;
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); bad++; } } while (0)

static int errclass(int rc) {
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* a strided type: 3 blocks of 2 ints, stride 5 */
    MPI_Datatype vec;
    MPI_Type_vector(3, 2, 5, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int src[2 * 15], back[2 * 15];
    for (int i = 0; i < 30; i++) src[i] = 1000 * rank + i * 7 + 1;

    /* MPI_Pack_size_c == MPI_Pack_size */
    int isz;
    MPI_Count csz;
    MPI_Pack_size(2, vec, MPI_COMM_WORLD, &isz);
    CHECK(MPI_Pack_size_c(2, vec, MPI_COMM_WORLD, &csz) == MPI_SUCCESS && csz == isz,
          "Pack_size_c %lld, Pack_size %d", (long long)csz, isz);
    CHECK(MPI_Pack_size_c((MPI_Count)3 << 30, MPI_INT, MPI_COMM_WORLD, &csz) == MPI_SUCCESS
              && csz >= ((MPI_Count)12 << 30),
          "Pack_size_c of 3 Gi ints: %lld", (long long)csz);

    /* MPI_Pack_c == MPI_Pack: a header int, then two vectors, positions accumulate */
    char pi[256], pc[256];
    int ipos = 0;
    MPI_Count cpos = 0;
    int head = 4242 + rank;
    MPI_Pack(&head, 1, MPI_INT, pi, (int)sizeof pi, &ipos, MPI_COMM_WORLD);
    MPI_Pack(src, 2, vec, pi, (int)sizeof pi, &ipos, MPI_COMM_WORLD);
    CHECK(MPI_Pack_c(&head, 1, MPI_INT, pc, (MPI_Count)sizeof pc, &cpos, MPI_COMM_WORLD) == MPI_SUCCESS, "Pack_c head");
    CHECK(MPI_Pack_c(src, 2, vec, pc, (MPI_Count)sizeof pc, &cpos, MPI_COMM_WORLD) == MPI_SUCCESS, "Pack_c vec");
    CHECK(cpos == ipos && memcmp(pi, pc, (size_t)ipos) == 0, "Pack_c: position %lld (Pack %d) or bytes differ", (long long)cpos, ipos);
    /* MPI_Unpack_c gives back the data */
    int h2 = 0;
    memset(back, 0, sizeof back);
    cpos = 0;
    CHECK(MPI_Unpack_c(pc, (MPI_Count)ipos, &cpos, &h2, 1, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS, "Unpack_c head");
    CHECK(MPI_Unpack_c(pc, (MPI_Count)ipos, &cpos, back, 2, vec, MPI_COMM_WORLD) == MPI_SUCCESS, "Unpack_c vec");
    CHECK(h2 == head && cpos == ipos, "Unpack_c: head %d, position %lld", h2, (long long)cpos);
    for (int k = 0; k < 2; k++)
        for (int b = 0; b < 3; b++)
            for (int j = 0; j < 2; j++) {
                int at = k * 12 + b * 5 + j; /* extent: 12 ints */
                CHECK(back[at] == src[at], "Unpack_c: element %d = %d, want %d", at, back[at], src[at]);
            }
    CHECK(back[2] == 0, "Unpack_c wrote into a gap of the vector");

    /* truncation and bad arguments */
    cpos = (MPI_Count)sizeof pc - 2;
    CHECK(errclass(MPI_Pack_c(src, 1, vec, pc, (MPI_Count)sizeof pc, &cpos, MPI_COMM_WORLD)) == MPI_ERR_TRUNCATE, "Pack_c past outsize");
    cpos = 0;
    CHECK(errclass(MPI_Pack_c(src, -1, MPI_INT, pc, (MPI_Count)sizeof pc, &cpos, MPI_COMM_WORLD)) == MPI_ERR_COUNT, "Pack_c incount -1");
    cpos = 0;
    CHECK(errclass(MPI_Unpack_c(pc, 4, &cpos, back, 2, vec, MPI_COMM_WORLD)) == MPI_ERR_TRUNCATE, "Unpack_c past insize");

    /* a position past 2^31: pack 2 vectors at 2 GiB + 8 into a sparse buffer */
    const MPI_Count far = ((MPI_Count)1 << 31) + 8;
    char *big = malloc((size_t)far + 4096);
    CHECK(big != NULL, "no 2 GiB of address space");
    if (big) {
        cpos = far;
        CHECK(MPI_Pack_c(src, 2, vec, big, far + 4096, &cpos, MPI_COMM_WORLD) == MPI_SUCCESS, "Pack_c far");
        CHECK(cpos == far + (ipos - 4) && memcmp(big + far, pi + 4, (size_t)(ipos - 4)) == 0,
              "Pack_c far: position %lld", (long long)(cpos - far));
        memset(back, 0, sizeof back);
        cpos = far;
        CHECK(MPI_Unpack_c(big, far + 4096, &cpos, back, 2, vec, MPI_COMM_WORLD) == MPI_SUCCESS
                  && back[12 + 10 + 1] == src[12 + 10 + 1] && cpos == far + (ipos - 4),
              "Unpack_c far");
        /* the int forms cannot reach it: the int outsize is at most INT_MAX */
        free(big);
    }

    /* external32: the _c forms give the int forms' bytes */
    MPI_Aint esz, epos = 0;
    MPI_Count cesz, cepos = 0;
    char ei[256], ec[256];
    MPI_Pack_external_size("external32", 2, vec, &esz);
    CHECK(MPI_Pack_external_size_c("external32", 2, vec, &cesz) == MPI_SUCCESS && cesz == esz,
          "Pack_external_size_c %lld, int form %ld", (long long)cesz, (long)esz);
    MPI_Pack_external("external32", src, 2, vec, ei, (MPI_Aint)sizeof ei, &epos);
    CHECK(MPI_Pack_external_c("external32", src, 2, vec, ec, (MPI_Count)sizeof ec, &cepos) == MPI_SUCCESS
              && cepos == epos && memcmp(ei, ec, (size_t)epos) == 0,
          "Pack_external_c: position %lld (int form %ld) or bytes differ", (long long)cepos, (long)epos);
    /* big-endian on the wire: the first int is src[0] */
    unsigned v0 = ((unsigned)(unsigned char)ec[0] << 24) | ((unsigned)(unsigned char)ec[1] << 16)
                | ((unsigned)(unsigned char)ec[2] << 8) | (unsigned)(unsigned char)ec[3];
    CHECK(v0 == (unsigned)src[0], "Pack_external_c: first int %u, want %d", v0, src[0]);
    memset(back, 0, sizeof back);
    cepos = 0;
    CHECK(MPI_Unpack_external_c("external32", ec, cesz, &cepos, back, 2, vec) == MPI_SUCCESS
              && cepos == cesz && back[12 + 11] == src[12 + 11] && back[0] == src[0],
          "Unpack_external_c");
    cepos = 0;
    CHECK(errclass(MPI_Pack_external_c("native", src, 2, vec, ec, (MPI_Count)sizeof ec, &cepos)) == MPI_ERR_ARG,
          "Pack_external_c datarep native");

    /* Buffer_attach_c / Bsend / Buffer_detach_c */
    int bsz = 1024 + MPI_BSEND_OVERHEAD;
    char *bbuf = malloc((size_t)bsz);
    CHECK(MPI_Buffer_attach_c(bbuf, (MPI_Count)bsz) == MPI_SUCCESS, "Buffer_attach_c");
    int to = (rank + 1) % size, from = (rank + size - 1) % size, msg = 77 + rank, got = -1;
    MPI_Request rq;
    MPI_Irecv(&got, 1, MPI_INT, from, 5, MPI_COMM_WORLD, &rq);
    CHECK(MPI_Bsend(&msg, 1, MPI_INT, to, 5, MPI_COMM_WORLD) == MPI_SUCCESS, "Bsend into a _c buffer");
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(got == 77 + from, "Bsend: got %d", got);
    void *addr = NULL;
    MPI_Count dsz = 0;
    CHECK(MPI_Buffer_detach_c(&addr, &dsz) == MPI_SUCCESS && addr == bbuf && dsz == bsz,
          "Buffer_detach_c: %p %lld", addr, (long long)dsz);
    /* an attached buffer larger than an int: the int detach refuses, the _c one works */
    char *huge = malloc(((size_t)1 << 31) + 64);
    if (huge) {
        CHECK(MPI_Buffer_attach_c(huge, ((MPI_Count)1 << 31) + 64) == MPI_SUCCESS, "Buffer_attach_c 2 GiB");
        int isize = 0;
        addr = NULL;
        CHECK(errclass(MPI_Buffer_detach(&addr, &isize)) == MPI_ERR_COUNT, "Buffer_detach of 2 GiB");
        CHECK(errclass(MPI_Buffer_attach(bbuf, bsz)) == MPI_ERR_BUFFER, "the 2 GiB buffer is still attached");
        CHECK(MPI_Buffer_detach_c(&addr, &dsz) == MPI_SUCCESS && addr == huge && dsz == ((MPI_Count)1 << 31) + 64,
              "Buffer_detach_c of 2 GiB: %lld", (long long)dsz);
        free(huge);
    }
    CHECK(errclass(MPI_Buffer_attach_c(bbuf, -5)) == MPI_ERR_COUNT, "Buffer_attach_c size -5");
    free(bbuf);

    MPI_Type_free(&vec);
    int all;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "large_count_pack: %d failures\n" : "large_count_pack: ok\n", all);
    MPI_Finalize();
    return all != 0;
}
