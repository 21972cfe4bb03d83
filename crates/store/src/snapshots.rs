//! Dataset snapshots: the one consistent read a snapshot publishes, and
//! the rows that track each snapshot from reserved to published (see
//! `migrations/*/0008_snapshots.sql`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{StoreError, SubmissionRecord};
use wattcounts_analytics::leaderboard::LeaderboardRow;
use wattcounts_rules::derived::IterationMetrics;

/// A published snapshot as the database lists it (read by column name).
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct SnapshotRow {
    pub id: String,
    /// The manifest's `created_at`, RFC 3339.
    pub created_at: String,
    /// manifest.json's exact bytes.
    pub manifest: String,
    pub manifest_sha256: String,
}

/// One piece of the accepted data as a snapshot reads it.
#[derive(Debug, Clone)]
pub enum SnapshotPart {
    /// Every accepted submission, oldest first.
    Submissions(Vec<SubmissionRecord>),
    /// Every accepted group (the leaderboard rows, all origins and protocols).
    Groups(Vec<LeaderboardRow>),
    /// Iterations with their submission, in submission then harness order.
    Runs(Vec<(Uuid, IterationMetrics)>),
    /// The log's size and root when read, with a consistency proof from
    /// the previous snapshot's size when one was asked for.
    LogHead {
        size: u64,
        root: wattcounts_rules::tlog::Hash,
        consistency: Option<wattcounts_rules::tlog::TreeProof>,
    },
    /// Leaves in index order (canonical JSON).
    LogEntries(Vec<String>),
    /// The read transaction ended well: everything was sent.
    Done,
}

#[async_trait]
pub trait Snapshots: Send + Sync {
    /// Everything a dataset snapshot publishes (accepted submissions only),
    /// read in one transaction so the parts agree with each other, sent in
    /// order: the submissions, the groups, then the runs in batches of
    /// `batch` (the channel's bound keeps memory flat).
    /// Then the transparency log as the same read sees it: its size,
    /// root and (from `previous_log_size`, the previous snapshot's) a
    /// consistency proof, then every leaf in batches.
    async fn snapshot_source(
        &self,
        out: tokio::sync::mpsc::Sender<SnapshotPart>,
        batch: usize,
        previous_log_size: Option<u64>,
    ) -> Result<(), StoreError>;
    /// Reserves a snapshot id; false when it is taken (published, or being
    /// written by this or another instance).
    async fn reserve_snapshot(&self, id: &str, at: &DateTime<Utc>) -> Result<bool, StoreError>;
    /// Marks a reserved snapshot published, once its manifest is written.
    async fn publish_snapshot(
        &self,
        row: &SnapshotRow,
        at: &DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Forgets a reservation that was never published.
    async fn drop_snapshot_reservation(&self, id: &str) -> Result<(), StoreError>;
    /// Reservations made before `before` and never published: creations
    /// that crashed.
    async fn stale_snapshot_reservations(
        &self,
        before: &DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError>;
    /// Published snapshots, newest first.
    async fn snapshots(&self) -> Result<Vec<SnapshotRow>, StoreError>;
    /// One published snapshot, or the newest for `None`.
    async fn snapshot(&self, id: Option<&str>) -> Result<Option<SnapshotRow>, StoreError>;
}

/// The stored columns of one iteration, in `IterationMetrics` order.
pub(crate) const RUN_COLUMNS: &str = "r.model, r.scenario, r.lambda_qps, r.iteration, r.started_at, r.duration_s,
    r.requests_ok, r.requests_failed, r.prompt_tokens, r.generation_tokens, r.gpu_energy_j, r.reported_gpu_energy_j,
    r.cpu_energy_j, r.dram_energy_j, r.power_mean_w, r.power_max_w, r.power_min_w, r.power_samples, r.temp_first_c,
    r.temp_max_c, r.energy_per_token_j, r.energy_per_request_j, r.throughput_tok_s, r.itl_s, r.ttft_p50_s, r.ttft_p90_s,
    r.e2e_p50_s, r.e2e_p90_s, r.timed_requests, r.ttft_sum_s, r.e2e_sum_s, r.mean_concurrency, r.prefill_energy_j";

/// Implements [`Snapshots`] for a backend module (`sqlite`, `postgres`): `$store`
/// has `pool`, `calls`, `write_lock()` and `DIALECT`; `$row` and `$conn` are
/// its row and connection types. The helpers it defines are shared by the
/// other aggregates of that module.
macro_rules! snapshots_sql {
    ($store:ty, $row:ty, $conn:ty) => {
        /// `r.submission_id` followed by [`RUN_COLUMNS`].
        fn run_row(r: &$row) -> Result<(Uuid, ::wattcounts_rules::derived::IterationMetrics), StoreError> {
            let id: String = r.get("submission_id");
            let scenario: String = r.get("scenario");
            let count = |name: &str| r.get::<i64, _>(name) as u64;
            Ok((
                Uuid::parse_str(&id).map_err(|e| StoreError::Other(e.into()))?,
                ::wattcounts_rules::derived::IterationMetrics {
                    model: r.get("model"),
                    scenario: Scenario::parse(&scenario)
                        .ok_or_else(|| StoreError::Other(anyhow::anyhow!("bad scenario {scenario}")))?,
                    lambda_qps: r.get("lambda_qps"),
                    iteration: r.get::<i64, _>("iteration") as u32,
                    started_at: r.get("started_at"),
                    duration_s: r.get("duration_s"),
                    requests_ok: count("requests_ok"),
                    requests_failed: count("requests_failed"),
                    prompt_tokens: count("prompt_tokens"),
                    generation_tokens: count("generation_tokens"),
                    gpu_energy_j: r.get("gpu_energy_j"),
                    reported_gpu_energy_j: r.get("reported_gpu_energy_j"),
                    cpu_energy_j: r.get("cpu_energy_j"),
                    dram_energy_j: r.get("dram_energy_j"),
                    power_mean_w: r.get("power_mean_w"),
                    power_max_w: r.get("power_max_w"),
                    power_min_w: r.get("power_min_w"),
                    power_samples: count("power_samples"),
                    temp_first_c: r.get("temp_first_c"),
                    temp_max_c: r.get("temp_max_c"),
                    energy_per_token_j: r.get("energy_per_token_j"),
                    energy_per_request_j: r.get("energy_per_request_j"),
                    throughput_tok_s: r.get("throughput_tok_s"),
                    itl_s: r.get("itl_s"),
                    ttft_p50_s: r.get("ttft_p50_s"),
                    ttft_p90_s: r.get("ttft_p90_s"),
                    e2e_p50_s: r.get("e2e_p50_s"),
                    e2e_p90_s: r.get("e2e_p90_s"),
                    timed_requests: r.get::<Option<i64>, _>("timed_requests").map(|n| n as u64),
                    ttft_sum_s: r.get("ttft_sum_s"),
                    e2e_sum_s: r.get("e2e_sum_s"),
                    mean_concurrency: r.get("mean_concurrency"),
                    prefill_energy_j: r.get("prefill_energy_j"),
                },
            ))
        }

        #[async_trait]
        impl $crate::snapshots::Snapshots for $store {
            async fn snapshot_source(
                &self,
                out: tokio::sync::mpsc::Sender<$crate::SnapshotPart>,
                batch: usize,
                previous_log_size: Option<u64>,
            ) -> Result<(), StoreError> {
                self.calls.run($crate::calls::CallKind::Maintenance, "snapshot_source", async move {
                    use futures_util::TryStreamExt;
                    use $crate::SnapshotPart;
                    let gone = || StoreError::Other(anyhow::anyhow!("the snapshot writer stopped"));
                    let mut tx = self.pool.begin().await.map_err(db_err)?;
                    for sql in <$store>::DIALECT.read_snapshot {
                        sqlx::query(sql).execute(&mut *tx).await.map_err(db_err)?;
                    }
                    let submissions = sqlx::query(&format!(
                        "{SUBMISSION_SELECT} WHERE s.status = 'accepted' AND s.duplicate_of IS NULL ORDER BY s.received_at, s.id"
                    ))
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db_err)?
                    .iter()
                    .map(submission_record)
                    .collect::<Result<Vec<_>, _>>()?;
                    out.send(SnapshotPart::Submissions(submissions)).await.map_err(|_| gone())?;
                    let mut groups = sqlx::query(&format!(
                        "SELECT {GROUP_COLUMNS} FROM leaderboard_groups WHERE visibility = 'accepted'"
                    ))
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db_err)?
                    .iter()
                    .map(group_entry)
                    .collect::<Result<Vec<_>, _>>()?;
                    groups.sort_by(|a, b| {
                        (a.origin.as_str(), &a.model, &a.gpu_id, a.scenario.as_str(), &a.protocol_id)
                            .cmp(&(b.origin.as_str(), &b.model, &b.gpu_id, b.scenario.as_str(), &b.protocol_id))
                            .then(a.lambda_qps.unwrap_or(0.0).total_cmp(&b.lambda_qps.unwrap_or(0.0)))
                    });
                    out.send(SnapshotPart::Groups(groups)).await.map_err(|_| gone())?;
                    // Runs stream in batches: memory stays flat however many there are.
                    let sql = format!(
                        "SELECT r.submission_id, {RUN_COLUMNS} FROM runs r JOIN submissions s ON s.id = r.submission_id
                         WHERE s.status = 'accepted' AND s.duplicate_of IS NULL ORDER BY s.received_at, s.id, r.id"
                    );
                    {
                        let mut rows = sqlx::query(&sql).fetch(&mut *tx);
                        let mut buf = Vec::with_capacity(batch);
                        while let Some(r) = rows.try_next().await.map_err(db_err)? {
                            buf.push(run_row(&r)?);
                            if buf.len() == batch {
                                let full = std::mem::replace(&mut buf, Vec::with_capacity(batch));
                                out.send(SnapshotPart::Runs(full)).await.map_err(|_| gone())?;
                            }
                        }
                        if !buf.is_empty() {
                            out.send(SnapshotPart::Runs(buf)).await.map_err(|_| gone())?;
                        }
                    }
                    // The log as this same read sees it: every submission above
                    // has its leaf below this size.
                    let size = sqlx::query_scalar::<_, i64>("SELECT COALESCE(MAX(idx) + 1, 0) FROM log_entries")
                        .fetch_one(&mut *tx)
                        .await
                        .map_err(db_err)? as u64;
                    let root = tree_op_in(&mut tx, |r| tlog_tiles::tree_hash(size, &r)).await?;
                    let consistency = match previous_log_size {
                        Some(p) if p > 0 && p < size => Some(tree_op_in(&mut tx, |r| tlog_tiles::prove_tree(size, p, &r)).await?),
                        _ => None,
                    };
                    out.send(SnapshotPart::LogHead { size, root, consistency }).await.map_err(|_| gone())?;
                    {
                        let mut rows = sqlx::query_scalar::<_, String>("SELECT leaf FROM log_entries WHERE idx < $1 ORDER BY idx")
                            .bind(size as i64)
                            .fetch(&mut *tx);
                        let mut buf = Vec::with_capacity(batch);
                        while let Some(leaf) = rows.try_next().await.map_err(db_err)? {
                            buf.push(leaf);
                            if buf.len() == batch {
                                let full = std::mem::replace(&mut buf, Vec::with_capacity(batch));
                                out.send(SnapshotPart::LogEntries(full)).await.map_err(|_| gone())?;
                            }
                        }
                        if !buf.is_empty() {
                            out.send(SnapshotPart::LogEntries(buf)).await.map_err(|_| gone())?;
                        }
                    }
                    tx.commit().await.map_err(db_err)?;
                    out.send(SnapshotPart::Done).await.map_err(|_| gone())?;
                    Ok(())
                }).await
            }

            async fn reserve_snapshot(&self, id: &str, at: &DateTime<Utc>) -> Result<bool, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "reserve_snapshot", async move {
                    sqlx::query("INSERT INTO snapshots (id, reserved_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING")
                        .bind(id)
                        .bind(ts(at))
                        .execute(&self.pool)
                        .await
                        .map(|r| r.rows_affected() == 1)
                        .map_err(db_err)
                }).await
            }

            async fn publish_snapshot(&self, row: &SnapshotRow, at: &DateTime<Utc>) -> Result<(), StoreError> {
                self.calls.run($crate::calls::CallKind::Transaction, "publish_snapshot", async move {
                    let done = sqlx::query(
                        "UPDATE snapshots SET published_at = $2, created_at = $3, manifest = $4, manifest_sha256 = $5
                         WHERE id = $1 AND published_at IS NULL",
                    )
                    .bind(&row.id)
                    .bind(ts(at))
                    .bind(&row.created_at)
                    .bind(&row.manifest)
                    .bind(&row.manifest_sha256)
                    .execute(&self.pool)
                    .await
                    .map_err(db_err)?;
                    if done.rows_affected() == 1 {
                        Ok(())
                    } else {
                        Err(StoreError::Other(anyhow::anyhow!(
                            "snapshot {} is not reserved (swept as stale, or published already)",
                            row.id
                        )))
                    }
                }).await
            }

            async fn drop_snapshot_reservation(&self, id: &str) -> Result<(), StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "drop_snapshot_reservation", async move {
                    sqlx::query("DELETE FROM snapshots WHERE id = $1 AND published_at IS NULL")
                        .bind(id)
                        .execute(&self.pool)
                        .await
                        .map(|_| ())
                        .map_err(db_err)
                }).await
            }

            async fn stale_snapshot_reservations(
                &self,
                before: &DateTime<Utc>,
            ) -> Result<Vec<String>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "stale_snapshot_reservations", async move {
                    sqlx::query_scalar(
                        "SELECT id FROM snapshots WHERE published_at IS NULL AND reserved_at < $1 ORDER BY id",
                    )
                    .bind(ts(before))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)
                }).await
            }

            async fn snapshots(&self) -> Result<Vec<SnapshotRow>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "snapshots", async move {
                    let rows: Vec<super::SnapshotRow> = sqlx::query_as(
                        "SELECT id, created_at, manifest, manifest_sha256 FROM snapshots
                         WHERE published_at IS NOT NULL ORDER BY created_at DESC, id DESC",
                    )
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    Ok(rows)
                }).await
            }

            async fn snapshot(&self, id: Option<&str>) -> Result<Option<SnapshotRow>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "snapshot", async move {
                    let row: Option<super::SnapshotRow> = match id {
                        Some(id) => sqlx::query_as(
                            "SELECT id, created_at, manifest, manifest_sha256 FROM snapshots
                             WHERE id = $1 AND published_at IS NOT NULL",
                        )
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await,
                        None => sqlx::query_as(
                            "SELECT id, created_at, manifest, manifest_sha256 FROM snapshots
                             WHERE published_at IS NOT NULL ORDER BY created_at DESC, id DESC LIMIT 1",
                        )
                        .fetch_optional(&self.pool)
                        .await,
                    }
                    .map_err(db_err)?;
                    Ok(row)
                }).await
            }
        }
    };
}
pub(crate) use snapshots_sql;
