/* Point-to-point messages of non-contiguous datatypes, which the library packs and
 * unpacks piece by piece as they move (into the ring frame, through the pipe's segments,
 * from a staging buffer of a direct read): every pairing of a contiguous buffer and three
 * layouts on the sending and the receiving side, at sizes around the eager limit and the
 * pipe segment and far above them, so that pieces start and end inside blocks of every
 * width (1, 2, 4, 7, 8, 13, 16, 24 bytes). A receive buffer longer than the message, and
 * one shorter (MPI_ERR_TRUNCATE under MPI_ERRORS_RETURN), nonblocking sends to itself,
 * MPI_Sendrecv_replace and MPI_Bsend of a layout. The oracle is this file's own walk over
 * each layout's (displacement, length) blocks: every packed byte k of a message is
 * pat(seed, k), every byte of a receive buffer outside the bytes received keeps its
 * sentinel. Every layout is built of MPI_BYTE, so sends and receives of different
 * layouts match by type signature. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures;

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "rank %d: ", rank);                                          \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n");                                                       \
            failures++;                                                                  \
        }                                                                                \
    } while (0)

#define MAXB 4
/* One instance: blocks (disp, len) in order, and the extent between instances. */
struct layout {
    const char *name;
    int nb;
    int disp[MAXB], len[MAXB];
    int extent;
};

static const struct layout layouts[] = {
    {"contiguous", 1, {0}, {1}, 1},
    {"blocks 7,13,1,2", 4, {0, 9, 30, 33}, {7, 13, 1, 2}, 40},
    {"blocks 24 of 40", 1, {8}, {24}, 40},
    {"blocks 1,4,8,16", 4, {0, 2, 8, 20}, {1, 4, 8, 16}, 40},
};
#define NLAYOUT (int)(sizeof layouts / sizeof layouts[0])

static int data_bytes(const struct layout *l) {
    int n = 0;
    for (int b = 0; b < l->nb; b++) n += l->len[b];
    return n;
}

/* The MPI datatype of one instance of `l` (MPI_BYTE for the contiguous one). */
static MPI_Datatype make_type(const struct layout *l) {
    if (l->nb == 1 && l->len[0] == 1 && l->extent == 1) return MPI_BYTE;
    MPI_Datatype t, r;
    if (l->nb == 1) {
        /* a vector of one block an instance, resized to the extent */
        MPI_Type_create_hindexed(1, l->len, (MPI_Aint[]){l->disp[0]}, MPI_BYTE, &t);
    } else {
        MPI_Aint d[MAXB];
        for (int b = 0; b < l->nb; b++) d[b] = l->disp[b];
        MPI_Type_create_hindexed(l->nb, l->len, d, MPI_BYTE, &t);
    }
    MPI_Type_create_resized(t, 0, l->extent, &r);
    MPI_Type_free(&t);
    MPI_Type_commit(&r);
    return r;
}

static unsigned char pat(int seed, size_t k) {
    return (unsigned char)(seed * 29 + k * 13 + (k >> 8) * 7 + (k >> 16));
}

#define GAP 0xEE  /* the sender's bytes outside its type map */
#define SENT 0xCC /* the receiver's bytes before the receive */

/* Calls f(user offset, stream position) for every data byte of `count` instances. */
#define WALK(l, count, body)                                                             \
    do {                                                                                 \
        size_t k_ = 0;                                                                   \
        for (int i_ = 0; i_ < (count); i_++)                                             \
            for (int b_ = 0; b_ < (l)->nb; b_++)                                         \
                for (int j_ = 0; j_ < (l)->len[b_]; j_++, k_++) {                        \
                    size_t off = (size_t)i_ * (l)->extent + (l)->disp[b_] + j_;          \
                    size_t k = k_;                                                       \
                    body;                                                                \
                }                                                                        \
    } while (0)

static size_t span(const struct layout *l, int count) {
    return (size_t)count * l->extent + 64;
}

/* A send buffer of `count` instances whose packed stream is pat(seed, .). */
static unsigned char *send_buf(const struct layout *l, int count, int seed) {
    size_t n = span(l, count);
    unsigned char *b = malloc(n);
    memset(b, GAP, n);
    WALK(l, count, b[off] = pat(seed, k));
    return b;
}

/* Checks a receive buffer of `count` instances of `l` after `got` bytes arrived; when
 * `untouched_ok`, a buffer the receive left as it was passes too (the standard leaves
 * the buffer of a truncated receive undefined: MPICH writes nothing, this library the
 * bytes that fit). */
static void verify(const struct layout *l, int count, const unsigned char *b, size_t got,
                   int seed, const char *what, int untouched_ok) {
    size_t n = span(l, count);
    unsigned char *want = malloc(n);
    memset(want, SENT, n);
    int untouched = 1;
    WALK(l, count, if (k < got && b[off] != SENT) untouched = 0);
    if (!(untouched_ok && untouched)) WALK(l, count, if (k < got) want[off] = pat(seed, k));
    for (size_t i = 0; i < n; i++)
        if (b[i] != want[i]) {
            CHECK(0, "%s: byte %zu of the receive buffer is %d, expected %d", what, i, b[i],
                  want[i]);
            break;
        }
    free(want);
}

/* Instances of `l` that hold at least `bytes` bytes. */
static int count_for(const struct layout *l, size_t bytes) {
    int d = data_bytes(l);
    return (int)((bytes + (size_t)d - 1) / (size_t)d);
}

/* One message of `bytes` (about) from layout s to layout r between this rank and its
 * partner, both directions at once; the receive holds `extra` more bytes (negative:
 * fewer, a truncation). */
static void pairing(int si, int ri, size_t bytes, long extra, int seed) {
    const struct layout *sl = &layouts[si], *rl = &layouts[ri];
    int partner = (rank ^ 1) < size ? rank ^ 1 : rank;
    int scount = count_for(sl, bytes);
    size_t sent = (size_t)scount * data_bytes(sl);
    long cap_want = (long)sent + extra;
    int rcount = (int)(cap_want / data_bytes(rl));
    size_t cap = (size_t)rcount * data_bytes(rl);
    MPI_Datatype st = make_type(sl), rt = make_type(rl);
    unsigned char *s = send_buf(sl, scount, seed + rank);
    size_t rn = span(rl, rcount);
    unsigned char *r = malloc(rn);
    memset(r, SENT, rn);
    MPI_Request q[2];
    MPI_Irecv(r, rcount, rt, partner, seed, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(s, scount, st, partner, seed, MPI_COMM_WORLD, &q[1]);
    MPI_Status sts[2];
    int rc = MPI_Waitall(2, q, sts);
    char what[160];
    snprintf(what, sizeof what, "%s (%d) -> %s (%d), %zu bytes into %zu", sl->name, scount,
             rl->name, rcount, sent, cap);
    size_t got = sent < cap ? sent : cap;
    if (sent > cap) {
        int rcls = -1, ecls = -1;
        MPI_Error_class(rc, &rcls);
        MPI_Error_class(sts[0].MPI_ERROR, &ecls);
        CHECK(rcls == MPI_ERR_IN_STATUS && ecls == MPI_ERR_TRUNCATE,
              "%s: Waitall rc %d, receive error %d, expected MPI_ERR_TRUNCATE", what, rc,
              sts[0].MPI_ERROR);
    } else {
        CHECK(rc == MPI_SUCCESS, "%s: Waitall rc %d", what, rc);
        int cnt = -1;
        MPI_Get_count(&sts[0], MPI_BYTE, &cnt);
        CHECK(cnt == (int)sent, "%s: MPI_Get_count %d", what, cnt);
    }
    verify(rl, rcount, r, got, seed + partner, what, sent > cap);
    free(s);
    free(r);
    if (st != MPI_BYTE) MPI_Type_free(&st);
    if (rt != MPI_BYTE) MPI_Type_free(&rt);
}

/* MPI_Sendrecv_replace and MPI_Bsend of a layout. */
static void replace_and_bsend(int li, size_t bytes, int seed) {
    const struct layout *l = &layouts[li];
    int partner = (rank ^ 1) < size ? rank ^ 1 : rank;
    int count = count_for(l, bytes);
    size_t n = (size_t)count * data_bytes(l);
    MPI_Datatype t = make_type(l);
    unsigned char *b = send_buf(l, count, seed + rank);
    MPI_Sendrecv_replace(b, count, t, partner, seed, partner, seed, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
    unsigned char *want = send_buf(l, count, seed + partner);
    CHECK(memcmp(b, want, span(l, count)) == 0, "Sendrecv_replace of %s, %zu bytes", l->name, n);
    int bsize = (int)n + MPI_BSEND_OVERHEAD;
    void *att = malloc((size_t)bsize);
    MPI_Buffer_attach(att, bsize);
    unsigned char *s = send_buf(l, count, seed + 1 + rank);
    MPI_Request q;
    unsigned char *r = malloc(span(l, count));
    memset(r, SENT, span(l, count));
    MPI_Irecv(r, count, t, partner, seed + 1, MPI_COMM_WORLD, &q);
    MPI_Bsend(s, count, t, partner, seed + 1, MPI_COMM_WORLD);
    memset(s, 0, span(l, count)); /* the buffered copy must not change */
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    verify(l, count, r, n, seed + 1 + partner, "Bsend", 0);
    void *back;
    int bs;
    MPI_Buffer_detach(&back, &bs);
    free(att);
    free(s);
    free(r);
    free(b);
    free(want);
    if (t != MPI_BYTE) MPI_Type_free(&t);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const size_t sizes[] = {100, 16383, 16385, 65536 + 7, 300001, (1 << 20) + 13, 3 << 20};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    int seed = 1;
    for (int z = 0; z < nsizes; z++)
        for (int si = 0; si < NLAYOUT; si++)
            for (int ri = 0; ri < NLAYOUT; ri++) {
                pairing(si, ri, sizes[z], 41, seed);
                seed = (seed + 3) % 30000;
            }
    /* truncations: the receive holds a little less than the message */
    for (int z = 0; z < nsizes; z++)
        for (int si = 0; si < NLAYOUT; si++)
            for (int ri = 0; ri < NLAYOUT; ri++) {
                if (sizes[z] < 200) continue;
                pairing(si, ri, sizes[z], -(long)(sizes[z] / 3), seed);
                seed = (seed + 3) % 30000;
            }
    for (int li = 1; li < NLAYOUT; li++) {
        replace_and_bsend(li, 100, 30001 + li * 10);
        replace_and_bsend(li, 300001, 30101 + li * 10);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("p2p_typed_stream: %s (%d failures)\n", all ? "FAILED" : "ok", all);
    MPI_Finalize();
    return all != 0;
}
