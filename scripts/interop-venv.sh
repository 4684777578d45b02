#!/usr/bin/env bash
# Creates (idempotently) the Python venv for the a2a-sdk interop check at
# target/interop-venv and installs tests/interop/requirements.txt into it, but only when
# that file changed since the last successful install (its sha256 is kept in the venv).
# Prints the venv's python path as the last line of stdout.
#
# Usage: scripts/interop-venv.sh [VENV_DIR REQUIREMENTS] (another SDK's venv, e.g. the
# 0.3 one: target/interop-venv-03 tests/interop/v03/requirements.txt).
#
# On a fresh Debian machine without the venv module (python3-venv / ensurepip), it
# installs python3-venv with apt-get when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${1:-target/interop-venv}
req=${2:-tests/interop/requirements.txt}
stamp=$venv/.requirements.sha256
py=$venv/bin/python

command -v python3 >/dev/null || { echo "python3 is required" >&2; exit 1; }

make_venv() {
    rm -rf "$venv"
    python3 -m venv "$venv"
}

if [ ! -x "$py" ] || ! "$py" -c 'import sys' >/dev/null 2>&1; then
    mkdir -p target
    if ! make_venv >&2; then
        # Debian/Ubuntu ship venv/ensurepip separately (python3-venv or python3.X-venv).
        if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
            echo "interop-venv: python3 -m venv failed; installing python3-venv" >&2
            pyver=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
            export DEBIAN_FRONTEND=noninteractive
            apt-get update >&2
            apt-get install -y python3-venv >&2 || true
            # python3-venv may not pull in the versioned ensurepip package everywhere.
            apt-get install -y "python${pyver}-venv" >&2 || true
            make_venv >&2
        else
            echo "interop-venv: python3 -m venv failed; install python3-venv (as root: apt-get install -y python3-venv)" >&2
            exit 1
        fi
    fi
fi

want=$(sha256sum "$req" | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)
if [ "$want" != "$have" ]; then
    rm -f "$stamp"
    "$py" -m pip install --disable-pip-version-check -q -r "$req" >&2
    echo "$want" >"$stamp"
fi

echo "$PWD/$py"
