"""tracefile.py - an independent reader of the trace format
(common/trace_format.h), just enough to check what the JSON report cannot
show: which thread each event belongs to.

The body after the 16-byte header is zstd-compressed (flag 0x1) or raw; the
standard library has no zstd, so the `zstd` command decompresses it.
"""

import shutil
import struct
import subprocess
from pathlib import Path

MAGIC = b"HEAPTRL\x1a"
REC_PROCESS, REC_MODULE, REC_MODULE_UNLOAD, REC_THREAD_BLOCK = 1, 2, 3, 4
REC_EXEC, REC_END, REC_THREAD_NAME = 5, 6, 7
REC_THREAD_COLUMNS = 10
REC_THREAD_PACKED = 11
REC_THREAD_BATCH = 12
REC_THREAD_BATCH2 = 13
REC_THREAD_BATCH3 = 15
BATCHES = (REC_THREAD_BATCH, REC_THREAD_BATCH2, REC_THREAD_BATCH3)
EV_ALLOC, EV_FREE, EV_REALLOC, EV_STACK, EV_RSS = 1, 2, 3, 4, 5


# Each event's fields after its first byte (common/columns.h): T time delta,
# A address delta (zigzag), S size, K stack id, R a varint, L a length and its
# bytes, D a count and its varints. In the column layout T, A, S, K have a
# column each and the others share one.
_FIELDS = {1: "TASK", 2: "TA", 3: "TASKRR", 4: "RD", 5: "TR", 6: "TRR", 7: "T", 8: "TR",
           9: "RL", 10: "TAR", 11: "TRR", 12: "TRRR", 13: "TASKR", 14: "TR", 15: "TL"}
_COLUMN = {"T": 1, "A": 2, "S": 3, "K": 4}


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




def block_events(payload):
    """A THREAD_BLOCK payload's tid, base time and events: (tid, base,
    [(event, start, end, fields)]), start and end the event's bytes in the
    payload, fields its decoded values (the grammar is _FIELDS, above)."""
    q = 0
    tid, q = _varint(payload, q)
    base, q = _varint(payload, q)
    events = []
    while q < len(payload):
        start, ev = q, payload[q] & 0x0F
        q += 1
        fields = _FIELDS.get(ev)
        if fields is None:
            raise TraceError("unknown event 0x%x in thread %d's block" % (payload[start], tid))
        vals = []
        for f in fields:
            v, q = (_svarint if f == "A" else _varint)(payload, q)
            if f == "L":
                q += v
            elif f == "D":
                for _ in range(v):
                    _, q = _varint(payload, q)
            vals.append(v)
        events.append((ev, start, q, vals))
    return tid, base, events


def _heap_events(path):
    """(tid, event, time, fields) for each ALLOC, FREE, REALLOC and RSS
    event, in file order; fields are the decoded values after the time."""
    _, _, buf = body(path)
    for tag, payload in _records(buf):
        if tag != REC_THREAD_BLOCK:
            continue
        tid, now, events = block_events(payload)
        for ev, _, _, vals in events:
            if _FIELDS[ev][0] == "T":
                now += vals[0]
            if ev in (EV_ALLOC, EV_FREE, EV_REALLOC, EV_RSS):
                yield tid, ev, now, vals[1:]


def thread_events(path):
    """{tid: {"allocs": n, "frees": n, "sizes": {size: n}}} over all thread
    blocks; a realloc counts one free and one allocation."""
    threads = {}
    for tid, ev, _, vals in _heap_events(path):
        t = threads.setdefault(tid, {"allocs": 0, "frees": 0, "sizes": {}})
        if ev in (EV_ALLOC, EV_REALLOC):
            size = vals[1]
            t["allocs"] += 1
            t["sizes"][size] = t["sizes"].get(size, 0) + 1
        if ev in (EV_FREE, EV_REALLOC):
            t["frees"] += 1
    return threads


def heap_event_times(path):
    """{tid: [time of each ALLOC, FREE and REALLOC event, in file order]}."""
    times = {}
    for tid, ev, now, _ in _heap_events(path):
        if ev != EV_RSS:
            times.setdefault(tid, []).append(now)
    return times


REC_LEAKS = 8
LEAK_KINDS = {1: "definite", 2: "indirect", 3: "possible", 4: "reachable"}


def _raw_records(buf):
    """(tag, payload) of each record of the body buf, as written."""
    pos = 0
    while pos < len(buf):
        tag = buf[pos]
        n, p2 = _varint(buf, pos + 1)
        payload = buf[p2:p2 + n]
        if len(payload) != n:
            raise TraceError("record at %d truncated" % pos)
        pos = p2 + n
        yield tag, payload


def _records(buf):
    streams = {}  # packed blocks' address-coding states, by stream number
    for tag, payload in _raw_records(buf):
        if tag == REC_THREAD_COLUMNS:
            tag, payload = REC_THREAD_BLOCK, _join_columns(payload)
        elif tag == REC_THREAD_PACKED:
            tag, payload = REC_THREAD_BLOCK, _join_packed(payload, streams)
        elif tag in BATCHES:
            for tid, base, stream, flags, cols in _split_batch(payload, tag != REC_THREAD_BATCH,
                                                               tag == REC_THREAD_BATCH3):
                yield REC_THREAD_BLOCK, _decode_packed(tid, base, stream, cols, streams, True,
                                                       joined=bool(flags & 1), sizes=bool(flags & 2),
                                                       rank=bool(flags & 4), frees=bool(flags & 8),
                                                       freed=bool(flags & 16))
            continue
        yield tag, payload


def _columns(payload, q):
    """The 6 columns of a THREAD_COLUMNS or THREAD_PACKED payload whose
    lengths start at q, as [bytes, read position]; also where the lengths
    end and the columns do."""
    lens = []
    for _ in range(6):
        n, q = _varint(payload, q)
        lens.append(n)
    cols, at = [], q
    for n in lens:
        cols.append([payload[at:at + n], 0])
        at += n
    return cols, q, at


def _join_columns(payload):
    """A THREAD_COLUMNS payload as the THREAD_BLOCK payload it stands for."""
    q = 0
    tid, q = _varint(payload, q)
    base, q = _varint(payload, q)
    cols, q, at = _columns(payload, q)
    if at != len(payload):
        raise TraceError("thread columns of %d bytes, record of %d" % (at - q, len(payload) - q))

    def take_varint(c, out):
        buf, pos = cols[c]
        v, end = _varint(buf, pos)
        out += buf[pos:end]
        cols[c][1] = end
        return v

    out = bytearray(varint(tid) + varint(base))
    while cols[0][1] < len(cols[0][0]):
        op = cols[0][0][cols[0][1]]
        cols[0][1] += 1
        out.append(op)
        fields = _FIELDS.get(op & 0x0F)
        if fields is None:
            raise TraceError("unknown event 0x%x in thread %d's columns" % (op, tid))
        for f in fields:
            c = _COLUMN.get(f, 5)
            n = take_varint(c, out)
            if f == "L":
                buf, pos = cols[c]
                out += buf[pos:pos + n]
                cols[c][1] = pos + n
            elif f == "D":
                for _ in range(n):
                    take_varint(c, out)
    if any(p != len(b) for b, p in cols):
        raise TraceError("thread %d's columns hold bytes no event uses" % tid)
    return bytes(out)


# Packed blocks (format 1.6, common/packed.h): the address column holds
# codes: low 2 bits 0 delta (zigzag << 2; an ALLOC's from the end of the
# stream's last allocated chunk), 1 the k-th newest address freed into the
# new block's size class, 2 the address of the stream's allocation n - d,
# 3 escape (a zigzag delta follows).
PK_WINDOW, PK_BINS, PK_BINS_1_6, PK_BIN_DEPTH = 16384, 254, 64, 128


def _pk_bin(size, nbins):
    if size > 16 * nbins:
        return None
    b = max(32, (size + 8 + 15) & ~15) // 16 - 2
    return b if b < nbins else None


class _Stream:
    def __init__(self):
        self.n = 0
        self.next = 0  # where the chunk after the last allocation's starts
        self.freed = 0  # the allocation the last REF or FOLLOW free named
        self.ring = {}  # allocation number % window -> (address, class, size)
        self.named_size = None  # the size of the allocation the last free code named
        self.bins = [[] for _ in range(PK_BINS)]  # newest last
        self.live = set()  # allocations in the window no REF or FOLLOW free named yet
        self.rank = False  # the block's frees' REFs are ranks among them (1.11)
        self.recent = []  # the addresses of the last 256 frees, any class, newest last
        self.freed_codes = False  # allocations may be coded FREED k (1.11)

    def _name_freed(self, m):
        self.live.discard(m)

    def _select(self, r):
        """The allocation of rank r among the live ones, youngest first."""
        for m in range(self.n, max(0, self.n - PK_WINDOW), -1):
            if m in self.live:
                if r == 0:
                    return m
                r -= 1
        raise TraceError("bad rank of a freed allocation")

    def push(self, b, addr):
        if b is not None:
            self.bins[b].append(addr)
            del self.bins[b][:-PK_BIN_DEPTH]

    def decode(self, cols, heap, alloc, size, prev, nbins, ca=2):
        c = take(cols, ca)
        b = _pk_bin(size, nbins) if alloc else None
        self.named_size = None
        tag, v = c & 3, c >> 2
        if tag == 0:
            addr = prev + _unzigzag(v)
        elif tag == 3 and v:  # FREED k: the stream's k-th latest freed address
            if not alloc or not heap or not self.freed_codes or v - 1 >= len(self.recent):
                raise TraceError("bad freed-address code")
            addr = self.recent[len(self.recent) - v]
        elif tag == 3:
            addr = prev + _unzigzag(take(cols, ca))
        elif tag == 1 and alloc:
            if b is None or v >= len(self.bins[b]):
                raise TraceError("bad size-class address code")
            addr = self.bins[b].pop(len(self.bins[b]) - 1 - v)
        elif tag == 1:  # FOLLOW: a free of allocation freed + k
            m = self.freed + _unzigzag(v)
            if not heap or not self.freed or not 0 < m <= self.n or self.n - m >= PK_WINDOW:
                raise TraceError("bad follow-the-last-free code")
            addr, rb, self.named_size = self.ring[m % PK_WINDOW]
            self.push(rb, addr)
            self.freed = m
            self._name_freed(m)
        else:
            if not heap or v >= PK_WINDOW or v >= self.n:
                raise TraceError("bad allocation reference")
            m = self._select(v) if self.rank and not alloc else self.n - v
            addr, rb, named_size = self.ring[m % PK_WINDOW]
            if not alloc:
                self.push(rb, addr)
                self.freed = m
                self.named_size = named_size
                self._name_freed(m)
        addr &= (1 << 64) - 1
        if heap and not alloc:
            self.recent.append(addr)
            del self.recent[:-256]
        if alloc:
            self.n += 1
            self.live.discard(self.n - PK_WINDOW)
            self.live.add(self.n)
            self.ring[self.n % PK_WINDOW] = (addr, b, size)
            self.next = (addr + max(32, (size + 8 + 15) & ~15)) & ((1 << 64) - 1)
        return addr


def _s64(v):
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _unzigzag(v):
    return (v >> 1) ^ -(v & 1)


def take(cols, c):
    buf, pos = cols[c]
    v, cols[c][1] = _varint(buf, pos)
    return v


def _join_packed(payload, streams):
    """A THREAD_PACKED payload as the THREAD_BLOCK payload it stands for."""
    q = 0
    tid, q = _varint(payload, q)
    base, q = _varint(payload, q)
    stream, q = _varint(payload, q)
    cols, _, _ = _columns(payload, q)
    return _decode_packed(tid, base, stream, cols, streams)


def _join_varints(first, rest):
    """The varints whose first bytes are first and whose other bytes are
    rest, as one byte string (THREAD_BATCH3's split columns)."""
    out, r = bytearray(), 0
    for b in first:
        out.append(b)
        n = 1
        while b & 0x80:
            if r == len(rest) or n == 10:
                raise TraceError("split column does not make whole varints")
            b = rest[r]
            r += 1
            n += 1
            out.append(b)
    if r != len(rest):
        raise TraceError("split column has bytes left over")
    return bytes(out)


SPLIT_COLS = (2, 3, 4)  # the columns a THREAD_BATCH3 splits


def _split_batch(payload, with_flags=False, split=False):
    """A THREAD_BATCH (or, with_flags, THREAD_BATCH2; with split too,
    THREAD_BATCH3) payload as [(tid, base, stream, flags, cols)], its blocks
    in order, cols as _columns gives them (the stack ids in column 0; with
    flags bit 0, the address codes too; bit 1: REALLOC sizes coded against
    the old block's, format 1.10; split: columns 2 and 3 are the first bytes
    of their varints then the rest, format 1.11)."""
    count, q = _varint(payload, 0)
    nfirst = {}
    if split:
        for c in SPLIT_COLS:
            nfirst[c], q = _varint(payload, q)
    heads = []
    for _ in range(count):
        tid, q = _varint(payload, q)
        base, q = _varint(payload, q)
        stream, q = _varint(payload, q)
        flags = 0
        if with_flags:
            flags, q = _varint(payload, q)
            if flags & ~31:
                raise TraceError("unknown batch block flags 0x%x" % flags)
        lens = []
        for _ in range(6):
            n, q = _varint(payload, q)
            lens.append(n)
        heads.append((tid, base, stream, flags, lens))
    at, whole = q, []
    for c in range(6):
        n = sum(h[4][c] for h in heads)
        col = payload[at:at + n]
        if c in nfirst:
            if nfirst[c] > n:
                raise TraceError("split column holds fewer bytes than varints")
            col = _join_varints(col[:nfirst[c]], col[nfirst[c]:])
        whole.append(col)
        at += n
    if at != len(payload):
        raise TraceError("batch columns do not fill the record")
    starts = [0] * 6
    blocks = []
    for tid, base, stream, flags, lens in heads:
        cols = []
        for c in range(6):
            cols.append([whole[c][starts[c]:starts[c] + lens[c]], 0])
            starts[c] += lens[c]
        blocks.append((tid, base, stream, flags, cols))
    return blocks


def _pk_size_decode(code, old):
    """A REALLOC's size coded against its old block's (common/packed.h,
    ht_pk_size_code): 0 twice the old size, else the zigzag change + 1."""
    return (2 * old if code == 0 else old + _unzigzag(code - 1)) & ((1 << 64) - 1)


def _decode_packed(tid, base, stream, cols, streams, batch=False, joined=False, sizes=False,
                   rank=False, frees=False, freed=False):
    """One packed block's columns as the THREAD_BLOCK payload it stands for;
    batch: a THREAD_BATCH's block, whose stack ids are in column 0 and
    which has 254 size classes (a THREAD_PACKED record's: 64); joined: its
    address codes are in column 0 too, each event's before its stack id;
    sizes: a REALLOC whose old block's code named an allocation has its
    size coded against that block's; rank: a free's REF is its allocation's
    rank among the stream's live allocations (format 1.11); frees: the free
    codes (FREE's, a REALLOC's old block's) are in column 4; freed: an
    allocation may be coded FREED k, the stream's k-th latest freed address
    (both format 1.11)."""
    ca = 0 if joined else 2
    fc = 4 if frees else ca
    nbins = PK_BINS if batch else PK_BINS_1_6
    if stream & 1:
        streams[stream >> 1] = _Stream()
    st = streams.get(stream >> 1)
    if st is None:
        raise TraceError("packed block of stream %d before its start" % (stream >> 1))
    st.rank = rank
    st.freed_codes = freed
    out = bytearray(varint(tid) + varint(base))
    blk_prev = pk_prev = 0
    while cols[0][1] < len(cols[0][0]):
        op = cols[0][0][cols[0][1]]
        cols[0][1] += 1
        out.append(op)
        ev = op & 0x0F
        fields = _FIELDS.get(ev)
        if fields is None:
            raise TraceError("unknown event 0x%x in thread %d's packed block" % (op, tid))
        heap = ev in (EV_ALLOC, EV_FREE, EV_REALLOC)
        addr = old = 0
        for i, f in enumerate(fields):
            if f == "A":
                size = _varint(*cols[3])[0] if ev == EV_ALLOC or (ev == EV_REALLOC and not sizes) else 0
                if ev == EV_REALLOC:
                    old = st.decode(cols, True, False, 0, pk_prev, nbins, fc)
                    if sizes:  # the size column's varint is taken here, written at "S"
                        size = take(cols, 3)
                        if st.named_size is not None:
                            size = _pk_size_decode(size, st.named_size)
                    addr = st.decode(cols, True, True, size, old, nbins, ca)
                else:
                    addr = st.decode(cols, heap, ev == EV_ALLOC, size,
                                     st.next if ev == EV_ALLOC else pk_prev, nbins,
                                     fc if ev == EV_FREE else ca)
                pk_prev = addr
                out += svarint(_s64(addr - blk_prev))
                blk_prev = addr
            elif ev == EV_REALLOC and i == 4:
                out += svarint(_s64(old - addr))
            elif ev == EV_REALLOC and f == "S" and sizes:
                out += varint(size)
            else:
                c = 0 if f == "K" and batch else _COLUMN.get(f, 5)
                buf, pos = cols[c]
                v, end = _varint(buf, pos)
                if f == "L":
                    end += v
                elif f == "D":
                    for _ in range(v):
                        _, end = _varint(buf, end)
                out += buf[pos:end]
                cols[c][1] = end
    if any(p != len(b) for b, p in cols):
        raise TraceError("thread %d's packed columns hold bytes no event uses" % tid)
    return bytes(out)


def leak_checks(path):
    """{check_id: {"reason": r, "complete": bool, "kinds": {addr: kind name}}}
    from the LEAKS records (format 1.4). They are never packed: the raw
    records suffice, and the events are not decoded."""
    _, _, buf = body(path)
    checks = {}
    for tag, payload in _raw_records(buf):
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
# ---- records, replay and writing (tests of LEAKS records and
# LEAK_CHECK events added to a real trace) ----------------------------------

REC_LEAKS = 8
EV_PALLOC, EV_EXT = 0xD, 0xF
EXT_LEAK_CHECK = 4
LEAK_DEFINITE, LEAK_INDIRECT, LEAK_POSSIBLE, LEAK_REACHABLE = 1, 2, 3, 4


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def svarint(v):
    return varint((v << 1) ^ (v >> 63) if v >= 0 else ((-v - 1) << 1) | 1)


def batch_counts(path):
    """The block counts of the trace's THREAD_BATCH records in file order,
    and the number of THREAD_BLOCK, THREAD_COLUMNS and THREAD_PACKED
    records (blocks outside batches)."""
    counts, single = [], 0
    for tag, payload in _raw_records(body(path)[2]):
        if tag in BATCHES:
            counts.append(_varint(payload, 0)[0])
        elif tag in (REC_THREAD_BLOCK, REC_THREAD_COLUMNS, REC_THREAD_PACKED):
            single += 1
    return counts, single


def joined_blocks(path):
    """(blocks in THREAD_BATCH2 and THREAD_BATCH3 records, how many of them
    have their address codes in column 0)."""
    blocks = joined = 0
    for tag, payload in _raw_records(body(path)[2]):
        if tag in (REC_THREAD_BATCH2, REC_THREAD_BATCH3):
            for blk in _split_batch(payload, True, tag == REC_THREAD_BATCH3):
                blocks += 1
                joined += blk[3] & 1
    return blocks, joined


def records(path):
    """[(tag, payload)] of the trace's body, in file order; THREAD_COLUMNS
    records come as the THREAD_BLOCKs they stand for."""
    _, _, buf = body(path)
    return [(tag, bytes(payload)) for tag, payload in _records(buf)]


def write(path, recs, major=1, minor=4):
    """A raw (uncompressed) trace of these records."""
    data = bytearray(MAGIC + struct.pack("<HHI", major, minor, 0))
    for tag, payload in recs:
        data += bytes([tag]) + varint(len(payload)) + payload
    Path(path).write_bytes(bytes(data))


def record(tag, payload):
    return (tag, payload)


def zstd_rle_frame(byte, nbytes, block=1 << 17):
    """A zstd frame (written by hand: RLE blocks, no checksum) that
    decompresses to nbytes copies of byte, 4 bytes per 128 KiB block: the
    format's highest ratio, what a zstd bomb is made of."""
    # magic, frame header descriptor 0 (no content size, not single
    # segment, no checksum), window descriptor 0x38 (2^17 bytes)
    out = bytearray(b"\x28\xb5\x2f\xfd\x00\x38")
    while nbytes > 0:
        n = min(block, nbytes)
        nbytes -= n
        # block header: last bit, type 1 (RLE), size: 3 bytes LE
        out += struct.pack("<I", (n << 3) | (1 << 1) | (nbytes == 0))[:3] + bytes([byte])
    return bytes(out)


def zstd_bomb(path, prefix, nbytes):
    """The compressed trace prefix (a real one, whole) followed by a frame
    of nbytes zeros: records of tag 0 (unknown, skipped by length) and
    length 0, two bytes each."""
    data = Path(prefix).read_bytes()
    if len(data) < 16 or data[:8] != MAGIC or not struct.unpack("<I", data[12:16])[0] & 1:
        raise TraceError("%s: not a compressed trace" % prefix)
    Path(path).write_bytes(data + zstd_rle_frame(0, nbytes))


def leaks_record(time, check_id, entries, reason=0, last=1):
    """LEAKS: entries [(addr, kind)] (sorted here, as the agent does)."""
    p = varint(time) + varint(check_id) + varint(reason) + varint(last)
    prev = 0
    for addr, kind in sorted(entries):
        p += svarint(addr - prev) + varint(kind)
        prev = addr
    return (REC_LEAKS, p)


def ext_block(tid, time, kind, payload):
    """A THREAD_BLOCK holding one EXT event of this kind at this time."""
    ev = bytes([EV_EXT | kind << 4]) + varint(0) + varint(len(payload)) + payload
    return (REC_THREAD_BLOCK, varint(tid) + varint(time) + ev)


def allocations(path):
    """Every allocation of a single-threaded-per-block trace in file order:
    [{"tid", "seq" (the thread's allocation number), "addr", "size",
    "time", "freed_at"}]; frees matched by address (the last live block)."""
    out, live, seq = [], {}, {}
    for tag, p in records(path):
        if tag != REC_THREAD_BLOCK:
            continue
        q = 0
        tid, q = _varint(p, q)
        t, q = _varint(p, q)
        addr = 0
        while q < len(p):
            op = p[q]
            ev = op & 0x0F
            q += 1
            if ev in (EV_ALLOC, EV_REALLOC, EV_PALLOC, EV_FREE):
                dt, q = _varint(p, q)
                da, q = _svarint(p, q)
                t += dt
                addr += da
                if ev == EV_FREE:
                    if addr in live:
                        live.pop(addr)["freed_at"] = t
                    continue
                size, q = _varint(p, q)
                _, q = _varint(p, q)
                if ev == EV_REALLOC:
                    dold, q = _svarint(p, q)
                    lead, q = _varint(p, q)
                    if addr + dold in live:
                        # the old block was freed lead ns before the event,
                        # never before the previous one (FORMAT.md, REALLOC)
                        live.pop(addr + dold)["freed_at"] = t - (lead if lead <= dt else dt)
                if ev == EV_PALLOC:
                    _, q = _varint(p, q)
                seq[tid] = seq.get(tid, 0) + 1
                a = {"tid": tid, "seq": seq[tid], "addr": addr, "size": size, "time": t,
                     "freed_at": None}
                live[addr] = a
                out.append(a)
            elif ev == EV_STACK:
                _, q = _varint(p, q)
                depth, q = _varint(p, q)
                for _ in range(depth):
                    _, q = _svarint(p, q)
            elif ev == EV_RSS:
                dt, q = _varint(p, q)
                _, q = _varint(p, q)
                t += dt
            elif ev == EV_EXT:
                dt, q = _varint(p, q)
                n, q = _varint(p, q)
                t += dt
                q += n
            else:
                raise TraceError("event 0x%x not handled by allocations()" % op)
    return out
