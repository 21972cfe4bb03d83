#!/usr/bin/env bash
# Load and crash (issue #13): 64 concurrent submitters and readers for 60 s
# against a release `serve`, kill -9 at half time, restart, then check that
# every acknowledged submission is there, nothing is stored twice, the
# database is intact and no orphan file is left. On SQLite, and on
# PostgreSQL when a URL is given (or WATTCOUNTS_TEST_PG_URL is set).
#
#   scripts/load-and-crash.sh [SECONDS] [POSTGRES_URL]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
pg="${2:-${WATTCOUNTS_TEST_PG_URL:-}}"
cargo build --release --quiet --bins --example load_crash
target/release/examples/load_crash --seconds "$seconds"
if [ -n "$pg" ]; then
  target/release/examples/load_crash --seconds "$seconds" --database-url "$pg"
fi
