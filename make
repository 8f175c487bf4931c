#!/usr/bin/env bash
# `./make TARGET...` is `make TARGET...` for a machine that may not have make
# yet, such as a bare Debian 12: when make is missing it first installs what
# scripts/setup.sh lists (make among it), then runs the real make, in this
# directory, with the same arguments. Where make is installed the two are the
# same. (The Gradle wrapper's idea: the repository brings its own first step.)
set -euo pipefail
cd "$(dirname "$0")"
self=$(readlink -f "$0")

# The first make on PATH that is not this script (PATH may hold ".").
real_make() {
  local m
  for m in $(type -ap make); do
    if [ "$(readlink -f "$m")" != "$self" ]; then
      echo "$m"
      return 0
    fi
  done
  return 1
}

if ! real=$(real_make); then
  echo "./make: make is not installed; installing it and the rest of scripts/setup.sh's list" >&2
  scripts/setup.sh
  real=$(real_make) || { echo "./make: make is still missing after scripts/setup.sh" >&2; exit 1; }
fi
exec "$real" "$@"
