#!/usr/bin/env bash
# Builds the Debian package (`cargo deb`, [package.metadata.deb] in Cargo.toml) and checks
# it: what lands where, with which modes, that the packaged binary serves the packaged
# sample config, and, as root, a real `dpkg -i` / reinstall / `-r` / `--purge` in a throw-away
# copy-on-write view of this system (an overlay mount in a private mount namespace: the
# host's files, users and dpkg database are never touched).
#
# It packages a debug build (`--profile dev --no-build`, stripped like a release one), so
# it costs one `cargo build` of the binary, which `scripts/test.sh` has already made,
# plus about 15 s; the package a user installs is `cargo deb` (a release build).
#
#   scripts/package-test.sh                      # needs cargo-deb: cargo install cargo-deb --locked
#   A2AD_PACKAGE_INSTALL=skip scripts/package-test.sh    # no real install, even as root
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "package-test: FAIL: $*" >&2; exit 1; }
command -v cargo-deb >/dev/null || fail "cargo-deb is missing (cargo install cargo-deb --locked)"
started=$(date +%s)

cargo build --locked --bin a2ad
# `--profile dev`: cargo-deb warns that it is meant for release builds; the files and
# scripts it packages are the same.
deb=$(cargo deb --locked --profile dev --no-build --fast --quiet --output target/debian/a2ad-package-test.deb)
[ -f "$deb" ] || fail "cargo deb made no package"

work=$(mktemp -d)
node_pid=""
cleanup() {
    if [ -n "$node_pid" ]; then kill "$node_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
root="$work/root"
dpkg-deb -x "$deb" "$root"
dpkg-deb -e "$deb" "$work/control"

# The files, where the unit and the docs expect them.
mode() { stat -c '%a' "$1"; }
[ -x "$root/usr/bin/a2ad" ] || fail "no executable /usr/bin/a2ad"
[ "$(mode "$root/usr/bin/a2ad")" = 755 ] || fail "/usr/bin/a2ad is not 0755"
if readelf -S "$root/usr/bin/a2ad" | grep -q '\.debug_info'; then fail "/usr/bin/a2ad is not stripped"; fi
unit="$root/usr/lib/systemd/system/a2ad.service"
cmp -s "$unit" deploy/a2ad.service || fail "the unit is not deploy/a2ad.service"
# ProtectSystem=strict leaves workspaces read-only unless the unit names them.
grep -qx 'ReadWritePaths=-/srv/a2ad' "$unit" || fail "the unit does not make /srv/a2ad writable (ReadWritePaths=)"
grep -q '/srv/a2ad/' "$root/etc/a2ad/a2ad.yaml" || fail "the sample config's workspaces are not under /srv/a2ad"
cmp -s "$root/etc/a2ad/a2ad.yaml" deploy/a2ad.yaml || fail "/etc/a2ad/a2ad.yaml is not deploy/a2ad.yaml"
[ "$(mode "$root/etc/a2ad/a2ad.yaml")" = 640 ] || fail "/etc/a2ad/a2ad.yaml is not 0640"
[ -f "$root/usr/share/doc/a2ad/README.md" ] || fail "no README (the unit's Documentation=)"
grep -qx /etc/a2ad/a2ad.yaml "$work/control/conffiles" || fail "the sample config is not a conffile"
grep -q 'useradd --system' "$work/control/postinst" || fail "the postinst adds no system user"
sh -n "$work/control/postinst" || fail "the postinst is not valid sh"
# What the unit runs is in the package.
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
read -r binary _ _ config _ <<<"$exec_start"
[ -x "$root$binary" ] || fail "ExecStart runs $binary, which the package lacks"
[ -f "$root$config" ] || fail "ExecStart reads $config, which the package lacks"
echo "package-test: files ok ($(du -h "$deb" | cut -f1) package, $(du -h "$root/usr/bin/a2ad" | cut -f1) binary)"

# The packaged binary serves the packaged sample config.
"$root/usr/bin/a2ad" serve --config "$root/etc/a2ad/a2ad.yaml" --data-dir "$work/data" \
    --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
node_pid=$!
url=""
for _ in $(seq 1 300); do
    url=$(grep -o 'http://[0-9.:]*' "$work/serve.out" | head -n1 || true)
    [ -n "$url" ] && break
    kill -0 "$node_pid" 2>/dev/null || fail "the packaged node did not start: $(tail -n3 "$work/serve.err")"
    sleep 0.1
done
[ -n "$url" ] || fail "the packaged node printed no address"
curl -fsS "$url/.well-known/agent-card.json" | grep -q '"name"' || fail "no agent card from the packaged node"
kill -TERM "$node_pid"
wait "$node_pid" || fail "the packaged node did not stop cleanly on SIGTERM"
node_pid=""
echo "package-test: the packaged binary serves the sample config"

# A real install, as root, in an overlay of / (private mount namespace).
install_mode=${A2AD_PACKAGE_INSTALL:-auto}
if [ "$install_mode" = skip ]; then
    echo "package-test: real install skipped (A2AD_PACKAGE_INSTALL=skip)"
elif [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
    [ "$install_mode" = auto ] || fail "a real install needs root and unshare"
    echo "package-test: real install skipped (needs root and unshare)"
else
    mkdir -p "$work/upper" "$work/ovl" "$work/merged"
    cp "$deb" "$work/a2ad.deb"
    A2AD_WORK="$work" unshare --mount --propagation private sh -eu <<'INSTALL' || fail "the real install failed (above)"
w=$A2AD_WORK
m=$w/merged
mount -t overlay overlay -o "lowerdir=/,upperdir=$w/upper,workdir=$w/ovl" "$m"
mount --rbind /dev "$m/dev"
mount -t proc proc "$m/proc"
mkdir -p "$m/run/a2ad-package" && mount --bind "$w" "$m/run/a2ad-package"
in_root() { chroot "$m" "$@"; }
check() { [ "$2" = "$3" ] || { echo "package-test: FAIL: $1: $2, not $3" >&2; exit 1; }; }
in_root sh -c 'getent passwd a2ad >/dev/null' && { echo "package-test: FAIL: user a2ad already exists here" >&2; exit 1; }
in_root dpkg -i /run/a2ad-package/a2ad.deb >"$w/dpkg.log" 2>&1 || { cat "$w/dpkg.log" >&2; exit 1; }
check "the user" "$(in_root getent passwd a2ad | cut -d: -f6,7)" "/var/lib/a2ad:/usr/sbin/nologin"
check "the state dir" "$(in_root stat -c '%a %U %G' /var/lib/a2ad)" "700 a2ad a2ad"
check "the config" "$(in_root stat -c '%a %U %G' /etc/a2ad/a2ad.yaml)" "640 root a2ad"
in_root /usr/bin/a2ad --version >/dev/null
# A reinstall (as an upgrade runs the postinst again) keeps everything as it was.
in_root dpkg -i /run/a2ad-package/a2ad.deb >"$w/dpkg.log" 2>&1 || { cat "$w/dpkg.log" >&2; exit 1; }
check "the state dir after a reinstall" "$(in_root stat -c '%a %U %G' /var/lib/a2ad)" "700 a2ad a2ad"
# Removal keeps the config (a conffile) and the data; only a purge drops the config.
in_root dpkg -r a2ad >"$w/dpkg.log" 2>&1 || { cat "$w/dpkg.log" >&2; exit 1; }
[ ! -e "$m/usr/bin/a2ad" ] || { echo "package-test: FAIL: dpkg -r left /usr/bin/a2ad" >&2; exit 1; }
[ -f "$m/etc/a2ad/a2ad.yaml" ] && [ -d "$m/var/lib/a2ad" ] || { echo "package-test: FAIL: dpkg -r took the config or data" >&2; exit 1; }
in_root dpkg --purge a2ad >"$w/dpkg.log" 2>&1 || { cat "$w/dpkg.log" >&2; exit 1; }
[ ! -e "$m/etc/a2ad/a2ad.yaml" ] || { echo "package-test: FAIL: dpkg --purge left the config" >&2; exit 1; }
[ -d "$m/var/lib/a2ad" ] || { echo "package-test: FAIL: dpkg --purge took the data dir" >&2; exit 1; }
INSTALL
    echo "package-test: real install ok (dpkg -i, reinstall, -r, --purge in an overlay; the host is untouched)"
fi
echo "package-test: ok in $(($(date +%s) - started)) s"
