#!/usr/bin/env bash
# The Redis benchmark: sluice::redis (bench/redis_bench.cpp) beside
# redis-benchmark on the same private server, in the same run, printing the
# peers' RESULT lines (../shared/peers/README.md, "Output contract") and a
# table with the ratios the issue asks for.
#
#   bench/redis.sh              build (Release, build-bench/) and run
#   bench/redis.sh --no-build   use build-bench/bench/redis_bench as it is
#
# Env: RUNS (repetitions, default 3), SCALE (every count times this, default 1;
# e.g. 0.2 on a loaded machine), REDIS_PORT (default: a free port),
# FILTER (a substring of the sluice scenario names), BUILD_DIR, GCRA_LUA
# (the research's exact script, as bench/http.sh; from a git worktree, where
# ../shared is not beside the checkout), WAIT_ROWS
# (default 1: after the rounds, a replica is attached and the 1-key GCRA
# store rows run again without and with ?wait_replicas=1, the cost of WAIT;
# 0: not), MODULE_ROWS (default 1: then the Redis module's rows,
# bench/redis-module.sh, on a server of their own: SLUICE.ONE beside the Lua
# library's FCALL, the exact script and INCR; 0: not).
# The server is pinned to CPU 1, the clients to CPU 0 (as the peers'
# redis-ceiling), and stopped by its PID on exit. Every loop has a fixed count.
# The RUNS repetitions are rounds: each round runs every ceiling and then
# every sluice row once, so that a ratio compares figures taken minutes, not
# a quarter of an hour, apart on a machine whose speed drifts; each RESULT
# line is the median (and range) of the rounds.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build-bench}
script=${GCRA_LUA:-$root/../shared/research/redis-lab/gcra.lua}  # env: where ../shared is not beside the checkout
RUNS=${RUNS:-3}
FILTER=${FILTER:-}
SCALE=${SCALE:-1}
# shellcheck source=bench/redis_common.sh
. "$here/redis_common.sh"
parse_flags "$@"
need redis-server redis-benchmark redis-cli
[ -f "$script" ] || { say "ERROR: $script missing (the research's exact GCRA script)"; exit 1; }
build_bench redis_bench

# ---- a private server on a free port, stopped by PID ------------------------------
start_redis taskset -c 1
REDIS_PORT=$port
SHA=$(cli script load "$(cat "$script")")
say "redis $(redis-server --version | awk '{print $3}') on 127.0.0.1:$REDIS_PORT (pid $pid, CPU 1), client on CPU 0, runs=$RUNS scale=$SCALE, gcra.lua $SHA"
say "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

raw=$(mktemp)   # every round's RESULT lines
out=$(mktemp)   # their medians
# ---- the ceiling: redis-benchmark on the same server ------------------------------
stats() {
  sort -g | awk '{a[NR]=$1} END {
    if (NR == 0) { print "nan nan nan 0"; exit }
    m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2
    printf "%.4f %.4f %.4f %d\n", m, a[1], a[NR], NR }'
}
# ceiling SCENARIO N CONNS PIPELINE NOTE -- redis-benchmark args
ceiling() {
  local sc=$1 n=$2 c=$3 p=$4 note=$5; shift 6
  n=$(awk -v n="$n" -v s="$SCALE" 'BEGIN { v = int(n * s); print (v < 1000 ? 1000 : v) }')
  local r vals=()
  for r in $(seq 1 "$RUNS"); do
    cli flushall >/dev/null
    [ "${PRESPEND:-0}" = 1 ] && cli evalsha "$SHA" 1 rb:hot "${DENY[@]}" >/dev/null
    local line; line=$(taskset -c 0 redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c "$c" -n "$n" -P "$p" --csv "$@" 2>/dev/null | tail -n 1)
    vals+=("$(echo "$line" | tr -d '"' | awk -F, '{print $2}')")
  done
  printf '%s\n' "${vals[@]}" | awk '$1 > 0 {printf "%.4f\n", 1e9 / $1}' | stats | {
    read -r m lo hi k
    printf 'RESULT\tredis-ceiling\t%s\t%.2f\t%.0f\t-\t%d\t%.2f\t%.2f\t%s\n' "$sc" "$m" "$(awk -v m="$m" 'BEGIN {print 1e9 / m}')" "$k" "$lo" "$hi" "$note"
  } >>"$raw"
}
# gcra.lua's ARGV: nh nl L' cq cr sq sr mode ttl_ms. The issue's ceiling runs
# without a TTL (ttl_ms 0); the contract wants one on every write, so the
# same script is also run with its TTL set (ALLOW_PX: SET ... PX 60000), to
# show what the TTL costs. A denial writes nothing: no TTL either way.
ALLOW=(0 1000 1 1 0 1000000000000000 0 1 0)
ALLOW_PX=(0 1000 1 1 0 1000000000000000 0 1 60000)
DENY=(0 1000 1 1000000000 0 1000000000 0 1 0)
ceilings() {
  ceiling redis-incr-c1-P1 10000 1 1 "redis-benchmark INCR, 1 connection, -P 1" -- -t incr
  ceiling redis-incr-c1-P16 160000 1 16 "redis-benchmark INCR, 1 connection, -P 16" -- -t incr
  ceiling redis-incr-c50-P16 1000000 50 16 "redis-benchmark INCR, 50 connections, -P 16 (server ceiling)" -- -t incr
  for c in 1 2; do
    for p in 1 16; do
      n=$((p == 1 ? 10000 : 60000))
      ceiling "redis-gcra-exact-allow-c$c-P$p" $n $c $p "redis-benchmark EVALSHA research gcra.lua, 1 key, allowed, $c connection(s), -P $p" -- evalsha "$SHA" 1 rb:hot "${ALLOW[@]}"
      ceiling "redis-gcra-exact-px-allow-c$c-P$p" $n $c $p "redis-benchmark EVALSHA research gcra.lua with its TTL set (PX 60000), 1 key, allowed, $c connection(s), -P $p" -- evalsha "$SHA" 1 rb:hot "${ALLOW_PX[@]}"
      PRESPEND=1 ceiling "redis-gcra-exact-deny-c$c-P$p" $n $c $p "redis-benchmark EVALSHA research gcra.lua, 1 key, denied (read-only), $c connection(s), -P $p" -- evalsha "$SHA" 1 rb:hot "${DENY[@]}"
    done
  done
  ceiling redis-gcra-exact-100kkeys-allow-c1-P16 60000 1 16 "redis-benchmark EVALSHA research gcra.lua, a random key of 100k (-r), allowed, 1 connection, -P 16" -- -r 100000 evalsha "$SHA" 1 rb:__rand_int__ "${ALLOW[@]}"
  ceiling redis-gcra-exact-px-100kkeys-allow-c1-P16 60000 1 16 "redis-benchmark EVALSHA research gcra.lua with its TTL set (PX 60000), a random key of 100k (-r), allowed, 1 connection, -P 16" -- -r 100000 evalsha "$SHA" 1 rb:__rand_int__ "${ALLOW_PX[@]}"
  ceiling redis-gcra-exact-allow-c50-P16 200000 50 16 "redis-benchmark EVALSHA research gcra.lua, 1 key, allowed, 50 connections, -P 16 (server ceiling)" -- evalsha "$SHA" 1 rb:hot "${ALLOW[@]}"
  PRESPEND=1 ceiling redis-gcra-exact-deny-c50-P16 200000 50 16 "redis-benchmark EVALSHA research gcra.lua, 1 key, denied, 50 connections, -P 16 (server ceiling)" -- evalsha "$SHA" 1 rb:hot "${DENY[@]}"
}

# ---- sluice::redis ------------------------------------------------------------------
filter_args=()
[ -n "$FILTER" ] && filter_args=(--filter "$FILTER")

# ---- the rounds ---------------------------------------------------------------------
for round in $(seq 1 "$RUNS"); do
  say "round $round of $RUNS: the ceilings, then sluice::redis ($(cut -d' ' -f1 /proc/loadavg) load)"
  RUNS=1 ceilings
  taskset -c 0 "$bench_bin" --url "redis://127.0.0.1:$REDIS_PORT" --script "$script" --runs 1 --scale "$SCALE" "${filter_args[@]}" | grep '^RESULT' >>"$raw"
done
# ---- the cost of WAIT (docs/redis.md, "Waiting for replicas") ------------------------
# A replica of the server (CPU 1 too), stopped by its PID; the same store rows
# with it attached, without and with ?wait_replicas=1, in interleaved rounds.
if [ "${WAIT_ROWS:-1}" = 1 ]; then
  rport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  rdir=$(mktemp -d)
  taskset -c 1 redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
    --dir "$rdir" --logfile "$rdir/redis.log" --replicaof 127.0.0.1 "$REDIS_PORT" >/dev/null 2>&1 &
  rpid=$!
  on_exit() { kill "$rpid" 2>/dev/null || true; rm -rf "$rdir"; }
  for _ in $(seq 1 100); do
    redis-cli -h 127.0.0.1 -p "$rport" info replication 2>/dev/null | grep -q 'master_link_status:up' && break
    sleep 0.1
  done
  redis-cli -h 127.0.0.1 -p "$rport" info replication | grep -q 'master_link_status:up' ||
    { say "ERROR: the replica did not sync"; exit 1; }
  say "replica on 127.0.0.1:$rport (pid $rpid, CPU 1): the WAIT rows"
  for round in $(seq 1 "$RUNS"); do
    for w in 0 1; do
      q=""; [ "$w" = 1 ] && q="?wait_replicas=1&wait_timeout=1000ms"
      taskset -c 0 "$bench_bin" --url "redis://127.0.0.1:$REDIS_PORT$q" --script "$script" --runs 1 --scale "$SCALE" \
        --filter redis-store-gcra-1key-allow-P --suffix "-replica-wait$w" | grep '^RESULT' >>"$raw"
    done
  done
  on_exit
fi
# One RESULT line per row: the median of its rounds' ns/op, their range.
awk -F'\t' -v OFS='\t' '$1 == "RESULT" {
    k = $2 "\t" $3; if (!(k in n)) order[++rows] = k
    v[k, ++n[k]] = $4; note[k] = $10
  }
  END {
    for (r = 1; r <= rows; r++) {
      k = order[r]; m = n[k]
      for (i = 1; i <= m; i++) a[i] = v[k, i] + 0
      for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
      med = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
      printf "RESULT\t%s\t%.2f\t%.0f\t-\t%d\t%.2f\t%.2f\t%s\n", k, med, 1e9 / med, m, a[1], a[m], note[k]
    }
  }' "$raw" | tee "$out"

# ---- table and ratios -------------------------------------------------------------
echo
awk -F'\t' '$1 == "RESULT" { ops[$3] = $5; printf "%-14s %-40s %12s ops/s %10s ns\n", $2, $3, $5, $4 }
  END {
    print ""
    print "ratios (sluice::redis vs redis-benchmark, same server, same run):"
    split("1key-allow-P1:allow-c1-P1 1key-allow-P16:allow-c1-P16 1key-allow-2thr-P1:allow-c2-P1 1key-allow-2thr-P16:allow-c2-P16 1key-deny-P1:deny-c1-P1 1key-deny-P16:deny-c1-P16 1key-deny-2thr-P1:deny-c2-P1 1key-deny-2thr-P16:deny-c2-P16 100kkeys-allow-P16:100kkeys-allow-c1-P16", pairs, " ")
    for (i in pairs) {
      split(pairs[i], ab, ":"); a = "redis-gcra-" ab[1]; b = "redis-gcra-exact-" ab[2]
      if (ops[a] && ops[b]) printf "  %-36s / %-32s = %.2f\n", a, b, ops[a] / ops[b]
    }
    print ""
    print "sluice::redis_store vs the exact-script ceiling (targets: allowed >= 0.90 of the ceiling without a TTL; denied >= the read-only ceiling):"
    split("1key-allow-P1:allow-c1-P1 1key-allow-P16:allow-c1-P16 1key-allow-2thr-P1:allow-c2-P1 1key-allow-2thr-P16:allow-c2-P16 1key-deny-P1:deny-c1-P1 1key-deny-P16:deny-c1-P16 1key-deny-2thr-P16:deny-c2-P16 100kkeys-allow-P16:100kkeys-allow-c1-P16", spairs, " ")
    for (i = 1; i <= length(spairs); i++) {
      split(spairs[i], ab, ":"); a = "redis-store-gcra-" ab[1]; b = "redis-gcra-exact-" ab[2]
      px = ab[2]; sub(/^/, "px-", px); c = "redis-gcra-exact-" px
      if (ops[a] && ops[b]) {
        line = sprintf("  %-36s / %-32s = %.2f", a, b, ops[a] / ops[b])
        if (ops[c]) line = line sprintf("   / with its TTL set = %.2f", ops[a] / ops[c])
        print line
      }
    }
    if (ops["redis-incr-client-P1"] && ops["redis-incr-c1-P1"]) printf "  %-36s / %-32s = %.2f\n", "redis-incr-client-P1", "redis-incr-c1-P1", ops["redis-incr-client-P1"] / ops["redis-incr-c1-P1"]
    if (ops["redis-incr-client-P16"] && ops["redis-incr-c1-P16"]) printf "  %-36s / %-32s = %.2f\n", "redis-incr-client-P16", "redis-incr-c1-P16", ops["redis-incr-client-P16"] / ops["redis-incr-c1-P16"]
    print ""
    print "WAIT (a replica attached; ?wait_replicas=1 against none):"
    split("P1 P16", wd, " ")
    for (j = 1; j <= 2; j++) {
      a = "redis-store-gcra-1key-allow-" wd[j] "-replica-wait1"; b = "redis-store-gcra-1key-allow-" wd[j] "-replica-wait0"
      if (ops[a] && ops[b]) printf "  %-44s / %-44s = %.2f\n", a, b, ops[a] / ops[b]
    }
    print ""
    print "leases (one acquire = one FCALL, one release = one FCALL; an acquire+release pair against one GCRA decision):"
    a = "redis-store-concurrency-1key-acquire-release-P1"; b = "redis-store-gcra-1key-allow-P1"
    if (ops[a] && ops[b]) printf "  %-36s / %-32s = %.2f (2 calls per op vs 1)\n", a, b, ops[a] / ops[b]
    a = "redis-store-concurrency-100kkeys-acquire-P1"; b = "redis-store-gcra-100kkeys-allow-P1"
    if (ops[a] && ops[b]) printf "  %-36s / %-32s = %.2f\n", a, b, ops[a] / ops[b]
    split("1 16 64 256 1024", depths, " ")
    for (j = 1; j <= 5; j++) {
      a = "redis-denycache-90pct-deny-P" depths[j]
      if (ops[a]) printf "  %-36s = %d answers/s (target >= 1,000,000)\n", a, ops[a]
      a = "redis-store-denycache-90pct-deny-P" depths[j]
      if (ops[a]) printf "  %-36s = %d answers/s (target >= 1,000,000)\n", a, ops[a]
    }
  }' "$out"
rm -f "$out" "$raw"
# ---- the Redis module (docs/redis.md, "The Redis module") ----------------------------
if [ "${MODULE_ROWS:-1}" = 1 ]; then
  echo
  flag=--no-build; [ "$do_build" = 1 ] && flag=
  BUILD_DIR=$build EXACT_SCRIPT=$script RUNS=$RUNS "$here/redis-module.sh" $flag
fi
