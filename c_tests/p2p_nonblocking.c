/* Nonblocking point-to-point and completion calls: MPI_Isend/MPI_Irecv with MPI_Wait,
 * MPI_Waitall, MPI_Waitany, MPI_Waitsome, MPI_Test, MPI_Testall, MPI_Testany,
 * MPI_Testsome (the Test variants in poll loops), MPI_REQUEST_NULL entries in the arrays
 * (and arrays of only MPI_REQUEST_NULL), MPI_Request_get_status, MPI_Request_free,
 * MPI_Cancel of an unmatched receive with MPI_Test_cancelled, MPI_Probe/MPI_Iprobe
 * followed by a receive of the probed size, MPI_Sendrecv and MPI_Sendrecv_replace. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank = -1;

#define CHECK(cond, ...)                                                                    \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "p2p_nonblocking: rank %d: %s:%d: check failed: %s: ", g_rank, \
                    __FILE__, __LINE__, #cond);                                             \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fprintf(stderr, "\n");                                                          \
            fflush(stderr);                                                                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                   \
        }                                                                                   \
    } while (0)

static int rank, size;

static int val(int src, int dst, int round, int i) { return ((src * 8 + dst) * 64 + round) * 1000 + i % 997; }

/* Message length from src to dst in a round: varies so both protocols show up. */
static int msg_len(int src, int dst, int round) {
    switch ((src + dst + round) % 4) {
    case 0: return 0;
    case 1: return 3 + src;
    case 2: return 1000 + dst;
    default: return 20000 + src * 10 + dst; /* above the eager limit */
    }
}

static void check_msg(const int *b, const MPI_Status *st, int src, int round, const char *what) {
    int n = msg_len(src, rank, round), count = -1;
    CHECK(st->MPI_SOURCE == src, "%s: source %d, expected %d", what, st->MPI_SOURCE, src);
    CHECK(st->MPI_TAG == round, "%s: tag %d, expected %d", what, st->MPI_TAG, round);
    MPI_Get_count(st, MPI_INT, &count);
    CHECK(count == n, "%s from %d: count %d, expected %d", what, src, count, n);
    for (int i = 0; i < n; i++)
        CHECK(b[i] == val(src, rank, round, i), "%s from %d: element %d is %d, expected %d", what, src, i, b[i],
              val(src, rank, round, i));
}

static void check_empty_status(const MPI_Status *st, const char *what) {
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && count == 0,
          "%s: status of a null request is source %d tag %d count %d, expected the empty status", what,
          st->MPI_SOURCE, st->MPI_TAG, count);
}

/* Layout of the request arrays used by the all-to-all rounds:
 * [0]       MPI_REQUEST_NULL
 * [1+2p]    receive from p     [2+2p] send to p
 * [last]    MPI_REQUEST_NULL */
typedef struct {
    int nreq;
    MPI_Request *req;
    int **rbuf, **sbuf;
} Round;

static void start_round(Round *r, int round) {
    r->nreq = 2 * size + 2;
    r->req = malloc((size_t)r->nreq * sizeof *r->req);
    r->rbuf = malloc((size_t)size * sizeof *r->rbuf);
    r->sbuf = malloc((size_t)size * sizeof *r->sbuf);
    r->req[0] = r->req[r->nreq - 1] = MPI_REQUEST_NULL;
    for (int p = 0; p < size; p++) {
        int nin = msg_len(p, rank, round), nout = msg_len(rank, p, round);
        r->rbuf[p] = malloc((size_t)nin * sizeof(int) + 4);
        r->sbuf[p] = malloc((size_t)nout * sizeof(int) + 4);
        for (int i = 0; i < nout; i++) r->sbuf[p][i] = val(rank, p, round, i);
        MPI_Irecv(r->rbuf[p], nin, MPI_INT, p, round, MPI_COMM_WORLD, &r->req[1 + 2 * p]);
    }
    for (int k = 0; k < size; k++) {
        int p = (rank + k) % size;
        MPI_Isend(r->sbuf[p], msg_len(rank, p, round), MPI_INT, p, round, MPI_COMM_WORLD, &r->req[2 + 2 * p]);
    }
}

/* Called once per completed request index: checks receives. */
static void round_done(Round *r, int idx, const MPI_Status *st, int round, int *seen, const char *what) {
    CHECK(idx > 0 && idx < r->nreq - 1, "%s: completed index %d is a null entry or out of range", what, idx);
    CHECK(!seen[idx], "%s: index %d reported complete twice", what, idx);
    seen[idx] = 1;
    CHECK(r->req[idx] == MPI_REQUEST_NULL, "%s: completed request %d was not set to MPI_REQUEST_NULL", what, idx);
    if (idx % 2 == 1) check_msg(r->rbuf[(idx - 1) / 2], st, (idx - 1) / 2, round, what);
}

static void end_round(Round *r, const int *seen) {
    for (int i = 1; i < r->nreq - 1; i++) CHECK(seen[i], "request %d never completed", i);
    for (int p = 0; p < size; p++) {
        free(r->rbuf[p]);
        free(r->sbuf[p]);
    }
    free(r->rbuf);
    free(r->sbuf);
    free(r->req);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_rank = rank;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const int nreq = 2 * size + 2;
    int *seen = malloc((size_t)nreq * sizeof *seen);
    MPI_Status *sts = malloc((size_t)nreq * sizeof *sts);
    int *idx = malloc((size_t)nreq * sizeof *idx);
    Round r;

    /* ---- round 0: MPI_Wait one by one (receives in reverse order) */
    start_round(&r, 0);
    memset(seen, 0, (size_t)nreq * sizeof *seen);
    for (int i = nreq - 1; i >= 0; i--) {
        MPI_Status st;
        CHECK(MPI_Wait(&r.req[i], &st) == MPI_SUCCESS, "MPI_Wait");
        if (i == 0 || i == nreq - 1) check_empty_status(&st, "MPI_Wait on MPI_REQUEST_NULL");
        else round_done(&r, i, &st, 0, seen, "Wait");
    }
    end_round(&r, seen);

    /* ---- round 1: MPI_Waitall */
    start_round(&r, 1);
    memset(seen, 0, (size_t)nreq * sizeof *seen);
    CHECK(MPI_Waitall(nreq, r.req, sts) == MPI_SUCCESS, "MPI_Waitall");
    check_empty_status(&sts[0], "Waitall null entry");
    check_empty_status(&sts[nreq - 1], "Waitall null entry");
    for (int i = 1; i < nreq - 1; i++) round_done(&r, i, &sts[i], 1, seen, "Waitall");
    end_round(&r, seen);

    /* ---- round 2: MPI_Waitany until MPI_UNDEFINED */
    start_round(&r, 2);
    memset(seen, 0, (size_t)nreq * sizeof *seen);
    for (int k = 0;; k++) {
        int i = -1;
        MPI_Status st;
        CHECK(MPI_Waitany(nreq, r.req, &i, &st) == MPI_SUCCESS, "MPI_Waitany");
        if (i == MPI_UNDEFINED) {
            CHECK(k == nreq - 2, "Waitany returned MPI_UNDEFINED after %d of %d completions", k, nreq - 2);
            check_empty_status(&st, "Waitany with only null requests");
            break;
        }
        CHECK(k < nreq - 2, "Waitany completed more requests than there are");
        round_done(&r, i, &st, 2, seen, "Waitany");
    }
    end_round(&r, seen);

    /* ---- round 3: MPI_Waitsome until MPI_UNDEFINED */
    start_round(&r, 3);
    memset(seen, 0, (size_t)nreq * sizeof *seen);
    for (int done = 0;;) {
        int out = -2;
        CHECK(MPI_Waitsome(nreq, r.req, &out, idx, sts) == MPI_SUCCESS, "MPI_Waitsome");
        if (out == MPI_UNDEFINED) {
            CHECK(done == nreq - 2, "Waitsome returned MPI_UNDEFINED after %d of %d", done, nreq - 2);
            break;
        }
        CHECK(out >= 1 && out <= nreq - 2 - done, "Waitsome outcount %d with %d active", out, nreq - 2 - done);
        for (int j = 0; j < out; j++) round_done(&r, idx[j], &sts[j], 3, seen, "Waitsome");
        done += out;
    }
    end_round(&r, seen);

    /* ---- round 4: MPI_Test on each request in a poll loop */
    start_round(&r, 4);
    memset(seen, 0, (size_t)nreq * sizeof *seen);
    for (int left_to_do = nreq - 2; left_to_do > 0;) {
        for (int i = 0; i < nreq; i++) {
            int flag = 0;
            MPI_Status st;
            int was_null = r.req[i] == MPI_REQUEST_NULL;
            CHECK(MPI_Test(&r.req[i], &flag, &st) == MPI_SUCCESS, "MPI_Test");
            if (was_null) {
                CHECK(flag, "MPI_Test on MPI_REQUEST_NULL gave flag false");
                if (i == 0) check_empty_status(&st, "MPI_Test on MPI_REQUEST_NULL");
            } else if (flag) {
                round_done(&r, i, &st, 4, seen, "Test");
                left_to_do--;
            }
        }
    }
    end_round(&r, seen);

    /* ---- round 5: MPI_Testall in a poll loop */
    start_round(&r, 5);
    memset(seen, 0, (size_t)nreq * sizeof *seen);
    for (int flag = 0; !flag;) {
        CHECK(MPI_Testall(nreq, r.req, &flag, sts) == MPI_SUCCESS, "MPI_Testall");
        if (!flag) /* nothing may have been freed while not all are complete */
            for (int i = 1; i < nreq - 1; i++)
                CHECK(r.req[i] != MPI_REQUEST_NULL, "Testall gave flag false but freed request %d", i);
    }
    check_empty_status(&sts[0], "Testall null entry");
    for (int i = 1; i < nreq - 1; i++) round_done(&r, i, &sts[i], 5, seen, "Testall");
    end_round(&r, seen);

    /* ---- round 6: MPI_Testany in a poll loop until it reports MPI_UNDEFINED */
    start_round(&r, 6);
    memset(seen, 0, (size_t)nreq * sizeof *seen);
    for (int done = 0;;) {
        int i = -2, flag = 0;
        MPI_Status st;
        CHECK(MPI_Testany(nreq, r.req, &i, &flag, &st) == MPI_SUCCESS, "MPI_Testany");
        if (!flag) {
            CHECK(i == MPI_UNDEFINED, "Testany without completion gave index %d", i);
            continue;
        }
        if (i == MPI_UNDEFINED) {
            CHECK(done == nreq - 2, "Testany: all null after %d of %d", done, nreq - 2);
            break;
        }
        round_done(&r, i, &st, 6, seen, "Testany");
        done++;
    }
    end_round(&r, seen);

    /* ---- round 7: MPI_Testsome in a poll loop until MPI_UNDEFINED */
    start_round(&r, 7);
    memset(seen, 0, (size_t)nreq * sizeof *seen);
    for (int done = 0;;) {
        int out = -2;
        CHECK(MPI_Testsome(nreq, r.req, &out, idx, sts) == MPI_SUCCESS, "MPI_Testsome");
        if (out == MPI_UNDEFINED) {
            CHECK(done == nreq - 2, "Testsome: MPI_UNDEFINED after %d of %d", done, nreq - 2);
            break;
        }
        CHECK(out >= 0 && out <= nreq - 2 - done, "Testsome outcount %d", out);
        for (int j = 0; j < out; j++) round_done(&r, idx[j], &sts[j], 7, seen, "Testsome");
        done += out;
    }
    end_round(&r, seen);

    /* ---- arrays of only null requests */
    {
        MPI_Request nulls[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        MPI_Status s3[3];
        int i = -2, flag = 0, out = -2, ix[3];
        CHECK(MPI_Waitall(3, nulls, s3) == MPI_SUCCESS, "Waitall of nulls");
        for (int k = 0; k < 3; k++) check_empty_status(&s3[k], "Waitall of nulls");
        MPI_Waitany(3, nulls, &i, &s3[0]);
        CHECK(i == MPI_UNDEFINED, "Waitany of nulls: index %d", i);
        MPI_Testany(3, nulls, &i, &flag, &s3[0]);
        CHECK(flag && i == MPI_UNDEFINED, "Testany of nulls: flag %d index %d", flag, i);
        MPI_Waitsome(3, nulls, &out, ix, s3);
        CHECK(out == MPI_UNDEFINED, "Waitsome of nulls: outcount %d", out);
        MPI_Testsome(3, nulls, &out, ix, s3);
        CHECK(out == MPI_UNDEFINED, "Testsome of nulls: outcount %d", out);
        flag = 0;
        MPI_Testall(3, nulls, &flag, s3);
        CHECK(flag, "Testall of nulls: flag false");
        MPI_Waitall(0, nulls, s3);
    }

    /* ---- MPI_Request_get_status leaves the request alive; MPI_Request_free */
    {
        int s[5], rcv[5] = {0};
        MPI_Request rr, sr;
        for (int i = 0; i < 5; i++) s[i] = val(rank, right, 20, i);
        MPI_Irecv(rcv, 5, MPI_INT, left, 20, MPI_COMM_WORLD, &rr);
        MPI_Isend(s, 5, MPI_INT, right, 20, MPI_COMM_WORLD, &sr);
        int flag = 0;
        MPI_Status st;
        while (!flag) CHECK(MPI_Request_get_status(rr, &flag, &st) == MPI_SUCCESS, "Request_get_status");
        CHECK(rr != MPI_REQUEST_NULL, "Request_get_status freed the request");
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 20, "Request_get_status: source %d tag %d", st.MPI_SOURCE,
              st.MPI_TAG);
        flag = 0;
        MPI_Request_get_status(rr, &flag, &st); /* again: still complete */
        CHECK(flag, "second Request_get_status lost completion");
        MPI_Wait(&rr, &st);
        CHECK(rr == MPI_REQUEST_NULL, "Wait did not free");
        for (int i = 0; i < 5; i++) CHECK(rcv[i] == val(left, rank, 20, i), "get_status message element %d", i);
        flag = 0;
        while (!flag) MPI_Request_get_status(sr, &flag, MPI_STATUS_IGNORE);
        CHECK(MPI_Request_free(&sr) == MPI_SUCCESS, "Request_free of a completed send");
        CHECK(sr == MPI_REQUEST_NULL, "Request_free did not set MPI_REQUEST_NULL");
        flag = 0;
        MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st);
        CHECK(flag, "Request_get_status(MPI_REQUEST_NULL) flag false");
        check_empty_status(&st, "Request_get_status(MPI_REQUEST_NULL)");

        /* Request_free on a send still in flight (large): the message still arrives. */
        int n = 100000;
        int *big = malloc((size_t)n * sizeof *big), *bigr = malloc((size_t)n * sizeof *bigr);
        for (int i = 0; i < n; i++) big[i] = val(rank, right, 21, i);
        MPI_Irecv(bigr, n, MPI_INT, left, 21, MPI_COMM_WORLD, &rr);
        MPI_Isend(big, n, MPI_INT, right, 21, MPI_COMM_WORLD, &sr);
        CHECK(MPI_Request_free(&sr) == MPI_SUCCESS && sr == MPI_REQUEST_NULL, "Request_free of an active send");
        MPI_Wait(&rr, &st);
        for (int i = 0; i < n; i++)
            CHECK(bigr[i] == val(left, rank, 21, i), "freed-send message element %d is %d", i, bigr[i]);
        /* The sender may only reuse its buffer once it knows the message arrived. */
        MPI_Barrier(MPI_COMM_WORLD);
        free(big);
        free(bigr);
    }

    /* ---- MPI_Cancel of a receive that nothing matches */
    {
        int b[4] = {-1, -1, -1, -1}, cancelled = 0;
        MPI_Request rr;
        MPI_Status st;
        MPI_Irecv(b, 4, MPI_INT, left, 31337, MPI_COMM_WORLD, &rr);
        CHECK(MPI_Cancel(&rr) == MPI_SUCCESS, "MPI_Cancel");
        CHECK(MPI_Wait(&rr, &st) == MPI_SUCCESS, "Wait on a cancelled receive");
        CHECK(rr == MPI_REQUEST_NULL, "Wait on a cancelled receive did not free it");
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(cancelled, "MPI_Test_cancelled is false for a cancelled unmatched receive");
        CHECK(b[0] == -1 && b[3] == -1, "cancelled receive wrote to its buffer");
        /* Also with MPI_ANY_SOURCE, completed through MPI_Test. */
        MPI_Irecv(b, 4, MPI_INT, MPI_ANY_SOURCE, 31338, MPI_COMM_WORLD, &rr);
        MPI_Cancel(&rr);
        int flag = 0;
        while (!flag) MPI_Test(&rr, &flag, &st);
        cancelled = 0;
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(cancelled, "MPI_Test_cancelled false (ANY_SOURCE receive)");
        /* A completed (not cancelled) receive reports false. */
        int x = rank, y = -1;
        MPI_Sendrecv(&x, 1, MPI_INT, right, 32, &y, 1, MPI_INT, left, 32, MPI_COMM_WORLD, &st);
        cancelled = 1;
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(!cancelled, "MPI_Test_cancelled true for an ordinary receive");
        CHECK(y == left, "Sendrecv after cancel got %d", y);
    }

    /* ---- MPI_Probe / MPI_Iprobe, then receive exactly the probed size */
    MPI_Barrier(MPI_COMM_WORLD);
    {
        const int nsmall = 13 * rank + 5, nbig = 50000 + rank; /* lengths the receiver cannot know */
        double *s1 = malloc((size_t)nsmall * sizeof *s1), *s2 = malloc((size_t)nbig * sizeof *s2);
        for (int i = 0; i < nsmall; i++) s1[i] = rank + i * 0.5;
        for (int i = 0; i < nbig; i++) s2[i] = rank - i * 0.25;
        MPI_Request sr[2];
        MPI_Isend(s1, nsmall, MPI_DOUBLE, right, 40, MPI_COMM_WORLD, &sr[0]);
        MPI_Isend(s2, nbig, MPI_DOUBLE, right, 41, MPI_COMM_WORLD, &sr[1]);

        MPI_Status st;
        int count = -1;
        CHECK(MPI_Probe(left, 40, MPI_COMM_WORLD, &st) == MPI_SUCCESS, "MPI_Probe");
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 40, "Probe: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
        MPI_Get_count(&st, MPI_DOUBLE, &count);
        CHECK(count == 13 * left + 5, "Probe count %d, expected %d", count, 13 * left + 5);
        double *r1 = malloc((size_t)count * sizeof *r1);
        MPI_Recv(r1, count, MPI_DOUBLE, left, 40, MPI_COMM_WORLD, &st);
        for (int i = 0; i < count; i++) CHECK(r1[i] == left + i * 0.5, "probed message element %d", i);

        int flag = 0;
        while (!flag)
            CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) == MPI_SUCCESS, "Iprobe");
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 41, "Iprobe: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
        MPI_Get_count(&st, MPI_DOUBLE, &count);
        CHECK(count == 50000 + left, "Iprobe count %d, expected %d", count, 50000 + left);
        /* Probing again sees the same message. */
        MPI_Probe(MPI_ANY_SOURCE, 41, MPI_COMM_WORLD, &st);
        int count2 = -1;
        MPI_Get_count(&st, MPI_DOUBLE, &count2);
        CHECK(count2 == count && st.MPI_SOURCE == left, "second probe differs");
        double *r2 = malloc((size_t)count * sizeof *r2);
        MPI_Recv(r2, count, MPI_DOUBLE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st);
        for (int i = 0; i < count; i++) CHECK(r2[i] == left - i * 0.25, "large probed message element %d", i);
        MPI_Status ss[2];
        MPI_Waitall(2, sr, ss);
        /* Nothing left: Iprobe says so. */
        MPI_Barrier(MPI_COMM_WORLD);
        flag = 1;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        CHECK(!flag, "Iprobe found a message (source %d tag %d) when none is pending", st.MPI_SOURCE, st.MPI_TAG);
        MPI_Barrier(MPI_COMM_WORLD); /* nobody sends again before everyone has looked */
        /* Probe of MPI_PROC_NULL returns at once with the null status. */
        MPI_Probe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "Probe(MPI_PROC_NULL) status");
        free(s1);
        free(s2);
        free(r1);
        free(r2);
    }

    /* ---- MPI_Sendrecv and MPI_Sendrecv_replace around the ring */
    {
        const int ns[3] = {1, 777, 300000};
        for (int c = 0; c < 3; c++) {
            int n = ns[c];
            int *s = malloc((size_t)n * sizeof *s), *rr = malloc((size_t)n * sizeof *rr);
            for (int i = 0; i < n; i++) s[i] = val(rank, right, 50 + c, i);
            MPI_Status st;
            CHECK(MPI_Sendrecv(s, n, MPI_INT, right, 50 + c, rr, n, MPI_INT, left, 50 + c, MPI_COMM_WORLD, &st) ==
                      MPI_SUCCESS,
                  "Sendrecv");
            int count = -1;
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 50 + c && count == n, "Sendrecv status %d/%d/%d",
                  st.MPI_SOURCE, st.MPI_TAG, count);
            for (int i = 0; i < n; i++) CHECK(rr[i] == val(left, rank, 50 + c, i), "Sendrecv n=%d element %d", n, i);
            /* Replace: the buffer travels one step further each time, size rounds. */
            for (int step = 1; step <= size; step++) {
                CHECK(MPI_Sendrecv_replace(s, n, MPI_INT, right, 60 + c, left, 60 + c, MPI_COMM_WORLD, &st) ==
                          MPI_SUCCESS,
                      "Sendrecv_replace");
                int from = (rank - step + size * 2) % size;
                for (int i = 0; i < n; i++)
                    CHECK(s[i] == val(from, (from + 1) % size, 50 + c, i),
                          "Sendrecv_replace n=%d step %d element %d", n, step, i);
            }
            free(s);
            free(rr);
        }
        /* Sendrecv with MPI_PROC_NULL on both sides */
        int a = 5, b = 6;
        MPI_Status st;
        MPI_Sendrecv(&a, 1, MPI_INT, MPI_PROC_NULL, 0, &b, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
        CHECK(b == 6 && st.MPI_SOURCE == MPI_PROC_NULL, "Sendrecv with MPI_PROC_NULL");
    }

    int one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == size, "final allreduce %d, expected %d", total, size);
    free(seen);
    free(sts);
    free(idx);
    if (rank == 0) printf("p2p_nonblocking: OK on %d processes\n", size);
    MPI_Finalize();
    return 0;
}
