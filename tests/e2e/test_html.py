"""test_html.py - `heaptrail report --format html`: one self-contained file,
driven in real headless Chromium (playwright-core; tests/e2e/clients/
html_check.cjs) on tests/programs/html_report.c, whose figures are known by
construction and whose function names and arguments are markup.

  html.report   the file references nothing outside itself (no URL, no
                src, no fetch; two script elements, the data one JSON);
                in the browser: no console error, no network request; the
                summary's figures equal the JSON report's of the same trace
                and the program's; a click on temp_loop's flame-graph frame
                zooms it to the full width; searching "leak_" sums the two
                leaking frames (2003 B); the sites table sorts by
                allocations both ways; a time window over the first half
                leaves temp_loop's 100 allocations alone; leaks, sizes and
                temporaries show the program's figures; the markup names
                (ESC, <img onerror>, </script>) are shown as text and
                window.__pwned stays undefined; caller/callee of main and
                leak_a; the sites stacked over time at their highest; a
                window over the whole run counts the sites' allocations,
                the leaks (live at its end) or the JSON report's peak bytes
                (its high-water mark); the filters (only leaked, alive for
                at least 20 ms, alive at the end and between the phases,
                through or not through a function, thread, module) leave
                the sites the program makes them
  html.modes    summary-mode and sampled traces open with no error, say
                what they lack, and show the JSON report's totals
  html.diff     `heaptrail diff --format html -o` on diffprog 1 -> 2 (the
                programs of test_diff.py): self-contained; in the browser
                the totals side by side equal `diff --format json`'s; the
                differential flame graph's root holds both sides' totals,
                grow's frame its 1000 B -> 2000 B, coloured as growth and
                only_old's as a shrink, and a click zooms it to the width;
                the changes table holds every row of the JSON diff with
                both sides' figures, sorts by the change both ways, and
                shows a row's stack
  html.firefox  the report's and the diff's pages open from disk in headless
                Firefox (firefox-esr over WebDriver BiDi, a fresh offline
                profile): the script runs to its end, every tab opens, no
                error is logged and nothing is requested; the figures are
                the JSON report's
  html.threads  named_threads (tests/programs/named_threads.c): the thread
                filter leaves worker-1's and worker-2's 100 allocations of
                10 B each at their shared site, and every thread together
                gives the JSON report's figures
  html.blocks   html_blocks (tests/programs/html_blocks.c: two threads
                through one site, temporaries and leaks of known sizes):
                the filters combine per block: thread, only leaked, only
                temporaries, alive at the end, alive for at least 20 ms and
                the window's modes, alone and together, give each site's
                bytes, allocations, peak bytes, leaked bytes and
                temporaries as the program makes them (thread blk-2 with
                only temporaries: 30 blocks, 6000 B, where per site it
                would be 70 or 36)
  html.sampled  the same program sampled: the sites table and the trees
                show each estimate with the half width of its 95%
                interval, the sites' equal to the JSON report's, and keep
                one under a filter; the flame graph's tooltip shows it
  html.rows     the block table of threads, html_report and html_blocks,
                decoded here: with no filter its rows sum to every site's
                allocations, bytes, peak bytes (the rows live at the high
                of the peak's bucket), leaked bytes and blocks and
                temporaries in the JSON report
  html.cli      -o without --format html, the trace as -o, and -o through
                a symbolic link are refused; - writes to stdout

Reports run with the ASan+UBSan CLI, so a memory error fails the test.
"""

import base64
import json
import os
import re
import shutil

import harness
from harness import (PROGS, ROOT, asan_env, heaptrail_run, memo, need_tools, report,
                     report_cli, run, tail, text, SANITIZER_RE)

TIMEOUT = 120
PROG = "html_report"
CLIENT_JS = ROOT / "tests" / "e2e" / "clients" / "html_check.cjs"
IMG_FN = "<img src=x onerror=window.__pwned=1>\x1b[31m"
SCRIPT_FN = "</script><script>window.__pwned=2</script>"
ARGS = ["</script><b>arg", "<img src=x onerror=window.__pwned=3>"]


def traced(t, key=(), opts=()):
    """The program's trace (run with opts) and its JSON report; memoised."""
    need_tools(t)
    p = PROGS / PROG
    t.need(p.exists(), "%s not built (make programs)" % p)

    def go():
        tr = heaptrail_run([p] + ARGS, list(opts), timeout=TIMEOUT)
        if tr.proc.timed_out or not tr.out_path.exists():
            return None, None, "heaptrail run failed: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        rep = report(tr.out_path)
        if rep.err or rep.proc.rc != 0:
            return None, None, "JSON report failed: %s" % (rep.err or tail(rep.proc.err))
        return tr.out_path, rep.data, None
    path, data, err = memo(("html",) + tuple(key), go)
    if err:
        t.fatal(err)
    return path, data


def cli(t, args, rc=0):
    p = run([report_cli()] + [str(a) for a in args], TIMEOUT, env=asan_env())
    if p.timed_out:
        t.fatal("timed out: %s" % p.describe())
    if SANITIZER_RE.search(text(p.err)):
        t.fatal("sanitizer error in %s: %s" % (p.describe(), tail(p.err, 1500)))
    t.eq("exit status of %s" % p.describe(), rc, p.rc)
    return p


def write_html(t, trace, name):
    out = t.tmp / name
    cli(t, ["report", "--format", "html", "-o", out, trace])
    t.need(out.exists(), "no HTML written")
    return out


def self_contained(t, html):
    """Nothing the page could load from elsewhere, and the data block."""
    b = html.read_bytes()
    s = b.decode("utf-8")
    t.check(not re.search(r"https?:|ftp:|//[a-z0-9.-]+\.[a-z]{2,}/", s, re.I),
            "a URL in the page: %r" % re.findall(r".{20}https?:.{20}", s)[:3])
    t.check(not re.search(r"<[a-z]+[^>]*\s(src|href|action|srcset)\s*=", s, re.I),
            "an element with a source attribute")
    for word in ("fetch(", "XMLHttpRequest", "import(", "WebSocket", "EventSource", "sendBeacon",
                 "<link", "<iframe", "<object", "<embed", "@import", "url("):
        t.check(word not in s, "the page uses %s" % word)
    scripts = re.findall(r"<script[^>]*>", s)
    t.eq("script elements", ['<script type="application/json" id="ht-data">', "<script>"], scripts)
    m = re.search(r'<script type="application/json" id="ht-data">(.*?)</script>', s, re.S)
    t.need(m, "no data block")
    for c in "<>&":
        t.check(c not in m.group(1), "a raw %r in the data block" % c)
    return json.loads(m.group(1))


def browse(t, html, zoom, term):
    d = harness.clients_dir(t)
    shots = t.tmp / "shots"
    shots.mkdir(exist_ok=True)
    env = dict(os.environ, NODE_PATH=os.path.join(d, "node_modules"), HOME=str(t.tmp))
    p = run(["node", CLIENT_JS, html, shots, zoom, term], 180, env=env)
    t.need(not p.timed_out, "the browser script timed out: %s" % p.describe())
    try:
        res = json.loads(text(p.out))
    except ValueError:
        t.fatal("browser script printed no JSON: %s %s" % (tail(p.out), tail(p.err, 1500)))
    t.check(p.rc == 0, "%s failed: %s" % (p.describe(), tail(p.err, 1500)))
    t.eq("browser console errors", [], res["errors"])
    t.eq("network requests", [], res["requests"])
    return res


def num(v):
    return None if v is None else float(v)


def check_summary(t, res, rep):
    s, tot = res["summary"], rep["totals"]
    for key, field in (("allocations", "allocations"), ("frees", "frees"),
                       ("bytes", "bytes_allocated"), ("peak", "peak_heap_bytes"),
                       ("rss", "peak_rss_bytes"), ("leaked", "leaked_bytes"),
                       ("temporary", "temporary_allocations"), ("sites", "sites"),
                       ("definite", "definite_bytes"), ("reachable", "reachable_bytes")):
        t.eq("summary %s (the JSON report's %s)" % (key, field), num(tot[field]),
             num(s.get(key, {}).get("value")))


def t_report(t):
    trace, rep = traced(t)
    html = write_html(t, trace, "r.html")
    data = self_contained(t, html)
    names = [f[0] for f in data["frames"]]
    t.check(IMG_FN in names and SCRIPT_FN in names, "the markup names are not in the data: %r" % names)

    res = browse(t, html, "temp_loop", "leak_")
    t.check(res["load_ms"] < 5000, "the page took %d ms to load" % res["load_ms"])
    check_summary(t, res, rep)
    tot = rep["totals"]
    # the program's own figures
    t.eq("definitely lost bytes", 2003, num(res["summary"]["definite"]["value"]))
    t.eq("temporary allocations", 100, num(res["summary"]["temporary"]["value"]))
    t.check("'</script><b>arg'" in res["summary"]["command"]["text"],
            "the command line is not shown as text: %r" % res["summary"]["command"]["text"])

    # flame graph: the root holds the total; a click zooms temp_loop to the width
    root = [f for f in res["fg_before"] if f["depth"] == 0]
    t.eq("flame graph root (bytes)", [tot["bytes_allocated"]], [f["value"] for f in root])
    t.check(res["fg_zoom_idx"] >= 0, "no temp_loop frame drawn")
    if res["fg_zoom_idx"] >= 0:
        before = res["fg_before"][res["fg_zoom_idx"]]
        t.check(before["width"] < res["fg_width"] * 0.6, "temp_loop already %.0f px wide" % before["width"])
        z = [f for f in res["fg_after"] if f["name"] == "temp_loop"]
        t.eq("temp_loop frames after the click", 1, len(z))
        if z:
            t.check(abs(z[0]["width"] - res["fg_width"]) <= 1,
                    "zoomed temp_loop is %.1f px of %d" % (z[0]["width"], res["fg_width"]))
        t.eq("zoomed value", "6400", res["fg_path"]["value"])
        t.check(all(f["anc"] for f in res["fg_after"] if f["depth"] < z[0]["depth"]) if z else False,
                "the frames above the zoomed one are not marked as its callers")
        t.check(not any(f["name"] == "keep_some" for f in res["fg_after"]),
                "keep_some still drawn after zooming into temp_loop")
        t.check("html_report.c:" in res["fg_tip"] and "6,400 B" in res["fg_tip"],
                "tooltip without file:line or the exact figure: %r" % res["fg_tip"])
    t.eq("search 'leak_' sums leak_a and leak_b (bytes)", "2003", res["fg_match"]["value"])
    matched = sorted(f["name"] for f in res["fg_searched"] if f["match"])
    t.eq("frames highlighted by the search", ["leak_a", "leak_b"], matched)
    t.eq("flame graph root (allocations)", [tot["allocations"]], res["fg_alloc_root"])
    hostile = [f for f in res["fg_before"] if f["name"] in (IMG_FN, SCRIPT_FN)]
    t.eq("markup-named frames drawn", 2, len(hostile))
    for f in hostile:
        t.check(f["text"] in ("", f["name"]), "frame label %r is not its name as text" % f["text"])

    # sites table: the JSON report's sites, sorted both ways
    heads = res["sites_heads"]
    col = {h: i for i, h in enumerate(heads)}
    want = {}
    for s in rep["sites"]:
        want[s["stack"][0]["function"] if s["stack"] else "?"] = s
    got = {r[0]: r for r in res["sites_rows"]}
    t.eq("sites shown", sorted(want), sorted(got))
    for fn, s in want.items():
        r = got.get(fn)
        if not r:
            continue
        for h, k in (("allocations", "allocations"), ("bytes allocated", "bytes_allocated"),
                     ("peak bytes", "peak_bytes"), ("bytes in use at exit", "leaked_bytes"),
                     ("temporary allocations", "temporary_allocations")):
            t.eq("site %s: %s" % (fn, h), s[k], r[col[h]])
    ai = col["allocations"]
    by = [r[ai] for r in res["sites_by_allocs"]]
    t.eq("sorted by allocations, most first", sorted(by, reverse=True), by)
    t.eq("first site by allocations", "temp_loop", res["sites_by_allocs"][0][0])
    asc = [r[ai] for r in res["sites_by_allocs_asc"]]
    t.eq("sorted by allocations again: fewest first", sorted(asc), asc)
    t.check(SCRIPT_FN in res["sites_stack"] or IMG_FN in res["sites_stack"],
            "a leak's stack does not show its markup-named caller as text: %r" % res["sites_stack"])

    # trees: the top-down root is the whole program
    t.check(res["topdown"] and res["topdown"][0][2] == tot["bytes_allocated"],
            "top-down's first row is not the total: %r" % res["topdown"][:1])
    bu = {r[0].lstrip("\u25b8\u25be"): r for r in res["bottomup"]}
    t.check("temp_loop" in bu and bu["temp_loop"][3] == 100,
            "bottom-up has no temp_loop with 100 allocations: %r" % list(bu))

    # leaks, sizes, temporaries
    t.eq("leak classes", ["definitely lost: 2,003 B in 2 blocks (2 stacks)"], res["leak_titles"])
    t.eq("definite leak rows (bytes, blocks, function)",
         [[1002, 1, "leak_b"], [1001, 1, "leak_a"]], [r[:3] for r in res["leaks_definite"] or []])
    sizes = {k: (n, b) for k, n, b in res["sizes"]}
    t.eq("sizes 64..127 B", (100, 6400), sizes.get(6))
    t.eq("sizes 512..1023 B", (12, 12003), sizes.get(9))
    t.eq("size histogram total", tot["allocations"], sum(n for n, _ in sizes.values()))
    t.eq("temporaries by site", [[100, 1, "temp_loop"]], [r[:3] for r in res["temps"] or []])

    # the time window: the first half of the run holds phase 1 alone
    w = res["window"]
    t.eq("allocations in the window", 100, w.get("allocations"))
    t.eq("bytes in the window", 6400, w.get("bytes"))
    t.eq("highest heap in the window", 64, w.get("high"))
    t.eq("sites in the window", [["temp_loop", 6400, 100]],
         [[r[0], r[col["bytes allocated"]], r[ai]] for r in res["sites_window"]])
    t.eq("sites after clearing the window", len(res["sites_rows"]), len(res["sites_cleared"]))

    # caller/callee: main's callers and callees with what went through each
    peaks = {f: s["peak_bytes"] for f, s in want.items()}
    leaked = {f: s["leaked_bytes"] for f, s in want.items() if s["leaked_bytes"]}
    cm = res["cc_main"] or {"total": None, "self": None, "callers": [], "callees": []}
    t.eq("caller/callee: main's total bytes", tot["bytes_allocated"], cm["total"])
    t.eq("caller/callee: main's own bytes", 0, cm["self"])
    t.eq("caller/callee: main's callees", sorted([["keep_some", 10000], ["temp_loop", 6400], [IMG_FN, 1001],
                                                  [SCRIPT_FN, 1002]]), sorted([r[0], r[2]] for r in cm["callees"]))
    t.eq("caller/callee: main's callers", [tot["bytes_allocated"]], [r[2] for r in cm["callers"]])
    cl = res["cc_leak_a"] or {"name": None, "total": None, "self": None, "callers": [], "callees": []}
    t.eq("caller/callee: leak_a", ("leak_a", 1001, 1001, [[IMG_FN, 1001]], []),
         (cl["name"], cl["total"], cl["self"], [[r[0], r[2]] for r in cl["callers"]], cl["callees"]))

    # the top sites stacked over time: each at its highest
    t.eq("stacked sites (name, highest live bytes)",
         [["keep_some", 10000], ["leak_b", 1002], ["leak_a", 1001], ["temp_loop", 64]], res["stacked"])

    # the window's modes over the whole run: allocated in it (the sites),
    # live at its end (the leaks), at its high-water mark (the peak)
    def by_fn(rows):
        return {r[0]: (r[2], r[3]) for r in rows}
    md = res["modes"]
    t.eq("window, allocated in it", {f: (s["bytes_allocated"], s["allocations"]) for f, s in want.items()},
         by_fn(md.get("alloc", [])))
    t.eq("window, live at its end (the leaks)", {f: (v, 1) for f, v in leaked.items()}, by_fn(md.get("end", [])))
    t.eq("window, its high-water mark (the JSON report's peak bytes)",
         {f: v for f, v in peaks.items() if v}, {f: v[0] for f, v in by_fn(md.get("high", [])).items()})
    t.eq("high-water mark bytes sum to the peak", tot["peak_heap_bytes"], sum(v[0] for v in by_fn(md.get("high", [])).values()))
    t.eq("first half, its high-water mark: one temp_loop block", {"temp_loop": (64, 1)}, by_fn(md.get("high_first_half", [])))

    # the filters
    fl = res["filters"]
    t.eq("only leaked: sites and bytes", {f: (v, 1) for f, v in leaked.items()}, by_fn(fl["leaked"]))
    t.eq("only leaked: flame graph root", [2003], fl["leaked_root"])
    t.eq("only leaked: the sites stacked in the chart", [1002, 1001], fl["leaked_stacked"])
    t.eq("alive for at least 20 ms: phase 2's blocks, not temp_loop's",
         {"keep_some": (10000, 10), "leak_a": (1001, 1), "leak_b": (1002, 1)}, by_fn(fl["min_life"]))
    t.eq("alive at the end", {f: (v, 1) for f, v in leaked.items()}, by_fn(fl["alive_end"]))
    t.eq("alive at a quarter of the run (between the phases)", {}, by_fn(fl["alive_quarter"]))
    t.eq("through 'leak_'", ["leak_a", "leak_b"], sorted(by_fn(fl["through"])))
    t.eq("not through 'leak_'", ["keep_some", "temp_loop"], sorted(by_fn(fl["not_through"])))
    t.eq("leaks through 'leak_a'", ["definitely lost: 1,001 B in 1 block (1 stack)"], fl["leak_a_titles"])
    everything = {f: (s["bytes_allocated"], s["allocations"]) for f, s in want.items()}
    t.eq("the main thread: every site", everything, by_fn(fl["thread"]))
    t.check("thread 1" in fl["thread_note"], "the filter note does not name the thread: %r" % fl["thread_note"])
    t.check("html_report" in fl["modules"], "no html_report in the module filter: %r" % fl["modules"])
    t.eq("module html_report: every site", everything, by_fn(fl["module"]))
    t.eq("no filter", everything, by_fn(fl["none"]))
    t.eq("no filter note", "", fl["note_cleared"])

    # nothing ran from a name or an argument
    t.eq("window.__pwned", None, res["pwned"])
    t.eq("img elements", 0, res["imgs"])
    t.eq("script elements in the DOM", ["application/json", "classic"], res["scripts"])
    png = t.tmp / "shots" / "summary.png"
    t.check(png.exists() and png.stat().st_size > 5000, "no screenshot of the summary")


def t_modes(t):
    for key, opts, lacks in ((("summary",), ["--summary"], "summary trace"),
                             (("sampled",), ["--sample-rate", "512"], "sampled trace")):
        trace, rep = traced(t, key, opts)
        html = write_html(t, trace, key[0] + ".html")
        self_contained(t, html)
        res = browse(t, html, "temp_loop", "leak_")
        check_summary(t, res, rep)
        t.check(any(lacks in n for n in res["notes"]), "%s: no note says so: %r" % (key[0], res["notes"]))
        t.eq("%s: window.__pwned" % key[0], None, res["pwned"])


def t_cli(t):
    trace, _ = traced(t)
    p = cli(t, ["report", "-o", t.tmp / "x.html", trace], rc=2)
    t.check("--format html" in text(p.err), "no reason given: %s" % tail(p.err))
    p = cli(t, ["report", "--format", "html", "-o", trace, trace], rc=1)
    t.check("trace" in text(p.err) or "input" in text(p.err), "no reason given: %s" % tail(p.err))
    t.check(trace.stat().st_size > 1000 and trace.read_bytes()[:4] != b"<!DO", "the trace was overwritten")
    target = t.tmp / "target"
    target.write_bytes(b"keep")
    link = t.tmp / "link.html"
    os.symlink(target, link)
    p = cli(t, ["report", "--format", "html", "-o", link, trace], rc=1)
    t.eq("file behind the link", b"keep", target.read_bytes())
    p = cli(t, ["report", "-f", "html", "-o", "-", trace])
    t.check(text(p.out).startswith("<!DOCTYPE html>"), "-o - does not write the page to stdout")


DIFF_CLIENT_JS = ROOT / "tests" / "e2e" / "clients" / "html_diff_check.cjs"


def diffprog_trace(t, arg):
    need_tools(t)
    p = PROGS / "diffprog"
    t.need(p.exists(), "%s not built (make programs)" % p)

    def go():
        tr = heaptrail_run([p, arg], [], timeout=TIMEOUT)
        if tr.proc.rc != 0 or not tr.out_path.exists():
            return None, "heaptrail run: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        return tr.out_path, None
    path, err = memo(("html-diffprog", arg), go)
    if err:
        t.fatal(err)
    return path


def reddish(bg):
    m = re.match(r"rgb\((\d+), (\d+), (\d+)\)", bg or "")
    return m and int(m.group(1)) > int(m.group(3)) + 40


def bluish(bg):
    m = re.match(r"rgb\((\d+), (\d+), (\d+)\)", bg or "")
    return m and int(m.group(3)) > int(m.group(1)) + 40


def t_diff(t):
    a, b = diffprog_trace(t, "1"), diffprog_trace(t, "2")
    p = cli(t, ["diff", "--format", "json", a, b])
    want = json.loads(text(p.out))
    html = t.tmp / "d.html"
    cli(t, ["diff", "--format", "html", "-o", html, a, b])
    t.need(html.exists(), "no HTML written")
    self_contained(t, html)
    d = harness.clients_dir(t)
    shots = t.tmp / "shots"
    shots.mkdir(exist_ok=True)
    env = dict(os.environ, NODE_PATH=os.path.join(d, "node_modules"), HOME=str(t.tmp))
    p = run(["node", DIFF_CLIENT_JS, html, shots, "grow"], 180, env=env)
    t.need(not p.timed_out, "the browser script timed out: %s" % p.describe())
    try:
        res = json.loads(text(p.out))
    except ValueError:
        t.fatal("browser script printed no JSON: %s %s" % (tail(p.out), tail(p.err, 1500)))
    t.check(p.rc == 0, "%s failed: %s" % (p.describe(), tail(p.err, 1500)))
    t.eq("browser console errors", [], res["errors"])
    t.eq("network requests", [], res["requests"])

    # the totals: both sides and the change, as the JSON diff
    for key, v in want["totals"].items():
        if key not in res["totals"] or key == "duration_seconds":
            continue
        got = res["totals"][key]
        t.eq("total %s: base" % key, v["base"], None if got["base"] == "null" else int(got["base"]))
        t.eq("total %s: new" % key, v["new"], None if got["new"] == "null" else int(got["new"]))
    t.check("grow" in res["totals"]["bytes_allocated"]["cls"], "bytes allocated's growth not coloured")
    t.check(res["status"].startswith("5 sites") and "2 changed, 1 new, 1 gone, 1 the same" in res["status"],
            "status line: %r" % res["status"])

    # the differential flame graph
    fg = {f["name"]: f for f in res["fg"]}
    tb, tn = want["totals"]["bytes_allocated"]["base"], want["totals"]["bytes_allocated"]["new"]
    t.eq("flame root: base and new bytes", (tb, tn), (fg["all"]["base"], fg["all"]["new"]) if "all" in fg else None)
    t.eq("grow's frame: base and new bytes", (1000, 2000), (fg["grow"]["base"], fg["grow"]["new"]) if "grow" in fg else None)
    t.check("grow" in fg and reddish(fg["grow"]["bg"]), "grow is not coloured as growth: %r" % fg.get("grow"))
    t.check("only_old" in fg and bluish(fg["only_old"]["bg"]), "only_old is not coloured as a shrink: %r" % fg.get("only_old"))
    t.check("steady" in fg and not reddish(fg["steady"]["bg"]) and not bluish(fg["steady"]["bg"]),
            "steady is coloured as a change: %r" % fg.get("steady"))
    # width: the larger side, summed: only_old (200 B) and only_new (600 B) both drawn
    if "only_old" in fg and "all" in fg:
        w = res["fg_width"] * 200 / sum(max(s["base"]["bytes_allocated"], s["new"]["bytes_allocated"])
                                        for s in want["sites"])
        t.check(abs(fg["only_old"]["width"] - w) <= 1.5, "only_old is %.1f px, not %.1f" % (fg["only_old"]["width"], w))
    t.check("diffprog.c:" in res.get("fg_tip", "") and "+1000 B" in res.get("fg_tip", ""),
            "tooltip without file:line or the change: %r" % res.get("fg_tip"))
    z = [f for f in res.get("fg_after", []) if f["name"] == "grow"]
    t.check(len(z) == 1 and abs(z[0]["width"] - res["fg_width"]) <= 1, "grow not zoomed to the width: %r" % z)
    t.eq("zoomed path", {"base": "1000", "new": "2000"}, {k: res.get("fg_path", {}).get(k) for k in ("base", "new")})
    fa = {f["name"]: f for f in res["fg_alloc"]}
    t.eq("flame by allocations: grow", (10, 20), (fa["grow"]["base"], fa["grow"]["new"]) if "grow" in fa else None)

    # the changes table (by allocations: the cost last picked)
    heads = res["changes_heads"]
    t.eq("changes columns", ["status", "function", "location", "base", "new", "change", "change %"], heads)
    got = {r[1]: r for r in res["changes_all"]}
    wantrows = {s["stack"][0]["function"]: s for s in want["sites"]}
    t.eq("rows", sorted(wantrows), sorted(got))
    for fn, s in wantrows.items():
        r = got.get(fn)
        if r:
            t.eq("row %s" % fn, [s["status"], s["base"]["allocations"], s["new"]["allocations"]],
                 [r[0], r[3], r[4]])
    t.eq("changed rows only (the default)", sorted(f for f, s in wantrows.items()
                                                  if s["base"]["allocations"] != s["new"]["allocations"]),
         sorted(r[1] for r in res["changes"]))
    ch = [r[5] for r in res["changes_all"]]
    t.eq("sorted by change, largest first", sorted(ch, reverse=True), ch)
    ch = [r[5] for r in res["changes_asc"]]
    t.eq("sorted by change again: smallest first", sorted(ch), ch)
    t.check("only_old" in res["changes_stack"] and "main" in res["changes_stack"],
            "the first row's stack: %r" % res["changes_stack"])

    # -o only with html; neither trace is overwritten
    p = cli(t, ["diff", "-o", t.tmp / "x.html", a, b], rc=2)
    for victim in (a, b):
        before = victim.read_bytes()
        p = cli(t, ["diff", "--format", "html", "-o", victim, a, b], rc=1)
        t.eq("%s untouched" % victim.name, before, victim.read_bytes())


def t_threads(t):
    need_tools(t)
    p = PROGS / "named_threads"
    t.need(p.exists(), "%s not built (make programs)" % p)
    tr = heaptrail_run([p], [], timeout=TIMEOUT)
    t.need(tr.out_path.exists(), "heaptrail run failed: %s" % tail(tr.proc.err))
    rep = report(tr.out_path)
    t.need(rep.data, "JSON report failed")
    html = write_html(t, tr.out_path, "t.html")
    d = harness.clients_dir(t)
    env = dict(os.environ, NODE_PATH=os.path.join(d, "node_modules"), HOME=str(t.tmp), HT_THREADS_ONLY="1")
    p = run(["node", CLIENT_JS, html, "", "work", "work"], 180, env=env)
    t.need(not p.timed_out, "the browser script timed out: %s" % p.describe())
    res = json.loads(text(p.out) or "{}")
    t.check(p.rc == 0, "%s failed: %s" % (p.describe(), tail(p.err, 1500)))
    t.eq("browser console errors", [], res.get("errors"))
    th = res.get("threads", {})
    # columns: function, location, bytes allocated, allocations, ...
    total = {}
    for s in rep.data["sites"]:
        fn = s["stack"][0]["function"] if s["stack"] else "?"
        a = total.setdefault(fn, [0, 0])
        a[0] += s["bytes_allocated"]
        a[1] += s["allocations"]
    def summed(rows):
        out = {}
        for r in rows:
            a = out.setdefault(r[0], [0, 0])
            a[0] += r[2]
            a[1] += r[3]
        return out
    t.eq("all threads", total, summed(th.get("all threads", [])))
    for name in ("worker-1", "worker-2"):
        label = [k for k in th if "(" + name + ")" in k]
        t.eq("a thread labelled %s" % name, 1, len(label))
        if label:
            t.eq("%s's sites" % name, {"work": [1000, 100]}, summed(th[label[0]]))


BLOCKS_CLIENT_JS = ROOT / "tests" / "e2e" / "clients" / "html_blocks_check.cjs"
BLK = "blk_alloc"
QUARTER = [0, 49]  # the first quarter of the run's 200 buckets
WHOLE = [0, 199]

# case -> {site: [bytes, allocations, peak bytes, leaked bytes, temporary]}
# for the program's three sites, known by construction (html_blocks.c)
BLOCK_CASES = [
    ({"name": "none"}, {BLK: [15900, 79, 6100, 3900, 70], "main_temp": [640, 10, 0, 0, 10],
                        "main_leak": [333, 1, 0, 333, 0]}),
    ({"name": "blk-1", "thread": "(blk-1)"}, {BLK: [6100, 43, 2100, 2100, 40]}),
    ({"name": "blk-2", "thread": "(blk-2)"}, {BLK: [9800, 36, 4000, 1800, 30]}),
    ({"name": "temporaries", "temp": True}, {BLK: [10000, 70, 200, 0, 70], "main_temp": [640, 10, 0, 0, 10]}),
    ({"name": "temporaries of blk-2", "temp": True, "thread": "(blk-2)"}, {BLK: [6000, 30, 200, 0, 30]}),
    ({"name": "leaked", "leaked": True}, {BLK: [3900, 5, 3900, 3900, 0], "main_leak": [333, 1, 0, 333, 0]}),
    ({"name": "leaked by blk-1", "leaked": True, "thread": "(blk-1)"}, {BLK: [2100, 3, 2100, 2100, 0]}),
    ({"name": "leaked temporaries", "leaked": True, "temp": True}, {}),
    ({"name": "alive >= 20 ms, blk-2", "min_life_ms": 20, "thread": "(blk-2)"}, {BLK: [3800, 6, 3800, 1800, 0]}),
    ({"name": "alive >= 20 ms, temporaries", "min_life_ms": 20, "temp": True}, {}),
    ({"name": "alive at the end, blk-1", "alive_at_frac": 1.0, "thread": "(blk-1)"}, {BLK: [2100, 3, 2100, 2100, 0]}),
    ({"name": "first quarter, temporaries", "window": QUARTER, "temp": True},
     {BLK: [4000, 40, 0, 0, 40], "main_temp": [640, 10, 0, 0, 10]}),
    ({"name": "first quarter, blk-2", "window": QUARTER, "thread": "(blk-2)"}, {}),
    ({"name": "high-water mark, blk-2", "window": WHOLE, "mode": "high", "thread": "(blk-2)"},
     {BLK: [4000, 7, 4000, 1800, 1]}),
    ({"name": "window end, blk-2", "window": WHOLE, "mode": "end", "thread": "(blk-2)"},
     {BLK: [1800, 2, 1800, 1800, 0]}),
]


def browse_blocks(t, html, cases):
    d = harness.clients_dir(t)
    cf = t.tmp / ("cases-%s.json" % html.stem)
    cf.write_text(json.dumps(cases))
    env = dict(os.environ, NODE_PATH=os.path.join(d, "node_modules"), HOME=str(t.tmp))
    p = run(["node", BLOCKS_CLIENT_JS, html, cf], 180, env=env)
    t.need(not p.timed_out, "the browser script timed out: %s" % p.describe())
    try:
        res = json.loads(text(p.out))
    except ValueError:
        t.fatal("browser script printed no JSON: %s %s" % (tail(p.out), tail(p.err, 1500)))
    t.check(p.rc == 0, "%s failed: %s" % (p.describe(), tail(p.err, 1500)))
    t.eq("browser console errors", [], res["errors"])
    t.eq("network requests", [], res["requests"])
    return res["results"]


def blocks_traced(t, key, opts):
    need_tools(t)
    p = PROGS / "html_blocks"
    t.need(p.exists(), "%s not built (make programs)" % p)

    def go():
        tr = heaptrail_run([p], list(opts), timeout=TIMEOUT)
        if tr.proc.rc != 0 or not tr.out_path.exists():
            return None, None, "heaptrail run: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        rep = report(tr.out_path)
        if rep.err or rep.proc.rc != 0:
            return None, None, "JSON report failed: %s" % (rep.err or tail(rep.proc.err))
        return tr.out_path, rep.data, None
    path, data, err = memo(("html-blocks",) + tuple(key), go)
    if err:
        t.fatal(err)
    return path, data


def t_blocks(t):
    trace, rep = blocks_traced(t, (), [])
    # the program's figures, as the JSON report has them: the cases rest on them
    sites = {s["stack"][0]["function"]: s for s in rep["sites"] if s["stack"]}
    for fn, want in BLOCK_CASES[0][1].items():
        s = sites.get(fn, {})
        t.eq("JSON report, site %s" % fn, want,
             [s.get(k) for k in ("bytes_allocated", "allocations", "peak_bytes", "leaked_bytes",
                                 "temporary_allocations")])
    html = write_html(t, trace, "blocks.html")
    res = browse_blocks(t, html, [c for c, _ in BLOCK_CASES])
    for case, want in BLOCK_CASES:
        got = res.get(case["name"], {}).get("rows", {})
        shown = {fn: [v[0] for v in cols[:5]] for fn, cols in got.items() if fn in BLOCK_CASES[0][1]}
        t.eq("%s: the sites table (bytes, allocations, peak, leaked, temporaries)" % case["name"], want, shown)


def t_sampled(t):
    trace, rep = blocks_traced(t, ("sampled",), ["--sample-rate", "256"])
    html = write_html(t, trace, "sampled.html")
    res = browse_blocks(t, html, [{"name": "none"}, {"name": "blk-2", "thread": "(blk-2)"}])
    sites = {s["stack"][0]["function"]: s for s in rep["sites"] if s["stack"]}
    s = sites.get(BLK)
    t.need(s, "no %s site in the sampled report" % BLK)
    row = res.get("none", {}).get("rows", {}).get(BLK)
    t.need(row, "no %s row in the page" % BLK)
    # columns: bytes, allocations, peak, leaked (no temporaries: not known from samples)
    for i, key in ((0, "bytes_allocated"), (1, "allocations"), (2, "peak_bytes"), (3, "leaked_bytes")):
        t.eq("%s: %s" % (BLK, key), s[key], row[i][0])
        t.eq("%s: %s_ci95" % (BLK, key), round(s[key + "_ci95"]), row[i][1])
    t.check(s["bytes_allocated_ci95"] > 0, "the sampled estimate has no interval: %r" % s)
    t.check("\u00b1" in row[0][2], "the bytes cell shows no interval: %r" % row[0][2])
    f = res.get("blk-2", {}).get("rows", {}).get(BLK)
    t.need(f, "no %s row under the thread filter" % BLK)
    t.check(f[0][1] and f[0][1] > 0 and "\u00b1" in f[0][2],
            "a filtered estimate shows no interval: %r" % (f[0],))
    t.check(f[0][0] < s["bytes_allocated"], "blk-2's estimate is not below the site's: %r" % (f[0],))
    tip = res.get("none", {}).get("tip") or ""
    t.check("\u00b1" in tip, "the flame graph's tooltip shows no interval: %r" % tip)


def block_rows(data):
    """The page's block table (report/html.c, put_rows), decoded: one list
    [site, thread, born, died, life, flags, blocks, bytes] per row."""
    bk = data["blocks"]
    raw = base64.b64decode(bk["packed"])
    pos = [0]

    def vi():
        v, m = 0, 1
        while True:
            c = raw[pos[0]]
            pos[0] += 1
            v += (c & 127) * m
            m *= 128
            if not c & 128:
                return v
    rows, site, thread = [], 0, 0
    for _ in range(bk["rows"]):
        h = raw[pos[0]]
        pos[0] += 1
        if h & 64:
            site += vi()
        if h & 32:
            thread = vi()
        born = vi()
        died = born + vi() if h & 8 else born
        life = vi()
        n = vi() if h & 16 else 1
        b = vi()
        if bk["variances"]:
            vi()
            vi()
        rows.append([site, thread, born, died, life, h & 7, n, b])
    return rows, pos[0] == len(raw)


def t_rows(t):
    for prog in ("threads", "html_report", "html_blocks"):
        trace, rep = harness.traced_program(t, prog)
        html = write_html(t, trace, prog + ".html")
        data = self_contained(t, html)
        rows, whole = block_rows(data)
        t.check(whole, "%s: the packed rows do not end where the table does" % prog)
        nb, peak = len(data["timeline"]["buckets"]), data["timeline"]["peak"]
        sums = {}
        for site, _, a, f, _, fl, n, b in rows:
            at_peak = bool(fl & 2) if a == peak else a < peak and (peak < f or (peak == f and fl & 4))
            g = sums.setdefault(site, [0] * 6)
            g[0] += n
            g[1] += b
            g[2] += b if at_peak else 0
            g[3] += b if f == nb else 0
            g[4] += n if f == nb else 0
            g[5] += n if fl & 1 else 0
        # the page's sites are the JSON report's, in its order
        want = {i: [s[1], s[2], s[3], s[5], s[4], s[6]] for i, s in enumerate(data["sites"])}
        got = {i: sums.get(i, [0] * 6) for i in want}
        t.eq("%s: per site (allocations, bytes, peak, leaked bytes, leaked blocks, temporary) "
             "summed from the rows" % prog, want, got)
        t.eq("%s: the page's sites against the JSON report's bytes" % prog,
             sorted(s["bytes_allocated"] for s in rep["sites"]), sorted(s[2] for s in data["sites"]))


FIREFOX_CLIENT_JS = ROOT / "tests" / "e2e" / "clients" / "html_firefox_check.cjs"


def t_firefox(t):
    ff = shutil.which("firefox") or shutil.which("firefox-esr")
    t.need(ff, "firefox not found (scripts/setup.sh installs firefox-esr)")
    trace, rep = traced(t)
    pages = [(write_html(t, trace, "r.html"), "report")]
    a, b = diffprog_trace(t, "1"), diffprog_trace(t, "2")
    dh = t.tmp / "d.html"
    cli(t, ["diff", "--format", "html", "-o", dh, a, b])
    pages.append((dh, "diff"))
    d = harness.clients_dir(t)
    env = dict(os.environ, NODE_PATH=os.path.join(d, "node_modules"), HOME=str(t.tmp), FIREFOX=ff)
    for html, kind in pages:
        p = run(["node", FIREFOX_CLIENT_JS, html], 150, env=env)
        t.need(not p.timed_out, "firefox timed out: %s" % p.describe())
        try:
            res = json.loads(text(p.out))
        except ValueError:
            t.fatal("%s: firefox script printed no JSON: %s %s" % (kind, tail(p.out), tail(p.err, 1500)))
        t.check(p.rc == 0, "%s failed: %s" % (p.describe(), tail(p.err, 1500)))
        t.eq("%s: firefox errors" % kind, [], res["errors"])
        t.eq("%s: firefox requests" % kind, [], res["requests"])
        t.eq("%s: the script ran to its end" % kind, "1", res.get("ready"))
        t.eq("%s: window.__pwned" % kind, None, res.get("pwned"))
        t.check(res.get("frames", 0) > 3, "%s: no flame graph drawn in firefox" % kind)
        if kind == "report":
            t.eq("firefox: allocations", str(rep["totals"]["allocations"]), res.get("allocations"))
            t.eq("firefox: bytes", str(rep["totals"]["bytes_allocated"]), res.get("bytes"))
            t.check("Caller/callee" in res.get("tabs", []), "tabs: %r" % res.get("tabs"))
        else:
            t.check(res.get("diff_bytes") not in (None, "null"), "firefox: no diff totals")


TESTS = [
    ("html.report", t_report),
    ("html.modes", t_modes),
    ("html.diff", t_diff),
    ("html.threads", t_threads),
    ("html.firefox", t_firefox),
    ("html.blocks", t_blocks),
    ("html.sampled", t_sampled),
    ("html.rows", t_rows),
    ("html.cli", t_cli),
]
