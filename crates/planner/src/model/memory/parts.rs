//! What a memory breakdown is made of: the named terms, the step's moments,
//! and the breakdown itself. Every file of the memory model builds on these.

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
    /// The frozen reference model of DPO, and of GRPO with `beta > 0` (none
    /// under LoRA: the base without its adapters).
    Reference,
    /// GRPO: vLLM's engine colocated on the GPU, its `gen_share` of the
    /// GPU's memory (a copy of the weights and the KV cache), held through
    /// the step, or only while it generates in sleep mode (`Rollout::sleep`).
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
    /// The caching allocator's reserve over what is allocated.
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
    /// GRPO with vLLM's sleep mode: the engine, awake, generates beside the
    /// model states (training's activations and gradients are gone, and
    /// TRL empties PyTorch's cache before `wake_up`).
    Generation,
}

/// Per-GPU memory at the peak, term by term.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryBreakdown {
    pub terms: Vec<(Term, u64)>,
    pub phase: Phase,
    /// What `torch.cuda.max_memory_allocated()` would report.
    pub allocated_peak_bytes: u64,
    /// Everything, overheads included: the allocator's reserve at its
    /// typical share (`allowances::caching_share`).
    pub peak_bytes: u64,
    /// What the step needs at least: the reserve at the least measured
    /// share, what is left once the allocator releases its cache.
    pub least_bytes: u64,
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
            self.least_bytes = self.least_bytes.saturating_add(pool);
        }
        self
    }

    /// With vLLM's sleep mode, its `pool` is held only while it generates,
    /// beside the model states `resident` (`memory::resident_states`) and
    /// the CUDA context: the peak is the larger of training's and that
    /// moment's (TRL 0.24 `GRPOTrainer._generate`: `empty_cache`,
    /// `wake_up`, generation, `sleep(level=1)`).
    pub fn with_sleeping_pool(self, pool: u64, resident: Vec<(Term, u64)>) -> Self {
        let states = states_bytes(&resident);
        let allocated = states.saturating_add(pool);
        let generating = generating_bytes(&resident, pool);
        if pool == 0 || generating <= self.peak_bytes {
            return self;
        }
        let mut terms = resident;
        terms.push((Term::Generation, pool));
        terms.push((Term::CudaContext, CUDA_CONTEXT_BYTES));
        MemoryBreakdown {
            terms,
            phase: Phase::Generation,
            allocated_peak_bytes: allocated,
            peak_bytes: generating,
            least_bytes: generating,
            activation_bytes: 0,
            model_state_bytes: states,
            saved_activation_bytes: 0,
            logits_bytes: 0,
        }
    }

    pub fn get(&self, term: Term) -> u64 {
        self.terms
            .iter()
            .filter(|(t, _)| *t == term)
            .fold(0u64, |sum, (_, b)| sum.saturating_add(*b))
    }
}

/// The model states `resident` (`memory::resident_states`), summed.
fn states_bytes(resident: &[(Term, u64)]) -> u64 {
    resident.iter().fold(0u64, |s, (_, b)| s.saturating_add(*b))
}

/// vLLM's generating moment in sleep mode: the model states `resident`,
/// its `pool` and the CUDA context (`MemoryBreakdown::with_sleeping_pool`).
pub fn generating_bytes(resident: &[(Term, u64)], pool: u64) -> u64 {
    states_bytes(resident)
        .saturating_add(pool)
        .saturating_add(CUDA_CONTEXT_BYTES)
}

/// CUDA context of a PyTorch process on a recent driver (~0.5–0.9 GiB; we take 0.75).
pub const CUDA_CONTEXT_BYTES: u64 = 768 << 20;
