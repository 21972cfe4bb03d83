//! Typed request parts the handlers take instead of reading the request:
//! query parameter sets (unknown names refused), the model resource a path
//! names (a model id with its format), and the client's address.

pub mod client_ip;
pub mod leaderboard_query;
pub mod query;
pub mod resource_path;
