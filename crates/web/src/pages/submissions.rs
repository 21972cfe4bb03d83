//! `/submissions/{id}`: what was submitted, every check with its figure and
//! threshold, and the maintainers' decisions.

pub mod api;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::{render, ApiError, PageError};
use crate::pages::admin::api::parse_id;
use crate::AppState;
use wattcounts_rules::checks::{fmt_figure, CheckResult};
use wattcounts_rules::receipt::ModerationEvent;

struct CheckRow {
    id: String,
    severity: &'static str,
    outcome: &'static str,
    figure: String,
    threshold: String,
    message: String,
}

impl From<&CheckResult> for CheckRow {
    fn from(c: &CheckResult) -> Self {
        let show = |v: Option<f64>| v.map_or("–".to_string(), |x| fmt_figure(x, &c.unit));
        CheckRow {
            id: c.id.clone(),
            severity: match c.severity {
                wattcounts_rules::checks::Severity::Hard => "hard",
                wattcounts_rules::checks::Severity::Soft => "soft",
            },
            outcome: c.outcome.as_str(),
            figure: show(c.figure),
            threshold: show(c.threshold),
            message: c.message.clone(),
        }
    }
}

struct EventRow {
    at: String,
    actor: String,
    action: String,
    change: String,
    reason: String,
}

impl From<&ModerationEvent> for EventRow {
    fn from(e: &ModerationEvent) -> Self {
        EventRow {
            at: e.at.clone(),
            actor: e.actor.clone(),
            action: e.action.replace('_', " "),
            change: match (e.from_status, e.to_status) {
                (Some(a), Some(b)) => format!("{a} → {b}"),
                _ => "–".into(),
            },
            reason: e.reason.clone(),
        }
    }
}

struct ConfigRow {
    model: String,
    /// The model's page, in this submission's origin.
    model_link: String,
    scenario: String,
    n: u32,
    ept: String,
    cv: String,
    power: String,
}

#[derive(Template)]
#[template(path = "submission.html")]
struct SubmissionPage {
    id: String,
    status: &'static str,
    status_label: &'static str,
    submitter: String,
    received: String,
    gpu: String,
    /// The GPU's page, for a catalogue GPU.
    gpu_link: Option<String>,
    run_name: String,
    sha256: String,
    bundle_bytes: u64,
    json_link: String,
    models: u64,
    configurations_count: u64,
    iterations: u64,
    power_samples: u64,
    passed: usize,
    warned: usize,
    failed: usize,
    skipped: usize,
    checks: Vec<CheckRow>,
    /// Configurations rejected on their own: (what, its failing checks).
    rejected: Vec<(String, Vec<CheckRow>)>,
    moderation: Vec<EventRow>,
    configurations: Vec<ConfigRow>,
    /// (label, value) lines from the manifest.
    facts: Vec<(&'static str, String)>,
    /// The submission's leaf in the transparency log.
    log: Option<wattcounts_rules::receipt::ReceiptLog>,
    layout: crate::layout::Layout,
}

/// What the manifest says about the setup, as label/value lines.
fn manifest_facts(m: &wattcounts_rules::bundle::manifest::Manifest) -> Vec<(&'static str, String)> {
    let g = &m.system.gpu;
    let c = m.harness_config();
    let limit = if g.power_limit_w < g.default_power_limit_w {
        format!(
            "{:.0} W of {:.0} W default{}",
            g.power_limit_w,
            g.default_power_limit_w,
            if g.power_limit_declared {
                " (declared)"
            } else {
                " (not declared)"
            }
        )
    } else {
        format!("{:.0} W (default)", g.power_limit_w)
    };
    let software: Vec<String> = m.software.iter().map(|(k, v)| format!("{k} {v}")).collect();
    vec![
        ("Packed", m.created_at.clone()),
        (
            "Harness",
            format!(
                "{} at {} ({})",
                m.harness.name, m.harness.commit, m.harness.config_file
            ),
        ),
        (
            "Protocol",
            format!(
                "{} iterations, server runs of {} s at {} req/s, {} models",
                c.iterations,
                c.max_test_duration,
                c.lambda_qps_array
                    .iter()
                    .map(|l| l.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                c.llm_models.len()
            ),
        ),
        (
            "GPU setup",
            format!(
                "{} × {}, driver {}{}, power limit {limit}",
                g.count,
                g.name,
                g.driver_version,
                g.cuda_version
                    .as_deref()
                    .map(|v| format!(", CUDA {v}"))
                    .unwrap_or_default()
            ),
        ),
        (
            "Host",
            format!("{}, {:.0} GiB memory", m.system.cpu, m.system.memory_gib),
        ),
        ("Software", software.join(", ")),
        (
            "Files",
            format!("{} files listed with sizes and sha256", m.files.len()),
        ),
    ]
}

pub async fn submission_page(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let id = parse_id(&id)?;
    let r = s
        .service
        .receipt(id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no submission {id}")))?;
    let count = |o: wattcounts_rules::checks::CheckOutcome| {
        r.checks.iter().filter(|c| c.outcome == o).count()
    };
    let manifest = s
        .service
        .submission_documents(id)
        .await?
        .and_then(|(m, _)| {
            serde_json::from_str::<wattcounts_rules::bundle::manifest::Manifest>(&m).ok()
        });
    let mut facts = manifest.as_ref().map(manifest_facts).unwrap_or_default();
    if let Some(p) = &r.protocol {
        // Only the scenarios the bundle ran: a batch-only bundle has no
        // server protocol to state.
        let mut parts = Vec::new();
        if p.fields.batch_prompts.is_some() {
            parts.push(format!("batch: {} (id {})", p.batch_label, p.batch_id));
        }
        if p.fields.server_duration_s.is_some() {
            parts.push(format!("server: {} (id {})", p.server_label, p.server_id));
        }
        facts.push((
            "Compared with",
            format!("runs of the same protocol only — {}", parts.join("; ")),
        ));
    }
    if let Some(c) = &r.content_sha256 {
        facts.push((
            "Run content",
            format!("sha256:{c} (the same run sent again is refused)"),
        ));
    }
    use wattcounts_rules::checks::CheckOutcome;
    use wattcounts_rules::domain::Status;
    let page = SubmissionPage {
        log: r.log.clone(),
        id: id.to_string(),
        status: r.status.as_str(),
        status_label: match r.status {
            Status::Accepted => "accepted",
            Status::NeedsReview => "needs review (hidden from the default leaderboard)",
            Status::Rejected => "rejected (not published)",
        },
        submitter: r.submitter.clone(),
        received: crate::view::format::date_text(&r.received_at),
        gpu_link: r
            .gpu
            .id
            .as_deref()
            .and_then(wattcounts_rules::catalog::gpu_by_id)
            .map(|g| {
                format!(
                    "/gpus/{}?origin={}",
                    g.id,
                    wattcounts_rules::domain::Origin::of_demo(r.demo).as_str()
                )
            }),
        gpu: match &r.gpu.id {
            Some(g) => format!("{} ({g})", r.gpu.name),
            None => r.gpu.name.clone(),
        },
        run_name: r.run_name.clone(),
        sha256: r.bundle_sha256.clone(),
        bundle_bytes: r.bundle_bytes,
        json_link: r.links.this.clone(),
        models: r.counts.models,
        configurations_count: r.counts.configurations,
        iterations: r.counts.iterations,
        power_samples: r.counts.power_samples,
        passed: count(CheckOutcome::Pass),
        warned: count(CheckOutcome::Warn),
        failed: count(CheckOutcome::Fail),
        skipped: count(CheckOutcome::Skip),
        checks: r.checks.iter().map(CheckRow::from).collect(),
        rejected: r
            .rejected_configurations
            .iter()
            .map(|c| {
                let what = match c.lambda_qps {
                    Some(l) => format!("{} {} @ {l} req/s", c.model, c.scenario.as_str()),
                    None => format!("{} {}", c.model, c.scenario.as_str()),
                };
                (what, c.checks.iter().map(CheckRow::from).collect())
            })
            .collect(),
        moderation: r.moderation.iter().map(EventRow::from).collect(),
        configurations: r
            .configurations
            .iter()
            .map(|c| ConfigRow {
                model_link: format!(
                    "{}?origin={}",
                    crate::view::model_path(&c.model),
                    wattcounts_rules::domain::Origin::of_demo(r.demo).as_str()
                ),
                model: c.model.clone(),
                scenario: match c.lambda_qps {
                    Some(l) => format!("server @ {l} req/s"),
                    None => c.scenario.as_str().to_string(),
                },
                n: c.iterations,
                ept: wattcounts_analytics::verdict::sig(c.energy_per_token_j.median),
                cv: format!("{:.1} %", c.energy_per_token_j.cv * 100.0),
                power: format!("{:.0}", c.power_mean_w.median),
            })
            .collect(),
        facts,
        layout: crate::layout::Layout::of(r.demo),
    };
    Ok(render(StatusCode::OK, &page))
}

/// The original bundle, byte for byte (its sha256 is the receipt's and
/// the ETag), from whichever instance answers; Range resumes it.
pub async fn bundle_download(
    State(s): State<AppState>,
    Path(id): Path<String>,
    req: axum::extract::Request,
) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    let (file, sha256) = s
        .service
        .stored_bundle(id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no submission {id}")))?;
    crate::download::Download {
        file: &file,
        sha256: &sha256,
        media_type: "application/gzip",
    }
    .answer(
        req,
        &[(
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{id}.tar.gz\""),
        )],
    )
    .await
}

/// The signature the bundle was uploaded with (sshsig, armoured).
pub async fn signature_download(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    let (_, sig) = s
        .service
        .submission_documents(id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no submission {id}")))?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                "text/plain; charset=utf-8".to_string(),
            ),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{id}.tar.gz.sig\""),
            ),
        ],
        sig,
    )
        .into_response())
}
