/* Graph and distributed graph topologies: MPI_Graph_create (on all ranks and on fewer,
 * with self-loops and repeated edges at small sizes), MPI_Graphdims_get/Graph_get/
 * Graph_neighbors_count/Graph_neighbors against the index/edges built here, messages
 * along every edge, MPI_Graph_map; MPI_Dist_graph_create_adjacent (weighted, with
 * MPI_UNWEIGHTED, with MPI_WEIGHTS_EMPTY) and MPI_Dist_graph_create (edges named by
 * other processes than their source) against the edge lists computed here, with
 * messages along every edge; MPI_Topo_test, dup, and the error classes. */
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

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* A symmetric graph on n nodes: i's neighbours are i+1, i-1 and (n even, n >= 4)
 * i + n/2, modulo n. At n = 1 and 2 this has self-loops and repeated edges. */
static int build_graph(int n, int *index, int *edges) {
    int e = 0;
    for (int i = 0; i < n; i++) {
        edges[e++] = (i + 1) % n;
        edges[e++] = (i - 1 + n) % n;
        if (n >= 4 && n % 2 == 0) edges[e++] = (i + n / 2) % n;
        index[i] = e;
    }
    return e;
}

/* Sends my rank to each of `nb` neighbours and receives one int from each; in a
 * symmetric graph each neighbour's value is its rank. */
static void exchange(MPI_Comm c, int me, int nb, const int *out, int nin, const int *in, const char *what) {
    MPI_Request *rq = malloc((nb + nin + 1) * sizeof *rq);
    int *got = malloc((nin + 1) * sizeof *got);
    for (int k = 0; k < nin; k++) MPI_Irecv(&got[k], 1, MPI_INT, in[k], 0, c, &rq[k]);
    for (int k = 0; k < nb; k++) MPI_Isend(&me, 1, MPI_INT, out[k], 0, c, &rq[nin + k]);
    MPI_Waitall(nb + nin, rq, MPI_STATUSES_IGNORE);
    /* Repeated edges carry equal values, so the order of matching does not matter. */
    for (int k = 0; k < nin; k++) CHECK(got[k] == in[k], "%s: got %d from neighbour %d", what, got[k], in[k]);
    free(rq);
    free(got);
}

static void test_graph(int n) {
    int *index = malloc((n + 1) * sizeof *index), *edges = malloc(3 * (n + 1) * sizeof *edges);
    int ne = build_graph(n, index, edges);
    MPI_Comm g;
    int rc = MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 1, &g);
    CHECK(rc == MPI_SUCCESS, "Graph_create(%d nodes) rc %d", n, rc);
    int map;
    MPI_Graph_map(MPI_COMM_WORLD, n, index, edges, &map);
    CHECK(map == (rank < n ? rank : MPI_UNDEFINED), "Graph_map(%d nodes): %d", n, map);
    if (rank >= n) {
        CHECK(g == MPI_COMM_NULL, "rank %d beyond %d nodes got a communicator", rank, n);
        free(index); free(edges);
        return;
    }
    int t, gs, gr, nn, nedges;
    MPI_Comm_size(g, &gs);
    MPI_Comm_rank(g, &gr);
    MPI_Topo_test(g, &t);
    CHECK(gs == n && gr == rank && t == MPI_GRAPH, "graph comm size %d rank %d topo %d", gs, gr, t);
    MPI_Graphdims_get(g, &nn, &nedges);
    CHECK(nn == n && nedges == ne, "Graphdims_get %d %d, want %d %d", nn, nedges, n, ne);
    int *gi = malloc((n + 1) * sizeof *gi), *ge = malloc((ne + 1) * sizeof *ge);
    MPI_Graph_get(g, n, ne, gi, ge);
    CHECK(memcmp(gi, index, n * sizeof(int)) == 0 && memcmp(ge, edges, ne * sizeof(int)) == 0, "Graph_get differs");
    /* Short arrays get the first entries only. */
    int one[2] = {-1, -1};
    MPI_Graph_get(g, 1, 0, one, NULL);
    CHECK(one[0] == index[0] && one[1] == -1, "Graph_get with maxindex 1: %d %d", one[0], one[1]);
    for (int r = 0; r < n; r++) {
        int cnt, nb[4];
        MPI_Graph_neighbors_count(g, r, &cnt);
        int lo = r ? index[r - 1] : 0;
        CHECK(cnt == index[r] - lo, "Graph_neighbors_count(%d) %d", r, cnt);
        MPI_Graph_neighbors(g, r, 4, nb);
        CHECK(memcmp(nb, edges + lo, cnt * sizeof(int)) == 0, "Graph_neighbors(%d)", r);
    }
    int cnt, nb[4];
    MPI_Graph_neighbors_count(g, rank, &cnt);
    MPI_Graph_neighbors(g, rank, 4, nb);
    exchange(g, rank, cnt, nb, cnt, nb, "graph edges");
    /* Dup keeps it. */
    MPI_Comm d;
    MPI_Comm_dup(g, &d);
    MPI_Topo_test(d, &t);
    MPI_Graphdims_get(d, &nn, &nedges);
    CHECK(t == MPI_GRAPH && nn == n && nedges == ne, "dup of a graph communicator: topo %d", t);
    MPI_Comm_free(&d);
    /* Errors. */
    MPI_Comm_set_errhandler(g, MPI_ERRORS_RETURN);
    CHECK(err_class(MPI_Graph_neighbors_count(g, n, &cnt)) == MPI_ERR_RANK, "Graph_neighbors_count of node %d", n);
    CHECK(err_class(MPI_Cart_coords(g, 0, 1, nb)) == MPI_ERR_TOPOLOGY, "Cart_coords on a graph communicator");
    CHECK(err_class(MPI_Dist_graph_neighbors_count(g, nb, nb, nb)) == MPI_ERR_TOPOLOGY, "Dist_graph_neighbors_count on a graph");
    MPI_Comm_free(&g);
    free(gi); free(ge); free(index); free(edges);
}

/* ---- distributed graphs */

static void check_dist(MPI_Comm c, int nin, const int *src, const int *sw, int nout, const int *dst, const int *dw,
                       int weighted, int ordered, const char *what) {
    int t, in, out, w;
    MPI_Topo_test(c, &t);
    MPI_Dist_graph_neighbors_count(c, &in, &out, &w);
    CHECK(t == MPI_DIST_GRAPH && in == nin && out == nout && !!w == !!weighted, "%s: topo %d in %d out %d weighted %d, want %d %d %d",
          what, t, in, out, w, nin, nout, weighted);
    if (in != nin || out != nout) return;
    int *s = malloc((in + 1) * sizeof *s), *swt = malloc((in + 1) * sizeof *swt);
    int *d = malloc((out + 1) * sizeof *d), *dwt = malloc((out + 1) * sizeof *dwt);
    if (weighted) MPI_Dist_graph_neighbors(c, in, s, swt, out, d, dwt);
    else MPI_Dist_graph_neighbors(c, in, s, MPI_UNWEIGHTED, out, d, MPI_UNWEIGHTED);
    if (ordered) {
        CHECK(memcmp(s, src, in * sizeof(int)) == 0 && memcmp(d, dst, out * sizeof(int)) == 0, "%s: neighbours out of order", what);
        if (weighted)
            CHECK(memcmp(swt, sw, in * sizeof(int)) == 0 && memcmp(dwt, dw, out * sizeof(int)) == 0, "%s: weights", what);
    } else {
        /* Compare (rank, weight) pairs as sorted multisets, encoded as rank * 1e6 + w. */
        int *a = malloc((in + out + 1) * sizeof *a), *b = malloc((in + out + 1) * sizeof *b);
        for (int k = 0; k < in; k++) { a[k] = s[k] * 1000000 + (weighted ? swt[k] : 0); b[k] = src[k] * 1000000 + (weighted ? sw[k] : 0); }
        qsort(a, in, sizeof *a, cmp_int);
        qsort(b, in, sizeof *b, cmp_int);
        CHECK(memcmp(a, b, in * sizeof(int)) == 0, "%s: in-edges differ", what);
        for (int k = 0; k < out; k++) { a[k] = d[k] * 1000000 + (weighted ? dwt[k] : 0); b[k] = dst[k] * 1000000 + (weighted ? dw[k] : 0); }
        qsort(a, out, sizeof *a, cmp_int);
        qsort(b, out, sizeof *b, cmp_int);
        CHECK(memcmp(a, b, out * sizeof(int)) == 0, "%s: out-edges differ", what);
        free(a); free(b);
    }
    /* A message along every out-edge; one from every in-edge (each carries its source). */
    exchange(c, rank, out, d, in, s, what);
    free(s); free(swt); free(d); free(dwt);
}

static void test_dist(void) {
    int n = size;
    /* Adjacent: in from r-1 and r+2, out to r+1 and r-2 (consistent on all ranks);
     * weight of edge a->b is 100a+b. */
    int src[2] = {(rank - 1 + n) % n, (rank + 2) % n}, dst[2] = {(rank + 1) % n, (rank - 2 + 2 * n) % n};
    int sw[2] = {100 * src[0] + rank, 100 * src[1] + rank}, dw[2] = {100 * rank + dst[0], 100 * rank + dst[1]};
    MPI_Comm c;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 2, dst, dw, MPI_INFO_NULL, 0, &c);
    check_dist(c, 2, src, sw, 2, dst, dw, 1, 1, "adjacent weighted");
    MPI_Comm d;
    MPI_Comm_dup(c, &d);
    check_dist(d, 2, src, sw, 2, dst, dw, 1, 1, "dup of adjacent");
    MPI_Comm_free(&d);
    MPI_Comm_free(&c);
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 1, &c);
    check_dist(c, 2, src, NULL, 2, dst, NULL, 0, 1, "adjacent unweighted");
    MPI_Comm_free(&c);
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_WEIGHTS_EMPTY, 0, NULL, MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &c);
    check_dist(c, 0, NULL, NULL, 0, NULL, NULL, 1, 1, "adjacent empty weighted");
    MPI_Comm_free(&c);

    /* General: rank r names the edges of source s = (r+1) % n: s -> s+k for
     * k = 1..min(3, n), weight 100s + dest; rank 0 also names s -> 0 (weight 7) for
     * every s. The oracle lists every process's edges. */
    int cap = 4 * n + 8;
    int *msrc = malloc(cap * sizeof(int)), *msw = malloc(cap * sizeof(int));
    int *mdst = malloc(cap * sizeof(int)), *mdw = malloc(cap * sizeof(int));
    int nin = 0, nout = 0;
    for (int p = 0; p < n; p++) {
        int s = (p + 1) % n;
        for (int k = 1; k <= (n < 3 ? n : 3); k++) {
            int t = (s + k) % n, w = 100 * s + t;
            if (t == rank) { msrc[nin] = s; msw[nin++] = w; }
            if (s == rank) { mdst[nout] = t; mdw[nout++] = w; }
        }
        if (p == 0) {
            for (int s2 = 0; s2 < n; s2++) {
                if (rank == 0) { msrc[nin] = s2; msw[nin++] = 7; }
                if (s2 == rank) { mdst[nout] = 0; mdw[nout++] = 7; }
            }
        }
    }
    int ns = rank == 0 ? n + 1 : 1;
    int *sources = malloc(ns * sizeof(int)), *degrees = malloc(ns * sizeof(int));
    int *dests = malloc((3 + n) * sizeof(int)), *weights = malloc((3 + n) * sizeof(int));
    int s = (rank + 1) % n, e = 0;
    sources[0] = s;
    degrees[0] = n < 3 ? n : 3;
    for (int k = 1; k <= degrees[0]; k++) {
        dests[e] = (s + k) % n;
        weights[e] = 100 * s + dests[e];
        e++;
    }
    if (rank == 0) {
        for (int s2 = 0; s2 < n; s2++) {
            sources[1 + s2] = s2;
            degrees[1 + s2] = 1;
            dests[e] = 0;
            weights[e] = 7;
            e++;
        }
    }
    MPI_Dist_graph_create(MPI_COMM_WORLD, ns, sources, degrees, dests, weights, MPI_INFO_NULL, 0, &c);
    check_dist(c, nin, msrc, msw, nout, mdst, mdw, 1, 0, "general weighted");
    /* The order is deterministic: the same call gives the same lists. */
    {
        MPI_Comm c2;
        MPI_Dist_graph_create(MPI_COMM_WORLD, ns, sources, degrees, dests, weights, MPI_INFO_NULL, 0, &c2);
        int a[64], b[64], aw[64], bw[64], x[64], xw[64];
        if (nin <= 64 && nout <= 64) {
            MPI_Dist_graph_neighbors(c, nin, a, aw, nout, x, xw);
            MPI_Dist_graph_neighbors(c2, nin, b, bw, nout, x, xw);
            CHECK(memcmp(a, b, nin * sizeof(int)) == 0 && memcmp(aw, bw, nin * sizeof(int)) == 0, "general: order differs between two equal calls");
        }
        MPI_Comm_free(&c2);
    }
    MPI_Comm_free(&c);
    MPI_Dist_graph_create(MPI_COMM_WORLD, ns, sources, degrees, dests, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
    check_dist(c, nin, msrc, NULL, nout, mdst, NULL, 0, 0, "general unweighted");
    MPI_Comm_free(&c);
    /* Nobody names an edge. */
    MPI_Dist_graph_create(MPI_COMM_WORLD, 0, NULL, NULL, NULL, MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &c);
    check_dist(c, 0, NULL, NULL, 0, NULL, NULL, 1, 1, "general empty");
    MPI_Comm_free(&c);

    /* Errors. */
    int bad = n, neg = -1, rc;
    rc = MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &bad, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
    CHECK(err_class(rc) == MPI_ERR_RANK, "adjacent source %d: class %d", bad, err_class(rc));
    rc = MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, neg, src, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
    CHECK(err_class(rc) == MPI_ERR_ARG, "adjacent indegree -1: class %d", err_class(rc));
    rc = MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, &neg, 1, dst, &neg, MPI_INFO_NULL, 0, &c);
    CHECK(err_class(rc) == MPI_ERR_ARG, "negative weight: class %d", err_class(rc));
    int one = 1;
    rc = MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &rank, &one, &bad, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
    CHECK(err_class(rc) == MPI_ERR_RANK, "general destination %d: class %d", bad, err_class(rc));
    CHECK(err_class(MPI_Dist_graph_neighbors_count(MPI_COMM_WORLD, &one, &one, &one)) == MPI_ERR_TOPOLOGY,
          "Dist_graph_neighbors_count without a topology");
    free(msrc); free(msw); free(mdst); free(mdw); free(sources); free(degrees); free(dests); free(weights);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    test_graph(size);
    if (size > 1) test_graph(size - 1);
    /* Zero nodes: MPI_COMM_NULL everywhere. */
    {
        MPI_Comm g = MPI_COMM_WORLD;
        int rc = MPI_Graph_create(MPI_COMM_WORLD, 0, NULL, NULL, 0, &g);
        CHECK(rc == MPI_SUCCESS && g == MPI_COMM_NULL, "Graph_create with 0 nodes");
    }
    /* Errors. */
    {
        MPI_Comm g;
        int index[2] = {1, 2}, edges[2] = {0, 0}, rc, x;
        rc = MPI_Graph_create(MPI_COMM_WORLD, size + 1, index, edges, 0, &g);
        CHECK(err_class(rc) == MPI_ERR_ARG, "more nodes than processes: class %d", err_class(rc));
        rc = MPI_Graph_map(MPI_COMM_WORLD, size + 1, index, edges, &x);
        CHECK(err_class(rc) == MPI_ERR_ARG, "Graph_map: more nodes than processes: class %d", err_class(rc));
        edges[0] = 1;
        rc = MPI_Graph_create(MPI_COMM_WORLD, 1, index, edges, 0, &g);
        CHECK(err_class(rc) == MPI_ERR_ARG, "edge to node 1 of 1: class %d", err_class(rc));
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, msg, &len);
        CHECK(strstr(msg, "MPI_Graph_create") && strstr(msg, "edges[0]=1"), "message \"%s\"", msg);
        int dec[2] = {2, 1};
        if (size >= 2) {
            rc = MPI_Graph_create(MPI_COMM_WORLD, 2, dec, edges, 0, &g);
            CHECK(err_class(rc) == MPI_ERR_ARG, "decreasing index: class %d", err_class(rc));
        }
        CHECK(err_class(MPI_Graphdims_get(MPI_COMM_WORLD, &x, &x)) == MPI_ERR_TOPOLOGY, "Graphdims_get without a topology");
    }
    test_dist();

    int tot;
    MPI_Allreduce(&failures, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("topo_graph: np=%d: %s\n", size, tot ? "FAILED" : "ok");
    MPI_Finalize();
    return tot ? 1 : 0;
}
