//! The LM head and the loss: the final norm, logits and their gradients,
//! and the short-lived buffers of the backward's first moments.

use super::profile::Profile;
use super::shape::MemoryShape;
use super::sharding::fsdp_compute_bytes;
use super::states::{gradients, pipelined_fsdp};
use crate::model::layout::Layout;
use crate::model::plan::{Loss, Optimizer, Stack};
use crate::model::recipe::Recipe;
use crate::model::stage::Stage;

/// The final norm's saved tensors, in the profile's dtypes (memory_examples.csv).
pub(super) fn final_norm(s: &MemoryShape) -> f64 {
    if !s.has_head {
        return 0.0;
    }
    let per_element = match s.profile {
        Profile::HfFp32 => 12.0,
        Profile::HfBf16 => 8.0,
        Profile::HfAutocast => 10.0,
        Profile::Megatron => 4.0,
    };
    s.tokens * s.arch.hidden as f64 * per_element / s.sp_div
}

/// Logits and cross-entropy buffers at the start of backward, `s*b*V/t`
/// elements (SPEC §3.3): HF upcasts the logits to fp32 and log_softmax
/// saves its fp32 output (4 B), its gradient and the input gradient coexist
/// with it (8 B more); Megatron's plain vocab-parallel cross-entropy
/// (`VocabParallelCrossEntropy`, no `--cross-entropy-loss-fusion`) saves its
/// fp32 `exp_logits` (4 B) and computes the bf16 logits' gradient in place
/// over them (2 B): 6 B, and the 31 real 8 x B200 runs of
/// b200_megatron_real.csv measure 5.8-6.2 B per logit over the rest of
/// their memory; its fused loss (TE's Triton cross-entropy, in place) keeps
/// 12 B of one chunk of the tokens in eight; Liger's fused
/// linear cross-entropy works on ~1/8 of the tokens at a time. train.py's
/// fused loss (the HF export) runs the head and the plain loss on
/// `FUSED_LOSS_CHUNK` tokens at a time, recomputed in backward (oracle rows
/// `*/loss=fused`). torchtitan's loss is the plain one
/// (`torchtitan/components/loss.py`: an fp32 upcast and cross-entropy);
/// newer releases compile it with the model, which would keep less, but its
/// published 2024 peaks need the full 12 B (tests/torchtitan_memory.rs), so
/// the planner does not count on it.
///
/// GRPO (TRL's `_get_per_token_logps_and_entropies`) takes the logits of the
/// completion's `C + 1` positions only, and divides them by the temperature
/// into a new fp32 tensor: 4 B more per logit beside the 12 B of the loss.
pub(super) fn logits_and_loss(s: &MemoryShape) -> f64 {
    if !s.has_head {
        return 0.0;
    }
    let temperature_copy = if s.recipe.training.stage.tempers_logits() {
        16.0 / 12.0
    } else {
        1.0
    };
    let vocab = s.arch.vocab as f64 / s.t;
    // Each MTP layer computes its own logits and loss beside the model's.
    let heads = 1.0 + s.recipe.training.mtp as f64;
    let tokens = s.logit_tokens;
    heads
        * temperature_copy
        * match (s.recipe.implementation.loss, s.recipe.implementation.stack) {
            (Loss::Plain, Stack::Hf | Stack::Torchtitan) => tokens * vocab * 12.0,
            (Loss::Plain, Stack::Megatron) => tokens * vocab * 6.0,
            (Loss::Fused, Stack::Hf) => tokens.min(FUSED_LOSS_CHUNK) * vocab * 12.0,
            // torchtitan's ChunkedLossWrapper: the head and the loss over 8
            // chunks of the tokens, one at a time (its `num_chunks`).
            (Loss::Fused, Stack::Torchtitan) => tokens * vocab * 12.0 / 8.0,
            (Loss::Fused, Stack::Megatron) => tokens * vocab * 12.0 / 8.0,
        }
}

/// The loss's forward buffers against its backward's (10 of 12 B per logit).
pub(super) const LOSS_FORWARD_SHARE: f64 = 10.0 / 12.0;

/// Tokens per chunk of train.py's fused loss (`with_loss`).
pub(super) const FUSED_LOSS_CHUNK: f64 = 1024.0;

/// The LM head's gradient while the loss's later chunks are back-propagated:
/// the first chunk's backward made it (train.py's chunked loss only; oracle
/// rows `*/loss=fused`).
pub(super) fn head_gradient_in_loss(s: &MemoryShape) -> f64 {
    let chunked = s.recipe.implementation.loss == Loss::Fused
        && s.recipe.implementation.stack != Stack::Megatron
        && s.logit_tokens > FUSED_LOSS_CHUNK;
    if !chunked || !s.has_head || s.peft {
        0.0
    } else if s.fsdp2 {
        // FSDP2's gathered head is not a leaf: from the third chunk on, autograd
        // sums each chunk's gradient into the running one out of place (old,
        // new and sum coexist, while the chunk's loss buffers are gone)
        let head = fsdp_compute_bytes(s) * s.emb;
        if s.logit_tokens > 2.0 * FUSED_LOSS_CHUNK {
            head.max(3.0 * head - logits_and_loss(s))
        } else {
            head
        }
    } else {
        s.shard_dense(s.emb * s.sb.grads, 2)
    }
}

// ---- short-lived buffers ----------------------------------------------------

/// The LM head's gradient, alive while the last layers are recomputed.
pub(super) fn head_gradient(s: &MemoryShape) -> f64 {
    if s.has_head && !s.peft && !s.fsdp2 {
        s.shard_dense(s.emb * s.sb.grads, 2)
    } else {
        0.0
    }
}

/// Megatron-Core's DDP allocates one contiguous gradient buffer (fp32
/// `main_grad` with `--accumulate-allreduce-grads-in-fp32`, its default for
/// BF16) before the first step and keeps it: weights, gradients, optimizer
/// states and activations coexist at the peak, as Megatron-LM's
/// `theoretical_memory_usage.py` adds them. HF frees gradients between steps
/// (`zero_grad(set_to_none=True)`) except under DDP (ZeRO-0/1 on more than
/// one GPU): its reducer allocates gradient buckets the size of all gradients
/// when it is built and keeps them, and train.py's `gradient_as_bucket_view`
/// makes the gradients views into them (PyTorch DDP docs).
pub(super) fn persistent_gradient_buffer(s: &MemoryShape) -> f64 {
    if keeps_gradient_buffer(s.recipe, s.layout) {
        gradients(s)
    } else {
        0.0
    }
}

/// Megatron, or DDP (ZeRO-0/1 on more than one GPU): a gradient buffer
/// for the whole step (`persistent_gradient_buffer`).
fn keeps_gradient_buffer(recipe: &Recipe, layout: &Layout) -> bool {
    let megatron = recipe.implementation.stack == Stack::Megatron;
    let ddp = !megatron && recipe.parallelism.zero < 2 && layout.dp > 1;
    megatron || ddp
}

/// Whether something holds the step's gradients at any accumulation (a
/// buffer, or torchtitan's pipelined stage), so that a step of one
/// micro-batch keeps as many as one of several.
pub(crate) fn gradients_held(recipe: &Recipe, layout: &Layout) -> bool {
    keeps_gradient_buffer(recipe, layout) || pipelined_fsdp(recipe, layout)
}

/// Gradient accumulation: the step's gradients are freed by `zero_grad`
/// only after the optimizer step, so those of the earlier micro-batches
/// live through the last one's forward and backward, and each new gradient
/// is added into them (all of the gradients' bytes, sharded as stored).
/// Megatron's and DDP's buffers hold them at any accumulation, and
/// torchtitan's pipeline keeps them unsharded in its stage
/// (`states::unsharded_unit`) until the last micro-batch. The oracle
/// counted it: Llama-3.2-1B widths, 4 layers, one GPU: 11.34 GB at one
/// micro-batch a step, 13.36 GB at 2 and at 4, the difference its 506 M
/// FP32 gradients (2.02 GB); under ZeRO-2/3 on 8 ranks, an eighth of that.
pub(super) fn accumulated_gradients(s: &MemoryShape) -> f64 {
    if s.recipe.data.grad_accum > 1 && !gradients_held(s.recipe, s.layout) {
        gradients(s)
    } else {
        0.0
    }
}

/// Tied embedding: its gradient is added to the LM head's, two extra
/// embedding-sized buffers in the gradient dtype (memory_examples.csv, Llama-3.2-1B rows).
pub(super) fn tied_embedding_gradient(s: &MemoryShape) -> f64 {
    if s.arch.tied && s.stage == Stage::Only && !s.peft && !s.fsdp2 {
        2.0 * s.shard_dense(s.emb * s.sb.grads, 2).min(s.emb * s.sb.grads)
    } else {
        0.0
    }
}

/// foreach AdamW materialises one parameter-sized temporary list (measured:
/// exactly the weights' size in memory_examples.csv).
pub(super) fn foreach_temporaries(s: &MemoryShape, weights: f64) -> f64 {
    // LoRA: the temporaries are adapter-sized (negligible)
    if s.recipe.training.optimizer != Optimizer::AdamwForeach || s.peft {
        return 0.0;
    }
    let g = if s.recipe.parallelism.zero >= 3 || s.fsdp2 {
        s.g
    } else {
        1.0
    };
    weights.max(s.trainable * s.sb.weights / g)
}
