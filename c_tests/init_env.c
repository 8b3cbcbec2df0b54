/* Start-up and environment inquiries: MPI_Initialized/MPI_Finalized around MPI_Init_thread,
 * thread levels (MPI_Query_thread, MPI_Is_thread_main), MPI_Get_version (also before
 * init), MPI_Get_library_version, MPI_Get_processor_name, MPI_Wtime/MPI_Wtick against the
 * system clock, the predefined attributes of MPI_COMM_WORLD, sizes and ranks of
 * MPI_COMM_WORLD and MPI_COMM_SELF, MPI_Comm_get_parent, MPI_Comm_test_inter and
 * communicator names. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_rank = -1;
static int g_after_finalize = 0;

#define CHECK(cond, ...)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "init_env: rank %d: %s:%d: check failed: %s: ", g_rank, \
                    __FILE__, __LINE__, #cond);                                      \
            fprintf(stderr, __VA_ARGS__);                                            \
            fprintf(stderr, "\n");                                                   \
            fflush(stderr);                                                          \
            if (g_after_finalize) exit(1);                                           \
            if (g_rank < 0) exit(1);                                                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                            \
        }                                                                            \
    } while (0)

static double mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void check_name(MPI_Comm comm, const char *want, const char *what) {
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    memset(name, 'x', sizeof name);
    CHECK(MPI_Comm_get_name(comm, name, &len) == MPI_SUCCESS, "MPI_Comm_get_name(%s)", what);
    CHECK(strcmp(name, want) == 0, "name of %s is \"%.*s\", expected \"%s\"", what, MPI_MAX_OBJECT_NAME - 1, name,
          want);
    CHECK(len == (int)strlen(want), "name length of %s is %d, expected %d", what, len, (int)strlen(want));
}

static int *get_int_attr(int key, int *flag, const char *what) {
    int *v = NULL;
    *flag = -1;
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, key, &v, flag) == MPI_SUCCESS, "MPI_Comm_get_attr(%s)", what);
    CHECK(*flag == 0 || *flag == 1, "flag for %s is %d", what, *flag);
    if (*flag) CHECK(v != NULL, "attribute %s has a NULL value pointer", what);
    return v;
}

int main(int argc, char **argv) {
    int flag = -1, version = -1, subversion = -1;

    /* ---- before MPI_Init */
    CHECK(MPI_Initialized(&flag) == MPI_SUCCESS && flag == 0, "MPI_Initialized before init gave %d", flag);
    flag = -1;
    CHECK(MPI_Finalized(&flag) == MPI_SUCCESS && flag == 0, "MPI_Finalized before init gave %d", flag);
    CHECK(MPI_Get_version(&version, &subversion) == MPI_SUCCESS, "MPI_Get_version before init");
    CHECK(version == 3 && subversion == 1, "MPI_Get_version before init: %d.%d, expected 3.1", version, subversion);

    int provided = -1, requested = MPI_THREAD_FUNNELED;
    CHECK(MPI_Init_thread(&argc, &argv, requested, &provided) == MPI_SUCCESS, "MPI_Init_thread");
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    int rank = g_rank, size = -1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* ---- thread level */
    CHECK(provided >= MPI_THREAD_SINGLE && provided <= requested,
          "MPI_Init_thread(FUNNELED) provided %d, expected between MPI_THREAD_SINGLE and MPI_THREAD_FUNNELED", provided);
    int q = -1;
    CHECK(MPI_Query_thread(&q) == MPI_SUCCESS && q == provided, "MPI_Query_thread %d, provided %d", q, provided);
    flag = -1;
    CHECK(MPI_Is_thread_main(&flag) == MPI_SUCCESS && flag == 1, "MPI_Is_thread_main gave %d", flag);
    flag = -1;
    CHECK(MPI_Initialized(&flag) == MPI_SUCCESS && flag == 1, "MPI_Initialized after init gave %d", flag);
    flag = -1;
    CHECK(MPI_Finalized(&flag) == MPI_SUCCESS && flag == 0, "MPI_Finalized before finalize gave %d", flag);

    /* ---- versions */
    version = subversion = -1;
    MPI_Get_version(&version, &subversion);
    CHECK(version == MPI_VERSION && subversion == MPI_SUBVERSION, "MPI_Get_version %d.%d, header says %d.%d",
          version, subversion, MPI_VERSION, MPI_SUBVERSION);
    CHECK(version == 3 && subversion == 1, "MPI_Get_version %d.%d, expected 3.1", version, subversion);
    {
        static char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = -1;
        memset(lib, 'x', sizeof lib);
        CHECK(MPI_Get_library_version(lib, &len) == MPI_SUCCESS, "MPI_Get_library_version");
        CHECK(memchr(lib, '\0', sizeof lib) != NULL, "library version is not terminated");
        CHECK(len == (int)strlen(lib) && len > 0, "library version length %d, strlen %d", len, (int)strlen(lib));
        CHECK(strstr(lib, "shmpi") != NULL, "library version \"%s\" does not mention shmpi", lib);
    }

    /* ---- processor name */
    {
        char name[MPI_MAX_PROCESSOR_NAME];
        int len = -1;
        memset(name, 'x', sizeof name);
        CHECK(MPI_Get_processor_name(name, &len) == MPI_SUCCESS, "MPI_Get_processor_name");
        CHECK(memchr(name, '\0', sizeof name) != NULL, "processor name is not terminated");
        CHECK(len > 0 && len == (int)strlen(name) && len < MPI_MAX_PROCESSOR_NAME, "processor name \"%s\" len %d",
              name, len);
    }

    /* ---- clocks */
    {
        double tick = MPI_Wtick();
        CHECK(tick > 0.0 && tick <= 0.01, "MPI_Wtick %g", tick);
        double prev = MPI_Wtime();
        for (int i = 0; i < 100000; i++) {
            double t = MPI_Wtime();
            CHECK(t >= prev, "MPI_Wtime went backwards: %.9f after %.9f", t, prev);
            prev = t;
        }
        /* 50 ms of sleep measured by both clocks; each MPI_Wtime reading is bracketed by
         * two CLOCK_MONOTONIC readings, so preemption cannot make the check flaky. */
        double m0a = mono_now(), w0 = MPI_Wtime(), m0b = mono_now();
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        double m1a = mono_now(), w1 = MPI_Wtime(), m1b = mono_now();
        double dw = w1 - w0, lo = m1a - m0b, hi = m1b - m0a;
        CHECK(dw >= 0.049 && dw >= lo - 1e-4 && dw <= hi + 1e-4,
              "MPI_Wtime measured %.6f s across a sleep that CLOCK_MONOTONIC measured as %.6f..%.6f s", dw, lo, hi);
    }

    /* ---- predefined attributes */
    {
        int *v = get_int_attr(MPI_TAG_UB, &flag, "MPI_TAG_UB");
        CHECK(flag && *v >= 32767, "MPI_TAG_UB: flag %d value %d", flag, flag ? *v : 0);
        int tag_ub = *v;
        v = get_int_attr(MPI_HOST, &flag, "MPI_HOST");
        CHECK(flag, "MPI_HOST not set");
        CHECK(*v == MPI_PROC_NULL || (*v >= 0 && *v < size), "MPI_HOST value %d", *v);
        v = get_int_attr(MPI_IO, &flag, "MPI_IO");
        CHECK(flag, "MPI_IO not set");
        CHECK(*v == MPI_ANY_SOURCE || *v == MPI_PROC_NULL || (*v >= 0 && *v < size), "MPI_IO value %d", *v);
        v = get_int_attr(MPI_WTIME_IS_GLOBAL, &flag, "MPI_WTIME_IS_GLOBAL");
        CHECK(flag, "MPI_WTIME_IS_GLOBAL not set");
        CHECK(*v == 0 || *v == 1, "MPI_WTIME_IS_GLOBAL value %d", *v);
        v = get_int_attr(MPI_APPNUM, &flag, "MPI_APPNUM");
        CHECK(flag, "MPI_APPNUM not set for a program started by mpiexec");
        CHECK(*v == 0, "MPI_APPNUM value %d, expected 0 (single program)", *v);
        v = get_int_attr(MPI_UNIVERSE_SIZE, &flag, "MPI_UNIVERSE_SIZE");
        CHECK(flag, "MPI_UNIVERSE_SIZE not set");
        CHECK(*v >= size, "MPI_UNIVERSE_SIZE %d smaller than the world (%d)", *v, size);
        /* The largest tag is usable. */
        int x = rank, y = -1;
        MPI_Status st;
        MPI_Sendrecv(&x, 1, MPI_INT, rank, tag_ub, &y, 1, MPI_INT, rank, tag_ub, MPI_COMM_WORLD, &st);
        CHECK(y == rank && st.MPI_TAG == tag_ub, "message with tag MPI_TAG_UB=%d: got %d tag %d", tag_ub, y,
              st.MPI_TAG);
        /* The MPI-1 name reads the same attribute. */
        int *v1 = NULL;
        flag = 0;
        MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &v1, &flag);
        CHECK(flag && v1 && *v1 == tag_ub, "MPI_Attr_get(MPI_TAG_UB) disagrees");
    }

    /* ---- sizes and ranks */
    {
        CHECK(size >= 1 && rank >= 0 && rank < size, "world rank %d size %d", rank, size);
        int s = -1, r = -1;
        MPI_Comm_size(MPI_COMM_SELF, &s);
        MPI_Comm_rank(MPI_COMM_SELF, &r);
        CHECK(s == 1 && r == 0, "MPI_COMM_SELF size %d rank %d", s, r);
        /* The world ranks are exactly 0..size-1: their sum, their maximum and their count. */
        int mine[3] = {rank, rank * rank, 1}, sums[3] = {0, 0, 0}, mx = -1;
        MPI_Allreduce(mine, sums, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&rank, &mx, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CHECK(sums[0] == size * (size - 1) / 2 && sums[1] == (size - 1) * size * (2 * size - 1) / 6 &&
                  sums[2] == size && mx == size - 1,
              "world ranks are not a permutation of 0..%d", size - 1);
        const char *env_size = getenv("PMI_SIZE");
        if (env_size) CHECK(atoi(env_size) == size, "PMI_SIZE=%s but the world size is %d", env_size, size);
    }

    /* ---- parent, inter-communicator test, names */
    {
        MPI_Comm parent = MPI_COMM_WORLD;
        CHECK(MPI_Comm_get_parent(&parent) == MPI_SUCCESS && parent == MPI_COMM_NULL,
              "MPI_Comm_get_parent is not MPI_COMM_NULL");
        flag = -1;
        CHECK(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag) == MPI_SUCCESS && flag == 0,
              "MPI_Comm_test_inter(MPI_COMM_WORLD) gave %d", flag);
        flag = -1;
        CHECK(MPI_Comm_test_inter(MPI_COMM_SELF, &flag) == MPI_SUCCESS && flag == 0,
              "MPI_Comm_test_inter(MPI_COMM_SELF) gave %d", flag);
        check_name(MPI_COMM_WORLD, "MPI_COMM_WORLD", "MPI_COMM_WORLD");
        check_name(MPI_COMM_SELF, "MPI_COMM_SELF", "MPI_COMM_SELF");
        char nm[64];
        snprintf(nm, sizeof nm, "world of rank %d", rank);
        CHECK(MPI_Comm_set_name(MPI_COMM_WORLD, nm) == MPI_SUCCESS, "MPI_Comm_set_name");
        check_name(MPI_COMM_WORLD, nm, "renamed MPI_COMM_WORLD");
        check_name(MPI_COMM_SELF, "MPI_COMM_SELF", "MPI_COMM_SELF after renaming the world");
        MPI_Comm_set_name(MPI_COMM_SELF, "me");
        check_name(MPI_COMM_SELF, "me", "renamed MPI_COMM_SELF");
        /* A name of exactly MPI_MAX_OBJECT_NAME-1 characters survives. */
        char longname[MPI_MAX_OBJECT_NAME];
        for (int i = 0; i < MPI_MAX_OBJECT_NAME - 1; i++) longname[i] = (char)('a' + i % 26);
        longname[MPI_MAX_OBJECT_NAME - 1] = '\0';
        MPI_Comm_set_name(MPI_COMM_WORLD, longname);
        check_name(MPI_COMM_WORLD, longname, "MPI_COMM_WORLD with a maximal name");
        MPI_Comm_set_name(MPI_COMM_WORLD, "MPI_COMM_WORLD");
        check_name(MPI_COMM_WORLD, "MPI_COMM_WORLD", "MPI_COMM_WORLD renamed back");
        /* The communicator still works after renaming. */
        int one = 1, total = 0;
        MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(total == size, "allreduce after renaming gave %d", total);
    }

    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    g_after_finalize = 1;
    flag = -1;
    CHECK(MPI_Finalized(&flag) == MPI_SUCCESS && flag == 1, "MPI_Finalized after finalize gave %d", flag);
    flag = -1;
    CHECK(MPI_Initialized(&flag) == MPI_SUCCESS && flag == 1, "MPI_Initialized after finalize gave %d", flag);
    version = -1;
    CHECK(MPI_Get_version(&version, &subversion) == MPI_SUCCESS && version == 3, "MPI_Get_version after finalize");
    if (rank == 0) printf("init_env: OK on %d processes (thread level %d)\n", size, provided);
    return 0;
}
