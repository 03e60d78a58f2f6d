"""test_hostile.py - traces and inputs made to hurt the reader: module paths
that name a FIFO (directly, or as the .gnu_debuglink file libdw looks for
beside the module), a zstd bomb, suppressions files that never end. Each
must end quickly, with a clear message, and keep what is readable."""

import os
import shutil
import sys

import tracefile
from harness import HT, PROGS, heaptrail_run, need_tools, report, run, tail, text

TIMEOUT = 60  # a hang is a failure, not a stuck suite
EXIT3 = {"allocations": 3, "frees": 2, "bytes_allocated": 60, "leaked_blocks": 1, "leaked_bytes": 30}


def exit3_trace(t):
    tr = heaptrail_run([PROGS / "exit3"], outdir=t.tmp)
    t.need(tr.proc.rc == 3, "exit3 under heaptrail: %s: %s" % (tr.proc.describe(), tail(tr.proc.err)))
    return tr.out_path


def module_path_swapped(payload, old, new):
    """A MODULE payload with its path new if it is old; None if not."""
    q = 0
    for _ in range(3):  # id, time, load bias
        _, q = tracefile._varint(payload, q)
    n, p = tracefile._varint(payload, q)
    if payload[p:p + n] != old:
        return None
    return payload[:q] + tracefile.varint(len(new)) + new + payload[p + n:]


def with_main_module(t, src, new_path, out):
    """src (exit3's trace) rewritten raw with its executable's MODULE path
    new_path."""
    old = os.path.realpath(PROGS / "exit3").encode()  # as the agent saw it
    recs, swapped = [], 0
    for tag, payload in tracefile.records(src):
        if tag == tracefile.REC_MODULE:
            p = module_path_swapped(payload, old, str(new_path).encode())
            if p is not None:
                payload, swapped = p, swapped + 1
        recs.append((tag, payload))
    t.need(swapped >= 1, "exit3's trace has no MODULE record for %s" % old.decode())
    tracefile.write(out, recs)
    return out


def commands_finish(t, path, what, expect_in_err=None):
    """report (text and JSON), leaks and convert on path: each ends within
    TIMEOUT, exits 0, and the JSON report has exit3's figures."""
    for args in (["report"], ["report", "--format", "json"], ["leaks"],
                 ["convert", "--format", "folded"]):
        p = run([HT] + args + [path], TIMEOUT)
        if not t.check(not p.timed_out, "%s: `heaptrail %s` still running after %ss (blocked)" % (
                what, " ".join(args), TIMEOUT)):
            continue
        t.check(p.rc == 0, "%s: %s: %s" % (what, p.describe(), tail(p.err)))
        if expect_in_err and args == ["report"]:
            t.check(expect_in_err in text(p.err), "%s: stderr lacks %r: %s" % (
                what, expect_in_err, tail(p.err)))
    r = report(path)
    if t.check(not r.err, "%s: %s" % (what, r.err)) and r.data:
        tot = r.data.get("totals", {})
        t.eq("%s: totals" % what, EXIT3, {k: tot.get(k) for k in EXIT3})


def t_fifo_module(t):
    """The executable's MODULE names a FIFO nobody writes: a plain open
    would wait forever."""
    need_tools(t)
    src = exit3_trace(t)
    fifo = t.tmp / "fifo"
    os.mkfifo(fifo)
    out = with_main_module(t, src, fifo, t.tmp / "fifo_module.ht")
    commands_finish(t, out, "module path a FIFO", "not a regular file")
    # a device: readable without end
    out = with_main_module(t, src, "/dev/zero", t.tmp / "dev_module.ht")
    commands_finish(t, out, "module path /dev/zero", "not a regular file")


def t_fifo_debuglink(t):
    """The module is a regular file (exit3 without its DWARF, same
    build-id), but the .gnu_debuglink file libdw then opens beside it is
    a FIFO: libdw's own open must not wait on it either."""
    need_tools(t)
    objcopy, strip = shutil.which("objcopy"), shutil.which("strip")
    if not objcopy or not strip:
        t.skip("objcopy or strip not installed (binutils)")
    src = exit3_trace(t)
    d = t.tmp / "lib"
    d.mkdir()
    copy, debug = d / "exit3", d / "exit3.debug"
    for cmd in ([objcopy, "--only-keep-debug", PROGS / "exit3", debug],
                [strip, "--strip-debug", "-o", copy, PROGS / "exit3"],
                [objcopy, "--add-gnu-debuglink=%s" % debug, copy]):
        p = run(cmd, 60, cwd=d)
        t.need(p.rc == 0, "%s: %s" % (p.describe(), tail(p.err)))
    os.unlink(debug)
    os.mkfifo(debug)
    out = with_main_module(t, src, copy, t.tmp / "debuglink.ht")
    commands_finish(t, out, "debuglink a FIFO")
    # the symbol table still names main
    p = run([HT, "report", out], TIMEOUT)
    t.check(not p.timed_out and "main" in text(p.out),
            "debuglink a FIFO: report does not name main: %s" % tail(p.out))


MAXRSS = ("import resource, subprocess, sys\n"
          "p = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[1], 'wb'))\n"
          "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
          "sys.exit(p.returncode)\n")


def t_zstd_bomb(t):
    """exit3's trace, then a zstd frame of 4 GiB of zeros in 131 KB (RLE
    blocks): records of an unknown tag, two bytes each. The report ends
    within seconds, with exit3's figures, a message naming the cut, and
    a peak RSS far below the body's size."""
    need_tools(t)
    src = exit3_trace(t)
    bomb = t.tmp / "bomb.ht"
    tracefile.zstd_bomb(bomb, src, 4 << 30)
    t.check(os.path.getsize(bomb) < 200 << 10, "the bomb is %d bytes" % os.path.getsize(bomb))
    err = t.tmp / "bomb.err"
    env = dict(os.environ, HEAPTRAIL_READER_RESIDENT_MB="64")
    # the plain CLI: ASan's shadow memory would blur the figure
    p = run([sys.executable, "-c", MAXRSS, err, HT, "report", "--format", "json", bomb], TIMEOUT,
            env=env)
    t.need(not p.timed_out, "report of a zstd bomb still running after %ss" % TIMEOUT)
    msg = err.read_text(errors="replace")
    t.check(p.rc == 0, "report of a zstd bomb: %s: %s" % (p.describe(), msg[-600:]))
    t.check("corrupt or hostile" in msg, "no message naming the cut: %s" % msg[-600:])
    rss_kb = int(text(p.out).strip() or 0)
    t.check(0 < rss_kb < 256 << 10, "peak RSS of the report: %d KiB (a 4 GiB body)" % rss_kb)
    t.check(p.secs < 30, "report of a zstd bomb took %.1f s" % p.secs)
    r = report(bomb)
    if t.check(not r.err, r.err or "") and r.data:
        tot = r.data.get("totals", {})
        t.eq("zstd bomb: exit3's totals", EXIT3, {k: tot.get(k) for k in EXIT3})


def t_suppressions_not_regular(t):
    """--suppressions of /dev/zero, a FIFO, a file past the bound: refused
    at once, saying why."""
    need_tools(t)
    src = exit3_trace(t)
    fifo = t.tmp / "supp.fifo"
    os.mkfifo(fifo)
    big = t.tmp / "big.supp"
    with open(big, "wb") as f:
        f.truncate(17 << 20)
    for path, why in (("/dev/zero", "not a regular file"), (fifo, "not a regular file"),
                      (big, "larger than 16 MiB")):
        for cmd in ("leaks", "report"):
            p = run([HT, cmd, "--suppressions", path, src], 20)
            if not t.check(not p.timed_out, "%s --suppressions %s: still running" % (cmd, path)):
                continue
            t.check(p.rc == 1 and why in text(p.err) and p.secs < 5,
                    "%s --suppressions %s: expected exit 1 at once saying %r, got %s after"
                    " %.1f s: %s" % (cmd, path, why, p.rc, p.secs, tail(p.err)))


TESTS = [
    ("trace.hostile_fifo_module", t_fifo_module),
    ("trace.hostile_fifo_debuglink", t_fifo_debuglink),
    ("trace.hostile_zstd_bomb", t_zstd_bomb),
    ("cli.hostile_suppressions", t_suppressions_not_regular),
]
