/* Reductions whose datatype is larger than a channel slot: a user operation on a
 * contiguous type of E bytes (E given as argv[1]; the LIST runs it with a tiny
 * SHMPI_SEGMENT, and once with E beyond the default 1 MiB slot). No chunk of the
 * pipeline holds a whole element, so the library takes its big-element path.
 *
 * Each element is a row of 2x2 integer matrices held in doubles (exact); the
 * commutative op adds them, the non-commutative one multiplies them (inout = in * inout,
 * so the result must be M0 * M1 * ... * M(n-1)). Every result is compared, bit for bit,
 * with the sequential left-to-right product computed here. Covered: MPI_Allreduce,
 * MPI_Reduce (every root, in place at the root or not), MPI_Reduce_scatter_block,
 * MPI_Reduce_scatter (uneven and zero counts, in place or not), MPI_Scan, MPI_Exscan, the
 * nonblocking MPI_Iallreduce, and MPI_Allreduce across an intercommunicator. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures;
static long ND; /* doubles per element */

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

static void madd(const double *a, double *b, long nd) {
    for (long k = 0; k < nd; k++) b[k] = a[k] + b[k];
}
/* b = a * b for each 2x2 matrix (row-major, 4 doubles) */
static void mmul(const double *a, double *b, long nd) {
    for (long k = 0; k + 4 <= nd; k += 4) {
        double x0 = a[k] * b[k] + a[k + 1] * b[k + 2], x1 = a[k] * b[k + 1] + a[k + 1] * b[k + 3];
        double x2 = a[k + 2] * b[k] + a[k + 3] * b[k + 2], x3 = a[k + 2] * b[k + 1] + a[k + 3] * b[k + 3];
        b[k] = x0, b[k + 1] = x1, b[k + 2] = x2, b[k + 3] = x3;
    }
}
static int calls_ok = 1;
static MPI_Datatype elem;
static void op_add(void *in, void *inout, int *len, MPI_Datatype *dt) {
    if (*dt != elem) calls_ok = 0;
    madd(in, inout, (long)*len * ND);
}
static void op_mul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    if (*dt != elem) calls_ok = 0;
    mmul(in, inout, (long)*len * ND);
}

/* Rank r's input: small integers, entries of each matrix in 0..2. */
static void input(int r, double *x, long count) {
    for (long k = 0; k < count * ND; k++) x[k] = (double)((r * 7 + k * 13 + (k >> 3)) % 3);
}

/* The sequential fold of ranks lo..hi-1: x_lo op x_lo+1 op ... */
static void oracle(int mul, int lo, int hi, long count, double *out, double *tmp) {
    long nd = count * ND;
    input(hi - 1, out, count);
    for (int r = hi - 2; r >= lo; r--) {
        input(r, tmp, count);
        if (mul) mmul(tmp, out, nd); else madd(tmp, out, nd);
    }
}

static int same(const double *a, const double *b, long nd) {
    return memcmp(a, b, (size_t)nd * sizeof(double)) == 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long ebytes = argc > 1 ? atol(argv[1]) : 1024;
    ND = ebytes / 32 * 4; /* whole matrices */
    MPI_Type_contiguous((int)ND, MPI_DOUBLE, &elem);
    MPI_Type_commit(&elem);
    MPI_Op ops[2];
    MPI_Op_create(op_add, 1, &ops[0]);
    MPI_Op_create(op_mul, 0, &ops[1]);
    const long maxc = 3L * size + 2;
    double *send = malloc(maxc * ND * 8), *recv = malloc(maxc * ND * 8);
    double *want = malloc(maxc * ND * 8), *tmp = malloc(maxc * ND * 8);
    int *counts = malloc(size * sizeof(int));
    long counts_list[] = {1, 3};
    for (int mul = 0; mul < 2; mul++) {
        MPI_Op op = ops[mul];
        const char *oname = mul ? "matrix product" : "matrix sum";
        for (int ci = 0; ci < 2; ci++) {
            long c = counts_list[ci];
            long nd = c * ND;
            oracle(mul, 0, size, c, want, tmp);
            /* Allreduce, out of place and in place */
            for (int ip = 0; ip < 2; ip++) {
                input(rank, ip ? recv : send, c);
                if (!ip) memset(recv, 0xff, nd * 8);
                MPI_Allreduce(ip ? MPI_IN_PLACE : send, recv, (int)c, elem, op, MPI_COMM_WORLD);
                CHECK(same(recv, want, nd), "Allreduce %s count %ld in_place %d", oname, c, ip);
            }
            /* Iallreduce */
            input(rank, send, c);
            MPI_Request rq;
            MPI_Iallreduce(send, recv, (int)c, elem, op, MPI_COMM_WORLD, &rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            CHECK(same(recv, want, nd), "Iallreduce %s count %ld", oname, c);
            /* Reduce at every root */
            for (int root = 0; root < size; root++) {
                for (int ip = 0; ip < 2; ip++) {
                    int inplace = ip && rank == root;
                    input(rank, inplace ? recv : send, c);
                    if (!inplace) memset(recv, 0xff, nd * 8);
                    MPI_Reduce(inplace ? MPI_IN_PLACE : send, recv, (int)c, elem, op, root,
                               MPI_COMM_WORLD);
                    if (rank == root)
                        CHECK(same(recv, want, nd), "Reduce %s count %ld root %d in_place %d", oname,
                              c, root, ip);
                }
            }
            /* Scan and Exscan */
            oracle(mul, 0, rank + 1, c, want, tmp);
            input(rank, send, c);
            MPI_Scan(send, recv, (int)c, elem, op, MPI_COMM_WORLD);
            CHECK(same(recv, want, nd), "Scan %s count %ld", oname, c);
            input(rank, recv, c);
            MPI_Scan(MPI_IN_PLACE, recv, (int)c, elem, op, MPI_COMM_WORLD);
            CHECK(same(recv, want, nd), "Scan in place %s count %ld", oname, c);
            if (rank > 0) oracle(mul, 0, rank, c, want, tmp);
            input(rank, send, c);
            MPI_Exscan(send, recv, (int)c, elem, op, MPI_COMM_WORLD);
            if (rank > 0) CHECK(same(recv, want, nd), "Exscan %s count %ld", oname, c);
        }
        /* Reduce_scatter_block (1 element each) and Reduce_scatter (rank r gets r % 3,
         * so rank 0 gets nothing), out of place and in place */
        long tot = size;
        oracle(mul, 0, size, tot, want, tmp);
        for (int ip = 0; ip < 2; ip++) {
            input(rank, ip ? recv : send, tot);
            MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : send, recv, 1, elem, op, MPI_COMM_WORLD);
            CHECK(same(recv, want + rank * ND, ND), "Reduce_scatter_block %s in_place %d", oname, ip);
        }
        long off = 0, mine = 0;
        tot = 0;
        for (int r = 0; r < size; r++) {
            counts[r] = r % 3;
            if (r < rank) off += counts[r];
            tot += counts[r];
        }
        mine = counts[rank];
        if (tot > 0) {
            oracle(mul, 0, size, tot, want, tmp);
            for (int ip = 0; ip < 2; ip++) {
                input(rank, ip ? recv : send, tot);
                MPI_Reduce_scatter(ip ? MPI_IN_PLACE : send, recv, counts, elem, op, MPI_COMM_WORLD);
                CHECK(same(recv, want + off * ND, mine * ND), "Reduce_scatter %s in_place %d", oname,
                      ip);
            }
        }
        /* Across an intercommunicator: group A = ranks < size/2 (at least one). Each
         * group receives the fold of the other group's inputs, in that group's order. */
        if (size >= 2) {
            int a = size / 2, ina = rank < a;
            MPI_Comm local, inter;
            MPI_Comm_split(MPI_COMM_WORLD, ina, rank, &local);
            MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, ina ? a : 0, 7, &inter);
            int lo = ina ? a : 0, hi = ina ? size : a;
            /* inputs are by world rank; the remote group's ranks are lo..hi-1 in order */
            oracle(mul, lo, hi, 2, want, tmp);
            input(rank, send, 2);
            memset(recv, 0xff, 2 * ND * 8);
            MPI_Allreduce(send, recv, 2, elem, op, inter);
            CHECK(same(recv, want, 2 * ND), "intercomm Allreduce %s", oname);
            MPI_Comm_free(&inter);
            MPI_Comm_free(&local);
        }
    }
    CHECK(calls_ok, "the user function saw a datatype other than the caller's");
    MPI_Op_free(&ops[0]);
    MPI_Op_free(&ops[1]);
    MPI_Type_free(&elem);
    free(send), free(recv), free(want), free(tmp), free(counts);
    int all;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("coll_bigelem: element of %ld bytes: %s\n", ND * 8, all ? "FAILED" : "ok");
    MPI_Finalize();
    return all != 0;
}
