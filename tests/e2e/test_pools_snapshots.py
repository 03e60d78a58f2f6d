"""test_pools_snapshots.py - the pools and snapshots, end to end:
tests/programs/pools_snapshots.c carves a static buffer with a bump
allocator, reports its blocks with heaptrail_pool_* (heaptrail.h), resets
and destroys a pool, and takes snapshots; its figures are known by
construction (the header comment of the program lists them) and are checked
exactly.

  pools.totals     pool blocks count like malloc's: allocations, frees (one
                   per block freed by RESET/DESTROY), bytes, peak, leaks (the
                   never-reset pool's 5 blocks at keep_entry's line)
  pools.json       the JSON report's "pools" member
  pools.text       the POOLS section of the text report
  pools.exports    the leaked-cost folded export and the heaptrack export
                   see the pool frees too (the merge makes them)
  snapshots.json   the JSON report's "snapshots" member: live figures and
                   top sites (leaf function and line) of "before", "after"
                   and the one taken on the snapshot signal
  snapshots.text   the SNAPSHOTS section of the text report
  pools.none       a program without pools or snapshots: neither section,
                   neither JSON member
  pools.reused_after_destroy  a pool object allocated from after its destroy
                   (no new create) is a new row, not the destroyed one
  pools.many_live  20,000 resets and a destroy among 200,000 live blocks:
                   the agent's live figures (heaptrail_stats, checked by the
                   program) and the report's pool counts are exact, in a
                   summary too

Reports run with the ASan+UBSan CLI, so a memory error fails the test.
"""

import gzip
import os
import re

from harness import (HT, PROGS, SRC, heaptrail_run, leaks_by_leaf, marker_line, memo,
                     need_tools, report, run, tail, text)

TIMEOUT = 60
PROG = "pools_snapshots"
SOURCE = SRC / (PROG + ".c")

# By construction (tests/programs/pools_snapshots.c).
TOTALS = {"allocations": 67, "frees": 61, "bytes_allocated": 2380, "peak_heap_bytes": 1100,
          "leaked_blocks": 6, "leaked_bytes": 260}
POOLS = [
    {"name": "keep", "allocations": 5, "bytes_allocated": 160, "resets": 0,
     "freed_by_reset_or_destroy": 0, "destroyed": False, "live_blocks": 5, "live_bytes": 160},
    {"name": "parse", "allocations": 60, "bytes_allocated": 1920, "resets": 2,
     "freed_by_reset_or_destroy": 60, "destroyed": True, "live_blocks": 0, "live_bytes": 0},
]
# (name, signal, live bytes, live blocks, [(leaf marker, live bytes, live blocks)])
SNAPSHOTS = [
    ("before", False, 1100, 27, [("parse_node", 640, 20), ("make_b", 200, 1),
                                 ("keep_entry", 160, 5)]),
    ("after", False, 260, 6, [("keep_entry", 160, 5), ("make_a", 100, 1)]),
    (None, False, 260, 6, [("keep_entry", 160, 5), ("make_a", 100, 1)]),  # heaptrail_snapshot(NULL)
    (None, True, 260, 6, [("keep_entry", 160, 5), ("make_a", 100, 1)]),
]


def traced(t, prog=PROG, args=("signal",)):
    """(trace path, JSON report) of prog run with snapshot_signal=12 (the
    program raises SIGUSR2 when given "signal"); memoised."""
    need_tools(t)
    p = PROGS / prog
    t.need(p.exists(), "%s not built (make programs)" % p)

    def go():
        env = dict(os.environ)
        env["HEAPTRAIL_OPTIONS"] = "snapshot_signal=12"
        tr = heaptrail_run([p] + list(args), env=env, timeout=TIMEOUT)
        if tr.proc.timed_out or not tr.out_path.exists():
            return tr, None, "heaptrail run failed: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        if tr.proc.rc != 0:
            return tr, None, "%s exited %s: %s" % (prog, tr.proc.rc, tail(tr.proc.err))
        rep = report(tr.out_path, "json")
        if rep.err:
            return tr, rep, rep.err
        if rep.proc.rc != 0:
            return tr, rep, "report exited %s: %s" % (rep.proc.rc, tail(rep.proc.err))
        return tr, rep, None
    tr, rep, err = memo(("pools", prog) + tuple(args), go)
    if err:
        t.fatal(err)
    return tr.out_path, rep.data


def text_report(t, path):
    r = report(path, "text")
    if r.err:
        t.fatal(r.err)
    t.eq("exit status of report", 0, r.proc.rc)
    return text(r.proc.out)


def section(out, title):
    """Lines of the text report's section `title` (its rule line excluded),
    up to the first blank line; None when absent."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(title + " ---"):
            body = []
            for ln in lines[i + 1:]:
                if not ln.strip():
                    break
                body.append(ln)
            return body
    return None


def loc(marker):
    return "%s.c:%d" % (PROG, marker_line(SOURCE, marker))


# ---- pools ------------------------------------------------------------------------------

def t_totals(t):
    _, rep = traced(t)
    tot = rep["totals"]
    t.eq("totals", TOTALS, {k: tot.get(k) for k in TOTALS})
    t.eq("ignored frees (every pool free matches a block)", 0, tot.get("ignored_frees"))
    t.eq("reused addresses (a reset pool's addresses are freed before reuse)", 0,
         tot.get("reused_addresses"))
    lk = leaks_by_leaf(rep)
    # the pool blocks' leaf may be heaptrail.h's wrapper (static inline,
    # kept at -O0): count the leaks by the program's own function instead
    by_fn = {}
    for g in rep.get("leaks", []):
        fns = [f.get("function") for f in g.get("stack") or []]
        fn = next((f for f in fns if f and not f.startswith("heaptrail_")), None)
        a = by_fn.setdefault(fn, [0, 0])
        a[0] += g["blocks"]
        a[1] += g["bytes"]
    t.eq("leaks by allocating function", {"keep_entry": [5, 160], "make_a": [1, 100]}, by_fn)
    t.check(sum(v["bytes"] for v in lk.values()) == 260, "leaks do not add up to 260 B: %r" % lk)


def t_pools_json(t):
    _, rep = traced(t)
    pools = rep.get("pools")
    t.need(isinstance(pools, list), "the JSON report has no \"pools\" array")
    got = [{k: p.get(k) for k in POOLS[0]} for p in pools]
    t.eq("pools (in order of creation)", POOLS, got)
    ids = [p.get("id") for p in pools]
    t.check(all(isinstance(i, int) and i > 0 for i in ids) and len(set(ids)) == 2,
            "pool ids are not two distinct addresses: %r" % ids)
    keys = list(rep)
    # later issues' members ("suppressions") may follow them
    t.eq("new members come last", ["timeline", "pools", "snapshots"],
         keys[keys.index("timeline"):][:3] if "timeline" in keys else keys)


def t_pools_text(t):
    path, _ = traced(t)
    out = text_report(t, path)
    body = section(out, "POOLS")
    t.need(body is not None, "no POOLS section in the text report")
    t.eq("POOLS header", ["pool", "allocations", "bytes", "resets", "destroyed", "live",
                          "blocks", "live", "bytes"], body[0].split())
    rows = {ln.split()[0]: ln.split()[1:] for ln in body[1:]}
    t.eq("POOLS rows", {"keep": ["5", "160", "0", "no", "5", "160"],
                        "parse": ["60", "1,920", "2", "yes", "0", "0"]}, rows)
    t.check(out.index("POOLS ---") < out.index("SNAPSHOTS ---"), "POOLS is not before SNAPSHOTS")


def t_exports(t):
    path, _ = traced(t)
    folded = path.parent / "leaked.folded"
    p = run([HT, "convert", "--format", "folded", "--cost", "leaked", "-o", folded, path], TIMEOUT)
    t.need(p.rc == 0, "convert folded failed: %s: %s" % (p.describe(), tail(p.err)))
    total = 0
    for line in folded.read_text().splitlines():
        total += int(line.rsplit(" ", 1)[1])
    t.eq("leaked bytes in the folded export", 260, total)
    hk = path.parent / "x.heaptrack"
    p = run([HT, "convert", "--format", "heaptrack", "-o", hk, path], TIMEOUT)
    t.need(p.rc == 0, "convert heaptrack failed: %s: %s" % (p.describe(), tail(p.err)))
    data = hk.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    lines = data.decode("utf-8", "replace").splitlines()
    t.eq("frees (`-` lines) in the heaptrack export", 61,
         sum(1 for ln in lines if ln.startswith("- ")))


# ---- snapshots ------------------------------------------------------------------------

def t_snapshots_json(t):
    _, rep = traced(t)
    snaps = rep.get("snapshots")
    t.need(isinstance(snaps, list), "the JSON report has no \"snapshots\" array")
    want = []
    for name, sig, b, n, top in SNAPSHOTS:
        want.append((name, sig, b, n, [(loc(m), tb, tn) for m, tb, tn in top]))
    got = []
    for s in snaps:
        top = []
        for ts in s.get("top_sites", []):
            f = ts.get("file") or ""
            top.append(("%s:%s" % (os.path.basename(f), ts.get("line")), ts.get("live_bytes"),
                        ts.get("live_blocks")))
        got.append((s.get("name"), s.get("signal"), s.get("live_bytes"), s.get("live_blocks"), top))
    t.eq("snapshots", want, got)
    fns = [[ts.get("function") for ts in s.get("top_sites", [])] for s in snaps]
    t.eq("top sites' functions", [["parse_node", "make_b", "keep_entry"]] + [["keep_entry", "make_a"]] * 3,
         fns)
    times = [s.get("time_seconds") for s in snaps]
    t.check(times == sorted(times) and times[0] > 0, "snapshot times not increasing: %r" % times)


def t_snapshots_text(t):
    path, _ = traced(t)
    out = text_report(t, path)
    body = section(out, "SNAPSHOTS")
    t.need(body is not None, "no SNAPSHOTS section in the text report")
    t.eq("rows", len(SNAPSHOTS), len(body) - 1)
    for (name, sig, b, n, top), ln in zip(SNAPSHOTS, body[1:]):
        m = re.match(r"\s+(\S+)\s+\S+ \S+\s+([\d,]+)\s+([\d,]+)\s+(.*)$", ln)
        t.need(m, "unexpected SNAPSHOTS row: %r" % ln)
        t.eq("name", name or ("signal" if sig else "(unnamed)"), m.group(1))
        t.eq("live bytes of %s" % m.group(1), b, int(m.group(2).replace(",", "")))
        t.eq("live blocks of %s" % m.group(1), n, int(m.group(3).replace(",", "")))
        want = "; ".join("%s %s (%s B)" % (mk, loc(mk), "{:,}".format(tb)) for mk, tb, _ in top)
        t.eq("top sites of %s" % m.group(1), want, m.group(4))


def t_none(t):
    """A program without pools or snapshots gets neither section."""
    path, rep = traced(t, "tags_phases", ())
    t.check("pools" not in rep and "snapshots" not in rep,
            "JSON of a program without pools has %r" % [k for k in rep if k in ("pools", "snapshots")])
    out = text_report(t, path)
    t.check("POOLS ---" not in out and "SNAPSHOTS ---" not in out,
            "text report of a program without pools has a POOLS or SNAPSHOTS section")


def pool_phase_report(t, opts):
    need_tools(t)
    tr = heaptrail_run([str(PROGS / "pool_phase")], list(opts), timeout=TIMEOUT)
    t.need(tr.proc.rc == 0 and tr.out_path.exists(),
           "pool_phase %s: %s: %s" % (opts, tr.proc.describe(), tail(tr.proc.err)))
    r = report(tr.out_path)
    t.need(not r.err and r.proc.rc == 0, "report: %s %s" % (r.err, tail(r.proc.err)))
    return r.data


def t_pool_realloc(t):
    """A pool block realloc'd with heaptrail_realloc stays in its pool: the
    reset frees it (before, it left the pool and looked leaked)."""
    d = pool_phase_report(t, ())
    tot = d["totals"]
    t.eq("allocations, frees, leaked blocks", (602, 602, 0),
         (tot["allocations"], tot["frees"], tot["leaked_blocks"]))
    pools = {p.get("name"): (p.get("allocations"), p.get("bytes_allocated"), p.get("live_blocks"),
                             p.get("live_bytes")) for p in d.get("pools", [])}
    t.eq("pools P and Q: allocations, bytes, live blocks, live bytes",
         {"P": (2, 96, 0, 0), "Q": (300, 38400, 0, 0)}, pools)


def t_pool_phase_sampled(t):
    """Sampled: a pool's live bytes are 0 when its live blocks are (before,
    a rounding leftover), a phase's net live change is the estimate like
    its bytes (before, the raw sampled bytes), and the total of frees
    counts an estimate of the pool resets' frees (before, only the 300
    free calls)."""
    for seed in ("1", "2", "3"):
        d = pool_phase_report(t, ("--sample-rate", "4096", "--sample-seed", seed))
        for p in d.get("pools", []):
            if p.get("live_blocks") == 0:
                t.eq("seed %s: pool %s live bytes with no live block" % (seed, p.get("name")), 0,
                     p.get("live_bytes"))
        ph = [x for x in d.get("phases", []) if x.get("phase") == "ph"]
        t.need(len(ph) == 1, "seed %s: no phase ph: %r" % (seed, d.get("phases")))
        t.eq("seed %s: phase ph's net live change (all its blocks outlive it) = its bytes" % seed,
             ph[0].get("bytes_allocated"), ph[0].get("net_live_bytes"))
        t.check(d["totals"]["frees"] > 302,
                "seed %s: total frees %s counts no pool reset" % (seed, d["totals"]["frees"]))


def t_many_live(t):
    """Each reset walked the agent's whole live-block table: 20,000 resets
    among 200,000 live blocks took over a minute (now well under a second;
    bench/RESULTS.md, "pool resets"), and the run timed out."""
    need_tools(t)
    p = PROGS / "pool_many"
    t.need(p.exists(), "%s not built (make programs)" % p)
    tr = heaptrail_run([p], timeout=TIMEOUT)
    t.need(not tr.proc.timed_out, "pool_many timed out: %s" % tr.proc.describe())
    t.eq("exit status (10 + the query whose live figures are wrong)", 0, tr.proc.rc)
    t.need(tr.out_path.exists(), "no trace: %s" % tail(tr.proc.err))
    r = report(tr.out_path, "json")
    t.need(not r.err and r.proc.rc == 0, "report: %s %s" % (r.err, tail(r.proc.err)))
    got = [{k: x.get(k) for k in ("name", "allocations", "resets", "freed_by_reset_or_destroy",
                                   "destroyed", "live_blocks")} for x in r.data.get("pools", [])]
    t.eq("pools", [
        {"name": "request", "allocations": 160000, "resets": 20000,
         "freed_by_reset_or_destroy": 155000, "destroyed": False, "live_blocks": 0},
        {"name": "keep", "allocations": 20000, "resets": 0, "freed_by_reset_or_destroy": 20000,
         "destroyed": True, "live_blocks": 0}], got)
    tot = r.data["totals"]
    t.eq("allocations, frees, leaked blocks", (380001, 380001, 0),
         (tot["allocations"], tot["frees"], tot["leaked_blocks"]))
    # summary mode: the site rows count the pools' frees from the same lists
    tr = heaptrail_run([p], ["--summary"], timeout=TIMEOUT)
    t.need(not tr.proc.timed_out, "pool_many --summary timed out: %s" % tr.proc.describe())
    t.eq("exit status in summary mode", 0, tr.proc.rc)
    r = report(tr.out_path, "json")
    t.need(not r.err and r.proc.rc == 0, "report: %s %s" % (r.err, tail(r.proc.err)))
    tot = r.data["totals"]
    t.eq("summary: allocations, frees, leaked blocks", (380001, 380001, 0),
         (tot["allocations"], tot["frees"], tot["leaked_blocks"]))


def t_reused_after_destroy(t):
    """A pool_alloc after the destroy landed in the destroyed pool's row,
    which then read "destroyed: yes" with a live block."""
    need_tools(t)
    p = PROGS / "pool_reuse"
    t.need(p.exists(), "%s not built (make programs)" % p)
    tr = heaptrail_run([p], timeout=TIMEOUT)
    t.need(tr.proc.rc == 0 and tr.out_path.exists(), "pool_reuse: %s: %s" % (
        tr.proc.describe(), tail(tr.proc.err)))
    r = report(tr.out_path, "json")
    t.need(not r.err and r.proc.rc == 0, "report: %s %s" % (r.err, tail(r.proc.err)))
    keys = ("name", "allocations", "bytes_allocated", "destroyed", "live_blocks", "live_bytes")
    t.eq("pools", [("first", 2, 64, True, 0, 0), (None, 1, 16, False, 1, 16)],
         [tuple(x.get(k) for k in keys) for x in r.data.get("pools", [])])
    ids = [x.get("id") for x in r.data.get("pools", [])]
    t.check(len(ids) == 2 and ids[0] == ids[1], "not one pool object: %r" % ids)
    t.eq("leaked blocks", 1, r.data["totals"]["leaked_blocks"])


TESTS = [
    ("pools.totals", t_totals),
    ("pools.json", t_pools_json),
    ("pools.text", t_pools_text),
    ("pools.exports", t_exports),
    ("snapshots.json", t_snapshots_json),
    ("snapshots.text", t_snapshots_text),
    ("pools.none", t_none),
    ("pools.realloc_stays", t_pool_realloc),
    ("pools.sampled_estimates", t_pool_phase_sampled),
    ("pools.many_live", t_many_live),
    ("pools.reused_after_destroy", t_reused_after_destroy),
]
