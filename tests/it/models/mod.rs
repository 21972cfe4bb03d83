//! Models and GPUs: the model pages, the community catalogue (an unknown
//! GPU or model waits, then joins), any model on any GPU, and the energy
//! estimator for pairs nobody measured.

mod catalogue;
mod estimates;
mod open_world;
mod pages;
