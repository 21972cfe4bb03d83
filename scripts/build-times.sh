#!/usr/bin/env bash
# Incremental debug rebuild of the `wattcounts` binary after one edit of
# each kind a maintainer makes: a template, a handler, a check, an SQL
# statement. Each edit appends a line (an HTML or Rust comment with a new
# value, so the file's content really changes) to one file, rebuilds,
# times it, and restores the file with git. Run on a warm tree (after a
# `cargo build`); needs a clean working copy of those four files.
#   scripts/build-times.sh            three rounds, prints each and the median
set -euo pipefail
cd "$(dirname "$0")/.."
files=(
  "template:templates/leaderboard.html:<!-- probe %s -->"
  "handler:crates/web/src/pages/leaderboard.rs:// probe %s"
  "check:crates/rules/src/checks/physics.rs:// probe %s"
  "sql:crates/store/src/read_model.rs:// probe %s"
)
for f in "${files[@]}"; do
  path=$(cut -d: -f2 <<<"$f")
  git diff --quiet -- "$path" || { echo "$path has uncommitted changes" >&2; exit 2; }
done
cargo build --quiet -p wattcounts
for f in "${files[@]}"; do
  kind=${f%%:*}; rest=${f#*:}; path=${rest%%:*}; line=${rest#*:}
  times=()
  for round in 1 2 3; do
    printf "\n$line\n" "$(date +%s%N)" >>"$path"
    start=$(date +%s.%N)
    cargo build --quiet -p wattcounts
    end=$(date +%s.%N)
    git checkout --quiet -- "$path"
    times+=("$(echo "$end - $start" | bc)")
  done
  cargo build --quiet -p wattcounts
  sorted=$(printf '%s\n' "${times[@]}" | sort -n)
  printf '%-9s %s: %s s (median %s s)\n' "$kind" "$path" "$(tr '\n' ' ' <<<"$sorted")" "$(sed -n 2p <<<"$sorted")"
done
