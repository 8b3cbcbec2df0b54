//! Info objects: ordered (key, value) string pairs, for the info arguments of
//! communicator constructors, persistent collectives and spawns. MPI_INFO_ENV is a
//! built-in, read-only object (see `env_entries`). As MPI-4.0 allows (and MPICH does),
//! the MPI_Info functions work at any time, before MPI_Init and after MPI_Finalize too.
use crate::abi::*;
use crate::error::{err, MpiResult};
use std::sync::Mutex;

pub type Entries = Vec<(String, String)>;
static INFOS: Mutex<Vec<Option<Entries>>> = Mutex::new(Vec::new());

fn index(h: i32, arg: &str) -> MpiResult<Option<usize>> {
    if h == MPI_INFO_ENV {
        return Ok(None);
    }
    let bad = || {
        if h == MPI_INFO_NULL {
            err(MPI_ERR_INFO, format!("{arg} is MPI_INFO_NULL"))
        } else {
            err(
                MPI_ERR_INFO,
                format!("{arg}={h:#x} is not a valid info object (never created, or freed)"),
            )
        }
    };
    let i = direct_index(h, OBJ_INFO).ok_or_else(bad)?;
    match INFOS.lock().unwrap().get(i) {
        Some(Some(_)) => Ok(Some(i)),
        _ => Err(bad()),
    }
}

/// Validates an info argument (MPI_INFO_NULL allowed).
pub fn check_arg(h: i32, arg: &str) -> MpiResult<()> {
    if h == MPI_INFO_NULL {
        return Ok(());
    }
    index(h, arg).map(|_| ())
}

/// The (key, value) pairs of a valid info object, in order.
pub fn entries_of(h: i32, arg: &str) -> MpiResult<Entries> {
    Ok(match index(h, arg)? {
        None => env_entries(),
        Some(i) => INFOS.lock().unwrap()[i].clone().unwrap_or_default(),
    })
}

/// The value of `key` in info argument `h` (MPI_INFO_NULL: none).
pub fn value(h: i32, key: &str, arg: &str) -> MpiResult<Option<String>> {
    if h == MPI_INFO_NULL {
        return Ok(None);
    }
    Ok(entries_of(h, arg)?
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v))
}

/// A new info object holding `e`: its handle.
pub fn new_info(e: Entries) -> i32 {
    let mut t = INFOS.lock().unwrap();
    let i = super::free_slot(&mut t);
    t[i] = Some(e);
    direct_handle(OBJ_INFO, i)
}

/// A string argument of at most `max` characters (`class` the error otherwise).
fn limited(s: String, arg: &str, max: i32, class: i32) -> MpiResult<String> {
    if s.len() > max as usize {
        return Err(err(
            class,
            format!("{arg} is {} characters long; the limit is {max}", s.len()),
        ));
    }
    Ok(s)
}

/// A key argument (`arg` names it): at most MPI_MAX_INFO_KEY - 1 characters, not
/// blank.
pub fn key(s: String, arg: &str) -> MpiResult<String> {
    let s = limited(s, arg, MPI_MAX_INFO_KEY - 1, MPI_ERR_INFO_KEY)?;
    if s.trim().is_empty() {
        return Err(err(MPI_ERR_INFO_KEY, format!("{arg} is empty")));
    }
    Ok(s)
}

/// A value argument: at most MPI_MAX_INFO_VAL - 1 characters.
pub fn value_arg(s: String, arg: &str) -> MpiResult<String> {
    limited(s, arg, MPI_MAX_INFO_VAL - 1, MPI_ERR_INFO_VALUE)
}

/// The value of `key` in the valid info object `h`.
pub fn get(h: i32, key: &str) -> MpiResult<Option<String>> {
    Ok(entries_of(h, "info")?
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v))
}

/// Validates an info argument that is to be modified (not MPI_INFO_ENV).
pub fn check_writable(h: i32, arg: &str) -> MpiResult<()> {
    writable(h, arg).map(|_| ())
}

/// The table index of an info object that may be modified (not MPI_INFO_ENV).
fn writable(h: i32, arg: &str) -> MpiResult<usize> {
    index(h, arg)?.ok_or_else(|| {
        err(
            MPI_ERR_INFO,
            format!("{arg} is MPI_INFO_ENV, which cannot be modified"),
        )
    })
}

/// Runs `f` on the entries of the modifiable info object `h`.
fn modify<R>(h: i32, f: impl FnOnce(&mut Entries) -> R) -> MpiResult<R> {
    let i = writable(h, "info")?;
    let mut t = INFOS.lock().unwrap();
    Ok(f(t[i].as_mut().unwrap()))
}

/// MPI_Info_set: `key` (checked by [`key`]) takes `value` in `h`.
pub fn set(h: i32, key: &str, value: String) -> MpiResult<()> {
    modify(h, |e| match e.iter_mut().find(|(k, _)| k == key) {
        Some(slot) => slot.1 = value,
        None => e.push((key.to_string(), value)),
    })
}

/// MPI_Info_delete.
pub fn delete(h: i32, key: &str) -> MpiResult<()> {
    let found = modify(h, |e| {
        let before = e.len();
        e.retain(|(k, _)| k != key);
        e.len() != before
    })?;
    if !found {
        return Err(err(
            MPI_ERR_INFO_NOKEY,
            format!("key {key:?} is not in the info object"),
        ));
    }
    Ok(())
}

/// MPI_Info_get_nthkey: key `n` of `h`.
pub fn nth_key(h: i32, n: i32) -> MpiResult<String> {
    let e = entries_of(h, "info")?;
    if n < 0 || n as usize >= e.len() {
        return Err(err(
            MPI_ERR_ARG,
            format!("n={n} is not below the number of keys ({})", e.len()),
        ));
    }
    Ok(e[n as usize].0.clone())
}

/// MPI_Info_free: the object is gone (MPI_INFO_ENV may not be freed).
pub fn free(h: i32) -> MpiResult<()> {
    let i = writable(h, "info")?;
    INFOS.lock().unwrap()[i] = None;
    Ok(())
}

/// What MPI_INFO_ENV holds (MPI-3.1 10.5.6; the keys MPI_Comm_spawn takes): "command"
/// and "argv" (the program and its arguments, as mpiexec started it), "maxprocs" (the
/// size of the MPI_COMM_WORLD mpiexec started, 1 without it) and "wdir" (the working
/// directory at the first call). The same before MPI_Init, in between and after
/// MPI_Finalize.
pub fn env_entries() -> Entries {
    static ENV: std::sync::OnceLock<Entries> = std::sync::OnceLock::new();
    ENV.get_or_init(|| {
        let mut args = std::env::args_os().map(|a| a.to_string_lossy().into_owned());
        let mut e = Vec::new();
        if let Some(cmd) = args.next() {
            e.push(("command".to_string(), cmd));
        }
        let rest: Vec<String> = args.collect();
        if !rest.is_empty() {
            e.push(("argv".to_string(), rest.join(" ")));
        }
        let procs = crate::settings::startup()
            .size
            .as_deref()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(1);
        e.push(("maxprocs".to_string(), procs.to_string()));
        if let Ok(d) = std::env::current_dir() {
            e.push(("wdir".to_string(), d.to_string_lossy().into_owned()));
        }
        e
    })
    .clone()
}
