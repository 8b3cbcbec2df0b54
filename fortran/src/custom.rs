//! The routines that do more than translate arguments: CHARACTER arguments (hidden
//! lengths, blank padding), attribute values, DOUBLE PRECISION functions, and the
//! predefined attribute copy/delete procedures. Each is exported by exports.rs under the
//! eight names from the signature in functions.tsv.
use crate::rt::{self, Aint, Fint};
use std::os::raw::{c_char, c_int, c_void};

mod c {
    use std::os::raw::{c_char, c_double, c_int, c_void};
    extern "C" {
        pub fn PMPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) -> c_int;
        pub fn PMPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int;
        pub fn PMPI_Error_string(code: c_int, s: *mut c_char, resultlen: *mut c_int) -> c_int;
        pub fn PMPI_Comm_get_name(comm: c_int, name: *mut c_char, resultlen: *mut c_int) -> c_int;
        pub fn PMPI_Comm_set_name(comm: c_int, name: *const c_char) -> c_int;
        pub fn PMPI_Comm_get_attr(
            comm: c_int,
            key: c_int,
            val: *mut c_void,
            flag: *mut c_int,
        ) -> c_int;
        pub fn PMPI_Attr_get(comm: c_int, key: c_int, val: *mut c_void, flag: *mut c_int) -> c_int;
        pub fn PMPI_Comm_create_keyval(
            copy: *const c_void,
            delete: *const c_void,
            keyval: *mut c_int,
            extra: *mut c_void,
        ) -> c_int;
        pub fn PMPI_Keyval_create(
            copy: *const c_void,
            delete: *const c_void,
            keyval: *mut c_int,
            extra: *mut c_void,
        ) -> c_int;
        pub fn PMPI_Comm_free_keyval(keyval: *mut c_int) -> c_int;
        pub fn PMPI_Type_create_keyval(
            copy: *const c_void,
            delete: *const c_void,
            keyval: *mut c_int,
            extra: *mut c_void,
        ) -> c_int;
        pub fn PMPI_Type_free_keyval(keyval: *mut c_int) -> c_int;
        pub fn PMPI_Type_set_attr(datatype: c_int, key: c_int, val: *mut c_void) -> c_int;
        pub fn PMPI_Type_get_attr(
            datatype: c_int,
            key: c_int,
            val: *mut c_void,
            flag: *mut c_int,
        ) -> c_int;
        pub fn shmpi_keyval_set_fortran(keyval: c_int, lang: c_int) -> c_int;
        pub fn PMPI_Grequest_start(
            query: *const c_void,
            free: *const c_void,
            cancel: *const c_void,
            extra: *mut c_void,
            request: *mut c_int,
        ) -> c_int;
        pub fn PMPI_Request_free(request: *mut c_int) -> c_int;
        pub fn shmpi_grequest_set_fortran(request: c_int) -> c_int;
        pub fn shmpi_attr_fortran(on: c_int);
        pub fn PMPI_Win_get_name(win: c_int, name: *mut c_char, resultlen: *mut c_int) -> c_int;
        pub fn PMPI_Win_set_name(win: c_int, name: *const c_char) -> c_int;
        pub fn PMPI_Win_create_keyval(
            copy: *const c_void,
            delete: *const c_void,
            keyval: *mut c_int,
            extra: *mut c_void,
        ) -> c_int;
        pub fn PMPI_Win_free_keyval(keyval: *mut c_int) -> c_int;
        pub fn PMPI_Win_set_attr(win: c_int, key: c_int, val: *mut c_void) -> c_int;
        pub fn PMPI_Win_get_attr(
            win: c_int,
            key: c_int,
            val: *mut c_void,
            flag: *mut c_int,
        ) -> c_int;
        pub fn shmpi_win_predefined_attr(
            win: c_int,
            key: c_int,
            value: *mut i64,
            flag: *mut c_int,
        ) -> c_int;
        pub fn PMPI_Comm_set_attr(comm: c_int, key: c_int, val: *mut c_void) -> c_int;
        pub fn PMPI_Attr_put(comm: c_int, key: c_int, val: *mut c_void) -> c_int;
        pub fn PMPI_Type_get_name(
            datatype: c_int,
            name: *mut c_char,
            resultlen: *mut c_int,
        ) -> c_int;
        pub fn PMPI_Type_set_name(datatype: c_int, name: *const c_char) -> c_int;
        pub fn PMPI_Aint_add(base: isize, disp: isize) -> isize;
        pub fn PMPI_Aint_diff(addr1: isize, addr2: isize) -> isize;
        pub fn PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int;
        pub fn PMPI_Comm_spawn(
            command: *const c_char,
            argv: *const *const c_char,
            maxprocs: c_int,
            info: c_int,
            root: c_int,
            comm: c_int,
            intercomm: *mut c_int,
            errcodes: *mut c_int,
        ) -> c_int;
        pub fn PMPI_Comm_spawn_multiple(
            count: c_int,
            commands: *const *const c_char,
            argvs: *const *const *const c_char,
            maxprocs: *const c_int,
            infos: *const c_int,
            root: c_int,
            comm: c_int,
            intercomm: *mut c_int,
            errcodes: *mut c_int,
        ) -> c_int;
        pub fn PMPI_Cart_sub(comm: c_int, remain_dims: *const c_int, newcomm: *mut c_int) -> c_int;
        pub fn shmpi_cart_ndims(comm: c_int) -> c_int;
        pub fn PMPI_Wtime() -> c_double;
        pub fn PMPI_Wtick() -> c_double;
        pub fn PMPI_Info_create_env(argc: c_int, argv: *mut *mut c_char, info: *mut c_int)
            -> c_int;
    }
}

// C lengths of the string results (MPI_MAX_* of the C header: Fortran's + 1).
const C_MAX_LIBRARY_VERSION: usize = crate::abi::MPI_MAX_LIBRARY_VERSION_STRING as usize + 1;
const C_MAX_PROCESSOR_NAME: usize = crate::abi::MPI_MAX_PROCESSOR_NAME as usize + 1;
const C_MAX_ERROR_STRING: usize = crate::abi::MPI_MAX_ERROR_STRING as usize + 1;
const C_MAX_OBJECT_NAME: usize = crate::abi::MPI_MAX_OBJECT_NAME as usize + 1;

/// Calls a C function that writes a string of at most `cap` bytes and its length, then
/// hands the string to Fortran blank-padded.
unsafe fn string_result(
    cap: usize,
    out: *mut u8,
    out_len: usize,
    resultlen: *mut Fint,
    ierror: *mut Fint,
    f: impl FnOnce(*mut c_char, *mut c_int) -> c_int,
) {
    let rc = rt::guard(|| {
        let mut buf = vec![0u8; cap + 1];
        let mut len: c_int = 0;
        let rc = f(buf.as_mut_ptr().cast(), &mut len);
        if rc == crate::abi::MPI_SUCCESS {
            let n = (len.max(0) as usize).min(cap);
            let k = rt::string_out(&buf[..n], out, out_len);
            if !resultlen.is_null() {
                // SAFETY: RESULTLEN is the caller's INTEGER.
                unsafe { *resultlen = k as Fint };
            }
        }
        rc
    });
    rt::set_ierror(ierror, rc);
}

pub unsafe fn get_library_version(
    version: *mut u8,
    resultlen: *mut Fint,
    ierror: *mut Fint,
    version_len: usize,
) {
    // SAFETY: the closure hands C a buffer of C_MAX_LIBRARY_VERSION + 1 bytes.
    unsafe {
        string_result(
            C_MAX_LIBRARY_VERSION,
            version,
            version_len,
            resultlen,
            ierror,
            |b, l| c::PMPI_Get_library_version(b, l),
        )
    }
}

pub unsafe fn get_processor_name(
    name: *mut u8,
    resultlen: *mut Fint,
    ierror: *mut Fint,
    name_len: usize,
) {
    // SAFETY: the closure hands C a buffer of C_MAX_PROCESSOR_NAME + 1 bytes.
    unsafe {
        string_result(
            C_MAX_PROCESSOR_NAME,
            name,
            name_len,
            resultlen,
            ierror,
            |b, l| c::PMPI_Get_processor_name(b, l),
        )
    }
}

pub unsafe fn error_string(
    errorcode: *const Fint,
    string: *mut u8,
    resultlen: *mut Fint,
    ierror: *mut Fint,
    string_len: usize,
) {
    // SAFETY: ERRORCODE is the caller's INTEGER; C gets a buffer of its maximum size.
    unsafe {
        let code = *errorcode;
        string_result(
            C_MAX_ERROR_STRING,
            string,
            string_len,
            resultlen,
            ierror,
            |b, l| c::PMPI_Error_string(code, b, l),
        )
    }
}

type GetName = unsafe extern "C" fn(c_int, *mut c_char, *mut c_int) -> c_int;
type SetName = unsafe extern "C" fn(c_int, *const c_char) -> c_int;

/// COMM_GET_NAME / TYPE_GET_NAME / WIN_GET_NAME: the object's name, blank-padded.
unsafe fn get_name(
    get: GetName,
    obj: *const Fint,
    name: *mut u8,
    resultlen: *mut Fint,
    ierror: *mut Fint,
    name_len: usize,
) {
    // SAFETY: OBJ is the caller's INTEGER handle; C gets a buffer of its maximum size.
    unsafe {
        let h = *obj;
        string_result(
            C_MAX_OBJECT_NAME,
            name,
            name_len,
            resultlen,
            ierror,
            |b, l| get(h, b, l),
        )
    }
}

/// COMM_SET_NAME / TYPE_SET_NAME / WIN_SET_NAME: the name without its trailing blanks.
unsafe fn set_name(
    set: SetName,
    obj: *const Fint,
    name: *const u8,
    ierror: *mut Fint,
    name_len: usize,
) {
    let rc = rt::guard(|| {
        let s = rt::string_in(name, name_len);
        // SAFETY: OBJ is the caller's INTEGER handle; `s` is NUL-terminated.
        unsafe { set(*obj, s.as_ptr().cast()) }
    });
    rt::set_ierror(ierror, rc);
}

pub unsafe fn comm_get_name(
    comm: *const Fint,
    name: *mut u8,
    resultlen: *mut Fint,
    ierror: *mut Fint,
    name_len: usize,
) {
    // SAFETY: the caller's arguments, passed on.
    unsafe {
        get_name(
            c::PMPI_Comm_get_name,
            comm,
            name,
            resultlen,
            ierror,
            name_len,
        )
    }
}

pub unsafe fn comm_set_name(
    comm: *const Fint,
    name: *const u8,
    ierror: *mut Fint,
    name_len: usize,
) {
    // SAFETY: the caller's arguments, passed on.
    unsafe { set_name(c::PMPI_Comm_set_name, comm, name, ierror, name_len) }
}

pub unsafe fn win_get_name(
    win: *const Fint,
    name: *mut u8,
    resultlen: *mut Fint,
    ierror: *mut Fint,
    name_len: usize,
) {
    // SAFETY: the caller's arguments, passed on.
    unsafe { get_name(c::PMPI_Win_get_name, win, name, resultlen, ierror, name_len) }
}

pub unsafe fn win_set_name(win: *const Fint, name: *const u8, ierror: *mut Fint, name_len: usize) {
    // SAFETY: the caller's arguments, passed on.
    unsafe { set_name(c::PMPI_Win_set_name, win, name, ierror, name_len) }
}

pub unsafe fn type_get_name(
    datatype: *const Fint,
    name: *mut u8,
    resultlen: *mut Fint,
    ierror: *mut Fint,
    name_len: usize,
) {
    // SAFETY: the caller's arguments, passed on.
    unsafe {
        get_name(
            c::PMPI_Type_get_name,
            datatype,
            name,
            resultlen,
            ierror,
            name_len,
        )
    }
}

pub unsafe fn type_set_name(
    datatype: *const Fint,
    name: *const u8,
    ierror: *mut Fint,
    name_len: usize,
) {
    // SAFETY: the caller's arguments, passed on.
    unsafe { set_name(c::PMPI_Type_set_name, datatype, name, ierror, name_len) }
}

// Attribute keys created from Fortran. The C library stores the extra state and the
// attribute values as pointers: Fortran's integers are stored as those pointers' values
// (by value, as the standard's Fortran binding asks), and the key is marked so that the
// library calls its copy and delete procedures with every argument by reference.

/// Language marks of shmpi_keyval_set_fortran.
const LANG_FORTRAN: c_int = 1;
const LANG_FORTRAN77: c_int = 2;

type CreateKeyval =
    unsafe extern "C" fn(*const c_void, *const c_void, *mut c_int, *mut c_void) -> c_int;

unsafe fn create_keyval(
    create: CreateKeyval,
    free: unsafe extern "C" fn(*mut c_int) -> c_int,
    lang: c_int,
    copy_fn: *const c_void,
    delete_fn: *const c_void,
    keyval: *mut Fint,
    extra: Aint,
    ierror: *mut Fint,
) {
    // SAFETY: the procedures are the caller's; C writes the new key into its argument.
    let make =
        |key: &mut c_int| unsafe { create(copy_fn, delete_fn, key, extra as usize as *mut c_void) };
    // SAFETY: the key was just created by C; it is of no use without its language.
    let mark = |key: c_int| unsafe { c::shmpi_keyval_set_fortran(key, lang) };
    // SAFETY: as above.
    let undo = |key: &mut c_int| unsafe { free(key) };
    // SAFETY: KEYVAL and IERROR are the caller's INTEGERs.
    unsafe { create_marked(keyval, ierror, make, mark, undo) }
}

/// Creates a C object for Fortran (`make` writes its handle) and marks it as Fortran's
/// (`mark`), so the library calls its procedures with Fortran's conventions; if the
/// mark fails, `undo` frees it again. The handle goes to `out`.
unsafe fn create_marked(
    out: *mut Fint,
    ierror: *mut Fint,
    make: impl FnOnce(&mut c_int) -> c_int,
    mark: impl FnOnce(c_int) -> c_int,
    undo: impl FnOnce(&mut c_int) -> c_int,
) {
    let rc = rt::guard(|| {
        let mut h: c_int = 0;
        let rc = make(&mut h);
        if rc != crate::abi::MPI_SUCCESS {
            return rc;
        }
        let rc = mark(h);
        if rc != crate::abi::MPI_SUCCESS {
            undo(&mut h);
            return rc;
        }
        // SAFETY: OUT is the caller's INTEGER.
        unsafe { *out = h };
        rc
    });
    rt::set_ierror(ierror, rc);
}

pub unsafe fn comm_create_keyval(
    copy_fn: *const c_void,
    delete_fn: *const c_void,
    keyval: *mut Fint,
    extra: *const Aint,
    ierror: *mut Fint,
) {
    // SAFETY: EXTRA_STATE is the caller's INTEGER(KIND=MPI_ADDRESS_KIND).
    unsafe {
        create_keyval(
            c::PMPI_Comm_create_keyval,
            c::PMPI_Comm_free_keyval,
            LANG_FORTRAN,
            copy_fn,
            delete_fn,
            keyval,
            *extra,
            ierror,
        )
    }
}

pub unsafe fn keyval_create(
    copy_fn: *const c_void,
    delete_fn: *const c_void,
    keyval: *mut Fint,
    extra: *const Fint,
    ierror: *mut Fint,
) {
    // SAFETY: EXTRA_STATE is the caller's INTEGER.
    unsafe {
        create_keyval(
            c::PMPI_Keyval_create,
            c::PMPI_Comm_free_keyval,
            LANG_FORTRAN77,
            copy_fn,
            delete_fn,
            keyval,
            Aint::from(*extra),
            ierror,
        )
    }
}

/// MPI_GREQUEST_START: the procedures are Fortran's (the library calls them with every
/// argument by reference) and the extra state is the caller's
/// INTEGER(KIND=MPI_ADDRESS_KIND) variable itself, as with MPICH: the callbacks get its
/// address, so what one of them stores there the caller and the later callbacks see.
pub unsafe fn grequest_start(
    query_fn: *const c_void,
    free_fn: *const c_void,
    cancel_fn: *const c_void,
    extra: *const Aint,
    request: *mut Fint,
    ierror: *mut Fint,
) {
    // SAFETY: the procedures are the caller's, EXTRA_STATE its variable (used only as
    // the callbacks' argument); C writes the new request into its argument.
    let make = |req: &mut c_int| unsafe {
        c::PMPI_Grequest_start(query_fn, free_fn, cancel_fn, extra as *mut c_void, req)
    };
    // SAFETY: the request was just created by C; it is of no use without its language.
    let mark = |req: c_int| unsafe { c::shmpi_grequest_set_fortran(req) };
    // SAFETY: as above.
    let undo = |req: &mut c_int| unsafe { c::PMPI_Request_free(req) };
    // SAFETY: REQUEST and IERROR are the caller's INTEGERs.
    unsafe { create_marked(request, ierror, make, mark, undo) }
}

pub unsafe fn win_create_keyval(
    copy_fn: *const c_void,
    delete_fn: *const c_void,
    keyval: *mut Fint,
    extra: *const Aint,
    ierror: *mut Fint,
) {
    // SAFETY: EXTRA_STATE is the caller's INTEGER(KIND=MPI_ADDRESS_KIND).
    unsafe {
        create_keyval(
            c::PMPI_Win_create_keyval,
            c::PMPI_Win_free_keyval,
            LANG_FORTRAN,
            copy_fn,
            delete_fn,
            keyval,
            *extra,
            ierror,
        )
    }
}

pub unsafe fn type_create_keyval(
    copy_fn: *const c_void,
    delete_fn: *const c_void,
    keyval: *mut Fint,
    extra: *const Aint,
    ierror: *mut Fint,
) {
    // SAFETY: EXTRA_STATE is the caller's INTEGER(KIND=MPI_ADDRESS_KIND).
    unsafe {
        create_keyval(
            c::PMPI_Type_create_keyval,
            c::PMPI_Type_free_keyval,
            LANG_FORTRAN,
            copy_fn,
            delete_fn,
            keyval,
            *extra,
            ierror,
        )
    }
}

type SetAttr = unsafe extern "C" fn(c_int, c_int, *mut c_void) -> c_int;

/// COMM_SET_ATTR / TYPE_SET_ATTR: the INTEGER(KIND=MPI_ADDRESS_KIND) value is stored
/// by value.
unsafe fn set_attr(
    set: SetAttr,
    obj: *const Fint,
    keyval: *const Fint,
    value: *const Aint,
    ierror: *mut Fint,
) {
    let rc = rt::guard(|| {
        // SAFETY: the arguments are the caller's INTEGERs; the value is stored as a
        // Fortran integer (C reads its address).
        unsafe {
            let (key, _) = rt::keyval_to_c(*keyval);
            as_fortran(|| set(*obj, key, *value as usize as *mut c_void))
        }
    });
    rt::set_ierror(ierror, rc);
}

/// Runs C attribute calls as made from Fortran (the library's `shmpi_attr_fortran`):
/// values set are Fortran integers, values read come in Fortran's form.
fn as_fortran<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: a flag of the calling thread, set and cleared around `f`.
    unsafe { c::shmpi_attr_fortran(1) };
    let r = f();
    // SAFETY: as above.
    unsafe { c::shmpi_attr_fortran(0) };
    r
}

pub unsafe fn comm_set_attr(
    comm: *const Fint,
    keyval: *const Fint,
    value: *const Aint,
    ierror: *mut Fint,
) {
    // SAFETY: the caller's arguments, passed on.
    unsafe { set_attr(c::PMPI_Comm_set_attr, comm, keyval, value, ierror) }
}

pub unsafe fn type_set_attr(
    datatype: *const Fint,
    keyval: *const Fint,
    value: *const Aint,
    ierror: *mut Fint,
) {
    // SAFETY: the caller's arguments, passed on.
    unsafe { set_attr(c::PMPI_Type_set_attr, datatype, keyval, value, ierror) }
}

pub unsafe fn win_set_attr(
    win: *const Fint,
    keyval: *const Fint,
    value: *const Aint,
    ierror: *mut Fint,
) {
    // SAFETY: the caller's arguments, passed on.
    unsafe { set_attr(c::PMPI_Win_set_attr, win, keyval, value, ierror) }
}

pub unsafe fn attr_put(
    comm: *const Fint,
    keyval: *const Fint,
    value: *const Fint,
    ierror: *mut Fint,
) {
    let rc = rt::guard(|| {
        // SAFETY: the arguments are the caller's INTEGERs; the value is stored as a
        // Fortran integer (sign-extended, so ATTR_GET gives it back).
        unsafe {
            let (key, _) = rt::keyval_to_c(*keyval);
            as_fortran(|| c::PMPI_Attr_put(*comm, key, Aint::from(*value) as usize as *mut c_void))
        }
    });
    rt::set_ierror(ierror, rc);
}

/// Reads an attribute through C and returns its Fortran value: predefined attributes
/// are the integers C points at, others the value in Fortran's form (an integer set from
/// Fortran, or C's pointer as an integer).
unsafe fn attr_value(
    comm: *const Fint,
    keyval: *const Fint,
    flag: *mut Fint,
    ierror: *mut Fint,
    get: unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_int) -> c_int,
) -> Option<Aint> {
    let mut value = None;
    let rc = rt::guard(|| {
        // SAFETY: COMM and KEYVAL are the caller's INTEGERs; C writes a pointer into
        // `v` and an int into `f`.
        unsafe {
            let (key, predefined) = rt::keyval_to_c(*keyval);
            let mut v: *mut c_void = std::ptr::null_mut();
            let mut f: c_int = 0;
            let rc = as_fortran(|| get(*comm, key, (&raw mut v).cast(), &mut f));
            if rc == crate::abi::MPI_SUCCESS {
                if !flag.is_null() {
                    *flag = Fint::from(f != 0);
                }
                if f != 0 {
                    value = Some(if predefined && !v.is_null() {
                        Aint::from(*(v as *const c_int))
                    } else {
                        v as Aint
                    });
                }
            }
            rc
        }
    });
    rt::set_ierror(ierror, rc);
    value
}

pub unsafe fn comm_get_attr(
    comm: *const Fint,
    keyval: *const Fint,
    value: *mut Aint,
    flag: *mut Fint,
    ierror: *mut Fint,
) {
    // SAFETY: VALUE is the caller's INTEGER(KIND=MPI_ADDRESS_KIND).
    unsafe {
        if let Some(v) = attr_value(comm, keyval, flag, ierror, c::PMPI_Comm_get_attr) {
            *value = v;
        }
    }
}

pub unsafe fn type_get_attr(
    datatype: *const Fint,
    keyval: *const Fint,
    value: *mut Aint,
    flag: *mut Fint,
    ierror: *mut Fint,
) {
    // SAFETY: VALUE is the caller's INTEGER(KIND=MPI_ADDRESS_KIND).
    unsafe {
        if let Some(v) = attr_value(datatype, keyval, flag, ierror, c::PMPI_Type_get_attr) {
            *value = v;
        }
    }
}

/// MPI_WIN_GET_ATTR: the predefined window attributes are integers in Fortran (the
/// address for MPI_WIN_BASE, the size, the displacement unit, the flavor, the model),
/// which C hands out in different forms; the library gives them as integers.
pub unsafe fn win_get_attr(
    win: *const Fint,
    keyval: *const Fint,
    value: *mut Aint,
    flag: *mut Fint,
    ierror: *mut Fint,
) {
    // SAFETY: KEYVAL is the caller's INTEGER.
    let (key, predefined) = rt::keyval_to_c(unsafe { *keyval });
    if !predefined {
        // SAFETY: VALUE is the caller's INTEGER(KIND=MPI_ADDRESS_KIND), the others its
        // INTEGERs.
        unsafe {
            if let Some(v) = attr_value(win, keyval, flag, ierror, c::PMPI_Win_get_attr) {
                *value = v;
            }
        }
        return;
    }
    let rc = rt::guard(|| {
        let mut v: i64 = 0;
        let mut f: c_int = 0;
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: WIN, VALUE and FLAG are the caller's; C writes into the locals. A key
        // that is not a window's goes to C, which reports the error or no value.
        unsafe {
            let rc = c::shmpi_win_predefined_attr(*win, key, &mut v, &mut f);
            if rc == crate::abi::MPI_SUCCESS && f != 0 {
                *value = v as Aint;
                *flag = 1;
                return rc;
            }
            let rc = c::PMPI_Win_get_attr(*win, key, (&raw mut p).cast(), &mut f);
            if rc == crate::abi::MPI_SUCCESS {
                *flag = 0;
            }
            rc
        }
    });
    rt::set_ierror(ierror, rc);
}

pub unsafe fn attr_get(
    comm: *const Fint,
    keyval: *const Fint,
    value: *mut Fint,
    flag: *mut Fint,
    ierror: *mut Fint,
) {
    // SAFETY: VALUE is the caller's INTEGER.
    unsafe {
        if let Some(v) = attr_value(comm, keyval, flag, ierror, c::PMPI_Attr_get) {
            *value = v as Fint;
        }
    }
}

pub unsafe fn buffer_detach(_buffer: *mut c_void, size: *mut Fint, ierror: *mut Fint) {
    // Fortran cannot use the address C returns; it is dropped (as in MPICH).
    let rc = rt::guard(|| {
        let mut addr: *mut c_void = std::ptr::null_mut();
        // SAFETY: C writes the buffer address into `addr` and the size into SIZE.
        unsafe { c::PMPI_Buffer_detach((&raw mut addr).cast(), size) }
    });
    rt::set_ierror(ierror, rc);
}

/// MPI_AINT_ADD: a function returning INTEGER(KIND=MPI_ADDRESS_KIND), without IERROR.
pub unsafe fn aint_add(base: *const Aint, disp: *const Aint) -> Aint {
    // SAFETY: BASE and DISP are the caller's INTEGER(KIND=MPI_ADDRESS_KIND)s.
    unsafe { c::PMPI_Aint_add(*base as isize, *disp as isize) as Aint }
}

/// MPI_AINT_DIFF: a function returning INTEGER(KIND=MPI_ADDRESS_KIND), without IERROR.
pub unsafe fn aint_diff(addr1: *const Aint, addr2: *const Aint) -> Aint {
    // SAFETY: ADDR1 and ADDR2 are the caller's INTEGER(KIND=MPI_ADDRESS_KIND)s.
    unsafe { c::PMPI_Aint_diff(*addr1 as isize, *addr2 as isize) as Aint }
}

pub unsafe fn wtime() -> f64 {
    // SAFETY: no arguments.
    unsafe { c::PMPI_Wtime() }
}

/// MPI_PCONTROL(LEVEL): no IERROR (the standard's binding); a hook for profiling
/// libraries that returns at once, as the C MPI_Pcontrol does.
pub unsafe fn pcontrol(_level: *const Fint) {}

pub unsafe fn wtick() -> f64 {
    // SAFETY: no arguments.
    unsafe { c::PMPI_Wtick() }
}

// Predefined copy and delete procedures for attributes (MPI_NULL_COPY_FN, MPI_DUP_FN, ...).

pub unsafe fn null_copy_fn(
    _comm: *const Fint,
    _keyval: *const Fint,
    _extra: *const Fint,
    _attr_in: *const Fint,
    _attr_out: *mut Fint,
    flag: *mut Fint,
    ierror: *mut Fint,
) {
    // SAFETY: FLAG is the caller's LOGICAL.
    unsafe { *flag = 0 };
    rt::set_ierror(ierror, crate::abi::MPI_SUCCESS);
}

pub unsafe fn dup_fn(
    _comm: *const Fint,
    _keyval: *const Fint,
    _extra: *const Fint,
    attr_in: *const Fint,
    attr_out: *mut Fint,
    flag: *mut Fint,
    ierror: *mut Fint,
) {
    // SAFETY: the attribute values are the caller's INTEGERs, FLAG its LOGICAL.
    unsafe {
        *attr_out = *attr_in;
        *flag = 1;
    }
    rt::set_ierror(ierror, crate::abi::MPI_SUCCESS);
}

pub unsafe fn null_delete_fn(
    _comm: *const Fint,
    _keyval: *const Fint,
    _attr: *const Fint,
    _extra: *const Fint,
    ierror: *mut Fint,
) {
    rt::set_ierror(ierror, crate::abi::MPI_SUCCESS);
}

pub unsafe fn comm_null_copy_fn(
    _comm: *const Fint,
    _keyval: *const Fint,
    _extra: *const Aint,
    _attr_in: *const Aint,
    _attr_out: *mut Aint,
    flag: *mut Fint,
    ierror: *mut Fint,
) {
    // SAFETY: FLAG is the caller's LOGICAL.
    unsafe { *flag = 0 };
    rt::set_ierror(ierror, crate::abi::MPI_SUCCESS);
}

pub unsafe fn comm_dup_fn(
    _comm: *const Fint,
    _keyval: *const Fint,
    _extra: *const Aint,
    attr_in: *const Aint,
    attr_out: *mut Aint,
    flag: *mut Fint,
    ierror: *mut Fint,
) {
    // SAFETY: the attribute values are the caller's INTEGER(KIND=MPI_ADDRESS_KIND)s.
    unsafe {
        *attr_out = *attr_in;
        *flag = 1;
    }
    rt::set_ierror(ierror, crate::abi::MPI_SUCCESS);
}

pub unsafe fn comm_null_delete_fn(
    _comm: *const Fint,
    _keyval: *const Fint,
    _attr: *const Aint,
    _extra: *const Aint,
    ierror: *mut Fint,
) {
    rt::set_ierror(ierror, crate::abi::MPI_SUCCESS);
}

// ---------------------------------------------------------------- info objects

mod ci {
    use std::os::raw::{c_char, c_int};
    extern "C" {
        pub fn PMPI_Info_set(info: c_int, key: *const c_char, value: *const c_char) -> c_int;
        pub fn PMPI_Info_delete(info: c_int, key: *const c_char) -> c_int;
        pub fn PMPI_Info_get(
            info: c_int,
            key: *const c_char,
            valuelen: c_int,
            value: *mut c_char,
            flag: *mut c_int,
        ) -> c_int;
        pub fn PMPI_Info_get_valuelen(
            info: c_int,
            key: *const c_char,
            valuelen: *mut c_int,
            flag: *mut c_int,
        ) -> c_int;
        pub fn PMPI_Info_get_nthkey(info: c_int, n: c_int, key: *mut c_char) -> c_int;
        pub fn PMPI_Info_get_string(
            info: c_int,
            key: *const c_char,
            buflen: *mut c_int,
            value: *mut c_char,
            flag: *mut c_int,
        ) -> c_int;
        pub fn PMPI_Add_error_string(errorcode: c_int, string: *const c_char) -> c_int;
    }
}

/// Longest info value (C's MPI_MAX_INFO_VAL).
const C_MAX_INFO_VAL: usize = 1024;
/// Longest info key (C's MPI_MAX_INFO_KEY).
const C_MAX_INFO_KEY: usize = 255;

pub unsafe fn info_set(
    info: *const Fint,
    key: *const u8,
    value: *const u8,
    ierror: *mut Fint,
    key_len: usize,
    value_len: usize,
) {
    let rc = rt::guard(|| {
        let k = rt::string_in_stripped(key, key_len);
        let v = rt::string_in_stripped(value, value_len);
        // SAFETY: INFO is the caller's INTEGER; both strings are NUL-terminated.
        unsafe { ci::PMPI_Info_set(*info, k.as_ptr().cast(), v.as_ptr().cast()) }
    });
    rt::set_ierror(ierror, rc);
}

pub unsafe fn add_error_string(
    errorcode: *const Fint,
    string: *const u8,
    ierror: *mut Fint,
    string_len: usize,
) {
    let rc = rt::guard(|| {
        let s = rt::string_in(string, string_len);
        // SAFETY: ERRORCODE is the caller's INTEGER; the string is NUL-terminated.
        unsafe { ci::PMPI_Add_error_string(*errorcode, s.as_ptr().cast()) }
    });
    rt::set_ierror(ierror, rc);
}

pub unsafe fn info_delete(info: *const Fint, key: *const u8, ierror: *mut Fint, key_len: usize) {
    let rc = rt::guard(|| {
        let k = rt::string_in_stripped(key, key_len);
        // SAFETY: INFO is the caller's INTEGER; the key is NUL-terminated.
        unsafe { ci::PMPI_Info_delete(*info, k.as_ptr().cast()) }
    });
    rt::set_ierror(ierror, rc);
}

/// MPI_INFO_GET(INFO, KEY, VALUELEN, VALUE, FLAG, IERROR): VALUE is blank-padded,
/// at most VALUELEN characters; FLAG is a LOGICAL.
pub unsafe fn info_get(
    info: *const Fint,
    key: *const u8,
    valuelen: *const Fint,
    value: *mut u8,
    flag: *mut Fint,
    ierror: *mut Fint,
    key_len: usize,
    value_len: usize,
) {
    let rc = rt::guard(|| {
        let k = rt::string_in_stripped(key, key_len);
        let mut buf = vec![0u8; C_MAX_INFO_VAL + 1];
        let mut f: c_int = 0;
        // SAFETY: INFO and VALUELEN are the caller's INTEGERs; `buf` has room for the
        // longest value and its NUL.
        let (info, want) = unsafe { (*info, *valuelen) };
        let n = (want.max(0) as usize).min(C_MAX_INFO_VAL) as c_int;
        // SAFETY: as above.
        let rc = unsafe {
            ci::PMPI_Info_get(info, k.as_ptr().cast(), n, buf.as_mut_ptr().cast(), &mut f)
        };
        if rc == 0 {
            if f != 0 {
                rt::string_out(&buf, value, value_len.min(n as usize));
                if value_len > n as usize && !value.is_null() {
                    // SAFETY: VALUE is the caller's CHARACTER*(value_len).
                    unsafe {
                        std::slice::from_raw_parts_mut(value, value_len)[n as usize..].fill(b' ')
                    };
                }
            }
            // SAFETY: FLAG is the caller's LOGICAL.
            unsafe { *flag = (f != 0) as Fint };
        }
        rc
    });
    rt::set_ierror(ierror, rc);
}

pub unsafe fn info_get_valuelen(
    info: *const Fint,
    key: *const u8,
    valuelen: *mut Fint,
    flag: *mut Fint,
    ierror: *mut Fint,
    key_len: usize,
) {
    let rc = rt::guard(|| {
        let k = rt::string_in_stripped(key, key_len);
        let (mut n, mut f): (c_int, c_int) = (0, 0);
        // SAFETY: INFO is the caller's INTEGER; outputs are our locals.
        let rc = unsafe { ci::PMPI_Info_get_valuelen(*info, k.as_ptr().cast(), &mut n, &mut f) };
        if rc == 0 {
            // SAFETY: VALUELEN and FLAG are the caller's INTEGER and LOGICAL.
            unsafe {
                if f != 0 {
                    *valuelen = n;
                }
                *flag = (f != 0) as Fint;
            }
        }
        rc
    });
    rt::set_ierror(ierror, rc);
}

/// MPI-4 MPI_INFO_GET_STRING(INFO, KEY, BUFLEN, VALUE, FLAG, IERROR): with the key,
/// VALUE gets at most BUFLEN characters of its value, blank-padded (nothing at all when
/// BUFLEN is 0), and BUFLEN the value's whole length; without it, FLAG is false and
/// VALUE and BUFLEN stay as they were.
pub unsafe fn info_get_string(
    info: *const Fint,
    key: *const u8,
    buflen: *mut Fint,
    value: *mut u8,
    flag: *mut Fint,
    ierror: *mut Fint,
    key_len: usize,
    value_len: usize,
) {
    let rc = rt::guard(|| {
        let k = rt::string_in_stripped(key, key_len);
        let mut buf = vec![0u8; C_MAX_INFO_VAL + 1];
        let mut n = buf.len() as c_int;
        let mut f: c_int = 0;
        // SAFETY: INFO and BUFLEN are the caller's INTEGERs; `buf` holds the longest
        // value and its NUL, as `n` says.
        let (info, want) = unsafe { (*info, *buflen) };
        // SAFETY: as above.
        let rc = unsafe {
            ci::PMPI_Info_get_string(
                info,
                k.as_ptr().cast(),
                &mut n,
                buf.as_mut_ptr().cast(),
                &mut f,
            )
        };
        if rc == 0 {
            if f != 0 {
                let whole = (n - 1).max(0);
                if want > 0 {
                    let take = (want as usize).min(whole as usize);
                    buf[take] = 0;
                    rt::string_out(&buf, value, value_len);
                }
                // SAFETY: BUFLEN is the caller's INTEGER.
                unsafe { *buflen = whole };
            }
            // SAFETY: FLAG is the caller's LOGICAL.
            unsafe { *flag = (f != 0) as Fint };
        }
        rc
    });
    rt::set_ierror(ierror, rc);
}

pub unsafe fn info_get_nthkey(
    info: *const Fint,
    n: *const Fint,
    key: *mut u8,
    ierror: *mut Fint,
    key_len: usize,
) {
    let rc = rt::guard(|| {
        let mut buf = vec![0u8; C_MAX_INFO_KEY + 1];
        // SAFETY: INFO and N are the caller's INTEGERs; `buf` holds the longest key.
        let rc = unsafe { ci::PMPI_Info_get_nthkey(*info, *n, buf.as_mut_ptr().cast()) };
        if rc == 0 {
            rt::string_out(&buf, key, key_len);
        }
        rc
    });
    rt::set_ierror(ierror, rc);
}

/// A Fortran argument list for a spawned command: the CHARACTER*(len) entries at
/// `base`, `stride` entries apart, up to the first blank one (MPI-3.1 10.3.2).
/// Returns the NUL-terminated strings.
fn fortran_argv(base: *const u8, stride: usize, len: usize) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    if base.is_null() {
        return v;
    }
    for i in 0.. {
        // SAFETY: the list ends with a blank entry, as the standard requires; entries
        // are `stride` CHARACTER*(len) elements apart in the caller's array.
        let e = unsafe { base.add(i * stride * len) };
        let s = rt::string_in(e, len);
        if s.len() == 1 {
            break;
        }
        v.push(s);
    }
    v
}

/// NULL-terminated C pointers to `strings`.
fn c_pointers(strings: &[Vec<u8>]) -> Vec<*const c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr().cast())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

fn errcodes_arg(p: *mut Fint) -> *mut c_int {
    if p as usize == crate::abi::addr_mpi_errcodes_ignore() {
        std::ptr::null_mut()
    } else {
        p
    }
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn comm_spawn(
    command: *const u8,
    argv: *const u8,
    maxprocs: *const Fint,
    info: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    intercomm: *mut Fint,
    array_of_errcodes: *mut Fint,
    ierror: *mut Fint,
    command_len: usize,
    argv_len: usize,
) {
    let rc = rt::guard(|| {
        let cmd = rt::string_in(command, command_len);
        let args = if argv as usize == crate::abi::addr_mpi_argv_null() {
            Vec::new()
        } else {
            fortran_argv(argv, 1, argv_len)
        };
        let ptrs = c_pointers(&args);
        // SAFETY: the INTEGER arguments are the caller's; the strings live until the
        // call returns.
        unsafe {
            c::PMPI_Comm_spawn(
                cmd.as_ptr().cast(),
                ptrs.as_ptr(),
                *maxprocs,
                *info,
                *root,
                *comm,
                intercomm,
                errcodes_arg(array_of_errcodes),
            )
        }
    });
    rt::set_ierror(ierror, rc);
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn comm_spawn_multiple(
    count: *const Fint,
    array_of_commands: *const u8,
    array_of_argv: *const u8,
    array_of_maxprocs: *const Fint,
    array_of_info: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    intercomm: *mut Fint,
    array_of_errcodes: *mut Fint,
    ierror: *mut Fint,
    commands_len: usize,
    argv_len: usize,
) {
    let rc = rt::guard(|| {
        // SAFETY: COUNT is the caller's INTEGER.
        let n = unsafe { *count };
        let k = n.max(0) as usize;
        let cmds: Vec<Vec<u8>> = (0..k)
            // SAFETY: ARRAY_OF_COMMANDS holds COUNT CHARACTER*(commands_len) entries.
            .map(|i| {
                rt::string_in(
                    unsafe { array_of_commands.add(i * commands_len) },
                    commands_len,
                )
            })
            .collect();
        let cmd_ptrs: Vec<*const c_char> = cmds.iter().map(|s| s.as_ptr().cast()).collect();
        let no_argv = array_of_argv as usize == crate::abi::addr_mpi_argvs_null();
        // ARRAY_OF_ARGV(COUNT, *): command i's list is row i, entries COUNT apart.
        let lists: Vec<Vec<Vec<u8>>> = (0..k)
            .map(|i| {
                if no_argv {
                    Vec::new()
                } else {
                    // SAFETY: row i of the caller's array.
                    fortran_argv(unsafe { array_of_argv.add(i * argv_len) }, k, argv_len)
                }
            })
            .collect();
        let ptr_lists: Vec<Vec<*const c_char>> = lists.iter().map(|l| c_pointers(l)).collect();
        let argvs: Vec<*const *const c_char> = ptr_lists.iter().map(|p| p.as_ptr()).collect();
        // SAFETY: as in comm_spawn; every pointer array lives until the call returns.
        unsafe {
            c::PMPI_Comm_spawn_multiple(
                n,
                cmd_ptrs.as_ptr(),
                if no_argv {
                    std::ptr::null()
                } else {
                    argvs.as_ptr()
                },
                array_of_maxprocs,
                array_of_info,
                *root,
                *comm,
                intercomm,
                errcodes_arg(array_of_errcodes),
            )
        }
    });
    rt::set_ierror(ierror, rc);
}

/// MPI_CART_SUB: REMAIN_DIMS is a LOGICAL array as long as the topology has dimensions.
pub unsafe fn cart_sub(
    comm: *const Fint,
    remain_dims: *const Fint,
    newcomm: *mut Fint,
    ierror: *mut Fint,
) {
    let rc = rt::guard(|| {
        // SAFETY: COMM is the caller's INTEGER.
        let h = unsafe { *comm };
        // SAFETY: a query without side effects; -1 when comm has no Cartesian topology.
        let nd = unsafe { c::shmpi_cart_ndims(h) };
        if nd < 0 {
            // Not a Cartesian communicator: C reports the error (before reading the array).
            // SAFETY: plain forwarding.
            return unsafe { c::PMPI_Cart_sub(h, std::ptr::null(), newcomm) };
        }
        let keep = rt::logicals_in(remain_dims, &nd);
        // SAFETY: `keep` holds nd entries; NEWCOMM is the caller's INTEGER.
        unsafe { c::PMPI_Cart_sub(h, rt::ptr_or_null(remain_dims, &keep), newcomm) }
    });
    rt::set_ierror(ierror, rc);
}

// ---------------------------------------------------------------- external32

mod ce {
    use std::os::raw::{c_char, c_int, c_void};
    extern "C" {
        pub fn PMPI_Pack_external(
            datarep: *const c_char,
            inbuf: *const c_void,
            incount: c_int,
            datatype: c_int,
            outbuf: *mut c_void,
            outsize: isize,
            position: *mut isize,
        ) -> c_int;
        pub fn PMPI_Unpack_external(
            datarep: *const c_char,
            inbuf: *const c_void,
            insize: isize,
            position: *mut isize,
            outbuf: *mut c_void,
            outcount: c_int,
            datatype: c_int,
        ) -> c_int;
        pub fn PMPI_Pack_external_size(
            datarep: *const c_char,
            incount: c_int,
            datatype: c_int,
            size: *mut isize,
        ) -> c_int;
    }
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn pack_external(
    datarep: *const u8,
    inbuf: *mut c_void,
    incount: *const Fint,
    datatype: *const Fint,
    outbuf: *mut c_void,
    outsize: *const Aint,
    position: *mut Aint,
    ierror: *mut Fint,
    datarep_len: usize,
) {
    let rc = rt::guard(|| {
        let rep = rt::string_in(datarep, datarep_len);
        // SAFETY: the caller's arguments (INTEGERs, INTEGER(KIND=MPI_ADDRESS_KIND)s and
        // choice buffers); `rep` is NUL-terminated.
        unsafe {
            ce::PMPI_Pack_external(
                rep.as_ptr().cast(),
                rt::buffer(inbuf),
                *incount,
                *datatype,
                rt::buffer(outbuf),
                *outsize as isize,
                position.cast(),
            )
        }
    });
    rt::set_ierror(ierror, rc);
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn unpack_external(
    datarep: *const u8,
    inbuf: *mut c_void,
    insize: *const Aint,
    position: *mut Aint,
    outbuf: *mut c_void,
    outcount: *const Fint,
    datatype: *const Fint,
    ierror: *mut Fint,
    datarep_len: usize,
) {
    let rc = rt::guard(|| {
        let rep = rt::string_in(datarep, datarep_len);
        // SAFETY: as in pack_external.
        unsafe {
            ce::PMPI_Unpack_external(
                rep.as_ptr().cast(),
                rt::buffer(inbuf),
                *insize as isize,
                position.cast(),
                rt::buffer(outbuf),
                *outcount,
                *datatype,
            )
        }
    });
    rt::set_ierror(ierror, rc);
}

pub unsafe fn pack_external_size(
    datarep: *const u8,
    incount: *const Fint,
    datatype: *const Fint,
    size: *mut Aint,
    ierror: *mut Fint,
    datarep_len: usize,
) {
    let rc = rt::guard(|| {
        let rep = rt::string_in(datarep, datarep_len);
        // SAFETY: as in pack_external.
        unsafe {
            ce::PMPI_Pack_external_size(rep.as_ptr().cast(), *incount, *datatype, size.cast())
        }
    });
    rt::set_ierror(ierror, rc);
}

/// MPI_SIZEOF's specifics: SIZE = `bytes`, the size of one element of the argument's
/// type and kind (the argument itself is not read).
pub unsafe fn sizeof(size: *mut Fint, ierror: *mut Fint, bytes: Fint) {
    if !size.is_null() {
        // SAFETY: SIZE is the caller's INTEGER.
        unsafe { *size = bytes };
    }
    rt::set_ierror(ierror, crate::abi::MPI_SUCCESS);
}

/// MPI_INFO_CREATE_ENV(INFO, IERROR): the C call without argc and argv.
pub unsafe fn info_create_env(info: *mut Fint, ierror: *mut Fint) {
    // SAFETY: INFO is the caller's INTEGER; the C function accepts 0 and NULL.
    let rc = rt::guard(|| unsafe { c::PMPI_Info_create_env(0, std::ptr::null_mut(), info) });
    rt::set_ierror(ierror, rc);
}
