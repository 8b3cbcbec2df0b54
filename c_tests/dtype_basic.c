/* Derived datatypes from C: constructors and their size / bounds queries, Pack /
 * Unpack / Pack_size against a hand-written gather, MPI_Get_address with MPI_BOTTOM,
 * envelope / contents, names, match_size, the f90 types (combiners, arguments, handles,
 * use), Get_elements_x, error classes, and MPI_Reduce_local on derived types (MPI_SUM
 * on a vector of doubles, a user op on a struct type) against a sequential oracle.
 * Local but for one MPI_Allreduce on an f90 type: every rank runs it. */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, failures;

#define CHECK(cond, ...)                                                            \
    do {                                                                            \
        if (!(cond)) {                                                              \
            if (failures++ < 20) {                                                  \
                fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                                       \
                fprintf(stderr, "\n");                                              \
            }                                                                       \
        }                                                                           \
    } while (0)

#define OK(call) CHECK((call) == MPI_SUCCESS, "%s failed", #call)

static void expect(MPI_Datatype t, const char *what, int size, MPI_Aint lb, MPI_Aint ext,
                   MPI_Aint tlb, MPI_Aint text) {
    int s;
    MPI_Aint l, e, tl, te;
    MPI_Count sx, lx, ex;
    OK(MPI_Type_size(t, &s));
    OK(MPI_Type_get_extent(t, &l, &e));
    OK(MPI_Type_get_true_extent(t, &tl, &te));
    OK(MPI_Type_size_x(t, &sx));
    OK(MPI_Type_get_extent_x(t, &lx, &ex));
    CHECK(s == size && sx == size, "%s: size %d (x %ld), want %d", what, s, (long)sx, size);
    CHECK(l == lb && e == ext && lx == lb && ex == ext, "%s: lb/extent %ld/%ld, want %ld/%ld",
          what, (long)l, (long)e, (long)lb, (long)ext);
    CHECK(tl == tlb && te == text, "%s: true lb/extent %ld/%ld, want %ld/%ld", what, (long)tl,
          (long)te, (long)tlb, (long)text);
}

static void constructors(void) {
    MPI_Datatype t, u;
    OK(MPI_Type_contiguous(5, MPI_INT, &t));
    expect(t, "contiguous(5,int)", 20, 0, 20, 0, 20);
    MPI_Type_free(&t);
    CHECK(t == MPI_DATATYPE_NULL, "Type_free did not reset the handle");

    OK(MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &t));
    expect(t, "vector(3,2,4,double)", 48, 0, 80, 0, 80);
    MPI_Type_free(&t);

    OK(MPI_Type_vector(3, 1, -2, MPI_INT, &t));
    expect(t, "vector(3,1,-2,int)", 12, -16, 20, -16, 20);
    MPI_Type_free(&t);

    OK(MPI_Type_create_hvector(2, 3, 100, MPI_SHORT, &t));
    expect(t, "hvector(2,3,100,short)", 12, 0, 106, 0, 106);
    MPI_Type_free(&t);

    int bl[3] = {2, 0, 1}, di[3] = {5, 1, -1};
    OK(MPI_Type_indexed(3, bl, di, MPI_INT, &t));
    expect(t, "indexed", 12, -4, 32, -4, 32);
    MPI_Type_free(&t);

    int hbl[2] = {1, 2};
    MPI_Aint hd[2] = {-3, 10};
    OK(MPI_Type_create_hindexed(2, hbl, hd, MPI_CHAR, &t));
    expect(t, "hindexed", 3, -3, 15, -3, 15);
    MPI_Type_free(&t);

    int ibd[2] = {3, 0};
    OK(MPI_Type_create_indexed_block(2, 2, ibd, MPI_FLOAT, &t));
    expect(t, "indexed_block", 16, 0, 20, 0, 20);
    MPI_Type_free(&t);

    MPI_Aint hbd[2] = {8, 0};
    OK(MPI_Type_create_hindexed_block(2, 1, hbd, MPI_DOUBLE, &t));
    expect(t, "hindexed_block", 16, 0, 16, 0, 16);
    MPI_Type_free(&t);

    /* struct { char c; double d; int i; } with C's own layout */
    struct s1 { char c; double d; int i; };
    int sbl[3] = {1, 1, 1};
    MPI_Aint sd[3] = {offsetof(struct s1, c), offsetof(struct s1, d), offsetof(struct s1, i)};
    MPI_Datatype st[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
    OK(MPI_Type_create_struct(3, sbl, sd, st, &t));
    expect(t, "struct{char,double,int}", 13, 0, (MPI_Aint)sizeof(struct s1), 0, 20);
    MPI_Type_free(&t);

    /* MPI-1 struct with MPI_LB / MPI_UB markers */
    int mbl[4] = {1, 1, 1, 1};
    MPI_Aint md[4] = {-8, 0, 4, 40};
    MPI_Datatype mt[4] = {MPI_LB, MPI_INT, MPI_INT, MPI_UB};
    OK(MPI_Type_struct(4, mbl, md, mt, &t));
    expect(t, "struct with LB/UB", 8, -8, 48, 0, 8);
    MPI_Aint x;
    OK(MPI_Type_lb(t, &x));
    CHECK(x == -8, "Type_lb %ld", (long)x);
    OK(MPI_Type_ub(t, &x));
    CHECK(x == 40, "Type_ub %ld", (long)x);
    OK(MPI_Type_extent(t, &x));
    CHECK(x == 48, "Type_extent %ld", (long)x);
    MPI_Type_free(&t);

    OK(MPI_Type_create_resized(MPI_INT, -4, 12, &u));
    expect(u, "resized(int,-4,12)", 4, -4, 12, 0, 4);
    OK(MPI_Type_contiguous(3, u, &t));
    expect(t, "contiguous(3,resized)", 12, -4, 36, 0, 28);
    MPI_Type_free(&t);
    MPI_Type_free(&u);

    int sizes[2] = {4, 5}, subs[2] = {2, 3}, starts[2] = {1, 2};
    OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t));
    expect(t, "subarray C", 24, 0, 80, 28, 32);
    MPI_Type_free(&t);
    OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INT, &t));
    expect(t, "subarray Fortran", 24, 0, 80, 36, 40);
    MPI_Type_free(&t);

    /* 6x4 ints, rows block-distributed over 2, columns cyclic over 2: process 3 = (1,1)
       owns rows 3..5, columns 1 and 3 */
    int gs[2] = {6, 4}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
    int dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG}, ps[2] = {2, 2};
    OK(MPI_Type_create_darray(4, 3, 2, gs, dist, dargs, ps, MPI_ORDER_C, MPI_INT, &t));
    expect(t, "darray", 24, 0, 96, 52, 44);
    MPI_Type_commit(&t);
    int garr[24], got[6], pos = 0;
    for (int i = 0; i < 24; i++) garr[i] = i;
    OK(MPI_Pack(garr, 1, t, got, sizeof got, &pos, MPI_COMM_WORLD));
    int dwant[6] = {13, 15, 17, 19, 21, 23};
    CHECK(memcmp(got, dwant, sizeof dwant) == 0, "darray pack");
    MPI_Type_free(&t);

    OK(MPI_Type_vector(2, 1, 3, MPI_INT, &u));
    OK(MPI_Type_dup(u, &t));
    expect(t, "dup", 8, 0, 16, 0, 16);
    MPI_Type_free(&t);
    MPI_Type_free(&u);
}

static void pack_unpack(void) {
    /* a 6x6 matrix of doubles: pack column 2 and the 3x3 sub-block at (1,1) */
    double m[36], back[36];
    for (int i = 0; i < 36; i++) m[i] = i * 1.5;
    MPI_Datatype col, blk;
    OK(MPI_Type_vector(6, 1, 6, MPI_DOUBLE, &col));
    OK(MPI_Type_commit(&col));
    int sizes[2] = {6, 6}, subs[2] = {3, 3}, starts[2] = {1, 1};
    OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_DOUBLE, &blk));
    OK(MPI_Type_commit(&blk));

    int psize, a, b;
    OK(MPI_Pack_size(1, col, MPI_COMM_WORLD, &a));
    OK(MPI_Pack_size(1, blk, MPI_COMM_WORLD, &b));
    CHECK(a == 48 && b == 72, "Pack_size %d %d", a, b);
    psize = a + b;
    char *buf = malloc(psize);
    int pos = 0;
    OK(MPI_Pack(m + 2, 1, col, buf, psize, &pos, MPI_COMM_WORLD));
    CHECK(pos == 48, "position after first pack %d", pos);
    OK(MPI_Pack(m, 1, blk, buf, psize, &pos, MPI_COMM_WORLD));
    CHECK(pos == psize, "position after second pack %d", pos);
    double want[15];
    for (int r = 0; r < 6; r++) want[r] = m[r * 6 + 2];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) want[6 + r * 3 + c] = m[(1 + r) * 6 + 1 + c];
    CHECK(memcmp(buf, want, sizeof want) == 0, "packed bytes differ from the gather");

    memset(back, 0, sizeof back);
    pos = 0;
    OK(MPI_Unpack(buf, psize, &pos, back + 2, 1, col, MPI_COMM_WORLD));
    OK(MPI_Unpack(buf, psize, &pos, back, 1, blk, MPI_COMM_WORLD));
    CHECK(pos == psize, "position after unpack %d", pos);
    for (int i = 0; i < 36; i++) {
        int r = i / 6, c = i % 6;
        int in = c == 2 || (r >= 1 && r <= 3 && c >= 1 && c <= 3);
        CHECK(back[i] == (in ? m[i] : 0.0), "unpacked element %d: %g", i, back[i]);
    }

    /* packing past outsize fails with MPI_ERR_TRUNCATE */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    pos = 8;
    int rc = MPI_Pack(m, 1, blk, buf, 64, &pos, MPI_COMM_WORLD), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "pack overflow: class %d", cls);

    /* absolute addresses with MPI_BOTTOM */
    struct { int i; double d; } rec = {7, 2.5};
    MPI_Aint ai, ad;
    OK(MPI_Get_address(&rec.i, &ai));
    OK(MPI_Get_address(&rec.d, &ad));
    CHECK(MPI_Aint_diff(ad, ai) == (MPI_Aint)offsetof(__typeof__(rec), d), "Aint_diff");
    CHECK(MPI_Aint_add(ai, 8) == ai + 8, "Aint_add");
    MPI_Aint a1;
    OK(MPI_Address(&rec.i, &a1));
    CHECK(a1 == ai, "MPI_Address");
    int bl2[2] = {1, 1};
    MPI_Aint ds2[2] = {ai, ad};
    MPI_Datatype ts2[2] = {MPI_INT, MPI_DOUBLE}, abs_t;
    OK(MPI_Type_create_struct(2, bl2, ds2, ts2, &abs_t));
    OK(MPI_Type_commit(&abs_t));
    char pb[12];
    pos = 0;
    OK(MPI_Pack(MPI_BOTTOM, 1, abs_t, pb, 12, &pos, MPI_COMM_WORLD));
    int pi;
    double pd;
    memcpy(&pi, pb, 4);
    memcpy(&pd, pb + 4, 8);
    CHECK(pos == 12 && pi == 7 && pd == 2.5, "MPI_BOTTOM pack: %d %d %g", pos, pi, pd);
    rec.i = 0;
    rec.d = 0;
    pos = 0;
    OK(MPI_Unpack(pb, 12, &pos, MPI_BOTTOM, 1, abs_t, MPI_COMM_WORLD));
    CHECK(rec.i == 7 && rec.d == 2.5, "MPI_BOTTOM unpack");
    MPI_Type_free(&abs_t);

    /* Get_elements_x from a status holding a byte count: 1.5 columns of doubles
       are 9 basic elements of a vector(6,...) plus... 72 bytes = 9 doubles */
    MPI_Status st;
    memset(&st, 0, sizeof st);
    st.count_lo = 72;
    MPI_Count ne;
    OK(MPI_Get_elements_x(&st, col, &ne));
    CHECK(ne == 9, "Get_elements_x(72 bytes of column) = %ld", (long)ne);
    st.count_lo = 70;
    OK(MPI_Get_elements_x(&st, col, &ne));
    CHECK(ne == MPI_UNDEFINED, "Get_elements_x(70 bytes) = %ld", (long)ne);
    int cnt;
    st.count_lo = 96;
    OK(MPI_Get_count(&st, col, &cnt));
    CHECK(cnt == 2, "Get_count(96 bytes of column) = %d", cnt);

    free(buf);
    MPI_Type_free(&col);
    MPI_Type_free(&blk);
}

static void envelope_names(void) {
    MPI_Datatype v, s;
    OK(MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &v));
    int ni, na, nd, comb;
    OK(MPI_Type_get_envelope(v, &ni, &na, &nd, &comb));
    CHECK(ni == 3 && na == 0 && nd == 1 && comb == MPI_COMBINER_VECTOR, "vector envelope");
    int ints[8];
    MPI_Aint addrs[8];
    MPI_Datatype types[8];
    OK(MPI_Type_get_contents(v, 8, 8, 8, ints, addrs, types));
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 4 && types[0] == MPI_DOUBLE,
          "vector contents");

    int bl[2] = {1, 2};
    MPI_Aint ds[2] = {0, 64};
    MPI_Datatype ts[2] = {v, MPI_INT};
    OK(MPI_Type_create_struct(2, bl, ds, ts, &s));
    OK(MPI_Type_get_envelope(s, &ni, &na, &nd, &comb));
    CHECK(ni == 3 && na == 2 && nd == 2 && comb == MPI_COMBINER_STRUCT, "struct envelope");
    OK(MPI_Type_get_contents(s, ni, na, nd, ints, addrs, types));
    CHECK(ints[0] == 2 && ints[1] == 1 && ints[2] == 2 && addrs[0] == 0 && addrs[1] == 64 &&
              types[1] == MPI_INT,
          "struct contents");
    OK(MPI_Type_get_envelope(types[0], &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_VECTOR, "returned inner type is the vector");
    MPI_Type_free(&types[0]);

    OK(MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0, "named envelope");

    char name[MPI_MAX_OBJECT_NAME];
    int len;
    OK(MPI_Type_get_name(MPI_DOUBLE, name, &len));
    CHECK(strcmp(name, "MPI_DOUBLE") == 0 && len == 10, "name of MPI_DOUBLE: %s", name);
    OK(MPI_Type_get_name(MPI_2INT, name, &len));
    CHECK(strcmp(name, "MPI_2INT") == 0, "name of MPI_2INT: %s", name);
    /* one handle, two standard names: MPICH's choice */
    OK(MPI_Type_get_name(MPI_LONG_LONG, name, &len));
    CHECK(strcmp(name, "MPI_LONG_LONG_INT") == 0, "name of MPI_LONG_LONG: %s", name);
    OK(MPI_Type_get_name(MPI_C_FLOAT_COMPLEX, name, &len));
    CHECK(strcmp(name, "MPI_C_COMPLEX") == 0, "name of MPI_C_FLOAT_COMPLEX: %s", name);
    OK(MPI_Type_get_name(v, name, &len));
    CHECK(len == 0 && name[0] == 0, "unnamed derived type: '%s'", name);
    OK(MPI_Type_set_name(v, "column"));
    OK(MPI_Type_get_name(v, name, &len));
    CHECK(strcmp(name, "column") == 0 && len == 6, "set name: %s", name);

    MPI_Datatype m;
    OK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &m));
    CHECK(m == MPI_REAL8, "match_size real 8");
    OK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &m));
    CHECK(m == MPI_INTEGER4, "match_size integer 4");
    OK(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 8, &m));
    CHECK(m == MPI_COMPLEX8, "match_size complex 8");
    /* MPI_Type_create_f90_*: the kind SELECTED_*_KIND picks, reporting the F90
     * combiner and the arguments as given (MPI-3.1 4.1.13); the same handle for the
     * same arguments, another for others. */
    struct {
        int which, p, r, size, combiner;
    } f90[] = {
        {0, 6, MPI_UNDEFINED, 4, MPI_COMBINER_F90_REAL},
        {0, 15, MPI_UNDEFINED, 8, MPI_COMBINER_F90_REAL},
        {0, MPI_UNDEFINED, 300, 8, MPI_COMBINER_F90_REAL},
        {1, 3, 10, 8, MPI_COMBINER_F90_COMPLEX},
        {1, 15, MPI_UNDEFINED, 16, MPI_COMBINER_F90_COMPLEX},
        {2, 0, 9, 4, MPI_COMBINER_F90_INTEGER},
        {2, 0, 8, 4, MPI_COMBINER_F90_INTEGER},
        {2, 0, 18, 8, MPI_COMBINER_F90_INTEGER},
    };
    MPI_Datatype f90t[8];
    for (int k = 0; k < 8; k++) {
        for (int again = 0; again < 2; again++) {
            MPI_Datatype x;
            if (f90[k].which == 0) OK(MPI_Type_create_f90_real(f90[k].p, f90[k].r, &x));
            else if (f90[k].which == 1) OK(MPI_Type_create_f90_complex(f90[k].p, f90[k].r, &x));
            else OK(MPI_Type_create_f90_integer(f90[k].r, &x));
            if (again) CHECK(x == f90t[k], "f90 case %d: a second call gave another handle", k);
            f90t[k] = x;
        }
        for (int j = 0; j < k; j++) CHECK(f90t[j] != f90t[k], "f90 cases %d and %d: one handle", j, k);
        int ni, na, nd, comb, ints[2] = {-7, -7}, sz;
        OK(MPI_Type_get_envelope(f90t[k], &ni, &na, &nd, &comb));
        int want_ni = f90[k].which == 2 ? 1 : 2;
        CHECK(comb == f90[k].combiner && ni == want_ni && na == 0 && nd == 0,
              "f90 case %d: envelope %d %d %d combiner %d", k, ni, na, nd, comb);
        OK(MPI_Type_get_contents(f90t[k], 2, 0, 0, ints, NULL, NULL));
        if (f90[k].which == 2)
            CHECK(ints[0] == f90[k].r, "f90 case %d: contents %d", k, ints[0]);
        else
            CHECK(ints[0] == f90[k].p && ints[1] == f90[k].r, "f90 case %d: contents %d %d", k, ints[0], ints[1]);
        OK(MPI_Type_size(f90t[k], &sz));
        CHECK(sz == f90[k].size, "f90 case %d: size %d", k, sz);
    }
    /* Usable at once (predefined: committed) in communication and reductions. */
    {
        double x[5], y[5];
        for (int i = 0; i < 5; i++) x[i] = 0.25 * i + rank;
        OK(MPI_Allreduce(x, y, 5, f90t[1], MPI_SUM, MPI_COMM_WORLD));
        int np;
        MPI_Comm_size(MPI_COMM_WORLD, &np);
        for (int i = 0; i < 5; i++) {
            double want = 0;
            for (int r = 0; r < np; r++) want += 0.25 * i + r;
            CHECK(y[i] == want, "Allreduce on f90_real(15) [%d]: %g, want %g", i, y[i], want);
        }
        int u[3] = {5, -6, 7}, v[3] = {0, 0, 0};
        OK(MPI_Sendrecv(u, 3, f90t[5], 0, 9, v, 3, f90t[5], 0, 9, MPI_COMM_SELF, MPI_STATUS_IGNORE));
        CHECK(v[0] == 5 && v[1] == -6 && v[2] == 7, "Sendrecv on f90_integer(9): %d %d %d", v[0], v[1], v[2]);
    }

    MPI_Type_free(&s);
    MPI_Type_free(&v);
}

static void errors(void) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc, cls;
    /* A type of MPI_Type_create_f90_* is predefined: freeing it is an error. */
    MPI_Datatype f90r, keep;
    MPI_Type_create_f90_real(15, 300, &f90r);
    keep = f90r;
    rc = MPI_Type_free(&f90r);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE && f90r == keep, "MPI_Type_free of an f90 type: class %d", cls);
    MPI_Datatype v, d = MPI_DOUBLE;
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &v));
    int pos = 0;
    char buf[64];
    int data[4] = {0};
    rc = MPI_Pack(data, 1, v, buf, 64, &pos, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    CHECK(cls == MPI_ERR_TYPE && strstr(msg, "not committed"), "uncommitted: %d %s", cls, msg);
    rc = MPI_Type_free(&d);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "freeing MPI_DOUBLE: class %d", cls);
    MPI_Datatype t;
    rc = MPI_Type_contiguous(-1, MPI_INT, &t);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "negative count: class %d", cls);
    MPI_Datatype dead = v;
    MPI_Type_free(&v);
    rc = MPI_Type_commit(&dead);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "commit of a freed type: class %d", cls);
}

/* user op on struct { double v; int n; } (padded to 16): v adds, n takes the max */
typedef struct { double v; int n; } rec;
static MPI_Datatype rec_type;
static int user_saw_type;
static void rec_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
    if (*dt == rec_type) user_saw_type++;
    rec *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        b[i].v += a[i].v;
        if (a[i].n > b[i].n) b[i].n = a[i].n;
    }
}

static void reduce_local(void) {
    /* MPI_SUM on every other double of a 2*N array */
    enum { N = 1000 };
    double *in = malloc(2 * N * sizeof(double)), *io = malloc(2 * N * sizeof(double));
    for (int i = 0; i < 2 * N; i++) {
        in[i] = i * 0.25;
        io[i] = 1000.0 - i;
    }
    MPI_Datatype ev;
    OK(MPI_Type_vector(N / 4, 1, 2, MPI_DOUBLE, &ev)); /* N/4 doubles, stride 2 */
    OK(MPI_Type_commit(&ev));
    /* 4 instances of ev (extent (N/4-1)*16+8) cover ... stride by the extent */
    MPI_Aint lb, ext;
    MPI_Type_get_extent(ev, &lb, &ext);
    double *oracle = malloc(2 * N * sizeof(double));
    memcpy(oracle, io, 2 * N * sizeof(double));
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < N / 4; j++) {
            size_t at = k * (ext / sizeof(double)) + 2 * j;
            oracle[at] = in[at] + oracle[at];
        }
    OK(MPI_Reduce_local(in, io, 2, ev, MPI_SUM));
    CHECK(memcmp(io, oracle, 2 * N * sizeof(double)) == 0, "Reduce_local SUM on a vector");

    /* MPI_MAX on a mixed struct is an MPI_ERR_OP */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int bl[2] = {1, 1};
    MPI_Aint ds[2] = {offsetof(rec, v), offsetof(rec, n)};
    MPI_Datatype ts[2] = {MPI_DOUBLE, MPI_INT};
    OK(MPI_Type_create_struct(2, bl, ds, ts, &rec_type));
    OK(MPI_Type_commit(&rec_type));
    rec ra[5], rb[5], rw[5];
    for (int i = 0; i < 5; i++) {
        ra[i] = (rec){i + 0.5, 10 - i};
        rb[i] = (rec){i * 3.0, i + 4};
        rw[i] = (rec){ra[i].v + rb[i].v, ra[i].n > rb[i].n ? ra[i].n : rb[i].n};
    }
    int rc = MPI_Reduce_local(ra, rb, 5, rec_type, MPI_MAX), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "MPI_MAX on a mixed struct: class %d", cls);

    MPI_Op op;
    OK(MPI_Op_create(rec_op, 1, &op));
    OK(MPI_Reduce_local(ra, rb, 5, rec_type, op));
    for (int i = 0; i < 5; i++)
        CHECK(rb[i].v == rw[i].v && rb[i].n == rw[i].n, "user op on struct, element %d", i);
    CHECK(user_saw_type == 1, "user op called %d times with the struct type", user_saw_type);
    MPI_Op_free(&op);

    /* A negative extent: built, queried and used in status queries; communicating,
     * packing or reducing with it is an MPI_ERR_TYPE, not wrong data. */
    MPI_Datatype neg;
    MPI_Aint nlb, next;
    OK(MPI_Type_create_resized(MPI_INT, 8, -8, &neg));
    OK(MPI_Type_commit(&neg));
    OK(MPI_Type_get_extent(neg, &nlb, &next));
    CHECK(nlb == 8 && next == -8, "negative extent: lb %ld extent %ld", (long)nlb, (long)next);
    MPI_Status nst;
    int ncount = -1;
    OK(MPI_Status_set_elements(&nst, neg, 3));
    OK(MPI_Get_count(&nst, neg, &ncount));
    CHECK(ncount == 3, "Get_count with a negative-extent type: %d", ncount);
    int two[2] = {1, 2}, got[2];
    rc = MPI_Sendrecv(two, 2, neg, MPI_PROC_NULL, 0, got, 2, neg, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &nst);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "Sendrecv with a negative extent: class %d", cls);
    rc = MPI_Reduce_local(two, got, 2, neg, MPI_SUM);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "Reduce_local with a negative extent: class %d", cls);
    MPI_Type_free(&neg);

    MPI_Type_free(&rec_type);
    MPI_Type_free(&ev);
    free(in);
    free(io);
    free(oracle);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    constructors();
    pack_unpack();
    envelope_names();
    errors();
    reduce_local();
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("dtype_basic: %s (%d failures)\n", total ? "FAIL" : "OK", total);
    MPI_Finalize();
    return total != 0;
}
