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
    /// Terms the fits verdict assumes rather than counts: the CUDA context,
    /// library workspaces and allocator fragmentation (SPEC §3.4; the user
    /// can change the last two).
    pub fn is_assumed(self) -> bool {
        matches!(
            self,
            Term::CudaContext | Term::Workspaces | Term::Fragmentation
        )
    }

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
    /// FSDP2 gathers the root (embedding, LM head) and the first layer:
    /// all-gather buffers and the gathered parameters coexist.
    RootAllGather,
    /// The end of forward: the loss is computed (FSDP2 ZeRO-2 still holds
    /// the last all-gather's buffer).
    LossForward,
    LossBackward,
    /// Recomputing and back-propagating the last checkpointed layer.
    LayerBackward,
    /// FSDP2's reduce-scatter of a layer's gradient, after its backward.
    LayerReduceScatter,
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
            .fold(0u64, |sum, (_, b)| sum.saturating_add(*b))
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
    /// Decoder layers per pipeline rank.
    pub stages: Stages,
}

/// Decoder layers per pipeline rank, as Megatron-LM builds them
/// (`transformer_block.py::get_num_layers_to_build`; shared/data/
/// gb200_nvl72_and_uneven_pp.md §3): the first and last rank may hold fewer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Stages {
    pub first: u64,
    /// Every rank between the first and the last.
    pub middle: u64,
    pub last: u64,
    /// The embedding and the loss count as one layer slot each
    /// (`account_for_embedding_in_pipeline_split`, `..._loss_...`).
    pub embedding_and_loss_slots: bool,
}

impl Stages {
    /// `layers / pp` on every rank (rounded up where it does not divide).
    pub fn even(layers: u64, pp: u64) -> Stages {
        let n = layers.div_ceil(pp.max(1));
        Stages {
            first: n,
            middle: n,
            last: n,
            embedding_and_loss_slots: false,
        }
    }

    /// The split Megatron runs for `pp` ranks of `vp` virtual stages with no
    /// explicit layout: even when `pp*vp` divides the layers, else with the
    /// embedding and the loss counted as slots when `pp*vp` divides `layers + 2`.
    pub fn megatron(layers: u64, pp: u64, vp: u64) -> Option<Stages> {
        let chunks = pp.max(1) * vp.max(1);
        if layers.is_multiple_of(chunks) {
            return Some(Stages::even(layers, pp));
        }
        if pp > 1 && (layers + 2).is_multiple_of(chunks) {
            let slots = (layers + 2) / pp;
            return Some(Stages {
                first: slots - 1,
                middle: slots,
                last: slots - 1,
                embedding_and_loss_slots: true,
            });
        }
        None
    }

    /// Explicit first/last-rank layer counts (`--decoder-first/last-pipeline-num-layers`,
    /// or a `--pipeline-model-parallel-layout` that places them): the rest
    /// splits evenly over the middle ranks. Megatron's two flags want every
    /// count a multiple of `vp`; a layout string places any count (DeepSeek-V3's
    /// recipes put 4 layers and the embedding on the first of 16 virtual
    /// stages, 1 layer, the MTP layer and the loss on the last), so any is
    /// accepted.
    pub fn explicit(layers: u64, pp: u64, first: Option<u64>, last: Option<u64>) -> Option<Stages> {
        let ends = first.is_some() as u64 + last.is_some() as u64;
        let set = first.unwrap_or(0) + last.unwrap_or(0);
        if pp < 2 || ends > pp || set > layers {
            return None;
        }
        let rest = layers - set;
        let others = pp - ends;
        let middle = match others {
            0 if rest == 0 => 0,
            0 => return None,
            n if rest.is_multiple_of(n) => rest / n,
            _ => return None,
        };
        Some(Stages {
            first: first.unwrap_or(middle),
            middle,
            last: last.unwrap_or(middle),
            embedding_and_loss_slots: false,
        })
    }

    /// Layers on each of the `pp` ranks.
    pub fn per_rank(&self, pp: u64) -> Vec<u64> {
        (0..pp.max(1))
            .map(|i| match i {
                0 => self.first,
                i if i + 1 == pp => self.last,
                _ => self.middle,
            })
            .collect()
    }
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
        // Megatron: bf16 params, fp32 main grads (bf16 with
        // `--grad-reduce-in-bf16`: param_and_grad_buffer.py allocates the
        // gradient buffer in the reduction dtype), fp32 master in the optimizer.
        _ if megatron && plan.grad_bf16 => (2.0, 2.0, 4.0),
        _ if megatron => (2.0, 4.0, 4.0),
        // HF ZeRO-1 (DeepSpeed bf16): bf16 params, fp32 gradient accumulation,
        // fp32 master weights partitioned with the optimizer states.
        _ if plan.zero == 1 => (2.0, 4.0, 4.0),
        // HF Trainer bf16=True: fp32 params and grads (DDP: autocast casts on
        // the fly; FSDP: sharded fp32 params, bf16 compute copies).
        _ => (4.0, 4.0, 0.0),
    };
    let bf16_moments = plan.bf16_moments && plan.implementation == Implementation::Megatron;
    let moment = if plan.precision == Precision::Bf16Pure || bf16_moments {
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
        // FSDP (ZeRO-2/3) gathers BF16 copies of its fp32 shards; DDP and
        // ZeRO-1 (DDP + a sharded optimizer) keep fp32 weights under autocast:
        // what the bundle's train.py does (`compute_path` there).
        (Implementation::Hf, _) if plan.zero >= 2 && plan.train == Training::Full => {
            Profile::HfBf16
        }
        // LoRA/QLoRA: the frozen base computes in BF16, so the residual stream
        // and the activations are BF16 though autocast is on (for the fp32
        // adapters): oracle rows `*/lora/*`.
        (Implementation::Hf, _) if plan.train != Training::Full => Profile::HfBf16,
        (Implementation::Hf, _) => Profile::HfAutocast,
    }
}

/// How the plan's GEMMs get their weights, in the words train.py reports
/// (`compute_path`), so a test can hold the script to the model.
pub fn compute_path(plan: &Plan) -> &'static str {
    match (profile(plan), plan.precision) {
        (Profile::Megatron, _) => "megatron",
        (Profile::HfFp32, _) => "fp32",
        (_, Precision::Bf16Pure) => "bf16 weights",
        _ if plan.train != Training::Full => "autocast bf16",
        (Profile::HfBf16, _) => "fsdp bf16 gather, fp32 reduce",
        (Profile::HfAutocast, _) => "autocast bf16",
    }
}

/// Bytes per element HF's matmul outputs and activation gradients take: fp32
/// in the fp32 profile, BF16 otherwise.
fn compute_bytes(profile: Profile) -> f64 {
    if profile == Profile::HfFp32 {
        4.0
    } else {
        2.0
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
    /// Neither TP nor SP splits it: MLA's latents, which every TP rank
    /// computes whole (Megatron duplicates the down projections).
    unsplit: f64,
    /// Eager attention's `s^2` part (per token, already multiplied by `s`).
    scores: f64,
    /// The MLP's part of `tp_split` (back-propagated, and freed, before attention's).
    mlp: f64,
}

/// The widths one decoder layer's saved tensors are made of.
struct Widths {
    h: f64,
    q: f64,
    kv: f64,
    a: f64,
    /// FFN width of one expert (or of the dense MLP).
    f: f64,
    /// Experts a token passes through (1 for a dense MLP).
    routed: f64,
    /// Of those, the routed ones the dispatcher permutes tokens to (0 for a
    /// dense MLP).
    permuted: f64,
    /// The router's saved logits and probabilities per token.
    router: f64,
    gated: bool,
    /// Norms beyond the two of a Llama layer (Gemma's four).
    extra_norms: f64,
    /// q/k norms' saved width (Qwen3, OLMo 2, Gemma 3).
    qk_norm: f64,
    /// Gemma's RMSNorm scales by `1 + weight` in fp32 and keeps that fp32
    /// normalised value too (GeGLU marks the Gemma family).
    gemma_norm: bool,
    eager: bool,
    /// Bytes per element of a Linear input kept for the weight gradient
    /// (FP8 recipes keep it in 8 bits).
    lin: f64,
    seq: f64,
    /// The MLP matrices' input widths, summed (gate and up read `h`, down reads `f`).
    mlp_inputs: f64,
    /// The MLP matrices' output widths, summed.
    mlp_outputs: f64,
}

impl Widths {
    /// The same widths for a dense layer of an MoE model (its MLP of width
    /// `ffn`, no router).
    fn dense(&self, arch: &Architecture) -> Widths {
        let f = arch.ffn as f64;
        let m = arch.mlp.matrices() as f64;
        Widths {
            f,
            routed: 1.0,
            permuted: 0.0,
            router: 0.0,
            mlp_inputs: (m - 1.0) * self.h + f,
            mlp_outputs: (m - 1.0) * f + self.h,
            ..*self
        }
    }

    fn of(arch: &Architecture, plan: &Plan, seq_per_gpu: f64) -> Widths {
        let (f, routed) = match &arch.moe {
            // Each token passes through `active` experts (+ shared ones).
            Some(m) => (m.expert_ffn as f64, (m.active + m.shared) as f64),
            None => (arch.ffn as f64, 1.0),
        };
        let (q, kv) = (arch.q_width() as f64, arch.kv_width() as f64);
        Widths {
            h: arch.hidden as f64,
            q,
            kv,
            a: arch.heads as f64,
            f,
            routed,
            permuted: arch.moe.as_ref().map_or(0.0, |m| m.active as f64),
            router: arch
                .moe
                .as_ref()
                .map_or(0.0, |m| 4.0 * m.experts as f64 * 2.0),
            gated: arch.mlp.is_gated(),
            extra_norms: arch.norms_per_layer.saturating_sub(2) as f64,
            qk_norm: match arch.qk_norm {
                crate::architecture::QkNorm::None => 0.0,
                _ => q + kv,
            },
            eager: plan.attention == Attention::Eager,
            gemma_norm: arch.mlp == crate::architecture::Mlp::Geglu,
            lin: if plan.precision.is_low_precision() {
                1.0
            } else {
                2.0
            },
            seq: seq_per_gpu,
            mlp_inputs: (arch.mlp.matrices() as f64 - 1.0) * arch.hidden as f64 + f,
            mlp_outputs: (arch.mlp.matrices() as f64 - 1.0) * f + arch.hidden as f64,
        }
    }
}

fn layer_activations(arch: &Architecture, plan: &Plan, w: &Widths) -> LayerActivations {
    let mut layer = profile_layer(plan, w);
    // Dense layers among MoE ones (DeepSeek-V3's first 3, Llama 4
    // Maverick's every other): the mean layer over the stage.
    let dense = 1.0 - arch.moe_layer_share();
    if arch.moe.is_some() && dense > 0.0 {
        layer = layer.blend(&profile_layer(plan, &w.dense(arch)), dense);
    }
    layer.unsplit += mla_latents(arch, plan, w);
    recompute_modules(&mut layer, arch, plan, w);
    layer.replicated += sliding_window_float_mask(arch, plan);
    layer.tp_split += lora_fp32_inputs(plan, w);
    layer
}

fn profile_layer(plan: &Plan, w: &Widths) -> LayerActivations {
    match profile(plan) {
        Profile::HfFp32 => hf_fp32_layer(w),
        Profile::HfBf16 => hf_bf16_layer(w),
        Profile::HfAutocast => hf_autocast_layer(w),
        Profile::Megatron => megatron_layer(w, plan.precision == Precision::Fp32),
    }
}

impl LayerActivations {
    /// `(1 - share) x self + share x other`, term by term.
    fn blend(&self, other: &LayerActivations, share: f64) -> LayerActivations {
        let mix = |a: f64, b: f64| a + (b - a) * share;
        LayerActivations {
            tp_split: mix(self.tp_split, other.tp_split),
            replicated: mix(self.replicated, other.replicated),
            unsplit: mix(self.unsplit, other.unsplit),
            scores: mix(self.scores, other.scores),
            mlp: mix(self.mlp, other.mlp),
        }
    }
}

/// Megatron's selective recomputation of `--recompute-modules` beyond the
/// attention core: what each module then stops keeping, per token, in the
/// Megatron profile's terms (`megatron_layer`): MLA's q, k and v
/// (`mla_up_proj`); the routed experts' activation output, the second GEMM's
/// input (`moe_act`); the two norms' outputs the Linear layers read
/// (`layernorm`); a dense MLP's inner tensors on its dense layers (`mlp`).
fn recompute_modules(layer: &mut LayerActivations, arch: &Architecture, plan: &Plan, w: &Widths) {
    let megatron = plan.implementation == Implementation::Megatron;
    if !megatron || plan.checkpointing != Checkpointing::Selective {
        return;
    }
    let m = plan.recompute_modules;
    let e = if plan.precision == Precision::Fp32 {
        2.0
    } else {
        1.0
    };
    let mut split = 0.0;
    let mut mlp = 0.0;
    if m.mla_up_proj && arch.mla.is_some() {
        split += e * (2.0 * w.q + 4.0 * w.kv);
    }
    if m.moe_act {
        mlp += e * w.lin * w.f * w.permuted * arch.moe_layer_share();
    }
    if m.mlp {
        let dense = if arch.moe.is_some() {
            1.0 - arch.moe_layer_share()
        } else {
            1.0
        };
        let inner = if w.gated { 4.0 } else { 2.0 } * arch.ffn as f64 + w.lin * arch.ffn as f64;
        mlp += e * dense * inner;
    }
    layer.tp_split = (layer.tp_split - split - mlp).max(0.0);
    layer.mlp = (layer.mlp - mlp).max(0.0);
    if m.layernorm {
        layer.replicated = (layer.replicated - e * w.lin * w.h * 2.0).max(0.0);
    }
}

/// MLA's saved tensors beyond q, k and v (which `q_width` / `kv_width`
/// carry): the down projections' outputs kept by their RMSNorms and the
/// decoupled RoPE key (compute dtype), and the normalised latents kept by
/// the up projections for their weight gradients (the Linear input dtype):
/// `e (r_q + r_kv + rope) + lin (r_q + r_kv)` per token (HF
/// `DeepseekV3Attention`, Megatron `MLASelfAttention`).
fn mla_latents(arch: &Architecture, plan: &Plan, w: &Widths) -> f64 {
    let Some(m) = &arch.mla else {
        return 0.0;
    };
    let e = if plan.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    };
    let (rq, rkv, rope) = (
        m.q_lora_rank as f64,
        m.kv_lora_rank as f64,
        m.qk_rope_dim as f64,
    );
    e * (rq + rkv + rope) + w.lin.max(e / 2.0) * (rq + rkv)
}

/// LoRA in pure BF16 (no autocast): PEFT casts an adapted Linear's input to
/// its fp32 adapters and the adapter's first matmul keeps that copy; the
/// oracle finds the MLP adapters' copies kept (4 B per element of every MLP
/// matrix's input) and attention's not (oracle rows
/// `*/lora/*precision=bf16-pure`). Under autocast the GEMM runs on the BF16
/// input the base layer keeps already.
fn lora_fp32_inputs(plan: &Plan, w: &Widths) -> f64 {
    let pure = plan.precision == Precision::Bf16Pure;
    if plan.train == Training::Full || !pure || plan.implementation != Implementation::Hf {
        return 0.0;
    }
    4.0 * w.routed * w.mlp_inputs
}

/// Recomputing a LoRA layer under autocast: PEFT casts each adapted
/// Linear's input to its fp32 adapters' dtype before autocast casts it back;
/// the oracle finds ~4.5 B per input element alive while a checkpointed LoRA
/// layer is recomputed (`*/lora/*` rows), not among a normal forward's saved
/// tensors: 4 B per element of q, k, v, o and every MLP matrix's input.
fn lora_recompute_copies(s: &StageShape) -> f64 {
    let (attention, mlp) = lora_recompute_parts(s);
    attention + mlp
}

/// `lora_recompute_copies`, attention's part and the MLP's.
fn lora_recompute_parts(s: &StageShape) -> (f64, f64) {
    if !s.peft || s.plan.implementation != Implementation::Hf {
        return (0.0, 0.0);
    }
    let w = &s.widths;
    let per_token = s.tokens * 4.0 / s.t;
    (
        per_token * (3.0 * w.h + w.q),
        per_token * w.routed * w.mlp_inputs,
    )
}

/// HF in fp32: RMSNorm saves its input (pow), the normalised value (weight
/// mul), and its output is saved by the next Linear: 3 x 4h
/// (memory_examples.csv, `precision=fp32` rows).
fn hf_fp32_layer(w: &Widths) -> LayerActivations {
    let Widths { h, q, kv, a, f, .. } = *w;
    let norm = 12.0 * h;
    let attn = 4.0 * q + 8.0 * kv + 4.0 * q + 4.0 * a; // q, k, v, output, logsumexp
    let mlp = if w.gated { 16.0 * f } else { 8.0 * f };
    let kv_rep = if w.eager {
        8.0 * (q - kv) - 4.0 * a
    } else {
        0.0
    };
    LayerActivations {
        unsplit: 0.0,
        tp_split: attn + kv_rep + w.routed * mlp + w.router + 8.0 * w.qk_norm,
        mlp: w.routed * mlp + w.router,
        replicated: 2.0 * norm + w.extra_norms * 8.0 * h,
        scores: if w.eager { 4.0 * a * w.seq } else { 0.0 },
    }
}

/// HF with bf16 compute weights (pure bf16, or FSDP's bf16 policy): RMSNorm
/// upcasts to fp32 (saved by pow: 4h), saves the bf16 normalised value (2h),
/// and its bf16 output is saved by the Linears (2h) (memory_examples.csv,
/// `precision=bf16` rows).
fn hf_bf16_layer(w: &Widths) -> LayerActivations {
    let Widths {
        h,
        q,
        kv,
        a,
        f,
        lin,
        ..
    } = *w;
    // Gemma: 4h of fp32 input and 4h of fp32 normalised value (oracle rows `gemma-2-2b/*`)
    let norm = if w.gemma_norm { 8.0 * h } else { 6.0 * h } + lin * h;
    let attn = 2.0 * q + 4.0 * kv + lin * q + 4.0 * a;
    let mlp = if w.gated {
        6.0 * f + lin * f
    } else {
        2.0 * f + lin * f
    };
    let kv_rep = if w.eager {
        4.0 * (q - kv) - 4.0 * a
    } else {
        0.0
    };
    LayerActivations {
        unsplit: 0.0,
        tp_split: attn + kv_rep + w.routed * mlp + w.router + 6.0 * w.qk_norm,
        mlp: w.routed * mlp + w.router,
        replicated: 2.0 * norm + w.extra_norms * 8.0 * h,
        // fp32 softmax output + its bf16 cast used by the matmul with v
        scores: if w.eager { 6.0 * a * w.seq } else { 0.0 },
    }
}

/// HF fp32 params under bf16 autocast: fp32 residual; each norm saves its
/// fp32 input and normalised value (8h); autocast casts the norm output to
/// bf16 once per consuming Linear (q, k, v: 3 casts; gate, up: 2), each
/// saved (memory_examples.csv, `precision=mixed` rows).
fn hf_autocast_layer(w: &Widths) -> LayerActivations {
    let Widths {
        h,
        q,
        kv,
        a,
        f,
        lin,
        ..
    } = *w;
    let cast = lin;
    let attn_norm = 8.0 * h + 3.0 * cast * h;
    let mlp_norm = 8.0 * h + if w.gated { 2.0 } else { 1.0 } * cast * h;
    let attn = 2.0 * q + 4.0 * kv + cast * q + 4.0 * a;
    let mlp = if w.gated {
        6.0 * f + cast * f
    } else {
        2.0 * f + cast * f
    };
    let kv_rep = if w.eager {
        4.0 * (q - kv) - 4.0 * a
    } else {
        0.0
    };
    LayerActivations {
        unsplit: 0.0,
        tp_split: attn + kv_rep + w.routed * mlp + w.router + 8.0 * w.qk_norm,
        mlp: w.routed * mlp + w.router,
        replicated: attn_norm + mlp_norm + w.extra_norms * 10.0 * h,
        scores: if w.eager { 6.0 * a * w.seq } else { 0.0 },
    }
}

/// Megatron-Core / TransformerEngine (Korthikanti et al. 2022 without
/// dropout): LayerNormLinear saves the norm input (2h) and its output for
/// the weight gradient (2h, FP8: 1h); flash attention saves q, k, v, output
/// and logsumexp; SwiGLU saves fc1's output (2 x 2f) and fc2 saves the
/// activation (2f, FP8: 1f).
fn megatron_layer(w: &Widths, fp32: bool) -> LayerActivations {
    let Widths {
        h,
        q,
        kv,
        a,
        f,
        lin,
        ..
    } = *w;
    let e = if fp32 { 2.0 } else { 1.0 };
    let norms = e * (2.0 * h + lin * h) * 2.0;
    let attn = e * (2.0 * q + 4.0 * kv + lin * q) + 4.0 * a;
    let mlp = e * if w.gated {
        4.0 * f + lin * f
    } else {
        2.0 * f + lin * f
    };
    let kv_rep = if w.eager { 4.0 * (q - kv) } else { 0.0 };
    // The permuted tokens the experts' first grouped GEMM keeps for its
    // weight gradient, one copy per routed expert, in the Linear input
    // dtype. Megatron applies the router's probabilities inside the
    // activation (`TEGroupedMLP`), so the combine keeps nothing more.
    let permuted = w.permuted * lin * e * h;
    let mlp_total = w.routed * mlp + w.router + permuted;
    LayerActivations {
        unsplit: 0.0,
        tp_split: attn + kv_rep + mlp_total + 4.0 * w.qk_norm,
        mlp: mlp_total,
        replicated: norms + w.extra_norms * 4.0 * h,
        scores: if w.eager { 5.0 * a * w.seq } else { 0.0 },
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
    /// The second rank: a middle stage, `min(p-1, m)` micro-batches in
    /// flight (more loaded than the first when the embedding takes a slot).
    Second,
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
        return stage_breakdown(&StageShape::new(arch, counts, plan, layout, Stage::Only));
    }
    let first = stage_breakdown(&StageShape::new(arch, counts, plan, layout, Stage::First));
    let last = stage_breakdown(&StageShape::new(arch, counts, plan, layout, Stage::Last));
    let mut peak = if last.peak_bytes > first.peak_bytes {
        last
    } else {
        first
    };
    if layout.pp > 2 && layout.stages.middle > layout.stages.first {
        let second = stage_breakdown(&StageShape::new(arch, counts, plan, layout, Stage::Second));
        if second.peak_bytes > peak.peak_bytes {
            peak = second;
        }
    }
    peak
}

/// The HF stack sharded by FSDP2 (ZeRO-2/3, data parallel only, on more than
/// one GPU): train.py's `fully_shard` on each decoder layer and on the root.
pub(crate) fn runs_fsdp2(plan: &Plan, layout: &Layout) -> bool {
    plan.implementation == Implementation::Hf
        && plan.zero >= 2
        && layout.dp > 1
        && layout.dp == layout.gpus
}

/// What every memory term of one pipeline stage reads: the plan, and the
/// share of the model and of the tokens this GPU holds.
struct StageShape<'a> {
    arch: &'a Architecture,
    counts: &'a ParameterCounts,
    plan: &'a Plan,
    layout: &'a Layout,
    stage: Stage,
    sb: StateBytes,
    profile: Profile,
    /// Tensor-parallel degree.
    t: f64,
    /// ZeRO/FSDP shard group size: the data-parallel shard group times the
    /// context-parallel ranks, which hold the same parameters. Megatron's
    /// distributed optimizer shards the fp32 main weights and Adam moments
    /// over `get_data_parallel_group(with_context_parallel=True)`
    /// (megatron/core/optimizer/__init__.py, distrib_optimizer.py ~L212 at
    /// d98e8a64: DP x CP ranks, or DP x CP / instances with
    /// `--num-distributed-optimizer-instances`; our `shard` is DP / instances);
    /// torchtitan's FSDP mesh is `dp_shard_cp` likewise (#23: dividing by DP
    /// alone over-stated 405B on 128 GB200 by 35 GiB).
    g: f64,
    /// Decoder layers on this stage.
    layers: f64,
    /// Parameters of one decoder layer on this GPU (after TP and EP).
    layer_params: f64,
    /// Embedding (and untied LM head) parameters on this GPU.
    emb: f64,
    /// Whether this stage computes the LM head and the loss.
    has_head: bool,
    /// Parameters this stage holds before ZeRO sharding.
    params: f64,
    /// The routed experts' share of `params`.
    expert_share: f64,
    /// Parameters with gradients and optimizer states (none for a PEFT base).
    trainable: f64,
    peft: bool,
    /// Bytes per parameter of the (frozen or trained) weights.
    weight_bytes: f64,
    /// FSDP's mixed-precision policy: fp32 params sharded, bf16 gathered.
    mixed_policy: bool,
    /// The HF stack sharded by FSDP2 (ZeRO-2/3, data parallel only, on more
    /// than one GPU): train.py's `fully_shard` on each decoder layer and on
    /// the root (embedding, norm, head).
    fsdp2: bool,
    /// Tokens per GPU per micro-batch (CP splits the sequence).
    tokens: f64,
    /// What divides the norm/residual activations: TP with sequence parallelism.
    sp_div: f64,
    /// The widths a decoder layer's tensors are made of.
    widths: Widths,
    /// Bytes per token one decoder layer saves.
    layer: LayerActivations,
}

impl<'a> StageShape<'a> {
    fn new(
        arch: &'a Architecture,
        counts: &'a ParameterCounts,
        plan: &'a Plan,
        layout: &'a Layout,
        stage: Stage,
    ) -> Self {
        let t = layout.tp as f64;
        let layers = match stage {
            Stage::Only => arch.layers,
            Stage::First => layout.stages.first,
            Stage::Second => layout.stages.middle,
            Stage::Last => layout.stages.last,
        } as f64;
        // The last stage also runs the multi-token-prediction layers.
        let has_head = matches!(stage, Stage::Only | Stage::Last);
        let mtp = if has_head { plan.mtp as f64 } else { 0.0 };
        let layers = layers + mtp;
        let expert_params = arch.routed_params_per_layer(counts);
        let dense_layer = counts.per_layer as f64 - expert_params;
        let layer_params = dense_layer / t + expert_params / (layout.ep as f64 * t);
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
        let peft = plan.train != Training::Full;
        let sb = state_bytes(plan);
        let widths = Widths::of(arch, plan, plan.seq as f64);
        StageShape {
            arch,
            counts,
            plan,
            layout,
            stage,
            sb,
            profile: profile(plan),
            t,
            g: (layout.shard.max(1) * layout.cp.max(1)) as f64,
            layers,
            layer_params,
            emb,
            has_head,
            params,
            expert_share: layers * expert_params / (layout.ep as f64 * t) / params.max(1.0),
            trainable: if peft { 0.0 } else { params },
            peft,
            weight_bytes: match plan.train {
                Training::Full => sb.weights,
                // Frozen base in bf16 (LoRA) or NF4 with double-quantised constants (QLoRA).
                Training::Lora => 2.0,
                Training::Qlora => 0.5 + 0.127 / 8.0 * 4.0,
            },
            mixed_policy: plan.implementation == Implementation::Hf
                && !matches!(plan.precision, Precision::Fp32 | Precision::Bf16Pure)
                && !peft,
            fsdp2: runs_fsdp2(plan, layout),
            tokens: plan.micro_batch as f64 * plan.seq as f64 / layout.cp as f64,
            sp_div: if plan.sp || layout.tp == 1 { t } else { 1.0 },
            layer: layer_activations(arch, plan, &widths),
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
    fn shard(&self, x: f64, stage: u8) -> f64 {
        if self.plan.zero < stage {
            return x;
        }
        let experts = x * self.expert_share;
        (x - experts) / self.g + experts / (self.g / self.layout.ep.max(1) as f64).max(1.0)
    }

    /// `x` of the embedding or head, divided over the whole shard group.
    fn shard_dense(&self, x: f64, stage: u8) -> f64 {
        if self.plan.zero >= stage {
            x / self.g
        } else {
            x
        }
    }

    /// Linear-weight parameters of this stage's decoder layers.
    fn linear_layer_params(&self) -> f64 {
        linear_params(self.counts) / self.counts.per_layer.max(1) as f64 * self.layer_params
    }

    fn recomputed(&self) -> f64 {
        self.plan.checkpointing.recomputed_fraction()
    }
}

// ---- model states (SPEC §3.2) --------------------------------------------

/// Weights: Ψ x bytes per parameter, sharded from ZeRO-3 (from ZeRO-2 under
/// FSDP's mixed policy, whose SHARD_GRAD_OP shards the fp32 parameters) (SPEC §3.2).
fn weights(s: &StageShape) -> f64 {
    let from = if s.fsdp2 { 2 } else { 3 };
    s.shard((s.params - fp8_only_params(s)) * s.weight_bytes, from)
}

/// Linear weights of this stage's decoder layers.
fn linear_stage_params(s: &StageShape) -> f64 {
    linear_params(s.counts) / s.counts.per_layer.max(1) as f64 * s.layers * s.layer_params
}

/// Parameters kept only as FP8 copies: the Linear weights under Megatron's
/// `--fp8-param-gather` (Megatron-LM `fp8_param_gather` makes them
/// TransformerEngine FP8 tensors; the fp32 master stays in the optimizer;
/// megatron_and_b200_facts.md §1: MXFP8 parameters share one buffer).
fn fp8_only_params(s: &StageShape) -> f64 {
    let megatron = s.plan.implementation == Implementation::Megatron;
    if megatron && s.plan.fp8_params && s.sb.copies > 0.0 {
        linear_stage_params(s)
    } else {
        0.0
    }
}

/// Gradients: trainable Ψ x gradient bytes, sharded from ZeRO-2 (SPEC §3.2).
fn gradients(s: &StageShape) -> f64 {
    s.shard(s.trainable * s.sb.grads, 2)
}

/// fp32 master weights of Megatron/DeepSpeed mixed precision (4 B/param), sharded from ZeRO-1 (SPEC §3.2).
fn master_weights(s: &StageShape) -> f64 {
    s.shard(s.trainable * s.sb.master, 1)
}

/// Optimizer states (AdamW: two moments), sharded from ZeRO-1 (SPEC §3.2).
fn optimizer_states(s: &StageShape) -> f64 {
    s.shard(s.trainable * s.sb.optimizer, 1)
}

/// TransformerEngine's quantised Linear-weight copies (sharded with the weights).
fn weight_copies(s: &StageShape) -> f64 {
    s.shard(linear_stage_params(s) * s.sb.copies, 3)
}

/// LoRA adapters: fp32 weights, grads and AdamW moments, 16 B per adapter
/// parameter `r(in + out)` of each target matrix (Hu et al. 2021).
fn adapters(s: &StageShape) -> f64 {
    if s.peft {
        s.arch.lora_params_per_layer(s.plan.lora_rank) * s.layers / s.t * 16.0
    } else {
        0.0
    }
}

/// FSDP/ZeRO-3: one decoder layer gathered for compute and one prefetched,
/// in the compute dtype (a frozen PEFT base in its own format), plus the
/// layer's full gradient before its reduce-scatter (PyTorch FSDP, Zhao et al. 2023).
fn unsharded_unit(s: &StageShape) -> f64 {
    if s.plan.zero < 3 || s.g <= 1.0 || s.fsdp2 {
        return 0.0;
    }
    let gathered_bytes = match (s.plan.train, s.plan.precision) {
        (Training::Full, Precision::Fp32) => 4.0,
        (Training::Full, _) => 2.0,
        _ => s.weight_bytes,
    };
    s.layer_params * (2.0 * gathered_bytes + if s.peft { 0.0 } else { gathered_bytes })
}

// ---- FSDP2 units (what the oracle counts: tools/oracle) -----------------------

/// Bytes per element FSDP2 gathers parameters in and computes gradients in:
/// the mixed-precision policy's BF16, else the weights' own dtype.
fn fsdp_compute_bytes(s: &StageShape) -> f64 {
    if s.mixed_policy {
        2.0
    } else {
        s.weight_bytes
    }
}

/// Bytes per element of FSDP2's reduce-scatter input: the policy's fp32
/// `reduce_dtype`, else the gradients' dtype.
fn fsdp_reduce_bytes(s: &StageShape) -> f64 {
    if s.mixed_policy {
        4.0
    } else {
        s.sb.grads
    }
}

/// The root unit's parameters: embedding, final norm and (untied) LM head,
/// everything outside the decoder layers.
fn root_params(s: &StageShape) -> f64 {
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
struct Fsdp2Units {
    /// At the end of forward, when the loss is computed.
    forward: f64,
    /// At the loss's backward.
    loss: f64,
    /// While a decoder layer is (recomputed and) back-propagated.
    layer: f64,
    /// When forward starts: the root and the first layer, in the all-gather
    /// buffer and as parameters.
    start: f64,
    /// The previous layer's reduce-scatter input and output, held while
    /// the next layer is back-propagated (that layer's activations are gone).
    scatter: f64,
    /// At the root's reduce-scatter, after the last layer.
    end: f64,
}

fn fsdp2_units(s: &StageShape) -> Fsdp2Units {
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
    let (forward, loss, layer_backward, scatter) = if s.plan.zero >= 3 {
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
        end: root_reduce_scatter(s, root_grads, cd, rd),
    }
}

/// The root's reduce-scatter, the step's last: first its unsharded gradients
/// and their copy in the reduce dtype coexist (its sharded gradient, which
/// the gradients term counts, does not exist yet); then the sharded output
/// joins the copy while the LM head's gradient is still held.
fn root_reduce_scatter(s: &StageShape, root: f64, cd: f64, rd: f64) -> f64 {
    if root == 0.0 {
        return 0.0;
    }
    let head = if s.arch.tied { 0.0 } else { s.emb };
    let copy_in = (cd + rd) * root - s.sb.grads * root / s.g;
    let scattered = rd * root + cd * head;
    copy_in.max(scattered)
}

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
/// 2021's `(1 + (p-1)/(p*vp))` factor.
fn in_flight_micro_batches(s: &StageShape) -> f64 {
    let p = s.layout.pp;
    let rank = match s.stage {
        Stage::First => 0,
        Stage::Second => 1,
        _ => return 1.0,
    };
    let m = s.plan.grad_accum.max(1);
    let vp = s.plan.vp.max(1);
    if vp == 1 {
        return (p - rank).min(m) as f64;
    }
    let warmup = ((p - rank - 1) * 2 + (vp - 1) * p).min(m * vp);
    ((warmup + 1).min(m * vp)) as f64 / vp as f64
}

/// Everything one non-checkpointed layer keeps for backward, scores included
/// (Korthikanti et al. 2022, per profile above).
fn full_layer_bytes(s: &StageShape) -> f64 {
    let la = &s.layer;
    let per_layer_token = la.tp_split / s.t + la.replicated / s.sp_div + la.unsplit;
    let scores_token = la.scores / s.t;
    s.tokens * (per_layer_token + scores_token)
}

/// Eager attention's `s^2` part of one layer, per token.
fn scores_per_token(s: &StageShape) -> f64 {
    s.layer.scores / s.t
}

/// What a checkpointed layer keeps: its input in the residual dtype
/// (SPEC §3.3); torchtitan's op-level SAC also keeps the outputs of wq, wv,
/// w1, w2 and flash attention (output + logsumexp), all bf16.
fn checkpointed_layer_bytes(s: &StageShape) -> f64 {
    let h = s.arch.hidden as f64;
    let input = s.tokens * h * residual_bytes(s.profile) / s.sp_div;
    match (s.plan.checkpointing, s.plan.implementation) {
        (Checkpointing::Op, Implementation::Hf) => input + op_level_kept(s),
        (Checkpointing::Op, Implementation::Megatron) => {
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
fn op_level_kept(s: &StageShape) -> f64 {
    let w = &s.widths;
    let e = compute_bytes(s.profile);
    let attention = if w.eager {
        e * (w.a * w.seq + w.q)
    } else {
        e * w.q + 4.0 * w.a
    };
    let matmuls = w.q + 2.0 * w.kv + w.h + w.routed * w.mlp_outputs;
    // LoRA: each adapter's B matmul output is as wide as its base matrix's
    let adapters = if s.peft { matmuls } else { 0.0 };
    s.tokens * (e * (matmuls + adapters) + attention) / s.t
}

/// Saved activations, split into the decoder layers' tensors and eager
/// attention's scores; SMP activation offloading keeps about two layers'
/// worth on the GPU (`activation_loading_horizon`).
struct SavedActivations {
    activations: f64,
    scores: f64,
}

/// Bytes that activation offloading moves to host memory per micro-batch on
/// the first (most loaded) stage: every layer's saved activations but the
/// `activation_loading_horizon` kept on the GPU. They come back for the
/// backward, so a step moves twice this per micro-batch. Zero without offload.
pub fn offloaded_bytes_per_micro_batch(
    arch: &Architecture,
    counts: &ParameterCounts,
    plan: &Plan,
    layout: &Layout,
) -> f64 {
    if !plan.offload {
        return 0.0;
    }
    let stage = if layout.pp > 1 {
        Stage::First
    } else {
        Stage::Only
    };
    let s = StageShape::new(arch, counts, plan, layout, stage);
    let kept = kept_activations(&s);
    kept.activations / in_flight_micro_batches(&s) / s.layers.max(1.0) * offloaded_layers(&s)
}

/// SMP's `activation_loading_horizon` default: layers kept on the GPU.
const OFFLOAD_HORIZON: f64 = 2.0;

/// Layers of the stage whose activations offloading moves to the host:
/// Megatron's `--cpu-offloading-num-layers` where given (at most all but the
/// last, which Megatron never offloads), else all but SMP's horizon.
fn offloaded_layers(s: &StageShape) -> f64 {
    if !s.plan.offload {
        return 0.0;
    }
    match (s.plan.implementation, s.plan.offload_layers) {
        (Implementation::Megatron, Some(n)) => (n as f64).min(s.layers - 1.0).max(0.0),
        _ => (s.layers - OFFLOAD_HORIZON).max(0.0),
    }
}

fn saved_activations(s: &StageShape) -> SavedActivations {
    let kept = kept_activations(s);
    let (mut kept_all, mut scores) = (kept.activations, kept.scores);
    if s.plan.offload {
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

/// What the layers keep for their backward before any offloading:
/// `activations` includes `scores`.
fn kept_activations(s: &StageShape) -> SavedActivations {
    let in_flight = in_flight_micro_batches(s);
    let kept_layers = s.layers * (1.0 - s.recomputed());
    let ckpt_layers = s.layers * s.recomputed();
    // Megatron's selective recomputation drops the attention core: the
    // `5as/h` scores term of Korthikanti et al. 2022 (eq. 1 vs §5, 34sbh).
    let selective = s.plan.checkpointing == Checkpointing::Selective;
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

/// SDPA turns a boolean mask into an additive one in the compute dtype and
/// keeps it for backward: `2 x s` bytes per token on each sliding-window
/// layer, averaged over the layers (oracle rows `gemma-2-2b/*` at 8K tokens).
fn sliding_window_float_mask(arch: &Architecture, plan: &Plan) -> f64 {
    if !sliding_window_masked(arch, plan) {
        return 0.0;
    }
    let share = arch.local_layers.min(arch.layers) as f64 / arch.layers.max(1) as f64;
    2.0 * plan.seq as f64 * share
}

/// Transformers builds masks for SDPA only when some layer's sliding window
/// is shorter than the sequence (otherwise SDPA runs causal, mask-free).
fn sliding_window_masked(arch: &Architecture, plan: &Plan) -> bool {
    let w = arch.sliding_window;
    plan.implementation == Implementation::Hf
        && plan.attention != Attention::Eager
        && w > 0
        && w < plan.seq
        && arch.local_layers > 0
}

/// Transformers materialises boolean masks (`b x s x s`) when a sliding
/// window is shorter than the sequence (Gemma 2/3, Mistral v0.1): the
/// sliding one and the causal one it is built from, held until backward
/// (oracle rows `gemma-2-2b/*` at 8K tokens).
fn sliding_window_masks(s: &StageShape) -> f64 {
    if !sliding_window_masked(s.arch, s.plan) {
        return 0.0;
    }
    2.0 * s.plan.micro_batch as f64 * (s.plan.seq as f64).powi(2)
}

/// During recompute, one layer's full working set is rebuilt (SPEC §3.3);
/// under selective recomputation, one layer's attention scores.
fn recompute_working_set(s: &StageShape) -> f64 {
    if s.plan.checkpointing == Checkpointing::Op && s.plan.implementation == Implementation::Hf {
        // the kept matmul outputs are counted with the checkpointed layers
        (full_layer_bytes(s) - op_level_kept(s)).max(0.0)
    } else if s.recomputed() > 0.0 {
        full_layer_bytes(s) + lora_recompute_copies(s)
    } else if s.plan.checkpointing == Checkpointing::Selective {
        s.tokens * scores_per_token(s)
    } else {
        0.0
    }
}

/// The MLP's backward makes gradients as wide as its intermediate: of the
/// down projection's input, of the activation and of the up and gate
/// outputs, while the MLP's saved tensors are still held (oracle rows with a
/// small vocabulary, where a layer's backward is the peak: `mistral-7b/*`).
fn mlp_backward_transient(s: &StageShape) -> f64 {
    if s.plan.implementation != Implementation::Hf {
        return 0.0;
    }
    let w = &s.widths;
    let e = compute_bytes(s.profile);
    // A recomputed layer's working set already holds two of them; the
    // op-level policy's kept matmul outputs hold the rest.
    let widths = match s.plan.checkpointing {
        Checkpointing::Op => return 0.0,
        _ if s.recomputed() > 0.0 => MLP_BACKWARD_WIDTHS - 2.0,
        _ => MLP_BACKWARD_WIDTHS,
    };
    s.tokens * widths * w.routed * w.f * e / s.t
}

/// Intermediate-wide gradients alive at once in an MLP's backward.
const MLP_BACKWARD_WIDTHS: f64 = 3.0;

/// Eager attention's backward on one layer's scores (Transformers'
/// `eager_attention_forward`): the saved fp32 softmax output, the probs'
/// gradient upcast to fp32 and softmax's backward output coexist, 12 B per
/// score element against the 6 (4 in fp32) the forward saved (oracle rows
/// `*/attn=eager`). Returns what comes on top of the saved scores.
fn eager_backward_extra(s: &StageShape) -> f64 {
    let saved_bytes = match s.profile {
        Profile::Megatron => return 0.0,
        Profile::HfFp32 => 4.0,
        Profile::HfBf16 | Profile::HfAutocast => 6.0,
    };
    let extra = s.tokens * scores_per_token(s) * (12.0 / saved_bytes - 1.0);
    match s.plan.checkpointing {
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
fn autocast_casts(s: &StageShape) -> f64 {
    if s.profile != Profile::HfAutocast || s.peft {
        return 0.0;
    }
    let per_layer = s.linear_layer_params() * 2.0;
    let head_copy = if s.has_head {
        s.counts.embedding as f64 / s.t * 2.0
    } else {
        0.0
    };
    let kept_layers = s.layers * (1.0 - s.recomputed());
    (kept_layers + if s.recomputed() > 0.0 { 1.0 } else { 0.0 }) * per_layer + head_copy
}

/// The final norm's saved tensors, in the profile's dtypes (memory_examples.csv).
fn final_norm(s: &StageShape) -> f64 {
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
/// with it (8 B more); Megatron's fused vocab-parallel cross-entropy keeps
/// bf16 logits, an fp32 softmax and one fp32 gradient (~10 B); Liger's fused
/// linear cross-entropy works on ~1/8 of the tokens at a time. train.py's
/// fused loss (the HF export) runs the head and the plain loss on
/// `FUSED_LOSS_CHUNK` tokens at a time, recomputed in backward (oracle rows
/// `*/loss=fused`).
fn logits_and_loss(s: &StageShape) -> f64 {
    if !s.has_head {
        return 0.0;
    }
    let vocab = s.arch.vocab as f64 / s.t;
    // Each MTP layer computes its own logits and loss beside the model's.
    let heads = 1.0 + s.plan.mtp as f64;
    heads
        * match (s.plan.loss, s.plan.implementation) {
            (Loss::Plain, Implementation::Hf) => s.tokens * vocab * 12.0,
            (Loss::Plain, Implementation::Megatron) => s.tokens * vocab * 10.0,
            (Loss::Fused, Implementation::Hf) => s.tokens.min(FUSED_LOSS_CHUNK) * vocab * 12.0,
            (Loss::Fused, Implementation::Megatron) => s.tokens * vocab * 12.0 / 8.0,
        }
}

/// The loss's forward buffers against its backward's (10 of 12 B per logit).
const LOSS_FORWARD_SHARE: f64 = 10.0 / 12.0;

/// Tokens per chunk of train.py's fused loss (`with_loss`).
const FUSED_LOSS_CHUNK: f64 = 1024.0;

/// The LM head's gradient while the loss's later chunks are back-propagated:
/// the first chunk's backward made it (train.py's chunked loss only; oracle
/// rows `*/loss=fused`).
fn head_gradient_in_loss(s: &StageShape) -> f64 {
    let chunked = s.plan.loss == Loss::Fused
        && s.plan.implementation == Implementation::Hf
        && s.tokens > FUSED_LOSS_CHUNK;
    if !chunked || !s.has_head || s.peft {
        0.0
    } else if s.fsdp2 {
        // FSDP2's gathered head is not a leaf: from the third chunk on, autograd
        // sums each chunk's gradient into the running one out of place (old,
        // new and sum coexist, while the chunk's loss buffers are gone)
        let head = fsdp_compute_bytes(s) * s.emb;
        if s.tokens > 2.0 * FUSED_LOSS_CHUNK {
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
fn head_gradient(s: &StageShape) -> f64 {
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
fn persistent_gradient_buffer(s: &StageShape) -> f64 {
    let ddp = s.plan.implementation == Implementation::Hf && s.plan.zero < 2 && s.layout.dp > 1;
    if s.plan.implementation == Implementation::Megatron || ddp {
        gradients(s)
    } else {
        0.0
    }
}

/// Tied embedding: its gradient is added to the LM head's, two extra
/// embedding-sized buffers in the gradient dtype (memory_examples.csv, Llama-3.2-1B rows).
fn tied_embedding_gradient(s: &StageShape) -> f64 {
    if s.arch.tied && s.stage == Stage::Only && !s.peft && !s.fsdp2 {
        2.0 * s.shard_dense(s.emb * s.sb.grads, 2).min(s.emb * s.sb.grads)
    } else {
        0.0
    }
}

/// foreach AdamW materialises one parameter-sized temporary list (measured:
/// exactly the weights' size in memory_examples.csv).
fn foreach_temporaries(s: &StageShape, weights: f64) -> f64 {
    // LoRA: the temporaries are adapter-sized (negligible)
    if s.plan.optimizer != Optimizer::AdamwForeach || s.peft {
        return 0.0;
    }
    let g = if s.plan.zero >= 3 || s.fsdp2 {
        s.g
    } else {
        1.0
    };
    weights.max(s.trainable * s.sb.weights / g)
}

// ---- overheads (SPEC §3.4) ----------------------------------------------------

/// cuBLAS/cuDNN/NCCL workspaces: the user's figure in GiB.
fn workspaces(plan: &Plan) -> f64 {
    plan.workspace_gib * crate::hardware::GIB as f64
}

/// Caching-allocator fragmentation: the user's percentage of what is allocated.
fn fragmentation(plan: &Plan, allocated: f64) -> f64 {
    allocated * plan.fragmentation / 100.0
}

// ---- the step's moments ------------------------------------------------------

/// Every term of one stage, before the peak is taken.
struct Terms {
    weights: f64,
    gradients: f64,
    master: f64,
    optimizer: f64,
    copies: f64,
    adapters: f64,
    unsharded: f64,
    fsdp: Fsdp2Units,
    /// One layer's saved activations and, of them, its scores (none when
    /// layers are recomputed).
    freed_by_layer: (f64, f64),
    saved: SavedActivations,
    recompute: f64,
    eager_backward: f64,
    mlp_backward: f64,
    casts: f64,
    final_norm: f64,
    logits: f64,
    head_grad: f64,
    head_grad_in_loss: f64,
    tied_grad: f64,
    foreach: f64,
    /// Gradients alive during the backward's early moments: Megatron keeps
    /// one gradient buffer (fp32 `main_grad`) allocated for the whole step.
    grads_during_backward: f64,
}

impl Terms {
    fn of(s: &StageShape) -> Terms {
        let weights = weights(s);
        Terms {
            weights,
            gradients: gradients(s),
            master: master_weights(s),
            optimizer: optimizer_states(s),
            copies: weight_copies(s),
            adapters: adapters(s),
            unsharded: unsharded_unit(s),
            fsdp: fsdp2_units(s),
            freed_by_layer: if s.recomputed() == 0.0 {
                let n = in_flight_micro_batches(s);
                (full_layer_bytes(s) * n, s.tokens * scores_per_token(s) * n)
            } else {
                (0.0, 0.0)
            },
            saved: saved_activations(s),
            recompute: recompute_working_set(s),
            eager_backward: eager_backward_extra(s),
            mlp_backward: mlp_backward_transient(s),
            casts: autocast_casts(s),
            final_norm: final_norm(s),
            logits: logits_and_loss(s),
            head_grad: head_gradient(s),
            head_grad_in_loss: head_gradient_in_loss(s),
            tied_grad: tied_embedding_gradient(s),
            foreach: foreach_temporaries(s, weights),
            grads_during_backward: persistent_gradient_buffer(s),
        }
    }

    /// States alive at every moment (gradients come and go).
    fn states(&self) -> f64 {
        self.weights + self.master + self.optimizer + self.copies + self.adapters
    }

    /// FSDP2, the end of forward: the loss's forward buffers (logits, their
    /// fp32 copy, log-softmax: 10 of the backward's 12 B per element) with
    /// what FSDP2 still holds; it matters for ZeRO-2 alone.
    fn loss_forward(&self) -> f64 {
        if self.fsdp.forward == 0.0 {
            return 0.0;
        }
        let a = &self.saved;
        self.states()
            + self.fsdp.forward
            + self.casts
            + a.activations
            + a.scores
            + self.final_norm
            + self.logits * LOSS_FORWARD_SHARE
    }

    /// FSDP2, a layer's backward while the previous layer's gradient is
    /// reduce-scattered: that layer's saved activations (when not
    /// recomputed) are freed, and without recomputation the scatter's
    /// buffers are gone before the MLP's gradients grow (oracle:
    /// `mistral-7b/zero3/*`).
    fn post_backward(&self, layer_backward: f64) -> f64 {
        if self.fsdp.scatter == 0.0 {
            return 0.0;
        }
        layer_backward + self.fsdp.scatter - self.freed_by_layer.0 - self.mlp_gone_at_scatter()
    }

    /// The MLP's backward gradients beyond eager attention's, and whether
    /// they coexist with the previous layer's reduce-scatter.
    fn mlp_gone_at_scatter(&self) -> f64 {
        if self.freed_by_layer.0 > 0.0 {
            self.mlp_beyond_eager()
        } else {
            0.0
        }
    }

    fn mlp_beyond_eager(&self) -> f64 {
        (self.mlp_backward - self.eager_backward).max(0.0)
    }

    /// Bytes alive at each of the step's moments: the loss's backward
    /// (grads freed by `zero_grad(set_to_none=True)`), the last checkpointed
    /// layer's recompute, the end of backward, the optimizer step.
    fn totals(&self) -> [(Phase, f64); 7] {
        let (t, a) = (self, &self.saved);
        let states = t.states();
        let layer_backward = states
            + t.unsharded
            + t.fsdp.layer
            + t.casts
            + a.activations
            + a.scores
            + t.recompute
            + t.eager_backward.max(t.mlp_backward)
            + t.head_grad.max(t.grads_during_backward);
        [
            (Phase::RootAllGather, states + t.fsdp.start),
            (Phase::LossForward, self.loss_forward()),
            (
                Phase::LossBackward,
                states
                    + t.unsharded
                    + t.fsdp.loss
                    + t.casts
                    + a.activations
                    + a.scores
                    + t.final_norm
                    + t.logits
                    + t.head_grad_in_loss.max(t.grads_during_backward),
            ),
            (Phase::LayerBackward, layer_backward),
            (
                Phase::LayerReduceScatter,
                self.post_backward(layer_backward),
            ),
            (
                Phase::EndOfBackward,
                states + t.gradients + t.unsharded + t.fsdp.end + t.tied_grad,
            ),
            (Phase::OptimizerStep, states + t.gradients + t.foreach),
        ]
    }

    /// `totals` adds each moment up by hand (it runs for every candidate of
    /// the auto-plan, where collecting `at`'s terms costs ~45% of the search);
    /// debug builds (every test) hold each moment to the sum of its terms.
    #[cfg(debug_assertions)]
    fn check_totals(&self, moments: &[(Phase, f64)]) {
        for &(phase, total) in moments {
            if total == 0.0 {
                continue; // a moment FSDP2 alone has
            }
            let sum: f64 = self.at(phase).iter().map(|(_, b)| b).sum();
            // Rounding only: terms rounded to whole bytes part the sums by a
            // few bytes, f64 sums at 4096 x 128K tokens by 1.5e-9, and a
            // moment that subtracts freed buffers from ~1e17-byte ones (1,024
            // experts of width 1M at micro-batch 4096) by their last bits.
            let scale = self.saved.activations + self.mlp_backward + self.freed_by_layer.0;
            let tolerance = 1e-8 * sum.abs() + 16.0 + 1e-13 * scale.abs();
            debug_assert!(
                (total - sum).abs() <= tolerance,
                "{phase:?}: {total} vs {sum}"
            );
        }
    }

    /// The terms alive at `phase`, in the breakdown's order.
    fn at(&self, phase: Phase) -> Vec<(Term, f64)> {
        let (t, a) = (self, &self.saved);
        let (grads, copies, more): (f64, f64, &[(Term, f64)]) = match phase {
            Phase::RootAllGather => (0.0, t.copies, &[(Term::UnshardedUnit, t.fsdp.start)]),
            Phase::LossForward => (
                0.0,
                t.copies + t.casts,
                &[
                    (Term::UnshardedUnit, t.fsdp.forward),
                    (Term::Activations, a.activations + t.final_norm),
                    (Term::AttentionScores, a.scores),
                    (Term::LogitsAndLoss, t.logits * LOSS_FORWARD_SHARE),
                ],
            ),
            Phase::LossBackward => (
                t.head_grad_in_loss.max(t.grads_during_backward),
                t.copies + t.casts,
                &[
                    (Term::UnshardedUnit, t.unsharded + t.fsdp.loss),
                    (Term::Activations, a.activations + t.final_norm),
                    (Term::AttentionScores, a.scores),
                    (Term::LogitsAndLoss, t.logits),
                ],
            ),
            Phase::LayerBackward => (
                t.head_grad.max(t.grads_during_backward),
                t.copies + t.casts,
                &[
                    (Term::UnshardedUnit, t.unsharded + t.fsdp.layer),
                    (Term::Activations, a.activations + t.recompute),
                    (Term::AttentionScores, a.scores + t.eager_backward),
                    (Term::Transient, t.mlp_beyond_eager()),
                ],
            ),
            Phase::LayerReduceScatter => (
                t.head_grad.max(t.grads_during_backward),
                t.copies + t.casts,
                &[
                    (
                        Term::UnshardedUnit,
                        t.unsharded + t.fsdp.layer + t.fsdp.scatter,
                    ),
                    (
                        Term::Activations,
                        a.activations + t.recompute - (t.freed_by_layer.0 - t.freed_by_layer.1),
                    ),
                    (
                        Term::AttentionScores,
                        a.scores + t.eager_backward - t.freed_by_layer.1,
                    ),
                    (
                        Term::Transient,
                        t.mlp_beyond_eager() - t.mlp_gone_at_scatter(),
                    ),
                ],
            ),
            Phase::EndOfBackward => (
                t.gradients,
                t.copies,
                &[
                    (Term::UnshardedUnit, t.unsharded + t.fsdp.end),
                    (Term::Transient, t.tied_grad),
                ],
            ),
            Phase::OptimizerStep => (t.gradients, t.copies, &[(Term::Transient, t.foreach)]),
        };
        let mut terms = Vec::with_capacity(16);
        terms.extend_from_slice(&[
            (Term::Weights, t.weights),
            (Term::Gradients, grads),
            (Term::MasterWeights, t.master),
            (Term::OptimizerStates, t.optimizer),
            (Term::WeightCopies, copies),
            (Term::Adapters, t.adapters),
        ]);
        terms.extend_from_slice(more);
        terms
    }
}

/// The peak of one stage: the largest moment, then the overheads on top.
fn stage_breakdown(s: &StageShape) -> MemoryBreakdown {
    let terms = Terms::of(s);
    let moments = terms.totals();
    #[cfg(debug_assertions)]
    terms.check_totals(&moments);
    let top = moments.iter().map(|m| m.1).fold(0.0, f64::max);
    // Ties go to the earlier moment.
    let phase = moments
        .iter()
        .find(|m| m.1 >= top)
        .map_or(Phase::OptimizerStep, |m| m.0);
    let mut peak = terms.at(phase);
    let allocated: f64 = peak.iter().map(|(_, b)| b).sum();
    peak.push((Term::CudaContext, CUDA_CONTEXT_BYTES as f64));
    peak.push((Term::Workspaces, workspaces(s.plan)));
    peak.push((Term::Fragmentation, fragmentation(s.plan, allocated)));
    let a = &terms.saved;
    let activation_bytes =
        a.activations + terms.recompute + terms.final_norm + a.scores + terms.logits;
    finish(
        peak,
        phase,
        activation_bytes,
        terms.states() + terms.gradients + terms.unsharded,
        a.activations + terms.final_norm,
        terms.logits,
    )
}

/// Round every term to bytes and add up the totals.
fn finish(
    terms: Vec<(Term, f64)>,
    phase: Phase,
    activation_bytes: f64,
    model_state_bytes: f64,
    saved_activation_bytes: f64,
    logits_bytes: f64,
) -> MemoryBreakdown {
    let terms: Vec<(Term, u64)> = terms
        .into_iter()
        .map(|(t, b)| {
            let bytes = if b.is_finite() && b > 0.0 {
                b.round() as u64
            } else {
                0
            };
            (t, bytes)
        })
        .collect();
    // Saturating: a plan the URL accepts can ask for more than 2^64 bytes.
    let allocated_peak_bytes = terms
        .iter()
        .filter(|(t, _)| !t.is_overhead())
        .fold(0u64, |sum, (_, b)| sum.saturating_add(*b));
    let peak_bytes = terms
        .iter()
        .fold(0u64, |sum, (_, b)| sum.saturating_add(*b));
    MemoryBreakdown {
        terms,
        phase,
        allocated_peak_bytes,
        peak_bytes,
        activation_bytes: activation_bytes.max(0.0) as u64,
        model_state_bytes: model_state_bytes.round() as u64,
        saved_activation_bytes: saved_activation_bytes.round() as u64,
        logits_bytes: logits_bytes.round() as u64,
    }
}
