# Sourced by bench/redis.sh, bench/redis_instr.sh and bench/redis-cluster.sh:
# their flags, their build, and a private redis-server on a free 127.0.0.1
# port (REDIS_PORT if set), without persistence, stopped by its PID when the
# script exits.
#
#   parse_flags "$@"           --no-build (sets do_build=0), --help, or nothing
#   say TEXT...                a "# " line on stderr
#   need TOOL...               fails, naming the first TOOL not installed
#   build_bench TARGET         unless --no-build: configures $build (Release,
#                              benchmarks on, tests off) and builds TARGET;
#                              then sets bench_bin to it

#   start_redis [WRAPPER...]   runs WRAPPER redis-server ... (e.g. taskset -c 1,
#                              or valgrind --tool=callgrind ...); sets port,
#                              pid and dir, and waits until it answers; the
#                              array redis_args, when set, is added to the
#                              server's arguments (--loadmodule ...)
#   cli ARGS...                redis-cli on it
# A script that defines on_exit has it called after the server stops.

parse_flags() {
  do_build=1
  case "${1:-}" in
    --no-build) do_build=0 ;;
    "") ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
}

say() { echo "# $*" >&2; }

need() {
  for t in "$@"; do
    command -v "$t" >/dev/null || { say "ERROR: $t not installed (scripts/setup.sh --bench)"; exit 1; }
  done
}

build_bench() {
  if [ "$do_build" = 1 ]; then
    say "configure + build $1 (Release) in $build"
    mkdir -p "$build"
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_BUILD_BENCH=ON \
      -DSLUICE_BUILD_TESTS=OFF >"$build/$1-configure.log" 2>&1 || { cat "$build/$1-configure.log" >&2; exit 1; }
    cmake --build "$build" -j2 --target "$1" >"$build/$1-build.log" 2>&1 || { tail -30 "$build/$1-build.log" >&2; exit 1; }
  fi
  bench_bin=$build/bench/$1
  [ -x "$bench_bin" ] || { say "ERROR: $bench_bin missing"; exit 1; }
}

start_redis() {
  port=${REDIS_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
  dir=$(mktemp -d)
  "$@" redis-server --port "$port" --bind 127.0.0.1 --protected-mode yes --save "" --appendonly no \
    --daemonize no --dir "$dir" --logfile "$dir/redis.log" ${redis_args[@]+"${redis_args[@]}"} >"$dir/wrapper.log" 2>&1 &
  pid=$!
  trap stop_redis EXIT INT TERM
  for _ in $(seq 1 300); do cli ping >/dev/null 2>&1 && break; sleep 0.1; done
  cli ping >/dev/null || { echo "# ERROR: redis-server did not start" >&2; cat "$dir/redis.log" >&2; exit 1; }
}

# stop_server PID DIR: SIGTERM, up to 10 s, then SIGKILL, by its PID; its folder removed.
stop_server() {
  kill "$1" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$1" 2>/dev/null || true
  rm -rf "$2"
}

stop_redis() {
  stop_server "$pid" "$dir"
  if declare -F on_exit >/dev/null; then on_exit; fi
}

cli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }
