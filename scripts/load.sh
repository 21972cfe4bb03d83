#!/usr/bin/env bash
# Load figures of the read path (issue #5): release build, `serve --demo` on
# a fresh data dir (the paper-scale synthetic demo, ~25 s to load), then wrk
# with 32 connections for 10 s against the leaderboard page and its JSON
# twin, plain and gzip. Prints req/s, p50 and p99 per run.
#
#   scripts/load.sh [PORT]        (needs wrk: apt-get install wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
port="${1:-18089}"
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 2; }
cargo build --release --quiet
data=$(mktemp -d)
log="$data/serve.log"
target/release/wattcounts serve --demo --data-dir "$data" --bind "127.0.0.1:$port" 2>"$log" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$data"' EXIT
echo "loading the demo into $data ..."
for _ in $(seq 1 300); do
  grep -q "^demo: .* bundles" "$log" && break
  kill -0 $server 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 1
done
grep "^demo: " "$log" | tail -1
base="http://127.0.0.1:$port"
for path in /leaderboard /api/v1/leaderboard; do
  # One request first, so the runs measure the cached answer.
  curl -sf -o /dev/null "$base$path"
  for enc in "" gzip; do
    args=(-t2 -c32 -d10s --latency)
    [ -n "$enc" ] && args+=(-H "Accept-Encoding: $enc")
    out=$(wrk "${args[@]}" "$base$path")
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    p50=$(awk '$1=="50%" {print $2}' <<<"$out")
    p99=$(awk '$1=="99%" {print $2}' <<<"$out")
    errors=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
    sockets=$(awk '/Socket errors/' <<<"$out")
    printf '%-24s %-5s %10s req/s  p50 %-8s p99 %-8s%s%s\n' "$path" "${enc:-plain}" "$rps" "$p50" "$p99" \
      "${errors:+  non-2xx: $errors}" "${sockets:+  $sockets}"
    # A figure over failed answers measures nothing: say so in the exit code.
    if [ -n "$errors" ] || [ -n "$sockets" ] || [ -z "$rps" ]; then failed=1; fi
  done
done
exit "${failed:-0}"
