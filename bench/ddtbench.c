/* Derived datatypes: MPI_Send/MPI_Recv, MPI_Bcast and MPI_Allreduce of non-contiguous
 * layouts, and a memcpy of the same bytes as the reference.
 *
 * Layouts (-y, a comma list; default all), built for each size so that one element of
 * the type holds that many bytes of data:
 *   vec1      MPI_Type_vector(n, 1, 2, MPI_DOUBLE): every other double
 *   vec8      MPI_Type_vector(n/8, 8, 16, MPI_DOUBLE)
 *   vec64     MPI_Type_vector(n/64, 64, 128, MPI_DOUBLE)
 *   indexed   MPI_Type_indexed of doubles: blocks of 1, 2, .. 8 doubles in turn, each
 *             followed by a gap of 1, 2 or 3 doubles in turn
 *   struct    {int; double} (MPI_Type_create_struct, 12 bytes of data, extent 16), a
 *             contiguous count of them; not reduced (MPI_SUM needs one basic type)
 *   nested    a resized struct (extent 320 B) of two vectors (2 blocks, stride 2) of an
 *             indexed type ({3 doubles, gap 1, 2 doubles}), 20 doubles an element, a
 *             contiguous count of them
 *   subarray  MPI_Type_create_subarray: the left half of the columns of a square
 *             row-major array of doubles
 * Operations (-o; default all):
 *   sendrecv  ping-pong of one message between ranks 0 and 1 (the time is half the
 *             round trip); the other ranks wait in MPI_Barrier
 *   bcast     MPI_Bcast from rank 0
 *   allreduce MPI_Allreduce with a user-defined op that adds the layout's doubles (the
 *             standard defines the predefined ops on predefined datatypes only); not
 *             for struct
 *   memcpy    memcpy of the data bytes between two contiguous buffers of rank 0 (one
 *             per size, printed with the layout "contiguous")
 * Sizes (-s, bytes of data; default 8 KiB, 256 KiB, 8 MiB, 64 MiB; a layout may hold a
 * little less when its pattern does not divide the size: the line says how many).
 *
 * Each cell is checked once before it is timed (every data byte the receivers get, or
 * the sums, against the values expected), then an iteration count is calibrated to
 * about -t seconds per batch and -b batches are timed with MPI_Wtime on rank 0 (the
 * slowest rank's time for the collectives). One line per cell:
 *   ddt,<label>,<op>,<layout>,<data bytes>,<np>,<median us>,<MB/s at the median>,<iters>
 * A wrong value prints rank, layout, size, index, expected and found and aborts. */
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BATCHES 15

enum { L_VEC1, L_VEC8, L_VEC64, L_INDEXED, L_STRUCT, L_NESTED, L_SUBARRAY, L_COUNT };
static const char *layout_name[L_COUNT] = {"vec1",   "vec8",   "vec64",   "indexed",
                                           "struct", "nested", "subarray"};
enum { O_SENDRECV, O_BCAST, O_ALLREDUCE, O_MEMCPY, O_COUNT };
static const char *op_name[O_COUNT] = {"sendrecv", "bcast", "allreduce", "memcpy"};

static int rank, np;

static void die(const char *what, int rc) {
    fprintf(stderr, "ddtbench: rank %d: %s failed (%d)\n", rank, what, rc);
    MPI_Abort(MPI_COMM_WORLD, 2);
}
#define CHECK(call)                                                                      \
    do {                                                                                 \
        int rc_ = (call);                                                                \
        if (rc_ != MPI_SUCCESS) die(#call, rc_);                                         \
    } while (0)

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One message: the datatype, the count of it, and the buffer span it needs. */
struct msg {
    MPI_Datatype type;
    int count;
    size_t span;  /* bytes from the buffer start to the end of the last element */
    size_t bytes; /* data bytes */
};

/* Builds layout `l` with about `bytes` bytes of data. */
static struct msg make(int l, size_t bytes) {
    struct msg m = {MPI_DATATYPE_NULL, 1, 0, 0};
    int n = (int)(bytes / 8);
    MPI_Datatype t = MPI_DATATYPE_NULL;
    switch (l) {
    case L_VEC1:
    case L_VEC8:
    case L_VEC64: {
        int bl = l == L_VEC1 ? 1 : l == L_VEC8 ? 8 : 64;
        int blocks = n / bl;
        CHECK(MPI_Type_vector(blocks, bl, 2 * bl, MPI_DOUBLE, &t));
        m.span = ((size_t)(blocks - 1) * 2 * bl + bl) * 8;
        break;
    }
    case L_INDEXED: {
        int *len = malloc(sizeof(int) * (size_t)n), *disp = malloc(sizeof(int) * (size_t)n);
        int k = 0, at = 0, left = n;
        while (left > 0) {
            int b = 1 + k % 8;
            if (b > left) b = left;
            len[k] = b;
            disp[k] = at;
            at += b + 1 + k % 3;
            left -= b;
            k++;
        }
        CHECK(MPI_Type_indexed(k, len, disp, MPI_DOUBLE, &t));
        m.span = (size_t)(disp[k - 1] + len[k - 1]) * 8;
        free(len);
        free(disp);
        break;
    }
    case L_STRUCT: {
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {0, 8};
        MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE}, s;
        CHECK(MPI_Type_create_struct(2, bl, d, ty, &s));
        CHECK(MPI_Type_create_resized(s, 0, 16, &t));
        CHECK(MPI_Type_free(&s));
        m.count = (int)(bytes / 12);
        m.span = (size_t)m.count * 16;
        break;
    }
    case L_NESTED: {
        int bl[2] = {3, 2}, disp[2] = {0, 4}, one[2] = {1, 1};
        MPI_Aint sd[2] = {0, 160};
        MPI_Datatype inner, mid, outer, ty[2];
        CHECK(MPI_Type_indexed(2, bl, disp, MPI_DOUBLE, &inner));
        CHECK(MPI_Type_vector(2, 1, 2, inner, &mid));
        ty[0] = ty[1] = mid;
        CHECK(MPI_Type_create_struct(2, one, sd, ty, &outer));
        CHECK(MPI_Type_create_resized(outer, 0, 320, &t));
        CHECK(MPI_Type_free(&inner));
        CHECK(MPI_Type_free(&mid));
        CHECK(MPI_Type_free(&outer));
        m.count = n / 20;
        m.span = (size_t)m.count * 320;
        break;
    }
    case L_SUBARRAY: {
        int side = (int)sqrt(2.0 * n);
        side -= side % 2;
        int sizes[2] = {side, side}, sub[2] = {side, side / 2}, start[2] = {0, 0};
        CHECK(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &t));
        m.span = (size_t)side * side * 8;
        break;
    }
    }
    CHECK(MPI_Type_commit(&t));
    int size;
    CHECK(MPI_Type_size(t, &size));
    m.type = t;
    m.bytes = (size_t)size * m.count;
    return m;
}

/* The value of data element k (a double, or for struct the int and the double of
 * element k / 2), for `who`. Small integers, so that sums are exact. */
static double val(long k, int who) { return (double)((k * 7 + who * 13) % 1000); }

/* Fills or checks the data of buffer `p` of message `m` through MPI_Pack/MPI_Unpack
 * of a contiguous image (an oracle independent of the operation timed). */
static void fill(const struct msg *m, char *p, int who, int l) {
    char *img = malloc(m->bytes);
    if (l == L_STRUCT)
        for (int e = 0; e < m->count; e++) {
            int i = (int)val(2 * e, who);
            double d = val(2 * e + 1, who);
            memcpy(img + 12 * (size_t)e, &i, 4);
            memcpy(img + 12 * (size_t)e + 4, &d, 8);
        }
    else
        for (size_t k = 0; k < m->bytes / 8; k++) {
            double d = val((long)k, who);
            memcpy(img + 8 * k, &d, 8);
        }
    int pos = 0;
    CHECK(MPI_Unpack(img, (int)m->bytes, &pos, p, m->count, m->type, MPI_COMM_SELF));
    free(img);
}

static void check(const struct msg *m, const char *p, int l, const char *op, int who, int times) {
    char *img = malloc(m->bytes);
    int pos = 0;
    CHECK(MPI_Pack(p, m->count, m->type, img, (int)m->bytes, &pos, MPI_COMM_SELF));
    for (size_t k = 0; k < m->bytes / 8; k++) {
        double got, want = times * val((long)k, who);
        memcpy(&got, img + 8 * k, 8);
        if (l == L_STRUCT) break;
        if (got != want) {
            fprintf(stderr, "ddtbench: rank %d, %s %s, %zu bytes: element %zu expected %g found %g\n",
                    rank, op, layout_name[l], m->bytes, k, want, got);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    if (l == L_STRUCT)
        for (int e = 0; e < m->count; e++) {
            int i;
            double d;
            memcpy(&i, img + 12 * (size_t)e, 4);
            memcpy(&d, img + 12 * (size_t)e + 4, 8);
            if (i != (int)val(2 * e, who) || d != val(2 * e + 1, who)) {
                fprintf(stderr, "ddtbench: rank %d, %s struct, %zu bytes: element %d expected {%d, %g} found {%d, %g}\n",
                        rank, op, m->bytes, e, (int)val(2 * e, who), val(2 * e + 1, who), i, d);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
        }
    free(img);
}

static char *sbuf, *rbuf, *cbuf;

/* MPI_Allreduce takes a user-defined op: the standard defines the predefined ones on
 * predefined datatypes only. It adds the doubles of the current message's layout, whose
 * byte offsets in one element `offs` lists (`noffs` of them, `ext` bytes an element),
 * found by packing an image of the buffer in which every double holds its own offset. */
static long *offs;
static int noffs;
static MPI_Aint ext;

static void sum_layout(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int e = 0; e < *len; e++) {
        const char *a = (const char *)in + e * ext;
        char *b = (char *)inout + e * ext;
        for (int j = 0; j < noffs; j++) {
            double x, y;
            memcpy(&x, a + offs[j], 8);
            memcpy(&y, b + offs[j], 8);
            y += x;
            memcpy(b + offs[j], &y, 8);
        }
    }
}

static void layout_offsets(const struct msg *m) {
    MPI_Aint lb;
    CHECK(MPI_Type_get_extent(m->type, &lb, &ext));
    int per = (int)(m->bytes / 8 / (size_t)m->count);
    double *img = calloc(1, m->span), *packed = malloc(m->bytes);
    for (size_t k = 0; k < m->span / 8; k++) img[k] = (double)(8 * k);
    int pos = 0;
    CHECK(MPI_Pack(img, m->count, m->type, packed, (int)m->bytes, &pos, MPI_COMM_SELF));
    free(offs);
    offs = malloc(sizeof(long) * (size_t)per);
    for (int j = 0; j < per; j++) offs[j] = (long)packed[j];
    noffs = per;
    free(img);
    free(packed);
}

static MPI_Op sum_op;

static void once(int op, const struct msg *m) {
    switch (op) {
    case O_SENDRECV:
        if (rank == 0) {
            CHECK(MPI_Send(sbuf, m->count, m->type, 1, 0, MPI_COMM_WORLD));
            CHECK(MPI_Recv(rbuf, m->count, m->type, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        } else if (rank == 1) {
            CHECK(MPI_Recv(rbuf, m->count, m->type, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(MPI_Send(rbuf, m->count, m->type, 0, 0, MPI_COMM_WORLD));
        }
        break;
    case O_BCAST:
        CHECK(MPI_Bcast(rank == 0 ? sbuf : rbuf, m->count, m->type, 0, MPI_COMM_WORLD));
        break;
    case O_ALLREDUCE:
        CHECK(MPI_Allreduce(sbuf, rbuf, m->count, m->type, sum_op, MPI_COMM_WORLD));
        break;
    case O_MEMCPY:
        if (rank == 0) memcpy(cbuf, sbuf, m->bytes);
        break;
    }
}

/* Seconds of `iters` operations (the slowest rank's for the collectives, rank 0's
 * otherwise), the same on every rank. */
static double batch(int op, const struct msg *m, long iters) {
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) once(op, m);
    double t = MPI_Wtime() - t0, all;
    if (op == O_SENDRECV || op == O_MEMCPY) {
        if (rank != 0) t = 0;
        if (op == O_SENDRECV) t /= 2;
    }
    CHECK(MPI_Allreduce(&t, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return all;
}

static void cell(const char *label, int op, int l, size_t bytes, double target_s, int nbatch) {
    struct msg m = make(l, bytes);
    /* check: the sender's data arrives (sendrecv, bcast) or sums (allreduce) */
    /* (for MPI_Allreduce every rank contributes val(k, 0): the sums are np times it) */
    fill(&m, sbuf, 0, l);
    if (op == O_ALLREDUCE) layout_offsets(&m);
    memset(rbuf, 0, m.span);
    once(op, &m);
    if (op == O_SENDRECV && rank <= 1) check(&m, rbuf, l, op_name[op], 0, 1);
    if (op == O_BCAST && rank != 0) check(&m, rbuf, l, op_name[op], 0, 1);
    if (op == O_ALLREDUCE) check(&m, rbuf, l, op_name[op], 0, np);
    long iters = 1;
    double t;
    for (;;) {
        t = batch(op, &m, iters);
        if (t >= target_s / 4 || iters >= (1L << 24)) break;
        iters *= (t < target_s / 64) ? 8 : 2;
    }
    if (iters == 1 && t > 2 * target_s && nbatch > 3) nbatch = 3;
    iters = (long)(target_s / (t / (double)iters));
    if (iters < 1) iters = 1;
    double ts[MAX_BATCHES];
    for (int b = 0; b < nbatch; b++) ts[b] = batch(op, &m, iters) / (double)iters * 1e6;
    qsort(ts, (size_t)nbatch, sizeof(double), cmp_double);
    if (rank == 0) {
        double med = ts[nbatch / 2];
        printf("ddt,%s,%s,%s,%zu,%d,%.3f,%.1f,%ld\n", label, op_name[op],
               op == O_MEMCPY ? "contiguous" : layout_name[l], m.bytes,
               np, med, med > 0 ? (double)m.bytes / med : 0.0, iters);
        fflush(stdout);
    }
    CHECK(MPI_Type_free(&m.type));
}

static int pick(const char *list, const char *const *names, int n, int *on) {
    for (int i = 0; i < n; i++) on[i] = list == NULL;
    if (!list) return 0;
    char *copy = strdup(list), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int i = 0;
        while (i < n && strcmp(tok, names[i]) != 0) i++;
        if (i == n) {
            free(copy);
            return -1;
        }
        on[i] = 1;
    }
    free(copy);
    return 0;
}

int main(int argc, char **argv) {
    const char *label = "mpi", *ops = NULL, *layouts = NULL, *sizes_arg = NULL;
    double target_s = 0.02;
    int nbatch = 5;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-l")) label = argv[i + 1];
        else if (!strcmp(argv[i], "-o")) ops = argv[i + 1];
        else if (!strcmp(argv[i], "-y")) layouts = argv[i + 1];
        else if (!strcmp(argv[i], "-s")) sizes_arg = argv[i + 1];
        else if (!strcmp(argv[i], "-t")) target_s = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "-b")) nbatch = atoi(argv[i + 1]);
    }
    if (nbatch < 1) nbatch = 1;
    if (nbatch > MAX_BATCHES) nbatch = MAX_BATCHES;
    int on_op[O_COUNT], on_l[L_COUNT];
    if (np < 2 || pick(ops, op_name, O_COUNT, on_op) || pick(layouts, layout_name, L_COUNT, on_l)) {
        if (rank == 0) fprintf(stderr, "ddtbench: needs 2 or more processes, and known -o and -y names\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t sizes[16];
    int nsizes = 0;
    if (sizes_arg) {
        char *copy = strdup(sizes_arg), *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok && nsizes < 16; tok = strtok_r(NULL, ",", &save))
            sizes[nsizes++] = (size_t)atol(tok);
        free(copy);
    } else {
        size_t def[4] = {8192, 262144, 8 << 20, 64 << 20};
        for (int i = 0; i < 4; i++) sizes[nsizes++] = def[i];
    }
    size_t maxspan = 0;
    for (int k = 0; k < nsizes; k++) {
        if (sizes[k] < 1024 || sizes[k] > (1UL << 30)) {
            if (rank == 0) fprintf(stderr, "ddtbench: sizes are 1 KiB to 1 GiB\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (3 * sizes[k] > maxspan) maxspan = 3 * sizes[k]; /* vec1 spans twice the data */
    }
    CHECK(MPI_Op_create(sum_layout, 1, &sum_op));
    sbuf = calloc(1, maxspan);
    rbuf = calloc(1, maxspan);
    cbuf = calloc(1, maxspan);
    if (!sbuf || !rbuf || !cbuf) die("calloc", 0);
    for (int op = 0; op < O_COUNT; op++)
        for (int l = 0; l < L_COUNT; l++) {
            if (!on_op[op] || !on_l[l] || (op == O_ALLREDUCE && l == L_STRUCT)) continue;
            if (op == O_MEMCPY && l != L_VEC1) continue; /* one reference per size */
            for (int k = 0; k < nsizes; k++) cell(label, op, l, sizes[k], target_s, nbatch);
        }
    free(sbuf);
    free(rbuf);
    free(cbuf);
    free(offs);
    CHECK(MPI_Op_free(&sum_op));
    MPI_Finalize();
    return 0;
}
