"""test_sampling.py - Poisson sampling (`heaptrail run --sample-rate`).

tests/programs/sampled.c allocates from sites of known counts and bytes (its
header lists them), one of them holding about 1% of all bytes. It is run
exactly and sampled with several seeds; the sampled reports' estimates are
checked against the exact run and against the program's construction.

  sampling.construction  the exact run has the program's figures, per site
  sampling.estimates     every site with >= 1% of the bytes lands within
                         +-10% of the exact figure (bytes and allocations),
                         for every seed; the exact figure lies inside the
                         reported 95% interval for >= 85% of site/seed pairs;
                         the intervals of the 1% site are narrower than +-10%
  sampling.totals        END's counts stay exact (memcheck's convention): the
                         sampled totals equal the construction's
  sampling.leaks         the leaked site's estimate is within +-10%
  sampling.leak_list     the leak list (JSON, heaptrail leaks, text) gives the
                         estimates with intervals, adding up to the summary's
  sampling.frees_pair    a program that frees everything shows nothing live
                         (frees of sampled blocks pair up), for every seed
  sampling.programs      every entry point, C++, custom allocations, threads:
                         totals stay those of the exact run
  sampling.trace_size    a sampled trace is far smaller than the exact one
  sampling.text          the text report says the rate and marks estimates
  sampling.pprof         pprof carries the weighted values (go tool pprof)
  sampling.temporary     temporaries are unknown: the flame graph shows "?",
                         --cost temporary is refused
  sampling.chrome        a worker thread's peak (sampled_thread.c): the chrome
                         marker on that thread, thread figures weighted; the
                         JSON timeline's peak is peak_heap_bytes
  sampling.export_sums   folded and flamegraph totals are the sums of the
                         sites' estimates; the flame graph's subtitle agrees
                         with its root and labels END's exact counts
  sampling.usage         bad --sample-rate values are usage errors
"""

import json
import re

from harness import PROGS, HT, heaptrail_run, leaf, memo, need_tools, report, run, tail, text
import tracefile
from test_export_pprof import convert, need_go, parse_raw, pprof

PROG = "sampled"
RATE = 1024  # bytes: ~1400 samples at the 1% site, runs in well under a second
SEEDS = (1, 2, 3, 4, 5)

# By construction (tests/programs/sampled.c): leaf function -> (allocations, bytes).
MIXED = sum(16 << (i % 9) for i in range(30000))
SITES = {
    "site_big": (40, 40 << 20),
    "site_mid": (20000, 20000 * 2000),
    "site_small": (500000, 500000 * 64),
    "site_mixed": (30000, MIXED),
    "site_onepct": (12200, 12200 * 120),
    "site_tiny": (1000, 8000),
    "site_leak": (3000, 3000000),
}
TOTAL_ALLOCS = sum(a for a, _ in SITES.values())
TOTAL_BYTES = sum(b for _, b in SITES.values())
TOTAL_FREES = TOTAL_ALLOCS - 3000


def run_report(t, key, opts, args=()):
    """(trace path, JSON report) of sampled.c run with opts; memoised."""
    need_tools(t)
    p = PROGS / PROG
    t.need(p.exists(), "%s not built (make programs)" % p)

    def go():
        tr = heaptrail_run([p] + list(args), opts)
        if tr.proc.rc != 0 or not tr.out_path.exists():
            return tr, None, "heaptrail run failed: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        rep = report(tr.out_path)
        if rep.err or rep.proc.rc != 0:
            return tr, None, rep.err or "report exited %s" % rep.proc.rc
        return tr, rep.data, None
    tr, data, err = memo(("sampling",) + tuple(key), go)
    if err:
        t.fatal(err)
    return tr.out_path, data


def exact(t):
    return run_report(t, ("exact",), [])


def sampled(t, seed, args=()):
    return run_report(t, ("sampled", seed) + tuple(args),
                      ["--sample-rate", str(RATE), "--sample-seed", str(seed)], args)


def per_leaf(rep):
    """{leaf: summed figures} over the sites sharing a leaf (site_big has two).
    Intervals add as variances: *_ci95 is the root of the sum of squares."""
    out = {}
    for s in rep["sites"]:
        d = out.setdefault(leaf(s), {})
        for k, v in s.items():
            if k.endswith("_ci95"):
                d[k] = (d.get(k, 0) ** 2 + v ** 2) ** 0.5
            elif isinstance(v, int) and not isinstance(v, bool) and k != "stack_id":
                d[k] = d.get(k, 0) + v
    return out


def t_construction(t):
    _, rep = exact(t)
    t.check("sampled" not in rep, "an exact trace's report has a \"sampled\" member")
    got = per_leaf(rep)
    for fn, (allocs, nbytes) in SITES.items():
        g = got.get(fn, {})
        t.eq("exact run: %s allocations" % fn, allocs, g.get("allocations"))
        t.eq("exact run: %s bytes" % fn, nbytes, g.get("bytes_allocated"))
    t.eq("exact run: totals", (TOTAL_ALLOCS, TOTAL_FREES, TOTAL_BYTES),
         tuple(rep["totals"][k] for k in ("allocations", "frees", "bytes_allocated")))


def t_estimates(t):
    _, ex = exact(t)
    want = per_leaf(ex)
    big = [fn for fn, s in want.items() if s["bytes_allocated"] >= 0.01 * TOTAL_BYTES]
    t.check("site_onepct" in big and "site_tiny" not in big,
            "the sites with >= 1%% of the bytes are %s" % big)
    pairs = inside = 0
    for seed in SEEDS:
        _, rep = sampled(t, seed)
        t.eq("seed %d: sampled.rate" % seed, RATE, rep.get("sampled", {}).get("rate"))
        got = per_leaf(rep)
        for fn in big:
            g = got.get(fn)
            if not t.check(g, "seed %d: no site %s in the sampled report" % (seed, fn)):
                continue
            for k in ("bytes_allocated", "allocations"):
                w, e, ci = want[fn][k], g[k], g[k + "_ci95"]
                t.check(abs(e - w) <= 0.10 * w,
                        "seed %d: %s %s estimate %d is more than 10%% off the exact %d" %
                        (seed, fn, k, e, w))
                pairs += 1
                inside += e - ci <= w <= e + ci
                if fn == "site_onepct":
                    t.check(0 < ci <= 0.10 * w,
                            "seed %d: %s %s interval +-%d is not within (0, 10%%] of %d" %
                            (seed, fn, k, ci, w))
    t.check(inside >= 0.85 * pairs,
            "the exact figure is inside the 95%% interval for only %d of %d site/seed pairs" %
            (inside, pairs))


def t_totals(t):
    for seed in SEEDS[:2]:
        _, rep = sampled(t, seed)
        tot = rep["totals"]
        t.eq("seed %d: totals (END's exact counts)" % seed, (TOTAL_ALLOCS, TOTAL_FREES, TOTAL_BYTES),
             (tot["allocations"], tot["frees"], tot["bytes_allocated"]))
        t.eq("seed %d: exact_totals" % seed, True, rep["sampled"].get("exact_totals"))
        t.eq("seed %d: totals' intervals" % seed, (0, 0),
             (tot["allocations_ci95"], tot["bytes_allocated_ci95"]))
        t.eq("seed %d: temporary allocations (unknown when sampled)" % seed, None,
             tot["temporary_allocations"])


def t_leaks(t):
    for seed in SEEDS:
        _, rep = sampled(t, seed)
        tot = rep["totals"]
        t.check(abs(tot["leaked_bytes"] - 3000000) <= 300000,
                "seed %d: leaked bytes estimate %d is more than 10%% off 3000000" %
                (seed, tot["leaked_bytes"]))
        t.check(abs(tot["leaked_blocks"] - 3000) <= 300,
                "seed %d: leaked blocks estimate %d is more than 10%% off 3000" %
                (seed, tot["leaked_blocks"]))
        leaks = {leaf(lk) for lk in rep["leaks"]}
        t.eq("seed %d: leaking sites" % seed, {"site_leak"}, leaks)


def t_leak_list(t):
    # the leak list shows the same estimates as the summary, with intervals:
    # JSON leaks[] and the class totals add up to leaked_*, text marks them ~
    path, rep = sampled(t, SEEDS[0])
    tot, leaks = rep["totals"], rep["leaks"]
    t.need(leaks, "no leaks in the sampled report")
    slack = len(leaks)  # each group rounded once
    for key, total in (("blocks", "leaked_blocks"), ("bytes", "leaked_bytes")):
        t.check(abs(sum(lk[key] for lk in leaks) - tot[total]) <= slack,
                "leaks[] %s sum %d vs totals.%s %d" % (key, sum(lk[key] for lk in leaks), total, tot[total]))
        classes = sum(tot["%s_%s" % (k, key)] for k in
                      ("definite", "indirect", "possible", "reachable", "unclassified", "suppressed"))
        t.check(abs(classes - tot[total]) <= 6, "class %s sum %d vs totals.%s %d" % (key, classes, total, tot[total]))
    t.check(all(isinstance(lk.get("blocks_ci95"), int) and isinstance(lk.get("bytes_ci95"), int)
                for lk in leaks), "leaks[] entries lack blocks_ci95/bytes_ci95")
    big = max(leaks, key=lambda lk: lk["bytes"])
    t.check(abs(big["blocks"] - 3000) <= 300, "the leaked site's blocks %d: not the estimate of 3000" % big["blocks"])
    p = run([HT, "leaks", "--format", "json", path], 60)
    lj = json.loads(text(p.out))
    t.eq("heaptrail leaks --format json: leaks[] vs the report's",
         [(lk["blocks"], lk["bytes"], lk.get("blocks_ci95")) for lk in leaks],
         [(lk["blocks"], lk["bytes"], lk.get("blocks_ci95")) for lk in lj["leaks"]])
    p = run([HT, "leaks", path], 60)
    m = re.search(r"^#1\s+~\S+ \S+\s+([\d,]+) B \(\+-[^)]*\) in ~([\d,]+) blocks \(\+-", text(p.out), re.M)
    t.check(m and int(m.group(2).replace(",", "")) == big["blocks"],
            "heaptrail leaks: the top leak is not the estimate with its interval: %s" % tail(p.out, 600))


def t_frees_pair(t):
    for seed in SEEDS:
        _, rep = sampled(t, seed, ("noleak",))
        tot = rep["totals"]
        t.eq("seed %d noleak: live at the end" % seed, (0, 0),
             (tot["leaked_blocks"], tot["leaked_bytes"]))
        t.eq("seed %d noleak: leaks" % seed, [], rep["leaks"])
        t.eq("seed %d noleak: frees of unknown blocks" % seed, 0, tot["ignored_frees"])
        t.eq("seed %d noleak: frees (END)" % seed, TOTAL_ALLOCS, tot["frees"])


def t_other_programs(t):
    """Every entry point, C++, heaptrail.h's custom allocations and threads:
    the sampled run's totals (END) equal the exact run's. threads.c's exact
    run is the oracle rather than memcheck, which sees a different size of
    glibc's own DTV allocations (threads.c says why)."""
    need_tools(t)
    keys = ("allocations", "frees", "bytes_allocated")
    for prog in ("threads", "entry_points", "entry_points_extra", "libc_direct", "cxx_alloc",
                 "custom_alloc"):
        p = PROGS / prog
        runs = {}
        for name, opts in (("exact", []), ("sampled", ["--sample-rate", "256", "--sample-seed", "7"])):
            tr = heaptrail_run([p], opts)
            t.need(tr.out_path.exists(), "%s run of %s wrote no trace: %s: %s" %
                   (name, prog, tr.proc.describe(), tail(tr.proc.err)))
            # 0: every call behaved, failures included (errno)
            t.eq("%s: exit status of the %s run" % (prog, name), 0, tr.proc.rc)
            rep = report(tr.out_path)
            t.need(not rep.err, rep.err or "")
            runs[name] = rep.data["totals"]
        t.eq("%s: sampled totals vs the exact run's" % prog,
             tuple(runs["exact"][k] for k in keys), tuple(runs["sampled"][k] for k in keys))
        t.check(runs["sampled"]["ignored_frees"] <= runs["exact"]["ignored_frees"],
                "%s: the sampled run has %d frees of unknown blocks, the exact one %d" %
                (prog, runs["sampled"]["ignored_frees"], runs["exact"]["ignored_frees"]))


def t_trace_size(t):
    ex, _ = exact(t)
    sp, _ = run_report(t, ("sampled-512k",), ["--sample-rate", "524288"])
    # what every trace of the program holds (its module map, END): a run
    # sampled once per GB allocated has (nearly) only that: it samples
    # 0.15 blocks on average
    base, _ = run_report(t, ("sampled-1g",), ["--sample-rate", "1000000000", "--sample-seed", "1"])
    a, b, c = ex.stat().st_size, sp.stat().st_size, base.stat().st_size
    # 145 MB allocated: ~280 samples expected, of 1.13M exact events
    ne, ns = (sum(len(v) for v in tracefile.heap_event_times(str(p)).values()) for p in (ex, sp))
    t.check(0 < ns and ns * 1000 < ne,
            "sampled trace (512 KiB rate) holds %d heap events, the exact one %d" % (ns, ne))
    # in bytes the gap is smaller: this program's exact trace is as regular
    # as a trace gets (0.02 bytes an event), its samples are not
    t.check(c < b and (b - c) * 10 < a - c,
            "sampled trace (512 KiB rate) is %d bytes, not under 1/10 of the exact trace's %d "
            "(both less the %d bytes of a trace without events)" % (b, a, c))
    # at the tests' 1 KiB rate a sixth of the events are samples, whose
    # sparse times and addresses compress far worse than the exact trace's
    # (this program's allocator is as regular as it gets): a sample's events
    # still cost under 2 bytes each
    small, _ = sampled(t, SEEDS[0])
    n = sum(len(v) for v in tracefile.heap_event_times(str(small)).values())
    t.check(n > 0 and small.stat().st_size < 2 * n,
            "sampled trace (rate %d) is %d bytes for %d heap events: 2 bytes or more each"
            % (RATE, small.stat().st_size, n))


def t_text(t):
    path, rep = sampled(t, SEEDS[0])
    r = report(path, "text")
    t.need(r.proc.rc == 0 and not r.err, r.err or r.proc.describe())
    out = text(r.proc.out)
    t.check(re.search(r"^  sampling    one sample per 1\.00 KiB allocated on average", out, re.M),
            "text report does not state the sample rate: %s" % out[:600])
    m = re.search(r"^  in use at exit\s+~\S+ \S+\s+([\d,]+) B \(\+-(\S+ \S+)\) in ~([\d,]+) blocks", out, re.M)
    t.check(m, "text report's in-use-at-exit line is not an estimate with its interval: %s" % out[:1200])
    if m:
        t.eq("text leaked bytes vs JSON", rep["totals"]["leaked_bytes"], int(m.group(1).replace(",", "")))
    t.check(re.search(r"^  allocations\s+566,240 ", out, re.M),
            "text report's allocations are not END's exact count")
    t.check("TEMPORARY ALLOCATIONS" in out and "not known in a sampled trace" in out,
            "text report does not say temporary allocations are unknown")


def t_pprof(t):
    need_go(t)
    path, rep = sampled(t, SEEDS[0])
    pb = convert(t, path, "pprof", t.tmp / "sampled.pb.gz")
    types, rows = parse_raw(pprof(t, ["-raw"], pb))
    t.need(types, "go tool pprof -raw printed no Samples section")
    for ty, key in (("alloc_objects", "allocations"), ("alloc_space", "bytes_allocated"),
                    ("inuse_space", "leaked_bytes")):
        i = types.index(ty)
        t.eq("pprof %s sum vs the report's weighted sites" % ty,
             sum(s[key] for s in rep["sites"]), sum(r[i] for r in rows))
    # weighted, not sample counts: the small site's estimate is near its truth
    i = types.index("alloc_objects")
    t.check(max(r[i] for r in rows) > 400000,
            "pprof's largest alloc_objects value is %d: sample counts, not estimates" %
            max(r[i] for r in rows))


def t_temporary(t):
    # temporaries are unknown when sampled: the flame graph says so (not
    # "0 temporary"), and --cost temporary is refused, not drawn empty
    path, rep = sampled(t, SEEDS[0])
    p = run([HT, "convert", "--format", "flamegraph", path], 60)
    sub = re.search(r'<text class="sub" id="subtitle"[^>]*>([^<]*)<', text(p.out))
    t.check(sub and "\u00b7 ? temporary" in sub.group(1),
            "flamegraph subtitle: temporaries not shown as unknown: %r" % (sub and sub.group(1)))
    for fmt in ("folded", "flamegraph"):
        p = run([HT, "convert", "--format", fmt, "--cost", "temporary", path], 60)
        t.eq("convert --format %s --cost temporary: exit status" % fmt, 1, p.rc)
        t.check("is a sampled trace" in text(p.err) and "--cost temporary" in text(p.err),
                "convert --format %s --cost temporary: no clear message: %s" % (fmt, tail(p.err)))
        t.eq("convert --format %s --cost temporary: output" % fmt, "", text(p.out))


def t_chrome(t):
    # a worker thread makes the peak (sampled_thread.c): the chrome export
    # puts the marker on it, its thread figures are weighted estimates that
    # add up to the sites', and the report's timeline peaks at the totals'
    # peak (one rounding for both)
    need_tools(t)
    p = PROGS / "sampled_thread"
    t.need(p.exists(), "%s not built (make programs)" % p)
    tr = heaptrail_run([p], ["--sample-rate", str(RATE), "--sample-seed", "1"])
    t.need(tr.proc.rc == 0 and tr.out_path.exists(), "heaptrail run failed: %s" % tail(tr.proc.err))
    rep = report(tr.out_path)
    t.need(not rep.err and rep.proc.rc == 0, rep.err or rep.proc.describe())
    tot, sites = rep.data["totals"], rep.data["sites"]
    peak = [pt for pt in rep.data["timeline"] if pt.get("peak")]
    t.eq("JSON timeline's peak point", [tot["peak_heap_bytes"]], [pt["heap_bytes"] for pt in peak])
    out = t.tmp / "s.json"
    c = run([HT, "convert", "--format", "chrome", "-o", out, tr.out_path], 60)
    t.need(c.rc == 0, "convert --format chrome: %s" % tail(c.err))
    evs = json.loads(out.read_text())["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in evs if e.get("name") == "thread_name"}
    marker = [e for e in evs if e.get("cat") == "heap.peak"]
    t.eq("peak marker's thread", ["thread #1"], [names.get(e["tid"]) for e in marker])
    t.eq("peak marker's heap_bytes", [tot["peak_heap_bytes"]], [e["args"]["heap_bytes"] for e in marker])
    heap = [e["args"]["bytes"] for e in evs if e.get("ph") == "C" and e["name"] == "heap"]
    t.eq("heap counter's highest", tot["peak_heap_bytes"], max(heap + [0]))
    slices = [e["args"] for e in evs if e.get("ph") == "X"]
    slack = len(sites) + len(slices)  # each rounded once
    for k in ("allocations", "bytes_allocated", "frees"):
        want, got = sum(st[k] for st in sites), sum(a[k] for a in slices)
        t.check(abs(want - got) <= slack, "thread slices' %s: %d, the sites' estimates: %d" % (k, got, want))
    got = sum(a["bytes_freed"] for a in slices)
    want = sum(st["bytes_allocated"] - st["leaked_bytes"] for st in sites)
    t.check(abs(want - got) <= 2 * slack, "thread slices' bytes_freed: %d, the sites' estimates: %d" % (got, want))
    acts = [e["args"] for e in evs if e.get("cat") == "heap.activity"]
    for k in ("allocations", "bytes_allocated", "frees", "bytes_freed"):
        t.eq("activity instants' %s vs their thread slices" % k,
             sum(a[k] for a in slices), sum(a[k] for a in acts))


def t_export_sums(t):
    # exports weigh each stack by its site's estimate: their totals are the
    # sums over the report's sites (not END's exact totals), and the flame
    # graph's subtitle shows the same sums as its root, the exact counts
    # labelled apart
    path, rep = sampled(t, SEEDS[0])
    tot, sites = rep["totals"], rep["sites"]
    for cost, key in (("bytes", "bytes_allocated"), ("allocations", "allocations")):
        want = sum(st[key] for st in sites)
        p = run([HT, "convert", "--format", "folded", "--cost", cost, path], 60)
        got = sum(int(line.rsplit(" ", 1)[1]) for line in text(p.out).splitlines())
        t.eq("folded --cost %s sum vs the sites' %s" % (cost, key), want, got)
        p = run([HT, "convert", "--format", "flamegraph", "--cost", cost, path], 60)
        m = re.search(r'class="frame root" data-name="all" data-value="(\d+)"', text(p.out))
        t.eq("flamegraph --cost %s root vs the sites' %s" % (cost, key), want, m and int(m.group(1)))
        sub = re.search(r'id="subtitle"[^>]*>([^<]*)<', text(p.out))
        sub = sub.group(1) if sub else ""
        unit = "bytes allocated" if cost == "bytes" else "allocations"
        t.check("~{:,} {} \u00b7".format(want, unit) in sub,
                "subtitle %r lacks the root's ~%d %s" % (sub, want, unit))
        t.check("counted exactly: {:,} allocations, {:,} bytes".format(
            tot["allocations"], tot["bytes_allocated"]) in sub,
            "subtitle %r lacks the exact counts, labelled" % sub)


def t_usage(t):
    need_tools(t)
    for bad in ("x", "-1", "1e9", "2000000000"):
        p = run([HT, "run", "--sample-rate", bad, "--", "/bin/true"], 30)
        t.eq("exit status of run --sample-rate %s" % bad, 2, p.rc)
    p = run([HT, "run", "--sample-seed"], 30)
    t.eq("exit status of run --sample-seed (no value)", 2, p.rc)


def t_busy_exit(t):
    """exit() while threads still allocate: the sampled totals (counted per
    call) stay in step. Allocations left uncounted once the trace was
    finishing made frees outnumber them by up to 900,000. The END record
    reads each thread's two counters while the two threads run on, a
    malloc and a free every few tens of nanoseconds: a thread may get a
    call or two past one count before the other is read (a difference of
    5 seen once in about fifteen runs), so the margin is 16."""
    need_tools(t)
    for i in range(3):
        tr = heaptrail_run([str(PROGS / "busy_exit")], ("--sample-rate", "1024"))
        t.eq("run %d: exit status" % i, 0, tr.proc.rc)
        rep = report(tr.out_path, "json")
        if rep.err:
            t.fatal(rep.err)
        tot = rep.data["totals"]
        d = tot["allocations"] - tot["frees"]
        t.check(0 <= d <= 16, "run %d: %d allocations, %d frees" % (i, tot["allocations"], tot["frees"]))


TESTS = [
    ("sampling.construction", t_construction),
    ("sampling.estimates", t_estimates),
    ("sampling.totals", t_totals),
    ("sampling.leaks", t_leaks),
    ("sampling.leak_list", t_leak_list),
    ("sampling.frees_pair", t_frees_pair),
    ("sampling.programs", t_other_programs),
    ("sampling.trace_size", t_trace_size),
    ("sampling.text", t_text),
    ("sampling.pprof", t_pprof),
    ("sampling.temporary", t_temporary),
    ("sampling.chrome", t_chrome),
    ("sampling.export_sums", t_export_sums),
    ("sampling.usage", t_usage),
    ("sampling.busy_exit", t_busy_exit),
]
