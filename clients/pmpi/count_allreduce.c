/* A profiling library in the classic style: it defines MPI_Allreduce, counts the
 * calls and forwards to PMPI_Allreduce; MPI_Finalize prints the count. Loaded with
 * LD_PRELOAD, so the program itself is not rebuilt. */
#include <mpi.h>
#include <stdio.h>

static int allreduce_calls;

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm)
{
    allreduce_calls++;
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

/* Looked up by the test program with dlsym. */
int pmpi_count_allreduce_calls(void)
{
    return allreduce_calls;
}

int MPI_Finalize(void)
{
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("pmpi: rank %d: %d MPI_Allreduce calls\n", rank, allreduce_calls);
    fflush(stdout);
    return PMPI_Finalize();
}
