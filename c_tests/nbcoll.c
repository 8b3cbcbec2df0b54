/* Nonblocking collectives: every MPI_I* reduction and data-movement collective against
 * a sequential oracle (bit for bit), many outstanding at once on one and on several
 * communicators, completed in reverse and scrambled orders and with Test loops while
 * computing, mixed with point-to-point; MPI_Request_get_status, and the errors for
 * MPI_Request_free / MPI_Cancel on a collective request. */
#include <mpi.h>
#include <stdint.h>
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

static double val(int r, int k, int e) {
    uint64_t h = (uint64_t)r * 2654435761u ^ (uint64_t)k * 40503u ^ (uint64_t)e * 97u;
    h ^= h >> 13; h *= 0x9e3779b97f4a7c15ULL; h ^= h >> 29;
    double mag[] = {1e15, 1.0, 1e-3, 3e7};
    return mag[h % 4] * (double)((h >> 8) % 1000) * ((h >> 40) & 1 ? -1 : 1);
}
/* Oracle: left-to-right sum over ranks lo..hi-1. */
static double fold(int k, int e, int lo, int hi) { double s = val(lo, k, e); for (int r = lo + 1; r < hi; r++) s = s + val(r, k, e); return s; }

enum { K = 12, N = 3000 };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);

    /* K outstanding Iallreduce / Ireduce / Iscan on two communicators, waited in reverse. */
    double *in = malloc(sizeof(double) * K * N), *out = malloc(sizeof(double) * K * N);
    MPI_Request rq[K];
    for (int k = 0; k < K; k++) {
        int n = (k * 997) % N + 1;
        for (int e = 0; e < n; e++) in[k * N + e] = val(rank, k, e);
        MPI_Comm c = k % 2 ? dup : MPI_COMM_WORLD;
        switch (k % 3) {
        case 0: MPI_Iallreduce(in + k * N, out + k * N, n, MPI_DOUBLE, MPI_SUM, c, &rq[k]); break;
        case 1: MPI_Ireduce(in + k * N, out + k * N, n, MPI_DOUBLE, MPI_SUM, k % size, c, &rq[k]); break;
        default: MPI_Iscan(in + k * N, out + k * N, n, MPI_DOUBLE, MPI_SUM, c, &rq[k]);
        }
    }
    /* Point-to-point in between. */
    if (size > 1) {
        int x = rank, y = -1;
        MPI_Sendrecv(&x, 1, MPI_INT, (rank + 1) % size, 5, &y, 1, MPI_INT, (rank + size - 1) % size, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(y == (rank + size - 1) % size, "sendrecv among outstanding collectives");
    }
    int flag;
    MPI_Request_get_status(rq[0], &flag, MPI_STATUS_IGNORE); /* must not free or fail */
    for (int k = K - 1; k >= 0; k--) MPI_Wait(&rq[k], MPI_STATUS_IGNORE);
    for (int k = 0; k < K; k++) {
        int n = (k * 997) % N + 1;
        CHECK(rq[k] == MPI_REQUEST_NULL, "request not freed");
        if (k % 3 == 1 && rank != k % size) continue;
        int hi = k % 3 == 2 ? rank + 1 : size;
        for (int e = 0; e < n; e++)
            if (out[k * N + e] != fold(k, e, 0, hi)) { CHECK(0, "op %d (kind %d) element %d", k, k % 3, e); break; }
    }

    /* Reduce_scatter_block, Reduce_scatter, Iexscan, in place, completed with Waitall in
     * a scrambled order via Testany loops while "computing". */
    {
        int rc = 5;
        double *s = malloc(sizeof(double) * rc * size * 3), *r = malloc(sizeof(double) * rc * size * 3);
        int *counts = malloc(sizeof(int) * size);
        for (int i = 0; i < size; i++) counts[i] = (i % 2) ? 0 : rc + i;
        int sum = 0, lo = 0;
        for (int i = 0; i < size; i++) { if (i < rank) lo += counts[i]; sum += counts[i]; }
        double *s2 = malloc(sizeof(double) * (sum + 1)), *r2 = malloc(sizeof(double) * (sum + 1));
        double *ip = malloc(sizeof(double) * rc), *ex = malloc(sizeof(double) * rc);
        for (int e = 0; e < rc * size; e++) s[e] = val(rank, 100, e);
        for (int e = 0; e < sum; e++) s2[e] = val(rank, 101, e);
        for (int e = 0; e < rc; e++) { ip[e] = val(rank, 102, e); ex[e] = val(rank, 103, e); }
        MPI_Request q[4];
        MPI_Ireduce_scatter_block(s, r, rc, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[0]);
        MPI_Ireduce_scatter(s2, r2, counts, MPI_DOUBLE, MPI_SUM, dup, &q[1]);
        MPI_Iallreduce(MPI_IN_PLACE, ip, rc, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[2]);
        MPI_Iexscan(MPI_IN_PLACE, ex, rc, MPI_DOUBLE, MPI_SUM, dup, &q[3]);
        int left = 4, idx;
        volatile double work = 0;
        while (left) {
            MPI_Testany(4, q, &idx, &flag, MPI_STATUS_IGNORE);
            if (flag && idx != MPI_UNDEFINED) left--;
            for (int i = 0; i < 1000; i++) work += i; /* computation between tests */
        }
        for (int e = 0; e < rc; e++) CHECK(r[e] == fold(100, rank * rc + e, 0, size), "Ireduce_scatter_block %d", e);
        for (int e = 0; e < counts[rank]; e++) CHECK(r2[e] == fold(101, lo + e, 0, size), "Ireduce_scatter %d", e);
        for (int e = 0; e < rc; e++) CHECK(ip[e] == fold(102, e, 0, size), "Iallreduce in place %d", e);
        if (rank > 0) for (int e = 0; e < rc; e++) CHECK(ex[e] == fold(103, e, 0, rank), "Iexscan in place %d", e);
        free(s); free(r); free(counts); free(s2); free(r2); free(ip); free(ex);
    }

    /* Data movement: Ibarrier, Ibcast, Igather(v), Iscatter(v), Iallgather(v),
     * Ialltoall(v, w), all outstanding together, completed with Waitall. */
    {
        int *g = malloc(sizeof(int) * size * 2), *a2a = malloc(sizeof(int) * size), *a2r = malloc(sizeof(int) * size);
        int *ag = malloc(sizeof(int) * size), *sc = malloc(sizeof(int) * size), *cnt = malloc(sizeof(int) * size), *dsp = malloc(sizeof(int) * size);
        int *w_s = malloc(sizeof(int) * size), *w_r = malloc(sizeof(int) * size), *wd = malloc(sizeof(int) * size);
        MPI_Datatype *wt = malloc(sizeof(MPI_Datatype) * size);
        int bc[4] = {0}, mine = rank * 3 + 1, got = -1, gv[2] = {rank, -rank};
        if (rank == 0) for (int i = 0; i < 4; i++) bc[i] = 40 + i;
        for (int i = 0; i < size; i++) { a2a[i] = rank * 100 + i; sc[i] = 7 * i; cnt[i] = 1; dsp[i] = i; w_s[i] = rank * 1000 + i; wd[i] = i * (int)sizeof(int); wt[i] = MPI_INT; }
        MPI_Request q[9];
        MPI_Ibarrier(MPI_COMM_WORLD, &q[0]);
        MPI_Ibcast(bc, 4, MPI_INT, 0, MPI_COMM_WORLD, &q[1]);
        MPI_Igather(gv, 2, MPI_INT, g, 2, MPI_INT, size - 1, MPI_COMM_WORLD, &q[2]);
        MPI_Iscatter(sc, 1, MPI_INT, &got, 1, MPI_INT, 0, MPI_COMM_WORLD, &q[3]);
        MPI_Iallgather(&mine, 1, MPI_INT, ag, 1, MPI_INT, dup, &q[4]);
        MPI_Ialltoall(a2a, 1, MPI_INT, a2r, 1, MPI_INT, dup, &q[5]);
        MPI_Ialltoallw(w_s, cnt, wd, wt, w_r, cnt, wd, wt, MPI_COMM_WORLD, &q[6]);
        int agv[64];
        MPI_Iallgatherv(&mine, 1, MPI_INT, agv, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &q[7]);
        int sv = -1;
        MPI_Iscatterv(sc, cnt, dsp, MPI_INT, &sv, 1, MPI_INT, size - 1, dup, &q[8]);
        MPI_Waitall(9, q, MPI_STATUSES_IGNORE);
        for (int i = 0; i < 4; i++) CHECK(bc[i] == 40 + i, "Ibcast");
        if (rank == size - 1) for (int i = 0; i < size; i++) CHECK(g[2 * i] == i && g[2 * i + 1] == -i, "Igather %d", i);
        CHECK(got == 7 * rank && sv == 7 * rank, "Iscatter(v) %d %d", got, sv);
        for (int i = 0; i < size; i++) {
            CHECK(ag[i] == i * 3 + 1 && agv[i] == i * 3 + 1, "Iallgather(v) %d", i);
            CHECK(a2r[i] == i * 100 + rank, "Ialltoall %d", i);
            CHECK(w_r[i] == i * 1000 + rank, "Ialltoallw %d", i);
        }
        free(g); free(a2a); free(a2r); free(ag); free(sc); free(cnt); free(dsp); free(w_s); free(w_r); free(wd); free(wt);
    }

    /* Request rules: freeing or cancelling a collective request is an error. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Request b;
    MPI_Ibarrier(MPI_COMM_WORLD, &b);
    MPI_Request b2 = b;
    int rc = MPI_Request_free(&b2), cls;
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_REQUEST, "Request_free on a collective request: class %d", cls);
    rc = MPI_Cancel(&b2);
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_REQUEST, "Cancel on a collective request: class %d", cls);
    do { MPI_Test(&b, &flag, MPI_STATUS_IGNORE); } while (!flag);
    /* An argument error is reported by the I-call itself. */
    MPI_Request bad;
    rc = MPI_Iallreduce(in, out, -1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &bad);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "Iallreduce negative count: class %d", cls);

    free(in); free(out);
    MPI_Comm_free(&dup);
    int tot;
    MPI_Allreduce(&failures, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("nbcoll: np=%d: %s\n", size, tot ? "FAILED" : "ok");
    MPI_Finalize();
    return tot ? 1 : 0;
}
