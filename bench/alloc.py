"""bench/alloc.py - an allocation-heavy pure-Python workload for the profiler bench.

Usage: /usr/bin/python3 bench/alloc.py [ROUNDS]   (default 6)

Builds and drops dicts, lists, strings, tuples, sets and small objects the way
a data-munging script does: parse synthetic CSV-ish lines, group records in
dicts, join and format strings, sort, JSON-encode. CPython serves small
objects from its own pool allocator (pymalloc) and goes to malloc for larger
ones (big strings, list/dict storage growth, arenas), as real Python does.
compare.py runs it with PYTHONMALLOC=malloc, which sends every object to
malloc (~7M calls) - the way Python is profiled with heaptrack or valgrind.
Deterministic for a fixed PYTHONHASHSEED (compare.sh sets 0); prints one line.
"""
import json
import sys


class Record:
    __slots__ = ("key", "city", "amount", "tags")

    def __init__(self, key, city, amount, tags):
        self.key = key
        self.city = city
        self.amount = amount
        self.tags = tags


def make_lines(seed, n):
    x = seed
    lines = []
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        lines.append("%d,customer-%d,city-%d,%d.%02d,%s" % (
            i, x % 5000, x % 97, x % 1000, x % 100,
            "|".join("tag%d" % ((x >> k) & 31) for k in range(0, 12, 3))))
    return lines


def parse(lines):
    out = []
    for line in lines:
        idx, key, city, amount, tags = line.split(",")
        out.append(Record(key, city, float(amount), tags.split("|")))
    return out


def group(records):
    by_city = {}
    tag_count = {}
    for r in records:
        by_city.setdefault(r.city, []).append(r)
        for t in r.tags:
            tag_count[t] = tag_count.get(t, 0) + 1
    return by_city, tag_count


def summarise(by_city):
    rows = []
    for city, recs in by_city.items():
        amounts = sorted(r.amount for r in recs)
        keys = {r.key for r in recs}
        rows.append({
            "city": city,
            "n": len(recs),
            "median": amounts[len(amounts) // 2],
            "distinct": len(keys),
            "sample": ",".join(sorted(keys)[:20]),
        })
    rows.sort(key=lambda d: (-d["n"], d["city"]))
    return rows


def round_(seed):
    lines = make_lines(seed, 20000)
    records = parse(lines)
    by_city, tags = group(records)
    rows = summarise(by_city)
    text = json.dumps(rows)
    back = json.loads(text)
    blob = "\n".join(lines)
    words = blob.replace(",", " ").split()
    return len(back) + len(words) + sum(tags.values()) + len(text)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    total = 0
    for i in range(rounds):
        total += round_(i * 7919 + 1)
    print("alloc.py: %d rounds, checksum %d" % (rounds, total))


if __name__ == "__main__":
    main()
