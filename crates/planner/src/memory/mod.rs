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
use crate::job::Job;
use crate::layout::Layout;
use crate::plan::Plan;

mod activations;
mod loss;
mod moments;
mod parts;
mod profile;
mod shape;
mod sharding;
mod state_bytes;
mod states;

pub use activations::{offload, offloaded_layer_count, recomputes_core_attention, Offload};
use moments::{fragmentation, workspaces, Terms};
pub use parts::{MemoryBreakdown, Phase, Term, CUDA_CONTEXT_BYTES};
pub use profile::compute_path;
pub(crate) use shape::runs_fsdp2;
use shape::{Stage, StageShape};

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

impl Job<'_> {
    /// The job's per-GPU breakdown (its plan's, on its model and layout).
    pub fn memory(&self) -> MemoryBreakdown {
        let m = breakdown(&self.arch, &self.counts, self.plan, &self.layout);
        let _ = self.peak.set(m.peak_bytes);
        m
    }

    /// The job's peak bytes per GPU, broken down once per job.
    pub fn peak_bytes(&self) -> u64 {
        match self.peak.get() {
            Some(p) => *p,
            None => self.memory().peak_bytes,
        }
    }
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
