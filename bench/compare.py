#!/usr/bin/python3
"""bench/compare.py - run each workload plain, under heaptrail and under heaptrack.

Usage: bench/compare.py [options] [WORKLOAD ...]      (bench/compare.sh is the same)

For every workload the three modes run in turn, N times, the order rotating
each repetition (plain/heaptrail/heaptrack, then heaptrail/heaptrack/plain,
...), so that slow drifts of the machine hit all three alike. Reported per
workload: median wall time plain, the medians under each profiler as a
multiple of plain (wall and CPU = user+sys of the whole process tree), trace
bytes, bytes per allocation, `heaptrail report` time, and peak RSS.

Peak RSS is ru_maxrss from wait4(): the largest resident set reached by any
single process of the run's tree (the target, the profiler's helpers). For
heaptrack the helper `heaptrack_interpret` is measured on its own too: the
script runs an unmodified copy of /usr/bin/heaptrack from a shadow prefix in
the temporary directory whose libexec/heaptrack_interpret wraps the real one
in /usr/bin/time (same libraries, same pipeline, one extra exec).

heaptrail is skipped (with a note) while build/heaptrail or
build/libheaptrail.so is missing; a workload or mode that fails, times out or
prints something else than plain is marked and the run goes on.

Options: see --help. Exit status 0 unless the script itself fails.
"""
import argparse
import atexit
import datetime
import json
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
BUILD = os.path.join(ROOT, "build")
BBUILD = os.path.join(BUILD, "bench")
CC1 = "/usr/lib/gcc/x86_64-linux-gnu/12/cc1"
BUILT_CLI = os.path.join(BUILD, "heaptrail")
BUILT_AGENT = os.path.join(BUILD, "libheaptrail.so")
# Set to the snapshot copies in the temporary directory (see snapshot_heaptrail).
HEAPTRAIL = BUILT_CLI
AGENT = BUILT_AGENT


class Workload:
    def __init__(self, name, cmd, desc, stdin=None, build=None, default=True, quick_args=None, env=None):
        self.name = name
        self.env = env or {}
        self.cmd = cmd
        self.desc = desc
        self.stdin = stdin
        self.build = build  # make target (relative to ROOT) or None
        self.default = default
        self.quick_args = quick_args or []


def quotient(a, b):
    """a/b to two places, or "-" when either is missing."""
    return "%.2f" % (a / b) if a is not None and b else "-"


def workloads():
    b = BBUILD
    return [
        Workload("churn", [f"{b}/churn"], "small malloc/free pairs, 3 sites 6-8 frames deep",
                 build="build/bench/churn", quick_args=["400000"]),
        Workload("deep", [f"{b}/deep"], "allocations 50-100 frames down a recursion",
                 build="build/bench/deep", quick_args=["40000"]),
        Workload("threads", [f"{b}/threads"], "4 threads churning malloc/free",
                 build="build/bench/threads", quick_args=["250000"]),
        Workload("mailbox", [f"{b}/mailbox"], "4 threads, every 16th block freed by another thread",
                 build="build/bench/mailbox", quick_args=["250000"]),
        Workload("mailbox16", [f"{b}/mailbox", "250000", "16"], "16 threads, mailbox's mix, as many blocks",
                 build="build/bench/mailbox", quick_args=["62500", "16"]),
        Workload("many_live", [f"{b}/many_live"], "5M blocks of 16-64 B held at once (memory per live block)",
                 build="build/bench/many_live", quick_args=["1000000"]),
        Workload("realloc", [f"{b}/realloc"], "realloc growth of 2048 buffers",
                 build="build/bench/realloc", quick_args=["300000"]),
        Workload("containers", [f"{b}/containers"], "C++ vector/map/unordered_map/string",
                 build="build/bench/containers", quick_args=["800"]),
        # PYTHONMALLOC=malloc: every object allocation is a malloc call, the way
        # Python is profiled with heaptrack or valgrind. With CPython's own
        # small-object allocator the script makes only ~18k malloc calls and
        # every profiler is near 1x plain (that variant: python-pymalloc).
        Workload("python", ["/usr/bin/python3", f"{BENCH}/alloc.py"],
                 "PYTHONMALLOC=malloc python3 bench/alloc.py", quick_args=["1"],
                 env={"PYTHONMALLOC": "malloc"}),
        Workload("sqlite", ["/usr/bin/sqlite3", ":memory:"], "sqlite3 :memory: < bench/sqlite.sql",
                 stdin=f"{BENCH}/sqlite.sql"),
        Workload("cc1", [CC1, "-quiet", "-imultiarch", "x86_64-linux-gnu", "-O2",
                         f"{b}/cc1_input.c", "-o", "/dev/null"],
                 "gcc 12 cc1 -O2 on a generated 1800-line C file", build="cc1_input"),
        # Not run by default: Debian's heaptrack 1.4 blows up on it (see README).
        Workload("deep-varsizes", [f"{b}/deep", "800000", "1"],
                 "deep with per-call block sizes (heaptrack 1.4 fails)",
                 build="build/bench/deep", default=False, quick_args=[]),
        Workload("python-pymalloc", ["/usr/bin/python3", f"{BENCH}/alloc.py"],
                 "python3 bench/alloc.py with CPython's pymalloc", default=False, quick_args=["1"]),
    ]


# ---------------------------------------------------------------- running

class Result:
    def __init__(self):
        self.wall = None
        self.cpu = None
        self.maxrss_kib = None
        self.status = None      # exit code, or -signal
        self.timed_out = False
        self.leftovers = False
        self.stdout = b""
        self.stderr = b""

    def ok(self, expect_status=0):
        return not self.timed_out and self.status == expect_status


def describe_status(r):
    if r.timed_out:
        return "timed out (killed)"
    if r.status is None:
        return "did not start"
    if r.status < 0:
        try:
            name = signal.Signals(-r.status).name
        except ValueError:
            name = "signal %d" % -r.status
        return "killed by %s" % name
    return "exit status %d" % r.status


TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run(cmd, env, stdin_path, timeout, tmp, as_limit=None):
    """Run cmd in its own process group: wall time, CPU time of the tree, and
    the peak RSS of the tree's largest process.

    The peak RSS comes from /usr/bin/time wrapped around cmd, not from our own
    wait4(): a child forked (or vforked) from this Python process carries our
    own high-water mark into its ru_maxrss at exec, time's does not."""
    r = Result()
    out_path = os.path.join(tmp, "stdout")
    err_path = os.path.join(tmp, "stderr")
    rss_path = os.path.join(tmp, "maxrss")
    if TIME:
        cmd = [TIME, "-q", "-f", "%M", "-o", rss_path] + cmd
    with open(out_path, "wb") as out, open(err_path, "wb") as err, \
            (open(stdin_path, "rb") if stdin_path else open(os.devnull, "rb")) as inp:
        saved = resource.getrlimit(resource.RLIMIT_AS)
        if as_limit:
            resource.setrlimit(resource.RLIMIT_AS, (min(as_limit, saved[1]) if saved[1] >= 0 else as_limit, saved[1]))
        try:
            t0 = time.perf_counter()
            try:
                p = subprocess.Popen(cmd, env=env, stdin=inp, stdout=out, stderr=err, cwd=ROOT,
                                     start_new_session=True)
            except OSError as e:
                r.stderr = str(e).encode()
                return r
        finally:
            if as_limit:
                resource.setrlimit(resource.RLIMIT_AS, saved)
        fired = threading.Event()

        def kill():
            fired.set()
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        except BaseException:
            # ^C: the program is in its own session and did not get it
            timer.cancel()
            kill()
            os.waitpid(p.pid, 0)
            raise
        t1 = time.perf_counter()
        timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        # Anything of ours still in the group (a daemonised helper)? End it.
        try:
            os.killpg(p.pid, 0)
            r.leftovers = True
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    r.wall = t1 - t0
    r.cpu = ru.ru_utime + ru.ru_stime
    r.maxrss_kib = None
    if TIME:
        try:
            with open(rss_path) as f:
                nums = re.findall(r"^\d+$", f.read(), re.M)
            r.maxrss_kib = int(nums[-1]) if nums else None
        except OSError:
            pass
    r.status = p.returncode
    r.timed_out = fired.is_set()
    with open(out_path, "rb") as f:
        r.stdout = f.read()
    with open(err_path, "rb") as f:
        r.stderr = f.read()
    return r


def dir_bytes(d):
    total = 0
    files = []
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isfile(p):
            total += os.path.getsize(p)
            files.append(p)
    return total, files


def make_heaptrack_shadow(tmp):
    """A prefix holding a copy of the heaptrack script whose interpreter is
    wrapped in /usr/bin/time, so that its peak RSS can be read back."""
    real = shutil.which("heaptrack")
    if not real:
        return None, None
    realbin = os.path.dirname(os.path.realpath(real))
    reallib = os.path.normpath(os.path.join(realbin, "..", "lib", "heaptrack"))
    interp = os.path.join(reallib, "libexec", "heaptrack_interpret")
    if not os.path.exists("/usr/bin/time") or not os.path.exists(interp):
        return real, None
    shadow = os.path.join(tmp, "heaptrack-prefix")
    os.makedirs(os.path.join(shadow, "bin"))
    os.makedirs(os.path.join(shadow, "lib", "heaptrack", "libexec"))
    script = os.path.join(shadow, "bin", "heaptrack")
    shutil.copy2(os.path.realpath(real), script)
    for name in ("libheaptrack_preload.so", "libheaptrack_inject.so"):
        os.symlink(os.path.join(reallib, name), os.path.join(shadow, "lib", "heaptrack", name))
    os.symlink(os.path.join(reallib, "libexec", "heaptrack_env"),
               os.path.join(shadow, "lib", "heaptrack", "libexec", "heaptrack_env"))
    wrapper = os.path.join(shadow, "lib", "heaptrack", "libexec", "heaptrack_interpret")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\n"
                'exec /usr/bin/time -q -f %%M -o "${HEAPTRAIL_BENCH_INTERP_RSS:-/dev/null}" %s "$@"\n'
                % interp)
    os.chmod(wrapper, 0o755)
    return script, wrapper


def min_or_none(xs):
    xs = [x for x in xs if x is not None]
    return min(xs) if xs else None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


# ---------------------------------------------------------------- formatting

def fmt_bytes(n):
    if n is None:
        return "-"
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return "%.1f %s" % (n / div, unit)
    return "%d B" % n


def fmt_mib(kib):
    return "-" if kib is None else "%.0f" % (kib / 1024.0) if kib >= 10240 else "%.1f" % (kib / 1024.0)


def fmt_ratio(x):
    if x is None:
        return "-"
    return "%.1f×" % x if x < 100 else "%.0f×" % x


def fmt_ratio_fine(x):
    """A ratio near 1 (the sampled mode's): to the percent."""
    return "-" if x is None else "%.3f×" % x


def fmt_s(x):
    return "-" if x is None else "%.2f" % x


def table(headers, rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


def md_table(headers, rows):
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join("---" if i in (0, len(headers) - 1) else "---:" for i in range(len(headers))) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


# ---------------------------------------------------------------- main

def machine_line():
    model = "?"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "%s, %d cores, Linux %s" % (model, os.cpu_count() or 0, platform.release())


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def build(wls, notes, quiet):
    """Build what the workloads need; return the set of workloads that failed to build."""
    failed = set()
    for w in wls:
        if not w.build:
            continue
        if w.build == "cc1_input":
            gen = os.path.join(BENCH, "gen_cc1_input.py")
            dst = os.path.join(BBUILD, "cc1_input.c")
            if not os.path.exists(dst) or os.path.getmtime(dst) < os.path.getmtime(gen):
                os.makedirs(BBUILD, exist_ok=True)
                tmp = dst + ".tmp"
                with open(tmp, "w") as f:
                    rc = subprocess.run(["/usr/bin/python3", gen], stdout=f).returncode
                if rc:
                    failed.add(w.name)
                    notes.append("%s: generating cc1_input.c failed" % w.name)
                    continue
                os.replace(tmp, dst)
            continue
        p = subprocess.run(["make", "-s", "-C", ROOT, w.build], capture_output=True, text=True)
        if p.returncode:
            failed.add(w.name)
            notes.append("%s: `make %s` failed: %s" % (w.name, w.build, (p.stderr or p.stdout).strip()[-300:]))
    return failed


def variant(mode, args):
    """How a heaptrail mode runs the program: 'run' (the CLI) or 'preload'."""
    if mode == "heaptrail-sampled":
        return "run"
    if mode == "heaptrail-preload" or args.heaptrail_mode == "preload":
        return "preload"
    return "run"


def heaptrail_missing():
    return [p for p in (BUILT_CLI, BUILT_AGENT) if not os.path.exists(p)]


def snapshot_heaptrail(tmp):
    """Copy the CLI and the agent side by side (the CLI finds the agent next to
    itself), so that a rebuild by someone else during the run cannot mix two
    versions or catch a half-written file. Returns a description of the build."""
    global HEAPTRAIL, AGENT
    import hashlib
    d = os.path.join(tmp, "heaptrail-snapshot")
    os.makedirs(d)
    desc = []
    for src in (BUILT_CLI, BUILT_AGENT):
        dst = os.path.join(d, os.path.basename(src))
        shutil.copy2(src, dst)
        with open(dst, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:12]
        desc.append("%s %s (built %s)" % (os.path.relpath(src, ROOT), digest,
                                          time.strftime("%H:%M:%S", time.localtime(os.path.getmtime(dst)))))
    HEAPTRAIL = os.path.join(d, "heaptrail")
    AGENT = os.path.join(d, "libheaptrail.so")
    return "; ".join(desc)


def main():
    ap = argparse.ArgumentParser(description="Compare plain, heaptrail and heaptrack on bench workloads.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Workloads: " + ", ".join(
                                     w.name + ("" if w.default else " (opt-in)") for w in workloads()))
    ap.add_argument("workloads", nargs="*", help="workloads to run (default: all but opt-in ones)")
    ap.add_argument("-n", "--reps", type=int, default=3, help="repetitions per mode (default 3)")
    ap.add_argument("--heaptrail-mode", choices=("run", "preload", "both"), default="run",
                    help="`heaptrail run -o ...` (default), LD_PRELOAD + HEAPTRAIL_OPTIONS, or both "
                         "(the preload runs as a fourth mode, 'heaptrail-preload': the agent alone, "
                         "without the CLI's closing summary)")
    ap.add_argument("--no-heaptrail", action="store_true", help="skip heaptrail")
    ap.add_argument("--sample-rate", type=int, default=524288,
                    help="also run `heaptrail run --sample-rate N` as a mode, 'heaptrail-sampled' "
                         "(default 524288, 512 KiB; 0: not)")
    ap.add_argument("--sampled-only", action="store_true",
                    help="of heaptrail's modes run only heaptrail-sampled (quicker, for its ratio to plain)")
    ap.add_argument("--no-heaptrack", action="store_true", help="skip heaptrack")
    ap.add_argument("--heaptrail-options", default="",
                    help="extra HEAPTRAIL_OPTIONS, e.g. unwind=fp (preload mode: appended to output=)")
    ap.add_argument("--no-heaptrack-print", dest="heaptrack_print", action="store_false",
                    help="do not time heaptrack_print on heaptrack's last trace (timed by default, against "
                         "`heaptrail report` on heaptrail's last trace of the same workload)")
    ap.add_argument("--heaptrack-print", action="store_true", default=True, help=argparse.SUPPRESS)
    ap.add_argument("--no-json-report", action="store_true",
                    help="do not time `heaptrail report --format json` (it also gets the allocation "
                         "count when `heaptrail run` did not print it, in preload mode)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per run before it is killed (default 120)")
    ap.add_argument("--heaptrack-as-limit", type=float, default=4.0,
                    help="address-space limit in GiB for heaptrack runs (default 4; 0: none). heaptrack 1.4's "
                         "interpreter can grow without bound (deep-varsizes)")
    ap.add_argument("--quick", action="store_true", help="small iteration counts, for trying the script")
    ap.add_argument("--markdown", metavar="FILE", help="also write the markdown table to FILE")
    ap.add_argument("--json", metavar="FILE", help="write all measurements as JSON to FILE")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (traces, outputs)")
    ap.add_argument("--tmpdir", help="where to make the temporary directory (default $TMPDIR or /tmp)")
    ap.add_argument("--list", action="store_true", help="list workloads and exit")
    ap.add_argument("--stat", choices=("median", "min"), default="median",
                    help="time of a mode: the median repetition (default) or the fastest one")
    args = ap.parse_args()

    all_w = workloads()
    if args.list:
        for w in all_w:
            print("%-14s %s%s" % (w.name, w.desc, "" if w.default else "  [opt-in]"))
        return 0
    if args.workloads:
        by_name = {w.name: w for w in all_w}
        bad = [n for n in args.workloads if n not in by_name]
        if bad:
            ap.error("unknown workload(s): %s (try --list)" % ", ".join(bad))
        wls = [by_name[n] for n in args.workloads]
    else:
        wls = [w for w in all_w if w.default]
    if args.reps < 1:
        ap.error("--reps must be >= 1")

    notes = []
    build_desc = None
    started = time.time()
    date = subprocess.run(["date"], capture_output=True, text=True).stdout.strip()
    load_start = loadavg()
    tmp = tempfile.mkdtemp(prefix="heaptrail-bench.", dir=args.tmpdir)
    if not args.keep:
        atexit.register(shutil.rmtree, tmp, ignore_errors=True)

    modes = ["plain"]
    if args.no_heaptrail:
        notes.append("heaptrail: skipped (--no-heaptrail)")
    else:
        missing = heaptrail_missing()
        if missing:
            notes.append("heaptrail: not built yet (%s missing): skipped" %
                         ", ".join(os.path.relpath(p, ROOT) for p in missing))
        else:
            if not args.sampled_only:
                modes.append("heaptrail")
                if args.heaptrail_mode == "both":
                    modes.append("heaptrail-preload")
            if args.sample_rate:
                modes.append("heaptrail-sampled")
            build_desc = snapshot_heaptrail(tmp)
    ht_script = ht_wrapper = None
    if args.no_heaptrack:
        notes.append("heaptrack: skipped (--no-heaptrack)")
    else:
        ht_script, ht_wrapper = make_heaptrack_shadow(tmp)
        if not ht_script:
            notes.append("heaptrack: not installed: skipped")
        else:
            modes.append("heaptrack")
            if not ht_wrapper:
                notes.append("heaptrack: /usr/bin/time or heaptrack_interpret not found: interpreter RSS not measured")

    failed_build = build(wls, notes, quiet=True)

    base_env = {k: v for k, v in os.environ.items()
                if k not in ("LD_PRELOAD", "HEAPTRAIL_OPTIONS", "DUMP_HEAPTRACK_OUTPUT")}
    base_env["PYTHONHASHSEED"] = "0"
    base_env["LC_ALL"] = "C"
    as_limit = int(args.heaptrack_as_limit * (1 << 30)) if args.heaptrack_as_limit > 0 else None

    print("heaptrail bench: %s; %s; load %s; %d rep(s); modes: %s%s" % (
        machine_line(), date, load_start, args.reps, ", ".join(modes),
        " (heaptrail via %s)" % args.heaptrail_mode if "heaptrail" in modes else ""), file=sys.stderr)

    results = {}
    for w in wls:
        res = {"workload": w.name, "desc": w.desc, "runs": {m: [] for m in modes}, "failed": {}, "notes": []}
        results[w.name] = res
        if w.name in failed_build:
            res["failed"]["plain"] = "build failed"
            continue
        cmd = w.cmd + (w.quick_args if args.quick else [])
        wdir = os.path.join(tmp, w.name)
        os.makedirs(wdir)
        plain_out = None
        last_trail_dir = last_track_dir = None
        for rep in range(args.reps):
            order = modes[rep % len(modes):] + modes[:rep % len(modes)]
            for mode in order:
                if mode in res["failed"] or "plain" in res["failed"]:
                    continue
                rdir = os.path.join(wdir, "%s.%d" % (mode, rep))
                os.makedirs(rdir)
                env = dict(base_env)
                env.update(w.env)
                as_lim = None
                interp_rss_file = None
                if mode == "plain":
                    argv = cmd
                elif mode.startswith("heaptrail"):
                    tdir = os.path.join(rdir, "trace")
                    os.makedirs(tdir)
                    if variant(mode, args) == "run":
                        argv = [HEAPTRAIL, "run", "-o", os.path.join(tdir, "x.ht")] + (
                            ["--sample-rate", str(args.sample_rate)] if mode == "heaptrail-sampled" else []
                        ) + ["--"] + cmd
                        env["HEAPTRAIL_AGENT"] = AGENT
                        if args.heaptrail_options:
                            env["HEAPTRAIL_OPTIONS"] = args.heaptrail_options
                    else:
                        # through env(1), so that only the program (not the
                        # /usr/bin/time wrapper of run()) gets the agent
                        preload_vars = ["LD_PRELOAD=" + AGENT,
                                        "HEAPTRAIL_OPTIONS=output=%s" % os.path.join(tdir, "x.%p.ht") +
                                        ("," + args.heaptrail_options if args.heaptrail_options else "")]
                        argv = ["/usr/bin/env"] + preload_vars + cmd
                else:
                    tdir = os.path.join(rdir, "trace")
                    os.makedirs(tdir)
                    argv = [ht_script, "-o", os.path.join(tdir, "y")] + cmd
                    as_lim = as_limit
                    if ht_wrapper:
                        interp_rss_file = os.path.join(rdir, "interp_rss")
                        env["HEAPTRAIL_BENCH_INTERP_RSS"] = interp_rss_file
                print("  %-12s %-9s rep %d ..." % (w.name, mode, rep + 1), end="", file=sys.stderr, flush=True)
                r = run(argv, env, w.stdin, args.timeout, rdir, as_lim)
                rec = {"wall": r.wall, "cpu": r.cpu, "maxrss_kib": r.maxrss_kib, "status": r.status,
                       "timed_out": r.timed_out}
                print(" %s s%s" % (fmt_s(r.wall), "" if r.ok() else "  " + describe_status(r)),
                      file=sys.stderr, flush=True)
                if r.leftovers and not r.timed_out:
                    res["notes"].append("%s rep %d: processes left in the group after exit (killed)" % (mode, rep + 1))
                if mode == "plain":
                    if not r.ok():
                        res["failed"]["plain"] = describe_status(r)
                        res["notes"].append("plain run failed: `%s`: %s; stderr: %s" % (
                            shlex.join(cmd), describe_status(r), r.stderr.decode(errors="replace").strip()[-300:]))
                        continue
                    if plain_out is None:
                        plain_out = r.stdout
                    elif r.stdout != plain_out:
                        res["notes"].append("plain stdout differs between repetitions (not deterministic)")
                else:
                    tbytes, tfiles = dir_bytes(tdir)
                    rec["trace_bytes"] = tbytes
                    rec["trace_files"] = [os.path.basename(p) for p in tfiles]
                    problem = None
                    if not r.ok():
                        problem = describe_status(r)
                    elif not tfiles or tbytes == 0:
                        problem = "no trace written"
                    if mode.startswith("heaptrail") and not problem and plain_out is not None \
                            and r.stdout != plain_out:
                        problem = "stdout differs from the plain run"
                    if mode == "heaptrack" and not problem and plain_out and plain_out not in r.stdout:
                        problem = "program output missing from heaptrack's stdout"
                    if mode == "heaptrack":
                        m = re.search(rb"allocations:\s+(\d+)", r.stderr)
                        rec["allocations"] = int(m.group(1)) if m else None
                        if interp_rss_file and os.path.exists(interp_rss_file):
                            with open(interp_rss_file) as f:
                                nums = re.findall(r"^\d+$", f.read(), re.M)
                            rec["interp_rss_kib"] = int(nums[-1]) if nums else None
                    if problem:
                        res["failed"][mode] = problem
                        shown = shlex.join(argv)
                        res["notes"].append("%s FAILED on rep %d: `%s%s`: %s; trace %s; stderr tail: %s" % (
                            mode, rep + 1, shown, " < " + os.path.relpath(w.stdin, ROOT) if w.stdin else "",
                            problem, fmt_bytes(tbytes),
                            r.stderr.decode(errors="replace").strip()[-400:].replace("\n", " | ")))
                    if mode == "heaptrail" and not problem:
                        # `heaptrail run` prints "N allocations, N frees" (all traces of the run)
                        found = re.findall(rb"([\d,]+) allocations, ([\d,]+) frees", r.stderr)
                        if found and variant(mode, args) == "run":
                            res["_allocs_from_run"] = (sum(int(a.replace(b",", b"")) for a, _ in found),
                                                       sum(int(f.replace(b",", b"")) for _, f in found))
                    if mode == "heaptrail":
                        if last_trail_dir and not args.keep:
                            shutil.rmtree(last_trail_dir, ignore_errors=True)
                        last_trail_dir = tdir
                    elif mode == "heaptrack":
                        if last_track_dir and not args.keep:
                            shutil.rmtree(last_track_dir, ignore_errors=True)
                        last_track_dir = tdir
                    elif not args.keep:
                        shutil.rmtree(tdir, ignore_errors=True)
                res["runs"][mode].append(rec)

        # heaptrail report on the last good trace: timed text report, then JSON
        if "heaptrail" in modes and "heaptrail" not in res["failed"] and last_trail_dir:
            _, tfiles = dir_bytes(last_trail_dir)
            rep_time = 0.0
            rep_rss = 0
            json_time = 0.0
            json_rss = 0
            rep_cpu = None
            allocs = frees = None
            allocs_from_run = res.pop("_allocs_from_run", None)
            for tf in tfiles:
                rr = run([HEAPTRAIL, "report", tf], base_env, None, args.timeout, wdir)
                print("  %-12s report    %s s%s" % (w.name, fmt_s(rr.wall), "" if rr.ok() else "  " + describe_status(rr)),
                      file=sys.stderr, flush=True)
                if not rr.ok():
                    res["failed"]["report"] = describe_status(rr)
                    res["notes"].append("`heaptrail report %s` failed: %s; stderr tail: %s" % (
                        tf, describe_status(rr), rr.stderr.decode(errors="replace").strip()[-300:].replace("\n", " | ")))
                    rep_time = None
                    break
                rep_time += rr.wall
                rep_cpu = (rep_cpu or 0.0) + (rr.cpu or 0.0)
                rep_rss = max(rep_rss, rr.maxrss_kib)
                if not args.no_json_report:
                    rj = run([HEAPTRAIL, "report", "--format", "json", tf], base_env, None, args.timeout, wdir)
                    print("  %-12s report    %s s (JSON)%s" % (w.name, fmt_s(rj.wall),
                                                             "" if rj.ok() else "  " + describe_status(rj)),
                          file=sys.stderr, flush=True)
                    if json_time is not None and rj.ok():
                        json_time += rj.wall
                        json_rss = max(json_rss, rj.maxrss_kib)
                    else:
                        json_time = None
                    try:
                        doc = json.loads(rj.stdout)
                        t = doc["totals"]
                        allocs = (allocs or 0) + int(t["allocations"])
                        frees = (frees or 0) + int(t["frees"])
                    except (ValueError, KeyError, TypeError) as e:
                        res["notes"].append("`heaptrail report --format json %s`: %s, output not usable (%s)" % (
                            tf, describe_status(rj), e))
            if allocs_from_run is not None:
                allocs, frees = allocs_from_run
            res["report_s"] = rep_time
            res["report_cpu_s"] = rep_cpu if rep_time is not None else None
            res["report_rss_kib"] = rep_rss if rep_time is not None else None
            if not args.no_json_report:
                res["report_json_s"] = json_time
                res["report_json_rss_kib"] = json_rss if json_time is not None else None
            res["heaptrail_allocations"] = allocs
            res["heaptrail_frees"] = frees
        if args.heaptrack_print and "heaptrack" in modes and "heaptrack" not in res["failed"] and last_track_dir:
            _, tfiles = dir_bytes(last_track_dir)
            if tfiles:
                rr = run(["heaptrack_print", tfiles[0]], base_env, None, args.timeout * 5, wdir)
                print("  %-12s heaptrack_print %s s%s" % (w.name, fmt_s(rr.wall),
                                                        "" if rr.ok() else "  " + describe_status(rr)),
                      file=sys.stderr, flush=True)
                res["heaptrack_print_s"] = rr.wall if rr.ok() else None
                res["heaptrack_print_cpu_s"] = rr.cpu if rr.ok() else None
                res["heaptrack_print_rss_kib"] = rr.maxrss_kib if rr.ok() else None
        if not args.keep:
            shutil.rmtree(wdir, ignore_errors=True)

    load_end = loadavg()
    try:
        if float(load_start.split()[0]) > 1.0:
            notes.append("load average %s at the start on %d cores: other work is running, timings are noisy "
                         "(CPU ratios suffer less)" % (load_start.split()[0], os.cpu_count() or 0))
    except ValueError:
        pass
    elapsed = time.time() - started

    # ------------------------------------------------------------ summarise
    # (id, terminal header, markdown header)
    both = "heaptrail-preload" in modes
    columns = [("workload", "workload", "workload"), ("plain", "plain s", "plain s"),
               ("trail", "trail×", "heaptrail ×plain")]
    if both:
        columns.append(("agent", "agent×", "heaptrail preload ×plain"))
    sampled = "heaptrail-sampled" in modes
    if sampled:
        columns.append(("sampled", "sampled×", "heaptrail sampled ×plain"))
    columns += [("track", "track×", "heaptrack ×plain"),
                ("trail_cpu", "trail CPU×", "heaptrail CPU ×plain")]
    if both:
        columns.append(("agent_cpu", "agent CPU×", "heaptrail preload CPU ×plain"))
    if sampled:
        columns.append(("sampled_cpu", "sampled CPU×", "heaptrail sampled CPU ×plain"))
        columns.append(("sampled_trace", "sampled trace", "heaptrail sampled trace"))
    columns += [("trail_nsev", "trail ns/ev", "heaptrail CPU ns/event beyond plain"),
                ("track_cpu", "track CPU×", "heaptrack CPU ×plain"),
                ("trail_trace", "trail trace", "heaptrail trace"), ("track_trace", "track trace", "heaptrack trace"),
                ("tt", "trail/track", "trace heaptrail/heaptrack"),
                ("trail_bpa", "trail B/al", "heaptrail B/alloc"), ("track_bpa", "track B/al", "heaptrack B/alloc"),
                ("report", "report s", "heaptrail report s")]
    if not args.no_json_report:
        columns.append(("report_json", "JSON s", "heaptrail report JSON s"))
    if args.heaptrack_print:
        columns.append(("print", "print s", "heaptrack_print s"))
        columns.append(("rp", "rep/print", "report ×print (target ≤ 0.5)"))
        columns.append(("rp_cpu", "CPU rep/print", "report CPU ×print CPU"))
        if not args.no_json_report:
            columns.append(("jp", "JSON/print", "JSON report ×print"))
    columns += [("rss_plain", "RSS plain", "RSS MiB plain"),
                ("rss_trail", "RSS trail", "RSS MiB heaptrail" +
                 (" run" if variant("heaptrail", args) == "run" else " (program)"))]
    if both:
        columns.append(("rss_agent", "RSS agent", "RSS MiB heaptrail preload (program)"))
    columns += [("rss_track", "RSS track", "RSS MiB heaptrack (tree)"),
                ("rss_interp", "RSS interp", "RSS MiB heaptrack_interpret"),
                ("rss_report", "RSS report", "RSS MiB heaptrail report")]
    if args.heaptrack_print:
        columns += [("rss_print", "RSS print", "RSS MiB heaptrack_print"),
                    ("rss_rp", "RSS rep/print", "report RSS ×print (target ≤ 1)")]
    columns.append(("target", "target", "target"))
    headers = [c[2] for c in columns]
    rows = []
    summary = {}
    counts = []
    for w in wls:
        res = results[w.name]
        f = res["failed"]
        runs = res["runs"]
        # times: the median, or with --stat min the fastest repetition (the
        # least disturbed by other work: the estimate of a run's own cost
        # that noisy machines favour; memory and sizes stay medians)
        tstat = min_or_none if args.stat == "min" else median
        pw = tstat(r["wall"] for r in runs.get("plain", []))
        pc = tstat(r["cpu"] for r in runs.get("plain", []))
        s = {"plain_s": pw, "plain_cpu_s": pc,
             "plain_rss_kib": median(r["maxrss_kib"] for r in runs.get("plain", []))}
        for m in ("heaptrail", "heaptrail-preload", "heaptrail-sampled", "heaptrack"):
            rs = runs.get(m, [])
            if m not in modes:
                s[m] = "skipped"
                continue
            if m in f or "plain" in f or not rs:
                s[m] = "FAILED: " + f.get(m, "plain failed") if m in f else "-"
                continue
            s[m] = {
                "wall_s": tstat(r["wall"] for r in rs),
                "ratio": tstat(r["wall"] for r in rs) / pw if pw else None,
                "cpu_ratio": tstat(r["cpu"] for r in rs) / pc if pc else None,
                "cpu_s": tstat(r["cpu"] for r in rs),
                "trace_bytes": median(r["trace_bytes"] for r in rs),
                "rss_kib": median(r["maxrss_kib"] for r in rs),
            }
            if m == "heaptrack":
                s[m]["interp_rss_kib"] = median(r.get("interp_rss_kib") for r in rs)
                s[m]["allocations"] = median(r.get("allocations") for r in rs)
        summary[w.name] = s
        # Say when repetitions disagree: on a busy machine the short plain
        # runs suffer most and every ratio shrinks.
        spreads = []
        for m in modes:
            walls = [r["wall"] for r in runs.get(m, []) if r.get("wall") is not None and not r.get("timed_out")]
            if len(walls) >= 2 and min(walls) > 0 and max(walls) / min(walls) > 1.25:
                spreads.append("%s %s-%s s" % (m, fmt_s(min(walls)), fmt_s(max(walls))))
        if spreads:
            notes.append("%s: repetitions differ by more than 25%% (%s): machine busy? ratios uncertain"
                         % (w.name, ", ".join(spreads)))

        def cell(m, key, fmt):
            v = s.get(m)
            if isinstance(v, str):
                return "n/a" if v == "skipped" else ("FAIL" if v.startswith("FAILED") else v)
            return fmt(v.get(key))

        tr = s.get("heaptrail") if isinstance(s.get("heaptrail"), dict) else None
        tk = s.get("heaptrack") if isinstance(s.get("heaptrack"), dict) else None
        ratio_tt = ("%.2f" % (tr["trace_bytes"] / tk["trace_bytes"])) if tr and tk and tk["trace_bytes"] else "-"
        ta = res.get("heaptrail_allocations")
        bpa_trail = ("%.2f" % (tr["trace_bytes"] / ta)) if tr and ta else "-"
        bpa_track = ("%.2f" % (tk["trace_bytes"] / tk["allocations"])) if tk and tk.get("allocations") else "-"
        # CPU the profiler adds per recorded event (allocations + frees)
        tf = res.get("heaptrail_frees")
        nsev = ("%.0f" % ((tr["cpu_s"] - pc) * 1e9 / (ta + tf))) if tr and ta and tf is not None and pc \
            and tr.get("cpu_s") is not None else "-"
        s["heaptrail_ns_per_event"] = float(nsev) if nsev != "-" else None
        target = "-"
        if tr and tk:
            misses = []
            if tr["ratio"] > tk["ratio"] / 2:
                misses.append("time > ½ heaptrack")
            if w.name == "threads" and tr["ratio"] > 3.0:
                misses.append("> 3× plain")
            if tr["trace_bytes"] > tk["trace_bytes"]:
                misses.append("trace > heaptrack")
            hp, hr = res.get("heaptrack_print_s"), res.get("report_s")
            if hp and hr and hr > hp / 2:
                misses.append("report > ½ heaptrack_print")
            hm, rm = res.get("heaptrack_print_rss_kib"), max(res.get("report_rss_kib") or 0,
                                                             res.get("report_json_rss_kib") or 0)
            if hm and rm > hm:
                misses.append("report RSS > heaptrack_print")
            target = "met" if not misses else "MISSED: " + ", ".join(misses)
        elif "heaptrail" in f:
            target = "MISSED: heaptrail failed"
        v = {"workload": w.name, "plain": fmt_s(pw) + ("~" if any(x.startswith("plain ") for x in spreads) else ""),
             "trail": cell("heaptrail", "ratio", fmt_ratio), "agent": cell("heaptrail-preload", "ratio", fmt_ratio),
             "track": cell("heaptrack", "ratio", fmt_ratio),
             "trail_cpu": cell("heaptrail", "cpu_ratio", fmt_ratio),
             "agent_cpu": cell("heaptrail-preload", "cpu_ratio", fmt_ratio),
             "sampled": cell("heaptrail-sampled", "ratio", fmt_ratio_fine),
             "sampled_cpu": cell("heaptrail-sampled", "cpu_ratio", fmt_ratio_fine),
             "sampled_trace": cell("heaptrail-sampled", "trace_bytes", fmt_bytes),
             "track_cpu": cell("heaptrack", "cpu_ratio", fmt_ratio),
             "trail_nsev": nsev,
             "trail_trace": cell("heaptrail", "trace_bytes", fmt_bytes),
             "track_trace": cell("heaptrack", "trace_bytes", fmt_bytes),
             "tt": ratio_tt, "trail_bpa": bpa_trail, "track_bpa": bpa_track,
             "report": ("FAIL" if "report" in f else fmt_s(res.get("report_s"))) if tr else "-",
             "print": fmt_s(res.get("heaptrack_print_s")),
             "report_json": fmt_s(res.get("report_json_s")) if tr else "-",
             "rp": quotient(res.get("report_s"), res.get("heaptrack_print_s")) if tr else "-",
             "rp_cpu": quotient(res.get("report_cpu_s"), res.get("heaptrack_print_cpu_s")) if tr else "-",
             "jp": quotient(res.get("report_json_s"), res.get("heaptrack_print_s")) if tr else "-",
             "rss_print": fmt_mib(res.get("heaptrack_print_rss_kib")),
             "rss_rp": quotient(max(res.get("report_rss_kib") or 0, res.get("report_json_rss_kib") or 0) or None,
                                res.get("heaptrack_print_rss_kib")) if tr else "-",
             "rss_plain": fmt_mib(s["plain_rss_kib"]),
             "rss_trail": cell("heaptrail", "rss_kib", fmt_mib),
             "rss_agent": cell("heaptrail-preload", "rss_kib", fmt_mib),
             "rss_track": cell("heaptrack", "rss_kib", fmt_mib),
             "rss_interp": cell("heaptrack", "interp_rss_kib", fmt_mib),
             "rss_report": fmt_mib(res.get("report_rss_kib")) if tr else "-",
             "target": target}
        if "plain" in f:
            v = {"workload": w.name, "plain": "FAIL (%s)" % f["plain"]}
        row = [v.get(c[0], "-") for c in columns]
        rows.append(row)
        for n in res["notes"]:
            notes.append("%s: %s" % (w.name, n))
        if ta is not None or (tk and tk.get("allocations") is not None):
            counts.append("%s %s / %s" % (w.name, "-" if ta is None else ta,
                                          "-" if not tk or tk.get("allocations") is None else int(tk["allocations"])))

    if counts:
        notes.append("allocation calls counted (heaptrail / heaptrack; heaptrack adds libstdc++'s start-up "
                     "pool to every program): " + ", ".join(counts))
    header = ("Machine: %s. Date: %s. Load average (1/5/15 min) at start %s, at end %s. "
              "%d repetition(s) per mode, %s, modes alternated. heaptrail via %s. "
              "Whole run %.0f s.%s") % (
        machine_line(), date, load_start, load_end, args.reps,
        "fastest repetition (--stat min)" if args.stat == "min" else "median",
        {"run": "`heaptrail run -o`", "preload": "LD_PRELOAD + HEAPTRAIL_OPTIONS",
         "both": "`heaptrail run -o` and (heaptrail preload) LD_PRELOAD + HEAPTRAIL_OPTIONS"}[args.heaptrail_mode],
        elapsed, " QUICK mode (small iteration counts)." if args.quick else "")
    if build_desc:
        header += " heaptrail build: %s." % build_desc
    print()
    print(header)
    print()
    print(table([c[1] for c in columns], rows))
    if notes:
        print()
        print("Notes:")
        for n in notes:
            print("  - " + n)
    md = [header, "", md_table(headers, rows)]
    if notes:
        md += [""] + ["- " + n for n in notes]
    md_text = "\n".join(md) + "\n"
    print()
    print("Markdown (for bench/RESULTS.md):")
    print()
    print(md_text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md_text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_line(), "date": date, "load_start": load_start, "load_end": load_end,
                       "reps": args.reps, "modes": modes, "heaptrail_mode": args.heaptrail_mode,
                       "quick": args.quick, "elapsed_s": elapsed, "summary": summary,
                       "results": results, "notes": notes}, f, indent=1, default=str)
    if args.keep:
        print("kept: %s" % tmp, file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        sys.exit(130)
