/* The MPI_Info functions work at any time (MPI-4.0; MPICH allows it): an info object
 * created and filled before MPI_Init keeps its entries through MPI_Init and
 * MPI_Finalize, and can be read, duplicated and freed after MPI_Finalize. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            failures++;                                                     \
            fprintf(stderr, "FAIL line %d: ", __LINE__);                    \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
        }                                                                   \
    } while (0)

int main(int argc, char **argv) {
    MPI_Info info, dup;
    int flag = 0, n = 0, len = 0;
    char v[32] = "";
    CHECK(MPI_Info_create(&info) == MPI_SUCCESS, "MPI_Info_create before MPI_Init");
    CHECK(MPI_Info_set(info, "first", "before") == MPI_SUCCESS, "MPI_Info_set before MPI_Init");
    MPI_Info_get_valuelen(info, "first", &len, &flag);
    CHECK(flag && len == 6, "valuelen before MPI_Init: %d %d", flag, len);
    /* MPI_Info_create_env: the same entries before MPI_Init, in between (where
     * MPI_INFO_ENV has them too) and after MPI_Finalize; "command" is this program. */
    MPI_Info env0, env1, env2;
    MPI_Info_create_env(argc, argv, &env0);
    char cmd[256] = "";
    MPI_Info_get(env0, "command", sizeof cmd - 1, cmd, &flag);
    CHECK(flag && strstr(cmd, "info_anytime") != NULL, "command before MPI_Init: %d '%s'", flag, cmd);
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Info_get(info, "first", sizeof v - 1, v, &flag);
    CHECK(flag && strcmp(v, "before") == 0, "the entry set before MPI_Init: %d '%s'", flag, v);
    MPI_Info_set(info, "second", "during");
    MPI_Info_create_env(0, NULL, &env1);
    char mp[32] = "";
    MPI_Info_get(MPI_INFO_ENV, "maxprocs", sizeof mp - 1, mp, &flag);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(flag && atoi(mp) == size, "MPI_INFO_ENV maxprocs: %d '%s'", flag, mp);
    MPI_Finalize();
    MPI_Info_create_env(0, NULL, &env2);
    int n0 = -1, n1 = -2, n2 = -3;
    MPI_Info_get_nkeys(env0, &n0);
    MPI_Info_get_nkeys(env1, &n1);
    MPI_Info_get_nkeys(env2, &n2);
    CHECK(n0 == n1 && n1 == n2 && n0 >= 3, "create_env key counts %d %d %d", n0, n1, n2);
    for (int i = 0; i < n0 && n0 == n1 && n1 == n2; i++) {
        char k[MPI_MAX_INFO_KEY], v0[256], v1[256], v2[256];
        int f0, f1, f2;
        MPI_Info_get_nthkey(env0, i, k);
        MPI_Info_get(env0, k, 255, v0, &f0);
        MPI_Info_get(env1, k, 255, v1, &f1);
        MPI_Info_get(env2, k, 255, v2, &f2);
        CHECK(f0 && f1 && f2 && !strcmp(v0, v1) && !strcmp(v1, v2), "create_env %s: '%s' '%s' '%s'", k, v0,
              v1, v2);
    }
    MPI_Info_free(&env0);
    MPI_Info_free(&env1);
    MPI_Info_free(&env2);
    CHECK(MPI_Info_dup(info, &dup) == MPI_SUCCESS, "MPI_Info_dup after MPI_Finalize");
    MPI_Info_get_nkeys(dup, &n);
    CHECK(n == 2, "nkeys after MPI_Finalize: %d", n);
    char key[MPI_MAX_INFO_KEY];
    MPI_Info_get_nthkey(dup, 1, key);
    MPI_Info_get(dup, key, sizeof v - 1, v, &flag);
    CHECK(strcmp(key, "second") == 0 && flag && strcmp(v, "during") == 0,
          "entry 1 after MPI_Finalize: '%s' %d '%s'", key, flag, v);
    MPI_Info_delete(dup, "first");
    MPI_Info_get_nkeys(dup, &n);
    CHECK(n == 1, "nkeys after delete: %d", n);
    MPI_Info_free(&info);
    MPI_Info_free(&dup);
    CHECK(info == MPI_INFO_NULL && dup == MPI_INFO_NULL, "MPI_Info_free after MPI_Finalize");
    if (!failures) printf("info_anytime: rank %d ok\n", rank);
    return failures != 0;
}
