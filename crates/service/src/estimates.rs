//! The estimator's background job (issue #28): it watches the data
//! version (this instance's writes, and other instances' through the
//! data-stamp watcher), lets writes settle, reads one training row per
//! accepted reference-protocol group of the default view from the read
//! model, and either finds the fit of those rows stored under their
//! version or fits and validates them on a bounded number of blocking
//! threads, stores the fit (both backends) and swaps it in atomically.
//! Until then answers come from the previous fit, which says which it is.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use wattcounts_analytics::estimator::answer::Rules;
use wattcounts_analytics::estimator::trained::{
    canonical, version_of, Provenance, StoredFit, Trained,
};
use wattcounts_analytics::estimator::{training_rows, BoosterSettings, Settings};
use wattcounts_analytics::leaderboard::Query;
use wattcounts_store::EstimatorFitRow;

/// The `[estimator]` table of the configuration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EstimatorConfig {
    /// Whether the job runs at all.
    pub enabled: bool,
    /// The level of an estimate's intervals.
    pub level: f64,
    /// A feature or rate may lie this factor beyond the measured range.
    pub domain_factor: f64,
    /// Threads a fit and its validation may use.
    pub threads: usize,
    /// Seconds without writes before a refit starts.
    pub settle_secs: f64,
    /// Fits kept in the database.
    pub keep: u32,
    pub power: BoosterSettings,
    pub itl: BoosterSettings,
    pub seed: u64,
    /// Whether the trees read the catalogue's loaded-idle power ÷ TDP.
    pub idle_share: bool,
}

impl Default for EstimatorConfig {
    fn default() -> Self {
        let s = Settings::default();
        EstimatorConfig {
            enabled: true,
            level: Rules::default().level,
            domain_factor: Rules::default().domain_factor,
            threads: 1,
            settle_secs: 3.0,
            keep: 4,
            power: s.power,
            itl: s.itl,
            seed: s.seed,
            idle_share: s.idle_share,
        }
    }
}

impl EstimatorConfig {
    pub fn settings(&self) -> Settings {
        Settings {
            power: self.power,
            itl: self.itl,
            seed: self.seed,
            idle_share: self.idle_share,
        }
    }
    pub fn rules(&self) -> Rules {
        Rules {
            level: self.level,
            domain_factor: self.domain_factor,
        }
    }
    /// Refuses settings that cannot work, naming the key.
    pub fn check(&self) -> Result<(), String> {
        let bad = |k: &str, v: String, want: &str| Err(format!("[estimator] {k} = {v}: {want}"));
        if !(self.level > 0.0 && self.level < 1.0) {
            return bad(
                "level",
                self.level.to_string(),
                "expected a share between 0 and 1",
            );
        }
        if !(self.domain_factor.is_finite() && self.domain_factor >= 1.0) {
            return bad(
                "domain_factor",
                self.domain_factor.to_string(),
                "expected a number of at least 1",
            );
        }
        if self.threads == 0 {
            return bad("threads", "0".into(), "expected at least 1");
        }
        if !(self.settle_secs.is_finite() && self.settle_secs >= 0.0) {
            return bad(
                "settle_secs",
                self.settle_secs.to_string(),
                "expected seconds, at least 0",
            );
        }
        for (k, b) in [("power", &self.power), ("itl", &self.itl)] {
            let rate_ok = b.learning_rate.is_finite() && b.learning_rate > 0.0;
            let l2_ok = b.l2.is_finite() && b.l2 >= 0.0;
            if b.trees == 0 || b.max_depth == 0 || !rate_ok || !l2_ok {
                return bad(
                    k,
                    format!("{b:?}"),
                    "expected trees and max_depth of at least 1, learning_rate above 0, l2 at least 0",
                );
            }
        }
        Ok(())
    }
}

/// Where the job stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Phase {
    /// Fitting now (since); the previous fit, if any, still answers.
    Fitting { since: DateTime<Utc> },
    /// The current fit answers.
    Ready,
    /// No fit can be made from the data, or the job is off.
    Unavailable { why: String },
}

/// The estimator as readers see it at one moment.
pub struct EstimatorView {
    pub phase: Phase,
    /// The fit answering now (during a refit: the previous one).
    pub current: Option<Arc<Trained>>,
    pub rules: Rules,
    pub config: EstimatorConfig,
    /// Fits made and stored fits loaded by this process.
    pub fits_made: u64,
    pub fits_loaded: u64,
}

pub struct Estimates {
    config: EstimatorConfig,
    current: RwLock<Option<Arc<Trained>>>,
    phase: RwLock<Phase>,
    fits_made: AtomicU64,
    fits_loaded: AtomicU64,
}

/// Fewer GPUs or models than this and no fit is made: the splits that
/// score it need some left after one is held out.
pub const MIN_GPUS: usize = 3;
pub const MIN_MODELS: usize = 3;

impl Estimates {
    pub fn new(config: EstimatorConfig) -> Self {
        // Until the job's first refresh, readers are told to come back.
        let phase = if config.enabled {
            Phase::Fitting { since: Utc::now() }
        } else {
            Phase::Unavailable {
                why: "the estimator is turned off in this instance's configuration ([estimator] enabled = false)".into(),
            }
        };
        Estimates {
            config,
            current: RwLock::new(None),
            phase: RwLock::new(phase),
            fits_made: AtomicU64::new(0),
            fits_loaded: AtomicU64::new(0),
        }
    }

    pub fn config(&self) -> &EstimatorConfig {
        &self.config
    }

    pub fn view(&self) -> EstimatorView {
        EstimatorView {
            phase: self.phase.read().expect("not poisoned").clone(),
            current: self.current.read().expect("not poisoned").clone(),
            rules: self.config.rules(),
            config: self.config.clone(),
            fits_made: self.fits_made.load(Ordering::SeqCst),
            fits_loaded: self.fits_loaded.load(Ordering::SeqCst),
        }
    }

    fn set_phase(&self, p: Phase) {
        *self.phase.write().expect("not poisoned") = p;
    }

    fn swap(&self, t: Option<Arc<Trained>>) {
        *self.current.write().expect("not poisoned") = t;
    }

    fn current_version(&self) -> Option<String> {
        self.current
            .read()
            .expect("not poisoned")
            .as_ref()
            .map(|t| t.version.clone())
    }
}

/// The protocol the estimator is fitted on: the paper's.
const PROTOCOL: &str = "reference";

/// What a fit would be made of now.
struct TrainingSet {
    rows: Vec<wattcounts_analytics::estimator::TrainingRow>,
    origin: String,
    version: String,
}

/// What one refresh did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refreshed {
    /// The rows are those of the fit already answering.
    Unchanged,
    /// A stored fit of these rows was loaded.
    Loaded(String),
    /// A new fit was made and stored.
    Fitted(String),
    /// No fit can be made; why.
    Unavailable(String),
}

impl crate::Service {
    pub fn estimator(&self) -> EstimatorView {
        self.estimates.view()
    }

    /// The fit of the data as they are now, if one answers or is stored
    /// (never fitted here): what a snapshot's card names.
    pub async fn estimator_of_current_data(&self) -> anyhow::Result<Option<Arc<Trained>>> {
        let set = self.training_set().await?;
        let current = self.estimates.current.read().expect("not poisoned").clone();
        if let Some(t) = current.filter(|t| t.version == set.version) {
            return Ok(Some(t));
        }
        Ok(self.stored_fit(&set.version).await?.map(Arc::new))
    }

    /// The training rows of the default view, from the read model (groups,
    /// never runs), with their origin and the version a fit of them has.
    async fn training_set(&self) -> anyhow::Result<TrainingSet> {
        let board = self.all_groups(&Query::default()).await?;
        let origin = board.origin.as_str().to_string();
        let rows = canonical(training_rows(&board.entries));
        let version = version_of(&rows, &self.estimates.config.settings(), &origin, PROTOCOL);
        Ok(TrainingSet {
            rows,
            origin,
            version,
        })
    }

    /// The stored fit of `version`, when one is stored and this build can
    /// read it (an unreadable one is logged and fitted again).
    async fn stored_fit(&self, version: &str) -> anyhow::Result<Option<Trained>> {
        let Some(stored) = self.store.estimator_fit(version).await? else {
            return Ok(None);
        };
        match serde_json::from_str::<StoredFit>(&stored.body)
            .map_err(|err| err.to_string())
            .and_then(|s| Trained::from_stored(s).map_err(|err| err.to_string()))
        {
            Ok(t) => Ok(Some(t)),
            Err(why) => {
                tracing::warn!(%version, %why, "estimator: stored fit unreadable; fitting again");
                Ok(None)
            }
        }
    }

    /// Brings the estimator up to date with the data now: the training
    /// rows of the default view are read (groups, never runs); a fit of
    /// the same rows answering already is kept, one stored is loaded, or
    /// one is made. Readers keep the previous fit until the swap.
    pub async fn refresh_estimator(&self) -> anyhow::Result<Refreshed> {
        let e = &self.estimates;
        if !e.config.enabled {
            return Ok(Refreshed::Unavailable("turned off".into()));
        }
        let (s, ev) = self.store.data_stamp().await?;
        let data_stamp = format!("{s}.{ev}");
        let TrainingSet {
            rows,
            origin,
            version,
        } = self.training_set().await?;
        let settings = e.config.settings();
        let (gpus, models) = wattcounts_analytics::estimator::distinct_counts(&rows);
        if gpus < MIN_GPUS || models < MIN_MODELS {
            let why = format!(
                "the {origin} data of the reference protocol hold {gpus} catalogue GPU(s) and {models} catalogue model(s) with accepted groups; the estimator needs at least {MIN_GPUS} of each (its validation holds one out)"
            );
            e.swap(None);
            e.set_phase(Phase::Unavailable { why: why.clone() });
            self.changed();
            return Ok(Refreshed::Unavailable(why));
        }
        if e.current_version().as_deref() == Some(version.as_str()) {
            e.set_phase(Phase::Ready);
            return Ok(Refreshed::Unchanged);
        }
        if let Some(t) = self.stored_fit(&version).await? {
            e.swap(Some(Arc::new(t)));
            e.fits_loaded.fetch_add(1, Ordering::SeqCst);
            e.set_phase(Phase::Ready);
            self.changed();
            tracing::info!(%version, "estimator: loaded the stored fit");
            return Ok(Refreshed::Loaded(version));
        }
        e.set_phase(Phase::Fitting { since: Utc::now() });
        let provenance = Provenance {
            data_stamp,
            origin,
            protocol: PROTOCOL.into(),
            fitted_at: Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            fit_seconds: 0.0,
            validation_seconds: 0.0,
        };
        let threads = e.config.threads;
        let trained = tokio::task::spawn_blocking(move || {
            let start = Instant::now();
            Trained::train(rows, settings, provenance, threads, || {
                start.elapsed().as_secs_f64()
            })
        })
        .await?;
        let trained = match trained {
            Ok(t) => t,
            Err(err) => {
                let why = format!("fitting failed: {err}");
                e.set_phase(Phase::Unavailable { why: why.clone() });
                return Ok(Refreshed::Unavailable(why));
            }
        };
        let stored = trained.to_stored()?;
        self.store
            .put_estimator_fit(
                &EstimatorFitRow {
                    version: trained.version.clone(),
                    data_stamp: trained.provenance.data_stamp.clone(),
                    origin: trained.provenance.origin.clone(),
                    protocol: trained.provenance.protocol.clone(),
                    fitted_at: Utc::now(),
                    body: serde_json::to_string(&stored)?,
                },
                e.config.keep,
            )
            .await?;
        tracing::info!(
            version = %trained.version,
            rows = trained.rows.len(),
            fit_seconds = trained.provenance.fit_seconds,
            validation_seconds = trained.provenance.validation_seconds,
            "estimator: fitted"
        );
        e.swap(Some(Arc::new(trained)));
        e.fits_made.fetch_add(1, Ordering::SeqCst);
        e.set_phase(Phase::Ready);
        self.changed();
        Ok(Refreshed::Fitted(version))
    }

    /// The job: refreshes at start, then whenever the data version moves
    /// and has stayed put for the settle time. Runs until the process ends.
    pub async fn run_estimator(self: Arc<Self>) {
        if !self.estimates.config.enabled {
            return;
        }
        let settle = Duration::from_secs_f64(self.estimates.config.settle_secs);
        let poll = Duration::from_millis(200).min(settle.max(Duration::from_millis(20)));
        let mut seen = None;
        loop {
            let now = self.data_version();
            if seen != Some(now) {
                // Wait until no write has landed for `settle` (at start,
                // at once: a stored fit of the data is loaded, not awaited).
                let mut last = now;
                while seen.is_some() {
                    tokio::time::sleep(settle).await;
                    let v = self.data_version();
                    if v == last {
                        break;
                    }
                    last = v;
                }
                let before = self.data_version();
                let own_bumps = match self.refresh_estimator().await {
                    Ok(Refreshed::Unchanged) => 0,
                    Ok(_) => 1,
                    Err(err) => {
                        tracing::warn!(error = %err, "estimator: refresh failed; the previous fit answers");
                        self.estimates.set_phase(Phase::Unavailable {
                            why: format!("the last refresh failed: {err}"),
                        });
                        0
                    }
                };
                // The table on real hardware after the fit (it takes
                // seconds and must not hold up loading a stored fit): it
                // changes only with a peer import, and a second call for a
                // release reads one list.
                let peer_bumps = match self
                    .refresh_real_hardware_validation(self.estimates.config.settings())
                    .await
                {
                    Ok(swapped) => u64::from(swapped),
                    Err(err) => {
                        tracing::warn!(error = %err, "estimator: the real-hardware table failed");
                        0
                    }
                };
                // A swap bumps the version itself; that is not news. A
                // write that landed while fitting is, and is seen next.
                let after = self.data_version();
                seen = Some(if after == before + own_bumps + peer_bumps {
                    after
                } else {
                    before
                });
            }
            tokio::time::sleep(poll).await;
        }
    }
}

/// The dataset card's section on the fit of its data: the version, what
/// it was fitted on, and the validation table. Estimates themselves are
/// never in a snapshot.
pub fn card_section(t: &Trained) -> String {
    let (gpus, models) = t.counts();
    format!(
        "## Energy estimator\n\n\
         The service's estimator for GPU × model pairs nobody measured was fitted on these data: \
         version `{}`, fitted {} on {} {} groups of the {} protocol ({gpus} GPUs, {models} models). \
         No estimate is in any file of this snapshot; the table below is its out-of-fold validation \
         (energy: J/token in batch, J/request in server).\n\n{}",
        t.version,
        t.provenance.fitted_at,
        t.rows.len(),
        t.provenance.origin,
        t.provenance.protocol,
        wattcounts_analytics::estimator::validation::markdown(&t.report.lines)
    )
}
