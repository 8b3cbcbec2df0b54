/* Small points of the standard that conformance suites check:
 * - MPI_Finalize first frees MPI_COMM_SELF: the delete callbacks of its attributes run,
 *   last set first, while MPI is still initialised (MPI-3.1 section 8.7.1);
 * - calls that return a single status (Recv, Wait, Test, Probe, Iprobe, Sendrecv) leave
 *   its MPI_ERROR field alone; only the multiple-completion calls set it (3.2.5);
 * - MPI_LASTUSEDCODE is at least MPI_ERR_LASTCODE (8.5). */
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

static int deleted[3], order[3], ndel, finalized_inside = -1;

static int del(MPI_Comm comm, int key, void *val, void *extra) {
    (void)comm, (void)key, (void)extra;
    int i = (int)(long)val;
    deleted[i]++;
    order[ndel++] = i;
    MPI_Finalized(&finalized_inside);
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* MPI_LASTUSEDCODE */
    int *last, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag);
    CHECK(flag && *last >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE %d < MPI_ERR_LASTCODE %d", flag ? *last : -1,
          MPI_ERR_LASTCODE);

    /* MPI_ERROR untouched by single-status calls */
    int right = (rank + 1) % size, left = (rank + size - 1) % size, x = rank, y = -1;
    MPI_Status st;
    MPI_Request r;
    st.MPI_ERROR = MPI_ERR_DIMS;
    MPI_Sendrecv(&x, 1, MPI_INT, right, 1, &y, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS && y == left, "Sendrecv: MPI_ERROR %d, y %d", st.MPI_ERROR, y);
    MPI_Isend(&x, 1, MPI_INT, right, 2, MPI_COMM_WORLD, &r);
    st.MPI_ERROR = MPI_ERR_DIMS;
    MPI_Probe(left, 2, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS && st.MPI_SOURCE == left, "Probe");
    flag = 0;
    while (!flag) {
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Iprobe(left, 2, MPI_COMM_WORLD, &flag, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Iprobe");
    }
    st.MPI_ERROR = MPI_ERR_DIMS;
    MPI_Recv(&y, 1, MPI_INT, left, 2, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Recv");
    st.MPI_ERROR = MPI_ERR_DIMS;
    MPI_Wait(&r, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Wait");
    MPI_Irecv(&y, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &r);
    st.MPI_ERROR = MPI_ERR_DIMS;
    flag = 0;
    while (!flag) MPI_Test(&r, &flag, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS && st.MPI_SOURCE == MPI_PROC_NULL, "Test");
    st.MPI_ERROR = MPI_ERR_DIMS;
    MPI_Recv(&y, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Recv from MPI_PROC_NULL");

    /* Attributes on MPI_COMM_SELF: deleted by MPI_Finalize, last set first */
    for (long i = 0; i < 3; i++) {
        int k;
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del, &k, NULL);
        MPI_Comm_set_attr(MPI_COMM_SELF, k, (void *)i);
    }
    int fails = failures;
    MPI_Finalize();
    failures = fails;
    CHECK(deleted[0] == 1 && deleted[1] == 1 && deleted[2] == 1, "delete callbacks ran %d %d %d times",
          deleted[0], deleted[1], deleted[2]);
    CHECK(order[0] == 2 && order[1] == 1 && order[2] == 0, "delete order %d %d %d", order[0], order[1],
          order[2]);
    CHECK(finalized_inside == 0, "MPI_Finalized in the callback said %d", finalized_inside);
    if (!failures) printf("conform_misc: rank %d ok\n", rank);
    return failures != 0;
}
