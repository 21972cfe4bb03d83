//! Submitting: the upload over HTTP and its refusals (by file, pointer,
//! row and column, with nothing stored), registration, the browser's form,
//! admission and rate limits, the store calls an upload may make, the
//! harness's own output, the CLI walkthrough, and property tests of the
//! parsers strangers' bytes go through.

mod admission;
mod bytes;
mod cli;
mod harness_fixtures;
mod properties;
mod rate_limits;
mod registration;
mod rejections;
mod request_codes;
mod store_calls;
mod upload_form;
mod uploads;
