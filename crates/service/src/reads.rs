//! What the pages read of the stored submissions. The store stays private
//! to the service (handlers never name it, and no store type leaves), so
//! each read the pages need is declared once in the table below: its
//! signature, and the store call it is.

use uuid::Uuid;

use crate::{Service, ServiceError};
use wattcounts_rules::checks::CheckResult;
use wattcounts_rules::derived::ConfigurationMetrics;
use wattcounts_rules::domain::Status;
use wattcounts_rules::receipt::ModerationEvent;
use wattcounts_store::{DatasetCounts, SubmissionRecord, TableCounts};

/// `fn name(args) -> T = store_call(args);` becomes
/// `pub async fn name(&self, args) -> Result<T, ServiceError>`.
macro_rules! store_reads {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $out:ty = $call:ident($($pass:expr),*);)*) => {
        impl Service {
            $($(#[$doc])*
            pub async fn $name(&self, $($arg: $ty),*) -> Result<$out, ServiceError> {
                Ok(self.store.$call($($pass),*).await?)
            })*
        }
    };
}

store_reads! {
    fn submission(id: Uuid) -> Option<SubmissionRecord> = submission(id);
    fn configurations(id: Uuid) -> Vec<ConfigurationMetrics> = configurations(id);
    fn check_results(id: Uuid) -> Vec<CheckResult> = check_results(id);
    fn moderation_events(id: Uuid) -> Vec<ModerationEvent> = moderation_events(id);
    /// The manifest JSON and the signature text a bundle came with.
    fn submission_documents(id: Uuid) -> Option<(String, String)> = submission_documents(id);
    /// The newest accepted submissions, newest first.
    fn latest_submissions(limit: u32) -> Vec<SubmissionRecord> = latest_submissions(limit);
    /// A page of the accepted submissions measured on a GPU, newest first
    /// (those after `before` when given).
    fn submissions_on_gpu(gpu_id: &str, before: Option<Uuid>, limit: u32) -> Vec<SubmissionRecord>
        = submissions_on_gpu(gpu_id, before, limit);
    /// The newest accepted submissions that measured `model`.
    fn submissions_with_model(model: &str, limit: u32) -> Vec<SubmissionRecord>
        = submissions_with_model(model, limit);
    /// The models each submission measured.
    fn models_of(ids: &[Uuid]) -> Vec<(Uuid, Vec<String>)> = models_of(ids);
    /// The submissions waiting for a maintainer, oldest first.
    fn review_queue(limit: u32) -> Vec<SubmissionRecord>
        = submissions_with_status(Status::NeedsReview, limit);
    fn dataset_counts() -> DatasetCounts = dataset_counts();
    /// Rows per table (tests, operations).
    fn table_counts() -> TableCounts = counts();
}

impl Service {
    /// When each submission was accepted: by its last accepting decision,
    /// else at receipt (accepted at intake), in the order of `records`.
    pub async fn accepted_times(
        &self,
        records: &[SubmissionRecord],
    ) -> Result<Vec<chrono::DateTime<chrono::Utc>>, ServiceError> {
        let ids: Vec<Uuid> = records.iter().map(|r| r.id).collect();
        let decided: std::collections::HashMap<Uuid, chrono::DateTime<chrono::Utc>> =
            self.store.accepted_at(&ids).await?.into_iter().collect();
        Ok(records
            .iter()
            .map(|r| decided.get(&r.id).copied().unwrap_or(r.received_at))
            .collect())
    }
}
