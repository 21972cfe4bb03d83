#!/usr/bin/env bash
# The arrows Cargo cannot refuse on its own: what each crate's dependency
# closure must not hold (docs/architecture.md). Exits 1 naming the crate
# and what crept in; prints each closure's size otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

# crate : forbidden in its normal closure (space-separated)
rules=(
  "wattcounts-rules:tokio axum hyper sqlx polars object_store askama reqwest rayon forust-ml"
  "wattcounts-analytics:tokio axum hyper sqlx polars object_store askama reqwest"
  "wattcounts-synth:tokio axum hyper sqlx polars object_store askama reqwest"
  "wattcounts-store:axum askama polars"
  "wattcounts-snapshot:axum askama"
  "wattcounts-service:axum askama"
  "wattcounts-submit:polars sqlx axum object_store askama rayon forust-ml wattcounts-analytics wattcounts-synth"
)
# crate : forbidden as a direct dependency
direct=(
  "wattcounts-web:wattcounts-store wattcounts-snapshot wattcounts-synth sqlx"
  "wattcounts-store:wattcounts-synth"
  "wattcounts-service:wattcounts-synth"
)

failed=0
closure() { cargo tree -q -p "$1" -e normal --prefix none | sed 's/ (\*)$//' | awk '{print $1}' | sort -u; }
for rule in "${rules[@]}"; do
  crate=${rule%%:*}
  names=$(closure "$crate")
  for bad in ${rule#*:}; do
    if grep -qx "$bad" <<<"$names"; then
      echo "$crate: $bad is in its closure ($(cargo tree -q -p "$crate" -e normal -i "$bad" | tail -n +2 | head -n 3 | tr -s ' ' | tr '\n' ' '))"
      failed=1
    fi
  done
  echo "$crate: $(wc -l <<<"$names") crates in its closure; may not hold: ${rule#*:}"
done
for rule in "${direct[@]}"; do
  crate=${rule%%:*}
  names=$(cargo tree -q -p "$crate" -e normal --depth 1 --prefix none | tail -n +2 | awk '{print $1}' | sort -u)
  for bad in ${rule#*:}; do
    if grep -qx "$bad" <<<"$names"; then
      echo "$crate: depends on $bad directly"
      failed=1
    fi
  done
  echo "$crate: may not depend directly on: ${rule#*:}"
done
# Names the code may not write: the web reaches the store only through the
# service, and the store's error type never leaves the service (it answers
# with wattcounts_service::ServiceError).
for pattern in "crates/web/src:wattcounts_store" "crates/web/src:wattcounts_snapshot" "crates/web/src:StoreError" "src:StoreError"; do
  dir=${pattern%%:*}
  name=${pattern#*:}
  if hits=$(grep -rn --include='*.rs' -w "$name" "$dir"); then
    echo "$dir names $name:"
    echo "$hits" | head -n 5
    failed=1
  fi
  echo "$dir: does not name $name"
done
# The service re-exports no type of the store's or of the snapshot
# crate's: the rows it hands out are defined with the rules and analytics,
# stored files leave as its own StoredFile.
if grep -rnE 'pub use (wattcounts_store|wattcounts_snapshot)' crates/service/src; then
  echo "wattcounts-service re-exports a store or snapshot type (above)"
  failed=1
fi
echo "wattcounts-service: re-exports no store or snapshot type"
exit $failed
