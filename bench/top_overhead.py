#!/usr/bin/python3
"""top_overhead.py - does `heaptrail top` slow the program it watches?

Usage: bench/top_overhead.py [-n REPS] WORKLOAD [ARGS...]
  (from the top of the tree, after `make all build/bench/WORKLOAD`)

Runs `heaptrail run -o T WORKLOAD ARGS` REPS times alone and REPS times
with `heaptrail top --batch` following T from the moment it exists (one
frame a second: the view's reading and drawing, to /dev/null), alternated,
and prints the medians of the run's wall time and top's CPU time. top only
reads the file, so what it can cost the program is a share of the CPU and
of the disk's reads; on a machine with cores to spare, nothing.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HT = os.path.join(ROOT, "build", "heaptrail")


def one(cmd, watched, tmp):
    trace = os.path.join(tmp, "t.ht")
    if os.path.exists(trace):
        os.unlink(trace)
    t0 = time.monotonic()
    run = subprocess.Popen([HT, "run", "-o", trace] + cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    top, cpu = None, 0.0
    if watched:
        while not os.path.exists(trace) and run.poll() is None:
            time.sleep(0.001)
        top = subprocess.Popen([HT, "top", "--batch", "100000", trace], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    _, _, rr = os.wait4(run.pid, 0)
    wall = time.monotonic() - t0
    run_cpu = rr.ru_utime + rr.ru_stime
    if top:
        top.terminate()
        _, _, ru = os.wait4(top.pid, 0)
        cpu = ru.ru_utime + ru.ru_stime
    return wall, run_cpu, cpu, os.path.getsize(trace)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args()
    cmd = [os.path.join(ROOT, "build", "bench", a.cmd[0])] + a.cmd[1:]
    alone, watched, cpus, acpu, wcpu = [], [], [], [], []
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.n):
            w, rc, _, size = one(cmd, False, tmp)
            alone.append(w)
            acpu.append(rc)
            w, rc, c, _ = one(cmd, True, tmp)
            watched.append(w)
            wcpu.append(rc)
            cpus.append(c)
    med = statistics.median
    print("%s: trace %.1f MiB; load %.1f to %.1f" % (" ".join(a.cmd), size / 1048576, load0,
                                                     os.getloadavg()[0]))
    print("  wall s alone %s, median %.2f; with top %s, median %.2f (%+.1f%%)" % (
        " ".join("%.2f" % x for x in alone), med(alone), " ".join("%.2f" % x for x in watched),
        med(watched), 100 * (med(watched) / med(alone) - 1)))
    print("  CPU s of the run (program and heaptrail run) alone %s, median %.2f; with top %s, "
          "median %.2f (%+.1f%%)" % (
              " ".join("%.2f" % x for x in acpu), med(acpu), " ".join("%.2f" % x for x in wcpu),
              med(wcpu), 100 * (med(wcpu) / med(acpu) - 1)))
    print("  top's own CPU s: median %.2f" % med(cpus))


if __name__ == "__main__":
    sys.exit(main())
