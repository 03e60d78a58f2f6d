"""test_tags_phases.py - the tags and phases, end to end:
tests/programs/tags_phases.c tags blocks with heaptrail_tag and brackets
phases with heaptrail_phase_begin/end (heaptrail.h); its figures are known by
construction (the header comment of the program lists them) and are checked
exactly in every view.

  tags.json        the JSON report's "tags" member: per tag allocations,
                   bytes, live blocks and bytes; the tags add up to the totals;
                   node's stacks are the two allocating functions
  tags.by_tag      `report --by-tag`: the table's rows, untagged last
  tags.stacks      `report --tag node`: two stacks, leaf first at the right
                   lines; --depth 1 --min-count 5 keeps make_node_a alone;
                   an unknown tag says so and lists the tags
  phases.json      the JSON report's "phases" member
  phases.text      the PHASES section of the text report
  tags.none        a program that tags nothing: the clear message, and no
                   "tags"/"phases" members in its JSON
  tags.usage       options that do not go together are usage errors (exit 2)
  tags.names_full  more names than the agent's table holds: the report warns,
                   a snapshot named then is "(names full)", not the signal's

Reports run with the ASan+UBSan CLI, so a memory error fails the test.
"""

import re

from harness import (PROGS, SRC, heaptrail_run, marker_line, memo, need_tools, report,
                     report_cli, run, tail, text)

TIMEOUT = 60
PROG = "tags_phases"

# By construction (tests/programs/tags_phases.c).
TAGS = {
    "node": {"allocations": 10, "bytes_allocated": 544, "live_blocks": 8, "live_bytes": 448},
    "edge": {"allocations": 6, "bytes_allocated": 160, "live_blocks": 4, "live_bytes": 112},
    "untagged": {"allocations": 12, "bytes_allocated": 2450, "live_blocks": 7, "live_bytes": 650},
}
PHASES = {
    "parse": {"entered": 3, "allocations": 6, "bytes_allocated": 600, "net_live_bytes": 300,
              "peak_inside_bytes": 200, "open_at_end": 0},
    "compile": {"entered": 1, "allocations": 3, "bytes_allocated": 1550, "net_live_bytes": 50,
                "peak_inside_bytes": 1500, "open_at_end": 0},
    "emit": {"entered": 1, "allocations": 2, "bytes_allocated": 550, "net_live_bytes": 50,
             "peak_inside_bytes": 500, "open_at_end": 0},
}


def traced(t, prog=PROG):
    """(trace path, JSON report) of prog; memoised."""
    need_tools(t)
    p = PROGS / prog
    t.need(p.exists(), "%s not built (make programs)" % p)

    def go():
        tr = heaptrail_run([p], timeout=TIMEOUT)
        if tr.proc.timed_out or not tr.out_path.exists():
            return tr, None, "heaptrail run failed: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        if tr.proc.rc != 0:
            return tr, None, "%s exited %s: %s" % (prog, tr.proc.rc, tail(tr.proc.err))
        rep = report(tr.out_path, "json")
        if rep.err:
            return tr, rep, rep.err
        if rep.proc.rc != 0:
            return tr, rep, "report exited %s: %s" % (rep.proc.rc, tail(rep.proc.err))
        return tr, rep, None
    tr, rep, err = memo(("tags",) + (prog,), go)
    if err:
        t.fatal(err)
    return tr.out_path, rep.data


def text_report(t, path, extra=(), rc=0):
    """`heaptrail report [extra] FILE` as text, with the ASan CLI."""
    r = report(path, "text", list(extra))
    if r.err:
        t.fatal(r.err)
    t.eq("exit status of report %s" % " ".join(extra), rc, r.proc.rc)
    return text(r.proc.out), text(r.proc.err)


def table_rows(out, header_word):
    """{first column: [numbers...]} of the table whose header row starts with
    header_word, up to the first blank line."""
    rows, inside = {}, False
    for line in out.splitlines():
        cols = line.split()
        if not inside:
            inside = bool(cols) and cols[0] == header_word
            continue
        if not cols:
            break
        nums = []
        for c in cols[1:]:
            if c == "*":
                continue
            nums.append(int(c.replace(",", "")))
        rows[cols[0]] = nums
    return rows


# ---- tags -------------------------------------------------------------------------------

def t_json(t):
    _, rep = traced(t)
    tags = rep.get("tags")
    t.need(isinstance(tags, list), "the JSON report has no \"tags\" array")
    got = {g["tag"]: {k: g[k] for k in TAGS["node"]} for g in tags}
    t.eq("tags", TAGS, got)
    t.eq("order (by bytes, untagged last)", ["node", "edge", "untagged"], [g["tag"] for g in tags])
    t.eq("untagged flags", [False, False, True], [g["untagged"] for g in tags])
    tot = rep["totals"]
    t.eq("tags' allocations add up to the total", tot["allocations"],
         sum(g["allocations"] for g in tags))
    t.eq("tags' bytes add up to the total", tot["bytes_allocated"],
         sum(g["bytes_allocated"] for g in tags))
    t.eq("tags' live bytes add up to the leaks", tot["leaked_bytes"],
         sum(g["live_bytes"] for g in tags))
    # node's stacks are sites of the report: make_node_a and make_node_b
    node = [g for g in tags if g["tag"] == "node"][0]
    sites = {s["stack_id"]: s for s in rep["sites"]}
    leaves = {}
    for st in node["stacks"]:
        site = sites.get(st["stack_id"])
        t.need(site, "node's stack %r is not among the sites" % st["stack_id"])
        leaves[site["stack"][0]["function"]] = (st["allocations"], st["bytes_allocated"])
    t.eq("node's stacks by leaf", {"make_node_a": (6, 288), "make_node_b": (4, 256)}, leaves)
    # existing members come first, unchanged in order
    existing = ["heaptrail_report", "program", "totals", "truncated", "error", "warnings",
                "sites", "leaks", "timeline", "suppressions", "fd_leaks", "handle_leaks",
                "tags", "phases"]
    t.eq("JSON members", existing + ["invalid_frees", "mapped"], list(rep.keys()))


def t_by_tag(t):
    path, _ = traced(t)
    out, _ = text_report(t, path, ["--by-tag"])
    rows = table_rows(out, "tag")
    want = {k: [v["allocations"], v["bytes_allocated"], v["live_blocks"], v["live_bytes"]]
            for k, v in TAGS.items()}
    want["total"] = [28, 3154, 19, 1210]
    t.eq("--by-tag rows", want, rows)
    t.eq("--by-tag order", ["node", "edge", "untagged", "total"], list(rows))


def stack_blocks(out):
    """[(count, bytes, [(function, location)])] of a --tag report."""
    blocks = []
    for m in re.finditer(r"^#\d+\s+([\d,]+) allocations?, ([\d,]+) B.*\n((?:     .*\n?)*)", out, re.M):
        frames = [tuple(line.split(None, 1)) for line in m.group(3).splitlines() if line.strip()]
        blocks.append((int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")), frames))
    return blocks


def t_stacks(t):
    path, _ = traced(t)
    src = SRC / (PROG + ".c")
    line_a, line_b = marker_line(src, "node_a"), marker_line(src, "node_b")
    out, _ = text_report(t, path, ["--tag", "node"])
    b = stack_blocks(out)
    t.eq("--tag node: stacks", 2, len(b))
    if len(b) == 2:
        t.eq("first stack: count, bytes", (6, 288), b[0][:2])
        t.eq("second stack: count, bytes", (4, 256), b[1][:2])
        t.eq("first stack's leaf", "make_node_a", b[0][2][0][0])
        t.check(b[0][2][0][1].endswith("tags_phases.c:%d" % line_a),
                "make_node_a's location is not tags_phases.c:%d: %r" % (line_a, b[0][2][0]))
        t.check(b[1][2][0][1].endswith("tags_phases.c:%d" % line_b),
                "make_node_b's location is not tags_phases.c:%d: %r" % (line_b, b[1][2][0]))
        t.eq("first stack's caller", "main", b[0][2][1][0] if len(b[0][2]) > 1 else None)
    out, _ = text_report(t, path, ["--tag", "node", "--depth", "1", "--min-count", "5"])
    b = stack_blocks(out)
    t.eq("--depth 1 --min-count 5", [(6, 288, ["make_node_a"])],
         [(c, n, [f[0] for f in fr]) for c, n, fr in b])
    t.check("1 stack with fewer than 5 allocations left out" in out,
            "--min-count does not say what it left out: %s" % tail(out))
    out, _ = text_report(t, path, ["--tag", "edge", "--depth", "1"])
    b = stack_blocks(out)
    # 5 mallocs, and the realloc'd block (keeps its tag) at another line
    t.eq("--tag edge --depth 1", [(5, 120, ["make_edges"]), (1, 40, ["make_edges"])],
         [(c, n, [f[0] for f in fr]) for c, n, fr in b])
    t.check(len(b) == 2 and b[0][2][0][1] != b[1][2][0][1],
            "the malloc and realloc lines of make_edges are not told apart: %r" % b)
    out, err = text_report(t, path, ["--tag", "nope"])
    t.check("no allocations carry the tag 'nope'; the tags are: node edge" in out,
            "unknown tag: %s" % tail(out))
    t.check("nope" in err, "unknown tag: nothing on stderr")


# ---- phases -------------------------------------------------------------------------------

def t_phases_json(t):
    _, rep = traced(t)
    ph = rep.get("phases")
    t.need(isinstance(ph, list), "the JSON report has no \"phases\" array")
    got = {p["phase"]: {k: p[k] for k in PHASES["parse"]} for p in ph}
    t.eq("phases", PHASES, got)
    t.eq("order (by bytes)", ["compile", "parse", "emit"], [p["phase"] for p in ph])


def t_phases_text(t):
    path, _ = traced(t)
    out, _ = text_report(t, path)
    t.need("\nPHASES (3) " in out, "no PHASES section in the text report: %s" % tail(out))
    section = out[out.index("\nPHASES (3) "):]
    rows = table_rows(section, "phase")
    want = {k: [v["entered"], v["allocations"], v["bytes_allocated"], v["net_live_bytes"],
                v["peak_inside_bytes"]] for k, v in PHASES.items()}
    t.eq("PHASES rows", want, rows)
    t.check("+300" in section, "net live change is not signed: %s" % section[:400])


# ---- without tags, and usage ------------------------------------------------------------

def t_none(t):
    path, rep = traced(t, "leaks")
    t.check("tags" not in rep and "phases" not in rep,
            "a trace without marks has tags/phases members: %r" % list(rep))
    out, err = text_report(t, path, ["--by-tag"])
    t.check("no tags: the program tags no blocks" in out, "--by-tag without tags: %s" % tail(out))
    t.check("no tags" in err, "--by-tag without tags: nothing on stderr")
    rows = table_rows(out, "tag")
    t.eq("everything untagged", list(rows), ["untagged", "total"])
    out, _ = text_report(t, path)
    t.check("PHASES" not in out, "a PHASES section without phases")


def t_usage(t):
    path, _ = traced(t)
    for args in (["--depth", "2"], ["--min-count", "2"], ["--by-tag", "--format", "json"],
                 ["--tag", "node", "--functions"], ["--by-tag", "--tag", "node"],
                 ["--tag", "node", "--depth", "0"], ["--tag"]):
        p = run([report_cli(), "report"] + args + [path], TIMEOUT)
        t.eq("exit status of report %s" % " ".join(args), 2, p.rc)


def t_names_full(t):
    """After the name table filled up, names were dropped without a word and
    heaptrail_snapshot("snap") wrote name id 0, the snapshot signal's."""
    path, rep = traced(t, "names_full")
    warn = [w for w in rep.get("warnings", []) if "name table filled up" in w]
    t.eq("warnings about the name table", 1, len(warn))
    snaps = [(s.get("name"), s.get("signal")) for s in rep.get("snapshots", [])]
    t.eq("snapshots (name, signal)", [("(names full)", False)], snaps)
    t.eq("pools", [("(names full)", 1)],
         [(p.get("name"), p.get("live_blocks")) for p in rep.get("pools", [])])
    t.eq("handles of a kind named before the table filled",
         [("early", 1)], [(h.get("kind"), h.get("held")) for h in rep.get("handle_leaks", [])])
    tot = rep["totals"]
    t.eq("allocations, frees", (40001, 40000), (tot["allocations"], tot["frees"]))
    out = text(need_text(t, path))
    t.check("name table filled up" in out, "the text report does not warn")


def need_text(t, path):
    r = report(path, "text")
    t.need(not r.err and r.proc.rc == 0, "text report: %s %s" % (r.err, tail(r.proc.err)))
    return r.proc.out


TESTS = [
    ("tags.json", t_json),
    ("tags.by_tag", t_by_tag),
    ("tags.stacks", t_stacks),
    ("phases.json", t_phases_json),
    ("phases.text", t_phases_text),
    ("tags.none", t_none),
    ("tags.usage", t_usage),
    ("tags.names_full", t_names_full),
]
