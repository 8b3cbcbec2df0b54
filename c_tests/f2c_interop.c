/* Language interoperability on the C side: the f2c/c2f functions (not the
 * header's macros) are the identity, MPI_Status_c2f/f2c copy the 5 words and
 * reject MPI_STATUS_IGNORE, the MPICH data symbols exist with their values
 * (MPI_F_STATUS_IGNORE is NULL in a program without the Fortran library), and
 * MPI_DUP_FN (MPIR_Dup_fn) copies the attribute value. */
#define SHMPI_NO_C2F_MACROS
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int fails;
#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);                \
            fails++;                                                           \
        }                                                                      \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    CHECK(MPI_Comm_c2f(MPI_COMM_WORLD) == (MPI_Fint)MPI_COMM_WORLD);
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_SELF)) == MPI_COMM_SELF);
    CHECK(PMPI_Comm_f2c((MPI_Fint)MPI_COMM_NULL) == MPI_COMM_NULL);
    CHECK(MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE);
    CHECK(MPI_Type_c2f(MPI_INTEGER) == (MPI_Fint)MPI_INTEGER);
    CHECK(MPI_Op_f2c(MPI_Op_c2f(MPI_MAXLOC)) == MPI_MAXLOC);
    CHECK(MPI_Group_f2c(MPI_Group_c2f(MPI_GROUP_EMPTY)) == MPI_GROUP_EMPTY);
    CHECK(MPI_Request_f2c(MPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL);
    CHECK(MPI_Errhandler_f2c(MPI_Errhandler_c2f(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN);
    CHECK(MPI_Info_f2c(MPI_Info_c2f(MPI_INFO_NULL)) == MPI_INFO_NULL);

    MPI_Status st;
    memset(&st, 0, sizeof st);
    st.MPI_SOURCE = 3;
    st.MPI_TAG = 77;
    st.MPI_ERROR = MPI_ERR_TAG;
    MPI_Fint f[MPI_F_STATUS_SIZE];
    CHECK(MPI_Status_c2f(&st, f) == MPI_SUCCESS);
    CHECK(f[2] == 3 && f[3] == 77 && f[4] == MPI_ERR_TAG);
    MPI_Status back;
    CHECK(PMPI_Status_f2c(f, &back) == MPI_SUCCESS);
    CHECK(back.MPI_SOURCE == 3 && back.MPI_TAG == 77 && back.MPI_ERROR == MPI_ERR_TAG);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Status_c2f(MPI_STATUS_IGNORE, f) != MPI_SUCCESS);

    CHECK(MPI_F_STATUS_IGNORE == NULL && MPI_F_STATUSES_IGNORE == NULL);
    CHECK(MPI_F08_STATUS_IGNORE != NULL && MPI_F08_STATUSES_IGNORE != NULL);
    CHECK(MPI_F08_STATUS_IGNORE != MPI_F08_STATUSES_IGNORE);
    CHECK(MPI_UNWEIGHTED != NULL && MPI_WEIGHTS_EMPTY != NULL);
    CHECK((void *)MPI_UNWEIGHTED != (void *)MPI_WEIGHTS_EMPTY);

    int in = 42, flag = 0;
    void *out = NULL;
    CHECK(MPI_DUP_FN(MPI_COMM_WORLD, 0, NULL, &in, &out, &flag) == MPI_SUCCESS);
    CHECK(out == (void *)&in && flag == 1);

    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && all == 0)
        printf("f2c_interop: OK\n");
    return all != 0;
}
