//! Sessions of the admin pages. Signing in with a maintainer token opens
//! one: the browser keeps a random session id, never the token, and the
//! database keeps only the id's SHA-256, so neither a cookie jar nor a
//! copy of the table holds the bearer token. A session ends after
//! [`SESSION_LIFETIME`], after [`SESSION_IDLE`] without use, on sign-out,
//! and (checked by the web layer, which holds the configured tokens) when
//! the token it was opened with is no longer configured.

use crate::error::ServiceError;
use chrono::{DateTime, Duration, Utc};
use rand_core::RngCore;
use sha2::{Digest, Sha256};

use super::Service;
use wattcounts_store::AdminSessionRow;

/// The longest a session lasts, used or not (the cookie's Max-Age).
pub const SESSION_LIFETIME: Duration = Duration::hours(12);
/// A session unused this long has ended.
pub const SESSION_IDLE: Duration = Duration::hours(2);
/// What a session id starts with (tells it apart from a token in a log).
const SESSION_PREFIX: &str = "wcs_";

/// A session a cookie named, as it stands now.
#[derive(Debug, Clone)]
pub struct OpenSession {
    pub maintainer: String,
    /// SHA-256 (hex) of the token it was opened with.
    pub token_sha256: String,
    pub expires_at: DateTime<Utc>,
}

pub fn session_hash(id: &str) -> String {
    hex::encode(Sha256::digest(id.as_bytes()))
}

impl Service {
    /// Opens a session for a maintainer whose token (by its SHA-256) the
    /// caller has checked; returns the id for the cookie, the only copy.
    pub async fn open_admin_session(
        &self,
        maintainer: &str,
        token_sha256: &str,
    ) -> Result<String, ServiceError> {
        let now = Utc::now();
        // Ended sessions go when a new one comes: the table stays as small
        // as the sessions that are alive.
        self.store
            .forget_admin_sessions(&now, &(now - SESSION_IDLE))
            .await?;
        let mut bytes = [0u8; 32];
        rand_core::OsRng.fill_bytes(&mut bytes);
        let id = format!("{SESSION_PREFIX}{}", hex::encode(bytes));
        self.store
            .create_admin_session(&AdminSessionRow {
                id_sha256: session_hash(&id),
                maintainer: maintainer.to_string(),
                token_sha256: token_sha256.to_string(),
                created_at: now,
                expires_at: now + SESSION_LIFETIME,
                last_used_at: now,
            })
            .await?;
        Ok(id)
    }

    /// The live session with this id (its last use becomes now), or None
    /// for an unknown, expired, idle or ended one.
    pub async fn admin_session(&self, id: &str) -> Result<Option<OpenSession>, ServiceError> {
        if !id.starts_with(SESSION_PREFIX) {
            return Ok(None);
        }
        let now = Utc::now();
        let row = self
            .store
            .use_admin_session(&session_hash(id), &now, &(now - SESSION_IDLE))
            .await?;
        Ok(row.map(|r| OpenSession {
            maintainer: r.maintainer,
            token_sha256: r.token_sha256,
            expires_at: r.expires_at,
        }))
    }

    /// Ends a session (sign-out, or a session whose token was rotated).
    pub async fn close_admin_session(&self, id: &str) -> Result<(), ServiceError> {
        self.store.end_admin_session(&session_hash(id)).await?;
        Ok(())
    }
}
