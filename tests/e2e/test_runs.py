"""test_runs.py - a run of several processes as one thing: the run file
`heaptrail run` writes beside the traces, and report, leaks, convert and
diff given a run, a directory, several traces or standard input.

  runs.tree        run_tree.c's processes (each prints its pid and parent):
                   the run file's rows, the empty pre-exec image left out,
                   the table of the report and its JSON, --pid, --program,
                   a directory, several traces, the leaks of a run
  runs.gcc         the gcc driver compiling and linking a file: driver, cc1,
                   as, collect2 and ld, with their parents
  runs.make        make -j2 of a small project: a tree rooted at make, every
                   trace in the directory listed
  runs.shell       a shell script running a few programs, each the shell's
                   child; the hint about frames without symbols shown once
  runs.stdin       `-` reads the trace from standard input (a file or a pipe)
  runs.diff        two runs compared by program; --program picks one
  runs.gdb         run --gdb: each stop selects the program's frame
  runs.gdb_children  run --gdb: a child that reaches the number is not
                   stopped and not killed
"""

import json
import os
import re
import shutil
import subprocess

from harness import (HT, PROGS, SRC, marker_line, need_tools, report_cli, run, scratch_dir,
                     tail, text)

TIMEOUT = 120
GCC = shutil.which("gcc")
MAKE = shutil.which("make")
GDB = shutil.which("gdb")


def run_in(t, d, args, opts=()):
    """`heaptrail run OPTS -- ARGS` in directory d (default trace names)."""
    p = run([HT, "run"] + list(opts) + ["--"] + list(args), TIMEOUT, cwd=d)
    t.need(not p.timed_out, "timed out: %s" % p.describe())
    return p


def runfile(t, d):
    """The one run file in d, and its rows {pid: (trace, parent, program, ended)}."""
    runs = sorted(f for f in os.listdir(d) if f.endswith(".run"))
    t.need(len(runs) == 1, "one run file expected in %s, found %s" % (d, os.listdir(d)))
    path = os.path.join(d, runs[0])
    rows, order = {}, []
    with open(path) as f:
        lines = f.read().splitlines()
    t.eq("first line of the run file", "# heaptrail run", lines[0])
    for line in lines:
        if line.startswith("#"):
            continue
        trace, pid, parent, program, ended = line.split("\t")
        rows[int(pid)] = (trace, int(parent), program, ended)
        order.append(int(pid))
    return path, rows, order


def ht(t, args, rc=0, stdin=subprocess.DEVNULL, cwd=None):
    p = run([report_cli()] + list(args), TIMEOUT, stdin=stdin, cwd=cwd)
    t.need(not p.timed_out, "timed out: %s" % p.describe())
    if rc is not None:
        t.need(p.rc == rc, "%s: exit %s, not %s: %s" % (p.describe(), p.rc, rc, tail(p.err)))
    return p


def ht_json(t, args, **kw):
    p = ht(t, args, **kw)
    try:
        return json.loads(text(p.out))
    except ValueError as e:
        t.fatal("%s: not JSON (%s): %s" % (p.describe(), e, tail(p.out)))


def tree_run(t):
    """run_tree in a fresh directory: (dir, process output, roles {role: (pid, parent)})."""
    need_tools(t)
    d = scratch_dir("tree")
    p = run_in(t, d, [PROGS / "run_tree"])
    t.need(p.rc == 0, "%s: %s" % (p.describe(), tail(p.err)))
    roles = {}
    for m in re.finditer(r"^role (\w+) pid (\d+) parent (\d+)$", text(p.out), re.M):
        roles[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    t.need(set(roles) == {"root", "worker", "leaf", "killed"}, "roles printed: %s" % roles)
    return d, p, roles


def t_tree(t):
    d, p, roles = tree_run(t)
    path, rows, order = runfile(t, d)
    root = roles["root"][0]
    want = {roles["root"][0]: (roles["root"][1], "exit 0"),
            roles["worker"][0]: (root, "_exit 3"),
            roles["leaf"][0]: (root, "exit 0"),
            roles["killed"][0]: (root, "signal 15 (SIGTERM)")}
    t.eq("run file: pid -> (parent, ended)", want,
         {pid: (r[1], r[3]) for pid, r in rows.items()})
    t.eq("run file: programs", {"run_tree"}, {r[2] for r in rows.values()})
    t.eq("the root process first", root, order[0])
    # the leaf's fork-then-exec image allocated nothing: no trace of it;
    # the leaf itself takes the name
    traces = sorted(f for f in os.listdir(d) if ".ht" in f)
    t.eq("trace files in the directory", sorted(r[0] for r in rows.values()), traces)
    t.eq("the leaf's trace name", "heaptrail.run_tree.%d.ht" % roles["leaf"][0],
         rows[roles["leaf"][0]][0])
    err = text(p.err)
    t.check(re.search(r"most allocated by run_tree, pid %d:" % roles["leaf"][0], err),
            "the summary does not name the leaf as allocating most:\n%s" % err[-1500:])
    name = os.path.basename(path)
    t.check("heaptrail: the whole run: heaptrail report %s" % name in err,
            "no command for the whole run:\n%s" % err[-1500:])
    t.check("(pid %d run_tree)" % roles["worker"][0] in err,
            "the list of traces does not name the worker's program:\n%s" % err[-1500:])

    # the report of the run: the table, in the order the processes started
    data = ht_json(t, ["report", "-f", "json", path])
    t.eq("JSON members", ["heaptrail_run", "source", "command", "processes", "sites"],
         list(data))
    procs = {pr["pid"]: pr for pr in data["processes"]}
    t.eq("JSON processes: pid -> parent", {pid: w[0] for pid, w in want.items()},
         {pid: pr["parent"] for pid, pr in procs.items()})
    t.eq("JSON process member order", ["program", "pid", "parent", "trace", "allocations",
                                       "bytes_allocated", "peak_heap_bytes", "lost_bytes",
                                       "in_use_at_exit_bytes", "ended"],
         list(data["processes"][0]))
    t.eq("the root's bytes", 1000, procs[root]["bytes_allocated"])
    t.eq("the worker's bytes and peak", (15000, 5000),
         (procs[roles["worker"][0]]["bytes_allocated"], procs[roles["worker"][0]]["peak_heap_bytes"]))
    t.eq("the killed child's bytes", 64, procs[roles["killed"][0]]["bytes_allocated"])
    leaf = procs[roles["leaf"][0]]
    t.check(leaf["bytes_allocated"] >= 20700, "the leaf allocated %s" % leaf["bytes_allocated"])
    t.eq("the leaf's lost bytes", 700, leaf["lost_bytes"])
    t.eq("the first site is the leaf's 20000 bytes", (roles["leaf"][0], 20000),
         (data["sites"][0]["pid"], data["sites"][0]["bytes_allocated"]))
    t.eq("its leaf frame's line", marker_line(SRC / "run_tree.c", "RUN_TREE_LEAF"),
         data["sites"][0]["frames"][0].get("line"))

    txt = text(ht(t, ["report", path]).out)
    table = re.findall(r"^  run_tree\s+(\d+)\s+(\d+)\s.*\s(exit 0|_exit 3|signal 15 \(SIGTERM\))$",
                       txt, re.M)
    t.eq("text table rows (pid, parent, ended)",
         sorted((str(pid), str(w[0]), w[1]) for pid, w in want.items()), sorted(table))
    t.check(txt.index("PROCESSES") < txt.index("TOP SITES OF ALL PROCESSES"),
            "the table does not come first:\n%s" % txt[:1500])
    t.check("run_tree (pid %d): 19.5 KiB in 1 allocation," % roles["leaf"][0] in txt,
            "the first site does not name its process:\n%s" % txt[:2500])

    # one process: --pid, --program (ambiguous here), a directory, traces
    one = ht_json(t, ["report", "-f", "json", "--pid", str(roles["worker"][0]), path])
    t.eq("--pid worker: its bytes", 15000, one["totals"]["bytes_allocated"])
    amb = ht(t, ["report", "--program", "run_tree", path], rc=1)
    t.check("4 processes of run_tree; pick one with --pid" in text(amb.err),
            "--program of 4 processes: %s" % tail(amb.err))
    nop = ht(t, ["report", "--pid", "1", path], rc=1)
    t.check(re.search(r"no process .*it holds:", text(nop.err)), "--pid 1: %s" % tail(nop.err))
    cv = ht(t, ["convert", "-f", "pprof", "-o", str(d / "x.pb.gz"), path], rc=2)
    t.check("pick one with --pid or --program" in text(cv.err), "convert: %s" % tail(cv.err))
    fold = text(ht(t, ["convert", "-f", "folded", path]).out).splitlines()
    roots = {int(m.group(1)) for m in (re.match(r"run_tree \(pid (\d+)\);\S", l) for l in fold) if m}
    t.eq("folded of the run: a root frame per process", sorted(want), sorted(roots))
    t.eq("folded lines without a process root", [],
         [l for l in fold if not re.match(r"run_tree \(pid \d+\);", l)][:3])
    cv1 = ht(t, ["convert", "-f", "folded", "--pid", str(roles["worker"][0]), path])
    t.check("main" in text(cv1.out), "convert --pid: %s" % tail(cv1.out))
    ck = ht(t, ["check", "--pid", str(roles["worker"][0]), "--fail-if", "bytes_allocated>14000",
                path], rc=3)
    t.check("bytes_allocated>14000" in text(ck.out), "check --pid: %s" % tail(ck.out))
    ht(t, ["check", "--pid", str(roles["worker"][0]), "--fail-if", "bytes_allocated>15000", path])
    ht(t, ["check", "--fail-if", "bytes_allocated>1", path], rc=2)
    dirj = ht_json(t, ["report", "-f", "json", str(d)])
    t.eq("a directory: its processes", sorted(procs), sorted(pr["pid"] for pr in dirj["processes"]))
    two = [os.path.join(d, rows[root][0]), os.path.join(d, rows[roles["worker"][0]][0])]
    twoj = ht_json(t, ["report", "-f", "json"] + two)
    t.eq("two traces: their processes", sorted([root, roles["worker"][0]]),
         sorted(pr["pid"] for pr in twoj["processes"]))
    # a trace of the run gone: the others are still reported, and the status says so
    broken = os.path.join(d, "broken.run")
    with open(path) as f, open(broken, "w") as g:
        g.write(f.read() + "gone.ht\t99999\t%d\trun_tree\texit 0\n" % root)
    br = ht(t, ["report", broken], rc=1)
    t.check(re.search(r"^  run_tree\s+99999\s.*unreadable$", text(br.out), re.M)
            and "4 processes" not in text(br.out) and "5 processes" in text(br.out),
            "a run with a missing trace:\n%s" % tail(br.out, 1500))
    os.unlink(broken)
    lk = text(ht(t, ["leaks", path]).out)
    t.check("== run_tree, pid %d:" % roles["leaf"][0] in lk and "definitely lost" in lk,
            "leaks of the run: no section of the leaf:\n%s" % lk[-2000:])


def proc_rows(t, d):
    path, rows, order = runfile(t, d)
    traces = sorted(f for f in os.listdir(d) if ".ht" in f)
    t.eq("every trace in the directory is in the run file",
         traces, sorted(r[0] for r in rows.values()))
    return path, rows, order


def t_gcc(t):
    need_tools(t)
    t.need(GCC, "gcc not installed")
    d = scratch_dir("gcc")
    (d / "hello.c").write_text('#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n')
    p = run_in(t, d, ["gcc", "-o", "hello", "hello.c"])
    t.need(p.rc == 0, "%s: %s" % (p.describe(), tail(p.err)))
    path, rows, order = proc_rows(t, d)
    by_prog = {}
    for pid, r in rows.items():
        by_prog.setdefault(r[2], []).append(pid)
    driver = order[0]
    t.check("gcc" in rows[driver][2], "the first process is not the driver: %s" % rows[driver][2])

    def one(pred, what):
        got = [pid for pid, r in rows.items() if pred(r[2])]
        t.need(len(got) == 1, "one %s expected: %s" % (what, {k: v[2] for k, v in rows.items()}))
        return got[0]
    cc1 = one(lambda n: n == "cc1", "cc1")
    as_ = one(lambda n: n == "as" or n.endswith("-as"), "as")
    collect2 = one(lambda n: n == "collect2", "collect2")
    ld = one(lambda n: n == "ld" or n.startswith("ld.") or "-ld" in n, "ld")
    t.eq("parents of cc1, as, collect2, ld",
         [driver, driver, driver, collect2],
         [rows[cc1][1], rows[as_][1], rows[collect2][1], rows[ld][1]])
    t.eq("every process exited 0", {"exit 0"}, {r[3] for r in rows.values()})
    data = ht_json(t, ["report", "-f", "json", path])
    most = max(data["processes"], key=lambda pr: pr["bytes_allocated"])
    t.check(re.search(r"most allocated by %s, pid %d:" % (re.escape(most["program"]), most["pid"]),
                      text(p.err)),
            "the summary's heaviest process is not the report's %s:\n%s" % (most, tail(p.err)))


def t_make(t):
    need_tools(t)
    t.need(GCC and MAKE, "gcc or make not installed")
    d = scratch_dir("make")
    (d / "a.c").write_text("int a(void) { return 1; }\n")
    (d / "b.c").write_text("int a(void);\nint main(void) { return a() - 1; }\n")
    (d / "Makefile").write_text("prog: a.o b.o\n\tgcc -o $@ a.o b.o\n%.o: %.c\n\tgcc -c -o $@ $<\n")
    p = run_in(t, d, ["make", "-j2"])
    t.need(p.rc == 0, "%s: %s" % (p.describe(), tail(p.err)))
    path, rows, order = proc_rows(t, d)
    root = order[0]
    t.eq("the root process", "make", rows[root][2])
    progs = sorted(r[2] for r in rows.values())
    t.eq("cc1 processes", 2, progs.count("cc1"))
    drivers = [pid for pid, r in rows.items() if "gcc" in r[2]]
    t.eq("gcc drivers", 3, len(drivers))
    # a tree rooted at make: every other parent is a process of the run
    t.eq("processes whose parent is not in the run", [root],
         [pid for pid, r in rows.items() if r[1] not in rows])
    t.eq("the drivers' parent", {root}, {rows[pid][1] for pid in drivers})
    t.eq("cc1's parents are drivers", True,
         all(rows[pid][1] in drivers for pid, r in rows.items() if r[2] == "cc1"))
    data = ht_json(t, ["report", "-f", "json", str(d)])
    t.eq("the directory's report: its processes", sorted(rows),
         sorted(pr["pid"] for pr in data["processes"]))


def t_shell(t):
    need_tools(t)
    d = scratch_dir("shell")
    script = d / "s.sh"
    script.write_text("#!/bin/sh\nls / >/dev/null\ncat /etc/passwd >/dev/null\n"
                      "echo $$ > sh.pid\nsort /etc/passwd > /dev/null\nexit 4\n")
    script.chmod(0o755)
    p = run_in(t, d, ["/bin/sh", str(script)])
    t.eq("the script's status", 4, p.rc)
    path, rows, order = proc_rows(t, d)
    sh = int((d / "sh.pid").read_text())
    t.eq("the first process is the shell", sh, order[0])
    t.check(rows[sh][3] in ("exit 4", "_exit 4"), "the shell's ending: %s" % rows[sh][3])
    kids = sorted(r[2] for pid, r in rows.items() if pid != sh)
    t.eq("the shell's children", ["cat", "ls", "sort"], kids)
    t.eq("their parent", {sh}, {r[1] for pid, r in rows.items() if pid != sh})
    # the hint about frames without symbols comes with the first stack
    # printed that has one, not with a stack read and never printed
    for cmd in (["report", "-n", "3"], ["leaks"]):
        out = text(ht(t, cmd + [path]).out)
        if re.search(r"\(\d+ frames without symbols\)|^     \S+\+0x[0-9a-f]+\s*$", out, re.M):
            t.eq("%s: hints" % cmd[0], 1, out.count("hint: frames without symbols"))


def t_stdin(t):
    d, _, roles = tree_run(t)
    path, rows, _ = runfile(t, d)
    trace = os.path.join(d, rows[roles["worker"][0]][0])
    want = ht_json(t, ["report", "-f", "json", trace])["totals"]
    with open(trace, "rb") as f:
        got = ht_json(t, ["report", "-f", "json", "-"], stdin=f)["totals"]
    t.eq("report - < trace: totals", want, got)
    data = open(trace, "rb").read()
    p = subprocess.run(["sh", "-c", 'cat "$1" | "$2" report -f json -', "sh", trace,
                        str(report_cli())], capture_output=True, timeout=TIMEOUT)
    t.need(p.returncode == 0, "cat | report -: %s" % p.stderr[-600:])
    t.eq("cat trace | report -: totals", want, json.loads(p.stdout)["totals"])
    t.check(len(data) > 0, "empty trace")
    bad = subprocess.run([str(report_cli()), "report", "-"], input=b"not a trace",
                         capture_output=True, timeout=TIMEOUT)
    t.check(bad.returncode == 1 and b"(standard input)" in bad.stderr,
            "garbage on stdin: rc %s: %s" % (bad.returncode, bad.stderr[-400:]))


def t_diff(t):
    d1, _, _ = tree_run(t)
    d2, _, _ = tree_run(t)
    p = ht(t, ["diff", str(d1), str(d2)])
    out = text(p.out)
    t.check(re.search(r"^  run_tree\s+4 -> 4\s", out, re.M),
            "diff of two runs: no run_tree row with 4 processes each:\n%s" % out)
    j = json.loads(text(ht(t, ["diff", "-f", "json", str(d1), str(d2)]).out))
    t.eq("JSON diff of runs: programs", ["run_tree"], [r["program"] for r in j["programs"]])
    t.eq("JSON diff: processes", (4, 4), (j["programs"][0]["base"]["processes"],
                                          j["programs"][0]["new"]["processes"]))
    amb = ht(t, ["diff", "--program", "run_tree", str(d1), str(d2)], rc=1)
    t.check("pick one with --pid" in text(amb.err), "ambiguous --program: %s" % tail(amb.err))


def gdb_session(t, args, opts, cmds):
    inp = "".join(c + "\n" for c in cmds).encode()
    d = scratch_dir("gdb")
    cmd = [str(HT), "run", "-o", str(d / "g.ht")] + opts + ["--gdb", "--"] + [str(a) for a in args]
    try:
        p = subprocess.run(cmd, input=inp, capture_output=True, timeout=TIMEOUT,
                           start_new_session=True)
    except subprocess.TimeoutExpired:
        t.fatal("run --gdb timed out: %s" % cmd)
    return text(p.stdout), text(p.stderr)


def t_gdb(t):
    need_tools(t)
    t.need(GDB, "gdb not installed")
    cmds = []
    for _ in range(3):
        cmds += ["echo ==STOP==\\n", "frame", "continue"]
    # gdb 13 now and then returns from a continue at the main thread's exit
    # event, before the process has exited: continue again (after the exit:
    # "The program is not being run")
    cmds += ["continue", "continue"]
    out, err = gdb_session(t, [PROGS / "leaks"], ["--break-alloc", "4+9"], cmds)
    src = SRC / "leaks.c"
    free_line = next(i for i, l in enumerate(src.read_text().splitlines(), 1) if "free(p[i]);" in l)
    want = [("leak_big", marker_line(src, "LEAK_BIG")), ("no_leak", marker_line(src, "NO_LEAK")),
            ("no_leak", free_line)]
    got = []
    # the frame selected at each stop, as `frame` prints it
    for s in out.split("==STOP==")[1:4]:
        m = re.search(r"#\d+\s+(?:0x\w+ in )?(\w+) \(.*?\) at \S*leaks\.c:(\d+)", s)
        got.append((m.group(1), int(m.group(2))) if m else s[:300])
    t.eq("the selected frame at each stop (function, line)", want, got)
    t.check("exited normally" in out, "the program did not run to its end:\n%s" % out[-1500:])


def t_gdb_children(t):
    need_tools(t)
    t.need(GDB, "gdb not installed")
    out, err = gdb_session(t, [PROGS / "run_tree"], ["--break-alloc", "1"],
                           ["echo ==STOP==\\n", "frame", "continue"] * 2 + ["continue"] * 2)
    stops = out.split("==STOP==")[1:]
    t.check(stops and re.search(r" main \(.*?\)\s+at \S*run_tree\.c:%d"
                                % marker_line(SRC / "run_tree.c", "RUN_TREE_ROOT"), stops[0], re.S),
            "the root's stop is not at its malloc(1000):\n%s" % out[-1500:])
    t.check("exited normally" in out, "the root did not exit 0 under gdb:\n%s" % out[-2000:])
    notstopped = re.findall(r"allocation 1 \(0x[0-9a-f]+\) made \(no debugger attached", out + err)
    t.eq("children that reached allocation 1 without a debugger", 3, len(notstopped))
    t.check("role worker" in out and "role leaf" in out, "children missing:\n%s" % out[-1500:])


TESTS = [
    ("runs.tree", t_tree),
    ("runs.gcc", t_gcc),
    ("runs.make", t_make),
    ("runs.shell", t_shell),
    ("runs.stdin", t_stdin),
    ("runs.diff", t_diff),
    ("runs.gdb", t_gdb),
    ("runs.gdb_children", t_gdb_children),
]
