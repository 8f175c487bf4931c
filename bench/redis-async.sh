#!/usr/bin/env bash
# The asynchronous client (src/redis/client/async_client.hpp) beside the
# synchronous one and redis-benchmark, in one run on one private
# redis-server (CPU 1; clients on CPU 0) that listens in plaintext and in
# TLS (certificates made now by openssl): the research's exact GCRA script
# by EVALSHA, 1 key, allowed. Prints the RESULT lines and the ratios:
# async against the ceiling (redis-benchmark, 50 connections, -P 1) and
# against the old client, TLS against plaintext.
#   bench/redis-async.sh [--no-build]      SECS (1) and RUNS (3) from the environment
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build/bench}
# shellcheck source=bench/redis_common.sh
. "$root/bench/redis_common.sh"
parse_flags "$@"
need redis-server redis-benchmark redis-cli openssl taskset
build_bench redis_async_bench
SECS=${SECS:-1}
RUNS=${RUNS:-3}
script=$root/../shared/research/redis-lab/gcra.lua

certs=$(mktemp -d)
on_exit() { rm -rf "$certs"; }
key="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
(cd "$certs" &&
  openssl req -x509 $key -keyout ca.key -out ca.crt -days 2 -subj /CN=bench-ca &&
  openssl req $key -keyout s.key -out s.csr -subj /CN=bench &&
  echo "subjectAltName=IP:127.0.0.1" >s.ext &&
  openssl x509 -req -in s.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out s.crt -days 2 -extfile s.ext) \
  >"$certs/openssl.log" 2>&1 || { cat "$certs/openssl.log" >&2; exit 1; }
tls_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start_redis taskset -c 1 env
# The TLS port of the same server.
cli config set tls-cert-file "$certs/s.crt" >/dev/null
cli config set tls-key-file "$certs/s.key" >/dev/null
cli config set tls-ca-cert-file "$certs/ca.crt" >/dev/null
cli config set tls-auth-clients no >/dev/null
cli config set tls-port "$tls_port" >/dev/null
SHA=$(cli script load "$(cat "$script")")
say "redis $(redis-server --version | awk '{print $3}') on 127.0.0.1:$port (TLS $tls_port, pid $pid, CPU 1), client on CPU 0, runs=$RUNS secs=$SECS"

ALLOW=(0 1000 1 1 0 1000000000000000 0 1 0)
out=$(mktemp)
ceiling() {  # SCENARIO N CONNS PIPELINE NOTE
  local sc=$1 n=$2 c=$3 p=$4 note=$5 vals=() line
  for _ in $(seq 1 "$RUNS"); do
    line=$(taskset -c 0 redis-benchmark -h 127.0.0.1 -p "$port" -c "$c" -n "$n" -P "$p" --csv evalsha "$SHA" 1 rb:hot "${ALLOW[@]}" 2>/dev/null | tail -n 1)
    vals+=("$(echo "$line" | tr -d '"' | awk -F, '{print $2}')")
  done
  printf '%s\n' "${vals[@]}" | sort -n | awk -v sc="$sc" -v note="$note" '{v[NR] = $1} END {
    m = v[int((NR + 1) / 2)]; printf "RESULT\tredis-ceiling\t%s\t%.2f\t%.0f\t-\t%d\t-\t-\t%s\n", sc, 1e9 / m, m, NR, note }' | tee -a "$out"
}
ceiling gcra-c50-P1 200000 50 1 "redis-benchmark EVALSHA gcra.lua, 1 key, allowed, 50 connections, -P 1"
ceiling gcra-c1-P1 20000 1 1 "redis-benchmark EVALSHA gcra.lua, 1 key, allowed, 1 connection, -P 1"
taskset -c 0 "$bench_bin" "redis://127.0.0.1:$port" "rediss://127.0.0.1:$tls_port?ca_file=$certs/ca.crt" "$SHA" "$SECS" "$RUNS" | tee -a "$out"
awk -F'\t' '$1 == "RESULT" { r[$3] = $5 } END {
  print "ratios (calls/s, same server, same run):"
  printf "  async-inflight50 / redis-benchmark c50    %.2f\n", r["async-inflight50"] / r["gcra-c50-P1"]
  printf "  async-inflight50 / sync-c1 (sync face)     %.2f\n", r["async-inflight50"] / r["sync-c1"]
  printf "  async-inflight50 / sync-t2 (sync face)     %.2f\n", r["async-inflight50"] / r["sync-t2"]
  printf "  async-face-t8 / sync-t2                   %.2f\n", r["async-face-t8"] / r["sync-t2"]
  printf "  sync-c1 / redis-benchmark c1              %.2f\n", r["sync-c1"] / r["gcra-c1-P1"]
  printf "  TLS / plaintext (async, 50 in flight)     %.2f\n", r["async-tls-inflight50"] / r["async-inflight50"]
}' "$out"
rm -f "$out"
