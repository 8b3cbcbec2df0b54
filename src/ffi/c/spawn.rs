//! Process creation: MPI_Comm_spawn, MPI_Comm_spawn_multiple, MPI_Comm_get_parent
//! (MPI_Comm_disconnect is with the other destructors in comm.rs). The engine is
//! comm/spawn.rs; here the C arguments are read and checked.
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::ffi::c::info;
use crate::ffi::check;
use crate::mpi_entry;
use crate::spawn::{self, Cmd};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

/// Longest argument list read from a C argv (a missing NULL terminator is caught here
/// rather than read forever).
const MAX_ARGS: usize = 1 << 16;

fn c_str(p: *const c_char, arg: &str) -> MpiResult<String> {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{arg} is NULL")));
    }
    // SAFETY: the caller passes a NUL-terminated string, as the standard requires.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map(str::to_string)
        .map_err(|_| err(MPI_ERR_ARG, format!("{arg} is not valid UTF-8")))
}

/// Reads a NULL-terminated argv (MPI_ARGV_NULL is NULL: no arguments).
fn c_argv(p: *const *const c_char, arg: &str) -> MpiResult<Vec<String>> {
    let mut v = Vec::new();
    if p.is_null() {
        return Ok(v);
    }
    for i in 0..MAX_ARGS {
        // SAFETY: argv is an array terminated by a NULL pointer; i stops at it.
        let a = unsafe { *p.add(i) };
        if a.is_null() {
            return Ok(v);
        }
        v.push(c_str(a, &format!("{arg}[{i}]"))?);
    }
    Err(err(
        MPI_ERR_ARG,
        format!("{arg} has more than {MAX_ARGS} entries (is it NULL-terminated?)"),
    ))
}

/// The per-command info keys shmpi uses: `wdir` (working directory) and `path`
/// (directories to search for the program). Other keys are ignored, as the standard
/// allows; `host` must name this machine.
pub fn cmd_info(h: i32, arg: &str, cmd: &mut Cmd) -> MpiResult<()> {
    if h == MPI_INFO_NULL {
        return Ok(());
    }
    for (k, v) in info::entries_of(h, arg)? {
        match k.as_str() {
            "wdir" => cmd.wdir = Some(v),
            "path" => cmd.path = Some(v),
            "host" => {
                let here = hostname();
                if !["localhost", "127.0.0.1", here.as_str()].contains(&v.as_str()) {
                    return Err(err(
                        MPI_ERR_SPAWN,
                        format!("{arg}: host \"{v}\" is not this machine ({here}); shmpi runs every process on one machine"),
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn hostname() -> String {
    let mut b = [0u8; 256];
    // SAFETY: gethostname writes at most b.len() bytes into our buffer.
    let r = unsafe { libc::gethostname(b.as_mut_ptr() as *mut c_char, b.len()) };
    if r != 0 {
        return String::new();
    }
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..n]).into_owned()
}

pub fn maxprocs(n: c_int, arg: &str) -> MpiResult<usize> {
    if n <= 0 {
        return Err(err(
            MPI_ERR_ARG,
            format!("{arg}={n}: the number of processes to start must be positive"),
        ));
    }
    Ok(n as usize)
}

/// Runs a spawn: `cmds` is read (at the root only) and checked by `read`; every rank
/// gets the intercommunicator or the error, and its error codes.
pub fn run_spawn(
    comm: i32,
    root: c_int,
    intercomm: *mut i32,
    errcodes: *mut c_int,
    read: impl FnOnce() -> MpiResult<Vec<Cmd>>,
) -> MpiResult<()> {
    let c = check::comm(comm)?;
    if c.is_inter() {
        return Err(err(
            MPI_ERR_COMM,
            "the parent communicator of a spawn must be an intracommunicator",
        ));
    }
    let root = check::root(root, &c)?;
    if intercomm.is_null() {
        return Err(err(MPI_ERR_ARG, "intercomm is NULL"));
    }
    let mine = if c.rank == root {
        read()
    } else {
        Ok(Vec::new())
    };
    let mut n = 0;
    let out = spawn::spawn(&c, root, mine, &mut n);
    // Error codes: one per process asked for.
    if !errcodes.is_null() && n > 0 {
        let code = match &out {
            Ok(_) => MPI_SUCCESS,
            Err(e) => e.class,
        };
        // SAFETY: `errcodes`: passed on from the entry point, valid as the MPI caller must pass it.
        unsafe { check::array_mut(errcodes, n, "array_of_errcodes") }?.fill(code);
    }
    let ic = out?;
    // SAFETY: `intercomm`: passed on from the entry point, valid as the MPI caller must pass it.
    unsafe { check::out(intercomm, ic.handle, "intercomm") }
}

mpi_entry!(MPI_Comm_spawn, PMPI_Comm_spawn, (command: *const c_char, argv: *const *const c_char, maxprocs: c_int, info: i32, root: c_int, comm: i32, intercomm: *mut i32, array_of_errcodes: *mut c_int), errcomm = comm, {
    run_spawn(comm, root, intercomm, array_of_errcodes, || {
        let mut cmd = Cmd {
            prog: c_str(command, "command")?,
            args: c_argv(argv, "argv")?,
            n: self::maxprocs(maxprocs, "maxprocs")?,
            ..Default::default()
        };
        cmd_info(info, "info", &mut cmd)?;
        Ok(vec![cmd])
    })
});

mpi_entry!(MPI_Comm_spawn_multiple, PMPI_Comm_spawn_multiple, (count: c_int, array_of_commands: *const *const c_char, array_of_argv: *const *const *const c_char, array_of_maxprocs: *const c_int, array_of_info: *const i32, root: c_int, comm: i32, intercomm: *mut i32, array_of_errcodes: *mut c_int), errcomm = comm, {
    run_spawn(comm, root, intercomm, array_of_errcodes, || {
        if count <= 0 {
            return Err(err(MPI_ERR_ARG, format!("count={count}: at least one command is needed")));
        }
        let k = count as usize;
        let cmds = check::array(array_of_commands, k, "array_of_commands")?;
        let procs = check::array(array_of_maxprocs, k, "array_of_maxprocs")?;
        let infos = check::array(array_of_info, k, "array_of_info")?;
        let argvs = if array_of_argv.is_null() {
            None
        } else {
            Some(check::array(array_of_argv, k, "array_of_argv")?)
        };
        let mut v = Vec::with_capacity(k);
        for i in 0..k {
            let mut cmd = Cmd {
                prog: c_str(cmds[i], &format!("array_of_commands[{i}]"))?,
                args: match argvs {
                    Some(a) => c_argv(a[i], &format!("array_of_argv[{i}]"))?,
                    None => Vec::new(),
                },
                n: self::maxprocs(procs[i], &format!("array_of_maxprocs[{i}]"))?,
                ..Default::default()
            };
            cmd_info(infos[i], &format!("array_of_info[{i}]"), &mut cmd)?;
            v.push(cmd);
        }
        Ok(v)
    })
});

mpi_entry!(MPI_Comm_get_parent, PMPI_Comm_get_parent, (parent: *mut i32), errcomm = MPI_COMM_WORLD, {
    crate::runtime::job()?;
    let mut h = crate::comm::parent();
    if h != MPI_COMM_NULL && !crate::comm::is_valid(h) {
        h = MPI_COMM_NULL;
    }
    check::out(parent, h, "parent")
});
