//! The one door every store call passes: the per-call bound of a networked
//! store, and the call counts the tests hold an upload's budget to.
//!
//! A connection whose peer vanished without a reset (a cut link, a dropped
//! packet path) never answers, the server's `statement_timeout` never
//! fires because nothing reaches the server, and sqlx 0.8 sets no TCP
//! keepalive on its sockets (launchbadge/sqlx#3540); without a bound a
//! request would hang until the 30 s request deadline. With [`Calls`]
//! bounded, each call gets a few seconds by its [`CallKind`] and then reads
//! as [`StoreError::Unavailable`], the 503 of the outage path. The dropped
//! future takes its connection with it; the pool tests a connection before
//! handing it out again, within the acquire timeout. `store::open` bounds
//! PostgreSQL's calls; SQLite's, on a local file, are not bounded.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::StoreError;

/// How long a call of each bounded kind may take before the database
/// counts as unreachable.
#[derive(Debug, Clone, Copy)]
pub struct CallBounds {
    pub request: Duration,
    pub transaction: Duration,
}

impl Default for CallBounds {
    /// Request calls answer in milliseconds on a healthy server (the read
    /// paths are indexed and paged); 2.5 s leaves room for a loaded one and
    /// still answers a cut well inside 3 s.
    fn default() -> Self {
        CallBounds {
            request: Duration::from_millis(2500),
            transaction: Duration::from_secs(10),
        }
    }
}

/// What a call is, for its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// A call a request waits on: every read of a page or API answer, and
    /// the small writes on the request path (a rate-limit hit, an admin
    /// session, a snapshot reservation), which must fail as fast as the
    /// reads when the database is cut.
    Request,
    /// A transaction of many rows: a bundle's runs, a decision with the
    /// read model it moves, a checkpoint.
    Transaction,
    /// A maintenance call that streams or rebuilds for minutes (`db
    /// rebuild`, a snapshot's read, the log's backfill, audits): counted,
    /// never bounded.
    Maintenance,
}

/// Store calls by method name, as a counting store made them.
#[derive(Debug, Default)]
pub struct CallCounts(std::sync::Mutex<std::collections::BTreeMap<&'static str, u64>>);

impl CallCounts {
    fn record(&self, name: &'static str) {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry(name).or_default() += 1;
    }
    /// The calls made since the last take, and a fresh start.
    pub fn take(&self) -> std::collections::BTreeMap<&'static str, u64> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A backend's door: its bounds (none on SQLite) and, when asked, a count
/// of its calls.
#[derive(Debug, Default, Clone)]
pub struct Calls {
    bounds: Option<CallBounds>,
    counts: Option<Arc<CallCounts>>,
}

impl Calls {
    pub fn bounded(mut self, bounds: CallBounds) -> Self {
        self.bounds = Some(bounds);
        self
    }

    pub fn counting(mut self, counts: Arc<CallCounts>) -> Self {
        self.counts = Some(counts);
        self
    }

    /// Runs one store call `name` of `kind`: counted, and bounded when
    /// this door has bounds and the kind is.
    pub async fn run<T>(
        &self,
        kind: CallKind,
        name: &'static str,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        if let Some(c) = &self.counts {
            c.record(name);
        }
        let limit = match (self.bounds, kind) {
            (Some(b), CallKind::Request) => b.request,
            (Some(b), CallKind::Transaction) => b.transaction,
            (None, _) | (_, CallKind::Maintenance) => return call.await,
        };
        match tokio::time::timeout(limit, call).await {
            Ok(r) => r,
            Err(_) => Err(StoreError::Unavailable(format!(
                "{name} had no answer from the database within {:.1} s",
                limit.as_secs_f64()
            ))),
        }
    }
}
