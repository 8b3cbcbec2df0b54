/* Generalized requests (MPI_Grequest_start, MPI_Grequest_complete): not complete until
 * the program says so; the completing Wait/Test returns the status the query callback
 * gives and then runs the free callback; MPI_Request_get_status runs only the query;
 * MPI_Request_free before completion defers the free callback to
 * MPI_Grequest_complete; MPI_Cancel runs the cancel callback with the completion state;
 * a query callback's error is the request's error (MPI_Wait's result, MPI_ERR_IN_STATUS
 * in MPI_Waitall); generalized requests mix with point-to-point ones in Waitany,
 * Waitsome and Testall. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures;

#define CHECK(cond, ...)                                                            \
    do {                                                                            \
        if (!(cond)) {                                                              \
            if (failures++ < 10) {                                                  \
                fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                                       \
                fprintf(stderr, "\n");                                              \
            }                                                                       \
        }                                                                           \
    } while (0)

/* One event log for all callbacks: 'q' query, 'f' free, 'c'/'C' cancel (incomplete /
 * complete), followed by the request's id. */
static char events[256];
static int nev;

struct state {
    int id;
    int tag;      /* what the query callback reports */
    int elems;    /* MPI_INT elements reported */
    int error;    /* returned by the query callback */
    int cancelled;
};

static void event(char what, int id) {
    if (nev + 2 < (int)sizeof events) {
        events[nev++] = what;
        events[nev++] = (char)('0' + id);
        events[nev] = 0;
    }
}

static int query(void *extra, MPI_Status *st) {
    struct state *s = extra;
    event('q', s->id);
    st->MPI_SOURCE = MPI_UNDEFINED;
    st->MPI_TAG = s->tag;
    MPI_Status_set_elements(st, MPI_INT, s->elems);
    MPI_Status_set_cancelled(st, s->cancelled);
    return s->error;
}

static int freefn(void *extra) {
    event('f', ((struct state *)extra)->id);
    return MPI_SUCCESS;
}

static int cancelfn(void *extra, int complete) {
    struct state *s = extra;
    event(complete ? 'C' : 'c', s->id);
    if (!complete) s->cancelled = 1;
    return MPI_SUCCESS;
}

static void expect(const char *want, const char *what) {
    CHECK(strcmp(events, want) == 0, "%s: callbacks \"%s\", expected \"%s\"", what, events, want);
    nev = 0;
    events[0] = 0;
}

static MPI_Request start(struct state *s, int id, int tag, int elems) {
    memset(s, 0, sizeof *s);
    s->id = id;
    s->tag = tag;
    s->elems = elems;
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = MPI_Grequest_start(query, freefn, cancelfn, s, &r);
    CHECK(rc == MPI_SUCCESS && r != MPI_REQUEST_NULL, "MPI_Grequest_start: rc %d", rc);
    return r;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    struct state s[4];
    MPI_Status st;
    int flag, count, cls, rc;

    /* Test before and after completion. */
    MPI_Request r = start(&s[0], 0, 7, 5);
    MPI_Test(&r, &flag, &st);
    CHECK(!flag && r != MPI_REQUEST_NULL, "incomplete generalized request tested complete");
    MPI_Request_get_status(r, &flag, &st);
    CHECK(!flag, "MPI_Request_get_status: complete before MPI_Grequest_complete");
    expect("", "before completion");
    MPI_Grequest_complete(r);
    expect("", "MPI_Grequest_complete");
    MPI_Request_get_status(r, &flag, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(flag && st.MPI_TAG == 7 && count == 5, "get_status: flag %d tag %d count %d", flag, st.MPI_TAG, count);
    expect("q0", "MPI_Request_get_status");
    MPI_Test(&r, &flag, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(flag && r == MPI_REQUEST_NULL && st.MPI_TAG == 7 && count == 5 && st.MPI_SOURCE == MPI_UNDEFINED,
          "MPI_Test: flag %d tag %d count %d source %d", flag, st.MPI_TAG, count, st.MPI_SOURCE);
    expect("q0f0", "MPI_Test");

    /* Wait on a completed one. */
    r = start(&s[1], 1, 3, 2);
    MPI_Grequest_complete(r);
    rc = MPI_Wait(&r, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(rc == MPI_SUCCESS && r == MPI_REQUEST_NULL && st.MPI_TAG == 3 && count == 2, "MPI_Wait: rc %d tag %d", rc,
          st.MPI_TAG);
    expect("q1f1", "MPI_Wait");

    /* MPI_Request_free before completion: free_fn runs in MPI_Grequest_complete. */
    r = start(&s[0], 0, 0, 0);
    MPI_Request keep = r;
    MPI_Request_free(&r);
    CHECK(r == MPI_REQUEST_NULL, "MPI_Request_free left the handle");
    expect("", "MPI_Request_free before completion");
    MPI_Grequest_complete(keep);
    expect("f0", "MPI_Grequest_complete after MPI_Request_free");
    /* ... and after completion: at once. */
    r = start(&s[0], 0, 0, 0);
    MPI_Grequest_complete(r);
    MPI_Request_free(&r);
    expect("f0", "MPI_Request_free after completion");

    /* Cancel: the callback learns whether the request is complete. */
    r = start(&s[2], 2, 1, 0);
    MPI_Cancel(&r);
    expect("c2", "MPI_Cancel before completion");
    MPI_Grequest_complete(r);
    MPI_Cancel(&r);
    expect("C2", "MPI_Cancel after completion");
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "the query callback's cancelled flag was lost");
    expect("q2f2", "MPI_Wait after cancel");

    /* A query callback's error: MPI_Wait returns it; MPI_Waitall reports it in the status. */
    r = start(&s[0], 0, 0, 0);
    s[0].error = MPI_ERR_OTHER;
    MPI_Grequest_complete(r);
    rc = MPI_Wait(&r, &st);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OTHER && r == MPI_REQUEST_NULL, "MPI_Wait with a failing query: class %d", cls);
    expect("q0f0", "failing query");
    MPI_Request rs[2];
    MPI_Status sts[2];
    rs[0] = start(&s[0], 0, 0, 0);
    rs[1] = start(&s[1], 1, 0, 0);
    s[1].error = MPI_ERR_ARG;
    MPI_Grequest_complete(rs[0]);
    MPI_Grequest_complete(rs[1]);
    rc = MPI_Waitall(2, rs, sts);
    MPI_Error_class(rc, &cls);
    int cls1 = -1;
    MPI_Error_class(sts[1].MPI_ERROR, &cls1);
    CHECK(cls == MPI_ERR_IN_STATUS && sts[0].MPI_ERROR == MPI_SUCCESS && cls1 == MPI_ERR_ARG,
          "MPI_Waitall: class %d, errors %d %d", cls, sts[0].MPI_ERROR, sts[1].MPI_ERROR);
    expect("q0f0q1f1", "MPI_Waitall");

    /* Mixed with point-to-point: a ring exchange and a generalized request. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size, x = rank, y = -1;
    MPI_Request mix[3];
    mix[0] = start(&s[3], 3, 9, 1);
    MPI_Irecv(&y, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &mix[1]);
    MPI_Isend(&x, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &mix[2]);
    int idx = -1, done = 0;
    while (done < 2) {
        MPI_Waitany(3, mix, &idx, &st);
        CHECK(idx == 1 || idx == 2, "MPI_Waitany completed %d before MPI_Grequest_complete", idx);
        done++;
    }
    CHECK(y == left, "ring value %d, expected %d", y, left);
    MPI_Testall(3, mix, &flag, MPI_STATUSES_IGNORE);
    CHECK(!flag, "MPI_Testall complete before MPI_Grequest_complete");
    expect("", "Waitany with an incomplete generalized request");
    MPI_Grequest_complete(mix[0]);
    int outcount = 0, indices[3];
    MPI_Waitsome(3, mix, &outcount, indices, sts);
    CHECK(outcount == 1 && indices[0] == 0 && sts[0].MPI_TAG == 9, "MPI_Waitsome: %d completed", outcount);
    expect("q3f3", "MPI_Waitsome");

    /* Errors. */
    r = start(&s[0], 0, 0, 0);
    MPI_Grequest_complete(r);
    rc = MPI_Grequest_complete(r);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_REQUEST, "completing twice: class %d", cls);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    expect("q0f0", "wait after the double completion");
    MPI_Request p2p;
    MPI_Irecv(&y, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &p2p);
    rc = MPI_Grequest_complete(p2p);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_REQUEST, "MPI_Grequest_complete of a receive: class %d", cls);
    MPI_Wait(&p2p, MPI_STATUS_IGNORE);
    rc = MPI_Grequest_start(query, freefn, cancelfn, NULL, NULL);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "NULL request: class %d", cls);

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "FAILED: %d failures\n" : "No Errors\n", total);
    MPI_Finalize();
    return total != 0;
}
