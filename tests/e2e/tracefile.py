"""tracefile.py - an independent reader of the trace format
(common/trace_format.h), just enough to check what the JSON report cannot
show: which thread each event belongs to.

The body after the 16-byte header is zstd-compressed (flag 0x1) or raw; the
standard library has no zstd, so the `zstd` command decompresses it.
"""

import shutil
import struct
import subprocess

MAGIC = b"HEAPTRL\x1a"
REC_PROCESS, REC_MODULE, REC_MODULE_UNLOAD, REC_THREAD_BLOCK = 1, 2, 3, 4
REC_EXEC, REC_END, REC_THREAD_NAME = 5, 6, 7
EV_ALLOC, EV_FREE, EV_REALLOC, EV_STACK, EV_RSS = 1, 2, 3, 4, 5


class TraceError(Exception):
    pass


def _varint(buf, pos):
    r, shift = 0, 0
    while True:
        if pos >= len(buf):
            raise TraceError("truncated varint at %d" % pos)
        b = buf[pos]
        pos += 1
        r |= (b & 0x7F) << shift
        if not b & 0x80:
            return r, pos
        shift += 7
        if shift > 63:
            raise TraceError("varint too long at %d" % pos)


def _svarint(buf, pos):
    v, pos = _varint(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


def body(path):
    data = open(path, "rb").read()
    if len(data) < 16 or data[:8] != MAGIC:
        raise TraceError("%s: not a heaptrail trace (magic)" % path)
    major, minor, flags = struct.unpack("<HHI", data[8:16])
    rest = data[16:]
    if flags & 1:
        z = shutil.which("zstd")
        if not z:
            raise TraceError("zstd command not found")
        p = subprocess.run([z, "-dc", "-q"], input=rest, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        if p.returncode != 0:
            raise TraceError("zstd -d failed: %s" % p.stderr.decode(errors="replace").strip())
        rest = p.stdout
    return major, minor, rest


def thread_events(path):
    """{tid: {"allocs": n, "frees": n, "sizes": {size: n}}} over all thread
    blocks; a realloc counts one free and one allocation."""
    _, _, buf = body(path)
    threads = {}
    pos = 0
    while pos < len(buf):
        tag = buf[pos]
        n, p2 = _varint(buf, pos + 1)
        payload = buf[p2:p2 + n]
        if len(payload) != n:
            raise TraceError("record at %d truncated" % pos)
        pos = p2 + n
        if tag != REC_THREAD_BLOCK:
            continue
        q = 0
        tid, q = _varint(payload, q)
        _, q = _varint(payload, q)  # base_time
        t = threads.setdefault(tid, {"allocs": 0, "frees": 0, "sizes": {}})
        while q < len(payload):
            ev = payload[q] & 0x0F
            q += 1
            if ev == EV_ALLOC:
                _, q = _varint(payload, q)
                _, q = _svarint(payload, q)
                size, q = _varint(payload, q)
                _, q = _varint(payload, q)
                t["allocs"] += 1
                t["sizes"][size] = t["sizes"].get(size, 0) + 1
            elif ev == EV_FREE:
                _, q = _varint(payload, q)
                _, q = _svarint(payload, q)
                t["frees"] += 1
            elif ev == EV_REALLOC:
                _, q = _varint(payload, q)
                _, q = _svarint(payload, q)
                size, q = _varint(payload, q)
                _, q = _varint(payload, q)
                _, q = _svarint(payload, q)
                t["allocs"] += 1
                t["frees"] += 1
                t["sizes"][size] = t["sizes"].get(size, 0) + 1
            elif ev == EV_STACK:
                _, q = _varint(payload, q)
                depth, q = _varint(payload, q)
                for _ in range(depth):
                    _, q = _svarint(payload, q)
            elif ev == EV_RSS:
                _, q = _varint(payload, q)
                _, q = _varint(payload, q)
            else:
                raise TraceError("unknown event 0x%x in thread %d's block" % (payload[q - 1], tid))
    return threads


REC_LEAKS = 8
LEAK_KINDS = {1: "definite", 2: "indirect", 3: "possible", 4: "reachable"}


def _records(buf):
    pos = 0
    while pos < len(buf):
        tag = buf[pos]
        n, p2 = _varint(buf, pos + 1)
        payload = buf[p2:p2 + n]
        if len(payload) != n:
            raise TraceError("record at %d truncated" % pos)
        pos = p2 + n
        yield tag, payload


def leak_checks(path):
    """{check_id: {"reason": r, "complete": bool, "kinds": {addr: kind name}}}
    from the LEAKS records (format 1.4)."""
    _, _, buf = body(path)
    checks = {}
    for tag, payload in _records(buf):
        if tag != REC_LEAKS:
            continue
        q = 0
        _, q = _varint(payload, q)  # time
        cid, q = _varint(payload, q)
        reason, q = _varint(payload, q)
        last, q = _varint(payload, q)
        c = checks.setdefault(cid, {"reason": reason, "complete": False, "kinds": {}})
        addr = 0
        while q < len(payload):
            d, q = _svarint(payload, q)
            kind, q = _varint(payload, q)
            addr += d
            c["kinds"][addr] = LEAK_KINDS.get(kind, "bad kind %d" % kind)
        c["complete"] = c["complete"] or bool(last)
    return checks


def alloc_sizes(path):
    """{addr: size} of the latest allocation (by time) at each address:
    for a block still live at the end, its size."""
    _, _, buf = body(path)
    latest = {}
    for tag, payload in _records(buf):
        if tag != REC_THREAD_BLOCK:
            continue
        q = 0
        _, q = _varint(payload, q)  # tid
        t, q = _varint(payload, q)
        addr = 0
        while q < len(payload):
            op = payload[q]
            ev = op & 0x0F
            q += 1
            if ev in (EV_ALLOC, 0xD, EV_REALLOC, EV_FREE, 0xA):  # ALLOC PALLOC REALLOC FREE TAG
                dt, q = _varint(payload, q)
                t += dt
                d, q = _svarint(payload, q)
                addr += d
                if ev == EV_FREE:
                    continue
                if ev == 0xA:
                    _, q = _varint(payload, q)
                    continue
                size, q = _varint(payload, q)
                _, q = _varint(payload, q)
                if ev == EV_REALLOC:
                    _, q = _svarint(payload, q)
                    _, q = _varint(payload, q)
                if ev == 0xD:
                    _, q = _varint(payload, q)
                if addr not in latest or latest[addr][0] <= t:
                    latest[addr] = (t, size)
            elif ev == EV_STACK:
                _, q = _varint(payload, q)
                depth, q = _varint(payload, q)
                for _ in range(depth):
                    _, q = _svarint(payload, q)
            elif ev == 0x9:  # NAME
                _, q = _varint(payload, q)
                n, q = _varint(payload, q)
                q += n
            elif ev in (EV_RSS, 0x8, 0xE):  # RSS ENABLE SNAPSHOT
                dt, q = _varint(payload, q)
                t += dt
                _, q = _varint(payload, q)
            elif ev in (0x6, 0xB):  # ENTER PHASE
                dt, q = _varint(payload, q)
                t += dt
                _, q = _varint(payload, q)
                _, q = _varint(payload, q)
            elif ev == 0x7:  # EXIT
                dt, q = _varint(payload, q)
                t += dt
            elif ev == 0xC:  # POOL
                dt, q = _varint(payload, q)
                t += dt
                for _ in range(3):
                    _, q = _varint(payload, q)
            elif ev == 0xF:  # EXT
                dt, q = _varint(payload, q)
                t += dt
                n, q = _varint(payload, q)
                q += n
            else:
                raise TraceError("unknown event 0x%x" % op)
    return {a: s for a, (_, s) in latest.items()}


def leak_totals(path, check_id=0):
    """{kind: [blocks, bytes]} of one leak check."""
    c = leak_checks(path).get(check_id)
    if c is None:
        return None
    sizes = alloc_sizes(path)
    tot = {k: [0, 0] for k in LEAK_KINDS.values()}
    for addr, kind in c["kinds"].items():
        tot[kind][0] += 1
        tot[kind][1] += sizes.get(addr, 0)
    return tot


REC_SITES = 9


def summary_rows(path):
    """The SITES rows of a summary-mode trace, as dicts."""
    _, _, buf = body(path)
    rows = []
    names = ("flags", "stack_id", "allocations", "bytes_allocated", "frees", "live_blocks",
             "live_bytes", "bytes_at_peak", "max_live_bytes", "largest")
    for tag, payload in _records(buf):
        if tag != REC_SITES:
            continue
        q = 0
        for _ in range(5):
            _, q = _varint(payload, q)
        while q < len(payload):
            r = {}
            for n in names:
                r[n], q = _varint(payload, q)
            r["kind_blocks"], r["kind_bytes"] = [], []
            for _ in range(4):
                v, q = _varint(payload, q)
                r["kind_blocks"].append(v)
                v, q = _varint(payload, q)
                r["kind_bytes"].append(v)
            rows.append(r)
    return rows
