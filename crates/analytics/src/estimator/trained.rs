//! A fitted estimator as the service keeps it: the boosters, the rows they
//! were fitted on (what neighbours, domain ranges and tokens per request
//! come from), the validation report (what intervals come from), the
//! settings and where the rows came from, under a version that digests
//! everything that decides a prediction. The same rows and settings give
//! the same version, so a stored fit is found again instead of refitted.

use serde::{Deserialize, Serialize};

use super::features::{ITL_EXTRA_FEATURES, POWER_FEATURES};
use super::validation::{validate_on, Report};
use super::{fit, EstimatorError, Fit, Settings, TrainingRow};

/// Where the training rows came from and when the fit was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The read model's data stamp when the rows were read.
    pub data_stamp: String,
    /// `real` or `demo`.
    pub origin: String,
    /// The protocol filter (`reference`).
    pub protocol: String,
    /// RFC 3339.
    pub fitted_at: String,
    pub fit_seconds: f64,
    pub validation_seconds: f64,
}

/// What the database stores (JSON), and what a restart loads.
#[derive(Serialize, Deserialize)]
pub struct StoredFit {
    pub version: String,
    pub crate_version: String,
    pub provenance: Provenance,
    pub settings: Settings,
    pub power_features: Vec<String>,
    pub itl_features: Vec<String>,
    pub rows: Vec<TrainingRow>,
    pub report: Report,
    /// forust's JSON of each booster.
    pub power_booster: String,
    pub itl_booster: String,
}

/// A fit ready to answer.
pub struct Trained {
    pub version: String,
    pub provenance: Provenance,
    pub settings: Settings,
    pub rows: Vec<TrainingRow>,
    pub report: Report,
    pub fit: Fit,
    pub(super) index: super::index::Index,
}

/// The rows in the one order fits and digests read them.
pub fn canonical(mut rows: Vec<TrainingRow>) -> Vec<TrainingRow> {
    rows.sort_by(|a, b| {
        (a.gpu_id.as_str(), a.model.as_str())
            .cmp(&(b.gpu_id.as_str(), b.model.as_str()))
            .then(
                a.lambda_qps
                    .unwrap_or(-1.0)
                    .total_cmp(&b.lambda_qps.unwrap_or(-1.0)),
            )
    });
    rows
}

/// The version of a fit: SHA-256 over the crate version, the catalogue
/// the features are read from, the settings, both feature lists, the
/// origin and protocol and the rows (canonical order). Validation and
/// predictions are functions of these.
pub fn version_of(
    rows: &[TrainingRow],
    settings: &Settings,
    origin: &str,
    protocol: &str,
) -> String {
    let doc = serde_json::json!({
        "crate": env!("CARGO_PKG_VERSION"),
        "catalogue": wattcounts_rules::catalog::digest(),
        "settings": settings,
        "power_features": POWER_FEATURES,
        "itl_features": all_itl_features(),
        "origin": origin,
        "protocol": protocol,
        "rows": rows,
    });
    wattcounts_rules::digest::sha256_hex(doc.to_string().as_bytes())
}

fn all_itl_features() -> Vec<&'static str> {
    POWER_FEATURES
        .iter()
        .chain(ITL_EXTRA_FEATURES)
        .copied()
        .collect()
}

impl Trained {
    /// Fits and validates `rows` (canonical order is imposed here) on up
    /// to `threads` threads; `clock` reads seconds elapsed so the caller
    /// times without this module knowing a clock.
    pub fn train(
        rows: Vec<TrainingRow>,
        settings: Settings,
        mut provenance: Provenance,
        threads: usize,
        mut clock: impl FnMut() -> f64,
    ) -> Result<Trained, EstimatorError> {
        let rows = canonical(rows);
        let version = version_of(&rows, &settings, &provenance.origin, &provenance.protocol);
        let t0 = clock();
        let fitted = fit(&rows, &settings)?;
        let t1 = clock();
        let report = validate_on(&rows, &settings, threads)?;
        provenance.fit_seconds = t1 - t0;
        provenance.validation_seconds = clock() - t1;
        Ok(Trained::assemble(
            version, provenance, settings, rows, report, fitted,
        ))
    }

    fn assemble(
        version: String,
        provenance: Provenance,
        settings: Settings,
        rows: Vec<TrainingRow>,
        report: Report,
        fit: Fit,
    ) -> Trained {
        let index = super::index::Index::of(&rows);
        Trained {
            version,
            provenance,
            settings,
            rows,
            report,
            fit,
            index,
        }
    }

    pub fn to_stored(&self) -> Result<StoredFit, EstimatorError> {
        let (power_booster, itl_booster) = self.fit.to_json()?;
        Ok(StoredFit {
            version: self.version.clone(),
            crate_version: env!("CARGO_PKG_VERSION").into(),
            provenance: self.provenance.clone(),
            settings: self.settings,
            power_features: POWER_FEATURES.iter().map(|s| s.to_string()).collect(),
            itl_features: all_itl_features().iter().map(|s| s.to_string()).collect(),
            rows: self.rows.clone(),
            report: self.report.clone(),
            power_booster,
            itl_booster,
        })
    }

    /// A stored fit, checked: its version must be what its rows and
    /// settings digest to under this build (another build's features
    /// would read the boosters wrongly).
    pub fn from_stored(s: StoredFit) -> Result<Trained, EstimatorError> {
        let expected = version_of(
            &s.rows,
            &s.settings,
            &s.provenance.origin,
            &s.provenance.protocol,
        );
        if expected != s.version {
            return Err(EstimatorError::Fit(format!(
                "stored fit {} does not match this build (its rows and settings digest to {expected})",
                s.version
            )));
        }
        let fit = Fit::from_json(&s.power_booster, &s.itl_booster, s.settings.idle_share)?;
        Ok(Trained::assemble(
            s.version,
            s.provenance,
            s.settings,
            s.rows,
            s.report,
            fit,
        ))
    }

    /// Distinct GPUs and models the rows hold.
    pub fn counts(&self) -> (usize, usize) {
        super::distinct_counts(&self.rows)
    }
}
