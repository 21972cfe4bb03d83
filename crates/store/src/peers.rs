//! Imported peer releases (issue #39; see
//! `migrations/*/0014_peer_releases.sql`): a release, its files' digests
//! and its configurations, written in one transaction with its log leaf,
//! and read a page at a time. Nothing here touches the Watt Counts read
//! model: a peer's figures are another protocol's.

use async_trait::async_trait;

use crate::StoreError;

/// A `peer_files` row as stored, read by column name.
#[derive(sqlx::FromRow)]
pub(crate) struct StoredPeerFile {
    pub path: String,
    pub sha256: String,
    pub bytes: i64,
}
use wattcounts_rules::peer::{
    PeerConfig, PeerFile, PeerImportOutcome, PeerPage, PeerProvenance, PeerQuery, PeerRelease,
    PeerReleaseRecord, PeerSort,
};

#[async_trait]
pub trait Peers: Send + Sync {
    /// Stores a release with its files, configurations and log leaf, unless
    /// the same files (by `files_sha256`) are stored for its origin.
    async fn import_peer_release(
        &self,
        release: &PeerRelease,
        provenance: &PeerProvenance,
    ) -> Result<PeerImportOutcome, StoreError>;
    /// Every stored release, newest first within each origin (a handful).
    async fn peer_releases(&self) -> Result<Vec<PeerReleaseRecord>, StoreError>;
    /// The files a release read, by path.
    async fn peer_files(&self, release_id: i64) -> Result<Vec<PeerFile>, StoreError>;
    /// One page of one release's configurations.
    async fn peer_configurations(&self, q: &PeerQuery) -> Result<PeerPage, StoreError>;
    /// One model's configurations in the newest release of each origin,
    /// at most `limit`, with the release they belong to.
    async fn peer_configurations_of_model(
        &self,
        model_id: &str,
        limit: u32,
    ) -> Result<Vec<(i64, PeerConfig)>, StoreError>;
}

/// The ORDER BY of a sort. With one model's rows asked for, the sort
/// column is written `+column`: SQLite then reads the (release, task,
/// model) index and sorts that model's few rows, instead of walking the
/// whole task in sort order through the (release, task, J/token) index
/// (18 ms against under 1 ms at 56,500 rows). PostgreSQL reads `+x` as x.
pub(crate) fn order_by(sort: PeerSort, one_model: bool) -> String {
    let (column, direction, may_be_empty) = match sort {
        PeerSort::EnergyPerToken => ("energy_per_token_joules", "ASC", false),
        PeerSort::EnergyPerRequest => ("energy_per_request_joules", "ASC", false),
        PeerSort::Throughput => ("output_throughput_tokens_per_sec", "DESC", false),
        PeerSort::MedianItl => ("median_itl_ms", "ASC", true),
        PeerSort::Power => ("avg_power_watts", "ASC", true),
        PeerSort::BatchSize => ("max_num_seqs", "ASC", false),
    };
    let plus = if one_model { "+" } else { "" };
    // Empty figures last on both backends (SQLite sorts NULL first).
    let nulls = if may_be_empty {
        format!("{column} IS NULL, ")
    } else {
        String::new()
    };
    format!("{nulls}{plus}{column} {direction}")
}

pub(crate) const CONFIG_COLUMNS: &str = "file, pointer, task, task_name, model_id, nickname, architecture,
    total_params_billions, activated_params_billions, weight_precision, gpu_model, gpu_name, num_gpus,
    max_num_seqs, tensor_parallel, pipeline_parallel, expert_parallel, data_parallel, avg_batch_size,
    avg_power_watts, energy_per_token_joules, energy_per_request_joules, output_throughput_tokens_per_sec,
    avg_output_len, mean_itl_ms, median_itl_ms, p90_itl_ms, p95_itl_ms, p99_itl_ms";

/// Implements [`Peers`] for a backend module (`sqlite`, `postgres`).
macro_rules! peers_sql {
    ($store:ty, $row:ty, $conn:ty) => {
        fn peer_config_of(r: &$row) -> Result<::wattcounts_rules::peer::PeerConfig, StoreError> {
            use sqlx::Row;
            let n = |c: &str| -> Result<u32, StoreError> {
                let v: i64 = r.try_get(c).map_err(db_err)?;
                u32::try_from(v).map_err(|_| StoreError::Other(anyhow::anyhow!("{c} {v} out of range")))
            };
            let f = |c: &str| -> Result<f64, StoreError> { r.try_get(c).map_err(db_err) };
            let o = |c: &str| -> Result<Option<f64>, StoreError> { r.try_get(c).map_err(db_err) };
            let s = |c: &str| -> Result<String, StoreError> { r.try_get(c).map_err(db_err) };
            Ok(::wattcounts_rules::peer::PeerConfig {
                file: s("file")?,
                pointer: s("pointer")?,
                task: s("task")?,
                task_name: s("task_name")?,
                model_id: s("model_id")?,
                nickname: s("nickname")?,
                architecture: s("architecture")?,
                total_params_billions: o("total_params_billions")?,
                activated_params_billions: o("activated_params_billions")?,
                weight_precision: s("weight_precision")?,
                gpu_model: s("gpu_model")?,
                gpu_name: s("gpu_name")?,
                num_gpus: n("num_gpus")?,
                max_num_seqs: n("max_num_seqs")?,
                tensor_parallel: n("tensor_parallel")?,
                pipeline_parallel: n("pipeline_parallel")?,
                expert_parallel: n("expert_parallel")?,
                data_parallel: n("data_parallel")?,
                avg_batch_size: o("avg_batch_size")?,
                avg_power_watts: o("avg_power_watts")?,
                energy_per_token_joules: f("energy_per_token_joules")?,
                energy_per_request_joules: f("energy_per_request_joules")?,
                output_throughput_tokens_per_sec: f("output_throughput_tokens_per_sec")?,
                avg_output_len: f("avg_output_len")?,
                mean_itl_ms: o("mean_itl_ms")?,
                median_itl_ms: o("median_itl_ms")?,
                p90_itl_ms: o("p90_itl_ms")?,
                p95_itl_ms: o("p95_itl_ms")?,
                p99_itl_ms: o("p99_itl_ms")?,
            })
        }

        #[async_trait]
        impl $crate::peers::Peers for $store {
            async fn import_peer_release(
                &self,
                release: &::wattcounts_rules::peer::PeerRelease,
                provenance: &::wattcounts_rules::peer::PeerProvenance,
            ) -> Result<::wattcounts_rules::peer::PeerImportOutcome, StoreError> {
                use ::wattcounts_rules::peer::PeerImportOutcome;
                self.calls.run($crate::calls::CallKind::Transaction, "import_peer_release", async move {
                    let origin = release.source.origin();
                    let info = release.source.info();
                    let digest = release.files_sha256();
                    let _w = self.write_lock().await;
                    let mut tx = self.pool.begin_with(<$store>::DIALECT.begin_write).await.map_err(db_err)?;
                    let known: Option<i64> = sqlx::query_scalar(
                        "SELECT id FROM peer_releases WHERE origin = $1 AND files_sha256 = $2",
                    )
                    .bind(origin)
                    .bind(&digest)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    if let Some(release_id) = known {
                        return Ok(PeerImportOutcome::Unchanged { release_id });
                    }
                    let at = ts(&provenance.imported_at);
                    let id: i64 = sqlx::query_scalar(
                        "INSERT INTO peer_releases (origin, label, files_sha256, source_repository, source_path,
                            source_ref, licence, licence_text, skipped, facets, retrieved_at, imported_at, actor,
                            configurations)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id",
                    )
                    .bind(origin)
                    .bind(&release.label)
                    .bind(&digest)
                    .bind(info.repository)
                    .bind(info.path)
                    .bind(&provenance.source_ref)
                    .bind(info.licence)
                    .bind(&provenance.licence_text)
                    .bind(serde_json::to_string(&release.skipped).map_err(json_err)?)
                    .bind(serde_json::to_string(&release.facets()).map_err(json_err)?)
                    .bind(ts(&provenance.retrieved_at))
                    .bind(&at)
                    .bind(&provenance.actor)
                    .bind(release.configs.len() as i64)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(|e| match unique_violation(&e) {
                        Some(_) => StoreError::Conflict("this peer release"),
                        None => db_err(e),
                    })?;
                    for f in &release.files {
                        sqlx::query("INSERT INTO peer_files (release_id, path, sha256, bytes) VALUES ($1, $2, $3, $4)")
                            .bind(id)
                            .bind(&f.path)
                            .bind(&f.sha256)
                            .bind(f.bytes as i64)
                            .execute(&mut *tx)
                            .await
                            .map_err(db_err)?;
                    }
                    let insert = format!(
                        "INSERT INTO peer_configurations (release_id, position, {})
                         VALUES ({})",
                        $crate::peers::CONFIG_COLUMNS,
                        (1..=31).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
                    );
                    for (i, c) in release.configs.iter().enumerate() {
                        sqlx::query(&insert)
                            .bind(id)
                            .bind(i as i64)
                            .bind(&c.file)
                            .bind(&c.pointer)
                            .bind(&c.task)
                            .bind(&c.task_name)
                            .bind(&c.model_id)
                            .bind(&c.nickname)
                            .bind(&c.architecture)
                            .bind(c.total_params_billions)
                            .bind(c.activated_params_billions)
                            .bind(&c.weight_precision)
                            .bind(&c.gpu_model)
                            .bind(&c.gpu_name)
                            .bind(i64::from(c.num_gpus))
                            .bind(i64::from(c.max_num_seqs))
                            .bind(i64::from(c.tensor_parallel))
                            .bind(i64::from(c.pipeline_parallel))
                            .bind(i64::from(c.expert_parallel))
                            .bind(i64::from(c.data_parallel))
                            .bind(c.avg_batch_size)
                            .bind(c.avg_power_watts)
                            .bind(c.energy_per_token_joules)
                            .bind(c.energy_per_request_joules)
                            .bind(c.output_throughput_tokens_per_sec)
                            .bind(c.avg_output_len)
                            .bind(c.mean_itl_ms)
                            .bind(c.median_itl_ms)
                            .bind(c.p90_itl_ms)
                            .bind(c.p95_itl_ms)
                            .bind(c.p99_itl_ms)
                            .execute(&mut *tx)
                            .await
                            .map_err(db_err)?;
                    }
                    let leaf = ::wattcounts_rules::tlog::Leaf::PeerImport {
                        actor: provenance.actor.clone(),
                        at: at.clone(),
                        configurations: release.configs.len() as u64,
                        files_sha256: digest.clone(),
                        label: release.label.clone(),
                        origin: origin.to_string(),
                        source_ref: provenance.source_ref.clone(),
                    }
                    .canonical();
                    let log_index =
                        append_leaves(&mut tx, &[($crate::tlog::LogTarget::PeerRelease(id), leaf)], false).await?;
                    tx.commit().await.map_err(db_err)?;
                    Ok(PeerImportOutcome::Stored { release_id: id, log_index })
                }).await
            }

            async fn peer_releases(&self) -> Result<Vec<::wattcounts_rules::peer::PeerReleaseRecord>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "peer_releases", async move {
                    use sqlx::Row;
                    let rows = sqlx::query(
                        "SELECT id, origin, label, files_sha256, source_repository, source_path, source_ref,
                            licence, licence_text, skipped, facets, retrieved_at, imported_at, actor,
                            configurations, log_index
                         FROM peer_releases ORDER BY origin, id DESC",
                    )
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    rows.iter()
                        .map(|r| {
                            let s = |c: &str| -> Result<String, StoreError> { r.try_get(c).map_err(db_err) };
                            let origin = s("origin")?;
                            Ok(::wattcounts_rules::peer::PeerReleaseRecord {
                                id: r.try_get("id").map_err(db_err)?,
                                source: ::wattcounts_rules::peer::PeerSource::parse(&origin).ok_or_else(|| {
                                    StoreError::Other(anyhow::anyhow!("unknown peer origin {origin}"))
                                })?,
                                label: s("label")?,
                                files_sha256: s("files_sha256")?,
                                source_repository: s("source_repository")?,
                                source_path: s("source_path")?,
                                source_ref: s("source_ref")?,
                                licence: s("licence")?,
                                licence_text: s("licence_text")?,
                                skipped: serde_json::from_str(&s("skipped")?).map_err(json_err)?,
                                facets: serde_json::from_str(&s("facets")?).map_err(json_err)?,
                                retrieved_at: parse_ts(&s("retrieved_at")?)?,
                                imported_at: parse_ts(&s("imported_at")?)?,
                                actor: s("actor")?,
                                configurations: r.try_get::<i64, _>("configurations").map_err(db_err)? as u64,
                                log_index: r
                                    .try_get::<Option<i64>, _>("log_index")
                                    .map_err(db_err)?
                                    .map(|i| i as u64),
                            })
                        })
                        .collect()
                }).await
            }

            async fn peer_files(&self, release_id: i64) -> Result<Vec<::wattcounts_rules::peer::PeerFile>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "peer_files", async move {
                    let rows: Vec<$crate::peers::StoredPeerFile> = sqlx::query_as(
                        "SELECT path, sha256, bytes FROM peer_files WHERE release_id = $1 ORDER BY path",
                    )
                    .bind(release_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    Ok(rows
                        .into_iter()
                        .map(|$crate::peers::StoredPeerFile { path, sha256, bytes }| ::wattcounts_rules::peer::PeerFile { path, sha256, bytes: bytes as u64 })
                        .collect())
                }).await
            }

            async fn peer_configurations(
                &self,
                q: &::wattcounts_rules::peer::PeerQuery,
            ) -> Result<::wattcounts_rules::peer::PeerPage, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "peer_configurations", async move {
                    let mut filter = String::from("release_id = $1");
                    let mut params = vec![Param::Int(q.release_id)];
                    for (column, value) in [("task", &q.task), ("gpu_model", &q.gpu_model), ("model_id", &q.model_id)] {
                        if let Some(v) = value {
                            params.push(Param::Text(v.clone()));
                            filter.push_str(&format!(" AND {column} = ${}", params.len()));
                        }
                    }
                    let count = format!("SELECT COUNT(*) FROM peer_configurations WHERE {filter}");
                    let total: i64 = bind_all!(sqlx::query_scalar(&count), &params)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db_err)?;
                    let sql = format!(
                        "SELECT {} FROM peer_configurations WHERE {filter} ORDER BY {}, position LIMIT {} OFFSET {}",
                        $crate::peers::CONFIG_COLUMNS,
                        $crate::peers::order_by(q.sort, q.model_id.is_some()),
                        q.limit,
                        q.offset
                    );
                    let rows = bind_all!(sqlx::query(&sql), &params)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_err)?;
                    Ok(::wattcounts_rules::peer::PeerPage {
                        rows: rows.iter().map(peer_config_of).collect::<Result<_, _>>()?,
                        total: total as u64,
                    })
                }).await
            }

            async fn peer_configurations_of_model(
                &self,
                model_id: &str,
                limit: u32,
            ) -> Result<Vec<(i64, ::wattcounts_rules::peer::PeerConfig)>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "peer_configurations_of_model", async move {
                    use sqlx::Row;
                    let sql = format!(
                        "SELECT release_id, {} FROM peer_configurations
                         WHERE model_id = $1
                           AND release_id IN (SELECT MAX(id) FROM peer_releases GROUP BY origin)
                         ORDER BY release_id, task, gpu_model, energy_per_token_joules, position LIMIT {limit}",
                        $crate::peers::CONFIG_COLUMNS
                    );
                    let rows = sqlx::query(&sql)
                        .bind(model_id)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_err)?;
                    rows.iter()
                        .map(|r| Ok((r.try_get::<i64, _>("release_id").map_err(db_err)?, peer_config_of(r)?)))
                        .collect()
                }).await
            }
        }
    };
}
pub(crate) use peers_sql;
