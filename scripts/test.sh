#!/bin/sh
# Installs the dependencies, builds everything, and runs the whole test suite.
# The last line is "N passed, N failed". Usage: scripts/test.sh
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
make -j2 check
