/* One-sided atomics: MPI_Fetch_and_op, MPI_Compare_and_swap, the mutual exclusion of
 * MPI_Win_lock and the element-wise atomicity of concurrent accumulates (MPI 4.1 12.3.4,
 * 12.5.3, 12.7.1), on MPI_Win_allocate and MPI_Win_create windows (section d: all four
 * flavors).
 *
 * (a) Contention: every rank does N MPI_Fetch_and_op(MPI_SUM, 1) on one counter of rank 0
 *     (MPI_INT64_T in an allocated window, MPI_INT in a created one), each followed by
 *     MPI_Win_flush, in a lock_all epoch. Oracle: the fetched values of all ranks together
 *     (gathered on rank 0) are exactly 0..N*size-1, each once; each rank's own sequence is
 *     strictly increasing; the final counter is N*size.
 * (b) A spin mutex: a lock word on rank 0 taken with MPI_Compare_and_swap(0 -> rank+1)
 *     and released with MPI_Compare_and_swap(rank+1 -> 0), protecting a non-atomic
 *     read-modify-write (MPI_Get, flush, increment, MPI_Put, flush) of a counter on the
 *     last rank. Oracle: while held, MPI_Fetch_and_op(MPI_NO_OP) of the lock word returns
 *     the holder; each release finds its own mark; the final count is M*size.
 * (c) MPI_Fetch_and_op with each op that applies to the type (SUM, PROD, MAX, MIN, BAND,
 *     BOR, BXOR, LAND, LOR, LXOR, REPLACE, NO_OP; only the first four, REPLACE and NO_OP
 *     for double) on int, long long, uint64_t and double: each rank applies a sequence of
 *     operands to its own element at every target; the fetched values and the final
 *     memory are compared with a sequential oracle. Then all ranks apply MPI_REPLACE
 *     (rank+1) to one shared element per type: the fetched values and the final value
 *     are the initial value and 1..size, each once (one chain of replacements).
 *     MPI_Compare_and_swap on the allowed types of each class (C integer: int, long,
 *     uint64_t, int8_t, unsigned short, int16_t; logical: C _Bool; multi-language:
 *     MPI_AINT; byte: MPI_BYTE): a matching compare swaps and returns the old value, a
 *     non-matching one returns the current value and leaves it; and all ranks CAS the
 *     same element from its initial value: exactly one succeeds, the others see the
 *     winner's value, which is the final value.
 * (d) MPI_Win_lock exclusive vs shared on each target, every flavor: writers (exclusive)
 *     read a pair {a, b}, then Put a+1 to a, flush, Put a+1 to b; readers (shared) Get
 *     both and must find a == b. Oracle: a == b == the number of writer epochs at every
 *     target (writers excluded each other and readers).
 * (e) MPI_Accumulate(MPI_SUM) from all ranks at once to the same 1000 elements (MPI_LONG_LONG
 *     and MPI_DOUBLE with integral values) of every target, R times each, under shared
 *     locks: element-wise atomicity gives the exact totals.
 * (f) On every flavor, in one lock_all epoch, R rounds over every target: even ranks
 *     accumulate whole buffers (MPI_Accumulate and MPI_Get_accumulate of 256 long long
 *     and double SUM, int MAX, uint64_t BXOR, and long long SUM 4 bytes off alignment;
 *     in every other round through contiguous and vector derived datatypes), odd ranks update the same elements one at a time (MPI_Fetch_and_op, one-element
 *     MPI_Accumulate and MPI_Get_accumulate); and 2048 long long that even ranks
 *     accumulate whole and odd ranks Fetch_and_op in two quarters. Oracle: the exact
 *     totals, maxima and xors, and the values one rank fetches of an element only grow.
 * (g) Lock-free and locked updates of the same bytes taking turns, on the two flavors
 *     whose memory every rank maps (where an implementation may switch one-element
 *     updates between hardware atomics and a lock as it goes): in 10 R rounds over
 *     every target, even ranks MPI_Accumulate(MPI_SUM) 1 to each of HG long long and
 *     then MPI_Fetch_and_op(+1) element 0; odd ranks MPI_Fetch_and_op(+1) 64
 *     elements in turn. Oracle: the exact count at every element, and the values one
 *     rank fetches of an element only grow.
 *
 * Arguments (optional, positional): N for (a) (default 10000), M for (b) (default 200),
 * R for (d), (e) and (f) (default 20), F: 0 leaves out (f) (default 1). */
#define _GNU_SOURCE
#include <sched.h>

#include "rma_common.h"

static int me, np;
static long N = 10000, M = 200, R = 20, F = 1;

/* Expects no `what` in section `part` on `flavor`: `bad` counts them. */
static void expect_none(const char *part, int flavor, const char *what, long bad) {
    char m[160];
    snprintf(m, sizeof m, "%s %s: %s", part, rma_flavor_name(flavor), what);
    expect_eq(m, 0, bad);
}

/* ---- (a) contention on one counter ---- */

static void contention(int flavor) {
    struct rma_win w;
    int wide = flavor == RMA_ALLOCATE; /* int64_t counter, else int */
    int esz = wide ? 8 : 4;
    MPI_Datatype dt = wide ? MPI_INT64_T : MPI_INT;
    /* The counter sits at element 3 (disp_unit = element size). */
    rma_win_make(&w, flavor, 64, esz, MPI_COMM_WORLD);
    rma_local_begin(&w, MPI_LOCK_EXCLUSIVE);
    memset(w.base, 0x5A, 64);
    memset(w.base + 3 * esz, 0, (size_t)esz);
    rma_local_end(&w);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    int64_t *seen = malloc(sizeof(int64_t) * (size_t)(N ? N : 1));
    if (!seen) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
    CHECK(MPI_Win_lock_all(0, w.win));
    for (long i = 0; i < N; i++) {
        if (wide) {
            int64_t one = 1, got = -1;
            CHECK(MPI_Fetch_and_op(&one, &got, dt, 0, rma_disp(&w, 0, 3 * esz), MPI_SUM, w.win));
            CHECK(MPI_Win_flush(0, w.win));
            seen[i] = got;
        } else {
            int one = 1, got = -1;
            CHECK(MPI_Fetch_and_op(&one, &got, dt, 0, rma_disp(&w, 0, 3 * esz), MPI_SUM, w.win));
            CHECK(MPI_Win_flush(0, w.win));
            seen[i] = got;
        }
    }
    CHECK(MPI_Win_unlock_all(w.win));
    for (long i = 1; i < N; i++)
        EXPECT(seen[i] > seen[i - 1], "(a) %s: fetch %ld returned %lld after %lld: not increasing",
               rma_flavor_name(flavor), i, (long long)seen[i], (long long)seen[i - 1]);

    int64_t *all = NULL;
    long total = N * np;
    if (me == 0) {
        all = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
        if (!all) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
    }
    CHECK(MPI_Gather(seen, (int)N, MPI_INT64_T, all, (int)N, MPI_INT64_T, 0, MPI_COMM_WORLD));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        unsigned char *hit = calloc((size_t)(total ? total : 1), 1);
        long bad = 0;
        if (!hit) rma_die("calloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
        for (long i = 0; i < total; i++) {
            int64_t v = all[i];
            if (v < 0 || v >= total || hit[v]) {
                if (bad++ < 5)
                    rma_fail(__FILE__, __LINE__,
                             "(a) %s: rank %ld fetch %ld returned %lld (out of range or "
                             "seen twice)",
                             rma_flavor_name(flavor), i / (N ? N : 1), i % (N ? N : 1),
                             (long long)v);
                continue;
            }
            hit[v] = 1;
        }
        expect_eq("(a) fetched values that were bad", 0, bad);
        rma_local_begin(&w, MPI_LOCK_SHARED);
        long long fin;
        if (wide) {
            int64_t x;
            memcpy(&x, w.base + 3 * esz, 8);
            fin = x;
        } else {
            int x;
            memcpy(&x, w.base + 3 * esz, 4);
            fin = x;
        }
        unsigned char ref[64];
        memset(ref, 0x5A, 64);
        memcpy(ref + 3 * esz, w.base + 3 * esz, (size_t)esz);
        expect_bytes("(a) window bytes around the counter", ref, w.base, 64);
        rma_local_end(&w);
        expect_eq("(a) final counter", total, fin);
        free(hit);
        free(all);
    }
    free(seen);
    rma_win_free(&w);
}

/* ---- (b) a compare-and-swap spin mutex ---- */

static void mutex(int flavor) {
    struct rma_win w;
    int crank = np - 1; /* the counter's rank */
    rma_win_make(&w, flavor, 64, sizeof(int), MPI_COMM_WORLD);
    rma_local_begin(&w, MPI_LOCK_EXCLUSIVE);
    memset(w.base, 0, 64);
    rma_local_end(&w);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Aint dlock = rma_disp(&w, 0, 0), dcount = rma_disp(&w, crank, 8 * sizeof(int));
    int mine = me + 1, zero = 0;
    long spins = 0;
    CHECK(MPI_Win_lock_all(0, w.win));
    for (long i = 0; i < M; i++) {
        int got = -1;
        for (;;) {
            CHECK(MPI_Compare_and_swap(&mine, &zero, &got, MPI_INT, 0, dlock, w.win));
            CHECK(MPI_Win_flush(0, w.win));
            if (got == 0) break;
            EXPECT(got >= 1 && got <= np, "(b) lock word holds %d", got);
            spins++;
            sched_yield();
        }
        int holder = -1, dummy = 0;
        CHECK(MPI_Fetch_and_op(&dummy, &holder, MPI_INT, 0, dlock, MPI_NO_OP, w.win));
        CHECK(MPI_Win_flush(0, w.win));
        expect_eq("(b) lock holder while held", mine, holder);
        int v = -1;
        CHECK(MPI_Get(&v, 1, MPI_INT, crank, dcount, 1, MPI_INT, w.win));
        CHECK(MPI_Win_flush(crank, w.win));
        v++;
        CHECK(MPI_Put(&v, 1, MPI_INT, crank, dcount, 1, MPI_INT, w.win));
        CHECK(MPI_Win_flush(crank, w.win));
        got = -1;
        CHECK(MPI_Compare_and_swap(&zero, &mine, &got, MPI_INT, 0, dlock, w.win));
        CHECK(MPI_Win_flush(0, w.win));
        expect_eq("(b) lock word at release", mine, got);
    }
    CHECK(MPI_Win_unlock_all(w.win));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == crank) {
        int v;
        rma_local_begin(&w, MPI_LOCK_SHARED);
        memcpy(&v, w.base + 8 * sizeof(int), sizeof v);
        rma_local_end(&w);
        expect_eq("(b) final count under the mutex", M * np, v);
    }
    if (me == 0) {
        int v;
        rma_local_begin(&w, MPI_LOCK_SHARED);
        memcpy(&v, w.base, sizeof v);
        rma_local_end(&w);
        expect_eq("(b) final lock word", 0, v);
    }
    (void)spins;
    rma_win_free(&w);
}

/* ---- (c) Fetch_and_op with each op, Compare_and_swap with each type ---- */

enum { T_INT, T_LL, T_U64, T_DBL, NFT };
static const MPI_Datatype ft_type[NFT] = {MPI_INT, MPI_LONG_LONG, MPI_UINT64_T, MPI_DOUBLE};
static const char *ft_name[NFT] = {"int", "long long", "uint64_t", "double"};
static const int ft_size[NFT] = {sizeof(int), sizeof(long long), sizeof(uint64_t),
                                 sizeof(double)};

enum { O_SUM, O_PROD, O_MAX, O_MIN, O_BAND, O_BOR, O_BXOR, O_LAND, O_LOR, O_LXOR,
       O_REPLACE, O_NOOP, NFO };
static const char *fo_name[NFO] = {"MPI_SUM", "MPI_PROD", "MPI_MAX", "MPI_MIN",
                                   "MPI_BAND", "MPI_BOR", "MPI_BXOR", "MPI_LAND",
                                   "MPI_LOR", "MPI_LXOR", "MPI_REPLACE", "MPI_NO_OP"};
static MPI_Op fo_op(int o) {
    switch (o) {
    case O_SUM: return MPI_SUM;
    case O_PROD: return MPI_PROD;
    case O_MAX: return MPI_MAX;
    case O_MIN: return MPI_MIN;
    case O_BAND: return MPI_BAND;
    case O_BOR: return MPI_BOR;
    case O_BXOR: return MPI_BXOR;
    case O_LAND: return MPI_LAND;
    case O_LOR: return MPI_LOR;
    case O_LXOR: return MPI_LXOR;
    case O_REPLACE: return MPI_REPLACE;
    default: return MPI_NO_OP;
    }
}
static int fo_applies(int o, int t) {
    if (t != T_DBL) return 1;
    return o == O_SUM || o == O_PROD || o == O_MAX || o == O_MIN || o == O_REPLACE ||
           o == O_NOOP;
}

#define NSTEP 4
/* Values as long long (int and double: small integers, exact). */
static long long fo_init(int t, int o, int origin, int target) {
    long long base = 3 + (origin * 5 + target * 3 + o) % 7;
    if (o >= O_BAND && o <= O_BXOR) return (long long)(rma_mix((uint64_t)(origin * 131 + target * 17 + o + t)) & 0x7fffffff);
    if (o == O_LAND || o == O_LXOR) return (origin + target) % 2 ? 0 : 6;
    if (o == O_LOR) return 0;
    if ((o == O_MAX || o == O_MIN) && t != T_U64) return base - 6;
    return base;
}
static long long fo_operand(int t, int o, int origin, int target, int s) {
    switch (o) {
    case O_SUM: return (t == T_U64 ? 1 : -1) * (long long)(s + origin + 1) + target;
    case O_PROD: {
        static const int f[NSTEP] = {2, -1, 3, -2};
        return t == T_U64 ? (f[s] < 0 ? -f[s] : f[s]) : f[s];
    }
    case O_MAX:
    case O_MIN: {
        static const int f[NSTEP] = {-2, 7, 1, 9};
        long long v = f[s] + origin - target;
        return t == T_U64 && v < 0 ? -v : v;
    }
    case O_BAND:
    case O_BOR:
    case O_BXOR:
        return (long long)(rma_mix((uint64_t)(origin * 7 + target * 11 + s * 3 + o)) & 0x7fffffff);
    case O_LAND:
    case O_LOR:
    case O_LXOR: {
        static const int f[NSTEP] = {5, 0, 3, 0};
        return f[(s + origin) % NSTEP];
    }
    case O_REPLACE: return 100 + origin * 10 + s + target;
    default: return -77 - s; /* ignored by MPI_NO_OP */
    }
}

/* The oracle: a op b, in type t's arithmetic. */
static void fo_apply(int t, int o, void *a, const void *b) {
#define FO_INT_CASES(T)                                                                  \
    {                                                                                    \
        T x, y;                                                                          \
        memcpy(&x, a, sizeof x);                                                         \
        memcpy(&y, b, sizeof y);                                                         \
        switch (o) {                                                                     \
        case O_SUM: x = x + y; break;                                                    \
        case O_PROD: x = x * y; break;                                                   \
        case O_MAX: x = x > y ? x : y; break;                                            \
        case O_MIN: x = x < y ? x : y; break;                                            \
        case O_BAND: x = x & y; break;                                                   \
        case O_BOR: x = x | y; break;                                                    \
        case O_BXOR: x = x ^ y; break;                                                   \
        case O_LAND: x = x && y; break;                                                  \
        case O_LOR: x = x || y; break;                                                   \
        case O_LXOR: x = !x != !y; break;                                                \
        case O_REPLACE: x = y; break;                                                    \
        default: break;                                                                  \
        }                                                                                \
        memcpy(a, &x, sizeof x);                                                         \
    }
    switch (t) {
    case T_INT: FO_INT_CASES(int) break;
    case T_LL: FO_INT_CASES(long long) break;
    case T_U64: FO_INT_CASES(uint64_t) break;
    default: {
        double x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        switch (o) {
        case O_SUM: x = x + y; break;
        case O_PROD: x = x * y; break;
        case O_MAX: x = x > y ? x : y; break;
        case O_MIN: x = x < y ? x : y; break;
        case O_REPLACE: x = y; break;
        default: break;
        }
        memcpy(a, &x, sizeof x);
    }
    }
#undef FO_INT_CASES
}

static void fo_store(int t, void *p, long long v) {
    switch (t) {
    case T_INT: {
        int x = (int)v;
        memcpy(p, &x, sizeof x);
        break;
    }
    case T_LL: memcpy(p, &v, sizeof v); break;
    case T_U64: {
        uint64_t x = (uint64_t)v;
        memcpy(p, &x, sizeof x);
        break;
    }
    default: {
        double x = (double)v;
        memcpy(p, &x, sizeof x);
    }
    }
}
static void fo_show(int t, const void *p, char *out, size_t n) {
    switch (t) {
    case T_INT: {
        int x;
        memcpy(&x, p, sizeof x);
        snprintf(out, n, "%d", x);
        break;
    }
    case T_LL: {
        long long x;
        memcpy(&x, p, sizeof x);
        snprintf(out, n, "%lld", x);
        break;
    }
    case T_U64: {
        uint64_t x;
        memcpy(&x, p, sizeof x);
        snprintf(out, n, "%llu", (unsigned long long)x);
        break;
    }
    default: {
        double x;
        memcpy(&x, p, sizeof x);
        snprintf(out, n, "%g", x);
    }
    }
}
static void fo_expect(const char *what, int t, const void *exp, const void *got) {
    if (memcmp(exp, got, (size_t)ft_size[t])) {
        char a[64], b[64];
        fo_show(t, exp, a, sizeof a);
        fo_show(t, got, b, sizeof b);
        rma_fail(__FILE__, __LINE__, "%s: expected %s, found %s", what, a, b);
    }
}

/* CAS types: the allowed classes. */
enum { C_INT, C_LONG, C_U64, C_I8, C_USHORT, C_I16, C_BOOL, C_AINT, C_BYTE, NCT };
static const char *ct_name[NCT] = {"MPI_INT", "MPI_LONG", "MPI_UINT64_T", "MPI_INT8_T",
                                   "MPI_UNSIGNED_SHORT", "MPI_INT16_T", "MPI_C_BOOL",
                                   "MPI_AINT", "MPI_BYTE"};
static const int ct_size[NCT] = {sizeof(int), sizeof(long), 8, 1, sizeof(unsigned short), 2,
                                 sizeof(_Bool), sizeof(MPI_Aint), 1};
static MPI_Datatype ct_type(int k) {
    switch (k) {
    case C_INT: return MPI_INT;
    case C_LONG: return MPI_LONG;
    case C_U64: return MPI_UINT64_T;
    case C_I8: return MPI_INT8_T;
    case C_USHORT: return MPI_UNSIGNED_SHORT;
    case C_I16: return MPI_INT16_T;
    case C_BOOL: return MPI_C_BOOL;
    case C_AINT: return MPI_AINT;
    default: return MPI_BYTE;
    }
}
/* Little-endian truncation of v to the type's size (bool: 0 or 1). */
static void ct_store(int k, void *p, uint64_t v) {
    if (k == C_BOOL) {
        _Bool b = v & 1;
        memcpy(p, &b, 1);
        return;
    }
    unsigned char *q = p;
    for (int i = 0; i < ct_size[k]; i++) q[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t ct_load(int k, const void *p) {
    const unsigned char *q = p;
    uint64_t v = 0;
    for (int i = 0; i < ct_size[k]; i++) v |= (uint64_t)q[i] << (8 * i);
    return v;
}
static uint64_t ct_val(int k, int origin, int target, int which) {
    if (k == C_BOOL) return (uint64_t)((origin + target + which) & 1);
    uint64_t v = rma_mix((uint64_t)(origin * 1000 + target * 10 + which + k * 7)) | 1;
    if (ct_size[k] < 8) v &= ((uint64_t)1 << (8 * ct_size[k])) - 1;
    /* A, B and C distinct. */
    return (v & ~(uint64_t)3) | (uint64_t)which;
}

#define FSLOT 8 /* bytes per element */

static void fetch_ops(int flavor) {
    struct rma_win w;
    /* Layout per target: [origin][type][op] deterministic slots, then [type] shared
     * REPLACE slots, then [origin][ctype] CAS slots, then [ctype] shared CAS slots. */
    size_t det = (size_t)np * NFT * NFO * FSLOT, rep = NFT * FSLOT,
           cas = (size_t)np * NCT * FSLOT, cshared = NCT * FSLOT;
    size_t bytes = (det + rep + cas + cshared + 63) / 64 * 64;
    char *img = malloc(bytes), *fin = malloc(bytes);
    if (!img || !fin) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
#define DET(o, t, op) ((((size_t)(o) * NFT + (size_t)(t)) * NFO + (size_t)(op)) * FSLOT)
#define REP(t) (det + (size_t)(t) * FSLOT)
#define CAS(o, k) (det + rep + ((size_t)(o) * NCT + (size_t)(k)) * FSLOT)
#define CSH(k) (det + rep + cas + (size_t)(k) * FSLOT)
    rma_win_make(&w, flavor, (MPI_Aint)bytes, 1, MPI_COMM_WORLD);

    /* Initial images, and the oracle's final image, of target t. */
#define BUILD_IMAGE(t_, out_, final_)                                                    \
    do {                                                                                 \
        rma_fill_bytes((out_), bytes, (uint64_t)(t_), 5, 5);                             \
        for (int o_ = 0; o_ < np; o_++)                                                  \
            for (int ty = 0; ty < NFT; ty++)                                             \
                for (int op = 0; op < NFO; op++) {                                       \
                    if (!fo_applies(op, ty)) continue;                                   \
                    char *p_ = (out_) + DET(o_, ty, op);                                 \
                    fo_store(ty, p_, fo_init(ty, op, o_, (t_)));                         \
                    if (final_)                                                          \
                        for (int s_ = 0; s_ < NSTEP; s_++) {                             \
                            char b_[8];                                                  \
                            fo_store(ty, b_, fo_operand(ty, op, o_, (t_), s_));          \
                            fo_apply(ty, op, p_, b_);                                    \
                        }                                                                \
                }                                                                        \
        for (int ty = 0; ty < NFT; ty++) fo_store(ty, (out_) + REP(ty), 0);              \
        for (int o_ = 0; o_ < np; o_++)                                                  \
            for (int k_ = 0; k_ < NCT; k_++)                                             \
                ct_store(k_, (out_) + CAS(o_, k_), ct_val(k_, o_, (t_), 0));             \
        for (int k_ = 0; k_ < NCT; k_++) ct_store(k_, (out_) + CSH(k_), 0);              \
    } while (0)

    BUILD_IMAGE(me, img, 0);
    rma_local_begin(&w, MPI_LOCK_EXCLUSIVE);
    memcpy(w.base, img, bytes);
    rma_local_end(&w);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    char what[256];
    /* Deterministic sequences: this rank's own elements at every target. */
    CHECK(MPI_Win_lock_all(0, w.win));
    for (int dt = 0; dt < np; dt++) {
        int t = (me + dt) % np;
        for (int ty = 0; ty < NFT; ty++)
            for (int op = 0; op < NFO; op++) {
                if (!fo_applies(op, ty)) continue;
                char cur[8], b[8], got[8];
                fo_store(ty, cur, fo_init(ty, op, me, t));
                for (int s = 0; s < NSTEP; s++) {
                    fo_store(ty, b, fo_operand(ty, op, me, t, s));
                    memset(got, 0xEE, sizeof got);
                    CHECK(MPI_Fetch_and_op(b, got, ft_type[ty], t, rma_disp(&w, t, (MPI_Aint)DET(me, ty, op)),
                                           fo_op(op), w.win));
                    /* The fetched value is there after MPI_Win_flush or after
                     * MPI_Win_flush_local (local completion); the next op to the
                     * same element is ordered after this one (MPI 4.1 12.7.2). */
                    if (s % 2) CHECK(MPI_Win_flush(t, w.win));
                    else CHECK(MPI_Win_flush_local(t, w.win));
                    snprintf(what, sizeof what, "(c) %s: MPI_Fetch_and_op(%s) on %s at target %d, step %d: fetched",
                             rma_flavor_name(flavor), fo_name[op], ft_name[ty], t, s);
                    fo_expect(what, ty, cur, got);
                    fo_apply(ty, op, cur, b);
                }
            }
        for (int k = 0; k < NCT; k++) {
            char A[8], B[8], C[8], got[8];
            MPI_Aint d = rma_disp(&w, t, (MPI_Aint)CAS(me, k));
            ct_store(k, A, ct_val(k, me, t, 0));
            ct_store(k, B, ct_val(k, me, t, 1));
            ct_store(k, C, ct_val(k, me, t, 2));
            if (k == C_BOOL) ct_store(k, B, !ct_load(k, A));
            /* A -> B: swaps, returns A. */
            CHECK(MPI_Compare_and_swap(B, A, got, ct_type(k), t, d, w.win));
            CHECK(MPI_Win_flush(t, w.win));
            snprintf(what, sizeof what, "(c) %s: MPI_Compare_and_swap(%s) at %d, matching",
                     rma_flavor_name(flavor), ct_name[k], t);
            expect_eq(what, (long long)ct_load(k, A), (long long)ct_load(k, got));
            /* compare A again: no swap (memory holds B), returns B. */
            CHECK(MPI_Compare_and_swap(C, A, got, ct_type(k), t, d, w.win));
            CHECK(MPI_Win_flush(t, w.win));
            snprintf(what, sizeof what, "(c) %s: MPI_Compare_and_swap(%s) at %d, not matching",
                     rma_flavor_name(flavor), ct_name[k], t);
            expect_eq(what, (long long)ct_load(k, B), (long long)ct_load(k, got));
            /* B -> A: swaps back. */
            CHECK(MPI_Compare_and_swap(A, B, got, ct_type(k), t, d, w.win));
            CHECK(MPI_Win_flush(t, w.win));
            snprintf(what, sizeof what, "(c) %s: MPI_Compare_and_swap(%s) at %d, swapping back",
                     rma_flavor_name(flavor), ct_name[k], t);
            expect_eq(what, (long long)ct_load(k, B), (long long)ct_load(k, got));
        }
    }
    CHECK(MPI_Win_unlock_all(w.win));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    /* Contended: REPLACE chains and a CAS race on shared elements of every target. */
    size_t per = NFT * 8 + NCT * 8; /* results per target */
    char *res = malloc(per * (size_t)np), *gat = malloc(per * (size_t)np);
    if (!res || !gat) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
    memset(res, 0, per * (size_t)np);
    CHECK(MPI_Win_lock_all(0, w.win));
    for (int dt = 0; dt < np; dt++) {
        int t = (me + dt) % np;
        char *r = res + per * (size_t)t;
        for (int ty = 0; ty < NFT; ty++) {
            char b[8];
            fo_store(ty, b, me + 1);
            CHECK(MPI_Fetch_and_op(b, r + 8 * ty, ft_type[ty], t, rma_disp(&w, t, (MPI_Aint)REP(ty)),
                                   MPI_REPLACE, w.win));
        }
        for (int k = 0; k < NCT; k++) {
            char zero[8], mine[8];
            ct_store(k, zero, 0);
            ct_store(k, mine, k == C_BOOL ? 1 : (uint64_t)me + 1);
            CHECK(MPI_Compare_and_swap(mine, zero, r + NFT * 8 + 8 * k, ct_type(k), t,
                                       rma_disp(&w, t, (MPI_Aint)CSH(k)), w.win));
        }
        CHECK(MPI_Win_flush(t, w.win));
    }
    CHECK(MPI_Win_unlock_all(w.win));
    CHECK(MPI_Alltoall(res, (int)per, MPI_BYTE, gat, (int)per, MPI_BYTE, MPI_COMM_WORLD));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    /* Check own memory. */
    BUILD_IMAGE(me, fin, 1);
    rma_local_begin(&w, MPI_LOCK_SHARED);
    memcpy(img, w.base, bytes);
    rma_local_end(&w);
    for (int o = 0; o < np; o++)
        for (int ty = 0; ty < NFT; ty++)
            for (int op = 0; op < NFO; op++) {
                if (!fo_applies(op, ty)) continue;
                snprintf(what, sizeof what, "(c) %s: final %s %s element of origin %d",
                         rma_flavor_name(flavor), fo_name[op], ft_name[ty], o);
                fo_expect(what, ty, fin + DET(o, ty, op), img + DET(o, ty, op));
            }
    snprintf(what, sizeof what, "(c) %s: the deterministic part of the window", rma_flavor_name(flavor));
    expect_bytes(what, fin, img, det);
    snprintf(what, sizeof what, "(c) %s: the CAS elements", rma_flavor_name(flavor));
    expect_bytes(what, fin + det + rep, img + det + rep, cas);
    /* REPLACE chains: {fetched} + {final} = {0, 1..np}. */
    for (int ty = 0; ty < NFT; ty++) {
        int count[64] = {0};
        long long v;
        for (int o = 0; o <= np; o++) {
            const char *p = o < np ? gat + per * (size_t)o + 8 * ty : img + REP(ty);
            if (ty == T_INT) {
                int x;
                memcpy(&x, p, 4);
                v = x;
            } else if (ty == T_DBL) {
                double x;
                memcpy(&x, p, 8);
                v = (long long)x;
                if ((double)v != x) v = -1;
            } else {
                memcpy(&v, p, 8);
            }
            if (v >= 0 && v <= np && v < 64) count[v]++;
            else rma_fail(__FILE__, __LINE__, "(c) %s: REPLACE chain on %s: value %lld (from %s %d)",
                          rma_flavor_name(flavor), ft_name[ty], v, o < np ? "origin" : "final", o);
        }
        for (int x = 0; x <= np && x < 64; x++) {
            snprintf(what, sizeof what, "(c) %s: REPLACE chain on %s: times value %d seen",
                     rma_flavor_name(flavor), ft_name[ty], x);
            expect_eq(what, 1, count[x]);
        }
    }
    /* CAS race: exactly one rank saw 0, the others the winner's value, the final. */
    for (int k = 0; k < NCT; k++) {
        int winners = 0;
        uint64_t fv = ct_load(k, img + CSH(k));
        for (int o = 0; o < np; o++) {
            uint64_t g = ct_load(k, gat + per * (size_t)o + NFT * 8 + 8 * k);
            if (g == 0) winners++;
            else {
                snprintf(what, sizeof what, "(c) %s: CAS race on %s: origin %d saw",
                         rma_flavor_name(flavor), ct_name[k], o);
                expect_eq(what, (long long)fv, (long long)g);
            }
        }
        snprintf(what, sizeof what, "(c) %s: CAS race on %s: winners", rma_flavor_name(flavor), ct_name[k]);
        expect_eq(what, 1, winners);
        EXPECT(fv >= 1 && fv <= (uint64_t)(k == C_BOOL ? 1 : np),
               "(c) %s: CAS race on %s: final value %llu", rma_flavor_name(flavor), ct_name[k],
               (unsigned long long)fv);
    }
    free(res);
    free(gat);
    free(img);
    free(fin);
    rma_win_free(&w);
#undef DET
#undef REP
#undef CAS
#undef CSH
#undef BUILD_IMAGE
}

/* ---- (d) exclusive vs shared locks ---- */

static int is_writer(int rank, long i) { return (i + rank) % 3 == 0; }

static void locks(int flavor) {
    struct rma_win w;
    rma_win_make(&w, flavor, 64, sizeof(int), MPI_COMM_WORLD);
    rma_local_begin(&w, MPI_LOCK_EXCLUSIVE);
    memset(w.base, 0, 64);
    rma_local_end(&w);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    long torn = 0;
    for (long i = 0; i < R; i++)
        for (int dt = 0; dt < np; dt++) {
            int t = (me + dt) % np;
            MPI_Aint da = rma_disp(&w, t, 4 * sizeof(int)), db = rma_disp(&w, t, 9 * sizeof(int));
            int a = -1, b = -1;
            if (is_writer(me, i)) {
                CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w.win));
                CHECK(MPI_Get(&a, 1, MPI_INT, t, da, 1, MPI_INT, w.win));
                CHECK(MPI_Get(&b, 1, MPI_INT, t, db, 1, MPI_INT, w.win));
                CHECK(MPI_Win_flush(t, w.win));
                if (a != b) torn++;
                a++;
                CHECK(MPI_Put(&a, 1, MPI_INT, t, da, 1, MPI_INT, w.win));
                CHECK(MPI_Win_flush(t, w.win));
                if ((i / 3) % 2) sched_yield(); /* a reader or writer may try meanwhile */
                CHECK(MPI_Put(&a, 1, MPI_INT, t, db, 1, MPI_INT, w.win));
                CHECK(MPI_Win_unlock(t, w.win));
            } else {
                CHECK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w.win));
                CHECK(MPI_Get(&a, 1, MPI_INT, t, da, 1, MPI_INT, w.win));
                CHECK(MPI_Win_flush(t, w.win));
                CHECK(MPI_Get(&b, 1, MPI_INT, t, db, 1, MPI_INT, w.win));
                CHECK(MPI_Win_unlock(t, w.win));
                if (a != b) torn++;
            }
        }
    {
        char what[128];
        snprintf(what, sizeof what, "(d) %s: epochs that saw a != b", rma_flavor_name(flavor));
        expect_eq(what, 0, torn);
    }
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    long writers = 0;
    for (int r = 0; r < np; r++)
        for (long i = 0; i < R; i++) writers += is_writer(r, i);
    int a, b;
    rma_local_begin(&w, MPI_LOCK_SHARED);
    memcpy(&a, w.base + 4 * sizeof(int), sizeof a);
    memcpy(&b, w.base + 9 * sizeof(int), sizeof b);
    rma_local_end(&w);
    char what[128];
    snprintf(what, sizeof what, "(d) %s: final a (writer epochs)", rma_flavor_name(flavor));
    expect_eq(what, writers, a);
    snprintf(what, sizeof what, "(d) %s: final b (writer epochs)", rma_flavor_name(flavor));
    expect_eq(what, writers, b);
    rma_win_free(&w);
}

/* ---- (e) concurrent accumulates to the same elements ---- */

#define NEL 1000

static void acc_concurrent(int flavor) {
    struct rma_win w;
    size_t bytes = NEL * (sizeof(long long) + sizeof(double));
    rma_win_make(&w, flavor, (MPI_Aint)bytes, 1, MPI_COMM_WORLD);
    rma_local_begin(&w, MPI_LOCK_EXCLUSIVE);
    for (int i = 0; i < NEL; i++) {
        long long x = (long long)me * i;
        double y = -(double)i;
        memcpy(w.base + sizeof x * (size_t)i, &x, sizeof x);
        memcpy(w.base + NEL * sizeof x + sizeof y * (size_t)i, &y, sizeof y);
    }
    rma_local_end(&w);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    long long *lv = malloc(NEL * sizeof *lv);
    double *dv = malloc(NEL * sizeof *dv);
    if (!lv || !dv) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
    for (int i = 0; i < NEL; i++) {
        lv[i] = (long long)(me + 1) * (i % 17 + 1) - 5;
        dv[i] = (double)((me + 2) * (i % 13)) + 0.5;
    }
    for (long k = 0; k < R; k++)
        for (int dt = 0; dt < np; dt++) {
            int t = (me + dt) % np;
            CHECK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w.win));
            CHECK(MPI_Accumulate(lv, NEL, MPI_LONG_LONG, t, rma_disp(&w, t, 0), NEL,
                                 MPI_LONG_LONG, MPI_SUM, w.win));
            CHECK(MPI_Accumulate(dv, NEL, MPI_DOUBLE, t,
                                 rma_disp(&w, t, NEL * sizeof(long long)), NEL, MPI_DOUBLE,
                                 MPI_SUM, w.win));
            CHECK(MPI_Win_unlock(t, w.win));
        }
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    long bad = 0;
    rma_local_begin(&w, MPI_LOCK_SHARED);
    for (int i = 0; i < NEL; i++) {
        long long x, ex = (long long)me * i;
        double y, ey = -(double)i;
        for (int r = 0; r < np; r++) {
            ex += R * ((long long)(r + 1) * (i % 17 + 1) - 5);
            ey += (double)R * ((double)((r + 2) * (i % 13)) + 0.5);
        }
        memcpy(&x, w.base + sizeof x * (size_t)i, sizeof x);
        memcpy(&y, w.base + NEL * sizeof x + sizeof y * (size_t)i, sizeof y);
        if (x != ex || y != ey) {
            if (bad++ < 5)
                rma_fail(__FILE__, __LINE__,
                         "(e) %s: element %d: long long %lld (expected %lld), double %.1f "
                         "(expected %.1f)",
                         rma_flavor_name(flavor), i, x, ex, y, ey);
        }
    }
    rma_local_end(&w);
    char what[128];
    snprintf(what, sizeof what, "(e) %s: elements with a wrong total", rma_flavor_name(flavor));
    expect_eq(what, 0, bad);
    free(lv);
    free(dv);
    rma_win_free(&w);
}

/* ---- (f) one-element operations and whole-buffer accumulates on the same elements ---- */

#define NMIX 256
/* Byte offsets of the regions of (f): long long SUM, double SUM, int MAX, uint64_t BXOR,
 * and long long SUM 4 bytes off an 8-byte boundary. */
#define NG 2048
/* ... and NG long long SUM that the odd ranks update in two quarters only. */
enum { MX_LL = 0, MX_D = 8 * NMIX, MX_I = 16 * NMIX, MX_U = 20 * NMIX, MX_M = 28 * NMIX + 4,
       MX_G = 36 * NMIX + 8, MX_BYTES = MX_G + 8 * NG };
static int mx_g_single(int i) { return (i >= NG / 4 && i < NG / 2) || i >= 3 * NG / 4; }

static long long mx_ll(int r, int i, int single) { return (long long)(r + 1) * (i % (single ? 5 : 7) + 1); }
static double mx_d(int r, int i) { return (double)((r + 2) * (i % 11)) + 0.25; }
static int mx_i(int r, long k, int i) { return r * 1000 + (int)k * 10 + i % 9; }
static uint64_t mx_u(int r, long k, int i) {
    return ((uint64_t)r << 32) ^ ((uint64_t)k * 2654435761u) ^ (uint64_t)i;
}

static void mixed(int flavor) {
    struct rma_win w;
    rma_win_make(&w, flavor, MX_BYTES, 1, MPI_COMM_WORLD);
    rma_local_begin(&w, MPI_LOCK_EXCLUSIVE);
    for (int i = 0; i < NMIX; i++) {
        long long x = (long long)me * i;
        double y = -(double)i;
        int z = -1;
        uint64_t u = 0x5555aaaa0000ffffULL ^ (uint64_t)i;
        memcpy(w.base + MX_LL + 8 * i, &x, 8);
        memcpy(w.base + MX_D + 8 * i, &y, 8);
        memcpy(w.base + MX_I + 4 * i, &z, 4);
        memcpy(w.base + MX_U + 8 * i, &u, 8);
        memcpy(w.base + MX_M + 8 * i, &x, 8);
    }
    for (int i = 0; i < NG; i++) {
        long long x = (long long)me * i;
        memcpy(w.base + MX_G + 8 * i, &x, 8);
    }
    rma_local_end(&w);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    long long *lv = malloc(NMIX * sizeof *lv), *lr = malloc(NMIX * sizeof *lr), *gv = malloc(NG * sizeof *gv);
    long long *last = calloc((size_t)np * NMIX, sizeof *last);
    double *dv = malloc(NMIX * sizeof *dv);
    int *iv = malloc(NMIX * sizeof *iv);
    uint64_t *uv = malloc(NMIX * sizeof *uv);
    if (!lv || !lr || !gv || !last || !dv || !iv || !uv) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
    MPI_Datatype mx_ll_all, mx_ll_one, mx_d_half, mx_i_all, mx_u_all;
    CHECK(MPI_Type_contiguous(NMIX, MPI_LONG_LONG, &mx_ll_all));
    CHECK(MPI_Type_contiguous(1, MPI_LONG_LONG, &mx_ll_one));
    CHECK(MPI_Type_vector(NMIX / 2, 1, 2, MPI_DOUBLE, &mx_d_half));
    CHECK(MPI_Type_contiguous(NMIX, MPI_INT, &mx_i_all));
    CHECK(MPI_Type_contiguous(NMIX, MPI_UINT64_T, &mx_u_all));
    MPI_Datatype *mx_types[] = {&mx_ll_all, &mx_ll_one, &mx_d_half, &mx_i_all, &mx_u_all};
    for (int j = 0; j < 5; j++) CHECK(MPI_Type_commit(mx_types[j]));
    long bad = 0;
    CHECK(MPI_Win_lock_all(0, w.win));
    for (long k = 0; k < R; k++)
        for (int dt = 0; dt < np; dt++) {
            int t = (me + dt) % np;
            MPI_Aint d0 = rma_disp(&w, t, 0);
            if (me % 2 == 0) {
                for (int i = 0; i < NMIX; i++) {
                    lv[i] = mx_ll(me, i, 0);
                    dv[i] = mx_d(me, i);
                    iv[i] = mx_i(me, k, i);
                    uv[i] = mx_u(me, k, i);
                }
                for (int i = 0; i < NG; i++) gv[i] = mx_ll(me, i, 0);
                CHECK(MPI_Accumulate(gv, NG, MPI_LONG_LONG, t, d0 + MX_G, NG, MPI_LONG_LONG, MPI_SUM, w.win));
                if (k % 2 == 0) {
                    CHECK(MPI_Accumulate(lv, NMIX, MPI_LONG_LONG, t, d0 + MX_LL, NMIX, MPI_LONG_LONG, MPI_SUM, w.win));
                    CHECK(MPI_Get_accumulate(dv, NMIX, MPI_DOUBLE, lr, NMIX, MPI_DOUBLE, t, d0 + MX_D, NMIX,
                                             MPI_DOUBLE, MPI_SUM, w.win));
                    CHECK(MPI_Accumulate(iv, NMIX, MPI_INT, t, d0 + MX_I, NMIX, MPI_INT, MPI_MAX, w.win));
                    CHECK(MPI_Accumulate(uv, NMIX, MPI_UINT64_T, t, d0 + MX_U, NMIX, MPI_UINT64_T, MPI_BXOR,
                                         w.win));
                    CHECK(MPI_Accumulate(lv, NMIX, MPI_LONG_LONG, t, d0 + MX_M, NMIX, MPI_LONG_LONG, MPI_SUM, w.win));
                } else {
                    /* derived datatypes: contiguous ones, and vectors of every other
                     * element (the even ones, then the odd ones) */
                    CHECK(MPI_Accumulate(lv, 1, mx_ll_all, t, d0 + MX_LL, 1, mx_ll_all, MPI_SUM, w.win));
                    for (int h = 0; h < 2; h++)
                        CHECK(MPI_Get_accumulate(dv + h, 1, mx_d_half, lr + h, 1, mx_d_half, t,
                                                 d0 + MX_D + 8 * h, 1, mx_d_half, MPI_SUM, w.win));
                    CHECK(MPI_Accumulate(iv, 1, mx_i_all, t, d0 + MX_I, 1, mx_i_all, MPI_MAX, w.win));
                    CHECK(MPI_Accumulate(uv, NMIX, MPI_UINT64_T, t, d0 + MX_U, 1, mx_u_all, MPI_BXOR, w.win));
                    CHECK(MPI_Accumulate(lv, 1, mx_ll_all, t, d0 + MX_M, NMIX, MPI_LONG_LONG, MPI_SUM, w.win));
                }
                CHECK(MPI_Win_flush_local(t, w.win));
            } else {
                for (int i = 0; i < NMIX; i++) {
                    long long a = mx_ll(me, i, 1), old = 0;
                    double b = mx_d(me, i), dold;
                    int c = mx_i(me, k, i), cold;
                    uint64_t e = mx_u(me, k, i), eold;
                    MPI_Aint at = d0 + MX_LL + 8 * i;
                    switch (i % 3) {
                    case 0: CHECK(MPI_Fetch_and_op(&a, &old, MPI_LONG_LONG, t, at, MPI_SUM, w.win)); break;
                    case 1:
                        CHECK(MPI_Accumulate(&a, 1, k % 2 ? mx_ll_one : MPI_LONG_LONG, t, at, 1,
                                             k % 2 ? mx_ll_one : MPI_LONG_LONG, MPI_SUM, w.win));
                        break;
                    default:
                        CHECK(MPI_Get_accumulate(&a, 1, MPI_LONG_LONG, &old, 1, MPI_LONG_LONG, t, at, 1,
                                                 MPI_LONG_LONG, MPI_SUM, w.win));
                    }
                    long long mold;
                    CHECK(MPI_Fetch_and_op(&b, &dold, MPI_DOUBLE, t, d0 + MX_D + 8 * i, MPI_SUM, w.win));
                    CHECK(MPI_Fetch_and_op(&c, &cold, MPI_INT, t, d0 + MX_I + 4 * i, MPI_MAX, w.win));
                    CHECK(MPI_Fetch_and_op(&e, &eold, MPI_UINT64_T, t, d0 + MX_U + 8 * i, MPI_BXOR, w.win));
                    CHECK(MPI_Fetch_and_op(&a, &mold, MPI_LONG_LONG, t, d0 + MX_M + 8 * i, MPI_SUM, w.win));
                    /* (the origin and result buffers are the caller's again) */
                    CHECK(MPI_Win_flush_local(t, w.win));
                    /* every contribution is positive: what one rank fetches of an element
                     * only grows */
                    if (i % 3 != 1) {
                        if (k > 0 && old <= last[t * NMIX + i] && bad++ < 5)
                            rma_fail(__FILE__, __LINE__, "(f) %s: rank %d element %d fetched %lld after %lld",
                                     rma_flavor_name(flavor), t, i, old, last[t * NMIX + i]);
                        last[t * NMIX + i] = old;
                    }
                }
                for (int i = 0; i < NG; i++) {
                    long long a = mx_ll(me, i, 1), old;
                    if (!mx_g_single(i)) continue;
                    CHECK(MPI_Fetch_and_op(&a, &old, MPI_LONG_LONG, t, d0 + MX_G + 8 * i, MPI_SUM, w.win));
                    CHECK(MPI_Win_flush_local(t, w.win));
                }
            }
        }
    CHECK(MPI_Win_unlock_all(w.win));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    rma_local_begin(&w, MPI_LOCK_SHARED);
    for (int i = 0; i < NMIX; i++) {
        long long ex = (long long)me * i, x, m;
        double ey = -(double)i, y;
        int ez = -1, z;
        uint64_t eu = 0x5555aaaa0000ffffULL ^ (uint64_t)i, u;
        for (int r = 0; r < np; r++)
            for (long k = 0; k < R; k++) {
                ex += mx_ll(r, i, r % 2);
                ey += mx_d(r, i);
                if (mx_i(r, k, i) > ez) ez = mx_i(r, k, i);
                eu ^= mx_u(r, k, i);
            }
        memcpy(&x, w.base + MX_LL + 8 * i, 8);
        memcpy(&y, w.base + MX_D + 8 * i, 8);
        memcpy(&z, w.base + MX_I + 4 * i, 4);
        memcpy(&u, w.base + MX_U + 8 * i, 8);
        memcpy(&m, w.base + MX_M + 8 * i, 8);
        if ((x != ex || y != ey || z != ez || u != eu || m != ex) && bad++ < 5)
            rma_fail(__FILE__, __LINE__,
                     "(f) %s: element %d: long long %lld (expected %lld), double %.2f (%.2f), int %d "
                     "(%d), uint64_t %#llx (%#llx), unaligned long long %lld",
                     rma_flavor_name(flavor), i, x, ex, y, ey, z, ez, (unsigned long long)u,
                     (unsigned long long)eu, m);
    }
    for (int i = 0; i < NG; i++) {
        long long ex = (long long)me * i, x;
        for (int r = 0; r < np; r++)
            if (r % 2 == 0 || mx_g_single(i)) ex += R * mx_ll(r, i, r % 2);
        memcpy(&x, w.base + MX_G + 8 * i, 8);
        if (x != ex && bad++ < 5)
            rma_fail(__FILE__, __LINE__, "(f) %s: element %d of the partly shared region: %lld (expected %lld)",
                     rma_flavor_name(flavor), i, x, ex);
    }
    rma_local_end(&w);
    expect_none("(f)", flavor, "elements with a wrong value", bad);
    free(lv);
    free(lr);
    free(gv);
    free(last);
    free(dv);
    free(iv);
    free(uv);
    for (int j = 0; j < 5; j++) CHECK(MPI_Type_free(mx_types[j]));
    rma_win_free(&w);
}

/* ---- (g) hardware and locked updates taking turns ---- */

#define HG 4096
#define HG_SINGLES 64

/* The element of the j-th one-element update of round k by an odd rank. */
static int hg_at(long k, int j) { return (int)((k * HG_SINGLES * 7 + j * 67) % HG); }

static void switching(int flavor) {
    struct rma_win w;
    rma_win_make(&w, flavor, HG * 8, 8, MPI_COMM_WORLD);
    rma_local_begin(&w, MPI_LOCK_EXCLUSIVE);
    memset(w.base, 0, HG * 8);
    rma_local_end(&w);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    long long *ones = malloc(HG * sizeof *ones), *exp = calloc(HG, sizeof *exp);
    long long *last = calloc((size_t)np, sizeof *last);
    if (!ones || !exp || !last) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
    for (int i = 0; i < HG; i++) ones[i] = 1;
    long rounds = 10 * R, bad = 0;
    CHECK(MPI_Win_lock_all(0, w.win));
    for (long k = 0; k < rounds; k++)
        for (int dt = 0; dt < np; dt++) {
            int t = (me + dt) % np;
            long long one = 1, old;
            if (me % 2 == 0) {
                CHECK(MPI_Accumulate(ones, HG, MPI_LONG_LONG, t, 0, HG, MPI_LONG_LONG, MPI_SUM, w.win));
                CHECK(MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, t, 0, MPI_SUM, w.win));
                CHECK(MPI_Win_flush(t, w.win));
                if (old <= last[t] && bad++ < 5)
                    rma_fail(__FILE__, __LINE__, "(g) %s: rank %d element 0 fetched %lld after %lld",
                             rma_flavor_name(flavor), t, old, last[t]);
                last[t] = old;
            } else {
                for (int j = 0; j < HG_SINGLES; j++)
                    CHECK(MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, t, hg_at(k, j), MPI_SUM, w.win));
                CHECK(MPI_Win_flush(t, w.win));
            }
        }
    CHECK(MPI_Win_unlock_all(w.win));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (int r = 0; r < np; r++)
        for (long k = 0; k < rounds; k++) {
            if (r % 2 == 0) {
                for (int i = 0; i < HG; i++) exp[i]++;
                exp[0]++;
            } else {
                for (int j = 0; j < HG_SINGLES; j++) exp[hg_at(k, j)]++;
            }
        }
    rma_local_begin(&w, MPI_LOCK_SHARED);
    for (int i = 0; i < HG; i++) {
        long long x;
        memcpy(&x, w.base + 8 * i, 8);
        if (x != exp[i] && bad++ < 5)
            rma_fail(__FILE__, __LINE__, "(g) %s: element %d is %lld (expected %lld)", rma_flavor_name(flavor),
                     i, x, exp[i]);
    }
    rma_local_end(&w);
    expect_none("(g)", flavor, "wrong elements and fetches", bad);
    free(ones);
    free(exp);
    free(last);
    rma_win_free(&w);
}

int main(int argc, char **argv) {
    rma_init(&argc, &argv);
    me = rma_rank;
    np = rma_size;
    if (argc > 1) N = atol(argv[1]);
    if (argc > 2) M = atol(argv[2]);
    if (argc > 3) R = atol(argv[3]);
    if (argc > 4) F = atol(argv[4]);
    if (N < 0 || M < 0 || R < 0) {
        if (me == 0) fprintf(stderr, "usage: rma_atomic [N [M [R [F]]]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    static const int two[2] = {RMA_ALLOCATE, RMA_CREATE};
    for (int f = 0; f < 2; f++) contention(two[f]);
    for (int f = 0; f < 2; f++) mutex(two[f]);
    for (int f = 0; f < 2; f++) fetch_ops(two[f]);
    for (int f = 0; f < RMA_NFLAVORS; f++) locks(f);
    for (int f = 0; f < 2; f++) acc_concurrent(two[f]);
    for (int f = 0; F && f < RMA_NFLAVORS; f++) mixed(f);
    switching(RMA_ALLOCATE);
    switching(RMA_SHARED);
    char summary[160];
    snprintf(summary, sizeof summary,
             "%ld fetch-and-adds per rank, %ld mutex sections per rank, %ld lock/accumulate "
             "rounds",
             N, M, R);
    return rma_finish("rma_atomic", summary);
}
