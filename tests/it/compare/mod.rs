//! Choosing a GPU: the comparison page, verdicts only where intervals
//! separate, the choice under a deadline, energy per request, the table
//! exports, /insights, and docs/api.md's worked example.

mod answers;
mod api_guide;
mod exports;
mod insights;
mod pages;
