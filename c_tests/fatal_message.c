/* Expected to FAIL (LIST: expect=fail). Under the default MPI_ERRORS_ARE_FATAL, an
 * operation applied to a type it is not defined on (MPI_BAND on MPI_DOUBLE in
 * MPI_Reduce_local, on the last rank only) must stop the whole job: the other ranks wait
 * in a Barrier that can only complete if the erroneous call returned. tests/failures.rs
 * checks the message (one line naming the function, the op, the datatype, the class and
 * the rank). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size;
    double a = 1, b = 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == size - 1) {
        int rc = MPI_Reduce_local(&a, &b, 1, MPI_DOUBLE, MPI_BAND);
        fprintf(stderr, "fatal_message: MPI_Reduce_local returned %d under MPI_ERRORS_ARE_FATAL\n", rc);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
