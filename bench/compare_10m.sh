#!/usr/bin/env bash
# The command end to end: `sluice compare` (three limiters) and
# `sluice replay` on a 10-million-request trace, parsing included, timed
# with hyperfine. Target: compare under 3 s on this 2-core machine.
#
#   bench/compare_10m.sh [SLUICE_BINARY]     (default: build-bench/sluice)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sluice=${1:-$root/build-bench/sluice}
work=${TMPDIR:-/tmp}/sluice-10m
mkdir -p "$work"
if [ ! -x "$sluice" ]; then
  cmake -S "$root" -B "$root/build-bench" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_BUILD_TESTS=OFF >/dev/null
  cmake --build "$root/build-bench" -j2 --target sluice >/dev/null
fi
# One request a millisecond for 10,000 s; the keyed trace spreads them over 1,000 keys.
[ -s "$work/10m.txt" ] ||
  awk 'BEGIN { for (i = 0; i < 10000000; i++) printf "%d.%03d\n", i / 1000, i % 1000 }' > "$work/10m.txt"
[ -s "$work/10m-keys.txt" ] ||
  awk 'BEGIN { srand(1); for (i = 0; i < 10000000; i++) printf "%d.%03d k%d\n", i / 1000, i % 1000, int(rand() * 1000) }' \
    > "$work/10m-keys.txt"
command -v hyperfine >/dev/null || { echo "hyperfine is missing: scripts/setup.sh --bench" >&2; exit 1; }
hyperfine --warmup 1 --runs "${RUNS:-5}" \
  -n "compare, 10M requests, 3 limiters" "$sluice compare --limit 100/1s $work/10m.txt" \
  -n "compare, 10M requests over 1000 keys" "$sluice compare --limit 100/1s $work/10m-keys.txt" \
  -n "replay gcra, 10M requests over 1000 keys, CSV out" "$sluice replay --algorithm gcra --limit 100/1s $work/10m-keys.txt > /dev/null"
