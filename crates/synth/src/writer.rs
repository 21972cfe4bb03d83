//! Writes synthetic runs in the harness's file format.

use std::fmt::Write as _;
use std::path::Path;

use rand::rngs::StdRng;
use rand::Rng;
use rayon::prelude::*;

use crate::folder::{model_dir_name, RunFolder};
use crate::options::SynthOptions;
use crate::physics::{
    exponential, normal, request_lengths, rng_for, Engine, Thermal, SAMPLE_PERIOD_S,
};
use wattcounts_rules::arrival_schedule::{ScheduleProtocol, Stream, HARNESS_SEED};
use wattcounts_rules::bundle::harness::{self, Scenario};
use wattcounts_rules::catalog::{GpuSpec, ModelSpec};

const SAMPLING_PARAMS: &str = "SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.0, top_p=1.0, top_k=0, min_p=0.0, seed=123, stop=[], stop_token_ids=[], bad_words=[], include_stop_str_in_output=False, ignore_eos=False, max_tokens=256, min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True, truncate_prompt_tokens=None, guided_decoding=None, extra_args=None)";

const ANSWERS: &[&str] = &[
    "The Normans were descended from Norse raiders, who gave their name to Normandy.",
    "Denver Broncos, who defeated the Carolina Panthers 24-10.",
    "Oxygen is the third most abundant element in the universe by mass.",
    "The Amazon rainforest covers much of the Amazon basin, about 5,500,000 km2.",
    "Tesla moved to New York City in 1884, where he worked for Edison.",
    "The answer is \"Victoria\", as stated in the second paragraph.",
];

pub fn generate_run(gpu: &GpuSpec, models: &[&ModelSpec], opts: &SynthOptions) -> RunFolder {
    let (fitting, skipped): (Vec<&ModelSpec>, Vec<&ModelSpec>) =
        models.iter().partition(|m| super::fits(gpu, m));
    let start = chrono::DateTime::from_timestamp(opts.start_unix as i64, 0).unwrap_or_default();
    let name = format!("run_{}", start.format("%Y%m%d_%H%M%S"));
    let mut files: Vec<(String, Vec<u8>)> = fitting
        .par_iter()
        .enumerate()
        .flat_map_iter(|(i, m)| model_files(gpu, m, i, opts))
        .collect();
    files.push(("system_info.txt".into(), system_info(gpu).into_bytes()));
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut run = RunFolder {
        name,
        config_yaml: config_yaml(&fitting, opts),
        files,
        skipped_models: skipped.iter().map(|m| m.id.clone()).collect(),
    };
    crate::faults::apply(&mut run, gpu, opts.fault);
    run
}

/// Writes `dir/<run name>/...` and `dir/config-v2.yaml`; returns the run folder path.
pub fn write_run(dir: &Path, run: &RunFolder) -> std::io::Result<std::path::PathBuf> {
    let root = dir.join(&run.name);
    for (path, data) in &run.files {
        let p = root.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(p, data)?;
    }
    std::fs::write(dir.join("config-v2.yaml"), &run.config_yaml)?;
    Ok(root)
}

/// The harness's default warm-up at the largest rate, seconds.
const WARMUP_S: f64 = 60.0;

fn config_yaml(models: &[&ModelSpec], opts: &SynthOptions) -> String {
    let mut y = String::new();
    let _ = writeln!(y, "ITERATIONS: {}", opts.iterations);
    let _ = writeln!(y, "MAX_TEST_DURATION: {}", opts.server_duration_s);
    let _ = writeln!(y, "CONTEXT_LENGTH: 1024");
    let _ = writeln!(y, "WARMUP_DURATION: {WARMUP_S}");
    let rates: Vec<String> = opts.lambdas.iter().map(|l| l.to_string()).collect();
    let _ = writeln!(y, "LAMBDA_QPS_ARRAY: [{}]", rates.join(", "));
    let _ = writeln!(y, "CUDA_VISIBLE_DEVICES: \"0\"");
    let _ = writeln!(y, "LLM_MODELS:");
    for m in models {
        // Quoted, as config-v2.yaml lists them.
        let _ = writeln!(y, "  - \"{}\"", m.id);
    }
    y
}

fn system_info(gpu: &GpuSpec) -> String {
    let limit = gpu.tdp_w;
    format!(
        "==================== lscpu ====================\n\
Architecture:                       x86_64\n\
CPU(s):                             64\n\
Model name:                         AMD EPYC 7513 32-Core Processor\n\
Thread(s) per core:                 2\n\
\n==================== nvidia-smi -q ====================\n\
\n==============NVSMI LOG==============\n\n\
Timestamp                                 : Sun Jun  1 00:00:00 2025\n\
Driver Version                            : 550.54.15\n\
CUDA Version                              : 12.4\n\n\
Attached GPUs                             : 1\n\
GPU 00000000:41:00.0\n\
    Product Name                          : {name}\n\
    Product Brand                         : NVIDIA\n\
    Product Architecture                  : {arch}\n\
    FB Memory Usage\n\
        Total                             : {mem} MiB\n\
    GPU Power Readings\n\
        Power Draw                        : {idle:.2} W\n\
        Current Power Limit               : {limit:.2} W\n\
        Requested Power Limit             : {limit:.2} W\n\
        Default Power Limit               : {limit:.2} W\n\
        Min Power Limit                   : {min:.2} W\n\
        Max Power Limit                   : {limit:.2} W\n\
\n==================== free -h ====================\n\
               total        used        free      shared  buff/cache   available\n\
Mem:           503Gi        21Gi       402Gi        12Mi        79Gi       478Gi\n\
Swap:             0B          0B          0B\n\
\n==================== df -h ====================\n\
Filesystem      Size  Used Avail Use% Mounted on\n\
/dev/nvme0n1p2  1.8T  612G  1.1T  36% /\n",
        name = gpu.nvml_name,
        arch = gpu.architecture,
        mem = (gpu.memory_gb * 1024.0) as u64,
        idle = gpu.idle_w,
        limit = limit,
        min = limit * 0.5,
    )
}

/// Python's repr of a float rounded to `decimals` places: shortest digits,
/// always with a decimal point ("61.0", "61.25").
fn push_py_float(out: &mut String, v: f64, decimals: u32) {
    let scale = 10f64.powi(decimals as i32);
    let scaled = (v * scale).round();
    if scaled < 0.0 {
        out.push('-');
    }
    let scaled = scaled.abs() as u64;
    let int = scaled / scale as u64;
    let mut frac = scaled % scale as u64;
    let mut digits = decimals;
    while digits > 1 && frac % 10 == 0 {
        frac /= 10;
        digits -= 1;
    }
    let _ = write!(out, "{int}.{frac:0width$}", width = digits as usize);
}

fn py_list(values: impl IntoIterator<Item = f64>, decimals: u32) -> String {
    let mut s = String::from("[");
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        push_py_float(&mut s, v, decimals);
    }
    s.push(']');
    s
}

fn py_int_list(values: impl IntoIterator<Item = u64>) -> String {
    let mut s = String::from("[");
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{v}");
    }
    s.push(']');
    s
}

fn py_float(v: f64, decimals: u32) -> String {
    let mut s = String::new();
    push_py_float(&mut s, v, decimals);
    s
}

/// The 10 Hz series the harness's sampling thread records.
#[derive(Default)]
struct Trace {
    power: Vec<f64>,
    temp: Vec<f64>,
    util: Vec<f64>,
    clock: Vec<f64>,
}

impl Trace {
    fn push(
        &mut self,
        rng: &mut StdRng,
        thermal: &mut Thermal,
        engine: &Engine,
        power: f64,
        busy: bool,
    ) {
        let (p, t) = thermal.sample(rng, power, engine.tdp_w);
        self.power.push(p);
        self.temp.push(t.round());
        self.util.push(if busy {
            rng.gen_range(88.0..100.0f64).round()
        } else {
            0.0
        });
        self.clock.push(if busy { 1755.0 } else { 345.0 });
    }
}

struct Request {
    prompt: u32,
    gen: u32,
    arrival: f64,
    ttft: f64,
    e2e: f64,
}

struct Iteration {
    duration: f64,
    started: f64,
    trace: Trace,
    requests: Vec<Request>,
}

fn model_files(
    gpu: &GpuSpec,
    model: &ModelSpec,
    index: usize,
    opts: &SynthOptions,
) -> Vec<(String, Vec<u8>)> {
    let engine = Engine::new(gpu, model, opts.physics);
    let label = format!("{}|{}", gpu.nvml_name, model.id);
    let mut rng = rng_for(opts.seed, &label);
    let mut thermal = Thermal::new(&mut rng);
    // Each model's session starts 6 h after the previous one's.
    let mut clock = opts.start_unix + index as f64 * 6.0 * 3600.0;
    let dir = model_dir_name(&model.id);

    let mut batch = Vec::new();
    for it in 0..opts.iterations {
        thermal.cool_down(&mut rng);
        // The workload depends on the model only (server arrivals also on
        // the iteration), as with the harness's fixed seeds, so GPUs are
        // compared on the same requests. Batch iterations push the same
        // prompts and, decoding greedily with a fixed seed, get the same
        // answers.
        let mut work = rng_for(opts.seed, &format!("{}|batch", model.id));
        let r = batch_iteration(&engine, opts, &mut work, &mut rng, &mut thermal, clock);
        clock += r.duration + rng.gen_range(40.0..120.0);
        batch.push((it, r));
    }
    let mut server = Vec::new();
    // Arrivals as the harness draws them: numpy seeded with 42 once per
    // model's process, the warm-up first, then every rate's iterations.
    let schedule = ScheduleProtocol {
        seed: HARNESS_SEED,
        warmup_s: WARMUP_S,
        lambdas: opts.lambdas.clone(),
        iterations: opts.iterations,
        duration_s: opts.server_duration_s,
    };
    let mut stream = Stream::new(schedule.seed);
    let mut pos = schedule.warmup_count(&mut stream);
    for (rate_index, &lambda) in opts.lambdas.iter().enumerate() {
        for it in 0..opts.iterations {
            let burst = opts.fault == super::Fault::ArrivalBurst
                && index == 0
                && rate_index == 0
                && it == 0;
            thermal.cool_down(&mut rng);
            let mut work = rng_for(opts.seed, &format!("{}|server|{lambda}|{it}", model.id));
            // The arrivals-check fault: requests come four times as fast
            // as the rate the CSV states, off the seeded schedule.
            let arrivals = if burst {
                let mut t = 0.0;
                let mut out = Vec::new();
                while t < opts.server_duration_s {
                    t += exponential(&mut work, lambda * 4.0);
                    out.push(t);
                }
                out
            } else {
                stream.arrivals(pos, lambda, opts.server_duration_s)
            };
            // Each request took one draw of the process's stream.
            pos += arrivals.len();
            let r = server_iteration(
                &engine,
                opts,
                &arrivals,
                &mut work,
                &mut rng,
                &mut thermal,
                clock,
            );
            clock += r.duration + rng.gen_range(40.0..120.0);
            server.push((lambda, it, r));
        }
    }
    let mut rng_io = rng_for(opts.seed, &format!("{label}|io"));
    vec![
        (
            format!("{dir}/{}", harness::BATCH_RESULTS),
            results_csv(
                Scenario::Batch,
                model,
                &engine,
                &batch.iter().map(|(i, r)| (None, *i, r)).collect::<Vec<_>>(),
                &mut rng_io,
            ),
        ),
        (
            format!("{dir}/{}", harness::BATCH_DETAILS),
            batch_details(model, &batch),
        ),
        (
            format!("{dir}/{}", harness::SERVER_RESULTS),
            results_csv(
                Scenario::Server,
                model,
                &engine,
                &server
                    .iter()
                    .map(|(l, i, r)| (Some(*l), *i, r))
                    .collect::<Vec<_>>(),
                &mut rng_io,
            ),
        ),
        (
            format!("{dir}/{}", harness::SERVER_DETAILS),
            server_details(model, &server),
        ),
    ]
}

fn batch_iteration(
    engine: &Engine,
    opts: &SynthOptions,
    work: &mut StdRng,
    rng: &mut StdRng,
    thermal: &mut Thermal,
    started: f64,
) -> Iteration {
    let requests: Vec<Request> = (0..opts.batch_prompts)
        .map(|_| {
            let (prompt, gen) = request_lengths(work, opts.max_tokens);
            Request {
                prompt,
                gen,
                arrival: 0.0,
                ttft: 0.0,
                e2e: 0.0,
            }
        })
        .collect();
    let n_req = requests.len().max(1) as f64;
    let prompt_total: f64 = requests.iter().map(|r| r.prompt as f64).sum();
    let gen_total: f64 = requests.iter().map(|r| r.gen as f64).sum();
    let per_seq = (prompt_total + gen_total) / n_req;
    let n = (engine.kv_capacity_tokens / per_seq)
        .clamp(1.0, 256.0)
        .min(n_req)
        .floor();
    let ctx = prompt_total / n_req + gen_total / n_req / 2.0;
    let (step, compute_share) = engine.step(n, ctx);
    let prefill = engine.prefill_s(prompt_total);
    // Run-to-run variation of the whole iteration (clocks, scheduling).
    let jitter = 1.0 + normal(rng, 0.0, 0.012);
    let decode = gen_total / n * step * 1.08 * jitter;
    let duration = 0.6 + prefill + decode;
    let busy_w = engine.busy_power(compute_share) * (1.0 + normal(rng, 0.0, 0.008));
    let prefill_w = engine.busy_power(0.9);
    let samples = sample_count(duration);
    let mut trace = Trace::default();
    for k in 0..samples {
        let t = k as f64 * SAMPLE_PERIOD_S;
        let (w, busy) = if t < 0.3 || t > duration - 0.2 {
            (engine.idle_w * 1.1, false)
        } else if t < 0.3 + prefill {
            (prefill_w, true)
        } else {
            (busy_w, true)
        };
        trace.push(rng, thermal, engine, w, busy);
    }
    Iteration {
        duration,
        started,
        trace,
        requests,
    }
}

/// One sample per period of the window. (Earlier versions dropped up to
/// 1 % of the tail at random, as a sampling thread missing the odd tick
/// would; under the meter's trapezoid that cut the energy of the run it
/// touched, which a real meter, sampling the whole window a little further
/// apart, does not.)
fn sample_count(duration: f64) -> usize {
    (duration / SAMPLE_PERIOD_S).floor().max(1.0) as usize
}

#[allow(clippy::too_many_arguments)]
fn server_iteration(
    engine: &Engine,
    opts: &SynthOptions,
    arrival_times: &[f64],
    work: &mut StdRng,
    rng: &mut StdRng,
    thermal: &mut Thermal,
    started: f64,
) -> Iteration {
    let horizon = opts.server_duration_s;
    let mut arrivals: Vec<Request> = arrival_times
        .iter()
        .map(|&arrival| {
            let (prompt, gen) = request_lengths(work, opts.max_tokens);
            Request {
                prompt,
                gen,
                arrival,
                ttft: 0.0,
                e2e: 0.0,
            }
        })
        .collect();
    // (index, decode start, tokens produced)
    let mut active: Vec<(usize, f64, f64)> = Vec::new();
    let mut next = 0usize;
    let mut trace = Trace::default();
    let mut k = 0u64;
    loop {
        let now = k as f64 * SAMPLE_PERIOD_S;
        if now >= horizon && next == arrivals.len() && active.is_empty() {
            break;
        }
        while next < arrivals.len() && arrivals[next].arrival <= now {
            let r = &mut arrivals[next];
            let prefill = engine.prefill_s(r.prompt as f64);
            let (step, _) = engine.step(active.len() as f64 + 1.0, r.prompt as f64);
            r.ttft = prefill + step;
            active.push((next, r.arrival + prefill, 1.0));
            next += 1;
        }
        let running = active.iter().filter(|a| a.1 <= now).count() as f64;
        let (w, busy) = if active.is_empty() {
            (engine.idle_w, false)
        } else {
            let ctx = active
                .iter()
                .map(|a| arrivals[a.0].prompt as f64 + a.2)
                .sum::<f64>()
                / active.len() as f64;
            let (step, share) = engine.step(running.max(1.0), ctx);
            for a in active.iter_mut().filter(|a| a.1 <= now) {
                a.2 += SAMPLE_PERIOD_S / step;
            }
            (engine.busy_power(share), true)
        };
        active.retain(|a| {
            let r = &mut arrivals[a.0];
            if a.2 >= r.gen as f64 {
                r.e2e = (now + SAMPLE_PERIOD_S - r.arrival).max(r.ttft + 0.001);
                false
            } else {
                true
            }
        });
        trace.push(rng, thermal, engine, w, busy);
        k += 1;
    }
    let duration = k as f64 * SAMPLE_PERIOD_S;
    let keep = sample_count(duration);
    trace.power.truncate(keep);
    trace.temp.truncate(keep);
    trace.util.truncate(keep);
    trace.clock.truncate(keep);
    Iteration {
        duration,
        started,
        trace,
        requests: arrivals,
    }
}

fn iso(ts: f64) -> String {
    let secs = ts.floor();
    let micros = ((ts - secs) * 1e6).round() as u32;
    chrono::DateTime::from_timestamp(secs as i64, micros.min(999_999) * 1000)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.6f+00:00")
        .to_string()
}

fn results_csv(
    scenario: Scenario,
    model: &ModelSpec,
    engine: &Engine,
    rows: &[(Option<f64>, u32, &Iteration)],
    rng: &mut StdRng,
) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let cols = harness::result_columns(scenario);
    w.write_record(&cols).expect("write to memory");
    for (lambda, iteration, it) in rows {
        let n = it.trace.power.len();
        // What the meter reports: the trapezoid over its samples at their
        // timestamps. This writer spreads them evenly over the window (a
        // meter's loop takes the window ÷ samples, its sleep plus its
        // reads), so that is the trapezoid at duration ÷ samples.
        let meter_energy =
            harness::SeriesStats::of(&it.trace.power).trapezoid(it.duration / n.max(1) as f64);
        let gen_total: u64 = it.requests.iter().map(|r| r.gen as u64).sum();
        let prompt_total: u64 = it.requests.iter().map(|r| r.prompt as u64).sum();
        let mem = py_list(
            (0..n).map(|_| engine.memory_used_mb + rng.gen_range(0.0..4.0f64).round()),
            1,
        );
        let cpu_mem = py_list(
            (0..n).map(|_| 14_200.0 + rng.gen_range(0.0..300.0f64).round()),
            1,
        );
        let cpu_util = py_list(
            it.trace.util.iter().map(|u| {
                if *u > 0.0 {
                    rng.gen_range(3.0..9.0)
                } else {
                    rng.gen_range(0.3..1.5)
                }
            }),
            1,
        );
        let (ttft, e2e, tps) = match scenario {
            Scenario::Batch => (
                "[]".to_string(),
                py_list([it.duration], 6),
                py_list([gen_total as f64 / it.duration], 6),
            ),
            Scenario::Server => (
                py_list(it.requests.iter().map(|r| r.ttft), 6),
                py_list(it.requests.iter().map(|r| r.e2e), 6),
                py_list(it.requests.iter().map(|r| r.gen as f64 / r.e2e), 6),
            ),
        };
        let count = it.requests.len().to_string();
        let mut rec: Vec<String> = vec![
            py_float(it.duration, 6),
            py_float(it.started, 6),
            iso(it.started),
            mem,
            py_list(it.trace.util.iter().copied(), 1),
            py_list(it.trace.power.iter().copied(), 2),
            py_list(it.trace.temp.iter().copied(), 1),
            py_list(it.trace.clock.iter().copied(), 1),
            cpu_mem,
            cpu_util,
            py_float(it.duration * 61.5, 3),
            py_float(it.duration * 9.8, 3),
            py_float(meter_energy, 6),
            "0.0".into(),
            ttft,
            e2e,
            tps,
            count.clone(),
            "0".into(),
            prompt_total.to_string(),
            gen_total.to_string(),
            py_int_list(it.requests.iter().map(|r| r.prompt as u64)),
            py_int_list(it.requests.iter().map(|r| r.gen as u64)),
        ];
        match scenario {
            Scenario::Batch => rec.extend([
                iteration.to_string(),
                SAMPLING_PARAMS.into(),
                model.id.clone(),
                count.clone(),
                count,
            ]),
            Scenario::Server => rec.extend([
                SAMPLING_PARAMS.into(),
                model.id.clone(),
                lambda.unwrap_or_default().to_string(),
                iteration.to_string(),
                count.clone(),
                count,
            ]),
        }
        w.write_record(&rec).expect("write to memory");
    }
    w.into_inner().expect("flush to memory")
}

fn batch_details(model: &ModelSpec, rows: &[(u32, Iteration)]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(harness::BATCH_DETAIL_COLUMNS)
        .expect("write to memory");
    for (iteration, it) in rows {
        let it_s = iteration.to_string();
        let end = py_float(it.started + it.duration, 6);
        for (q, _) in it.requests.iter().enumerate() {
            let qid = q.to_string();
            w.write_record([
                it_s.as_str(),
                &model.id,
                &qid,
                ANSWERS[q % ANSWERS.len()],
                &end,
            ])
            .expect("write to memory");
        }
    }
    w.into_inner().expect("flush to memory")
}

fn server_details(model: &ModelSpec, rows: &[(f64, u32, Iteration)]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(harness::SERVER_DETAIL_COLUMNS)
        .expect("write to memory");
    for (lambda, iteration, it) in rows {
        for (q, r) in it.requests.iter().enumerate() {
            let queued = it.started + r.arrival;
            let first = queued + r.ttft;
            let last = queued + r.e2e;
            w.write_record([
                iteration.to_string(),
                format!("{iteration}-{q}"),
                model.id.clone(),
                lambda.to_string(),
                py_float(queued, 6),
                ANSWERS[q % ANSWERS.len()].to_string(),
                r.prompt.to_string(),
                r.gen.to_string(),
                py_float(r.ttft, 6),
                py_float(r.e2e, 6),
                "0.0".into(),
                py_float(r.gen as f64 / r.e2e, 6),
                py_float(r.arrival, 6),
                py_float(queued, 6),
                py_float(queued, 6),
                py_float(first, 6),
                py_float(last, 6),
                "False".into(),
            ])
            .expect("write to memory");
        }
    }
    w.into_inner().expect("flush to memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_repr() {
        assert_eq!(py_float(61.0, 2), "61.0");
        assert_eq!(py_float(61.2, 2), "61.2");
        assert_eq!(py_float(61.256, 2), "61.26");
        assert_eq!(py_float(-0.5, 1), "-0.5");
        assert_eq!(py_list([1.0, 2.5], 2), "[1.0, 2.5]");
        assert_eq!(py_int_list([3, 4]), "[3, 4]");
    }
}
