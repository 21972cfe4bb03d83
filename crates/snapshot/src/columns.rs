//! What every published column is: name, type, unit and meaning. The same
//! lists build the tables ([`super::tables`]) and write the dataset card
//! ([`super::card`]), so the card cannot describe a column the files lack.

use wattcounts_analytics::leaderboard::LeaderboardRow;
use wattcounts_rules::catalog::GpuSpec;
use wattcounts_rules::derived::IterationMetrics;
use wattcounts_rules::domain::{Origin, Scenario};
use wattcounts_store::SubmissionRecord;

/// A column's type, as Parquet stores it (CSV writes the same values as text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// UTF-8 string.
    Text,
    /// 64-bit signed integer.
    Int,
    /// 64-bit float; may be empty (null) where the column says so.
    Float,
    Bool,
    /// Milliseconds since the Unix epoch, UTC (Parquet `timestamp[ms]`).
    Timestamp,
}

impl Kind {
    /// The Arrow type name pyarrow reports, as the card and manifest print it.
    pub fn arrow_name(self) -> &'static str {
        match self {
            Kind::Text => "large_string",
            Kind::Int => "int64",
            Kind::Float => "double",
            Kind::Bool => "bool",
            Kind::Timestamp => "timestamp[ms]",
        }
    }
}

/// One cell of a row, before it joins its column.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(String),
    /// Empty where the figure is absent (e.g. server-only counts on a batch row).
    Int(Option<i64>),
    Float(Option<f64>),
    Bool(bool),
    /// Milliseconds since the Unix epoch, UTC.
    Timestamp(i64),
}

#[derive(Debug, Clone, Copy)]
pub struct ColumnDoc {
    pub name: &'static str,
    pub kind: Kind,
    /// Empty where the column has no unit.
    pub unit: &'static str,
    pub meaning: &'static str,
}

/// A column of a table whose rows are `R`.
pub struct Field<R> {
    pub doc: ColumnDoc,
    pub get: fn(&R) -> Value,
}

const fn doc(
    name: &'static str,
    kind: Kind,
    unit: &'static str,
    meaning: &'static str,
) -> ColumnDoc {
    ColumnDoc {
        name,
        kind,
        unit,
        meaning,
    }
}

macro_rules! field {
    ($name:literal, $kind:ident, $unit:literal, $meaning:literal, $get:expr) => {
        Field {
            doc: doc($name, Kind::$kind, $unit, $meaning),
            get: $get,
        }
    };
}

/// One iteration with the submission it came in.
pub struct RunRow<'a> {
    pub submission: &'a SubmissionRecord,
    pub run: &'a IterationMetrics,
}

fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

fn int(v: u64) -> Value {
    Value::Int(Some(i64::try_from(v).unwrap_or(i64::MAX)))
}

fn protocol_id(s: &SubmissionRecord, scenario: Scenario) -> String {
    s.protocol
        .as_ref()
        .map(|p| p.id(scenario))
        .unwrap_or_default()
}

pub fn gpu_id(s: &SubmissionRecord) -> String {
    s.gpu_id
        .clone()
        .unwrap_or_else(|| wattcounts_rules::catalog::gpu_id(&s.gpu_name))
}

pub fn runs<'a>() -> Vec<Field<RunRow<'a>>> {
    vec![
        field!("submission_id", Text, "", "Submission (bundle) the iteration came in; see submissions.csv.", |r| text(&r.submission.id.to_string())),
        field!("submitter", Text, "", "Handle of the registered submitter who signed the bundle.", |r| text(&r.submission.handle)),
        field!("demo", Bool, "", "True for the service's synthetic demo data, false for measured data.", |r| Value::Bool(r.submission.is_demo)),
        field!("origin", Text, "", "real (measured) or demo (synthetic); the two are never grouped together.", |r| text(Origin::of_demo(r.submission.is_demo).as_str())),
        field!("protocol_id", Text, "", "Id of the protocol the iteration followed, for its scenario (see configurations.protocol); rows of different protocols are not comparable.", |r| text(&protocol_id(r.submission, r.run.scenario))),
        field!("gpu_id", Text, "", "GPU catalogue id (e.g. h100-pcie).", |r| text(&gpu_id(r.submission))),
        field!("gpu_name", Text, "", "GPU name as NVML reports it (nvidia-smi).", |r| text(&r.submission.gpu_name)),
        field!("model", Text, "", "Hugging Face model id served by vLLM.", |r| text(&r.run.model)),
        field!("scenario", Text, "", "batch (all prompts at once) or server (Poisson arrivals).", |r| text(r.run.scenario.as_str())),
        field!("lambda_qps", Float, "req/s", "Mean arrival rate of the server scenario; empty for batch.", |r| Value::Float(r.run.lambda_qps)),
        field!("iteration", Int, "", "Iteration number within the configuration, as the harness wrote it.", |r| Value::Int(Some(i64::from(r.run.iteration)))),
        field!("started_at", Text, "", "Start of the measurement window, as the harness wrote it (measurement_datetime).", |r| text(&r.run.started_at)),
        field!("duration_s", Float, "s", "Length of the measurement window.", |r| Value::Float(Some(r.run.duration_s))),
        field!("requests_ok", Int, "requests", "Requests that completed.", |r| int(r.run.requests_ok)),
        field!("requests_failed", Int, "requests", "Requests that failed.", |r| int(r.run.requests_failed)),
        field!("prompt_tokens", Int, "tokens", "Prompt tokens processed.", |r| int(r.run.prompt_tokens)),
        field!("generation_tokens", Int, "tokens", "Tokens generated.", |r| int(r.run.generation_tokens)),
        field!("gpu_energy_j", Float, "J", "GPU energy recomputed by the service from the power trace by the meter's rule (energy_rule; 3: the trapezoid over the samples at their real spacing, duration_s / power_samples), idle included.", |r| Value::Float(Some(r.run.gpu_energy_j))),
        field!("reported_gpu_energy_j", Float, "J", "GPU energy as the harness reported it (gpu_energy).", |r| Value::Float(Some(r.run.reported_gpu_energy_j))),
        field!("cpu_energy_j", Float, "J", "CPU energy from RAPL, as the harness reported it (0 where RAPL is missing).", |r| Value::Float(Some(r.run.cpu_energy_j))),
        field!("dram_energy_j", Float, "J", "DRAM energy from RAPL, as the harness reported it (0 where RAPL is missing).", |r| Value::Float(Some(r.run.dram_energy_j))),
        field!("power_mean_w", Float, "W", "Mean of the 10 Hz GPU power trace.", |r| Value::Float(Some(r.run.power_mean_w))),
        field!("power_max_w", Float, "W", "Largest GPU power sample.", |r| Value::Float(Some(r.run.power_max_w))),
        field!("power_min_w", Float, "W", "Smallest GPU power sample.", |r| Value::Float(Some(r.run.power_min_w))),
        field!("power_samples", Int, "samples", "Number of GPU power samples (10 Hz).", |r| int(r.run.power_samples)),
        field!("temp_first_c", Float, "°C", "GPU temperature at the first sample.", |r| Value::Float(Some(r.run.temp_first_c))),
        field!("temp_max_c", Float, "°C", "Highest GPU temperature sample.", |r| Value::Float(Some(r.run.temp_max_c))),
        field!("energy_per_token_j", Float, "J/token", "gpu_energy_j / generation_tokens; empty when no token was generated.", |r| Value::Float(r.run.energy_per_token_j)),
        field!("energy_per_request_j", Float, "J/request", "gpu_energy_j / requests_ok; empty when no request completed.", |r| Value::Float(r.run.energy_per_request_j)),
        field!("throughput_tok_s", Float, "tokens/s", "generation_tokens / duration_s.", |r| Value::Float(Some(r.run.throughput_tok_s))),
        field!("ttft_p50_s", Float, "s", "Median time to first token (server only).", |r| Value::Float(r.run.ttft_p50_s)),
        field!("ttft_p90_s", Float, "s", "90th percentile time to first token (server only).", |r| Value::Float(r.run.ttft_p90_s)),
        field!("e2e_p50_s", Float, "s", "Median end-to-end request latency (server only).", |r| Value::Float(r.run.e2e_p50_s)),
        field!("e2e_p90_s", Float, "s", "90th percentile end-to-end request latency (server only).", |r| Value::Float(r.run.e2e_p90_s)),
        field!("itl_s", Float, "s/token", "Inter-token latency. Server: mean over requests with at least 2 tokens of (e2e − ttft) / (tokens − 1); batch: duration_s / generation_tokens.", |r| Value::Float(r.run.itl_s)),
        field!("timed_requests", Int, "requests", "Server: requests in the per-request latency lists (the successful ones); empty for batch.", |r| Value::Int(r.run.timed_requests.map(|n| n as i64))),
        field!("ttft_sum_s", Float, "s", "Server: sum of time to first token over those requests.", |r| Value::Float(r.run.ttft_sum_s)),
        field!("e2e_sum_s", Float, "s", "Server: sum of end-to-end latency over those requests.", |r| Value::Float(r.run.e2e_sum_s)),
        field!("mean_concurrency", Float, "requests", "Server: requests in the system on average by Little's law, e2e_sum_s / duration_s.", |r| Value::Float(r.run.mean_concurrency)),
        field!("prefill_energy_j", Float, "J", "Server: gpu_energy_j × ttft_sum_s / e2e_sum_s, the energy attributed to prefill by time (an attribution, not a measurement; decode is the rest).", |r| Value::Float(r.run.prefill_energy_j)),
        field!("energy_rule", Int, "", "The energy rule that derived gpu_energy_j and the figures built on it (see the card's Energy rule): 3 = the trapezoid at the samples' real spacing; 2 = the trapezoid at 0.1 s; 1 = mean power × duration.", |r| Value::Int(Some(r.submission.energy_rule))),
    ]
}

/// The leaderboard's rows: accepted submissions grouped by GPU, model,
/// scenario and arrival rate.
pub fn configurations() -> Vec<Field<LeaderboardRow>> {
    vec![
        field!("gpu_id", Text, "", "GPU catalogue id.", |e| text(&e.gpu_id)),
        field!("gpu_name", Text, "", "GPU name as NVML reports it.", |e| {
            text(&e.gpu_name)
        }),
        field!("model", Text, "", "Hugging Face model id.", |e| text(
            &e.model
        )),
        field!(
            "model_precision",
            Text,
            "",
            "The weights' precision as the model's config.json states it (bf16, fp16, fp8, mxfp4, awq-int4, …): part of what was measured, so an AWQ checkpoint is its own model; `unknown` for a model this instance has not catalogued.",
            |e| text(
                &wattcounts_rules::catalog::model_by_id(&e.model)
                    .map_or_else(|| "unknown".to_string(), |m| m.precision.clone())
            )
        ),
        field!("scenario", Text, "", "batch or server.", |e| text(
            e.scenario.as_str()
        )),
        field!(
            "lambda_qps",
            Float,
            "req/s",
            "Arrival rate (server); empty for batch.",
            |e| Value::Float(e.lambda_qps)
        ),
        field!(
            "origin",
            Text,
            "",
            "real (measured) or demo (synthetic); a row holds one origin only.",
            |e| text(e.origin.as_str())
        ),
        field!(
            "protocol_id",
            Text,
            "",
            "Id of the protocol (for this scenario) every submission behind the row followed.",
            |e| text(&e.protocol_id)
        ),
        field!(
            "protocol",
            Text,
            "",
            "reference (the paper's: 1,000 prompts per batch iteration, 300 s server tests, max_tokens 256, context 1024, greedy), or how the protocol differs from it.",
            |e| text(&e.protocol)
        ),
        field!(
            "energy_per_token_j",
            Float,
            "J/token",
            "Median over submissions of each submission's median over iterations.",
            |e| Value::Float(Some(e.energy_per_token_j))
        ),
        field!(
            "energy_per_token_lo_j",
            Float,
            "J/token",
            "Lower end of the order-statistic interval for energy_per_token_j (over submissions where several exist, else over iterations).",
            |e| Value::Float(Some(e.energy_per_token_interval.lo))
        ),
        field!(
            "energy_per_token_hi_j",
            Float,
            "J/token",
            "Upper end of that interval.",
            |e| Value::Float(Some(e.energy_per_token_interval.hi))
        ),
        field!(
            "energy_per_token_confidence",
            Float,
            "ratio",
            "Coverage the interval achieves for the median (e.g. 0.9375 for min–max of 5 values; 0 for one value).",
            |e| Value::Float(Some(e.energy_per_token_interval.confidence))
        ),
        field!(
            "energy_per_token_cv",
            Float,
            "ratio",
            "Largest coefficient of variation (std/mean) over iterations among the submissions.",
            |e| Value::Float(Some(e.energy_per_token_cv))
        ),
        field!(
            "energy_per_request_j",
            Float,
            "J/request",
            "Median energy per completed request.",
            |e| Value::Float(e.energy_per_request_j)
        ),
        field!(
            "throughput_tok_s",
            Float,
            "tokens/s",
            "Median generated tokens per second.",
            |e| Value::Float(Some(e.throughput_tok_s))
        ),
        field!(
            "power_mean_w",
            Float,
            "W",
            "Median of the iterations' mean GPU power.",
            |e| Value::Float(Some(e.power_mean_w))
        ),
        field!(
            "ttft_p50_s",
            Float,
            "s",
            "Median of the iterations' median time to first token (server only).",
            |e| Value::Float(e.ttft_p50_s)
        ),
        field!(
            "itl_s",
            Float,
            "s/token",
            "Median over iterations of the inter-token latency (see runs.itl_s).",
            |e| Value::Float(e.itl_s)
        ),
        field!(
            "mean_concurrency",
            Float,
            "requests",
            "Server: median of the iterations' mean concurrency (see runs.mean_concurrency).",
            |e| Value::Float(e.mean_concurrency)
        ),
        field!(
            "prefill_energy_share",
            Float,
            "ratio",
            "Server: median of the iterations' ttft_sum_s / e2e_sum_s, the share of energy attributed to prefill by time (decode is 1 minus it).",
            |e| Value::Float(e.prefill_energy_share)
        ),
        field!(
            "iterations",
            Int,
            "iterations",
            "Iterations behind the figures, over all submissions.",
            |e| int(e.iterations)
        ),
        field!(
            "submissions",
            Int,
            "submissions",
            "Accepted submissions behind the figures.",
            |e| int(e.submissions)
        ),
        field!(
            "submitters",
            Int,
            "submitters",
            "Distinct submitters behind the figures.",
            |e| int(e.submitters)
        ),
        field!(
            "demo",
            Bool,
            "",
            "True when the row is synthetic demo data (origin = demo).",
            |e| Value::Bool(e.demo)
        ),
        field!(
            "evidence_submission_id",
            Text,
            "",
            "One of the submissions behind the row (the earliest).",
            |e| text(&e.evidence.to_string())
        ),
    ]
}

pub fn submissions() -> Vec<Field<SubmissionRecord>> {
    vec![
        field!("submission_id", Text, "", "Submission id (the manifest's submission_id).", |s| text(&s.id.to_string())),
        field!("submitter", Text, "", "Handle of the submitter whose SSH key signed the bundle.", |s| text(&s.handle)),
        field!("bundle_sha256", Text, "", "SHA-256 of the bundle as uploaded; the bundle is downloadable at /submissions/{id}/bundle.tar.gz.", |s| text(&s.bundle_sha256)),
        field!("bundle_bytes", Int, "bytes", "Size of the uploaded bundle.", |s| int(s.bundle_bytes)),
        field!("received_at", Timestamp, "UTC", "When the service received the bundle.", |s| Value::Timestamp(s.received_at.timestamp_millis())),
        field!("status", Text, "", "Review status; a snapshot holds accepted submissions only.", |s| text(s.status.as_str())),
        field!("demo", Bool, "", "True for the service's synthetic demo data.", |s| Value::Bool(s.is_demo)),
        field!("gpu_id", Text, "", "GPU catalogue id.", |s| text(&gpu_id(s))),
        field!("gpu_name", Text, "", "GPU name as NVML reports it.", |s| text(&s.gpu_name)),
        field!("run_name", Text, "", "Name of the harness result folder.", |s| text(&s.run_name)),
        field!("iterations", Int, "iterations", "Iterations the submission holds (rows in runs).", |s| int(s.iterations)),
        field!("protocol", Text, "", "The protocol the runs followed, as JSON (version, batch_prompts, server_duration_s, max_tokens, temperature, context_length, precision).", |s| text(&s.protocol.as_ref().map(|p| serde_json::to_string(p).unwrap_or_default()).unwrap_or_default())),
        field!("content_sha256", Text, "", "SHA-256 over the harness files' paths and digests (the manifest left out): the same run packed twice has one content digest.", |s| text(s.content_sha256.as_deref().unwrap_or(""))),
        field!("power_samples", Int, "samples", "GPU power samples behind the submission's iterations.", |s| int(s.power_samples)),
        field!("energy_rule", Int, "", "The energy rule that derived the submission's figures (see runs.energy_rule).", |s| Value::Int(Some(s.energy_rule))),
        field!("log_index", Int, "", "The submission's leaf in the transparency log (line log_index + 1 of log.jsonl).", |s| int(s.log_index.unwrap_or(u64::MAX))),
    ]
}

/// The GPU catalogue the snapshot's submissions were judged by: every row,
/// shipped or added by a maintainer, with its source.
pub fn gpus() -> Vec<Field<GpuSpec>> {
    vec![
        field!("gpu_id", Text, "", "GPU catalogue id, as runs.gpu_id and the other tables name it.", |g| text(&g.id)),
        field!("nvml_name", Text, "", "Product name as NVML (nvidia-smi) reports it.", |g| text(&g.nvml_name)),
        field!("added", Bool, "", "True for a GPU a maintainer added to the service's catalogue (the log holds a catalogue_add decision for it); false for a row shipped with the release.", |g| Value::Bool(!wattcounts_rules::catalog::shipped().iter().any(|s| s.nvml_name == g.nvml_name))),
        field!("architecture", Text, "", "GPU architecture.", |g| text(&g.architecture)),
        field!("form_factor", Text, "", "SXM, PCIe, NVL, Superchip, Workstation or Consumer.", |g| text(&g.form_factor)),
        field!("release_date", Text, "", "Release date, YYYY-MM-DD.", |g| text(&g.release_date)),
        field!("tdp_w", Float, "W", "Board power (TDP); the physics checks hold mean and peak power to multiples of it.", |g| Value::Float(Some(g.tdp_w))),
        field!("idle_w", Float, "W", "Board power with a model loaded and no work; the idle-floor check and the estimator read it.", |g| Value::Float(Some(g.idle_w))),
        field!("idle_basis", Text, "", "Where idle_w comes from: wattgpu (the paper's GPUs), measured (a published measurement named in source) or tdp_share_0.15 (15 % of TDP).", |g| text(&g.idle_basis)),
        field!("memory_gb", Float, "GB", "Memory size.", |g| Value::Float(Some(g.memory_gb))),
        field!("memory_type", Text, "", "HBM2, HBM2e, HBM3, HBM3e, GDDR5, GDDR6, GDDR6X or GDDR7.", |g| text(&g.memory_type)),
        field!("memory_bus_bits", Float, "bits", "Memory interface width.", |g| Value::Float(Some(g.memory_bus_bits))),
        field!("memory_bandwidth_gb_s", Float, "GB/s", "Memory bandwidth.", |g| Value::Float(Some(g.memory_bandwidth_gb_s))),
        field!("fp16_tflops", Float, "TFLOPS", "FP16 throughput without tensor cores, as TechPowerUp's database states it.", |g| Value::Float(Some(g.fp16_tflops))),
        field!("tensor_tflops", Float, "TFLOPS", "Dense FP16 tensor-core throughput from NVIDIA's datasheet.", |g| Value::Float(Some(g.tensor_tflops))),
        field!("base_clock_mhz", Float, "MHz", "Base clock.", |g| Value::Float(Some(g.base_clock_mhz))),
        field!("boost_clock_mhz", Float, "MHz", "Boost clock.", |g| Value::Float(Some(g.boost_clock_mhz))),
        field!("transistor_count_m", Float, "millions", "Transistors.", |g| Value::Float(Some(g.transistor_count_m))),
        field!("source", Text, "", "The datasheet or spec-database page the figures come from.", |g| text(&g.source)),
    ]
}

/// The power traces are written by a dedicated fast path (millions of
/// rows); these are their columns.
pub const POWER_TRACES: &[ColumnDoc] = &[
    doc(
        "submission_id",
        Kind::Text,
        "",
        "Submission the trace came in.",
    ),
    doc("model", Kind::Text, "", "Hugging Face model id."),
    doc("scenario", Kind::Text, "", "batch or server."),
    doc(
        "lambda_qps",
        Kind::Float,
        "req/s",
        "Arrival rate (server); empty for batch.",
    ),
    doc(
        "iteration",
        Kind::Int,
        "",
        "Iteration number within the configuration.",
    ),
    doc(
        "t_s",
        Kind::Float,
        "s",
        "Time of the sample from the start of the measurement window (sample index × 0.1 s).",
    ),
    doc(
        "watts",
        Kind::Float,
        "W",
        "GPU power draw sample (NVML, 10 Hz).",
    ),
];

pub fn docs<R>(fields: &[Field<R>]) -> Vec<ColumnDoc> {
    fields.iter().map(|f| f.doc).collect()
}
