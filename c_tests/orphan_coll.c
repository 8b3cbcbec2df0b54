/* A collective that only one rank calls, under MPI_ERRORS_RETURN, while the other ranks
 * go on to MPI_Finalize. The lone rank (the last one) must get an error back from every
 * such call (class MPI_ERR_OTHER, a message that names MPI_Finalize) instead of waiting
 * forever, and then every rank's MPI_Finalize must return and the job exit 0.
 *
 * The lone rank calls, each on a communicator of its own (duplicates of MPI_COMM_WORLD
 * made by every rank): MPI_Barrier, MPI_Bcast (root 0, a rank that never calls it),
 * MPI_Allreduce, MPI_Alltoallv, MPI_Ibarrier + MPI_Wait, and last MPI_Barrier on
 * MPI_COMM_WORLD itself, whose channel the others' MPI_Finalize must not take part in.
 * Built with ORPHAN_WORLD_ONLY (orphan_coll_world.c), it calls only that last barrier. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCOMM 5
#ifndef ORPHAN_WORLD_ONLY
#define ORPHAN_WORLD_ONLY 0
#endif

static int errors = 0;

static void expect_finalize_error(int rc, const char *what) {
    int cls = -1, len = 0;
    char msg[MPI_MAX_ERROR_STRING] = "";
    if (rc == MPI_SUCCESS) {
        fprintf(stderr, "orphan_coll: unmatched %s returned MPI_SUCCESS\n", what);
        errors++;
        return;
    }
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    if (cls != MPI_ERR_OTHER || !strstr(msg, "MPI_Finalize")) {
        fprintf(stderr, "orphan_coll: unmatched %s returned class %d: %s\n", what, cls, msg);
        errors++;
    }
}

int main(int argc, char **argv) {
    int rank, size, i, rc;
    const int world_only = ORPHAN_WORLD_ONLY;
    MPI_Comm c[NCOMM];
    MPI_Request req;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (i = 0; i < NCOMM; i++) MPI_Comm_dup(MPI_COMM_WORLD, &c[i]); /* inherit RETURN */
    if (rank == size - 1 && size > 1) {
        int *a = malloc(sizeof(int) * (size_t)size), *b = malloc(sizeof(int) * (size_t)size);
        int *cnt = malloc(sizeof(int) * (size_t)size), *dis = malloc(sizeof(int) * (size_t)size);
        for (i = 0; i < size; i++) {
            a[i] = i;
            cnt[i] = 1;
            dis[i] = i;
        }
        if (!world_only) {
            expect_finalize_error(MPI_Barrier(c[0]), "MPI_Barrier");
            expect_finalize_error(MPI_Bcast(a, 2, MPI_INT, 0, c[1]), "MPI_Bcast");
            expect_finalize_error(MPI_Allreduce(a, b, size, MPI_INT, MPI_SUM, c[2]), "MPI_Allreduce");
            expect_finalize_error(MPI_Alltoallv(a, cnt, dis, MPI_INT, b, cnt, dis, MPI_INT, c[3]),
                                  "MPI_Alltoallv");
            rc = MPI_Ibarrier(c[4], &req);
            if (rc != MPI_SUCCESS) {
                fprintf(stderr, "orphan_coll: MPI_Ibarrier returned %d\n", rc);
                errors++;
            } else {
                expect_finalize_error(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Ibarrier (MPI_Wait)");
            }
        }
        expect_finalize_error(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier on MPI_COMM_WORLD");
        free(a);
        free(b);
        free(cnt);
        free(dis);
    }
    /* (the communicators are not freed: MPI_Comm_free is collective) */
    rc = MPI_Finalize();
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "orphan_coll: rank %d: MPI_Finalize returned %d\n", rank, rc);
        errors++;
    }
    if (rank == size - 1 && !errors) printf(" No Errors\n");
    return errors ? 1 : 0;
}
