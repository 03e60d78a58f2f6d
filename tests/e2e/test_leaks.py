"""test_leaks.py - the command-line side, end to end: leak classes,
allocation numbers, suppressions, the leak exit code, break on allocation
and growth suspects. Counts are known by construction (tests/programs/leaks.c,
threads.c, exit3.c, growth.c: their header comments list them).

Until the agent writes LEAKS records, the classes come from the real trace
of leaks.c with LEAKS records (and a LEAK_CHECK event) added by
tracefile.py, classifying each block by a rule the test states; the numbers
checked are then what that rule and the program's construction give.

  leaks.numbers        each leak names one block by its allocation number
                       ("n", the n-th allocation of the main thread): the
                       numbers leaks.c's order gives, the same in two runs;
                       threads are "T.n"
  leaks.classes        the JSON report and `heaptrail leaks` by class, the
                       on-demand check, an unknown EXT kind skipped
  leaks.text           the text: lost classes listed, still reachable one
                       line unless --show-reachable
  leaks.suppressions   LSan-format files: function, file and module patterns,
                       counted per pattern; a bad line is refused
  leaks.builtin        the built-in list takes the DTVs of threads.c's
                       threads (one-time ld.so blocks), not its real leaks
  leaks.exitcode_children  every process that exited counts for
                       --leak-exitcode (a script's leaking child)
  leaks.exitcode_fd_limit  children forked under a hard RLIMIT_NOFILE of 4
                       (their trace takes the last descriptor) are listed
                       and checked; a child that can list nothing makes
                       the run say so and not pass the gate
  leaks.exitcode       --leak-exitcode and --no-leak-report; a crash keeps
                       its status; suppressed leaks never count
  leaks.break_gdb      --break-alloc under gdb: the stops are at the
                       allocating and the freeing line of the numbered block
  leaks.growth         the growing site ranks first and is the only suspect
  leaks.memory_per_live_block  report (text and JSON) and leaks of a trace
                       holding millions of small blocks at once (the bench's
                       many_live): the memory they take per live block
"""

import json
import os
import re
import shutil

import contract
import tracefile
from harness import (AGENT, BUILD, HT, PROGS, SRC, heaptrail_run, marker_line, need_tools, report,
                     run, tail, text, traced_program)
from test_durable import peak_rss_kib

TIMEOUT = 60
LEAKS_SRC = SRC / "leaks.c"

# leaks.c: the allocation number of the first block of each leak, in the
# order main calls them (leak_small 1-3, leak_big 4, inner_leaker 5-6,
# leak_realloc: malloc 7, realloc 8; no_leak 9-13).
NUMBERS = {"leak_small": "1", "leak_big": "4", "inner_leaker": "5", "leak_realloc": "8"}
# The rule the tests classify leaks.c's blocks by (size -> class), and its
# figures: blocks and bytes per class.
KIND_BY_SIZE = {4096: tracefile.LEAK_DEFINITE, 100: tracefile.LEAK_INDIRECT,
                32: tracefile.LEAK_POSSIBLE, 300: tracefile.LEAK_REACHABLE}
CLASSES = {"definite": (1, 4096), "indirect": (2, 200), "possible": (3, 96), "reachable": (1, 300)}


def leaf_fn(entry):
    st = entry.get("stack") or []
    return st[0].get("function") if st else None


def ht_json(t, args):
    p = run([HT] + args, TIMEOUT)
    t.need(p.rc == 0, "%s: %s" % (p.describe(), tail(p.err)))
    try:
        return json.loads(text(p.out))
    except ValueError as e:
        t.fatal("%s: not JSON (%s): %s" % (p.describe(), e, tail(p.out)))


def classified_trace(t):
    """leaks.c's trace with the exit check's classes (KIND_BY_SIZE), an
    on-demand check just after the 6th allocation was made (all live blocks
    definite then), and an EXT event of a kind no reader knows."""
    path, _ = traced_program(t, "leaks")
    recs = tracefile.records(path)
    allocs = tracefile.allocations(path)
    live = [a for a in allocs if a["freed_at"] is None]
    t.eq("live blocks of leaks.c at exit", 7, len(live))
    end = [r for r in recs if r[0] == tracefile.REC_END]
    # the agent's own exit check is replaced by the made-up one
    body = [r for r in recs if r[0] not in (tracefile.REC_END, tracefile.REC_LEAKS)]
    # just after the 6th allocation's time: times are coarse (16 us while
    # one thread runs, agent.h), so others may share it, and those count too
    k = max(i for i, a in enumerate(allocs) if a["time"] == allocs[5]["time"])
    t6 = allocs[k]["time"] + 1
    at6 = [a for a in allocs[:k + 1] if a["freed_at"] is None or a["freed_at"] > t6]
    fake_tid = 999999  # a thread of its own: its events merge by time
    body.append(tracefile.ext_block(fake_tid, t6, tracefile.EXT_LEAK_CHECK, tracefile.varint(1)))
    body.append(tracefile.ext_block(fake_tid, t6 + 1, 14, b"\x01\x02\x03"))
    body.append(tracefile.leaks_record(t6, 1, [(a["addr"], tracefile.LEAK_DEFINITE) for a in at6],
                                       reason=2))
    entries = [(a["addr"], KIND_BY_SIZE[a["size"]]) for a in live]
    # the exit check split over two records, the last one first
    body.append(tracefile.leaks_record(allocs[-1]["time"], 0, entries[3:], last=1))
    body.append(tracefile.leaks_record(allocs[-1]["time"], 0, entries[:3], last=0))
    out = t.tmp / "classified.ht"
    tracefile.write(out, body + end)
    return out, t6, sum(a["size"] for a in at6), len(at6)


def t_numbers(t):
    path, rep = traced_program(t, "leaks")
    got = {leaf_fn(lk): lk.get("block") for lk in rep["leaks"]}
    t.eq("allocation numbers of leaks.c's leaks (by leaf)", NUMBERS, got)
    # a second run: the same numbers (a deterministic program)
    tr = heaptrail_run([PROGS / "leaks"])
    t.need(tr.proc.rc == 0, "second run: %s" % tail(tr.proc.err))
    rep2 = report(tr.out_path)
    t.need(not rep2.err, rep2.err or "")
    t.eq("numbers in a second run", got, {leaf_fn(lk): lk.get("block") for lk in rep2.data["leaks"]})
    # the numbers are the allocations' ordinals in the trace itself
    allocs = tracefile.allocations(path)
    for lk in rep["leaks"]:
        n = int(lk["block"])
        a = allocs[n - 1]
        t.check(a["freed_at"] is None and lk.get("block_address") == "0x%x" % a["addr"],
                "block %s: the trace's allocation %d is %r, the report says %s" % (
                    lk["block"], n, a, lk.get("block_address")))
    # threads: worker threads' blocks are "T.n" with T >= 2
    _, trep = traced_program(t, "threads")
    blocks = [lk.get("block") for lk in trep["leaks"]]
    workers = [b for b in blocks if isinstance(b, str) and "." in b]
    t.check(len(workers) == 4 and all(int(b.split(".")[0]) >= 2 for b in workers),
            "threads.c's 4 worker leaks should be named T.n (T >= 2): %r" % blocks)
    t.eq("threads.c: distinct thread numbers of the workers' leaks", 4,
         len({b.split(".")[0] for b in workers}))


def t_classes(t):
    path, t6, bytes6, blocks6 = classified_trace(t)
    r = report(path)
    t.need(not r.err, r.err or "")
    rep = r.data
    for e in contract.check(rep):
        t.check(False, "contract: " + e)
    tot = rep["totals"]
    t.check(tot.get("leaks_classified") is True, "totals.leaks_classified is %r" % tot.get("leaks_classified"))
    for k, (blocks, nbytes) in CLASSES.items():
        t.eq("totals.%s_blocks/bytes" % k, (blocks, nbytes), (tot.get(k + "_blocks"), tot.get(k + "_bytes")))
    t.eq("totals.unclassified_blocks", 0, tot.get("unclassified_blocks"))
    kinds = [(lk.get("kind"), leaf_fn(lk), lk.get("bytes")) for lk in rep["leaks"]]
    t.eq("leaks by class, then largest first",
         [("definite", "leak_big", 4096), ("indirect", "inner_leaker", 200),
          ("possible", "leak_small", 96), ("reachable", "leak_realloc", 300)], kinds)
    t.eq("warnings (the unknown EXT kind is skipped silently)", [], rep.get("warnings"))
    checks = rep.get("leak_checks")
    t.need(isinstance(checks, list) and len(checks) == 1, "leak_checks: %r" % checks)
    c = checks[0]
    t.eq("leak check 1: id, definite blocks and bytes, other classes",
         (1, blocks6, bytes6, 0, 0), (c.get("check"), c.get("definite_blocks"), c.get("definite_bytes"),
                                      c.get("reachable_blocks"), c.get("unclassified_blocks")))
    t.check(abs(c.get("time_seconds", -1) - t6 / 1e9) < 1e-9,
            "leak check time %r, the LEAK_CHECK event is at %r" % (c.get("time_seconds"), t6 / 1e9))
    t.eq("leak check 1's top stack", "leak_big", leaf_fn((c.get("top") or [{}])[0]))
    # `heaptrail leaks --format json`: the same leaks and totals
    lj = ht_json(t, ["leaks", "--format", "json", path])
    t.eq("heaptrail leaks: leaks", rep["leaks"], lj.get("leaks"))
    t.eq("heaptrail leaks: definite_bytes", 4096, lj.get("totals", {}).get("definite_bytes"))
    t.eq("heaptrail leaks: leak_checks", checks, lj.get("leak_checks"))


def t_text(t):
    path, _, bytes6, _ = classified_trace(t)
    p = run([HT, "leaks", path], TIMEOUT)
    out = text(p.out)
    t.eq("exit status of heaptrail leaks", 0, p.rc)
    for want in ("definitely lost: 4.00 KiB (4,096 B) in 1 block, 1 stack",
                 "indirectly lost: 200 B (200 B) in 2 blocks, 1 stack",
                 "possibly lost: 96 B (96 B) in 3 blocks, 1 stack",
                 "still reachable: 300 B (300 B) in 1 block, 1 stack (--show-reachable lists them)",
                 "e.g. block 4", "LEAK CHECKS DURING THE RUN", "{:,} B in".format(bytes6)):
        t.check(want in out, "heaptrail leaks lacks %r:\n%s" % (want, tail(p.out, 2500)))
    t.check("leak_realloc" not in out, "still-reachable stack listed without --show-reachable")
    t.check("TOP SITES" not in out, "heaptrail leaks prints more than the leak section")
    line = marker_line(LEAKS_SRC, "LEAK_BIG")
    t.check(re.search(r"leak_big\s+\S*leaks\.c:%d" % line, out), "leak_big's stack line %d missing" % line)
    p = run([HT, "leaks", "--show-reachable", path], TIMEOUT)
    t.check("still reachable: 300 B (300 B) in 1 block, 1 stack" in text(p.out) and
            "leak_realloc" in text(p.out), "--show-reachable does not list it:\n%s" % tail(p.out, 1500))
    # the full report has the same section
    p = run([HT, "report", path], TIMEOUT)
    t.check("LEAKS BY CLASS, LARGEST FIRST" in text(p.out) and "definitely lost" in text(p.out),
            "report lacks the leak section by class")
    # one [site N] per stack through the whole report: the leak section
    # goes on with the top lists' numbers
    first = {}
    lines = text(p.out).splitlines()
    for i, ln in enumerate(lines[:-1]):
        m = re.search(r"\[site (\d+)\]$", ln)
        if m:
            first.setdefault(m.group(1), set()).add(lines[i + 1].strip())
    t.check(first and all(len(v) == 1 for v in first.values()),
            "a [site N] label names different stacks: %s" %
            {k: sorted(v) for k, v in first.items() if len(v) > 1})


def write_supp(t, name, lines):
    f = t.tmp / name
    f.write_text("\n".join(lines) + "\n")
    return f


def t_suppressions(t):
    path, _ = traced_program(t, "leaks")
    f = write_supp(t, "a.supp", ["# leaks.c's two known leaks", "", "leak:^inner_leaker$",
                                 "  leak:leak_big  "])
    rep = ht_json(t, ["report", "--format", "json", "--suppressions", str(f), path])
    for e in contract.check(rep):
        t.check(False, "contract: " + e)
    got = {s["pattern"]: (s["blocks"], s["bytes"]) for s in rep.get("suppressions", [])
           if s.get("origin") == str(f)}
    t.eq("per-pattern counts", {"^inner_leaker$": (2, 200), "leak_big": (1, 4096)}, got)
    t.eq("leaks left", {"leak_small", "leak_realloc"}, {leaf_fn(lk) for lk in rep["leaks"]})
    t.eq("totals.suppressed_blocks/bytes", (3, 4296),
         (rep["totals"].get("suppressed_blocks"), rep["totals"].get("suppressed_bytes")))
    # a file pattern and a module pattern take everything
    for pat in ("leak:tests/programs/leaks.c", "leak:build/tests/leaks$"):
        f2 = write_supp(t, "b.supp", [pat])
        rep = ht_json(t, ["leaks", "--format", "json", "--suppressions", str(f2), path])
        t.eq("%s: leaks left" % pat, [], rep.get("leaks"))
        t.eq("%s: suppressed" % pat, (7, 4692),
             (rep["totals"].get("suppressed_blocks"), rep["totals"].get("suppressed_bytes")))
    # an anchored pattern that matches no whole name takes nothing
    f3 = write_supp(t, "c.supp", ["leak:^leak$"])
    rep = ht_json(t, ["leaks", "--format", "json", "--suppressions", str(f3), path])
    t.eq("^leak$: leaks left", 4, len(rep.get("leaks", [])))
    # the text names them
    p = run([HT, "leaks", "--suppressions", str(f), path], TIMEOUT)
    t.check(re.search(r"4,096 B in +1 block +leak:leak_big", text(p.out)),
            "text lacks the per-pattern line:\n%s" % tail(p.out, 1500))
    # a line that is not leak:PATTERN is refused, naming it
    bad = write_supp(t, "bad.supp", ["leak:ok", "race:foo"])
    p = run([HT, "report", "--suppressions", str(bad), path], TIMEOUT)
    t.eq("exit status with a bad suppressions file", 1, p.rc)
    t.check("bad.supp:2" in text(p.err), "no file:line in %r" % tail(p.err))


def t_builtin(t):
    _, rep = traced_program(t, "threads")
    sup = {s["pattern"]: s for s in rep.get("suppressions", [])}
    dtv = sup.get("^_dl_allocate_tls$", {})
    t.eq("DTV blocks of threads.c's 4 threads, suppressed (built-in)", 4, dtv.get("blocks"))
    t.eq("threads.c's own leaks still listed", {"worker0_alloc", "worker1_alloc", "worker2_alloc",
                                                "worker3_alloc"}, {leaf_fn(lk) for lk in rep["leaks"]})
    path, _ = traced_program(t, "threads")
    rep2 = ht_json(t, ["report", "--format", "json", "--no-default-suppressions", path])
    t.check("suppressions" not in rep2, "--no-default-suppressions still lists suppressions")
    t.eq("leaks without the built-in list", 5, len(rep2["leaks"]))


def t_exitcode(t):
    need_tools(t)
    leaks = PROGS / "leaks"
    tr = heaptrail_run([leaks], ["--leak-exitcode", "23"])
    t.eq("leaks.c with --leak-exitcode 23", 23, tr.proc.rc)
    err = text(tr.proc.err)
    t.check("leak_big" in err and "leaks found: exit status 23" in err,
            "no leak section on stderr: %s" % tail(tr.proc.err, 1500))
    tr = heaptrail_run([leaks], ["--leak-exitcode", "23", "--no-leak-report"])
    t.eq("leaks.c with --no-leak-report", 23, tr.proc.rc)
    t.check("leak_big" not in text(tr.proc.err), "--no-leak-report printed the leaks")
    tr = heaptrail_run([leaks])
    t.eq("leaks.c without --leak-exitcode", 0, tr.proc.rc)
    # the leak exit code replaces the program's own status; a signal stays
    tr = heaptrail_run([PROGS / "exit3"], ["--leak-exitcode", "23"])
    t.eq("exit3.c (status 3, one leak) with --leak-exitcode 23", 23, tr.proc.rc)
    tr = heaptrail_run([PROGS / "crash_segv"], ["--leak-exitcode", "23"])
    t.eq("crash_segv with --leak-exitcode 23", 128 + 11, tr.proc.rc)
    # suppressed leaks never count
    f = write_supp(t, "all.supp", ["leak:leaks.c"])
    tr = heaptrail_run([leaks], ["--leak-exitcode", "23", "--suppressions", str(f)])
    t.eq("leaks.c, every leak suppressed", 0, tr.proc.rc)
    # no trace (a static program), no leak check: the gate must not pass
    src = t.tmp / "static_leak.c"
    src.write_text("#include <stdlib.h>\nvoid *volatile keep;\n"
                   "int main(void) { keep = malloc(33); return 0; }\n")
    exe = t.tmp / "static_leak"
    cc = run(["cc", "-static", "-O0", "-o", str(exe), str(src)], TIMEOUT)
    t.need(cc.rc == 0, "cc -static failed: %s" % tail(cc.err))
    tr = heaptrail_run([exe], ["--leak-exitcode", "23"])
    t.eq("a static program (no trace) with --leak-exitcode 23", 1, tr.proc.rc)
    t.check("no trace, so no leak check" in text(tr.proc.err),
            "no word that the leak check did not happen: %s" % tail(tr.proc.err))
    tr = heaptrail_run([exe])
    t.eq("the same without --leak-exitcode: the program's status", 0, tr.proc.rc)


def t_exitcode_children(t):
    """--leak-exitcode checks every process that exited, as memcheck's
    --trace-children does: a test script whose test leaks fails the gate
    (it passed: only the script's own trace was checked). A trace that
    ended at an exec is no image's end and is not checked."""
    need_tools(t)
    script = "%s; echo done" % (PROGS / "leaks")
    tr = heaptrail_run(["/bin/sh", "-c", script], ["--leak-exitcode", "23"], out_name="s.%p.ht")
    t.eq("a script running a leaking program", 23, tr.proc.rc)
    err = text(tr.proc.err)
    t.check("leaks found in" in err and "leak_big" in err,
            "the child's leaks are not named: %s" % tail(tr.proc.err, 1500))
    script = "/bin/echo hi; echo done"
    tr = heaptrail_run(["/bin/sh", "-c", script], ["--leak-exitcode", "23"], out_name="s.%p.ht")
    t.eq("a script running a program without definite leaks (echo)", 0, tr.proc.rc)


def t_exitcode_fd_limit(t):
    """fork_fd_limit lowers its hard RLIMIT_NOFILE to 4, then forks 3
    children that leak: each child's trace takes its last descriptor, and
    the child must still be in heaptrail run's list (it was not: the list
    was opened for each line, EMFILE, and --leak-exitcode passed)."""
    need_tools(t)
    tr = heaptrail_run([PROGS / "fork_fd_limit"], ["--leak-exitcode", "9"], out_name="f.%p.ht")
    err = text(tr.proc.err)
    t.eq("leaking children under RLIMIT_NOFILE 4: exit status", 9, tr.proc.rc)
    files = [p.resolve() for p in tr.files()]
    t.eq("traces written", 4, len(files))
    t.eq("traces listed by heaptrail run", sorted(files), sorted(p.resolve() for p in tr.listed()))
    t.check("4 traces written" in err, "the summary does not count 4 traces: %s" % tail(err, 1500))
    t.eq("children named by the leak gate", 3, err.count("leaks found in"))
    t.check("may be incomplete" not in err, "a complete list called incomplete: %s" % tail(err))
    # closefrom(3) takes the agent's descriptor of the list, and each child
    # then lowers its limit to 3: no line of a child can be written. The
    # agent says so, the run says its list may be incomplete, and the gate
    # does not pass on what it could not see (exit 1, as with no trace).
    tr = heaptrail_run([PROGS / "fork_fd_limit", "close"], ["--leak-exitcode", "9"],
                       out_name="c.%p.ht")
    err = text(tr.proc.err)
    t.eq("children that cannot be listed: exit status", 1, tr.proc.rc)
    t.eq("the agent's word for each child", 3, err.count("cannot list this trace for heaptrail run"))
    t.check(re.search(r"list of traces may be incomplete: 3 processes", err),
            "the run does not say its list may be incomplete: %s" % tail(err, 1500))
    t.eq("traces written", 4, len(tr.files()))


GDB = shutil.which("gdb")


def gdb_stops(t, prog, breaks):
    """Run prog under gdb with the agent preloaded and break=BREAKS; the
    backtraces at each stop (a list of strings) and the program's stderr."""
    opts = "output=%s,break=%s" % (t.tmp / "g.%p.ht", breaks)
    cmds = ["set startup-with-shell off", "set pagination off",
            "set environment LD_PRELOAD=%s" % AGENT,
            "set environment HEAPTRAIL_OPTIONS=%s" % opts, "run"]
    # one more than the stops and one spare: gdb 13 now and then returns
    # from a continue at the main thread's exit event, before the exit
    for _ in range(5):
        cmds += ["echo ==STOP==\\n", "bt", "continue"]
    argv = [GDB, "-batch", "-nx"]
    for c in cmds:
        argv += ["-ex", c]
    p = run(argv + ["--args", prog], 120)
    out = text(p.out)
    stops = out.split("==STOP==")[1:]
    return [s for s in stops if "SIGTRAP" in s or "#0" in s], out, text(p.err)


def t_break_gdb(t):
    need_tools(t)
    t.need(GDB, "gdb not installed (scripts/setup.sh installs it)")
    # numbers from the leak report: leak_big's block is 4; allocation 9 is
    # no_leak's first malloc, freed at the free(p[i]) line
    _, rep = traced_program(t, "leaks")
    big = next((lk["block"] for lk in rep["leaks"] if leaf_fn(lk) == "leak_big"), None)
    t.eq("leak_big's block number in the report", "4", big)
    stops, out, err = gdb_stops(t, PROGS / "leaks", "%s+9" % big)
    free_line = next(i for i, l in enumerate(LEAKS_SRC.read_text().splitlines(), 1)
                     if "free(p[i]);" in l)
    want = [("leak_big", marker_line(LEAKS_SRC, "LEAK_BIG")),
            ("no_leak", marker_line(LEAKS_SRC, "NO_LEAK")),
            ("no_leak", free_line)]
    got = []
    for s in stops[:3]:
        m = re.search(r"#\d+\s+(?:0x\w+ in )?(leak_big|no_leak) \(.*?\) at \S*leaks\.c:(\d+)", s)
        got.append((m.group(1), int(m.group(2))) if m else None)
    t.eq("gdb stops (function, line) for break=4+9", want, got)
    t.eq("number of stops", 3, len(stops))
    for msg in (r"heaptrail: allocation 4 \(0x[0-9a-f]+\) made: SIGTRAP",
                r"heaptrail: allocation 9 \(0x[0-9a-f]+\) made: SIGTRAP",
                r"heaptrail: allocation 9 \(0x[0-9a-f]+\) freed: SIGTRAP"):
        t.check(re.search(msg, out + err), "no line %r in gdb's output:\n%s" % (msg, (out + err)[-2000:]))
    t.check("exited normally" in out, "the program did not run to its end after the stops:\n%s"
            % out[-1500:])


def t_growth(t):
    path, _ = traced_program(t, "growth")
    g = ht_json(t, ["leaks", "--growth", "--format", "json", path]).get("growth", {})
    sites = g.get("sites", [])
    t.need(sites, "no growth entries: %r" % g)
    t.eq("first ranked site", "cache_add", leaf_fn(sites[0]))
    t.check(sites[0].get("suspect") is True, "cache_add not flagged: %r" % {k: v for k, v in sites[0].items() if k != "stack"})
    t.eq("cache_add's live blocks at the end", 400, sites[0].get("live_blocks"))
    flagged = [leaf_fn(s) for s in sites if s.get("suspect")]
    t.eq("suspects", ["cache_add"], flagged)
    span = g.get("span_seconds", 0)
    s0 = sites[0]
    t.check(s0["age_oldest_seconds"] > 0.8 * span and s0["age_median_seconds"] < 0.7 * span
            and s0["age_median_seconds"] > 0.3 * span,
            "cache_add's ages (median %r, oldest %r) over a %r s run" % (
                s0["age_median_seconds"], s0["age_oldest_seconds"], span))
    series = s0.get("series", [])
    t.check(len(series) == g.get("points") and series == sorted(series) and series[-1] == 400 * 64,
            "cache_add's series should rise to 25,600 B: %r" % series)
    p = run([HT, "leaks", "--growth", path], TIMEOUT)
    t.eq("SUSPECT lines in the text", 1, len(re.findall(r"^#\d+\s+SUSPECT ", text(p.out), re.M)))


def t_memory_per_live_block(t):
    # bench/workloads/many_live.c N holds N blocks of 16-64 bytes at once
    # (from four sites), then frees all but the last 1000 and exits with
    # them and its array of N pointers live. What reading its trace costs
    # per live block, beyond the sites and stacks (few here): the slope of
    # peak RSS between a small and a large N, so that what does not grow
    # with the blocks cancels. The pass's table takes 24 bytes a record
    # and a 4-byte index slot at 1/2 to 3/4 load (30-32 bytes); the
    # reader's buffers of the trace add a few more (36.8 measured here;
    # 158 with 56-byte slots in one table grown by doubling).
    need_tools(t)
    prog = BUILD / "bench" / "many_live"
    t.need(prog.exists(), "%s not built (make %s)" % (prog, "build/bench/many_live"))
    sizes = (300000, 2300000)
    traces = []
    for n in sizes:
        tr = heaptrail_run([prog, str(n)], timeout=300)
        t.need(tr.proc.rc == 0 and tr.out_path.exists(),
               "many_live %d under heaptrail: %s: %s" % (n, tr.proc.describe(), tail(tr.proc.err)))
        traces.append(tr.out_path)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "HEAPTRAIL_OPTIONS")}
    # the trace is what the program made: its blocks all reach the report
    p = run([HT, "report", "--format", "json", traces[1]], 300, env=env)
    t.need(p.rc == 0, "report: %s: %s" % (p.describe(), tail(p.err)))
    tot = json.loads(text(p.out))["totals"]
    n = sizes[1]
    t.eq("many_live %d: allocations, leaked blocks" % n, (n + n // 4 + 1, 1001),
         (tot.get("allocations"), tot.get("leaked_blocks")))
    for cmd in (["report"], ["report", "--format", "json"], ["leaks"]):
        rss = []
        for tp in traces:
            kib, rc, err = peak_rss_kib([str(HT)] + cmd + [str(tp)], env)
            t.need(rc in (0, 1) and kib, "heaptrail %s: status %s: %s" % (" ".join(cmd), rc, tail(err)))
            rss.append(kib)
        per = (rss[1] - rss[0]) * 1024.0 / (sizes[1] - sizes[0])
        t.check(per <= 40, "heaptrail %s: %.1f bytes of memory per live block (peak RSS %d KiB at %d "
                "blocks, %d KiB at %d); want at most 40" % (" ".join(cmd), per, rss[1], sizes[1], rss[0],
                                                            sizes[0]))


TESTS = [
    ("leaks.memory_per_live_block", t_memory_per_live_block),
    ("leaks.numbers", t_numbers),
    ("leaks.classes", t_classes),
    ("leaks.text", t_text),
    ("leaks.suppressions", t_suppressions),
    ("leaks.builtin", t_builtin),
    ("leaks.exitcode", t_exitcode),
    ("leaks.exitcode_children", t_exitcode_children),
    ("leaks.exitcode_fd_limit", t_exitcode_fd_limit),
    ("leaks.break_gdb", t_break_gdb),
    ("leaks.growth", t_growth),
]
