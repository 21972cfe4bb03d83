//! Whether a bundle is new, or what it repeats: the one rule for "the same
//! bytes" (a replay, answered with the stored receipt), "the same
//! submission_id with other bytes" (refused: `submission_id_reused`) and
//! "the same run packed again" (refused: `run_already_submitted`). Ingest
//! asks it before judging a bundle; the store asks it again, on what is
//! stored by then, when its insert loses a race to a request beside it.

use uuid::Uuid;

use crate::domain::Status;

/// What is stored already under a submission_id or a run content.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriorClaims {
    /// The bundle digest stored under the submission_id.
    pub id_digest: Option<String>,
    /// The submission holding the run content: its id, status and bundle
    /// digest.
    pub same_content: Option<(Uuid, Status, String)>,
}

/// What a bundle is, against what is stored.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// Nothing stored holds its id or its run.
    New,
    /// These exact bytes are stored, under this id.
    SameBytes(Uuid),
    /// Its submission_id is stored with other bytes.
    IdTaken,
    /// Its run is stored under this other id, in this status.
    SameContent(Uuid, Status),
}

/// The bundle `id` with digest `bundle_sha256`, against `prior`. The same
/// bytes win over everything (a retry must get its receipt back); then a
/// reused id; then the same run under another id.
pub fn judge(id: Uuid, bundle_sha256: &str, prior: &PriorClaims) -> Claim {
    if prior.id_digest.as_deref() == Some(bundle_sha256) {
        return Claim::SameBytes(id);
    }
    if let Some((stored, _, digest)) = &prior.same_content {
        if digest == bundle_sha256 {
            return Claim::SameBytes(*stored);
        }
    }
    if prior.id_digest.is_some() {
        return Claim::IdTaken;
    }
    match &prior.same_content {
        Some((stored, status, _)) => Claim::SameContent(*stored, *status),
        None => Claim::New,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn each_repeat_is_named_and_the_same_bytes_win() {
        let none = PriorClaims::default();
        assert_eq!(judge(id(1), "aa", &none), Claim::New);
        // Stored under its own id with these bytes: a replay.
        let mine = PriorClaims {
            id_digest: Some("aa".into()),
            same_content: Some((id(1), Status::Accepted, "aa".into())),
        };
        assert_eq!(judge(id(1), "aa", &mine), Claim::SameBytes(id(1)));
        // Its id holds other bytes: refused, even when its run is also stored.
        let other_bytes = PriorClaims {
            id_digest: Some("bb".into()),
            same_content: Some((id(2), Status::NeedsReview, "cc".into())),
        };
        assert_eq!(judge(id(1), "aa", &other_bytes), Claim::IdTaken);
        // A new id, the run stored under another: the duplicate names it.
        let repacked = PriorClaims {
            id_digest: None,
            same_content: Some((id(2), Status::NeedsReview, "cc".into())),
        };
        assert_eq!(
            judge(id(1), "aa", &repacked),
            Claim::SameContent(id(2), Status::NeedsReview)
        );
        // The run's row holds these very bytes (stored a moment ago by a
        // request beside this one): a replay of that row.
        let raced = PriorClaims {
            id_digest: None,
            same_content: Some((id(2), Status::Accepted, "aa".into())),
        };
        assert_eq!(judge(id(1), "aa", &raced), Claim::SameBytes(id(2)));
    }
}
