//! Each rule at its edges: the case that just passes, the case that just
//! fails, and what the refusal names (code, file, pointer or row and
//! column). Expected messages and pointers are written out by hand.

use super::*;
use crate::checks::test_support::{manifest, row, row_of};
use crate::derived::{aggregate, derive};
use crate::domain::Scenario;
use crate::rejection::RejectKind;

fn entry(path: &str, bytes: u64, sha256: &str) -> super::super::manifest::FileEntry {
    super::super::manifest::FileEntry {
        path: path.into(),
        bytes,
        sha256: sha256.into(),
    }
}

fn with_files(files: &[(&str, u64, &str)]) -> Manifest {
    let mut m = manifest();
    m.files = files.iter().map(|(p, b, s)| entry(p, *b, s)).collect();
    m
}

/// Where a refusal's detail points: file, JSON pointer, CSV row, column.
type Place<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    Option<u64>,
    Option<&'a str>,
);

fn where_(r: &Rejection) -> Vec<Place<'_>> {
    r.details
        .iter()
        .map(|d| {
            (
                d.file.as_deref(),
                d.pointer.as_deref(),
                d.row,
                d.column.as_deref(),
            )
        })
        .collect()
}

#[test]
fn files_are_read_by_where_they_sit() {
    assert_eq!(parsed_as("system_info.txt"), Some(ParsedAs::SystemInfo));
    assert_eq!(
        parsed_as("model-configs/Qwen/Qwen3-8B/config.json"),
        Some(ParsedAs::ModelConfig)
    );
    assert_eq!(
        parsed_as("model-configs/Qwen/Qwen3-8B/model.safetensors.index.json"),
        Some(ParsedAs::ModelConfig)
    );
    // Outside model-configs/ a config.json is just a file.
    assert_eq!(parsed_as("Qwen/config.json"), None);
    assert_eq!(
        parsed_as("model-configs/Qwen/Qwen3-8B/tokenizer.json"),
        None
    );
    // A harness CSV counts only directly inside a model folder.
    assert_eq!(
        parsed_as("m/llm_batch_optimized_results.csv"),
        Some(ParsedAs::Harness(FileKind::Results(Scenario::Batch)))
    );
    assert_eq!(
        parsed_as("m/llm_server_optimized_details.csv"),
        Some(ParsedAs::Harness(FileKind::Details(Scenario::Server)))
    );
    assert_eq!(parsed_as("llm_batch_optimized_results.csv"), None);
    assert_eq!(parsed_as("a/b/llm_batch_optimized_results.csv"), None);
    assert!(is_parsed("wattcounts.json"));
    assert!(is_parsed("system_info.txt"));
    assert!(!is_parsed("m/gpu_trace.csv"));
}

#[test]
fn a_bundle_needs_its_manifest() {
    assert_eq!(manifest_present(Some(b"{}".to_vec())).unwrap(), b"{}");
    let r = manifest_present(None).unwrap_err();
    assert_eq!(r.code, "manifest_missing");
    assert!(r.message.contains("wattcounts.json"), "{}", r.message);
}

#[test]
fn the_audience_is_this_service_trailing_slashes_aside() {
    let m = manifest(); // audience http://localhost
    assert!(check_audience(&m, "http://localhost").is_ok());
    assert!(check_audience(&m, "http://localhost/").is_ok());
    let mut slash = manifest();
    slash.audience = "http://localhost//".into();
    assert!(check_audience(&slash, "http://localhost").is_ok());
    let r = check_audience(&m, "https://wattcounts.example").unwrap_err();
    assert_eq!(
        (r.code, r.kind),
        ("audience_mismatch", RejectKind::Forbidden)
    );
    assert_eq!(
        r.message,
        "this bundle was packed for http://localhost but this service is https://wattcounts.example; pack it again with --audience https://wattcounts.example"
    );
    assert_eq!(
        where_(&r),
        [(Some("wattcounts.json"), Some("/audience"), None, None)]
    );
    assert_eq!(
        r.details[0].message,
        "expected https://wattcounts.example, found http://localhost"
    );
}

#[test]
fn the_file_list_is_exactly_the_archive() {
    let m = with_files(&[("a.csv", 1, "x"), ("b.csv", 1, "y")]);
    let both = ["b.csv".to_string(), "a.csv".to_string()];
    assert!(check_file_list(&m, &both).is_ok());

    let twice = with_files(&[("a.csv", 1, "x"), ("a.csv", 1, "x")]);
    let r = check_file_list(&twice, &["a.csv".into()]).unwrap_err();
    assert_eq!(r.code, "manifest_duplicate_path");
    assert_eq!(
        where_(&r),
        [(Some("wattcounts.json"), Some("/files/1/path"), None, None)]
    );

    let r = check_file_list(
        &m,
        &[
            both[0].clone(),
            both[1].clone(),
            "z.csv".into(),
            "c.csv".into(),
        ],
    )
    .unwrap_err();
    assert_eq!(r.code, "file_not_in_manifest");
    assert_eq!(
        r.message,
        "2 file(s) in the bundle are not listed in the manifest"
    );
    // Named in order, each its own detail.
    assert_eq!(
        where_(&r),
        [
            (Some("c.csv"), None, None, None),
            (Some("z.csv"), None, None, None)
        ]
    );

    let r = check_file_list(&m, &["a.csv".into()]).unwrap_err();
    assert_eq!(r.code, "file_missing");
    assert_eq!(
        r.message,
        "1 file(s) listed in the manifest are not in the bundle"
    );
    assert_eq!(where_(&r), [(Some("b.csv"), Some("/files/1"), None, None)]);
    // An empty bundle with an empty list passes; the results rule refuses it.
    assert!(check_file_list(&with_files(&[]), &[]).is_ok());
}

#[test]
fn sizes_and_digests_match_the_manifest() {
    let m = with_files(&[("a.csv", 10, "aa"), ("b.csv", 20, "bb")]);
    let seen = |path, size, sha256| FileSeen { path, size, sha256 };
    assert!(
        check_sizes_and_digests(&m, &[seen("a.csv", 10, "aa"), seen("b.csv", 20, "bb")]).is_ok()
    );

    let r = check_sizes_and_digests(&m, &[seen("a.csv", 10, "aa"), seen("b.csv", 21, "bb")])
        .unwrap_err();
    assert_eq!(r.code, "size_mismatch");
    assert_eq!(r.message, "b.csv has 21 bytes, the manifest says 20");
    assert_eq!(
        where_(&r),
        [(Some("b.csv"), Some("/files/1/bytes"), None, None)]
    );
    assert_eq!(r.details[0].message, "expected 20 bytes, found 21");

    let r = check_sizes_and_digests(&m, &[seen("a.csv", 10, "ab")]).unwrap_err();
    assert_eq!(r.code, "digest_mismatch");
    assert_eq!(
        where_(&r),
        [(Some("a.csv"), Some("/files/0/sha256"), None, None)]
    );
    assert_eq!(r.details[0].message, "expected sha256 aa, found ab");
    // The size is judged before the digest.
    let r = check_sizes_and_digests(&m, &[seen("a.csv", 9, "ab")]).unwrap_err();
    assert_eq!(r.code, "size_mismatch");

    let r = check_sizes_and_digests(&m, &[seen("c.csv", 1, "cc")]).unwrap_err();
    assert_eq!(r.code, "file_not_in_manifest");
    assert_eq!(where_(&r), [(Some("c.csv"), None, None, None)]);
}

#[test]
fn a_results_file_is_one_models() {
    let a = row(&[50.0; 11], &[40.0; 11], 100);
    let mut b = a.clone();
    b.model = "other/model".into();
    b.line = 4;
    assert!(check_one_model("m/x.csv", &[]).is_ok());
    assert!(check_one_model("m/x.csv", &[a.clone(), a.clone()]).is_ok());
    let r = check_one_model("m/x.csv", &[a.clone(), a, b]).unwrap_err();
    assert_eq!(r.code, "csv_mixed_models");
    assert_eq!(
        r.message,
        "m/x.csv mixes models 'Qwen/Qwen2.5-0.5B-Instruct' and 'other/model'"
    );
    assert_eq!(
        where_(&r),
        [(Some("m/x.csv"), None, Some(4), Some("model"))]
    );
    assert_eq!(
        r.details[0].message,
        "model 'other/model' differs from 'Qwen/Qwen2.5-0.5B-Instruct' in row 4"
    );
}

#[test]
fn a_bundle_holds_results() {
    assert!(check_results_present(&[row(&[50.0], &[40.0], 1)]).is_ok());
    assert_eq!(check_results_present(&[]).unwrap_err().code, "no_results");
}

/// Details counting `n` requests for iteration 0 of the batch file.
fn details(n: u64, lambda: Option<f64>) -> DetailCounts {
    DetailCounts {
        model: None,
        requests: [(harness::iteration_key(0, lambda), n)]
            .into_iter()
            .collect(),
    }
}

#[test]
fn details_count_the_results_requests() {
    let mut r = row(&[50.0; 11], &[40.0; 11], 100); // file m/llm_batch_optimized_results.csv
    r.requests_ok = 5;
    r.requests_failed = 2;
    let rows = [r];
    let batch = "m/llm_batch_optimized_details.csv".to_string();
    // Successes only, or successes and failures.
    assert!(check_details(&rows, &[(batch.clone(), details(5, None))]).is_ok());
    assert!(check_details(&rows, &[(batch.clone(), details(7, None))]).is_ok());
    for wrong in [4, 6, 8] {
        let e = check_details(&rows, &[(batch.clone(), details(wrong, None))]).unwrap_err();
        assert_eq!(e.code, "details_mismatch");
        assert_eq!(
            e.message,
            format!("{batch} has {wrong} request rows for iteration 0, but m/llm_batch_optimized_results.csv counts 5 successful requests")
        );
        assert_eq!(
            where_(&e),
            [
                (Some(batch.as_str()), None, None, None),
                (
                    Some("m/llm_batch_optimized_results.csv"),
                    None,
                    Some(2),
                    Some("request_success_total")
                )
            ]
        );
    }
    // A details file whose results file is not in the bundle is not judged.
    let lone = "n/llm_batch_optimized_details.csv".to_string();
    assert!(check_details(&rows, &[(lone, details(99, None))]).is_ok());
    // A server iteration is named with its rate, and matched by it.
    let mut s = row_of(Scenario::Server, 300.0, &[50.0; 11], &[40.0; 11], 100);
    s.requests_ok = 3;
    let server = "m/llm_server_optimized_details.csv".to_string();
    let srows = [s];
    assert!(check_details(&srows, &[(server.clone(), details(3, Some(0.33)))]).is_ok());
    let e = check_details(&srows, &[(server.clone(), details(3, Some(0.5)))]).unwrap_err();
    assert!(
        e.message
            .contains("0 request rows for iteration 0 at 0.33 req/s"),
        "{}",
        e.message
    );
}

#[test]
fn rows_sort_by_model_scenario_rate_iteration() {
    let base = row(&[50.0], &[40.0], 1);
    let mk = |model: &str, scenario, lambda, iteration| IterationRow {
        model: model.into(),
        scenario,
        lambda_qps: lambda,
        iteration,
        ..base.clone()
    };
    let mut rows = vec![
        mk("b", Scenario::Batch, None, 0),
        mk("a", Scenario::Server, Some(1.0), 0),
        mk("a", Scenario::Server, Some(0.5), 1),
        mk("a", Scenario::Server, Some(0.5), 0),
        mk("a", Scenario::Batch, None, 2),
    ];
    sort_rows(&mut rows);
    let order: Vec<(String, Option<f64>, u32)> = rows
        .iter()
        .map(|r| (r.model.clone(), r.lambda_qps, r.iteration))
        .collect();
    assert_eq!(
        order,
        [
            ("a".into(), None, 2),
            ("a".into(), Some(0.5), 0),
            ("a".into(), Some(0.5), 1),
            ("a".into(), Some(1.0), 0),
            ("b".into(), None, 0),
        ]
    );
}

/// A manifest naming Qwen3-8B's config (and its weights index when given).
fn naming_config(config: &[u8], index: Option<&[u8]>) -> Manifest {
    let mut m = manifest();
    m.models = vec![super::super::manifest::ManifestModel {
        id: "Qwen/Qwen3-8B".into(),
        revision: Some("abc".into()),
        config: "model-configs/Qwen/Qwen3-8B/config.json".into(),
        config_sha256: sha256_hex(config),
        weights_index: index
            .map(|_| "model-configs/Qwen/Qwen3-8B/model.safetensors.index.json".into()),
        weights_index_sha256: index.map(sha256_hex),
    }];
    m
}

#[test]
fn each_named_model_brings_its_config_under_its_digest() {
    let config = br#"{"model_type": "qwen3"}"#.to_vec();
    let index = br#"{"metadata": {"total_size": 16381470720}}"#.to_vec();
    let config_path = "model-configs/Qwen/Qwen3-8B/config.json".to_string();
    let index_path = "model-configs/Qwen/Qwen3-8B/model.safetensors.index.json".to_string();
    let files = |c: &[u8], i: Option<&[u8]>| {
        let mut f = HashMap::new();
        f.insert(config_path.clone(), c.to_vec());
        if let Some(i) = i {
            f.insert(index_path.clone(), i.to_vec());
        }
        f
    };
    // No models named: nothing to read.
    assert!(bundled_models(&manifest(), &HashMap::new())
        .unwrap()
        .is_empty());
    let got = bundled_models(&naming_config(&config, None), &files(&config, None)).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].config_sha256, sha256_hex(&config));
    assert_eq!(got[0].weights_total_bytes, None);
    let got = bundled_models(
        &naming_config(&config, Some(&index)),
        &files(&config, Some(&index)),
    )
    .unwrap();
    assert_eq!(got[0].weights_total_bytes, Some(Ok(16_381_470_720)));

    let r = bundled_models(&naming_config(&config, None), &HashMap::new()).unwrap_err();
    assert_eq!(r.code, "model_config_missing");
    assert_eq!(
        where_(&r),
        [(
            Some("wattcounts.json"),
            Some("/models/0/config"),
            None,
            None
        )]
    );

    let r = bundled_models(&naming_config(&config, None), &files(b"{}", None)).unwrap_err();
    assert_eq!(r.code, "digest_mismatch");
    assert_eq!(
        where_(&r),
        [(
            Some(config_path.as_str()),
            Some("/models/0/config_sha256"),
            None,
            None
        )]
    );

    let r =
        bundled_models(&naming_config(&config, Some(&index)), &files(&config, None)).unwrap_err();
    assert_eq!(r.code, "model_config_missing");
    assert_eq!(
        where_(&r),
        [(
            Some("wattcounts.json"),
            Some("/models/0/weights_index"),
            None,
            None
        )]
    );

    let r = bundled_models(
        &naming_config(&config, Some(&index)),
        &files(&config, Some(b"{}")),
    )
    .unwrap_err();
    assert_eq!(r.code, "digest_mismatch");
    assert_eq!(
        where_(&r),
        [(
            Some(index_path.as_str()),
            Some("/models/0/weights_index_sha256"),
            None,
            None
        )]
    );
}

#[test]
fn figures_must_be_finite() {
    let fine = row(&[50.0; 11], &[40.0; 11], 100);
    let runs = [derive(&fine)];
    assert!(check_runs_finite(std::slice::from_ref(&fine), &runs).is_ok());
    // 1e308 W over 1.1 s overflows the energy to infinity.
    let mut huge = row(&[1e308; 11], &[40.0; 11], 100);
    huge.line = 7;
    let huge_runs = [derive(&huge)];
    let r = check_runs_finite(std::slice::from_ref(&huge), &huge_runs).unwrap_err();
    assert_eq!(r.code, "figure_not_finite");
    assert_eq!(
        where_(&r),
        [(
            Some("m/llm_batch_optimized_results.csv"),
            None,
            Some(7),
            Some("gpu_0_power_draw_watts")
        )]
    );
    assert!(
        r.message
            .starts_with("m/llm_batch_optimized_results.csv row 7: "),
        "{}",
        r.message
    );

    let configurations = aggregate(&runs);
    assert!(check_configurations(&configurations).is_ok());
    let mut bad = configurations.clone();
    bad[0].energy_per_token_j.cv = f64::NAN;
    let r = check_configurations(&bad).unwrap_err();
    assert_eq!(r.code, "figure_not_finite");
    assert!(
        r.message.contains("the spread of energy_per_token_j"),
        "{}",
        r.message
    );
    assert_eq!(check_configurations(&[]).unwrap_err().code, "no_tokens");
}

#[test]
fn the_manifest_names_the_signing_key_and_its_owner() {
    let m = manifest(); // alice, SHA256:x
    assert!(check_signer(&m, "SHA256:x", "alice").is_ok());
    // Handles compare case aside (registration keeps them unique so).
    assert!(check_signer(&m, "SHA256:x", "Alice").is_ok());
    let r = check_signer(&m, "SHA256:y", "alice").unwrap_err();
    assert_eq!((r.code, r.kind), ("key_mismatch", RejectKind::Forbidden));
    assert_eq!(
        r.message,
        "the manifest names key SHA256:x but the bundle was signed with SHA256:y"
    );
    assert_eq!(
        where_(&r),
        [(
            Some("wattcounts.json"),
            Some("/submitter/key_fingerprint"),
            None,
            None
        )]
    );
    // The key is checked first: both wrong names the key.
    assert_eq!(
        check_signer(&m, "SHA256:y", "bob").unwrap_err().code,
        "key_mismatch"
    );
    let r = check_signer(&m, "SHA256:x", "alicia").unwrap_err();
    assert_eq!((r.code, r.kind), ("handle_mismatch", RejectKind::Forbidden));
    assert_eq!(
        r.message,
        "the manifest names submitter 'alice' but the signing key belongs to 'alicia'"
    );
    assert_eq!(
        where_(&r),
        [(
            Some("wattcounts.json"),
            Some("/submitter/handle"),
            None,
            None
        )]
    );
}
