/* Expected to FAIL (LIST: expect=fail). Under the default error handler
 * (MPI_ERRORS_ARE_FATAL) an erroneous call on rank 0 (a send to a rank that does not
 * exist) must end the whole job with a non-zero status. The other ranks wait a few
 * seconds for a message that never comes; if the error did not stop the job, every rank
 * finishes normally and exits 0, which the suite reports as a failure. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size, x = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        int rc = MPI_Send(&x, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
        fprintf(stderr, "errors_fatal: MPI_Send to rank %d returned %d under MPI_ERRORS_ARE_FATAL instead of "
                        "ending the job\n", size + 5, rc);
    } else {
        double t0 = MPI_Wtime();
        int flag = 0;
        while (!flag && MPI_Wtime() - t0 < 5.0) MPI_Iprobe(0, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        fprintf(stderr, "errors_fatal: rank %d was still running 5 s after rank 0's fatal error\n", rank);
    }
    MPI_Finalize();
    return 0;
}
