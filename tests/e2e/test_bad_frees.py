"""test_bad_frees.py - double, invalid and mismatched frees
(tests/programs/bad_free.cc), each reported with memcheck's stacks.

  badfree.memcheck   each mode of bad_free: the INVALID FREES entry has
                     memcheck's kind ("Invalid free()" / "Mismatched
                     free()"), the bad free's stack, the block's size and
                     offset, its allocation stack and (double free) the
                     stack of its first free, as memcheck's error lists them
                     (--free-stacks); heaptrail run ends as the program
                     does without the agent (glibc's abort, status 134, or
                     0); without --free-stacks the aborting frees keep their
                     stack (the agent's SIGABRT handler records it) and the
                     mismatched ones have none
  badfree.realloc    realloc(p + 16) of a 64-byte block, which glibc aborts
                     inside realloc before the hook records anything: the
                     entry is an invalid realloc() with the realloc's stack
                     (the abort's handler writes its free half), the block
                     of 64 bytes 16 bytes before and its allocation stack,
                     as memcheck's error says; status 134 as without the agent
  badfree.exitcode   --error-exitcode 9: 9 for a double free (which
                     glibc aborts) and for a mismatched delete, the
                     section on stderr; the clean run keeps 0
  badfree.fork       a fork child freeing its parent's block
                     (tests/programs/fork_free_parent.c): no bad free in either trace,
                     the child's free counted as before the trace
"""

import re

from harness import (PROGS, heaptrail_run, memcheck, need_report, need_tools, run, tail,
                     text)

PROG = PROGS / "bad_free"
MODES = ["double", "middle", "never", "new_array", "free_new"]
KIND = {"double": "double", "middle": "invalid", "never": "invalid",
        "new_array": "mismatched", "free_new": "mismatched"}

FRAME_RE = re.compile(r"==\d+==\s+(?:at|by) 0x[0-9A-Fa-f]+: (.*?) \(")


def ours(names):
    """The program's own frames of a stack (the tools name the allocator's
    own frames differently)."""
    return [n for n in names if n and (n.startswith("bf_") or n == "main")]


def memcheck_error(log):
    """The first Invalid/Mismatched free error of a memcheck log: (title,
    [stacks], offset, size, "free'd"/"alloc'd"/None)."""
    lines = log.splitlines()
    for i, l in enumerate(lines):
        if "Invalid free()" in l or "Mismatched free()" in l:
            title = "mismatched" if "Mismatched" in l else "invalid"
            stacks, cur, off, size, state = [], [], None, None, None
            for l2 in lines[i + 1:]:
                m = FRAME_RE.search(l2)
                if m:
                    cur.append(m.group(1))
                    continue
                a = re.search(r"Address 0x[0-9a-f]+ is (\d+) bytes inside a block of size (\d+) "
                              r"(free'd|alloc'd)", l2)
                if a:
                    off, size, state = int(a.group(1)), int(a.group(2)), a.group(3)
                    stacks.append(cur)
                    cur = []
                elif "Block was alloc'd at" in l2:
                    stacks.append(cur)
                    cur = []
                elif re.match(r"==\d+==\s*$", l2) or "Address" in l2:
                    break
            stacks.append(cur)
            return title, [ours(s) for s in stacks], off, size, state
    return None


def fnames(stack):
    return ours([f.get("function") for f in (stack or [])])


def t_memcheck(t):
    need_tools(t)
    for mode in MODES:
        plain = run([PROG, mode], 60)
        tr = heaptrail_run([PROG, mode], ["--free-stacks"], timeout=60)
        if tr.proc.timed_out:
            t.fatal("%s: heaptrail run timed out" % mode)
        t.eq("%s: heaptrail run's status, the program's own" % mode, plain.rc, tr.proc.rc)
        t.eq("%s: glibc's abort message still printed" % mode,
             b"free(): " in plain.err, b"free(): " in tr.proc.err)
        rep = need_report(t, tr.out_path).data
        bad = rep.get("invalid_frees") or {}
        t.eq("%s: bad frees" % mode, 1, bad.get("count"))
        t.eq("%s: %s counted" % (mode, KIND[mode]), 1, bad.get(KIND[mode]))
        if not bad.get("frees"):
            continue
        x = bad["frees"][0]
        t.eq("%s: kind" % mode, KIND[mode], x.get("kind"))
        t.eq("%s: the allocator aborted in it" % mode, plain.rc != 0, x.get("aborted"))
        proc, res = memcheck(("badfree", mode), [str(PROG), mode])
        errs = [memcheck_error(r.log) for r in res.values()]
        errs = [e for e in errs if e]
        if len(errs) != 1:
            t.check(False, "%s: memcheck reported %d bad frees: %s" % (mode, len(errs),
                                                                       tail(proc.err)))
            continue
        title, stacks, off, size, state = errs[0]
        t.eq("%s: memcheck's error kind" % mode, title,
             "mismatched" if x.get("kind") == "mismatched" else "invalid")
        t.eq("%s: the bad free's stack" % mode, stacks[0], fnames(x.get("stack")))
        blk = x.get("block")
        if size is None:
            t.eq("%s: no block at the address" % mode, None, blk)
            continue
        if not blk:
            t.check(False, "%s: no block; memcheck: %d bytes inside %d" % (mode, off, size))
            continue
        t.eq("%s: block size" % mode, size, blk.get("size"))
        t.eq("%s: offset into the block" % mode, off, x.get("address") - blk.get("address"))
        if state == "free'd":
            t.eq("%s: the first free's stack" % mode, stacks[1],
                 fnames((blk.get("first_free") or {}).get("stack")))
            t.eq("%s: the allocation stack" % mode, stacks[2], fnames(blk.get("stack")))
        else:
            t.eq("%s: the allocation stack" % mode, stacks[1], fnames(blk.get("stack")))
        # without --free-stacks: the abort's handler still names the free
        tr2 = heaptrail_run([PROG, mode], timeout=60)
        rep2 = need_report(t, tr2.out_path).data
        x2 = ((rep2.get("invalid_frees") or {}).get("frees") or [{}])[0]
        t.eq("%s: the bad free's stack without --free-stacks" % mode,
             stacks[0] if plain.rc != 0 else [], fnames(x2.get("stack")))
        t.eq("%s: kind without --free-stacks" % mode, KIND[mode], x2.get("kind"))


def t_realloc(t):
    need_tools(t)
    mode = "realloc_middle"
    plain = run([PROG, mode], 60)
    t.eq("without the agent glibc aborts", 134, plain.rc)
    tr = heaptrail_run([PROG, mode], timeout=60)
    if tr.proc.timed_out:
        t.fatal("heaptrail run timed out")
    t.eq("heaptrail run's status, the program's own", plain.rc, tr.proc.rc)
    t.check(b"realloc(): invalid pointer" in tr.proc.err, "glibc's message: %s" % tail(tr.proc.err))
    rep = need_report(t, tr.out_path).data
    bad = rep.get("invalid_frees") or {}
    t.eq("bad frees", 1, bad.get("count"))
    x = (bad.get("frees") or [{}])[0]
    t.eq("kind", "invalid", x.get("kind"))
    t.eq("function", "realloc", x.get("function"))
    t.eq("aborted", True, x.get("aborted"))
    t.eq("the realloc's stack", ["bf_realloc_middle", "main"], fnames(x.get("stack")))
    blk = x.get("block") or {}
    t.eq("block size", 64, blk.get("size"))
    t.eq("offset into the block", 16, (x.get("address") or 0) - (blk.get("address") or 0))
    t.eq("allocation stack", ["bf_alloc_block", "main"], fnames(blk.get("stack")))
    proc, res = memcheck(("badfree", mode), [str(PROG), mode])
    errs = [e for e in (memcheck_error(r.log) for r in res.values()) if e]
    if len(errs) != 1:
        t.check(False, "memcheck reported %d bad frees: %s" % (len(errs), tail(proc.err)))
        return
    title, stacks, off, size, state = errs[0]
    t.eq("memcheck's kind", "invalid", title)
    t.eq("memcheck's stack of the realloc", stacks[0], fnames(x.get("stack")))
    t.eq("memcheck's block: offset, size", (off, size), (16, 64))
    t.eq("memcheck's allocation stack", stacks[1], fnames(blk.get("stack")))


def t_exitcode(t):
    need_tools(t)
    for mode, want in (("double", 9), ("new_array", 9), ("ok", 0)):
        tr = heaptrail_run([PROG, mode], ["--error-exitcode", "9"], timeout=60)
        t.eq("%s: status with --error-exitcode 9" % mode, want, tr.proc.rc)
        t.eq("%s: INVALID FREES on stderr" % mode, want != 0,
             "INVALID FREES" in text(tr.proc.err))
    tr = heaptrail_run([PROG, "ok"], ["--error-exitcode", "9", "--summary"], timeout=60)
    t.eq("--error-exitcode with --summary: usage error", 2, tr.proc.rc)


def t_fork(t):
    need_tools(t)
    tr = heaptrail_run([PROGS / "fork_free_parent"], ["--error-exitcode", "9"], timeout=60)
    t.eq("fork: status with --error-exitcode 9", 0, tr.proc.rc)
    files = tr.listed()
    t.eq("fork: traces", 2, len(files))
    before = 0
    for f in files:
        rep = need_report(t, f).data
        bad = rep.get("invalid_frees") or {}
        t.eq("%s: bad frees" % f.name, 0, bad.get("count"))
        before += bad.get("before_trace") or 0
    t.eq("fork: the child's free of its parent's block, told apart", 1, before)


TESTS = [
    ("badfree.memcheck", t_memcheck),
    ("badfree.realloc", t_realloc),
    ("badfree.exitcode", t_exitcode),
    ("badfree.fork", t_fork),
]
