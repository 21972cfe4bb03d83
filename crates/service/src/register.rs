//! Registering a submitter: the handle rules, the key rules and the proof
//! of possession, then one stored submitter with one key.

use crate::error::ServiceError;
use serde::Deserialize;

use super::Service;
use crate::limits::LimitError;
use wattcounts_rules::handles;
use wattcounts_rules::rejection::{RejectKind, Rejection};
use wattcounts_rules::signing;
use wattcounts_store::{NewSubmitter, StoreError};

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Registration {
    pub handle: String,
    #[serde(default)]
    pub display_name: Option<String>,
    /// OpenSSH public key line.
    pub public_key: String,
    /// sshsig, namespace `wattcounts-register`, over the registration message.
    pub proof: String,
}

/// What was registered.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Registered {
    pub handle: String,
    pub display_name: String,
    pub key_fingerprint: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error("{0}")]
    Rejected(Rejection),
    #[error(transparent)]
    Store(#[from] ServiceError),
}

crate::error::store_error_into!(RegisterError);

impl From<Rejection> for RegisterError {
    fn from(r: Rejection) -> Self {
        RegisterError::Rejected(r)
    }
}

impl From<LimitError> for RegisterError {
    fn from(e: LimitError) -> Self {
        match e {
            LimitError::Limited(r) => r.into(),
            LimitError::Store(s) => s.into(),
        }
    }
}

impl Service {
    pub async fn register(&self, req: &Registration) -> Result<Registered, RegisterError> {
        if let Some(why) = handles::handle_fault(&req.handle) {
            return Err(Rejection::invalid("bad_handle", why).into());
        }
        let skeleton = handles::skeleton(&req.handle);
        // `admln` is as misleading as `admin`.
        if handles::RESERVED_HANDLES
            .iter()
            .any(|r| handles::skeleton(r) == skeleton)
        {
            return Err(Rejection::new(
                RejectKind::Conflict,
                "handle_taken",
                format!("handle '{}' is reserved", req.handle),
            )
            .into());
        }
        let display_name = req
            .display_name
            .clone()
            .unwrap_or_else(|| req.handle.clone());
        if display_name.chars().count() > 100 || display_name.chars().any(char::is_control) {
            return Err(Rejection::invalid(
                "bad_display_name",
                "display name: at most 100 characters, no control characters",
            )
            .into());
        }
        if let Some(existing) = self.store.handle_by_skeleton(&skeleton).await? {
            return Err(lookalike(&req.handle, &existing).into());
        }
        let key = signing::parse_public_key(&req.public_key)?;
        let fingerprint = signing::fingerprint(&key);
        self.limits()
            .count(
                &*self.store,
                crate::limits::Action::Register,
                crate::limits::Subject::Key(&fingerprint),
            )
            .await?;
        let proof =
            signing::parse_signature(req.proof.as_bytes(), signing::REGISTER_NAMESPACE, "proof")?;
        let message = signing::registration_message(
            &req.handle,
            self.config().public_url.trim_end_matches('/'),
            &fingerprint,
        );
        signing::verify(
            &key,
            signing::REGISTER_NAMESPACE,
            message.as_bytes(),
            &proof,
            "proof",
        )?;
        let public_key = key
            .to_openssh()
            .map_err(|_| Rejection::invalid("bad_public_key", "the key cannot be encoded again"))?;
        let new = NewSubmitter {
            handle: req.handle.clone(),
            display_name: display_name.clone(),
            fingerprint: fingerprint.clone(),
            algorithm: signing::algorithm_name(&key).to_string(),
            public_key,
        };
        match self.store.create_submitter(&new).await {
            Ok(_) => Ok(Registered {
                handle: req.handle.clone(),
                display_name,
                key_fingerprint: fingerprint,
            }),
            // Registered meanwhile: by the same handle in another case, or
            // by a lookalike (the skeleton's unique index).
            Err(StoreError::Conflict("handle")) => {
                match self.store.handle_by_skeleton(&skeleton).await? {
                    Some(existing) => Err(lookalike(&req.handle, &existing).into()),
                    None => Err(Rejection::new(
                        RejectKind::Conflict,
                        "handle_taken",
                        format!("handle '{}' is already registered", req.handle),
                    )
                    .into()),
                }
            }
            Err(StoreError::Conflict(_)) => Err(Rejection::new(
                RejectKind::Conflict,
                "key_taken",
                format!("key {fingerprint} is already registered"),
            )
            .into()),
            Err(e) => Err(e.into()),
        }
    }
}

/// 409 for a handle that is, or looks like, a registered one.
fn lookalike(wanted: &str, existing: &str) -> Rejection {
    let message = if wanted.eq_ignore_ascii_case(existing) {
        format!("handle '{wanted}' is already registered (as '{existing}'; handles ignore case)")
    } else {
        format!(
            "handle '{wanted}' looks like the registered handle '{existing}' (I, l and 1 count as one letter, as do O and 0, and Unicode's confusables); choose one a reader cannot mistake for it"
        )
    };
    Rejection::new(RejectKind::Conflict, "handle_taken", message)
}
