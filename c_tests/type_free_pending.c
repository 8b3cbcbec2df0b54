/* MPI_Type_free while nonblocking collectives still use the datatype: the standard says
 * they complete normally. The handles are freed right after the calls start and new
 * datatypes are created at once (which may get the same handle values); only then are
 * the requests waited for. Covered: MPI_Iallreduce of a strided vector type with
 * MPI_SUM and with a user-defined operation, MPI_Ibcast and MPI_Igather of the same
 * type; and persistent MPI_Allreduce_init requests whose datatype, communicator and
 * user operation are freed (and their handles taken by new ones) before their starts. Every result is compared
 * with values computed here, and the gaps of the strided type must stay untouched. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

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

/* inout = in + inout on the strided type: the operation sees the type's memory layout
 * (one element spans `span` doubles, every other one data), so it walks every other
 * double. It does not look at *dt: that handle was freed by the time it runs. */
static long span;
/* what a new operation on a freed one's handle does: anything else */
static void user_zero(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)in;
    (void)dt;
    double *b = inout;
    for (long e = 0; e < *len; e++)
        for (long i = 0; i < span; i += 2) b[e * span + i] = 0;
}
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    const double *a = in;
    double *b = inout;
    for (long e = 0; e < *len; e++)
        for (long i = 0; i < span; i += 2) b[e * span + i] += a[e * span + i];
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op op;
    MPI_Op_create(user_sum, 1, &op);
    const int n = 50000; /* doubles per element used; the element spans 2n - 1 */
    span = 2 * n - 1;
    double *a = malloc(2 * n * sizeof *a), *r1 = malloc(2 * n * sizeof *r1), *r2 = malloc(2 * n * sizeof *r2);
    double *bc = malloc(2 * n * sizeof *bc), *g = malloc((size_t)size * 2 * n * sizeof *g);
    for (int i = 0; i < 2 * n; i++) a[i] = rank + (double)(i % 97);
    for (int it = 0; it < 6; it++) {
        MPI_Datatype t, other[3];
        MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &t);
        MPI_Type_commit(&t);
        for (int i = 0; i < 2 * n; i++) r1[i] = r2[i] = bc[i] = -1;
        for (long i = 0; i < (long)size * 2 * n; i++) g[i] = -1;
        if (rank == it % size)
            for (int i = 0; i < 2 * n; i++) bc[i] = 1000 + i;
        /* one rank comes late, so that the others' operations are still pending when
         * they free the types */
        if (size > 1 && rank == (it + 1) % size) {
            volatile double x = 0;
            for (long k = 0; k < 20000000; k++) x += (double)k;
        }
        MPI_Request q[4];
        MPI_Iallreduce(a, r1, 1, t, MPI_SUM, MPI_COMM_WORLD, &q[0]);
        MPI_Iallreduce(a, r2, 1, t, op, MPI_COMM_WORLD, &q[1]);
        MPI_Ibcast(bc, 1, t, it % size, MPI_COMM_WORLD, &q[2]);
        /* the root receives size elements of the type: one per rank, 2n doubles apart
         * (the type's extent is 2n - 1 doubles, so a resized copy spaces them) */
        MPI_Datatype tr;
        MPI_Type_create_resized(t, 0, 2 * n * (MPI_Aint)sizeof(double), &tr);
        MPI_Type_commit(&tr);
        MPI_Igather(a, 1, t, g, 1, tr, 0, MPI_COMM_WORLD, &q[3]);
        MPI_Type_free(&tr);
        MPI_Type_free(&t);
        CHECK(t == MPI_DATATYPE_NULL, "MPI_Type_free did not set the handle to MPI_DATATYPE_NULL");
        /* new datatypes, likely on the freed handles */
        MPI_Type_contiguous(3, MPI_INT, &other[0]);
        MPI_Type_vector(2, 2, 5, MPI_SHORT, &other[1]);
        MPI_Type_contiguous(7, MPI_CHAR, &other[2]);
        for (int k = 0; k < 3; k++) MPI_Type_commit(&other[k]);
        MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        for (int k = 0; k < 3; k++) MPI_Type_free(&other[k]);
        int bad = -1;
        for (int i = 0; i < 2 * n && bad < 0; i++) {
            double want = (i % 2) ? -1 : (double)size * (size - 1) / 2 + (double)size * (i % 97);
            if (r1[i] != want || r2[i] != want) bad = i;
        }
        CHECK(bad < 0, "round %d: MPI_Iallreduce after MPI_Type_free: double %d is %g / %g", it, bad,
              bad < 0 ? 0.0 : r1[bad], bad < 0 ? 0.0 : r2[bad]);
        bad = -1;
        for (int i = 0; i < 2 * n && bad < 0; i++) {
            double want = (i % 2) ? (rank == it % size ? 1000 + i : -1) : 1000 + i;
            if (bc[i] != want) bad = i;
        }
        CHECK(bad < 0, "round %d: MPI_Ibcast after MPI_Type_free: double %d is %g", it, bad, bad < 0 ? 0.0 : bc[bad]);
        if (rank == 0) {
            bad = -1;
            for (long i = 0; i < (long)size * 2 * n && bad < 0; i++) {
                long r = i / (2 * n), j = i % (2 * n);
                double want = (j % 2 == 0 && j < 2 * n - 1) ? r + (double)(j % 97) : -1;
                if (g[i] != want) bad = (int)i;
            }
            CHECK(bad < 0, "round %d: MPI_Igather after MPI_Type_free: double %d is %g", it, bad,
                  bad < 0 ? 0.0 : g[bad]);
        }
    }
    /* A persistent MPI_Allreduce_init keeps the datatype and the communicator it was
     * created with: both are freed, new ones take their handles, and every start must
     * still reduce with the original type over the original communicator. */
    {
        MPI_Comm pc, nc;
        MPI_Datatype t, nt;
        MPI_Comm_dup(MPI_COMM_WORLD, &pc);
        MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &t);
        MPI_Type_commit(&t);
        MPI_Request pq, pu;
        MPI_Op pop, nop;
        MPI_Op_create(user_sum, 1, &pop);
        MPI_Allreduce_init(a, r1, 1, t, MPI_SUM, pc, MPI_INFO_NULL, &pq);
        MPI_Allreduce_init(a, r2, 1, t, pop, pc, MPI_INFO_NULL, &pu);
        MPI_Type_free(&t);
        MPI_Comm_free(&pc);
        MPI_Op_free(&pop);
        MPI_Op_create(user_zero, 1, &nop);
        MPI_Type_contiguous(3, MPI_INT, &nt);
        MPI_Type_commit(&nt);
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &nc);
        for (int k = 0; k < 3; k++) {
            for (int i = 0; i < 2 * n; i++) r1[i] = r2[i] = -1;
            MPI_Request both[2] = {pq, pu};
            MPI_Startall(2, both);
            MPI_Waitall(2, both, MPI_STATUSES_IGNORE);
            int bad = -1;
            for (int i = 0; i < 2 * n && bad < 0; i++) {
                double want = (i % 2) ? -1 : (double)size * (size - 1) / 2 + (double)size * (i % 97);
                if (r1[i] != want || r2[i] != want) bad = i;
            }
            CHECK(bad < 0, "start %d of persistent MPI_Allreduces after their type, communicator and op were freed: double %d is %g / %g",
                  k, bad, bad < 0 ? 0.0 : r1[bad], bad < 0 ? 0.0 : r2[bad]);
        }
        MPI_Request_free(&pq);
        MPI_Request_free(&pu);
        MPI_Op_free(&nop);
        MPI_Type_free(&nt);
        MPI_Comm_free(&nc);
    }
    MPI_Op_free(&op);
    free(a);
    free(r1);
    free(r2);
    free(bc);
    free(g);
    int all;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("type_free_pending: np=%d: %s (%d failures)\n", size, all ? "FAILED" : "ok", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
