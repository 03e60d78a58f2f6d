"""test_attach.py - heaptrail attach and detach on real running processes:
the counts of the attached window against the program's own, the programs
running on correctly after the detach, and the refusals."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness import HT, PROGS, by_leaf, find_library, report, scratch_dir, tail, text

STEP = 30  # seconds any one step may take before the test fails


def need_ptrace(t):
    """Skips a test that attaches where ptrace to a process that is not
    heaptrail's child is not allowed (kernel.yama.ptrace_scope >= 1
    without root)."""
    try:
        scope = int(open("/proc/sys/kernel/yama/ptrace_scope").read())
    except (OSError, ValueError):
        scope = 0
    if scope >= 3 or (scope >= 1 and os.geteuid() != 0):
        t.skip("kernel.yama.ptrace_scope is %d: heaptrail may not attach here" % scope)


class Target:
    """A program started by the test, stdin and stdout piped."""

    def __init__(self, t, args, env=None):
        self.t = t
        self.p = subprocess.Popen([str(a) for a in args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.pid = self.p.pid

    def line(self):
        """The next stdout line; fails the test after STEP seconds."""
        import select
        r, _, _ = select.select([self.p.stdout], [], [], STEP)
        if not r:
            self.kill()
            self.t.fatal("no output from %s within %ss" % (self.pid, STEP))
        return text(self.p.stdout.readline()).strip()

    def expect(self, prefix):
        got = self.line()
        if not got.startswith(prefix):
            self.kill()
            self.t.fatal("program printed %r, expected %r" % (got, prefix))
        return got

    def finish(self, data=b""):
        """Writes data, closes stdin, waits: (status, rest of stdout, stderr)."""
        try:
            out, err = self.p.communicate(data, timeout=STEP)
        except subprocess.TimeoutExpired:
            self.kill()
            self.t.fatal("program %s did not end within %ss after the detach" % (self.pid, STEP))
        return self.p.returncode, text(out), text(err)

    def kill(self):
        try:
            self.p.kill()
            self.p.communicate(timeout=5)
        except Exception:  # noqa: BLE001 - best effort in a failing test
            pass


def attach(t, pid, out, extra=()):
    """Starts heaptrail attach; returns the Popen once it says it attached."""
    a = subprocess.Popen([str(HT), "attach", str(pid), "-o", str(out)] + list(extra),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    import select
    deadline = time.monotonic() + STEP
    err = b""
    while time.monotonic() < deadline:
        r, _, _ = select.select([a.stderr], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            break
        ln = a.stderr.readline()
        if not ln:
            break
        err += ln
        if b"attached to process" in ln:
            return a, text(ln)
    a.kill()
    rest = a.communicate()[1]
    t.fatal("heaptrail attach did not attach within %ss: %s" % (STEP, tail(err + rest)))


def attach_end(t, a):
    try:
        _, err = a.communicate(timeout=STEP)
    except subprocess.TimeoutExpired:
        a.kill()
        t.fatal("heaptrail attach did not end within %ss of the detach" % STEP)
    t.eq("heaptrail attach's status", 0, a.returncode)
    return text(err)


def detach(t, pid):
    p = subprocess.run([str(HT), "detach", str(pid)], capture_output=True, timeout=STEP)
    t.check(p.returncode == 0, "heaptrail detach %s: exit %s: %s" % (pid, p.returncode, tail(p.stderr)))
    return text(p.stderr)


def counts(line):
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}


def need_report(t, path):
    rep = report(path)
    if rep.err:
        t.fatal(rep.err)
    return rep.data


def pause_of(line):
    m = re.search(r"paused ([\d.]+) ms", line)
    return float(m.group(1)) if m else None


def window_test(t, prog, env=None):
    """Attach while the workers are paused, let them run, pause them, detach:
    the trace holds exactly what they did in between."""
    need_ptrace(t)
    out = scratch_dir("attach") / "w.ht"
    p = Target(t, [PROGS / prog], env=env)
    p.expect("ready")
    time.sleep(0.2)
    p.p.send_signal(signal.SIGUSR1)
    a0 = counts(p.expect("paused"))
    threads = len(os.listdir("/proc/%d/task" % p.pid))
    a, said = attach(t, p.pid, out)
    p.p.send_signal(signal.SIGUSR1)
    p.expect("running")
    time.sleep(0.5)
    p.p.send_signal(signal.SIGUSR1)
    b0 = counts(p.expect("paused"))
    said_detach = detach(t, p.pid)
    attach_end(t, a)
    # the agent's threads end with the detach (the digester looks every second)
    deadline = time.monotonic() + 5
    while len(os.listdir("/proc/%d/task" % p.pid)) != threads and time.monotonic() < deadline:
        time.sleep(0.05)
    t.eq("threads after the detach", threads, len(os.listdir("/proc/%d/task" % p.pid)))
    p.p.send_signal(signal.SIGUSR1)
    p.expect("running")
    time.sleep(0.2)
    p.p.send_signal(signal.SIGTERM)
    rc, rest, err = p.finish()
    t.eq("%s's status after the detach" % prog, 0, rc)
    t.check("done" in rest, "%s did not finish: %r %s" % (prog, rest, tail(err)))
    rep = need_report(t, out)
    tot = rep["totals"]
    allocs, frees = b0["allocs"] - a0["allocs"], b0["frees"] - a0["frees"]
    t.check(allocs > 1000, "the window is too short to mean anything: %d allocations" % allocs)
    t.eq("allocations in the window", allocs, tot["allocations"])
    t.eq("bytes allocated in the window", b0["bytes"] - a0["bytes"], tot["bytes_allocated"])
    bad = rep["invalid_frees"]
    # every free of the window: of a block the trace saw, or of one from before
    t.eq("frees in the window (seen + before the attach)", frees,
         tot["frees"] + bad["before_trace"])
    # each thread frees its 8 blocks from before the attach in its first 8
    # iterations after it (a thread the machine starved may do fewer)
    kept = sum(min(8, b0["it%d" % i] - a0["it%d" % i]) for i in range(4))
    t.eq("frees of blocks from before the attach (8 per thread)", kept, bad["before_trace"])
    t.eq("invalid or double frees", (0, 0, 0), (bad["invalid"], bad["double"], bad["mismatched"]))
    t.eq("how the trace ends", "detach", rep["program"]["ending"])
    t.eq("the trace says it was attached", True, rep["program"].get("attached"))
    t.check("heaptrail: {:,} allocations, {:,} frees (and {} of blocks from before the attach)"
            .format(allocs, tot["frees"], bad["before_trace"]) in said_detach,
            "heaptrail detach's summary: %r" % said_detach)
    t.check(pause_of(said) is not None, "no pause figure in %r" % said)
    # the text names what the window cannot know: the frees of older blocks,
    # what was live at the detach (not at an exit)
    txt = report(out, "text")
    t.need(txt.err is None, txt.err)
    t.check("of blocks allocated before the attach" in text(txt.proc.out),
            "the text report's frees line: %s" % tail(txt.proc.out, 600))
    t.check(re.search(r"^  in use at detach ", text(txt.proc.out), re.M),
            "no 'in use at detach' line: %s" % tail(txt.proc.out, 600))


def t_loop_window(t):
    need_ptrace(t)
    window_test(t, "attach_loop")


def t_cxx_window(t):
    need_ptrace(t)
    window_test(t, "attach_cxx")


def t_jemalloc_window(t):
    """A process whose malloc is jemalloc's (preloaded): the hooks hand
    every call to jemalloc, never to glibc's allocator."""
    need_ptrace(t)
    lib = find_library("libjemalloc.so.2")
    if not lib:
        t.skip("libjemalloc.so.2 not installed")
    window_test(t, "attach_loop", env=dict(os.environ, LD_PRELOAD=lib))


def real_python():
    for c in ("/usr/bin/python3", sys.executable):
        if c and os.path.exists(c):
            return c
    return None


PY_SCRIPT = r"""
import sys, time
sys.stdout.write("ready\n"); sys.stdout.flush()
total = 0
deadline = time.monotonic() + 60
for line in sys.stdin:
    n = int(line)
    d = {}
    for i in range(n):
        d[str(i)] = [i] * (i % 7)
    total += sum(len(v) for v in d.values())
    sys.stdout.write("ok %d\n" % total); sys.stdout.flush()
sys.stdout.write("total %d\n" % total)
"""


def t_python(t):
    need_ptrace(t)
    py = real_python()
    if not py:
        t.skip("no python3")
    out = scratch_dir("attach") / "py.ht"
    env = dict(os.environ, PYTHONMALLOC="malloc")
    p = Target(t, [py, "-c", PY_SCRIPT], env=env)
    p.expect("ready")
    a, _ = attach(t, p.pid, out, ["--for", "1"])
    expect = 0
    for k in range(5):
        p.p.stdin.write(b"2000\n")
        p.p.stdin.flush()
        expect += sum(i % 7 for i in range(2000))
        t.eq("python's answer while attached", "ok %d" % expect, p.line())
    attach_end(t, a)
    p.p.stdin.write(b"3000\n")
    p.p.stdin.flush()
    expect += sum(i % 7 for i in range(3000))
    t.eq("python's answer after the detach", "ok %d" % expect, p.line())
    rc, rest, err = p.finish()
    t.eq("python's status", 0, rc)
    t.eq("python's last line", "total %d" % expect, rest.strip())
    rep = need_report(t, out)
    t.check(rep["totals"]["allocations"] > 10000,
            "python's attached window holds %d allocations" % rep["totals"]["allocations"])
    t.eq("invalid frees", 0, rep["invalid_frees"]["invalid"] + rep["invalid_frees"]["double"])


def t_sqlite(t):
    need_ptrace(t)
    sq = shutil.which("sqlite3")
    if not sq:
        t.skip("no sqlite3")
    out = scratch_dir("attach") / "sq.ht"
    p = Target(t, [sq, ":memory:"])
    p.p.stdin.write(b"create table t(a integer, b blob);\nselect 'ready';\n")
    p.p.stdin.flush()
    p.expect("ready")
    a, _ = attach(t, p.pid, out)
    for k in range(20):
        p.p.stdin.write(b"insert into t select value, randomblob(200) from generate_series(1, 500);\n")
    p.p.stdin.write(b"select 'inserted', count(*) from t;\n")
    p.p.stdin.flush()
    t.eq("sqlite3's answer while attached", "inserted|10000", p.line())
    detach(t, p.pid)
    attach_end(t, a)
    rc, rest, err = p.finish(b"delete from t where a % 2 = 0;\nselect count(*), sum(a) from t;\n")
    t.eq("sqlite3's status", 0, rc)
    t.eq("sqlite3's answer after the detach", "5000|%d" % (20 * sum(range(1, 501, 2))), rest.strip())
    rep = need_report(t, out)
    t.check(rep["totals"]["allocations"] > 1000,
            "sqlite3's window holds %d allocations" % rep["totals"]["allocations"])
    t.eq("invalid frees", 0, rep["invalid_frees"]["invalid"] + rep["invalid_frees"]["double"])


def t_blocked_read(t):
    """cat blocked in read(0): its read goes on after the attach and detach."""
    need_ptrace(t)
    out = scratch_dir("attach") / "cat.ht"
    p = Target(t, ["cat"])
    time.sleep(0.3)
    a, _ = attach(t, p.pid, out, ["--for", "0.3"])
    attach_end(t, a)
    rc, rest, err = p.finish(b"hello\nworld\n")
    t.eq("cat's status", 0, rc)
    t.eq("cat's output", "hello\nworld\n", rest)


def t_blocked_sleep(t):
    """sleep 2 blocked in clock_nanosleep: it sleeps its time, no less."""
    need_ptrace(t)
    out = scratch_dir("attach") / "sleep.ht"
    t0 = time.monotonic()
    p = Target(t, ["sleep", "2"])
    time.sleep(0.5)
    a, _ = attach(t, p.pid, out, ["--for", "0.2"])
    attach_end(t, a)
    rc, _, _ = p.finish()
    took = time.monotonic() - t0
    t.eq("sleep's status", 0, rc)
    t.check(1.9 < took < 6, "sleep 2 took %.2f s across an attach" % took)


def t_signals(t):
    """Real-time signals sent all along the attach and detach: every one is
    handled once."""
    need_ptrace(t)
    out = scratch_dir("attach") / "sig.ht"
    p = Target(t, [PROGS / "attach_signals"])
    p.expect("ready")
    sent = 0
    sig = signal.SIGRTMIN

    def burst(n):
        nonlocal sent
        for _ in range(n):
            os.kill(p.pid, sig)
            sent += 1
            time.sleep(0.001)
    burst(50)
    a = subprocess.Popen([str(HT), "attach", str(p.pid), "-o", str(out), "--for", "0.5"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    while a.poll() is None and sent < 2000:
        burst(10)
    try:
        _, err = a.communicate(timeout=STEP)
    except subprocess.TimeoutExpired:
        a.kill()
        t.fatal("heaptrail attach did not end")
    t.eq("heaptrail attach's status", 0, a.returncode)
    burst(50)
    time.sleep(0.3)
    rc, rest, err2 = p.finish()
    t.eq("the program's status", 0, rc)
    t.eq("signals handled", "signals=%d" % sent, rest.strip())
    rep = need_report(t, out)
    t.check(rep["totals"]["allocations"] > 100, "few allocations recorded: %d" % rep["totals"]["allocations"])
    t.eq("invalid frees", 0, rep["invalid_frees"]["invalid"] + rep["invalid_frees"]["double"])


def refused(t, pid, what, extra_env=None, cmd_prefix=()):
    out = scratch_dir("attach") / "no.ht"
    if cmd_prefix:  # another user's heaptrail: a directory it may write to
        out = Path("/tmp") / ("heaptrail-attach-refused.%d.ht" % os.getpid())
    p = subprocess.run(list(cmd_prefix) + [str(HT), "attach", str(pid), "-o", str(out), "--for", "1"],
                       capture_output=True, timeout=STEP, env=extra_env)
    t.eq("heaptrail attach's status (%s)" % what, 1, p.returncode)
    t.check(b"not touched" in p.stderr, "%s: no 'not touched' in %r" % (what, tail(p.stderr)))
    t.check(not out.exists(), "%s: a trace was written" % what)
    return text(p.stderr)


def t_refuse_traced(t):
    need_ptrace(t)
    p = Target(t, ["cat"])
    tr = subprocess.Popen([str(PROGS / "attach_tracer"), str(p.pid)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t.eq("tracer", b"tracing\n", tr.stdout.readline())
    err = refused(t, p.pid, "already traced")
    t.check("already traced" in err, "no reason in %r" % err)
    tr.communicate(b"", timeout=STEP)
    rc, rest, _ = p.finish(b"still here\n")
    t.eq("cat after the refusal", (0, "still here\n"), (rc, rest))


def t_refuse_static(t):
    need_ptrace(t)
    d = scratch_dir("attach")
    src = d / "s.c"
    src.write_text("#include <unistd.h>\nint main(void){char b[64];long n;"
                   "while((n=read(0,b,64))>0)write(1,b,n);return 0;}\n")
    c = subprocess.run(["cc", "-static", "-o", str(d / "s"), str(src)], capture_output=True)
    if c.returncode:
        t.skip("no static libc to build a static program")
    p = Target(t, [d / "s"])
    err = refused(t, p.pid, "static")
    t.check("statically linked" in err, "no reason in %r" % err)
    rc, rest, _ = p.finish(b"echo\n")
    t.eq("the static program after the refusal", (0, "echo\n"), (rc, rest))


NOLIBC = r"""
#include <sys/syscall.h>
static long sys3(long n, long a, long b, long c)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return r;
}
void _start(void)
{
	char buf[64];
	long n;
	while ((n = sys3(SYS_read, 0, (long)buf, 64)) > 0)
		sys3(SYS_write, 1, (long)buf, n);
	sys3(SYS_exit, 0, 0, 0);
}
"""


def t_refuse_no_libc(t):
    """A dynamically linked program without libc (-nostdlib): nothing to
    load the agent with."""
    need_ptrace(t)
    d = scratch_dir("attach")
    (d / "n.c").write_text(NOLIBC)
    c = subprocess.run(["cc", "-nostdlib", "-fPIE", "-pie", "-o", str(d / "n"), str(d / "n.c")],
                       capture_output=True)
    if c.returncode:
        t.skip("cannot build a program without libc: %s" % tail(c.stderr))
    p = Target(t, [d / "n"])
    time.sleep(0.2)
    err = refused(t, p.pid, "no libc")
    t.check("no libc" in err, "no reason in %r" % err)
    rc, rest, _ = p.finish(b"still\n")
    t.eq("the program after the refusal", (0, "still\n"), (rc, rest))


def t_refuse_sigsegv_ignored(t):
    """A process that ignores SIGSEGV: the calls' end (a fault at address
    0) would make the kernel reset it, so heaptrail refuses."""
    need_ptrace(t)
    py = real_python()
    if not py:
        t.skip("no python3")
    p = Target(t, [py, "-c", "import signal, sys\nsignal.signal(signal.SIGSEGV, signal.SIG_IGN)\n"
                   "print('ready', flush=True)\nsys.stdin.read()\n"
                   "print(signal.getsignal(signal.SIGSEGV) == signal.SIG_IGN)\n"])
    p.expect("ready")
    err = refused(t, p.pid, "SIGSEGV ignored")
    t.check("ignores SIGSEGV" in err, "no reason in %r" % err)
    rc, rest, _ = p.finish()
    t.eq("SIGSEGV still ignored after the refusal", (0, "True"), (rc, rest.strip()))


def t_refuse_user(t):
    need_ptrace(t)
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        t.skip("needs root and setpriv to try as another user")
    p = Target(t, ["cat"])
    err = refused(t, p.pid, "another user",
                  cmd_prefix=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
    t.check("not permitted" in err, "no reason in %r" % err)
    rc, rest, _ = p.finish(b"x\n")
    t.eq("cat after the refusal", (0, "x\n"), (rc, rest))


def t_refuse_twice(t):
    """A second attach to a process whose agent ran already is refused."""
    need_ptrace(t)
    out = scratch_dir("attach") / "one.ht"
    p = Target(t, ["cat"])
    time.sleep(0.2)
    a, _ = attach(t, p.pid, out, ["--for", "0.2"])
    attach_end(t, a)
    err = refused(t, p.pid, "attached before")
    t.check("loaded already" in err, "no reason in %r" % err)
    d = subprocess.run([str(HT), "detach", str(p.pid)], capture_output=True, timeout=STEP)
    t.eq("detach of a detached process", 1, d.returncode)
    rc, rest, _ = p.finish(b"y\n")
    t.eq("cat after all that", (0, "y\n"), (rc, rest))


DL_SCRIPT = r"""
import ctypes, os, sys
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
lib = ctypes.CDLL(sys.argv[1])
lib.plugin_leak.restype = ctypes.c_void_p
lib.plugin_leak(12345)
lib.plugin_leak(12345)
pid = os.fork()
if pid == 0:
    lib.plugin_leak(777)
    os._exit(7)
_, st = os.waitpid(pid, 0)
sys.stdout.write("child %d\n" % os.waitstatus_to_exitcode(st)); sys.stdout.flush()
sys.stdin.read()
"""


def t_dlopen_later(t):
    """A library dlopen'ed while attached is recorded from its first call;
    a fork child runs on untraced."""
    need_ptrace(t)
    py = real_python()
    if not py:
        t.skip("no python3")
    out = scratch_dir("attach") / "dl.ht"
    p = Target(t, [py, "-c", DL_SCRIPT, PROGS / "libdlplugin.so"])
    p.expect("ready")
    a, _ = attach(t, p.pid, out)
    p.p.stdin.write(b"go\n")
    p.p.stdin.flush()
    t.eq("the fork child's status", "child 7", p.line())
    detach(t, p.pid)
    attach_end(t, a)
    rc, _, err = p.finish()
    t.eq("python's status", 0, rc)
    rep = need_report(t, out)
    got = by_leaf(rep).get("plugin_leak", {})
    t.eq("plugin_leak's allocations (2 calls x 2)", 4, got.get("allocations"))
    t.eq("plugin_leak's bytes", 2 * (12345 + 13345), got.get("bytes_allocated"))
    t.check(len(list(out.parent.iterdir())) == 1, "the fork child wrote a trace: %s"
            % list(out.parent.iterdir()))


def t_exit_while_attached(t):
    """The process ends while attached: the trace is complete, its exit
    status in it, and heaptrail attach ends by itself."""
    need_ptrace(t)
    out = scratch_dir("attach") / "exit.ht"
    p = Target(t, [PROGS / "attach_loop", "stdin"])
    p.expect("ready")
    a, _ = attach(t, p.pid, out)
    time.sleep(0.3)
    rc, rest, _ = p.finish()
    t.eq("the program's status", 0, rc)
    err = attach_end(t, a)
    t.check("ended" in err, "heaptrail attach did not say the process ended: %r" % err)
    rep = need_report(t, out)
    t.eq("how the trace ends", "exit", rep["program"]["ending"])
    # a return from main reaches exit() inside libc, which no slot sees
    t.check(rep["program"]["exit_code"] in (0, None), "exit code %r" % rep["program"]["exit_code"])
    d = counts(rest)
    t.check(0 < rep["totals"]["allocations"] <= d["allocs"], "allocations %d of %d"
            % (rep["totals"]["allocations"], d["allocs"]))
    t.eq("invalid frees", 0, rep["invalid_frees"]["invalid"] + rep["invalid_frees"]["double"])


def t_underscore_exit(t):
    """os._exit while attached (the _exit slot): the trace has its status."""
    need_ptrace(t)
    py = real_python()
    if not py:
        t.skip("no python3")
    out = scratch_dir("attach") / "uexit.ht"
    p = Target(t, [py, "-c", "import os, sys\nprint('ready', flush=True)\n"
                   "x = [str(i) for i in range(int(sys.stdin.readline()))]\nos._exit(5)\n"])
    p.expect("ready")
    a, _ = attach(t, p.pid, out)
    rc, _, _ = p.finish(b"5000\n")
    t.eq("python's status", 5, rc)
    attach_end(t, a)
    rep = need_report(t, out)
    t.eq("how the trace ends", ("_exit", 5), (rep["program"]["ending"], rep["program"]["exit_code"]))


def t_ctrl_c(t):
    """Ctrl-C on heaptrail attach detaches; the program runs on."""
    need_ptrace(t)
    out = scratch_dir("attach") / "int.ht"
    p = Target(t, [PROGS / "attach_loop", "stdin"])
    p.expect("ready")
    a, _ = attach(t, p.pid, out)
    time.sleep(0.3)
    a.send_signal(signal.SIGINT)
    err = attach_end(t, a)
    t.check("detached from process" in err, "no detach said: %r" % err)
    time.sleep(0.2)
    rc, rest, _ = p.finish()
    t.eq("the program's status", 0, rc)
    t.check(rest.startswith("done"), "the program's end: %r" % rest)
    rep = need_report(t, out)
    t.eq("how the trace ends", "detach", rep["program"]["ending"])
    t.check(rep["totals"]["allocations"] > 100, "allocations: %d" % rep["totals"]["allocations"])


def t_refuse_run_and_stopped(t):
    """A process under heaptrail run, and a stopped one, are refused."""
    need_ptrace(t)
    out = scratch_dir("attach") / "run.ht"
    r = subprocess.Popen([str(HT), "run", "-o", str(out), "--", "cat"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid = None
    for _ in range(100):
        kids = subprocess.run(["pgrep", "-P", str(r.pid)], capture_output=True, text=True).stdout.split()
        if kids and "libheaptrail" in open("/proc/%s/maps" % kids[0]).read():
            pid = int(kids[0])
            break
        time.sleep(0.05)
    if pid is None:
        r.kill()
        t.fatal("heaptrail run's program did not start")
    err = refused(t, pid, "under heaptrail run")
    t.check("loaded already" in err, "no reason in %r" % err)
    got, _ = r.communicate(b"z\n", timeout=STEP)
    t.eq("heaptrail run after the refusal", (0, b"z\n"), (r.returncode, got))
    p = Target(t, ["cat"])
    time.sleep(0.2)
    os.kill(p.pid, signal.SIGSTOP)
    deadline = time.monotonic() + STEP  # a stop that has taken effect
    while open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()[0] != "T":
        t.need(time.monotonic() < deadline, "cat did not stop")
        time.sleep(0.01)
    err = refused(t, p.pid, "stopped")
    t.check("stopped" in err, "no reason in %r" % err)
    os.kill(p.pid, signal.SIGCONT)
    rc, rest, _ = p.finish(b"w\n")
    t.eq("cat after the refusal", (0, "w\n"), (rc, rest))


def t_other_user_dir(t):
    """Root attaching to another user's process whose trace directory that
    user cannot write: refused before the agent starts, so a second attach
    with a directory it can write works."""
    need_ptrace(t)
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        t.skip("needs root and setpriv to run a process as another user")
    p = Target(t, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat"])
    time.sleep(0.3)
    bad = scratch_dir("attach") / "no.ht"  # the scratch directory is root's, mode 700
    r = subprocess.run([str(HT), "attach", str(p.pid), "-o", str(bad), "--for", "0.2"],
                       capture_output=True, timeout=STEP)
    t.eq("attach with a directory the process cannot write", 1, r.returncode)
    t.check(b"cannot create its trace" in r.stderr, "no reason in %r" % tail(r.stderr))
    good = Path("/tmp") / ("heaptrail-attach-nobody.%d.ht" % os.getpid())
    try:
        a, _ = attach(t, p.pid, good, ["--for", "0.2"])
        attach_end(t, a)
        t.check(good.exists() and good.stat().st_uid == 65534, "the trace is not the process's")
        rep = need_report(t, good)
        t.eq("how the trace ends", "detach", rep["program"]["ending"])
    finally:
        if good.exists():
            good.unlink()
    rc, rest, _ = p.finish(b"v\n")
    t.eq("cat after all that", (0, "v\n"), (rc, rest))


def t_main_thread_ended(t):
    """The main thread ended by pthread_exit: another thread is borrowed,
    and the window's counts are exact."""
    need_ptrace(t)
    out = scratch_dir("attach") / "mainexit.ht"
    p = Target(t, [PROGS / "attach_mainexit"])
    p.p.stdin.write(b"10\n")  # stdio's buffers before the attach
    p.p.stdin.flush()
    t.eq("warm-up", "ok 10", p.line())
    a, said = attach(t, p.pid, out)
    t.check(str(out.parent) in said, "no trace path in %r" % said)
    for n in (100, 2000, 37):
        p.p.stdin.write(b"%d\n" % n)
        p.p.stdin.flush()
        p.line()
    detach(t, p.pid)
    attach_end(t, a)
    rc, rest, _ = p.finish(b"5\n")
    t.eq("the program's end", (0, "ok 2152\ntotal 2152"), (rc, rest.strip()))
    rep = need_report(t, out)
    t.eq("allocations in the window", 2137, rep["totals"]["allocations"])
    t.eq("frees in the window", 2137, rep["totals"]["frees"])
    t.eq("bytes in the window", 2137 * 48, rep["totals"]["bytes_allocated"])


def t_epoll_not_broken(t):
    """The main thread waits in epoll_wait (a stop would break it with
    EINTR), a worker in read: the worker is the thread borrowed."""
    need_ptrace(t)
    out = scratch_dir("attach") / "epoll.ht"
    p = Target(t, [PROGS / "attach_epoll"])
    p.p.stdin.write(b"warm\n")
    p.p.stdin.flush()
    t.eq("warm-up", "ok 5", p.line())
    a, _ = attach(t, p.pid, out, ["--for", "0.3"])
    p.p.stdin.write(b"abc\n")
    p.p.stdin.flush()
    t.eq("while attached", "ok 9", p.line())
    attach_end(t, a)
    rc, rest, _ = p.finish(b"de\n")
    t.eq("the program's end", (0, "ok 12\nepoll ok"), (rc, rest.strip()))
    rep = need_report(t, out)
    t.eq("allocations while attached (strdup)", 1, rep["totals"]["allocations"])


def t_getattr_first(t):
    """The main thread's first allocation after the attach is inside
    pthread_getattr_np, which holds the lock the agent's first look at the
    thread's stack takes: no deadlock, the allocations recorded."""
    need_ptrace(t)
    out = scratch_dir("attach") / "getattr.ht"
    p = Target(t, [PROGS / "attach_getattr"])
    p.expect("ready")
    a, _ = attach(t, p.pid, out)
    for _ in range(3):
        p.p.stdin.write(b"x\n")
        p.p.stdin.flush()
        t.eq("pthread_getattr_np while attached", "ok", p.line())
    detach(t, p.pid)
    attach_end(t, a)
    rc, rest, _ = p.finish()
    t.eq("the program's end", (0, "done"), (rc, rest.strip()))
    rep = need_report(t, out)
    t.check(rep["totals"]["allocations"] >= 3, "allocations: %d" % rep["totals"]["allocations"])


def t_top_attached(t):
    """heaptrail top on an attached process: it finds the trace the attach
    writes and counts what the workers did since (paused before, so the
    count is exact once the agent has shipped it)."""
    need_ptrace(t)
    out = scratch_dir("attach") / "top.ht"
    p = Target(t, [PROGS / "attach_loop"])
    p.expect("ready")
    time.sleep(0.2)
    p.p.send_signal(signal.SIGUSR1)
    a0 = counts(p.expect("paused"))
    a, _ = attach(t, p.pid, out)
    p.p.send_signal(signal.SIGUSR1)
    p.expect("running")
    time.sleep(0.5)
    p.p.send_signal(signal.SIGUSR1)
    b0 = counts(p.expect("paused"))
    time.sleep(3)  # the agent ships within 0.5 s; top holds back 1 s
    top = subprocess.run([str(HT), "top", "--once", str(p.pid)], capture_output=True, timeout=STEP)
    shown = text(top.stdout)
    t.eq("heaptrail top's status", 0, top.returncode)
    t.check(("trace %s" % out) in shown, "top does not name the attached trace: %s" % tail(shown, 600))
    m = re.search(r"^allocations +([\d,]+)", shown, re.M)
    t.need(m, "no allocations line in top's frame: %s" % tail(shown, 600))
    t.eq("allocations top shows (the window's)", b0["allocs"] - a0["allocs"], int(m.group(1).replace(",", "")))
    detach(t, p.pid)
    attach_end(t, a)
    p.p.send_signal(signal.SIGUSR1)
    p.expect("running")
    p.p.send_signal(signal.SIGTERM)
    rc, _, _ = p.finish()
    t.eq("attach_loop's status after the detach", 0, rc)


TESTS = [
    ("attach.loop_window", t_loop_window),
    ("attach.top", t_top_attached),
    ("attach.cxx_window", t_cxx_window),
    ("attach.jemalloc_window", t_jemalloc_window),
    ("attach.python", t_python),
    ("attach.sqlite3", t_sqlite),
    ("attach.blocked_read", t_blocked_read),
    ("attach.blocked_sleep", t_blocked_sleep),
    ("attach.signals", t_signals),
    ("attach.main_thread_ended", t_main_thread_ended),
    ("attach.epoll_not_broken", t_epoll_not_broken),
    ("attach.getattr_first", t_getattr_first),
    ("attach.dlopen_later", t_dlopen_later),
    ("attach.exit_while_attached", t_exit_while_attached),
    ("attach.ctrl_c", t_ctrl_c),
    ("attach.underscore_exit", t_underscore_exit),
    ("attach.refuse_traced", t_refuse_traced),
    ("attach.refuse_static", t_refuse_static),
    ("attach.refuse_no_libc", t_refuse_no_libc),
    ("attach.refuse_sigsegv_ignored", t_refuse_sigsegv_ignored),
    ("attach.refuse_user", t_refuse_user),
    ("attach.refuse_twice", t_refuse_twice),
    ("attach.refuse_run_and_stopped", t_refuse_run_and_stopped),
    ("attach.other_user_dir", t_other_user_dir),
]
