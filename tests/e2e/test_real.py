"""test_real.py - real programs already on the machine (python3, sqlite3,
gcc's cc1): heaptrail's allocations, frees and bytes allocated must equal
valgrind memcheck's exactly.

Both runs must see the same environment: python, for one, builds os.environ
at start-up and its dict grows with the number of variables (two extra
variables cost it one more malloc). valgrind's wrapper adds LD_LIBRARY_PATH,
GLIBCXX_FORCE_NEW, GLIBCPP_FORCE_NEW, PWD and LD_PRELOAD; heaptrail adds its
own. So the environments are probed once (each side runs /usr/bin/env) and
each side is given the variables only the other one adds, with the other's
values; the probe is repeated to confirm both key sets are equal.
"""

import os
import shutil

import contract
from harness import (T, heaptrail_run, memcheck, memo, need_report, need_tools,
                     run, scratch_dir, tail, text, VALGRIND, VG_TIMEOUT)

CC1 = "/usr/lib/gcc/x86_64-linux-gnu/12/cc1"
NO_ASLR = ["setarch", "x86_64", "-R"] if shutil.which("setarch") else []
PY = "/usr/bin/python3"
SQLITE = shutil.which("sqlite3") or "/usr/bin/sqlite3"

# Only built-in modules (no lib-dynload dlopen, whose loader allocations
# scale with the number of objects loaded, which the agent changes).
PY_SCRIPT = ("import collections, re\n"
             "words = re.findall(r'\\w+', 'the quick brown fox jumps over the lazy dog the end')\n"
             "c = collections.Counter(words)\n"
             "print(sorted(c.items())[:3], sum(c.values()))\n")
SQL = ("create table t(a integer primary key, b text);"
       "insert into t(b) values ('x'),('y'),('z');"
       "create index tb on t(b);"
       "select a, b, length(b) from t where b > 'x' order by b desc;")
C_SRC = """struct point { int x, y; };
static int sq(int v) { return v * v; }
int dist2(struct point a, struct point b) { return sq(a.x - b.x) + sq(a.y - b.y); }
int sum(const int *v, int n) { int s = 0; for (int i = 0; i < n; i++) s += v[i]; return s; }
"""


def _parse_env(out):
    env = {}
    for line in text(out).splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            env[k] = v
    return env


def environments():
    """(env for heaptrail run, env for valgrind, note): memoised."""
    def go():
        home = scratch_dir("home")
        base = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LC_ALL": "C",
                "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(home)}
        env_h, env_v = dict(base), dict(base)
        seen = None
        for _ in range(3):
            ph = heaptrail_run(["/usr/bin/env"], env=env_h)
            pv = run([VALGRIND, "-q", "--tool=memcheck", "/usr/bin/env"], VG_TIMEOUT, env=env_v)
            if ph.proc.rc != 0 or pv.rc != 0:
                return None, None, "env probe failed: %s / %s: %s %s" % (
                    ph.proc.describe(), pv.describe(), tail(ph.proc.err), tail(pv.err))
            kh, kv = _parse_env(ph.proc.out), _parse_env(pv.out)
            seen = (sorted(kh), sorted(kv))
            if set(kh) == set(kv):
                return env_h, env_v, None
            for k in set(kv) - set(kh):
                env_h[k] = kv[k]
            for k in set(kh) - set(kv):
                env_v[k] = kh[k]
        return None, None, "cannot equalise the environments: heaptrail %s vs valgrind %s" % seen
    return memo(("environments",), go)


def inputs():
    def go():
        d = scratch_dir("inputs")
        (d / "small.c").write_text(C_SRC)
        return d
    return memo(("inputs",), go)


def real_test(key, argv_fn):
    def test(t):
        need_tools(t)
        env_h, env_v, note = environments()
        if note:
            t.fatal(note)
        argv = argv_fn()
        t.need(os.path.exists(argv[0]), "%s not installed" % argv[0])
        plain = run(argv, 120, env=env_h)
        vproc, res = memcheck((key,), argv, env=env_v)
        good = [r for r in res.values() if r.allocs is not None]
        t.need(len(good) == 1, "memcheck: %d summaries; %s: %s" % (len(good), vproc.describe(), tail(vproc.err)))
        vg = good[0]
        # Without address randomisation: cc1 hashes pointers, and now and
        # then a table grows one chunk earlier (one 32 KiB block) depending
        # on where the heap landed. memcheck's own layout is fixed.
        tr = heaptrail_run(argv, env=env_h, timeout=300, wrap=NO_ASLR)
        t.eq("heaptrail run exit status (%s)" % tr.proc.describe(), plain.rc, tr.proc.rc)
        t.eq("program output under heaptrail vs plain", text(plain.out), text(tr.proc.out))
        t.need(tr.out_path.exists(), "no trace at %s: %s" % (tr.out_path, tail(tr.proc.err)))
        r = need_report(t, tr.out_path)
        tot = r.data.get("totals", {})
        t.eq("heaptrail vs memcheck (allocations, frees, bytes_allocated)",
             (vg.allocs, vg.frees, vg.bytes),
             (tot.get("allocations"), tot.get("frees"), tot.get("bytes_allocated")))
        t.eq("leaked blocks/bytes vs memcheck's in use at exit", (vg.inuse_blocks, vg.inuse_bytes),
             (tot.get("leaked_blocks"), tot.get("leaked_bytes")))
        t.eq("program.exit_code", 0, r.data.get("program", {}).get("exit_code"))
        t.eq("program.command", argv, r.data.get("program", {}).get("command"))
        for e in contract.check(r.data):
            t.check(False, e)
        # Leaves in stripped code have no name (null, as the contract
        # wants) but must still carry their module and address.
        for i, st in enumerate(x.get("stack") or [] for x in r.data.get("sites", [])):
            if st and not st[0].get("module"):
                t.check(False, "sites[%d].stack[0] has no module: %r" % (i, st[0]))
                break
    return test


TESTS = [
    ("real.python3", real_test("python3", lambda: [PY, "-c", PY_SCRIPT])),
    ("real.cc1", real_test("cc1", lambda: [CC1, "-quiet", str(inputs() / "small.c"), "-o", "/dev/null"])),
    ("real.sqlite3", real_test("sqlite3", lambda: [SQLITE, ":memory:", SQL])),
]
