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
    Attention, Checkpointing, Loss, Optimizer, Plan, Precision, Stack, Training, TrainingStage,
};
use serde::Serialize;

mod activations;
mod loss;
mod moments;
mod profile;
mod sharding;
mod states;

use activations::*;
pub use activations::{offload, offloaded_layer_count, recomputes_core_attention, Offload};
use loss::*;
use moments::*;
pub use profile::compute_path;
use profile::*;
use sharding::*;
use states::*;

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
    /// The frozen reference model of DPO, and of GRPO with `beta > 0` (none
    /// under LoRA: the base without its adapters).
    Reference,
    /// GRPO: vLLM's engine colocated on the GPU, its `gen_share` of the
    /// GPU's memory (a copy of the weights and the KV cache), held through
    /// the step (TRL's sleep mode is off by default).
    Generation,
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
            Term::Reference => "reference",
            Term::Generation => "generation",
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
    /// The breakdown with GRPO's colocated vLLM engine beside the step:
    /// `pool` bytes (`rollout::pool_bytes`) allocated through PyTorch's
    /// allocator for the whole step (vLLM without sleep mode), none when 0.
    pub fn with_pool(mut self, pool: u64) -> Self {
        if pool > 0 {
            let at = self.terms.iter().position(|t| t.0.is_overhead());
            self.terms
                .insert(at.unwrap_or(self.terms.len()), (Term::Generation, pool));
            self.allocated_peak_bytes = self.allocated_peak_bytes.saturating_add(pool);
            self.peak_bytes = self.peak_bytes.saturating_add(pool);
        }
        self
    }

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
    /// The GPU keeps FP8 weights twice, row-wise and transposed
    /// (`Gpu::fp8_tn_only`): Hopper, Ada and sm_120 yes, B200/B300 no.
    #[serde(skip)]
    pub fp8_tn_only: bool,
}

impl Layout {
    /// The experts' tensor-parallel degree. Megatron-Core lays a stage's
    /// ranks out twice, `TP x CP x DP` for the dense layers and
    /// `ETP x EP x EDP` for the experts (megatron/core/parallel_state.py);
    /// ETP is the dense TP by default, so EP divides DP x CP. Where it does
    /// not, EP takes TP's ranks too with ETP = 1 (Megatron-Bridge's
    /// Qwen3-235B recipe: TP 2 and EP 32 over 16 DP ranks). `None` where
    /// neither fits. torchtitan's EP borrows the same ranks.
    pub fn expert_tensor_parallel(&self) -> Option<u64> {
        let (ep, dense) = (self.ep.max(1), self.dp * self.cp);
        if dense.is_multiple_of(ep) {
            Some(self.tp)
        } else if (dense * self.tp).is_multiple_of(ep) {
            Some(1)
        } else {
            None
        }
    }

    /// The ranks one expert's weights are split over: EP x ETP.
    pub fn expert_split(&self) -> f64 {
        (self.ep * self.expert_tensor_parallel().unwrap_or(self.tp)) as f64
    }
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
    /// Last stage: head, final norm, loss; one micro-batch in flight, or
    /// `(vp - 1) p + 1` chunks under the interleaved schedule.
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

/// The last pipeline rank's breakdown (the LM head, the loss and the
/// micro-batches the schedule keeps in flight there), the whole model when
/// `pp == 1`: what Megatron-LM's last rank logs as `mem-max-allocated-bytes`
/// (its TensorBoard writer lives on rank `world_size - 1`).
pub fn last_stage_breakdown(
    arch: &Architecture,
    counts: &ParameterCounts,
    plan: &Plan,
    layout: &Layout,
) -> MemoryBreakdown {
    let stage = if layout.pp <= 1 {
        Stage::Only
    } else {
        Stage::Last
    };
    stage_breakdown(&StageShape::new(arch, counts, plan, layout, stage))
}

/// The HF stack sharded by FSDP2 (ZeRO-2/3 on more than one GPU):
/// train.py's `fully_shard` on each decoder layer and on the root, over the
/// data-parallel ranks; with tensor parallelism (train.py only) it shards
/// the TP-split weights over the DP ranks, one mesh of `dp x tp`, even
/// where `dp` is 1 (FSDP2 then casts the layer's weights to BF16).
pub(crate) fn runs_fsdp2(plan: &Plan, layout: &Layout) -> bool {
    let data_parallel = layout.dp > 1 && layout.dp == layout.gpus;
    let hf_tp = plan.stack == Stack::Hf && layout.tp > 1 && layout.dp * layout.tp == layout.gpus;
    plan.stack != Stack::Megatron && plan.zero >= 2 && (data_parallel || hf_tp)
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
    /// The HF stack sharded by FSDP2 (ZeRO-2/3 on more than one GPU, `runs_fsdp2`):
    /// train.py's `fully_shard` on each decoder layer and on the root
    /// (embedding, norm, head).
    fsdp2: bool,
    /// Tokens per GPU per micro-batch (CP splits the sequence).
    tokens: f64,
    /// Of those, the tokens whose logits the loss takes (`Plan::logit_tokens`).
    logit_tokens: f64,
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
        let peft = plan.train != Training::Full;
        let sb = state_bytes(plan, layout);
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
            expert_share: layers * expert_params / layout.expert_split() / params.max(1.0),
            trainable: if peft { 0.0 } else { params },
            peft,
            weight_bytes: match plan.train {
                Training::Full => sb.weights,
                // Frozen base in bf16 (LoRA) or NF4 with double-quantised constants (QLoRA).
                Training::Lora => 2.0,
                Training::Qlora => 0.5 + 0.127 / 8.0 * 4.0,
            },
            mixed_policy: plan.stack != Stack::Megatron
                && !matches!(plan.precision, Precision::Fp32 | Precision::Bf16Pure)
                && !peft,
            fsdp2: runs_fsdp2(plan, layout),
            tokens: plan.rows_per_micro_batch() as f64 * plan.seq as f64 / layout.cp as f64,
            logit_tokens: plan.logit_tokens() as f64 / layout.cp as f64,
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
    pub(super) fn shard_dense(&self, x: f64, stage: u8) -> f64 {
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
