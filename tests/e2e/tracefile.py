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
