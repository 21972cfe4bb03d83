//! The one error shape every stage of the pipeline returns for bad input.
//!
//! Stages below the web layer know nothing of HTTP; they say *what kind* of
//! problem it is and the web layer picks the status code.

use serde::Serialize;

/// Where in the submission a problem was found. Every field but `message` is
/// optional because a problem can be about the archive as a whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Detail {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// JSON pointer into the manifest (RFC 6901).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// 1-based line number in a CSV file (the header is line 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<u64>,
    /// CSV column name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// Byte offset in `file` (for problems in the bundle's bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Query parameter name (for a refused request line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameter: Option<String>,
    pub message: String,
}

impl Detail {
    pub fn new(message: impl Into<String>) -> Self {
        Detail {
            message: message.into(),
            ..Default::default()
        }
    }
    pub fn file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }
    pub fn pointer(mut self, pointer: impl Into<String>) -> Self {
        self.pointer = Some(pointer.into());
        self
    }
    pub fn row(mut self, row: u64) -> Self {
        self.row = Some(row);
        self
    }
    pub fn column(mut self, column: impl Into<String>) -> Self {
        self.column = Some(column.into());
        self
    }
    pub fn offset(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }
    pub fn parameter(mut self, name: impl Into<String>) -> Self {
        self.parameter = Some(name.into());
        self
    }
}

/// What kind of refusal this is; the web layer maps it to a status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RejectKind {
    /// The request itself is malformed (not gzip, missing multipart part).
    Malformed,
    /// Well-formed, but the content breaks a rule (schema, CSV, digests).
    Invalid,
    /// Signature or key problems.
    Forbidden,
    /// Conflicts with something already stored.
    Conflict,
    /// Over a configured size limit.
    TooLarge,
    /// The thing asked for does not exist.
    NotFound,
    /// Too many requests from this address or key; `retry_after_secs` says
    /// when the window ends.
    RateLimited,
    /// The service is at capacity right now (ingest queue or staging disk
    /// full); try again after `retry_after_secs`.
    Busy,
    /// The service's own disk is full (the data dir: staging or blobs);
    /// nothing was stored, try again after `retry_after_secs`.
    InsufficientStorage,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub kind: RejectKind,
    /// Stable machine-readable code, e.g. `digest_mismatch`.
    pub code: &'static str,
    pub message: String,
    pub details: Vec<Detail>,
    /// Seconds after which trying again can succeed (429 and 503 only).
    pub retry_after_secs: Option<u64>,
}

impl Rejection {
    pub fn new(kind: RejectKind, code: &'static str, message: impl Into<String>) -> Self {
        Rejection {
            kind,
            code,
            message: message.into(),
            details: Vec::new(),
            retry_after_secs: None,
        }
    }
    /// A refusal that passes with time: `kind` is RateLimited or Busy.
    pub fn retry_later(
        kind: RejectKind,
        code: &'static str,
        message: impl Into<String>,
        after_secs: u64,
    ) -> Self {
        Rejection {
            retry_after_secs: Some(after_secs.max(1)),
            ..Self::new(kind, code, message)
        }
    }
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(RejectKind::Invalid, code, message)
    }
    pub fn malformed(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(RejectKind::Malformed, code, message)
    }
    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(RejectKind::Forbidden, code, message)
    }
    pub fn with(mut self, detail: Detail) -> Self {
        self.details.push(detail);
        self
    }
    pub fn with_all(mut self, details: impl IntoIterator<Item = Detail>) -> Self {
        self.details.extend(details);
        self
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        for d in &self.details {
            write!(f, "\n  - ")?;
            if let Some(file) = &d.file {
                write!(f, "{file}")?;
                if let Some(row) = d.row {
                    write!(f, ":{row}")?;
                }
                if let Some(col) = &d.column {
                    write!(f, " [{col}]")?;
                }
                if let Some(p) = &d.pointer {
                    write!(f, " {p}")?;
                }
                if let Some(o) = d.offset {
                    write!(f, " @{o}")?;
                }
                write!(f, ": ")?;
            } else if let Some(p) = &d.pointer {
                write!(f, "{p}: ")?;
            }
            write!(f, "{}", d.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for Rejection {}

impl std::fmt::Display for Detail {
    /// `file, /pointer, row 3, column 'x': message`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut place = Vec::new();
        if let Some(x) = &self.file {
            place.push(x.clone());
        }
        if let Some(x) = &self.pointer {
            place.push(x.clone());
        }
        if let Some(x) = self.row {
            place.push(format!("row {x}"));
        }
        if let Some(x) = self.offset {
            place.push(format!("byte {x}"));
        }
        if let Some(x) = &self.column {
            place.push(format!("column '{x}'"));
        }
        if let Some(x) = &self.parameter {
            place.push(format!("query parameter '{x}'"));
        }
        if place.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", place.join(", "), self.message)
        }
    }
}
