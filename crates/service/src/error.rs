//! The one error a service call answers with when the failure is not in
//! the caller's input: its kind (a uniqueness rule hit, the database away,
//! anything else) and its words. The web turns the kind into 409, 503 or
//! 500; it never names the store's own error, and the store's error never
//! leaves this crate.

use wattcounts_store::StoreError;

/// What kind of failure, as an answer is chosen by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A uniqueness rule: the message names what is taken.
    Conflict,
    /// The database is not answering (down, overloaded, timed out).
    Unavailable,
    /// Anything else: a fault to log, not the caller's to fix.
    Internal,
}

#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ServiceError {
    pub kind: ErrorKind,
    pub message: String,
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        let (kind, message) = match e {
            StoreError::Conflict(what) => (
                ErrorKind::Conflict,
                format!("that {what} is already registered"),
            ),
            StoreError::Unavailable(m) => {
                (ErrorKind::Unavailable, format!("database unavailable: {m}"))
            }
            StoreError::Other(e) => (ErrorKind::Internal, format!("{e:#}")),
        };
        ServiceError { kind, message }
    }
}

/// The store's error into a service error enum's `Store` variant, for the
/// enums whose other variants are the caller's input (so `?` on a store
/// call still works inside them). Each module invokes it for its own enum.
macro_rules! store_error_into {
    ($($t:ty),*) => {$(
        impl From<wattcounts_store::StoreError> for $t {
            fn from(e: wattcounts_store::StoreError) -> Self {
                <$t>::Store(e.into())
            }
        }
    )*};
}
pub(crate) use store_error_into;
