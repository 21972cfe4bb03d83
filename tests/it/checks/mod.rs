//! The reproducibility and plausibility checks: one fault per check with its
//! verdict, figure and threshold, and the page that lists every rule.

mod page;
mod verdicts;
