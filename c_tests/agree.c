/* Collective argument agreement: ranks that disagree on count, op, root, recvcounts or
 * on which collective they call all get the same error (right class, both ranks named),
 * nothing hangs, and the communicator keeps working for correct calls. The
 * data-movement collectives are checked pair by pair (what rank i sends to j is what j
 * expects from i, in bytes and element type); pieces whose signatures match although
 * the datatypes differ (MPI_BYTE against MPI_INT) are no error. */
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

/* A correct data-movement collective after an error: an Allgather of the ranks. */
static void still_moves(void) {
    int mine = rank * 3 + 1, all[64];
    int rc = MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    int ok = rc == MPI_SUCCESS;
    for (int i = 0; ok && i < size; i++) ok = all[i] == i * 3 + 1;
    CHECK(ok, "a correct Allgather after an error: rc %d", rc);
}

static void movement(void) {
    int last = size - 1, one = size > 2 ? 2 : 1;
    int counts[64], displs[64], rcounts[64], rdispls[64];
    MPI_Datatype types[64], rtypes[64];
    int ibuf[1024], jbuf[1024];
    double dbuf[1024], ebuf[1024];
    char want[256];
    int rc;
    for (int i = 0; i < 1024; i++) { ibuf[i] = i; dbuf[i] = i; }

    /* Gatherv: the root expects 10 ints from the last rank, which sends 12. */
    for (int i = 0; i < size; i++) { counts[i] = 10; displs[i] = 16 * i; }
    snprintf(want, sizeof want, "rank 0 expects 40 bytes from rank %d (recvcounts[%d]=10 MPI_INT) but rank %d sends 48 bytes (sendcount=12 MPI_INT)", last, last, last);
    expect(MPI_Gatherv(ibuf, rank == last ? 12 : 10, MPI_INT, jbuf, counts, displs, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, want, "gatherv");
    still_works();
    still_moves();

    /* Nonblocking Gatherv: the error comes from MPI_Wait. */
    MPI_Request r;
    MPI_Igatherv(ibuf, rank == last ? 12 : 10, MPI_INT, jbuf, counts, displs, MPI_INT, 0, MPI_COMM_WORLD, &r);
    expect(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_ERR_TRUNCATE, want, "igatherv");
    still_moves();

    /* Scatterv: the root sends 5 doubles to rank `one`, which expects 4. */
    for (int i = 0; i < size; i++) { counts[i] = 4 + (i == one); displs[i] = 8 * i; }
    snprintf(want, sizeof want, "rank %d expects 32 bytes from rank 0 (recvcount=4 MPI_DOUBLE) but rank 0 sends 40 bytes (sendcounts[%d]=5 MPI_DOUBLE)", one, one);
    expect(MPI_Scatterv(dbuf, counts, displs, MPI_DOUBLE, ebuf, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, want, "scatterv");
    still_moves();

    /* Allgatherv: rank 1 expects 2 doubles from rank 0, which sends 1. */
    for (int i = 0; i < size; i++) { counts[i] = 1 + (rank == 1 && i == 0); displs[i] = 4 * i; }
    expect(MPI_Allgatherv(dbuf, 1, MPI_DOUBLE, ebuf, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD), MPI_ERR_TRUNCATE,
           "rank 1 expects 16 bytes from rank 0 (recvcounts[0]=2 MPI_DOUBLE) but rank 0 sends 8 bytes (sendcount=1 MPI_DOUBLE)", "allgatherv");
    still_moves();

    /* Allgatherv in place: rank 1's own block (recvcounts[1]) is 2 there, 1 elsewhere. */
    for (int i = 0; i < size; i++) { counts[i] = 1 + (rank == 1 && i == 1); displs[i] = 4 * i; }
    expect(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ebuf, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD), MPI_ERR_TRUNCATE,
           "rank 0 expects 8 bytes from rank 1 (recvcounts[1]=1 MPI_DOUBLE) but rank 1 sends 16 bytes (recvcounts[1]=2 MPI_DOUBLE, MPI_IN_PLACE)", "allgatherv in place");
    still_moves();

    /* Alltoallv: rank 0 sends 3 doubles to rank 1, which expects 2 from it. */
    for (int i = 0; i < size; i++) {
        counts[i] = 2 + (rank == 0 && i == 1); displs[i] = 4 * i;
        rcounts[i] = 2; rdispls[i] = 4 * i;
    }
    expect(MPI_Alltoallv(dbuf, counts, displs, MPI_DOUBLE, ebuf, rcounts, rdispls, MPI_DOUBLE, MPI_COMM_WORLD), MPI_ERR_TRUNCATE,
           "rank 1 expects 16 bytes from rank 0 (recvcounts[0]=2 MPI_DOUBLE) but rank 0 sends 24 bytes (sendcounts[1]=3 MPI_DOUBLE)", "alltoallv");
    still_works();

    /* Alltoallw: equal bytes, different element types (rank 1 expects floats from 0). */
    for (int i = 0; i < size; i++) {
        counts[i] = rcounts[i] = 2; displs[i] = rdispls[i] = 16 * i;
        types[i] = MPI_INT;
        rtypes[i] = (rank == 1 && i == 0) ? MPI_FLOAT : MPI_INT;
    }
    expect(MPI_Alltoallw(ibuf, counts, displs, types, jbuf, rcounts, rdispls, rtypes, MPI_COMM_WORLD), MPI_ERR_TYPE,
           "rank 1 expects recvcounts[0]=2 MPI_FLOAT from rank 0 but rank 0 sends sendcounts[1]=2 MPI_INT: the type signatures differ", "alltoallw type");
    still_moves();

    /* The regular forms: Gather, Scatter, Allgather, Alltoall with a count or type off. */
    snprintf(want, sizeof want, "rank 0 expects 8 bytes from rank %d (recvcount=2 MPI_INT) but rank %d sends 12 bytes (sendcount=3 MPI_INT)", last, last);
    expect(MPI_Gather(ibuf, rank == last ? 3 : 2, MPI_INT, jbuf, 2, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, want, "gather");
    snprintf(want, sizeof want, "rank %d expects 24 bytes from rank 0 (recvcount=3 MPI_DOUBLE) but rank 0 sends 16 bytes (sendcount=2 MPI_DOUBLE)", last);
    expect(MPI_Scatter(dbuf, 2, MPI_DOUBLE, ebuf, rank == last ? 3 : 2, MPI_DOUBLE, 0, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, want, "scatter");
    MPI_Datatype st = rank == 1 ? MPI_FLOAT : MPI_INT;
    expect(MPI_Allgather(ibuf, 1, st, jbuf, 1, st, MPI_COMM_WORLD), MPI_ERR_TYPE,
           "rank 0 expects recvcount=1 MPI_INT from rank 1 but rank 1 sends sendcount=1 MPI_FLOAT", "allgather type");
    expect(MPI_Alltoall(ibuf, 2, MPI_INT, jbuf, rank == 0 ? 1 : 2, MPI_INT, MPI_COMM_WORLD), MPI_ERR_TRUNCATE,
           "rank 0 expects 4 bytes from itself (recvcount=1 MPI_INT) but it sends 8 bytes (sendcount=2 MPI_INT)", "alltoall");
    still_moves();

    /* Bcast: the count, then the element type (MPI_BYTE matches anything). */
    expect(MPI_Bcast(ibuf, rank == 1 ? 3 : 2, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT,
           "rank 0 passed count=2 MPI_INT but rank 1 passed count=3 MPI_INT", "bcast count");
    expect(MPI_Bcast(ibuf, 2, rank == 1 ? MPI_FLOAT : MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_TYPE,
           "rank 0 passed count=2 MPI_INT but rank 1 passed count=2 MPI_FLOAT", "bcast type");
    ibuf[0] = rank == 0 ? 4242 : -1;
    rc = MPI_Bcast(ibuf, rank == 1 ? 4 : 1, rank == 1 ? MPI_BYTE : MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS && ibuf[0] == 4242, "a Bcast of MPI_INT received as MPI_BYTE: rc %d, %d", rc, ibuf[0]);
    still_moves();

    /* Matching signatures with different datatypes are no error, and the data arrive:
     * a Gather of ints received as bytes, an Alltoallv of doubles sent as bytes. */
    for (int i = 0; i < 4; i++) ibuf[i] = 100 * rank + i;
    rc = MPI_Gather(ibuf, 4, MPI_INT, jbuf, 4 * (int)sizeof(int), MPI_BYTE, 0, MPI_COMM_WORLD);
    int ok = rc == MPI_SUCCESS;
    for (int i = 0; ok && rank == 0 && i < 4 * size; i++) ok = jbuf[i] == 100 * (i / 4) + i % 4;
    CHECK(ok, "a Gather of MPI_INT into MPI_BYTE: rc %d", rc);
    for (int i = 0; i < size; i++) {
        dbuf[i] = 1000.0 * rank + i; ebuf[i] = -1;
        counts[i] = (int)sizeof(double); displs[i] = 8 * i;
        rcounts[i] = 1; rdispls[i] = i;
    }
    rc = MPI_Alltoallv(dbuf, counts, displs, MPI_BYTE, ebuf, rcounts, rdispls, MPI_DOUBLE, MPI_COMM_WORLD);
    ok = rc == MPI_SUCCESS;
    for (int i = 0; ok && i < size; i++) ok = ebuf[i] == 1000.0 * i + rank;
    CHECK(ok, "an Alltoallv of MPI_BYTE into MPI_DOUBLE: rc %d", rc);
    still_moves();
    still_works();
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    int n = *len * (*dt == MPI_DOUBLE ? 1 : 2);
    for (int k = 0; k < n; k++) ((double *)inout)[k] += ((double *)in)[k];
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
    /* A user-defined op applied to datatypes of different extents (the engine cuts the
     * vector at whole elements), and a predefined op on one rank against a user op on
     * another. */
    MPI_Op uop;
    MPI_Op_create(user_sum, 1, &uop);
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_DOUBLE, &two);
    MPI_Type_commit(&two);
    snprintf(want, sizeof want, "rank 0 applies the user-defined op to a datatype of extent 8 but rank %d to one of extent 16", last);
    expect(MPI_Allreduce(x, y, rank == last ? 2 : 4, rank == last ? two : MPI_DOUBLE, uop, MPI_COMM_WORLD), MPI_ERR_TYPE, want, "user op extents");
    still_works();
    expect(MPI_Allreduce(x, y, 4, MPI_DOUBLE, rank == 1 ? uop : MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP,
           "rank 0 passed op=MPI_SUM but rank 1 passed op=a user-defined op", "user op against MPI_SUM");
    still_works();
    MPI_Type_free(&two);
    MPI_Op_free(&uop);
    /* Nonblocking: the error comes back from MPI_Wait. */
    MPI_Request r;
    MPI_Iallreduce(x, y, rank == last ? 2 : 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    expect(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_ERR_COUNT, "MPI_Iallreduce", "nonblocking");
    still_works();
    movement();

    /* The info hint shmpi_check_args=false turns the check off on a duplicate (and on
     * its duplicates): a count mismatch in a small Bcast then goes unnoticed. */
    MPI_Info info;
    MPI_Comm quiet, quiet2;
    MPI_Info_create(&info);
    MPI_Info_set(info, "shmpi_check_args", "maybe");
    int rc2 = MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &quiet);
    expect(rc2, MPI_ERR_INFO, "shmpi_check_args", "bad hint value");
    MPI_Info_set(info, "shmpi_check_args", "false");
    CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &quiet) == MPI_SUCCESS, "dup_with_info");
    MPI_Info_free(&info);
    MPI_Comm_set_errhandler(quiet, MPI_ERRORS_RETURN);
    MPI_Comm_dup(quiet, &quiet2);
    int vals[4] = {7, 8, 9, 10};
    CHECK(MPI_Bcast(vals, rank == 1 ? 3 : 2, MPI_INT, 0, quiet) == MPI_SUCCESS, "unchecked Bcast");
    CHECK(MPI_Bcast(vals, rank == 1 ? 3 : 2, MPI_INT, 0, quiet2) == MPI_SUCCESS, "unchecked Bcast on a dup");
    CHECK(vals[0] == 7 && vals[1] == 8, "unchecked Bcast data");
    expect(MPI_Bcast(vals, rank == 1 ? 3 : 2, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "count=3", "checked again");
    MPI_Comm_free(&quiet2);
    MPI_Comm_free(&quiet);
    still_works();
    int tot;
    MPI_Allreduce(&failures, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("agree: np=%d: %s\n", size, tot ? "FAILED" : "ok");
    MPI_Finalize();
    return tot ? 1 : 0;
}
