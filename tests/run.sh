#!/bin/sh
# tests/run.sh - heaptrail's whole test suite, as `make check` runs it.
#
#   1. every build/unit/* binary (each ends with "N passed, N failed");
#   2. build/fuzz/replay_reader tests/fuzz/corpus (one test: exit status);
#   3. the end-to-end tests (tests/e2e/run.py: PASS/FAIL lines).
#
# Prints each part's output, with its own closing line renamed
# ("unit/x: N passed, N failed"), and ends with exactly one line
# "N passed, N failed" summing them all, which CI reads. Exit status 1 if
# anything failed. Run from anywhere; paths are relative to the repository.
# Extra arguments go to the e2e runner (e.g. a test-name pattern).

cd "$(dirname "$0")/.." || exit 1

PASSED=0
FAILED=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/heaptrail-check.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM

# One part's output in $TMP/out, its exit status $1, its name $2: print it
# (closing line renamed) and add its counts; a part with no closing line
# counts as one test, passed if its exit status is 0.
# With a third argument "shown", the output was already streamed.
account() {
	rc=$1
	name=$2
	summary=$(grep -E '^(e2e: )?[0-9]+ passed, [0-9]+ failed$' "$TMP/out" | tail -n 1)
	[ "$3" = shown ] ||
		sed -E "s@^(e2e: )?([0-9]+ passed, [0-9]+ failed)\$@$name: \\2@" "$TMP/out"
	if [ -n "$summary" ]; then
		p=$(echo "$summary" | sed -E 's/^(e2e: )?([0-9]+) passed.*/\2/')
		f=$(echo "$summary" | sed -E 's/.* ([0-9]+) failed$/\1/')
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
			# Claimed success but exited non-zero (crash at exit, leak
			# found by a sanitizer...): count the difference as a failure.
			echo "FAIL $name: exit status $rc despite \"$summary\""
			f=1
		fi
	elif [ "$rc" -eq 0 ]; then
		echo "PASS $name"
		p=1
		f=0
	else
		echo "FAIL $name: exit status $rc"
		p=0
		f=1
	fi
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
}

# 1. Unit tests.
found_unit=0
for u in build/unit/*; do
	[ -f "$u" ] && [ -x "$u" ] || continue
	found_unit=1
	timeout 300 "$u" >"$TMP/out" 2>&1
	account $? "unit/$(basename "$u")"
done
if [ $found_unit -eq 0 ]; then
	echo "FAIL unit: no unit test binaries in build/unit (run make check)"
	FAILED=$((FAILED + 1))
fi

# 2. The fuzz corpus through the reader (ASan+UBSan build).
if [ -x build/fuzz/replay_reader ]; then
	timeout 600 build/fuzz/replay_reader tests/fuzz/corpus >"$TMP/out" 2>&1
	account $? "fuzz/replay_reader"
else
	echo "FAIL fuzz/replay_reader: build/fuzz/replay_reader missing (run make check)"
	FAILED=$((FAILED + 1))
fi

# 3. End to end, streamed as it runs (its closing line reads "e2e: ...").
# Every report reads its trace as the reader does a trace past its budget
# (analysis/reader.c, "replayed blocks"): the unit tests and the bench keep the
# default, and trace.replayed_blocks compares the two.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
{
	HEAPTRAIL_READER_RESIDENT_MB=${HEAPTRAIL_READER_RESIDENT_MB-0} "$PY" tests/e2e/run.py "$@" 2>&1
	echo $? >"$TMP/rc"
} | tee "$TMP/out"
account "$(cat "$TMP/rc")" "e2e" shown

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
