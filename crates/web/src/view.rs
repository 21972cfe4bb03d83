//! What the pages share when they turn figures into text: number and
//! interval formats, SVG charts, the CSV writer, and the view every read
//! page is in (origin × protocol) with its controls and links.

pub mod charts;
pub mod csv;
pub mod format;

use crate::error::ApiError;
use crate::extract::query::{given, LeaderboardParams, ViewParams};
use crate::AppState;
use wattcounts_analytics::leaderboard::{self, LeaderboardRow};
use wattcounts_rules::bundle::harness::Scenario;
use wattcounts_rules::domain::Origin;
use wattcounts_service::Board;

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

/// The imported peer origins, each a link to its own pages (`value` is
/// the path): the data control offers them beside the Watt Counts views,
/// never as one of them.
pub(crate) fn peer_links(board: &Board) -> Vec<Opt> {
    board
        .peers
        .iter()
        .map(|p| Opt {
            value: format!("/peers/{}", p.info.slug),
            label: format!(
                "{}: {} published configurations (release {}, another protocol)",
                p.info.name, p.configurations, p.label
            ),
            selected: false,
        })
        .collect()
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

pub(crate) fn scenario_label(s: Scenario, rate: Option<f64>) -> String {
    match (s, rate) {
        (Scenario::Server, Some(r)) => format!("server @ {r} req/s"),
        _ => s.as_str().to_string(),
    }
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

/// The `.csv` twin of a JSON link: `.csv` before the query
/// (`/api/v1/gpus/l4?scenario=batch` → `/api/v1/gpus/l4.csv?scenario=batch`).
pub(crate) fn csv_twin(json_link: &str) -> String {
    match json_link.split_once('?') {
        Some((path, query)) => format!("{path}.csv?{query}"),
        None => format!("{json_link}.csv"),
    }
}

/// Every accepted group of the view the reader picked (origin, protocol):
/// a page compares within one view, never across.
pub(crate) async fn entries(
    s: &AppState,
    params: &ViewParams,
    narrow: impl FnOnce(&mut leaderboard::Query),
) -> Result<(Vec<LeaderboardRow>, View), ApiError> {
    let mut q = view_query(params)?;
    narrow(&mut q);
    let (rows, board) = s.service.view_rows(&q).await?;
    Ok((rows, view_of(&board, &q, params)))
}

/// The view a page model was made from, as the page states it.
pub(crate) fn view_of(
    board: &wattcounts_service::Board,
    q: &leaderboard::Query,
    params: &ViewParams,
) -> View {
    let (origins, protocols) = crate::view::view_controls(board, q);
    View {
        note: crate::view::view_note(board, q),
        demo: board.origin == wattcounts_rules::domain::Origin::Demo,
        query: view_params(params),
        origins,
        protocols,
        peers: peer_links(board),
    }
}

/// Which view a page shows, in words, the parameters that chose it (kept
/// on links that stay in the view), and the controls that change it.
pub(crate) struct View {
    pub note: String,
    pub demo: bool,
    pub query: String,
    pub origins: Vec<Opt>,
    pub protocols: Vec<Opt>,
    /// Peer origins, each a link to its own pages (value: the path).
    pub peers: Vec<Opt>,
}

/// `origin` and `protocol`, parsed as the leaderboard parses them.
pub(crate) fn view_query(params: &ViewParams) -> Result<leaderboard::Query, ApiError> {
    crate::extract::leaderboard_query::parse_query(&LeaderboardParams::of_view(params))
}

/// The view's parameters as a query string (empty ones left out).
pub(crate) fn view_params(params: &ViewParams) -> String {
    let mut pairs: Vec<String> = [("origin", &params.origin), ("protocol", &params.protocol)]
        .into_iter()
        .filter_map(|(k, v)| given(v).map(|v| format!("{k}={}", url_encode(v))))
        .collect();
    pairs.sort();
    pairs.join("&")
}
