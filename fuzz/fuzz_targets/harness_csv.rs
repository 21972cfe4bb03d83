//! `wattcounts_rules::fuzz_targets::harness_csv_bytes`, driven by libFuzzer (its body lives
//! in the library so that `cargo test` replays fuzz/corpus/harness_csv on stable).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wattcounts_rules::fuzz_targets::harness_csv_bytes(data));
