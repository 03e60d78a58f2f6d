"""test_hostile_names.py - names from a program or its debug info that would
act on a terminal or break an output format: tests/programs/fn_hostile_names.c
gives function names (symbol table), a source path (DWARF), a thread name,
a tag, a phase, a snapshot, a pool and a handle kind ESC sequences (an OSC
title, CSI colours, screen clearing), BEL, CR and newlines followed by a
"FORGED ..." line, or UTF-8 that is not valid (a surrogate, U+FFFE/U+FFFF,
above U+10FFFF, stray and overlong bytes); it runs with such arguments too.

  hostile.text     every text view (report, --show-reachable, top --once, leaks, leaks
                   --growth, --functions --memory, --by-tag, --tag, an unknown --tag,
                   diff, run's summary and --leak-exitcode's leak list):
                   no ESC, CR, BEL or other control byte but the line ends,
                   strictly valid UTF-8, no line that starts "FORGED", and
                   the names shown with visible escapes where the figures
                   known by construction are
  hostile.json     the JSON report, leaks, --functions and diff: parse as
                   strict UTF-8 JSON; control characters round-trip exactly,
                   no surrogate or noncharacter is left
  hostile.svg      the flame graph parses with expat (xml.etree); its names
                   hold U+FFFD for what XML forbids
  hostile.exports  chrome and events are strict JSON; folded, massif and
                   heaptrack keep one record per line with no control byte;
                   pprof's string table is valid UTF-8 without controls

Reports run with the ASan+UBSan CLI, so a memory error fails the test.
"""

import gzip
import json
import re

from harness import (HT, PROGS, heaptrail_run, memo, need_tools, report_cli, run, tail,
                     text, asan_env, SANITIZER_RE)

TIMEOUT = 120
PROG = "fn_hostile_names"
ARGS = ["arg\x1b]0;pwn\x07", "two\nFORGED ARG"]

# The names as the program makes them (tests/programs/fn_hostile_names.c).
EVIL_FN = b"evil\x1b]0;pwn\x07\rfake\x1b[31mred\x1b[2J"
BAD_FN = b"bad\xed\xa0\x80sur\xef\xbf\xbfnc\xf4\x90\x80\x80big\xff\xc0\xaf"
PATH = b"evil\x1b]0;pwn\x07\nFORGED PATH.c"
TAG = b"tag\x1b]0;pwn\x07\r\nFORGED TAG"
THREAD = b"t\x1b]0;x\x07\r\nFORG"

# ... and as the text views show them.
EVIL_FN_TEXT = r"evil\x1b]0;pwn\x07\rfake\x1b[31mred\x1b[2J"
BAD_FN_TEXT = r"bad\xed\xa0\x80sur\uffffnc\xf4\x90\x80\x80big\xff\xc0\xaf"
PATH_TEXT = r"evil\x1b]0;pwn\x07\nFORGED PATH.c:"
TAG_TEXT = r"tag\x1b]0;pwn\x07\r\nFORGED TAG"
BADTAG_TEXT = r"utf\xed\xa0\x80\ufffe\xf4\x90\x80\x80\xc0\xaf"
THREAD_TEXT = r"(t\x1b]0;x\x07\r\nFORG)"
PHASE_TEXT = r"ph\x1b[31m\r\nFORGED PHASE"
SNAP_TEXT = r"snap\x1b[2J\nFORGED SNAP"
POOL_TEXT = r"pool\x1b]0;x\x07\nFORGED POOL"
KIND_TEXT = r"kind\x1b[5m\r\nFORGED KIND"
ARGS_TEXT = r"'arg\x1b]0;pwn\x07' 'two\nFORGED ARG'"


def traced(t):
    """(Traced, trace path) of the program run with --functions and
    --leak-exitcode 23; memoised."""
    need_tools(t)
    p = PROGS / PROG
    t.need(p.exists(), "%s not built (make programs)" % p)

    def go():
        tr = heaptrail_run([p] + ARGS, ["--functions", "--leak-exitcode", "23"], timeout=TIMEOUT)
        if tr.proc.timed_out or not tr.out_path.exists():
            return tr, "heaptrail run failed: %s: %s" % (tr.proc.describe(), tail(tr.proc.err))
        return tr, None
    tr, err = memo(("hostile",), go)
    if err:
        t.fatal(err)
    t.eq("exit status of heaptrail run --leak-exitcode 23", 23, tr.proc.rc)
    return tr, tr.out_path


def cli(t, args, rc=0):
    """The ASan CLI's (stdout, stderr) as bytes, with its exit status checked."""
    p = run([report_cli()] + list(args), TIMEOUT, env=asan_env())
    if p.timed_out:
        t.fatal("timed out: %s" % p.describe())
    if SANITIZER_RE.search(text(p.err)):
        t.fatal("sanitizer error in %s: %s" % (p.describe(), tail(p.err, 1500)))
    t.eq("exit status of %s" % p.describe(), rc, p.rc)
    return p.out, p.err


def check_clean(t, what, b):
    """Nothing a terminal acts on: no control byte but newlines, valid UTF-8
    (so no C1 control either), and no line made by a name."""
    bad = sorted(set(re.findall(rb"[\x00-\x09\x0b-\x1f\x7f]", b)))
    t.check(not bad, "%s: raw control bytes %r" % (what, bad))
    try:
        s = b.decode("utf-8", "strict")
    except UnicodeDecodeError as e:
        t.check(False, "%s: not valid UTF-8: %s" % (what, e))
        s = b.decode("utf-8", "replace")
    c1 = [c for c in s if 0x80 <= ord(c) <= 0x9f or ord(c) in (0xfffe, 0xffff)]
    t.check(not c1, "%s: C1 controls or noncharacters %r" % (what, c1))
    forged = [line for line in s.splitlines() if line.lstrip().startswith("FORG")]
    t.check(not forged, "%s: forged lines %r" % (what, forged[:3]))
    return s


def t_text(t):
    tr, path = traced(t)
    # the summary and leak list of run --leak-exitcode (stderr)
    s = check_clean(t, "run's stderr", tr.proc.err)
    t.check(EVIL_FN_TEXT in s, "run --leak-exitcode's leak list lacks %s" % EVIL_FN_TEXT)

    out, _ = cli(t, ["report", path])
    s = check_clean(t, "report", out)
    t.check(ARGS_TEXT in s, "report: the program line lacks %s" % ARGS_TEXT)
    for name in (EVIL_FN_TEXT, BAD_FN_TEXT, PATH_TEXT, POOL_TEXT, SNAP_TEXT, KIND_TEXT,
                 PHASE_TEXT):
        t.check(name in s, "report lacks %s" % name)
    # the leaks of known size are listed under their functions
    for size, name in ((1001, EVIL_FN_TEXT), (1002, BAD_FN_TEXT), (1003, PATH_TEXT)):
        m = re.search(r"^#\d+\s+%d B .*\n((?:     .*\n)+)" % size,
                      s[s.find("LEAKS BY CLASS"):], re.M)
        t.check(m and name in m.group(1), "report: the %d B leak's stack lacks %s: %r" %
                (size, name, m and m.group(1)))
    # the names are aligned as printed: the escaped name fills the column
    m = re.search(r"^     (helper_a +)\S+:\d+\n     %s  " % re.escape(EVIL_FN_TEXT), s, re.M)
    t.check(m and len(m.group(1)) == len(EVIL_FN_TEXT) + 2,
            "report: the function column does not fit the escaped name")

    out, _ = cli(t, ["report", "--show-reachable", path])
    check_clean(t, "report --show-reachable", out)
    out, _ = cli(t, ["top", "--once", "-n", "100", path])
    s = check_clean(t, "top --once", out)
    t.check(PATH_TEXT in s, "top --once lacks the site in %s" % PATH_TEXT)
    out, _ = cli(t, ["leaks", path])
    s = check_clean(t, "leaks", out)
    t.check(EVIL_FN_TEXT in s and KIND_TEXT in s, "leaks lacks the names")
    out, _ = cli(t, ["leaks", "--growth", path])
    check_clean(t, "leaks --growth", out)
    out, _ = cli(t, ["report", "--functions", "--memory", path])
    s = check_clean(t, "report --functions --memory", out)
    t.check(THREAD_TEXT in s, "report --functions lacks the thread %s" % THREAD_TEXT)
    t.check(PATH_TEXT in s, "report --functions lacks path_fn's file %s" % PATH_TEXT)
    out, _ = cli(t, ["report", "--by-tag", path])
    s = check_clean(t, "report --by-tag", out)
    t.check(re.search(r"^  %s +1 +1,004 " % re.escape(TAG_TEXT), s, re.M),
            "report --by-tag: no row for %s" % TAG_TEXT)
    t.check(re.search(r"^  %s +1 +1,005 " % re.escape(BADTAG_TEXT), s, re.M),
            "report --by-tag: no row for %s" % BADTAG_TEXT)
    out, _ = cli(t, ["report", "--tag", TAG.decode(), path])
    s = check_clean(t, "report --tag", out)
    t.check("  tag         %s\n" % TAG_TEXT in s, "report --tag: no tag line")
    out, err = cli(t, ["report", "--tag", "no\x1b[31mne", path])
    s = check_clean(t, "report --tag (unknown)", out) + check_clean(t, "its stderr", err)
    t.check(TAG_TEXT in s and r"no\x1b[31mne" in s, "report --tag (unknown): names not listed")
    out, _ = cli(t, ["diff", path, path])
    s = check_clean(t, "diff", out)
    t.check(ARGS_TEXT in s, "diff: the program line lacks %s" % ARGS_TEXT)


def strict_json(t, what, b):
    try:
        return json.loads(b.decode("utf-8", "strict"))
    except (UnicodeDecodeError, ValueError) as e:
        t.fatal("%s: not strict UTF-8 JSON: %s" % (what, e))


def strings(v):
    """Every string in a JSON value (keys too)."""
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)


def check_unicode(t, what, v):
    bad = {s for s in strings(v)
           if any(0xd800 <= ord(c) <= 0xdfff or ord(c) in (0xfffe, 0xffff) for c in s)}
    t.check(not bad, "%s: surrogates or noncharacters in %r" % (what, sorted(bad)[:3]))


def t_json(t):
    _, path = traced(t)
    rep = strict_json(t, "report --format json", cli(t, ["report", "--format", "json", path])[0])
    check_unicode(t, "report --format json", rep)
    names = set(strings(rep))
    t.check(EVIL_FN.decode() in names, "JSON: the function name does not round-trip")
    t.check(TAG.decode() in names, "JSON: the tag does not round-trip")
    t.check(any(s.endswith(PATH.decode()) for s in names), "JSON: the path does not round-trip")
    bad = [s for s in names if s.startswith("bad")]
    t.check(bad and re.fullmatch("bad\ufffd+sur\ufffd+nc\ufffd+big\ufffd+", bad[0]),
            "JSON: the invalid UTF-8 name is %r" % bad)
    for args in (["leaks", "--format", "json"], ["report", "--functions", "--format", "json"],
                 ["diff", "--format", "json", path]):
        what = " ".join(args[:3])
        check_unicode(t, what, strict_json(t, what, cli(t, args + [path])[0]))


def convert(t, fmt, path):
    out = t.tmp / ("out." + fmt)
    cli(t, ["convert", "--format", fmt, "-o", out, path])
    return out.read_bytes()


def t_svg(t):
    import xml.etree.ElementTree as ET
    _, path = traced(t)
    svg = convert(t, "flamegraph", path)
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as e:
        t.fatal("flame graph: expat rejects it: %s" % e)
    names = [g.get("data-name") for g in root.iter("{http://www.w3.org/2000/svg}g")
             if g.get("data-name")]
    evil = [n for n in names if n.startswith("evil")]
    t.check(evil == ["evil\ufffd]0;pwn\ufffd\ufffdfake\ufffd[31mred\ufffd[2J"],
            "flame graph: the ESC name is %r" % evil)
    bad = [n for n in names if n.startswith("bad")]
    t.check(bad and re.fullmatch("bad\ufffd+sur\ufffd+nc\ufffd+big\ufffd+", bad[0]),
            "flame graph: the invalid UTF-8 name is %r" % bad)


def pb_strings(data):
    """pprof's string_table (Profile field 6) from the protobuf bytes."""
    def varint(i):
        v = s = 0
        while True:
            b = data[i]
            i += 1
            v |= (b & 0x7f) << s
            s += 7
            if b < 0x80:
                return v, i
    i, out = 0, []
    while i < len(data):
        key, i = varint(i)
        wt = key & 7
        if wt == 0:
            _, i = varint(i)
        elif wt == 2:
            n, i = varint(i)
            if key >> 3 == 6:
                out.append(data[i:i + n])
            i += n
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
    return out


def t_exports(t):
    _, path = traced(t)
    for fmt in ("chrome", "events"):
        b = convert(t, fmt, path)
        v = [strict_json(t, fmt, line) for line in b.splitlines()] if fmt == "events" else \
            strict_json(t, fmt, b)
        check_unicode(t, fmt, v)
        if fmt == "chrome":
            t.check(THREAD.decode() in set(strings(v)),
                    "chrome: the thread name does not round-trip")
    b = convert(t, "folded", path)
    s = check_clean(t, "folded", b)
    t.check(all(re.fullmatch(r".+ \d+", line) for line in s.splitlines()),
            "folded: a line is not `stack COST`")
    t.check(EVIL_FN_TEXT.replace(";", ":") in s, "folded: no escaped name")
    s = check_clean(t, "massif", convert(t, "massif", path))
    t.check(EVIL_FN_TEXT in s, "massif: no escaped name")
    s = check_clean(t, "heaptrack", convert(t, "heaptrack", path))
    t.check(all(re.match(r"[vXIsitac+\-R#] ", line) or line in ("i 0 0",)
                for line in s.splitlines()), "heaptrack: a line of no known record")
    t.check("s %x %s\n" % (len(EVIL_FN_TEXT), EVIL_FN_TEXT) in s,
            "heaptrack: no `s` line of the escaped name")
    pb = gzip.decompress(convert(t, "pprof", path))
    table = pb_strings(pb)
    t.check(len(table) > 10, "pprof: no string table found")
    for sb in table:
        check_clean(t, "pprof string %r" % sb, sb)
    t.check(EVIL_FN_TEXT.encode() in table, "pprof: no escaped name")


TESTS = [
    ("hostile.text", t_text),
    ("hostile.json", t_json),
    ("hostile.svg", t_svg),
    ("hostile.exports", t_exports),
]
