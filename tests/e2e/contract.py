"""contract.py - the JSON report contract, checked key by key.

{ "heaptrail_report": 1,
  "program": {"command": [...], "pid": int, "exit_code": int|null, "signal": int|null},
  "totals": {allocations, frees, bytes_allocated, peak_heap_bytes, peak_rss_bytes,
             leaked_blocks, leaked_bytes, temporary_allocations, duration_seconds},
  "sites": [ {allocations, bytes_allocated, peak_bytes, leaked_blocks, leaked_bytes,
              temporary_allocations, stack: [FRAME...]} ],   largest bytes first
  "leaks": [ {blocks, bytes, kind, block, stack: [FRAME...]} ],
        by class (definite, indirect, possible, unclassified, reachable), then
        largest first; kind is one of memcheck's classes or null (unclassified),
        block one block's allocation number ("n" or "T.n")
  "fd_leaks": [ {call, count, fds: [int > 2...], stack_id, stack: [FRAME...]} ],
                                                            most descriptors first
  "handle_leaks": [ {kind, held, acquired, released,
                     stacks: [ {count, stack_id, stack: [FRAME...]} ]} ] }   by kind
FRAME = {function, file, line, module, address: "0x...", inlined: bool}
Stacks are leaf-first: stack[0] is the program's innermost frame (the function
that called malloc/new), never an allocator entry point or the agent. Unknown
values are null, never made up (no "", "??", line 0).
"""

import re

# Functions that may never be stack[0]: the allocator entry points (C and
# demangled C++) - the frame that called them is the leaf.
ALLOCATOR_FUNCS = {
    "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "__libc_malloc",
    "__libc_calloc", "__libc_realloc", "__libc_memalign", "__libc_valloc",
    "__libc_pvalloc", "__posix_memalign", "_int_malloc", "tcache_init",
    "operator new(unsigned long)", "operator new[](unsigned long)",
    "operator new(unsigned long, std::nothrow_t const&)",
    "operator new[](unsigned long, std::nothrow_t const&)",
    "operator new(unsigned long, std::align_val_t)",
    "operator new[](unsigned long, std::align_val_t)",
    "operator new(unsigned long, std::align_val_t, std::nothrow_t const&)",
    "operator new[](unsigned long, std::align_val_t, std::nothrow_t const&)",
}

TOTAL_INT_KEYS = ("allocations", "frees", "bytes_allocated", "peak_heap_bytes",
                  "leaked_blocks", "leaked_bytes", "temporary_allocations")
SITE_INT_KEYS = ("allocations", "bytes_allocated", "peak_bytes", "leaked_blocks",
                 "leaked_bytes", "temporary_allocations")
FRAME_KEYS = ("function", "file", "line", "module", "address", "inlined")
ADDR_RE = re.compile(r"^0x[0-9a-f]+$")
BLOCK_RE = re.compile(r"^[1-9][0-9]*(\.[1-9][0-9]*)?$")
# Report order of the leak classes (null: unclassified, no leak check saw it).
KIND_ORDER = {"definite": 0, "indirect": 1, "possible": 2, None: 3, "reachable": 4}
KIND_TOTALS = ("definite", "indirect", "possible", "reachable", "unclassified", "suppressed")


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _str_or_null(v):
    return v is None or (isinstance(v, str) and v != "" and v not in ("??", "?"))


def is_agent_module(m):
    return isinstance(m, str) and "libheaptrail" in m.rsplit("/", 1)[-1]


def check_frame(err, where, f):
    if not isinstance(f, dict):
        err("%s: frame is %s, not an object" % (where, type(f).__name__))
        return
    missing = [k for k in FRAME_KEYS if k not in f]
    if missing:
        err("%s: frame lacks %s: %r" % (where, missing, f))
    if not _str_or_null(f.get("function")):
        err("%s: function must be a non-empty string or null, got %r" % (where, f.get("function")))
    # Absolute when DWARF gives a full path; a relative one is what DWARF
    # says when it does not (distribution libraries). The program's own
    # frames are checked to be absolute and exact by the program tests.
    fl = f.get("file")
    if not _str_or_null(fl):
        err("%s: file must be a non-empty path or null, got %r" % (where, fl))
    ln = f.get("line")
    if not (ln is None or (_is_int(ln) and ln >= 1)):
        err("%s: line must be an int >= 1 or null, got %r" % (where, ln))
    if ln is not None and fl is None:
        err("%s: line %r without a file" % (where, ln))
    if not _str_or_null(f.get("module")):
        err("%s: module must be a non-empty string or null, got %r" % (where, f.get("module")))
    a = f.get("address")
    if not (isinstance(a, str) and ADDR_RE.match(a)):
        err("%s: address must be a \"0x...\" lower-case hex string, got %r" % (where, a))
    if not isinstance(f.get("inlined"), bool):
        err("%s: inlined must be a boolean, got %r" % (where, f.get("inlined")))
    if is_agent_module(f.get("module")):
        err("%s: a frame of the agent itself (%s) is in the user's stack" % (where, f.get("module")))


def check_stack(err, where, st):
    if not isinstance(st, list):
        err("%s: stack is %r, not a list" % (where, type(st).__name__))
        return
    for i, f in enumerate(st):
        check_frame(err, "%s.stack[%d]" % (where, i), f)
    if st and isinstance(st[0], dict):
        fn = st[0].get("function")
        if fn in ALLOCATOR_FUNCS or (isinstance(fn, str) and fn.startswith("operator new")):
            f0 = st[0]
            caller = next((f.get("function") for f in st[1:] if isinstance(f, dict)), None)
            err("%s.stack[0] is the allocator entry point %r (%s%s:%s in %s), not its caller %r" % (
                where, fn, "inlined, " if f0.get("inlined") else "", f0.get("file"),
                f0.get("line"), f0.get("module"), caller))
        # by name only where the module is the agent's or unknown: programs
        # have functions named ht_* too (gcc's ht_create)
        if (isinstance(fn, str) and (fn.startswith("heaptrail_") or fn.startswith("ht_"))
                and (not st[0].get("module") or is_agent_module(st[0].get("module")))):
            err("%s.stack[0] is agent code %r" % (where, fn))


def check(rep, max_errors=12, top=None):
    """All contract violations of one JSON report, as strings (empty: ok).
    top: the report was made with --top N (sites may then be a prefix)."""
    errs = []

    def err(msg):
        if len(errs) < max_errors:
            errs.append(msg)
        elif len(errs) == max_errors:
            errs.append("... (more contract violations)")

    if not isinstance(rep, dict):
        return ["report is %s, not an object" % type(rep).__name__]
    if rep.get("heaptrail_report") != 1 or not _is_int(rep.get("heaptrail_report")):
        err("heaptrail_report: expected 1, got %r" % rep.get("heaptrail_report"))
    for k in ("program", "totals", "sites", "leaks"):
        if k not in rep:
            err("top-level key %r missing" % k)

    prog = rep.get("program")
    if not isinstance(prog, dict):
        err("program is not an object: %r" % prog)
    else:
        for k in ("command", "pid", "exit_code", "signal"):
            if k not in prog:
                err("program.%s missing" % k)
        cmd = prog.get("command")
        if not (isinstance(cmd, list) and cmd and all(isinstance(c, str) for c in cmd)):
            err("program.command must be a non-empty list of strings, got %r" % cmd)
        if not (_is_int(prog.get("pid")) and prog.get("pid") > 0):
            err("program.pid must be a positive int, got %r" % prog.get("pid"))
        ec, sig = prog.get("exit_code"), prog.get("signal")
        if not (ec is None or (_is_int(ec) and 0 <= ec <= 255)):
            err("program.exit_code must be 0..255 or null, got %r" % ec)
        if not (sig is None or (_is_int(sig) and 1 <= sig <= 64)):
            err("program.signal must be 1..64 or null, got %r" % sig)
        if ec is not None and sig is not None:
            err("program has both exit_code %r and signal %r" % (ec, sig))

    tot = rep.get("totals")
    if not isinstance(tot, dict):
        err("totals is not an object: %r" % tot)
        tot = {}
    for k in TOTAL_INT_KEYS:
        if k not in tot:
            err("totals.%s missing" % k)
        elif not (_is_int(tot[k]) and tot[k] >= 0):
            err("totals.%s must be an int >= 0, got %r" % (k, tot[k]))
    if "peak_rss_bytes" not in tot:
        err("totals.peak_rss_bytes missing")
    elif not (tot["peak_rss_bytes"] is None or (_is_int(tot["peak_rss_bytes"]) and tot["peak_rss_bytes"] > 0)):
        err("totals.peak_rss_bytes must be a positive int or null, got %r" % tot["peak_rss_bytes"])
    if "duration_seconds" not in tot:
        err("totals.duration_seconds missing")
    elif not (tot["duration_seconds"] is None or (_is_num(tot["duration_seconds"]) and tot["duration_seconds"] >= 0)):
        err("totals.duration_seconds must be a number >= 0 or null, got %r" % tot["duration_seconds"])
    ti = {k: tot.get(k) for k in TOTAL_INT_KEYS if _is_int(tot.get(k))}
    if len(ti) == len(TOTAL_INT_KEYS):
        if ti["frees"] > ti["allocations"]:
            err("totals: frees %d > allocations %d" % (ti["frees"], ti["allocations"]))
        if ti["leaked_blocks"] > ti["allocations"]:
            err("totals: leaked_blocks %d > allocations %d" % (ti["leaked_blocks"], ti["allocations"]))
        if ti["leaked_bytes"] > ti["bytes_allocated"]:
            err("totals: leaked_bytes > bytes_allocated")
        if ti["peak_heap_bytes"] > ti["bytes_allocated"]:
            err("totals: peak_heap_bytes %d > bytes_allocated %d" % (ti["peak_heap_bytes"], ti["bytes_allocated"]))
        if ti["leaked_bytes"] > ti["peak_heap_bytes"]:
            err("totals: leaked_bytes %d > peak_heap_bytes %d" % (ti["leaked_bytes"], ti["peak_heap_bytes"]))
        if ti["temporary_allocations"] > ti["allocations"]:
            err("totals: temporary_allocations > allocations")

    sites = rep.get("sites")
    if not isinstance(sites, list):
        err("sites is not a list")
        sites = []
    seen = {}
    for i, s in enumerate(sites):
        w = "sites[%d]" % i
        if not isinstance(s, dict):
            err("%s is not an object" % w)
            continue
        for k in SITE_INT_KEYS:
            if not (_is_int(s.get(k)) and s.get(k) >= 0):
                err("%s.%s must be an int >= 0, got %r" % (w, k, s.get(k)))
        if "stack" not in s:
            err("%s.stack missing" % w)
        check_stack(err, w, s.get("stack"))
        if isinstance(s.get("stack"), list):
            key = tuple((f.get("address"), f.get("function")) for f in s["stack"] if isinstance(f, dict))
            if key in seen:
                err("%s and sites[%d] have the same stack: sites must be distinct stacks" % (w, seen[key]))
            seen[key] = i
        if _is_int(s.get("allocations")) and s.get("allocations") == 0:
            err("%s has 0 allocations" % w)
        if all(_is_int(s.get(k)) for k in SITE_INT_KEYS):
            if s["leaked_blocks"] > s["allocations"] or s["leaked_bytes"] > s["bytes_allocated"]:
                err("%s leaks more than it allocated: %r" % (w, {k: s[k] for k in SITE_INT_KEYS}))
            if s["peak_bytes"] > s["bytes_allocated"]:
                err("%s.peak_bytes %d > its bytes_allocated %d" % (w, s["peak_bytes"], s["bytes_allocated"]))
    b = [s.get("bytes_allocated") for s in sites if isinstance(s, dict)]
    if all(_is_int(x) for x in b) and b != sorted(b, reverse=True):
        err("sites are not sorted by bytes_allocated, largest first: %r" % b[:20])

    leaks = rep.get("leaks")
    if not isinstance(leaks, list):
        err("leaks is not a list")
        leaks = []
    for i, lk in enumerate(leaks):
        w = "leaks[%d]" % i
        if not isinstance(lk, dict):
            err("%s is not an object" % w)
            continue
        for k in ("blocks", "bytes"):
            if not (_is_int(lk.get(k)) and lk.get(k) > 0):
                err("%s.%s must be an int > 0, got %r" % (w, k, lk.get(k)))
        if "stack" not in lk:
            err("%s.stack missing" % w)
        check_stack(err, w, lk.get("stack"))
        if lk.get("kind", "missing") not in KIND_ORDER:
            err("%s.kind must be definite, indirect, possible, reachable or null, got %r"
                % (w, lk.get("kind", "missing")))
        if not (isinstance(lk.get("block"), str) and BLOCK_RE.match(lk["block"])):
            err("%s.block must be an allocation number \"n\" or \"T.n\", got %r" % (w, lk.get("block")))
    keyed = [(KIND_ORDER.get(lk.get("kind"), 9), -lk.get("bytes")) for lk in leaks
             if isinstance(lk, dict) and _is_int(lk.get("bytes"))]
    if keyed != sorted(keyed):
        err("leaks are not sorted by class, then largest first: %r" % keyed[:20])
    # The classes add up: every block live at the end is in one class or
    # suppressed, and "leaks" lists all but the suppressed ones.
    kt = {k: (tot.get(k + "_blocks"), tot.get(k + "_bytes")) for k in KIND_TOTALS}
    if not all(_is_int(b) and _is_int(y) and b >= 0 and y >= 0 for b, y in kt.values()):
        err("totals must hold <class>_blocks and <class>_bytes for %s: %r" % (KIND_TOTALS, kt))
    elif len(ti) == len(TOTAL_INT_KEYS):
        if sum(b for b, _ in kt.values()) != ti["leaked_blocks"]:
            err("the classes' blocks %r do not add up to totals.leaked_blocks %d" % (kt, ti["leaked_blocks"]))
        if sum(y for _, y in kt.values()) != ti["leaked_bytes"]:
            err("the classes' bytes %r do not add up to totals.leaked_bytes %d" % (kt, ti["leaked_bytes"]))
        for k in KIND_TOTALS[:5]:
            kk = None if k == "unclassified" else k
            got = sum(lk["blocks"] for lk in leaks if isinstance(lk, dict) and lk.get("kind", 0) == kk
                      and _is_int(lk.get("blocks")))
            if got != kt[k][0]:
                err("leaks of kind %r hold %d blocks, totals.%s_blocks is %d" % (kk, got, k, kt[k][0]))

    # The parts add up to the totals.
    if sites and len(ti) == len(TOTAL_INT_KEYS) and all(
            isinstance(s, dict) and all(_is_int(s.get(k)) for k in SITE_INT_KEYS) for s in sites):
        sums = {k: sum(s[k] for s in sites) for k in SITE_INT_KEYS}
        pairs = [("allocations", "allocations"), ("bytes_allocated", "bytes_allocated"),
                 ("leaked_blocks", "leaked_blocks"), ("leaked_bytes", "leaked_bytes"),
                 ("temporary_allocations", "temporary_allocations")]
        # (peak_bytes as "contribution to the peak" is checked by the peak
        # test alone, so that one reading of it does not fail every report.)
        for sk, tk in pairs:
            if top is None and sums[sk] != ti[tk]:
                err("sum of sites' %s is %d, totals.%s is %d" % (sk, sums[sk], tk, ti[tk]))
            if top is not None and sums[sk] > ti[tk]:
                err("sum of the top sites' %s (%d) exceeds totals.%s (%d)" % (sk, sums[sk], tk, ti[tk]))
    sup = (tot.get("suppressed_blocks"), tot.get("suppressed_bytes"))
    if leaks and len(ti) == len(TOTAL_INT_KEYS) and all(_is_int(x) for x in sup) and all(
            isinstance(lk, dict) and _is_int(lk.get("blocks")) and _is_int(lk.get("bytes")) for lk in leaks):
        if sum(lk["blocks"] for lk in leaks) + sup[0] != ti["leaked_blocks"]:
            err("sum of leaks' blocks %d + suppressed %d != totals.leaked_blocks %d" % (
                sum(lk["blocks"] for lk in leaks), sup[0], ti["leaked_blocks"]))
        if sum(lk["bytes"] for lk in leaks) + sup[1] != ti["leaked_bytes"]:
            err("sum of leaks' bytes %d + suppressed %d != totals.leaked_bytes %d" % (
                sum(lk["bytes"] for lk in leaks), sup[1], ti["leaked_bytes"]))
    if not leaks and ti.get("leaked_blocks") and ti.get("leaked_blocks") != sup[0]:
        err("totals.leaked_blocks is %d but leaks is empty (suppressed: %r)" % (ti["leaked_blocks"], sup[0]))
    check_resources(err, rep)
    return errs


FD_CALLS = ("open", "socket", "accept", "pipe", "dup", "fopen", "other")


def check_resources(err, rep):
    """fd_leaks and handle_leaks: always present, maybe empty."""
    fl = rep.get("fd_leaks")
    if not isinstance(fl, list):
        err("fd_leaks is %r, not a list" % type(fl).__name__)
        fl = []
    seen = set()
    for i, g in enumerate(fl):
        w = "fd_leaks[%d]" % i
        if not isinstance(g, dict):
            err("%s is not an object" % w)
            continue
        if g.get("call") not in FD_CALLS:
            err("%s.call %r is not one of %s" % (w, g.get("call"), FD_CALLS))
        fds = g.get("fds")
        if not (isinstance(fds, list) and fds and all(_is_int(x) and x > 2 for x in fds)):
            err("%s.fds must be a non-empty list of descriptors > 2, got %r" % (w, fds))
            continue
        if fds != sorted(set(fds)) or seen & set(fds):
            err("%s.fds not ascending, or listed twice: %r" % (w, fds))
        seen |= set(fds)
        if g.get("count") != len(fds):
            err("%s.count %r != len(fds) %d" % (w, g.get("count"), len(fds)))
        if not _is_int(g.get("stack_id")):
            err("%s.stack_id is not an int" % w)
        check_stack(err, w, g.get("stack"))
    counts = [g.get("count") for g in fl if isinstance(g, dict) and _is_int(g.get("count"))]
    if counts != sorted(counts, reverse=True):
        err("fd_leaks are not sorted most descriptors first: %r" % counts)
    hl = rep.get("handle_leaks")
    if not isinstance(hl, list):
        err("handle_leaks is %r, not a list" % type(hl).__name__)
        hl = []
    for i, k in enumerate(hl):
        w = "handle_leaks[%d]" % i
        if not isinstance(k, dict):
            err("%s is not an object" % w)
            continue
        if not (k.get("kind") is None or isinstance(k.get("kind"), str)):
            err("%s.kind must be a string or null, got %r" % (w, k.get("kind")))
        nums = [k.get(x) for x in ("held", "acquired", "released")]
        if not all(_is_int(x) and x >= 0 for x in nums):
            err("%s: held, acquired, released must be ints >= 0, got %r" % (w, nums))
            continue
        if nums[0] + nums[2] > nums[1]:
            err("%s: held + released > acquired: %r" % (w, nums))
        if nums[0] == 0:
            err("%s: a kind with nothing held is listed" % w)
        st = k.get("stacks")
        if not isinstance(st, list):
            err("%s.stacks is not a list" % w)
            continue
        c = [x.get("count") for x in st if isinstance(x, dict)]
        if not all(_is_int(x) and x > 0 for x in c) or sum(c) != nums[0]:
            err("%s: stack counts %r do not sum to held %d" % (w, c, nums[0]))
        elif c != sorted(c, reverse=True):
            err("%s.stacks are not sorted most handles first: %r" % (w, c))
        for j, x in enumerate(st):
            if isinstance(x, dict):
                check_stack(err, "%s.stacks[%d]" % (w, j), x.get("stack"))
    kinds = [k.get("kind") or "" for k in hl if isinstance(k, dict)]
    if kinds != sorted(kinds):
        err("handle_leaks are not sorted by kind: %r" % kinds)
