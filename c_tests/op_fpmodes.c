/* The comparison ops under the floating-point modes a program may set, through the
 * header and the real library:
 * - traps: with every trap enabled but the denormal one (feenableexcept; gfortran's
 *   -ffpe-trap=invalid,zero,overflow,underflow,inexact does the same), MAX/MIN on
 *   doubles and floats of every magnitude and MAXLOC/MINLOC on MPI_DOUBLE_INT raise
 *   nothing, in MPI_Reduce_local and in MPI_Allreduce (whose path chooser times its
 *   calls): no signal, and afterwards no flag set (the data has no NaN and no
 *   subnormal; MPICH dies here of the inexact trap in its network layer);
 * - denormals-are-zero and flush-to-zero (x86 MXCSR, which -ffast-math and -Ofast
 *   start-up code set): MAX/MIN compare a subnormal as a zero of its sign and give the
 *   chosen operand's bits (a subnormal stays a subnormal), at every length (the vector
 *   kernels, their 256-bit and 128-bit versions and the generic loop), with inoutbuf at
 *   two placements relative to inbuf, in MPI_Reduce_local and MPI_Allreduce; checked bit
 *   for bit against a rule written out here that maps subnormals to zeros only to
 *   compare them. */
#define _GNU_SOURCE
#include <fenv.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

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

static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng_state >> 11;
}

/* Lengths: short ones (the generic loop), in the caches (the vector kernels), past 1 MiB
 * and past 24 MiB (their 256-bit and 128-bit versions), odd ones (the tails). */
static const long counts[] = {1, 7, 64, 1000, 4099, 20000, 300001, 3200003};
#define NCOUNTS ((int)(sizeof counts / sizeof counts[0]))

/* Bits to value and back. */
static double d_of(uint64_t b) { double d; memcpy(&d, &b, 8); return d; }
static uint64_t b_of(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }
static float f_of(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static uint32_t fb_of(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

/* A double or float of any normal magnitude, either sign. */
static uint64_t normal64(void) {
    uint64_t x = rnd();
    return (x & 0x800fffffffffffffULL) | ((1 + (x >> 3) % 2046) << 52);
}
static uint32_t normal32(void) {
    uint32_t x = (uint32_t)rnd();
    return (x & 0x807fffffU) | ((1 + (x >> 5) % 254) << 23);
}

/* ---- traps ---- */

static double plain_maxmin(double a, double b, int max) { return max ? (a > b ? a : b) : (a < b ? a : b); }

static void test_traps(void) {
    feclearexcept(FE_ALL_EXCEPT);
    int traps = FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INEXACT;
    CHECK(feenableexcept(traps) != -1, "feenableexcept");
    long n = 70001;
    double *a = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
    double *w = malloc(sizeof(double) * (size_t)n);
    float *af = malloc(sizeof(float) * (size_t)n), *bf = malloc(sizeof(float) * (size_t)n);
    float *wf = malloc(sizeof(float) * (size_t)n);
    struct di { double v; int i; } *pa = malloc(sizeof(struct di) * (size_t)n),
                                   *pb = malloc(sizeof(struct di) * (size_t)n);
    rng_state = 77 + (uint64_t)rank;
    for (int max = 0; max <= 1; max++) {
        MPI_Op op = max ? MPI_MAX : MPI_MIN;
        for (long k = 0; k < n; k++) {
            a[k] = d_of(normal64());
            b[k] = d_of(normal64());
            af[k] = f_of(normal32());
            bf[k] = f_of(normal32());
            w[k] = plain_maxmin(a[k], b[k], max);
            wf[k] = (float)plain_maxmin(af[k], bf[k], max);
        }
        CHECK(MPI_Reduce_local(a, b, (int)n, MPI_DOUBLE, op) == MPI_SUCCESS, "Reduce_local double");
        CHECK(MPI_Reduce_local(af, bf, (int)n, MPI_FLOAT, op) == MPI_SUCCESS, "Reduce_local float");
        for (long k = 0; k < n; k++) {
            CHECK(b_of(b[k]) == b_of(w[k]), "traps: double %s k=%ld", max ? "MAX" : "MIN", k);
            CHECK(fb_of(bf[k]) == fb_of(wf[k]), "traps: float %s k=%ld", max ? "MAX" : "MIN", k);
        }
        /* over the processes: each contributes the vector of its own seed; the fold of
         * all of them in rank order, regenerated from the seeds */
        uint64_t keep = rng_state;
        for (int r = 0; r < size; r++) {
            rng_state = 1000 + (uint64_t)r + 31 * (uint64_t)max;
            for (long k = 0; k < n; k++) {
                double x = d_of(normal64());
                w[k] = r == 0 ? x : plain_maxmin(x, w[k], max);
                if (r == rank)
                    a[k] = x;
            }
        }
        rng_state = keep;
        CHECK(MPI_Allreduce(a, b, (int)n, MPI_DOUBLE, op, MPI_COMM_WORLD) == MPI_SUCCESS, "Allreduce");
        for (long k = 0; k < n; k++)
            CHECK(b_of(b[k]) == b_of(w[k]), "traps: Allreduce %s k=%ld", max ? "MAX" : "MIN", k);
        /* MAXLOC/MINLOC on MPI_DOUBLE_INT */
        for (long k = 0; k < n; k++) {
            pa[k].v = d_of(normal64());
            pa[k].i = (int)(rnd() % 1000);
            pb[k].v = (k % 5 == 0) ? pa[k].v : d_of(normal64());
            pb[k].i = (int)(rnd() % 1000);
        }
        struct di *want = malloc(sizeof(struct di) * (size_t)n);
        for (long k = 0; k < n; k++) {
            int better = max ? pa[k].v > pb[k].v : pa[k].v < pb[k].v;
            if (pa[k].v == pb[k].v)
                want[k] = (struct di){pa[k].v, pa[k].i < pb[k].i ? pa[k].i : pb[k].i};
            else
                want[k] = better ? pa[k] : pb[k];
        }
        CHECK(MPI_Reduce_local(pa, pb, (int)n, MPI_DOUBLE_INT, max ? MPI_MAXLOC : MPI_MINLOC) == MPI_SUCCESS,
              "Reduce_local DOUBLE_INT");
        for (long k = 0; k < n; k++)
            CHECK(b_of(pb[k].v) == b_of(want[k].v) && pb[k].i == want[k].i, "traps: %s k=%ld",
                  max ? "MAXLOC" : "MINLOC", k);
        free(want);
    }
    fedisableexcept(traps);
    int raised = fetestexcept(traps);
    CHECK(raised == 0, "flags raised: %#x", raised);
    free(a), free(b), free(w), free(af), free(bf), free(wf), free(pa), free(pb);
}

/* ---- denormals-are-zero ---- */

#if defined(__x86_64__)
static int nan64(uint64_t b) { return (b & 0x7fffffffffffffffULL) > 0x7ff0000000000000ULL; }
static int nan32(uint32_t b) { return (b & 0x7fffffffU) > 0x7f800000U; }
/* The value a comparison sees under denormals-are-zero: a subnormal is a zero of its sign.
 * (Computed from the bits: the oracle runs in that mode too.) */
static double seen64(uint64_t b) { return d_of((b & 0x7ff0000000000000ULL) ? b : (b & 0x8000000000000000ULL)); }
static float seen32(uint32_t b) { return f_of((b & 0x7f800000U) ? b : (b & 0x80000000U)); }

/* inbuf element a, inoutbuf element b: IEEE maximum/minimum, with the comparisons on
 * the values seen, the result the chosen operand's bits (equal values: a & b for MAX,
 * a | b for MIN). */
static uint64_t daz64(uint64_t a, uint64_t b, int max) {
    if (nan64(a))
        return a;
    if (nan64(b))
        return b;
    double x = seen64(a), y = seen64(b);
    if (x == y)
        return max ? (a & b) : (a | b);
    return (max ? x > y : x < y) ? a : b;
}
static uint32_t daz32(uint32_t a, uint32_t b, int max) {
    if (nan32(a))
        return a;
    if (nan32(b))
        return b;
    float x = seen32(a), y = seen32(b);
    if (x == y)
        return max ? (a & b) : (a | b);
    return (max ? x > y : x < y) ? a : b;
}

/* Ordinary numbers, with subnormals of both signs (one in 4), zeros, and a NaN now and
 * then. */
static uint64_t dazval64(void) {
    uint64_t x = rnd();
    switch (x % 16) {
    case 0: case 1: case 2: case 3: return ((x >> 1) & 0xfffffffffffffULL) | ((x & 16) ? 0x8000000000000000ULL : 0);
    case 4: return (x & 32) ? 0x8000000000000000ULL : 0;
    case 5: return (x % 64 == 5) ? 0x7ff8000000000000ULL | (x >> 20) : normal64();
    default: return (x % 7 == 0) ? 0x3ff0000000000000ULL : normal64();
    }
}
static uint32_t dazval32(void) {
    uint32_t x = (uint32_t)rnd();
    switch (x % 16) {
    case 0: case 1: case 2: case 3: return ((x >> 1) & 0x7fffffU) | ((x & 16) ? 0x80000000U : 0);
    case 4: return (x & 32) ? 0x80000000U : 0;
    case 5: return (x % 64 == 5) ? 0x7fc00000U | (x >> 20) : normal32();
    default: return (x % 7 == 0) ? 0x3f800000U : normal32();
    }
}

static void test_daz(void) {
    unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040); /* FTZ | DAZ */
    long nmax = counts[NCOUNTS - 1];
    /* one block: inbuf first, inoutbuf 64 bytes past it modulo 4 KiB (after the two
     * placements' own lengths) */
    size_t span = ((size_t)nmax * 8 + 8191) / 4096 * 4096;
    unsigned char *block = malloc(2 * span + 8192);
    uint64_t *in = (uint64_t *)(((uintptr_t)block + 4095) / 4096 * 4096);
    uint64_t *near = (uint64_t *)((unsigned char *)in + span + 64);
    uint64_t *far = malloc((size_t)nmax * 8), *want = malloc((size_t)nmax * 8);
    for (int max = 0; max <= 1; max++) {
        MPI_Op op = max ? MPI_MAX : MPI_MIN;
        const char *on = max ? "MAX" : "MIN";
        for (int c = 0; c < NCOUNTS; c++) {
            long n = counts[c];
            for (int place = 0; place < 2; place++) {
                uint64_t *io = place ? near : far;
                rng_state = 5 + (uint64_t)c * 7 + (uint64_t)max;
                for (int dbl = 0; dbl <= 1; dbl++) {
                    if (dbl) {
                        for (long k = 0; k < n; k++) {
                            in[k] = dazval64();
                            io[k] = dazval64();
                            want[k] = daz64(in[k], io[k], max);
                        }
                        CHECK(MPI_Reduce_local(in, io, (int)n, MPI_DOUBLE, op) == MPI_SUCCESS, "Reduce_local");
                        for (long k = 0; k < n; k++)
                            CHECK(io[k] == want[k], "DAZ: double %s n=%ld place %d k=%ld: inbuf %016llx, gave %016llx, want %016llx",
                                  on, n, place, k, (unsigned long long)in[k], (unsigned long long)io[k],
                                  (unsigned long long)want[k]);
                    } else {
                        uint32_t *fi = (uint32_t *)in, *fo = (uint32_t *)io, *fw = (uint32_t *)want;
                        for (long k = 0; k < n; k++) {
                            fi[k] = dazval32();
                            fo[k] = dazval32();
                            fw[k] = daz32(fi[k], fo[k], max);
                        }
                        CHECK(MPI_Reduce_local(fi, fo, (int)n, MPI_FLOAT, op) == MPI_SUCCESS, "Reduce_local");
                        for (long k = 0; k < n; k++)
                            CHECK(fo[k] == fw[k], "DAZ: float %s n=%ld place %d k=%ld: gave %08x, want %08x", on, n,
                                  place, k, fo[k], fw[k]);
                    }
                }
            }
        }
        /* MPI_Allreduce: every process's doubles from its own seed, folded in rank order */
        long n = 20000;
        for (int r = 0; r < size; r++) {
            rng_state = 900 + (uint64_t)r;
            for (long k = 0; k < n; k++) {
                uint64_t x = dazval64();
                want[k] = r == 0 ? x : daz64(x, want[k], max);
                if (r == rank)
                    in[k] = x;
            }
        }
        CHECK(MPI_Allreduce(in, far, (int)n, MPI_DOUBLE, op, MPI_COMM_WORLD) == MPI_SUCCESS, "Allreduce");
        for (long k = 0; k < n; k++)
            CHECK(far[k] == want[k], "DAZ: Allreduce %s k=%ld: gave %016llx, want %016llx", on, k,
                  (unsigned long long)far[k], (unsigned long long)want[k]);
    }
    _mm_setcsr(csr);
    free(block), free(far), free(want);
}
#endif

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_traps();
#if defined(__x86_64__)
    test_daz();
#endif
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "op_fpmodes: %d failures\n" : "op_fpmodes: ok\n", all);
    MPI_Finalize();
    return all != 0;
}
