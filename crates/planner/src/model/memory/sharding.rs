//! FSDP2's units, as the memory oracle counts them (tools/oracle): the
//! parameters a unit gathers to compute and the gradients it reduce-scatters.

use super::shape::MemoryShape;
use crate::model::plan::Stack;

// ---- FSDP2 units (what the oracle counts: tools/oracle) -----------------------

/// Bytes per element FSDP2 gathers parameters in and computes gradients in:
/// the mixed-precision policy's BF16, else the weights' own dtype.
pub(super) fn fsdp_compute_bytes(s: &MemoryShape) -> f64 {
    if s.mixed_policy {
        2.0
    } else {
        s.weight_bytes
    }
}

/// Bytes per element of FSDP2's reduce-scatter input: the policy's fp32
/// `reduce_dtype`, else the gradients' dtype.
pub(super) fn fsdp_reduce_bytes(s: &MemoryShape) -> f64 {
    if s.mixed_policy {
        4.0
    } else {
        s.sb.grads
    }
}

/// The root unit's parameters: embedding, final norm and (untied) LM head,
/// everything outside the decoder layers.
pub(super) fn root_params(s: &MemoryShape) -> f64 {
    s.params - s.layers * s.layer_params
}

/// FSDP2's gathered parameters and unsharded gradients at each moment of the
/// step. The root (`fully_shard(model)`) is gathered when forward starts and,
/// as the root, kept until its backward ends. ZeRO-3 gathers one decoder layer
/// at a time and prefetches the next; ZeRO-2 (`reshard_after_forward=False`)
/// keeps every layer gathered from its forward to its backward. A layer's
/// backward makes its full gradient in the compute dtype, then copies it into
/// a reduce-scatter input in the reduce dtype. The root's gradients (head,
/// embedding) live until the root's reduce-scatter, the last of the step.
#[derive(Default)]
pub(super) struct Fsdp2Units {
    /// At the end of forward, when the loss is computed.
    pub(super) forward: f64,
    /// At the loss's backward.
    pub(super) loss: f64,
    /// While a decoder layer is (recomputed and) back-propagated.
    pub(super) layer: f64,
    /// When forward starts: the root and the first layer, in the all-gather
    /// buffer and as parameters.
    pub(super) start: f64,
    /// The previous layer's reduce-scatter input and output, held while
    /// the next layer is back-propagated (that layer's activations are gone).
    pub(super) scatter: f64,
    /// At the root's reduce-scatter, after the last layer.
    pub(super) end: f64,
}

pub(super) fn fsdp2_units(s: &MemoryShape) -> Fsdp2Units {
    if !s.fsdp2 {
        return Fsdp2Units::default();
    }
    let (cd, rd) = (fsdp_compute_bytes(s), fsdp_reduce_bytes(s));
    let layer = s.layer_params;
    let root = root_params(s);
    let (trainable_layer, root_grads, head_grad) = if s.peft {
        (0.0, 0.0, 0.0)
    } else {
        // the LM head's gradient is made at the start of backward
        (layer, root, cd * s.emb)
    };
    // the previous layer's reduce-scatter input and sharded output
    let scattered = rd * trainable_layer * (1.0 + 1.0 / s.g);
    let (forward, loss, layer_backward, scatter) = if s.recipe.parallelism.zero >= 3 {
        // The root, plus the last layer prefetched for backward; while a layer
        // runs, the next one is gathered too.
        let root_and_one = cd * (root + layer);
        let two = cd * (root + 2.0 * layer);
        (root_and_one, root_and_one, two, scattered)
    } else {
        // Every unit stays gathered from forward to backward (the last
        // all-gather's buffer is still held when the loss is computed); a
        // layer is resharded after its backward.
        let all = cd * s.params;
        (all + cd * layer, all, all, scattered - cd * layer)
    };
    Fsdp2Units {
        start: 2.0 * cd * (root + layer),
        forward,
        loss,
        layer: layer_backward + head_grad,
        scatter,
        end: root_reduce_scatter(s, root_grads, cd, rd).max(tp_embedding_backward(s, cd, rd)),
    }
}

/// train.py's tensor parallelism (the HF stack): DTensor's backward of the
/// vocabulary-split embedding makes the gradient of the whole vocabulary,
/// then copies out this rank's rows, while the root's gathered weights, the
/// LM head's gradient and the last layer's reduce-scatter input (its
/// gradient and their reduce-dtype copy) are held (oracle rows `*/tp/*`:
/// `aten.embedding_dense_backward` of `V x h`, then `aten.clone` of
/// `V/t x h`). The root's sharded gradient, which the gradients term counts,
/// does not exist yet at one micro-batch a step (`root_grads_to_come`).
fn tp_embedding_backward(s: &MemoryShape, cd: f64, rd: f64) -> f64 {
    if s.recipe.implementation.stack != Stack::Hf || s.t <= 1.0 || s.peft {
        return 0.0;
    }
    let whole = s.arch.vocab as f64 * s.arch.hidden as f64;
    let rows = whole / s.t;
    let root = root_params(s);
    let head_grad = cd * rows;
    cd * (root + whole + rows) + head_grad + (cd + rd) * s.layer_params
        - root_grads_to_come(s, root)
}

/// The root's sharded gradient, which the gradients term counts but which
/// its reduce-scatter at the end of backward has yet to make; with
/// gradient accumulation the earlier micro-batches made it (oracle:
/// `llama-3.1-8b/tp/ga=8`, 501 MiB more at the embedding's backward than
/// at one micro-batch a step).
fn root_grads_to_come(s: &MemoryShape, root: f64) -> f64 {
    if s.recipe.data.grad_accum > 1 {
        0.0
    } else {
        s.sb.grads * root / s.g
    }
}

/// The root's reduce-scatter, the step's last: first its unsharded gradients
/// and their copy in the reduce dtype coexist (its sharded gradient, which
/// the gradients term counts, may not exist yet: `root_grads_to_come`); then the sharded output
/// joins the copy while the LM head's gradient is still held.
pub(super) fn root_reduce_scatter(s: &MemoryShape, root: f64, cd: f64, rd: f64) -> f64 {
    if root == 0.0 {
        return 0.0;
    }
    let head = if s.arch.tied { 0.0 } else { s.emb };
    let copy_in = (cd + rd) * root - root_grads_to_come(s, root);
    let scattered = rd * root + cd * head;
    copy_in.max(scattered)
}
