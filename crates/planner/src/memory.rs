//! The per-GPU memory model (SPEC §3): model states, activations, logits and
//! loss, sharding and parallelism, and the allocator/CUDA overheads.
//!
//! The peak of a training step is the largest of three moments, each built
//! from the tensors alive then:
//! - `loss_backward`: weights and optimizer states, every saved activation of
//!   the forward pass, and the loss's own buffers (grads were freed by
//!   `zero_grad(set_to_none=True)`);
//! - `end_of_backward`: all gradients exist; a tied embedding's second
//!   gradient is being accumulated into the first;
//! - `optimizer_step`: states plus the optimizer's temporaries.
//!
//! The `hf` profile follows what PyTorch autograd keeps for Transformers'
//! `LlamaForCausalLM` under `bf16=True` autocast; each coefficient below is
//! derived from the ops and checked against ../shared/data/memory_examples.csv
//! (tests/memory_accuracy.rs). The `megatron` profile follows Megatron-Core
//! with TransformerEngine fused kernels (Korthikanti et al. 2022 without
//! dropout, SwiGLU, flash attention); it is derived, not measured here.

use crate::architecture::{Architecture, ParameterCounts};
use crate::plan::{
    Attention, Checkpointing, Implementation, Loss, Optimizer, Plan, Precision, Training,
};
use serde::Serialize;

/// A named part of the per-GPU memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Term {
    /// Model weights held by this GPU (after TP/PP/EP split and ZeRO-3 sharding).
    Weights,
    /// Gradients (fp32 for HF mixed precision and Megatron's main grads).
    Gradients,
    /// fp32 master copy of bf16 weights (Megatron / DeepSpeed mixed precision).
    MasterWeights,
    /// Optimizer states (AdamW moments etc.).
    OptimizerStates,
    /// Low-precision weight copies: autocast's bf16 casts held by the graph, FP8/FP4 copies.
    WeightCopies,
    /// LoRA adapter weights, grads and optimizer states.
    Adapters,
    /// FSDP/ZeRO-3's all-gathered unit(s) and their unsharded gradient.
    UnshardedUnit,
    /// Activations saved for backward by the decoder layers.
    Activations,
    /// Attention scores and probabilities of eager attention (`s^2`).
    AttentionScores,
    /// Logits and cross-entropy buffers (`s*b*V`).
    LogitsAndLoss,
    /// Short-lived buffers at the peak: the tied embedding's gradient, optimizer temporaries.
    Transient,
    /// CUDA context (cuda runtime, kernels, cuBLAS handles).
    CudaContext,
    /// cuBLAS/cuDNN/NCCL workspaces.
    Workspaces,
    /// Caching-allocator fragmentation.
    Fragmentation,
}

impl Term {
    pub fn key(self) -> &'static str {
        match self {
            Term::Weights => "weights",
            Term::Gradients => "gradients",
            Term::MasterWeights => "master_weights",
            Term::OptimizerStates => "optimizer_states",
            Term::WeightCopies => "weight_copies",
            Term::Adapters => "adapters",
            Term::UnshardedUnit => "unsharded_unit",
            Term::Activations => "activations",
            Term::AttentionScores => "attention_scores",
            Term::LogitsAndLoss => "logits_and_loss",
            Term::Transient => "transient",
            Term::CudaContext => "cuda_context",
            Term::Workspaces => "workspaces",
            Term::Fragmentation => "fragmentation",
        }
    }
    /// Overheads are outside `torch.cuda.max_memory_allocated()`.
    pub fn is_overhead(self) -> bool {
        matches!(
            self,
            Term::CudaContext | Term::Workspaces | Term::Fragmentation
        )
    }
}

/// The moment of the step at which memory peaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    LossBackward,
    /// Recomputing and back-propagating the last checkpointed layer.
    LayerBackward,
    EndOfBackward,
    OptimizerStep,
}

/// Per-GPU memory at the peak, term by term.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryBreakdown {
    pub terms: Vec<(Term, u64)>,
    pub phase: Phase,
    /// What `torch.cuda.max_memory_allocated()` would report.
    pub allocated_peak_bytes: u64,
    /// Everything, overheads included.
    pub peak_bytes: u64,
    /// Activations + scores + logits at the peak (for charts and warnings).
    pub activation_bytes: u64,
    /// Activations saved by the decoder layers and the final norm, whatever
    /// the peak's moment (no scores, logits or recompute).
    pub saved_activation_bytes: u64,
    /// The logits-and-loss buffers at the start of backward.
    pub logits_bytes: u64,
    /// Weights, gradients, master weights, optimizer states, persistent weight
    /// copies, adapters and FSDP's unsharded unit, whatever the peak's moment.
    pub model_state_bytes: u64,
}

impl MemoryBreakdown {
    pub fn get(&self, term: Term) -> u64 {
        self.terms
            .iter()
            .filter(|(t, _)| *t == term)
            .map(|(_, b)| b)
            .sum()
    }
}

/// CUDA context of a PyTorch process on a recent driver (~0.5–0.9 GiB; we take 0.75).
pub const CUDA_CONTEXT_BYTES: u64 = 768 << 20;

/// Degrees of parallelism resolved for one GPU.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Layout {
    pub gpus: u64,
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub ep: u64,
    /// Data-parallel degree `gpus / (tp*pp*cp)`.
    pub dp: u64,
    /// ZeRO/FSDP shard group size.
    pub shard: u64,
}

/// Bytes per parameter of each model state (SPEC §3.2 table).
#[derive(Clone, Copy, Debug)]
struct StateBytes {
    weights: f64,
    grads: f64,
    master: f64,
    optimizer: f64,
    /// Low-precision copies of Linear weights (autocast casts are counted with activations).
    copies: f64,
}

fn state_bytes(plan: &Plan) -> StateBytes {
    let megatron = plan.implementation == Implementation::Megatron;
    let (weights, grads, master) = match plan.precision {
        Precision::Fp32 => (4.0, 4.0, 0.0),
        Precision::Bf16Pure => (2.0, 2.0, 0.0),
        // Megatron: bf16 params, fp32 main grads, fp32 master in the optimizer.
        _ if megatron => (2.0, 4.0, 4.0),
        // HF ZeRO-1 (DeepSpeed bf16): bf16 params, fp32 gradient accumulation,
        // fp32 master weights partitioned with the optimizer states.
        _ if plan.zero == 1 => (2.0, 4.0, 4.0),
        // HF Trainer bf16=True: fp32 params and grads (DDP: autocast casts on
        // the fly; FSDP: sharded fp32 params, bf16 compute copies).
        _ => (4.0, 4.0, 0.0),
    };
    let moment = if plan.precision == Precision::Bf16Pure {
        2.0
    } else {
        4.0
    };
    let optimizer = match plan.optimizer {
        Optimizer::Adamw | Optimizer::AdamwForeach => 2.0 * moment,
        Optimizer::Adamw8bit => 2.0,
        // Factored second moment: rows + columns per matrix, negligible per parameter.
        Optimizer::Adafactor => 0.02,
        Optimizer::Sgd => moment,
    };
    // TransformerEngine keeps a quantised copy of each Linear weight for the
    // forward (row-wise) and one for the backward (column-wise / transpose),
    // plus block scales: MXFP8 one E8M0 per 32, NVFP4 one E4M3 per 16.
    let copies = match plan.precision {
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

/// Which tensors the forward pass keeps, by implementation and precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Profile {
    /// HF, fp32 params under bf16 autocast (DDP): fp32 residual stream, a
    /// bf16 cast of each norm output per consuming Linear, cast weight copies.
    HfAutocast,
    /// HF with bf16 compute weights: pure bf16, or FSDP/ZeRO whose
    /// mixed-precision policy gathers bf16 parameters (accelerate's default).
    HfBf16,
    /// HF in fp32.
    HfFp32,
    /// Megatron-Core / TransformerEngine fused kernels, bf16 activations.
    Megatron,
}

fn profile(plan: &Plan) -> Profile {
    match (plan.implementation, plan.precision) {
        (Implementation::Megatron, _) => Profile::Megatron,
        (Implementation::Hf, Precision::Fp32) => Profile::HfFp32,
        (Implementation::Hf, Precision::Bf16Pure) => Profile::HfBf16,
        (Implementation::Hf, _) if plan.zero >= 1 && plan.train == Training::Full => {
            Profile::HfBf16
        }
        (Implementation::Hf, _) => Profile::HfAutocast,
    }
}

/// Bytes per element of the residual stream (what a checkpointed layer keeps).
fn residual_bytes(profile: Profile) -> f64 {
    match profile {
        Profile::HfAutocast | Profile::HfFp32 => 4.0,
        Profile::HfBf16 | Profile::Megatron => 2.0,
    }
}

/// Bytes saved per token by one decoder layer, split into the part that
/// tensor parallelism divides and the part that only sequence parallelism
/// divides (norms, residual).
#[derive(Clone, Copy, Debug, Default)]
struct LayerActivations {
    tp_split: f64,
    replicated: f64,
    /// Eager attention's `s^2` part (per token, already multiplied by `s`).
    scores: f64,
}

fn layer_activations(arch: &Architecture, plan: &Plan, seq_per_gpu: f64) -> LayerActivations {
    let h = arch.hidden as f64;
    let q = arch.q_width() as f64;
    let kv = arch.kv_width() as f64;
    let a = arch.heads as f64;
    let (f, routed) = match &arch.moe {
        // Each token passes through `active` experts (+ shared ones).
        Some(m) => (m.expert_ffn as f64, (m.active + m.shared) as f64),
        None => (arch.ffn as f64, 1.0),
    };
    let router = arch
        .moe
        .as_ref()
        .map_or(0.0, |m| 4.0 * m.experts as f64 * 2.0);
    let gated = arch.mlp.is_gated();
    let extra_norms = arch.norms_per_layer.saturating_sub(2) as f64;
    let qk_norm_width = match arch.qk_norm {
        crate::architecture::QkNorm::None => 0.0,
        _ => q + kv,
    };
    let eager = plan.attention == Attention::Eager;
    let fp8 = plan.precision.is_low_precision();
    // A Linear input saved for the weight gradient: FP8 recipes keep it in 8 bits.
    let lin = if fp8 { 1.0 } else { 2.0 };
    match profile(plan) {
        Profile::HfFp32 => {
            // RMSNorm saves its input (pow), the normalised value (weight mul)
            // and its output is saved by the next Linear: 3 x 4h.
            let norm = 12.0 * h;
            let attn = 4.0 * q + 8.0 * kv + 4.0 * q + 4.0 * a; // q, k, v, output, logsumexp
            let mlp = if gated { 16.0 * f } else { 8.0 * f };
            let kv_rep = if eager { 8.0 * (q - kv) - 4.0 * a } else { 0.0 };
            LayerActivations {
                tp_split: attn + kv_rep + routed * mlp + router + 8.0 * qk_norm_width,
                replicated: 2.0 * norm + extra_norms * 8.0 * h,
                scores: if eager { 4.0 * a * seq_per_gpu } else { 0.0 },
            }
        }
        Profile::HfBf16 => {
            // RMSNorm upcasts to fp32 (saved by pow: 4h), saves the bf16
            // normalised value (2h), and its bf16 output is saved by the Linears (2h).
            let norm = 6.0 * h + lin * h;
            let attn = 2.0 * q + 4.0 * kv + lin * q + 4.0 * a;
            let mlp = if gated {
                6.0 * f + lin * f
            } else {
                2.0 * f + lin * f
            };
            let kv_rep = if eager { 4.0 * (q - kv) - 4.0 * a } else { 0.0 };
            LayerActivations {
                tp_split: attn + kv_rep + routed * mlp + router + 6.0 * qk_norm_width,
                replicated: 2.0 * norm + extra_norms * 8.0 * h,
                // fp32 softmax output + its bf16 cast used by the matmul with v
                scores: if eager { 6.0 * a * seq_per_gpu } else { 0.0 },
            }
        }
        Profile::HfAutocast => {
            // fp32 residual; each norm saves its fp32 input and normalised
            // value (8h); autocast casts the norm output to bf16 once per
            // consuming Linear (q, k, v: 3 casts; gate, up: 2), each saved.
            let cast = lin;
            let attn_norm = 8.0 * h + 3.0 * cast * h;
            let mlp_norm = 8.0 * h + if gated { 2.0 } else { 1.0 } * cast * h;
            let attn = 2.0 * q + 4.0 * kv + cast * q + 4.0 * a;
            let mlp = if gated {
                6.0 * f + cast * f
            } else {
                2.0 * f + cast * f
            };
            let kv_rep = if eager { 4.0 * (q - kv) - 4.0 * a } else { 0.0 };
            LayerActivations {
                tp_split: attn + kv_rep + routed * mlp + router + 8.0 * qk_norm_width,
                replicated: attn_norm + mlp_norm + extra_norms * 10.0 * h,
                scores: if eager { 6.0 * a * seq_per_gpu } else { 0.0 },
            }
        }
        Profile::Megatron => {
            // TE LayerNormLinear saves the norm input (2h) and its output for
            // the weight gradient (2h, FP8: 1h); flash attention saves q, k,
            // v, output and logsumexp; SwiGLU saves fc1's output (2 x 2f) and
            // fc2 saves the activation (2f, FP8: 1f).
            let fp32 = plan.precision == Precision::Fp32;
            let e = if fp32 { 2.0 } else { 1.0 };
            let norms = e * (2.0 * h + lin * h) * 2.0;
            let attn = e * (2.0 * q + 4.0 * kv + lin * q) + 4.0 * a;
            let mlp = e * if gated {
                4.0 * f + lin * f
            } else {
                2.0 * f + lin * f
            };
            let kv_rep = if eager { 4.0 * (q - kv) } else { 0.0 };
            LayerActivations {
                tp_split: attn + kv_rep + routed * mlp + router + 4.0 * qk_norm_width,
                replicated: norms + extra_norms * 4.0 * h,
                scores: if eager { 5.0 * a * seq_per_gpu } else { 0.0 },
            }
        }
    }
}

/// Number of Linear-weight parameters per layer (autocast casts them).
fn linear_params(counts: &ParameterCounts) -> f64 {
    (counts.per_layer - counts.norms_per_layer) as f64
}

/// Which pipeline stage a breakdown describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// No pipeline: embedding, all layers, head and loss.
    Only,
    /// First of `p` stages: embedding, `min(p, m)` micro-batches in flight.
    First,
    /// Last stage: head, final norm, loss, one micro-batch in flight.
    Last,
}

/// The full per-GPU breakdown for a resolved plan: with pipeline parallelism,
/// the more loaded of the first and the last stage.
pub fn breakdown(
    arch: &Architecture,
    counts: &ParameterCounts,
    plan: &Plan,
    layout: &Layout,
) -> MemoryBreakdown {
    if layout.pp <= 1 {
        return stage_breakdown(arch, counts, plan, layout, Stage::Only);
    }
    let first = stage_breakdown(arch, counts, plan, layout, Stage::First);
    let last = stage_breakdown(arch, counts, plan, layout, Stage::Last);
    if last.peak_bytes > first.peak_bytes {
        last
    } else {
        first
    }
}

fn stage_breakdown(
    arch: &Architecture,
    counts: &ParameterCounts,
    plan: &Plan,
    layout: &Layout,
    stage: Stage,
) -> MemoryBreakdown {
    let sb = state_bytes(plan);
    let t = layout.tp as f64;
    let p = layout.pp as f64;
    let c = layout.cp as f64;
    let ep = layout.ep as f64;
    let g = layout.shard.max(1) as f64;
    let zero = plan.zero;
    let layers_stage = (arch.layers as f64 / p).ceil();

    // ---- parameters held by the most loaded pipeline stage -----------------
    let expert_params = match &arch.moe {
        Some(m) => (m.experts as u64 * counts.expert) as f64,
        None => 0.0,
    };
    let dense_layer = counts.per_layer as f64 - expert_params;
    let layer_params = dense_layer / t + expert_params / (ep * t);
    let emb = counts.embedding as f64 / t;
    let head = if arch.tied && stage == Stage::Only {
        0.0
    } else {
        counts.embedding as f64 / t
    };
    // First stage: embedding (+ the head when p == 1); last stage: LM head and final norm.
    let final_norm_params = arch.hidden as f64;
    let stage_has_head = stage != Stage::First;
    let stage_params = layers_stage * layer_params
        + if stage != Stage::Last { emb } else { 0.0 }
        + if stage_has_head {
            head + final_norm_params
        } else {
            0.0
        };

    // ---- model states -------------------------------------------------------
    let peft = plan.train != Training::Full;
    let trainable = if peft { 0.0 } else { stage_params };
    let weight_bytes = match plan.train {
        Training::Full => sb.weights,
        // Frozen base in bf16 (LoRA) or NF4 with double-quantised constants (QLoRA).
        Training::Lora => 2.0,
        Training::Qlora => 0.5 + 0.127 / 8.0 * 4.0,
    };
    let shard = |x: f64, stage: u8| if zero >= stage { x / g } else { x };
    // FSDP's mixed-precision policy (HF Trainer + accelerate): the fp32
    // parameters are sharded from SHARD_GRAD_OP (ZeRO-2) on, and a bf16 copy
    // is gathered for compute.
    let mixed_policy = plan.implementation == Implementation::Hf
        && !matches!(plan.precision, Precision::Fp32 | Precision::Bf16Pure)
        && !peft;
    let weights = shard(
        stage_params * weight_bytes,
        if mixed_policy && zero == 2 { 2 } else { 3 },
    );
    let grads = shard(trainable * sb.grads, 2);
    let master = shard(trainable * sb.master, 1);
    let optimizer = shard(trainable * sb.optimizer, 1);
    let linear_stage =
        linear_params(counts) / counts.per_layer.max(1) as f64 * layers_stage * layer_params;
    let copies = shard(linear_stage * sb.copies, 3);
    let adapters = if peft {
        // fp32 adapter weights, grads and AdamW moments: 16 B/param.
        arch.lora_params_per_layer(plan.lora_rank) * layers_stage / t * 16.0
    } else {
        0.0
    };

    // ---- FSDP's unsharded unit ---------------------------------------------
    // One decoder layer gathered for compute, and one prefetched; plus the
    // layer's full gradient before its reduce-scatter.
    // Gathered in the compute dtype; a frozen PEFT base in its own format.
    let gathered_bytes = match (plan.train, plan.precision) {
        (Training::Full, Precision::Fp32) => 4.0,
        (Training::Full, _) => 2.0,
        _ => weight_bytes,
    };
    let unsharded = if zero >= 3 && g > 1.0 {
        layer_params * (2.0 * gathered_bytes + if peft { 0.0 } else { gathered_bytes })
    } else {
        0.0
    };
    // SHARD_GRAD_OP keeps the gathered bf16 parameters from forward to backward.
    let compute_copy = if mixed_policy && zero == 2 {
        stage_params * 2.0
    } else {
        0.0
    };

    // ---- activations ---------------------------------------------------------
    let b = plan.micro_batch as f64;
    let s = plan.seq as f64;
    let tokens = b * s / c; // tokens per GPU per micro-batch (CP splits the sequence)
    let la = layer_activations(arch, plan, s);
    let sp_div = if plan.sp || layout.tp == 1 { t } else { 1.0 };
    let per_layer_token = la.tp_split / t + la.replicated / sp_div;
    let scores_token = la.scores / t;
    let full_layer = tokens * (per_layer_token + scores_token);
    // Pipeline: the first stage keeps min(p, m) micro-batches in flight;
    // interleaving adds (1 + (p-1)/(p*vp)) (Narayanan et al. 2021).
    let m = plan.grad_accum as f64;
    let in_flight = if stage == Stage::First {
        let base = p.min(m);
        let vp = plan.vp.max(1) as f64;
        if vp > 1.0 {
            base * (1.0 + (p - 1.0) / (p * vp))
        } else {
            base
        }
    } else {
        1.0
    };
    let recomputed = plan.checkpointing.recomputed_fraction();
    let kept_layers = layers_stage * (1.0 - recomputed);
    let ckpt_layers = layers_stage * recomputed;
    // A checkpointed layer keeps only its input (residual dtype).
    let prof = profile(plan);
    let h = arch.hidden as f64;
    let mut ckpt_input = tokens * h * residual_bytes(prof) / sp_div;
    if plan.checkpointing == Checkpointing::Op {
        // torchtitan's policy saves the outputs of the 1st, 3rd, 5th and 7th
        // matmul of a Llama block (wq, wv, w1, w2) and of flash attention
        // (output + logsumexp), all bf16.
        let (q, kv) = (arch.q_width() as f64, arch.kv_width() as f64);
        let (f, routed) = match &arch.moe {
            Some(m) => (m.expert_ffn as f64, (m.active + m.shared) as f64),
            None => (arch.ffn as f64, 1.0),
        };
        let a = arch.heads as f64;
        ckpt_input += tokens
            * ((2.0 * q + 2.0 * kv + 2.0 * f * routed + 2.0 * q + 4.0 * a) / t + 2.0 * h / sp_div);
    }
    let mut kept = (kept_layers * full_layer + ckpt_layers * ckpt_input) * in_flight;
    let mut scores = kept_layers * tokens * scores_token * in_flight;
    if plan.offload {
        // SMP activation offloading keeps about two layers' worth on the GPU.
        let horizon = 2.0_f64.min(layers_stage);
        let per_layer = kept / layers_stage.max(1.0);
        kept = per_layer * horizon;
        scores = scores / layers_stage.max(1.0) * horizon;
    }
    // During recompute, one layer's full working set is rebuilt.
    let recompute = if recomputed > 0.0 { full_layer } else { 0.0 };
    let activations_saved = kept - scores;
    // Autocast's bf16 weight copies, held by the graph until each layer's backward.
    let autocast = prof == Profile::HfAutocast && !peft;
    let cast_copies = if autocast {
        let per_layer = linear_params(counts) / counts.per_layer.max(1) as f64 * layer_params * 2.0;
        let head_copy = if stage_has_head {
            counts.embedding as f64 / t * 2.0
        } else {
            0.0
        };
        (kept_layers + if recomputed > 0.0 { 1.0 } else { 0.0 }) * per_layer + head_copy
    } else {
        0.0
    };

    // ---- logits and loss -----------------------------------------------------
    let v = arch.vocab as f64;
    let final_norm = if stage_has_head {
        tokens
            * arch.hidden as f64
            * match prof {
                Profile::HfFp32 => 12.0,
                Profile::HfBf16 => 8.0,
                Profile::HfAutocast => 10.0,
                Profile::Megatron => 4.0,
            }
            / sp_div
    } else {
        0.0
    };
    let logits = if !stage_has_head {
        0.0
    } else {
        let per_element = match (plan.loss, plan.implementation) {
            // HF: the loss upcasts the logits to fp32 and log_softmax saves its
            // fp32 output (4 B); at the start of backward its gradient and the
            // log_softmax input gradient coexist with it (8 B more): 12 B.
            (Loss::Plain, Implementation::Hf) => 12.0,
            // Megatron's fused vocab-parallel cross-entropy: bf16 logits, fp32
            // softmax saved, one fp32 gradient buffer: ~10 B.
            (Loss::Plain, Implementation::Megatron) => 10.0,
            // Liger fused linear cross-entropy: logits in chunks of ~1/8 of
            // the tokens, fp32, plus the hidden-state gradient.
            (Loss::Fused, _) => 12.0 / 8.0,
        };
        tokens * v / t * per_element
    };

    // ---- the three moments -------------------------------------------------
    let copies = copies + compute_copy;
    let states_no_grad = weights + master + optimizer + copies + adapters;
    let loss_backward =
        states_no_grad + unsharded + cast_copies + activations_saved + scores + final_norm + logits;
    // Recomputing the last checkpointed layer happens after the loss buffers
    // are freed: its full working set sits on top of the saved inputs and the
    // LM head's gradient.
    let head_grad = if stage_has_head && !peft {
        shard(emb * sb.grads, 2)
    } else {
        0.0
    };
    let layer_backward = states_no_grad
        + unsharded
        + cast_copies
        + activations_saved
        + scores
        + recompute
        + head_grad;
    // Tied embedding: the embedding's gradient is added to the LM head's (two
    // extra embedding-sized buffers in the gradient dtype).
    let tied_grad = if arch.tied && stage == Stage::Only && !peft {
        2.0 * shard(emb * sb.grads, 2).min(emb * sb.grads)
    } else {
        0.0
    };
    let end_of_backward = states_no_grad + grads + unsharded + tied_grad;
    // foreach AdamW materialises one parameter-sized temporary list (measured:
    // exactly the weights' size in memory_examples.csv).
    let foreach_temp = if plan.optimizer == Optimizer::AdamwForeach {
        weights.max(trainable * sb.weights / if zero >= 3 { g } else { 1.0 })
    } else {
        0.0
    };
    let optimizer_step = states_no_grad + grads + foreach_temp;

    let phases = [
        loss_backward,
        layer_backward,
        end_of_backward,
        optimizer_step,
    ];
    let top = phases.iter().copied().fold(0.0, f64::max);
    let (phase, mut terms) = if loss_backward >= top {
        (
            Phase::LossBackward,
            vec![
                (Term::Weights, weights),
                (Term::Gradients, 0.0),
                (Term::MasterWeights, master),
                (Term::OptimizerStates, optimizer),
                (Term::WeightCopies, copies + cast_copies),
                (Term::Adapters, adapters),
                (Term::UnshardedUnit, unsharded),
                (Term::Activations, activations_saved + final_norm),
                (Term::AttentionScores, scores),
                (Term::LogitsAndLoss, logits),
            ],
        )
    } else if layer_backward >= top {
        (
            Phase::LayerBackward,
            vec![
                (Term::Weights, weights),
                (Term::Gradients, head_grad),
                (Term::MasterWeights, master),
                (Term::OptimizerStates, optimizer),
                (Term::WeightCopies, copies + cast_copies),
                (Term::Adapters, adapters),
                (Term::UnshardedUnit, unsharded),
                (Term::Activations, activations_saved + recompute),
                (Term::AttentionScores, scores),
            ],
        )
    } else if end_of_backward >= optimizer_step {
        (
            Phase::EndOfBackward,
            vec![
                (Term::Weights, weights),
                (Term::Gradients, grads),
                (Term::MasterWeights, master),
                (Term::OptimizerStates, optimizer),
                (Term::WeightCopies, copies),
                (Term::Adapters, adapters),
                (Term::UnshardedUnit, unsharded),
                (Term::Transient, tied_grad),
            ],
        )
    } else {
        (
            Phase::OptimizerStep,
            vec![
                (Term::Weights, weights),
                (Term::Gradients, grads),
                (Term::MasterWeights, master),
                (Term::OptimizerStates, optimizer),
                (Term::WeightCopies, copies),
                (Term::Adapters, adapters),
                (Term::Transient, foreach_temp),
            ],
        )
    };
    let allocated: f64 = terms.iter().map(|(_, b)| b).sum();
    let activation_bytes = activations_saved + recompute + final_norm + scores + logits;
    terms.push((Term::CudaContext, CUDA_CONTEXT_BYTES as f64));
    terms.push((
        Term::Workspaces,
        plan.workspace_gib * crate::hardware::GIB as f64,
    ));
    terms.push((Term::Fragmentation, allocated * plan.fragmentation / 100.0));
    let terms: Vec<(Term, u64)> = terms
        .into_iter()
        .map(|(t, b)| {
            (
                t,
                if b.is_finite() && b > 0.0 {
                    b.round() as u64
                } else {
                    0
                },
            )
        })
        .collect();
    let allocated_peak_bytes = terms
        .iter()
        .filter(|(t, _)| !t.is_overhead())
        .map(|(_, b)| b)
        .sum();
    let peak_bytes = terms.iter().map(|(_, b)| b).sum();
    MemoryBreakdown {
        terms,
        phase,
        allocated_peak_bytes,
        peak_bytes,
        activation_bytes: activation_bytes.max(0.0) as u64,
        model_state_bytes: (states_no_grad + grads + unsharded).round() as u64,
        saved_activation_bytes: (activations_saved + final_norm).round() as u64,
        logits_bytes: logits.round() as u64,
    }
}
