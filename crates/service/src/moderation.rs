//! Maintainers' decisions, shared by the admin API and the admin pages:
//! which status moves are allowed, and what a decision must carry.

use crate::error::ServiceError;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use wattcounts_rules::domain::Status;
use wattcounts_store::{Actor, Decided, KeyRecord, Store};

/// Longest reason kept, characters.
pub const MAX_REASON: usize = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Approve,
    Reject,
}

impl Decision {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "approve" => Some(Decision::Approve),
            "reject" => Some(Decision::Reject),
            _ => None,
        }
    }
    /// (statuses it may start from, status it leads to). A hard check
    /// failure is final: rejected bundles cannot be approved.
    fn transition(self) -> (&'static [Status], Status) {
        match self {
            Decision::Approve => (&[Status::NeedsReview], Status::Accepted),
            Decision::Reject => (&[Status::NeedsReview, Status::Accepted], Status::Rejected),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModerationError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] ServiceError),
}

crate::error::store_error_into!(ModerationError);

/// Who decides, now, and a reason that is present and not huge.
pub fn actor(name: &str, reason: &str) -> Result<Actor, ModerationError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(ModerationError::Invalid(
            "a reason is required: it is shown with the decision".into(),
        ));
    }
    if reason.chars().count() > MAX_REASON {
        return Err(ModerationError::Invalid(format!(
            "the reason is longer than {MAX_REASON} characters"
        )));
    }
    Ok(Actor {
        name: name.to_string(),
        at: Utc::now(),
        reason: reason.to_string(),
    })
}

/// Approves or rejects a submission; returns the status it had.
pub async fn decide(
    store: &dyn Store,
    id: Uuid,
    decision: Decision,
    by: &Actor,
) -> Result<Status, ModerationError> {
    let (from, to) = decision.transition();
    match store.decide(id, from, to, by).await? {
        Decided::Done(was) => Ok(was),
        Decided::NotFound => Err(ModerationError::NotFound(format!("no submission {id}"))),
        Decided::WrongStatus(now) => Err(ModerationError::Conflict(format!(
            "submission {id} is {now}; only {} submissions can be {}",
            from.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" or "),
            match decision {
                Decision::Approve => "approved",
                Decision::Reject => "rejected",
            }
        ))),
    }
}

pub async fn suspend(store: &dyn Store, handle: &str, by: &Actor) -> Result<(), ModerationError> {
    if store.suspend_submitter(handle, by).await? {
        Ok(())
    } else {
        Err(ModerationError::NotFound(format!(
            "no submitter '{handle}'"
        )))
    }
}

/// Revokes a key from `effective_at` (now if None); returns the
/// submissions received since then, which are now rejected.
pub async fn revoke(
    store: &dyn Store,
    fingerprint: &str,
    effective_at: Option<DateTime<Utc>>,
    by: &Actor,
) -> Result<Vec<Uuid>, ModerationError> {
    let at = effective_at.unwrap_or(by.at);
    store
        .revoke_key(fingerprint.trim(), at, by)
        .await?
        .ok_or_else(|| ModerationError::NotFound(format!("no registered key {fingerprint}")))
}

/// Accepts RFC 3339 or the `YYYY-MM-DDTHH:MM` an HTML datetime-local input
/// sends (read as UTC).
pub fn parse_time(s: &str) -> Result<Option<DateTime<Utc>>, ModerationError> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(Some(t.with_timezone(&Utc)));
    }
    for f in ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, f) {
            return Ok(Some(t.and_utc()));
        }
    }
    Err(ModerationError::Invalid(format!(
        "'{s}' is not a time; use RFC 3339, e.g. 2026-12-01T09:30:00Z"
    )))
}

/// A registered key today's weak-key rule refuses, with why and what was
/// signed with it.
#[derive(Debug, Clone)]
pub struct WeakKey {
    pub key: KeyRecord,
    pub why: String,
    pub submissions: Vec<(Uuid, Status)>,
}

/// Every registered key (a small table) checked against today's key rules;
/// the keys they refuse, oldest first, and how many keys there are.
pub async fn weak_keys(store: &dyn Store) -> Result<(Vec<WeakKey>, usize), ServiceError> {
    let keys = store.keys().await?;
    let total = keys.len();
    let mut weak = Vec::new();
    for key in keys {
        if let Err(e) = wattcounts_rules::signing::parse_public_key(&key.public_key) {
            let submissions = store.submissions_of_key(key.key_id).await?;
            weak.push(WeakKey {
                key,
                why: e.message,
                submissions,
            });
        }
    }
    Ok((weak, total))
}

/// Every decision changes what readers see.
impl crate::Service {
    pub async fn decide(
        &self,
        id: Uuid,
        decision: Decision,
        by: &Actor,
    ) -> Result<Status, ModerationError> {
        let r = decide(self.store.as_ref(), id, decision, by).await;
        self.changed();
        r
    }
    pub async fn suspend(&self, handle: &str, by: &Actor) -> Result<(), ModerationError> {
        let r = suspend(self.store.as_ref(), handle, by).await;
        self.changed();
        r
    }
    pub async fn revoke(
        &self,
        fingerprint: &str,
        effective_at: Option<DateTime<Utc>>,
        by: &Actor,
    ) -> Result<Vec<Uuid>, ModerationError> {
        let r = revoke(self.store.as_ref(), fingerprint, effective_at, by).await;
        self.changed();
        r
    }
}
