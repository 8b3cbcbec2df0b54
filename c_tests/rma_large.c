/* One-sided transfers larger than any staging buffer and of many pieces, and a target
 * that only polls its own memory, on MPI_Win_create, MPI_Win_allocate and dynamic
 * windows, against an oracle of every byte.
 *
 * Each process P works on P+1 (right) and reads from P-1 (left), in a fence epoch:
 * - a contiguous MPI_Put of 1 MiB + 3 bytes at an odd offset;
 * - an MPI_Put of 40,000 ints into a vector target type (every third int);
 * - an MPI_Accumulate (MPI_SUM, MPI_INT) of 40,000 ints into every second int;
 * - an MPI_Get of 60,000 ints from a vector (every second int) of the left neighbour,
 *   into a contiguous buffer.
 * Then a passive-target exchange: under an exclusive lock each process puts 200 KB
 * and, after MPI_Win_flush, a flag into its right neighbour, while it waits for its
 * own flag from the left by polling its memory in MPI_Win_lock/unlock epochs on itself
 * (it makes no other MPI call meanwhile), then checks the 200 KB.
 * After each part every process compares all of its window memory with the oracle's
 * image (so no byte outside the addressed ones changes) and its Get buffer with the
 * left neighbour's initial bytes.
 *
 * Run with SHMPI_DIRECT=0 too: the members then serve each other's accesses to
 * windows on their own memory (the path taken where the system refuses cross-process
 * copies), in mailboxes smaller than these transfers. Also built with MPICH and run on
 * MPICH. */
#include "rma_common.h"

#define WSIZE (4 << 20)
#define BIG ((1 << 20) + 3)
#define BIG_OFF 5
#define NV 40000
#define VEC_OFF (2 << 20)
#define ACC_OFF (VEC_OFF + 3 * 4 * NV + 64)
#define NG 60000
#define GET_OFF (3 << 20)
#define PASS_LEN 200000
#define PASS_OFF (GET_OFF + 2 * 4 * NG + 64)
#define FLAG_OFF (WSIZE - 64)

static unsigned char *img, *origin, *got;

static int geti(const unsigned char *p) {
    int v;
    memcpy(&v, p, sizeof v);
    return v;
}
static void seti(unsigned char *p, int v) { memcpy(p, &v, sizeof v); }

/* This process's window memory against the image; `what` names the part. */
static void compare_window(const struct rma_win *w, const char *flavor, const char *what) {
    char ctx[160];
    snprintf(ctx, sizeof ctx, "%s, %s: window memory of rank %d", flavor, what, rma_rank);
    rma_local_begin(w, MPI_LOCK_SHARED);
    expect_bytes(ctx, img, w->base, WSIZE);
    rma_local_end(w);
}

static void run(int flavor) {
    const char *fname = rma_flavor_name(flavor);
    int np = rma_size, me = rma_rank;
    int right = (me + 1) % np, left = (me + np - 1) % np;
    struct rma_win w;
    rma_win_make(&w, flavor, WSIZE, 1, MPI_COMM_WORLD);

    rma_local_begin(&w, MPI_LOCK_EXCLUSIVE);
    rma_fill_bytes(w.base, WSIZE, (uint64_t)me, (uint64_t)flavor, 1);
    rma_local_end(&w);
    rma_fill_bytes(img, WSIZE, (uint64_t)me, (uint64_t)flavor, 1);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    /* Origin data: BIG bytes, then NV ints to put, then NV ints to add. */
    rma_fill_bytes(origin, BIG, (uint64_t)me, (uint64_t)flavor, 2);
    unsigned char *vput = origin + BIG + 1, *vacc = vput + 4 * NV;
    for (int i = 0; i < NV; i++) {
        seti(vput + 4 * i, (me + 1) * 1000003 + i);
        seti(vacc + 4 * i, (me + 7) * 31 + i % 1000 - 500);
    }
    MPI_Datatype every3, every2, get2;
    CHECK(MPI_Type_vector(NV, 1, 3, MPI_INT, &every3));
    CHECK(MPI_Type_vector(NV, 1, 2, MPI_INT, &every2));
    CHECK(MPI_Type_vector(NG, 1, 2, MPI_INT, &get2));
    CHECK(MPI_Type_commit(&every3));
    CHECK(MPI_Type_commit(&every2));
    CHECK(MPI_Type_commit(&get2));
    memset(got, 0xA5, 4 * NG);

    CHECK(MPI_Win_fence(MPI_MODE_NOPRECEDE, w.win));
    CHECK(MPI_Put(origin, BIG, MPI_BYTE, right, rma_disp(&w, right, BIG_OFF), BIG, MPI_BYTE,
                  w.win));
    CHECK(MPI_Put(vput, NV, MPI_INT, right, rma_disp(&w, right, VEC_OFF), 1, every3, w.win));
    CHECK(MPI_Accumulate(vacc, NV, MPI_INT, right, rma_disp(&w, right, ACC_OFF), 1, every2,
                         MPI_SUM, w.win));
    CHECK(MPI_Get(got, NG, MPI_INT, left, rma_disp(&w, left, GET_OFF), 1, get2, w.win));
    CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));

    /* The oracle: what the left neighbour did to this process's memory. */
    unsigned char *lorigin = malloc(BIG);
    if (!lorigin) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
    rma_fill_bytes(lorigin, BIG, (uint64_t)left, (uint64_t)flavor, 2);
    memcpy(img + BIG_OFF, lorigin, BIG);
    free(lorigin);
    for (int i = 0; i < NV; i++) {
        seti(img + VEC_OFF + 12 * i, (left + 1) * 1000003 + i);
        unsigned a = (unsigned)geti(img + ACC_OFF + 8 * i);
        unsigned b = (unsigned)((left + 7) * 31 + i % 1000 - 500);
        seti(img + ACC_OFF + 8 * i, (int)(a + b));
    }
    compare_window(&w, fname, "after the fence epoch");
    {
        /* The left neighbour's initial bytes at the Get's elements. */
        unsigned char *linit = malloc(WSIZE), *want = malloc(4 * NG);
        if (!linit || !want) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
        rma_fill_bytes(linit, WSIZE, (uint64_t)left, (uint64_t)flavor, 1);
        for (int i = 0; i < NG; i++) memcpy(want + 4 * i, linit + GET_OFF + 8 * i, 4);
        char ctx[160];
        snprintf(ctx, sizeof ctx, "%s: MPI_Get of a vector of rank %d", fname, left);
        expect_bytes(ctx, want, got, 4 * NG);
        free(linit);
        free(want);
    }

    /* (every process has checked its memory before its left neighbour writes into it
     * again) */
    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    /* Passive target: 200 KB and a flag to the right; poll for our own flag. */
    unsigned char *pass = malloc(PASS_LEN);
    if (!pass) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
    rma_fill_bytes(pass, PASS_LEN, (uint64_t)me, (uint64_t)flavor, 5);
    int flag = 1000 + me;
    CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w.win));
    CHECK(MPI_Put(pass, PASS_LEN, MPI_BYTE, right, rma_disp(&w, right, PASS_OFF), PASS_LEN,
                  MPI_BYTE, w.win));
    CHECK(MPI_Win_flush(right, w.win));
    CHECK(MPI_Put(&flag, 1, MPI_INT, right, rma_disp(&w, right, FLAG_OFF), 1, MPI_INT, w.win));
    CHECK(MPI_Win_unlock(right, w.win));
    for (;;) {
        int seen;
        rma_local_begin(&w, MPI_LOCK_SHARED);
        memcpy(&seen, w.base + FLAG_OFF, sizeof seen);
        rma_local_end(&w);
        if (seen == 1000 + left) break;
    }
    rma_fill_bytes(img + PASS_OFF, PASS_LEN, (uint64_t)left, (uint64_t)flavor, 5);
    seti(img + FLAG_OFF, 1000 + left);
    compare_window(&w, fname, "after the passive-target exchange");
    free(pass);

    CHECK(MPI_Type_free(&every3));
    CHECK(MPI_Type_free(&every2));
    CHECK(MPI_Type_free(&get2));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    rma_win_free(&w);
}

int main(int argc, char **argv) {
    rma_init(&argc, &argv);
    img = malloc(WSIZE);
    origin = malloc(BIG + 1 + 8 * NV);
    got = malloc(4 * NG);
    if (!img || !origin || !got) rma_die("malloc", MPI_ERR_NO_MEM, __FILE__, __LINE__);
    run(RMA_CREATE);
    run(RMA_ALLOCATE);
    run(RMA_DYNAMIC);
    free(img);
    free(origin);
    free(got);
    return rma_finish("rma_large", "3 window flavors");
}
