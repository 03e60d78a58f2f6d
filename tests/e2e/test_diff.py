"""test_diff.py - `heaptrail diff BASE NEW`, end to end.

  diff.json          diffprog 1 -> diffprog 2 (tests/programs/diffprog.c):
                     every site's figures and status and the totals'
                     changes exactly as the program constructs them; each
                     side's totals equal its own report's
  diff.self          a trace against itself: every site "same", no change
  diff.text          the text output's header, totals and table rows
  diff.match_line    two builds of one source, one line inserted at the
                     top: --match function (the default) matches the
                     site, --match line sees it gone and new
  diff.sampled_summary  a sampled and a summary trace against a full one:
                     each side's figures are its report's, temporary
                     allocations unknown (null), said in the text
  diff.bad_input     usage errors exit 2; a missing file, a file that is
                     not a trace exit 1 naming it; a truncated trace is
                     warned about and compared as report reads it
"""

import json
import re

from harness import (HT, PROGS, SANITIZER_RE, asan_env, heaptrail_run, memo, need_report,
                     need_tools, report_cli, run, tail, text)

TIMEOUT = 60
DIFFPROG = PROGS / "diffprog"

# diffprog.c's sites by function: (allocations, bytes, frees, peak bytes,
# leaked blocks, leaked bytes, temporary) for N = 1 and N = 2; None: absent
FIGS = ("allocations", "bytes_allocated", "frees", "peak_bytes", "leaked_blocks", "leaked_bytes",
        "temporary_allocations")
SITES = {
    "grow": ((10, 1000, 10, 0, 0, 0, 10), (20, 2000, 20, 0, 0, 0, 20), "changed"),
    "steady": ((5, 320, 5, 0, 0, 0, 1), (5, 320, 5, 0, 0, 0, 1), "same"),
    "only_old": ((4, 200, 4, 0, 0, 0, 4), None, "gone"),
    "only_new": (None, (3, 600, 3, 0, 0, 0, 3), "new"),
    "leak": ((1, 1000, 0, 1000, 1, 1000, 0), (2, 2000, 0, 2000, 2, 2000, 0), "changed"),
}
# totals' changes 1 -> 2 (diffprog.c's header)
CHANGES = {"allocations": 10, "frees": 9, "bytes_allocated": 2400, "peak_heap_bytes": 1000,
           "leaked_bytes": 1000, "leaked_blocks": 1, "temporary_allocations": 9}


def trace(t, arg, opts=()):
    """Memoised: diffprog ARG under heaptrail run; the trace path."""
    need_tools(t)
    t.need(DIFFPROG.exists(), "%s not built (make programs)" % DIFFPROG)

    def go():
        tr = heaptrail_run([DIFFPROG, arg], opts, timeout=TIMEOUT)
        if tr.proc.rc != 0 or not tr.out_path.exists():
            return None, "heaptrail run: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        return tr.out_path, None
    path, err = memo(("diff", arg, tuple(opts)), go)
    if err:
        t.fatal(err)
    return path


def diff(t, args, fmt="json", want_rc=0):
    """`heaptrail diff --format FMT ARGS` with the ASan CLI: (Proc, JSON or None)."""
    p = run([report_cli(), "diff", "--format", fmt] + [str(a) for a in args], TIMEOUT,
            env=asan_env())
    if SANITIZER_RE.search(text(p.err)):
        t.fatal("sanitizer error in %s: %s" % (p.describe(), tail(p.err, 1500)))
    t.need(p.rc == want_rc, "%s: expected exit %d: %s" % (p.describe(), want_rc, tail(p.err)))
    if fmt != "json" or want_rc:
        return p, None
    try:
        return p, json.loads(text(p.out))
    except ValueError as e:
        t.fatal("diff output is not JSON (%s): %s" % (e, tail(p.out, 300)))


def by_leaf(data):
    out = {}
    for s in data.get("sites", []):
        fn = s["stack"][0]["function"] if s.get("stack") else None
        out.setdefault(fn, []).append(s)
    return out


def figs(side):
    return tuple(side.get(k) for k in FIGS)


def t_json(t):
    a, b = trace(t, "1"), trace(t, "2")
    _, d = diff(t, [a, b])
    t.eq("heaptrail_diff", 1, d.get("heaptrail_diff"))
    t.eq("match", "function", d.get("match"))
    rows = by_leaf(d)
    for fn, (base, new, status) in SITES.items():
        got = rows.get(fn, [])
        if not t.check(len(got) == 1, "site %s: %d rows" % (fn, len(got))):
            continue
        s = got[0]
        zero = (0,) * len(FIGS)
        t.eq("%s base" % fn, base or zero, figs(s["base"]))
        t.eq("%s new" % fn, new or zero, figs(s["new"]))
        t.eq("%s change" % fn, tuple(y - x for x, y in zip(base or zero, new or zero)),
             figs(s["change"]))
        t.eq("%s status" % fn, status, s.get("status"))
        t.eq("%s sites summed" % fn, (1 if base else 0, 1 if new else 0),
             (s["base"].get("sites"), s["new"].get("sites")))
        # the stack shown is NEW's, BASE's for a site gone
        t.eq("%s stack[1]" % fn, "main", s["stack"][1]["function"] if len(s["stack"]) > 1 else None)
    # sorted by |change in bytes allocated|
    keys = [abs(s["change"]["bytes_allocated"]) for s in d.get("sites", [])]
    t.eq("sites order", sorted(keys, reverse=True), keys)
    tot = d.get("totals", {})
    for k, v in CHANGES.items():
        t.eq("totals.%s.change" % k, v, tot.get(k, {}).get("change"))
    # each side's totals are its report's
    for side, path in (("base", a), ("new", b)):
        rep = need_report(t, path).data["totals"]
        for k in ("allocations", "frees", "bytes_allocated", "peak_heap_bytes", "peak_rss_bytes",
                  "leaked_blocks", "leaked_bytes", "temporary_allocations"):
            t.eq("%s %s = its report's" % (side, k), rep.get(k), tot.get(k, {}).get(side))
            t.eq("%s.totals.%s" % (side, k), rep.get(k), d[side]["totals"].get(k))
        t.eq("%s command" % side, [str(DIFFPROG), "1" if side == "base" else "2"],
             d[side]["program"]["command"])
    al = tot.get("allocations", {})
    if al.get("base"):
        t.eq("allocations change_percent", round(100.0 * al["change"] / al["base"], 1),
             al.get("change_percent"))


def t_self(t):
    a = trace(t, "2")
    _, d = diff(t, [a, a])
    t.check(d.get("sites"), "no sites")
    for s in d.get("sites", []):
        t.eq("status of %s" % s["stack"][0]["function"], "same", s.get("status"))
        t.check(not any(s["change"].values()), "change of a trace with itself: %r" % s["change"])
    for k, v in d.get("totals", {}).items():
        t.check(not v.get("change"), "totals.%s changes against itself: %r" % (k, v))
    p, _ = diff(t, [a, a], fmt="text")
    out = text(p.out)
    t.eq("'no change' tables", 4, out.count("\n  no change\n"))
    same = "0 changed, 0 new, 0 gone, %d the same" % len(d.get("sites", []))
    t.check(same in out, "no %r in: %s" % (same, tail(out, 800)))


def t_text(t):
    a, b = trace(t, "1"), trace(t, "2")
    p, _ = diff(t, [a, b], fmt="text")
    out = text(p.out)
    for pat in (r"^heaptrail diff: %s -> %s$" % (re.escape(str(a)), re.escape(str(b))),
                r"^  sites +matched by function names: 2 changed, 1 new, 1 gone, 1 the same$",
                r"^  allocations +[\d,]+ +[\d,]+ +\+10 ",
                r"^  bytes allocated .* \+2\.34 KiB .*\(\+2,400 B\)$",
                r"^  blocks at exit +1 +2 +\+1 +\+100\.0%$",
                r"^LARGEST CHANGES IN BYTES ALLOCATED \(4 sites\) -+$",
                r"^#1 +\+1000 B  1,000 B -> 2,000 B in 10 -> 20 allocations \(\+100\.0%\)  \[site 1\]\n"
                r" +grow +\S*diffprog\.c:\d+$",
                r"^#\d +\+600 B  0 B -> 600 B in 0 -> 3 allocations  \[new\]  \[site \d\]\n +only_new ",
                r"^#\d +-200 B  200 B -> 0 B in 4 -> 0 allocations \(-100\.0%\)  \[gone\]  "
                r"\[site \d\]\n +only_old ",
                r"^LARGEST CHANGES IN BYTES AT THE PEAK \(1 site\)",
                r"^#1 +\+1000 B  1,000 B in 1 block -> 2,000 B in 2 blocks in use at exit \(\+100\.0%\)"):
        t.check(re.search(pat, out, re.M), "no line matching %r in:\n%s" % (pat, out))
    t.check("steady" not in out, "an unchanged site is listed")


LINE_SRC = """#include <stdlib.h>
static void *volatile sink;
void *make_block(void);
void *make_block(void) { return malloc(48); }
int main(void)
{
	for (int i = 0; i < 3; i++)
		free(make_block());
	sink = NULL;
	return 0;
}
"""


def t_match_line(t):
    need_tools(t)
    traces = []
    for name, src in (("a", LINE_SRC), ("b", "/* one more line */\n" + LINE_SRC)):
        d = t.tmp / name
        d.mkdir()
        (d / "lineprog.c").write_text(src)
        cc = run(["cc", "-std=gnu11", "-O0", "-g", "-fno-omit-frame-pointer", "-fno-builtin",
                  "-o", d / "lineprog", d / "lineprog.c"], TIMEOUT)
        t.need(cc.rc == 0, "cc: %s: %s" % (cc.describe(), tail(cc.err)))
        tr = heaptrail_run([d / "lineprog"], outdir=d, timeout=TIMEOUT)
        t.need(tr.proc.rc == 0 and tr.out_path.exists(),
               "heaptrail run: %s: %s" % (tr.proc.describe(), tail(tr.proc.err)))
        traces.append(tr.out_path)
    for match in ("function", "line"):
        args = (["--match", match] if match == "line" else []) + traces
        _, d = diff(t, args)
        t.eq("match", match, d.get("match"))
        rows = by_leaf(d).get("make_block", [])
        got = sorted((s["status"], s["stack"][0]["line"]) for s in rows)
        if match == "function":
            t.eq("--match function: make_block", [("same", 5)], got)
        else:
            t.eq("--match line: make_block", [("gone", 4), ("new", 5)], got)
            for s in rows:
                side = "new" if s["status"] == "new" else "base"
                t.eq("%s row: %s figures" % (s["status"], side), (3, 144),
                     (s[side]["allocations"], s[side]["bytes_allocated"]))


def t_sampled_summary(t):
    full = trace(t, "2")
    for opts, what in ((("--sample-rate", "64", "--sample-seed", "7"), "sampled"),
                       (("--summary",), "summary")):
        other = trace(t, "2", opts)
        _, d = diff(t, [full, other])
        rep = need_report(t, other).data["totals"]
        for k in ("allocations", "frees", "bytes_allocated", "peak_heap_bytes", "leaked_blocks",
                  "leaked_bytes"):
            t.eq("%s: new %s = its report's" % (what, k), rep.get(k),
                 d.get("totals", {}).get(k, {}).get("new"))
        tmp = d.get("totals", {}).get("temporary_allocations", {})
        t.eq("%s: temporary allocations" % what, (24, None, None),
             (tmp.get("base"), tmp.get("new"), tmp.get("change")))
        for s in d.get("sites", []):
            t.eq("%s: site temporary change" % what, None, s["change"]["temporary_allocations"])
        if what == "sampled":
            t.eq("new.sampled.rate", 64, d["new"].get("sampled", {}).get("rate"))
        else:
            t.eq("summary: every site the same", {"same"},
                 set(s["status"] for s in d.get("sites", [])))
            t.eq("summary_mode", True, d["new"].get("summary_mode"))
        p, _ = diff(t, [full, other], fmt="text")
        out = text(p.out)
        say = "new is sampled" if what == "sampled" else "new is a summary trace"
        t.check(say in out, "%s: the text does not say '%s':\n%s" % (what, say, tail(out, 1500)))
        t.check(re.search(r"^  temporary allocs +24 +\? +\?$", out, re.M),
                "%s: temporary allocs line:\n%s" % (what, tail(out, 1500)))


def t_bad_input(t):
    need_tools(t)
    a = trace(t, "1")
    for args in (["--match", "file", a, a], ["--format", "xml", a, a], ["--frobnicate", a, a],
                 [a], [], [a, a, a], ["--top"], ["--top", "many", a, a]):
        p = run([HT, "diff"] + [str(x) for x in args], TIMEOUT)
        t.eq("exit status of `heaptrail diff %s`" % " ".join(map(str, args)), 2, p.rc)
        t.check(re.search(r"usage", text(p.err), re.I), "no usage message for %r" % args)
    missing = t.tmp / "no-such.ht"
    for args in ([missing, a], [a, missing]):
        p, _ = diff(t, args, fmt="text", want_rc=1)
        t.check("%s: No such file or directory" % missing in text(p.err),
                "missing file: %r" % tail(p.err, 300))
        t.eq("missing file: stdout", "", text(p.out))
    notrace = t.tmp / "notes.txt"
    notrace.write_text("not a trace at all\n" * 10)
    p, _ = diff(t, [a, notrace], fmt="text", want_rc=1)
    t.check(re.search(r"%s: not a heaptrail trace" % re.escape(str(notrace)), text(p.err)),
            "not a trace: %r" % tail(p.err, 300))
    # cut short: warned about on stderr and in the output, then compared
    data = a.read_bytes()
    cut = t.tmp / "cut.ht"
    cut.write_bytes(data[:len(data) - 40])
    rep = run([report_cli(), "report", "--format", "json", cut], TIMEOUT, env=asan_env())
    p, d = diff(t, [cut, a], want_rc=rep.rc)
    if rep.rc == 0:
        t.check("warning" in text(p.err) and cut.name in text(p.err),
                "truncated: no warning: %r" % tail(p.err, 300))
        t.eq("truncated base", True, d["base"].get("truncated"))
        t.eq("truncated base allocations = its report's",
             json.loads(text(rep.out))["totals"]["allocations"],
             d["totals"]["allocations"]["base"])


TESTS = [
    ("diff.json", t_json),
    ("diff.self", t_self),
    ("diff.text", t_text),
    ("diff.match_line", t_match_line),
    ("diff.sampled_summary", t_sampled_summary),
    ("diff.bad_input", t_bad_input),
]
