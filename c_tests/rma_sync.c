/* One-sided communication: every window flavor x every synchronisation mode x Put, Get,
 * Accumulate(MPI_SUM) and Accumulate(MPI_REPLACE) x a set of datatype pairs, against a
 * sequential oracle of every byte of every window and origin buffer.
 *
 * Windows: MPI_Win_create on malloc'd memory, MPI_Win_allocate, MPI_Win_allocate_shared
 * (each with disp_unit 1, sizeof(int) and sizeof(double)) and MPI_Win_create_dynamic
 * with attached malloc'd memory (disp_unit 1, target displacements are the addresses
 * the targets sent with MPI_Allgather of MPI_Get_address).
 * Synchronisation: fence; post/start/complete/wait; post/start/complete and an
 * MPI_Win_test loop; lock exclusive and lock shared per target; lock_all with flush,
 * flush_local, flush_all or flush_local_all; lock shared and lock_all with
 * MPI_MODE_NOCHECK (legal: nobody takes an exclusive lock during those epochs).
 * Datatypes (origin / target): MPI_INT / MPI_INT, MPI_DOUBLE / MPI_DOUBLE, a vector /
 * contiguous ints, contiguous / an indexed type of doubles, a struct {int; double; int[2]}
 * with holes (Put and Get only: an accumulate's types must have one basic type), a
 * struct of ints with holes, contiguous / a resized int with a negative lower bound,
 * a resized double / contiguous, and count 0.
 *
 * Each process P issues, in each round, the operation to P+1, P-1 and P itself (mod
 * size), each case of each of those three at its own displacement of the target (slot
 * (P, direction, case)). Window memory starts as pseudo-random bytes with known values
 * at the addressed elements; after the epoch closes and a barrier, each process reads
 * its own memory (in a lock on itself) and compares every byte with the oracle's image
 * (so bytes outside the addressed elements are untouched), and compares its origin
 * buffers (Get results land on the addressed elements only; Put/Accumulate origins are
 * unchanged). With flush/flush_local the Get results are also checked before the epoch
 * ends, and Put/Accumulate origin buffers are overwritten after it (the data was
 * already taken). MPI_Win_get_attr (MPI_WIN_BASE, SIZE, DISP_UNIT, CREATE_FLAVOR, MODEL
 * = MPI_WIN_UNIFIED) and MPI_Win_get_group are checked per window; shared windows also
 * through MPI_Win_shared_query (contiguous by default) and direct loads of a
 * neighbour's memory. */
#include "rma_common.h"

#define NE 12     /* most basic elements in a case */
#define SLOT 128  /* bytes per (origin, direction, case) at a target */

enum { B_INT, B_DOUBLE };
static const int bsize[2] = {sizeof(int), sizeof(double)};

struct dcase {
    const char *name;
    MPI_Datatype ot, tt; /* origin and target types */
    int oc, tc;          /* their counts */
    int n;               /* basic elements moved */
    int basic[NE];       /* their types, in type-signature order */
    int ooff[NE], toff[NE]; /* their byte offsets in the origin and target buffers */
    int acc;             /* usable by MPI_Accumulate */
};

#define NCASE 9
static struct dcase cases[NCASE];
static MPI_Datatype owned[16];
static int nowned;

static MPI_Datatype commit(MPI_Datatype t) {
    CHECK(MPI_Type_commit(&t));
    owned[nowned++] = t;
    return t;
}

static void build_cases(void) {
    struct dcase *c;
    int i;
    /* 0: five ints */
    c = &cases[0];
    c->name = "MPI_INT x5 / MPI_INT x5";
    c->ot = c->tt = MPI_INT;
    c->oc = c->tc = 5;
    c->n = 5;
    c->acc = 1;
    for (i = 0; i < 5; i++) c->basic[i] = B_INT, c->ooff[i] = c->toff[i] = 4 * i;
    /* 1: four doubles */
    c = &cases[1];
    c->name = "MPI_DOUBLE x4 / MPI_DOUBLE x4";
    c->ot = c->tt = MPI_DOUBLE;
    c->oc = c->tc = 4;
    c->n = 4;
    c->acc = 1;
    for (i = 0; i < 4; i++) c->basic[i] = B_DOUBLE, c->ooff[i] = c->toff[i] = 8 * i;
    /* 2: vector(3 blocks of 2 ints, stride 3) / 6 contiguous ints */
    c = &cases[2];
    c->name = "vector(3,2,3) of MPI_INT / MPI_INT x6";
    {
        MPI_Datatype v;
        CHECK(MPI_Type_vector(3, 2, 3, MPI_INT, &v));
        c->ot = commit(v);
    }
    c->tt = MPI_INT;
    c->oc = 1;
    c->tc = 6;
    c->n = 6;
    c->acc = 1;
    for (i = 0; i < 6; i++)
        c->basic[i] = B_INT, c->ooff[i] = 4 * ((i / 2) * 3 + i % 2), c->toff[i] = 4 * i;
    /* 3: 6 contiguous doubles / indexed(blocks 1,2,3 at 0,2,6) of doubles */
    c = &cases[3];
    c->name = "MPI_DOUBLE x6 / indexed({1,2,3},{0,2,6}) of MPI_DOUBLE";
    {
        int bl[3] = {1, 2, 3}, dp[3] = {0, 2, 6}, el[6] = {0, 2, 3, 6, 7, 8};
        MPI_Datatype t;
        CHECK(MPI_Type_indexed(3, bl, dp, MPI_DOUBLE, &t));
        c->tt = commit(t);
        for (i = 0; i < 6; i++) c->basic[i] = B_DOUBLE, c->ooff[i] = 8 * i, c->toff[i] = 8 * el[i];
    }
    c->ot = MPI_DOUBLE;
    c->oc = 6;
    c->tc = 1;
    c->n = 6;
    c->acc = 1;
    /* 4: struct {int a; double b; int c[2];} x2 both sides (holes after a) */
    c = &cases[4];
    c->name = "struct{int;double;int[2]} x2 (holes) both sides";
    {
        int bl[3] = {1, 1, 2};
        MPI_Aint dp[3] = {0, 8, 16};
        MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_INT}, t;
        MPI_Aint lb, ext;
        CHECK(MPI_Type_create_struct(3, bl, dp, ty, &t));
        CHECK(MPI_Type_get_extent(t, &lb, &ext));
        if (lb != 0 || ext != 24) {
            fprintf(stderr, "rank %d: struct extent lb %ld ext %ld, expected 0 and 24\n",
                    rma_rank, (long)lb, (long)ext);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        c->ot = c->tt = commit(t);
        static const int off[4] = {0, 8, 16, 20}, bs[4] = {B_INT, B_DOUBLE, B_INT, B_INT};
        for (i = 0; i < 8; i++)
            c->basic[i] = bs[i % 4], c->ooff[i] = c->toff[i] = 24 * (i / 4) + off[i % 4];
    }
    c->oc = c->tc = 2;
    c->n = 8;
    c->acc = 0;
    /* 5: struct of ints {int @0; int[2] @8} x3 both sides */
    c = &cases[5];
    c->name = "struct{int @0; int[2] @8} x3 (holes) both sides";
    {
        int bl[2] = {1, 2};
        MPI_Aint dp[2] = {0, 8};
        MPI_Datatype ty[2] = {MPI_INT, MPI_INT}, t;
        CHECK(MPI_Type_create_struct(2, bl, dp, ty, &t));
        c->ot = c->tt = commit(t);
        static const int off[3] = {0, 8, 12};
        for (i = 0; i < 9; i++)
            c->basic[i] = B_INT, c->ooff[i] = c->toff[i] = 16 * (i / 3) + off[i % 3];
    }
    c->oc = c->tc = 3;
    c->n = 9;
    c->acc = 1;
    /* 6: 4 contiguous ints / resized(MPI_INT, lb -4, extent 12) x4: ints every 12 bytes */
    c = &cases[6];
    c->name = "MPI_INT x4 / resized(MPI_INT,-4,12) x4";
    {
        MPI_Datatype t;
        CHECK(MPI_Type_create_resized(MPI_INT, -4, 12, &t));
        c->tt = commit(t);
    }
    c->ot = MPI_INT;
    c->oc = c->tc = 4;
    c->n = 4;
    c->acc = 1;
    for (i = 0; i < 4; i++) c->basic[i] = B_INT, c->ooff[i] = 4 * i, c->toff[i] = 12 * i;
    /* 7: resized(MPI_DOUBLE, 0, 16) x3 / 3 contiguous doubles */
    c = &cases[7];
    c->name = "resized(MPI_DOUBLE,0,16) x3 / MPI_DOUBLE x3";
    {
        MPI_Datatype t;
        CHECK(MPI_Type_create_resized(MPI_DOUBLE, 0, 16, &t));
        c->ot = commit(t);
    }
    c->tt = MPI_DOUBLE;
    c->oc = c->tc = 3;
    c->n = 3;
    c->acc = 1;
    for (i = 0; i < 3; i++) c->basic[i] = B_DOUBLE, c->ooff[i] = 16 * i, c->toff[i] = 8 * i;
    /* 8: count 0 */
    c = &cases[8];
    c->name = "MPI_INT x0 / MPI_INT x0";
    c->ot = c->tt = MPI_INT;
    c->oc = c->tc = 0;
    c->n = 0;
    c->acc = 1;
    for (i = 0; i < NCASE; i++) {
        struct dcase *d = &cases[i];
        for (int k = 0; k < d->n; k++)
            if (d->ooff[k] + bsize[d->basic[k]] > SLOT || d->toff[k] + bsize[d->basic[k]] > SLOT)
                rma_die("case larger than a slot", MPI_ERR_INTERN, __FILE__, __LINE__);
    }
}

enum { OP_PUT, OP_GET, OP_SUM, OP_REPLACE, NOPS };
static const char *op_name[NOPS] = {"MPI_Put", "MPI_Get", "MPI_Accumulate(MPI_SUM)",
                                    "MPI_Accumulate(MPI_REPLACE)"};

enum {
    M_FENCE, M_PSCW, M_PSCW_TEST, M_LOCK_EXCL, M_LOCK_SHARED, M_FLUSH, M_FLUSH_LOCAL,
    M_FLUSH_ALL, M_FLUSH_LOCAL_ALL, M_LOCK_NOCHECK, M_LOCK_ALL_NOCHECK, NMODES
};
static const char *mode_name[NMODES] = {
    "fence", "post/start/complete/wait", "post/start/complete/test loop",
    "lock exclusive", "lock shared", "lock_all+flush", "lock_all+flush_local",
    "lock_all+flush_all", "lock_all+flush_local_all", "lock shared NOCHECK",
    "lock_all NOCHECK"};

static int nprocs, me;
static size_t wbytes;  /* window bytes per process */
static size_t obytes;  /* origin buffer bytes per process */

static int target_of(int o, int d) {
    return d == 0 ? (o + 1) % nprocs : d == 1 ? (o + nprocs - 1) % nprocs : o;
}
static size_t slot_off(int o, int d, int c) { return ((size_t)(o * 3 + d) * NCASE + (size_t)c) * SLOT; }
static size_t oslot_off(int d, int c) { return ((size_t)d * NCASE + (size_t)c) * SLOT; }

/* Values at the addressed target elements and in the origin buffers. */
static long long ival_target(int t, int o, int d, int c, int i, int round) {
    return (long long)t * 100000 + o * 1000 + d * 300 + c * 30 + i + round * 7;
}
static long long ival_origin(int o, int d, int c, int i, int round) {
    return 50000000LL + o * 1000 + d * 300 + c * 30 + i + round * 11;
}
static void put_elem(char *p, int basic, long long v, double frac) {
    if (basic == B_INT) {
        int x = (int)v;
        memcpy(p, &x, sizeof x);
    } else {
        double x = (double)v + frac;
        memcpy(p, &x, sizeof x);
    }
}

/* Target t's window memory at the start of round `round`. */
static void init_image(int t, int round, char *img) {
    rma_fill_bytes(img, wbytes, (uint64_t)t, (uint64_t)round, 1);
    for (int o = 0; o < nprocs; o++)
        for (int d = 0; d < 3; d++)
            for (int c = 0; c < NCASE; c++)
                for (int i = 0; i < cases[c].n; i++)
                    put_elem(img + slot_off(o, d, c) + cases[c].toff[i], cases[c].basic[i],
                             ival_target(t, o, d, c, i, round), 0.5);
}

static void init_origin(int o, int round, int op, char *buf) {
    rma_fill_bytes(buf, obytes, (uint64_t)o, (uint64_t)round, 2);
    if (op == OP_GET) return;
    for (int d = 0; d < 3; d++)
        for (int c = 0; c < NCASE; c++)
            for (int i = 0; i < cases[c].n; i++)
                put_elem(buf + oslot_off(d, c) + cases[c].ooff[i], cases[c].basic[i],
                         ival_origin(o, d, c, i, round), 0.25);
}

static int case_used(int op, int c) { return op == OP_PUT || op == OP_GET || cases[c].acc; }

/* Target t's window memory at the end of the round, computed sequentially. */
static void final_image(int t, int round, int op, char *img, char *obuf_tmp) {
    init_image(t, round, img);
    if (op == OP_GET) return;
    for (int o = 0; o < nprocs; o++) {
        init_origin(o, round, op, obuf_tmp);
        for (int d = 0; d < 3; d++) {
            if (target_of(o, d) != t) continue;
            for (int c = 0; c < NCASE; c++) {
                if (!case_used(op, c)) continue;
                for (int i = 0; i < cases[c].n; i++) {
                    char *dst = img + slot_off(o, d, c) + cases[c].toff[i];
                    const char *src = obuf_tmp + oslot_off(d, c) + cases[c].ooff[i];
                    if (op == OP_PUT || op == OP_REPLACE) {
                        memcpy(dst, src, (size_t)bsize[cases[c].basic[i]]);
                    } else if (cases[c].basic[i] == B_INT) {
                        int a, b;
                        memcpy(&a, dst, 4);
                        memcpy(&b, src, 4);
                        a = (int)((unsigned)a + (unsigned)b);
                        memcpy(dst, &a, 4);
                    } else {
                        double a, b;
                        memcpy(&a, dst, 8);
                        memcpy(&b, src, 8);
                        a += b;
                        memcpy(dst, &a, 8);
                    }
                }
            }
        }
    }
}

/* Origin o's buffer after a Get round: target elements copied to the origin offsets. */
static void get_result(int o, int round, char *buf, char *img_tmp) {
    init_origin(o, round, OP_GET, buf);
    for (int d = 0; d < 3; d++) {
        int t = target_of(o, d);
        init_image(t, round, img_tmp);
        for (int c = 0; c < NCASE; c++)
            for (int i = 0; i < cases[c].n; i++)
                memcpy(buf + oslot_off(d, c) + cases[c].ooff[i],
                       img_tmp + slot_off(o, d, c) + cases[c].toff[i],
                       (size_t)bsize[cases[c].basic[i]]);
    }
}

static char ctx[256]; /* what the current round does, for reports */

/* Compares a window image slot by slot, naming the slot of a difference. */
static void compare_window(const char *whose, const char *expected, const char *found) {
    for (int o = 0; o < nprocs; o++)
        for (int d = 0; d < 3; d++)
            for (int c = 0; c < NCASE; c++) {
                size_t off = slot_off(o, d, c);
                if (memcmp(expected + off, found + off, SLOT)) {
                    char what[512];
                    snprintf(what, sizeof what,
                             "%s: %s window memory, slot of origin %d direction %d case "
                             "'%s' (window byte %zu)",
                             ctx, whose, o, d, cases[c].name, off);
                    expect_bytes(what, expected + off, found + off, SLOT);
                }
            }
}

static void compare_origin(const char *when, const char *expected, const char *found) {
    for (int d = 0; d < 3; d++)
        for (int c = 0; c < NCASE; c++) {
            size_t off = oslot_off(d, c);
            if (memcmp(expected + off, found + off, SLOT)) {
                char what[512];
                snprintf(what, sizeof what,
                         "%s: origin buffer %s, target %d (direction %d) case '%s'", ctx,
                         when, target_of(me, d), d, cases[c].name);
                expect_bytes(what, expected + off, found + off, SLOT);
            }
        }
}

static void issue(const struct rma_win *w, int op, int d, char *obuf) {
    int t = target_of(me, d);
    for (int c = 0; c < NCASE; c++) {
        const struct dcase *k = &cases[c];
        if (!case_used(op, c)) continue;
        char *ob = obuf + oslot_off(d, c);
        MPI_Aint disp = rma_disp(w, t, (MPI_Aint)slot_off(me, d, c));
        switch (op) {
        case OP_PUT: CHECK(MPI_Put(ob, k->oc, k->ot, t, disp, k->tc, k->tt, w->win)); break;
        case OP_GET: CHECK(MPI_Get(ob, k->oc, k->ot, t, disp, k->tc, k->tt, w->win)); break;
        case OP_SUM:
            CHECK(MPI_Accumulate(ob, k->oc, k->ot, t, disp, k->tc, k->tt, MPI_SUM, w->win));
            break;
        case OP_REPLACE:
            CHECK(MPI_Accumulate(ob, k->oc, k->ot, t, disp, k->tc, k->tt, MPI_REPLACE, w->win));
            break;
        }
    }
}

static MPI_Group neighbours; /* {me-1, me, me+1}: who accesses me and whom I access */
static char *img, *img2, *obuf, *oexp, *otmp;
static int round_no;
static int trace; /* RMA_TRACE set: each round is named on stderr as it starts */

static void one_round(struct rma_win *w, int mode, int op) {
    int round = round_no++;
    int scribbled = 0;
    snprintf(ctx, sizeof ctx, "%s disp_unit %d, %s, %s (round %d)", rma_flavor_name(w->flavor),
             w->disp_unit, mode_name[mode], op_name[op], round);

    if (trace) fprintf(stderr, "rank %d: %s\n", me, ctx);
    /* Window memory and origin buffers as the oracle starts them. */
    init_image(me, round, img);
    rma_local_begin(w, MPI_LOCK_EXCLUSIVE);
    memcpy(w->base, img, wbytes);
    rma_local_end(w);
    init_origin(me, round, op, obuf);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    switch (mode) {
    case M_FENCE:
        CHECK(MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win));
        for (int d = 0; d < 3; d++) issue(w, op, d, obuf);
        CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
        break;
    case M_PSCW:
    case M_PSCW_TEST:
        CHECK(MPI_Win_post(neighbours, 0, w->win));
        CHECK(MPI_Win_start(neighbours, 0, w->win));
        for (int d = 0; d < 3; d++) issue(w, op, d, obuf);
        CHECK(MPI_Win_complete(w->win));
        if (mode == M_PSCW) {
            CHECK(MPI_Win_wait(w->win));
        } else {
            int flag = 0;
            while (!flag) CHECK(MPI_Win_test(w->win, &flag));
        }
        break;
    case M_LOCK_EXCL:
    case M_LOCK_SHARED:
    case M_LOCK_NOCHECK:
        for (int d = 0; d < 3; d++) {
            int t = target_of(me, d);
            CHECK(MPI_Win_lock(mode == M_LOCK_EXCL ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, t,
                               mode == M_LOCK_NOCHECK ? MPI_MODE_NOCHECK : 0, w->win));
            issue(w, op, d, obuf);
            CHECK(MPI_Win_unlock(t, w->win));
        }
        break;
    case M_FLUSH:
    case M_FLUSH_LOCAL:
    case M_FLUSH_ALL:
    case M_FLUSH_LOCAL_ALL:
    case M_LOCK_ALL_NOCHECK:
        CHECK(MPI_Win_lock_all(mode == M_LOCK_ALL_NOCHECK ? MPI_MODE_NOCHECK : 0, w->win));
        for (int d = 0; d < 3; d++) {
            issue(w, op, d, obuf);
            if (mode == M_FLUSH) CHECK(MPI_Win_flush(target_of(me, d), w->win));
            if (mode == M_FLUSH_LOCAL) CHECK(MPI_Win_flush_local(target_of(me, d), w->win));
        }
        if (mode == M_FLUSH_ALL) CHECK(MPI_Win_flush_all(w->win));
        if (mode == M_FLUSH_LOCAL_ALL) CHECK(MPI_Win_flush_local_all(w->win));
        if (mode != M_LOCK_ALL_NOCHECK) {
            /* Completed at the origin: Get results are there; Put and Accumulate have
             * taken the origin data, so the buffers may be overwritten. */
            if (op == OP_GET) {
                get_result(me, round, oexp, img2);
                compare_origin("after the flush, before unlock_all", oexp, obuf);
            } else {
                memset(obuf, 0xA5, obytes);
                scribbled = 1;
            }
        }
        CHECK(MPI_Win_unlock_all(w->win));
        break;
    }

    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    final_image(me, round, op, img, otmp);
    rma_local_begin(w, MPI_LOCK_SHARED);
    compare_window("own", img, w->base);
    rma_local_end(w);
    if (w->flavor == RMA_SHARED && nprocs > 1) {
        /* The right neighbour's memory by direct loads, in a lock on it. */
        int nb = (me + 1) % nprocs, du;
        MPI_Aint sz;
        char *p;
        CHECK(MPI_Win_shared_query(w->win, nb, &sz, &du, &p));
        final_image(nb, round, op, img2, otmp);
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, nb, 0, w->win));
        compare_window("right neighbour's (direct load)", img2, p);
        CHECK(MPI_Win_unlock(nb, w->win));
    }
    if (op == OP_GET) {
        get_result(me, round, oexp, img2);
        compare_origin("after the epoch", oexp, obuf);
    } else if (scribbled) {
        memset(oexp, 0xA5, obytes);
        compare_origin("overwritten after the flush", oexp, obuf);
    } else {
        init_origin(me, round, op, oexp);
        compare_origin("(origin data must be unchanged)", oexp, obuf);
    }
    /* The next round rewrites the memory only after everybody has checked. */
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

static void check_attrs(struct rma_win *w) {
    void *base = NULL;
    MPI_Aint *size = NULL;
    int *du = NULL, *flavor = NULL, *model = NULL, flag = 0;
    static const int flavors[RMA_NFLAVORS] = {MPI_WIN_FLAVOR_CREATE, MPI_WIN_FLAVOR_ALLOCATE,
                                              MPI_WIN_FLAVOR_SHARED, MPI_WIN_FLAVOR_DYNAMIC};
    snprintf(ctx, sizeof ctx, "%s disp_unit %d attributes", rma_flavor_name(w->flavor),
             w->disp_unit);
    CHECK(MPI_Win_get_attr(w->win, MPI_WIN_BASE, &base, &flag));
    EXPECT(flag, "%s: MPI_WIN_BASE not set", ctx);
    /* A dynamic window's base is MPI_BOTTOM (MPI 4.1 12.2.4). */
    if (flag)
        EXPECT(base == (w->flavor == RMA_DYNAMIC ? MPI_BOTTOM : (void *)w->base),
               "%s: MPI_WIN_BASE %p, expected %p", ctx, base,
               w->flavor == RMA_DYNAMIC ? MPI_BOTTOM : (void *)w->base);
    CHECK(MPI_Win_get_attr(w->win, MPI_WIN_SIZE, &size, &flag));
    EXPECT(flag, "%s: MPI_WIN_SIZE not set", ctx);
    /* A dynamic window has size 0 (memory attached later is not part of it). */
    if (flag)
        expect_eq(ctx, w->flavor == RMA_DYNAMIC ? 0 : (long long)wbytes, *size);
    CHECK(MPI_Win_get_attr(w->win, MPI_WIN_DISP_UNIT, &du, &flag));
    EXPECT(flag, "%s: MPI_WIN_DISP_UNIT not set", ctx);
    if (flag) expect_eq(ctx, w->disp_unit, *du);
    CHECK(MPI_Win_get_attr(w->win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    EXPECT(flag, "%s: MPI_WIN_CREATE_FLAVOR not set", ctx);
    if (flag) expect_eq(ctx, flavors[w->flavor], *flavor);
    CHECK(MPI_Win_get_attr(w->win, MPI_WIN_MODEL, &model, &flag));
    EXPECT(flag, "%s: MPI_WIN_MODEL not set", ctx);
    if (flag) expect_eq(ctx, MPI_WIN_UNIFIED, *model);

    MPI_Group wg, cg;
    int cmp = -1;
    CHECK(MPI_Win_get_group(w->win, &wg));
    CHECK(MPI_Comm_group(MPI_COMM_WORLD, &cg));
    CHECK(MPI_Group_compare(wg, cg, &cmp));
    expect_eq("MPI_Win_get_group compared with MPI_COMM_WORLD's group", MPI_IDENT, cmp);
    CHECK(MPI_Group_free(&wg));
    CHECK(MPI_Group_free(&cg));

    if (w->flavor == RMA_SHARED) {
        for (int r = 0; r < nprocs; r++) {
            MPI_Aint sz = -1;
            int u = -1;
            char *p = NULL;
            CHECK(MPI_Win_shared_query(w->win, r, &sz, &u, &p));
            expect_eq("MPI_Win_shared_query size", (long long)wbytes, sz);
            expect_eq("MPI_Win_shared_query disp_unit", w->disp_unit, u);
            /* Contiguous in rank order unless alloc_shared_noncontig is given. */
            EXPECT(p == w->base + ((ptrdiff_t)r - me) * (ptrdiff_t)wbytes,
                   "%s: MPI_Win_shared_query(%d) base %p, expected %p", ctx, r, (void *)p,
                   (void *)(w->base + ((ptrdiff_t)r - me) * (ptrdiff_t)wbytes));
        }
        {
            MPI_Aint sz = -1;
            int u = -1;
            char *p = NULL;
            /* MPI_PROC_NULL: the lowest rank with a non-zero size, rank 0 here. */
            CHECK(MPI_Win_shared_query(w->win, MPI_PROC_NULL, &sz, &u, &p));
            EXPECT(p == w->base - (ptrdiff_t)me * (ptrdiff_t)wbytes && sz == (MPI_Aint)wbytes,
                   "%s: MPI_Win_shared_query(MPI_PROC_NULL) base %p size %ld, expected %p %zu",
                   ctx, (void *)p, (long)sz, (void *)(w->base - (ptrdiff_t)me * (ptrdiff_t)wbytes),
                   wbytes);
        }
    }
}

int main(int argc, char **argv) {
    rma_init(&argc, &argv);
    nprocs = rma_size;
    me = rma_rank;
    /* Optional arguments: a list of modes to run (by index), for short runs. */
    int run_mode[NMODES];
    for (int m = 0; m < NMODES; m++) run_mode[m] = argc < 2;
    for (int a = 1; a < argc; a++) {
        int m = atoi(argv[a]);
        if (m >= 0 && m < NMODES) run_mode[m] = 1;
    }
    trace = getenv("RMA_TRACE") != NULL;
    build_cases();
    wbytes = (size_t)nprocs * 3 * NCASE * SLOT;
    obytes = (size_t)3 * NCASE * SLOT;
    img = malloc(wbytes);
    img2 = malloc(wbytes);
    obuf = malloc(obytes);
    oexp = malloc(obytes);
    otmp = malloc(obytes);
    if (!img || !img2 || !obuf || !oexp || !otmp)
        rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
    {
        MPI_Group wg;
        int r[3], k = 0;
        int cand[3] = {(me + nprocs - 1) % nprocs, me, (me + 1) % nprocs};
        for (int i = 0; i < 3; i++) {
            int dup = 0;
            for (int j = 0; j < k; j++) dup |= r[j] == cand[i];
            if (!dup) r[k++] = cand[i];
        }
        CHECK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
        CHECK(MPI_Group_incl(wg, k, r, &neighbours));
        CHECK(MPI_Group_free(&wg));
    }

    int nwin = 0;
    for (int f = 0; f < RMA_NFLAVORS; f++) {
        static const int units[3] = {1, sizeof(int), sizeof(double)};
        for (int u = 0; u < (f == RMA_DYNAMIC ? 1 : 3); u++) {
            struct rma_win w;
            rma_win_make(&w, f, (MPI_Aint)wbytes, units[u], MPI_COMM_WORLD);
            check_attrs(&w);
            for (int m = 0; m < NMODES; m++)
                if (run_mode[m])
                    for (int op = 0; op < NOPS; op++) one_round(&w, m, op);
            rma_win_free(&w);
            nwin++;
        }
    }

    for (int i = 0; i < nowned; i++) CHECK(MPI_Type_free(&owned[i]));
    CHECK(MPI_Group_free(&neighbours));
    free(img);
    free(img2);
    free(obuf);
    free(oexp);
    free(otmp);
    char summary[128];
    snprintf(summary, sizeof summary, "%d windows, %d rounds", nwin, round_no);
    return rma_finish("rma_sync", summary);
}
