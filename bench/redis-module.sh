#!/usr/bin/env bash
# The Redis module's cost to Redis (docs/redis.md, "The Redis module"):
# INFO commandstats usec_per_call (the command's own time) and the server's
# CPU per call, for one GCRA decision on a random key of 10,000 — the
# module's SLUICE.ONE beside the Lua library's FCALL _one with the very same
# argument, the research's exact GCRA script (EVALSHA gcra.lua, the
# ceiling of issue 18) and INCR — unpipelined and -P 16, on one private
# server with the module loaded. Prints RESULT lines (medians of RUNS
# interleaved rounds) and the ratios the issue asks for (module / FCALL ≤ 0.3).
#
#   bench/redis-module.sh              build sluice_module (Release, build-bench/) and run
#   bench/redis-module.sh --no-build   use build-bench/sluice_module.so and its Lua library as they are
#
# Env: LEAF (gcra, log or fixed: the leaf the FCALL and the module decide,
# default gcra; the exact script's rows are GCRA's, so only with gcra),
# RUNS (rounds, default 3), CALLS (per row and round, default 200000),
# CONNS (connections, default 10), BUILD_DIR, EXACT_SCRIPT (gcra.lua elsewhere, e.g.
# from a git worktree, where ../shared is not beside the checkout), BASE_MODULE (another
# build's sluice_module.so, e.g. the last commit's copied aside: a second server on CPU 1
# loads it, and each round also runs its SLUICE.ONE rows, "redis-module-base-…", between
# the FCALL's and the module's; before/after in one run). The server is pinned to CPU 1,
# the clients to CPU 0, and stopped by its PID on exit. INCR and EVALSHA run
# through redis-benchmark; the FCALL and the module's command carry a binary
# argument (doubles with zero bytes) that redis-benchmark cannot send, so
# bench/redis_module_load.py sends them, the same way for both.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build-bench}
script=${EXACT_SCRIPT:-$root/../shared/research/redis-lab/gcra.lua}
RUNS=${RUNS:-3}
CALLS=${CALLS:-200000}
CONNS=${CONNS:-10}
LEAF=${LEAF:-gcra}
KEYS=10000
case $LEAF in gcra) sfx= ;; log | fixed) sfx=-$LEAF ;; *) echo "LEAF must be gcra, log or fixed" >&2; exit 2 ;; esac
# shellcheck source=bench/redis_common.sh
. "$here/redis_common.sh"
parse_flags "$@"
need redis-server redis-benchmark redis-cli python3 taskset
[ "$LEAF" != gcra ] || [ -f "$script" ] || { say "ERROR: $script missing (the research's exact GCRA script)"; exit 1; }
if [ "$do_build" = 1 ]; then
  say "configure + build sluice_module (Release) in $build"
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_BUILD_BENCH=ON -DSLUICE_BUILD_TESTS=OFF \
    >"$build/sluice_module-configure.log" 2>&1 || { cat "$build/sluice_module-configure.log" >&2; exit 1; }
  cmake --build "$build" -j2 --target sluice_module sluice_lua_library >"$build/sluice_module-build.log" 2>&1 ||
    { tail -30 "$build/sluice_module-build.log" >&2; exit 1; }
fi
module=$build/sluice_module.so
[ -f "$module" ] || { say "ERROR: $module missing"; exit 1; }

if [ -n "${BASE_MODULE:-}" ]; then
  [ -f "$BASE_MODULE" ] || { say "ERROR: BASE_MODULE $BASE_MODULE missing"; exit 1; }
  redis_args=(--loadmodule "$BASE_MODULE")
  start_redis taskset -c 1
  base_port=$port base_pid=$pid base_dir=$dir
  on_exit() { stop_server "$base_pid" "$base_dir"; }  # after the main server stops (redis_common.sh)
  say "base: redis on 127.0.0.1:$base_port (pid $base_pid, CPU 1) with $BASE_MODULE"
fi
redis_args=(--loadmodule "$module")
start_redis taskset -c 1
# The Lua library as the store loads it: the build's own copy
# (embed_lua.cmake writes it beside the C++ it embeds), named as the store
# names it.
library=$build/src/redis/sluice_library.lua
[ -f "$library" ] || { say "ERROR: $library missing (cmake --build $build --target sluice_lua_library)"; exit 1; }
code=$(cat "$library")
lib=$(sed -n '1s/^#!lua name=//p' "$library")
cli function load replace "$code" >/dev/null || { say "ERROR: the Lua library did not load"; exit 1; }
[ "$LEAF" != gcra ] || SHA=$(cli script load "$(cat "$script")")
say "redis $(redis-server --version | awk '{print $3}') on 127.0.0.1:$port (pid $pid, CPU 1) with $(basename "$module"); clients on CPU 0; leaf=$LEAF runs=$RUNS calls=$CALLS conns=$CONNS keys=$KEYS"
say "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

raw=$(mktemp)
hz=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
# benchmark NAME CMDSTAT P -- redis-benchmark args: usec_per_call and CPU/call of CMDSTAT.
benchmark() {
  local name=$1 stat=$2 p=$3; shift 4
  cli flushall >/dev/null
  taskset -c 0 redis-benchmark -h 127.0.0.1 -p "$port" -c "$CONNS" -n "$KEYS" -P 16 -r "$KEYS" "$@" >/dev/null 2>&1  # warm-up
  cli config resetstat >/dev/null
  local c0; c0=$(cpu)
  taskset -c 0 redis-benchmark -h 127.0.0.1 -p "$port" -c "$CONNS" -n "$CALLS" -P "$p" -r "$KEYS" "$@" >/dev/null 2>&1
  local c1; c1=$(cpu)
  cli info commandstats | tr -d '\r' | awk -F'[:,=]' -v s="cmdstat_$stat" -v name="$name" -v dc=$((c1 - c0)) -v hz="$hz" -v p="$p" -v conns="$CONNS" -v keys="$KEYS" '
    $1 == s { printf "RESULT\t%s\tusec_per_call=%s\tcpu_us_per_call=%.2f\tcalls=%d\tops_per_s=-\tP=%d\tconns=%d\tkeys=%d\n", name, $7, dc * 1e6 / hz / $3, $3, p, conns, keys }' >>"$raw"
}
load() {  # load NAME FN P [PORT PID]: on the main server unless PORT and PID are given
  local on_port=${4:-$port} on_pid=${5:-$pid}
  redis-cli -h 127.0.0.1 -p "$on_port" flushall >/dev/null
  taskset -c 0 python3 "$here/redis_module_load.py" --port "$on_port" --pid "$on_pid" --fn "$2" --pipeline "$3" --leaf "$LEAF" \
    --calls "$CALLS" --conns "$CONNS" --keys "$KEYS" --name "$1" >>"$raw"
}
# gcra.lua's ARGV (bench/redis.sh): allowed, its TTL set (PX 60000).
ALLOW_PX=(0 1000 1 1 0 1000000000000000 0 1 60000)
for round in $(seq 1 "$RUNS"); do
  say "round $round of $RUNS ($(cut -d' ' -f1 /proc/loadavg) load)"
  for p in 1 16; do
    benchmark "redis-incr-10kkeys-P$p" incr "$p" -- -t incr
    [ "$LEAF" != gcra ] ||
      benchmark "redis-gcra-exact-px-10kkeys-P$p" evalsha "$p" -- evalsha "$SHA" 1 rb:__rand_int__ "${ALLOW_PX[@]}"
    load "redis-lua-one$sfx-10kkeys-P$p" "${lib}_one" "$p"
    [ -z "${BASE_MODULE:-}" ] || load "redis-module-base-one$sfx-10kkeys-P$p" SLUICE.ONE "$p" "$base_port" "$base_pid"
    load "redis-module-one$sfx-10kkeys-P$p" SLUICE.ONE "$p"
  done
done
# Medians per row.
awk -F'\t' -v sfx="$sfx" '$1 == "RESULT" {
    k = $2; if (!(k in n)) order[++rows] = k
    split($3, u, "="); split($4, w, "="); us[k, ++n[k]] = u[2] + 0; cp[k, n[k]] = w[2] + 0
  }
  function median(arr, k, m,   i, j, x, a) {
    for (i = 1; i <= m; i++) a[i] = arr[k, i]
    for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  END {
    for (r = 1; r <= rows; r++) {
      k = order[r]
      mu[k] = median(us, k, n[k]); mc[k] = median(cp, k, n[k])
      printf "RESULT\t%-34s\tusec_per_call %6.2f\tserver CPU/call %6.2f us\t(%d rounds)\n", k, mu[k], mc[k], n[k]
    }
    print ""
    print "ratios, same server, same run (target: module / FCALL usec_per_call <= 0.3):"
    split("1 16", ps, " ")
    for (i = 1; i <= 2; i++) {
      m = "redis-module-one" sfx "-10kkeys-P" ps[i]; f = "redis-lua-one" sfx "-10kkeys-P" ps[i]; e = "redis-gcra-exact-px-10kkeys-P" ps[i]; c = "redis-incr-10kkeys-P" ps[i]
      b = "redis-module-base-one" sfx "-10kkeys-P" ps[i]
      if (mu[f] > 0) printf "  -P %-2s module / FCALL: usec_per_call %.2f, CPU/call %.2f\n", ps[i], mu[m] / mu[f], mc[m] / mc[f]
      if (mu[f] > 0 && mu[b] > 0) printf "  -P %-2s base module / FCALL: usec_per_call %.2f, CPU/call %.2f\n", ps[i], mu[b] / mu[f], mc[b] / mc[f]
      if (mu[b] > 0) printf "  -P %-2s module / base module: usec_per_call %.2f, CPU/call %.2f\n", ps[i], mu[m] / mu[b], mc[m] / mc[b]
      if (mu[e] > 0) printf "  -P %-2s module / exact script: usec_per_call %.2f, CPU/call %.2f\n", ps[i], mu[m] / mu[e], mc[m] / mc[e]
      if (mu[c] > 0) printf "  -P %-2s module / INCR: usec_per_call %.2f, CPU/call %.2f\n", ps[i], mu[m] / mu[c], mc[m] / mc[c]
    }
  }' "$raw"
rm -f "$raw"
