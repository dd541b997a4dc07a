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

use crate::model::architecture::{Architecture, ParameterCounts};
use crate::model::hardware::Gpu;
use crate::model::job::Job;
use crate::model::layout::Layout;
use crate::model::recipe::Recipe;

mod activations;
pub mod allowances;
mod loss;
mod moments;
mod parts;
mod profile;
mod shape;
mod sharding;
mod state_bytes;
mod states;

use crate::model::stage::{Stage, StageShape};
pub use activations::{offload, offloaded_layer_count, recomputes_core_attention, Offload};
pub(crate) use loss::gradients_held;
use moments::Terms;
pub use parts::{generating_bytes, MemoryBreakdown, Phase, Term, CUDA_CONTEXT_BYTES};
pub use profile::{compute_path, qlora_fp32_residual, ComputePath};
pub(crate) use shape::runs_fsdp2;
use shape::MemoryShape;

/// The full per-GPU breakdown for a resolved plan: with pipeline parallelism,
/// the more loaded of the first and the last stage.
pub fn breakdown(
    arch: &Architecture,
    counts: &ParameterCounts,
    recipe: &Recipe,
    layout: &Layout,
) -> MemoryBreakdown {
    let shape = |stage| MemoryShape::new(StageShape::new(arch, counts, recipe, layout, stage));
    let mut stages = peak_stages(layout).iter();
    let first = stage_breakdown(&shape(stages.next().copied().unwrap_or(Stage::Only)));
    // Ties go to the earlier stage.
    stages.fold(first, |peak, &stage| {
        let m = stage_breakdown(&shape(stage));
        if m.peak_bytes > peak.peak_bytes {
            m
        } else {
            peak
        }
    })
}

/// The stages whose peaks `breakdown` compares: the whole model, or the
/// first and last stages, and the second where it holds more layers than
/// the first (the embedding taking a slot of the first).
fn peak_stages(layout: &Layout) -> &'static [Stage] {
    if layout.pp <= 1 {
        &[Stage::Only]
    } else if layout.pp > 2 && layout.stages.middle > layout.stages.first {
        &[Stage::First, Stage::Last, Stage::Second]
    } else {
        &[Stage::First, Stage::Last]
    }
}

/// `breakdown(..).peak_bytes` without the breakdown: each stage's largest
/// moment with the overheads on top, its terms neither listed nor rounded
/// to whole bytes, so within `peak_estimate_slack` of it (tests/properties.rs
/// `the_peak_estimate_is_the_peak`). The auto-plan asks ~40,000 of them
/// for a Megatron 70B plan, where listing and rounding the terms was a
/// fifth of its time; it takes the exact peak where the two are that close
/// to the budget, or the estimate is not a number.
pub fn peak_estimate(
    arch: &Architecture,
    counts: &ParameterCounts,
    recipe: &Recipe,
    layout: &Layout,
) -> f64 {
    peak_stages(layout)
        .iter()
        .map(|&stage| {
            let s = MemoryShape::new(StageShape::new(arch, counts, recipe, layout, stage));
            let top = Terms::of(&s)
                .totals()
                .iter()
                .map(|m| m.1)
                .fold(0.0, f64::max);
            let caching = allowances::caching_share(s.recipe, s.layout.gpus);
            top + top * caching
                + CUDA_CONTEXT_BYTES as f64
                + allowances::workspaces(s.recipe, s.layout.gpus)
        })
        .fold(0.0, f64::max)
        .min(u64::MAX as f64) // as `finish` saturates
}

/// How far `peak_estimate` may stray from the peak in whole bytes: up to
/// half a byte for each of its ~20 rounded terms, and the moments' sums
/// taken in another order (a few ulps of the peak).
pub fn peak_estimate_slack(peak: f64) -> f64 {
    64.0 + 1e-9 * peak.abs()
}

/// `m`, a training breakdown of `recipe`, with GRPO's vLLM engine
/// colocated on `gpu` (`rollout::pool_bytes`): its share on top through the
/// step, or, asleep between generations (`rollout::engine_sleeps`), only beside the
/// model states while it generates (`MemoryBreakdown::with_sleeping_pool`).
pub fn with_engine(
    m: MemoryBreakdown,
    (arch, counts): (&Architecture, &ParameterCounts),
    recipe: &Recipe,
    layout: &Layout,
    gpu: &Gpu,
) -> MemoryBreakdown {
    let pool = crate::model::rollout::pool_bytes(recipe, gpu);
    if pool > 0 && crate::model::rollout::engine_sleeps(recipe) {
        return m.with_sleeping_pool(pool, generating_residents(arch, counts, recipe, layout));
    }
    m.with_pool(pool)
}

/// The model states the GPU keeps while a sleeping engine generates: the
/// fullest stage's (`resident_states`), none where NeMo RL moves them to
/// host memory (`rollout::states_offloaded`).
pub fn generating_residents(
    arch: &Architecture,
    counts: &ParameterCounts,
    recipe: &Recipe,
    layout: &Layout,
) -> Vec<(Term, u64)> {
    if crate::model::rollout::states_offloaded(recipe) {
        return Vec::new();
    }
    resident_states(arch, counts, recipe, layout)
}

/// What NeMo RL keeps in host memory, bytes per GPU (none for another
/// engine): colocated, the fullest stage's resident states while vLLM
/// generates (`rollout::states_offloaded`; its gradient buffers are freed,
/// not copied); with a KL term, the reference's parameters for the whole
/// run (`reference_weights`), as many bytes as the policy's.
pub struct HeldOnHost {
    states: f64,
    reference: f64,
}

impl HeldOnHost {
    pub fn of(
        arch: &Architecture,
        counts: &ParameterCounts,
        recipe: &Recipe,
        layout: &Layout,
    ) -> HeldOnHost {
        let none = HeldOnHost {
            states: 0.0,
            reference: 0.0,
        };
        let megatron = recipe.implementation.stack == crate::model::plan::Stack::Megatron;
        if !megatron || !recipe.training.stage.generates() {
            return none;
        }
        let full = recipe.training.train == crate::model::plan::Training::Full;
        let (mut states, mut weights) = (0.0, 0.0);
        for (term, bytes) in resident_states(arch, counts, recipe, layout) {
            states += bytes as f64;
            if term == Term::Weights {
                weights += bytes as f64;
            }
        }
        HeldOnHost {
            states: if crate::model::rollout::states_offloaded(recipe) {
                states
            } else {
                0.0
            },
            reference: if recipe.has_reference() && full {
                weights
            } else {
                0.0
            },
        }
    }

    /// Bytes held at once (the host's pinned memory must take them).
    pub fn bytes(&self) -> f64 {
        self.states + self.reference
    }

    /// Bytes copied between the GPU and host memory each step besides
    /// vLLM's weights: the states out before vLLM's KV cache wakes and back
    /// for the logprob passes and training; with a KL term, the policy's
    /// parameters out, the reference's in and the policy's back
    /// (`use_reference_model`).
    pub fn swapped(&self) -> f64 {
        2.0 * self.states + 3.0 * self.reference
    }
}

impl Job {
    /// Bytes per GPU a sleeping engine's plan keeps in pinned host memory
    /// between phases (`host::sleep_overflow`): the engine's weights and,
    /// under NeMo RL, the policy's states (`HeldOnHost`).
    pub fn host_backup_bytes(&self) -> f64 {
        let held = HeldOnHost::of(&self.arch, &self.counts, &self.recipe, &self.layout);
        self.engine_weight_bytes() + held.bytes()
    }

    /// The job's per-GPU breakdown with its GRPO engine (`with_engine`).
    pub fn memory_with_engine(&self) -> MemoryBreakdown {
        let shape = (&self.arch, &self.counts);
        with_engine(self.memory(), shape, &self.recipe, &self.layout, &self.gpu)
    }

    /// The job's per-GPU breakdown (its plan's, on its model and layout).
    pub fn memory(&self) -> MemoryBreakdown {
        let m = breakdown(&self.arch, &self.counts, &self.recipe, &self.layout);
        let _ = self.peak.set(m.allocated_peak_bytes);
        m
    }

    /// The job's allocated peak bytes per GPU (what the memory checks
    /// measure: `torch.cuda.max_memory_allocated()`), broken down once per job.
    pub fn allocated_peak_bytes(&self) -> u64 {
        match self.peak.get() {
            Some(p) => *p,
            None => self.memory().allocated_peak_bytes,
        }
    }
}

/// A floor under the peak of every plan of one layout, whatever its
/// micro-batch, accumulation, checkpointing and loss: the first stage's
/// model states (weights, master weights, optimizer states, weight copies,
/// adapters, the reference), which every moment of the step holds
/// (`Terms::totals`), and the CUDA context (tests/properties.rs
/// `the_states_floor_is_under_every_peak`). The auto-plan skips a layout
/// whose floor is over the budget without trying its micro-batches.
pub fn states_floor(
    arch: &Architecture,
    counts: &ParameterCounts,
    recipe: &Recipe,
    layout: &Layout,
) -> f64 {
    let stage = Stage::First.or_only(layout);
    let s = MemoryShape::new(StageShape::new(arch, counts, recipe, layout, stage));
    Terms::of(&s).states() + CUDA_CONTEXT_BYTES as f64
}

/// The model states of the stage holding the most, term by term in whole
/// bytes: what each GPU keeps while GRPO's vLLM engine generates in sleep
/// mode (`MemoryBreakdown::with_sleeping_pool`). They do not depend on the
/// micro-batch, accumulation, checkpointing or loss.
pub fn resident_states(
    arch: &Architecture,
    counts: &ParameterCounts,
    recipe: &Recipe,
    layout: &Layout,
) -> Vec<(Term, u64)> {
    let mut fullest = (0.0, Vec::new());
    for &stage in peak_stages(layout) {
        let t = Terms::of(&MemoryShape::new(StageShape::new(
            arch, counts, recipe, layout, stage,
        )));
        if fullest.1.is_empty() || t.states() > fullest.0 {
            fullest = (t.states(), t.resident());
        }
    }
    fullest
        .1
        .into_iter()
        .map(|(t, b)| (t, whole_bytes(b)))
        .collect()
}

/// The most model states (`MemoryBreakdown::model_state_bytes`) any of the
/// stages `breakdown` compares holds. `breakdown` reports its peak stage's,
/// and more sharding can move the peak to a stage with more layers (Qwen3
/// 235B over 4 stages: 24 and 23 layers), so this, not that, is what more
/// sharding never raises (tests/properties.rs).
pub fn most_model_states(
    arch: &Architecture,
    counts: &ParameterCounts,
    recipe: &Recipe,
    layout: &Layout,
) -> u64 {
    peak_stages(layout)
        .iter()
        .map(|&stage| {
            let s = StageShape::new(arch, counts, recipe, layout, stage);
            stage_breakdown(&MemoryShape::new(s)).model_state_bytes
        })
        .max()
        .unwrap_or(0)
}

/// The last pipeline rank's breakdown (the LM head, the loss and the
/// micro-batches the schedule keeps in flight there), the whole model when
/// `pp == 1`: what Megatron-LM's last rank logs as `mem-max-allocated-bytes`
/// (its TensorBoard writer lives on rank `world_size - 1`).
pub fn last_stage_breakdown(
    arch: &Architecture,
    counts: &ParameterCounts,
    recipe: &Recipe,
    layout: &Layout,
) -> MemoryBreakdown {
    let stage = Stage::Last.or_only(layout);
    stage_breakdown(&MemoryShape::new(StageShape::new(
        arch, counts, recipe, layout, stage,
    )))
}

/// The peak of one stage: the largest moment, then the overheads on top.
fn stage_breakdown(s: &MemoryShape) -> MemoryBreakdown {
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
    peak.push((
        Term::Workspaces,
        allowances::workspaces(s.recipe, s.layout.gpus),
    ));
    let caching = allowances::caching_share(s.recipe, s.layout.gpus);
    peak.push((Term::Fragmentation, allocated * caching));
    let spare = allocated * (caching - allowances::least_caching_share(s.recipe, s.layout.gpus));
    let a = &terms.saved;
    let activation_bytes =
        a.activations + terms.recompute + terms.final_norm + a.scores + terms.logits;
    let mut m = finish(
        peak,
        phase,
        activation_bytes,
        terms.states() + terms.gradients + terms.unsharded,
        a.activations + terms.final_norm,
        terms.logits,
    );
    m.least_bytes = m.peak_bytes.saturating_sub(whole_bytes(spare));
    m
}

/// `x.round() as u64` (nearest whole byte, halves up; 0 for a negative or
/// NaN; saturating), without `round`: WebAssembly has no instruction for
/// it, and the page rounds a dozen terms per stage of every plan the
/// auto-plan tries. The cast truncates; the fraction left decides.
fn whole_bytes(x: f64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    let whole = x as u64;
    // Exact: below 2^53 `whole` is a double, above it `x` has no fraction.
    if x - whole as f64 >= 0.5 {
        whole.saturating_add(1)
    } else {
        whole
    }
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
        .map(|(t, b)| (t, if b.is_finite() { whole_bytes(b) } else { 0 }))
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
        least_bytes: peak_bytes,
        activation_bytes: activation_bytes.max(0.0) as u64,
        model_state_bytes: whole_bytes(model_state_bytes),
        saved_activation_bytes: whole_bytes(saved_activation_bytes),
        logits_bytes: whole_bytes(logits_bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::whole_bytes;

    /// `whole_bytes` against `f64::round`: the same byte count, halves,
    /// the last fractions below 2^53, huge, negative and not-a-number
    /// values, and a spread of random magnitudes.
    #[test]
    fn whole_bytes_rounds_as_round_does() {
        let mut xs = vec![
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            0.49999999999999994,
            4503599627370495.5,
            4503599627370497.0,
            9007199254740993.0,
            1.8446744073709552e19,
            1e300,
            f64::INFINITY,
            -0.5,
            -3.7,
            f64::NAN,
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..100_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let magnitude = (seed % 70) as i32 - 5;
            xs.push((seed >> 11) as f64 / (1u64 << 53) as f64 * 2f64.powi(magnitude));
        }
        for x in xs {
            assert_eq!(whole_bytes(x), x.round() as u64, "{x:e}");
        }
    }
}
