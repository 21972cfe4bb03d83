//! Maintainers: moderation (the review queue, decisions, suspension, key
//! revocation, CSRF) and their sign-in sessions.

mod moderation;
mod sessions;
