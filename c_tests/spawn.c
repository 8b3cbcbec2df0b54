/* Dynamic processes: MPI_Comm_spawn and MPI_Comm_spawn_multiple of this same program,
 * MPI_Comm_get_parent, MPI_UNIVERSE_SIZE / MPI_APPNUM, point-to-point, reductions
 * and MPI_Intercomm_merge across the parent-children intercommunicator (results against
 * oracles computed here), MPI_Comm_disconnect, and the errors: a program that does not
 * exist, more processes than the universe holds, bad arguments, all under
 * MPI_ERRORS_RETURN with the library usable afterwards.
 *
 * Run as `spawn` by mpiexec; the children run as `spawn child KIND` and check from
 * their side. Children report failures through their exit status (mpiexec fails the
 * job) and through the values they send back. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrank, wsize, failures;
#define CHECK(cond, ...)                                                           \
    do {                                                                           \
        if (!(cond)) {                                                             \
            if (failures++ < 10) {                                                 \
                fprintf(stderr, "%s %d: FAIL line %d: ", parent_side ? "parent" : "child", \
                        wrank, __LINE__);                                          \
                fprintf(stderr, __VA_ARGS__);                                      \
                fprintf(stderr, "\n");                                             \
            }                                                                      \
        }                                                                          \
    } while (0)
static int parent_side = 1;

/* Value rank r of group g (0 parents, 1 children) contributes to element e. */
static double val(int g, int r, int e) { return (double)((g * 7 + r * 13 + e * 3) % 101) * (g ? 0.5 : 2.0); }

/* Both sides of one intercommunicator: p2p, Allreduce, Reduce, Bcast, merge. `g` is
 * this side's group (0 parents, 1 children), `nl`/`nr` the local/remote sizes. */
static void exercise(MPI_Comm ic, int g, int nl, int nr) {
    int lr;
    MPI_Comm_rank(ic, &lr);
    /* Point-to-point: local rank 0 of each side exchanges with the other's rank 0. */
    if (lr == 0) {
        int out[2] = {g, nl}, in[2] = {-1, -1};
        MPI_Status st;
        MPI_Sendrecv(out, 2, MPI_INT, 0, 7, in, 2, MPI_INT, 0, 7, ic, &st);
        CHECK(in[0] == 1 - g && in[1] == nr, "sendrecv got %d %d", in[0], in[1]);
        CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 7, "status %d %d", st.MPI_SOURCE, st.MPI_TAG);
    }
    /* Allreduce across groups: each side gets the reduction of the other group. */
    enum { N = 5 };
    double mine[N], got[N];
    for (int e = 0; e < N; e++) mine[e] = val(g, lr, e);
    MPI_Allreduce(mine, got, N, MPI_DOUBLE, MPI_SUM, ic);
    for (int e = 0; e < N; e++) {
        double want = 0;
        for (int r = 0; r < nr; r++) want += val(1 - g, r, e);
        CHECK(got[e] == want, "allreduce[%d] %g want %g", e, got[e], want);
    }
    /* Reduce to parent rank 0: children contribute, parents name the root. */
    if (g == 0) {
        int root = lr == 0 ? MPI_ROOT : MPI_PROC_NULL;
        int r = MPI_Reduce(NULL, got, N, MPI_DOUBLE, MPI_MAX, root, ic);
        CHECK(r == MPI_SUCCESS, "reduce rc %d", r);
        if (lr == 0)
            for (int e = 0; e < N; e++) {
                double want = val(1, 0, e);
                for (int q = 1; q < nr; q++) want = val(1, q, e) > want ? val(1, q, e) : want;
                CHECK(got[e] == want, "reduce[%d] %g want %g", e, got[e], want);
            }
    } else {
        MPI_Reduce(mine, NULL, N, MPI_DOUBLE, MPI_MAX, 0, ic);
    }
    /* Merge: parents first; an Allreduce of world-independent ids on the result. */
    MPI_Comm m;
    MPI_Intercomm_merge(ic, g, &m);
    int msize, mrank;
    MPI_Comm_size(m, &msize);
    MPI_Comm_rank(m, &mrank);
    CHECK(msize == nl + nr, "merged size %d", msize);
    CHECK(mrank == (g ? nr + lr : lr), "merged rank %d", mrank);
    long id = g * 1000 + lr, sum = 0, want = 0;
    MPI_Allreduce(&id, &sum, 1, MPI_LONG, MPI_SUM, m);
    for (int r = 0; r < (g ? nr : nl); r++) want += r;
    for (int r = 0; r < (g ? nl : nr); r++) want += 1000 + r;
    CHECK(sum == want, "merged allreduce %ld want %ld", sum, want);
    MPI_Comm_free(&m);
}

static void child(int argc, char **argv, MPI_Comm parent) {
    parent_side = 0;
    const char *kind = argc > 2 ? argv[2] : "?";
    int nparents, appnum = -1, flag = 0, *ap;
    MPI_Comm_remote_size(parent, &nparents);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &ap, &flag);
    if (flag) appnum = *ap;
    int test_flag;
    MPI_Comm_test_inter(parent, &test_flag);
    CHECK(test_flag, "parent is not an intercommunicator");
    char pname[MPI_MAX_OBJECT_NAME];
    int plen = -1;
    MPI_Comm_get_name(parent, pname, &plen);
    CHECK(plen == 15 && !strcmp(pname, "MPI_COMM_PARENT"), "the parent's name is '%s'", pname);
    if (!strcmp(kind, "single")) {
        CHECK(wsize == 2, "spawned world size %d", wsize);
        CHECK(argc == 5 && !strcmp(argv[3], "with space") && !strcmp(argv[4], ""),
              "argv not passed through (argc %d)", argc);
        CHECK(appnum == 0, "appnum %d", appnum);
        exercise(parent, 1, wsize, nparents);
    } else if (!strcmp(kind, "multi")) {
        /* Commands: 0 -> 1 process ("multi 0"), 1 -> 2 processes ("multi 1"). */
        int want_app = argc > 3 ? atoi(argv[3]) : -1;
        CHECK(wsize == 3, "spawned world size %d", wsize);
        CHECK(appnum == want_app, "appnum %d want %d", appnum, want_app);
        CHECK(want_app == (wrank == 0 ? 0 : 1), "rank %d runs command %d", wrank, want_app);
        exercise(parent, 1, wsize, nparents);
    } else {
        CHECK(0, "unknown child kind %s", kind);
    }
    /* Report to the parents: failures seen here. */
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0) MPI_Send(&total, 1, MPI_INT, 0, 99, parent);
    MPI_Comm_disconnect(&parent);
    MPI_Comm p2;
    MPI_Comm_get_parent(&p2);
    CHECK(p2 == MPI_COMM_NULL, "get_parent after disconnect");
}

static void check_children(MPI_Comm ic) {
    int lr;
    MPI_Comm_rank(ic, &lr);
    if (lr == 0) {
        int bad = -1;
        MPI_Recv(&bad, 1, MPI_INT, 0, 99, ic, MPI_STATUS_IGNORE);
        CHECK(bad == 0, "children reported %d failures", bad);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        child(argc, argv, parent);
        MPI_Finalize();
        return failures ? 1 : 0;
    }
    CHECK(argc < 2 || strcmp(argv[1], "child"), "a child without a parent");
    int *usize, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag);
    /* The default universe has room for 3 spawned processes at least: the 2 + 3 spawned
     * below fit because the first 2 free their slots when they finish. */
    CHECK(flag && *usize >= wsize + 3, "MPI_UNIVERSE_SIZE %d (flag %d)", flag ? *usize : -1, flag);

    /* 1. MPI_Comm_spawn of 2 children, root = last rank, arguments passed through. */
    char *args[] = {"child", "single", "with space", "", NULL};
    int codes[2] = {-1, -1};
    MPI_Comm ic;
    int rc = MPI_Comm_spawn(argv[0], args, 2, MPI_INFO_NULL, wsize - 1, MPI_COMM_WORLD, &ic, codes);
    CHECK(rc == MPI_SUCCESS, "spawn rc %d", rc);
    CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS, "errcodes %d %d", codes[0], codes[1]);
    int rsize, inter;
    MPI_Comm_remote_size(ic, &rsize);
    MPI_Comm_test_inter(ic, &inter);
    CHECK(rsize == 2 && inter, "remote size %d inter %d", rsize, inter);
    exercise(ic, 0, wsize, 2);
    check_children(ic);
    MPI_Comm_disconnect(&ic);
    CHECK(ic == MPI_COMM_NULL, "disconnect did not reset the handle");

    /* 2. MPI_Comm_spawn_multiple: 1 + 2 processes with different arguments, an info
     * with a working directory. */
    char *cmds[2] = {argv[0], argv[0]};
    char *a0[] = {"child", "multi", "0", NULL}, *a1[] = {"child", "multi", "1", NULL};
    char **argvs[2] = {a0, a1};
    int procs[2] = {1, 2};
    MPI_Info infos[2];
    MPI_Info_create(&infos[0]);
    MPI_Info_set(infos[0], "wdir", ".");
    infos[1] = MPI_INFO_NULL;
    int mcodes[3] = {-1, -1, -1};
    /* The program path may be relative: give both commands the same directory. */
    rc = MPI_Comm_spawn_multiple(2, cmds, argvs, procs, infos, 0, MPI_COMM_WORLD, &ic, mcodes);
    CHECK(rc == MPI_SUCCESS, "spawn_multiple rc %d", rc);
    CHECK(mcodes[0] == 0 && mcodes[1] == 0 && mcodes[2] == 0, "errcodes %d %d %d", mcodes[0], mcodes[1], mcodes[2]);
    MPI_Info_free(&infos[0]);
    MPI_Comm_remote_size(ic, &rsize);
    CHECK(rsize == 3, "remote size %d", rsize);
    exercise(ic, 0, wsize, 3);
    check_children(ic);
    MPI_Comm_disconnect(&ic);

    /* 3. Errors, under MPI_ERRORS_RETURN: every rank gets the error class and the codes. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int ecodes[3] = {-1, -1, -1}, cls = -1;
    ic = 12345;
    rc = MPI_Comm_spawn("./no-such-program-here", MPI_ARGV_NULL, 3, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic, ecodes);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_SPAWN, "missing program: class %d", cls);
    /* Every rank gets the codes, one per process the root asked for. */
    CHECK(ecodes[0] == MPI_ERR_SPAWN && ecodes[2] == MPI_ERR_SPAWN, "codes %d %d", ecodes[0], ecodes[2]);
    rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 100000, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic, MPI_ERRCODES_IGNORE);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_SPAWN, "too many processes: class %d", cls);
    rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, MPI_INFO_NULL, wsize, MPI_COMM_WORLD, &ic, MPI_ERRCODES_IGNORE);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ROOT, "root out of range: class %d", cls);
    if (wsize == 1) {
        /* maxprocs is significant at the root only. */
        rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 0, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic, MPI_ERRCODES_IGNORE);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_ARG, "maxprocs 0: class %d", cls);
    }
    /* Still usable. */
    int one = 1, sum = 0;
    rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS && sum == wsize, "allreduce after errors %d", sum);

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0) printf("spawn: %s (np %d)\n", total ? "FAILED" : "ok", wsize);
    MPI_Finalize();
    return total ? 1 : 0;
}
