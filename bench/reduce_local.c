/*
 * reduce_local: MPI_Reduce_local throughput, with two plain-C references in
 * the same binary (build it at -O3 -march=native):
 *   - "cloop": a[i] += b[i] per type (the streaming-bandwidth reference for SUM),
 *   - "memcpy": memcpy(dst, src, B) (the memory-traffic bound: 2B bytes moved).
 *
 * GB/s is buffer bytes processed per second: B / time, where B is the size of
 * the inout buffer (count * extent).  A Reduce_local call moves 3B bytes of
 * memory traffic (read in, read inout, write inout); memcpy moves 2B.
 *
 * Each (type, op) is checked once against a C computation before timing.
 *
 * Output, one line per cell:
 *   RLOCAL <impl> <type> <op> <bytes> <GB/s> <ns_per_call> <iters> <best_ns_per_call>
 * (GB/s and ns_per_call from the median batch, best_ns_per_call from the fastest)
 * Options: -l LABEL, -m MAXBYTES, -t SECONDS per cell (default 0.05),
 *          -b BATCHES (default 5), -s comma-separated sizes,
 *          -o OFFSET: both buffers start OFFSET bytes (0-63) past a 64-byte line
 *          (default 0; malloc's large blocks start 16 bytes past one).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 32
#define MAX_BATCHES 31

typedef struct {
    double v;
    int i;
} dint;
typedef struct {
    int v, i;
} iint;
typedef struct {
    float v;
    int i;
} fint;
typedef struct {
    long v;
    int i;
} lint;
typedef struct {
    float v, i;
} ffpair; /* MPI_2REAL */
typedef struct {
    double v, i;
} ddpair; /* MPI_2DOUBLE_PRECISION */

enum kind {
    K_DOUBLE,
    K_FLOAT,
    K_INT,
    K_LONG,
    K_INT8,
    K_DOUBLE_INT,
    K_2INT,
    K_FLOAT_INT,
    K_LONG_INT,
    K_2REAL,
    K_2DOUBLE,
    K_COUNT
};
static const char *kind_names[K_COUNT] = {"double",   "float",     "int",      "long",
                                          "int8",     "double_int", "2int",    "float_int",
                                          "long_int", "2real",      "2double_precision"};
/* The pair types (MAXLOC only). */
static int is_pair(int k) { return k >= K_DOUBLE_INT; }
static const size_t kind_size[K_COUNT] = {sizeof(double), sizeof(float), sizeof(int),
                                          sizeof(long),   sizeof(int8_t), sizeof(dint),
                                          sizeof(iint),   sizeof(fint),   sizeof(lint),
                                          sizeof(ffpair), sizeof(ddpair)};

enum opk { O_SUM, O_PROD, O_MAX, O_MIN, O_BAND, O_MAXLOC, O_COUNT };
static const char *op_names[O_COUNT] = {"sum", "prod", "max", "min", "band", "maxloc"};

static MPI_Datatype kind_type(enum kind k)
{
    switch (k) {
    case K_DOUBLE: return MPI_DOUBLE;
    case K_FLOAT: return MPI_FLOAT;
    case K_INT: return MPI_INT;
    case K_LONG: return MPI_LONG;
    case K_INT8: return MPI_INT8_T;
    case K_2INT: return MPI_2INT;
    case K_FLOAT_INT: return MPI_FLOAT_INT;
    case K_LONG_INT: return MPI_LONG_INT;
    case K_2REAL: return MPI_2REAL;
    case K_2DOUBLE: return MPI_2DOUBLE_PRECISION;
    default: return MPI_DOUBLE_INT;
    }
}

static MPI_Op op_handle(enum opk o)
{
    switch (o) {
    case O_SUM: return MPI_SUM;
    case O_PROD: return MPI_PROD;
    case O_MAX: return MPI_MAX;
    case O_MIN: return MPI_MIN;
    case O_BAND: return MPI_BAND;
    default: return MPI_MAXLOC;
    }
}

static int valid(enum kind k, enum opk o)
{
    if (is_pair(k))
        return o == O_MAXLOC;
    if (o == O_MAXLOC)
        return 0;
    if (o == O_BAND)
        return k == K_INT || k == K_LONG || k == K_INT8;
    return 1;
}

static void die(const char *msg)
{
    fprintf(stderr, "reduce_local: %s\n", msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* Small integer test values, exact in every type. */
static int val_a(long i) { return (int)(i % 5) + 1; }
static int val_b(long i) { return (int)((i * 7) % 4) + 1; }

static void set_elem(enum kind k, void *buf, long i, int v, int idx)
{
    switch (k) {
    case K_DOUBLE: ((double *)buf)[i] = v; break;
    case K_FLOAT: ((float *)buf)[i] = (float)v; break;
    case K_INT: ((int *)buf)[i] = v; break;
    case K_LONG: ((long *)buf)[i] = v; break;
    case K_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case K_2INT: ((iint *)buf)[i].v = v; ((iint *)buf)[i].i = idx; break;
    case K_FLOAT_INT: ((fint *)buf)[i].v = (float)v; ((fint *)buf)[i].i = idx; break;
    case K_LONG_INT: ((lint *)buf)[i].v = v; ((lint *)buf)[i].i = idx; break;
    case K_2REAL: ((ffpair *)buf)[i].v = (float)v; ((ffpair *)buf)[i].i = (float)idx; break;
    case K_2DOUBLE: ((ddpair *)buf)[i].v = v; ((ddpair *)buf)[i].i = idx; break;
    default: ((dint *)buf)[i].v = v; ((dint *)buf)[i].i = idx; break;
    }
}

static double get_elem(enum kind k, const void *buf, long i, int *idx)
{
    switch (k) {
    case K_DOUBLE: return ((const double *)buf)[i];
    case K_FLOAT: return ((const float *)buf)[i];
    case K_INT: return ((const int *)buf)[i];
    case K_LONG: return (double)((const long *)buf)[i];
    case K_INT8: return ((const int8_t *)buf)[i];
    case K_2INT: *idx = ((const iint *)buf)[i].i; return ((const iint *)buf)[i].v;
    case K_FLOAT_INT: *idx = ((const fint *)buf)[i].i; return ((const fint *)buf)[i].v;
    case K_LONG_INT: *idx = ((const lint *)buf)[i].i; return (double)((const lint *)buf)[i].v;
    case K_2REAL: *idx = (int)((const ffpair *)buf)[i].i; return ((const ffpair *)buf)[i].v;
    case K_2DOUBLE: *idx = (int)((const ddpair *)buf)[i].i; return ((const ddpair *)buf)[i].v;
    default: *idx = ((const dint *)buf)[i].i; return ((const dint *)buf)[i].v;
    }
}

static void check(enum kind k, enum opk o, void *in, void *io)
{
    const long n = 1000;
    char msg[160];
    for (long i = 0; i < n; i++) {
        set_elem(k, in, i, val_a(i), 1);
        set_elem(k, io, i, val_b(i), 2);
    }
    MPI_Reduce_local(in, io, (int)n, kind_type(k), op_handle(o));
    for (long i = 0; i < n; i++) {
        int a = val_a(i), b = val_b(i), idx = -1, want_idx = -1;
        double want;
        switch (o) {
        case O_SUM: want = a + b; break;
        case O_PROD: want = a * b; break;
        case O_MAX: want = a > b ? a : b; break;
        case O_MIN: want = a < b ? a : b; break;
        case O_BAND: want = a & b; break;
        default:
            want = a > b ? a : b;
            want_idx = a > b ? 1 : (a < b ? 2 : 1);
            break;
        }
        double got = get_elem(k, io, i, &idx);
        if (got != want || (o == O_MAXLOC && idx != want_idx)) {
            snprintf(msg, sizeof msg, "%s %s wrong at %ld: got %g (loc %d), expected %g (loc %d)",
                     kind_names[k], op_names[o], i, got, idx, want, want_idx);
            die(msg);
        }
    }
}

/* Benign values for repeated application: ones (PROD stays 1, SUM grows
 * slowly, no denormals or overflow traps). */
static void fill_ones(enum kind k, void *buf, long n)
{
    for (long i = 0; i < n; i++)
        set_elem(k, buf, i, 1, (int)(i & 0xffff));
}

#define CLOOP(T)                                                                \
    static __attribute__((noinline)) void cloop_##T(T *restrict a, const T *restrict b, long n) \
    {                                                                           \
        for (long i = 0; i < n; i++)                                            \
            a[i] += b[i];                                                       \
    }
CLOOP(double)
CLOOP(float)
CLOOP(int)
CLOOP(long)
CLOOP(int8_t)

enum what { W_MPI, W_CLOOP, W_MEMCPY };

static void call(enum what w, enum kind k, enum opk o, void *in, void *io, long n, size_t bytes)
{
    switch (w) {
    case W_MPI:
        MPI_Reduce_local(in, io, (int)n, kind_type(k), op_handle(o));
        break;
    case W_CLOOP:
        switch (k) {
        case K_DOUBLE: cloop_double(io, in, n); break;
        case K_FLOAT: cloop_float(io, in, n); break;
        case K_INT: cloop_int(io, in, n); break;
        case K_LONG: cloop_long(io, in, n); break;
        default: cloop_int8_t(io, in, n); break;
        }
        break;
    default:
        memcpy(io, in, bytes);
        break;
    }
    __asm__ __volatile__("" ::: "memory");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void cell(const char *label, enum what w, enum kind k, enum opk o, void *in, void *io,
                 long bytes, double target, int nbatch)
{
    long n = bytes / (long)kind_size[k];
    if (n < 1)
        n = 1;
    size_t b = (size_t)n * kind_size[k];
    fill_ones(k, in, n);
    fill_ones(k, io, n);
    double per_batch = target / nbatch;
    long iters = 1;
    double t;
    for (;;) {
        double t0 = MPI_Wtime();
        for (long r = 0; r < iters; r++)
            call(w, k, o, in, io, n, b);
        t = MPI_Wtime() - t0;
        if (t >= per_batch / 4 || iters >= (1L << 30))
            break;
        iters *= (t < per_batch / 64) ? 8 : 2;
    }
    iters = (long)(per_batch / (t / (double)iters));
    if (iters < 1)
        iters = 1;
    double ts[MAX_BATCHES];
    for (int bt = 0; bt < nbatch; bt++) {
        double t0 = MPI_Wtime();
        for (long r = 0; r < iters; r++)
            call(w, k, o, in, io, n, b);
        ts[bt] = (MPI_Wtime() - t0) / (double)iters;
    }
    qsort(ts, (size_t)nbatch, sizeof(double), cmp_double);
    double med = ts[nbatch / 2];
    printf("RLOCAL %s %s %s %ld %.3f %.1f %ld %.1f\n", w == W_MPI ? label : (w == W_CLOOP ? "cloop" : "memcpy"),
           w == W_MEMCPY ? "byte" : kind_names[k], w == W_MEMCPY ? "copy" : op_names[o], bytes,
           (double)b / med / 1e9, med * 1e9, iters, ts[0] * 1e9);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *label = "mpi";
    long maxbytes = 64L * 1024 * 1024;
    long sizes[MAX_SIZES];
    int nsizes = 0;
    double target = 0.05;
    int nbatch = 5;
    int offset = 0;

    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (strcmp(a, "-l") == 0)
            label = v;
        else if (strcmp(a, "-m") == 0)
            maxbytes = atol(v);
        else if (strcmp(a, "-t") == 0)
            target = atof(v);
        else if (strcmp(a, "-b") == 0)
            nbatch = atoi(v);
        else if (strcmp(a, "-o") == 0)
            offset = atoi(v) & 63;
        else if (strcmp(a, "-s") == 0) {
            char *copy = strdup(v), *save = NULL;
            for (char *tok = strtok_r(copy, ",", &save); tok && nsizes < MAX_SIZES;
                 tok = strtok_r(NULL, ",", &save))
                sizes[nsizes++] = atol(tok);
            free(copy);
        } else
            die("usage: reduce_local [-l label] [-m maxbytes] [-t seconds] [-b batches] "
                "[-s sizes] [-o offset]");
    }
    if (nbatch < 3)
        nbatch = 3;
    if (nbatch > MAX_BATCHES)
        nbatch = MAX_BATCHES;
    if (nsizes == 0)
        for (long s = 8; s <= maxbytes && nsizes < MAX_SIZES; s *= 8)
            sizes[nsizes++] = s;
    /* check() writes 1000 elements of the widest type. */
    long big = 1000 * (long)sizeof(dint);
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > big)
            big = sizes[i];
    size_t alloc = (size_t)big + 64;
    void *in = NULL, *io = NULL;
    if (posix_memalign(&in, 64, alloc) || posix_memalign(&io, 64, alloc))
        die("out of memory");
    memset(in, 0, alloc);
    memset(io, 0, alloc);
    in = (char *)in + offset;
    io = (char *)io + offset;

    for (int k = 0; k < K_COUNT; k++)
        for (int o = 0; o < O_COUNT; o++) {
            if (!valid((enum kind)k, (enum opk)o))
                continue;
            check((enum kind)k, (enum opk)o, in, io);
            for (int s = 0; s < nsizes; s++)
                cell(label, W_MPI, (enum kind)k, (enum opk)o, in, io, sizes[s], target, nbatch);
            if (o == O_SUM && !is_pair(k))
                for (int s = 0; s < nsizes; s++)
                    cell(label, W_CLOOP, (enum kind)k, O_SUM, in, io, sizes[s], target, nbatch);
        }
    for (int s = 0; s < nsizes; s++)
        cell(label, W_MEMCPY, K_INT8, O_SUM, in, io, sizes[s], target, nbatch);
    free((char *)in - offset);
    free((char *)io - offset);
    MPI_Finalize();
    return 0;
}
