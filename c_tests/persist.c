/* Persistent collectives (MPI-4 MPI_*_init + MPI_Start/MPI_Startall) and MPI_Info:
 * the same request started many times sees the buffers' current contents each time,
 * checked against a sequential oracle; the rules for active / inactive requests. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int rank, size, failures;
#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            failures++;                                                     \
            fprintf(stderr, "rank %d: FAIL line %d: ", rank, __LINE__);      \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
        }                                                                   \
    } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Info. */
    MPI_Info info, copy;
    MPI_Info_create(&info);
    MPI_Info_set(info, "hint", "fast");
    MPI_Info_set(info, "other", "1");
    MPI_Info_set(info, "hint", "exact");
    int nkeys, flag, vlen;
    char val[64], key[MPI_MAX_INFO_KEY];
    MPI_Info_get_nkeys(info, &nkeys);
    MPI_Info_get(info, "hint", sizeof val - 1, val, &flag);
    CHECK(nkeys == 2 && flag && strcmp(val, "exact") == 0, "info set/get: %d %d %s", nkeys, flag, val);
    MPI_Info_get_nthkey(info, 1, key);
    MPI_Info_get_valuelen(info, "other", &vlen, &flag);
    CHECK(strcmp(key, "other") == 0 && vlen == 1 && flag, "nthkey/valuelen");
    MPI_Info_dup(info, &copy);
    MPI_Info_delete(copy, "hint");
    MPI_Info_get(copy, "hint", sizeof val - 1, val, &flag);
    CHECK(!flag, "deleted key still there");
    MPI_Info_get(info, "absent", sizeof val - 1, val, &flag);
    CHECK(!flag, "absent key found");
    MPI_Info_free(&copy);
    CHECK(copy == MPI_INFO_NULL, "info free");

    /* One persistent Allreduce started 20 times with new data each time. */
    enum { N = 1000 };
    static double x[N], y[N];
    MPI_Request r;
    MPI_Allreduce_init(x, y, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, info, &r);
    for (int it = 0; it < 20; it++) {
        for (int i = 0; i < N; i++) x[i] = (double)(rank + 1) * (i + it);
        MPI_Start(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(r != MPI_REQUEST_NULL, "a persistent request stays allocated after Wait");
        int bad = 0;
        for (int i = 0; i < N; i++) bad += y[i] != (double)size * (size + 1) / 2 * (i + it);
        CHECK(!bad, "iteration %d: %d wrong", it, bad);
    }
    /* Wait on an inactive persistent request returns at once. */
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    /* Several at once with Startall; Testall loop. */
    MPI_Request q[4];
    int root = size - 1, bc[3], a2a_s[64], a2a_r[64];
    double red = 0;
    MPI_Reduce_init(&x[0], &red, 1, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]);
    MPI_Bcast_init(bc, 3, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]);
    MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]);
    MPI_Alltoall_init(a2a_s, 1, MPI_INT, a2a_r, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &q[3]);
    for (int it = 0; it < 5; it++) {
        x[0] = rank * 10 + it;
        for (int k = 0; k < 3; k++) bc[k] = rank == 0 ? it * 100 + k : -1;
        for (int j = 0; j < size; j++) a2a_s[j] = it * 1000 + rank * 10 + j;
        MPI_Startall(4, q);
        do { MPI_Testall(4, q, &flag, MPI_STATUSES_IGNORE); } while (!flag);
        if (rank == root) CHECK(red == (size - 1) * 10 + it, "persistent Reduce %d: %g", it, red);
        for (int k = 0; k < 3; k++) CHECK(bc[k] == it * 100 + k, "persistent Bcast %d", it);
        for (int j = 0; j < size; j++) CHECK(a2a_r[j] == it * 1000 + j * 10 + rank, "persistent Alltoall %d", it);
    }
    /* Persistent collectives are matched by the order of their _init calls and may be
     * started in any order, a different one on each process (MPI-4.0 6.13): three
     * requests started in a rank- and round-dependent order, and a blocking Allreduce
     * on the same communicator before or after the starts. */
    {
        int bval = -1, bsum = 0, one = 1, asum = 0;
        double mx = -1, mine = 0;
        MPI_Request o[3];
        MPI_Bcast_init(&bval, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &o[0]);
        MPI_Allreduce_init(&one, &asum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &o[1]);
        MPI_Reduce_init(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &o[2]);
        static const int orders[6][3] = {{0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {2, 0, 1}, {0, 2, 1}, {1, 2, 0}};
        for (int round = 0; round < 12; round++) {
            const int *ord = orders[(rank * 5 + round) % 6];
            bval = rank == 0 ? 1000 + round : -1;
            mine = rank * 3.0 + round;
            asum = mx = -1;
            int blocking_first = (rank + round) % 2;
            if (blocking_first) MPI_Allreduce(&one, &bsum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            for (int k = 0; k < 3; k++) MPI_Start(&o[ord[k]]);
            if (!blocking_first) MPI_Allreduce(&one, &bsum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            MPI_Waitall(3, o, MPI_STATUSES_IGNORE);
            CHECK(bval == 1000 + round, "round %d: Bcast gave %d", round, bval);
            CHECK(asum == size && bsum == size, "round %d: Allreduce gave %d, blocking %d", round, asum, bsum);
            if (rank == 0) CHECK(mx == (size - 1) * 3.0 + round, "round %d: Reduce gave %g", round, mx);
        }
        for (int k = 0; k < 3; k++) MPI_Request_free(&o[k]);
    }
    /* The same for neighbourhood collectives on a periodic ring: two requests started
     * in opposite orders on even and odd ranks. */
    if (size >= 3) {
        MPI_Comm ring;
        int dims[1] = {size}, periods[1] = {1};
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
        int a = 0, b = 0, ga[2], gb[2];
        MPI_Request nq[2];
        MPI_Neighbor_allgather_init(&a, 1, MPI_INT, ga, 1, MPI_INT, ring, MPI_INFO_NULL, &nq[0]);
        MPI_Neighbor_allgather_init(&b, 1, MPI_INT, gb, 1, MPI_INT, ring, MPI_INFO_NULL, &nq[1]);
        int left = (rank + size - 1) % size, right = (rank + 1) % size;
        for (int round = 0; round < 4; round++) {
            a = 100 * round + rank;
            b = -(100 * round + rank);
            ga[0] = ga[1] = gb[0] = gb[1] = 7;
            int first = (rank + round) % 2;
            MPI_Start(&nq[first]);
            MPI_Start(&nq[1 - first]);
            MPI_Waitall(2, nq, MPI_STATUSES_IGNORE);
            CHECK(ga[0] == 100 * round + left && ga[1] == 100 * round + right &&
                      gb[0] == -(100 * round + left) && gb[1] == -(100 * round + right),
                  "round %d: neighbour allgathers gave %d %d and %d %d", round, ga[0], ga[1], gb[0], gb[1]);
        }
        MPI_Request_free(&nq[0]);
        MPI_Request_free(&nq[1]);
        MPI_Comm_free(&ring);
    }
    /* Many more requests over the program's life than there are communicator contexts
     * (each request's own one goes with it). */
    for (int i = 0; i < 2500; i++) {
        int v = i + rank, s = 0;
        MPI_Request t;
        MPI_Allreduce_init(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &t);
        MPI_Start(&t);
        MPI_Wait(&t, MPI_STATUS_IGNORE);
        MPI_Request_free(&t);
        if (s != size * i + size * (size - 1) / 2) {
            CHECK(0, "request %d: sum %d", i, s);
            break;
        }
    }
    /* Rules: starting an active request, freeing an active one -> MPI_ERR_REQUEST. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc, cls;
    MPI_Start(&r);
    rc = MPI_Start(&r);
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_REQUEST, "starting an active request: class %d", cls);
    MPI_Request r2 = r;
    rc = MPI_Request_free(&r2);
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_REQUEST, "freeing an active request: class %d", cls);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    /* An argument error comes back from the _init call. */
    MPI_Request bad;
    rc = MPI_Allreduce_init(x, y, -3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &bad);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "init with a negative count: class %d", cls);
    for (int k = 0; k < 4; k++) MPI_Request_free(&q[k]);
    MPI_Request_free(&r);
    CHECK(r == MPI_REQUEST_NULL, "freed persistent request");
    MPI_Info_free(&info);
    int tot;
    MPI_Allreduce(&failures, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("persist: np=%d: %s\n", size, tot ? "FAILED" : "ok");
    MPI_Finalize();
    return tot ? 1 : 0;
}
