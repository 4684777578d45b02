#!/usr/bin/env bash
# Makes sure `redis-server` is installed and prints its absolute path as the last line of
# stdout (everything else goes to stderr), for the redis-streams push-queue tests:
#
#   A2AD_REDIS_SERVER=$(scripts/redis.sh | tail -n 1)
#
# The tests start their own redis-server on a free loopback port; this script only installs
# the binary. It never starts (or leaves enabled) a system redis service. On a fresh Debian
# or Ubuntu machine, as root, it installs the `redis-server` package with apt.
set -euo pipefail

found() {
    echo "redis.sh: using $1" >&2
    echo "$1"
    exit 0
}

# An explicit binary wins.
if [ -n "${A2AD_REDIS_SERVER:-}" ]; then
    [ -x "$A2AD_REDIS_SERVER" ] || { echo "redis.sh: A2AD_REDIS_SERVER=$A2AD_REDIS_SERVER is not executable" >&2; exit 1; }
    found "$(cd "$(dirname "$A2AD_REDIS_SERVER")" && pwd)/$(basename "$A2AD_REDIS_SERVER")"
fi

# The path itself, not its target: Debian's redis-server is a symlink to redis-check-rdb,
# which picks its personality from argv[0].
locate() {
    local path
    path=$(command -v redis-server 2>/dev/null || true)
    if [ -z "$path" ]; then
        for candidate in /usr/bin/redis-server /usr/sbin/redis-server /usr/local/bin/redis-server; do
            if [ -x "$candidate" ]; then path=$candidate; break; fi
        done
    fi
    [ -n "$path" ] || return 1
    case $path in
        /*) echo "$path" ;;
        *) echo "$(cd "$(dirname "$path")" && pwd)/$(basename "$path")" ;;
    esac
}

if path=$(locate); then
    found "$path"
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "redis.sh: redis-server is not installed and this is not root." >&2
    echo "redis.sh: install it (Debian/Ubuntu: sudo apt-get install -y redis-server) or set A2AD_REDIS_SERVER." >&2
    exit 1
fi
command -v apt-get >/dev/null || { echo "redis.sh: redis-server is missing and apt-get is not available; install redis-server (7.x) yourself" >&2; exit 1; }

# Installing a Debian service package normally starts it. A policy-rc.d that answers 101
# ("action forbidden") stops invoke-rc.d and deb-systemd-invoke from doing so; an existing
# policy is left alone. Afterwards the service is disabled where systemd is in charge.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 0755 "$policy"
    own_policy=1
fi
cleanup() { if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

echo "redis.sh: installing redis-server with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update >&2
apt-get install -y --no-install-recommends redis-server >&2
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
    systemctl disable --now redis-server >&2 2>/dev/null || true
fi

cleanup
own_policy=0
if path=$(locate); then
    found "$path"
fi
echo "redis.sh: redis-server is still not on PATH after installing it" >&2
exit 1
