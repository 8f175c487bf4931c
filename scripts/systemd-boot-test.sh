#!/usr/bin/env bash
# The installed service under a real systemd: builds sluice (Release), installs
# it as a Debian package would (`cmake --install --prefix /usr` with
# CMAKE_INSTALL_SYSCONFDIR=/etc) into a copy of a minimal Debian 12 that has
# systemd and the libraries the binary links, boots that tree with
# `systemd-nspawn --boot --private-network`, and checks from inside, through
# a one-shot unit that runs after boot:
#   - sluice.service (the installed unit, enabled) is active and /healthz answers;
#   - `systemctl reload sluice` re-reads the configuration: the sample's
#     policy `api` is changed in /etc/sluice/sluice.toml to `gcra 1/1h
#     burst=1`, and after the reload a second decision for a new key is
#     denied (before it, 5 were allowed for one key);
#   - `systemctl stop sluice` ends it with status 0 and leaves its snapshot
#     in its state directory.
# The container powers itself off; the result is read from the tree.
#
# Needs root, debootstrap, systemd-nspawn (apt-get install debootstrap
# systemd-container) and a Debian mirror ($DEBIAN_MIRROR). Slow the first
# time (debootstrap, a Release build): not part of `make test` or CI.
#   scripts/systemd-boot-test.sh [--keep]
# The pristine tree is made once per set of library packages and cached in
# $SLUICE_SYSTEMD_CACHE (default /var/tmp/sluice-systemd); each run boots a
# fresh copy, removed afterwards unless --keep. Exit status: 0 when every
# check passed, 1 when one failed, 2 when the test could not run.
set -euo pipefail

keep=0
case "${1:-}" in
  "") ;;
  --keep) keep=1 ;;
  *) echo "usage: scripts/systemd-boot-test.sh [--keep]" >&2; exit 2 ;;
esac

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${SLUICE_SYSTEMD_CACHE:-/var/tmp/sluice-systemd}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
build=$top/build/systemd-boot
say() { echo "systemd-boot: $*"; }
die() { echo "systemd-boot: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, systemd-nspawn)"
command -v debootstrap >/dev/null || die "needs debootstrap: apt-get install debootstrap"
command -v systemd-nspawn >/dev/null || die "needs systemd-nspawn: apt-get install systemd-container"

mkdir -p "$build"
say "building sluice (Release) in $build"
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_BUILD_TESTS=OFF \
  -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc >"$build/configure.log" 2>&1 ||
  { tail -n 20 "$build/configure.log" >&2; die "configure failed"; }
cmake --build "$build" --target sluice -j "$(nproc)" >"$build/build.log" 2>&1 ||
  { tail -n 20 "$build/build.log" >&2; die "build failed"; }

# The Debian packages of the libraries the binary links (what a package's
# Depends would name), found from the host's own copies of them.
mapfile -t libs < <(ldd "$build/sluice" | awk '$3 ~ /^\// { print $3 }')
packages=$(for l in "${libs[@]}"; do dpkg -S "$(readlink -f "$l")" 2>/dev/null || dpkg -S "$l"; done |
  cut -d: -f1 | sort -u | tr '\n' ',')
packages=${packages%,}
include="systemd,systemd-sysv,curl,$packages"
key=$(echo "$include" | sha256sum | cut -c1-12)
pristine=$cache/bookworm-$key
if [ ! -e "$pristine/.sluice-complete" ]; then
  say "making a minbase bookworm with systemd and $packages in $pristine (once)"
  rm -rf --one-file-system "$pristine"
  mkdir -p "$cache"
  debootstrap --variant=minbase --include="$include" bookworm "$pristine" "$mirror" >"$pristine.log" 2>&1 ||
    { tail -n 30 "$pristine.log" >&2; die "debootstrap failed; its log: $pristine.log"; }
  touch "$pristine/.sluice-complete"
fi

root=$(mktemp -d "$cache/run.XXXXXX")
cleanup() {
  if [ "$keep" -eq 1 ]; then say "kept $root"; else rm -rf --one-file-system "$root"; fi
}
trap cleanup EXIT
cp -a "$pristine/." "$root/"

say "installing into the tree (cmake --install --prefix /usr, DESTDIR)"
DESTDIR=$root cmake --install "$build" --prefix /usr >"$root/install.log" 2>&1 ||
  { cat "$root/install.log" >&2; die "cmake --install failed"; }
unit=$root/usr/lib/systemd/system/sluice.service
[ -f "$unit" ] || die "no unit at /usr/lib/systemd/system/sluice.service"
[ -f "$root/etc/sluice/sluice.toml" ] || die "no configuration at /etc/sluice/sluice.toml"
grep '^Exec' "$unit" | sed 's/^/systemd-boot: unit: /'

# The checks, run inside by a one-shot unit after boot; each line of the
# result is "ok ..." or "FAIL ...", and the last is "done".
cat >"$root/usr/local/sbin/sluice-boot-check" <<'CHECK'
#!/bin/bash
out=/sluice-boot-check.result
: >"$out"
ok() { echo "ok $*" >>"$out"; }
fail() { echo "FAIL $*" >>"$out"; }
decide() {
  curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    -d '{"checks":[{"policy":"api","key":"'"$1"'"}]}' http://127.0.0.1:8080/v1/decide
}
healthy() {
  for _ in $(seq 1 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/healthz)" = 200 ] && return 0
    sleep 0.1
  done
  return 1
}
if systemctl is-active -q sluice && healthy; then ok "sluice.service active, /healthz 200"; else
  fail "sluice.service not serving: $(systemctl is-active sluice)"; journalctl -u sluice --no-pager >>"$out"; fi
codes=$(for _ in 1 2 3 4 5; do decide before; echo -n ' '; done)
[ "$codes" = "200 200 200 200 200 " ] && ok "before the reload: 5 decisions allowed ($codes)" ||
  fail "before the reload: $codes"
sed -i 's|^api = .*|api = "gcra 1/1h burst=1"|' /etc/sluice/sluice.toml
systemctl reload sluice
for _ in $(seq 1 50); do journalctl -u sluice --no-pager | grep -q 'reloaded' && break; sleep 0.1; done
journalctl -u sluice --no-pager | grep -q 'reloaded' && ok "systemctl reload: the service logged its reload" ||
  fail "systemctl reload: no reload in the journal"
codes="$(decide after) $(decide after)"
[ "$codes" = "200 429" ] && ok "after the reload: api is gcra 1/1h burst=1 ($codes)" || fail "after the reload: $codes"
systemctl stop sluice
state=$(systemctl is-active sluice)
status=$(systemctl show -p ExecMainStatus --value sluice)
if [ "$state" = inactive ] && [ "$status" = 0 ] && journalctl -u sluice --no-pager | grep -q 'sluice serve: stopped'; then
  ok "systemctl stop: inactive, exit status 0, the service logged its stop"
else
  fail "systemctl stop: $state, exit status '$status'"
fi
snap=$(find /var/lib/private/sluice /var/lib/sluice -type f 2>/dev/null | head -n 1)
[ -n "$snap" ] && ok "the snapshot was saved ($snap)" || fail "no snapshot in the state directory"
echo done >>"$out"
systemctl poweroff
CHECK
chmod 755 "$root/usr/local/sbin/sluice-boot-check"
cat >"$root/etc/systemd/system/sluice-boot-check.service" <<'UNIT'
[Unit]
Description=sluice boot check
After=sluice.service
Wants=sluice.service
[Service]
Type=oneshot
ExecStart=/usr/local/sbin/sluice-boot-check
[Install]
WantedBy=multi-user.target
UNIT
systemctl --root="$root" enable sluice.service sluice-boot-check.service >/dev/null 2>&1 ||
  die "systemctl --root enable failed"

# --keep-unit --register=no: the host's own init need not be systemd (no
# system bus to ask for a scope or to register with machined).
say "booting the tree (systemd-nspawn --boot --private-network)"
began=$(date +%s)
timeout 300 systemd-nspawn -q --keep-unit --register=no --boot --private-network -D "$root" >"$root/boot.log" 2>&1 ||
  true
say "the container ran $(( $(date +%s) - began )) s"
result=$root/sluice-boot-check.result
if [ ! -f "$result" ]; then
  tail -n 40 "$root/boot.log" >&2
  echo "systemd-boot: FAIL: the check never ran" >&2
  exit 1
fi
sed 's/^/systemd-boot: /' "$result"
grep -q '^done$' "$result" && ! grep -q '^FAIL' "$result"
