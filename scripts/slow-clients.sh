#!/usr/bin/env bash
# Slow clients and big uploads (issue #13): 300 connections holding half a
# request line (all closed within the header timeout, /healthz p99 within 2x
# of idle), then the server's peak memory under 4 parallel uploads of
# ~250 MB each.
#
#   scripts/slow-clients.sh [CONNECTIONS] [PARALLEL_UPLOADS]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins --example slow_clients --example upload_memory
target/release/examples/slow_clients --connections "${1:-300}"
target/release/examples/upload_memory --parallel "${2:-4}"
