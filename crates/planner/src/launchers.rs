//! What the bundle's Megatron-Bridge launcher runs (#37): one rule, read by
//! the resolver (an error with its fix), by the search (which offers no plan
//! the launcher refuses) and by the launcher's settings file (its
//! `unsupported` field, which the launcher itself refuses to start on).

use crate::architecture::{Architecture, QkNorm};
use crate::plan::{Checkpointing, Engine, Optimizer, Plan, Precision, Training};
use crate::rope::RopeKind;

/// A setting the launcher does not run: what it is in the plan's words, the
/// input it belongs to, and the change that makes the plan run, if one
/// input does it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub what: &'static str,
    pub key: &'static str,
    pub fix: Option<(&'static str, &'static str)>,
}

/// The settings a search candidate chooses for itself; the rest are the
/// plan's.
#[derive(Clone, Copy, Debug)]
pub struct Choice {
    pub precision: Precision,
    pub zero: u8,
    pub pp: u64,
    pub checkpointing: Checkpointing,
}

impl Choice {
    /// The plan's own choices.
    pub fn of(plan: &Plan) -> Self {
        Choice {
            precision: plan.precision,
            zero: plan.zero,
            pp: plan.pp,
            checkpointing: plan.checkpointing,
        }
    }
}

/// The first setting of a Megatron-Bridge plan the launcher does not run,
/// or `None` when it runs all of it (or the plan starts another engine).
/// Each is a refusal Megatron-Core or Megatron-Bridge would make at launch,
/// or a setting the launcher does not carry over as modelled: adapters
/// (Megatron-Bridge's PEFT needs a converted checkpoint the bundle does not
/// make), optimizers Megatron-Core lacks, PyTorch's op-level checkpointing,
/// activation offloading where Megatron-Core does not run it, and layer
/// shapes its generic GPT provider does not build.
pub fn megatron_refusal(plan: &Plan, a: &Architecture, c: Choice) -> Option<Refusal> {
    if plan.engine() != Engine::MegatronBridge {
        return None;
    }
    // Where train.py runs the plan's layout, the Hugging Face stack is the
    // fix; with pipeline, context or expert parallelism it is not.
    let data_parallel = c.pp <= 1 && plan.cp <= 1 && plan.ep <= 1;
    let to_hf = data_parallel.then_some(("stack", "hf"));
    if let Some(what) = unsupported_shape(a) {
        return Some(Refusal {
            what,
            key: "model",
            fix: to_hf,
        });
    }
    let lora_fix = to_hf.or(Some(("train", "full")));
    let adamw = Some(("optimizer", "adamw"));
    let rules = [
        (
            plan.train == Training::Lora,
            "train=lora",
            "train",
            lora_fix,
        ),
        (
            plan.optimizer == Optimizer::Adamw8bit,
            "optimizer=adamw8bit",
            "optimizer",
            adamw,
        ),
        (
            plan.optimizer == Optimizer::Adafactor,
            "optimizer=adafactor",
            "optimizer",
            adamw,
        ),
        (
            c.precision == Precision::Bf16Pure,
            "precision=bf16-pure",
            "precision",
            Some(("precision", "bf16")),
        ),
        (
            c.checkpointing == Checkpointing::Op,
            "ckpt=op",
            "ckpt",
            Some(("ckpt", "selective")),
        ),
        // Megatron-Core's TransformerConfig refuses its activation
        // offloading with pipeline stages or with recomputation.
        (
            plan.offload && c.pp > 1,
            "offload=1 + pp>1",
            "offload",
            Some(("offload", "0")),
        ),
        (
            plan.offload && c.checkpointing != Checkpointing::None,
            "offload=1 + recomputation (ckpt)",
            "ckpt",
            Some(("ckpt", "none")),
        ),
        (
            plan.bf16_moments && plan.optimizer == Optimizer::Sgd,
            "bf16_moments=1 + optimizer=sgd",
            "bf16_moments",
            Some(("bf16_moments", "0")),
        ),
        (
            plan.bf16_moments && c.zero == 0,
            "bf16_moments=1 + zero=0",
            "bf16_moments",
            Some(("bf16_moments", "0")),
        ),
        (
            plan.fp8_params && c.precision == Precision::Nvfp4,
            "fp8_params=1 + precision=nvfp4",
            "fp8_params",
            Some(("fp8_params", "0")),
        ),
    ];
    rules
        .into_iter()
        .find(|r| r.0)
        .map(|(_, what, key, fix)| Refusal { what, key, fix })
}

/// A model shape the launcher's generic GPT provider does not build:
/// Megatron-Bridge gives Gemma its own layer spec for the norms after
/// attention and MLP, Megatron-Core's QK-norm works per head (OLMo 2 norms
/// the whole projections), and Llama 4's chunked local attention is not a
/// sliding window.
fn unsupported_shape(a: &Architecture) -> Option<&'static str> {
    if a.norms_per_layer > 2 {
        Some("Gemma's norms_per_layer=4")
    } else if a.qk_norm == QkNorm::Full {
        Some("OLMo 2's qk_norm=full")
    } else if a.chunked {
        Some("Llama 4's attention_chunk_size")
    } else {
        unsupported_rope(a)
    }
}

/// Rotary scalings Megatron-Core does not compute as the config does:
/// linear interpolation, Llama 3 bands other than Megatron-Core's fixed
/// ones, and scaling other than YaRN on MLA.
fn unsupported_rope(a: &Architecture) -> Option<&'static str> {
    let s = a.rope.scaling?;
    match s.kind {
        RopeKind::Linear => Some("rope_scaling=linear"),
        RopeKind::Llama3 if a.mla.is_some() || !s.is_megatron_llama3() => {
            Some("rope_scaling=llama3 with bands other than Llama 3.1's")
        }
        RopeKind::Llama3 | RopeKind::Yarn => None,
    }
}
