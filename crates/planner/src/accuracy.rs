//! How far the model is from measurements, computed and never typed: the
//! throughput rows of data/calibration.csv in-sample and cross-validated
//! (leave-one-architecture-out), grouped by what a plan looks like, and the memory rows.
//!
//! `plan calibrate --coverage` writes the result to data/coverage.json, which
//! the report's accuracy labels read; a test recomputes it and fails when the
//! file, docs/accuracy.md or the README's figures fall out of date.

use crate::architecture::{Architecture, Mlp};
use crate::calibration::{
    cases, cross_validated, hf_cases, predict_with, predictions, read_csv, Case,
};
pub use crate::envelope::{Envelope, Outside};
use crate::json::{named, req, FromJson, Json};
use crate::layout::{Layout, Stages};
use crate::memory::{breakdown, CUDA_CONTEXT_BYTES};
use crate::plan::{Attention, Checkpointing, Optimizer, Plan, Precision, Stack};
use crate::text::{Arg, Phrase, Text};
use crate::throughput::{generation, Fabric, Generation};
use serde::{Deserialize, Serialize};
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
            ..Group::with_stack(plan, layout, gen, fabric, plan.stack)
        }
    }

    fn with_stack(plan: &Plan, l: &Layout, gen: Generation, f: &Fabric, stack: Stack) -> Group {
        Group {
            moe: false,
            generation: gen,
            stack,
            fp8: plan.precision.is_low_precision(),
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
                generation(c.gpu),
                &c.fabric,
                c.plan.stack,
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
            .with("generation", format!("{:?}", self.generation))
            .with("stack", stack)
            .with("precision", precision)
            .with("layout", layout)
            .with("more", format!("{nvl}{moe}"))
    }

    /// The name in English (docs/accuracy.md, coverage.json).
    pub fn name(&self) -> String {
        self.phrase().english()
    }
}

/// One published run against the model.
#[derive(Clone, Debug, Serialize)]
pub struct ThroughputRow {
    pub id: String,
    pub group: Group,
    pub measured: f64,
    /// With the shipped parameters, which were fitted on this row too.
    pub in_sample_percent: f64,
    /// With parameters fitted on the other rows of its generation.
    pub cross_validated_percent: f64,
    /// What the run was: sequence, GPUs, model size, precision, training.
    pub point: Envelope,
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

/// Every throughput row, in-sample and cross-validated. The Hugging Face
/// stack's rows come last: no fit uses them, so their error is out of sample
/// either way.
pub fn throughput_rows() -> Vec<ThroughputRow> {
    let cases = cases();
    let cv = cross_validated();
    let mut rows: Vec<ThroughputRow> = cases
        .iter()
        .zip(predictions())
        .zip(cv)
        .map(|((c, p), v)| ThroughputRow {
            id: c.id.clone(),
            group: Group::of_case(c),
            measured: p.measured,
            in_sample_percent: p.error_percent,
            cross_validated_percent: v.error_percent,
            point: case_point(c),
        })
        .collect();
    for c in hf_cases() {
        let p = predict_with(&c, &crate::throughput::efficiency(generation(c.gpu)));
        rows.push(ThroughputRow {
            id: c.id.clone(),
            group: Group::of_case(&c),
            measured: p.measured,
            in_sample_percent: p.error_percent,
            cross_validated_percent: p.error_percent,
            point: case_point(&c),
        });
    }
    rows
}

fn case_point(c: &Case) -> Envelope {
    Envelope::point(&c.plan, &c.arch, c.layout.gpus)
}

fn median(mut e: Vec<f64>) -> f64 {
    e.sort_by(|a, b| a.total_cmp(b));
    match e.len() {
        0 => 0.0,
        n if n % 2 == 1 => e[n / 2],
        n => (e[n / 2 - 1] + e[n / 2]) / 2.0,
    }
}

fn worst(e: impl Iterator<Item = f64>) -> f64 {
    e.fold(0.0, |w, x| if x.abs() > w.abs() { x } else { w })
}

/// The most negative and the most positive error (0 where there is none).
fn under_over(e: impl Iterator<Item = f64>) -> (f64, f64) {
    e.fold((0.0, 0.0), |(u, o), x| (x.min(u), x.max(o)))
}

fn stats(group: Group, rows: &[&ThroughputRow]) -> GroupStats {
    let (cv_under, cv_over) = under_over(rows.iter().map(|r| r.cross_validated_percent));
    let mut models: Vec<u64> = rows.iter().map(|r| r.point.params.0).collect();
    models.sort_unstable();
    models.dedup();
    GroupStats {
        group,
        rows: rows.len(),
        models: models.len(),
        cv_under,
        cv_over,
        envelope: Envelope::cover(rows.iter().map(|r| &r.point)),
        cv_median: median(
            rows.iter()
                .map(|r| r.cross_validated_percent.abs())
                .collect(),
        ),
        cv_worst: worst(rows.iter().map(|r| r.cross_validated_percent)),
        in_sample_median: median(rows.iter().map(|r| r.in_sample_percent.abs()).collect()),
    }
}

/// Rows grouped by kind of plan, in `Group` order.
pub fn group_stats(rows: &[ThroughputRow]) -> Vec<GroupStats> {
    let mut groups: Vec<Group> = rows.iter().map(|r| r.group).collect();
    groups.sort();
    groups.dedup();
    groups
        .into_iter()
        .map(|g| stats(g, &rows.iter().filter(|r| r.group == g).collect::<Vec<_>>()))
        .collect()
}

/// Rows grouped by one field (GPU generation, parallel layout, stack), for the docs.
pub fn stats_by<K: PartialEq + Copy>(
    rows: &[ThroughputRow],
    key: impl Fn(&Group) -> K,
) -> Vec<(K, GroupStats)> {
    let mut keys: Vec<K> = Vec::new();
    for r in rows {
        if !keys.contains(&key(&r.group)) {
            keys.push(key(&r.group));
        }
    }
    keys.into_iter()
        .map(|k| {
            let mine: Vec<&ThroughputRow> = rows.iter().filter(|r| key(&r.group) == k).collect();
            (k, stats(mine[0].group, &mine))
        })
        .collect()
}

// ---- memory ----------------------------------------------------------------------

/// The 120 FakeTensor-counted steps (../shared/data/memory_examples.csv).
pub const MEMORY_EXAMPLES_CSV: &str = include_str!("../data/memory_examples.csv");

/// One memory row: what was measured, what the model says, percent error.
#[derive(Clone, Debug)]
pub struct MemoryRow {
    pub label: String,
    pub measured: f64,
    pub predicted: f64,
    pub error_percent: f64,
    /// What the step was: sequence, GPUs, model size, precision, training.
    pub point: Envelope,
}

fn memory_row_plan(r: &crate::calibration::Row) -> Option<(Architecture, Plan)> {
    let n = |k: &str| r.num(k).map(|x| x as u64);
    let arch = Architecture::dense(
        n("layers")?,
        n("hidden")?,
        n("heads")?,
        n("kv_heads")?,
        n("intermediate")?,
        n("vocab")?,
        r.get("tied") == "1",
        Mlp::Swiglu,
    );
    let plan = Plan {
        micro_batch: n("b")?,
        seq: n("s")?,
        zero: 0,
        grad_accum: 1,
        precision: match r.get("precision") {
            "mixed" => Precision::Bf16,
            "bf16" => Precision::Bf16Pure,
            "fp32" => Precision::Fp32,
            _ => return None,
        },
        checkpointing: if r.get("ac") == "1" {
            Checkpointing::Full
        } else {
            Checkpointing::None
        },
        attention: match r.get("attn") {
            "auto" | "sdpa" => Attention::Flash,
            // SDPA's math backend materialises the scores like eager attention.
            "eager" | "math" => Attention::Eager,
            _ => return None,
        },
        optimizer: if r.get("optim") == "adamw_foreach" {
            Optimizer::AdamwForeach
        } else {
            Optimizer::Adamw
        },
        ..Plan::default()
    };
    Some((arch, plan))
}

/// HF Transformers on one GPU against the FakeTensor-counted peaks of
/// `torch.cuda.max_memory_allocated()` (the report's `allocated_peak_bytes`).
pub fn single_rank_memory_rows() -> Vec<MemoryRow> {
    read_csv(MEMORY_EXAMPLES_CSV)
        .iter()
        .filter_map(|r| {
            let (arch, plan) = memory_row_plan(r)?;
            let one = Layout {
                gpus: 1,
                tp: 1,
                pp: 1,
                cp: 1,
                ep: 1,
                dp: 1,
                shard: 1,
                stages: Stages::even(arch.layers, 1),
                fp8_tn_only: true,
            };
            let m = breakdown(&arch, &arch.parameter_counts(), &plan, &one);
            let measured = r.num("peak_bytes")?;
            let predicted = m.allocated_peak_bytes as f64;
            let label = format!(
                "{} b{} s{} {} ac{} {} {}",
                r.get("model"),
                r.get("b"),
                r.get("s"),
                r.get("precision"),
                r.get("ac"),
                r.get("attn"),
                r.get("optim")
            );
            Some(MemoryRow {
                label,
                measured,
                predicted,
                error_percent: 100.0 * (predicted - measured) / measured,
                point: Envelope::point(&plan, &arch, 1),
            })
        })
        .collect()
}

/// The memory oracle's table (tools/oracle, written by `./dev oracle`): real
/// Hugging Face models trained two steps under FakeTensorMode by the bundle's
/// own train.py, one rank of FSDP2 over a fake process group, every storage
/// counted as the CUDA caching allocator rounds it.
pub const ORACLE_MEMORY_JSONL: &str = include_str!("../data/oracle_memory.jsonl");

/// One plan of the oracle's grid, in the planner's URL words.
#[derive(Debug, Deserialize)]
struct OracleRecord {
    id: String,
    /// A key of the table's first line, `configs`: the config Transformers built.
    config: String,
    plan: std::collections::BTreeMap<String, serde_json::Value>,
    world: u64,
    peak_bytes: f64,
}

/// An oracle row against the planner, with the groups it is reported in.
#[derive(Clone, Debug)]
pub struct OracleRow {
    pub row: MemoryRow,
    /// How the job is split: `single`, `zero1`, `zero2`, `zero3`, `lora`;
    /// `tp` for tensor parallelism, `dpo` for any DPO step.
    pub sharding: &'static str,
    pub checkpointing: String,
    pub family: String,
    /// The moment the planner puts the peak at.
    pub phase: crate::memory::Phase,
}

fn oracle_plan(r: &OracleRecord) -> Plan {
    let query: Vec<String> = r
        .plan
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    Plan::from_query(&query.join("&")).plan
}

/// The oracle's rows, each predicted by `memory::breakdown` on the layout
/// the report would resolve (data parallel over `world`, one shard group).
pub fn oracle_memory_rows() -> Vec<OracleRow> {
    oracle_rows_of(ORACLE_MEMORY_JSONL)
}

/// The oracle's rows at the presets' real shapes and whole depth (#39:
/// tools/oracle/rows.py's `real_sizes`: 1.7 B to 405 B, up to 32K tokens
/// and 64 ranks): in the table and its envelopes; the memory model gained a
/// moment on one of them (the 70B on 16 ranks), so in-sample.
pub fn oracle_real_size_rows() -> Vec<OracleRow> {
    oracle_memory_rows()
        .into_iter()
        .filter(is_whole_model)
        .collect()
}

/// A row of rows.py's `whole_model`: its id carries the depth and the world.
fn is_whole_model(r: &OracleRow) -> bool {
    r.row.label.contains("-layers,world=")
}

/// Plans the memory model was never changed on (tools/oracle/rows.py's
/// `heldout`: OLMo 2, Qwen2.5-0.5B and Llama-3.2-3B widths, new sequence
/// lengths, micro-batches and world sizes), measured after it was (#25):
/// the oracle's out-of-sample error.
pub const ORACLE_HELDOUT_JSONL: &str = include_str!("../data/oracle_heldout.jsonl");

/// The held-out rows, predicted as the table's are.
pub fn oracle_heldout_rows() -> Vec<OracleRow> {
    oracle_rows_of(ORACLE_HELDOUT_JSONL)
}

fn oracle_rows_of(jsonl: &str) -> Vec<OracleRow> {
    let mut lines = jsonl.lines();
    let head: serde_json::Value = lines
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_default();
    let configs = &head["configs"];
    lines
        .filter_map(|line| serde_json::from_str::<OracleRecord>(line).ok())
        .filter_map(|r| {
            let config = configs.get(&r.config)?;
            let arch = crate::architecture::from_hf_config(&config.to_string()).ok()?;
            let plan = oracle_plan(&r);
            // train.py's layout: tensor parallel inside, data parallel across (rows.py `tp`).
            let tp = plan.tp.max(1);
            let layout = Layout {
                gpus: r.world,
                tp,
                pp: 1,
                cp: 1,
                ep: 1,
                dp: r.world / tp,
                shard: plan.shard.unwrap_or(r.world / tp),
                stages: Stages::even(arch.layers, 1),
                fp8_tn_only: true,
            };
            let m = breakdown(&arch, &arch.parameter_counts(), &plan, &layout);
            let predicted = m.allocated_peak_bytes as f64;
            let sharding = match (plan.train, plan.zero, r.world) {
                _ if plan.stage == crate::plan::TrainingStage::Dpo => "dpo",
                _ if plan.stage == crate::plan::TrainingStage::Grpo => "grpo",
                _ if tp > 1 => "tp",
                (crate::plan::Training::Full, _, 1) => "single",
                (crate::plan::Training::Full, 1, _) => "zero1",
                (crate::plan::Training::Full, 2, _) => "zero2",
                (crate::plan::Training::Full, 3, _) => "zero3",
                (crate::plan::Training::Full, _, _) => "ddp",
                _ => "lora",
            };
            Some(OracleRow {
                row: MemoryRow {
                    label: r.id.clone(),
                    measured: r.peak_bytes,
                    predicted,
                    error_percent: 100.0 * (predicted - r.peak_bytes) / r.peak_bytes,
                    point: Envelope::point(&plan, &arch, r.world),
                },
                sharding,
                checkpointing: plan.checkpointing.key(),
                family: config["model_type"].as_str().unwrap_or("?").to_string(),
                phase: m.phase,
            })
        })
        .collect()
}

impl OracleRow {
    /// The group names this row counts in: its sharding, its checkpointing,
    /// its model family, and `all`; a tensor-parallel row (#37) counts in
    /// `sharding=tp` alone, so the data-parallel groups keep their bounds.
    pub fn groups(&self) -> Vec<String> {
        if self.sharding == "tp" {
            return vec!["sharding=tp".to_string()];
        }
        // DPO's and GRPO's steps (#38) count in their own groups, beside the SFT groups' bounds.
        if self.sharding == "dpo" || self.sharding == "grpo" {
            return vec![format!("stage={}", self.sharding)];
        }
        vec![
            "all".to_string(),
            format!("sharding={}", self.sharding),
            format!("ckpt={}", self.checkpointing),
            format!("family={}", self.family),
        ]
    }

    pub fn in_group(&self, name: &str) -> bool {
        self.groups().iter().any(|g| g == name)
    }
}

/// Median and worst error of every group of the oracle's rows, by name.
pub fn oracle_groups(rows: &[OracleRow]) -> Vec<(String, MemoryStats)> {
    let mut names: Vec<String> = rows.iter().flat_map(|r| r.groups()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let members: Vec<MemoryRow> = rows
                .iter()
                .filter(|r| r.in_group(&name))
                .map(|r| r.row.clone())
                .collect();
            let stats = memory_stats(&members);
            (name, stats)
        })
        .collect()
}

/// Real fine-tuning runs on GPUs with a measured peak (#25): the
/// fms-acceleration benchmarks of data/hf_stack_throughput.csv (HF001-HF009,
/// trust high: HF Trainer + accelerate FSDP on A100 80GB, `torch` peak
/// allocated on rank 0, every setting stated at the commit the row cites),
/// each as the plan its columns state: FSDP FULL_SHARD over the row's GPUs
/// (one process: no sharding), flash attention, checkpointing on, the HF
/// Trainer's plain loss and AdamW; "pure bf16" rows without fp32 master
/// weights, the QLoRA rows bf16 AMP on an NF4 base; Llama-2-70B as Llama
/// 3.1 70B's shape with Llama 2's 32,000-token vocabulary.
pub const GPU_MEMORY_ROWS: &[(&str, &str)] = &[
    (
        "HF001",
        "model=mistral-7b-v0.1&precision=bf16-pure&mb=4&zero=0&gpu_count=1",
    ),
    (
        "HF002",
        "model=mistral-7b-v0.1&precision=bf16-pure&mb=2&zero=3&gpu_count=2",
    ),
    (
        "HF003",
        "model=mistral-7b-v0.1&precision=bf16-pure&mb=4&zero=3&gpu_count=2",
    ),
    (
        "HF004",
        "model=mistral-7b-v0.1&precision=bf16-pure&train=lora&mb=2&zero=3&gpu_count=2",
    ),
    (
        "HF005",
        "model=mistral-7b-v0.1&precision=bf16&train=qlora&mb=2&zero=3&gpu_count=2",
    ),
    (
        "HF006",
        "model=mixtral-8x7b&precision=bf16-pure&train=lora&mb=2&zero=3&gpu_count=2",
    ),
    (
        "HF007",
        "model=mixtral-8x7b&precision=bf16&train=qlora&mb=2&zero=3&gpu_count=2",
    ),
    (
        "HF008",
        "model=llama-3.1-70b&vocab=32000&precision=bf16&train=qlora&mb=2&zero=3&gpu_count=2",
    ),
    (
        "HF009",
        "model=llama-3.1-70b&vocab=32000&precision=bf16&train=qlora&mb=4&zero=0&gpu_count=1",
    ),
    // torchtune's single-device full fine-tune (a second source): BF16
    // weights and AdamW states (`dtype: bf16`), packed 2 x 4,096 tokens, no
    // checkpointing, its plain cross-entropy; `peak_memory_active`.
    (
        "HF021",
        "model=llama-3.2-3b&precision=bf16-pure&mb=2&zero=0&gpu_count=1&ckpt=none",
    ),
];

/// What every GPU_MEMORY_ROWS plan shares: one A100 80GB node of the row's
/// GPUs, 4,096-token packed sequences, LoRA rank 16, full checkpointing.
const GPU_MEMORY_COMMON: &str = "instance=custom&gpu_mem=80&gpu_bf16=312&gpu_fp8=0&gpu_bw=2.039&gpu_nvlink=600&gpu_net=400&seq=4096&ga=1&lora_rank=16&ckpt=full&attn=flash&loss=plain&optimizer=adamw&stack=hf";

/// Answer.AI's FSDP+QLoRA benchmarks (a third source, #25): Llama-2-7B on
/// two RTX 3090s, LoRA and QLoRA at rank 64, 512 or 2,048 tokens a sample,
/// FSDP1 FULL_SHARD or NO_SHARD (zero=0), pure BF16, reentrant checkpointing
/// of every decoder layer, SDPA; `max_memory_reserved` on rank 0. Their
/// script keeps the adapters in bf16 and shards them, where the exported
/// code keeps them fp32 and whole: the planner is compared as it plans.
pub const RESERVED_GPU_MEMORY_ROWS: &[(&str, &str)] = &[
    ("HF064", "train=qlora&seq=512&mb=1&zero=3"),
    ("HF065", "train=qlora&seq=2048&mb=1&zero=3"),
    ("HF066", "train=lora&seq=512&mb=1&zero=3"),
    ("HF067", "train=lora&seq=2048&mb=1&zero=3"),
    ("HF068", "train=qlora&seq=2048&mb=4&zero=3"),
    ("HF069", "train=qlora&seq=2048&mb=10&zero=3"),
    ("HF070", "train=lora&seq=2048&mb=4&zero=3"),
    ("HF071", "train=lora&seq=2048&mb=6&zero=3"),
    ("HF072", "train=qlora&seq=2048&mb=8&zero=0"),
    ("HF073", "train=lora&seq=2048&mb=4&zero=0"),
];

/// What every RESERVED_GPU_MEMORY_ROWS plan shares: Llama-2-7B (Llama 3.1
/// 8B's shape with 32 KV heads, FFN 11,008 and 32,000 tokens) on two 24 GB
/// RTX 3090s (71 TFLOP/s BF16, 936 GB/s), LoRA rank 64.
const RTX3090_COMMON: &str = "model=llama-3.1-8b&kv_heads=32&ffn=11008&vocab=32000&instance=custom&gpu_mem=24&gpu_bf16=71&gpu_fp8=0&gpu_bw=0.936&gpu_count=2&precision=bf16-pure&lora_rank=64&ckpt=full&attn=flash&loss=plain&optimizer=adamw&stack=hf&ga=1";

/// Which peak a real-GPU row measured.
#[derive(Clone, Copy)]
enum Peak {
    /// torch's peak allocated (or torchtune's peak active): `allocated_peak_bytes`.
    Allocated,
    /// torch's peak reserved: the planner's peak without the CUDA context.
    Reserved,
}

/// The real-GPU rows against the planner's peak of the kind each measured.
pub fn gpu_memory_rows() -> Vec<MemoryRow> {
    let csv = read_csv(crate::calibration::HF_STACK_CSV);
    let allocated = GPU_MEMORY_ROWS
        .iter()
        .map(|(id, q)| (*id, format!("{GPU_MEMORY_COMMON}&{q}"), Peak::Allocated));
    let reserved = RESERVED_GPU_MEMORY_ROWS
        .iter()
        .map(|(id, q)| (*id, format!("{RTX3090_COMMON}&{q}"), Peak::Reserved));
    allocated
        .chain(reserved)
        .filter_map(|(id, query, peak)| {
            let row = csv.iter().find(|r| r.get("id") == id)?;
            let field = row.get("peak_mem_gib");
            let measured: f64 = field.split_whitespace().next()?.parse().ok()?;
            let plan = Plan::from_query(&query).plan;
            let (mem, arch, gpus) = memory_of(&plan);
            let bytes = match peak {
                Peak::Allocated => mem.allocated_peak_bytes,
                Peak::Reserved => mem.peak_bytes - CUDA_CONTEXT_BYTES,
            };
            let predicted = bytes as f64 / (1u64 << 30) as f64;
            Some(MemoryRow {
                label: id.to_string(),
                measured,
                predicted,
                error_percent: 100.0 * (predicted - measured) / measured,
                point: Envelope::point(&plan, &arch, gpus),
            })
        })
        .collect()
}

/// The layouts torchtitan's published runs are grouped by for the memory
/// labels: what sets their peak's make-up.
pub fn torchtitan_layout(l: &Layout) -> &'static str {
    if l.cp > 1 {
        "context parallel"
    } else if l.tp > 1 || l.pp > 1 {
        "tensor/pipeline parallel"
    } else {
        "data parallel"
    }
}

/// torchtitan's published runs with a measured peak (`max_reserved`:
/// allocated plus the allocator's cached blocks, no CUDA context), as the
/// planner plans them on the torchtitan stack, with their layout
/// (`torchtitan_layout`): every torchtitan row of data/published_runs.csv
/// with a peak, the duplicates of calibration.csv's and the power-limited
/// B200s included (memory does not depend on clocks), the 262K-token ones
/// not (beyond the planner's sequence range).
pub fn torchtitan_memory_rows() -> Vec<(&'static str, MemoryRow)> {
    read_csv(crate::published::PUBLISHED_RUNS_CSV)
        .iter()
        .filter(|r| r.get("stack") == "torchtitan" && r.num("peak_gib").is_some())
        .filter(|r| r.num("seq").is_some_and(|s| s <= 131_072.0))
        .filter_map(|r| {
            let c = crate::published::case_of(r.get("id"))?;
            let plan = Plan::from_query(&c.link()).plan;
            let (mem, arch, gpus) = memory_of(&plan);
            let measured = r.num("peak_gib")?;
            let reserved = mem.peak_bytes - CUDA_CONTEXT_BYTES;
            let predicted = reserved as f64 / (1u64 << 30) as f64;
            let row = MemoryRow {
                label: c.id.clone(),
                measured,
                predicted,
                error_percent: 100.0 * (predicted - measured) / measured,
                point: Envelope::point(&plan, &arch, gpus),
            };
            Some((torchtitan_layout(&c.layout), row))
        })
        .collect()
}

/// Megatron-LM's own CI runs (data/megatron_ci_memory.csv: the
/// `mem-max-allocated-bytes` its last rank logs, from the golden values of
/// `tests/functional_tests/test_cases/<test_case>/golden_values_dev_<platform>.json`
/// at NVIDIA/Megatron-LM@d98e8a6, the largest over the logged iterations:
/// steady from the second), each
/// planned on the Megatron stack as its `model_config.yaml` ran it,
/// against the planner's last pipeline stage (`torch.cuda.max_memory_allocated`).
/// No memory parameter is fitted on them.
pub fn megatron_memory_rows() -> Vec<MemoryRow> {
    read_csv(MEGATRON_CI_MEMORY_CSV)
        .iter()
        .filter_map(|r| {
            // A key the query misspells would drop a setting: no row then.
            let decoded = Plan::from_query(r.get("query"));
            if !decoded.notices.is_empty() {
                return None;
            }
            let plan = decoded.plan;
            let (res, _) = crate::resolve::resolve(&plan);
            let mem =
                crate::memory::last_stage_breakdown(&res.arch, &res.counts, &plan, &res.layout);
            let measured = r.num("measured_max_allocated_bytes")? / (1u64 << 30) as f64;
            let predicted = mem.allocated_peak_bytes as f64 / (1u64 << 30) as f64;
            Some(MemoryRow {
                label: r.get("id").to_string(),
                measured,
                predicted,
                error_percent: 100.0 * (predicted - measured) / measured,
                point: Envelope::point(&plan, &res.arch, res.layout.gpus),
            })
        })
        .collect()
}

/// The Megatron-LM CI rows for docs/accuracy.md: the summary, then row by row.
fn megatron_markdown(st: &MemoryStats) -> String {
    let s = format!(
        "\n#### Memory against Megatron-LM's own CI runs\n\nThe Megatron stack's plans against the `mem-max-allocated-bytes` that Megatron-LM's functional tests log on their last rank (data/megatron_ci_memory.csv, from the golden values at NVIDIA/Megatron-LM@d98e8a6), compared with the planner's last pipeline stage; no memory parameter is fitted on them. {} rows: median {:.1}%, from {} to {}.\n\n| run | measured GiB | predicted GiB | error |\n|---|---:|---:|---:|\n",
        st.rows,
        st.median,
        pct(st.under),
        pct(st.over)
    );
    s + &rows_table(&megatron_memory_rows(), 1.0, pct)
}

/// Measured and predicted, one row per line (`| label | measured |
/// predicted | error |`), figures divided by `per_gib` to GiB.
fn rows_table(rows: &[MemoryRow], per_gib: f64, error: fn(f64) -> String) -> String {
    rows.iter()
        .map(|r| {
            format!(
                "| {} | {:.2} | {:.2} | {} |\n",
                r.label,
                r.measured / per_gib,
                r.predicted / per_gib,
                error(r.error_percent)
            )
        })
        .collect()
}

/// Megatron-LM's CI memory runs, compiled in.
pub const MEGATRON_CI_MEMORY_CSV: &str = include_str!("../data/megatron_ci_memory.csv");

/// A plan's memory breakdown, parameters and GPUs, as the page's report has
/// them (the harness stays below `evaluate`, which reads its labels).
fn memory_of(plan: &Plan) -> (crate::memory::MemoryBreakdown, Architecture, u64) {
    let (r, _) = crate::resolve::resolve(plan);
    let mem = crate::memory::breakdown(&r.arch, &r.counts, plan, &r.layout);
    (mem, r.arch, r.layout.gpus)
}

/// torchtitan's memory rows' errors per layout.
fn torchtitan_groups(rows: &[(&'static str, MemoryRow)]) -> Vec<(String, MemoryStats)> {
    [
        "data parallel",
        "tensor/pipeline parallel",
        "context parallel",
    ]
    .iter()
    .map(|kind| {
        let mine: Vec<MemoryRow> = rows
            .iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, r)| r.clone())
            .collect();
        (kind.to_string(), memory_stats(&mine))
    })
    .collect()
}

fn memory_stats(rows: &[MemoryRow]) -> MemoryStats {
    let (under, over) = under_over(rows.iter().map(|r| r.error_percent));
    MemoryStats {
        under,
        over,
        envelope: Envelope::cover(rows.iter().map(|r| &r.point)),
        rows: rows.len(),
        median: median(rows.iter().map(|r| r.error_percent.abs()).collect()),
        worst: worst(rows.iter().map(|r| r.error_percent)),
    }
}

/// Compute everything (leave-one-architecture-out fits: a second or so in release).
pub fn compute() -> Coverage {
    let rows = throughput_rows();
    let all: Vec<&ThroughputRow> = rows.iter().collect();
    let total = stats(rows[0].group, &all);
    let mut gpus: Vec<String> = cases().iter().map(|c| c.gpu.id.clone()).collect();
    gpus.sort();
    gpus.dedup();
    Coverage {
        gpus,
        throughput: total,
        groups: group_stats(&rows),
        stacks: stats_by(&rows, |g| g.stack),
        memory_single_rank: memory_stats(&single_rank_memory_rows()),
        memory_torchtitan: torchtitan_groups(&torchtitan_memory_rows()),
        memory_oracle: oracle_groups(&oracle_memory_rows()),
        memory_oracle_heldout: memory_stats(
            &oracle_heldout_rows()
                .into_iter()
                .map(|r| r.row)
                .collect::<Vec<_>>(),
        ),
        memory_gpu: memory_stats(&gpu_memory_rows()),
        memory_megatron: memory_stats(&megatron_memory_rows()),
    }
}

/// The coverage the labels quote, as `plan calibrate --coverage` wrote it.
pub const COVERAGE_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/coverage.json"));

/// A file that does not parse (mid-regeneration) means nothing is checked:
/// every label says "derived", and the currency test fails.
pub fn shipped() -> &'static Coverage {
    static C: OnceLock<Coverage> = OnceLock::new();
    C.get_or_init(|| crate::json::read(COVERAGE_JSON).unwrap_or_else(|_| Coverage::empty()))
}

/// The generation by the name `Serialize` gives it.
impl FromJson for Generation {
    fn from_json(j: &Json) -> Result<Self, String> {
        named(j, |s| match s {
            "ampere" => Some(Generation::Ampere),
            "ada" => Some(Generation::Ada),
            "hopper" => Some(Generation::Hopper),
            "hopper_power_capped" => Some(Generation::HopperPowerCapped),
            "blackwell" => Some(Generation::Blackwell),
            _ => None,
        })
    }
}

impl FromJson for Stack {
    fn from_json(j: &Json) -> Result<Self, String> {
        named(j, |s| match s {
            "Megatron" => Some(Stack::Megatron),
            "Torchtitan" => Some(Stack::Torchtitan),
            "Hf" => Some(Stack::Hf),
            _ => None,
        })
    }
}

impl FromJson for LayoutKind {
    fn from_json(j: &Json) -> Result<Self, String> {
        named(j, |s| match s {
            "data_parallel" => Some(LayoutKind::DataParallel),
            "tensor_pipeline" => Some(LayoutKind::TensorPipeline),
            "context_parallel" => Some(LayoutKind::ContextParallel),
            _ => None,
        })
    }
}

impl FromJson for Group {
    fn from_json(j: &Json) -> Result<Self, String> {
        Ok(Group {
            generation: req(j, "generation")?,
            stack: req(j, "stack")?,
            fp8: req(j, "fp8")?,
            layout: req(j, "layout")?,
            nvl72: req(j, "nvl72")?,
            moe: req(j, "moe")?,
        })
    }
}

impl FromJson for GroupStats {
    fn from_json(j: &Json) -> Result<Self, String> {
        Ok(GroupStats {
            group: req(j, "group")?,
            rows: req(j, "rows")?,
            models: req(j, "models")?,
            cv_median: req(j, "cv_median")?,
            cv_worst: req(j, "cv_worst")?,
            cv_under: req(j, "cv_under")?,
            cv_over: req(j, "cv_over")?,
            in_sample_median: req(j, "in_sample_median")?,
            envelope: req(j, "envelope")?,
        })
    }
}

impl FromJson for MemoryStats {
    fn from_json(j: &Json) -> Result<Self, String> {
        Ok(MemoryStats {
            rows: req(j, "rows")?,
            median: req(j, "median")?,
            worst: req(j, "worst")?,
            under: req(j, "under")?,
            over: req(j, "over")?,
            envelope: req(j, "envelope")?,
        })
    }
}

impl FromJson for Coverage {
    fn from_json(j: &Json) -> Result<Self, String> {
        Ok(Coverage {
            gpus: req(j, "gpus")?,
            throughput: req(j, "throughput")?,
            groups: req(j, "groups")?,
            stacks: req(j, "stacks")?,
            memory_single_rank: req(j, "memory_single_rank")?,
            memory_torchtitan: req(j, "memory_torchtitan")?,
            memory_oracle: req(j, "memory_oracle")?,
            memory_oracle_heldout: req(j, "memory_oracle_heldout")?,
            memory_gpu: req(j, "memory_gpu")?,
            memory_megatron: req(j, "memory_megatron")?,
        })
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
            },
            groups: Vec::new(),
            stacks: Vec::new(),
            memory_single_rank: none.clone(),
            memory_torchtitan: Vec::new(),
            memory_oracle: Vec::new(),
            memory_oracle_heldout: none.clone(),
            memory_gpu: none.clone(),
            memory_megatron: none,
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

// ---- the docs' tables --------------------------------------------------------------

/// The README's sentence of cross-validated medians per GPU generation and per stack.
pub fn readme_groups(rows: &[ThroughputRow]) -> String {
    let part =
        |name: String, g: &GroupStats| format!("{name} {:.1}% (n = {})", g.cv_median, g.rows);
    let gens: Vec<String> = stats_by(rows, |g| g.generation)
        .iter()
        .map(|(k, g)| part(format!("{k:?}"), g))
        .collect();
    let stacks: Vec<String> = stats_by(rows, |g| g.stack)
        .iter()
        .map(|(k, g)| part(crate::sequence_bands::stack_short_name(*k).into(), g))
        .collect();
    let kinds: Vec<String> = stats_by(rows, |g| g.moe)
        .iter()
        .map(|(moe, g)| part(if *moe { "MoE" } else { "dense" }.into(), g))
        .collect();
    format!(
        "Cross-validated median error by GPU generation: {}; by stack: {}; by model: {}.",
        gens.join(", "),
        stacks.join(", "),
        kinds.join(", ")
    )
}

fn pct(x: f64) -> String {
    format!("{x:+.1}%")
}

fn summary_table<K>(
    title: &str,
    head: &str,
    rows: &[(K, GroupStats)],
    name: impl Fn(&K) -> String,
) -> String {
    let mut s = format!("\n#### {title}\n\n| {head} | rows | cross-validated median | worst | in-sample median |\n|---|---:|---:|---:|---:|\n");
    for (k, g) in rows {
        s += &format!(
            "| {} | {} | {:.1}% | {} | {:.1}% |\n",
            name(k),
            g.rows,
            g.cv_median,
            pct(g.cv_worst),
            g.in_sample_median
        );
    }
    s
}

/// Each row's stack, sequence and cross-validated error (sequence_bands.rs).
pub fn row_errors(rows: &[ThroughputRow]) -> Vec<crate::sequence_bands::RowError> {
    rows.iter()
        .map(|r| crate::sequence_bands::RowError {
            stack: r.group.stack,
            seq: r.point.seq.0,
            percent: r.cross_validated_percent,
        })
        .collect()
}

/// docs/accuracy.md's generated part (`plan calibrate --markdown`).
pub fn markdown(c: &Coverage, rows: &[ThroughputRow]) -> String {
    let mut s = String::from("| row | group | measured tok/s/GPU | in-sample | cross-validated |\n|---|---|---:|---:|---:|\n");
    for r in rows {
        s += &format!(
            "| {} | {} | {:.0} | {} | {} |\n",
            r.id,
            r.group.name(),
            r.measured,
            pct(r.in_sample_percent),
            pct(r.cross_validated_percent)
        );
    }
    let t = &c.throughput;
    s += &format!(
        "\nrows: {}  cross-validated median |error|: {:.1}%  worst: {}  (in-sample median {:.1}%)\n",
        t.rows,
        t.cv_median,
        pct(t.cv_worst),
        t.in_sample_median
    );
    s += &summary_table(
        "By GPU generation",
        "generation",
        &stats_by(rows, |g| g.generation),
        |g| format!("{g:?}"),
    );
    s += &summary_table(
        "By parallel layout",
        "layout",
        &stats_by(rows, |g| g.layout),
        |l| format!("{l:?}"),
    );
    s += &summary_table("By stack", "stack", &stats_by(rows, |g| g.stack), |k| {
        crate::sequence_bands::stack_name(*k).to_string()
    });
    s += &crate::sequence_bands::markdown(&row_errors(rows));
    s += &crate::model_tables::parameters_markdown();
    s += &crate::model_tables::network_markdown();
    s += &crate::model_tables::kernels_markdown();
    s += &label_groups(c);
    s += &rows_left_out();
    s += &memory_markdown(c);
    s
}

/// The groups the page's labels use, each with its envelope and errors.
fn label_groups(c: &Coverage) -> String {
    let mut s = String::new();
    s += "\n#### Groups the page's labels use\n\nA plan of a group on one of its GPUs is \"calibrated\" inside the group's envelope (the sequences, micro-batches, GPU counts, model sizes (±10%) and precisions its rows ran, and every other setting a URL key sets: model shape and family, training kind, optimizer, checkpointing, offload, each parallel degree, overlap and MoE flags, attention kernel, loss, compile) and \"extrapolated\", with the axes named, outside it. A setting its rows never ran is named only when it moves the figure: if switching it to a value the rows did run leaves the figure within the group's worst cross-validated error (at least 5%), the label stays. The ± the page quotes is the larger of the worst under- and over-prediction (at least 5%), and only for groups of five rows or more of two models or more; a smaller group is \"calibrated\" without a ±, and a kind of plan no group ran names its own stack's error for scale.\n\n| group | rows (models) | envelope | cross-validated median | worst under | worst over | ± quoted |\n|---|---:|---|---:|---:|---:|---:|\n";
    for g in &c.groups {
        let e = &g.envelope;
        let quoted = if g.quotes_an_error() {
            format!("±{:.0}%", g.quoted_error() * 100.0)
        } else {
            "none".to_string()
        };
        s += &format!(
            "| {} | {} ({}) | seq {}–{}, mb {}–{}, {}–{} GPUs, {:.1}–{:.1} B, {} | {:.1}% | {} | {} | {} |\n",
            g.group.name(),
            g.rows,
            g.models,
            e.seq.0,
            e.seq.1,
            e.micro_batch.0,
            e.micro_batch.1,
            e.gpus.0,
            e.gpus.1,
            e.params.0 as f64 / 1e9,
            e.params.1 as f64 / 1e9,
            e.precisions.join("/"),
            g.cv_median,
            pct(g.cv_under),
            pct(g.cv_over),
            quoted
        );
    }
    s
}

/// Rows of the data the harness does not compare with, and why.
fn rows_left_out() -> String {
    let mut s = String::new();
    s += "\n#### Rows left out\n\n| row | why |\n|---|---|\n";
    for (id, why) in crate::calibration::excluded() {
        s += &format!("| {id} | {why} |\n");
    }
    for (id, why) in crate::calibration::hf_excluded() {
        s += &format!("| {id} (HF stack) | {why} |\n");
    }
    for (id, why) in crate::published::excluded() {
        s += &format!("| {id} (published_runs.csv) | {why} |\n");
    }
    s
}

/// The memory checks: the summary, the real-GPU rows one by one, the
/// oracle's groups and its held-out plans.
fn memory_markdown(c: &Coverage) -> String {
    let mut s = String::new();
    let (m, g) = (&c.memory_single_rank, &c.memory_gpu);
    s += &format!(
        "\n#### Memory\n\n| check | rows | median | worst |\n|---|---:|---:|---:|\n| HF Transformers, one GPU, FakeTensor-counted steps (in-sample) | {} | {:.2}% | {} |\n| real fine-tuning runs: HF Trainer + accelerate FSDP and torchtune on A100 80GB (peak allocated), Answer.AI's FSDP+QLoRA on 2 x RTX 3090 (peak reserved); out of sample | {} | {:.1}% | {} to {} |\n",
        m.rows, m.median, pct(m.worst), g.rows, g.median, pct(g.under), pct(g.over)
    );
    s += "\n#### Memory against torchtitan's published runs\n\nThe torchtitan stack's plans against the peaks (`max_reserved`) of torchtitan's published runs (data/published_runs.csv: H100 at 500 W, H200, B200, GB200), per layout; no memory parameter is fitted on them.\n\n| layout | rows | median | worst under | worst over |\n|---|---:|---:|---:|---:|\n";
    for (layout, st) in &c.memory_torchtitan {
        s += &format!(
            "| {layout} | {} | {:.1}% | {:+.1}% | {:+.1}% |\n",
            st.rows, st.median, st.under, st.over
        );
    }
    s += "\n| run | layout | measured GiB | predicted GiB | error |\n|---|---|---:|---:|---:|\n";
    for (layout, r) in torchtitan_memory_rows() {
        s += &format!(
            "| {} | {layout} | {:.1} | {:.1} | {} |\n",
            r.label,
            r.measured,
            r.predicted,
            pct(r.error_percent)
        );
    }
    s += &megatron_markdown(&c.memory_megatron);
    s += "\nThe real-GPU rows, one by one (predicted vs measured, GiB; HF001-HF021 peak allocated, HF064-HF073 peak reserved):\n\n| row | measured | predicted | error |\n|---|---:|---:|---:|\n";
    s += &rows_table(&gpu_memory_rows(), 1.0, pct);
    s += "\n#### Memory against the oracle (tools/oracle)\n\nIn-sample: the memory model was changed on these rows (the real-size rows below among them).\n\n| group | rows | median | worst under | worst over |\n|---|---:|---:|---:|---:|\n";
    for (group, st) in &c.memory_oracle {
        s += &format!(
            "| {group} | {} | {:.2}% | {:+.2}% | {:+.2}% |\n",
            st.rows, st.median, st.under, st.over
        );
    }
    let h = &c.memory_oracle_heldout;
    s += &format!(
        "\n#### Memory against the oracle's held-out plans\n\nOut of sample: plans the memory model was never changed on (OLMo 2, Qwen2.5-0.5B and Llama-3.2-3B widths, sequences of 1536-6144, micro-batches up to 3, up to 128 ranks; and five whole models at the presets' real shapes, below), measured after it was.\n\n| rows | median | worst under | worst over |\n|---:|---:|---:|---:|\n| {} | {:.2}% | {:+.2}% | {:+.2}% |\n",
        h.rows, h.median, h.under, h.over
    );
    s + &real_size_markdown()
}

/// The oracle's whole models at the presets' real shapes, row by row.
fn real_size_markdown() -> String {
    let rows: Vec<MemoryRow> = oracle_real_size_rows().into_iter().map(|r| r.row).collect();
    let held: Vec<MemoryRow> = oracle_heldout_rows()
        .into_iter()
        .filter(is_whole_model)
        .map(|r| r.row)
        .collect();
    let st = memory_stats(&rows);
    let h = memory_stats(&held);
    let s = format!(
        "\n#### Memory against the oracle at the presets' real sizes\n\nWhole models at the presets' real shapes (tools/oracle/rows.py's `real_sizes`), in the table, so the groups above and the labels' envelopes include them. In-sample: Llama-3.1-70B on 16 ranks changed the model (FSDP2's reduce-scatter at the end of backward, when every other layer's sharded gradient is kept, is a moment of its own); the rest were predicted before and after alike. {} rows: median {:.2}%, from {:+.2}% to {:+.2}%. Held out (`real_size_heldout`, never changed on): {} rows, median {:.2}%, from {:+.2}% to {:+.2}%.\n\n| row | measured GiB | predicted GiB | error |\n|---|---:|---:|---:|\n",
        st.rows, st.median, st.under, st.over, h.rows, h.median, h.under, h.over
    );
    let all: Vec<MemoryRow> = rows.into_iter().chain(held).collect();
    s + &rows_table(&all, (1u64 << 30) as f64, |e| format!("{e:+.2}%"))
}
