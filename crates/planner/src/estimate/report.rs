//! What a plan's evaluation reports: the figures, their accuracy labels,
//! the messages, and the same job on other instances. Computed by
//! `evaluate`; read by warnings, the fronts and the tests.

use crate::model::architecture::Architecture;
use crate::model::cost::{Checkpointing as CheckpointCost, Cost, Time};
use crate::model::layout::Layout;
use crate::model::memory::{self, Phase};
pub use crate::model::resolve::Message;
use crate::model::throughput::Throughput;
use crate::text::{render_all, Lang, Phrase};
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

/// The memory section of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryReport {
    /// Everything, with the allocator's typical reserve.
    pub peak_bytes_per_gpu: u64,
    /// What the step needs at least: the allocator's least reserve (#55).
    pub least_bytes_per_gpu: u64,
    pub allocated_peak_bytes: u64,
    #[serde(serialize_with = "terms_as_map")]
    pub terms: Vec<(memory::Term, u64)>,
    pub phase: Phase,
    /// What the GPU lets a process allocate.
    pub usable_bytes: u64,
    /// Usable memory minus the user's headroom: a plan fits under this.
    pub budget_bytes: u64,
    /// Which margin a tight plan is inside of, else None.
    pub tight: Option<Tight>,
    pub usable_is_estimate: bool,
    pub activation_bytes: u64,
    /// Of the peak, the bytes the verdict assumes rather than counts
    /// (`Term::is_assumed`: CUDA context, workspaces, fragmentation).
    pub assumed_bytes: u64,
    /// How the GEMMs get their weights (`memory::compute_path`), as train.py reports it.
    pub compute: crate::model::memory::ComputePath,
    /// How far this kind of plan has been checked against measurements.
    pub accuracy: Accuracy,
}

/// What a figure was checked against, from the most to the least.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Against real GPU runs.
    Measured,
    /// PyTorch steps counted under FakeTensor (the memory oracle).
    Counted,
    /// Fitted on published runs and cross-validated.
    Calibrated,
    /// Checked, with a large error.
    Approximate,
    /// A checked kind of plan, outside what the checks ran.
    Extrapolated,
    /// Formulas only.
    Derived,
}

impl Level {
    /// Its name in reports and the page's CSS class.
    pub fn key(self) -> &'static str {
        match self {
            Level::Measured => "measured",
            Level::Counted => "counted",
            Level::Calibrated => "calibrated",
            Level::Approximate => "approximate",
            Level::Extrapolated => "extrapolated",
            Level::Derived => "derived",
        }
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

/// Tests and fronts compare a level with its name.
impl PartialEq<&str> for Level {
    fn eq(&self, name: &&str) -> bool {
        self.key() == *name
    }
}

/// How much to trust a figure, by what it was checked against (#25).
#[derive(Clone, Debug, PartialEq)]
pub struct Accuracy {
    pub level: Level,
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
        st.serialize_field("level", self.level.key())?;
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
    /// What the launch bundle does not run of the plan as it stands, each
    /// with the change that makes it run (`launchers::export_notes`): the
    /// figures stand; the export says what it covers (#55).
    pub export_notes: Vec<Message>,
}

impl std::ops::Deref for Report {
    type Target = Figures;
    fn deref(&self) -> &Figures {
        &self.figures
    }
}

/// Whether the plan's peak fits a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Its peak, with the allocator's typical reserve, is under the budget
    /// (usable memory less the headroom).
    Fits,
    /// It may run out of memory: what it needs at least (the allocator's
    /// least measured reserve) is under the budget, or inside the GPU but in
    /// the user's headroom (`Tight`); its peak with the typical reserve is not.
    Tight,
    /// Even what it needs at least is beyond the GPU's usable memory.
    DoesNotFit,
}

/// The margin a tight plan is inside of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tight {
    /// Less room than the caching allocator usually keeps: it runs once the
    /// allocator releases cached blocks (as runs near full memory do).
    Caching,
    /// Inside the GPU, but in the headroom the user asked to keep free.
    Headroom,
}

impl Verdict {
    /// Its name in reports (`fits`, `tight`, `does_not_fit`).
    pub fn key(self) -> &'static str {
        match self {
            Verdict::Fits => "fits",
            Verdict::Tight => "tight",
            Verdict::DoesNotFit => "does_not_fit",
        }
    }
}

/// What evaluating a plan computes: memory, speed, time and cost. The
/// warnings are drawn from these once they are complete.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figures {
    #[serde(serialize_with = "crate::text::said")]
    pub model_name: Phrase,
    pub parameters: u64,
    pub parameters_active: u64,
    pub architecture: Architecture,
    pub layout: Layout,
    pub gpu: String,
    pub instance: String,
    pub memory: MemoryReport,
    pub fits: bool,
    pub verdict: Verdict,
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
    /// Interruptions in the time to train, and the save interval that
    /// keeps them cheapest (#58).
    pub failures: crate::model::failures::Failures,
    pub cost: Cost,
    /// Decoder layers on each pipeline rank, first to last.
    pub layers_per_pipeline_rank: Vec<u64>,
    /// What runs the exported launch code (#37).
    pub engine: crate::model::plan::Engine,
    /// The NVLink domains the job spans and the groups that leave one.
    pub nvlink: NvlinkDomains,
    /// GRPO's generation (`stage=grpo`), else `None`.
    pub rollout: Option<RolloutFigures>,
}

/// A GRPO plan's colocated vLLM engine and its rollouts (`model::rollout`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RolloutFigures {
    /// Tensor-parallel GPUs per vLLM engine stage (`vllm_tensor_parallel_size`).
    pub vllm_tp: u64,
    /// Its pipeline stages across nodes (`pipeline_parallel_size`, 1 within a node).
    pub vllm_pp: u64,
    /// GPUs of the vLLM server (`gen_gpus`); 0 when vLLM is colocated.
    pub server_gpus: u64,
    /// Engines generating at once (a server's `--data-parallel-size`).
    pub engines: u64,
    /// Rows each engine generates per step.
    pub rows_per_engine: u64,
    /// Rows its KV cache holds at once; fewer than `rows_per_engine` means waves.
    pub concurrent_rows: u64,
    /// Prompts per step (the step's rows over `generations`).
    pub prompts_per_step: u64,
    pub prompts_per_second: f64,
    /// Completion tokens generated per second, all GPUs.
    pub rollout_tokens_per_second: f64,
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
    #[serde(serialize_with = "crate::model::plan::as_key")]
    pub precision: crate::model::plan::Precision,
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
