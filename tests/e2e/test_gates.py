"""test_gates.py - gates for CI (`heaptrail check`, `diff --fail-if`), the
command-line conventions and failing early, end to end.

  gates.diff         diffprog 1 -> 2 (tests/programs/diffprog.c): each
                     condition holds exactly when the figures the program
                     constructs say; exit status 3 when one holds, 0 when
                     none; the lines on stderr; JUnit XML that parses, one
                     testcase per condition, failures where they hold
  gates.check        limits on one trace: leak_classes list (1 definite
                     block, 9 indirect) checked against its report's own
                     figures, a site's figure, a figure the trace does not
                     record (sampled: temporary allocations) failing with
                     the reason, usage errors (2) and an unreadable trace (1)
  gates.junit_names  a condition naming a C++-like function with < & " is
                     escaped in the XML, which still parses
  cli.subcommand_help  COMMAND --help prints that command's section only;
                     every option of the help is one the parser takes, and
                     --list-options (what completion reads) lists the same
  cli.did_you_mean   a mistyped option: one line with the nearest option,
                     then the usage hint; nothing near: no guess
  cli.short_options  -f and -n give what --format and --top give; -o for
                     convert
  cli.size_suffix    run --sample-rate 512K records a rate of 524288
  cli.completion     bash: sourcing completion/heaptrail.bash registers
                     it (complete -p) and it completes commands, options,
                     option values; make install puts both scripts in place
  failearly.output_dir  run -o under a missing directory or a file: status
                     2, the program never starts
  failearly.sigpipe  run --summary with its stderr read by a reader that
                     leaves after one line: FILE.json is written, the status
                     is the program's
  failearly.compress convert -o X.zst / X.gz: zstd -d and gzip -d give the
                     plain export back, which heaptrack_print reads
"""

import json
import os
import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET

from harness import (HT, PROGS, ROOT, SANITIZER_RE, asan_env, heaptrail_run, memo, need_tools,
                     report, report_cli, run, tail, text)

TIMEOUT = 60
DIFFPROG = PROGS / "diffprog"


def trace(t, args, opts=()):
    """Memoised: a program under heaptrail run; the trace path."""
    need_tools(t)
    prog = PROGS / args[0]
    t.need(prog.exists(), "%s not built (make programs)" % prog)

    def go():
        tr = heaptrail_run([prog] + list(args[1:]), opts, timeout=TIMEOUT)
        if not tr.out_path.exists():
            return None, "heaptrail run: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        return tr.out_path, None
    path, err = memo(("gates", tuple(args), tuple(opts)), go)
    if err:
        t.fatal(err)
    return path


def ht(t, args, want_rc=None, cli=None):
    """heaptrail ARGS with the ASan CLI (cli: another binary)."""
    p = run([cli or report_cli()] + [str(a) for a in args], TIMEOUT, env=asan_env())
    if SANITIZER_RE.search(text(p.err)):
        t.fatal("sanitizer error in %s: %s" % (p.describe(), tail(p.err, 1500)))
    if want_rc is not None:
        t.need(p.rc == want_rc, "%s: expected exit %d: %s" % (p.describe(), want_rc,
                                                               tail(p.err + p.out)))
    return p


def gate_lines(s):
    """{condition: (outcome, detail)} from the printed results."""
    out = {}
    for m in re.finditer(r"^  (pass|FAIL)  (.*?): (.*)$", s, re.M):
        out[m.group(2)] = (m.group(1), m.group(3))
    return out


def junit(t, path):
    """{testcase name: "pass" | "failure" | "error"} and the suite's counts."""
    try:
        root = ET.parse(str(path)).getroot()
    except (ET.ParseError, OSError) as e:
        t.fatal("%s does not parse as XML: %s" % (path, e))
    t.eq("JUnit root", "testsuites", root.tag)
    cases = {}
    for tc in root.iter("testcase"):
        kind = "pass"
        for k in ("failure", "error"):
            if tc.find(k) is not None:
                kind = k
        cases[tc.get("name")] = kind
    suite = root.find("testsuite")
    return cases, suite


# diffprog 1 -> 2: peak 1000 -> 2000 (+100%), allocations 20 -> 30 (+50%),
# grow's bytes 1000 -> 2000 (+1000), only_new 0 -> 600 (new), frees 19 ->
# 28, temporary 15 -> 24. Condition: holds?
DIFF_GATES = {
    "peak_heap_bytes>+10%": True,
    "peak_heap_bytes>+100%": False,
    "peak_heap_bytes>=+100%": True,
    "allocations>+50%": False,
    "allocations>=+50%": True,
    "allocations>+9": True,
    "allocations>+10": False,
    "peak_heap_bytes>1999": True,       # NEW's own figure
    "peak_heap_bytes>1.95KiB": True,    # 1996.8
    "peak_heap_bytes>2K": False,        # 2048
    "site:grow bytes_allocated>+999": True,
    "site:grow bytes_allocated>+1000": False,
    "site:only_new allocations>+2": True,
    "site:only_old allocations<-3": True,
    "site:steady allocations!=+0": False,
    "leaked_bytes>+1000": False,
    "leaked_bytes>=+1000": True,
}


def t_diff(t):
    base, new = trace(t, ["diffprog", "1"]), trace(t, ["diffprog", "2"])
    args = ["diff", base, new]
    for g in DIFF_GATES:
        args += ["--fail-if", g]
    xml = t.tmp / "diff.xml"
    p = ht(t, args + ["--junit", xml], want_rc=3)
    t.check("TOTALS" in text(p.out), "the diff itself is not on stdout: %s" % tail(p.out))
    got = gate_lines(text(p.err))
    for g, holds in DIFF_GATES.items():
        if t.check(g in got, "no result line for %s: %s" % (g, tail(p.err, 2000))):
            t.eq("%s holds" % g, holds, got[g][0] == "FAIL")
    t.check("peak_heap_bytes 1000 B -> 1.95 KiB (2000 B), +1000 B, +100.0%" in
            got.get("peak_heap_bytes>+10%", ("", ""))[1],
            "the figures not shown: %s" % (got.get("peak_heap_bytes>+10%"),))
    nholds = sum(DIFF_GATES.values())
    t.check("conditions that hold: %d of %d: exit status 3" % (nholds, len(DIFF_GATES))
            in text(p.err), "no closing line: %s" % tail(p.err))
    cases, suite = junit(t, xml)
    t.eq("testcases", sorted(DIFF_GATES), sorted(cases))
    for g, holds in DIFF_GATES.items():
        t.eq("JUnit %s" % g, "failure" if holds else "pass", cases.get(g))
    t.eq("suite failures", str(nholds), suite.get("failures"))
    t.eq("suite tests", str(len(DIFF_GATES)), suite.get("tests"))
    # none holds: 0, and the JSON diff on stdout stays JSON
    p = ht(t, ["diff", "-f", "json", base, new, "--fail-if", "peak_heap_bytes>+100%",
               "--fail-if", "definite_bytes>+0"], want_rc=0)
    try:
        json.loads(text(p.out))
    except ValueError as e:
        t.check(False, "diff --format json with --fail-if is not JSON: %s" % e)
    t.check("conditions that hold: none of 2" in text(p.err), tail(p.err))
    # a diff without gates still exits 0 (the figures differ)
    ht(t, ["diff", base, new], want_rc=0)
    ht(t, ["diff", base, new, "--junit", xml], want_rc=2)  # --junit alone


def t_check(t):
    lc = trace(t, ["leak_classes", "list"])
    rep = report(lc)
    t.need(rep.data is not None, "report: %s" % rep.err)
    tot = rep.data["totals"]
    t.eq("leak_classes list: definite bytes (one 64-byte node)", 64, tot["definite_bytes"])
    t.eq("leak_classes list: indirect blocks", 9, tot["indirect_blocks"])
    peak = tot["peak_heap_bytes"]
    gates = {
        "definite_bytes>0": True,
        "definite_bytes>63": True,
        "definite_bytes>64": False,
        "indirect_blocks>=9": True,
        "indirect_blocks>9": False,
        "peak_heap_bytes>64MiB": False,
        "peak_heap_bytes>%d" % (peak - 1): True,
        "peak_heap_bytes>%d" % peak: False,
        "allocations==%d" % tot["allocations"]: True,
        "leaked_bytes<%d" % tot["leaked_bytes"]: False,
        "leaked_bytes<=%d" % tot["leaked_bytes"]: True,
    }
    xml = t.tmp / "check.xml"
    args = ["check", lc, "--junit", xml]
    for g in gates:
        args += ["--fail-if", g]
    p = ht(t, args, want_rc=3)
    got = gate_lines(text(p.out))
    for g, holds in gates.items():
        if t.check(g in got, "no result line for %s: %s" % (g, tail(p.out, 2000))):
            t.eq("%s holds" % g, holds, got[g][0] == "FAIL")
    t.check("definite_bytes 64 B" in got.get("definite_bytes>0", ("", ""))[1],
            "the figure not shown: %s" % (got.get("definite_bytes>0"),))
    cases, _ = junit(t, xml)
    t.eq("JUnit testcases", sorted(gates), sorted(cases))
    # none holds: 0
    ht(t, ["check", lc, "--fail-if", "peak_heap_bytes>64MiB", "--fail-if",
           "possible_bytes>0"], want_rc=0)
    # a site: the function that built the lost list
    p = ht(t, ["check", lc, "--fail-if", "site:nosuchfunction allocations>0"], want_rc=3)
    t.check("no allocation's stack passes through nosuchfunction" in text(p.out), tail(p.out))
    # a sampled trace does not record temporary allocations: fails, saying so
    sampled = trace(t, ["churn", "100000"], ["--sample-rate", "4096"])
    p = ht(t, ["check", sampled, "--fail-if", "temporary_allocations>1000000000"], want_rc=3)
    t.check("does not record temporary_allocations" in text(p.out), tail(p.out))
    # usage errors: a change in check, a mistyped figure, no condition
    p = ht(t, ["check", lc, "--fail-if", "peak_heap_bytes>+10%"], want_rc=2)
    t.check("heaptrail diff" in text(p.err), tail(p.err))
    p = ht(t, ["check", lc, "--fail-if", "peak_heap_byte>1M"], want_rc=2)
    t.check("did you mean peak_heap_bytes?" in text(p.err), tail(p.err))
    ht(t, ["check", lc], want_rc=2)
    ht(t, ["check", t.tmp / "missing.ht", "--fail-if", "definite_bytes>0"], want_rc=1)


def t_junit_names(t):
    lc = trace(t, ["leak_classes", "list"])
    xml = t.tmp / "names.xml"
    g = 'site:ns::f<a&b>("x") allocations>0'
    ht(t, ["check", lc, "--fail-if", g, "--junit", xml], want_rc=3)
    cases, _ = junit(t, xml)
    t.eq("the name survives the XML", [g], list(cases))
    t.eq("it is an error (the figure is unknown)", "error", cases.get(g))


COMMANDS = ("run", "report", "leaks", "diff", "check", "convert")


def help_options(s):
    return set(re.findall(r"^    (-[-\w]+)(?:, (--[-\w]+))?", s, re.M))


def t_subcommand_help(t):
    need_tools(t)
    full = ht(t, ["--help"], want_rc=0).out
    for cmd in COMMANDS:
        p = ht(t, [cmd, "--help"], want_rc=0)
        s = text(p.out)
        t.check(s.startswith("heaptrail %s " % cmd), "%s --help starts: %r" % (cmd, s[:80]))
        others = [c for c in COMMANDS if c != cmd and ("\nheaptrail %s [" % c in s or
                                                       s.startswith("heaptrail %s [" % c))]
        t.eq("%s --help: other commands' sections" % cmd, [], others)
        t.check(len(s) < len(text(full)), "%s --help is the whole help" % cmd)
        names = set()
        for m in re.finditer(r"^    (-[-\w]+)(?:, (--[-\w]+))?", s, re.M):
            names.update(x for x in m.groups() if x)
        listed = ht(t, ["--list-options", cmd], want_rc=0)
        lnames = {ln.split("\t")[0] for ln in text(listed.out).splitlines() if ln}
        t.eq("%s: --list-options = the help's options" % cmd, sorted(names), sorted(lnames))
        # each option of the help is one the parser takes
        for name in sorted(names):
            p = ht(t, [cmd, name, "x"] if cmd != "run" else [cmd, name, "1", "/nonexistent"])
            t.check("unknown option" not in text(p.err),
                    "%s: the help's %s is unknown to the parser: %s" % (cmd, name, tail(p.err)))
    t.eq("heaptrail help report = report --help", text(ht(t, ["report", "--help"]).out),
         text(ht(t, ["help", "report"]).out))


def t_did_you_mean(t):
    need_tools(t)
    p = ht(t, ["report", "--formt", "json", "x.ht"], want_rc=2)
    lines = text(p.err).splitlines()
    t.eq("lines on stderr", ["heaptrail: report: unknown option '--formt'; did you mean --format?",
                             "see heaptrail report --help for its usage"], lines)
    p = ht(t, ["diff", "--fail-iff=peak_heap_bytes>0", "a", "b"], want_rc=2)
    t.check("did you mean --fail-if?" in text(p.err), tail(p.err))
    p = ht(t, ["leaks", "--verbose", "x.ht"], want_rc=2)
    t.eq("nothing near: no guess", ["heaptrail: leaks: unknown option '--verbose'",
                                    "see heaptrail leaks --help for its usage"],
         text(p.err).splitlines())


def t_short_options(t):
    d1 = trace(t, ["diffprog", "1"])
    a = ht(t, ["report", "-f", "json", "-n", "2", d1], want_rc=0)
    b = ht(t, ["report", "--format", "json", "--top", "2", d1], want_rc=0)
    ja, jb = json.loads(text(a.out)), json.loads(text(b.out))
    t.eq("-n 2: sites", 2, len(ja["sites"]))
    ja["totals"].pop("duration_seconds", None)
    jb["totals"].pop("duration_seconds", None)
    t.eq("-f json -n 2 = --format json --top 2", jb["sites"], ja["sites"])
    c = ht(t, ["leaks", "-fjson", d1], want_rc=0)
    t.check(text(c.out).startswith('{"heaptrail_leaks"'), tail(c.out))
    out = t.tmp / "f.folded"
    ht(t, ["convert", "-f", "folded", "-o", out, d1], want_rc=0)
    t.check(out.exists() and ";" in out.read_text(), "convert -f folded -o wrote nothing")


def t_size_suffix(t):
    tr = trace(t, ["churn", "20000"], ["--sample-rate", "512K"])
    rep = report(tr)
    t.need(rep.data is not None, "report: %s" % rep.err)
    t.eq("sample rate of --sample-rate 512K", 524288, rep.data.get("sampled", {}).get("rate"))
    p = run([HT, "run", "--sample-rate", "512Q", "--", "/bin/true"], TIMEOUT)
    t.eq("--sample-rate 512Q: usage error", 2, p.rc)


BASH_COMPLETE = r'''
source "$1" || exit 9
complete -p heaptrail
c() { COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _heaptrail; echo "${COMPREPLY[*]}"; }
c "$2" che
c "$2" report --form
c "$2" report -f ""
c "$2" diff --match ""
c "$2" check --fail
c "$2" convert --format f
'''


def t_completion(t):
    need_tools(t)
    bash = shutil.which("bash")
    t.need(bash, "no bash")
    script = ROOT / "completion" / "heaptrail.bash"
    p = run([bash, "-c", BASH_COMPLETE, "bash", script, HT], TIMEOUT)
    t.eq("bash exit status", 0, p.rc)
    t.eq("completions", ["complete -F _heaptrail heaptrail", "check", "--format", "text json html",
                         "function line", "--fail-if", "flamegraph folded"],
         text(p.out).splitlines())
    zsh = (ROOT / "completion" / "_heaptrail").read_text()
    t.check(zsh.startswith("#compdef heaptrail"), "zsh script without #compdef")
    t.check("--list-options" in zsh, "zsh script does not read the options from heaptrail")
    root = t.tmp / "root"
    p = run(["make", "-s", "-C", str(ROOT), "install", "PREFIX=/usr", "DESTDIR=%s" % root], 300)
    t.need(p.rc == 0, "make install failed: %s" % tail(p.err))
    for f in ("usr/share/bash-completion/completions/heaptrail",
              "usr/share/zsh/site-functions/_heaptrail"):
        t.check((root / f).is_file(), "make install did not install %s" % f)
    man = (ROOT / "docs" / "heaptrail.1").read_text()
    t.check(re.search(r"^\.SH EXAMPLES", man, re.M), "the man page has no EXAMPLES")


def t_output_dir(t):
    need_tools(t)
    ran = t.tmp / "ran"
    afile = t.tmp / "afile"
    afile.write_text("")
    for out, why in ((t.tmp / "no" / "such" / "x.ht", "No such file or directory"),
                     (afile / "x.ht", "Not a directory")):
        p = run([HT, "run", "-o", out, "--", "/usr/bin/touch", ran], TIMEOUT)
        t.eq("-o %s: status" % out, 2, p.rc)
        t.check(why in text(p.err) and str(out.parent) in text(p.err),
                "-o %s: reason: %s" % (out, tail(p.err)))
        t.check(not ran.exists(), "-o %s: the program ran" % out)


def t_sigpipe(t):
    need_tools(t)
    d = t.tmp / "s"
    d.mkdir()
    out = d / "s.ht"
    # the program writes a line, then waits while the reader leaves; our
    # summary then meets a closed pipe
    cmd = [str(HT), "run", "--summary", "-o", str(out), "--", "/bin/sh", "-c",
           "echo first; sleep 1; exit 5"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    first = proc.stdout.readline()
    proc.stdout.close()
    try:
        rc = proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        t.fatal("heaptrail run did not end")
    t.eq("the line read", b"first\n", first)
    t.eq("status (the program's, not SIGPIPE's)", 5, rc)
    t.check((d / "s.ht.json").is_file(), "no JSON summary: %s" % sorted(os.listdir(d)))


def t_compress(t):
    need_tools(t)
    d2 = trace(t, ["diffprog", "2"])
    for tool in ("zstd", "gzip", "heaptrack_print"):
        t.need(shutil.which(tool), "no %s" % tool)
    plain = ht(t, ["convert", "-f", "heaptrack", d2], want_rc=0).out
    for ext, dec in ((".zst", ["zstd", "-dc"]), (".gz", ["gzip", "-dc"])):
        out = t.tmp / ("h" + ext)
        ht(t, ["convert", "-f", "heaptrack", "-o", out, d2], want_rc=0)
        p = run(dec + [out], TIMEOUT)
        t.eq("%s -d: status" % dec[0], 0, p.rc)
        t.eq("%s: decompressed = the plain export" % ext, plain, p.out)
        flat = t.tmp / ("h%s.txt" % ext)
        flat.write_bytes(p.out)
        hp = run(["heaptrack_print", flat], TIMEOUT)
        m = re.search(r"calls to allocation functions: (\d+)", text(hp.out))
        t.eq("%s: heaptrack_print's allocations (diffprog 2: 30)" % ext, "30",
             m and m.group(1))
    # pprof is gzip already: .gz leaves it so
    pb = t.tmp / "p.pb.gz"
    ht(t, ["convert", "-f", "pprof", "-o", pb, d2], want_rc=0)
    p = run(["gzip", "-dc", pb], TIMEOUT)
    t.check(p.rc == 0 and not p.out.startswith(b"\x1f\x8b"), "pprof .gz compressed twice")


TESTS = [
    ("gates.diff", t_diff),
    ("gates.check", t_check),
    ("gates.junit_names", t_junit_names),
    ("cli.subcommand_help", t_subcommand_help),
    ("cli.did_you_mean", t_did_you_mean),
    ("cli.short_options", t_short_options),
    ("cli.size_suffix", t_size_suffix),
    ("cli.completion", t_completion),
    ("failearly.output_dir", t_output_dir),
    ("failearly.sigpipe", t_sigpipe),
    ("failearly.compress", t_compress),
]
