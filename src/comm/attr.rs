//! Attribute keys and communicator attributes, with the copy callbacks run by
//! MPI_Comm_dup and the delete callbacks run by MPI_Comm_free / MPI_Comm_delete_attr.
use super::Comm;
use crate::abi::*;
use crate::error::{err, MpiResult};
use std::os::raw::{c_int, c_void};
use std::sync::RwLock;

pub type CopyFn =
    unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
pub type DeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

/// The language a key's callbacks are written in, which decides how they are called.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lang {
    C,
    /// MPI_COMM_CREATE_KEYVAL from Fortran: every argument by reference, attribute
    /// values and extra state as INTEGER(KIND=MPI_ADDRESS_KIND).
    Fortran,
    /// MPI-1 MPI_KEYVAL_CREATE from Fortran: the same with default INTEGERs.
    Fortran77,
}

/// Fortran copy callback: (oldcomm, keyval, extra_state, attr_in, attr_out, flag, ierror).
type FCopy = unsafe extern "C" fn(
    *mut c_int,
    *mut c_int,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    *mut c_int,
    *mut c_int,
);
/// Fortran delete callback: (comm, keyval, attribute_val, extra_state, ierror).
type FDelete = unsafe extern "C" fn(*mut c_int, *mut c_int, *mut c_void, *mut c_void, *mut c_int);

#[derive(Clone, Copy)]
struct Keyval {
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    extra: usize,
    freed: bool,
    lang: Lang,
}

/// Marks `h` as created from Fortran (called by the Fortran bindings right after
/// creating it), so its callbacks are called with Fortran's conventions.
pub fn set_lang(h: i32, lang: Lang) -> MpiResult<()> {
    keyval(h, false)?;
    let i = direct_index(h, OBJ_KEYVAL).unwrap();
    KEYVALS.write().unwrap()[i].lang = lang;
    Ok(())
}

/// Calls a copy callback in its language; returns (error code, flag, new value).
fn run_copy(k: &Keyval, f: CopyFn, comm: i32, key: i32, val: usize) -> (c_int, bool, usize) {
    match k.lang {
        Lang::C => {
            let mut out: *mut c_void = std::ptr::null_mut();
            let mut flag: c_int = 0;
            // SAFETY: a user copy callback called as the standard prescribes, with valid
            // pointers to our locals for the output value and flag.
            let rc = unsafe {
                f(
                    comm,
                    key,
                    k.extra as *mut c_void,
                    val as *mut c_void,
                    &mut out as *mut *mut c_void as *mut c_void,
                    &mut flag,
                )
            };
            (rc, flag != 0, out as usize)
        }
        Lang::Fortran | Lang::Fortran77 => {
            // SAFETY: the function was registered from Fortran with this signature.
            let g: FCopy = unsafe { std::mem::transmute::<CopyFn, FCopy>(f) };
            let (mut c, mut kk, mut flag, mut ierr) = (comm, key, 0, 0);
            let mut extra = k.extra as i64;
            let mut vin = val as i64;
            let mut vout: i64 = 0;
            if k.lang == Lang::Fortran77 {
                let (mut e4, mut i4, mut o4) = (extra as i32, vin as i32, 0i32);
                // SAFETY: Fortran callbacks take every argument by reference; all point
                // to our locals.
                unsafe {
                    g(
                        &mut c,
                        &mut kk,
                        &mut e4 as *mut i32 as *mut c_void,
                        &mut i4 as *mut i32 as *mut c_void,
                        &mut o4 as *mut i32 as *mut c_void,
                        &mut flag,
                        &mut ierr,
                    )
                };
                vout = o4 as i64;
            } else {
                // SAFETY: as above, with address-sized integers.
                unsafe {
                    g(
                        &mut c,
                        &mut kk,
                        &mut extra as *mut i64 as *mut c_void,
                        &mut vin as *mut i64 as *mut c_void,
                        &mut vout as *mut i64 as *mut c_void,
                        &mut flag,
                        &mut ierr,
                    )
                };
            }
            (ierr, flag != 0, vout as usize)
        }
    }
}

static KEYVALS: RwLock<Vec<Keyval>> = RwLock::new(Vec::new());

pub fn create_keyval(copy: Option<CopyFn>, delete: Option<DeleteFn>, extra: *mut c_void) -> i32 {
    let mut k = KEYVALS.write().unwrap();
    k.push(Keyval {
        copy,
        delete,
        extra: extra as usize,
        freed: false,
        lang: Lang::C,
    });
    direct_handle(OBJ_KEYVAL, k.len() - 1)
}

fn keyval(h: i32, allow_freed: bool) -> MpiResult<Keyval> {
    let found = direct_index(h, OBJ_KEYVAL).and_then(|i| KEYVALS.read().unwrap().get(i).copied());
    match found {
        Some(k) if allow_freed || !k.freed => Ok(k),
        _ if h == MPI_KEYVAL_INVALID => Err(err(MPI_ERR_KEYVAL, "keyval is MPI_KEYVAL_INVALID")),
        _ => Err(err(
            MPI_ERR_KEYVAL,
            format!(
                "keyval={h:#x} is not a valid attribute key (never created, freed, or predefined)"
            ),
        )),
    }
}

/// True for a user-created key (valid or freed).
pub fn is_user_keyval(h: i32) -> bool {
    keyval(h, true).is_ok()
}

pub fn free_keyval(h: i32) -> MpiResult<()> {
    keyval(h, false)?;
    let i = direct_index(h, OBJ_KEYVAL).unwrap();
    KEYVALS.write().unwrap()[i].freed = true;
    Ok(())
}

fn call_delete(c: &Comm, key: i32, val: usize) -> MpiResult<()> {
    let k = keyval(key, true)?;
    if let Some(f) = k.delete {
        let rc = match k.lang {
            // SAFETY: a user delete callback called as the standard prescribes.
            Lang::C => unsafe { f(c.handle, key, val as *mut c_void, k.extra as *mut c_void) },
            Lang::Fortran | Lang::Fortran77 => {
                // SAFETY: the function was registered from Fortran with this signature.
                let g: FDelete = unsafe { std::mem::transmute::<DeleteFn, FDelete>(f) };
                let (mut cc, mut kk, mut ierr) = (c.handle, key, 0);
                let (mut v8, mut e8) = (val as i64, k.extra as i64);
                let (mut v4, mut e4) = (val as i32, k.extra as i32);
                let (vp, ep): (*mut c_void, *mut c_void) = if k.lang == Lang::Fortran77 {
                    (
                        &mut v4 as *mut i32 as *mut c_void,
                        &mut e4 as *mut i32 as *mut c_void,
                    )
                } else {
                    (
                        &mut v8 as *mut i64 as *mut c_void,
                        &mut e8 as *mut i64 as *mut c_void,
                    )
                };
                // SAFETY: Fortran callbacks take every argument by reference.
                unsafe { g(&mut cc, &mut kk, vp, ep, &mut ierr) };
                ierr
            }
        };
        if rc != MPI_SUCCESS {
            return Err(err(
                rc.clamp(1, crate::error::LAST_CLASS),
                format!("the attribute delete callback of keyval {key:#x} returned {rc}"),
            ));
        }
    }
    Ok(())
}

pub fn set(c: &Comm, key: i32, val: usize) -> MpiResult<()> {
    keyval(key, false)?;
    let old = {
        let a = c.attrs.lock().unwrap();
        a.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    };
    if let Some(v) = old {
        call_delete(c, key, v)?;
    }
    let mut a = c.attrs.lock().unwrap();
    a.retain(|(k, _)| *k != key);
    a.push((key, val));
    Ok(())
}

pub fn get(c: &Comm, key: i32) -> MpiResult<Option<usize>> {
    keyval(key, true)?;
    Ok(c.attrs
        .lock()
        .unwrap()
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| *v))
}

pub fn delete(c: &Comm, key: i32) -> MpiResult<()> {
    keyval(key, true)?;
    let v = c
        .attrs
        .lock()
        .unwrap()
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| *v);
    match v {
        Some(v) => {
            call_delete(c, key, v)?;
            c.attrs.lock().unwrap().retain(|(k, _)| *k != key);
            Ok(())
        }
        None => Err(err(
            MPI_ERR_KEYVAL,
            format!("keyval={key:#x} has no attribute on this communicator"),
        )),
    }
}

/// Runs every attribute's delete callback (MPI_Comm_free, and MPI_Finalize on
/// MPI_COMM_SELF), in the reverse order of setting.
pub fn delete_all(c: &Comm) -> MpiResult<()> {
    let all: Vec<(i32, usize)> = c.attrs.lock().unwrap().clone();
    for (k, v) in all.into_iter().rev() {
        call_delete(c, k, v)?;
    }
    c.attrs.lock().unwrap().clear();
    Ok(())
}

/// Copies attributes from `old` to `new` through their copy callbacks (MPI_Comm_dup).
pub fn copy_all(old: &Comm, new: &Comm) -> MpiResult<()> {
    let all: Vec<(i32, usize)> = old.attrs.lock().unwrap().clone();
    for (key, val) in all {
        let k = keyval(key, true)?;
        let Some(f) = k.copy else { continue };
        let (rc, flag, out) = run_copy(&k, f, old.handle, key, val);
        if rc != MPI_SUCCESS {
            return Err(err(
                rc.clamp(1, crate::error::LAST_CLASS),
                format!("the attribute copy callback of keyval {key:#x} returned {rc}"),
            ));
        }
        if flag {
            new.attrs.lock().unwrap().push((key, out));
        }
    }
    Ok(())
}
