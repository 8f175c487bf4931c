#!/usr/bin/env bash
# Fetches redismodule.h from Debian's `redis` source package, at the version
# of the installed redis-server, and compares it with the copy the module
# builds from (src/redis_module/vendor/redismodule.h), or with --update
# replaces that copy (and COPYING). apt-get runs with a private folder: its
# own sources list (the deb-src lines of the Debian registry the machine
# uses), lists and cache; the system's apt configuration is not changed.
# Needs no root. Nothing calls it at build time.
#   scripts/redismodule-header.sh            compare (exit 1 when they differ)
#   scripts/redismodule-header.sh --update   replace the shipped copy
set -euo pipefail
update=0
case "${1:-}" in
  "") ;;
  --update) update=1 ;;
  *) echo "usage: scripts/redismodule-header.sh [--update]" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
vendor=$here/src/redis_module/vendor
version=$(dpkg-query -W -f='${Version}' redis-server 2>/dev/null) || {
  echo "redismodule-header: redis-server is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
upstream=${version#*:}; upstream=${upstream%%-*}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/sources.list.d" "$work/lists/partial" "$work/cache/archives/partial" "$work/dl"
cat > "$work/sources.list.d/debian-src.sources" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
opts=(-o Dir::Etc::sourcelist=/dev/null -o "Dir::Etc::sourceparts=$work/sources.list.d"
      -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o Debug::NoLocking=1 -o "APT::Sandbox::User=$(id -un)")
apt-get "${opts[@]}" -qq update
(cd "$work/dl" && apt-get "${opts[@]}" -qq source --download-only "redis=$version" >/dev/null)
tar -xzf "$work/dl/redis_$upstream.orig.tar.gz" -C "$work" "redis-$upstream/src/redismodule.h" "redis-$upstream/COPYING"
got=$work/redis-$upstream
if [ "$update" = 1 ]; then
  cp "$got/src/redismodule.h" "$vendor/redismodule.h"
  cp "$got/COPYING" "$vendor/COPYING"
  echo "redismodule-header: $vendor/redismodule.h replaced by redis $version's ($(sha256sum < "$vendor/redismodule.h" | cut -c1-16)…); update vendor/README.md"
elif cmp -s "$got/src/redismodule.h" "$vendor/redismodule.h"; then
  echo "redismodule-header: the shipped redismodule.h is redis $version's"
else
  echo "redismodule-header: the shipped redismodule.h differs from redis $version's (--update replaces it)" >&2
  exit 1
fi
