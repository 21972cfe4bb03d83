//! The leaderboard's query parameters as the analytics query they mean:
//! every filter from an allow-list, every refusal a 400 naming the
//! parameter, its value and what was expected. The other read pages pick
//! their view (origin × protocol) through the same parser.

use crate::error::ApiError;
use crate::extract::query::LeaderboardParams;
use wattcounts_analytics::leaderboard::{self, SortKey};
use wattcounts_rules::bundle::harness::Scenario;

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
            // `all`: every model (the leaderboard page's own choice; a bare
            // page opens on one model, issue #55).
            "model" if v == "all" => {}
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
                        .ok_or_else(|| match wattcounts_rules::peer::PeerSource::parse(v) {
                            // A peer's figures are another protocol's: they
                            // have their own pages, never a Watt Counts view.
                            Some(p) => bad(
                                k,
                                v,
                                &format!(
                                    "real or demo; {} has its own pages: /peers/{} and /api/v1/peers/{}",
                                    p.info().name,
                                    p.info().slug,
                                    p.info().slug
                                ),
                            ),
                            None => bad(k, v, "real or demo"),
                        })?,
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
