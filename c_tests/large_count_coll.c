/* The MPI-4 large-count forms of the data-movement collectives: MPI_Gather_c,
 * Gatherv_c, Scatter_c, Scatterv_c, Allgather_c, Allgatherv_c, Alltoall_c, Alltoallv_c,
 * Alltoallw_c, each blocking, nonblocking (MPI_I..._c) and persistent (..._init_c,
 * started twice), and the neighbourhood ones (MPI_Neighbor_..._c, MPI_Ineighbor_..._c,
 * MPI_Neighbor_..._init_c) on a ring graph. Every result is checked against the value
 * each element must have (val(sender, receiver, index)), computed here. Also: the in-place forms, a negative
 * MPI_Count (MPI_ERR_COUNT naming the call), and displacements past 2^31 bytes
 * (MPI_Aint displs of a gatherv, a scatterv and an alltoallw into buffers of 2 GiB +
 * a page, of which only the touched pages are ever mapped). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad = 0;
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); bad++; } } while (0)

static int rank, size;
enum { K = 5, MAXB = 4 };

static int val(int from, int to, int i) { return from * 1000003 + to * 1009 + i + 1; }

/* Runs a collective in form 0 (blocking), 1 (nonblocking) or 2 (persistent, started
 * twice; `reset` runs before each start and `verify` after each completion). */
#define FORMS(name, reset, verify, blocking, nonblocking, persistent)                     \
    for (int form = 0; form < 3; form++) {                                                \
        MPI_Request rq_;                                                                  \
        int rc_;                                                                          \
        reset;                                                                            \
        if (form == 0) {                                                                  \
            rc_ = blocking;                                                               \
            CHECK(rc_ == MPI_SUCCESS, "%s: rc %d", name, rc_);                            \
            verify;                                                                       \
        } else if (form == 1) {                                                           \
            rc_ = nonblocking;                                                            \
            CHECK(rc_ == MPI_SUCCESS, "I%s: rc %d", name, rc_);                           \
            MPI_Wait(&rq_, MPI_STATUS_IGNORE);                                            \
            verify;                                                                       \
        } else {                                                                          \
            rc_ = persistent;                                                             \
            CHECK(rc_ == MPI_SUCCESS, "%s_init: rc %d", name, rc_);                       \
            for (int s_ = 0; s_ < 2; s_++) {                                              \
                reset;                                                                    \
                MPI_Start(&rq_);                                                          \
                MPI_Wait(&rq_, MPI_STATUS_IGNORE);                                        \
                verify;                                                                   \
            }                                                                             \
            MPI_Request_free(&rq_);                                                       \
        }                                                                                 \
    }

static int *sbuf, *rbuf;
static MPI_Count cnt[64], rcnt[64];
static MPI_Aint dsp[64], rdsp[64];
static int total;

static void clear(void) { for (int i = 0; i < total; i++) rbuf[i] = -7; }

/* Rooted gathers and scatters to/from root `root`. */
static void rooted(int root) {
    /* MPI_Gather_c */
    for (int i = 0; i < K; i++) sbuf[i] = val(rank, root, i);
    FORMS("MPI_Gather_c", clear(),
          if (rank == root) for (int r = 0; r < size; r++) for (int i = 0; i < K; i++)
              CHECK(rbuf[r * K + i] == val(r, root, i), "Gather_c form %d: [%d][%d] = %d", form, r, i, rbuf[r * K + i]),
          MPI_Gather_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, root, MPI_COMM_WORLD),
          MPI_Igather_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, root, MPI_COMM_WORLD, &rq_),
          MPI_Gather_init_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &rq_));

    /* MPI_Gatherv_c: rank r sends r+1 elements to displacement 2r + r(r+1)/2 (gaps). */
    for (int r = 0; r < size; r++) { cnt[r] = r + 1; dsp[r] = 2 * r + r * (r + 1) / 2; }
    for (int i = 0; i <= rank; i++) sbuf[i] = val(rank, root, 100 + i);
    FORMS("MPI_Gatherv_c", clear(),
          if (rank == root) for (int r = 0; r < size; r++) {
              for (int i = 0; i < r + 1; i++)
                  CHECK(rbuf[dsp[r] + i] == val(r, root, 100 + i), "Gatherv_c form %d: [%d][%d] = %d", form, r, i, rbuf[dsp[r] + i]);
              CHECK(rbuf[dsp[r] + r + 1] == -7, "Gatherv_c form %d: gap after %d written", form, r);
          },
          MPI_Gatherv_c(sbuf, rank + 1, MPI_INT, rbuf, cnt, dsp, MPI_INT, root, MPI_COMM_WORLD),
          MPI_Igatherv_c(sbuf, rank + 1, MPI_INT, rbuf, cnt, dsp, MPI_INT, root, MPI_COMM_WORLD, &rq_),
          MPI_Gatherv_init_c(sbuf, rank + 1, MPI_INT, rbuf, cnt, dsp, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &rq_));

    /* MPI_Scatter_c */
    for (int j = 0; j < size; j++) for (int i = 0; i < K; i++) sbuf[j * K + i] = val(root, j, 200 + i);
    FORMS("MPI_Scatter_c", clear(),
          for (int i = 0; i < K; i++) CHECK(rbuf[i] == val(root, rank, 200 + i), "Scatter_c form %d: [%d] = %d", form, i, rbuf[i]),
          MPI_Scatter_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, root, MPI_COMM_WORLD),
          MPI_Iscatter_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, root, MPI_COMM_WORLD, &rq_),
          MPI_Scatter_init_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &rq_));

    /* MPI_Scatterv_c: rank j gets j+2 elements from displacement 3j + j(j+1)/2. */
    for (int j = 0; j < size; j++) {
        cnt[j] = j + 2;
        dsp[j] = 3 * j + j * (j + 1) / 2;
        for (int i = 0; i < j + 2; i++) sbuf[dsp[j] + i] = val(root, j, 300 + i);
    }
    FORMS("MPI_Scatterv_c", clear(),
          for (int i = 0; i < rank + 2; i++) CHECK(rbuf[i] == val(root, rank, 300 + i), "Scatterv_c form %d: [%d] = %d", form, i, rbuf[i]);
          CHECK(rbuf[rank + 2] == -7, "Scatterv_c form %d: wrote past the count", form),
          MPI_Scatterv_c(sbuf, cnt, dsp, MPI_INT, rbuf, rank + 2, MPI_INT, root, MPI_COMM_WORLD),
          MPI_Iscatterv_c(sbuf, cnt, dsp, MPI_INT, rbuf, rank + 2, MPI_INT, root, MPI_COMM_WORLD, &rq_),
          MPI_Scatterv_init_c(sbuf, cnt, dsp, MPI_INT, rbuf, rank + 2, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &rq_));

    /* MPI_Gather_c in place at the root */
    FORMS("MPI_Gather_c in place",
          { clear(); if (rank == root) for (int i = 0; i < K; i++) rbuf[root * K + i] = val(root, root, 400 + i);
            else for (int i = 0; i < K; i++) sbuf[i] = val(rank, root, 400 + i); },
          if (rank == root) for (int r = 0; r < size; r++) for (int i = 0; i < K; i++)
              CHECK(rbuf[r * K + i] == val(r, root, 400 + i), "Gather_c in place form %d: [%d][%d] = %d", form, r, i, rbuf[r * K + i]),
          MPI_Gather_c(rank == root ? MPI_IN_PLACE : sbuf, K, MPI_INT, rbuf, K, MPI_INT, root, MPI_COMM_WORLD),
          MPI_Igather_c(rank == root ? MPI_IN_PLACE : sbuf, K, MPI_INT, rbuf, K, MPI_INT, root, MPI_COMM_WORLD, &rq_),
          MPI_Gather_init_c(rank == root ? MPI_IN_PLACE : sbuf, K, MPI_INT, rbuf, K, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &rq_));
}

static void everyone(void) {
    /* MPI_Allgather_c */
    for (int i = 0; i < K; i++) sbuf[i] = val(rank, 0, 500 + i);
    FORMS("MPI_Allgather_c", clear(),
          for (int r = 0; r < size; r++) for (int i = 0; i < K; i++)
              CHECK(rbuf[r * K + i] == val(r, 0, 500 + i), "Allgather_c form %d: [%d][%d] = %d", form, r, i, rbuf[r * K + i]),
          MPI_Allgather_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, MPI_COMM_WORLD),
          MPI_Iallgather_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, MPI_COMM_WORLD, &rq_),
          MPI_Allgather_init_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq_));

    /* MPI_Allgather_c in place */
    FORMS("MPI_Allgather_c in place",
          { clear(); for (int i = 0; i < K; i++) rbuf[rank * K + i] = val(rank, 0, 550 + i); },
          for (int r = 0; r < size; r++) for (int i = 0; i < K; i++)
              CHECK(rbuf[r * K + i] == val(r, 0, 550 + i), "Allgather_c in place form %d: [%d][%d] = %d", form, r, i, rbuf[r * K + i]),
          MPI_Allgather_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, K, MPI_INT, MPI_COMM_WORLD),
          MPI_Iallgather_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, K, MPI_INT, MPI_COMM_WORLD, &rq_),
          MPI_Allgather_init_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, K, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq_));

    /* MPI_Allgatherv_c: rank r contributes r+1 elements at 2r + r(r+1)/2. */
    for (int r = 0; r < size; r++) { cnt[r] = r + 1; dsp[r] = 2 * r + r * (r + 1) / 2; }
    for (int i = 0; i <= rank; i++) sbuf[i] = val(rank, 0, 600 + i);
    FORMS("MPI_Allgatherv_c", clear(),
          for (int r = 0; r < size; r++) {
              for (int i = 0; i < r + 1; i++)
                  CHECK(rbuf[dsp[r] + i] == val(r, 0, 600 + i), "Allgatherv_c form %d: [%d][%d] = %d", form, r, i, rbuf[dsp[r] + i]);
              CHECK(rbuf[dsp[r] + r + 1] == -7, "Allgatherv_c form %d: gap after %d written", form, r);
          },
          MPI_Allgatherv_c(sbuf, rank + 1, MPI_INT, rbuf, cnt, dsp, MPI_INT, MPI_COMM_WORLD),
          MPI_Iallgatherv_c(sbuf, rank + 1, MPI_INT, rbuf, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &rq_),
          MPI_Allgatherv_init_c(sbuf, rank + 1, MPI_INT, rbuf, cnt, dsp, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq_));

    /* MPI_Alltoall_c */
    for (int j = 0; j < size; j++) for (int i = 0; i < K; i++) sbuf[j * K + i] = val(rank, j, 700 + i);
    FORMS("MPI_Alltoall_c", clear(),
          for (int r = 0; r < size; r++) for (int i = 0; i < K; i++)
              CHECK(rbuf[r * K + i] == val(r, rank, 700 + i), "Alltoall_c form %d: [%d][%d] = %d", form, r, i, rbuf[r * K + i]),
          MPI_Alltoall_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, MPI_COMM_WORLD),
          MPI_Ialltoall_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, MPI_COMM_WORLD, &rq_),
          MPI_Alltoall_init_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq_));

    /* MPI_Alltoall_c in place */
    FORMS("MPI_Alltoall_c in place",
          { clear(); for (int j = 0; j < size; j++) for (int i = 0; i < K; i++) rbuf[j * K + i] = val(rank, j, 750 + i); },
          for (int r = 0; r < size; r++) for (int i = 0; i < K; i++)
              CHECK(rbuf[r * K + i] == val(r, rank, 750 + i), "Alltoall_c in place form %d: [%d][%d] = %d", form, r, i, rbuf[r * K + i]),
          MPI_Alltoall_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, K, MPI_INT, MPI_COMM_WORLD),
          MPI_Ialltoall_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, K, MPI_INT, MPI_COMM_WORLD, &rq_),
          MPI_Alltoall_init_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, K, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq_));

    /* MPI_Alltoallv_c and MPI_Alltoallw_c: from rank a to rank b go (a + b) % 3 + 1
     * elements; block j of the send side at 5j (+1 gap), block r of the receive side
     * at 4r + 1. The w form takes the same layout in bytes. */
    MPI_Datatype ints[64];
    for (int j = 0; j < size; j++) {
        cnt[j] = (rank + j) % 3 + 1;
        dsp[j] = 5 * j;
        rcnt[j] = (j + rank) % 3 + 1;
        rdsp[j] = 4 * j + 1;
        ints[j] = MPI_INT;
        for (int i = 0; i < cnt[j]; i++) sbuf[dsp[j] + i] = val(rank, j, 800 + i);
    }
#define VCHECK(what)                                                                       \
    for (int r = 0; r < size; r++) {                                                       \
        for (int i = 0; i < rcnt[r]; i++)                                                  \
            CHECK(rbuf[rdsp[r] + i] == val(r, rank, 800 + i), what " form %d: [%d][%d] = %d", form, r, i, rbuf[rdsp[r] + i]); \
        CHECK(rbuf[rdsp[r] + rcnt[r]] == -7, what " form %d: wrote past block %d", form, r); \
    }
    FORMS("MPI_Alltoallv_c", clear(), VCHECK("Alltoallv_c"),
          MPI_Alltoallv_c(sbuf, cnt, dsp, MPI_INT, rbuf, rcnt, rdsp, MPI_INT, MPI_COMM_WORLD),
          MPI_Ialltoallv_c(sbuf, cnt, dsp, MPI_INT, rbuf, rcnt, rdsp, MPI_INT, MPI_COMM_WORLD, &rq_),
          MPI_Alltoallv_init_c(sbuf, cnt, dsp, MPI_INT, rbuf, rcnt, rdsp, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rq_));
    MPI_Aint bs[64], br[64];
    for (int j = 0; j < size; j++) { bs[j] = dsp[j] * (MPI_Aint)sizeof(int); br[j] = rdsp[j] * (MPI_Aint)sizeof(int); }
    FORMS("MPI_Alltoallw_c", clear(), VCHECK("Alltoallw_c"),
          MPI_Alltoallw_c(sbuf, cnt, bs, ints, rbuf, rcnt, br, ints, MPI_COMM_WORLD),
          MPI_Ialltoallw_c(sbuf, cnt, bs, ints, rbuf, rcnt, br, ints, MPI_COMM_WORLD, &rq_),
          MPI_Alltoallw_init_c(sbuf, cnt, bs, ints, rbuf, rcnt, br, ints, MPI_COMM_WORLD, MPI_INFO_NULL, &rq_));
}

/* The neighbourhood forms on a directed ring: each rank receives from prev, sends to next. */
static void neighbours(void) {
    int prev = (rank + size - 1) % size, next = (rank + 1) % size;
    MPI_Comm ring;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &prev, MPI_UNWEIGHTED, 1, &next,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
    int form = 0;
    for (form = 0; form < 2; form++) {
        MPI_Request rq = MPI_REQUEST_NULL;
        int rc;
        /* allgather / alltoall: K elements */
        for (int i = 0; i < K; i++) sbuf[i] = val(rank, next, 900 + i);
        clear();
        rc = form ? MPI_Ineighbor_allgather_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, ring, &rq)
                  : MPI_Neighbor_allgather_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, ring);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS, "Neighbor_allgather_c form %d: rc %d", form, rc);
        for (int i = 0; i < K; i++) CHECK(rbuf[i] == val(prev, rank, 900 + i), "Neighbor_allgather_c form %d: [%d] = %d", form, i, rbuf[i]);
        clear();
        rc = form ? MPI_Ineighbor_alltoall_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, ring, &rq)
                  : MPI_Neighbor_alltoall_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, ring);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS, "Neighbor_alltoall_c form %d: rc %d", form, rc);
        for (int i = 0; i < K; i++) CHECK(rbuf[i] == val(prev, rank, 900 + i), "Neighbor_alltoall_c form %d: [%d] = %d", form, i, rbuf[i]);
        /* v and w: rank a sends a % 3 + 2 elements from displacement 3, received at 2 */
        MPI_Count sc = rank % 3 + 2, rc_ = prev % 3 + 2;
        MPI_Aint sd = 3, rd = 2, sdb = 3 * (MPI_Aint)sizeof(int), rdb = 2 * (MPI_Aint)sizeof(int);
        MPI_Datatype it = MPI_INT;
        for (int i = 0; i < sc; i++) sbuf[3 + i] = val(rank, next, 950 + i);
        clear();
        rc = form ? MPI_Ineighbor_allgatherv_c(sbuf + 3, sc, MPI_INT, rbuf, &rc_, &rd, MPI_INT, ring, &rq)
                  : MPI_Neighbor_allgatherv_c(sbuf + 3, sc, MPI_INT, rbuf, &rc_, &rd, MPI_INT, ring);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS, "Neighbor_allgatherv_c form %d: rc %d", form, rc);
        for (int i = 0; i < rc_; i++) CHECK(rbuf[2 + i] == val(prev, rank, 950 + i), "Neighbor_allgatherv_c form %d: [%d] = %d", form, i, rbuf[2 + i]);
        CHECK(rbuf[1] == -7 && rbuf[2 + rc_] == -7, "Neighbor_allgatherv_c form %d: wrote outside the block", form);
        clear();
        rc = form ? MPI_Ineighbor_alltoallv_c(sbuf, &sc, &sd, MPI_INT, rbuf, &rc_, &rd, MPI_INT, ring, &rq)
                  : MPI_Neighbor_alltoallv_c(sbuf, &sc, &sd, MPI_INT, rbuf, &rc_, &rd, MPI_INT, ring);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS, "Neighbor_alltoallv_c form %d: rc %d", form, rc);
        for (int i = 0; i < rc_; i++) CHECK(rbuf[2 + i] == val(prev, rank, 950 + i), "Neighbor_alltoallv_c form %d: [%d] = %d", form, i, rbuf[2 + i]);
        clear();
        rc = form ? MPI_Ineighbor_alltoallw_c(sbuf, &sc, &sdb, &it, rbuf, &rc_, &rdb, &it, ring, &rq)
                  : MPI_Neighbor_alltoallw_c(sbuf, &sc, &sdb, &it, rbuf, &rc_, &rdb, &it, ring);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS, "Neighbor_alltoallw_c form %d: rc %d", form, rc);
        for (int i = 0; i < rc_; i++) CHECK(rbuf[2 + i] == val(prev, rank, 950 + i), "Neighbor_alltoallw_c form %d: [%d] = %d", form, i, rbuf[2 + i]);
        CHECK(rbuf[2 + rc_] == -7, "Neighbor_alltoallw_c form %d: wrote past the block", form);
    }
    /* the persistent forms (MPI_Neighbor_..._init_c), each started twice */
    {
        MPI_Request p[5];
        MPI_Count sc = rank % 3 + 2, rc_ = prev % 3 + 2;
        MPI_Aint sd = 3, rd = 2, sdb = 3 * (MPI_Aint)sizeof(int), rdb = 2 * (MPI_Aint)sizeof(int);
        MPI_Datatype it = MPI_INT;
        int *r5 = malloc(sizeof(int) * 5 * (size_t)total);
        MPI_Neighbor_allgather_init_c(sbuf, K, MPI_INT, r5, K, MPI_INT, ring, MPI_INFO_NULL, &p[0]);
        MPI_Neighbor_alltoall_init_c(sbuf, K, MPI_INT, r5 + total, K, MPI_INT, ring, MPI_INFO_NULL, &p[1]);
        MPI_Neighbor_allgatherv_init_c(sbuf + 3, sc, MPI_INT, r5 + 2 * total, &rc_, &rd, MPI_INT, ring, MPI_INFO_NULL, &p[2]);
        MPI_Neighbor_alltoallv_init_c(sbuf, &sc, &sd, MPI_INT, r5 + 3 * total, &rc_, &rd, MPI_INT, ring, MPI_INFO_NULL, &p[3]);
        MPI_Neighbor_alltoallw_init_c(sbuf, &sc, &sdb, &it, r5 + 4 * total, &rc_, &rdb, &it, ring, MPI_INFO_NULL, &p[4]);
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < 8; i++) sbuf[i] = val(rank, next, 1000 * round + i);
            for (int i = 0; i < 5 * total; i++) r5[i] = -7;
            MPI_Startall(5, p);
            MPI_Status sts[5];
            MPI_Waitall(5, p, sts);
            for (int i = 0; i < K; i++) {
                CHECK(r5[i] == val(prev, rank, 1000 * round + i), "Neighbor_allgather_init_c round %d: [%d] = %d", round, i, r5[i]);
                CHECK(r5[total + i] == val(prev, rank, 1000 * round + i), "Neighbor_alltoall_init_c round %d: [%d] = %d", round, i, r5[total + i]);
            }
            for (int i = 0; i < rc_; i++) {
                CHECK(r5[2 * total + 2 + i] == val(prev, rank, 1000 * round + 3 + i), "Neighbor_allgatherv_init_c round %d: [%d]", round, i);
                CHECK(r5[3 * total + 2 + i] == val(prev, rank, 1000 * round + 3 + i), "Neighbor_alltoallv_init_c round %d: [%d]", round, i);
                CHECK(r5[4 * total + 2 + i] == val(prev, rank, 1000 * round + 3 + i), "Neighbor_alltoallw_init_c round %d: [%d]", round, i);
            }
            CHECK(r5[4 * total + 2 + rc_] == -7 && r5[2 * total + 1] == -7, "Neighbor_..._init_c round %d: wrote outside a block", round);
        }
        for (int q = 0; q < 5; q++) MPI_Request_free(&p[q]);
        free(r5);
    }
    MPI_Comm_free(&ring);
}

/* Displacements past 2^31 bytes: a block lands (or is taken from) 2 GiB + 64 bytes into
 * a buffer whose untouched pages are never mapped. */
static void far_displacements(void) {
    const MPI_Aint far = ((MPI_Aint)1 << 31) + 64;
    const int B = 16;
    unsigned char *big = malloc((size_t)far + 4096);
    CHECK(big != NULL, "no 2 GiB of address space");
    if (!big) return;
    unsigned char mine[16], got[16];
    for (int i = 0; i < B; i++) mine[i] = (unsigned char)(rank * 31 + i);
    int root = 0;
    /* Gatherv_c: the last rank's block goes to `far`, the others' to 16 r. */
    for (int r = 0; r < size; r++) { cnt[r] = B; dsp[r] = r == size - 1 ? far : 16 * r; }
    int rc = MPI_Gatherv_c(mine, B, MPI_BYTE, big, cnt, dsp, MPI_BYTE, root, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "Gatherv_c far: rc %d", rc);
    if (rank == root)
        for (int r = 0; r < size; r++) for (int i = 0; i < B; i++)
            CHECK(big[dsp[r] + i] == (unsigned char)(r * 31 + i), "Gatherv_c far: block %d byte %d = %d", r, i, big[dsp[r] + i]);
    /* Scatterv_c back from the same places, each byte + 1 */
    if (rank == root)
        for (int r = 0; r < size; r++) for (int i = 0; i < B; i++) big[dsp[r] + i]++;
    rc = MPI_Scatterv_c(big, cnt, dsp, MPI_BYTE, got, B, MPI_BYTE, root, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "Scatterv_c far: rc %d", rc);
    for (int i = 0; i < B; i++) CHECK(got[i] == (unsigned char)(rank * 31 + i + 1), "Scatterv_c far: byte %d = %d", i, got[i]);
    /* Alltoallw_c: the block from the last rank is received at `far` */
    MPI_Datatype bytes[64];
    for (int j = 0; j < size; j++) {
        cnt[j] = B; rcnt[j] = B; dsp[j] = 0; bytes[j] = MPI_BYTE;
        rdsp[j] = j == size - 1 ? far : 16 * j;
    }
    rc = MPI_Alltoallw_c(mine, cnt, dsp, bytes, big, rcnt, rdsp, bytes, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "Alltoallw_c far: rc %d", rc);
    for (int r = 0; r < size; r++) for (int i = 0; i < B; i++)
        CHECK(big[rdsp[r] + i] == (unsigned char)(r * 31 + i), "Alltoallw_c far: block %d byte %d = %d", r, i, big[rdsp[r] + i]);
    free(big);
}

static void errors(void) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char msg[MPI_MAX_ERROR_STRING];
    int len, cls;
    int rc = MPI_Allgather_c(sbuf, (MPI_Count)-3, MPI_INT, rbuf, K, MPI_INT, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "Allgather_c sendcount -3: class %d", cls);
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, "MPI_Allgather_c") && strstr(msg, "-3"), "Allgather_c sendcount -3: message '%s'", msg);
    for (int j = 0; j < size; j++) { cnt[j] = j == 0 ? -1 : 1; dsp[j] = j; }
    MPI_Request rq;
    rc = MPI_Ialltoallv_c(sbuf, cnt, dsp, MPI_INT, rbuf, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &rq);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "Ialltoallv_c sendcounts[0] -1: class %d", cls);
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, "MPI_Ialltoallv_c"), "Ialltoallv_c: message '%s'", msg);
    /* still usable */
    for (int i = 0; i < K; i++) sbuf[i] = val(rank, 0, i);
    rc = MPI_Allgather_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "Allgather_c after the errors: rc %d", rc);
    for (int r = 0; r < size; r++) CHECK(rbuf[r * K] == val(r, 0, 0), "Allgather_c after the errors: wrong data");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 64) MPI_Abort(MPI_COMM_WORLD, 2);
    total = 8 * size * (size + K + 8);
    sbuf = malloc(sizeof(int) * (size_t)total);
    rbuf = malloc(sizeof(int) * (size_t)total);
    for (int root = 0; root < size; root++) rooted(root);
    everyone();
    neighbours();
    far_displacements();
    errors();
    free(sbuf);
    free(rbuf);
    int all;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "large_count_coll: %d failures\n" : "large_count_coll: ok\n", all);
    MPI_Finalize();
    return all != 0;
}
