//! Saved activations (SPEC §3.3): micro-batches in flight, checkpointing,
//! offloading, attention scores and the working sets of recomputation.

use super::profile::{
    compute_bytes, lora_linear_inputs, residual_bytes, sliding_window_masked, Profile,
};
use super::shape::MemoryShape;
use crate::model::architecture::{Architecture, ParameterCounts};
use crate::model::layout::Layout;
use crate::model::plan::{Checkpointing, Stack};
use crate::model::recipe::Recipe;
use crate::model::stage::{Stage, StageShape};

// ---- activations (SPEC §3.3) ------------------------------------------------

/// Micro-batches whose activations the stage holds, in units of the whole
/// stage's layers, from Megatron's own warm-up count
/// (`megatron/core/pipeline_parallel/schedules.py`,
/// `forward_backward_pipelining_with_interleaving` /
/// `_without_interleaving`): rank `r` of `p` runs `p - r - 1` forward
/// micro-batches before its first backward, so holds `min(p - r, m)`; with
/// `vp` model chunks it runs `(p - r - 1) * 2 + (vp - 1) * p` chunk forwards
/// first (at most `m * vp`), each chunk `1/vp` of the stage's layers. For
/// the first rank that is `p + (p-1)/vp` stages' worth, Narayanan et al.
/// 2021's `(1 + (p-1)/(p*vp))` factor, when its chunks are equal. Where the
/// embedding takes a layer slot (`account_for_embedding_in_pipeline_split`)
/// the first rank's chunk 0 holds one layer fewer, and that chunk is the one
/// with the most micro-batches in flight; the loss's slot shortens the last
/// rank's chunk `vp - 1`: the schedule is walked chunk by chunk
/// (`in_flight_layers`). The last rank, `(vp - 1) p` forwards before its
/// first backward, holds all its chunks but the last (Megatron-LM's CI runs,
/// tests/megatron_memory.rs).
pub(super) fn in_flight_micro_batches(s: &MemoryShape) -> f64 {
    let p = s.layout.pp;
    let rank = match s.stage {
        Stage::First => 0,
        Stage::Second => 1,
        Stage::Last => p - 1,
        Stage::Only => return 1.0,
    };
    let m = s.recipe.data.grad_accum.max(1);
    let vp = s.recipe.parallelism.vp.max(1);
    if vp == 1 {
        return (p - rank).min(m) as f64;
    }
    let warmup = (p - rank - 1) * 2 + (vp - 1) * p;
    let slots = s.layers as u64 + 1;
    let ends = s.layout.stages.embedding_and_loss_slots && slots.is_multiple_of(vp);
    // The embedding's slot is the first rank's chunk 0, the loss's the last
    // rank's chunk vp - 1: that chunk holds one layer fewer.
    let short = match rank {
        0 => Some(0),
        r if r + 1 == p => Some(vp - 1),
        _ => None,
    };
    if let (true, Some(short)) = (ends, short) {
        let per_chunk = (slots / vp) as f64;
        let chunk = |c: u64| {
            if c == short {
                per_chunk - 1.0
            } else {
                per_chunk
            }
        };
        return in_flight_layers(p, vp, m, warmup, chunk) / s.layers.max(1.0);
    }
    ((warmup + 1).min(m * vp)) as f64 / vp as f64
}

/// The most layers' activations a rank holds at once under the interleaved
/// 1F1B schedule, chunk `c` holding `layers(c)` layers: its `k`-th forward
/// runs chunk `(k / p) % vp`, its `k`-th backward chunk `vp - 1 - (k / p) %
/// vp` (Megatron's `get_model_chunk_id`, micro-batches grouped `p` per
/// chunk), one backward after each forward once the rank's `warmup`
/// forwards are done (`2(p - 1 - r) + (vp - 1)p` on rank `r`). The pattern
/// repeats every `p * vp` forwards, so two periods past the warm-up hold
/// the peak.
fn in_flight_layers(p: u64, vp: u64, m: u64, warmup: u64, layers: impl Fn(u64) -> f64) -> f64 {
    let total = m * vp;
    let warmup = warmup.min(total);
    let chunk = |k: u64| (k / p) % vp;
    let (mut live, mut peak) = (0.0f64, 0.0f64);
    for k in 0..warmup {
        live += layers(chunk(k));
        peak = peak.max(live);
    }
    let end = total.min(warmup + 2 * p * vp);
    for (backward, forward) in (warmup..end).enumerate() {
        live += layers(chunk(forward));
        peak = peak.max(live);
        live -= layers(vp - 1 - chunk(backward as u64));
    }
    peak
}

/// Everything one non-checkpointed layer keeps for backward, scores included
/// (Korthikanti et al. 2022, per profile above).
pub(super) fn full_layer_bytes(s: &MemoryShape) -> f64 {
    let la = &s.layer;
    let per_layer_token = la.tp_split / s.t + la.replicated / s.sp_div + la.unsplit;
    let scores_token = la.scores / s.t;
    s.tokens * (per_layer_token + scores_token)
}

/// Eager attention's `s^2` part of one layer, per token.
pub(super) fn scores_per_token(s: &MemoryShape) -> f64 {
    s.layer.scores / s.t
}

/// What a checkpointed layer keeps: its input in the residual dtype
/// (SPEC §3.3); torchtitan's op-level SAC also keeps the outputs of wq, wv,
/// w1, w2 and flash attention (output + logsumexp), all bf16.
pub(super) fn checkpointed_layer_bytes(s: &MemoryShape) -> f64 {
    let h = s.arch.hidden as f64;
    let input = s.tokens * h * residual_bytes(s.profile) / s.sp_div;
    match (
        s.recipe.activations.checkpointing,
        s.recipe.implementation.stack,
    ) {
        (Checkpointing::Op, Stack::Hf | Stack::Torchtitan) => input + op_level_kept(s),
        (Checkpointing::Op, Stack::Megatron) => {
            let w = &s.widths;
            let (q, kv, f, a) = (w.q, w.kv, w.f, w.a);
            input
                + s.tokens
                    * ((2.0 * q + 2.0 * kv + 2.0 * f * w.routed + 2.0 * q + 4.0 * a) / s.t
                        + 2.0 * h / s.sp_div)
        }
        _ => input,
    }
}

/// train.py's op-level policy keeps every matmul's output (q, k, v, o, the
/// MLP's matrices) and attention's: SDPA's output and fp32 logsumexp, or
/// eager attention's two batched matmuls (the scores among them), in the
/// compute dtype (oracle rows `*/ckpt=op`).
pub(super) fn op_level_kept(s: &MemoryShape) -> f64 {
    let w = &s.widths;
    let e = compute_bytes(s.profile);
    let attention = if w.eager {
        e * (w.a * w.seq + w.q)
    } else {
        e * w.q + 4.0 * w.a
    };
    // The matmul outputs the policy keeps (`Recipe::op_level_recomputed_gemm_share`).
    let matmuls = (w.q + 2.0 * w.kv + w.h + w.routed * w.mlp_outputs)
        * (1.0 - s.recipe.op_level_recomputed_gemm_share());
    // LoRA: each adapter's B matmul output is as wide as its base matrix's
    let adapters = if s.peft {
        let a = s.recipe.adapted(s.arch);
        let on = |adapted: bool, width: f64| if adapted { width } else { 0.0 };
        let outputs = on(a.query(), w.q)
            + on(a.key(), w.kv)
            + on(a.value(), w.kv)
            + on(a.o, w.h)
            + w.routed * super::profile::mlp_widths(w, a, true).1;
        outputs * (1.0 - s.recipe.op_level_recomputed_gemm_share())
    } else {
        0.0
    };
    s.tokens * (e * (matmuls + adapters) + attention) / s.t
}

/// Saved activations, split into the decoder layers' tensors and eager
/// attention's scores; SMP activation offloading keeps about two layers'
/// worth on the GPU (`activation_loading_horizon`).
pub(super) struct SavedActivations {
    pub(super) activations: f64,
    pub(super) scores: f64,
}

/// What activation offloading moves on the first (most loaded) stage: each
/// offloaded layer's saved activations per micro-batch, to the host in the
/// forward and back for the backward, for `layers` layers, with
/// `in_flight` micro-batches' worth held on the host at once (the
/// pipeline's warm-up keeps that many stages of activations alive).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Offload {
    pub bytes_per_layer: f64,
    pub layers: f64,
    pub in_flight: f64,
}

impl Offload {
    /// Bytes one micro-batch sends each way.
    pub fn bytes_per_micro_batch(&self) -> f64 {
        self.bytes_per_layer * self.layers
    }

    /// Bytes each GPU keeps in host memory at the peak.
    pub fn host_bytes_per_gpu(&self) -> f64 {
        self.bytes_per_micro_batch() * self.in_flight
    }

    /// The most layers whose activations `gpus` GPUs can keep in
    /// `host_bytes` of one node's memory.
    pub fn layers_within(&self, host_bytes: f64, gpus: u64) -> u64 {
        let per_layer = self.bytes_per_layer * self.in_flight * gpus as f64;
        if per_layer <= 0.0 {
            return self.layers as u64;
        }
        ((host_bytes / per_layer).floor().max(0.0) as u64).min(self.layers as u64)
    }
}

/// The plan's activation offloading (all zero without it).
pub fn offload(
    arch: &Architecture,
    counts: &ParameterCounts,
    recipe: &Recipe,
    layout: &Layout,
) -> Offload {
    if !recipe.activations.offload {
        return Offload::default();
    }
    let stage = Stage::First.or_only(layout);
    let s = MemoryShape::new(StageShape::new(arch, counts, recipe, layout, stage));
    let in_flight = in_flight_micro_batches(&s);
    Offload {
        bytes_per_layer: kept_activations(&s).activations / in_flight / s.layers.max(1.0),
        layers: offloaded_layers(&s),
        in_flight,
    }
}

/// SMP's `activation_loading_horizon` default: layers kept on the GPU.
pub(super) const OFFLOAD_HORIZON: f64 = 2.0;

/// Layers of the stage whose activations offloading moves to the host:
/// Megatron's `--cpu-offloading-num-layers` where given (at most all but the
/// last, which Megatron never offloads), else all but SMP's horizon.
pub(super) fn offloaded_layers(s: &MemoryShape) -> f64 {
    offloaded_layer_count(s.recipe, s.layers)
}

/// [`offloaded_layers`] of a stage of `layers` layers (the Megatron-Bridge
/// launcher's `cpu_offloading_num_layers`).
pub fn offloaded_layer_count(recipe: &Recipe, layers: f64) -> f64 {
    if !recipe.activations.offload {
        return 0.0;
    }
    match (
        recipe.implementation.stack,
        recipe.activations.offload_layers,
    ) {
        (Stack::Megatron, Some(n)) => (n as f64).min(layers - 1.0).max(0.0),
        _ => (layers - OFFLOAD_HORIZON).max(0.0),
    }
}

pub(super) fn saved_activations(s: &MemoryShape) -> SavedActivations {
    let kept = kept_activations(s);
    let (mut kept_all, mut scores) = (kept.activations, kept.scores);
    if s.recipe.activations.offload {
        let kept_layers = s.layers - offloaded_layers(s);
        let per_layer = kept_all / s.layers.max(1.0);
        kept_all = per_layer * kept_layers;
        scores = scores / s.layers.max(1.0) * kept_layers;
    }
    SavedActivations {
        activations: kept_all - scores + sliding_window_masks(s),
        scores,
    }
}

/// Selective recomputation of the attention core: Megatron's when its
/// module list names `core_attn` (or it has none); the Hugging Face and
/// PyTorch stacks' selective always recomputes it (the bundle's train.py).
pub fn recomputes_core_attention(recipe: &Recipe) -> bool {
    recipe.activations.checkpointing == Checkpointing::Selective
        && (recipe.implementation.stack != Stack::Megatron
            || recipe.activations.recompute_modules.core_attn)
}

/// What the layers keep for their backward before any offloading:
/// `activations` includes `scores`.
pub(super) fn kept_activations(s: &MemoryShape) -> SavedActivations {
    let in_flight = in_flight_micro_batches(s);
    let kept_layers = s.layers * (1.0 - s.recomputed());
    let ckpt_layers = s.layers * s.recomputed();
    // Megatron's selective recomputation of `core_attn` drops the scores
    // term of Korthikanti et al. 2022 (eq. 1 vs §5, 34sbh).
    let selective = recomputes_core_attention(s.recipe);
    let kept_layer = if selective {
        full_layer_bytes(s) - s.tokens * scores_per_token(s)
    } else {
        full_layer_bytes(s)
    };
    let activations =
        (kept_layers * kept_layer + ckpt_layers * checkpointed_layer_bytes(s)) * in_flight;
    let scores = if selective {
        0.0
    } else {
        kept_layers * s.tokens * scores_per_token(s) * in_flight
    };
    SavedActivations {
        activations,
        scores,
    }
}

/// Transformers materialises boolean masks (`b x s x s`) when a sliding
/// window is shorter than the sequence (Gemma 2/3, Mistral v0.1): the
/// sliding one and the causal one it is built from, held until backward
/// (oracle rows `gemma-2-2b/*` at 8K tokens).
pub(super) fn sliding_window_masks(s: &MemoryShape) -> f64 {
    if !sliding_window_masked(s.arch, s.recipe) {
        return 0.0;
    }
    2.0 * s.recipe.rows_per_micro_batch() as f64 * (s.recipe.data.seq as f64).powi(2)
}

/// During recompute, one layer's full working set is rebuilt (SPEC §3.3);
/// under selective recomputation, one layer's attention scores.
pub(super) fn recompute_working_set(s: &MemoryShape) -> f64 {
    if s.recipe.activations.checkpointing == Checkpointing::Op
        && s.recipe.implementation.stack != Stack::Megatron
    {
        // the kept matmul outputs are counted with the checkpointed layers
        (full_layer_bytes(s) - op_level_kept(s)).max(0.0)
    } else if s.recomputed() > 0.0 {
        full_layer_bytes(s) + lora_recompute_copies(s)
    } else if recomputes_core_attention(s.recipe) {
        s.tokens * scores_per_token(s)
    } else {
        0.0
    }
}

/// The MLP's backward makes gradients as wide as its intermediate: of the
/// down projection's input, of the activation and of the up and gate
/// outputs, while the MLP's saved tensors are still held (oracle rows with a
/// small vocabulary, where a layer's backward is the peak: `mistral-7b/*`).
pub(super) fn mlp_backward_transient(s: &MemoryShape) -> f64 {
    if s.recipe.implementation.stack == Stack::Megatron {
        return 0.0;
    }
    let w = &s.widths;
    let e = compute_bytes(s.profile);
    // A recomputed layer's working set already holds two of them; the
    // op-level policy's kept matmul outputs hold the rest.
    let widths = match s.recipe.activations.checkpointing {
        Checkpointing::Op => return 0.0,
        _ if s.recomputed() > 0.0 => MLP_BACKWARD_WIDTHS - 2.0,
        _ => MLP_BACKWARD_WIDTHS,
    };
    s.tokens * widths * w.routed * w.f * e / s.t
}

/// Intermediate-wide gradients alive at once in an MLP's backward.
pub(super) const MLP_BACKWARD_WIDTHS: f64 = 3.0;

/// Eager attention's backward on one layer's scores (Transformers'
/// `eager_attention_forward`): the saved fp32 softmax output, the probs'
/// gradient upcast to fp32 and softmax's backward output coexist, 12 B per
/// score element against the 6 (4 in fp32) the forward saved (oracle rows
/// `*/attn=eager`). Returns what comes on top of the saved scores.
pub(super) fn eager_backward_extra(s: &MemoryShape) -> f64 {
    let saved_bytes = match s.profile {
        Profile::Megatron => return 0.0,
        Profile::HfFp32 => 4.0,
        Profile::HfBf16 | Profile::HfAutocast => 6.0,
    };
    let extra = s.tokens * scores_per_token(s) * (12.0 / saved_bytes - 1.0);
    // A selective list without `core_attn` saved the scores, as no recomputation does.
    let checkpointing = match s.recipe.activations.checkpointing {
        Checkpointing::Selective if !recomputes_core_attention(s.recipe) => Checkpointing::None,
        c => c,
    };
    match checkpointing {
        // the scores were saved: the gradient and softmax's backward come on
        // top, next to the layer's weight gradients (full training rows)
        Checkpointing::None if !s.peft => s.tokens * scores_per_token(s) * 8.0 / saved_bytes,
        Checkpointing::None => 0.0,
        Checkpointing::Op => 0.0,
        Checkpointing::Selective => extra,
        // a recomputed layer's MLP tensors are freed before attention's backward
        _ => (extra - s.tokens * s.layer.mlp / s.t - lora_recompute_parts(s).1).max(0.0),
    }
}

/// Autocast's bf16 copies of the Linear weights, held by the graph until
/// each layer's backward (memory_examples.csv `saved_wcopy_fwd_end_bytes`).
/// Under QLoRA (its FP32 LM head, `qlora_prepared`) only the head's cast is
/// held: the 4-bit Linears dequantize their own weights (`dequantized`).
pub(super) fn autocast_casts(s: &MemoryShape) -> f64 {
    if s.profile != Profile::HfAutocast {
        return 0.0;
    }
    let head_copy = if s.has_head {
        s.counts.embedding as f64 / s.t * 2.0
    } else {
        0.0
    };
    if s.peft {
        // An FP32 head (`qlora_prepared`) is cast; a BF16 one is not.
        return if s.other_weight_bytes == 4.0 {
            head_copy
        } else {
            0.0
        };
    }
    let per_layer = s.linear_layer_params() * 2.0;
    let kept_layers = s.layers * (1.0 - s.recomputed());
    (kept_layers + if s.recomputed() > 0.0 { 1.0 } else { 0.0 }) * per_layer + head_copy
}

/// QLoRA: the BF16 weight bitsandbytes dequantizes for each 4-bit Linear,
/// alive while that Linear computes (`MatMul4Bit`: forward, recomputation
/// and the input's gradient): the layer's largest, an MLP matrix.
pub(super) fn dequantized_weight(s: &MemoryShape) -> f64 {
    if s.recipe.training.train != crate::model::plan::Training::Qlora {
        return 0.0;
    }
    let f = s
        .arch
        .moe
        .as_ref()
        .map_or(s.arch.ffn, |m| m.expert_ffn.max(s.arch.ffn));
    let attention = s
        .arch
        .attention_linears()
        .iter()
        .map(|(i, o, _)| i * o)
        .max()
        .unwrap_or(0);
    (s.arch.hidden * f).max(attention) as f64 / s.t * 2.0
}

/// Recomputing a LoRA layer under autocast: PEFT casts each adapted
/// Linear's input to its fp32 adapters' dtype before autocast casts it back;
/// the oracle finds ~4.5 B per input element alive while a checkpointed LoRA
/// layer is recomputed (`*/lora/*` rows), not among a normal forward's saved
/// tensors: 4 B per element of each adapted Linear's input (q, k, v, o and
/// every MLP matrix's, under `all-linear`).
pub(super) fn lora_recompute_copies(s: &MemoryShape) -> f64 {
    let (attention, mlp) = lora_recompute_parts(s);
    attention + mlp
}

/// `lora_recompute_copies`, attention's part and the MLP's.
pub(super) fn lora_recompute_parts(s: &MemoryShape) -> (f64, f64) {
    // BF16 adapters cast nothing; PEFT's 4-bit layer casts nothing under
    // autocast (its input arrives in FP32, `qlora_prepared`).
    let four_bit_autocast = s.profile == Profile::HfAutocast;
    if !s.peft
        || s.recipe.implementation.stack == Stack::Megatron
        || s.recipe.adapter_bytes() < 4.0
        || four_bit_autocast
    {
        return (0.0, 0.0);
    }
    let per_token = s.tokens * 4.0 / s.t;
    let (attention, mlp) = lora_linear_inputs(&s.widths, s.recipe.adapted(s.arch), true);
    (per_token * attention, per_token * mlp)
}

#[cfg(test)]
mod tests {
    /// The first rank's warm-up: `2(p - 1) + (vp - 1)p` chunk forwards.
    fn in_flight_layers(p: u64, vp: u64, m: u64, layers: impl Fn(u64) -> f64) -> f64 {
        super::in_flight_layers(p, vp, m, 2 * (p - 1) + (vp - 1) * p, layers)
    }

    /// Equal chunks: the warm-up's `2(p-1) + (vp-1)p` forwards plus one, as
    /// Megatron's closed form (and Narayanan et al.'s factor) give:
    /// p 16, vp 4: 79 chunk forwards of 2 layers.
    #[test]
    fn equal_chunks_hold_the_warm_up_plus_one() {
        assert_eq!(in_flight_layers(16, 4, 384, |_| 2.0), 158.0);
        assert_eq!(in_flight_layers(8, 2, 64, |_| 1.0), (2 * 7 + 8 + 1) as f64);
    }

    /// Llama 3.1 405B on PP 16 x VP 4 with the embedding's slot: chunk 0
    /// holds 1 layer, chunks 1-3 two. Of the 79 forwards in flight, chunk 0
    /// runs 16 + 15 (its group of 16, then 15 of the next), the others 16
    /// each: 31 x 1 + 48 x 2 = 127 layers, where 79 x 7/4 = 138.25 counted
    /// every chunk as the stage's average.
    #[test]
    fn the_embeddings_chunk_is_the_busiest() {
        let chunk = |c: u64| if c == 0 { 1.0 } else { 2.0 };
        assert_eq!(in_flight_layers(16, 4, 384, chunk), 127.0);
    }

    /// Fewer micro-batches than the warm-up: every chunk of every one.
    #[test]
    fn short_steps_hold_everything() {
        assert_eq!(in_flight_layers(4, 2, 2, |_| 3.0), 12.0);
    }

    /// The last of `p` ranks warms up with `(vp - 1)p` forwards: all of its
    /// chunks but the last, then one of that. p 4, vp 8, 4 micro-batches
    /// (Megatron-LM's `gpt3_7b_tp1_pp4_memory_speed`): 28 + 1 chunks of one
    /// layer, where one micro-batch of the stage is 8 layers. With the loss
    /// in chunk vp - 1's slot (p 16, vp 4, 2 layers a chunk): 48 x 2 after
    /// the warm-up, then a forward of chunk 0 (2 layers) before the backward
    /// of chunk 2 frees its 2.
    #[test]
    fn the_last_rank_holds_all_but_its_last_chunk() {
        assert_eq!(super::in_flight_layers(4, 8, 4, 7 * 4, |_| 1.0), 29.0);
        let chunk = |c: u64| if c == 3 { 1.0 } else { 2.0 };
        assert_eq!(super::in_flight_layers(16, 4, 384, 3 * 16, chunk), 98.0);
    }
}
