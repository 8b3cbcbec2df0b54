/* Intercommunicators: MPI_Intercomm_create over uneven groups, every reduction across
 * the groups (MPI_ROOT / MPI_PROC_NULL roots) against a sequential oracle, the data
 * movement collectives, MPI_Intercomm_merge in both orders, dup and split. Groups: the
 * first `na` world ranks form group 0, the rest group 1 (na from argv, default 1). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrank, wsize, failures;
#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            if (failures++ < 10) {                                          \
                fprintf(stderr, "rank %d: FAIL line %d: ", wrank, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                               \
                fprintf(stderr, "\n");                                      \
            }                                                               \
        }                                                                   \
    } while (0)

typedef struct { int m, c; } affine;
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    affine *a = in, *b = inout;
    for (int k = 0; k < *len; k++) {
        unsigned m = (unsigned)a[k].m * (unsigned)b[k].m;
        unsigned c = (unsigned)a[k].m * (unsigned)b[k].c + (unsigned)a[k].c;
        b[k].m = (int)m; b[k].c = (int)c;
    }
}
static uint64_t mix(uint64_t x) { x ^= x >> 31; x *= 0x9e3779b97f4a7c15ULL; x ^= x >> 29; return x; }
static double dval(int g, int r, size_t e) {
    uint64_t h = mix((uint64_t)g * 1000003 + (uint64_t)r * 7919 + e * 131 + 7);
    double mag[] = {1e16, 1.0, 3e-3, 5e7};
    return mag[h % 4] * (double)((h >> 8) % 997) * ((h >> 30) & 1 ? -1 : 1);
}
static affine aval(int g, int r, size_t e) {
    uint64_t h = mix((uint64_t)g * 31 + (uint64_t)r * 1009 + e * 17 + 3);
    affine a = {(int)(h % 7) * 2 + 1, (int)((h >> 8) % 1000)};
    return a;
}
/* Oracle: left-to-right fold over the ranks of group g (size n). */
static double dfold(int g, int n, size_t e) { double s = dval(g, 0, e); for (int r = 1; r < n; r++) s = s + dval(g, r, e); return s; }
static affine afold(int g, int n, size_t e) {
    affine acc = aval(g, 0, e);
    for (int r = 1; r < n; r++) {
        affine x = aval(g, r, e);
        unsigned m = (unsigned)acc.m * (unsigned)x.m, c = (unsigned)acc.m * (unsigned)x.c + (unsigned)acc.c;
        acc.m = (int)m; acc.c = (int)c;
    }
    return acc;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    int na = argc > 1 ? atoi(argv[1]) : 1;
    if (wsize < 2) { MPI_Finalize(); return 0; }
    if (na < 1 || na >= wsize) na = 1;
    int g = wrank < na ? 0 : 1;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, g, wrank, &local);
    int lr, ln, rn;
    MPI_Comm_rank(local, &lr);
    MPI_Comm_size(local, &ln);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, g ? 0 : na, 99, &inter);
    int flag;
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag, "test_inter");
    MPI_Comm_remote_size(inter, &rn);
    CHECK(rn == (g ? na : wsize - na), "remote size %d", rn);
    int og = 1 - g; /* the other group */
    MPI_Op op;
    MPI_Op_create(compose, 0, &op);

    size_t counts[] = {0, 1, 7, 1000, 50000};
    for (int ci = 0; ci < 5; ci++) {
        size_t n = counts[ci];
        double *ds = malloc((n + 1) * 8), *dr = malloc((n + 1) * 8);
        affine *as = malloc((n + 1) * 8), *ar = malloc((n + 1) * 8);
        for (size_t e = 0; e < n; e++) { ds[e] = dval(g, lr, e); as[e] = aval(g, lr, e); }
        /* Allreduce: I get the other group's reduction. */
        MPI_Allreduce(ds, dr, (int)n, MPI_DOUBLE, MPI_SUM, inter);
        for (size_t e = 0; e < n; e++) CHECK(dr[e] == dfold(og, rn, e), "Allreduce double n=%zu e=%zu", n, e);
        MPI_Allreduce(as, ar, (int)n, MPI_2INT, op, inter);
        for (size_t e = 0; e < n; e++) { affine w = afold(og, rn, e); CHECK(ar[e].m == w.m && ar[e].c == w.c, "Allreduce affine n=%zu e=%zu", n, e); }
        /* The nonblocking and persistent forms across the groups. */
        {
            MPI_Request rq[2];
            affine *ar2 = malloc((n + 1) * 8);
            MPI_Iallreduce(as, ar2, (int)n, MPI_2INT, op, inter, &rq[0]);
            MPI_Allreduce_init(ds, dr, (int)n, MPI_DOUBLE, MPI_SUM, inter, MPI_INFO_NULL, &rq[1]);
            MPI_Start(&rq[1]);
            MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
            for (size_t e = 0; e < n; e++) {
                affine w = afold(og, rn, e);
                CHECK(ar2[e].m == w.m && ar2[e].c == w.c, "Iallreduce affine n=%zu e=%zu", n, e);
                CHECK(dr[e] == dfold(og, rn, e), "Allreduce_init double n=%zu e=%zu", n, e);
            }
            MPI_Request_free(&rq[1]);
            free(ar2);
        }
        /* Reduce: every root of each group. */
        for (int rg = 0; rg < 2; rg++) {
            int rsize = rg == g ? ln : rn;
            for (int root = 0; root < rsize; root++) {
                memset(ar, 0, (n + 1) * 8);
                int r = rg == g ? (lr == root ? MPI_ROOT : MPI_PROC_NULL) : root;
                MPI_Reduce(as, ar, (int)n, MPI_2INT, op, r, inter);
                if (r == MPI_ROOT)
                    for (size_t e = 0; e < n; e++) { affine w = afold(og, rn, e); CHECK(ar[e].m == w.m && ar[e].c == w.c, "Reduce root=%d/%d n=%zu e=%zu", rg, root, n, e); }
            }
        }
        /* Bcast from each group's rank 0. */
        for (int rg = 0; rg < 2; rg++) {
            for (size_t e = 0; e < n; e++) dr[e] = rg == g && lr == 0 ? dval(7, 0, e) : -1;
            int r = rg == g ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
            MPI_Bcast(dr, (int)n, MPI_DOUBLE, r, inter);
            if (rg != g) for (size_t e = 0; e < n; e++) CHECK(dr[e] == dval(7, 0, e), "Bcast n=%zu", n);
        }
        free(ds); free(dr); free(as); free(ar);
    }
    /* Reduce_scatter_block: count = ln*rc_local = rn*rc_remote. */
    {
        int C = ln * rn * 3;
        int rc = C / ln;
        double *s = malloc(C * 8), *r = malloc(C * 8);
        for (int e = 0; e < C; e++) s[e] = dval(g, lr, (size_t)e);
        MPI_Reduce_scatter_block(s, r, rc, MPI_DOUBLE, MPI_SUM, inter);
        for (int e = 0; e < rc; e++) CHECK(r[e] == dfold(og, rn, (size_t)(lr * rc + e)), "Reduce_scatter_block e=%d", e);
        /* Reduce_scatter with uneven counts summing to C. */
        int *rcs = malloc(ln * sizeof(int)), lo = 0, left = C;
        for (int i = 0; i < ln; i++) { rcs[i] = i == ln - 1 ? left : (i % 2 ? 0 : C / ln + 1 > left ? left : C / ln + 1); left -= rcs[i]; }
        for (int i = 0; i < lr; i++) lo += rcs[i];
        MPI_Reduce_scatter(s, r, rcs, MPI_DOUBLE, MPI_SUM, inter);
        for (int e = 0; e < rcs[lr]; e++) CHECK(r[e] == dfold(og, rn, (size_t)(lo + e)), "Reduce_scatter e=%d", e);
        free(s); free(r); free(rcs);
    }
    /* Gather / Scatter / Allgather / Alltoall. */
    {
        int *buf = malloc(sizeof(int) * 64 * 4), *out = malloc(sizeof(int) * 64 * 4);
        int mine[2] = {1000 * g + lr, -lr};
        for (int rg = 0; rg < 2; rg++) {
            int r = rg == g ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
            MPI_Gather(mine, 2, MPI_INT, buf, 2, MPI_INT, r, inter);
            if (r == MPI_ROOT) for (int i = 0; i < rn; i++) CHECK(buf[2 * i] == 1000 * og + i && buf[2 * i + 1] == -i, "Gather from %d", i);
            for (int i = 0; i < rn; i++) { buf[2 * i] = 5000 + i; buf[2 * i + 1] = i; }
            out[0] = out[1] = -7;
            MPI_Scatter(buf, 2, MPI_INT, out, 2, MPI_INT, r, inter);
            if (rg != g) CHECK(out[0] == 5000 + lr && out[1] == lr, "Scatter got %d %d", out[0], out[1]);
        }
        MPI_Allgather(mine, 2, MPI_INT, buf, 2, MPI_INT, inter);
        for (int i = 0; i < rn; i++) CHECK(buf[2 * i] == 1000 * og + i, "Allgather %d", i);
        for (int j = 0; j < rn; j++) buf[j] = 100 * lr + j + 10000 * g;
        MPI_Alltoall(buf, 1, MPI_INT, out, 1, MPI_INT, inter);
        for (int i = 0; i < rn; i++) CHECK(out[i] == 100 * i + lr + 10000 * og, "Alltoall from %d: %d", i, out[i]);
        MPI_Barrier(inter);
        free(buf); free(out);
    }
    /* Merge in both orders. */
    for (int hi = 0; hi < 2; hi++) {
        MPI_Comm m;
        MPI_Intercomm_merge(inter, g == 0 ? hi : !hi, &m);
        int mr, ms;
        MPI_Comm_rank(m, &mr);
        MPI_Comm_size(m, &ms);
        CHECK(ms == wsize, "merge size");
        int first = hi ? 1 : 0; /* group passing high=false goes first */
        int want = g == first ? lr : (g == 0 ? (wsize - na) : na) + lr;
        CHECK(mr == want, "merge(high=%d) rank %d, expected %d", hi, mr, want);
        int x = wrank, sum = 0;
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, m);
        CHECK(sum == wsize * (wsize - 1) / 2, "allreduce on merged");
        MPI_Comm_free(&m);
    }
    /* Dup and split of the intercommunicator. */
    MPI_Comm d, sp;
    MPI_Comm_dup(inter, &d);
    int res;
    MPI_Comm_compare(inter, d, &res);
    CHECK(res == MPI_CONGRUENT, "compare(inter, dup) = %d", res);
    double one = 1.0, got = 0;
    MPI_Allreduce(&one, &got, 1, MPI_DOUBLE, MPI_SUM, d);
    CHECK(got == rn, "allreduce on dup: %g", got);
    MPI_Comm_split(inter, lr % 2, lr, &sp);
    if (sp != MPI_COMM_NULL) {
        int spr, sps;
        MPI_Comm_remote_size(sp, &sps);
        MPI_Comm_rank(sp, &spr);
        CHECK(spr == lr / 2, "split rank");
        MPI_Allreduce(&one, &got, 1, MPI_DOUBLE, MPI_SUM, sp);
        CHECK(got == sps, "allreduce on split intercomm");
        MPI_Comm_free(&sp);
    } else {
        CHECK((lr % 2 == 1 && rn < 2) || 0, "split gave MPI_COMM_NULL unexpectedly");
    }
    MPI_Comm_free(&d);
    MPI_Op_free(&op);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    int tot;
    MPI_Allreduce(&failures, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0) printf("intercomm: np=%d na=%d: %s\n", wsize, na, tot ? "FAILED" : "ok");
    MPI_Finalize();
    return tot ? 1 : 0;
}
