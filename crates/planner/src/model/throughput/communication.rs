//! Communication per micro-batch and per step: tensor-, context- and
//! expert-parallel collectives, and the data-parallel gradient reduction
//! and parameter gathers with what of them the step hides.

use super::shape::StepShape;
use crate::model::fabric::Collective;
use crate::model::plan::{Checkpointing, Precision, Stack};
use crate::model::recipe::Recipe;

// ---- communication per micro-batch ------------------------------------------------

/// Bytes of one layer's bf16 activations of a micro-batch.
pub(super) fn activation_bytes(s: &StepShape) -> f64 {
    s.tokens * s.h * 2.0
}

/// Tensor parallelism per layer and micro-batch (Korthikanti et al. 2022).
/// With SP, forward runs 2 all-gathers and 2 reduce-scatters of the layer's
/// activations; backward all-gathers the output gradients (2), gathers the
/// inputs again for the weight gradients (2) and reduce-scatters the input
/// gradients (2). Without SP: 2 all-reduces forward, 2 backward.
/// Recomputing a layer repeats its forward collectives. Each costs its bytes
/// at the link's measured bus bandwidth plus its latencies (fabric.rs).
///
/// What hides, by the stack's flags:
/// - Megatron / TransformerEngine by default: the backward's input
///   re-gather runs beside the data-gradient GEMM and the input-gradient
///   reduction beside the weight-gradient GEMM (TE `Linear` backward,
///   `async_op=True`; Megatron's async TP all-reduce), so the generation's
///   `tp_hidden` share of them hides, up to the backward GEMMs' time; the
///   forward's and the output-gradient gathers are exposed.
/// - With TP overlap (`--tp-comm-overlap`, TE userbuffers) every exchange is
///   pipelined with its GEMM in `t` chunks: one chunk in `t` shows, and
///   whatever exceeds the layer's GEMM time.
/// - torchtitan's async TP (`enable_async_tensor_parallel`, `tp_overlap`
///   here) decomposes the gathers and reductions into chunks pipelined
///   with their matmuls (symmetric memory), as TE's userbuffers do.
/// - PyTorch DTensor TP otherwise (Hugging Face, torchtitan): all exposed.
///
/// A frozen base (LoRA) needs no input for a weight gradient: its backward
/// gathers no input again, and has only the input-gradient GEMM to hide
/// behind (`gemm_forward` is one forward of the layer's GEMMs).
pub(super) fn tensor_parallel(s: &StepShape, gemm_forward: f64) -> f64 {
    if s.layout.tp <= 1 {
        return 0.0;
    }
    let link = s.fabric.link(s.layout.tp, 1);
    let one = |c: Collective| link.seconds(c, s.t, activation_bytes(s));
    let r = s.recomputed();
    let regathers = if s.frozen { 0.0 } else { 2.0 };
    let (exposed, async_backward) = if s.recipe.parallelism.sp {
        let (ag, rs) = (one(Collective::AllGather), one(Collective::ReduceScatter));
        (
            (4.0 + 2.0 * r) * ag + (2.0 + 2.0 * r) * rs,
            regathers * ag + 2.0 * rs,
        )
    } else {
        let ar = one(Collective::AllReduce);
        ((2.0 + 2.0 * r) * ar, 2.0 * ar)
    };
    let all = exposed + async_backward;
    let backward_gemms = (s.gemm_passes() - 1.0) * gemm_forward;
    let per_layer = match s.recipe.implementation.stack {
        Stack::Megatron | Stack::Torchtitan if s.recipe.parallelism.tp_overlap => {
            (all / s.t).max(all - backward_gemms - gemm_forward)
        }
        Stack::Megatron => all - s.eff.tp_hidden * async_backward.min(backward_gemms),
        Stack::Hf | Stack::Torchtitan => all,
    };
    s.layers * per_layer
}

/// Context parallelism's ring: K and V chunks go round (`c-1` steps), dK and
/// dV come back, each step a send at the link's measured speed plus its
/// per-hop latency, overlapped with attention; only the excess shows (Liu et
/// al. 2023, ring attention; Megatron's `attn_mask_type` ring).
pub(super) fn context_parallel(s: &StepShape, attention_train: f64) -> f64 {
    if s.layout.cp <= 1 {
        return 0.0;
    }
    let link = s.fabric.link(s.layout.cp, s.layout.tp);
    let steps = 3.0 * (s.c - 1.0);
    let bytes = steps * s.tokens * s.kv / s.t * 2.0 * 2.0;
    let comm = bytes / link.bus_bandwidth(Collective::AllGather) + steps * link.hop_latency[0];
    s.layers * ((comm - attention_train).max(0.0) + ring_merges(s))
}

/// PyTorch's ring attention (`torch.distributed.tensor.experimental`'s
/// `_templated_ring_attention`, what torchtitan and accelerate run) keeps
/// each ring step's partial result in FP32 and merges it with eager,
/// unfused ops on the compute stream, so none of it hides behind the ring:
/// - forward (`_SDPAMerger`, `convert_to_f32` on by default): the first
///   step's output cast to FP32 (6 B per output element) and the last cast
///   back (6 B); each later step casts its block (6 B) and merges it with
///   three elementwise ops (12 + 8 + 12 B), 38 B per element when the step
///   computes every query, 27 B when the load balancer gives it half the
///   queries (19 B on the half, 8 B for `_partial_update`'s `torch.cat`),
///   so 32.5 B on average; and each send concatenates K and V (4 B per
///   element);
/// - backward (`_templated_ring_attention_backward`): dQ accumulated in
///   FP32 (10 B per element per step, 13 B under a partial update; zeroed
///   and cast back, 10 B), dK and dV likewise (11.5 B) and concatenated in
///   FP32 for each send (8 B), plus K and V's sends (4 B).
///
/// Megatron's TransformerEngine corrects the output inside its own kernels:
/// not charged. Seconds per layer and micro-batch; the forward's merges run
/// again where the attention is recomputed.
fn ring_merges(s: &StepShape) -> f64 {
    if s.recipe.implementation.stack == Stack::Megatron {
        return 0.0;
    }
    let c = s.c;
    let out = s.tokens * s.q / s.t;
    let kv = 2.0 * s.tokens * s.kv / s.t;
    let forward = out * (12.0 + 32.5 * (c - 1.0)) + kv * 4.0 * (c - 1.0);
    let backward = out * (10.0 + 11.5 * c) + kv * (10.0 + 23.5 * c);
    let again = match s.recipe.activations.checkpointing {
        Checkpointing::Full | Checkpointing::Fraction(_) => s.recomputed(),
        _ => 0.0,
    };
    (forward * (1.0 + again) + backward) / s.bw
}

/// Expert parallelism: each token's hidden state goes to its `k` experts
/// and back, forward and backward: 4 all-to-alls per layer at the link's
/// measured all-to-all speed (see `expert_parallel_exposed` for what
/// hides). Under tensor parallelism the MoE layer's input is split over the
/// TP ranks (Megatron requires sequence parallelism with MoE and TP), so
/// each rank dispatches `1/t` of the tokens.
fn expert_parallel(s: &StepShape) -> f64 {
    let bytes = match &s.arch.moe {
        Some(m) if s.ep > 1.0 => s.tokens / s.t * m.active as f64 * s.h * 2.0,
        _ => return 0.0,
    };
    let moe_layers = s.layers * s.arch.moe_layer_share();
    moe_layers
        * 4.0
        * s.fabric
            .seconds(Collective::AllToAll, s.layout.ep, s.layout.tp, bytes)
}

/// The all-to-alls' exposed part: all of it by default (Megatron-LM's);
/// with `ep_overlap` (Megatron's `--overlap-moe-expert-parallel-comm`, which
/// runs one micro-batch's dispatch and combine beside another's compute) only
/// what exceeds the micro-batch's compute.
pub(super) fn expert_parallel_exposed(s: &StepShape, compute: f64) -> f64 {
    let comm = expert_parallel(s);
    if s.recipe.parallelism.ep_overlap && s.recipe.implementation.stack == Stack::Megatron {
        (comm - compute).max(0.0)
    } else {
        comm
    }
}

/// Parameters of one pipeline stage on this GPU: the dense ones (split by
/// TP and PP) and the routed experts' (also by EP, each GPU holding
/// `experts/ep` of them, Megatron-Core expert parallelism).
struct StageParameters {
    pub(super) dense: f64,
    pub(super) experts: f64,
}

fn stage_parameters(s: &StepShape) -> StageParameters {
    let experts = s.arch.routed_params_per_layer(s.counts) * s.arch.layers as f64;
    let dense = s.counts.total as f64 - experts;
    StageParameters {
        dense: dense / (s.t * s.p),
        experts: experts / (s.p * s.layout.expert_split()),
    }
}

/// The data-parallel groups a stage's parameters reduce over: the dense
/// ones over DP x CP ranks `tp` apart; the routed experts over the
/// expert-data-parallel group, `ep` times smaller and `ep` times further
/// apart (Megatron's `expert_data_parallel_group`, world / (ETP x EP x PP),
/// `Layout::expert_split`, as memory/mod.rs shards their states). With EP 8 over 64
/// data-parallel ranks of 8-GPU nodes, every rank of that group sits in
/// another node, so the experts' gradients cross the network whole.
pub(super) struct ReduceGroup {
    /// Parameters on this GPU.
    pub(super) params: f64,
    /// Ranks holding replicas or shards of them.
    pub(super) ranks: u64,
    /// Ranks of the ZeRO shard group among them.
    pub(super) shard: u64,
    /// Distance between neighbouring ranks.
    pub(super) stride: u64,
}

pub(super) fn reduce_groups(s: &StepShape) -> [ReduceGroup; 2] {
    let l = s.layout;
    let (ranks, shard) = (l.dp * l.cp.max(1), l.shard.max(1) * l.cp.max(1));
    // EP x ETP ranks hold one expert's pieces (ETP = TP, or 1 where EP takes TP's ranks).
    let split = l.expert_split() as u64;
    let p = stage_parameters(s);
    [
        ReduceGroup {
            params: p.dense,
            ranks,
            shard,
            stride: l.tp,
        },
        ReduceGroup {
            params: p.experts,
            ranks: (ranks * l.tp / split).max(1),
            shard: (shard * l.tp / split).max(1),
            stride: split,
        },
    ]
}

/// Bytes per parameter element the data-parallel all-gathers move: FP8
/// with Megatron's `--fp8-param-gather` or torchtitan's
/// `enable_fsdp_float8_all_gather` (`fp8_params`), else BF16.
fn parameter_bytes(recipe: &Recipe) -> f64 {
    if recipe.training.train == crate::model::plan::Training::Qlora {
        // The NF4 weights and their constants, gathered as stored.
        0.5 + (1.0 + 4.0 / 256.0) / 64.0
    } else if recipe.numerics.fp8_params && recipe.numerics.precision.is_low_precision() {
        1.0
    } else {
        2.0
    }
}

/// Bytes per gradient element the data-parallel reduction moves.
fn gradient_bytes(recipe: &Recipe) -> f64 {
    match (
        recipe.implementation.stack,
        recipe.numerics.precision,
        recipe.parallelism.zero,
    ) {
        (_, Precision::Fp32, _) => 4.0,
        (Stack::Hf, Precision::Bf16Pure, _) => 2.0,
        (Stack::Hf, _, 0) => 4.0,
        // Megatron reduces in the gradient buffer's dtype: fp32 unless
        // `--grad-reduce-in-bf16` (memory/states.rs, state_bytes).
        (Stack::Megatron, _, _) if !recipe.numerics.grad_bf16 => 4.0,
        // torchtitan's FSDP2 reduces in fp32 (`mixed_precision_reduce = "float32"`).
        (Stack::Torchtitan, _, _) => 4.0,
        _ => 2.0,
    }
}

/// Data-parallel traffic of one step, each collective at the link's
/// measured speed (fabric.rs): DDP all-reduces the gradients; ZeRO-1/2
/// (Megatron's distributed optimizer) reduce-scatter them and all-gather the
/// updated parameters; ZeRO-3 all-gathers the parameters forward and backward
/// per micro-batch and reduce-scatters per step (Rajbhandari et al. 2020);
/// hybrid shard does that inside its group and all-reduces the shards
/// across the replicas. Context-parallel ranks hold the same parameters and
/// see other tokens, so the gradients are reduced over DP x CP ranks
/// (Megatron's `get_data_parallel_group(with_context_parallel=True)`;
/// torchtitan's `dp_shard_cp` mesh): with DP 1 and CP 8 that is 8 ranks.
fn data_parallel(s: &StepShape) -> f64 {
    reduce_groups(s).iter().map(|g| group_traffic(s, g)).sum()
}

/// One reduce group's traffic (see `data_parallel`).
fn group_traffic(s: &StepShape, g: &ReduceGroup) -> f64 {
    let (n, stride) = (g.ranks, g.stride);
    if n <= 1 || g.params <= 0.0 {
        return 0.0;
    }
    let trainable = g.params * s.trainable;
    let run =
        |c: Collective, n: u64, stride: u64, bytes: f64| s.fabric.seconds(c, n, stride, bytes);
    let param = parameter_bytes(s.recipe);
    let gathers = s.m * 2.0 * g.params * param;
    let grads = trainable * gradient_bytes(s.recipe);
    // Megatron reduces and gathers bucket by bucket, each its own collective
    // with its own latency.
    let k = megatron_buckets(s, trainable);
    let bucketed = |c: Collective, bytes: f64| k * run(c, n, stride, bytes / k);
    match s.recipe.parallelism.zero {
        0 => bucketed(Collective::AllReduce, grads),
        1 | 2 => {
            bucketed(Collective::ReduceScatter, grads)
                + bucketed(Collective::AllGather, trainable * param)
        }
        _ if g.shard >= n => {
            run(Collective::AllGather, n, stride, gathers)
                + run(Collective::ReduceScatter, n, stride, grads)
        }
        _ => {
            let inside = run(Collective::AllGather, g.shard, stride, gathers)
                + run(Collective::ReduceScatter, g.shard, stride, grads);
            inside
                + run(
                    Collective::AllReduce,
                    n / g.shard,
                    stride * g.shard,
                    grads / g.shard as f64,
                )
        }
    }
}

/// Megatron's gradient buckets on this GPU: with `overlap_grad_reduce`
/// each bucket of `max(40M, 1M x DP x CP)` parameters is reduce-scattered
/// (all-reduced without the distributed optimizer) and all-gathered as one
/// collective as soon as it is ready, so every bucket pays the ring's
/// latency ("larger DP sizes need larger buckets to ensure collectives do
/// not become latency-bound": `DistributedDataParallelConfig.bucket_size`,
/// megatron/core/distributed; Megatron-LM `resolve_ddp_bucket_size`, the
/// DP x CP group's size; SimuMax times `num_bucket` collectives the same
/// way). Without the overlap one collective takes the whole buffer; other
/// stacks: 1 (one collective per step or per FSDP unit).
fn megatron_buckets(s: &StepShape, params: f64) -> f64 {
    let r = s.recipe;
    if r.implementation.stack != Stack::Megatron || !r.parallelism.overlap || r.parallelism.zero > 2
    {
        return 1.0;
    }
    let dp_cp = (s.layout.dp * s.layout.cp.max(1)) as f64;
    let size = MEGATRON_BUCKET_FLOOR.max(MEGATRON_BUCKET_PER_RANK * dp_cp);
    (params / size).ceil().max(1.0)
}

/// Megatron's default bucket: at least 40M parameters, 1M per DP x CP rank
/// beyond (see `megatron_buckets`).
const MEGATRON_BUCKET_FLOOR: f64 = 40e6;
const MEGATRON_BUCKET_PER_RANK: f64 = 1e6;

/// The compute data-parallel traffic can hide behind. Gradients accumulate
/// over the micro-batches and are reduced once, as the last micro-batch's
/// backward produces them, and the updated parameters are gathered as the
/// next step's first forward needs them (Megatron's `overlap_grad_reduce`
/// and `overlap_param_gather`; DDP's `no_sync`): one micro-batch's compute.
/// ZeRO-3 gathers and reduces in every micro-batch, behind all of them.
/// So does a pipeline: its stages and model chunks finish their last
/// backward at different times through the cooldown, and the rows with
/// pipelines (Llama 3.1 405B, GPT-3 175B) run as if all of the step hid
/// the traffic.
pub(super) fn dp_window(s: &StepShape, per_micro_batch: f64) -> f64 {
    if s.recipe.parallelism.zero >= 3 || s.layout.pp > 1 {
        s.m * per_micro_batch
    } else {
        per_micro_batch
    }
}

/// The part of the data-parallel traffic that compute does not hide.
pub(super) fn data_parallel_exposed(s: &StepShape, compute: f64) -> f64 {
    let comm = data_parallel(s);
    if !s.recipe.parallelism.overlap {
        return comm;
    }
    (comm * (1.0 - s.eff.overlap)).max(comm - compute * DP_HIDDEN_AT_MOST)
}

/// The most of the compute's length that data-parallel traffic can hide
/// behind (the first and last layers' collectives have nothing to overlap).
pub const DP_HIDDEN_AT_MOST: f64 = 0.9;
