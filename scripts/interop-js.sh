#!/usr/bin/env bash
# Installs (idempotently) the official A2A JavaScript SDK for the interop check in
# tests/interop/js: runs `npm ci` there, but only when package-lock.json changed since the
# last successful install (its sha256 is kept in node_modules). Prints the absolute path of
# client_check.mjs as the last line of stdout; everything else goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=tests/interop/js
lock=$dir/package-lock.json
stamp=$dir/node_modules/.package-lock.sha256

command -v node >/dev/null || { echo "interop-js: node is required (Node.js >= 20)" >&2; exit 1; }
command -v npm >/dev/null || { echo "interop-js: npm is required (it comes with Node.js)" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || { echo "interop-js: Node.js >= 20 is required, found $(node --version)" >&2; exit 1; }
[ -f "$lock" ] || { echo "interop-js: $lock is missing" >&2; exit 1; }

want=$(sha256sum "$lock" | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)
if [ "$want" != "$have" ]; then
    echo "interop-js: npm ci in $dir" >&2
    (cd "$dir" && npm ci --no-audit --no-fund >&2)
    echo "$want" >"$stamp"
fi

echo "$PWD/$dir/client_check.mjs"
