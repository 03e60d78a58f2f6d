"""test_top.py - `heaptrail top` and `heaptrail run --live`, in tmux.

tests/programs/top_phases.c holds 4 MiB in 64 blocks from phase_one, then
(when the test says go) 1 MiB more from phase_two, the peak (5 MiB), and
frees 16 of phase_one's blocks: 3 MiB and 1 MiB live, heap 4 MiB; churn
allocates and frees 100 bytes every 10 ms throughout. The test reads the
screen (tmux capture-pane), presses keys (send-keys), and checks the
figures against that construction and against the final report of the
same run. Every wait has a deadline that fails the test.
"""

import os
import re
import shutil
import subprocess
import time

from harness import AGENT, HT, HT_ASAN, PROGS, SANITIZER_RE, asan_env, report, run, tail, text

PHASE1_HEAP = 64 * 65536
PEAK = 80 * 65536
PHASE2_HEAP = 64 * 65536
CHURN = 100  # one churn block may be live at the moment the screen shows
TOP_CLI = HT_ASAN if HT_ASAN.exists() else HT


class Tmux:
    """A tmux server of our own (its own socket), one window running cmd
    in cwd; killed by close()."""

    def __init__(self, t, cmd, cwd, cols=110, rows=34, env=""):
        if not shutil.which("tmux"):
            t.skip("tmux is not installed")
        self.t = t
        self.sock = "ht-top-%d-%d" % (os.getpid(), id(self))
        # the shell stays after the command, so that its exit and the
        # terminal it left can be read
        script = "cd %s && %s %s; echo EXIT=$?; stty -a | tr ' ' '\\n' | grep -x -- '-\\?icanon'; sleep 600" % (
            sh_quote(str(cwd)), env, cmd)
        r = subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null", "new-session", "-d", "-s", "top",
                            "-x", str(cols), "-y", str(rows), script],
                           capture_output=True, timeout=20)
        if r.returncode:
            t.fatal("tmux new-session failed: %s" % text(r.stderr))

    def screen(self, escapes=False):
        args = ["tmux", "-L", self.sock, "capture-pane", "-p", "-t", "top"] + (["-e"] if escapes else [])
        r = subprocess.run(args, capture_output=True, timeout=20)
        return text(r.stdout)

    def keys(self, *keys):
        subprocess.run(["tmux", "-L", self.sock, "send-keys", "-t", "top"] + list(keys),
                       capture_output=True, timeout=20)

    def wait(self, what, pred, timeout=60):
        """The screen once pred(screen) holds; fails the test after timeout."""
        end = time.monotonic() + timeout
        while True:
            s = self.screen()
            if pred(s):
                return s
            if time.monotonic() > end:
                self.t.fatal("%s: not on the screen after %ds; the screen:\n%s" % (what, timeout, s))
            time.sleep(0.2)

    def close(self):
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True, timeout=20)


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def num(s):
    return int(s.replace(",", ""))


def heap_line(screen):
    """(heap in use, blocks) in bytes from the screen, or None."""
    m = re.search(r"heap in use\s+\S+ \S+\s+([\d,]+) B in ([\d,]+) block", screen)
    return (num(m.group(1)), num(m.group(2))) if m else None


def peak_line(screen):
    m = re.search(r"peak heap\s+\S+ \S+\s+([\d,]+) B", screen)
    return num(m.group(1)) if m else None


def site_rows(screen):
    """[(live, blocks, rate, growth, name)] in screen order."""
    rows = []
    past = False
    for line in screen.splitlines():
        if re.match(r"\s+LIVE\s+BLOCKS", line):
            past = True
            continue
        m = re.match(r"\s*(\S+ \S+)\s+([\d,]+)\s+([\d.,]+)\s+([+-]?\S+ \S+)\s+(\S.*)$", line) if past else None
        if m:
            rows.append((m.group(1), num(m.group(2)), float(m.group(3).replace(",", "")),
                         m.group(4), m.group(5)))
        elif past and rows:
            break
    return rows


def first_site(screen):
    rows = site_rows(screen)
    return rows[0][4].split(" ")[0] if rows else None


def site(screen, fn):
    for r in site_rows(screen):
        if r[4].startswith(fn + " "):
            return r
    return None


def phase(d):
    try:
        with open(os.path.join(d, "phase")) as f:
            return f.read().strip()
    except OSError:
        return ""


def wait_file(t, what, pred, timeout=60):
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            t.fatal("%s: not after %ds" % (what, timeout))
        time.sleep(0.1)


def start_traced(t, d):
    """top_phases under heaptrail run in the background: (Popen, the
    program's pid, the trace)."""
    trace = os.path.join(d, "x.ht")
    log = open(os.path.join(d, "run.log"), "wb")
    p = subprocess.Popen([str(HT), "run", "-o", trace, str(PROGS / "top_phases"), d],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    log.close()
    wait_file(t, "phase 1 of top_phases", lambda: phase(d) == "phase 1")
    kids = open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split()
    t.need(len(kids) == 1, "heaptrail run has %d children" % len(kids))
    return p, int(kids[0]), trace


def finish(t, p, d, timeout=60):
    open(os.path.join(d, "go2"), "w").close()
    open(os.path.join(d, "stop"), "w").close()
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.wait()
        t.fatal("top_phases did not end %ds after stop" % timeout)
    return rc


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def check_no_sanitizer(t, path):
    try:
        err = open(path, "rb").read()
    except OSError:
        return
    t.check(not SANITIZER_RE.search(text(err)), "sanitizer report from top: %s" % tail(err, 1500))


def final_report(t, trace):
    r = report(trace)
    if r.data is None:
        t.fatal("no report of %s: %s" % (trace, r.err))
    return r.data


def report_site(rep, fn):
    for s in rep["sites"]:
        st = s.get("stack") or []
        if st and st[0].get("function") == fn:
            return s
    return None


def t_live_pid(t):
    """top PID: figures, sorts, pause, snapshot, q; then the final report."""
    d = str(t.tmp)
    p, pid, trace = start_traced(t, d)
    phase1_at = time.monotonic()
    r = run([TOP_CLI, "top", "--once", str(p.pid)], 30, env=asan_env())
    t.check(r.rc == 1 and "is heaptrail itself: the program it runs is process %d" % pid in text(r.err),
            "top of heaptrail run's own pid: %s: %s" % (r.describe(), tail(r.err)))
    tm = Tmux(t, "%s top %d 2>top.err" % (TOP_CLI, pid), d, env="LANG=C.UTF-8")
    try:
        s = tm.wait("phase 1's heap", lambda s: (heap_line(s) or (0,))[0] >= PHASE1_HEAP)
        h = heap_line(s)
        t.check(PHASE1_HEAP <= h[0] <= PHASE1_HEAP + CHURN, "phase 1: heap %d on the screen, want %d"
                % (h[0], PHASE1_HEAP))
        r = site(s, "phase_one")
        t.check(r and r[0] == "4.00 MiB" and r[1] == 64, "phase 1: phase_one's row %r" % (r,))
        t.check("\u2588" in s, "no block characters in the chart under a UTF-8 locale:\n" + s)
        # phase 1 out of the growth window (10 s) before phase 2
        time.sleep(max(0.0, 11.5 - (time.monotonic() - phase1_at)))
        open(os.path.join(d, "go2"), "w").close()
        wait_file(t, "phase 2", lambda: phase(d) == "phase 2")
        s = tm.wait("phase 2's figures", lambda s: peak_line(s) == PEAK and
                    (heap_line(s) or (0,))[0] <= PHASE2_HEAP + CHURN and site(s, "phase_two"))
        screen_heap, screen_blocks = heap_line(s)
        rows = site_rows(s)
        t.eq("first site by live bytes", "phase_one", first_site(s))
        one, two = site(s, "phase_one"), site(s, "phase_two")
        t.check(one and one[0] == "3.00 MiB" and one[1] == 48, "phase_one's row %r" % (one,))
        t.check(two and two[0] == "1.00 MiB" and two[1] == 16, "phase_two's row %r" % (two,))
        lives = [r[0] for r in rows]
        t.check("sites by live bytes" in s, "the sort is not named:\n" + s)
        # sorts: growth first, while phase 2 is in the last 10 s
        tm.keys("g")
        s = tm.wait("the growth sort", lambda s: "sites by growth" in s)
        t.eq("first site by growth", "phase_two", first_site(s))
        one = site(s, "phase_one")
        t.check(one and one[3] == "-1.00 MiB", "phase_one's growth over 10 s %r, want -1.00 MiB" % (one,))
        t.eq("last site by growth", "phase_one", site_rows(s)[-1][4].split(" ")[0])
        tm.keys("Tab")
        tm.wait("Tab back to live bytes", lambda s: "sites by live bytes" in s)
        tm.keys("r")
        s = tm.wait("the rate sort", lambda s: "sites by allocation rate" in s)
        ch = site(s, "churn")
        t.eq("first site by allocation rate", "churn", first_site(s))
        # 100/s by construction; fewer when the machine is so busy that its
        # 10 ms sleeps run long
        t.check(ch and 20 <= ch[2] <= 110, "churn's rate %r, about 100/s by construction" % (ch,))
        rates = [r[2] for r in site_rows(s)]
        t.check(rates == sorted(rates, reverse=True), "rates not in order: %r" % rates)
        # pause: nothing read while paused
        tm.keys("p")
        s1 = tm.wait("PAUSED", lambda s: "PAUSED" in s)
        at1 = re.search(r" at (\S+ \S+)", s1).group(1)
        time.sleep(2.5)
        s2 = tm.screen()
        t.eq("the trace's time shown while paused", at1, re.search(r" at (\S+ \S+)", s2).group(1))
        tm.keys("p")
        tm.wait("resumed", lambda s: "PAUSED" not in s and re.search(r" at (\S+ \S+)", s).group(1) != at1)
        # snapshot
        tm.keys("s")
        s = tm.wait("the snapshot", lambda s: "snapshot written to" in s, timeout=120)
        snap = re.search(r"snapshot written to (\S+)", s).group(1)
        body = text(open(os.path.join(d, snap), "rb").read())
        t.check("heaptrail report" in body and re.search(r"peak heap\s+5\.00 MiB\s+5,242,880 B", body),
                "the snapshot %s is not a report with the 5 MiB peak:\n%s" % (snap, body[:1500]))
        # q leaves the program running and the terminal as it was
        tm.keys("q")
        s = tm.wait("top's exit", lambda s: re.search(r"^-?icanon$", s, re.M))
        t.check("EXIT=0" in s, "top's exit status: %s" % s)
        t.check(re.search(r"^icanon$", s, re.M), "the terminal is left without icanon:\n" + s)
        err = text(open(os.path.join(d, "top.err"), "rb").read())
        t.check("process %d runs on" % pid in err, "top does not say the process runs on: " + err)
        t.check(alive(pid), "top_phases is gone after q")
        time.sleep(0.5)
        t.check(alive(pid) and p.poll() is None, "top_phases ended after q")
    finally:
        tm.close()
        rc = finish(t, p, d)
    t.eq("top_phases under heaptrail run: exit status", 0, rc)
    check_no_sanitizer(t, os.path.join(d, "top.err"))
    rep = final_report(t, trace)
    t.eq("peak on the screen vs the report", rep["totals"]["peak_heap_bytes"], PEAK)
    for fn, live, blocks in (("phase_one", 3 << 20, 48), ("phase_two", 1 << 20, 16)):
        rs = report_site(rep, fn)
        t.check(rs and rs["leaked_bytes"] == live and rs["leaked_blocks"] == blocks,
                "%s in the final report: %r; on the screen %d bytes in %d blocks" % (fn, rs, live, blocks))
    # the heap on the screen is the report's at exit but what the exit
    # itself allocated (stdout's buffer) and one churn block
    at_exit = rep["totals"]["leaked_bytes"]
    t.check(0 <= at_exit - screen_heap <= 8192 + CHURN,
            "heap on the screen %d, in use at exit %d" % (screen_heap, at_exit))


def t_growing_file(t):
    """top FILE while the trace grows, and after it ended: --batch frames,
    then the view, whose final figures are the report's exactly; NO_COLOR
    and an ASCII locale."""
    d = str(t.tmp)
    p, pid, trace = start_traced(t, d)
    try:
        r = run([TOP_CLI, "top", "--batch", "3", "--interval", "0.5", trace], 60, env=asan_env())
        t.check(not r.timed_out and r.rc == 0, "top --batch: %s: %s" % (r.describe(), tail(r.err)))
        out = text(r.out)
        t.eq("frames printed", 3, out.count("heaptrail top "))
        t.check("\x1b" not in out, "escape sequences in --batch output")
        t.check(re.search(r"heap in use\s+4\.00 MiB\s+4,194,\d{3} B in 6\d blocks", out),
                "--batch does not show phase 1's 4 MiB: %s" % tail(r.out, 2000))
        t.check(not SANITIZER_RE.search(text(r.err)), "sanitizer: %s" % tail(r.err, 1500))
        tm = Tmux(t, "%s top %s 2>top.err" % (TOP_CLI, sh_quote(trace)), d, env="NO_COLOR=1 LANG=C LC_ALL=C")
        try:
            tm.wait("phase 1 in the view of the file", lambda s: (heap_line(s) or (0,))[0] >= PHASE1_HEAP)
            rc = finish(t, p, d)
            t.eq("top_phases: exit status", 0, rc)
            s = tm.wait("the end of the run", lambda s: "exited with status 0" in s)
            esc = tm.screen(escapes=True)
            t.check(not re.search(r"\x1b\[[0-9;]*[1-9][0-9;]*m", esc),
                    "colours or attributes under NO_COLOR:\n%r" % esc[:800])
            t.check("#" in s and "\u2588" not in s, "the chart is not ASCII in the C locale:\n" + s)
            rep = final_report(t, trace)
            tot = rep["totals"]
            t.eq("heap in use at the end: screen vs report", (tot["leaked_bytes"], tot["leaked_blocks"]),
                 heap_line(s))
            t.eq("peak: screen vs report", tot["peak_heap_bytes"], peak_line(s))
            m = re.search(r"allocations\s+([\d,]+) .* frees ([\d,]+)", s)
            t.check(m and (num(m.group(1)), num(m.group(2))) == (tot["allocations"], tot["frees"]),
                    "allocations and frees on the screen %r, the report's %d and %d"
                    % (m and m.groups(), tot["allocations"], tot["frees"]))
            # a smaller window: redrawn to its width
            subprocess.run(["tmux", "-L", tm.sock, "resize-window", "-t", "top", "-x", "72", "-y", "22"],
                           capture_output=True, timeout=20)
            s = tm.wait("the view redrawn at 72 columns", lambda s: "q quit" in s and
                        max(len(line.rstrip()) for line in s.splitlines()) <= 72 and
                        len(s.splitlines()) <= 22)
            # SIGTERM: the terminal is given back
            shell = subprocess.run(["tmux", "-L", tm.sock, "list-panes", "-t", "top", "-F", "#{pane_pid}"],
                                   capture_output=True, timeout=20).stdout.split()[0]
            kids = open("/proc/%s/task/%s/children" % (text(shell), text(shell))).read().split()
            t.need(len(kids) == 1, "the pane's shell has %d children" % len(kids))
            os.kill(int(kids[0]), 15)
            s = tm.wait("top's exit on SIGTERM", lambda s: re.search(r"^-?icanon$", s, re.M))
            t.check("EXIT=" in s and re.search(r"^icanon$", s, re.M), "the terminal after SIGTERM: " + s)
        finally:
            tm.close()
    finally:
        if p.poll() is None:
            finish(t, p, d)
    check_no_sanitizer(t, os.path.join(d, "top.err"))


def t_run_live(t):
    """heaptrail run --live: the view on the program, its output in a file,
    q leaves the view and run waits for the program."""
    d = str(t.tmp)
    tm = Tmux(t, "%s run --live -o x.ht %s %s 2>run.err" % (TOP_CLI, PROGS / "top_phases", sh_quote(d)), d,
              env="LANG=C.UTF-8 HEAPTRAIL_AGENT=%s" % sh_quote(str(AGENT)))
    try:
        s = tm.wait("the live view of top_phases", lambda s: site(s, "phase_one") is not None)
        m = re.search(r"program output: (heaptrail\.top_phases\.(\d+)\.out)", s)
        t.need(m, "the view does not name the program's output file:\n" + s)
        out, pid = os.path.join(d, m.group(1)), int(m.group(2))
        t.check(re.search(r"top_phases \(pid %d\)  running" % pid, s), "the view's title:\n" + s)
        tm.keys("q")
        wait_file(t, "heaptrail run's word that the view was left",
                  lambda: "left the live view; waiting for" in text(open(os.path.join(d, "run.err"), "rb").read()))
        t.check(alive(pid), "top_phases is gone after q")
        open(os.path.join(d, "go2"), "w").close()
        open(os.path.join(d, "stop"), "w").close()
        s = tm.wait("heaptrail run's exit", lambda s: re.search(r"^-?icanon$", s, re.M))
        t.check("EXIT=0" in s, "heaptrail run --live: exit status: %s" % s)
        t.check(re.search(r"^icanon$", s, re.M), "the terminal is left without icanon:\n" + s)
        err = text(open(os.path.join(d, "run.err"), "rb").read())
        t.check("the output of %s is in %s" % (PROGS / "top_phases", m.group(1)) in err,
                "run does not name the output file at the end: %s" % err)
        t.check("top_phases: done" in text(open(out, "rb").read()), "the program's output is not in %s" % out)
        t.check(not SANITIZER_RE.search(err), "sanitizer: %s" % err[-1500:])
        rep = final_report(t, os.path.join(d, "x.ht"))
        t.eq("peak of the run", PEAK, rep["totals"]["peak_heap_bytes"])
    finally:
        tm.close()
        for name in ("go2", "stop"):
            open(os.path.join(d, name), "w").close()


def t_bad_targets(t):
    d = str(t.tmp)
    notrace = os.path.join(d, "notes.txt")
    with open(notrace, "w") as f:
        f.write("not a trace\n")
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        cases = [
            (["4194399"], "no process 4194399"),
            ([str(sleeper.pid)], "process %d does not have the heaptrail agent loaded" % sleeper.pid),
            ([notrace], "not a heaptrail trace"),
            ([d], "Is a directory"),
            ([os.path.join(d, "absent.ht")], "No such file or directory"),
        ]
        for args, want in cases:
            r = run([TOP_CLI, "top", "--once"] + args, 30, env=asan_env())
            t.check(r.rc == 1 and want in text(r.err) and not r.timed_out,
                    "top --once %s: want exit 1 and %r, got %s: %s" % (args, want, r.describe(), tail(r.err)))
        r = run([TOP_CLI, "top", notrace], 30, env=asan_env())
        t.check(r.rc == 2 and "not a terminal" in text(r.err),
                "top without a terminal: %s: %s" % (r.describe(), tail(r.err)))
        r = run([TOP_CLI, "top", "--once", str(os.getpid())], 30, env=asan_env())
        t.check(r.rc == 1 and "does not have the heaptrail agent loaded" in text(r.err),
                "top of a process without the agent: %s: %s" % (r.describe(), tail(r.err)))
        r = run([TOP_CLI, "run", "--live", "true"], 30, env=asan_env())
        t.check(r.rc == 2 and "needs a terminal" in text(r.err),
                "run --live without a terminal: %s: %s" % (r.describe(), tail(r.err)))
    finally:
        sleeper.kill()
        sleeper.wait()


def t_threads_live(t):
    """top --batch following a 4-thread trace with cross-thread frees from
    the moment it exists: its last frame, once the run has ended, holds the
    report's figures exactly (events held back a second behind the clock
    keep the threads in order)."""
    d = str(t.tmp)
    trace = os.path.join(d, "t.ht")
    runp = subprocess.Popen([str(HT), "run", "-o", trace, str(PROGS / "top_threads")],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        wait_file(t, "the trace of top_threads", lambda: os.path.exists(trace))
        out = open(os.path.join(d, "frames.txt"), "wb")
        # the optimised CLI: it must keep up with the program to read in order
        top = subprocess.Popen([str(HT), "top", "--batch", "100000", "--interval", "0.25", trace],
                               stdout=out, stderr=subprocess.PIPE, start_new_session=True)
        out.close()
        try:
            t.eq("top_threads under heaptrail run: exit status", 0, runp.wait(timeout=120))
            frames = lambda: text(open(os.path.join(d, "frames.txt"), "rb").read())
            wait_file(t, "a frame of the ended run", lambda: "exited with status 0" in frames())
            time.sleep(0.5)
        finally:
            top.terminate()
            _, err = top.communicate(timeout=60)
        t.check(not SANITIZER_RE.search(text(err)), "sanitizer: %s" % tail(err, 1500))
        all_frames = frames().split("\nheaptrail top ")
        t.check(len(all_frames) >= 6, "%d frames while the program ran about 3 s" % len(all_frames))
        last = all_frames[-2] if len(all_frames) > 1 and "exited" not in all_frames[-1] else all_frames[-1]
        rep = final_report(t, trace)
        tot = rep["totals"]
        t.eq("heap in use at the end: last frame vs report", (tot["leaked_bytes"], tot["leaked_blocks"]),
             heap_line(last))
        t.eq("peak: last frame vs report", tot["peak_heap_bytes"], peak_line(last))
        m = re.search(r"allocations\s+([\d,]+) .* frees ([\d,]+)", last)
        t.eq("allocations and frees: last frame vs report", (tot["allocations"], tot["frees"]),
             m and (num(m.group(1)), num(m.group(2))))
        # while it ran: the frames show the heap growing and the allocations rising
        counts = [num(x) for x in re.findall(r"allocations\s+([\d,]+) ", frames())]
        t.check(len(set(counts)) >= 3, "the allocations did not rise over the frames: %r" % counts[:20])
    finally:
        if runp.poll() is None:
            os.killpg(runp.pid, 9)
            runp.wait()


def t_ctrl_c(t):
    """Ctrl-C leaves the view of a finished trace and gives the terminal back."""
    d = str(t.tmp)
    trace = os.path.join(d, "peak.ht")
    r = run([HT, "run", "-o", trace, PROGS / "peak"], 60)
    t.need(r.rc == 0, "peak under heaptrail run: %s" % r.describe())
    tm = Tmux(t, "%s top %s 2>top.err" % (TOP_CLI, sh_quote(trace)), d, env="LANG=C.UTF-8")
    try:
        s = tm.wait("the view of peak's trace", lambda s: "exited with status 0" in s)
        t.eq("peak heap of peak.c (71,000 B by construction)", 71000, peak_line(s))
        t.eq("in use at the end (alloc_e's 10 bytes)", (10, 1), heap_line(s))
        tm.keys("C-c")
        s = tm.wait("top's exit on Ctrl-C", lambda s: re.search(r"^-?icanon$", s, re.M))
        t.check("EXIT=" in s and re.search(r"^icanon$", s, re.M), "the terminal after Ctrl-C: " + s)
    finally:
        tm.close()
    check_no_sanitizer(t, os.path.join(d, "top.err"))


def t_sampled(t):
    """A sampled trace: the heap and peak are the report's estimates, the
    counts its exact ones once the trace has ended, and the frame says so."""
    d = str(t.tmp)
    trace = os.path.join(d, "s.ht")
    r = run([HT, "run", "--sample-rate", "4K", "--sample-seed", "7", "-o", trace, PROGS / "peak"], 60)
    t.need(r.rc == 0, "peak under heaptrail run --sample-rate: %s" % r.describe())
    r = run([TOP_CLI, "top", "--once", trace], 60, env=asan_env())
    t.need(r.rc == 0, "top --once: %s: %s" % (r.describe(), tail(r.err)))
    s = text(r.out)
    tot = final_report(t, trace)["totals"]
    t.eq("peak: top vs report", tot["peak_heap_bytes"], peak_line(s))
    t.eq("heap at the end: top vs report", (tot["leaked_bytes"], tot["leaked_blocks"]), heap_line(s))
    m = re.search(r"allocations\s+([\d,]+) .* frees ([\d,]+)", s)
    t.eq("allocations and frees: top vs report (exact, from the END)",
         (tot["allocations"], tot["frees"]), m and (num(m.group(1)), num(m.group(2))))
    t.check("sampled: one allocation per 4.00 KiB" in s, "the frame does not say it is sampled:\n" + s)


TESTS = [
    ("top.live_pid", t_live_pid),
    ("top.growing_file", t_growing_file),
    ("top.run_live", t_run_live),
    ("top.bad_targets", t_bad_targets),
    ("top.ctrl_c", t_ctrl_c),
    ("top.threads_live", t_threads_live),
    ("top.sampled", t_sampled),
]
