//! The bodies of the cargo-fuzz targets in `fuzz/`: each takes any bytes
//! and panics only when a parser breaks its promise (a panic of its own, or
//! a refusal without a code and a message). They live in the library so
//! that `cargo test` replays the committed corpora and crash inputs on
//! stable (tests/it/intake/properties.rs), while `cargo +nightly fuzz run` drives
//! the same code with coverage guidance.

use std::sync::OnceLock;

use crate::bundle::harness::{self, Scenario};
use crate::bundle::manifest::ManifestSchema;
use crate::bundle::unpack::{unpack, UnpackLimits};
use crate::rejection::Rejection;
use crate::signing;

/// One target's body: any bytes in, a panic only for a broken promise.
pub type Body = fn(&[u8]);

/// The targets by name, as `fuzz/Cargo.toml` and `fuzz/corpus/` name them.
pub const TARGETS: &[(&str, Body)] = &[
    ("unpack", unpack_bytes),
    ("manifest", manifest_bytes),
    ("harness_csv", harness_csv_bytes),
    ("sshsig", sshsig_bytes),
];

fn typed(r: &Rejection) {
    assert!(
        !r.code.is_empty() && !r.message.is_empty(),
        "an untyped refusal: {r:?}"
    );
}

/// The tar.gz unpacker: the bytes as a bundle, and as the tar inside one.
pub fn unpack_bytes(data: &[u8]) {
    let limits = UnpackLimits {
        max_entries: 1000,
        max_entry_bytes: 8 << 20,
        max_unpacked_bytes: 32 << 20,
        max_ratio: 1000.0,
    };
    if let Err(r) = unpack(data, &limits) {
        typed(&r);
    }
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).expect("writing to memory");
    if let Err(r) = unpack(&gz.finish().expect("writing to memory"), &limits) {
        typed(&r);
    }
}

/// The manifest parser: strict JSON, then the schema, then the rules.
pub fn manifest_bytes(data: &[u8]) {
    static SCHEMA: OnceLock<ManifestSchema> = OnceLock::new();
    if let Err(r) = SCHEMA.get_or_init(ManifestSchema::new).parse(data) {
        typed(&r);
    }
}

/// The harness CSV parsers; the first byte picks the file kind.
pub fn harness_csv_bytes(data: &[u8]) {
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
        if let Err(r) = harness::parse_results(path, csv, scenario) {
            typed(&r);
        }
        if let Err(r) = harness::parse_power_traces(path, csv, scenario) {
            typed(&r);
        }
    } else if let Err(r) = harness::parse_details(path, csv, scenario) {
        typed(&r);
    }
}

/// The sshsig parser, and verification of whatever parses.
pub fn sshsig_bytes(data: &[u8]) {
    match signing::parse_signature(data, signing::SUBMISSION_NAMESPACE, "signature") {
        Ok(sig) => {
            let key = ssh_key::PublicKey::from(sig.public_key().clone());
            if let Err(r) = signing::verify(
                &key,
                signing::SUBMISSION_NAMESPACE,
                b"message",
                &sig,
                "signature",
            ) {
                typed(&r);
            }
        }
        Err(r) => typed(&r),
    }
}
