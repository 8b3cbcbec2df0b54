/* Collective argument agreement: ranks that disagree on count, op, root, recvcounts or
 * on which collective they call all get the same error (right class, both ranks named),
 * nothing hangs, and the communicator keeps working for correct calls. */
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

static void expect(int rc, int cls_want, const char *needle, const char *what) {
    int cls, len;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    CHECK(rc != MPI_SUCCESS && cls == cls_want, "%s: class %d, want %d (%s)", what, cls, cls_want, msg);
    CHECK(strstr(msg, needle) != NULL, "%s: message lacks '%s': %s", what, needle, msg);
}

static void still_works(void) {
    double one = 1, s = 0;
    int rc = MPI_Allreduce(&one, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS && s == size, "a correct Allreduce after an error: rc %d sum %g", rc, s);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size < 2) { MPI_Finalize(); return 0; }
    double x[64] = {0}, y[64];
    int last = size - 1;
    char want[128];

    snprintf(want, sizeof want, "rank 0 passed count=10 MPI_DOUBLE but rank %d passed count=12 MPI_DOUBLE", last);
    expect(MPI_Allreduce(x, y, rank == last ? 12 : 10, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT, want, "count");
    still_works();
    expect(MPI_Reduce(x, y, 3, MPI_DOUBLE, rank == 1 ? MPI_MAX : MPI_SUM, 0, MPI_COMM_WORLD), MPI_ERR_OP, "rank 0 passed op=MPI_SUM but rank 1 passed op=MPI_MAX", "op");
    still_works();
    expect(MPI_Bcast(x, 3, MPI_DOUBLE, rank == 1 ? 1 : 0, MPI_COMM_WORLD), MPI_ERR_ROOT, "rank 0 passed root=0 but rank 1 passed root=1", "root");
    still_works();
    expect(MPI_Reduce(x, y, 4, rank == 1 ? MPI_INT : MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "MPI_INT", "type");
    still_works();
    int rc = rank == 0 ? MPI_Bcast(x, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD) : MPI_Allreduce(x, y, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    expect(rc, MPI_ERR_NOT_SAME, "rank 0 called MPI_Bcast but rank 1 called MPI_Allreduce", "kind");
    still_works();
    int counts[64];
    for (int i = 0; i < size; i++) counts[i] = 1 + (rank == 1 && i == 0);
    expect(MPI_Reduce_scatter(x, y, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_NOT_SAME, "different recvcounts", "recvcounts");
    still_works();
    /* Nonblocking: the error comes back from MPI_Wait. */
    MPI_Request r;
    MPI_Iallreduce(x, y, rank == last ? 2 : 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    expect(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_ERR_COUNT, "MPI_Iallreduce", "nonblocking");
    still_works();
    int tot;
    MPI_Allreduce(&failures, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("agree: np=%d: %s\n", size, tot ? "FAILED" : "ok");
    MPI_Finalize();
    return tot ? 1 : 0;
}
