//! The read model as pages read it: one page of groups of a view, with the
//! origin a reader sees when they do not choose, and its facets.

use std::sync::Arc;

use crate::{peers, Service, ServiceError};
use wattcounts_analytics::leaderboard::{LeaderboardRow, ProtocolFilter, Query};
use wattcounts_rules::domain::Origin;
use wattcounts_store::GroupView;

/// One page of the leaderboard and the view it was read from.
#[derive(Debug, Clone)]
pub struct Board {
    pub entries: Vec<LeaderboardRow>,
    pub total: u64,
    /// The origin shown (resolved when the reader did not choose).
    pub origin: Origin,
    /// Every view the read model holds (for the origin and protocol pickers).
    pub views: Vec<GroupView>,
    /// The imported peer origins (the data control links to their own
    /// pages: their figures are never rows of a Watt Counts view).
    pub peers: Arc<Vec<peers::PeerOrigin>>,
}

impl Service {
    /// The origin a reader sees when they do not choose: real data where the
    /// protocol asked for (the reference one by default) has any, the demo
    /// where only the demo has, real (empty) when neither has.
    pub fn default_origin(views: &[GroupView], protocol: &ProtocolFilter) -> Origin {
        let has = |o: Origin| {
            views.iter().any(|v| {
                v.origin == o
                    && match protocol {
                        ProtocolFilter::Reference => v.reference,
                        ProtocolFilter::Id(id) => &v.protocol_id == id,
                        ProtocolFilter::Any => true,
                    }
            })
        };
        if !has(Origin::Real) && has(Origin::Demo) {
            Origin::Demo
        } else {
            Origin::Real
        }
    }

    /// One page of groups, with the origin resolved.
    pub async fn leaderboard(&self, q: &Query) -> Result<Board, ServiceError> {
        let views = self.store.group_views(q.include_review).await?;
        let origin = q
            .origin
            .unwrap_or_else(|| Self::default_origin(&views, &q.protocol));
        let q = Query {
            origin: Some(origin),
            ..q.clone()
        };
        let (entries, total) = self.store.groups(&q).await?;
        Ok(Board {
            entries,
            total,
            origin,
            views,
            peers: self.peer_origins().await?,
        })
    }

    /// The models, GPUs and rates of one view, for filter controls.
    pub async fn facets(&self, q: &Query) -> Result<wattcounts_store::Facets, ServiceError> {
        self.store.group_facets(q).await.map_err(ServiceError::from)
    }

    /// Every group of one view (pages that compare across a view: GPUs,
    /// compare, model). Bounded by the number of configurations measured,
    /// not by the number of runs or submissions.
    pub async fn all_groups(&self, q: &Query) -> Result<Board, ServiceError> {
        self.leaderboard(&Query {
            page: 1,
            per_page: 100_000,
            evidence_list: false,
            ..q.clone()
        })
        .await
    }
}
