/* Communicators, groups and attributes: split/dup/create/create_group/compare/free,
 * group algebra, attribute callbacks, isolation between communicators, reductions on
 * sub-communicators against a sequential oracle, and create/free in a loop. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures;
#define CHECK(cond, ...)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            failures++;                                                              \
            fprintf(stderr, "rank %d: FAIL line %d: ", rank, __LINE__);              \
            fprintf(stderr, __VA_ARGS__);                                            \
            fprintf(stderr, "\n");                                                   \
        }                                                                            \
    } while (0)

static int copies, deletes;
static int copy_cb(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    (void)c; (void)k;
    copies++;
    *(void **)out = (void *)((char *)in + *(int *)extra);
    *flag = 1;
    return MPI_SUCCESS;
}
static int delete_cb(MPI_Comm c, int k, void *val, void *extra) {
    (void)c; (void)k; (void)val; (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

/* Allreduce of (world rank + 1) * (i + 1) over the members of `members` (world ranks). */
static void check_sum(MPI_Comm c, const int *members, int m, const char *what) {
    int n = 1000, ok = 1;
    long *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    for (int i = 0; i < n; i++) x[i] = (long)(rank + 1) * (i + 1);
    MPI_Allreduce(x, y, n, MPI_LONG, MPI_SUM, c);
    long s = 0;
    for (int k = 0; k < m; k++) s += members[k] + 1;
    for (int i = 0; i < n; i++) ok &= y[i] == s * (i + 1);
    CHECK(ok, "%s: allreduce result wrong", what);
    free(x); free(y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Split by parity, keys reversed. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    int members[64], m = 0;
    for (int r = size - 1; r >= 0; r--) if (r % 2 == rank % 2) members[m++] = r;
    CHECK(hs == m, "split size %d, expected %d", hs, m);
    CHECK(members[hr] == rank, "split rank %d does not follow key order", hr);
    check_sum(half, members, m, "split");
    /* Rank order check through a gather of world ranks. */
    int *got = malloc(sizeof(int) * 64);
    MPI_Allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, half);
    for (int i = 0; i < hs; i++) CHECK(got[i] == members[i], "allgather on split: got[%d]=%d want %d", i, got[i], members[i]);

    /* MPI_UNDEFINED colour gives MPI_COMM_NULL. */
    MPI_Comm none;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &none);
    CHECK((rank == 0) == (none == MPI_COMM_NULL), "MPI_UNDEFINED colour");
    if (none != MPI_COMM_NULL) MPI_Comm_free(&none);

    /* Dup: congruent, isolated, attributes copied. */
    int key, extra = 5;
    MPI_Comm_create_keyval(copy_cb, delete_cb, &key, &extra);
    static char base[16];
    MPI_Comm_set_attr(MPI_COMM_WORLD, key, base);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int res;
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &res);
    CHECK(res == MPI_CONGRUENT, "compare(world, dup) = %d", res);
    MPI_Comm_compare(dup, dup, &res);
    CHECK(res == MPI_IDENT, "compare(dup, dup) = %d", res);
    if (size > 1) {
        MPI_Comm_compare(MPI_COMM_WORLD, half, &res);
        CHECK(res == MPI_UNEQUAL, "compare(world, half) = %d", res);
    }
    void *v; int flag;
    MPI_Comm_get_attr(dup, key, &v, &flag);
    CHECK(flag && v == base + 5, "attribute copied through the callback");
    CHECK(copies == 1, "copy callback ran %d times", copies);
    /* Isolation: the same tag on two communicators, received in the opposite order. */
    if (size > 1) {
        int a = 100 + rank, b = 200 + rank, ra = -1, rb = -1;
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Request rq[4];
        MPI_Isend(&a, 1, MPI_INT, to, 7, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(&b, 1, MPI_INT, to, 7, dup, &rq[1]);
        MPI_Irecv(&rb, 1, MPI_INT, from, 7, dup, &rq[2]);
        MPI_Irecv(&ra, 1, MPI_INT, from, 7, MPI_COMM_WORLD, &rq[3]);
        MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
        CHECK(ra == 100 + from && rb == 200 + from, "messages crossed communicators: %d %d", ra, rb);
    }
    MPI_Comm_free(&dup);
    CHECK(dup == MPI_COMM_NULL, "free sets MPI_COMM_NULL");
    CHECK(deletes == 1, "delete callback ran %d times", deletes);
    MPI_Comm_delete_attr(MPI_COMM_WORLD, key);
    CHECK(deletes == 2, "delete_attr ran the callback");
    MPI_Comm_get_attr(MPI_COMM_WORLD, key, &v, &flag);
    CHECK(!flag, "attribute gone after delete");
    MPI_Comm_free_keyval(&key);
    CHECK(key == MPI_KEYVAL_INVALID, "free_keyval sets MPI_KEYVAL_INVALID");

    /* Groups. */
    MPI_Group world, evens, odds, u, in, d;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int ranges[1][3] = {{0, size - 1, 2}};
    MPI_Group_range_incl(world, 1, ranges, &evens);
    MPI_Group_range_excl(world, 1, ranges, &odds);
    int ne, no;
    MPI_Group_size(evens, &ne);
    MPI_Group_size(odds, &no);
    CHECK(ne == (size + 1) / 2 && no == size / 2, "range incl/excl sizes %d %d", ne, no);
    MPI_Group_union(odds, evens, &u);
    MPI_Group_compare(u, world, &res);
    CHECK(res == (size > 1 ? MPI_SIMILAR : MPI_IDENT), "union similar to world: %d", res);
    MPI_Group_intersection(evens, odds, &in);
    int sz;
    MPI_Group_size(in, &sz);
    CHECK(sz == 0, "intersection empty");
    MPI_Group_difference(world, odds, &d);
    MPI_Group_compare(d, evens, &res);
    CHECK(res == MPI_IDENT, "difference == evens");
    int r1[3] = {0, MPI_PROC_NULL, size - 1}, r2[3];
    MPI_Group_translate_ranks(world, 3, r1, evens, r2);
    CHECK(r2[0] == 0 && r2[1] == MPI_PROC_NULL && r2[2] == ((size - 1) % 2 ? MPI_UNDEFINED : (size - 1) / 2), "translate_ranks %d %d %d", r2[0], r2[1], r2[2]);
    int gr;
    MPI_Group_rank(evens, &gr);
    CHECK(gr == (rank % 2 ? MPI_UNDEFINED : rank / 2), "group rank");
    int incl[2] = {size - 1, 0};
    MPI_Group g2;
    MPI_Group_incl(world, size > 1 ? 2 : 1, incl, &g2);
    { MPI_Group g3; MPI_Group_excl(world, 1, incl, &g3); int s3; MPI_Group_size(g3, &s3); CHECK(s3 == size - 1, "excl size %d", s3); MPI_Group_free(&g3); }

    /* Comm_create with disjoint groups (MPI-2.2): evens and odds. */
    MPI_Comm cc;
    MPI_Comm_create(MPI_COMM_WORLD, rank % 2 ? odds : evens, &cc);
    CHECK(cc != MPI_COMM_NULL, "create gave a communicator");
    int cm[64], k = 0;
    for (int r = rank % 2; r < size; r += 2) cm[k++] = r;
    check_sum(cc, cm, k, "create");
    MPI_Comm_free(&cc);
    /* Comm_create with a group not containing me -> MPI_COMM_NULL. */
    MPI_Comm_create(MPI_COMM_WORLD, evens, &cc);
    CHECK((rank % 2 == 0) == (cc != MPI_COMM_NULL), "create: non-members get MPI_COMM_NULL");
    if (cc != MPI_COMM_NULL) { check_sum(cc, cm, k, "create evens"); MPI_Comm_free(&cc); }
    /* Comm_create_group: only the evens call it. */
    if (rank % 2 == 0) {
        MPI_Comm_create_group(MPI_COMM_WORLD, evens, 42, &cc);
        check_sum(cc, cm, k, "create_group");
        MPI_Comm_free(&cc);
    }
    /* Split_type shared: everyone. */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &cc);
    MPI_Comm_compare(MPI_COMM_WORLD, cc, &res);
    CHECK(res == MPI_CONGRUENT, "split_type shared congruent to world");
    MPI_Comm_free(&cc);
    /* The hardware types (MPI-4.0): guided by "mpi_hw_resource_type"; the machine
     * ("mpi_shared_memory") is everyone, MPI_INFO_NULL, no key or a resource shmpi
     * does not know give MPI_COMM_NULL; unguided finds no level below the machine. */
    MPI_Info hw;
    MPI_Info_create(&hw);
    MPI_Info_set(hw, "mpi_hw_resource_type", "mpi_shared_memory");
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, hw, &cc);
    CHECK(cc != MPI_COMM_NULL, "hw_guided mpi_shared_memory gave MPI_COMM_NULL");
    if (cc != MPI_COMM_NULL) {
        MPI_Comm_compare(MPI_COMM_WORLD, cc, &res);
        CHECK(res == MPI_CONGRUENT, "hw_guided mpi_shared_memory congruent to world");
        MPI_Comm_free(&cc);
    }
    MPI_Info_set(hw, "mpi_hw_resource_type", "socket");
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, hw, &cc);
    CHECK(cc == MPI_COMM_NULL, "hw_guided with an unknown resource");
    MPI_Info_delete(hw, "mpi_hw_resource_type");
    MPI_Info_set(hw, "shmem_topo", "core");
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, hw, &cc);
    CHECK(cc == MPI_COMM_NULL, "hw_guided without the key");
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, MPI_INFO_NULL, &cc);
    CHECK(cc == MPI_COMM_NULL, "hw_guided with MPI_INFO_NULL");
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, rank, MPI_INFO_NULL, &cc);
    CHECK(cc == MPI_COMM_NULL, "hw_unguided");
    MPI_Info_free(&hw);
    MPI_Group_free(&world); MPI_Group_free(&evens); MPI_Group_free(&odds);
    MPI_Group_free(&in); MPI_Group_free(&g2);
    CHECK(world == MPI_GROUP_NULL, "group free sets MPI_GROUP_NULL");

    /* 64 live communicators, each reducing. */
    MPI_Comm many[64];
    for (int i = 0; i < 64; i++) MPI_Comm_dup(i ? many[i - 1] : MPI_COMM_WORLD, &many[i]);
    int all[64];
    for (int i = 0; i < size; i++) all[i] = i;
    for (int i = 0; i < 64; i += 9) check_sum(many[i], all, size, "64 live");
    for (int i = 63; i >= 0; i--) MPI_Comm_free(&many[i]);
    /* Create and free 10,000 communicators: context ids and arena channels are reused and
     * memory stays flat (resident set measured after a warm-up). */
    long rss0 = 0, rss1 = 0;
    for (int i = 0; i < 10000; i++) {
        MPI_Comm t;
        if (i % 2) MPI_Comm_dup(MPI_COMM_WORLD, &t);
        else MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &t);
        MPI_Comm_free(&t);
        if (i == 500 || i == 9999) {
            FILE *f = fopen("/proc/self/statm", "r");
            long pages = 0, res = 0;
            if (f) { if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0; fclose(f); }
            if (i == 500) rss0 = res; else rss1 = res;
        }
    }
    /* (Not under the sanitizers, whose runs set SHMPI_TEST_QUICK: their allocators keep
     * freed blocks in quarantine, so the resident set grows with any malloc churn.) */
    if (!getenv("SHMPI_TEST_QUICK"))
        CHECK(rss1 - rss0 < 1024, "resident set grew by %ld pages over 9,500 create/free", rss1 - rss0);
    check_sum(MPI_COMM_WORLD, all, size, "after 10,000 create/free");
    /* Errors: colour < 0, freeing MPI_COMM_WORLD. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_split(MPI_COMM_WORLD, -5, 0, &cc), cls;
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_ARG, "negative colour: class %d", cls);
    MPI_Comm w = MPI_COMM_WORLD;
    rc = MPI_Comm_free(&w);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM, "freeing MPI_COMM_WORLD: class %d", cls);
    MPI_Comm_free(&half);
    free(got);

    int tot;
    MPI_Allreduce(&failures, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("comm_groups: np=%d: %s\n", size, tot ? "FAILED" : "ok");
    MPI_Finalize();
    return tot ? 1 : 0;
}
