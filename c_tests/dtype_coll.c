/* Derived datatypes in communication and reductions, against a sequential oracle that
 * computes the expected memory independently (plain loops over the layout):
 * strided columns, structs with holes, resized types with a negative lower bound,
 * nested types, a contiguous of MPI_DOUBLE_INT with MAXLOC, user ops on structs. */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures;
#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            if (failures++ < 10) {                                          \
                fprintf(stderr, "rank %d: FAIL line %d: ", rank, __LINE__);  \
                fprintf(stderr, __VA_ARGS__);                               \
                fprintf(stderr, "\n");                                      \
            }                                                               \
        }                                                                   \
    } while (0)

typedef struct { double a; int b; char hole[4]; double c; } rec; /* b..c has a hole */
static void rec_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    /* (a, c) is the affine map t -> a*t + c; inout = in o inout (composition:
     * associative, not commutative); b: max. Small integers keep doubles exact. */
    rec *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        double a = x[i].a * y[i].a, c = x[i].a * y[i].c + x[i].c;
        y[i].a = a;
        y[i].c = c;
        if (x[i].b > y[i].b) y[i].b = x[i].b;
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum { R = 9, C = 7 };

    /* A column of an R x C row-major matrix of doubles. */
    MPI_Datatype col, colr;
    MPI_Type_vector(R, 1, C, MPI_DOUBLE, &col);
    MPI_Type_commit(&col);
    MPI_Type_create_resized(col, 0, sizeof(double), &colr); /* consecutive columns */
    MPI_Type_commit(&colr);

    double m[R][C], out[R][C];
    for (int i = 0; i < R; i++) for (int j = 0; j < C; j++) m[i][j] = 100 * rank + 10 * i + j;

    /* Point-to-point: column j of rank r-1 lands in a contiguous array and as column j. */
    if (size > 1) {
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        double v[R];
        MPI_Sendrecv(&m[0][2], 1, col, to, 1, v, R, MPI_DOUBLE, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < R; i++) CHECK(v[i] == 100 * from + 10 * i + 2, "column->contiguous %d", i);
        memset(out, 0, sizeof out);
        MPI_Status st;
        MPI_Sendrecv(v, R, MPI_DOUBLE, to, 2, &out[0][5], 1, col, from, 2, MPI_COMM_WORLD, &st);
        int from2 = (from + size - 1) % size, cnt, el;
        for (int i = 0; i < R; i++) CHECK(out[i][5] == 100 * from2 + 10 * i + 2 && out[i][4] == 0, "contiguous->column %d", i);
        MPI_Get_count(&st, col, &cnt);
        MPI_Get_elements(&st, col, &el);
        CHECK(cnt == 1 && el == R, "Get_count %d Get_elements %d", cnt, el);
        /* A large strided message: 3000 x 2 doubles, every other one. */
        int n = 3000;
        double *big = malloc(2 * n * sizeof(double)), *got = malloc(2 * n * sizeof(double));
        for (int i = 0; i < 2 * n; i++) big[i] = rank * 1e6 + i;
        MPI_Datatype every2;
        MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &every2);
        MPI_Type_commit(&every2);
        for (int i = 0; i < 2 * n; i++) got[i] = -1;
        MPI_Sendrecv(big, 1, every2, to, 3, got + 1, 1, every2, from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++) CHECK(got[2 * i + 1] == from * 1e6 + 2 * i && got[2 * i] == -1, "strided big %d", i);
        MPI_Type_free(&every2);
        free(big); free(got);
    }

    /* Allreduce of two columns (count 2 of the resized column type): sum over ranks. */
    memset(out, 0, sizeof out);
    MPI_Allreduce(&m[0][1], &out[0][1], 2, colr, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            double want = (j == 1 || j == 2) ? 100.0 * size * (size - 1) / 2 + size * (10 * i + j) : 0;
            CHECK(out[i][j] == want, "Allreduce column [%d][%d] = %g want %g", i, j, out[i][j], want);
        }
    /* In place, and Reduce at every root, and Reduce_scatter_block of columns. */
    for (int root = 0; root < size; root++) {
        double w[R][C];
        memcpy(w, m, sizeof w);
        MPI_Reduce(rank == root ? MPI_IN_PLACE : &w[0][0], &w[0][0], 3, colr, MPI_MAX, root, MPI_COMM_WORLD);
        if (rank == root)
            for (int i = 0; i < R; i++)
                for (int j = 0; j < C; j++) {
                    double want = j < 3 ? 100.0 * (size - 1) + 10 * i + j : m[i][j];
                    CHECK(w[i][j] == want, "Reduce in place root %d [%d][%d]", root, i, j);
                }
    }
    if (size <= C) {
        double rs[R][C];
        memset(rs, 0, sizeof rs);
        MPI_Reduce_scatter_block(&m[0][0], &rs[0][0], 1, colr, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < R; i++) CHECK(rs[i][0] == 100.0 * size * (size - 1) / 2 + size * (10 * i + rank), "Reduce_scatter_block column %d", i);
    }

    /* Struct with a hole and a user op (non-commutative in field a). */
    MPI_Datatype rt, rtr;
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {offsetof(rec, a), offsetof(rec, b), offsetof(rec, c)};
    MPI_Datatype types[3] = {MPI_DOUBLE, MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(3, bl, disp, types, &rt);
    MPI_Type_create_resized(rt, 0, sizeof(rec), &rtr);
    MPI_Type_commit(&rtr);
    MPI_Op op;
    MPI_Op_create(rec_op, 0, &op);
    enum { N = 5 };
    rec mine[N], res[N];
    for (int k = 0; k < N; k++) { mine[k].a = (rank + k) % 3 + 1; mine[k].b = (rank * 7 + k) % 5; mine[k].c = rank + k; memset(mine[k].hole, 0x5a, 4); }
    memset(res, 0x33, sizeof res);
    MPI_Allreduce(mine, res, N, rtr, op, MPI_COMM_WORLD);
    for (int k = 0; k < N; k++) {
        /* Oracle: x0 o x1 o ... o x(n-1), folded left to right. */
        double a = k % 3 + 1, c = k; int b = k % 5;
        for (int r = 1; r < size; r++) {
            double xa = (r + k) % 3 + 1, xc = r + k;
            c = a * xc + c;
            a = a * xa;
            if ((r * 7 + k) % 5 > b) b = (r * 7 + k) % 5;
        }
        CHECK(res[k].a == a && res[k].b == b && res[k].c == c, "struct user op k=%d: %g %d %g want %g %d %g", k, res[k].a, res[k].b, res[k].c, a, b, c);
        CHECK(res[k].hole[0] == 0x33, "the hole of the receive buffer was written");
    }
    /* Predefined op on a struct of mixed types: MPI_ERR_OP. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Allreduce(mine, res, N, rtr, MPI_SUM, MPI_COMM_WORLD), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "SUM on a mixed struct: class %d", cls);
    /* Uncommitted type: MPI_ERR_TYPE. */
    MPI_Datatype unc;
    MPI_Type_contiguous(2, MPI_INT, &unc);
    int two[2] = {1, 2};
    rc = MPI_Bcast(two, 1, unc, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "uncommitted type: class %d", cls);
    MPI_Type_free(&unc);

    /* Bcast, Gather and Alltoall with the struct type. */
    rec b[N];
    for (int k = 0; k < N; k++) { b[k] = mine[k]; if (rank != 0) memset(&b[k], 0, sizeof b[k]); }
    MPI_Bcast(b, N, rtr, 0, MPI_COMM_WORLD);
    for (int k = 0; k < N; k++) CHECK(b[k].a == k % 3 + 1 && b[k].c == k, "Bcast struct %d", k);
    rec *all = calloc((size_t)size * N, sizeof(rec));
    MPI_Gather(mine, N, rtr, all, N, rtr, size - 1, MPI_COMM_WORLD);
    if (rank == size - 1)
        for (int r = 0; r < size; r++) for (int k = 0; k < N; k++) CHECK(all[r * N + k].a == (r + k) % 3 + 1 && all[r * N + k].b == (r * 7 + k) % 5, "Gather struct %d/%d", r, k);
    /* Alltoall of columns: column j of my matrix goes to rank j. */
    if (size <= C) {
        double rcv[R][C];
        memset(rcv, 0, sizeof rcv);
        MPI_Alltoall(&m[0][0], 1, colr, &rcv[0][0], 1, colr, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++) for (int i = 0; i < R; i++) CHECK(rcv[i][r] == 100 * r + 10 * i + rank, "Alltoall column from %d row %d", r, i);
    }

    /* Contiguous of MPI_DOUBLE_INT with MAXLOC, and a resized type with negative lb. */
    struct { double v; int i; } pairs[4], pr[4];
    for (int k = 0; k < 4; k++) { pairs[k].v = (rank + k) % 3; pairs[k].i = rank; }
    MPI_Datatype p2;
    MPI_Type_contiguous(2, MPI_DOUBLE_INT, &p2);
    MPI_Type_commit(&p2);
    MPI_Allreduce(pairs, pr, 2, p2, MPI_MAXLOC, MPI_COMM_WORLD);
    for (int k = 0; k < 4; k++) {
        double bv = -1; int bi = 0;
        for (int r = 0; r < size; r++) if ((r + k) % 3 > bv) { bv = (r + k) % 3; bi = r; }
        CHECK(pr[k].v == bv && pr[k].i == bi, "MAXLOC on contiguous pairs %d", k);
    }
    MPI_Datatype neg;
    MPI_Type_create_resized(MPI_INT, -4, 8, &neg); /* lb -4, extent 8: the int at 0 */
    MPI_Type_commit(&neg);
    int arr[9], ar2[9];
    for (int k = 0; k < 9; k++) { arr[k] = rank * 10 + k; ar2[k] = -1; }
    MPI_Allreduce(&arr[1], &ar2[1], 4, neg, MPI_SUM, MPI_COMM_WORLD);
    for (int k = 0; k < 9; k++) {
        int want = (k % 2 == 1) ? 10 * size * (size - 1) / 2 + size * k : -1;
        CHECK(ar2[k] == want, "negative-lb resized [%d] = %d want %d", k, ar2[k], want);
    }
    MPI_Type_free(&neg); MPI_Type_free(&p2); MPI_Op_free(&op); MPI_Type_free(&rtr); MPI_Type_free(&rt);
    MPI_Type_free(&col); MPI_Type_free(&colr);
    free(all);
    int tot;
    MPI_Allreduce(&failures, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("dtype_coll: np=%d: %s\n", size, tot ? "FAILED" : "ok");
    MPI_Finalize();
    return tot ? 1 : 0;
}
