//! RSS 2.0 feeds of new results (issue #44), for a lab waiting for the
//! first run on a GPU or a model's authors: accepted submissions (all, per
//! GPU, per model) and published snapshots, the newest 50 each. Read from
//! the submissions' own indexes and the configurations of a model (never a
//! run), so a fetch costs the same at any number of stored runs; cached with
//! the pages until the data change. A submission appears once accepted, a
//! pending or rejected one never, and a decision that withdraws it takes it
//! out. Peer releases are not submissions and never appear here.

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use rss::{Category, Channel, Guid, Item};

use crate::error::PageError;
use crate::view::model_path;
use crate::AppState;
use wattcounts_rules::catalog;
use wattcounts_rules::domain::{Scenario, SubmissionRecord};

/// Items per feed.
pub const FEED_ITEMS: u32 = 50;

/// The media type every feed is served as.
pub const RSS: &str = "application/rss+xml; charset=utf-8";

/// A model's feed, for its page's `<link rel="alternate">`.
pub fn model_feed_path(model: &str) -> String {
    format!("/feeds{}", model_path(model))
}

fn base(s: &AppState) -> String {
    s.service
        .config()
        .public_url
        .trim_end_matches('/')
        .to_string()
}

fn answer(channel: &Channel) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, RSS)],
        channel.to_string(),
    )
        .into_response()
}

/// "reference protocol", or how the submission's protocol differs from it
/// (per scenario it ran).
fn protocol_words(r: &SubmissionRecord) -> String {
    match &r.protocol {
        None => "protocol not yet recorded".into(),
        Some(p) => {
            let ran: Vec<Scenario> = [
                (p.batch_prompts.is_some(), Scenario::Batch),
                (p.server_duration_s.is_some(), Scenario::Server),
            ]
            .into_iter()
            .filter_map(|(ran, s)| ran.then_some(s))
            .collect();
            if ran.iter().all(|s| p.is_reference(*s)) {
                "reference protocol".into()
            } else {
                let parts: Vec<String> = ran
                    .iter()
                    .map(|s| format!("{}: {}", s.as_str(), p.label(*s)))
                    .collect();
                format!("protocol {}", parts.join("; "))
            }
        }
    }
}

/// One submission as a feed item: who, which GPU, which models, under
/// which protocol, real or demo, linking to its page.
fn item(
    base: &str,
    r: &SubmissionRecord,
    models: &[String],
    accepted: chrono::DateTime<chrono::Utc>,
) -> Item {
    let origin = if r.is_demo {
        "synthetic demo data"
    } else {
        "community submission"
    };
    let link = format!("{base}/submissions/{}", r.id);
    let mut item = Item::default();
    // Short enough for a reader's list (under 120 characters whatever the
    // bundle holds): who, which GPU, how many models; the models are in
    // the description and the categories.
    item.set_title(format!(
        "{}{} on the {}: {}",
        if r.is_demo { "[demo] " } else { "" },
        r.handle,
        r.gpu_name,
        match models {
            [] => "no model".to_string(),
            [one] if one.len() <= 60 => one.clone(),
            _ => format!("{} models", models.len()),
        }
    ));
    item.set_link(link.clone());
    item.set_guid(Guid {
        value: link,
        permalink: true,
    });
    item.set_author(r.handle.clone());
    // Dated at acceptance (issue #55): a submission a maintainer approved
    // a week after it arrived is news on the day it joined the data.
    item.set_pub_date(accepted.to_rfc2822());
    item.set_description(format!(
        "Accepted {origin} by {} on the {} ({} iterations, {} power samples), {}. Models: {}. Run {}; bundle SHA-256 {}.",
        r.handle,
        r.gpu_name,
        r.iterations,
        r.power_samples,
        protocol_words(r),
        models.join(", "),
        r.run_name,
        r.bundle_sha256
    ));
    let mut categories = vec![Category {
        name: r.gpu_name.clone(),
        domain: Some(format!("{base}/gpus")),
    }];
    categories.extend(models.iter().map(|m| Category {
        name: m.clone(),
        domain: Some(format!("{base}/models")),
    }));
    categories.push(Category {
        name: if r.is_demo { "demo" } else { "real" }.into(),
        domain: Some(format!("{base}/methodology")),
    });
    item.set_categories(categories);
    item
}

/// A channel's head: what it is, where its page is, who wrote it.
fn channel(base: &str, title: String, page: &str, description: String) -> Channel {
    let mut channel = Channel::default();
    channel.set_title(title);
    channel.set_link(format!("{base}{page}"));
    channel.set_description(description);
    channel.set_language("en".to_string());
    channel.set_generator(format!("wattcounts {}", crate::VERSION));
    channel
}

async fn channel_of(
    s: &AppState,
    title: String,
    page: &str,
    description: String,
    records: Vec<SubmissionRecord>,
) -> Result<Channel, PageError> {
    let base = base(s);
    let ids: Vec<_> = records.iter().map(|r| r.id).collect();
    let models = s.service.models_of(&ids).await?;
    let accepted = s.service.accepted_times(&records).await?;
    let mut channel = channel(&base, title, page, description);
    if let Some(newest) = accepted.iter().max() {
        channel.set_last_build_date(newest.to_rfc2822());
    }
    channel.set_items(
        records
            .iter()
            .zip(models)
            .zip(&accepted)
            .map(|((r, (_, m)), at)| item(&base, r, &m, *at))
            .collect::<Vec<_>>(),
    );
    Ok(channel)
}

/// `/feeds/submissions`: every accepted submission, newest first.
pub async fn submissions_feed(State(s): State<AppState>) -> Result<Response, PageError> {
    let records = s.service.latest_submissions(FEED_ITEMS).await?;
    let channel = channel_of(
        &s,
        "Watt Counts: new accepted submissions".into(),
        "/",
        format!("The newest {FEED_ITEMS} accepted submissions of LLM inference energy measurements, real and synthetic demo data each labelled."),
        records,
    )
    .await?;
    Ok(answer(&channel))
}

/// `/feeds/gpus/{id}`: accepted submissions measured on one GPU.
pub async fn gpu_feed(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let gpu = catalog::gpu_by_id(&id).ok_or_else(|| {
        PageError::from(crate::error::ApiError::not_found(format!(
            "no GPU '{id}' in the catalogue; /gpus lists them"
        )))
    })?;
    let records = s.service.submissions_on_gpu(&id, None, FEED_ITEMS).await?;
    let channel = channel_of(
        &s,
        format!("Watt Counts: new results on the {}", gpu.nvml_name),
        &format!("/gpus/{id}"),
        format!(
            "The newest {FEED_ITEMS} accepted submissions measured on the {}.",
            gpu.nvml_name
        ),
        records,
    )
    .await?;
    Ok(answer(&channel))
}

/// `/feeds/models/{*id}`: accepted submissions that measured one model.
pub async fn model_feed(
    State(s): State<AppState>,
    Path(model): Path<String>,
) -> Result<Response, PageError> {
    let records = s.service.submissions_with_model(&model, FEED_ITEMS).await?;
    // A catalogue model may have no result yet (subscribe before the
    // first run); a name neither known nor measured is a typo.
    if records.is_empty() && catalog::model_by_id(&model).is_none() {
        return Err(crate::error::ApiError::not_found(format!(
            "no model '{model}' in the catalogue or in any accepted submission; /models lists them"
        ))
        .into());
    }
    let channel = channel_of(
        &s,
        format!("Watt Counts: new results for {model}"),
        &model_path(&model),
        format!("The newest {FEED_ITEMS} accepted submissions that measured {model}."),
        records,
    )
    .await?;
    Ok(answer(&channel))
}

/// `/feeds/snapshots`: published dataset snapshots, newest first.
pub async fn snapshots_feed(State(s): State<AppState>) -> Result<Response, PageError> {
    let base = base(&s);
    let published = super::snapshots::published_views(&s).await?;
    let mut channel = channel(
        &base,
        "Watt Counts: dataset snapshots".into(),
        "/snapshots",
        "Each published snapshot of the accepted data: its manifest's SHA-256 to cite and verify, and what it covers.".into(),
    );
    channel.set_items(
        published
            .iter()
            .take(FEED_ITEMS as usize)
            .map(|v| {
                let link = format!("{base}/snapshots/{}", v.snapshot_id);
                let mut item = Item::default();
                item.set_title(format!(
                    "Snapshot {}: {} submissions{}",
                    v.snapshot_id,
                    v.coverage.submissions,
                    if v.coverage.demo_submissions > 0 {
                        format!(" ({} synthetic demo)", v.coverage.demo_submissions)
                    } else {
                        String::new()
                    }
                ));
                item.set_link(link.clone());
                item.set_guid(Guid {
                    value: link,
                    permalink: true,
                });
                if let Ok(t) = chrono::DateTime::parse_from_rfc3339(&v.created_at) {
                    item.set_pub_date(t.to_rfc2822());
                }
                item.set_description(format!(
                    "{} submissions, {} GPUs, {} models, {} iterations; {} in {} files; manifest.json SHA-256 {}.",
                    v.coverage.submissions,
                    v.coverage.gpus,
                    v.coverage.models,
                    v.coverage.iterations,
                    v.total_size,
                    v.files.len(),
                    v.manifest_sha256
                ));
                item
            })
            .collect::<Vec<_>>(),
    );
    Ok(answer(&channel))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wattcounts_rules::domain::{Protocol, Status};

    fn record(is_demo: bool, protocol: Option<Protocol>) -> SubmissionRecord {
        SubmissionRecord {
            id: uuid::Uuid::nil(),
            bundle_sha256: "ab".repeat(32),
            handle: "alice".into(),
            status: Status::Accepted,
            received_at: chrono::DateTime::from_timestamp(1_780_000_000, 0).unwrap(),
            gpu_name: "NVIDIA L4".into(),
            gpu_id: Some("l4".into()),
            run_name: "run_1".into(),
            is_demo,
            bundle_bytes: 1,
            blob_path: String::new(),
            iterations: 6,
            power_samples: 60,
            protocol,
            content_sha256: None,
            duplicate_of: None,
            log_index: None,
            energy_rule: 3,
        }
    }

    #[test]
    fn a_demo_item_says_demo_and_a_real_one_says_community() {
        let models = vec!["Qwen/Qwen2.5-0.5B-Instruct".to_string()];
        let at = record(true, None).received_at;
        let demo = item("https://w.test", &record(true, None), &models, at);
        assert_eq!(
            demo.title(),
            Some("[demo] alice on the NVIDIA L4: Qwen/Qwen2.5-0.5B-Instruct")
        );
        assert!(demo.description().unwrap().contains("synthetic demo data"));
        // Fifty models (a demo bundle's) make a title of a count, not a list:
        // "[demo] alice on the NVIDIA L4: 50 models", 41 characters.
        let many: Vec<String> = (0..50)
            .map(|i| format!("org/Model-{i:02}-7B-Instruct"))
            .collect();
        let fifty = item("https://w.test", &record(true, None), &many, at);
        assert_eq!(
            fifty.title(),
            Some("[demo] alice on the NVIDIA L4: 50 models")
        );
        assert!(fifty
            .description()
            .unwrap()
            .contains("org/Model-49-7B-Instruct"));
        assert!(demo.categories().iter().any(|c| c.name() == "demo"));
        let real = item(
            "https://w.test",
            &record(false, Some(Protocol::reference())),
            &models,
            at,
        );
        assert!(real
            .description()
            .unwrap()
            .contains("Accepted community submission by alice on the NVIDIA L4 (6 iterations, 60 power samples), reference protocol."));
        assert_eq!(
            real.link(),
            Some("https://w.test/submissions/00000000-0000-0000-0000-000000000000")
        );
    }

    #[test]
    fn a_protocol_off_the_reference_is_named() {
        let small = Protocol {
            batch_prompts: Some(40),
            server_duration_s: None,
            ..Protocol::reference()
        };
        assert_eq!(
            protocol_words(&record(false, Some(small))),
            "protocol batch: prompts/iteration 40"
        );
    }
}
