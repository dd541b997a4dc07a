//! NVIDIA's published throughput rows (data/calibration.csv) as cases: each
//! row's recipe, degrees and plan.

use crate::model::architecture::{Architecture, Mlp};
use crate::model::hardware;
use crate::model::layout::{Layout, Stages};
use crate::model::plan::{
    Activations, Checkpointing, Data, Implementation, ModelChoice, Numerics, Parallelism, Plan,
    Precision, Stack, TrainingSetup,
};
use crate::model::throughput::Fabric;

pub use crate::formats::table::{read_csv, Row};

/// The reference measurements, compiled in.
pub const CALIBRATION_CSV: &str = include_str!("../../../data/calibration.csv");

pub use crate::accuracy::case::Case;

pub(super) fn gpu_of(name: &str) -> Option<&'static hardware::Gpu> {
    let id = match name {
        "GB200" => "GB200 (B200 in NVL72)",
        "GB300" => "GB300 (B300 in NVL72)",
        "B200 (DGX)" => "B200",
        "B300 (DGX)" => "B300",
        "H100 80GB (DGX)" => "H100-80GB-SXM",
        "H100 96GB HBM2e 500W" => "H100-96GB-HBM2e-500W",
        "A100 80GB" => "A100-80GB",
        _ => return None,
    };
    hardware::gpu(id)
}

/// Rows with a measured tokens/s per GPU or step time, as cases: NVIDIA's
/// recipe tables, the papers and torchtitan's 2024 runs
/// (data/calibration.csv), then the other stacks' published runs
/// (data/published_runs.csv, `published`).
pub fn cases() -> Vec<Case> {
    let mut cases: Vec<Case> = read_csv(CALIBRATION_CSV).iter().filter_map(case).collect();
    cases.extend(crate::accuracy::published::cases());
    cases
}

/// Rows the model is not compared with, by id, and why.
pub fn excluded() -> Vec<(String, &'static str)> {
    read_csv(CALIBRATION_CSV)
        .iter()
        .filter(|r| case(r).is_none())
        .map(|r| {
            let why = if r.num("micro_batch").is_none() {
                "the source gives no micro-batch (Narayanan et al. 2021, Table 1), so neither the pipeline bubble nor the GEMM shapes are known"
            } else if gpu_of(r.get("gpu_type")).is_none() {
                "a GPU the catalogue does not have"
            } else {
                "no measured tokens/s or step time"
            };
            (r.get("id").to_string(), why)
        })
        .collect()
}

/// What follows each `KEY=` of the notes where `KEY` starts a word (so `EP=`
/// is not read inside `DEEP=`).
pub(super) fn after_key<'a>(notes: &'a str, key: &str) -> impl Iterator<Item = &'a str> {
    let pattern = format!("{key}=");
    let skip = pattern.len();
    let starts: Vec<usize> = notes.match_indices(&pattern).map(|(i, _)| i).collect();
    starts.into_iter().filter_map(move |i| {
        let starts_word = notes[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_');
        starts_word.then(|| &notes[i + skip..])
    })
}

/// A setting the notes state as `KEY=value` (`VP=5;`, `GA=64`,
/// `step_time_s=12.91`), read up to the first character that is not part of a number.
pub fn stated(notes: &str, key: &str) -> Option<f64> {
    after_key(notes, key).find_map(|rest| {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        crate::formats::decimal::parse_f64(rest[..end].trim_end_matches('.'))
    })
}

/// A word the notes state as `KEY=value` (`preset=gpt-oss-120b;`).
pub fn stated_word<'a>(notes: &'a str, key: &str) -> Option<&'a str> {
    let rest = after_key(notes, key).next()?;
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_'))
        .unwrap_or(rest.len());
    Some(rest[..end].trim_end_matches('.'))
}

/// A row's model: the preset its notes name (`preset=`, the MoE rows, whose
/// experts the columns cannot describe), else a dense Llama (SwiGLU) or GPT
/// (GELU) shape from its columns.
pub(super) fn row_architecture(r: &Row) -> Option<Architecture> {
    if let Some(id) = stated_word(r.get("notes"), "preset") {
        return crate::model::architecture::preset(id).map(|p| p.arch.clone());
    }
    let num = |k: &str| r.num(k).map(|x| x as u64);
    let llama = r.get("model").starts_with("Llama");
    Some(Architecture::dense(
        num("layers")?,
        num("hidden")?,
        num("heads")?,
        num("kv_heads")?,
        num("ffn")?,
        // GPT-3's vocabulary is padded to 51200 in NeMo.
        num("vocab").unwrap_or(51200),
        false,
        if llama { Mlp::Swiglu } else { Mlp::Gelu },
    ))
}

/// The row's recomputation; torchtitan's "selective" is its op-level policy.
pub(super) fn row_checkpointing(ac: &str, torchtitan: bool) -> Checkpointing {
    if ac.starts_with("full") {
        Checkpointing::Full
    } else if ac.starts_with("selective op") || (torchtitan && ac.starts_with("selective")) {
        Checkpointing::Op
    } else if ac.starts_with("selective") {
        Checkpointing::Selective
    } else {
        Checkpointing::None
    }
}

/// NVL72 racks share one NVLink domain; DGX nodes have 8 GPUs with one
/// 400 Gb/s NIC each (A100: 200 Gb/s). NCCL runs over their InfiniBand as
/// over p5's EFA: 4-node H100 all-reduces over 8 x 400G InfiniBand read
/// 331-366 GB/s (NVIDIA/nccl-tests#309; aigatech/vpbenchmarking), p5's
/// 357 (data/nccl_tests.csv), so p5's fitted figures are taken.
pub(super) fn row_fabric(gpu: &hardware::Gpu) -> Fabric {
    let nvl72 = gpu.id.starts_with("GB");
    let nic = if gpu.id.starts_with("A100") {
        25e9
    } else {
        50e9
    };
    let p5 = hardware::instance(hardware::NCCL_REFERENCE)
        .and_then(|i| i.nccl)
        .expect("p5 has measured NCCL figures");
    let network = crate::model::fabric::Network::measured(&p5, nic);
    Fabric::new(gpu, if nvl72 { 72 } else { 8 }, network)
}

/// What the run's recipe set beyond the table, from the `recipe_*` columns
/// (read from each recipe at the table's release; `recipe_source` says
/// where): recomputation, activation offloading, FP8 parameters, the
/// gradients' dtype, the Adam moments' dtype, TP, DP and EP overlap and
/// the fused loss. "not found" leaves recomputation to the
/// table's own column; an empty column is Megatron's default.
pub(super) struct Recipe {
    pub(super) checkpointing: Option<Checkpointing>,
    pub(super) offload_layers: Option<u64>,
    fp8_params: bool,
    grad_bf16: bool,
    pub(super) tp_overlap: bool,
    pub(super) fused_loss: bool,
    pub(super) dp_overlap: bool,
    pub(super) ep_overlap: bool,
    /// DeepEP or HybridEP (`recipe_moe_dispatcher`), not the all-to-all one.
    pub(super) moe_flex: bool,
    /// `recipe_cuda_graph_scope` names the router and its preprocessing.
    pub(super) moe_graphs: bool,
    bf16_moments: bool,
    /// `selective:mla_up_proj,moe_act`'s modules (Megatron's `--recompute-modules`:
    /// exactly those; `core_attn` only when named).
    pub(super) modules: crate::model::plan::RecomputeModules,
}

impl Recipe {
    /// `stage_layers`: the decoder layers per pipeline stage, over which
    /// Megatron's `full:N` (block method) recomputes N.
    pub(super) fn of(r: &Row, stage_layers: u64) -> Recipe {
        let recompute = r.get("recipe_recompute");
        let checkpointing = match recompute.split(':').collect::<Vec<_>>()[..] {
            ["none"] => Some(Checkpointing::None),
            ["full"] => Some(Checkpointing::Full),
            ["full", n] => crate::formats::decimal::parse_f64(n)
                .map(|n| Checkpointing::Fraction((n / stage_layers.max(1) as f64).min(1.0))),
            // Megatron's selective: the modules a `selective:` list names
            // (`Recipe::modules`; the attention core alone with no list).
            ["selective", ..] => Some(Checkpointing::Selective),
            _ => None,
        };
        Recipe {
            checkpointing,
            offload_layers: r.num("recipe_offload_layers").map(|n| n as u64),
            fp8_params: r.get("recipe_fp8_params") == "1",
            grad_bf16: r.get("recipe_grad_reduce") == "bf16",
            tp_overlap: r.get("recipe_tp_overlap") == "1",
            fused_loss: r.get("recipe_loss") == "fused",
            // Overlapped unless the recipe says otherwise (NVIDIA's do).
            dp_overlap: r.get("recipe_dp_overlap") != "0",
            ep_overlap: r.get("recipe_ep_overlap") == "1",
            moe_flex: matches!(r.get("recipe_moe_dispatcher"), "hybridep" | "deepep"),
            moe_graphs: r.get("recipe_cuda_graph_scope").contains("moe_router"),
            bf16_moments: r.get("recipe_moments") == "bf16",
            modules: recompute
                .strip_prefix("selective:")
                .and_then(crate::model::plan::RecomputeModules::from_key)
                .unwrap_or_default(),
        }
    }

    /// The recipe's settings on `plan`.
    pub(super) fn apply(&self, plan: &mut Plan) {
        if let Some(c) = self.checkpointing {
            plan.activations.checkpointing = c;
        }
        plan.activations.offload = self.offload_layers.is_some();
        plan.activations.offload_layers = self.offload_layers;
        plan.numerics.grad_bf16 = self.grad_bf16;
        plan.numerics.fp8_params = self.fp8_params;
        plan.parallelism.tp_overlap = self.tp_overlap;
        plan.parallelism.overlap = self.dp_overlap;
        plan.parallelism.ep_overlap = self.ep_overlap;
        plan.moe.moe_flex = self.moe_flex;
        plan.moe.moe_graphs = self.moe_graphs;
        plan.numerics.bf16_moments = self.bf16_moments;
        plan.activations.recompute_modules = self.modules;
        if self.fused_loss {
            plan.implementation.loss = crate::model::plan::Loss::Fused;
        }
    }
}

/// A row's GPUs and parallel degrees (`EP=`, `VP=` and an explicit
/// pipeline layout's `pp_first=` / `pp_last=` from its notes).
pub(super) struct Degrees {
    pub(super) gpus: u64,
    pub(super) tp: u64,
    pub(super) pp: u64,
    pub(super) cp: u64,
    pub(super) dp: u64,
    pub(super) ep: u64,
    pub(super) vp: u64,
    pub(super) pp_first: Option<u64>,
    pub(super) pp_last: Option<u64>,
}

impl Degrees {
    pub(super) fn of(r: &Row) -> Option<Degrees> {
        let notes = r.get("notes");
        let note = |k: &str| stated(notes, k).map(|v| v as u64);
        let gpus = r.num("gpus")? as u64;
        let [tp, pp, cp] = ["tp", "pp", "cp"].map(|k| r.num(k).unwrap_or(1.0) as u64);
        Some(Degrees {
            gpus,
            tp,
            pp,
            cp,
            dp: gpus / (tp * pp * cp),
            ep: note("EP").unwrap_or(1),
            vp: note("VP").unwrap_or(1),
            pp_first: note("pp_first"),
            pp_last: note("pp_last"),
        })
    }

    /// The split Megatron runs: the explicit layout where the notes give
    /// one (DeepSeek-V3's `pipeline_model_parallel_layout`), else its own.
    pub(super) fn layout(&self, layers: u64, gpu: &hardware::Gpu) -> Layout {
        let d = self;
        let stages = match (d.pp_first, d.pp_last) {
            (None, None) => Stages::megatron(layers, d.pp, d.vp),
            _ => Stages::explicit(layers, d.pp, d.pp_first, d.pp_last),
        };
        Layout {
            gpus: d.gpus,
            tp: d.tp,
            pp: d.pp,
            cp: d.cp,
            ep: d.ep,
            dp: d.dp,
            shard: d.dp,
            stages: stages.unwrap_or(Stages::even(layers, d.pp)),
            fp8_tn_only: gpu.fp8_tn_only,
        }
    }
}

/// The row's run as a plan: its batch, precision, sharding and degrees, the
/// table's recomputation, then what its recipe set.
pub(super) fn row_plan(r: &Row, layers: u64, d: &Degrees) -> Option<Plan> {
    let id = r.get("id");
    let notes = r.get("notes");
    let (seq, mb, gb) = (
        r.num("seq_len")? as u64,
        r.num("micro_batch")? as u64,
        r.num("global_batch")? as u64,
    );
    let torchtitan = id.starts_with("tt_");
    let fsdp = r.get("zero_or_fsdp");
    let ac = r.get("activation_checkpointing");
    let mut plan = Plan {
        parallelism: Parallelism {
            pp_first: d.pp_first,
            pp_last: d.pp_last,
            zero: if fsdp.contains("FSDP") && !fsdp.contains("FSDP=0") {
                3
            } else {
                1
            },
            tp: d.tp,
            sp: d.tp > 1 && !ac.contains("no SP"),
            pp: d.pp,
            vp: d.vp,
            cp: d.cp,
            ep: d.ep,
            ..Parallelism::default()
        },
        data: Data {
            seq,
            micro_batch: mb,
            grad_accum: (gb / (mb * d.dp)).max(1),
            ..Data::default()
        },
        numerics: Numerics {
            precision: if r.get("precision").starts_with("FP8") {
                Precision::Fp8
            } else {
                Precision::Bf16
            },
            ..Numerics::default()
        },
        activations: Activations {
            checkpointing: row_checkpointing(ac, torchtitan),
            ..Activations::default()
        },
        implementation: Implementation {
            // The 2021-22 Megatron papers predate flash attention: their attention
            // materialises the scores (that is what selective recomputation drops).
            attention: if id.starts_with("korthikanti") || id.starts_with("megatron21") {
                crate::model::plan::Attention::Eager
            } else if torchtitan {
                // torchtitan's 2024 runs predate its cuDNN attention
                // (pytorch/torchtitan#1000, March 2025): SDPA ran FlashAttention-2.
                crate::model::plan::Attention::Fa2
            } else {
                crate::model::plan::Attention::Flash
            },
            stack: if torchtitan {
                Stack::Torchtitan
            } else {
                Stack::Megatron
            },
            // torchtitan's rows say where they ran torch.compile.
            compile: notes.contains("compile") && !notes.contains("no compile"),
            ..Implementation::default()
        },
        training: TrainingSetup {
            mtp: stated(notes, "MTP").map_or(0, |v| v as u64),
            ..TrainingSetup::default()
        },
        model: ModelChoice::custom(),
        ..Plan::default()
    };
    Recipe::of(r, layers / d.pp.max(1)).apply(&mut plan);
    Some(plan)
}

pub(super) fn case(r: &Row) -> Option<Case> {
    let gpu = gpu_of(r.get("gpu_type"))?;
    let arch = row_architecture(r)?;
    let d = Degrees::of(r)?;
    let plan = row_plan(r, arch.layers, &d)?;
    let step = stated(r.get("notes"), "step_time_s");
    let measured = match (r.num("measured_tokens_per_s_per_gpu"), step) {
        (Some(t), _) => t,
        (None, Some(st)) => r.num("global_batch")? * plan.data.seq as f64 / st / d.gpus as f64,
        _ => return None,
    };
    Some(Case {
        id: r.get("id").to_string(),
        layout: d.layout(arch.layers, gpu),
        arch,
        plan,
        gpu,
        fabric: row_fabric(gpu),
        measured_tokens_per_s_per_gpu: measured,
        measured_step_seconds: step,
        recipe_found: r.get("recipe_recompute") != "not found",
        family: crate::accuracy::case::model_family(r.get("model")),
    })
}
