#!/usr/bin/python3
"""run.py - heaptrail's end-to-end tests.

Usage: run.py [-j N] [-k] [-v] [PATTERN...]
  PATTERN   run only tests whose name contains one of the patterns
  -j N      parallel tests (default: number of CPUs, at least 2)
  -k        keep the scratch directory (traces, memcheck logs)
  -v        print each test's time and extra detail
  --repeat N  stress mode: run the selection N times, each in a process and
            scratch directory of its own (no memoised trace carries over),
            printing only the failures, then `e2e stress: N runs, K failed`

Prints `PASS name`, `FAIL name: reason` (further mismatches indented
below) or `SKIP name: why` (it cannot run here: an optional library is
absent) per test, in a fixed order, then `e2e: N skipped` when some were,
and `e2e: N passed, N failed`.
Exit status 1 if any test failed.
"""

import argparse
import concurrent.futures
import subprocess
import os
import resource
import shutil
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import test_cli  # noqa: E402
import test_programs  # noqa: E402
import test_real  # noqa: E402
import test_signals  # noqa: E402
import test_export_pprof  # noqa: E402
import test_export_graphs  # noqa: E402
import test_export_tools  # noqa: E402
import test_functions  # noqa: E402
import test_tags_phases  # noqa: E402
import test_pools_snapshots  # noqa: E402
import test_leak_classes  # noqa: E402
import test_summary  # noqa: E402
import test_leaks  # noqa: E402
import test_resources  # noqa: E402
import test_sampling  # noqa: E402
import test_diff  # noqa: E402
import test_hostile_names  # noqa: E402
import test_hostile  # noqa: E402
import test_gates  # noqa: E402
import test_html  # noqa: E402
import test_durable  # noqa: E402
import test_attach  # noqa: E402
import test_sites  # noqa: E402
import test_cores  # noqa: E402
import test_bad_frees  # noqa: E402
import test_mapped  # noqa: E402
import test_runs  # noqa: E402
import test_stacks  # noqa: E402
import test_top  # noqa: E402


def all_tests():
    # Slow ones (memcheck of real programs) first, so they overlap the rest.
    return (test_real.TESTS + test_programs.TESTS + test_cli.TESTS + test_signals.TESTS +
            test_export_pprof.TESTS + test_export_graphs.TESTS + test_export_tools.TESTS +
            test_functions.TESTS + test_tags_phases.TESTS +
            test_pools_snapshots.TESTS + test_leak_classes.TESTS +
            test_summary.TESTS + test_leaks.TESTS + test_resources.TESTS +
            test_sampling.TESTS + test_diff.TESTS + test_hostile_names.TESTS +
            test_hostile.TESTS + test_gates.TESTS + test_html.TESTS + test_durable.TESTS +
            test_sites.TESTS + test_cores.TESTS +
            test_bad_frees.TESTS + test_mapped.TESTS + test_runs.TESTS +
            test_stacks.TESTS + test_attach.TESTS +
            test_top.TESTS)


def run_one(name, fn, verbose):
    t = harness.T(name, harness.SCRATCH)
    t0 = time.monotonic()
    try:
        fn(t)
    except harness.Fatal:
        pass
    except harness.Skip as why:
        return name, None, str(why), time.monotonic() - t0
    except Exception:  # a bug in the test or an unexpected report shape
        t.errors.append("test raised: " + traceback.format_exc(limit=4).strip().replace("\n", "\n      "))
    return name, t.errors, None, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=max(2, os.cpu_count() or 2))
    ap.add_argument("-k", action="store_true")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("patterns", nargs="*")
    args = ap.parse_args()
    if args.repeat > 1:
        return stress(args)

    # No core files from the crash tests.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    harness.SCRATCH = tempfile.mkdtemp(prefix="heaptrail-e2e.")
    tests = [(n, f) for n, f in all_tests()
             if not args.patterns or any(p in n for p in args.patterns)]
    if not harness.HT_ASAN.exists():
        print("note: %s missing; reports use %s" % (harness.HT_ASAN, harness.HT), flush=True)

    passed = failed = skipped = 0
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.j) as pool:
        futs = [pool.submit(run_one, n, f, args.v) for n, f in tests]
        for fut in futs:
            name, errors, why, secs = fut.result()
            extra = " (%.1fs)" % secs if args.v else ""
            if why is not None:
                skipped += 1
                print("SKIP %s: %s%s" % (name, why, extra), flush=True)
            elif errors:
                failed += 1
                more = " (+%d more below)" % (len(errors) - 1) if len(errors) > 1 else ""
                print("FAIL %s: %s%s%s" % (name, errors[0], more, extra), flush=True)
                for e in errors[1:]:
                    print("    %s" % e, flush=True)
            else:
                passed += 1
                print("PASS %s%s" % (name, extra), flush=True)
    if args.v:
        print("e2e time: %.1fs" % (time.monotonic() - t0))
    if args.k:
        print("scratch kept in %s" % harness.SCRATCH)
    else:
        shutil.rmtree(harness.SCRATCH, ignore_errors=True)
    if skipped:
        print("e2e: %d skipped" % skipped, flush=True)
    print("e2e: %d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


def stress(args):
    """Runs the selection args.repeat times, each run a new process."""
    bad = 0
    for i in range(args.repeat):
        cmd = [sys.executable, os.path.abspath(__file__), "-j", str(args.j)] + args.patterns
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        fails = [ln for ln in p.stdout.splitlines() if ln.startswith(("FAIL", "    "))]
        if p.returncode != 0:
            bad += 1
            print("run %d of %d:" % (i + 1, args.repeat), flush=True)
            for ln in fails or p.stdout.splitlines()[-5:]:
                print("  " + ln, flush=True)
        tally = [ln for ln in p.stdout.splitlines() if ln.startswith("e2e: ") and "passed" in ln]
        print("run %d: %s" % (i + 1, tally[-1][5:] if tally else "no tally"), flush=True)
    print("e2e stress: %d runs, %d failed" % (args.repeat, bad), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
