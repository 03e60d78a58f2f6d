#!/bin/sh
# bench/summary_memory.sh - summary mode's memory stays flat: runs the churn
# workload for ITERATIONS (default 100000000: 300 million allocations) with
# heaptrail's summary mode, samples the process's resident set every
# INTERVAL seconds (default 5), and prints the samples and the totals.
#   sh bench/summary_memory.sh [ITERATIONS] [INTERVAL]   (make bench first)
cd "$(dirname "$0")/.." || exit 1
ITER=${1:-100000000}
EVERY=${2:-5}
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
HEAPTRAIL_OPTIONS="output=$TMP/s.ht,summary=1" LD_PRELOAD="$PWD/build/libheaptrail.so" \
	build/bench/churn "$ITER" &
pid=$!
start=$(date +%s)
echo "seconds  VmRSS"
while kill -0 "$pid" 2>/dev/null; do
	rss=$(awk '/^VmRSS/ {print $2 " " $3}' "/proc/$pid/status" 2>/dev/null)
	[ -n "$rss" ] && printf '%7s  %s\n' "$(($(date +%s) - start))" "$rss"
	sleep "$EVERY"
done
wait "$pid"
echo "exit status $?, $(($(date +%s) - start)) s"
build/heaptrail report "$TMP/s.ht" | sed -n '/^SUMMARY -/,/run time/p'
ls -l "$TMP/s.ht" | awk '{print "summary file: " $5 " bytes"}'
