/* Small points of the standard that conformance suites check:
 * - MPI_Finalize first frees MPI_COMM_SELF: the delete callbacks of its attributes run,
 *   last set first, while MPI is still initialised (MPI-3.1 section 8.7.1);
 * - calls that return a single status (Recv, Wait, Test, Probe, Iprobe, Sendrecv) leave
 *   its MPI_ERROR field alone; only the multiple-completion calls set it (3.2.5);
 * - MPI_LASTUSEDCODE is at least MPI_ERR_LASTCODE and every added code (8.5);
 * - MPI_Add_error_class/code/string (also as what a copy callback returns),
 *   MPI_Status_set_elements(_x)/cancelled,
 *   MPI_Comm_set_info/get_info, MPI_Info_get_string;
 * - MPI_Pcontrol returns MPI_SUCCESS for any level and extra arguments (14.2.4). */
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

static int deleted[3], order[3], ndel, finalized_inside = -1;

static int del(MPI_Comm comm, int key, void *val, void *extra) {
    (void)comm, (void)key, (void)extra;
    int i = (int)(long)val;
    deleted[i]++;
    order[ndel++] = i;
    MPI_Finalized(&finalized_inside);
    return MPI_SUCCESS;
}

static int copies_deleted;

static int copy_ret = MPI_ERR_OTHER;

static int copy_or_fail(MPI_Comm comm, int key, void *extra, void *in, void *out, int *flag) {
    (void)comm, (void)key, (void)extra;
    if ((long)in == 2) return copy_ret;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Comm comm, int key, void *val, void *extra) {
    (void)comm, (void)key, (void)val, (void)extra;
    copies_deleted++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* MPI_Pcontrol: a profiling hook that returns at once */
    CHECK(MPI_Pcontrol(0) == MPI_SUCCESS, "MPI_Pcontrol(0)");
    CHECK(MPI_Pcontrol(1) == MPI_SUCCESS, "MPI_Pcontrol(1)");
    CHECK(MPI_Pcontrol(7, "extra", 2.5, 3) == MPI_SUCCESS, "MPI_Pcontrol(7, ...)");

    /* MPI_LASTUSEDCODE */
    int *last, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag);
    CHECK(flag && *last >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE %d < MPI_ERR_LASTCODE %d", flag ? *last : -1,
          MPI_ERR_LASTCODE);

    /* MPI_ERROR untouched by single-status calls */
    int right = (rank + 1) % size, left = (rank + size - 1) % size, x = rank, y = -1;
    MPI_Status st;
    MPI_Request r;
    st.MPI_ERROR = MPI_ERR_DIMS;
    MPI_Sendrecv(&x, 1, MPI_INT, right, 1, &y, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS && y == left, "Sendrecv: MPI_ERROR %d, y %d", st.MPI_ERROR, y);
    MPI_Isend(&x, 1, MPI_INT, right, 2, MPI_COMM_WORLD, &r);
    st.MPI_ERROR = MPI_ERR_DIMS;
    MPI_Probe(left, 2, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS && st.MPI_SOURCE == left, "Probe");
    flag = 0;
    while (!flag) {
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Iprobe(left, 2, MPI_COMM_WORLD, &flag, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Iprobe");
    }
    st.MPI_ERROR = MPI_ERR_DIMS;
    MPI_Recv(&y, 1, MPI_INT, left, 2, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Recv");
    st.MPI_ERROR = MPI_ERR_DIMS;
    MPI_Wait(&r, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Wait");
    MPI_Irecv(&y, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &r);
    st.MPI_ERROR = MPI_ERR_DIMS;
    flag = 0;
    while (!flag) MPI_Test(&r, &flag, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS && st.MPI_SOURCE == MPI_PROC_NULL, "Test");
    st.MPI_ERROR = MPI_ERR_DIMS;
    MPI_Recv(&y, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Recv from MPI_PROC_NULL");

    /* Error classes and codes added by the program */
    int ecls, ecode, c2, len, lastv;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Add_error_class(&ecls);
    MPI_Add_error_code(ecls, &ecode);
    MPI_Add_error_code(MPI_ERR_ARG, &c2);
    CHECK(ecls > MPI_ERR_LASTCODE && ecode != ecls && c2 != ecode, "added values %d %d %d", ecls, ecode, c2);
    MPI_Add_error_string(ecode, "the widget is broken");
    MPI_Error_string(ecode, msg, &len);
    CHECK(strcmp(msg, "the widget is broken") == 0 && len == 20, "added string: '%s' (%d)", msg, len);
    int k;
    MPI_Error_class(ecode, &k);
    CHECK(k == ecls, "class of added code: %d, not %d", k, ecls);
    MPI_Error_class(c2, &k);
    CHECK(k == MPI_ERR_ARG, "class of a code added to MPI_ERR_ARG: %d", k);
    MPI_Error_class(ecls, &k);
    CHECK(k == ecls, "an added class is its own class");
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag);
    lastv = *last;
    CHECK(lastv >= ecls && lastv >= ecode && lastv >= c2, "MPI_LASTUSEDCODE %d after adding", lastv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Add_error_string(MPI_ERR_ARG, "no") != MPI_SUCCESS, "a predefined code's string cannot be set");
    CHECK(MPI_Add_error_code(ecode, &k) != MPI_SUCCESS, "a code is not a class");
    CHECK(MPI_Comm_call_errhandler(MPI_COMM_WORLD, ecode) == MPI_SUCCESS, "call_errhandler");

    /* Empty messages with MPI_DATATYPE_NULL (count 0), as MPICH accepts them; with a
     * count it is still an error. */
    {
        MPI_Request pr;
        MPI_Status pst;
        int cnt0 = -1;
        CHECK(MPI_Sendrecv(NULL, 0, MPI_DATATYPE_NULL, right, 77, NULL, 0, MPI_DATATYPE_NULL, left, 77,
                           MPI_COMM_WORLD, &pst) == MPI_SUCCESS,
              "an empty Sendrecv with MPI_DATATYPE_NULL");
        MPI_Get_count(&pst, MPI_INT, &cnt0);
        CHECK(cnt0 == 0 && pst.MPI_SOURCE == left, "empty message: count %d source %d", cnt0, pst.MPI_SOURCE);
        CHECK(MPI_Send_init(NULL, 0, MPI_DATATYPE_NULL, right, 78, MPI_COMM_WORLD, &pr) == MPI_SUCCESS,
              "an empty Send_init with MPI_DATATYPE_NULL");
        MPI_Start(&pr);
        MPI_Recv(NULL, 0, MPI_DATATYPE_NULL, left, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&pr, MPI_STATUS_IGNORE);
        MPI_Request_free(&pr);
        int one = 1, cls1 = -1;
        MPI_Error_class(MPI_Send(&one, 1, MPI_DATATYPE_NULL, right, 79, MPI_COMM_WORLD), &cls1);
        CHECK(cls1 == MPI_ERR_TYPE, "count 1 of MPI_DATATYPE_NULL: class %d", cls1);
    }

    /* Status setters (generalized requests and layered libraries use them) */
    MPI_Datatype three;
    MPI_Type_contiguous(3, MPI_INT, &three);
    MPI_Type_commit(&three);
    MPI_Status_set_elements(&st, three, 7);
    MPI_Status_set_cancelled(&st, 1);
    int cnt, el;
    MPI_Get_elements(&st, three, &el);
    MPI_Get_count(&st, three, &cnt);
    MPI_Test_cancelled(&st, &flag);
    CHECK(el == 7 && cnt == MPI_UNDEFINED && flag, "set_elements 7: elements %d count %d cancelled %d", el, cnt, flag);
    MPI_Status_set_elements_x(&st, MPI_INT, (MPI_Count)6);
    MPI_Get_count(&st, three, &cnt);
    MPI_Test_cancelled(&st, &flag);
    CHECK(cnt == 2 && flag, "set_elements_x 6: count %d cancelled %d", cnt, flag);
    MPI_Status_set_cancelled(&st, 0);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag, "set_cancelled 0");
    /* the status holds 63 bits of count */
    MPI_Count big = (MPI_Count)0x7654321ff1234567LL, big2 = 0;
    MPI_Status_set_elements_x(&st, MPI_BYTE, big);
    MPI_Get_elements_x(&st, MPI_BYTE, &big2);
    MPI_Test_cancelled(&st, &flag);
    CHECK(big2 == big && !flag, "set_elements_x %llx: got %llx, cancelled %d", (long long)big, (long long)big2, flag);
    MPI_Type_free(&three);

    /* Communicator info: the hint shmpi reads, set and read back; MPI_Info_get_string */
    MPI_Info in, out;
    MPI_Info_create(&in);
    MPI_Info_set(in, "shmpi_check_args", "false");
    MPI_Info_set(in, "some_other_hint", "ignored");
    MPI_Comm_set_info(MPI_COMM_WORLD, in);
    MPI_Comm_get_info(MPI_COMM_WORLD, &out);
    char val[64];
    int blen = sizeof val;
    MPI_Info_get_string(out, "shmpi_check_args", &blen, val, &flag);
    CHECK(flag && strcmp(val, "false") == 0 && blen == 6, "get_info: '%s' (%d)", val, blen);
    blen = 3;
    MPI_Info_get_string(out, "shmpi_check_args", &blen, val, &flag);
    CHECK(flag && strcmp(val, "fa") == 0 && blen == 6, "get_string truncated: '%s' (%d)", val, blen);
    blen = 0;
    MPI_Info_get_string(in, "nope", &blen, val, &flag);
    CHECK(!flag && blen == 0, "get_string of a missing key");
    MPI_Info_free(&out);
    MPI_Info_set(in, "shmpi_check_args", "true");
    MPI_Comm_set_info(MPI_COMM_WORLD, in);
    MPI_Info_free(&in);

    /* A failing copy callback fails MPI_Comm_dup: newcomm is MPI_COMM_NULL, the copy
     * made before the failure is deleted again. */
    {
        int kok, kbad;
        MPI_Comm base, d = MPI_COMM_WORLD;
        MPI_Comm_dup(MPI_COMM_WORLD, &base);
        MPI_Comm_set_errhandler(base, MPI_ERRORS_RETURN);
        MPI_Comm_create_keyval(copy_or_fail, count_delete, &kok, NULL);
        MPI_Comm_create_keyval(copy_or_fail, count_delete, &kbad, NULL);
        MPI_Comm_set_attr(base, kok, (void *)1L);
        MPI_Comm_set_attr(base, kbad, (void *)2L);
        int rc = MPI_Comm_dup(base, &d), cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_OTHER && d == MPI_COMM_NULL && copies_deleted == 1,
              "failing copy callback: class %d, newcomm %s, %d copies deleted", cls,
              d == MPI_COMM_NULL ? "MPI_COMM_NULL" : "set", copies_deleted);
        /* What the callback returns decides the class: a code MPI does not know is
         * MPI_ERR_UNKNOWN; a code the program added comes back as it is, with its class
         * and string. */
        int rets[2] = {12345, ecode}, want[2] = {MPI_ERR_UNKNOWN, ecls};
        for (int i = 0; i < 2; i++) {
            copy_ret = rets[i];
            rc = MPI_Comm_dup(base, &d);
            MPI_Error_class(rc, &cls);
            CHECK(rc != MPI_SUCCESS && cls == want[i] && d == MPI_COMM_NULL,
                  "copy callback returning %d: class %d, not %d", rets[i], cls, want[i]);
        }
        MPI_Error_string(rc, msg, &len);
        CHECK(strcmp(msg, "the widget is broken") == 0, "string of the passed-on code: %s", msg);
        copy_ret = MPI_ERR_OTHER;
        CHECK(copies_deleted == 3, "each failed dup deletes its copy: %d", copies_deleted);
        MPI_Comm_delete_attr(base, kbad);
        MPI_Comm_free(&base);
        CHECK(copies_deleted == 5, "deletes after freeing: %d", copies_deleted);
        MPI_Comm_free_keyval(&kok);
        MPI_Comm_free_keyval(&kbad);
    }

    /* Attributes on MPI_COMM_SELF: deleted by MPI_Finalize, last set first */
    for (long i = 0; i < 3; i++) {
        int k;
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del, &k, NULL);
        MPI_Comm_set_attr(MPI_COMM_SELF, k, (void *)i);
    }
    int fails = failures;
    MPI_Finalize();
    failures = fails;
    CHECK(deleted[0] == 1 && deleted[1] == 1 && deleted[2] == 1, "delete callbacks ran %d %d %d times",
          deleted[0], deleted[1], deleted[2]);
    CHECK(order[0] == 2 && order[1] == 1 && order[2] == 0, "delete order %d %d %d", order[0], order[1],
          order[2]);
    CHECK(finalized_inside == 0, "MPI_Finalized in the callback said %d", finalized_inside);
    if (!failures) printf("conform_misc: rank %d ok\n", rank);
    return failures != 0;
}
