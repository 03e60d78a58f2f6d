"""test_cli.py - the command line and the trace file's safety: bad options,
truncated / garbage traces, file mode, no clobbering, no symlink following."""

import os
import random
import re
import signal
import subprocess
import time

import contract
import tracefile
from harness import (AGENT, HT, PROGS, ROOT, T, heaptrail_run, need_report, need_tools, report,
                     report_cli, run, tail, text, traced_report)

TOT = ("allocations", "frees", "bytes_allocated", "leaked_blocks", "leaked_bytes")
EXIT3 = {"allocations": 3, "frees": 2, "bytes_allocated": 60, "leaked_blocks": 1, "leaked_bytes": 30}


def prog(name):
    return str(PROGS / name)


def usage_case(t, argv, what, marker=None):
    p = run([HT] + argv, 30)
    t.eq("%s: exit status of `heaptrail %s`" % (what, " ".join(argv)), 2, p.rc)
    t.check(re.search(r"usage", text(p.err) + text(p.out), re.I),
            "%s: no usage message; stderr: %s" % (what, tail(p.err, 300)))
    if marker is not None:
        t.check(not os.path.exists(marker), "%s: the program ran anyway" % what)


def t_bad_options(t):
    need_tools(t)
    ran = t.tmp / "ran"
    usage_case(t, [], "no arguments")
    usage_case(t, ["frobnicate"], "unknown command")
    usage_case(t, ["run", "--no-such-option", "--", "/usr/bin/touch", str(ran)], "run, unknown option", ran)
    usage_case(t, ["run", "--depth", "0", "--", "/usr/bin/touch", str(ran)], "run --depth 0", ran)
    usage_case(t, ["run", "--depth", "many", "--", "/usr/bin/touch", str(ran)], "run --depth many", ran)
    usage_case(t, ["run"], "run without a program")
    usage_case(t, ["run", "-o"], "run -o without a value")
    usage_case(t, ["report"], "report without a file")
    usage_case(t, ["report", "--no-such-option", str(t.tmp / "x.ht")], "report, unknown option")
    usage_case(t, ["report", "--format", "xml", str(t.tmp / "x.ht")], "report --format xml")
    usage_case(t, ["report", "--top", "lots", str(t.tmp / "x.ht")], "report --top lots")
    # options a format has no use for are refused, not silently ignored
    for fmt in ("pprof", "massif", "heaptrack", "events", "chrome"):
        usage_case(t, ["convert", "--format", fmt, "--cost", "peak", str(t.tmp / "x.ht")],
                   "convert --format %s --cost" % fmt)
    for fmt in ("folded", "pprof"):
        usage_case(t, ["convert", "--format", fmt, "--icicle", str(t.tmp / "x.ht")],
                   "convert --format %s --icicle" % fmt)
    # what the agent would refuse (and then run without), the CLI refuses first
    for v, what in (("99999999999999999999", "past 10^15"), ("4294967296.1", "thread past 2^32"),
                    ("+".join(str(i) for i in range(1, 18)), "17 numbers (16 at most)")):
        usage_case(t, ["run", "--break-alloc", v, "--", "/usr/bin/touch", str(ran)],
                   "run --break-alloc, %s" % what, ran)
    usage_case(t, ["run", "--no-leak-report", "--", "/usr/bin/touch", str(ran)],
               "run --no-leak-report without --leak-exitcode", ran)


def t_cannot_run(t):
    # a program heaptrail cannot start: the shell's statuses and words
    need_tools(t)
    plain = t.tmp / "plain.txt"
    plain.write_text("not a program\n")
    for argv, rc, words in (([str(t.tmp / "nonexistent")], 127, "No such file or directory"),
                            (["heaptrail-no-such-command"], 127, "command not found"),
                            ([str(plain)], 126, "Permission denied")):
        p = run([HT, "run", "-o", str(t.tmp / "x.ht"), "--"] + argv, 30)
        t.eq("heaptrail run %s: exit status" % argv[0], rc, p.rc)
        t.check(words in text(p.err), "heaptrail run %s: no %r: %s" % (argv[0], words, tail(p.err)))


def t_install(t):
    # make install DESTDIR=...: the whole tree, and the installed command
    # finds the installed agent by itself
    need_tools(t)
    root = t.tmp / "root"
    p = run(["make", "-s", "-C", str(ROOT), "install", "PREFIX=/usr/local", "DESTDIR=%s" % root], 300)
    t.need(p.rc == 0, "make install failed: %s" % tail(p.err))
    pre = root / "usr/local"
    for f in ("bin/heaptrail", "lib/heaptrail/libheaptrail.so", "include/heaptrail.h",
              "lib/pkgconfig/heaptrail.pc", "share/man/man1/heaptrail.1",
              "share/doc/heaptrail/JSON.md", "share/doc/heaptrail/AGENT_OPTIONS.md"):
        t.check((pre / f).is_file(), "make install did not install %s" % f)
    env = {k: v for k, v in os.environ.items() if k not in ("HEAPTRAIL_AGENT", "LD_PRELOAD")}
    out = t.tmp / "i.ht"
    p = run([str(pre / "bin/heaptrail"), "run", "-o", str(out), "--", str(prog("exit3"))], 60, env=env)
    t.eq("installed heaptrail run: the program's status", 3, p.rc)
    t.check(out.is_file(), "the installed heaptrail wrote no trace: %s" % tail(p.err))


def t_bad_agent_options(t):
    # HEAPTRAIL_OPTIONS values the agent cannot honour are named on stderr,
    # never taken silently: signals that cannot be caught, an empty path
    need_tools(t)
    env = dict(os.environ, LD_PRELOAD=str(AGENT),
               HEAPTRAIL_OPTIONS="output=%s,snapshot_signal=9,leak_signal=19,manifest=,summary_sites=5" %
               (t.tmp / "o.%p.ht"))
    p = run(["/usr/bin/true"], 30, env=env)
    t.eq("exit status of the program", 0, p.rc)
    for item in ("snapshot_signal=9", "leak_signal=19", "manifest="):
        t.check("ignoring bad option: %s\n" % item in text(p.err),
                "no word on %s: %s" % (item, tail(p.err, 300)))
    t.check("summary_sites without summary=1: ignored" in text(p.err),
            "no word on summary_sites without summary: %s" % tail(p.err, 300))


def full_trace(t, argv=("sampled",)):
    """An exact trace to cut, by default the sampled program's: 1.1 million
    events in three batches of blocks."""
    need_tools(t)
    tr, rep, err = traced_report(tuple(argv), [prog(argv[0])] + list(argv[1:]))
    if err:
        t.fatal("cannot make the trace to cut: " + err)
    return tr.out_path, rep.data


# A cut loses the batch it falls in (up to 32 blocks of events), so the trace
# cut in half must hold many batches: churn's 4 million events make nine.
MANY_BATCHES = ("churn", "2000000")


OFFSET_RE = re.compile(r"(offset|byte)\D{0,24}\d+", re.I)


def t_truncated(t):
    path, full = full_trace(t, MANY_BATCHES)
    data = path.read_bytes()
    batches, _ = tracefile.batch_counts(path)
    t.check(len(batches) >= 6, "the trace to cut holds %d batches, too few for its first half to hold "
            "a complete one" % len(batches))
    cut = t.tmp / "half.ht"
    cut.write_bytes(data[:len(data) // 2])
    r = report(cut)
    if r.err:
        t.fatal("half trace (%d of %d bytes): %s" % (len(data) // 2, len(data), r.err))
    err = text(r.proc.err)
    t.check(OFFSET_RE.search(err), "no warning naming an offset on stderr for a trace cut at %d bytes: %r"
            % (len(data) // 2, tail(err, 300)))
    tot = r.data.get("totals", {})
    ft = full.get("totals", {})
    t.check(isinstance(tot.get("allocations"), int) and tot["allocations"] < ft.get("allocations", 0),
            "half trace: allocations %r, full trace %r: expected fewer" % (tot.get("allocations"), ft.get("allocations")))
    t.check(isinstance(tot.get("allocations"), int) and tot["allocations"] > 0,
            "half trace reports no allocations at all (%r): events before the cut are lost" % tot.get("allocations"))
    for e in contract.check(r.data):
        t.check(False, "half trace: " + e)
    rt = report(cut, fmt="text")
    t.check(not rt.err, "text report of the half trace: %s" % rt.err)
    t.check(rt.proc.out.strip() != b"", "text report of the half trace prints nothing")
    t.check(OFFSET_RE.search(text(rt.proc.err) + text(rt.proc.out)),
            "text report of the half trace names no offset")


def t_truncated_tiny(t):
    """Cut right after the header and a little later: a report with a
    warning or a clear error, never a crash."""
    path, _ = full_trace(t)
    data = path.read_bytes()
    for n in (16, 17, 40, 100):
        cut = t.tmp / ("cut%d.ht" % n)
        cut.write_bytes(data[:n])
        r = report(cut)
        if r.err and r.proc.rc == 0:
            t.check(False, "cut at %d: %s" % (n, r.err))
            continue
        if r.proc.rc >= 128 or "Sanitizer" in text(r.proc.err) or "runtime error" in text(r.proc.err):
            t.check(False, "cut at %d: crash: %s: %s" % (n, r.proc.describe(), tail(r.proc.err, 800)))
            continue
        if n == 16:
            # Exactly the header: indistinguishable from a program that ended
            # before the agent wrote a record; a clear message is enough.
            t.check(r.proc.err.strip() or r.data is not None,
                    "cut at 16: neither a report nor a message (exit %s)" % r.proc.rc)
            continue
        t.check(OFFSET_RE.search(text(r.proc.err)),
                "cut at %d: no message naming an offset (exit %s): %r" % (n, r.proc.rc, tail(r.proc.err, 300)))


def t_garbage(t):
    need_tools(t)
    rnd = random.Random(1234)
    cases = {
        "random.ht": bytes(rnd.getrandbits(8) for _ in range(4096)),
        "text.ht": b"hello, this is not a trace\n" * 10,
        "empty.ht": b"",
        "magic_then_junk.ht": b"HEAPTRL\x1a" + bytes(rnd.getrandbits(8) for _ in range(600)),
        "future_major.ht": b"HEAPTRL\x1a" + bytes([99, 0, 0, 0, 0, 0, 0, 0]) + b"\x01\x00",
    }
    for name, data in cases.items():
        p = t.tmp / name
        p.write_bytes(data)
        r = report(p)
        err = text(r.proc.err)
        if r.proc.rc >= 128 or "Sanitizer" in err or "runtime error" in err or r.proc.timed_out:
            t.check(False, "%s: crash: %s: %s" % (name, r.proc.describe(), tail(err, 800)))
            continue
        if name in ("magic_then_junk.ht",):
            # A valid header: a (nearly empty) report with a warning, or an error.
            t.check(OFFSET_RE.search(err) or r.proc.rc != 0,
                    "%s: neither an error nor a warning naming an offset: %r" % (name, tail(err, 300)))
            continue
        t.check(r.proc.rc != 0, "%s: exit status 0 for a file that is not a trace" % name)
        t.check(err.strip() != "", "%s: no message on stderr" % name)
        t.check(name in err or "trace" in err.lower(),
                "%s: the message names neither the file nor a trace: %r" % (name, tail(err, 300)))
        if name == "future_major.ht":
            t.check(re.search(r"version|major|newer", err, re.I),
                    "future_major.ht: the message does not mention the version: %r" % tail(err, 300))
    r = report(t.tmp / "does-not-exist.ht")
    t.check(r.proc.rc not in (0,) and r.proc.rc < 128, "missing file: exit %s" % r.proc.rc)
    t.check("does-not-exist.ht" in text(r.proc.err), "missing file: message does not name it: %r" % tail(r.proc.err))


def t_corrupt_middle(t):
    """Flip bytes in the middle of a real trace: a report of what precedes,
    with a warning, or a clear error; never a crash or a hang."""
    path, full = full_trace(t)
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    for i in range(mid, min(mid + 64, len(data))):
        data[i] ^= 0x5A
    p = t.tmp / "flipped.ht"
    p.write_bytes(bytes(data))
    r = report(p)
    err = text(r.proc.err)
    t.check(not (r.proc.rc >= 128 or "Sanitizer" in err or "runtime error" in err or r.proc.timed_out),
            "crash: %s: %s" % (r.proc.describe(), tail(err, 800)))
    t.check(OFFSET_RE.search(err), "no message naming an offset: %r" % tail(err, 300))
    if r.data is not None:
        for e in contract.check(r.data):
            t.check(False, "flipped trace: " + e)


def t_flipped_bits(t):
    """Single flipped bits anywhere in the compressed body: each report
    either warns (the frame's checksum, or damage with an offset) or shows
    the untouched figures; none shows other figures in silence. Before
    the agent wrote checksums, one flip in ten changed the numbers with no
    word."""
    tr = heaptrail_run([prog("leaks")], outdir=t.tmp, out_name="small.ht")
    t.need(tr.out_path.exists(), "no trace: %s" % tail(tr.proc.err))
    data = tr.out_path.read_bytes()
    base = need_report(t, tr.out_path).data["totals"]
    rnd = random.Random(7)
    silent = []
    for i in range(40):
        off = rnd.randrange(16, len(data))
        d = bytearray(data)
        d[off] ^= 1 << rnd.randrange(8)
        p = t.tmp / ("flip%d.ht" % i)
        p.write_bytes(bytes(d))
        r = report(p)
        err = text(r.proc.err)
        t.check(not (r.proc.rc >= 128 or "Sanitizer" in err or "runtime error" in err or
                     r.proc.timed_out), "flip at %d: crash: %s: %s" % (off, r.proc.describe(),
                                                                     tail(err, 400)))
        if r.data is not None and not err.strip() and r.data.get("totals") != base:
            silent.append(off)
    t.eq("flips that changed the figures without a warning", [], silent)


def t_not_a_file(t):
    """A FIFO with no writer is refused at once (the open used to block for
    ever), as are /dev/null and a directory."""
    need_tools(t)
    fifo = t.tmp / "fifo.ht"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/null", t.tmp):
        r = run([HT, "report", path], 20)
        t.check(not r.timed_out, "report %s hangs" % path)
        t.check(r.rc == 1 and ("not a regular file" in text(r.err) or "directory" in text(r.err)),
                "report %s: %s: %s" % (path, r.describe(), tail(r.err)))


def t_no_overwrite_input(t):
    """convert -o naming its own input refuses (it used to replace the
    trace by the export); run --summary never writes over an existing
    FILE.json (it used to truncate it)."""
    tr0 = heaptrail_run([prog("leaks")], outdir=t.tmp, out_name="orig.ht")
    t.need(tr0.out_path.exists(), "no trace: %s" % tail(tr0.proc.err))
    path = tr0.out_path
    copy = t.tmp / "copy.ht"
    copy.write_bytes(path.read_bytes())
    r = run([HT, "convert", "--format", "folded", "-o", copy, copy], 60)
    t.eq("convert -o onto its input: exit status", 1, r.rc)
    t.eq("the trace is untouched", path.read_bytes(), copy.read_bytes())
    out = t.tmp / "s.ht"
    keep = t.tmp / "s.ht.json"
    keep.write_text("KEEP\n")
    tr = heaptrail_run([prog("leaks")], ("--summary",), outdir=t.tmp, out_name="s.ht")
    t.eq("an existing FILE.json is kept", "KEEP\n", keep.read_text())
    t.check((t.tmp / "s.ht.json.1").exists(), "no s.ht.json.1: %s" % tail(tr.proc.err))


def t_cannot_create(t):
    """-o into a directory that does not exist: refused before the program
    starts (status 2, the directory named). With a %p in the directory
    part, which only the process knows, the program runs, and heaptrail
    says why no trace was written (not a guessed static program)."""
    need_tools(t)
    out = t.tmp / "missing" / "x.ht"
    ran = t.tmp / "ran"
    r = run([HT, "run", "-o", out, "--", "/usr/bin/touch", ran], 60)
    err = text(r.err)
    t.eq("missing directory: exit status", 2, r.rc)
    t.check("%s: No such file or directory" % out.parent in err,
            "the directory not named: %s" % tail(err))
    t.check(not ran.exists(), "the program ran although its trace could not be created")
    out = t.tmp / "missing%p" / "x.ht"
    r = run([HT, "run", "-o", out, "--", prog("leaks")], 60)
    err = text(r.err)
    t.check(re.search(r"could not create %s\d+/x\.ht: No such file or directory"
                      % re.escape(str(t.tmp / "missing")), err),
            "no reason given: %s" % tail(err))
    t.check("statically linked" not in err, "a wrong guess: %s" % tail(err))


def t_mode(t):
    need_tools(t)
    for um in ("000", "022"):
        d = t.tmp / ("umask" + um)
        d.mkdir()
        out = d / "x.ht"
        p = run(["/bin/sh", "-c", 'umask %s; exec "$@"' % um, "sh", HT, "run", "-o", out, "--",
                 prog("exit3")], 60)
        t.eq("umask %s: exit status" % um, 3, p.rc)
        if t.check(out.exists(), "umask %s: no trace at %s: %s" % (um, out, tail(p.err))):
            t.eq("umask %s: trace file mode" % um, "0o600", oct(os.stat(out).st_mode & 0o777))


def new_traces(t, tr, exclude):
    """Traces the run produced (listed on stderr or new in its directory)."""
    found = [p for p in set(tr.listed()) | set(tr.files()) if p.resolve() not in exclude]
    good = []
    for p in found:
        if p.is_symlink():
            continue
        try:
            if p.read_bytes()[:8] == b"HEAPTRL\x1a":
                good.append(p)
        except OSError:
            pass
    return good


def check_new_trace(t, tr, exclude, what):
    """The run either wrote its trace to another file (listed on stderr) or
    refused clearly; if it ran, the trace must be exit3's."""
    traces = new_traces(t, tr, exclude)
    if tr.proc.rc == 3:
        t.eq("%s: traces written elsewhere" % what, 1, len(traces))
        listed = [p for p in tr.listed() if p in traces]
        t.check(listed, "%s: the trace's real path is not on stderr: %s" % (what, tail(tr.proc.err, 300)))
        for p in traces:
            r = need_report(t, p)
            t.eq("%s: report of %s" % (what, p.name), EXIT3, {k: r.data["totals"].get(k) for k in TOT})
            t.eq("%s: %s mode" % (what, p.name), "0o600", oct(os.stat(p).st_mode & 0o777))
    else:
        t.check(tr.proc.rc != 0 and tr.proc.err.strip(),
                "%s: heaptrail run neither ran the program (exit 3) nor explained: %s" % (what, tr.proc.describe()))


def t_no_clobber(t):
    need_tools(t)
    d = t.tmp / "d"
    d.mkdir()
    out = d / "x.ht"
    out.write_bytes(b"precious\n")
    os.chmod(out, 0o644)
    tr = heaptrail_run([prog("exit3")], outdir=d)
    t.eq("existing file's content", b"precious\n", out.read_bytes())
    t.eq("existing file's mode", "0o644", oct(os.stat(out).st_mode & 0o777))
    check_new_trace(t, tr, {out.resolve()}, "existing output")
    # the summary says the name given was taken, so no one reports the old file
    t.check(re.search(r"trace written to \S*x\.ht\.\d+ \(\S*x\.ht already existed\)", text(tr.proc.err)),
            "stderr does not say that x.ht already existed: %s" % tail(tr.proc.err, 300))


def t_no_symlink_dangling(t):
    need_tools(t)
    d = t.tmp / "d"
    d.mkdir()
    target = t.tmp / "target.ht"
    out = d / "x.ht"
    os.symlink(target, out)
    tr = heaptrail_run([prog("exit3")], outdir=d)
    t.check(not os.path.lexists(target), "the symlink was followed: %s was created" % target)
    t.check(os.path.islink(out), "the symlink %s was replaced" % out)
    check_new_trace(t, tr, {out.resolve(), target.resolve()}, "dangling symlink")


def t_no_symlink_existing(t):
    need_tools(t)
    d = t.tmp / "d"
    d.mkdir()
    victim = t.tmp / "victim"
    victim.write_bytes(b"do not touch\n")
    out = d / "x.ht"
    os.symlink(victim, out)
    tr = heaptrail_run([prog("exit3")], outdir=d)
    t.eq("symlink target's content", b"do not touch\n", victim.read_bytes())
    t.check(os.path.islink(out), "the symlink %s was replaced" % out)
    check_new_trace(t, tr, {out.resolve(), victim.resolve(), out.absolute()}, "symlink to a file")


def t_killed_run_leaves_nothing(t):
    """heaptrail run killed by SIGKILL while its program runs leaves no
    file in TMPDIR (its list of traces was a named temporary file, which
    only its own unlink removed)."""
    need_tools(t)
    tmp = t.tmp / "tmpdir"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    out = t.tmp / "k.ht"
    p = subprocess.Popen([HT, "run", "-o", str(out), "--", "/bin/sleep", "60"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not out.exists() and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        t.check(out.exists(), "the program never started under heaptrail run")
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # the orphaned sleep
        except OSError:
            pass
        p.wait(timeout=30)
        p.stderr.close()
    t.eq("files left in TMPDIR", [], sorted(os.listdir(tmp)))


def t_convert_no_symlink(t):
    """convert -o never writes through a symbolic link (it replaced the
    file the link pointed to), and replaces a regular file named by -o."""
    tr = heaptrail_run([prog("exit3")], outdir=t.tmp, out_name="c.ht")
    t.need(tr.out_path.exists(), "no trace: %s" % tail(tr.proc.err))
    victim = t.tmp / "victim"
    victim.write_bytes(b"do not touch\n")
    link = t.tmp / "out.folded"
    os.symlink(victim, link)
    r = run([HT, "convert", "--format", "folded", "-o", link, tr.out_path], 60)
    t.check(r.rc != 0, "convert -o onto a symlink: exit status 0")
    t.check("symbolic link" in text(r.err), "no clear message: %s" % tail(r.err))
    t.eq("the link's target", b"do not touch\n", victim.read_bytes())
    t.check(os.path.islink(link), "the symlink was replaced")
    dangling = t.tmp / "dangling.folded"
    os.symlink(t.tmp / "nowhere", dangling)
    r = run([HT, "convert", "--format", "folded", "-o", dangling, tr.out_path], 60)
    t.check(r.rc != 0 and not (t.tmp / "nowhere").exists(),
            "convert -o onto a dangling symlink created its target: %s" % r.describe())
    plain = t.tmp / "plain.folded"
    plain.write_bytes(b"old content, longer than the new one will be " * 40)
    r = run([HT, "convert", "--format", "folded", "-o", plain, tr.out_path], 60)
    want = run([HT, "convert", "--format", "folded", tr.out_path], 60)
    t.eq("convert -o onto a regular file: exit status", 0, r.rc)
    t.eq("the file replaced by the export", want.out, plain.read_bytes())


def t_report_cli(t):
    """The report CLI in use is the ASan build (or says why not)."""
    t.check(report_cli().name == "heaptrail" and "asan" in str(report_cli()),
            "build/asan/heaptrail is missing: reports run without ASan/UBSan")


# The agent's own figures (the manifest's "exact" fields) against the
# report's replay of the same trace. Single-threaded programs must give
# them; programs with threads may not, and when they do, equal.
RUN_FIGURES = ("allocations", "frees", "bytes_allocated", "peak_heap_bytes",
               "leaked_bytes", "leaked_blocks", "temporary_allocations")


def agent_figures(t, name, args=()):
    manifest = t.tmp / ("%s.manifest" % name)
    manifest.write_bytes(b"")
    out = t.tmp / ("%s.ht" % name)
    env = dict(os.environ, LD_PRELOAD=str(AGENT),
               HEAPTRAIL_OPTIONS="output=%s,manifest=%s" % (out, manifest))
    p = run([prog(name)] + list(args), 60, env=env)
    exact = None
    for line in text(manifest.read_bytes()).splitlines():
        f = line.split("\t")
        if len(f) > 2 and f[1] == str(out) and "exact" in f:
            i = f.index("exact")
            exact = dict(zip(RUN_FIGURES, (int(v) for v in f[i + 1:i + 8])))
    return p, out, exact


def t_run_figures(t):
    """heaptrail run prints the agent's figures instead of replaying the
    trace when the agent can promise they are the replay's: check them
    against the report on programs of every kind."""
    need_tools(t)
    for name, single in (("churn", True), ("leaks", True), ("temporaries", True),
                         ("peak", True), ("stack_cache", True), ("exit3", True),
                         ("fork", True), ("threads", False), ("custom_alloc", False)):
        p, out, exact = agent_figures(t, name)
        rep = need_report(t, out)
        want = {k: rep.data["totals"].get(k) for k in RUN_FIGURES}
        if single:
            t.eq("%s: the agent gives its figures" % name, True, exact is not None)
        if exact is not None:
            t.eq("%s: agent figures vs the report's replay" % name, want, exact)
    # and `heaptrail run` prints them
    tr = heaptrail_run([prog("temporaries")])
    rep = need_report(t, tr.out_path).data
    m = re.search(r"in use at exit \S+ \S+ in ([\d,]+) blocks?; ([\d,]+) temporary", text(tr.proc.err))
    t.check(m, "run's summary: no leaked/temporary line: %s" % tail(tr.proc.err, 400))
    if m:
        t.eq("run's leaked blocks and temporary allocations",
             (rep["totals"]["leaked_blocks"], rep["totals"]["temporary_allocations"]),
             tuple(int(g.replace(",", "")) for g in m.groups()))
    # one is one: exec_target leaks 1 block of its 3 allocations
    tr = heaptrail_run([prog("exec_target")])
    t.check("3 allocations, 2 frees," in text(tr.proc.err) and
            "in use at exit 1000 B in 1 block; 0 temporary allocations" in text(tr.proc.err),
            "run's summary of 1 leaked block: %s" % tail(tr.proc.err, 400))


def t_event_times(t):
    """Event times are multiples of 16 ns, and of 16,384 ns while only one
    thread makes events (agent.h, ht_event_time): the churn program's all
    but its first few; the threads program's worker threads' nearly none."""
    need_tools(t)
    for name, coarse in (("churn", True), ("threads", False)):
        tr = heaptrail_run([prog(name)])
        times = tracefile.heap_event_times(str(tr.out_path))
        allt = [x for v in times.values() for x in v]
        t.check(allt, "%s: no heap events in the trace" % name)
        t.eq("%s: times not a multiple of 16 ns" % name, 0, sum(1 for x in allt if x % 16))
        if coarse:
            fine = sum(1 for x in allt if x % 16384)
            t.check(fine <= 2, "%s: %d of %d times not rounded to 16,384 ns" % (name, fine, len(allt)))
        else:
            pid_tids = sorted(times)  # worker threads: every tid but the smallest (main)
            workers = [x for tid in pid_tids[1:] for x in times[tid]]
            share = sum(1 for x in workers if x % 16384 == 0) / max(1, len(workers))
            t.check(workers and share < 0.2,
                    "%s: worker threads' times look rounded (%.0f%% multiples of 16,384 ns)"
                    % (name, 100 * share))


def t_large_trace(t):
    """A large trace: churn 4,500,000 makes 9M events, ~36 MB of records,
    in batches of 32 blocks (FORMAT.md) and few zstd frames (a new one only
    when compress=auto changes level, writer.c), read back with every count
    exact."""
    need_tools(t)
    n = 4500000
    tr = heaptrail_run([prog("churn"), str(n)])
    data = tr.out_path.read_bytes()
    body = tr.out_path.with_suffix(".zst")
    body.write_bytes(data[16:])
    lst = subprocess.run(["zstd", "-lv", str(body)], capture_output=True, text=True)
    m = re.search(r"Zstandard Frames:\s*(\d+)", lst.stdout)
    frames = int(m.group(1)) if m else None
    # a frame ends only where compress=auto changes level, at most once
    # per 2 MiB of records (writer.c, HT_SEGMENT)
    records = len(tracefile.body(str(tr.out_path))[2])
    t.check(frames is not None and 1 <= frames <= 1 + records // (2 << 20),
            "zstd frames in the trace: %s for %d bytes of records"
            % (frames if m else lst.stdout + lst.stderr, records))
    rep = need_report(t, tr.out_path).data
    t.check(not rep.get("truncated") and not rep.get("error"), "report: %s" % rep.get("error"))
    tot = rep["totals"]
    t.eq("allocations", n + 10, tot["allocations"])
    t.eq("frees", n, tot["frees"])
    t.eq("bytes allocated (16 + (i % 4) * 16 each, 10 x 100 kept)", n // 4 * 160 + 1000,
         tot["bytes_allocated"])
    t.eq("leaked bytes", 1000, tot["leaked_bytes"])
    # every block went out in a batch (FORMAT.md, THREAD_BATCH), most of
    # them full ones of 32 blocks (a batch held 500 ms goes out as it is,
    # which a loaded machine may cause now and then)
    counts, single = tracefile.batch_counts(str(tr.out_path))
    t.eq("thread blocks written outside a batch", 0, single)
    t.check(len(counts) > 10 and max(counts) == 32 and sum(c == 32 for c in counts) >= len(counts) / 2,
            "batch sizes: %s" % counts)


def t_compress_levels(t):
    """compress=1 (fast), 2 (strong) and auto, the default, which starts
    strong and changes level at a new zstd frame when the writer is busy
    (writer.c): the same events every time."""
    need_tools(t)
    n = 2000000
    reps = {}
    for level in ("1", "2", "auto"):
        env = dict(os.environ, HEAPTRAIL_OPTIONS="compress=" + level)
        tr = heaptrail_run([prog("churn"), str(n)], env=env, out_name="c%s.ht" % level)
        rep = need_report(t, tr.out_path).data
        t.check(not rep.get("truncated") and not rep.get("error"),
                "compress=%s: report: %s" % (level, rep.get("error")))
        reps[level] = rep
    t.eq("allocations (compress=1)", n + 10, reps["1"]["totals"]["allocations"])
    for level in ("2", "auto"):
        for k in ("allocations", "frees", "bytes_allocated", "peak_heap_bytes", "leaked_bytes",
                  "temporary_allocations"):
            t.eq("compress=%s: %s as compress=1's" % (level, k), reps["1"]["totals"][k],
                 reps[level]["totals"][k])
        t.eq("compress=%s: sites as compress=1's" % level,
             [(s["allocations"], s["bytes_allocated"]) for s in reps["1"]["sites"]],
             [(s["allocations"], s["bytes_allocated"]) for s in reps[level]["sites"]])
    # The sizes are the bench's to compare (bench/RESULTS.md): this trace is
    # mostly time deltas, whose size follows the machine's timing noise
    # (15-23 KB for sampled.c at either level in three runs).
    # a level the agent does not have: a warning, and the run still traced
    env = dict(os.environ, HEAPTRAIL_OPTIONS="compress=3")
    tr = heaptrail_run([prog("churn"), "1000"], env=env, out_name="bad.ht")
    t.check(b"compress" in tr.proc.err, "compress=3: no message naming the option: %r"
            % tail(tr.proc.err, 300))


def t_joined_blocks(t):
    """A steady program's blocks have their address codes in column 0 (the
    writer joins a block when the one before it had no DELTA code,
    common/packed.h): the independent reader (tracefile.py) decodes them
    to the events the report counts."""
    need_tools(t)
    n = 300000
    tr = heaptrail_run([prog("churn"), str(n)])
    rep = need_report(t, tr.out_path).data
    blocks, joined = tracefile.joined_blocks(str(tr.out_path))
    t.check(blocks > 10 and joined >= blocks // 2, "joined blocks: %d of %d" % (joined, blocks))
    ev = tracefile.thread_events(str(tr.out_path))
    allocs = sum(th["allocs"] for th in ev.values())
    frees = sum(th["frees"] for th in ev.values())
    nbytes = sum(size * k for th in ev.values() for size, k in th["sizes"].items())
    tot = rep["totals"]
    t.eq("allocations decoded by tracefile.py", tot["allocations"], allocs)
    t.eq("frees decoded by tracefile.py", tot["frees"], frees)
    t.eq("bytes decoded by tracefile.py", tot["bytes_allocated"], nbytes)
    t.eq("allocations", n + 10, tot["allocations"])


def t_duration(t):
    """The trace's duration is the program's: /bin/sleep 0.3 lasts at least
    0.3 s and at most the wall time of the whole `heaptrail run` (the TSC's
    rate is measured at start-up; a preemption in the middle of the
    measurement once stretched every time of a run 2.6 times)."""
    need_tools(t)
    for _ in range(3):
        tr = heaptrail_run(["/bin/sleep", "0.3"])
        rep = need_report(t, tr.out_path).data
        d = rep["totals"]["duration_seconds"]
        t.check(d is not None and 0.29 <= d <= tr.proc.secs + 0.01,
                "duration %s s for sleep 0.3 run in %.3f s" % (d, tr.proc.secs))


# Traces whose reports must not depend on how the reader holds the blocks
# (reader.c, "replayed blocks"): threads handing blocks to each other, a
# main thread whose first block comes last in the file, function events
# merged per thread, pools, tags and phases, samples, and a trace cut in
# half. (name, program argv, run options, report options)
REPLAY_CASES = (
    ("threads", ["threads"], [], []),
    ("prodcons", ["prodcons"], [], []),
    ("fn_threads", ["fn_threads"], ["--functions"], ["--functions"]),
    ("pools", ["pools_snapshots", "signal"], [], []),
    ("tags", ["tags_phases"], [], []),
    ("sampled", ["churn", "300000"], ["--sample-rate", "1024"], []),
    ("cut", list(MANY_BATCHES), [], []),
)


def t_replayed_blocks(t):
    """The reader keeps a trace's joined events up to a budget and leaves
    the rest to be joined again by each merge (HEAPTRAIL_READER_RESIDENT_MB,
    0: none kept but late blocks). Reports with everything kept, with
    nothing kept, and with a budget of 1 MB (replays that start mid-trace,
    from a copy of the address streams' states) are the same bytes; with
    nothing kept the reader did leave blocks to the replays, and at 1 MB
    it did in some trace after keeping some."""
    need_tools(t)
    mid = []
    for name, argv, opts, extra in REPLAY_CASES:
        tr = heaptrail_run([prog(argv[0])] + argv[1:], opts, out_name=name + ".ht")
        path = tr.out_path
        t.need(path.exists(), "%s: no trace: %s" % (name, tail(tr.proc.err)))
        if name == "cut":
            data = path.read_bytes()
            path = t.tmp / "cut.ht"
            path.write_bytes(data[:len(data) // 2])
        out = {}
        for mb in ("4096", "1", "0"):
            env = dict(os.environ, HEAPTRAIL_READER_RESIDENT_MB=mb, HEAPTRAIL_READER_STATS="1")
            p = run([report_cli(), "report", "--format", "json"] + extra + [str(path)], 300, env=env)
            stats = re.search(r"reader: (\d+) of (\d+) blocks left to replays, (\d+) bytes", text(p.err))
            t.check(stats, "%s, budget %s MB: no reader statistics on stderr: %s" % (name, mb, tail(p.err)))
            if stats and mb == "0":
                t.check(int(stats.group(1)) > 0, "%s: no block left to the replays: %s" % (name, stats.group(0)))
            if stats and mb == "4096":
                t.eq("%s: blocks left to replays within the budget" % name, 0, int(stats.group(1)))
            if stats and mb == "1" and int(stats.group(1)) > 0 and int(stats.group(3)) > 0:
                mid.append(name)
            err = re.sub(r"heaptrail: reader: .*\n", "", text(p.err))
            out[mb] = (p.rc, text(p.out), err)
        t.eq("%s: exit status, output and messages, all kept against none" % name, out["4096"], out["0"])
        t.eq("%s: exit status, output and messages, all kept against 1 MB kept" % name, out["4096"], out["1"])
    t.check(mid, "no trace was replayed from the middle at a budget of 1 MB")


TESTS = [
    ("cli.asan_report_cli", t_report_cli),
    ("trace.replayed_blocks", t_replayed_blocks),
    ("trace.duration", t_duration),
    ("trace.event_times", t_event_times),
    ("trace.large_trace", t_large_trace),
    ("trace.compress_levels", t_compress_levels),
    ("trace.joined_blocks", t_joined_blocks),
    ("cli.run_figures", t_run_figures),
    ("cli.bad_options", t_bad_options),
    ("cli.bad_agent_options", t_bad_agent_options),
    ("cli.cannot_run", t_cannot_run),
    ("cli.install", t_install),
    ("trace.truncated_half", t_truncated),
    ("trace.truncated_tiny", t_truncated_tiny),
    ("trace.corrupt_middle", t_corrupt_middle),
    ("trace.flipped_bits", t_flipped_bits),
    ("cli.not_a_file", t_not_a_file),
    ("cli.no_overwrite_input", t_no_overwrite_input),
    ("cli.cannot_create", t_cannot_create),
    ("trace.garbage", t_garbage),
    ("trace.mode_0600", t_mode),
    ("trace.no_clobber", t_no_clobber),
    ("trace.no_symlink_dangling", t_no_symlink_dangling),
    ("trace.no_symlink_existing", t_no_symlink_existing),
    ("cli.killed_run_leaves_nothing", t_killed_run_leaves_nothing),
    ("cli.convert_no_symlink", t_convert_no_symlink),
]
