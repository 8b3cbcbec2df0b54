/* Cartesian topologies: MPI_Dims_create (balanced, honouring fixed entries, against a
 * brute-force search and against values measured on MPICH), MPI_Cart_create (grids of
 * 0 to 3 dimensions, grids smaller than the communicator), MPI_Cart_get/Cartdim_get/
 * Cart_rank/Cart_coords against the row-major formula, MPI_Cart_shift against coordinate
 * arithmetic (and messages sent along the shifts), MPI_Cart_sub for every choice of kept
 * dimensions, MPI_Cart_map, MPI_Topo_test, the topology kept by MPI_Comm_dup and not by
 * split/create, and the error classes of bad arguments. */
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

static int err_class(int rc) {
    int c = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
    return c;
}

/* The error string of `rc` must name `func` and contain `what`. */
static void check_msg(int rc, const char *func, const char *what) {
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, func) != NULL && strstr(msg, what) != NULL,
          "error string \"%s\" should name %s and %s", msg, func, what);
}

/* Row-major coordinates of r in dims[0..nd). */
static void coords_of(int nd, const int *dims, int r, int *c) {
    for (int i = nd - 1; i >= 0; i--) {
        c[i] = r % dims[i];
        r /= dims[i];
    }
}
static int rank_of(int nd, const int *dims, const int *c) {
    int r = 0;
    for (int i = 0; i < nd; i++) r = r * dims[i] + c[i];
    return r;
}

/* ---- Dims_create oracle: the least spread (max - min) over all factorisations of n
 * into k factors, by brute force. */
static int best_spread;
static void search(int n, int k, int maxf, int hi, int lo) {
    if (k == 0) {
        if (n == 1 && hi - lo < best_spread) best_spread = hi - lo;
        return;
    }
    for (int f = 1; f <= n && f <= maxf; f++) {
        if (n % f) continue;
        search(n / f, k - 1, f, hi ? hi : f, f);
    }
}
static int least_spread(int n, int k) {
    best_spread = 1 << 30;
    search(n, k, n, 0, 0);
    return best_spread;
}

static void test_dims_create(void) {
    for (int n = 1; n <= 300; n++) {
        for (int k = 1; k <= 4; k++) {
            int d[4] = {0, 0, 0, 0};
            int rc = MPI_Dims_create(n, k, d);
            CHECK(rc == MPI_SUCCESS, "Dims_create(%d, %d) failed", n, k);
            long p = 1;
            for (int i = 0; i < k; i++) {
                p *= d[i];
                if (i) CHECK(d[i] <= d[i - 1], "Dims_create(%d, %d): dims[%d]=%d > dims[%d]=%d", n, k, i, d[i], i - 1, d[i - 1]);
            }
            CHECK(p == n, "Dims_create(%d, %d): product %ld", n, k, p);
            CHECK(d[0] - d[k - 1] == least_spread(n, k), "Dims_create(%d, %d): spread %d, least possible %d",
                  n, k, d[0] - d[k - 1], least_spread(n, k));
        }
    }
    /* Ties and large inputs: the choices MPICH makes (measured on MPICH 4.0). */
    static const struct { int n, k, d[8]; } known[] = {
        {20, 4, {5, 2, 2, 1}},         {360, 3, {10, 6, 6}},         {720, 3, {10, 9, 8}},
        {512, 2, {32, 16}},            {84, 5, {7, 3, 2, 2, 1}},     {1100, 6, {11, 5, 5, 2, 2, 1}},
        {5040, 4, {10, 9, 8, 7}},      {100000, 3, {50, 50, 40}},    {196608, 4, {32, 24, 16, 16}},
        {2147483646, 4, {331, 217, 198, 151}},                       {999999937, 3, {999999937, 1, 1}},
        {735134400, 8, {17, 15, 14, 13, 12, 12, 11, 10}},            {510510, 8, {17, 13, 11, 7, 5, 3, 2, 1}},
    };
    for (size_t t = 0; t < sizeof known / sizeof known[0]; t++) {
        int d[8] = {0};
        MPI_Dims_create(known[t].n, known[t].k, d);
        CHECK(memcmp(d, known[t].d, known[t].k * sizeof(int)) == 0, "Dims_create(%d, %d): got %d %d %d ...",
              known[t].n, known[t].k, d[0], d[1], d[2]);
    }
    /* Fixed entries are kept; the free ones are filled in non-increasing order. */
    {
        int d[4] = {0, 3, 0, 0};
        MPI_Dims_create(72, 4, d);
        CHECK(d[0] == 4 && d[1] == 3 && d[2] == 3 && d[3] == 2, "Dims_create(72, {0,3,0,0}): %d %d %d %d", d[0], d[1], d[2], d[3]);
        int e[3] = {0, 0, 5};
        MPI_Dims_create(60, 3, e);
        CHECK(e[0] == 4 && e[1] == 3 && e[2] == 5, "Dims_create(60, {0,0,5}): %d %d %d", e[0], e[1], e[2]);
        int f[2] = {2, 3};
        CHECK(MPI_Dims_create(6, 2, f) == MPI_SUCCESS && f[0] == 2 && f[1] == 3, "Dims_create all fixed");
        CHECK(MPI_Dims_create(1, 0, NULL) == MPI_SUCCESS, "Dims_create(1, 0)");
    }
    /* Errors (MPI_COMM_WORLD's handler returns them). */
    {
        int d[2] = {0, 7};
        int rc = MPI_Dims_create(12, 2, d);
        CHECK(err_class(rc) == MPI_ERR_DIMS, "12 nodes with a fixed 7: class %d", err_class(rc));
        check_msg(rc, "MPI_Dims_create", "7");
        int e[2] = {-1, 0};
        CHECK(err_class(MPI_Dims_create(12, 2, e)) == MPI_ERR_DIMS, "negative dims entry");
        int f[1] = {0};
        CHECK(err_class(MPI_Dims_create(-3, 1, f)) == MPI_ERR_ARG, "negative nnodes");
        CHECK(err_class(MPI_Dims_create(4, -1, f)) == MPI_ERR_ARG, "negative ndims");
        int g[2] = {2, 2};
        CHECK(err_class(MPI_Dims_create(6, 2, g)) == MPI_ERR_DIMS, "all fixed, wrong product");
    }
}

/* Checks a Cartesian communicator of `nd` dims (world ranks 0..grid-1 in order). */
static void check_cart(MPI_Comm cart, int nd, const int *dims, const int *periods) {
    int t, n, csize, crank;
    MPI_Comm_size(cart, &csize);
    MPI_Comm_rank(cart, &crank);
    int grid = 1;
    for (int i = 0; i < nd; i++) grid *= dims[i];
    CHECK(csize == grid && crank == rank, "cart size %d rank %d (grid %d, world rank %d)", csize, crank, grid, rank);
    MPI_Topo_test(cart, &t);
    CHECK(t == MPI_CART, "Topo_test %d", t);
    MPI_Cartdim_get(cart, &n);
    CHECK(n == nd, "Cartdim_get %d, want %d", n, nd);
    int gd[8], gp[8], gc[8], want[8];
    MPI_Cart_get(cart, nd, gd, gp, gc);
    coords_of(nd, dims, crank, want);
    for (int i = 0; i < nd; i++) {
        CHECK(gd[i] == dims[i] && !!gp[i] == !!periods[i] && gc[i] == want[i],
              "Cart_get dim %d: %d/%d/%d, want %d/%d/%d", i, gd[i], gp[i], gc[i], dims[i], periods[i], want[i]);
    }
    for (int r = 0; r < csize; r++) {
        int c[8], back;
        MPI_Cart_coords(cart, r, nd, c);
        coords_of(nd, dims, r, want);
        CHECK(memcmp(c, want, nd * sizeof(int)) == 0, "Cart_coords(%d)", r);
        MPI_Cart_rank(cart, c, &back);
        CHECK(back == r, "Cart_rank(coords of %d) = %d", r, back);
    }
    /* Shifts against coordinate arithmetic; a message travels along each. */
    for (int dir = 0; dir < nd; dir++) {
        for (int disp = -3; disp <= 3; disp++) {
            int src, dst, exp[2];
            MPI_Cart_shift(cart, dir, disp, &src, &dst);
            for (int s = 0; s < 2; s++) {
                int c[8];
                coords_of(nd, dims, crank, c);
                int x = c[dir] + (s ? disp : -disp);
                if (periods[dir]) x = ((x % dims[dir]) + dims[dir]) % dims[dir];
                if (x < 0 || x >= dims[dir]) exp[s] = MPI_PROC_NULL;
                else { c[dir] = x; exp[s] = rank_of(nd, dims, c); }
            }
            CHECK(src == exp[0] && dst == exp[1], "Cart_shift(dir %d, disp %d) = (%d, %d), want (%d, %d)",
                  dir, disp, src, dst, exp[0], exp[1]);
            int got = -7;
            MPI_Sendrecv(&crank, 1, MPI_INT, dst, dir, &got, 1, MPI_INT, src, dir, cart, MPI_STATUS_IGNORE);
            CHECK(got == (src == MPI_PROC_NULL ? -7 : src), "message along shift dir %d disp %d: %d from %d", dir, disp, got, src);
        }
    }
    /* Periodic coordinates wrap; others out of range are an error. */
    MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN);
    for (int i = 0; i < nd; i++) {
        int c[8], r;
        coords_of(nd, dims, crank, c);
        int orig = c[i];
        c[i] = orig - 3 * dims[i];
        int rc = MPI_Cart_rank(cart, c, &r);
        if (periods[i]) {
            CHECK(rc == MPI_SUCCESS && r == crank, "periodic Cart_rank wrap dim %d: rc %d r %d", i, rc, r);
            c[i] = orig + dims[i] + dims[i];
            rc = MPI_Cart_rank(cart, c, &r);
            CHECK(rc == MPI_SUCCESS && r == crank, "periodic Cart_rank wrap up dim %d", i);
        } else {
            CHECK(err_class(rc) == MPI_ERR_ARG, "non-periodic Cart_rank out of range: class %d", err_class(rc));
            if (i == 0) check_msg(rc, "MPI_Cart_rank", "coords[0]");
        }
    }
    /* Cart_sub for every mask. */
    for (int mask = 0; mask < (1 << nd); mask++) {
        int remain[8], kd = 0, kdims[8], kper[8], my[8];
        coords_of(nd, dims, crank, my);
        for (int i = 0; i < nd; i++) {
            remain[i] = (mask >> i) & 1;
            if (remain[i]) { kdims[kd] = dims[i]; kper[kd] = periods[i]; kd++; }
        }
        MPI_Comm sub;
        MPI_Cart_sub(cart, remain, &sub);
        CHECK(sub != MPI_COMM_NULL, "Cart_sub mask %d gave MPI_COMM_NULL", mask);
        if (sub == MPI_COMM_NULL) continue;
        int ssize, srank, snd, sexp = 1, rexp = 0;
        for (int i = 0; i < nd; i++) if (remain[i]) { sexp *= dims[i]; rexp = rexp * dims[i] + my[i]; }
        MPI_Comm_size(sub, &ssize);
        MPI_Comm_rank(sub, &srank);
        MPI_Cartdim_get(sub, &snd);
        CHECK(ssize == sexp && srank == rexp && snd == kd, "Cart_sub mask %d: size %d rank %d nd %d, want %d %d %d",
              mask, ssize, srank, snd, sexp, rexp, kd);
        if (kd > 0) {
            int sd[8], sp[8], sc[8];
            MPI_Cart_get(sub, kd, sd, sp, sc);
            for (int i = 0; i < kd; i++) CHECK(sd[i] == kdims[i] && !!sp[i] == !!kper[i], "Cart_sub mask %d dim %d", mask, i);
        } else {
            int t;
            MPI_Topo_test(sub, &t);
            CHECK(t == MPI_CART, "zero-dimensional sub-grid: Topo_test %d", t);
        }
        /* The members: every grid point with my coordinates in the dropped dims. */
        long sum = 0, want_sum = 0;
        MPI_Allreduce(&(long){crank}, &sum, 1, MPI_LONG, MPI_SUM, sub);
        for (int r = 0; r < grid; r++) {
            int c[8], same = 1;
            coords_of(nd, dims, r, c);
            for (int i = 0; i < nd; i++) if (!remain[i] && c[i] != my[i]) same = 0;
            if (same) want_sum += r;
        }
        CHECK(sum == want_sum, "Cart_sub mask %d: members sum %ld, want %ld", mask, sum, want_sum);
        MPI_Comm_free(&sub);
    }
    /* Dup keeps the topology; split and create do not. */
    MPI_Comm d, s, c;
    MPI_Comm_dup(cart, &d);
    MPI_Topo_test(d, &t);
    int dd[8], dp[8], dc[8];
    MPI_Cart_get(d, nd, dd, dp, dc);
    CHECK(t == MPI_CART && memcmp(dd, dims, nd * sizeof(int)) == 0, "dup: Topo_test %d", t);
    MPI_Comm_split(cart, 0, crank, &s);
    MPI_Topo_test(s, &t);
    CHECK(t == MPI_UNDEFINED, "split of a Cartesian communicator: Topo_test %d", t);
    MPI_Group g;
    MPI_Comm_group(cart, &g);
    MPI_Comm_create(cart, g, &c);
    MPI_Topo_test(c, &t);
    CHECK(t == MPI_UNDEFINED, "create from a Cartesian communicator: Topo_test %d", t);
    MPI_Group_free(&g);
    MPI_Comm_free(&c);
    MPI_Comm_free(&s);
    MPI_Comm_free(&d);
}

static void test_create(int nd, const int *dims, const int *periods) {
    MPI_Comm cart;
    int grid = 1;
    for (int i = 0; i < nd; i++) grid *= dims[i];
    int rc = MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 1, &cart);
    CHECK(rc == MPI_SUCCESS, "Cart_create rc %d", rc);
    if (rank >= grid) {
        CHECK(cart == MPI_COMM_NULL, "rank %d beyond the grid of %d got a communicator", rank, grid);
        return;
    }
    CHECK(cart != MPI_COMM_NULL, "rank %d in the grid of %d got MPI_COMM_NULL", rank, grid);
    if (cart == MPI_COMM_NULL) return;
    check_cart(cart, nd, dims, periods);
    int map;
    MPI_Cart_map(MPI_COMM_WORLD, nd, dims, periods, &map);
    CHECK(map == rank, "Cart_map %d", map);
    MPI_Comm_free(&cart);
    CHECK(cart == MPI_COMM_NULL, "Comm_free did not reset the handle");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int t;
    MPI_Topo_test(MPI_COMM_WORLD, &t);
    CHECK(t == MPI_UNDEFINED, "Topo_test(MPI_COMM_WORLD) %d", t);
    MPI_Topo_test(MPI_COMM_SELF, &t);
    CHECK(t == MPI_UNDEFINED, "Topo_test(MPI_COMM_SELF) %d", t);

    if (rank == 0) test_dims_create();

    /* Balanced grids of 1, 2 and 3 dimensions, each periodicity pattern. */
    for (int nd = 1; nd <= 3; nd++) {
        int dims[3] = {0, 0, 0};
        MPI_Dims_create(size, nd, dims);
        for (int pm = 0; pm < (1 << nd); pm++) {
            int periods[3];
            for (int i = 0; i < nd; i++) periods[i] = (pm >> i) & 1;
            test_create(nd, dims, periods);
        }
    }
    /* Grids smaller than the communicator: the extra ranks get MPI_COMM_NULL. */
    if (size > 1) {
        int d1[1] = {size - 1}, p1[1] = {1};
        test_create(1, d1, p1);
        int d2[2] = {size / 2, 1}, p2[2] = {0, 1};
        test_create(2, d2, p2);
        int map;
        MPI_Cart_map(MPI_COMM_WORLD, 1, d1, p1, &map);
        CHECK(map == (rank < size - 1 ? rank : MPI_UNDEFINED), "Cart_map of a smaller grid: %d", map);
    }
    /* Zero dimensions: one process (rank 0), MPI_COMM_NULL elsewhere. */
    {
        MPI_Comm z;
        MPI_Cart_create(MPI_COMM_WORLD, 0, NULL, NULL, 0, &z);
        if (rank == 0) {
            int zs, znd, zr = -1, src, dst;
            CHECK(z != MPI_COMM_NULL, "zero-dimensional grid: rank 0 got MPI_COMM_NULL");
            MPI_Comm_size(z, &zs);
            MPI_Cartdim_get(z, &znd);
            MPI_Topo_test(z, &t);
            MPI_Cart_rank(z, NULL, &zr);
            CHECK(zs == 1 && znd == 0 && t == MPI_CART && zr == 0, "zero-dimensional grid: size %d nd %d topo %d rank %d", zs, znd, t, zr);
            MPI_Comm_set_errhandler(z, MPI_ERRORS_RETURN);
            CHECK(err_class(MPI_Cart_shift(z, 0, 1, &src, &dst)) == MPI_ERR_TOPOLOGY, "shift of a zero-dimensional grid");
            MPI_Comm sub;
            MPI_Cart_sub(z, NULL, &sub);
            MPI_Cartdim_get(sub, &znd);
            MPI_Comm_size(sub, &zs);
            CHECK(zs == 1 && znd == 0, "Cart_sub of a zero-dimensional grid: size %d nd %d", zs, znd);
            MPI_Comm_free(&sub);
            MPI_Comm_free(&z);
        } else {
            CHECK(z == MPI_COMM_NULL, "zero-dimensional grid: rank %d got a communicator", rank);
        }
        int map;
        MPI_Cart_map(MPI_COMM_WORLD, 0, NULL, NULL, &map);
        CHECK(map == (rank == 0 ? 0 : MPI_UNDEFINED), "Cart_map of zero dimensions: %d", map);
    }

    /* Errors. */
    {
        MPI_Comm c = MPI_COMM_WORLD;
        int dims[2] = {size + 1, 1}, periods[2] = {0, 0}, rc, x[4];
        rc = MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &c);
        CHECK(err_class(rc) == MPI_ERR_ARG, "grid larger than the communicator: class %d", err_class(rc));
        CHECK(c == MPI_COMM_NULL, "a failed MPI_Cart_create leaves comm_cart set");
        check_msg(rc, "MPI_Cart_create", "more than");
        rc = MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, x);
        CHECK(err_class(rc) == MPI_ERR_DIMS, "Cart_map of a grid too large: class %d", err_class(rc));
        dims[0] = 0;
        rc = MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &c);
        CHECK(err_class(rc) == MPI_ERR_DIMS, "zero extent: class %d", err_class(rc));
        check_msg(rc, "MPI_Cart_create", "dims[0]=0");
        CHECK(err_class(MPI_Cart_create(MPI_COMM_WORLD, -1, dims, periods, 0, &c)) == MPI_ERR_ARG, "negative ndims");
        rc = MPI_Cart_get(MPI_COMM_WORLD, 2, x, x, x);
        CHECK(err_class(rc) == MPI_ERR_TOPOLOGY, "Cart_get without a topology: class %d", err_class(rc));
        CHECK(err_class(MPI_Cartdim_get(MPI_COMM_WORLD, x)) == MPI_ERR_TOPOLOGY, "Cartdim_get without a topology");
        CHECK(err_class(MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, x, x + 1)) == MPI_ERR_TOPOLOGY, "Cart_shift without a topology");
        dims[0] = size;
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        rc = MPI_Cart_shift(c, 1, 1, x, x + 1);
        CHECK(err_class(rc) == MPI_ERR_ARG, "Cart_shift direction 1 of 1 dimension: class %d", err_class(rc));
        check_msg(rc, "MPI_Cart_shift", "direction=1");
        CHECK(err_class(MPI_Cart_coords(c, size, 1, x)) == MPI_ERR_RANK, "Cart_coords of rank %d", size);
        CHECK(err_class(MPI_Cart_coords(c, 0, 0, x)) == MPI_ERR_ARG, "Cart_coords with maxdims 0");
        int g;
        CHECK(err_class(MPI_Graphdims_get(c, &g, &g)) == MPI_ERR_TOPOLOGY, "Graphdims_get on a Cartesian communicator");
        CHECK(err_class(MPI_Dist_graph_neighbors_count(c, &g, &g, &g)) == MPI_ERR_TOPOLOGY, "Dist_graph_neighbors_count on a Cartesian communicator");
        MPI_Comm_free(&c);
        /* Intercommunicators: no topology, and none can be built on them. */
        if (size >= 2) {
            MPI_Comm half, inter;
            MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
            MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 5, &inter);
            MPI_Topo_test(inter, &t);
            CHECK(t == MPI_UNDEFINED, "Topo_test of an intercommunicator: %d", t);
            MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
            dims[0] = 1;
            CHECK(err_class(MPI_Cart_create(inter, 1, dims, periods, 0, &c)) == MPI_ERR_COMM, "Cart_create on an intercommunicator");
            MPI_Comm_free(&inter);
            MPI_Comm_free(&half);
        }
    }

    int tot;
    MPI_Allreduce(&failures, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("topo_cart: np=%d: %s\n", size, tot ? "FAILED" : "ok");
    MPI_Finalize();
    return tot ? 1 : 0;
}
