"""test_durable.py - what a program records reaches the trace within about
half a second whether or not its threads record again, so that a program
killed by SIGKILL or the OOM killer after a quiet spell keeps it; and
`heaptrail run` says how the program ended."""

import os
import signal
import subprocess
import time

from harness import HT, PROGS, Skip, need_tools, report, scratch_dir, tail, text
from test_signals import default_signals, run_and_signal

# tests/programs/idle_threads.c by construction: main 100 blocks of 100 B,
# each of two threads 1000 of 333 B (every other one freed) and an array of
# 500 pointers. The C library may add a few of its own (thread set-up).
ALLOCS = 100 + 2 * 1001
FREES = 2 * 500
BYTES = 100 * 100 + 2 * (1000 * 333 + 500 * 8)


def check_kept(t, out, what, more=False):
    r = report(out)
    if r.data is None:
        t.fatal("%s: no report of the trace: %s" % (what, r.err))
    tot = r.data["totals"]
    t.check(tot["allocations"] >= ALLOCS and tot["frees"] >= FREES,
            "%s: allocations %d, frees %d on disk; the program made %d and %d before going quiet"
            % (what, tot["allocations"], tot["frees"], ALLOCS, FREES))
    t.check(more or tot["allocations"] <= ALLOCS + 20,
            "%s: %d allocations, far more than the program's %d" % (what, tot["allocations"], ALLOCS))
    rr = report(out, fmt="text")
    t.check("cut short" in text(rr.proc.out) + text(rr.proc.err),
            "%s: the text report does not say the run was cut short" % what)


def t_sigkill_idle_threads(t):
    # Three threads allocate and go quiet; SIGKILL 1.5 s later. No thread
    # records again, so only the agent's writer can have shipped them.
    need_tools(t)
    proc = []
    rc, out = run_and_signal(t, [str(PROGS / "idle_threads")], signal.SIGKILL, delay=1.5, proc=proc)
    t.eq("heaptrail run's exit status after SIGKILL", 128 + signal.SIGKILL, rc)
    err = text(proc[0].stderr.read())
    t.check("killed by signal 9 (SIGKILL)" in err and "cut short" in err,
            "heaptrail run does not say how the program ended: %s" % err)
    check_kept(t, out, "SIGKILL after 1.5 s quiet")


def memory_cgroup():
    """A new memory cgroup under our own (v2 or v1), or None."""
    try:
        lines = open("/proc/self/cgroup").read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, ctrl, path = line.split(":", 2)
        if ctrl == "memory":
            base = "/sys/fs/cgroup/memory" + path
            limit = "memory.limit_in_bytes"
        elif ctrl == "" and os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            base = "/sys/fs/cgroup" + path
            limit = "memory.max"
        else:
            continue
        cg = os.path.join(base, "heaptrail-oom-%d" % os.getpid())
        try:
            os.mkdir(cg)
            with open(os.path.join(cg, limit), "w") as f:
                f.write("%d" % (200 << 20))
            return cg
        except OSError:
            try:
                os.rmdir(cg)
            except OSError:
                pass
    return None


def t_oom_kill_idle_threads(t):
    # The same program, after its quiet second, allocates until a memory
    # cgroup of 200 MiB makes the OOM killer end it. What it recorded
    # before must be on disk, and heaptrail run must name the OOM killer.
    need_tools(t)
    cg = memory_cgroup()
    if cg is None:
        raise Skip("no memory cgroup can be made here (needs a writable cgroup v1 or v2 memory controller)")
    out = scratch_dir("oom") / "x.ht"
    try:
        p = subprocess.run(["sh", "-c", 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"', "sh", cg,
                            str(HT), "run", "-o", str(out), "--", str(PROGS / "idle_threads"),
                            str(4 << 30)],
                           capture_output=True, timeout=120, preexec_fn=default_signals)
    except subprocess.TimeoutExpired:
        t.fatal("the run under a 200 MiB memory cgroup did not end in 120 s")
    finally:
        for _ in range(50):
            try:
                os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.1)
    err = text(p.stderr)
    t.eq("heaptrail run's exit status after the OOM kill", 128 + signal.SIGKILL, p.returncode)
    t.check("killed by the OOM killer" in err, "heaptrail run does not name the OOM killer: %s" % tail(p.stderr))
    check_kept(t, out, "OOM kill", more=True)


TESTS = [
    ("durable.sigkill_idle_threads", t_sigkill_idle_threads),
    ("durable.oom_kill_idle_threads", t_oom_kill_idle_threads),
]
