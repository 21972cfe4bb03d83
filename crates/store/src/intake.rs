//! Intake: what one bundle adds (the submission row, its runs,
//! configurations, check results and log leaf), written in one transaction
//! together with the read model it changes, and the reads of stored
//! submissions. Whether a bundle is new, the same bytes again, the same run
//! again or a taken id is decided once, by `wattcounts_rules::claims::judge`;
//! the insert here only reads the claims and, when it loses a race, reads
//! them again.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{PriorClaims, StoreError, SubmissionRecord, TableCounts};
use wattcounts_rules::checks::CheckResult;
use wattcounts_rules::derived::{ConfigurationMetrics, IterationMetrics};
use wattcounts_rules::domain::Status;

/// A stored submission that claims the same id or the same contents as
/// a new bundle, read by column name.
#[derive(sqlx::FromRow)]
pub(crate) struct Claim {
    pub id: String,
    pub bundle_sha256: String,
    pub status: String,
    pub content_sha256: Option<String>,
}

/// A submission's manifest and signature as received.
#[derive(sqlx::FromRow)]
pub(crate) struct Documents {
    pub manifest: String,
    pub signature: String,
}

/// When a submission was last accepted.
#[derive(sqlx::FromRow)]
pub(crate) struct AcceptedAt {
    pub submission_id: String,
    pub accepted_at: String,
}

/// Everything one bundle adds, written in one transaction.
#[derive(Debug, Clone)]
pub struct NewSubmission {
    pub id: Uuid,
    pub bundle_sha256: String,
    pub submitter_id: i64,
    /// The submitter's handle: the row stores `submitter_id`, the receipt
    /// the insert returns names the handle.
    pub handle: String,
    pub key_id: i64,
    /// The signing key's fingerprint, recorded in the submission's log leaf.
    pub key_fingerprint: String,
    pub status: Status,
    pub received_at: DateTime<Utc>,
    pub gpu_name: String,
    pub gpu_id: Option<String>,
    pub run_name: String,
    pub is_demo: bool,
    pub bundle_bytes: u64,
    pub blob_path: String,
    pub signature: String,
    pub manifest_json: String,
    /// What the runs followed; decides the groups the configurations join.
    pub protocol: wattcounts_rules::domain::Protocol,
    /// [`wattcounts_rules::protocol::content_digest`]: one submission per run content.
    pub content_sha256: String,
    pub runs: Vec<IterationMetrics>,
    pub configurations: Vec<ConfigurationMetrics>,
    pub checks: Vec<CheckResult>,
}

impl NewSubmission {
    /// The iterations the row counts (its stored `iterations`).
    pub fn iterations(&self) -> u64 {
        self.runs.len() as u64
    }
    /// The power samples of all its iterations (its stored `power_samples`).
    pub fn power_samples(&self) -> u64 {
        self.runs.iter().map(|r| r.power_samples).sum()
    }
    /// The lowest power sample of its server iterations (its stored
    /// `idle_seen_w`): the loaded idle it showed, if it served.
    pub fn idle_seen_w(&self) -> Option<f64> {
        self.runs
            .iter()
            .filter(|r| {
                r.scenario == wattcounts_rules::domain::Scenario::Server && r.power_samples > 0
            })
            .map(|r| r.power_min_w)
            .min_by(f64::total_cmp)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum InsertOutcome {
    /// Stored; the receipt of what was written (the caller reads nothing
    /// back).
    Inserted(Box<wattcounts_rules::receipt::Receipt>),
    /// These exact bytes were stored before, under this id.
    SameBytes(Uuid),
    /// The submission_id is known with other bytes.
    IdTaken,
    /// The same run content is stored under this id, in this status.
    SameContent(Uuid, Status),
}

#[async_trait]
pub trait Intake: Send + Sync {
    /// Every blob path a submission references (start-up recovery).
    async fn blob_paths(&self) -> Result<Vec<String>, StoreError>;
    async fn check_results(&self, id: Uuid) -> Result<Vec<CheckResult>, StoreError>;
    /// What a new bundle's submission_id and run content already name, in
    /// one read (the insert's two uniqueness rules, asked before the work
    /// of checking the bundle against its peers).
    async fn prior_claims(&self, id: Uuid, content_sha256: &str)
        -> Result<PriorClaims, StoreError>;
    async fn submission_by_digest(&self, sha256: &str) -> Result<Option<Uuid>, StoreError>;
    /// The manifest (JSON) and the `.sig` text the bundle came with.
    async fn submission_documents(&self, id: Uuid) -> Result<Option<(String, String)>, StoreError>;
    async fn insert_submission(&self, s: &NewSubmission) -> Result<InsertOutcome, StoreError>;
    async fn submission(&self, id: Uuid) -> Result<Option<SubmissionRecord>, StoreError>;
    async fn configurations(&self, id: Uuid) -> Result<Vec<ConfigurationMetrics>, StoreError>;
    async fn counts(&self) -> Result<TableCounts, StoreError>;
    /// Most recent accepted submissions, newest first.
    async fn latest_submissions(&self, limit: u32) -> Result<Vec<SubmissionRecord>, StoreError>;
    /// Most recent accepted submissions measured on one GPU, newest first
    /// (received, then id, descending); with `before`, those listed after
    /// that submission, so a page of them costs its `limit` rows down the
    /// index `submissions_gpu_recent` however deep it is (issue #55).
    async fn submissions_on_gpu(
        &self,
        gpu_id: &str,
        before: Option<Uuid>,
        limit: u32,
    ) -> Result<Vec<SubmissionRecord>, StoreError>;
    /// Most recent accepted submissions that measured `model`, newest first
    /// (reads the model's newest configurations, never a run, and never
    /// all of the model's: the cost follows `limit`).
    async fn submissions_with_model(
        &self,
        model: &str,
        limit: u32,
    ) -> Result<Vec<SubmissionRecord>, StoreError>;
    /// The models each of `ids` measured, in their configurations' order
    /// (once each).
    async fn models_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, Vec<String>)>, StoreError>;
    /// When each of these submissions was last accepted by a decision
    /// (a maintainer's approval, or a judgement again once the catalogue
    /// knew its GPU or model); absent for one accepted at intake, whose
    /// acceptance is its receipt. One indexed read for a feed's 50 items.
    async fn accepted_at(
        &self,
        ids: &[Uuid],
    ) -> Result<Vec<(Uuid, chrono::DateTime<chrono::Utc>)>, StoreError>;
}

pub(crate) const SUBMISSION_SELECT: &str = "SELECT s.id, s.bundle_sha256, u.handle, s.status, s.received_at, s.gpu_name, s.gpu_id, s.run_name,
        s.is_demo, s.bundle_bytes, s.blob_path, s.iterations, s.power_samples, s.protocol, s.content_sha256, s.duplicate_of,
        s.log_index, s.energy_rule
     FROM submissions s JOIN submitters u ON u.id = s.submitter_id";

/// Implements [`Intake`] for a backend module (`sqlite`, `postgres`): `$store`
/// has `pool`, `calls`, `write_lock()` and `DIALECT`; `$row` and `$conn` are
/// its row and connection types. The helpers it defines are shared by the
/// other aggregates of that module.
macro_rules! intake_sql {
    ($store:ty, $row:ty, $conn:ty) => {
        fn submission_record(r: &$row) -> Result<SubmissionRecord, StoreError> {
            let id: String = r.get("id");
            let status: String = r.get("status");
            let received: String = r.get("received_at");
            Ok(SubmissionRecord {
                id: Uuid::parse_str(&id).map_err(|e| StoreError::Other(e.into()))?,
                bundle_sha256: r.get("bundle_sha256"),
                handle: r.get("handle"),
                status: Status::parse(&status)
                    .ok_or_else(|| StoreError::Other(anyhow::anyhow!("bad status {status}")))?,
                received_at: parse_ts(&received)?,
                gpu_name: r.get("gpu_name"),
                gpu_id: r.get("gpu_id"),
                run_name: r.get("run_name"),
                is_demo: r.get("is_demo"),
                bundle_bytes: r.get::<i64, _>("bundle_bytes") as u64,
                blob_path: r.get("blob_path"),
                iterations: r.get::<i64, _>("iterations") as u64,
                power_samples: r.get::<i64, _>("power_samples") as u64,
                protocol: r
                    .get::<Option<String>, _>("protocol")
                    .map(|p| serde_json::from_str(&p).map_err(json_err))
                    .transpose()?,
                content_sha256: r.get("content_sha256"),
                duplicate_of: r
                    .get::<Option<String>, _>("duplicate_of")
                    .map(|d| Uuid::parse_str(&d).map_err(|e| StoreError::Other(e.into())))
                    .transpose()?,
                log_index: r.get::<Option<i64>, _>("log_index").map(|i| i as u64),
                energy_rule: i64::from(r.get::<i32, _>("energy_rule")),
            })
        }

        /// Recomputes one group from its members, holding its row lock
        /// (PostgreSQL) so two instances writing to one group lose nothing.
        /// Writes a submission's check results in report order (ingest, and
        /// a judgement again once the catalogue has its GPU).
        async fn insert_checks(tx: &mut $conn, id: &str, checks: &[CheckResult]) -> Result<(), StoreError> {
            for (i, c) in checks.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO check_results (submission_id, position, check_id, outcome, result) VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(id)
                .bind(i as i64)
                .bind(&c.id)
                .bind(c.outcome.as_str())
                .bind(serde_json::to_string(c).map_err(json_err)?)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            }
            Ok(())
        }

        /// Writes a submission's iterations (ingest, and `db rebuild`
        /// when an older rule derived them).
        async fn insert_runs(tx: &mut $conn, id: &str, runs: &[::wattcounts_rules::derived::IterationMetrics]) -> Result<(), StoreError> {
            for r in runs {
                    sqlx::query(
                        "INSERT INTO runs (submission_id, model, scenario, lambda_qps, iteration, started_at, duration_s,
                            requests_ok, requests_failed, prompt_tokens, generation_tokens, gpu_energy_j, reported_gpu_energy_j,
                            cpu_energy_j, dram_energy_j, power_mean_w, power_max_w, power_min_w, power_samples, temp_first_c,
                            temp_max_c, energy_per_token_j, energy_per_request_j, throughput_tok_s, itl_s, ttft_p50_s, ttft_p90_s,
                            e2e_p50_s, e2e_p90_s, timed_requests, ttft_sum_s, e2e_sum_s, mean_concurrency, prefill_energy_j)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29,
                            $30, $31, $32, $33, $34)",
                    )
                    .bind(id)
                    .bind(&r.model)
                    .bind(r.scenario.as_str())
                    .bind(r.lambda_qps)
                    .bind(r.iteration as i64)
                    .bind(&r.started_at)
                    .bind(r.duration_s)
                    .bind(r.requests_ok as i64)
                    .bind(r.requests_failed as i64)
                    .bind(r.prompt_tokens as i64)
                    .bind(r.generation_tokens as i64)
                    .bind(r.gpu_energy_j)
                    .bind(r.reported_gpu_energy_j)
                    .bind(r.cpu_energy_j)
                    .bind(r.dram_energy_j)
                    .bind(r.power_mean_w)
                    .bind(r.power_max_w)
                    .bind(r.power_min_w)
                    .bind(r.power_samples as i64)
                    .bind(r.temp_first_c)
                    .bind(r.temp_max_c)
                    .bind(r.energy_per_token_j)
                    .bind(r.energy_per_request_j)
                    .bind(r.throughput_tok_s)
                    .bind(r.itl_s)
                    .bind(r.ttft_p50_s)
                    .bind(r.ttft_p90_s)
                    .bind(r.e2e_p50_s)
                    .bind(r.e2e_p90_s)
                    .bind(r.timed_requests.map(|n| n as i64))
                    .bind(r.ttft_sum_s)
                    .bind(r.e2e_sum_s)
                    .bind(r.mean_concurrency)
                    .bind(r.prefill_energy_j)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                }
            Ok(())
        }

        impl $store {
            /// One JSON column of a submission's child rows, decoded.
            async fn json_rows<T: serde::de::DeserializeOwned>(
                &self,
                sql: &str,
                id: Uuid,
            ) -> Result<Vec<T>, StoreError> {
                let rows: Vec<String> = sqlx::query_scalar(sql)
                    .bind(id.to_string())
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                rows.iter()
                    .map(|r| serde_json::from_str(r).map_err(json_err))
                    .collect()
            }
        }

        #[async_trait]
        impl $crate::intake::Intake for $store {
            async fn blob_paths(&self) -> Result<Vec<String>, StoreError> {
                self.calls.run($crate::calls::CallKind::Maintenance, "blob_paths", async move {
                    sqlx::query_scalar("SELECT DISTINCT blob_path FROM submissions")
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_err)
                }).await
            }

            async fn check_results(&self, id: Uuid) -> Result<Vec<CheckResult>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "check_results", async move {
                    self.json_rows(
                        "SELECT result FROM check_results WHERE submission_id = $1 ORDER BY position",
                        id,
                    )
                    .await
                }).await
            }

            async fn prior_claims(&self, id: Uuid, content_sha256: &str) -> Result<PriorClaims, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "prior_claims", async move {
                    let id = id.to_string();
                    let rows: Vec<$crate::intake::Claim> = sqlx::query_as(
                        "SELECT id, bundle_sha256, status, content_sha256 FROM submissions WHERE id = $1 OR content_sha256 = $2",
                    )
                    .bind(&id)
                    .bind(content_sha256)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    let mut claims = PriorClaims::default();
                    for $crate::intake::Claim { id: row_id, bundle_sha256: digest, status, content_sha256: content } in rows {
                        if row_id == id {
                            claims.id_digest = Some(digest.clone());
                        }
                        if content.as_deref() == Some(content_sha256) {
                            claims.same_content = Some((
                                Uuid::parse_str(&row_id).map_err(|e| StoreError::Other(e.into()))?,
                                parse_status(&status)?,
                                digest,
                            ));
                        }
                    }
                    Ok(claims)
                }).await
            }

            async fn submission_by_digest(&self, sha256: &str) -> Result<Option<Uuid>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "submission_by_digest", async move {
                    let id: Option<String> =
                        sqlx::query_scalar("SELECT id FROM submissions WHERE bundle_sha256 = $1")
                            .bind(sha256)
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(db_err)?;
                    id.map(|s| Uuid::parse_str(&s).map_err(|e| StoreError::Other(e.into())))
                        .transpose()
                }).await
            }

            async fn submission_documents(
                &self,
                id: Uuid,
            ) -> Result<Option<(String, String)>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "submission_documents", async move {
                    let row: Option<$crate::intake::Documents> =
                        sqlx::query_as("SELECT manifest, signature FROM submissions WHERE id = $1")
                            .bind(id.to_string())
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(db_err)?;
                    Ok(row.map(|d| (d.manifest, d.signature)))
                }).await
            }

            async fn insert_submission(&self, s: &NewSubmission) -> Result<InsertOutcome, StoreError> {
                self.calls.run($crate::calls::CallKind::Transaction, "insert_submission", async move {
                    let _w = self.write_lock().await;
                    let mut tx = self.pool.begin_with(<$store>::DIALECT.begin_write).await.map_err(db_err)?;
                    let id = s.id.to_string();
                    let res = sqlx::query(
                        "INSERT INTO submissions (id, bundle_sha256, submitter_id, key_id, status, received_at, gpu_name, gpu_id,
                            run_name, is_demo, bundle_bytes, blob_path, signature, manifest, protocol, content_sha256,
                            iterations, power_samples, energy_rule, idle_seen_w)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)",
                    )
                    .bind(&id)
                    .bind(&s.bundle_sha256)
                    .bind(s.submitter_id)
                    .bind(s.key_id)
                    .bind(s.status.as_str())
                    .bind(ts(&s.received_at))
                    .bind(&s.gpu_name)
                    .bind(&s.gpu_id)
                    .bind(&s.run_name)
                    .bind(s.is_demo)
                    .bind(s.bundle_bytes as i64)
                    .bind(&s.blob_path)
                    .bind(&s.signature)
                    .bind(&s.manifest_json)
                    .bind(serde_json::to_string(&s.protocol).map_err(json_err)?)
                    .bind(&s.content_sha256)
                    .bind(s.iterations() as i64)
                    .bind(s.power_samples() as i64)
                    .bind(::wattcounts_rules::derived::ENERGY_RULE_VERSION)
                    .bind(s.idle_seen_w())
                    .execute(&mut *tx)
                    .await;
                    if let Err(e) = res {
                        drop(tx);
                        // Another request stored this id, these bytes or this
                        // run content first (PostgreSQL may report any of the
                        // constraints): the same bytes are a replay, the same
                        // content a duplicate, anything else reuses the id.
                        return match unique_violation(&e) {
                            Some(_) => {
                                let prior = self.prior_claims(s.id, &s.content_sha256).await?;
                                Ok(match ::wattcounts_rules::claims::judge(s.id, &s.bundle_sha256, &prior) {
                                    ::wattcounts_rules::claims::Claim::SameBytes(id) => InsertOutcome::SameBytes(id),
                                    ::wattcounts_rules::claims::Claim::SameContent(id, st) => InsertOutcome::SameContent(id, st),
                                    // A unique rule was hit, so some row holds this
                                    // id, these bytes or this run: with neither the
                                    // bytes nor the run ours, it is the id.
                                    ::wattcounts_rules::claims::Claim::IdTaken
                                    | ::wattcounts_rules::claims::Claim::New => InsertOutcome::IdTaken,
                                })
                            }
                            None => Err(db_err(e)),
                        };
                    }
                    insert_runs(&mut tx, &id, &s.runs).await?;
                    let mut groups = Vec::with_capacity(s.configurations.len());
                    for (i, c) in s.configurations.iter().enumerate() {
                        let g = ::wattcounts_analytics::leaderboard::group_of(
                            s.gpu_id.as_deref(),
                            &s.gpu_name,
                            s.is_demo,
                            &s.protocol,
                            c,
                        );
                        let f = ::wattcounts_analytics::leaderboard::member_figures(c);
                        sqlx::query(
                            "INSERT INTO configurations (submission_id, position, model, scenario, lambda_qps, iterations,
                                ept_median_j, ept_cv, throughput_median, power_mean_median_w, metrics, group_key, ept_lo,
                                ept_hi, ept_conf, epr_median, ttft_median, itl_median, intervals, concurrency_median,
                                prefill_share_median)
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)",
                        )
                        .bind(&id)
                        .bind(i as i64)
                        .bind(&c.model)
                        .bind(c.scenario.as_str())
                        .bind(c.lambda_qps)
                        .bind(c.iterations as i64)
                        .bind(c.energy_per_token_j.median)
                        .bind(c.energy_per_token_j.cv)
                        .bind(c.throughput_tok_s.median)
                        .bind(c.power_mean_w.median)
                        .bind(serde_json::to_string(c).map_err(|e| StoreError::Other(e.into()))?)
                        .bind(g.key.canonical())
                        .bind(f.ept_interval.lo)
                        .bind(f.ept_interval.hi)
                        .bind(f.ept_interval.confidence)
                        .bind(f.epr_median)
                        .bind(f.ttft_median)
                        .bind(f.itl_median)
                        .bind(f.intervals.to_json())
                        .bind(f.concurrency_median)
                        .bind(f.prefill_share_median)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                        groups.push(g);
                    }
                    insert_checks(&mut tx, &id, &s.checks).await?;
                    // The read model: every group this submission joins, in key
                    // order, then the counters.
                    groups.sort_by_cached_key(|g| g.key.canonical());
                    groups.dedup_by(|a, b| a.key == b.key);
                    for g in &groups {
                        ensure_group_key(&mut tx, g).await?;
                        refresh_group(&mut tx, &g.key.canonical()).await?;
                    }
                    move_counters(&mut tx, &id, None, s.status).await?;
                    // The log last: its lock is the last one a writer takes.
                    let leaf = $crate::tlog::submission_leaf(
                        &id,
                        &s.bundle_sha256,
                        &s.content_sha256,
                        &s.key_fingerprint,
                        &ts(&s.received_at),
                        s.status.as_str(),
                    );
                    let log_index = append_leaves(&mut tx, &[($crate::tlog::LogTarget::Submission(id.clone()), leaf)], false).await?;
                    tx.commit().await.map_err(db_err)?;
                    Ok(InsertOutcome::Inserted(Box::new($crate::receipt::of_inserted(s, log_index))))
                }).await
            }

            async fn submission(&self, id: Uuid) -> Result<Option<SubmissionRecord>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "submission", async move {
                    let row = sqlx::query(&format!("{SUBMISSION_SELECT} WHERE s.id = $1"))
                        .bind(id.to_string())
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db_err)?;
                    row.as_ref().map(submission_record).transpose()
                }).await
            }

            async fn latest_submissions(&self, limit: u32) -> Result<Vec<SubmissionRecord>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "latest_submissions", async move {
                    let rows = sqlx::query(&format!(
                        "{SUBMISSION_SELECT} WHERE s.status = 'accepted' ORDER BY s.received_at DESC LIMIT $1"
                    ))
                    .bind(limit as i64)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    rows.iter().map(submission_record).collect()
                }).await
            }

            async fn submissions_on_gpu(&self, gpu_id: &str, before: Option<Uuid>, limit: u32) -> Result<Vec<SubmissionRecord>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "submissions_on_gpu", async move {
                    // Keyset paging: `<=` on received_at gives the index a
                    // range to start from; the id breaks ties in receipt.
                    let after = if before.is_some() {
                        "AND s.received_at <= (SELECT received_at FROM submissions WHERE id = $3)
                         AND (s.received_at < (SELECT received_at FROM submissions WHERE id = $3) OR s.id < $3)"
                    } else {
                        ""
                    };
                    let sql = format!(
                        "{SUBMISSION_SELECT} WHERE s.gpu_id = $1 AND s.status = 'accepted' {after}
                         ORDER BY s.received_at DESC, s.id DESC LIMIT $2"
                    );
                    let rows = sqlx::query(&sql)
                    .bind(gpu_id)
                    .bind(limit as i64);
                    let rows = match before {
                        Some(b) => rows.bind(b.to_string()),
                        None => rows,
                    }
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    rows.iter().map(submission_record).collect()
                }).await
            }

            async fn submissions_with_model(&self, model: &str, limit: u32) -> Result<Vec<SubmissionRecord>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "submissions_with_model", async move {
                    // The model's configurations newest first (their ids are
                    // the order they were stored), walked down the index
                    // configurations_model_recent in pages of 2 × `limit`
                    // until `limit` accepted submissions are found: a
                    // submission holds a few configurations of one model (3
                    // or 4 on the reference protocol: 2 or 3 pages for a
                    // feed), so this reads about `limit` × that many rows
                    // however many the model has.
                    let page = (limit as i64).max(1) * 2;
                    let mut ids: Vec<String> = Vec::new();
                    let mut before = i64::MAX;
                    loop {
                        let rows = sqlx::query(
                            "SELECT c.id, c.submission_id FROM configurations c
                               JOIN submissions s ON s.id = c.submission_id
                              WHERE c.model = $1 AND c.id < $2 AND s.status = 'accepted'
                              ORDER BY c.id DESC LIMIT $3",
                        )
                        .bind(model)
                        .bind(before)
                        .bind(page)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_err)?;
                        for r in &rows {
                            before = r.get("id");
                            let id: String = r.get("submission_id");
                            if ids.len() < limit as usize && !ids.contains(&id) {
                                ids.push(id);
                            }
                        }
                        if (rows.len() as i64) < page || ids.len() >= limit as usize {
                            break;
                        }
                    }
                    if ids.is_empty() {
                        return Ok(Vec::new());
                    }
                    let sql = format!(
                        "{SUBMISSION_SELECT} WHERE s.id IN ({}) ORDER BY s.received_at DESC",
                        $crate::tlog::placeholders(ids.len())
                    );
                    let mut q = sqlx::query(&sql);
                    for id in &ids {
                        q = q.bind(id);
                    }
                    let rows = q.fetch_all(&self.pool).await.map_err(db_err)?;
                    rows.iter().map(submission_record).collect()
                }).await
            }

            async fn models_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, Vec<String>)>, StoreError> {
                if ids.is_empty() {
                    return Ok(Vec::new());
                }
                self.calls.run($crate::calls::CallKind::Request, "models_of", async move {
                    let sql = format!(
                        "SELECT submission_id, model FROM configurations WHERE submission_id IN ({})
                         ORDER BY submission_id, position",
                        $crate::tlog::placeholders(ids.len())
                    );
                    let mut q = sqlx::query(&sql);
                    for id in ids {
                        q = q.bind(id.to_string());
                    }
                    let rows = q.fetch_all(&self.pool).await.map_err(db_err)?;
                    let mut out: Vec<(Uuid, Vec<String>)> = ids.iter().map(|id| (*id, Vec::new())).collect();
                    let at: std::collections::HashMap<String, usize> =
                        ids.iter().enumerate().map(|(i, id)| (id.to_string(), i)).collect();
                    for r in &rows {
                        let id: String = r.get("submission_id");
                        let model: String = r.get("model");
                        if let Some(&i) = at.get(&id) {
                            let models = &mut out[i].1;
                            if !models.contains(&model) {
                                models.push(model);
                            }
                        }
                    }
                    Ok(out)
                }).await
            }

            async fn accepted_at(
                &self,
                ids: &[Uuid],
            ) -> Result<Vec<(Uuid, chrono::DateTime<chrono::Utc>)>, StoreError> {
                if ids.is_empty() {
                    return Ok(Vec::new());
                }
                self.calls.run($crate::calls::CallKind::Request, "accepted_at", async move {
                    let sql = format!(
                        "SELECT submission_id, MAX(created_at) AS accepted_at FROM moderation_events
                         WHERE to_status = 'accepted' AND submission_id IN ({})
                         GROUP BY submission_id",
                        $crate::tlog::placeholders(ids.len())
                    );
                    let mut q = sqlx::query_as::<_, $crate::intake::AcceptedAt>(&sql);
                    for id in ids {
                        q = q.bind(id.to_string());
                    }
                    q.fetch_all(&self.pool)
                        .await
                        .map_err(db_err)?
                        .into_iter()
                        .map(|r| {
                            Ok((
                                Uuid::parse_str(&r.submission_id).map_err(|e| StoreError::Other(e.into()))?,
                                parse_ts(&r.accepted_at)?,
                            ))
                        })
                        .collect()
                }).await
            }

            async fn configurations(&self, id: Uuid) -> Result<Vec<ConfigurationMetrics>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "configurations", async move {
                    self.json_rows(
                        "SELECT metrics FROM configurations WHERE submission_id = $1 ORDER BY position",
                        id,
                    )
                    .await
                }).await
            }

            async fn counts(&self) -> Result<TableCounts, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "counts", async move {
                    let r = sqlx::query(
                        "SELECT (SELECT COUNT(*) FROM submitters) AS n_submitters, (SELECT COUNT(*) FROM keys) AS n_keys,
                                (SELECT COUNT(*) FROM submissions) AS n_submissions, (SELECT COUNT(*) FROM runs) AS n_runs,
                                (SELECT COUNT(*) FROM configurations) AS n_configurations",
                    )
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db_err)?;
                    Ok(TableCounts {
                        submitters: r.get::<i64, _>("n_submitters") as u64,
                        keys: r.get::<i64, _>("n_keys") as u64,
                        submissions: r.get::<i64, _>("n_submissions") as u64,
                        runs: r.get::<i64, _>("n_runs") as u64,
                        configurations: r.get::<i64, _>("n_configurations") as u64,
                    })
                }).await
            }
        }
    };
}
pub(crate) use intake_sql;
