#!/usr/bin/python3
"""bench/exit_threads.py - how long a process takes to exit while its threads
allocate, plain and under the agent.

Runs build/tests/busy_threads N (N threads in a malloc/free loop, main
returns after half a second and prints when) plain and with LD_PRELOAD of
each agent given, modes alternated within each repetition. The exit's time
is from main's return to the process's end; the whole run's is shown too.
Prints the median and the range per mode. A run killed after --timeout
seconds counts as that long.

Usage: bench/exit_threads.py [-n REPS] [--agent PATH]... [--timeout S] [N...]
(default: build/libheaptrail.so, 3 repetitions, N = 8 32 128)
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROG = os.path.join(ROOT, "build", "tests", "busy_threads")


def one(n, agent, timeout):
    env = dict(os.environ)
    out = None
    if agent:
        out = tempfile.mkdtemp(prefix="exit_threads.")
        env["LD_PRELOAD"] = agent
        env["HEAPTRAIL_OPTIONS"] = "output=%s/t.ht" % out
    t0 = time.monotonic()
    p = subprocess.Popen([PROG, str(n)], stdout=subprocess.PIPE, env=env,
                         start_new_session=True)
    try:
        text, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.communicate()
        text = b""
    end = time.monotonic()
    if out:
        for f in os.listdir(out):
            os.unlink(os.path.join(out, f))
        os.rmdir(out)
    try:
        returned = int(text.split()[0]) / 1e9
    except (IndexError, ValueError):
        return end - t0, timeout  # killed: the exit never came
    return end - t0, end - returned


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("--agent", action="append")
    ap.add_argument("--timeout", type=float, default=200)
    ap.add_argument("threads", nargs="*", type=int, default=[8, 32, 128])
    a = ap.parse_args()
    agents = a.agent or [os.path.join(ROOT, "build", "libheaptrail.so")]
    modes = [("plain", None)] + [(os.path.basename(x) if len(agents) == 1 else x, x)
                                 for x in agents]
    print("| threads | mode | exit s (median) | exit s (range) | whole run s (median) |")
    print("|---:|---|---:|---:|---:|")
    for n in a.threads:
        got = {m: [] for m, _ in modes}
        for r in range(a.n):
            for k in range(len(modes)):
                m, agent = modes[(k + r) % len(modes)]
                got[m].append(one(n, agent, a.timeout))
        for m, _ in modes:
            ex = [e for _, e in got[m]]
            wh = [w for w, _ in got[m]]
            print("| %d | %s | %.2f | %.2f-%.2f | %.2f |" % (
                n, m, statistics.median(ex), min(ex), max(ex), statistics.median(wh)))


if __name__ == "__main__":
    main()
