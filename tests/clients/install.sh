#!/bin/sh
# Installs the npm test clients pinned in tests/clients/package-lock.json
# into build/clients/node_modules (once; again when the lock file changes).
# Prints the directory. The suite skips the client checks that need npm if
# this fails (no network), saying so.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$(cd "$here/../.." && pwd)/build/clients
mkdir -p "$dest"
if ! cmp -s "$here/package-lock.json" "$dest/package-lock.json" 2>/dev/null ||
   [ ! -d "$dest/node_modules" ]; then
	cp "$here/package.json" "$here/package-lock.json" "$dest/"
	(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi
echo "$dest"
