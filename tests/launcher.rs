//! Tests of mpiexec and the compiler wrapper that need no MPI library: ranks are shell
//! commands, or this test binary itself acting out the arena side of the protocol
//! (MPI_Init's state, MPI_Abort's record, the current call) through `shmpi::shm`.
use shmpi::shm::{Arena, Layout, STATE_FINALIZED, STATE_STARTED};
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const MPIEXEC: &str = env!("CARGO_BIN_EXE_mpiexec");
const MPICC: &str = env!("CARGO_BIN_EXE_mpicc");
const HELPER_ENV: &str = "SHMPI_LAUNCHER_HELPER";

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    secs: f64,
}

fn run_with(args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(MPIEXEC);
    cmd.args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    cmd.env_remove("SHMPI_TIMEOUT");
    cmd.env_remove("MPIEXEC_TIMEOUT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let t0 = Instant::now();
    let mut child = cmd.spawn().expect("spawn mpiexec");
    if let Some(s) = stdin {
        let mut i = child.stdin.take().unwrap();
        i.write_all(s.as_bytes()).unwrap();
    }
    let out: Output = child.wait_with_output().unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        secs: t0.elapsed().as_secs_f64(),
    }
}

fn run(args: &[&str]) -> Run {
    run_with(args, None, &[])
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("shmpi-launcher-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Pids the ranks wrote into `dir` (files `pid.<rank>`).
fn pids_in(dir: &Path) -> Vec<i32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_name().to_string_lossy().starts_with("pid.") {
            if let Ok(s) = std::fs::read_to_string(e.path()) {
                if let Ok(p) = s.trim().parse() {
                    v.push(p);
                }
            }
        }
    }
    v
}

/// Whether `pid` is a live (non-zombie) process.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(s) => {
            let state = s.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
    }
}

fn assert_all_gone(pids: &[i32]) {
    for &p in pids {
        assert!(!alive(p), "rank process {p} survived the job");
    }
}

fn shm_entries() -> HashSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.to_lowercase().contains("mpi"))
                .collect()
        })
        .unwrap_or_default()
}

/// A rank script that records its pid; `body` runs afterwards.
fn rank_script(dir: &Path, body: &str) -> String {
    format!("echo $$ > {}/pid.$SHMPI_RANK; {body}", dir.display())
}

/// Waits (in the failing rank) until all `n` ranks have written their pid.
fn wait_for_pids(dir: &Path, n: usize) -> String {
    format!(
        "while [ $(ls {} | grep -c pid) -lt {n} ]; do sleep 0.02; done",
        dir.display()
    )
}

// ---- this binary as a rank ----

/// Not a test of its own: when started by mpiexec with SHMPI_LAUNCHER_HELPER set, this
/// plays a rank that touches the arena the way the library does.
#[test]
fn rank_helper() {
    let Ok(what) = std::env::var(HELPER_ENV) else {
        return;
    };
    let rank: usize = std::env::var("SHMPI_RANK").unwrap().parse().unwrap();
    let size: usize = std::env::var("SHMPI_SIZE").unwrap().parse().unwrap();
    let fd: i32 = std::env::var("SHMPI_ARENA_FD").unwrap().parse().unwrap();
    let slots: usize = std::env::var("SHMPI_SLOTS").unwrap().parse().unwrap();
    let np: usize = std::env::var("SHMPI_NP").unwrap().parse().unwrap();
    assert!(
        size == np && slots >= size,
        "SHMPI_SIZE, SHMPI_NP, SHMPI_SLOTS disagree"
    );
    if let Ok(dir) = std::env::var("PID_DIR") {
        std::fs::write(format!("{dir}/pid.{rank}"), std::process::id().to_string()).unwrap();
    }
    let arena = Arena::map(fd, slots, np).expect("map the arena");
    assert!(arena.validate(), "arena not initialised by mpiexec");
    arena
        .rank_pid(rank)
        .store(std::process::id(), Ordering::Release);
    arena
        .rank_state(rank)
        .store(STATE_STARTED, Ordering::Release);
    let sleep_forever = || -> ! {
        loop {
            std::thread::sleep(Duration::from_millis(10));
            if arena.abort_record().is_some() {
                std::process::exit(1);
            }
        }
    };
    match what.as_str() {
        "layout" => {
            // The arena mpiexec created has the size this rank's layout expects.
            let len = std::fs::metadata(format!("/proc/self/fd/{fd}"))
                .unwrap()
                .len();
            let want = Layout::new(slots, np, &arena.settings()).total as u64;
            arena
                .rank_state(rank)
                .store(STATE_FINALIZED, Ordering::Release);
            std::process::exit(if len == want { 0 } else { 9 });
        }
        "finalize" => {
            arena
                .rank_state(rank)
                .store(STATE_FINALIZED, Ordering::Release);
            std::process::exit(0);
        }
        "abort" => {
            if rank == 1 {
                std::thread::sleep(Duration::from_millis(200));
                println!("rank 1 aborting");
                arena.record_abort(1, 7);
                std::process::exit(7);
            }
            sleep_forever()
        }
        "abort0" => {
            if rank == 0 {
                arena.record_abort(0, 256);
                std::process::exit(0);
            }
            sleep_forever()
        }
        "nofinalize" => {
            if rank == size - 1 {
                std::thread::sleep(Duration::from_millis(200));
                std::process::exit(0);
            }
            sleep_forever()
        }
        "hang" => {
            arena.set_call(
                rank,
                &format!("MPI_Recv(source={}, tag=5)", (rank + 1) % size),
            );
            sleep_forever()
        }
        other => panic!("unknown helper action {other}"),
    }
}

fn helper_job(n: usize, action: &str, dir: &Path, extra: &[&str]) -> Run {
    let me = std::env::current_exe().unwrap();
    let n = n.to_string();
    let mut args: Vec<&str> = vec!["-n", &n];
    args.extend_from_slice(extra);
    let me = me.to_str().unwrap();
    args.extend_from_slice(&[
        me,
        "--exact",
        "rank_helper",
        "--nocapture",
        "--test-threads=1",
    ]);
    run_with(
        &args,
        None,
        &[(HELPER_ENV, action), ("PID_DIR", dir.to_str().unwrap())],
    )
}

// ---- success and the environment protocol ----

#[test]
fn all_ranks_exit_zero() {
    let r = run(&["-n", "4", "sh", "-c", "exit 0"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

#[test]
fn finalized_ranks_succeed() {
    let d = scratch("finalized");
    let r = helper_job(3, "finalize", &d, &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(pids_in(&d).len(), 3);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn arena_tuning_variables_reach_mpiexec_too() {
    let d = scratch("layout");
    let r = helper_job(
        2,
        "layout",
        &d,
        &[
            "-genv",
            "SHMPI_SEGMENT",
            "8192",
            "-genv",
            "SHMPI_PIPE_SEGMENT",
            "4096",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn environment_protocol() {
    let mut cmd = Command::new(MPIEXEC);
    cmd.args([
        "-n",
        "3",
        "sh",
        "-c",
        "echo \"$SHMPI_RANK|$SHMPI_SIZE|$SHMPI_JOBID|$(readlink /proc/$$/fd/$SHMPI_ARENA_FD)|$LD_LIBRARY_PATH\"",
    ])
    .env("LD_LIBRARY_PATH", "/somewhere/else")
    .stdout(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let jobid = child.id().to_string();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let libdir = Path::new(MPIEXEC)
        .canonicalize()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("lib");
    let mut ranks = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('|').collect();
        assert_eq!(f.len(), 5, "{line}");
        ranks.push(f[0].parse::<usize>().unwrap());
        assert_eq!(f[1], "3");
        assert_eq!(f[2], jobid);
        assert!(f[3].contains("memfd:"), "arena fd is not a memfd: {line}");
        assert_eq!(
            f[4],
            format!("{}:/somewhere/else", libdir.display()),
            "LD_LIBRARY_PATH"
        );
    }
    ranks.sort();
    assert_eq!(ranks, vec![0, 1, 2]);
}

#[test]
fn genv_and_env_reach_every_rank() {
    let r = run(&[
        "-n",
        "2",
        "-genv",
        "FOO",
        "bar baz",
        "-env",
        "QUX",
        "1",
        "sh",
        "-c",
        "echo \"$SHMPI_RANK:$FOO:$QUX\"",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let mut lines: Vec<&str> = r.stdout.lines().collect();
    lines.sort();
    assert_eq!(lines, vec!["0:bar baz:1", "1:bar baz:1"]);
}

#[test]
fn stdin_goes_to_rank_0_only() {
    let r = run_with(
        &["-n", "3", "sh", "-c", "read x; echo \"$SHMPI_RANK:$x\""],
        Some("hello\n"),
        &[],
    );
    let mut lines: Vec<&str> = r.stdout.lines().collect();
    lines.sort();
    assert_eq!(lines, vec!["0:hello", "1:", "2:"]);
}

#[test]
fn label_prefixes_stdout_and_stderr() {
    let r = run(&[
        "-n",
        "2",
        "-l",
        "sh",
        "-c",
        "echo out$SHMPI_RANK; echo err$SHMPI_RANK >&2; echo two$SHMPI_RANK; printf tail$SHMPI_RANK",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for rank in 0..2 {
        for w in ["out", "two", "tail"] {
            let want = format!("[{rank}]: {w}{rank}");
            assert!(
                r.stdout.lines().any(|l| l == want),
                "{want} in {}",
                r.stdout
            );
        }
        let want = format!("[{rank}]: err{rank}");
        assert!(
            r.stderr.lines().any(|l| l == want),
            "{want} in {}",
            r.stderr
        );
        assert!(!r.stdout.contains("err"));
    }
    // Lines of one rank keep their order.
    let o: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("[1]")).collect();
    assert_eq!(o, vec!["[1]: out1", "[1]: two1", "[1]: tail1"]);
}

// ---- failures ----

#[test]
fn exit_status_propagates_and_stops_the_job() {
    let d = scratch("exit3");
    let shm_before = shm_entries();
    let body = format!(
        "if [ $SHMPI_RANK = 1 ]; then {}; exit 3; fi; exec sleep 30",
        wait_for_pids(&d, 4)
    );
    let r = run(&["-n", "4", "sh", "-c", &rank_script(&d, &body)]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    let pids = pids_in(&d);
    assert_eq!(pids.len(), 4);
    let want = "mpiexec: rank 1 (pid ";
    assert!(r.stderr.contains(want), "{}", r.stderr);
    assert!(r.stderr.contains(") exited with status 3"), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.secs < 2.0, "took {:.2}s", r.secs);
    assert_all_gone(&pids);
    let new: Vec<_> = shm_entries().difference(&shm_before).cloned().collect();
    assert!(new.is_empty(), "new files in /dev/shm: {new:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn segfault_is_reported_with_the_signal() {
    let d = scratch("segv");
    let body = format!(
        "if [ $SHMPI_RANK = 2 ]; then {}; kill -SEGV $$; fi; exec sleep 30",
        wait_for_pids(&d, 3)
    );
    let r = run(&["-n", "3", "sh", "-c", &rank_script(&d, &body)]);
    assert_eq!(r.code, Some(128 + 11), "{}", r.stderr);
    assert!(
        r.stderr.contains("rank 2 (pid ")
            && r.stderr
                .contains("killed by signal 11 (Segmentation fault)"),
        "{}",
        r.stderr
    );
    assert!(r.secs < 2.0, "took {:.2}s", r.secs);
    assert_all_gone(&pids_in(&d));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sigterm_resistant_ranks_are_killed() {
    let d = scratch("trapterm");
    let body = format!(
        "if [ $SHMPI_RANK = 0 ]; then {}; exit 5; fi; trap '' TERM; while :; do sleep 0.05; done",
        wait_for_pids(&d, 2)
    );
    let r = run(&["-n", "2", "sh", "-c", &rank_script(&d, &body)]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(r.secs < 2.0, "took {:.2}s", r.secs);
    assert_all_gone(&pids_in(&d));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn timeout_reports_live_ranks_and_their_calls() {
    let d = scratch("timeout");
    let r = helper_job(2, "hang", &d, &["--timeout", "2"]);
    assert_eq!(r.code, Some(124), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("mpiexec: job timed out after 2 s; ranks still running:"),
        "{}",
        r.stderr
    );
    let pids = pids_in(&d);
    assert_eq!(pids.len(), 2);
    for (rank, pid) in [0, 1].iter().zip(&pids) {
        let _ = pid;
        assert!(
            r.stderr.contains(&format!("rank {rank} (pid ")),
            "{}",
            r.stderr
        );
    }
    assert!(
        r.stderr.contains("MPI_Recv(source=1, tag=5)"),
        "{}",
        r.stderr
    );
    assert!(r.secs >= 1.9 && r.secs < 4.0, "took {:.2}s", r.secs);
    assert_all_gone(&pids);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn timeout_from_the_environment() {
    // SHMPI_TIMEOUT, and MPICH's MPIEXEC_TIMEOUT (which test harnesses set) without it;
    // SHMPI_TIMEOUT wins when both are set.
    for env in [
        &[("SHMPI_TIMEOUT", "1")][..],
        &[("MPIEXEC_TIMEOUT", "1")][..],
        &[("SHMPI_TIMEOUT", "1"), ("MPIEXEC_TIMEOUT", "20")][..],
    ] {
        let d = scratch("envtimeout");
        let r = run_with(
            &["-n", "2", "sh", "-c", &rank_script(&d, "exec sleep 30")],
            None,
            env,
        );
        assert_eq!(r.code, Some(124), "{env:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("timed out after 1 s"),
            "{env:?}: {}",
            r.stderr
        );
        assert!(r.secs < 3.0, "{env:?}: took {:.2}s", r.secs);
        assert_all_gone(&pids_in(&d));
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[test]
fn mpi_abort_is_reported_once_with_its_code() {
    let d = scratch("abort");
    let r = helper_job(3, "abort", &d, &[]);
    assert_eq!(r.code, Some(7), "{}", r.stderr);
    assert_eq!(
        r.stderr.matches("called MPI_Abort").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("mpiexec: rank 1 called MPI_Abort with error code 7"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("rank 1 aborting"), "{}", r.stdout);
    assert!(r.secs < 2.0, "took {:.2}s", r.secs);
    assert_all_gone(&pids_in(&d));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn mpi_abort_with_a_code_of_zero_mod_256_fails() {
    let d = scratch("abort0");
    let r = helper_job(2, "abort0", &d, &[]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("mpiexec: rank 0 called MPI_Abort with error code 256"),
        "{}",
        r.stderr
    );
    assert_all_gone(&pids_in(&d));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn exit_without_finalize_is_a_failure() {
    let d = scratch("nofinalize");
    let r = helper_job(3, "nofinalize", &d, &[]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("mpiexec: rank 2 (pid ")
            && r.stderr.contains(") exited without calling MPI_Finalize"),
        "{}",
        r.stderr
    );
    assert!(r.secs < 2.0, "took {:.2}s", r.secs);
    assert_all_gone(&pids_in(&d));
    let _ = std::fs::remove_dir_all(&d);
}

fn wait_pids(d: &Path, n: usize) {
    let end = Instant::now() + Duration::from_secs(5);
    while pids_in(d).len() < n {
        assert!(Instant::now() < end, "ranks did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn signals_to_mpiexec_are_forwarded() {
    let d = scratch("forward");
    let child = Command::new(MPIEXEC)
        .args(["-n", "3", "sh", "-c", &rank_script(&d, "exec sleep 30")])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_pids(&d, 3);
    let t0 = Instant::now();
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output_checked();
    assert_eq!(out.0, Some(128 + 15), "{}", out.1);
    assert!(
        out.1.contains("killed by signal 15 (Terminated)"),
        "{}",
        out.1
    );
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert_all_gone(&pids_in(&d));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn killing_mpiexec_kills_the_ranks() {
    let d = scratch("sigkill");
    let mut child = Command::new(MPIEXEC)
        .args(["-n", "2", "sh", "-c", &rank_script(&d, "exec sleep 30")])
        .spawn()
        .unwrap();
    wait_pids(&d, 2);
    child.kill().unwrap();
    child.wait().unwrap();
    let pids = pids_in(&d);
    let end = Instant::now() + Duration::from_secs(2);
    while pids.iter().any(|&p| alive(p)) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_all_gone(&pids);
    let _ = std::fs::remove_dir_all(&d);
}

trait WaitChecked {
    fn wait_with_output_checked(self) -> (Option<i32>, String);
}

impl WaitChecked for std::process::Child {
    fn wait_with_output_checked(self) -> (Option<i32>, String) {
        let out = self.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

// ---- usage errors ----

fn usage_error(args: &[&str], want: &str) {
    let r = run(args);
    assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
    assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
}

#[test]
fn bad_process_counts() {
    usage_error(&["true"], "missing -n");
    usage_error(&["-n", "0", "true"], "positive");
    usage_error(&["-n", "abc", "true"], "positive integer");
    usage_error(&["-n", "-3", "true"], "positive");
    usage_error(&["-n", "5000", "true"], "at most 4096");
    usage_error(&["-n"], "needs a value");
}

#[test]
fn bad_programs_and_options() {
    usage_error(&["-n", "2"], "no program");
    usage_error(
        &["-n", "2", "/nonexistent/prog"],
        "program '/nonexistent/prog'",
    );
    usage_error(
        &["-n", "2", "no-such-program-xyz"],
        "'no-such-program-xyz' not found",
    );
    let d = scratch("notexec");
    let f = d.join("script");
    std::fs::write(&f, "#!/bin/sh\n").unwrap();
    usage_error(&["-n", "1", f.to_str().unwrap()], "not executable");
    usage_error(
        &["-n", "2", "--frobnicate", "true"],
        "unknown option '--frobnicate'",
    );
    usage_error(&["-n", "2", "--timeout", "soon", "true"], "--timeout");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn help_and_option_forms() {
    let r = run(&["--help"]);
    assert_eq!(r.code, Some(0));
    assert!(r.stdout.contains("Usage: mpiexec"));
    for args in [
        &["-np", "2", "true"][..],
        &["-n=2", "true"],
        &["-np=2", "--", "true"],
        &["-n", "2", "--timeout=5", "true"],
    ] {
        let r = run(args);
        assert_eq!(r.code, Some(0), "{args:?}: {}", r.stderr);
    }
}

// ---- the compiler wrapper ----

fn wrapper(name: &str, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(name);
    cmd.args(args);
    for k in [
        "MPICH_CC",
        "OMPI_CC",
        "SHMPI_CC",
        "MPICH_CXX",
        "OMPI_CXX",
        "SHMPI_CXX",
        "MPICH_FC",
        "MPICH_F90",
        "OMPI_FC",
        "SHMPI_FC",
        "SHMPI_FCFLAGS",
        "SHMPI_PREFIX",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn mpicc_prefix() -> PathBuf {
    Path::new(MPICC)
        .canonicalize()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn mpicc_show_has_the_flags() {
    let p = mpicc_prefix();
    let (code, out, _) = wrapper(MPICC, &["-show", "-O2", "x.c", "-o", "x"], &[]);
    assert_eq!(code, Some(0));
    let w: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(w[0], "cc");
    let inc = format!("-I{}/include", p.display());
    let lib = format!("-L{}/lib", p.display());
    assert!(w.contains(&inc.as_str()), "{out}");
    assert!(w.contains(&lib.as_str()), "{out}");
    assert!(w.contains(&"-lmpi"), "{out}");
    // User arguments in order, link flags after them.
    let pos = |s: &str| w.iter().position(|x| *x == s).unwrap();
    assert!(pos("-O2") < pos("x.c") && pos("x.c") < pos("-o") && pos("-o") < pos("x"));
    assert!(pos("x") < pos(&lib) && pos(&lib) < pos("-lmpi"));
    assert!(pos(&inc) < pos("x.c"));

    let (_, out, _) = wrapper(MPICC, &["-show", "-c", "x.c"], &[]);
    assert!(out.contains(&inc), "{out}");
    assert!(!out.contains("-lmpi") && !out.contains("-L"), "{out}");
    let (_, out, _) = wrapper(MPICC, &["--showme:compile"], &[]);
    assert_eq!(out.trim(), inc);
    let (_, out, _) = wrapper(MPICC, &["--showme:link"], &[]);
    assert!(
        out.trim().starts_with(&lib) && out.trim().ends_with("-lmpi"),
        "{out}"
    );
    let (_, out, _) = wrapper(MPICC, &["-show", "x.c"], &[("MPICH_CC", "gcc -m64")]);
    assert!(out.starts_with("gcc -m64 "), "{out}");
}

#[test]
fn wrapper_names_pick_the_language() {
    let d = scratch("names");
    std::fs::create_dir_all(d.join("bin")).unwrap();
    for (name, want) in [("mpicxx", "c++"), ("mpif90", "gfortran"), ("mpicc", "cc")] {
        let exe = d.join("bin").join(name);
        std::fs::copy(MPICC, &exe).unwrap();
        let (code, out, _) = wrapper(exe.to_str().unwrap(), &["-show", "a"], &[]);
        assert_eq!(code, Some(0));
        assert_eq!(out.split_whitespace().next(), Some(want), "{out}");
        assert!(out.contains(&format!("-I{}/include", d.display())), "{out}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn mpicc_builds_and_links_against_its_prefix() {
    let d = scratch("build");
    for sub in ["bin", "include", "lib"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    let cc = d.join("bin/mpicc");
    std::fs::copy(MPICC, &cc).unwrap();
    std::fs::write(d.join("include/mpi.h"), "int shmpi_probe(void);\n").unwrap();
    std::fs::write(d.join("probe.c"), "int shmpi_probe(void) { return 42; }\n").unwrap();
    let st = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(d.join("lib/libmpi.so"))
        .arg(d.join("probe.c"))
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::write(
        d.join("main.c"),
        "#include <mpi.h>\nint main(void) { return shmpi_probe() == 42 ? 0 : 1; }\n",
    )
    .unwrap();
    let exe = d.join("main");
    let (code, _, err) = wrapper(
        cc.to_str().unwrap(),
        &[
            "-Wall",
            "-Werror",
            "-o",
            exe.to_str().unwrap(),
            d.join("main.c").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    // The rpath finds the library without LD_LIBRARY_PATH.
    let st = Command::new(&exe)
        .env_remove("LD_LIBRARY_PATH")
        .status()
        .unwrap();
    assert!(st.success());
    // The compiler's failure propagates.
    std::fs::write(d.join("bad.c"), "int main(void) { return syntax error; }\n").unwrap();
    let (code, _, _) = wrapper(
        cc.to_str().unwrap(),
        &["-c", d.join("bad.c").to_str().unwrap(), "-o", "/dev/null"],
        &[],
    );
    assert_ne!(code, Some(0));
    let _ = std::fs::remove_dir_all(&d);
}

/// The major version of the default gfortran (None: not installed).
fn gfortran_major() -> Option<u32> {
    let out = Command::new("gfortran").arg("-dumpversion").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .split('.')
        .next()?
        .parse()
        .ok()
}

#[test]
fn wrapper_versions_name_shmpi_and_mpi_3_1() {
    let v = env!("CARGO_PKG_VERSION");
    let d = scratch("versions");
    std::fs::create_dir_all(d.join("bin")).unwrap();
    for (name, lang) in [("mpicc", "C"), ("mpicxx", "C++"), ("mpif90", "Fortran")] {
        let exe = d.join("bin").join(name);
        std::fs::copy(MPICC, &exe).unwrap();
        let exe = exe.to_str().unwrap();
        // Open MPI's form, with one dash (CMake's FindMPI) or two (meson).
        let want = format!("{name}: shmpi {v} (MPI 3.1, Language: {lang})");
        for opt in ["-showme:version", "--showme:version"] {
            let (code, out, _) = wrapper(exe, &[opt], &[]);
            assert_eq!(code, Some(0), "{name} {opt}");
            assert_eq!(out.trim(), want, "{name} {opt}");
        }
        // MPICH's form: the wrapper's line, then the compiler's own -v (on stderr).
        let (code, out, err) = wrapper(exe, &["-v"], &[]);
        assert_eq!(code, Some(0), "{name} -v: {err}");
        assert_eq!(
            out.lines().next(),
            Some(format!("{name} for shmpi version {v} (MPI 3.1)").as_str()),
            "{out}"
        );
        assert!(
            err.contains(" version "),
            "{name} -v ran no compiler: {err}"
        );
    }
    // The version as meson reads it (the first `\d+.\d+.\d+` of -showme:version and of
    // the first line of -v): the package version, never the MPI version.
    let cc = d.join("bin/mpicc");
    let cc = cc.to_str().unwrap();
    let (_, out, _) = wrapper(cc, &["-showme:version"], &[]);
    let first = out
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find(|w| w.matches('.').count() >= 2)
        .unwrap();
    assert_eq!(first, v);
    // --version: the compiler's banner unchanged (tools read its first line), then ours.
    let (code, out, _) = wrapper(cc, &["--version"], &[]);
    assert_eq!(code, Some(0));
    let plain = Command::new("cc").arg("--version").output().unwrap();
    let plain = String::from_utf8_lossy(&plain.stdout).into_owned();
    assert!(out.starts_with(&plain), "{out}");
    assert_eq!(
        out.trim_end().lines().last(),
        Some(format!("mpicc for shmpi version {v} (MPI 3.1)").as_str())
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn showme_options_take_one_dash_or_two() {
    for opt in ["compile", "link", "incdirs", "libdirs", "libs", "command"] {
        let (c1, one, _) = wrapper(MPICC, &[&format!("-showme:{opt}")], &[]);
        let (c2, two, _) = wrapper(MPICC, &[&format!("--showme:{opt}")], &[]);
        assert_eq!((c1, c2), (Some(0), Some(0)), "{opt}");
        assert_eq!(one, two, "{opt}");
        assert!(!one.trim().is_empty(), "{opt}");
    }
    let (_, a, _) = wrapper(MPICC, &["-compile_info"], &[]);
    let (_, b, _) = wrapper(MPICC, &["-compile-info"], &[]);
    assert_eq!(a, b);
    assert!(!a.contains("-lmpi"), "{a}");
    let (_, a, _) = wrapper(MPICC, &["-link_info"], &[]);
    let (_, b, _) = wrapper(MPICC, &["-link-info"], &[]);
    assert_eq!(a, b);
    assert!(a.contains("-lmpi"), "{a}");
}

#[test]
fn fortran_wrappers_pass_mpich_flags_to_gfortran_10() {
    let Some(major) = gfortran_major() else {
        eprintln!("no gfortran: skipped");
        return;
    };
    let d = scratch("fflags");
    std::fs::create_dir_all(d.join("bin")).unwrap();
    let flags = ["-fallow-argument-mismatch", "-fallow-invalid-boz"];
    for name in ["mpif77", "mpif90", "mpifort"] {
        let exe = d.join("bin").join(name);
        std::fs::copy(MPICC, &exe).unwrap();
        let exe = exe.to_str().unwrap();
        let (code, out, _) = wrapper(exe, &["-show", "-O2", "x.f"], &[]);
        assert_eq!(code, Some(0));
        let w: Vec<&str> = out.split_whitespace().collect();
        for f in flags {
            // Present for gfortran 10 or newer, and before the user's arguments (so
            // that a later -fno-allow-argument-mismatch wins), as MPICH's mpifort has it.
            assert_eq!(w.contains(&f), major >= 10, "{name}: {out}");
            if major >= 10 {
                let at = |s: &str| w.iter().position(|x| *x == s).unwrap();
                assert!(at(f) < at("-O2"), "{out}");
            }
        }
        let (_, out, _) = wrapper(exe, &["-showme:compile"], &[]);
        assert_eq!(out.contains(flags[0]), major >= 10, "{out}");
        // SHMPI_FCFLAGS replaces them; an empty value drops them.
        let (_, out, _) = wrapper(exe, &["-show", "x.f"], &[("SHMPI_FCFLAGS", "")]);
        assert!(!out.contains("-fallow"), "{out}");
        let (_, out, _) = wrapper(exe, &["-show", "x.f"], &[("SHMPI_FCFLAGS", "-g -O0")]);
        assert!(
            out.contains(" -g -O0 ") && !out.contains("-fallow"),
            "{out}"
        );
        // Another compiler chosen the MPICH way gets none (cc is not GNU Fortran).
        let (_, out, _) = wrapper(exe, &["-show", "x.f"], &[("MPICH_FC", "cc")]);
        assert!(out.starts_with("cc ") && !out.contains("-fallow"), "{out}");
        let (_, out, _) = wrapper(exe, &["-show", "x.f"], &[("MPICH_F90", "gfortran")]);
        assert_eq!(out.contains(flags[1]), major >= 10, "{out}");
    }
    // Never for C.
    let (_, out, _) = wrapper(MPICC, &["-show", "x.c"], &[]);
    assert!(!out.contains("-fallow"), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn wrapper_finds_its_tree_through_a_symlink() {
    // A link elsewhere (/usr/local/bin/mpicc -> TREE/bin/mpicc) still means TREE.
    let d = scratch("symlink");
    std::fs::create_dir_all(d.join("tree/bin")).unwrap();
    std::fs::create_dir_all(d.join("elsewhere")).unwrap();
    let real = d.join("tree/bin/mpicc");
    std::fs::copy(MPICC, &real).unwrap();
    let link = d.join("elsewhere/mpif90");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (_, out, _) = wrapper(link.to_str().unwrap(), &["-showme:incdirs"], &[]);
    let tree = d.canonicalize().unwrap().join("tree");
    assert_eq!(out.trim(), tree.join("include").to_str().unwrap());
    let (_, out, _) = wrapper(link.to_str().unwrap(), &["-show", "a.f"], &[]);
    assert!(out.starts_with("gfortran "), "{out}");
    // Moved: the same binary answers for its new place.
    std::fs::rename(d.join("tree"), d.join("moved")).unwrap();
    let moved = d.join("moved/bin/mpicc");
    let (_, out, _) = wrapper(moved.to_str().unwrap(), &["-showme:libdirs"], &[]);
    assert!(out.trim().ends_with("/moved/lib"), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn arena_survives_a_closed_stdin() {
    // With fd 0 closed the memfd would be created as fd 0; ranks must still get it.
    let out = Command::new("sh")
        .args([
            "-c",
            "exec <&- \"$0\" -n 2 sh -c 'readlink /proc/$$/fd/$SHMPI_ARENA_FD'",
            MPIEXEC,
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("memfd:shmpi-arena").count(), 2, "{text}");
}
