/* Stress: thousands of mixed operations, each checked against a sequential oracle.
 *
 * Every rank draws the same sequence of choices from a seeded generator (SHMPI_TEST_SEED,
 * default 1): the operation (Allreduce, Reduce, Reduce_scatter_block, Reduce_scatter,
 * Bcast, Scan, Exscan, their nonblocking forms, two nonblocking collectives outstanding
 * at once, and point-to-point ring exchanges), the size (mostly small, one in four up to
 * 200 KB), the type and op (int SUM/MAX, double SUM, DOUBLE_INT MAXLOC, a vector type
 * with SUM, a non-commutative user op on pairs), the root and the communicator (world, a
 * dup, a split with reversed keys). Each rank's contribution is a function of (rank,
 * iteration, index), so every rank can compute every expected result by itself.
 * argv[1] (or SHMPI_STRESS_ITERS) is the number of iterations (default 1000). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrank, wsize, nfail;
static uint64_t rng_state;

static uint64_t rnd(void) {
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}
static int below(int n) { return (int)(rnd() % (uint64_t)n); }

#define FAIL(...)                                                                         \
    do {                                                                                  \
        if (nfail++ < 10) {                                                               \
            fprintf(stderr, "stress: rank %d: ", wrank);                                  \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
        }                                                                                 \
    } while (0)

/* A communicator and the world ranks of its members, in communicator rank order. */
typedef struct {
    MPI_Comm comm;
    int n, me, members[64];
    const char *name;
} Comm;

/* Contributions: rank r (world rank), iteration it, element i. */
static int ival(int r, int it, long i) { return (int)(((r + 1) * 7919L + it * 104729L + i * 31L) % 2001) - 1000; }
static double dval(int r, int it, long i) { return (double)(((r + 3) * 613L + it * 17L + i * 5L) % 1000) * 0.25; }

/* A non-commutative associative user op on pairs (a, b) = the map x -> a*x + b over
 * uint32: in op inout = "apply in, then inout". */
typedef struct { uint32_t a, b; } Aff;
static void aff_op(void *in, void *inout, int *len, MPI_Datatype *t) {
    (void)t;
    Aff *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        Aff r = {x[i].a * y[i].a, y[i].a * x[i].b + y[i].b};
        y[i] = r;
    }
}
static Aff aval(int r, int it, long i) {
    Aff v = {(uint32_t)(2 * ((r + it + i) % 7) + 1), (uint32_t)(r * 31 + i + it)};
    return v;
}

typedef struct { double v; int i; } DI;
static DI dival(int r, int it, long i) {
    DI x = {(double)((r * 5 + i * 3 + it) % 4), r * 10 + (int)(i % 3)};
    return x;
}

enum { T_INT_SUM, T_INT_MAX, T_DBL_SUM, T_DI_MAXLOC, T_VEC_SUM, T_AFF_USER, NKIND };
static MPI_Datatype vec_t, aff_t;
static MPI_Op aff;

/* Bytes per element in the user's buffer, and elements per instance of the datatype. */
static size_t elem_bytes(int k) {
    switch (k) {
    case T_INT_SUM: case T_INT_MAX: return 4;
    case T_DBL_SUM: return 8;
    case T_DI_MAXLOC: return sizeof(DI);
    case T_VEC_SUM: return 12; /* vector(2,1,2,INT): ints 0 and 2 of 3 */
    default: return sizeof(Aff);
    }
}
static MPI_Datatype dtype(int k) {
    switch (k) {
    case T_INT_SUM: case T_INT_MAX: return MPI_INT;
    case T_DBL_SUM: return MPI_DOUBLE;
    case T_DI_MAXLOC: return MPI_DOUBLE_INT;
    case T_VEC_SUM: return vec_t;
    default: return aff_t;
    }
}
static MPI_Op dop(int k) {
    switch (k) {
    case T_INT_SUM: case T_DBL_SUM: case T_VEC_SUM: return MPI_SUM;
    case T_INT_MAX: return MPI_MAX;
    case T_DI_MAXLOC: return MPI_MAXLOC;
    default: return aff;
    }
}

/* Fills element i of world rank r's contribution into buf (elements from index 0). */
static void fill(int k, void *buf, long n, int r, int it, long off) {
    for (long i = 0; i < n; i++) {
        long g = i + off;
        switch (k) {
        case T_INT_SUM: case T_INT_MAX: ((int *)buf)[i] = ival(r, it, g); break;
        case T_DBL_SUM: ((double *)buf)[i] = dval(r, it, g); break;
        case T_DI_MAXLOC: ((DI *)buf)[i] = dival(r, it, g); break;
        case T_VEC_SUM: {
            int *p = (int *)buf + 3 * i;
            p[0] = ival(r, it, 2 * g);
            p[1] = -77777; /* the gap: never touched */
            p[2] = ival(r, it, 2 * g + 1);
            break;
        }
        default: ((Aff *)buf)[i] = aval(r, it, g); break;
        }
    }
}

/* The reduction over members[0..upto) (comm rank order) of element g, into out. */
static void expect_elem(int k, void *out, const Comm *c, int upto, int it, long g) {
    switch (k) {
    case T_INT_SUM: case T_INT_MAX: {
        int acc = ival(c->members[0], it, g);
        for (int j = 1; j < upto; j++) {
            int v = ival(c->members[j], it, g);
            acc = k == T_INT_SUM ? acc + v : (v > acc ? v : acc);
        }
        *(int *)out = acc;
        break;
    }
    case T_DBL_SUM: {
        double acc = dval(c->members[0], it, g);
        for (int j = 1; j < upto; j++) acc += dval(c->members[j], it, g);
        *(double *)out = acc;
        break;
    }
    case T_DI_MAXLOC: {
        DI acc = dival(c->members[0], it, g);
        for (int j = 1; j < upto; j++) {
            DI v = dival(c->members[j], it, g);
            if (v.v > acc.v || (v.v == acc.v && v.i < acc.i)) acc = v;
        }
        *(DI *)out = acc;
        break;
    }
    case T_VEC_SUM: {
        int *p = out;
        p[0] = p[2] = 0;
        p[1] = -77777;
        for (int j = 0; j < upto; j++) {
            p[0] += ival(c->members[j], it, 2 * g);
            p[2] += ival(c->members[j], it, 2 * g + 1);
        }
        break;
    }
    default: {
        Aff acc = aval(c->members[0], it, g);
        for (int j = 1; j < upto; j++) {
            Aff v = aval(c->members[j], it, g);
            Aff r = {acc.a * v.a, v.a * acc.b + v.b};
            acc = r;
        }
        *(Aff *)out = acc;
    }
    }
}

/* Compares n elements of buf with the reduction over the first `upto` members, elements
 * numbered from `off`. */
static void check(const char *what, int it, int k, const void *buf, long n, const Comm *c,
                  int upto, long off) {
    char want[32];
    size_t eb = elem_bytes(k);
    for (long i = 0; i < n; i++) {
        expect_elem(k, want, c, upto, it, i + off);
        const char *got = (const char *)buf + i * eb;
        int same = k == T_DI_MAXLOC
                       ? (((DI *)got)->v == ((DI *)want)->v && ((DI *)got)->i == ((DI *)want)->i)
                       : !memcmp(got, want, eb);
        if (!same) {
            FAIL("iteration %d: %s on %s, kind %d, element %ld of %ld differs", it, what, c->name,
                 k, i, n);
            return;
        }
    }
}

static char *sbuf, *rbuf, *rbuf2, *sbuf2;
#define MAXB (200 * 1024 + 64)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    const char *s = getenv("SHMPI_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 10) : 1;
    int iters = argc > 1 ? atoi(argv[1]) : 0;
    if (iters <= 0) iters = getenv("SHMPI_STRESS_ITERS") ? atoi(getenv("SHMPI_STRESS_ITERS")) : 1000;
    rng_state = seed * 0x9E3779B97F4A7C15ULL | 1;

    MPI_Type_vector(2, 1, 2, MPI_INT, &vec_t);
    MPI_Type_commit(&vec_t);
    MPI_Type_contiguous(2, MPI_UNSIGNED, &aff_t);
    MPI_Type_commit(&aff_t);
    MPI_Op_create(aff_op, 0, &aff);

    Comm comms[3];
    comms[0].comm = MPI_COMM_WORLD;
    comms[0].name = "MPI_COMM_WORLD";
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1].comm);
    comms[1].name = "a dup of world";
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, -wrank, &comms[2].comm);
    comms[2].name = "a split (reversed keys)";
    for (int c = 0; c < 2; c++) {
        comms[c].n = wsize;
        comms[c].me = wrank;
        for (int r = 0; r < wsize; r++) comms[c].members[r] = r;
    }
    comms[2].n = 0;
    for (int r = wsize - 1; r >= 0; r--)
        if (r % 2 == wrank % 2) {
            if (r == wrank) comms[2].me = comms[2].n;
            comms[2].members[comms[2].n++] = r;
        }
    for (int c = 0; c < 3; c++) {
        int n, me;
        MPI_Comm_size(comms[c].comm, &n);
        MPI_Comm_rank(comms[c].comm, &me);
        if (n != comms[c].n || me != comms[c].me) FAIL("%s: size/rank %d/%d", comms[c].name, n, me);
    }

    sbuf = malloc(MAXB);
    rbuf = malloc(MAXB);
    sbuf2 = malloc(MAXB);
    rbuf2 = malloc(MAXB);
    long counts[8] = {0};
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        Comm *c = &comms[below(3)];
        int k = below(NKIND);
        int op = below(13);
        size_t eb = elem_bytes(k);
        size_t bytes = below(4) == 0 ? (size_t)below(200 * 1024) : (size_t)below(2048);
        long n = (long)(bytes / eb);
        int root = below(c->n);
        int nb = below(2);
        MPI_Datatype t = dtype(k);
        MPI_Op o = dop(k);
        MPI_Request req[4];
        int me = c->me, wr = wrank;
        fill(k, sbuf, n, wr, it, 0);
        memset(rbuf, 0x5a, MAXB);
        if (k == T_VEC_SUM) fill(k, rbuf, n, -1000, it, 0); /* gaps = -77777 */
        switch (op) {
        case 0: case 1: /* Allreduce */
            if (nb) {
                MPI_Iallreduce(sbuf, rbuf, (int)n, t, o, c->comm, req);
                MPI_Wait(req, MPI_STATUS_IGNORE);
            } else
                MPI_Allreduce(sbuf, rbuf, (int)n, t, o, c->comm);
            check("Allreduce", it, k, rbuf, n, c, c->n, 0);
            counts[0]++;
            break;
        case 2: /* Reduce */
            if (nb) {
                MPI_Ireduce(sbuf, rbuf, (int)n, t, o, root, c->comm, req);
                MPI_Wait(req, MPI_STATUS_IGNORE);
            } else
                MPI_Reduce(sbuf, rbuf, (int)n, t, o, root, c->comm);
            if (me == root) check("Reduce", it, k, rbuf, n, c, c->n, 0);
            counts[1]++;
            break;
        case 3: { /* Reduce_scatter_block: n is the per-rank share */
            long per = n / c->n;
            fill(k, sbuf, per * c->n, wr, it, 0);
            if (nb) {
                MPI_Ireduce_scatter_block(sbuf, rbuf, (int)per, t, o, c->comm, req);
                MPI_Wait(req, MPI_STATUS_IGNORE);
            } else
                MPI_Reduce_scatter_block(sbuf, rbuf, (int)per, t, o, c->comm);
            check("Reduce_scatter_block", it, k, rbuf, per, c, c->n, per * me);
            counts[2]++;
            break;
        }
        case 4: { /* Reduce_scatter with random shares */
            int rc[64];
            long total = 0, off = 0;
            /* Draw wsize values whatever the communicator's size, so that the ranks of
             * the two halves of the split stay in step. */
            for (int j = 0; j < wsize; j++) {
                int v = below((int)(n / c->n) + 1 + (j == 1 ? 3 : 0));
                if (j < c->n) {
                    rc[j] = v;
                    total += v;
                }
            }
            for (int j = 0; j < me; j++) off += rc[j];
            fill(k, sbuf, total, wr, it, 0);
            if (nb) {
                MPI_Ireduce_scatter(sbuf, rbuf, rc, t, o, c->comm, req);
                MPI_Wait(req, MPI_STATUS_IGNORE);
            } else
                MPI_Reduce_scatter(sbuf, rbuf, rc, t, o, c->comm);
            check("Reduce_scatter", it, k, rbuf, rc[me], c, c->n, off);
            counts[2]++;
            break;
        }
        case 5: case 6: { /* Scan / Exscan */
            int ex = op == 6;
            if (nb) {
                if (ex) MPI_Iexscan(sbuf, rbuf, (int)n, t, o, c->comm, req);
                else MPI_Iscan(sbuf, rbuf, (int)n, t, o, c->comm, req);
                MPI_Wait(req, MPI_STATUS_IGNORE);
            } else if (ex)
                MPI_Exscan(sbuf, rbuf, (int)n, t, o, c->comm);
            else
                MPI_Scan(sbuf, rbuf, (int)n, t, o, c->comm);
            if (!ex || me > 0) check(ex ? "Exscan" : "Scan", it, k, rbuf, n, c, me + !ex, 0);
            counts[3]++;
            break;
        }
        case 7: case 8: { /* Bcast of the root's contribution */
            char *b = me == root ? sbuf : rbuf;
            if (nb) {
                MPI_Ibcast(b, (int)n, t, root, c->comm, req);
                MPI_Wait(req, MPI_STATUS_IGNORE);
            } else
                MPI_Bcast(b, (int)n, t, root, c->comm);
            if (me != root) {
                fill(k, sbuf2, n, c->members[root], it, 0);
                if (k == T_VEC_SUM)
                    for (long i = 0; i < n; i++) ((int *)sbuf2)[3 * i + 1] = -77777;
                int differ = 0;
                if (k == T_DI_MAXLOC) { /* compare the fields, not the padding */
                    for (long i = 0; i < n; i++)
                        differ |= ((DI *)sbuf2)[i].v != ((DI *)rbuf)[i].v || ((DI *)sbuf2)[i].i != ((DI *)rbuf)[i].i;
                } else
                    differ = memcmp(sbuf2, rbuf, n * eb) != 0;
                if (differ) FAIL("iteration %d: Bcast on %s, kind %d, differs", it, c->name, k);
            }
            counts[4]++;
            break;
        }
        case 9: { /* two nonblocking collectives outstanding, on two communicators */
            Comm *c2 = &comms[(c - comms + 1) % 3];
            fill(T_INT_SUM, sbuf2, 64, wr, it, 0);
            MPI_Iallreduce(sbuf, rbuf, (int)n, t, o, c->comm, &req[0]);
            MPI_Iallreduce(sbuf2, rbuf2, 64, MPI_INT, MPI_SUM, c2->comm, &req[1]);
            if (below(2)) MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            else {
                MPI_Wait(&req[1], MPI_STATUS_IGNORE);
                MPI_Wait(&req[0], MPI_STATUS_IGNORE);
            }
            check("Iallreduce (1 of 2)", it, k, rbuf, n, c, c->n, 0);
            check("Iallreduce (2 of 2)", it, T_INT_SUM, rbuf2, 64, c2, c2->n, 0);
            counts[5]++;
            break;
        }
        default: { /* ring exchange: send to me+1, receive from me-1, random sizes */
            int to = (me + 1) % c->n, from = (me - 1 + c->n) % c->n;
            /* every rank knows every rank's size: draw them all */
            long sizes[64];
            for (int j = 0; j < wsize; j++) {
                int big = below(4) == 0;
                long v = big ? below(200 * 1024) : below(4096);
                if (j < c->n) sizes[j] = v;
            }
            long mine = sizes[me] / 4, theirs = sizes[from] / 4;
            fill(T_INT_SUM, sbuf, mine, wr, it, 0);
            MPI_Status st;
            if (nb) {
                MPI_Irecv(rbuf, (int)theirs, MPI_INT, from, it, c->comm, &req[0]);
                MPI_Isend(sbuf, (int)mine, MPI_INT, to, it, c->comm, &req[1]);
                MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            } else {
                MPI_Sendrecv(sbuf, (int)mine, MPI_INT, to, it, rbuf, (int)theirs, MPI_INT, from, it,
                             c->comm, &st);
                int got;
                MPI_Get_count(&st, MPI_INT, &got);
                if (got != theirs) FAIL("iteration %d: Sendrecv count %d, want %ld", it, got, theirs);
            }
            fill(T_INT_SUM, sbuf2, theirs, c->members[from], it, 0);
            if (memcmp(sbuf2, rbuf, theirs * 4)) FAIL("iteration %d: ring message on %s differs", it, c->name);
            counts[6]++;
            break;
        }
        }
    }
    double secs = MPI_Wtime() - t0;
    int total = 0;
    MPI_Allreduce(&nfail, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("stress: np %d seed %llu: %d iterations in %.2fs (allreduce %ld, reduce %ld, "
               "reduce_scatter %ld, scan %ld, bcast %ld, two outstanding %ld, p2p %ld), %d wrong\n",
               wsize, (unsigned long long)seed, iters, secs, counts[0], counts[1], counts[2],
               counts[3], counts[4], counts[5], counts[6], total);
    MPI_Comm_free(&comms[1].comm);
    MPI_Comm_free(&comms[2].comm);
    MPI_Op_free(&aff);
    MPI_Type_free(&vec_t);
    MPI_Type_free(&aff_t);
    free(sbuf); free(rbuf); free(sbuf2); free(rbuf2);
    MPI_Finalize();
    return total != 0;
}
