#!/usr/bin/env bash
# After a failed ctest run: prints the last lines of each failed test's
# output again, at the very end, where a CI log cut to its tail still shows
# why a test failed (ctest's --output-on-failure prints it mid-run, long
# before the summary). Usage: scripts/show-failed-tests.sh BUILD_DIR [LINES]
set -uo pipefail
dir=${1:?usage: scripts/show-failed-tests.sh BUILD_DIR [LINES]}
lines=${2:-60}
failed="$dir/Testing/Temporary/LastTestsFailed.log"
log="$dir/Testing/Temporary/LastTest.log"
[[ -r $failed && -r $log ]] || { echo "show-failed-tests: no ctest logs in $dir" >&2; exit 0; }
while IFS= read -r entry; do
  name=${entry#*:}
  echo "=== the last $lines lines of $name's output"
  # A test's block runs from "N/M Testing: NAME" to its "<end of output>".
  awk -v t="$name" '
    $0 ~ /^[0-9]+\/[0-9]+ Testing: / { sub(/^[0-9]+\/[0-9]+ Testing: /, ""); on = ($0 == t); next }
    on && $0 == "<end of output>" { on = 0 }
    on' "$log" | tail -n "$lines"
done < "$failed"
