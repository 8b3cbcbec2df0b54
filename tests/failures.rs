//! Fault injection on real MPI programs (built with build/bin/mpicc, run under
//! build/bin/mpiexec): a rank that crashes, is killed from outside, exits without
//! MPI_Finalize or calls MPI_Abort while the others wait inside MPI_Allreduce,
//! MPI_Barrier or MPI_Recv; mpiexec itself killed; a deadlock stopped by --timeout; a
//! fatal error's message; calls before MPI_Init and after MPI_Finalize.
//!
//! Every job must stop within a second of the fault, mpiexec must say which rank failed
//! and how and exit non-zero, and nothing may be left behind: no rank process, no new
//! /dev/shm entry, and no process holding the job's arena memfd (identified by its inode,
//! read from a live rank's /proc/PID/fd/FD, so concurrent jobs on the machine don't
//! confuse the check).
//!
//! Needs `make build` first (the Makefile's `test` target does it).
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The jobs are timed: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn mpiexec() -> PathBuf {
    root().join("build/bin/mpiexec")
}

/// A program every fault test runs. argv: ACTION PLACE VICTIM DIR.
/// Every rank writes "PID ARENA_FD" to DIR/pid.RANK and joins a barrier; then the victim
/// waits 300 ms (so the others are asleep in PLACE) and does ACTION, while the others
/// enter PLACE: an Allreduce, a Barrier, or a Recv from the victim.
const FAULT_PROG: &str = r#"
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 5) return 2;
    const char *action = argv[1], *place = argv[2], *dir = argv[4];
    int victim = atoi(argv[3]);
    char path[4096], tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/tmp.%d", dir, rank);
    snprintf(path, sizeof path, "%s/pid.%d", dir, rank);
    FILE *f = fopen(tmp, "w");
    const char *fd = getenv("SHMPI_ARENA_FD");
    fprintf(f, "%d %s\n", (int)getpid(), fd ? fd : "-1");
    fclose(f);
    rename(tmp, path);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == victim) {
        usleep(300000);
        if (!strcmp(action, "segv")) {
            fprintf(stderr, "rank %d: crashing\n", rank);
            raise(SIGSEGV);
        } else if (!strcmp(action, "kill")) {
            for (;;) pause(); /* killed from outside */
        } else if (!strcmp(action, "exit")) {
            exit(0);
        } else if (!strcmp(action, "abort")) {
            MPI_Abort(MPI_COMM_WORLD, 42);
        } else if (!strcmp(action, "hang")) {
            /* a deadlock: the victim receives what nobody sends */
            int x;
            MPI_Recv(&x, 1, MPI_INT, (rank + 1) % size, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        fprintf(stderr, "rank %d: still running after %s\n", rank, action);
        return 0;
    }
    double in = rank, out = 0;
    int x = 0;
    for (int i = 0; i < 100000; i++) {
        if (!strcmp(place, "allreduce"))
            MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else if (!strcmp(place, "barrier"))
            MPI_Barrier(MPI_COMM_WORLD);
        else
            MPI_Recv(&x, 1, MPI_INT, victim, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    fprintf(stderr, "rank %d: the collective completed without rank %d\n", rank, victim);
    MPI_Finalize();
    return 0;
}
"#;

/// Calls before MPI_Init and after MPI_Finalize. argv[1]: "before", "after",
/// "before-return" (MPI_Init is not called but the query functions that the standard
/// allows are, and must succeed).
const EARLY_LATE_PROG: &str = r#"
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int x = 1, y = 0, flag = -1;
    if (!strcmp(argv[1], "queries")) {
        int v, sv;
        if (MPI_Initialized(&flag) != MPI_SUCCESS || flag != 0) return 3;
        if (MPI_Finalized(&flag) != MPI_SUCCESS || flag != 0) return 4;
        if (MPI_Get_version(&v, &sv) != MPI_SUCCESS || v != 3) return 5;
        MPI_Init(&argc, &argv);
        MPI_Finalize();
        if (MPI_Finalized(&flag) != MPI_SUCCESS || flag != 1) return 6;
        if (MPI_Initialized(&flag) != MPI_SUCCESS || flag != 1) return 7;
        return 0;
    }
    if (!strcmp(argv[1], "before")) {
        int rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        printf("returned %d\n", rc);
        return 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Finalize();
    int rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("returned %d\n", rc);
    return 0;
}
"#;

/// A fatal error on one rank (the others wait in a Barrier): MPI_Reduce_local with
/// MPI_BAND on MPI_DOUBLE under the default MPI_ERRORS_ARE_FATAL.
const FATAL_PROG: &str = r#"
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank;
    double a = 1, b = 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) MPI_Reduce_local(&a, &b, 1, MPI_DOUBLE, MPI_BAND);
    MPI_Barrier(MPI_COMM_WORLD);
    fprintf(stderr, "rank %d: survived a fatal error\n", rank);
    MPI_Finalize();
    return 0;
}
"#;

/// A fatal error on every rank at once (MPI_MIN on MPI_CHAR under MPI_ERRORS_ARE_FATAL)
/// in a program whose atexit handler finalizes MPI if nobody did, as MPICH's test harness
/// does: the handler runs inside the library's exit and calls MPI again.
const FATAL_ATEXIT_PROG: &str = r#"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void cleanup(void) {
    int done = 1;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
}

int main(int argc, char **argv) {
    char a = 1, b = 2;
    MPI_Init(&argc, &argv);
    atexit(cleanup);
    MPI_Reduce(&a, &b, 1, MPI_CHAR, MPI_MIN, 0, MPI_COMM_WORLD);
    fprintf(stderr, "survived a fatal error\n");
    return 0;
}
"#;

/// Disagreeing counts in a small MPI_Bcast (argv[1] "bcast": the root passes 1, or 0
/// with a second argument; the others 2) or MPI_Reduce ("reduce"), whose senders return
/// without waiting (coll/post.rs), or in an MPI_Bcast through the ring ("ring": 5000
/// against 6000 ints, coll/ring.rs), whose root returns without waiting too: a receiver
/// sees it and stops the job.
const POSTED_PROG: &str = r#"
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, v[2] = {7, 8}, w[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int root_count = argc > 2 ? 0 : 1;
    static int big[6000];
    if (argc > 1 && strcmp(argv[1], "bcast") == 0)
        MPI_Bcast(v, rank == 0 ? root_count : 2, MPI_INT, 0, MPI_COMM_WORLD);
    else if (argc > 1 && strcmp(argv[1], "ring") == 0)
        MPI_Bcast(big, rank == 0 ? 5000 : 6000, MPI_INT, 0, MPI_COMM_WORLD);
    else
        MPI_Reduce(v, w, rank == 0 ? root_count : 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    fprintf(stderr, "rank %d: survived a disagreement\n", rank);
    MPI_Finalize();
    return 0;
}
"#;

/// Rank 0 receives (tag 7) from the last rank, which goes to MPI_Finalize without
/// sending: under MPI_ERRORS_ARE_FATAL.
const RECV_GONE_PROG: &str = r#"
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, size, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int any = argc > 1 && strcmp(argv[1], "any") == 0;
    if (argc > 1 && strcmp(argv[1], "send") == 0) {
        static int big[1 << 18];
        if (rank == 0) {
            MPI_Send(big, 1 << 18, MPI_INT, size - 1, 7, MPI_COMM_WORLD);
            fprintf(stderr, "rank 0: survived a send that can never complete\n");
        }
    } else if (rank == 0) {
        MPI_Recv(&x, 1, MPI_INT, any ? MPI_ANY_SOURCE : size - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        fprintf(stderr, "rank 0: survived a receive that can never complete\n");
    }
    MPI_Finalize();
    return 0;
}
"#;

/// The last rank makes an MPI_Barrier (argv[1] "world": on MPI_COMM_WORLD, else on a
/// duplicate of it) that no other rank makes, under MPI_ERRORS_ARE_FATAL; the others go
/// on to MPI_Finalize.
const ORPHAN_PROG: &str = r#"
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Comm c;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_name(c, "orphan_comm");
    if (rank == size - 1) {
        MPI_Barrier(argc > 1 && strcmp(argv[1], "world") == 0 ? MPI_COMM_WORLD : c);
        fprintf(stderr, "rank %d: survived an unmatched MPI_Barrier\n", rank);
    }
    MPI_Finalize();
    return 0;
}
"#;

/// Compiles `src` once per test binary run into a scratch directory under the build's
/// own directory for tests (one per run, replacing the last; nothing piles up in /tmp);
/// returns the path.
fn build(name: &str, src: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("failures");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    });
    let exe = dir.join(name);
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap();
    if !built.iter().any(|b| b == name) {
        let c = dir.join(format!("{name}.c"));
        std::fs::write(&c, src).unwrap();
        let mpicc = root().join("build/bin/mpicc");
        assert!(
            mpicc.exists(),
            "{} is missing: run `make build` first",
            mpicc.display()
        );
        let out = Command::new(mpicc)
            .args(["-Wall", "-Werror", "-O1", "-o"])
            .arg(&exe)
            .arg(&c)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mpicc failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        built.push(name.to_string());
    }
    exe
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("shmpi-fail-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// (pid, arena fd) of every rank that wrote DIR/pid.RANK, by rank.
fn ranks_in(dir: &Path, n: usize) -> Vec<(i32, i32)> {
    (0..n)
        .filter_map(|r| {
            let s = std::fs::read_to_string(dir.join(format!("pid.{r}"))).ok()?;
            let mut w = s.split_whitespace().map(|x| x.parse::<i32>().ok());
            Some((w.next()??, w.next()??))
        })
        .collect()
}

fn wait_ranks(dir: &Path, n: usize) -> Vec<(i32, i32)> {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let v = ranks_in(dir, n);
        if v.len() == n {
            return v;
        }
        assert!(Instant::now() < end, "the ranks did not start");
        std::thread::sleep(Duration::from_millis(5));
    }
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

fn shm_entries() -> HashSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// (device, inode) of the job's arena, read from a live rank's descriptor.
fn arena_id(pid: i32, fd: i32) -> Option<(u64, u64)> {
    let link = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok()?;
    assert!(
        link.to_string_lossy().contains("shmpi-arena"),
        "fd {fd} of rank pid {pid} is {link:?}, not the arena memfd"
    );
    let m = std::fs::metadata(format!("/proc/{pid}/fd/{fd}")).ok()?;
    Some((m.dev(), m.ino()))
}

/// Processes that hold a descriptor to the memfd `id`.
fn arena_holders(id: (u64, u64)) -> Vec<String> {
    let mut v = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return v;
    };
    for p in procs.filter_map(|e| e.ok()) {
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.filter_map(|e| e.ok()) {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            if !link.to_string_lossy().contains("shmpi-arena") {
                continue;
            }
            if let Ok(m) = std::fs::metadata(fd.path()) {
                if (m.dev(), m.ino()) == id {
                    v.push(fd.path().display().to_string());
                }
            }
        }
    }
    v
}

/// The leak checks after a job: no rank process, no new /dev/shm entry, no holder of
/// the arena. Ranks get a second to go (they are already reaped when mpiexec exits, so
/// this only waits for descendants of mpiexec that was itself killed).
fn assert_nothing_left(
    ranks: &[(i32, i32)],
    arena: Option<(u64, u64)>,
    shm_before: &HashSet<String>,
) {
    let end = Instant::now() + Duration::from_secs(1);
    while ranks.iter().any(|&(p, _)| alive(p)) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    for &(p, _) in ranks {
        assert!(!alive(p), "rank process {p} survived the job");
    }
    let new: Vec<_> = shm_entries().difference(shm_before).cloned().collect();
    assert!(new.is_empty(), "new entries in /dev/shm: {new:?}");
    if let Some(id) = arena {
        let h = arena_holders(id);
        assert!(h.is_empty(), "the job's arena is still open: {h:?}");
    }
}

struct Outcome {
    code: Option<i32>,
    stderr: String,
    /// Seconds from the fault to mpiexec's exit.
    after_fault: f64,
    ranks: Vec<(i32, i32)>,
}

fn spawn(np: usize, exe: &Path, args: &[&str], extra: &[&str]) -> Child {
    Command::new(mpiexec())
        .arg("-n")
        .arg(np.to_string())
        .args(extra)
        .arg(exe)
        .args(args)
        .env_remove("SHMPI_TIMEOUT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mpiexec")
}

/// Runs FAULT_PROG with `action` on rank `victim` while the others wait in `place`,
/// checks that nothing is left, and returns what happened.
fn fault(np: usize, action: &str, place: &str, victim: usize) -> Outcome {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let exe = build("fault", FAULT_PROG);
    let d = scratch(&format!("{action}-{place}-{np}"));
    let shm_before = shm_entries();
    let vs = victim.to_string();
    let ds = d.display().to_string();
    let child = spawn(np, &exe, &[action, place, &vs, &ds], &["--timeout", "30"]);
    let ranks = wait_ranks(&d, np);
    let arena = arena_id(ranks[0].0, ranks[0].1);
    assert!(
        arena.is_some(),
        "cannot read the arena descriptor of rank 0"
    );
    // The victim acts 300 ms after the barrier that follows writing the pids.
    let fault_at = if action == "kill" {
        std::thread::sleep(Duration::from_millis(300));
        let t = Instant::now();
        // SAFETY: kill has no memory preconditions; the pid is a rank of our job.
        assert_eq!(unsafe { libc::kill(ranks[victim].0, libc::SIGKILL) }, 0);
        t
    } else {
        Instant::now() + Duration::from_millis(300)
    };
    let out = child.wait_with_output().unwrap();
    let after_fault = fault_at.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_nothing_left(&ranks, arena, &shm_before);
    let _ = std::fs::remove_dir_all(&d);
    Outcome {
        code: out.status.code(),
        stderr,
        after_fault,
        ranks,
    }
}

fn check_fault(np: usize, action: &str, place: &str, victim: usize) {
    let o = fault(np, action, place, victim);
    let pid = o.ranks[victim].0;
    let (want, code) = match action {
        "segv" => (
            format!("mpiexec: rank {victim} (pid {pid}) killed by signal 11 (Segmentation fault)"),
            128 + 11,
        ),
        "kill" => (
            format!("mpiexec: rank {victim} (pid {pid}) killed by signal 9 (Killed)"),
            128 + 9,
        ),
        "exit" => (
            format!("mpiexec: rank {victim} (pid {pid}) exited without calling MPI_Finalize"),
            1,
        ),
        "abort" => (
            format!("mpiexec: rank {victim} called MPI_Abort with error code 42"),
            42,
        ),
        _ => unreachable!(),
    };
    let ctx = format!(
        "{action} in {place}, np {np}, victim {victim}:\n{}",
        o.stderr
    );
    assert_eq!(o.code, Some(code), "{ctx}");
    assert!(o.stderr.contains(&want), "wanted '{want}' in {ctx}");
    assert_eq!(o.stderr.matches("mpiexec:").count(), 1, "{ctx}");
    assert!(!o.stderr.contains("completed without"), "{ctx}");
    assert!(
        o.after_fault < 1.0,
        "the job took {:.3}s to stop after the fault ({ctx})",
        o.after_fault
    );
}

macro_rules! fault_tests {
    ($($name:ident: $np:expr, $action:expr, $place:expr, $victim:expr;)*) => {
        $(
            #[test]
            fn $name() {
                check_fault($np, $action, $place, $victim);
            }
        )*
    };
}

fault_tests! {
    segv_during_allreduce: 3, "segv", "allreduce", 1;
    segv_during_barrier: 4, "segv", "barrier", 3;
    segv_during_recv: 2, "segv", "recv", 0;
    kill_during_allreduce: 4, "kill", "allreduce", 2;
    kill_during_barrier: 3, "kill", "barrier", 0;
    kill_during_recv: 3, "kill", "recv", 1;
    exit_during_allreduce: 2, "exit", "allreduce", 1;
    exit_during_barrier: 5, "exit", "barrier", 4;
    exit_during_recv: 3, "exit", "recv", 2;
    abort_during_allreduce: 3, "abort", "allreduce", 0;
    abort_during_barrier: 2, "abort", "barrier", 1;
    abort_during_recv: 4, "abort", "recv", 3;
    segv_during_allreduce_oversubscribed: 8, "segv", "allreduce", 5;
    kill_during_barrier_oversubscribed: 8, "kill", "barrier", 7;
}

#[test]
fn killing_mpiexec_stops_ranks_waiting_in_a_collective() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let exe = build("fault", FAULT_PROG);
    for (np, place) in [(3, "allreduce"), (2, "recv"), (4, "barrier")] {
        let d = scratch(&format!("mpiexec-kill-{place}"));
        let shm_before = shm_entries();
        // The "victim" hangs in a receive nobody matches: everyone waits for ever.
        let ds = d.display().to_string();
        let mut child = spawn(np, &exe, &["hang", place, "0", &ds], &[]);
        let ranks = wait_ranks(&d, np);
        let arena = arena_id(ranks[0].0, ranks[0].1);
        std::thread::sleep(Duration::from_millis(500));
        let t = Instant::now();
        child.kill().unwrap();
        let _ = child.wait();
        let end = t + Duration::from_secs(1);
        while ranks.iter().any(|&(p, _)| alive(p)) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        let secs = t.elapsed().as_secs_f64();
        assert_nothing_left(&ranks, arena, &shm_before);
        assert!(secs < 1.0, "{place}: the ranks took {secs:.3}s to notice");
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[test]
fn timeout_names_each_ranks_call() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let exe = build("fault", FAULT_PROG);
    for (np, place, want) in [(3, "allreduce", "MPI_Allreduce"), (2, "recv", "MPI_Recv")] {
        let d = scratch(&format!("timeout-{place}"));
        let shm_before = shm_entries();
        let ds = d.display().to_string();
        let t = Instant::now();
        let child = spawn(np, &exe, &["hang", place, "0", &ds], &["--timeout", "1.5"]);
        let ranks = wait_ranks(&d, np);
        let arena = arena_id(ranks[0].0, ranks[0].1);
        let out = child.wait_with_output().unwrap();
        let secs = t.elapsed().as_secs_f64();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(124), "{stderr}");
        assert!(
            stderr.contains("mpiexec: job timed out after 1.5 s; ranks still running:"),
            "{stderr}"
        );
        // rank 0 (the victim) is in a receive from rank 1; the others in `place`.
        let line = |r: usize| {
            stderr
                .lines()
                .find(|l| l.contains(&format!("rank {r} (pid {})", ranks[r].0)))
                .unwrap_or_else(|| panic!("no line for rank {r}:\n{stderr}"))
                .to_string()
        };
        assert!(line(0).contains("MPI_Recv"), "{stderr}");
        for r in 1..np {
            assert!(
                line(r).contains(want),
                "rank {r} should be in {want}:\n{stderr}"
            );
        }
        assert!(secs < 3.5, "took {secs:.2}s");
        assert_nothing_left(&ranks, arena, &shm_before);
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[test]
fn fatal_error_stops_the_job_with_one_clear_line() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let exe = build("fatal", FATAL_PROG);
    let shm_before = shm_entries();
    let t = Instant::now();
    let out = spawn(3, &exe, &[], &["--timeout", "30"])
        .wait_with_output()
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let fatal: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("shmpi: fatal error:"))
        .collect();
    assert_eq!(fatal.len(), 1, "{stderr}");
    let l = fatal[0];
    // The function, the operation and the datatype it does not apply to, the class
    // and the rank.
    for want in [
        "MPI_Reduce_local:",
        "MPI_BAND",
        "datatype MPI_DOUBLE",
        "[MPI_ERR_OP, rank 1]",
    ] {
        assert!(l.contains(want), "'{want}' missing from '{l}'");
    }
    assert!(
        stderr.contains("mpiexec: rank 1 stopped the job after a fatal MPI error"),
        "{stderr}"
    );
    assert!(!stderr.contains("survived"), "{stderr}");
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(secs < 3.0, "took {secs:.2}s");
    assert_nothing_left(&[], None, &shm_before);
}

#[test]
fn fatal_errors_on_every_rank_with_an_atexit_finalize() {
    // Each rank's atexit handler calls MPI_Finalize while the library exits; that must end
    // the process with the fatal error's status (before, it re-entered exit() and the
    // Rust runtime panicked), and the ranks' messages, written at the same moment, must
    // each keep a line of their own.
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let exe = build("fatal_atexit", FATAL_ATEXIT_PROG);
    for round in 0..3 {
        let shm_before = shm_entries();
        let out = spawn(4, &exe, &[], &["--timeout", "30"])
            .wait_with_output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "round {round}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("survived"),
            "round {round}: {stderr}"
        );
        for l in stderr.lines().filter(|l| !l.trim().is_empty()) {
            let ok = (l.starts_with("shmpi: fatal error: MPI_Reduce: MPI_MIN")
                && l.matches("shmpi:").count() == 1
                && l.ends_with(']'))
                || l.starts_with("mpiexec: rank ");
            assert!(ok, "round {round}: line '{l}' in:\n{stderr}");
        }
        assert_nothing_left(&[], None, &shm_before);
    }
}

#[test]
fn disagreement_in_a_posted_collective_stops_the_job() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let exe = build("posted", POSTED_PROG);
    // (a second argument: the root passes count 0, so that it has nothing to receive)
    // ("ring": an MPI_Bcast of 20000 and 24000 bytes, through the ring of coll/ring.rs)
    for (args, name, root_count, count) in [
        (&["bcast"][..], "MPI_Bcast:", 1, 2),
        (&["reduce"][..], "MPI_Reduce:", 1, 2),
        (&["bcast", "0"][..], "MPI_Bcast:", 0, 2),
        (&["reduce", "0"][..], "MPI_Reduce:", 0, 2),
        (&["ring"][..], "MPI_Bcast:", 5000, 6000),
    ] {
        let what = args.join(" ");
        let shm_before = shm_entries();
        let stderr = stopped_job(&what, 3, &exe, args);
        let root_passed = format!("count={root_count} MPI_INT");
        let other_passed = format!("count={count} MPI_INT");
        let wants = [name, &root_passed, &other_passed, "[MPI_ERR_COUNT, rank"];
        fatal_lines(&what, &stderr, &wants);
        assert_nothing_left(&[], None, &shm_before);
    }
}

#[test]
fn collective_waiting_for_a_finalized_rank_stops_the_job() {
    // It used to hang: the others' MPI_Finalize took a step of MPI_COMM_WORLD's channel
    // (the lone barrier on MPI_COMM_WORLD then failed with a wrong MPI_ERR_NOT_SAME and
    // that rank's own MPI_Finalize waited forever), or, on a duplicate, the lone barrier
    // waited forever for ranks that were waiting for it in MPI_Finalize.
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let exe = build("orphan", ORPHAN_PROG);
    for (np, args, comm) in [
        (2, &["world"][..], "MPI_COMM_WORLD"),
        (3, &["world"][..], "MPI_COMM_WORLD"),
        (3, &[][..], "orphan_comm"),
    ] {
        let what = format!("np {np} {comm}");
        let shm_before = shm_entries();
        let stderr = stopped_job(&what, np, &exe, args);
        let waits =
            format!("called MPI_Finalize while this rank waits for it in MPI_Barrier on {comm}");
        let me = format!("[MPI_ERR_OTHER, rank {}]", np - 1);
        let wants = ["shmpi: fatal error: MPI_Barrier: rank ", &waits, &me];
        let fatal = fatal_lines(&what, &stderr, &wants);
        assert_eq!(fatal.len(), 1, "{what}: {stderr}");
        let stopped = format!(
            "mpiexec: rank {} stopped the job after a fatal MPI error",
            np - 1
        );
        assert!(stderr.contains(&stopped), "{what}: {stderr}");
        assert_nothing_left(&[], None, &shm_before);
    }
}

#[test]
fn receive_from_a_finalized_rank_stops_the_job() {
    // It used to hang: rank 0 waited in MPI_Recv (or MPI_Send), the other ranks in
    // MPI_Finalize for it.
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let exe = build("recv_gone", RECV_GONE_PROG);
    for (np, mode) in [
        (2, ""),
        (3, ""),
        (1, "any"),
        (3, "any"),
        (2, "send"),
        (3, "send"),
    ] {
        let what = format!("np {np}, {mode:?}");
        let shm_before = shm_entries();
        let args: &[&str] = if mode.is_empty() { &[] } else { &[mode] };
        let stderr = stopped_job(&what, np, &exe, args);
        let gone = match mode {
            "any" => "MPI_Recv: every other rank that could send to this receive from MPI_ANY_SOURCE (tag 7) has called MPI_Finalize with nothing left to send".to_string(),
            "send" => format!(
                "MPI_Send: rank {} called MPI_Finalize without receiving this message (tag 7, 1048576 bytes)",
                np - 1
            ),
            _ => format!(
                "MPI_Recv: rank {} has called MPI_Finalize with nothing left to send while this rank waits to receive from it (tag 7)",
                np - 1
            ),
        };
        let fatal = fatal_lines(&what, &stderr, &[&gone, "[MPI_ERR_OTHER, rank 0]"]);
        assert_eq!(fatal.len(), 1, "{what}: {stderr}");
        assert_nothing_left(&[], None, &shm_before);
    }
}

/// Runs `exe` at `np` ranks (a 30 s timeout as a backstop) and checks that the job
/// stopped on a fatal error within 3 s, exit status 1, no rank running past it (its
/// "survived" line) and no timeout; returns its stderr. `what` names the case.
fn stopped_job(what: &str, np: usize, exe: &Path, args: &[&str]) -> String {
    let t = Instant::now();
    let out = spawn(np, exe, args, &["--timeout", "30"])
        .wait_with_output()
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
    assert!(!stderr.contains("survived"), "{what}: {stderr}");
    assert!(!stderr.contains("timed out"), "{what}: {stderr}");
    assert!(secs < 3.0, "{what}: took {secs:.2}s");
    stderr
}

/// The fatal-error lines of a job's `stderr`, after checking that there is one and that
/// the first holds every string of `wants` (`what` names the case in a failure).
fn fatal_lines<'s>(what: &str, stderr: &'s str, wants: &[&str]) -> Vec<&'s str> {
    let fatal: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("shmpi: fatal error:"))
        .collect();
    assert!(!fatal.is_empty(), "{what}: {stderr}");
    for want in wants {
        assert!(
            fatal[0].contains(want),
            "{what}: '{want}' missing from '{}'",
            fatal[0]
        );
    }
    fatal
}

fn early_late(how: &str, np: Option<usize>) -> (Option<i32>, String, String) {
    let exe = build("early_late", EARLY_LATE_PROG);
    let mut cmd = match np {
        Some(n) => {
            let mut c = Command::new(mpiexec());
            c.arg("-n").arg(n.to_string()).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    cmd.arg(how).env_remove("SHMPI_TIMEOUT");
    // A singleton must not think it was started by mpiexec.
    for k in ["SHMPI_RANK", "SHMPI_SIZE", "SHMPI_ARENA_FD"] {
        cmd.env_remove(k);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn calls_before_init_and_after_finalize_are_errors_not_crashes() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for np in [None, Some(1), Some(2)] {
        let (code, out, err) = early_late("before", np);
        // exit status 1 (not a signal: code() would be None, or 128+sig via mpiexec)
        assert_eq!(code, Some(1), "np {np:?}: {out}{err}");
        assert!(!out.contains("returned"), "np {np:?}: {out}");
        assert!(
            err.contains("MPI_Allreduce") && err.contains("before MPI_Init"),
            "np {np:?}: {err}"
        );
        let (code, out, err) = early_late("after", np);
        assert_eq!(code, Some(1), "np {np:?}: {out}{err}");
        assert!(
            err.contains("MPI_Allreduce") && err.contains("after MPI_Finalize"),
            "np {np:?}: {err}"
        );
        let (code, out, err) = early_late("queries", np);
        assert_eq!(code, Some(0), "np {np:?}: {out}{err}");
    }
}

/// Spawned processes are supervised like the first ranks: two parents spawn two
/// children, then everyone loops in an Allreduce across the intercommunicator; the test
/// SIGKILLs child 1 (pid files: pid.0, pid.1 parents, pid.2, pid.3 children).
const SPAWN_FAULT_PROG: &str = r#"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank;
    MPI_Comm parent, ic;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_get_parent(&parent);
    const char *dir = argv[1];
    int id = parent == MPI_COMM_NULL ? rank : 2 + rank;
    if (parent == MPI_COMM_NULL) {
        char *args[] = {(char *)dir, NULL};
        MPI_Comm_spawn(argv[0], args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic, MPI_ERRCODES_IGNORE);
    } else {
        ic = parent;
    }
    char path[4096], tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/tmp.%d", dir, id);
    snprintf(path, sizeof path, "%s/pid.%d", dir, id);
    FILE *f = fopen(tmp, "w");
    const char *fd = getenv("SHMPI_ARENA_FD");
    fprintf(f, "%d %s\n", (int)getpid(), fd ? fd : "-1");
    fclose(f);
    rename(tmp, path);
    MPI_Barrier(ic);
    if (id == 3)
        for (;;) pause(); /* killed from outside */
    double in = id, out = 0;
    for (int i = 0; i < 1000000; i++) MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, ic);
    fprintf(stderr, "process %d: the collective completed without the victim\n", id);
    MPI_Finalize();
    return 0;
}
"#;

#[test]
fn killed_spawned_process_stops_the_whole_job() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let exe = build("spawn_fault", SPAWN_FAULT_PROG);
    let d = scratch("spawn-kill");
    let shm_before = shm_entries();
    let ds = d.display().to_string();
    let child = spawn(2, &exe, &[&ds], &["--timeout", "30"]);
    let ranks = wait_ranks(&d, 4);
    let arena = arena_id(ranks[3].0, ranks[3].1);
    assert!(
        arena.is_some(),
        "cannot read the arena descriptor of a child"
    );
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    // SAFETY: kill has no memory preconditions; the pid is a process of our job.
    assert_eq!(unsafe { libc::kill(ranks[3].0, libc::SIGKILL) }, 0);
    let out = child.wait_with_output().unwrap();
    let after = t.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_nothing_left(&ranks, arena, &shm_before);
    let _ = std::fs::remove_dir_all(&d);
    let want = format!(
        "spawned rank 1 (slot 3, {}) (pid {}) killed by signal 9 (Killed)",
        exe.display(),
        ranks[3].0
    );
    assert_eq!(out.status.code(), Some(128 + 9), "{stderr}");
    assert!(stderr.contains(&want), "wanted '{want}' in:\n{stderr}");
    assert!(!stderr.contains("completed without"), "{stderr}");
    assert!(after < 1.0, "the job took {after:.3}s to stop:\n{stderr}");
}

/// One-sided communication: rank 0 takes the exclusive lock of rank 1's window and then
/// `hang`s (a receive nobody sends) or `segv`s; the other ranks wait for that lock.
const RMA_LOCK_PROG: &str = r#"
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, x = 0;
    char *base;
    MPI_Win win;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    if (rank == 0) MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        if (!strcmp(argv[1], "segv")) raise(SIGSEGV);
        MPI_Recv(&x, 1, MPI_INT, 1, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        fprintf(stderr, "rank %d: took a lock that rank 0 holds\n", rank);
    }
    MPI_Finalize();
    return 0;
}
"#;

#[test]
fn timeout_names_the_window_lock_a_rank_waits_for() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let exe = build("rma_lock", RMA_LOCK_PROG);
    let out = spawn(3, &exe, &["hang"], &["--timeout", "1.5"])
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(124), "{stderr}");
    assert!(!stderr.contains("took a lock"), "{stderr}");
    let line = |r: usize| {
        stderr
            .lines()
            .find(|l| l.contains(&format!("rank {r} (pid")))
            .unwrap_or_else(|| panic!("no line for rank {r}:\n{stderr}"))
            .to_string()
    };
    assert!(line(0).contains("MPI_Recv"), "{stderr}");
    for r in 1..3 {
        let l = line(r);
        assert!(
            l.contains("MPI_Win_lock (window 0x") && l.contains("an exclusive lock of rank 1"),
            "rank {r} should wait for the lock of rank 1:\n{stderr}"
        );
    }
}

/// A window on the processes' own memory that its members serve (SHMPI_DIRECT=0):
/// rank 0's Put waits for rank 1, which computes outside MPI.
const RMA_SERVED_PROG: &str = r#"
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank, buf[16] = {0}, v = 7;
    MPI_Win win;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        MPI_Put(&v, 1, MPI_INT, 1, 3, 1, MPI_INT, win);
        fprintf(stderr, "rank 0: the put returned\n");
        MPI_Win_unlock(1, win);
    } else {
        sleep(30);
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
"#;

#[test]
fn timeout_names_the_rank_a_served_window_waits_for() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let exe = build("rma_served", RMA_SERVED_PROG);
    let t = Instant::now();
    let out = Command::new(mpiexec())
        .args(["-n", "2", "--timeout", "1.5"])
        .arg(&exe)
        .env_remove("SHMPI_TIMEOUT")
        .env("SHMPI_DIRECT", "0")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(124), "{stderr}");
    assert!(!stderr.contains("the put returned"), "{stderr}");
    assert!(
        stderr.lines().any(|l| l.contains("rank 0 (pid")
            && l.contains("MPI_Put (window 0x")
            && l.contains("rank 1 to serve it")),
        "rank 0 should wait for rank 1 to serve its put:\n{stderr}"
    );
    assert!(t.elapsed().as_secs_f64() < 10.0, "{stderr}");
}

#[test]
fn rank_dying_while_holding_a_window_lock_stops_the_job() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let exe = build("rma_lock", RMA_LOCK_PROG);
    let t = Instant::now();
    let out = spawn(3, &exe, &["segv"], &["--timeout", "30"])
        .wait_with_output()
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(128 + 11), "{stderr}");
    assert!(
        stderr.contains("rank 0 (pid") && stderr.contains("killed by signal 11"),
        "{stderr}"
    );
    assert!(!stderr.contains("took a lock"), "{stderr}");
    assert!(secs < 3.0, "took {secs:.2}s");
}
