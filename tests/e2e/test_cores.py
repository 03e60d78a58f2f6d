"""Both cores and the progress line: a report reads the same with one
worker thread or several (HEAPTRAIL_THREADS), and shows its progress on
stderr only when stderr is a terminal."""

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time

from harness import (HT, HT_ASAN, PROGS, SANITIZER_RE, asan_env, heaptrail_run, need_tools,
                     report_cli, run, tail, text)

# (name, program argv, run options, report options): a single thread, threads,
# a producer/consumer pair, the function profile of threads, sampling, tags
CASES = (
    ("churn", ["churn", "300000"], [], []),
    ("threads", ["threads"], [], []),
    ("prodcons", ["prodcons"], [], []),
    ("fn_threads", ["fn_threads"], ["--functions"], ["--functions"]),
    ("sampled", ["churn", "300000"], ["--sample-rate", "1024"], []),
    ("tags", ["tags_phases"], [], []),
)


def trace(t, name, argv, opts):
    tr = heaptrail_run([str(PROGS / argv[0])] + argv[1:], opts, out_name=name + ".ht")
    t.need(tr.out_path.exists(), "%s: no trace: %s" % (name, tail(tr.proc.err)))
    return tr.out_path


def t_threads_same(t):
    """The JSON and text reports and `leaks --format json` of traces with one
    thread and with several are the same bytes with HEAPTRAIL_THREADS=1, 2
    and 4, with every block kept and with a 1 MB budget (replays in the
    merge that runs ahead on its own thread), and so are the messages."""
    need_tools(t)
    for name, argv, opts, extra in CASES:
        path = trace(t, name, argv, opts)
        cmds = [["report", "--format", "json"] + extra]
        if name in ("churn", "threads"):
            cmds += [["report"] + extra, ["leaks", "--format", "json"]]
        for cmd in cmds:
            for mb in ("4096", "1"):
                out = {}
                for n in ("1", "2", "4"):
                    env = dict(os.environ, HEAPTRAIL_THREADS=n, HEAPTRAIL_READER_RESIDENT_MB=mb)
                    p = run([report_cli()] + cmd + [str(path)], 300, env=env)
                    t.check(not p.timed_out, "%s %s: timed out" % (name, " ".join(cmd)))
                    out[n] = (p.rc, p.out, text(p.err))
                what = "%s: %s, budget %s MB" % (name, " ".join(cmd), mb)
                t.check(out["1"][0] == 0 and out["1"][1], "%s: failed: %s" % (what, tail(out["1"][2])))
                t.eq(what + ": 1 thread against 2", out["1"], out["2"])
                t.eq(what + ": 1 thread against 4", out["1"], out["4"])


def t_default_budget(t):
    """Without HEAPTRAIL_READER_RESIDENT_MB the reader keeps the joined
    events of a trace on one core (HEAPTRAIL_THREADS=1) and none with two,
    where the merge's replays run on the worker; the reports are the same
    bytes."""
    need_tools(t)
    for name, argv, opts, extra in CASES[:2]:
        path = trace(t, name, argv, opts)
        out, left = {}, {}
        for n in ("1", "2"):
            env = dict(os.environ, HEAPTRAIL_THREADS=n, HEAPTRAIL_READER_STATS="1")
            env.pop("HEAPTRAIL_READER_RESIDENT_MB", None)
            p = run([report_cli(), "report", "--format", "json"] + extra + [str(path)], 300, env=env)
            t.check(not p.timed_out, "%s: timed out" % name)
            stats = re.search(r"reader: (\d+) of (\d+) blocks left to replays", text(p.err))
            t.need(stats, "%s, %s thread(s): no reader statistics: %s" % (name, n, tail(p.err)))
            left[n] = int(stats.group(1))
            out[n] = (p.rc, p.out, re.sub(r"heaptrail: reader: .*\n", "", text(p.err)))
        t.eq("%s: blocks left to replays on one core" % name, 0, left["1"])
        t.check(left["2"] > 0, "%s: no block left to replays with two threads" % name)
        t.eq("%s: report with one thread against two" % name, out["1"], out["2"])


def symbolized_traces(t):
    """(name, trace) of real programs whose stacks symbolize over several
    modules: an optimised C++ program (inline chains in the program, names
    from libstdc++'s and libc's symbols and libc's separate DWARF when
    installed), python3 (PYTHONMALLOC=malloc), a library loaded where an
    unloaded one was (addresses that two modules held in turn), and the C++
    program replaced by another after its run (its frames unsymbolized,
    with a warning)."""
    inl = PROGS / "cxx_inline_sites"
    t.need(inl.exists(), "%s not built (make programs)" % inl)
    out = [("cxx_inline", trace(t, "cxx_inline", ["cxx_inline_sites"], []))]
    py = heaptrail_run(["/usr/bin/python3", "-c", PY_SCRIPT], (), out_name="python.ht",
                       env=dict(os.environ, PYTHONMALLOC="malloc"))
    t.need(py.out_path.exists(), "python3: no trace: %s" % tail(py.proc.err))
    out.append(("python3", py.out_path))
    out.append(("dlswap", trace(t, "dlswap", ["dlswap"], [])))
    moved = t.tmp / "cxx_inline_sites"
    shutil.copyfile(inl, moved)
    os.chmod(moved, 0o755)
    tr = heaptrail_run([str(moved)], (), out_name="replaced.ht")
    t.need(tr.out_path.exists(), "replaced: no trace: %s" % tail(tr.proc.err))
    shutil.copyfile(PROGS / "cxx_cold_main", moved)
    out.append(("replaced", tr.out_path))
    return out


# python3 allocating from many of its own functions and libc's
PY_SCRIPT = ("import collections, json, re\n"
             "d = {str(i): [i] * (i % 7) for i in range(3000)}\n"
             "s = json.dumps(d)\n"
             "c = collections.Counter(re.findall(r'\\d', s))\n"
             "print(len(s), sorted(c.items())[:2])\n")


def t_symbolize_threads_same(t):
    """The distinct addresses of a trace symbolize on worker threads (one
    libdw session per module and worker) while the pass runs: the JSON and
    text reports, the leak list and the folded and pprof exports of real
    programs are the same bytes, and say the same on stderr, with
    HEAPTRAIL_THREADS=1 (all on the calling thread), 2 and 3. The ASan+UBSan
    build then gives the same JSON with 2 threads, without a report."""
    need_tools(t)
    cmds = (["report", "--format", "json"], ["report"], ["leaks", "--format", "json"],
            ["convert", "--format", "folded"], ["convert", "--format", "pprof"])
    for name, path in symbolized_traces(t):
        for cmd in cmds:
            out = {}
            for n in ("1", "2", "3"):
                env = dict(os.environ, HEAPTRAIL_THREADS=n)
                p = run([HT] + cmd + [str(path)], 300, env=env)
                t.check(not p.timed_out, "%s %s: timed out" % (name, " ".join(cmd)))
                out[n] = (p.rc, p.out, text(p.err))
            what = "%s: %s" % (name, " ".join(cmd))
            t.check(out["1"][0] == 0 and out["1"][1], "%s: failed: %s" % (what, tail(out["1"][2])))
            t.eq(what + ": 1 thread against 2", out["1"], out["2"])
            t.eq(what + ": 1 thread against 3", out["1"], out["3"])
            if cmd == cmds[0] and name == "cxx_inline":
                rep = json.loads(text(out["1"][1]))
                inl = [f for s in rep.get("sites", []) for f in s.get("stack", [])
                       if f.get("inlined") and "cxx_inline_sites.cc" in (f.get("file") or "")]
                t.check(len(inl) >= 10, "%s: %d inlined frames of the program: the case under "
                        "test did not happen" % (what, len(inl)))
            if name == "replaced":
                t.eq(what + ": the changed program's warnings", 1,
                     out["1"][2].count("changed since the trace was recorded"))
        if HT_ASAN.exists():
            p = run([HT_ASAN, "report", "--format", "json", str(path)], 600,
                    env=dict(asan_env(), HEAPTRAIL_THREADS="2"))
            t.check(not p.timed_out, "%s: ASan report timed out" % name)
            t.check(not SANITIZER_RE.search(text(p.err)), "%s: ASan/UBSan with 2 threads: %s"
                    % (name, tail(p.err, 1500)))
            ref = run([HT, "report", "--format", "json", str(path)], 300,
                      env=dict(os.environ, HEAPTRAIL_THREADS="1"))
            t.eq("%s: ASan build with 2 threads against 1 thread" % name, (ref.rc, ref.out),
                 (p.rc, p.out))


def on_pty(cmd, env, timeout):
    """cmd with stderr on a pseudo-terminal and stdout on a pipe: (rc,
    stdout, what the terminal got). A run past timeout is killed (rc None)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                         env=env, start_new_session=True)
    os.close(slave)
    got = b""
    out = b""
    end = time.monotonic() + timeout
    os.set_blocking(p.stdout.fileno(), False)
    watch = [master, p.stdout]
    while time.monotonic() < end:
        r, _, _ = select.select(watch, [], [], 0.2)
        if master in r:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its side
                chunk = b""
            if not chunk:  # at its end the master stays readable: stop asking
                watch.remove(master)
            got += chunk
        if p.stdout in r:
            data = p.stdout.read()
            if data == b"":
                watch.remove(p.stdout)
            out += data or b""
        if p.poll() is not None and (not r or not watch):
            break
    if p.poll() is None:
        os.killpg(p.pid, 9)
        p.wait()
        rc = None
    else:
        rc = p.returncode
    out += p.stdout.read() or b""
    os.close(master)
    return rc, out, got


def t_progress(t):
    """With stderr a terminal, a report that runs longer than the delay
    (HEAPTRAIL_PROGRESS_AFTER_MS, a second unless set) shows a progress line
    (the phase, bytes of the trace read of its size) and erases it; with
    stderr a pipe or a file, or a run shorter than the delay, nothing. The
    report itself is the same."""
    need_tools(t)
    path = trace(t, "churn", ["churn", "1000000"], [])
    size = path.stat().st_size
    cmd = [report_cli(), "report", str(path)]
    env = dict(os.environ, HEAPTRAIL_PROGRESS_AFTER_MS="0")
    plain = run(cmd, 300, env=env)
    t.eq("report with stderr a pipe: exit status", 0, plain.rc)
    t.eq("report with stderr a pipe: nothing on stderr", "", text(plain.err))
    rc, out, got = on_pty(cmd, env, 300)
    t.eq("report on a terminal: exit status", 0, rc)
    t.eq("report on a terminal: the same report", plain.out, out)
    g = text(got)
    t.check("heaptrail: reading: " in g or "heaptrail: decompressing: " in g,
            "no progress of the reading on the terminal: %r" % g[:300])
    t.check(" of %.1f MB (" % (size / 1e6) in g, "progress does not name the trace's %d bytes: %r"
            % (size, g[:300]))
    t.check("heaptrail: analysing: " in g, "no progress of the analysis: %r" % g[:300])
    t.check(g.endswith("\r\x1b[K"), "the progress line is not erased at the end: %r" % g[-80:])
    # stderr a file
    errf = t.tmp / "progress.err"
    with open(errf, "wb") as f:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=f, env=env, timeout=300)
    t.eq("report with stderr a file: exit status", 0, p.returncode)
    t.eq("report with stderr a file: nothing in it", b"", errf.read_bytes())
    # a short run under the default delay of a second
    small = trace(t, "small", ["churn", "1000"], [])
    env1 = dict(os.environ)
    env1.pop("HEAPTRAIL_PROGRESS_AFTER_MS", None)
    rc, out, got = on_pty([report_cli(), "report", str(small)], env1, 120)
    t.eq("short report on a terminal: exit status", 0, rc)
    t.eq("short report on a terminal: no progress", "", text(got))


MAXRSS = ("import resource, subprocess, sys\n"
          "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
          "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
          "sys.exit(p.returncode)\n")


def peak_kib(t, what, cmd, env):
    """Peak RSS in KiB of cmd (the plain CLI: ASan's shadow would blur it)."""
    p = run([sys.executable, "-c", MAXRSS] + cmd, 300, env=env)
    t.need(not p.timed_out and p.rc == 0, "%s: %s" % (what, p.describe()))
    return int(text(p.out).strip())


def t_late_thread_memory(t):
    """A main thread whose first block is early in the file and its last at
    the end, after the workers' 8M events (late_main): with nothing kept by
    the reader, the merge joins that last block when its time comes, not
    once the first one is read, so it does not hold the workers' joined
    events meanwhile. The report's peak RSS over that of a run ten times
    shorter stays under half the trace's joined events, with one thread
    and two; the reports are the same bytes."""
    need_tools(t)
    small = trace(t, "late_small", ["late_main", "100000"], [])
    full = trace(t, "late_full", ["late_main"], [])
    env = dict(os.environ, HEAPTRAIL_THREADS="1", HEAPTRAIL_READER_RESIDENT_MB="4096",
               HEAPTRAIL_READER_STATS="1")
    p = run([str(HT), "report", "--format", "json", str(full)], 300, env=env)
    stats = re.search(r"reader: 0 of \d+ blocks left to replays, (\d+) bytes", text(p.err))
    t.need(p.rc == 0 and stats, "no reader statistics: %s" % tail(p.err))
    joined = int(stats.group(1)) >> 10
    t.check(joined > 30 << 10, "the workers' joined events are only %d KiB" % joined)
    outs = {}
    for n in ("1", "2"):
        env = dict(os.environ, HEAPTRAIL_THREADS=n, HEAPTRAIL_READER_RESIDENT_MB="0")
        cmd = [str(HT), "report", "--format", "json"]
        base = peak_kib(t, "report of the short run", cmd + [str(small)], env)
        peak = peak_kib(t, "report of the long run", cmd + [str(full)], env)
        t.check(peak - base < joined // 2,
                "%s thread(s): peak RSS %d KiB, %d KiB over the short run's: the merge held"
                " the joined events (%d KiB)" % (n, peak, peak - base, joined))
        outs[n] = run(cmd + [str(full)], 300, env=env).out
    t.eq("late_main: report with one thread against two", outs["1"], outs["2"])


TESTS = [
    ("cores.threads_same_output", t_threads_same),
    ("cores.progress_on_terminal", t_progress),
    ("cores.default_budget", t_default_budget),
    ("cores.symbolize_threads_same", t_symbolize_threads_same),
    ("cores.late_thread_memory", t_late_thread_memory),
]
