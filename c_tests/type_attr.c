/* Attributes on datatypes (MPI_Type_create_keyval, Type_set_attr, Type_get_attr,
 * Type_delete_attr, Type_free_keyval): the copy callback runs on MPI_Type_dup and
 * decides what the new type keeps, the delete callback runs on Type_delete_attr, on
 * replacing a value and on MPI_Type_free (last set first), predefined types carry
 * attributes too, a freed key stays usable by the types that have it, and a key of one
 * kind is an error (MPI_ERR_KEYVAL) on another kind of object. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* What the callbacks saw, in order. */
static int ndel, del_val[16], del_type_ok[16];
static int ncopy, copy_val[16];
static MPI_Datatype expect_type;

static int on_delete(MPI_Datatype t, int key, void *val, void *extra) {
    (void)key;
    if (ndel < 16) {
        del_val[ndel] = (int)(long)val;
        del_type_ok[ndel] = t == expect_type && extra == (void *)&ndel;
    }
    ndel++;
    return MPI_SUCCESS;
}

/* Keeps odd values doubled, drops even ones, fails on 99. */
static int on_copy(MPI_Datatype old, int key, void *extra, void *in, void *out, int *flag) {
    (void)key, (void)extra;
    int v = (int)(long)in;
    if (ncopy < 16) copy_val[ncopy] = v;
    ncopy++;
    if (old != expect_type) return MPI_ERR_OTHER;
    if (v == 99) return MPI_ERR_OTHER;
    *flag = v % 2;
    *(void **)out = (void *)(long)(2 * v);
    return MPI_SUCCESS;
}

static int get(MPI_Datatype t, int key, long *v) {
    void *p = NULL;
    int flag = -1;
    int rc = MPI_Type_get_attr(t, key, &p, &flag);
    CHECK(rc == MPI_SUCCESS, "MPI_Type_get_attr returned %d", rc);
    *v = (long)p;
    return flag;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    int k1, k2, kdup, knull;
    MPI_Type_create_keyval(on_copy, on_delete, &k1, &ndel);
    MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, on_delete, &k2, &ndel);
    MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &kdup, NULL);
    MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &knull, NULL);
    CHECK(k1 != k2 && k1 != MPI_KEYVAL_INVALID, "keys %d %d", k1, k2);

    MPI_Datatype vec, dup, dup2;
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
    expect_type = vec;
    long v;
    CHECK(get(vec, k1, &v) == 0, "no attribute yet");

    MPI_Type_set_attr(vec, k1, (void *)7L);
    MPI_Type_set_attr(vec, k2, (void *)8L);
    MPI_Type_set_attr(vec, kdup, (void *)9L);
    CHECK(get(vec, k1, &v) == 1 && v == 7, "k1 on vec: %ld", v);
    CHECK(get(vec, k2, &v) == 1 && v == 8, "k2 on vec: %ld", v);

    /* Replacing a value deletes the old one. */
    MPI_Type_set_attr(vec, k1, (void *)5L);
    CHECK(ndel == 1 && del_val[0] == 7 && del_type_ok[0], "replace: ndel %d val %d", ndel, del_val[0]);
    CHECK(get(vec, k1, &v) == 1 && v == 5, "k1 after replace: %ld", v);

    /* The library's own uses of a type run no callbacks (a persistent request keeps a
     * copy of its datatype). */
    MPI_Type_commit(&vec);
    int buf[6] = {0};
    MPI_Request preq;
    MPI_Send_init(buf, 1, vec, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &preq);
    MPI_Request_free(&preq);
    CHECK(ncopy == 0 && ndel == 1, "a persistent request ran callbacks: %d copies, %d deletes", ncopy, ndel - 1);

    /* Dup: k1's callback keeps 5 as 10, k2 (NULL_COPY) is not copied, kdup copies 9. */
    MPI_Type_dup(vec, &dup);
    CHECK(ncopy == 1 && copy_val[0] == 5, "copy calls %d (val %d)", ncopy, copy_val[0]);
    CHECK(get(dup, k1, &v) == 1 && v == 10, "k1 on dup: %ld", v);
    CHECK(get(dup, k2, &v) == 0, "k2 copied by MPI_TYPE_NULL_COPY_FN");
    CHECK(get(dup, kdup, &v) == 1 && v == 9, "kdup on dup: %ld", v);
    CHECK(get(vec, k1, &v) == 1 && v == 5, "the original keeps its value: %ld", v);

    /* An even value is not kept; a failing copy callback fails MPI_Type_dup. */
    expect_type = dup;
    MPI_Type_set_attr(dup, k1, (void *)4L); /* deletes 10 */
    MPI_Type_dup(dup, &dup2);
    CHECK(get(dup2, k1, &v) == 0, "flag 0 from the copy callback still copied");
    CHECK(get(dup2, kdup, &v) == 1 && v == 9, "kdup on dup2: %ld", v);
    MPI_Type_free(&dup2);
    MPI_Type_set_attr(dup, k1, (void *)99L); /* deletes 4 */
    MPI_Datatype bad = MPI_INT;
    int rc = MPI_Type_dup(dup, &bad);
    CHECK(rc != MPI_SUCCESS && bad == MPI_DATATYPE_NULL, "a failing copy callback: MPI_Type_dup rc %d", rc);

    /* Type_delete_attr runs the delete callback; deleting again is an error. */
    int before = ndel;
    rc = MPI_Type_delete_attr(dup, k1);
    CHECK(rc == MPI_SUCCESS && ndel == before + 1 && del_val[before] == 99, "delete_attr: rc %d", rc);
    CHECK(get(dup, k1, &v) == 0, "k1 still set after delete");
    rc = MPI_Type_delete_attr(dup, k1);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "deleting a missing attribute: class %d", cls);

    /* MPI_Type_free runs the delete callbacks, last set first. */
    expect_type = vec;
    before = ndel;
    MPI_Type_free(&vec);
    CHECK(vec == MPI_DATATYPE_NULL, "MPI_Type_free did not set MPI_DATATYPE_NULL");
    CHECK(ndel == before + 2 && del_val[before] == 5 && del_val[before + 1] == 8 && del_type_ok[before] &&
              del_type_ok[before + 1],
          "free: %d deletes (%d, %d)", ndel - before, del_val[before], del_val[before + 1]);

    /* Predefined types carry attributes. */
    MPI_Type_set_attr(MPI_DOUBLE, knull, (void *)42L);
    CHECK(get(MPI_DOUBLE, knull, &v) == 1 && v == 42, "attribute on MPI_DOUBLE: %ld", v);
    CHECK(get(MPI_INT, knull, &v) == 0, "MPI_INT has MPI_DOUBLE's attribute");
    MPI_Type_delete_attr(MPI_DOUBLE, knull);
    CHECK(get(MPI_DOUBLE, knull, &v) == 0, "MPI_DOUBLE keeps a deleted attribute");

    /* A freed key stays usable by the types that have it until they delete it. */
    MPI_Type_set_attr(dup, k2, (void *)3L);
    int k2copy = k2;
    MPI_Type_free_keyval(&k2);
    CHECK(k2 == MPI_KEYVAL_INVALID, "free_keyval did not reset the key");
    CHECK(get(dup, k2copy, &v) == 1 && v == 3, "attribute of a freed key: %ld", v);
    rc = MPI_Type_set_attr(dup, k2copy, (void *)4L);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "setting a freed key: class %d", cls);
    expect_type = dup;
    before = ndel;
    MPI_Type_free(&dup);
    CHECK(ndel == before + 1 && del_val[before] == 3, "free ran %d deletes", ndel - before);

    /* Keys of one kind are errors on the other; invalid keys and types. */
    int ckey;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ckey, NULL);
    rc = MPI_Type_set_attr(MPI_INT, ckey, (void *)1L);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "communicator key on a datatype: class %d", cls);
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, k1, (void *)1L);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "datatype key on a communicator: class %d", cls);
    int k1copy = k1;
    rc = MPI_Comm_free_keyval(&k1copy);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "MPI_Comm_free_keyval of a datatype key: class %d", cls);
    rc = MPI_Type_set_attr(MPI_INT, MPI_KEYVAL_INVALID, (void *)1L);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "MPI_KEYVAL_INVALID: class %d", cls);
    rc = MPI_Type_set_attr(MPI_DATATYPE_NULL, k1, (void *)1L);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "MPI_DATATYPE_NULL: class %d", cls);
    /* Freeing a key again through a copy of its handle: not an error while an object
     * still has an attribute with it (MPICH and Open MPI agree), an error once none
     * has; deleting the attribute afterwards still runs its callback. */
    int kin, kin_copy, kin_saved, kout, kout_copy;
    MPI_Comm tmp;
    MPI_Comm_dup(MPI_COMM_SELF, &tmp);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kin, NULL);
    kin_copy = kin_saved = kin;
    MPI_Comm_set_attr(tmp, kin, (void *)5L);
    rc = MPI_Comm_free_keyval(&kin);
    CHECK(rc == MPI_SUCCESS && kin == MPI_KEYVAL_INVALID, "first free of a used key: %d", rc);
    rc = MPI_Comm_free_keyval(&kin_copy);
    CHECK(rc == MPI_SUCCESS, "second free of a key still in use: %d", rc);
    void *got;
    int found;
    rc = MPI_Comm_get_attr(tmp, kin_saved, &got, &found);
    CHECK(rc == MPI_SUCCESS && found && got == (void *)5L, "the attribute of a freed key: %d %d", rc, found);
    MPI_Comm_free(&tmp);
    rc = MPI_Comm_free_keyval(&kin_saved);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "a third free once no object has the key: class %d", cls);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kout, NULL);
    kout_copy = kout;
    MPI_Comm_free_keyval(&kout);
    rc = MPI_Comm_free_keyval(&kout_copy);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "a second free of an unused key: class %d", cls);

    MPI_Comm_free_keyval(&ckey);
    MPI_Type_free_keyval(&k1);
    MPI_Type_free_keyval(&kdup);
    MPI_Type_free_keyval(&knull);

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "FAILED: %d failures\n" : "No Errors\n", total);
    MPI_Finalize();
    return total != 0;
}
