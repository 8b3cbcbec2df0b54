/* MPI_Pack_external / MPI_Unpack_external / MPI_Pack_external_size in "external32"
 * (MPI-2.2 section 13.5.2): big-endian bytes at the standard's sizes, checked byte by
 * byte against values written out here (MPI_LONG in 4 bytes, long double as IEEE
 * binary128, pair types without padding, MPI_WCHAR in 2 bytes); round trips of a struct
 * and a strided type; errors: a long that does not fit (MPI_ERR_CONVERSION), another
 * datarep (MPI_ERR_ARG), too small an output (MPI_ERR_TRUNCATE). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <wchar.h>

static int rank, failures;

#define CHECK(cond, ...)                                                            \
    do {                                                                            \
        if (!(cond)) {                                                              \
            if (failures++ < 10) {                                                  \
                fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                                       \
                fprintf(stderr, "\n");                                              \
            }                                                                       \
        }                                                                           \
    } while (0)

static char rep[] = "external32";

/* Packs `n` of `t` from `in` and compares with the `want` bytes. */
static void bytes_are(const void *in, int n, MPI_Datatype t, const unsigned char *want, int len, const char *what) {
    unsigned char out[64];
    MPI_Aint pos = 0, size = -1;
    memset(out, 0xee, sizeof out);
    MPI_Pack_external_size(rep, n, t, &size);
    CHECK(size == len, "%s: external size %ld, expected %d", what, (long)size, len);
    MPI_Pack_external(rep, in, n, t, out, sizeof out, &pos);
    CHECK(pos == len, "%s: position %ld, expected %d", what, (long)pos, len);
    int same = memcmp(out, want, len) == 0;
    CHECK(same, "%s: bytes differ (first %02x %02x %02x %02x)", what, out[0], out[1], out[2], out[3]);
    /* and back */
    unsigned char back[64];
    memset(back, 0, sizeof back);
    pos = 0;
    MPI_Unpack_external(rep, out, len, &pos, back, n, t);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t, &lb, &ext);
    int tsize;
    MPI_Type_size(t, &tsize);
    CHECK(pos == len, "%s: unpack position %ld", what, (long)pos);
    /* compare the data bytes (pair types have padding: compare value and index) */
    CHECK(memcmp(back, in, (size_t)tsize * n) == 0 || ext != tsize, "%s: round trip differs", what);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    int i4[2] = {0x01020304, -2};
    const unsigned char wi[] = {1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe};
    bytes_are(i4, 2, MPI_INT, wi, 8, "MPI_INT");

    long l[2] = {-2, 0x7f000001};
    const unsigned char wl[] = {0xff, 0xff, 0xff, 0xfe, 0x7f, 0, 0, 1};
    bytes_are(l, 2, MPI_LONG, wl, 8, "MPI_LONG");

    double d = 1.0;
    const unsigned char wd[] = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0};
    bytes_are(&d, 1, MPI_DOUBLE, wd, 8, "MPI_DOUBLE");

    long double ld[2] = {1.0L, -0.375L};
    unsigned char wld[32] = {0x3f, 0xff};
    wld[16] = 0xbf, wld[17] = 0xfd, wld[18] = 0x80; /* -1.5 x 2^-2 */
    {
        unsigned char out[32];
        MPI_Aint pos = 0;
        MPI_Pack_external(rep, ld, 2, MPI_LONG_DOUBLE, out, 32, &pos);
        CHECK(pos == 32 && memcmp(out, wld, 32) == 0, "MPI_LONG_DOUBLE as binary128: %02x %02x %02x", out[16],
              out[17], out[18]);
        long double back[2] = {0, 0};
        pos = 0;
        MPI_Unpack_external(rep, out, 32, &pos, back, 2, MPI_LONG_DOUBLE);
        CHECK(back[0] == 1.0L && back[1] == -0.375L, "long double round trip: %Lg %Lg", back[0], back[1]);
    }

    struct {
        short v;
        int i;
    } si = {0x0102, 5};
    const unsigned char wsi[] = {1, 2, 0, 0, 0, 5};
    bytes_are(&si, 1, MPI_SHORT_INT, wsi, 6, "MPI_SHORT_INT");

    struct {
        double v;
        int i;
    } di = {-2.0, 7};
    const unsigned char wdi[] = {0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};
    {
        unsigned char out[12];
        MPI_Aint pos = 0, size = 0;
        MPI_Pack_external_size(rep, 1, MPI_DOUBLE_INT, &size);
        MPI_Pack_external(rep, &di, 1, MPI_DOUBLE_INT, out, 12, &pos);
        CHECK(size == 12 && pos == 12 && memcmp(out, wdi, 12) == 0, "MPI_DOUBLE_INT");
    }

    wchar_t wc[2] = {L'A', 0x20ac};
    const unsigned char wwc[] = {0, 0x41, 0x20, 0xac};
    bytes_are(wc, 2, MPI_WCHAR, wwc, 4, "MPI_WCHAR");

    /* A struct {char; long; double} and a strided vector of it, round trip. */
    struct rec {
        char c;
        long l;
        double d;
    } recs[6], back[6];
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {offsetof(struct rec, c), offsetof(struct rec, l), offsetof(struct rec, d)};
    MPI_Datatype types[3] = {MPI_CHAR, MPI_LONG, MPI_DOUBLE}, rt, every2;
    MPI_Type_create_struct(3, bl, disp, types, &rt);
    MPI_Type_commit(&rt);
    MPI_Type_vector(3, 1, 2, rt, &every2);
    MPI_Type_commit(&every2);
    for (int k = 0; k < 6; k++) recs[k].c = (char)('a' + k), recs[k].l = -1000 * k, recs[k].d = k * 0.5;
    MPI_Aint size = 0, pos = 0;
    MPI_Pack_external_size(rep, 2, every2, &size);
    CHECK(size == 2 * 3 * 13, "struct vector: external size %ld, expected %d", (long)size, 2 * 3 * 13);
    unsigned char *ext = malloc(size);
    MPI_Pack_external(rep, recs, 1, every2, ext, size, &pos);
    CHECK(pos == 3 * 13 && ext[0] == 'a' && ext[1] == 0 && ext[13] == 'c', "struct vector bytes: %d %d %d", ext[0],
          ext[1], ext[13]);
    /* the long of record 2 (-2000) at bytes 14..17 */
    CHECK(ext[14] == 0xff && ext[15] == 0xff && ext[16] == 0xf8 && ext[17] == 0x30, "long of record 2");
    memset(back, 0, sizeof back);
    pos = 0;
    MPI_Unpack_external(rep, ext, size, &pos, back, 1, every2);
    for (int k = 0; k < 6; k += 2)
        CHECK(back[k].c == recs[k].c && back[k].l == recs[k].l && back[k].d == recs[k].d, "record %d round trip", k);
    CHECK(back[1].c == 0 && back[1].l == 0, "record 1 written");

    /* Errors. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls = -1, rc;
    long big = 1L << 40;
    unsigned char out[16];
    pos = 0;
    rc = MPI_Pack_external(rep, &big, 1, MPI_LONG, out, 16, &pos);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_CONVERSION && pos == 0, "a long beyond 32 bits: class %d", cls);
    rc = MPI_Pack_external("native", &d, 1, MPI_DOUBLE, out, 16, &pos);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "datarep native: class %d", cls);
    rc = MPI_Pack_external(rep, &d, 1, MPI_DOUBLE, out, 4, &pos);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "outsize too small: class %d", cls);

    free(ext);
    MPI_Type_free(&every2);
    MPI_Type_free(&rt);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "FAILED: %d failures\n" : "No Errors\n", total);
    MPI_Finalize();
    return total != 0;
}
