"""test_programs.py - tests on tests/programs/*, whose counts are known by
construction (the numbers below repeat each program's header comment).

For every program with a spec:
  <prog>.memcheck_oracle  valgrind memcheck agrees with the construction
                          (guards the truth itself: no hidden libc allocation)
  <prog>.totals           heaptrail's totals == the construction
  <prog>.memcheck         heaptrail's totals == memcheck's (C programs)
  <prog>.sites            allocations/bytes/leaks/temporaries per leaf function
  <prog>.contract         the JSON report contract
plus dedicated tests for threads, fork, exec, dlopen, signals, recursion,
exit status and the text report.
"""

import json
import os
import re
import shutil
import time
from pathlib import Path

import contract
import tracefile
from harness import (BUILD, HT, PROGS, SRC, AGENT, T, by_leaf, find_library, functions, heaptrail_run,
                     leaks_by_leaf, marker_line, memcheck, memcheck_single,
                     need_report, need_tools, report, run, scratch_dir, tail, text,
                     traced_report)

TOT = ("allocations", "frees", "bytes_allocated", "leaked_blocks", "leaked_bytes")
POOL = 72704  # libstdc++'s emergency exception pool (C++ programs only)


def S(allocations, bytes_allocated, leaked_blocks=0, leaked_bytes=0, temporary=None,
      peak=None):
    """Expected figures of one leaf function."""
    d = {"allocations": allocations, "bytes_allocated": bytes_allocated,
         "leaked_blocks": leaked_blocks, "leaked_bytes": leaked_bytes}
    if temporary is not None:
        d["temporary_allocations"] = temporary
    if peak is not None:
        d["peak_bytes"] = peak
    return d


# name: totals (allocations, frees, bytes, leaked blocks, leaked bytes), exit
# status (or signal), peak, temporaries, memcheck (can memcheck run it?),
# sites by leaf function (exact: no other leaf may appear; a None key is the
# libstdc++ pool, whose leaf lies in libstdc++), src (for markers).
SPECS = {
    "entry_points": dict(
        totals=(14, 13, 3015, 1, 77), exit=0, peak=1000, memcheck=True,
        sites={"use_malloc": S(1, 100), "use_calloc": S(1, 200),
               "use_realloc": S(3, 570), "use_reallocarray": S(2, 300),
               "use_posix_memalign": S(1, 256), "use_aligned_alloc": S(1, 384),
               "use_memalign": S(1, 96), "use_valloc": S(1, 1000),
               "use_usable_size": S(1, 24), "use_failures": S(1, 8),
               "leak_one": S(1, 77, 1, 77)}),
    "entry_points_extra": dict(
        totals=(4, 3, 4540, 1, 3000), exit=0, peak=3000, memcheck=False,
        sites={"use_pvalloc": S(2, 1500), "realloc_fails": S(1, 40),
               "leak_pvalloc": S(1, 3000, 1, 3000)}),
    # glibc's __libc_malloc and the others, called directly
    "libc_direct": dict(
        totals=(28, 27, 3739, 1, 33), exit=0, peak=1000, memcheck=True,
        sites={"libc_then_free": S(10, 1000), "malloc_then_libc": S(10, 600),
               "libc_realloc": S(2, 550), "realloc_of_libc": S(2, 440),
               "libc_calloc": S(1, 20), "libc_memalign": S(1, 96),
               "libc_valloc": S(1, 1000), "leak_libc": S(1, 33, 1, 33)}),
    "cxx_alloc": dict(
        totals=(13, 11, 73584, 2, 72736), exit=0, peak=72992, memcheck=True, cxx=True,
        sites={"make_widget(int)": S(2, 64, 1, 32), "make_array(int)": S(1, 40),
               "make_nothrow()": S(2, 132), "make_aligned()": S(3, 584)},
        # std::vector's storage comes from the allocator template the
        # program instantiated; its leaf is that template, the call chain
        # passes through grow_vector().
        via={"grow_vector()": S(4, 60)}),
    "cxx_extra": dict(
        totals=(3, 1, 72856, 2, 72720), exit=0, peak=72840, memcheck=False, cxx=True,
        sites={"extra_leak()": S(1, 16, 1, 16)},
        via={"throw_bad_alloc()": S(1, 136)}),
    "cxx_small_align": dict(
        totals=(3, 2, 72738, 1, 72704), exit=0, peak=72728, memcheck=False, cxx=True,
        sites={"small_align()": S(2, 34)}),
    "underscore_exit": dict(
        totals=(53, 50, 5900, 3, 900), exit=4, memcheck=True,
        sites={"churn": S(50, 5000), "leak_before": S(3, 900, 3, 900)}),
    "crash_segv": dict(
        totals=(21, 20, 3328, 1, 2048), signal=11, memcheck=True,
        sites={"before_crash": S(21, 3328, 1, 2048)}),
    "crash_abort": dict(
        totals=(8, 7, 3000, 1, 900), signal=6, memcheck=True,
        sites={"before_abort": S(8, 3000, 1, 900)}),
    "recursion": dict(
        totals=(1, 0, 4096, 1, 4096), exit=0, memcheck=True,
        sites={"leaf_alloc": S(1, 4096, 1, 4096)}),
    "ctor": dict(
        totals=(4, 4, 1110, 0, 0), exit=0, memcheck=True,
        sites={"early_alloc": S(3, 666), "main_alloc": S(1, 444)}),
    "leaks": dict(
        totals=(13, 6, 5022, 7, 4692), exit=0, memcheck=True,
        sites={"leak_big": S(1, 4096, 1, 4096), "inner_leaker": S(2, 200, 2, 200),
               "leak_small": S(3, 96, 3, 96), "leak_realloc": S(2, 310, 1, 300),
               "no_leak": S(5, 320)}),
    "temporaries": dict(
        totals=(27, 26, 2050, 1, 10), exit=0, memcheck=True, temporary=15,
        sites={"pairs": S(20, 960, temporary=10), "pure_temp": S(5, 80, temporary=5),
               "keepers": S(2, 1010, 1, 10, temporary=0)}),
    "exit3": dict(
        totals=(3, 2, 60, 1, 30), exit=3, memcheck=True,
        sites={"work": S(3, 60, 1, 30)}),
    "exit_handlers": dict(
        totals=(5, 3, 3050, 2, 1500), exit=0, memcheck=True,
        sites={"main_work": S(1, 50), "atexit_alloc": S(2, 1300, 1, 600),
               "dtor_alloc": S(2, 1700, 1, 900)}),
    "churn": dict(
        totals=(50010, 50000, 2001000, 10, 1000), exit=0, peak=1000, memcheck=True,
        temporary=50000,
        sites={"churn_alloc": S(50000, 2000000, temporary=50000),
               "churn_keep": S(10, 1000, 10, 1000, temporary=0)}),
    # leaf's callers alternate under the same stack address: the agent's
    # stack cache must tell them apart (sites checked below by caller).
    "stack_cache": dict(
        totals=(9700, 9700, 3288000, 0, 0), exit=0, memcheck=True,
        sites={"leaf": S(5000, 40000), "leaf_vla": S(1500, 24000),
               "shape_leaf": S(3200, 3224000)}),
    # the program's own allocator, reported through heaptrail.h (no malloc)
    "custom_alloc": dict(
        totals=(51, 21, 2200, 30, 1360), exit=0, memcheck=False,
        sites={"carve": S(50, 2000, 29, 1160), "grow": S(1, 200, 1, 200)}),
    # memcheck prints the vfork child's summary too; counts by construction.
    "vfork": dict(
        totals=(5, 3, 800, 2, 200), exit=0, memcheck=False,
        sites={"main": S(5, 800, 2, 200)}),
    "peak": dict(
        totals=(5, 4, 101010, 1, 10), exit=0, peak=71000, memcheck=True,
        sites={"alloc_a": S(1, 1000, peak=1000), "alloc_b": S(1, 50000, peak=50000),
               "alloc_c": S(1, 20000, peak=20000), "alloc_d": S(1, 30000, peak=0),
               "alloc_e": S(1, 10, 1, 10, peak=0)}),
}


def prog(name):
    return str(PROGS / name)


def expected_totals(spec):
    return dict(zip(TOT, spec["totals"]))


def traced(t, name, opts=()):
    """heaptrail run + JSON report of tests/programs/<name>, memoised."""
    need_tools(t)
    p = prog(name)
    t.need(os.path.exists(p), "%s not built (make programs)" % p)
    tr, rep, err = traced_report((name,) + tuple(opts), [p], opts)
    if err:
        t.fatal(err)
    return tr, rep.data


def status_of(spec):
    return 128 + spec["signal"] if "signal" in spec else spec["exit"]


def memcheck_prog(t, name):
    vg = memcheck_single(t, (name,), [prog(name)])
    t.need(vg.allocs is not None, "memcheck printed no heap summary for %s" % name)
    return vg


def eq_memcheck(t, vg, rep):
    """The report's allocations, frees and leaked blocks equal memcheck's."""
    tot = rep.get("totals", {})
    t.eq("allocations, frees, leaked blocks vs memcheck", (vg.allocs, vg.frees, vg.inuse_blocks),
         (tot.get("allocations"), tot.get("frees"), tot.get("leaked_blocks")))


# ---- generic tests per spec -------------------------------------------------

def make_oracle(name, spec):
    def test(t):
        vg = memcheck_prog(t, name)
        t.eq("memcheck totals of %s vs construction" % name, expected_totals(spec), vg.totals())
    return test


def make_totals(name, spec):
    def test(t):
        tr, rep = traced(t, name)
        t.eq("heaptrail run exit status (%s)" % tr.proc.describe(), status_of(spec), tr.proc.rc)
        tot = rep.get("totals", {})
        t.eq("totals", expected_totals(spec), {k: tot.get(k) for k in TOT})
        if "peak" in spec:
            t.eq("totals.peak_heap_bytes", spec["peak"], tot.get("peak_heap_bytes"))
        if "temporary" in spec:
            t.eq("totals.temporary_allocations", spec["temporary"], tot.get("temporary_allocations"))
        pr = rep.get("program", {})
        if "signal" in spec:
            t.eq("program.signal", spec["signal"], pr.get("signal"))
            t.eq("program.exit_code (no exit code when killed by a signal)", None, pr.get("exit_code"))
        else:
            t.eq("program.exit_code", spec["exit"], pr.get("exit_code"))
            t.eq("program.signal", None, pr.get("signal"))
        t.eq("program.command", [prog(name)], pr.get("command"))
    return test


def make_memcheck(name, spec):
    def test(t):
        vg = memcheck_prog(t, name)
        _, rep = traced(t, name)
        tot = rep.get("totals", {})
        t.eq("heaptrail totals vs memcheck (allocs, frees, bytes, in use at exit)",
             vg.totals(), {k: tot.get(k) for k in TOT})
    return test


def site_check(t, rep, spec, name):
    agg = by_leaf(rep)
    exp = spec["sites"]
    for fn, want in exp.items():
        got = agg.get(fn)
        if got is None:
            t.check(False, "no site with leaf function %r; leaves: %s" % (fn, sorted(map(str, agg))))
            continue
        t.eq("sites with leaf %s" % fn, want, {k: got.get(k) for k in want})
    # Calls made through library code (std::vector, __cxa_allocate_exception):
    # the sites whose stack passes through the function.
    for fn, want in spec.get("via", {}).items():
        sel = [s for s in rep.get("sites", []) if fn in functions(s.get("stack", []))]
        got = {k: sum(s.get(k, 0) for s in sel) for k in want}
        t.eq("sites whose stack passes through %s" % fn, want, got)
    # Exactly the program's own sites (plus the libstdc++ pool for C++):
    # nothing of the agent's, nothing made up.
    allowed = set(exp)
    others = []
    for s in rep.get("sites", []):
        fns = functions(s.get("stack", []))
        if fns and fns[0] in allowed:
            continue
        if any(fn in fns for fn in spec.get("via", {})):
            continue
        if spec.get("cxx") and s.get("bytes_allocated") == POOL and s.get("allocations") == 1:
            continue
        others.append("%s x%s %sB" % (fns[:4], s.get("allocations"), s.get("bytes_allocated")))
    t.check(not others, "%s: sites not made by the program: %s" % (name, "; ".join(others[:6])))
    if spec.get("cxx"):
        pool = [s for s in rep.get("sites", []) if s.get("bytes_allocated") == POOL]
        t.eq("sites of libstdc++'s 72704-byte pool", 1, len(pool))


def make_sites(name, spec):
    def test(t):
        _, rep = traced(t, name)
        site_check(t, rep, spec, name)
    return test


def make_contract(name, spec):
    def test(t):
        _, rep = traced(t, name)
        for e in contract.check(rep):
            t.check(False, e)
        # stack[0] of every site of the program's own functions is in the
        # program's executable, with its source file and a line.
        exe = prog(name)
        src = str(SRC / (name + (".cc" if spec.get("cxx") else ".c")))
        for s in rep.get("sites", []):
            st = s.get("stack") or []
            if st and st[0].get("function") in spec["sites"]:
                f = st[0]
                t.eq("stack[0].module of %s" % f.get("function"), exe, f.get("module"))
                t.eq("stack[0].file of %s" % f.get("function"), src, f.get("file"))
                t.check(isinstance(f.get("line"), int), "stack[0].line of %s is %r" % (
                    f.get("function"), f.get("line")))
                t.eq("stack[0].inlined of %s (-O0)" % f.get("function"), False, f.get("inlined"))
    return test


TESTS = []


def add(name, fn):
    TESTS.append((name, fn))


# Order: memcheck oracles first (slowest), so they overlap the rest.
for _n, _s in SPECS.items():
    if _s["memcheck"]:
        add("%s.memcheck_oracle" % _n, make_oracle(_n, _s))
for _n, _s in SPECS.items():
    add("%s.totals" % _n, make_totals(_n, _s))
    if _s["memcheck"]:
        add("%s.memcheck" % _n, make_memcheck(_n, _s))
    add("%s.sites" % _n, make_sites(_n, _s))
    add("%s.contract" % _n, make_contract(_n, _s))


# ---- leaks: stacks, lines, order ---------------------------------------------

def t_leak_stacks(t):
    _, rep = traced(t, "leaks")
    src = str(SRC / "leaks.c")
    want = [  # bytes, blocks, leaf, marker, caller
        (4096, 1, "leak_big", "LEAK_BIG", "main"),
        (300, 1, "leak_realloc", "LEAK_REALLOC", "main"),
        (200, 2, "inner_leaker", "LEAK_INNER", "leak_nested"),
        (96, 3, "leak_small", "LEAK_SMALL", "main"),
    ]
    leaks = rep.get("leaks", [])
    got = [(lk.get("bytes"), lk.get("blocks"), (lk.get("stack") or [{}])[0].get("function"))
           for lk in leaks]
    t.eq("leaks (bytes, blocks, leaf), largest first", [w[:3] for w in want], got)
    for lk, (b, n, fn, marker, caller) in zip(leaks, want):
        st = lk.get("stack") or []
        if not st or st[0].get("function") != fn:
            continue
        t.eq("%s leak: stack[0].file" % fn, src, st[0].get("file"))
        t.eq("%s leak: stack[0].line (the %s line)" % (fn, marker),
             marker_line(src, marker), st[0].get("line"))
        t.eq("%s leak: stack[1].function" % fn, caller, st[1].get("function") if len(st) > 1 else None)
        fns = functions(st)
        t.check("main" in fns, "%s leak: main not in its stack %s" % (fn, fns))
    # The realloc'd block is attributed to the realloc, the malloc it grew
    # from was freed by it.
    sites = [s for s in rep.get("sites", []) if (s.get("stack") or [{}])[0].get("function") == "leak_realloc"]
    lines = sorted(((s["stack"][0].get("line"), s.get("allocations"), s.get("leaked_blocks")) for s in sites),
                   key=lambda x: (x[0] is None, x))
    t.eq("leak_realloc sites (line, allocations, leaked blocks)",
         sorted([(marker_line(src, "REALLOC_FIRST"), 1, 0), (marker_line(src, "LEAK_REALLOC"), 1, 1)]),
         lines)


add("leaks.stacks", t_leak_stacks)


def t_leaks_text(t):
    """The text report shows each leak's stack as `function  file:line`."""
    tr, _ = traced(t, "leaks")
    r = need_report(t, tr.out_path, fmt="text")
    out = text(r.proc.out)
    src = str(SRC / "leaks.c")
    for fn, marker in (("leak_big", "LEAK_BIG"), ("inner_leaker", "LEAK_INNER"),
                       ("leak_small", "LEAK_SMALL")):
        line = marker_line(src, marker)
        pat = re.compile(r"%s\b.*\s(/\S*/)?leaks\.c:%d\b" % (re.escape(fn), line))
        t.check(any(pat.search(ln) for ln in out.splitlines()),
                "text report has no line `%s ... leaks.c:%d`" % (fn, line))
    t.check("4096" in out.replace(",", "") or "4 KiB" in out or "4.0 KiB" in out,
            "text report does not show the 4096-byte leak")


add("leaks.text_report", t_leaks_text)


def t_top(t):
    tr, rep = traced(t, "leaks")
    r = need_report(t, tr.out_path, extra=["--top", "2"])
    sites = r.data.get("sites", [])
    t.eq("number of sites with --top 2", 2, len(sites))
    t.eq("--top 2 sites are the two largest", [s.get("bytes_allocated") for s in rep["sites"][:2]],
         [s.get("bytes_allocated") for s in sites])
    t.eq("--top does not change the totals", rep.get("totals", {}).get("allocations"),
         r.data.get("totals", {}).get("allocations"))
    for e in contract.check(r.data, top=2):
        t.check(False, "--top 2: " + e)


add("report.top", t_top)


# ---- peak ------------------------------------------------------------------------

def t_peak_sites(t):
    _, rep = traced(t, "peak")
    agg = by_leaf(rep)
    got = {fn: agg.get(fn, {}).get("peak_bytes") for fn in SPECS["peak"]["sites"]}
    t.eq("sites' contribution to the peak (peak_bytes)",
         {fn: v["peak_bytes"] for fn, v in SPECS["peak"]["sites"].items()}, got)
    s = sum(x.get("peak_bytes", 0) for x in rep.get("sites", []))
    t.eq("sum of sites' peak_bytes == totals.peak_heap_bytes", rep["totals"].get("peak_heap_bytes"), s)


add("peak.contribution", t_peak_sites)


# ---- C++ attribution ----------------------------------------------------------

def t_cxx_attribution(t):
    _, rep = traced(t, "cxx_alloc")
    src = str(SRC / "cxx_alloc.cc")
    leaks = [lk for lk in rep.get("leaks", []) if (lk.get("stack") or [{}])[0].get("function") == "make_widget(int)"]
    t.eq("leaks with leaf make_widget(int)", 1, len(leaks))
    if leaks:
        f = leaks[0]["stack"][0]
        t.eq("make_widget leak: blocks/bytes", (1, 32), (leaks[0].get("blocks"), leaks[0].get("bytes")))
        t.eq("make_widget leak: file", src, f.get("file"))
        t.eq("make_widget leak: line (`return new Widget(id);`)",
             next(i for i, ln in enumerate(open(src).read().splitlines(), 1) if "return new Widget(id);" in ln),
             f.get("line"))
        t.eq("make_widget leak: stack[1]", "main", leaks[0]["stack"][1].get("function")
             if len(leaks[0]["stack"]) > 1 else None)
    # No C++ site may have its leaf in libstdc++'s operator new or in malloc
    # called by it: the leaf is the C++ caller.
    for s in rep.get("sites", []):
        st = s.get("stack") or []
        m = st[0].get("module") if st else None
        if st and isinstance(m, str) and "libstdc++" in m and s.get("bytes_allocated") != POOL:
            t.check(False, "site with leaf in libstdc++ (%s): %s" % (st[0].get("function"), functions(st)[:4]))


add("cxx_alloc.attribution", t_cxx_attribution)


def t_cxx_replaced_new(t):
    """A program that replaces only operator new(size_t) and operator
    delete(void *): every other form (new[], nothrow, sized delete,
    delete[]) reaches them through libstdc++, and the agent's own versions
    of those forms must hand the call on. Before, they called malloc and
    free directly: the program's counts were wrong, and with an mmap-based
    replacement a sized delete freed an mmap'd block (abort)."""
    need_tools(t)
    src = str(SRC / "cxx_replaced_new.cc")
    for how in ("malloc", "mmap"):
        tr = heaptrail_run([PROGS / "cxx_replaced_new", how], out_name="%s.ht" % how)
        t.eq("%s: exit status (0: the program's own counts of its new and delete calls)" % how,
             0, tr.proc.rc)
        if not tr.out_path.exists():
            t.check(False, "%s: no trace: %s" % (how, tail(tr.proc.err)))
            continue
        rep = need_report(t, tr.out_path).data
        tot = rep.get("totals", {})
        own = [s for s in rep.get("sites", []) if s.get("bytes_allocated") != POOL]
        if how == "mmap":
            t.eq("mmap: allocations, frees (the pool only: the program's new uses mmap)",
                 (1, 0), (tot.get("allocations"), tot.get("frees")))
            continue
        # each new mallocs its size + a 16-byte header: 48, 100, 4, 20, 8
        t.eq("malloc: the program's mallocs, by size", [20, 24, 36, 64, 116],
             sorted(s.get("bytes_allocated") for s in own))
        t.eq("malloc: allocations, frees, ignored frees", (6, 5, 0),
             (tot.get("allocations"), tot.get("frees"), tot.get("ignored_frees")))
        files = {(s.get("stack") or [{}])[0].get("file") for s in own}
        t.eq("malloc: the sites' stack[0] file", {src}, files)


add("cxx.replaced_operators", t_cxx_replaced_new)


def t_cxx_bad_align(t):
    """Aligned operator new with an alignment that is not a power of two
    fails, as without heaptrail: bad_alloc, or NULL for nothrow. Before,
    the agent raised any alignment below a pointer's (0, 3, 5, 6, 7) to a
    pointer's, and those calls succeeded."""
    need_tools(t)
    plain = run([PROGS / "cxx_bad_align"], 30)
    t.eq("plain run: exit status (calls that succeeded)", 0, plain.rc)
    tr = heaptrail_run([PROGS / "cxx_bad_align"], out_name="ba.ht")
    t.eq("traced run: exit status (calls that succeeded)", 0, tr.proc.rc)
    t.need(tr.out_path.exists(), "no trace: %s" % tail(tr.proc.err))
    tot = need_report(t, tr.out_path).data.get("totals", {})
    # 14 bad_alloc exceptions (136 bytes each, freed when caught: the
    # nothrow form catches its own) + the pool
    t.eq("allocations, frees, bytes", (15, 14, 14 * 136 + POOL),
         (tot.get("allocations"), tot.get("frees"), tot.get("bytes_allocated")))


add("cxx.aligned_new_bad_alignment", t_cxx_bad_align)


def cxx_allocator_library(soname, what):
    """operator new and delete in a program whose malloc is an allocator
    library's that defines them too (jemalloc, tcmalloc), preloaded after
    the agent or linked to the program: recorded as with libstdc++. Before,
    the agent took them for the program's own operators and handed every
    call on, and the library's never reach malloc: nothing was recorded."""
    def test(t):
        need_tools(t)
        lib = find_library(soname)
        if not lib:
            t.skip("%s is not installed (apt-get install %s)" % (soname, what))
        src = SRC / "cxx_alt_alloc.cc"
        linked = t.tmp / "cxx_alt_alloc_linked"
        cc = run(["c++", "-std=gnu++17", "-O0", "-g", "-fno-omit-frame-pointer", "-fno-builtin",
                  "-o", linked, src, lib], 120)
        t.need(cc.rc == 0, "cannot link cxx_alt_alloc.cc to %s: %s" % (lib, tail(cc.err)))
        env = dict(os.environ, LD_PRELOAD=lib)
        for how, args, e in (("preloaded", [PROGS / "cxx_alt_alloc"], env),
                             ("linked", [linked], None)):
            tr = heaptrail_run(args, out_name="%s.ht" % how, env=e)
            t.eq("%s: exit status" % how, 0, tr.proc.rc)
            if not tr.out_path.exists():
                t.check(False, "%s: no trace: %s" % (how, tail(tr.proc.err)))
                continue
            rep = need_report(t, tr.out_path).data
            # the library's own start-up (tcmalloc's uses new) comes on top
            own = [x for x in rep.get("sites", []) if os.path.basename(
                (x.get("stack") or [{}])[0].get("module") or "") == os.path.basename(lib)]
            more = [sum(x.get(k, 0) for x in own) for k in
                    ("allocations", "bytes_allocated", "leaked_blocks", "leaked_bytes")]
            t.eq("%s: totals" % how, {"allocations": 120 + more[0],
                                       "frees": 69 + more[0] - more[2],
                                       "bytes_allocated": 20915 + POOL + more[1],
                                       "leaked_blocks": 51 + more[2],
                                       "leaked_bytes": 10200 + POOL + more[3]},
                 {k: rep.get("totals", {}).get(k) for k in TOT})
            t.eq("%s: ignored frees" % how, 0, rep.get("totals", {}).get("ignored_frees"))
            t.eq("%s: allocations, bytes, leaked blocks by leaf" % how,
                 {"make_arrays()": (100, 20200, 50), "make_objects()": (10, 240, 0),
                  "make_nothrow()": (5, 160, 0), "make_aligned()": (3, 192, 0),
                  "use_malloc()": (1, 123, 0)},
                 {k: (v["allocations"], v["bytes_allocated"], v["leaked_blocks"])
                  for k, v in by_leaf({"sites": [x for x in rep.get("sites", [])
                                                 if x not in own]}).items()
                  if v["bytes_allocated"] != POOL})
    return test


add("cxx.jemalloc_operators", cxx_allocator_library("libjemalloc.so.2", "libjemalloc2"))
add("cxx.tcmalloc_operators",
    cxx_allocator_library("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"))


def t_cold_main(t):
    """A frame in code without debug information (_start) right after a
    line table that ends in a row of no length (main's, split into a .cold
    part at -O2) gets no file and line. Before, it got that row's:
    basic_string.h:795."""
    tr, rep = traced(t, "cxx_cold_main")
    t.eq("exit status", 0, tr.proc.rc)
    starts = {(f.get("file"), f.get("line")) for s in rep.get("sites", [])
              for f in s.get("stack", []) if f.get("function") == "_start"}
    t.check(starts, "no frame in _start")
    t.eq("file and line of the _start frames", {(None, None)}, starts)
    mains = {f.get("file") for s in rep.get("sites", [])
             for f in s.get("stack", []) if f.get("function") == "main"}
    t.eq("file of the main frames", {str(SRC / "cxx_cold_main.cc")}, mains)


add("symbols.no_line_after_a_sequence", t_cold_main)


def t_stack_cache_callers(t):
    """leaf() is called from via_a and via_b, whose frames have the same
    size, so leaf's malloc runs at the same stack address with a different
    caller: the agent's stack cache must notice (by construction: via_a
    3000, via_b 2000; leaf_vla under via_vla 1500, with a frame of changing
    size in between)."""
    _, rep = traced(t, "stack_cache")
    by_caller = {}
    for s in rep.get("sites", []):
        st = s.get("stack") or []
        if len(st) >= 2:
            key = (st[0].get("function"), st[1].get("function"))
            by_caller[key] = by_caller.get(key, 0) + s.get("allocations", 0)
    t.eq("leaf <- via_a allocations", 3000, by_caller.get(("leaf", "via_a")))
    t.eq("leaf <- via_b allocations", 2000, by_caller.get(("leaf", "via_b")))
    t.eq("leaf_vla <- via_vla allocations", 1500, by_caller.get(("leaf_vla", "via_vla")))
    # 16 recursion shapes through the same functions: every allocation's
    # whole chain matches its shape (size 1000 + shape)
    shapes = {}
    for s in rep.get("sites", []):
        st = s.get("stack") or []
        if not st or st[0].get("function") != "shape_leaf" or not s.get("allocations"):
            continue
        shape = s["bytes_allocated"] // s["allocations"] - 1000
        want = ["rec_a" if (shape >> (d % 4)) & 1 else "rec_b" for d in range(11)] + ["main"]
        got = [f.get("function") for f in st[1:13]]
        t.eq("shape %d chain" % shape, want, got)
        shapes[shape] = shapes.get(shape, 0) + s["allocations"]
    t.eq("shapes seen, 200 allocations each", {k: 200 for k in range(16)}, shapes)


add("stack_cache.callers", t_stack_cache_callers)


# ---- exit status -------------------------------------------------------------------

def t_exit3_direct(t):
    """heaptrail run returns the program's exit status: checked against the
    same program run plainly."""
    need_tools(t)
    plain = run([prog("exit3")], 30)
    t.eq("plain run of exit3", 3, plain.rc)
    tr = heaptrail_run([prog("exit3")])
    t.eq("heaptrail run exit3 (%s)" % tr.proc.describe(), 3, tr.proc.rc)
    t.check(str(tr.out_path) in text(tr.proc.err),
            "heaptrail run's stderr does not name the trace %s: %s" % (tr.out_path, tail(tr.proc.err)))


add("run.exit_status", t_exit3_direct)


# ---- threads ------------------------------------------------------------------------

THREAD_OWN = {"worker0_alloc": S(100, 1600, 1, 16), "worker1_alloc": S(200, 6400, 1, 32),
              "worker2_alloc": S(300, 14400, 1, 48), "worker3_alloc": S(400, 25600, 1, 64)}


def t_threads_memcheck(t):
    vg = memcheck_prog(t, "threads")
    # 1001 own + one DTV calloc per pthread_create (glibc).
    t.eq("memcheck allocs/frees of threads (1001 own + 4 DTV; 997 frees)", (1005, 997),
         (vg.allocs, vg.frees))
    t.eq("memcheck in-use blocks (4 leaked + 4 DTVs)", 8, vg.inuse_blocks)


add("threads.memcheck_oracle", t_threads_memcheck)


def t_threads(t):
    vg = memcheck_prog(t, "threads")
    tr, rep = traced(t, "threads")
    t.eq("heaptrail run exit status", 0, tr.proc.rc)
    eq_memcheck(t, vg, rep)
    tot = rep.get("totals", {})
    agg = by_leaf(rep)
    for fn, want in THREAD_OWN.items():
        got = agg.get(fn, {})
        t.eq("sites with leaf %s" % fn, want, {k: got.get(k) for k in want})
    main1000 = [s for s in rep.get("sites", []) if (s.get("stack") or [{}])[0].get("function") == "main"]
    t.eq("main's malloc(1000)", [(1, 1000, 0)],
         [(s.get("allocations"), s.get("bytes_allocated"), s.get("leaked_blocks")) for s in main1000])
    # Everything else is glibc's thread set-up, reached from pthread_create;
    # its size depends on the TLS modules loaded, so only its count and its
    # stack are checked. Own bytes + those == total bytes.
    rest = [s for s in rep.get("sites", []) if (s.get("stack") or [{}])[0].get("function")
            not in set(THREAD_OWN) | {"main"}]
    bad = [functions(s.get("stack", []))[:6] for s in rest
           if not any(isinstance(f, str) and "pthread_create" in f for f in functions(s.get("stack", [])))]
    t.check(not bad, "sites neither the program's nor pthread_create's: %s" % bad[:4])
    t.eq("allocations made inside pthread_create (one DTV per thread, as memcheck)",
         vg.allocs - 1001, sum(s.get("allocations", 0) for s in rest))
    own = sum(v["bytes_allocated"] for v in THREAD_OWN.values()) + 1000
    t.eq("bytes_allocated == own 49000 + pthread_create's",
         own + sum(s.get("bytes_allocated", 0) for s in rest), tot.get("bytes_allocated"))
    for e in contract.check(rep):
        t.check(False, e)
    if "threads" in rep.get("totals", {}):
        t.eq("totals.threads", 5, rep["totals"]["threads"])


add("threads.counts", t_threads)


def t_threads_tids(t):
    """Each event carries its thread: read the trace itself and find one
    thread per worker holding exactly that worker's events."""
    tr, _ = traced(t, "threads")
    try:
        th = tracefile.thread_events(tr.out_path)
    except tracefile.TraceError as e:
        t.fatal("reading %s per trace_format.h: %s" % (tr.out_path, e))
    t.eq("threads with events (main + 4 workers)", 5, len(th))
    for i in range(4):
        size, n = 16 * (i + 1), 100 * (i + 1)
        mine = [tid for tid, v in th.items() if v["sizes"].get(size) == n and v["allocs"] == n]
        t.eq("threads whose events are exactly worker%d's %d x malloc(%d)" % (i, n, size), 1, len(mine))
        if len(mine) == 1:
            t.eq("worker%d's frees on its own thread" % i, n - 1, th[mine[0]]["frees"])


add("threads.per_thread_events", t_threads_tids)


def t_handoff(t):
    """Blocks freed on another thread within ~100 ns of their allocation
    pair exactly. A free stamped before the load that gave it its block
    landed in the allocation's time quantum and sorted first: 2 of 6 runs
    lost frees. Five runs, so a regression shows most of the time."""
    need_tools(t)
    for i in range(5):
        tr = heaptrail_run([PROGS / "handoff"], out_name="h%d.ht" % i)
        t.need(tr.proc.rc == 0 and tr.out_path.exists(),
               "handoff under heaptrail: %s: %s" % (tr.proc.describe(), tail(tr.proc.err)))
        rep = need_report(t, tr.out_path).data
        tot = rep.get("totals", {})
        t.eq("run %d: allocations, frees, leaked blocks (500,000 handed off + the DTV), "
             "ignored frees, reused addresses" % (i + 1), (500001, 500000, 1, 0, 0),
             tuple(tot.get(k) for k in ("allocations", "frees", "leaked_blocks",
                                        "ignored_frees", "reused_addresses")))


add("threads.handoff", t_handoff)


def t_many_packers(t):
    """40 threads on at most 16 packers (2 on two CPUs), blocks handed
    between threads: each thread's events are exactly its own, in order
    (no free without its allocation, no address allocated twice)."""
    need_tools(t)
    tr = heaptrail_run([PROGS / "many_packers"], out_name="mp.ht")
    t.need(tr.proc.rc == 0 and tr.out_path.exists(),
           "many_packers under heaptrail: %s: %s" % (tr.proc.describe(), tail(tr.proc.err)))
    rep = need_report(t, tr.out_path).data
    tot = rep.get("totals", {})
    t.eq("ignored frees, reused addresses", (0, 0),
         (tot.get("ignored_frees"), tot.get("reused_addresses")))
    t.check((tot.get("frees") or 0) >= 40 * 16000,
            "frees %s, fewer than the workers' 640000" % tot.get("frees"))
    try:
        th = tracefile.thread_events(tr.out_path)
    except tracefile.TraceError as e:
        t.fatal("reading %s per trace_format.h: %s" % (tr.out_path, e))
    for i in range(40):
        size = 16 + 8 * i
        mine = [v for v in th.values() if v["sizes"].get(size) == 16000 and v["allocs"] == 16000]
        t.eq("threads whose events are worker%d's 16000 x malloc(%d) and 16000 frees" % (i, size),
             [16000], [v["frees"] for v in mine])


add("threads.many_packers", t_many_packers)


def bench_threads_truth(iterations, nthreads):
    """bench/workloads/threads.c's msg_alloc calls and bytes, by running its
    generator: per step a scratch message of 16 + (r & 127) bytes, a ring
    message of 24 + (r >> 3) % 230, and when r & 63 == 0 one of 40 handed
    to the next thread (each after an 8-byte header)."""
    n = size = 0
    for i in range(nthreads):
        rng = (0x9e3779b97f4a7c15 * (i + 1)) & (2**64 - 1)
        for _ in range(iterations):
            rng = (rng * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
            r = rng >> 33
            n += 2
            size += 8 + 16 + (r & 127) + 8 + 24 + (r >> 3) % 230
            if r & 63 == 0:
                n += 1
                size += 8 + 40
    return n, size


def t_digest_behind(t):
    """Eight threads allocating as fast as they can outrun the agent's
    digester on two cores: the queue of blocks waiting for it passes 32 and
    the program's threads digest in its place, interleaved with it block by
    block (29-44 times a run here). The table the digest keeps must still
    hold exactly the blocks live at exit: the LEAKS record (the agent's
    table) and the report (the trace's own replay) name the same blocks,
    and every message is counted and freed."""
    need_tools(t)
    prog = BUILD / "bench" / "threads"
    t.need(prog.exists(), "%s not built (make %s)" % (prog, "build/bench/threads"))
    iterations, nthreads = 300000, 8
    tr = heaptrail_run([prog, str(iterations), str(nthreads)], timeout=120)
    t.need(tr.proc.rc == 0 and tr.out_path.exists(),
           "threads under heaptrail: %s: %s" % (tr.proc.describe(), tail(tr.proc.err)))
    rep = need_report(t, tr.out_path).data
    m = by_leaf(rep).get("msg_alloc", {})
    n, size = bench_threads_truth(iterations, nthreads)
    t.eq("msg_alloc: allocations, bytes, leaked blocks", (n, size, 0),
         (m.get("allocations"), m.get("bytes_allocated"), m.get("leaked_blocks")))
    tot = rep.get("totals", {})
    t.eq("ignored frees, reused addresses, unclassified blocks", (0, 0, 0),
         tuple(tot.get(k) for k in ("ignored_frees", "reused_addresses", "unclassified_blocks")))
    check = tracefile.leak_checks(str(tr.out_path)).get(0)
    t.need(check is not None, "no LEAKS record")
    t.eq("blocks in the LEAKS record == blocks live at the end of the trace",
         tot.get("leaked_blocks"), len(check["kinds"]))


add("threads.digest_behind", t_digest_behind)


def t_main_pthread_exit(t):
    """main ends with pthread_exit, its threads go on: the process ends
    when the last one returns, as without the agent. Before, the agent's
    writer thread kept the process alive for ever (glibc exits when its
    last thread ends, and counts that one)."""
    need_tools(t)
    tr = heaptrail_run([PROGS / "main_pthread_exit"], timeout=30)
    t.need(not tr.proc.timed_out, "the process did not end: %s" % tr.proc.describe())
    t.eq("exit status", 0, tr.proc.rc)
    t.need(tr.out_path.exists(), "no trace: %s" % tail(tr.proc.err))
    rep = need_report(t, tr.out_path).data
    t.eq("ending", "exit", rep.get("program", {}).get("ending"))
    w = by_leaf(rep).get("worker", {})
    t.eq("sites with leaf worker", S(2000, 64000),
         {k: w.get(k) for k in ("allocations", "bytes_allocated", "leaked_blocks", "leaked_bytes")})
    t.eq("ignored frees, reused addresses", (0, 0),
         (rep["totals"].get("ignored_frees"), rep["totals"].get("reused_addresses")))


add("threads.main_pthread_exit", t_main_pthread_exit)


def t_close_all(t):
    """A program that closes every descriptor (a close loop, closefrom,
    close_range) or dup2s onto every low number keeps its trace: every
    event reaches it, and the agent never says it lost the file."""
    need_tools(t)
    for how in ("close", "closefrom", "close_range", "dup2"):
        tr = heaptrail_run([PROGS / "close_all", how], out_name="%s.ht" % how)
        t.eq("close_all %s: exit status" % how, 0, tr.proc.rc)
        t.check("closed the trace" not in text(tr.proc.err),
                "close_all %s: the agent lost its trace: %s" % (how, tail(tr.proc.err)))
        if not tr.out_path.exists():
            t.check(False, "close_all %s: no trace at %s" % (how, tr.out_path))
            continue
        r = report(tr.out_path)
        if r.err or r.proc.rc != 0:
            t.check(False, "close_all %s: report: %s %s" % (how, r.err, tail(r.proc.err)))
            continue
        tot = r.data.get("totals", {})
        t.eq("close_all %s: allocations, frees, bytes, leaked blocks, leaked bytes" % how,
             (2000, 1993, 48000, 7, 224), tuple(tot.get(k) for k in TOT))


add("run.program_closes_all_descriptors", t_close_all)


CLOSE_TRACE_WAYS = ("close_range", "close_range_cloexec", "sys_close_range",
                    "sys_close_range_cloexec", "close", "sys_close", "dup2", "dup3",
                    "sys_dup2", "sys_dup3", "asm_close_range", "asm_close", "asm_reuse")


def close_trace_test(how):
    def t_close_trace(t):
        """The program closes or replaces the trace's descriptor (one way
        of tests/programs/close_trace.c): the trace is complete all the
        same, END and all 200,100 allocations, and the agent never writes
        into a descriptor the program owns. The ways no hook sees (the
        syscall instruction itself) are met by opening the file again.
        Before, syscall(SYS_close_range, ...) left a trace without the
        events after it, and heaptrail run said writing it failed."""
        need_tools(t)
        tr = heaptrail_run([PROGS / "close_trace", how], timeout=60)
        t.need(not tr.proc.timed_out, "timed out: %s" % tr.proc.describe())
        t.eq("exit status (3: a call on the program's own descriptor failed, 4: its file "
             "got the agent's bytes)", 0, tr.proc.rc)
        err = text(tr.proc.err)
        t.check("closed the trace" not in err and "incomplete" not in err and
                "cannot write" not in err, "the agent lost its trace: %s" % tail(tr.proc.err))
        t.need(tr.out_path.exists(), "no trace at %s" % tr.out_path)
        rep = need_report(t, tr.out_path).data
        t.eq("ending (END present)", "exit", rep.get("program", {}).get("ending"))
        t.eq("allocations, frees, bytes, leaked blocks, leaked bytes",
             (200100, 200093, 4803200, 7, 224), tuple(rep.get("totals", {}).get(k) for k in TOT))
    return t_close_trace


for _how in CLOSE_TRACE_WAYS:
    add("run.trace_descriptor_survives." + _how, close_trace_test(_how))


def t_dtor_exit(t):
    """Frees made by a library's destructor at exit (after the program's
    atexit handlers, among the ELF destructors) are recorded: the trace
    ends after every destructor. Before, the agent's own destructor ended
    it first, and the library's 100 blocks looked leaked."""
    vg = memcheck_prog(t, "dtor_exit")
    tr, rep = traced(t, "dtor_exit")
    t.eq("heaptrail run exit status", 0, tr.proc.rc)
    eq_memcheck(t, vg, rep)
    agg = by_leaf(rep)
    t.eq("sites with leaf dtor_ctor_alloc", S(100, 6400, 0, 0),
         {k: agg.get("dtor_ctor_alloc", {}).get(k) for k in ("allocations", "bytes_allocated",
                                                             "leaked_blocks", "leaked_bytes")})


add("run.frees_in_library_destructors", t_dtor_exit)


def t_term_at_exit(t):
    """SIGTERM sent again and again while the process exits: the trace is
    complete whether the process ended by exit or by the signal. Before,
    the signal interrupted the trace's last write and left nothing."""
    need_tools(t)
    for i in range(3):
        tr = heaptrail_run([PROGS / "term_at_exit"], out_name="t%d.ht" % i)
        t.check(tr.proc.rc in (0, 128 + 15), "run %d: exit status %s, not 0 or 143: %s" %
                (i + 1, tr.proc.rc, tail(tr.proc.err)))
        if not tr.out_path.exists():
            t.check(False, "run %d: no trace" % (i + 1))
            continue
        r = report(tr.out_path)
        if r.err or r.proc.rc != 0:
            t.check(False, "run %d: report: %s %s" % (i + 1, r.err, tail(r.proc.err)))
            continue
        t.check("truncated" not in text(r.proc.err), "run %d: %s" % (i + 1, tail(r.proc.err)))
        tot = r.data.get("totals", {})
        # 1000 own + the thread's DTV calloc; 500 + the DTV live at the end
        t.eq("run %d: allocations, frees, leaked blocks" % (i + 1), (1001, 500, 501),
             (tot.get("allocations"), tot.get("frees"), tot.get("leaked_blocks")))


add("signals.sigterm_while_exiting", t_term_at_exit)


ODD_EXITS = {  # mode: (exit status, allocations, frees, bytes, leaked blocks, ending)
    "vfork_exit": (0, 4, 3, 300, 1, "exit"),
    "quick_exit": (3, 3, 1, 300, 2, "exit"),
    "execveat": (0, 2, 1, 128, 1, "exec"),
    "untraced": (0, 2, 1, 128, 1, "exec"),
}


def t_odd_exits(t):
    """Ways out that bypass exit()'s usual path keep the trace: a vfork
    child's exit() (it used up the exit handlers the parent's trace was
    finished by), quick_exit (not hooked), execveat (not hooked). Each lost
    the whole trace before."""
    need_tools(t)
    for how, want in ODD_EXITS.items():
        tr = heaptrail_run([PROGS / "odd_exits", how], out_name="%s.ht" % how)
        if not tr.out_path.exists():
            t.check(False, "%s: no trace: %s" % (how, tail(tr.proc.err)))
            continue
        r = report(tr.out_path)
        if r.err or r.proc.rc != 0 or "truncated" in text(r.proc.err):
            t.check(False, "%s: report: %s %s" % (how, r.err, tail(r.proc.err)))
            continue
        tot = r.data.get("totals", {})
        t.eq("%s: exit status, allocations, frees, bytes, leaked blocks, ending" % how, want,
             (tr.proc.rc, tot.get("allocations"), tot.get("frees"), tot.get("bytes_allocated"),
              tot.get("leaked_blocks"), r.data.get("program", {}).get("ending")))
        # an image that opens no trace of its own is named as untraced
        note = "/bin/true, which was not traced" in text(tr.proc.err)
        t.eq("%s: heaptrail run notes an untraced image" % how, how == "untraced", note)


def t_raw_exit_group(t):
    """A raw exit_group system call (how Go programs leave) is seen by no
    hook: the events still in the agent's buffers are lost. heaptrail run
    must say the figures are partial, not state them as the program's."""
    need_tools(t)
    tr = heaptrail_run([PROGS / "odd_exits", "exit_group"], out_name="eg.ht")
    t.eq("exit status", 4, tr.proc.rc)
    t.check("the agent did not see the program end" in text(tr.proc.err),
            "no word that the figures are partial: %s" % tail(tr.proc.err))
    for how in ("vfork_exit", "quick_exit"):
        tr = heaptrail_run([PROGS / "odd_exits", how], out_name="%s.ht" % how)
        t.check("did not see the program end" not in text(tr.proc.err),
                "%s: a complete trace called partial" % how)


def t_own_malloc(t):
    """An executable with its own malloc: its calls never reach heaptrail.
    heaptrail run names the object instead of reporting 0 allocations as
    the program's; a program on libc's malloc gets no such note."""
    need_tools(t)
    tr = heaptrail_run([PROGS / "own_malloc"], out_name="own.ht")
    t.eq("exit status", 0, tr.proc.rc)
    t.check(re.search(r"note: \S*own_malloc defines its own malloc", text(tr.proc.err)),
            "no note on the program's own malloc: %s" % tail(tr.proc.err))
    for name in ("leaks", "malloc_pointer"):
        tr = heaptrail_run([PROGS / name], out_name="libc.ht")
        t.check("defines its own malloc" not in text(tr.proc.err),
                "%s, on libc's malloc, noted as having its own: %s" % (name, tail(tr.proc.err)))
    r = need_report(t, tr.out_path)
    t.eq("malloc_pointer: allocations, bytes", (100, 3200),
         (r.data["totals"]["allocations"], r.data["totals"]["bytes_allocated"]))


def t_deepbind(t):
    """A library dlopen'ed with RTLD_DEEPBIND binds malloc and free to
    libc's, past the agent: its allocations are missed, its frees of the
    program's blocks make false leaks. heaptrail run names it, whether it
    is still loaded at the end or was closed before; a library loaded
    without the flag gets no such note. Before, nothing was said."""
    need_tools(t)
    lib = str(PROGS / "libdlplugin.so")
    for args in (["deep"], ["deep", "close"], ["plain"], ["plain", "close"]):
        how = " ".join(args)
        tr = heaptrail_run([PROGS / "deepbind"] + args, out_name="db.ht")
        t.eq("%s: exit status" % how, 0, tr.proc.rc)
        notes = re.findall(r"note: (.*) bound to a malloc and free other than the program's",
                           text(tr.proc.err))
        t.eq("%s: libraries noted as bound past heaptrail" % how,
             [lib] if args[0] == "deep" else [], notes)


add("run.odd_exits", t_odd_exits)
add("run.own_malloc", t_own_malloc)
add("run.deepbind_noted", t_deepbind)
add("run.raw_exit_group", t_raw_exit_group)


def t_low_fds(t):
    """The agent's descriptors (the trace's, libunwind's pipe) keep out of
    the low numbers: the program's first open gets 3, and under
    RLIMIT_NOFILE=5 it opens 3 and 4. Before, they took 3, 4 and 5."""
    need_tools(t)
    for opts in ((), ("--unwind", "fp")):
        tr = heaptrail_run([PROGS / "low_fds"], opts)
        t.eq("%s: exit status (0; 10 + the first descriptor; 2: the limited opens failed)" %
             (opts,), 0, tr.proc.rc)
        rep = need_report(t, tr.out_path).data
        t.eq("%s: allocations, frees" % (opts,), (55, 55),
             (rep["totals"].get("allocations"), rep["totals"].get("frees")))


add("run.low_descriptors_free", t_low_fds)


def t_hidden_trace_fd(t):
    """The trace's descriptor is not open as far as the program can tell:
    fcntl and dup fail with EBADF, and a dup2 onto its number and writes
    there reach the program's file. Before, a shell took it for one of its
    own (open, close-on-exec, high), saved it and restored a duplicate of
    the trace onto the number it then wrote to: the trace was corrupt."""
    need_tools(t)
    tr = heaptrail_run([PROGS / "find_trace_fd"])
    t.eq("exit status (0; 3: fcntl sees it; 4: dup does; 5: dup2 onto it fails)", 0, tr.proc.rc)
    r = report(tr.out_path)
    t.need(not r.err and r.proc.rc == 0 and not text(r.proc.err).strip(),
           "report: %s %s" % (r.err, tail(r.proc.err)))
    m = by_leaf(r.data).get("main", {})
    t.eq("the program's 10 allocations after it", (10, 240),
         (m.get("allocations"), m.get("bytes_allocated")))


add("run.trace_descriptor_hidden", t_hidden_trace_fd)


# ---- fork ---------------------------------------------------------------------------

def classify_fork(t, paths):
    """{"parent": report, "child": report} by content."""
    out = {}
    for p in paths:
        r = need_report(t, p)
        fns = set(by_leaf(r.data))
        role = "child" if "child_work" in fns else "parent" if "parent_after" in fns else None
        t.check(role is not None, "%s: neither the parent's nor the child's trace: leaves %s" % (p, sorted(map(str, fns))))
        if role:
            t.check(role not in out, "two %s traces" % role)
            out[role] = (p, r.data)
    return out


def check_fork_reports(t, roles):
    t.need("parent" in roles and "child" in roles, "found traces: %s" % sorted(roles))
    _, par = roles["parent"]
    _, chi = roles["child"]
    tot = par.get("totals", {})
    t.eq("parent totals", {"allocations": 5, "frees": 5, "bytes_allocated": 2433,
                           "leaked_blocks": 0, "leaked_bytes": 0}, {k: tot.get(k) for k in TOT})
    pa = by_leaf(par)
    t.eq("parent: sites before_fork/parent_after (allocations, bytes)",
         {"before_fork": (2, 333), "parent_after": (3, 2100)},
         {k: (pa.get(k, {}).get("allocations"), pa.get(k, {}).get("bytes_allocated"))
          for k in ("before_fork", "parent_after")})
    t.check("child_work" not in pa, "parent's trace holds the child's child_work")
    ca = by_leaf(chi)
    t.eq("child: child_work site", S(10, 5000, 1, 500),
         {k: ca.get("child_work", {}).get(k) for k in ("allocations", "bytes_allocated",
                                                       "leaked_blocks", "leaked_bytes")})
    t.check("parent_after" not in ca, "child's trace holds the parent's post-fork parent_after")
    # The child's own events are exactly child_work's; if the child's trace
    # also carries the inherited history, it carries it once (no events of
    # the parent's buffer written twice).
    bf = ca.get("before_fork", {"allocations": 0, "bytes_allocated": 0})
    t.check((bf["allocations"], bf["bytes_allocated"]) in ((0, 0), (2, 333)),
            "child's before_fork history: expected none or (2, 333), got %r" %
            ((bf["allocations"], bf["bytes_allocated"]),))
    ct = chi.get("totals", {})
    t.eq("child allocations excluding inherited history", 10, ct.get("allocations", 0) - bf["allocations"])
    t.eq("child frees excluding inherited history", 9, ct.get("frees", 0) - (1 if bf["allocations"] else 0))
    t.eq("child exit_code", 0, chi.get("program", {}).get("exit_code"))
    t.check(chi.get("program", {}).get("pid") != par.get("program", {}).get("pid"),
            "parent and child report the same pid")
    for who, r in (("parent", par), ("child", chi)):
        for e in contract.check(r):
            t.check(False, "%s: %s" % (who, e))


def t_fork_pattern(t):
    need_tools(t)
    tr = heaptrail_run([prog("fork")], out_name="fork.%p.ht")
    t.eq("heaptrail run exit status", 0, tr.proc.rc)
    files = [p for p in tr.files() if re.match(r"fork\.\d+\.ht$", p.name)]
    t.eq("trace files named fork.<pid>.ht", 2, len(files))
    roles = classify_fork(t, files)
    for role, (p, r) in roles.items():
        t.eq("%s: pid in the file name == program.pid" % role,
             int(re.match(r"fork\.(\d+)\.ht$", p.name).group(1)), r.get("program", {}).get("pid"))
        t.eq("%s trace mode" % role, 0o600, os.stat(p).st_mode & 0o777)
    check_fork_reports(t, roles)


def t_fork_listing(t):
    need_tools(t)
    tr = heaptrail_run([prog("fork")], out_name="fork.ht")
    t.eq("heaptrail run exit status", 0, tr.proc.rc)
    listed = tr.listed()
    t.check(tr.out_path in listed, "stderr does not list %s: %s" % (tr.out_path, tail(tr.proc.err)))
    t.eq("traces listed on heaptrail run's stderr (parent, child): %s" % tail(tr.proc.err, 400),
         2, len(listed))
    check_fork_reports(t, classify_fork(t, listed))


def t_getattr_first(t):
    """A thread's first heap call inside pthread_getattr_np (Rust's main
    thread, the JVM's threads) under the thread's own lock: the agent hung
    asking for the stack bounds under it."""
    need_tools(t)
    tr = heaptrail_run([prog("getattr_first")], out_name="getattr.ht", timeout=30)
    t.need(not tr.proc.timed_out, "heaptrail run hung (killed after 30 s)")
    t.eq("exit status", 0, tr.proc.rc)
    r = need_report(t, tr.out_path)
    mine = [s for s in r.data.get("sites", []) if s["stack"] and
            s["stack"][0].get("function") == "check_attr"]
    t.eq("malloc(1000) of check_attr, on both threads", (2, 2000),
         (sum(s["allocations"] for s in mine), sum(s["bytes_allocated"] for s in mine)))


def t_thread_names(t):
    """Threads the program named carry their names in the trace: those that
    exited and the one still running at exit; unnamed ones carry none."""
    need_tools(t)
    tr = heaptrail_run([prog("named_threads")], out_name="named.ht")
    t.eq("exit status", 0, tr.proc.rc)
    p = run([str(HT), "convert", "--format", "events", str(tr.out_path)], 60)
    t.eq("convert exit status", 0, p.rc)
    head = json.loads(text(p.out).splitlines()[0])
    names = sorted((th["name"] or "") for th in head.get("threads", []))
    t.eq("thread names (5 threads)", ["", "", "spinner", "worker-1", "worker-2"], names)


def main_name_test(how):
    def fn(t):
        """The main thread, named by the program (prctl or
        pthread_setname_np, exiting with exit or pthread_exit), carries
        its name in the trace, the events export and the chrome export;
        kept the process's name, it carries none."""
        need_tools(t)
        tr = heaptrail_run([prog("main_named"), how], out_name="main_named.ht")
        t.eq("exit status", 0, tr.proc.rc)
        p = run([str(HT), "convert", "--format", "events", str(tr.out_path)], 60)
        t.eq("convert exit status", 0, p.rc)
        head = json.loads(text(p.out).splitlines()[0])
        pid = head.get("pid")
        names = {("main" if th["thread"] == pid else "other"): th["name"]
                 for th in head.get("threads", []) if th["name"] != "helper"}
        want = None if how == "keep" else "mainloop"
        t.eq("names of main and the unnamed threads", {"main": want}, names)
        t.eq("helper named", 1, sum(th["name"] == "helper" for th in head.get("threads", [])))
        chrome = t.tmp / "c.json"
        p = run([str(HT), "convert", "--format", "chrome", "-o", str(chrome), str(tr.out_path)], 60)
        t.eq("chrome convert exit status", 0, p.rc)
        evs = json.loads(chrome.read_text())
        evs = evs.get("traceEvents", evs) if isinstance(evs, dict) else evs
        track = [e["args"]["name"] for e in evs
                 if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("tid") == pid]
        t.eq("chrome: the main thread's track", [want or "main"], track)
    return fn


def t_signal_handler_allocs(t):
    """A signal handler that allocates while the agent is recording an
    event of the same thread: its blocks are recorded (deferred until the
    interrupted event is written), at the handler's site."""
    need_tools(t)
    tr = heaptrail_run([prog("sigalloc")], out_name="sigalloc.ht")
    t.eq("sigalloc exit status", 0, tr.proc.rc)
    nums = tr.proc.out.split()
    t.need(len(nums) == 2, "sigalloc printed %r" % tr.proc.out)
    n, h = int(nums[0]), int(nums[1])
    t.check(h > 100, "only %d signals handled" % h)
    r = need_report(t, tr.out_path)
    tot = r.data.get("totals", {})
    t.eq("totals", {"allocations": n + h + 2, "frees": n + h + 2, "bytes_allocated": 16 * n + 48 * (h + 1) + 16,
                    "leaked_blocks": 0, "leaked_bytes": 0},
         {k: tot.get(k) for k in TOT})
    t.eq("frees of unknown blocks", 0, tot.get("ignored_frees"))
    in_handler = sum(s["allocations"] for s in r.data.get("sites", [])
                     if s["stack"] and s["stack"][0].get("function") == "on_alarm")
    t.eq("allocations at on_alarm", h, in_handler)


def t_signal_siglongjmp(t, rt=False):
    """A SIGALRM handler that leaves by siglongjmp, often finding the
    program inside the agent: the agent never runs it in the middle of its
    own work (it is sent again when the allocation hook is done), so the
    thread goes on recording. Before, the first such jump left the agent's
    guard held and the thread recorded nothing more (300 of 500,000).
    rt: a SIGRTMIN handler, from a POSIX timer (the agent runs it itself
    when the hook is done, before later instances the kernel queued)."""
    need_tools(t)
    tr = heaptrail_run([prog("siglongjmp")] + (["rt"] if rt else []),
                       out_name="siglongjmp%s.ht" % ("_rt" if rt else ""))
    t.eq("siglongjmp exit status", 0, tr.proc.rc)
    nums = tr.proc.out.split()
    t.need(len(nums) == 4, "siglongjmp printed %r" % tr.proc.out)
    n, handled, jumps, in_agent = (int(x) for x in nums)
    t.check(handled > 100 and jumps > 10, "only %d signals, %d jumps" % (handled, jumps))
    r = need_report(t, tr.out_path)
    tot = r.data.get("totals", {})
    # A handler that found the program in a hook's first or last
    # instructions (nothing held) may jump out of it, as out of glibc's
    # malloc: that call's block is lost to the program (a leak) or its free
    # not counted by it, at most one per such jump.
    allocs, frees = tot.get("allocations", 0), tot.get("frees", 0)
    t.check(n + 1 <= allocs <= n + 1 + in_agent,
            "allocations %d, the program made %d (+1), %d jumps from agent code" % (allocs, n, in_agent))
    t.check(n + 1 <= frees <= n + 1 + in_agent,
            "frees %d, the program made %d (+1), %d jumps from agent code" % (frees, n, in_agent))
    t.eq("leaked blocks (allocations - frees)", allocs - frees, tot.get("leaked_blocks"))
    t.eq("frees of unknown blocks", 0, tot.get("ignored_frees"))


def t_signal_sigqueue_order(t):
    """Signals sent with a value to a thread that is mostly inside the
    agent: every real-time signal reaches its handler once, in order, with
    its siginfo; a standard one held back until the hook is done keeps its
    siginfo (value, si_code, sender). The plain run is the reference."""
    want = "5000 5000 0 0 300 300 0 0"
    plain = run([prog("sigqueue_order")], 60)
    t.eq("plain run's output", want, text(plain.out).strip())
    need_tools(t)
    tr = heaptrail_run([prog("sigqueue_order")], out_name="sigqueue.ht")
    t.eq("exit status", 0, tr.proc.rc)
    t.eq("output under heaptrail", want, text(tr.proc.out).strip())


def t_fork_memcheck(t):
    proc, res = memcheck(("fork",), [prog("fork")])
    got = sorted((r.allocs, r.frees, r.bytes, r.inuse_blocks, r.inuse_bytes) for r in res.values())
    # memcheck carries the parent's counters into the child.
    t.eq("memcheck (child, parent)", [(5, 5, 2433, 0, 0), (12, 10, 5333, 2, 722)], got)


def t_fork_no_follow(t):
    """--no-follow-fork: one trace, the parent's; the child runs untraced."""
    need_tools(t)
    tr = heaptrail_run([prog("fork")], opts=["--no-follow-fork"], out_name="fork.%p.ht")
    t.eq("heaptrail run exit status", 0, tr.proc.rc)
    files = [p for p in tr.files()]
    t.eq("trace files with --no-follow-fork", 1, len(files))
    t.eq("traces listed on stderr", 1, len(tr.listed()))
    if len(files) == 1:
        r = need_report(t, files[0])
        tot = r.data.get("totals", {})
        t.eq("parent totals", {"allocations": 5, "frees": 5, "bytes_allocated": 2433,
                               "leaked_blocks": 0, "leaked_bytes": 0}, {k: tot.get(k) for k in TOT})
        t.check("child_work" not in by_leaf(r.data), "the child's events are in the parent's trace")


def t_spawn_no_follow(t):
    """--no-follow-fork leaves untraced the children no fork handler sees:
    posix_spawn, system, vfork+execve, and an execve given an environment
    copied before the fork. Followed, each of the four is traced."""
    need_tools(t)
    for follow in (False, True):
        opts = [] if follow else ["--no-follow-fork"]
        outdir = t.tmp / ("follow" if follow else "nofollow")
        outdir.mkdir()
        tr = heaptrail_run([prog("spawn_children")], opts=opts, out_name="sp.%p.ht", outdir=outdir)
        t.eq("spawn_children exit status (follow=%s)" % follow, 0, tr.proc.rc)
        images = []
        for p in tr.files():
            r = need_report(t, p)
            images.append(os.path.basename((r.data.get("program", {}).get("command") or ["?"])[0]))
        if follow:
            t.eq("exec_target traces, followed", 4, images.count("exec_target"))
        else:
            t.eq("traces with --no-follow-fork", ["spawn_children"], images)
            t.eq("traces listed on stderr", 1, len(tr.listed()))
            r = need_report(t, tr.files()[0])
            tot = r.data.get("totals", {})
            t.eq("parent totals", {"allocations": 4, "frees": 2, "bytes_allocated": 2048,
                                   "leaked_blocks": 2, "leaked_bytes": 1024}, {k: tot.get(k) for k in TOT})


def _exits_by_underscore_exit(t, name, runs):
    """Runs tests/programs/NAME RUNS times: each must exit with status 3 by
    _exit, with a whole trace that says so and holds main's 100 blocks."""
    need_tools(t)
    for i in range(runs):
        tr = heaptrail_run([prog(name)], out_name="%s%d.ht" % (name, i), timeout=30)
        t.eq("run %d: exit status" % i, 3, tr.proc.rc)
        r = need_report(t, tr.out_path)
        prg = r.data.get("program", {})
        t.eq("run %d: ending, status, main's blocks in use" % i, ("_exit", 3, 100),
             (prg.get("ending"), prg.get("exit_code"),
              by_leaf(r.data).get("main", {}).get("leaked_blocks")))


def t_exit_in_exec(t):
    """_exit from a SIGALRM handler while the program tries failing execs:
    the trace ends by _exit, whole. The handler found the agent flushing
    for an exec (the end skipped: the trace read "ended at exec") or the
    exec holding the writer's lock (no END written)."""
    _exits_by_underscore_exit(t, "exit_in_exec", 4)


def t_exit_during_exec(t):
    """_exit on the main thread while another thread tries failing execs:
    the trace ends by _exit, whole. The finish found the other thread's
    exec flushing and gave up: every run's trace read "ended at exec"."""
    _exits_by_underscore_exit(t, "exit_during_exec", 3)


def t_exit_while_forking(t):
    """exit() on the main thread while three threads allocate and fork:
    the trace ends by exit, whole, at once. glibc dropped the agent's fork
    handlers with its destructors, before the trace's end: a fork in
    between held every lock of the agent's (the exit waited a minute and
    wrote no END), 15 runs in 30 here."""
    need_tools(t)
    for i in range(8):
        tr = heaptrail_run([prog("exit_while_forking")], out_name="exitfork%d.ht" % i, timeout=20)
        t.eq("run %d: exit status" % i, 7, tr.proc.rc)
        r = need_report(t, tr.out_path)
        t.eq("run %d: ending, main's blocks in use" % i, ("exit", 100),
             (r.data.get("program", {}).get("ending"),
              by_leaf(r.data).get("main", {}).get("leaked_blocks")))


def t_fork_during_exec(t):
    """Forks while another thread tries failing execs: each child gets its
    own whole trace at once. A child forked during the other thread's
    exec flush kept the exec's state, and its first malloc waited for it
    forever (the first run hung)."""
    need_tools(t)
    tr = heaptrail_run([prog("fork_during_exec")], out_name="forkexec.ht", timeout=30)
    t.eq("exit status", 0, tr.proc.rc)
    children = [p for p in tr.files() if p != tr.out_path]
    t.eq("child traces", 40, len(children))
    ok = 0
    for p in children:
        r = need_report(t, p)
        got = (r.data.get("program", {}).get("ending"), r.data.get("totals", {}).get("allocations"))
        ok += got == ("_exit", 1)
    t.eq("children whose trace ends by _exit with their one allocation", 40, ok)


def t_exec_race(t):
    """Threads whose execs fail at the same time: each exec's flush (and
    the writer's lock held across it) belongs to the thread that made it.
    A flag shared by all let one thread's failed exec undo another's: the
    guard of both left wrong, recording stopped (4 of 4,000 recorded)."""
    need_tools(t)
    tr = heaptrail_run([prog("exec_race")], out_name="execrace.ht")
    t.eq("exit status", 0, tr.proc.rc)
    r = need_report(t, tr.out_path)
    t.eq("allocations at run", 4000, by_leaf(r.data).get("run", {}).get("allocations"))


def t_exec_fail_threads(t):
    """Execs that fail while another thread allocates: the recording of the
    other threads goes on (it stopped for the whole exec, then for the
    flush before it: 18 of 200,000 recorded)."""
    need_tools(t)
    tr = heaptrail_run([prog("exec_fail_threads")], out_name="execfail.ht")
    t.eq("exit status", 0, tr.proc.rc)
    r = need_report(t, tr.out_path)
    t.eq("the worker's allocations", 200000, by_leaf(r.data).get("worker", {}).get("allocations"))
    t.eq("trace files (the failed execs wrote no other)", 1, len(list(tr.files())))


def _exec_packing_run(t, what, succeed):
    """exec_while_packing (its header comment) under heaptrail: the trace of
    the image that made the execs, read back whole. Returns (trace path,
    report data, other traces) or fails the test."""
    args = [prog("exec_while_packing")] + (["succeed"] if succeed else [])
    tr = heaptrail_run(args, out_name="execpack.ht", timeout=60)
    t.need(not tr.proc.timed_out, "%s: hung: %s" % (what, tr.proc.describe()))
    t.eq("%s: exit status" % what, 0, tr.proc.rc)
    for bad in ("truncated", "corrupt", "damaged"):
        t.check(bad not in text(tr.proc.err), "%s: %s" % (what, tail(tr.proc.err)))
    paths = sorted(set(tr.listed()) | set(tr.files()))
    mine, others = None, []
    for p in paths:
        r = need_report(t, p)
        cmd = r.data.get("program", {}).get("command") or ["?"]
        if os.path.basename(cmd[0]) == "exec_while_packing":
            t.need(mine is None, "%s: two traces of the image: %s" % (what, paths))
            mine = (p, r)
        else:
            others.append((p, r))
    t.need(mine is not None, "%s: no trace of the image in %s" % (what, paths))
    p, r = mine
    for w in r.data.get("warnings", []):
        t.check(not any(k in w for k in ("truncated", "corrupt", "damaged", "lost")),
                "%s: warning: %s" % (what, w))
    for e in contract.check(r.data):
        t.check(False, "%s: %s" % (what, e))
    got = {k: v["allocations"] for k, v in by_leaf(r.data).items()}
    t.eq("%s: each thread's allocations, by its function" % what,
         {"alloc_0": 120000, "alloc_1": 120000, "alloc_2": 120000, "alloc_3": 120000,
          "brief_alloc": 50000},
         {k: got.get(k) for k in ("alloc_0", "alloc_1", "alloc_2", "alloc_3", "brief_alloc")})
    return p, r.data, others


def t_exec_while_packing(t):
    """Execs that fail while four threads fill blocks and pack them
    themselves, blocks handed between them, and short threads end: every
    event of every thread is in the trace once, in order, and the trace
    ends by exit. A thread that ended during an exec's flush shipped its
    last block while the flush shipped it too: the block was in the trace
    twice (1 run in 2 with the window widened by 0.3 ms)."""
    need_tools(t)
    for i in range(2):
        what = "run %d" % i
        _, rep, others = _exec_packing_run(t, what, False)
        t.eq("%s: other traces (the failed execs wrote none)" % what, [], [str(p) for p, _ in others])
        tot = rep.get("totals", {})
        t.eq("%s: ending, ignored frees, reused addresses" % what, ("exit", 0, 0),
             (rep.get("program", {}).get("ending"), tot.get("ignored_frees"),
              tot.get("reused_addresses")))
        t.eq("%s: the threads' blocks leaked" % what, 0,
             sum(v.get("leaked_blocks", 0) for k, v in by_leaf(rep).items()
                 if k.startswith("alloc_") or k == "brief_alloc"))


def t_exec_while_packing_succeeds(t):
    """Failing execs, then one that succeeds, while four threads fill
    blocks and pack them themselves: the first image's trace ends at the
    exec with every event the threads made before main's last execs, and
    the exec'd image has its own exact trace."""
    need_tools(t)
    for i in range(2):
        what = "run %d" % i
        _, rep, others = _exec_packing_run(t, what, True)
        tot = rep.get("totals", {})
        t.eq("%s: ending, ignored frees, reused addresses" % what, ("exec", 0, 0),
             (rep.get("program", {}).get("ending"), tot.get("ignored_frees"),
              tot.get("reused_addresses")))
        t.eq("%s: exec'd images' totals" % what,
             [{"allocations": 3, "frees": 2, "bytes_allocated": 3000, "leaked_blocks": 1,
               "leaked_bytes": 1000}],
             [{k: r.data.get("totals", {}).get(k) for k in TOT} for _, r in others])


def t_rlimit_as(t):
    """A low RLIMIT_AS: the agent's own tables may not grow either. What it
    recorded is still counted exactly, and the report says events were
    lost only if some were: the table of live blocks failing to grow (the
    leak classes partial) was reported as lost events."""
    need_tools(t)
    tr = heaptrail_run([prog("rlimit_as")], out_name="rlas.ht")
    t.eq("exit status", 0, tr.proc.rc)
    nums = text(tr.proc.out).split()
    t.need(len(nums) == 3, "rlimit_as printed %r" % text(tr.proc.out))
    n, k, made = (int(x) for x in nums)
    r = need_report(t, tr.out_path)
    tot = r.data.get("totals", {})
    got = (tot.get("allocations"), tot.get("frees"))
    t.eq("allocations, frees", (n + k + 101 * made, k + 100 * made), got)
    warnings = r.data.get("warnings", [])
    t.check(not any("events were lost" in w for w in warnings), "warnings: %r" % warnings)


def t_cancel_deferred(t):
    """Deferred cancellation acts only at cancellation points, and malloc
    and free are none: the agent's own system calls inside a hook (reading
    /proc for the RSS, writing the trace, waiting for its lock) went
    through glibc's open, read, write and nanosleep, which are, so a
    thread could die inside malloc holding its locks. Three runs: the
    failure came in about half of the runs before."""
    need_tools(t)
    for i in range(3):
        tr = heaptrail_run([prog("cancel_deferred")], out_name="cancel%d.ht" % i)
        t.eq("run %d: exit status (1: a thread cancelled inside malloc or free)" % i, 0, tr.proc.rc)


def t_key_after_agent(t):
    """A program's key destructor runs after the agent's and frees: each
    such event got a thread state of its own that was never let go (2,000
    threads: 2,000 states, the exclusions of a live thread kept for each,
    so a dead thread's stack was scanned and a leak whose pointer lay
    there read "still reachable")."""
    need_tools(t)
    tr = heaptrail_run([prog("key_after_agent")], out_name="keys.ht")
    t.eq("exit status", 0, tr.proc.rc)
    r = need_report(t, tr.out_path)
    sites = by_leaf(r.data)
    t.eq("work's blocks (allocations, leaked)", (2000, 0),
         (sites.get("work", {}).get("allocations"), sites.get("work", {}).get("leaked_blocks")))
    tot = r.data.get("totals", {})
    t.eq("definitely lost (the block at deep)", (1, 1000),
         (tot.get("definite_blocks"), tot.get("definite_bytes")))
    t.eq("frees of unknown blocks", 0, tot.get("ignored_frees"))


def t_leader_zombie(t):
    """After main's pthread_exit, /proc/self (the leader, a zombie) shows no
    memory map and no RSS: the leak scan had no roots (a global's block
    was "definitely lost") and the peak RSS was that of the start."""
    need_tools(t)
    tr = heaptrail_run([prog("leader_zombie")], out_name="pexit.ht")
    t.eq("exit status", 0, tr.proc.rc)
    r = need_report(t, tr.out_path)
    tot = r.data.get("totals", {})
    t.eq("lost blocks (definite, indirect, possible)", (0, 0, 0),
         (tot.get("definite_blocks"), tot.get("indirect_blocks"), tot.get("possible_blocks")))
    t.check(tot.get("reachable_blocks", 0) >= 1, "the global's block is not still reachable: %r" % tot)
    t.check((tot.get("peak_rss_bytes") or 0) >= 4 << 20, "peak RSS %r < 4 MiB" % tot.get("peak_rss_bytes"))


def t_busy_threads_exit(t):
    """main returns after half a second while 128 threads malloc and free
    as fast as they can: the exit takes about as long as without the
    agent, and the trace is whole. The finish held the writer's lock while
    it waited up to 100 ms for each thread in the middle of an event, and
    those threads waited for that lock; the busy threads meanwhile had the
    CPUs: 32 threads took 6 s to exit, 128 over 100 s. The program runs
    preloaded (heaptrail run would add the time it takes to read the
    trace), two plain runs beside it. The exit's time is from main's
    return (the program prints when) to the process's end: how long the
    threads took to start on a loaded machine is not the exit's."""
    need_tools(t)
    n = 128

    def exit_secs(env=None):
        p = run([prog("busy_threads"), n], 60, env=env)
        end = time.monotonic()
        try:
            returned = int(text(p.out).split()[0]) / 1e9
        except (IndexError, ValueError):
            returned = None
        return p, (end - returned if returned else None)

    plain = [exit_secs() for _ in range(2)]
    t.need(all(p.rc == 0 and s is not None for p, s in plain),
           "plain runs: exit %s" % [p.rc for p, _ in plain])
    out = t.tmp / "busy.ht"
    env = dict(os.environ, LD_PRELOAD=str(AGENT), HEAPTRAIL_OPTIONS="output=%s" % out)
    tr, secs = exit_secs(env)
    t.need(not tr.timed_out, "traced run hung (killed after 60 s)")
    t.eq("traced run: exit status", 0, tr.rc)
    slowest = max(s for _, s in plain)
    t.need(secs is not None, "traced run printed no time: %s" % tail(tr.out))
    t.check(secs <= slowest + 3, "traced exit took %.2f s, plain %s" %
            (secs, ", ".join("%.2f s" % s for _, s in plain)))
    r = need_report(t, out).data
    t.eq("ending", "exit", r.get("program", {}).get("ending"))
    tot = r.get("totals", {})
    a, f = tot.get("allocations", 0), tot.get("frees", 0)
    # each thread holds at most one block, and pthread_create keeps its own
    t.check(a > n and 0 <= a - f <= 2 * n + 16, "%d allocations, %d frees" % (a, f))


def t_thread_overflow(t):
    """A thread that overflows its stack: the agent's fatal handler needs a
    stack to run on and finish the trace. Only the main thread had an
    alternate one; the kernel killed the process at once and the trace
    was lost whole."""
    need_tools(t)
    tr = heaptrail_run([prog("thread_overflow")], out_name="overflow.ht")
    t.eq("exit status (SIGSEGV)", 128 + 11, tr.proc.rc)
    r = need_report(t, tr.out_path)
    prg = r.data.get("program", {})
    t.eq("ending", ("signal", 11), (prg.get("ending"), prg.get("signal")))
    t.eq("allocations by site", {"main": 500, "overflow": 500},
         {k: v["allocations"] for k, v in by_leaf(r.data).items() if k in ("main", "overflow")})


def t_umask_fork(t):
    """A program's umask 0777 does not leave its fork child a trace its
    owner cannot read (open's mode 0600 went through the umask: mode 000)."""
    need_tools(t)
    tr = heaptrail_run([prog("umask_fork")], out_name="u.ht")
    t.eq("exit status", 0, tr.proc.rc)
    files = sorted(tr.files())
    t.eq("traces", 2, len(files))
    t.eq("modes", ["0o600"] * len(files), [oct(os.stat(p).st_mode & 0o777) for p in files])
    for p in files:
        t.check(need_report(t, p).data.get("totals") is not None, "%s unreadable" % p)


def t_exec_child_outlives(t):
    """bash -c 'sleep 1 & sleep 0.3; exit 0': the child's trace of bash ended at its exec
    and is complete, though its pid (now sleep's) is alive: not listed as
    still running."""
    need_tools(t)
    # bash: its fork child allocates before the exec (a fork child that
    # allocated nothing, as dash's, leaves no trace)
    bash = shutil.which("bash")
    t.need(bash, "bash not installed")
    tr = heaptrail_run([bash, "-c", "sleep 1 & sleep 0.3; exit 0"], out_name="sh.%p.ht")
    t.eq("exit status", 0, tr.proc.rc)
    lines = [l for l in text(tr.proc.err).splitlines() if "(pid " in l]
    exec_lines = []
    for l in lines:
        m = re.match(r"heaptrail:\s+(\S+)\s+\(pid", l)
        if m and report(m.group(1)).data.get("program", {}).get("ending") == "exec":
            exec_lines.append(l)
    t.check(exec_lines, "no trace ended at exec: %r" % lines)
    t.check(not any("still running" in l for l in exec_lines), "listed: %r" % exec_lines)


def t_child_outlives(t):
    """A child still running when its parent ends (a daemon) has not ended
    its trace yet: the listing says so, and does not call it cut short
    ("killed?", as for a child that really was)."""
    need_tools(t)
    tr = heaptrail_run([prog("child_outlives")], out_name="co.%p.ht")
    t.eq("exit status", 0, tr.proc.rc)
    err = text(tr.proc.err)
    lines = [l for l in err.splitlines() if "(pid " in l and "summarized above" not in l]
    t.eq("the child's line", 1, len(lines))
    if lines:
        t.check("still running" in lines[0] and "killed" not in lines[0],
                "the child's line: %r" % lines[0])


def t_exit_in_dlclose(t):
    """_exit from a signal handler that interrupted dlopen or dlclose: the
    end of the trace must not wait for a lock the interrupted agent code
    holds (the check of libraries bound past the agent did, forever)."""
    need_tools(t)
    for i in range(5):
        tr = heaptrail_run([prog("exit_in_dlclose"), PROGS / "libdlplugin.so"],
                           out_name="exitdl%d.ht" % i, timeout=30)
        t.check(not tr.proc.timed_out, "run %d hung" % i)
        t.eq("run %d: exit status" % i, 3, tr.proc.rc)


def t_daemon(t):
    """daemon(3): glibc's parent leaves by an _exit inside libc that no hook
    sees, so its trace lost everything it had not written yet (here all of
    it). The parent's trace is now whole, ended by _exit, its live blocks
    leaked; the daemon's own trace is the child's."""
    need_tools(t)
    outdir = Path(scratch_dir("daemon"))
    tr = heaptrail_run([prog("daemonize"), outdir], out_name="d.ht", outdir=outdir)
    t.eq("exit status", 0, tr.proc.rc)
    deadline = time.monotonic() + 5
    while not (outdir / "done").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    t.need((outdir / "done").exists(), "the daemon did not finish")
    got = {}
    for p in sorted(outdir.glob("d.ht*")):
        r = report(p)
        while time.monotonic() < deadline:  # the daemon may still be writing
            if r.data and r.data.get("program", {}).get("ending") != "cut_short":
                break
            time.sleep(0.05)
            r = report(p)
        prg = r.data.get("program", {}) if r.data else {}
        tot = r.data.get("totals", {}) if r.data else {}
        got["daemon" if prg.get("forked") else "parent"] = (
            prg.get("ending"), tot.get("allocations"), tot.get("frees"), tot.get("leaked_bytes"))
    t.eq("traces (ending, allocations, frees, leaked bytes)",
         {"parent": ("_exit", 1000, 500, 32000), "daemon": ("exit", 10, 10, 0)}, got)


def t_rawclone_vm(t):
    """A child of a raw clone(CLONE_VM) shares the parent's memory: its
    events land in the parent's trace, and it neither writes the trace nor
    starts the writer there. Before, a writer started in the child's
    process ended it with exit(0) (the program's exit handler ran there,
    its status was lost) and the parent's trace was lost whole."""
    want = "child 3\nexit handler in main\n"
    plain = run([prog("rawclone_vm")], 60)
    t.eq("plain run's output", want, text(plain.out))
    need_tools(t)
    tr = heaptrail_run([prog("rawclone_vm")], out_name="rawclone.ht")
    t.eq("exit status", 0, tr.proc.rc)
    t.eq("output under heaptrail", want, text(tr.proc.out))
    r = need_report(t, tr.out_path)
    tot = r.data.get("totals", {})
    t.eq("totals", {"allocations": 1103, "frees": 1103, "bytes_allocated": 1048576 + 50000 + 10200,
                    "leaked_blocks": 0, "leaked_bytes": 0}, {k: tot.get(k) for k in TOT})
    t.eq("the child's sites", {"child": 2}, {k: v["allocations"] for k, v in by_leaf(r.data).items()
                                            if k == "child"})


def t_fork_cwd_relative(t):
    """A relative -o in the current directory: the traces are still found
    via the stderr listing."""
    need_tools(t)
    d = t.tmp / "cwd"
    d.mkdir()
    p = run([str(__import__("harness").HT), "run", "-o", "rel.ht", "--", prog("fork")], 60, cwd=str(d))
    t.eq("heaptrail run exit status", 0, p.rc)
    from harness import Traced
    tr = Traced(p, d, d / "rel.ht", str(d))
    t.eq("traces listed on stderr (relative -o)", 2, len(tr.listed()))
    t.eq("trace files in the directory", 2, len(tr.files()))


def t_output_device(t):
    """-o /dev/null discards the trace: the device is written to as it is,
    not a /dev/null.1 created beside it (as root, before), and run says
    there is nothing to report. -o /dev/full: the agent says it cannot
    write the header, and why."""
    need_tools(t)
    for dev, want in (("/dev/null", "trace written to /dev/null (a device: nothing to report)"),
                      ("/dev/full", "cannot write the trace file's header: /dev/full: "
                                    "No space left on device")):
        t.need(os.path.exists(dev), "no %s here" % dev)
        t.need(not os.path.exists(dev + ".1"), "%s.1 exists already: cannot tell" % dev)
        p = run([HT, "run", "-o", dev, "--", PROGS / "close_all", "close"], 60)
        t.eq("%s: exit status" % dev, 0, p.rc)
        t.check(want in text(p.err), "%s: no %r on stderr: %s" % (dev, want, tail(p.err)))
        t.check(not os.path.exists(dev + ".1"), "%s.1 was created" % dev)
        if os.path.exists(dev + ".1") and os.path.isfile(dev + ".1"):
            os.unlink(dev + ".1")


def t_output_directory(t):
    """-o naming a directory (with or without a final '/') writes a trace
    of the default name inside it, not DIR.1 beside it."""
    need_tools(t)
    for slash in ("", "/"):
        d = t.tmp / ("dir%d" % len(slash))
        d.mkdir()
        p = run([HT, "run", "-o", str(d) + slash, "--", PROGS / "close_all", "close"], 60)
        t.eq("-o DIR%s: exit status" % slash, 0, p.rc)
        t.check(not os.path.exists(str(d) + ".1"), "-o DIR%s: DIR.1 was created" % slash)
        files = sorted(d.iterdir())
        t.eq("-o DIR%s: files in DIR" % slash, 1, len(files))
        if len(files) != 1:
            continue
        t.check(re.fullmatch(r"heaptrail\.close_all\.\d+\.ht", files[0].name) is not None,
                "-o DIR%s: the trace's name is %s" % (slash, files[0].name))
        rep = need_report(t, files[0]).data
        t.eq("-o DIR%s: allocations, frees, bytes, leaked blocks, leaked bytes" % slash,
             (2000, 1993, 48000, 7, 224), tuple(rep.get("totals", {}).get(k) for k in TOT))


def t_output_fifo(t):
    """-o naming a FIFO is refused with a clear message (the program runs
    on, untraced), not written to or given a suffix."""
    need_tools(t)
    f = t.tmp / "fifo"
    os.mkfifo(str(f))
    p = run([HT, "run", "-o", f, "--", PROGS / "close_all", "close"], 60)
    t.eq("exit status", 0, p.rc)
    t.check("cannot create the trace file %s: a FIFO" % f in text(p.err),
            "no word on the FIFO: %s" % tail(p.err))
    t.eq("files beside the FIFO", ["fifo"], sorted(x.name for x in t.tmp.iterdir()))


FSIZE_WRAP = ("import os, resource, signal, sys\n"
              "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
              "resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))\n"
              "os.environ['LD_PRELOAD'] = os.environ.pop('WRAP_PRELOAD')\n"
              "os.execv(sys.argv[1], sys.argv[1:])\n")


def t_output_disk_full(t):
    """A disk full when the program starts (RLIMIT_FSIZE 0, SIGXFSZ
    ignored): the agent says on stderr it cannot write the header, the
    program runs on, and report says the 0-byte trace is empty, not
    "bad magic"."""
    need_tools(t)
    out = t.tmp / "full.ht"
    env = dict(os.environ, WRAP_PRELOAD=str(AGENT), HEAPTRAIL_OPTIONS="output=%s" % out)
    env.pop("LD_PRELOAD", None)
    p = run(["/usr/bin/python3", "-c", FSIZE_WRAP, PROGS / "close_all", "close"], 60, env=env)
    t.eq("exit status", 0, p.rc)
    t.check("heaptrail: cannot write the trace file's header: %s: File too large" % out
            in text(p.err), "no word on the header: %s" % tail(p.err))
    t.need(out.exists(), "no trace file")
    t.eq("trace size", 0, out.stat().st_size)
    r = report(out)
    t.check(r.proc.rc != 0, "report of an empty trace exits 0")
    t.check("the trace is empty (0 bytes)" in text(r.proc.err) and "bad magic" not in text(r.proc.err),
            "report does not say the trace is empty: %s" % tail(r.proc.err))
    short = t.tmp / "short.ht"
    short.write_bytes(b"HEAPTRL")
    r = report(short)
    t.check("the trace is empty: the file is 7 bytes" in text(r.proc.err),
            "report of a 7-byte trace: %s" % tail(r.proc.err))


def chdir_fork_traces(t, d):
    """{allocations: [leaked blocks]} of the traces in d (the run file aside)."""
    got = {}
    for f in sorted(d.iterdir()):
        if f.is_file() and f.suffix != ".run":
            tot = need_report(t, f).data.get("totals", {})
            got.setdefault(tot.get("allocations"), []).append(tot.get("leaked_blocks"))
    return got


def t_output_relative_chdir(t):
    """A relative output path is relative to the directory the program
    started in: a child forked after a chdir, and an image exec'd after
    it, write beside the parent's trace (tests/programs/chdir_fork.c).
    Through the agent's own output= option, and through heaptrail run -o
    from a directory whose name has a comma (which run cannot pass on as
    an absolute path)."""
    need_tools(t)
    start = t.tmp / "start"
    (start / "away").mkdir(parents=True)
    env = dict(os.environ, LD_PRELOAD=str(AGENT), HEAPTRAIL_OPTIONS="output=rel.%p.ht")
    p = run([PROGS / "chdir_fork", "away", "exec"], 60, env=env, cwd=str(start))
    t.eq("output=: exit status", 0, p.rc)
    t.eq("output=: files where the program moved to", [], sorted((start / "away").iterdir()))
    t.eq("output=: traces in the start directory {allocations: [leaked blocks]}",
         {100: [0], 50: [5], 0: [0], 30: [0]}, chdir_fork_traces(t, start))
    comma = t.tmp / "a,b"
    (comma / "away").mkdir(parents=True)
    p = run([HT, "run", "-o", "rel.%p.ht", "--", PROGS / "chdir_fork", "away"], 60, cwd=str(comma))
    t.eq("run -o: exit status", 0, p.rc)
    t.eq("run -o: files where the program moved to", [], sorted((comma / "away").iterdir()))
    t.eq("run -o: traces in the start directory {allocations: [leaked blocks]}",
         {100: [0], 50: [5]}, chdir_fork_traces(t, comma))



def t_fork_inherited_frees(t):
    """A fork child that frees blocks its parent allocated: those frees
    match no block of its trace; the report says where they came from."""
    need_tools(t)
    code = ("import os\n"
            "keep = [bytearray(64 + i) for i in range(50)]\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    del keep\n"
            "    os._exit(0)\n"
            "os.waitpid(pid, 0)\n")
    tr = heaptrail_run(["/usr/bin/python3", "-c", code], out_name="py.%p.ht",
                       env=dict(os.environ, PYTHONMALLOC="malloc"))
    t.eq("heaptrail run exit status", 0, tr.proc.rc)
    seen = {}
    for p in tr.files():
        r = need_report(t, p)
        forked = r.data["program"].get("forked")
        txt = text(need_report(t, p, fmt="text").proc.out)
        seen[forked] = (r.data["totals"]["ignored_frees"], txt)
    t.need(set(seen) == {False, True}, "expected a parent and a fork child trace, got %s" % sorted(seen))
    n, txt = seen[True]
    t.check(n >= 50, "child: %d frees of unknown blocks, expected the 50 inherited ones at least" % n)
    m = re.search(r"and ([\d,]+) more, of blocks allocated before the fork \(by the parent\)", txt)
    t.check(m and int(m.group(1).replace(",", "")) == n,
            "child's text report does not say where its %d unmatched frees came from: %s" %
            (n, [l for l in txt.splitlines() if "frees" in l]))
    t.check("before the fork" not in seen[False][1], "the parent's report speaks of a fork it did not make")


add("fork.memcheck_oracle", t_fork_memcheck)
add("fork.inherited_frees", t_fork_inherited_frees)
add("fork.no_follow_fork", t_fork_no_follow)
def t_killed_child_listed(t):
    """A forked child killed by SIGKILL leaves a trace with no end: the
    listing says so; the parent's, complete, is not marked."""
    need_tools(t)
    tr = heaptrail_run([prog("kill_child")], out_name="kc.%p.ht")
    t.eq("exit status", 0, tr.proc.rc)
    lines = [l for l in text(tr.proc.err).splitlines() if re.match(r"heaptrail:   \S+\.ht  \(pid", l)]
    t.eq("traces listed", 2, len(lines))
    t.eq("listed as cut short", 1, sum("cut short: killed?" in l for l in lines))
    t.check(all("cut short" not in l for l in lines if "summarized above" in l),
            "the parent's complete trace is marked cut short: %s" % lines)


add("fork.no_follow_spawned", t_spawn_no_follow)
add("fork.killed_child_listed", t_killed_child_listed)
add("signals.handler_allocates", t_signal_handler_allocs)
add("signals.siglongjmp_out_of_handler", t_signal_siglongjmp)
add("signals.siglongjmp_out_of_handler_rt", lambda t: t_signal_siglongjmp(t, rt=True))
add("signals.sigqueue_order", t_signal_sigqueue_order)
add("threads.names", t_thread_names)
for _how in ("prctl", "setname", "exit", "keep"):
    add("threads.main_name." + _how, main_name_test(_how))
add("threads.first_heap_call_in_getattr", t_getattr_first)
add("fork.relative_output", t_fork_cwd_relative)
add("output.device", t_output_device)
add("output.directory", t_output_directory)
add("output.fifo_refused", t_output_fifo)
add("output.disk_full_at_start", t_output_disk_full)
add("output.relative_after_chdir", t_output_relative_chdir)
add("fork.raw_clone_vm", t_rawclone_vm)
add("fork.daemon", t_daemon)
add("dlopen.exit_in_handler", t_exit_in_dlclose)
add("fork.child_outlives_parent", t_child_outlives)
add("fork.exec_child_outlives_parent", t_exec_child_outlives)
add("fork.umask_0777", t_umask_fork)
add("threads.stack_overflow", t_thread_overflow)
add("threads.leader_zombie", t_leader_zombie)
add("threads.busy_exit_128", t_busy_threads_exit)
add("threads.key_destructor_after_agent", t_key_after_agent)
add("threads.cancel_deferred", t_cancel_deferred)
add("limits.rlimit_as", t_rlimit_as)
add("exec.failing_while_threads_allocate", t_exec_fail_threads)
add("exec.failing_in_several_threads", t_exec_race)
add("exec.exit_in_handler", t_exit_in_exec)
add("exec.exit_during_exec", t_exit_during_exec)
add("exec.failing_while_threads_pack", t_exec_while_packing)
add("exec.succeeding_while_threads_pack", t_exec_while_packing_succeeds)
add("fork.exit_while_forking", t_exit_while_forking)


def fork_allocator_library(soname, what):
    """A program that forks before the agent has a helper thread, under
    another allocator whose fork handlers hold its locks across the fork
    (jemalloc's, tcmalloc's; mimalloc has none): preloaded after the agent
    and linked, it runs as untraced and both traces count its allocations.
    The agent's fork handler shipped the thread's first block, which
    started the writer thread: its TLS came from the allocator's malloc,
    locked, and the process hung for good (its signals blocked: only
    SIGKILL ended it). Preloaded before the agent, the program's malloc is
    the library's: the trace says so, and the agent on stderr (outside
    heaptrail run)."""
    def test(t):
        need_tools(t)
        lib = find_library(soname)
        if not lib:
            t.skip("%s is not installed (apt-get install %s)" % (soname, what))
        linked = t.tmp / "fork_early_linked"
        cc = run(["cc", "-std=gnu11", "-O0", "-g", "-fno-omit-frame-pointer", "-fno-builtin",
                  "-o", linked, SRC / "fork_early.c", lib], 120)
        t.need(cc.rc == 0, "cannot link fork_early.c to %s: %s" % (lib, tail(cc.err)))
        plain = run([linked], 30)
        t.need(plain.rc == 0 and not plain.timed_out,
               "untraced run: exit %s%s" % (plain.rc, " (hung)" if plain.timed_out else ""))
        want = {"parent": {"before_fork": (1, 10, 0), "parent_after": (3, 90, 0)},
                "child": {"child_work": (2, 40, 0)}}
        for how, args, env in (("preloaded", [prog("fork_early")],
                                dict(os.environ, LD_PRELOAD=lib)),
                               ("linked", [linked], None)):
            tr = heaptrail_run(args, out_name="%s.ht" % how, env=env, timeout=30)
            if not t.check(not tr.proc.timed_out, "%s: hung (killed after 30 s)" % how):
                continue
            t.eq("%s: exit status" % how, 0, tr.proc.rc)
            got = {}
            for path in tr.files():
                r = need_report(t, path).data
                role = "child" if r.get("program", {}).get("forked") else "parent"
                t.eq("%s %s: ending" % (how, role), "exit" if role == "parent" else "_exit",
                     r.get("program", {}).get("ending"))
                got[role] = {k: (v["allocations"], v["bytes_allocated"], v["leaked_blocks"])
                             for k, v in by_leaf(r).items() if k in want[role]}
            t.eq("%s: allocations, bytes, leaked blocks by leaf" % how, want, got)
        # preloaded ahead of the agent, outside heaptrail run
        out = t.tmp / "before.ht"
        env = dict(os.environ, LD_PRELOAD="%s:%s" % (lib, AGENT),
                   HEAPTRAIL_OPTIONS="output=%s" % out)
        env.pop("HEAPTRAIL_AGENT", None)
        p = run([prog("fork_early")], 30, env=env)
        if t.check(not p.timed_out, "preloaded before the agent: hung (killed after 30 s)"):
            t.eq("preloaded before the agent: exit status", 0, p.rc)
            t.check(re.search(r"heaptrail: note: \S*%s defines malloc and comes before "
                              r"libheaptrail\.so" % re.escape(os.path.basename(lib)),
                              text(p.err)),
                    "preloaded before the agent: no note on stderr: %s" % tail(p.err))
            r = need_report(t, out).data
            t.eq("preloaded before the agent: allocations recorded", 0,
                 r.get("totals", {}).get("allocations"))
            t.check(any("malloc is not the agent's" in w for w in r.get("warnings", [])),
                    "preloaded before the agent: no warning in the report: %r" %
                    r.get("warnings"))
    return test


add("fork.early_under_jemalloc", fork_allocator_library("libjemalloc.so.2", "libjemalloc2"))
add("fork.early_under_tcmalloc",
    fork_allocator_library("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"))
add("fork.early_under_mimalloc", fork_allocator_library("libmimalloc.so.2", "libmimalloc2.0"))


add("fork.during_exec", t_fork_during_exec)
add("fork.pattern_p", t_fork_pattern)
add("fork.stderr_listing", t_fork_listing)


# ---- exec ---------------------------------------------------------------------------

def t_exec(t):
    need_tools(t)
    tr = heaptrail_run([prog("exec_parent")], out_name="exec.ht")
    t.eq("heaptrail run exit status (exec_target's)", 0, tr.proc.rc)
    paths = set(tr.listed()) | set(tr.files())
    images = {}
    for p in sorted(paths):
        r = need_report(t, p)
        cmd = r.data.get("program", {}).get("command") or ["?"]
        images.setdefault(os.path.basename(cmd[0]), []).append((p, r.data))
    t.eq("traced images", ["exec_parent", "exec_target"], sorted(images))
    t.check(all(len(v) == 1 for v in images.values()), "an image traced twice: %s" %
            {k: [str(p) for p, _ in v] for k, v in images.items()})
    if "exec_parent" in images:
        rep = images["exec_parent"][0][1]
        tot = rep.get("totals", {})
        t.eq("exec_parent image totals (live at exec = leaked)",
             {"allocations": 2, "frees": 1, "bytes_allocated": 5555, "leaked_blocks": 1,
              "leaked_bytes": 4321}, {k: tot.get(k) for k in TOT})
        t.eq("exec_parent sites", {"before_exec": 2}, {k: v["allocations"] for k, v in by_leaf(rep).items()})
    if "exec_target" in images:
        rep = images["exec_target"][0][1]
        vg = memcheck(("exec_parent",), [prog("exec_parent")], children=True)[1]
        vgt = [r for r in vg.values() if r.command and "exec_target" in r.command and r.allocs is not None]
        tot = rep.get("totals", {})
        want = {"allocations": 3, "frees": 2, "bytes_allocated": 3000, "leaked_blocks": 1, "leaked_bytes": 1000}
        t.eq("exec_target image totals", want, {k: tot.get(k) for k in TOT})
        t.eq("memcheck of the exec'd image", [want], [r.totals() for r in vgt])
        t.eq("exec_target command", [prog("exec_target"), "from-exec"], rep.get("program", {}).get("command"))
        t.eq("exec_target exit_code", 0, rep.get("program", {}).get("exit_code"))
        t.eq("exec_target sites", {"target_work": 3}, {k: v["allocations"] for k, v in by_leaf(rep).items()})
        if "exec_parent" in images:
            t.eq("both images have the same pid", images["exec_parent"][0][1].get("program", {}).get("pid"),
                 rep.get("program", {}).get("pid"))
    for k, v in images.items():
        for p, r in v:
            for e in contract.check(r):
                t.check(False, "%s: %s" % (k, e))


add("exec.both_images", t_exec)


# ---- dlopen ---------------------------------------------------------------------------

def t_dlopen(t):
    vg = memcheck_prog(t, "dlopen")
    tr, rep = traced(t, "dlopen")
    t.eq("heaptrail run exit status", 0, tr.proc.rc)
    eq_memcheck(t, vg, rep)
    src = str(SRC / "plugin" / "dlplugin.c")
    lib = str(PROGS / "libdlplugin.so")
    pl = [lk for lk in rep.get("leaks", []) if lk.get("bytes") == 3000]
    t.eq("leaks of 3000 bytes (the plugin's)", 1, len(pl))
    if pl:
        st = pl[0].get("stack") or [{}]
        f = st[0]
        t.eq("plugin leak (after dlclose): stack[0].function", "plugin_leak", f.get("function"))
        t.eq("plugin leak: stack[0].module", lib, f.get("module"))
        t.eq("plugin leak: stack[0].file", src, f.get("file"))
        t.eq("plugin leak: stack[0].line", marker_line(src, "PLUGIN_LEAK"), f.get("line"))
        t.eq("plugin leak: stack[1].function", "main", st[1].get("function") if len(st) > 1 else None)
    agg = by_leaf(rep)
    t.eq("sites with leaf plugin_leak", S(2, 5000, 1, 3000),
         {k: agg.get("plugin_leak", {}).get(k) for k in ("allocations", "bytes_allocated",
                                                         "leaked_blocks", "leaked_bytes")})
    # Everything else is the dynamic loader's, reached from dlopen/dlclose/dlsym.
    other = [s for s in rep.get("sites", []) if leafname(s) != "plugin_leak"]
    bad = [functions(s.get("stack", []))[:8] for s in other
           if not any(isinstance(fn, str) and re.search(r"dl_?(open|close|sym)", fn)
                      for fn in functions(s.get("stack", [])))]
    t.check(not bad, "sites neither the plugin's nor the loader's: %s" % bad[:3])
    for e in contract.check(rep):
        t.check(False, e)


def leafname(s):
    st = s.get("stack") or [{}]
    return st[0].get("function")


add("dlopen.plugin_after_dlclose", t_dlopen)


def t_dlswap(t):
    """A library loaded where an unloaded one was, with the same code: the
    same return addresses must not make its allocations the first one's
    (stacks interned by address, folded by frames, or a module picked by a
    coarse time stamp all did)."""
    src = str(SRC / "plugin" / "dlswap.c")
    # a summary has no events: its sites carry the time of their first block
    for opts in ((), ("--unwind", "fp"), ("--summary",)):
        tr, rep = traced(t, "dlswap", opts)
        t.need(tr.proc.rc != 3, "libdlswap2.so was not loaded at libdlswap1.so's address: "
               "the case under test did not happen")
        t.eq("%s: heaptrail run exit status" % (opts,), 0, tr.proc.rc)
        for fn, lib, n in (("swap_one_alloc", "libdlswap1.so", 100),
                           ("swap_two_alloc", "libdlswap2.so", 200)):
            mine = [s for s in rep.get("sites", []) if leafname(s) == fn]
            t.eq("%s: sites with leaf %s: (allocations, bytes)" % (opts, fn), [(10, 10 * n)],
                 [(s.get("allocations"), s.get("bytes_allocated")) for s in mine])
            if len(mine) == 1:
                f = mine[0]["stack"][0]
                t.eq("%s: %s frame: module, file, line" % (opts, fn),
                     (str(PROGS / lib), src, marker_line(src, "SWAP_ALLOC")),
                     (f.get("module"), f.get("file"), f.get("line")))


add("dlopen.library_at_unloaded_address", t_dlswap)


# ---- recursion / depth -------------------------------------------------------------------

def recursion_stack(t, rep):
    lk = [x for x in rep.get("leaks", []) if x.get("bytes") == 4096]
    t.need(len(lk) == 1, "expected one 4096-byte leak, got %r" % [(x.get("bytes"), x.get("blocks")) for x in rep.get("leaks", [])])
    return functions(lk[0].get("stack", []))


def t_depth_default(t):
    _, rep = traced(t, "recursion")
    fns = recursion_stack(t, rep)
    t.eq("stack depth with the default limit", 64, len(fns))
    t.eq("innermost frames kept: leaf_alloc then 63 x recurse",
         ["leaf_alloc"] + ["recurse"] * 63, fns)


def t_depth_256(t):
    tr, rep = traced(t, "recursion", opts=("--depth", "256"))
    fns = recursion_stack(t, rep)
    t.eq("leaf_alloc, then 200 x recurse, then main", ["leaf_alloc"] + ["recurse"] * 200 + ["main"], fns[:202])
    t.check(len(fns) <= 256, "more frames than --depth 256: %d" % len(fns))
    t.check(len(fns) >= 202, "only %d frames with --depth 256" % len(fns))


def t_depth_fp(t):
    """The frame-pointer walker, through the agent's documented options."""
    need_tools(t)
    out = t.tmp / "fp.ht"
    env = dict(os.environ, LD_PRELOAD=str(AGENT),
               HEAPTRAIL_OPTIONS="output=%s,unwind=fp,depth=256" % out)
    p = run([prog("recursion")], 60, env=env)
    t.eq("exit status of recursion with LD_PRELOAD", 0, p.rc)
    t.need(out.exists(), "no trace at %s: %s" % (out, tail(p.err)))
    r = need_report(t, out)
    fns = recursion_stack(t, r.data)
    t.eq("fp unwinder: leaf_alloc, then 200 x recurse, then main",
         ["leaf_alloc"] + ["recurse"] * 200 + ["main"], fns[:202])
    t.eq("fp unwinder totals", (1, 4096), (r.data["totals"].get("allocations"), r.data["totals"].get("bytes_allocated")))


def t_depth_fp_cli(t):
    tr, rep = traced(t, "recursion", opts=("--unwind", "fp", "--depth", "256"))
    fns = recursion_stack(t, rep)
    t.eq("run --unwind fp: leaf_alloc, then 200 x recurse, then main",
         ["leaf_alloc"] + ["recurse"] * 200 + ["main"], fns[:202])
    tr, rep = traced(t, "recursion", opts=("--unwind", "fp"))
    fns = recursion_stack(t, rep)
    t.eq("run --unwind fp, default depth: leaf_alloc then 63 x recurse",
         ["leaf_alloc"] + ["recurse"] * 63, fns)


add("recursion.depth_default_64", t_depth_default)
def t_foreign_stacks(t):
    """Allocations on a coroutine's stack (from malloc and from mmap) and
    on a signal handler's alternate stack lie outside the thread's stack
    bounds: both unwinders still give their whole stacks. The
    frame-pointer walker used to stop at once there (empty stacks)."""
    need_tools(t)
    for unwind in ("fp", "libunwind"):
        tr = heaptrail_run([prog("foreign_stacks")], opts=["--unwind", unwind],
                           out_name="foreign_%s.ht" % unwind)
        t.eq("exit status (--unwind %s)" % unwind, 0, tr.proc.rc)
        r = need_report(t, tr.out_path)
        got = {}
        for site in r.data.get("sites", []):
            f = functions(site["stack"])
            if f and f[0] in ("level3", "alt2"):
                key = tuple(f[:4] if f[0] == "level3" else f[:3])
                got[key] = got.get(key, 0) + site["allocations"]
        t.eq("allocations by innermost frames (--unwind %s)" % unwind,
             {("level3", "level2", "level1", "coro_body"): 20, ("alt2", "alt1", "on_usr1"): 5}, got)


add("recursion.unwind_fp_cli", t_depth_fp_cli)
add("recursion.foreign_stacks", t_foreign_stacks)
add("recursion.depth_256", t_depth_256)
add("recursion.unwind_fp", t_depth_fp)


# ---- constructor --------------------------------------------------------------------

def t_ctor(t):
    _, rep = traced(t, "ctor")
    s = [x for x in rep.get("sites", []) if leafname(x) == "early_alloc"]
    for x in s:
        fns = functions(x.get("stack", []))
        t.check("main" not in fns, "constructor allocation has main in its stack: %s" % fns)
        t.check("before_main" in fns, "constructor allocation's stack lacks before_main: %s" % fns)
    t.eq("constructor sites' sizes", [111, 222, 333], sorted(x.get("bytes_allocated") for x in s))


add("ctor.before_main_stacks", t_ctor)


# ---- sizes no block can have -------------------------------------------------------------

def t_custom_huge(t):
    """heaptrail_alloc(p, SIZE_MAX) was recorded: the total of bytes wrapped
    to a small number (99 B) while the site showed 16 EiB. The agent now
    refuses sizes above PTRDIFF_MAX, and the report says so."""
    _, rep = traced(t, "custom_huge")
    tot = rep["totals"]
    t.eq("allocations, bytes, frees, ignored frees, leaked blocks", (2, 164, 2, 1, 0),
         tuple(tot.get(k) for k in ("allocations", "bytes_allocated", "frees", "ignored_frees",
                                    "leaked_blocks")))
    t.eq("the sites' bytes add up to the total", tot.get("bytes_allocated"),
         sum(s.get("bytes_allocated", 0) for s in rep.get("sites", [])))
    t.eq("warnings about refused sizes", 1,
         sum(1 for w in rep.get("warnings", []) if "PTRDIFF_MAX" in w))


add("custom.huge_sizes", t_custom_huge)
