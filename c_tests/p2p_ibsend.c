/* MPI_Ibsend completes locally: once the data is copied into the attached buffer, MPI_Wait
 * on the request returns even though the receiver has not posted a receive yet (the
 * receiver only posts after a barrier). Checked for a small and for a large message
 * (above the eager limit), then the data is verified. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int g_rank = -1;

#define CHECK(cond, ...)                                                                \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "p2p_ibsend: rank %d: %s:%d: check failed: %s: ", g_rank, \
                    __FILE__, __LINE__, #cond);                                         \
            fprintf(stderr, __VA_ARGS__);                                               \
            fprintf(stderr, "\n");                                                      \
            fflush(stderr);                                                             \
            MPI_Abort(MPI_COMM_WORLD, 1);                                               \
        }                                                                               \
    } while (0)

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_rank = rank;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const int ns[2] = {10, 100000};
    int pool_size = (ns[0] + ns[1]) * (int)sizeof(int) + 2 * MPI_BSEND_OVERHEAD;
    char *pool = malloc((size_t)pool_size);
    MPI_Buffer_attach(pool, pool_size);
    int *s = malloc((size_t)ns[1] * sizeof *s), *r = malloc((size_t)ns[1] * sizeof *r);
    for (int k = 0; k < 2; k++) {
        MPI_Request rq;
        for (int i = 0; i < ns[k]; i++) s[i] = rank * 7 + k * 3 + i;
        MPI_Ibsend(s, ns[k], MPI_INT, right, k, MPI_COMM_WORLD, &rq);
        /* Poll for at most 5 s: a buffered send must complete without the receiver. */
        int flag = 0;
        double t0 = MPI_Wtime();
        while (!flag && MPI_Wtime() - t0 < 5.0) MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
        CHECK(flag, "MPI_Ibsend of %d ints did not complete before the receive was posted", ns[k]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 2; k++) {
        MPI_Status st;
        int count = -1;
        MPI_Recv(r, ns[k], MPI_INT, left, k, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == ns[k], "count %d, expected %d", count, ns[k]);
        for (int i = 0; i < ns[k]; i++)
            CHECK(r[i] == left * 7 + k * 3 + i, "message %d element %d is %d, expected %d", k, i, r[i],
                  left * 7 + k * 3 + i);
    }
    void *back;
    int back_size;
    MPI_Buffer_detach(&back, &back_size);
    CHECK(back == (void *)pool && back_size == pool_size, "Buffer_detach returned %p/%d", back, back_size);
    free(pool);
    free(s);
    free(r);
    if (rank == 0) printf("p2p_ibsend: OK on %d processes\n", size);
    MPI_Finalize();
    return 0;
}
