//! mpiexec: argument parsing and the job supervisor.
//!
//! mpiexec creates the job arena (a memfd, inherited by every rank), starts one process
//! per rank with the environment protocol the library's MPI_Init reads
//! (`SHMPI_RANK`, `SHMPI_SIZE`, `SHMPI_ARENA_FD`, `SHMPI_JOBID`), and supervises them:
//! the first failure (a signal, a non-zero status, an exit without MPI_Finalize, an
//! MPI_Abort, the timeout) stops every other rank and decides mpiexec's exit status.
//!
//! Ranks stay in mpiexec's process group, so a terminal's job control (Ctrl-C, Ctrl-Z,
//! rank 0 reading the terminal) keeps working; SIGINT, SIGTERM and SIGHUP sent to mpiexec
//! alone are forwarded to every rank. Each rank gets `PR_SET_PDEATHSIG = SIGKILL`, so
//! even a SIGKILL of mpiexec leaves nothing running.
//!
//! Supervision is driven by `sigtimedwait`: SIGCHLD and the forwarded signals are
//! blocked in every mpiexec thread and waited for synchronously, with a short timeout
//! so that the arena's abort record and the job's deadline are checked promptly.
//!
//! Unsafe code here (every block has its SAFETY line):
//! - the libc calls of process supervision (signal masks, `sigtimedwait`, `waitpid`,
//!   `poll`, `fcntl`), which std does not offer.
use crate::p2p;
use crate::shm::{self, Arena, STATE_STARTED};
use crate::spawn::{self, Cmd, Request};
use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Largest job mpiexec starts.
pub const MAX_RANKS: usize = 4096;
/// Largest universe (process slots, spawned processes included).
pub const MAX_SLOTS: usize = 4096;
/// Exit status of a job stopped by `--timeout`.
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit status for usage errors.
pub const EXIT_USAGE: i32 = 2;
/// Time ranks get between SIGTERM and SIGKILL when the job is stopped.
const KILL_GRACE: Duration = Duration::from_millis(200);
/// How long a spawn that finds no room waits for running spawned processes to finish
/// and free their slots.
const SPAWN_PATIENCE: Duration = Duration::from_secs(3);
/// Longest pause of the supervision loop.
const TICK: Duration = Duration::from_millis(20);

pub const USAGE: &str = "\
Usage: mpiexec -n N [options] program [args...]

Starts N processes of `program` as one MPI job on this machine.

Options:
  -n N, -np N            number of processes (1..4096), required
  -l, -prepend-rank      prefix every output line with \"[rank]: \"
  -usize N, --universe-size N
                         process slots for the job, the N ranks included: room
                         for MPI_Comm_spawn and the value of MPI_UNIVERSE_SIZE
                         (default N + N, at least 4 and at most 16 more; the
                         environment variable SHMPI_UNIVERSE_SIZE does the same)
  --timeout SEC          stop the job after SEC seconds (exit status 124);
                         the environment variable SHMPI_TIMEOUT does the same,
                         and without it MPIEXEC_TIMEOUT (MPICH's name)
  -genv NAME VALUE       set NAME=VALUE in every rank's environment
  -env NAME VALUE        same as -genv
  -x NAME[=VALUE]        same, Open MPI style (without VALUE: export NAME)
  --                     end of options
  -h, --help             this text
  --version              print the version

Standard input goes to rank 0. The exit status is 0 if every rank exited 0; the
status of the first failing rank otherwise (128+signal for a signal); the error
code for MPI_Abort; 124 for a timeout; 2 for usage errors.
";

/// A parsed command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub n: usize,
    /// Process slots (MPI_UNIVERSE_SIZE), `n` included.
    pub universe: usize,
    pub label: bool,
    pub timeout: Option<f64>,
    pub env: Vec<(String, String)>,
    pub program: String,
    pub args: Vec<OsString>,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Run(Options),
    Help,
    Version,
}

fn parse_count(v: &str) -> Result<usize, String> {
    match v.trim().parse::<u64>() {
        Ok(0) => Err(format!(
            "-n must be a positive number of processes, got '{v}'"
        )),
        Ok(k) if k > MAX_RANKS as u64 => Err(format!(
            "-n {v}: at most {MAX_RANKS} processes are supported"
        )),
        Ok(k) => Ok(k as usize),
        Err(_) => Err(format!(
            "-n must be a positive integer number of processes, got '{v}'"
        )),
    }
}

fn parse_universe(v: &str) -> Result<usize, String> {
    match v.trim().parse::<u64>() {
        Ok(k) if k >= 1 && k <= MAX_SLOTS as u64 => Ok(k as usize),
        _ => Err(format!(
            "the universe size must be a number of processes from 1 to {MAX_SLOTS}, got '{v}'"
        )),
    }
}

/// The default universe: the ranks plus as many again, at least 4 and at most 16 more.
pub fn default_universe(n: usize) -> usize {
    (n + n.clamp(4, 16)).min(MAX_SLOTS)
}

fn parse_timeout(v: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t < 1e9 => Ok(t),
        _ => Err(format!(
            "--timeout must be a positive number of seconds, got '{v}'"
        )),
    }
}

/// Parses mpiexec's arguments (without argv[0]). `env_timeout` is the name and value
/// of the environment variable that sets the timeout (SHMPI_TIMEOUT, else
/// MPIEXEC_TIMEOUT), used when no --timeout is given.
pub fn parse_args(args: &[OsString], env_timeout: Option<(&str, &str)>) -> Result<Parsed, String> {
    let mut n: Option<usize> = None;
    let mut universe: Option<usize> = None;
    let mut label = false;
    let mut timeout: Option<f64> = None;
    let mut env = Vec::new();
    let mut i = 0;
    let text = |i: usize| -> Result<String, String> {
        args.get(i)
            .ok_or_else(|| "missing value".to_string())?
            .to_str()
            .map(str::to_string)
            .ok_or_else(|| format!("argument {} is not valid UTF-8", i + 1))
    };
    let value = |i: usize, opt: &str| -> Result<String, String> {
        match args.get(i) {
            None => Err(format!("option {opt} needs a value")),
            Some(v) => v
                .to_str()
                .map(str::to_string)
                .ok_or_else(|| format!("the value of {opt} is not valid UTF-8")),
        }
    };
    while i < args.len() {
        let a = text(i).unwrap_or_default();
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        let (name, inline) = match a.split_once('=') {
            Some((k, v)) if k.starts_with("-") => (k.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        // Options that take one value, given as `-opt VALUE` or `-opt=VALUE`.
        let take = |i: &mut usize| -> Result<String, String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => {
                    *i += 1;
                    value(*i, &name)
                }
            }
        };
        match name.as_str() {
            "-h" | "--help" | "-help" => return Ok(Parsed::Help),
            "--version" | "-version" => return Ok(Parsed::Version),
            "-n" | "-np" | "--n" | "--np" => n = Some(parse_count(&take(&mut i)?)?),
            "-l" | "--label" | "-prepend-rank" | "--prepend-rank" if inline.is_none() => {
                label = true
            }
            "--timeout" | "-timeout" => timeout = Some(parse_timeout(&take(&mut i)?)?),
            "-usize" | "--usize" | "--universe-size" | "-universe-size" | "-universe_size" => {
                universe = Some(parse_universe(&take(&mut i)?)?)
            }
            "-genv" | "-env" | "--genv" | "--env" if inline.is_none() => {
                let k = value(i + 1, &name)?;
                let v = value(i + 2, &name)
                    .map_err(|_| format!("option {name} needs a NAME and a VALUE"))?;
                if k.is_empty() || k.contains('=') {
                    return Err(format!("{name}: invalid variable name '{k}'"));
                }
                env.push((k, v));
                i += 2;
            }
            "-x" if inline.is_none() => {
                let kv = value(i + 1, &name)?;
                i += 1;
                match kv.split_once('=') {
                    Some((k, v)) if !k.is_empty() => env.push((k.to_string(), v.to_string())),
                    Some(_) => return Err(format!("-x: invalid variable '{kv}'")),
                    None => {
                        if let Ok(v) = std::env::var(&kv) {
                            env.push((kv, v));
                        }
                    }
                }
            }
            _ => {
                // `-n4` (no separator) is common enough to accept.
                if let Some(rest) = a
                    .strip_prefix("-n")
                    .filter(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
                {
                    n = Some(parse_count(rest)?);
                } else {
                    return Err(format!("unknown option '{a}' (see mpiexec --help)"));
                }
            }
        }
        i += 1;
    }
    let Some(n) = n else {
        return Err("missing -n N (the number of processes to start)".into());
    };
    if i >= args.len() {
        return Err("no program given (usage: mpiexec -n N program [args...])".into());
    }
    let program = args[i]
        .to_str()
        .ok_or("the program name is not valid UTF-8")?
        .to_string();
    if universe.is_none() {
        if let Some(u) = std::env::var("SHMPI_UNIVERSE_SIZE")
            .ok()
            .filter(|u| !u.trim().is_empty())
        {
            universe = Some(parse_universe(&u).map_err(|e| format!("SHMPI_UNIVERSE_SIZE: {e}"))?);
        }
    }
    let universe = match universe {
        Some(u) if u < n => {
            return Err(format!(
                "the universe size ({u}) must be at least the number of processes ({n})"
            ))
        }
        Some(u) => u,
        None => default_universe(n),
    };
    if timeout.is_none() {
        if let Some((name, t)) = env_timeout.filter(|(_, t)| !t.trim().is_empty()) {
            timeout = Some(parse_timeout(t).map_err(|e| format!("{name}: {e}"))?);
        }
    }
    Ok(Parsed::Run(Options {
        n,
        universe,
        label,
        timeout,
        env,
        program,
        args: args[i + 1..].to_vec(),
    }))
}

/// Finds `prog` the way execvp would and checks it can be executed.
pub fn resolve_program(prog: &str) -> Result<PathBuf, String> {
    fn executable(p: &Path) -> Result<(), String> {
        let md = std::fs::metadata(p).map_err(|e| format!("program '{}': {e}", p.display()))?;
        if md.is_dir() {
            return Err(format!("program '{}' is a directory", p.display()));
        }
        if md.permissions().mode() & 0o111 == 0 {
            return Err(format!("program '{}' is not executable", p.display()));
        }
        Ok(())
    }
    if prog.is_empty() {
        return Err("the program name is empty".into());
    }
    if prog.contains('/') {
        let p = PathBuf::from(prog);
        executable(&p)?;
        return Ok(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    let mut not_exec = None;
    for dir in std::env::split_paths(&path) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let cand = dir.join(prog);
        if cand.is_file() {
            match executable(&cand) {
                Ok(()) => return Ok(cand),
                Err(e) => not_exec = Some(e),
            }
        }
    }
    Err(not_exec.unwrap_or_else(|| format!("program '{prog}' not found in PATH")))
}

/// A signal's usual description.
pub fn signal_name(sig: i32) -> String {
    let s = match sig {
        libc::SIGHUP => "Hangup",
        libc::SIGINT => "Interrupt",
        libc::SIGQUIT => "Quit",
        libc::SIGILL => "Illegal instruction",
        libc::SIGTRAP => "Trace/breakpoint trap",
        libc::SIGABRT => "Aborted",
        libc::SIGBUS => "Bus error",
        libc::SIGFPE => "Floating point exception",
        libc::SIGKILL => "Killed",
        libc::SIGUSR1 => "User defined signal 1",
        libc::SIGSEGV => "Segmentation fault",
        libc::SIGUSR2 => "User defined signal 2",
        libc::SIGPIPE => "Broken pipe",
        libc::SIGALRM => "Alarm clock",
        libc::SIGTERM => "Terminated",
        libc::SIGXCPU => "CPU time limit exceeded",
        libc::SIGXFSZ => "File size limit exceeded",
        libc::SIGSYS => "Bad system call",
        _ => return format!("signal {sig}"),
    };
    s.to_string()
}

/// mpiexec's entry point: parses the arguments, runs the job, returns the exit status.
pub fn main_with_args(args: Vec<OsString>) -> i32 {
    let env_timeout = ["SHMPI_TIMEOUT", "MPIEXEC_TIMEOUT"]
        .into_iter()
        .find_map(|k| Some((k, std::env::var(k).ok().filter(|v| !v.trim().is_empty())?)));
    let opts = match parse_args(&args, env_timeout.as_ref().map(|(k, v)| (*k, v.as_str()))) {
        Ok(Parsed::Run(o)) => o,
        Ok(Parsed::Help) => {
            print!("{USAGE}");
            return 0;
        }
        Ok(Parsed::Version) => {
            println!("mpiexec (shmpi) {}", env!("CARGO_PKG_VERSION"));
            return 0;
        }
        Err(e) => {
            eprintln!("mpiexec: {e}");
            return EXIT_USAGE;
        }
    };
    let exe = match resolve_program(&opts.program) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("mpiexec: {e}");
            return EXIT_USAGE;
        }
    };
    match run(&opts, &exe) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mpiexec: {e}");
            1
        }
    }
}

// ---- signals and processes (the only unsafe code of the launcher) ----

fn supervised_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a local sigset_t.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGCHLD, libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks the supervised signals in this thread (threads started later inherit the
/// mask) and makes sure SIGCHLD is not ignored (children must stay waitable).
fn block_signals(set: &libc::sigset_t) {
    // SAFETY: changes this thread's signal mask and SIGCHLD's disposition to default;
    // both calls only take valid pointers or constants.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, set, std::ptr::null_mut());
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
    }
}

/// Waits up to `timeout` for one of the blocked signals in `set`.
fn wait_signal(set: &libc::sigset_t, timeout: Duration) -> Option<i32> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: sigtimedwait with a valid set, an out-parameter and a timespec.
    let r = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::sigtimedwait(set, &mut info, &ts)
    };
    (r > 0).then_some(r)
}

/// Reaps one child: (pid, wait status).
fn reap(block: bool) -> Option<(i32, i32)> {
    let mut st = 0;
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: waitpid with a valid status pointer.
        let r = unsafe { libc::waitpid(-1, &mut st, flags) };
        if r > 0 {
            return Some((r, st));
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return None;
    }
}

fn send_signal(pid: i32, sig: i32) {
    // SAFETY: kill has no memory preconditions; pid is one of our unreaped children,
    // so it cannot have been reused.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// Raises the soft descriptor limit to at least `want` (as far as the hard limit allows).
fn raise_fd_limit(want: u64) {
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) == 0 && (rl.rlim_cur as u64) < want {
            rl.rlim_cur = (want as libc::rlim_t).min(rl.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &rl);
        }
    }
}

/// Moves the arena descriptor above the standard streams (if mpiexec was started with
/// one of them closed, the memfd could land on 0..2 and be replaced by a rank's stdio).
/// The copy is inheritable, like the original.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD duplicates a descriptor we own; the result is checked and owned.
    let d = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD, 3) };
    if d < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: d is a fresh descriptor nobody else owns.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(d) })
}

/// Sets up a rank's process between fork and exec.
fn child_setup(cmd: &mut Command, parent: i32) {
    let pre = move || -> io::Result<()> {
        // SAFETY: only async-signal-safe calls on local data: the signal mask blocked by
        // mpiexec is cleared; the rank is killed when mpiexec dies; if mpiexec already
        // died between fork and prctl, give up rather than run unsupervised.
        unsafe {
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            // (see `run`: the ranks' memory readable by mpiexec's descendants)
            libc::prctl(libc::PR_SET_PTRACER, parent as libc::c_ulong);
        }
        Ok(())
    };
    // SAFETY: the closure above only makes async-signal-safe calls.
    unsafe {
        cmd.pre_exec(pre);
    }
}

// ---- labelled output ----

struct OutStream {
    file: File,
    prefix: Vec<u8>,
    to_err: bool,
    partial: Vec<u8>,
    open: bool,
}

/// Copies every rank's output to mpiexec's stdout/stderr, one prefixed line at a time.
/// New streams arrive on `incoming` (spawned processes); the copying ends when every
/// stream is closed and no more can come.
fn pump_output(incoming: mpsc::Receiver<OutStream>) {
    const MAX_LINE: usize = 1 << 16;
    let mut buf = vec![0u8; 1 << 16];
    let mut streams: Vec<OutStream> = Vec::new();
    let mut more = true;
    loop {
        loop {
            match incoming.try_recv() {
                Ok(s) => streams.push(s),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    more = false;
                    break;
                }
            }
        }
        streams.retain(|s| s.open);
        let live: Vec<usize> = (0..streams.len()).collect();
        if live.is_empty() {
            if !more {
                break;
            }
            match incoming.recv() {
                Ok(s) => streams.push(s),
                Err(_) => break,
            }
            continue;
        }
        let mut fds: Vec<libc::pollfd> = live
            .iter()
            .map(|&i| libc::pollfd {
                fd: streams[i].file.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: poll on a valid array of pollfd of the given length.
        let wait_ms = if more { 50 } else { -1 };
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait_ms) };
        if r < 0 {
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break;
        }
        let (mut out, mut err) = (Vec::new(), Vec::new());
        for (k, &i) in live.iter().enumerate() {
            if fds[k].revents == 0 {
                continue;
            }
            let s = &mut streams[i];
            let dst = if s.to_err { &mut err } else { &mut out };
            match s.file.read(&mut buf) {
                Ok(0) | Err(_) => {
                    if !s.partial.is_empty() {
                        dst.extend_from_slice(&s.prefix);
                        dst.append(&mut s.partial);
                        dst.push(b'\n');
                    }
                    s.open = false;
                }
                Ok(m) => {
                    s.partial.extend_from_slice(&buf[..m]);
                    let mut start = 0;
                    while let Some(p) = s.partial[start..].iter().position(|&b| b == b'\n') {
                        dst.extend_from_slice(&s.prefix);
                        dst.extend_from_slice(&s.partial[start..start + p + 1]);
                        start += p + 1;
                    }
                    s.partial.drain(..start);
                    if s.partial.len() >= MAX_LINE {
                        dst.extend_from_slice(&s.prefix);
                        dst.append(&mut s.partial);
                        dst.push(b'\n');
                    }
                }
            }
        }
        if !out.is_empty() {
            let mut o = io::stdout().lock();
            let _ = o.write_all(&out);
            let _ = o.flush();
        }
        if !err.is_empty() {
            let _ = io::stderr().lock().write_all(&err);
        }
    }
}

// ---- the supervisor ----

#[derive(Clone, Copy, PartialEq)]
enum Status {
    Unused,
    Running,
    Done,
}

/// The processes of the job, indexed by arena slot.
struct Job {
    pids: Vec<i32>,
    status: Vec<Status>,
    /// How messages name the process in each slot ("rank 3", "spawned rank 0 (slot 5)").
    names: Vec<String>,
    by_pid: HashMap<i32, usize>,
    live: usize,
    sigset: libc::sigset_t,
}

impl Job {
    /// Reaps every child that has ended, returning (slot, pid, wait status).
    fn reap_ready(&mut self, block: bool) -> Vec<(usize, i32, i32)> {
        let mut v = Vec::new();
        while self.live > 0 {
            let Some((pid, st)) = reap(block && v.is_empty()) else {
                break;
            };
            if let Some(&r) = self.by_pid.get(&pid) {
                if self.status[r] == Status::Running {
                    self.status[r] = Status::Done;
                    self.live -= 1;
                    v.push((r, pid, st));
                }
            }
        }
        v
    }

    fn signal_all(&self, sig: i32) {
        for (r, &pid) in self.pids.iter().enumerate() {
            if self.status[r] == Status::Running {
                send_signal(pid, sig);
            }
        }
    }

    /// Waits up to `d` for every rank to end, reaping them.
    fn wait_all_for(&mut self, d: Duration) {
        let end = Instant::now() + d;
        while self.live > 0 {
            self.reap_ready(false);
            let now = Instant::now();
            if self.live == 0 || now >= end {
                break;
            }
            wait_signal(&self.sigset, (end - now).min(TICK));
        }
    }

    /// Stops every live rank: SIGTERM, then SIGKILL after a short grace; reaps all.
    fn stop_all(&mut self) {
        self.reap_ready(false);
        if self.live == 0 {
            return;
        }
        self.signal_all(libc::SIGTERM);
        self.wait_all_for(KILL_GRACE);
        if self.live > 0 {
            self.signal_all(libc::SIGKILL);
            while self.live > 0 {
                if self.reap_ready(true).is_empty() {
                    break; // no children left (ECHILD): nothing more to wait for
                }
            }
        }
    }

    /// Forgets a process started by a spawn that failed part-way: it is killed and its
    /// end is not a failure of the job.
    fn cancel(&mut self, slot: usize) {
        if self.status[slot] == Status::Running {
            send_signal(self.pids[slot], libc::SIGKILL);
            self.by_pid.remove(&self.pids[slot]);
            self.status[slot] = Status::Done;
            self.live -= 1;
        }
    }
}

/// Formats how a process ended, or None if it ended well.
fn judge(arena: &Arena, r: usize, name: &str, pid: i32, st: i32) -> Option<(String, i32)> {
    if libc::WIFSIGNALED(st) {
        let sig = libc::WTERMSIG(st);
        return Some((
            format!(
                "{name} (pid {pid}) killed by signal {sig} ({})",
                signal_name(sig)
            ),
            128 + sig,
        ));
    }
    let code = if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else {
        1
    };
    if code != 0 {
        return Some((
            format!("{name} (pid {pid}) exited with status {code}"),
            code,
        ));
    }
    if arena
        .rank_state(r)
        .load(std::sync::atomic::Ordering::Acquire)
        == STATE_STARTED
    {
        return Some((
            format!("{name} (pid {pid}) exited without calling MPI_Finalize"),
            1,
        ));
    }
    None
}

fn abort_exit_code(code: i32) -> i32 {
    match code & 0xff {
        0 => 1,
        c => c,
    }
}

/// What every process of the job is started with.
struct Starter<'a> {
    opts: &'a Options,
    arena_fd: i32,
    me: i32,
    ld_path: OsString,
    /// New output streams for the labelling thread.
    streams: Option<mpsc::Sender<OutStream>>,
    /// The next never-used slot.
    next: usize,
    /// Slots below `next` whose process finished cleanly: a spawn may reuse them.
    reusable: Vec<bool>,
    /// How many processes each slot has held before its current one.
    generation: Vec<u64>,
}

/// One process to start.
struct Proc<'a> {
    slot: usize,
    exe: &'a Path,
    argv0: &'a str,
    args: &'a [OsString],
    env: Vec<(&'static str, String)>,
    dir: Option<&'a str>,
    stdin: bool,
    name: String,
}

impl Starter<'_> {
    fn start(&self, job: &mut Job, p: Proc) -> io::Result<()> {
        let mut cmd = Command::new(p.exe);
        cmd.arg0(p.argv0).args(p.args);
        for (k, v) in &self.opts.env {
            cmd.env(k, v);
        }
        for (k, v) in &p.env {
            cmd.env(k, v);
        }
        cmd.env("SHMPI_RANK", p.slot.to_string())
            .env("SHMPI_SLOTS", self.opts.universe.to_string())
            .env("SHMPI_NP", self.opts.n.to_string())
            .env("SHMPI_ARENA_FD", self.arena_fd.to_string())
            .env("SHMPI_JOBID", self.me.to_string())
            .env("SHMPI_GENERATION", self.generation[p.slot].to_string())
            .env("LD_LIBRARY_PATH", &self.ld_path);
        if let Some(d) = p.dir {
            cmd.current_dir(d);
        }
        cmd.stdin(if p.stdin {
            Stdio::inherit()
        } else {
            Stdio::null()
        });
        if self.streams.is_some() {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        child_setup(&mut cmd, self.me);
        let mut child = cmd.spawn()?;
        let pid = child.id() as i32;
        if let Some(tx) = &self.streams {
            let prefix = format!("[{}]: ", p.slot).into_bytes();
            if let Some(o) = child.stdout.take() {
                let _ = tx.send(OutStream {
                    file: File::from(OwnedFd::from(o)),
                    prefix: prefix.clone(),
                    to_err: false,
                    partial: Vec::new(),
                    open: true,
                });
            }
            if let Some(e) = child.stderr.take() {
                let _ = tx.send(OutStream {
                    file: File::from(OwnedFd::from(e)),
                    prefix,
                    to_err: true,
                    partial: Vec::new(),
                    open: true,
                });
            }
        }
        // The child is reaped by pid, not through `child`.
        drop(child);
        job.pids[p.slot] = pid;
        job.status[p.slot] = Status::Running;
        job.names[p.slot] = p.name;
        job.by_pid.insert(pid, p.slot);
        job.live += 1;
        Ok(())
    }

    /// Serves an MPI_Comm_spawn request: starts the children in the next free slots.
    /// Returns their first slot.
    /// `Err((message, true))` means no room yet while spawned processes still run:
    /// worth another try in a moment.
    fn spawn(
        &mut self,
        job: &mut Job,
        arena: &Arena,
        req: &Request,
    ) -> Result<usize, (String, bool)> {
        let total = req.total();
        let slots = self.opts.universe;
        if total == 0 {
            return Err(("no processes to start".into(), false));
        }
        // The children's MPI_COMM_WORLD takes consecutive slots: the lowest run of
        // slots that are unused or free again (finished, with nothing left in flight).
        let usable = |s: usize| s >= self.next || (self.reusable[s] && p2p::slot_quiet(arena, s));
        let Some(base) = (0..=slots.saturating_sub(total)).find(|&b| (b..b + total).all(usable))
        else {
            let free = (0..slots).filter(|&s| usable(s)).count();
            // Spawned processes still running may be about to finish (a program that
            // disconnects its workers and spawns new ones): worth waiting a moment.
            let exiting = (self.opts.n..slots).any(|s| job.status[s] == Status::Running);
            return Err((format!(
                "the universe has room for {free} more process(es) ({} running), {total} were asked for (MPI_UNIVERSE_SIZE is {slots}; start mpiexec with a larger --universe-size)",
                job.live
            ), exiting));
        };
        let exes = req
            .cmds
            .iter()
            .map(|c| {
                resolve_spawned(c).map_err(|e| (format!("cannot start '{}': {e}", c.prog), false))
            })
            .collect::<Result<Vec<_>, _>>()?;
        for s in base..base + total {
            if s < self.next {
                self.reusable[s] = false;
                self.generation[s] += 1;
                arena.reset_slot(s);
            }
        }
        let wctx = arena.alloc_channel(total).ok_or((
            "no free communicator context for the new MPI_COMM_WORLD".to_string(),
            false,
        ))?;
        let parents = req
            .parents
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let mut slot = base;
        for (k, (c, exe)) in req.cmds.iter().zip(&exes).enumerate() {
            let args: Vec<OsString> = c.args.iter().map(OsString::from).collect();
            for i in 0..c.n {
                let p = Proc {
                    slot,
                    exe,
                    argv0: &c.prog,
                    args: &args,
                    env: vec![
                        ("SHMPI_SIZE", total.to_string()),
                        ("SHMPI_WORLD_BASE", base.to_string()),
                        ("SHMPI_WORLD_CTX", wctx.to_string()),
                        ("SHMPI_PARENT_CTX", req.ctx.to_string()),
                        ("SHMPI_PARENT_GROUP", parents.clone()),
                        ("SHMPI_APPNUM", k.to_string()),
                    ],
                    dir: c.wdir.as_deref(),
                    stdin: false,
                    name: format!("spawned rank {} (slot {slot}, {})", slot - base, c.prog),
                };
                if let Err(e) = self.start(job, p) {
                    for s in base..slot {
                        job.cancel(s);
                    }
                    self.next = self.next.max(slot + 1);
                    for _ in 0..total {
                        arena.release_channel(wctx);
                    }
                    return Err((
                        format!("cannot start process {i} of '{}': {e}", c.prog),
                        false,
                    ));
                }
                slot += 1;
            }
        }
        self.next = self.next.max(slot);
        Ok(base)
    }
}

/// Finds a spawned command's program: relative to its `wdir` if it names a path, else
/// in its `path` info directories, then as mpiexec's own program is found.
fn resolve_spawned(c: &Cmd) -> Result<PathBuf, String> {
    if c.prog.contains('/') {
        let p = match &c.wdir {
            Some(d) if !c.prog.starts_with('/') => Path::new(d).join(&c.prog),
            _ => PathBuf::from(&c.prog),
        };
        return resolve_program(&p.to_string_lossy());
    }
    if let Some(path) = &c.path {
        for dir in path.split(':').filter(|d| !d.is_empty()) {
            let cand = Path::new(dir).join(&c.prog);
            if cand.is_file() {
                return resolve_program(&cand.to_string_lossy());
            }
        }
    }
    resolve_program(&c.prog)
}

/// Runs the job described by `opts` (program already resolved to `exe`).
pub fn run(opts: &Options, exe: &Path) -> io::Result<i32> {
    let n = opts.n;
    let slots = opts.universe.max(n);
    let mut sigset = supervised_signals();
    // SAFETY: adds a valid signal number to a sigset_t we own.
    unsafe {
        libc::sigaddset(&mut sigset, spawn::request_signal());
    }
    block_signals(&sigset);
    // Under Yama's ptrace_scope 1 a process may read the memory of its descendants
    // only: mpiexec names itself the ptracer of itself and of each rank (child_setup),
    // which lets the ranks, its descendants, read each other's memory and its own (the
    // probe of shm/peer.rs) for single-copy transfers. Without Yama the call fails
    // harmlessly.
    // SAFETY: prctl(PR_SET_PTRACER) takes no pointers.
    unsafe {
        libc::prctl(libc::PR_SET_PTRACER, libc::getpid() as libc::c_ulong);
    }

    // The job-wide SHMPI_* settings (settings.rs `Job`: the arena's layout, the
    // algorithms) are mpiexec's, recorded in the arena, which every rank takes them
    // from: those given with -genv apply to mpiexec too.
    for (k, v) in &opts.env {
        if k.starts_with("SHMPI_") {
            std::env::set_var(k, v);
        }
    }

    let job_settings = crate::settings::Job::from_env();
    let arena_fd: OwnedFd = shm::create_job_arena(slots, n, &job_settings)
        .and_then(above_stdio)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot create the job arena: {e}")))?;
    let arena = Arena::map(arena_fd.as_raw_fd(), slots, n)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot map the job arena: {e}")))?;

    let me = std::process::id() as i32;
    let libdir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent()?.parent().map(|d| d.join("lib")));
    let mut ld_path = OsString::new();
    if let Some(d) = &libdir {
        ld_path.push(d.as_os_str());
    }
    let user_ld = opts
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "LD_LIBRARY_PATH")
        .map(|(_, v)| OsString::from(v))
        .or_else(|| std::env::var_os("LD_LIBRARY_PATH"));
    if let Some(old) = user_ld.filter(|o| !o.is_empty()) {
        if !ld_path.is_empty() {
            ld_path.push(":");
        }
        ld_path.push(old);
    }
    if opts.label {
        raise_fd_limit(2 * slots as u64 + 64);
    }

    let mut job = Job {
        pids: vec![0; slots],
        status: vec![Status::Unused; slots],
        names: vec![String::new(); slots],
        by_pid: HashMap::new(),
        live: 0,
        sigset,
    };
    // Labelled output: one thread copies every process's pipes; it ends at their EOF
    // once no more processes can start.
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let (stream_tx, stream_rx) = mpsc::channel::<OutStream>();
    let pump = if opts.label {
        let t = std::thread::Builder::new()
            .name("mpiexec-output".into())
            .spawn(move || {
                pump_output(stream_rx);
                let _ = done_tx.send(());
            })?;
        Some(t)
    } else {
        None
    };
    let mut starter = Starter {
        opts,
        arena_fd: arena_fd.as_raw_fd(),
        me,
        ld_path,
        streams: opts.label.then_some(stream_tx),
        next: n,
        reusable: vec![false; slots],
        generation: vec![0; slots],
    };
    for r in 0..n {
        let p = Proc {
            slot: r,
            exe,
            argv0: &opts.program,
            args: &opts.args,
            env: vec![("SHMPI_SIZE", n.to_string())],
            dir: None,
            stdin: r == 0,
            name: format!("rank {r}"),
        };
        if let Err(e) = starter.start(&mut job, p) {
            eprintln!("mpiexec: cannot start rank {r} ({}): {e}", opts.program);
            job.stop_all();
            return Ok(1);
        }
    }

    let start = Instant::now();
    let deadline = opts.timeout.map(|t| start + Duration::from_secs_f64(t));
    let mut failure: Option<i32> = None;
    let mut forwarded = 0u32;
    let mut spawn_since: Option<Instant> = None;

    while job.live > 0 {
        let mut wait = TICK;
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        if let Some(sig) = wait_signal(&job.sigset, wait) {
            if sig != libc::SIGCHLD && sig != spawn::request_signal() {
                forwarded += 1;
                // A third signal means "stop now".
                job.signal_all(if forwarded >= 3 { libc::SIGKILL } else { sig });
            }
        }
        if failure.is_none() {
            if let Some(req) = spawn::pending_request(&arena) {
                let since = *spawn_since.get_or_insert_with(Instant::now);
                match req
                    .map_err(|e| (e, false))
                    .and_then(|r| starter.spawn(&mut job, &arena, &r))
                {
                    Ok(base) => {
                        spawn::answer(&arena, Ok(base));
                        spawn_since = None;
                    }
                    // Finished processes still exiting will free their slots: wait a little.
                    Err((_, true)) if since.elapsed() < SPAWN_PATIENCE => {}
                    Err((msg, _)) => {
                        spawn::answer(&arena, Err(msg));
                        spawn_since = None;
                    }
                }
            }
        }
        for (r, pid, st) in job.reap_ready(false) {
            if failure.is_some() {
                continue;
            }
            if let Some((ar, code)) = arena.abort_record() {
                report_abort(&arena, &job, ar, code);
                failure = Some(abort_exit_code(code));
            } else if let Some((msg, code)) = judge(&arena, r, &job.names[r], pid, st) {
                eprintln!("mpiexec: {msg}");
                failure = Some(code);
            } else {
                starter.reusable[r] = true;
            }
        }
        if failure.is_none() && job.live > 0 {
            if let Some((ar, code)) = arena.abort_record() {
                report_abort(&arena, &job, ar, code);
                failure = Some(abort_exit_code(code));
                // Let the aborting rank finish flushing its output and exit by itself.
                let ar = ar as usize;
                let grace = Instant::now() + KILL_GRACE;
                while ar < slots && job.status[ar] == Status::Running && Instant::now() < grace {
                    wait_signal(&job.sigset, Duration::from_millis(5));
                    job.reap_ready(false);
                }
            }
        }
        if failure.is_none() && job.live > 0 && deadline.is_some_and(|d| Instant::now() >= d) {
            let mut msg = format!(
                "mpiexec: job timed out after {} s; ranks still running:\n",
                opts.timeout.unwrap_or(0.0)
            );
            for r in 0..slots {
                if job.status[r] == Status::Running {
                    let call = arena.call_of(r);
                    let name = &job.names[r];
                    if call.is_empty() {
                        msg.push_str(&format!("  {name} (pid {})\n", job.pids[r]));
                    } else {
                        msg.push_str(&format!("  {name} (pid {}): {call}\n", job.pids[r]));
                    }
                }
            }
            eprint!("{msg}");
            failure = Some(EXIT_TIMEOUT);
        }
        if failure.is_some() {
            job.stop_all();
        }
    }
    // A rank may have recorded an abort and still exited 0 (or been the last one out).
    if failure.is_none() {
        if let Some((ar, code)) = arena.abort_record() {
            report_abort(&arena, &job, ar, code);
            failure = Some(abort_exit_code(code));
        }
    }

    // Every rank is gone: the arena can go too.
    drop(arena);
    drop(arena_fd);
    drop(starter);
    if let Some(t) = pump {
        // Descendants of a rank may still hold its pipes; don't wait for them long.
        if done_rx.recv_timeout(Duration::from_secs(1)).is_ok() {
            let _ = t.join();
        }
    }
    let _ = io::stdout().flush();
    Ok(failure.unwrap_or(0))
}

/// Says how the job was stopped from inside: MPI_Abort or a fatal MPI error.
fn report_abort(arena: &Arena, job: &Job, rank: i32, code: i32) {
    let name = usize::try_from(rank)
        .ok()
        .and_then(|r| job.names.get(r))
        .filter(|s| !s.is_empty())
        .cloned()
        .unwrap_or_else(|| format!("rank {rank}"));
    let line = if arena.abort_kind() == shm::ABORT_FATAL_ERROR {
        format!("mpiexec: {name} stopped the job after a fatal MPI error (see its message above)\n")
    } else {
        format!("mpiexec: {name} called MPI_Abort with error code {code}\n")
    };
    // One write: `eprintln!` writes its pieces one by one to the unbuffered stderr, and
    // a rank's message written at the same moment could land between them
    // (tests/failures.rs saw "mpiexec: shmpi: fatal error: ...").
    let _ = io::stderr().write_all(line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &[&str]) -> Result<Parsed, String> {
        let a: Vec<OsString> = v.iter().map(OsString::from).collect();
        parse_args(&a, None)
    }

    #[test]
    fn parses_common_forms() {
        let Parsed::Run(o) = p(&["-n", "4", "-l", "./a", "-x", "y"]).unwrap() else {
            panic!()
        };
        assert_eq!(o.n, 4);
        assert!(o.label);
        assert_eq!(o.program, "./a");
        assert_eq!(o.args, vec![OsString::from("-x"), OsString::from("y")]);
        let Parsed::Run(o) =
            p(&["-np=2", "--timeout", "1.5", "-genv", "A", "b", "--", "prog"]).unwrap()
        else {
            panic!()
        };
        assert_eq!((o.n, o.timeout), (2, Some(1.5)));
        assert_eq!(o.env, vec![("A".to_string(), "b".to_string())]);
        assert_eq!(o.program, "prog");
        assert!(matches!(p(&["-n8", "x"]), Ok(Parsed::Run(o)) if o.n == 8));
        assert_eq!(p(&["--help"]), Ok(Parsed::Help));
    }

    #[test]
    fn universe_size() {
        // Tests may run with SHMPI_UNIVERSE_SIZE set: only the flag forms are checked.
        let u = |v: &[&str]| match p(v) {
            Ok(Parsed::Run(o)) => Ok(o.universe),
            Ok(_) => panic!(),
            Err(e) => Err(e),
        };
        assert_eq!(u(&["-n", "2", "-usize", "9", "a"]), Ok(9));
        assert_eq!(u(&["-n", "2", "--universe-size=2", "a"]), Ok(2));
        assert!(u(&["-n", "4", "-usize", "3", "a"]).is_err());
        assert!(u(&["-n", "4", "-usize", "0", "a"]).is_err());
        assert!(u(&["-n", "4", "-usize", "x", "a"]).is_err());
        assert_eq!(default_universe(1), 5);
        assert_eq!(default_universe(4), 8);
        assert_eq!(default_universe(8), 16);
        assert_eq!(default_universe(64), 80);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(p(&["prog"]).unwrap_err().contains("missing -n"));
        assert!(p(&["-n", "0", "prog"]).is_err());
        assert!(p(&["-n", "x", "prog"]).is_err());
        assert!(p(&["-n", "4097", "prog"]).is_err());
        assert!(p(&["-n", "2"]).unwrap_err().contains("no program"));
        assert!(p(&["-n", "2", "--bogus", "prog"])
            .unwrap_err()
            .contains("unknown option"));
        assert!(p(&["-n"]).is_err());
        assert!(p(&["-n", "2", "--timeout", "-1", "prog"]).is_err());
    }

    #[test]
    fn env_timeout_is_a_default() {
        let a: Vec<OsString> = ["-n", "1", "p"].iter().map(OsString::from).collect();
        let Parsed::Run(o) = parse_args(&a, Some(("SHMPI_TIMEOUT", "3"))).unwrap() else {
            panic!()
        };
        assert_eq!(o.timeout, Some(3.0));
        let a: Vec<OsString> = ["-n", "1", "--timeout", "5", "p"]
            .iter()
            .map(OsString::from)
            .collect();
        let Parsed::Run(o) = parse_args(&a, Some(("SHMPI_TIMEOUT", "3"))).unwrap() else {
            panic!()
        };
        assert_eq!(o.timeout, Some(5.0));
    }
}
