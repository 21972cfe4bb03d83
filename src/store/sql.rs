//! The SQL both backends share. SQLite and PostgreSQL take the same
//! statements (`$N` parameters, `RETURNING`, `CAST(.. AS BIGINT)`), so the
//! `Store` implementation is written once and instantiated per backend by
//! [`sql_store!`]; each backend module keeps only what differs: opening and
//! migrating, the write lock, and how a broken unique constraint reads.

use chrono::{DateTime, Utc};

use super::{parse_ts, Status, StoreError};

pub(super) const SUBMISSION_SELECT: &str = "SELECT s.id, s.bundle_sha256, u.handle, s.status, s.received_at, s.gpu_name, s.gpu_id, s.run_name,
        s.is_demo, s.bundle_bytes, s.blob_path,
        (SELECT COUNT(*) FROM runs r WHERE r.submission_id = s.id),
        (SELECT CAST(COALESCE(SUM(power_samples), 0) AS BIGINT) FROM runs r WHERE r.submission_id = s.id)
     FROM submissions s JOIN submitters u ON u.id = s.submitter_id";

/// Errors that mean "the database is not answering" become `Unavailable`
/// (503 at the edge); the rest are internal errors.
pub(super) fn db_err(e: sqlx::Error) -> StoreError {
    let unavailable = match &e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::Io(_)
        | sqlx::Error::PoolClosed
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        // PostgreSQL: connection exceptions (08...), shutdown and
        // cancellation on timeout (57...).
        sqlx::Error::Database(d) => d
            .code()
            .is_some_and(|c| c.starts_with("08") || c.starts_with("57")),
        _ => false,
    };
    if unavailable {
        StoreError::Unavailable(e.to_string())
    } else {
        StoreError::Other(e.into())
    }
}

/// The unique constraint an error broke, if any: SQLite names the columns
/// ("submissions.bundle_sha256"), PostgreSQL the constraint
/// ("submissions_bundle_sha256_key"); callers match on the column name.
pub(super) fn unique_violation(e: &sqlx::Error) -> Option<String> {
    let db = e.as_database_error()?;
    if !db.is_unique_violation() {
        return None;
    }
    Some(match db.constraint() {
        Some(c) => c.to_string(),
        None => db.message().to_string(),
    })
}

pub(super) fn opt_ts(s: Option<String>) -> Result<Option<DateTime<Utc>>, StoreError> {
    s.as_deref().map(parse_ts).transpose()
}

pub(super) fn status_of(text: &str) -> Result<Status, StoreError> {
    Status::parse(text).ok_or_else(|| StoreError::Other(anyhow::anyhow!("bad status {text}")))
}

pub(super) fn json_err(e: serde_json::Error) -> StoreError {
    StoreError::Other(e.into())
}

/// The stored columns of one iteration, in `IterationMetrics` order.
pub(super) const RUN_COLUMNS: &str = "r.model, r.scenario, r.lambda_qps, r.iteration, r.started_at, r.duration_s,
    r.requests_ok, r.requests_failed, r.prompt_tokens, r.generation_tokens, r.gpu_energy_j, r.reported_gpu_energy_j,
    r.cpu_energy_j, r.dram_energy_j, r.power_mean_w, r.power_max_w, r.power_min_w, r.power_samples, r.temp_first_c,
    r.temp_max_c, r.energy_per_token_j, r.energy_per_request_j, r.throughput_tok_s, r.itl_s, r.ttft_p50_s, r.ttft_p90_s,
    r.e2e_p50_s, r.e2e_p90_s";

/// What one moderation event row holds.
pub(super) struct EventRow<'a> {
    pub(super) action: &'a str,
    pub(super) submission_id: Option<&'a str>,
    pub(super) handle: Option<&'a str>,
    pub(super) fingerprint: Option<&'a str>,
    pub(super) from: Option<Status>,
    pub(super) to: Option<Status>,
    pub(super) effective_at: Option<&'a str>,
    pub(super) reason: &'a str,
}

/// Implements `Store` for a backend struct with `pool` and `write_lock()`.
macro_rules! sql_store {
    ($store:ty, $name:literal, $row:ty, $conn:ty) => {
        fn submission_record(r: &$row) -> Result<SubmissionRecord, StoreError> {
            let id: String = r.get(0);
            let status: String = r.get(3);
            let received: String = r.get(4);
            Ok(SubmissionRecord {
                id: Uuid::parse_str(&id).map_err(|e| StoreError::Other(e.into()))?,
                bundle_sha256: r.get(1),
                handle: r.get(2),
                status: Status::parse(&status)
                    .ok_or_else(|| StoreError::Other(anyhow::anyhow!("bad status {status}")))?,
                received_at: parse_ts(&received)?,
                gpu_name: r.get(5),
                gpu_id: r.get(6),
                run_name: r.get(7),
                is_demo: r.get(8),
                bundle_bytes: r.get::<i64, _>(9) as u64,
                blob_path: r.get(10),
                iterations: r.get::<i64, _>(11) as u64,
                power_samples: r.get::<i64, _>(12) as u64,
            })
        }

        /// `s.id, s.status, s.is_demo, s.gpu_id, s.gpu_name, c.metrics`.
        fn source_row(r: &$row) -> Result<crate::leaderboard::SourceRow, StoreError> {
            let id: String = r.get(0);
            let status: String = r.get(1);
            let metrics: String = r.get(5);
            Ok(crate::leaderboard::SourceRow {
                submission_id: Uuid::parse_str(&id).map_err(|e| StoreError::Other(e.into()))?,
                status: status_of(&status)?,
                is_demo: r.get(2),
                gpu_id: r.get(3),
                gpu_name: r.get(4),
                config: serde_json::from_str(&metrics).map_err(json_err)?,
            })
        }

        /// `r.submission_id` followed by [`RUN_COLUMNS`].
        fn run_row(r: &$row) -> Result<(Uuid, $crate::metrics::IterationMetrics), StoreError> {
            let id: String = r.get(0);
            let scenario: String = r.get(2);
            let count = |i: usize| r.get::<i64, _>(i) as u64;
            Ok((
                Uuid::parse_str(&id).map_err(|e| StoreError::Other(e.into()))?,
                $crate::metrics::IterationMetrics {
                    model: r.get(1),
                    scenario: Scenario::parse(&scenario)
                        .ok_or_else(|| StoreError::Other(anyhow::anyhow!("bad scenario {scenario}")))?,
                    lambda_qps: r.get(3),
                    iteration: r.get::<i64, _>(4) as u32,
                    started_at: r.get(5),
                    duration_s: r.get(6),
                    requests_ok: count(7),
                    requests_failed: count(8),
                    prompt_tokens: count(9),
                    generation_tokens: count(10),
                    gpu_energy_j: r.get(11),
                    reported_gpu_energy_j: r.get(12),
                    cpu_energy_j: r.get(13),
                    dram_energy_j: r.get(14),
                    power_mean_w: r.get(15),
                    power_max_w: r.get(16),
                    power_min_w: r.get(17),
                    power_samples: count(18),
                    temp_first_c: r.get(19),
                    temp_max_c: r.get(20),
                    energy_per_token_j: r.get(21),
                    energy_per_request_j: r.get(22),
                    throughput_tok_s: r.get(23),
                    itl_s: r.get(24),
                    ttft_p50_s: r.get(25),
                    ttft_p90_s: r.get(26),
                    e2e_p50_s: r.get(27),
                    e2e_p90_s: r.get(28),
                },
            ))
        }

        async fn insert_event(
            tx: &mut $conn,
            by: &Actor,
            e: EventRow<'_>,
        ) -> Result<(), StoreError> {
            sqlx::query(
                "INSERT INTO moderation_events (created_at, actor, action, submission_id, submitter_handle, key_fingerprint,
                    from_status, to_status, effective_at, reason)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(ts(&by.at))
            .bind(&by.name)
            .bind(e.action)
            .bind(e.submission_id)
            .bind(e.handle)
            .bind(e.fingerprint)
            .bind(e.from.map(Status::as_str))
            .bind(e.to.map(Status::as_str))
            .bind(e.effective_at)
            .bind(e.reason)
            .execute(tx)
            .await
            .map_err(db_err)?;
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
        impl $crate::store::Store for $store {
            fn backend(&self) -> &'static str {
                $name
            }

            async fn ping(&self) -> Result<(), StoreError> {
                sqlx::query("SELECT 1")
                    .execute(&self.pool)
                    .await
                    .map_err(db_err)?;
                Ok(())
            }

            async fn create_submitter(&self, s: &NewSubmitter) -> Result<i64, StoreError> {
                let _w = self.write_lock().await;
                let mut tx = self.pool.begin().await.map_err(db_err)?;
                let now = ts(&chrono::Utc::now());
                let res = sqlx::query_scalar::<_, i64>("INSERT INTO submitters (handle, handle_lower, display_name, created_at) VALUES ($1, $2, $3, $4) RETURNING id")
                    .bind(&s.handle)
                    .bind(s.handle.to_ascii_lowercase())
                    .bind(&s.display_name)
                    .bind(&now)
                    .fetch_one(&mut *tx)
                    .await;
                let submitter_id = match res {
                    Ok(id) => id,
                    Err(e) if unique_violation(&e).is_some() => return Err(StoreError::Conflict("handle")),
                    Err(e) => return Err(db_err(e)),
                };
                let res = sqlx::query("INSERT INTO keys (submitter_id, fingerprint, algorithm, public_key, created_at) VALUES ($1, $2, $3, $4, $5)")
                    .bind(submitter_id)
                    .bind(&s.fingerprint)
                    .bind(&s.algorithm)
                    .bind(&s.public_key)
                    .bind(&now)
                    .execute(&mut *tx)
                    .await;
                match res {
                    Ok(_) => {}
                    Err(e) if unique_violation(&e).is_some() => return Err(StoreError::Conflict("key")),
                    Err(e) => return Err(db_err(e)),
                }
                tx.commit().await.map_err(db_err)?;
                Ok(submitter_id)
            }

            async fn key_by_fingerprint(&self, fingerprint: &str) -> Result<Option<KeyRecord>, StoreError> {
                let row = sqlx::query(
                    "SELECT k.id, k.submitter_id, s.handle, k.fingerprint, k.public_key, k.revoked_at, s.suspended_at
                     FROM keys k JOIN submitters s ON s.id = k.submitter_id WHERE k.fingerprint = $1",
                )
                .bind(fingerprint)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?;
                row.map(|r| {
                    Ok(KeyRecord {
                        key_id: r.get(0),
                        submitter_id: r.get(1),
                        handle: r.get(2),
                        fingerprint: r.get(3),
                        public_key: r.get(4),
                        revoked_at: opt_ts(r.get(5))?,
                        submitter_suspended_at: opt_ts(r.get(6))?,
                    })
                })
                .transpose()
            }

            async fn revoke_key(
                &self,
                fingerprint: &str,
                effective_at: chrono::DateTime<chrono::Utc>,
                by: &Actor,
            ) -> Result<Option<Vec<Uuid>>, StoreError> {
                let _w = self.write_lock().await;
                let mut tx = self.pool.begin().await.map_err(db_err)?;
                let key: Option<(i64, String)> = sqlx::query_as(
                    "SELECT k.id, s.handle FROM keys k JOIN submitters s ON s.id = k.submitter_id WHERE k.fingerprint = $1",
                )
                .bind(fingerprint)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
                let Some((key_id, handle)) = key else {
                    return Ok(None);
                };
                let effective = ts(&effective_at);
                sqlx::query("UPDATE keys SET revoked_at = $1 WHERE id = $2")
                    .bind(&effective)
                    .bind(key_id)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                insert_event(
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
                .await?;
                // Bundles signed with the key after it was compromised are void.
                let affected: Vec<(String, String)> = sqlx::query_as(
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
                for (id, status) in affected {
                    sqlx::query("UPDATE submissions SET status = 'rejected' WHERE id = $1")
                        .bind(&id)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    insert_event(
                        &mut tx,
                        by,
                        EventRow {
                            action: "reject",
                            submission_id: Some(&id),
                            handle: Some(&handle),
                            fingerprint: Some(fingerprint),
                            from: Some(status_of(&status)?),
                            to: Some(Status::Rejected),
                            effective_at: None,
                            reason: &why,
                        },
                    )
                    .await?;
                    rejected.push(Uuid::parse_str(&id).map_err(|e| StoreError::Other(e.into()))?);
                }
                tx.commit().await.map_err(db_err)?;
                Ok(Some(rejected))
            }

            async fn suspend_submitter(&self, handle: &str, by: &Actor) -> Result<bool, StoreError> {
                let _w = self.write_lock().await;
                let mut tx = self.pool.begin().await.map_err(db_err)?;
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
                insert_event(
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
                tx.commit().await.map_err(db_err)?;
                Ok(true)
            }

            async fn decide(
                &self,
                id: Uuid,
                from: &[Status],
                to: Status,
                by: &Actor,
            ) -> Result<Decided, StoreError> {
                let _w = self.write_lock().await;
                let mut tx = self.pool.begin().await.map_err(db_err)?;
                let id_text = id.to_string();
                let current: Option<(String, String)> = sqlx::query_as(
                    "SELECT s.status, u.handle FROM submissions s JOIN submitters u ON u.id = s.submitter_id WHERE s.id = $1",
                )
                .bind(&id_text)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
                let Some((current, handle)) = current else {
                    return Ok(Decided::NotFound);
                };
                let current = status_of(&current)?;
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
                    return Ok(Decided::WrongStatus(status_of(&now)?));
                }
                insert_event(
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
                tx.commit().await.map_err(db_err)?;
                Ok(Decided::Done(current))
            }

            async fn moderation_events(&self, id: Uuid) -> Result<Vec<ModerationEvent>, StoreError> {
                let rows = sqlx::query(
                    "SELECT created_at, actor, action, submission_id, submitter_handle, key_fingerprint, from_status,
                            to_status, effective_at, reason
                     FROM moderation_events WHERE submission_id = $1 ORDER BY id",
                )
                .bind(id.to_string())
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                rows.iter()
                    .map(|r| {
                        Ok(ModerationEvent {
                            at: r.get(0),
                            actor: r.get(1),
                            action: r.get(2),
                            submission_id: r
                                .get::<Option<String>, _>(3)
                                .map(|s| Uuid::parse_str(&s))
                                .transpose()
                                .map_err(|e| StoreError::Other(e.into()))?,
                            submitter: r.get(4),
                            key_fingerprint: r.get(5),
                            from_status: r
                                .get::<Option<String>, _>(6)
                                .as_deref()
                                .map(status_of)
                                .transpose()?,
                            to_status: r
                                .get::<Option<String>, _>(7)
                                .as_deref()
                                .map(status_of)
                                .transpose()?,
                            effective_at: r.get(8),
                            reason: r.get(9),
                        })
                    })
                    .collect()
            }

            async fn check_results(&self, id: Uuid) -> Result<Vec<CheckResult>, StoreError> {
                self.json_rows(
                    "SELECT result FROM check_results WHERE submission_id = $1 ORDER BY position",
                    id,
                )
                .await
            }

            async fn peer_medians(&self, gpu_id: &str, demo: bool) -> Result<Vec<PeerMedian>, StoreError> {
                let rows: Vec<(String, String, Option<f64>, f64)> = sqlx::query_as(
                    "SELECT c.model, c.scenario, c.lambda_qps, c.ept_median_j
                     FROM configurations c JOIN submissions s ON s.id = c.submission_id
                     WHERE s.status = 'accepted' AND s.gpu_id = $1 AND s.is_demo = $2",
                )
                .bind(gpu_id)
                .bind(demo)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                rows.into_iter()
                    .map(|(model, scenario, lambda_qps, ept)| {
                        Ok(PeerMedian {
                            scenario: Scenario::parse(&scenario).ok_or_else(|| {
                                StoreError::Other(anyhow::anyhow!("bad scenario {scenario}"))
                            })?,
                            model,
                            lambda_qps,
                            energy_per_token_j: ept,
                        })
                    })
                    .collect()
            }

            async fn submissions_with_status(
                &self,
                status: Status,
                limit: u32,
            ) -> Result<Vec<SubmissionRecord>, StoreError> {
                let rows = sqlx::query(&format!(
                    "{SUBMISSION_SELECT} WHERE s.status = $1 ORDER BY s.received_at LIMIT $2"
                ))
                .bind(status.as_str())
                .bind(limit as i64)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                rows.iter().map(submission_record).collect()
            }

            async fn submission_by_digest(&self, sha256: &str) -> Result<Option<Uuid>, StoreError> {
                let id: Option<String> =
                    sqlx::query_scalar("SELECT id FROM submissions WHERE bundle_sha256 = $1")
                        .bind(sha256)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db_err)?;
                id.map(|s| Uuid::parse_str(&s).map_err(|e| StoreError::Other(e.into())))
                    .transpose()
            }

            async fn data_stamp(&self) -> Result<(i64, i64), StoreError> {
                sqlx::query_as(
                    "SELECT (SELECT COUNT(*) FROM submissions), (SELECT COUNT(*) FROM moderation_events)",
                )
                .fetch_one(&self.pool)
                .await
                .map_err(db_err)
            }

            async fn submission_documents(
                &self,
                id: Uuid,
            ) -> Result<Option<(String, String)>, StoreError> {
                sqlx::query_as("SELECT manifest, signature FROM submissions WHERE id = $1")
                    .bind(id.to_string())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_err)
            }

            async fn submission_digest(&self, id: Uuid) -> Result<Option<String>, StoreError> {
                sqlx::query_scalar("SELECT bundle_sha256 FROM submissions WHERE id = $1")
                    .bind(id.to_string())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_err)
            }

            async fn insert_submission(&self, s: &NewSubmission) -> Result<InsertOutcome, StoreError> {
                let _w = self.write_lock().await;
                let mut tx = self.pool.begin().await.map_err(db_err)?;
                let id = s.id.to_string();
                let res = sqlx::query(
                    "INSERT INTO submissions (id, bundle_sha256, submitter_id, key_id, status, received_at, gpu_name, gpu_id,
                        run_name, is_demo, bundle_bytes, blob_path, signature, manifest)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
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
                .execute(&mut *tx)
                .await;
                if let Err(e) = res {
                    drop(tx);
                    // Another request stored this id or these bytes first
                    // (PostgreSQL may report either constraint): the same
                    // bytes are a replay, anything else reuses the id.
                    return match unique_violation(&e) {
                        Some(_) => {
                            let existing = self.submission_by_digest(&s.bundle_sha256).await?;
                            Ok(existing.map_or(InsertOutcome::IdTaken, InsertOutcome::SameBytes))
                        }
                        None => Err(db_err(e)),
                    };
                }
                for r in &s.runs {
                    sqlx::query(
                        "INSERT INTO runs (submission_id, model, scenario, lambda_qps, iteration, started_at, duration_s,
                            requests_ok, requests_failed, prompt_tokens, generation_tokens, gpu_energy_j, reported_gpu_energy_j,
                            cpu_energy_j, dram_energy_j, power_mean_w, power_max_w, power_min_w, power_samples, temp_first_c,
                            temp_max_c, energy_per_token_j, energy_per_request_j, throughput_tok_s, itl_s, ttft_p50_s, ttft_p90_s,
                            e2e_p50_s, e2e_p90_s)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29)",
                    )
                    .bind(&id)
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
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                }
                for (i, c) in s.configurations.iter().enumerate() {
                    sqlx::query(
                        "INSERT INTO configurations (submission_id, position, model, scenario, lambda_qps, iterations,
                            ept_median_j, ept_cv, throughput_median, power_mean_median_w, metrics)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
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
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                }
                for (i, c) in s.checks.iter().enumerate() {
                    sqlx::query(
                        "INSERT INTO check_results (submission_id, position, check_id, outcome, result) VALUES ($1, $2, $3, $4, $5)",
                    )
                    .bind(&id)
                    .bind(i as i64)
                    .bind(&c.id)
                    .bind(c.outcome.as_str())
                    .bind(serde_json::to_string(c).map_err(json_err)?)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                }
                tx.commit().await.map_err(db_err)?;
                Ok(InsertOutcome::Inserted)
            }

            async fn submission(&self, id: Uuid) -> Result<Option<SubmissionRecord>, StoreError> {
                let row = sqlx::query(&format!("{SUBMISSION_SELECT} WHERE s.id = $1"))
                    .bind(id.to_string())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_err)?;
                row.as_ref().map(submission_record).transpose()
            }

            async fn latest_submissions(&self, limit: u32) -> Result<Vec<SubmissionRecord>, StoreError> {
                let rows = sqlx::query(&format!(
                    "{SUBMISSION_SELECT} WHERE s.status = 'accepted' ORDER BY s.received_at DESC LIMIT $1"
                ))
                .bind(limit as i64)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                rows.iter().map(submission_record).collect()
            }

            async fn configuration_rows(
                &self,
                statuses: &[Status],
            ) -> Result<Vec<crate::leaderboard::SourceRow>, StoreError> {
                if statuses.is_empty() {
                    return Ok(Vec::new());
                }
                let placeholders = (1..=statuses.len())
                    .map(|i| format!("${i}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let sql = format!(
                    "SELECT s.id, s.status, s.is_demo, s.gpu_id, s.gpu_name, c.metrics
                     FROM configurations c JOIN submissions s ON s.id = c.submission_id
                     WHERE s.status IN ({placeholders})
                     ORDER BY s.received_at, c.position"
                );
                let mut query = sqlx::query(&sql);
                for st in statuses {
                    query = query.bind(st.as_str());
                }
                let rows = query.fetch_all(&self.pool).await.map_err(db_err)?;
                rows.iter().map(source_row).collect()
            }

            async fn snapshot_source(&self) -> Result<$crate::store::SnapshotSource, StoreError> {
                let mut tx = self.pool.begin().await.map_err(db_err)?;
                if let Some(sql) = <$store>::READ_SNAPSHOT {
                    sqlx::query(sql).execute(&mut *tx).await.map_err(db_err)?;
                }
                let submissions = sqlx::query(&format!(
                    "{SUBMISSION_SELECT} WHERE s.status = 'accepted' ORDER BY s.received_at, s.id"
                ))
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?
                .iter()
                .map(submission_record)
                .collect::<Result<Vec<_>, _>>()?;
                let runs = sqlx::query(&format!(
                    "SELECT r.submission_id, {RUN_COLUMNS} FROM runs r JOIN submissions s ON s.id = r.submission_id
                     WHERE s.status = 'accepted' ORDER BY s.received_at, s.id, r.id"
                ))
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?
                .iter()
                .map(run_row)
                .collect::<Result<Vec<_>, _>>()?;
                let configurations = sqlx::query(
                    "SELECT s.id, s.status, s.is_demo, s.gpu_id, s.gpu_name, c.metrics
                     FROM configurations c JOIN submissions s ON s.id = c.submission_id
                     WHERE s.status = 'accepted'
                     ORDER BY s.received_at, s.id, c.position",
                )
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?
                .iter()
                .map(source_row)
                .collect::<Result<Vec<_>, _>>()?;
                tx.commit().await.map_err(db_err)?;
                Ok($crate::store::SnapshotSource {
                    submissions,
                    runs,
                    configurations,
                })
            }

            async fn dataset_counts(&self) -> Result<DatasetCounts, StoreError> {
                let r = sqlx::query(
                    "SELECT COUNT(DISTINCT s.id), COUNT(DISTINCT CASE WHEN s.is_demo THEN s.id END), COUNT(DISTINCT s.gpu_name),
                            COUNT(DISTINCT r.model), COUNT(r.id), CAST(COALESCE(SUM(r.power_samples), 0) AS BIGINT)
                     FROM submissions s LEFT JOIN runs r ON r.submission_id = s.id WHERE s.status = 'accepted'",
                )
                .fetch_one(&self.pool)
                .await
                .map_err(db_err)?;
                Ok(DatasetCounts {
                    submissions: r.get::<i64, _>(0) as u64,
                    demo_submissions: r.get::<i64, _>(1) as u64,
                    gpus: r.get::<i64, _>(2) as u64,
                    models: r.get::<i64, _>(3) as u64,
                    iterations: r.get::<i64, _>(4) as u64,
                    power_samples: r.get::<i64, _>(5) as u64,
                })
            }

            async fn configurations(&self, id: Uuid) -> Result<Vec<ConfigurationMetrics>, StoreError> {
                self.json_rows(
                    "SELECT metrics FROM configurations WHERE submission_id = $1 ORDER BY position",
                    id,
                )
                .await
            }

            async fn counts(&self) -> Result<TableCounts, StoreError> {
                let r = sqlx::query(
                    "SELECT (SELECT COUNT(*) FROM submitters), (SELECT COUNT(*) FROM keys), (SELECT COUNT(*) FROM submissions),
                            (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM configurations)",
                )
                .fetch_one(&self.pool)
                .await
                .map_err(db_err)?;
                Ok(TableCounts {
                    submitters: r.get::<i64, _>(0) as u64,
                    keys: r.get::<i64, _>(1) as u64,
                    submissions: r.get::<i64, _>(2) as u64,
                    runs: r.get::<i64, _>(3) as u64,
                    configurations: r.get::<i64, _>(4) as u64,
                })
            }
        }
    };
}
pub(super) use sql_store;
