"""test_export_graphs.py - the memory-over-time outputs: the report's
timeline (text chart, JSON series) and the chrome and massif exports, checked
by the real clients users open them with, on traces of tests/programs.

The oracle is `heaptrail report --format json` of the same trace: the peak
heap and its time, the top site at the peak, the totals and what is live at
the end must be what each client shows. Conversions and reports run with
the ASan+UBSan CLI, so a memory error in a writer fails the test.

  timeline.text.<prog>     the report's chart: size, axes, the peak marker
  timeline.json.<prog>     the series: ordered, bounded, exact peak, end state
  chrome.rules.<prog>      the Trace Event rules Perfetto's JSON importer and
                           check-trace.mjs rely on, then every figure
  chrome.devtools          Chrome DevTools' trace engine (npm) parses it:
                           threads, names, their allocation totals
  chrome.speedscope        speedscope (headless Chromium) imports it: one
                           profile per thread
  massif.ms_print.<prog>   ms_print reads it: the peak snapshot and its top
                           entry, snapshot count, the end state
  massif.tree.<prog>       the file itself: trees add up exactly, children
                           sorted, the below-threshold node as massif's

A missing client is a FAIL that names the package to install, never a
silent pass.
"""

import base64
import json
import re
import shutil
from pathlib import Path

from harness import (PROGS, SANITIZER_RE, asan_env, clients_dir, heaptrail_run, memo, report,
                     report_cli, run, tail, text, traced_program)

PROGRAMS = ("peak", "threads", "leaks")
TIMEOUT = 120
CHART_WIDTH = 100
CHART_ROWS = 12


# ---- shared steps ---------------------------------------------------------------

traced = traced_program


def convert(trace, fmt, out):
    """heaptrail convert with the sanitized CLI: None, or why it failed."""
    p = run([report_cli(), "convert", "--format", fmt, "-o", out, trace], TIMEOUT, env=asan_env())
    if SANITIZER_RE.search(text(p.err)):
        return "sanitizer error in %s: %s" % (p.describe(), tail(p.err, 1500))
    if p.rc != 0 or p.timed_out:
        return "%s failed: %s" % (p.describe(), tail(p.err))
    if not Path(out).exists():
        return "%s wrote no %s" % (p.describe(), out)
    return None


def converted(t, name, fmt):
    """The program's trace converted to fmt, once per suite (every test that
    uses it fails if the conversion did)."""
    trace, rep = traced(t, name)

    def go():
        out = t.tmp / ("%s.%s" % (name, fmt))
        return out, convert(trace, fmt, out)
    out, err = memo(("graphs-convert", name, fmt), go)
    if err:
        t.fatal(err)
    return out, rep


def top_peak_site(rep):
    """The site holding the most at the peak (ties: more bytes allocated,
    as the writers' sort), or None."""
    sites = [s for s in rep["sites"] if s["peak_bytes"]]
    sites.sort(key=lambda s: (-s["peak_bytes"], -s["bytes_allocated"], -s["allocations"]))
    return sites[0] if sites else None


def leaf_function(site):
    st = site.get("stack") or []
    return st[0].get("function") if st else None


def fmt_count(n):
    return "{:,}".format(n)


# ---- timeline: the report -------------------------------------------------------------

def section(out):
    """The MEMORY OVER TIME section's lines (up to the next section)."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("MEMORY OVER TIME "):
            end = i + 1
            while end < len(lines) and not re.match(r"^[A-Z][A-Z ,()]+ -{3,}", lines[end]):
                end += 1
            return lines[i:end]
    return None


def check_timeline_text(t, name):
    trace, rep = traced(t, name)
    r = report(trace, "text")
    if r.err or r.proc.rc != 0:
        t.fatal(r.err or "report exited %s: %s" % (r.proc.rc, tail(r.proc.err)))
    sec = section(text(r.proc.out))
    t.need(sec, "no MEMORY OVER TIME section in the text report")
    tot = rep["totals"]
    for line in sec:
        t.check(len(line) <= CHART_WIDTH, "line wider than %d columns: %r" % (CHART_WIDTH, line))
    rows = [line for line in sec if re.match(r"^ {0,10}\S* ?\S* \|", line) or
            re.match(r"^ {11}\|", line)]
    t.eq("chart rows", CHART_ROWS, len(rows))
    axis = [line for line in sec if re.match(r"^\s+0 B \+-+", line)]
    t.eq("x axis lines", 1, len(axis))
    if len(rows) != CHART_ROWS or not axis:
        return
    # the peak marker sits above a column whose bar reaches the top row
    marker = [line for line in sec if re.search(r"peak .* \([\d,]+ B\) at ", line) and
              re.search(r"(^|\s)v(\s|$)", line) and "|" not in line]
    t.need(len(marker) == 1, "no single peak marker line above the chart: %r" % sec[:3])
    col = re.search(r"(?<=\s)v(?=\s|$)", marker[0]).start()
    t.eq("the top row at the peak marker", "#", rows[0][col] if col < len(rows[0]) else None)
    m = re.search(r"peak \S+ \S+ \(([\d,]+) B\) at ", marker[0])
    t.eq("peak bytes in the marker", fmt_count(tot["peak_heap_bytes"]), m and m.group(1))
    # the left axis: the peak at the top, half of it in the middle, 0 at the axis
    t.check(rows[0].lstrip().split(" |")[0] != "", "no label on the top row: %r" % rows[0])
    t.check(axis[0].lstrip().startswith("0 B +"), "axis not labelled 0 B: %r" % axis[0])
    times = sec[sec.index(axis[0]) + 1]
    t.check(times.split()[0] == "0" and re.search(r"\d+(\.\d+)? (ns|us|ms|s)$", times),
            "time axis labels missing: %r" % times)
    # every column with a bar is a non-empty heap moment; the bottom row shows
    # every column the heap was non-zero in, so some bar must be there
    t.check("#" in rows[-1], "no heap bar on the bottom row")
    summ = [line for line in sec if line.startswith("  heap ")]
    t.check(summ and "at the end" in summ[0], "no heap summary line: %r" % sec[-3:])
    rss = [line for line in sec if line.startswith("  RSS ")]
    t.check(rss, "no RSS line")
    if tot.get("peak_rss_bytes") and rss:
        t.check("peak RSS" in rss[0], "the RSS line does not give the peak RSS: %r" % rss[0])


def check_timeline_json(t, name):
    trace, rep = traced(t, name)
    tot = rep["totals"]
    tl = rep.get("timeline")
    t.need(isinstance(tl, list) and tl, "no \"timeline\" array in the JSON report")
    t.check(len(tl) <= 401, "timeline has %d points, more than its bound 401" % len(tl))
    keys = {"time_seconds", "heap_bytes", "heap_blocks", "rss_bytes"}
    for i, p in enumerate(tl):
        if not keys <= set(p):
            t.fatal("point %d lacks %s: %r" % (i, keys - set(p), p))
        if i and p["time_seconds"] < tl[i - 1]["time_seconds"]:
            t.errors.append("time goes backwards at point %d: %r after %r" % (i, p, tl[i - 1]))
            break
    t.eq("first point", {"time_seconds": 0.0, "heap_bytes": 0, "heap_blocks": 0},
         {k: tl[0][k] for k in ("time_seconds", "heap_bytes", "heap_blocks")})
    peaks = [p for p in tl if p.get("peak")]
    t.eq("points marked peak", 1, len(peaks))
    t.eq("highest heap in the series", tot["peak_heap_bytes"], max(p["heap_bytes"] for p in tl))
    if peaks:
        t.eq("peak point bytes", tot["peak_heap_bytes"], peaks[0]["heap_bytes"])
        t.check(abs(peaks[0]["time_seconds"] - tot["peak_time_seconds"]) < 1e-9,
                "peak point at %r s, the report's peak at %r s" %
                (peaks[0]["time_seconds"], tot["peak_time_seconds"]))
    last = tl[-1]
    t.eq("heap at the end", tot["leaked_bytes"], last["heap_bytes"])
    t.eq("blocks at the end", tot["leaked_blocks"], last["heap_blocks"])
    t.check(abs(last["time_seconds"] - tot["duration_seconds"]) < 1e-9,
            "series ends at %r s, the run lasted %r s" % (last["time_seconds"],
                                                          tot["duration_seconds"]))
    rss = [p["rss_bytes"] for p in tl if p["rss_bytes"] is not None]
    if rss and tot.get("peak_rss_bytes"):
        t.check(max(rss) <= tot["peak_rss_bytes"], "sampled RSS %d above the peak RSS %d" %
                (max(rss), tot["peak_rss_bytes"]))
    if name == "peak":  # by construction: 71000 at the peak, 10 B leaked at the end
        t.eq("peak.c's peak", 71000, tot["peak_heap_bytes"])
        t.eq("peak.c's end", 10, last["heap_bytes"])


# ---- chrome: the Trace Event rules and the figures ---------------------------------------

KNOWN_PH = set("BEXiICbneSTpFstfPNODMVvRc()")


def trace_rules(t, doc):
    """The structural rules of check-trace.mjs (what Perfetto's JSON importer
    and the Trace Event Format spec rely on; no Perfetto runs offline)."""
    t.need(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list),
           "expected an object with a traceEvents array")
    t.check(doc.get("displayTimeUnit") in ("ms", "ns"),
            "displayTimeUnit must be \"ms\" or \"ns\": %r" % doc.get("displayTimeUnit"))
    evs = doc["traceEvents"]
    open_b = {}
    for i, e in enumerate(evs):
        where = "event #%d %s" % (i, json.dumps(e)[:80])
        if not isinstance(e, dict) or e.get("ph") not in KNOWN_PH:
            t.fatal(where + ": not an event with a known ph")
        ph = e["ph"]
        if ph != "M" and not isinstance(e.get("ts"), (int, float)):
            t.fatal(where + ": ts (microseconds) must be a number")
        if ph != "M" and e["ts"] < 0:
            t.fatal(where + ": negative ts")
        for k in ("pid", "tid"):
            if k in e and not (isinstance(e[k], int) and not isinstance(e[k], bool)):
                t.fatal(where + ": %s should be an integer" % k)
        key = (e.get("pid"), e.get("tid", e.get("pid")))
        if ph == "B":
            open_b.setdefault(key, []).append(e)
        if ph == "E":
            st = open_b.get(key) or []
            t.need(st, where + ": E without open B")
            b = st.pop()
            t.need(e["ts"] >= b["ts"], where + ": E before its B")
        if ph == "X" and not (isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0):
            t.fatal(where + ": X needs dur >= 0")
        if ph == "C":
            a = e.get("args")
            t.need(isinstance(a, dict) and a, where + ": C needs args {series: number}")
            for k, v in a.items():
                t.need(isinstance(v, (int, float)) and not isinstance(v, bool),
                       where + ": counter %s must be a number" % k)
        if ph == "M" and e.get("name") in ("process_name", "thread_name"):
            t.need(isinstance((e.get("args") or {}).get("name"), str), where + ": M needs args.name")
        if ph in "iI" and "s" in e:
            t.need(e["s"] in ("g", "p", "t"), where + ": instant scope s must be g|p|t")
    for key, st in open_b.items():
        t.check(not st, "unclosed B on %r" % (key,))
    # X slices nest on each thread (Perfetto drops overlapping ones)
    by_thread = {}
    for e in evs:
        if e["ph"] == "X":
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, xs in by_thread.items():
        xs.sort(key=lambda x: (x["ts"], -x["dur"]))
        stack = []
        for x in xs:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= x["ts"]:
                stack.pop()
            if stack and x["ts"] + x["dur"] > stack[-1]["ts"] + stack[-1]["dur"] + 1e-9:
                t.fatal("X %r on %r overlaps %r without nesting" % (x["name"], key,
                                                                   stack[-1]["name"]))
            stack.append(x)
    # heaptrail's own promise: each track in time order as written
    last = {}
    for e in evs:
        if e["ph"] == "M":
            continue
        if e["ph"] == "C":  # counters belong to the process, one track per name
            track = ("C", e["pid"], e["name"])
        elif e["ph"] in "iI" and e.get("s") in ("g", "p"):  # not on a thread's track
            track = (e["ph"], e["s"], e["pid"])
        else:
            track = (e["ph"], e["pid"], e["tid"])
        if track in last and e["ts"] < last[track]:
            t.fatal("track %r goes back in time at ts %r (after %r)" % (track, e["ts"], last[track]))
        last[track] = e["ts"]
    return evs


def check_chrome_rules(t, name):
    out, rep = converted(t, name, "chrome")
    try:
        doc = json.loads(out.read_text())
    except ValueError as e:
        t.fatal("the chrome export is not JSON: %s" % e)
    evs = trace_rules(t, doc)
    tot, prog = rep["totals"], rep["program"]
    us = lambda s: s * 1e6  # noqa: E731

    # the process and its threads
    t.check(all(e.get("pid") == prog["pid"] for e in evs), "events outside pid %d" % prog["pid"])
    names = {e["tid"]: e["args"]["name"] for e in evs
             if e["ph"] == "M" and e["name"] == "thread_name"}
    slices = [e for e in evs if e["ph"] == "X" and e.get("cat") == "heap.thread"]
    t.eq("thread slices vs named threads", sorted(names), sorted(e["tid"] for e in slices))
    t.check(prog["pid"] in names, "the main thread (tid = pid) has no track")
    if name == "threads":
        t.eq("threads with a track (main + 4 workers)", 5, len(names))
    for k in ("allocations", "frees", "bytes_allocated"):
        t.eq("%s summed over the thread slices" % k, tot[k], sum(e["args"][k] for e in slices))
    acts = [e for e in evs if e["ph"] == "i" and e.get("cat") == "heap.activity"]
    t.check(all(e.get("s") == "t" for e in acts), "activity instants must be thread-scoped")
    for k in ("allocations", "frees", "bytes_allocated"):
        t.eq("%s summed over the activity instants" % k, tot[k],
             sum(e["args"][k] for e in acts))
    for x in slices:  # each thread's activity inside its slice
        mine = [a["ts"] for a in acts if a["tid"] == x["tid"]]
        t.check(mine and min(mine) >= x["ts"] and max(mine) <= x["ts"] + x["dur"] + 1e-6,
                "activity of tid %d outside its slice" % x["tid"])

    # the counters
    def series(cname, key):
        return [(e["ts"], e["args"][key]) for e in evs if e["ph"] == "C" and e["name"] == cname]
    heap, blocks = series("heap", "bytes"), series("live blocks", "count")
    t.need(heap and blocks, "no heap / live blocks counters")
    top = max(v for _, v in heap)
    t.eq("highest heap counter", tot["peak_heap_bytes"], top)
    first_top = next(ts for ts, v in heap if v == top)
    t.check(abs(first_top - us(tot["peak_time_seconds"])) < 0.002,
            "heap counter peaks at %r us, the report at %r us" % (first_top,
                                                                  us(tot["peak_time_seconds"])))
    t.eq("heap counter at the end", tot["leaked_bytes"], heap[-1][1])
    t.eq("live blocks counter at the end", tot["leaked_blocks"], blocks[-1][1])
    t.check(abs(heap[-1][0] - us(tot["duration_seconds"])) < 0.002,
            "heap counter ends at %r us, the run at %r us" % (heap[-1][0],
                                                              us(tot["duration_seconds"])))
    rss = series("RSS", "bytes")
    if rss and tot.get("peak_rss_bytes"):
        t.check(max(v for _, v in rss) <= tot["peak_rss_bytes"], "RSS counter above peak RSS")

    # the peak marker
    peaks = [e for e in evs if e["ph"] == "i" and e.get("cat") == "heap.peak"]
    t.need(len(peaks) == 1, "expected one peak marker, got %d" % len(peaks))
    pk = peaks[0]
    t.eq("peak marker scope", "g", pk.get("s"))
    t.eq("peak marker bytes", tot["peak_heap_bytes"], pk["args"]["heap_bytes"])
    t.check(abs(pk["ts"] - us(tot["peak_time_seconds"])) < 0.002, "peak marker at the wrong time")
    t.check(pk["tid"] in names, "peak marker on a thread without a track")
    site = top_peak_site(rep)
    tops = pk["args"]["top_sites"]
    t.need(site and tops, "no top site at the peak")
    t.eq("top site's bytes at the peak", site["peak_bytes"], tops[0]["bytes"])
    t.eq("top site's function at the peak", leaf_function(site), tops[0]["function"])
    t.eq("otherData peak", tot["peak_heap_bytes"], doc.get("otherData", {}).get("peak_heap_bytes"))


# ---- chrome: DevTools' trace engine and speedscope -------------------------------------------

TRACE_ENGINE_JS = r"""
import * as Trace from '@paulirish/trace_engine'
import { readFileSync } from 'node:fs'
// the engine expects a browser's DOMRect
globalThis.DOMRect ??= class DOMRect { constructor(x = 0, y = 0, w = 0, h = 0) {
  Object.assign(this, { x, y, width: w, height: h }) }
  static fromRect(o = {}) { return new DOMRect(o.x, o.y, o.width, o.height) } }
const j = JSON.parse(readFileSync(process.argv[1], 'utf8'))
const model = Trace.TraceModel.Model.createWithAllHandlers()
await model.parse(j.traceEvents ?? j)
const d = model.parsedTrace().data ?? model.parsedTrace()
const threads = []
for (const [pid, proc] of d.Renderer.processes) for (const [tid, th] of proc.threads)
  threads.push({ pid, tid, name: th.name, entries: (th.entries ?? []).map(e => ({ name: e.name,
    ph: e.ph, ts: e.ts, dur: e.dur, args: e.args })) })
console.log(JSON.stringify({ threads, bounds: d.Meta.traceBounds }))
"""


def t_chrome_devtools(t):
    out, rep = converted(t, "threads", "chrome")
    d = clients_dir(t)
    p = run(["node", "--input-type=module", "-e", TRACE_ENGINE_JS, out], TIMEOUT, cwd=str(d))
    if p.rc != 0 or p.timed_out:
        t.fatal("DevTools' trace engine failed on the export: %s: %s" % (p.describe(), tail(p.err)))
    res = json.loads(text(p.out).strip().splitlines()[-1])
    tot, prog = rep["totals"], rep["program"]
    th = res["threads"]
    t.eq("threads the engine found (main + 4 workers)", 5, len(th))
    t.check(all(x["pid"] == prog["pid"] for x in th), "threads outside the traced pid")
    t.check(all(x["name"] for x in th), "a thread without its name: %r" %
            [x["tid"] for x in th if not x["name"]])
    main = [x for x in th if x["tid"] == prog["pid"]]
    t.check(main and main[0]["name"] == "main", "the main thread is not named main: %r" % main)
    entries = [e for x in th for e in x["entries"] if e["ph"] == "X"]
    t.check(all(x["entries"] for x in th), "a thread without entries in DevTools")
    for k in ("allocations", "frees", "bytes_allocated"):
        t.eq("%s over DevTools' thread slices" % k, tot[k],
             sum((e.get("args") or {}).get(k, 0) for e in entries))


def speedscope_dom(t, path, name):
    """Load path into the speedscope web app as file `name` (as its own CLI
    does) in headless Chromium; returns (console lines, page text)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    t.need(chromium, "chromium not found: install Debian's chromium for the speedscope checks")
    index = clients_dir(t) / "node_modules" / "speedscope" / "dist" / "release" / "index.html"
    t.need(index.exists(), "speedscope is not installed at %s" % index)
    js = t.tmp / ("load-%s.js" % name)
    # alert() ("Unrecognized format") would block headless Chromium: log it
    js.write_text('window.alert=function(m){console.log("ALERT: "+m)};'
                  'speedscope.loadFileFromBase64(%s, %s)' %
                  (json.dumps(name), json.dumps(base64.b64encode(Path(path).read_bytes()).decode())))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             "--user-data-dir=%s" % (t.tmp / ("ud-" + name)), "--enable-logging=stderr", "--v=0",
             "--virtual-time-budget=10000", "--window-size=1200,800", "--dump-dom",
             "file://%s#localProfilePath=%s" % (index, js)]
    p = run([chromium] + flags, TIMEOUT)
    consoles = re.findall(r'CONSOLE[^"]*"([^"]*)"', text(p.err))
    dom = text(p.out)
    title = re.search(r"<title>([^<]*)</title>", dom)
    t.check(not any(c.startswith("ALERT: ") for c in consoles),
            "speedscope refused %s: %r" % (name, consoles))
    t.need(title and title.group(1) == "%s - speedscope" % name,
           "speedscope did not load %s (title %r; console %r)" %
           (name, title.group(1) if title else None, consoles))
    return consoles, re.sub(r"\s+", " ", re.sub(r"<[^>]*>", " ", dom))


def t_chrome_speedscope(t):
    out, rep = converted(t, "threads", "chrome")
    doc = json.loads(out.read_text())
    consoles, page = speedscope_dom(t, out, "threads.json")
    t.check(any("Trace Event Format" in c for c in consoles),
            "speedscope did not import it as a Trace Event Format profile: %r" % consoles)
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    # speedscope lists one profile per thread: "prog (pid P), NAME (tid T)"
    listed = re.findall(r"\(pid (\d+)\), (.+?) \(tid (\d+)\)", page)
    got = {int(tid): nm for pid, nm, tid in listed if int(pid) == rep["program"]["pid"]}
    t.eq("threads speedscope lists", names, got)
    m = re.search(r"\((\d+)/(\d+)\)", page)
    t.eq("profiles in speedscope", len(names), int(m.group(2)) if m else None)


# ---- massif -----------------------------------------------------------------------------

def parse_massif(t, path):
    """The massif.out as snapshots: dicts with num, time, heap, kind, tree
    (root node: [bytes, label, children])."""
    lines = path.read_text().splitlines()
    t.need(len(lines) >= 3 and lines[0].startswith("desc: ") and lines[1].startswith("cmd: ") and
           lines[2] in ("time_unit: ms", "time_unit: B", "time_unit: i"),
           "bad massif header: %r" % lines[:3])
    snaps, i = [], 3

    def node(depth):
        nonlocal i
        m = re.match(r"^( *)n(\d+): (\d+) (.*)$", lines[i])
        t.need(m and len(m.group(1)) == depth, "line %d: bad tree node at depth %d: %r" %
               (i + 1, depth, lines[i]))
        i += 1
        return [int(m.group(3)), m.group(4), [node(depth + 1) for _ in range(int(m.group(2)))]]

    while i < len(lines):
        t.need(lines[i] == "#-----------" and lines[i + 2] == "#-----------",
               "line %d: expected a snapshot separator" % (i + 1))
        s = {}
        fields = lines[i + 1:i + 2] + lines[i + 3:i + 8]
        for f, key in zip(fields, ("snapshot", "time", "mem_heap_B", "mem_heap_extra_B",
                                   "mem_stacks_B", "heap_tree")):
            t.need(f.startswith(key + "="), "expected %s=, got %r" % (key, f))
            s[key] = f.split("=", 1)[1]
        i += 8
        s["tree"] = node(0) if s["heap_tree"] != "empty" else None
        snaps.append(s)
    return snaps


def check_tree(t, where, n, total, depth=0):
    bytes_, label, kids = n
    if kids:
        t.check(sum(k[0] for k in kids) == bytes_, "%s: %r has %d B, its children %d B" %
                (where, label, bytes_, sum(k[0] for k in kids)))
        sizes = [k[0] for k in kids]
        below = [k for k in kids if "below massif's threshold" in k[1]]
        t.check(len(below) <= 1 and (not below or below[0] is kids[-1]),
                "%s: the below-threshold node must be the last child of %r" % (where, label))
        sig = [k for k in kids if k not in below]
        t.check([k[0] for k in sig] == sorted((k[0] for k in sig), reverse=True),
                "%s: children of %r not sorted by bytes: %r" % (where, label, sizes))
        for k in sig:
            t.check(k[0] * 100 >= total, "%s: %r (%d B) is below 1%% of %d B, not folded" %
                    (where, k[1], k[0], total))
        for k in below:
            m = re.match(r"in (\d+) places?, (all )?below massif's threshold \(1\.00%\)$", k[1])
            t.check(m and not k[2], "%s: bad below-threshold node %r" % (where, k[1]))
        for k in sig:
            if depth == 0 and not k[1].startswith(("0x", "???", "(")):
                t.errors.append("%s: a frame label not in massif's form: %r" % (where, k[1]))
            check_tree(t, where, k, total, depth + 1)


def check_massif_tree(t, name):
    out, rep = converted(t, name, "massif")
    tot = rep["totals"]
    snaps = parse_massif(t, out)
    t.check(1 < len(snaps) <= 50, "%d snapshots (expected 2..50)" % len(snaps))
    times = [float(s["time"]) for s in snaps]
    t.check(times == sorted(times), "snapshot times go backwards: %r" % times)
    t.eq("snapshot numbers", list(range(len(snaps))), [int(s["snapshot"]) for s in snaps])
    t.check(all(s["mem_heap_extra_B"] == "0" and s["mem_stacks_B"] == "0" for s in snaps),
            "mem_heap_extra_B / mem_stacks_B must be 0")
    peaks = [s for s in snaps if s["heap_tree"] == "peak"]
    t.need(len(peaks) == 1, "expected one heap_tree=peak snapshot, got %d" % len(peaks))
    pk = peaks[0]
    t.eq("peak snapshot bytes", tot["peak_heap_bytes"], int(pk["mem_heap_B"]))
    t.eq("highest snapshot", tot["peak_heap_bytes"], max(int(s["mem_heap_B"]) for s in snaps))
    t.check(abs(float(pk["time"]) - tot["peak_time_seconds"] * 1e3) < 1e-6,
            "peak snapshot at %s ms, the report's peak at %r s" % (pk["time"],
                                                                 tot["peak_time_seconds"]))
    for s in snaps:
        if s["tree"]:
            where = "snapshot %s" % s["snapshot"]
            t.eq(where + " root bytes", int(s["mem_heap_B"]), s["tree"][0])
            t.check(s["tree"][1].startswith("(heap allocation functions)"),
                    where + ": root label %r" % s["tree"][1])
            check_tree(t, where, s["tree"], int(s["mem_heap_B"]))
    last = snaps[-1]
    t.eq("last snapshot bytes (live at the end)", tot["leaked_bytes"], int(last["mem_heap_B"]))
    t.eq("last snapshot detailed", "detailed" if tot["leaked_bytes"] else "empty",
         last["heap_tree"])
    site = top_peak_site(rep)
    kids = pk["tree"][2]
    t.need(site and kids, "no top site at the peak")
    t.eq("top child of the peak tree", site["peak_bytes"], kids[0][0])
    fn = leaf_function(site)
    t.check(fn and (": %s (" % fn) in kids[0][1], "top child %r is not %r" % (kids[0][1], fn))


def check_ms_print(t, name):
    out, rep = converted(t, name, "massif")
    tot = rep["totals"]
    t.need(shutil.which("ms_print"), "ms_print not found: install Debian's valgrind")
    p = run(["ms_print", out], TIMEOUT)
    if p.rc != 0 or p.timed_out or text(p.err).strip():
        t.fatal("ms_print refused the file: %s: %s" % (p.describe(), tail(p.err)))
    o = text(p.out)
    m = re.search(r"Number of snapshots: (\d+)\n Detailed snapshots: \[([^\]]*)\]", o)
    t.need(m, "ms_print printed no snapshot summary: %s" % tail(o, 400))
    t.check(int(m.group(1)) <= 50, "ms_print counts %s snapshots" % m.group(1))
    pm = re.search(r"(\d+) \(peak\)", m.group(2))
    t.need(pm, "ms_print found no peak snapshot: %r" % m.group(2))
    # the snapshot table: n, time, total, useful-heap, extra, stacks
    rows = {int(r[0]): r for r in re.findall(
        r"^\s*(\d+)\s+([\d,.]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s*$", o, re.M)}
    num = lambda s: int(s.replace(",", ""))  # noqa: E731
    peak_row = rows.get(int(pm.group(1)))
    t.need(peak_row, "no table row for the peak snapshot")
    t.eq("ms_print: peak total(B)", tot["peak_heap_bytes"], num(peak_row[2]))
    t.eq("ms_print: peak useful-heap(B)", tot["peak_heap_bytes"], num(peak_row[3]))
    t.eq("ms_print: largest total", tot["peak_heap_bytes"], max(num(r[2]) for r in rows.values()))
    last = rows[max(rows)]
    t.eq("ms_print: last snapshot total (live at the end)", tot["leaked_bytes"], num(last[2]))
    # the peak tree as ms_print prints it: "100.00% (N B) (heap allocation
    # functions)" then "->PCT% (N B) 0x...: function (file:line)" entries
    tree = o[o.index(peak_row[0] + " ", o.index("(peak)")):]
    root = re.search(r"^100\.00% \(([\d,]+)B\) \(heap allocation functions\)", tree, re.M)
    t.need(root, "ms_print shows no peak tree")
    t.eq("ms_print: peak tree total", tot["peak_heap_bytes"], num(root.group(1)))
    top = re.search(r"^->\s*[\d.]+% \(([\d,]+)B\) 0x[0-9A-F]+: (.+?) \(", tree, re.M)
    site = top_peak_site(rep)
    t.need(top and site, "ms_print shows no top entry at the peak")
    t.eq("ms_print: top entry bytes", site["peak_bytes"], num(top.group(1)))
    t.eq("ms_print: top entry function", leaf_function(site), top.group(2))


def t_folded_nothing(t):
    # No stack has a cost (nothing leaked): empty output, not an error,
    # and nothing for the sanitizers (qsort of no lines).
    trace, rep = traced(t, "ctor")
    t.need(rep["totals"]["leaked_bytes"] == 0, "ctor.c leaks: pick a program that does not")
    p = run([report_cli(), "convert", "--format", "folded", "--cost", "leaked", trace], TIMEOUT,
            env=asan_env())
    t.check(not SANITIZER_RE.search(text(p.err)), "sanitizer error: %s" % tail(p.err, 800))
    t.eq("folded --cost leaked of a trace without leaks: exit status", 0, p.rc)
    t.eq("folded --cost leaked of a trace without leaks: output", "", text(p.out))


def t_massif_sampled(t):
    # A sampled trace's sites are estimates rounded one by one: the peak
    # snapshot's mem_heap_B must still equal its tree's top, or ms_print
    # dies when the tree is the larger (seeds 1 and 3 of growth.c missed
    # by a byte before).
    t.need(shutil.which("ms_print"), "ms_print not found: install Debian's valgrind")
    for seed in (1, 2, 3):
        tr = heaptrail_run([str(PROGS / "growth")], ("--sample-rate", "4096", "--sample-seed", str(seed)))
        t.need(tr.out_path.exists(), "no trace: %s" % tail(tr.proc.err))
        out = t.tmp / ("growth.%d.massif" % seed)
        err = convert(tr.out_path, "massif", out)
        t.need(not err, err or "")
        snaps = [b for b in out.read_text().split("snapshot=") if "heap_tree=peak" in b]
        m = re.search(r"mem_heap_B=(\d+)\n.*heap_tree=peak\nn\d+: (\d+) ", snaps[0], re.S) if snaps else None
        t.need(m, "seed %d: no peak snapshot in the massif file" % seed)
        t.eq("seed %d: peak mem_heap_B == the peak tree's top" % seed, int(m.group(1)), int(m.group(2)))
        p = run(["ms_print", out], TIMEOUT)
        t.eq("seed %d: ms_print exit status" % seed, 0, p.rc)


# ---- the list ------------------------------------------------------------------------------

TESTS = []
for _p in PROGRAMS:
    TESTS.append(("timeline.text.%s" % _p, lambda t, p=_p: check_timeline_text(t, p)))
    TESTS.append(("timeline.json.%s" % _p, lambda t, p=_p: check_timeline_json(t, p)))
    TESTS.append(("chrome.rules.%s" % _p, lambda t, p=_p: check_chrome_rules(t, p)))
    TESTS.append(("massif.tree.%s" % _p, lambda t, p=_p: check_massif_tree(t, p)))
    TESTS.append(("massif.ms_print.%s" % _p, lambda t, p=_p: check_ms_print(t, p)))
TESTS.append(("chrome.devtools", t_chrome_devtools))
TESTS.append(("folded.nothing_to_show", t_folded_nothing))
TESTS.append(("massif.sampled_ms_print", t_massif_sampled))
TESTS.append(("chrome.speedscope", t_chrome_speedscope))
