//! Identity: the GPU the bundle says it ran on is the one nvidia-smi saw,
//! a GPU the catalogue knows, at its default power limit or declared.

use super::{
    skip, CheckInput, CheckOutcome, CheckResult, Location, Rule, Severity, Tally, Thresholds,
};
use crate::bundle::system_info::FILE_NAME as SYSTEM_INFO;
use crate::bundle::MANIFEST_NAME;
use crate::catalog;

pub const GPU_CATALOGUE: Rule = Rule {
    id: "identity.gpu_catalogue",
    severity: Severity::Soft,
    rule: "the manifest's GPU (/system/gpu/name) is a GPU in the service's catalogue (a GPU it lacks waits for a maintainer: the checks that need its TDP and idle power cannot run)",
    unit: "",
};
pub const GPU_NAME: Rule = Rule {
    id: "identity.gpu_name",
    severity: Severity::Hard,
    rule: "the nvidia-smi Product Name in system_info.txt equals the manifest's /system/gpu/name",
    unit: "",
};
pub const POWER_LIMIT: Rule = Rule {
    id: "identity.power_limit",
    severity: Severity::Soft,
    rule: "a current power limit below the default is declared in the manifest (/system/gpu/power_limit_declared)",
    unit: "W",
};
pub const MODEL_CATALOGUE: Rule = Rule {
    id: "identity.model_catalogue",
    severity: Severity::Soft,
    rule: "every model is in the service's catalogue, or the bundle carries its config.json and the config gives its figures (the model joins the catalogue from it when the bundle is accepted); otherwise its parameters are unknown",
    unit: "",
};
pub const CREATED_AT: Rule = Rule {
    id: "identity.created_at",
    severity: Severity::Soft,
    rule: "the manifest's /created_at lies between the harness's first release (2025-02-02) and one day after the service received the bundle",
    unit: "days",
};
pub const RULES: &[Rule] = &[
    GPU_CATALOGUE,
    GPU_NAME,
    POWER_LIMIT,
    MODEL_CATALOGUE,
    CREATED_AT,
];

pub fn checks(input: &CheckInput, _t: &Thresholds) -> Vec<CheckResult> {
    vec![
        gpu_catalogue(input),
        gpu_name(input),
        power_limit(input),
        model_catalogue(input),
        created_at(input),
    ]
}

/// The first commit of the benchmark harness (maufadel/sw-energy-benchmark):
/// no bundle can have been packed from its output before it.
pub const HARNESS_FIRST_RELEASE: &str = "2025-02-02T00:00:00Z";

/// A packer's clock may run a little ahead of ours (time zones written as
/// UTC by hand, a drifting laptop): a day is allowed.
const CLOCK_SLACK_DAYS: f64 = 1.0;

/// A date that cannot be true says the bundle was edited or packed on a
/// broken clock: a person should look, but nothing is wrong with the
/// figures as such (warn, never reject).
fn created_at(input: &CheckInput) -> CheckResult {
    let text = &input.manifest.created_at;
    let at = Location::file(MANIFEST_NAME);
    let day = 86_400.0;
    let Ok(created) = chrono::DateTime::parse_from_rfc3339(text) else {
        // The schema's date-time format let it through; say so all the same.
        return verdict(
            CREATED_AT,
            false,
            format!("{MANIFEST_NAME} /created_at: '{text}' is not an RFC 3339 date and time"),
            at,
        );
    };
    let created = created.with_timezone(&chrono::Utc);
    let first = chrono::DateTime::parse_from_rfc3339(HARNESS_FIRST_RELEASE)
        .expect("a valid constant")
        .with_timezone(&chrono::Utc);
    let ahead_days = (created - input.received_at).num_milliseconds() as f64 / 1000.0 / day;
    let before_days = (first - created).num_milliseconds() as f64 / 1000.0 / day;
    let (ok, figure, threshold, message) = if ahead_days > CLOCK_SLACK_DAYS {
        (
            false,
            ahead_days,
            CLOCK_SLACK_DAYS,
            format!(
                "{MANIFEST_NAME} /created_at: {text} is {ahead_days:.1} days after the service received the bundle ({}): a date in the future says the packing machine's clock is wrong or the manifest was edited",
                crate::timestamp::ts(&input.received_at)
            ),
        )
    } else if before_days > 0.0 {
        (
            false,
            before_days,
            0.0,
            format!(
                "{MANIFEST_NAME} /created_at: {text} is {before_days:.1} days before the benchmark harness existed (first release {}): the packing machine's clock is wrong or the manifest was edited",
                &HARNESS_FIRST_RELEASE[..10]
            ),
        )
    } else {
        (
            true,
            ahead_days.max(0.0),
            CLOCK_SLACK_DAYS,
            format!("{MANIFEST_NAME} /created_at: {text}, packed before it was received"),
        )
    };
    CheckResult {
        figure: Some(figure),
        threshold: Some(threshold),
        ..verdict(CREATED_AT, ok, message, at)
    }
}

fn verdict(rule: Rule, ok: bool, message: String, location: Location) -> CheckResult {
    CheckResult {
        id: rule.id.to_string(),
        severity: rule.severity,
        outcome: rule.outcome(!ok),
        figure: None,
        threshold: None,
        unit: rule.unit.to_string(),
        evaluated: 1,
        failing: u32::from(!ok),
        message,
        location: Some(location),
        rejects_configuration: false,
    }
}

fn gpu_catalogue(input: &CheckInput) -> CheckResult {
    let name = &input.manifest.system.gpu.name;
    let at = Location::file(MANIFEST_NAME);
    match input.gpu {
        Some(g) => verdict(
            GPU_CATALOGUE,
            true,
            format!("'{name}' is catalogue GPU '{}'", g.id),
            at,
        ),
        None => verdict(
            GPU_CATALOGUE,
            false,
            format!(
                "{MANIFEST_NAME} /system/gpu/name: '{name}' is not among the {} NVIDIA GPUs in this service's catalogue{}, \
                 so the checks that need its TDP and loaded-idle power were skipped and the bundle \
                 waits for a maintainer, hidden from the leaderboards. Once a maintainer adds the GPU \
                 (`wattcounts admin gpu add`, with its datasheet figures and their source), the bundle is \
                 judged again by every check. To ask for it, open an issue with its nvidia-smi -q output and \
                 its datasheet (TDP, memory size, type and bandwidth, FP16 and tensor TFLOPS); \
                 GET /api/v1/catalogue/gpus lists the GPUs known",
                catalog::gpus().len(),
                match closest_names(name) {
                    v if v.is_empty() => String::new(),
                    v => format!(" (closest: {})", v.join(", ")),
                }
            ),
            at,
        ),
    }
}

/// Up to three catalogue names sharing the most words with `name`
/// (case-insensitive), so a typo or a variant finds its neighbours.
fn closest_names(name: &str) -> Vec<&'static str> {
    let words = |s: &str| -> Vec<String> {
        s.to_ascii_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty() && *w != "nvidia")
            .map(str::to_string)
            .collect()
    };
    let mine = words(name);
    let mut scored: Vec<(usize, &'static str)> = catalog::gpus()
        .iter()
        .map(|g| {
            let theirs = words(&g.nvml_name);
            (
                mine.iter().filter(|w| theirs.contains(w)).count(),
                g.nvml_name.as_str(),
            )
        })
        .filter(|(n, _)| *n > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

fn gpu_name(input: &CheckInput) -> CheckResult {
    let manifest_name = &input.manifest.system.gpu.name;
    let Some(info) = input.system_info else {
        return verdict(
            GPU_NAME,
            false,
            format!("the bundle has no {SYSTEM_INFO}; the harness writes it with nvidia-smi -q"),
            Location::file(SYSTEM_INFO),
        );
    };
    match &info.gpu_name {
        Some(seen) if seen == manifest_name => verdict(
            GPU_NAME,
            true,
            format!("{SYSTEM_INFO} and {MANIFEST_NAME} both name '{seen}'"),
            Location::file(SYSTEM_INFO),
        ),
        Some(seen) => verdict(
            GPU_NAME,
            false,
            format!("{SYSTEM_INFO} says Product Name '{seen}' but {MANIFEST_NAME} /system/gpu/name says '{manifest_name}'"),
            Location::file(SYSTEM_INFO),
        ),
        None => verdict(
            GPU_NAME,
            false,
            format!("{SYSTEM_INFO} has no 'Product Name' line from nvidia-smi -q"),
            Location::file(SYSTEM_INFO),
        ),
    }
}

fn power_limit(input: &CheckInput) -> CheckResult {
    let gpu = &input.manifest.system.gpu;
    // The evidence is nvidia-smi's; the manifest's copy is the fallback.
    let (current, default, file) = match input.system_info {
        Some(i) if i.power_limit_w.is_some() => (
            i.power_limit_w.unwrap_or(gpu.power_limit_w),
            i.default_power_limit_w.unwrap_or(gpu.default_power_limit_w),
            SYSTEM_INFO,
        ),
        _ => (gpu.power_limit_w, gpu.default_power_limit_w, MANIFEST_NAME),
    };
    let mut t = Tally::new(POWER_LIMIT, Some(default));
    let lowered = current < default - 0.5;
    match input.system_info.map(|i| i.power_limit_w) {
        // The limit nvidia-smi shows is the evidence: a manifest that
        // states another is not taken at its word.
        Some(Some(seen)) if (seen - gpu.power_limit_w).abs() > 0.5 => t.missing(
            format!(
                "{MANIFEST_NAME} /system/gpu/power_limit_w says {:.0} W but {SYSTEM_INFO} shows a current power limit of {seen:.0} W",
                gpu.power_limit_w
            ),
            || Location::file(SYSTEM_INFO),
        ),
        Some(None) => t.missing(
            format!(
                "{SYSTEM_INFO} has no 'Current Power Limit' line from nvidia-smi -q, so the {:.0} W in {MANIFEST_NAME} is unconfirmed",
                gpu.power_limit_w
            ),
            || Location::file(SYSTEM_INFO),
        ),
        _ => {}
    }
    t.observe(
        current,
        -current,
        lowered && !gpu.power_limit_declared,
        || Location::file(file),
    );
    let mut r = t.finish(|v| {
        format!(
            "current power limit {v:.0} W, default {default:.0} W{}",
            if lowered && gpu.power_limit_declared {
                " (declared)"
            } else {
                ""
            }
        )
    });
    if r.outcome == CheckOutcome::Warn {
        r.message.push_str(
            ". Pack with --declare-power-limit if the lower limit was intended, so readers can tell",
        );
    }
    r
}

/// Where a model's config contradicts the run: weights that cannot fit
/// in the GPUs' memory at the config's precision (the run could not have
/// loaded them).
fn contradicts(input: &CheckInput, f: &crate::model_config::ModelFigures) -> Option<String> {
    let gpu = input.gpu?;
    let count = input.manifest.system.gpu.count.max(1);
    let memory = gpu.memory_gb * 1e9 * f64::from(count);
    let weights = f.weight_bytes();
    (weights > memory).then(|| {
        format!(
            "its config.json says {:.1} GB of {} weights, more than the {:.0} GB of {count} × {}: the config is not the model the run loaded",
            weights / 1e9,
            f.precision.name,
            memory / 1e9,
            gpu.nvml_name
        )
    })
}

fn model_catalogue(input: &CheckInput) -> CheckResult {
    let mut models: Vec<&str> = input.rows.iter().map(|r| r.model.as_str()).collect();
    models.sort_unstable();
    models.dedup();
    if models.is_empty() {
        return skip(MODEL_CATALOGUE, "no models");
    }
    let bundled = |m: &str| input.bundled_models.iter().find(|b| b.id == m);
    let mut from_configs = Vec::new();
    let mut unknown = Vec::new();
    for m in models
        .iter()
        .copied()
        .filter(|m| catalog::model_by_id(m).is_none())
    {
        let implausible = |f: &crate::model_config::ModelFigures| {
            catalog::model_plausibility_problems(&catalog::ModelSpec::from_figures(m, f))
        };
        match bundled(m).map(|b| &b.figures) {
            Some(Ok(f)) if !implausible(f).is_empty() => unknown.push(format!(
                "{m} (its config.json gives implausible figures: {})",
                implausible(f).join("; ")
            )),
            Some(Ok(f)) if contradicts(input, f).is_some() => unknown.push(format!(
                "{m} ({})",
                contradicts(input, f).unwrap_or_default()
            )),
            Some(Ok(f)) => from_configs.push(format!(
                "{m} ({:.2} B parameters, {:.2} B active, {}, from its config.json)",
                f.total_params / 1e9,
                f.active_params / 1e9,
                f.precision.name
            )),
            Some(Err(e)) => unknown.push(format!("{m} ({e})")),
            None => unknown.push(format!("{m} (the bundle carries no config.json for it: pack with its Hugging Face cache, or --model-config {m}=FILE)")),
        }
    }
    // A catalogued model whose bundled config describes another shape (a
    // revision that changed the architecture, or another model behind the
    // name): the run is not the catalogue's model, and the catalogue entry
    // is never overwritten by a bundle, so it waits for a maintainer. The
    // shipped figures of size are rounded (7.0 for 7.62 B), so the shape is
    // judged on what the config states exactly.
    let mut other_shape = Vec::new();
    for m in models.iter().copied() {
        let (Some(spec), Some(b)) = (catalog::model_by_id(m), bundled(m)) else {
            continue;
        };
        let Ok(f) = &b.figures else { continue };
        let theirs = catalog::ModelSpec::from_figures(m, f);
        let shape =
            |s: &catalog::ModelSpec| (s.layers, s.hidden_size, s.attention_heads, s.kv_heads);
        if shape(&theirs) != shape(spec) {
            other_shape.push(format!(
                "{m} (its config.json{} gives {} layers, hidden size {}, {} heads ({} KV) where the catalogue's {m} has {}, {}, {} ({}): another revision or another model under this name, judged by a maintainer, never merged silently)",
                b.revision.as_deref().map(|r| format!(" at revision {r}")).unwrap_or_default(),
                theirs.layers, theirs.hidden_size, theirs.attention_heads, theirs.kv_heads,
                spec.layers, spec.hidden_size, spec.attention_heads, spec.kv_heads
            ));
        }
    }
    // A checkpoint's byte total (its model.safetensors.index.json) against
    // the formula's weights at the config's precision: a config that is
    // not the checkpoint's is off by far more than scales and norms.
    let mut agree = Vec::new();
    for b in input
        .bundled_models
        .iter()
        .filter(|b| models.contains(&b.id.as_str()))
    {
        let (Ok(f), Some(total)) = (&b.figures, &b.weights_total_bytes) else {
            continue;
        };
        let m = &b.id;
        match total {
            Err(why) => other_shape.push(format!("{m} (its model.safetensors.index.json: {why})")),
            Ok(total) => {
                let gap = (f.weight_bytes() / *total as f64 - 1.0).abs();
                if gap > crate::model_config::WEIGHTS_TOTAL_TOLERANCE {
                    other_shape.push(format!(
                        "{m} (its config.json gives {:.2} GB of {} weights, its model.safetensors.index.json {:.2} GB: {:.0} % apart, more than {:.0} %, so the config is not the checkpoint's)",
                        f.weight_bytes() / 1e9,
                        f.precision.name,
                        *total as f64 / 1e9,
                        gap * 100.0,
                        crate::model_config::WEIGHTS_TOTAL_TOLERANCE * 100.0
                    ));
                } else {
                    agree.push(format!("{m} {:.1} %", gap * 100.0));
                }
            }
        }
    }
    let mut r = verdict(
        MODEL_CATALOGUE,
        unknown.is_empty() && other_shape.is_empty(),
        if !other_shape.is_empty() {
            format!(
                "{} of {} models were run as another model than their config or the catalogue says: {}",
                other_shape.len(),
                models.len(),
                other_shape.join("; ")
            )
        } else if unknown.is_empty() && from_configs.is_empty() {
            format!("all {} models are in the catalogue", models.len())
        } else if unknown.is_empty() {
            format!(
                "{} of {} models join the catalogue from the bundle: {}",
                from_configs.len(),
                models.len(),
                from_configs.join("; ")
            )
        } else {
            format!(
                "{} of {} models are not in the catalogue, so their parameter counts are unknown: {}",
                unknown.len(),
                models.len(),
                unknown.join("; ")
            )
        },
        Location::default(),
    );
    if r.outcome == CheckOutcome::Pass && !agree.is_empty() {
        r.message.push_str(&format!(
            "; the safetensors byte totals agree with the formula ({})",
            agree.join(", ")
        ));
    }
    r.evaluated = models.len() as u32;
    r.failing = (unknown.len() + other_shape.len()) as u32;
    if let Some(first) = other_shape.first().or(unknown.first()) {
        r.location = Some(Location {
            model: Some(first.split(" (").next().unwrap_or(first).to_string()),
            ..Default::default()
        });
    }
    r
}

/// `identity.model_catalogue` on one L4 iteration `r` with `bundled`
/// configs (the tests' shared judge).
#[cfg(test)]
fn judge_models(
    r: &crate::bundle::harness::IterationRow,
    bundled: &[crate::model_config::BundledModel],
) -> CheckResult {
    let m = crate::checks::test_support::manifest();
    let rows = vec![r.clone()];
    let runs: Vec<_> = rows.iter().map(crate::derived::derive).collect();
    let configurations = crate::derived::aggregate(&runs);
    model_catalogue(&crate::checks::CheckInput {
        manifest: &m,
        received_at: crate::checks::test_support::received(),
        bundled_models: bundled,
        system_info: None,
        gpu: crate::catalog::gpu_by_id("l4"),
        rows: &rows,
        runs: &runs,
        configurations: &configurations,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_models_config_joins_or_says_why_not() {
        use crate::checks::test_support::row;
        use crate::model_config::BundledModel;
        // The rows' model is Qwen/Qwen2.5-0.5B-Instruct, in the catalogue:
        // rename it to one that is not.
        let mut r = row(&[50.0; 11], &[40.0], 100);
        r.model = "example-org/Big".into();
        let judge_with = |config: &str| {
            let b = BundledModel::read("example-org/Big", None, "00".repeat(32), config.as_bytes());
            judge_models(&r, std::slice::from_ref(&b))
        };
        // Llama-3.1-8B's shape: 8.03 B parameters, 16.06 GB at BF16, in
        // the L4's 24 GB: it joins from its config.
        let llama = r#"{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256, "tie_word_embeddings": false}"#;
        let ok = judge_with(llama);
        assert_eq!(ok.outcome, CheckOutcome::Pass, "{}", ok.message);
        assert!(
            ok.message.contains(
                "example-org/Big (8.03 B parameters, 8.03 B active, bf16, from its config.json)"
            ),
            "{}",
            ok.message
        );
        // Twice the layers at FP32: 64 layers of 218,103,808 = 13.96 B,
        // plus 1.05 B of embeddings, 15.01 B parameters × 4 bytes = 60.0
        // GB, over the L4's 24 GB: the config contradicts the run.
        let big = llama
            .replace("\"num_hidden_layers\": 32", "\"num_hidden_layers\": 64")
            .replace("}", ", \"torch_dtype\": \"float32\"}");
        let no = judge_with(&big);
        assert_eq!(no.outcome, CheckOutcome::Warn, "{}", no.message);
        assert!(no.message.contains("its config.json says 60.0 GB of fp32 weights, more than the 24 GB of 1 × NVIDIA L4"), "{}", no.message);
        // No config: named, with what to do.
        let none = judge_models(&r, &[]);
        assert_eq!(none.outcome, CheckOutcome::Warn);
        assert!(
            none.message
                .contains("the bundle carries no config.json for it"),
            "{}",
            none.message
        );
    }

    #[test]
    fn created_at_from_the_harness_to_a_day_ahead() {
        use crate::checks::test_support::{manifest, result_of, row};
        // Received 2026-12-07T00:00Z. A day ahead (2026-12-08T00:00Z) is
        // the slack and passes; 2099-01-01 is 26,323 days ahead (2026-12-07
        // to 2099-01-01: 72 years of 365 days and 18 leap days, 26,298,
        // plus the 25 days of December left) and warns.
        let at = |created: &str| {
            let mut m = manifest();
            m.created_at = created.into();
            result_of(
                CREATED_AT.id,
                &m,
                None,
                vec![row(&[50.0; 11], &[40.0], 100)],
            )
        };
        assert_eq!(at("2026-12-06T00:00:00Z").outcome, CheckOutcome::Pass);
        assert_eq!(at("2026-12-08T00:00:00Z").outcome, CheckOutcome::Pass);
        let late = at("2026-12-08T00:00:00.001Z");
        assert_eq!(late.outcome, CheckOutcome::Warn);
        let far = at("2099-01-01T00:00:00Z");
        assert_eq!(far.outcome, CheckOutcome::Warn, "{}", far.message);
        assert_eq!(far.figure, Some(26_323.0));
        assert!(
            far.message.contains(
                "26323.0 days after the service received the bundle (2026-12-07T00:00:00.000Z)"
            ),
            "{}",
            far.message
        );
        // The harness's first commit is 2025-02-02: that day passes, the
        // day before warns, and 1970 is 20,121 days before (55 years of
        // 365 days and 14 leap days, 1972 to 2024, from 1970-01-01 to
        // 2025-01-01, then 32 days to 2025-02-02).
        assert_eq!(at("2025-02-02T00:00:00Z").outcome, CheckOutcome::Pass);
        assert_eq!(at("2025-02-01T23:59:59Z").outcome, CheckOutcome::Warn);
        let old = at("1970-01-01T00:00:00Z");
        assert_eq!(old.outcome, CheckOutcome::Warn);
        assert_eq!(old.figure, Some(20_121.0));
        assert!(
            old.message
                .contains("before the benchmark harness existed (first release 2025-02-02)"),
            "{}",
            old.message
        );
        // An offset is honoured: 2026-12-08T01:00+02:00 is 23:00Z the day before.
        assert_eq!(at("2026-12-08T01:00:00+02:00").outcome, CheckOutcome::Pass);
        assert_eq!(at("not a date").outcome, CheckOutcome::Warn);
    }

    use super::*;
    use crate::bundle::system_info::SystemInfo;
    use crate::checks::test_support::{judge_case, manifest, result_of, row};

    /// The L4's default limit is 72 W; the manifest states `current`.
    fn limit(current: f64, declared: bool, info: Option<SystemInfo>) -> (CheckOutcome, String) {
        let mut m = manifest();
        m.system.gpu.power_limit_w = current;
        m.system.gpu.power_limit_declared = declared;
        let rows = vec![row(&[50.0; 11], &[40.0], 100)];
        judge_case(POWER_LIMIT.id, &m, info.as_ref(), rows)
    }

    fn info(name: &str, current: f64) -> SystemInfo {
        SystemInfo {
            gpu_name: Some(name.into()),
            power_limit_w: Some(current),
            default_power_limit_w: Some(72.0),
            ..Default::default()
        }
    }

    #[test]
    fn a_power_limit_half_a_watt_under_the_default_is_lowered() {
        // 71.6 W is within 0.5 W of 72 W; 71.4 W is not.
        assert_eq!(limit(71.6, false, None).0, CheckOutcome::Pass);
        let (o, m) = limit(71.4, false, None);
        assert_eq!(o, CheckOutcome::Warn);
        assert!(m.contains("current power limit 71 W, default 72 W"), "{m}");
        assert!(m.contains("--declare-power-limit"), "{m}");
        let (o, m) = limit(71.4, true, None);
        assert_eq!(o, CheckOutcome::Pass);
        assert!(m.contains("(declared)"), "{m}");
    }

    #[test]
    fn system_info_confirms_the_limit_within_half_a_watt() {
        assert_eq!(
            limit(72.0, false, Some(info("NVIDIA L4", 71.6))).0,
            CheckOutcome::Pass
        );
        let (o, m) = limit(72.0, false, Some(info("NVIDIA L4", 71.4)));
        assert_eq!(o, CheckOutcome::Warn);
        assert!(
            m.contains("says 72 W but system_info.txt shows a current power limit of 71 W"),
            "{m}"
        );
    }

    #[test]
    fn system_info_names_the_manifest_gpu() {
        let m = manifest();
        let rows = || vec![row(&[50.0; 11], &[40.0], 100)];
        let same = info("NVIDIA L4", 72.0);
        assert_eq!(
            judge_case(GPU_NAME.id, &m, Some(&same), rows()).0,
            CheckOutcome::Pass
        );
        let other = info("NVIDIA L40S", 72.0);
        let (o, msg) = judge_case(GPU_NAME.id, &m, Some(&other), rows());
        assert_eq!(o, CheckOutcome::Fail);
        assert!(
            msg.contains(&format!(
                "Product Name 'NVIDIA L40S' but {MANIFEST_NAME} /system/gpu/name says 'NVIDIA L4'"
            )),
            "{msg}"
        );
        let (o, msg) = judge_case(GPU_NAME.id, &m, None, rows());
        assert_eq!(o, CheckOutcome::Fail);
        assert!(msg.contains("the bundle has no system_info.txt"), "{msg}");
    }

    #[test]
    fn exactly_half_a_watt_under_is_not_lowered() {
        // 72 − 0.5 = 71.5 W: lowered means under it.
        assert_eq!(limit(71.5, false, None).0, CheckOutcome::Pass);
        // system_info 0.5 W from the manifest agrees; more does not.
        assert_eq!(
            limit(72.0, false, Some(info("NVIDIA L4", 71.5))).0,
            CheckOutcome::Pass
        );
    }

    #[test]
    fn a_system_info_without_the_current_limit_leaves_it_unconfirmed() {
        let mut i = info("NVIDIA L4", 72.0);
        i.power_limit_w = None;
        let (o, m) = limit(72.0, false, Some(i));
        assert_eq!(o, CheckOutcome::Warn);
        assert!(
            m.contains("has no 'Current Power Limit' line from nvidia-smi -q, so the 72 W in"),
            "{m}"
        );
    }

    #[test]
    fn an_unknown_gpu_names_the_closest_catalogue_ones() {
        let mut m = manifest();
        m.system.gpu.name = "NVIDIA A100-SXM4-96GB".into();
        let rows = vec![row(&[50.0; 11], &[40.0], 100)];
        let r = result_of(GPU_CATALOGUE.id, &m, None, rows);
        assert_eq!(r.outcome, CheckOutcome::Warn);
        // Words shared: a100 and sxm4 with the two SXM4 boards, a100 alone
        // with the PCIe ones (then by name: ' ' sorts before '-').
        assert!(
            r.message.contains(
                "(closest: NVIDIA A100-SXM4-40GB, NVIDIA A100-SXM4-80GB, NVIDIA A100 80GB PCIe)"
            ),
            "{}",
            r.message
        );
        m.system.gpu.name = "Acme Z9".into();
        let r = result_of(
            GPU_CATALOGUE.id,
            &m,
            None,
            vec![row(&[50.0; 11], &[40.0], 100)],
        );
        assert!(!r.message.contains("closest"), "{}", r.message);
        let r = result_of(
            GPU_CATALOGUE.id,
            &manifest(),
            None,
            vec![row(&[50.0; 11], &[40.0], 100)],
        );
        assert_eq!(r.outcome, CheckOutcome::Pass);
        assert!(r.message.contains("is catalogue GPU 'l4'"), "{}", r.message);
    }

    #[test]
    fn an_unknown_model_is_named_with_its_location() {
        let mut r = row(&[50.0; 11], &[40.0], 100);
        r.model = "acme/unknown-1b".into();
        let res = result_of(MODEL_CATALOGUE.id, &manifest(), None, vec![r]);
        assert_eq!(res.outcome, CheckOutcome::Warn);
        assert_eq!(
            res.location.unwrap().model.as_deref(),
            Some("acme/unknown-1b")
        );
        assert_eq!((res.evaluated, res.failing), (1, 1));
    }

    #[test]
    fn a_kept_rule_counts_no_failure() {
        let m = manifest();
        let same = info("NVIDIA L4", 72.0);
        let r = result_of(
            GPU_NAME.id,
            &m,
            Some(&same),
            vec![row(&[50.0; 11], &[40.0], 100)],
        );
        assert_eq!(
            (r.outcome, r.evaluated, r.failing),
            (CheckOutcome::Pass, 1, 0)
        );
    }

    #[test]
    fn the_word_nvidia_alone_makes_no_gpu_close() {
        let mut m = manifest();
        m.system.gpu.name = "NVIDIA Z9".into();
        let r = result_of(
            GPU_CATALOGUE.id,
            &m,
            None,
            vec![row(&[50.0; 11], &[40.0], 100)],
        );
        assert!(!r.message.contains("closest"), "{}", r.message);
    }

    #[test]
    fn system_info_s_limit_is_the_one_judged() {
        // The manifest says 71.6 W (not lowered), nvidia-smi 71.4 W (0.2 W
        // apart, so no disagreement): the card's own 71.4 W is lowered.
        let (o, m) = limit(71.6, false, Some(info("NVIDIA L4", 71.4)));
        assert_eq!(o, CheckOutcome::Warn);
        assert!(m.contains("current power limit 71 W"), "{m}");
    }
}

#[cfg(test)]
mod revisions {
    use super::*;

    /// A catalogued model run from a config of another shape waits for a
    /// maintainer (issue #54: never a silent overwrite); one of the same
    /// shape passes whatever its revision (the shipped sizes are rounded).
    #[test]
    fn a_catalogued_model_run_as_another_shape_waits() {
        use crate::checks::test_support::row;
        use crate::model_config::BundledModel;
        // The rows' model: Qwen/Qwen2.5-0.5B-Instruct, in the catalogue
        // (24 layers, hidden 896, 14 heads, 2 KV heads).
        let r = row(&[50.0; 11], &[40.0], 100);
        let judge_with = |config: &str| {
            let b = BundledModel::read(
                &r.model,
                Some("abc123".into()),
                "00".repeat(32),
                config.as_bytes(),
            );
            judge_models(&r, std::slice::from_ref(&b))
        };
        let same = r#"{"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": true}"#;
        let ok = judge_with(same);
        assert_eq!(ok.outcome, CheckOutcome::Pass, "{}", ok.message);
        let deeper = same.replace("\"num_hidden_layers\": 24", "\"num_hidden_layers\": 28");
        let no = judge_with(&deeper);
        assert_eq!(no.outcome, CheckOutcome::Warn, "{}", no.message);
        assert!(
            no.message.contains("its config.json at revision abc123 gives 28 layers, hidden size 896, 14 heads (2 KV) where the catalogue's Qwen/Qwen2.5-0.5B-Instruct has 24, 896, 14 (2)"),
            "{}",
            no.message
        );
        assert_eq!(no.failing, 1);
    }

    /// The checkpoint's byte total (model.safetensors.index.json) against
    /// the formula: Qwen2.5-0.5B's config gives 493,961,216 parameters,
    /// 987,922,432 bytes at BF16 (worked in model_config/tests.rs).
    #[test]
    fn a_byte_total_far_from_the_formula_waits() {
        use crate::checks::test_support::row;
        use crate::model_config::BundledModel;
        let r = row(&[50.0; 11], &[40.0], 100);
        let config = r#"{"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": true}"#;
        let judge_with = |total: Result<u64, String>| {
            let mut b = BundledModel::read(&r.model, None, "00".repeat(32), config.as_bytes());
            b.weights_total_bytes = Some(total);
            judge_models(&r, std::slice::from_ref(&b))
        };
        // 1,000,000,000 bytes: 987,922,432 ÷ 1e9 − 1 = −1.2 %, within 10 %.
        let ok = judge_with(Ok(1_000_000_000));
        assert_eq!(ok.outcome, CheckOutcome::Pass, "{}", ok.message);
        assert!(ok.message.contains("the safetensors byte totals agree with the formula (Qwen/Qwen2.5-0.5B-Instruct 1.2 %)"), "{}", ok.message);
        // 1.5 GB: 987,922,432 ÷ 1.5e9 − 1 = −34.1 %.
        let far = judge_with(Ok(1_500_000_000));
        assert_eq!(far.outcome, CheckOutcome::Warn, "{}", far.message);
        assert!(far.message.contains("its config.json gives 0.99 GB of bf16 weights, its model.safetensors.index.json 1.50 GB: 34 % apart, more than 10 %"), "{}", far.message);
        let none = judge_with(Err("no positive metadata.total_size".into()));
        assert_eq!(none.outcome, CheckOutcome::Warn);
        assert!(
            none.message
                .contains("its model.safetensors.index.json: no positive metadata.total_size"),
            "{}",
            none.message
        );
    }
}
