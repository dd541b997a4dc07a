//! What a plan's evaluation reports: the figures, their accuracy labels,
//! the messages, and the same job on other instances. Computed by
//! `evaluate`; read by warnings, the fronts and the tests.

use crate::architecture::Architecture;
use crate::cost::{Checkpointing as CheckpointCost, Cost, Time};
use crate::memory::{self, Layout, Phase};
pub use crate::resolve::Message;
use crate::text::{render_all, Lang, Phrase};
use crate::throughput::Throughput;
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

/// The memory section of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryReport {
    pub peak_bytes_per_gpu: u64,
    pub allocated_peak_bytes: u64,
    #[serde(serialize_with = "terms_as_map")]
    pub terms: Vec<(memory::Term, u64)>,
    pub phase: Phase,
    /// What the GPU lets a process allocate.
    pub usable_bytes: u64,
    /// Usable memory minus the user's headroom: a plan fits under this.
    pub budget_bytes: u64,
    pub usable_is_estimate: bool,
    pub activation_bytes: u64,
    /// Of the peak, the bytes the verdict assumes rather than counts
    /// (`Term::is_assumed`: CUDA context, workspaces, fragmentation).
    pub assumed_bytes: u64,
    /// How the GEMMs get their weights (`memory::compute_path`), as train.py reports it.
    pub compute: &'static str,
    /// How far this kind of plan has been checked against measurements.
    pub accuracy: Accuracy,
}

/// How much to trust a figure, by what it was checked against (#25).
#[derive(Clone, Debug, PartialEq)]
pub struct Accuracy {
    /// `measured` (against real GPU runs), `counted` (PyTorch steps counted
    /// under FakeTensor), `calibrated` (fitted on published runs and
    /// cross-validated), `approximate` (checked, with a large error),
    /// `extrapolated` (a checked kind of plan, outside what the checks ran)
    /// or `derived` (formulas only).
    pub level: &'static str,
    /// Expected relative error as a fraction (e.g. 0.02), where the evidence
    /// supports one: at least three checks, and the plan inside them.
    pub expected_error: Option<f64>,
    /// What it was checked against: phrases a front renders, joined by `; `.
    pub note: Vec<Phrase>,
}

impl Accuracy {
    /// The note in English (the JSON's `note`, tests).
    pub fn note_english(&self) -> String {
        render_all(Lang::En, &self.note)
    }
}

/// In JSON: the level, the error, the note in English (as before #24) and
/// its phrases as ids and values.
impl Serialize for Accuracy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Accuracy", 4)?;
        st.serialize_field("level", self.level)?;
        st.serialize_field("expected_error", &self.expected_error)?;
        st.serialize_field("note", &self.note_english())?;
        st.serialize_field("note_phrases", &self.note)?;
        st.end()
    }
}

fn terms_as_map<S: Serializer>(terms: &[(memory::Term, u64)], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(terms.len()))?;
    for (t, b) in terms {
        map.serialize_entry(t.key(), b)?;
    }
    map.end()
}

/// Everything the page, the CLI and the tests show about a plan: its
/// figures, and the warnings and errors drawn from them. It reads as its
/// figures (`report.fits`); JSON lists them first, then the messages.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    #[serde(flatten)]
    pub figures: Figures,
    pub warnings: Vec<Message>,
    pub errors: Vec<Message>,
}

impl std::ops::Deref for Report {
    type Target = Figures;
    fn deref(&self) -> &Figures {
        &self.figures
    }
}

/// What evaluating a plan computes: memory, speed, time and cost. The
/// warnings are drawn from these once they are complete.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figures {
    #[serde(serialize_with = "crate::text::english")]
    pub model_name: Phrase,
    pub parameters: u64,
    pub parameters_active: u64,
    pub architecture: Architecture,
    pub layout: Layout,
    pub gpu: String,
    pub instance: String,
    pub memory: MemoryReport,
    pub fits: bool,
    /// "fits" under the budget (usable memory less the headroom); "tight"
    /// above the budget but inside the GPU's usable memory (published
    /// recipes run there: #23); "does_not_fit" beyond it.
    pub verdict: &'static str,
    /// Largest micro-batch that fits (0 if not even 1).
    pub max_micro_batch: u64,
    /// Longest sequence (multiple of 128, up to 131072) that fits at this micro-batch.
    pub max_sequence: u64,
    pub global_batch_sequences: u64,
    pub global_batch_tokens: u64,
    pub throughput: Throughput,
    /// How far the throughput figure has been checked against measurements.
    pub throughput_accuracy: Accuracy,
    pub time: Time,
    pub checkpoint: CheckpointCost,
    pub cost: Cost,
    /// Decoder layers on each pipeline rank, first to last.
    pub layers_per_pipeline_rank: Vec<u64>,
    /// What runs the exported launch code (#37).
    pub engine: crate::plan::Engine,
    /// The NVLink domains the job spans and the groups that leave one.
    pub nvlink: NvlinkDomains,
}

/// How a job sits on its NVLink domains (an 8-GPU instance, or a GB200
/// UltraServer's 36 or 72 GPUs).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NvlinkDomains {
    pub gpus_per_domain: u64,
    /// Domains the job's GPUs span.
    pub domains: u64,
    /// Parallel groups whose collectives leave a domain: `tp`, `cp`, `ep`, `dp`, `pp`.
    pub crossing: Vec<&'static str>,
}

/// Usable memory minus the headroom percentage.
pub fn budget_bytes(usable: u64, headroom_percent: f64) -> u64 {
    (usable as f64 * (1.0 - headroom_percent.clamp(0.0, 100.0) / 100.0)) as u64
}

/// The same job on another instance type.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InstanceOption {
    pub instance: String,
    pub gpu: String,
    pub nodes: u64,
    pub gpus: u64,
    /// The precision used (FP8 falls back to BF16 where the GPU has none).
    pub precision: &'static str,
    pub fits: bool,
    pub peak_bytes_per_gpu: u64,
    pub usable_bytes: u64,
    pub budget_bytes: u64,
    pub tokens_per_second: f64,
    pub hours: f64,
    pub usd: Option<f64>,
    pub spot_usd: Option<f64>,
    pub price_source: String,
    /// The fastest of the options that fit.
    pub fastest: bool,
    /// The cheapest of the options that fit and have a price.
    pub cheapest: bool,
}
