//! Published runs of other stacks than NVIDIA's recipe tables (#35):
//! torchtitan, NeMo AutoModel, OLMo-core and the Megatron-LM README
//! (data/published_2026/, copies of ../shared/data/published_2026/), each
//! row's full configuration in data/published_runs.csv: what the table
//! printed, and in its `inferred` column everything read from the run's own
//! configuration at the source's commit, with file and line. A test holds
//! every measured figure there to the printed one in the copied table.

use crate::accuracy::case::Case;
use crate::formats::table::{read_csv, Row};
use crate::model::architecture::{preset, Architecture, Mlp};
use crate::model::fabric::{Fabric, Network};
use crate::model::hardware;
use crate::model::layout::{Layout, Stages};
use crate::model::plan::{
    Activations, Attention, Checkpointing, Data, Implementation, Lora, ModelChoice, Numerics,
    Parallelism, Plan, Precision, Stack, Training, TrainingSetup,
};

/// The normalised runs, compiled in.
pub const PUBLISHED_RUNS_CSV: &str = include_str!("../../data/published_runs.csv");

/// The runs compared with (`use` = yes, with a measured tokens/s per GPU), as cases.
pub fn cases() -> Vec<Case> {
    read_csv(PUBLISHED_RUNS_CSV)
        .iter()
        .filter(|r| r.get("use") == "yes")
        .filter_map(case)
        .collect()
}

/// One run as a case, whether or not it is compared (`use`): the
/// power-limited B200 runs are compared only with each other, as speed-ups.
pub fn case_of(id: &str) -> Option<Case> {
    read_csv(PUBLISHED_RUNS_CSV)
        .iter()
        .find(|r| r.get("id") == id)
        .and_then(case)
}

/// The runs left out, by id, with the reason their row gives.
pub fn excluded() -> Vec<(String, String)> {
    read_csv(PUBLISHED_RUNS_CSV)
        .iter()
        .filter(|r| r.get("use") != "yes")
        .map(|r| (r.get("id").to_string(), r.get("use").to_string()))
        .collect()
}

/// A preset's shape, or `custom:layers/hidden/heads/kv_heads/ffn/vocab/mlp`.
pub fn architecture(model: &str) -> Option<Architecture> {
    let Some(shape) = model.strip_prefix("custom:") else {
        return preset(model).map(|p| p.arch.clone());
    };
    let f: Vec<&str> = shape.split('/').collect();
    let n = |i: usize| -> Option<u64> { f.get(i)?.parse().ok() };
    let mlp = match *f.get(6)? {
        "gelu" => Mlp::Gelu,
        _ => Mlp::Swiglu,
    };
    Some(Architecture::dense(
        n(0)?,
        n(1)?,
        n(2)?,
        n(3)?,
        n(4)?,
        n(5)?,
        false,
        mlp,
    ))
}

fn precision(name: &str) -> Option<Precision> {
    Some(match name {
        "bf16" => Precision::Bf16,
        "fp8" => Precision::Fp8,
        "mxfp8" => Precision::Mxfp8,
        "nvfp4" => Precision::Nvfp4,
        _ => return None,
    })
}

fn checkpointing(name: &str) -> Checkpointing {
    match name {
        "full" => Checkpointing::Full,
        "op" => Checkpointing::Op,
        "selective" => Checkpointing::Selective,
        _ => Checkpointing::None,
    }
}

/// A column's whole number (1 where empty).
fn int(r: &Row, key: &str) -> u64 {
    r.num(key).map_or(1, |v| v as u64).max(1)
}

/// The run as a plan: its stack, kernels, batch, precision, sharding and
/// degrees as its row states them.
fn plan(r: &Row) -> Option<Plan> {
    let (tp, fsdp, replicate) = (int(r, "tp"), int(r, "fsdp"), int(r, "replicate"));
    Some(Plan {
        parallelism: Parallelism {
            zero: if fsdp > 1 { 3 } else { 1 },
            shard: (replicate > 1).then_some(fsdp),
            tp,
            sp: tp > 1,
            pp: int(r, "pp"),
            vp: int(r, "vp"),
            cp: int(r, "cp"),
            ep: int(r, "ep"),
            tp_overlap: r.get("async_tp") == "1",
            ..Parallelism::default()
        },
        data: Data {
            seq: r.num("seq")? as u64,
            micro_batch: r.num("mb")? as u64,
            grad_accum: int(r, "ga"),
            ..Data::default()
        },
        numerics: Numerics {
            precision: precision(r.get("precision"))?,
            fp8_params: r.get("fp8_all_gather") == "1",
            ..Numerics::default()
        },
        activations: Activations {
            checkpointing: checkpointing(r.get("ckpt")),
            ..Activations::default()
        },
        implementation: Implementation {
            stack: Stack::from_key(r.get("stack"))?,
            compile: r.get("fused") == "1",
            loss: match r.get("loss") {
                "fused" => crate::model::plan::Loss::Fused,
                _ => crate::model::plan::Loss::Plain,
            },
            attention: match r.get("attn") {
                "fa2" => Attention::Fa2,
                "cudnn" => Attention::Cudnn,
                _ => Attention::Flash,
            },
        },
        training: TrainingSetup {
            train: Training::from_key(r.get("train")).unwrap_or(Training::Full),
            ..TrainingSetup::default()
        },
        // NeMo AutoModel's LoRA recipes: rank 16 on every Linear (`match_all_linear`).
        lora: Lora {
            lora_rank: r.num("lora_rank").map_or(16, |v| v as u64),
            ..Lora::default()
        },
        model: ModelChoice::custom(),
        ..Plan::default()
    })
}

/// The run's GPUs and how they were split.
fn layout(r: &Row, p: &Plan, layers: u64, gpu: &hardware::Gpu) -> Option<Layout> {
    let gpus = r.num("gpus")? as u64;
    let dp = gpus / (p.parallelism.tp * p.parallelism.pp * p.parallelism.cp).max(1);
    // As resolve splits them: Megatron's way, torchtitan's as evenly as they go.
    let stages = match p.implementation.stack {
        Stack::Megatron => Stages::megatron(layers, p.parallelism.pp, p.parallelism.vp)
            .unwrap_or(Stages::even(layers, p.parallelism.pp)),
        _ => Stages::even(layers, p.parallelism.pp),
    };
    Some(Layout {
        gpus,
        tp: p.parallelism.tp,
        pp: p.parallelism.pp,
        cp: p.parallelism.cp,
        ep: p.parallelism.ep,
        dp,
        shard: p.parallelism.shard.unwrap_or(dp),
        stages,
        fp8_tn_only: gpu.fp8_tn_only,
    })
}

/// The run's links: its node's NVLink (a GB200 rack's 72 GPUs share one
/// domain), and 400 Gb/s of network per GPU (Grand Teton's RoCE, DGX
/// InfiniBand, WhiteFiber's RDMA, GB200's NICs: every source states 8 x 400G
/// per node or 400 Gb/s per GPU) as NCCL used p5's 3,200 Gb/s
/// (hardware.json `nccl`, tests/network.rs).
fn fabric(gpu: &hardware::Gpu, per_node: u64) -> Option<Fabric> {
    let p5 = hardware::instance(hardware::NCCL_REFERENCE)?.nccl?;
    let domain = if gpu.id.starts_with("GB") {
        72
    } else {
        per_node
    };
    Some(Fabric::new(gpu, domain, Network::measured(&p5, 50e9)))
}

fn case(r: &Row) -> Option<Case> {
    let gpu = hardware::gpu(r.get("gpu"))?;
    let arch = architecture(r.get("model"))?;
    let plan = plan(r)?;
    let layout = layout(r, &plan, arch.layers, gpu)?;
    Some(Case {
        id: r.get("id").to_string(),
        fabric: fabric(gpu, int(r, "gpus_per_node"))?,
        measured_tokens_per_s_per_gpu: r.num("measured_tokens_per_s_per_gpu")?,
        measured_step_seconds: None,
        recipe_found: true,
        family: crate::accuracy::case::model_family(r.get("model")),
        arch,
        plan,
        layout,
        gpu,
    })
}
