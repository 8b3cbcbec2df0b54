/* Error reporting under MPI_ERRORS_RETURN: the exact error class of each kind of bad
 * argument, MPI_Error_string of returned codes (naming the failing function) and of plain
 * classes, user error handlers (MPI_Comm_create_errhandler, MPI_Comm_call_errhandler,
 * MPI_Comm_get_errhandler, MPI_Errhandler_free, and the MPI-1 names MPI_Errhandler_create/
 * set/get), and that everything keeps working after the errors. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank = -1;

#define CHECK(cond, ...)                                                           \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "errors: rank %d: %s:%d: check failed: %s: ", g_rank, \
                    __FILE__, __LINE__, #cond);                                    \
            fprintf(stderr, __VA_ARGS__);                                          \
            fprintf(stderr, "\n");                                                 \
            fflush(stderr);                                                        \
            MPI_Abort(MPI_COMM_WORLD, 1);                                          \
        }                                                                          \
    } while (0)

static int error_class(int rc) {
    int cls = -12345;
    int r = MPI_Error_class(rc, &cls);
    CHECK(r == MPI_SUCCESS, "MPI_Error_class(%d) returned %d", rc, r);
    return cls;
}

static const char *class_name(int cls) {
    switch (cls) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_COMM: return "MPI_ERR_COMM";
    case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
    case MPI_ERR_RANK: return "MPI_ERR_RANK";
    case MPI_ERR_TAG: return "MPI_ERR_TAG";
    case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
    case MPI_ERR_ROOT: return "MPI_ERR_ROOT";
    case MPI_ERR_OP: return "MPI_ERR_OP";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
    default: return "(other)";
    }
}

/* Checks that rc is an error of class `want`, and that its string names `func`. */
static void expect(int rc, int want, const char *func, const char *what) {
    CHECK(rc != MPI_SUCCESS, "%s: succeeded, expected %s", what, class_name(want));
    int cls = error_class(rc);
    CHECK(cls == want, "%s: error class %d (%s), expected %d (%s)", what, cls, class_name(cls), want,
          class_name(want));
    char msg[MPI_MAX_ERROR_STRING];
    int len = -1;
    memset(msg, 'x', sizeof msg);
    CHECK(MPI_Error_string(rc, msg, &len) == MPI_SUCCESS, "%s: MPI_Error_string failed", what);
    CHECK(memchr(msg, '\0', sizeof msg) != NULL, "%s: error string not terminated", what);
    CHECK(len == (int)strlen(msg) && len > 0, "%s: error string length %d, strlen %d", what, len, (int)strlen(msg));
    if (func) CHECK(strstr(msg, func) != NULL, "%s: error string \"%s\" does not name %s", what, msg, func);
}

/* ---- a user error handler that records its calls */
static int h_calls = 0, h_code = 0;
static MPI_Comm h_comm = MPI_COMM_NULL;

static void recorder(MPI_Comm *comm, int *code, ...) {
    h_calls++;
    h_code = *code;
    h_comm = *comm;
}

static int h2_calls = 0;
static void recorder2(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    (void)code;
    h2_calls++;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_rank = rank;

    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "the default handler of MPI_COMM_WORLD is not MPI_ERRORS_ARE_FATAL");
    MPI_Errhandler_free(&eh);
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) == MPI_SUCCESS, "set MPI_ERRORS_RETURN");
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "MPI_Comm_get_errhandler does not give back MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&eh);

    int buf[8] = {0}, rbuf[8];
    double dbuf[4] = {1, 2, 3, 4}, drbuf[4];
    int right = (rank + 1) % size;

    /* ---- classes of bad arguments */
    expect(MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Send", "Send on MPI_COMM_NULL");
    expect(MPI_Recv(rbuf, 1, MPI_INT, 0, 0, MPI_COMM_NULL, MPI_STATUS_IGNORE), MPI_ERR_COMM, "MPI_Recv",
           "Recv on MPI_COMM_NULL");
    expect(MPI_Send(buf, -1, MPI_INT, right, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Send", "Send count -1");
    expect(MPI_Recv(rbuf, -3, MPI_INT, right, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_COUNT, "MPI_Recv",
           "Recv count -3");
    expect(MPI_Send(buf, 1, MPI_DATATYPE_NULL, right, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "MPI_Send",
           "Send MPI_DATATYPE_NULL");
    expect(MPI_Send(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "MPI_Send", "Send to rank size");
    expect(MPI_Send(buf, 1, MPI_INT, -7, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "MPI_Send", "Send to rank -7");
    expect(MPI_Recv(rbuf, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_RANK, "MPI_Recv",
           "Recv from rank size+3");
    expect(MPI_Send(buf, 1, MPI_INT, right, -5, MPI_COMM_WORLD), MPI_ERR_TAG, "MPI_Send", "Send tag -5");
    expect(MPI_Send(buf, 1, MPI_INT, right, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG, "MPI_Send",
           "Send tag MPI_ANY_TAG");
    expect(MPI_Recv(rbuf, 1, MPI_INT, right, -5, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_TAG, "MPI_Recv",
           "Recv tag -5");
    {
        int *ub = NULL, flag = 0;
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
        CHECK(flag && ub, "no MPI_TAG_UB");
        if (*ub < 0x7fffffff)
            expect(MPI_Send(buf, 1, MPI_INT, right, *ub + 1, MPI_COMM_WORLD), MPI_ERR_TAG, "MPI_Send",
                   "Send tag MPI_TAG_UB+1");
    }
    expect(MPI_Send(NULL, 4, MPI_INT, right, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER, "MPI_Send",
           "Send NULL buffer count 4");
    MPI_Request req = MPI_REQUEST_NULL;
    expect(MPI_Isend(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &req), MPI_ERR_RANK, "MPI_Isend",
           "Isend to rank size");
    expect(MPI_Irecv(rbuf, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &req), MPI_ERR_TAG, "MPI_Irecv", "Irecv tag -5");
    expect(MPI_Bcast(buf, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT, "MPI_Bcast", "Bcast root size");
    expect(MPI_Bcast(buf, 1, MPI_INT, -1, MPI_COMM_WORLD), MPI_ERR_ROOT, "MPI_Bcast", "Bcast root -1");
    expect(MPI_Allreduce(buf, rbuf, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP, "MPI_Allreduce",
           "Allreduce MPI_OP_NULL");
    expect(MPI_Allreduce(dbuf, drbuf, 4, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP, "MPI_Allreduce",
           "Allreduce MPI_BAND on MPI_DOUBLE");
    expect(MPI_Allreduce(buf, rbuf, -2, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Allreduce",
           "Allreduce count -2");
    expect(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Barrier", "Barrier on MPI_COMM_NULL");

    /* ---- MPI_Error_class and MPI_Error_string of plain classes: every predefined one
     * (those of MPI-IO, RMA, the name service, MPI_T and sessions too), each with a
     * string of its own */
    {
        const int classes[] = {MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_TAG, MPI_ERR_COMM,
                               MPI_ERR_RANK,   MPI_ERR_ROOT,  MPI_ERR_OP,   MPI_ERR_ARG, MPI_ERR_TRUNCATE,
                               MPI_ERR_OTHER,  MPI_ERR_INTERN, MPI_ERR_IN_STATUS, MPI_ERR_PENDING,
                               MPI_ERR_GROUP, MPI_ERR_TOPOLOGY, MPI_ERR_DIMS, MPI_ERR_UNKNOWN, MPI_ERR_REQUEST,
                               MPI_ERR_ACCESS, MPI_ERR_AMODE, MPI_ERR_BAD_FILE, MPI_ERR_CONVERSION,
                               MPI_ERR_DUP_DATAREP, MPI_ERR_FILE_EXISTS, MPI_ERR_FILE_IN_USE, MPI_ERR_FILE,
                               MPI_ERR_INFO, MPI_ERR_INFO_KEY, MPI_ERR_INFO_VALUE, MPI_ERR_INFO_NOKEY,
                               MPI_ERR_IO, MPI_ERR_NAME, MPI_ERR_NO_MEM, MPI_ERR_NOT_SAME, MPI_ERR_NO_SPACE,
                               MPI_ERR_NO_SUCH_FILE, MPI_ERR_PORT, MPI_ERR_QUOTA, MPI_ERR_READ_ONLY,
                               MPI_ERR_SERVICE, MPI_ERR_SPAWN, MPI_ERR_UNSUPPORTED_DATAREP,
                               MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_WIN, MPI_ERR_BASE, MPI_ERR_LOCKTYPE,
                               MPI_ERR_KEYVAL, MPI_ERR_RMA_CONFLICT, MPI_ERR_RMA_SYNC, MPI_ERR_SIZE,
                               MPI_ERR_DISP, MPI_ERR_ASSERT, MPI_ERR_RMA_RANGE, MPI_ERR_RMA_ATTACH,
                               MPI_ERR_RMA_SHARED, MPI_ERR_RMA_FLAVOR, MPI_T_ERR_MEMORY,
                               MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_CANNOT_INIT, MPI_T_ERR_INVALID_INDEX,
                               MPI_T_ERR_INVALID_ITEM, MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_OUT_OF_HANDLES,
                               MPI_T_ERR_OUT_OF_SESSIONS, MPI_T_ERR_INVALID_SESSION,
                               MPI_T_ERR_CVAR_SET_NOT_NOW, MPI_T_ERR_CVAR_SET_NEVER,
                               MPI_T_ERR_PVAR_NO_STARTSTOP, MPI_T_ERR_PVAR_NO_WRITE,
                               MPI_T_ERR_PVAR_NO_ATOMIC, MPI_T_ERR_INVALID_NAME, MPI_T_ERR_INVALID,
                               MPI_ERR_SESSION, MPI_ERR_PROC_ABORTED, MPI_ERR_VALUE_TOO_LARGE,
                               MPI_T_ERR_NOT_SUPPORTED};
        const int n = (int)(sizeof classes / sizeof classes[0]);
        char seen_first[MPI_MAX_ERROR_STRING] = "";
        for (int i = 0; i < n; i++) {
            CHECK(error_class(classes[i]) == classes[i], "MPI_Error_class of class %d is %d", classes[i],
                  error_class(classes[i]));
            CHECK(classes[i] > MPI_SUCCESS && classes[i] <= MPI_ERR_LASTCODE, "class %d out of range", classes[i]);
            char msg[MPI_MAX_ERROR_STRING];
            int len = -1;
            CHECK(MPI_Error_string(classes[i], msg, &len) == MPI_SUCCESS, "MPI_Error_string(class %d)", classes[i]);
            CHECK(len > 0 && len == (int)strlen(msg), "MPI_Error_string(class %d) length %d", classes[i], len);
            if (i == 0) strcpy(seen_first, msg);
            else CHECK(strcmp(msg, seen_first) != 0, "classes %d and %d have the same string", classes[0], classes[i]);
            CHECK(classes[i] == MPI_ERR_UNKNOWN || !strstr(msg, "nknown"), "MPI_Error_string(class %d): \"%s\"", classes[i], msg);
            for (int j = 0; j < i; j++) {
                char other[MPI_MAX_ERROR_STRING];
                int olen;
                MPI_Error_string(classes[j], other, &olen);
                CHECK(strcmp(msg, other) != 0, "classes %d and %d have the same string \"%s\"", classes[j], classes[i], msg);
            }
        }
        CHECK(error_class(MPI_SUCCESS) == MPI_SUCCESS, "MPI_Error_class(MPI_SUCCESS)");
        char msg[MPI_MAX_ERROR_STRING];
        int len = -1;
        CHECK(MPI_Error_string(MPI_SUCCESS, msg, &len) == MPI_SUCCESS && len == (int)strlen(msg),
              "MPI_Error_string(MPI_SUCCESS)");
        /* A value that is no error code is itself an error (MPI_ERR_ARG). */
        int cls = 0;
        int rc = MPI_Error_class(-77, &cls);
        CHECK(rc != MPI_SUCCESS, "MPI_Error_class(-77) succeeded with class %d", cls);
    }

    /* ---- user error handler on MPI_COMM_WORLD */
    {
        MPI_Errhandler user = MPI_ERRHANDLER_NULL, got = MPI_ERRHANDLER_NULL;
        CHECK(MPI_Comm_create_errhandler(recorder, &user) == MPI_SUCCESS && user != MPI_ERRHANDLER_NULL,
              "MPI_Comm_create_errhandler");
        CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, user) == MPI_SUCCESS, "set the user handler");
        MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got);
        CHECK(got == user, "MPI_Comm_get_errhandler does not return the user handler");
        MPI_Errhandler_free(&got);
        CHECK(got == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free did not set MPI_ERRHANDLER_NULL");

        h_calls = 0;
        int rc = MPI_Send(buf, 1, MPI_INT, size + 1, 0, MPI_COMM_WORLD);
        CHECK(h_calls == 1, "user handler called %d times for one error", h_calls);
        CHECK(h_comm == MPI_COMM_WORLD, "user handler got the wrong communicator");
        CHECK(error_class(h_code) == MPI_ERR_RANK, "user handler got class %d, expected MPI_ERR_RANK",
              error_class(h_code));
        CHECK(rc == h_code, "MPI_Send returned %d after the handler, handler saw %d", rc, h_code);

        /* A correct call does not call the handler. */
        int x = rank, y = -1;
        MPI_Sendrecv(&x, 1, MPI_INT, rank, 1, &y, 1, MPI_INT, rank, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(h_calls == 1 && y == rank, "a correct Sendrecv called the handler or failed");

        /* MPI_Comm_call_errhandler */
        rc = MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER);
        CHECK(rc == MPI_SUCCESS, "MPI_Comm_call_errhandler returned %d", rc);
        CHECK(h_calls == 2 && h_code == MPI_ERR_OTHER && h_comm == MPI_COMM_WORLD,
              "MPI_Comm_call_errhandler: calls %d code %d", h_calls, h_code);

        /* Freeing the handler while the communicator uses it: it stays in effect. */
        CHECK(MPI_Errhandler_free(&user) == MPI_SUCCESS && user == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free");
        rc = MPI_Send(buf, 1, MPI_INT, right, -5, MPI_COMM_WORLD);
        CHECK(h_calls == 3 && error_class(h_code) == MPI_ERR_TAG && rc == h_code,
              "after MPI_Errhandler_free: calls %d class %d", h_calls, error_class(h_code));

        /* A handler on MPI_COMM_SELF gets MPI_COMM_SELF, and WORLD's handler is not called. */
        MPI_Errhandler self_eh;
        MPI_Comm_create_errhandler(recorder2, &self_eh);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, self_eh);
        MPI_Errhandler_free(&self_eh);
        rc = MPI_Send(buf, 1, MPI_INT, 1, 0, MPI_COMM_SELF);
        CHECK(h2_calls == 1 && h_calls == 3, "error on MPI_COMM_SELF: self handler %d calls, world handler %d",
              h2_calls, h_calls);
        CHECK(error_class(rc) == MPI_ERR_RANK, "Send to rank 1 of MPI_COMM_SELF: class %d", error_class(rc));
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    }

    /* ---- the MPI-1 names */
    {
        MPI_Errhandler old = MPI_ERRHANDLER_NULL, got = MPI_ERRHANDLER_NULL;
        CHECK(MPI_Errhandler_create(recorder2, &old) == MPI_SUCCESS && old != MPI_ERRHANDLER_NULL,
              "MPI_Errhandler_create");
        CHECK(MPI_Errhandler_set(MPI_COMM_WORLD, old) == MPI_SUCCESS, "MPI_Errhandler_set");
        CHECK(MPI_Errhandler_get(MPI_COMM_WORLD, &got) == MPI_SUCCESS && got == old, "MPI_Errhandler_get");
        MPI_Errhandler_free(&got);
        h2_calls = 0;
        int rc = MPI_Recv(rbuf, 1, MPI_INT, -9, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(h2_calls == 1 && error_class(rc) == MPI_ERR_RANK, "MPI-1 handler: %d calls, class %d", h2_calls,
              error_class(rc));
        MPI_Errhandler_set(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Errhandler_free(&old);
        CHECK(old == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free of an MPI-1 handler");
        /* Freeing a predefined handler is an error, and must not break it. */
        MPI_Errhandler pre = MPI_ERRORS_RETURN;
        (void)MPI_Errhandler_free(&pre);
        rc = MPI_Send(buf, 1, MPI_INT, right, -5, MPI_COMM_WORLD);
        CHECK(error_class(rc) == MPI_ERR_TAG, "MPI_ERRORS_RETURN after freeing a copy of it: class %d",
              error_class(rc));
    }

    /* ---- aliased send and receive buffers in the data-movement collectives: an
     * MPI_ERR_BUFFER where the call both sends and receives, raised before the call
     * takes part, so the rank that erred makes the collective up with correct
     * buffers, and every rank checks the result. */
    {
        int *a = malloc(sizeof(int) * 4 * (size + 1)), *b = malloc(sizeof(int) * 4 * (size + 1));
        CHECK(a && b, "malloc");
        for (int root = 0; root < size; root += size > 2 ? size - 1 : 1) {
            /* MPI_Gather: the root's sendbuf is its recvbuf */
            for (int i = 0; i < size; i++) a[i] = -1;
            a[0] = rank + 100;
            int rc = MPI_Gather(a, 1, MPI_INT, a, 1, MPI_INT, root, MPI_COMM_WORLD);
            if (rank == root) {
                expect(rc, MPI_ERR_BUFFER, "MPI_Gather", "aliased MPI_Gather at the root");
                b[0] = rank + 100;
                rc = MPI_Gather(b, 1, MPI_INT, a, 1, MPI_INT, root, MPI_COMM_WORLD);
                CHECK(rc == MPI_SUCCESS, "make-up MPI_Gather: %d", rc);
                for (int i = 0; i < size; i++) CHECK(a[i] == i + 100, "MPI_Gather after the error: [%d] = %d", i, a[i]);
            } else {
                CHECK(rc == MPI_SUCCESS, "MPI_Gather off the root: %d", rc);
            }
            /* MPI_Scatter: the root's recvbuf is its sendbuf */
            for (int i = 0; i < size; i++) a[i] = 200 + i;
            rc = MPI_Scatter(a, 1, MPI_INT, a, 1, MPI_INT, root, MPI_COMM_WORLD);
            if (rank == root) {
                expect(rc, MPI_ERR_BUFFER, "MPI_Scatter", "aliased MPI_Scatter at the root");
                rc = MPI_Scatter(a, 1, MPI_INT, b, 1, MPI_INT, root, MPI_COMM_WORLD);
                CHECK(rc == MPI_SUCCESS && b[0] == 200 + rank, "make-up MPI_Scatter: %d, got %d", rc, b[0]);
            } else {
                CHECK(rc == MPI_SUCCESS && a[0] == 200 + rank, "MPI_Scatter off the root: %d, got %d", rc, a[0]);
            }
        }
        /* MPI_Allgather and MPI_Alltoall(v): every rank errs, nobody takes part */
        int rc = MPI_Allgather(a, 1, MPI_INT, a, 1, MPI_INT, MPI_COMM_WORLD);
        expect(rc, MPI_ERR_BUFFER, "MPI_Allgather", "aliased MPI_Allgather");
        /* (recvbuf one element on: the block sent to rank 1 is the one received from 0) */
        rc = MPI_Alltoall(a, 1, MPI_INT, a + 1, 1, MPI_INT, MPI_COMM_WORLD);
        if (size > 1) expect(rc, MPI_ERR_BUFFER, "MPI_Alltoall", "overlapping MPI_Alltoall");
        int *cnt = malloc(sizeof(int) * 2 * size), *dsp = cnt + size;
        for (int i = 0; i < size; i++) cnt[i] = 1, dsp[i] = i;
        rc = MPI_Alltoallv(a, cnt, dsp, MPI_INT, a, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
        expect(rc, MPI_ERR_BUFFER, "MPI_Alltoallv", "aliased MPI_Alltoallv");
        /* Disjoint parts of one array are not aliased. */
        for (int i = 0; i < size; i++) a[i] = rank * 10 + i;
        rc = MPI_Alltoall(a, 1, MPI_INT, a + size, 1, MPI_INT, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "MPI_Alltoall on disjoint halves: %d", rc);
        for (int i = 0; i < size; i++) CHECK(a[size + i] == i * 10 + rank, "MPI_Alltoall [%d] = %d", i, a[size + i]);
        free(cnt);
        free(a);
        free(b);
    }

    /* ---- everything still works: a real exchange and a correct Allreduce */
    {
        for (int i = 0; i < 8; i++) buf[i] = rank * 10 + i;
        int left = (rank + size - 1) % size;
        MPI_Status st;
        int rc = MPI_Sendrecv(buf, 8, MPI_INT, right, 3, rbuf, 8, MPI_INT, left, 3, MPI_COMM_WORLD, &st);
        CHECK(rc == MPI_SUCCESS, "Sendrecv after the errors returned %d", rc);
        for (int i = 0; i < 8; i++) CHECK(rbuf[i] == left * 10 + i, "Sendrecv after errors: element %d", i);
        for (int i = 0; i < 4; i++) dbuf[i] = (rank + 1) * (i + 1);
        rc = MPI_Allreduce(dbuf, drbuf, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "Allreduce after the errors returned %d", rc);
        for (int i = 0; i < 4; i++)
            CHECK(drbuf[i] == size * (size + 1) / 2.0 * (i + 1), "Allreduce after errors: element %d is %g", i,
                  drbuf[i]);
    }

    if (rank == 0) printf("errors: OK on %d processes\n", size);
    MPI_Finalize();
    return 0;
}
