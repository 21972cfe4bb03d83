//! The SQL both backends share. SQLite and PostgreSQL take the same
//! statements (`$N` parameters, `RETURNING`, `CAST(.. AS BIGINT)`), so the
//! `Store` implementation is written once and instantiated per backend by
//! [`sql_store!`]; each backend module keeps only what differs: opening and
//! migrating, the write lock, and how a broken unique constraint reads.

use chrono::{DateTime, Utc};

use super::{parse_ts, Status, StoreError};

pub(super) const SUBMISSION_SELECT: &str = "SELECT s.id, s.bundle_sha256, u.handle, s.status, s.received_at, s.gpu_name, s.gpu_id, s.run_name,
        s.is_demo, s.bundle_bytes, s.blob_path, s.iterations, s.power_samples, s.protocol, s.content_sha256, s.duplicate_of,
        s.log_index
     FROM submissions s JOIN submitters u ON u.id = s.submitter_id";

/// The members of one group: `configurations` joined to their submission.
pub(super) const MEMBER_SELECT: &str = "SELECT s.id, s.submitter_id, s.status, c.iterations, c.ept_median_j, c.ept_lo, c.ept_hi,
        c.ept_conf, c.ept_cv, c.epr_median, c.throughput_median, c.power_mean_median_w, c.ttft_median, c.itl_median,
        c.intervals
     FROM configurations c JOIN submissions s ON s.id = c.submission_id
     WHERE c.group_key = $1 AND s.status <> 'rejected' AND s.duplicate_of IS NULL
     ORDER BY s.received_at, s.id";

/// A group's figures, with what it is copied from `group_keys`.
pub(super) const GROUP_INSERT: &str = "INSERT INTO leaderboard_groups (group_key, visibility, gpu_id, gpu_name, model, scenario,
        lambda_qps, protocol_id, protocol_label, is_reference, origin, size_class, ept_median, ept_lo, ept_hi, ept_confidence,
        ept_cv, epr_median, throughput_median, power_median, ttft_median, itl_median, iterations, submissions, submitters,
        in_review, evidence, ept_mad, intervals)
     SELECT group_key, $2, gpu_id, gpu_name, model, scenario, lambda_qps, protocol_id, protocol_label, is_reference, origin,
        size_class, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19
     FROM group_keys WHERE group_key = $1";

pub(super) const GROUP_KEY_INSERT: &str =
    "INSERT INTO group_keys (group_key, gpu_id, gpu_name, model, scenario, lambda_qps,
        protocol_id, protocol_label, is_reference, origin, size_class)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (group_key) DO NOTHING";

/// The columns of a leaderboard row, in [`group_entry`] order.
pub(super) const GROUP_COLUMNS: &str = "gpu_id, gpu_name, model, scenario, lambda_qps, protocol_id, protocol_label, is_reference,
        origin, ept_median, ept_lo, ept_hi, ept_confidence, ept_cv, epr_median, throughput_median, power_median, ttft_median,
        itl_median, iterations, submissions, submitters, in_review, evidence, intervals";

/// Adds to one (origin, status) counter row.
pub(super) const COUNTER_ADD: &str = "INSERT INTO dataset_counters (origin, status, submissions, iterations, power_samples)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (origin, status) DO UPDATE SET submissions = dataset_counters.submissions + excluded.submissions,
        iterations = dataset_counters.iterations + excluded.iterations,
        power_samples = dataset_counters.power_samples + excluded.power_samples";

/// A bind value of a query assembled from filters.
pub(super) enum Param {
    Text(String),
    Real(f64),
    Flag(bool),
    Int(i64),
}

/// WHERE, ORDER BY and paging of a leaderboard query; `$1…` in order of `params`.
///
/// Rows come grouped by scenario and model (models case-insensitively,
/// `byte_order` making both backends agree), each model's GPUs in the sort's
/// order: a rank across models would compare what is not comparable.
pub(super) fn group_query(
    q: &wattcounts_analytics::leaderboard::Query,
    byte_order: &str,
) -> (String, String, Vec<Param>) {
    use wattcounts_analytics::leaderboard::ProtocolFilter;
    let mut params = vec![Param::Text(
        if q.include_review {
            "with_review"
        } else {
            "accepted"
        }
        .into(),
    )];
    let mut conds = vec!["visibility = $1".to_string()];
    let mut add = |cond: &str, p: Param, params: &mut Vec<Param>| {
        params.push(p);
        conds.push(cond.replace('?', &format!("${}", params.len())));
    };
    if let Some(o) = q.origin {
        add("origin = ?", Param::Text(o.as_str().into()), &mut params);
    }
    match &q.protocol {
        ProtocolFilter::Reference => add("is_reference = ?", Param::Flag(true), &mut params),
        ProtocolFilter::Id(id) => add("protocol_id = ?", Param::Text(id.clone()), &mut params),
        ProtocolFilter::Any => {}
    }
    if let Some(sc) = q.scenario {
        add("scenario = ?", Param::Text(sc.as_str().into()), &mut params);
    }
    if let Some(l) = q.lambda_qps {
        add("ABS(lambda_qps - ?) < 1e-9", Param::Real(l), &mut params);
    }
    if let Some(m) = &q.model {
        add("model = ?", Param::Text(m.clone()), &mut params);
    }
    if let Some(g) = &q.gpu {
        add("gpu_id = ?", Param::Text(g.clone()), &mut params);
    }
    if let Some(sz) = q.size {
        add("size_class = ?", Param::Text(sz.name().into()), &mut params);
    }
    let order = sort_order(q.sort);
    let filter = format!("WHERE {}", conds.join(" AND "));
    let n = params.len();
    params.push(Param::Int(q.per_page.min(100_000) as i64));
    params.push(Param::Int(
        ((q.page.max(1) - 1) * q.per_page).min(i64::MAX as usize) as i64,
    ));
    let tail = format!(
        "ORDER BY scenario, COALESCE(lambda_qps, 0), LOWER(model){byte_order}, model{byte_order}, {order},
            gpu_id, group_key LIMIT ${} OFFSET ${}",
        n + 1,
        n + 2
    );
    (filter, tail, params)
}

/// The rank of a row among its model's GPUs (same scenario, protocol and
/// origin), by the sort of `q`: a `model_rank` column for [`group_query`].
pub(super) fn model_rank_column(q: &wattcounts_analytics::leaderboard::Query) -> String {
    format!(
        ", ROW_NUMBER() OVER (PARTITION BY model, scenario, lambda_qps, protocol_id, origin ORDER BY {}, gpu_id, group_key)
            AS model_rank",
        sort_order(q.sort)
    )
}

fn sort_order(sort: wattcounts_analytics::leaderboard::SortKey) -> &'static str {
    use wattcounts_analytics::leaderboard::SortKey;
    match sort {
        SortKey::EnergyPerToken => "ept_median",
        SortKey::EnergyPerRequest => "(epr_median IS NULL), epr_median",
        SortKey::Throughput => "throughput_median DESC",
        SortKey::Ttft => "(ttft_median IS NULL), ttft_median",
        SortKey::Itl => "(itl_median IS NULL), itl_median",
    }
}

pub(super) const KEY_SELECT: &str =
    "SELECT k.id, k.submitter_id, s.handle, k.fingerprint, k.public_key, k.revoked_at, s.suspended_at
     FROM keys k JOIN submitters s ON s.id = k.submitter_id";

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

pub(super) fn parse_status(text: &str) -> Result<Status, StoreError> {
    Status::parse(text).ok_or_else(|| StoreError::Other(anyhow::anyhow!("bad status {text}")))
}

/// The `intervals` column: absent on rows stored before it existed.
pub(super) fn intervals_of(
    text: Option<String>,
) -> Result<wattcounts_analytics::leaderboard::FigureIntervals, StoreError> {
    match text {
        Some(t) => serde_json::from_str(&t).map_err(json_err),
        None => Ok(Default::default()),
    }
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

/// Binds [`Param`]s in order to a query of any kind.
macro_rules! bind_all {
    ($query:expr, $params:expr) => {{
        let mut query = $query;
        for p in $params {
            query = match p {
                Param::Text(t) => query.bind(t.clone()),
                Param::Real(v) => query.bind(*v),
                Param::Flag(b) => query.bind(*b),
                Param::Int(n) => query.bind(*n),
            };
        }
        query
    }};
}
pub(super) use bind_all;

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
                protocol: r
                    .get::<Option<String>, _>(13)
                    .map(|p| serde_json::from_str(&p).map_err(json_err))
                    .transpose()?,
                content_sha256: r.get(14),
                duplicate_of: r
                    .get::<Option<String>, _>(15)
                    .map(|d| Uuid::parse_str(&d).map_err(|e| StoreError::Other(e.into())))
                    .transpose()?,
                log_index: r.get::<Option<i64>, _>(16).map(|i| i as u64),
            })
        }

        fn key_record(r: &$row) -> Result<KeyRecord, StoreError> {
            Ok(KeyRecord {
                key_id: r.get(0),
                submitter_id: r.get(1),
                handle: r.get(2),
                fingerprint: r.get(3),
                public_key: r.get(4),
                revoked_at: opt_ts(r.get(5))?,
                submitter_suspended_at: opt_ts(r.get(6))?,
            })
        }

        /// A row of [`MEMBER_SELECT`].
        fn member_row(r: &$row) -> Result<::wattcounts_analytics::leaderboard::Member, StoreError> {
            let id: String = r.get(0);
            let status: String = r.get(2);
            let iterations = r.get::<i64, _>(3) as u32;
            let median: f64 = r.get(4);
            let (lo, hi, conf): (Option<f64>, Option<f64>, Option<f64>) = (r.get(5), r.get(6), r.get(7));
            Ok(::wattcounts_analytics::leaderboard::Member {
                submission_id: Uuid::parse_str(&id).map_err(|e| StoreError::Other(e.into()))?,
                submitter_id: r.get(1),
                status: parse_status(&status)?,
                iterations,
                ept_median: median,
                ept_interval: ::wattcounts_rules::domain::Interval {
                    lo: lo.unwrap_or(median),
                    hi: hi.unwrap_or(median),
                    confidence: conf.unwrap_or(0.0),
                },
                ept_cv: r.get(8),
                epr_median: r.get(9),
                throughput_median: r.get(10),
                power_median: r.get(11),
                ttft_median: r.get(12),
                itl_median: r.get(13),
                intervals: intervals_of(r.get(14))?,
            })
        }

        /// A row of [`GROUP_COLUMNS`].
        fn group_entry(r: &$row) -> Result<::wattcounts_analytics::leaderboard::LeaderboardRow, StoreError> {
            let scenario: String = r.get(3);
            let origin: String = r.get(8);
            let origin = ::wattcounts_rules::domain::Origin::parse(&origin)
                .ok_or_else(|| StoreError::Other(anyhow::anyhow!("bad origin {origin}")))?;
            let first: String = r.get(23);
            let evidence = Uuid::parse_str(&first).map_err(|e| StoreError::Other(e.into()))?;
            // The whole list only where the query asked for it.
            let evidence_ids = match r.try_get::<Option<String>, _>("evidence_ids") {
                Ok(Some(list)) => serde_json::from_str(&list).map_err(json_err)?,
                _ => vec![evidence],
            };
            Ok(::wattcounts_analytics::leaderboard::LeaderboardRow {
                gpu_id: r.get(0),
                gpu_name: r.get(1),
                model: r.get(2),
                scenario: Scenario::parse(&scenario)
                    .ok_or_else(|| StoreError::Other(anyhow::anyhow!("bad scenario {scenario}")))?,
                lambda_qps: r.get(4),
                protocol_id: r.get(5),
                protocol: r.get(6),
                reference_protocol: r.get(7),
                origin,
                energy_per_token_j: r.get(9),
                energy_per_token_interval: ::wattcounts_rules::domain::Interval {
                    lo: r.get(10),
                    hi: r.get(11),
                    confidence: r.get(12),
                },
                energy_per_token_cv: r.get(13),
                energy_per_request_j: r.get(14),
                throughput_tok_s: r.get(15),
                power_mean_w: r.get(16),
                ttft_p50_s: r.get(17),
                itl_s: r.get(18),
                intervals: intervals_of(r.get(24))?,
                rank_in_model: r.try_get::<i64, _>("model_rank").ok().map(|n| n as u64),
                iterations: r.get::<i64, _>(19) as u64,
                submissions: r.get::<i64, _>(20) as u64,
                submitters: r.get::<i64, _>(21) as u64,
                demo: origin == ::wattcounts_rules::domain::Origin::Demo,
                needs_review: r.get::<i64, _>(22) > 0,
                evidence,
                evidence_ids,
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
                            e2e_p50_s, e2e_p90_s)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29)",
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
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                }
            Ok(())
        }

        async fn refresh_group(tx: &mut $conn, key: &str) -> Result<(), StoreError> {
            if let Some(sql) = <$store>::LOCK_GROUP {
                sqlx::query(sql).bind(key).execute(&mut *tx).await.map_err(db_err)?;
            }
            let members = sqlx::query(MEMBER_SELECT)
                .bind(key)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?
                .iter()
                .map(member_row)
                .collect::<Result<Vec<_>, _>>()?;
            for sql in [
                "DELETE FROM group_evidence WHERE group_key = $1",
                "DELETE FROM leaderboard_groups WHERE group_key = $1",
            ] {
                sqlx::query(sql)
                    .bind(key)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
            for (visibility, shown) in [
                ("accepted", &[Status::Accepted][..]),
                ("with_review", &[Status::Accepted, Status::NeedsReview][..]),
            ] {
                let mine: Vec<_> = members
                    .iter()
                    .filter(|m| shown.contains(&m.status))
                    .cloned()
                    .collect();
                let Some(f) = ::wattcounts_analytics::leaderboard::aggregate(&mine) else {
                    continue;
                };
                sqlx::query(GROUP_INSERT)
                    .bind(key)
                    .bind(visibility)
                    .bind(f.ept_median)
                    .bind(f.ept_interval.lo)
                    .bind(f.ept_interval.hi)
                    .bind(f.ept_interval.confidence)
                    .bind(f.ept_cv)
                    .bind(f.epr_median)
                    .bind(f.throughput_median)
                    .bind(f.power_median)
                    .bind(f.ttft_median)
                    .bind(f.itl_median)
                    .bind(f.iterations as i64)
                    .bind(f.submissions as i64)
                    .bind(f.submitters as i64)
                    .bind(f.in_review as i64)
                    .bind(f.evidence.first().map(|u| u.to_string()))
                    .bind(f.ept_mad)
                    .bind(f.intervals.to_json())
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                // The list lives apart, so scans of the groups stay narrow.
                sqlx::query("INSERT INTO group_evidence (group_key, visibility, ids) VALUES ($1, $2, $3)")
                    .bind(key)
                    .bind(visibility)
                    .bind(serde_json::to_string(&f.evidence).map_err(json_err)?)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
            Ok(())
        }

        /// Records a group the first time it is seen (a no-op after that).
        async fn ensure_group_key(
            tx: &mut $conn,
            g: &::wattcounts_analytics::leaderboard::GroupInfo,
        ) -> Result<(), StoreError> {
            sqlx::query(GROUP_KEY_INSERT)
                .bind(g.key.canonical())
                .bind(&g.key.gpu_id)
                .bind(&g.gpu_name)
                .bind(&g.key.model)
                .bind(g.key.scenario.scenario.as_str())
                .bind(g.key.scenario.lambda_qps)
                .bind(&g.key.protocol_id)
                .bind(&g.protocol_label)
                .bind(g.reference)
                .bind(g.key.origin.as_str())
                .bind(g.size_class.map(|c| c.name()))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            Ok(())
        }

        /// Refreshes the groups of these submissions, in key order (every
        /// writer locks groups in the same order, so none deadlocks).
        async fn refresh_groups_of(tx: &mut $conn, ids: &[String]) -> Result<(), StoreError> {
            let mut keys: Vec<String> = Vec::new();
            for id in ids {
                let k: Vec<String> = sqlx::query_scalar(
                    "SELECT DISTINCT group_key FROM configurations WHERE submission_id = $1 AND group_key IS NOT NULL",
                )
                .bind(id)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?;
                keys.extend(k);
            }
            keys.sort();
            keys.dedup();
            for k in &keys {
                refresh_group(tx, k).await?;
            }
            Ok(())
        }

        /// Moves a submission's counts from one status to another.
        async fn move_counters(tx: &mut $conn, id: &str, from: Option<Status>, to: Status) -> Result<(), StoreError> {
            let row: Option<(bool, i64, i64)> = sqlx::query_as(
                "SELECT is_demo, iterations, power_samples FROM submissions WHERE id = $1 AND duplicate_of IS NULL",
            )
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
            let Some((demo, iterations, samples)) = row else {
                return Ok(());
            };
            let origin = ::wattcounts_rules::domain::Origin::of_demo(demo).as_str();
            let moves = from
                .map(|f| (f, -1i64))
                .into_iter()
                .chain(std::iter::once((to, 1i64)));
            for (status, sign) in moves {
                sqlx::query(COUNTER_ADD)
                    .bind(origin)
                    .bind(status.as_str())
                    .bind(sign)
                    .bind(sign * iterations)
                    .bind(sign * samples)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
            Ok(())
        }

        /// `r.submission_id` followed by [`RUN_COLUMNS`].
        fn run_row(r: &$row) -> Result<(Uuid, ::wattcounts_rules::derived::IterationMetrics), StoreError> {
            let id: String = r.get(0);
            let scenario: String = r.get(2);
            let count = |i: usize| r.get::<i64, _>(i) as u64;
            Ok((
                Uuid::parse_str(&id).map_err(|e| StoreError::Other(e.into()))?,
                ::wattcounts_rules::derived::IterationMetrics {
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

        impl $store {
            /// Gives handles registered before skeletons were kept theirs,
            /// oldest first; a handle whose skeleton an older one holds
            /// keeps none (the collision listing names it). A no-op once
            /// every row has one: one indexed read.
            async fn fill_handle_skeletons(&self) -> Result<u64, StoreError> {
                let rows: Vec<(i64, String)> = sqlx::query_as(
                    "SELECT id, handle FROM submitters WHERE handle_skeleton IS NULL ORDER BY id",
                )
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                let mut filled = 0;
                for (id, handle) in rows {
                    let skeleton = ::wattcounts_rules::handles::skeleton(&handle);
                    let res = sqlx::query(
                        "UPDATE submitters SET handle_skeleton = $1 WHERE id = $2
                           AND NOT EXISTS (SELECT 1 FROM submitters WHERE handle_skeleton = $1)",
                    )
                    .bind(&skeleton)
                    .bind(id)
                    .execute(&self.pool)
                    .await;
                    match res {
                        Ok(r) => filled += r.rows_affected(),
                        // Another instance filled the same skeleton first.
                        Err(e) if unique_violation(&e).is_some() => {}
                        Err(e) => return Err(db_err(e)),
                    }
                }
                Ok(filled)
            }

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
        impl $crate::Store for $store {
            fn backend(&self) -> &'static str {
                $name
            }

            fn pool_stats(&self) -> (u32, u32) {
                let idle = self.pool.num_idle() as u32;
                (self.pool.size().saturating_sub(idle), idle)
            }

            async fn ping(&self) -> Result<(), StoreError> {
                sqlx::query("SELECT 1")
                    .execute(&self.pool)
                    .await
                    .map_err(db_err)?;
                Ok(())
            }

            async fn count_hit(&self, bucket: &str, window_start: i64) -> Result<i64, StoreError> {
                // One statement: atomic on both backends, and no write lock
                // of ours held (the submission writer is not delayed).
                sqlx::query_scalar(
                    "INSERT INTO rate_counters (bucket, window_start, hits) VALUES ($1, $2, 1)
                     ON CONFLICT (bucket) DO UPDATE SET
                        hits = CASE WHEN rate_counters.window_start = excluded.window_start
                                    THEN rate_counters.hits + 1 ELSE 1 END,
                        window_start = excluded.window_start
                     RETURNING hits",
                )
                .bind(bucket)
                .bind(window_start)
                .fetch_one(&self.pool)
                .await
                .map_err(db_err)
            }

            async fn forget_hits(&self, before: i64) -> Result<u64, StoreError> {
                sqlx::query("DELETE FROM rate_counters WHERE window_start < $1")
                    .bind(before)
                    .execute(&self.pool)
                    .await
                    .map(|r| r.rows_affected())
                    .map_err(db_err)
            }

            async fn create_admin_session(&self, row: &$crate::AdminSessionRow) -> Result<(), StoreError> {
                sqlx::query(
                    "INSERT INTO admin_sessions (id_sha256, maintainer, token_sha256, created_at, expires_at, last_used_at)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(&row.id_sha256)
                .bind(&row.maintainer)
                .bind(&row.token_sha256)
                .bind(ts(&row.created_at))
                .bind(ts(&row.expires_at))
                .bind(ts(&row.last_used_at))
                .execute(&self.pool)
                .await
                .map(|_| ())
                .map_err(db_err)
            }

            async fn use_admin_session(
                &self,
                id_sha256: &str,
                now: &DateTime<Utc>,
                idle_before: &DateTime<Utc>,
            ) -> Result<Option<$crate::AdminSessionRow>, StoreError> {
                let row: Option<(String, String, String, String, String)> = sqlx::query_as(
                    "UPDATE admin_sessions SET last_used_at = $2
                     WHERE id_sha256 = $1 AND expires_at > $2 AND last_used_at > $3
                     RETURNING maintainer, token_sha256, created_at, expires_at, last_used_at",
                )
                .bind(id_sha256)
                .bind(ts(now))
                .bind(ts(idle_before))
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?;
                row.map(|(maintainer, token_sha256, created, expires, used)| {
                    Ok($crate::AdminSessionRow {
                        id_sha256: id_sha256.to_string(),
                        maintainer,
                        token_sha256,
                        created_at: parse_ts(&created)?,
                        expires_at: parse_ts(&expires)?,
                        last_used_at: parse_ts(&used)?,
                    })
                })
                .transpose()
            }

            async fn end_admin_session(&self, id_sha256: &str) -> Result<bool, StoreError> {
                sqlx::query("DELETE FROM admin_sessions WHERE id_sha256 = $1")
                    .bind(id_sha256)
                    .execute(&self.pool)
                    .await
                    .map(|r| r.rows_affected() > 0)
                    .map_err(db_err)
            }

            async fn forget_admin_sessions(
                &self,
                now: &DateTime<Utc>,
                idle_before: &DateTime<Utc>,
            ) -> Result<u64, StoreError> {
                sqlx::query("DELETE FROM admin_sessions WHERE expires_at <= $1 OR last_used_at <= $2")
                    .bind(ts(now))
                    .bind(ts(idle_before))
                    .execute(&self.pool)
                    .await
                    .map(|r| r.rows_affected())
                    .map_err(db_err)
            }

            async fn create_submitter(&self, s: &NewSubmitter) -> Result<i64, StoreError> {
                let _w = self.write_lock().await;
                let mut tx = self.pool.begin_with(<$store>::BEGIN_WRITE).await.map_err(db_err)?;
                let now = ts(&chrono::Utc::now());
                let res = sqlx::query_scalar::<_, i64>("INSERT INTO submitters (handle, handle_lower, handle_skeleton, display_name, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id")
                    .bind(&s.handle)
                    .bind(s.handle.to_ascii_lowercase())
                    .bind(::wattcounts_rules::handles::skeleton(&s.handle))
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

            async fn handle_by_skeleton(&self, skeleton: &str) -> Result<Option<String>, StoreError> {
                sqlx::query_scalar("SELECT handle FROM submitters WHERE handle_skeleton = $1")
                    .bind(skeleton)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_err)
            }

            async fn handles(&self) -> Result<Vec<String>, StoreError> {
                sqlx::query_scalar("SELECT handle FROM submitters ORDER BY id")
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)
            }

            async fn key_by_fingerprint(&self, fingerprint: &str) -> Result<Option<KeyRecord>, StoreError> {
                let row = sqlx::query(&format!("{KEY_SELECT} WHERE k.fingerprint = $1"))
                    .bind(fingerprint)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_err)?;
                row.as_ref().map(key_record).transpose()
            }

            async fn blob_paths(&self) -> Result<Vec<String>, StoreError> {
                sqlx::query_scalar("SELECT DISTINCT blob_path FROM submissions")
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)
            }

            async fn keys(&self) -> Result<Vec<KeyRecord>, StoreError> {
                let rows = sqlx::query(&format!("{KEY_SELECT} ORDER BY k.id"))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                rows.iter().map(key_record).collect()
            }

            async fn submissions_of_key(&self, key_id: i64) -> Result<Vec<(Uuid, Status)>, StoreError> {
                let rows: Vec<(String, String)> = sqlx::query_as(
                    "SELECT id, status FROM submissions WHERE key_id = $1 ORDER BY received_at",
                )
                .bind(key_id)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                rows.into_iter()
                    .map(|(id, st)| {
                        Ok((
                            Uuid::parse_str(&id).map_err(|e| StoreError::Other(e.into()))?,
                            parse_status(&st)?,
                        ))
                    })
                    .collect()
            }

            async fn revoke_key(
                &self,
                fingerprint: &str,
                effective_at: chrono::DateTime<chrono::Utc>,
                by: &Actor,
            ) -> Result<Option<Vec<Uuid>>, StoreError> {
                let _w = self.write_lock().await;
                let mut tx = self.pool.begin_with(<$store>::BEGIN_WRITE).await.map_err(db_err)?;
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
                let mut moved = Vec::with_capacity(affected.len());
                for (id, status) in affected {
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
            }

            async fn suspend_submitter(&self, handle: &str, by: &Actor) -> Result<bool, StoreError> {
                let _w = self.write_lock().await;
                let mut tx = self.pool.begin_with(<$store>::BEGIN_WRITE).await.map_err(db_err)?;
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
            }

            async fn decide(
                &self,
                id: Uuid,
                from: &[Status],
                to: Status,
                by: &Actor,
            ) -> Result<Decided, StoreError> {
                let _w = self.write_lock().await;
                let mut tx = self.pool.begin_with(<$store>::BEGIN_WRITE).await.map_err(db_err)?;
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
            }

            async fn catalogue_additions(&self) -> Result<Vec<$crate::CatalogueAddition>, StoreError> {
                let rows: Vec<(i64, String, String, String, String)> = sqlx::query_as(
                    "SELECT version, spec, added_at, actor, reason FROM catalogue_gpus ORDER BY version",
                )
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                rows.into_iter()
                    .map(|(version, spec, added_at, actor, reason)| {
                        Ok($crate::CatalogueAddition {
                            version,
                            spec: serde_json::from_str(&spec).map_err(json_err)?,
                            added_at,
                            actor,
                            reason,
                        })
                    })
                    .collect()
            }

            async fn add_catalogue_gpu(
                &self,
                spec: &::wattcounts_rules::catalog::GpuSpec,
                by: &Actor,
            ) -> Result<Option<$crate::CatalogueAddition>, StoreError> {
                let _w = self.write_lock().await;
                let mut tx = self.pool.begin_with(<$store>::BEGIN_WRITE).await.map_err(db_err)?;
                let known: Option<i64> = sqlx::query_scalar("SELECT version FROM catalogue_gpus WHERE nvml_name = $1")
                    .bind(&spec.nvml_name)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err)?;
                if known.is_some() {
                    return Ok(None);
                }
                let version: i64 = sqlx::query_scalar("SELECT CAST(COALESCE(MAX(version), 0) + 1 AS BIGINT) FROM catalogue_gpus")
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db_err)?;
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
                let leaf = insert_event(
                    &mut tx,
                    by,
                    EventRow {
                        action: "catalogue_add",
                        submission_id: None,
                        handle: None,
                        fingerprint: None,
                        from: None,
                        to: None,
                        effective_at: None,
                        reason: &reason,
                    },
                )
                .await?;
                append_leaves(&mut tx, &[leaf], false).await?;
                tx.commit().await.map_err(db_err)?;
                Ok(Some($crate::CatalogueAddition {
                    version,
                    spec: spec.clone(),
                    added_at: at,
                    actor: by.name.clone(),
                    reason: by.reason.clone(),
                }))
            }

            async fn waiting_on_gpu(&self, nvml_name: &str) -> Result<Vec<SubmissionRecord>, StoreError> {
                let rows = sqlx::query(&format!(
                    "{SUBMISSION_SELECT} WHERE s.status = 'needs_review' AND s.gpu_id IS NULL AND s.gpu_name = $1 ORDER BY s.received_at, s.id"
                ))
                .bind(nvml_name)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                rows.iter().map(submission_record).collect()
            }

            async fn rejudge(
                &self,
                id: Uuid,
                gpu_id: &str,
                checks: &[CheckResult],
                to: Status,
                by: &Actor,
            ) -> Result<Decided, StoreError> {
                let _w = self.write_lock().await;
                let mut tx = self.pool.begin_with(<$store>::BEGIN_WRITE).await.map_err(db_err)?;
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
                if sub.status != Status::NeedsReview || sub.gpu_id.is_some() {
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
                let configs: Vec<(i64, String)> = sqlx::query_as(
                    "SELECT id, metrics FROM configurations WHERE submission_id = $1 ORDER BY position",
                )
                .bind(&id_text)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?;
                for (cid, metrics) in configs {
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
            }

            async fn moderation_events(&self, id: Uuid) -> Result<Vec<ModerationEvent>, StoreError> {
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
                                .map(parse_status)
                                .transpose()?,
                            to_status: r
                                .get::<Option<String>, _>(7)
                                .as_deref()
                                .map(parse_status)
                                .transpose()?,
                            effective_at: r.get(8),
                            reason: r.get(9),
                            log_index: r.get::<Option<i64>, _>(10).map(|i| i as u64),
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

            async fn peer_groups(&self, group_keys: &[String]) -> Result<Vec<PeerGroup>, StoreError> {
                if group_keys.is_empty() {
                    return Ok(Vec::new());
                }
                let placeholders = (2..=group_keys.len() + 1)
                    .map(|i| format!("${i}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let sql = format!(
                    "SELECT model, scenario, lambda_qps, ept_median, ept_mad, submissions FROM leaderboard_groups
                     WHERE visibility = $1 AND group_key IN ({placeholders})"
                );
                let mut query =
                    sqlx::query_as::<_, (String, String, Option<f64>, f64, f64, i64)>(&sql).bind("accepted");
                for k in group_keys {
                    query = query.bind(k);
                }
                let rows = query.fetch_all(&self.pool).await.map_err(db_err)?;
                rows.into_iter()
                    .map(|(model, scenario, lambda_qps, median, mad, n)| {
                        Ok(PeerGroup {
                            scenario: Scenario::parse(&scenario).ok_or_else(|| {
                                StoreError::Other(anyhow::anyhow!("bad scenario {scenario}"))
                            })?,
                            model,
                            lambda_qps,
                            median,
                            mad,
                            submissions: n as u64,
                        })
                    })
                    .collect()
            }

            async fn prior_claims(&self, id: Uuid, content_sha256: &str) -> Result<PriorClaims, StoreError> {
                let id = id.to_string();
                let rows: Vec<(String, String, String, Option<String>)> = sqlx::query_as(
                    "SELECT id, bundle_sha256, status, content_sha256 FROM submissions WHERE id = $1 OR content_sha256 = $2",
                )
                .bind(&id)
                .bind(content_sha256)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                let mut claims = PriorClaims::default();
                for (row_id, digest, status, content) in rows {
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

            async fn insert_submission(&self, s: &NewSubmission) -> Result<InsertOutcome, StoreError> {
                let _w = self.write_lock().await;
                let mut tx = self.pool.begin_with(<$store>::BEGIN_WRITE).await.map_err(db_err)?;
                let id = s.id.to_string();
                let res = sqlx::query(
                    "INSERT INTO submissions (id, bundle_sha256, submitter_id, key_id, status, received_at, gpu_name, gpu_id,
                        run_name, is_demo, bundle_bytes, blob_path, signature, manifest, protocol, content_sha256,
                        iterations, power_samples, energy_rule)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)",
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
                            ept_hi, ept_conf, epr_median, ttft_median, itl_median, intervals)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)",
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

            async fn submissions_on_gpu(&self, gpu_id: &str, limit: u32) -> Result<Vec<SubmissionRecord>, StoreError> {
                let rows = sqlx::query(&format!(
                    "{SUBMISSION_SELECT} WHERE s.gpu_id = $1 AND s.status = 'accepted' ORDER BY s.received_at DESC LIMIT $2"
                ))
                .bind(gpu_id)
                .bind(limit as i64)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                rows.iter().map(submission_record).collect()
            }

            async fn groups(
                &self,
                q: &::wattcounts_analytics::leaderboard::Query,
            ) -> Result<(Vec<::wattcounts_analytics::leaderboard::LeaderboardRow>, u64), StoreError> {
                let (filter, tail, params) = group_query(q, <$store>::BYTE_ORDER);
                let rank = model_rank_column(q);
                let list = if q.evidence_list {
                    ", (SELECT e.ids FROM group_evidence e
                        WHERE e.group_key = leaderboard_groups.group_key AND e.visibility = leaderboard_groups.visibility)
                        AS evidence_ids"
                } else {
                    ""
                };
                let page_sql = format!("SELECT {GROUP_COLUMNS}{list}{rank} FROM leaderboard_groups {filter} {tail}");
                let count_sql = format!("SELECT COUNT(*) FROM leaderboard_groups {filter}");
                let filters = &params[..params.len() - 2];
                let rows = bind_all!(sqlx::query(&page_sql), &params)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                let total = bind_all!(sqlx::query_scalar::<_, i64>(&count_sql), filters)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db_err)?;
                let entries = rows.iter().map(group_entry).collect::<Result<Vec<_>, _>>()?;
                Ok((entries, total as u64))
            }

            async fn group_facets(&self, q: &::wattcounts_analytics::leaderboard::Query) -> Result<$crate::Facets, StoreError> {
                let view = ::wattcounts_analytics::leaderboard::Query {
                    origin: q.origin,
                    protocol: q.protocol.clone(),
                    include_review: q.include_review,
                    ..Default::default()
                };
                let (filter, _, params) = group_query(&view, <$store>::BYTE_ORDER);
                let params = &params[..params.len() - 2];
                macro_rules! bound {
                    ($q:expr) => {
                        bind_all!($q, params)
                    };
                }
                let sql = format!("SELECT DISTINCT model FROM leaderboard_groups {filter}");
                let mut models: Vec<String> = bound!(sqlx::query_scalar::<_, String>(&sql))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                let sql = format!("SELECT DISTINCT gpu_id, gpu_name FROM leaderboard_groups {filter}");
                let mut gpus: Vec<(String, String)> = bound!(sqlx::query_as::<_, (String, String)>(&sql))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                let sql = format!("SELECT DISTINCT lambda_qps FROM leaderboard_groups {filter} AND lambda_qps IS NOT NULL");
                let mut rates: Vec<f64> = bound!(sqlx::query_scalar::<_, f64>(&sql))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                models.sort_by_key(|m| m.to_lowercase());
                gpus.sort();
                rates.sort_by(f64::total_cmp);
                Ok($crate::Facets { models, gpus, rates })
            }

            async fn group_views(&self, include_review: bool) -> Result<Vec<$crate::GroupView>, StoreError> {
                let rows: Vec<(String, String, String, bool, String, Option<f64>, i64)> = sqlx::query_as(
                    "SELECT origin, protocol_id, protocol_label, is_reference, scenario, lambda_qps, COUNT(*)
                     FROM leaderboard_groups WHERE visibility = $1
                     GROUP BY origin, protocol_id, protocol_label, is_reference, scenario, lambda_qps",
                )
                .bind(if include_review { "with_review" } else { "accepted" })
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                let mut views = rows
                    .into_iter()
                    .map(|(origin, protocol_id, protocol_label, reference, scenario, lambda_qps, n)| {
                        Ok($crate::GroupView {
                            origin: ::wattcounts_rules::domain::Origin::parse(&origin)
                                .ok_or_else(|| StoreError::Other(anyhow::anyhow!("bad origin {origin}")))?,
                            protocol_id,
                            protocol_label,
                            reference,
                            scenario: ::wattcounts_rules::domain::ScenarioKey {
                                scenario: Scenario::parse(&scenario).ok_or_else(|| {
                                    StoreError::Other(anyhow::anyhow!("bad scenario {scenario}"))
                                })?,
                                lambda_qps,
                            },
                            groups: n as u64,
                        })
                    })
                    .collect::<Result<Vec<_>, StoreError>>()?;
                // One order on both backends (collations differ).
                views.sort_by(|a, b| {
                    (a.origin.as_str(), !a.reference, &a.protocol_id, a.scenario.scenario.as_str())
                        .cmp(&(b.origin.as_str(), !b.reference, &b.protocol_id, b.scenario.scenario.as_str()))
                        .then(
                            a.scenario
                                .lambda_qps
                                .unwrap_or(0.0)
                                .total_cmp(&b.scenario.lambda_qps.unwrap_or(0.0)),
                        )
                });
                Ok(views)
            }

            async fn snapshot_source(
                &self,
                out: tokio::sync::mpsc::Sender<$crate::SnapshotPart>,
                batch: usize,
                previous_log_size: Option<u64>,
            ) -> Result<(), StoreError> {
                use futures_util::TryStreamExt;
                use $crate::SnapshotPart;
                let gone = || StoreError::Other(anyhow::anyhow!("the snapshot writer stopped"));
                let mut tx = self.pool.begin().await.map_err(db_err)?;
                for sql in <$store>::READ_SNAPSHOT {
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
            }

            async fn dataset_counts(&self) -> Result<DatasetCounts, StoreError> {
                let counters: Vec<(String, i64, i64, i64)> = sqlx::query_as(
                    "SELECT origin, submissions, iterations, power_samples FROM dataset_counters WHERE status = 'accepted'",
                )
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                let (gpus, models): (i64, i64) = sqlx::query_as(
                    "SELECT COUNT(DISTINCT gpu_id), COUNT(DISTINCT model) FROM leaderboard_groups WHERE visibility = 'accepted'",
                )
                .fetch_one(&self.pool)
                .await
                .map_err(db_err)?;
                let mut c = DatasetCounts {
                    gpus: gpus as u64,
                    models: models as u64,
                    ..Default::default()
                };
                for (origin, subs, iterations, samples) in counters {
                    c.submissions += subs as u64;
                    if origin == "demo" {
                        c.demo_submissions += subs as u64;
                    }
                    c.iterations += iterations as u64;
                    c.power_samples += samples as u64;
                }
                Ok(c)
            }

            async fn submissions_to_derive(&self) -> Result<Vec<SubmissionRecord>, StoreError> {
                let rows = sqlx::query(&format!(
                    "{SUBMISSION_SELECT} WHERE s.protocol IS NULL OR s.energy_rule < $1 ORDER BY s.received_at, s.id"
                ))
                .bind(::wattcounts_rules::derived::ENERGY_RULE_VERSION)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                rows.iter().map(submission_record).collect()
            }

            async fn read_model_outdated(&self) -> Result<bool, StoreError> {
                let missing: Option<i64> =
                    sqlx::query_scalar("SELECT 1 FROM configurations WHERE intervals IS NULL LIMIT 1")
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db_err)?;
                Ok(missing.is_some())
            }

            async fn rebuild_read_model(
                &self,
                derived: &std::collections::HashMap<Uuid, ::wattcounts_rules::derived::StoredDerivation>,
            ) -> Result<$crate::RebuildReport, StoreError> {
                let _w = self.write_lock().await;
                let mut tx = self.pool.begin_with(<$store>::BEGIN_WRITE).await.map_err(db_err)?;
                let mut report = $crate::RebuildReport::default();
                let subs = sqlx::query(&format!("{SUBMISSION_SELECT} ORDER BY s.received_at, s.id"))
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db_err)?
                    .iter()
                    .map(submission_record)
                    .collect::<Result<Vec<_>, _>>()?;
                // Content digests are unique: clear them all, then give each
                // to the oldest submission holding it.
                sqlx::query("UPDATE submissions SET content_sha256 = NULL, duplicate_of = NULL")
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                let mut first_with: std::collections::HashMap<String, Uuid> = Default::default();
                let mut groups: std::collections::BTreeMap<String, ::wattcounts_analytics::leaderboard::GroupInfo> = Default::default();
                for sub in &subs {
                    report.submissions += 1;
                    let rederived = derived.get(&sub.id);
                    let (protocol, content) = match rederived {
                        Some(d) => {
                            report.derived += 1;
                            (d.protocol.clone(), d.content_sha256.clone())
                        }
                        None => match (&sub.protocol, &sub.content_sha256) {
                            (Some(p), Some(c)) => (p.clone(), c.clone()),
                            _ => {
                                return Err(StoreError::Other(anyhow::anyhow!(
                                    "submission {} has no recorded protocol or content digest and none was derived from its bundle",
                                    sub.id
                                )))
                            }
                        },
                    };
                    let duplicate_of = first_with.get(&content).copied();
                    if let Some(first) = duplicate_of {
                        report.duplicates.push((sub.id, first));
                    } else {
                        first_with.insert(content.clone(), sub.id);
                    }
                    let id = sub.id.to_string();
                    // Runs derived by an older energy rule: again from the
                    // bundle, for the configurations stored (one its checks
                    // set apart stays out).
                    if let Some(d) = rederived {
                        let stored_configs: Vec<(String, String, Option<f64>)> = sqlx::query_as(
                            "SELECT model, scenario, lambda_qps FROM configurations WHERE submission_id = $1",
                        )
                        .bind(&id)
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(db_err)?;
                        let stored_config = |model: &str, scenario: ::wattcounts_rules::domain::Scenario, lambda: Option<f64>| {
                            stored_configs
                                .iter()
                                .any(|(m, s, l)| m == model && s == scenario.as_str() && *l == lambda)
                        };
                        sqlx::query("DELETE FROM runs WHERE submission_id = $1")
                            .bind(&id)
                            .execute(&mut *tx)
                            .await
                            .map_err(db_err)?;
                        let runs: Vec<_> = d
                            .runs
                            .iter()
                            .filter(|r| stored_config(&r.model, r.scenario, r.lambda_qps))
                            .cloned()
                            .collect();
                        insert_runs(&mut tx, &id, &runs).await?;
                        sqlx::query("UPDATE submissions SET energy_rule = $1 WHERE id = $2")
                            .bind(::wattcounts_rules::derived::ENERGY_RULE_VERSION)
                            .bind(&id)
                            .execute(&mut *tx)
                            .await
                            .map_err(db_err)?;
                    }
                    sqlx::query(
                        "UPDATE submissions SET protocol = $1, content_sha256 = $2, duplicate_of = $3,
                            iterations = (SELECT COUNT(*) FROM runs r WHERE r.submission_id = $4),
                            power_samples = (SELECT CAST(COALESCE(SUM(power_samples), 0) AS BIGINT) FROM runs r WHERE r.submission_id = $4)
                         WHERE id = $4",
                    )
                    .bind(serde_json::to_string(&protocol).map_err(json_err)?)
                    .bind(duplicate_of.is_none().then_some(&content))
                    .bind(duplicate_of.map(|d| d.to_string()))
                    .bind(&id)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    let configs: Vec<(i64, String)> = sqlx::query_as(
                        "SELECT id, metrics FROM configurations WHERE submission_id = $1 ORDER BY position",
                    )
                    .bind(&id)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    for (cid, metrics) in configs {
                        report.configurations += 1;
                        let c: ConfigurationMetrics = serde_json::from_str(&metrics).map_err(json_err)?;
                        // The same configuration as derived again, if it was.
                        let c = rederived
                            .and_then(|d| {
                                d.configurations.iter().find(|k| {
                                    k.is_of(&c.model, c.scenario, c.lambda_qps)
                                })
                            })
                            .cloned()
                            .unwrap_or(c);
                        let g = ::wattcounts_analytics::leaderboard::group_of(sub.gpu_id.as_deref(), &sub.gpu_name, sub.is_demo, &protocol, &c);
                        let f = ::wattcounts_analytics::leaderboard::member_figures(&c);
                        let key = g.key.canonical();
                        sqlx::query(
                            "UPDATE configurations SET group_key = $1, ept_lo = $2, ept_hi = $3, ept_conf = $4, epr_median = $5,
                                ttft_median = $6, itl_median = $7, intervals = $8, ept_median_j = $10, ept_cv = $11,
                                throughput_median = $12, power_mean_median_w = $13, metrics = $14, iterations = $15 WHERE id = $9",
                        )
                        .bind(&key)
                        .bind(f.ept_interval.lo)
                        .bind(f.ept_interval.hi)
                        .bind(f.ept_interval.confidence)
                        .bind(f.epr_median)
                        .bind(f.ttft_median)
                        .bind(f.itl_median)
                        .bind(f.intervals.to_json())
                        .bind(cid)
                        .bind(c.energy_per_token_j.median)
                        .bind(c.energy_per_token_j.cv)
                        .bind(c.throughput_tok_s.median)
                        .bind(c.power_mean_w.median)
                        .bind(serde_json::to_string(&c).map_err(json_err)?)
                        .bind(c.iterations as i64)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                        groups.entry(key).or_insert(g);
                    }
                }
                for sql in [
                    "DELETE FROM group_evidence",
                    "DELETE FROM leaderboard_groups",
                    "DELETE FROM group_keys",
                    "DELETE FROM dataset_counters",
                ] {
                    sqlx::query(sql).execute(&mut *tx).await.map_err(db_err)?;
                }
                // Every group key was just written: fresh statistics let the
                // planner use the group index for the recomputation below
                // (after a bulk load it would otherwise scan the table per group).
                if let Some(sql) = <$store>::ANALYZE {
                    sqlx::query(sql).execute(&mut *tx).await.map_err(db_err)?;
                }
                for (key, g) in &groups {
                    ensure_group_key(&mut tx, g).await?;
                    refresh_group(&mut tx, key).await?;
                }
                report.groups = groups.len() as u64;
                sqlx::query(
                    "INSERT INTO dataset_counters (origin, status, submissions, iterations, power_samples)
                     SELECT CASE WHEN is_demo THEN 'demo' ELSE 'real' END, status, COUNT(*),
                            CAST(SUM(iterations) AS BIGINT), CAST(SUM(power_samples) AS BIGINT)
                     FROM submissions WHERE duplicate_of IS NULL GROUP BY 1, 2",
                )
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                tx.commit().await.map_err(db_err)?;
                Ok(report)
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

            async fn reserve_snapshot(&self, id: &str, at: &DateTime<Utc>) -> Result<bool, StoreError> {
                sqlx::query("INSERT INTO snapshots (id, reserved_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING")
                    .bind(id)
                    .bind(ts(at))
                    .execute(&self.pool)
                    .await
                    .map(|r| r.rows_affected() == 1)
                    .map_err(db_err)
            }

            async fn publish_snapshot(&self, row: &SnapshotRow, at: &DateTime<Utc>) -> Result<(), StoreError> {
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
            }

            async fn drop_snapshot_reservation(&self, id: &str) -> Result<(), StoreError> {
                sqlx::query("DELETE FROM snapshots WHERE id = $1 AND published_at IS NULL")
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map(|_| ())
                    .map_err(db_err)
            }

            async fn stale_snapshot_reservations(
                &self,
                before: &DateTime<Utc>,
            ) -> Result<Vec<String>, StoreError> {
                sqlx::query_scalar(
                    "SELECT id FROM snapshots WHERE published_at IS NULL AND reserved_at < $1 ORDER BY id",
                )
                .bind(ts(before))
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)
            }

            async fn snapshots(&self) -> Result<Vec<SnapshotRow>, StoreError> {
                let rows: Vec<(String, String, String, String)> = sqlx::query_as(
                    "SELECT id, created_at, manifest, manifest_sha256 FROM snapshots
                     WHERE published_at IS NOT NULL ORDER BY created_at DESC, id DESC",
                )
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
                Ok(rows.into_iter().map(snapshot_row).collect())
            }

            async fn snapshot(&self, id: Option<&str>) -> Result<Option<SnapshotRow>, StoreError> {
                let row: Option<(String, String, String, String)> = match id {
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
                Ok(row.map(snapshot_row))
            }

            async fn put_estimator_fit(
                &self,
                row: &$crate::EstimatorFitRow,
                keep: u32,
            ) -> Result<(), StoreError> {
                let mut tx = self.pool.begin().await.map_err(db_err)?;
                sqlx::query(
                    "INSERT INTO estimator_fits (version, data_stamp, origin, protocol, fitted_at, body)
                     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (version) DO NOTHING",
                )
                .bind(&row.version)
                .bind(&row.data_stamp)
                .bind(&row.origin)
                .bind(&row.protocol)
                .bind(ts(&row.fitted_at))
                .bind(&row.body)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                sqlx::query(
                    "DELETE FROM estimator_fits WHERE version NOT IN
                     (SELECT version FROM estimator_fits ORDER BY fitted_at DESC, version LIMIT $1)",
                )
                .bind(i64::from(keep.max(1)))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                tx.commit().await.map_err(db_err)
            }

            async fn estimator_fit(
                &self,
                version: &str,
            ) -> Result<Option<$crate::EstimatorFitRow>, StoreError> {
                let row: Option<(String, String, String, String, String, String)> = sqlx::query_as(
                    "SELECT version, data_stamp, origin, protocol, fitted_at, body
                     FROM estimator_fits WHERE version = $1",
                )
                .bind(version)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?;
                row.map(|(version, data_stamp, origin, protocol, fitted_at, body)| {
                    Ok($crate::EstimatorFitRow {
                        version,
                        data_stamp,
                        origin,
                        protocol,
                        fitted_at: parse_ts(&fitted_at)?,
                        body,
                    })
                })
                .transpose()
            }
        }
    };
}

pub(super) fn snapshot_row(
    (id, created_at, manifest, manifest_sha256): (String, String, String, String),
) -> super::SnapshotRow {
    super::SnapshotRow {
        id,
        created_at,
        manifest,
        manifest_sha256,
    }
}
pub(super) use sql_store;
