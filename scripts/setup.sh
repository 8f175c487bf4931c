#!/usr/bin/env bash
# Installs the Debian packages sluice needs to build, test, lint, fuzz and
# benchmark, and nothing else, from a bare Debian 12 (debootstrap's minbase)
# up. Idempotent: does nothing when all are present; otherwise prints what it
# installs, one line for each package apt sets up (dependencies included).
#   scripts/setup.sh            build, test and lint dependencies
#   scripts/setup.sh --fuzz     also clang and its libFuzzer runtime (make fuzz)
#   scripts/setup.sh --bench    also what the benchmarks and peers need
set -euo pipefail

# git: `make lint` checks the tracked files. The Redis store builds on
# hiredis, and its asynchronous client on Boost.Asio with OpenSSL (rediss://;
# the TLS tests make their certificates with openssl); the service on Boost,
# toml++, nlohmann-json and yaml-cpp (envoyproxy/ratelimit configs: node marks
# give every error its line and column), its Envoy front end on grpc++ and
# protobuf; the tests start their own redis-server (also as sentinels) and
# nginx (on free ports) and reach them with curl, python3's http.client and grpcio;
# haproxy is the proxy that appends X-Forwarded-For and Forwarded lines (the
# forwarded-header tests run it in front of sluice, as nginx replaces them).
# faketime (libfaketime) runs a sluice serve with its clock shifted, so the
# clock tests (tests/serve/test_serve_clock.py) see a fleet whose clocks disagree.
# libclang-rt-14-dev (libFuzzer) is only a recommend of clang, so
# --no-install-recommends needs it named.
packages=(make cmake ninja-build g++ pkg-config git
          libgtest-dev libgmock-dev libbenchmark-dev
          libfmt-dev libcli11-dev libabsl-dev
          clang-format clang-tidy
          libhiredis-dev libboost-dev libssl-dev openssl libtomlplusplus-dev nlohmann-json3-dev libyaml-cpp-dev
          redis-server redis-tools nginx-light haproxy curl python3
          libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
          python3-grpcio python3-protobuf faketime)
for arg in "$@"; do
  case "$arg" in
    --fuzz) packages+=(clang libclang-rt-14-dev) ;;
    --bench) packages+=(hyperfine valgrind linux-perf wrk nghttp2-client) ;;
    *) echo "usage: scripts/setup.sh [--fuzz] [--bench]" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: not root; run: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
apt-get update -qq
# apt's own "Setting up PACKAGE (VERSION) ..." lines, one a package; errors
# go to stderr unfiltered, and apt's exit status is the script's.
apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}" |
  { grep --line-buffered '^Setting up ' || true; } >&2
