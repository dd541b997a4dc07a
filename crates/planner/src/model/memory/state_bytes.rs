//! Bytes per parameter of each model state (SPEC §3.2): weights, gradients,
//! master weights, optimizer states and low-precision weight copies, by
//! precision, stack and optimizer.

use crate::model::layout::Layout;
use crate::model::plan::{Optimizer, Precision, Stack};
use crate::model::recipe::Recipe;

/// Bytes per parameter of each model state (SPEC §3.2 table).
#[derive(Clone, Copy, Debug)]
pub(super) struct StateBytes {
    pub(super) weights: f64,
    pub(super) grads: f64,
    pub(super) master: f64,
    pub(super) optimizer: f64,
    /// Low-precision copies of Linear weights (autocast casts are counted with activations).
    pub(super) copies: f64,
}

pub(super) fn state_bytes(recipe: &Recipe, layout: &Layout) -> StateBytes {
    let megatron = recipe.implementation.stack == Stack::Megatron;
    let (weights, grads, master) = match recipe.numerics.precision {
        Precision::Fp32 => (4.0, 4.0, 0.0),
        Precision::Bf16Pure => (2.0, 2.0, 0.0),
        // Megatron: bf16 params, fp32 main grads (bf16 with
        // `--grad-reduce-in-bf16`: param_and_grad_buffer.py allocates the
        // gradient buffer in the reduction dtype), fp32 master in the optimizer.
        _ if megatron && recipe.numerics.grad_bf16 => (2.0, 2.0, 4.0),
        _ if megatron => (2.0, 4.0, 4.0),
        // HF ZeRO-1 (DeepSpeed bf16): bf16 params, fp32 gradient accumulation,
        // fp32 master weights partitioned with the optimizer states.
        _ if recipe.parallelism.zero == 1 => (2.0, 4.0, 4.0),
        // HF Trainer bf16=True: fp32 params and grads (DDP: autocast casts on
        // the fly; FSDP: sharded fp32 params, bf16 compute copies).
        _ => (4.0, 4.0, 0.0),
    };
    let bf16_moments =
        recipe.numerics.bf16_moments && recipe.implementation.stack == Stack::Megatron;
    let moment = if recipe.numerics.precision == Precision::Bf16Pure || bf16_moments {
        2.0
    } else {
        4.0
    };
    let optimizer = match recipe.training.optimizer {
        Optimizer::Adamw | Optimizer::AdamwForeach => 2.0 * moment,
        Optimizer::Adamw8bit => 2.0,
        // Factored second moment: rows + columns per matrix, negligible per parameter.
        Optimizer::Adafactor => 0.02,
        Optimizer::Sgd => moment,
    };
    // TransformerEngine keeps a quantised copy of each Linear weight for the
    // forward (row-wise) and one for the backward (column-wise / transpose),
    // plus block scales: MXFP8 one E8M0 per 32, NVFP4 one E4M3 per 16. A
    // per-tensor FP8 weight on B200/B300 is one copy: their FP8 GEMMs take
    // any layout, so TE makes no transpose (`Float8Tensor.update_usage`).
    // torchao (torchtitan) keeps none: its Float8 / MX Linear casts the
    // high-precision weight in each forward and backward
    // (`hp_tensor_to_float8_dynamic`), a per-layer transient; its B200 runs
    // peak lower in float8 than in BF16 (titan_33 vs titan_36).
    let copies = match recipe.numerics.precision {
        _ if recipe.implementation.stack == Stack::Torchtitan => 0.0,
        Precision::Fp8 if !layout.fp8_tn_only => 1.0,
        Precision::Fp8 => 2.0,
        Precision::Mxfp8 => 2.0 * (1.0 + 1.0 / 32.0),
        Precision::Nvfp4 => 2.0 * (0.5 + 1.0 / 16.0),
        _ => 0.0,
    };
    StateBytes {
        weights,
        grads,
        master,
        optimizer,
        copies,
    }
}
