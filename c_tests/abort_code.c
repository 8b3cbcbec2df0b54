/* Expected to FAIL (LIST: expect=fail). Rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7): the job
 * must end with a non-zero status (mpiexec reports the code 7). Rank 0 waits a few seconds
 * for a message that never comes; if MPI_Abort returned or did not stop rank 0, both ranks
 * finish normally and exit 0, which the suite reports as a failure. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 1 || size == 1) {
        int rc = MPI_Abort(MPI_COMM_WORLD, 7);
        fprintf(stderr, "abort_code: MPI_Abort returned %d\n", rc);
    } else {
        double t0 = MPI_Wtime();
        int flag = 0;
        while (!flag && MPI_Wtime() - t0 < 5.0) MPI_Iprobe(1, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        fprintf(stderr, "abort_code: rank %d was still running 5 s after rank 1 called MPI_Abort\n", rank);
    }
    MPI_Finalize();
    return 0;
}
