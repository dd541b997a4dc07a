//! The Hugging Face-stack throughput rows (data/hf_stack_throughput.csv) as
//! cases.

use crate::model::architecture::{Architecture, Mlp};
use crate::model::hardware;
use crate::model::layout::{Layout, Stages};
use crate::model::plan::{
    Activations, Checkpointing, Data, Implementation, ModelChoice, Numerics, Parallelism, Plan,
    Precision, Stack, TrainingSetup,
};

use super::rows::*;

/// Published throughput of the Hugging Face stack our export runs
/// (../shared/data/hf_stack_throughput.csv, copied to data/).
pub const HF_STACK_CSV: &str = include_str!("../../../data/hf_stack_throughput.csv");

/// The Hugging Face-stack rows that give tokens/s per GPU with a full
/// configuration and high trust (HF Trainer + accelerate FSDP on A100 80GB),
/// as cases. Pure-bf16 rows train without fp32 master weights; QLoRA rows use
/// bf16 autocast on an NF4 base.
pub fn hf_cases() -> Vec<Case> {
    read_csv(HF_STACK_CSV).iter().filter_map(hf_case).collect()
}

/// Hugging Face-stack rows not compared with, and why.
pub fn hf_excluded() -> Vec<(String, String)> {
    read_csv(HF_STACK_CSV)
        .iter()
        .filter(|r| hf_case(r).is_none())
        .map(|r| {
            let unit = r.get("measured_unit");
            let why = if !unit.starts_with("tokens/s/GPU") {
                format!(
                    "measured as `{}`, not tokens/s per GPU of a stated configuration",
                    unit.split(' ').take(4).collect::<Vec<_>>().join(" ")
                )
            } else if r.get("trust") != "high" {
                format!("trust `{}` (see its notes)", r.get("trust"))
            } else {
                format!("GPU `{}`", r.get("gpu"))
            };
            (r.get("id").to_string(), why)
        })
        .collect()
}

/// The architecture a row's model names: two presets, and Llama 2 70B by
/// its Hugging Face config (no preset).
fn hf_row_architecture(model: &str) -> Option<Architecture> {
    Some(if model.contains("Mistral-7B-v0.1") {
        crate::model::architecture::preset("mistral-7b-v0.1")?
            .arch
            .clone()
    } else if model.contains("Mixtral-8x7B") {
        crate::model::architecture::preset("mixtral-8x7b")?
            .arch
            .clone()
    } else if model.contains("Llama-2-70b") {
        // Llama 2 70B (its Hugging Face config): GQA with 8 kv heads, 32K vocabulary.
        Architecture::dense(80, 8192, 64, 8, 28672, 32000, false, Mlp::Swiglu)
    } else {
        return None;
    })
}

/// What a row's `train_type` trains, and its adapters: "LoRA r=16
/// (alpha16, q/k/v/o)" is rank 16 on the attention's four Linears.
fn hf_row_adapters(kind: &str) -> (crate::model::plan::Training, crate::model::plan::Lora) {
    let lora = crate::model::plan::Lora {
        lora_rank: kind
            .split("r=")
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|r| r.parse().ok())
            .unwrap_or(16),
        lora_targets: if kind.contains("q/k/v/o") {
            crate::model::plan::LoraTargets::ATTENTION
        } else {
            crate::model::plan::LoraTargets::ALL_LINEAR
        },
        ..crate::model::plan::Lora::default()
    };
    let train = if kind.starts_with("QLoRA") {
        crate::model::plan::Training::Qlora
    } else if kind.starts_with("LoRA") {
        crate::model::plan::Training::Lora
    } else {
        crate::model::plan::Training::Full
    };
    (train, lora)
}

pub(super) fn hf_case(r: &Row) -> Option<Case> {
    let usable = r.get("trust") == "high"
        && r.get("measured_unit").starts_with("tokens/s/GPU")
        && r.get("gpu").starts_with("A100 80GB");
    if !usable {
        return None;
    }
    let arch = hf_row_architecture(r.get("model"))?;
    let (train, lora) = hf_row_adapters(r.get("train_type"));
    let gpus = r.num("gpus")? as u64;
    let mb = r.num("micro_batch")? as u64;
    let plan = Plan {
        parallelism: Parallelism {
            zero: 3,
            ..Parallelism::default()
        },
        data: Data {
            seq: r.num("seq_len")? as u64,
            micro_batch: mb,
            grad_accum: r.num("grad_accum").unwrap_or(1.0) as u64,
            ..Data::default()
        },
        numerics: Numerics {
            precision: if r.get("precision").starts_with("pure bf16") {
                Precision::Bf16Pure
            } else {
                Precision::Bf16
            },
            ..Numerics::default()
        },
        activations: Activations {
            checkpointing: Checkpointing::Full,
            ..Activations::default()
        },
        implementation: Implementation {
            stack: Stack::Hf,
            ..Implementation::default()
        },
        training: TrainingSetup {
            train,
            ..TrainingSetup::default()
        },
        lora,
        model: ModelChoice::custom(),
        ..Plan::default()
    };
    let layout = Layout {
        gpus,
        tp: 1,
        pp: 1,
        cp: 1,
        ep: 1,
        dp: gpus,
        shard: gpus,
        stages: Stages::even(arch.layers, 1),
        fp8_tn_only: true,
    };
    let gpu = hardware::gpu("A100-80GB")?;
    Some(Case {
        id: r.get("id").to_string(),
        arch,
        plan,
        layout,
        gpu,
        fabric: row_fabric(gpu),
        measured_tokens_per_s_per_gpu: r.num("measured_value")?,
        measured_step_seconds: None,
        recipe_found: true,
        family: crate::accuracy::case::model_family(r.get("model")),
    })
}
