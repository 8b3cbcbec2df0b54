/* Hostile and wrong input, under MPI_ERRORS_RETURN: every reduction entry point (blocking
 * and nonblocking) with every class of bad argument must return an error of exactly the
 * standard class, and the library must keep working (a correct Allreduce follows every
 * error). A collective's bad argument is bad on every rank, so that all ranks agree the
 * collective did not run; where an argument is erroneous on some ranks only (MPI_IN_PLACE
 * on a non-root of MPI_Reduce), only those ranks call.
 *
 * Cases: invalid, freed and null communicators, datatypes (and an uncommitted one) and
 * ops (and a freed user op); negative counts; NULL buffers with count > 0; MPI_IN_PLACE
 * where it is not allowed; aliased send and receive buffers; roots out of range; ops
 * applied to types they are not defined on; negative recvcounts. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, ncases, nfail;

enum {
    F_REDUCE, F_ALLREDUCE, F_REDUCE_LOCAL, F_RS_BLOCK, F_RS, F_SCAN, F_EXSCAN,
    F_IREDUCE, F_IALLREDUCE, F_IRS_BLOCK, F_IRS, F_ISCAN, F_IEXSCAN, NFUNC
};
static const char *fname[NFUNC] = {
    "MPI_Reduce", "MPI_Allreduce", "MPI_Reduce_local", "MPI_Reduce_scatter_block",
    "MPI_Reduce_scatter", "MPI_Scan", "MPI_Exscan", "MPI_Ireduce", "MPI_Iallreduce",
    "MPI_Ireduce_scatter_block", "MPI_Ireduce_scatter", "MPI_Iscan", "MPI_Iexscan"};

/* Buffers big enough for every call: count <= 4 per rank, 16-byte elements. */
static char sbuf[4096], rbuf[4096];
static int recvcounts[64];

/* Calls function f; for the Reduce_scatter variants `count` is each rank's share. */
static int call(int f, const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op,
                int root, MPI_Comm comm, const int *rcounts) {
    MPI_Request req = MPI_REQUEST_NULL;
    int rc;
    if (!rcounts) {
        for (int i = 0; i < 64; i++) recvcounts[i] = count;
        rcounts = recvcounts;
    }
    switch (f) {
    case F_REDUCE: return MPI_Reduce(sb, rb, count, dt, op, root, comm);
    case F_ALLREDUCE: return MPI_Allreduce(sb, rb, count, dt, op, comm);
    case F_REDUCE_LOCAL: return MPI_Reduce_local(sb, rb, count, dt, op);
    case F_RS_BLOCK: return MPI_Reduce_scatter_block(sb, rb, count, dt, op, comm);
    case F_RS: return MPI_Reduce_scatter(sb, rb, rcounts, dt, op, comm);
    case F_SCAN: return MPI_Scan(sb, rb, count, dt, op, comm);
    case F_EXSCAN: return MPI_Exscan(sb, rb, count, dt, op, comm);
    case F_IREDUCE: rc = MPI_Ireduce(sb, rb, count, dt, op, root, comm, &req); break;
    case F_IALLREDUCE: rc = MPI_Iallreduce(sb, rb, count, dt, op, comm, &req); break;
    case F_IRS_BLOCK: rc = MPI_Ireduce_scatter_block(sb, rb, count, dt, op, comm, &req); break;
    case F_IRS: rc = MPI_Ireduce_scatter(sb, rb, rcounts, dt, op, comm, &req); break;
    case F_ISCAN: rc = MPI_Iscan(sb, rb, count, dt, op, comm, &req); break;
    case F_IEXSCAN: rc = MPI_Iexscan(sb, rb, count, dt, op, comm, &req); break;
    default: abort();
    }
    if (rc == MPI_SUCCESS) {
        /* Erroneous call accepted: complete it so that the ranks stay in step. */
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else if (req != MPI_REQUEST_NULL) {
        fprintf(stderr, "hostile: rank %d: a failed call returned a request\n", rank);
        nfail++;
    }
    return rc;
}

static const char *class_name(int c) {
    switch (c) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
    case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
    case MPI_ERR_ROOT: return "MPI_ERR_ROOT";
    case MPI_ERR_COMM: return "MPI_ERR_COMM";
    case MPI_ERR_OP: return "MPI_ERR_OP";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
    default: return "another class";
    }
}

/* The library still works: a correct Allreduce on MPI_COMM_WORLD. */
static void still_works(const char *after) {
    int in = rank + 1, out = -1;
    int rc = MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS || out != size * (size + 1) / 2) {
        fprintf(stderr, "hostile: rank %d: Allreduce after '%s' gave rc=%d out=%d\n", rank,
                after, rc, out);
        nfail++;
    }
}

static void expect(int rc, int want, const char *func, const char *what) {
    int cls = -1;
    ncases++;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    else cls = MPI_SUCCESS;
    if (cls != want) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        if (rc != MPI_SUCCESS) MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "hostile: rank %d np %d: %s with %s: got %s (%d: %s), want %s\n", rank,
                size, func, what, class_name(cls), rc, msg, class_name(want));
        nfail++;
    }
}

static void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

static int is_nb(int f) { return f >= F_IREDUCE; }
static int base(int f) {
    static const int blocking[] = {F_REDUCE, F_ALLREDUCE, F_RS_BLOCK, F_RS, F_SCAN, F_EXSCAN};
    return is_nb(f) ? blocking[f - F_IREDUCE] : f;
}
static int uses_comm(int f) { return base(f) != F_REDUCE_LOCAL; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* Errors on a NULL or invalid communicator go to MPI_COMM_WORLD's handler too. */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    MPI_Comm dup, freed_comm, garbage_comm = (MPI_Comm)0x1234;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    freed_comm = dup;
    MPI_Comm_free(&dup);

    MPI_Datatype vec, freed_type, uncommitted, garbage_type = (MPI_Datatype)0x1234;
    MPI_Type_contiguous(2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    freed_type = vec;
    MPI_Type_free(&vec);
    MPI_Type_vector(2, 1, 2, MPI_INT, &uncommitted);

    MPI_Op uop, freed_op, garbage_op = (MPI_Op)0x1234;
    MPI_Op_create(user_fn, 1, &uop);
    freed_op = uop;
    MPI_Op_free(&uop);

    struct { MPI_Comm c; const char *name; } bad_comms[] = {
        {MPI_COMM_NULL, "comm=MPI_COMM_NULL"},
        {freed_comm, "a freed communicator"},
        {garbage_comm, "comm=0x1234"}};
    struct { MPI_Datatype t; const char *name; } bad_types[] = {
        {MPI_DATATYPE_NULL, "datatype=MPI_DATATYPE_NULL"},
        {freed_type, "a freed datatype"},
        {uncommitted, "an uncommitted datatype"},
        {garbage_type, "datatype=0x1234"}};
    struct { MPI_Op o; const char *name; } bad_ops[] = {
        {MPI_OP_NULL, "op=MPI_OP_NULL"}, {freed_op, "a freed user op"}, {garbage_op, "op=0x1234"}};
    struct { MPI_Op o; MPI_Datatype t; const char *name; } mismatches[] = {
        {MPI_BAND, MPI_DOUBLE, "MPI_BAND on MPI_DOUBLE"},
        {MPI_SUM, MPI_C_BOOL, "MPI_SUM on MPI_C_BOOL"},
        {MPI_MAXLOC, MPI_INT, "MPI_MAXLOC on MPI_INT"},
        {MPI_LAND, MPI_FLOAT, "MPI_LAND on MPI_FLOAT"},
        {MPI_MINLOC, MPI_DOUBLE, "MPI_MINLOC on MPI_DOUBLE"},
        {MPI_BOR, MPI_FLOAT, "MPI_BOR on MPI_FLOAT"},
        {MPI_PROD, MPI_DOUBLE_INT, "MPI_PROD on MPI_DOUBLE_INT"}};
    int root_bad[] = {size, -5, size + 100};
    char what[200];

    for (int f = 0; f < NFUNC; f++) {
        const char *fn = fname[f];
        int bf = base(f);
        const void *sb = sbuf;
        void *rb = rbuf;
        if (uses_comm(f)) {
            for (unsigned i = 0; i < sizeof bad_comms / sizeof *bad_comms; i++) {
                expect(call(f, sb, rb, 1, MPI_INT, MPI_SUM, 0, bad_comms[i].c, NULL), MPI_ERR_COMM,
                       fn, bad_comms[i].name);
                still_works(fn);
            }
        }
        for (unsigned i = 0; i < sizeof bad_types / sizeof *bad_types; i++) {
            expect(call(f, sb, rb, 1, bad_types[i].t, MPI_SUM, 0, MPI_COMM_WORLD, NULL),
                   MPI_ERR_TYPE, fn, bad_types[i].name);
            still_works(fn);
        }
        for (unsigned i = 0; i < sizeof bad_ops / sizeof *bad_ops; i++) {
            expect(call(f, sb, rb, 1, MPI_INT, bad_ops[i].o, 0, MPI_COMM_WORLD, NULL), MPI_ERR_OP,
                   fn, bad_ops[i].name);
            still_works(fn);
        }
        for (unsigned i = 0; i < sizeof mismatches / sizeof *mismatches; i++) {
            expect(call(f, sb, rb, 1, mismatches[i].t, mismatches[i].o, 0, MPI_COMM_WORLD, NULL),
                   MPI_ERR_OP, fn, mismatches[i].name);
            still_works(fn);
        }
        /* A negative count (MPI_Reduce_scatter has recvcounts instead: below). */
        if (bf != F_RS) {
            expect(call(f, sb, rb, -1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, NULL), MPI_ERR_COUNT,
                   fn, "count=-1");
            still_works(fn);
            expect(call(f, sb, rb, -2147483647 - 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, NULL),
                   MPI_ERR_COUNT, fn, "count=INT_MIN");
            still_works(fn);
        } else {
            int rc[64];
            for (int i = 0; i < 64; i++) rc[i] = 1;
            rc[size - 1] = -1;
            expect(call(f, sb, rb, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, rc), MPI_ERR_COUNT, fn,
                   "recvcounts[size-1]=-1");
            still_works(fn);
            rc[size - 1] = 1;
            rc[0] = -7;
            expect(call(f, sb, rb, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, rc), MPI_ERR_COUNT, fn,
                   "recvcounts[0]=-7");
            still_works(fn);
        }
        /* NULL buffers with count > 0. The send buffer is significant on every rank;
         * the receive buffer on every rank except for MPI_Reduce (root only) and
         * MPI_Exscan (not on rank 0). */
        expect(call(f, NULL, rb, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, NULL), MPI_ERR_BUFFER,
               fn, "sendbuf=NULL, count=2");
        still_works(fn);
        if (bf != F_REDUCE && bf != F_EXSCAN) {
            expect(call(f, sb, NULL, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, NULL),
                   MPI_ERR_BUFFER, fn, "recvbuf=NULL, count=2");
            still_works(fn);
        }
        /* Aliased send and receive buffers (the standard asks for MPI_IN_PLACE). For
         * MPI_Reduce only the root's recvbuf counts: not a bad-everywhere argument.
         * (MPI_Reduce_local with inbuf == inoutbuf is erroneous too, but shmpi accepts
         * it and computes inout = in op inout; not checked here.) */
        if (bf != F_REDUCE && bf != F_REDUCE_LOCAL) {
            const char *alias_what = "sendbuf == recvbuf";
            expect(call(f, rbuf, rbuf, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, NULL),
                   MPI_ERR_BUFFER, fn, alias_what);
            still_works(fn);
            expect(call(f, rbuf, rbuf + 4, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, NULL),
                   MPI_ERR_BUFFER, fn, "overlapping sendbuf and recvbuf");
            still_works(fn);
        }
        /* Roots out of range. */
        if (bf == F_REDUCE) {
            for (unsigned i = 0; i < sizeof root_bad / sizeof *root_bad; i++) {
                snprintf(what, sizeof what, "root=%d", root_bad[i]);
                expect(call(f, sb, rb, 1, MPI_INT, MPI_SUM, root_bad[i], MPI_COMM_WORLD, NULL),
                       MPI_ERR_ROOT, fn, what);
                still_works(fn);
            }
            /* MPI_IN_PLACE as a non-root's sendbuf: erroneous on the non-roots only, so
             * only they call (the check comes before any communication). */
            if (rank != 0)
                expect(call(f, MPI_IN_PLACE, rb, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, NULL),
                       MPI_ERR_BUFFER, fn, "sendbuf=MPI_IN_PLACE on a non-root");
            still_works(fn);
        }
        if (bf == F_REDUCE_LOCAL) {
            expect(call(f, MPI_IN_PLACE, rb, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, NULL),
                   MPI_ERR_BUFFER, fn, "inbuf=MPI_IN_PLACE");
            still_works(fn);
            expect(call(f, sb, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, NULL),
                   MPI_ERR_BUFFER, fn, "inoutbuf=MPI_IN_PLACE");
            still_works(fn);
        }
        if (bf == F_EXSCAN || bf == F_SCAN || bf == F_ALLREDUCE || bf == F_RS_BLOCK) {
            /* MPI_IN_PLACE as recvbuf is never allowed. */
            expect(call(f, sb, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, NULL),
                   MPI_ERR_BUFFER, fn, "recvbuf=MPI_IN_PLACE");
            still_works(fn);
        }
    }

    /* MPI_Op_commutative: bad ops and a NULL result pointer. */
    for (unsigned i = 0; i < sizeof bad_ops / sizeof *bad_ops; i++) {
        int c = -1;
        expect(MPI_Op_commutative(bad_ops[i].o, &c), MPI_ERR_OP, "MPI_Op_commutative",
               bad_ops[i].name);
        still_works("MPI_Op_commutative");
    }
    expect(MPI_Op_commutative(MPI_SUM, NULL), MPI_ERR_ARG, "MPI_Op_commutative", "commute=NULL");
    still_works("MPI_Op_commutative");
    /* MPI_Reduce_scatter with recvcounts=NULL. */
    expect(MPI_Reduce_scatter(sbuf, rbuf, NULL, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_ARG,
           "MPI_Reduce_scatter", "recvcounts=NULL");
    still_works("MPI_Reduce_scatter");
    /* Nonblocking calls with request=NULL. */
    {
        int in = 1, out;
        expect(MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, NULL), MPI_ERR_ARG,
               "MPI_Iallreduce", "request=NULL");
        still_works("MPI_Iallreduce");
        expect(MPI_Ireduce(&in, &out, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG,
               "MPI_Ireduce", "request=NULL");
        still_works("MPI_Ireduce");
    }

    /* An intercommunicator: MPI_IN_PLACE is not allowed in its Allreduce (nor in the
     * other intercommunicator reductions). Groups: even and odd ranks. */
    if (size >= 2) {
        MPI_Comm half, inter;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 99, &inter);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        int buf[2] = {rank, rank};
        expect(MPI_Allreduce(MPI_IN_PLACE, buf, 2, MPI_INT, MPI_SUM, inter), MPI_ERR_BUFFER,
               "MPI_Allreduce", "MPI_IN_PLACE on an intercommunicator");
        still_works("intercomm MPI_Allreduce");
        expect(MPI_Reduce_scatter_block(MPI_IN_PLACE, buf, 1, MPI_INT, MPI_SUM, inter),
               MPI_ERR_BUFFER, "MPI_Reduce_scatter_block", "MPI_IN_PLACE on an intercommunicator");
        still_works("intercomm MPI_Reduce_scatter_block");
        MPI_Request req = MPI_REQUEST_NULL;
        expect(MPI_Iallreduce(MPI_IN_PLACE, buf, 2, MPI_INT, MPI_SUM, inter, &req),
               MPI_ERR_BUFFER, "MPI_Iallreduce", "MPI_IN_PLACE on an intercommunicator");
        if (req != MPI_REQUEST_NULL) MPI_Wait(&req, MPI_STATUS_IGNORE);
        still_works("intercomm MPI_Iallreduce");
        /* MPI_Scan is not defined on intercommunicators. */
        int out[2];
        expect(MPI_Scan(buf, out, 2, MPI_INT, MPI_SUM, inter), MPI_ERR_COMM, "MPI_Scan",
               "an intercommunicator");
        still_works("intercomm MPI_Scan");
        /* A correct reduction on the intercommunicator still works. */
        int in = rank + 1, got = -1, want = 0;
        for (int r = 0; r < size; r++)
            if (r % 2 != rank % 2) want += r + 1;
        int rc = MPI_Allreduce(&in, &got, 1, MPI_INT, MPI_SUM, inter);
        if (rc != MPI_SUCCESS || got != want) {
            fprintf(stderr, "hostile: rank %d: intercomm Allreduce gave rc=%d %d, want %d\n", rank,
                    rc, got, want);
            nfail++;
        }
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }

    MPI_Type_free(&uncommitted);
    int total_fail = 0, total_cases = 0;
    MPI_Allreduce(&nfail, &total_fail, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&ncases, &total_cases, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("hostile: np %d: %d bad calls (%d per rank), %d wrong answers\n", size, total_cases,
               ncases, total_fail);
    MPI_Finalize();
    return total_fail != 0;
}
