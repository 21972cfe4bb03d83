//! What every reader of a peer release shares: the digest of the files
//! read, the error that names the file, pointer and rule, reading one file,
//! a configuration's fields, and the rules each configuration meets before
//! it is stored.

use super::{PeerConfig, PeerFile, PeerFolder};
use crate::digest::sha256_hex;

/// The digest of a release's files (their paths and SHA-256s).
pub fn files_sha256(files: &[PeerFile]) -> String {
    digest_of(files, &[])
}

/// SHA-256 over `path\tsha256\n` of every file, sorted by path, then
/// `statement\t<text>\n` of each operator's statement.
pub(crate) fn digest_of(files: &[PeerFile], statements: &[String]) -> String {
    let mut lines: Vec<String> = files
        .iter()
        .map(|f| format!("{}\t{}\n", f.path, f.sha256))
        .collect();
    lines.sort();
    lines.extend(statements.iter().map(|s| format!("statement\t{s}\n")));
    sha256_hex(lines.concat().as_bytes())
}

/// Why a release cannot be read: the file, the JSON pointer and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerError {
    pub file: String,
    pub pointer: String,
    pub rule: String,
}

impl std::fmt::Display for PeerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pointer.is_empty() {
            write!(f, "{}: {}", self.file, self.rule)
        } else {
            write!(f, "{} {}: {}", self.file, self.pointer, self.rule)
        }
    }
}

impl std::error::Error for PeerError {}

/// Reads one file through the loader and records its digest.
pub(crate) fn read_file(
    folder: &mut dyn PeerFolder,
    path: &str,
    files: &mut Vec<PeerFile>,
) -> Result<Vec<u8>, PeerError> {
    let bytes = folder.read(path).map_err(|e| PeerError {
        file: path.into(),
        pointer: String::new(),
        rule: format!("cannot be read: {e}"),
    })?;
    files.push(PeerFile {
        path: path.into(),
        sha256: sha256_hex(&bytes),
        bytes: bytes.len() as u64,
    });
    Ok(bytes)
}

/// [`read_file`], parsed as JSON.
pub(crate) fn load_file(
    folder: &mut dyn PeerFolder,
    path: &str,
    files: &mut Vec<PeerFile>,
) -> Result<serde_json::Value, PeerError> {
    let bytes = read_file(folder, path, files)?;
    serde_json::from_slice(&bytes).map_err(|e| PeerError {
        file: path.into(),
        pointer: String::new(),
        rule: format!("not JSON: {e}"),
    })
}

/// A `models.json` as both ML.ENERGY leaderboards (v1 and v2) publish it:
/// model id → (nickname, parameters in billions).
pub(crate) fn models_json(
    folder: &mut dyn PeerFolder,
    path: &str,
    files: &mut Vec<PeerFile>,
) -> Result<std::collections::BTreeMap<String, (String, f64)>, PeerError> {
    let doc = load_file(folder, path, files)?;
    doc.as_object()
        .ok_or_else(|| PeerError {
            file: path.into(),
            pointer: String::new(),
            rule: "an object keyed by model id is wanted".into(),
        })?
        .iter()
        .map(|(id, v)| {
            let at = Fields {
                file: path,
                pointer: format!("/{}", id.replace('~', "~0").replace('/', "~1")),
                value: v,
            };
            Ok((
                id.clone(),
                (
                    at.str("nickname")?,
                    at.num("params", 0.01, 100_000.0, "B parameters")?,
                ),
            ))
        })
        .collect()
}

/// A JSON object's fields, read with errors that name the file and the
/// pointer of the field.
pub(crate) struct Fields<'a> {
    pub file: &'a str,
    pub pointer: String,
    pub value: &'a serde_json::Value,
}

impl<'a> Fields<'a> {
    pub fn err(&self, key: &str, rule: impl Into<String>) -> PeerError {
        PeerError {
            file: self.file.into(),
            pointer: if key.is_empty() {
                self.pointer.clone()
            } else {
                format!(
                    "{}/{}",
                    self.pointer,
                    key.replace('~', "~0").replace('/', "~1")
                )
            },
            rule: rule.into(),
        }
    }

    fn get(&self, key: &str) -> Result<&'a serde_json::Value, PeerError> {
        match self.value.get(key) {
            Some(v) if !v.is_null() => Ok(v),
            _ => Err(self.err(key, "missing")),
        }
    }

    pub fn str(&self, key: &str) -> Result<String, PeerError> {
        match self.get(key)? {
            serde_json::Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
            serde_json::Value::String(_) => Err(self.err(key, "empty")),
            other => Err(self.err(key, format!("a string is wanted, found {other}"))),
        }
    }

    /// A finite number in `[lo, hi]`, with its unit named in the error.
    pub fn num(&self, key: &str, lo: f64, hi: f64, unit: &str) -> Result<f64, PeerError> {
        let v = self.get(key)?;
        let x = v
            .as_f64()
            .ok_or_else(|| self.err(key, format!("a number is wanted, found {v}")))?;
        if !(lo..=hi).contains(&x) {
            return Err(self.err(
                key,
                format!("out of range: {x} {unit} is outside [{lo}, {hi}] {unit}"),
            ));
        }
        Ok(x)
    }

    /// A whole number in `[lo, hi]`.
    pub fn count(&self, key: &str, lo: u32, hi: u32) -> Result<u32, PeerError> {
        let v = self.get(key)?;
        let x = v
            .as_u64()
            .ok_or_else(|| self.err(key, format!("a whole number is wanted, found {v}")))?;
        if x < u64::from(lo) || x > u64::from(hi) {
            return Err(self.err(key, format!("out of range: {x} is outside [{lo}, {hi}]")));
        }
        Ok(x as u32)
    }
}

/// Cross-field rules every published configuration must meet, whatever
/// its source: a unit slip (W for kW, ms for s, J per request for J per
/// token) breaks one of them. `tdp_w` is the catalogue TDP of one GPU.
pub(crate) fn check_config(c: &PeerConfig, tdp_w: f64, at: &Fields<'_>) -> Result<(), PeerError> {
    // v3's figures: v2 publishes neither power nor percentiles.
    let (Some(power), Some(median), Some(p90), Some(p95), Some(p99), Some(avg_batch)) = (
        c.avg_power_watts,
        c.median_itl_ms,
        c.p90_itl_ms,
        c.p95_itl_ms,
        c.p99_itl_ms,
        c.avg_batch_size,
    ) else {
        return Err(at.err(
            "",
            "power, ITL percentiles and the running batch are wanted",
        ));
    };
    let per_gpu = power / f64::from(c.num_gpus);
    // 1.2 x TDP: boards briefly exceed TDP, averages over a run do not.
    if per_gpu > 1.2 * tdp_w {
        return Err(at.err(
            "avg_power_watts",
            format!(
                "out of range: {:.1} W per GPU over {} GPUs is above 1.2 x the {} TDP of {tdp_w} W",
                per_gpu, c.num_gpus, c.gpu_name
            ),
        ));
    }
    // Energy per token is power over throughput (J = W x s); published
    // figures agree to float rounding, 1 % allows for a rounded copy.
    let implied = power / c.output_throughput_tokens_per_sec;
    if (c.energy_per_token_joules / implied - 1.0).abs() > 0.01 {
        return Err(at.err(
            "energy_per_token_joules",
            format!(
                "disagrees with avg_power_watts / output_throughput_tokens_per_sec: {} J vs {:.6} J",
                c.energy_per_token_joules, implied
            ),
        ));
    }
    let implied = c.energy_per_token_joules * c.avg_output_len;
    if (c.energy_per_request_joules / implied - 1.0).abs() > 0.01 {
        return Err(at.err(
            "energy_per_request_joules",
            format!(
                "disagrees with energy_per_token_joules x avg_output_len: {} J vs {:.3} J",
                c.energy_per_request_joules, implied
            ),
        ));
    }
    if !(median <= p90 && p90 <= p95 && p95 <= p99) {
        return Err(at.err(
            "p90_itl_ms",
            format!(
                "percentiles out of order: median {median} <= p90 {p90} <= p95 {p95} <= p99 {p99} ms is wanted"
            ),
        ));
    }
    // A running batch never exceeds its cap (a little float slack).
    if avg_batch > f64::from(c.max_num_seqs) * 1.0001 {
        return Err(at.err(
            "avg_batch_size",
            format!("{avg_batch} is above max_num_seqs {}", c.max_num_seqs),
        ));
    }
    if let (Some(active), Some(total)) = (c.activated_params_billions, c.total_params_billions) {
        if active > total * 1.0001 {
            return Err(at.err(
                "activated_params_billions",
                format!("{active} B activated is more than the {total} B total"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(value: &serde_json::Value) -> Fields<'_> {
        Fields {
            file: "tasks/gpqa.json",
            pointer: "/configurations/3".into(),
            value,
        }
    }

    #[test]
    fn a_field_is_there_and_of_its_kind_or_named() {
        let v = serde_json::json!({"a": null, "b": "  ", "c": "x", "n": 5, "x": 2.5});
        let f = fields(&v);
        // Null is missing, as an absent key is.
        for key in ["a", "zz"] {
            let e = f.str(key).unwrap_err();
            assert_eq!(e.rule, "missing");
            assert_eq!(e.pointer, format!("/configurations/3/{key}"));
        }
        assert_eq!(f.str("b").unwrap_err().rule, "empty");
        assert_eq!(f.str("c").unwrap(), "x");
        assert_eq!(f.str("n").unwrap_err().rule, "a string is wanted, found 5");
        // A key with / and ~ is escaped in the pointer (RFC 6901).
        assert_eq!(f.err("a/b~c", "r").pointer, "/configurations/3/a~1b~0c");
        assert_eq!(f.err("", "r").pointer, "/configurations/3");
    }

    #[test]
    fn counts_and_figures_hold_their_bounds_inclusive() {
        let v = serde_json::json!({"n": 5, "x": 2.5, "f": 1.5});
        let f = fields(&v);
        assert_eq!(f.count("n", 5, 5).unwrap(), 5);
        assert_eq!(f.count("n", 1, 5).unwrap(), 5);
        assert_eq!(f.count("n", 5, 9).unwrap(), 5);
        assert_eq!(
            f.count("n", 1, 4).unwrap_err().rule,
            "out of range: 5 is outside [1, 4]"
        );
        assert_eq!(
            f.count("n", 6, 9).unwrap_err().rule,
            "out of range: 5 is outside [6, 9]"
        );
        assert_eq!(
            f.count("n", 1, 3).unwrap_err().rule,
            "out of range: 5 is outside [1, 3]"
        );
        assert_eq!(
            f.count("f", 1, 9).unwrap_err().rule,
            "a whole number is wanted, found 1.5"
        );
        assert_eq!(f.num("x", 2.5, 2.5, "W").unwrap(), 2.5);
        assert_eq!(
            f.num("x", 0.0, 2.4, "W").unwrap_err().rule,
            "out of range: 2.5 W is outside [0, 2.4] W"
        );
    }

    /// One GPU of `tdp` W drawing `per_gpu` W at 100 tok/s, 200 output
    /// tokens a request, a running batch of `batch` under a cap of 100,
    /// `active` of 10 B parameters: consistent in every other figure.
    fn config(per_gpu: f64, batch: f64, active: f64) -> PeerConfig {
        let ept = per_gpu / 100.0;
        PeerConfig {
            file: "tasks/gpqa.json".into(),
            pointer: "/configurations/3".into(),
            task: "gpqa".into(),
            task_name: "GPQA".into(),
            model_id: "org/m".into(),
            nickname: "m".into(),
            architecture: "dense".into(),
            total_params_billions: Some(10.0),
            activated_params_billions: Some(active),
            weight_precision: "bfloat16".into(),
            gpu_model: "H100".into(),
            gpu_name: "NVIDIA H100 80GB HBM3".into(),
            num_gpus: 1,
            max_num_seqs: 100,
            tensor_parallel: 1,
            pipeline_parallel: 1,
            expert_parallel: 1,
            data_parallel: 1,
            avg_batch_size: Some(batch),
            avg_power_watts: Some(per_gpu),
            energy_per_token_joules: ept,
            energy_per_request_joules: ept * 200.0,
            output_throughput_tokens_per_sec: 100.0,
            avg_output_len: 200.0,
            mean_itl_ms: Some(20.0),
            median_itl_ms: Some(19.0),
            p90_itl_ms: Some(25.0),
            p95_itl_ms: Some(30.0),
            p99_itl_ms: Some(40.0),
        }
    }

    fn judge(c: &PeerConfig) -> Result<(), String> {
        let v = serde_json::json!({});
        check_config(c, 700.0, &fields(&v)).map_err(|e| format!("{} {}", e.pointer, e.rule))
    }

    #[test]
    fn power_stays_within_1_2_times_tdp_per_gpu() {
        // 1.2 × 700 W = 840 W: at the bound passes, past it fails; 800 W
        // (above 1.2 + 700) passes.
        assert_eq!(judge(&config(1.2 * 700.0, 50.0, 5.0)), Ok(()));
        assert_eq!(judge(&config(800.0, 50.0, 5.0)), Ok(()));
        let e = judge(&config(841.0, 50.0, 5.0)).unwrap_err();
        assert!(
            e.starts_with("/configurations/3/avg_power_watts out of range: 841.0 W per GPU"),
            "{e}"
        );
        // Two GPUs share the power: 1,600 W over 2 is 800 W each.
        let mut two = config(1600.0, 50.0, 5.0);
        two.num_gpus = 2;
        assert_eq!(judge(&two), Ok(()));
    }

    #[test]
    fn energies_agree_with_power_throughput_and_length() {
        let mut c = config(400.0, 50.0, 5.0);
        c.energy_per_token_joules *= 1.05;
        c.energy_per_request_joules *= 1.05;
        let e = judge(&c).unwrap_err();
        assert!(
            e.starts_with("/configurations/3/energy_per_token_joules disagrees"),
            "{e}"
        );
        let mut c = config(400.0, 50.0, 5.0);
        c.energy_per_request_joules *= 1.05;
        let e = judge(&c).unwrap_err();
        assert!(
            e.starts_with("/configurations/3/energy_per_request_joules disagrees"),
            "{e}"
        );
        // A rounded copy (0.5 % off) passes.
        let mut c = config(400.0, 50.0, 5.0);
        c.energy_per_request_joules *= 1.005;
        assert_eq!(judge(&c), Ok(()));
    }

    #[test]
    fn the_running_batch_and_the_active_parameters_stay_under_their_caps() {
        // The cap is 100 with 0.01 % slack: 100.01 passes, 100.005 too.
        assert_eq!(judge(&config(400.0, 100.0 * 1.0001, 5.0)), Ok(()));
        assert_eq!(judge(&config(400.0, 100.005, 5.0)), Ok(()));
        let e = judge(&config(400.0, 100.5, 5.0)).unwrap_err();
        assert_eq!(
            e,
            "/configurations/3/avg_batch_size 100.5 is above max_num_seqs 100"
        );
        // 10 B total: 10.001 B active passes (the slack), 11 B fails.
        assert_eq!(judge(&config(400.0, 50.0, 10.0 * 1.0001)), Ok(()));
        assert_eq!(judge(&config(400.0, 50.0, 10.0005)), Ok(()));
        let e = judge(&config(400.0, 50.0, 11.0)).unwrap_err();
        assert_eq!(
            e,
            "/configurations/3/activated_params_billions 11 B activated is more than the 10 B total"
        );
    }
}
