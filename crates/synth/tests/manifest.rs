//! A manifest packed from a generated run folder passes the schema, and a
//! missing field is pointed at (here because it needs the generator; the
//! schema's own unit tests are in wattcounts-rules).

use wattcounts_rules::bundle::manifest::ManifestSchema;

#[test]
fn a_packed_manifest_passes_and_a_missing_field_is_pointed_at() {
    use wattcounts_synth::{generate_run, SynthOptions};
    let gpu = wattcounts_rules::catalog::gpu_by_id("l4").unwrap();
    let model = &wattcounts_rules::catalog::models()[0];
    let run = generate_run(gpu, &[model], &SynthOptions::small());
    let input = wattcounts_rules::pack::PackInput {
        run_name: run.name.clone(),
        files: run.files.clone(),
        config_file: "config-v2.yaml".into(),
        config_yaml: run.config_yaml.clone(),
        handle: "alice".into(),
        key_fingerprint: format!("SHA256:{}", "A".repeat(43)),
        audience: "https://wattcounts.test".into(),
        harness_commit: "abc1234".into(),
        vllm_version: Some("0.14.0".into()),
        declare_power_limit: false,
        created_at: chrono::Utc::now(),
        model_configs: Vec::new(),
        weights_indexes: Vec::new(),
    };
    let manifest = wattcounts_rules::pack::build_manifest(&input).unwrap();
    let mut json = serde_json::to_value(&manifest).unwrap();
    let schema = ManifestSchema::new();
    let parsed = schema.parse(&serde_json::to_vec(&json).unwrap()).unwrap();
    assert_eq!(parsed.audience, "https://wattcounts.test");
    json.as_object_mut().unwrap().remove("audience");
    let err = schema
        .parse(&serde_json::to_vec(&json).unwrap())
        .unwrap_err();
    assert_eq!(err.code, "manifest_schema");
    assert_eq!(
        err.message,
        "wattcounts.json does not match the manifest schema (1 problem)"
    );
    assert!(
        err.details[0].message.contains("audience"),
        "{}",
        err.details[0]
    );
    assert_eq!(err.details[0].pointer.as_deref(), Some(""));
}
