//! The harness CSV parsers: the first byte picks the file kind.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wattcounts::bundle::harness::{self, Scenario};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, csv)) = data.split_first() else {
        return;
    };
    let scenario = if pick & 1 == 0 {
        Scenario::Batch
    } else {
        Scenario::Server
    };
    let path = "model/results.csv";
    if pick & 2 == 0 {
        let _ = harness::parse_results(path, csv, scenario);
        let _ = harness::parse_power_traces(path, csv, scenario);
    } else {
        let _ = harness::parse_details(path, csv, scenario);
    }
});
