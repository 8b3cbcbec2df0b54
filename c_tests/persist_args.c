/* Persistent collectives keep the arguments of their _init call: the count,
 * displacement and datatype arrays (which the program may overwrite or free once the
 * _init call returns, as mpi4py does, and as MPICH and Open MPI allow) and the
 * derived datatypes it names (which the program may free). Every start must move the
 * buffers' current contents by the arrays of the _init call; each result is checked
 * against a sequential oracle. Covers MPI_Allgatherv, Gatherv, Scatterv, Alltoallv,
 * Alltoallw, Reduce_scatter, Neighbor_alltoallv, and the large-count Alltoallv_c. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
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

enum { STARTS = 3 };

/* An array the program hands to an _init call and then spoils and frees. */
static void *arr(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) MPI_Abort(MPI_COMM_WORLD, 2);
    return p;
}
static void spoil(void *p, size_t bytes) {
    memset(p, 0x5a, bytes);
    free(p);
    /* The freed block is likely handed out again: fill that too. */
    void *q = malloc(bytes ? bytes : 1);
    if (q) memset(q, 0x6b, bytes);
    free(q);
}

/* The value block element j that rank r sends in start s. */
static int val(int s, int r, int j) { return s * 100000 + r * 1000 + j; }

static void allgatherv(void) {
    /* Rank r contributes r + 1 ints at displacement 2 * r * (r + 1) / 2 + r. */
    int *counts = arr(size * sizeof(int)), *displs = arr(size * sizeof(int));
    int total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = r + 1;
        displs[r] = total + r; /* a gap of r ints before each block */
        total = displs[r] + counts[r];
    }
    int *got = calloc(total, sizeof(int)), send[64];
    int *want_at = malloc(size * sizeof(int));
    memcpy(want_at, displs, size * sizeof(int));
    MPI_Request q;
    MPI_Allgatherv_init(send, rank + 1, MPI_INT, got, counts, displs, MPI_INT, MPI_COMM_WORLD,
                        MPI_INFO_NULL, &q);
    spoil(counts, size * sizeof(int));
    spoil(displs, size * sizeof(int));
    for (int s = 0; s < STARTS; s++) {
        for (int j = 0; j <= rank; j++) send[j] = val(s, rank, j);
        for (int i = 0; i < total; i++) got[i] = -1;
        MPI_Start(&q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        int bad = 0, at = 0;
        for (int r = 0; r < size; r++) {
            for (; at < want_at[r]; at++) bad += got[at] != -1;
            for (int j = 0; j <= r; j++, at++) bad += got[at] != val(s, r, j);
        }
        CHECK(!bad, "Allgatherv_init start %d: %d ints wrong", s, bad);
    }
    MPI_Request_free(&q);
    free(got);
    free(want_at);
}

static void gatherv_scatterv(void) {
    int root = size - 1;
    /* At the root, rank r's block is 2 ints at displacement 3 * (size - 1 - r). */
    int *counts = arr(size * sizeof(int)), *displs = arr(size * sizeof(int));
    for (int r = 0; r < size; r++) {
        counts[r] = 2;
        displs[r] = 3 * (size - 1 - r);
    }
    int *big = calloc(3 * size, sizeof(int)), mine[2], back[2];
    MPI_Request q[2];
    MPI_Gatherv_init(mine, 2, MPI_INT, big, counts, displs, MPI_INT, root, MPI_COMM_WORLD,
                     MPI_INFO_NULL, &q[0]);
    MPI_Scatterv_init(big, counts, displs, MPI_INT, back, 2, MPI_INT, root, MPI_COMM_WORLD,
                      MPI_INFO_NULL, &q[1]);
    spoil(counts, size * sizeof(int));
    spoil(displs, size * sizeof(int));
    for (int s = 0; s < STARTS; s++) {
        mine[0] = val(s, rank, 0);
        mine[1] = val(s, rank, 1);
        MPI_Start(&q[0]);
        MPI_Wait(&q[0], MPI_STATUS_IGNORE);
        if (rank == root) {
            int bad = 0;
            for (int r = 0; r < size; r++)
                for (int j = 0; j < 2; j++) bad += big[3 * (size - 1 - r) + j] != val(s, r, j);
            CHECK(!bad, "Gatherv_init start %d: %d ints wrong", s, bad);
            /* Send each rank its own block back, plus one. */
            for (int i = 0; i < 3 * size; i++) big[i] += 1;
        }
        back[0] = back[1] = -1;
        MPI_Start(&q[1]);
        MPI_Wait(&q[1], MPI_STATUS_IGNORE);
        CHECK(back[0] == val(s, rank, 0) + 1 && back[1] == val(s, rank, 1) + 1,
              "Scatterv_init start %d: %d %d", s, back[0], back[1]);
    }
    MPI_Request_free(&q[0]);
    MPI_Request_free(&q[1]);
    free(big);
}

static void alltoallv(void) {
    /* Rank r sends (r + k) % 3 + 1 ints to rank k, packed in rank order. */
    int *sc = arr(size * sizeof(int)), *sd = arr(size * sizeof(int));
    int *rc = arr(size * sizeof(int)), *rd = arr(size * sizeof(int));
    int st = 0, rt = 0;
    for (int k = 0; k < size; k++) {
        sc[k] = (rank + k) % 3 + 1;
        sd[k] = st;
        st += sc[k];
        rc[k] = (k + rank) % 3 + 1;
        rd[k] = rt;
        rt += rc[k];
    }
    int *sb = malloc(st * sizeof(int)), *rb = malloc(rt * sizeof(int));
    int *rcount = malloc(size * sizeof(int)), *rdisp = malloc(size * sizeof(int));
    memcpy(rcount, rc, size * sizeof(int));
    memcpy(rdisp, rd, size * sizeof(int));
    int *sdisp = malloc(size * sizeof(int)), *scount = malloc(size * sizeof(int));
    memcpy(sdisp, sd, size * sizeof(int));
    memcpy(scount, sc, size * sizeof(int));
    MPI_Request q;
    MPI_Alltoallv_init(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                       &q);
    spoil(sc, size * sizeof(int));
    spoil(sd, size * sizeof(int));
    spoil(rc, size * sizeof(int));
    spoil(rd, size * sizeof(int));
    for (int s = 0; s < STARTS; s++) {
        for (int k = 0; k < size; k++)
            for (int j = 0; j < scount[k]; j++) sb[sdisp[k] + j] = val(s, rank, k * 10 + j);
        for (int i = 0; i < rt; i++) rb[i] = -1;
        MPI_Start(&q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        int bad = 0;
        for (int k = 0; k < size; k++)
            for (int j = 0; j < rcount[k]; j++) bad += rb[rdisp[k] + j] != val(s, k, rank * 10 + j);
        CHECK(!bad, "Alltoallv_init start %d: %d ints wrong", s, bad);
    }
    MPI_Request_free(&q);
    free(sb), free(rb), free(rcount), free(rdisp), free(sdisp), free(scount);
}

static void alltoallv_c(void) {
    /* The large-count form: MPI_Count counts, MPI_Aint displacements; 2 ints per pair. */
    MPI_Count *sc = arr(size * sizeof(MPI_Count)), *rc = arr(size * sizeof(MPI_Count));
    MPI_Aint *sd = arr(size * sizeof(MPI_Aint)), *rd = arr(size * sizeof(MPI_Aint));
    for (int k = 0; k < size; k++) {
        sc[k] = rc[k] = 2;
        sd[k] = 2 * (size - 1 - k); /* reversed order in the send buffer */
        rd[k] = 2 * k;
    }
    int *sb = malloc(2 * size * sizeof(int)), *rb = malloc(2 * size * sizeof(int));
    MPI_Request q;
    MPI_Alltoallv_init_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                         &q);
    spoil(sc, size * sizeof(MPI_Count));
    spoil(rc, size * sizeof(MPI_Count));
    spoil(sd, size * sizeof(MPI_Aint));
    spoil(rd, size * sizeof(MPI_Aint));
    for (int s = 0; s < STARTS; s++) {
        for (int k = 0; k < size; k++)
            for (int j = 0; j < 2; j++) sb[2 * (size - 1 - k) + j] = val(s, rank, k * 10 + j);
        for (int i = 0; i < 2 * size; i++) rb[i] = -1;
        MPI_Start(&q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        int bad = 0;
        for (int k = 0; k < size; k++)
            for (int j = 0; j < 2; j++) bad += rb[2 * k + j] != val(s, k, rank * 10 + j);
        CHECK(!bad, "Alltoallv_init_c start %d: %d ints wrong", s, bad);
    }
    MPI_Request_free(&q);
    free(sb), free(rb);
}

static void alltoallw(void) {
    /* Each rank sends every other rank a strided pair (a vector type the program frees
     * after the _init call) and receives it as two contiguous ints. */
    MPI_Datatype pair;
    MPI_Type_vector(2, 1, 3, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int *sc = arr(size * sizeof(int)), *rc = arr(size * sizeof(int));
    int *sd = arr(size * sizeof(int)), *rd = arr(size * sizeof(int));
    MPI_Datatype *stypes = arr(size * sizeof(MPI_Datatype)), *rtypes = arr(size * sizeof(MPI_Datatype));
    for (int k = 0; k < size; k++) {
        sc[k] = 1;
        sd[k] = (int)(6 * k * sizeof(int)); /* bytes */
        stypes[k] = pair;
        rc[k] = 2;
        rd[k] = (int)(2 * k * sizeof(int));
        rtypes[k] = MPI_INT;
    }
    int *sb = malloc(6 * size * sizeof(int)), *rb = malloc(2 * size * sizeof(int));
    MPI_Request q;
    MPI_Alltoallw_init(sb, sc, sd, stypes, rb, rc, rd, rtypes, MPI_COMM_WORLD, MPI_INFO_NULL, &q);
    spoil(sc, size * sizeof(int));
    spoil(rc, size * sizeof(int));
    spoil(sd, size * sizeof(int));
    spoil(rd, size * sizeof(int));
    spoil(stypes, size * sizeof(MPI_Datatype));
    spoil(rtypes, size * sizeof(MPI_Datatype));
    MPI_Type_free(&pair);
    /* A new type may take the freed handle: it must not change the request. */
    MPI_Datatype other;
    MPI_Type_contiguous(5, MPI_DOUBLE, &other);
    MPI_Type_commit(&other);
    for (int s = 0; s < STARTS; s++) {
        for (int k = 0; k < size; k++) {
            sb[6 * k] = val(s, rank, k * 10);
            sb[6 * k + 1] = sb[6 * k + 2] = -7;
            sb[6 * k + 3] = val(s, rank, k * 10 + 1);
            sb[6 * k + 4] = sb[6 * k + 5] = -7;
        }
        for (int i = 0; i < 2 * size; i++) rb[i] = -1;
        MPI_Start(&q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        int bad = 0;
        for (int k = 0; k < size; k++)
            for (int j = 0; j < 2; j++) bad += rb[2 * k + j] != val(s, k, rank * 10 + j);
        CHECK(!bad, "Alltoallw_init start %d: %d ints wrong", s, bad);
    }
    MPI_Request_free(&q);
    MPI_Type_free(&other);
    free(sb), free(rb);
}

static void reduce_scatter(void) {
    /* Rank r receives r % 2 + 1 elements of the sum. */
    int *counts = arr(size * sizeof(int)), *want = malloc(size * sizeof(int));
    int total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = want[r] = r % 2 + 1;
        total += counts[r];
    }
    long *sb = malloc(total * sizeof(long)), rb[2];
    MPI_Request q;
    MPI_Reduce_scatter_init(sb, rb, counts, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q);
    spoil(counts, size * sizeof(int));
    int first = 0;
    for (int r = 0; r < rank; r++) first += want[r];
    for (int s = 0; s < STARTS; s++) {
        for (int i = 0; i < total; i++) sb[i] = (long)val(s, rank, i);
        rb[0] = rb[1] = -1;
        MPI_Start(&q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        int bad = 0;
        for (int j = 0; j < want[rank]; j++) {
            long w = 0;
            for (int r = 0; r < size; r++) w += val(s, r, first + j);
            bad += rb[j] != w;
        }
        if (want[rank] == 1) bad += rb[1] != -1;
        CHECK(!bad, "Reduce_scatter_init start %d: %ld %ld", s, rb[0], rb[1]);
    }
    MPI_Request_free(&q);
    free(sb);
    free(want);
}

static void neighbor_alltoallv(void) {
    /* A periodic ring: neighbours left (rank - 1) and right (rank + 1), one int to the
     * left and two to the right. */
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    int *sc = arr(2 * sizeof(int)), *sd = arr(2 * sizeof(int));
    int *rc = arr(2 * sizeof(int)), *rd = arr(2 * sizeof(int));
    sc[0] = 1, sc[1] = 2, sd[0] = 0, sd[1] = 1;
    rc[0] = 2, rc[1] = 1, rd[0] = 0, rd[1] = 2; /* from the left: its 2; from the right: its 1 */
    int sb[3], rb[3];
    MPI_Request q;
    MPI_Neighbor_alltoallv_init(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, ring, MPI_INFO_NULL, &q);
    spoil(sc, 2 * sizeof(int));
    spoil(sd, 2 * sizeof(int));
    spoil(rc, 2 * sizeof(int));
    spoil(rd, 2 * sizeof(int));
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    for (int s = 0; s < STARTS; s++) {
        for (int j = 0; j < 3; j++) sb[j] = val(s, rank, j);
        rb[0] = rb[1] = rb[2] = -1;
        MPI_Start(&q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        /* From the left neighbour: its sb[1..3]; from the right: its sb[0]. */
        int ok = rb[0] == val(s, left, 1) && rb[1] == val(s, left, 2) && rb[2] == val(s, right, 0);
        CHECK(ok, "Neighbor_alltoallv_init start %d: %d %d %d", s, rb[0], rb[1], rb[2]);
    }
    MPI_Request_free(&q);
    MPI_Comm_free(&ring);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    allgatherv();
    gatherv_scatterv();
    alltoallv();
    alltoallv_c();
    alltoallw();
    reduce_scatter();
    /* (At one or two ranks the left and right neighbours are the same process, whose
     * matching of the two blocks implementations differ on.) */
    if (size >= 3) neighbor_alltoallv();
    int tot;
    MPI_Allreduce(&failures, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("persist_args: np=%d: %s\n", size, tot ? "FAILED" : "ok");
    MPI_Finalize();
    return tot ? 1 : 0;
}
