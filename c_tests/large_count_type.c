/* The MPI-4 large-count datatype constructors (MPI_Type_contiguous_c, vector_c,
 * create_hvector_c, indexed_c, create_hindexed_c, create_indexed_block_c,
 * create_hindexed_block_c, create_struct_c, create_resized_c, create_subarray_c,
 * create_darray_c) and
 * MPI_Type_get_envelope_c / MPI_Type_get_contents_c. Each _c type is checked against the
 * same type built by the int constructor (size, extents, the bytes MPI_Pack and
 * MPI_Pack_external make of the same data, a message sent with one and received with the
 * other); its envelope reports the MPI_Count arguments as large counts, as given, and
 * the int MPI_Type_get_envelope refuses it (MPI_ERR_TYPE); types larger than an int can
 * count (2^32 + 3 bytes, strides past 2^33 bytes) report their size and extent. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad = 0, rank, size;
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "rank %d: ", rank); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); bad++; } } while (0)

enum { N = 64 }; /* ints of test data */
static int data[N * 8];

/* Same size, extents and packed bytes (native and external32) for `count` instances. */
static void same(const char *what, MPI_Datatype a, MPI_Datatype b, int count) {
    MPI_Count sa, sb, la, ea, lb, eb, tla, tea, tlb, teb;
    MPI_Type_size_c(a, &sa);
    MPI_Type_size_c(b, &sb);
    MPI_Type_get_extent_c(a, &la, &ea);
    MPI_Type_get_extent_c(b, &lb, &eb);
    MPI_Type_get_true_extent_c(a, &tla, &tea);
    MPI_Type_get_true_extent_c(b, &tlb, &teb);
    CHECK(sa == sb && la == lb && ea == eb && tla == tlb && tea == teb,
          "%s: size %lld/%lld lb %lld/%lld extent %lld/%lld true %lld,%lld/%lld,%lld", what, (long long)sa,
          (long long)sb, (long long)la, (long long)lb, (long long)ea, (long long)eb, (long long)tla,
          (long long)tea, (long long)tlb, (long long)teb);
    char pa[4096], pb[4096];
    int qa = 0, qb = 0;
    MPI_Pack(data, count, a, pa, (int)sizeof pa, &qa, MPI_COMM_WORLD);
    MPI_Pack(data, count, b, pb, (int)sizeof pb, &qb, MPI_COMM_WORLD);
    CHECK(qa == qb && memcmp(pa, pb, (size_t)qa) == 0, "%s: MPI_Pack gives %d and %d bytes, or other bytes", what, qa, qb);
    MPI_Aint xa = 0, xb = 0;
    MPI_Pack_external("external32", data, count, a, pa, (MPI_Aint)sizeof pa, &xa);
    MPI_Pack_external("external32", data, count, b, pb, (MPI_Aint)sizeof pb, &xb);
    CHECK(xa == xb && memcmp(pa, pb, (size_t)xa) == 0, "%s: external32 %ld and %ld bytes, or other bytes", what, (long)xa, (long)xb);
}

/* The envelope of a _c type: combiner, counts of each kind, and the large counts. */
static void envelope(const char *what, MPI_Datatype t, int combiner, MPI_Count ni, MPI_Count na, MPI_Count nc,
                     MPI_Count nd, const int *ints, const MPI_Count *counts) {
    MPI_Count gi, ga, gc, gd;
    int comb;
    CHECK(MPI_Type_get_envelope_c(t, &gi, &ga, &gc, &gd, &comb) == MPI_SUCCESS, "%s: get_envelope_c", what);
    CHECK(comb == combiner && gi == ni && ga == na && gc == nc && gd == nd,
          "%s: envelope_c combiner %d (want %d), %lld %lld %lld %lld (want %lld %lld %lld %lld)", what, comb,
          combiner, (long long)gi, (long long)ga, (long long)gc, (long long)gd, (long long)ni, (long long)na,
          (long long)nc, (long long)nd);
    int iv[16];
    MPI_Aint av[16];
    MPI_Count cv[64];
    MPI_Datatype dv[16];
    CHECK(MPI_Type_get_contents_c(t, 16, 16, 64, 16, iv, av, cv, dv) == MPI_SUCCESS, "%s: get_contents_c", what);
    for (MPI_Count k = 0; k < ni && ints; k++) CHECK(iv[k] == ints[k], "%s: integer %lld = %d, want %d", what, (long long)k, iv[k], ints[k]);
    for (MPI_Count k = 0; k < nc; k++)
        CHECK(cv[k] == counts[k], "%s: large count %lld = %lld, want %lld", what, (long long)k, (long long)cv[k],
              (long long)counts[k]);
    for (MPI_Count k = 0; k < gd; k++) {
        int ni_, na_, nd_, c_;
        MPI_Type_get_envelope(dv[k], &ni_, &na_, &nd_, &c_);
        if (c_ != MPI_COMBINER_NAMED) MPI_Type_free(&dv[k]);
    }
    /* the int query refuses it */
    int i1, i2, i3, i4;
    int rc = MPI_Type_get_envelope(t, &i1, &i2, &i3, &i4), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "%s: int MPI_Type_get_envelope gave class %d", what, cls);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 0; i < N * 8; i++) data[i] = i * 37 + 5;
    MPI_Datatype a, b;

    MPI_Type_contiguous_c(5, MPI_INT, &a);
    MPI_Type_contiguous(5, MPI_INT, &b);
    same("contiguous", a, b, 3);
    envelope("contiguous", a, MPI_COMBINER_CONTIGUOUS, 0, 0, 1, 1, NULL, (MPI_Count[]){5});
    MPI_Type_free(&a); MPI_Type_free(&b);

    MPI_Type_vector_c(3, 2, 5, MPI_INT, &a);
    MPI_Type_vector(3, 2, 5, MPI_INT, &b);
    same("vector", a, b, 2);
    envelope("vector", a, MPI_COMBINER_VECTOR, 0, 0, 3, 1, NULL, (MPI_Count[]){3, 2, 5});
    MPI_Type_free(&a); MPI_Type_free(&b);

    MPI_Type_create_hvector_c(3, 2, 28, MPI_INT, &a);
    MPI_Type_create_hvector(3, 2, 28, MPI_INT, &b);
    same("hvector", a, b, 2);
    envelope("hvector", a, MPI_COMBINER_HVECTOR, 0, 0, 3, 1, NULL, (MPI_Count[]){3, 2, 28});
    MPI_Type_free(&a); MPI_Type_free(&b);

    {
        MPI_Count bl[3] = {2, 1, 3}, d[3] = {0, 5, 9};
        int ib[3] = {2, 1, 3}, id[3] = {0, 5, 9};
        MPI_Type_indexed_c(3, bl, d, MPI_INT, &a);
        MPI_Type_indexed(3, ib, id, MPI_INT, &b);
        same("indexed", a, b, 2);
        envelope("indexed", a, MPI_COMBINER_INDEXED, 0, 0, 7, 1, NULL, (MPI_Count[]){3, 2, 1, 3, 0, 5, 9});
        MPI_Type_free(&a); MPI_Type_free(&b);

        MPI_Count hd[3] = {0, 20, 36};
        MPI_Aint ha[3] = {0, 20, 36};
        MPI_Type_create_hindexed_c(3, bl, hd, MPI_INT, &a);
        MPI_Type_create_hindexed(3, ib, ha, MPI_INT, &b);
        same("hindexed", a, b, 2);
        envelope("hindexed", a, MPI_COMBINER_HINDEXED, 0, 0, 7, 1, NULL, (MPI_Count[]){3, 2, 1, 3, 0, 20, 36});
        MPI_Type_free(&a); MPI_Type_free(&b);

        MPI_Type_create_indexed_block_c(3, 2, d, MPI_INT, &a);
        MPI_Type_create_indexed_block(3, 2, id, MPI_INT, &b);
        same("indexed_block", a, b, 2);
        envelope("indexed_block", a, MPI_COMBINER_INDEXED_BLOCK, 0, 0, 5, 1, NULL, (MPI_Count[]){3, 2, 0, 5, 9});
        MPI_Type_free(&a); MPI_Type_free(&b);

        MPI_Type_create_hindexed_block_c(3, 2, hd, MPI_INT, &a);
        MPI_Type_create_hindexed_block(3, 2, ha, MPI_INT, &b);
        same("hindexed_block", a, b, 2);
        envelope("hindexed_block", a, MPI_COMBINER_HINDEXED_BLOCK, 0, 0, 5, 1, NULL, (MPI_Count[]){3, 2, 0, 20, 36});
        MPI_Type_free(&a); MPI_Type_free(&b);

        /* a struct of an int pair, a double and a char (external32 walks its blocks) */
        MPI_Count sbl[3] = {2, 1, 1}, sd[3] = {0, 8, 16};
        int isbl[3] = {2, 1, 1};
        MPI_Aint isd[3] = {0, 8, 16};
        MPI_Datatype ts[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
        MPI_Type_create_struct_c(3, sbl, sd, ts, &a);
        MPI_Type_create_struct(3, isbl, isd, ts, &b);
        same("struct", a, b, 3);
        envelope("struct", a, MPI_COMBINER_STRUCT, 0, 0, 7, 3, NULL, (MPI_Count[]){3, 2, 1, 1, 0, 8, 16});
        MPI_Type_free(&a); MPI_Type_free(&b);
    }

    MPI_Type_create_resized_c(MPI_INT, -4, 12, &a);
    MPI_Type_create_resized(MPI_INT, -4, 12, &b);
    same("resized", a, b, 3);
    envelope("resized", a, MPI_COMBINER_RESIZED, 0, 0, 2, 1, NULL, (MPI_Count[]){-4, 12});
    MPI_Type_free(&a); MPI_Type_free(&b);

    {
        MPI_Count sz[2] = {6, 8}, sub[2] = {3, 4}, st[2] = {1, 2};
        int isz[2] = {6, 8}, isub[2] = {3, 4}, ist[2] = {1, 2};
        MPI_Type_create_subarray_c(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &a);
        MPI_Type_create_subarray(2, isz, isub, ist, MPI_ORDER_C, MPI_INT, &b);
        same("subarray", a, b, 1);
        envelope("subarray", a, MPI_COMBINER_SUBARRAY, 2, 0, 6, 1, (int[]){2, MPI_ORDER_C},
                 (MPI_Count[]){6, 8, 3, 4, 1, 2});
        MPI_Type_free(&a); MPI_Type_free(&b);
    }

    /* darray: a 6 x 8 array, block-distributed over a 1 x 1 grid and cyclic(2) over
     * a 2 x 1 one (as process 1 of 2) */
    {
        MPI_Count gs[2] = {6, 8};
        int igs[2] = {6, 8}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
            darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps1[2] = {1, 1}, ps2[2] = {2, 1};
        MPI_Type_create_darray_c(1, 0, 2, gs, dist, darg, ps1, MPI_ORDER_C, MPI_INT, &a);
        MPI_Type_create_darray(1, 0, 2, igs, dist, darg, ps1, MPI_ORDER_C, MPI_INT, &b);
        same("darray 1x1", a, b, 1);
        envelope("darray 1x1", a, MPI_COMBINER_DARRAY, 10, 0, 2, 1,
                 (int[]){1, 0, 2, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_DFLT_DARG, 2, 1, 1, MPI_ORDER_C},
                 (MPI_Count[]){6, 8});
        MPI_Type_free(&a); MPI_Type_free(&b);
        int dist2[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE}, darg2[2] = {2, MPI_DISTRIBUTE_DFLT_DARG};
        MPI_Type_create_darray_c(2, 1, 2, gs, dist2, darg2, ps2, MPI_ORDER_FORTRAN, MPI_INT, &a);
        MPI_Type_create_darray(2, 1, 2, igs, dist2, darg2, ps2, MPI_ORDER_FORTRAN, MPI_INT, &b);
        same("darray 2x1", a, b, 1);
        MPI_Type_free(&a); MPI_Type_free(&b);
    }

    /* an int-built type seen through the _c envelope: no large counts */
    {
        MPI_Count gi, ga, gc, gd;
        int comb, iv[4];
        MPI_Aint av[1];
        MPI_Count cv[1];
        MPI_Datatype dv[1];
        MPI_Type_vector(4, 1, 3, MPI_INT, &b);
        MPI_Type_get_envelope_c(b, &gi, &ga, &gc, &gd, &comb);
        CHECK(comb == MPI_COMBINER_VECTOR && gi == 3 && ga == 0 && gc == 0 && gd == 1,
              "int vector via envelope_c: %d %lld %lld %lld %lld", comb, (long long)gi, (long long)ga, (long long)gc, (long long)gd);
        MPI_Type_get_contents_c(b, 4, 1, 1, 1, iv, av, cv, dv);
        CHECK(iv[0] == 4 && iv[1] == 1 && iv[2] == 3 && dv[0] == MPI_INT, "int vector via contents_c: %d %d %d", iv[0], iv[1], iv[2]);
        MPI_Type_free(&b);
    }

    /* larger than an int can count */
    {
        MPI_Count sz, lb, ext;
        int isz;
        MPI_Type_contiguous_c(((MPI_Count)1 << 32) + 3, MPI_BYTE, &a);
        MPI_Type_size_c(a, &sz);
        CHECK(sz == ((MPI_Count)1 << 32) + 3, "contiguous_c of 2^32+3 bytes: size %lld", (long long)sz);
        MPI_Type_size(a, &isz);
        CHECK(isz == MPI_UNDEFINED, "int MPI_Type_size of 2^32+3 bytes: %d", isz);
        MPI_Type_free(&a);
        MPI_Type_create_hvector_c(2, 1, ((MPI_Count)1 << 33) + 8, MPI_DOUBLE, &a);
        MPI_Type_get_extent_c(a, &lb, &ext);
        CHECK(lb == 0 && ext == ((MPI_Count)1 << 33) + 16, "hvector_c stride 2^33+8: lb %lld extent %lld", (long long)lb, (long long)ext);
        MPI_Type_free(&a);
        MPI_Type_vector_c(2, 1, ((MPI_Count)1 << 31) + 1, MPI_INT, &a);
        MPI_Type_get_extent_c(a, &lb, &ext);
        CHECK(ext == ((((MPI_Count)1 << 31) + 1) + 1) * 4, "vector_c stride 2^31+1 ints: extent %lld", (long long)ext);
        MPI_Type_free(&a);
        int rc = MPI_Type_contiguous_c(-2, MPI_INT, &a), cls;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_COUNT, "contiguous_c count -2: class %d", cls);
    }

    /* a message sent with a _c type and received with the int-built one */
    if (size >= 2 && rank < 2) {
        MPI_Type_vector_c(4, 3, 7, MPI_INT, &a);
        MPI_Type_vector(4, 3, 7, MPI_INT, &b);
        MPI_Type_commit(&a);
        MPI_Type_commit(&b);
        int got[N * 8];
        memset(got, 0, sizeof got);
        if (rank == 0)
            MPI_Send(data, 2, a, 1, 3, MPI_COMM_WORLD);
        else {
            MPI_Recv(got, 2, b, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int k = 0; k < 2; k++)
                for (int blk = 0; blk < 4; blk++)
                    for (int j = 0; j < 3; j++) {
                        int at = k * 24 + blk * 7 + j; /* extent: 3 * 7 + 3 = 24 ints */
                        CHECK(got[at] == data[at], "message element %d = %d, want %d", at, got[at], data[at]);
                    }
            CHECK(got[3] == 0, "message wrote into a gap");
        }
        MPI_Type_free(&a);
        MPI_Type_free(&b);
    }

    int all;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "large_count_type: %d failures\n" : "large_count_type: ok\n", all);
    MPI_Finalize();
    return all != 0;
}
