/* Window lifetimes and the communicators windows live on, each result against values
 * computed here:
 * (a) Churn: N windows of every flavor (argv[1], default 2000 per flavor) made and freed
 *     in a loop, each used by one Put to the right neighbour and one Get from the left
 *     one in a fence epoch (results checked). Resident memory (VmRSS) and open file
 *     descriptors are measured after the first tenth and at the end: memory may grow by
 *     at most 8 MiB and descriptors not at all (MPI_Win_free releases what the window
 *     took).
 * (b) Dynamic windows: regions of 64..4096 bytes attached and detached in a loop; in
 *     each round every rank Puts its mark into its right neighbour's current region
 *     (address exchanged with MPI_Allgather) under lock_all, and the owner checks it.
 * (c) Windows on MPI_COMM_SELF, on the halves of MPI_Comm_split (even / odd world
 *     ranks, reversed order: key = -rank) and on a communicator made by
 *     MPI_Intercomm_create + MPI_Intercomm_merge of the halves: MPI_Win_get_group is
 *     MPI_IDENT to the communicator's group, and a Put to window rank r lands in the
 *     memory of the process with communicator rank r (each process checks that the
 *     mark in its memory is the one of its communicator's left neighbour).
 * (d) MPI_Win_allocate_shared with a size per rank (rank 1 gives 0 bytes): the segments
 *     are contiguous (base(r+1) = base(r) + size(r)), MPI_Win_shared_query(MPI_PROC_NULL)
 *     gives the lowest rank's segment with size > 0; direct stores into the right
 *     neighbour's segment, MPI_Win_sync + MPI_Barrier + MPI_Win_sync inside lock_all,
 *     then the neighbour loads them; with info alloc_shared_noncontig=true each
 *     segment's own size is still right.
 * (e) A window keyval whose delete callback counts its calls: called exactly once per
 *     window holding the attribute, at MPI_Win_free or MPI_Win_delete_attr; names are
 *     kept (MPI_Win_set_name / get_name); MPI_Win_get_info gives an info object that
 *     the program frees. */
#include "rma_common.h"

#include <dirent.h>

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) v = atol(line + 6);
    fclose(f);
    return v;
}

static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d) return -1;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* One Put to the right neighbour and one Get from the left in a fence epoch, checked. */
static void use_window(struct rma_win *w, int round) {
    int me, n;
    CHECK(MPI_Comm_rank(w->comm, &me));
    CHECK(MPI_Comm_size(w->comm, &n));
    int right = (me + 1) % n, left = (me + n - 1) % n;
    int mark = me * 100000 + round, got = -1;
    CHECK(MPI_Win_fence(0, w->win));
    CHECK(MPI_Put(&mark, 1, MPI_INT, right, rma_disp(w, right, 0), 1, MPI_INT, w->win));
    CHECK(MPI_Win_fence(0, w->win));
    CHECK(MPI_Get(&got, 1, MPI_INT, left, rma_disp(w, left, 0), 1, MPI_INT, w->win));
    CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
    /* left's memory holds the mark of left's left neighbour */
    int want = ((left + n - 1) % n) * 100000 + round;
    if (got != want) EXPECT(0, "%s round %d: Get from %d gave %d, expected %d",
                            rma_flavor_name(w->flavor), round, left, got, want);
}

static void churn(long iters) {
    long warm = iters / 10 > 0 ? iters / 10 : 1;
    long rss0 = 0;
    int fd0 = 0;
    for (long i = 0; i < iters; i++) {
        if (i == warm) {
            CHECK(MPI_Barrier(MPI_COMM_WORLD));
            rss0 = rss_kib();
            fd0 = open_fds();
        }
        struct rma_win w;
        rma_win_make(&w, (int)(i % RMA_NFLAVORS), 64, 1, MPI_COMM_WORLD);
        use_window(&w, (int)i);
        rma_win_free(&w);
    }
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    long rss1 = rss_kib();
    int fd1 = open_fds();
    if (iters > 1) {
        EXPECT(rss1 - rss0 <= 8192, "%ld windows: VmRSS grew from %ld to %ld KiB", iters,
               rss0, rss1);
        EXPECT(fd1 <= fd0, "%ld windows: open descriptors grew from %d to %d", iters, fd0,
               fd1);
    }
}

static void dynamic_regions(int rounds) {
    MPI_Win win;
    int me = rma_rank, n = rma_size, right = (me + 1) % n, left = (me + n - 1) % n;
    MPI_Aint *addr = malloc(sizeof(MPI_Aint) * (size_t)n);
    CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (int r = 0; r < rounds; r++) {
        size_t len = (size_t)64 << (r % 7);
        int *mem = calloc(len, 1);
        MPI_Aint mine;
        CHECK(MPI_Win_attach(win, mem, (MPI_Aint)len));
        CHECK(MPI_Get_address(mem, &mine));
        CHECK(MPI_Allgather(&mine, 1, MPI_AINT, addr, 1, MPI_AINT, MPI_COMM_WORLD));
        int mark[2] = {me, r};
        /* the last two ints of the neighbour's region */
        MPI_Aint at = MPI_Aint_add(addr[right], (MPI_Aint)(len - sizeof mark));
        CHECK(MPI_Win_lock_all(0, win));
        CHECK(MPI_Put(mark, 2, MPI_INT, right, at, 2, MPI_INT, win));
        CHECK(MPI_Win_unlock_all(win));
        CHECK(MPI_Barrier(MPI_COMM_WORLD));
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
        int *tail = mem + len / sizeof(int) - 2;
        EXPECT(tail[0] == left && tail[1] == r, "dynamic round %d (%zu bytes): found %d %d, expected %d %d",
               r, len, tail[0], tail[1], left, r);
        for (size_t k = 0; k + 2 < len / sizeof(int); k++)
            if (mem[k] != 0) {
                EXPECT(0, "dynamic round %d: int %zu of the region is %d, not 0", r, k, mem[k]);
                break;
            }
        CHECK(MPI_Win_unlock(me, win));
        CHECK(MPI_Barrier(MPI_COMM_WORLD));
        CHECK(MPI_Win_detach(win, mem));
        free(mem);
    }
    CHECK(MPI_Win_free(&win));
    free(addr);
}

/* A window of every flavor on `comm`: its group, and Puts by communicator rank. */
static void on_comm(MPI_Comm comm, const char *what) {
    MPI_Group cg, wg;
    int cmp, me, n;
    CHECK(MPI_Comm_rank(comm, &me));
    CHECK(MPI_Comm_size(comm, &n));
    CHECK(MPI_Comm_group(comm, &cg));
    for (int f = 0; f < RMA_NFLAVORS; f++) {
        struct rma_win w;
        rma_win_make(&w, f, 64, 4, comm);
        CHECK(MPI_Win_get_group(w.win, &wg));
        CHECK(MPI_Group_compare(cg, wg, &cmp));
        EXPECT(cmp == MPI_IDENT, "%s, %s: the window's group is not the communicator's (%d)",
               what, rma_flavor_name(f), cmp);
        CHECK(MPI_Group_free(&wg));
        int right = (me + 1) % n, left = (me + n - 1) % n, mark = 1000 + me;
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w.win));
        CHECK(MPI_Put(&mark, 1, MPI_INT, right, rma_disp(&w, right, 0), 1, MPI_INT, w.win));
        CHECK(MPI_Win_unlock(right, w.win));
        CHECK(MPI_Barrier(comm));
        rma_local_begin(&w, MPI_LOCK_SHARED);
        int found = *(int *)(void *)w.base;
        rma_local_end(&w);
        EXPECT(found == 1000 + left, "%s, %s: rank %d holds mark %d, expected %d (its left neighbour's)",
               what, rma_flavor_name(f), me, found, 1000 + left);
        rma_win_free(&w);
    }
    CHECK(MPI_Group_free(&cg));
}

static void communicators(void) {
    on_comm(MPI_COMM_SELF, "MPI_COMM_SELF");
    MPI_Comm half, inter, merged;
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, rma_rank % 2, -rma_rank, &half));
    on_comm(half, "a split half");
    if (rma_size >= 2) {
        /* leaders: world rank 0 (even half) and 1 (odd half), at their rank in the half */
        int leader_world = rma_rank % 2, local_leader = -1, hn;
        CHECK(MPI_Comm_size(half, &hn));
        MPI_Group hg, wg;
        CHECK(MPI_Comm_group(half, &hg));
        CHECK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
        CHECK(MPI_Group_translate_ranks(wg, 1, &leader_world, hg, &local_leader));
        CHECK(MPI_Group_free(&hg));
        CHECK(MPI_Group_free(&wg));
        CHECK(MPI_Intercomm_create(half, local_leader, MPI_COMM_WORLD, 1 - rma_rank % 2, 7,
                                   &inter));
        CHECK(MPI_Intercomm_merge(inter, rma_rank % 2, &merged));
        on_comm(merged, "a merged intercommunicator");
        CHECK(MPI_Comm_free(&merged));
        CHECK(MPI_Comm_free(&inter));
    }
    CHECK(MPI_Comm_free(&half));
}

static void shared(int noncontig) {
    MPI_Comm node;
    MPI_Info info = MPI_INFO_NULL;
    MPI_Win win;
    char *base;
    int me, n;
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    CHECK(MPI_Comm_rank(node, &me));
    CHECK(MPI_Comm_size(node, &n));
    if (noncontig) {
        CHECK(MPI_Info_create(&info));
        CHECK(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
    }
    MPI_Aint mysize = me == 1 ? 0 : 64 * (me + 1);
    CHECK(MPI_Win_allocate_shared(mysize, 1, info, node, &base, &win));
    if (info != MPI_INFO_NULL) CHECK(MPI_Info_free(&info));
    MPI_Aint *sz = malloc(sizeof(MPI_Aint) * (size_t)n);
    char **b = malloc(sizeof(char *) * (size_t)n);
    int last = -1;
    for (int r = 0; r < n; r++) {
        int du;
        CHECK(MPI_Win_shared_query(win, r, &sz[r], &du, &b[r]));
        MPI_Aint want = r == 1 ? 0 : 64 * (r + 1);
        EXPECT(sz[r] == want && du == 1, "shared (noncontig %d): rank %d's segment %ld bytes unit %d, expected %ld 1",
               noncontig, r, (long)sz[r], du, (long)want);
        /* (the base of an empty segment is not specified: MPICH gives NULL) */
        if (!noncontig && sz[r] > 0 && last >= 0)
            EXPECT(b[r] == b[last] + sz[last], "shared: segment %d at %p, expected %p (contiguous)",
                   r, (void *)b[r], (void *)(b[last] + sz[last]));
        if (sz[r] > 0) last = r;
    }
    {
        MPI_Aint s;
        int du;
        char *p;
        CHECK(MPI_Win_shared_query(win, MPI_PROC_NULL, &s, &du, &p));
        EXPECT(p == b[0] && s == sz[0], "shared: MPI_PROC_NULL query gave %p %ld, expected rank 0's %p %ld",
               (void *)p, (long)s, (void *)b[0], (long)sz[0]);
    }
    /* The ranks with a segment, in a ring: each stores into the next one's first and
     * last byte; the previous one's stores are what it loads. */
    int *sized = malloc(sizeof(int) * (size_t)n), k = 0, at = -1;
    for (int r = 0; r < n; r++)
        if (sz[r] > 0) {
            if (r == me) at = k;
            sized[k++] = r;
        }
    CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    if (at >= 0 && k > 1) {
        int next = sized[(at + 1) % k];
        b[next][0] = (char)(10 + me);
        b[next][sz[next] - 1] = (char)(20 + me);
    }
    CHECK(MPI_Win_sync(win));
    CHECK(MPI_Barrier(node));
    CHECK(MPI_Win_sync(win));
    if (at >= 0 && k > 1) {
        int prev = sized[(at + k - 1) % k];
        EXPECT(base[0] == 10 + prev && base[mysize - 1] == 20 + prev,
               "shared (noncontig %d): rank %d loads %d %d, expected %d %d stored by rank %d",
               noncontig, me, base[0], base[mysize - 1], 10 + prev, 20 + prev, prev);
    }
    free(sized);
    CHECK(MPI_Win_unlock_all(win));
    CHECK(MPI_Win_free(&win));
    free(sz);
    free(b);
    CHECK(MPI_Comm_free(&node));
}

static int deletes;
static int count_delete(MPI_Win win, int key, void *val, void *extra) {
    (void)win;
    (void)key;
    (void)extra;
    if (val == (void *)&deletes) deletes++;
    return MPI_SUCCESS;
}

static void attributes(void) {
    int key;
    CHECK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, count_delete, &key, NULL));
    deletes = 0;
    for (int f = 0; f < RMA_NFLAVORS; f++) {
        struct rma_win w;
        char name[MPI_MAX_OBJECT_NAME];
        int len = -1;
        rma_win_make(&w, f, 64, 1, MPI_COMM_WORLD);
        CHECK(MPI_Win_get_name(w.win, name, &len));
        EXPECT(len == 0 && name[0] == 0, "%s: a new window's name is '%s' (%d), not empty",
               rma_flavor_name(f), name, len);
        CHECK(MPI_Win_set_name(w.win, "life window"));
        CHECK(MPI_Win_get_name(w.win, name, &len));
        EXPECT(len == 11 && !strcmp(name, "life window"), "%s: name '%s' (%d)",
               rma_flavor_name(f), name, len);
        CHECK(MPI_Win_set_attr(w.win, key, &deletes));
        if (f == 0) {
            CHECK(MPI_Win_delete_attr(w.win, key));
            EXPECT(deletes == 1, "MPI_Win_delete_attr: %d delete calls, expected 1", deletes);
        }
        MPI_Info used;
        CHECK(MPI_Win_get_info(w.win, &used));
        CHECK(MPI_Info_free(&used));
        rma_win_free(&w);
    }
    EXPECT(deletes == RMA_NFLAVORS, "%d delete calls for %d windows", deletes, RMA_NFLAVORS);
    CHECK(MPI_Win_free_keyval(&key));
    EXPECT(key == MPI_KEYVAL_INVALID, "MPI_Win_free_keyval left %d", key);
}

int main(int argc, char **argv) {
    rma_init(&argc, &argv);
    long iters = argc > 1 ? atol(argv[1]) : 2000;
    int rounds = argc > 2 ? atoi(argv[2]) : 50;
    churn(iters * RMA_NFLAVORS);
    dynamic_regions(rounds);
    communicators();
    shared(0);
    shared(1);
    attributes();
    char summary[128];
    snprintf(summary, sizeof summary, "%ld windows made and freed, %d dynamic rounds",
             iters * RMA_NFLAVORS, rounds);
    return rma_finish("rma_life", summary);
}
