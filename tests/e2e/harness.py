"""harness.py - the end-to-end test machinery (Python 3 standard library only).

Runs real programs under `build/heaptrail run`, reports their traces with the
ASan+UBSan CLI (`build/asan/heaptrail`, falling back to `build/heaptrail`),
runs valgrind memcheck on the same programs as the oracle, and compares.

A test is a function taking a `T`; it records every mismatch with `T.eq` /
`T.check` (so one failure message lists all of them, expected vs got) and
may stop early with `T.fatal`. Expensive steps (a traced run plus its
report, a memcheck run) are memoised and shared between tests, and the tests
run on a small thread pool, so the slow memcheck runs overlap.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
PROGS = BUILD / "tests"
SRC = ROOT / "tests" / "programs"
HT = BUILD / "heaptrail"
HT_ASAN = BUILD / "asan" / "heaptrail"
AGENT = BUILD / "libheaptrail.so"
VALGRIND = shutil.which("valgrind") or "/usr/bin/valgrind"

RUN_TIMEOUT = 120  # one traced run
REPORT_TIMEOUT = 120  # one report (ASan build: slower)
VG_TIMEOUT = 600  # one memcheck run

# Memcheck's view of a normal run: without these, valgrind runs glibc's and
# libstdc++'s freeres hooks at exit, which free memory that a real run never
# frees (the thread stack cache, libstdc++'s emergency pool, ...), adding
# frees that heaptrail (rightly) never sees.
VG_FLAGS = ["--tool=memcheck", "--leak-check=full", "--run-libc-freeres=no",
            "--run-cxx-freeres=no", "--error-exitcode=0"]


def report_cli():
    """The CLI used for reports: the ASan build when it exists."""
    return HT_ASAN if HT_ASAN.exists() else HT


class Fatal(Exception):
    pass


class Skip(Exception):
    """A test that cannot run here (an optional library is absent)."""


class T:
    """One test's context: collects failures, owns a scratch directory."""

    def __init__(self, name, scratch_root):
        self.name = name
        self.errors = []
        self.tmp = Path(tempfile.mkdtemp(prefix=re.sub(r"\W", "_", name) + ".",
                                         dir=scratch_root))

    def check(self, cond, msg):
        if not cond:
            self.errors.append(msg)
        return bool(cond)

    def eq(self, what, expected, got):
        if expected != got:
            self.errors.append("%s: expected %r, got %r" % (what, expected, got))
            return False
        return True

    def fatal(self, msg):
        self.errors.append(msg)
        raise Fatal(msg)

    def need(self, cond, msg):
        if not cond:
            self.fatal(msg)

    def skip(self, why):
        """Ends the test as skipped: said, with why, and counted apart."""
        raise Skip(why)


# ---- processes -----------------------------------------------------------

class Proc:
    def __init__(self, cmd, rc, out, err, secs, timed_out):
        self.cmd, self.rc, self.out, self.err = cmd, rc, out, err
        self.secs, self.timed_out = secs, timed_out

    def describe(self):
        return "`%s` (exit %s)" % (" ".join(str(c) for c in self.cmd), self.rc)


def run(cmd, timeout, env=None, cwd=None, stdin=subprocess.DEVNULL):
    """Run cmd in its own process group; on timeout kill the whole group.
    rc follows the shell's convention: 128+N for death by signal N."""
    cmd = [str(c) for c in cmd]
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, cwd=cwd,
                             start_new_session=True)
    except OSError as e:
        return Proc(cmd, 127, b"", str(e).encode(), 0.0, False)
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        out, err = p.communicate()
    rc = p.returncode
    if rc is not None and rc < 0:
        rc = 128 - rc
    return Proc(cmd, rc, out, err, time.monotonic() - t0, timed_out)


def text(b):
    return b.decode("utf-8", "replace")


def tail(b, n=600):
    s = text(b) if isinstance(b, bytes) else b
    s = s.strip()
    return s if len(s) <= n else "..." + s[-n:]


SANITIZER_RE = re.compile(r"(ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:|"
                          r"SUMMARY: (Address|Undefined|Leak)Sanitizer)")


# ---- memoisation shared between test threads ------------------------------

_memo_lock = threading.Lock()
_memo = {}


class _Slot:
    def __init__(self):
        self.done = threading.Event()
        self.value = None
        self.exc = None


def memo(key, fn):
    """fn() once per key, whichever thread asks first; others wait."""
    with _memo_lock:
        slot = _memo.get(key)
        owner = slot is None
        if owner:
            slot = _memo[key] = _Slot()
    if owner:
        try:
            slot.value = fn()
        except BaseException as e:  # noqa: B902 - handed to the waiters
            slot.exc = e
        slot.done.set()
    else:
        slot.done.wait()
    if slot.exc is not None:
        raise slot.exc
    return slot.value


SCRATCH = None  # set by run.py: the suite's scratch root


def scratch_dir(prefix):
    return Path(tempfile.mkdtemp(prefix=prefix + ".", dir=SCRATCH))


# ---- heaptrail run / report ----------------------------------------------

class Traced:
    """A program run under `heaptrail run`, with its trace files."""

    def __init__(self, proc, outdir, out_path, cwd=None):
        self.proc = proc
        self.outdir = outdir
        self.out_path = out_path
        self.cwd = cwd or os.getcwd()

    def files(self):
        """Every trace the run left in its (fresh) output directory (the
        run file of a run of several processes aside: runfiles)."""
        return sorted(p for p in self.outdir.iterdir() if p.is_file() and p.suffix != ".run")

    def runfiles(self):
        """The run files (NAME.run: the run's processes) in its output directory."""
        return sorted(p for p in self.outdir.iterdir() if p.is_file() and p.suffix == ".run")

    def listed(self):
        """Trace files named in heaptrail run's stderr (existing files that
        start with the trace magic; the program's own path is named too)."""
        found = []
        for m in re.finditer(r"([^\s'\"(),;]+)", text(self.proc.err)):
            p = m.group(1).rstrip(".:")
            p = os.path.normpath(os.path.join(self.cwd, p))
            if p in found or not os.path.isfile(p) or os.path.islink(p):
                continue
            try:
                with open(p, "rb") as f:
                    if f.read(8) != b"HEAPTRL\x1a":
                        continue
            except OSError:
                continue
            found.append(p)
        return [Path(p) for p in found]


def heaptrail_run(args, opts=(), out_name="x.ht", env=None, outdir=None,
                  timeout=RUN_TIMEOUT, cwd=None, wrap=()):
    """`heaptrail run -o OUT OPTS -- ARGS`, itself run under wrap (e.g.
    setarch -R, whose personality the traced program inherits)."""
    outdir = Path(outdir) if outdir else scratch_dir("run")
    out_path = outdir / out_name
    cmd = list(wrap) + [HT, "run", "-o", out_path] + list(opts) + ["--"] + list(args)
    proc = run(cmd, timeout, env=env, cwd=cwd)
    return Traced(proc, outdir, out_path, cwd)


class Report:
    def __init__(self, proc, data, err):
        self.proc, self.data, self.err = proc, data, err


def asan_env():
    """The environment for the ASan+UBSan CLI: leaks checked, stacks on
    UBSan reports, no abort (the output is scanned for reports)."""
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "abort_on_error=0:detect_leaks=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
    return env


def report(path, fmt="json", extra=()):
    """`heaptrail report --format FMT FILE` with the ASan CLI; parses JSON.
    err is None or why the output is unusable (sanitizer report, timeout,
    crash, invalid JSON)."""
    cmd = [report_cli(), "report", "--format", fmt] + list(extra) + [path]
    proc = run(cmd, REPORT_TIMEOUT, env=asan_env())
    data, err = None, None
    if proc.timed_out:
        err = "report timed out after %ss: %s" % (REPORT_TIMEOUT, proc.describe())
    elif SANITIZER_RE.search(text(proc.err)):
        err = "sanitizer error in %s: %s" % (proc.describe(), tail(proc.err, 1500))
    elif proc.rc >= 128:
        err = "report crashed: %s: %s" % (proc.describe(), tail(proc.err))
    elif fmt == "json":
        try:
            data = json.loads(text(proc.out))
        except ValueError as e:
            err = "report output is not JSON (%s): %s; stdout: %s; stderr: %s" % (
                e, proc.describe(), tail(proc.out, 300), tail(proc.err, 300))
    return Report(proc, data, err)


def find_library(soname):
    """The path of a shared library by its soname (ldconfig's cache), or None."""
    for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
        p = run([ldconfig, "-p"], 30)
        if p.rc == 0:
            for line in text(p.out).splitlines():
                name, _, path = line.strip().partition(" => ")
                # "(libc6,x86-64)": a 64-bit build, not the 32-bit "(libc6)"
                if name.split(" ")[0] == soname and "64)" in name and os.path.exists(path):
                    return path
            return None
    return None


def need_tools(t):
    t.need(HT.exists(), "%s is missing (heaptrail CLI not built)" % HT.relative_to(ROOT))
    t.need(AGENT.exists(), "%s is missing (agent not built)" % AGENT.relative_to(ROOT))


def need_report(t, path, fmt="json", extra=()):
    r = report(path, fmt, extra)
    if r.err:
        t.fatal(r.err)
    if fmt == "json" and r.proc.rc != 0:
        t.fatal("report exited %s on a complete trace: %s: %s" %
                (r.proc.rc, r.proc.describe(), tail(r.proc.err)))
    return r


def traced_report(key, args, opts=(), env=None, out_name="x.ht", timeout=RUN_TIMEOUT):
    """Memoised: run args under heaptrail, report the -o trace as JSON.
    Returns (Traced, Report-or-None, error-or-None)."""
    def go():
        tr = heaptrail_run(args, opts, out_name=out_name, env=env, timeout=timeout)
        if tr.proc.timed_out:
            return tr, None, "heaptrail run timed out after %ss: %s; stderr: %s" % (
                timeout, tr.proc.describe(), tail(tr.proc.err))
        if not tr.out_path.exists():
            return tr, None, "no trace at %s after %s; stderr: %s" % (
                tr.out_path, tr.proc.describe(), tail(tr.proc.err))
        rep = report(tr.out_path)
        if rep.err:
            return tr, rep, rep.err
        if rep.proc.rc != 0:
            return tr, rep, "report exited %s: %s: %s" % (
                rep.proc.rc, rep.proc.describe(), tail(rep.proc.err))
        return tr, rep, None
    return memo(("traced",) + tuple(key), go)


# ---- valgrind memcheck ----------------------------------------------------

VG_TOTAL_RE = re.compile(r"total heap usage: ([\d,]+) allocs, ([\d,]+) frees, "
                         r"([\d,]+) bytes allocated")
VG_INUSE_RE = re.compile(r"in use at exit: ([\d,]+) bytes in ([\d,]+) blocks")


def _num(s):
    return int(s.replace(",", ""))


class VgResult:
    """memcheck's figures for one process (one log file)."""

    def __init__(self, pid, log):
        self.pid = pid
        self.log = log
        m = VG_TOTAL_RE.search(log)
        self.allocs, self.frees, self.bytes = (
            (_num(m.group(1)), _num(m.group(2)), _num(m.group(3))) if m else (None,) * 3)
        m = VG_INUSE_RE.search(log)
        self.inuse_bytes, self.inuse_blocks = (
            (_num(m.group(1)), _num(m.group(2))) if m else (None, None))
        m = re.search(r"Command: (.*)", log)
        self.command = m.group(1).strip() if m else None

    def totals(self):
        return {"allocations": self.allocs, "frees": self.frees,
                "bytes_allocated": self.bytes, "leaked_blocks": self.inuse_blocks,
                "leaked_bytes": self.inuse_bytes}


def memcheck(key, args, env=None, children=False):
    """Memoised memcheck run. Returns (Proc, {pid: VgResult}); the Proc's
    first pid is the root process (valgrind's pid is the client's)."""
    def go():
        d = scratch_dir("vg")
        cmd = [VALGRIND] + VG_FLAGS + ["--log-file=%s/vg.%%p" % d]
        if children:
            cmd.append("--trace-children=yes")
        proc = run(cmd + list(args), VG_TIMEOUT, env=env)
        res = {}
        for f in d.iterdir():
            m = re.match(r"vg\.(\d+)$", f.name)
            if m:
                res[int(m.group(1))] = VgResult(int(m.group(1)), f.read_text(errors="replace"))
        return proc, res
    return memo(("memcheck",) + tuple(key), go)


def memcheck_single(t, key, args, env=None):
    """The single process's memcheck figures, or t.fatal."""
    proc, res = memcheck(key, args, env=env)
    if proc.timed_out:
        t.fatal("memcheck timed out: %s" % proc.describe())
    good = [r for r in res.values() if r.allocs is not None]
    if len(good) != 1:
        t.fatal("memcheck: expected 1 process summary, got %d: %s; stderr: %s" % (
            len(good), proc.describe(), tail(proc.err)))
    return good[0]


# ---- report helpers --------------------------------------------------------

def leaf(site):
    st = site.get("stack") or []
    return st[0].get("function") if st and isinstance(st[0], dict) else None


def functions(stack):
    return [f.get("function") for f in stack]


def by_leaf(rep):
    """{leaf function: summed counters over the sites with that leaf}."""
    agg = {}
    for s in rep.get("sites", []):
        a = agg.setdefault(leaf(s), {"allocations": 0, "bytes_allocated": 0,
                                     "leaked_blocks": 0, "leaked_bytes": 0,
                                     "temporary_allocations": 0, "peak_bytes": 0,
                                     "sites": 0})
        for k in ("allocations", "bytes_allocated", "leaked_blocks", "leaked_bytes",
                  "temporary_allocations", "peak_bytes"):
            v = s.get(k)
            a[k] += v if isinstance(v, int) else 0
        a["sites"] += 1
    return agg


def leaks_by_leaf(rep):
    agg = {}
    for lk in rep.get("leaks", []):
        st = lk.get("stack") or []
        fn = st[0].get("function") if st else None
        a = agg.setdefault(fn, {"blocks": 0, "bytes": 0})
        a["blocks"] += lk.get("blocks", 0)
        a["bytes"] += lk.get("bytes", 0)
    return agg


def marker_line(src, marker):
    """1-based line of the source line holding /* marker */."""
    for i, line in enumerate(Path(src).read_text().splitlines(), 1):
        if "/* %s */" % marker in line:
            return i
    raise KeyError("%s not in %s" % (marker, src))


def totals_subset(rep, keys):
    tot = rep.get("totals", {})
    return {k: tot.get(k) for k in keys}


def clients_dir(t):
    """The npm clients (tests/clients/install.sh: pprof-format, speedscope,
    the DevTools trace engine, playwright-core), installed once per suite
    (one `npm ci`, never two at once). A test that needs them fails, with
    the reason, when they cannot be installed: never a silent pass."""
    def go():
        if not shutil.which("npm") or not shutil.which("node"):
            return None, "node/npm not found (apt-get install nodejs npm)"
        p = run(["sh", ROOT / "tests" / "clients" / "install.sh"], 600)
        d = text(p.out).strip().splitlines()
        if p.rc != 0 or not d:
            return None, "tests/clients/install.sh failed (no network?): %s" % tail(p.err)
        return Path(d[-1]), None
    d, err = memo(("npm-clients",), go)
    if err:
        t.fatal("npm clients unavailable, cannot check: " + err)
    return d


def traced_program(t, name):
    """tests/programs/<name> run under heaptrail with its JSON report,
    memoised across the suite: (trace path, report data)."""
    need_tools(t)
    p = PROGS / name
    t.need(p.exists(), "%s not built (make programs)" % p)
    tr, rep, err = traced_report((name,), [p])
    if err:
        t.fatal(err)
    return tr.out_path, rep.data
