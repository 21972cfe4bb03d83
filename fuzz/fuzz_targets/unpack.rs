//! The tar.gz unpacker: any bytes, as a bundle and as the tar inside one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wattcounts::bundle::unpack::{unpack, UnpackLimits};

fuzz_target!(|data: &[u8]| {
    let limits = UnpackLimits {
        max_entries: 1000,
        max_entry_bytes: 8 << 20,
        max_unpacked_bytes: 32 << 20,
        max_ratio: 1000.0,
    };
    if let Err(r) = unpack(data, &limits) {
        assert!(!r.code.is_empty());
    }
    // The same bytes as an uncompressed tar inside a valid gzip stream.
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).unwrap();
    // Refused or not, never a panic, and a refusal always says which rule.
    if let Err(r) = unpack(&gz.finish().unwrap(), &limits) {
        assert!(!r.code.is_empty() && !r.message.is_empty());
    }
});
