//! Moderation: status decisions, key revocations, suspensions and
//! catalogue additions. Each writes its event and the event's log leaf in
//! the transaction that makes the change, with the read model it moves.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{Actor, CatalogueAddition, StoreError, SubmissionRecord};
use wattcounts_rules::checks::CheckResult;
use wattcounts_rules::domain::Status;
use wattcounts_rules::receipt::ModerationEvent;

/// A key's row id and its owner's handle, read by column name.
#[derive(sqlx::FromRow)]
pub(crate) struct KeyOwner {
    pub key_id: i64,
    pub handle: String,
}

/// A submission's status and its submitter's handle, read by column name.
#[derive(sqlx::FromRow)]
pub(crate) struct StatusAndHandle {
    pub status: String,
    pub handle: String,
}

/// A `catalogue_gpus` row as stored, read by column name.
#[derive(sqlx::FromRow)]
pub(crate) struct StoredAddition {
    pub version: i64,
    pub spec: String,
    pub added_at: String,
    pub actor: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decided {
    /// Moved; the status it had.
    Done(Status),
    NotFound,
    /// Not in one of the expected statuses; what it is in.
    WrongStatus(Status),
}

#[async_trait]
pub trait Moderation: Send + Sync {
    /// Revokes a key from `effective_at` on: bundles received from then on
    /// are rejected (earlier ones stay), and one event is recorded for the
    /// key and one per submission it turns down. None if no such key.
    async fn revoke_key(
        &self,
        fingerprint: &str,
        effective_at: DateTime<Utc>,
        by: &Actor,
    ) -> Result<Option<Vec<Uuid>>, StoreError>;
    /// Suspends a submitter: their new bundles are refused. False if no such handle.
    async fn suspend_submitter(&self, handle: &str, by: &Actor) -> Result<bool, StoreError>;
    /// Moves a submission from one of `from` to `to` and records the event,
    /// atomically; says what the status was if it was not one of `from`.
    async fn decide(
        &self,
        id: Uuid,
        from: &[Status],
        to: Status,
        by: &Actor,
    ) -> Result<Decided, StoreError>;
    async fn moderation_events(&self, id: Uuid) -> Result<Vec<ModerationEvent>, StoreError>;
    /// Every GPU maintainers added, oldest first.
    async fn catalogue_additions(&self) -> Result<Vec<CatalogueAddition>, StoreError>;
    /// Adds `spec` to the catalogue with a decision leaf in the log, in one
    /// transaction; `None` when a GPU of that name was added before.
    async fn add_catalogue_gpu(
        &self,
        spec: &wattcounts_rules::catalog::GpuSpec,
        by: &Actor,
    ) -> Result<Option<CatalogueAddition>, StoreError>;
    /// Submissions waiting in review on a GPU the catalogue lacked when
    /// they arrived, by the name their manifest gives.
    async fn waiting_on_gpu(&self, nvml_name: &str) -> Result<Vec<SubmissionRecord>, StoreError>;
    /// Every model maintainers added, oldest first.
    async fn catalogue_models(
        &self,
    ) -> Result<Vec<wattcounts_rules::catalog::CatalogueModelAddition>, StoreError>;
    /// Adds a model with its provenance to the catalogue, with a decision
    /// leaf in the log, in one transaction; `None` when a model of that id
    /// was added before.
    async fn add_catalogue_model(
        &self,
        spec: &wattcounts_rules::catalog::ModelSpec,
        provenance: &wattcounts_rules::catalog::ModelProvenance,
        by: &Actor,
    ) -> Result<Option<wattcounts_rules::catalog::CatalogueModelAddition>, StoreError>;
    /// Submissions waiting in review that measured `model`.
    async fn waiting_on_model(&self, model: &str) -> Result<Vec<SubmissionRecord>, StoreError>;
    /// Judges a waiting submission again now that the catalogue has its GPU
    /// (or a model it measured):
    /// its GPU id, check results and status, a decision leaf saying why, its
    /// configurations in the groups of that GPU, all in one transaction.
    /// Refused (`WrongStatus`) unless it still waits in review.
    async fn rejudge(
        &self,
        id: Uuid,
        gpu_id: &str,
        checks: &[CheckResult],
        to: Status,
        by: &Actor,
    ) -> Result<Decided, StoreError>;
    /// Submissions in `status`, oldest first (the review queue).
    async fn submissions_with_status(
        &self,
        status: Status,
        limit: u32,
    ) -> Result<Vec<SubmissionRecord>, StoreError>;
}

/// What one moderation event row holds.
pub(crate) struct EventRow<'a> {
    pub(crate) action: &'a str,
    pub(crate) submission_id: Option<&'a str>,
    pub(crate) handle: Option<&'a str>,
    pub(crate) fingerprint: Option<&'a str>,
    pub(crate) from: Option<Status>,
    pub(crate) to: Option<Status>,
    pub(crate) effective_at: Option<&'a str>,
    pub(crate) reason: &'a str,
}

/// Implements [`Moderation`] for a backend module (`sqlite`, `postgres`): `$store`
/// has `pool`, `calls`, `write_lock()` and `DIALECT`; `$row` and `$conn` are
/// its row and connection types. The helpers it defines are shared by the
/// other aggregates of that module.
macro_rules! moderation_sql {
    ($store:ty, $row:ty, $conn:ty) => {
        /// A catalogue addition's decision leaf (a GPU's or a model's),
        /// appended last in the addition's transaction.
        async fn log_catalogue_add(tx: &mut $conn, by: &Actor, reason: &str) -> Result<(), StoreError> {
            let leaf = insert_event(
                tx,
                by,
                EventRow {
                    action: "catalogue_add",
                    submission_id: None,
                    handle: None,
                    fingerprint: None,
                    from: None,
                    to: None,
                    effective_at: None,
                    reason,
                },
            )
            .await?;
            append_leaves(tx, &[leaf], false).await.map(|_| ())
        }

        /// The version a new row `key` of a catalogue table
        /// (`catalogue_gpus` by `nvml_name`, `catalogue_models` by
        /// `model_id`) takes, one more than the last; `None` when the table
        /// has that key already (additions are never changed).
        async fn catalogue_slot(tx: &mut $conn, table: &str, column: &str, key: &str) -> Result<Option<i64>, StoreError> {
            let known: Option<i64> = sqlx::query_scalar(&format!("SELECT version FROM {table} WHERE {column} = $1"))
                .bind(key)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
            if known.is_some() {
                return Ok(None);
            }
            sqlx::query_scalar(&format!("SELECT CAST(COALESCE(MAX(version), 0) + 1 AS BIGINT) FROM {table}"))
                .fetch_one(&mut *tx)
                .await
                .map(Some)
                .map_err(db_err)
        }

        /// Records one event; returns its leaf, for the transaction to
        /// append last (the log lock is the last one a writer takes).
        async fn insert_event(
            tx: &mut $conn,
            by: &Actor,
            e: EventRow<'_>,
        ) -> Result<($crate::tlog::LogTarget, Vec<u8>), StoreError> {
            let at = ts(&by.at);
            let leaf = $crate::tlog::EventLeaf {
                action: e.action,
                actor: &by.name,
                at: &at,
                submission_id: e.submission_id,
                handle: e.handle,
                fingerprint: e.fingerprint,
                from: e.from.map(Status::as_str),
                to: e.to.map(Status::as_str),
                effective_at: e.effective_at,
                reason: e.reason,
            }
            .canonical();
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO moderation_events (created_at, actor, action, submission_id, submitter_handle, key_fingerprint,
                    from_status, to_status, effective_at, reason)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
            )
            .bind(&at)
            .bind(&by.name)
            .bind(e.action)
            .bind(e.submission_id)
            .bind(e.handle)
            .bind(e.fingerprint)
            .bind(e.from.map(Status::as_str))
            .bind(e.to.map(Status::as_str))
            .bind(e.effective_at)
            .bind(e.reason)
            .fetch_one(tx)
            .await
            .map_err(db_err)?;
            Ok(($crate::tlog::LogTarget::Event(id), leaf))
        }

        #[async_trait]
        impl $crate::moderation::Moderation for $store {
            async fn revoke_key(
                &self,
                fingerprint: &str,
                effective_at: chrono::DateTime<chrono::Utc>,
                by: &Actor,
            ) -> Result<Option<Vec<Uuid>>, StoreError> {
                self.calls.run($crate::calls::CallKind::Transaction, "revoke_key", async move {
                    let _w = self.write_lock().await;
                    let mut tx = self.pool.begin_with(<$store>::DIALECT.begin_write).await.map_err(db_err)?;
                    let key: Option<$crate::moderation::KeyOwner> = sqlx::query_as(
                        "SELECT k.id AS key_id, s.handle FROM keys k JOIN submitters s ON s.id = k.submitter_id WHERE k.fingerprint = $1",
                    )
                    .bind(fingerprint)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    let Some($crate::moderation::KeyOwner { key_id, handle }) = key else {
                        return Ok(None);
                    };
                    let effective = ts(&effective_at);
                    sqlx::query("UPDATE keys SET revoked_at = $1 WHERE id = $2")
                        .bind(&effective)
                        .bind(key_id)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    let mut leaves = vec![insert_event(
                        &mut tx,
                        by,
                        EventRow {
                            action: "revoke_key",
                            submission_id: None,
                            handle: Some(&handle),
                            fingerprint: Some(fingerprint),
                            from: None,
                            to: None,
                            effective_at: Some(&effective),
                            reason: &by.reason,
                        },
                    )
                    .await?];
                    // Bundles signed with the key after it was compromised are void.
                    let affected: Vec<$crate::sql::IdStatus> = sqlx::query_as(
                        "SELECT id, status FROM submissions WHERE key_id = $1 AND received_at >= $2 AND status <> 'rejected'
                         ORDER BY received_at",
                    )
                    .bind(key_id)
                    .bind(&effective)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    let why = format!("key {fingerprint} revoked from {effective}: {}", by.reason);
                    let mut rejected = Vec::with_capacity(affected.len());
                    let mut moved = Vec::with_capacity(affected.len());
                    for $crate::sql::IdStatus { id, status } in affected {
                        sqlx::query("UPDATE submissions SET status = 'rejected' WHERE id = $1")
                            .bind(&id)
                            .execute(&mut *tx)
                            .await
                            .map_err(db_err)?;
                        leaves.push(
                            insert_event(
                                &mut tx,
                                by,
                                EventRow {
                                    action: "reject",
                                    submission_id: Some(&id),
                                    handle: Some(&handle),
                                    fingerprint: Some(fingerprint),
                                    from: Some(parse_status(&status)?),
                                    to: Some(Status::Rejected),
                                    effective_at: None,
                                    reason: &why,
                                },
                            )
                            .await?,
                        );
                        moved.push((id.clone(), parse_status(&status)?));
                        rejected.push(Uuid::parse_str(&id).map_err(|e| StoreError::Other(e.into()))?);
                    }
                    // Groups first, counters last: the order every writer takes.
                    let ids: Vec<String> = moved.iter().map(|(id, _)| id.clone()).collect();
                    refresh_groups_of(&mut tx, &ids).await?;
                    for (id, from) in &moved {
                        move_counters(&mut tx, id, Some(*from), Status::Rejected).await?;
                    }
                    append_leaves(&mut tx, &leaves, false).await?;
                    tx.commit().await.map_err(db_err)?;
                    Ok(Some(rejected))
                }).await
            }

            async fn suspend_submitter(&self, handle: &str, by: &Actor) -> Result<bool, StoreError> {
                self.calls.run($crate::calls::CallKind::Transaction, "suspend_submitter", async move {
                    let _w = self.write_lock().await;
                    let mut tx = self.pool.begin_with(<$store>::DIALECT.begin_write).await.map_err(db_err)?;
                    let r = sqlx::query(
                        "UPDATE submitters SET suspended_at = COALESCE(suspended_at, $1) WHERE handle_lower = $2",
                    )
                    .bind(ts(&by.at))
                    .bind(handle.to_ascii_lowercase())
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    if r.rows_affected() == 0 {
                        return Ok(false);
                    }
                    let leaf = insert_event(
                        &mut tx,
                        by,
                        EventRow {
                            action: "suspend_submitter",
                            submission_id: None,
                            handle: Some(handle),
                            fingerprint: None,
                            from: None,
                            to: None,
                            effective_at: None,
                            reason: &by.reason,
                        },
                    )
                    .await?;
                    append_leaves(&mut tx, &[leaf], false).await?;
                    tx.commit().await.map_err(db_err)?;
                    Ok(true)
                }).await
            }

            async fn decide(
                &self,
                id: Uuid,
                from: &[Status],
                to: Status,
                by: &Actor,
            ) -> Result<Decided, StoreError> {
                self.calls.run($crate::calls::CallKind::Transaction, "decide", async move {
                    let _w = self.write_lock().await;
                    let mut tx = self.pool.begin_with(<$store>::DIALECT.begin_write).await.map_err(db_err)?;
                    let id_text = id.to_string();
                    let current: Option<$crate::moderation::StatusAndHandle> = sqlx::query_as(
                        "SELECT s.status, u.handle FROM submissions s JOIN submitters u ON u.id = s.submitter_id WHERE s.id = $1",
                    )
                    .bind(&id_text)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    let Some($crate::moderation::StatusAndHandle { status: current, handle }) = current else {
                        return Ok(Decided::NotFound);
                    };
                    let current = parse_status(&current)?;
                    if !from.contains(&current) {
                        return Ok(Decided::WrongStatus(current));
                    }
                    // Conditional on the status just read: of two maintainers
                    // deciding at once (two instances), one wins; the other is
                    // told what the status now is.
                    let moved = sqlx::query("UPDATE submissions SET status = $1 WHERE id = $2 AND status = $3")
                        .bind(to.as_str())
                        .bind(&id_text)
                        .bind(current.as_str())
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    if moved.rows_affected() == 0 {
                        drop(tx);
                        let now: String = sqlx::query_scalar("SELECT status FROM submissions WHERE id = $1")
                            .bind(&id_text)
                            .fetch_one(&self.pool)
                            .await
                            .map_err(db_err)?;
                        return Ok(Decided::WrongStatus(parse_status(&now)?));
                    }
                    let leaf = insert_event(
                        &mut tx,
                        by,
                        EventRow {
                            action: if to == Status::Accepted {
                                "approve"
                            } else {
                                "reject"
                            },
                            submission_id: Some(&id_text),
                            handle: Some(&handle),
                            fingerprint: None,
                            from: Some(current),
                            to: Some(to),
                            effective_at: None,
                            reason: &by.reason,
                        },
                    )
                    .await?;
                    refresh_groups_of(&mut tx, std::slice::from_ref(&id_text)).await?;
                    move_counters(&mut tx, &id_text, Some(current), to).await?;
                    append_leaves(&mut tx, &[leaf], false).await?;
                    tx.commit().await.map_err(db_err)?;
                    Ok(Decided::Done(current))
                }).await
            }

            async fn catalogue_additions(&self) -> Result<Vec<$crate::CatalogueAddition>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "catalogue_additions", async move {
                    let rows: Vec<$crate::moderation::StoredAddition> = sqlx::query_as(
                        "SELECT version, spec, added_at, actor, reason FROM catalogue_gpus ORDER BY version",
                    )
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    rows.into_iter()
                        .map(|$crate::moderation::StoredAddition { version, spec, added_at, actor, reason }| {
                            Ok($crate::CatalogueAddition {
                                version,
                                spec: serde_json::from_str(&spec).map_err(json_err)?,
                                added_at,
                                actor,
                                reason,
                            })
                        })
                        .collect()
                }).await
            }

            async fn add_catalogue_gpu(
                &self,
                spec: &::wattcounts_rules::catalog::GpuSpec,
                by: &Actor,
            ) -> Result<Option<$crate::CatalogueAddition>, StoreError> {
                self.calls.run($crate::calls::CallKind::Transaction, "add_catalogue_gpu", async move {
                    let _w = self.write_lock().await;
                    let mut tx = self.pool.begin_with(<$store>::DIALECT.begin_write).await.map_err(db_err)?;
                    let Some(version) = catalogue_slot(&mut tx, "catalogue_gpus", "nvml_name", &spec.nvml_name).await? else {
                        return Ok(None);
                    };
                    let body = serde_json::to_string(spec).map_err(json_err)?;
                    let at = ts(&by.at);
                    sqlx::query(
                        "INSERT INTO catalogue_gpus (nvml_name, version, spec, added_at, actor, reason) VALUES ($1, $2, $3, $4, $5, $6)",
                    )
                    .bind(&spec.nvml_name)
                    .bind(version)
                    .bind(&body)
                    .bind(&at)
                    .bind(&by.name)
                    .bind(&by.reason)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    // The log records what was added: the name, the version and
                    // the digest of the figures, beside the maintainer's reason.
                    let reason = format!(
                        "{}; catalogue GPU '{}' added as version {version} (figures sha256 {}, source {})",
                        by.reason,
                        spec.nvml_name,
                        ::wattcounts_rules::digest::sha256_hex(body.as_bytes()),
                        spec.source
                    );
                    log_catalogue_add(&mut tx, by, &reason).await?;
                    tx.commit().await.map_err(db_err)?;
                    Ok(Some($crate::CatalogueAddition {
                        version,
                        spec: spec.clone(),
                        added_at: at,
                        actor: by.name.clone(),
                        reason: by.reason.clone(),
                    }))
                }).await
            }

            async fn catalogue_models(
                &self,
            ) -> Result<Vec<::wattcounts_rules::catalog::CatalogueModelAddition>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "catalogue_models", async move {
                    let rows = sqlx::query(
                        "SELECT version, spec, provenance, added_at, actor, reason FROM catalogue_models ORDER BY version",
                    )
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    rows.iter()
                        .map(|r| {
                            Ok(::wattcounts_rules::catalog::CatalogueModelAddition {
                                version: r.get("version"),
                                spec: serde_json::from_str(r.get::<&str, _>("spec")).map_err(json_err)?,
                                provenance: serde_json::from_str(r.get::<&str, _>("provenance")).map_err(json_err)?,
                                added_at: r.get("added_at"),
                                actor: r.get("actor"),
                                reason: r.get("reason"),
                            })
                        })
                        .collect()
                }).await
            }

            async fn add_catalogue_model(
                &self,
                spec: &::wattcounts_rules::catalog::ModelSpec,
                provenance: &::wattcounts_rules::catalog::ModelProvenance,
                by: &Actor,
            ) -> Result<Option<::wattcounts_rules::catalog::CatalogueModelAddition>, StoreError> {
                self.calls.run($crate::calls::CallKind::Transaction, "add_catalogue_model", async move {
                    let _w = self.write_lock().await;
                    let mut tx = self.pool.begin_with(<$store>::DIALECT.begin_write).await.map_err(db_err)?;
                    let Some(version) = catalogue_slot(&mut tx, "catalogue_models", "model_id", &spec.id).await? else {
                        return Ok(None);
                    };
                    let body = serde_json::to_string(spec).map_err(json_err)?;
                    let source = serde_json::to_string(provenance).map_err(json_err)?;
                    let at = ts(&by.at);
                    sqlx::query(
                        "INSERT INTO catalogue_models (model_id, version, spec, provenance, added_at, actor, reason) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    )
                    .bind(&spec.id)
                    .bind(version)
                    .bind(&body)
                    .bind(&source)
                    .bind(&at)
                    .bind(&by.name)
                    .bind(&by.reason)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    // The log records the model, its version, the figures'
                    // digest and where they came from, beside the reason.
                    let reason = format!(
                        "{}; catalogue model '{}' added as version {version} (figures sha256 {}, from config.json sha256 {} of {}{})",
                        by.reason,
                        spec.id,
                        ::wattcounts_rules::digest::sha256_hex(body.as_bytes()),
                        provenance.config_sha256,
                        provenance.repo,
                        provenance.revision.as_deref().map(|r| format!(" at {r}")).unwrap_or_default()
                    );
                    log_catalogue_add(&mut tx, by, &reason).await?;
                    tx.commit().await.map_err(db_err)?;
                    Ok(Some(::wattcounts_rules::catalog::CatalogueModelAddition {
                        version,
                        spec: spec.clone(),
                        provenance: provenance.clone(),
                        added_at: at,
                        actor: by.name.clone(),
                        reason: by.reason.clone(),
                    }))
                }).await
            }

            async fn waiting_on_model(&self, model: &str) -> Result<Vec<SubmissionRecord>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "waiting_on_model", async move {
                    let rows = sqlx::query(&format!(
                        "{SUBMISSION_SELECT} WHERE s.status = 'needs_review'
                           AND EXISTS (SELECT 1 FROM configurations c WHERE c.submission_id = s.id AND c.model = $1)
                         ORDER BY s.received_at, s.id"
                    ))
                    .bind(model)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    rows.iter().map(submission_record).collect()
                }).await
            }

            async fn waiting_on_gpu(&self, nvml_name: &str) -> Result<Vec<SubmissionRecord>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "waiting_on_gpu", async move {
                    let rows = sqlx::query(&format!(
                        "{SUBMISSION_SELECT} WHERE s.status = 'needs_review' AND s.gpu_id IS NULL AND s.gpu_name = $1 ORDER BY s.received_at, s.id"
                    ))
                    .bind(nvml_name)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    rows.iter().map(submission_record).collect()
                }).await
            }

            async fn rejudge(
                &self,
                id: Uuid,
                gpu_id: &str,
                checks: &[CheckResult],
                to: Status,
                by: &Actor,
            ) -> Result<Decided, StoreError> {
                self.calls.run($crate::calls::CallKind::Transaction, "rejudge", async move {
                    let _w = self.write_lock().await;
                    let mut tx = self.pool.begin_with(<$store>::DIALECT.begin_write).await.map_err(db_err)?;
                    let id_text = id.to_string();
                    let row = sqlx::query(&format!("{SUBMISSION_SELECT} WHERE s.id = $1"))
                        .bind(&id_text)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    let Some(row) = row else {
                        return Ok(Decided::NotFound);
                    };
                    let sub = submission_record(&row)?;
                    // Waiting on its GPU (no id yet) or on a model (the GPU
                    // known, the same one): anything else was decided.
                    if sub.status != Status::NeedsReview
                        || sub.gpu_id.as_deref().is_some_and(|g| g != gpu_id)
                    {
                        return Ok(Decided::WrongStatus(sub.status));
                    }
                    let protocol = sub.protocol.clone().ok_or_else(|| {
                        StoreError::Other(anyhow::anyhow!("submission {id} has no protocol; run db rebuild first"))
                    })?;
                    // The groups it sat in under its bare name, to refresh after.
                    let old_keys: Vec<String> = sqlx::query_scalar(
                        "SELECT DISTINCT group_key FROM configurations WHERE submission_id = $1 AND group_key IS NOT NULL",
                    )
                    .bind(&id_text)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    sqlx::query("UPDATE submissions SET gpu_id = $1, status = $2 WHERE id = $3")
                        .bind(gpu_id)
                        .bind(to.as_str())
                        .bind(&id_text)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    sqlx::query("DELETE FROM check_results WHERE submission_id = $1")
                        .bind(&id_text)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    insert_checks(&mut tx, &id_text, checks).await?;
                    let configs: Vec<$crate::sql::StoredMetrics> = sqlx::query_as(
                        "SELECT id, metrics FROM configurations WHERE submission_id = $1 ORDER BY position",
                    )
                    .bind(&id_text)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    for $crate::sql::StoredMetrics { id: cid, metrics } in configs {
                        let c: ConfigurationMetrics = serde_json::from_str(&metrics).map_err(json_err)?;
                        let g = ::wattcounts_analytics::leaderboard::group_of(Some(gpu_id), &sub.gpu_name, sub.is_demo, &protocol, &c);
                        ensure_group_key(&mut tx, &g).await?;
                        sqlx::query("UPDATE configurations SET group_key = $1 WHERE id = $2")
                            .bind(g.key.canonical())
                            .bind(cid)
                            .execute(&mut *tx)
                            .await
                            .map_err(db_err)?;
                    }
                    let leaf = insert_event(
                        &mut tx,
                        by,
                        EventRow {
                            action: "rejudge",
                            submission_id: Some(&id_text),
                            handle: Some(&sub.handle),
                            fingerprint: None,
                            from: Some(sub.status),
                            to: Some(to),
                            effective_at: None,
                            reason: &by.reason,
                        },
                    )
                    .await?;
                    for k in &old_keys {
                        refresh_group(&mut tx, k).await?;
                    }
                    refresh_groups_of(&mut tx, std::slice::from_ref(&id_text)).await?;
                    move_counters(&mut tx, &id_text, Some(sub.status), to).await?;
                    append_leaves(&mut tx, &[leaf], false).await?;
                    tx.commit().await.map_err(db_err)?;
                    Ok(Decided::Done(sub.status))
                }).await
            }

            async fn moderation_events(&self, id: Uuid) -> Result<Vec<ModerationEvent>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "moderation_events", async move {
                    let rows = sqlx::query(
                        "SELECT created_at, actor, action, submission_id, submitter_handle, key_fingerprint, from_status,
                                to_status, effective_at, reason, log_index
                         FROM moderation_events WHERE submission_id = $1 ORDER BY id",
                    )
                    .bind(id.to_string())
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    rows.iter()
                        .map(|r| {
                            Ok(ModerationEvent {
                                at: r.get("created_at"),
                                actor: r.get("actor"),
                                action: r.get("action"),
                                submission_id: r
                                    .get::<Option<String>, _>("submission_id")
                                    .map(|s| Uuid::parse_str(&s))
                                    .transpose()
                                    .map_err(|e| StoreError::Other(e.into()))?,
                                submitter: r.get("submitter_handle"),
                                key_fingerprint: r.get("key_fingerprint"),
                                from_status: r
                                    .get::<Option<String>, _>("from_status")
                                    .as_deref()
                                    .map(parse_status)
                                    .transpose()?,
                                to_status: r
                                    .get::<Option<String>, _>("to_status")
                                    .as_deref()
                                    .map(parse_status)
                                    .transpose()?,
                                effective_at: r.get("effective_at"),
                                reason: r.get("reason"),
                                log_index: r.get::<Option<i64>, _>("log_index").map(|i| i as u64),
                            })
                        })
                        .collect()
                }).await
            }

            async fn submissions_with_status(
                &self,
                status: Status,
                limit: u32,
            ) -> Result<Vec<SubmissionRecord>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "submissions_with_status", async move {
                    let rows = sqlx::query(&format!(
                        "{SUBMISSION_SELECT} WHERE s.status = $1 ORDER BY s.received_at LIMIT $2"
                    ))
                    .bind(status.as_str())
                    .bind(limit as i64)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    rows.iter().map(submission_record).collect()
                }).await
            }
        }
    };
}
pub(crate) use moderation_sql;
