//! Rate limits on submission and registration, per client address and per
//! signing key: a fixed window of `window` seconds and a most number of
//! requests in it. The counters live in the database (`rate_counters`), so
//! that several instances on one PostgreSQL enforce one limit between them
//! rather than one each.

use crate::error::ServiceError;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use wattcounts_rules::rejection::{RejectKind, Rejection};
use wattcounts_store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Submit,
    Register,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::Submit => "submit",
            Action::Register => "register",
        }
    }
    fn verb(self) -> &'static str {
        match self {
            Action::Submit => "submissions",
            Action::Register => "registrations",
        }
    }
}

/// Who is counted.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    Ip(IpAddr),
    /// An SSH key fingerprint (`SHA256:…`).
    Key(&'a str),
}

/// The configured limits; 0 turns one off.
#[derive(Debug)]
pub struct RateLimits {
    pub window: Duration,
    pub submit_per_ip: u32,
    pub submit_per_key: u32,
    pub register_per_ip: u32,
    pub register_per_key: u32,
    /// Hits counted by this instance, to prune stale windows now and then.
    hits: AtomicU64,
}

impl RateLimits {
    pub fn new(
        window: Duration,
        submit_per_ip: u32,
        submit_per_key: u32,
        register_per_ip: u32,
        register_per_key: u32,
    ) -> Self {
        RateLimits {
            window,
            submit_per_ip,
            submit_per_key,
            register_per_ip,
            register_per_key,
            hits: AtomicU64::new(0),
        }
    }

    /// No limits (tools and tests that do not test them).
    pub fn off() -> Self {
        Self::new(Duration::from_secs(60), 0, 0, 0, 0)
    }

    fn limit(&self, action: Action, subject: &Subject) -> u32 {
        match (action, subject) {
            (Action::Submit, Subject::Ip(_)) => self.submit_per_ip,
            (Action::Submit, Subject::Key(_)) => self.submit_per_key,
            (Action::Register, Subject::Ip(_)) => self.register_per_ip,
            (Action::Register, Subject::Key(_)) => self.register_per_key,
        }
    }

    /// Counts one request; a 429 rejection (with the seconds until the
    /// window ends) when it is over the limit.
    pub async fn count(
        &self,
        store: &dyn Store,
        action: Action,
        subject: Subject<'_>,
    ) -> Result<(), LimitError> {
        let limit = self.limit(action, &subject);
        if limit == 0 {
            return Ok(());
        }
        let window = self.window.as_secs().max(1) as i64;
        let now = chrono::Utc::now().timestamp();
        let start = now - now.rem_euclid(window);
        let (who, bucket) = match subject {
            Subject::Ip(ip) => (
                format!("address {ip}"),
                format!("{}/ip/{ip}", action.as_str()),
            ),
            Subject::Key(k) => (format!("key {k}"), format!("{}/key/{k}", action.as_str())),
        };
        let hits = store.count_hit(&bucket, start).await?;
        // Every 1,000 hits of this instance, windows that ended are dropped.
        if self.hits.fetch_add(1, Ordering::Relaxed) % 1000 == 999 {
            store.forget_hits(start - window).await?;
        }
        if hits > i64::from(limit) {
            return Err(LimitError::Limited(Rejection::retry_later(
                RejectKind::RateLimited,
                "rate_limited",
                format!(
                    "too many {} from {who}: {hits} in this window, the limit is {limit} per {window} s",
                    action.verb()
                ),
                (start + window - now) as u64,
            )));
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    #[error("{0}")]
    Limited(Rejection),
    #[error(transparent)]
    Store(#[from] ServiceError),
}

crate::error::store_error_into!(LimitError);

/// The client's address: the socket's peer, or, when the peer is one of
/// the `trusted` proxies, the nearest `X-Forwarded-For` hop that is not a
/// trusted proxy itself (a client can prepend anything it likes to that
/// header; only what the proxies appended counts).
pub fn client_ip(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[IpAddr]) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    let Some(header) = forwarded_for else {
        return peer;
    };
    let mut nearest = peer;
    for hop in header.rsplit(',') {
        match hop.trim().parse::<IpAddr>() {
            Ok(ip) => {
                nearest = ip;
                if !trusted.contains(&ip) {
                    return ip;
                }
            }
            // Garbage from before the proxies: stop at the last good hop.
            Err(_) => return nearest,
        }
    }
    nearest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_for_counts_only_behind_a_trusted_proxy() {
        let proxy: IpAddr = "10.0.0.2".parse().unwrap();
        let client: IpAddr = "203.0.113.7".parse().unwrap();
        let trusted = [proxy];
        // Direct: the header is the client's own claim.
        assert_eq!(client_ip(client, Some("198.51.100.1"), &trusted), client);
        // Through the proxy: the hop it appended.
        assert_eq!(
            client_ip(proxy, Some("198.51.100.1, 203.0.113.7"), &trusted),
            client
        );
        assert_eq!(client_ip(proxy, None, &trusted), proxy);
        assert_eq!(
            client_ip(proxy, Some("nonsense, 203.0.113.7"), &trusted),
            client
        );
        assert_eq!(client_ip(proxy, Some("10.0.0.2"), &trusted), proxy);
    }
}
