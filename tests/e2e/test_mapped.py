"""test_mapped.py - the program's own memory maps (tests/programs/mapped.c,
an rt_map-style allocator).

  mapped.sites     each site's bytes mapped at exit and at the peak of
                   mapped memory, its calls and kind, exactly as the
                   program constructs them (partial munmap, mremap growth
                   attributed to the mremap's caller, a file map); the
                   totals (1,507,328 at exit, 1,904,640 at the peak); the
                   madvise(DONTNEED) bytes; the text section
                   heaptrail_stats() in the program: mapped_bytes 1,507,328
                   and a resident set > 0
  mapped.pprof     convert --format pprof: sample types mapped_space and
                   mapped_peak_space sum to the bytes at exit and at the
                   peak (go tool pprof -raw); the heap's types unchanged
  mapped.off       --no-mmap: no map recorded ("mapped" is null)
  mapped.summary   --summary: the same MAPPED MEMORY (totals, sites, calls,
                   madvise bytes) as the full trace, and a resident set
                   sampled (peak_rss_sample_bytes)
  mapped.brk       tests/programs/brk_sbrk.c: the program's own sbrk and
                   brk by site, kind "brk", exact bytes at exit and at the
                   peak (a shrink unmapping brk's 32 KiB and 32 KiB of the
                   last sbrk), heaptrail_stats() agreeing; malloc's growth
                   of its arena (800 KiB of blocks first) is no site
  mapped.rss_late  tests/programs/rss_late.c: an 8 MiB heap peak at the
                   start, then a 64 MiB map touched without allocating: the
                   highest RSS sample is >= 64 MiB and at least 0.7 s after
                   the heap's peak (the writer thread samples while no
                   thread records); the JSON timeline gives mapped_bytes
                   64 MiB while the map is held, and the text timeline its
                   mapped line
"""

import re

from harness import PROGS, heaptrail_run, need_report, need_tools, text

PROG = PROGS / "mapped"
KIB = 1024

# leaf function of the program's own frames -> (live at exit, at the peak,
# bytes mapped, calls, kind)
WANT = {
    "rt_map_small": (3 * 64 * KIB, 5 * 64 * KIB, 5 * 64 * KIB, 5, "anonymous"),
    "rt_map_big": (768 * KIB, 1024 * KIB, 1024 * KIB, 1, "anonymous"),
    "rt_map_grow": (0, 0, 128 * KIB, 1, "anonymous"),
    "rt_grow": (512 * KIB, 512 * KIB, 512 * KIB, 1, "anonymous"),
    "rt_map_file": (0, 4 * KIB, 4 * KIB, 1, "file"),
}


def site_name(s):
    for f in s.get("stack") or []:
        fn = f.get("function")
        if fn and fn.startswith("rt_") and fn != "rt_map":
            return fn
    return None


def t_sites(t):
    need_tools(t)
    tr = heaptrail_run([PROG], timeout=60)
    t.eq("status", 0, tr.proc.rc)
    m = re.search(r"mapped (\d+) resident (\d+)", text(tr.proc.out))
    if not m:
        t.fatal("no heaptrail_stats line: %s" % text(tr.proc.out))
    t.eq("heaptrail_stats mapped_bytes", 1507328, int(m.group(1)))
    t.check(int(m.group(2)) > 0, "heaptrail_stats resident_bytes > 0: %s" % m.group(2))
    rep = need_report(t, tr.out_path).data
    mp = rep.get("mapped")
    if not mp:
        t.fatal("no \"mapped\" member: %r" % (mp,))
    t.eq("mapped at exit", 1507328, mp.get("live_bytes"))
    t.eq("peak mapped", 1904640, mp.get("peak_bytes"))
    t.eq("mmap calls", 8, mp.get("mmap_calls"))
    t.eq("mremap calls", 1, mp.get("mremap_calls"))
    t.eq("munmap calls", 4, mp.get("munmap_calls"))
    t.eq("madvise DONTNEED bytes", 64 * KIB, mp.get("madvise_free_bytes"))
    got = {}
    for s in mp.get("sites") or []:
        got[site_name(s)] = (s.get("live_bytes"), s.get("peak_bytes"), s.get("bytes_mapped"),
                             s.get("calls"), s.get("kind"))
    t.eq("sites", WANT, got)
    txt = need_report(t, tr.out_path, fmt="text").proc.out.decode(errors="replace")
    t.check("MAPPED MEMORY" in txt and "1,507,328 B" in txt and "1,904,640 B" in txt,
            "the text report's MAPPED MEMORY section with the totals: %s" % txt[-1500:])


def t_pprof(t):
    import test_export_pprof as tp
    tp.need_go(t)
    tr = heaptrail_run([PROG], timeout=60)
    t.eq("status", 0, tr.proc.rc)
    pb = tp.convert(t, tr.out_path, "pprof", t.tmp / "mapped.pb.gz")
    types, rows = tp.parse_raw(tp.pprof(t, ["-raw"], pb))
    t.eq("pprof sample types", [n for n, _ in tp.PPROF_TOTALS] + ["mapped_space", "mapped_peak_space"],
         types)
    if len(types) == len(tp.PPROF_TOTALS) + 2:
        t.eq("mapped_space summed", 1507328, sum(r[-2] for r in rows))
        t.eq("mapped_peak_space summed", 1904640, sum(r[-1] for r in rows))


def t_off(t):
    need_tools(t)
    tr = heaptrail_run([PROG], ["--no-mmap"], timeout=60)
    t.eq("status", 0, tr.proc.rc)
    rep = need_report(t, tr.out_path).data
    t.eq("mapped with --no-mmap", None, rep.get("mapped"))
    t.check("ok" in text(tr.proc.out), "the program ran to its end")


def mapped_summary(mp):
    got = {}
    for s in mp.get("sites") or []:
        got[site_name(s)] = (s.get("live_bytes"), s.get("peak_bytes"), s.get("bytes_mapped"),
                             s.get("calls"), s.get("kind"))
    return ({k: mp.get(k) for k in ("live_bytes", "peak_bytes", "mmap_calls", "mremap_calls",
                                      "munmap_calls", "madvise_free_bytes")}, got)


def t_summary(t):
    need_tools(t)
    tr = heaptrail_run([PROG], ["--summary"], timeout=60)
    t.eq("status", 0, tr.proc.rc)
    rep = need_report(t, tr.out_path).data
    mp = rep.get("mapped")
    if not mp:
        t.fatal("summary mode: no \"mapped\" member: %r" % (mp,))
    tot, sites = mapped_summary(mp)
    t.eq("summary mode: mapped totals",
         {"live_bytes": 1507328, "peak_bytes": 1904640, "mmap_calls": 8, "mremap_calls": 1,
          "munmap_calls": 4, "madvise_free_bytes": 64 * KIB}, tot)
    t.eq("summary mode: sites", WANT, sites)
    rss = (rep.get("totals") or {}).get("peak_rss_sample_bytes")
    t.check(isinstance(rss, int) and rss > 0, "summary mode: a resident set sampled: %r" % (rss,))


def t_summary_maps_full(t):
    """Summary mode keeps 65,536 map events: 40,000 mmap/munmap pairs
    overflow it, and the report says the mapped figures are partial; 1,000
    pairs do not, and it says nothing."""
    need_tools(t)
    for pairs, partial in ((1000, False), (40000, True)):
        tr = heaptrail_run([PROGS / "many_maps", str(pairs)], ["--summary"], timeout=60)
        t.eq("status", 0, tr.proc.rc)
        rep = need_report(t, tr.out_path).data
        said = any("map events" in w and "partial" in w for w in rep.get("warnings", []))
        t.eq("%d pairs: the report says the mapped figures are partial" % pairs, partial, said)
        if not partial:
            tot, _ = mapped_summary(rep.get("mapped") or {})
            t.eq("%d pairs: mmap and munmap calls" % pairs, (pairs, pairs),
                 (tot.get("mmap_calls"), tot.get("munmap_calls")))


BRK = PROGS / "brk_sbrk"


def t_brk(t):
    need_tools(t)
    tr = heaptrail_run([BRK], timeout=60)
    t.eq("status", 0, tr.proc.rc)
    m = re.search(r"mapped (\d+) aligned (\d+)", text(tr.proc.out))
    if not m:
        t.fatal("no heaptrail_stats line: %s" % text(tr.proc.out))
    align = int(m.group(2))
    align_pages = (align + 4095) // 4096 * 4096
    t.eq("heaptrail_stats mapped_bytes", 160 * KIB + align_pages, int(m.group(1)))
    rep = need_report(t, tr.out_path).data
    mp = rep.get("mapped") or {}
    got = {}
    for s in mp.get("sites") or []:
        fns = [f.get("function") for f in s.get("stack") or []]
        leaf = next((f for f in fns if f in ("grow_sbrk", "grow_brk", "main")), None)
        got[leaf] = (s.get("live_bytes"), s.get("peak_bytes"), s.get("bytes_mapped"),
                     s.get("calls"), s.get("kind"))
    want = {"grow_sbrk": (160 * KIB, 192 * KIB, 192 * KIB, 3, "brk"),
            "grow_brk": (0, 32 * KIB, 32 * KIB, 1, "brk")}
    if align:
        want["main"] = (align_pages, align_pages, align_pages, 1, "brk")
    t.eq("brk and sbrk by site", want, got)
    t.eq("mapped at exit", 160 * KIB + align_pages, mp.get("live_bytes"))
    t.eq("peak mapped", 224 * KIB + align_pages, mp.get("peak_bytes"))
    t.eq("unmaps (the shrink)", 1, mp.get("munmap_calls"))


def t_rss_late(t):
    need_tools(t)
    tr = heaptrail_run([PROGS / "rss_late"], timeout=60)
    t.eq("status", 0, tr.proc.rc)
    rep = need_report(t, tr.out_path).data
    tot = rep.get("totals") or {}
    heap_t = tot.get("peak_time_seconds") or 0
    rss_t = tot.get("peak_rss_time_seconds")
    rss = tot.get("peak_rss_sample_bytes") or 0
    t.eq("heap peak", 8 * 1024 * KIB, tot.get("peak_heap_bytes"))
    t.check(rss >= 64 * 1024 * KIB, "the highest RSS sample holds the 64 MiB map: %d" % rss)
    t.check(rss_t is not None and rss_t >= heap_t + 0.7,
            "RSS peaks after the heap: heap at %.3f s, RSS at %r" % (heap_t, rss_t))
    tl = rep.get("timeline") or []
    held = [p for p in tl if p.get("mapped_bytes") == 64 * 1024 * KIB]
    t.check(len(held) >= 2, "the JSON timeline's mapped_bytes show the map held: %r" %
            [(p.get("time_seconds"), p.get("mapped_bytes")) for p in tl][-8:])
    txt = need_report(t, tr.out_path, fmt="text").proc.out.decode(errors="replace")
    t.check(re.search(r"peak RSS .* at \d", txt) is not None and "mapped peak 64.0 MiB" in txt,
            "the text report's peak RSS time and mapped line: %s" % txt[-1200:])


TESTS = [
    ("mapped.sites", t_sites),
    ("mapped.pprof", t_pprof),
    ("mapped.off", t_off),
    ("mapped.summary", t_summary),
    ("mapped.summary_maps_full", t_summary_maps_full),
    ("mapped.brk", t_brk),
    ("mapped.rss_late", t_rss_late),
]
