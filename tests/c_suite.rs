//! The C (and Fortran) test suite: compiles every program listed in c_tests/LIST (and
//! fortran_tests/LIST) with the installed wrappers in build/bin, runs it under
//! build/bin/mpiexec for each listed process count, and reports one line per case.
//!
//! LIST format, one test per line (`#` starts a comment):
//!
//! ```text
//! name np1,np2,... [timeout=SEC] [env=K=V,K2=V2] [args=A,B] [expect=fail] [build=mpich|run=mpich]
//! ```
//!
//! The drop-in cases, both ways: `build=mpich` compiles with Debian's `mpicc.mpich` /
//! `mpif90.mpich` and runs under shmpi's mpiexec (the program must load shmpi by the
//! sonames MPICH recorded); `run=mpich` compiles with shmpi's wrappers and runs under
//! `mpiexec.mpich` with MPICH's library found as `libmpi.so.12` / `libmpifort.so.12`
//! (the multi-node path). Such a case is reported as `mpich-built/NAME` or
//! `on-mpich/NAME`.
//!
//! clients/LIST names scripts, one case each (`name [timeout=SEC] [xfail]`):
//! `clients/NAME.sh` runs with bash in the repository root and fails with a non-zero
//! status (rsmpi, mpi4py, CMake's FindMPI, meson, autoconf-style checks, `make install`
//! and a moved tree, PMPI interposition). They run one at a time after the
//! programs, as they build things of their own. A script marked `xfail` may instead
//! exit with status 77 after checking that it fails for its known reason (its last
//! line `expected failure: REASON`): that counts as passed and prints `XFAIL`. Such a
//! script that exits 0 fails as `XPASS`, so that the mark is dropped and the pass
//! becomes required; status 77 from an unmarked script is a failure.
//!
//! The library and the wrappers are built by the Makefile before this runs. The
//! environment variable SHMPI_TEST_FILTER keeps only the cases whose printed name
//! (`coll_reduce`, `on-mpich/p2p_basic`, or a client script's name) contains it.
use std::collections::VecDeque;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WORKERS: usize = 2;
const DEFAULT_TIMEOUT: u64 = 60;
const TAIL_LINES: usize = 15;

#[derive(Clone, Debug)]
struct Test {
    name: String,
    source: PathBuf,
    fortran: bool,
    nps: Vec<usize>,
    timeout: u64,
    env: Vec<(String, String)>,
    expect_fail: bool,
    args: Vec<String>,
    mode: Mode,
}

/// Which MPI builds the program and which runs it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// shmpi's wrappers, shmpi's mpiexec.
    Native,
    /// MPICH's wrappers, shmpi's mpiexec and library.
    MpichBuilt,
    /// shmpi's wrappers, MPICH's mpiexec and library.
    OnMpich,
}

impl Test {
    /// The name printed and filtered on: the mode, the program, and its settings (the
    /// same program runs under several).
    fn label(&self) -> String {
        let base = match self.mode {
            Mode::Native => self.name.clone(),
            Mode::MpichBuilt => format!("mpich-built/{}", self.name),
            Mode::OnMpich => format!("on-mpich/{}", self.name),
        };
        if self.env.is_empty() {
            return base;
        }
        let env: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{base}[{}]", env.join(","))
    }
}

fn parse_list(path: &Path, dir: &Path, fortran: bool) -> Result<Vec<Test>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut tests = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |what: &str| format!("{}:{}: {what}", path.display(), ln + 1);
        let mut words = line.split_whitespace();
        let name = words.next().unwrap().to_string();
        let nps: Vec<usize> = words
            .next()
            .ok_or_else(|| bad("missing process counts"))?
            .split(',')
            .map(|s| s.parse::<usize>().ok().filter(|&n| n > 0))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("bad process count"))?;
        let mut t = Test {
            source: PathBuf::new(),
            fortran,
            nps,
            timeout: DEFAULT_TIMEOUT,
            env: Vec::new(),
            expect_fail: false,
            args: Vec::new(),
            mode: Mode::Native,
            name,
        };
        for w in words {
            if let Some(v) = w.strip_prefix("timeout=") {
                t.timeout = v.parse().map_err(|_| bad("bad timeout"))?;
            } else if let Some(v) = w.strip_prefix("env=") {
                for kv in v.split(',').filter(|s| !s.is_empty()) {
                    let (k, v) = kv.split_once('=').ok_or_else(|| bad("bad env entry"))?;
                    t.env.push((k.to_string(), v.to_string()));
                }
            } else if let Some(v) = w.strip_prefix("args=") {
                t.args = v
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
            } else if w == "expect=fail" {
                t.expect_fail = true;
            } else if w == "build=mpich" {
                t.mode = Mode::MpichBuilt;
            } else if w == "run=mpich" {
                t.mode = Mode::OnMpich;
            } else {
                return Err(bad(&format!("unknown attribute '{w}'")));
            }
        }
        let exts: &[&str] = if fortran {
            &["f90", "F90", "f", "F"]
        } else {
            &["c"]
        };
        t.source = exts
            .iter()
            .map(|e| dir.join(format!("{}.{e}", t.name)))
            .find(|p| p.exists())
            .unwrap_or_else(|| dir.join(format!("{}.{}", t.name, exts[0])));
        tests.push(t);
    }
    Ok(tests)
}

const MPICC_MPICH: &str = "/usr/bin/mpicc.mpich";
const MPIF90_MPICH: &str = "/usr/bin/mpif90.mpich";
const MPIEXEC_MPICH: &str = "/usr/bin/mpiexec.mpich";
const MPICH_TOOLS: [&str; 3] = [MPICC_MPICH, MPIF90_MPICH, MPIEXEC_MPICH];

/// Makes `dir` hold MPICH's C and Fortran libraries under the sonames an upstream
/// MPICH build records (Debian's own are libmpich.so.12 and libmpichfort.so.12).
fn mpich_lib_dir(dir: &Path) -> Result<(), String> {
    let sys = Path::new("/usr/lib/x86_64-linux-gnu");
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (link, target) in [
        ("libmpi.so.12", "libmpich.so.12"),
        ("libmpifort.so.12", "libmpichfort.so.12"),
    ] {
        let target = sys.join(target);
        if !target.exists() {
            return Err(format!("{} is missing: run `make deps`", target.display()));
        }
        let link = dir.join(link);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link)
            .map_err(|e| format!("{}: {e}", link.display()))?;
    }
    Ok(())
}

/// The exit status of a client script that fails for its known reason.
const XFAIL_STATUS: i32 = 77;

/// A clients/LIST entry: name, time limit, expected to fail.
type Script = (String, u64, bool);

/// clients/LIST: `name [timeout=SEC] [xfail]` per line; a missing file means no scripts.
fn parse_scripts(path: &Path) -> Result<Vec<Script>, String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        let mut words = line.split_whitespace();
        let Some(name) = words.next() else {
            continue;
        };
        let mut timeout = 600;
        let mut xfail = false;
        for w in words {
            if w == "xfail" {
                xfail = true;
                continue;
            }
            timeout = w
                .strip_prefix("timeout=")
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{}:{}: bad attribute '{w}'", path.display(), ln + 1))?;
        }
        out.push((name.to_string(), timeout, xfail));
    }
    Ok(out)
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    lines[start..]
        .iter()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `cmd` with a hard time limit; returns (success, combined output).
fn run_limited(mut cmd: Command, limit: Duration) -> (Option<i32>, String) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return (None, format!("cannot run {cmd:?}: {e}")),
    };
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = so.read_to_end(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = se.read_to_end(&mut s);
        s
    });
    let end = Instant::now() + limit;
    let mut killed = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                killed = true;
                break child.wait().ok();
            }
            Err(_) => break None,
        }
    };
    let mut out = String::from_utf8_lossy(&t_out.join().unwrap_or_default()).into_owned();
    out.push_str(&String::from_utf8_lossy(&t_err.join().unwrap_or_default()));
    if killed {
        out.push_str(&format!("\n(killed by the test runner after {limit:?})"));
    }
    (
        status
            .and_then(|s| s.code())
            .or(Some(-1))
            .filter(|_| !killed),
        out,
    )
}

enum Work {
    Compile(usize),
    Run(usize, usize),
}

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let bin = root.join("build/bin");
    let filter = std::env::var("SHMPI_TEST_FILTER").unwrap_or_default();
    let mut tests = Vec::new();
    let mut setup_errors = Vec::new();
    for (dir, fortran) in [("c_tests", false), ("fortran_tests", true)] {
        let list = root.join(dir).join("LIST");
        if !list.exists() {
            continue;
        }
        match parse_list(&list, &root.join(dir), fortran) {
            Ok(t) => tests.extend(t),
            Err(e) => setup_errors.push(e),
        }
    }
    tests.retain(|t| t.label().contains(&filter));
    let scripts = match parse_scripts(&root.join("clients/LIST")) {
        Ok(mut s) => {
            s.retain(|(name, _, _)| name.contains(&filter));
            s
        }
        Err(e) => {
            setup_errors.push(e);
            Vec::new()
        }
    };
    for tool in ["mpicc", "mpiexec"] {
        if !bin.join(tool).exists() {
            setup_errors.push(format!(
                "{} is missing: build with `make` first",
                bin.join(tool).display()
            ));
        }
    }
    // MPICH's library under the names an upstream-MPICH-built program records, for the
    // run=mpich cases; and MPICH's tools, which `make deps` installs.
    let mpich_libs = root.join("target/mpich-libs");
    if tests.iter().any(|t| t.mode != Mode::Native) {
        for tool in MPICH_TOOLS {
            if !Path::new(tool).exists() {
                setup_errors.push(format!("{tool} is missing: run `make deps`"));
            }
        }
        if let Err(e) = mpich_lib_dir(&mpich_libs) {
            setup_errors.push(e);
        }
    }
    if !setup_errors.is_empty() {
        for e in &setup_errors {
            println!("FAIL setup: {e}");
        }
        println!("0 passed, {} failed", setup_errors.len());
        return ExitCode::FAILURE;
    }
    let out_c = root.join("target/ctests");
    let out_f = root.join("target/ftests");
    for sub in ["", "mpich-built", "on-mpich"] {
        let _ = std::fs::create_dir_all(out_c.join(sub));
        let _ = std::fs::create_dir_all(out_f.join(sub));
    }
    let exe = move |t: &Test| {
        let dir = if t.fortran { &out_f } else { &out_c };
        match t.mode {
            Mode::Native => dir.join(&t.name),
            Mode::MpichBuilt => dir.join("mpich-built").join(&t.name),
            Mode::OnMpich => dir.join("on-mpich").join(&t.name),
        }
    };

    // Work queue: every test's compilation first, then the runs of the tests that
    // compiled (queued by the worker that compiled them).
    let queue: Arc<Mutex<VecDeque<Work>>> =
        Arc::new(Mutex::new((0..tests.len()).map(Work::Compile).collect()));
    let counts = Arc::new(Mutex::new((0usize, 0usize)));
    let tests = Arc::new(tests);
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        let (queue, counts, tests) = (queue.clone(), counts.clone(), tests.clone());
        let bin = bin.clone();
        let exe = exe.clone();
        let mpich_libs = mpich_libs.clone();
        workers.push(std::thread::spawn(move || loop {
            let Some(w) = queue.lock().unwrap().pop_front() else {
                break;
            };
            match w {
                Work::Compile(i) => {
                    let t = &tests[i];
                    let mpich = t.mode == Mode::MpichBuilt;
                    let mut cmd = if t.fortran {
                        let mut c = if mpich {
                            Command::new(MPIF90_MPICH)
                        } else {
                            Command::new(bin.join("mpif90"))
                        };
                        c.args(["-O2", "-Wall"]);
                        // Module files go next to the program, not into the working
                        // directory (the source tree), and apart from those of the same
                        // test built in another mode at the same time.
                        let mods = exe(t).with_extension("modules");
                        let _ = std::fs::create_dir_all(&mods);
                        c.arg("-J").arg(mods);
                        c
                    } else if mpich {
                        // MPICH's header draws warnings of its own: no -Werror.
                        let mut c = Command::new(MPICC_MPICH);
                        c.args(["-Wall", "-O2"]);
                        c
                    } else {
                        let mut c = Command::new(bin.join("mpicc"));
                        c.args(["-Wall", "-Wextra", "-Werror", "-O2"]);
                        c
                    };
                    cmd.arg("-o").arg(exe(t)).arg(&t.source);
                    if !t.fortran {
                        // (the C math library: fenv.h's functions live there)
                        cmd.arg("-lm");
                    }
                    let t0 = Instant::now();
                    let (code, out) = run_limited(cmd, Duration::from_secs(300));
                    if code == Some(0) {
                        let mut q = queue.lock().unwrap();
                        for k in 0..t.nps.len() {
                            q.push_back(Work::Run(i, k));
                        }
                    } else {
                        let mut c = counts.lock().unwrap();
                        c.1 += t.nps.len();
                        println!(
                            "FAIL {} np={}: does not compile ({:.2}s)\n{}",
                            t.label(),
                            t.nps
                                .iter()
                                .map(|n| n.to_string())
                                .collect::<Vec<_>>()
                                .join(","),
                            t0.elapsed().as_secs_f64(),
                            tail(&out, TAIL_LINES)
                        );
                    }
                }
                Work::Run(i, k) => {
                    let t = &tests[i];
                    let np = t.nps[k];
                    let mut cmd = if t.mode == Mode::OnMpich {
                        // Hydra's own time limit; MPICH's library by its upstream names.
                        let mut c = Command::new(MPIEXEC_MPICH);
                        c.env("MPIEXEC_TIMEOUT", t.timeout.to_string())
                            .env("LD_LIBRARY_PATH", &mpich_libs);
                        c
                    } else {
                        let mut c = Command::new(bin.join("mpiexec"));
                        c.arg("--timeout").arg(t.timeout.to_string());
                        c
                    };
                    cmd.arg("-n").arg(np.to_string()).arg(exe(t)).args(&t.args);
                    // A rank sleeps on its doorbell for up to 30 s instead of 20 ms: a
                    // lost wake-up then runs the case out of time instead of costing a
                    // stall nobody sees (a LIST entry may set its own).
                    cmd.env("SHMPI_SLEEP_US", "30000000");
                    for (k, v) in &t.env {
                        if k == "SHMPI_DIRECT" && v == "require" && !shmpi::shm::peer::usable() {
                            // This system refuses process_vm_readv between siblings:
                            // the direct path falls back, and the test still checks
                            // the results.
                            println!("note: {}: process_vm_readv refused here; SHMPI_DIRECT=1 instead of require", t.name);
                            cmd.env(k, "1");
                            continue;
                        }
                        cmd.env(k, v);
                    }
                    let t0 = Instant::now();
                    let (code, out) = run_limited(cmd, Duration::from_secs(t.timeout + 15));
                    let secs = t0.elapsed().as_secs_f64();
                    let ok = match code {
                        Some(0) => !t.expect_fail,
                        Some(_) => t.expect_fail,
                        None => false,
                    };
                    let mut c = counts.lock().unwrap();
                    if ok {
                        c.0 += 1;
                        println!("PASS {} np={np} ({secs:.2}s)", t.label());
                    } else {
                        c.1 += 1;
                        let why = match code {
                            Some(0) => "exited 0 but was expected to fail".to_string(),
                            Some(c) => format!("exit status {c}"),
                            None => "did not finish".to_string(),
                        };
                        println!(
                            "FAIL {} np={np}: {why} ({secs:.2}s)\n{}",
                            t.label(),
                            tail(&out, TAIL_LINES)
                        );
                    }
                }
            }
        }));
    }
    for w in workers {
        let _ = w.join();
    }
    // The client scripts, one at a time: each builds something of its own.
    let mut xfails = 0;
    for (name, timeout, xfail) in &scripts {
        let mut cmd = Command::new("bash");
        cmd.arg(root.join("clients").join(format!("{name}.sh")))
            .current_dir(&root)
            .env("SHMPI_PREFIX", root.join("build"));
        let t0 = Instant::now();
        let (code, out) = run_limited(cmd, Duration::from_secs(*timeout));
        let secs = t0.elapsed().as_secs_f64();
        let mut c = counts.lock().unwrap();
        match (code, xfail) {
            (Some(0), false) => {
                c.0 += 1;
                println!("PASS client/{name} ({secs:.2}s)");
            }
            (Some(0), true) => {
                c.1 += 1;
                println!(
                    "XPASS client/{name}: passes but clients/LIST marks it xfail: drop the \
                     mark ({secs:.2}s)\n{}",
                    tail(&out, TAIL_LINES)
                );
            }
            (Some(XFAIL_STATUS), true) => {
                c.0 += 1;
                xfails += 1;
                let reason = out
                    .lines()
                    .rev()
                    .find_map(|l| l.trim().strip_prefix("expected failure:"))
                    .unwrap_or("(no reason given)")
                    .trim();
                println!("XFAIL client/{name}: {reason} ({secs:.2}s)");
            }
            _ => {
                c.1 += 1;
                let why = match code {
                    Some(XFAIL_STATUS) => format!(
                        "exit status {XFAIL_STATUS} (expected failure), but clients/LIST \
                         does not mark it xfail"
                    ),
                    Some(c) => format!("exit status {c}"),
                    None => "did not finish".to_string(),
                };
                println!("FAIL client/{name}: {why} ({secs:.2}s)\n{}", tail(&out, 40));
            }
        }
    }
    let (pass, fail) = *counts.lock().unwrap();
    if xfails > 0 {
        println!("({xfails} of the passed are expected failures: XFAIL above)");
    }
    // The closing line, alone and in this form, is what CI reads.
    println!("{pass} passed, {fail} failed");
    if fail > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
