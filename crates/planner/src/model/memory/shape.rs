//! What every memory term of one pipeline stage reads: the plan, and the
//! share of the model and of the tokens this GPU holds.

use super::profile::{layer_activations, profile, LayerActivations, Profile, Widths};
use super::state_bytes::{state_bytes, StateBytes};
use crate::model::architecture::ParameterCounts;
use crate::model::layout::Layout;
use crate::model::plan::{Precision, Stack, Training};
use crate::model::recipe::Recipe;
use crate::model::stage::{Stage, StageShape};

/// Bytes per weight of bitsandbytes' NF4 with its default double
/// quantization (QLoRA, Dettmers et al. 2023, §3): 4 bits, one 8-bit
/// absmax per block of 64 weights, and one FP32 constant per 256 of those
/// (`Params4bit`, `QuantState.state2`): 0.5 + (1 + 4/256) / 64.
pub(super) const NF4_BYTES: f64 = 0.5 + (1.0 + 4.0 / 256.0) / 64.0;

/// Number of Linear-weight parameters per layer (autocast casts them).
pub(super) fn linear_params(counts: &ParameterCounts) -> f64 {
    (counts.per_layer - counts.norms_per_layer) as f64
}

/// The HF stack sharded by FSDP2 (ZeRO-2/3 on more than one GPU):
/// train.py's `fully_shard` on each decoder layer and on the root, over the
/// data-parallel ranks; with tensor parallelism (train.py only) it shards
/// the TP-split weights over the DP ranks, one mesh of `dp x tp`, even
/// where `dp` is 1 (FSDP2 then casts the layer's weights to BF16).
pub(crate) fn runs_fsdp2(recipe: &Recipe, layout: &Layout) -> bool {
    let data_parallel = layout.dp > 1 && layout.dp == layout.gpus;
    let hf_tp = recipe.implementation.stack == Stack::Hf
        && layout.tp > 1
        && layout.dp * layout.tp == layout.gpus;
    recipe.implementation.stack != Stack::Megatron
        && recipe.parallelism.zero >= 2
        && (data_parallel || hf_tp)
}

/// What every memory term of one pipeline stage reads: the plan, and the
/// share of the model and of the tokens this GPU holds.
pub(super) struct MemoryShape<'a> {
    /// The stage, its layers and its tokens (`stage::StageShape`).
    pub(super) base: StageShape<'a>,
    pub(super) sb: StateBytes,
    pub(super) profile: Profile,
    /// ZeRO/FSDP shard group size: the data-parallel shard group times the
    /// context-parallel ranks, which hold the same parameters. Megatron's
    /// distributed optimizer shards the fp32 main weights and Adam moments
    /// over `get_data_parallel_group(with_context_parallel=True)`
    /// (megatron/core/optimizer/__init__.py, distrib_optimizer.py ~L212 at
    /// d98e8a64: DP x CP ranks, or DP x CP / instances with
    /// `--num-distributed-optimizer-instances`; our `shard` is DP / instances);
    /// torchtitan's FSDP mesh is `dp_shard_cp` likewise (#23: dividing by DP
    /// alone over-stated 405B on 128 GB200 by 35 GiB).
    pub(super) g: f64,
    /// Parameters of one decoder layer on this GPU (after TP and EP).
    pub(super) layer_params: f64,
    /// Embedding (and untied LM head) parameters on this GPU.
    pub(super) emb: f64,
    /// Parameters this stage holds before ZeRO sharding.
    pub(super) params: f64,
    /// The routed experts' share of `params`.
    pub(super) expert_share: f64,
    /// Parameters with gradients and optimizer states (none for a PEFT base).
    pub(super) trainable: f64,
    pub(super) peft: bool,
    /// Bytes per parameter of the (frozen or trained) decoder Linear weights.
    pub(super) weight_bytes: f64,
    /// And of the other weights (embedding, LM head, norms).
    pub(super) other_weight_bytes: f64,
    /// FSDP's mixed-precision policy: fp32 params sharded, bf16 gathered.
    pub(super) mixed_policy: bool,
    /// The HF stack sharded by FSDP2 (ZeRO-2/3 on more than one GPU, `runs_fsdp2`):
    /// train.py's `fully_shard` on each decoder layer and on the root
    /// (embedding, norm, head).
    pub(super) fsdp2: bool,
    /// What divides the norm/residual activations: TP with sequence parallelism.
    pub(super) sp_div: f64,
    /// The widths a decoder layer's tensors are made of.
    pub(super) widths: Widths,
    /// Bytes per token one decoder layer saves.
    pub(super) layer: LayerActivations,
}

impl<'a> MemoryShape<'a> {
    pub(super) fn new(base: StageShape<'a>) -> Self {
        let StageShape {
            arch,
            counts,
            recipe,
            layout,
            stage,
            t,
            layers,
            mtp,
            has_head,
            ..
        } = base;
        let expert_params = arch.routed_params_per_layer(counts);
        let dense_layer = counts.per_layer as f64 - expert_params;
        let layer_params = dense_layer / t + expert_params / layout.expert_split();
        let emb = counts.embedding as f64 / t;
        let head = if arch.tied && stage == Stage::Only {
            0.0
        } else {
            counts.embedding as f64 / t
        };
        // First stage: embedding (+ the head when p == 1); last stage: LM
        // head and final norm, and each MTP layer's `2h x h` projection and
        // two norms (DeepSeek-V3 report §2.2).
        let h = arch.hidden as f64;
        let mtp_extra = mtp * (2.0 * h * h / t + 2.0 * h);
        let has_embedding = matches!(stage, Stage::Only | Stage::First);
        let params = layers * layer_params
            + if has_embedding { emb } else { 0.0 }
            + if has_head {
                head + arch.hidden as f64 + mtp_extra
            } else {
                0.0
            };
        let peft = recipe.training.train != Training::Full;
        let sb = state_bytes(recipe, layout);
        let widths = Widths::of(arch, recipe, recipe.data.seq as f64);
        MemoryShape {
            base,
            sb,
            profile: profile(recipe),
            g: (layout.shard.max(1) * layout.cp.max(1)) as f64,
            layer_params,
            emb,
            params,
            expert_share: layers * expert_params / layout.expert_split() / params.max(1.0),
            trainable: if peft { 0.0 } else { params },
            peft,
            weight_bytes: match recipe.training.train {
                Training::Full => sb.weights,
                // Frozen base in bf16 (LoRA) or NF4 with double-quantised constants (QLoRA).
                Training::Lora => 2.0,
                Training::Qlora => NF4_BYTES,
            },
            // What bitsandbytes leaves unquantized (embedding, norms, LM
            // head): FP32 once PEFT prepares the model (`qlora_prepared`),
            // else the base's BF16.
            other_weight_bytes: match recipe.training.train {
                Training::Full => sb.weights,
                Training::Lora => 2.0,
                Training::Qlora if super::profile::qlora_prepared(recipe, layout.gpus) => 4.0,
                Training::Qlora => 2.0,
            },
            mixed_policy: recipe.implementation.stack != Stack::Megatron
                && !matches!(
                    recipe.numerics.precision,
                    Precision::Fp32 | Precision::Bf16Pure
                )
                && !peft,
            fsdp2: runs_fsdp2(recipe, layout),
            sp_div: if recipe.parallelism.sp || layout.tp == 1 {
                t
            } else {
                1.0
            },
            layer: layer_activations(arch, recipe, &widths),
            widths,
        }
    }

    /// `x`, bytes in proportion to this stage's parameters, divided over the
    /// shard group when ZeRO reaches `stage` (Rajbhandari et al. 2020). The
    /// routed experts' share is divided over the expert-data-parallel group
    /// instead: world / (ETP x EP x PP) ranks, here `g / ep` since experts
    /// split over TP as ETP (megatron_and_b200_facts.md §1; Megatron's
    /// `expert_data_parallel_group`). With EP as large as DP x CP nothing
    /// shards the experts' states.
    pub(super) fn shard(&self, x: f64, stage: u8) -> f64 {
        if self.recipe.parallelism.zero < stage {
            return x;
        }
        let experts = x * self.expert_share;
        (x - experts) / self.g + experts / (self.g / self.layout.ep.max(1) as f64).max(1.0)
    }

    /// `x` of the embedding or head, divided over the whole shard group.
    pub(super) fn shard_dense(&self, x: f64, stage: u8) -> f64 {
        if self.recipe.parallelism.zero >= stage {
            x / self.g
        } else {
            x
        }
    }

    /// Linear-weight parameters of this stage's decoder layers.
    pub(super) fn linear_layer_params(&self) -> f64 {
        linear_params(self.counts) / self.counts.per_layer.max(1) as f64 * self.layer_params
    }
}

impl<'a> std::ops::Deref for MemoryShape<'a> {
    type Target = StageShape<'a>;

    fn deref(&self) -> &StageShape<'a> {
        &self.base
    }
}
