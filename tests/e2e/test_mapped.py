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


TESTS = [
    ("mapped.sites", t_sites),
    ("mapped.pprof", t_pprof),
    ("mapped.off", t_off),
]
