#!/usr/bin/env bash
# Mutation testing of the rules that decide what is published (not in CI:
# about 100 minutes on 2 cores). Needs `cargo install cargo-mutants`.
# Mutates wattcounts-rules and wattcounts-analytics in place (a clean tree
# is restored after each mutant; .cargo/mutants.toml excludes the functions
# whose every mutant is equivalent, each with why) and runs their own tests, which build no
# runtime, SQL or polars; analytics' mutants also face wattcounts-synth's
# tests, where the estimator is judged on the other physics.
#   scripts/mutants.sh            the files below
#   scripts/mutants.sh -f FILE    one file (extra arguments go to cargo mutants)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! git diff --quiet -- crates/rules crates/analytics; then
  echo "crates/rules or crates/analytics has uncommitted changes: commit or stash them first (the run mutates them in place)" >&2
  exit 2
fi
files=(
  crates/rules/src/derived.rs
  crates/rules/src/stats.rs
  crates/rules/src/signing.rs
  crates/rules/src/arrival_schedule.rs
  'crates/rules/src/checks/*.rs'
  crates/rules/src/bundle/unpack.rs
  crates/rules/src/bundle/contents.rs
  crates/rules/src/bundle/manifest.rs
  crates/rules/src/bundle/harness.rs
  crates/rules/src/bundle/strict_json.rs
  crates/rules/src/domain.rs
  crates/rules/src/peer/read.rs
  crates/rules/src/protocol.rs
  crates/rules/src/handles.rs
  'crates/rules/src/tlog/*.rs'
  crates/analytics/src/units.rs
  crates/analytics/src/verdict.rs
  crates/analytics/src/deadline.rs
  crates/analytics/src/leaderboard.rs
  crates/analytics/src/compare.rs
  crates/analytics/src/insights.rs
  crates/analytics/src/estimator/answer.rs
  crates/analytics/src/estimator/trained.rs
)
args=()
if [ $# -eq 0 ]; then
  for f in "${files[@]}"; do args+=(-f "$f"); done
fi
exec cargo mutants --in-place -p wattcounts-rules -p wattcounts-analytics \
  --test-package wattcounts-rules --test-package wattcounts-analytics --test-package wattcounts-synth \
  --timeout 60 -o target/mutants -e crates/rules/src/checks/test_support.rs "${args[@]}" "$@"
