//! Train Planner's model: will an LLM training job fit, how fast will it run,
//! and what will it cost on SageMaker. Pure Rust, no web dependency; shared by
//! the page (wasm32), the `plan` CLI and the tests.
//!
//! Folders by job, each building only on those listed before it
//! (tests/layers.rs holds the order):
//! - `formats`: numbers, JSON, CSV tables and zip archives; no training knowledge;
//! - `text`: every user-facing phrase, one catalog per language;
//! - `model`: the plan, what it resolves to (the job), memory, throughput,
//!   cost and the rules a job must keep;
//! - `accuracy`: published and measured rows, calibration, coverage and the
//!   envelope a label may promise;
//! - `estimate`: the report for one plan (figures, labels, warnings, export
//!   notes) and the auto-plan search;
//! - `launch`: the SageMaker code and the launch bundle;
//! - `runs`: finished runs set beside the estimate (the bundle's measured
//!   line, published post-training runs).
//!
//! Folders, not crates: the page and the CLI use every one of them, and the
//! data compiled in by build.rs feeds `model`, `accuracy` and `launch` alike.

pub mod accuracy;
pub mod estimate;
pub mod formats;
pub mod launch;
pub mod model;
pub mod runs;
pub mod text;

pub use estimate::evaluate::evaluate;
pub use estimate::report::Report;
pub use model::plan::{Decoded, Plan};
