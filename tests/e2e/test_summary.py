"""test_summary.py - the summary mode and queries, end to end.

Summary mode (`heaptrail run --summary`, agent option summary=1) keeps
per-site totals in the agent and writes them at exit instead of a trace of
events. The exact (full) trace of the same deterministic program is the
oracle: its report's figures equal valgrind memcheck's elsewhere in the
suite (test_programs.py).

  summary.sites.<prog>   every site's allocations, bytes, frees, leaked
                         blocks/bytes (and, single-threaded, bytes at the
                         peak) equal the full trace's, site by site (sites
                         keyed by their symbolized frames); totals too
  summary.run_output     `run --summary` prints the top sites symbolized to
                         file:line and writes FILE.json, equal to the report
  summary.overflow       --summary-sites 2: two rows plus one overflow row
                         holding the rest; totals unchanged
  summary.bounded        the file does not grow with the number of
                         allocations (churn 20x longer: same size within 2x)
  summary.env_only       HEAPTRAIL_OPTIONS=summary=1 with LD_PRELOAD alone
                         (no heaptrail run) writes a summary that reports
  summary.cross_thread   two threads handing one address back and forth
                         (pingpong.c): every allocation and byte counted
                         in its site (the writer sees the threads' blocks
                         out of time order), and every free
  summary.handback       a block handed from thread A to B and back, A's
                         events digested before B's (handback.c): the free
                         A makes ends B's block, not A's; every free counted
                         and nothing left in use, as in the full trace
  summary.prodcons       producers allocate, consumers free (prodcons.c): the
                         threads' blocks arrive seconds of events apart, at
                         addresses other threads reused meanwhile; the
                         allocating site's figures and classes equal the
                         construction, the totals the full trace's
  summary.leak_classes   the leak classes at exit land in the site rows
                         (read from the file): leak_classes.c's list
                         scenario, 1 definite, 9 indirect, 5 reachable
  summary.json_suppressed  FILE.json applies --suppressions and the
                         built-in ones, as the report does
  summary.exec           an image that execs keeps its figures (written
                         before the exec); the new image has its own
  summary.fork_child     a child forked after the parent's events were
                         digested holds its own allocations only
  queries.<mode>         heaptrail_stats() (heaptrail.h) gives the figures
                         tests/programs/queries.c knows by construction, in
                         trace mode and in summary mode
"""

import json
import os
import re

import tracefile
from harness import (AGENT, HT, PROGS, heaptrail_run, memo, need_tools, report, run, tail,
                     text)

TIMEOUT = 60


def traced(t, prog, args=(), opts=(), env=None, name=None):
    need_tools(t)
    p = PROGS / prog
    t.need(p.exists(), "%s not built (make programs)" % p)

    def go():
        tr = heaptrail_run([str(p)] + list(args), opts, env=env, timeout=TIMEOUT)
        if tr.proc.timed_out or not tr.out_path.exists():
            return tr, None, "heaptrail run failed: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        rep = report(tr.out_path, "json")
        if rep.err or rep.proc.rc != 0:
            return tr, rep, "report failed: %s %s" % (rep.err, tail(rep.proc.err))
        return tr, rep, None
    tr, rep, err = memo(("summary", name or prog, tuple(args), tuple(opts)), go)
    if err:
        t.fatal(err)
    return tr, rep.data


def key(site):
    return tuple((f.get("function"), f.get("file"), f.get("line")) for f in site["stack"])


FIELDS = ("allocations", "bytes_allocated", "frees", "leaked_blocks", "leaked_bytes")


def compare_sites(t, full, summ, with_peak):
    fields = FIELDS + (("peak_bytes",) if with_peak else ())
    fs = {}
    for s in full["sites"]:
        a = fs.setdefault(key(s), dict.fromkeys(fields, 0))
        for f in fields:
            a[f] += s[f]
    ss = {}
    for s in summ["sites"]:
        a = ss.setdefault(key(s), dict.fromkeys(fields, 0))
        for f in fields:
            a[f] += s[f]
    t.eq("sites (keyed by frames)", sorted(fs), sorted(ss))
    for k in fs:
        if k in ss:
            t.eq("site %s" % (k[:1],), fs[k], ss[k])
    tot = ("allocations", "frees", "bytes_allocated", "leaked_blocks", "leaked_bytes") + (
        ("peak_heap_bytes",) if with_peak else ())
    t.eq("totals", {f: full["totals"][f] for f in tot}, {f: summ["totals"][f] for f in tot})


def site_test(prog, args=(), with_peak=True):
    def fn(t):
        _, full = traced(t, prog, args)
        _, summ = traced(t, prog, args, ("--summary",))
        # several threads: the peak follows the writer's arrival order,
        # and the report says so (a ping-pong's peak came out 5x the real)
        t.check(summ.get("summary_mode") == {"site_table_full": False,
                                             "peak_in_arrival_order": not with_peak},
                "summary report's summary_mode: %r" % summ.get("summary_mode"))
        t.check("summary_mode" not in full, "a full trace's report says summary_mode")
        compare_sites(t, full, summ, with_peak)
    return fn


def t_run_output(t):
    tr, summ = traced(t, "leaks", (), ("--summary",))
    err = text(tr.proc.err)
    t.check("TOP SITES BY BYTES ALLOCATED" in err, "no top sites on stderr: %s" % tail(tr.proc.err))
    t.check("temporary" not in err, "a summary has no temporaries to count: %s" % tail(tr.proc.err))
    t.check(re.search(r"leaks\.c:\d+", err), "no file:line in the top sites: %s" % err[-800:])
    jpath = str(tr.out_path) + ".json"
    t.need(os.path.exists(jpath), "no %s" % jpath)
    written = json.load(open(jpath))
    t.eq("FILE.json totals == report's", summ["totals"], written["totals"])
    t.eq("FILE.json sites == report's", [key(s) for s in summ["sites"]],
         [key(s) for s in written["sites"]])


def t_overflow(t):
    _, full = traced(t, "leaks")
    _, summ = traced(t, "leaks", (), ("--summary-sites", "2"))
    t.eq("summary_mode", {"site_table_full": True, "peak_in_arrival_order": False},
         summ.get("summary_mode"))
    t.eq("what only events tell is unknown (null)", [None] * 4,
         [summ["totals"].get(k, "missing") for k in
          ("temporary_allocations", "reallocs", "ignored_frees", "reused_addresses")])
    t.eq("sites' temporary_allocations (null)", {None}, {s.get("temporary_allocations", "missing")
                                                         for s in summ["sites"]})
    over = [s for s in summ["sites"] if s.get("overflow")]
    t.eq("overflow rows", 1, len(over))
    t.eq("rows", 3, len(summ["sites"]))
    for f in ("allocations", "bytes_allocated", "frees", "leaked_bytes"):
        t.eq("total %s" % f, full["totals"][f], summ["totals"][f])
        t.eq("sum of rows' %s" % f, full["totals"][f], sum(s[f] for s in summ["sites"]))


def t_converts(t):
    # A summary holds totals per site, no events: the formats that show
    # events over time refuse it with a message; the stack formats name
    # the overflow row for what it is.
    tr, summ = traced(t, "leaks", (), ("--summary-sites", "2"))
    over = [s for s in summ["sites"] if s.get("overflow")]
    t.need(len(over) == 1, "no overflow row in the summary")
    for fmt in ("events", "heaptrack", "chrome", "massif"):
        p = run([str(HT), "convert", "--format", fmt, str(tr.out_path)], TIMEOUT)
        t.eq("convert --format %s of a summary: exit status" % fmt, 1, p.rc)
        t.check("is a summary trace" in text(p.err) and "pprof, folded or flamegraph" in text(p.err),
                "convert --format %s of a summary: no clear message: %s" % (fmt, tail(p.err)))
        t.eq("convert --format %s of a summary: output" % fmt, "", text(p.out))
    p = run([str(HT), "convert", "--format", "folded", str(tr.out_path)], TIMEOUT)
    t.eq("convert --format folded of a summary: exit status", 0, p.rc)
    rows = [l for l in text(p.out).splitlines()
            if l.startswith("[all other sites: the summary's site table was full] ")]
    t.eq("folded: the overflow row, named, with its bytes",
         ["[all other sites: the summary's site table was full] %d" % over[0]["bytes_allocated"]], rows)
    t.check("[unknown stack]" not in text(p.out), "folded still calls a row an unknown stack")
    # temporaries are unknown: the flame graph says so, --cost temporary is refused
    p = run([str(HT), "convert", "--format", "flamegraph", str(tr.out_path)], TIMEOUT)
    sub = re.search(r'<text class="sub" id="subtitle"[^>]*>([^<]*)<', text(p.out))
    t.check(sub and "\u00b7 ? temporary" in sub.group(1),
            "flamegraph subtitle of a summary: temporaries not shown as unknown: %r" % (sub and sub.group(1)))
    for fmt in ("folded", "flamegraph"):
        p = run([str(HT), "convert", "--format", fmt, "--cost", "temporary", str(tr.out_path)], TIMEOUT)
        t.eq("convert --format %s --cost temporary of a summary: exit status" % fmt, 1, p.rc)
        t.check("is a summary trace" in text(p.err) and "--cost temporary" in text(p.err),
                "convert --format %s --cost temporary of a summary: no clear message: %s" % (fmt, tail(p.err)))
        t.eq("convert --format %s --cost temporary of a summary: output" % fmt, "", text(p.out))


def t_no_event_views(t):
    # What needs events is refused with a message, never shown as empty
    # (--by-tag once said "the program tags no blocks" of a program that does)
    tr, summ = traced(t, "tags_phases", (), ("--summary",))
    for opt in (["--by-tag"], ["--tag", "node"], ["--functions"]):
        p = run([str(HT), "report"] + opt + [str(tr.out_path)], TIMEOUT)
        t.eq("report %s of a summary: exit status" % opt[0], 1, p.rc)
        t.check("is a summary trace" in text(p.err), "report %s: no clear message: %s" % (opt[0], tail(p.err)))
    for fmt in ("text", "json"):
        p = run([str(HT), "leaks", "--growth", "--format", fmt, str(tr.out_path)], TIMEOUT)
        t.eq("leaks --growth --format %s of a summary: exit status" % fmt, 1, p.rc)
        t.check("is a summary trace" in text(p.err) and "--growth" in text(p.err),
                "leaks --growth --format %s: no clear message: %s" % (fmt, tail(p.err)))
        t.eq("leaks --growth --format %s of a summary: output" % fmt, "", text(p.out))
    p = run([str(HT), "report", str(tr.out_path)], TIMEOUT)
    t.check("no tables of heaptrail.h's tags, phases, pools and snapshots" in text(p.out),
            "the text report does not say what a summary lacks: %s" % tail(p.out, 600))


def t_bounded(t):
    a, sa = traced(t, "churn", ("20000",), ("--summary",), name="churn-short")
    b, sb = traced(t, "churn", ("400000",), ("--summary",), name="churn-long")
    t.check(sb["totals"]["allocations"] >= 15 * sa["totals"]["allocations"],
            "the long run is not longer: %d vs %d allocations" % (
                sb["totals"]["allocations"], sa["totals"]["allocations"]))
    za, zb = os.path.getsize(a.out_path), os.path.getsize(b.out_path)
    t.check(zb < 2 * za + 4096, "summary grew with the run: %d B -> %d B" % (za, zb))


def t_env_only(t):
    need_tools(t)
    out = os.path.join(str(t.tmp), "env.ht")
    env = dict(os.environ, LD_PRELOAD=str(AGENT), HEAPTRAIL_OPTIONS="summary=1,output=" + out)
    p = run([str(PROGS / "leaks")], TIMEOUT, env=env)
    t.eq("exit status", 0, p.rc)
    t.need(os.path.exists(out), "no summary file at %s" % out)
    rep = report(out, "json")
    t.need(rep.data, "report failed: %s" % rep.err)
    _, full = traced(t, "leaks")
    t.eq("allocations", full["totals"]["allocations"], rep.data["totals"]["allocations"])


def t_leak_classes(t):
    tr, _ = traced(t, "leak_classes", ("list",), ("--summary",))
    rows = tracefile.summary_rows(str(tr.out_path))
    kinds = [0, 0, 0, 0]
    for r in rows:
        for k in range(4):
            kinds[k] += r["kind_blocks"][k]
    t.eq("definite, indirect, possible, reachable blocks", [1, 9, 0, 5], kinds)


def queries_test(opts):
    def fn(t):
        tr, _ = traced(t, "queries", (), opts)
        lines = {}
        for ln in text(tr.proc.out).splitlines():
            f = ln.split()
            if len(f) == 8:
                lines[f[0]] = [int(x) for x in f[1:]]
        t.eq("steps", ["end", "freed", "grown", "pooled", "start", "two"], sorted(lines))
        s = lines["start"]
        want = {
            "two": [s[0] + 2, s[1], s[2] + 4000, s[3] + 4000, s[4] + 2, None, 0],
            "freed": [s[0] + 2, s[1] + 1, s[2] + 4000, s[3] + 1000, s[4] + 1, None, 0],
            "grown": [s[0] + 3, s[1] + 2, s[2] + 6000, s[3] + 2000, s[4] + 1, None, 0],
            "end": [s[0] + 3, s[1] + 3, s[2] + 6000, s[3], s[4], None, 0],
            # a pool reset frees its 3 blocks: counted as the report does
            "pooled": [s[0] + 6, s[1] + 6, s[2] + 6048, s[3], s[4], None, 0],
        }
        t.eq("start's return code", 0, s[6])
        for step, w in want.items():
            got = lines[step]
            t.eq(step, [x for x in w if x is not None], [g for g, x in zip(got, w) if x is not None])
            t.check(got[5] >= s[3] + 4000, "%s: peak %d below start+4000" % (step, got[5]))
    return fn


def t_cross_thread(t):
    _, full = traced(t, "pingpong")
    for i in range(3):
        _, summ = traced(t, "pingpong", (), ("--summary",), name="pingpong.%d" % i)
        for f in ("allocations", "bytes_allocated"):
            t.eq("run %d: totals.%s" % (i + 1, f), full["totals"][f], summ["totals"][f])
        fs = {key(s): (s["allocations"], s["bytes_allocated"]) for s in full["sites"]}
        ss = {key(s): (s["allocations"], s["bytes_allocated"]) for s in summ["sites"]}
        t.eq("run %d: allocations and bytes of each site" % (i + 1), fs, ss)
        d = full["totals"]["frees"] - summ["totals"]["frees"]
        t.check(d == 0, "run %d: frees %d, the full trace's %d" %
                (i + 1, summ["totals"]["frees"], full["totals"]["frees"]))


def t_handback(t):
    _, full = traced(t, "handback")
    tot = ("allocations", "frees", "bytes_allocated", "leaked_blocks", "leaked_bytes")
    for i in range(2):
        _, summ = traced(t, "handback", (), ("--summary",), name="handback.%d" % i)
        t.eq("run %d: totals" % (i + 1), {f: full["totals"][f] for f in tot},
             {f: summ["totals"][f] for f in tot})
        own = [s for s in summ["sites"] if s["stack"][0].get("function") in ("thread_a", "thread_b")]
        t.eq("run %d: the program's own blocks (handback.c's header)" % (i + 1),
             {"allocations": 2, "frees": 2, "bytes_allocated": 96, "leaked_blocks": 0},
             {f: sum(s[f] for s in own) for f in ("allocations", "frees", "bytes_allocated",
                                                   "leaked_blocks")})


def t_prodcons(t):
    _, full = traced(t, "prodcons")
    tot = ("allocations", "frees", "bytes_allocated", "leaked_blocks", "leaked_bytes")
    # prodcons.c's header, default arguments
    want = {"allocations": 150000, "frees": 149658, "bytes_allocated": 17325000,
            "leaked_blocks": 342, "leaked_bytes": 54810}
    classes = {"definite_blocks": 150, "definite_bytes": 32250, "indirect_blocks": 0,
               "reachable_blocks": 192, "reachable_bytes": 22560}
    for i in range(2):
        tr, summ = traced(t, "prodcons", (), ("--summary",), name="prodcons.%d" % i)
        t.eq("run %d: exit status" % (i + 1), 0, tr.proc.rc)
        t.eq("run %d: totals" % (i + 1), {f: full["totals"][f] for f in tot},
             {f: summ["totals"][f] for f in tot})
        site = [s for s in summ["sites"] if s["stack"][0].get("function") == "produce_block"]
        if len(site) != 1:
            t.fatal("run %d: %d sites of produce_block: %r" % (
                i + 1, len(site), [s["stack"][:1] for s in summ["sites"]]))
        t.eq("run %d: produce_block" % (i + 1), want, {f: site[0][f] for f in tot})
        t.eq("run %d: classes" % (i + 1), classes, {k: summ["totals"][k] for k in classes})


def images_by_command(t, tr):
    """Every trace of a run, by its program's basename: [(forked, data)]."""
    out = {}
    for p in tr.files():
        if p.suffix == ".json":
            continue
        rep = report(p, "json")
        if rep.err or rep.proc.rc != 0:
            t.check(False, "report of %s failed: %s" % (p.name, rep.err))
            continue
        cmd = rep.data.get("program", {}).get("command") or ["?"]
        out.setdefault(os.path.basename(cmd[0]), []).append(
            (bool(rep.data["program"].get("forked")), rep.data))
    return out


def figures(data):
    tot = data.get("totals", {})
    return {k: tot.get(k) for k in ("allocations", "frees", "bytes_allocated", "leaked_blocks",
                                    "leaked_bytes")}


def t_json_suppressed(t):
    """FILE.json applies the suppressions as the report does: --suppressions
    given to run, and the built-in ones."""
    need_tools(t)
    supp = t.tmp / "supp.txt"
    supp.write_text("leak:leak_big\n")
    tr = heaptrail_run([str(PROGS / "leaks")], ("--summary", "--suppressions", str(supp)),
                       timeout=TIMEOUT)
    t.eq("exit status", 0, tr.proc.rc)
    jpath = str(tr.out_path) + ".json"
    t.need(os.path.exists(jpath), "no %s" % jpath)
    written = json.load(open(jpath))
    rep = report(tr.out_path, "json", ("--suppressions", str(supp)))
    if rep.err:
        t.fatal(rep.err)
    t.eq("suppressed bytes in FILE.json", 4096, written["totals"].get("suppressed_bytes"))
    t.eq("FILE.json totals == report's with the same suppressions", rep.data["totals"],
         written["totals"])
    t.eq("FILE.json leaks == report's", rep.data.get("leaks"), written.get("leaks"))


def t_exec(t):
    """The image that execs writes its sites before the exec; the new image
    has its own file."""
    need_tools(t)
    tr = heaptrail_run([str(PROGS / "exec_parent")], ("--summary",), out_name="x.%p.ht",
                       timeout=TIMEOUT)
    t.eq("exit status", 0, tr.proc.rc)
    imgs = images_by_command(t, tr)
    t.eq("images", ["exec_parent", "exec_target"], sorted(imgs))
    if "exec_parent" in imgs:
        d = imgs["exec_parent"][0][1]
        t.eq("exec_parent figures", {"allocations": 2, "frees": 1, "bytes_allocated": 5555,
                                     "leaked_blocks": 1, "leaked_bytes": 4321}, figures(d))
        t.check(isinstance(d.get("summary_mode"), dict), "exec_parent's trace is not a summary")
    if "exec_target" in imgs:
        t.eq("exec_target figures", {"allocations": 3, "frees": 2, "bytes_allocated": 3000,
                                     "leaked_blocks": 1, "leaked_bytes": 1000},
             figures(imgs["exec_target"][0][1]))


def t_fork_child(t):
    """A child forked after the writer digested the parent's events holds
    its own allocations only."""
    need_tools(t)
    tr = heaptrail_run([str(PROGS / "fork_digested")], ("--summary",), out_name="f.%p.ht",
                       timeout=TIMEOUT)
    t.eq("exit status", 0, tr.proc.rc)
    got = {forked: figures(d) for forked, d in images_by_command(t, tr).get("fork_digested", [])}
    t.eq("parent and child figures",
         {False: {"allocations": 21, "frees": 20, "bytes_allocated": 2280, "leaked_blocks": 1,
                  "leaked_bytes": 1000},
          True: {"allocations": 10, "frees": 10, "bytes_allocated": 330, "leaked_blocks": 0,
                 "leaked_bytes": 0}}, got)


TESTS = [
    ("summary.sites.leaks", site_test("leaks")),
    ("summary.sites.peak", site_test("peak")),
    ("summary.sites.churn", site_test("churn", ("3000",))),
    ("summary.sites.threads", site_test("threads", (), with_peak=False)),
    ("summary.run_output", t_run_output),
    ("summary.overflow", t_overflow),
    ("summary.converts", t_converts),
    ("summary.no_event_views", t_no_event_views),
    ("summary.bounded", t_bounded),
    ("summary.env_only", t_env_only),
    ("summary.cross_thread", t_cross_thread),
    ("summary.handback", t_handback),
    ("summary.prodcons", t_prodcons),
    ("summary.leak_classes", t_leak_classes),
    ("summary.exec", t_exec),
    ("summary.json_suppressed", t_json_suppressed),
    ("summary.fork_child", t_fork_child),
    ("queries.trace", queries_test(())),
    ("queries.summary", queries_test(("--summary",))),
]
