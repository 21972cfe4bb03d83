//! What wraps every route, outermost last in `routes::app_and_routes`:
//! the security headers, the cache policy each route declares, the input
//! guard on path and query bytes, the request and upload deadlines, the
//! response cache for data-versioned reads, and request telemetry.

pub mod cache_policy;
pub mod deadline;
pub mod input_guard;
pub mod part_headers;
pub mod response_cache;
pub mod security_headers;
pub mod telemetry;
