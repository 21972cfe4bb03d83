//! What to generate: the protocol a synthetic run follows, its seed and
//! the one fault it carries, if any.

use crate::faults::Fault;

#[derive(Debug, Clone)]
pub struct SynthOptions {
    pub seed: u64,
    pub iterations: u32,
    pub batch_prompts: u32,
    pub lambdas: Vec<f64>,
    pub server_duration_s: f64,
    pub max_tokens: u32,
    /// Unix time of the first measurement.
    pub start_unix: f64,
    pub fault: Fault,
    /// Which physical model the runs follow.
    pub physics: Physics,
}

/// The demo's physics, or another one for tests of the estimator: a
/// harness writer whose laws the estimator was never fitted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Physics {
    #[default]
    Demo,
    /// Memory and compute efficiencies as other power laws of bandwidth
    /// and FLOPS, idle power 30 % below the catalogue's, a power curve of
    /// another shape and a longer step overhead.
    Other,
}

impl Default for SynthOptions {
    fn default() -> Self {
        SynthOptions {
            seed: 2025,
            iterations: 5,
            batch_prompts: 1000,
            lambdas: vec![0.017, 0.33],
            server_duration_s: 300.0,
            max_tokens: 256,
            start_unix: 1_748_736_000.0, // 2025-06-01T00:00:00Z
            fault: Fault::None,
            physics: Physics::Demo,
        }
    }
}

impl SynthOptions {
    /// The reference protocol (1,000 prompts per batch iteration, 300 s
    /// server tests at the paper's rates, max_tokens 256) with three
    /// iterations: the tests' fixture for data that joins the default view.
    pub fn reference_quick() -> Self {
        SynthOptions {
            iterations: 3,
            ..Default::default()
        }
    }

    /// Small and quick, and off the reference protocol (40 prompts, 20 s
    /// server tests): its results form groups of their own.
    pub fn small() -> Self {
        SynthOptions {
            iterations: 3,
            batch_prompts: 40,
            lambdas: vec![0.5, 2.0],
            server_duration_s: 20.0,
            ..Default::default()
        }
    }
}
