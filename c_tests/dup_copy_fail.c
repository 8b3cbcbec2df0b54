/* An attribute copy callback that fails on one rank only: MPI_Comm_dup (and
 * MPI_Comm_idup) fails on every rank, the failing one with its callback's error and the
 * others with MPI_ERR_OTHER naming it, newcomm is MPI_COMM_NULL everywhere, the copies
 * made on the other ranks are deleted again, and the parent stays usable; a dup where
 * no callback fails then works. Also on an intercommunicator. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int rank, size, bad, fail_on = -1, deleted;

#define CHECK(c, ...)                                                                    \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            bad++;                                                                       \
            fprintf(stderr, "rank %d: ", rank);                                          \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n");                                                       \
        }                                                                                \
    } while (0)

static int copy_fn(MPI_Comm c, int key, void *extra, void *in, void *out, int *flag) {
    (void)c; (void)key; (void)extra;
    if (rank == fail_on) return MPI_ERR_ARG;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm c, int key, void *val, void *extra) {
    (void)c; (void)key; (void)val; (void)extra;
    deleted++;
    return MPI_SUCCESS;
}

/* One dup of `comm` (blocking or not) with the callback failing on world rank `f`. */
static void one(MPI_Comm comm, int f, int nonblocking, const char *what) {
    fail_on = f;
    deleted = 0;
    MPI_Comm dup = MPI_COMM_WORLD;
    int rc, cls;
    if (nonblocking) {
        MPI_Request rq;
        rc = MPI_Comm_idup(comm, &dup, &rq);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
        rc = MPI_Comm_dup(comm, &dup);
    }
    MPI_Error_class(rc, &cls);
    if (f < 0) {
        CHECK(rc == MPI_SUCCESS && dup != MPI_COMM_NULL, "%s: dup failed (class %d)", what, cls);
        if (dup != MPI_COMM_NULL && rc == MPI_SUCCESS) {
            MPI_Barrier(dup);
            MPI_Comm_free(&dup);
            CHECK(deleted == 1, "%s: %d deletions at the free", what, deleted);
        }
        return;
    }
    CHECK(dup == MPI_COMM_NULL, "%s: newcomm is not MPI_COMM_NULL", what);
    if (rank == f) {
        CHECK(cls == MPI_ERR_ARG, "%s: the failing rank got class %d", what, cls);
        CHECK(deleted == 0, "%s: %d deletions on the failing rank", what, deleted);
    } else {
        CHECK(cls == MPI_ERR_OTHER, "%s: class %d, not MPI_ERR_OTHER", what, cls);
        char msg[MPI_MAX_ERROR_STRING], want[64];
        int len;
        MPI_Error_string(rc, msg, &len);
        snprintf(want, sizeof want, "world rank %d", f);
        CHECK(strstr(msg, want) != NULL, "%s: message '%s' does not name %s", what, msg, want);
        CHECK(deleted == 1, "%s: the copy was deleted %d times", what, deleted);
    }
    MPI_Barrier(comm);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int key;
    MPI_Comm_create_keyval(copy_fn, delete_fn, &key, NULL);
    MPI_Comm base;
    MPI_Comm_dup(MPI_COMM_WORLD, &base);
    MPI_Comm_set_errhandler(base, MPI_ERRORS_RETURN);
    /* (MPI_Wait of the MPI_Comm_idup reports through MPI_COMM_WORLD's handler here) */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_attr(base, key, &key);
    for (int nb = 0; nb < 2; nb++) {
        const char *what = nb ? "MPI_Comm_idup" : "MPI_Comm_dup";
        one(base, size - 1, nb, what);
        one(base, 0, nb, what);
        one(base, -1, nb, what);
    }
    if (size > 1) {
        /* An intercommunicator between the even and the odd ranks. */
        MPI_Comm half, inter;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        MPI_Comm_set_attr(inter, key, &key);
        one(inter, 1, 0, "MPI_Comm_dup of an intercommunicator");
        one(inter, -1, 0, "MPI_Comm_dup of an intercommunicator");
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    MPI_Comm_free(&base);
    MPI_Comm_free_keyval(&key);
    int all;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("dup_copy_fail: np=%d: %s\n", size, all ? "FAILED" : "ok");
    MPI_Finalize();
    return all ? 1 : 0;
}
