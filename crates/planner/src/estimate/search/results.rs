//! What the auto-plan returns: each plan it keeps and the front they form.

use crate::text::Phrase;
use serde::Serialize;

/// One plan that fits, with its key numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Candidate {
    /// The whole plan as a query string: apply it by opening `?{query}`.
    pub query: String,
    pub instance: String,
    pub gpu: String,
    pub nodes: u64,
    pub gpus: u64,
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub ep: u64,
    pub zero: u8,
    pub micro_batch: u64,
    pub grad_accum: u64,
    #[serde(serialize_with = "crate::model::plan::as_key")]
    pub precision: crate::model::plan::Precision,
    pub checkpointing: String,
    #[serde(serialize_with = "crate::model::plan::as_key")]
    pub loss: crate::model::plan::Loss,
    pub peak_bytes_per_gpu: u64,
    pub tokens_per_second: f64,
    pub mfu: f64,
    pub hours: f64,
    pub usd: Option<f64>,
    /// Why it wins, against the user's plan (in JSON its English, id and
    /// arguments).
    #[serde(serialize_with = "crate::text::said")]
    pub why: Phrase,
    /// What runs its exported launch code.
    pub engine: crate::model::plan::Engine,
}

/// What the search found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchResult {
    /// Size of the space searched (every combination of the dimensions).
    pub candidates: u64,
    /// Combinations fully evaluated (memory; throughput and cost when they fit).
    pub evaluated: u64,
    /// Combinations ruled out by a bound or an invalid layout without evaluation.
    pub pruned: u64,
    pub fitting: u64,
    /// Non-dominated plans in (hours, USD), fastest first.
    pub pareto: Vec<Candidate>,
    pub fastest: Option<Candidate>,
    pub cheapest: Option<Candidate>,
    pub best_under_budget: Option<Candidate>,
    pub best_under_deadline: Option<Candidate>,
}
