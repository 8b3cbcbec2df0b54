/* Expected to FAIL (LIST: expect=fail). Calling MPI_Send before MPI_Init is erroneous: the
 * library must stop the program with a clear message and a non-zero status. If the call
 * returns instead, the program exits 0 and the suite reports a failure. */
#include <mpi.h>
#include <stdio.h>

int main(void) {
    int x = 42;
    int rc = MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    fprintf(stderr, "calls_before_init: MPI_Send before MPI_Init returned %d instead of stopping the program\n", rc);
    return 0;
}
