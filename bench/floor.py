#!/usr/bin/python3
"""bench/floor.py - what the least an interposer can do costs, next to heaptrail.

Runs each workload plain and with LD_PRELOAD of three floor libraries
(bench/floor/*.c), and of heaptrail's agent sampled and exact:

  forward     every malloc call forwarded to glibc: interposition alone
  countdown   exact counts + a countdown to the next sample + a filter test
              on free: the least a sampler that counts exactly can do
  stamp       a time stamp (RDTSCP) per event, nothing stored: the stamp alone
  record      a time stamp and the event's fields stored per call, no stack,
              no output: the least a recorder of every event can do
  sampled     heaptrail, sample_rate=524288 (the agent alone, no CLI)
  heaptrail   heaptrail recording every event (the agent alone; --no-exact drops it)

Modes alternate within each repetition, in a rotating order. Figures are
medians over repetitions of each mode's ratio to the plain run of the same
repetition (paired, so that the machine's drift cancels), for CPU time
(user + system of the process tree) and wall time, with the interquartile
range of the CPU ratios. Usage: bench/floor.py [-n REPS] [--markdown FILE]
[workloads...] (the names of bench/compare.py --list).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the workloads, their build and the runner)

FLOOR = os.path.join(compare.BBUILD, "floor")
FLOORS = ("forward", "countdown", "stamp", "record")


def quartiles(xs):
    xs = sorted(xs)
    if len(xs) < 4:
        return xs[0], xs[-1]
    q = statistics.quantiles(xs, n=4)
    return q[0], q[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workloads", nargs="*", help="workloads (default: the default ones of compare.py)")
    ap.add_argument("-n", "--reps", type=int, default=9, help="repetitions (default 9)")
    ap.add_argument("--no-exact", action="store_true", help="skip heaptrail's exact mode (slow)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the table as markdown to FILE")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps must be >= 1")

    all_w = compare.workloads()
    names = {w.name: w for w in all_w}
    bad = [n for n in args.workloads if n not in names]
    if bad:
        ap.error("unknown workload(s): %s" % ", ".join(bad))
    wls = [names[n] for n in args.workloads] if args.workloads else [w for w in all_w if w.default]

    libs = [os.path.join(FLOOR, f + ".so") for f in FLOORS]
    p = subprocess.run(["make", "-s", "-C", compare.ROOT] + [os.path.relpath(l, compare.ROOT) for l in libs]
                       + [os.path.relpath(compare.BUILT_AGENT, compare.ROOT)], capture_output=True, text=True)
    if p.returncode:
        sys.exit("floor.py: make failed: %s" % (p.stderr or p.stdout).strip()[-500:])
    notes = []
    failed_build = compare.build(wls, notes, quiet=True)

    tmp = tempfile.mkdtemp(prefix="heaptrail-floor.")
    try:
        agent = os.path.join(tmp, "libheaptrail.so")
        shutil.copy2(compare.BUILT_AGENT, agent)  # a rebuild meanwhile cannot mix versions
        modes = ["plain"] + list(FLOORS) + ["sampled"] + ([] if args.no_exact else ["heaptrail"])
        preload = {f: ["LD_PRELOAD=" + os.path.join(FLOOR, f + ".so")] for f in FLOORS}
        trace = os.path.join(tmp, "t.%p.ht")
        preload["sampled"] = ["LD_PRELOAD=" + agent, "HEAPTRAIL_OPTIONS=sample_rate=524288,output=" + trace]
        preload["heaptrail"] = ["LD_PRELOAD=" + agent, "HEAPTRAIL_OPTIONS=output=" + trace]
        env0 = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "HEAPTRAIL_OPTIONS")}
        env0["PYTHONHASHSEED"] = "0"
        env0["LC_ALL"] = "C"
        print("heaptrail floor bench: %s; %s; load %s; %d rep(s); modes: %s" % (
            compare.machine_line(), time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            compare.loadavg(), args.reps, ", ".join(modes)), file=sys.stderr)
        rows = []
        for w in wls:
            if w.name in failed_build:
                notes.append("%s: build failed: skipped" % w.name)
                continue
            env = dict(env0)
            env.update(w.env)
            runs = {m: [] for m in modes}
            broken = set()
            for rep in range(args.reps):
                order = modes[rep % len(modes):] + modes[:rep % len(modes)]
                for m in order:
                    argv = w.cmd if m == "plain" else ["/usr/bin/env"] + preload[m] + w.cmd
                    rdir = os.path.join(tmp, "run")
                    os.makedirs(rdir, exist_ok=True)
                    r = compare.run(argv, env, w.stdin, args.timeout, rdir)
                    for f in os.listdir(tmp):
                        if f.startswith("t."):
                            os.unlink(os.path.join(tmp, f))
                    shutil.rmtree(rdir, ignore_errors=True)
                    if not r.ok():
                        broken.add(m)
                        notes.append("%s %s rep %d: %s" % (w.name, m, rep + 1, compare.describe_status(r)))
                    runs[m].append((r.wall, r.cpu))
                print("  %-12s rep %d done" % (w.name, rep + 1), file=sys.stderr, flush=True)
            if "plain" in broken:
                continue
            row = {"workload": w.name, "plain": statistics.median(c for _, c in runs["plain"])}
            for m in modes[1:]:
                if m in broken:
                    row[m] = None
                    continue
                cpu = [c / p for (_, c), (_, p) in zip(runs[m], runs["plain"])]
                wall = [x / p for (x, _), (p, _) in zip(runs[m], runs["plain"])]
                row[m] = (statistics.median(cpu), quartiles(cpu), statistics.median(wall))
            rows.append(row)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    head = ["workload", "plain CPU s"] + ["%s CPU× (IQR) wall×" % m for m in modes[1:]]

    def cell(v):
        if v is None:
            return "failed"
        med, (lo, hi), wall = v
        return "%.3f (%.3f-%.3f) %.3f" % (med, lo, hi, wall)
    table = [[r["workload"], "%.2f" % r["plain"]] + [cell(r[m]) for m in modes[1:]] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *table)]
    for line in [head] + table:
        print("  ".join(str(x).ljust(n) for x, n in zip(line, widths)))
    for n in notes:
        print("- " + n)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("Machine: %s. Date: %s. %d repetitions, modes alternated; median of paired "
                    "ratios to plain (CPU, with its interquartile range; then wall).\n\n" % (
                        compare.machine_line(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), args.reps))
            f.write("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")
            for line in table:
                f.write("| " + " | ".join(line) + " |\n")
            for n in notes:
                f.write("- %s\n" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
