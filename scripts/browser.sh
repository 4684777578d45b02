#!/usr/bin/env bash
# Makes sure headless Chromium and its WebDriver (chromedriver) are installed, for the
# console's browser tests (tests/node/console.rs), and prints the chromedriver path as the
# last line of stdout (everything else goes to stderr):
#
#   A2AD_CHROMEDRIVER=$(scripts/browser.sh | tail -n 1)
#
# On Debian or Ubuntu, as root, it installs the distribution's `chromium` and
# `chromium-driver` packages with apt. When they cannot be installed it prints an empty
# last line and exits 0: the browser tests then skip, saying why.
set -uo pipefail

found() {
    echo "browser.sh: using $1 (chromium: $(command -v chromium || echo '?'))" >&2
    echo "$1"
    exit 0
}

locate() {
    local driver
    driver=${A2AD_CHROMEDRIVER:-$(command -v chromedriver 2>/dev/null || true)}
    [ -n "$driver" ] && [ -x "$driver" ] && command -v chromium >/dev/null && echo "$driver"
}

if path=$(locate); then
    found "$path"
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "browser.sh: chromium and chromedriver are missing and cannot be installed here (not root, or no apt-get);" >&2
    echo "browser.sh: install them (Debian/Ubuntu: apt-get install -y chromium chromium-driver); the browser tests skip" >&2
    echo ""
    exit 0
fi
echo "browser.sh: installing chromium and chromium-driver with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update >&2 && apt-get install -y --no-install-recommends chromium chromium-driver >&2
if path=$(locate); then
    found "$path"
fi
echo "browser.sh: chromium could not be installed; the browser tests skip" >&2
echo ""
