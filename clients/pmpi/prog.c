/* Calls MPI_Allreduce 5 times (checking the results) and asks the preloaded profiling
 * library, found with dlsym, how many calls it saw: exits 0 only if it saw all 5.
 * Without the library it says so and exits 2. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 5; i++) {
        int x = rank + i, sum = -1;
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        bad |= sum != size * (size - 1) / 2 + size * i;
    }
    int (*count)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "pmpi_count_allreduce_calls");
    int code = 0;
    if (bad) {
        printf("rank %d: FAIL wrong Allreduce result\n", rank);
        code = 1;
    } else if (!count) {
        printf("rank %d: no profiling library: MPI_Allreduce is not interposed\n", rank);
        code = 2;
    } else if (count() != 5) {
        printf("rank %d: FAIL the profiling library counted %d calls, not 5\n", rank, count());
        code = 1;
    } else {
        printf("rank %d: ok, 5 calls interposed\n", rank);
    }
    MPI_Finalize();
    return code;
}
