/* MPI_Alloc_mem and MPI_Free_mem: allocations of several sizes (0 included) are
 * distinct, 64-byte aligned and usable as message buffers (an MPI_Allreduce and an
 * MPI_Bcast between such buffers, checked against values computed here); and under
 * MPI_ERRORS_RETURN the errors come back with their classes: a negative size
 * (MPI_ERR_ARG), a NULL baseptr (MPI_ERR_ARG), an invalid info (MPI_ERR_INFO), freeing
 * an address MPI_Alloc_mem did not return or one already freed (MPI_ERR_BASE).
 * MPI_Free_mem(NULL) succeeds, as free(NULL). */
#include <mpi.h>
#include <stdint.h>
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

static int err_class(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Sizes, distinctness, alignment. */
    MPI_Aint sizes[] = {0, 1, 7, 100, 4096, 1 << 20};
    enum { NS = sizeof sizes / sizeof sizes[0] };
    char *p[NS];
    for (int k = 0; k < NS; k++) {
        p[k] = NULL;
        int rc = MPI_Alloc_mem(sizes[k], MPI_INFO_NULL, &p[k]);
        CHECK(rc == MPI_SUCCESS && p[k] != NULL, "MPI_Alloc_mem(%ld) rc=%d p=%p",
              (long)sizes[k], rc, (void *)p[k]);
        CHECK(((uintptr_t)p[k] & 63) == 0, "MPI_Alloc_mem(%ld) = %p is not 64-byte aligned",
              (long)sizes[k], (void *)p[k]);
        if (p[k] && sizes[k] > 0) memset(p[k], k + 1, (size_t)sizes[k]);
        for (int j = 0; j < k; j++) CHECK(p[j] != p[k], "allocations %d and %d share %p", j, k, (void *)p[k]);
    }
    for (int k = 0; k < NS; k++) {
        for (MPI_Aint i = 0; i < sizes[k]; i++)
            if (p[k][i] != (char)(k + 1)) {
                CHECK(0, "allocation %d byte %ld overwritten: %d", k, (long)i, p[k][i]);
                break;
            }
    }
    for (int k = NS - 1; k >= 0; k--) CHECK(MPI_Free_mem(p[k]) == MPI_SUCCESS, "MPI_Free_mem(%d)", k);

    /* As message buffers, with an info object (its keys change nothing). */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    const int n = 10007;
    double *in = NULL, *out = NULL;
    CHECK(MPI_Alloc_mem((MPI_Aint)(n * sizeof(double)), info, &in) == MPI_SUCCESS, "alloc in");
    CHECK(MPI_Alloc_mem((MPI_Aint)(n * sizeof(double)), MPI_INFO_NULL, &out) == MPI_SUCCESS, "alloc out");
    MPI_Info_free(&info);
    for (int i = 0; i < n; i++) in[i] = rank * 0.5 + i;
    MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) {
        double want = 0;
        for (int r = 0; r < size; r++) want += r * 0.5 + i;
        if (out[i] != want) {
            CHECK(0, "allreduce[%d] = %g, want %g", i, out[i], want);
            break;
        }
    }
    int root = size - 1;
    for (int i = 0; i < n; i++) out[i] = rank == root ? -i : 0;
    MPI_Bcast(out, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++)
        if (out[i] != -i) {
            CHECK(0, "bcast[%d] = %g", i, out[i]);
            break;
        }
    CHECK(MPI_Free_mem(in) == MPI_SUCCESS, "free in");
    CHECK(MPI_Free_mem(out) == MPI_SUCCESS, "free out");

    /* Errors. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    void *q = NULL;
    int rc = MPI_Alloc_mem(-1, MPI_INFO_NULL, &q);
    CHECK(err_class(rc) == MPI_ERR_ARG, "negative size: class %d", err_class(rc));
    rc = MPI_Alloc_mem(8, MPI_INFO_NULL, NULL);
    CHECK(err_class(rc) == MPI_ERR_ARG, "NULL baseptr: class %d", err_class(rc));
    MPI_Info gone;
    MPI_Info_create(&gone);
    MPI_Info bad = gone;
    MPI_Info_free(&gone);
    rc = MPI_Alloc_mem(8, bad, &q);
    CHECK(err_class(rc) == MPI_ERR_INFO, "freed info: class %d", err_class(rc));
    double local[4];
    rc = MPI_Free_mem(local);
    CHECK(err_class(rc) == MPI_ERR_BASE, "free of a stack address: class %d", err_class(rc));
    CHECK(MPI_Alloc_mem(64, MPI_INFO_NULL, &q) == MPI_SUCCESS, "alloc after errors");
    rc = MPI_Free_mem((char *)q + 8);
    CHECK(err_class(rc) == MPI_ERR_BASE, "free inside an allocation: class %d", err_class(rc));
    CHECK(MPI_Free_mem(q) == MPI_SUCCESS, "free");
    rc = MPI_Free_mem(q);
    CHECK(err_class(rc) == MPI_ERR_BASE, "double free: class %d", err_class(rc));
    CHECK(MPI_Free_mem(NULL) == MPI_SUCCESS, "MPI_Free_mem(NULL)");
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    rc = MPI_Free_mem(local);
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, "MPI_Free_mem") && strstr(msg, "base="), "message: %s", msg);

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "FAILED\n" : "No Errors\n");
    MPI_Finalize();
    return all != 0;
}
