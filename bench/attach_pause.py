#!/usr/bin/python3
"""attach_pause.py - what heaptrail attach costs a running process.

Usage: bench/attach_pause.py [--runs N] [--objects N] [--window S]

1. Pause: a python3 process with N extra shared objects loaded (copies of
   build/tests/libdlplugin.so through ctypes; python3 itself maps ~10) is
   attached and detached, --runs times (a fresh process each time: the agent
   starts once per process). Prints the pause heaptrail attach measures (the
   one thread stopped, from its stop to its release), the agent's start and
   patching inside it, the slots patched, and the detach's time (the process
   is not stopped for it).
2. Overhead while attached: build/tests/attach_loop busy (4 threads on
   malloc, realloc and free, never sleeping) runs for --window seconds between two pauses, plain,
   attached, and under heaptrail run; its own counters give allocations per
   second in each mode.

Run from the repository root after `make all programs`.
"""

import argparse
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HT = ROOT / "build" / "heaptrail"
LOOP = ROOT / "build" / "tests" / "attach_loop"
PLUGIN = ROOT / "build" / "tests" / "libdlplugin.so"
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def readline(p, timeout=30):
    r, _, _ = select.select([p.stdout], [], [], timeout)
    if not r:
        raise SystemExit("no output from %d" % p.pid)
    return p.stdout.readline().decode().strip()


def attach(pid, out, extra=()):
    a = subprocess.Popen([str(HT), "attach", str(pid), "-o", str(out)] + list(extra),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while True:
        ln = a.stderr.readline().decode()
        if not ln:
            raise SystemExit("attach failed: " + a.stderr.read().decode())
        if "attached to process" in ln:
            return a, ln


def pause_runs(n_objects, runs, tmp):
    libs = []
    for i in range(n_objects):
        dst = tmp / ("libplug%03d.so" % i)
        shutil.copy(PLUGIN, dst)
        libs.append(str(dst))
    script = ("import ctypes, sys, time\n"
              "libs = [ctypes.CDLL(p) for p in sys.argv[1:]]\n"
              "print(len(open('/proc/self/maps').read().split('\\n')), flush=True)\n"
              "x = []\n"
              "while True:\n"
              "    x = [str(i) for i in range(1000)]\n"
              "    time.sleep(0.001)\n")
    rows = []
    for r in range(runs):
        p = subprocess.Popen([PY, "-c", script] + libs, stdout=subprocess.PIPE)
        readline(p)
        objs = len({ln.split()[-1] for ln in open("/proc/%d/maps" % p.pid)
                    if ".so" in ln.split()[-1]})
        time.sleep(0.3)
        out = tmp / ("p%d.ht" % r)
        a, line = attach(p.pid, out)
        m = re.search(r"paused ([\d.]+) ms \(agent start and (\d+) slots in (\d+) objects: "
                      r"([\d.]+) ms", line)
        time.sleep(0.5)
        d = subprocess.run([str(HT), "detach", str(p.pid)], capture_output=True, text=True)
        md = re.search(r"in ([\d.]+) ms \(slots restored in ([\d.]+) ms", d.stderr)
        a.communicate(timeout=30)
        p.kill()
        p.wait()
        rows.append((objs, float(m.group(1)), float(m.group(4)), int(m.group(2)),
                     int(m.group(3)), float(md.group(1)), float(md.group(2))))
    return rows


def loop_rate(mode, window, tmp):
    cmd = [str(LOOP), "busy"]
    if mode == "run":
        cmd = [str(HT), "run", "-o", str(tmp / "run.ht"), "--"] + cmd
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    readline(p)
    pid = p.pid
    if mode == "run":
        pid = int(subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True,
                                 text=True).stdout.split()[0])
    time.sleep(0.3)
    os.kill(pid, signal.SIGUSR1)
    a0 = dict(re.findall(r"(\w+)=(\d+)", readline(p)))
    att = None
    if mode == "attach":
        att, _ = attach(pid, tmp / "att.ht")
    os.kill(pid, signal.SIGUSR1)
    readline(p)
    t0 = time.monotonic()
    time.sleep(window)
    os.kill(pid, signal.SIGUSR1)
    b0 = dict(re.findall(r"(\w+)=(\d+)", readline(p)))
    secs = time.monotonic() - t0
    if att:
        subprocess.run([str(HT), "detach", str(pid)], capture_output=True)
        att.communicate(timeout=60)
    os.kill(pid, signal.SIGTERM)
    p.communicate(timeout=120)
    return (int(b0["allocs"]) - int(a0["allocs"])) / secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--objects", type=int, default=100)
    ap.add_argument("--window", type=float, default=3.0)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="attach_pause."))
    try:
        rows = pause_runs(args.objects, args.runs, tmp)
        print("| run | shared objects mapped | pause ms | of which agent start + patching ms "
              "| slots | objects patched | detach ms | slots restored ms |")
        print("|---|---|---|---|---|---|---|---|")
        for i, r in enumerate(rows):
            print("| %d | %d | %.1f | %.1f | %d | %d | %.1f | %.2f |" % ((i + 1,) + r))
        print("median pause %.1f ms, max %.1f ms" % (statistics.median(r[1] for r in rows),
                                                     max(r[1] for r in rows)))
        print()
        rates = {}
        for mode in ("plain", "attach", "run", "plain", "attach", "run"):
            rates.setdefault(mode, []).append(loop_rate(mode, args.window, tmp))
        print("| attach_loop, 4 threads | allocations/s (median of 2) | x plain |")
        print("|---|---|---|")
        base = statistics.median(rates["plain"])
        for mode in ("plain", "attach", "run"):
            v = statistics.median(rates[mode])
            print("| %s | %.0f | %.2f |" % (mode, v, base / v))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
