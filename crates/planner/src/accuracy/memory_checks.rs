//! The memory model against measurements: Hugging Face steps counted on
//! one GPU, the memory oracle's FakeTensor table and its held-out plans,
//! real fine-tuning runs on GPUs, torchtitan's published peaks and
//! Megatron-LM's CI runs, each row with its error, and their statistics.

use crate::accuracy::calibration::read_csv;
use crate::accuracy::coverage::MemoryStats;
use crate::accuracy::coverage::{median, under_over, worst};
use crate::accuracy::envelope::Envelope;
use crate::model::architecture::{Architecture, Mlp};
use crate::model::layout::{Layout, Stages};
use crate::model::memory::{breakdown, CUDA_CONTEXT_BYTES};
use crate::model::plan::{
    Activations, Attention, Checkpointing, Data, Implementation, Numerics, Optimizer, Parallelism,
    Plan, Precision, TrainingSetup,
};
use serde::Deserialize;

// ---- memory ----------------------------------------------------------------------

/// The 120 FakeTensor-counted steps (../shared/data/memory_examples.csv).
pub const MEMORY_EXAMPLES_CSV: &str = include_str!("../../data/memory_examples.csv");

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

impl MemoryRow {
    /// A row with its percent error, `(predicted - measured) / measured`.
    pub fn new(label: String, measured: f64, predicted: f64, point: Envelope) -> MemoryRow {
        MemoryRow {
            label,
            measured,
            predicted,
            error_percent: 100.0 * (predicted - measured) / measured,
            point,
        }
    }
}

fn memory_row_plan(r: &crate::accuracy::calibration::Row) -> Option<(Architecture, Plan)> {
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
        parallelism: Parallelism {
            zero: 0,
            ..Parallelism::default()
        },
        data: Data {
            micro_batch: n("b")?,
            seq: n("s")?,
            grad_accum: 1,
            ..Data::default()
        },
        numerics: Numerics {
            precision: match r.get("precision") {
                "mixed" => Precision::Bf16,
                "bf16" => Precision::Bf16Pure,
                "fp32" => Precision::Fp32,
                _ => return None,
            },
            ..Numerics::default()
        },
        activations: Activations {
            checkpointing: if r.get("ac") == "1" {
                Checkpointing::Full
            } else {
                Checkpointing::None
            },
            ..Activations::default()
        },
        implementation: Implementation {
            attention: match r.get("attn") {
                "auto" | "sdpa" => Attention::Flash,
                // SDPA's math backend materialises the scores like eager attention.
                "eager" | "math" => Attention::Eager,
                _ => return None,
            },
            ..Implementation::default()
        },
        training: TrainingSetup {
            optimizer: if r.get("optim") == "adamw_foreach" {
                Optimizer::AdamwForeach
            } else {
                Optimizer::Adamw
            },
            ..TrainingSetup::default()
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
            let m = breakdown(&arch, &arch.parameter_counts(), &plan.recipe(), &one);
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
            Some(MemoryRow::new(
                label,
                measured,
                predicted,
                Envelope::point(&plan, &arch, 1),
            ))
        })
        .collect()
}

/// The memory oracle's table (tools/oracle, written by `./dev oracle`): real
/// Hugging Face models trained two steps under FakeTensorMode by the bundle's
/// own train.py, one rank of FSDP2 over a fake process group, every storage
/// counted as the CUDA caching allocator rounds it.
pub const ORACLE_MEMORY_JSONL: &str = include_str!("../../data/oracle_memory.jsonl");

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
    pub phase: crate::model::memory::Phase,
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
pub(crate) fn is_whole_model(r: &OracleRow) -> bool {
    r.row.label.contains("-layers,world=")
}

/// Plans the memory model was never changed on (tools/oracle/rows.py's
/// `heldout`: OLMo 2, Qwen2.5-0.5B and Llama-3.2-3B widths, new sequence
/// lengths, micro-batches and world sizes), measured after it was (#25):
/// the oracle's out-of-sample error.
pub const ORACLE_HELDOUT_JSONL: &str = include_str!("../../data/oracle_heldout.jsonl");

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
            let arch = crate::model::architecture::from_hf_config(&config.to_string()).ok()?;
            let plan = oracle_plan(&r);
            // train.py's layout: tensor parallel inside, data parallel across (rows.py `tp`).
            let tp = plan.parallelism.tp.max(1);
            let layout = Layout {
                gpus: r.world,
                tp,
                pp: 1,
                cp: 1,
                ep: 1,
                dp: r.world / tp,
                shard: plan.parallelism.shard.unwrap_or(r.world / tp),
                stages: Stages::even(arch.layers, 1),
                fp8_tn_only: true,
            };
            let m = breakdown(&arch, &arch.parameter_counts(), &plan.recipe(), &layout);
            let predicted = m.allocated_peak_bytes as f64;
            let sharding = match (plan.training.train, plan.parallelism.zero, r.world) {
                _ if !plan.training.stage.next_token_loss() => plan.training.stage.key(),
                _ if tp > 1 => "tp",
                (crate::model::plan::Training::Full, _, 1) => "single",
                (crate::model::plan::Training::Full, 1, _) => "zero1",
                (crate::model::plan::Training::Full, 2, _) => "zero2",
                (crate::model::plan::Training::Full, 3, _) => "zero3",
                (crate::model::plan::Training::Full, _, _) => "ddp",
                _ => "lora",
            };
            Some(OracleRow {
                row: MemoryRow::new(
                    r.id.clone(),
                    r.peak_bytes,
                    predicted,
                    Envelope::point(&plan, &arch, r.world),
                ),
                sharding,
                checkpointing: plan.activations.checkpointing.key().into_owned(),
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
/// weights, the QLoRA rows bf16 AMP on an NF4 base, rank 16 on q, k, v and
/// o; Llama-2-70B as Llama 3.1 70B's shape with Llama 2's 32,000-token
/// vocabulary.
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
        "model=mistral-7b-v0.1&precision=bf16-pure&train=lora&mb=2&zero=3&gpu_count=2&lora_targets=attention",
    ),
    (
        "HF005",
        "model=mistral-7b-v0.1&precision=bf16&train=qlora&mb=2&zero=3&gpu_count=2&lora_targets=attention",
    ),
    (
        "HF006",
        "model=mixtral-8x7b&precision=bf16-pure&train=lora&mb=2&zero=3&gpu_count=2&lora_targets=attention",
    ),
    (
        "HF007",
        "model=mixtral-8x7b&precision=bf16&train=qlora&mb=2&zero=3&gpu_count=2&lora_targets=attention",
    ),
    (
        "HF008",
        "model=llama-2-70b&precision=bf16&train=qlora&mb=2&zero=3&gpu_count=2&lora_targets=attention",
    ),
    // torchtune's single-device full fine-tune (a second source): BF16
    // weights and AdamW states (`dtype: bf16`), packed 2 x 4,096 tokens, no
    // checkpointing, its plain cross-entropy; `peak_memory_active`.
    (
        "HF021",
        "model=llama-3.2-3b&precision=bf16-pure&mb=2&zero=0&gpu_count=1&ckpt=none",
    ),
];

/// The real-GPU rows the memory model was changed on (#55): the QLoRA runs
/// under autocast (their FP32 residual stream, HF005, HF007, HF008), the
/// pure-BF16 ones (a BF16 stream, HF064, HF065, HF068, HF069, HF072;
/// `memory::qlora_fp32_residual`) and the two runs the allocator's cached
/// share was measured on (HF066, HF067, data/allocator_caching.csv). Their
/// error is in-sample.
pub const IN_SAMPLE_GPU_MEMORY_ROWS: &[&str] = &[
    "HF005", "HF007", "HF008", "HF064", "HF065", "HF066", "HF067", "HF068", "HF069", "HF072",
];

/// The real-GPU rows the memory model was never changed on, and their error.
pub fn out_of_sample_gpu_memory() -> MemoryStats {
    let rows: Vec<MemoryRow> = gpu_memory_rows()
        .into_iter()
        .filter(|r| !IN_SAMPLE_GPU_MEMORY_ROWS.contains(&r.label.as_str()))
        .collect();
    memory_stats(&rows)
}

/// Real runs on a code path the planner does not plan, with why: shown
/// with their error in docs/accuracy.md, kept out of the statistics and the
/// labels. HF009 ran fms-acceleration's own bitsandbytes plugin
/// (`accelerated-peft-bnb`), which skips PEFT's FP32 upcast of the
/// unquantized parameters (its README: "fix upcasting ... for bnb plugin");
/// the planner's QLoRA is PEFT's `prepare_model_for_kbit_training` path,
/// FP32 residual stream and all (HF005, HF007, HF008 ran it).
pub const OFF_PATH_GPU_MEMORY_ROWS: &[(&str, &str, &str)] = &[(
    "HF009",
    "model=llama-2-70b&precision=bf16&train=qlora&mb=4&zero=0&gpu_count=1&lora_targets=attention",
    "fms-acceleration's bitsandbytes plugin keeps the residual stream in BF16 (no FP32 upcast); the planner plans PEFT's path",
)];

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

/// What every RESERVED_GPU_MEMORY_ROWS plan shares: Llama-2-7B on two 24 GB
/// RTX 3090s (71 TFLOP/s BF16, 936 GB/s), LoRA rank 64.
const RTX3090_COMMON: &str = "model=llama-2-7b&instance=custom&gpu_mem=24&gpu_bf16=71&gpu_fp8=0&gpu_bw=0.936&gpu_count=2&precision=bf16-pure&lora_rank=64&lora_targets=q_proj,k_proj,v_proj,gate_proj,up_proj,down_proj&lora_dtype=bf16&ckpt=full&attn=flash&loss=plain&optimizer=adamw&stack=hf&ga=1";

/// Which peak a real-GPU row measured.
#[derive(Clone, Copy)]
enum Peak {
    /// torch's peak allocated (or torchtune's peak active): `allocated_peak_bytes`.
    Allocated,
    /// torch's peak reserved: the planner's peak without the CUDA context
    /// (the workspaces counted in: cuBLAS's are the caching allocator's).
    Reserved,
}

/// The real-GPU rows against the planner's peak of the kind each measured.
pub fn gpu_memory_rows() -> Vec<MemoryRow> {
    let csv = read_csv(crate::accuracy::calibration::HF_STACK_CSV);
    let allocated = GPU_MEMORY_ROWS
        .iter()
        .map(|(id, q)| (*id, format!("{GPU_MEMORY_COMMON}&{q}"), Peak::Allocated));
    let reserved = RESERVED_GPU_MEMORY_ROWS
        .iter()
        .map(|(id, q)| (*id, format!("{RTX3090_COMMON}&{q}"), Peak::Reserved));
    allocated
        .chain(reserved)
        .filter_map(|(id, query, peak)| gpu_memory_row(&csv, id, &query, peak))
        .collect()
}

/// OFF_PATH_GPU_MEMORY_ROWS against the planner, each with its reason.
pub fn off_path_gpu_memory_rows() -> Vec<(MemoryRow, &'static str)> {
    let csv = read_csv(crate::accuracy::calibration::HF_STACK_CSV);
    OFF_PATH_GPU_MEMORY_ROWS
        .iter()
        .filter_map(|(id, q, why)| {
            let query = format!("{GPU_MEMORY_COMMON}&{q}");
            Some((gpu_memory_row(&csv, id, &query, Peak::Allocated)?, *why))
        })
        .collect()
}

/// One real-GPU row: its measured peak (hf_stack_throughput.csv's
/// `peak_mem_gib`) against the planner's of the kind `peak` names.
fn gpu_memory_row(
    csv: &[crate::formats::table::Row],
    id: &str,
    query: &str,
    peak: Peak,
) -> Option<MemoryRow> {
    let row = csv.iter().find(|r| r.get("id") == id)?;
    let field = row.get("peak_mem_gib");
    let measured: f64 = field.split_whitespace().next()?.parse().ok()?;
    let plan = Plan::from_query(query).plan;
    let (mem, arch, gpus) = memory_of(&plan);
    let bytes = match peak {
        Peak::Allocated => mem.allocated_peak_bytes,
        Peak::Reserved => mem.peak_bytes - CUDA_CONTEXT_BYTES,
    };
    let predicted = bytes as f64 / (1u64 << 30) as f64;
    Some(MemoryRow::new(
        id.to_string(),
        measured,
        predicted,
        Envelope::point(&plan, &arch, gpus),
    ))
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
    read_csv(crate::accuracy::published::PUBLISHED_RUNS_CSV)
        .iter()
        .filter(|r| r.get("stack") == "torchtitan" && r.num("peak_gib").is_some())
        .filter(|r| r.num("seq").is_some_and(|s| s <= 131_072.0))
        .filter_map(|r| {
            let c = crate::accuracy::published::case_of(r.get("id"))?;
            let plan = Plan::from_query(&c.link()).plan;
            let (mem, arch, gpus) = memory_of(&plan);
            let measured = r.num("peak_gib")?;
            let reserved = mem.peak_bytes - CUDA_CONTEXT_BYTES;
            let predicted = reserved as f64 / (1u64 << 30) as f64;
            let row = MemoryRow::new(
                c.id.clone(),
                measured,
                predicted,
                Envelope::point(&plan, &arch, gpus),
            );
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
            let (res, _) = crate::model::resolve::resolve(&plan);
            let mem = crate::model::memory::last_stage_breakdown(
                &res.arch,
                &res.counts,
                &res.recipe,
                &res.layout,
            );
            let measured = r.num("measured_max_allocated_bytes")? / (1u64 << 30) as f64;
            let predicted = mem.allocated_peak_bytes as f64 / (1u64 << 30) as f64;
            Some(MemoryRow::new(
                r.get("id").to_string(),
                measured,
                predicted,
                Envelope::point(&plan, &res.arch, res.layout.gpus),
            ))
        })
        .collect()
}

/// Megatron-LM's CI memory runs, compiled in.
pub const MEGATRON_CI_MEMORY_CSV: &str = include_str!("../../data/megatron_ci_memory.csv");

/// A plan's memory breakdown, parameters and GPUs, as the page's report has
/// them (the harness stays below `evaluate`, which reads its labels).
fn memory_of(plan: &Plan) -> (crate::model::memory::MemoryBreakdown, Architecture, u64) {
    let (r, _) = crate::model::resolve::resolve(plan);
    (r.memory(), r.arch, r.layout.gpus)
}

/// torchtitan's memory rows' errors per layout.
pub(crate) fn torchtitan_groups(rows: &[(&'static str, MemoryRow)]) -> Vec<(String, MemoryStats)> {
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

pub(crate) fn memory_stats(rows: &[MemoryRow]) -> MemoryStats {
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
