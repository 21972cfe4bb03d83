//! Server-rendered HTML pages and the leaderboard's JSON twin. Every page is
//! rendered in one place (`render`), which sets the status and headers.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{render, ApiError, PageError};
use crate::extract::leaderboard_query::parse_query;
use crate::extract::query::{LeaderboardParams, PageParams, Params};
use crate::view::{format, model_path, scenario_label, url_encode, view_controls, view_note, Opt};
use crate::AppState;
use wattcounts_analytics::leaderboard::{self, SortKey};
use wattcounts_rules::bundle::harness::Scenario;
use wattcounts_rules::domain::Origin;
use wattcounts_service::Board;

pub(crate) async fn load(s: &AppState, q: &leaderboard::Query) -> Result<Board, ApiError> {
    Ok(s.service.leaderboard(q).await?)
}

/// One page of the leaderboard.
#[derive(Serialize, ToSchema)]
pub struct LeaderboardAnswer {
    /// Rows in the view before paging.
    pub total: u64,
    pub page: usize,
    pub per_page: usize,
    pub sort: &'static str,
    /// The origin shown (the reader's, or the one chosen for them).
    pub origin: Origin,
    /// `reference` or the 12-digit protocol id asked for.
    pub protocol: String,
    /// The view in words.
    pub view: String,
    /// Every view the data holds (origin × protocol), with group counts.
    pub views: Vec<wattcounts_service::read::GroupView>,
    pub entries: Vec<leaderboard::LeaderboardRow>,
}

#[utoipa::path(get, path = "/api/v1/leaderboard", tag = "leaderboard",
    summary = "Leaderboard rows: one per group (GPU × model × scenario × rate × protocol × origin)",
    description = "Rows rank GPUs within each model (`rank_in_model`). Unknown parameters and bad values are a 400 naming the parameter.",
    params(LeaderboardParams),
    responses((status = 200, body = LeaderboardAnswer)))]
pub async fn leaderboard_json(
    State(s): State<AppState>,
    Params(params): Params<LeaderboardParams>,
) -> Result<Response, ApiError> {
    let q = parse_query(&params)?;
    let board = load(&s, &q).await?;
    Ok(Json(LeaderboardAnswer {
        total: board.total,
        page: q.page,
        per_page: q.per_page,
        sort: q.sort.name(),
        origin: board.origin,
        protocol: match &q.protocol {
            leaderboard::ProtocolFilter::Id(id) => id.clone(),
            _ => "reference".into(),
        },
        view: view_note(&board, &q),
        views: board.views,
        entries: board.entries,
    })
    .into_response())
}

struct Row {
    /// Rank among the GPUs that measured the row's model in its scenario.
    rank: String,
    gpu: String,
    /// The GPU's page, for a catalogue GPU (others have none).
    gpu_link: Option<String>,
    model: String,
    /// The model's page, in the row's own view (origin and protocol).
    model_link: String,
    /// The weights' precision (`BF16`, `AWQ-INT4`, …), from the catalogue.
    precision: String,
    scenario: String,
    ept: String,
    ept_range: String,
    confidence: String,
    cv: String,
    epr: String,
    epr_range: String,
    wh_per_1000: String,
    throughput: String,
    throughput_range: String,
    power: String,
    ttft_ms: String,
    ttft_range: String,
    itl_ms: String,
    itl_range: String,
    tpot_ms: String,
    iterations: String,
    submissions: u64,
    submitters: u64,
    protocol: String,
    evidence: String,
    demo: bool,
    review: bool,
}

#[derive(Template)]
#[template(path = "leaderboard.html")]
struct LeaderboardPage {
    view: String,
    /// Which model the bare page opened on, and why.
    opened_on: Option<String>,
    /// The reader chose every model.
    all_models: bool,
    origins: Vec<Opt>,
    protocols: Vec<Opt>,
    peers: Vec<Opt>,
    scenarios: Vec<Opt>,
    models: Vec<Opt>,
    gpus: Vec<Opt>,
    sorts: Vec<Opt>,
    sizes: Vec<Opt>,
    include_review: bool,
    csv_link: String,
    rows: Vec<Row>,
    total: usize,
    page: usize,
    pages: usize,
    prev: Option<String>,
    next: Option<String>,
    json_link: String,
    layout: crate::layout::Layout,
}

fn fmt_opt(v: Option<f64>, digits: usize, scale: f64) -> String {
    v.map_or("–".into(), |x| format!("{:.*}", digits, x * scale))
}

fn query_string(params: &LeaderboardParams, page: usize) -> String {
    let mut pairs: Vec<(&str, String)> = params
        .named()
        .into_iter()
        .filter(|(k, _)| *k != "page")
        .filter_map(|(k, v)| Some((k, v.as_ref().filter(|v| !v.is_empty())?.clone())))
        .collect();
    pairs.sort();
    pairs.push(("page", page.to_string()));
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", url_encode(k), url_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The query that shows a row's own view on another page: its origin, and
/// its protocol unless that is the reference (the pages' default).
fn row_view(e: &leaderboard::LeaderboardRow) -> String {
    let mut q = format!("origin={}", e.origin.as_str());
    if !e.reference_protocol {
        q.push_str(&format!("&protocol={}", url_encode(&e.protocol_id)));
    }
    q
}

/// The model the bare leaderboard opens on (issue #55): the view's
/// most-measured one (most configurations, then most submissions, then
/// name), with the sentence that says so. Read from the view's groups,
/// bounded by what was measured, not by runs.
async fn default_model(
    s: &AppState,
    params: &LeaderboardParams,
) -> Result<Option<(String, String)>, PageError> {
    let board = s.service.all_groups(&parse_query(params)?).await?;
    let mut per: std::collections::BTreeMap<&str, (usize, u64, std::collections::BTreeSet<&str>)> =
        std::collections::BTreeMap::new();
    for e in &board.entries {
        let m = per.entry(e.model.as_str()).or_default();
        m.0 += 1;
        m.1 += e.submissions;
        m.2.insert(e.gpu_id.as_str());
    }
    Ok(per
        .into_iter()
        .max_by(|a, b| (a.1 .0, a.1 .1, std::cmp::Reverse(a.0)).cmp(&(b.1 .0, b.1 .1, std::cmp::Reverse(b.0))))
        .map(|(m, (configs, _, gpus))| {
            (
                m.to_string(),
                format!(
                    "Showing {m}, the most-measured model here ({configs} configurations on {} GPUs). Pick another model, or all models, above.",
                    gpus.len()
                ),
            )
        }))
}

pub async fn leaderboard_page(
    State(s): State<AppState>,
    PageParams(mut params): PageParams<LeaderboardParams>,
) -> Result<Response, PageError> {
    // The bare page (no parameter at all, as the menu links it) opens on
    // one model; a form sends every field, so "all" there stays all.
    let opened_on = if params.named().iter().all(|(_, v)| v.is_none()) {
        let d = default_model(&s, &params).await?;
        params.model = d.as_ref().map(|(m, _)| m.clone());
        d.map(|(_, why)| why)
    } else {
        None
    };
    let q = parse_query(&params)?;
    let board = load(&s, &q).await?;
    let facets = s
        .service
        .facets(&leaderboard::Query {
            origin: Some(board.origin),
            ..q.clone()
        })
        .await?;
    let entries = &board.entries;
    let total = board.total as usize;
    let selected_scenario = params.scenario.clone().unwrap_or_default();
    let mut scenarios = vec![
        Opt {
            value: "batch".into(),
            label: "batch".into(),
            selected: selected_scenario == "batch",
        },
        Opt {
            value: "server".into(),
            label: "server (all rates)".into(),
            selected: selected_scenario == "server",
        },
    ];
    scenarios.extend(facets.rates.iter().map(|l| {
        let v = format!("server@{l}");
        Opt {
            label: format!("server @ {l} req/s"),
            selected: selected_scenario == v,
            value: v,
        }
    }));
    let models = facets.models.clone();
    let gpus = facets.gpus.clone();
    let (origins, protocols) = view_controls(&board, &q);
    let pages = total.div_ceil(q.per_page).max(1);
    let rows = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let ept = wattcounts_analytics::compare::energy_of(e);
            let epr = wattcounts_analytics::verdict::Estimate::of(
                e.energy_per_request_j,
                e.intervals.energy_per_request_j,
            );
            let server = e.scenario == Scenario::Server;
            let est = wattcounts_analytics::verdict::Estimate::of;
            let throughput = est(Some(e.throughput_tok_s), e.intervals.throughput_tok_s);
            let ttft = est(e.ttft_p50_s, e.intervals.ttft_p50_s);
            let itl = est(e.itl_s, e.intervals.itl_s);
            Row {
                rank: e.rank_in_model.map_or_else(
                    || ((q.page - 1) * q.per_page + i + 1).to_string(),
                    |r| r.to_string(),
                ),
                gpu: e.gpu_name.clone(),
                gpu_link: wattcounts_rules::catalog::gpu_by_id(&e.gpu_id)
                    .map(|g| format!("/gpus/{}?{}", url_encode(&g.id), row_view(e))),
                model: e.model.clone(),
                model_link: format!("{}?{}", model_path(&e.model), row_view(e)),
                precision: crate::view::format::precision_of(&e.model),
                scenario: scenario_label(e.scenario, e.lambda_qps),
                protocol: e.protocol.clone(),
                ept: format::value(Some(ept), 1.0),
                ept_range: format::range(Some(ept), 1.0),
                confidence: format::confidence(Some(ept)),
                cv: format!("{:.1} %", e.energy_per_token_cv * 100.0),
                epr: format::value(epr, 1.0),
                epr_range: format::under(epr, 1.0),
                throughput_range: format::under(throughput, 1.0),
                ttft_range: if server {
                    format::under(ttft, 1000.0)
                } else {
                    String::new()
                },
                itl_range: if server {
                    format::under(itl, 1000.0)
                } else {
                    String::new()
                },
                wh_per_1000: format::value(epr.map(wattcounts_analytics::units::wh_per_1000), 1.0),
                throughput: format::thousands(e.throughput_tok_s.round() as u64),
                power: format!("{:.0}", e.power_mean_w),
                ttft_ms: if server {
                    fmt_opt(e.ttft_p50_s, 0, 1000.0)
                } else {
                    "–".into()
                },
                itl_ms: if server {
                    fmt_opt(e.itl_s, 1, 1000.0)
                } else {
                    "–".into()
                },
                tpot_ms: if server {
                    "–".into()
                } else {
                    fmt_opt(e.itl_s, 2, 1000.0)
                },
                iterations: format::thousands(e.iterations),
                submissions: e.submissions,
                submitters: e.submitters,
                evidence: e.evidence.to_string(),
                demo: e.demo,
                review: e.needs_review,
            }
        })
        .collect::<Vec<_>>();
    let page = LeaderboardPage {
        all_models: params.model.as_deref() == Some("all"),
        opened_on,
        layout: crate::layout::Layout::of(board.origin == Origin::Demo),
        view: view_note(&board, &q),
        origins,
        protocols,
        peers: crate::view::peer_links(&board),
        scenarios,
        models: models
            .into_iter()
            .map(|m| Opt {
                selected: q.model.as_deref() == Some(m.as_str()),
                label: m.clone(),
                value: m,
            })
            .collect(),
        gpus: gpus
            .into_iter()
            .map(|(id, name)| Opt {
                selected: q.gpu.as_deref() == Some(id.as_str()),
                value: id,
                label: name,
            })
            .collect(),
        sorts: SortKey::ALL
            .iter()
            .map(|(v, k, l)| Opt {
                value: v.to_string(),
                label: l.to_string(),
                selected: *k == q.sort,
            })
            .collect(),
        sizes: leaderboard::SizeClass::ALL
            .iter()
            .map(|(v, k, l)| Opt {
                value: v.to_string(),
                label: l.to_string(),
                selected: q.size == Some(*k),
            })
            .collect(),
        include_review: q.include_review,
        csv_link: format!("/api/v1/leaderboard.csv?{}", query_string(&params, q.page)),
        rows,
        total,
        page: q.page,
        pages,
        prev: (q.page > 1).then(|| format!("/leaderboard?{}", query_string(&params, q.page - 1))),
        next: (q.page < pages)
            .then(|| format!("/leaderboard?{}", query_string(&params, q.page + 1))),
        json_link: format!("/api/v1/leaderboard?{}", query_string(&params, q.page)),
    };
    Ok(render(StatusCode::OK, &page))
}
