#!/usr/bin/env bash
# Runs the whole test suite: unit tests of every crate and the end-to-end tests in tests/,
# which start the node (in-process and as the real binary) on loopback ports with temp
# data dirs, including the interop checks with the official Python client (a2a-sdk) and
# JavaScript client (@a2a-js/sdk), and the push-queue and cluster tests against real
# redis-servers; then the end-to-end suite again on the shared Redis store, on one
# redis-server and on a Redis Cluster.
# It installs whatever the tests need first, so it works on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo >/dev/null || { echo "cargo is required (https://rustup.rs)" >&2; exit 1; }

# The a2a-sdk venv (created or updated only when tests/interop/requirements.txt changes).
A2AD_INTEROP_PYTHON=$(scripts/interop-venv.sh | tail -n 1)
export A2AD_INTEROP_PYTHON A2AD_REQUIRE_INTEROP=1
# The a2a-sdk 0.3.x venv, for the 0.3 dialect check (tests/interop/v03).
A2AD_INTEROP_PYTHON_03=$(scripts/interop-venv.sh target/interop-venv-03 tests/interop/v03/requirements.txt | tail -n 1)
export A2AD_INTEROP_PYTHON_03
# The @a2a-js/sdk check (npm ci only when tests/interop/js/package-lock.json changes).
A2AD_INTEROP_JS=$(scripts/interop-js.sh | tail -n 1)
export A2AD_INTEROP_JS

# A redis-server binary for the Redis Streams push-queue tests (installed when missing;
# the tests start their own servers on free ports).
A2AD_REDIS_SERVER=$(scripts/redis.sh | tail -n 1)
export A2AD_REDIS_SERVER A2AD_REQUIRE_REDIS=1

# strace, for the check that the write-ahead log gives a file up only after sled's files
# are fsynced (tests/node/log_order.rs); Debian's package, installed when missing.
if ! command -v strace >/dev/null; then
    { apt-get update -qq && apt-get install -y -qq strace; } >/dev/null 2>&1 || echo "could not install strace" >&2
fi

# Headless Chromium and chromedriver for the console's browser tests (installed when
# missing; when they cannot be, the browser tests fail, as A2AD_REQUIRE_ALL below asks).
A2AD_CHROMEDRIVER=$(scripts/browser.sh | tail -n 1)
if [ -n "$A2AD_CHROMEDRIVER" ]; then
    export A2AD_CHROMEDRIVER A2AD_REQUIRE_BROWSER=1
fi

# Every test runs: one that cannot find what it needs fails instead of skipping
# (storage/src/test_skip.rs). A plain `cargo test` without this skips such tests, loudly.
export A2AD_REQUIRE_ALL=1

cargo test --workspace --locked
# The end-to-end suite once more with every in-process node on the shared store
# (`store: redis`, one redis-server the test binary starts): the same scenarios against
# both backends. The cluster tests (tests/node/cluster.rs) run in both passes.
A2AD_TEST_STORE=redis cargo test --locked --test node
# And once more on a Redis Cluster of three primaries (the store's keys over 16 shards),
# started by the test binary; the multi-node tests then run their nodes on it too.
A2AD_TEST_STORE=redis-cluster cargo test --locked --test node
