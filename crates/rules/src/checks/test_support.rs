//! What the checks' unit tests share: a manifest, one iteration built
//! from its power and temperature samples, and a rule's verdict on it
//! with the default thresholds and the L4's catalogue row (TDP 72 W,
//! loaded idle 24 W).

use super::{evaluate, CheckInput, CheckOutcome, Thresholds};
use crate::bundle::harness::{IterationRow, Scenario, SeriesStats};
use crate::bundle::manifest::Manifest;
use crate::bundle::system_info::SystemInfo;
use crate::derived::{aggregate, derive};

pub fn manifest() -> Manifest {
    serde_json::from_value(serde_json::json!({
        "schema_version": 1,
        "submission_id": "00000000-0000-4000-8000-000000000001",
        "created_at": "2026-12-06T00:00:00Z",
        "audience": "http://localhost",
        "submitter": {"handle": "alice", "key_fingerprint": "SHA256:x"},
        "run": {"name": "run_1"},
        "harness": {"name": "sw-energy-benchmark", "commit": "2c916dc", "config_file": "config-v2.yaml",
            "config": {"ITERATIONS": 3, "MAX_TEST_DURATION": 300.0, "LAMBDA_QPS_ARRAY": [0.33], "LLM_MODELS": ["Qwen/Qwen2.5-0.5B-Instruct"]}},
        "system": {"gpu": {"name": "NVIDIA L4", "count": 1, "driver_version": "570", "power_limit_w": 72.0,
            "default_power_limit_w": 72.0, "power_limit_declared": false}, "cpu": "x", "memory_gib": 64.0},
        "software": {},
        "attestation": {"unaltered": true, "publish": true, "licence": "CC-BY-4.0"},
        "files": []
    }))
    .unwrap()
}

/// When the test bundles arrive: a day after [`manifest`]'s created_at.
pub fn received() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339("2026-12-07T00:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc)
}

/// A batch iteration at `watts` taken 0.1 s apart, lasting as long as the
/// meter's thread takes them (one period a sample: 11 samples, 1.1 s),
/// with temperatures `temps` and `tokens` generated.
pub fn row(watts: &[f64], temps: &[f64], tokens: u64) -> IterationRow {
    row_of(
        Scenario::Batch,
        0.1 * watts.len().max(1) as f64,
        watts,
        temps,
        tokens,
    )
}

/// An iteration of `scenario` (server: at 0.33 req/s) lasting `duration_s`.
pub fn row_of(
    scenario: Scenario,
    duration_s: f64,
    watts: &[f64],
    temps: &[f64],
    tokens: u64,
) -> IterationRow {
    IterationRow {
        file: format!("m/llm_{}_optimized_results.csv", scenario.as_str()),
        line: 2,
        scenario,
        model: "Qwen/Qwen2.5-0.5B-Instruct".into(),
        lambda_qps: (scenario == Scenario::Server).then_some(0.33),
        iteration: 0,
        duration_s,
        started_at_unix: 0.0,
        started_at: String::new(),
        power_w: SeriesStats::of(watts),
        temperature_c: SeriesStats::of(temps),
        gpu_memory_mb: SeriesStats::default(),
        gpu_utilization_pct: SeriesStats::default(),
        sm_clock_mhz: SeriesStats::default(),
        cpu_memory_mb: SeriesStats::default(),
        cpu_utilization_pct: SeriesStats::default(),
        cpu_energy_j: 0.0,
        dram_energy_j: 0.0,
        reported_gpu_energy_j: 0.0,
        disk_energy_j: 0.0,
        ttft_s: vec![],
        e2e_s: vec![1.0],
        tokens_per_s: vec![],
        requests_ok: 1,
        requests_failed: 0,
        prompt_tokens_total: 10,
        generation_tokens_total: tokens,
        request_prompt_tokens: vec![10.0],
        request_generation_tokens: vec![tokens as f64],
        sampling_params: String::new(),
        queries_submitted: 1,
        processed_queries: 1,
    }
}

/// The outcome and message of rule `id` on one iteration.
pub fn judge(id: &str, r: IterationRow) -> (CheckOutcome, String) {
    judge_rows(id, vec![r])
}

/// The outcome and message of rule `id` on these iterations.
pub fn judge_rows(id: &str, rows: Vec<IterationRow>) -> (CheckOutcome, String) {
    judge_case(id, &manifest(), None, rows)
}

/// The same iteration `n` times over (iterations 0, 1, …).
pub fn iterations(n: u32, r: &IterationRow) -> Vec<IterationRow> {
    (0..n)
        .map(|i| IterationRow {
            iteration: i,
            line: 2 + i as u64,
            ..r.clone()
        })
        .collect()
}

/// The outcome and message of rule `id` on these iterations, under this
/// manifest and system_info.txt.
pub fn judge_case(
    id: &str,
    m: &Manifest,
    system_info: Option<&SystemInfo>,
    rows: Vec<IterationRow>,
) -> (CheckOutcome, String) {
    let res = result_of(id, m, system_info, rows);
    (res.outcome, res.message)
}

/// Rule `id`'s whole result; the GPU is the catalogue's entry of the
/// manifest's GPU name (none for a name the catalogue lacks).
pub fn result_of(
    id: &str,
    m: &Manifest,
    system_info: Option<&SystemInfo>,
    rows: Vec<IterationRow>,
) -> super::CheckResult {
    result_under(id, m, system_info, rows, &Thresholds::default())
}

/// [`result_of`] under thresholds an operator set.
pub fn result_under(
    id: &str,
    m: &Manifest,
    system_info: Option<&SystemInfo>,
    rows: Vec<IterationRow>,
    t: &Thresholds,
) -> super::CheckResult {
    let runs: Vec<_> = rows.iter().map(derive).collect();
    let configurations = aggregate(&runs);
    let input = CheckInput {
        manifest: m,
        received_at: received(),
        bundled_models: &[],
        system_info,
        gpu: crate::catalog::gpu_by_nvml_name(&m.system.gpu.name),
        rows: &rows,
        runs: &runs,
        configurations: &configurations,
    };
    evaluate(&input, t)
        .into_iter()
        .find(|c| c.id == id)
        .unwrap()
}

/// `f` on these rows judged as one bundle on the L4, with [`manifest`] and
/// a system_info.txt that names the L4 at its default 72 W limit.
pub fn on_l4<T>(rows: &[IterationRow], f: impl FnOnce(&CheckInput) -> T) -> T {
    let runs: Vec<_> = rows.iter().map(derive).collect();
    let configurations = aggregate(&runs);
    let m = manifest();
    let info = SystemInfo {
        gpu_name: Some("NVIDIA L4".into()),
        power_limit_w: Some(72.0),
        default_power_limit_w: Some(72.0),
        ..Default::default()
    };
    f(&CheckInput {
        manifest: &m,
        received_at: received(),
        bundled_models: &[],
        system_info: Some(&info),
        gpu: crate::catalog::gpu_by_id("l4"),
        rows,
        runs: &runs,
        configurations: &configurations,
    })
}
