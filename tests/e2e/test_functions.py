"""test_functions.py - the function profiler, end to end: programs
built with -finstrument-functions (tests/programs/fn_*.c) run under
`heaptrail run --functions`, and the call trees of
`heaptrail report --functions` are checked against what each program does
by construction.

  functions.calls        fn_calls: exact call counts, recursion folded at the
                         tree's depth cap, busy()'s self time
  functions.heap         fn_calls: own heap per function = what it allocates
                         itself; inclusive heap of its callers
  functions.invariants   every tree: self <= total, children's totals <= the
                         parent's, heap = own + children's heap
  functions.threads      fn_threads: one tree per thread, nothing mixed
  functions.manual       fn_manual with --start-off: only the region between
                         heaptrail_set_recording(1) and (0) is recorded
  functions.text         the text report: rows, units, top tables, options
  functions.noflag       a program built without the flag: the clear message
  functions.chrome       convert --format chrome: the spans on each thread's
                         track, under the same Trace Event rules as the
                         memory export

Reports run with the ASan+UBSan CLI, so a memory error fails the test.
"""

import re

from harness import (PROGS, heaptrail_run, memo, need_tools, report, report_cli, run, tail,
                     text)

TIMEOUT = 60
NO_EVENTS = "no function events: build the program with -finstrument-functions and run with --functions"


# ---- shared steps -------------------------------------------------------------------

def traced(t, prog, opts=("--functions",)):
    """(trace path, JSON report with --functions) of prog; memoised."""
    need_tools(t)
    p = PROGS / prog
    t.need(p.exists(), "%s not built (make programs)" % p)

    def go():
        tr = heaptrail_run([p], list(opts), timeout=TIMEOUT)
        if tr.proc.timed_out or not tr.out_path.exists():
            return tr, None, "heaptrail run failed: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        if tr.proc.rc != 0:
            return tr, None, "%s exited %s: %s" % (prog, tr.proc.rc, tail(tr.proc.err))
        rep = report(tr.out_path, "json", ["--functions"])
        if rep.err:
            return tr, rep, rep.err
        if rep.proc.rc != 0:
            return tr, rep, "report --functions exited %s: %s" % (rep.proc.rc, tail(rep.proc.err))
        return tr, rep, None
    tr, rep, err = memo(("fn",) + (prog,) + tuple(opts), go)
    if err:
        t.fatal(err)
    fn = rep.data.get("functions")
    t.need(isinstance(fn, dict), "the JSON report has no \"functions\" object")
    return tr.out_path, rep.data, fn


def nodes(tree, path=()):
    """(path of function names, node) for every node below a root."""
    for c in tree.get("children", []):
        p = path + (c["function"],)
        yield p, c
        yield from nodes(c, p)


def child(node, name):
    kids = [c for c in node.get("children", []) if c.get("function") == name]
    return kids[0] if len(kids) == 1 else None


def thread_of(fn, top):
    """The thread whose tree has `top` right under its root."""
    found = [th for th in fn["threads"] if child(th["tree"], top)]
    return found[0] if len(found) == 1 else None


def main_tree(t, fn):
    th = thread_of(fn, "main")
    t.need(th, "no thread with main() at the top of its tree: %r" %
           [[c.get("function") for c in x["tree"]["children"]] for x in fn["threads"]])
    return th, child(th["tree"], "main")


def by_function(fn):
    return {f["function"]: f for f in fn["by_function"]}


# ---- fn_calls ------------------------------------------------------------------------

def t_calls(t):
    _, rep, fn = traced(t, "fn_calls")
    t.eq("functions.recorded", True, fn.get("recorded"))
    th, main = main_tree(t, fn)
    t.eq("main calls", 1, main["calls"])
    t.eq("main's children", ["busy", "own_alloc", "rec", "repeat", "via_callee"],
         sorted(c["function"] for c in main["children"]))
    rp = child(main, "repeat")
    t.need(rp, "no repeat under main")
    t.eq("repeat calls", 1, rp["calls"])
    leaf = child(rp, "leaf")
    t.need(leaf, "no leaf under repeat")
    t.eq("leaf calls (a loop of 1000)", 1000, leaf["calls"])
    t.eq("own_alloc calls", 4, child(main, "own_alloc")["calls"])
    vc = child(main, "via_callee")
    t.eq("via_callee calls", 2, vc["calls"])
    t.eq("alloc_helper calls (3 per via_callee)", 6, child(vc, "alloc_helper")["calls"])
    # rec(300): one node per level down to the cap, the rest folded into the last
    chain, n = [], child(main, "rec")
    while n:
        chain.append(n)
        n = child(n, "rec")
    cap = fn.get("depth_cap")
    t.eq("rec levels in the tree (main is level 1; the cap is %r)" % cap, cap - 1, len(chain))
    t.eq("rec calls: one per level, the rest folded", 300,
         sum(x["calls"] for x in chain) + sum(x["folded_calls"] for x in chain))
    t.eq("folded into the deepest rec", 300 - (cap - 1), chain[-1]["folded_calls"])
    t.eq("depth_capped", True, fn.get("depth_capped"))
    t.eq("thread's deepest stack (main + 300 rec)", 301, th["max_depth"])
    t.eq("calls still open at the end", 0, th["closed_at_end"])
    bf = by_function(fn)
    t.eq("rec calls by function", 300, bf.get("rec", {}).get("calls"))
    t.eq("leaf calls by function", 1000, bf.get("leaf", {}).get("calls"))
    t.eq("calls in the trace (1+1000+1+300+4+2+6+1)", 1315, fn.get("calls"))
    # busy() spins 20 ms in its own code and calls nothing instrumented
    busy = child(main, "busy")
    t.check(busy["self_ns"] >= 19000000, "busy's self time %d ns < the ~20 ms it spins" % busy["self_ns"])
    t.eq("busy: self == total (no instrumented callee)", busy["total_ns"], busy["self_ns"])
    t.check(main["total_ns"] >= busy["total_ns"] + leaf["total_ns"],
            "main's total is less than two of its descendants'")
    # the names are symbolized with their source
    t.check(all(f.get("file", "").endswith("fn_calls.c") and f.get("line")
                for f in fn["by_function"]),
            "functions without file:line: %r" % [f["function"] for f in fn["by_function"]
                                                 if not f.get("line")])


def t_heap(t):
    _, rep, fn = traced(t, "fn_calls")
    th, main = main_tree(t, fn)
    bf = by_function(fn)
    # own heap: what each function allocates itself (see fn_calls.c)
    expect = {"own_alloc": (4 * (100 + 24 + 200), 12), "alloc_helper": (6 * 64, 6),
              "main": (0, 0), "via_callee": (0, 0), "repeat": (0, 0), "leaf": (0, 0),
              "rec": (0, 0), "busy": (0, 0)}
    for name, (b, n) in expect.items():
        f = bf.get(name)
        t.need(f, "%s missing from by_function" % name)
        t.eq("%s own bytes" % name, b, f["own_bytes"])
        t.eq("%s own allocations" % name, n, f["own_allocations"])
    vc = child(main, "via_callee")
    t.eq("via_callee inclusive heap (through alloc_helper)", [384, 6],
         [vc["heap_bytes"], vc["heap_allocations"]])
    t.eq("via_callee own heap", [0, 0], [vc["own_bytes"], vc["own_allocations"]])
    t.eq("main inclusive heap", [1680, 18], [main["heap_bytes"], main["heap_allocations"]])
    # the whole program's heap is main's: nothing allocated outside it
    tot = rep["totals"]
    t.eq("report totals vs main's inclusive heap", [tot["allocations"], tot["bytes_allocated"]],
         [main["heap_allocations"], main["heap_bytes"]])
    # by_function is ranked by own bytes: own_alloc first, then alloc_helper
    t.eq("ranking by own bytes", ["own_alloc", "alloc_helper"],
         [f["function"] for f in fn["by_function"][:2]])


def check_invariants(t, prog, opts=("--functions",)):
    _, _, fn = traced(t, prog, opts)
    t.need(fn["threads"], "no threads in the function profile of %s" % prog)
    bad = []
    for th in fn["threads"]:
        root = th["tree"]
        t.check(root.get("root") is True and root.get("function") is None,
                "tid %d: the tree's root is not marked as the thread" % th["tid"])
        for path, n in [((), root)] + list(nodes(root)):
            kids = n["children"]
            where = "tid %d %s" % (th["tid"], "/".join(path) or "(root)")
            if path and n["self_ns"] > n["total_ns"]:
                bad.append("%s: self %d > total %d" % (where, n["self_ns"], n["total_ns"]))
            if sum(c["total_ns"] for c in kids) > n["total_ns"]:
                bad.append("%s: children's totals %d > its total %d" %
                           (where, sum(c["total_ns"] for c in kids), n["total_ns"]))
            if n["heap_bytes"] != n["own_bytes"] + sum(c["heap_bytes"] for c in kids):
                bad.append("%s: heap != own + children's heap" % where)
            if n["heap_allocations"] != n["own_allocations"] + sum(c["heap_allocations"] for c in kids):
                bad.append("%s: heap allocations != own + children's" % where)
            if path and n["calls"] < 1:
                bad.append("%s: a node without calls" % where)
    t.check(not bad, "; ".join(bad[:5]) + (" (+%d more)" % (len(bad) - 5) if len(bad) > 5 else ""))


# ---- fn_threads ----------------------------------------------------------------------

def t_threads(t):
    _, rep, fn = traced(t, "fn_threads")
    a, b = thread_of(fn, "worker_a"), thread_of(fn, "worker_b")
    t.need(a and b, "worker_a and worker_b are not each at the top of one thread's tree")
    t.check(a["tid"] != b["tid"], "both workers on tid %d" % a["tid"])
    main, _ = main_tree(t, fn)
    t.check(main["tid"] == rep["program"]["pid"], "main() is not on the main thread")
    t.eq("threads with function events", 3, len(fn["threads"]))
    t.eq("the main thread first", rep["program"]["pid"], fn["threads"][0]["tid"])
    for th, top, step, n, size in ((a, "worker_a", "a_step", 100, 10),
                                   (b, "worker_b", "b_step", 200, 20)):
        w = child(th["tree"], top)
        t.eq("%s's tree: the worker alone at the top" % top, [top],
             [c["function"] for c in th["tree"]["children"]])
        s = child(w, step)
        t.need(s, "no %s under %s" % (step, top))
        t.eq("%s calls" % step, n, s["calls"])
        t.eq("%s own heap" % step, [n * size, n], [s["own_bytes"], s["own_allocations"]])
        t.eq("%s's only child" % top, [step], [c["function"] for c in w["children"]])
    names = {p[-1] for p, _ in nodes(a["tree"])}
    t.check(not names & {"worker_b", "b_step", "main"}, "thread A's tree holds %r" % names)


# ---- fn_manual -----------------------------------------------------------------------

def t_manual(t):
    _, rep, fn = traced(t, "fn_manual", ("--functions", "--start-off"))
    t.eq("started_off", True, fn.get("started_off"))
    t.check(fn.get("switches", 0) >= 2, "expected the on and off switches, got %r" % fn.get("switches"))
    names = set()
    for th in fn["threads"]:
        names |= {p[-1] for p, _ in nodes(th["tree"])}
    t.check("region" in names, "region() missing from the profile: %r" % names)
    t.check(not names & {"before", "after", "main"},
            "functions outside the enabled region were recorded: %r" % (names & {"before", "after", "main"}))
    # the heaptrail.h wrappers (static inline, instrumented) may show up
    t.check(names <= {"region", "heaptrail_set_recording", "heaptrail__set_recording"},
            "unexpected functions: %r" % names)
    bf = by_function(fn)
    r = bf.get("region", {})
    t.eq("region calls", 7, r.get("calls"))
    t.eq("region own heap", [70, 7], [r.get("own_bytes"), r.get("own_allocations")])
    # the heap is recorded only while on: region's 7 blocks and nothing else
    tot = rep["totals"]
    t.eq("allocations recorded", 7, tot["allocations"])
    t.eq("bytes recorded", 70, tot["bytes_allocated"])
    # frees while off are recorded (the block may be one made while on),
    # but not before recording was first on: after()'s 3, not before()'s 5
    t.eq("frees of blocks not in the trace", 3, tot["ignored_frees"])


# ---- the text report and the options -----------------------------------------------------

def t_text(t):
    path, _, fn = traced(t, "fn_calls")
    cli = report_cli()
    p = run([cli, "report", "--functions", "--memory", "--time-unit", "us", path], TIMEOUT)
    t.need(p.rc == 0, "report --functions --memory exited %s: %s" % (p.rc, tail(p.err)))
    out = text(p.out)
    t.check("times in us" in out, "the unit is not stated: %s" % tail(out, 300))
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] in ("main", "repeat", "leaf", "own_alloc"):
            rows.setdefault(f[0], f)
    t.eq("leaf row: calls", "1,000", rows.get("leaf", [None, None])[1])
    t.check(rows.get("main") and "." in rows["main"][2], "main's total is not in us with decimals: %r"
            % rows.get("main"))
    t.check(out.index("  main") < out.index("    repeat") < out.index("      leaf"),
            "the tree is not indented main > repeat > leaf")
    top = out[out.find("Top functions by own bytes"):]
    lines = top.splitlines()
    t.check(len(lines) > 2 and "own_alloc" in lines[2],
            "own_alloc is not #1 by own bytes: %s" % tail(top, 300))
    t.check("Top functions by own allocation count" in out, "no table by own allocation count")
    t.check("folded" in out, "the folded recursion is not said")
    # default unit: a readable one, stated
    p = run([cli, "report", "--functions", path], TIMEOUT)
    t.check(p.rc == 0 and "times in " in text(p.out), "report --functions: %s" % tail(p.err))
    t.check("own heap" not in text(p.out), "heap columns without --memory")
    # usage errors
    for bad in (["--time-unit", "hours", "--functions"], ["--memory"], ["--time-unit", "ms"]):
        p = run([cli, "report"] + bad + [path], TIMEOUT)
        t.eq("exit status of report %s" % " ".join(bad), 2, p.rc)
    # the JSON report keeps its contract with --functions: the same fields
    plain = report(path, "json")
    t.need(plain.data, "plain JSON report: %s" % plain.err)
    _, withfn, _ = traced(t, "fn_calls")
    t.eq("JSON keys with --functions, besides \"functions\"", sorted(plain.data),
         sorted(k for k in withfn if k != "functions"))
    t.check("functions" not in plain.data, "\"functions\" in the JSON report without --functions")


def t_flat(t):
    """The flat profile comes first, one line per function with all its
    calls (rec: 300, its recursive calls too) and a total counted once per
    outermost call (rec's is at most main's); --top bounds the trees."""
    path, _, fn = traced(t, "fn_calls")
    cli = report_cli()
    p = run([cli, "report", "--functions", "--time-unit", "ns", "-n", "0", path], TIMEOUT)
    t.need(p.rc == 0, "report --functions exited %s: %s" % (p.rc, tail(p.err)))
    out = text(p.out)
    t.check(out.find("FLAT PROFILE") >= 0 and out.find("FLAT PROFILE") < out.find("CALL TREES"),
            "the flat profile does not come before the trees: %s" % tail(out, 400))
    flat = out[out.find("FLAT PROFILE"):out.find("CALL TREES")]
    rows = {}
    for line in flat.splitlines():
        f = line.split()
        if len(f) >= 6 and f[-1] in ("main", "rec", "leaf", "own_alloc", "busy"):
            t.check(f[-1] not in rows, "%s has two lines in the flat profile" % f[-1])
            rows[f[-1]] = f
    t.eq("flat: rec's calls (recursive ones too)", "300", rows.get("rec", [None] * 4)[3])
    t.eq("flat: leaf's calls", "1,000", rows.get("leaf", [None] * 4)[3])
    num = lambda v: float(v.replace(",", ""))
    if "rec" in rows and "main" in rows:
        t.check(num(rows["rec"][2]) <= num(rows["main"][2]),
                "rec's total %s exceeds main's %s: counted at every level" % (rows["rec"][2], rows["main"][2]))
    first = [ln.split() for ln in flat.splitlines() if ln.split()[-1:] and ln.split()[-1] in rows]
    t.check(first and first[0][-1] == "busy", "busy (it spins) is not first by self time: %s"
            % (first[0] if first else None))
    # JSON: each function's total once per outermost call
    bf = {f.get("function"): f for f in fn.get("by_function", [])}
    if "rec" in bf and "main" in bf:
        t.check(0 < bf["rec"]["total_ns"] <= bf["main"]["total_ns"], "JSON total_ns: rec %s, main %s"
                % (bf["rec"].get("total_ns"), bf["main"].get("total_ns")))
    # --top 1: one callee per call, the rest in one line
    all_lines = len(out.splitlines())
    p = run([cli, "report", "--functions", "-n", "1", path], TIMEOUT)
    t.need(p.rc == 0, "report --functions -n 1: %s" % tail(p.err))
    o1 = text(p.out)
    t.check(re.search(r"^ +\.\.\. \d+ more callees \([\d,]+ calls; --top 0 shows all\)$", o1, re.M),
            "--top 1: no 'more callees' line: %s" % tail(o1, 600))
    t.check(len(o1.splitlines()) < all_lines, "--top 1 does not bound the tree")


def t_noflag(t):
    need_tools(t)
    prog = PROGS / "peak"
    t.need(prog.exists(), "%s not built" % prog)
    tr = heaptrail_run([prog], ["--functions"], timeout=TIMEOUT)
    t.need(tr.out_path.exists(), "no trace: %s" % tail(tr.proc.err))
    p = run([report_cli(), "report", "--functions", tr.out_path], TIMEOUT)
    t.eq("exit status", 0, p.rc)
    t.check(NO_EVENTS in text(p.out), "the message is not in the report: %s" % tail(p.out, 300))
    rep = report(tr.out_path, "json", ["--functions"])
    t.need(rep.data, "JSON: %s" % rep.err)
    fn = rep.data.get("functions", {})
    t.eq("functions.recorded", False, fn.get("recorded"))
    t.eq("functions.message", NO_EVENTS, fn.get("message"))
    t.eq("functions.threads", [], fn.get("threads"))
    # the memory profile is there as always
    t.check(rep.data["totals"]["allocations"] > 0, "no allocations in the report")


# ---- chrome ---------------------------------------------------------------------------

def t_chrome(t):
    import json
    import test_export_graphs
    path, rep, fn = traced(t, "fn_threads")
    out = t.tmp / "fn_threads.json"
    p = run([report_cli(), "convert", "--format", "chrome", "-o", out, path], TIMEOUT)
    t.need(p.rc == 0, "convert --format chrome exited %s: %s" % (p.rc, tail(p.err)))
    doc = json.loads(out.read_text())
    evs = test_export_graphs.trace_rules(t, doc)
    spans = [e for e in evs if e.get("cat") == "function"]
    t.need(spans, "no function spans in the chrome export (is report/chrome.c calling "
                  "ht_functions_chrome_spans?)")
    begins = {}
    for e in spans:
        if e["ph"] == "B":
            begins.setdefault(e["tid"], []).append(e["name"])
    a, b = thread_of(fn, "worker_a"), thread_of(fn, "worker_b")
    t.need(a and b, "workers not found in the profile")
    t.eq("a_step spans on worker A's track", 100, begins.get(a["tid"], []).count("a_step"))
    t.eq("b_step spans on worker B's track", 200, begins.get(b["tid"], []).count("b_step"))
    t.check(not {"b_step", "worker_b"} & set(begins.get(a["tid"], [])),
            "worker B's functions on worker A's track")
    t.eq("spans on tracks of the traced pid", {rep["program"]["pid"]}, {e["pid"] for e in spans})
    # Chrome DevTools' trace engine (the memory export's client check) reads
    # the spans as slices of the right threads
    d = test_export_graphs.clients_dir(t)
    p = run(["node", "--input-type=module", "-e", test_export_graphs.TRACE_ENGINE_JS, out],
            TIMEOUT, cwd=str(d))
    if p.rc != 0 or p.timed_out:
        t.fatal("DevTools' trace engine failed on the export: %s: %s" % (p.describe(), tail(p.err)))
    res = json.loads(text(p.out).strip().splitlines()[-1])
    seen = {th["tid"]: [e["name"] for e in th["entries"]] for th in res["threads"]}
    t.eq("DevTools: a_step slices on worker A", 100, seen.get(a["tid"], []).count("a_step"))
    t.eq("DevTools: b_step slices on worker B", 200, seen.get(b["tid"], []).count("b_step"))


TESTS = [
    ("functions.calls", t_calls),
    ("functions.heap", t_heap),
    ("functions.invariants.fn_calls", lambda t: check_invariants(t, "fn_calls")),
    ("functions.invariants.fn_threads", lambda t: check_invariants(t, "fn_threads")),
    ("functions.invariants.fn_manual",
     lambda t: check_invariants(t, "fn_manual", ("--functions", "--start-off"))),
    ("functions.threads", t_threads),
    ("functions.manual", t_manual),
    ("functions.text", t_text),
    ("functions.flat", t_flat),
    ("functions.noflag", t_noflag),
    ("functions.chrome", t_chrome),
]
