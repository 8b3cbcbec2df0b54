/* Reduction kernels for the types Rust has no type for: C long double (x87 80-bit
 * extended precision stored in 16 bytes), its complex, and __float128 (Fortran REAL*16,
 * COMPLEX*32). Called from src/op/ld.rs with byte pointers and an element count.
 *
 * The semantics match src/op/kernels.rs: MAX/MIN are IEEE 754-2019 maximum/minimum
 * (a NaN operand gives a NaN, in's bits first; +0 > -0), complex PROD is the plain
 * formula, MINLOC/MAXLOC take the better value, on ties the smaller index, and a NaN
 * value wins over a number.
 *
 * Buffers may be unaligned: every access goes through memcpy. A long double is written
 * as its 10 significant bytes only, so the 6 padding bytes of inout are never changed
 * and every rank gets identical bytes. */
#include <stddef.h>
#include <string.h>

#if !defined(__x86_64__)
#error "ldkernels.c assumes x86_64 (x87 long double, __float128)"
#endif

typedef long double ld_t;
typedef __float128 q_t;

#define LD_BYTES 10 /* significant bytes of an x87 extended value */
#define Q_BYTES 16

static inline ld_t ld_get(const unsigned char *p) {
    ld_t v = 0;
    memcpy(&v, p, LD_BYTES);
    return v;
}
static inline void ld_put(unsigned char *p, ld_t v) { memcpy(p, &v, LD_BYTES); }
static inline q_t q_get(const unsigned char *p) {
    q_t v;
    memcpy(&v, p, Q_BYTES);
    return v;
}
static inline void q_put(unsigned char *p, q_t v) { memcpy(p, &v, Q_BYTES); }

/* sign bit of a value that compares equal to another (used for the +-0 rule) */
static inline int ld_neg(ld_t v) { return __builtin_signbit(v); }
static inline int q_neg(q_t v) {
    unsigned char b[16];
    memcpy(b, &v, 16);
    return b[15] >> 7;
}

#define MAXMIN(T, PFX, STRIDE, BYTES)                                                   \
    void shmpi_##PFX##_max(const unsigned char *in, unsigned char *io, size_t n) {      \
        for (size_t i = 0; i < n; i++) {                                                \
            const unsigned char *pa = in + i * STRIDE;                                  \
            unsigned char *pb = io + i * STRIDE;                                        \
            T a = PFX##_get(pa), b = PFX##_get(pb);                                     \
            int take_a;                                                                 \
            if (a > b) take_a = 1;                                                      \
            else if (b > a) take_a = 0;                                                 \
            else if (a == b) take_a = !PFX##_neg(a);                                    \
            else take_a = (a != a);                                                     \
            if (take_a) memcpy(pb, pa, BYTES);                                          \
        }                                                                               \
    }                                                                                   \
    void shmpi_##PFX##_min(const unsigned char *in, unsigned char *io, size_t n) {      \
        for (size_t i = 0; i < n; i++) {                                                \
            const unsigned char *pa = in + i * STRIDE;                                  \
            unsigned char *pb = io + i * STRIDE;                                        \
            T a = PFX##_get(pa), b = PFX##_get(pb);                                     \
            int take_a;                                                                 \
            if (a < b) take_a = 1;                                                      \
            else if (b < a) take_a = 0;                                                 \
            else if (a == b) take_a = PFX##_neg(a);                                     \
            else take_a = (a != a);                                                     \
            if (take_a) memcpy(pb, pa, BYTES);                                          \
        }                                                                               \
    }                                                                                   \
    void shmpi_##PFX##_sum(const unsigned char *in, unsigned char *io, size_t n) {      \
        for (size_t i = 0; i < n; i++)                                                  \
            PFX##_put(io + i * STRIDE, PFX##_get(in + i * STRIDE) + PFX##_get(io + i * STRIDE)); \
    }                                                                                   \
    void shmpi_##PFX##_prod(const unsigned char *in, unsigned char *io, size_t n) {     \
        for (size_t i = 0; i < n; i++)                                                  \
            PFX##_put(io + i * STRIDE, PFX##_get(in + i * STRIDE) * PFX##_get(io + i * STRIDE)); \
    }

MAXMIN(ld_t, ld, 16, LD_BYTES)
MAXMIN(q_t, q, 16, Q_BYTES)

/* complex: real part at 0, imaginary part at HALF */
#define COMPLEX(T, PFX, GET, PUT, HALF)                                                 \
    void shmpi_##PFX##_sum(const unsigned char *in, unsigned char *io, size_t n) {      \
        for (size_t i = 0; i < n; i++) {                                                \
            const unsigned char *pa = in + i * 2 * HALF;                                \
            unsigned char *pb = io + i * 2 * HALF;                                      \
            T ar = GET(pa), ai = GET(pa + HALF), br = GET(pb), bi = GET(pb + HALF);     \
            PUT(pb, ar + br);                                                           \
            PUT(pb + HALF, ai + bi);                                                    \
        }                                                                               \
    }                                                                                   \
    void shmpi_##PFX##_prod(const unsigned char *in, unsigned char *io, size_t n) {     \
        for (size_t i = 0; i < n; i++) {                                                \
            const unsigned char *pa = in + i * 2 * HALF;                                \
            unsigned char *pb = io + i * 2 * HALF;                                      \
            T ar = GET(pa), ai = GET(pa + HALF), br = GET(pb), bi = GET(pb + HALF);     \
            PUT(pb, ar * br - ai * bi);                                                 \
            PUT(pb + HALF, ar * bi + ai * br);                                          \
        }                                                                               \
    }

COMPLEX(ld_t, cld, ld_get, ld_put, 16)
COMPLEX(q_t, cq, q_get, q_put, 16)

/* MPI_LONG_DOUBLE_INT: long double at 0, int at 16, extent 32 */
static inline int ldi_take_a(ld_t av, int ai, ld_t bv, int bi, int max) {
    int a_better = max ? (av > bv) : (av < bv);
    int b_better = max ? (bv > av) : (bv < av);
    if (a_better) return 1;
    if (b_better) return 0;
    int an = (av != av), bn = (bv != bv);
    if (an != bn) return an;
    return ai < bi;
}

#define LDI(NAME, MAX)                                                                  \
    void shmpi_ldi_##NAME(const unsigned char *in, unsigned char *io, size_t n) {      \
        for (size_t i = 0; i < n; i++) {                                                \
            const unsigned char *pa = in + i * 32;                                      \
            unsigned char *pb = io + i * 32;                                            \
            int ai, bi;                                                                 \
            memcpy(&ai, pa + 16, 4);                                                    \
            memcpy(&bi, pb + 16, 4);                                                    \
            if (ldi_take_a(ld_get(pa), ai, ld_get(pb), bi, MAX)) {                      \
                memcpy(pb, pa, LD_BYTES);                                               \
                memcpy(pb + 16, pa + 16, 4);                                            \
            }                                                                           \
        }                                                                               \
    }

LDI(maxloc, 1)
LDI(minloc, 0)
