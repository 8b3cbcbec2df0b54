/* An error a completion call reports for a request goes to the error handler of the
 * request's communicator (MPI-3.1 section 8.3), not to MPI_COMM_WORLD's: with
 * MPI_COMM_WORLD fatal (and a counting handler on it that must never run) and a
 * duplicate that returns errors or has a handler of its own, a truncated receive
 * completed by MPI_Wait, MPI_Test, MPI_Waitany, MPI_Testany, MPI_Waitall, MPI_Testall,
 * MPI_Waitsome and MPI_Testsome returns the right class (MPI_ERR_TRUNCATE, or
 * MPI_ERR_IN_STATUS with MPI_ERR_TRUNCATE in the status), or calls the duplicate's
 * handler with the duplicate, and the job goes on. Partner: rank ^ 1, or itself. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int bad = 0, rank, size, world_calls = 0, dup_calls = 0;
static MPI_Comm dup2;
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "rank %d: ", rank); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); bad++; } } while (0)

static void on_world(MPI_Comm *c, int *code, ...) { (void)c; (void)code; world_calls++; }
static void on_dup(MPI_Comm *c, int *code, ...) {
    int cls, same;
    MPI_Error_class(*code, &cls);
    MPI_Comm_compare(*c, dup2, &same);
    CHECK(same == MPI_IDENT, "the handler got another communicator");
    CHECK(cls == MPI_ERR_TRUNCATE || cls == MPI_ERR_IN_STATUS, "the handler got class %d", cls);
    dup_calls++;
}

static int cls_of(int rc) {
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

/* Posts a receive of 2 ints for a message of 6 from the partner, on `c`. */
static void truncated(MPI_Comm c, int partner, int tag, int *buf, MPI_Request *r) {
    static int out[6] = {1, 2, 3, 4, 5, 6};
    MPI_Request s;
    MPI_Irecv(buf, 2, MPI_INT, partner, tag, c, r);
    MPI_Isend(out, 6, MPI_INT, partner, tag, c, &s);
    MPI_Wait(&s, MPI_STATUS_IGNORE);
    /* the partner's message has arrived once it has received ours */
    MPI_Sendrecv(NULL, 0, MPI_INT, partner, 999, NULL, 0, MPI_INT, partner, 999, c, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int partner = (rank ^ 1) < size ? rank ^ 1 : rank;
    MPI_Errhandler weh, deh;
    MPI_Comm_create_errhandler(on_world, &weh);
    MPI_Comm_create_errhandler(on_dup, &deh);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup2);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(dup2, deh);
    int buf[8], rc, flag, idx, outc, idxs[2];
    MPI_Request r[2];
    MPI_Status st, sts[2];

    for (int round = 0; round < 2; round++) {
        /* round 0: MPI_COMM_WORLD keeps MPI_ERRORS_ARE_FATAL (a misrouted error stops the
         * job); round 1: it counts calls instead, which must stay 0 */
        if (round == 1) MPI_Comm_set_errhandler(MPI_COMM_WORLD, weh);

        truncated(dup, partner, 1, buf, &r[0]);
        rc = MPI_Wait(&r[0], &st);
        CHECK(cls_of(rc) == MPI_ERR_TRUNCATE, "MPI_Wait: class %d", cls_of(rc));

        truncated(dup, partner, 2, buf, &r[0]);
        flag = 0;
        do rc = MPI_Test(&r[0], &flag, &st); while (rc == MPI_SUCCESS && !flag);
        CHECK(cls_of(rc) == MPI_ERR_TRUNCATE, "MPI_Test: class %d", cls_of(rc));

        truncated(dup, partner, 3, buf, &r[0]);
        r[1] = MPI_REQUEST_NULL;
        rc = MPI_Waitany(2, r, &idx, &st);
        CHECK(cls_of(rc) == MPI_ERR_TRUNCATE, "MPI_Waitany: class %d", cls_of(rc));

        truncated(dup, partner, 4, buf, &r[0]);
        r[1] = MPI_REQUEST_NULL;
        flag = 0;
        do rc = MPI_Testany(2, r, &idx, &flag, &st); while (rc == MPI_SUCCESS && !flag);
        CHECK(cls_of(rc) == MPI_ERR_TRUNCATE, "MPI_Testany: class %d", cls_of(rc));

        truncated(dup, partner, 5, buf, &r[0]);
        r[1] = MPI_REQUEST_NULL;
        rc = MPI_Waitall(2, r, sts);
        CHECK(cls_of(rc) == MPI_ERR_IN_STATUS && sts[0].MPI_ERROR != MPI_SUCCESS && cls_of(sts[0].MPI_ERROR) == MPI_ERR_TRUNCATE,
              "MPI_Waitall: class %d, status class %d", cls_of(rc), cls_of(sts[0].MPI_ERROR));

        truncated(dup, partner, 6, buf, &r[0]);
        r[1] = MPI_REQUEST_NULL;
        flag = 0;
        do rc = MPI_Testall(2, r, &flag, sts); while (rc == MPI_SUCCESS && !flag);
        CHECK(cls_of(rc) == MPI_ERR_IN_STATUS, "MPI_Testall: class %d", cls_of(rc));

        truncated(dup, partner, 7, buf, &r[0]);
        r[1] = MPI_REQUEST_NULL;
        rc = MPI_Waitsome(2, r, &outc, idxs, sts);
        CHECK(cls_of(rc) == MPI_ERR_IN_STATUS && outc == 1 && idxs[0] == 0, "MPI_Waitsome: class %d, outcount %d", cls_of(rc), outc);

        truncated(dup, partner, 8, buf, &r[0]);
        r[1] = MPI_REQUEST_NULL;
        outc = 0;
        do rc = MPI_Testsome(2, r, &outc, idxs, sts); while (rc == MPI_SUCCESS && outc == 0);
        CHECK(cls_of(rc) == MPI_ERR_IN_STATUS && outc == 1, "MPI_Testsome: class %d, outcount %d", cls_of(rc), outc);

        /* a communicator with a handler of its own: called with that communicator */
        int before = dup_calls;
        truncated(dup2, partner, 9, buf, &r[0]);
        rc = MPI_Wait(&r[0], &st);
        CHECK(cls_of(rc) == MPI_ERR_TRUNCATE && dup_calls == before + 1, "MPI_Wait on dup2: class %d, handler calls %d",
              cls_of(rc), dup_calls - before);
        truncated(dup2, partner, 10, buf, &r[0]);
        r[1] = MPI_REQUEST_NULL;
        rc = MPI_Waitall(2, r, sts);
        CHECK(dup_calls == before + 2, "MPI_Waitall on dup2: handler calls %d", dup_calls - before);
    }
    CHECK(world_calls == 0, "MPI_COMM_WORLD's handler ran %d times", world_calls);

    /* and the library is still usable */
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup);
    CHECK(sum == size, "allreduce after the errors: %d", sum);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&weh);
    MPI_Errhandler_free(&deh);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&dup2);
    int all;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "wait_errhandler: %d failures\n" : "wait_errhandler: ok\n", all);
    MPI_Finalize();
    return all != 0;
}
