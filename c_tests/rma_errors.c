/* One-sided communication errors under MPI_ERRORS_RETURN (on MPI_COMM_WORLD, MPI_COMM_SELF
 * and every window): each erroneous call must return an error code whose class
 * (MPI_Error_class) is the one named below and whose MPI_Error_string is non-empty, and
 * the library must stay usable: after the errors, correct Puts and Gets work and the
 * window memory proves that no failed call wrote anything.
 *
 * The oracle is the standard (MPI 4.1, chapters 9 and 12) and the contents of every
 * window, which start as a known pseudo-random byte pattern:
 * - MPI_ERR_RMA_RANGE ("target memory is not part of the window", for dynamic windows
 *   "not attached"), for every flavor: Put/Get/Accumulate/Get_accumulate/Fetch_and_op/
 *   Compare_and_swap past the end, across the end, at a negative displacement (MPI_ERR_DISP
 *   is accepted there too: target_disp is a "nonnegative integer"), and with a target
 *   datatype (a vector, a resized MPI_INT) whose extent runs past the end. The error may
 *   come from the call or from the MPI_Win_flush that completes it. MPI_Win_create and
 *   dynamic windows expose the middle third of a buffer: the two outer thirds (sentinels)
 *   and the window itself must be unchanged except for the one correct Put done after.
 * - MPI_ERR_RMA_SYNC (12.5: RMA calls "must occur ... only within an access epoch";
 *   unlock/complete/wait/test end epochs that a lock/start/post began; flush "can be
 *   called only within passive target epochs"; "distinct access epochs for win at the
 *   same process must be disjoint", so a lock inside a fence epoch that has been used by
 *   a Put is erroneous): Put and Get outside any epoch, MPI_Win_unlock without lock and of
 *   another target than the locked one, MPI_Win_unlock_all without lock_all,
 *   MPI_Win_flush/flush_all/flush_local outside a passive epoch, MPI_Win_complete
 *   without start, MPI_Win_wait and MPI_Win_test without post, MPI_Win_lock in a used
 *   fence epoch.
 * - MPI_ERR_LOCKTYPE (lock type 12345), MPI_ERR_ASSERT (0x7fff0000 in fence, lock,
 *   lock_all, post and start), MPI_ERR_RANK (target rank = size, -5; lock rank out of
 *   range; MPI_Win_shared_query rank out of range), MPI_ERR_COUNT (negative origin or
 *   target count), MPI_ERR_TYPE (MPI_DATATYPE_NULL, an uncommitted vector), MPI_ERR_OP
 *   (a user-defined op or MPI_OP_NULL in Accumulate and Fetch_and_op: 12.3.4 allows
 *   predefined operations only), MPI_ERR_WIN (MPI_WIN_NULL; a freed window's handle).
 * - Window creation (errors raised on the communicator): MPI_ERR_DISP for disp_unit 0 and
 *   -4, MPI_ERR_SIZE for size -64, in MPI_Win_create, MPI_Win_allocate and
 *   MPI_Win_allocate_shared; MPI_ERR_COMM for MPI_COMM_NULL.
 * - Dynamic windows: MPI_Win_attach to an MPI_Win_create window (12.2.4: attach is for
 *   dynamic windows; MPI_ERR_RMA_FLAVOR or MPI_ERR_RMA_ATTACH accepted, the standard
 *   names no class), an attach overlapping attached memory ("attaching overlapping
 *   memory concurrently within the same window is erroneous": MPI_ERR_RMA_ATTACH),
 *   negative size (MPI_ERR_SIZE), detach of memory never attached (MPI_ERR_RMA_ATTACH,
 *   MPI_ERR_BASE or MPI_ERR_ARG accepted).
 * - MPI_Win_shared_query: MPI_ERR_RMA_FLAVOR on a dynamic window; on MPI_Win_create and
 *   MPI_Win_allocate windows MPI 4.0/4.1 (12.2.3) makes the call legal: it succeeds and
 *   gives size 0 (no direct access) or the segment's size and disp_unit.
 * - Error handlers: MPI_Win_create_errhandler, set/get (get returns what was set, also
 *   MPI_ERRORS_RETURN), MPI_Win_call_errhandler with a code from MPI_Add_error_code
 *   calls the handler with the window and the code and returns MPI_SUCCESS; a real error
 *   (Put to rank = size) calls it with a code of class MPI_ERR_RANK.
 *
 * MPICH 4.0.2 (ch4) does not detect some of these; they run only with the argument
 * `strict` (given when running on shmpi). Without it the erroneous call is not even made
 * (an undetected out-of-range Put would write outside the window). MPICH misses: every
 * MPI_ERR_RMA_RANGE case; the lock inside a used fence epoch; MPI_ERR_ASSERT; the freed
 * window handle; the overlapping attach and the detach of unattached memory;
 * MPI_Win_shared_query on MPI_Win_create/MPI_Win_allocate windows (it returns
 * MPI_ERR_RMA_FLAVOR, the MPI 3.1 rule); the user-defined op in Fetch_and_op. */
#include "rma_common.h"

#define WN 16 /* ints in a window */
#define WB (WN * 4)

static int strict;
static long nchecks;

static const char *class_name(int c) {
    switch (c) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_RMA_RANGE: return "MPI_ERR_RMA_RANGE";
    case MPI_ERR_RMA_SYNC: return "MPI_ERR_RMA_SYNC";
    case MPI_ERR_RMA_ATTACH: return "MPI_ERR_RMA_ATTACH";
    case MPI_ERR_RMA_FLAVOR: return "MPI_ERR_RMA_FLAVOR";
    case MPI_ERR_RMA_SHARED: return "MPI_ERR_RMA_SHARED";
    case MPI_ERR_RMA_CONFLICT: return "MPI_ERR_RMA_CONFLICT";
    case MPI_ERR_LOCKTYPE: return "MPI_ERR_LOCKTYPE";
    case MPI_ERR_ASSERT: return "MPI_ERR_ASSERT";
    case MPI_ERR_DISP: return "MPI_ERR_DISP";
    case MPI_ERR_SIZE: return "MPI_ERR_SIZE";
    case MPI_ERR_BASE: return "MPI_ERR_BASE";
    case MPI_ERR_WIN: return "MPI_ERR_WIN";
    case MPI_ERR_RANK: return "MPI_ERR_RANK";
    case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
    case MPI_ERR_OP: return "MPI_ERR_OP";
    case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_COMM: return "MPI_ERR_COMM";
    case MPI_ERR_GROUP: return "MPI_ERR_GROUP";
    case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
    case MPI_ERR_INTERN: return "MPI_ERR_INTERN";
    }
    return "another class";
}

/* rc must be an error of class c1 or c2 (c2 < 0: only c1) with a non-empty string.
 * Returns rc. */
static int expect_class_at(const char *file, int line, const char *what, int rc, int c1,
                           int c2) {
    int cls = -1, len = 0;
    char msg[MPI_MAX_ERROR_STRING];
    nchecks++;
    if (rc == MPI_SUCCESS) {
        rma_fail(file, line, "%s: succeeded, expected an error of class %s", what,
                 class_name(c1));
        return rc;
    }
    if (MPI_Error_class(rc, &cls) != MPI_SUCCESS) {
        rma_fail(file, line, "%s: MPI_Error_class(%d) failed", what, rc);
        return rc;
    }
    if (cls != c1 && (c2 < 0 || cls != c2))
        rma_fail(file, line, "%s: error class %d (%s), expected %s%s%s", what, cls,
                 class_name(cls), class_name(c1), c2 < 0 ? "" : " or ",
                 c2 < 0 ? "" : class_name(c2));
    msg[0] = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS || len <= 0 || !msg[0])
        rma_fail(file, line, "%s: empty error string for code %d", what, rc);
    return rc;
}
#define expect_class(what, rc, c) expect_class_at(__FILE__, __LINE__, (what), (rc), (c), -1)
#define expect_class2(what, rc, c1, c2)                                                   \
    expect_class_at(__FILE__, __LINE__, (what), (rc), (c1), (c2))

/* ERR(only_strict, class, call): the call must fail with that class. */
#define ERR(only_strict, cls, call)                                                       \
    do {                                                                                  \
        if (!(only_strict) || strict) expect_class(#call, (call), (cls));                 \
    } while (0)

/* ERR_ARG(class, call): that class; without `strict` MPI_ERR_ARG is accepted too. */
#define ERR_ARG(cls, call)                                                                \
    expect_class2(#call, (call), (cls), strict ? -1 : MPI_ERR_ARG)

/* ---- windows with sentinels ---- */

struct swin {
    MPI_Win win;
    int flavor;
    char *buf;   /* create/dynamic: 3 * WB bytes, the window is the middle third */
    char *base;  /* the window memory (WB bytes) */
    MPI_Aint *remote; /* dynamic: each rank's window address */
};

static void swin_fill_expected(unsigned char *img, int flavor, int rank) {
    rma_fill_bytes(img, 3 * WB, (uint64_t)flavor, (uint64_t)rank, 77);
}

static void swin_make(struct swin *w, int flavor) {
    unsigned char img[3 * WB];
    memset(w, 0, sizeof *w);
    w->flavor = flavor;
    swin_fill_expected(img, flavor, rma_rank);
    switch (flavor) {
    case RMA_CREATE:
        w->buf = malloc(3 * WB);
        memcpy(w->buf, img, 3 * WB);
        w->base = w->buf + WB;
        CHECK(MPI_Win_create(w->base, WB, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        break;
    case RMA_ALLOCATE:
        CHECK(MPI_Win_allocate(WB, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &w->base, &w->win));
        break;
    case RMA_SHARED:
        CHECK(MPI_Win_allocate_shared(WB, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &w->base,
                                      &w->win));
        break;
    case RMA_DYNAMIC: {
        MPI_Aint mine;
        w->buf = malloc(3 * WB);
        memcpy(w->buf, img, 3 * WB);
        w->base = w->buf + WB;
        w->remote = malloc(sizeof(MPI_Aint) * (size_t)rma_size);
        CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        CHECK(MPI_Win_attach(w->win, w->base, WB));
        CHECK(MPI_Get_address(w->base, &mine));
        CHECK(MPI_Allgather(&mine, 1, MPI_AINT, w->remote, 1, MPI_AINT, MPI_COMM_WORLD));
        break;
    }
    }
    CHECK(MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN));
    if (flavor == RMA_ALLOCATE || flavor == RMA_SHARED) {
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rma_rank, 0, w->win));
        memcpy(w->base, img + WB, WB);
        CHECK(MPI_Win_unlock(rma_rank, w->win));
    }
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

static void swin_free(struct swin *w) {
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (w->flavor == RMA_DYNAMIC) CHECK(MPI_Win_detach(w->win, w->base));
    CHECK(MPI_Win_free(&w->win));
    free(w->buf);
    free(w->remote);
}

/* Displacement of int `idx` of target's window (idx may be out of range). */
static MPI_Aint sdisp(const struct swin *w, int target, long idx) {
    if (w->flavor == RMA_DYNAMIC) return w->remote[target] + (MPI_Aint)(4 * idx);
    return (MPI_Aint)idx;
}

/* A range error from the call itself or from the flush that completes it. */
static void range_rc(const char *what, int rc, int target, MPI_Win win, int alt) {
    char ctx[200];
    if (rc == MPI_SUCCESS) rc = MPI_Win_flush(target, win);
    snprintf(ctx, sizeof ctx, "%s", what);
    expect_class_at(__FILE__, __LINE__, ctx, rc, MPI_ERR_RMA_RANGE, alt);
}

static void test_range(int flavor) {
    struct swin w;
    int target = (rma_rank + 1) % rma_size, origin = (rma_rank + rma_size - 1) % rma_size;
    int src[WN], res[WN], cmp = 0, one = 1, got[WN];
    char ctx[160];
    MPI_Datatype vec, rsz;
    unsigned char img[3 * WB], timg[3 * WB];

    swin_make(&w, flavor);
    for (int i = 0; i < WN; i++) src[i] = (int)0xEEEEEEEE, res[i] = 0;
    CHECK(MPI_Type_vector(2, 1, 12, MPI_INT, &vec)); /* ints 0 and 12 */
    CHECK(MPI_Type_commit(&vec));
    CHECK(MPI_Type_create_resized(MPI_INT, 0, WB, &rsz)); /* extent = whole window */
    CHECK(MPI_Type_commit(&rsz));

    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w.win));
    if (strict && !getenv("TMP_NORANGE")) {
        const char *fl = rma_flavor_name(flavor);
#define RANGE(desc, call, alt)                                                            \
    do {                                                                                  \
        snprintf(ctx, sizeof ctx, "%s: %s", fl, desc);                                    \
        range_rc(ctx, (call), target, w.win, alt);                                        \
    } while (0)
        RANGE("Put of 1 int just past the end",
              MPI_Put(src, 1, MPI_INT, target, sdisp(&w, target, WN), 1, MPI_INT, w.win), -1);
        RANGE("Put of 4 ints across the end",
              MPI_Put(src, 4, MPI_INT, target, sdisp(&w, target, WN - 2), 4, MPI_INT, w.win),
              -1);
        RANGE("Put far past the end",
              MPI_Put(src, 1, MPI_INT, target, sdisp(&w, target, 1000000), 1, MPI_INT, w.win),
              -1);
        RANGE("Put at displacement -1 int",
              MPI_Put(src, 1, MPI_INT, target, sdisp(&w, target, -1), 1, MPI_INT, w.win),
              flavor == RMA_DYNAMIC ? -1 : MPI_ERR_DISP);
        RANGE("Get of 1 int just past the end",
              MPI_Get(res, 1, MPI_INT, target, sdisp(&w, target, WN), 1, MPI_INT, w.win), -1);
        RANGE("Get at displacement -1 int",
              MPI_Get(res, 2, MPI_INT, target, sdisp(&w, target, -1), 2, MPI_INT, w.win),
              flavor == RMA_DYNAMIC ? -1 : MPI_ERR_DISP);
        RANGE("Accumulate(MPI_SUM) of 2 ints across the end",
              MPI_Accumulate(src, 2, MPI_INT, target, sdisp(&w, target, WN - 1), 2, MPI_INT,
                             MPI_SUM, w.win),
              -1);
        RANGE("Accumulate(MPI_REPLACE) past the end",
              MPI_Accumulate(src, 1, MPI_INT, target, sdisp(&w, target, WN), 1, MPI_INT,
                             MPI_REPLACE, w.win),
              -1);
        RANGE("Get_accumulate across the end",
              MPI_Get_accumulate(src, 3, MPI_INT, res, 3, MPI_INT, target,
                                 sdisp(&w, target, WN - 1), 3, MPI_INT, MPI_SUM, w.win),
              -1);
        RANGE("Fetch_and_op past the end",
              MPI_Fetch_and_op(&one, res, MPI_INT, target, sdisp(&w, target, WN), MPI_SUM,
                               w.win),
              -1);
        RANGE("Compare_and_swap at displacement -1 int",
              MPI_Compare_and_swap(src, &cmp, res, MPI_INT, target, sdisp(&w, target, -1),
                                   w.win),
              flavor == RMA_DYNAMIC ? -1 : MPI_ERR_DISP);
        RANGE("Put with a target vector(2,1,12) at int 4 (ints 4 and 16)",
              MPI_Put(src, 2, MPI_INT, target, sdisp(&w, target, 4), 1, vec, w.win), -1);
        RANGE("Put with a target MPI_INT resized to the window's size, count 2",
              MPI_Put(src, 2, MPI_INT, target, sdisp(&w, target, 0), 2, rsz, w.win), -1);
        RANGE("Accumulate with a target vector(2,1,12) at int 4",
              MPI_Accumulate(src, 2, MPI_INT, target, sdisp(&w, target, 4), 1, vec, MPI_SUM,
                             w.win),
              -1);
#undef RANGE
    }
    /* A correct Put and Get in the same epoch work. */
    {
        int v = 0x5A000000 + rma_rank;
        CHECK(MPI_Put(&v, 1, MPI_INT, target, sdisp(&w, target, 0), 1, MPI_INT, w.win));
        CHECK(MPI_Get(got, WN - 1, MPI_INT, target, sdisp(&w, target, 1), WN - 1, MPI_INT,
                      w.win));
    }
    CHECK(MPI_Win_unlock(target, w.win));
    swin_fill_expected(timg, flavor, target);
    snprintf(ctx, sizeof ctx, "%s: Get of ints 1..15 of the target after the errors",
             rma_flavor_name(flavor));
    expect_bytes(ctx, timg + WB + 4, got, WB - 4);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    /* My memory: the pattern, but int 0 = the origin's correct Put. */
    swin_fill_expected(img, flavor, rma_rank);
    {
        int v = 0x5A000000 + origin;
        memcpy(img + WB, &v, 4);
    }
    CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rma_rank, 0, w.win));
    snprintf(ctx, sizeof ctx, "%s: window memory after the failed calls",
             rma_flavor_name(flavor));
    expect_bytes(ctx, img + WB, w.base, WB);
    if (w.buf) {
        snprintf(ctx, sizeof ctx, "%s: sentinel below the window", rma_flavor_name(flavor));
        expect_bytes(ctx, img, w.buf, WB);
        snprintf(ctx, sizeof ctx, "%s: sentinel above the window", rma_flavor_name(flavor));
        expect_bytes(ctx, img + 2 * WB, w.buf + 2 * WB, WB);
    }
    CHECK(MPI_Win_unlock(rma_rank, w.win));
    CHECK(MPI_Type_free(&vec));
    CHECK(MPI_Type_free(&rsz));
    swin_free(&w);
}

/* ---- synchronisation, argument and handle errors on one MPI_Win_allocate window ---- */

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *t) {
    (void)t;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

/* Each rank Puts `val` into int `slot` of the next rank in a lock_all epoch; then each
 * rank checks int `slot` of its own memory. */
static void put_and_check(MPI_Win win, int *base, int slot, int val, const char *what) {
    int target = (rma_rank + 1) % rma_size, origin = (rma_rank + rma_size - 1) % rma_size;
    int v = val + rma_rank;
    CHECK(MPI_Win_lock_all(0, win));
    CHECK(MPI_Put(&v, 1, MPI_INT, target, slot, 1, MPI_INT, win));
    CHECK(MPI_Win_unlock_all(win));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rma_rank, 0, win));
    expect_eq(what, val + origin, base[slot]);
    CHECK(MPI_Win_unlock(rma_rank, win));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

static void test_sync(void) {
    MPI_Win win;
    int *base, v = 1, target = (rma_rank + 1) % rma_size, rc;
    MPI_Group wgroup;
    CHECK(MPI_Win_allocate(WB, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    CHECK(MPI_Win_get_group(win, &wgroup));
    CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rma_rank, 0, win));
    for (int i = 0; i < WN; i++) base[i] = -1;
    CHECK(MPI_Win_unlock(rma_rank, win));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    ERR(0, MPI_ERR_RMA_SYNC, MPI_Put(&v, 1, MPI_INT, target, 5, 1, MPI_INT, win));
    ERR(0, MPI_ERR_RMA_SYNC, MPI_Get(&v, 1, MPI_INT, target, 5, 1, MPI_INT, win));
    ERR(1, MPI_ERR_RMA_SYNC, MPI_Win_unlock(target, win));
    ERR(0, MPI_ERR_RMA_SYNC, MPI_Win_unlock_all(win));
    ERR(0, MPI_ERR_RMA_SYNC, MPI_Win_flush(target, win));
    ERR(0, MPI_ERR_RMA_SYNC, MPI_Win_flush_all(win));
    ERR(0, MPI_ERR_RMA_SYNC, MPI_Win_flush_local(target, win));
    ERR(0, MPI_ERR_RMA_SYNC, MPI_Win_complete(win));
    ERR(0, MPI_ERR_RMA_SYNC, MPI_Win_wait(win));
    {
        int flag = 0;
        ERR(0, MPI_ERR_RMA_SYNC, MPI_Win_test(win, &flag));
    }
    put_and_check(win, base, 1, 1000, "Put after the synchronisation errors");

    /* After a closed epoch, RMA calls are outside any epoch again. */
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win));
    CHECK(MPI_Win_unlock(target, win));
    ERR(0, MPI_ERR_RMA_SYNC, MPI_Put(&v, 1, MPI_INT, target, 5, 1, MPI_INT, win));
    /* Unlock of a target that is not the locked one. */
    if (strict && rma_size > 1) {
        int other = (rma_rank + 2) % rma_size; /* may be me when size is 2 */
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win));
        ERR(0, MPI_ERR_RMA_SYNC, MPI_Win_unlock(other, win));
        CHECK(MPI_Win_unlock(target, win));
    }
    /* A lock inside a fence epoch that a Put has used (MPICH does not detect it). */
    if (strict) {
        CHECK(MPI_Win_fence(0, win));
        CHECK(MPI_Put(&v, 1, MPI_INT, rma_rank, 6, 1, MPI_INT, win));
        rc = expect_class("MPI_Win_lock inside a used fence epoch",
                          MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win), MPI_ERR_RMA_SYNC);
        if (rc == MPI_SUCCESS) CHECK(MPI_Win_unlock(target, win));
        CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    }
    put_and_check(win, base, 2, 2000, "Put after the second synchronisation errors");

    /* Lock type, assert and rank arguments. */
    /* MPICH returns MPI_ERR_ARG for these: accepted without `strict`. */
    ERR_ARG(MPI_ERR_LOCKTYPE, MPI_Win_lock(12345, target, 0, win));
    ERR(0, MPI_ERR_RANK, MPI_Win_lock(MPI_LOCK_SHARED, rma_size, 0, win));
    ERR(0, MPI_ERR_RANK, MPI_Win_lock(MPI_LOCK_SHARED, -5, 0, win));
    ERR_ARG(MPI_ERR_ASSERT, MPI_Win_lock(MPI_LOCK_SHARED, target, 0x7fff0000, win));
    ERR_ARG(MPI_ERR_ASSERT, MPI_Win_lock_all(0x7fff0000, win));
    ERR_ARG(MPI_ERR_ASSERT, MPI_Win_fence(0x7fff0000, win));
    ERR_ARG(MPI_ERR_ASSERT, MPI_Win_post(wgroup, 0x7fff0000, win));
    ERR_ARG(MPI_ERR_ASSERT, MPI_Win_start(wgroup, 0x7fff0000, win));
    put_and_check(win, base, 3, 3000, "Put after the lock/assert errors");

    /* Arguments of communication calls, inside a valid epoch. */
    {
        MPI_Datatype unc;
        MPI_Op uop;
        int res = 0, in[4] = {7, 7, 7, 7};
        CHECK(MPI_Type_vector(2, 1, 2, MPI_INT, &unc)); /* never committed */
        CHECK(MPI_Op_create(user_sum, 1, &uop));
        CHECK(MPI_Win_lock_all(0, win));
        ERR(0, MPI_ERR_RANK, MPI_Put(in, 1, MPI_INT, rma_size, 7, 1, MPI_INT, win));
        ERR(0, MPI_ERR_RANK, MPI_Put(in, 1, MPI_INT, -5, 7, 1, MPI_INT, win));
        ERR(0, MPI_ERR_RANK, MPI_Get(in, 1, MPI_INT, rma_size + 3, 7, 1, MPI_INT, win));
        ERR(0, MPI_ERR_COUNT, MPI_Put(in, -1, MPI_INT, target, 7, 1, MPI_INT, win));
        ERR(0, MPI_ERR_COUNT, MPI_Put(in, 1, MPI_INT, target, 7, -1, MPI_INT, win));
        ERR(0, MPI_ERR_COUNT, MPI_Get(in, -1, MPI_INT, target, 7, -1, MPI_INT, win));
        ERR(0, MPI_ERR_TYPE, MPI_Put(in, 1, MPI_DATATYPE_NULL, target, 7, 1, MPI_INT, win));
        ERR(0, MPI_ERR_TYPE, MPI_Put(in, 1, MPI_INT, target, 7, 1, MPI_DATATYPE_NULL, win));
        ERR(0, MPI_ERR_TYPE, MPI_Get(in, 1, MPI_DATATYPE_NULL, target, 7, 1, MPI_INT, win));
        ERR(0, MPI_ERR_TYPE, MPI_Put(in, 1, unc, target, 7, 1, unc, win));
        ERR(0, MPI_ERR_OP,
            MPI_Accumulate(in, 1, MPI_INT, target, 7, 1, MPI_INT, uop, win));
        ERR(0, MPI_ERR_OP,
            MPI_Accumulate(in, 1, MPI_INT, target, 7, 1, MPI_INT, MPI_OP_NULL, win));
        ERR(1, MPI_ERR_OP, MPI_Fetch_and_op(in, &res, MPI_INT, target, 7, uop, win));
        /* MPI_PROC_NULL is a valid target that moves nothing. */
        CHECK(MPI_Put(in, 1, MPI_INT, MPI_PROC_NULL, 7, 1, MPI_INT, win));
        CHECK(MPI_Win_unlock_all(win));
        CHECK(MPI_Op_free(&uop));
        CHECK(MPI_Type_free(&unc));
        CHECK(MPI_Barrier(MPI_COMM_WORLD));
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rma_rank, 0, win));
        expect_eq("int 7 after the failed calls that addressed it", -1, base[7]);
        expect_eq("int 5 after the failed Put outside an epoch", -1, base[5]);
        CHECK(MPI_Win_unlock(rma_rank, win));
    }
    put_and_check(win, base, 4, 4000, "Put after the argument errors");

    /* Null window handle. */
    ERR(0, MPI_ERR_WIN, MPI_Put(&v, 1, MPI_INT, target, 0, 1, MPI_INT, MPI_WIN_NULL));
    ERR(0, MPI_ERR_WIN, MPI_Win_fence(0, MPI_WIN_NULL));
    ERR(0, MPI_ERR_WIN, MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, MPI_WIN_NULL));
    {
        MPI_Win nw = MPI_WIN_NULL;
        ERR(0, MPI_ERR_WIN, MPI_Win_free(&nw));
    }
    CHECK(MPI_Group_free(&wgroup));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(MPI_Win_free(&win));

    /* A freed window's handle (no window is created in between). */
    if (strict && !getenv("TMP_NOFREED")) {
        MPI_Win saved, w2;
        int *b2;
        CHECK(MPI_Win_allocate(WB, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &b2, &w2));
        saved = w2;
        CHECK(MPI_Win_free(&w2));
        expect_eq("MPI_Win_free sets the handle to MPI_WIN_NULL", 1, w2 == MPI_WIN_NULL);
        ERR(1, MPI_ERR_WIN, MPI_Win_fence(0, saved));
        ERR(1, MPI_ERR_WIN, MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, saved));
    }
}

/* ---- window creation errors (raised on the communicator) ---- */

static void test_create(void) {
    char buf[WB];
    void *p;
    MPI_Win win = MPI_WIN_NULL;
    ERR(0, MPI_ERR_DISP, MPI_Win_create(buf, WB, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    ERR(0, MPI_ERR_DISP, MPI_Win_create(buf, WB, -4, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    ERR(0, MPI_ERR_SIZE, MPI_Win_create(buf, -64, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    ERR(0, MPI_ERR_COMM, MPI_Win_create(buf, WB, 4, MPI_INFO_NULL, MPI_COMM_NULL, &win));
    ERR(0, MPI_ERR_DISP, MPI_Win_allocate(WB, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &win));
    ERR(0, MPI_ERR_DISP, MPI_Win_allocate(WB, -4, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &win));
    ERR(0, MPI_ERR_SIZE, MPI_Win_allocate(-64, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &win));
    ERR(0, MPI_ERR_DISP,
        MPI_Win_allocate_shared(WB, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &win));
    ERR(0, MPI_ERR_SIZE,
        MPI_Win_allocate_shared(-64, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &win));
    ERR(0, MPI_ERR_COMM, MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_NULL, &win));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---- attach / detach, shared_query ---- */

static void test_attach(void) {
    struct rma_win cw, dw;
    char *extra = malloc(WB);
    int target = (rma_rank + 1) % rma_size, origin = (rma_rank + rma_size - 1) % rma_size;
    MPI_Aint size;
    int du;
    void *qb;

    rma_win_make(&cw, RMA_CREATE, WB, 4, MPI_COMM_WORLD);
    rma_win_make(&dw, RMA_DYNAMIC, WB, 1, MPI_COMM_WORLD);
    expect_class2("MPI_Win_attach to an MPI_Win_create window",
                  MPI_Win_attach(cw.win, extra, WB), MPI_ERR_RMA_FLAVOR, MPI_ERR_RMA_ATTACH);
    ERR(0, MPI_ERR_SIZE, MPI_Win_attach(dw.win, extra, -8));
    ERR(1, MPI_ERR_RMA_ATTACH, MPI_Win_attach(dw.win, dw.base + 8, 16));
    ERR(1, MPI_ERR_RMA_ATTACH, MPI_Win_attach(dw.win, dw.base, WB));
    if (strict) {
        int rc = MPI_Win_detach(dw.win, extra), cls = -1;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        expect_class2("MPI_Win_detach of memory never attached", rc,
                      cls == MPI_ERR_ARG ? MPI_ERR_ARG : MPI_ERR_RMA_ATTACH, MPI_ERR_BASE);
    }

    /* MPI_Win_shared_query */
    ERR(0, MPI_ERR_RMA_FLAVOR, MPI_Win_shared_query(dw.win, 0, &size, &du, &qb));
    if (strict && !getenv("TMP_NOSQ")) {
        for (int r = 0; r < rma_size; r++) {
            CHECK(MPI_Win_shared_query(cw.win, r, &size, &du, &qb));
            EXPECT(size == 0 || (size == WB && du == 4),
                   "MPI_Win_shared_query on MPI_Win_create, rank %d: size %ld disp_unit %d",
                   r, (long)size, du);
        }
        {
            struct rma_win aw;
            rma_win_make(&aw, RMA_ALLOCATE, WB, 8, MPI_COMM_WORLD);
            CHECK(MPI_Win_shared_query(aw.win, MPI_PROC_NULL, &size, &du, &qb));
            for (int r = 0; r < rma_size; r++) {
                CHECK(MPI_Win_shared_query(aw.win, r, &size, &du, &qb));
                EXPECT(size == 0 || (size == WB && du == 8),
                       "MPI_Win_shared_query on MPI_Win_allocate, rank %d: size %ld "
                       "disp_unit %d",
                       r, (long)size, du);
            }
            rma_win_free(&aw);
        }
    }
    {
        struct rma_win sw;
        rma_win_make(&sw, RMA_SHARED, WB, 4, MPI_COMM_WORLD);
        ERR(0, MPI_ERR_RANK, MPI_Win_shared_query(sw.win, rma_size, &size, &du, &qb));
        ERR(0, MPI_ERR_RANK, MPI_Win_shared_query(sw.win, -7, &size, &du, &qb));
        rma_win_free(&sw);
    }

    /* The dynamic window still works: Put into the next rank's attached memory. */
    {
        int v = 0x7000 + rma_rank;
        CHECK(MPI_Win_lock_all(0, dw.win));
        CHECK(MPI_Put(&v, 1, MPI_INT, target, rma_disp(&dw, target, 8), 1, MPI_INT, dw.win));
        CHECK(MPI_Win_unlock_all(dw.win));
        CHECK(MPI_Barrier(MPI_COMM_WORLD));
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rma_rank, 0, dw.win));
        memcpy(&v, dw.base + 8, 4);
        CHECK(MPI_Win_unlock(rma_rank, dw.win));
        expect_eq("Put into attached memory after the attach errors", 0x7000 + origin, v);
    }
    rma_win_free(&dw);
    rma_win_free(&cw);
    free(extra);
}

/* ---- error handlers ---- */

static int eh_calls, eh_last_code;
static MPI_Win eh_last_win;
static void win_handler(MPI_Win *win, int *code, ...) {
    eh_calls++;
    eh_last_code = *code;
    eh_last_win = *win;
}

static void test_errhandler(void) {
    struct rma_win w;
    MPI_Errhandler eh, got;
    int myclass, mycode, rc, cls = -1, len = 0;
    char msg[MPI_MAX_ERROR_STRING];

    rma_win_make(&w, RMA_ALLOCATE, WB, 4, MPI_COMM_WORLD);
    CHECK(MPI_Win_get_errhandler(w.win, &got));
    expect_eq("MPI_Win_get_errhandler returns MPI_ERRORS_RETURN (set)", 1,
              got == MPI_ERRORS_RETURN);
    CHECK(MPI_Errhandler_free(&got));

    CHECK(MPI_Win_create_errhandler(win_handler, &eh));
    CHECK(MPI_Win_set_errhandler(w.win, eh));
    CHECK(MPI_Win_get_errhandler(w.win, &got));
    expect_eq("MPI_Win_get_errhandler returns the handler set", 1, got == eh);
    CHECK(MPI_Errhandler_free(&got));

    CHECK(MPI_Add_error_class(&myclass));
    CHECK(MPI_Add_error_code(myclass, &mycode));
    CHECK(MPI_Add_error_string(mycode, "rma_errors: a user error code"));
    eh_calls = 0;
    rc = MPI_Win_call_errhandler(w.win, mycode);
    expect_eq("MPI_Win_call_errhandler returns MPI_SUCCESS", MPI_SUCCESS, rc);
    expect_eq("MPI_Win_call_errhandler: handler calls", 1, eh_calls);
    expect_eq("MPI_Win_call_errhandler: the code passed", mycode, eh_last_code);
    expect_eq("MPI_Win_call_errhandler: the window passed", 1, eh_last_win == w.win);
    CHECK(MPI_Error_class(mycode, &cls));
    expect_eq("class of the added code", myclass, cls);
    CHECK(MPI_Error_string(mycode, msg, &len));
    EXPECT(strcmp(msg, "rma_errors: a user error code") == 0,
           "MPI_Error_string of the added code: \"%s\"", msg);

    /* A real error calls the handler and returns the code. */
    {
        int v = 1;
        eh_calls = 0;
        CHECK(MPI_Win_lock_all(0, w.win));
        rc = MPI_Put(&v, 1, MPI_INT, rma_size, 0, 1, MPI_INT, w.win);
        CHECK(MPI_Win_unlock_all(w.win));
        expect_eq("user handler calls for a Put to rank = size", 1, eh_calls);
        expect_eq("user handler: the window", 1, eh_last_win == w.win);
        if (eh_calls) {
            CHECK(MPI_Error_class(eh_last_code, &cls));
            expect_eq("user handler: class of the code (MPI_ERR_RANK)", MPI_ERR_RANK, cls);
            expect_eq("the Put returned the code the handler got", eh_last_code, rc);
        }
    }
    CHECK(MPI_Win_set_errhandler(w.win, MPI_ERRORS_RETURN));
    CHECK(MPI_Errhandler_free(&eh));
    /* The window keeps its handler after the user's handle is freed. */
    CHECK(MPI_Win_get_errhandler(w.win, &got));
    expect_eq("MPI_Win_get_errhandler after the free", 1, got == MPI_ERRORS_RETURN);
    CHECK(MPI_Errhandler_free(&got));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    rma_win_free(&w);
}

int main(int argc, char **argv) {
    char summary[160];
    rma_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "strict") == 0) strict = 1;

    test_create();
    for (int f = 0; f < RMA_NFLAVORS; f++) test_range(f);
    test_sync();
    test_attach();
    test_errhandler();

    snprintf(summary, sizeof summary, "%ld error checks on rank 0%s", nchecks,
             strict ? " (strict)" : " (without the strict-only checks)");
    return rma_finish("rma_errors", summary);
}
