"""test_durable.py - what a program records reaches the trace within about
half a second whether or not its threads record again, so that a program
killed by SIGKILL or the OOM killer after a quiet spell keeps it; and
`heaptrail run` says how the program ended."""

import os
import signal
import subprocess
import time

import tracefile
from harness import (AGENT, BUILD, HT, PROGS, Skip, by_leaf, heaptrail_run, need_report, need_tools, report,
                     scratch_dir, tail, text)
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


def peak_rss_kib(args, env, timeout=300):
    """ru_maxrss (KiB) of args run in a child of its own, and its status."""
    p = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            return ru.ru_maxrss, p.returncode, p.stderr.read()
        if time.monotonic() > deadline:
            p.kill()
            p.wait()
            return None, None, b"timed out after %ds" % timeout
        time.sleep(0.05)


def t_memory_per_live_block(t):
    # bench/workloads/many_live.c holds 5M blocks of 16-64 bytes at once
    # (from four sites: the stacks are few). The agent's own memory on top
    # of the program's, per live block: with --no-leak-check (leak_check=0)
    # no table, so next to nothing; with the table (and in summary mode,
    # which keeps the same table), its 16-byte slots at 3/8 to 3/4 load
    # (8M slots for 5M blocks: 27 bytes a block) and the exit check's byte
    # a block, which lays the blocks out in the table's own memory: about
    # 30 bytes measured (105 with 48-byte slots and a copy to sort).
    need_tools(t)
    prog = BUILD / "bench" / "many_live"
    t.need(prog.exists(), "%s not built (make %s)" % (prog, "build/bench/many_live"))
    n = 5000000
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "HEAPTRAIL_OPTIONS")}
    plain, rc, err = peak_rss_kib([str(prog), str(n)], env)
    t.need(rc == 0, "many_live plain: status %s: %s" % (rc, tail(err)))
    d = scratch_dir("mem")
    for opts, bound in (("leak_check=0", 16), ("leak_check=1", 36), ("summary=1", 36)):
        e = dict(env, LD_PRELOAD=str(AGENT), HEAPTRAIL_OPTIONS="output=%s/x.ht,%s" % (d, opts))
        traced, rc, err = peak_rss_kib([str(prog), str(n)], e)
        if rc != 0:
            t.check(False, "many_live with %s: status %s: %s" % (opts, rc, tail(err)))
            continue
        per = (traced - plain) * 1024.0 / n
        t.check(per < bound, "%s: the agent's memory per live block is %.0f bytes (peak RSS %d KiB, "
                "plain %d KiB); want under %d" % (opts, per, traced, plain, bound))


def t_quiet_bursts_exact(t):
    # Six threads allocate in bursts between quiet spells of 150-290 ms,
    # about the age at which the writer takes a quiet thread's buffer: it
    # takes some between events, and some threads start an event while it
    # does. Every event must be in the trace once, in order (the leak
    # table, digested from the same blocks, agrees with the replay).
    need_tools(t)
    nthreads, rounds = 6, 10
    tr = heaptrail_run([PROGS / "quiet_bursts", str(nthreads), str(rounds)], timeout=120)
    t.need(tr.proc.rc == 0 and tr.out_path.exists(),
           "quiet_bursts under heaptrail: %s: %s" % (tr.proc.describe(), tail(tr.proc.err)))
    rep = need_report(t, tr.out_path).data
    site = by_leaf(rep).get("burst_alloc", {})
    n = nthreads * rounds * 200
    t.eq("burst_alloc: allocations, bytes, leaked blocks, leaked bytes",
         (n, nthreads * rounds * 20100, nthreads * 100, nthreads * 10000),
         tuple(site.get(k) for k in ("allocations", "bytes_allocated", "leaked_blocks", "leaked_bytes")))
    tot = rep.get("totals", {})
    t.eq("ignored frees, reused addresses, unclassified blocks", (0, 0, 0),
         tuple(tot.get(k) for k in ("ignored_frees", "reused_addresses", "unclassified_blocks")))
    check = tracefile.leak_checks(str(tr.out_path)).get(0)
    t.need(check is not None, "no LEAKS record")
    t.eq("blocks in the LEAKS record == blocks live at the end of the trace",
         tot.get("leaked_blocks"), len(check["kinds"]))


TESTS = [
    ("durable.quiet_bursts_exact", t_quiet_bursts_exact),
    ("durable.memory_per_live_block", t_memory_per_live_block),
    ("durable.sigkill_idle_threads", t_sigkill_idle_threads),
    ("durable.oom_kill_idle_threads", t_oom_kill_idle_threads),
]
