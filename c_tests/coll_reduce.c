/* Reduction collectives against a sequential oracle, bit for bit.
 *
 * For every (type, op) case, count, in-place choice and root, each rank generates every
 * rank's input deterministically, computes the left-to-right sequential reduction
 * x0 op x1 op ... op x(n-1) itself, and compares what MPI_Reduce, MPI_Allreduce,
 * MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Scan and MPI_Exscan deliver. Float
 * inputs mix magnitudes so that any other summation order gives different bits. */
#include <complex.h>
#include <mpi.h>
#include <stdint.h>
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

static uint64_t mix(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    return x;
}

typedef struct { double v; int i; } dint;
typedef struct { int m, c; } affine; /* x -> m*x + c (wrapping) */

/* User ops. */
static void user_dsum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    double *a = in, *b = inout;
    for (int k = 0; k < *len; k++) b[k] = a[k] + b[k];
}
/* Composition: (a o b)(x) = a(b(x)): associative, not commutative. inout = in o inout. */
static void user_compose(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    affine *a = in, *b = inout;
    for (int k = 0; k < *len; k++) {
        unsigned m = (unsigned)a[k].m * (unsigned)b[k].m;
        unsigned c = (unsigned)a[k].m * (unsigned)b[k].c + (unsigned)a[k].c;
        b[k].m = (int)m;
        b[k].c = (int)c;
    }
}

enum kind { K_INT_SUM, K_INT_PROD, K_INT_MAX, K_INT_BXOR, K_DBL_SUM, K_DBL_MAX, K_DBL_PROD,
            K_CPLX_SUM, K_MAXLOC, K_MINLOC, K_USER_DSUM, K_USER_COMPOSE, K_NKINDS };
static const char *kname[] = {"int SUM", "int PROD", "int MAX", "int BXOR", "double SUM",
    "double MAX", "double PROD", "double complex SUM", "DOUBLE_INT MAXLOC",
    "DOUBLE_INT MINLOC", "user double sum (commutative)", "user affine compose (non-commutative)"};

typedef struct {
    MPI_Datatype dt;
    MPI_Op op;
    size_t ext, cmp; /* extent, and bytes to compare per element */
} tcase;

static MPI_Op op_dsum, op_compose;

static tcase get_case(int k) {
    tcase t;
    switch (k) {
    case K_INT_SUM: t = (tcase){MPI_INT, MPI_SUM, 4, 4}; break;
    case K_INT_PROD: t = (tcase){MPI_INT, MPI_PROD, 4, 4}; break;
    case K_INT_MAX: t = (tcase){MPI_INT, MPI_MAX, 4, 4}; break;
    case K_INT_BXOR: t = (tcase){MPI_INT, MPI_BXOR, 4, 4}; break;
    case K_DBL_SUM: t = (tcase){MPI_DOUBLE, MPI_SUM, 8, 8}; break;
    case K_DBL_MAX: t = (tcase){MPI_DOUBLE, MPI_MAX, 8, 8}; break;
    case K_DBL_PROD: t = (tcase){MPI_DOUBLE, MPI_PROD, 8, 8}; break;
    case K_CPLX_SUM: t = (tcase){MPI_C_DOUBLE_COMPLEX, MPI_SUM, 16, 16}; break;
    case K_MAXLOC: t = (tcase){MPI_DOUBLE_INT, MPI_MAXLOC, sizeof(dint), 12}; break;
    case K_MINLOC: t = (tcase){MPI_DOUBLE_INT, MPI_MINLOC, sizeof(dint), 12}; break;
    case K_USER_DSUM: t = (tcase){MPI_DOUBLE, op_dsum, 8, 8}; break;
    default: t = (tcase){MPI_2INT, op_compose, 8, 8}; break;
    }
    return t;
}

/* Input element e of rank r for case k. */
static void gen(int k, int r, size_t e, void *out) {
    uint64_t h = mix((uint64_t)k * 1000003u + (uint64_t)r * 7919u + e * 104729u + 1);
    switch (k) {
    case K_INT_SUM: case K_INT_MAX: case K_INT_BXOR: *(int *)out = (int)(h & 0xffffffffu); break;
    case K_INT_PROD: *(int *)out = (int)(h % 7) - 3; break;
    case K_DBL_SUM: case K_USER_DSUM: {
        /* Mixed magnitudes: the order of additions shows in the bits. */
        double mag[] = {1e16, 1.0, 3.5e-3, 7e8};
        double v = mag[h % 4] * ((double)((h >> 8) % 1000) / 7.0 + 1.0);
        *(double *)out = (h >> 40) & 1 ? -v : v;
        break;
    }
    case K_DBL_MAX: *(double *)out = (double)(int64_t)(h % 2001) - 1000.0 + ((h >> 20) % 2 ? 0.5 : 0.0); break;
    case K_DBL_PROD: *(double *)out = 1.0 + (double)(h % 1000) / 997.0 * ((h >> 30) & 1 ? -1 : 1); break;
    case K_CPLX_SUM: {
        double complex z = (double)(h % 100000) * 1e10 + ((double)((h >> 20) % 1000) / 3.0) * I;
        if ((h >> 50) & 1) z = -z / 3.0;
        memcpy(out, &z, 16);
        break;
    }
    case K_MAXLOC: case K_MINLOC: {
        dint d; memset(&d, 0, sizeof d);
        d.v = (double)(h % 5); /* many ties */
        d.i = (int)((h >> 16) % 50);
        memcpy(out, &d, sizeof d);
        break;
    }
    default: {
        affine a = {(int)(h % 5) * 2 + 1, (int)((h >> 8) % 100)};
        memcpy(out, &a, sizeof a);
    }
    }
}

/* acc = acc op x, for one element (the oracle's sequential step). */
static void step(int k, void *acc, const void *x) {
    switch (k) {
    case K_INT_SUM: *(int *)acc = (int)((unsigned)*(int *)acc + (unsigned)*(const int *)x); break;
    case K_INT_PROD: *(int *)acc = (int)((unsigned)*(int *)acc * (unsigned)*(const int *)x); break;
    case K_INT_MAX: if (*(const int *)x > *(int *)acc) *(int *)acc = *(const int *)x; break;
    case K_INT_BXOR: *(int *)acc ^= *(const int *)x; break;
    case K_DBL_SUM: case K_USER_DSUM: *(double *)acc = *(double *)acc + *(const double *)x; break;
    case K_DBL_MAX: if (*(const double *)x > *(double *)acc) *(double *)acc = *(const double *)x; break;
    case K_DBL_PROD: *(double *)acc = *(double *)acc * *(const double *)x; break;
    case K_CPLX_SUM: { double complex a, b; memcpy(&a, acc, 16); memcpy(&b, x, 16); a = a + b; memcpy(acc, &a, 16); break; }
    case K_MAXLOC: case K_MINLOC: {
        dint *a = acc; const dint *b = x;
        int better = k == K_MAXLOC ? b->v > a->v : b->v < a->v;
        if (better) { a->v = b->v; a->i = b->i; }
        else if (b->v == a->v && b->i < a->i) a->i = b->i;
        break;
    }
    default: { /* acc = acc o x */
        affine *a = acc; const affine *b = x;
        unsigned m = (unsigned)a->m * (unsigned)b->m;
        unsigned c = (unsigned)a->m * (unsigned)b->c + (unsigned)a->c;
        a->m = (int)m; a->c = (int)c;
    }
    }
}

/* Oracle: fold of ranks lo..hi-1 (left to right) for elements [0, count). */
static void oracle(int k, size_t ext, size_t count, int lo, int hi, unsigned char *out) {
    unsigned char *x = malloc(ext);
    for (size_t e = 0; e < count; e++) {
        gen(k, lo, e, out + e * ext);
        for (int r = lo + 1; r < hi; r++) {
            gen(k, r, e, x);
            step(k, out + e * ext, x);
        }
    }
    free(x);
}

static void fill(int k, int r, size_t ext, size_t count, unsigned char *buf) {
    for (size_t e = 0; e < count; e++) gen(k, r, e, buf + e * ext);
}

static int same(const tcase *t, const unsigned char *a, const unsigned char *b, size_t count) {
    for (size_t e = 0; e < count; e++)
        if (memcmp(a + e * t->ext, b + e * t->ext, t->cmp)) return (int)e;
    return -1;
}

static void run_case(int k, size_t count) {
    tcase t = get_case(k);
    size_t ext = t.ext, n = (size_t)size;
    unsigned char *want = calloc(count * n + 1, ext);
    unsigned char *send = calloc(count * n + 1, ext);
    unsigned char *recv = calloc(count * n + 1, ext);
    int bad, rc;

    /* Allreduce, not in place and in place. */
    oracle(k, ext, count, 0, size, want);
    for (int inplace = 0; inplace < 2; inplace++) {
        memset(recv, 0xa5, count * ext + 1);
        fill(k, rank, ext, count, inplace ? recv : send);
        rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : send, recv, (int)count, t.dt, t.op, MPI_COMM_WORLD);
        bad = same(&t, recv, want, count);
        CHECK(rc == MPI_SUCCESS && bad < 0, "Allreduce %s count=%zu inplace=%d: element %d differs", kname[k], count, inplace, bad);
    }
    /* Reduce at every root. */
    for (int root = 0; root < size; root++) {
        for (int inplace = 0; inplace < 2; inplace++) {
            memset(recv, 0xa5, count * ext + 1);
            int ip = inplace && rank == root;
            fill(k, rank, ext, count, ip ? recv : send);
            rc = MPI_Reduce(ip ? MPI_IN_PLACE : send, rank == root ? recv : NULL, (int)count, t.dt, t.op, root, MPI_COMM_WORLD);
            if (rank == root) {
                bad = same(&t, recv, want, count);
                CHECK(rc == MPI_SUCCESS && bad < 0, "Reduce %s count=%zu root=%d inplace=%d: element %d differs", kname[k], count, root, inplace, bad);
            } else {
                CHECK(rc == MPI_SUCCESS, "Reduce rc=%d", rc);
            }
        }
    }
    /* Reduce_scatter_block: n*count elements, block i to rank i. */
    oracle(k, ext, count * n, 0, size, want);
    for (int inplace = 0; inplace < 2; inplace++) {
        memset(recv, 0xa5, count * n * ext + 1);
        fill(k, rank, ext, count * n, inplace ? recv : send);
        rc = MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : send, recv, (int)count, t.dt, t.op, MPI_COMM_WORLD);
        bad = same(&t, recv, want + (size_t)rank * count * ext, count);
        CHECK(rc == MPI_SUCCESS && bad < 0, "Reduce_scatter_block %s count=%zu inplace=%d: element %d differs", kname[k], count, inplace, bad);
    }
    /* Reduce_scatter with uneven counts, zeros included. */
    {
        int *rc_ = malloc(n * sizeof(int));
        size_t total = 0, mylo = 0;
        for (int i = 0; i < size; i++) {
            rc_[i] = (i % 3 == 1) ? 0 : (int)(count * (size_t)(i + 1) / n);
            if (i < rank) mylo += (size_t)rc_[i];
            total += (size_t)rc_[i];
        }
        oracle(k, ext, total, 0, size, want);
        for (int inplace = 0; inplace < 2; inplace++) {
            memset(recv, 0xa5, (total + 1) * ext);
            fill(k, rank, ext, total, inplace ? recv : send);
            rc = MPI_Reduce_scatter(inplace ? MPI_IN_PLACE : send, recv, rc_, t.dt, t.op, MPI_COMM_WORLD);
            bad = same(&t, recv, want + mylo * ext, (size_t)rc_[rank]);
            CHECK(rc == MPI_SUCCESS && bad < 0, "Reduce_scatter %s count=%zu inplace=%d: element %d differs", kname[k], count, inplace, bad);
        }
        free(rc_);
    }
    /* Scan and Exscan. */
    for (int ex = 0; ex < 2; ex++) {
        for (int inplace = 0; inplace < 2; inplace++) {
            memset(recv, 0xa5, count * ext + 1);
            fill(k, rank, ext, count, inplace ? recv : send);
            rc = ex ? MPI_Exscan(inplace ? MPI_IN_PLACE : send, recv, (int)count, t.dt, t.op, MPI_COMM_WORLD)
                    : MPI_Scan(inplace ? MPI_IN_PLACE : send, recv, (int)count, t.dt, t.op, MPI_COMM_WORLD);
            int upto = ex ? rank : rank + 1;
            if (upto > 0) {
                oracle(k, ext, count, 0, upto, want);
                bad = same(&t, recv, want, count);
                CHECK(rc == MPI_SUCCESS && bad < 0, "%s %s count=%zu inplace=%d: element %d differs", ex ? "Exscan" : "Scan", kname[k], count, inplace, bad);
            }
        }
    }
    free(want); free(send); free(recv);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op_create(user_dsum, 1, &op_dsum);
    MPI_Op_create(user_compose, 0, &op_compose);
    /* (20000: 80-320 KiB, where the one-step path takes MPI_Reduce and the
     * reduce-scatters; 150000: several chunks) */
    size_t counts[] = {0, 1, 7, 1000, 20000, 150000};
    const char *quick = getenv("SHMPI_TEST_QUICK");
    int ncounts = quick ? 4 : 6;
    for (int k = 0; k < K_NKINDS; k++)
        for (int c = 0; c < ncounts; c++) run_case(k, counts[c]);
    MPI_Op_free(&op_dsum);
    MPI_Op_free(&op_compose);
    int all;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("coll_reduce: np=%d: %s (%d failures)\n", size, all ? "FAILED" : "ok", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
