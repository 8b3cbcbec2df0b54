/* Built against an installed (and moved) tree by clients/install.sh, clients/meson.sh
 * and clients/autoconf.sh: checks the library it loaded and a reduction. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, len, sum = 0, version, subversion;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&version, &subversion);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int ok = sum == size * (size - 1) / 2 && strncmp(lib, "shmpi ", 6) == 0 &&
             version == MPI_VERSION && subversion == MPI_SUBVERSION;
    if (rank == 0) {
        printf("hello_c np=%d MPI %d.%d: %s (%s)\n", size, version, subversion,
               ok ? "ok" : "FAIL", lib);
    }
    MPI_Finalize();
    return ok ? 0 : 1;
}
