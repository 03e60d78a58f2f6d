#!/bin/sh
# Installs what heaptrail needs to build and test, from Debian packages only.
# Idempotent and quiet when everything is already there. Run as root (or
# with sudo available). Debian 12 (bookworm).
set -eu

# Build: compiler, libdw, libunwind, zstd, zlib, protobuf-c. Tests: clang
# (libFuzzer), valgrind and heaptrack (oracles, comparison), and the real
# clients of the export formats: go tool pprof, protoc, ms_print (valgrind),
# heaptrack_print, Chromium and Firefox (the HTML report opens in both); npm for the JavaScript clients; jemalloc,
# tcmalloc and mimalloc, whose operator new and fork handlers the tests run
# under (skipped without); tmux, the terminal heaptrail top's tests drive.
PKGS="build-essential pkg-config libdw-dev libelf-dev libunwind-dev \
libzstd-dev zlib1g-dev libprotobuf-c-dev protobuf-c-compiler clang \
libclang-rt-14-dev python3 valgrind heaptrack gdb file golang-go \
protobuf-compiler chromium firefox-esr sqlite3 time zstd libjemalloc2 libtcmalloc-minimal4 \
libmimalloc2.0 tmux"
command -v npm >/dev/null 2>&1 || PKGS="$PKGS nodejs npm"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "heaptrail setup: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# libunwind-dev (the nongnu libunwind heaptrail uses) conflicts with LLVM's
# libunwind-14-dev; apt removes the latter, which nothing here needs.
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
