"""test_stacks.py - stacks people can read: C++ names shortened, allocator
plumbing and allocation wrappers folded into one marker line, frames
without symbols labelled module+offset everywhere, the text fitted to a
width, colour only on a terminal.

  stacks.cxx_names        tests/programs/cxx_containers.cc (-g): every site's
                          first frame is the program's own (std::map,
                          std::vector, std::string plumbing folded, the marker
                          naming the outermost folded call); names shortened
                          (std::string, <>) and never cut; --full-names keeps
                          the demangler's; --no-fold shows the plumbing
  stacks.wrappers         tests/programs/xmalloc_wrapper.c: the sites start at
                          the callers of xmalloc, xcalloc, xrealloc, xstrdup,
                          with the figures known by construction; the text
                          has the marker line; --fold-frames folds pool_grab
  stacks.unsymbolized     a stripped copy of xmalloc_wrapper: the same
                          module+offset label in text, folded, flame graph and
                          JSON, runs of such frames one line, the hint once;
                          --debug-dir with its separate debug file (by
                          build-id) gives the names back
  stacks.git              git (stripped, if installed): the hint once, labels
                          git+0x... in text and flame graph, no ASLR address
  stacks.sqlite3          sqlite3 (if installed): no site starts in SQLite's
                          allocation wrappers
  stacks.unwind_fp        --unwind fp on code without frame pointers: run and
                          report warn; with frame pointers they do not
  stacks.sampled_zero     a sampled estimate of 0 says no sample bounds it
  stacks.growth_header    leaks --growth: the title counts what the list shows
  stacks.words            "lost" of "in use at exit" in the leak section, as
                          the JSON's figures; no "leaked" in the text report
                          or the flame graph
  stacks.width            --width 60 and a pty of 80 columns (`script`): no
                          line wider but for one word longer than the width,
                          the long C++ name whole across its lines; a pipe:
                          no wrapping
  stacks.color            colour on a pty only; NO_COLOR, --color never and
                          always
"""

import json
import os
import re
import shlex
import shutil
import subprocess

from harness import (HT, PROGS, SANITIZER_RE, SRC, asan_env, heaptrail_run, leaf, memo, need_tools,
                     report_cli, run, tail, text)

TIMEOUT = 120
CXX_SRC = str(SRC / "cxx_containers.cc")
XM_SRC = str(SRC / "xmalloc_wrapper.c")
LONG_NAME = "Deeply::Nested::Registry<>::register_entry(std::map<> const&, std::string const&)"


def traced(t, prog, args=(), binary=None, key=None):
    need_tools(t)
    p = binary or PROGS / prog
    t.need(os.path.exists(p), "%s not built (make programs)" % p)

    def go():
        tr = heaptrail_run([p] + list(args), out_name="%s.ht" % prog, timeout=TIMEOUT)
        if tr.proc.rc != 0 or not tr.out_path.exists():
            return None, "heaptrail run: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        return tr.out_path, None
    path, err = memo(("stacks", key or prog), go)
    if err:
        t.fatal(err)
    return path


def cli(t, args, asan=True, env=None, rc=0):
    e = asan_env()
    e.pop("NO_COLOR", None)
    e.update(env or {})
    p = run([report_cli() if asan else HT] + [str(a) for a in args], TIMEOUT, env=e)
    if SANITIZER_RE.search(text(p.err)):
        t.fatal("sanitizer error in %s: %s" % (p.describe(), tail(p.err, 1500)))
    if p.rc != rc or p.timed_out:
        t.fatal("%s: %s" % (p.describe(), tail(p.err)))
    return text(p.out)


def on_pty(t, args, cols=80, env=None, rc=0):
    """heaptrail ARGS on a pseudo-terminal of cols columns (script(1)): its
    output, with the pty's CRs taken out."""
    t.need(shutil.which("script"), "script(1) is not installed")
    cmd = "stty cols %d rows 50; exec %s" % (cols, " ".join(shlex.quote(str(a)) for a in [HT] + args))
    e = dict(os.environ)
    e.pop("NO_COLOR", None)
    e.update(env or {})
    p = run(["script", "-qec", cmd, "/dev/null"], TIMEOUT, env=e)
    if p.timed_out or p.rc != rc:
        t.fatal("script -c %r: %s: %s" % (cmd, p.describe(), tail(p.err)))
    return text(p.out).replace("\r\n", "\n")


def sites_by_leaf(rep):
    out = {}
    for s in rep.get("sites", []):
        out.setdefault(leaf(s), []).append(s)
    return out


def frames(rep):
    return [f for s in rep.get("sites", []) for f in s.get("stack", [])]


def t_cxx_names(t):
    path = traced(t, "cxx_containers")
    rep = json.loads(cli(t, ["report", "-f", "json", path]))
    own = {"make_names()", "fill_vector()", "fill_map()", LONG_NAME}
    by = sites_by_leaf(rep)
    # the program's own sites, by the first frame: the caller of the plumbing
    want = {"make_names()": (9, 8 * 41 + 8 * 32),  # 8 strings of 40+1, a reserve of 8
            "fill_vector()": (5, 8 * (1 + 2 + 4 + 8 + 16)),
            "fill_map()": (6, None), LONG_NAME: (4, None)}
    for fn, (n, b) in want.items():
        ss = by.get(fn, [])
        t.eq("%s: allocations of the sites starting there" % fn, n, sum(s["allocations"] for s in ss))
        if b is not None:
            t.eq("%s: bytes" % fn, b, sum(s["bytes_allocated"] for s in ss))
    for s in rep["sites"]:
        st = s.get("stack") or []
        if any(f.get("file") == CXX_SRC for f in st) and "libc.so" not in (st[0].get("module") or ""):
            t.check(leaf(s) in own, "a site of the program starts in %r, not in its own code: %s"
                    % (leaf(s), [f.get("function") for f in st[:4]]))
    vias = {f.get("folded_via") for f in frames(rep) if f.get("folded_frames")}
    t.check("std::map<>::operator[](std::string&&)" in vias,
            "no marker names std::map<>::operator[](std::string&&): %s" % sorted(map(str, vias)))
    t.check(any(v and v.startswith("std::vector<>::push_back(") for v in vias),
            "no marker names std::vector<>::push_back: %s" % sorted(map(str, vias)))
    names = [f.get("function") or "" for f in frames(rep)]
    t.check(not [n for n in names if "__cxx11" in n or "basic_string<char" in n],
            "long spellings left: %s" % [n for n in names if "__cxx11" in n][:3])
    # the text: the marker line, then the caller; names whole
    out = cli(t, ["report", path])
    t.check(re.search(r"^ +\[std::map<>::operator\[\]\(std::string&&\): \d+ allocator frames folded\]\n"
                      r" +fill_map\(\) ", out, re.M),
            "no marker line before fill_map(): %s" % tail(out.encode(), 1500))
    t.check(LONG_NAME in out, "the long name is not whole in the text")
    t.check("..." not in "".join(l for l in out.splitlines() if "(" in l and "::" in l),
            "a C++ name is cut with '...'")
    # --full-names: the demangler's spelling
    full = json.loads(cli(t, ["report", "-f", "json", "--full-names", path]))
    fnames = [f.get("function") or "" for f in frames(full)]
    t.check(any("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >" in n
                for n in fnames), "--full-names: no std::__cxx11::basic_string<char, ...> left")
    t.check(any(n.startswith("Deeply::Nested::Registry<std::") and "register_entry" in n for n in fnames),
            "--full-names: register_entry's template arguments are not kept")
    # --no-fold: the plumbing is back at the leaf
    nf = json.loads(cli(t, ["report", "-f", "json", "--no-fold", path]))
    leaves = {leaf(s) or "" for s in nf["sites"]}
    t.check(any(x.startswith("std::") or x.startswith("__gnu_cxx::") for x in leaves),
            "--no-fold: no site starts in the standard library: %s" % sorted(leaves))
    t.check(not any(f.get("folded_frames") for f in frames(nf)), "--no-fold: frames still folded")


def t_wrappers(t):
    path = traced(t, "xmalloc_wrapper")
    rep = json.loads(cli(t, ["report", "-f", "json", path]))
    by = sites_by_leaf(rep)
    got = {fn: (sum(s["allocations"] for s in ss), sum(s["bytes_allocated"] for s in ss))
           for fn, ss in by.items()}
    for fn, v in {"read_config": (3, 300), "parse_line": (2, 200), "grow_buffer": (2, 80),
                  "copy_name": (1, 10), "pool_grab": (1, 48)}.items():
        t.eq("%s: allocations, bytes" % fn, v, got.get(fn))
    for w in ("xmalloc", "xcalloc", "xrealloc", "xstrdup", "strdup", "__strdup", "malloc"):
        t.check(w not in by, "a site starts in the wrapper %s" % w)
    via = {(leaf(s), s["stack"][0].get("folded_via")) for s in rep["sites"] if s.get("stack")}
    t.check(("read_config", "xmalloc") in via and ("parse_line", "xcalloc") in via and
            ("copy_name", "xstrdup") in via, "markers: %s" % sorted(map(str, via)))
    out = cli(t, ["report", path])
    t.check(re.search(r"^ +\[xmalloc: 1 allocator frame folded\]\n +read_config +\S*xmalloc_wrapper\.c:\d+$",
                      out, re.M), "no marker line before read_config: %s" % tail(out.encode(), 1200))
    # a wrapper of the program's own, by --fold-frames
    rep2 = json.loads(cli(t, ["report", "-f", "json", "--fold-frames", "^pool_grab$", path]))
    by2 = sites_by_leaf(rep2)
    t.check("pool_grab" not in by2, "--fold-frames ^pool_grab$: a site still starts in pool_grab")
    t.eq("--fold-frames: use_pool's allocations", 1, sum(s["allocations"] for s in by2.get("use_pool", [])))
    p = run([HT, "report", "--fold-frames", "(", path], TIMEOUT)
    t.eq("--fold-frames with a bad regex: usage error", 2, p.rc)
    t.check("--fold-frames" in text(p.err), "the bad regex is not named: %s" % tail(p.err))


def stripped(t):
    """A stripped build of xmalloc_wrapper and its debug file under
    DIR/.build-id/xx/rest.debug: (binary, DIR)."""
    def go():
        d = t.tmp / "strip"
        d.mkdir()
        exe, dbg = d / "xmw", d / "xmw.debug"
        for cmd in (["cc", "-O0", "-g", "-fno-omit-frame-pointer", "-fno-builtin",
                     "-Wl,--build-id", "-o", exe, XM_SRC],
                    ["objcopy", "--only-keep-debug", exe, dbg],
                    ["strip", "--strip-all", exe]):
            p = run([str(c) for c in cmd], 120)
            if p.rc != 0:
                return None, "%s: %s" % (p.describe(), tail(p.err))
        ro = run(["readelf", "-n", str(exe)], 30)
        m = re.search(r"Build ID: ([0-9a-f]+)", text(ro.out))
        if not m:
            return None, "no build-id in %s" % exe
        bid = m.group(1)
        dd = d / "debug" / ".build-id" / bid[:2]
        dd.mkdir(parents=True)
        # only there: libdw would find xmw.debug beside xmw by its name
        shutil.move(str(dbg), str(dd / (bid[2:] + ".debug")))
        return (exe, d / "debug"), None
    r, err = memo(("stacks", "stripped"), go)
    if err:
        t.fatal(err)
    return r


def t_unsymbolized(t):
    exe, ddir = stripped(t)
    path = traced(t, "xmw", binary=exe, key="xmw")
    out = cli(t, ["report", "-n", "0", path])
    labels = set(re.findall(r"\bxmw\+0x[0-9a-f]+", out))
    t.check(labels, "no xmw+0x... label in the text: %s" % tail(out.encode(), 1500))
    t.eq("hints in the text", 1, out.count("hint: frames without symbols"))
    t.check(re.search(r"xmw\+0x[0-9a-f]+ \.\. xmw\+0x[0-9a-f]+  \(\d+ frames without symbols\)", out),
            "no run of frames without symbols on one line: %s" % tail(out.encode(), 1500))
    t.check("??" not in out, "?? in the text")
    rep = json.loads(cli(t, ["report", "-f", "json", path]))
    t.check(not any(f.get("function") for s in rep["sites"] for f in s["stack"]
                    if f.get("module") == str(exe)), "a frame of the stripped program has a name")
    folded = cli(t, ["convert", "-f", "folded", path])
    flabels = set(re.findall(r"\bxmw\+0x[0-9a-f]+", folded))
    t.check(flabels and flabels <= labels | flabels, "folded: no xmw+0x labels")
    svg = cli(t, ["convert", "-f", "flamegraph", path])
    slabels = set(re.findall(r"\bxmw\+0x[0-9a-f]+", svg))
    t.check(slabels, "flame graph: no xmw+0x labels")
    t.check("[xmw] 0x" not in svg, "flame graph: an ASLR address label")
    t.eq("the same labels in folded and flame graph", flabels, slabels)
    t.check(labels <= flabels, "text labels not in the folded export: %s" % sorted(labels - flabels))
    ev = cli(t, ["convert", "-f", "events", path])
    elabels = set()
    for ln in ev.splitlines():
        o = json.loads(ln)
        if o.get("kind") == "stack":
            elabels |= {f.get("label") for f in o["frames"] if f.get("name") is None}
    t.check(labels <= elabels, "events export: labels %s, text %s" % (sorted(map(str, elabels))[:4],
                                                                   sorted(labels)[:4]))
    html = t.tmp / "u.html"
    cli(t, ["report", "-f", "html", "-o", html, path])
    m = re.search(r'<script type="application/json"[^>]*>(.*?)</script>', html.read_text(), re.S)
    t.need(m, "no data in the HTML report")
    hl = {fr[5] for fr in json.loads(m.group(1))["frames"] if fr[0] is None and len(fr) > 5}
    t.check(labels <= hl, "HTML report: labels %s, text %s" % (sorted(hl)[:4], sorted(labels)[:4]))
    # --debug-dir: the separate debug file by build-id gives the names back
    rep2 = json.loads(cli(t, ["report", "-f", "json", "--debug-dir", ddir, path]))
    by = sites_by_leaf(rep2)
    t.eq("--debug-dir: read_config's allocations (xmalloc folded)", 3,
         sum(s["allocations"] for s in by.get("read_config", [])))
    out2 = cli(t, ["report", "--debug-dir", ddir, path])
    t.check("hint: frames without symbols" not in out2.split("LEAKS")[0] or "xmw+0x" not in out2,
            "--debug-dir: frames of the program still without symbols")
    p = run([HT, "report", "--debug-dir", t.tmp / "nope", path], TIMEOUT)
    t.eq("--debug-dir of no directory: usage error", 2, p.rc)


def t_git(t):
    git = shutil.which("git")
    if not git:
        from harness import Skip
        raise Skip("git is not installed")
    need_tools(t)
    repo = t.tmp / "repo"
    tr = heaptrail_run([git, "init", "-q", str(repo)], out_name="git.ht", timeout=TIMEOUT)
    t.need(tr.proc.rc == 0 and tr.out_path.exists(), "heaptrail run git init: %s" % tr.proc.describe())
    out = cli(t, ["report", "-n", "0", tr.out_path])
    if "git+0x" not in out:
        from harness import Skip
        raise Skip("git has symbols here: nothing to collapse")
    t.eq("hints", 1, out.count("hint: frames without symbols"))
    t.check(not re.search(r"0x7f[0-9a-f]{10}", out), "an ASLR address in the text")
    svg = cli(t, ["convert", "-f", "flamegraph", tr.out_path])
    t.check("git+0x" in svg and "[git] 0x" not in svg, "flame graph labels of git's frames")


def t_sqlite3(t):
    """sqlite3 (if installed): no site starts in SQLite's allocation
    wrappers, the frames without symbols between them folded too; the hint
    once in the text."""
    sq = shutil.which("sqlite3")
    if not sq:
        from harness import Skip
        raise Skip("sqlite3 is not installed")
    need_tools(t)
    tr = heaptrail_run([sq, ":memory:", "create table t(x text); "
                        "insert into t values(hex(randomblob(100))); select count(*) from t;"],
                       out_name="sq.ht", timeout=TIMEOUT)
    t.need(tr.proc.rc == 0 and tr.out_path.exists(), "heaptrail run sqlite3: %s" % tr.proc.describe())
    rep = json.loads(cli(t, ["report", "-f", "json", tr.out_path]))
    wrappers = {"sqlite3Malloc", "sqlite3MallocZero", "sqlite3DbMallocRaw", "sqlite3DbMallocRawNN",
                "sqlite3DbMallocZero", "sqlite3_malloc", "sqlite3_malloc64", "sqlite3Realloc",
                "sqlite3DbRealloc", "sqlite3MemMalloc", "mallocWithAlarm", "dbMallocRawFinish"}
    starts = {leaf(s) for s in rep["sites"]}
    t.check(not (starts & wrappers), "sites start in SQLite's wrappers: %s" % sorted(starts & wrappers))
    vias = {s["stack"][0].get("folded_via") for s in rep["sites"] if s.get("stack")}
    t.check(vias & wrappers, "no site folded through SQLite's wrappers: %s" % sorted(map(str, vias))[:6])
    out = cli(t, ["report", tr.out_path])
    t.check(out.count("hint: frames without symbols") <= 1, "the hint more than once")


def lines_over(out, width):
    """Lines wider than width that are more than one word past their
    indentation (a word longer than the width may overflow)."""
    bad = []
    for ln in out.splitlines():
        plain = re.sub(r"\x1b\[[0-9;]*m", "", ln)
        if len(plain) > width and " " in plain.strip():
            bad.append(plain)
    return bad


def t_width(t):
    path = traced(t, "cxx_containers")
    out = cli(t, ["report", "--width", "60", path])
    bad = lines_over(out, 60)
    t.check(not bad, "--width 60: %d lines wider: %s" % (len(bad), bad[:3]))
    joined = re.sub(r"(,|\()\n +", lambda m: ", " if m.group(1) == "," else "(", out)
    t.check(LONG_NAME in joined, "--width 60: the long name is not whole across its lines")
    t.check(LONG_NAME not in out, "--width 60: the long name was not wrapped")
    # a pipe: lines as long as their content
    wide = cli(t, ["report", path])
    t.check(any(len(ln) > 100 and LONG_NAME in ln for ln in wide.splitlines()),
            "a pipe without --width: the long name's line was wrapped")
    # a terminal of 80 columns
    tty = on_pty(t, ["report", "--color", "never", path], cols=80)
    bad = lines_over(tty, 80)
    t.check(not bad, "pty of 80 columns: %d lines wider: %s" % (len(bad), bad[:3]))
    t.check("TOP SITES BY BYTES ALLOCATED" in tty, "pty: no report: %s" % tail(tty.encode(), 500))
    for cmd in (["leaks"], ["diff", path]):
        o = cli(t, cmd + ["--width", "60", path])
        t.check(not lines_over(o, 60), "%s --width 60: lines wider: %s" % (cmd[0], lines_over(o, 60)[:2]))
    p = run([HT, "report", "--width", "wide", path], TIMEOUT)
    t.eq("--width wide: usage error", 2, p.rc)


def t_color(t):
    path = traced(t, "xmalloc_wrapper")
    esc = "\x1b["
    t.check(esc in on_pty(t, ["report", path]), "a pty: no colour")
    t.check(esc in on_pty(t, ["leaks", path]), "leaks on a pty: no colour")
    t.check(esc in on_pty(t, ["diff", path, path]), "diff on a pty: no colour")
    t.check("\x1b[31mFAIL" in on_pty(t, ["check", "--fail-if", "allocations>0", path], rc=3),
            "check on a pty: FAIL not in red")
    t.check(esc not in on_pty(t, ["report", path], env={"NO_COLOR": "1"}), "NO_COLOR=1 on a pty: colour")
    t.check(esc not in on_pty(t, ["report", "--color", "never", path]), "--color never on a pty: colour")
    t.check(esc not in cli(t, ["report", path]), "a pipe: colour")
    t.check(esc in cli(t, ["report", "--color", "always", path]), "--color always in a pipe: no colour")
    t.check(esc not in cli(t, ["report", "-f", "json", "--color", "always", path]),
            "--color always: colour in the JSON")
    p = run([HT, "report", "--color", "sometimes", path], TIMEOUT)
    t.eq("--color sometimes: usage error", 2, p.rc)


NOFP_SRC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void *volatile keep[64];
__attribute__((noinline)) static void *work(int depth, size_t n)
{
	volatile char buf[64];
	memset((void *)buf, depth, sizeof buf);
	if (depth == 0)
		return malloc(n + buf[3]);
	void *p = work(depth - 1, n + 1);
	keep[depth] = malloc(n * 2 + buf[5]);
	return p;
}
__attribute__((noinline)) static void level(int k)
{
	for (int i = 0; i < 20; i++)
		free(work(i % 8 + k, 16 + i));
}
int main(void)
{
	for (int k = 0; k < 5; k++)
		level(k);
	return keep[1] == NULL;
}
"""


def t_unwind_fp(t):
    """--unwind fp on code without frame pointers: the stacks end in the
    program instead of where the thread started; run and report say so.
    The same source with frame pointers: no warning."""
    need_tools(t)
    src = t.tmp / "nofp.c"
    src.write_text(NOFP_SRC)
    WARN = "--unwind fp, but"
    for name, flags, warned in (("nofp", ["-O2", "-fomit-frame-pointer"], True),
                                ("withfp", ["-O0", "-fno-omit-frame-pointer"], False)):
        exe = t.tmp / name
        p = run(["cc", "-g"] + flags + ["-o", str(exe), str(src)], 120)
        t.need(p.rc == 0, "cc: %s" % tail(p.err))
        tr = heaptrail_run([exe], ["--unwind", "fp"], out_name=name + ".ht", timeout=TIMEOUT)
        t.need(tr.proc.rc == 0 and tr.out_path.exists(), "%s: %s" % (name, tr.proc.describe()))
        t.eq("%s: run warns" % name, warned, WARN in text(tr.proc.err))
        out = cli(t, ["report", tr.out_path])
        t.eq("%s: the report warns" % name, warned, WARN in out)
        if warned:
            t.check(re.search(r"stacks end before the thread's start \(the first in \S*nofp\)", out),
                    "the warning does not name the program: %s" % tail(out.encode(), 800))
        rep = json.loads(cli(t, ["report", "-f", "json", tr.out_path]))
        t.eq("%s: warning in the JSON" % name, warned,
             any(WARN in w for w in rep.get("warnings", [])))


def t_sampled_zero(t):
    """A sampled run whose blocks in use at exit got no sample: the
    estimate 0 says no sample bounds it, not +-0."""
    need_tools(t)
    tr = heaptrail_run([PROGS / "xmalloc_wrapper"], ["--sample-rate", "1M", "--sample-seed", "7"],
                       out_name="s.ht", timeout=TIMEOUT)
    t.need(tr.proc.rc == 0 and tr.out_path.exists(), "run: %s" % tr.proc.describe())
    out = cli(t, ["report", tr.out_path])
    line = next((ln for ln in out.splitlines() if ln.startswith("  in use at exit")), "")
    if "~0 B" not in line:
        from harness import Skip
        raise Skip("a block in use at exit was sampled with this seed: %r" % line)
    t.check("+-0" not in line, "in use at exit claims +-0: %r" % line)
    t.check(re.search(r"no sample: under (2\.9\d|3\.00) MiB at 95%", line), "no bound: %r" % line)


def t_growth_header(t):
    """leaks --growth: the title counts the rising sites the list shows and
    the suspects among them (tests/programs/growth.c: 3 rising, 1 suspect);
    with --top 1, "top 1 of 3"."""
    path = traced(t, "growth")
    out = cli(t, ["leaks", "--growth", path])
    m = re.search(r"^RISING SITES \((\d+); (\d+) suspects?\)", out, re.M)
    t.need(m, "no title counting the rising sites: %s" % tail(out.encode(), 600))
    listed = re.findall(r"^#\d+ +(SUSPECT|rising)", out, re.M)
    t.eq("rising sites in the title and in the list", int(m.group(1)), len(listed))
    t.eq("suspects in the title and in the list", int(m.group(2)), listed.count("SUSPECT"))
    t.eq("suspects (growth.c: cache_add)", 1, listed.count("SUSPECT"))
    o1 = cli(t, ["leaks", "--growth", "-n", "1", path])
    t.check(re.search(r"^RISING SITES \(top 1 of %d; " % len(listed), o1, re.M),
            "--top 1: the title does not say top 1 of %d: %s" % (len(listed), tail(o1.encode(), 300)))


def t_words(t):
    """The two words: the leak section says what was lost of what was in
    use at exit, with the JSON's figures (definite + indirect of
    leaked_bytes); the site lines say "in use at exit", never "leaked"."""
    path = traced(t, "leak_classes")
    tot = json.loads(cli(t, ["leaks", "-f", "json", path]))["totals"]
    out = cli(t, ["leaks", path])
    m = re.search(r"^  lost \(definitely and indirectly\): .*?\b([\d,]+) blocks?, of .*? in ([\d,]+) "
                  r"blocks? in use at exit$", out, re.M)
    t.need(m, "no lost line: %s" % tail(out.encode(), 600))
    t.eq("lost blocks", tot["definite_blocks"] + tot["indirect_blocks"], int(m.group(1).replace(",", "")))
    t.eq("blocks in use at exit", tot["leaked_blocks"], int(m.group(2).replace(",", "")))
    rep = cli(t, ["report", path])
    t.check(not re.search(r"\bleaked\b", rep), "the text report says leaked: %s" %
            [ln for ln in rep.splitlines() if re.search(r"\bleaked\b", ln)][:3])
    svg = cli(t, ["convert", "-f", "flamegraph", path])
    t.check("in use at exit" in svg and not re.search(r"\bleaked\b", svg), "flame graph words")


TESTS = [
    ("stacks.cxx_names", t_cxx_names),
    ("stacks.wrappers", t_wrappers),
    ("stacks.unsymbolized", t_unsymbolized),
    ("stacks.git", t_git),
    ("stacks.sqlite3", t_sqlite3),
    ("stacks.width", t_width),
    ("stacks.color", t_color),
    ("stacks.unwind_fp", t_unwind_fp),
    ("stacks.sampled_zero", t_sampled_zero),
    ("stacks.growth_header", t_growth_header),
    ("stacks.words", t_words),
]
