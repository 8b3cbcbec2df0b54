/* Built by CMake with MPI::MPI_C: checks the library and a reduction. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, len, sum = 0;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_library_version(version, &len);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int ok = sum == size * (size - 1) / 2 && strstr(version, "shmpi") != NULL;
    if (rank == 0) {
        printf("cmake hello_c np=%d: %s\n", size, ok ? "ok" : "FAIL");
    }
    MPI_Finalize();
    return ok ? 0 : 1;
}
