"""test_resources.py - the descriptor and handle leaks, end to end.

tests/programs/resources.c makes descriptors with every tracked call from
named functions, closes some (close, fclose, dup2 over one, freopen), leaks
17 and prints "leak FUNCTION FD" for each, so the numbers of each run are
known; it also acquires and releases handles of two kinds (its header
comment lists the outcome).

  resources.fds       the JSON's fd_leaks: exactly the printed descriptors,
                      each with its call and its opening function as the
                      stack's leaf (main below it)
  resources.handles   handle_leaks: held, acquired, released per kind, and
                      the count per acquiring function
  resources.text      the RESOURCE LEAKS section says the same
  resources.valgrind  valgrind --track-fds=yes on the same program: the
                      same leaked descriptors (its run's numbers) from the
                      same functions (fdopen: valgrind names the pipe2
                      caller, heaptrail the FILE's; see resources.c)
  resources.fork_exec the program forks, the child closes one inherited
                      descriptor, opens one, execs exec_target: the parent's
                      trace is unchanged, the child's lists only its own
                      descriptor, the exec'd image's none (inherited)
  resources.close_range  close_range and closefrom close descriptors made
                      for them (recorded from /proc/self/fd); with
                      CLOSE_RANGE_CLOEXEC nothing is closed
  resources.vfork     a vfork child (on the parent's memory) closes one of
                      the parent's leaked descriptors and opens one: the
                      parent's trace shows neither
  resources.threads   4 threads open and close 2000 descriptors each while
                      numbers pass between them, and leak one each: exactly
                      those 4, and 8004 opened, 8000 closed (a close stamped
                      after another thread's open of its number breaks both)
  resources.none      a program without descriptors of its own: empty
                      members
  resources.handles_released  kinds with nothing held (all released, or
                      only released) are not listed, in JSON or text
  resources.stripped  a stripped program's descriptor stacks name
                      module+offset, not the run's addresses
"""

import os
import re
import shutil

from harness import (PROGS, VALGRIND, heaptrail_run, need_tools, report, run, tail, text,
                     memo, scratch_dir)

TIMEOUT = 60
PROG = "resources"

# function -> call (HT_FDCALL_* name), by construction
CALLS = {
    "leak_open": "open", "leak_open64": "open", "leak_open_2": "open", "leak_openat": "open", "leak_creat": "open",
    "leak_socket": "socket", "leak_pipe": "pipe", "leak_socketpair": "socket",
    "leak_accept": "accept", "leak_dup": "dup", "leak_dup2": "dup", "leak_dup3": "dup",
    "leak_fcntl": "dup", "leak_fopen": "fopen", "leak_fdopen": "fopen",
    "leak_freopen": "fopen",
}
# kind -> (held, acquired, released, {acquiring function: held count})
HANDLES = {
    "channel": (3, 4, 1, {"open_channel": 2, "open_channel_again": 1}),
    "job": (2, 5, 3, {"start_job": 2}),
}
# valgrind names where the descriptor was made; heaptrail where the FILE was
VG_NAMES = {"leak_fdopen": "make_pipe2_for_stream"}


def printed(out):
    """{fd: function} from the program's "leak FUNCTION FD" lines."""
    res = {}
    for m in re.finditer(r"^leak (\w+) (\d+)$", text(out), re.M):
        res[int(m.group(2))] = m.group(1)
    return res


def traced(t, args=(), key="plain"):
    """(Traced, JSON report) of the program run under heaptrail; memoised."""
    need_tools(t)
    p = PROGS / PROG
    t.need(p.exists(), "%s not built (make programs)" % p)

    def go():
        tr = heaptrail_run([p] + list(args), timeout=TIMEOUT)
        if tr.proc.timed_out or not tr.out_path.exists():
            return tr, None, "heaptrail run failed: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        if tr.proc.rc != 0:
            return tr, None, "%s exited %s: %s" % (PROG, tr.proc.rc, tail(tr.proc.err))
        rep = report(tr.out_path, "json")
        if rep.err:
            return tr, None, rep.err
        if rep.proc.rc != 0:
            return tr, None, "report exited %s: %s" % (rep.proc.rc, tail(rep.proc.err))
        return tr, rep.data, None
    tr, data, err = memo(("resources", key), go)
    if err:
        t.fatal(err)
    return tr, data


def fd_table(rep):
    """{fd: (call, leaf function, caller)} from a JSON report's fd_leaks."""
    res = {}
    for g in rep.get("fd_leaks", []):
        st = g.get("stack") or []
        fns = [f.get("function") for f in st[:2]] + [None, None]
        for fd in g.get("fds", []):
            res[fd] = (g.get("call"), fns[0], fns[1])
    return res


def t_fds(t):
    tr, rep = traced(t)
    want = printed(tr.proc.out)
    t.eq("descriptors the program says it leaked", 17, len(want))
    got = fd_table(rep)
    t.eq("leaked descriptors", sorted(want), sorted(got))
    for fd, fn in sorted(want.items()):
        if fd in got:
            t.eq("fd %d (call, function, caller)" % fd, (CALLS[fn], fn, "main"), got[fd])
    # grouped by stack: leak_pipe's two ends are one group
    pipes = [g for g in rep.get("fd_leaks", []) if g.get("call") == "pipe"]
    t.eq("pipe groups (count, fds)", [(2, sorted(fd for fd, f in want.items() if f == "leak_pipe"))],
         [(g.get("count"), g.get("fds")) for g in pipes])
    t.eq("groups", 16, len(rep.get("fd_leaks", [])))


def t_handles(t):
    _, rep = traced(t)
    got = {}
    for k in rep.get("handle_leaks", []):
        per = {}
        for s in k.get("stacks", []):
            st = s.get("stack") or [{}]
            per[st[0].get("function")] = per.get(st[0].get("function"), 0) + s.get("count", 0)
            t.eq("caller of %s's acquire" % st[0].get("function"), "main",
                 st[1].get("function") if len(st) > 1 else None)
        got[k.get("kind")] = (k.get("held"), k.get("acquired"), k.get("released"), per)
    t.eq("handle_leaks", HANDLES, got)


def section(out, title):
    lines = out.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith(title + " ---"):
            j = i + 1
            while j < len(lines) and not re.match(r"^[A-Z][A-Z ]+ -{3}", lines[j]):
                j += 1
            return lines[i + 1:j]
    return None


def t_text(t):
    tr, _ = traced(t)
    r = report(tr.out_path, "text")
    t.need(not r.err and r.proc.rc == 0, "text report failed: %s" % (r.err or tail(r.proc.err)))
    body = section(text(r.proc.out), "RESOURCE LEAKS")
    t.need(body is not None, "no RESOURCE LEAKS section in the text report")
    want = printed(tr.proc.out)
    # by construction (resources.c): 32 made, 15 closed
    t.check(re.search(r"descriptors still open at exit: 17 \(32 opened, 15 closed;", body[0]),
            "headline: %r" % body[0])
    got = {}
    for i, ln in enumerate(body):
        m = re.match(r"  (\d+) descriptors? from (\w+): fds? ([\d, ]+)$", ln)
        if m:
            leaf = body[i + 1].split()[0] if i + 1 < len(body) else None
            fds = [int(x) for x in m.group(3).split(", ")]
            t.eq("count of %s" % ln, int(m.group(1)), len(fds))
            for fd in fds:
                got[fd] = (m.group(2), leaf)
    t.eq("descriptors in the text", {fd: (CALLS[fn], fn) for fd, fn in want.items()}, got)
    t.check(any("handles still held at exit: 5 (channel 3, job 2)" in ln for ln in body),
            "no per-kind handle line in %r" % body)
    held = {}
    for i, ln in enumerate(body):
        m = re.match(r"  (\d+) handles? of kind (\w+) still held \(of (\d+) acquired, (\d+) released\)$", ln)
        if m:
            held[(m.group(2), body[i + 1].split()[0])] = int(m.group(1))
    t.eq("handles in the text", {("channel", "open_channel"): 2, ("channel", "open_channel_again"): 1,
                                 ("job", "start_job"): 2}, held)


def vg_fds(log):
    """{fd: first function of resources.c in its stack} of valgrind's
    --track-fds report, inherited descriptors left out."""
    res = {}
    for blk in re.split(r"==\d+== Open ", log)[1:]:
        m = re.match(r"(?:file descriptor|AF_\w+ socket) (\d+)", blk)
        if not m or "<inherited from parent>" in blk:
            continue
        fn = re.search(r"(?:at|by) 0x[0-9A-F]+: (\w+) \(resources\.c:\d+\)", blk)
        res[int(m.group(1))] = fn.group(1) if fn else None
    return res


def t_valgrind(t):
    tr, rep = traced(t)
    p = PROGS / PROG

    def go():
        d = scratch_dir("vgfd")
        proc = run([VALGRIND, "--tool=none", "--track-fds=yes", "--log-file=%s/vg.log" % d, p],
                   180)
        log = (d / "vg.log").read_text(errors="replace") if (d / "vg.log").exists() else ""
        return proc, log
    proc, log = memo(("resources-vg",), go)
    t.need(proc.rc == 0 and "FILE DESCRIPTORS" in log,
           "valgrind --track-fds failed: %s: %s" % (proc.describe(), tail(log or proc.err)))
    vg = vg_fds(log)
    mine = printed(proc.out)
    t.eq("valgrind's descriptors = what the program printed under valgrind", sorted(mine), sorted(vg))
    t.eq("valgrind's opening functions",
         {fd: VG_NAMES.get(fn, fn) for fd, fn in mine.items()}, vg)
    # heaptrail's run: same descriptors (its own numbers), same functions
    ht = {fd: v[1] for fd, v in fd_table(rep).items()}
    ours = printed(tr.proc.out)
    t.eq("heaptrail and valgrind, functions of the leaked descriptors",
         sorted(VG_NAMES.get(f, f) for f in vg.values()),
         sorted(VG_NAMES.get(f, f) for f in ht.values()))
    # the n-th leak of each run is the same function in both
    t.eq("functions in the order the two runs printed them",
         list(mine.values()), list(ours.values()))


def t_fork_exec(t):
    target = PROGS / "exec_target"
    t.need(target.exists(), "%s not built" % target)
    tr, rep = traced(t, ("fork", target, "from-exec"), key="fork")
    files = [f for f in tr.files() if f != tr.out_path]
    # the child's descriptor may reuse the number of the one it closed
    lines = [(m.group(1), int(m.group(2)))
             for m in re.finditer(r"^leak (\w+) (\d+)$", text(tr.proc.out), re.M)]
    child_fd = [fd for fn, fd in lines if fn == "child_open"]
    t.eq("child_open lines", 1, len(child_fd))
    parent = {fd: v[1] for fd, v in fd_table(rep).items()}
    t.eq("parent's leaks (the child's close changes nothing)",
         sorted((fd, fn) for fn, fd in lines if fn != "child_open"), sorted(parent.items()))
    t.eq("handles of the parent", 5, sum(k.get("held", 0) for k in rep.get("handle_leaks", [])))
    reps = []
    for f in files:
        r = report(f, "json")
        t.need(not r.err and r.proc.rc == 0, "report of %s failed: %s" % (f, r.err or tail(r.proc.err)))
        reps.append(r.data)
    forked = [r for r in reps if r["program"].get("forked") and r["program"].get("ending") == "exec"]
    execd = [r for r in reps if r["program"].get("ending") == "exit" and not r["program"].get("forked")]
    t.need(len(forked) == 1 and len(execd) == 1,
           "expected a forked child's trace ending in exec and the exec'd image's: %r" %
           [(r["program"].get("forked"), r["program"].get("ending")) for r in reps])
    t.eq("child's leaks: its own descriptor only", {child_fd[0]: ("open", "child_open", "main")},
         fd_table(forked[0]))
    t.eq("child's handles (none acquired there)", [], forked[0].get("handle_leaks"))
    t.eq("exec'd image's leaks (all inherited)", [], execd[0].get("fd_leaks"))


def t_vfork(t):
    tr, rep = traced(t, ("vfork",), key="vfork")
    want = printed(tr.proc.out)
    t.eq("leaked descriptors after a vfork child closed one and opened one",
         {fd: (CALLS[fn], fn, "main") for fd, fn in want.items()}, fd_table(rep))


def t_close_range(t):
    tr, rep = traced(t, ("range",), key="range")
    want = printed(tr.proc.out)
    t.eq("range_open's descriptor kept by close_range(CLOSE_RANGE_CLOEXEC)", "range_open",
         want.get(310))
    calls = dict(CALLS, range_open="dup")
    t.eq("leaked descriptors after close_range and closefrom",
         {fd: (calls[fn], fn, "main") for fd, fn in want.items()}, fd_table(rep))


def t_threads(t):
    need_tools(t)
    p = PROGS / "resources_threads"
    t.need(p.exists(), "%s not built" % p)
    tr = heaptrail_run([p], timeout=TIMEOUT)
    t.need(tr.proc.rc == 0 and tr.out_path.exists(), "run failed: %s: %s" % (
        tr.proc.describe(), tail(tr.proc.err)))
    want = printed(tr.proc.out)
    t.eq("descriptors the program leaked", 4, len(want))
    r = report(tr.out_path, "json")
    t.need(not r.err, r.err or "")
    t.eq("fd_leaks", {fd: ("open", "thread_leak") for fd in want},
         {fd: v[:2] for fd, v in fd_table(r.data).items()})
    r = report(tr.out_path, "text")
    t.need(not r.err, r.err or "")
    body = section(text(r.proc.out), "RESOURCE LEAKS") or [""]
    t.check("still open at exit: 4 (8004 opened, 8000 closed;" in body[0], "headline: %r" % body[0])


def t_none(t):
    need_tools(t)
    p = PROGS / "leaks"
    t.need(p.exists(), "%s not built" % p)
    tr = heaptrail_run([p], timeout=TIMEOUT)
    t.need(tr.out_path.exists(), "no trace: %s" % tail(tr.proc.err))
    r = report(tr.out_path, "json")
    t.need(not r.err, r.err or "")
    t.eq("fd_leaks", [], r.data.get("fd_leaks"))
    t.eq("handle_leaks", [], r.data.get("handle_leaks"))


def t_handles_released(t):
    """handle_leaks listed every kind seen, also one with nothing held and one
    only ever released; the text said "handles still held at exit: 0 (...)"."""
    need_tools(t)
    p = PROGS / "handles_released"
    t.need(p.exists(), "%s not built" % p)
    for args, want, line in (
            ([], [("lease", 1, 2, 1)], "handles still held at exit: 1 (lease 1)"),
            (["none"], [], None)):
        tr = heaptrail_run([p] + args, timeout=TIMEOUT)
        t.need(tr.proc.rc == 0 and tr.out_path.exists(), "run failed: %s: %s" % (
            tr.proc.describe(), tail(tr.proc.err)))
        r = report(tr.out_path, "json")
        t.need(not r.err, r.err or "")
        t.eq("handle_leaks of %r (kind, held, acquired, released)" % args, want,
             [(k.get("kind"), k.get("held"), k.get("acquired"), k.get("released"))
              for k in r.data.get("handle_leaks", [])])
        r = report(tr.out_path, "text")
        t.need(not r.err, r.err or "")
        body = section(text(r.proc.out), "RESOURCE LEAKS") or []
        got = [ln.strip() for ln in body if "handles still held" in ln]
        t.eq("handle line of %r" % args, [line] if line else [], got)


def t_stripped(t):
    """A stripped program's descriptor stacks name module+offset, as its
    heap stacks do (what addr2line takes), not the run's address."""
    need_tools(t)
    outdir = scratch_dir("stripped")
    p = outdir / "resources_stripped"
    shutil.copy(PROGS / PROG, p)
    r = run(["strip", p], TIMEOUT)
    t.need(r.rc == 0, "strip failed: %s" % tail(r.err))
    tr = heaptrail_run([p], outdir=outdir, timeout=TIMEOUT)
    t.need(tr.proc.rc == 0 and tr.out_path.exists(), "run failed: %s" % tail(tr.proc.err))
    rep = report(tr.out_path, "text")
    t.need(not rep.err, rep.err or "")
    body = section(text(rep.proc.out), "RESOURCE LEAKS") or []
    offsets = [int(m.group(1), 16) for ln in body
               for m in [re.search(r"in \S*resources_stripped\+0x([0-9a-f]+)", ln)] if m]
    t.check(offsets, "no frame in the stripped program: %r" % body[:12])
    size = os.path.getsize(p)
    t.check(all(o < size for o in offsets),
            "offsets past the file's size (%d): %s" % (size, [hex(o) for o in offsets]))


TESTS = [
    ("resources.fds", t_fds),
    ("resources.stripped", t_stripped),
    ("resources.handles", t_handles),
    ("resources.text", t_text),
    ("resources.valgrind", t_valgrind),
    ("resources.fork_exec", t_fork_exec),
    ("resources.close_range", t_close_range),
    ("resources.vfork", t_vfork),
    ("resources.threads", t_threads),
    ("resources.none", t_none),
    ("resources.handles_released", t_handles_released),
]
