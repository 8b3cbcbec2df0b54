/* Which MPI library is this program running on? Prints MPI_Get_library_version and
 * checks that it contains the word given as the first argument (the drop-in cases:
 * "shmpi" for a program built by MPICH's mpicc, "MPICH" for one built by shmpi's and
 * run on MPICH). Also checks that the string fits the header's MPI_MAX_LIBRARY_VERSION_STRING
 * and that a reduction on MPI_COMM_WORLD gives the right answer. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, len = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(version, &len);
    int ok = len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING && (int)strlen(version) == len;
    if (argc > 1 && !strstr(version, argv[1])) {
        ok = 0;
    }
    long mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (sum != (long)size * (size + 1) / 2) {
        ok = 0;
    }
    if (rank == 0) {
        printf("%s: library version (%d chars): %.*s\n", ok ? "ok" : "FAIL", len,
               (int)strcspn(version, "\n"), version);
    }
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_Finalize();
    return all ? 0 : 1;
}
