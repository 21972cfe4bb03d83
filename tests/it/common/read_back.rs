//! Stored state read back for byte-for-byte comparisons: the read model
//! and the transparency log's tables, and the log's tree rebuilt in memory.

use super::*;
use wattcounts::tlog::{Hash, StoredHashes};

/// Everything the read model answers: every group of every view (both
/// origins, all protocols, with and without rows in review) and the counters.
pub async fn read_model(
    app: &TestApp,
) -> (
    Vec<wattcounts::leaderboard::LeaderboardRow>,
    Vec<wattcounts::leaderboard::LeaderboardRow>,
    wattcounts::store::DatasetCounts,
) {
    let mut views = Vec::new();
    for include_review in [false, true] {
        let q = wattcounts::leaderboard::Query {
            include_review,
            origin: None,
            protocol: wattcounts::leaderboard::ProtocolFilter::Any,
            per_page: 100_000,
            ..Default::default()
        };
        views.push(app.store.groups(&q).await.unwrap().0);
    }
    let with_review = views.pop().unwrap();
    let accepted = views.pop().unwrap();
    (
        accepted,
        with_review,
        app.store.dataset_counts().await.unwrap(),
    )
}

pub fn memory_tree(leaves: &[String]) -> StoredHashes {
    let mut t = StoredHashes::default();
    for l in leaves {
        t.append(l.as_bytes()).unwrap();
    }
    t
}

/// The log tables, as rows of text, for byte-for-byte comparisons.
pub async fn log_tables(
    store: &dyn wattcounts::store::Store,
) -> (Vec<String>, Vec<Hash>, Option<(String, String)>) {
    let size = store.log_stats().await.unwrap().size;
    let leaves: Vec<String> = store
        .log_entries(0, size)
        .await
        .unwrap()
        .into_iter()
        .map(|e| format!("{}:{}:{}", e.index, e.backfilled, e.leaf))
        .collect();
    let n = tlog_tiles::stored_hash_count(size);
    let hashes = store.log_hashes(&(0..n).collect::<Vec<_>>()).await.unwrap();
    (leaves, hashes, store.log_key().await.unwrap())
}

pub fn leaves_of(t: &(Vec<String>, Vec<Hash>, Option<(String, String)>)) -> Vec<String> {
    t.0.iter()
        .map(|r| r.splitn(3, ':').nth(2).unwrap().to_string())
        .collect()
}
