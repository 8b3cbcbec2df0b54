/* MPI_Comm_idup: the nonblocking MPI_Comm_dup. It takes its turn among the parent's
 * collectives in issue order (outstanding Iallreduce before and after it complete with
 * the right values, waited for in any order), does not block the caller until the others
 * arrive (a rank that starts it and then sends to a rank that receives before starting
 * it), copies attributes and the topology, works on intercommunicators, and the new
 * communicator is a working one, congruent to its parent. MPI-4 MPI_Comm_idup_with_info
 * gives the duplicate the info's hints. */
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

static int copies;

static int copy_fn(MPI_Comm c, int key, void *extra, void *in, void *out, int *flag) {
    (void)c, (void)key, (void)extra;
    copies++;
    *(void **)out = (void *)((long)in + 1);
    *flag = 1;
    return MPI_SUCCESS;
}

/* The sum of 0..n-1 plus n*k, computed here as the oracle. */
static long oracle(int n, long k) { return (long)n * (n - 1) / 2 + (long)n * k; }

static void check_comm(MPI_Comm parent, MPI_Comm c, const char *what) {
    int res = -1, inter = 0;
    MPI_Comm_compare(parent, c, &res);
    CHECK(res == MPI_CONGRUENT, "%s: compare gave %d", what, res);
    MPI_Comm_test_inter(c, &inter);
    if (!inter) {
        int r, n;
        MPI_Comm_rank(c, &r);
        MPI_Comm_size(c, &n);
        long x = r + 7, sum = -1;
        MPI_Allreduce(&x, &sum, 1, MPI_LONG, MPI_SUM, c);
        CHECK(sum == oracle(n, 7), "%s: Allreduce gave %ld, expected %ld", what, sum, oracle(n, 7));
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Overlapped with nonblocking collectives on the parent, waited in reverse order. */
    long a = rank, b = 2 * rank, ra = -1, rb = -1;
    MPI_Request reqs[3];
    MPI_Comm d = MPI_COMM_NULL;
    MPI_Iallreduce(&a, &ra, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &reqs[0]);
    MPI_Comm_idup(MPI_COMM_WORLD, &d, &reqs[1]);
    MPI_Iallreduce(&b, &rb, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &reqs[2]);
    MPI_Wait(&reqs[2], MPI_STATUS_IGNORE);
    MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    CHECK(ra == oracle(size, 0) && rb == 2 * oracle(size, 0), "Iallreduce around idup: %ld %ld", ra, rb);
    CHECK(d != MPI_COMM_NULL, "newcomm not set");
    check_comm(MPI_COMM_WORLD, d, "idup of MPI_COMM_WORLD");

    /* The caller is not blocked: rank 0 starts it, then sends to rank 1, which receives
     * before it starts its own. */
    MPI_Comm d2 = MPI_COMM_NULL;
    MPI_Request r;
    int token = 0;
    if (rank == 0) {
        MPI_Comm_idup(d, &d2, &r);
        token = 42;
        if (size > 1) MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    } else {
        if (rank == 1) MPI_Recv(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Comm_idup(d, &d2, &r);
    }
    int flag = 0;
    while (!flag) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    CHECK(rank > 1 || token == 42, "token %d", token);
    check_comm(d, d2, "idup while the others were busy");

    /* Attributes (copied by their callback) and the topology come along. */
    int key;
    MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &key, NULL);
    MPI_Comm cart, cart2;
    int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Comm_set_attr(cart, key, (void *)100L);
    MPI_Comm_idup(cart, &cart2, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    void *v = NULL;
    MPI_Comm_get_attr(cart2, key, &v, &flag);
    CHECK(flag && (long)v == 101 && copies == 1, "attribute on the idup: flag %d value %ld copies %d", flag, (long)v,
          copies);
    int topo = -1;
    MPI_Topo_test(cart2, &topo);
    CHECK(topo == MPI_CART, "topology of the idup: %d", topo);
    int src, dst;
    MPI_Cart_shift(cart2, 0, 1, &src, &dst);
    CHECK(dst == (rank + 1) % size, "shift on the idup: %d", dst);

    /* An intercommunicator: even and odd ranks. */
    if (size > 1) {
        MPI_Comm half, inter, inter2;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 9, &inter);
        MPI_Comm_idup(inter, &inter2, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        check_comm(inter, inter2, "idup of an intercommunicator");
        int rsize = -1, want = rank % 2 ? (size + 1) / 2 : size / 2;
        MPI_Comm_remote_size(inter2, &rsize);
        CHECK(rsize == want, "remote size %d, expected %d", rsize, want);
        /* An Allreduce across it: each side gets the other side's sum of ranks. */
        long me = rank, other = -1, expect = 0;
        MPI_Allreduce(&me, &other, 1, MPI_LONG, MPI_SUM, inter2);
        for (int i = 0; i < size; i++)
            if (i % 2 != rank % 2) expect += i;
        CHECK(other == expect, "Allreduce on the intercomm idup: %ld, expected %ld", other, expect);
        MPI_Comm_free(&inter2);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }

    /* MPI-4 MPI_Comm_idup_with_info: the duplicate takes the info's hints. */
    {
        MPI_Info info, got;
        MPI_Comm di;
        MPI_Info_create(&info);
        MPI_Info_set(info, "shmpi_check_args", "false");
        MPI_Comm_idup_with_info(MPI_COMM_WORLD, info, &di, &r);
        MPI_Info_free(&info);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        check_comm(MPI_COMM_WORLD, di, "idup_with_info");
        char v[16] = "";
        int vlen = sizeof v;
        MPI_Comm_get_info(di, &got);
        MPI_Info_get_string(got, "shmpi_check_args", &vlen, v, &flag);
        CHECK(flag && v[0] == 'f', "idup_with_info hint: flag %d value '%s'", flag, v);
        MPI_Info_free(&got);
        MPI_Comm_free(&di);
    }

    /* Bad arguments. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_idup(MPI_COMM_WORLD, &d2, NULL), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "NULL request: class %d", cls);

    MPI_Comm_free(&cart2);
    MPI_Comm_free(&cart);
    MPI_Comm_free(&d2);
    MPI_Comm_free(&d);
    MPI_Comm_free_keyval(&key);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "FAILED: %d failures\n" : "No Errors\n", total);
    MPI_Finalize();
    return total != 0;
}
