#!/usr/bin/env python3
"""Build and run the collective benchmarks against shmpi, MPICH and Open MPI.

Builds bench/collbench.c and bench/reduce_local.c once per implementation,
runs collbench at np 2, 4, 8 (three rounds; in each the three implementations
back to back, one collective at a time, in a rotating order, so drift on a shared
machine hits them alike; every run starts in the machine's near phase, see
Phase; a cell is the median over the rounds) and reduce_local at np 1, then
writes:

  bench/results.md   markdown tables (latency per collective, ratios, GB/s)
  bench/results.csv  every raw measurement (one row per round)
  bench/latency.png  latency vs size, log-log, one panel per collective x np

Environment: BENCH_QUICK=1 for a ~2 minute subset; BENCH_NP="2 4" to pick the
process counts; BENCH_OUT=dir to write the outputs elsewhere; BENCH_PHASE=any to
start runs without waiting for the near phase.
`bench/run.py --plot-only` redraws latency.png from an existing results.csv.
`bench/run.py --agree` (make bench-agree) measures what the collective argument
agreement check costs: see agree_bench().
`bench/run.py --p2p` (make bench-p2p) measures point-to-point ping-pong and exchange
(bench/p2pbench.c; BENCH_NP, BENCH_P2P_ROUNDS): see p2p_bench().
`bench/run.py --rlocal` (make bench-rlocal) runs only the MPI_Reduce_local part
(BENCH_RL_ROUNDS, BENCH_RL_SIZES="bytes ..."): see rlocal_bench().
`bench/run.py --vs-build DIR` (make bench-vs BASE=DIR) compares this build with the
build tree DIR, paired by round: see vs_build_bench().
`bench/run.py --rma` (make bench-rma) measures one-sided communication (bench/rmabench.c)
against Debian's MPICH and Open MPI and the PyPI yardsticks of `make yardsticks`
(BENCH_NP, BENCH_RMA_ROUNDS): see rma_bench().
`bench/run.py --ddt` (make bench-ddt) measures derived datatypes (bench/ddtbench.c) against
the same (BENCH_NP, BENCH_DDT_ROUNDS): see ddt_bench().
`bench/run.py --neighbours` (make bench-neighbours) measures MPI_Allreduce beside 0, 1 and
2 CPU-bound processes (bench/neighbours.c) against the PyPI yardsticks
(BENCH_NP, BENCH_NBR_ROUNDS): see neighbour_bench().
"""
import datetime
import math
import os
import statistics
import platform
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
OUTDIR = os.environ.get("BENCH_OUT", BENCH)
BUILD = os.path.join(ROOT, "target", "bench")
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")

IMPLS = ["shmpi", "mpich", "openmpi"]
NICE = {"shmpi": "shmpi", "mpich": "MPICH", "openmpi": "Open MPI"}
CC = {
    "shmpi": [os.path.join(ROOT, "build", "bin", "mpicc")],
    "mpich": ["mpicc.mpich"],
    "openmpi": ["mpicc.openmpi"],
}
# MPICH 4.0.2 (ch4:ucx): MPIR_CVAR_POLLS_BEFORE_YIELD exists and is set to the
# most yielding value, but the ch4 progress loop of this build never calls
# sched_yield (checked with strace), so oversubscribed MPICH stays busy-polling.
ENV = {
    "shmpi": {},
    "mpich": {"MPIR_CVAR_POLLS_BEFORE_YIELD": "1"},
    "openmpi": {},
}


def launcher(impl, np_):
    if impl == "shmpi":
        return [os.path.join(ROOT, "build", "bin", "mpiexec"), "-n", str(np_)]
    if impl == "mpich":
        return ["mpiexec.mpich", "-n", str(np_)]
    return ["mpiexec.openmpi", "--allow-run-as-root", "--oversubscribe",
            "--mca", "mpi_yield_when_idle", "1", "-n", str(np_)]


SETTINGS = {
    "shmpi": "`build/bin/mpiexec -n N` (defaults)",
    "mpich": "`mpiexec.mpich -n N` with `MPIR_CVAR_POLLS_BEFORE_YIELD=1` "
             "(no effect in this ch4:ucx build: no sched_yield calls under strace)",
    "openmpi": "`mpiexec.openmpi --allow-run-as-root --oversubscribe "
               "--mca mpi_yield_when_idle 1 -n N`",
}

COLLS = ["reduce", "allreduce", "rsb", "rs", "bcast", "barrier"]
COLL_TITLE = {
    "reduce": "MPI_Reduce (root 0)",
    "allreduce": "MPI_Allreduce",
    "rsb": "MPI_Reduce_scatter_block",
    "rs": "MPI_Reduce_scatter (equal counts)",
    "bcast": "MPI_Bcast",
    "barrier": "MPI_Barrier",
}

if QUICK:
    NPS = [2, 4]
    SIZES = [8, 4096, 262144, 16777216]
    CELL_T = "0.06"
    BATCHES = "5"
    RL_SIZES = [4096, 2097152, 16777216]
    RL_T = "0.03"
    RL_ROUNDS = 1
    COLL_ROUNDS = 1
    TIMEOUT = 90
else:
    NPS = [2, 4, 8]
    SIZES = [8 * 8 ** i for i in range(8)] + [64 << 20]  # 8 B .. 16 MiB, 64 MiB
    CELL_T = "0.1"
    BATCHES = "7"
    RL_SIZES = [8 * 8 ** i for i in range(8)] + [64 << 20]
    RL_T = "0.05"
    # Nine: each process meets a state of its own (the plain C loop of one binary took
    # 557-860 ns for 32 KiB from one process to the next, and ran at 10.1-11.9 GB/s on
    # 64 MiB), so that with three runs a cell was decided by which implementation's
    # processes met the fast state; and the more rounds, the smaller the difference the
    # comparison paired by round (`rl_paired`) can tell from noise (its test's smallest
    # one-sided p is 1/128 with 7 rounds, 1/512 with 9; with 9, two rounds leaning the
    # other way by the smallest amounts still leave p = 0.01).
    RL_ROUNDS = 9
    # Three: every run starts in the near phase (Phase below), which took away the
    # reason for five (a cell's median landing in the distant phase when three of five
    # runs of one implementation did).
    COLL_ROUNDS = 3
    TIMEOUT = 300
if os.environ.get("BENCH_NP"):
    NPS = [int(x) for x in os.environ["BENCH_NP"].split()]
if os.environ.get("BENCH_RL_ROUNDS"):
    RL_ROUNDS = int(os.environ["BENCH_RL_ROUNDS"])
if os.environ.get("BENCH_RL_SIZES"):
    RL_SIZES = [int(x) for x in os.environ["BENCH_RL_SIZES"].split()]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


PINGPONG = os.path.join(BUILD, "pingpong")


class Phase:
    """The state of the machine's two CPUs, as bench/pingpong.c sees it: nanoseconds
    per round trip of one cache line between CPU 0 and CPU 1, over 0.1 s.

    The development VM alternates, every few seconds, between a near phase (about
    55 ns) and a distant one (about 330 ns: the host has moved the virtual CPUs apart).
    Everything that moves data between ranks slows down 2-10x in the distant phase,
    for every implementation, so a comparison is only fair when the runs compared
    met the same phase. Each collective run therefore starts once a probe says
    "near" (waiting up to WAIT s), is probed again when it ends, and is run once more
    if the phase changed under it. A probe is near when within NEAR_FACTOR of the
    fastest probe of the whole bench; runs are labelled when the bench ends, so the
    label does not depend on what the early probes had seen. On a machine without
    phases every probe is near and nothing waits."""

    WAIT = 40.0
    NEAR_FACTOR = 2.5

    def __init__(self):
        self.enabled = os.environ.get("BENCH_PHASE", "") != "any" and (os.cpu_count() or 1) >= 2
        self.best = None
        self.waited = 0.0

    def probe(self):
        if not self.enabled:
            return None
        try:
            out = subprocess.run([PINGPONG, "0.1", "0.1"], capture_output=True, text=True,
                                 timeout=10).stdout.split()
            ns = float(out[2])
        except (OSError, subprocess.SubprocessError, IndexError, ValueError):
            log("bench: pingpong probe failed; runs start without waiting for a phase")
            self.enabled = False
            return None
        self.best = ns if self.best is None else min(self.best, ns)
        return ns

    def near(self, ns, best=None):
        best = self.best if best is None else best
        return ns is None or best is None or ns <= self.NEAR_FACTOR * best

    def calibrate(self, secs=12.0):
        """Probe for a while first, so the near phase's speed is known (the VM's
        phases last 3-10 s)."""
        t0 = time.time()
        while self.enabled and time.time() - t0 < secs:
            self.probe()
            time.sleep(0.4)
        if self.best is not None:
            log(f"bench: fastest cache-line round trip between CPU 0 and 1: {self.best:.0f} ns")

    def wait_near(self):
        t0 = time.time()
        ns = self.probe()
        while not self.near(ns) and time.time() - t0 < self.WAIT:
            time.sleep(0.3)
            ns = self.probe()
        self.waited += time.time() - t0
        return ns


def build():
    os.makedirs(BUILD, exist_ok=True)
    for impl in IMPLS:
        for prog, opt in (("collbench", ["-O2"]), ("reduce_local", ["-O3", "-march=native"])):
            out = os.path.join(BUILD, f"{prog}.{impl}")
            cmd = CC[impl] + ["-std=c99", "-D_POSIX_C_SOURCE=200809L", *opt,
                              "-Wall", "-Wextra", "-Werror",
                              "-o", out, os.path.join(BENCH, prog + ".c")]
            log("build: " + " ".join(cmd))
            subprocess.run(cmd, check=True)
    cmd = ["cc", "-O2", "-pthread", "-Wall", "-Wextra", "-Werror", "-o", PINGPONG,
           os.path.join(BENCH, "pingpong.c")]
    log("build: " + " ".join(cmd))
    subprocess.run(cmd, check=True)


def run(cmd, env_extra, timeout):
    """Run in its own process group; on timeout kill the whole group and
    return what was printed so far.  Returns (stdout, status) where status is
    'ok', 'timeout' or 'fail'."""
    env = dict(os.environ)
    env.update(env_extra)
    outpath = os.path.join(BUILD, "run.out")
    with open(outpath, "w") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env,
                             start_new_session=True, text=True)
        try:
            _, err = p.communicate(timeout=timeout)
            status = "ok" if p.returncode == 0 else "fail"
            if status == "fail":
                log(f"  exit {p.returncode}: {err.strip()[-400:]}")
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            status = "timeout"
            log("  timeout")
    with open(outpath) as f:
        return f.read(), status


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if v >= 1000:
        return f"{v:.0f}"
    if v >= 100:
        return f"{v:.1f}"
    if v >= 10:
        return f"{v:.2f}"
    return f"{v:.2f}"


def human(b):
    if b == 0:
        return "-"
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div:
            return f"{b // div} {unit}"
    return f"{b} B"


def main():
    t_start = time.time()
    load0 = os.getloadavg()
    ticks0 = cpu_ticks()
    build()

    # lat[(impl, coll, np, bytes)] = (median_us, min_us); status[(impl, coll, np)]
    lat = {}
    status = {}
    raw = ["kind,impl,op,np,bytes,median_us,min_us,iters,probe_before_ns,probe_after_ns"]
    maxsize = ",".join(str(s) for s in SIZES)
    # COLL_ROUNDS rounds of every (np, collective), the three implementations back to
    # back in an order that rotates from round to round; a cell is the median over the
    # rounds that ran in the near phase (Phase).
    phase = Phase()
    phase.calibrate()
    coll_samples = {}  # key -> [(median, min, before_ns, after_ns)]
    reruns = 0
    for rnd in range(COLL_ROUNDS):
        for np_ in NPS:
            for c, coll in enumerate(COLLS):
                shift = (rnd + c) % len(IMPLS)
                for impl in IMPLS[shift:] + IMPLS[:shift]:
                    cmd = launcher(impl, np_) + [
                        os.path.join(BUILD, f"collbench.{impl}"), "-l", impl, "-o", coll,
                        "-s", maxsize, "-t", CELL_T, "-b", BATCHES]
                    for attempt in range(2):
                        log(f"run: np={np_} {coll} {impl} (round {rnd + 1} of {COLL_ROUNDS})")
                        before = phase.wait_near()
                        t0 = time.time()
                        out, st = run(cmd, ENV[impl], TIMEOUT)
                        secs = time.time() - t0
                        after = phase.probe()
                        if status.get((impl, coll, np_), "ok") == "ok":
                            status[(impl, coll, np_)] = st
                        probes = ",".join("" if x is None else f"{x:.0f}" for x in (before, after))
                        for line in out.splitlines():
                            f = line.split()
                            if len(f) >= 8 and f[0] == "RESULT":
                                key = (f[1], f[2], int(f[3]), int(f[4]))
                                coll_samples.setdefault(key, []).append(
                                    (float(f[5]), float(f[6]), before, after))
                                raw.append("coll," + ",".join(f[1:8]) + "," + probes)
                        log(f"  {st} in {secs:.1f} s; probes {probes} ns")
                        if st != "ok" or (phase.near(before) and phase.near(after)):
                            break
                        if attempt == 0:
                            reruns += 1
                            log("  the phase changed during the run: once more")
    lat, far_only = aggregate(coll_samples, phase)

    samples = rlocal_samples(raw, status)
    gbs, gbs_med = rl_cells(samples)

    load1 = os.getloadavg()
    elapsed = time.time() - t_start
    ticks1 = cpu_ticks()
    steal = None
    if ticks0 and ticks1 and ticks1[1] > ticks0[1]:
        steal = 100.0 * (ticks1[0] - ticks0[0]) / (ticks1[1] - ticks0[1])
    md = report(lat, status, gbs, load0, load1, elapsed, steal,
                (phase, reruns, far_only), gbs_med, samples)
    os.makedirs(OUTDIR, exist_ok=True)
    with open(os.path.join(OUTDIR, "results.md"), "w") as f:
        f.write(md)
    with open(os.path.join(OUTDIR, "results.csv"), "w") as f:
        f.write("\n".join(raw) + "\n")
    plot(lat, os.path.join(OUTDIR, "latency.png"))
    print(md)
    log(f"bench: wrote {OUTDIR}/results.md, results.csv, latency.png in {elapsed:.0f} s")


def rlocal_samples(raw, status):
    """Runs reduce_local at np 1 and returns its samples; appends the raw rows to
    `raw` and each run's exit status to `status`."""
    # reduce_local at np 1 (started through each launcher): RL_ROUNDS rounds; in each,
    # one process per (size, implementation), the three implementations back to back
    # at each size, in an order that rotates from round to round. The speed of this
    # VM drifts by 20-30% over tens of seconds (the plain C loop in one binary shows
    # it), so the cells compared with each other are measured seconds apart, not a
    # whole run apart. A cell is the fastest batch over all rounds (`gbs`; interference
    # from the host only ever adds time, and it comes and goes within a run) and, for
    # comparison, the median over the rounds of each run's median batch (`gbs_med`).
    samples = {}  # (who, type, op, bytes) -> [(round, median GB/s, fastest GB/s)]
    for rnd in range(RL_ROUNDS):
        log(f"run: reduce_local, round {rnd + 1} of {RL_ROUNDS}")
        for k, size in enumerate(RL_SIZES):
            shift = (rnd + k) % len(IMPLS)
            for impl in IMPLS[shift:] + IMPLS[:shift]:
                cmd = launcher(impl, 1) + [os.path.join(BUILD, f"reduce_local.{impl}"),
                                            "-l", impl, "-s", str(size), "-t", RL_T]
                out, st = run(cmd, ENV[impl], TIMEOUT)
                for line in out.splitlines():
                    f = line.split()
                    if len(f) >= 8 and f[0] == "RLOCAL":
                        who = f[1]
                        if who in ("cloop", "memcpy"):
                            who = f"{who}@{impl}"
                        best = float(f[8]) if len(f) >= 9 else float(f[6])
                        samples.setdefault((who, f[2], f[3], int(f[4])), []).append(
                            (rnd, float(f[5]), float(f[5]) * float(f[6]) / best))
                        # (reduce_local prints nanoseconds; the CSV's columns are µs)
                        raw.append(f"rlocal,{who},{f[2]}.{f[3]},1,{f[4]},"
                                   f"{float(f[6]) / 1e3:.4f},{best / 1e3:.4f},{f[7]}")
                if status.get((impl, "reduce_local", 1), "ok") == "ok":
                    status[(impl, "reduce_local", 1)] = st
    return samples


def rl_cells(samples):
    """The cells of the Reduce_local tables from the samples: the fastest batch over
    all rounds, and the median over the rounds of each run's median batch (GB/s)."""
    gbs = {k: max(b for _, _, b in v) for k, v in samples.items()}
    gbs_med = {k: statistics.median(m for _, m, _ in v) for k, v in samples.items()}
    return gbs, gbs_med


def aggregate(coll_samples, phase):
    """A cell's latency: the median over its runs whose probes before and after were
    both near (judged against the fastest probe of the whole bench); if it has none,
    the median over all its runs, and the cell is listed in far_only."""
    lat, far_only = {}, []
    for key, v in coll_samples.items():
        near = [x for x in v if phase.near(x[2]) and phase.near(x[3])]
        if not near:
            near = v
            far_only.append(key)
        lat[key] = (statistics.median(x[0] for x in near), min(x[1] for x in near))
    return lat, far_only


def cell_value(lat, status, impl, coll, np_, b):
    v = lat.get((impl, coll, np_, b))
    if v is not None:
        return v[0]
    st = status.get((impl, coll, np_), "fail")
    return "timeout" if st == "timeout" else "fail"


def ratio(a, b):
    if isinstance(a, float) and isinstance(b, float) and b > 0:
        return f"{a / b:.2f}"
    return "-"


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f"{kb / (1 << 20):.1f} GiB"
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({cpu}), {mem} RAM, {platform.system()} {platform.release()}"


def stream_numbers(gbs):
    """Streaming bandwidth from the largest measured size (median over the
    three binaries' copies of the C loops)."""
    big = max(RL_SIZES)

    def med(kind, typ, op):
        vals = sorted(v for (w, t, o, b), v in gbs.items()
                      if w.startswith(kind + "@") and t == typ and o == op and b == big)
        return vals[len(vals) // 2] if vals else None

    return big, med("cloop", "double", "sum"), med("memcpy", "byte", "copy")


def cpu_ticks():
    """(steal, total) jiffies of all CPUs from /proc/stat, or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v[7] if len(v) > 7 else 0, sum(v[:8])
    except (OSError, ValueError):
        return None


def report(lat, status, gbs, load0, load1, elapsed, steal=None, phases=None, gbs_med=None,
           samples=None):
    L = []
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    L.append(f"Run {now}, {'quick' if QUICK else 'full'} mode, {elapsed:.0f} s; "
             f"machine: {machine()}.")
    L.append(f"Load average before/after: {load0[0]:.2f} / {load1[0]:.2f} "
             "(other jobs may share the machine).")
    if steal is not None:
        L.append(f"CPU time stolen by the hypervisor during the run: {steal:.1f}% "
                 "(from /proc/stat; when high, a spinning rank may keep its peer's "
                 "virtual CPU from running).")
    if phases is not None:
        ph, reruns, far_only = phases
        if ph.enabled and ph.best is not None:
            L.append(f"Phase: every collective run started once `bench/pingpong.c` measured a "
                     f"cache-line round trip between CPU 0 and 1 within {ph.NEAR_FACTOR}x of "
                     f"the fastest probe ({ph.best:.0f} ns); waiting for it took "
                     f"{ph.waited:.0f} s in all; {reruns} runs met a phase change and ran "
                     f"once more; cells are medians over the runs probed near before and "
                     f"after" + (f"; {len(far_only)} cells had no such run (median over all "
                                 "their runs): " + ", ".join(f"{k[0]} {k[1]} np{k[2]} {human(k[3]) if k[3] else '-'}"
                                                             for k in sorted(far_only))
                                 if far_only else "") + ".")
        else:
            L.append("Phase: runs started without probing the machine's phase.")
    L.append("")
    L.append("Settings:")
    for impl in IMPLS:
        L.append(f"- {NICE[impl]}: {SETTINGS[impl]}")
    L.append("")
    L.append("Latency: median over batches of (batch time / iterations), max over ranks, in "
             f"microseconds; the median of {COLL_ROUNDS} rounds (separate runs, the three "
             "implementations back to back in a rotating order; see Phase above). Ratios are shmpi / other: below 1 means shmpi is faster. "
             "For the reduce-scatter rows the size is each rank's whole send vector "
             "(each rank receives size/np). `timeout`: the run was killed after "
             f"{TIMEOUT} s.")
    L.append("")
    for coll in COLLS:
        L.append(f"### {COLL_TITLE[coll]}")
        L.append("")
        hdr = ["size"]
        for np_ in NPS:
            hdr += [f"np{np_} shmpi", f"np{np_} MPICH", f"np{np_} OMPI",
                    f"np{np_} s/MPICH", f"np{np_} s/OMPI"]
        L.append("| " + " | ".join(hdr) + " |")
        L.append("|" + "---|" * len(hdr))
        sizes = [0] if coll == "barrier" else SIZES
        for b in sizes:
            row = [human(b) if b else "-"]
            for np_ in NPS:
                s = cell_value(lat, status, "shmpi", coll, np_, b)
                m = cell_value(lat, status, "mpich", coll, np_, b)
                o = cell_value(lat, status, "openmpi", coll, np_, b)
                row += [fmt(s), fmt(m), fmt(o), ratio(s, m), ratio(s, o)]
            L.append("| " + " | ".join(row) + " |")
        L.append("")

    big, cl, mc = stream_numbers(gbs)
    L.append("### Memory-traffic bound for the largest size")
    L.append("")
    if cl:
        bw = 3 * cl  # a[i] += b[i] moves 3 bytes of traffic per buffer byte
        L.append(f"Streaming reference at {human(big)}: `a[i] += b[i]` (double, -O3 -march=native) "
                 f"processes {cl:.2f} GB/s of buffer = {bw:.2f} GB/s of memory traffic "
                 f"(read a, read b, write a); memcpy {mc:.2f} GB/s = {2 * mc:.2f} GB/s of traffic."
                 if mc else "")
        L.append("")
        L.append("Lower bound on time = bytes the operation must move through memory / "
                 f"{bw:.2f} GB/s (one core's streaming traffic; the 2 cores share the memory "
                 "system, so this is an approximate bound, not a hard one). Bytes moved for a "
                 "vector of B bytes per rank: Reduce (np+1)B (read every input once, write the "
                 "root's result); Allreduce 2·np·B (every rank reads its B input and writes its "
                 "B output); Reduce_scatter(_block) (np+1)B (read every input, write B in total); "
                 "Bcast np·B (read the root's B, write B at each of np-1 others).")
        L.append("")
        hdr = ["op", "np", "bound ms"] + [f"{NICE[i]} ms" for i in IMPLS] + \
              [f"{NICE[i]} / bound" for i in IMPLS]
        L.append("| " + " | ".join(hdr) + " |")
        L.append("|" + "---|" * len(hdr))
        bsz = max(SIZES)
        for coll in ["reduce", "allreduce", "rsb", "rs", "bcast"]:
            for np_ in NPS:
                mult = {"reduce": np_ + 1, "allreduce": 2 * np_, "rsb": np_ + 1,
                        "rs": np_ + 1, "bcast": np_}[coll]
                bound_ms = mult * bsz / (bw * 1e9) * 1e3
                row = [coll, str(np_), f"{bound_ms:.1f}"]
                vals = [cell_value(lat, status, i, coll, np_, bsz) for i in IMPLS]
                row += [f"{v / 1e3:.1f}" if isinstance(v, float) else v for v in vals]
                row += [f"{v / 1e3 / bound_ms:.2f}" if isinstance(v, float) else "-" for v in vals]
                L.append("| " + " | ".join(row) + " |")
        L.append("")

    L += rl_report(gbs, gbs_med, samples)
    return "\n".join(L)


def rl_report(gbs, gbs_med=None, samples=None):
    """The Reduce_local sections of the report: throughput, the time ratios by the
    fastest and the median batch, and the comparison paired by round."""
    L = []
    L.append("### MPI_Reduce_local throughput (GB/s of buffer processed, np 1, fastest batch "
             f"of {RL_ROUNDS} runs)")
    L.append("")
    L.append("GB/s = inout buffer bytes / time per call (each call moves 3x that in memory "
             "traffic). `C loop` is `a[i] += b[i]` (same type, -O3 -march=native); memcpy moves 2x.")
    L.append("")
    show = [s for s in RL_SIZES if s in (4096, 262144, 2097152, 67108864)] or RL_SIZES
    hdr = ["type.op"]
    for s in show:
        hdr += [f"{human(s)} shmpi", f"{human(s)} MPICH", f"{human(s)} OMPI"]
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|" + "---|" * len(hdr))
    combos = []
    for (w, t, o, b) in gbs:
        if w in IMPLS and (t, o) not in combos:
            combos.append((t, o))
    for t, o in combos:
        row = [f"{t}.{o}"]
        for s in show:
            row += [fmt(gbs.get((i, t, o, s))) for i in IMPLS]
        L.append("| " + " | ".join(row) + " |")
        if o == "sum" and t != "double_int":
            row = [f"{t} C loop"]
            for s in show:
                row += [fmt(gbs.get((f"cloop@{i}", t, o, s))) for i in IMPLS]
            L.append("| " + " | ".join(row) + " |")
    row = ["memcpy"]
    for s in show:
        row += [fmt(gbs.get((f"memcpy@{i}", "byte", "copy", s))) for i in IMPLS]
    L.append("| " + " | ".join(row) + " |")
    L.append("")
    L.append("(`C loop` and `memcpy` rows: the same plain-C code in each of the three "
             "binaries, so the three columns show run-to-run noise.)")
    L.append("")
    L += rl_ratios(gbs, combos, "by the fastest batch",
                   "Time per call of shmpi divided by that of the other implementation (below "
                   "1: shmpi is faster), from the same cells as the table above: each the "
                   f"fastest batch of {RL_ROUNDS} runs.")
    if gbs_med:
        L += rl_ratios(gbs_med, combos, "by the median",
                       "The same ratios from the median batch of each run, median over the "
                       f"{RL_ROUNDS} runs: what a run meets when the host's other work slows "
                       "some of its batches (it hits the three implementations alike, but not "
                       "at the same moments).")
    if samples:
        L += rl_paired(samples, combos)
    return L


def signed_rank_p(xs):
    """One-sided p-values of the exact Wilcoxon signed-rank test on the paired
    differences `xs` (zeros dropped): (p that they lean positive, p that they lean
    negative), from all 2^n sign assignments."""
    xs = [x for x in xs if x != 0.0]
    n = len(xs)
    if n == 0:
        return 1.0, 1.0
    order = sorted(range(n), key=lambda i: abs(xs[i]))
    ranks = [0.0] * n
    i = 0
    while i < n:  # average ranks over ties of |x|
        j = i
        while j + 1 < n and abs(xs[order[j + 1]]) == abs(xs[order[i]]):
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    w = sum(r for r, x in zip(ranks, xs) if x > 0)
    ge = le = 0
    for mask in range(1 << n):
        v = sum(ranks[k] for k in range(n) if mask >> k & 1)
        ge += v >= w - 1e-9
        le += v <= w + 1e-9
    return ge / (1 << n), le / (1 << n)


def rl_paired(samples, combos):
    """The Reduce_local comparison paired by round: in each round the three
    implementations' processes for a size ran back to back, so the ratio of shmpi's
    median batch to the other's within one round meets the same state of the host.
    Per cell and other implementation: the median of those per-round time ratios, and
    the exact Wilcoxon signed-rank test of their logarithms; a difference counts where
    its one-sided p is below 0.05."""
    alpha = 0.05
    L = ["### MPI_Reduce_local paired by round (shmpi / MPICH, shmpi / Open MPI)", "",
         "In each round the three implementations' processes for one size run back to "
         "back, so each round gives one time ratio per cell and implementation, from the "
         "median batches of two processes measured seconds apart. A cell shows the median "
         "of those ratios over the rounds, marked `+` where shmpi is faster and `-` where "
         "it is slower by the exact one-sided Wilcoxon signed-rank test on the rounds' "
         f"log ratios (p < {alpha}); unmarked, the rounds do not tell the two apart. "
         "(Where two implementations take the same time, the test marks the cell either "
         f"way by chance, in at most {alpha:.0%} of such cells for each direction.)",
         ""]
    hdr = ["type.op"] + [human(s) for s in RL_SIZES]
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|" + "---|" * len(hdr))
    faster = cells = 0
    slower, ties = [], []
    for t, o in combos:
        row = [f"{t}.{o}"]
        for s_ in RL_SIZES:
            mine = {r: m for r, m, _ in samples.get(("shmpi", t, o, s_), [])}
            parts, verdicts = [], []
            for other in IMPLS[1:]:
                theirs = {r: m for r, m, _ in samples.get((other, t, o, s_), [])}
                rs = [theirs[r] / mine[r] for r in mine if r in theirs and mine[r] > 0]
                if not rs:
                    parts.append("-")
                    verdicts.append(None)
                    continue
                p_slow, p_fast = signed_rank_p([math.log(r) for r in rs])
                mark = "-" if p_slow < alpha else "+" if p_fast < alpha else ""
                med = statistics.median(rs)
                parts.append(f"{med:.2f}{mark}")
                verdicts.append((mark, med, NICE[other]))
            row.append(" / ".join(parts))
            if all(v is not None for v in verdicts):
                cells += 1
                name = f"{t}.{o} {human(s_)}"
                if any(v[0] == "-" for v in verdicts):
                    slower.append(name + " (" + ", ".join(f"{v[1]:.2f} against {v[2]}"
                                                          for v in verdicts if v[0] == "-") + ")")
                elif all(v[0] == "+" for v in verdicts):
                    faster += 1
                else:
                    ties.append(name + " (" + ", ".join(f"{v[1]:.2f} against {v[2]}"
                                                         for v in verdicts if v[0] != "+") + ")")
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    L.append(f"Paired by round: shmpi faster than both in {faster} of {cells} cells; "
             f"slower than at least one in {len(slower)}"
             + (": " + ", ".join(slower) if slower else "") + f"; not told apart from at "
             f"least one (and faster than or not told apart from the other) in {len(ties)}"
             + (": " + ", ".join(ties) if ties else "") + ".")
    L.append("")
    return L


def rl_ratios(gbs, combos, how, blurb):
    """The Reduce_local ratio table (shmpi / MPICH, shmpi / Open MPI) at every size from
    throughputs `gbs`, and the count of cells where shmpi is at least as fast as both."""
    L = [f"### MPI_Reduce_local time ratios at every size, {how} (shmpi / MPICH, "
         "shmpi / Open MPI)", "", blurb, ""]
    hdr = ["type.op"] + [human(s) for s in RL_SIZES]
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|" + "---|" * len(hdr))
    wins = cells = 0
    slower = []
    clearly = []  # more than 5% slower than at least one
    for t, o in combos:
        row = [f"{t}.{o}"]
        for s_ in RL_SIZES:
            mine = gbs.get(("shmpi", t, o, s_))
            parts = []
            ok = mine is not None
            worst = 0.0
            for other in IMPLS[1:]:
                v = gbs.get((other, t, o, s_))
                if mine and v:
                    r = v / mine  # time ratio = their GB/s / our GB/s
                    parts.append(f"{r:.2f}")
                    ok = ok and r <= 1.0
                    worst = max(worst, r)
                else:
                    parts.append("-")
                    ok = False
            if mine is not None:
                cells += 1
                wins += ok
                if not ok:
                    slower.append(f"{t}.{o} {human(s_)} ({worst:.2f})")
                if worst > 1.05:
                    clearly.append(f"{t}.{o} {human(s_)} ({worst:.2f})")
            row.append(" / ".join(parts))
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    L.append(f"{how.capitalize()}: shmpi is at least as fast as both in {wins} of {cells} "
             "Reduce_local cells." + (" Slower than at least one (worst ratio): "
                                      + ", ".join(slower) + "." if slower else ""))
    L.append("")
    L.append(f"{how.capitalize()}: more than 5% slower than at least one in {len(clearly)} "
             f"of {cells}" + (": " + ", ".join(clearly) + "." if clearly else "."))
    L.append("")
    return L


def plot(lat, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("bench: matplotlib not available; no plot written")
        return
    colls = [c for c in COLLS if c != "barrier"]
    fig, axes = plt.subplots(len(colls) + 1, len(NPS), figsize=(4.2 * len(NPS), 3.0 * (len(colls) + 1)),
                             squeeze=False)
    colors = {"shmpi": "tab:blue", "mpich": "tab:orange", "openmpi": "tab:green"}
    for r, coll in enumerate(colls):
        for c, np_ in enumerate(NPS):
            ax = axes[r][c]
            for impl in IMPLS:
                pts = [(b, lat[(impl, coll, np_, b)][0]) for b in SIZES
                       if (impl, coll, np_, b) in lat]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", ms=3,
                            color=colors[impl], label=NICE[impl])
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{COLL_TITLE[coll]}, np {np_}", fontsize=9)
            ax.set_xlabel("bytes", fontsize=8)
            ax.set_ylabel("µs", fontsize=8)
            ax.grid(True, which="major", alpha=0.3)
            ax.tick_params(labelsize=7)
            if r == 0 and c == 0:
                ax.legend(fontsize=8)
    for c, np_ in enumerate(NPS):
        ax = axes[len(colls)][c]
        have = [i for i in IMPLS if (i, "barrier", np_, 0) in lat]
        ax.bar([NICE[i] for i in have], [lat[(i, "barrier", np_, 0)][0] for i in have],
               color=[colors[i] for i in have])
        ax.set_yscale("log")
        if have:
            ax.set_ylim(bottom=0.1)
        ax.set_title(f"MPI_Barrier, np {np_}", fontsize=9)
        ax.set_ylabel("µs", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    log(f"bench: wrote {path}")


def plot_only():
    """Redraw latency.png from an existing results.csv (no measurement)."""
    global SIZES, NPS
    samples = {}
    with open(os.path.join(OUTDIR, "results.csv")) as f:
        for line in f:
            p = line.strip().split(",")
            if p[0] == "coll":
                key = (p[1], p[2], int(p[3]), int(p[4]))
                samples.setdefault(key, []).append((float(p[5]), float(p[6])))
    lat = {k: (median([m for m, _ in v]), min(x for _, x in v)) for k, v in samples.items()}
    SIZES = sorted({k[3] for k in lat if k[1] != "barrier"})
    NPS = sorted({k[2] for k in lat})
    plot(lat, os.path.join(OUTDIR, "latency.png"))


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def agree_bench():
    """The cost of the argument-agreement check on the 8-byte MPI_Allreduce of
    shmpi at np 2 and 4 (BENCH_NP to change), measured two ways:

    1. In one run (bench/agreebench.c): two duplicates of MPI_COMM_WORLD, one
       checking (the default), one not (info hint shmpi_check_args=false);
       batches alternate between them in ABBA order and the median of the
       per-pair ratios is the overhead. Repeated BENCH_AGREE_RUNS (5) times;
       the median over runs is reported.
    2. End to end, as a cross-check: whole collbench runs with
       SHMPI_CHECK_ARGS=1 and =0 alternating, BENCH_AGREE_REPS (11) pairs; per
       run the best of 15 batches (the median is hostage to the machine's load),
       then the median of the per-pair ratios.
    """
    runs = int(os.environ.get("BENCH_AGREE_RUNS", "5"))
    reps = int(os.environ.get("BENCH_AGREE_REPS", "11"))
    nps = [int(x) for x in os.environ.get("BENCH_NP", "2 4").split()]
    os.makedirs(BUILD, exist_ok=True)
    exes = {}
    for prog in ("agreebench", "collbench"):
        exes[prog] = os.path.join(BUILD, prog + ".shmpi")
        cmd = CC["shmpi"] + ["-std=c99", "-D_POSIX_C_SOURCE=200809L", "-O2", "-Wall",
                             "-Wextra", "-Werror", "-o", exes[prog],
                             os.path.join(BENCH, prog + ".c")]
        subprocess.run(cmd, check=True)
    start = datetime.datetime.now(datetime.timezone.utc)
    load0 = os.getloadavg()[0]
    rows = []
    for np_ in nps:
        # 1. In-process A/B.
        ab = []
        for r in range(runs):
            out, status = run(launcher("shmpi", np_) + [exes["agreebench"]], {}, 300)
            v = [l.split() for l in out.splitlines() if l.startswith("AGREE ")]
            if status != "ok" or not v:
                sys.exit(f"bench-agree: agreebench np {np_}: {status}")
            on, off, ratio = float(v[0][2]), float(v[0][3]), float(v[0][4])
            ab.append((on, off, ratio))
            log(f"np {np_} A/B run {r + 1}/{runs}: on {on:.3f} us, off {off:.3f} us, "
                f"ratio {ratio:.4f}")
        # 2. Whole runs with SHMPI_CHECK_ARGS=1 / 0.
        ratios, best = [], {"1": [], "0": []}
        for r in range(reps):
            got = {}
            for mode in (("1", "0") if r % 2 == 0 else ("0", "1")):
                out, status = run(launcher("shmpi", np_) +
                                  [exes["collbench"], "-l", "shmpi", "-o", "allreduce",
                                   "-s", "8", "-t", "0.45", "-b", "15"],
                                  {"SHMPI_CHECK_ARGS": mode}, 120)
                v = [float(l.split()[6]) for l in out.splitlines()
                     if l.startswith("RESULT ")]
                if status != "ok" or not v:
                    sys.exit(f"bench-agree: np {np_} SHMPI_CHECK_ARGS={mode}: {status}")
                got[mode] = v[0]
                best[mode].append(v[0])
            ratios.append(got["1"] / got["0"])
            log(f"np {np_} env pair {r + 1}/{reps}: best batch {got['1']:.3f} us with "
                f"the check, {got['0']:.3f} us without")
        rows.append((np_, median([x[0] for x in ab]), median([x[1] for x in ab]),
                     median([x[2] for x in ab]), min(x[2] for x in ab),
                     max(x[2] for x in ab), median(best["1"]), median(best["0"]),
                     median(ratios)))
    load1 = os.getloadavg()[0]
    print(f"\n8-byte MPI_Allreduce (MPI_DOUBLE, MPI_SUM), shmpi, with and without the "
          f"argument-agreement check ({start:%Y-%m-%d %H:%M} UTC, load "
          f"{load0:.1f}/{load1:.1f} on {os.cpu_count()} CPUs).\n")
    print(f"| np | A/B in one run: on | off | on/off (median of {runs} runs) | range "
          f"| SHMPI_CHECK_ARGS=1 | =0 | on/off ({reps} pairs) |")
    print("|---|---|---|---|---|---|---|---|")
    for np_, a, b, m, lo, hi, c, d, e in rows:
        print(f"| {np_} | {a:.3f} µs | {b:.3f} µs | {m:.3f} ({100 * (m - 1):+.1f}%) "
              f"| {lo:.3f}-{hi:.3f} | {c:.3f} µs | {d:.3f} µs | {e:.3f} "
              f"({100 * (e - 1):+.1f}%) |")
    for np_, _, _, m, _, _, _, _, e in rows:
        if np_ == 4:
            print(f"\nnp 4: the check costs {100 * (m - 1):+.1f}% (A/B in one run), "
                  f"{100 * (e - 1):+.1f}% (whole runs); the budget is 5%.")


def p2p_bench():
    """Point-to-point (bench/p2pbench.c): ping-pong and MPI_Sendrecv exchange between
    pairs of ranks, 8 B to 16 MiB, at np 2 and 4 (BENCH_NP to change), shmpi, MPICH
    and Open MPI. BENCH_P2P_ROUNDS (5) rounds, the three implementations back to back
    in a rotating order in each; each run starts in the near phase and is probed again
    when it ends (`Phase`, as the collectives; once more if the phase changed), and a
    cell is the median over the near runs of each run's fastest batch. Writes
    bench/p2p_results.md."""
    rounds = int(os.environ.get("BENCH_P2P_ROUNDS", "5"))
    nps = [int(x) for x in os.environ.get("BENCH_NP", "2 4").split()]
    os.makedirs(BUILD, exist_ok=True)
    exes = {}
    for impl in IMPLS:
        exes[impl] = os.path.join(BUILD, f"p2pbench.{impl}")
        cmd = CC[impl] + ["-std=c99", "-D_POSIX_C_SOURCE=200809L", "-O2", "-Wall",
                          "-Wextra", "-Werror", "-o", exes[impl],
                          os.path.join(BENCH, "p2pbench.c")]
        log("build: " + " ".join(cmd))
        subprocess.run(cmd, check=True)
    cmd = ["cc", "-O2", "-pthread", "-Wall", "-Wextra", "-Werror", "-o", PINGPONG,
           os.path.join(BENCH, "pingpong.c")]
    subprocess.run(cmd, check=True)
    start = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.time()
    load0 = os.getloadavg()[0]
    phase = Phase()
    phase.calibrate()
    samples = {}  # (impl, np, mode, bytes) -> [(fastest batch, probe before, after)]
    for np_ in nps:
        for rnd in range(rounds):
            order = IMPLS[rnd % 3:] + IMPLS[:rnd % 3]
            for impl in order:
                for attempt in range(2):
                    log(f"p2p: np {np_}, round {rnd + 1}/{rounds}, {NICE[impl]}")
                    before = phase.wait_near()
                    out, status = run(launcher(impl, np_) + [exes[impl], "-l", impl],
                                      ENV[impl], 300)
                    after = phase.probe()
                    if status != "ok":
                        log(f"  {impl} np {np_}: {status}")
                    for line in out.splitlines():
                        f = line.split()
                        if len(f) == 7 and f[0] == "P2P":
                            key = (impl, int(f[2]), f[3], int(f[4]))
                            samples.setdefault(key, []).append((float(f[5]), before, after))
                    if status != "ok" or (phase.near(before) and phase.near(after)):
                        break
                    log("  the phase changed during the run: once more")
    load1 = os.getloadavg()[0]
    best = {}
    for key, v in samples.items():
        near = [x[0] for x in v if phase.near(x[1]) and phase.near(x[2])]
        best[key] = near or [x[0] for x in v]
    lines = [f"Point-to-point, `make bench-p2p` ({start:%Y-%m-%d %H:%M} UTC, "
             f"{time.time() - t0:.0f} s, load {load0:.2f}/{load1:.2f} on "
             f"{os.cpu_count()} CPUs): µs per message one way (ping-pong) and per "
             f"MPI_Sendrecv (exchange), every pair of ranks at once; median over the "
             f"runs of {rounds} rounds that started and ended in the near phase "
             f"(fastest cache-line round trip {fmt(phase.best)} ns) of each run's "
             f"fastest batch. Ratios shmpi/other (below 1: shmpi faster).", ""]
    sizes = sorted({k[3] for k in best})
    wins = total = 0
    for np_ in nps:
        for mode in ("pingpong", "exchange"):
            lines.append(f"**np {np_}, {mode}**")
            lines.append("")
            lines.append("| size | shmpi | MPICH | Open MPI | s/MPICH | s/OMPI |")
            lines.append("|---|---|---|---|---|---|")
            for b in sizes:
                v = {i: best.get((i, np_, mode, b)) for i in IMPLS}
                m = {i: (median(x) if x else None) for i, x in v.items()}
                rs = [ratio(m["shmpi"], m[o]) for o in ("mpich", "openmpi")]
                if m["shmpi"] is not None and all(m[o] is not None for o in ("mpich", "openmpi")):
                    total += 1
                    wins += all(m["shmpi"] <= m[o] for o in ("mpich", "openmpi"))
                lines.append(f"| {human(b)} | {fmt(m['shmpi'])} | {fmt(m['mpich'])} | "
                             f"{fmt(m['openmpi'])} | {rs[0]} | {rs[1]} |")
            lines.append("")
    lines.append(f"shmpi at least as fast as both in {wins} of {total} cells.")
    text = "\n".join(lines) + "\n"
    os.makedirs(OUTDIR, exist_ok=True)
    with open(os.path.join(OUTDIR, "p2p_results.md"), "w") as f:
        f.write(text)
    print(text)


def rlocal_bench():
    """`make bench-rlocal`: only the MPI_Reduce_local part of the bench (np 1), in
    RL_ROUNDS rounds (BENCH_RL_ROUNDS) at RL_SIZES (BENCH_RL_SIZES); writes
    bench/rlocal_results.md (or under BENCH_OUT)."""
    t0 = time.time()
    load0 = os.getloadavg()[0]
    build()
    start = datetime.datetime.now(datetime.timezone.utc)
    raw, status = [], {}
    samples = rlocal_samples(raw, status)
    gbs, gbs_med = rl_cells(samples)
    failed = [f"{NICE[k[0]]}" for k, st in status.items() if st != "ok"]
    L = [f"MPI_Reduce_local, `make bench-rlocal` ({start:%Y-%m-%d %H:%M} UTC, "
         f"{time.time() - t0:.0f} s, {RL_ROUNDS} rounds, load {load0:.2f}/"
         f"{os.getloadavg()[0]:.2f}; machine: {machine()})."
         + (f" Runs that failed: {', '.join(failed)}." if failed else ""), ""]
    L += rl_report(gbs, gbs_med, samples)
    os.makedirs(OUTDIR, exist_ok=True)
    with open(os.path.join(OUTDIR, "rlocal_results.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    with open(os.path.join(OUTDIR, "rlocal_results.csv"), "w") as f:
        f.write("kind,impl,op,np,bytes,median_us,min_us,iters\n" + "\n".join(raw) + "\n")
    print("\n".join(L))
    log(f"bench: wrote {OUTDIR}/rlocal_results.md in {time.time() - t0:.0f} s")


def vs_build_bench(base):
    """This build against another build tree `base` (a PREFIX with bin/mpicc and
    bin/mpiexec, e.g. the previous commit's build/): the collectives of `make bench`
    (np 2, 4, 8, 8 B to 64 MiB; BENCH_NP, BENCH_QUICK as there) and point-to-point
    ping-pong and exchange (bench/p2pbench.c, np 2), BENCH_VS_ROUNDS (7) rounds, the two
    builds back to back in an order that alternates from round to round, each run
    starting in the near phase (`Phase`). A cell shows the median of the per-round time
    ratios (this build / base) and is marked `+` or `-` where the exact one-sided
    Wilcoxon signed-rank test on the rounds' log ratios says this build is faster or
    slower (p < 0.05). Writes bench/vs_build.md (BENCH_OUT to write elsewhere)."""
    rounds = int(os.environ.get("BENCH_VS_ROUNDS", "7"))
    impls = ["new", "base"]
    cc = {"new": CC["shmpi"], "base": [os.path.join(base, "bin", "mpicc")]}
    mpiexec = {"new": os.path.join(ROOT, "build", "bin", "mpiexec"),
               "base": os.path.join(base, "bin", "mpiexec")}
    for impl in impls:
        if not os.access(cc[impl][0], os.X_OK) or not os.access(mpiexec[impl], os.X_OK):
            sys.exit(f"bench: no {cc[impl][0]} or {mpiexec[impl]}")
    os.makedirs(BUILD, exist_ok=True)
    exes = {}
    for impl in impls:
        for prog in ("collbench", "p2pbench"):
            exes[(impl, prog)] = os.path.join(BUILD, f"{prog}.vs-{impl}")
            cmd = cc[impl] + ["-std=c99", "-D_POSIX_C_SOURCE=200809L", "-O2", "-Wall",
                              "-Wextra", "-Werror", "-o", exes[(impl, prog)],
                              os.path.join(BENCH, prog + ".c")]
            log("build: " + " ".join(cmd))
            subprocess.run(cmd, check=True)
    subprocess.run(["cc", "-O2", "-pthread", "-Wall", "-Wextra", "-Werror", "-o", PINGPONG,
                    os.path.join(BENCH, "pingpong.c")], check=True)
    start = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.time()
    phase = Phase()
    phase.calibrate()
    maxsize = ",".join(str(x) for x in SIZES)
    # (what, np, bytes) -> {impl: [per-round time]}
    cells = {}
    jobs = [(np_, coll) for np_ in NPS for coll in COLLS] + [(2, "p2p")]
    for rnd in range(rounds):
        for np_, what in jobs:
            order = impls if rnd % 2 == 0 else impls[::-1]
            for impl in order:
                if what == "p2p":
                    cmd = [mpiexec[impl], "-n", str(np_), exes[(impl, "p2pbench")], "-l", impl]
                else:
                    cmd = [mpiexec[impl], "-n", str(np_), exes[(impl, "collbench")], "-l",
                           impl, "-o", what, "-s", maxsize, "-t", CELL_T, "-b", BATCHES]
                log(f"vs: round {rnd + 1}/{rounds}, np {np_}, {what}, {impl}")
                phase.wait_near()
                out, status = run(cmd, {}, TIMEOUT)
                if status != "ok":
                    log(f"  {impl}: {status}")
                for line in out.splitlines():
                    f = line.split()
                    if what != "p2p" and len(f) >= 8 and f[0] == "RESULT":
                        key = (f[2], int(f[3]), int(f[4]))
                        cells.setdefault(key, {}).setdefault(impl, []).append(float(f[5]))
                    elif what == "p2p" and len(f) == 7 and f[0] == "P2P":
                        key = ("p2p " + f[3], int(f[2]), int(f[4]))
                        cells.setdefault(key, {}).setdefault(impl, []).append(float(f[5]))
    L = [f"# This build against {base}", "",
         f"Run {start:%Y-%m-%d %H:%M} UTC, {time.time() - t0:.0f} s, {rounds} rounds "
         f"(`python3 bench/run.py --vs-build {base}`). Median of the per-round time "
         "ratios this build / base; `+` faster, `-` slower by the one-sided signed-rank "
         "test on the rounds (p < 0.05).", ""]
    whats = sorted({k[0] for k in cells})
    slower = []
    for what in whats:
        nps = sorted({k[1] for k in cells if k[0] == what})
        sizes = sorted({k[2] for k in cells if k[0] == what})
        L.append(f"## {what}")
        L.append("")
        L.append("| bytes | " + " | ".join(f"np {n}" for n in nps) + " |")
        L.append("|---|" + "---|" * len(nps))
        for b in sizes:
            row = [human(b) if b else "0"]
            for n in nps:
                v = cells.get((what, n, b), {})
                a, z = v.get("new", []), v.get("base", [])
                k = min(len(a), len(z))
                if k == 0:
                    row.append("-")
                    continue
                logs = [math.log(a[i] / z[i]) for i in range(k) if a[i] > 0 and z[i] > 0]
                r = math.exp(median(logs)) if logs else float("nan")
                p_slow, p_fast = signed_rank_p(logs)
                mark = "-" if p_slow < 0.05 else "+" if p_fast < 0.05 else ""
                if mark == "-" and r > 1.05:
                    slower.append(f"{what} np {n} {human(b) if b else 0}: {r:.3f}")
                row.append(f"{r:.3f}{mark}")
            L.append("| " + " | ".join(row) + " |")
        L.append("")
    L.append("Cells more than 5% slower by the test: " + ("; ".join(slower) if slower else "none") + ".")
    os.makedirs(OUTDIR, exist_ok=True)
    with open(os.path.join(OUTDIR, "vs_build.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    print("\n".join(L))
    log(f"bench: wrote {OUTDIR}/vs_build.md in {time.time() - t0:.0f} s")


# The RMA benchmark (bench/rmabench.c, `bench/run.py --rma`, make bench-rma).
YARD = os.path.join(ROOT, "build", "yardsticks")
RMA_MODES = ["put_fence", "get_fence", "put_flush", "get_flush", "acc_flush", "fop", "cas",
             "fence", "lock", "memcpy", "shm_store"]
RMA_TITLE = {
    "put_fence": "MPI_Put, one per MPI_Win_fence epoch (µs per epoch)",
    "get_fence": "MPI_Get, one per MPI_Win_fence epoch (µs per epoch)",
    "put_flush": "MPI_Put + MPI_Win_flush under MPI_Win_lock (shared)",
    "get_flush": "MPI_Get + MPI_Win_flush under MPI_Win_lock (shared)",
    "acc_flush": "MPI_Accumulate (MPI_DOUBLE, MPI_SUM) + MPI_Win_flush under MPI_Win_lock",
    "fop": "MPI_Fetch_and_op (MPI_INT64_T, MPI_SUM) + MPI_Win_flush under MPI_Win_lock_all",
    "cas": "MPI_Compare_and_swap (MPI_INT64_T) + MPI_Win_flush under MPI_Win_lock_all",
    "fence": "empty MPI_Win_fence (every rank)",
    "lock": "empty MPI_Win_lock (exclusive) / MPI_Win_unlock pair",
    "memcpy": "memcpy between two private buffers of rank 0 (the reference)",
    "shm_store": "MPI_Win_allocate_shared: memcpy into rank np-1's segment + MPI_Win_sync",
}
RMA_SIZED = ["put_fence", "get_fence", "put_flush", "get_flush", "acc_flush", "shm_store",
             "memcpy"]


def yard_impls():
    """The implementations of the RMA and derived-datatype benchmarks, in column order: name -> dict with
    nice, build (compile command without the output and source), launch(np) (the
    command before the program), env, settings (for the report), avail (False with
    a note when not installed). The PyPI yardsticks (`make yardsticks`) live in one
    venv each under build/yardsticks, since their wheels install files of the same
    names (bin/mpicc, lib/libmpi.so)."""
    flags = ["-std=c99", "-D_POSIX_C_SOURCE=200809L", "-O2", "-Wall", "-Wextra", "-Werror"]
    ompi_args = ["--allow-run-as-root", "--oversubscribe", "--mca", "osc", "sm",
                 "--mca", "mpi_yield_when_idle", "1"]
    y = {n: os.path.join(YARD, n) for n in ("mpich", "openmpi", "impi")}
    shmpi_bin = os.path.join(ROOT, "build", "bin")
    d = {
        "shmpi": dict(
            nice="shmpi", build=[os.path.join(shmpi_bin, "mpicc")] + flags,
            launch=lambda n: [os.path.join(shmpi_bin, "mpiexec"), "-n", str(n)], env={},
            settings="`build/bin/mpicc`, `build/bin/mpiexec -n N` (defaults)",
            avail=os.access(os.path.join(shmpi_bin, "mpicc"), os.X_OK)),
        "mpich": dict(
            nice="MPICH 4.0.2 (Debian)", build=["mpicc.mpich"] + flags,
            launch=lambda n: ["mpiexec.mpich", "-n", str(n)],
            env=dict(ENV["mpich"]),
            settings="`mpicc.mpich`, `mpiexec.mpich -n N` with "
                     "`MPIR_CVAR_POLLS_BEFORE_YIELD=1` (as the other benchmarks)",
            avail=shutil.which("mpicc.mpich") is not None),
        "openmpi": dict(
            nice="Open MPI 4.1.4 (Debian)", build=["mpicc.openmpi"] + flags,
            launch=lambda n: ["mpiexec.openmpi"] + ompi_args + ["-n", str(n)], env={},
            settings="`mpicc.openmpi`, `mpiexec.openmpi " + " ".join(ompi_args) +
                     " -n N` (its default one-sided component on one node, osc/rdma over "
                     "btl/vader, crashes in MPI_Compare_and_swap, and osc/rdma and "
                     "osc/pt2pt cannot create MPI_Win_allocate_shared windows)",
            avail=shutil.which("mpicc.openmpi") is not None),
        "mpich5": dict(
            nice="MPICH 5.0.2 (PyPI)",
            build=[os.path.join(y["mpich"], "bin", "mpicc")] + flags,
            launch=lambda n: [os.path.join(y["mpich"], "bin", "mpiexec"), "-n", str(n)],
            env={},
            settings="`build/yardsticks/mpich/bin/mpicc`, `build/yardsticks/mpich/bin/"
                     "mpiexec -n N` (defaults)",
            avail=os.access(os.path.join(y["mpich"], "bin", "mpiexec"), os.X_OK)),
        "ompi5": dict(
            nice="Open MPI 5.0.11 (PyPI)",
            build=[os.path.join(y["openmpi"], "bin", "mpicc")] + flags,
            launch=lambda n: [os.path.join(y["openmpi"], "bin", "mpiexec")] + ompi_args +
            ["-n", str(n)], env={},
            settings="`build/yardsticks/openmpi/bin/mpicc`, `build/yardsticks/openmpi/bin/"
                     "mpiexec " + " ".join(ompi_args) + " -n N` (osc/sm also keeps its "
                     "osc/ucx component from printing errors on a machine without UCX "
                     "devices)",
            avail=os.access(os.path.join(y["openmpi"], "bin", "mpiexec"), os.X_OK)),
        "impi": dict(
            nice="Intel MPI 2021.19 (PyPI)",
            # Its mpicc wrapper carries an unsubstituted install path; the program is
            # built with the system compiler against the wheel's header and library.
            build=["cc"] + flags + ["-I" + os.path.join(y["impi"], "include")],
            link=["-L" + os.path.join(y["impi"], "lib"),
                  "-Wl,-rpath," + os.path.join(y["impi"], "lib"), "-lmpi"],
            launch=lambda n: [os.path.join(y["impi"], "bin", "mpiexec"), "-n", str(n)],
            env={"I_MPI_FABRICS": "shm"},
            settings="`cc -I build/yardsticks/impi/include ... -L build/yardsticks/impi/lib "
                     "-lmpi` (its `mpicc` carries an unsubstituted install path), "
                     "`I_MPI_FABRICS=shm build/yardsticks/impi/bin/mpiexec -n N`",
            avail=os.access(os.path.join(y["impi"], "bin", "mpiexec"), os.X_OK)),
    }
    return d


def run_rma(cmd, env_extra, timeout):
    """As run(), also returning the tail of stderr: (stdout, status, err)."""
    env = dict(os.environ)
    env.update(env_extra)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                          start_new_session=True, text=True) as p:
        try:
            out, err = p.communicate(timeout=timeout)
            status = "ok" if p.returncode == 0 else f"exit {p.returncode}"
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            status = f"timeout after {timeout} s"
    return out, status, err.strip()



def build_all(impls, prog, tag):
    """Compiles bench/PROG.c with every available implementation of `impls`
    (yard_impls()): (notes, exes), a note for each one left out (not installed, or
    its build failed, with the undefined symbols), the executable of each other."""
    os.makedirs(BUILD, exist_ok=True)
    notes, exes = {}, {}
    for name, d in impls.items():
        if not d["avail"]:
            notes[name] = "not installed" + (" (`make yardsticks`)" if name in
                                             ("mpich5", "ompi5", "impi") else
                                             " (`make build`)" if name == "shmpi" else "")
            log(f"{tag}: {d['nice']}: {notes[name]}")
            continue
        exe = os.path.join(BUILD, f"{prog}.{name}")
        cmd = (d["build"] + ["-o", exe, os.path.join(BENCH, prog + ".c")] + d.get("link", [])
               + ["-lm"])
        log("build: " + " ".join(cmd))
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            lines = [l for l in (r.stderr + r.stdout).splitlines() if l.strip()]
            und = sorted({l.split("`")[1].split("'")[0] for l in lines
                          if "undefined reference to `" in l})
            notes[name] = ("build failed: undefined " + ", ".join(und[:6]) +
                           (f" and {len(und) - 6} more" if len(und) > 6 else "")
                           if und else "build failed: " + (lines[0] if lines else "?")[:200])
            log(f"{tag}: {d['nice']}: {notes[name]}")
            continue
        exes[name] = exe
    subprocess.run(["cc", "-O2", "-pthread", "-Wall", "-Wextra", "-Werror", "-o", PINGPONG,
                    os.path.join(BENCH, "pingpong.c")], check=True)
    return notes, exes


def rounds_of_runs(impls, exes, notes, tag, args, nps, rounds, timeout, phase, take):
    """`rounds` rounds; in each, per np, every built implementation runs its program
    (`exes`) with `-l NAME` and `args`, back to back in a rotating order, each run
    starting in the near phase. `take(name, fields, round, probes)` gets every
    comma-separated output line and says whether it was a result; a failed run's
    status and the tail of its stderr go to `notes`."""
    names = [n for n in impls if n in exes]
    for rnd in range(rounds):
        for k, np_ in enumerate(nps):
            shift = (rnd + k) % max(1, len(names))
            for name in names[shift:] + names[:shift]:
                d = impls[name]
                log(f"{tag}: np {np_}, round {rnd + 1}/{rounds}, {d['nice']}")
                before = phase.wait_near()
                ts = time.time()
                out, status, err = run_rma(d["launch"](np_) + [exes[name], "-l", name] + args,
                                           d["env"], timeout)
                after = phase.probe()
                probes = ",".join("" if x is None else f"{x:.0f}" for x in (before, after))
                got = sum(take(name, line.split(","), rnd, probes) for line in out.splitlines())
                log(f"  {status} in {time.time() - ts:.1f} s, {got} cells; probes {probes} ns")
                if status != "ok":
                    tail = " / ".join(l for l in err.splitlines()[-3:])[-300:]
                    notes.setdefault(name, f"np {np_}: {status} after {got} cells: {tail}")
                    log(f"  {tail}")

def yard_setup(prog, tag):
    """What rma_bench and ddt_bench set up before their rounds: the implementations,
    the notes of those whose build failed, the executables, the start time, the load,
    and the phase probe (waiting at most 10 s for the near phase)."""
    impls = yard_impls()
    notes, exes = build_all(impls, prog, tag)
    start = datetime.datetime.now(datetime.timezone.utc)
    load0 = os.getloadavg()[0]
    phase = Phase()
    phase.WAIT = 10.0
    phase.calibrate(6.0)
    return impls, notes, exes, start, load0, phase


def yard_report_head(impls, cell, title, flag, rounds_var, run):
    """What the reports of rma_bench and ddt_bench begin with: the columns (the
    implementations with cells), the other implementations, their short names, and
    the title and command lines. `run` is (start, elapsed s, rounds, load before,
    load after)."""
    start, elapsed, rounds, load0, load1 = run
    env_s = " ".join(f"{k}={os.environ[k]}" for k in ("BENCH_QUICK", "BENCH_NP",
                                                         rounds_var, "BENCH_OUT")
                     if os.environ.get(k))
    cols = [n for n in impls if any(k[0] == n for k in cell)]
    others = [n for n in cols if n != "shmpi"]
    short = {"shmpi": "shmpi", "mpich": "MPICH4", "openmpi": "OMPI4", "mpich5": "MPICH5",
             "ompi5": "OMPI5", "impi": "IMPI"}
    head = [f"# {title}: shmpi and other MPI implementations", "",
            f"Command: `{(env_s + ' ') if env_s else ''}python3 bench/run.py --{flag}` "
            f"(`make bench-{flag}`), {start:%Y-%m-%d %H:%M} UTC, {elapsed:.0f} s, {rounds} "
            f"round(s), load {load0:.2f}/{load1:.2f}; machine: {machine()}.", ""]
    return cols, others, short, head


def rma_bench():
    """One-sided communication (bench/rmabench.c): MPI_Put/MPI_Get under fence and
    lock/flush, MPI_Accumulate, MPI_Fetch_and_op, MPI_Compare_and_swap, empty fence and
    lock/unlock, memcpy and shared-window stores, rank 0 to rank np-1, at np 2, 4, 8
    (BENCH_NP), for shmpi, Debian's MPICH and Open MPI and the PyPI yardsticks that are
    installed (`make yardsticks`). BENCH_RMA_ROUNDS (2; 1 with BENCH_QUICK) rounds; in
    each, per np, the implementations back to back in a rotating order, each run
    starting in the near phase (`Phase`, waiting at most 10 s); a cell is the median
    over the rounds of each run's median batch. An implementation whose build fails is
    left out with a note. Writes bench/rma_results.md (BENCH_OUT to write elsewhere)
    and the raw lines to target/bench/rma_results.csv."""
    t0 = time.time()
    if QUICK:
        rounds, nps, sizes, cell_t, batches, timeout = 1, [2, 4], [8, 4096, 262144, 16 << 20], "0.005", "3", 90
    else:
        # Two rounds: oversubscribed MPICH waits for the scheduler in every fence and
        # flush at np 8 (about 40 ms per fence epoch; 84 s for one run of MPICH 4.0.2,
        # 61 s of MPICH 5.0.2), which makes a round about 5 minutes.
        rounds, nps, cell_t, batches, timeout = 2, [2, 4, 8], "0.008", "5", 180
        sizes = [8] + [16 * 4 ** i for i in range(11)]  # 8 B, 16 B .. 16 MiB
    rounds = int(os.environ.get("BENCH_RMA_ROUNDS", rounds))
    if os.environ.get("BENCH_NP"):
        nps = [int(x) for x in os.environ["BENCH_NP"].split()]
    impls, notes, exes, start, load0, phase = yard_setup("rmabench", "rma")
    args = ["-s", ",".join(str(b) for b in sizes), "-t", cell_t, "-b", batches]
    samples = {}  # (impl, mode, np, bytes) -> [(median us, MB/s)]
    raw = ["impl,mode,bytes,np,median_us,mbps,best_us,iters,round,probe_before_ns,probe_after_ns"]

    def take(name, f, rnd, probes):
        if len(f) == 9 and f[0] == "rma" and f[1] == name:
            samples.setdefault((name, f[2], int(f[4]), int(f[3])), []).append(
                (float(f[5]), float(f[6])))
            raw.append(",".join(f[1:]) + f",{rnd + 1},{probes}")
            return True
        return False

    rounds_of_runs(impls, exes, notes, "rma", args, nps, rounds, timeout, phase, take)
    elapsed = time.time() - t0
    load1 = os.getloadavg()[0]
    cell = {k: (median([x[0] for x in v]), median([x[1] for x in v]))
            for k, v in samples.items()}

    cols, others, short, L = yard_report_head(
        impls, cell, "One-sided communication (MPI RMA)", "rma", "BENCH_RMA_ROUNDS",
        (start, elapsed, rounds, load0, load1))
    L += [
         "bench/rmabench.c: rank 0 is the origin and rank np-1 the target; the other "
         "ranks take part in the fences and otherwise wait in MPI_Barrier. Window memory "
         "from MPI_Win_allocate. Each cell is checked against the values expected before "
         "it is timed (every fetch of MPI_Fetch_and_op and MPI_Compare_and_swap is "
         f"checked). Per cell: warm-up, an iteration count calibrated to about {cell_t} s "
         f"per batch, {batches} batches; a run reports its median batch, and a cell here "
         f"is the median over the rounds (every run started in the near phase of the "
         f"machine where it could: fastest cache-line round trip between CPU 0 and 1 "
         f"{fmt(phase.best)} ns). In each round the implementations ran back to back in a "
         "rotating order.", "",
         "Ratios are other's time / shmpi's time (above 1: shmpi faster). MB/s = 10^6 "
         "bytes per second. `shmpi/memcpy`: shmpi's time over the memcpy time of the same "
         "size and np (median over every implementation's runs; the goal for Put and Get "
         "is within 1.3).", "",
         "| column | implementation | build and run | status |", "|---|---|---|---|"]
    for n, d in impls.items():
        L.append(f"| {short[n]} | {d['nice']} | {d['settings']} | "
                 f"{notes.get(n, 'ok')} |")
    L.append("")

    def v(n, mode, np_, b, i):
        c = cell.get((n, mode, np_, b))
        return c[i] if c else None

    memcpy_t = {}
    for (n, mode, np_, b), c in cell.items():
        if mode == "memcpy":
            memcpy_t.setdefault((np_, b), []).append(c[0])
    memcpy_t = {k: median(x) for k, x in memcpy_t.items()}

    L.append("## Latency (µs per operation; 8 B, or 0 B for the empty fence and lock)")
    L.append("")
    for mode in ["put_fence", "get_fence", "put_flush", "get_flush", "acc_flush", "fop",
                 "cas", "fence", "lock", "shm_store"]:
        b = 0 if mode in ("fence", "lock") else 8
        if not any(k[1] == mode and k[3] == b for k in cell):
            continue
        L.append(f"**{RMA_TITLE[mode]}**")
        L.append("")
        L.append("| np | " + " | ".join(short[n] for n in cols) + " | " +
                 " | ".join(f"{short[n]}/shmpi" for n in others) + " |")
        L.append("|---|" + "---|" * (len(cols) + len(others)))
        for np_ in nps:
            t = {n: v(n, mode, np_, b, 0) for n in cols}
            L.append(f"| {np_} | " + " | ".join(fmt(t[n]) for n in cols) + " | " +
                     " | ".join(ratio(t[n], t.get("shmpi")) for n in others) + " |")
        L.append("")
    L.append("## Bandwidth (MB/s; ratios of the times, as above)")
    L.append("")
    for mode in RMA_SIZED:
        if not any(k[1] == mode for k in cell):
            continue
        L.append(f"**{RMA_TITLE[mode]}**")
        L.append("")
        mc = mode not in ("memcpy",)
        L.append("| np | size | " + " | ".join(short[n] for n in cols) + " | " +
                 " | ".join(f"{short[n]}/shmpi" for n in others) +
                 (" | shmpi/memcpy |" if mc else " |"))
        L.append("|---|---|" + "---|" * (len(cols) + len(others) + (1 if mc else 0)))
        for np_ in nps:
            for b in sizes:
                t = {n: v(n, mode, np_, b, 0) for n in cols}
                bw = {n: v(n, mode, np_, b, 1) for n in cols}
                row = (f"| {np_} | {human(b)} | " + " | ".join(fmt(bw[n]) for n in cols) +
                       " | " + " | ".join(ratio(t[n], t.get("shmpi")) for n in others))
                if mc:
                    row += " | " + ratio(t.get("shmpi"), memcpy_t.get((np_, b)))
                L.append(row + " |")
        L.append("")
    text = "\n".join(L) + "\n"
    os.makedirs(OUTDIR, exist_ok=True)
    with open(os.path.join(OUTDIR, "rma_results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(BUILD, "rma_results.csv"), "w") as f:
        f.write("\n".join(raw) + "\n")
    print(text)
    log(f"bench: wrote {OUTDIR}/rma_results.md and {BUILD}/rma_results.csv in "
        f"{time.time() - t0:.0f} s")


# The derived-datatype benchmark (bench/ddtbench.c, `bench/run.py --ddt`, make bench-ddt).
DDT_OPS = ["sendrecv", "bcast", "allreduce"]
DDT_TITLE = {
    "sendrecv": "MPI_Send/MPI_Recv, ping-pong between ranks 0 and 1 (half the round trip)",
    "bcast": "MPI_Bcast from rank 0",
    "allreduce": "MPI_Allreduce with a user-defined op adding the layout's doubles (the "
                 "standard defines the predefined ops on predefined datatypes only)",
}
DDT_LAYOUTS = ["vec1", "vec8", "vec64", "indexed", "struct", "nested", "subarray"]


def ddt_bench():
    """Derived datatypes (bench/ddtbench.c): MPI_Send/Recv, MPI_Bcast and MPI_Allreduce
    of vector (blocks of 1, 8, 64 doubles), indexed, struct {int; double}, nested and
    subarray layouts, 8 KiB to 64 MiB of data, at np 2 and 4 (BENCH_NP), for shmpi and
    the other implementations of yard_impls(), with a memcpy of the same bytes as the
    reference. BENCH_DDT_ROUNDS (1) rounds, as rma_bench runs them. Writes
    bench/ddt_results.md (BENCH_OUT to write elsewhere) and the raw lines to
    target/bench/ddt_results.csv."""
    t0 = time.time()
    if QUICK:
        nps, sizes, cell_t, batches, timeout = [2], [8192, 262144], "0.005", "3", 120
    else:
        nps, sizes, cell_t, batches, timeout = [2, 4], [8192, 262144, 8 << 20, 64 << 20], \
            "0.02", "3", 600
    rounds = int(os.environ.get("BENCH_DDT_ROUNDS", 1))
    if os.environ.get("BENCH_NP"):
        nps = [int(x) for x in os.environ["BENCH_NP"].split()]
    impls, notes, exes, start, load0, phase = yard_setup("ddtbench", "ddt")
    args = ["-s", ",".join(str(b) for b in sizes), "-t", cell_t, "-b", batches]
    samples = {}  # (impl, op, layout, np, size index) -> [(median us, MB/s, bytes)]
    raw = ["impl,op,layout,bytes,np,median_us,mbps,iters,round,probe_before_ns,probe_after_ns"]

    def take(name, f, rnd, probes):
        if len(f) == 9 and f[0] == "ddt" and f[1] == name:
            b = int(f[4])
            k = min(range(len(sizes)), key=lambda i: abs(sizes[i] - b))
            samples.setdefault((name, f[2], f[3], int(f[5]), k), []).append(
                (float(f[6]), float(f[7]), b))
            raw.append(",".join(f[1:]) + f",{rnd + 1},{probes}")
            return True
        return False

    rounds_of_runs(impls, exes, notes, "ddt", args, nps, rounds, timeout, phase, take)
    elapsed = time.time() - t0
    load1 = os.getloadavg()[0]
    cell = {k: (median([x[0] for x in v]), median([x[1] for x in v]), v[0][2])
            for k, v in samples.items()}
    cols, others, short, L = yard_report_head(
        impls, cell, "Derived datatypes", "ddt", "BENCH_DDT_ROUNDS",
        (start, elapsed, rounds, load0, load1))
    L += [
         "bench/ddtbench.c: each layout is built for each size so that one element holds "
         "that much data (a little less where its pattern does not divide it); vec1, vec8 "
         "and vec64 are MPI_Type_vector of blocks of 1, 8 and 64 doubles at twice that "
         "stride, indexed has blocks of 1..8 doubles and gaps of 1..3, struct is {int; "
         "double} (12 bytes of data in 16), nested a resized struct of two vectors of an "
         "indexed type (20 doubles in 320 bytes), subarray the left half of the columns "
         "of a square array of doubles. Each cell is checked once against the values "
         f"expected, then timed: an iteration count calibrated to about {cell_t} s per "
         f"batch, {batches} batches, the median (the slowest rank's time for the "
         "collectives). Every run started in the near phase of the machine where it "
         f"could (fastest cache-line round trip {fmt(phase.best)} ns); the implementations "
         "ran back to back in a rotating order.", "",
         "MB/s = 10^6 bytes of data per second. Ratios are other's time / shmpi's time "
         "(above 1: shmpi faster); `of memcpy`: shmpi's speed as a fraction of a memcpy of "
         "the same bytes between contiguous buffers (median over every implementation's "
         "runs; the goal is at least 0.5 for blocks of 64 bytes or more).", "",
         "| column | implementation | build and run | status |", "|---|---|---|---|"]
    for n, d in impls.items():
        L.append(f"| {short[n]} | {d['nice']} | {d['settings']} | {notes.get(n, 'ok')} |")
    L.append("")
    mc = {}
    for (n, op, lay, np_, k), c in cell.items():
        if op == "memcpy":
            mc.setdefault((np_, k), []).append(c[1])
    mc = {key: median(v) for key, v in mc.items()}
    for op in DDT_OPS:
        if not any(key[1] == op for key in cell):
            continue
        L.append(f"## {DDT_TITLE[op]}")
        L.append("")
        L.append("MB/s, then ratios of the times.")
        L.append("")
        L.append("| np | layout | data | " + " | ".join(short[n] for n in cols) + " | " +
                 " | ".join(f"{short[n]}/shmpi" for n in others) + " | of memcpy |")
        L.append("|---|---|---|" + "---|" * (len(cols) + len(others) + 1))
        for np_ in nps:
            for lay in DDT_LAYOUTS:
                for k in range(len(sizes)):
                    c = {n: cell.get((n, op, lay, np_, k)) for n in cols}
                    if not any(c.values()):
                        continue
                    b = next(x[2] for x in c.values() if x)
                    t = {n: (x[0] if x else None) for n, x in c.items()}
                    bw = {n: (x[1] if x else None) for n, x in c.items()}
                    frac = (f"{bw['shmpi'] / mc[(np_, k)]:.2f}"
                            if bw.get("shmpi") and mc.get((np_, k)) else "-")
                    L.append(f"| {np_} | {lay} | {human(b)} | " +
                             " | ".join(fmt(bw[n]) for n in cols) + " | " +
                             " | ".join(ratio(t[n], t.get("shmpi")) for n in others) +
                             f" | {frac} |")
        L.append("")
    text = "\n".join(L) + "\n"
    os.makedirs(OUTDIR, exist_ok=True)
    with open(os.path.join(OUTDIR, "ddt_results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(BUILD, "ddt_results.csv"), "w") as f:
        f.write("\n".join(raw) + "\n")
    print(text)
    log(f"bench: wrote {OUTDIR}/ddt_results.md and {BUILD}/ddt_results.csv in "
        f"{time.time() - t0:.0f} s")


NBR_IMPLS = ["shmpi", "mpich5", "ompi5", "impi"]


def neighbour_bench():
    """MPI_Allreduce of 8 B and 4 MiB beside 0, 1 and 2 CPU-bound processes (shell
    busy loops started before each run and killed after it), at np 2 and 4, shmpi
    against MPICH 5.0.2, Open MPI 5.0.11 and Intel MPI 2021.19 (bench/neighbours.c:
    median and 90th percentile of 300 calls, fewer where they would take over 5 s,
    each after a barrier). BENCH_NBR_ROUNDS
    (3) rounds, the implementations in a rotating order in each; a cell is the median
    over the rounds. No phase probe: the probe needs both CPUs, which the neighbours
    take. Writes bench/neighbour_results.md."""
    t0 = time.time()
    impls = {k: v for k, v in yard_impls().items() if k in NBR_IMPLS}
    notes, exes = build_all(impls, "neighbours", "nbr")
    start = datetime.datetime.now(datetime.timezone.utc)
    load0 = os.getloadavg()[0]
    rounds = int(os.environ.get("BENCH_NBR_ROUNDS", "1" if QUICK else "3"))
    nps = [int(x) for x in os.environ.get("BENCH_NP", "2 4").split()]
    names = [n for n in impls if n in exes]
    cell = {}
    for rnd in range(rounds):
        for hogs in (0, 1, 2):
            for k, np_ in enumerate(nps):
                shift = (rnd + k + hogs) % max(1, len(names))
                for name in names[shift:] + names[:shift]:
                    d = impls[name]
                    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"],
                                             start_new_session=True) for _ in range(hogs)]
                    time.sleep(0.2)
                    try:
                        out, status, err = run_rma(d["launch"](np_) + [exes[name], "-l", name],
                                                   d["env"], 300)
                    finally:
                        for b in busy:
                            os.killpg(b.pid, signal.SIGKILL)
                            b.wait()
                    got = 0
                    for line in out.splitlines():
                        f = line.split(",")
                        if len(f) == 8 and f[0] == "nbr" and f[1] == name:
                            cell.setdefault((hogs, np_, int(f[2]), name), []).append(
                                (float(f[4]), float(f[5])))
                            got += 1
                    log(f"nbr: {hogs} neighbour(s), np {np_}, round {rnd + 1}/{rounds}, "
                        f"{d['nice']}: {status}, {got} cells")
                    if status != "ok":
                        tail = " / ".join(err.splitlines()[-3:])[-300:]
                        notes.setdefault(name, f"np {np_}, {hogs} neighbour(s): {status}: {tail}")
    elapsed = time.time() - t0
    cols, others, short, head = yard_report_head(
        impls, {}, "MPI_Allreduce beside CPU-bound neighbours",
        "neighbours", "BENCH_NBR_ROUNDS", (start, elapsed, rounds, load0, os.getloadavg()[0]))
    cols = [n for n in names if any(k[3] == n for k in cell)]
    others = [n for n in cols if n != "shmpi"]
    med = {k: (statistics.median(a for a, _ in v), statistics.median(b for _, b in v))
           for k, v in cell.items()}
    lines = head + [
        "bench/neighbours.c: MPI_Allreduce (MPI_DOUBLE, MPI_SUM) of 8 B and 4 MiB, 300 calls "
        "(fewer, at least 11, where they would take over 5 s), "
        "each after an MPI_Barrier and timed alone on rank 0 (the first one's result checked "
        "on every rank); `median` and `p90` of the calls in µs. Neighbours: CPU-bound shell "
        "loops (`while :; do :; done`) started 0.2 s before the run and killed after it. A "
        "cell is the median over the rounds; in each round the implementations ran back to "
        "back in a rotating order. Ratios: other's median / shmpi's (above 1: shmpi faster); "
        "`x quiet`: shmpi's median over its median without neighbours.", ""]
    lines += ["| column | implementation | build and run | status |", "|---|---|---|---|"]
    for n in impls:
        lines.append(f"| {short[n]} | {impls[n]['nice']} | {impls[n]['settings']} | "
                     f"{notes.get(n, 'ok')} |")
    lines += ["", "| neighbours | np | size | " + " | ".join(
        f"{short[n]} median | {short[n]} p90" for n in cols) + " | " +
        " | ".join(f"{short[n]}/shmpi" for n in others) + " | x quiet |",
        "|---" * (3 + 2 * len(cols) + len(others) + 1) + "|"]
    for hogs in (0, 1, 2):
        for np_ in nps:
            for size in (8, 4194304):
                row = [str(hogs), str(np_), "8 B" if size == 8 else "4 MiB"]
                for n in cols:
                    m = med.get((hogs, np_, size, n))
                    row += [fmt(m[0]), fmt(m[1])] if m else ["-", "-"]
                s0 = med.get((hogs, np_, size, "shmpi"))
                for n in others:
                    m = med.get((hogs, np_, size, n))
                    row.append(f"{m[0] / s0[0]:.2f}" if m and s0 and s0[0] > 0 else "-")
                q = med.get((0, np_, size, "shmpi"))
                row.append(f"{s0[0] / q[0]:.2f}" if s0 and q and q[0] > 0 else "-")
                lines.append("| " + " | ".join(row) + " |")
    with open(os.path.join(OUTDIR, "neighbour_results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    log(f"bench: wrote {OUTDIR}/neighbour_results.md in {elapsed:.0f} s")


if __name__ == "__main__":
    if sys.argv[1:] == ["--plot-only"]:
        plot_only()
    elif sys.argv[1:] == ["--agree"]:
        agree_bench()
    elif sys.argv[1:] == ["--p2p"]:
        p2p_bench()
    elif sys.argv[1:] == ["--rlocal"]:
        rlocal_bench()
    elif sys.argv[1:] == ["--ddt"]:
        ddt_bench()
    elif sys.argv[1:] == ["--rma"]:
        rma_bench()
    elif sys.argv[1:] == ["--neighbours"]:
        neighbour_bench()
    elif len(sys.argv) == 3 and sys.argv[1] == "--vs-build":
        vs_build_bench(os.path.abspath(sys.argv[2]))
    else:
        main()
