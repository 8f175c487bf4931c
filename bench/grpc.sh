#!/usr/bin/env bash
# gRPC ShouldRateLimit calls per second of `sluice serve`'s Envoy front end,
# beside the research's minimal gRPC server and beside sluice's own HTTP
# endpoint, in one run: h2load (nghttp2-client, 1 client thread, loopback,
# CONNS connections, one stream each), every row bounded by DUR seconds under
# `timeout`, rows interleaved ROUNDS times so drift hits them alike; medians.
#
#   lab-grpc      ../shared/research/http-lab/grpc/rls_server (sync gRPC, a
#                 fixed window per descriptor in one locked hash map), built
#                 here from its sources into the bench build dir
#   sluice-grpc   sluice serve --grpc: ShouldRateLimit, one descriptor
#                 api_key=alice, a real GCRA decision per call through the
#                 memory store, statuses + RateLimit headers in the answer
#   sluice-http   the same sluice process, GET /v1/authorize with
#                 X-Api-Key: alice over HTTP/1.1 keep-alive (h2load --h1):
#                 the same policy, the same key, the same store
#
# Every call of every row is admitted (GCRA 1/1s, burst 10^9). h2load reads
# HTTP statuses only, so one python3-grpcio call checks each gRPC server's
# answer before the run.
#
# usage: bench/grpc.sh [BUILD_DIR]   (env: DUR=10 ROUNDS=3 CONNS=50 THREADS=1)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Absolute: the research's build script runs in its own folder, so a relative
# BUILD would put its output there.
BUILD=$(cd "${1:-$ROOT/build}" && pwd) || { echo "$(basename "$0"): no build directory ${1:-$ROOT/build}" >&2; exit 1; }
SLUICE=$BUILD/sluice
LAB_SRC=${LAB_SRC:-$ROOT/../shared/research/http-lab/grpc}
DUR=${DUR:-10}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-50}
THREADS=${THREADS:-1}
PY=/usr/bin/python3  # Debian's, where python3-grpcio lives
command -v h2load >/dev/null || { echo "grpc.sh: h2load is missing (scripts/setup.sh --bench)" >&2; exit 1; }
[ -x "$SLUICE" ] || { echo "grpc.sh: $SLUICE not built" >&2; exit 1; }
"$SLUICE" serve --help | grep -q -- --grpc || { echo "grpc.sh: $SLUICE has no --grpc" >&2; exit 1; }
[ -f "$LAB_SRC/rls_server.cpp" ] || { echo "grpc.sh: no research server at $LAB_SRC" >&2; exit 1; }

WORK=$BUILD/bench-grpc
mkdir -p "$WORK/lab" "$WORK/pb2"
# The research's server, built from its own script into our build dir.
if [ ! -x "$WORK/lab/rls_server" ] || [ "$LAB_SRC/rls_server.cpp" -nt "$WORK/lab/rls_server" ]; then
  B="$WORK/lab" bash "$LAB_SRC/build.sh" >&2
fi
protoc -I "$ROOT/src/serve/envoy/proto" --python_out="$WORK/pb2" \
  $(cd "$ROOT/src/serve/envoy/proto" && find envoy -name '*.proto' | sort)
"$PY" "$LAB_SRC/make_frame.py" "$WORK/lab" "$WORK/lab-frame.bin"
"$PY" "$ROOT/bench/grpc/make_frames.py" "$WORK/pb2" "$WORK/sluice-frame.bin" edge api_key=alice

RUN=$(mktemp -d /tmp/sluice-grpc-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$RUN"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 not up" >&2; return 1; }
P_LAB=$(free_port); P_HTTP=$(free_port); P_GRPC=$(free_port)

cat > "$RUN/sluice.toml" <<TOML
[server]
listen = "127.0.0.1:$P_HTTP"
threads = $THREADS
[grpc]
listen = "127.0.0.1:$P_GRPC"
[policies]
api = "gcra 1/1s burst=1000000000"
[[rules]]
policy = "api"
key = "header:X-Api-Key"
[[envoy]]
domain = "edge"
descriptor = ["api_key"]
policy = "api"
TOML

"$WORK/lab/rls_server" "127.0.0.1:$P_LAB" & PIDS+=($!)
"$SLUICE" serve --config "$RUN/sluice.toml" 2>"$RUN/sluice.log" & PIDS+=($!)
wait_port "$P_LAB"; wait_port "$P_HTTP"; wait_port "$P_GRPC"
echo "check lab-grpc:    $("$PY" "$ROOT/bench/grpc/check.py" "$WORK/pb2" "127.0.0.1:$P_LAB" edge api_key=alice 2>&1 || true)" >&2
"$PY" "$ROOT/bench/grpc/check.py" "$WORK/pb2" "127.0.0.1:$P_GRPC" edge api_key=alice | sed 's/^/check sluice-grpc: /' >&2

GRPC_PATH=/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit
run_row() {  # name -> prints "req/s mean_ms"
  local out
  case $1 in
    lab-grpc) out=$(timeout $((DUR + 30)) h2load -D "$DUR" -c "$CONNS" -m 1 -t 1 -d "$WORK/lab-frame.bin" \
                 -H 'content-type: application/grpc' -H 'te: trailers' "http://127.0.0.1:$P_LAB$GRPC_PATH") ;;
    sluice-grpc) out=$(timeout $((DUR + 30)) h2load -D "$DUR" -c "$CONNS" -m 1 -t 1 -d "$WORK/sluice-frame.bin" \
                 -H 'content-type: application/grpc' -H 'te: trailers' "http://127.0.0.1:$P_GRPC$GRPC_PATH") ;;
    sluice-http) out=$(timeout $((DUR + 30)) h2load --h1 -D "$DUR" -c "$CONNS" -m 1 -t 1 -H 'X-Api-Key: alice' \
                 "http://127.0.0.1:$P_HTTP/v1/authorize") ;;
  esac
  local rps mean codes
  rps=$(awk '/^finished in/{gsub(",","",$4); print $4}' <<<"$out")
  mean=$(awk '/^time for request:/{print $6}' <<<"$out")
  codes=$(awk '/^status codes:/{print $3 "x2xx " $7 "x4xx " $9 "x5xx"}' <<<"$out")
  echo "$rps $mean $codes"
}

declare -A results
rows=(lab-grpc sluice-grpc sluice-http)
for round in $(seq "$ROUNDS"); do
  for r in "${rows[@]}"; do
    line=$(run_row "$r")
    echo "round $round $r: $line" >&2
    results[$r]+="$(awk '{print $1}' <<<"$line") "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
lab=$(median <<<"${results[lab-grpc]}")
printf '\n%-12s %14s %10s   (median of %d runs of %ss, %d connections, 1 h2load thread, sluice threads=%d)\n' \
  row "calls/s" "x lab" "$ROUNDS" "$DUR" "$CONNS" "$THREADS"
for r in "${rows[@]}"; do
  m=$(median <<<"${results[$r]}")
  printf '%-12s %14.0f %10.2f\n' "$r" "$m" "$(echo "$m / $lab" | bc -l)"
done
