#!/usr/bin/env bash
# ../shared/peers/http-redis/run.sh, its code unchanged, from a copy: ../shared is
# read-only for this project, and the harness writes beside itself (`npm ci`
# when its node_modules is missing, which it checks whatever ROWS says).
#
#   MODULE=1: its redis-server loads sluice's Redis module (BUILD_DIR/sluice_module.so):
#             a `redis-server` first in PATH adds `--loadmodule` and execs the real one
#             (same PID: the harness stops it and reads its CPU as before). Its
#             sluice-redis row (store URL without `module=`, so `auto`) then decides
#             by the module; its other rows call Redis as before.
#   Without node_modules and without node-rlflex-http in ROWS, the copy gets two
#   empty stand-ins for the packages, so that the harness's check passes without
#   `npm ci` (its version line then prints "?"); that row needs the real packages.
#
# usage: bench/http/harness.sh BUILD_DIR      (the harness's env: DUR, ROUNDS, ROWS, ...)
#   env: MODULE=0|1, HTTP_REDIS=<the harness's folder> (default ../shared/peers/http-redis)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(cd "${1:?usage: harness.sh BUILD_DIR}" && pwd)
HTTP_REDIS=$(cd "${HTTP_REDIS:-$ROOT/../shared/peers/http-redis}" && pwd)
[ -x "$HTTP_REDIS/run.sh" ] || { echo "harness.sh: no run.sh in $HTTP_REDIS (set HTTP_REDIS)" >&2; exit 1; }
[ -x "$BUILD/sluice" ] || { echo "harness.sh: $BUILD/sluice not built" >&2; exit 1; }
COPY=$(mktemp -d /tmp/sluice-harness.XXXXXX)
trap 'rm -rf "$COPY"' EXIT
mkdir -p "$COPY/peers" "$COPY/bin"
cp -r "$HTTP_REDIS" "$COPY/peers/http-redis"
cp -r "$HTTP_REDIS/../lib" "$COPY/peers/lib"
chmod -R u+w "$COPY"
export GCRA_LUA=${GCRA_LUA:-$HTTP_REDIS/../../research/redis-lab/gcra.lua}
if [ ! -d "$COPY/peers/http-redis/node_modules" ] && [[ ",${ROWS:-all}," != *",node-rlflex-http,"* && ${ROWS:-all} != all ]]; then
  for p in rate-limiter-flexible ioredis; do
    mkdir -p "$COPY/peers/http-redis/node_modules/$p"
    echo '{"version": "? (not installed: the node row is not run)"}' > "$COPY/peers/http-redis/node_modules/$p/package.json"
  done
fi
if [ "${MODULE:-0}" = 1 ]; then
  SO=$BUILD/sluice_module.so
  [ -f "$SO" ] || { echo "harness.sh: $SO not built (--target sluice_module)" >&2; exit 1; }
  REAL=$(command -v redis-server) || { echo "harness.sh: redis-server is missing" >&2; exit 1; }
  printf '#!/bin/sh\nexec %q "$@" --loadmodule %q\n' "$REAL" "$SO" > "$COPY/bin/redis-server"
  chmod +x "$COPY/bin/redis-server"
  export PATH=$COPY/bin:$PATH
fi
"$COPY/peers/http-redis/run.sh" "$BUILD/sluice"
