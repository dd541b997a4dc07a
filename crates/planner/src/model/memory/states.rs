//! Model states (SPEC §3.2): bytes per parameter of weights, gradients,
//! master weights and optimizer states, and what each GPU holds of them
//! after tensor, pipeline and expert parallelism and ZeRO sharding.

use super::shape::{linear_params, MemoryShape};
use crate::model::layout::Layout;
use crate::model::plan::{Precision, Stack, Training};
use crate::model::recipe::Recipe;

// ---- model states (SPEC §3.2) --------------------------------------------

/// Weights: Ψ x bytes per parameter, sharded from ZeRO-3 (from ZeRO-2 under
/// FSDP's mixed policy, whose SHARD_GRAD_OP shards the fp32 parameters) (SPEC §3.2).
///
/// The decoder layers' Linear weights at `weight_bytes` (NF4 under QLoRA),
/// the rest at `other_weight_bytes`.
pub(super) fn weights(s: &MemoryShape) -> f64 {
    let from = if s.fsdp2 { 2 } else { 3 };
    let linear = linear_stage_params(s);
    let bytes =
        (linear - fp8_only_params(s)) * s.weight_bytes + (s.params - linear) * s.other_weight_bytes;
    s.shard(bytes, from)
}

/// The reference model of DPO (and of GRPO with `beta > 0`, which TRL
/// prepares as DPO's): a frozen copy of the full model in the compute
/// dtype (BF16; FP32 in an FP32 plan), sharded as the weights are (train.py
/// shards it with FSDP2 where it shards the policy; TRL's
/// `prepare_deepspeed` shards it under ZeRO-3 and replicates it below,
/// `prepare_fsdp` shards it). Under LoRA the reference is the base with the
/// adapters switched off (TRL's `null_ref_context`): no copy. NeMo RL (the
/// Megatron stack's GRPO) keeps the reference's state dict in host memory
/// and copies it into the policy's own parameters for its pass
/// (`use_reference_model`): none on the GPU either.
pub(super) fn reference_weights(s: &MemoryShape) -> f64 {
    let on_host =
        s.recipe.implementation.stack == Stack::Megatron && s.recipe.training.stage.generates();
    if !s.recipe.has_reference() || s.peft || on_host {
        return 0.0;
    }
    let bytes = if s.recipe.numerics.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    };
    let from = if s.fsdp2 { 2 } else { 3 };
    s.shard(s.params * bytes, from)
}

/// Linear weights of this stage's decoder layers.
pub(super) fn linear_stage_params(s: &MemoryShape) -> f64 {
    linear_params(s.counts) / s.counts.per_layer.max(1) as f64 * s.layers * s.layer_params
}

/// Parameters kept only as FP8 copies: the Linear weights under Megatron's
/// `--fp8-param-gather` (Megatron-LM `fp8_param_gather` makes them
/// TransformerEngine FP8 tensors; the fp32 master stays in the optimizer;
/// megatron_and_b200_facts.md §1: MXFP8 parameters share one buffer).
pub(super) fn fp8_only_params(s: &MemoryShape) -> f64 {
    let megatron = s.recipe.implementation.stack == Stack::Megatron;
    if megatron && s.recipe.numerics.fp8_params && s.sb.copies > 0.0 {
        linear_stage_params(s)
    } else {
        0.0
    }
}

/// Gradients: trainable Ψ x gradient bytes, sharded from ZeRO-2 (SPEC §3.2),
/// and Megatron's cached placeholder weight gradients (`wgrad_placeholders`).
pub(super) fn gradients(s: &MemoryShape) -> f64 {
    s.shard(s.trainable * s.sb.grads, 2) + wgrad_placeholders(s)
}

/// Megatron's gradient-accumulation fusion writes each Linear's weight
/// gradient straight into its `main_grad` and hands autograd a placeholder
/// instead: TransformerEngine >= 2.3 `get_dummy_wgrad(shape, dtype)`
/// (transformer_engine/pytorch/utils.py), a tensor of the weight's shape and
/// dtype cached per (shape, dtype) and kept for the whole run. One per
/// distinct local Linear shape: the fused QKV, the output projection, FC1
/// and FC2, so one layer's attention and MLP weights on the rank; an MoE
/// layer's routed experts share one expert's shapes, the shared experts
/// have their own, as a dense layer's MLP does (MLA's unsplit down
/// projections are counted split: a few percent of its attention). The
/// 8 x B200 runs of b200_megatron_real.csv (TE 2.11) hold them: 405B at
/// TP 1, 6.0 GiB, is the gap the other terms leave there.
pub(super) fn wgrad_placeholders(s: &MemoryShape) -> f64 {
    let megatron = s.recipe.implementation.stack == Stack::Megatron;
    if !megatron || s.peft || s.layers <= 0.0 {
        return 0.0;
    }
    let bytes = if s.recipe.numerics.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    };
    let (a, c) = (s.arch, s.counts);
    let mlp = match &a.moe {
        None => c.mlp_per_layer as f64,
        Some(m) => {
            let dense_layers = m.dense_layers > 0;
            let dense = (dense_layers as u64 * a.mlp.matrices() * a.hidden * a.ffn) as f64;
            c.expert as f64 * (1.0 + m.shared as f64) + dense
        }
    };
    (c.attention_per_layer as f64 + mlp) / s.t * bytes
}

/// fp32 master weights of Megatron/DeepSpeed mixed precision (4 B/param), sharded from ZeRO-1 (SPEC §3.2).
pub(super) fn master_weights(s: &MemoryShape) -> f64 {
    s.shard(s.trainable * s.sb.master, 1)
}

/// Optimizer states (AdamW: two moments), sharded from ZeRO-1 (SPEC §3.2).
pub(super) fn optimizer_states(s: &MemoryShape) -> f64 {
    s.shard(s.trainable * s.sb.optimizer, 1)
}

/// TransformerEngine's quantised Linear-weight copies (sharded with the weights).
pub(super) fn weight_copies(s: &MemoryShape) -> f64 {
    s.shard(linear_stage_params(s) * s.sb.copies, 3)
}

/// LoRA adapters: weights, grads and AdamW's two moments in the adapters'
/// dtype (`zeros_like`), 16 B per adapter parameter in FP32 and 8 B in
/// BF16, of `r(in + out)` per target matrix (Hu et al. 2021), sharded
/// as ZeRO shards any trainable parameter (SPEC §3.2): the moments from
/// ZeRO-1, the grads from ZeRO-2, the weights from ZeRO-3. FSDP2's
/// `fully_shard` on each decoder layer shards the adapters inside it like
/// the frozen base: the oracle's LoRA steps on 8 ranks keep 1/8 of the
/// moments (`zeros_like` in the optimizer step).
///
/// Megatron-Bridge's adapters are parameters of the model's dtype (BF16,
/// `LoRA.lora_dtype` None) trained as any Megatron parameter: an FP32 main
/// gradient in the gradient buffer (BF16 with `grad_bf16`), and FP32
/// master weights and Adam moments that the distributed optimizer shards
/// over DP x CP (from ZeRO-1); the frozen base stays outside both.
pub(super) fn adapters(s: &MemoryShape) -> f64 {
    if !s.peft {
        return 0.0;
    }
    let params = s
        .arch
        .lora_params_per_layer(s.recipe.lora.lora_rank, s.recipe.adapted(s.arch))
        * s.layers
        / s.t;
    if s.recipe.implementation.stack == Stack::Megatron {
        let states = s.sb.master + 2.0 * 4.0;
        return params * (2.0 + s.sb.grads) + s.shard_dense(params * states, 1);
    }
    let b = s.recipe.adapter_bytes();
    s.shard_dense(params * b, 3) + s.shard_dense(params * b, 2) + s.shard_dense(params * 2.0 * b, 1)
}

/// torchtitan with pipeline parallelism and FSDP: the stage's parameters
/// stay gathered (BF16) from its first forward to its last backward
/// (`apply_fsdp`: `reshard_after_forward=False` with PP, "to avoid
/// per-microbatch all-gathers"; torchtitan@9dec370
/// torchtitan/parallelisms/parallelize_llama.py L326-339), and their
/// unsharded BF16 gradients accumulate over the micro-batches, reduced
/// once after the last (the pipeline schedule turns gradient sync off for
/// the others): 4 B per stage parameter.
fn pipelined_fsdp_stage(s: &MemoryShape) -> Option<f64> {
    pipelined_fsdp(s.recipe, s.layout).then_some(4.0 * s.layers * s.layer_params)
}

/// torchtitan's pipeline under FSDP over more than one rank
/// (`pipelined_fsdp_stage`).
pub(super) fn pipelined_fsdp(recipe: &Recipe, layout: &Layout) -> bool {
    let pipelined = recipe.implementation.stack == Stack::Torchtitan && layout.pp > 1;
    let sharded = layout.shard.max(1) * layout.cp.max(1) > 1;
    pipelined && recipe.parallelism.zero >= 3 && sharded
}

/// FSDP/ZeRO-3: one decoder layer gathered for compute and one prefetched,
/// in the compute dtype (a frozen PEFT base in its own format), plus the
/// layer's full gradient before its reduce-scatter (PyTorch FSDP, Zhao et al. 2023).
/// torchtitan under pipeline parallelism keeps the whole stage gathered.
pub(super) fn unsharded_unit(s: &MemoryShape) -> f64 {
    if let Some(stage) = pipelined_fsdp_stage(s) {
        return stage;
    }
    if s.recipe.parallelism.zero < 3 || s.g <= 1.0 || s.fsdp2 {
        return 0.0;
    }
    let gathered_bytes = match (s.recipe.training.train, s.recipe.numerics.precision) {
        (Training::Full, Precision::Fp32) => 4.0,
        (Training::Full, _) => 2.0,
        _ => s.weight_bytes,
    };
    s.layer_params * (2.0 * gathered_bytes + if s.peft { 0.0 } else { gathered_bytes })
}
