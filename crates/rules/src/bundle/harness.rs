//! The harness CSVs: one results file per scenario and model (one row per
//! iteration) and one details file (one row per request).
//!
//! List-valued cells are Python list literals (`"[61.2, 63.9]"`). The power
//! trace and the other 10 Hz series are reduced to running statistics while
//! they are parsed, so a run of many thousand samples never becomes a vector.

use std::collections::HashMap;

use crate::rejection::{Detail, Rejection};

pub const BATCH_RESULTS: &str = "llm_batch_optimized_results.csv";
pub const BATCH_DETAILS: &str = "llm_batch_optimized_details.csv";
pub const SERVER_RESULTS: &str = "llm_server_optimized_results.csv";
pub const SERVER_DETAILS: &str = "llm_server_optimized_details.csv";

pub use crate::domain::Scenario;

/// The value of `key=` in vLLM's `SamplingParams(...)` repr.
pub fn sampling_param<'a>(repr: &'a str, key: &str) -> Option<&'a str> {
    let needle = format!("{key}=");
    let mut search = repr;
    loop {
        let at = search.find(&needle)?;
        // Match whole names only (`seed=` but not `min_seed=`).
        let before = search[..at].chars().next_back();
        let rest = &search[at + needle.len()..];
        if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_')) {
            let end = rest.find([',', ')']).unwrap_or(rest.len());
            return Some(rest[..end].trim());
        }
        search = rest;
    }
}

/// What a harness file name says about its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Results(Scenario),
    Details(Scenario),
}

pub fn classify(file_name: &str) -> Option<FileKind> {
    match file_name {
        BATCH_RESULTS => Some(FileKind::Results(Scenario::Batch)),
        BATCH_DETAILS => Some(FileKind::Details(Scenario::Batch)),
        SERVER_RESULTS => Some(FileKind::Results(Scenario::Server)),
        SERVER_DETAILS => Some(FileKind::Details(Scenario::Server)),
        _ => None,
    }
}

pub const COMMON_RESULT_COLUMNS: &[&str] = &[
    "measurement_duration",
    "measurement_timestamp",
    "measurement_datetime",
    "gpu_0_memory_used_mb",
    "gpu_0_utilization_percent",
    "gpu_0_power_draw_watts",
    "gpu_0_temp",
    "gpu_0_clock",
    "cpu_memory_used_mb",
    "cpu_utilization_percent",
    "cpu_energy",
    "dram_energy",
    "gpu_energy",
    "disk_energy",
    "time_to_first_token_seconds_events",
    "e2e_request_latency_seconds_events",
    "tokens_per_second_events",
    "request_success_total",
    "request_failure_total",
    "prompt_tokens_total",
    "generation_tokens_total",
    "request_prompt_tokens",
    "request_generation_tokens",
];
pub const BATCH_RESULT_TAIL: &[&str] = &[
    "iteration",
    "sampling_params",
    "model",
    "queries_submitted",
    "processed_queries",
];
pub const SERVER_RESULT_TAIL: &[&str] = &[
    "sampling_params",
    "model",
    "lambda_qps",
    "iteration",
    "processed_queries",
    "queries_submitted",
];
pub const BATCH_DETAIL_COLUMNS: &[&str] = &[
    "iteration",
    "model",
    "query_id",
    "response_text",
    "timestamp",
];
pub const SERVER_DETAIL_COLUMNS: &[&str] = &[
    "iteration",
    "query_id",
    "model",
    "lambda_qps",
    "queued_time",
    "response_text",
    "prompt_tokens",
    "generation_tokens",
    "ttft_seconds",
    "e2e_latency_seconds",
    "queue_time_seconds",
    "tokens_per_second",
    "arrival_time",
    "queued_ts",
    "scheduled_ts",
    "first_token_ts",
    "last_token_ts",
    "is_corrupted",
];

pub fn result_columns(s: Scenario) -> Vec<&'static str> {
    let tail = match s {
        Scenario::Batch => BATCH_RESULT_TAIL,
        Scenario::Server => SERVER_RESULT_TAIL,
    };
    COMMON_RESULT_COLUMNS.iter().chain(tail).copied().collect()
}

pub fn detail_columns(s: Scenario) -> &'static [&'static str] {
    match s {
        Scenario::Batch => BATCH_DETAIL_COLUMNS,
        Scenario::Server => SERVER_DETAIL_COLUMNS,
    }
}

/// Running statistics of one list cell.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SeriesStats {
    pub n: u64,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
    pub first: f64,
    pub last: f64,
}

impl SeriesStats {
    /// The statistics of `values`, as a list cell holding them gives.
    pub fn of(values: &[f64]) -> Self {
        let mut s = SeriesStats::default();
        for &v in values {
            s.push(v);
        }
        s
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / self.n as f64
        }
    }
    /// The trapezoid rule over the samples taken `period_s` apart (what
    /// `numpy.trapezoid` gives at evenly spaced timestamps): the span is
    /// one period shorter than n periods, and the first and last samples
    /// count half. Fewer than two samples span no time and give 0.
    pub fn trapezoid(&self, period_s: f64) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            period_s * (self.sum - (self.first + self.last) / 2.0)
        }
    }
    fn push(&mut self, v: f64) {
        self.last = v;
        if self.n == 0 {
            self.min = v;
            self.max = v;
            self.first = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.sum += v;
        self.n += 1;
    }
}

/// One row of a results CSV: one measured iteration.
#[derive(Debug, Clone, PartialEq)]
pub struct IterationRow {
    pub file: String,
    pub line: u64,
    pub scenario: Scenario,
    pub model: String,
    /// Arrival rate, server only.
    pub lambda_qps: Option<f64>,
    pub iteration: u32,
    pub duration_s: f64,
    pub started_at_unix: f64,
    pub started_at: String,
    pub power_w: SeriesStats,
    pub temperature_c: SeriesStats,
    pub gpu_memory_mb: SeriesStats,
    pub gpu_utilization_pct: SeriesStats,
    pub sm_clock_mhz: SeriesStats,
    pub cpu_memory_mb: SeriesStats,
    pub cpu_utilization_pct: SeriesStats,
    pub cpu_energy_j: f64,
    pub dram_energy_j: f64,
    /// The harness's own `gpu_energy`; the service recomputes it from the trace.
    pub reported_gpu_energy_j: f64,
    pub disk_energy_j: f64,
    pub ttft_s: Vec<f64>,
    pub e2e_s: Vec<f64>,
    pub tokens_per_s: Vec<f64>,
    pub requests_ok: u64,
    pub requests_failed: u64,
    pub prompt_tokens_total: u64,
    pub generation_tokens_total: u64,
    pub request_prompt_tokens: Vec<f64>,
    pub request_generation_tokens: Vec<f64>,
    pub sampling_params: String,
    pub queries_submitted: u64,
    pub processed_queries: u64,
}

/// Key of an iteration inside one model folder and scenario.
pub type IterationKey = (u32, Option<u64>);

pub fn iteration_key(iteration: u32, lambda_qps: Option<f64>) -> IterationKey {
    (iteration, lambda_qps.map(f64::to_bits))
}

/// Requests per iteration found in a details CSV.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DetailCounts {
    pub model: Option<String>,
    pub requests: HashMap<IterationKey, u64>,
}

struct Columns<'a> {
    file: &'a str,
    index: HashMap<&'static str, usize>,
}

impl<'a> Columns<'a> {
    fn new(
        file: &'a str,
        headers: &csv::ByteRecord,
        wanted: &[&'static str],
    ) -> Result<Self, Rejection> {
        let names: Vec<String> = headers
            .iter()
            .map(|h| String::from_utf8_lossy(h).trim().to_string())
            .collect();
        let mut index = HashMap::new();
        let mut missing = Vec::new();
        for &w in wanted {
            match names.iter().position(|n| n == w) {
                Some(i) => {
                    index.insert(w, i);
                }
                None => missing.push(w),
            }
        }
        if !missing.is_empty() {
            return Err(Rejection::invalid(
                "csv_missing_column",
                format!("{file} lacks {} required column(s)", missing.len()),
            )
            .with_all(missing.iter().map(|m| {
                Detail::new(format!("column '{m}' is missing from the header"))
                    .file(file)
                    .row(1)
                    .column(*m)
            })));
        }
        Ok(Columns { file, index })
    }

    fn cell<'r>(
        &self,
        rec: &'r csv::ByteRecord,
        line: u64,
        col: &'static str,
    ) -> Result<&'r [u8], Rejection> {
        rec.get(self.index[col]).ok_or_else(|| {
            Rejection::invalid("csv_bad_row", format!("{} has a short row", self.file)).with(
                Detail::new(format!("row has {} cells, '{col}' is missing", rec.len()))
                    .file(self.file)
                    .row(line)
                    .column(col),
            )
        })
    }

    fn text(
        &self,
        rec: &csv::ByteRecord,
        line: u64,
        col: &'static str,
    ) -> Result<String, Rejection> {
        let b = self.cell(rec, line, col)?;
        let t = std::str::from_utf8(b)
            .map_err(|_| self.err("csv_bad_text", line, col, "cell is not valid UTF-8".into()))?;
        // Control characters (NUL and the like; a model id not even tab or
        // newline) would be stored and then written into pages and CSVs.
        let allowed = |c: char| col != "model" && matches!(c, '\t' | '\n' | '\r');
        if let Some(c) = t.chars().find(|c| c.is_control() && !allowed(*c)) {
            return Err(self.err(
                "csv_control_character",
                line,
                col,
                format!("cell holds the control character U+{:04X}", c as u32),
            ));
        }
        Ok(t.to_owned())
    }

    fn number(
        &self,
        rec: &csv::ByteRecord,
        line: u64,
        col: &'static str,
    ) -> Result<f64, Rejection> {
        let b = self.cell(rec, line, col)?;
        parse_number(b).ok_or_else(|| {
            self.err(
                "csv_bad_number",
                line,
                col,
                format!("'{}' is not a finite number", String::from_utf8_lossy(b)),
            )
        })
    }

    fn count(&self, rec: &csv::ByteRecord, line: u64, col: &'static str) -> Result<u64, Rejection> {
        let v = self.number(rec, line, col)?;
        if v < 0.0 || v.fract() != 0.0 || v > 1e15 {
            return Err(self.err(
                "csv_bad_number",
                line,
                col,
                format!("{v} is not a non-negative whole number"),
            ));
        }
        Ok(v as u64)
    }

    fn iteration(&self, rec: &csv::ByteRecord, line: u64) -> Result<u32, Rejection> {
        let n = self.count(rec, line, "iteration")?;
        u32::try_from(n).map_err(|_| {
            self.err(
                "csv_bad_number",
                line,
                "iteration",
                format!("iteration {n} is too large"),
            )
        })
    }

    fn stats(
        &self,
        rec: &csv::ByteRecord,
        line: u64,
        col: &'static str,
    ) -> Result<SeriesStats, Rejection> {
        let b = self.cell(rec, line, col)?;
        let mut s = SeriesStats::default();
        parse_list(b, |v| s.push(v)).map_err(|m| self.err("csv_bad_list", line, col, m))?;
        Ok(s)
    }

    fn list(
        &self,
        rec: &csv::ByteRecord,
        line: u64,
        col: &'static str,
    ) -> Result<Vec<f64>, Rejection> {
        let b = self.cell(rec, line, col)?;
        let mut out = Vec::new();
        parse_list(b, |v| out.push(v)).map_err(|m| self.err("csv_bad_list", line, col, m))?;
        Ok(out)
    }

    fn err(&self, code: &'static str, line: u64, col: &'static str, message: String) -> Rejection {
        Rejection::invalid(
            code,
            format!("{} row {line}, column '{col}': {message}", self.file),
        )
        .with(Detail::new(message).file(self.file).row(line).column(col))
    }
}

fn parse_number(b: &[u8]) -> Option<f64> {
    // fast-float2 parses the whole slice (it rejects trailing junk) and is
    // several times quicker than str::parse on the 10 Hz trace cells.
    let v: f64 = fast_float2::parse(b.trim_ascii()).ok()?;
    v.is_finite().then_some(v)
}

/// Parses a Python list literal of numbers, calling `f` for each element.
pub fn parse_list(cell: &[u8], mut f: impl FnMut(f64)) -> Result<(), String> {
    let trimmed = cell.trim_ascii();
    let inner = trimmed
        .strip_prefix(b"[")
        .and_then(|r| r.strip_suffix(b"]"))
        .ok_or_else(|| {
            let shown: String = String::from_utf8_lossy(&trimmed[..trimmed.len().min(40)]).into();
            format!("expected a Python list like [1.0, 2.5], found '{shown}'")
        })?;
    if inner.trim_ascii().is_empty() {
        return Ok(());
    }
    for (i, token) in inner.split(|&b| b == b',').enumerate() {
        match parse_number(token) {
            Some(v) => f(v),
            None => {
                return Err(format!(
                    "list element {} ('{}') is not a finite number",
                    i + 1,
                    String::from_utf8_lossy(token.trim_ascii())
                ))
            }
        }
    }
    Ok(())
}

fn reader(data: &[u8]) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(data)
}

fn headers(file: &str, rdr: &mut csv::Reader<&[u8]>) -> Result<csv::ByteRecord, Rejection> {
    let h = rdr.byte_headers().map_err(|e| csv_error(file, e))?.clone();
    if h.is_empty() || (h.len() == 1 && h.get(0).is_some_and(|c| c.is_empty())) {
        return Err(Rejection::invalid("csv_empty", format!("{file} is empty"))
            .with(Detail::new("no header row").file(file).row(1)));
    }
    Ok(h)
}

fn csv_error(file: &str, e: csv::Error) -> Rejection {
    let line = e.position().map(|p| p.line());
    let mut d = Detail::new(e.to_string()).file(file);
    if let Some(l) = line {
        d = d.row(l);
    }
    Rejection::invalid("csv_unreadable", format!("{file} is not readable CSV")).with(d)
}

/// Reads a CSV that must have the `wanted` columns, handing each record and
/// its line number to `row`; stops at the first error.
fn each_row<'f>(
    file: &'f str,
    data: &[u8],
    wanted: &[&'static str],
    mut row: impl FnMut(&Columns<'f>, &csv::ByteRecord, u64) -> Result<(), Rejection>,
) -> Result<(), Rejection> {
    let mut rdr = reader(data);
    let cols = Columns::new(file, &headers(file, &mut rdr)?, wanted)?;
    let mut rec = csv::ByteRecord::new();
    loop {
        match rdr.read_byte_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_error(file, e)),
        }
        let line = rec.position().map_or(0, |p| p.line());
        row(&cols, &rec, line)?;
    }
    Ok(())
}

pub fn parse_results(
    file: &str,
    data: &[u8],
    scenario: Scenario,
) -> Result<Vec<IterationRow>, Rejection> {
    let wanted = result_columns(scenario);
    let mut rows = Vec::new();
    each_row(file, data, &wanted, |c, rec, line| {
        let lambda_qps = match scenario {
            Scenario::Batch => None,
            Scenario::Server => {
                let l = c.number(rec, line, "lambda_qps")?;
                if l <= 0.0 {
                    return Err(c.err(
                        "csv_bad_number",
                        line,
                        "lambda_qps",
                        format!("arrival rate {l} must be positive"),
                    ));
                }
                Some(l)
            }
        };
        let iteration = c.iteration(rec, line)?;
        rows.push(IterationRow {
            file: file.to_string(),
            line,
            scenario,
            model: c.text(rec, line, "model")?,
            lambda_qps,
            iteration,
            duration_s: c.number(rec, line, "measurement_duration")?,
            started_at_unix: c.number(rec, line, "measurement_timestamp")?,
            started_at: c.text(rec, line, "measurement_datetime")?,
            power_w: c.stats(rec, line, "gpu_0_power_draw_watts")?,
            temperature_c: c.stats(rec, line, "gpu_0_temp")?,
            gpu_memory_mb: c.stats(rec, line, "gpu_0_memory_used_mb")?,
            gpu_utilization_pct: c.stats(rec, line, "gpu_0_utilization_percent")?,
            sm_clock_mhz: c.stats(rec, line, "gpu_0_clock")?,
            cpu_memory_mb: c.stats(rec, line, "cpu_memory_used_mb")?,
            cpu_utilization_pct: c.stats(rec, line, "cpu_utilization_percent")?,
            cpu_energy_j: c.number(rec, line, "cpu_energy")?,
            dram_energy_j: c.number(rec, line, "dram_energy")?,
            reported_gpu_energy_j: c.number(rec, line, "gpu_energy")?,
            disk_energy_j: c.number(rec, line, "disk_energy")?,
            ttft_s: c.list(rec, line, "time_to_first_token_seconds_events")?,
            e2e_s: c.list(rec, line, "e2e_request_latency_seconds_events")?,
            tokens_per_s: c.list(rec, line, "tokens_per_second_events")?,
            requests_ok: c.count(rec, line, "request_success_total")?,
            requests_failed: c.count(rec, line, "request_failure_total")?,
            prompt_tokens_total: c.count(rec, line, "prompt_tokens_total")?,
            generation_tokens_total: c.count(rec, line, "generation_tokens_total")?,
            request_prompt_tokens: c.list(rec, line, "request_prompt_tokens")?,
            request_generation_tokens: c.list(rec, line, "request_generation_tokens")?,
            sampling_params: c.text(rec, line, "sampling_params")?,
            queries_submitted: c.count(rec, line, "queries_submitted")?,
            processed_queries: c.count(rec, line, "processed_queries")?,
        });
        Ok(())
    })?;
    if rows.is_empty() {
        return Err(
            Rejection::invalid("csv_empty", format!("{file} has a header but no rows"))
                .with(Detail::new("no data rows").file(file).row(2)),
        );
    }
    Ok(rows)
}

/// One iteration's GPU power trace (10 Hz samples), as dataset snapshots
/// publish it; ingest keeps only running statistics of it.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerTrace {
    pub model: String,
    pub lambda_qps: Option<f64>,
    pub iteration: u32,
    pub watts: Vec<f64>,
}

/// The harness samples NVML power at 10 Hz.
pub const POWER_SAMPLES_PER_S: f64 = 10.0;

/// The power trace of every row of a results CSV, in file order.
pub fn parse_power_traces(
    file: &str,
    data: &[u8],
    scenario: Scenario,
) -> Result<Vec<PowerTrace>, Rejection> {
    let mut wanted = vec!["model", "iteration", "gpu_0_power_draw_watts"];
    if scenario == Scenario::Server {
        wanted.push("lambda_qps");
    }
    let mut traces = Vec::new();
    each_row(file, data, &wanted, |c, rec, line| {
        let iteration = c.iteration(rec, line)?;
        traces.push(PowerTrace {
            model: c.text(rec, line, "model")?,
            lambda_qps: match scenario {
                Scenario::Batch => None,
                Scenario::Server => Some(c.number(rec, line, "lambda_qps")?),
            },
            iteration,
            watts: c.list(rec, line, "gpu_0_power_draw_watts")?,
        });
        Ok(())
    })?;
    Ok(traces)
}

pub fn parse_details(
    file: &str,
    data: &[u8],
    scenario: Scenario,
) -> Result<DetailCounts, Rejection> {
    let wanted = detail_columns(scenario);
    let mut out = DetailCounts::default();
    each_row(file, data, wanted, |c, rec, line| {
        let iteration = c.iteration(rec, line)?;
        let model = c.cell(rec, line, "model")?;
        match &out.model {
            Some(m) if m.as_bytes() == model => {}
            Some(m) => {
                return Err(c.err(
                    "csv_mixed_models",
                    line,
                    "model",
                    format!(
                        "'{}' differs from '{m}' earlier in the file",
                        String::from_utf8_lossy(model)
                    ),
                ))
            }
            None => out.model = Some(c.text(rec, line, "model")?),
        }
        let lambda = match scenario {
            Scenario::Batch => None,
            Scenario::Server => {
                // Server details carry per-request figures: check they are numbers.
                for col in [
                    "prompt_tokens",
                    "generation_tokens",
                    "ttft_seconds",
                    "e2e_latency_seconds",
                ] {
                    c.number(rec, line, col)?;
                }
                Some(c.number(rec, line, "lambda_qps")?)
            }
        };
        *out.requests
            .entry(iteration_key(iteration, lambda))
            .or_default() += 1;
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value for each results column, each different, so that a field
    /// read from the wrong column shows.
    fn cell(col: &str) -> &'static str {
        match col {
            "measurement_duration" => "2.5",
            "measurement_timestamp" => "1700000000.5",
            "measurement_datetime" => "2023-11-14 22:13:20",
            "gpu_0_memory_used_mb" => "[1000.0, 1002.0]",
            "gpu_0_utilization_percent" => "[90.0, 92.0, 94.0]",
            "gpu_0_power_draw_watts" => "[60.0, 62.0, 64.0, 66.0]",
            "gpu_0_temp" => "[40.0]",
            "gpu_0_clock" => "[1800.0, 1810.0, 1820.0, 1830.0, 1840.0]",
            "cpu_memory_used_mb" => "[2000.0, 2001.0, 2002.0, 2003.0, 2004.0, 2005.0]",
            "cpu_utilization_percent" => "[]",
            "cpu_energy" => "11.5",
            "dram_energy" => "2.25",
            "gpu_energy" => "150.0",
            "disk_energy" => "0.5",
            "time_to_first_token_seconds_events" => "[0.1, 0.2]",
            "e2e_request_latency_seconds_events" => "[1.0, 2.0, 3.0]",
            "tokens_per_second_events" => "[100.0]",
            "request_success_total" => "4",
            "request_failure_total" => "1",
            "prompt_tokens_total" => "40",
            "generation_tokens_total" => "46",
            "request_prompt_tokens" => "[10.0, 30.0]",
            "request_generation_tokens" => "[20.0, 26.0, 0.0]",
            "iteration" => "2",
            "sampling_params" => "SamplingParams(n=1, max_tokens=256)",
            "model" => "Qwen/Qwen2.5-0.5B-Instruct",
            "queries_submitted" => "5",
            "processed_queries" => "4",
            "lambda_qps" => "0.33",
            other => panic!("no value for {other}"),
        }
    }

    /// A results CSV of `scenario`: the header, then one row per entry of
    /// `rows`, each the default cells with some replaced.
    fn results(scenario: Scenario, rows: &[&[(&str, &str)]]) -> Vec<u8> {
        let cols = result_columns(scenario);
        let quote = |v: &str| {
            if v.contains([',', '"', '\n']) {
                format!("\"{}\"", v.replace('"', "\"\""))
            } else {
                v.to_string()
            }
        };
        let mut out = cols.join(",") + "\n";
        for changes in rows {
            let row: Vec<String> = cols
                .iter()
                .map(|c| {
                    quote(
                        changes
                            .iter()
                            .find(|(k, _)| k == c)
                            .map_or(cell(c), |(_, v)| v),
                    )
                })
                .collect();
            out += &(row.join(",") + "\n");
        }
        out.into_bytes()
    }

    const FILE: &str = "m/llm_batch_optimized_results.csv";

    fn refused(scenario: Scenario, rows: &[&[(&str, &str)]]) -> Rejection {
        parse_results(FILE, &results(scenario, rows), scenario).expect_err("refused")
    }

    #[test]
    fn every_results_column_lands_in_its_field() {
        let rows = parse_results(FILE, &results(Scenario::Batch, &[&[]]), Scenario::Batch).unwrap();
        let r = &rows[0];
        assert_eq!(
            (r.file.as_str(), r.line, r.scenario),
            (FILE, 2, Scenario::Batch)
        );
        assert_eq!(
            (r.model.as_str(), r.lambda_qps, r.iteration),
            ("Qwen/Qwen2.5-0.5B-Instruct", None, 2)
        );
        assert_eq!((r.duration_s, r.started_at_unix), (2.5, 1_700_000_000.5));
        assert_eq!(r.started_at, "2023-11-14 22:13:20");
        // Each list column by its count of samples: 2, 3, 4, 1, 5, 6, 0.
        let counts = [
            r.gpu_memory_mb.n,
            r.gpu_utilization_pct.n,
            r.power_w.n,
            r.temperature_c.n,
            r.sm_clock_mhz.n,
            r.cpu_memory_mb.n,
            r.cpu_utilization_pct.n,
        ];
        assert_eq!(counts, [2, 3, 4, 1, 5, 6, 0]);
        assert_eq!(
            (r.power_w.sum, r.power_w.first, r.power_w.last),
            (252.0, 60.0, 66.0)
        );
        assert_eq!((r.power_w.min, r.power_w.max), (60.0, 66.0));
        assert_eq!(
            (
                r.cpu_energy_j,
                r.dram_energy_j,
                r.reported_gpu_energy_j,
                r.disk_energy_j
            ),
            (11.5, 2.25, 150.0, 0.5)
        );
        assert_eq!(
            (r.ttft_s.clone(), r.e2e_s.clone(), r.tokens_per_s.clone()),
            (vec![0.1, 0.2], vec![1.0, 2.0, 3.0], vec![100.0])
        );
        assert_eq!(
            (
                r.requests_ok,
                r.requests_failed,
                r.prompt_tokens_total,
                r.generation_tokens_total
            ),
            (4, 1, 40, 46)
        );
        assert_eq!(
            (
                r.request_prompt_tokens.clone(),
                r.request_generation_tokens.clone()
            ),
            (vec![10.0, 30.0], vec![20.0, 26.0, 0.0])
        );
        assert_eq!(r.sampling_params, "SamplingParams(n=1, max_tokens=256)");
        assert_eq!((r.queries_submitted, r.processed_queries), (5, 4));
        // Server rows read their rate; a second row is line 3.
        let rows = parse_results(
            FILE,
            &results(Scenario::Server, &[&[], &[("lambda_qps", "2.0")]]),
            Scenario::Server,
        )
        .unwrap();
        assert_eq!(
            rows.iter()
                .map(|r| (r.line, r.lambda_qps))
                .collect::<Vec<_>>(),
            vec![(2, Some(0.33)), (3, Some(2.0))]
        );
    }

    #[test]
    fn each_bad_cell_is_named_by_row_and_column() {
        // (scenario, cells changed in row 3, code, column, message)
        type Case<'a> = (
            Scenario,
            &'a [(&'a str, &'a str)],
            &'a str,
            &'a str,
            &'a str,
        );
        let cases: [Case; 10] = [
            (
                Scenario::Batch,
                &[("gpu_energy", "lots")],
                "csv_bad_number",
                "gpu_energy",
                "'lots' is not a finite number",
            ),
            (
                Scenario::Batch,
                &[("gpu_energy", "inf")],
                "csv_bad_number",
                "gpu_energy",
                "'inf' is not a finite number",
            ),
            (
                Scenario::Batch,
                &[("request_success_total", "-1")],
                "csv_bad_number",
                "request_success_total",
                "-1 is not a non-negative whole number",
            ),
            (
                Scenario::Batch,
                &[("request_success_total", "2.5")],
                "csv_bad_number",
                "request_success_total",
                "2.5 is not a non-negative whole number",
            ),
            (
                Scenario::Batch,
                &[("prompt_tokens_total", "2e15")],
                "csv_bad_number",
                "prompt_tokens_total",
                "2000000000000000 is not a non-negative whole number",
            ),
            (
                Scenario::Batch,
                &[("iteration", "5000000000")],
                "csv_bad_number",
                "iteration",
                "iteration 5000000000 is too large",
            ),
            (
                Scenario::Server,
                &[("lambda_qps", "0")],
                "csv_bad_number",
                "lambda_qps",
                "arrival rate 0 must be positive",
            ),
            (
                Scenario::Batch,
                &[("gpu_0_temp", "40.0")],
                "csv_bad_list",
                "gpu_0_temp",
                "expected a Python list like [1.0, 2.5], found '40.0'",
            ),
            (
                Scenario::Batch,
                &[("model", "Qwen\tX")],
                "csv_control_character",
                "model",
                "cell holds the control character U+0009",
            ),
            (
                Scenario::Batch,
                &[("sampling_params", "a\u{1}b")],
                "csv_control_character",
                "sampling_params",
                "cell holds the control character U+0001",
            ),
        ];
        for (scenario, changes, code, col, message) in cases {
            let r = refused(scenario, &[&[], changes]);
            assert_eq!(r.code, code, "{col}: {}", r.message);
            assert_eq!(
                r.message,
                format!("{FILE} row 3, column '{col}': {message}")
            );
            let d = &r.details[0];
            assert_eq!(
                (d.file.as_deref(), d.row, d.column.as_deref()),
                (Some(FILE), Some(3), Some(col))
            );
        }
        // Outside a model id, tab and newline are text.
        let ok = parse_results(
            FILE,
            &results(Scenario::Batch, &[&[("sampling_params", "a\tb\nc")]]),
            Scenario::Batch,
        )
        .unwrap();
        assert_eq!(ok[0].sampling_params, "a\tb\nc");
        // A count at the edge of the bound, and zero, are whole numbers.
        let ok = parse_results(
            FILE,
            &results(
                Scenario::Batch,
                &[&[
                    ("prompt_tokens_total", "1e15"),
                    ("request_failure_total", "0"),
                ]],
            ),
            Scenario::Batch,
        )
        .unwrap();
        assert_eq!(
            (ok[0].prompt_tokens_total, ok[0].requests_failed),
            (1_000_000_000_000_000, 0)
        );
    }

    #[test]
    fn a_file_s_shape_is_refused_by_name() {
        let r = parse_results(FILE, b"", Scenario::Batch).unwrap_err();
        assert_eq!(
            (r.code, r.message.as_str()),
            ("csv_empty", "m/llm_batch_optimized_results.csv is empty")
        );
        // A lone empty header is no header; one real column, or an empty
        // first of several, is a header that lacks columns.
        let r = parse_results(FILE, b"\"\"\n1\n", Scenario::Batch).unwrap_err();
        assert_eq!(r.code, "csv_empty");
        for text in [&b"model\n"[..], b",model\n"] {
            let r = parse_results(FILE, text, Scenario::Batch).unwrap_err();
            assert_eq!(
                r.code,
                "csv_missing_column",
                "{}",
                String::from_utf8_lossy(text)
            );
        }
        let header_only = results(Scenario::Batch, &[]);
        let r = parse_results(FILE, &header_only, Scenario::Batch).unwrap_err();
        assert_eq!((r.code, r.details[0].row), ("csv_empty", Some(2)));
        assert_eq!(r.message, format!("{FILE} has a header but no rows"));
        // Two columns gone: each named on the header row.
        let text = String::from_utf8(results(Scenario::Batch, &[&[]])).unwrap();
        let text = text
            .replacen("gpu_energy", "gpu_energy_x", 1)
            .replacen("model", "modelx", 1);
        let r = parse_results(FILE, text.as_bytes(), Scenario::Batch).unwrap_err();
        assert_eq!(
            (r.code, r.message.as_str()),
            (
                "csv_missing_column",
                "m/llm_batch_optimized_results.csv lacks 2 required column(s)"
            )
        );
        let named: Vec<_> = r
            .details
            .iter()
            .map(|d| (d.column.as_deref(), d.row))
            .collect();
        assert_eq!(
            named,
            vec![(Some("gpu_energy"), Some(1)), (Some("model"), Some(1))]
        );
        // A short row: the first column it lacks, by name and row.
        let short = format!("{}\n2.5,1.0\n", result_columns(Scenario::Batch).join(","));
        let r = parse_results(FILE, short.as_bytes(), Scenario::Batch).unwrap_err();
        assert_eq!((r.code, r.details[0].row), ("csv_bad_row", Some(2)));
        assert!(
            r.details[0].message.starts_with("row has 2 cells"),
            "{}",
            r.details[0].message
        );
        // Not UTF-8 where text is read.
        let mut bytes = results(Scenario::Batch, &[&[("model", "QWEN")]]);
        let at = bytes.windows(4).position(|w| w == b"QWEN").unwrap();
        bytes[at] = 0xff;
        let r = parse_results(FILE, &bytes, Scenario::Batch).unwrap_err();
        assert_eq!(
            (r.code, r.details[0].column.as_deref()),
            ("csv_bad_text", Some("model"))
        );
        // Headers are matched trimmed.
        let spaced = String::from_utf8(results(Scenario::Batch, &[&[]]))
            .unwrap()
            .replacen("model", " model ", 1);
        assert!(parse_results(FILE, spaced.as_bytes(), Scenario::Batch).is_ok());
    }

    #[test]
    fn the_trapezoid_needs_two_samples() {
        // [10, 20] at 0.1 s: one span of 0.1 s at a mean 15 W = 1.5 J; [10,
        // 20, 30]: 0.1 · (60 − 20) = 4 J; one sample or none span no time.
        assert_eq!(SeriesStats::of(&[10.0, 20.0]).trapezoid(0.1), 1.5);
        assert!((SeriesStats::of(&[10.0, 20.0, 30.0]).trapezoid(0.1) - 4.0).abs() < 1e-12);
        assert_eq!(SeriesStats::of(&[10.0]).trapezoid(0.1), 0.0);
        assert_eq!(SeriesStats::of(&[]).trapezoid(0.1), 0.0);
        assert_eq!(SeriesStats::of(&[10.0, 20.0]).mean(), 15.0);
        assert_eq!(SeriesStats::of(&[]).mean(), 0.0);
    }

    #[test]
    fn files_are_classified_by_their_names() {
        assert_eq!(
            classify(BATCH_RESULTS),
            Some(FileKind::Results(Scenario::Batch))
        );
        assert_eq!(
            classify(BATCH_DETAILS),
            Some(FileKind::Details(Scenario::Batch))
        );
        assert_eq!(
            classify(SERVER_RESULTS),
            Some(FileKind::Results(Scenario::Server))
        );
        assert_eq!(
            classify(SERVER_DETAILS),
            Some(FileKind::Details(Scenario::Server))
        );
        assert_eq!(classify("notes.txt"), None);
        assert_eq!(detail_columns(Scenario::Batch), BATCH_DETAIL_COLUMNS);
        assert_eq!(detail_columns(Scenario::Server), SERVER_DETAIL_COLUMNS);
        assert_eq!(iteration_key(1, Some(0.5)), (1, Some(0.5f64.to_bits())));
        assert_eq!(
            sampling_param("SamplingParams(min_seed=1, seed=7)", "seed"),
            Some("7")
        );
        assert_eq!(
            sampling_param("SamplingParams(seed=7)", "temperature"),
            None
        );
        assert_eq!(
            sampling_param("x(max_tokens= 256 )", "max_tokens"),
            Some("256")
        );
    }

    #[test]
    fn power_traces_and_detail_counts() {
        let data = results(
            Scenario::Server,
            &[
                &[],
                &[("iteration", "3"), ("gpu_0_power_draw_watts", "[1.0]")],
            ],
        );
        let t = parse_power_traces("s.csv", &data, Scenario::Server).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].model.as_str(), t[0].lambda_qps, t[0].iteration),
            ("Qwen/Qwen2.5-0.5B-Instruct", Some(0.33), 2)
        );
        assert_eq!(
            (t[0].watts.clone(), t[1].watts.clone(), t[1].iteration),
            (vec![60.0, 62.0, 64.0, 66.0], vec![1.0], 3)
        );
        let batch = results(Scenario::Batch, &[&[]]);
        assert_eq!(
            parse_power_traces("b.csv", &batch, Scenario::Batch).unwrap()[0].lambda_qps,
            None
        );

        let detail = |rows: &[&str]| {
            format!(
                "iteration,model,query_id,response_text,timestamp\n{}",
                rows.join("\n")
            )
            .into_bytes()
        };
        let d = parse_details(
            "d.csv",
            &detail(&["0,m/a,1,x,1", "0,m/a,2,y,2", "1,m/a,3,z,3"]),
            Scenario::Batch,
        )
        .unwrap();
        assert_eq!(d.model.as_deref(), Some("m/a"));
        assert_eq!(
            (
                d.requests[&(0, None)],
                d.requests[&(1, None)],
                d.requests.len()
            ),
            (2, 1, 2)
        );
        let r = parse_details(
            "d.csv",
            &detail(&["0,m/a,1,x,1", "0,m/b,2,y,2"]),
            Scenario::Batch,
        )
        .unwrap_err();
        assert_eq!(r.code, "csv_mixed_models");
        assert_eq!(
            r.message,
            "d.csv row 3, column 'model': 'm/b' differs from 'm/a' earlier in the file"
        );
        // Server details: the per-request figures must be numbers.
        let head = SERVER_DETAIL_COLUMNS.join(",");
        let row = |ttft: &str| {
            SERVER_DETAIL_COLUMNS
                .iter()
                .map(|c| match *c {
                    "iteration" => "0",
                    "model" => "m/a",
                    "lambda_qps" => "0.5",
                    "ttft_seconds" => ttft,
                    "response_text" => "x",
                    _ => "1",
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        let ok = parse_details(
            "s.csv",
            format!("{head}\n{}\n{}\n", row("0.1"), row("0.2")).as_bytes(),
            Scenario::Server,
        )
        .unwrap();
        assert_eq!(ok.requests[&iteration_key(0, Some(0.5))], 2);
        let r = parse_details(
            "s.csv",
            format!("{head}\n{}\n", row("soon")).as_bytes(),
            Scenario::Server,
        )
        .unwrap_err();
        assert_eq!(
            (r.code, r.details[0].column.as_deref(), r.details[0].row),
            ("csv_bad_number", Some("ttft_seconds"), Some(2))
        );
    }

    #[test]
    fn list_cells() {
        let mut v = Vec::new();
        parse_list(b"[61.2, 63.9, 240.5]", |x| v.push(x)).unwrap();
        assert_eq!(v, vec![61.2, 63.9, 240.5]);
        v.clear();
        parse_list(b" [] ", |x| v.push(x)).unwrap();
        assert!(v.is_empty());
        parse_list(b"[1e-05, 3]", |x| v.push(x)).unwrap();
        assert_eq!(v, vec![1e-5, 3.0]);
        assert!(parse_list(b"61.2, 63.9", |_| {})
            .unwrap_err()
            .contains("Python list"));
        assert!(parse_list(b"[1.0, abc]", |_| {})
            .unwrap_err()
            .contains("element 2"));
        assert_eq!(
            parse_list(b"[1.0, nan]", |_| {}).unwrap_err(),
            "list element 2 ('nan') is not a finite number"
        );
        assert_eq!(
            parse_list(b"[1.0,, 2]", |_| {}).unwrap_err(),
            "list element 2 ('') is not a finite number"
        );
    }
}
