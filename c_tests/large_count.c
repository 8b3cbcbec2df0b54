/* MPI-4 large-count (_c) reductions: every form at small counts checked against a
 * sequential oracle, then MPI_Allreduce_c and MPI_Reduce_local_c on more than 2^31
 * elements (a count that does not fit in an int), with predefined ops and with user
 * functions of MPI_Op_create_c (handed the whole count) and MPI_Op_create (at most
 * INT_MAX elements a call). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

static long calls;
static MPI_Count longest, longest_i;

static void xor8_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt) {
    (void)dt;
    calls++;
    if (*len > longest) longest = *len;
    const int8_t *x = in;
    int8_t *y = inout;
    for (MPI_Count i = 0; i < *len; i++) y[i] ^= x[i];
}

static void xor8_i(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    calls++;
    if (*len > longest_i) longest_i = *len;
    const int8_t *x = in;
    int8_t *y = inout;
    for (int i = 0; i < *len; i++) y[i] ^= x[i];
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum { N = 50 };
    long x[N * 8], y[N * 8];
    MPI_Count n = N;
    for (int i = 0; i < N * 8; i++) x[i] = rank * 1000 + i;
    long sum_r = (long)size * (size - 1) / 2 * 1000;
    MPI_Allreduce_c(x, y, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) CHECK(y[i] == sum_r + (long)size * i, "Allreduce_c %d", i);
    MPI_Reduce_c(x, y, n, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) for (int i = 0; i < N; i++) CHECK(y[i] == (size - 1) * 1000 + i, "Reduce_c %d", i);
    MPI_Reduce_scatter_block_c(x, y, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) CHECK(y[i] == sum_r + (long)size * (rank * N + i), "Reduce_scatter_block_c %d", i);
    MPI_Count counts[64];
    for (int i = 0; i < size; i++) counts[i] = i % 2 ? 3 : 7;
    long lo = 0;
    for (int i = 0; i < rank; i++) lo += counts[i];
    MPI_Reduce_scatter_c(x, y, counts, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < counts[rank]; i++) CHECK(y[i] == sum_r + (long)size * (lo + i), "Reduce_scatter_c %d", i);
    MPI_Scan_c(x, y, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) CHECK(y[i] == (long)rank * (rank + 1) / 2 * 1000 + (long)(rank + 1) * i, "Scan_c %d", i);
    MPI_Request r;
    MPI_Iallreduce_c(x, y, n, MPI_LONG, MPI_MIN, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++) CHECK(y[i] == i, "Iallreduce_c %d", i);
    MPI_Allreduce_init_c(x, y, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    MPI_Start(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Request_free(&r);
    for (int i = 0; i < N; i++) CHECK(y[i] == sum_r + (long)size * i, "Allreduce_init_c %d", i);
    MPI_Count tsize, lb, ext;
    MPI_Type_size_c(MPI_DOUBLE_INT, &tsize);
    MPI_Type_get_extent_c(MPI_DOUBLE_INT, &lb, &ext);
    CHECK(tsize == 12 && lb == 0 && ext == 16, "Type_size_c / get_extent_c: %ld %ld %ld", (long)tsize, (long)lb, (long)ext);

    /* Past 2^31 elements. */
    const MPI_Count big = ((MPI_Count)1 << 31) + 4099;
    int8_t *a = malloc((size_t)big), *b = malloc((size_t)big);
    if (!a || !b) MPI_Abort(MPI_COMM_WORLD, 2);
    for (MPI_Count i = 0; i < big; i++) a[i] = (int8_t)(i % 7);
    MPI_Allreduce_c(a, b, big, MPI_INT8_T, MPI_SUM, MPI_COMM_WORLD);
    long bad = 0;
    for (MPI_Count i = 0; i < big; i++) bad += b[i] != (int8_t)((i % 7) * size);
    CHECK(!bad, "Allreduce_c over %ld elements: %ld wrong", (long)big, bad);
    MPI_Reduce_local_c(a, b, big, MPI_INT8_T, MPI_BXOR);
    bad = 0;
    for (MPI_Count i = 0; i < big; i += 4093) bad += b[i] != (int8_t)(((i % 7) * size) ^ (i % 7));
    bad += b[big - 1] != (int8_t)((((big - 1) % 7) * size) ^ ((big - 1) % 7));
    CHECK(!bad, "Reduce_local_c over %ld elements: %ld wrong", (long)big, bad);
    /* A user function of MPI_Op_create_c gets the whole count in one call; one of
     * MPI_Op_create gets at most INT_MAX elements a call. Both undo the BXOR above. */
    MPI_Op xc, xi;
    MPI_Op_create_c(xor8_c, 1, &xc);
    MPI_Op_create(xor8_i, 1, &xi);
    MPI_Reduce_local_c(a, b, big, MPI_INT8_T, xc);
    CHECK(calls == 1 && longest == big, "MPI_Op_create_c function: %ld calls, longest %ld", calls, (long)longest);
    MPI_Reduce_local_c(a, b, big, MPI_INT8_T, xi);
    CHECK(calls == 3 && longest_i == INT32_MAX, "MPI_Op_create function: %ld calls in all, longest %ld", calls, (long)longest_i);
    MPI_Reduce_local_c(a, b, big, MPI_INT8_T, xc);
    bad = 0;
    for (MPI_Count i = 0; i < big; i += 4093) bad += b[i] != (int8_t)((i % 7) * size);
    bad += b[big - 1] != (int8_t)(((big - 1) % 7) * size);
    CHECK(!bad, "Reduce_local_c with user ops over %ld elements: %ld wrong", (long)big, bad);
    MPI_Op_free(&xc);
    MPI_Op_free(&xi);
    free(a);
    free(b);
    int tot;
    MPI_Allreduce(&failures, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("large_count: np=%d: %s\n", size, tot ? "FAILED" : "ok");
    MPI_Finalize();
    return tot ? 1 : 0;
}
