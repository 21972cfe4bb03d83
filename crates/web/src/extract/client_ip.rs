//! The client's address for per-address rate limits: the socket peer, or
//! the forwarded address behind a proxy the operator trusts.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;

use crate::error::ApiError;
use crate::AppState;

/// The client's address: the socket peer, or the forwarded one behind a
/// trusted proxy. None for a request that came through no socket (the
/// tests' in-process calls), which no per-address limit then counts.
pub struct ClientIp(pub Option<IpAddr>);

impl FromRequestParts<AppState> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, Self::Rejection> {
        let Some(ConnectInfo(peer)) = parts.extensions.get::<ConnectInfo<SocketAddr>>() else {
            return Ok(ClientIp(None));
        };
        let forwarded = parts
            .headers
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok());
        Ok(ClientIp(Some(wattcounts_service::limits::client_ip(
            peer.ip(),
            forwarded,
            &s.trusted_proxies,
        ))))
    }
}

impl ClientIp {
    /// Counts the request against the address's limit for `action`.
    pub async fn count(
        &self,
        s: &AppState,
        action: wattcounts_service::limits::Action,
    ) -> Result<(), ApiError> {
        match self.0 {
            None => Ok(()),
            Some(ip) => s
                .service
                .count_request(action, ip)
                .await
                .map_err(|e| wattcounts_service::ingest::IngestError::from(e).into()),
        }
    }
}
