/* One-sided accumulate operations: every predefined op x every predefined datatype the
 * standard allows for it (MPI 4.1 6.9.2, 12.3.4), through MPI_Accumulate,
 * MPI_Get_accumulate, MPI_Raccumulate and MPI_Rget_accumulate, against a sequential
 * oracle of every byte of every window (and of every origin and result buffer).
 *
 * Ops and types: MPI_SUM and MPI_PROD on the C integers (int, long, long long, signed
 * char, short, unsigned char, unsigned short, unsigned, unsigned long, unsigned long
 * long, int8..64_t, uint8..64_t), the multi-language types (MPI_AINT, MPI_OFFSET,
 * MPI_COUNT), float, double, long double and the three C complex types; MPI_MAX
 * and MPI_MIN on the same without the complex types; MPI_LAND, MPI_LOR, MPI_LXOR on the
 * C integers and MPI_C_BOOL; MPI_BAND, MPI_BOR, MPI_BXOR on the C integers, the
 * multi-language types and MPI_BYTE; MPI_MAXLOC and MPI_MINLOC on MPI_2INT,
 * MPI_DOUBLE_INT, MPI_FLOAT_INT, MPI_LONG_INT, MPI_SHORT_INT and MPI_LONG_DOUBLE_INT
 * (ties take the lower index); MPI_REPLACE and MPI_NO_OP (the latter with the two
 * fetching calls only) on several types. Each such case moves 3 elements of the basic
 * type. Then derived datatypes whose basic type is one predefined type, 6 elements
 * each, with origin, target and result layouts that differ (same type signature): a
 * vector(3,2,3), an indexed({1,2,3},{0,2,6}), a contiguous(2) x3 and a resized(lb -ext,
 * extent 2 ext) x6, for a selection of op x type pairs.
 *
 * Every process accumulates onto every target (itself included), at the same
 * elements for each case: the values are chosen so that the outcome does not depend on
 * the order (small integers and multiples of 1/4 whose sums and products are exact,
 * Gaussian integers for the complex products, unsigned wrap-around, ties of MAXLOC
 * values), and the oracle applies all contributions in rank order. MPI_REPLACE cases
 * give each origin its own elements at each target. The fetched values of
 * MPI_Get_accumulate are sent to their target (MPI_Alltoall), which checks, element by
 * element, that they are consistent with some serial order of the origins' updates
 * (a search over the subsets of origins already applied); a REPLACE origin fetches the
 * initial value of its own elements. Window memory starts as pseudo-random bytes with
 * known values at the addressed elements; every byte outside those elements (holes of
 * the derived types, the padding of MPI_DOUBLE_INT and the other pair types) must be
 * untouched, every byte of a result buffer outside the fetched elements too, and
 * origin buffers unchanged. Floating elements are compared by value (the sign of a zero
 * and the padding bytes inside a long double are not specified).
 *
 * Synchronisation: fence; lock exclusive and lock shared per target; lock_all with a
 * flush per target. The request-based calls are used in passive epochs only (MPI 4.1
 * 12.3.5): each request is completed by MPI_Wait, the origin buffer then overwritten
 * (its data was taken), and the target flushed (lock_all) or unlocked. Windows:
 * MPI_Win_allocate (disp_unit 1), MPI_Win_create (disp_unit 16), and
 * MPI_Win_allocate_shared (disp_unit 8); the window sizes are multiples of 64 bytes.
 * Each window runs every call x every mode it allows (14 rounds); each round issues
 * every case to every target and reinitialises all memory.
 *
 * Argument `strict` (optional; the runs on shmpi give it): MPI_MAX and MPI_MIN on the
 * unsigned types also get operands with the top bit set. MPICH 4.0.2's MPI_Accumulate
 * compares those as signed (MPI_MAX of 5 and 0xfffffff0 as MPI_UNSIGNED leaves 5,
 * while its MPI_Allreduce gives 0xfffffff0), so runs on MPICH's library go without. */
#include <complex.h>
#include <float.h>
#include <stddef.h>

#include "rma_common.h"

static int me, np, strict;

/* ---- the basic types ---- */

enum { K_SINT, K_UINT, K_MINT, K_FLT, K_CPX, K_BOOL, K_BYTE, K_PAIR };

enum {
    T_INT, T_LONG, T_LLONG, T_SCHAR, T_SHORT, T_UCHAR, T_USHORT, T_UNSIGNED, T_ULONG,
    T_ULLONG, T_I8, T_I16, T_I32, T_I64, T_U8, T_U16, T_U32, T_U64, T_AINT, T_OFFSET,
    T_COUNT, T_FLOAT, T_DOUBLE, T_LDOUBLE, T_CFLOAT, T_CDOUBLE, T_CLDOUBLE, T_BOOL, T_BYTE, T_2INT,
    T_DOUBLE_INT, T_FLOAT_INT, T_LONG_INT, T_SHORT_INT, T_LDOUBLE_INT, NT
};

struct p2int { int v; int i; };
struct pdi { double v; int i; };
struct pfi { float v; int i; };
struct pli { long v; int i; };
struct psi { short v; int i; };
struct pldi { long double v; int i; };

/* An atom of an element: bytes compared exactly, or a floating value compared by value. */
enum { A_BYTES, A_FLT, A_DBL, A_LDBL };
struct atom { int kind, off, len; };

struct btype {
    const char *name;
    MPI_Datatype dt;
    int kind;
    int size;   /* sizeof the C type = the MPI extent */
    int natom;
    struct atom atom[2];
};
static struct btype bt[NT];

#define BT(id, nm, d, k, sz) (bt[id].name = nm, bt[id].dt = d, bt[id].kind = k, bt[id].size = (int)(sz))

static void set_atoms(int id, int n, int k0, int o0, int l0, int k1, int o1, int l1) {
    bt[id].natom = n;
    bt[id].atom[0] = (struct atom){k0, o0, l0};
    bt[id].atom[1] = (struct atom){k1, o1, l1};
}

static void build_types(void) {
    BT(T_INT, "MPI_INT", MPI_INT, K_SINT, sizeof(int));
    BT(T_LONG, "MPI_LONG", MPI_LONG, K_SINT, sizeof(long));
    BT(T_LLONG, "MPI_LONG_LONG", MPI_LONG_LONG, K_SINT, sizeof(long long));
    BT(T_SCHAR, "MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, K_SINT, sizeof(signed char));
    BT(T_SHORT, "MPI_SHORT", MPI_SHORT, K_SINT, sizeof(short));
    BT(T_UCHAR, "MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, K_UINT, sizeof(unsigned char));
    BT(T_USHORT, "MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, K_UINT, sizeof(unsigned short));
    BT(T_UNSIGNED, "MPI_UNSIGNED", MPI_UNSIGNED, K_UINT, sizeof(unsigned));
    BT(T_ULONG, "MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, K_UINT, sizeof(unsigned long));
    BT(T_ULLONG, "MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, K_UINT,
       sizeof(unsigned long long));
    BT(T_I8, "MPI_INT8_T", MPI_INT8_T, K_SINT, 1);
    BT(T_I16, "MPI_INT16_T", MPI_INT16_T, K_SINT, 2);
    BT(T_I32, "MPI_INT32_T", MPI_INT32_T, K_SINT, 4);
    BT(T_I64, "MPI_INT64_T", MPI_INT64_T, K_SINT, 8);
    BT(T_U8, "MPI_UINT8_T", MPI_UINT8_T, K_UINT, 1);
    BT(T_U16, "MPI_UINT16_T", MPI_UINT16_T, K_UINT, 2);
    BT(T_U32, "MPI_UINT32_T", MPI_UINT32_T, K_UINT, 4);
    BT(T_U64, "MPI_UINT64_T", MPI_UINT64_T, K_UINT, 8);
    BT(T_AINT, "MPI_AINT", MPI_AINT, K_MINT, sizeof(MPI_Aint));
    BT(T_OFFSET, "MPI_OFFSET", MPI_OFFSET, K_MINT, sizeof(MPI_Offset));
    BT(T_COUNT, "MPI_COUNT", MPI_COUNT, K_MINT, sizeof(MPI_Count));
    BT(T_FLOAT, "MPI_FLOAT", MPI_FLOAT, K_FLT, sizeof(float));
    BT(T_DOUBLE, "MPI_DOUBLE", MPI_DOUBLE, K_FLT, sizeof(double));
    BT(T_LDOUBLE, "MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, K_FLT, sizeof(long double));
    BT(T_CFLOAT, "MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, K_CPX, sizeof(float _Complex));
    BT(T_CDOUBLE, "MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, K_CPX,
       sizeof(double _Complex));
    BT(T_CLDOUBLE, "MPI_C_LONG_DOUBLE_COMPLEX", MPI_C_LONG_DOUBLE_COMPLEX, K_CPX,
       sizeof(long double _Complex));
    BT(T_BOOL, "MPI_C_BOOL", MPI_C_BOOL, K_BOOL, sizeof(_Bool));
    BT(T_BYTE, "MPI_BYTE", MPI_BYTE, K_BYTE, 1);
    BT(T_2INT, "MPI_2INT", MPI_2INT, K_PAIR, sizeof(struct p2int));
    BT(T_DOUBLE_INT, "MPI_DOUBLE_INT", MPI_DOUBLE_INT, K_PAIR, sizeof(struct pdi));
    BT(T_FLOAT_INT, "MPI_FLOAT_INT", MPI_FLOAT_INT, K_PAIR, sizeof(struct pfi));
    BT(T_LONG_INT, "MPI_LONG_INT", MPI_LONG_INT, K_PAIR, sizeof(struct pli));
    BT(T_SHORT_INT, "MPI_SHORT_INT", MPI_SHORT_INT, K_PAIR, sizeof(struct psi));
    BT(T_LDOUBLE_INT, "MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, K_PAIR,
       sizeof(struct pldi));
    for (int t = 0; t < NT; t++)
        if (bt[t].kind != K_PAIR) set_atoms(t, 1, A_BYTES, 0, bt[t].size, 0, 0, 0);
    set_atoms(T_FLOAT, 1, A_FLT, 0, 4, 0, 0, 0);
    set_atoms(T_DOUBLE, 1, A_DBL, 0, 8, 0, 0, 0);
    set_atoms(T_LDOUBLE, 1, A_LDBL, 0, (int)sizeof(long double), 0, 0, 0);
    set_atoms(T_CFLOAT, 2, A_FLT, 0, 4, A_FLT, 4, 4);
    set_atoms(T_CDOUBLE, 2, A_DBL, 0, 8, A_DBL, 8, 8);
    set_atoms(T_CLDOUBLE, 2, A_LDBL, 0, (int)sizeof(long double), A_LDBL,
              (int)sizeof(long double), (int)sizeof(long double));
    set_atoms(T_2INT, 2, A_BYTES, 0, 4, A_BYTES, (int)offsetof(struct p2int, i), 4);
    set_atoms(T_DOUBLE_INT, 2, A_DBL, 0, 8, A_BYTES, (int)offsetof(struct pdi, i), 4);
    set_atoms(T_FLOAT_INT, 2, A_FLT, 0, 4, A_BYTES, (int)offsetof(struct pfi, i), 4);
    set_atoms(T_LONG_INT, 2, A_BYTES, 0, (int)sizeof(long), A_BYTES,
              (int)offsetof(struct pli, i), 4);
    set_atoms(T_SHORT_INT, 2, A_BYTES, 0, (int)sizeof(short), A_BYTES,
              (int)offsetof(struct psi, i), 4);
    set_atoms(T_LDOUBLE_INT, 2, A_LDBL, 0, (int)sizeof(long double), A_BYTES,
              (int)offsetof(struct pldi, i), 4);
    /* The library must agree with the C layout (MPI 4.1 6.9.4 for the pair types). */
    for (int t = 0; t < NT; t++) {
        MPI_Aint lb, ext;
        CHECK(MPI_Type_get_extent(bt[t].dt, &lb, &ext));
        EXPECT(lb == 0 && ext == bt[t].size, "%s: lb %ld extent %ld, expected 0 and %d",
               bt[t].name, (long)lb, (long)ext, bt[t].size);
    }
}

/* ---- the ops ---- */

enum {
    O_SUM, O_PROD, O_MAX, O_MIN, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR, O_MAXLOC,
    O_MINLOC, O_REPLACE, O_NOOP, NO
};
static const char *op_name[NO] = {"MPI_SUM", "MPI_PROD", "MPI_MAX", "MPI_MIN",
                                  "MPI_LAND", "MPI_LOR", "MPI_LXOR", "MPI_BAND",
                                  "MPI_BOR", "MPI_BXOR", "MPI_MAXLOC", "MPI_MINLOC",
                                  "MPI_REPLACE", "MPI_NO_OP"};
static MPI_Op op_handle(int o) {
    switch (o) {
    case O_SUM: return MPI_SUM;
    case O_PROD: return MPI_PROD;
    case O_MAX: return MPI_MAX;
    case O_MIN: return MPI_MIN;
    case O_LAND: return MPI_LAND;
    case O_LOR: return MPI_LOR;
    case O_LXOR: return MPI_LXOR;
    case O_BAND: return MPI_BAND;
    case O_BOR: return MPI_BOR;
    case O_BXOR: return MPI_BXOR;
    case O_MAXLOC: return MPI_MAXLOC;
    case O_MINLOC: return MPI_MINLOC;
    case O_REPLACE: return MPI_REPLACE;
    default: return MPI_NO_OP;
    }
}

/* Which type classes each op allows (MPI 4.1 6.9.2): C integer, multi-language,
 * floating point, complex, logical, byte, pairs. */
static int op_allows(int o, int k) {
    switch (o) {
    case O_SUM:
    case O_PROD: return k == K_SINT || k == K_UINT || k == K_MINT || k == K_FLT || k == K_CPX;
    case O_MAX:
    case O_MIN: return k == K_SINT || k == K_UINT || k == K_MINT || k == K_FLT;
    case O_LAND:
    case O_LOR:
    case O_LXOR: return k == K_SINT || k == K_UINT || k == K_BOOL;
    case O_BAND:
    case O_BOR:
    case O_BXOR: return k == K_SINT || k == K_UINT || k == K_MINT || k == K_BYTE;
    case O_MAXLOC:
    case O_MINLOC: return k == K_PAIR;
    }
    return 0;
}

/* ---- the oracle's arithmetic: a = a op b on one element of type t ---- */

#define SINT_APPLY(T)                                                                    \
    {                                                                                    \
        T x, y;                                                                          \
        memcpy(&x, a, sizeof x);                                                         \
        memcpy(&y, b, sizeof y);                                                         \
        switch (op) {                                                                    \
        case O_SUM: x = (T)(x + y); break;                                               \
        case O_PROD: x = (T)(x * y); break;                                              \
        case O_MAX: x = y > x ? y : x; break;                                            \
        case O_MIN: x = y < x ? y : x; break;                                            \
        case O_LAND: x = (T)(x && y); break;                                             \
        case O_LOR: x = (T)(x || y); break;                                              \
        case O_LXOR: x = (T)(!x != !y); break;                                           \
        case O_BAND: x = (T)(x & y); break;                                              \
        case O_BOR: x = (T)(x | y); break;                                               \
        case O_BXOR: x = (T)(x ^ y); break;                                              \
        case O_REPLACE: x = y; break;                                                    \
        default: break;                                                                  \
        }                                                                                \
        memcpy(a, &x, sizeof x);                                                         \
    }                                                                                    \
    break;
/* Unsigned sums and products wrap: computed in unsigned long long (no promotion to a
 * signed int that could overflow). */
#define UINT_APPLY(T)                                                                    \
    {                                                                                    \
        T x, y;                                                                          \
        memcpy(&x, a, sizeof x);                                                         \
        memcpy(&y, b, sizeof y);                                                         \
        switch (op) {                                                                    \
        case O_SUM: x = (T)((unsigned long long)x + (unsigned long long)y); break;       \
        case O_PROD: x = (T)((unsigned long long)x * (unsigned long long)y); break;      \
        case O_MAX: x = y > x ? y : x; break;                                            \
        case O_MIN: x = y < x ? y : x; break;                                            \
        case O_LAND: x = (T)(x && y); break;                                             \
        case O_LOR: x = (T)(x || y); break;                                              \
        case O_LXOR: x = (T)(!x != !y); break;                                           \
        case O_BAND: x = (T)(x & y); break;                                              \
        case O_BOR: x = (T)(x | y); break;                                               \
        case O_BXOR: x = (T)(x ^ y); break;                                              \
        case O_REPLACE: x = y; break;                                                    \
        default: break;                                                                  \
        }                                                                                \
        memcpy(a, &x, sizeof x);                                                         \
    }                                                                                    \
    break;
#define FLT_APPLY(T)                                                                     \
    {                                                                                    \
        T x, y;                                                                          \
        memcpy(&x, a, sizeof x);                                                         \
        memcpy(&y, b, sizeof y);                                                         \
        switch (op) {                                                                    \
        case O_SUM: x = x + y; break;                                                    \
        case O_PROD: x = x * y; break;                                                   \
        case O_MAX: x = y > x ? y : x; break;                                            \
        case O_MIN: x = y < x ? y : x; break;                                            \
        case O_REPLACE: x = y; break;                                                    \
        default: break;                                                                  \
        }                                                                                \
        memcpy(a, &x, sizeof x);                                                         \
    }                                                                                    \
    break;
#define CPX_APPLY(T)                                                                     \
    {                                                                                    \
        T x, y;                                                                          \
        memcpy(&x, a, sizeof x);                                                         \
        memcpy(&y, b, sizeof y);                                                         \
        switch (op) {                                                                    \
        case O_SUM: x = x + y; break;                                                    \
        case O_PROD: x = x * y; break;                                                   \
        case O_REPLACE: x = y; break;                                                    \
        default: break;                                                                  \
        }                                                                                \
        memcpy(a, &x, sizeof x);                                                         \
    }                                                                                    \
    break;
/* Pairs: field by field, so that the padding of `a` is kept. */
#define PAIR_APPLY(S, VT)                                                                \
    {                                                                                    \
        VT xv, yv;                                                                       \
        int xi, yi;                                                                      \
        memcpy(&xv, a, sizeof xv);                                                       \
        memcpy(&yv, b, sizeof yv);                                                       \
        memcpy(&xi, a + offsetof(S, i), sizeof xi);                                      \
        memcpy(&yi, b + offsetof(S, i), sizeof yi);                                      \
        int take = op == O_REPLACE ||                                                    \
                   (op == O_MAXLOC && (yv > xv || (yv == xv && yi < xi))) ||             \
                   (op == O_MINLOC && (yv < xv || (yv == xv && yi < xi)));               \
        if (take) {                                                                      \
            memcpy(a, b, sizeof xv);                                                     \
            memcpy(a + offsetof(S, i), &yi, sizeof yi);                                  \
        }                                                                                \
    }                                                                                    \
    break;

static void apply(int t, int op, char *a, const char *b) {
    if (op == O_NOOP) return;
    switch (t) {
    case T_INT: SINT_APPLY(int)
    case T_LONG: SINT_APPLY(long)
    case T_LLONG: SINT_APPLY(long long)
    case T_SCHAR: SINT_APPLY(signed char)
    case T_SHORT: SINT_APPLY(short)
    case T_UCHAR: UINT_APPLY(unsigned char)
    case T_USHORT: UINT_APPLY(unsigned short)
    case T_UNSIGNED: UINT_APPLY(unsigned)
    case T_ULONG: UINT_APPLY(unsigned long)
    case T_ULLONG: UINT_APPLY(unsigned long long)
    case T_I8: SINT_APPLY(int8_t)
    case T_I16: SINT_APPLY(int16_t)
    case T_I32: SINT_APPLY(int32_t)
    case T_I64: SINT_APPLY(int64_t)
    case T_U8: UINT_APPLY(uint8_t)
    case T_U16: UINT_APPLY(uint16_t)
    case T_U32: UINT_APPLY(uint32_t)
    case T_U64: UINT_APPLY(uint64_t)
    case T_AINT: SINT_APPLY(MPI_Aint)
    case T_OFFSET: SINT_APPLY(MPI_Offset)
    case T_COUNT: SINT_APPLY(MPI_Count)
    case T_FLOAT: FLT_APPLY(float)
    case T_DOUBLE: FLT_APPLY(double)
    case T_LDOUBLE: FLT_APPLY(long double)
    case T_CFLOAT: CPX_APPLY(float _Complex)
    case T_CDOUBLE: CPX_APPLY(double _Complex)
    case T_CLDOUBLE: CPX_APPLY(long double _Complex)
    case T_BOOL: {
        _Bool x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        if (op == O_LAND) x = x && y;
        else if (op == O_LOR) x = x || y;
        else if (op == O_LXOR) x = x != y;
        else if (op == O_REPLACE) x = y;
        memcpy(a, &x, sizeof x);
        break;
    }
    case T_BYTE: UINT_APPLY(unsigned char)
    case T_2INT: PAIR_APPLY(struct p2int, int)
    case T_DOUBLE_INT: PAIR_APPLY(struct pdi, double)
    case T_FLOAT_INT: PAIR_APPLY(struct pfi, float)
    case T_LONG_INT: PAIR_APPLY(struct pli, long)
    case T_SHORT_INT: PAIR_APPLY(struct psi, short)
    case T_LDOUBLE_INT: PAIR_APPLY(struct pldi, long double)
    }
}

/* Equality of two elements of type t: atoms of bytes exactly, floating atoms by value. */
static int elem_eq(int t, const char *a, const char *b) {
    for (int k = 0; k < bt[t].natom; k++) {
        const struct atom *at = &bt[t].atom[k];
        const char *p = a + at->off, *q = b + at->off;
        switch (at->kind) {
        case A_BYTES:
            if (memcmp(p, q, (size_t)at->len)) return 0;
            break;
        case A_FLT: {
            float x, y;
            memcpy(&x, p, sizeof x);
            memcpy(&y, q, sizeof y);
            if (!(x == y)) return 0;
            break;
        }
        case A_DBL: {
            double x, y;
            memcpy(&x, p, sizeof x);
            memcpy(&y, q, sizeof y);
            if (!(x == y)) return 0;
            break;
        }
        default: {
            long double x, y;
            memcpy(&x, p, sizeof x);
            memcpy(&y, q, sizeof y);
            if (!(x == y)) return 0;
        }
        }
    }
    return 1;
}

/* An element as text, for reports. */
static void show(int t, const char *p, char *out, size_t n) {
    size_t used = 0;
    out[0] = 0;
    for (int k = 0; k < bt[t].natom; k++) {
        const struct atom *at = &bt[t].atom[k];
        const char *q = p + at->off;
        char one[64];
        switch (at->kind) {
        case A_BYTES: {
            if (bt[t].kind == K_SINT || bt[t].kind == K_MINT || bt[t].kind == K_PAIR) {
                long long v = 0;
                if (at->len == 1) { signed char x; memcpy(&x, q, 1); v = x; }
                else if (at->len == 2) { short x; memcpy(&x, q, 2); v = x; }
                else if (at->len == 4) { int x; memcpy(&x, q, 4); v = x; }
                else { memcpy(&v, q, 8); }
                snprintf(one, sizeof one, "%lld", v);
            } else {
                unsigned long long v = 0;
                memcpy(&v, q, (size_t)at->len); /* little-endian hosts */
                snprintf(one, sizeof one, "%llu (0x%llx)", v, v);
            }
            break;
        }
        case A_FLT: { float x; memcpy(&x, q, 4); snprintf(one, sizeof one, "%.9g", (double)x); break; }
        case A_DBL: { double x; memcpy(&x, q, 8); snprintf(one, sizeof one, "%.17g", x); break; }
        default: { long double x; memcpy(&x, q, sizeof x); snprintf(one, sizeof one, "%.21Lg", x); }
        }
        const char *sep = !k ? "" : bt[t].kind == K_CPX ? " + i*" : ", index ";
        used += (size_t)snprintf(out + used, n > used ? n - used : 0, "%s%s", sep, one);
        if (used >= n) break;
    }
}

/* ---- the value each process contributes ---- */

/* A long double written with zeros in its padding (x87: 6 of its 16 bytes), so that
 * the origin buffers the oracle builds are the same each time. (Storing into a zeroed
 * union would not do: a store leaves the padding bytes unspecified, and compilers
 * drop the zeroing.) */
static void store_ld(char *p, long double v) {
    unsigned char b[sizeof(long double)];
    memcpy(b, &v, sizeof b);
#if LDBL_MANT_DIG == 64
    memset(b + 10, 0, sizeof b - 10);
#endif
    memcpy(p, b, sizeof b);
}

/* Stores the small integer v (and w: the imaginary part or the index) as an element of
 * type t; floating values are v/4. Only the atoms are written. */
static void store(int t, char *p, long long v, long long w) {
    switch (bt[t].kind) {
    case K_SINT:
    case K_UINT:
    case K_MINT:
    case K_BYTE: {
        /* (T)v for the integer types: modulo 2^n for the unsigned ones. */
        unsigned long long u = (unsigned long long)v;
        switch (t) {
        case T_INT: { int x = (int)v; memcpy(p, &x, sizeof x); break; }
        case T_LONG: { long x = (long)v; memcpy(p, &x, sizeof x); break; }
        case T_LLONG: { long long x = v; memcpy(p, &x, sizeof x); break; }
        case T_SCHAR: { signed char x = (signed char)v; memcpy(p, &x, sizeof x); break; }
        case T_SHORT: { short x = (short)v; memcpy(p, &x, sizeof x); break; }
        case T_UCHAR: case T_BYTE: { unsigned char x = (unsigned char)u; memcpy(p, &x, 1); break; }
        case T_USHORT: { unsigned short x = (unsigned short)u; memcpy(p, &x, sizeof x); break; }
        case T_UNSIGNED: { unsigned x = (unsigned)u; memcpy(p, &x, sizeof x); break; }
        case T_ULONG: { unsigned long x = (unsigned long)u; memcpy(p, &x, sizeof x); break; }
        case T_ULLONG: { memcpy(p, &u, sizeof u); break; }
        case T_I8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
        case T_I16: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
        case T_I32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
        case T_I64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
        case T_U8: { uint8_t x = (uint8_t)u; memcpy(p, &x, 1); break; }
        case T_U16: { uint16_t x = (uint16_t)u; memcpy(p, &x, 2); break; }
        case T_U32: { uint32_t x = (uint32_t)u; memcpy(p, &x, 4); break; }
        case T_U64: { uint64_t x = (uint64_t)u; memcpy(p, &x, 8); break; }
        case T_AINT: { MPI_Aint x = (MPI_Aint)v; memcpy(p, &x, sizeof x); break; }
        case T_OFFSET: { MPI_Offset x = (MPI_Offset)v; memcpy(p, &x, sizeof x); break; }
        case T_COUNT: { MPI_Count x = (MPI_Count)v; memcpy(p, &x, sizeof x); break; }
        }
        break;
    }
    case K_FLT:
        if (t == T_FLOAT) { float x = (float)v / 4; memcpy(p, &x, sizeof x); }
        else if (t == T_DOUBLE) { double x = (double)v / 4; memcpy(p, &x, sizeof x); }
        else store_ld(p, (long double)v / 4);
        break;
    case K_CPX:
        /* A complex is laid out as two reals (C11 6.2.5). */
        if (t == T_CFLOAT) {
            float x[2] = {(float)v / 4, (float)w / 4};
            memcpy(p, x, sizeof x);
        } else if (t == T_CDOUBLE) {
            double x[2] = {(double)v / 4, (double)w / 4};
            memcpy(p, x, sizeof x);
        } else {
            store_ld(p, (long double)v / 4);
            store_ld(p + sizeof(long double), (long double)w / 4);
        }
        break;
    case K_BOOL: { _Bool x = v != 0; memcpy(p, &x, sizeof x); break; }
    case K_PAIR: {
        int i = (int)w;
        switch (t) {
        case T_2INT: {
            int x = (int)v;
            memcpy(p, &x, sizeof x);
            memcpy(p + offsetof(struct p2int, i), &i, 4);
            break;
        }
        case T_DOUBLE_INT: {
            double x = (double)v / 4;
            memcpy(p, &x, sizeof x);
            memcpy(p + offsetof(struct pdi, i), &i, 4);
            break;
        }
        case T_FLOAT_INT: {
            float x = (float)v / 4;
            memcpy(p, &x, sizeof x);
            memcpy(p + offsetof(struct pfi, i), &i, 4);
            break;
        }
        case T_LONG_INT: {
            long x = (long)v;
            memcpy(p, &x, sizeof x);
            memcpy(p + offsetof(struct pli, i), &i, 4);
            break;
        }
        case T_SHORT_INT: {
            short x = (short)v;
            memcpy(p, &x, sizeof x);
            memcpy(p + offsetof(struct psi, i), &i, 4);
            break;
        }
        default:
            store_ld(p, (long double)v / 4);
            memcpy(p + offsetof(struct pldi, i), &i, 4);
        }
        break;
    }
    }
}

/* ---- the cases ---- */

#define NE 6     /* most elements in a case */
#define NPRIM 3  /* elements of a case of a predefined type */

enum { L_BASIC, L_VEC, L_IDX, L_CONT, L_RSZ, NL };
static const char *layout_name[NL] = {"x6", "vector(3,2,3)", "indexed({1,2,3},{0,2,6})",
                                      "contiguous(2) x3", "resized(lb -ext, extent 2 ext) x6"};

struct acase {
    char name[128];
    int t, op;
    MPI_Datatype dt[3];  /* origin, target, result */
    int cnt[3];
    int n;
    int off[3][NE];      /* byte offsets of the elements in the three buffers */
    int span[3];         /* bytes reserved in each, a multiple of 32 */
    int per_origin;      /* MPI_REPLACE: each origin has its own elements at a target */
    size_t woff, ooff, roff; /* where its elements start in the window, origin, result */
};

#define MAXCASE 320
static struct acase cases[MAXCASE];
static int ncase;
static MPI_Datatype owned[64];
static int nowned;

static int round32(int x) { return (x + 31) / 32 * 32; }

/* A layout of 6 elements of type t: the datatype, count and element offsets. */
static void layout(int l, int t, MPI_Datatype *dt, int *cnt, int *off, int *span) {
    int e = bt[t].size, last = 0;
    MPI_Datatype d = MPI_DATATYPE_NULL;
    switch (l) {
    case L_BASIC:
        *dt = bt[t].dt;
        *cnt = 6;
        for (int i = 0; i < 6; i++) off[i] = e * i;
        break;
    case L_VEC:
        CHECK(MPI_Type_vector(3, 2, 3, bt[t].dt, &d));
        *cnt = 1;
        for (int i = 0; i < 6; i++) off[i] = e * ((i / 2) * 3 + i % 2);
        break;
    case L_IDX: {
        int bl[3] = {1, 2, 3}, dp[3] = {0, 2, 6}, el[6] = {0, 2, 3, 6, 7, 8};
        CHECK(MPI_Type_indexed(3, bl, dp, bt[t].dt, &d));
        *cnt = 1;
        for (int i = 0; i < 6; i++) off[i] = e * el[i];
        break;
    }
    case L_CONT:
        CHECK(MPI_Type_contiguous(2, bt[t].dt, &d));
        *cnt = 3;
        for (int i = 0; i < 6; i++) off[i] = e * i;
        break;
    case L_RSZ:
        CHECK(MPI_Type_create_resized(bt[t].dt, -(MPI_Aint)e, 2 * (MPI_Aint)e, &d));
        *cnt = 6;
        for (int i = 0; i < 6; i++) off[i] = 2 * e * i;
        break;
    }
    if (d != MPI_DATATYPE_NULL) {
        CHECK(MPI_Type_commit(&d));
        owned[nowned++] = d;
        *dt = d;
    }
    for (int i = 0; i < 6; i++)
        if (off[i] + e > last) last = off[i] + e;
    *span = round32(last);
}

static struct acase *new_case(int t, int op) {
    if (ncase >= MAXCASE) rma_die("too many cases", MPI_ERR_INTERN, __FILE__, __LINE__);
    struct acase *c = &cases[ncase++];
    memset(c, 0, sizeof *c);
    c->t = t;
    c->op = op;
    c->per_origin = op == O_REPLACE;
    return c;
}

static void prim_case(int t, int op) {
    struct acase *c = new_case(t, op);
    snprintf(c->name, sizeof c->name, "%s on %s x%d", op_name[op], bt[t].name, NPRIM);
    c->n = NPRIM;
    for (int k = 0; k < 3; k++) {
        c->dt[k] = bt[t].dt;
        c->cnt[k] = NPRIM;
        for (int i = 0; i < NPRIM; i++) c->off[k][i] = bt[t].size * i;
        c->span[k] = round32(bt[t].size * NPRIM);
    }
}

static void derived_case(int t, int op, int lo, int lt, int lr) {
    struct acase *c = new_case(t, op);
    snprintf(c->name, sizeof c->name, "%s on %s: origin %s, target %s, result %s",
             op_name[op], bt[t].name, layout_name[lo], layout_name[lt], layout_name[lr]);
    c->n = 6;
    int l[3] = {lo, lt, lr};
    for (int k = 0; k < 3; k++) layout(l[k], t, &c->dt[k], &c->cnt[k], c->off[k], &c->span[k]);
}

static void build_cases(void) {
    for (int op = O_SUM; op <= O_MINLOC; op++)
        for (int t = 0; t < NT; t++)
            if (op_allows(op, bt[t].kind)) prim_case(t, op);
    static const int rep[] = {T_INT, T_U8, T_DOUBLE, T_LDOUBLE, T_CFLOAT, T_BOOL, T_BYTE,
                              T_DOUBLE_INT, T_SHORT_INT};
    for (size_t i = 0; i < sizeof rep / sizeof rep[0]; i++) prim_case(rep[i], O_REPLACE);
    static const int noop[] = {T_INT, T_I64, T_DOUBLE, T_CDOUBLE, T_BOOL, T_BYTE, T_2INT,
                               T_LDOUBLE_INT};
    for (size_t i = 0; i < sizeof noop / sizeof noop[0]; i++) prim_case(noop[i], O_NOOP);
    derived_case(T_INT, O_SUM, L_VEC, L_BASIC, L_IDX);
    derived_case(T_DOUBLE, O_MAX, L_BASIC, L_IDX, L_VEC);
    derived_case(T_LLONG, O_BXOR, L_CONT, L_VEC, L_RSZ);
    derived_case(T_DOUBLE_INT, O_MINLOC, L_CONT, L_RSZ, L_BASIC);
    derived_case(T_UNSIGNED, O_PROD, L_BASIC, L_RSZ, L_CONT);
    derived_case(T_FLOAT, O_SUM, L_IDX, L_VEC, L_CONT);
    derived_case(T_CDOUBLE, O_PROD, L_RSZ, L_CONT, L_IDX);
    derived_case(T_BOOL, O_LXOR, L_VEC, L_IDX, L_RSZ);
    derived_case(T_SHORT_INT, O_MAXLOC, L_IDX, L_CONT, L_VEC);
    derived_case(T_INT, O_REPLACE, L_RSZ, L_IDX, L_BASIC);
    derived_case(T_BYTE, O_BOR, L_CONT, L_IDX, L_VEC);
    derived_case(T_I16, O_MIN, L_IDX, L_RSZ, L_CONT);
    derived_case(T_LDOUBLE, O_SUM, L_CONT, L_VEC, L_IDX);
    derived_case(T_LDOUBLE_INT, O_MAXLOC, L_VEC, L_RSZ, L_IDX);
    derived_case(T_DOUBLE, O_NOOP, L_IDX, L_VEC, L_RSZ);
}

/* ---- values ---- */

static int round_no;

static uint64_t hash(int c, int slot, int i, int who, int target) {
    return rma_mix(((((uint64_t)c * 131 + (uint64_t)slot) * 37 + (uint64_t)i) * 71 +
                    (uint64_t)(who + 1)) * 1009 + (uint64_t)target * 65537 +
                   (uint64_t)round_no * 0x100000001ULL);
}

/* Element i of case c at target `target`, slot `slot` (the origin for REPLACE, else 0):
 * its initial value (who = -1) or origin who's contribution, written into p. */
static void gen(int ci, int slot, int i, int who, int target, char *p) {
    const struct acase *c = &cases[ci];
    int t = c->t, k = bt[t].kind;
    uint64_t h = hash(ci, slot, i, who, target);
    int init = who < 0;
    long long v = 0, w = 0;
    int special = !init && who == (i + target + round_no) % np;
    int special2 = !init && np > 1 && who == (i + target + round_no + 1) % np;
    switch (c->op) {
    case O_SUM:
        /* Unsigned: element 0 starts just below 2^n and wraps. */
        if (k == K_UINT)
            v = !init ? (long long)(h % 10) : i == 0 ? -3 - (long long)(h % 5) : (long long)(h % 41);
        else v = init ? (long long)(h % 41) - 20 : (long long)(h % 11) - 5;
        w = init ? (long long)((h >> 20) % 41) - 20 : (long long)((h >> 20) % 11) - 5;
        break;
    case O_PROD:
        if (k == K_CPX) {
            /* Gaussian integers (times 4): 3+i, then 1+i, i, and +-1, -i, 1-i. */
            static const int f[4][2] = {{4, 0}, {-4, 0}, {0, -4}, {4, -4}};
            if (init) v = 12, w = 4;
            else if (special) v = 4, w = 4;
            else if (special2) v = 0, w = 4;
            else v = f[h % 4][0], w = f[h % 4][1];
        } else if (k == K_FLT) {
            /* +-3, then 2, 0.5 and +-1 */
            v = init ? (h % 2 ? 12 : -12) : special ? 8 : special2 ? 2 : h % 3 == 0 ? -4 : 4;
        } else {
            /* +-3, then 2, 3 and +-1 (-1 wraps to 2^n-1 for the unsigned types) */
            v = init ? (h % 2 ? 3 : -3) : special ? 2 : special2 ? 3 : h % 3 == 0 ? -1 : 1;
            if (k == K_UINT && init) v = 3;
        }
        break;
    case O_MAX:
    case O_MIN:
        /* Unsigned values with the top bit set only with `strict` (MPICH 4.0.2 compares
         * them as signed in MPI_Accumulate). */
        if (k == K_UINT) v = strict && h % 4 == 0 ? -(long long)(h % 50) - 1 : (long long)(h % 100);
        else v = (long long)(h % 41) - 20;
        break;
    case O_LAND:
        if (init) v = h % 2 ? 6 : 0;
        else v = h % 6 ? (long long)(1 + h % 4) * (k == K_SINT && (h >> 9) % 2 ? -1 : 1) : 0;
        break;
    case O_LOR:
        v = init ? (h % 3 == 0 ? 2 : 0) : h % 5 == 0 ? (k == K_SINT ? -4 : 4) : 0;
        break;
    case O_LXOR:
        v = init ? (h % 2 ? 7 : 0) : h % 2 ? (k == K_SINT ? -2 : 2) : 0;
        break;
    case O_BAND:
    case O_BOR:
    case O_BXOR: {
        /* Random bits: mostly ones for AND, mostly zeros for OR. */
        unsigned char x[16], y[16];
        rma_fill_bytes(x, sizeof x, h, 1, 0);
        rma_fill_bytes(y, sizeof y, h, 2, 0);
        for (int b = 0; b < 16; b++)
            x[b] = (unsigned char)(init || c->op == O_BXOR ? x[b]
                                   : c->op == O_BAND ? x[b] | y[b] : x[b] & y[b]);
        memcpy(p, x, (size_t)bt[t].size);
        return;
    }
    case O_MAXLOC:
    case O_MINLOC:
        v = (long long)(h % 7) - 3;
        w = (long long)((h >> 16) % 6);
        break;
    case O_REPLACE:
    case O_NOOP:
        v = (long long)(h % 101) - 50;
        w = (long long)((h >> 16) % 101) - 50;
        if (k == K_UINT || k == K_BYTE) v = (long long)(h % 256);
        if (k == K_BOOL) v = (long long)(h % 2);
        break;
    }
    store(t, p, v, w);
}

/* ---- the layout of the buffers ---- */

static size_t wbytes;  /* window bytes per process, a multiple of 64 */
static size_t oreg, rreg; /* origin / result bytes per target */
static size_t obytes, rbytes;
static unsigned char *mask;  /* window bytes inside a value-compared atom */
static int *owner;           /* window byte -> case index, or -1 */
static unsigned char *rmask; /* result-buffer bytes of fetched elements (one target) */

static size_t slot_off(const struct acase *c, int slot) {
    return c->woff + (size_t)slot * (size_t)c->span[1];
}
static int nslots(const struct acase *c) { return c->per_origin ? np : 1; }

static void plan(void) {
    size_t w = 0, o = 0, r = 0;
    for (int ci = 0; ci < ncase; ci++) {
        struct acase *c = &cases[ci];
        c->woff = w;
        c->ooff = o;
        c->roff = r;
        w += (size_t)c->span[1] * (size_t)nslots(c);
        o += (size_t)c->span[0];
        r += (size_t)c->span[2];
    }
    wbytes = (w + 63) / 64 * 64;
    oreg = (o + 63) / 64 * 64;
    rreg = (r + 63) / 64 * 64;
    obytes = oreg * (size_t)np;
    rbytes = rreg * (size_t)np;
    mask = calloc(wbytes, 1);
    owner = malloc(sizeof(int) * wbytes);
    rmask = calloc(rreg, 1);
    if (!mask || !owner || !rmask) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
    for (size_t b = 0; b < wbytes; b++) owner[b] = -1;
    for (int ci = 0; ci < ncase; ci++) {
        struct acase *c = &cases[ci];
        const struct btype *b = &bt[c->t];
        for (int s = 0; s < nslots(c); s++)
            for (size_t x = 0; x < (size_t)c->span[1]; x++) owner[slot_off(c, s) + x] = ci;
        for (int s = 0; s < nslots(c); s++)
            for (int i = 0; i < c->n; i++)
                for (int k = 0; k < b->natom; k++) {
                    size_t at = slot_off(c, s) + (size_t)c->off[1][i] + (size_t)b->atom[k].off;
                    if (b->atom[k].kind != A_BYTES) memset(mask + at, 1, (size_t)b->atom[k].len);
                }
        for (int i = 0; i < c->n; i++)
            for (int k = 0; k < b->natom; k++)
                memset(rmask + c->roff + (size_t)c->off[2][i] + (size_t)b->atom[k].off, 1,
                       (size_t)b->atom[k].len);
    }
}

/* ---- the rounds ---- */

enum { V_ACC, V_GACC, V_RACC, V_RGACC, NV };
static const char *var_name[NV] = {"MPI_Accumulate", "MPI_Get_accumulate", "MPI_Raccumulate",
                                   "MPI_Rget_accumulate"};
enum { M_FENCE, M_EXCL, M_SHARED, M_LOCKALL, NM };
static const char *mode_name[NM] = {"fence", "lock exclusive", "lock shared",
                                    "lock_all + flush"};

static int fetching(int v) { return v == V_GACC || v == V_RGACC; }
static int case_used(const struct acase *c, int v) {
    return c->op != O_NOOP || fetching(v); /* MPI_NO_OP: the fetching calls only */
}

static char ctx[256];
static char *img, *obuf, *oexp, *rbuf, *rexp, *gath;

/* Target t's window memory at the start of the round. */
static void init_image(int t, char *im) {
    rma_fill_bytes(im, wbytes, (uint64_t)t, (uint64_t)round_no, 1);
    for (int ci = 0; ci < ncase; ci++) {
        const struct acase *c = &cases[ci];
        for (int s = 0; s < nslots(c); s++)
            for (int i = 0; i < c->n; i++)
                gen(ci, s, i, -1, t, im + slot_off(c, s) + c->off[1][i]);
    }
}

/* Origin o's buffer: its contributions to each target at the origin offsets. */
static void init_origin(int o, char *buf) {
    rma_fill_bytes(buf, obytes, (uint64_t)o, (uint64_t)round_no, 2);
    for (int t = 0; t < np; t++)
        for (int ci = 0; ci < ncase; ci++) {
            const struct acase *c = &cases[ci];
            for (int i = 0; i < c->n; i++)
                gen(ci, c->per_origin ? o : 0, i, o, t,
                    buf + (size_t)t * oreg + c->ooff + c->off[0][i]);
        }
}

/* Target t's memory at the end of the round. */
static void final_image(int t, int v, char *im) {
    init_image(t, im);
    for (int ci = 0; ci < ncase; ci++) {
        const struct acase *c = &cases[ci];
        if (!case_used(c, v)) continue;
        for (int o = 0; o < np; o++) {
            int s = c->per_origin ? o : 0;
            for (int i = 0; i < c->n; i++) {
                char x[32];
                memset(x, 0, sizeof x);
                gen(ci, s, i, o, t, x);
                apply(c->t, c->op, im + slot_off(c, s) + c->off[1][i], x);
            }
        }
    }
}

static void compare_window(const char *expected, const char *found) {
    /* Bytes compared exactly: everything but the floating atoms. */
    long bad = 0;
    for (size_t b = 0; b < wbytes; b++) {
        if (mask[b] || expected[b] == found[b]) continue;
        if (bad++ < 3) {
            int ci = owner[b];
            if (ci < 0)
                rma_fail(__FILE__, __LINE__, "%s: window byte %zu (after the last case) "
                         "changed: expected %02x found %02x", ctx, b,
                         (unsigned char)expected[b], (unsigned char)found[b]);
            else {
                const struct acase *c = &cases[ci];
                size_t s = (b - c->woff) / (size_t)c->span[1];
                long rel = (long)(b - slot_off(c, (int)s));
                int el = -1;
                for (int i = 0; i < c->n; i++)
                    if (rel >= c->off[1][i] && rel < c->off[1][i] + bt[c->t].size) el = i;
                char where[48];
                if (el < 0) snprintf(where, sizeof where, "outside the elements");
                else snprintf(where, sizeof where, "in element %d", el);
                rma_fail(__FILE__, __LINE__, "%s: case '%s' slot %zu: byte %ld of the "
                         "slot (%s) expected %02x found %02x", ctx, c->name, s, rel, where,
                         (unsigned char)expected[b], (unsigned char)found[b]);
            }
        }
    }
    if (bad > 3) rma_fail(__FILE__, __LINE__, "%s: %ld window bytes differ in all", ctx, bad);
    /* Elements by value, with a report naming the case. */
    for (int ci = 0; ci < ncase; ci++) {
        const struct acase *c = &cases[ci];
        for (int s = 0; s < nslots(c); s++)
            for (int i = 0; i < c->n; i++) {
                size_t at = slot_off(c, s) + (size_t)c->off[1][i];
                if (!elem_eq(c->t, expected + at, found + at)) {
                    char e[160], f[160];
                    show(c->t, expected + at, e, sizeof e);
                    show(c->t, found + at, f, sizeof f);
                    rma_fail(__FILE__, __LINE__, "%s: case '%s': target %d slot %d element "
                             "%d: expected %s, found %s", ctx, c->name, me, s, i, e, f);
                }
            }
    }
}

/* The fetched values at this target: for a shared case, per element, the values the
 * origins fetched must be those of some serial order of their updates. */
static unsigned char *dead;
static int chain(int ci, int i, char contrib[][32], const char *const *fetched,
                 unsigned m, const char *acc) {
    const struct acase *c = &cases[ci];
    if (m == (1u << np) - 1) return 1;
    if (dead[m]) return 0;
    for (int o = 0; o < np; o++) {
        if (m >> o & 1) continue;
        if (!elem_eq(c->t, fetched[o], acc)) continue;
        char next[32];
        memcpy(next, acc, sizeof next);
        apply(c->t, c->op, next, contrib[o]);
        if (chain(ci, i, contrib, fetched, m | 1u << o, next)) return 1;
    }
    dead[m] = 1;
    return 0;
}

static void check_fetched(int v) {
    char init[32], contrib[16][32];
    const char *fetched[16];
    for (int ci = 0; ci < ncase; ci++) {
        const struct acase *c = &cases[ci];
        if (!case_used(c, v)) continue;
        for (int i = 0; i < c->n; i++) {
            if (c->per_origin) {
                for (int o = 0; o < np; o++) {
                    const char *f = gath + (size_t)o * rreg + c->roff + c->off[2][i];
                    memset(init, 0, sizeof init);
                    gen(ci, o, i, -1, me, init);
                    if (!elem_eq(c->t, init, f)) {
                        char e[160], g[160];
                        show(c->t, init, e, sizeof e);
                        show(c->t, f, g, sizeof g);
                        rma_fail(__FILE__, __LINE__, "%s: case '%s': origin %d fetched "
                                 "element %d of its own slot at target %d: expected %s "
                                 "(the initial value), found %s", ctx, c->name, o, i, me, e, g);
                    }
                }
                continue;
            }
            memset(init, 0, sizeof init);
            gen(ci, 0, i, -1, me, init);
            for (int o = 0; o < np; o++) {
                memset(contrib[o], 0, 32);
                gen(ci, 0, i, o, me, contrib[o]);
                fetched[o] = gath + (size_t)o * rreg + c->roff + c->off[2][i];
            }
            memset(dead, 0, (size_t)1 << np);
            if (!chain(ci, i, contrib, fetched, 0, init)) {
                char buf[1024], e[160];
                size_t u = 0;
                show(c->t, init, e, sizeof e);
                for (int o = 0; o < np && u < sizeof buf; o++) {
                    char g[160], d[160];
                    show(c->t, fetched[o], g, sizeof g);
                    show(c->t, contrib[o], d, sizeof d);
                    u += (size_t)snprintf(buf + u, sizeof buf - u,
                                          " [origin %d gave %s, fetched %s]", o, d, g);
                }
                rma_fail(__FILE__, __LINE__, "%s: case '%s': target %d element %d: the "
                         "fetched values fit no serial order; initial %s;%s", ctx, c->name,
                         me, i, e, buf);
            }
        }
    }
}

static void issue(const struct rma_win *w, int v, int t, MPI_Request *req, int *nreq) {
    for (int ci = 0; ci < ncase; ci++) {
        const struct acase *c = &cases[ci];
        if (!case_used(c, v)) continue;
        char *ob = obuf + (size_t)t * oreg + c->ooff;
        char *rb = rbuf + (size_t)t * rreg + c->roff;
        MPI_Aint disp = rma_disp(w, t, (MPI_Aint)slot_off(c, c->per_origin ? me : 0));
        MPI_Op op = op_handle(c->op);
        switch (v) {
        case V_ACC:
            CHECK(MPI_Accumulate(ob, c->cnt[0], c->dt[0], t, disp, c->cnt[1], c->dt[1], op,
                                 w->win));
            break;
        case V_GACC:
            CHECK(MPI_Get_accumulate(ob, c->cnt[0], c->dt[0], rb, c->cnt[2], c->dt[2], t,
                                     disp, c->cnt[1], c->dt[1], op, w->win));
            break;
        case V_RACC:
            CHECK(MPI_Raccumulate(ob, c->cnt[0], c->dt[0], t, disp, c->cnt[1], c->dt[1], op,
                                  w->win, &req[(*nreq)++]));
            break;
        case V_RGACC:
            CHECK(MPI_Rget_accumulate(ob, c->cnt[0], c->dt[0], rb, c->cnt[2], c->dt[2], t,
                                      disp, c->cnt[1], c->dt[1], op, w->win,
                                      &req[(*nreq)++]));
            break;
        }
    }
}

/* Completes the requests of one target, most recent first, then overwrites the origin
 * data given to that target (the calls have taken it). */
static void complete(MPI_Request *req, int *nreq, int t) {
    while (*nreq > 0) {
        MPI_Status st;
        CHECK(MPI_Wait(&req[--*nreq], &st));
        EXPECT(req[*nreq] == MPI_REQUEST_NULL, "%s: MPI_Wait left the request active", ctx);
    }
    memset(obuf + (size_t)t * oreg, 0xA5, oreg);
}

static MPI_Request *reqs;
static long nrounds, nops;

static void one_round(struct rma_win *w, int v, int mode) {
    int req_based = v == V_RACC || v == V_RGACC, nreq = 0;
    snprintf(ctx, sizeof ctx, "%s disp_unit %d, %s, %s (round %d)", rma_flavor_name(w->flavor),
             w->disp_unit, var_name[v], mode_name[mode], round_no);
    init_image(me, img);
    rma_local_begin(w, MPI_LOCK_EXCLUSIVE);
    memcpy(w->base, img, wbytes);
    rma_local_end(w);
    init_origin(me, obuf);
    rma_fill_bytes(rbuf, rbytes, (uint64_t)me, (uint64_t)round_no, 3);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    switch (mode) {
    case M_FENCE:
        CHECK(MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win));
        for (int k = 0; k < np; k++) issue(w, v, (me + k) % np, reqs, &nreq);
        CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
        break;
    case M_EXCL:
    case M_SHARED:
        for (int k = 0; k < np; k++) {
            int t = (me + k) % np;
            CHECK(MPI_Win_lock(mode == M_EXCL ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, t, 0,
                               w->win));
            issue(w, v, t, reqs, &nreq);
            if (req_based) complete(reqs, &nreq, t);
            CHECK(MPI_Win_unlock(t, w->win));
        }
        break;
    case M_LOCKALL:
        CHECK(MPI_Win_lock_all(0, w->win));
        for (int k = 0; k < np; k++) {
            int t = (me + k) % np;
            issue(w, v, t, reqs, &nreq);
            if (req_based) complete(reqs, &nreq, t);
            CHECK(MPI_Win_flush(t, w->win));
        }
        CHECK(MPI_Win_unlock_all(w->win));
        break;
    }
    for (int ci = 0; ci < ncase; ci++) nops += case_used(&cases[ci], v) * np;
    nrounds++;

    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    final_image(me, v, img);
    rma_local_begin(w, MPI_LOCK_SHARED);
    compare_window(img, w->base);
    rma_local_end(w);

    /* Origin buffers: unchanged, or overwritten after completion. */
    if (req_based) memset(oexp, 0xA5, obytes);
    else init_origin(me, oexp);
    if (memcmp(oexp, obuf, obytes)) {
        char what[512];
        snprintf(what, sizeof what, "%s: the origin buffer after the epoch", ctx);
        expect_bytes(what, oexp, obuf, obytes);
    }
    /* Result buffers: the fetched elements, nothing else. */
    rma_fill_bytes(rexp, rbytes, (uint64_t)me, (uint64_t)round_no, 3);
    for (int t = 0; t < np; t++) {
        char *f = rbuf + (size_t)t * rreg, *e = rexp + (size_t)t * rreg;
        if (fetching(v))
            for (size_t b = 0; b < rreg; b++)
                if (rmask[b]) e[b] = f[b];
        if (memcmp(e, f, rreg)) {
            char what[512];
            snprintf(what, sizeof what, "%s: result buffer for target %d, outside the "
                     "fetched elements", ctx, t);
            expect_bytes(what, e, f, rreg);
        }
    }
    if (fetching(v)) {
        CHECK(MPI_Alltoall(rbuf, (int)rreg, MPI_BYTE, gath, (int)rreg, MPI_BYTE,
                           MPI_COMM_WORLD));
        check_fetched(v);
    }
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    round_no++;
}

int main(int argc, char **argv) {
    rma_init(&argc, &argv);
    me = rma_rank;
    np = rma_size;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "strict")) strict = 1;
        else {
            if (me == 0) fprintf(stderr, "usage: rma_accops [strict]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (np > 16) {
        if (me == 0) fprintf(stderr, "rma_accops: at most 16 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    build_types();
    build_cases();
    plan();
    img = malloc(wbytes);
    obuf = malloc(obytes);
    oexp = malloc(obytes);
    rbuf = malloc(rbytes);
    rexp = malloc(rbytes);
    gath = malloc(rbytes);
    dead = malloc((size_t)1 << np);
    reqs = malloc(sizeof(MPI_Request) * (size_t)ncase);
    if (!img || !obuf || !oexp || !rbuf || !rexp || !gath || !dead || !reqs)
        rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);

    static const int flavors[3] = {RMA_ALLOCATE, RMA_CREATE, RMA_SHARED};
    static const int units[3] = {1, 16, 8};
    for (int f = 0; f < 3; f++) {
        struct rma_win w;
        rma_win_make(&w, flavors[f], (MPI_Aint)wbytes, units[f], MPI_COMM_WORLD);
        for (int v = 0; v < NV; v++)
            for (int m = 0; m < NM; m++) {
                /* Request-based calls only in passive target epochs (MPI 4.1 12.3.5). */
                if ((v == V_RACC || v == V_RGACC) && m == M_FENCE) continue;
                one_round(&w, v, m);
            }
        rma_win_free(&w);
    }

    for (int i = 0; i < nowned; i++) CHECK(MPI_Type_free(&owned[i]));
    free(img);
    free(obuf);
    free(oexp);
    free(rbuf);
    free(rexp);
    free(gath);
    free(dead);
    free(reqs);
    free(mask);
    free(owner);
    free(rmask);
    char summary[160];
    snprintf(summary, sizeof summary, "%d cases, %ld rounds, %ld accumulate calls per process%s",
             ncase, nrounds, nops, strict ? " (strict)" : "");
    return rma_finish("rma_accops", summary);
}
