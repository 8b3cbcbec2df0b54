/* Neighbourhood collectives (MPI_Neighbor_allgather(v), MPI_Neighbor_alltoall(v, w), the
 * nonblocking and the MPI-4 persistent forms) on Cartesian (periodic and not, so with MPI_PROC_NULL
 * neighbours, and with both neighbours one process at np 1 and 2), graph and
 * distributed graph topologies (several edges between two processes at small np),
 * against an oracle computed here from the neighbour lists: receive block i holds what
 * source i sent to its matching destination entry. Also: the program's wildcard receive
 * does not see the library's messages; errors for a communicator without topology and
 * for MPI_IN_PLACE. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures;

#define CHECK(cond, ...)                                                            \
    do {                                                                            \
        if (!(cond)) {                                                              \
            if (failures++ < 10) {                                                  \
                fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                                       \
                fprintf(stderr, "\n");                                              \
            }                                                                       \
        }                                                                           \
    } while (0)

#define MAXN 64
#define K 3 /* elements per block */

enum kind { CART, GRAPH, DIST };

/* The neighbour lists of process r (sources and destinations) in the topology. */
static int lists(MPI_Comm c, enum kind kind, int r, int *src, int *dst, int *nsrc) {
    int n = 0;
    if (kind == CART) {
        int nd, dims[8], periods[8], coords[8];
        MPI_Cartdim_get(c, &nd);
        MPI_Cart_get(c, nd, dims, periods, coords);
        MPI_Cart_coords(c, r, nd, coords);
        for (int d = 0; d < nd; d++)
            for (int dir = -1; dir <= 1; dir += 2) {
                int cc[8];
                memcpy(cc, coords, sizeof cc);
                cc[d] += dir;
                int nb = MPI_PROC_NULL;
                if (periods[d] || (cc[d] >= 0 && cc[d] < dims[d])) {
                    cc[d] = (cc[d] + dims[d]) % dims[d];
                    MPI_Cart_rank(c, cc, &nb);
                }
                src[n] = dst[n] = nb;
                n++;
            }
        *nsrc = n;
        return n;
    }
    if (kind == GRAPH) {
        MPI_Graph_neighbors_count(c, r, &n);
        MPI_Graph_neighbors(c, r, n, src);
        memcpy(dst, src, n * sizeof(int));
        *nsrc = n;
        return n;
    }
    /* DIST: the pattern used to build it */
    src[0] = (r - 1 + size) % size;
    src[1] = (r + 2) % size;
    dst[0] = (r + 1) % size;
    dst[1] = (r - 2 + 2 * size) % size;
    *nsrc = 2;
    return 2;
}

/* For receive block i of this process: which block of its source s arrives there
 * (-1 for MPI_PROC_NULL). Cartesian: entry i^1; otherwise the k-th edge s->me in s's
 * destination order matches the k-th entry s in my source order. */
static int source_block(MPI_Comm c, enum kind kind, const int *src, int i) {
    int s = src[i];
    if (s == MPI_PROC_NULL) return -1;
    if (kind == CART) return i ^ 1;
    int k = 0;
    for (int j = 0; j < i; j++) k += src[j] == s;
    int ssrc[MAXN], sdst[MAXN], sn, nd = lists(c, kind, s, ssrc, sdst, &sn);
    for (int j = 0; j < nd; j++)
        if (sdst[j] == rank && k-- == 0) return j;
    return -2;
}

static int val(int r, int block, int k) { return r * 1000 + block * 10 + k; }

static void run(MPI_Comm c, enum kind kind, const char *what) {
    int src[MAXN], dst[MAXN], nsrc, ndst = lists(c, kind, rank, src, dst, &nsrc);
    int sbuf[MAXN * K], rbuf[MAXN * K], want;

    /* allgather: the same block to every destination */
    for (int k = 0; k < K; k++) sbuf[k] = val(rank, 0, k);
    for (int i = 0; i < nsrc * K; i++) rbuf[i] = -1;
    MPI_Neighbor_allgather(sbuf, K, MPI_INT, rbuf, K, MPI_INT, c);
    for (int i = 0; i < nsrc; i++)
        for (int k = 0; k < K; k++) {
            want = src[i] == MPI_PROC_NULL ? -1 : val(src[i], 0, k);
            CHECK(rbuf[i * K + k] == want, "%s allgather block %d[%d]: %d, expected %d", what, i, k,
                  rbuf[i * K + k], want);
        }

    /* alltoall: block j to destination j */
    for (int j = 0; j < ndst; j++)
        for (int k = 0; k < K; k++) sbuf[j * K + k] = val(rank, j, k);
    for (int i = 0; i < nsrc * K; i++) rbuf[i] = -1;
    MPI_Neighbor_alltoall(sbuf, K, MPI_INT, rbuf, K, MPI_INT, c);
    for (int i = 0; i < nsrc; i++) {
        int b = source_block(c, kind, src, i);
        for (int k = 0; k < K; k++) {
            want = b < 0 ? -1 : val(src[i], b, k);
            CHECK(rbuf[i * K + k] == want, "%s alltoall block %d[%d]: %d, expected %d", what, i, k,
                  rbuf[i * K + k], want);
        }
    }

    /* allgatherv and alltoallv: blocks in reverse order, one element each */
    int counts[MAXN], displs[MAXN], scounts[MAXN], sdispls[MAXN];
    for (int i = 0; i < nsrc; i++) counts[i] = 1, displs[i] = nsrc - 1 - i;
    for (int j = 0; j < ndst; j++) scounts[j] = 1, sdispls[j] = ndst - 1 - j;
    for (int i = 0; i < nsrc; i++) rbuf[i] = -1;
    MPI_Neighbor_allgatherv(sbuf, 1, MPI_INT, rbuf, counts, displs, MPI_INT, c);
    for (int i = 0; i < nsrc; i++) {
        want = src[i] == MPI_PROC_NULL ? -1 : val(src[i], 0, 0);
        CHECK(rbuf[nsrc - 1 - i] == want, "%s allgatherv block %d: %d, expected %d", what, i, rbuf[nsrc - 1 - i],
              want);
    }
    for (int j = 0; j < ndst; j++) sbuf[ndst - 1 - j] = val(rank, j, 0);
    for (int i = 0; i < nsrc; i++) rbuf[i] = -1;
    MPI_Neighbor_alltoallv(sbuf, scounts, sdispls, MPI_INT, rbuf, counts, displs, MPI_INT, c);
    for (int i = 0; i < nsrc; i++) {
        int b = source_block(c, kind, src, i);
        want = b < 0 ? -1 : val(src[i], b, 0);
        CHECK(rbuf[nsrc - 1 - i] == want, "%s alltoallv block %d: %d, expected %d", what, i, rbuf[nsrc - 1 - i],
              want);
    }

    /* alltoallw: block j is K ints sent as a contiguous type of K, received as K ints
     * at byte displacements */
    MPI_Datatype kint, stypes[MAXN], rtypes[MAXN];
    MPI_Aint sd[MAXN], rd[MAXN];
    MPI_Type_contiguous(K, MPI_INT, &kint);
    MPI_Type_commit(&kint);
    for (int j = 0; j < ndst; j++) {
        scounts[j] = 1, stypes[j] = kint, sd[j] = (MPI_Aint)(j * K * sizeof(int));
        for (int k = 0; k < K; k++) sbuf[j * K + k] = val(rank, j, k);
    }
    for (int i = 0; i < nsrc; i++) counts[i] = K, rtypes[i] = MPI_INT, rd[i] = (MPI_Aint)(i * K * sizeof(int));
    for (int i = 0; i < nsrc * K; i++) rbuf[i] = -1;
    MPI_Neighbor_alltoallw(sbuf, scounts, sd, stypes, rbuf, counts, rd, rtypes, c);
    for (int i = 0; i < nsrc; i++) {
        int b = source_block(c, kind, src, i);
        for (int k = 0; k < K; k++) {
            want = b < 0 ? -1 : val(src[i], b, k);
            CHECK(rbuf[i * K + k] == want, "%s alltoallw block %d[%d]: %d, expected %d", what, i, k,
                  rbuf[i * K + k], want);
        }
    }
    MPI_Type_free(&kint);

    /* nonblocking: two alltoalls and an allgather outstanding, waited in reverse order;
     * a wildcard receive of the program's own posted meanwhile sees none of it */
    int sb2[MAXN * K], rb2[MAXN * K], rb3[MAXN * K], mine = -5, token = rank;
    for (int j = 0; j < ndst * K; j++) sb2[j] = sbuf[j] + 500;
    for (int i = 0; i < nsrc * K; i++) rbuf[i] = rb2[i] = rb3[i] = -1;
    MPI_Request user, r[3];
    MPI_Irecv(&mine, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &user);
    MPI_Ineighbor_alltoall(sbuf, K, MPI_INT, rbuf, K, MPI_INT, c, &r[0]);
    MPI_Ineighbor_alltoall(sb2, K, MPI_INT, rb2, K, MPI_INT, c, &r[1]);
    MPI_Ineighbor_allgather(sbuf, K, MPI_INT, rb3, K, MPI_INT, c, &r[2]);
    for (int q = 2; q >= 0; q--) MPI_Wait(&r[q], MPI_STATUS_IGNORE);
    for (int i = 0; i < nsrc; i++) {
        int b = source_block(c, kind, src, i);
        for (int k = 0; k < K; k++) {
            want = b < 0 ? -1 : val(src[i], b, k);
            CHECK(rbuf[i * K + k] == want && rb2[i * K + k] == (b < 0 ? -1 : want + 500),
                  "%s ialltoall block %d[%d]: %d %d, expected %d", what, i, k, rbuf[i * K + k], rb2[i * K + k],
                  want);
            want = src[i] == MPI_PROC_NULL ? -1 : val(src[i], 0, k);
            CHECK(rb3[i * K + k] == want, "%s iallgather block %d[%d]: %d, expected %d", what, i, k,
                  rb3[i * K + k], want);
        }
    }
    int flag = 1;
    MPI_Test(&user, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag, "%s: the program's wildcard receive matched a library message", what);
    int self;
    MPI_Comm_rank(c, &self);
    MPI_Send(&token, 1, MPI_INT, self, 77, c);
    MPI_Wait(&user, MPI_STATUS_IGNORE);
    CHECK(mine == token, "%s: wildcard receive got %d", what, mine);

    /* persistent (MPI-4): alltoall, allgather and alltoallw requests started three times
     * with new send data each time; the alltoallw's derived type is freed right after
     * its MPI_Neighbor_alltoallw_init; between two starts an MPI_Ineighbor_alltoall runs
     * on other buffers and pairs up in issue order */
    MPI_Request p[3];
    int sb4[MAXN * K], rb4[MAXN * K];
    MPI_Neighbor_alltoall_init(sbuf, K, MPI_INT, rbuf, K, MPI_INT, c, MPI_INFO_NULL, &p[0]);
    MPI_Neighbor_allgather_init(sb2, K, MPI_INT, rb3, K, MPI_INT, c, MPI_INFO_NULL, &p[1]);
    MPI_Type_contiguous(K, MPI_INT, &kint);
    MPI_Type_commit(&kint);
    for (int j = 0; j < ndst; j++) scounts[j] = 1, stypes[j] = kint, sd[j] = (MPI_Aint)(j * K * sizeof(int));
    for (int i = 0; i < nsrc; i++) counts[i] = K, rtypes[i] = MPI_INT, rd[i] = (MPI_Aint)(i * K * sizeof(int));
    MPI_Neighbor_alltoallw_init(sbuf, scounts, sd, stypes, rb2, counts, rd, rtypes, c, MPI_INFO_NULL, &p[2]);
    MPI_Type_free(&kint);
    for (int round = 0; round < 3; round++) {
        for (int j = 0; j < ndst; j++)
            for (int k = 0; k < K; k++) sbuf[j * K + k] = val(rank, j, k) + 100 * round, sb4[j * K + k] = -val(rank, j, k);
        for (int k = 0; k < K; k++) sb2[k] = val(rank, 0, k) + 100 * round;
        for (int i = 0; i < nsrc * K; i++) rbuf[i] = rb2[i] = rb3[i] = rb4[i] = -1;
        MPI_Startall(3, p);
        if (round == 1) {
            MPI_Request q;
            MPI_Ineighbor_alltoall(sb4, K, MPI_INT, rb4, K, MPI_INT, c, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
        MPI_Status sts[3];
        MPI_Waitall(3, p, sts);
        for (int i = 0; i < nsrc; i++) {
            int b = source_block(c, kind, src, i);
            for (int k = 0; k < K; k++) {
                want = b < 0 ? -1 : val(src[i], b, k) + 100 * round;
                CHECK(rbuf[i * K + k] == want && rb2[i * K + k] == want,
                      "%s persistent alltoall(w) round %d block %d[%d]: %d %d, expected %d", what, round, i, k,
                      rbuf[i * K + k], rb2[i * K + k], want);
                if (round == 1)
                    CHECK(rb4[i * K + k] == (b < 0 ? -1 : -val(src[i], b, k)),
                          "%s ialltoall between starts block %d[%d]: %d", what, i, k, rb4[i * K + k]);
                want = src[i] == MPI_PROC_NULL ? -1 : val(src[i], 0, k) + 100 * round;
                CHECK(rb3[i * K + k] == want, "%s persistent allgather round %d block %d[%d]: %d, expected %d",
                      what, round, i, k, rb3[i * K + k], want);
            }
        }
    }
    for (int q = 0; q < 3; q++) MPI_Request_free(&p[q]);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    for (int periodic = 0; periodic <= 1; periodic++) {
        int dims[2] = {0, 0}, periods[2] = {periodic, periodic};
        MPI_Dims_create(size, 2, dims);
        MPI_Comm cart;
        MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
        MPI_Comm_rank(cart, &rank);
        run(cart, CART, periodic ? "periodic 2-d grid" : "2-d grid");
        MPI_Comm_free(&cart);
        int d1[1] = {size}, p1[1] = {periodic};
        MPI_Cart_create(MPI_COMM_WORLD, 1, d1, p1, 0, &cart);
        run(cart, CART, periodic ? "ring" : "line");
        MPI_Comm_free(&cart);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    /* a graph: each node linked to the next and the previous (a multigraph for np <= 2) */
    int index[MAXN], edges[2 * MAXN];
    for (int i = 0; i < size; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + 1) % size;
        edges[2 * i + 1] = (i - 1 + size) % size;
    }
    MPI_Comm graph, dist;
    MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph);
    run(graph, GRAPH, "graph");
    MPI_Comm_free(&graph);

    int src[2] = {(rank - 1 + size) % size, (rank + 2) % size};
    int dst[2] = {(rank + 1) % size, (rank - 2 + 2 * size) % size};
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                   &dist);
    run(dist, DIST, "distributed graph");

    /* errors */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(dist, MPI_ERRORS_RETURN);
    int x[4] = {0}, y[4], rc, cls = -1;
    rc = MPI_Neighbor_allgather(x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TOPOLOGY, "no topology: class %d", cls);
    rc = MPI_Neighbor_alltoall(MPI_IN_PLACE, 1, MPI_INT, y, 1, MPI_INT, dist);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "MPI_IN_PLACE: class %d", cls);
    MPI_Comm_free(&dist);

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "FAILED: %d failures\n" : "No Errors\n", total);
    MPI_Finalize();
    return total != 0;
}
