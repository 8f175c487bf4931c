#!/usr/bin/env bash
# Builds sluice's benchmarks (Release, build-bench/), runs them with
# repetitions and prints peers-compatible RESULT / IR lines
# (../shared/peers/README.md beside the checkout, "Output contract"), then a table.
#
#   bench/run.sh                 sluice alone: decide_bench (+ callgrind IR lines)
#   bench/run.sh --with-peers    then cpp-floor and go-xtime in the same invocation,
#                                and one combined table with the x-CAS-floor ratio
#   bench/run.sh --keyed         the keyed store instead (keyed_bench: 1M keys first
#                                touch and steady state, its floor, threads, 10M purge,
#                                churn: new keys with 1M states held beside an empty store;
#                                store_bench: the same 1M keys through store& beside the
#                                direct calls, interleaved, and the ratios);
#                                with --with-peers, beside go-xtime, java-guava and
#                                node-rlflex-memory (their keyed-1M rows)
#   bench/run.sh --no-build      use the binaries already in build-bench/
#   bench/run.sh --md            print the table as markdown
#
# Env: RUNS (repetitions, default 5), MIN_TIME (seconds per repetition,
# default 0.2), NO_CALLGRIND=1 (skip the IR lines), FILTER (regex over
# scenario names), BUILD_DIR (default <repo>/build-bench), PEERS_DIR
# (default ../shared/peers beside the checkout). Raw output: $BUILD_DIR/bench-results/<stamp>/.
#
# Each RESULT's ns/op is the median over RUNS repetitions of Google
# Benchmark's real time per iteration (one decision); min and max are over
# the same repetitions. IR = callgrind instructions per decision:
# (Ir(200k) − Ir(100k)) / 100k of the same loop (decide_ir), loop included
# (see calib-always-allow-virtualtime for the loop alone).
#
# trace_digest (a digest of every decision on random requests, to compare two
# builds of a step function) is built here too but not run: see the header of
# bench/trace_digest.cpp.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build-bench}
peers=${PEERS_DIR:-$(dirname "$root")/shared/peers}
RUNS=${RUNS:-5}
MIN_TIME=${MIN_TIME:-0.2}
FILTER=${FILTER:-}
with_peers=0 do_build=1 fmt=text keyed=0

while [ $# -gt 0 ]; do
  case $1 in
    --with-peers) with_peers=1 ;;
    --keyed) keyed=1 ;;
    --no-build) do_build=0 ;;
    --md) fmt=md ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "# $*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }

# ---- build -------------------------------------------------------------------
bench_targets=(decide_bench decide_ir)
[ "$keyed" = 1 ] && bench_targets=(keyed_bench store_bench)
if [ "$do_build" = 1 ]; then
  say "configure + build (Release) in $build"
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_BUILD_BENCH=ON \
    -DSLUICE_BUILD_TESTS=OFF >"$build/bench-configure.log" 2>&1 ||
    { cat "$build/bench-configure.log" >&2; say "ERROR: cmake configure failed"; exit 1; }
  if ! cmake --build "$build" -j2 >"$build/bench-build.log" 2>&1; then
    # Others edit the tree at the same time: a broken tool must not stop the benchmarks.
    say "full build failed (see $build/bench-build.log); building the bench targets only"
    cmake --build "$build" -j2 --target "${bench_targets[@]}" >>"$build/bench-build.log" 2>&1 ||
      { tail -30 "$build/bench-build.log" >&2; say "ERROR: bench targets do not build"; exit 1; }
  fi
fi
for t in "${bench_targets[@]}"; do
  [ -x "$build/bench/$t" ] || { say "ERROR: $build/bench/$t missing (build first)"; exit 1; }
done

stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=$build/bench-results/$stamp
mkdir -p "$out"
tsv=$out/results.tsv
: >"$tsv"
{
  echo "date_utc: $stamp"
  echo "git: $(git -C "$root" rev-parse --short HEAD 2>/dev/null) (working tree: $(git -C "$root" status --porcelain 2>/dev/null | wc -l) changed paths)"
  echo "cpu: $(lscpu | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2; exit}'), $(nproc) CPUs"
  echo "compiler: $(awk -F= '/^CMAKE_CXX_COMPILER:/ {print $2}' "$build/CMakeCache.txt" 2>/dev/null) $(c++ --version 2>/dev/null | head -1)"
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "RUNS=$RUNS MIN_TIME=$MIN_TIME"
} >"$out/machine.txt"
sed 's/^/# /' "$out/machine.txt" >&2

# ---- helpers -------------------------------------------------------------------
# median / min / max / count of numbers on stdin, as lib/common.sh's stats().
stats() {
  sort -g | awk '{a[NR]=$1} END {
    if (NR == 0) { print "nan nan nan 0"; exit }
    m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2
    printf "%.4f %.4f %.4f %d\n", m, a[1], a[NR], NR }'
}

# What each scenario measures (the note column).
note_for() {
  local n
  case $1 in
    1key-allow-virtualtime) n="GCRA 1e6/s burst 1000, decide(now += 1 us): all admitted" ;;
    1key-deny-virtualtime) n="GCRA 1000/h burst 1000, drained, decide(now += 1 ns): all denied" ;;
    1key-allow-realtime) n="GCRA 1/ns burst 1e9, decide(sluice::steady_clock::now()): all admitted" ;;
    1key-deny-realtime) n="GCRA 1000/h burst 1000, drained, decide(sluice::steady_clock::now()): all denied" ;;
    token-bucket-allow-virtualtime) n="token bucket 1e6/s burst 1000, now += 1 us" ;;
    token-bucket-deny-virtualtime) n="token bucket 1000/h burst 1000, drained, now += 1 ns" ;;
    token-bucket-allow-realtime) n="token bucket 1/ns burst 1e9, steady_clock::now()" ;;
    token-bucket-deny-realtime) n="token bucket 1000/h burst 1000, drained, steady_clock::now()" ;;
    fixed-window-allow-virtualtime) n="fixed window 1e6/s, now += 1 us" ;;
    fixed-window-deny-virtualtime) n="fixed window 1000/h, full, now += 1 ns" ;;
    sliding-log-allow-virtualtime) n="sliding log 1000/s, now += 1 ms (~1000 entries; one dropped, one appended per call)" ;;
    sliding-log-deny-virtualtime) n="sliding log 1000/h, full (1000 entries), now += 1 ns" ;;
    sliding-counter-allow-virtualtime) n="sliding counter 2e6/s, now += 1 us" ;;
    sliding-counter-deny-virtualtime) n="sliding counter 1000/h, full, now += 1 ns" ;;
    sliding-buckets-allow-virtualtime) n="sliding buckets 1000/s in 10, now += 1 ms" ;;
    sliding-buckets-deny-virtualtime) n="sliding buckets 1000/h in 10, full, now += 1 ns (retry walks the buckets)" ;;
    leaky-queue-allow-virtualtime) n="leaky queue 1e6/s queue 1000, now += 1 us" ;;
    leaky-queue-deny-virtualtime) n="leaky queue 1000/h queue 1000, full, now += 1 ns" ;;
    quota-allow-virtualtime) n="quota 2^62, cost 1" ;;
    quota-deny-virtualtime) n="quota 1000, spent" ;;
    any-token-bucket-allow-virtualtime) n="any_policy (std::visit) holding the token bucket of token-bucket-allow" ;;
    any-token-bucket-deny-virtualtime) n="any_policy (std::visit) holding the token bucket of token-bucket-deny" ;;
    any-gcra-allow-virtualtime) n="any_policy (std::visit) holding the GCRA of 1key-allow" ;;
    any-gcra-deny-virtualtime) n="any_policy (std::visit) holding the GCRA of 1key-deny" ;;
    all3-allow-virtualtime) n="all(gcra 1e6/s burst 1000, fixed-window 1e6/s, sliding-counter 2e6/s), now += 1 us" ;;
    all3-deny-virtualtime) n="all(gcra, fixed-window, sliding-counter) at 1000/h, drained, now += 1 ns" ;;
    nest32-allow-virtualtime) n="all(...) nested 32 deep around GCRA 1e6/s burst 1000, now += 1 us" ;;
    nest32-deny-virtualtime) n="all(...) nested 32 deep around GCRA 1000/h burst 1000, drained, now += 1 ns" ;;
    calib-steady-clock-now) n="sluice::steady_clock::now() alone" ;;
    calib-always-allow-virtualtime) n="the loop and the decision's stores alone (decide(always_allow))" ;;
    *) n="" ;;
  esac
  echo "$n"
}

# gbench BINARY: runs it with repetitions, appends one RESULT line per scenario.
gbench() {
  local bin=$1 csv sc rows label m lo hi n s
  say "running $(basename "$bin") (RUNS=$RUNS, min_time=${MIN_TIME}s per repetition)"
  csv=$("$bin" --benchmark_repetitions="$RUNS" --benchmark_min_time="$MIN_TIME" --benchmark_format=csv \
          ${FILTER:+--benchmark_filter="$FILTER"} 2>"$out/$(basename "$bin").err")
  echo "$csv" >"$out/$(basename "$bin").csv"
  for sc in $(echo "$csv" | awk -F, 'NR > 1 { n = $1; gsub(/"/, "", n); if (n ~ /_(mean|median|stddev|cv)$/) next; print n }' |
                awk '!seen[$0]++'); do
    rows=$(echo "$csv" | awk -F, -v s="$sc" 'NR > 1 { n = $1; gsub(/"/, "", n); if (n == s) print }')
    label=$(echo "$rows" | tail -n 1 | awk -F, '{ l = $8; gsub(/"/, "", l); print l }')
    s=$(echo "$rows" | awk -F, '{ print $3 }' | stats)
    read -r m lo hi n <<<"$s"
    awk -v p=sluice -v sc="$sc" -v m="$m" -v lo="$lo" -v hi="$hi" -v n="$n" \
        -v note="$(note_for "$sc"); Google Benchmark real time per decision${label:+; $label in last repetition}" \
      'BEGIN { printf "RESULT\t%s\t%s\t%.2f\t%.0f\t-\t%d\t%.2f\t%.2f\t%s\n", p, sc, m, (m > 0 ? 1e9 / m : 0), n, lo, hi, note }' |
      tee -a "$tsv"
  done
}

# Instructions per decision with callgrind: (Ir(2N) − Ir(N)) / N.
ir_lines() {
  local sc n1=100000 n2=200000 a b v
  have valgrind || { say "valgrind not installed: no IR lines"; return; }
  say "callgrind instruction counts (decide_ir)"
  for sc in $("$build/bench/decide_ir" --list); do
    [ -n "$FILTER" ] && ! [[ $sc =~ $FILTER ]] && continue
    a=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null '--toggle-collect=*run_loop*' \
          "$build/bench/decide_ir" "$sc" $n1 2>&1 >/dev/null | awk '/Collected :/ {print $NF}')
    b=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null '--toggle-collect=*run_loop*' \
          "$build/bench/decide_ir" "$sc" $n2 2>&1 >/dev/null | awk '/Collected :/ {print $NF}')
    v=$(awk -v a="$a" -v b="$b" -v d=$((n2 - n1)) 'BEGIN { if (a == "" || b == "") print "nan"; else printf "%.1f", (b - a) / d }')
    printf 'IR\tsluice\t%s\t%s\t%s\n' "$sc" "$v" \
      "callgrind Ir per decision, loop and decision stores included (calib-always-allow-virtualtime: the loop alone)" |
      tee -a "$tsv"
  done
}

table() {  # table FILE [CAS_NS]
  if [ -f "$peers/lib/table.awk" ]; then
    awk -v fmt="$fmt" -v cas_ns="${2:-${CAS_NS:-}}" -f "$peers/lib/table.awk" "$1"
  else
    awk -F'\t' '$1 == "RESULT" { printf "%-16s %-38s %10s ns  %s runs  %s-%s\n", $2, $3, $4, $7, $8, $9 }' "$1"
  fi
}

# ---- sluice ----------------------------------------------------------------------
if [ "$keyed" = 1 ]; then
  # keyed_bench prints its own RESULT lines (medians over RUNS repetitions).
  say "running keyed_bench (RUNS=$RUNS)"
  RUNS=$RUNS "$build/bench/keyed_bench" ${FILTER:+--benchmark_filter="$FILTER"} >"$out/keyed_bench.log" \
    2>"$out/keyed_bench.err" || { cat "$out/keyed_bench.err" >&2; say "ERROR: keyed_bench failed"; exit 1; }
  grep -E $'^RESULT\t' "$out/keyed_bench.log" | tee -a "$tsv"
  say "running store_bench (RUNS=$RUNS)"
  RUNS=$RUNS "$build/bench/store_bench" >"$out/store_bench.log" 2>"$out/store_bench.err" ||
    { cat "$out/store_bench.err" >&2; say "ERROR: store_bench failed"; exit 1; }
  grep -E $'^RESULT\t' "$out/store_bench.log" | tee -a "$tsv"
  grep -E '^# store/direct' "$out/store_bench.log" >&2
  peer_steps=go-xtime,java-guava,node-rlflex-memory
else
  gbench "$build/bench/decide_bench"
  [ -z "${NO_CALLGRIND:-}" ] && ir_lines
  peer_steps=cpp-floor,go-xtime
fi

# ---- peers -----------------------------------------------------------------------
if [ "$with_peers" = 1 ]; then
  [ -x "$peers/run-all.sh" ] || { say "ERROR: --with-peers: no peers in $peers (set PEERS_DIR)"; exit 2; }
  if ! have go; then say "go is not installed: the go-xtime step will SKIP (run $peers/setup.sh once)"; fi
  # run-all.sh runs from a writable copy when its folder is read-only; its -w test
  # passes for root, so make the copy here and leave the shared folder untouched.
  work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-peers.XXXXXX")
  tar -C "$peers" --exclude=./node_modules --exclude='*/node_modules' --exclude=./results --exclude='*/build' -cf - . |
    tar -C "$work" -xf - && chmod -R u+w "$work"
  say "peers: $peers/run-all.sh --no-setup --only $peer_steps (running from the copy $work)"
  RUNS=$RUNS "$work/run-all.sh" --no-setup --only "$peer_steps" >"$out/peers.log" 2>"$out/peers.err"
  rc=$?
  sed 's/^/# /' "$out/peers.err" >&2
  peer_tsv=$(ls -1d "$work"/results/*/results.tsv 2>/dev/null | tail -n 1)
  if [ $rc -ne 0 ] || [ -z "$peer_tsv" ]; then
    say "ERROR: run-all.sh failed (rc=$rc); the table below is sluice alone"
  else
    cp -r "$(dirname "$peer_tsv")" "$out/peers-results"
    grep -E $'^(RESULT|IR)\t' "$peer_tsv"
    cat "$tsv" "$peer_tsv" >"$out/combined.tsv"
    tsv=$out/combined.tsv
  fi
  rm -rf "$work"
fi

echo
table "$tsv"
echo
echo "raw output: $out/"
