//! FLOPs, a per-operation roofline for one training step, communication,
//! pipeline bubble and optimizer step; MFU and HFU (SPEC §4).
//!
//! Every GEMM costs `max(flops / (peak * e), bytes / bandwidth) + t0`: an
//! ideal time at an achievable fraction `e` of the dtype's dense peak, plus a
//! fixed per-kernel cost `t0` (launch, tail, wave quantisation) that makes
//! small GEMMs slow. Elementwise work runs at a fraction of HBM bandwidth.
//! The efficiency parameters are fitted per GPU generation against
//! data/calibration.csv (`plan calibrate`, docs/accuracy.md).

mod communication;
mod compute;
mod fitted;
mod shape;

use crate::model::architecture::{Architecture, ParameterCounts};
use crate::model::fabric::Collective;
pub use crate::model::fabric::Fabric;
pub use crate::model::hardware::Generation;
use crate::model::hardware::Gpu;
use crate::model::job::Job;
use crate::model::layout::Layout;
use crate::model::plan::{Checkpointing, Optimizer, Stack};
use crate::model::recipe::Recipe;
use crate::model::stage::StageShape;
pub use communication::DP_HIDDEN_AT_MOST;
use communication::{
    activation_bytes, context_parallel, data_parallel_exposed, dp_window, expert_parallel_exposed,
    reduce_groups, tensor_parallel, ReduceGroup,
};
use compute::{attention_train, lm_head, lm_head_forward, loss_elementwise, recompute_per_layer};
pub use compute::{LayerForward, GROUPED_GEMM_HALF_TOKENS};
pub use fitted::{efficiency, Efficiency, HostCosts, HOST};
use serde::Serialize;
use shape::StepShape;
pub use shape::TORCHAO_QUANTIZE_BYTES;

/// Where the step's time goes, seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepTime {
    pub gemm: f64,
    pub attention: f64,
    pub elementwise: f64,
    pub recompute: f64,
    pub tensor_parallel: f64,
    pub context_parallel: f64,
    pub expert_parallel: f64,
    pub pipeline_bubble: f64,
    pub data_parallel: f64,
    pub optimizer: f64,
    /// Activation offloading's transfers to and from host memory that the
    /// step's compute does not hide.
    pub offload: f64,
    /// Forwards without gradients before the update: DPO's reference model
    /// over both rows of every pair; GRPO's scoring (the old policy's
    /// log-probabilities, and the reference's when `beta > 0`).
    pub reference: f64,
    /// GRPO: the vLLM engine generating the step's completions.
    pub generation: f64,
    /// GRPO: the trained weights gathered and copied into the engine after
    /// the step, and in sleep mode the engine's weights to host memory and
    /// back (`shape::rollout_seconds`).
    pub refit: f64,
    /// QLoRA: dequantizing the NF4 base weights before each use (forward,
    /// input gradient, recomputation).
    pub dequantize: f64,
    /// LoRA's adapters, forward and backward: their thin GEMMs, the scaled
    /// sums into the base's outputs and PEFT's casts to and from FP32
    /// adapters (`compute::adapter`).
    pub adapters: f64,
}

impl StepTime {
    pub fn total(&self) -> f64 {
        self.gemm
            + self.attention
            + self.elementwise
            + self.recompute
            + self.tensor_parallel
            + self.context_parallel
            + self.expert_parallel
            + self.pipeline_bubble
            + self.data_parallel
            + self.optimizer
            + self.offload
            + self.reference
            + self.generation
            + self.refit
            + self.dequantize
            + self.adapters
    }

    /// GRPO's update: the step less its generation, scoring and refit.
    pub fn update(&self) -> f64 {
        self.total() - self.generation - self.reference - self.refit
    }
}

/// Throughput of a plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Throughput {
    pub step_seconds: f64,
    pub step: StepTime,
    pub tokens_per_step: u64,
    pub tokens_per_second_per_gpu: f64,
    pub tokens_per_second: f64,
    pub samples_per_second: f64,
    /// Training FLOPs per token of the model (6N + causal attention).
    pub model_flops_per_token: f64,
    /// Plus recomputation.
    pub hardware_flops_per_token: f64,
    /// Dense peak of the GEMM dtype, FLOP/s per GPU.
    pub peak_flops: f64,
    pub mfu: f64,
    pub hfu: f64,
    pub generation: Generation,
}

/// Parameters in matmuls that one token passes through (LM head included,
/// embedding lookup excluded), and the attention FLOPs factor.
pub fn model_flops_per_token(arch: &Architecture, counts: &ParameterCounts, seq: u64) -> f64 {
    let norms = counts.norms_per_layer as f64;
    let matmul = arch.layers as f64 * (counts.active_per_layer as f64 - norms)
        + (arch.vocab * arch.hidden) as f64;
    // 12 * L * s * a * d, halved for causal masking (flash skips masked
    // blocks); sliding-window layers see only their window.
    let attention =
        12.0 * arch.layers as f64 * arch.mean_keys_per_query(seq) * arch.attention_width() as f64;
    6.0 * matmul + attention
}

/// The training pass's FLOPs per token of a plan (`FlopsPerToken::model`):
/// `model_flops_per_token` where every weight trains, 4 per frozen weight
/// and 6 per adapter weight under LoRA, the LM head on the tokens it runs on.
pub fn recipe_model_flops_per_token(
    arch: &Architecture,
    counts: &ParameterCounts,
    recipe: &Recipe,
) -> f64 {
    let tokens = recipe
        .rows_per_micro_batch()
        .saturating_mul(recipe.data.seq)
        .max(1);
    let head_share = (recipe.logit_tokens() as f64 / tokens as f64).min(1.0);
    FlopsPerToken::of(arch, counts, recipe, head_share).model()
}

// ---- the step --------------------------------------------------------------------

/// The 1F1B bubble `(p-1)/(m*vp)` of the step's compute (Narayanan et al. 2021).
fn pipeline_bubble(s: &StepShape, per_micro_batch: f64) -> f64 {
    if s.layout.pp <= 1 {
        return 0.0;
    }
    let vp = s.recipe.parallelism.vp.max(1) as f64;
    (s.p - 1.0) / (s.m * vp) * s.m * per_micro_batch
}

/// Pipeline point-to-point sends of the activations, forward and backward,
/// once per model chunk (`vp` of them under interleaving), at the link's
/// all-gather speed plus its per-hop latency, mostly overlapped.
fn pipeline_p2p(s: &StepShape) -> f64 {
    if s.layout.pp <= 1 {
        return 0.0;
    }
    let l = s.layout;
    let link = s.fabric.link(2, l.tp * l.cp * l.dp);
    let send =
        activation_bytes(s) / s.t / link.bus_bandwidth(Collective::AllGather) + link.hop_latency[0];
    let chunks = s.recipe.parallelism.vp.max(1) as f64;
    s.m * 2.0 * chunks * send * (1.0 - overlap(s))
}

/// The hidden share of overlappable traffic: the calibrated one, or none
/// when the user says the run does not overlap (`overlap=0`).
fn overlap(s: &StepShape) -> f64 {
    if s.recipe.parallelism.overlap {
        s.eff.overlap
    } else {
        0.0
    }
}

/// Optimizer step: read params, grads and states, write params and states
/// (AdamW fp32: 28 B per parameter), at HBM bandwidth, on this GPU's shard.
fn optimizer_step(s: &StepShape) -> f64 {
    // The distributed optimizer's shard spans the reduce group's ZeRO shard
    // (memory/states.rs).
    let shard = |g: &ReduceGroup| {
        if s.recipe.parallelism.zero >= 1 {
            g.shard as f64
        } else {
            1.0
        }
    };
    let groups = reduce_groups(s);
    let trainable = groups
        .iter()
        .map(|g| g.params * s.trainable / shard(g))
        .sum::<f64>();
    let bytes_per_param = match s.recipe.training.optimizer {
        Optimizer::Adamw | Optimizer::AdamwForeach => 28.0,
        Optimizer::Adamw8bit => 16.0,
        Optimizer::Adafactor => 14.0,
        Optimizer::Sgd => 20.0,
    };
    // Moments read and written in bf16 (Megatron's precision-aware optimizer).
    let moments_saved =
        if s.recipe.numerics.bf16_moments && s.recipe.implementation.stack == Stack::Megatron {
            8.0
        } else {
            0.0
        };
    let bytes_per_param = bytes_per_param - moments_saved;
    let local = groups.iter().map(|g| g.params * s.trainable).sum::<f64>();
    (trainable * bytes_per_param + gradient_buffer_bytes(s, local, trainable)) / s.bw
        + 50.0 * s.eff.kernel_overhead
}

/// Megatron's passes over the gradients each step besides Adam's, all
/// memory-bound: the `main_grad` buffer of every `local` parameter zeroed
/// before the first micro-batch (`ParamAndGradBuffer.reset`), its norm
/// taken to check for NaN and the buffer scaled by 1/DP before the
/// reduce-scatter (DDP's `check_for_nan_in_grad`, `gradient_scaling_factor`):
/// one write, one read, one read and write of each element; then on the
/// optimizer's `shard` the gradients' norm and clipping (`get_grad_norm_fp32`,
/// `clip_grad_by_total_norm_fp32`: 4 + 8 B) and the FP32 main parameters
/// copied to the BF16 model's (`_copy_main_params_to_model_params`: 4 + 2 B).
/// SimuMax itemizes the same passes on B200 (MooreThreads/SimuMax
/// `perf_llm.py`'s optimizer time: zero_grad_buffer, l2_norm_before_reduce,
/// mul_before_reduce, l2_norm_after_reduce, grads_clip_after_reduce,
/// copy_main_params_to_model_params). Other stacks free their gradients
/// instead of zeroing them and clip on the shard alone (`clip_grad_norm_`).
fn gradient_buffer_bytes(s: &StepShape, local: f64, shard: f64) -> f64 {
    let grad = if s.recipe.numerics.grad_bf16 {
        2.0
    } else {
        4.0
    };
    match s.recipe.implementation.stack {
        Stack::Megatron => 4.0 * grad * local + 18.0 * shard,
        Stack::Hf | Stack::Torchtitan => 12.0 * shard,
    }
}

/// Where one step's time goes: compute and communication per micro-batch,
/// times the micro-batches, plus bubble, exposed data-parallel traffic and
/// the optimizer.
fn step_time(s: &StepShape, fwd: LayerForward) -> StepTime {
    // Forward + backward: the base's GEMMs `gemm_passes` times (3 trained,
    // 2 frozen), the adapters' 3 times (they train), elementwise work 3x.
    let attn_train = attention_train(s, &fwd);
    let mb_adapters = s.layers * (fwd.adapters + fwd.adapters_backward);
    let mb_gemm = s.layers * s.gemm_passes() * fwd.gemm + lm_head(s);
    let mb_attn = s.layers * attn_train;
    let mb_elem = s.layers * (3.0 * fwd.elementwise) + loss_elementwise(s);
    // Dequantized for the forward and again for the input's gradient.
    let mb_dequantize = s.layers * (fwd.dequantize + fwd.dequantize_backward);
    let mb_recompute = s.layers * recompute_per_layer(s, &fwd);
    let tp_comm = tensor_parallel(s, fwd.gemm);
    let cp_comm = context_parallel(s, attn_train);
    let compute = mb_gemm + mb_attn + mb_elem + mb_dequantize + mb_adapters;
    let ep_comm = expert_parallel_exposed(s, compute);
    let per_mb = compute + mb_recompute + tp_comm + cp_comm + ep_comm;
    let m = s.m;
    StepTime {
        gemm: m * mb_gemm,
        attention: m * mb_attn,
        elementwise: m * mb_elem,
        recompute: m * mb_recompute,
        tensor_parallel: m * tp_comm,
        context_parallel: m * cp_comm,
        expert_parallel: m * ep_comm,
        pipeline_bubble: pipeline_bubble(s, per_mb) + pipeline_p2p(s),
        data_parallel: data_parallel_exposed(s, dp_window(s, per_mb)),
        optimizer: optimizer_step(s),
        offload: m * offload_exposed(s, &fwd),
        reference: m * scoring(s, &fwd),
        generation: s.generation,
        refit: s.refit,
        dequantize: m * mb_dequantize,
        adapters: m * mb_adapters,
    }
}

/// The forwards without gradients per micro-batch (`Recipe::scoring_forwards`):
/// a reference is the frozen base, with no adapters (TRL's
/// `null_ref_context` under LoRA); GRPO's old policy is the policy, with them.
fn scoring(s: &StepShape, fwd: &LayerForward) -> f64 {
    let forwards = s.recipe.scoring_forwards() as f64;
    let with_adapters = s.recipe.policy_scoring_forwards() as f64;
    forwards * forward_without_gradients(s, fwd) + with_adapters * s.layers * fwd.adapters
}

/// One forward over the micro-batch's rows without gradients: DPO's
/// reference log-probabilities (TRL's `compute_ref_log_probs` under
/// `torch.no_grad`; train.py runs it before the policy's forward), GRPO's
/// old and reference log-probabilities (`_generate_and_score_completions`,
/// in chunks of `mb` rows): a third of the layers' GEMM and elementwise time
/// of forward plus backward, the attention forward, the LM head's forward
/// (a third of `lm_head`) and the tensor-parallel traffic of a forward
/// (half of a step's without recomputation: Megatron's `f` and `g`
/// collectives run once each way).
/// FSDP2 gathers the reference's layers as it gathers the policy's, ahead
/// of each layer, behind the forward's compute (not charged).
fn forward_without_gradients(s: &StepShape, fwd: &LayerForward) -> f64 {
    s.layers * (fwd.gemm + fwd.attention + fwd.elementwise + fwd.dequantize)
        + lm_head_forward(s)
        + tensor_parallel(s, fwd.gemm) / 2.0
}

/// Activation offloading per micro-batch, layer by layer (#36: a whole
/// step's compute hid every transfer, so offloading 80 layers cost nothing).
/// Each offloaded layer's activations cross the host link on a copy engine
/// beside the compute, and only the layers next to it can hide the copy:
/// the forward's copy of layer `i` behind layer `i + 1`'s forward, the
/// backward's reload of layer `i` behind the backward of the layer before
/// it in backward order. TransformerEngine's double-buffered handler
/// (Megatron's `--cpu-offloading`) waits for each copy at the end of the
/// next layer; SMP prefetches `activation_loading_horizon` layers ahead (the
/// HF stack's offload), which starts the copies earlier but cannot make a
/// serial copy engine faster than the layers it runs beside. What a layer's
/// compute does not cover is exposed.
fn offload_exposed(s: &StepShape, fwd: &LayerForward) -> f64 {
    let o = &s.offload;
    if o.layers <= 0.0 || o.bytes_per_layer <= 0.0 {
        return 0.0;
    }
    let copy = o.bytes_per_layer / s.host_bw;
    let forward = fwd.total();
    let backward = (s.gemm_passes() - 1.0) * fwd.gemm
        + fwd.adapters_backward
        + 2.0 * fwd.elementwise
        + fwd.dequantize_backward
        + (attention_train(s, fwd) - fwd.attention)
        + recompute_per_layer(s, fwd);
    o.layers * ((copy - forward).max(0.0) + (copy - backward).max(0.0))
}

/// Step time and rates for a resolved plan.
pub fn throughput(
    arch: &Architecture,
    counts: &ParameterCounts,
    recipe: &Recipe,
    layout: &Layout,
    gpu: &Gpu,
    fabric: &Fabric,
    eff: &Efficiency,
) -> Throughput {
    throughput_reusing(arch, counts, recipe, layout, gpu, fabric, eff, &mut None)
}

/// `throughput`, with the layer's forward taken from `forward` when it holds
/// one, else computed and left there. Pass the same `forward` only for plans
/// that differ in checkpointing and loss alone (debug builds check it).
#[allow(clippy::too_many_arguments)]
pub fn throughput_reusing(
    arch: &Architecture,
    counts: &ParameterCounts,
    recipe: &Recipe,
    layout: &Layout,
    gpu: &Gpu,
    fabric: &Fabric,
    eff: &Efficiency,
    forward: &mut Option<LayerForward>,
) -> Throughput {
    // GRPO's scoring and update run over the rows' mean length (NeMo RL
    // packs them; TRL pads each micro-batch to its longest); generation
    // waits for the longest (`rollout::generation_seconds`).
    let trained = recipe.at_mean_length();
    let eff = &eff.on(gpu);
    let shape = StepShape::new(arch, counts, &trained, layout, gpu, fabric, eff, recipe);
    let recipe = &trained;
    let fwd = *forward.get_or_insert_with(|| LayerForward::of(&shape));
    debug_assert!(
        fwd.same_bits(&LayerForward::of(&shape)),
        "a forward reused across plans that differ in more than checkpointing and loss"
    );
    // The slowest pipeline stage sets the pace: the last (its layers, the LM
    // head and the loss) or the busiest other one (an uneven split's middle).
    let mut step = step_time(&shape, fwd);
    let other = layout.stages.first.max(layout.stages.middle);
    if layout.pp > 1 && other as f64 > shape.layers {
        let busiest = StepShape {
            base: StageShape {
                layers: other as f64,
                mtp: 0.0,
                has_head: false,
                ..shape.base
            },
            ..shape
        };
        let alt = step_time(&busiest, fwd);
        if alt.total() > step.total() {
            step = alt;
        }
    }
    let step_seconds = step.total().max(1e-9);
    // Counts multiply in f64 (exact below 2^53): the URL accepts batches whose
    // token count overflows u64; the integer field saturates.
    let rows = recipe.rows_per_micro_batch();
    let tokens =
        rows as f64 * recipe.data.seq as f64 * recipe.data.grad_accum as f64 * layout.dp as f64;
    let tokens_per_step = rows
        .saturating_mul(recipe.data.seq)
        .saturating_mul(recipe.data.grad_accum)
        .saturating_mul(layout.dp);
    let tokens_per_second = tokens / step_seconds;
    let tokens_per_second_per_gpu = tokens_per_second / layout.gpus.max(1) as f64;
    // GRPO runs the head on the completion's positions only (`Recipe::logit_tokens`).
    let head_share = (shape.logit_tokens / shape.tokens.max(1.0)).min(1.0);
    let flops = FlopsPerToken::of(arch, counts, recipe, head_share);
    let model_flops = flops.model();
    let hardware_flops = flops.hardware(recipe);
    // MFU's denominator: the GEMM dtype's peak, or the 16-bit one where a
    // custom GPU's FP8 is slower (no op then runs faster than it: MFU <= 1).
    let peak_flops = shape.gemm_peak.max(shape.wide_peak);
    Throughput {
        step_seconds,
        step,
        tokens_per_step,
        tokens_per_second_per_gpu,
        tokens_per_second,
        // Samples: sequences, or DPO's pairs of two.
        samples_per_second: tokens_per_second / recipe.tokens_per_sample() as f64,
        model_flops_per_token: model_flops,
        hardware_flops_per_token: hardware_flops,
        peak_flops,
        mfu: model_flops * tokens_per_second_per_gpu / peak_flops,
        hfu: hardware_flops * tokens_per_second_per_gpu / peak_flops,
        generation: gpu.generation,
    }
}

/// FLOPs per token of one step, by the work they do. The convention:
/// - model FLOPs (MFU) are what the training pass needs: a trained weight
///   6 per token (forward 2, input gradient 2, weight gradient 2; Kaplan et
///   al. 2020), a frozen one 4 (no weight gradient: a LoRA or QLoRA base and
///   its LM head), an adapter weight 6, attention its forward and backward
///   (`model_flops_per_token`);
/// - hardware FLOPs (HFU) add what the GPUs also execute: recomputed
///   forwards (Korthikanti et al. 2022) and the forwards without gradients
///   before the update (DPO's reference, GRPO's old policy and reference).
///
/// GRPO's generation is timed, not counted.
#[derive(Clone, Copy, Debug)]
struct FlopsPerToken {
    /// The decoder layers' matmul weights a token passes through.
    linear: f64,
    /// The LM head's, times the share of tokens it runs on.
    head: f64,
    /// The adapters' weights a token passes through.
    adapters: f64,
    /// Attention's forward FLOPs over the keys a query sees.
    attention_forward: f64,
    /// 4 for a frozen base, 6 for a trained one.
    per_weight: f64,
}

impl FlopsPerToken {
    fn of(arch: &Architecture, counts: &ParameterCounts, recipe: &Recipe, head_share: f64) -> Self {
        let norms = counts.norms_per_layer as f64;
        let layers = arch.layers as f64;
        let adapters = match recipe.training.train {
            crate::model::plan::Training::Full => 0.0,
            _ => {
                layers
                    * arch.lora_active_params_per_layer(recipe.lora.lora_rank, recipe.adapted(arch))
            }
        };
        FlopsPerToken {
            linear: layers * (counts.active_per_layer as f64 - norms),
            head: (arch.vocab * arch.hidden) as f64 * head_share,
            adapters,
            attention_forward: 4.0
                * layers
                * arch.mean_keys_per_query(recipe.data.seq)
                * arch.attention_width() as f64,
            per_weight: if recipe.training.train == crate::model::plan::Training::Full {
                6.0
            } else {
                4.0
            },
        }
    }

    /// The training pass: forward and backward.
    fn model(&self) -> f64 {
        self.per_weight * (self.linear + self.head)
            + 6.0 * self.adapters
            + 3.0 * self.attention_forward
    }

    /// One forward of the decoder layers (what recomputation repeats).
    fn layers_forward(&self) -> f64 {
        2.0 * (self.linear + self.adapters) + self.attention_forward
    }

    /// The training pass, recomputation and the forwards without gradients.
    fn hardware(&self, recipe: &Recipe) -> f64 {
        let recomputed = match recipe.activations.checkpointing {
            Checkpointing::Op => recipe.op_level_recomputed_gemm_share(),
            Checkpointing::Selective => 0.0,
            c => c.recomputed_fraction(),
        };
        let scoring = recipe.scoring_forwards() as f64 * (self.layers_forward() + 2.0 * self.head)
            - (recipe.scoring_forwards() - recipe.policy_scoring_forwards()) as f64
                * 2.0
                * self.adapters;
        self.model() + recomputed * self.layers_forward() + scoring
    }
}

impl Job {
    /// The plan's step on this model, layout and hardware at `eff` (the
    /// generation's calibrated efficiency in the report; a warning times
    /// the same plan at other host costs).
    pub fn throughput(&self, eff: &Efficiency) -> Throughput {
        throughput(
            &self.arch,
            &self.counts,
            &self.recipe,
            &self.layout,
            &self.gpu,
            &self.fabric,
            eff,
        )
    }

    /// The generation's calibrated efficiency on this GPU.
    pub fn efficiency(&self) -> Efficiency {
        efficiency(self.gpu.generation)
    }
}
