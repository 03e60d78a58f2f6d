"""test_export_pprof.py - the pprof, folded and events exports, checked
by the real clients users run on them, on traces of tests/programs.

The oracle is `heaptrail report --format json` of the same trace: every
figure a client shows (totals, the top function's bytes, each stack's
bytes and frames) must equal the report's. Conversions run with the
ASan+UBSan CLI, so a memory error in a writer fails the test.

  pprof.<prog>       go tool pprof -raw / -top / -traces, protoc --decode,
                     the pprof-format npm decoder
  pprof.http         go tool pprof -http (offline, -no_browser): /ui/top
  pprof.speedscope   speedscope (headless Chromium) imports the .pb.gz
  folded.<prog>      every --cost: sums and stacks vs the report
  folded.speedscope  speedscope imports the folded file
  events.<prog>      Python's json on every line: counts per kind, sizes,
                     stack references, leaked blocks
  events.memory      converting to events costs no more memory than folded

A missing client is a FAIL that names the package to install, never a
silent pass.
"""

import base64
import gzip
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from harness import (HT, PROGS, ROOT, SANITIZER_RE, asan_env, by_leaf, clients_dir, memo,
                     need_tools, report_cli, run, tail, text, traced_program, traced_report)

PROTO = ROOT / "third_party" / "pprof" / "profile.proto"
PROGRAMS = ("leaks", "cxx_alloc", "threads")
TIMEOUT = 60

# pprof sample type -> the JSON report's total it must sum to
PPROF_TOTALS = [
    ("alloc_objects", "allocations"),
    ("alloc_space", "bytes_allocated"),
    ("inuse_objects", "leaked_blocks"),
    ("inuse_space", "leaked_bytes"),
    ("peak_space", "peak_heap_bytes"),
    ("leaked_objects", "leaked_blocks"),
    ("leaked_space", "leaked_bytes"),
    ("temporary_objects", "temporary_allocations"),
]
# --cost -> (the site's field, the total's field) in the JSON report
FOLDED_COSTS = {
    "bytes": ("bytes_allocated", "bytes_allocated"),
    "allocations": ("allocations", "allocations"),
    "peak": ("peak_bytes", "peak_heap_bytes"),
    "leaked": ("leaked_bytes", "leaked_bytes"),
    "temporary": ("temporary_allocations", "temporary_allocations"),
}


# ---- shared steps -------------------------------------------------------------

traced = traced_program


def convert(t, trace, fmt, out, extra=()):
    """heaptrail convert with the sanitized CLI; fatal on any failure."""
    p = run([report_cli(), "convert", "--format", fmt] + list(extra) + ["-o", out, trace],
            TIMEOUT, env=asan_env())
    if SANITIZER_RE.search(text(p.err)):
        t.fatal("sanitizer error in %s: %s" % (p.describe(), tail(p.err, 1500)))
    if p.rc != 0 or p.timed_out:
        t.fatal("%s failed: %s" % (p.describe(), tail(p.err)))
    t.need(Path(out).exists(), "%s wrote no %s" % (p.describe(), out))
    return Path(out)


def tool_env():
    env = dict(os.environ)
    env.setdefault("HOME", "/tmp")
    env["GOTOOLCHAIN"] = "local"  # never download a Go toolchain
    env["GOPROXY"] = "off"
    return env


def need_go(t):
    t.need(shutil.which("go"), "`go` not found: install Debian's golang-go to run the "
           "go tool pprof checks (they are not skipped silently)")


def pprof(t, args, path):
    p = run(["go", "tool", "pprof", "-symbolize=none"] + list(args) + [path], TIMEOUT,
            env=tool_env())
    if p.rc != 0 or p.timed_out:
        t.fatal("%s failed: %s" % (p.describe(), tail(p.err)))
    return text(p.out)


def report_totals(rep):
    return rep["totals"]


def site_functions(site):
    """A report site's stack as pprof -traces prints it, leaf first, or None
    if a frame has no name (pprof then shows our module+offset name)."""
    out = []
    for f in site["stack"]:
        if not f.get("function"):
            return None
        out.append(f["function"] + (" (inline)" if f.get("inlined") else ""))
    return out


# ---- pprof ------------------------------------------------------------------------

PPROF_FORMAT_JS = r"""
import { Profile } from 'pprof-format'
import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
const p = Profile.decode(gunzipSync(readFileSync(process.argv[1])))
const S = p.stringTable.strings
const errs = []
const str = (i) => { i = Number(i); if (i < 0 || i >= S.length) { errs.push('bad string ' + i); return '' } return S[i] }
const ids = (arr, what) => { const m = new Map(); for (const x of arr) { const id = Number(x.id);
  if (!id) errs.push(what + ' id 0'); if (m.has(id)) errs.push('duplicate ' + what + ' ' + id); m.set(id, x) } return m }
const maps = ids(p.mapping, 'mapping'), funcs = ids(p.function, 'function'), locs = ids(p.location, 'location')
for (const l of p.location) {
  if (Number(l.mappingId) && !maps.has(Number(l.mappingId))) errs.push('location ' + l.id + ': unknown mapping')
  if (!l.line.length) errs.push('location ' + l.id + ' has no line')
  for (const ln of l.line) if (!funcs.has(Number(ln.functionId))) errs.push('location ' + l.id + ': unknown function')
}
const types = p.sampleType.map(t => str(t.type) + '/' + str(t.unit))
for (const s of p.sample) {
  if (s.value.length !== types.length) errs.push('sample with ' + s.value.length + ' values')
  for (const id of s.locationId) if (!locs.has(Number(id))) errs.push('sample: unknown location ' + id)
}
const totals = types.map((t, i) => p.sample.reduce((a, s) => a + Number(s.value[i]), 0))
console.log(JSON.stringify({ string0: S[0], types, dflt: str(p.defaultSampleType),
  totals, samples: p.sample.length, mappings: p.mapping.map(m => [str(m.filename), str(m.buildId),
  !!m.hasFunctions, !!m.hasFilenames, !!m.hasLineNumbers]),
  inlineLocations: p.location.filter(l => l.line.length > 1).length,
  timeNanos: Number(p.timeNanos), durationNanos: Number(p.durationNanos), errs }))
"""


def parse_raw(out):
    """go tool pprof -raw: ([sample type names], [[values] per sample])."""
    lines = out.splitlines()
    try:
        i = lines.index("Samples:")
    except ValueError:
        return None, None
    types = [w.split("/")[0] for w in lines[i + 1].split()]
    types = [w.replace("[dflt]", "") for w in types]
    rows = []
    for ln in lines[i + 2:]:
        m = re.match(r"^\s+((?:-?\d+\s+)+)-?\d*:", ln)
        if ln.startswith("Locations"):
            break
        if m:
            rows.append([int(v) for v in ln.split(":")[0].split()])
    return types, rows


def top_figures(out):
    """go tool pprof -top: (total, first row's flat, first row's name)."""
    m = re.search(r"of (\d+)B? total", out)
    total = int(m.group(1)) if m else None
    row = re.search(r"^\s+(\d+)B?\s+[\d.]+%\s+[\d.]+%\s+\d+B?\s+[\d.]+%\s+(.+)$", out, re.M)
    return total, (int(row.group(1)) if row else None), (row.group(2) if row else None)


def parse_traces(out):
    """go tool pprof -traces -unit=B: {stack_id: (value, [frames leaf first])}."""
    res = {}
    for block in out.split("-----------+")[1:]:
        sid, value, frames = None, None, []
        for ln in block.splitlines()[1:]:
            m = re.match(r"^\s+stack_id:\s+(\d+)", ln)
            if m:
                sid = int(m.group(1))
                continue
            m = re.match(r"^\s+(\d+)B?\s{3}(.+)$", ln)
            if m and value is None:
                value = int(m.group(1))
                frames.append(m.group(2).strip())
            elif ln.strip():
                frames.append(ln.strip())
        if sid is not None:
            res[sid] = (value, frames)
    return res


def check_pprof(t, name):
    need_go(t)
    trace, rep = traced(t, name)
    tot = report_totals(rep)
    pb = convert(t, trace, "pprof", t.tmp / (name + ".pb.gz"))
    data = pb.read_bytes()
    t.check(data[:2] == b"\x1f\x8b", "pprof output is not gzip (starts %r)" % data[:4])

    # -raw: every sample type, summed over the samples
    types, rows = parse_raw(pprof(t, ["-raw"], pb))
    t.need(types, "go tool pprof -raw printed no Samples section")
    t.eq("pprof sample types", [n for n, _ in PPROF_TOTALS], types)
    for i, (ty, key) in enumerate(PPROF_TOTALS):
        t.eq("sum of %s over pprof -raw samples vs report totals.%s" % (ty, key),
             tot[key], sum(r[i] for r in rows))
    t.eq("pprof samples vs report sites", len(rep["sites"]), len(rows))

    # -top: totals and the top function's flat bytes, per sample index
    leaf = by_leaf(rep)
    for ty, key, fld in (("alloc_space", "bytes_allocated", "bytes_allocated"),
                         ("alloc_objects", "allocations", "allocations"),
                         ("inuse_space", "leaked_bytes", "leaked_bytes")):
        total, flat, fn = top_figures(pprof(t, ["-top", "-unit=B", "-sample_index=" + ty], pb))
        t.eq("go tool pprof -top -sample_index=%s total" % ty, tot[key], total)
        best = max(v[fld] for v in leaf.values()) if leaf else 0
        if best:
            t.eq("go tool pprof -top -sample_index=%s top flat (%s)" % (ty, fn), best, flat)
            # a frame the report cannot name (null) is "module+0xoffset" in pprof
            key = None if fn and re.match(r"^\S+\+0x[0-9a-f]+$", fn) else fn
            t.check(key in leaf and leaf[key][fld] == best,
                    "pprof's top function %r is not a leaf with %d in the report" % (fn, best))
    top = pprof(t, ["-top"], pb)
    t.check("Type: alloc_space" in top, "default sample type is not alloc_space: %s" % top[:300])
    t.check(("File: %s" % name) in top, "pprof does not name the main binary %s first: %s" %
            (name, top[:200]))

    # -traces: each site's bytes and frames, inlined ones marked, by stack id
    traces = parse_traces(pprof(t, ["-traces", "-unit=B", "-sample_index=alloc_space"], pb))
    for s in rep["sites"]:
        if not s["bytes_allocated"]:
            continue
        got = traces.get(s["stack_id"])
        if not t.check(got, "pprof -traces has no stack_id %d" % s["stack_id"]):
            continue
        t.eq("pprof -traces bytes of stack %d" % s["stack_id"], s["bytes_allocated"], got[0])
        want = site_functions(s)
        if want is not None:
            t.eq("pprof -traces frames of stack %d" % s["stack_id"], want, got[1])

    # protoc: the bytes decode against the schema
    need_protoc = shutil.which("protoc")
    t.need(need_protoc, "protoc not found: install Debian's protobuf-compiler")
    p = subprocess.run(["protoc", "--decode=perftools.profiles.Profile", "-I", str(PROTO.parent),
                        str(PROTO)], input=gzip.decompress(data),
                       capture_output=True, timeout=TIMEOUT)
    t.check(p.returncode == 0, "protoc --decode failed: %s" % tail(p.stderr))
    dec = text(p.stdout)
    t.check(re.search(r'^string_table: ""$', dec, re.M), "protoc: no empty string_table[0]")
    t.check("has_line_numbers: true" in dec, "protoc: mappings lack has_line_numbers")

    # pprof-format (npm): structure, links, totals, mappings
    d = clients_dir(t)
    p = run(["node", "--input-type=module", "-e", PPROF_FORMAT_JS, pb], TIMEOUT, cwd=str(d))
    if p.rc != 0:
        t.fatal("pprof-format could not decode: %s" % tail(p.err))
    info = json.loads(text(p.out))
    t.eq("pprof-format: problems", [], info["errs"])
    t.eq("pprof-format: string_table[0]", "", info["string0"])
    t.eq("pprof-format: default sample type", "alloc_space", info["dflt"])
    for i, (ty, key) in enumerate(PPROF_TOTALS):
        t.eq("pprof-format: total %s" % ty, tot[key], info["totals"][i])
    t.check(info["mappings"] and all(m[1] and m[2] and m[3] and m[4] for m in info["mappings"]),
            "pprof-format: a mapping lacks build-id or has_* flags: %r" % info["mappings"])
    t.check(info["mappings"] and info["mappings"][0][0].endswith("/" + name),
            "mapping[0] is not the program: %r" % info["mappings"][:1])
    t.check(info["timeNanos"] > 1e18, "time_nanos not set: %r" % info["timeNanos"])
    t.eq("pprof duration_nanos", round(tot["duration_seconds"] * 1e9), info["durationNanos"])
    inlined = sum(1 for s in rep["sites"] for f in s["stack"] if f.get("inlined"))
    if inlined:
        t.check(info["inlineLocations"] > 0,
                "the report has inlined frames but no pprof location has several lines")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def t_pprof_http(t):
    """go tool pprof -http, offline: the web UI's top table has our figures."""
    need_go(t)
    trace, rep = traced(t, "leaks")
    pb = convert(t, trace, "pprof", t.tmp / "leaks.pb.gz")
    port = free_port()
    proc = subprocess.Popen(["go", "tool", "pprof", "-symbolize=none", "-no_browser",
                             "-http=127.0.0.1:%d" % port, str(pb)], env=tool_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    page = None
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/ui/top" % port, timeout=5) as r:
                    page = r.read().decode("utf-8", "replace")
                break
            except OSError:
                time.sleep(0.2)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out = proc.communicate()[0]
    t.need(page, "pprof -http served no /ui/top: %s" % tail(out or b""))
    m = re.search(r"makeTopTable\(\s*(\d+)\s*,\s*(\[.*?\])\s*\)", page, re.S)
    t.need(m, "no top table in pprof's /ui/top page")
    t.eq("pprof -http total", rep["totals"]["bytes_allocated"], int(m.group(1)))
    rows = json.loads(m.group(2))
    best = max(v["bytes_allocated"] for v in by_leaf(rep).values())
    t.eq("pprof -http top row's flat (%s)" % rows[0].get("Name"), best, rows[0].get("Flat"))


# ---- speedscope (headless Chromium, as its own CLI loads a file) -----------------

def speedscope(t, path, name):
    """Load path into the speedscope web app as file `name`; returns the
    console lines. Fatal unless speedscope imported it."""
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
    p = run([chromium] + flags, 120)
    log = text(p.err)
    consoles = re.findall(r'CONSOLE[^"]*"([^"]*)"', log)
    title = re.search(r"<title>([^<]*)</title>", text(p.out))
    t.check(not any(c.startswith("ALERT: ") for c in consoles),
            "speedscope refused %s: %r" % (name, consoles))
    t.need(title and title.group(1) == "%s - speedscope" % name,
           "speedscope did not load %s (title %r; console %r)" %
           (name, title.group(1) if title else None, consoles))
    return consoles


def t_pprof_speedscope(t):
    trace, _ = traced(t, "threads")
    pb = convert(t, trace, "pprof", t.tmp / "threads.pb.gz")
    consoles = speedscope(t, pb, "threads.pb.gz")
    t.check(any("pprof" in c.lower() for c in consoles),
            "speedscope did not import it as pprof: %r" % consoles)


# ---- folded -----------------------------------------------------------------------

FOLDED_LINE = re.compile(r"^(\S.*) (\d+)$")


def check_folded(t, name):
    trace, rep = traced(t, name)
    tot = report_totals(rep)
    for cost, (site_key, total_key) in FOLDED_COSTS.items():
        out = convert(t, trace, "folded", t.tmp / ("%s.%s.folded" % (name, cost)),
                      ["--cost", cost])
        got = {}
        for ln in out.read_text().splitlines():
            m = FOLDED_LINE.match(ln)
            if not t.check(m, "--cost %s: bad folded line %r" % (cost, ln)):
                continue
            t.check(m.group(1) not in got, "--cost %s: stack twice: %r" % (cost, m.group(1)))
            t.check(int(m.group(2)) > 0, "--cost %s: zero-cost line %r" % (cost, ln))
            got[m.group(1)] = int(m.group(2))
        t.eq("folded --cost %s: sum vs report totals.%s" % (cost, total_key), tot[total_key],
             sum(got.values()))
        # the same stacks, root first, merged by names, as the report's sites
        want, complete = {}, True
        for s in rep["sites"]:
            if not s[site_key]:
                continue
            fns = site_functions(s)
            if fns is None:
                complete = False
                continue
            key = ";".join(f.replace(" (inline)", "").replace(";", ":") for f in reversed(fns))
            want[key] = want.get(key, 0) + s[site_key]
        if complete:
            t.eq("folded --cost %s: stacks and costs" % cost, want, got)
        else:
            for k, v in want.items():
                t.eq("folded --cost %s: cost of %s" % (cost, k), v, got.get(k))


def t_folded_speedscope(t):
    trace, rep = traced(t, "threads")
    out = convert(t, trace, "folded", t.tmp / "threads.folded")
    consoles = speedscope(t, out, "threads.collapsedstack.txt")
    t.check(any("collapsed stack" in c for c in consoles),
            "speedscope did not import it as collapsed stacks: %r" % consoles)


# ---- events -----------------------------------------------------------------------

def check_events(t, name):
    trace, rep = traced(t, name)
    tot = report_totals(rep)
    out = convert(t, trace, "events", t.tmp / (name + ".jsonl"))
    kinds = {}
    stacks = set()
    live = {}
    last_time, next_id = -1, 0
    objs = []
    with open(out, encoding="utf-8") as f:
        for n, ln in enumerate(f, 1):
            try:
                objs.append(json.loads(ln))
            except ValueError as e:
                t.fatal("line %d is not JSON (%s): %r" % (n, e, ln[:200]))
    t.need(objs and objs[0].get("kind") == "header", "first line is not the header")
    t.need(objs[-1].get("kind") == "end", "last line is not the end line")
    head = objs[0]
    t.eq("header time_unit", "ns", head.get("time_unit"))
    tids = {th["thread"] for th in head.get("threads", [])}
    seen_tids = set()
    freed_known = unknown = alloc_bytes = 0
    for o in objs[1:-1]:
        k = o.get("kind")
        kinds[k] = kinds.get(k, 0) + 1
        if k == "stack":
            t.check(o["stack"] not in stacks, "stack %r defined twice" % o["stack"])
            stacks.add(o["stack"])
            t.check(o["frames"] and all({"ip", "name", "file", "line"} <= set(fr)
                                        for fr in o["frames"]),
                    "stack %r: frames lack ip/name/file/line" % o["stack"])
            continue
        t.check(k in ("alloc", "realloc", "free"), "unknown kind %r" % k)
        if o.get("id") != next_id:
            t.fatal("event ids not sequential: expected %d, got %r" % (next_id, o.get("id")))
        next_id += 1
        if o["time"] < last_time:
            t.fatal("event %d goes back in time (%d < %d)" % (o["id"], o["time"], last_time))
        last_time = o["time"]
        seen_tids.add(o["thread"])
        t.check(re.match(r"^0x[0-9a-f]+$", o["addr"]), "event %d: addr %r" % (o["id"], o["addr"]))
        if k in ("alloc", "realloc"):
            t.check(o["stack"] is None or o["stack"] in stacks,
                    "event %d uses stack %r before its definition" % (o["id"], o["stack"]))
            if k == "realloc":
                if o["prev_size"] is None:
                    unknown += 1
                else:
                    freed_known += 1
                    live.pop(o["prev_addr"], None)
            live[o["addr"]] = o["size"]
            alloc_bytes += o["size"]
        else:
            if o["size"] is None:
                unknown += 1
            else:
                freed_known += 1
                t.eq("event %d: size of the freed block" % o["id"], live.get(o["addr"]), o["size"])
                live.pop(o["addr"], None)
    t.eq("alloc + realloc events vs report allocations", tot["allocations"],
         kinds.get("alloc", 0) + kinds.get("realloc", 0))
    t.eq("frees of known blocks (free + realloc) vs report frees", tot["frees"], freed_known)
    t.eq("frees of unknown blocks vs report ignored_frees", tot["ignored_frees"], unknown)
    t.eq("bytes of alloc + realloc events vs report bytes_allocated",
         tot["bytes_allocated"], alloc_bytes)
    t.eq("blocks live after the last event vs report leaked_blocks", tot["leaked_blocks"], len(live))
    t.eq("bytes live after the last event vs report leaked_bytes", tot["leaked_bytes"],
         sum(live.values()))
    t.check(seen_tids <= tids, "events name threads the header does not: %r" % (seen_tids - tids))
    end = objs[-1]
    t.eq("end line's event count", next_id, end.get("events"))
    t.eq("end line's live_blocks", tot["leaked_blocks"], end.get("live_blocks"))
    if name == "threads":
        t.check(len(seen_tids) > 1, "threads: events of one thread only")


def maxrss_kb(cmd):
    """Peak RSS (KiB) of one child process, from wait4's rusage."""
    p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru.ru_maxrss, p.stderr.read()


def t_events_memory(t):
    """Streaming: converting every event of churn (100,000 events) to
    JSON costs about what folding its few stacks costs (both load the
    trace and build the model); the optimized CLI is measured, not ASan."""
    need_tools(t)
    tr, rep, err = traced_report(("churn",), [PROGS / "churn"])
    if err:
        t.fatal(err)
    rc1, folded_kb, e1 = maxrss_kb([HT, "convert", "--format", "folded", "-o", os.devnull,
                                    tr.out_path])
    rc2, events_kb, e2 = maxrss_kb([HT, "convert", "--format", "events", "-o", os.devnull,
                                    tr.out_path])
    t.need(rc1 == 0 and rc2 == 0, "convert failed: %s %s" % (tail(e1), tail(e2)))
    t.check(events_kb <= folded_kb + 4096,
            "events used %d KiB, folded %d KiB: more than 4 MiB apart (not streamed?)" %
            (events_kb, folded_kb))


# ---- the list ---------------------------------------------------------------------

TESTS = []
for _n in PROGRAMS:
    TESTS.append(("pprof.%s" % _n, lambda t, n=_n: check_pprof(t, n)))
TESTS.append(("pprof.http", t_pprof_http))
TESTS.append(("pprof.speedscope", t_pprof_speedscope))
for _n in PROGRAMS:
    TESTS.append(("folded.%s" % _n, lambda t, n=_n: check_folded(t, n)))
TESTS.append(("folded.speedscope", t_folded_speedscope))
for _n in PROGRAMS:
    TESTS.append(("events.%s" % _n, lambda t, n=_n: check_events(t, n)))
TESTS.append(("events.memory", t_events_memory))
