#!/usr/bin/env bash
# The HTTP benchmark of `sluice serve`, beside nginx, in one run: wrk (1
# client thread, loopback, bounded by DUR seconds under `timeout`), every row
# spread over 10,000 keys by bench/http/keys.lua, rows interleaved ROUNDS
# times so drift hits them alike; medians reported.
#
#   nginx-return     nginx `return 200`, 1 worker (the ceiling)
#   sluice           sluice serve, 1 thread, memory store, GET /v1/authorize?key=kN:
#                    a real GCRA decision per request (204 + RateLimit fields)
#   authreq-stub     nginx (1 worker) -> auth_request -> a trivial 204 server (nginx `return 204`)
#   authreq-sluice   nginx (1 worker) -> auth_request -> sluice serve (1 thread)
#
# usage: bench/http.sh [BUILD_DIR]   (env: DUR=10 ROUNDS=3 CONNS=50 KEYS=10000)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$ROOT/build}
SLUICE=$BUILD/sluice
DUR=${DUR:-10}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-50}
KEYS=${KEYS:-10000}
command -v wrk >/dev/null || { echo "http.sh: wrk is missing (scripts/setup.sh --bench)" >&2; exit 1; }
command -v nginx >/dev/null || { echo "http.sh: nginx is missing (scripts/setup.sh)" >&2; exit 1; }
[ -x "$SLUICE" ] || { echo "http.sh: $SLUICE not built" >&2; exit 1; }

RUN=$(mktemp -d /tmp/sluice-http-bench.XXXXXX)
chmod 755 "$RUN"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$RUN"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 not up" >&2; return 1; }

P_NGX=$(free_port); P_STUB=$(free_port); P_SLUICE=$(free_port); P_AUTH_STUB=$(free_port); P_AUTH_SLUICE=$(free_port)
echo ok > "$RUN/ok.txt"

cat > "$RUN/sluice.toml" <<TOML
[server]
listen = "127.0.0.1:$P_SLUICE"
threads = 1
[policies]
# 1 per second with a burst of a million: every request admitted, and every
# key touched stays held (not fresh) for the whole run.
api = "gcra 1/1s burst=1000000"
[[rules]]
policy = "api"
key = "query:key"
TOML

cat > "$RUN/nginx.conf" <<NGX
worker_processes 1;
pid $RUN/nginx.pid;
error_log $RUN/nginx-error.log crit;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  default_type text/plain;
  open_file_cache max=16 inactive=600s; open_file_cache_valid 600s;
  upstream stub { server 127.0.0.1:$P_STUB; keepalive 64; keepalive_requests 1000000; }
  upstream sluice { server 127.0.0.1:$P_SLUICE; keepalive 64; keepalive_requests 1000000; }
  server { listen 127.0.0.1:$P_NGX; location / { return 200 "ok\n"; } }
  server {
    listen 127.0.0.1:$P_AUTH_STUB;
    root $RUN;
    location = /_auth { internal; proxy_pass http://stub/; proxy_http_version 1.1; proxy_set_header Connection "";
                        proxy_pass_request_body off; proxy_set_header Content-Length ""; }
    location / { auth_request /_auth; try_files /ok.txt =404; }
  }
  server {
    listen 127.0.0.1:$P_AUTH_SLUICE;
    root $RUN;
    location = /_auth { internal; proxy_pass http://sluice/v1/authorize; proxy_http_version 1.1;
                        proxy_set_header Connection ""; proxy_pass_request_body off; proxy_set_header Content-Length "";
                        proxy_set_header X-Original-URI \$request_uri; }
    location / { auth_request /_auth; try_files /ok.txt =404; }
  }
}
NGX
# The trivial 204 server: another nginx, 1 worker, `return 204`.
cat > "$RUN/stub.conf" <<NGX
worker_processes 1;
pid $RUN/stub.pid;
error_log $RUN/stub-error.log crit;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000;
       server { listen 127.0.0.1:$P_STUB; location / { return 204; } } }
NGX

nginx -p "$RUN" -c "$RUN/nginx.conf" -g 'daemon off;' & PIDS+=($!)
nginx -p "$RUN" -c "$RUN/stub.conf" -g 'daemon off;' & PIDS+=($!)
"$SLUICE" serve --config "$RUN/sluice.toml" 2> "$RUN/sluice.log" & PIDS+=($!)
for p in $P_NGX $P_STUB $P_SLUICE $P_AUTH_STUB $P_AUTH_SLUICE; do wait_port "$p"; done

# A correctness probe before timing: sluice answers 204 with the fields, nginx passes it through.
curl -sf -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P_SLUICE/v1/authorize?key=probe" | grep -q 204
curl -sf "http://127.0.0.1:$P_AUTH_SLUICE/x?key=probe" | grep -q ok

to_us() { awk -v s="$1" 'BEGIN{v=s+0; if (s ~ /us$/) f=1; else if (s ~ /ms$/) f=1000; else if (s ~ /s$/) f=1e6; else f=1; printf "%.0f", v*f}'; }
TSV=$RUN/rows.tsv
run() {  # LABEL URL
  local raw="$RUN/wrk-$1.txt"
  timeout $((DUR + 20)) wrk -t1 -c"$CONNS" -d"${DUR}s" --latency --timeout 5s -s "$ROOT/bench/http/keys.lua" "$2" -- "$KEYS" > "$raw" 2>&1
  local rps p50 p99 non2xx
  rps=$(awk '/^Requests\/sec/{print $2}' "$raw")
  p50=$(to_us "$(awk '$1=="50%"{print $2}' "$raw")")
  p99=$(to_us "$(awk '$1=="99%"{print $2}' "$raw")")
  non2xx=$(awk '/Non-2xx/{print $NF}' "$raw"); non2xx=${non2xx:-0}
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$rps" "$p50" "$p99" "$non2xx" >> "$TSV"
  printf '  %-16s %10.0f req/s  p50 %6s us  p99 %6s us  non-2xx %s\n' "$1" "$rps" "$p50" "$p99" "$non2xx" >&2
}
echo "http.sh: wrk -t1 -c$CONNS -d${DUR}s, $KEYS keys, $ROUNDS interleaved rounds" >&2
for r in $(seq "$ROUNDS"); do
  echo "round $r" >&2
  run nginx-return "http://127.0.0.1:$P_NGX/"
  run sluice "http://127.0.0.1:$P_SLUICE/v1/authorize"
  run authreq-stub "http://127.0.0.1:$P_AUTH_STUB/protected"
  run authreq-sluice "http://127.0.0.1:$P_AUTH_SLUICE/protected"
done
# Every decision was real: the store holds the keys.
keys=$(curl -s "http://127.0.0.1:$P_SLUICE/metrics" | awk '$1=="sluice_keys"{print $2}')

python3 - "$TSV" "$keys" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, rps, p50, p99, non2xx = line.split("\t")
    rows.setdefault(label, []).append((float(rps), int(p50), int(p99), int(non2xx)))
med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v),
           statistics.median(r[2] for r in v), sum(r[3] for r in v), [r[0] for r in v]) for k, v in rows.items()}
base = {"nginx-return": "nginx-return", "sluice": "nginx-return",
        "authreq-stub": "authreq-stub", "authreq-sluice": "authreq-stub"}
print("| row | req/s (median) | runs | p50 µs | p99 µs | non-2xx | ratio |")
print("|---|---:|---|---:|---:|---:|---:|")
for k in ["nginx-return", "sluice", "authreq-stub", "authreq-sluice"]:
    rps, p50, p99, bad, runs = med[k]
    ratio = rps / med[base[k]][0]
    print("| %s | %s | %s | %d | %d | %d | %.2f× %s |" % (
        k, format(round(rps), ","), " / ".join("%.0fk" % (r / 1000) for r in runs), p50, p99, bad, ratio,
        "" if base[k] == k else base[k]))
print()
print("sluice / nginx return 200: %.2f× (target >= 0.85)" % (med["sluice"][0] / med["nginx-return"][0]))
print("auth_request -> sluice / auth_request -> 204 stub: %.2f× (target >= 0.95)" % (
    med["authreq-sluice"][0] / med["authreq-stub"][0]))
print("keys held by sluice after the run: %s" % sys.argv[2])
PY
