//! Server-rendered HTML pages and the leaderboard's JSON twin. Every page is
//! rendered in one place (`render`), which sets the status and headers.

use askama::Template;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::ApiError;
use super::format;
use super::params::{LeaderboardParams, PageParams, Params};
use super::AppState;
use wattcounts_analytics::leaderboard::{self, SortKey};
use wattcounts_rules::bundle::harness::Scenario;
use wattcounts_rules::domain::Origin;
use wattcounts_service::Board;

pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

pub(crate) fn render(status: StatusCode, t: &impl Template) -> Response {
    match t.render() {
        Ok(html) => (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            html,
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "template failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response()
        }
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    title: &'a str,
    message: &'a str,
    /// Where exactly (file, pointer, row, column) and what, one per line.
    details: Vec<String>,
    demo: bool,
    version: &'a str,
}

/// An HTML error page (the API has the JSON envelope instead).
pub struct PageError(pub ApiError);

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        PageError(e)
    }
}

impl From<wattcounts_service::read::StoreError> for PageError {
    fn from(e: wattcounts_service::read::StoreError) -> Self {
        PageError(e.into())
    }
}

impl From<wattcounts_service::tlog::TlogError> for PageError {
    fn from(e: wattcounts_service::tlog::TlogError) -> Self {
        PageError(e.into())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        wattcounts_service::telemetry::error_answer(self.0.code, self.0.status.as_u16());
        let title = self.0.status.canonical_reason().unwrap_or("Error");
        let mut resp = render(
            self.0.status,
            &ErrorPage {
                title,
                message: &self.0.message,
                details: self.0.details.iter().map(ToString::to_string).collect(),
                demo: false,
                version: VERSION,
            },
        );
        self.0.set_retry_after(&mut resp);
        resp
    }
}

pub async fn favicon() -> Response {
    (
        [(header::CONTENT_TYPE, "image/svg+xml")],
        include_str!("../../../static/favicon.svg"),
    )
        .into_response()
}

pub async fn stylesheet() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("../../../static/style.css"),
    )
        .into_response()
}

struct LatestRow {
    id: String,
    received: String,
    handle: String,
    gpu: String,
    gpu_link: Option<String>,
    iterations: u64,
    demo: bool,
}

#[derive(Template)]
#[template(path = "index.html")]
struct IndexPage {
    /// (figure with thousands separators, what it counts).
    counts: Vec<(String, &'static str)>,
    latest: Vec<LatestRow>,
    /// Every model of the default view, for the picker.
    models: Vec<String>,
    /// Well-known models present, linked straight to their pages.
    featured: Vec<(String, String)>,
    demo: bool,
    version: &'static str,
}

/// Models most readers ask about first, linked from the front page when
/// the data has them.
const FEATURED_MODELS: [&str; 5] = [
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
    "mistralai/Mistral-7B-Instruct-v0.3",
    "microsoft/phi-4",
    "google/gemma-3-12b-it",
];

/// The front page's JSON twin.
#[derive(Serialize, ToSchema)]
pub struct Stats {
    pub counts: wattcounts_service::read::DatasetCounts,
    /// The ten latest accepted submissions, newest first.
    pub latest: Vec<LatestSubmission>,
}

#[derive(Serialize, ToSchema)]
pub struct LatestSubmission {
    pub submission_id: uuid::Uuid,
    /// RFC 3339, UTC.
    pub received_at: String,
    pub submitter: String,
    pub gpu: String,
    pub iterations: u64,
    pub demo: bool,
}

/// The front page's JSON twin: dataset counts and the latest accepted
/// submissions.
#[utoipa::path(get, path = "/api/v1/stats", tag = "leaderboard",
    summary = "Dataset counts and the latest accepted submissions",
    responses((status = 200, body = Stats)))]
pub async fn stats_json(State(s): State<AppState>) -> Result<Response, ApiError> {
    let counts = s.service.dataset_counts().await?;
    let latest = s
        .service
        .latest_submissions(10)
        .await?
        .into_iter()
        .map(|r| LatestSubmission {
            submission_id: r.id,
            received_at: wattcounts_rules::timestamp::ts(&r.received_at),
            submitter: r.handle,
            gpu: r.gpu_name,
            iterations: r.iterations,
            demo: r.is_demo,
        })
        .collect();
    Ok(Json(Stats { counts, latest }).into_response())
}

pub async fn index(State(s): State<AppState>) -> Result<Response, PageError> {
    let counts = s.service.dataset_counts().await?;
    let latest = s
        .service
        .latest_submissions(10)
        .await?
        .into_iter()
        .map(|r| LatestRow {
            id: r.id.to_string(),
            received: format::date(&r.received_at),
            handle: r.handle,
            gpu_link: r
                .gpu_id
                .as_deref()
                .and_then(wattcounts_rules::catalog::gpu_by_id)
                .map(|g| format!("/gpus/{}", g.id)),
            gpu: r.gpu_name,
            iterations: r.iterations,
            demo: r.is_demo,
        })
        .collect();
    // The pages show the demo only while no real data exists.
    let demo = counts.demo_submissions > 0 && counts.demo_submissions == counts.submissions;
    let models = s
        .service
        .facets(&leaderboard::Query {
            origin: Some(if demo { Origin::Demo } else { Origin::Real }),
            ..Default::default()
        })
        .await?
        .models;
    let featured = FEATURED_MODELS
        .iter()
        .filter(|m| models.iter().any(|x| x == *m))
        .map(|m| (model_path(m), m.rsplit('/').next().unwrap_or(m).to_string()))
        .collect();
    Ok(render(
        StatusCode::OK,
        &IndexPage {
            demo,
            counts: vec![
                (format::thousands(counts.submissions), "submissions"),
                (format::thousands(counts.gpus), "GPUs"),
                (format::thousands(counts.models), "models"),
                (format::thousands(counts.iterations), "iterations"),
                (format::thousands(counts.power_samples), "power samples"),
            ],
            latest,
            models,
            featured,
            version: VERSION,
        },
    ))
}

/// The leaderboard's query from its parameters, each value checked (a
/// 400 names the parameter, the value and what it must be).
pub fn parse_query(p: &LeaderboardParams) -> Result<leaderboard::Query, ApiError> {
    let mut q = leaderboard::Query::default();
    for (k, v) in p.named() {
        let Some(v) = v.as_ref().filter(|v| !v.is_empty()) else {
            continue;
        };
        match k {
            "scenario" => {
                // "batch", "server@0.33" (one rate: ScenarioKey's own
                // parser), or a bare "server" for every rate.
                if v == "server" {
                    q.scenario = Some(Scenario::Server);
                } else {
                    let key = wattcounts_rules::domain::ScenarioKey::parse(v).ok_or_else(|| {
                        bad(k, v, "batch, server or server@RATE with a positive rate")
                    })?;
                    q.scenario = Some(key.scenario);
                    q.lambda_qps = key.lambda_qps;
                }
            }
            "rate" => {
                q.lambda_qps = Some(
                    v.parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite() && *x > 0.0)
                        .ok_or_else(|| bad(k, v, "a positive number"))?,
                )
            }
            "model" => q.model = Some(v.clone()),
            "size" => {
                q.size = Some(
                    leaderboard::SizeClass::parse(v)
                        .ok_or_else(|| bad(k, v, "small, medium or large"))?,
                )
            }
            "gpu" => q.gpu = Some(v.clone()),
            "sort" => {
                q.sort = SortKey::parse(v).ok_or_else(|| {
                    bad(
                        k,
                        v,
                        "energy_per_token, energy_per_request, throughput, ttft or itl",
                    )
                })?
            }
            "include_review" => q.include_review = parse_bool(k, v)?,
            "origin" => {
                q.origin = Some(
                    wattcounts_rules::domain::Origin::parse(v)
                        .ok_or_else(|| bad(k, v, "real or demo"))?,
                )
            }
            // Older links: include_demo=false meant "real data only".
            "include_demo" => {
                if !parse_bool(k, v)? {
                    q.origin = Some(wattcounts_rules::domain::Origin::Real)
                }
            }
            "protocol" => {
                q.protocol = match v.as_str() {
                    "reference" => leaderboard::ProtocolFilter::Reference,
                    id if id.len() == 12 && id.bytes().all(|b| b.is_ascii_hexdigit()) => {
                        leaderboard::ProtocolFilter::Id(id.to_ascii_lowercase())
                    }
                    _ => return Err(bad(k, v, "reference or a 12-digit protocol id")),
                }
            }
            "page" => {
                q.page = v
                    .parse()
                    .ok()
                    .filter(|p| (1..=1_000_000).contains(p))
                    .ok_or_else(|| bad(k, v, "a page number from 1 to 1000000"))?
            }
            "per_page" => {
                q.per_page = v
                    .parse()
                    .ok()
                    .filter(|p| (1..=1000).contains(p))
                    .ok_or_else(|| bad(k, v, "1 to 1000"))?
            }
            _ => unreachable!("every field is named above"),
        }
    }
    Ok(q)
}

fn parse_bool(k: &str, v: &str) -> Result<bool, ApiError> {
    match v {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(bad(k, v, "true or false")),
    }
}

fn bad(k: &str, v: &str, want: &str) -> ApiError {
    ApiError::bad_request(
        "bad_parameter",
        format!("{k}='{v}' is not allowed; expected {want}"),
    )
}

pub(crate) async fn load(s: &AppState, q: &leaderboard::Query) -> Result<Board, ApiError> {
    Ok(s.service.leaderboard(q).await?)
}

/// What a view is, in words: which origin and protocol the rows come from.
pub(crate) fn view_note(board: &Board, q: &leaderboard::Query) -> String {
    let origin = match board.origin {
        Origin::Real => "real submissions",
        Origin::Demo => "the synthetic demo",
    };
    let protocol = match &q.protocol {
        leaderboard::ProtocolFilter::Reference => "the reference protocol".to_string(),
        leaderboard::ProtocolFilter::Id(id) => board
            .views
            .iter()
            .find(|v| &v.protocol_id == id)
            .map_or(format!("protocol {id}"), |v| {
                format!("protocol {id} ({})", v.protocol_label)
            }),
        leaderboard::ProtocolFilter::Any => "every protocol".to_string(),
    };
    let chosen = if q.origin.is_none() && board.origin == Origin::Demo {
        " (no real submission has measured the reference protocol yet)"
    } else {
        ""
    };
    format!("Showing {origin}{chosen}, {protocol}.")
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

pub(crate) struct Opt {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

/// The "Data" (origin) and "Protocol" controls of a view: every page that
/// shows figures lets the reader switch views with a form, not a URL.
pub(crate) fn view_controls(board: &Board, q: &leaderboard::Query) -> (Vec<Opt>, Vec<Opt>) {
    let origins = [Origin::Real, Origin::Demo]
        .iter()
        .map(|o| Opt {
            value: o.as_str().into(),
            label: format!(
                "{} ({} groups)",
                match o {
                    Origin::Real => "real submissions",
                    Origin::Demo => "synthetic demo",
                },
                board
                    .views
                    .iter()
                    .filter(|v| v.origin == *o && v.reference)
                    .map(|v| v.groups)
                    .sum::<u64>()
            ),
            selected: board.origin == *o,
        })
        .collect();
    let mut protocols = vec![Opt {
        value: "reference".into(),
        label: "reference (1,000 prompts, 300 s, max_tokens 256, context 1024)".into(),
        selected: q.protocol == leaderboard::ProtocolFilter::Reference,
    }];
    for v in board
        .views
        .iter()
        .filter(|v| !v.reference && v.origin == board.origin)
    {
        if protocols.iter().any(|o| o.value == v.protocol_id) {
            continue;
        }
        protocols.push(Opt {
            value: v.protocol_id.clone(),
            label: format!(
                "{} · {}: {}",
                v.protocol_id,
                v.scenario.scenario.as_str(),
                v.protocol_label
            ),
            selected: q.protocol == leaderboard::ProtocolFilter::Id(v.protocol_id.clone()),
        });
    }
    (origins, protocols)
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
    origins: Vec<Opt>,
    protocols: Vec<Opt>,
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
    demo: bool,
    version: &'static str,
}

fn fmt_opt(v: Option<f64>, digits: usize, scale: f64) -> String {
    v.map_or("–".into(), |x| format!("{:.*}", digits, x * scale))
}

pub(crate) fn scenario_label(s: Scenario, rate: Option<f64>) -> String {
    match (s, rate) {
        (Scenario::Server, Some(r)) => format!("server @ {r} req/s"),
        _ => s.as_str().to_string(),
    }
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

/// A model's page: its id's segments percent-encoded, the slashes kept.
pub(crate) fn model_path(model: &str) -> String {
    format!(
        "/models/{}",
        model
            .split('/')
            .map(url_encode)
            .collect::<Vec<_>>()
            .join("/")
    )
}

/// What a query value or path segment may carry unescaped: RFC 3986's
/// unreserved characters, everything else percent-encoded.
const URL_COMPONENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// `s` as one query value or path segment.
pub(crate) fn url_encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, URL_COMPONENT).to_string()
}

pub async fn leaderboard_page(
    State(s): State<AppState>,
    PageParams(params): PageParams<LeaderboardParams>,
) -> Result<Response, PageError> {
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
        demo: board.origin == Origin::Demo,
        view: view_note(&board, &q),
        origins,
        protocols,
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
        version: VERSION,
    };
    Ok(render(StatusCode::OK, &page))
}

/// The `.csv` twin of a JSON link: `.csv` before the query
/// (`/api/v1/gpus/l4?scenario=batch` → `/api/v1/gpus/l4.csv?scenario=batch`).
pub(crate) fn csv_twin(json_link: &str) -> String {
    match json_link.split_once('?') {
        Some((path, query)) => format!("{path}.csv?{query}"),
        None => format!("{json_link}.csv"),
    }
}
