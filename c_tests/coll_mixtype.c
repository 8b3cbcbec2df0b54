/* Reductions where processes pass different datatypes with the same type signature:
 * by rank r % 3, count 3n of MPI_DOUBLE, count n of a contiguous type of 3 MPI_DOUBLE,
 * or count n of a strided vector type of 3 MPI_DOUBLE (extent 5 doubles); for
 * MINLOC/MAXLOC, count 2n of MPI_DOUBLE_INT or MPI_SHORT_INT, or count n of a
 * contiguous type of 2 of them (MPI_SHORT_INT's index sits at 4, after padding its
 * packed form drops; also through MPI_Reduce_local). Across an intercommunicator this is what the standard allows (the two
 * groups give "count and datatype arguments that specify the same type signature"); on
 * an intracommunicator it asks for the same datatype everywhere, and shmpi accepts
 * matching signatures there too (Allreduce, Reduce, Scan, Bcast; not the
 * reduce-scatters, whose recvcounts must then be identical). Sizes from one element to
 * several channel slots, so the engine's chunks and shares must fall at the same bytes
 * on every rank whatever datatype it passed. Every result is checked against the
 * sequential fold computed here. */
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

typedef struct { double v; int i; } dint;
typedef struct { short v; int i; } sint; /* MPI_SHORT_INT: the index at 4, not at 2 */

/* Element k of rank r's vector (small integers: every sum is exact). */
static double val(int r, long k) { return (double)((r * 31 + k * 7) % 1000) - 300; }

static MPI_Datatype t3, tv, t2p, t2s;

/* Rank r's datatype and count for 3n doubles, and how its memory holds element k. */
static MPI_Datatype dtype_of(int r, long n, int *count) {
    switch (r % 3) {
    case 0: *count = (int)(3 * n); return MPI_DOUBLE;
    case 1: *count = (int)n; return t3;
    default: *count = (int)n; return tv;
    }
}
static long where(int r, long k) { return r % 3 == 2 ? (k / 3) * 5 + (k % 3) * 2 : k; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Type_contiguous(3, MPI_DOUBLE, &t3);
    MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &tv); /* extent 5 doubles */
    MPI_Type_contiguous(2, MPI_DOUBLE_INT, &t2p);
    MPI_Type_commit(&t3);
    MPI_Type_commit(&tv);
    MPI_Type_commit(&t2p);
    MPI_Type_contiguous(2, MPI_SHORT_INT, &t2s);
    MPI_Type_commit(&t2s);
    long sizes[] = {1, 7, 700, 150000};
    for (int si = 0; si < 4; si++) {
        long n = sizes[si], nd = 3 * n, ntot = nd * size;
        double *s = calloc(5 * n * size, 8), *o = calloc(5 * n * size, 8);
        double *want = malloc(ntot * 8);
        int c;
        MPI_Datatype t = dtype_of(rank, n, &c);
        for (long k = 0; k < ntot; k++) s[where(rank, k)] = val(rank, k);
        /* Allreduce SUM and MAX */
        for (int mx = 0; mx < 2; mx++) {
            for (long k = 0; k < nd; k++) {
                want[k] = val(0, k);
                for (int r = 1; r < size; r++)
                    want[k] = mx ? (val(r, k) > want[k] ? val(r, k) : want[k]) : want[k] + val(r, k);
            }
            memset(o, 0, 5 * n * size * 8);
            MPI_Allreduce(s, o, c, t, mx ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
            int bad = 0;
            for (long k = 0; k < nd; k++) bad += o[where(rank, k)] != want[k];
            CHECK(!bad, "Allreduce %s n=%ld: %d wrong", mx ? "MAX" : "SUM", n, bad);
            /* Reduce to the last rank */
            memset(o, 0, 5 * n * size * 8);
            MPI_Reduce(s, o, c, t, mx ? MPI_MAX : MPI_SUM, size - 1, MPI_COMM_WORLD);
            bad = 0;
            if (rank == size - 1)
                for (long k = 0; k < nd; k++) bad += o[where(rank, k)] != want[k];
            CHECK(!bad, "Reduce %s n=%ld: %d wrong", mx ? "MAX" : "SUM", n, bad);
        }
        /* Scan SUM */
        memset(o, 0, 5 * n * size * 8);
        MPI_Scan(s, o, c, t, MPI_SUM, MPI_COMM_WORLD);
        int bad = 0;
        for (long k = 0; k < nd; k++) {
            double w = 0;
            for (int r = 0; r <= rank; r++) w += val(r, k);
            bad += o[where(rank, k)] != w;
        }
        CHECK(!bad, "Scan n=%ld: %d wrong", n, bad);
        /* Bcast from rank 1 % size */
        int root = 1 % size;
        for (long k = 0; k < nd; k++) o[where(rank, k)] = rank == root ? val(root, k) : -1;
        MPI_Bcast(o, c, t, root, MPI_COMM_WORLD);
        bad = 0;
        for (long k = 0; k < nd; k++) bad += o[where(rank, k)] != val(root, k);
        CHECK(!bad, "Bcast n=%ld: %d wrong", n, bad);
        /* MAXLOC on pairs: 2n MPI_DOUBLE_INT, or n of a contiguous type of two */
        long np2 = 2 * n;
        dint *ps = malloc(np2 * sizeof(dint)), *po = malloc(np2 * sizeof(dint));
        for (long k = 0; k < np2; k++) ps[k] = (dint){(double)((rank * 13 + k * 5) % 7), rank};
        memset(po, 0, np2 * sizeof(dint));
        MPI_Allreduce(ps, po, rank % 2 ? (int)n : (int)np2, rank % 2 ? t2p : MPI_DOUBLE_INT,
                      MPI_MAXLOC, MPI_COMM_WORLD);
        bad = 0;
        for (long k = 0; k < np2; k++) {
            dint w = {(double)((0 * 13 + k * 5) % 7), 0};
            for (int r = 1; r < size; r++) {
                double v = (double)((r * 13 + k * 5) % 7);
                if (v > w.v) w = (dint){v, r};
            }
            bad += po[k].v != w.v || po[k].i != w.i;
        }
        CHECK(!bad, "Allreduce MAXLOC n=%ld: %d wrong", n, bad);
        /* MINLOC on MPI_SHORT_INT pairs, and MPI_Reduce_local on the derived type */
        sint *qs = malloc(np2 * sizeof(sint)), *qo = malloc(np2 * sizeof(sint));
        for (long k = 0; k < np2; k++) qs[k] = (sint){(short)((rank * 11 + k * 3) % 5), rank};
        memset(qo, 0, np2 * sizeof(sint));
        MPI_Allreduce(qs, qo, rank % 2 ? (int)n : (int)np2, rank % 2 ? t2s : MPI_SHORT_INT,
                      MPI_MINLOC, MPI_COMM_WORLD);
        bad = 0;
        for (long k = 0; k < np2; k++) {
            sint w = {(short)((k * 3) % 5), 0};
            for (int r = 1; r < size; r++) {
                short v = (short)((r * 11 + k * 3) % 5);
                if (v < w.v) w = (sint){v, r};
            }
            bad += qo[k].v != w.v || qo[k].i != w.i;
        }
        CHECK(!bad, "Allreduce MINLOC on SHORT_INT n=%ld: %d wrong", n, bad);
        for (long k = 0; k < np2; k++) qo[k] = (sint){(short)(k % 3), 1000 + (int)k};
        MPI_Reduce_local(qs, qo, (int)n, t2s, MPI_MINLOC);
        bad = 0;
        for (long k = 0; k < np2; k++) {
            sint a = qs[k], b = {(short)(k % 3), 1000 + (int)k};
            sint w = a.v < b.v || (a.v == b.v && a.i < b.i) ? a : b;
            bad += qo[k].v != w.v || qo[k].i != w.i;
        }
        CHECK(!bad, "Reduce_local MINLOC on a type of SHORT_INT n=%ld: %d wrong", n, bad);
        free(qs), free(qo);
        /* Intercommunicator: group A = ranks < size/2 passes MPI_DOUBLE, group B the
         * datatype of its first rank's kind; each receives the fold of the other group. */
        if (size >= 2) {
            int a = size / 2, ina = rank < a;
            MPI_Comm local, inter;
            MPI_Comm_split(MPI_COMM_WORLD, ina, rank, &local);
            MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, ina ? a : 0, 9, &inter);
            int gk = ina ? 0 : a % 3 ? a % 3 : 1; /* B never uses plain MPI_DOUBLE */
            int gc;
            MPI_Datatype gt = dtype_of(gk, n, &gc);
            for (long k = 0; k < nd; k++) s[where(gk, k)] = val(rank, k);
            memset(o, 0, 5 * n * size * 8);
            MPI_Allreduce(s, o, gc, gt, MPI_SUM, inter);
            bad = 0;
            for (long k = 0; k < nd; k++) {
                double w = 0;
                for (int r = ina ? a : 0; r < (ina ? size : a); r++) w += val(r, k);
                bad += o[where(gk, k)] != w;
            }
            CHECK(!bad, "intercomm Allreduce n=%ld: %d wrong", n, bad);
            MPI_Comm_free(&inter);
            MPI_Comm_free(&local);
        }
        free(ps), free(po), free(s), free(o), free(want);
    }
    MPI_Type_free(&t3);
    MPI_Type_free(&tv);
    MPI_Type_free(&t2p);
    MPI_Type_free(&t2s);
    int all;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("coll_mixtype: %s\n", all ? "FAILED" : "ok");
    MPI_Finalize();
    return all != 0;
}
