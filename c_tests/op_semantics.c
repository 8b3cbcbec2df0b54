/* What the predefined operations compute, as the README states it, through the header
 * and the real library, checked bit for bit against rules written out here:
 * - MAX/MIN on float and double: IEEE 754-2019 maximum/minimum (a NaN operand gives a
 *   NaN: inbuf's bits if it is one, else inoutbuf's; -0 < +0 whichever holds which),
 *   on vectors of ordinary numbers with special values (NaNs with distinct payloads,
 *   signed zeros, infinities) scattered in both buffers, sparse in some and dense in
 *   others, so the kernels' fast blocks and their full formula both run;
 * - MAX/MIN on 64-bit integers, signed and unsigned, at the extremes;
 * - MINLOC/MAXLOC on MPI_DOUBLE_INT: ties take the smaller index, a NaN value wins over
 *   a number, two NaNs take the smaller index;
 * - integer SUM/PROD wrap, logical ops write 0/1 for any non-zero input.
 * MPI_Reduce_local on each, and MPI_Allreduce over all processes, folded in rank order
 * (acc = x0; acc = x_k op acc) by the oracle. */
#include <mpi.h>
#include <limits.h>
#include <math.h>
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

#define N 1000

static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng_state >> 17;
}

static double nan_payload(uint64_t p, int neg) {
    uint64_t b = 0x7ff8000000000000ULL | (p & 0xffffffffULL) | ((uint64_t)neg << 63);
    double d;
    memcpy(&d, &b, 8);
    return d;
}

/* Element k of process r's double vector in pattern `dense` (0: ordinary numbers with
 * one special value in 50; 1: one in 3). */
static double dval(int r, int k, int dense) {
    uint64_t x = rnd();
    if ((int)(x % (dense ? 3 : 50)) == 0) {
        switch ((x >> 8) % 8) {
        case 0: return nan_payload(1000 + (uint64_t)r * N + (uint64_t)k, 0);
        case 1: return nan_payload(7 + (uint64_t)r, 1);
        case 2: return 0.0;
        case 3: return -0.0;
        case 4: return INFINITY;
        case 5: return -INFINITY;
        case 6: return 5e-324; /* the smallest subnormal */
        default: return (r % 2) ? 0.0 : -0.0;
        }
    }
    if ((x >> 8) % 4 == 0)
        return (double)((int)((x >> 12) % 5) - 2); /* ties */
    return ((double)(int64_t)(x >> 20) - 1e12) / 1e9;
}

static uint64_t bits64(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }
static uint32_t bits32(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

/* The README's rule: a op b, a from inbuf, b from inoutbuf. */
static double dmaxmin(double a, double b, int max) {
    if (isnan(a))
        return a;
    if (isnan(b))
        return b;
    if (a == b) {
        uint64_t x = max ? (bits64(a) & bits64(b)) : (bits64(a) | bits64(b));
        double d;
        memcpy(&d, &x, 8);
        return d;
    }
    return max ? (a > b ? a : b) : (a < b ? a : b);
}
static float fmaxmin(float a, float b, int max) {
    if (isnan(a))
        return a;
    if (isnan(b))
        return b;
    if (a == b) {
        uint32_t x = max ? (bits32(a) & bits32(b)) : (bits32(a) | bits32(b));
        float f;
        memcpy(&f, &x, 4);
        return f;
    }
    return max ? (a > b ? a : b) : (a < b ? a : b);
}

static void test_float_maxmin(int dense) {
    double *all = malloc(sizeof(double) * N * (size_t)size);
    float *allf = malloc(sizeof(float) * N * (size_t)size);
    rng_state = 12345 + (uint64_t)dense;
    for (int r = 0; r < size; r++)
        for (int k = 0; k < N; k++) {
            all[r * N + k] = dval(r, k, dense);
            allf[r * N + k] = (float)all[r * N + k];
        }
    for (int max = 0; max <= 1; max++) {
        MPI_Op op = max ? MPI_MAX : MPI_MIN;
        const char *on = max ? "MAX" : "MIN";
        /* Reduce_local: inbuf = process (rank+1)%size's vector, inout = own */
        int o = (rank + 1) % size;
        double io[N], want[N], got[N];
        float iof[N], wantf[N], gotf[N];
        for (int k = 0; k < N; k++) {
            io[k] = all[rank * N + k];
            want[k] = dmaxmin(all[o * N + k], io[k], max);
            iof[k] = allf[rank * N + k];
            wantf[k] = fmaxmin(allf[o * N + k], iof[k], max);
        }
        CHECK(MPI_Reduce_local(&all[o * N], io, N, MPI_DOUBLE, op) == MPI_SUCCESS, "Reduce_local");
        CHECK(MPI_Reduce_local(&allf[o * N], iof, N, MPI_FLOAT, op) == MPI_SUCCESS, "Reduce_local");
        for (int k = 0; k < N; k++) {
            CHECK(bits64(io[k]) == bits64(want[k]), "Reduce_local %s double dense=%d k=%d: %a (%016llx) op %a gave %016llx, want %016llx",
                  on, dense, k, all[o * N + k], (unsigned long long)bits64(all[o * N + k]), all[rank * N + k],
                  (unsigned long long)bits64(io[k]), (unsigned long long)bits64(want[k]));
            CHECK(bits32(iof[k]) == bits32(wantf[k]), "Reduce_local %s float dense=%d k=%d: gave %08x, want %08x", on,
                  dense, k, bits32(iof[k]), bits32(wantf[k]));
        }
        /* Allreduce over the processes, folded in rank order */
        for (int k = 0; k < N; k++) {
            want[k] = all[k];
            wantf[k] = allf[k];
            for (int r = 1; r < size; r++) {
                want[k] = dmaxmin(all[r * N + k], want[k], max);
                wantf[k] = fmaxmin(allf[r * N + k], wantf[k], max);
            }
        }
        CHECK(MPI_Allreduce(&all[rank * N], got, N, MPI_DOUBLE, op, MPI_COMM_WORLD) == MPI_SUCCESS, "Allreduce");
        CHECK(MPI_Allreduce(&allf[rank * N], gotf, N, MPI_FLOAT, op, MPI_COMM_WORLD) == MPI_SUCCESS, "Allreduce");
        for (int k = 0; k < N; k++) {
            CHECK(bits64(got[k]) == bits64(want[k]), "Allreduce %s double dense=%d k=%d: gave %016llx, want %016llx", on,
                  dense, k, (unsigned long long)bits64(got[k]), (unsigned long long)bits64(want[k]));
            CHECK(bits32(gotf[k]) == bits32(wantf[k]), "Allreduce %s float dense=%d k=%d: gave %08x, want %08x", on, dense,
                  k, bits32(gotf[k]), bits32(wantf[k]));
        }
    }
    free(all);
    free(allf);
}

/* The README's two-element examples, whichever buffer holds which value. The expected
 * result: 'i' inbuf's bits, 'o' inoutbuf's bits, '+' +0.0, '-' -0.0. */
static void test_examples(void) {
    double nan1 = nan_payload(1, 0), nan2 = nan_payload(2, 1);
    struct { double in, io; char max, min; } ex[] = {
        {1.0, nan1, 'o', 'o'},  {nan1, 1.0, 'i', 'i'},  {-0.0, 0.0, '+', '-'},
        {0.0, -0.0, '+', '-'},  {-0.0, -0.0, '-', '-'}, {0.0, 0.0, '+', '+'},
        {INFINITY, nan2, 'o', 'o'}, {nan1, nan2, 'i', 'i'}, {nan2, nan1, 'i', 'i'},
        {-2.0, nan2, 'o', 'o'}, {3.0, 3.0, 'i', 'i'},   {-INFINITY, 0.0, 'o', 'i'},
    };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        double got[2] = {ex[i].io, ex[i].io};
        MPI_Reduce_local(&ex[i].in, &got[0], 1, MPI_DOUBLE, MPI_MAX);
        MPI_Reduce_local(&ex[i].in, &got[1], 1, MPI_DOUBLE, MPI_MIN);
        for (int m = 0; m < 2; m++) {
            char e = m == 0 ? ex[i].max : ex[i].min;
            double w = e == 'i' ? ex[i].in : e == 'o' ? ex[i].io : e == '+' ? 0.0 : -0.0;
            CHECK(bits64(got[m]) == bits64(w), "%s example %zu: %016llx, want %016llx", m == 0 ? "MAX" : "MIN", i,
                  (unsigned long long)bits64(got[m]), (unsigned long long)bits64(w));
        }
    }
}

static void test_int64(void) {
    long in[N], io[N], want[N];
    unsigned long uin[N], uio[N], uwant[N];
    static const long ext[] = {LONG_MIN, LONG_MIN + 1, -1, 0, 1, LONG_MAX - 1, LONG_MAX};
    rng_state = 777;
    for (int max = 0; max <= 1; max++) {
        for (int k = 0; k < N; k++) {
            uint64_t x = rnd(), y = rnd();
            in[k] = (x % 3 == 0) ? ext[(x >> 4) % 7] : (long)(x * 0x9e3779b97f4a7c15ULL);
            io[k] = (y % 3 == 0) ? ext[(y >> 4) % 7] : (y % 5 == 0 ? in[k] : (long)(y * 0xc2b2ae3d27d4eb4fULL));
            uin[k] = (unsigned long)in[k];
            uio[k] = (unsigned long)io[k];
            want[k] = max ? (in[k] > io[k] ? in[k] : io[k]) : (in[k] < io[k] ? in[k] : io[k]);
            uwant[k] = max ? (uin[k] > uio[k] ? uin[k] : uio[k]) : (uin[k] < uio[k] ? uin[k] : uio[k]);
        }
        MPI_Op op = max ? MPI_MAX : MPI_MIN;
        MPI_Reduce_local(in, io, N, MPI_LONG, op);
        MPI_Reduce_local(uin, uio, N, MPI_UNSIGNED_LONG, op);
        for (int k = 0; k < N; k++) {
            CHECK(io[k] == want[k], "MPI_LONG %s k=%d: %ld, want %ld", max ? "MAX" : "MIN", k, io[k], want[k]);
            CHECK(uio[k] == uwant[k], "MPI_UNSIGNED_LONG %s k=%d: %lu, want %lu", max ? "MAX" : "MIN", k, uio[k],
                  uwant[k]);
        }
    }
}

typedef struct { double v; int i; } dint;

static void test_loc(void) {
    /* process r contributes (value, index) pairs with ties and NaNs; Allreduce MAXLOC and
     * MINLOC folded in rank order with the rules above */
    dint mine[64], got[64], want[64];
    double nan1 = nan_payload(3, 0);
    for (int k = 0; k < 64; k++) {
        int kind = (k + rank) % 4;
        mine[k].v = kind == 0 ? nan1 : kind == 1 ? 1.0 : (double)(k % 3);
        mine[k].i = (k * 7 + rank * 13) % 11 - 5;
    }
    for (int max = 0; max <= 1; max++) {
        for (int k = 0; k < 64; k++) {
            for (int r = 0; r < size; r++) {
                int kind = (k + r) % 4;
                dint x = {kind == 0 ? nan1 : kind == 1 ? 1.0 : (double)(k % 3), (k * 7 + r * 13) % 11 - 5};
                if (r == 0) {
                    want[k] = x;
                    continue;
                }
                dint a = x, b = want[k];
                int an = isnan(a.v), bn = isnan(b.v), take;
                if (an || bn)
                    take = an && bn ? a.i < b.i : an;
                else if (a.v == b.v)
                    take = a.i < b.i;
                else
                    take = max ? a.v > b.v : a.v < b.v;
                if (take)
                    want[k] = a;
            }
        }
        CHECK(MPI_Allreduce(mine, got, 64, MPI_DOUBLE_INT, max ? MPI_MAXLOC : MPI_MINLOC, MPI_COMM_WORLD) ==
                  MPI_SUCCESS,
              "Allreduce loc");
        for (int k = 0; k < 64; k++)
            CHECK(bits64(got[k].v) == bits64(want[k].v) && got[k].i == want[k].i,
                  "%s k=%d: (%g, %d), want (%g, %d)", max ? "MAXLOC" : "MINLOC", k, got[k].v, got[k].i, want[k].v,
                  want[k].i);
    }
}

static void test_wrap_logical(void) {
    int a[4] = {INT_MAX, INT_MIN, 65536, -7}, b[4] = {1, -1, 65536, 3};
    int s[4], p[4];
    memcpy(s, b, sizeof s);
    memcpy(p, b, sizeof p);
    MPI_Reduce_local(a, s, 4, MPI_INT, MPI_SUM);
    MPI_Reduce_local(a, p, 4, MPI_INT, MPI_PROD);
    for (int k = 0; k < 4; k++) {
        int ws = (int)((unsigned)a[k] + (unsigned)b[k]);
        int wp = (int)((unsigned)a[k] * (unsigned)b[k]);
        CHECK(s[k] == ws, "SUM wrap k=%d: %d, want %d", k, s[k], ws);
        CHECK(p[k] == wp, "PROD wrap k=%d: %d, want %d", k, p[k], wp);
    }
    int la[4] = {2, 0, -1, 3}, lb[4] = {3, 5, 0, -2};
    int land[4], lor[4], lxor[4];
    memcpy(land, lb, sizeof land);
    memcpy(lor, lb, sizeof lor);
    memcpy(lxor, lb, sizeof lxor);
    MPI_Reduce_local(la, land, 4, MPI_INT, MPI_LAND);
    MPI_Reduce_local(la, lor, 4, MPI_INT, MPI_LOR);
    MPI_Reduce_local(la, lxor, 4, MPI_INT, MPI_LXOR);
    for (int k = 0; k < 4; k++) {
        CHECK(land[k] == ((la[k] != 0) && (lb[k] != 0)), "LAND k=%d: %d", k, land[k]);
        CHECK(lor[k] == ((la[k] != 0) || (lb[k] != 0)), "LOR k=%d: %d", k, lor[k]);
        CHECK(lxor[k] == ((la[k] != 0) != (lb[k] != 0)), "LXOR k=%d: %d", k, lxor[k]);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_examples();
    test_float_maxmin(0);
    test_float_maxmin(1);
    test_int64();
    test_loc();
    test_wrap_logical();
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf(" No Errors\n");
    MPI_Finalize();
    return all != 0;
}
