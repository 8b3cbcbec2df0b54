//! Info objects: ordered (key, value) string pairs, for the info arguments of
//! communicator constructors and persistent collectives. MPI_INFO_ENV is a built-in,
//! read-only object (see `env_entries`). As MPI-4.0 allows (and MPICH does), the
//! MPI_Info functions work at any time, before MPI_Init and after MPI_Finalize too.
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::ffi::check;
use crate::mpi_entry;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::sync::Mutex;

type Entries = Vec<(String, String)>;
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
pub fn entries_of(h: i32, arg: &str) -> MpiResult<Vec<(String, String)>> {
    entries(h, arg)
}

fn entries(h: i32, arg: &str) -> MpiResult<Vec<(String, String)>> {
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
    Ok(entries(h, arg)?
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v))
}

pub fn new_info(e: Vec<(String, String)>) -> i32 {
    let mut t = INFOS.lock().unwrap();
    let i = match t.iter().position(|x| x.is_none()) {
        Some(i) => i,
        None => {
            t.push(None);
            t.len() - 1
        }
    };
    t[i] = Some(e);
    direct_handle(OBJ_INFO, i)
}

fn string(p: *const c_char, arg: &str, max: i32, class: i32) -> MpiResult<String> {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{arg} is NULL")));
    }
    // SAFETY: a NUL-terminated string from the caller.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    if s.len() > max as usize {
        return Err(err(
            class,
            format!("{arg} is {} characters long; the limit is {max}", s.len()),
        ));
    }
    if s.trim().is_empty() && class == MPI_ERR_INFO_KEY {
        return Err(err(class, format!("{arg} is empty")));
    }
    Ok(s)
}

fn writable(h: i32, arg: &str) -> MpiResult<usize> {
    index(h, arg)?.ok_or_else(|| {
        err(
            MPI_ERR_INFO,
            format!("{arg} is MPI_INFO_ENV, which cannot be modified"),
        )
    })
}

mpi_entry!(MPI_Info_create, PMPI_Info_create, (info: *mut i32), errcomm = MPI_COMM_WORLD, {
    check::out(info, new_info(Vec::new()), "info")
});

/// What MPI_INFO_ENV holds (MPI-3.1 10.5.6; the keys MPI_Comm_spawn takes): "command"
/// and "argv" (the program and its arguments, as mpiexec started it), "maxprocs" (the size of the MPI_COMM_WORLD mpiexec started, 1 without
/// it) and "wdir" (the working directory at the first call). The same before MPI_Init,
/// in between and after MPI_Finalize.
fn env_entries() -> Entries {
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

// MPI_Info_create_env (MPI-4.0): a new info object with MPI_INFO_ENV's entries; argc
// and argv may be 0 and NULL (the entries come from the process itself).
mpi_entry!(MPI_Info_create_env, PMPI_Info_create_env, (argc: c_int, argv: *mut *mut c_char, info: *mut i32), errcomm = MPI_COMM_WORLD, {
    let _ = (argc, argv);
    check::out(info, new_info(env_entries()), "info")
});

mpi_entry!(MPI_Info_set, PMPI_Info_set, (info: i32, key: *const c_char, value: *const c_char), errcomm = MPI_COMM_WORLD, {
    let i = writable(info, "info")?;
    let k = string(key, "key", MPI_MAX_INFO_KEY - 1, MPI_ERR_INFO_KEY)?;
    let v = string(value, "value", MPI_MAX_INFO_VAL - 1, MPI_ERR_INFO_VALUE)?;
    let mut t = INFOS.lock().unwrap();
    let e = t[i].as_mut().unwrap();
    match e.iter_mut().find(|(kk, _)| *kk == k) {
        Some(slot) => slot.1 = v,
        None => e.push((k, v)),
    }
    Ok(())
});

mpi_entry!(MPI_Info_delete, PMPI_Info_delete, (info: i32, key: *const c_char), errcomm = MPI_COMM_WORLD, {
    let i = writable(info, "info")?;
    let k = string(key, "key", MPI_MAX_INFO_KEY - 1, MPI_ERR_INFO_KEY)?;
    let mut t = INFOS.lock().unwrap();
    let e = t[i].as_mut().unwrap();
    let before = e.len();
    e.retain(|(kk, _)| *kk != k);
    if e.len() == before {
        return Err(err(MPI_ERR_INFO_NOKEY, format!("key {k:?} is not in the info object")));
    }
    Ok(())
});

mpi_entry!(MPI_Info_get, PMPI_Info_get, (info: i32, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let k = string(key, "key", MPI_MAX_INFO_KEY - 1, MPI_ERR_INFO_KEY)?;
    let n = check::count(valuelen, "valuelen")?;
    match entries(info, "info")?.into_iter().find(|(kk, _)| *kk == k) {
        Some((_, v)) => {
            // valuelen excludes the terminating NUL (MPI-3.1 §9).
            check::c_string(value, n + 1, &v, "value")?;
            check::out(flag, 1, "flag")
        }
        None => check::out(flag, 0, "flag"),
    }
});

mpi_entry!(MPI_Info_get_valuelen, PMPI_Info_get_valuelen, (info: i32, key: *const c_char, valuelen: *mut c_int, flag: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let k = string(key, "key", MPI_MAX_INFO_KEY - 1, MPI_ERR_INFO_KEY)?;
    match entries(info, "info")?.into_iter().find(|(kk, _)| *kk == k) {
        Some((_, v)) => {
            check::out(valuelen, v.len() as c_int, "valuelen")?;
            check::out(flag, 1, "flag")
        }
        None => check::out(flag, 0, "flag"),
    }
});

// MPI-4: the value and its length in one call; *buflen is the buffer's size in, the
// value's length plus its NUL out; a buffer of 0 bytes is not written.
mpi_entry!(MPI_Info_get_string, PMPI_Info_get_string, (info: i32, key: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int), errcomm = MPI_COMM_WORLD, {
    let k = string(key, "key", MPI_MAX_INFO_KEY - 1, MPI_ERR_INFO_KEY)?;
    let cap = check::count(check::inp(buflen, "buflen")?, "buflen")?;
    match entries(info, "info")?.into_iter().find(|(kk, _)| *kk == k) {
        Some((_, v)) => {
            if cap > 0 {
                check::c_string(value, cap, &v, "value")?;
            }
            check::out(buflen, v.len() as c_int + 1, "buflen")?;
            check::out(flag, 1, "flag")
        }
        None => check::out(flag, 0, "flag"),
    }
});

mpi_entry!(MPI_Info_get_nkeys, PMPI_Info_get_nkeys, (info: i32, nkeys: *mut c_int), errcomm = MPI_COMM_WORLD, {
    check::out(nkeys, entries(info, "info")?.len() as c_int, "nkeys")
});

mpi_entry!(MPI_Info_get_nthkey, PMPI_Info_get_nthkey, (info: i32, n: c_int, key: *mut c_char), errcomm = MPI_COMM_WORLD, {
    let e = entries(info, "info")?;
    if n < 0 || n as usize >= e.len() {
        return Err(err(MPI_ERR_ARG, format!("n={n} is not below the number of keys ({})", e.len())));
    }
    check::c_string(key, MPI_MAX_INFO_KEY as usize, &e[n as usize].0, "key").map(|_| ())
});

mpi_entry!(MPI_Info_dup, PMPI_Info_dup, (info: i32, newinfo: *mut i32), errcomm = MPI_COMM_WORLD, {
    let e = entries(info, "info")?;
    check::out(newinfo, new_info(e), "newinfo")
});

mpi_entry!(MPI_Info_free, PMPI_Info_free, (info: *mut i32), errcomm = MPI_COMM_WORLD, {
    let h = check::inp(info, "info")?;
    let i = writable(h, "info")?;
    INFOS.lock().unwrap()[i] = None;
    check::out(info, MPI_INFO_NULL, "info")
});
