/* One-sided communication (MPI RMA) latency and bandwidth.
 *
 * Rank 0 is the origin and rank np-1 the target; the other ranks take part in every
 * collective call (the fences) and otherwise wait in MPI_Barrier, so that np 4 and 8
 * show what idle ranks cost. Window memory comes from MPI_Win_allocate (disp_unit 1,
 * the largest size on every rank).
 * Every fence sequence ends with a fence asserting MPI_MODE_NOSUCCEED, so that the
 * lock epochs of the next cell start outside any fence epoch.
 *
 * Modes (-m, a comma list; default all):
 *   put_fence, get_fence  one MPI_Put / MPI_Get per MPI_Win_fence epoch
 *   put_flush, get_flush  MPI_Win_lock(SHARED) once per batch, then MPI_Put / MPI_Get
 *                         + MPI_Win_flush per iteration
 *   acc_flush             as put_flush with MPI_Accumulate (MPI_DOUBLE, MPI_SUM)
 *   fop, cas              MPI_Fetch_and_op (MPI_INT64_T, MPI_SUM) / MPI_Compare_and_swap
 *                         (MPI_INT64_T) + MPI_Win_flush under MPI_Win_lock_all
 *   fence                 an empty MPI_Win_fence on every rank
 *   lock                  an empty MPI_Win_lock(EXCLUSIVE)/MPI_Win_unlock pair
 *   memcpy                memcpy between two private buffers of rank 0 (the reference)
 *   shm_store             MPI_Win_allocate_shared: memcpy into rank np-1's segment
 *                         (MPI_Win_shared_query) + MPI_Win_sync, under lock_all
 * The sized modes run at every size of -s (comma list of bytes; default 8 B and the
 * powers of 4 from 16 B to 16 MiB); fop, cas (8 B), fence and lock (0 B) once.
 *
 * For each cell: the data is checked once against the values expected (before the timed
 * part for put/get/acc, on every operation for fop and cas), an iteration count is
 * calibrated to about -t seconds per batch after one warm-up operation, then -b batches
 * (3 when one operation takes over twice -t) are timed with MPI_Wtime on rank 0. One line per cell:
 *   rma,<label>,<mode>,<bytes>,<np>,<median us>,<MB/s at the median>,<best us>,<iters>
 * (us per operation, or per epoch for the fence modes; MB/s = 10^6 bytes per second).
 * A wrong value prints rank, mode, size, index, expected and found and aborts. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BATCHES 15

enum {
    M_PUT_FENCE,
    M_GET_FENCE,
    M_PUT_FLUSH,
    M_GET_FLUSH,
    M_ACC_FLUSH,
    M_FOP,
    M_CAS,
    M_FENCE,
    M_LOCK,
    M_MEMCPY,
    M_SHM_STORE,
    M_COUNT
};
static const char *mode_name[M_COUNT] = {"put_fence", "get_fence", "put_flush", "get_flush",
                                         "acc_flush", "fop",       "cas",       "fence",
                                         "lock",      "memcpy",    "shm_store"};

static int rank, np, target;
static MPI_Win win, shwin;
static unsigned char *winbuf; /* this rank's window memory */
static unsigned char *shseg;  /* rank np-1's segment of the shared window (rank 0) */
static unsigned char *src, *dst;
static int64_t counter; /* fop/cas: the value at the target, as rank 0 knows it */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static unsigned char pattern(long i, long len, int tag)
{
    return (unsigned char)(i * 7 + len * 13 + tag * 29 + 1);
}

static void fail_bytes(const char *mode, long len, long i, unsigned expect, unsigned found)
{
    fprintf(stderr, "rmabench: rank %d, %s, %ld bytes: byte %ld expected %u found %u\n", rank, mode, len, i,
            expect, found);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

static void check_bytes(const char *mode, const unsigned char *p, long len, int tag)
{
    for (long i = 0; i < len; i++)
        if (p[i] != pattern(i, len, tag))
            fail_bytes(mode, len, i, pattern(i, len, tag), p[i]);
}

/* The target stores into its own window memory inside an exclusive lock epoch on
 * itself (visible to every later access once unlocked); everyone waits for it. */
static void target_fill(long len, int tag, int zero)
{
    if (rank == target) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
        for (long i = 0; i < len; i++)
            winbuf[i] = zero ? 0 : pattern(i, len, tag);
        MPI_Win_unlock(target, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The target reads its own window memory inside a shared lock epoch on itself, after
 * the origin has unlocked (the barrier orders them). */
static void target_check(const char *mode, long len, int tag)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == target) {
        MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
        check_bytes(mode, winbuf, len, tag);
        MPI_Win_unlock(target, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* One timed batch of `iters` operations on every rank; returns rank 0's seconds
 * (broadcast, so every rank takes the same calibration decisions). */
static double batch(int mode, long len, long iters)
{
    int cnt = (int)len;
    double t0 = 0, t = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    switch (mode) {
    case M_PUT_FENCE:
    case M_GET_FENCE:
        MPI_Win_fence(0, win);
        t0 = MPI_Wtime();
        for (long i = 0; i < iters; i++) {
            if (rank == 0) {
                if (mode == M_PUT_FENCE)
                    MPI_Put(src, cnt, MPI_BYTE, target, 0, cnt, MPI_BYTE, win);
                else
                    MPI_Get(dst, cnt, MPI_BYTE, target, 0, cnt, MPI_BYTE, win);
            }
            MPI_Win_fence(0, win);
        }
        t = MPI_Wtime() - t0;
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        break;
    case M_FENCE:
        MPI_Win_fence(0, win);
        t0 = MPI_Wtime();
        for (long i = 0; i < iters; i++)
            MPI_Win_fence(0, win);
        t = MPI_Wtime() - t0;
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        break;
    case M_PUT_FLUSH:
    case M_GET_FLUSH:
    case M_ACC_FLUSH:
        if (rank == 0) {
            MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
            t0 = MPI_Wtime();
            for (long i = 0; i < iters; i++) {
                if (mode == M_PUT_FLUSH)
                    MPI_Put(src, cnt, MPI_BYTE, target, 0, cnt, MPI_BYTE, win);
                else if (mode == M_GET_FLUSH)
                    MPI_Get(dst, cnt, MPI_BYTE, target, 0, cnt, MPI_BYTE, win);
                else
                    MPI_Accumulate(src, cnt / 8, MPI_DOUBLE, target, 0, cnt / 8, MPI_DOUBLE, MPI_SUM, win);
                MPI_Win_flush(target, win);
            }
            t = MPI_Wtime() - t0;
            MPI_Win_unlock(target, win);
        }
        break;
    case M_FOP:
    case M_CAS:
        if (rank == 0) {
            const int64_t one = 1;
            int64_t res = -1, next;
            MPI_Win_lock_all(0, win);
            t0 = MPI_Wtime();
            for (long i = 0; i < iters; i++) {
                if (mode == M_FOP) {
                    MPI_Fetch_and_op(&one, &res, MPI_INT64_T, target, 0, MPI_SUM, win);
                } else {
                    next = counter + 1;
                    MPI_Compare_and_swap(&next, &counter, &res, MPI_INT64_T, target, 8, win);
                }
                MPI_Win_flush(target, win);
                if (res != counter) {
                    fprintf(stderr, "rmabench: rank 0, %s, operation %ld: fetched %lld, expected %lld\n",
                            mode_name[mode], (long)counter, (long long)res, (long long)counter);
                    MPI_Abort(MPI_COMM_WORLD, 3);
                }
                counter++;
            }
            t = MPI_Wtime() - t0;
            MPI_Win_unlock_all(win);
        }
        break;
    case M_LOCK:
        if (rank == 0) {
            t0 = MPI_Wtime();
            for (long i = 0; i < iters; i++) {
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
                MPI_Win_unlock(target, win);
            }
            t = MPI_Wtime() - t0;
        }
        break;
    case M_MEMCPY:
        if (rank == 0) {
            t0 = MPI_Wtime();
            for (long i = 0; i < iters; i++) {
                memcpy(dst, src, (size_t)len);
                __asm__ __volatile__("" ::: "memory");
            }
            t = MPI_Wtime() - t0;
        }
        break;
    case M_SHM_STORE:
        if (rank == 0) {
            t0 = MPI_Wtime();
            for (long i = 0; i < iters; i++) {
                memcpy(shseg, src, (size_t)len);
                MPI_Win_sync(shwin);
            }
            t = MPI_Wtime() - t0;
        }
        break;
    }
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t;
}

/* The data checks of one cell, before its timed part. */
static void check_cell(int mode, long len)
{
    int cnt = (int)len;
    const char *name = mode_name[mode];
    switch (mode) {
    case M_PUT_FENCE:
        for (long i = 0; i < len; i++)
            src[i] = pattern(i, len, 1);
        target_fill(len, 0, 1);
        MPI_Win_fence(0, win);
        if (rank == 0)
            MPI_Put(src, cnt, MPI_BYTE, target, 0, cnt, MPI_BYTE, win);
        MPI_Win_fence(0, win);
        if (rank == target)
            check_bytes(name, winbuf, len, 1);
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        break;
    case M_GET_FENCE:
        MPI_Win_fence(0, win);
        if (rank == target)
            for (long i = 0; i < len; i++)
                winbuf[i] = pattern(i, len, 2);
        memset(dst, 0, (size_t)len);
        MPI_Win_fence(0, win);
        if (rank == 0)
            MPI_Get(dst, cnt, MPI_BYTE, target, 0, cnt, MPI_BYTE, win);
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        if (rank == 0)
            check_bytes(name, dst, len, 2);
        break;
    case M_PUT_FLUSH:
        for (long i = 0; i < len; i++)
            src[i] = pattern(i, len, 3);
        target_fill(len, 0, 1);
        if (rank == 0) {
            MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
            MPI_Put(src, cnt, MPI_BYTE, target, 0, cnt, MPI_BYTE, win);
            MPI_Win_flush(target, win);
            MPI_Win_unlock(target, win);
        }
        target_check(name, len, 3);
        break;
    case M_GET_FLUSH:
        target_fill(len, 4, 0);
        if (rank == 0) {
            memset(dst, 0, (size_t)len);
            MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
            MPI_Get(dst, cnt, MPI_BYTE, target, 0, cnt, MPI_BYTE, win);
            MPI_Win_flush(target, win);
            check_bytes(name, dst, len, 4);
            MPI_Win_unlock(target, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case M_ACC_FLUSH: {
        /* Two accumulates of 1..8 onto 0.5: the target holds 0.5 + 2 * (1..8). */
        double *s = (double *)(void *)src, *w = (double *)(void *)winbuf;
        long n = len / 8;
        for (long i = 0; i < n; i++)
            s[i] = (double)(i % 8 + 1);
        if (rank == target) {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
            for (long i = 0; i < n; i++)
                w[i] = 0.5;
            MPI_Win_unlock(target, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
            for (int k = 0; k < 2; k++) {
                MPI_Accumulate(src, (int)n, MPI_DOUBLE, target, 0, (int)n, MPI_DOUBLE, MPI_SUM, win);
                MPI_Win_flush(target, win);
            }
            MPI_Win_unlock(target, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == target) {
            MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
            for (long i = 0; i < n; i++)
                if (w[i] != 0.5 + 2.0 * (double)(i % 8 + 1)) {
                    fprintf(stderr, "rmabench: rank %d, %s, %ld bytes: double %ld expected %g found %g\n", rank,
                            name, len, i, 0.5 + 2.0 * (double)(i % 8 + 1), w[i]);
                    MPI_Abort(MPI_COMM_WORLD, 3);
                }
            MPI_Win_unlock(target, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
    case M_FOP:
    case M_CAS:
        /* Both counters start at 0; every operation checks what it fetched. */
        if (rank == target) {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
            memset(winbuf, 0, 16);
            MPI_Win_unlock(target, win);
        }
        counter = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case M_MEMCPY:
        if (rank == 0) {
            for (long i = 0; i < len; i++)
                src[i] = pattern(i, len, 5);
            memset(dst, 0, (size_t)len);
            memcpy(dst, src, (size_t)len);
            check_bytes(name, dst, len, 5);
        }
        break;
    case M_SHM_STORE:
        /* Store, MPI_Win_sync, barrier, MPI_Win_sync, load (everyone is in lock_all). */
        if (rank == 0) {
            for (long i = 0; i < len; i++)
                src[i] = pattern(i, len, 6);
            memcpy(shseg, src, (size_t)len);
            MPI_Win_sync(shwin);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == target) {
            unsigned char *mine;
            MPI_Aint sz;
            int du;
            MPI_Win_shared_query(shwin, target, &sz, &du, &mine);
            MPI_Win_sync(shwin);
            check_bytes(name, mine, len, 6);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
}

/* After the timed part: fop and cas leave `counter` at the target. */
static void check_after(int mode)
{
    if (mode != M_FOP && mode != M_CAS)
        return;
    int64_t expect = counter;
    MPI_Bcast(&expect, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (rank == target) {
        int64_t v[2];
        MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
        memcpy(v, winbuf, sizeof v);
        MPI_Win_unlock(target, win);
        if (v[mode == M_FOP ? 0 : 1] != expect) {
            fprintf(stderr, "rmabench: rank %d, %s: the target holds %lld, expected %lld\n", rank,
                    mode_name[mode], (long long)v[mode == M_FOP ? 0 : 1], (long long)expect);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void cell(const char *label, int mode, long len, double target_s, int nbatch)
{
    check_cell(mode, len);
    batch(mode, len, 1); /* warm-up: first-use costs stay out of the calibration */
    long iters = 1;
    double t;
    for (;;) {
        t = batch(mode, len, iters);
        if (t >= target_s / 4 || iters >= (1L << 24))
            break;
        iters *= (t < target_s / 64) ? 8 : 2;
    }
    /* One operation taking more than twice a batch's time (an oversubscribed
     * implementation that waits for the scheduler): three batches of one. */
    if (iters == 1 && t > 2 * target_s && nbatch > 3)
        nbatch = 3;
    iters = (long)(target_s / (t / (double)iters));
    if (iters < 1)
        iters = 1;
    double ts[MAX_BATCHES];
    for (int b = 0; b < nbatch; b++)
        ts[b] = batch(mode, len, iters) / (double)iters * 1e6;
    check_after(mode);
    qsort(ts, (size_t)nbatch, sizeof(double), cmp_double);
    if (rank == 0) {
        double med = ts[nbatch / 2];
        printf("rma,%s,%s,%ld,%d,%.3f,%.1f,%.3f,%ld\n", label, mode_name[mode], len, np, med,
               med > 0 ? (double)len / med : 0.0, ts[0], iters);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    const char *label = "mpi", *modes = NULL, *sizes_arg = NULL;
    double target_s = 0.02;
    int nbatch = 5;
    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-l") == 0)
            label = argv[i + 1];
        else if (strcmp(argv[i], "-m") == 0)
            modes = argv[i + 1];
        else if (strcmp(argv[i], "-s") == 0)
            sizes_arg = argv[i + 1];
        else if (strcmp(argv[i], "-t") == 0)
            target_s = atof(argv[i + 1]);
        else if (strcmp(argv[i], "-b") == 0)
            nbatch = atoi(argv[i + 1]);
    }
    if (nbatch < 1)
        nbatch = 1;
    if (nbatch > MAX_BATCHES)
        nbatch = MAX_BATCHES;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np < 2) {
        fprintf(stderr, "rmabench: needs at least 2 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    target = np - 1;

    long sizes[32];
    int nsizes = 0;
    if (sizes_arg) {
        char *copy = strdup(sizes_arg), *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok && nsizes < 32; tok = strtok_r(NULL, ",", &save))
            sizes[nsizes++] = atol(tok);
        free(copy);
    } else {
        sizes[nsizes++] = 8;
        for (long b = 16; b <= (16L << 20); b *= 4)
            sizes[nsizes++] = b;
    }
    long maxbytes = 16;
    for (int k = 0; k < nsizes; k++) {
        if (sizes[k] < 8 || sizes[k] % 8 != 0 || sizes[k] > (1L << 30)) {
            fprintf(stderr, "rmabench: sizes are multiples of 8 bytes up to 1 GiB\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (sizes[k] > maxbytes)
            maxbytes = sizes[k];
    }
    int on[M_COUNT];
    for (int m = 0; m < M_COUNT; m++)
        on[m] = modes == NULL;
    if (modes) {
        char *copy = strdup(modes), *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            int m = 0;
            while (m < M_COUNT && strcmp(tok, mode_name[m]) != 0)
                m++;
            if (m == M_COUNT) {
                if (rank == 0)
                    fprintf(stderr, "rmabench: unknown mode %s\n", tok);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            on[m] = 1;
        }
        free(copy);
    }

    src = malloc((size_t)maxbytes);
    dst = malloc((size_t)maxbytes);
    if (!src || !dst) {
        fprintf(stderr, "rmabench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(src, 1, (size_t)maxbytes);
    memset(dst, 0, (size_t)maxbytes);
    MPI_Win_allocate((MPI_Aint)maxbytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &winbuf, &win);
    MPI_Comm shcomm = MPI_COMM_NULL;
    if (on[M_SHM_STORE]) {
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shcomm);
        int shsize;
        MPI_Comm_size(shcomm, &shsize);
        if (shsize != np) {
            if (rank == 0)
                fprintf(stderr, "rmabench: shm_store needs every rank on one node\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        unsigned char *mine;
        MPI_Win_allocate_shared((MPI_Aint)maxbytes, 1, MPI_INFO_NULL, shcomm, &mine, &shwin);
        MPI_Aint sz;
        int du;
        MPI_Win_shared_query(shwin, target, &sz, &du, &shseg);
        if (sz < (MPI_Aint)maxbytes) {
            fprintf(stderr, "rmabench: rank %d: shared segment of rank %d is %ld bytes, expected %ld\n", rank,
                    target, (long)sz, maxbytes);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        MPI_Win_lock_all(MPI_MODE_NOCHECK, shwin);
    }

    for (int m = 0; m < M_COUNT; m++) {
        if (!on[m])
            continue;
        if (m == M_FOP || m == M_CAS)
            cell(label, m, 8, target_s, nbatch);
        else if (m == M_FENCE || m == M_LOCK)
            cell(label, m, 0, target_s, nbatch);
        else
            for (int k = 0; k < nsizes; k++)
                cell(label, m, sizes[k], target_s, nbatch);
    }

    if (on[M_SHM_STORE]) {
        MPI_Win_unlock_all(shwin);
        MPI_Win_free(&shwin);
        MPI_Comm_free(&shcomm);
    }
    MPI_Win_free(&win);
    free(src);
    free(dst);
    MPI_Finalize();
    return 0;
}
