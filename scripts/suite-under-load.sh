#!/usr/bin/env bash
# The whole test suite, RUNS times in a row, with both cores kept busy by
# CPU hogs this script starts (and stops) itself: a test whose verdict
# depends on timing fails here first (issue #27, item 4). Set the same
# environment as CI (WATTCOUNTS_TEST_REQUIRE, WATTCOUNTS_TEST_PG_URL, ...)
# to cover everything. Prints one line per run and a closing count; exits
# 1 if any run failed.
#
#   scripts/suite-under-load.sh [RUNS]   (default 5)
set -uo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
cargo test --workspace --no-run --quiet || exit 2
hogs=()
stop_hogs() { for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done; }
trap stop_hogs EXIT
for _ in $(seq "$(nproc)"); do
  ( while :; do :; done ) &
  hogs+=("$!")
done
passed=0
failed=0
for i in $(seq "$runs"); do
  start=$(date +%s)
  log="target/suite-under-load-$i.log"
  if cargo test --workspace >"$log" 2>&1; then
    passed=$((passed + 1))
    verdict=passed
  else
    failed=$((failed + 1))
    verdict="FAILED (see $log)"
  fi
  tests=$(grep -E '^test result:' "$log" | awk '{p += $4; f += $6} END {print p " tests passed, " f " failed"}')
  echo "run $i: $verdict in $(( $(date +%s) - start )) s; $tests; load average $(cut -d' ' -f1 /proc/loadavg)"
done
echo "suite under load: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
