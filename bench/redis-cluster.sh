#!/usr/bin/env bash
# The Redis Cluster benchmark: bench/redis_cluster_bench decides with the
# same client (sluice::redis_store, 2 threads, pipelined) against 1 Redis and
# against a 3-primary cluster, in the same run, and prints RESULT lines, the
# ratio, and the servers' and the client's CPU (what bounds the rate).
#
#   bench/redis-cluster.sh              build (Release, build-bench/) and run
#   bench/redis-cluster.sh --no-build   use build-bench/bench/redis_cluster_bench as it is
#
# Env: RUNS (default 3), OPS (decisions per thread per run, default 200000),
# THREADS (default 2), DEPTH (batch size, default 64), BUILD_DIR.
# The cluster has primaries only (no replicas): replicas would take CPU from
# the primaries and the client on a small machine, and the bench measures
# routing and parallel primaries, not replication. Nothing is pinned: the
# servers and the client share every core, as they would on one host.
# Every server is stopped by its PID on exit; every wait is bounded.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build-bench}
RUNS=${RUNS:-3}
OPS=${OPS:-200000}
THREADS=${THREADS:-2}
DEPTH=${DEPTH:-64}
# shellcheck source=bench/redis_common.sh
. "$here/redis_common.sh"
parse_flags "$@"
need redis-server redis-cli python3
build_bench redis_cluster_bench

# A free port whose cluster bus port (+10000) is free too.
free_port() {
  python3 - <<'PY'
import socket
for _ in range(200):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
    if p > 55535: continue
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 10000)); b.close(); print(p); break
    except OSError:
        b.close()
PY
}

dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
# start NAME PORT [extra args...]: a server in $dir/NAME, its PID appended to pids
start() {
  local name=$1 port=$2; shift 2
  mkdir -p "$dir/$name"
  redis-server --port "$port" --bind 127.0.0.1 --protected-mode yes --save "" --appendonly no \
    --daemonize no --dir "$dir/$name" --logfile "$dir/$name/redis.log" "$@" &
  pids+=($!)
  for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && return 0; sleep 0.05; done
  say "ERROR: redis-server on $port did not start"; cat "$dir/$name/redis.log" >&2; exit 1
}

single_port=$(free_port)
start single "$single_port"
single_pid=${pids[-1]}
cluster_ports=() cluster_pids=()
for i in 1 2 3; do
  p=$(free_port)
  start "node$i" "$p" --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000
  cluster_ports+=("$p") cluster_pids+=("${pids[-1]}")
done
addrs=()
for p in "${cluster_ports[@]}"; do addrs+=("127.0.0.1:$p"); done
timeout 60 redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 ||
  { cat "$dir/create.log" >&2; exit 1; }
for _ in $(seq 1 200); do
  ok=1
  for p in "${cluster_ports[@]}"; do redis-cli -p "$p" cluster info | grep -q cluster_state:ok || ok=0; done
  [ "$ok" = 1 ] && break
  sleep 0.05
done
[ "$ok" = 1 ] || { say "ERROR: the cluster did not become ready"; exit 1; }

say "redis $(redis-server --version | awk '{print $3}'): 1 server (pid $single_pid) and a 3-primary cluster (pids ${cluster_pids[*]}, no replicas); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "client: $THREADS threads, batches of $DEPTH, $OPS decisions per thread per run, $RUNS runs (interleaved)"
cluster_url="redis+cluster://$(IFS=,; echo "${addrs[*]}")"
"$bench_bin" --single "redis://127.0.0.1:$single_port" --cluster "$cluster_url" \
  --single-pids "$single_pid" --cluster-pids "$(IFS=,; echo "${cluster_pids[*]}")" \
  --threads "$THREADS" --depth "$DEPTH" --ops "$OPS" --runs "$RUNS"
