/* Small MPI_Bcast and MPI_Reduce take posted steps (coll/post.rs): the ranks that only
 * send return at once and may run up to 256 calls ahead of the slowest rank. This test
 * drives that hard and checks every result against a sequential oracle:
 *
 * - senders 300 calls ahead of a sleeping receiver (so they wait for room in the
 *   256-entry ring), and long runs of posted calls
 *   with roots, sizes (0-8800 bytes: one posted step up to 992 at 8 ranks or fewer, a
 *   chain of them up to 8 KiB with more ranks than CPUs), ops and datatypes changing
 *   from call to call;
 * - ordinary collectives in between (MPI_Allreduce, MPI_Barrier, a large MPI_Bcast and
 *   MPI_Reduce, MPI_Gather), which must first let every rank reach the last posted call;
 * - ranks delayed at random, so that the senders are really ahead;
 * - a non-commutative user op, MPI_IN_PLACE at the root, a derived datatype, MPI_Ibcast
 *   and MPI_Ireduce, and persistent MPI_Bcast_init;
 * - communicators created and freed in a loop, so that a new one gets a channel whose
 *   post ring still holds an old communicator's entries;
 * - the same on a communicator with MPI_ERRORS_RETURN (there every rank waits).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, failures;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            if (failures++ < 10) {                                                         \
                fprintf(stderr, "posted: rank %d: ", rank);                                \
                fprintf(stderr, __VA_ARGS__);                                              \
                fprintf(stderr, "\n");                                                     \
            }                                                                              \
        }                                                                                  \
    } while (0)

/* Deterministic per-call pseudo-random numbers, the same on every rank. */
static unsigned long long mix(unsigned long long x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static int value(int call, int r, int i) { return (int)(mix((unsigned)call * 1000003u + (unsigned)r * 7919u + (unsigned)i) % 2001) - 1000; }

/* 2x2 integer matrices (4 ints), multiplied: not commutative. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    int *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int c0 = a[0] * b[0] + a[1] * b[2], c1 = a[0] * b[1] + a[1] * b[3];
        int c2 = a[2] * b[0] + a[3] * b[2], c3 = a[2] * b[1] + a[3] * b[3];
        b[0] = c0; b[1] = c1; b[2] = c2; b[3] = c3;
    }
}

static MPI_Op matop;
static MPI_Datatype mat; /* 4 contiguous ints */

static void maybe_sleep(int call) {
    unsigned long long h = mix((unsigned)call * 31u + (unsigned)rank);
    if (h % 97 == 0) usleep((useconds_t)(h % 3000));
}

/* One posted call on `comm`, of kind chosen by `call`; checks its result. */
static void one_call(MPI_Comm comm, int call, int big_every) {
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    unsigned long long h = mix((unsigned)call);
    int root = (int)(h % (unsigned)n);
    int count = (int)((h >> 8) % 261); /* 0..260 ints: both sides of the 992-byte limit */
    if ((h >> 44) % 4 == 0) /* up to 2200 ints: both sides of the 8 KiB chain limit */
        count = 261 + (int)((h >> 8) % 1940);
    int kind = (int)((h >> 16) % 8);
    static int buf[2204], res[2204], exp[2204];
    maybe_sleep(call);
    if (big_every && call % big_every == big_every - 1) {
        /* An ordinary collective in between. */
        switch ((h >> 24) % 4) {
        case 0: {
            int x = value(call, me, 0), y = 0, e = 0;
            MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, comm);
            for (int r = 0; r < n; r++) e += value(call, r, 0);
            CHECK(y == e, "call %d: allreduce %d, expected %d", call, y, e);
            break;
        }
        case 1:
            MPI_Barrier(comm);
            break;
        case 2: {
            int m = 5000, *v = malloc(sizeof(int) * (size_t)m);
            for (int i = 0; i < m; i++) v[i] = me == root ? value(call, root, i) : -1;
            MPI_Bcast(v, m, MPI_INT, root, comm);
            for (int i = 0; i < m; i++)
                if (v[i] != value(call, root, i)) {
                    CHECK(0, "call %d: large bcast element %d", call, i);
                    break;
                }
            free(v);
            break;
        }
        default: {
            int m = 3000, *v = malloc(sizeof(int) * (size_t)m), *w = malloc(sizeof(int) * (size_t)m);
            for (int i = 0; i < m; i++) v[i] = value(call, me, i);
            MPI_Reduce(v, w, m, MPI_INT, MPI_MAX, root, comm);
            if (me == root)
                for (int i = 0; i < m; i++) {
                    int e = value(call, 0, i);
                    for (int r = 1; r < n; r++) e = value(call, r, i) > e ? value(call, r, i) : e;
                    if (w[i] != e) {
                        CHECK(0, "call %d: large reduce element %d", call, i);
                        break;
                    }
                }
            free(v);
            free(w);
            break;
        }
        }
        return;
    }
    switch (kind) {
    case 0:
    case 1: { /* MPI_Bcast of ints */
        for (int i = 0; i < count; i++) buf[i] = me == root ? value(call, root, i) : 12345;
        MPI_Bcast(buf, count, MPI_INT, root, comm);
        for (int i = 0; i < count; i++)
            CHECK(buf[i] == value(call, root, i), "call %d: bcast[%d] = %d, expected %d", call, i, buf[i], value(call, root, i));
        break;
    }
    case 2:
    case 3: { /* MPI_Reduce SUM / MAX, sometimes in place at the root */
        MPI_Op op = kind == 2 ? MPI_SUM : MPI_MAX;
        for (int i = 0; i < count; i++) buf[i] = value(call, me, i);
        for (int i = 0; i < count; i++) {
            exp[i] = value(call, 0, i);
            for (int r = 1; r < n; r++) {
                int v = value(call, r, i);
                exp[i] = kind == 2 ? exp[i] + v : (v > exp[i] ? v : exp[i]);
            }
        }
        int in_place = (h >> 40) & 1;
        if (me == root && in_place) {
            memcpy(res, buf, sizeof(int) * (size_t)count);
            MPI_Reduce(MPI_IN_PLACE, res, count, MPI_INT, op, root, comm);
        } else {
            for (int i = 0; i < count; i++) res[i] = 777;
            MPI_Reduce(buf, res, count, MPI_INT, op, root, comm);
        }
        if (me == root)
            for (int i = 0; i < count; i++)
                CHECK(res[i] == exp[i], "call %d: reduce[%d] = %d, expected %d", call, i, res[i], exp[i]);
        break;
    }
    case 4: { /* non-commutative user op on 2x2 matrices: canonical order */
        int m = count / 4; /* up to 65 matrices */
        for (int i = 0; i < 4 * m; i++) buf[i] = value(call, me, i) % 5;
        for (int k = 0; k < m; k++) {
            /* exp = M_0 * M_1 * ... * M_{n-1} */
            int acc[4];
            for (int j = 0; j < 4; j++) acc[j] = value(call, n - 1, 4 * k + j) % 5;
            for (int r = n - 2; r >= 0; r--) {
                int a[4], len = 1;
                for (int j = 0; j < 4; j++) a[j] = value(call, r, 4 * k + j) % 5;
                matmul(a, acc, &len, NULL);
            }
            memcpy(exp + 4 * k, acc, sizeof acc);
        }
        MPI_Reduce(buf, res, m, mat, matop, root, comm);
        if (me == root)
            for (int i = 0; i < 4 * m; i++)
                CHECK(res[i] == exp[i], "call %d: matrix reduce[%d] = %d, expected %d", call, i, res[i], exp[i]);
        break;
    }
    case 5: { /* a strided derived datatype: every other int of 2*c */
        int c = count / 2;
        MPI_Datatype vec;
        MPI_Type_vector(c > 0 ? c : 1, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        for (int i = 0; i < 2 * c; i++) buf[i] = me == root ? value(call, root, i) : -5;
        MPI_Bcast(buf, c > 0 ? 1 : 0, vec, root, comm);
        for (int i = 0; i < 2 * c; i++) {
            int e = i % 2 == 0 || me == root ? value(call, root, i) : -5;
            CHECK(buf[i] == e, "call %d: vector bcast[%d] = %d, expected %d", call, i, buf[i], e);
        }
        MPI_Type_free(&vec);
        break;
    }
    case 6: { /* MPI_Ibcast and MPI_Ireduce, completed together; and, while they are
               * outstanding, a blocking MPI_Reduce and MPI_Bcast, which must wait for
               * their turn (a blocking call runs in place only when none is pending) */
        MPI_Request rq[2];
        for (int i = 0; i < count; i++) buf[i] = me == root ? value(call, root, i) : 1;
        int x = value(call + 1, me, 0), y = -1, e = 0;
        for (int r = 0; r < n; r++) e += value(call + 1, r, 0);
        MPI_Ibcast(buf, count, MPI_INT, root, comm, &rq[0]);
        MPI_Ireduce(&x, &y, 1, MPI_INT, MPI_SUM, (root + 1) % n, comm, &rq[1]);
        int blocking = (h >> 41) & 1, x2 = value(call + 2, me, 0), y2 = -1, e2 = 0, b2 = -1;
        if (blocking) {
            for (int r = 0; r < n; r++) e2 += value(call + 2, r, 0);
            MPI_Reduce(&x2, &y2, 1, MPI_INT, MPI_SUM, (root + 2) % n, comm);
            b2 = me == root ? x2 : -1;
            MPI_Bcast(&b2, 1, MPI_INT, root, comm);
        }
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        for (int i = 0; i < count; i++)
            CHECK(buf[i] == value(call, root, i), "call %d: ibcast[%d]", call, i);
        if (me == (root + 1) % n) CHECK(y == e, "call %d: ireduce %d, expected %d", call, y, e);
        if (blocking) {
            if (me == (root + 2) % n) CHECK(y2 == e2, "call %d: reduce behind ireduce %d, expected %d", call, y2, e2);
            CHECK(b2 == value(call + 2, root, 0), "call %d: bcast behind ireduce %d", call, b2);
        }
        break;
    }
    default: { /* MPI_Bcast of doubles from a persistent request, started twice */
        double d[1102];
        MPI_Request rq;
        int c = count / 2;
        MPI_Bcast_init(d, c, MPI_DOUBLE, root, comm, MPI_INFO_NULL, &rq);
        for (int rep = 0; rep < 2; rep++) {
            for (int i = 0; i < c; i++) d[i] = me == root ? value(call + rep, root, i) * 0.5 : 0;
            MPI_Start(&rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            for (int i = 0; i < c; i++)
                CHECK(d[i] == value(call + rep, root, i) * 0.5, "call %d: persistent bcast[%d]", call, i);
        }
        MPI_Request_free(&rq);
        break;
    }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op_create(matmul, 0, &matop);
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);

    /* 0. The senders far ahead: the last rank sleeps, then receives 300 broadcasts
     * from rank 0, and then 300 reductions to it (the others only send). */
    for (int phase = 0; phase < 2; phase++) {
        int root = phase == 0 ? 0 : size - 1;
        if (rank == size - 1) usleep(50000);
        for (int call = 0; call < 300; call++) {
            int x = value(call, rank, phase), y = -1, e = 0;
            if (phase == 0) {
                y = rank == root ? x : -1;
                MPI_Bcast(&y, 1, MPI_INT, root, MPI_COMM_WORLD);
                CHECK(y == value(call, root, phase), "ahead %d: bcast %d", call, y);
            } else {
                MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
                for (int r = 0; r < size; r++) e += value(call, r, phase);
                if (rank == root) CHECK(y == e, "ahead %d: reduce %d, expected %d", call, y, e);
            }
        }
    }

    /* 1. Long runs of posted calls only: the senders wait for room in the ring. */
    for (int call = 0; call < 1200; call++) {
        unsigned long long h = mix((unsigned)call);
        int root = (int)(h % (unsigned)size);
        int x = value(call, rank, 0), y = root == rank ? 0 : 99, e = 0;
        for (int r = 0; r < size; r++) e += value(call, r, 0);
        if (call % 2) {
            MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
            if (rank == root) CHECK(y == e, "run %d: reduce %d, expected %d", call, y, e);
        } else {
            y = rank == root ? value(call, root, 1) : 0;
            MPI_Bcast(&y, 1, MPI_INT, root, MPI_COMM_WORLD);
            CHECK(y == value(call, root, 1), "run %d: bcast %d", call, y);
        }
        if (rank == size - 1 && call % 300 == 0) usleep(20000);
    }

    /* 2. Everything mixed, on MPI_COMM_WORLD. */
    for (int call = 0; call < 600; call++) one_call(MPI_COMM_WORLD, call, 7);

    /* 3. Communicators created and freed: channels reused with stale post entries. */
    for (int round = 0; round < 12; round++) {
        MPI_Comm c;
        MPI_Comm_split(MPI_COMM_WORLD, (rank + round) % 2, size - rank, &c);
        int upto = 5 + round * 7; /* stops at different points of the ring */
        for (int call = 0; call < upto; call++) one_call(c, 10000 * (round + 1) + call, round % 3 ? 11 : 0);
        MPI_Comm_free(&c);
    }

    /* 4. MPI_ERRORS_RETURN: every rank waits for every other in the same calls. */
    MPI_Comm ret;
    MPI_Comm_dup(MPI_COMM_WORLD, &ret);
    MPI_Comm_set_errhandler(ret, MPI_ERRORS_RETURN);
    for (int call = 0; call < 300; call++) one_call(ret, 50000 + call, 9);
    MPI_Comm_free(&ret);

    MPI_Op_free(&matop);
    MPI_Type_free(&mat);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("posted: %s (%d failures)\n", all ? "FAILED" : "ok", all);
    MPI_Finalize();
    return all != 0;
}
