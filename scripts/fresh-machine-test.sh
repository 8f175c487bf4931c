#!/usr/bin/env bash
# The README's two commands ("Build, run, test") as the very first thing typed
# on a bare Debian 12: a minimal bookworm (debootstrap --variant=minbase), a
# clean clone of the current commit with no ../shared beside it, entered with
# chroot. Runs each command exactly as the README writes it, its input at end
# of file (so the explorer ends), in the README's order on the same machine,
# and reports each one's exit status and time, and the output of each that
# fails. Exit status: the number of commands that failed.
#
# Needs root, debootstrap (apt-get install debootstrap) and a Debian mirror.
# Slow (every package and a full build inside the chroot): not part of
# `make test` or CI.
#   scripts/fresh-machine-test.sh [--keep]
# The pristine minbase tree is made once and cached outside the repository,
# in $SLUICE_MINBASE_CACHE (default /var/tmp/sluice-minbase); each run works
# on a fresh copy of it, removed afterwards unless --keep. Logs stay in the
# cache's logs/ directory. $DEBIAN_MIRROR picks the mirror.
set -euo pipefail

keep=0
case "${1:-}" in
  "") ;;
  --keep) keep=1 ;;
  *) echo "usage: scripts/fresh-machine-test.sh [--keep]" >&2; exit 2 ;;
esac

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${SLUICE_MINBASE_CACHE:-/var/tmp/sluice-minbase}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
say() { echo "fresh-machine: $*"; }
die() { echo "fresh-machine: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, mount, chroot)"
command -v debootstrap >/dev/null || die "needs debootstrap: apt-get install debootstrap"
commit=$(git -C "$top" rev-parse HEAD)
[ -z "$(git -C "$top" status --porcelain)" ] ||
  say "warning: uncommitted changes in $top are not tested; the clone is of $commit"

began=$(date +%s)

# The pristine tree, made once.
pristine=$cache/bookworm-minbase
if [ ! -e "$pristine/.sluice-complete" ]; then
  say "making a minbase bookworm in $pristine (once; later runs reuse it)"
  rm -rf --one-file-system "$pristine"
  mkdir -p "$cache"
  debootstrap --variant=minbase bookworm "$pristine" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
    { tail -n 30 "$cache/debootstrap.log" >&2; die "debootstrap failed; its log: $cache/debootstrap.log"; }
  touch "$pristine/.sluice-complete"
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
logs=$cache/logs/$stamp
mkdir -p "$logs"
root=$(mktemp -d "$cache/run.XXXXXX")
mounted=()

# Always: unmount what was mounted (innermost first), then remove the copy,
# but only once nothing is mounted under it any more.
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[i]}" 2>/dev/null || umount -R -l "${mounted[i]}" ||
      echo "fresh-machine: could not unmount ${mounted[i]}" >&2
  done
  if grep -q " $root/" /proc/mounts; then
    echo "fresh-machine: something is still mounted under $root; leaving it" >&2
  elif [ "$keep" -eq 1 ]; then
    echo "fresh-machine: the machine is kept in $root"
  else
    rm -rf --one-file-system "$root"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "commit $commit, machine $root"
cp -a "$pristine/." "$root/"
rm -f "$root/.sluice-complete"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# A chroot shares the host's network and init: let no package's install
# start a service there (the convention for chroots, see invoke-rc.d(8)).
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"

mount -t proc proc "$root/proc"
mounted+=("$root/proc")
mount --rbind /dev "$root/dev"
mounted+=("$root/dev")
mount --make-rslave "$root/dev"

git clone -q --no-checkout "$top" "$root/root/sluice"
git -C "$root/root/sluice" checkout -q --detach "$commit"

# The commands: the first indented block of the README's "Build, run, test"
# section, each line without its comment.
mapfile -t commands < <(awk '
  /^## / { in_section = ($0 == "## Build, run, test"); next }
  in_section && /^    [^ ]/ { sub(/^    /, ""); sub(/[ ]+#.*$/, ""); print; found = 1; next }
  in_section && found { exit }
' "$root/root/sluice/README.md")
[ ${#commands[@]} -eq 2 ] ||
  die "expected the README's two commands in \"Build, run, test\", found ${#commands[@]}: ${commands[*]:-none}"

say "the machine is ready ($(($(date +%s) - began)) s)"
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
failed=0
summary=()
for i in "${!commands[@]}"; do
  cmd=${commands[i]}
  log=$logs/$((i + 1)).log
  say "\$ $cmd   (output: $log)"
  start=$(date +%s)
  set +e
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb PATH="$path" \
    /bin/bash -c "cd /root/sluice && $cmd" </dev/null 2>&1 | tee "$log" | sed -u 's/^/  | /'
  status=${PIPESTATUS[0]}
  set -e
  seconds=$(($(date +%s) - start))
  verdict=pass
  why="exit $status"
  if [ "$status" -ne 0 ]; then
    verdict=FAIL
  elif [[ "$cmd" == *run ]] && ! grep -q '^== Rate limiter ==$' "$log"; then
    verdict=FAIL
    why="exit 0 but no explorer banner"
  fi
  if [ "$verdict" = FAIL ]; then
    failed=$((failed + 1))
    echo "fresh-machine: FAIL: $cmd ($why); the end of its output:"
    tail -n 60 "$log" | sed 's/^/  | /'
  fi
  summary+=("$verdict  $cmd  ($why, ${seconds} s)")
done

say "summary for $commit on a minbase bookworm ($(($(date +%s) - began)) s in all):"
printf '  %s\n' "${summary[@]}"
say "logs in $logs"
exit "$failed"
