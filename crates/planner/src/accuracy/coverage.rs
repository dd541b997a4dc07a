//! What the model's checks showed, as the labels read it: the kinds of plan
//! a check vouches for (`Group`), the errors of each group of throughput
//! rows and of each memory check, and data/coverage.json, which
//! `plan calibrate --coverage` writes (accuracy.rs computes it) and the
//! labels read back once (`shipped`).

use crate::accuracy::calibration::Case;
use crate::accuracy::envelope::Envelope;
use crate::formats::fields::Fields;
use crate::model::architecture::Architecture;
use crate::model::layout::Layout;
use crate::model::plan::{Plan, Stack};
use crate::model::throughput::{Fabric, Generation};
use crate::text::{Arg, Phrase, Text};
use serde::Serialize;
use std::sync::OnceLock;

/// How a job is split over its GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayoutKind {
    /// Data parallel only (DDP, ZeRO, FSDP).
    DataParallel,
    /// Tensor and/or pipeline parallel.
    TensorPipeline,
    /// With context parallelism.
    ContextParallel,
}

/// A kind of plan: what a measurement vouches for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Group {
    pub generation: Generation,
    pub stack: Stack,
    pub fp8: bool,
    pub layout: LayoutKind,
    /// The job's NVLink domain spans more than one 8-GPU node (GB200 NVL72).
    pub nvl72: bool,
    /// A mixture-of-experts model.
    pub moe: bool,
}

impl Group {
    /// The group of a plan with its resolved layout and fabric.
    pub fn of(
        plan: &Plan,
        arch: &Architecture,
        layout: &Layout,
        gen: Generation,
        fabric: &Fabric,
    ) -> Group {
        Group {
            moe: arch.moe.is_some(),
            ..Group::with_stack(plan, layout, gen, fabric, plan.implementation.stack)
        }
    }

    fn with_stack(plan: &Plan, l: &Layout, gen: Generation, f: &Fabric, stack: Stack) -> Group {
        Group {
            moe: false,
            generation: gen,
            stack,
            fp8: plan.numerics.precision.is_low_precision(),
            layout: if l.cp > 1 {
                LayoutKind::ContextParallel
            } else if l.tp > 1 || l.pp > 1 {
                LayoutKind::TensorPipeline
            } else {
                LayoutKind::DataParallel
            },
            nvl72: f.gpus_per_domain > 8,
        }
    }

    pub fn of_case(c: &Case) -> Group {
        Group {
            moe: c.arch.moe.is_some(),
            ..Group::with_stack(
                &c.plan,
                &c.layout,
                c.gpu.generation,
                &c.fabric,
                c.plan.implementation.stack,
            )
        }
    }

    /// The group's name, e.g. `Hopper, Megatron, FP8, TP/PP`, as a phrase
    /// (the page writes "data parallel" in the reader's language).
    pub fn phrase(&self) -> Phrase {
        let layout = match self.layout {
            LayoutKind::DataParallel => Arg::Text(Text::GroupDataParallel),
            LayoutKind::TensorPipeline => Arg::from("TP/PP"),
            LayoutKind::ContextParallel => Arg::from("TP/PP + CP"),
        };
        let stack = match self.stack {
            Stack::Megatron => "Megatron",
            Stack::Torchtitan => "torchtitan FSDP2",
            Stack::Hf => "HF Trainer",
        };
        let precision = if self.fp8 { "FP8" } else { "BF16" };
        let nvl = if self.nvl72 { ", NVL72" } else { "" };
        let moe = if self.moe { ", MoE" } else { "" };
        Phrase::new(Text::GroupName)
            .with("generation", self.generation.name())
            .with("stack", stack)
            .with("precision", precision)
            .with("layout", layout)
            .with("more", [nvl, moe].concat())
    }

    /// The name in English (docs/accuracy.md, coverage.json).
    pub fn name(&self) -> String {
        self.phrase().english()
    }
}

/// Errors of one group of rows, percent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupStats {
    pub group: Group,
    pub rows: usize,
    /// How many models the rows ran (cross-validation leaves each model's
    /// rows out together: one model's rows are one draw).
    pub models: usize,
    pub cv_median: f64,
    /// The largest cross-validated error, signed.
    pub cv_worst: f64,
    /// The worst under-prediction (most negative, or 0) and over-prediction
    /// (most positive, or 0), cross-validated.
    pub cv_under: f64,
    pub cv_over: f64,
    pub in_sample_median: f64,
    /// What the rows ran: a plan outside it is extrapolated.
    pub envelope: Envelope,
    /// The GPUs and the model families the rows ran: a plan on another GPU
    /// or of another family is extrapolated along it (#57: a B300 plan was
    /// "calibrated" on one B200 run, Qwen2.5-72B on five Llama runs).
    pub gpu_types: Vec<String>,
    pub families: Vec<String>,
}

/// Checks of this many rows or more quote an expected error (#36: a ±
/// from 3 or 4 rows promised what a handful of runs cannot show).
pub const ROWS_FOR_AN_ERROR: usize = 5;

/// Models a throughput group's rows must span to quote a ±: cross-validation
/// leaves a model's rows out together, so one model's rows are one draw,
/// and a Llama 4 plan cannot borrow three DeepSeek-V3 runs.
pub const MODELS_FOR_AN_ERROR: usize = 2;

impl GroupStats {
    /// Whether the group's rows are enough to quote an error for a plan.
    pub fn quotes_an_error(&self) -> bool {
        self.rows >= ROWS_FOR_AN_ERROR && self.models >= MODELS_FOR_AN_ERROR
    }

    /// The ± a label quotes: the worse of the worst under- and
    /// over-prediction, cross-validated, at least 5%.
    pub fn quoted_error(&self) -> f64 {
        self.cv_under.abs().max(self.cv_over.abs()).max(5.0) / 100.0
    }
}

/// Errors of a set of memory rows, percent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryStats {
    pub rows: usize,
    pub median: f64,
    /// The largest error, signed.
    pub worst: f64,
    /// The worst under-prediction (most negative, or 0) and over-prediction.
    pub under: f64,
    pub over: f64,
    pub envelope: Envelope,
}

impl MemoryStats {
    /// The ± a memory label quotes, as a fraction: the worst error either
    /// way, at least 2%.
    pub fn quoted_error(&self) -> f64 {
        self.under.abs().max(self.over.abs()).max(2.0) / 100.0
    }
}

/// Everything the labels and the docs quote.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Coverage {
    /// The GPUs the throughput rows ran on: only these can be "checked".
    pub gpus: Vec<String>,
    /// All throughput rows, cross-validated.
    pub throughput: GroupStats,
    pub groups: Vec<GroupStats>,
    /// Every row of each stack, whatever its kind: what a plan of a kind no
    /// row ran quotes for scale (its own stack's, not another's).
    pub stacks: Vec<(Stack, GroupStats)>,
    /// HF Transformers on one GPU, FakeTensor-counted steps (in-sample).
    pub memory_single_rank: MemoryStats,
    /// torchtitan FSDP on 8 GPUs, measured `max_reserved`.
    /// torchtitan's published peaks, per layout (`torchtitan_layout`).
    pub memory_torchtitan: Vec<(String, MemoryStats)>,
    /// The memory oracle's table (tools/oracle), by group (`sharding=zero3`, ...):
    /// in-sample, the model was changed on these rows.
    pub memory_oracle: Vec<(String, MemoryStats)>,
    /// The oracle's held-out plans: out of sample.
    pub memory_oracle_heldout: MemoryStats,
    /// Real fine-tuning runs on GPUs (`gpu_memory_rows`).
    pub memory_gpu: MemoryStats,
    /// Megatron-LM's CI runs, their last rank (`megatron_memory_rows`).
    pub memory_megatron: MemoryStats,
    /// The real 8 x B200 Megatron-LM runs' step times (`b200_step_rows`):
    /// a memory check's statistics, of the step's error.
    pub speed_b200: MemoryStats,
}

impl Coverage {
    /// The oracle's stats for one group, if it has rows.
    /// torchtitan's published peaks of a layout (`torchtitan_layout`).
    pub fn torchtitan(&self, layout: &str) -> Option<&MemoryStats> {
        self.memory_torchtitan
            .iter()
            .find(|(g, s)| g == layout && s.rows > 0)
            .map(|(_, s)| s)
    }

    pub fn oracle(&self, group: &str) -> Option<&MemoryStats> {
        self.memory_oracle
            .iter()
            .find(|(g, s)| g == group && s.rows > 0)
            .map(|(_, s)| s)
    }
}

/// The coverage the labels quote, as `plan calibrate --coverage` wrote it
/// (the tests; on the page only its fields, below).
pub const COVERAGE_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/coverage.json"));

/// The same, as build.rs writes it for the labels: its values in the order
/// `Coverage::read` takes them, without keys (`formats::fields`; the page
/// holds no JSON reader, #59).
pub const COVERAGE_FIELDS: &str = include_str!(concat!(env!("OUT_DIR"), "/coverage.fields"));

/// Fields that do not read (a stale build) mean nothing is checked: every
/// label says "derived", and tests/throughput_calibration.rs
/// `shipped_coverage_reads_back_to_its_file` fails.
pub fn shipped() -> &'static Coverage {
    static C: OnceLock<Coverage> = OnceLock::new();
    C.get_or_init(|| {
        let mut f = Fields::new(COVERAGE_FIELDS);
        let c = Coverage::read(&mut f);
        f.done(c).unwrap_or_else(|_| Coverage::empty())
    })
}

impl Generation {
    /// The generation by the name `Serialize` gives it.
    fn from_name(s: &str) -> Option<Generation> {
        match s {
            "ampere" => Some(Generation::Ampere),
            "ada" => Some(Generation::Ada),
            "hopper" => Some(Generation::Hopper),
            "hopper_power_capped" => Some(Generation::HopperPowerCapped),
            "blackwell" => Some(Generation::Blackwell),
            _ => None,
        }
    }
}

fn stack_named(s: &str) -> Option<Stack> {
    match s {
        "Megatron" => Some(Stack::Megatron),
        "Torchtitan" => Some(Stack::Torchtitan),
        "Hf" => Some(Stack::Hf),
        _ => None,
    }
}

impl LayoutKind {
    fn from_name(s: &str) -> Option<LayoutKind> {
        match s {
            "data_parallel" => Some(LayoutKind::DataParallel),
            "tensor_pipeline" => Some(LayoutKind::TensorPipeline),
            "context_parallel" => Some(LayoutKind::ContextParallel),
            _ => None,
        }
    }
}

/// The next field, a name `from` knows (else `zero`, and the fields do not read).
fn name_of<T>(f: &mut Fields, from: impl Fn(&str) -> Option<T>, zero: T) -> T {
    let t = f.text();
    from(t).unwrap_or_else(|| {
        f.refuse(format!("unknown name \"{t}\""));
        zero
    })
}

impl Group {
    fn read(f: &mut Fields) -> Group {
        Group {
            generation: name_of(f, Generation::from_name, Generation::Hopper),
            stack: name_of(f, stack_named, Stack::Hf),
            fp8: f.flag(),
            layout: name_of(f, LayoutKind::from_name, LayoutKind::DataParallel),
            nvl72: f.flag(),
            moe: f.flag(),
        }
    }
}

impl GroupStats {
    fn read(f: &mut Fields) -> GroupStats {
        GroupStats {
            group: Group::read(f),
            rows: f.whole() as usize,
            models: f.whole() as usize,
            cv_median: f.num(),
            cv_worst: f.num(),
            cv_under: f.num(),
            cv_over: f.num(),
            in_sample_median: f.num(),
            envelope: Envelope::read(f),
            gpu_types: f.list(|f| f.text().to_string()),
            families: f.list(|f| f.text().to_string()),
        }
    }
}

impl MemoryStats {
    fn read(f: &mut Fields) -> MemoryStats {
        MemoryStats {
            rows: f.whole() as usize,
            median: f.num(),
            worst: f.num(),
            under: f.num(),
            over: f.num(),
            envelope: Envelope::read(f),
        }
    }
}

impl Coverage {
    /// The fields build.rs wrote (its `coverage_fields`), in this order.
    pub fn read(f: &mut Fields) -> Coverage {
        let named = |f: &mut Fields| (f.text().to_string(), MemoryStats::read(f));
        Coverage {
            gpus: f.list(|f| f.text().to_string()),
            throughput: GroupStats::read(f),
            groups: f.list(GroupStats::read),
            stacks: f.list(|f| (name_of(f, stack_named, Stack::Hf), GroupStats::read(f))),
            memory_single_rank: MemoryStats::read(f),
            memory_torchtitan: f.list(named),
            memory_oracle: f.list(named),
            memory_oracle_heldout: MemoryStats::read(f),
            memory_gpu: MemoryStats::read(f),
            memory_megatron: MemoryStats::read(f),
            speed_b200: MemoryStats::read(f),
        }
    }
}

impl Coverage {
    fn empty() -> Coverage {
        let none = MemoryStats {
            rows: 0,
            median: 0.0,
            worst: 0.0,
            under: 0.0,
            over: 0.0,
            envelope: Envelope::default(),
        };
        Coverage {
            gpus: Vec::new(),
            throughput: GroupStats {
                group: Group {
                    generation: Generation::Hopper,
                    stack: Stack::Megatron,
                    fp8: false,
                    layout: LayoutKind::DataParallel,
                    nvl72: false,
                    moe: false,
                },
                rows: 0,
                models: 0,
                cv_median: 0.0,
                cv_worst: 0.0,
                cv_under: 0.0,
                cv_over: 0.0,
                in_sample_median: 0.0,
                envelope: Envelope::default(),
                gpu_types: Vec::new(),
                families: Vec::new(),
            },
            groups: Vec::new(),
            stacks: Vec::new(),
            memory_single_rank: none.clone(),
            memory_torchtitan: Vec::new(),
            memory_oracle: Vec::new(),
            memory_oracle_heldout: none.clone(),
            memory_gpu: none.clone(),
            memory_megatron: none.clone(),
            speed_b200: none,
        }
    }
}

/// The checked group a plan on `gpu` belongs to. A GPU no row ran on (A10G,
/// L40S, H200, RTX PRO 6000, a custom one) is never checked, whatever its
/// generation.
pub fn checked_group(group: &Group, gpu: &str) -> Option<&'static GroupStats> {
    let c = shipped();
    let known_gpu = c.gpus.iter().any(|g| g == gpu);
    c.groups.iter().find(|g| g.group == *group && known_gpu)
}

/// Every row of a stack, for a plan of a kind none of them ran (#36: the
/// Hugging Face plan quoted the nearest Megatron group's 1 row).
pub fn stack_stats(stack: Stack) -> Option<&'static GroupStats> {
    shipped()
        .stacks
        .iter()
        .find(|(s, _)| *s == stack)
        .map(|(_, g)| g)
}

pub(crate) fn median(mut e: Vec<f64>) -> f64 {
    e.sort_by(|a, b| a.total_cmp(b));
    match e.len() {
        0 => 0.0,
        n if n % 2 == 1 => e[n / 2],
        n => (e[n / 2 - 1] + e[n / 2]) / 2.0,
    }
}

pub(crate) fn worst(e: impl Iterator<Item = f64>) -> f64 {
    e.fold(0.0, |w, x| if x.abs() > w.abs() { x } else { w })
}

/// The most negative and the most positive error (0 where there is none).
pub(crate) fn under_over(e: impl Iterator<Item = f64>) -> (f64, f64) {
    e.fold((0.0, 0.0), |(u, o), x| (x.min(u), x.max(o)))
}
