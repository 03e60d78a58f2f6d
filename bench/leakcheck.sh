#!/bin/sh
# bench/leakcheck.sh - what the leak check costs at exit: a program that
# exits with N live blocks (bench/workloads/live_blocks.c: a reachable tree
# and a lost list), run plain, under the agent without leak checking
# (leak_check=0) and with it (the default), and under valgrind memcheck.
# Prints wall seconds and peak RSS, medians of 3 runs.
#   sh bench/leakcheck.sh [N]     (default 1000000; build first: make bench)
cd "$(dirname "$0")/.." || exit 1
N=${1:-1000000}
PROG=build/bench/live_blocks
AGENT=$PWD/build/libheaptrail.so
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

# median of three "seconds KB" lines
measure() {
	for i in 1 2 3; do
		rm -f "$TMP/t.ht"
		/usr/bin/time -f "%e %M" -o "$TMP/time" "$@" >/dev/null 2>&1
		cat "$TMP/time"
	done | sort -n | sed -n 2p
}

printf '%-28s %10s %12s\n' "run ($N live blocks)" "seconds" "peak RSS MB"
row() {
	name=$1
	shift
	set -- $(measure "$@")
	printf '%-28s %10s %12s\n' "$name" "$1" "$(($2 / 1024))"
}
row plain "$PROG" "$N"
row "heaptrail leak_check=0" env HEAPTRAIL_OPTIONS="output=$TMP/t.ht,leak_check=0" LD_PRELOAD="$AGENT" "$PROG" "$N"
row "heaptrail (leak check)" env HEAPTRAIL_OPTIONS="output=$TMP/t.ht" LD_PRELOAD="$AGENT" "$PROG" "$N"
if command -v valgrind >/dev/null; then
	rm -f "$TMP/time"
	/usr/bin/time -f "%e %M" -o "$TMP/time" valgrind --leak-check=full "$PROG" "$N" >/dev/null 2>&1
	set -- $(cat "$TMP/time")
	printf '%-28s %10s %12s\n' "valgrind memcheck (1 run)" "$1" "$(($2 / 1024))"
fi
