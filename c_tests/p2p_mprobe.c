/* Matched probes (MPI-3.1 3.8.2): MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv.
 *
 * 1. Every rank sends several messages of different sizes (eager and rendezvous) and
 *    tags to every rank; each rank takes them with MPI_Mprobe(MPI_ANY_SOURCE,
 *    MPI_ANY_TAG), sizes its buffer from MPI_Get_count on the probe's status and
 *    receives with MPI_Mrecv: every message arrives once, in per-source order, with the
 *    contents its sender computed.
 * 2. A matched message cannot be stolen: after MPI_Mprobe matched message A, MPI_Probe,
 *    MPI_Iprobe and MPI_Recv with the same source and tag see the next message B, and
 *    MPI_Mrecv still gets A. With 1 MiB messages (rendezvous) too, and with the receiver
 *    doing other point-to-point between MPI_Mprobe and MPI_Mrecv (no deadlock). Once the
 *    only pending message is matched, MPI_Iprobe / MPI_Improbe with wildcards find
 *    nothing.
 * 3. An MPI_Issend matched by MPI_Mprobe does not complete before MPI_Mrecv.
 * 4. Truncation under MPI_ERRORS_RETURN: MPI_Mrecv and MPI_Imrecv + MPI_Wait into a
 *    short buffer return MPI_ERR_TRUNCATE (eager and rendezvous sizes), write nothing
 *    past the buffer, and the library keeps working.
 * 5. MPI_PROC_NULL: MPI_MESSAGE_NO_PROC, the empty status, MPI_Mrecv / MPI_Imrecv of it.
 * 6. MPI_Improbe loop + MPI_Imrecv + MPI_Waitall over messages from every rank.
 * 7. Receive into a derived datatype (vector with gaps): the gaps are untouched;
 *    MPI_Get_count / MPI_Get_elements of the probe's status.
 * 8. Intercommunicator: MPI_Mprobe(MPI_ANY_SOURCE) gives remote-group ranks.
 * 9. Bad handles: MPI_MESSAGE_NULL, a received message's stale handle, a garbage value
 *    (MPI_ERR_REQUEST), a request handle (MPI_ERR_ARG, as MPICH), a message handle given
 *    to MPI_Wait (MPI_ERR_REQUEST on shmpi; the message stays receivable).
 * Checked against MPICH too (this program passes there, built with mpicc.mpich). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank = -1;

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "p2p_mprobe: rank %d: %s:%d: check failed: %s: ", g_rank,    \
                    __FILE__, __LINE__, #cond);                                          \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n");                                                       \
            fflush(stderr);                                                              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                \
        }                                                                                \
    } while (0)

#define OK(call)                                                                         \
    do {                                                                                 \
        int rc_ = (call);                                                                \
        CHECK(rc_ == MPI_SUCCESS, "%s returned %d", #call, rc_);                         \
    } while (0)

/* What element i of message (src, k) holds: the sender computes it, the receiver checks. */
static int val(int src, int k, int i) { return src * 1000003 + k * 7919 + i % 65521; }

static int error_class(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

static int *zeros(int n) {
    int *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    CHECK(p != NULL, "out of memory");
    return p;
}

static int *make(int src, int k, int n) {
    int *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int i = 0; i < n; i++) p[i] = val(src, k, i);
    return p;
}

static void check_data(const int *r, int src, int k, int n, const char *what) {
    for (int i = 0; i < n; i++)
        CHECK(r[i] == val(src, k, i), "%s: message (src %d, k %d) element %d is %d, expected %d", what, src, k,
              i, r[i], val(src, k, i));
}

/* Message sizes in ints: eager, empty, around the 16 KiB eager limit, rendezvous. */
static int size_of(int src, int dst, int t) {
    static const int sizes[] = {5, 0, 4096, 4097, 70000, 1};
    return sizes[(src * 3 + dst + t) % 6];
}

/* A message handle is a user (direct or indirect) handle in the request object space:
 * kind bits 31-30 = 2 or 3, object type bits 29-26 = 0xb (as MPICH's). */
static void check_handle_shape(MPI_Message m) {
    unsigned u = (unsigned)m;
    CHECK((u >> 31) == 1 && ((u >> 26) & 0xf) == 0xb, "message handle %#x is not a request-space user handle", u);
}

static void section1(int rank, int size) {
    const int T = 3;
    int nsend = size * T;
    MPI_Request *sr = malloc((size_t)nsend * sizeof *sr);
    int **sb = malloc((size_t)nsend * sizeof *sb);
    for (int d = 0; d < size; d++)
        for (int t = 0; t < T; t++) {
            int n = size_of(rank, d, t);
            sb[d * T + t] = make(rank, d * 10 + t, n);
            OK(MPI_Isend(sb[d * T + t], n, MPI_INT, d, 100 + t, MPI_COMM_WORLD, &sr[d * T + t]));
        }
    int *next_tag = zeros(size);
    for (int got = 0; got < nsend; got++) {
        MPI_Message m = MPI_MESSAGE_NULL;
        MPI_Status st;
        OK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &m, &st));
        CHECK(m != MPI_MESSAGE_NULL && m != MPI_MESSAGE_NO_PROC, "MPI_Mprobe gave message %#x", (unsigned)m);
        check_handle_shape(m);
        int src = st.MPI_SOURCE, tag = st.MPI_TAG;
        CHECK(src >= 0 && src < size, "MPI_Mprobe: source %d", src);
        int t = tag - 100;
        /* Non-overtaking: messages of one source are matched in the order sent. */
        CHECK(t == next_tag[src], "MPI_Mprobe: from %d got tag %d, expected %d", src, tag, 100 + next_tag[src]);
        next_tag[src]++;
        int n = -1;
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == size_of(src, rank, t), "MPI_Get_count on the probe's status: %d, expected %d", n,
              size_of(src, rank, t));
        int *r = malloc((size_t)(n + 1) * sizeof *r);
        r[n] = -77;
        MPI_Status rs;
        OK(MPI_Mrecv(r, n, MPI_INT, &m, &rs));
        CHECK(m == MPI_MESSAGE_NULL, "MPI_Mrecv left the message handle %#x", (unsigned)m);
        CHECK(rs.MPI_SOURCE == src && rs.MPI_TAG == tag, "MPI_Mrecv status (%d, %d), probe said (%d, %d)",
              rs.MPI_SOURCE, rs.MPI_TAG, src, tag);
        int n2 = -1;
        OK(MPI_Get_count(&rs, MPI_INT, &n2));
        CHECK(n2 == n, "MPI_Mrecv count %d, probe said %d", n2, n);
        check_data(r, src, rank * 10 + t, n, "section 1");
        CHECK(r[n] == -77, "MPI_Mrecv wrote past the message");
        free(r);
    }
    for (int s = 0; s < size; s++) CHECK(next_tag[s] == T, "got %d messages from %d, expected %d", next_tag[s], s, T);
    OK(MPI_Waitall(nsend, sr, MPI_STATUSES_IGNORE));
    for (int i = 0; i < nsend; i++) free(sb[i]);
    free(sb);
    free(sr);
    free(next_tag);
}

/* No message left for this rank anywhere: wildcard probes must find nothing. */
static void expect_nothing(const char *when) {
    for (int i = 0; i < 20; i++) {
        int flag = -1;
        MPI_Status st;
        OK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        CHECK(flag == 0, "%s: MPI_Iprobe found a message from %d tag %d", when, st.MPI_SOURCE, st.MPI_TAG);
        MPI_Message m = 12345;
        OK(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m, &st));
        CHECK(flag == 0, "%s: MPI_Improbe found a message", when);
    }
}

static void section2(int rank, int size, int na, int nb, int nc, int k) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *a = make(rank, k, na), *b = make(rank, k + 1, nb), *c = make(rank, k + 2, nc);
    MPI_Request sr[3];
    OK(MPI_Isend(a, na, MPI_INT, right, 7, MPI_COMM_WORLD, &sr[0]));
    OK(MPI_Isend(b, nb, MPI_INT, right, 7, MPI_COMM_WORLD, &sr[1]));
    /* A third message on another tag, received by MPI_Recv in the middle. */
    OK(MPI_Isend(c, nc, MPI_INT, right, 8, MPI_COMM_WORLD, &sr[2]));

    MPI_Message ma;
    MPI_Status st;
    OK(MPI_Mprobe(left, 7, MPI_COMM_WORLD, &ma, &st));
    int n = -1;
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == na && st.MPI_SOURCE == left && st.MPI_TAG == 7, "Mprobe of A: count %d (expected %d) source %d",
          n, na, st.MPI_SOURCE);
    /* The next probe with the same arguments sees B, not A. */
    OK(MPI_Probe(left, 7, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == nb, "MPI_Probe after MPI_Mprobe: count %d, expected B's %d (A was stolen?)", n, nb);
    int flag = 0;
    OK(MPI_Iprobe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &flag, &st));
    CHECK(flag, "MPI_Iprobe after MPI_Probe found nothing");
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == nb, "MPI_Iprobe after MPI_Mprobe: count %d, expected B's %d", n, nb);
    /* Other point-to-point between MPI_Mprobe and MPI_Mrecv: receive C, then B. */
    int *rc = malloc((size_t)(nc + 1) * sizeof *rc);
    OK(MPI_Recv(rc, nc, MPI_INT, left, 8, MPI_COMM_WORLD, &st));
    check_data(rc, left, k + 2, nc, "section 2, C by MPI_Recv");
    int *rb = malloc((size_t)(nb > na ? nb : na) * sizeof *rb + sizeof(int));
    OK(MPI_Recv(rb, nb > na ? nb : na, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == nb && st.MPI_SOURCE == left && st.MPI_TAG == 7,
          "MPI_Recv(ANY, ANY) after MPI_Mprobe got count %d from %d tag %d, expected B (%d ints)", n,
          st.MPI_SOURCE, st.MPI_TAG, nb);
    check_data(rb, left, k + 1, nb, "section 2, B by MPI_Recv");
    /* Now only A is pending, and it is matched: nothing else can see it. */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    expect_nothing("section 2, with A matched");
    int *ra = malloc((size_t)(na + 1) * sizeof *ra);
    OK(MPI_Mrecv(ra, na, MPI_INT, &ma, &st));
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == na && st.MPI_SOURCE == left && st.MPI_TAG == 7, "MPI_Mrecv of A: count %d source %d tag %d", n,
          st.MPI_SOURCE, st.MPI_TAG);
    check_data(ra, left, k, na, "section 2, A by MPI_Mrecv");
    OK(MPI_Waitall(3, sr, MPI_STATUSES_IGNORE));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    free(a);
    free(b);
    free(c);
    free(ra);
    free(rb);
    free(rc);
}

static void section3(int rank, int size) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int x = val(rank, 31, 0), y = -1;
    MPI_Request sr;
    OK(MPI_Issend(&x, 1, MPI_INT, right, 31, MPI_COMM_WORLD, &sr));
    MPI_Message m;
    OK(MPI_Mprobe(left, 31, MPI_COMM_WORLD, &m, MPI_STATUS_IGNORE));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    /* Every receiver has matched but not received: no synchronous send may complete. */
    for (int i = 0; i < 50; i++) {
        int flag = -1;
        OK(MPI_Test(&sr, &flag, MPI_STATUS_IGNORE));
        CHECK(flag == 0, "MPI_Issend completed before the receiver's MPI_Mrecv");
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Mrecv(&y, 1, MPI_INT, &m, MPI_STATUS_IGNORE));
    CHECK(y == val(left, 31, 0), "section 3: got %d, expected %d", y, val(left, 31, 0));
    OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
}

static void good_exchange(int rank, int size, int n, int k) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *s = make(rank, k, n), *r = malloc((size_t)n * sizeof *r);
    MPI_Status st;
    OK(MPI_Sendrecv(s, n, MPI_INT, right, 900, r, n, MPI_INT, left, 900, MPI_COMM_WORLD, &st));
    check_data(r, left, k, n, "exchange after truncation");
    free(s);
    free(r);
}

static void section4(int rank, int size) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const int ns[2] = {10, 262144}; /* 40 bytes, 1 MiB */
    for (int c = 0; c < 2; c++) {
        int n = ns[c], short_n = n / 2;
        int *s = make(rank, 40 + c, n), *r = malloc((size_t)n * sizeof *r);
        for (int way = 0; way < 2; way++) {
            for (int i = 0; i < n; i++) r[i] = -5;
            MPI_Request sr, rr;
            OK(MPI_Isend(s, n, MPI_INT, right, 40 + c, MPI_COMM_WORLD, &sr));
            MPI_Message m;
            MPI_Status st;
            OK(MPI_Mprobe(left, 40 + c, MPI_COMM_WORLD, &m, &st));
            int rc;
            if (way == 0) {
                rc = MPI_Mrecv(r, short_n, MPI_INT, &m, &st);
            } else {
                OK(MPI_Imrecv(r, short_n, MPI_INT, &m, &rr));
                CHECK(m == MPI_MESSAGE_NULL, "MPI_Imrecv left the message handle %#x", (unsigned)m);
                rc = MPI_Wait(&rr, &st);
                CHECK(rr == MPI_REQUEST_NULL, "MPI_Wait left the request");
            }
            CHECK(rc != MPI_SUCCESS, "%s of %d ints into room for %d succeeded", way ? "Imrecv+Wait" : "Mrecv", n,
                  short_n);
            CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "%s truncation (n=%d): class %d, expected MPI_ERR_TRUNCATE",
                  way ? "Imrecv+Wait" : "Mrecv", n, error_class(rc));
            CHECK(r[short_n] == -5, "a truncated receive wrote past the buffer");
            OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
            good_exchange(rank, size, n, 50 + c * 2 + way);
        }
        free(s);
        free(r);
    }
}

static void check_proc_null_status(const MPI_Status *st, const char *what) {
    int n = -1;
    OK(MPI_Get_count(st, MPI_INT, &n));
    CHECK(st->MPI_SOURCE == MPI_PROC_NULL && st->MPI_TAG == MPI_ANY_TAG && n == 0,
          "%s: status source %d tag %d count %d, expected MPI_PROC_NULL, MPI_ANY_TAG, 0", what, st->MPI_SOURCE,
          st->MPI_TAG, n);
}

static void section5(void) {
    MPI_Message m = MPI_MESSAGE_NULL;
    MPI_Status st;
    OK(MPI_Mprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &m, &st));
    CHECK(m == MPI_MESSAGE_NO_PROC, "MPI_Mprobe(MPI_PROC_NULL) gave %#x", (unsigned)m);
    check_proc_null_status(&st, "MPI_Mprobe(MPI_PROC_NULL)");
    int y = -9;
    st.MPI_TAG = 1234;
    st.MPI_SOURCE = 5;
    OK(MPI_Mrecv(&y, 1, MPI_INT, &m, &st));
    CHECK(m == MPI_MESSAGE_NULL && y == -9, "MPI_Mrecv(MPI_MESSAGE_NO_PROC): message %#x, buffer %d",
          (unsigned)m, y);
    check_proc_null_status(&st, "MPI_Mrecv(MPI_MESSAGE_NO_PROC)");

    int flag = 0;
    OK(MPI_Improbe(MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m, &st));
    CHECK(flag == 1 && m == MPI_MESSAGE_NO_PROC, "MPI_Improbe(MPI_PROC_NULL): flag %d message %#x", flag,
          (unsigned)m);
    check_proc_null_status(&st, "MPI_Improbe(MPI_PROC_NULL)");
    MPI_Request r = MPI_REQUEST_NULL;
    OK(MPI_Imrecv(&y, 1, MPI_INT, &m, &r));
    CHECK(m == MPI_MESSAGE_NULL && r != MPI_REQUEST_NULL, "MPI_Imrecv(MPI_MESSAGE_NO_PROC): message %#x request %#x",
          (unsigned)m, (unsigned)r);
    OK(MPI_Wait(&r, &st));
    CHECK(y == -9, "MPI_Imrecv(MPI_MESSAGE_NO_PROC) wrote the buffer");
    check_proc_null_status(&st, "MPI_Imrecv(MPI_MESSAGE_NO_PROC) + MPI_Wait");
}

static void section6(int rank, int size) {
    const int T = 2;
    int nmsg = size * T;
    MPI_Request *sr = malloc((size_t)nmsg * sizeof *sr), *rr = malloc((size_t)nmsg * sizeof *rr);
    int **sb = malloc((size_t)nmsg * sizeof *sb), **rb = malloc((size_t)nmsg * sizeof *rb);
    int *rsrc = malloc((size_t)nmsg * sizeof *rsrc), *rtag = malloc((size_t)nmsg * sizeof *rtag),
        *rn = malloc((size_t)nmsg * sizeof *rn);
    for (int d = 0; d < size; d++)
        for (int t = 0; t < T; t++) {
            int n = size_of(rank, d, t + 2);
            sb[d * T + t] = make(rank, 60 + d * 10 + t, n);
            OK(MPI_Isend(sb[d * T + t], n, MPI_INT, d, 60 + t, MPI_COMM_WORLD, &sr[d * T + t]));
        }
    int got = 0;
    while (got < nmsg) {
        int flag = 0;
        MPI_Message m;
        MPI_Status st;
        OK(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m, &st));
        if (!flag) continue;
        check_handle_shape(m);
        OK(MPI_Get_count(&st, MPI_INT, &rn[got]));
        rsrc[got] = st.MPI_SOURCE;
        rtag[got] = st.MPI_TAG;
        rb[got] = malloc((size_t)(rn[got] + 1) * sizeof(int));
        OK(MPI_Imrecv(rb[got], rn[got], MPI_INT, &m, &rr[got]));
        CHECK(m == MPI_MESSAGE_NULL, "MPI_Imrecv left the message handle");
        got++;
    }
    MPI_Status *sts = malloc((size_t)nmsg * sizeof *sts);
    OK(MPI_Waitall(nmsg, rr, sts));
    int *seen = zeros(nmsg);
    for (int i = 0; i < nmsg; i++) {
        int s = rsrc[i], t = rtag[i] - 60;
        CHECK(s >= 0 && s < size && t >= 0 && t < T, "Improbe: source %d tag %d", s, rtag[i]);
        CHECK(!seen[s * T + t]++, "message (src %d, tag %d) matched twice", s, rtag[i]);
        CHECK(rr[i] == MPI_REQUEST_NULL, "MPI_Waitall left request %d", i);
        CHECK(sts[i].MPI_SOURCE == s && sts[i].MPI_TAG == rtag[i], "Waitall status %d: (%d, %d), expected (%d, %d)",
              i, sts[i].MPI_SOURCE, sts[i].MPI_TAG, s, rtag[i]);
        int n = -1;
        OK(MPI_Get_count(&sts[i], MPI_INT, &n));
        CHECK(n == rn[i] && n == size_of(s, rank, t + 2), "Waitall count %d, probe %d, sent %d", n, rn[i],
              size_of(s, rank, t + 2));
        check_data(rb[i], s, 60 + rank * 10 + t, n, "section 6 (Imrecv + Waitall)");
    }
    OK(MPI_Waitall(nmsg, sr, MPI_STATUSES_IGNORE));
    for (int i = 0; i < nmsg; i++) {
        free(sb[i]);
        free(rb[i]);
    }
    free(sb);
    free(rb);
    free(sr);
    free(rr);
    free(rsrc);
    free(rtag);
    free(rn);
    free(sts);
    free(seen);
}

static void section7(int rank, int size) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const int ns[2] = {100, 60000}; /* 1600 bytes eager, 960000 bytes rendezvous */
    for (int c = 0; c < 2; c++) {
        int n = ns[c];
        /* Sender: 2n contiguous doubles. Receiver: n blocks of 2 doubles, stride 3. */
        double *s = malloc((size_t)(2 * n) * sizeof *s);
        for (int i = 0; i < 2 * n; i++) s[i] = val(rank, 70 + c, i) + 0.25;
        MPI_Request sr;
        OK(MPI_Isend(s, 2 * n, MPI_DOUBLE, right, 70 + c, MPI_COMM_WORLD, &sr));
        MPI_Datatype vec;
        OK(MPI_Type_vector(n, 2, 3, MPI_DOUBLE, &vec));
        OK(MPI_Type_commit(&vec));
        MPI_Message m;
        MPI_Status st;
        OK(MPI_Mprobe(left, 70 + c, MPI_COMM_WORLD, &m, &st));
        int cnt = -1, el = -1;
        OK(MPI_Get_count(&st, vec, &cnt));
        OK(MPI_Get_elements(&st, vec, &el));
        CHECK(cnt == 1 && el == 2 * n, "probe status: Get_count(vector) %d (expected 1), Get_elements %d (expected %d)",
              cnt, el, 2 * n);
        OK(MPI_Get_count(&st, MPI_DOUBLE, &cnt));
        CHECK(cnt == 2 * n, "probe status: Get_count(MPI_DOUBLE) %d, expected %d", cnt, 2 * n);
        double *r = malloc((size_t)(3 * n) * sizeof *r);
        for (int i = 0; i < 3 * n; i++) r[i] = -1.5;
        OK(MPI_Mrecv(r, 1, vec, &m, &st));
        OK(MPI_Get_count(&st, vec, &cnt));
        CHECK(cnt == 1, "Mrecv status: Get_count(vector) %d", cnt);
        for (int b = 0; b < n; b++) {
            for (int j = 0; j < 2; j++) {
                double want = val(left, 70 + c, 2 * b + j) + 0.25;
                CHECK(r[3 * b + j] == want, "derived receive: block %d element %d is %g, expected %g", b, j,
                      r[3 * b + j], want);
            }
            CHECK(r[3 * b + 2] == -1.5, "derived receive wrote the gap after block %d", b);
        }
        OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
        OK(MPI_Type_free(&vec));
        free(s);
        free(r);
    }
}

static void section8(int rank, int size) {
    if (size < 2) return;
    int half = size / 2, low = rank < half;
    MPI_Comm local, inter;
    OK(MPI_Comm_split(MPI_COMM_WORLD, low, rank, &local));
    OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? half : 0, 81, &inter));
    int lrank, rsize;
    OK(MPI_Comm_rank(inter, &lrank));
    OK(MPI_Comm_remote_size(inter, &rsize));
    MPI_Request *sr = malloc((size_t)rsize * sizeof *sr);
    int **sb = malloc((size_t)rsize * sizeof *sb);
    for (int d = 0; d < rsize; d++) {
        int n = size_of(rank, d, 4);
        sb[d] = make(rank, 80 + d, n);
        OK(MPI_Isend(sb[d], n, MPI_INT, d, 80 + lrank, inter, &sr[d]));
    }
    int *seen = zeros(rsize);
    for (int i = 0; i < rsize; i++) {
        MPI_Message m;
        MPI_Status st;
        OK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, inter, &m, &st));
        int s = st.MPI_SOURCE;
        CHECK(s >= 0 && s < rsize && !seen[s]++, "intercomm Mprobe: source %d (remote size %d)", s, rsize);
        CHECK(st.MPI_TAG == 80 + s, "intercomm Mprobe: tag %d from %d", st.MPI_TAG, s);
        int world_src = low ? half + s : s;
        int n = -1;
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == size_of(world_src, lrank, 4), "intercomm count %d, expected %d", n, size_of(world_src, lrank, 4));
        int *r = malloc((size_t)(n + 1) * sizeof *r);
        OK(MPI_Mrecv(r, n, MPI_INT, &m, &st));
        CHECK(st.MPI_SOURCE == s, "intercomm Mrecv source %d, expected %d", st.MPI_SOURCE, s);
        check_data(r, world_src, 80 + lrank, n, "intercomm");
        free(r);
    }
    OK(MPI_Waitall(rsize, sr, MPI_STATUSES_IGNORE));
    for (int d = 0; d < rsize; d++) free(sb[d]);
    free(sb);
    free(sr);
    free(seen);
    OK(MPI_Comm_free(&inter));
    OK(MPI_Comm_free(&local));
}

static int on_shmpi(void) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    OK(MPI_Get_library_version(v, &len));
    return strstr(v, "shmpi") != NULL;
}

static void section9(int rank, int size) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int y = -3, rc;
    MPI_Status st;
    MPI_Message m = MPI_MESSAGE_NULL;
    rc = MPI_Mrecv(&y, 1, MPI_INT, &m, &st);
    CHECK(rc != MPI_SUCCESS && error_class(rc) == MPI_ERR_REQUEST, "Mrecv(MPI_MESSAGE_NULL): rc %d", rc);
    MPI_Request r;
    rc = MPI_Imrecv(&y, 1, MPI_INT, &m, &r);
    CHECK(rc != MPI_SUCCESS && error_class(rc) == MPI_ERR_REQUEST, "Imrecv(MPI_MESSAGE_NULL): rc %d", rc);
    m = 0x12345;
    rc = MPI_Mrecv(&y, 1, MPI_INT, &m, &st);
    CHECK(rc != MPI_SUCCESS && error_class(rc) == MPI_ERR_REQUEST, "Mrecv(0x12345): rc %d", rc);

    /* A pending receive's request handle is not a message. */
    MPI_Request pending;
    int z = -4;
    OK(MPI_Irecv(&z, 1, MPI_INT, left, 91, MPI_COMM_WORLD, &pending));
    m = (MPI_Message)pending;
    rc = MPI_Mrecv(&y, 1, MPI_INT, &m, &st);
    CHECK(rc != MPI_SUCCESS && error_class(rc) == MPI_ERR_ARG, "Mrecv(a request handle): rc %d class %d", rc,
          rc == MPI_SUCCESS ? 0 : error_class(rc));

    /* A message handle is not a request: MPI_Wait refuses it, and the message stays
     * receivable. (Erroneous use, checked on shmpi only: MPICH waits forever.) */
    int x = val(rank, 92, 0);
    MPI_Request sr[2];
    OK(MPI_Isend(&x, 1, MPI_INT, right, 92, MPI_COMM_WORLD, &sr[0]));
    OK(MPI_Mprobe(left, 92, MPI_COMM_WORLD, &m, &st));
    if (on_shmpi()) {
        MPI_Request as_req = (MPI_Request)m;
        rc = MPI_Wait(&as_req, &st);
        CHECK(rc != MPI_SUCCESS && error_class(rc) == MPI_ERR_REQUEST, "MPI_Wait(a message handle): rc %d", rc);
        CHECK(as_req == (MPI_Request)m, "the refused MPI_Wait changed the handle");
    }
    MPI_Message stale = m;
    OK(MPI_Mrecv(&y, 1, MPI_INT, &m, &st));
    CHECK(y == val(left, 92, 0), "message after the refused Wait: %d, expected %d", y, val(left, 92, 0));
    /* The received message's old handle is no longer valid. */
    rc = MPI_Mrecv(&y, 1, MPI_INT, &stale, &st);
    /* (MPICH answers MPI_ERR_ARG here, shmpi MPI_ERR_REQUEST: both say "not a message".) */
    CHECK(rc != MPI_SUCCESS && (error_class(rc) == MPI_ERR_REQUEST || error_class(rc) == MPI_ERR_ARG),
          "Mrecv(a received message): rc %d", rc);

    OK(MPI_Isend(&x, 1, MPI_INT, right, 91, MPI_COMM_WORLD, &sr[1]));
    OK(MPI_Wait(&pending, &st));
    CHECK(z == val(left, 92, 0), "the pending receive got %d", z);
    OK(MPI_Waitall(2, sr, MPI_STATUSES_IGNORE));
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    section1(rank, size);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    section2(rank, size, 3, 5, 2, 200);            /* all eager */
    section2(rank, size, 262144, 4, 3, 210);       /* A 1 MiB, B and C eager */
    section2(rank, size, 262144, 262144, 70000, 220); /* all rendezvous */
    section2(rank, size, 6, 262144, 262144, 230);  /* A eager, B and C 1 MiB */
    section3(rank, size);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    section4(rank, size);
    section5();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    section6(rank, size);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    section7(rank, size);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    section8(rank, size);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    section9(rank, size);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    expect_nothing("the end");

    int one = 1, total = 0;
    OK(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(total == size, "final allreduce %d, expected %d", total, size);
    if (rank == 0) printf("p2p_mprobe: OK on %d processes\n", size);
    MPI_Finalize();
    return 0;
}
