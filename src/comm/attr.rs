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

#[derive(Clone, Copy)]
struct Keyval {
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    extra: usize,
    freed: bool,
}

static KEYVALS: RwLock<Vec<Keyval>> = RwLock::new(Vec::new());

pub fn create_keyval(copy: Option<CopyFn>, delete: Option<DeleteFn>, extra: *mut c_void) -> i32 {
    let mut k = KEYVALS.write().unwrap();
    k.push(Keyval {
        copy,
        delete,
        extra: extra as usize,
        freed: false,
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
        // SAFETY: a user delete callback called as the standard prescribes.
        let rc = unsafe { f(c.handle, key, val as *mut c_void, k.extra as *mut c_void) };
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

/// Runs every attribute's delete callback (MPI_Comm_free).
pub fn delete_all(c: &Comm) -> MpiResult<()> {
    let all: Vec<(i32, usize)> = c.attrs.lock().unwrap().clone();
    for (k, v) in all {
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
        let mut out: *mut c_void = std::ptr::null_mut();
        let mut flag: c_int = 0;
        // SAFETY: a user copy callback called as the standard prescribes, with valid
        // pointers to our locals for the output value and flag.
        let rc = unsafe {
            f(
                old.handle,
                key,
                k.extra as *mut c_void,
                val as *mut c_void,
                &mut out as *mut *mut c_void as *mut c_void,
                &mut flag,
            )
        };
        if rc != MPI_SUCCESS {
            return Err(err(
                rc.clamp(1, crate::error::LAST_CLASS),
                format!("the attribute copy callback of keyval {key:#x} returned {rc}"),
            ));
        }
        if flag != 0 {
            new.attrs.lock().unwrap().push((key, out as usize));
        }
    }
    Ok(())
}
