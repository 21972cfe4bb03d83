#!/usr/bin/env bash
# Mutation testing of the rules that decide what is published (not in CI:
# about 20 minutes on 2 cores). Needs `cargo install cargo-mutants`.
# Mutates wattcounts-core in place (a clean tree is restored after each
# mutant) and runs that crate's own tests, which build no runtime, SQL or
# polars: a mutant is "caught" when a core unit test fails.
#   scripts/mutants.sh            the files below
#   scripts/mutants.sh -f FILE    one file (extra arguments go to cargo mutants)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! git diff --quiet -- crates/core; then
  echo "crates/core has uncommitted changes: commit or stash them first (the run mutates it in place)" >&2
  exit 2
fi
files=(
  crates/core/src/derived.rs
  crates/core/src/units.rs
  crates/core/src/verdict.rs
  crates/core/src/deadline.rs
  crates/core/src/signing.rs
  crates/core/src/bundle/unpack.rs
  crates/core/src/bundle/manifest.rs
  'crates/core/src/tlog/*.rs'
)
args=()
if [ $# -eq 0 ]; then
  for f in "${files[@]}"; do args+=(-f "$f"); done
fi
exec cargo mutants --in-place -p wattcounts-core --timeout 60 -o target/mutants "${args[@]}" "$@"
