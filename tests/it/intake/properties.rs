//! Property tests of the parsers strangers' bytes go through: the tar.gz
//! unpacker, the manifest parser, the harness CSV parsers and the sshsig
//! parser. Inputs are random bytes and mutations of valid inputs (so the
//! parsers get past their first check); every one must end in a value or
//! a typed rejection with a code and a message, never a panic. Case
//! counts and the seed are fixed, so the suite's time and inputs are too;
//! `fuzz/` has the same targets for cargo-fuzz.

use proptest::prelude::*;
use wattcounts::bundle::harness::{self, Scenario};
use wattcounts::bundle::manifest::ManifestSchema;
use wattcounts::bundle::unpack::{self, UnpackLimits};
use wattcounts::rejection::Rejection;
use wattcounts::signing;

use crate::common::*;

/// A fixed seed: every run tries the same inputs, so a failure is the
/// code's, not the draw's. Inputs that once failed are kept in the
/// committed regressions file and tried first on every run.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: proptest::test_runner::RngSeed::Fixed(20_261_203),
        // Shrinking re-runs a failing input many times; the first failure
        // printed is enough to reproduce it.
        max_shrink_iters: 64,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "tests/it/properties.proptest-regressions",
            ),
        )),
        ..ProptestConfig::default()
    }
}

/// A rejection is typed: a code, a message.
fn typed(r: &Rejection) -> bool {
    !r.code.is_empty() && !r.message.is_empty()
}

/// Byte edits of a valid input: overwrite, insert, delete and truncate.
#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        2 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, v)| Edit::Insert(i, v)),
        2 => (any::<usize>(), 1usize..64).prop_map(|(i, n)| Edit::Delete(i, n)),
        1 => any::<usize>().prop_map(Edit::Truncate),
    ];
    proptest::collection::vec(edit, 1..6)
}

fn apply(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let n = bytes.len().max(1);
        match e {
            Edit::Set(i, b) if !bytes.is_empty() => bytes[i % n] = *b,
            Edit::Insert(i, v) => {
                let at = i % (bytes.len() + 1);
                bytes.splice(at..at, v.iter().copied());
            }
            Edit::Delete(i, len) if !bytes.is_empty() => {
                let at = i % n;
                let end = (at + len).min(bytes.len());
                bytes.drain(at..end);
            }
            Edit::Truncate(i) => bytes.truncate(i % (bytes.len() + 1)),
            _ => {}
        }
    }
    bytes
}

/// The fixture bundle and its tar inside (generated once).
fn valid_bundle() -> &'static (Vec<u8>, Vec<u8>) {
    static B: std::sync::OnceLock<(Vec<u8>, Vec<u8>)> = std::sync::OnceLock::new();
    B.get_or_init(|| {
        let gz = BundleBuilder::fixture().by("alice", &new_key()).build();
        let tar = gunzip(&gz);
        (gz, tar)
    })
}

fn limits() -> UnpackLimits {
    UnpackLimits {
        max_entries: 500,
        max_entry_bytes: 4 << 20,
        max_unpacked_bytes: 16 << 20,
        max_ratio: 1000.0,
    }
}

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn unpacker_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        if let Err(r) = unpack::unpack(&bytes, &limits()) {
            prop_assert!(typed(&r), "{r:?}");
        }
        // Random bytes behind a valid gzip header reach the tar reader.
        if let Err(r) = unpack::unpack(&gzip(&bytes), &limits()) {
            prop_assert!(typed(&r), "{r:?}");
        }
    }

    #[test]
    fn unpacker_on_edited_archives(e in edits()) {
        let (gz, tar) = valid_bundle();
        // Edits of the tar reach headers, names and sizes; edits of the
        // gzip reach the inflater and its trailer.
        for input in [gzip(&apply(tar.clone(), &e)), apply(gz.clone(), &e)] {
            match unpack::unpack(&input, &limits()) {
                Ok(entries) => {
                    for en in entries {
                        prop_assert!(!en.path.starts_with('/') && !en.path.contains(".."), "{}", en.path);
                        prop_assert_eq!(en.size as usize, en.data.len());
                    }
                }
                Err(r) => prop_assert!(typed(&r), "{r:?}"),
            }
        }
    }
}

fn manifest_text() -> &'static Vec<u8> {
    static M: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    M.get_or_init(|| {
        serde_json::to_vec_pretty(
            &BundleBuilder::fixture()
                .by("alice", &new_key())
                .manifest_json(),
        )
        .unwrap()
    })
}

fn schema() -> &'static ManifestSchema {
    static S: std::sync::OnceLock<ManifestSchema> = std::sync::OnceLock::new();
    S.get_or_init(ManifestSchema::new)
}

/// JSON fragments that trip parsers: deep nesting, huge numbers, escapes.
fn json_noise() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("[".repeat(200)),
        Just("1e999".to_string()),
        Just("-0".to_string()),
        Just("9007199254740993".to_string()),
        Just("\"\\u0000\"".to_string()),
        Just("\"\\ud800\"".to_string()),
        Just("{\"a\":1,\"a\":2}".to_string()),
        "[ -~]{0,24}",
    ]
}

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn manifest_parser_on_edits(e in edits()) {
        let input = apply(manifest_text().clone(), &e);
        if let Err(r) = schema().parse(&input) {
            prop_assert!(typed(&r), "{r:?}");
        }
    }

    #[test]
    fn manifest_parser_on_spliced_values(at in any::<usize>(), noise in json_noise()) {
        let mut text = manifest_text().clone();
        let at = at % text.len();
        text.splice(at..at, noise.bytes());
        if let Err(r) = schema().parse(&text) {
            prop_assert!(typed(&r), "{r:?}");
        }
    }

    #[test]
    fn manifest_parser_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Err(r) = schema().parse(&bytes) {
            prop_assert!(typed(&r), "{r:?}");
        }
    }
}

/// One results CSV and one details CSV of the fixture, per scenario.
fn csv_files() -> Vec<(String, Vec<u8>, Scenario, bool)> {
    fixture()
        .files
        .iter()
        .filter_map(|(p, d)| {
            let name = p.rsplit('/').next().unwrap();
            match harness::classify(name)? {
                harness::FileKind::Results(s) => Some((p.clone(), d.clone(), s, true)),
                harness::FileKind::Details(s) => Some((p.clone(), d.clone(), s, false)),
            }
        })
        .collect()
}

/// CSV-shaped noise: separators, quotes, line ends, numbers at the edges.
fn csv_noise() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(",".to_string()),
        Just("\"".to_string()),
        Just("\r\n".to_string()),
        Just("\n".to_string()),
        Just("NaN".to_string()),
        Just("inf".to_string()),
        Just("-1".to_string()),
        Just("1e308".to_string()),
        Just("[1.0, 2.0".to_string()),
        Just("\u{0}".to_string()),
        Just("\u{feff}".to_string()),
        "[ -~]{0,12}",
    ]
}

proptest! {
    #![proptest_config(config(150))]

    #[test]
    fn harness_csv_parsers_on_edits(which in any::<usize>(), e in edits(), at in any::<usize>(), noise in csv_noise()) {
        let files = csv_files();
        let (path, data, scenario, results) = &files[which % files.len()];
        let mut input = apply(data.clone(), &e);
        let at = at % (input.len() + 1);
        input.splice(at..at, noise.bytes());
        let r = if *results {
            harness::parse_results(path, &input, *scenario).map(|_| ())
        } else {
            harness::parse_details(path, &input, *scenario).map(|_| ())
        };
        if let Err(r) = r {
            prop_assert!(typed(&r), "{r:?}");
            // A CSV rejection says which file.
            prop_assert!(r.details.iter().any(|d| d.file.as_deref() == Some(path.as_str())) || r.message.contains(path.as_str()), "{r:?}");
        }
        if *results {
            let _ = harness::parse_power_traces(path, &input, *scenario);
        }
    }
}

fn signature_text() -> &'static Vec<u8> {
    static S: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    S.get_or_init(|| sign(&new_key(), b"bundle bytes"))
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn sshsig_parser_on_edits(e in edits()) {
        let input = apply(signature_text().clone(), &e);
        if let Err(r) = signing::parse_signature(&input, signing::SUBMISSION_NAMESPACE, "signature") {
            prop_assert!(typed(&r), "{r:?}");
        }
    }

    /// Edits inside the base64 body reach the binary sshsig decoder.
    #[test]
    fn sshsig_parser_on_edited_blobs(e in edits()) {
        use base64::Engine;
        let text = String::from_utf8(signature_text().clone()).unwrap();
        let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
        let blob = base64::engine::general_purpose::STANDARD.decode(body).unwrap();
        let edited = base64::engine::general_purpose::STANDARD.encode(apply(blob, &e));
        let armored = format!("-----BEGIN SSH SIGNATURE-----\n{edited}\n-----END SSH SIGNATURE-----\n");
        match signing::parse_signature(armored.as_bytes(), signing::SUBMISSION_NAMESPACE, "signature") {
            Ok(sig) => {
                // Whatever parsed must verify or be refused, never panic.
                let k = ssh_key::PublicKey::from(sig.public_key().clone());
                let _ = signing::verify(&k, signing::SUBMISSION_NAMESPACE, b"bundle bytes", &sig, "signature");
            }
            Err(r) => prop_assert!(typed(&r), "{r:?}"),
        }
    }
}

/// The fuzz targets' committed seed corpora and any crash inputs
/// (`fuzz/artifacts/<target>/`, where cargo-fuzz leaves what failed), run
/// through the targets' own bodies on stable: a crash found once by a
/// fuzzer fails `cargo test` until it is fixed.
#[test]
fn fuzz_corpora_and_crash_inputs_replay() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    for (name, body) in wattcounts::fuzz_targets::TARGETS {
        let seeds = walk_files(&root.join("corpus").join(name));
        assert!(seeds.len() >= 3, "{name}: {} seeds", seeds.len());
        let crashes = walk_files_if_any(&root.join("artifacts").join(name));
        for input in seeds.iter().chain(&crashes) {
            let bytes = std::fs::read(input).unwrap();
            let run = std::panic::catch_unwind(|| body(&bytes));
            assert!(run.is_ok(), "{name} panicked on {}", input.display());
        }
    }
}
