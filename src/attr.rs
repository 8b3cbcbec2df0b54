//! Attribute keys and the attributes of communicators and datatypes (and, with the
//! same machinery, of every object kind that has them), with the copy
//! callbacks run by MPI_Comm_dup / MPI_Type_dup and the delete callbacks run by
//! MPI_Comm_free / MPI_Type_free / MPI_*_delete_attr and by replacing a value.
//!
//! Unsafe code here (every block has its SAFETY line):
//! - calls of the program's copy and delete callbacks (C function pointers, and the
//!   Fortran ones transmuted to their Fortran signature).
use crate::abi::*;
use crate::error::{err, MpiResult};
use std::os::raw::{c_int, c_void};
use std::sync::{Mutex, RwLock};

/// The attributes of one object: (key, value) in the order they were set.
pub type Attrs = Mutex<Vec<(i32, Value)>>;

/// An attribute value, as the language that set it gave it (MPI-3.1 17.2.7).
#[derive(Debug)]
pub enum Value {
    /// Set from C: the `void *` itself.
    C(usize),
    /// Set from Fortran: an INTEGER(KIND=MPI_ADDRESS_KIND) (or MPI_ATTR_PUT's INTEGER,
    /// sign-extended), kept where C can point at it: C reads such an attribute as the
    /// address of the integer, as MPICH does.
    Fortran(Box<i64>),
}

impl Value {
    /// What C sees: the value, or the address of a Fortran integer.
    fn c(&self) -> usize {
        match self {
            Value::C(v) => *v,
            Value::Fortran(b) => &**b as *const i64 as usize,
        }
    }
    /// What Fortran sees: the integer, or C's value as an address-sized integer.
    fn fortran(&self) -> i64 {
        match self {
            Value::C(v) => *v as i64,
            Value::Fortran(b) => **b,
        }
    }
    fn view(&self) -> View {
        View {
            c: self.c(),
            fortran: self.fortran(),
        }
    }
}

/// A value in both languages' forms, for the callbacks (taken while the value stays
/// in place, so C's address of a Fortran integer stays valid).
#[derive(Clone, Copy)]
struct View {
    c: usize,
    fortran: i64,
}

thread_local! {
    /// Set by the Fortran binding around the C calls it makes for MPI_COMM_SET_ATTR,
    /// MPI_TYPE_SET_ATTR, MPI_ATTR_PUT and their GET forms ([`fortran_calls`]).
    static FORTRAN_CALL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the following attribute calls of this thread as made from Fortran (`on`) or
/// from C again: a value set from Fortran is a Fortran integer, and Fortran reads every
/// value in its form (see [`Value`]).
pub fn fortran_calls(on: bool) {
    FORTRAN_CALL.with(|f| f.set(on));
}

fn from_fortran() -> bool {
    FORTRAN_CALL.with(|f| f.get())
}

/// Runs a program's callback as from C: MPI calls it makes (a C MPI_Comm_get_attr in a
/// delete callback run by MPI_COMM_SET_ATTR, say) are its own, not the Fortran caller's.
fn as_c<T>(f: impl FnOnce() -> T) -> T {
    let saved = from_fortran();
    fortran_calls(false);
    let r = f();
    fortran_calls(saved);
    r
}

/// The kind of object a key was created for: a key of one kind is an error on another.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Comm,
    Type,
    Win,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Comm => "communicator",
            Kind::Type => "datatype",
            Kind::Win => "window",
        }
    }
}

/// The object attributes are read or changed on: its kind, handle (passed to the
/// callbacks) and attribute list.
#[derive(Clone, Copy)]
pub struct Owner<'a> {
    pub kind: Kind,
    pub handle: i32,
    pub attrs: &'a Attrs,
}

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
    /// How many objects have an attribute with this key.
    uses: usize,
    lang: Lang,
    kind: Kind,
}

/// Counts an attribute of key `h` added to (`true`) or removed from an object.
fn count_use(h: i32, added: bool) {
    if let Some(i) = direct_index(h, OBJ_KEYVAL) {
        if let Some(k) = KEYVALS.write().unwrap().get_mut(i) {
            k.uses = if added {
                k.uses + 1
            } else {
                k.uses.saturating_sub(1)
            };
        }
    }
}

/// Marks `h` as created from Fortran (called by the Fortran bindings right after
/// creating it), so its callbacks are called with Fortran's conventions.
pub fn set_lang(h: i32, lang: Lang) -> MpiResult<()> {
    keyval(h, false, None)?;
    let i = direct_index(h, OBJ_KEYVAL).unwrap();
    KEYVALS.write().unwrap()[i].lang = lang;
    Ok(())
}

/// Calls a copy callback in its language; returns (error code, flag, new value).
fn run_copy(k: &Keyval, f: CopyFn, obj: i32, key: i32, v: View) -> (c_int, bool, Value) {
    as_c(|| run_copy_as_c(k, f, obj, key, v))
}

fn run_copy_as_c(k: &Keyval, f: CopyFn, obj: i32, key: i32, v: View) -> (c_int, bool, Value) {
    let val = v.c;
    match k.lang {
        Lang::C => {
            let mut out: *mut c_void = std::ptr::null_mut();
            let mut flag: c_int = 0;
            // SAFETY: a user copy callback called as the standard prescribes, with valid
            // pointers to our locals for the output value and flag.
            let rc = unsafe {
                f(
                    obj,
                    key,
                    k.extra as *mut c_void,
                    val as *mut c_void,
                    &mut out as *mut *mut c_void as *mut c_void,
                    &mut flag,
                )
            };
            (rc, flag != 0, Value::C(out as usize))
        }
        Lang::Fortran | Lang::Fortran77 => {
            // SAFETY: the function was registered from Fortran with this signature.
            let g: FCopy = unsafe { std::mem::transmute::<CopyFn, FCopy>(f) };
            let (mut c, mut kk, mut flag, mut ierr) = (obj, key, 0, 0);
            let mut extra = k.extra as i64;
            let mut vin = v.fortran;
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
            (ierr, flag != 0, Value::Fortran(Box::new(vout)))
        }
    }
}

static KEYVALS: RwLock<Vec<Keyval>> = RwLock::new(Vec::new());

pub fn create_keyval(
    kind: Kind,
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    extra: *mut c_void,
) -> i32 {
    let mut k = KEYVALS.write().unwrap();
    k.push(Keyval {
        copy,
        delete,
        extra: extra as usize,
        freed: false,
        uses: 0,
        lang: Lang::C,
        kind,
    });
    direct_handle(OBJ_KEYVAL, k.len() - 1)
}

/// The key `h`; with `kind`, it must have been created for that kind of object.
fn keyval(h: i32, allow_freed: bool, kind: Option<Kind>) -> MpiResult<Keyval> {
    let found = direct_index(h, OBJ_KEYVAL).and_then(|i| KEYVALS.read().unwrap().get(i).copied());
    match found {
        Some(k) if kind.is_some_and(|want| want != k.kind) => Err(err(
            MPI_ERR_KEYVAL,
            format!(
                "keyval={h:#x} was created for {} attributes, not {} ones",
                k.kind.noun(),
                kind.unwrap().noun()
            ),
        )),
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
    keyval(h, true, None).is_ok()
}

/// MPI_Comm_free_keyval / MPI_Type_free_keyval: the key stays usable by the objects
/// that have it until they delete it. Freeing it again (through a copy of the handle)
/// while an object still has it is not an error, as in MPICH and Open MPI: the key
/// still exists; once no object has it, it is.
pub fn free_keyval(h: i32, kind: Kind) -> MpiResult<()> {
    if keyval(h, true, Some(kind)).is_ok_and(|k| k.freed && k.uses > 0) {
        return Ok(());
    }
    keyval(h, false, Some(kind))?;
    let i = direct_index(h, OBJ_KEYVAL).unwrap();
    KEYVALS.write().unwrap()[i].freed = true;
    Ok(())
}

fn call_delete(obj: i32, key: i32, v: View) -> MpiResult<()> {
    let k = keyval(key, true, None)?;
    if let Some(f) = k.delete {
        let rc = as_c(|| match k.lang {
            // SAFETY: a user delete callback called as the standard prescribes.
            Lang::C => unsafe { f(obj, key, v.c as *mut c_void, k.extra as *mut c_void) },
            Lang::Fortran | Lang::Fortran77 => {
                // SAFETY: the function was registered from Fortran with this signature.
                let g: FDelete = unsafe { std::mem::transmute::<DeleteFn, FDelete>(f) };
                let (mut cc, mut kk, mut ierr) = (obj, key, 0);
                let (mut v8, mut e8) = (v.fortran, k.extra as i64);
                let (mut v4, mut e4) = (v.fortran as i32, k.extra as i32);
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
        });
        if rc != MPI_SUCCESS {
            return Err(crate::error::from_callback(
                rc,
                format!("the attribute delete callback of keyval {key:#x} returned {rc}"),
            ));
        }
    }
    Ok(())
}

/// The value's view of the attribute `key` of `o`, if it has one.
fn find(o: &Owner<'_>, key: i32) -> Option<View> {
    let a = o.attrs.lock().unwrap();
    a.iter().find(|(k, _)| *k == key).map(|(_, v)| v.view())
}

/// Sets (or replaces, running the delete callback of the old value) an attribute; from
/// Fortran ([`fortran_calls`]) `val` is the Fortran integer.
pub fn set<'a>(o: impl Into<Owner<'a>>, key: i32, val: usize) -> MpiResult<()> {
    let o = o.into();
    keyval(key, false, Some(o.kind))?;
    let fortran = from_fortran();
    let had = find(&o, key);
    if let Some(v) = had {
        call_delete(o.handle, key, v)?;
    } else {
        count_use(key, true);
    }
    let val = if fortran {
        Value::Fortran(Box::new(val as i64))
    } else {
        Value::C(val)
    };
    let mut a = o.attrs.lock().unwrap();
    a.retain(|(k, _)| *k != key);
    a.push((key, val));
    Ok(())
}

/// The value of an attribute as the calling language sees it (C, or Fortran with
/// [`fortran_calls`]), None if the object has none for this key.
pub fn get<'a>(o: impl Into<Owner<'a>>, key: i32) -> MpiResult<Option<usize>> {
    let o = o.into();
    keyval(key, true, Some(o.kind))?;
    let fortran = from_fortran();
    Ok(find(&o, key).map(|v| if fortran { v.fortran as usize } else { v.c }))
}

/// Deletes an attribute through its delete callback; an object without one for this
/// key is an error (MPI_ERR_KEYVAL; Open MPI also fails, MPICH returns success).
pub fn delete<'a>(o: impl Into<Owner<'a>>, key: i32) -> MpiResult<()> {
    let o = o.into();
    keyval(key, true, Some(o.kind))?;
    match find(&o, key) {
        Some(v) => {
            call_delete(o.handle, key, v)?;
            o.attrs.lock().unwrap().retain(|(k, _)| *k != key);
            count_use(key, false);
            Ok(())
        }
        None => Err(err(
            MPI_ERR_KEYVAL,
            format!("keyval={key:#x} has no attribute on this {}", o.kind.noun()),
        )),
    }
}

/// Every attribute of `o` (key, both forms of its value), in the order of setting.
fn views(o: &Owner<'_>) -> Vec<(i32, View)> {
    let a = o.attrs.lock().unwrap();
    a.iter().map(|(k, v)| (*k, v.view())).collect()
}

/// Runs every attribute's delete callback (MPI_Comm_free, MPI_Type_free, and
/// MPI_Finalize on MPI_COMM_SELF), in the reverse order of setting.
pub fn delete_all<'a>(o: impl Into<Owner<'a>>) -> MpiResult<()> {
    let o = o.into();
    let all = views(&o);
    for (k, v) in all.into_iter().rev() {
        call_delete(o.handle, k, v)?;
    }
    let keys: Vec<i32> = o.attrs.lock().unwrap().drain(..).map(|(k, _)| k).collect();
    for k in keys {
        count_use(k, false);
    }
    Ok(())
}

/// Copies attributes from `old` to `new` through their copy callbacks (MPI_Comm_dup,
/// MPI_Type_dup).
pub fn copy_all<'a, 'b>(old: impl Into<Owner<'a>>, new: impl Into<Owner<'b>>) -> MpiResult<()> {
    let (old, new) = (old.into(), new.into());
    let all = views(&old);
    for (key, val) in all {
        let k = keyval(key, true, None)?;
        let Some(f) = k.copy else { continue };
        let (rc, flag, out) = run_copy(&k, f, old.handle, key, val);
        if rc != MPI_SUCCESS {
            return Err(crate::error::from_callback(
                rc,
                format!("the attribute copy callback of keyval {key:#x} returned {rc}"),
            ));
        }
        if flag {
            new.attrs.lock().unwrap().push((key, out));
            count_use(key, true);
        }
    }
    Ok(())
}
