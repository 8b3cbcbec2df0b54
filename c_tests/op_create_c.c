/* MPI-4 MPI_Op_create_c: user functions with an MPI_Count length, in every reduction,
 * against a sequential oracle and against the same function created with MPI_Op_create.
 * The non-commutative op is the 2x2 integer matrix product (wrapping), so any other
 * operand order gives other values. Also: MPI_Op_commutative, the error for a NULL
 * function, and the lengths the functions are handed. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures;
#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            if (failures++ < 10) {                                          \
                fprintf(stderr, "rank %d: FAIL line %d: ", rank, __LINE__);  \
                fprintf(stderr, __VA_ARGS__);                               \
                fprintf(stderr, "\n");                                      \
            }                                                               \
        }                                                                   \
    } while (0)

typedef struct {
    uint32_t m[4];
} mat;

/* c = a * b (row major, wrapping). */
static mat mul(mat a, mat b) {
    mat c;
    c.m[0] = a.m[0] * b.m[0] + a.m[1] * b.m[2];
    c.m[1] = a.m[0] * b.m[1] + a.m[1] * b.m[3];
    c.m[2] = a.m[2] * b.m[0] + a.m[3] * b.m[2];
    c.m[3] = a.m[2] * b.m[1] + a.m[3] * b.m[3];
    return c;
}

static MPI_Datatype mat_type;
static long calls_c, calls_i, bad_type;
static MPI_Count max_len_c;

static void matmul_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt) {
    calls_c++;
    if (*len > max_len_c) max_len_c = *len;
    if (*dt != mat_type) bad_type++;
    mat *x = in, *y = inout;
    for (MPI_Count i = 0; i < *len; i++) y[i] = mul(x[i], y[i]);
}

static void matmul_i(void *in, void *inout, int *len, MPI_Datatype *dt) {
    calls_i++;
    if (*dt != mat_type) bad_type++;
    mat *x = in, *y = inout;
    for (int i = 0; i < *len; i++) y[i] = mul(x[i], y[i]);
}

static void usum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt) {
    (void)dt;
    calls_c++;
    uint32_t *x = in, *y = inout;
    for (MPI_Count i = 0; i < *len; i++) y[i] += x[i];
}

/* Rank r's element i. */
static mat input(int r, long i) {
    mat a;
    for (int k = 0; k < 4; k++) a.m[k] = (uint32_t)(r * 7919 + i * 31 + k * 3 + (k == r % 4));
    return a;
}

/* x_lo * x_{lo+1} * ... * x_{hi-1} at element i (the standard's order). */
static mat oracle(int lo, int hi, long i) {
    mat acc = input(hi - 1, i);
    for (int r = hi - 2; r >= lo; r--) acc = mul(input(r, i), acc);
    return acc;
}

static int same(mat a, mat b) { return !memcmp(&a, &b, sizeof a); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Type_contiguous(4, MPI_UINT32_T, &mat_type);
    MPI_Type_commit(&mat_type);

    MPI_Op op_c, op_i, sum_c;
    MPI_Op_create_c(matmul_c, 0, &op_c);
    MPI_Op_create(matmul_i, 0, &op_i);
    MPI_Op_create_c(usum_c, 1, &sum_c);
    int commute = -1;
    MPI_Op_commutative(op_c, &commute);
    CHECK(commute == 0, "MPI_Op_commutative(matmul_c) = %d", commute);
    MPI_Op_commutative(sum_c, &commute);
    CHECK(commute == 1, "MPI_Op_commutative(usum_c) = %d", commute);

    /* Counts: none, one, odd, and enough for several chunks of the pipeline. */
    const long counts[] = {0, 1, 7, 1000, 70001};
    enum { MAXN = 70001 * 8 };
    mat *in = malloc(sizeof(mat) * MAXN), *out = malloc(sizeof(mat) * MAXN),
        *out2 = malloc(sizeof(mat) * MAXN);
    if (!in || !out || !out2) MPI_Abort(MPI_COMM_WORLD, 2);
    for (unsigned t = 0; t < sizeof counts / sizeof counts[0]; t++) {
        long n = counts[t];
        for (long i = 0; i < n * size; i++) in[i] = input(rank, i);
        /* MPI_Allreduce with both ops: the same values, the oracle's. */
        MPI_Allreduce(in, out, (int)n, mat_type, op_c, MPI_COMM_WORLD);
        MPI_Allreduce_c(in, out2, n, mat_type, op_i, MPI_COMM_WORLD);
        for (long i = 0; i < n; i++) {
            CHECK(same(out[i], oracle(0, size, i)), "Allreduce(op_c) n=%ld i=%ld", n, i);
            CHECK(same(out2[i], oracle(0, size, i)), "Allreduce_c(op_i) n=%ld i=%ld", n, i);
        }
        /* MPI_Reduce_c to every root, in place at the root every other time. */
        for (int root = 0; root < size; root++) {
            int inplace = root % 2 && rank == root;
            if (inplace) memcpy(out, in, sizeof(mat) * n);
            MPI_Reduce_c(inplace ? MPI_IN_PLACE : in, out, n, mat_type, op_c, root, MPI_COMM_WORLD);
            if (rank == root)
                for (long i = 0; i < n; i++)
                    CHECK(same(out[i], oracle(0, size, i)), "Reduce_c root=%d n=%ld i=%ld", root, n, i);
        }
        /* MPI_Reduce_scatter_block and MPI_Iallreduce. */
        MPI_Reduce_scatter_block(in, out, (int)n, mat_type, op_c, MPI_COMM_WORLD);
        for (long i = 0; i < n; i++)
            CHECK(same(out[i], oracle(0, size, rank * n + i)), "Reduce_scatter_block n=%ld i=%ld", n, i);
        MPI_Request req;
        MPI_Iallreduce(in, out, (int)n, mat_type, op_c, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (long i = 0; i < n; i++)
            CHECK(same(out[i], oracle(0, size, i)), "Iallreduce n=%ld i=%ld", n, i);
        /* MPI_Scan: the prefix x_0 * ... * x_rank. */
        MPI_Scan(in, out, (int)n, mat_type, op_c, MPI_COMM_WORLD);
        for (long i = 0; i < n; i++)
            CHECK(same(out[i], oracle(0, rank + 1, i)), "Scan n=%ld i=%ld", n, i);
        /* MPI_Reduce_local and _c: inout = in * inout. */
        for (long i = 0; i < n; i++) out[i] = input(rank + 1, i);
        MPI_Reduce_local(in, out, (int)n, mat_type, op_c);
        for (long i = 0; i < n; i++)
            CHECK(same(out[i], mul(input(rank, i), input(rank + 1, i))), "Reduce_local n=%ld i=%ld", n, i);
        max_len_c = 0;
        long before = calls_c;
        MPI_Reduce_local_c(in, out, n, mat_type, op_c);
        for (long i = 0; i < n; i++)
            CHECK(same(out[i], mul(input(rank, i), mul(input(rank, i), input(rank + 1, i)))),
                  "Reduce_local_c n=%ld i=%ld", n, i);
        /* One call with the whole count (none for count 0). */
        CHECK(calls_c - before == (n > 0) && max_len_c == n,
              "Reduce_local_c n=%ld: %ld calls, longest %ld", n, calls_c - before, (long)max_len_c);
    }
    CHECK(bad_type == 0, "%ld calls were handed another datatype handle", bad_type);
    CHECK(size == 1 || calls_i > 0, "the MPI_Op_create function was never called");

    /* A commutative count op on a predefined type, with uneven MPI_Reduce_scatter_c. */
    {
        uint32_t u[64 * 8], v[64 * 8];
        MPI_Count rc[64];
        long total = 0, lo = 0;
        for (int r = 0; r < size; r++) {
            rc[r] = r % 3 == 1 ? 0 : 5 + r;
            if (r < rank) lo += rc[r];
            total += rc[r];
        }
        for (long i = 0; i < total; i++) u[i] = (uint32_t)(0xfffffff0u + rank * 977u + (uint32_t)i);
        MPI_Reduce_scatter_c(u, v, rc, MPI_UINT32_T, sum_c, MPI_COMM_WORLD);
        for (long i = 0; i < rc[rank]; i++) {
            uint32_t want = 0;
            for (int r = 0; r < size; r++) want += (uint32_t)(0xfffffff0u + r * 977u + (uint32_t)(lo + i));
            CHECK(v[i] == want, "Reduce_scatter_c(usum_c) i=%ld: %u, want %u", i, v[i], want);
        }
    }

    /* Errors: a NULL function, and a freed op. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Op bad = MPI_OP_NULL;
    int rc = MPI_Op_create_c(NULL, 1, &bad), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_ARG, "MPI_Op_create_c(NULL): class %d", cls);
    MPI_Op gone = sum_c;
    MPI_Op_free(&sum_c);
    CHECK(sum_c == MPI_OP_NULL, "MPI_Op_free did not set MPI_OP_NULL");
    uint32_t one = 1, two = 2;
    rc = MPI_Reduce_local(&one, &two, 1, MPI_UINT32_T, gone);
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_OP, "Reduce_local with a freed op: class %d", cls);

    MPI_Op_free(&op_c);
    MPI_Op_free(&op_i);
    MPI_Type_free(&mat_type);
    free(in);
    free(out);
    free(out2);
    int tot;
    MPI_Allreduce(&failures, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("op_create_c: np=%d: %s\n", size, tot ? "FAILED" : "ok");
    MPI_Finalize();
    return tot ? 1 : 0;
}
