//! The transparency log: receipts with proofs, decisions as leaves, tiles,
//! checkpoints and the monitor.

mod tree;
