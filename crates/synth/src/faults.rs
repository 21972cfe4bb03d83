//! Single faults for fixtures: each one breaks exactly the rule of one
//! check and keeps the rest of the run consistent (when a power trace is
//! edited, `gpu_energy` is recomputed so the arithmetic check still holds).
//! Faults edit the first model's files, iteration 1 unless said otherwise.

use crate::folder::{model_dir_name, RunFolder};
use wattcounts_rules::bundle::harness::{self, Scenario};
use wattcounts_rules::catalog::GpuSpec;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    /// arithmetic.gpu_energy: gpu_energy 15 % above the trace's energy.
    GpuEnergyMismatch,
    /// arithmetic.token_totals: generation_tokens_total off by 7.
    TokenTotalMismatch,
    /// arithmetic.query_counts: processed_queries one short (batch).
    QueryCountMismatch,
    /// sampling.power_samples: half the power trace dropped.
    SparsePowerSamples,
    /// sampling.server_duration: a server run half as long as MAX_TEST_DURATION.
    ShortServerRun,
    /// physics.mean_power: a flat trace at 1.25 × TDP.
    PowerOverTdp,
    /// physics.peak_power: one sample at 2 × TDP.
    PowerSpike,
    /// physics.idle_floor: a flat trace at 0.3 × loaded-idle power.
    PowerBelowIdle,
    /// physics.energy_per_token: every iteration at the first server rate
    /// generated 1 token.
    OneTokenRun,
    /// physics.temperature: one sample at 101 °C.
    Overheated,
    /// identity.gpu_catalogue: nvidia-smi reports a GPU the catalogue lacks.
    UnknownGpu,
    /// identity.power_limit: current limit 70 % of the default, undeclared.
    LoweredPowerLimit,
    /// identity.model_catalogue: the first model renamed to one not in the catalogue.
    UnknownModel,
    /// method.sampling_params: temperature=0.7 in every results file.
    NonGreedySampling,
    /// method.sampling_params: seed=None in the batch results.
    UnseededSampling,
    /// method.iterations_minimum: the batch results keep only 2 iterations.
    TooFewIterations,
    /// method.iterations_configured: the config asks for 2 more iterations than run.
    FewerIterationsThanConfigured,
    /// method.start_temperature: an iteration starts at 72 °C.
    WarmStart,
    /// repeatability.batch_energy_cv: one batch iteration at 70 % power.
    UnrepeatableBatch,
    /// repeatability.server_power_cv: iteration 1 of the last server rate at 60 % power.
    UnrepeatableServer,
    /// arrivals.poisson: iteration 0 of the first rate draws arrivals at 4 × λ.
    ArrivalBurst,
    /// consistency.robust_z: every power sample halved (consistent, but far
    /// from accepted results of the same GPU).
    HalfPower,
}

impl Fault {
    pub const ALL: &'static [Fault] = &[
        Fault::GpuEnergyMismatch,
        Fault::TokenTotalMismatch,
        Fault::QueryCountMismatch,
        Fault::SparsePowerSamples,
        Fault::ShortServerRun,
        Fault::PowerOverTdp,
        Fault::PowerSpike,
        Fault::PowerBelowIdle,
        Fault::OneTokenRun,
        Fault::Overheated,
        Fault::UnknownGpu,
        Fault::LoweredPowerLimit,
        Fault::UnknownModel,
        Fault::NonGreedySampling,
        Fault::UnseededSampling,
        Fault::TooFewIterations,
        Fault::FewerIterationsThanConfigured,
        Fault::WarmStart,
        Fault::UnrepeatableBatch,
        Fault::UnrepeatableServer,
        Fault::ArrivalBurst,
        Fault::HalfPower,
    ];
}

/// An editable CSV: header and rows of text cells.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn read(data: &[u8]) -> Table {
        let mut rdr = csv::ReaderBuilder::new().flexible(true).from_reader(data);
        let header = rdr
            .headers()
            .expect("generated CSV has a header")
            .iter()
            .map(str::to_string)
            .collect();
        let rows = rdr
            .records()
            .map(|r| {
                r.expect("generated CSV")
                    .iter()
                    .map(str::to_string)
                    .collect()
            })
            .collect();
        Table { header, rows }
    }
    fn write(&self) -> Vec<u8> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&self.header).expect("write to memory");
        for r in &self.rows {
            w.write_record(r).expect("write to memory");
        }
        w.into_inner().expect("flush to memory")
    }
    fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("generated CSV has column {name}"))
    }
    fn get(&self, row: usize, name: &str) -> &str {
        &self.rows[row][self.col(name)]
    }
    fn set(&mut self, row: usize, name: &str, value: String) {
        let c = self.col(name);
        self.rows[row][c] = value;
    }
    fn list(&self, row: usize, name: &str) -> Vec<f64> {
        let mut v = Vec::new();
        harness::parse_list(self.get(row, name).as_bytes(), |x| v.push(x))
            .expect("generated list cell");
        v
    }
    fn set_list(&mut self, row: usize, name: &str, values: &[f64]) {
        let cells: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
        self.set(row, name, format!("[{}]", cells.join(", ")));
    }
    fn number(&self, row: usize, name: &str) -> f64 {
        self.get(row, name).parse().expect("generated number")
    }
    /// Replaces a row's power trace and recomputes gpu_energy from it, as
    /// a meter whose samples spread over the row's duration reports it.
    fn set_power(&mut self, row: usize, power: &[f64]) {
        self.set_list(row, "gpu_0_power_draw_watts", power);
        let spacing = self.number(row, "measurement_duration") / power.len().max(1) as f64;
        let energy = wattcounts_rules::bundle::harness::SeriesStats::of(power).trapezoid(spacing);
        self.set(row, "gpu_energy", format!("{energy:?}"));
    }
    fn scale_power(&mut self, row: usize, factor: f64) {
        let p: Vec<f64> = self
            .list(row, "gpu_0_power_draw_watts")
            .iter()
            .map(|w| w * factor)
            .collect();
        self.set_power(row, &p);
    }
}

fn file_index(run: &RunFolder, suffix: &str) -> usize {
    run.files
        .iter()
        .position(|(p, _)| p.ends_with(suffix))
        .unwrap_or_else(|| panic!("generated run has a {suffix}"))
}

/// Edits the first model's results CSV of a scenario.
fn edit_results(run: &mut RunFolder, scenario: Scenario, edit: impl FnOnce(&mut Table)) {
    let name = match scenario {
        Scenario::Batch => harness::BATCH_RESULTS,
        Scenario::Server => harness::SERVER_RESULTS,
    };
    let i = file_index(run, &format!("/{name}"));
    let mut t = Table::read(&run.files[i].1);
    edit(&mut t);
    run.files[i].1 = t.write();
}

fn edit_text(run: &mut RunFolder, suffix: &str, edit: impl FnOnce(&str) -> String) {
    let i = file_index(run, suffix);
    let text = String::from_utf8_lossy(&run.files[i].1).into_owned();
    run.files[i].1 = edit(&text).into_bytes();
}

/// Row index of iteration 1 (the second) of a table.
const ROW: usize = 1;

pub fn apply(run: &mut RunFolder, gpu: &GpuSpec, fault: Fault) {
    match fault {
        // Applied while generating (see writer::server_iteration).
        Fault::None | Fault::ArrivalBurst => {}
        Fault::GpuEnergyMismatch => edit_results(run, Scenario::Batch, |t| {
            let e = t.number(ROW, "gpu_energy") * 1.15;
            t.set(ROW, "gpu_energy", format!("{e:?}"));
        }),
        Fault::TokenTotalMismatch => edit_results(run, Scenario::Batch, |t| {
            let n = t.number(ROW, "generation_tokens_total") as u64 + 7;
            t.set(ROW, "generation_tokens_total", n.to_string());
        }),
        Fault::QueryCountMismatch => edit_results(run, Scenario::Batch, |t| {
            let n = t.number(ROW, "processed_queries") as u64 - 1;
            t.set(ROW, "processed_queries", n.to_string());
        }),
        Fault::SparsePowerSamples => edit_results(run, Scenario::Batch, |t| {
            let p: Vec<f64> = t
                .list(ROW, "gpu_0_power_draw_watts")
                .into_iter()
                .step_by(2)
                .collect();
            t.set_power(ROW, &p);
        }),
        Fault::ShortServerRun => {
            let configured = configured(run, "MAX_TEST_DURATION");
            edit_results(run, Scenario::Server, |t| {
                let d = configured / 2.0;
                let p = t.list(ROW, "gpu_0_power_draw_watts");
                let keep = ((d / 0.1) as usize).min(p.len());
                t.set(ROW, "measurement_duration", format!("{d:?}"));
                t.set_power(ROW, &p[..keep]);
            })
        }
        Fault::PowerOverTdp => edit_results(run, Scenario::Batch, |t| {
            let n = t.list(ROW, "gpu_0_power_draw_watts").len();
            t.set_power(ROW, &vec![gpu.tdp_w * 1.25; n]);
        }),
        Fault::PowerSpike => edit_results(run, Scenario::Batch, |t| {
            let mut p = t.list(ROW, "gpu_0_power_draw_watts");
            let mid = p.len() / 2;
            p[mid] = gpu.tdp_w * 2.0;
            t.set_power(ROW, &p);
        }),
        Fault::PowerBelowIdle => edit_results(run, Scenario::Batch, |t| {
            let n = t.list(ROW, "gpu_0_power_draw_watts").len();
            t.set_power(ROW, &vec![gpu.idle_w * 0.3; n]);
        }),
        Fault::OneTokenRun => edit_results(run, Scenario::Server, |t| {
            let first_rate = t.get(0, "lambda_qps").to_string();
            for r in 0..t.rows.len() {
                if t.get(r, "lambda_qps") != first_rate {
                    continue;
                }
                let n = t.list(r, "request_generation_tokens").len();
                let cells: Vec<&str> = (0..n).map(|i| if i == 0 { "1" } else { "0" }).collect();
                t.set(
                    r,
                    "request_generation_tokens",
                    format!("[{}]", cells.join(", ")),
                );
                t.set(r, "generation_tokens_total", "1".into());
            }
        }),
        Fault::Overheated => edit_results(run, Scenario::Batch, |t| {
            let mut temp = t.list(ROW, "gpu_0_temp");
            let mid = temp.len() / 2;
            temp[mid] = 101.0;
            t.set_list(ROW, "gpu_0_temp", &temp);
        }),
        Fault::WarmStart => edit_results(run, Scenario::Batch, |t| {
            let mut temp = t.list(ROW, "gpu_0_temp");
            temp[0] = 72.0;
            t.set_list(ROW, "gpu_0_temp", &temp);
        }),
        Fault::UnknownGpu => edit_text(run, "system_info.txt", |s| {
            s.replace(
                &format!(": {}\n", gpu.nvml_name),
                ": NVIDIA B300 Ultra Prototype\n",
            )
        }),
        Fault::LoweredPowerLimit => edit_text(run, "system_info.txt", |s| {
            let default = format!("Current Power Limit               : {:.2} W", gpu.tdp_w);
            let lowered = format!(
                "Current Power Limit               : {:.2} W",
                gpu.tdp_w * 0.7
            );
            s.replace(&default, &lowered)
        }),
        Fault::UnknownModel => rename_first_model(run, "example-org/Custom-LM-1B"),
        // Every results file: one bundle follows one protocol (a mix is
        // refused before the checks run).
        Fault::NonGreedySampling => {
            for f in [harness::BATCH_RESULTS, harness::SERVER_RESULTS] {
                edit_text(run, &format!("/{f}"), |s| {
                    s.replace("temperature=0.0", "temperature=0.7")
                });
            }
        }
        Fault::UnseededSampling => edit_text(run, &format!("/{}", harness::BATCH_RESULTS), |s| {
            s.replace("seed=123", "seed=None")
        }),
        Fault::TooFewIterations => edit_results(run, Scenario::Batch, |t| {
            let it = t.col("iteration");
            t.rows.retain(|r| r[it].parse::<u32>().is_ok_and(|i| i < 2));
        }),
        Fault::FewerIterationsThanConfigured => {
            let n = configured(run, "ITERATIONS") as u32;
            run.config_yaml = run.config_yaml.replace(
                &format!("ITERATIONS: {n}\n"),
                &format!("ITERATIONS: {}\n", n + 2),
            );
        }
        Fault::UnrepeatableBatch => edit_results(run, Scenario::Batch, |t| t.scale_power(ROW, 0.7)),
        Fault::UnrepeatableServer => edit_results(run, Scenario::Server, |t| {
            let last_rate = t.get(t.rows.len() - 1, "lambda_qps").to_string();
            let row = (0..t.rows.len())
                .filter(|&r| t.get(r, "lambda_qps") == last_rate)
                .nth(ROW)
                .expect("the last rate has two iterations");
            t.scale_power(row, 0.6)
        }),
        Fault::HalfPower => {
            for scenario in [Scenario::Batch, Scenario::Server] {
                for i in 0..run.files.len() {
                    let name = match scenario {
                        Scenario::Batch => harness::BATCH_RESULTS,
                        Scenario::Server => harness::SERVER_RESULTS,
                    };
                    if !run.files[i].0.ends_with(name) {
                        continue;
                    }
                    let mut t = Table::read(&run.files[i].1);
                    for r in 0..t.rows.len() {
                        t.scale_power(r, 0.5);
                    }
                    run.files[i].1 = t.write();
                }
            }
        }
    }
}

/// A number from the run's config YAML.
fn configured(run: &RunFolder, key: &str) -> f64 {
    run.config_yaml
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("generated config has {key}"))
}

fn rename_first_model(run: &mut RunFolder, new_id: &str) {
    let first_dir = run
        .files
        .iter()
        .find_map(|(p, _)| p.split_once('/').map(|(d, _)| d.to_string()))
        .expect("generated run has a model folder");
    let old_id = run
        .files
        .iter()
        .find(|(p, _)| {
            p.starts_with(&format!("{first_dir}/")) && p.ends_with(harness::BATCH_RESULTS)
        })
        .map(|(_, d)| {
            let t = Table::read(d);
            t.get(0, "model").to_string()
        })
        .expect("first model has batch results");
    let new_dir = model_dir_name(new_id);
    for (path, data) in run.files.iter_mut() {
        if let Some(rest) = path.strip_prefix(&format!("{first_dir}/")) {
            *path = format!("{new_dir}/{rest}");
            let text = String::from_utf8_lossy(data).replace(&old_id, new_id);
            *data = text.into_bytes();
        }
    }
    run.config_yaml = run.config_yaml.replace(&old_id, new_id);
    run.files.sort_by(|a, b| a.0.cmp(&b.0));
}
