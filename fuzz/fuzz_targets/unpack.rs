//! `wattcounts_rules::fuzz_targets::unpack_bytes`, driven by libFuzzer (its body lives
//! in the library so that `cargo test` replays fuzz/corpus/unpack on stable).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wattcounts_rules::fuzz_targets::unpack_bytes(data));
