"""test_export_tools.py - the flamegraph SVG and heaptrack exports, checked
by the real clients users run on them, on traces of the test programs:

- heaptrack: `heaptrack_print` (Debian's heaptrack 1.4) reads the file with an
  empty stderr, and its figures equal `heaptrail report --format json`'s: the
  summary lines (calls to allocation functions, temporary allocations, peak
  heap, leaked, peak RSS, in heaptrack's own rounding), the exact per-stack
  costs it writes with `-F --flamegraph-cost-type` (their sums are the totals,
  their largest is the top site), the top peak consumer, and the leak list.
  The file's own invariant that heaptrack_gui 1.4 needs (each `a` line used by
  the next allocation) is checked on the text.
- flamegraph: the SVG is rendered in headless Chromium through playwright-core
  (tests/e2e/clients/flamegraph_check.cjs): the screenshot is decoded here
  (zlib, no PIL) and must not be blank; the DOM's root frame carries the total
  cost and spans the width, the widest leaf equals the JSON's largest stack,
  a click zooms a frame to the full width, the search box highlights matches
  and shows their share, the title and subtitle show the totals.
- one pass: every format of `convert` merges the trace once, heaptrack's twice
  (HEAPTRAIL_MERGE_STATS), on a trace with function events in several threads.
"""

import json
import os
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib

import harness
import tracefile
from harness import ROOT, report_cli, run, tail, text

CLIENT_JS = ROOT / "tests" / "e2e" / "clients" / "flamegraph_check.cjs"
HEAPTRACK_PRINT = shutil.which("heaptrack_print")
WIDTH, PAD = 1200.0, 10.0


# ---- shared steps -------------------------------------------------------------

traced = harness.traced_program


def convert(t, trace, fmt, name, extra=()):
    """heaptrail convert with the ASan CLI; returns the output path."""
    out = t.tmp / name
    p = run([report_cli(), "convert", "--format", fmt, "-o", out] + list(extra) + [trace],
            harness.REPORT_TIMEOUT, env=harness.asan_env())
    if harness.SANITIZER_RE.search(text(p.err)):
        t.fatal("sanitizer error in %s: %s" % (p.describe(), tail(p.err, 1500)))
    if p.rc != 0 or not out.exists():
        t.fatal("%s failed: %s" % (p.describe(), tail(p.err)))
    return out


def cost_of(site, cost):
    return {"bytes": site["bytes_allocated"], "allocations": site["allocations"],
            "peak": site["peak_bytes"], "leaked": site["leaked_bytes"],
            "temporary": site["temporary_allocations"]}[cost]


def total_of(rep, cost):
    return sum(cost_of(s, cost) for s in rep["sites"])


# ---- heaptrack ------------------------------------------------------------------

def ht_bytes(n):
    """heaptrack_print 1.4's byte format: 1000-based, 2 decimals, one letter."""
    x, i = float(n), 0
    while i < 4 and abs(x) > 1000.0:
        x /= 1000.0
        i += 1
    return "%dB" % n if i == 0 else "%.2f%s" % (x, "BKMGT"[i])


def check_gui_invariant(t, path):
    """heaptrack_gui 1.4 indexes its size histogram by allocation info: each
    `a` line must be used by the next `+`, and infos first used in order.
    After the last `+`, an `a` line no `+` uses harms nothing."""
    lines = path.read_text().splitlines()
    last_plus = max([i for i, line in enumerate(lines) if line.startswith("+ ")] + [-1])
    seen, pending = 0, None
    for no, line in enumerate(lines, 1):
        if line.startswith("a "):
            t.check(pending is None, "line %d: `a` line %d never used before the next one" % (no, seen))
            pending = seen if no - 1 < last_plus else None
            seen += 1
        elif line.startswith("+ "):
            idx = int(line[2:], 16)
            if pending is not None:
                if not t.check(idx == pending, "line %d: `a` %d is followed by `+ %x`" % (no, pending, idx)):
                    return
                pending = None
            elif not t.check(idx < seen, "line %d: `+ %x` before its `a` line" % (no, idx)):
                return
        elif line.startswith("- "):
            t.check(int(line[2:], 16) < seen, "line %d: `%s` of an unknown info" % (no, line))
    t.check(pending is None, "the last `a` line is never used")


def heaptrack_print(t, path, *args):
    p = run([HEAPTRACK_PRINT, "-f", path] + list(args), 120)
    t.need(p.rc == 0 and not p.timed_out, "%s failed: %s" % (p.describe(), tail(p.err)))
    # it exits 0 even on garbage, complaining on stderr only
    t.need(not p.err.strip(), "heaptrack_print stderr not empty: %s" % tail(p.err))
    return text(p.out)


def stack_costs(t, path, cost):
    """heaptrack_print -F: one 'frames; COUNT' line per stack, exact."""
    out = t.tmp / ("stacks.%s.txt" % cost)
    heaptrack_print(t, path, "-F", out, "--flamegraph-cost-type", cost)
    vals = []
    for line in out.read_text().splitlines():
        m = re.search(r" (-?\d+)$", line)
        if m:
            vals.append(int(m.group(1)))
    return vals


def check_heaptrack(prog, slack=0):
    """slack: how many fewer temporaries heaptrack may count. heaptrack
    decides "temporary" by adjacency in one global order; the export writes
    each of our temporaries as an adjacent pair, but of those in flight at
    the event that first reached the peak (one per thread at most) it can
    do that for one only (report/heaptrack.c, invariant 3): with T threads
    allocating at once, up to T - 1 fewer; with one thread, none."""

    def within(t, what, ours, theirs):
        t.check(theirs is not None and ours - slack <= theirs <= ours,
                "%s: ours %s, heaptrack's %s (may be up to %d fewer)" % (what, ours, theirs, slack))

    def test(t):
        harness.need_tools(t)
        t.need(HEAPTRACK_PRINT, "heaptrack_print not installed (Debian package heaptrack)")
        trace, rep = traced(t, prog)
        path = convert(t, trace, "heaptrack", prog + ".heaptrack")
        check_gui_invariant(t, path)
        tot = rep["totals"]
        out = heaptrack_print(t, path, "--print-leaks", "1")

        def summary(label):
            m = re.search(r"^%s: (\S+)" % re.escape(label), out, re.M)
            return m.group(1) if m else None
        t.eq("calls to allocation functions", str(tot["allocations"]),
             summary("calls to allocation functions"))
        tmp = summary("temporary memory allocations")
        within(t, "temporary memory allocations", tot["temporary_allocations"],
               int(tmp) if tmp and tmp.isdigit() else None)
        t.eq("peak heap memory consumption", ht_bytes(tot["peak_heap_bytes"]),
             summary("peak heap memory consumption"))
        if tot.get("peak_rss_bytes"):
            # heaptrack counts RSS in pages: round up to 4 KiB
            rss = -(-tot["peak_rss_bytes"] // 4096) * 4096
            t.eq("peak RSS", ht_bytes(rss), summary("peak RSS (including heaptrack overhead)"))
        # heaptrack subtracts its built-in leak suppressions (libc, ld.so)
        m = re.search(r"^suppressed leaks: (\S+)", out, re.M)
        t.check(m is None, "heaptrack suppressed some leaks: %s" % (m and m.group(0)))
        t.eq("total memory leaked", ht_bytes(tot["leaked_bytes"]), summary("total memory leaked"))
        t.check(summary("bytes allocated in total") in (None, ht_bytes(tot["bytes_allocated"])),
                "bytes allocated in total: %s" % summary("bytes allocated in total"))

        # the exact figures, per stack
        for cost, key in (("allocations", "allocations"), ("temporary", "temporary"),
                          ("leaked", "leaked"), ("peak", "peak")):
            vals = stack_costs(t, path, cost)
            ours_sum = total_of(rep, key)
            ours_max = max([cost_of(s, key) for s in rep["sites"]] + [0])
            if cost == "temporary":
                within(t, "sum of heaptrack_print -F temporary", ours_sum, sum(vals))
                within(t, "largest stack by temporary", ours_max, max(vals + [0]))
                continue
            t.eq("sum of heaptrack_print -F %s" % cost, ours_sum, sum(vals))
            t.eq("largest stack by %s" % cost, ours_max, max(vals + [0]))

        # the top peak consumer, merged by heaptrack at its allocating line
        groups = {}
        for s in rep["sites"]:
            f = s["stack"][0] if s["stack"] else {}
            k = (f.get("function"), f.get("file"), f.get("line"))
            g = groups.setdefault(k, [0, 0])
            g[0] += s["peak_bytes"]
            g[1] += s["allocations"]
        top = max(groups.items(), key=lambda kv: kv[1][0])
        m = re.search(r"PEAK MEMORY CONSUMERS\n(\S+) peak memory consumed over (\d+) calls from\n(.*)\n",
                      out)
        if t.check(m, "no PEAK MEMORY CONSUMERS entry in heaptrack_print's output"):
            t.eq("top peak consumer's bytes", ht_bytes(top[1][0]), m.group(1))
            t.eq("top peak consumer's calls", str(top[1][1]), m.group(2))
            if top[0][0]:
                t.eq("top peak consumer's function", top[0][0], m.group(3).strip())

        # every leak's function is in heaptrack's leak list
        leaks = out.split("MEMORY LEAKS", 1)[1].split("MOST TEMPORARY ALLOCATIONS")[0] \
            if "MEMORY LEAKS" in out else ""
        t.check(leaks, "no MEMORY LEAKS section with --print-leaks 1")
        for lk in rep["leaks"]:
            fn = lk["stack"][0]["function"] if lk["stack"] else None
            if fn:
                t.check(re.search(r"^%s$" % re.escape(fn), leaks, re.M),
                        "leak in %s (%d bytes) not in heaptrack_print --print-leaks" % (fn, lk["bytes"]))
    return test


# Random event orders: the export's ordering rules (report/heaptrack.c) on
# interleavings no test program makes on purpose.

def random_base(t, src):
    """What random_trace keeps of src: its records but the events, END and
    LEAKS, and its STACK events with their ids."""
    recs = tracefile.records(src)
    raw, ids = b"", []
    for tag, p in recs:
        if tag == tracefile.REC_THREAD_BLOCK:
            for ev, start, end, vals in tracefile.block_events(p)[2]:
                if ev == tracefile.EV_STACK:
                    raw += p[start:end]
                    ids.append(vals[0])
    # the threads program has 6: a run's random choices depend on no more
    t.need(len(ids) >= 6, "too few stacks in %s" % src)
    return [r for r in recs if r[0] not in (tracefile.REC_THREAD_BLOCK, tracefile.REC_LEAKS,
                                           tracefile.REC_END)], raw, ids


def random_trace(t, base, seed, nthreads, nevents):
    """base's modules and stacks (random_base), with nevents heap events of
    nthreads threads in a random order: threads free their own last block
    (temporaries) and each other's, addresses are reused, sizes and stacks
    shared by the threads, and now and then an address is allocated again
    without a free."""
    import random
    rng = random.Random(seed)
    recs, raw, ids = base
    tids = [100 + k for k in range(nthreads)]
    body = list(recs)
    body.append((tracefile.REC_THREAD_BLOCK, tracefile.varint(tids[0]) + tracefile.varint(1) + raw))
    addrs = [0x10000 + 16 * k for k in range(48)]
    live, last, keys = {}, {}, set()
    now, prev = 1000, None  # prev: the address the last event allocated, if the first of its key
    for _ in range(nevents):
        now += rng.randint(1, 50)
        tid = rng.choice(tids)
        r = rng.random()
        mine = last.get(tid)
        if mine in live and r < 0.3:
            addr, ev = mine, None          # a temporary, or a block of another's
        elif live and r < 0.5:
            addr, ev = rng.choice(sorted(live)), None
        else:
            free = [a for a in addrs if a not in live]
            if not free or r > 0.99:
                # its free went unrecorded; but not the block the last
                # event made if the first of its size and stack (heaptrack
                # then counts one temporary more: invariant 4)
                addr = rng.choice([a for a in addrs if a != prev])
            else:
                addr = rng.choice(free)
            ev = (rng.choice((16, 32, 48)), rng.choice(ids[:6]))
        prev = None
        if ev is None:
            del live[addr]
            e = bytes([tracefile.EV_FREE]) + tracefile.varint(0) + tracefile.svarint(addr)
        else:
            live[addr] = tid
            last[tid] = addr
            if ev not in keys:
                keys.add(ev)
                prev = addr
            e = (bytes([tracefile.EV_ALLOC]) + tracefile.varint(0) + tracefile.svarint(addr) +
                 tracefile.varint(ev[0]) + tracefile.varint(ev[1]))
        body.append((tracefile.REC_THREAD_BLOCK, tracefile.varint(tid) + tracefile.varint(now) + e))
    out = t.tmp / ("random-%d.ht" % seed)
    tracefile.write(out, body)
    return out


def heaptrack_temporaries(path):
    """heaptrack's rule on a file's lines: a `-` is temporary when the last
    +/- line was a `+` of its index (and after a `-`, the last is 0)."""
    last, n = 0, 0
    for line in path.read_text().splitlines():
        if line.startswith("+ "):
            last = int(line[2:], 16)
        elif line.startswith("- "):
            n += int(line[2:], 16) == last
            last = 0
    return n


def t_heaptrack_random(t):
    """On random orders of events (random_trace), 160 of them: the export's
    temporaries by heaptrack's rule are at most nthreads - 1 fewer than the
    report's (check_heaptrack), never more. On the first 12, heaptrack_print
    reads the same count (the rule is heaptrack's), and its calls, peak,
    leaked and per-stack sums equal the report's."""
    harness.need_tools(t)
    t.need(HEAPTRACK_PRINT, "heaptrack_print not installed (Debian package heaptrack)")
    src, _ = traced(t, "threads")
    base = random_base(t, src)
    for seed in range(160):
        nthreads = 2 + seed % 4
        what = "seed %d (%d threads): " % (seed, nthreads)
        trace = random_trace(t, base, seed, nthreads, 600)
        if seed >= 12:
            # the plain CLI: many runs, the ASan one checked the first
            p = run([harness.HT, "report", "--format", "json", trace], harness.REPORT_TIMEOUT)
            t.need(p.rc == 0, what + "%s: %s" % (p.describe(), tail(p.err)))
            ours = json.loads(text(p.out))["totals"]["temporary_allocations"]
            path = t.tmp / "random.heaptrack"
            p = run([harness.HT, "convert", "--format", "heaptrack", "-o", path, trace],
                    harness.REPORT_TIMEOUT)
            t.need(p.rc == 0, what + "%s: %s" % (p.describe(), tail(p.err)))
            got = heaptrack_temporaries(path)
            if not t.check(ours - (nthreads - 1) <= got <= ours,
                           what + "temporary: ours %d, heaptrack's rule %d" % (ours, got)):
                return
            continue
        rep = harness.need_report(t, trace).data
        tot = rep["totals"]
        path = convert(t, trace, "heaptrack", "random-%d.heaptrack" % seed)
        check_gui_invariant(t, path)
        out = heaptrack_print(t, path)

        def summary(label):
            m = re.search(r"^%s: (\S+)" % re.escape(label), out, re.M)
            return m.group(1) if m else None
        t.eq(what + "calls", str(tot["allocations"]), summary("calls to allocation functions"))
        t.eq(what + "peak", ht_bytes(tot["peak_heap_bytes"]), summary("peak heap memory consumption"))
        t.eq(what + "leaked", ht_bytes(tot["leaked_bytes"]), summary("total memory leaked"))
        t.eq(what + "heaptrack's rule and heaptrack_print", summary("temporary memory allocations"),
             str(heaptrack_temporaries(path)))
        for cost, key in (("allocations", "allocations"), ("leaked", "leaked"), ("peak", "peak"),
                          ("temporary", "temporary")):
            got = sum(stack_costs(t, path, cost))
            ours = total_of(rep, key)
            if cost == "temporary":
                t.check(ours - (nthreads - 1) <= got <= ours,
                        what + "temporary: ours %d, heaptrack's %d" % (ours, got))
            else:
                t.eq(what + "sum of -F " + cost, ours, got)


# ---- flamegraph ------------------------------------------------------------------

def png_pixels(path):
    """Decode an 8-bit RGB/RGBA, non-interlaced PNG: (width, height, rows)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and not interlace, "unexpected PNG layout"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def svg_label(frame):
    """The label heaptrail gives a JSON frame (report/flamegraph.c)."""
    if frame.get("function"):
        return frame["function"]
    addr = frame["address"]
    if frame.get("module"):
        return "[%s] %s" % (os.path.basename(frame["module"]), addr)
    return addr


def browse(t, svg, png, term):
    d = harness.clients_dir(t)
    env = dict(os.environ, NODE_PATH=os.path.join(d, "node_modules"), HOME=str(t.tmp))
    p = run(["node", CLIENT_JS, svg, png, term or ""], 120, env=env)
    t.need(p.rc == 0, "%s failed: %s" % (p.describe(), tail(p.err, 1500)))
    try:
        return json.loads(text(p.out))
    except ValueError:
        t.fatal("browser script printed no JSON: %s" % tail(p.out))


def check_flamegraph(prog, cost, icicle, term, must_match):
    def test(t):
        harness.need_tools(t)
        trace, rep = traced(t, prog)
        extra = ["--cost", cost] + (["--icicle"] if icicle else [])
        svg = convert(t, trace, "flamegraph", prog + ".svg", extra)
        try:
            ET.parse(svg)
        except ET.ParseError as e:
            t.fatal("the SVG is not well-formed XML: %s" % e)
        t.check(not re.search(rb"(src|href)=\"https?:", svg.read_bytes()), "the SVG references the network")
        total = total_of(rep, cost)
        t.need(total > 0, "no %s cost in %s's trace" % (cost, prog))
        res = browse(t, svg, t.tmp / (prog + ".png"), term)
        t.eq("browser errors", [], res["errors"])

        # the picture: not blank, several colours
        w, h, rows = png_pixels(t.tmp / (prog + ".png"))
        bg = rows[h - 1][w - 1]
        ink = sum(1 for r in rows for px in r if px != bg)
        colours = len({px for r in rows for px in r})
        t.check(ink > 20000, "screenshot nearly blank: %d non-background pixels" % ink)
        t.check(colours > 12, "screenshot has only %d colours" % colours)

        # the figures: root = total cost, full width
        fr = res["before"]
        root = [f for f in fr if f["root"]]
        if not t.check(len(root) == 1, "expected one root frame, got %d" % len(root)):
            return
        root = root[0]
        t.eq("root frame value", total, root["value"])
        t.eq("svg total", total, res["svg"]["total"])
        t.check(abs(root["width"] - (WIDTH - 2 * PAD)) < 0.01, "root width %r" % root["width"])
        t.check("{:,}".format(total) in root["title"], "root tooltip %r lacks %s" % (root["title"], total))
        t.check("100.00%" in root["title"], "root tooltip lacks the percentage: %r" % root["title"])
        tot = rep["totals"]
        sub = res["svg"]["subtitle"]
        for k in ("allocations", "bytes_allocated", "peak_heap_bytes", "leaked_bytes"):
            t.check("{:,}".format(tot[k]) in sub, "subtitle %r lacks %s=%s" % (sub, k, tot[k]))
        # the widest leaf: the largest stack once frames merge by name
        paths = {}
        for s in rep["sites"]:
            c = cost_of(s, cost)
            if c:
                key = tuple(svg_label(f) for f in reversed(s["stack"]))
                paths[key] = paths.get(key, 0) + c
        t.eq("widest leaf (largest self cost)", max(paths.values()), max(f["self"] for f in fr))
        # merged: one box per function per path, fewer boxes than frames
        t.check(len(fr) - 1 <= sum(len(k) for k in paths), "frames not merged")
        # every drawn box is as wide as its share, and file:line shows
        scale = (WIDTH - 2 * PAD) / total
        for f in fr:
            t.check(abs(f["width"] - f["value"] * scale) < 0.01,
                    "%s: width %r for value %d" % (f["name"], f["width"], f["value"]))
        named = [f for f in fr if not f["root"] and re.search(r"\.(c|cc|h)$|:\d+", f["title"])]
        t.check(named, "no tooltip shows file:line")
        # orientation: the root at the bottom, or at the top (icicle)
        kids = [f for f in fr if f["depth"] == 1]
        if kids:
            t.check((kids[0]["y"] > root["y"]) == icicle, "root y %r, child y %r, icicle %s"
                    % (root["y"], kids[0]["y"], icicle))
        t.check(res["hover"] and "%" in res["hover"], "hover line: %r" % res["hover"])
        # labels stay inside their boxes, before and after a zoom
        for when in ("before", "after", "reset"):
            over = ["%s (text to %.2f, box to %.2f)" % (f["text"], f["textEnd"], f["x"] + f["width"])
                    for f in res[when] or []
                    if f["textEnd"] is not None and f["textEnd"] > f["x"] + f["width"] + 0.01]
            t.check(not over, "%s zoom: labels past their box: %s" % (when, over[:5]))
        if prog == "long_names":
            t.check(any(f["text"].endswith("..") for f in fr), "no label was shortened")

        # click to zoom: the frame spans the width, others outside hide
        zi = res["zoomIdx"]
        z0, z1 = fr[zi], res["after"][zi]
        t.check(abs(z1["width"] - (WIDTH - 2 * PAD)) < 0.01,
                "zoomed %s: width %r, expected %r" % (z0["name"], z1["width"], WIDTH - 2 * PAD))
        t.check(z0["width"] < (WIDTH - 2 * PAD) / 2, "zoomed frame was already wide")
        t.check(any(f["hidden"] for f in res["after"]), "zoom hid nothing")
        t.check(all(not f["hidden"] for f in res["reset"]), "reset zoom left frames hidden")
        t.check(abs(res["reset"][zi]["width"] - z0["width"]) < 0.01, "reset did not restore widths")

        # search: matches turn magenta, the share is shown
        if term:
            hits = [f for f in res["searched"] if f["match"]]
            t.check(hits and all(f["fill"] == "rgb(230, 0, 230)" for f in hits),
                    "search did not highlight: %r" % [(f["name"], f["fill"]) for f in hits])
            rx = re.compile(term)
            want = sum(cost_of(s, cost) for s in rep["sites"]
                       if any(rx.search(svg_label(f)) for f in s["stack"]))
            t.eq("matched value", str(want), res["matched"]["value"])
            t.check("%.2f%%" % (100.0 * want / total) in res["matched"]["text"],
                    "matched text %r, expected %.2f%%" % (res["matched"]["text"], 100.0 * want / total))
            want_names = {svg_label(f) for s in rep["sites"] if cost_of(s, cost)
                          for f in s["stack"] if rx.search(svg_label(f))}
            t.eq("frames matched", sorted(want_names), sorted({f["name"] for f in hits}))
            t.check(set(must_match) <= want_names, "expected matches %r" % must_match)
    return test


# ---- one pass ----------------------------------------------------------------

MERGES_RE = re.compile(rb"heaptrail: merges: (\d+)")


def t_one_pass(t):
    """Every format of convert reads the trace once (heaptrack's twice, as
    heaptrack_print): counted by HEAPTRAIL_MERGE_STATS on a trace whose
    threads have function events (chrome's spans), heap events and a peak."""
    prog = harness.PROGS / "fn_threads"
    t.need(prog.exists(), "%s not built (make programs)" % prog)
    tr = harness.heaptrail_run([prog], opts=["--functions"])
    if tr.proc.rc != 0 or not tr.out_path.exists():
        t.fatal("recording fn_threads failed: %s" % tail(tr.proc.err))
    env = harness.asan_env()
    env["HEAPTRAIL_MERGE_STATS"] = "1"
    want = {"events": 1, "chrome": 1, "massif": 1, "pprof": 1, "folded": 1,
            "flamegraph": 1, "heaptrack": 2}
    for fmt, n in sorted(want.items()):
        out = t.tmp / ("one_pass." + fmt)
        p = run([report_cli(), "convert", "--format", fmt, "-o", out, tr.out_path],
                harness.REPORT_TIMEOUT, env=env)
        if harness.SANITIZER_RE.search(text(p.err)):
            t.fatal("sanitizer error in %s: %s" % (p.describe(), tail(p.err, 1500)))
        m = MERGES_RE.search(p.err)
        if p.rc != 0 or not m:
            t.fatal("%s failed: %s" % (p.describe(), tail(p.err)))
        t.check(int(m.group(1)) == n, "convert --format %s merged the trace %s times, "
                "expected %d" % (fmt, m.group(1).decode(), n))


TESTS = [
    ("export_one_pass", t_one_pass),
    ("export_heaptrack_leaks", check_heaptrack("leaks")),
    ("export_heaptrack_cxx_alloc", check_heaptrack("cxx_alloc")),
    ("export_heaptrack_threads", check_heaptrack("threads", slack=4)),
    ("export_heaptrack_first_freed_last", check_heaptrack("first_freed_last")),
    ("export_heaptrack_peak_rescue", check_heaptrack("peak_rescue")),
    ("export_heaptrack_random", t_heaptrack_random),
    ("export_flamegraph_leaks_bytes",
     check_flamegraph("leaks", "bytes", False, "leak_(big|small)$", ["leak_big", "leak_small"])),
    ("export_flamegraph_cxx_alloc_peak_icicle",
     check_flamegraph("cxx_alloc", "peak", True, "make_", ["make_aligned()"])),
    ("export_flamegraph_threads_allocations",
     check_flamegraph("threads", "allocations", True, "worker[23]_alloc",
                      ["worker2_alloc", "worker3_alloc"])),
    ("export_flamegraph_long_names",
     check_flamegraph("long_names", "bytes", False, "long_enough", [
         "allocate_from_a_function_whose_name_is_long_enough_to_be_cut"])),
]
