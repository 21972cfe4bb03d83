//! The read model: leaderboard groups and dataset counters, derived from
//! the stored submissions. Its helpers run inside the write transaction
//! that changes them (intake, moderation), so a reader never sees a
//! submission without its group or a group without its members; its reads
//! are indexed and paged; `db rebuild` recomputes all of it.

use async_trait::async_trait;
use uuid::Uuid;

use crate::sql::*;
use crate::{DatasetCounts, Facets, GroupView, StoreError, SubmissionRecord};
use wattcounts_analytics::leaderboard::{LeaderboardRow, Query};
use wattcounts_rules::checks::PeerGroup;

// Rows as the read model's statements return them, each read by column
// name: a column added to a SELECT cannot shift another's figure.

/// What a submission adds to the dataset counters.
#[derive(sqlx::FromRow)]
pub(crate) struct CountedSubmission {
    pub is_demo: bool,
    pub iterations: i64,
    pub power_samples: i64,
}

/// An accepted group's energy-per-token figures, as the consistency check
/// compares a new bundle with them.
#[derive(sqlx::FromRow)]
pub(crate) struct GroupFigure {
    pub model: String,
    pub scenario: String,
    pub lambda_qps: Option<f64>,
    pub ept_median: f64,
    pub ept_mad: f64,
    pub submissions: i64,
}

/// How many submissions and moderation events there are: what the
/// response cache's validity is stamped with.
#[derive(sqlx::FromRow)]
pub(crate) struct DataStamp {
    pub submissions: i64,
    pub events: i64,
}

/// A GPU's catalogue id and NVML name.
#[derive(sqlx::FromRow)]
pub(crate) struct GpuName {
    pub gpu_id: String,
    pub gpu_name: String,
}

/// One view of the leaderboard (origin, protocol, scenario, rate) and how
/// many groups it holds.
#[derive(sqlx::FromRow)]
pub(crate) struct ViewOfGroups {
    pub origin: String,
    pub protocol_id: String,
    pub protocol_label: String,
    pub is_reference: bool,
    pub scenario: String,
    pub lambda_qps: Option<f64>,
    pub group_count: i64,
}

/// One origin's accepted counters.
#[derive(sqlx::FromRow)]
pub(crate) struct Counter {
    pub origin: String,
    pub submissions: i64,
    pub iterations: i64,
    pub power_samples: i64,
}

/// How many GPUs and models the accepted groups span.
#[derive(sqlx::FromRow)]
pub(crate) struct Breadth {
    pub gpus: i64,
    pub models: i64,
}

/// A configuration's key within its submission.
#[derive(sqlx::FromRow)]
pub(crate) struct ConfigurationKey {
    pub model: String,
    pub scenario: String,
    pub lambda_qps: Option<f64>,
}

/// What `db rebuild` did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RebuildReport {
    pub submissions: u64,
    /// Protocols and digests derived from stored bundles this time.
    pub derived: u64,
    /// (duplicate, the older submission with the same run content).
    pub duplicates: Vec<(Uuid, Uuid)>,
    pub configurations: u64,
    pub groups: u64,
}

#[async_trait]
pub trait ReadModel: Send + Sync {
    /// What the accepted members of these groups measured (canonical
    /// group keys: same GPU, protocol and origin), from the read model: one
    /// row per group, however many submissions it holds.
    async fn peer_groups(&self, group_keys: &[String]) -> Result<Vec<PeerGroup>, StoreError>;
    /// The loaded idle accepted submissions of GPU `gpu_id` (of one origin)
    /// showed: the lowest of their kept `idle_seen_w`, over how many
    /// submissions and submitters; None when none showed one. Reads that
    /// GPU's rows of an index, never its runs.
    async fn observed_idle(
        &self,
        gpu_id: &str,
        is_demo: bool,
    ) -> Result<Option<wattcounts_rules::checks::ObservedIdle>, StoreError>;
    /// Changes whenever another writer (another instance) stores a
    /// submission or records a moderation decision: (submissions, events).
    async fn data_stamp(&self) -> Result<(i64, i64), StoreError>;
    /// One page of groups from the read model and how many match.
    /// `q.origin: None` reads both origins (each row says which).
    async fn groups(&self, q: &Query) -> Result<(Vec<LeaderboardRow>, u64), StoreError>;
    /// The models, GPUs and server rates present in one view (origin,
    /// protocol, visibility of `q`; its other filters are ignored).
    async fn group_facets(&self, q: &Query) -> Result<Facets, StoreError>;
    /// The views the read model holds: origin × protocol × scenario with
    /// their group counts (a few dozen rows, whatever the data size).
    async fn group_views(&self, include_review: bool) -> Result<Vec<GroupView>, StoreError>;
    /// What the accepted data holds, for the front page (counters and the
    /// read model only).
    async fn dataset_counts(&self) -> Result<DatasetCounts, StoreError>;
    /// Submissions whose protocol or run-content digest is not recorded
    /// yet (stored before they existed), or whose runs an older energy rule
    /// derived: what `db rebuild` must derive from the stored bundles.
    async fn submissions_to_derive(&self) -> Result<Vec<SubmissionRecord>, StoreError>;
    /// Whether some configuration lacks a figure the read model now keeps
    /// (stored before it did): `db rebuild` computes it from the metrics.
    async fn read_model_outdated(&self) -> Result<bool, StoreError>;
    /// Recomputes every derived table (protocols and content digests from
    /// `derived`, duplicates, group keys, the groups, the counters) from the
    /// stored submissions, in one transaction.
    async fn rebuild_read_model(
        &self,
        derived: &std::collections::HashMap<Uuid, wattcounts_rules::derived::StoredDerivation>,
    ) -> Result<RebuildReport, StoreError>;
}

/// The members of one group: `configurations` joined to their submission.
pub(crate) const MEMBER_SELECT: &str = "SELECT s.id, s.submitter_id, s.status, c.iterations, c.ept_median_j, c.ept_lo, c.ept_hi,
        c.ept_conf, c.ept_cv, c.epr_median, c.throughput_median, c.power_mean_median_w, c.ttft_median, c.itl_median,
        c.intervals, c.concurrency_median, c.prefill_share_median
     FROM configurations c JOIN submissions s ON s.id = c.submission_id
     WHERE c.group_key = $1 AND s.status <> 'rejected' AND s.duplicate_of IS NULL
     ORDER BY s.received_at, s.id";

/// A group's figures, with what it is copied from `group_keys`.
pub(crate) const GROUP_INSERT: &str = "INSERT INTO leaderboard_groups (group_key, visibility, gpu_id, gpu_name, model, scenario,
        lambda_qps, protocol_id, protocol_label, is_reference, origin, size_class, ept_median, ept_lo, ept_hi, ept_confidence,
        ept_cv, epr_median, throughput_median, power_median, ttft_median, itl_median, iterations, submissions, submitters,
        in_review, evidence, ept_mad, intervals, concurrency_median, prefill_share_median)
     SELECT group_key, $2, gpu_id, gpu_name, model, scenario, lambda_qps, protocol_id, protocol_label, is_reference, origin,
        size_class, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21
     FROM group_keys WHERE group_key = $1";

pub(crate) const GROUP_KEY_INSERT: &str =
    "INSERT INTO group_keys (group_key, gpu_id, gpu_name, model, scenario, lambda_qps,
        protocol_id, protocol_label, is_reference, origin, size_class)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (group_key) DO NOTHING";

/// The columns of a leaderboard row, in [`group_entry`] order.
pub(crate) const GROUP_COLUMNS: &str = "gpu_id, gpu_name, model, scenario, lambda_qps, protocol_id, protocol_label, is_reference,
        origin, ept_median, ept_lo, ept_hi, ept_confidence, ept_cv, epr_median, throughput_median, power_median, ttft_median,
        itl_median, iterations, submissions, submitters, in_review, evidence, intervals, concurrency_median,
        prefill_share_median";

/// Adds to one (origin, status) counter row.
pub(crate) const COUNTER_ADD: &str = "INSERT INTO dataset_counters (origin, status, submissions, iterations, power_samples)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (origin, status) DO UPDATE SET submissions = dataset_counters.submissions + excluded.submissions,
        iterations = dataset_counters.iterations + excluded.iterations,
        power_samples = dataset_counters.power_samples + excluded.power_samples";

/// WHERE, ORDER BY and paging of a leaderboard query; `$1…` in order of `params`.
///
/// Rows come grouped by scenario and model (models case-insensitively,
/// `byte_order` making both backends agree), each model's GPUs in the sort's
/// order: a rank across models would compare what is not comparable.
pub(crate) fn group_query(
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
pub(crate) fn model_rank_column(q: &wattcounts_analytics::leaderboard::Query) -> String {
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

/// The `intervals` column: absent on rows stored before it existed.
pub(crate) fn intervals_of(
    text: Option<String>,
) -> Result<wattcounts_analytics::leaderboard::FigureIntervals, StoreError> {
    match text {
        Some(t) => serde_json::from_str(&t).map_err(json_err),
        None => Ok(Default::default()),
    }
}

/// Implements [`ReadModel`] for a backend module (`sqlite`, `postgres`): `$store`
/// has `pool`, `calls`, `write_lock()` and `DIALECT`; `$row` and `$conn` are
/// its row and connection types. The helpers it defines are shared by the
/// other aggregates of that module.
macro_rules! read_model_sql {
    ($store:ty, $row:ty, $conn:ty) => {
        /// A row of [`MEMBER_SELECT`].
        fn member_row(r: &$row) -> Result<::wattcounts_analytics::leaderboard::Member, StoreError> {
            let id: String = r.get("id");
            let status: String = r.get("status");
            let iterations = r.get::<i64, _>("iterations") as u32;
            let median: f64 = r.get("ept_median_j");
            let (lo, hi, conf): (Option<f64>, Option<f64>, Option<f64>) = (r.get("ept_lo"), r.get("ept_hi"), r.get("ept_conf"));
            Ok(::wattcounts_analytics::leaderboard::Member {
                submission_id: Uuid::parse_str(&id).map_err(|e| StoreError::Other(e.into()))?,
                submitter_id: r.get("submitter_id"),
                status: parse_status(&status)?,
                iterations,
                ept_median: median,
                ept_interval: ::wattcounts_rules::domain::Interval {
                    lo: lo.unwrap_or(median),
                    hi: hi.unwrap_or(median),
                    confidence: conf.unwrap_or(0.0),
                },
                ept_cv: r.get("ept_cv"),
                epr_median: r.get("epr_median"),
                throughput_median: r.get("throughput_median"),
                power_median: r.get("power_mean_median_w"),
                ttft_median: r.get("ttft_median"),
                itl_median: r.get("itl_median"),
                intervals: intervals_of(r.get("intervals"))?,
                concurrency_median: r.get("concurrency_median"),
                prefill_share_median: r.get("prefill_share_median"),
            })
        }

        /// A row of [`GROUP_COLUMNS`].
        fn group_entry(r: &$row) -> Result<::wattcounts_analytics::leaderboard::LeaderboardRow, StoreError> {
            let scenario: String = r.get("scenario");
            let origin: String = r.get("origin");
            let origin = ::wattcounts_rules::domain::Origin::parse(&origin)
                .ok_or_else(|| StoreError::Other(anyhow::anyhow!("bad origin {origin}")))?;
            let first: String = r.get("evidence");
            let evidence = Uuid::parse_str(&first).map_err(|e| StoreError::Other(e.into()))?;
            // The whole list only where the query asked for it.
            let evidence_ids = match r.try_get::<Option<String>, _>("evidence_ids") {
                Ok(Some(list)) => serde_json::from_str(&list).map_err(json_err)?,
                _ => vec![evidence],
            };
            Ok(::wattcounts_analytics::leaderboard::LeaderboardRow {
                gpu_id: r.get("gpu_id"),
                gpu_name: r.get("gpu_name"),
                model: r.get("model"),
                scenario: Scenario::parse(&scenario)
                    .ok_or_else(|| StoreError::Other(anyhow::anyhow!("bad scenario {scenario}")))?,
                lambda_qps: r.get("lambda_qps"),
                protocol_id: r.get("protocol_id"),
                protocol: r.get("protocol_label"),
                reference_protocol: r.get("is_reference"),
                origin,
                energy_per_token_j: r.get("ept_median"),
                energy_per_token_interval: ::wattcounts_rules::domain::Interval {
                    lo: r.get("ept_lo"),
                    hi: r.get("ept_hi"),
                    confidence: r.get("ept_confidence"),
                },
                energy_per_token_cv: r.get("ept_cv"),
                energy_per_request_j: r.get("epr_median"),
                throughput_tok_s: r.get("throughput_median"),
                power_mean_w: r.get("power_median"),
                ttft_p50_s: r.get("ttft_median"),
                itl_s: r.get("itl_median"),
                mean_concurrency: r.get("concurrency_median"),
                prefill_energy_share: r.get("prefill_share_median"),
                intervals: intervals_of(r.get("intervals"))?,
                rank_in_model: r.try_get::<i64, _>("model_rank").ok().map(|n| n as u64),
                iterations: r.get::<i64, _>("iterations") as u64,
                submissions: r.get::<i64, _>("submissions") as u64,
                submitters: r.get::<i64, _>("submitters") as u64,
                demo: origin == ::wattcounts_rules::domain::Origin::Demo,
                needs_review: r.get::<i64, _>("in_review") > 0,
                evidence,
                evidence_ids,
            })
        }

        async fn refresh_group(tx: &mut $conn, key: &str) -> Result<(), StoreError> {
            if let Some(sql) = <$store>::DIALECT.lock_group {
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
                    .bind(f.concurrency_median)
                    .bind(f.prefill_share_median)
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
            let row: Option<$crate::read_model::CountedSubmission> = sqlx::query_as(
                "SELECT is_demo, iterations, power_samples FROM submissions WHERE id = $1 AND duplicate_of IS NULL",
            )
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
            let Some($crate::read_model::CountedSubmission { is_demo: demo, iterations, power_samples: samples }) = row else {
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

        #[async_trait]
        impl $crate::read_model::ReadModel for $store {
            async fn observed_idle(
                &self,
                gpu_id: &str,
                is_demo: bool,
            ) -> Result<Option<::wattcounts_rules::checks::ObservedIdle>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "observed_idle", async move {
                    let row = sqlx::query(
                        "SELECT MIN(idle_seen_w) AS lowest, COUNT(*) AS n, COUNT(DISTINCT submitter_id) AS who
                         FROM submissions
                         WHERE gpu_id = $1 AND status = 'accepted' AND is_demo = $2 AND idle_seen_w IS NOT NULL",
                    )
                    .bind(gpu_id)
                    .bind(is_demo)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db_err)?;
                    let lowest: Option<f64> = ::sqlx::Row::try_get(&row, "lowest").map_err(db_err)?;
                    let n: i64 = ::sqlx::Row::try_get(&row, "n").map_err(db_err)?;
                    let who: i64 = ::sqlx::Row::try_get(&row, "who").map_err(db_err)?;
                    Ok(lowest.map(|lowest_w| ::wattcounts_rules::checks::ObservedIdle {
                        lowest_w,
                        submissions: n as u64,
                        submitters: who as u64,
                    }))
                }).await
            }

            async fn peer_groups(&self, group_keys: &[String]) -> Result<Vec<PeerGroup>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "peer_groups", async move {
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
                        sqlx::query_as::<_, $crate::read_model::GroupFigure>(&sql).bind("accepted");
                    for k in group_keys {
                        query = query.bind(k);
                    }
                    let rows = query.fetch_all(&self.pool).await.map_err(db_err)?;
                    rows.into_iter()
                        .map(|$crate::read_model::GroupFigure { model, scenario, lambda_qps, ept_median: median, ept_mad: mad, submissions: n }| {
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
                }).await
            }

            async fn data_stamp(&self) -> Result<(i64, i64), StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "data_stamp", async move {
                    let stamp: $crate::read_model::DataStamp = sqlx::query_as(
                        "SELECT (SELECT COUNT(*) FROM submissions) AS submissions,
                                (SELECT COUNT(*) FROM moderation_events) AS events",
                    )
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db_err)?;
                    Ok((stamp.submissions, stamp.events))
                }).await
            }

            async fn groups(
                &self,
                q: &::wattcounts_analytics::leaderboard::Query,
            ) -> Result<(Vec<::wattcounts_analytics::leaderboard::LeaderboardRow>, u64), StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "groups", async move {
                    let (filter, tail, params) = group_query(q, <$store>::DIALECT.byte_order);
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
                }).await
            }

            async fn group_facets(&self, q: &::wattcounts_analytics::leaderboard::Query) -> Result<$crate::Facets, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "group_facets", async move {
                    let view = ::wattcounts_analytics::leaderboard::Query {
                        origin: q.origin,
                        protocol: q.protocol.clone(),
                        include_review: q.include_review,
                        ..Default::default()
                    };
                    let (filter, _, params) = group_query(&view, <$store>::DIALECT.byte_order);
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
                    let mut gpus: Vec<(String, String)> = bound!(sqlx::query_as::<_, $crate::read_model::GpuName>(&sql))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_err)?
                        .into_iter()
                        .map(|g| (g.gpu_id, g.gpu_name))
                        .collect();
                    let sql = format!("SELECT DISTINCT lambda_qps FROM leaderboard_groups {filter} AND lambda_qps IS NOT NULL");
                    let mut rates: Vec<f64> = bound!(sqlx::query_scalar::<_, f64>(&sql))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_err)?;
                    models.sort_by_key(|m| m.to_lowercase());
                    gpus.sort();
                    rates.sort_by(f64::total_cmp);
                    Ok($crate::Facets { models, gpus, rates })
                }).await
            }

            async fn group_views(&self, include_review: bool) -> Result<Vec<$crate::GroupView>, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "group_views", async move {
                    let rows: Vec<$crate::read_model::ViewOfGroups> = sqlx::query_as(
                        "SELECT origin, protocol_id, protocol_label, is_reference, scenario, lambda_qps, COUNT(*) AS group_count
                         FROM leaderboard_groups WHERE visibility = $1
                         GROUP BY origin, protocol_id, protocol_label, is_reference, scenario, lambda_qps",
                    )
                    .bind(if include_review { "with_review" } else { "accepted" })
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    let mut views = rows
                        .into_iter()
                        .map(|$crate::read_model::ViewOfGroups { origin, protocol_id, protocol_label, is_reference: reference, scenario, lambda_qps, group_count: n }| {
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
                }).await
            }

            async fn dataset_counts(&self) -> Result<DatasetCounts, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "dataset_counts", async move {
                    let counters: Vec<$crate::read_model::Counter> = sqlx::query_as(
                        "SELECT origin, submissions, iterations, power_samples FROM dataset_counters WHERE status = 'accepted'",
                    )
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    let $crate::read_model::Breadth { gpus, models } = sqlx::query_as(
                        "SELECT COUNT(DISTINCT gpu_id) AS gpus, COUNT(DISTINCT model) AS models FROM leaderboard_groups WHERE visibility = 'accepted'",
                    )
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db_err)?;
                    let mut c = DatasetCounts {
                        gpus: gpus as u64,
                        models: models as u64,
                        ..Default::default()
                    };
                    for $crate::read_model::Counter { origin, submissions: subs, iterations, power_samples: samples } in counters {
                        c.submissions += subs as u64;
                        if origin == "demo" {
                            c.demo_submissions += subs as u64;
                        }
                        c.iterations += iterations as u64;
                        c.power_samples += samples as u64;
                    }
                    Ok(c)
                }).await
            }

            async fn submissions_to_derive(&self) -> Result<Vec<SubmissionRecord>, StoreError> {
                self.calls.run($crate::calls::CallKind::Maintenance, "submissions_to_derive", async move {
                    let rows = sqlx::query(&format!(
                        "{SUBMISSION_SELECT} WHERE s.protocol IS NULL OR s.energy_rule < $1
                            OR EXISTS (SELECT 1 FROM runs r WHERE r.submission_id = s.id AND r.scenario = 'server'
                                AND r.e2e_sum_s IS NULL)
                         ORDER BY s.received_at, s.id"
                    ))
                    .bind(::wattcounts_rules::derived::ENERGY_RULE_VERSION)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                    rows.iter().map(submission_record).collect()
                }).await
            }

            async fn read_model_outdated(&self) -> Result<bool, StoreError> {
                self.calls.run($crate::calls::CallKind::Request, "read_model_outdated", async move {
                    let missing: Option<i64> =
                        sqlx::query_scalar("SELECT 1 FROM configurations WHERE intervals IS NULL LIMIT 1")
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(db_err)?;
                    Ok(missing.is_some())
                }).await
            }

            async fn rebuild_read_model(
                &self,
                derived: &std::collections::HashMap<Uuid, ::wattcounts_rules::derived::StoredDerivation>,
            ) -> Result<$crate::RebuildReport, StoreError> {
                self.calls.run($crate::calls::CallKind::Maintenance, "rebuild_read_model", async move {
                    let _w = self.write_lock().await;
                    let mut tx = self.pool.begin_with(<$store>::DIALECT.begin_write).await.map_err(db_err)?;
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
                            let stored_configs: Vec<$crate::read_model::ConfigurationKey> = sqlx::query_as(
                                "SELECT model, scenario, lambda_qps FROM configurations WHERE submission_id = $1",
                            )
                            .bind(&id)
                            .fetch_all(&mut *tx)
                            .await
                            .map_err(db_err)?;
                            let stored_config = |model: &str, scenario: ::wattcounts_rules::domain::Scenario, lambda: Option<f64>| {
                                stored_configs
                                    .iter()
                                    .any(|k| k.model == model && k.scenario == scenario.as_str() && k.lambda_qps == lambda)
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
                                power_samples = (SELECT CAST(COALESCE(SUM(power_samples), 0) AS BIGINT) FROM runs r WHERE r.submission_id = $4),
                                idle_seen_w = (SELECT MIN(r.power_min_w) FROM runs r
                                    WHERE r.submission_id = $4 AND r.scenario = 'server' AND r.power_samples > 0)
                             WHERE id = $4",
                        )
                        .bind(serde_json::to_string(&protocol).map_err(json_err)?)
                        .bind(duplicate_of.is_none().then_some(&content))
                        .bind(duplicate_of.map(|d| d.to_string()))
                        .bind(&id)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                        let configs: Vec<$crate::sql::StoredMetrics> = sqlx::query_as(
                            "SELECT id, metrics FROM configurations WHERE submission_id = $1 ORDER BY position",
                        )
                        .bind(&id)
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(db_err)?;
                        for $crate::sql::StoredMetrics { id: cid, metrics } in configs {
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
                                    throughput_median = $12, power_mean_median_w = $13, metrics = $14, iterations = $15,
                                    concurrency_median = $16, prefill_share_median = $17 WHERE id = $9",
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
                            .bind(f.concurrency_median)
                            .bind(f.prefill_share_median)
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
                    if let Some(sql) = <$store>::DIALECT.analyze {
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
                }).await
            }
        }
    };
}
pub(crate) use read_model_sql;
