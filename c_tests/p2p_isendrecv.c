/* MPI-4's MPI_Isendrecv and MPI_Isendrecv_replace: a ring exchange of eager and
 * rendezvous sizes, with a strided datatype, completed by MPI_Wait, MPI_Test and
 * MPI_Waitall among other requests; the status is the receive's (source, tag, count);
 * the replace form receives into the buffer it sends from; MPI_PROC_NULL on either
 * side; checked against values computed here. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

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

static int val(int r, int i) { return r * 100000 + i; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const int ns[3] = {1, 1000, 100000};
    int *sb = malloc(sizeof(int) * 200000), *rb = malloc(sizeof(int) * 200000);

    for (int k = 0; k < 3; k++) {
        int n = ns[k], cnt = -1, flag = 0;
        MPI_Status st;
        MPI_Request r;
        /* Isendrecv, completed by MPI_Wait */
        for (int i = 0; i < n; i++) sb[i] = val(rank, i), rb[i] = -1;
        MPI_Isendrecv(sb, n, MPI_INT, right, 10 + k, rb, n, MPI_INT, left, 10 + k, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, &st);
        MPI_Get_count(&st, MPI_INT, &cnt);
        int bad = 0;
        for (int i = 0; i < n; i++) bad += rb[i] != val(left, i);
        CHECK(!bad && r == MPI_REQUEST_NULL && st.MPI_SOURCE == left && st.MPI_TAG == 10 + k && cnt == n,
              "Isendrecv of %d: %d wrong, source %d tag %d count %d", n, bad, st.MPI_SOURCE, st.MPI_TAG, cnt);

        /* Isendrecv_replace, completed by MPI_Test */
        for (int i = 0; i < n; i++) sb[i] = val(rank, i) + 7;
        MPI_Isendrecv_replace(sb, n, MPI_INT, right, 20 + k, left, 20 + k, MPI_COMM_WORLD, &r);
        while (!flag) MPI_Test(&r, &flag, &st);
        bad = 0;
        for (int i = 0; i < n; i++) bad += sb[i] != val(left, i) + 7;
        CHECK(!bad && st.MPI_SOURCE == left, "Isendrecv_replace of %d: %d wrong", n, bad);
    }

    /* A strided datatype (every other int), in Waitall with an Isend/Irecv pair. */
    {
        MPI_Datatype every2;
        MPI_Type_vector(500, 1, 2, MPI_INT, &every2);
        MPI_Type_commit(&every2);
        for (int i = 0; i < 1000; i++) sb[i] = val(rank, i), rb[i] = -1;
        int x = rank, y = -1;
        MPI_Request rs[3];
        MPI_Status sts[3];
        MPI_Irecv(&y, 1, MPI_INT, right, 31, MPI_COMM_WORLD, &rs[0]);
        MPI_Isendrecv(sb, 1, every2, right, 30, rb, 500, MPI_INT, left, 30, MPI_COMM_WORLD, &rs[1]);
        MPI_Isend(&x, 1, MPI_INT, left, 31, MPI_COMM_WORLD, &rs[2]);
        MPI_Waitall(3, rs, sts);
        int bad = 0;
        for (int i = 0; i < 500; i++) bad += rb[i] != val(left, 2 * i);
        CHECK(!bad && y == right && sts[1].MPI_TAG == 30, "strided Isendrecv: %d wrong, y %d", bad, y);
        /* replace with the strided type: the odd ints stay */
        for (int i = 0; i < 1000; i++) sb[i] = val(rank, i);
        MPI_Request r;
        MPI_Isendrecv_replace(sb, 1, every2, right, 32, left, 32, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        bad = 0;
        for (int i = 0; i < 1000; i++) bad += sb[i] != (i % 2 ? val(rank, i) : val(left, i));
        CHECK(!bad, "strided Isendrecv_replace: %d wrong", bad);
        MPI_Type_free(&every2);
    }

    /* MPI_PROC_NULL on both sides: an empty status at once. */
    {
        MPI_Request r;
        MPI_Status st;
        int cnt = -1;
        rb[0] = -1;
        MPI_Isendrecv(sb, 1, MPI_INT, MPI_PROC_NULL, 0, rb, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, &st);
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && cnt == 0 && rb[0] == -1,
              "PROC_NULL Isendrecv: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, cnt);
    }

    free(sb);
    free(rb);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "FAILED: %d failures\n" : "No Errors\n", total);
    MPI_Finalize();
    return total != 0;
}
