"""test_sites.py - a site is a stack as people read it: the stacks that
symbolize to the same frames (function, file, line, inline chain) are one
site in the report, the leaks, the exports and the diff, under one number
(its stack_id); `--by-address` keeps return addresses apart.

  sites.unrolled      tests/programs/unrolled.c: three malloc calls on one
                      line, three return addresses: one site of three
                      blocks in report (text and JSON), leaks, folded,
                      pprof, events and diff, with one stack_id;
                      --by-address: three sites of one block
  sites.dlopen_loop   tests/programs/dlloop.c: libdlplugin.so loaded,
                      called and unloaded 1,000 times: plugin_leak's two
                      lines are two sites of 1,000 allocations (one
                      leak group of 1,000 blocks), not 2,000 sites of
                      one; --by-address (20 rounds) keeps one per load
"""

import gzip
import json
import re
import subprocess

from harness import (HT, PROGS, ROOT, SANITIZER_RE, SRC, asan_env, heaptrail_run, leaf,
                     marker_line, memo, need_tools, report_cli, run, tail, text)

TIMEOUT = 120
UNROLLED_SRC = str(SRC / "unrolled.c")
PLUGIN_SRC = str(SRC / "plugin" / "dlplugin.c")


def traced(t, prog, arg):
    need_tools(t)
    p = PROGS / prog
    t.need(p.exists(), "%s not built (make programs)" % p)

    def go():
        tr = heaptrail_run([p, arg], out_name="%s.%s.ht" % (prog, arg), timeout=TIMEOUT)
        if tr.proc.rc != 0 or not tr.out_path.exists():
            return None, "heaptrail run: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        return tr.out_path, None
    path, err = memo(("sites", prog, arg), go)
    if err:
        t.fatal(err)
    return path


def cli(t, args, asan=True):
    """heaptrail ARGS (the sanitized CLI unless asan is False): stdout."""
    p = run([report_cli() if asan else HT] + [str(a) for a in args], TIMEOUT, env=asan_env())
    if SANITIZER_RE.search(text(p.err)):
        t.fatal("sanitizer error in %s: %s" % (p.describe(), tail(p.err, 1500)))
    if p.rc != 0 or p.timed_out:
        t.fatal("%s: %s" % (p.describe(), tail(p.err)))
    return text(p.out)


def sites_at(rep, fn, line=None):
    """The report's sites whose leaf is fn (at that line)."""
    return [s for s in rep.get("sites", []) if leaf(s) == fn and
            (line is None or s["stack"][0].get("line") == line)]


def leak_groups(doc, fn):
    return [g for g in doc.get("leaks", []) if g.get("stack") and
            g["stack"][0].get("function") == fn]


def t_unrolled(t):
    line = marker_line(UNROLLED_SRC, "UNROLLED")
    a, b = traced(t, "unrolled", "100"), traced(t, "unrolled", "200")
    rep = json.loads(cli(t, ["report", "--format", "json", a]))
    ss = sites_at(rep, "make_three")
    t.eq("report: sites with leaf make_three", 1, len(ss))
    if len(ss) != 1:
        return
    s = ss[0]
    sid = s["stack_id"]
    t.eq("the site's line", line, s["stack"][0].get("line"))
    t.eq("the site's figures", (3, 300, 3, 300),
         (s["allocations"], s["bytes_allocated"], s["leaked_blocks"], s["leaked_bytes"]))
    t.eq("report: leak groups at make_three (blocks, stack_id)", [(3, sid)],
         [(g["blocks"], g["stack_id"]) for g in leak_groups(rep, "make_three")])
    # text: one site of three allocations
    txt = cli(t, ["report", a])
    rows = re.findall(r"^#\d+ (.*)\[site (\d+)\]\n\s+make_three ", txt, re.M)
    t.eq("text report: the [site N] labels of make_three's rows", 1, len({r[1] for r in rows}))
    t.check(any("300 B in 3 allocations" in r[0] for r in rows),
            "text report: make_three not one site of 3 allocations: %r" % rows)
    # leaks
    lk = json.loads(cli(t, ["leaks", "--format", "json", a]))
    t.eq("leaks: groups at make_three (blocks, stack_id)", [(3, sid)],
         [(g["blocks"], g["stack_id"]) for g in leak_groups(lk, "make_three")])
    lt = cli(t, ["leaks", a])
    t.eq("leaks text: stacks led by make_three", 1, len(re.findall(r"^\s+make_three ", lt, re.M)))
    # folded: one line
    out = t.tmp / "u.folded"
    cli(t, ["convert", "--format", "folded", "-o", out, a])
    lines = [ln for ln in out.read_text().splitlines() if ln.split(" ")[0].endswith(";make_three")]
    t.eq("folded: lines ending in make_three", ["300"], [ln.rsplit(" ", 1)[1] for ln in lines])
    # pprof: one sample labelled with the site's stack_id, none other for it
    pb = t.tmp / "u.pb.gz"
    cli(t, ["convert", "--format", "pprof", "-o", pb, a])
    proto = ROOT / "third_party" / "pprof"
    p = subprocess.run(["protoc", "--decode=perftools.profiles.Profile", "-I", str(proto),
                        str(proto / "profile.proto")], input=gzip.decompress(pb.read_bytes()),
                       capture_output=True, timeout=TIMEOUT)
    t.need(p.returncode == 0, "protoc --decode failed: %s" % tail(p.stderr))
    labels = [int(x) for x in re.findall(r"label \{\s+key: \d+\s+num: (\d+)", text(p.stdout))]
    t.eq("pprof: samples (one per site) labelled with the site's stack_id", 1, labels.count(sid))
    t.eq("pprof: samples", len(rep["sites"]), len(labels))
    # events: the three allocations name the site's stack
    ev = t.tmp / "u.events"
    cli(t, ["convert", "--format", "events", "-o", ev, a])
    allocs = [json.loads(ln) for ln in ev.read_text().splitlines() if '"kind": "alloc"' in ln]
    t.eq("events: allocations of 100 bytes, by stack", {sid: 3},
         {k: sum(1 for e in allocs if e["size"] == 100 and e["stack"] == k)
          for k in {e["stack"] for e in allocs if e["size"] == 100}})
    # diff: one row, one site on each side
    d = json.loads(cli(t, ["diff", "--format", "json", a, b]))
    rows = [r for r in d["sites"] if r["stack"] and r["stack"][0].get("function") == "make_three"]
    t.eq("diff: rows at make_three", 1, len(rows))
    if rows:
        r = rows[0]
        t.eq("diff: base and new (allocations, bytes, sites)", ((3, 300, 1), (3, 600, 1)),
             tuple((r[k]["allocations"], r[k]["bytes_allocated"], r[k]["sites"])
                   for k in ("base", "new")))
    # --by-address: the three return addresses apart
    rep = json.loads(cli(t, ["report", "--by-address", "--format", "json", a]))
    t.eq("--by-address: make_three's sites' allocations", [1, 1, 1],
         [s["allocations"] for s in sites_at(rep, "make_three")])
    lk = json.loads(cli(t, ["leaks", "--by-address", "--format", "json", a]))
    t.eq("leaks --by-address: groups at make_three", [1, 1, 1],
         [g["blocks"] for g in leak_groups(lk, "make_three")])
    d = json.loads(cli(t, ["diff", "--by-address", "--format", "json", a, b]))
    t.eq("diff --by-address: sites per side at make_three", [(3, 3)],
         [(r["base"]["sites"], r["new"]["sites"]) for r in d["sites"]
          if r["stack"] and r["stack"][0].get("function") == "make_three"])
    cli(t, ["convert", "--by-address", "--format", "pprof", "-o", pb, a])
    p = subprocess.run(["protoc", "--decode=perftools.profiles.Profile", "-I", str(proto),
                        str(proto / "profile.proto")], input=gzip.decompress(pb.read_bytes()),
                       capture_output=True, timeout=TIMEOUT)
    labels = re.findall(r"label \{\s+key: \d+\s+num: (\d+)", text(p.stdout))
    t.eq("pprof --by-address: samples", len(rep["sites"]), len(labels))


def t_dlopen_loop(t):
    leak_line = marker_line(PLUGIN_SRC, "PLUGIN_LEAK")
    a = traced(t, "dlloop", "1000")
    rep = json.loads(cli(t, ["report", "--top", "0", "--format", "json", a]))
    ss = sites_at(rep, "plugin_leak")
    got = {}
    for s in ss:
        n, al, lb = got.get(s["stack"][0].get("line"), (0, 0, 0))
        got[s["stack"][0].get("line")] = (n + 1, al + s["allocations"], lb + s["leaked_blocks"])
    t.eq("plugin_leak's sites by line: (sites, allocations, leaked blocks)",
         {leak_line - 3: (1, 1000, 0), leak_line: (1, 1000, 1000)}, got)
    t.check(rep["totals"]["sites"] < 50, "%d sites for a loop of a few lines" %
            rep["totals"]["sites"])
    lk = json.loads(cli(t, ["leaks", "--format", "json", a]))
    groups = leak_groups(lk, "plugin_leak")
    lsid = [s["stack_id"] for s in ss if s["stack"][0].get("line") == leak_line]
    t.eq("leaks: plugin_leak's groups (blocks, stack_id)", [(1000, lsid[0] if lsid else None)],
         [(g["blocks"], g["stack_id"]) for g in groups])
    out = t.tmp / "dl.folded"
    cli(t, ["convert", "--format", "folded", "--cost", "allocations", "-o", out, a])
    # folded stacks are function names: both lines in one
    t.eq("folded: plugin_leak's lines", ["2000"],
         [ln.rsplit(" ", 1)[1] for ln in out.read_text().splitlines()
          if ln.split(" ")[0].endswith(";plugin_leak")])
    # by address: each load is a module of its own (plain CLI: 40 sites)
    b = traced(t, "dlloop", "20")
    rep = json.loads(cli(t, ["report", "--by-address", "--top", "0", "--format", "json", b],
                         asan=False))
    t.eq("--by-address (20 rounds): plugin_leak's sites", 40,
         len(sites_at(rep, "plugin_leak")))


TESTS = [
    ("sites.unrolled", t_unrolled),
    ("sites.dlopen_loop", t_dlopen_loop),
]
