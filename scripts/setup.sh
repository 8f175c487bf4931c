#!/usr/bin/env bash
# Installs the Debian packages sluice needs to build, test and benchmark,
# and nothing else. Idempotent: does nothing when all are present.
#   scripts/setup.sh            build + test dependencies
#   scripts/setup.sh --bench    also what the benchmarks and peers need
set -euo pipefail

packages=(cmake ninja-build g++ make pkg-config
          libgtest-dev libgmock-dev libbenchmark-dev
          libfmt-dev libcli11-dev libabsl-dev
          clang-format clang-tidy
          libhiredis-dev redis-server redis-tools)
if [ "${1:-}" = "--bench" ]; then
  packages+=(hyperfine valgrind linux-perf)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: not root; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
