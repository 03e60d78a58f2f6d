#!/bin/sh
# bench/compare.sh - plain vs heaptrail vs heaptrack on the bench workloads.
# The work is done by bench/compare.py (same options; --help lists them).
exec /usr/bin/python3 "$(dirname "$0")/compare.py" "$@"
