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
use crate::shm::{self, Arena, STATE_STARTED};
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
/// Exit status of a job stopped by `--timeout`.
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit status for usage errors.
pub const EXIT_USAGE: i32 = 2;
/// Time ranks get between SIGTERM and SIGKILL when the job is stopped.
const KILL_GRACE: Duration = Duration::from_millis(200);
/// Longest pause of the supervision loop.
const TICK: Duration = Duration::from_millis(20);

pub const USAGE: &str = "\
Usage: mpiexec -n N [options] program [args...]

Starts N processes of `program` as one MPI job on this machine.

Options:
  -n N, -np N            number of processes (1..4096), required
  -l, -prepend-rank      prefix every output line with \"[rank]: \"
  --timeout SEC          stop the job after SEC seconds (exit status 124);
                         the environment variable SHMPI_TIMEOUT does the same
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

fn parse_timeout(v: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t < 1e9 => Ok(t),
        _ => Err(format!(
            "--timeout must be a positive number of seconds, got '{v}'"
        )),
    }
}

/// Parses mpiexec's arguments (without argv[0]). `env_timeout` is the value of
/// SHMPI_TIMEOUT, used when no --timeout is given.
pub fn parse_args(args: &[OsString], env_timeout: Option<&str>) -> Result<Parsed, String> {
    let mut n: Option<usize> = None;
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
    if timeout.is_none() {
        if let Some(t) = env_timeout.filter(|t| !t.trim().is_empty()) {
            timeout = Some(parse_timeout(t).map_err(|e| format!("SHMPI_TIMEOUT: {e}"))?);
        }
    }
    Ok(Parsed::Run(Options {
        n,
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
    let env_timeout = std::env::var("SHMPI_TIMEOUT").ok();
    let opts = match parse_args(&args, env_timeout.as_deref()) {
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
fn pump_output(mut streams: Vec<OutStream>) {
    const MAX_LINE: usize = 1 << 16;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let live: Vec<usize> = (0..streams.len()).filter(|&i| streams[i].open).collect();
        if live.is_empty() {
            break;
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
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
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
    Running,
    Done,
}

struct Job {
    pids: Vec<i32>,
    status: Vec<Status>,
    by_pid: HashMap<i32, usize>,
    live: usize,
    sigset: libc::sigset_t,
}

impl Job {
    /// Reaps every child that has ended, returning (rank, pid, wait status).
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
}

/// Formats how a rank ended, or None if it ended well.
fn judge(arena: &Arena, r: usize, pid: i32, st: i32) -> Option<(String, i32)> {
    if libc::WIFSIGNALED(st) {
        let sig = libc::WTERMSIG(st);
        return Some((
            format!(
                "rank {r} (pid {pid}) killed by signal {sig} ({})",
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
            format!("rank {r} (pid {pid}) exited with status {code}"),
            code,
        ));
    }
    if arena
        .rank_state(r)
        .load(std::sync::atomic::Ordering::Acquire)
        == STATE_STARTED
    {
        return Some((
            format!("rank {r} (pid {pid}) exited without calling MPI_Finalize"),
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

/// Runs the job described by `opts` (program already resolved to `exe`).
pub fn run(opts: &Options, exe: &Path) -> io::Result<i32> {
    let n = opts.n;
    let sigset = supervised_signals();
    block_signals(&sigset);

    // The arena's layout depends on SHMPI_* tuning variables, read by mpiexec (which
    // creates the arena) and by every rank (which maps it): both must see the same
    // values, so those given with -genv apply to mpiexec too.
    for (k, v) in &opts.env {
        if k.starts_with("SHMPI_") {
            std::env::set_var(k, v);
        }
    }

    let arena_fd: OwnedFd = shm::create_job_arena(n)
        .and_then(above_stdio)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot create the job arena: {e}")))?;
    let arena = Arena::map(arena_fd.as_raw_fd(), n)
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
        raise_fd_limit(2 * n as u64 + 64);
    }

    let mut job = Job {
        pids: Vec::with_capacity(n),
        status: Vec::with_capacity(n),
        by_pid: HashMap::new(),
        live: 0,
        sigset,
    };
    let mut streams = Vec::new();
    for r in 0..n {
        let mut cmd = Command::new(exe);
        cmd.arg0(&opts.program).args(&opts.args);
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        cmd.env("SHMPI_RANK", r.to_string())
            .env("SHMPI_SIZE", n.to_string())
            .env("SHMPI_ARENA_FD", arena_fd.as_raw_fd().to_string())
            .env("SHMPI_JOBID", me.to_string())
            .env("LD_LIBRARY_PATH", &ld_path);
        cmd.stdin(if r == 0 {
            Stdio::inherit()
        } else {
            Stdio::null()
        });
        if opts.label {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        child_setup(&mut cmd, me);
        match cmd.spawn() {
            Ok(mut child) => {
                let pid = child.id() as i32;
                if opts.label {
                    let prefix = format!("[{r}]: ").into_bytes();
                    if let Some(o) = child.stdout.take() {
                        streams.push(OutStream {
                            file: File::from(OwnedFd::from(o)),
                            prefix: prefix.clone(),
                            to_err: false,
                            partial: Vec::new(),
                            open: true,
                        });
                    }
                    if let Some(e) = child.stderr.take() {
                        streams.push(OutStream {
                            file: File::from(OwnedFd::from(e)),
                            prefix,
                            to_err: true,
                            partial: Vec::new(),
                            open: true,
                        });
                    }
                }
                // The child is reaped by pid below, not through `child`.
                drop(child);
                job.pids.push(pid);
                job.status.push(Status::Running);
                job.by_pid.insert(pid, r);
                job.live += 1;
            }
            Err(e) => {
                eprintln!("mpiexec: cannot start rank {r} ({}): {e}", opts.program);
                job.stop_all();
                return Ok(1);
            }
        }
    }

    // Labelled output: one thread copies every rank's pipes; it ends at their EOF.
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let pump = if opts.label {
        let t = std::thread::Builder::new()
            .name("mpiexec-output".into())
            .spawn(move || {
                pump_output(streams);
                let _ = done_tx.send(());
            })?;
        Some(t)
    } else {
        None
    };

    let start = Instant::now();
    let deadline = opts.timeout.map(|t| start + Duration::from_secs_f64(t));
    let mut failure: Option<i32> = None;
    let mut forwarded = 0u32;

    while job.live > 0 {
        let mut wait = TICK;
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        if let Some(sig) = wait_signal(&job.sigset, wait) {
            if sig != libc::SIGCHLD {
                forwarded += 1;
                // A third signal means "stop now".
                job.signal_all(if forwarded >= 3 { libc::SIGKILL } else { sig });
            }
        }
        for (r, pid, st) in job.reap_ready(false) {
            if failure.is_some() {
                continue;
            }
            if let Some((ar, code)) = arena.abort_record() {
                report_abort(&arena, ar, code);
                failure = Some(abort_exit_code(code));
            } else if let Some((msg, code)) = judge(&arena, r, pid, st) {
                eprintln!("mpiexec: {msg}");
                failure = Some(code);
            }
        }
        if failure.is_none() && job.live > 0 {
            if let Some((ar, code)) = arena.abort_record() {
                report_abort(&arena, ar, code);
                failure = Some(abort_exit_code(code));
                // Let the aborting rank finish flushing its output and exit by itself.
                let ar = ar as usize;
                let grace = Instant::now() + KILL_GRACE;
                while ar < n && job.status[ar] == Status::Running && Instant::now() < grace {
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
            for r in 0..n {
                if job.status[r] == Status::Running {
                    let call = arena.call_of(r);
                    if call.is_empty() {
                        msg.push_str(&format!("  rank {r} (pid {})\n", job.pids[r]));
                    } else {
                        msg.push_str(&format!("  rank {r} (pid {}): {call}\n", job.pids[r]));
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
            report_abort(&arena, ar, code);
            failure = Some(abort_exit_code(code));
        }
    }

    // Every rank is gone: the arena can go too.
    drop(arena);
    drop(arena_fd);
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
fn report_abort(arena: &Arena, rank: i32, code: i32) {
    if arena.abort_kind() == shm::ABORT_FATAL_ERROR {
        eprintln!(
            "mpiexec: rank {rank} stopped the job after a fatal MPI error (see its message above)"
        );
    } else {
        eprintln!("mpiexec: rank {rank} called MPI_Abort with error code {code}");
    }
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
        let Parsed::Run(o) = parse_args(&a, Some("3")).unwrap() else {
            panic!()
        };
        assert_eq!(o.timeout, Some(3.0));
        let a: Vec<OsString> = ["-n", "1", "--timeout", "5", "p"]
            .iter()
            .map(OsString::from)
            .collect();
        let Parsed::Run(o) = parse_args(&a, Some("3")).unwrap() else {
            panic!()
        };
        assert_eq!(o.timeout, Some(5.0));
    }
}
