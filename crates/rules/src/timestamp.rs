//! The one text form of a moment: RFC 3339 in UTC with milliseconds,
//! which sorts correctly as text (stored rows, receipts, log leaves).

use chrono::{DateTime, Utc};

/// `t` as RFC 3339 text in UTC with milliseconds.
pub fn ts(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
