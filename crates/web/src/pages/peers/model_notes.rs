//! A model's rows in each imported peer origin, for its Watt Counts page
//! and `/api/v1/models/{id}`: a section of its own, never in a table with
//! Watt Counts figures.

use serde::Serialize;
use utoipa::ToSchema;

use super::{fmt, itl_text, unstated, PeerReleaseJson, PeerSourceJson};
use crate::error::ApiError;
use crate::view::url_encode;
use crate::AppState;
use wattcounts_rules::peer::PeerConfig;

/// A model's figures in one peer origin, for its Watt Counts page: a
/// section of its own, below the measured tables, never in one of them.
pub(crate) struct PeerNote {
    pub(crate) heading: String,
    pub(crate) link: String,
    pub(crate) licence: &'static str,
    pub(crate) homepage: &'static str,
    pub(crate) rows: Vec<PeerNoteRow>,
    pub(crate) more: bool,
}

pub(crate) struct PeerNoteRow {
    pub(crate) task: String,
    pub(crate) gpu: String,
    pub(crate) gpus: u32,
    pub(crate) batch_cap: u32,
    pub(crate) precision: String,
    pub(crate) ept: String,
    pub(crate) epr: String,
    pub(crate) throughput: String,
    pub(crate) itl: String,
}

/// `also_measured_by` of `/api/v1/models/{id}`.
#[derive(Serialize, ToSchema)]
pub struct PeerModelJson {
    pub source: PeerSourceJson,
    pub release: PeerReleaseJson,
    /// The model's rows on the peer's own page.
    pub link: String,
    pub configurations: Vec<PeerConfig>,
}

/// At most this many of one model's peer rows on its page.
const NOTE_ROWS: u32 = 200;

/// The model's rows in each imported peer origin (newest release).
pub(crate) async fn model_notes(
    s: &AppState,
    model: &str,
) -> Result<(Vec<PeerNote>, Vec<PeerModelJson>), ApiError> {
    let notes = s.service.peers_of_model(model, NOTE_ROWS).await?;
    let mut html = Vec::new();
    let mut json = Vec::new();
    for n in notes {
        let link = format!("/peers/{}?model={}", n.info.slug, url_encode(model));
        let mut gpus: Vec<&str> = n.rows.iter().map(|c| c.gpu_model.as_str()).collect();
        gpus.sort();
        gpus.dedup();
        html.push(PeerNote {
            heading: format!(
                "Also measured by {} on {} (another protocol, not comparable figure by figure)",
                n.info.name,
                gpus.join(" and ")
            ),
            link: link.clone(),
            licence: n.info.licence,
            homepage: n.info.homepage,
            more: n.rows.len() as u32 >= NOTE_ROWS,
            rows: n
                .rows
                .iter()
                .map(|c| PeerNoteRow {
                    task: c.task_name.clone(),
                    gpu: c.gpu_model.clone(),
                    gpus: c.num_gpus,
                    batch_cap: c.max_num_seqs,
                    precision: unstated(&c.weight_precision),
                    ept: fmt(c.energy_per_token_joules, 4),
                    epr: fmt(c.energy_per_request_joules, 1),
                    throughput: fmt(c.output_throughput_tokens_per_sec, 0),
                    itl: itl_text(c),
                })
                .collect(),
        });
        json.push(PeerModelJson {
            source: n.info.into(),
            release: (&n.release).into(),
            link,
            configurations: n.rows,
        });
    }
    Ok((html, json))
}
