//! One ingest per bundle digest at a time on this instance. Identical
//! bytes arriving together (a client retrying, a script sent twice) wait
//! here for the first to finish, outside the ingest queue, and are then
//! answered from the store as replays: 50 copies at once cost one ingest
//! and take one queue place, not 50. Another instance on the same database
//! still meets the insert's `SameBytes` rule.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The digests being ingested now, each with the lock its copies wait on.
#[derive(Default)]
pub struct Flights(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

/// Held while one copy of a digest is ingested (or answered); the next
/// copy's turn comes when it is dropped.
pub struct Turn<'a> {
    flights: &'a Flights,
    digest: String,
    lock: Arc<tokio::sync::Mutex<()>>,
    /// Dropped first in `drop`, so the next copy may go.
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Flights {
    /// Waits until no other copy of `digest` is in flight here.
    pub async fn turn(&self, digest: &str) -> Turn<'_> {
        let lock = {
            let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(digest.to_string()).or_default().clone()
        };
        let guard = lock.clone().lock_owned().await;
        Turn {
            flights: self,
            digest: digest.to_string(),
            lock,
            guard: Some(guard),
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        // Let the next copy go, then forget the digest if nobody waits.
        self.guard.take();
        let mut map = self.flights.0.lock().unwrap_or_else(|e| e.into_inner());
        // Held by the map and by this turn only: nobody else waits on it.
        if Arc::strong_count(&self.lock) == 2 {
            map.remove(&self.digest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn copies_take_turns_and_the_digest_is_forgotten_after() {
        let flights = Arc::new(Flights::default());
        let first = flights.turn("abc").await;
        let waiting = {
            let flights = flights.clone();
            tokio::spawn(async move {
                let _t = flights.turn("abc").await;
            })
        };
        // Another digest does not wait behind this one.
        drop(flights.turn("def").await);
        tokio::task::yield_now().await;
        assert!(
            !waiting.is_finished(),
            "the second copy went before the first ended"
        );
        drop(first);
        waiting.await.unwrap();
        assert!(flights.0.lock().unwrap().is_empty(), "digests left behind");
    }
}
