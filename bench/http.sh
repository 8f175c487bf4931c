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
#   redis-evalsha-c1   the Redis ceiling for one connection: redis-benchmark EVALSHA of the
#                      research's exact gcra.lua on a private redis-server (pinned to CPU 1; the
#                      client to CPU 0), a random key of KEYS, 1 connection, one call at a time:
#                      what one connection's round trips allow (sluice serve's thread calls
#                      Redis on one connection, synchronously)
#   redis-evalsha-c50  the same with 50 connections: the server's ceiling
#   nginx-lua-redis    ../shared/peers/http-redis's anchor on the same server: nginx (1 worker, on
#                      CPU 0) + its lua module, one EVALSHA of gcra.lua per request over a pooled
#                      cosocket (that folder's gcracheck.lua, read from there; PEERS_HTTP_REDIS=)
#   sluice-redis       sluice serve, 1 thread (on CPU 0), the Redis store on that server, GET
#                      /v1/authorize?key=kN: one FCALL of the Lua library per request (`?module=off`;
#                      every request admits, so the deny cache never answers); its event loop never
#                      waits on Redis: its calls are pipelined on one connection, one batch in flight
#   sluice-redis-b2    the same, two batches in flight (`?batches_in_flight=2`)
#   sluice-redis-module  the same service deciding with the Redis module (`?module=on`: one
#                      SLUICE.ONE per request; the server runs BUILD_DIR/sluice_module.so)
#   sluice-redis-module-b2  the module, two batches in flight
#   sluice-redis-b0    sluice-redis with no batch held (`?batches_in_flight=0`: one write a pass)
#   sluice-rediss-b0   sluice-rediss likewise (TLS held nothing before batches_in_flight)
#   sluice-redis-2t    the same with 2 threads (not pinned): what bounds it on 2 cores
#   sluice-rediss      sluice-redis over TLS (rediss://, certificates made by openssl for this run)
#                      to the same server's TLS port: TLS against plaintext as a ratio
#
# For the Redis rows, and the two 1-server HTTP rows (nginx's worker, sluice serve on
# memory), it also says where the CPU went, per request: the load client's (wrk or
# redis-benchmark), the server's and redis-server's CPU time over the row (/proc), and
# what 2 cores allow at that sum — the bound no row on this machine can pass; then what
# the 0.9× target leaves sluice serve on Redis a request, beside what HTTP alone costs
# nginx and sluice serve here.
#
# For the Redis rows it also counts the calls Redis answered per socket read
# (INFO stats total_reads_processed beside commandstats' FCALL/EVALSHA and
# SLUICE.* calls): the calls a batch carries, i.e. how many requests wait on
# Redis together. The redis-server column is the issue-32 figure: Redis's CPU
# per decision (the harness's method: its CPU time over the row ÷ requests).
# The private redis-server loads the module (Release: BUILD_DIR/sluice_module.so);
# the rows that say so use it, the others the Lua library or EVALSHA as before.
#
# usage: bench/http.sh [BUILD_DIR]
#   env: DUR=10 ROUNDS=3 CONNS=50 KEYS=10000
#        CLIENT_CPU=0: wrk pinned to that CPU (as ../shared/peers/http-redis pins it, with the
#        service on CPU 0); unset: wrk unpinned
#        ROWS=all, or a comma list of the rows above (e.g. ROWS=sluice-redis,sluice-rediss:
#        TLS against plaintext alone); every server starts either way
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Absolute: the research's build script runs in its own folder, so a relative
# BUILD would put its output there.
BUILD=$(cd "${1:-$ROOT/build}" && pwd) || { echo "$(basename "$0"): no build directory ${1:-$ROOT/build}" >&2; exit 1; }
SLUICE=$BUILD/sluice
MODULE_SO=$BUILD/sluice_module.so
DUR=${DUR:-10}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-50}
CLIENT_PIN=()
[ -z "${CLIENT_CPU:-}" ] || CLIENT_PIN=(taskset -c "$CLIENT_CPU")
KEYS=${KEYS:-10000}
ROWS=${ROWS:-all}
want() { [ "$ROWS" = all ] || [[ ",$ROWS," == *",$1,"* ]]; }
command -v wrk >/dev/null || { echo "http.sh: wrk is missing (scripts/setup.sh --bench)" >&2; exit 1; }
command -v nginx >/dev/null || { echo "http.sh: nginx is missing (scripts/setup.sh)" >&2; exit 1; }
for t in redis-server redis-benchmark redis-cli taskset; do
  command -v $t >/dev/null || { echo "http.sh: $t is missing (scripts/setup.sh)" >&2; exit 1; }
done
GCRA_LUA=${GCRA_LUA:-$ROOT/../shared/research/redis-lab/gcra.lua}  # env: where ../shared is not beside the checkout
[ -f "$GCRA_LUA" ] || { echo "http.sh: $GCRA_LUA is missing (the research's exact GCRA script)" >&2; exit 1; }
[ -x "$SLUICE" ] || { echo "http.sh: $SLUICE not built" >&2; exit 1; }
[ -f "$MODULE_SO" ] || { echo "http.sh: $MODULE_SO not built (cmake --build <dir> --target sluice_module)" >&2; exit 1; }
# The anchor row's Lua (read, never written: ../shared is read-only here).
PEERS_HTTP_REDIS=${PEERS_HTTP_REDIS:-$(dirname "$GCRA_LUA")/../../peers/http-redis}
LUA_MOD=/usr/lib/nginx/modules/ngx_http_lua_module.so
NDK_MOD=/usr/lib/nginx/modules/ndk_http_module.so
[ -f "$PEERS_HTTP_REDIS/gcracheck.lua" ] || { echo "http.sh: no gcracheck.lua in $PEERS_HTTP_REDIS (set PEERS_HTTP_REDIS)" >&2; exit 1; }
[ -f "$LUA_MOD" ] && [ -f "$NDK_MOD" ] || { echo "http.sh: nginx's lua module is missing (../shared/peers/http-redis/setup.sh)" >&2; exit 1; }

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
P_REDIS=$(free_port); P_SLUICE_REDIS=$(free_port); P_REDIS_TLS=$(free_port); P_SLUICE_REDIS2=$(free_port)
P_SLUICE_REDISS=$(free_port); P_NGX_LUA=$(free_port); P_SR_B2=$(free_port); P_SR_MOD=$(free_port); P_SR_MOD_B2=$(free_port)
P_SR_B0=$(free_port); P_SRS_B0=$(free_port)
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

# The same service on the Redis store (a private server, below).
sed -e "s/127.0.0.1:$P_SLUICE/127.0.0.1:$P_SLUICE_REDIS/" "$RUN/sluice.toml" > "$RUN/sluice-redis.toml"
cat >> "$RUN/sluice-redis.toml" <<TOML
[store]
url = "redis://127.0.0.1:$P_REDIS?module=off"
key_prefix = "bench:"
command_timeout = "1s"
TOML
# 2 threads; and over TLS to the same server's TLS port (a CA and a server
# certificate for 127.0.0.1, made now).
sed -e "s/127.0.0.1:$P_SLUICE_REDIS/127.0.0.1:$P_SLUICE_REDIS2/" -e "s/^threads = 1/threads = 2/" \
  "$RUN/sluice-redis.toml" > "$RUN/sluice-redis-2t.toml"
( cd "$RUN"
  key="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
  openssl req -x509 $key -keyout ca.key -out ca.crt -days 2 -subj /CN=sluice-bench-ca
  echo "subjectAltName=IP:127.0.0.1" > server.ext
  openssl req $key -keyout server.key -out server.csr -subj /CN=sluice-bench-server
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 \
    -extfile server.ext ) > "$RUN/openssl.log" 2>&1 || { cat "$RUN/openssl.log" >&2; exit 1; }
sed -e "s/127.0.0.1:$P_SLUICE_REDIS/127.0.0.1:$P_SLUICE_REDISS/" \
  -e "s|redis://127.0.0.1:$P_REDIS?|rediss://127.0.0.1:$P_REDIS_TLS?ca_file=$RUN/ca.crt\&|" \
  "$RUN/sluice-redis.toml" > "$RUN/sluice-rediss.toml"
# Two batches in flight; the module; both.
variant() {  # PORT QUERY
  sed -e "s/127.0.0.1:$P_SLUICE_REDIS\"/127.0.0.1:$1\"/" -e "s|?module=off|?$2|" "$RUN/sluice-redis.toml"
}
variant "$P_SR_B2" "module=off\&batches_in_flight=2" > "$RUN/sluice-redis-b2.toml"
variant "$P_SR_B0" "module=off\&batches_in_flight=0" > "$RUN/sluice-redis-b0.toml"
sed -e "s/127.0.0.1:$P_SLUICE_REDISS\"/127.0.0.1:$P_SRS_B0\"/" -e "s|?ca_file|?batches_in_flight=0\&ca_file|" \
  "$RUN/sluice-rediss.toml" > "$RUN/sluice-rediss-b0.toml"
variant "$P_SR_MOD" "module=on" > "$RUN/sluice-redis-module.toml"
variant "$P_SR_MOD_B2" "module=on\&batches_in_flight=2" > "$RUN/sluice-redis-module-b2.toml"

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

# The private redis-server, pinned to CPU 1 as bench/redis.sh pins it, stopped by PID;
# with the module loaded (the rows that do not ask for it never call it).
taskset -c 1 redis-server --port "$P_REDIS" --bind 127.0.0.1 --protected-mode yes --save "" --appendonly no \
  --loadmodule "$MODULE_SO" \
  --tls-port "$P_REDIS_TLS" --tls-cert-file "$RUN/server.crt" --tls-key-file "$RUN/server.key" \
  --tls-ca-cert-file "$RUN/ca.crt" --tls-auth-clients no \
  --daemonize no --dir "$RUN" --logfile "$RUN/redis.log" & PIDS+=($!)
PID_REDIS=$!
wait_port "$P_REDIS"
rcli() { redis-cli -h 127.0.0.1 -p "$P_REDIS" "$@"; }
for _ in $(seq 100); do rcli ping >/dev/null 2>&1 && break; sleep 0.1; done
SHA=$(rcli script load "$(cat "$GCRA_LUA")")
# The anchor: nginx + Lua calling gcra.lua, as ../shared/peers/http-redis/run.sh writes it
# (its policy ARGV: 1 per second, burst 1e6, in 1 ms ticks, PX 1e9 ms), on CPU 0.
cat > "$RUN/lua.conf" <<NGX
load_module $NDK_MOD;
load_module $LUA_MOD;
worker_processes 1;
pid $RUN/lua.pid;
error_log $RUN/lua-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  lua_package_path "$PEERS_HTTP_REDIS/?.lua;;";
  lua_socket_pool_size 128;
  init_by_lua_block {
    require("gcracheck").configure({
      host = "127.0.0.1", port = $P_REDIS, sha = "$SHA", prefix = "nx:",
      timeout_ms = 1000, idle_ms = 60000, pool = 128,
      policies = { bench = { "1", "1000", "0", "1000000000", "0", "1", "1000000000" } },
    })
  }
  server { listen 127.0.0.1:$P_NGX_LUA; location = /check { content_by_lua_block { require("gcracheck").handle("bench") } } }
}
NGX
taskset -c 0 nginx -p "$RUN" -c "$RUN/lua.conf" -g 'daemon off;' & PIDS+=($!)
PID_NGX_LUA=$!
nginx -p "$RUN" -c "$RUN/nginx.conf" -g 'daemon off;' & PIDS+=($!)
PID_NGX=$!
nginx -p "$RUN" -c "$RUN/stub.conf" -g 'daemon off;' & PIDS+=($!)
"$SLUICE" serve --config "$RUN/sluice.toml" 2> "$RUN/sluice.log" & PIDS+=($!)
PID_SLUICE=$!
# On CPU 0, as redis-benchmark's client: the Redis rows compare two clients of one server alike.
taskset -c 0 "$SLUICE" serve --config "$RUN/sluice-redis.toml" 2> "$RUN/sluice-redis.log" & PIDS+=($!)
PID_SR=$!
"$SLUICE" serve --config "$RUN/sluice-redis-2t.toml" 2> "$RUN/sluice-redis-2t.log" & PIDS+=($!)
PID_SR2=$!
taskset -c 0 "$SLUICE" serve --config "$RUN/sluice-rediss.toml" 2> "$RUN/sluice-rediss.log" & PIDS+=($!)
PID_SRS=$!
taskset -c 0 "$SLUICE" serve --config "$RUN/sluice-redis-b2.toml" 2> "$RUN/sluice-redis-b2.log" & PIDS+=($!)
PID_SR_B2=$!
taskset -c 0 "$SLUICE" serve --config "$RUN/sluice-redis-module.toml" 2> "$RUN/sluice-redis-module.log" & PIDS+=($!)
PID_SR_MOD=$!
taskset -c 0 "$SLUICE" serve --config "$RUN/sluice-redis-module-b2.toml" 2> "$RUN/sluice-redis-module-b2.log" & PIDS+=($!)
PID_SR_MOD_B2=$!
taskset -c 0 "$SLUICE" serve --config "$RUN/sluice-redis-b0.toml" 2> "$RUN/sluice-redis-b0.log" & PIDS+=($!)
PID_SR_B0=$!
taskset -c 0 "$SLUICE" serve --config "$RUN/sluice-rediss-b0.toml" 2> "$RUN/sluice-rediss-b0.log" & PIDS+=($!)
PID_SRS_B0=$!
SR_PORTS="$P_SLUICE_REDIS $P_SLUICE_REDIS2 $P_SLUICE_REDISS $P_SR_B2 $P_SR_MOD $P_SR_MOD_B2 $P_SR_B0 $P_SRS_B0"
for p in $P_NGX $P_STUB $P_SLUICE $P_AUTH_STUB $P_AUTH_SLUICE $P_NGX_LUA $SR_PORTS; do
  wait_port "$p"
done
read -r PID_NGX_LUA_WORKER more < "/proc/$PID_NGX_LUA/task/$PID_NGX_LUA/children" || true
[[ "$PID_NGX_LUA_WORKER" =~ ^[0-9]+$ && -z "$more" ]] || { echo "http.sh: not one nginx (lua) worker" >&2; exit 1; }
# nginx's one worker (its master's only child) does the ceiling row's HTTP work.
read -r PID_NGX_WORKER more < "/proc/$PID_NGX/task/$PID_NGX/children" || true
[[ "$PID_NGX_WORKER" =~ ^[0-9]+$ && -z "$more" ]] || { echo "http.sh: not one nginx worker" >&2; exit 1; }

# A correctness probe before timing: sluice answers 204 with the fields, nginx passes it through.
curl -sf -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P_SLUICE/v1/authorize?key=probe" | grep -q 204
curl -sf "http://127.0.0.1:$P_AUTH_SLUICE/x?key=probe" | grep -q ok
# ... and on Redis: a decision from the store, whose state is in Redis.
for p in $SR_PORTS; do
  curl -s -X POST -d '{"policy":"api","key":"probe"}' "http://127.0.0.1:$p/v1/decide" | grep -q '"source":"store"'
done
[ "$(rcli exists 'bench:s:api:{probe}')" = 1 ]
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P_NGX_LUA/check?key=probe")" = 200 ]
[ "$(rcli exists nx:probe)" = 1 ]
# The module rows decide by the module, the others never call it.
module_calls() { rcli info commandstats | tr -d '\r' | awk -F'[:=,]' '$1 ~ /^cmdstat_sluice\./ {c += $3} END {print c + 0}'; }
m0=$(module_calls)
curl -s -X POST -d '{"policy":"api","key":"probe-m"}' "http://127.0.0.1:$P_SR_MOD/v1/decide" | grep -q '"source":"store"'
[ "$(module_calls)" -gt "$m0" ] || { echo "http.sh: sluice-redis-module did not call the module" >&2; exit 1; }

to_us() { awk -v s="$1" 'BEGIN{v=s+0; if (s ~ /us$/) f=1; else if (s ~ /ms$/) f=1000; else if (s ~ /s$/) f=1e6; else f=1; printf "%.0f", v*f}'; }
TSV=$RUN/rows.tsv
CPU=$RUN/cpu.tsv
# CPU time (user + system, ms) a process has used, from /proc; and, in a
# subshell that has waited for its children, theirs (the load client's).
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.0f", ($14 + $15) * 1000 / hz}' "/proc/$1/stat"; }
children_cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.0f", ($16 + $17) * 1000 / hz}' "/proc/$BASHPID/stat"; }
# Where a Redis row's CPU goes: the load client's, the server's (sluice, when
# there is one) and redis-server's CPU ms over the row, for the requests it
# answered; the rows then say what 2 cores allow at that cost per request.
# Redis's socket reads and its script calls (FCALL, EVALSHA) so far: "READS CALLS".
redis_reads_calls() {
  { rcli info stats; rcli info commandstats; } | tr -d '\r' | awk -F'[:=,]' '
    $1 == "total_reads_processed" {r = $2}
    $1 == "cmdstat_fcall" || $1 == "cmdstat_evalsha" || $1 ~ /^cmdstat_sluice\.(one|decide|peek|report)$/ {c += $3}
    END {print r + 0, c + 0}'
}
cpu_row() {  # LABEL REQUESTS CLIENT_MS SERVER_PID SERVER_MS0 REDIS_MS0 "READS0 CALLS0"
  local server_ms=0 r0 c0 r1 c1
  [ "$4" = - ] || server_ms=$(( $(cpu_ms "$4") - $5 ))
  read -r r0 c0 <<< "$7"
  read -r r1 c1 < <(redis_reads_calls)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$server_ms" "$(( $(cpu_ms "$PID_REDIS") - $6 ))" \
    "$((r1 - r0))" "$((c1 - c0))" >> "$CPU"
}
run() {  # LABEL URL [SERVER_PID: account the row's CPU]
  want "$1" || return 0
  local raw="$RUN/wrk-$1.txt" s0=0 r0=0 rc0="0 0" client_ms
  if [ -n "${3:-}" ]; then s0=$(cpu_ms "$3"); r0=$(cpu_ms "$PID_REDIS"); rc0=$(redis_reads_calls); fi
  client_ms=$( timeout $((DUR + 20)) "${CLIENT_PIN[@]}" wrk -t1 -c"$CONNS" -d"${DUR}s" --latency --timeout 5s -s "$ROOT/bench/http/keys.lua" "$2" -- "$KEYS" > "$raw" 2>&1
               children_cpu_ms )
  local rps p50 p99 non2xx
  rps=$(awk '/^Requests\/sec/{print $2}' "$raw")
  p50=$(to_us "$(awk '$1=="50%"{print $2}' "$raw")")
  p99=$(to_us "$(awk '$1=="99%"{print $2}' "$raw")")
  non2xx=$(awk '/Non-2xx/{print $NF}' "$raw"); non2xx=${non2xx:-0}
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$rps" "$p50" "$p99" "$non2xx" >> "$TSV"
  printf '  %-16s %10.0f req/s  p50 %6s us  p99 %6s us  non-2xx %s\n' "$1" "$rps" "$p50" "$p99" "$non2xx" >&2
  [ -z "${3:-}" ] || cpu_row "$1" "$(awk '/requests in/{print $1}' "$raw")" "$client_ms" "$3" "$s0" "$r0" "$rc0"
}
# The Redis ceilings: redis-benchmark EVALSHA gcra.lua (admits: a huge burst), a random key of
# KEYS, client on CPU 0: 1 connection, one call at a time (what one connection's round trips
# allow: sluice serve's thread calls Redis on one connection), and 50 connections (the server's).
ALLOW=(0 1000 1 1 0 1000000000000000 0 1 0)
ceiling() {  # LABEL CONNS CALLS
  want "$1" || return 0
  local raw="$RUN/rb-$1.txt" rps p50 p99 line r0 rc0 client_ms
  r0=$(cpu_ms "$PID_REDIS")
  rc0=$(redis_reads_calls)
  client_ms=$( timeout $((DUR * 6 + 30)) taskset -c 0 redis-benchmark -h 127.0.0.1 -p "$P_REDIS" -c "$2" -P 1 -n "$3" \
                 -r "$KEYS" --csv evalsha "$SHA" 1 'rb:__rand_int__' "${ALLOW[@]}" > "$raw" 2>/dev/null
               children_cpu_ms )
  line=$(tail -n 1 "$raw" | tr -d '"')
  case "$line" in evalsha*) ;; *) echo "  $1: redis-benchmark gave no result (timeout?)" >&2; return 0 ;; esac
  rps=$(awk -F, '{print $2}' <<< "$line")
  p50=$(awk -F, '{printf "%.0f", $5 * 1000}' <<< "$line")
  p99=$(awk -F, '{printf "%.0f", $7 * 1000}' <<< "$line")
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$rps" "$p50" "$p99" 0 >> "$TSV"
  printf '  %-16s %10.0f req/s  p50 %6s us  p99 %6s us\n' "$1" "$rps" "$p50" "$p99" >&2
  cpu_row "$1" "$3" "$client_ms" - 0 "$r0" "$rc0"
}
echo "http.sh: wrk -t1 -c$CONNS -d${DUR}s, $KEYS keys, $ROUNDS interleaved rounds" >&2
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$ROUNDS"); do
  echo "round $r" >&2
  run nginx-return "http://127.0.0.1:$P_NGX/" "$PID_NGX_WORKER"
  run sluice "http://127.0.0.1:$P_SLUICE/v1/authorize" "$PID_SLUICE"
  run authreq-stub "http://127.0.0.1:$P_AUTH_STUB/protected"
  run authreq-sluice "http://127.0.0.1:$P_AUTH_SLUICE/protected"
  ceiling redis-evalsha-c1 1 $((DUR * 8000))
  ceiling redis-evalsha-c50 50 $((DUR * 40000))
  run sluice-redis "http://127.0.0.1:$P_SLUICE_REDIS/v1/authorize" "$PID_SR"
  run sluice-redis-2t "http://127.0.0.1:$P_SLUICE_REDIS2/v1/authorize" "$PID_SR2"
  run sluice-rediss "http://127.0.0.1:$P_SLUICE_REDISS/v1/authorize" "$PID_SRS"
  run nginx-lua-redis "http://127.0.0.1:$P_NGX_LUA/check" "$PID_NGX_LUA_WORKER"
  run sluice-redis-b2 "http://127.0.0.1:$P_SR_B2/v1/authorize" "$PID_SR_B2"
  run sluice-redis-module "http://127.0.0.1:$P_SR_MOD/v1/authorize" "$PID_SR_MOD"
  run sluice-redis-module-b2 "http://127.0.0.1:$P_SR_MOD_B2/v1/authorize" "$PID_SR_MOD_B2"
  run sluice-redis-b0 "http://127.0.0.1:$P_SR_B0/v1/authorize" "$PID_SR_B0"
  run sluice-rediss-b0 "http://127.0.0.1:$P_SRS_B0/v1/authorize" "$PID_SRS_B0"
done
# Every decision was real: the store holds the keys.
keys=$(curl -s "http://127.0.0.1:$P_SLUICE/metrics" | awk '$1=="sluice_keys"{print $2}')
# ... and every Redis-row request was decided by Redis, none by a failure mode.
rstore=0; rerrors=0
for p in $SR_PORTS; do
  rmetrics=$(curl -s "http://127.0.0.1:$p/metrics")
  rstore=$((rstore + $(awk '$1=="sluice_store_decisions_total{source=\"store\"}"{print $2}' <<< "$rmetrics")))
  rerrors=$((rerrors + $(awk '$1 ~ /^sluice_store_(errors|fallbacks)_total/ {s += $2} END {print s + 0}' <<< "$rmetrics")))
done
rkeys=$(rcli --scan --pattern 'bench:s:api:*' | wc -l)

echo "load average at start $LOAD0, at end $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$TSV" "$keys" "$rstore" "$rerrors" "$rkeys" "$CPU" "$ROWS" <<'PY'
import statistics, sys
want_all = sys.argv[7] == "all"  # a ROWS selection prints only its rows
rows = {}
for line in open(sys.argv[1]):
    label, rps, p50, p99, non2xx = line.split("\t")
    rows.setdefault(label, []).append((float(rps), int(p50), int(p99), int(non2xx)))
med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v),
           statistics.median(r[2] for r in v), sum(r[3] for r in v), [r[0] for r in v]) for k, v in rows.items()}
base = {"nginx-return": "nginx-return", "sluice": "nginx-return",
        "authreq-stub": "authreq-stub", "authreq-sluice": "authreq-stub",
        "redis-evalsha-c1": "redis-evalsha-c1", "redis-evalsha-c50": "redis-evalsha-c1",
        "sluice-redis": "redis-evalsha-c50", "sluice-redis-2t": "redis-evalsha-c50",
        "sluice-rediss": "sluice-redis", "nginx-lua-redis": "nginx-lua-redis",
        "sluice-redis-b2": "nginx-lua-redis", "sluice-redis-module": "nginx-lua-redis",
        "sluice-redis-module-b2": "nginx-lua-redis", "sluice-redis-b0": "nginx-lua-redis",
        "sluice-rediss-b0": "sluice-redis-b0"}
REDIS_ROWS = ["nginx-lua-redis", "sluice-redis", "sluice-redis-b2", "sluice-redis-module", "sluice-redis-module-b2",
              "sluice-redis-b0", "sluice-rediss", "sluice-rediss-b0"]
print("| row | req/s (median) | runs | p50 µs | p99 µs | non-2xx | ratio |")
print("|---|---:|---|---:|---:|---:|---:|")
for k in ["nginx-return", "sluice", "authreq-stub", "authreq-sluice", "redis-evalsha-c1", "redis-evalsha-c50",
          "sluice-redis", "sluice-redis-2t", "sluice-rediss", "nginx-lua-redis", "sluice-redis-b2",
          "sluice-redis-module", "sluice-redis-module-b2", "sluice-redis-b0", "sluice-rediss-b0"]:
    if k not in med:
        if want_all:
            print("| %s | (no result) | | | | | |" % k)
        continue
    rps, p50, p99, bad, runs = med[k]
    ratio = "%.2f× %s" % (rps / med[base[k]][0], "" if base[k] == k else base[k]) if base[k] in med else "-"
    print("| %s | %s | %s | %d | %d | %d | %s |" % (
        k, format(round(rps), ","), " / ".join("%.0fk" % (r / 1000) for r in runs), p50, p99, bad, ratio))
print()
if "sluice" in med and "nginx-return" in med:
    print("sluice / nginx return 200: %.2f× (target >= 0.85)" % (med["sluice"][0] / med["nginx-return"][0]))
if "authreq-sluice" in med and "authreq-stub" in med:
    print("auth_request -> sluice / auth_request -> 204 stub: %.2f× (target >= 0.95)" % (
        med["authreq-sluice"][0] / med["authreq-stub"][0]))
for row, what in [("sluice-redis", "1 thread"), ("sluice-redis-2t", "2 threads")]:
    if row in med and "redis-evalsha-c50" in med:
        print("sluice serve on Redis (%s) / Redis EVALSHA gcra.lua, c50: %.2f× (target >= 0.9 for 1 thread);"
              " p99 %d µs beside the ceiling's %d µs" % (what, med[row][0] / med["redis-evalsha-c50"][0], med[row][2],
                                                       med["redis-evalsha-c50"][2]))
if "sluice-rediss" in med and "sluice-redis" in med:
    print("sluice serve on Redis over TLS / plaintext (1 thread): %.2f×" % (
        med["sluice-rediss"][0] / med["sluice-redis"][0]))
# Where the Redis rows' CPU went, per request (medians over the rounds):
# on 2 cores, no row can pass 2 s of CPU per second over the sum.
cpu = {}
batch = {}
for line in open(sys.argv[6]):
    label, n, client_ms, server_ms, redis_ms, reads, calls = line.split("\t")
    if int(n) > 0:
        cpu.setdefault(label, []).append([int(v) * 1000.0 / int(n) for v in (client_ms, server_ms, redis_ms)])
    if int(reads) > 0 and int(calls) > 0:  # (the INFO calls that count them are reads too)
        batch.setdefault(label, []).append(int(calls) / int(reads))
if cpu:
    print()
    # cores busy: µs a request × requests a second, for client + server (CPU 0 when both are
    # pinned there) and for redis-server (CPU 1): near 1 on the CPU that binds a row.
    print("| row | client µs/req | server µs/req | redis-server µs/req | sum | 2 cores allow | calls per Redis read"
          " | client + server cores busy | redis cores busy |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in ["nginx-return", "sluice", "redis-evalsha-c1", "redis-evalsha-c50", "sluice-redis", "sluice-redis-2t",
              "sluice-rediss"] + [k for k in REDIS_ROWS if k not in ("sluice-redis", "sluice-rediss")]:
        if k not in cpu:
            continue
        c, s, r = (statistics.median(v[i] for v in cpu[k]) for i in range(3))
        server = k.startswith("sluice") or k in ("nginx-return", "nginx-lua-redis")
        rate = med[k][0] if k in med else 0
        print("| %s | %.1f | %s | %.1f | %.1f | %s req/s | %s | %.2f | %.2f |" % (
            k, c, "%.1f" % s if server else "-", r, c + s + r, format(round(2e6 / (c + s + r)), ","),
            "%.1f" % statistics.median(batch[k]) if k in batch else "-", (c + s) * rate / 1e6, r * rate / 1e6))
    # What the 1-thread target leaves sluice serve, beside what HTTP alone
    # costs a server here: at 0.9× the ceiling, two fully busy cores give
    # each request 2 s / (0.9 × ceiling) of CPU, less the load client's and
    # Redis's as measured in the sluice-redis row.
    if all(k in cpu for k in ("nginx-return", "sluice", "sluice-redis")) and "redis-evalsha-c50" in med:
        c, s, r = (statistics.median(v[i] for v in cpu["sluice-redis"]) for i in range(3))
        core_us = 1e6 / (0.9 * med["redis-evalsha-c50"][0])  # one core's µs per request at the target
        busy = (c + s + r) * med["sluice-redis"][0] / 1e6  # cores the three processes kept busy
        print()
        print("at 0.9× the ceiling, 2 fully busy cores would leave sluice serve on Redis %.1f µs a request, and"
              " the %.2f cores the row kept busy %.1f (it used %.1f); HTTP alone costs nginx `return 200` %.1f µs"
              " a request here and sluice serve (memory store) %.1f" % (
                  2 * core_us - c - r, busy, busy * core_us - c - r, s,
                  statistics.median(v[1] for v in cpu["nginx-return"]), statistics.median(v[1] for v in cpu["sluice"])))
# Issue 32's figures, as ../shared/peers/http-redis computes them: each row against
# nginx-lua-redis (the anchor), CPU 0's busy share (wrk + the service, both pinned there
# with CLIENT_CPU=0), and redis-server's CPU per decision against the library's row
# and against the issue's 10.9 µs (target <= 0.6x).
if "nginx-lua-redis" in med:
    print()
    print("| row | × nginx-lua-redis | client + server cores busy | redis-server µs/decision | × sluice-redis's"
          " | × 10.9 µs |")
    print("|---|---:|---:|---:|---:|---:|")
    lib = statistics.median(v[2] for v in cpu["sluice-redis"]) if "sluice-redis" in cpu else 0
    for k in REDIS_ROWS:
        if k not in med or k not in cpu:
            continue
        c, s, r = (statistics.median(v[i] for v in cpu[k]) for i in range(3))
        print("| %s | %.2f× | %.2f | %.2f | %s | %.2f× |" % (
            k, med[k][0] / med["nginx-lua-redis"][0], (c + s) * med[k][0] / 1e6, r,
            "%.2f×" % (r / lib) if lib > 0 else "-", r / 10.9))
print("keys held by sluice after the run: %s" % sys.argv[2])
print("sluice on Redis: %s decisions from Redis, %s store errors and fallbacks, %s keys in Redis" % (
    sys.argv[3], sys.argv[4], sys.argv[5]))
PY
