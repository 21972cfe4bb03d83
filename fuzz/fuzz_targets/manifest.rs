//! The manifest parser (strict JSON, then the schema, then the rules).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use wattcounts::bundle::manifest::ManifestSchema;

fuzz_target!(|data: &[u8]| {
    static SCHEMA: OnceLock<ManifestSchema> = OnceLock::new();
    if let Err(r) = SCHEMA.get_or_init(ManifestSchema::new).parse(data) {
        assert!(!r.code.is_empty());
    }
});
