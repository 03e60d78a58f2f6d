#!/bin/sh
# Takes the README's pictures of the HTML report: profiles the bundled
# example (examples/leaky.c, 1000 records, then 1500 for the diff), writes
# its report and the diff as HTML, and has headless Chromium photograph each
# view (tests/e2e/clients/html_screenshots.cjs) into docs/images/.
# Needs node, npm (tests/clients/install.sh) and /usr/bin/chromium.
# Usage: scripts/screenshots.sh [OUTDIR]
set -eu
cd "$(dirname "$0")/.."
outdir=${1:-docs/images}
make -j2 all build/examples/leaky >/dev/null
clients=$(sh tests/clients/install.sh)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build/heaptrail run -o "$tmp/leaky.ht" -- build/examples/leaky 2>/dev/null
build/heaptrail run -o "$tmp/leaky-1500.ht" -- build/examples/leaky 1500 2>/dev/null
# in the trace's directory, so that the pages name it leaky.ht
ht=$(pwd)/build/heaptrail
(cd "$tmp" && "$ht" report --format html -o report.html leaky.ht &&
	"$ht" diff --format html -o diff.html leaky.ht leaky-1500.ht)
mkdir -p "$outdir"
NODE_PATH="$clients/node_modules" node tests/e2e/clients/html_screenshots.cjs \
	"$tmp/report.html" "$tmp/diff.html" "$outdir"
