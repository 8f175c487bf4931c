#!/usr/bin/env bash
# Instructions per decision, server and client, for sluice::redis_store and
# the research's exact GCRA script (the ceiling of bench/redis.sh), counted
# by callgrind: numbers a loaded machine does not move, where bench/redis.sh's
# throughputs are only good within one quiet run.
#
#   bench/redis_instr.sh              build (Release, build-bench/) and run
#   bench/redis_instr.sh --no-build   use build-bench/bench/redis_bench as it is
#
# The server: a private redis-server under callgrind on a free port (stopped
# by its PID). Its instructions per call are the Ir between a zero and a dump
# of its counters, over the calls of one run (INFO commandstats). The
# clients: redis-benchmark (the ceiling's) and redis_bench (the store's),
# each under callgrind, per operation. The "model" ratio is the store's
# throughput over the ceiling's on one connection, pipelined, when the
# client and the server take turns: (S0 + C0) / (S + C).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build-bench}
script=$root/../shared/research/redis-lab/gcra.lua
N=${N:-4000}
# shellcheck source=bench/redis_common.sh
. "$here/redis_common.sh"
parse_flags "$@"
need redis-server redis-benchmark redis-cli valgrind callgrind_control
[ -f "$script" ] || { say "ERROR: $script missing"; exit 1; }
build_bench redis_bench

work=$(mktemp -d)
on_exit() { rm -rf "$work"; }
start_redis valgrind --tool=callgrind --callgrind-out-file="$work/server.%p"
SHA=$(cli script load "$(cat "$script")")
say "redis-server under callgrind on 127.0.0.1:$port (pid $pid); load average $(cut -d' ' -f1-3 /proc/loadavg)"

# server_ir LABEL -- command: the server's instructions per FCALL/EVALSHA the command sends.
server_ir() {
  local label=$1; shift 2
  cli config resetstat >/dev/null
  callgrind_control -z "$pid" >/dev/null 2>&1
  "$@" >"$work/last.out" 2>&1 || { cat "$work/last.out" >&2; exit 1; }
  callgrind_control -d "$pid" >/dev/null 2>&1
  sleep 0.5
  local f; f=$(ls -t "$work"/server."$pid".* | head -1)
  local ir; ir=$(awk '/^summary:/ {print $2; exit}' "$f")
  local calls; calls=$(cli info commandstats | tr -d '\r' | awk -F'[=,:]' '/^cmdstat_(fcall|evalsha)/ {n += $3} END {print n + 0}')
  echo "$label $((ir / calls))"
}
# client_ir LABEL -- command-with-@N@: the command's own instructions per
# operation: the difference of two runs (4,000 and 24,000 operations, @N@
# replaced), so that its start-up is not counted.
client_ir() {
  local label=$1; shift 2
  local irs=() n
  for n in 4000 24000; do
    local args=("${@//@N@/$n}")
    args=("${args[@]//@S@/$(awk -v n="$n" 'BEGIN { printf "%.6f", n / 60000 }')}")
    valgrind --tool=callgrind --callgrind-out-file="$work/client.out" "${args[@]}" >"$work/last.out" 2>&1 ||
      { cat "$work/last.out" >&2; exit 1; }
    irs+=("$(awk '/^summary:/ {print $2; exit}' "$work/client.out")")
  done
  echo "$label $(((irs[1] - irs[0]) / 20000))"
}

ALLOW=(0 1000 1 1 0 1000000000000000 0 1 0)
ALLOW_PX=(0 1000 1 1 0 1000000000000000 0 1 60000)
DENY=(0 1000 1 1000000000 0 1000000000 0 1 0)
rb=(redis-benchmark -h 127.0.0.1 -p "$port" -c 1 -P 16)
cli evalsha "$SHA" 1 rb:deny "${DENY[@]}" >/dev/null
store=("$bench_bin" --url "redis://127.0.0.1:$port" --script "$script" --runs 1)
"${store[@]}" --filter redis-store-gcra-1key-allow-P16 --scale 0.01 >/dev/null  # loads the library
# redis_bench's store rows run SCALE x their count; 60000 per P16 row.
scale=$(awk -v n="$N" 'BEGIN { printf "%.4f", n / 60000 }')
{
  server_ir ceiling-allow -- "${rb[@]}" -n "$N" evalsha "$SHA" 1 rb:hot "${ALLOW[@]}"
  server_ir ceiling-allow-px -- "${rb[@]}" -n "$N" evalsha "$SHA" 1 rb:hot "${ALLOW_PX[@]}"
  server_ir ceiling-deny -- "${rb[@]}" -n "$N" evalsha "$SHA" 1 rb:deny "${DENY[@]}"
  server_ir store-allow -- "${store[@]}" --filter redis-store-gcra-1key-allow-P16 --scale "$scale"
  server_ir store-deny -- "${store[@]}" --filter redis-store-gcra-1key-deny-P16 --scale "$scale"
  client_ir ceiling-client-allow -- "${rb[@]}" -n @N@ evalsha "$SHA" 1 rb:hot "${ALLOW[@]}"
  client_ir store-client-allow -- "${store[@]}" --filter redis-store-gcra-1key-allow-P16 --scale @S@
  client_ir store-client-deny -- "${store[@]}" --filter redis-store-gcra-1key-deny-P16 --scale @S@
} >"$work/figures"
awk '{ v[$1] = $2; printf "%-24s %8d instructions per call\n", $1, $2 }
  END {
    c0 = v["ceiling-client-allow"]
    printf "\nmodel ratios, one connection pipelined: (S0 + C0) / (S + C)\n"
    printf "  allowed / ceiling without TTL    %.2f   (target >= 0.90)\n", (v["ceiling-allow"] + c0) / (v["store-allow"] + v["store-client-allow"])
    printf "  allowed / ceiling with TTL set   %.2f\n", (v["ceiling-allow-px"] + c0) / (v["store-allow"] + v["store-client-allow"])
    printf "  denied / read-only ceiling       %.2f   (target >= 1)\n", (v["ceiling-deny"] + c0) / (v["store-deny"] + v["store-client-deny"])
    printf "  server alone: allowed %.2f, with TTL %.2f, denied %.2f\n", v["ceiling-allow"] / v["store-allow"], v["ceiling-allow-px"] / v["store-allow"], v["ceiling-deny"] / v["store-deny"]
  }' "$work/figures"
