/* Running out of communicator contexts (a job-wide pool) under MPI_ERRORS_RETURN: every
 * collective constructor must fail on every rank at the same call with the same error
 * class, or succeed everywhere. Each phase creates communicators until the first error:
 *   split   MPI_Comm_split(MPI_COMM_WORLD, color=rank): a new context per rank per call
 *   create  MPI_Comm_create of the single-rank groups {0}, {1}, ... in turn
 *   undef   MPI_Comm_split with MPI_UNDEFINED for all but one rank, in turn
 *   dup     MPI_Comm_dup(MPI_COMM_WORLD)
 *   idup    MPI_Comm_idup(MPI_COMM_WORLD) and MPI_Wait
 *   half    MPI_Comm_dup of a half of MPI_COMM_WORLD (a subcommunicator as the parent)
 *   inter   MPI_Comm_split(inter, color=local rank) of an intercommunicator between the
 *           even and the odd ranks (an allocation per colour present in both groups)
 * After the error every rank compares the call number and class with the others, uses
 * MPI_COMM_WORLD (barrier, allreduce), frees half of its communicators and checks that a
 * constructor works again, then frees the rest. Finally the split phase runs again and
 * must stop at the same call as the first time: no context was leaked. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures;

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

#define MAXC 5000

enum { SPLIT, CREATE, UNDEF, DUP, IDUP, HALF, INTER };
static const char *names[] = {"split", "create", "undef", "dup", "idup", "half", "inter"};

/* One constructor call of phase `ph`, number `i`, on `parent` (MPI_COMM_WORLD or the
 * half-communicator); returns its error code. */
static int construct(int ph, int i, MPI_Comm parent, MPI_Comm *out) {
    MPI_Group wg, g;
    int incl = i % size, rc;
    MPI_Request req;
    switch (ph) {
    case SPLIT:
        return MPI_Comm_split(parent, rank, 0, out);
    case INTER:
        MPI_Comm_rank(parent, &rc);
        return MPI_Comm_split(parent, rc, 0, out);
    case CREATE:
        MPI_Comm_group(parent, &wg);
        MPI_Group_incl(wg, 1, &incl, &g);
        rc = MPI_Comm_create(parent, g, out);
        MPI_Group_free(&g);
        MPI_Group_free(&wg);
        return rc;
    case UNDEF:
        return MPI_Comm_split(parent, rank == incl ? 0 : MPI_UNDEFINED, 0, out);
    case DUP:
    case HALF:
        return MPI_Comm_dup(parent, out);
    case IDUP:
        rc = MPI_Comm_idup(parent, out, &req);
        if (rc != MPI_SUCCESS) return rc;
        return MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    return MPI_ERR_OTHER;
}

/* Exhausts the contexts with phase `ph` on `parent`, whose processes are those of the
 * intracommunicator `agree`; returns the number of successful calls. */
static int exhaust(int ph, MPI_Comm parent, MPI_Comm agree, MPI_Comm *held) {
    int n = 0, rc = MPI_SUCCESS, cls = MPI_SUCCESS, len, psize, prank;
    char msg[MPI_MAX_ERROR_STRING] = "";
    MPI_Comm_size(agree, &psize);
    MPI_Comm_rank(agree, &prank);
    while (n < MAXC) {
        held[n] = MPI_COMM_NULL;
        rc = construct(ph, n, parent, &held[n]);
        if (rc != MPI_SUCCESS) break;
        n++;
    }
    CHECK(n < MAXC, "%s: %d calls without running out", names[ph], n);
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
        CHECK(strstr(msg, "context") != NULL, "%s: message does not name contexts: %s",
              names[ph], msg);
        if (ph != IDUP) /* (MPI_Wait reports the request's error under its own name) */
            CHECK(strstr(msg, ph == SPLIT || ph == UNDEF || ph == INTER ? "MPI_Comm_split"
                              : ph == CREATE           ? "MPI_Comm_create"
                                                       : "MPI_Comm_dup") != NULL,
                  "%s: message does not name the function: %s", names[ph], msg);
    }
    if (rank == 0) printf("%s (np %d): first error at call %d: class %d: %s\n", names[ph],
                          psize, n, cls, msg);
    /* Every member of the parent stopped at the same call with the same class. */
    int mine[2] = {n, cls}, *all = malloc(2 * psize * sizeof(int));
    int arc = MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, agree);
    CHECK(arc == MPI_SUCCESS, "%s: MPI_Allgather after the error failed (%d)", names[ph], arc);
    if (arc == MPI_SUCCESS)
        for (int r = 0; r < psize; r++)
            CHECK(all[2 * r] == n && all[2 * r + 1] == cls,
                  "%s: rank %d stopped at call %d class %d, parent rank %d at call %d class %d",
                  names[ph], prank, n, cls, r, all[2 * r], all[2 * r + 1]);
    free(all);
    CHECK(cls == MPI_ERR_OTHER, "%s: error class %d, expected MPI_ERR_OTHER", names[ph], cls);
    CHECK(MPI_Barrier(agree) == MPI_SUCCESS, "%s: barrier after the error", names[ph]);
    CHECK(MPI_Barrier(parent) == MPI_SUCCESS, "%s: parent barrier after the error", names[ph]);
    /* The communicators made are usable. */
    for (int i = 0; i < n; i += 97)
        if (held[i] != MPI_COMM_NULL)
            CHECK(MPI_Barrier(held[i]) == MPI_SUCCESS, "%s: barrier on communicator %d",
                  names[ph], i);
    return n;
}

/* Frees the held communicators: first half of them, then a constructor of the same
 * phase must work again (on every rank), then the rest. */
static void release(int ph, MPI_Comm parent, MPI_Comm agree, MPI_Comm *held, int n) {
    for (int i = 0; i < n / 2; i++)
        if (held[i] != MPI_COMM_NULL) MPI_Comm_free(&held[i]);
    MPI_Barrier(agree);
    MPI_Comm again = MPI_COMM_NULL;
    int rc = construct(ph, 0, parent, &again);
    CHECK(rc == MPI_SUCCESS, "%s: creation after freeing half failed (%d)", names[ph], rc);
    if (rc == MPI_SUCCESS && again != MPI_COMM_NULL) {
        int s = -1, one = 1;
        CHECK(MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, again) == MPI_SUCCESS && s > 0,
              "%s: allreduce on the new communicator", names[ph]);
        MPI_Comm_free(&again);
    }
    for (int i = n / 2; i < n; i++)
        if (held[i] != MPI_COMM_NULL) MPI_Comm_free(&held[i]);
    CHECK(MPI_Barrier(agree) == MPI_SUCCESS, "%s: barrier after freeing", names[ph]);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm *held = malloc(MAXC * sizeof(MPI_Comm));
    int first = -1;
    for (int ph = SPLIT; ph <= IDUP; ph++) {
        int n = exhaust(ph, MPI_COMM_WORLD, MPI_COMM_WORLD, held);
        if (ph == SPLIT) first = n;
        release(ph, MPI_COMM_WORLD, MPI_COMM_WORLD, held, n);
    }
    /* A subcommunicator as the parent (the even ranks; the others wait). */
    MPI_Comm halfc;
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &halfc) == MPI_SUCCESS, "half split");
    if (rank % 2 == 0) {
        int n = exhaust(HALF, halfc, halfc, held);
        release(HALF, halfc, halfc, held, n);
    }
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS, "barrier after the half phase");
    if (size > 1) {
        MPI_Comm inter;
        CHECK(MPI_Intercomm_create(halfc, 0, MPI_COMM_WORLD, 1 - rank % 2, 7, &inter) ==
                  MPI_SUCCESS,
              "MPI_Intercomm_create");
        int n = exhaust(INTER, inter, MPI_COMM_WORLD, held);
        release(INTER, inter, MPI_COMM_WORLD, held, n);
        MPI_Comm_free(&inter);
    }
    MPI_Comm_free(&halfc);
    /* Nothing leaked: the first phase stops at the same call again. */
    int n = exhaust(SPLIT, MPI_COMM_WORLD, MPI_COMM_WORLD, held);
    CHECK(n == first, "split again: %d calls, the first time %d (contexts leaked)", n, first);
    release(SPLIT, MPI_COMM_WORLD, MPI_COMM_WORLD, held, n);
    free(held);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "FAILED\n" : "OK\n");
    MPI_Finalize();
    return total != 0;
}
