/* Helpers shared by the one-sided communication tests (rma_sync, rma_accops, rma_req):
 * - CHECK(call): an MPI call that must succeed; otherwise the function, the rank and the
 *   error string are printed and the job aborts (MPI_COMM_WORLD and every window made
 *   here use MPI_ERRORS_RETURN so that the message comes from here);
 * - EXPECT(cond, fmt, ...) / expect_eq / expect_bytes: a failed expectation is printed
 *   (the first RMA_MAX_REPORTS of each rank) and counted; rma_finish() sums the counts
 *   over MPI_COMM_WORLD, aborts with a non-zero code if any, else rank 0 prints one line;
 * - rma_win_*: a window of each creation flavor over `size` bytes of this process, with
 *   the displacement that addresses byte `off` of a target's memory (dynamic windows
 *   attach malloc'd memory and exchange its address with MPI_Allgather);
 * - rma_fill_bytes: a deterministic pseudo-random byte pattern (sentinels, whose bytes
 *   the oracle knows).
 * Every function is static inline so that a test need not use all of them. */
#ifndef RMA_COMMON_H
#define RMA_COMMON_H

#include <mpi.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RMA_MAX_REPORTS 20

static int rma_rank, rma_size;
static long rma_failures;

static inline void rma_die(const char *call, int rc, const char *file, int line) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0, cls = -1;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "(no error string)");
    MPI_Error_class(rc, &cls);
    fprintf(stderr, "rank %d: %s:%d: %s failed: code %d class %d: %s\n", rma_rank, file,
            line, call, rc, cls, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

#define CHECK(call)                                                                      \
    do {                                                                                 \
        int check_rc_ = (call);                                                          \
        if (check_rc_ != MPI_SUCCESS) rma_die(#call, check_rc_, __FILE__, __LINE__);      \
    } while (0)

static inline void rma_fail(const char *file, int line, const char *fmt, ...) {
    if (rma_failures++ < RMA_MAX_REPORTS) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "rank %d: FAIL %s:%d: ", rma_rank, file, line);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        fflush(stderr);
        va_end(ap);
    }
}

#define EXPECT(cond, ...)                                                                \
    do {                                                                                 \
        if (!(cond)) rma_fail(__FILE__, __LINE__, __VA_ARGS__);                          \
    } while (0)

/* `what` found `found` where `expected` was due. */
#define expect_eq(what, expected, found)                                                 \
    expect_eq_at(__FILE__, __LINE__, (what), (long long)(expected), (long long)(found))
static inline void expect_eq_at(const char *file, int line, const char *what,
                                long long expected, long long found) {
    if (expected != found)
        rma_fail(file, line, "%s: expected %lld, found %lld", what, expected, found);
}

/* Compares n bytes; reports the first differing byte and how many differ. Returns
 * whether they were equal. */
#define expect_bytes(what, expected, found, n)                                           \
    expect_bytes_at(__FILE__, __LINE__, (what), (expected), (found), (size_t)(n))
static inline int expect_bytes_at(const char *file, int line, const char *what,
                                  const void *expected, const void *found, size_t n) {
    const unsigned char *e = expected, *f = found;
    size_t first = n, bad = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i] != f[i]) {
            if (first == n) first = i;
            bad++;
        }
    if (bad) {
        size_t lo = first >= 4 ? first - 4 : 0, hi = first + 12 < n ? first + 12 : n;
        char ex[128], fo[128];
        int pe = 0, pf = 0;
        for (size_t i = lo; i < hi; i++) {
            pe += snprintf(ex + pe, sizeof ex - (size_t)pe, "%02x", e[i]);
            pf += snprintf(fo + pf, sizeof fo - (size_t)pf, "%02x", f[i]);
        }
        rma_fail(file, line,
                 "%s: %zu of %zu bytes differ, first at byte %zu; bytes %zu..%zu "
                 "expected %s found %s",
                 what, bad, n, first, lo, hi - 1, ex, fo);
    }
    return bad == 0;
}

static inline void rma_init(int *argc, char ***argv) {
    MPI_Init(argc, argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rma_rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &rma_size));
}

/* Ends the test: every rank learns the total of failures; any makes the job fail. */
static inline int rma_finish(const char *name, const char *summary) {
    long total = 0;
    CHECK(MPI_Allreduce(&rma_failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (total) {
        if (rma_rank == 0) {
            fprintf(stderr, "%s: %ld failed expectations over %d processes\n", name, total,
                    rma_size);
            fflush(stderr);
        }
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    if (rma_rank == 0 && summary) printf("%s: ok, %d processes, %s\n", name, rma_size, summary);
    CHECK(MPI_Finalize());
    return 0;
}

/* A deterministic byte pattern: byte i of the stream named by (a, b, c). */
static inline uint64_t rma_mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}
static inline void rma_fill_bytes(void *buf, size_t n, uint64_t a, uint64_t b, uint64_t c) {
    unsigned char *p = buf;
    uint64_t seed = rma_mix(a * 0x9E3779B97F4A7C15ULL ^ rma_mix(b + 0x632BE59BD9B4E019ULL) ^
                            rma_mix(c * 3 + 7));
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = rma_mix(seed + i);
        for (size_t k = 0; k < 8 && i + k < n; k++) p[i + k] = (unsigned char)(w >> (8 * k));
    }
}

/* ---- windows of each flavor ---- */

enum { RMA_CREATE, RMA_ALLOCATE, RMA_SHARED, RMA_DYNAMIC, RMA_NFLAVORS };

static inline const char *rma_flavor_name(int f) {
    switch (f) {
    case RMA_CREATE: return "MPI_Win_create";
    case RMA_ALLOCATE: return "MPI_Win_allocate";
    case RMA_SHARED: return "MPI_Win_allocate_shared";
    case RMA_DYNAMIC: return "MPI_Win_create_dynamic";
    }
    return "?";
}

struct rma_win {
    MPI_Win win;
    MPI_Comm comm;
    int flavor;
    char *base;         /* this process's window memory (attached memory if dynamic) */
    MPI_Aint size;      /* its size in bytes */
    int disp_unit;      /* 1 for dynamic windows */
    MPI_Aint *remote;   /* dynamic: each rank's attached address, else NULL */
};

/* Collective over comm. disp_unit is ignored for dynamic windows (always 1). */
static inline void rma_win_make(struct rma_win *w, int flavor, MPI_Aint size, int disp_unit,
                                MPI_Comm comm) {
    int n;
    memset(w, 0, sizeof *w);
    w->flavor = flavor;
    w->size = size;
    w->comm = comm;
    w->disp_unit = flavor == RMA_DYNAMIC ? 1 : disp_unit;
    CHECK(MPI_Comm_size(comm, &n));
    switch (flavor) {
    case RMA_CREATE:
        w->base = malloc(size ? (size_t)size : 1);
        if (!w->base) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
        CHECK(MPI_Win_create(w->base, size, disp_unit, MPI_INFO_NULL, comm, &w->win));
        break;
    case RMA_ALLOCATE:
        CHECK(MPI_Win_allocate(size, disp_unit, MPI_INFO_NULL, comm, &w->base, &w->win));
        break;
    case RMA_SHARED:
        CHECK(MPI_Win_allocate_shared(size, disp_unit, MPI_INFO_NULL, comm, &w->base,
                                      &w->win));
        break;
    case RMA_DYNAMIC: {
        MPI_Aint mine;
        w->base = malloc(size ? (size_t)size : 1);
        w->remote = malloc(sizeof(MPI_Aint) * (size_t)n);
        if (!w->base || !w->remote) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
        CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &w->win));
        CHECK(MPI_Win_attach(w->win, w->base, size));
        CHECK(MPI_Get_address(w->base, &mine));
        CHECK(MPI_Allgather(&mine, 1, MPI_AINT, w->remote, 1, MPI_AINT, comm));
        break;
    }
    default: rma_die("rma_win_make: flavor", MPI_ERR_ARG, __FILE__, __LINE__);
    }
    CHECK(MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN));
}

static inline void rma_win_free(struct rma_win *w) {
    if (w->flavor == RMA_DYNAMIC) {
        /* Nobody may access the memory once it is detached. */
        CHECK(MPI_Barrier(w->comm));
        CHECK(MPI_Win_detach(w->win, w->base));
    }
    CHECK(MPI_Win_free(&w->win));
    if (w->flavor == RMA_CREATE || w->flavor == RMA_DYNAMIC) free(w->base);
    free(w->remote);
    w->base = NULL;
    w->remote = NULL;
}

/* The target displacement that addresses byte `off` of target's window memory. */
static inline MPI_Aint rma_disp(const struct rma_win *w, int target, MPI_Aint off) {
    if (w->flavor == RMA_DYNAMIC) return MPI_Aint_add(w->remote[target], off);
    if (off % w->disp_unit) rma_die("rma_disp: unaligned offset", MPI_ERR_DISP, __FILE__, __LINE__);
    return off / w->disp_unit;
}

/* Local access to this process's own window memory outside any epoch of the test:
 * a passive epoch on itself, so that stores are seen by later remote accesses and
 * remote updates completed before (by an unlock/flush and a barrier) are seen by loads
 * (MPI 4.1 12.7, the rules for the public and private copies). */
static inline void rma_local_begin(const struct rma_win *w, int lock_type) {
    int me;
    CHECK(MPI_Comm_rank(w->comm, &me));
    CHECK(MPI_Win_lock(lock_type, me, 0, w->win));
}
static inline void rma_local_end(const struct rma_win *w) {
    int me;
    CHECK(MPI_Comm_rank(w->comm, &me));
    CHECK(MPI_Win_unlock(me, w->win));
}

#endif
