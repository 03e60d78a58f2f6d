#!/bin/sh
# Installs the dependencies, builds heaptrail, and profiles the bundled
# example program, printing its report. Usage: scripts/demo.sh
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
make -j2 all build/examples/leaky >/dev/null
out=$(mktemp -d)
echo "== heaptrail run -o $out/leaky.ht -- build/examples/leaky" >&2
build/heaptrail run -o "$out/leaky.ht" -- build/examples/leaky
echo "== heaptrail report $out/leaky.ht" >&2
build/heaptrail report "$out/leaky.ht"
