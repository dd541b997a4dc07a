//! FLOPs, a per-operation roofline for one training step, communication,
//! pipeline bubble and optimizer step; MFU and HFU (SPEC §4).
//!
//! Every GEMM costs `max(flops / (peak * e), bytes / bandwidth) + t0`: an
//! ideal time at an achievable fraction `e` of the dtype's dense peak, plus a
//! fixed per-kernel cost `t0` (launch, tail, wave quantisation) that makes
//! small GEMMs slow. Elementwise work runs at a fraction of HBM bandwidth.
//! The efficiency parameters are fitted per GPU generation against
//! data/calibration.csv (`plan calibrate`, docs/accuracy.md).

use crate::architecture::{Architecture, ParameterCounts};
use crate::fabric::Collective;
pub use crate::fabric::Fabric;
use crate::hardware::Gpu;
pub use crate::hardware::{generation, Generation};
use crate::layout::Layout;
use crate::plan::{Attention, Checkpointing, Loss, Optimizer, Plan, Precision, Stack, Training};
use serde::Serialize;

/// Fitted efficiency parameters of one GPU generation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Efficiency {
    /// Achievable fraction of the dense BF16 peak on large GEMMs.
    pub gemm: f64,
    /// Achievable fraction of the FP8 (and FP4) dense peak on large GEMMs.
    pub fp8_gemm: f64,
    /// Fixed cost per kernel, seconds.
    pub kernel_overhead: f64,
    /// The share of its benchmarked speed (kernels.rs) the flash-attention
    /// kernel sustains in training: 1 where the benchmarks' clocks hold;
    /// fitted on power-capped parts.
    pub attention: f64,
    /// Achievable fraction of HBM bandwidth for elementwise kernels.
    pub memory: f64,
    /// Fraction of data-parallel / FSDP communication hidden behind compute.
    pub overlap: f64,
    /// The routed experts' speed as a fraction of dense GEMMs of the same
    /// shapes on many tokens per expert (the fall with few is measured:
    /// `GROUPED_GEMM_HALF_TOKENS`): token permutation, the router's top-k
    /// and the dropless dispatcher's synchronisation, which the roofline
    /// does not see one by one. Fitted on the MoE rows only.
    pub moe: f64,
    /// Seconds one MoE layer costs per micro-batch, forward and backward,
    /// whatever its size and settings: the dropless dispatcher's host
    /// synchronisation on the token counts (what makes micro-batch 1 slow:
    /// Qwen3-30B-A3B runs 2.6x faster per token at micro-batch 4 than at 1
    /// on Blackwell). Fitted on the MoE rows. See `moe_host_cost`.
    pub moe_layer_overhead: f64,
    /// The host's launch costs of an MoE layer (`HOST` on every generation).
    pub host: HostCosts,
}

/// The host's launch costs of an MoE layer per micro-batch, forward and
/// backward (`moe_host_cost`), fitted on the 14 Blackwell MoE rows (DGX
/// B200's x86 hosts and GB200/GB300's Grace) with each row's dispatcher
/// and CUDA-graph scope from its recipe (calibration.csv), and taken for
/// every generation: they are the CPU's and the software's, not the GPU's.
/// 0.19 ms per expert on the GPU (~40 launches of ~5 µs), 1.5 ms for a
/// router and preprocessing outside CUDA graphs, 3.1 ms for the all-to-all
/// dispatcher over DeepEP/HybridEP.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct HostCosts {
    /// Seconds per MoE layer and micro-batch per expert on the GPU: their
    /// grouped GEMMs' per-expert launches.
    pub moe_expert_launch: f64,
    /// Seconds per MoE layer and micro-batch when the router and its
    /// preprocessing are not CUDA graphs (`Plan::moe_graphs`).
    pub moe_router_launch: f64,
    /// Seconds per MoE layer and micro-batch the all-to-all dispatcher costs
    /// over a fused one (`Plan::moe_flex`).
    pub moe_alltoall_launch: f64,
}

pub const HOST: HostCosts = HostCosts {
    moe_expert_launch: 0.000158,
    moe_router_launch: 0.001355,
    moe_alltoall_launch: 0.003472,
};

/// The calibrated parameters: `plan calibrate --fit` refits them from a
/// neutral start within physical bounds, and a test checks that it lands on
/// these values; docs/accuracy.md gives their cross-validated error.
pub fn efficiency(generation: Generation) -> Efficiency {
    let hand_set = Efficiency {
        gemm: 0.0,
        fp8_gemm: 0.0,
        kernel_overhead: 6e-6,
        attention: 1.0,
        memory: 0.75,
        overlap: 0.85,
        moe: 1.0,
        moe_layer_overhead: 0.0,
        host: HOST,
    };
    match generation {
        // Fitted on 8 A100 rows: torchtitan 2024, Korthikanti et al. 2022.
        // Attention sits at its upper bound (0.7).
        Generation::Ampere => Efficiency {
            gemm: 0.714,
            // No Megatron MoE row: the experts run as fast as dense GEMMs
            // (1.0), which the two Hugging Face-stack MoE rows on A100 check.
            ..hand_set
        },
        // Ada has no calibration row: Hopper's fitted values, stated as uncertain.
        Generation::Ada => efficiency(Generation::Hopper),
        // Fitted on the dense H100 rows (NeMo 24.07, DGX Cloud recipes,
        // Megatron-Bridge, OLMo-core, NeMo AutoModel); the experts' speed
        // (0.83 of dense GEMMs on many tokens, beyond the measured fall with
        // few) and an MoE layer's fixed cost (1.8 ms per micro-batch, beside
        // the host's launch costs, `HOST`) on its Megatron MoE rows.
        Generation::Hopper => Efficiency {
            gemm: 0.609,
            fp8_gemm: 0.482,
            moe: 0.830,
            moe_layer_overhead: 0.001826,
            ..hand_set
        },
        // Fitted on torchtitan's rows of 500 W H100s; attention sustains
        // 0.64 of its kernel's benchmarked speed at full clocks.
        Generation::HopperPowerCapped => Efficiency {
            gemm: 0.478,
            fp8_gemm: 0.452,
            attention: 0.641,
            ..hand_set
        },
        // Fitted on 9 rows: 6 Megatron-Bridge 25.11 FP8 runs (B200, GB200,
        // GB300) and 3 DGX Cloud BF16 runs (GB200: Llama 3.1 405B on 128
        // and 256 GPUs, Nemotron-4 15B on 16). BF16 GEMM lands at 0.483,
        // SimuMax's measured median over 514 B200 GEMM shapes (0.485,
        // megatron_and_b200_facts.md §3), though not fitted to it.
        // On 14 Megatron-Bridge MoE rows (25.09 to 26.02) the experts run as
        // fast as dense GEMMs on many tokens (1.0, the upper bound, as
        // SimuMax's grouped-GEMM microbenchmarks measure) and an MoE layer
        // costs 0.16 ms per micro-batch whatever its size, beside the host's
        // launch costs (`HOST`, fitted on the same rows).
        Generation::Blackwell => Efficiency {
            gemm: 0.493,
            fp8_gemm: 0.454,
            moe: 0.921,
            moe_layer_overhead: 0.000154,
            kernel_overhead: 5e-6,
            ..hand_set
        },
    }
}

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
    /// GRPO: the colocated vLLM engine generating the step's completions,
    /// and the trained weights copied into it after the step.
    pub generation: f64,
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

fn peak_of(gpu: &Gpu, precision: Precision) -> f64 {
    let bf16 = gpu.bf16_dense_tflops.unwrap_or(0.0);
    let tf = match precision {
        Precision::Fp32 => gpu.fp32_tflops.unwrap_or(bf16 / 16.0),
        Precision::Bf16 | Precision::Bf16Pure => bf16,
        Precision::Fp8 | Precision::Mxfp8 => gpu.fp8_dense_tflops.unwrap_or(bf16),
        Precision::Nvfp4 => gpu
            .fp4_dense_tflops
            .or(gpu.fp8_dense_tflops)
            .unwrap_or(bf16),
    };
    tf.max(1.0) * 1e12
}

/// What every cost of one step reads: the plan, the layout, the hardware,
/// and the work one GPU does per micro-batch.
#[derive(Clone, Copy)]
struct StepShape<'a> {
    arch: &'a Architecture,
    counts: &'a ParameterCounts,
    plan: &'a Plan,
    layout: &'a Layout,
    fabric: &'a Fabric,
    eff: &'a Efficiency,
    /// Tensor-, pipeline-, context- and expert-parallel degrees.
    t: f64,
    p: f64,
    c: f64,
    ep: f64,
    h: f64,
    q: f64,
    kv: f64,
    /// Tokens per GPU per micro-batch.
    tokens: f64,
    /// Of those, the tokens the LM head and the loss run on (`Plan::logit_tokens`).
    head_tokens: f64,
    /// GRPO's colocated generation: seconds per step.
    generation: f64,
    /// Decoder layers of the pipeline stage timed.
    layers: f64,
    /// Whether that stage computes the LM head and the loss (the last one).
    head: bool,
    /// Achievable HBM bandwidth, bytes/s.
    bw: f64,
    /// The stack's flash-attention kernel's share of the 16-bit peak at this
    /// shape (kernels.rs), times the generation's sustained share of it.
    attention_eff: f64,
    /// Dense peak of the plan's GEMM dtype, and of the matmuls low precision
    /// leaves in 16 bits (attention, LM head, router): BF16's, or FP32's in
    /// an FP32 plan, whose every matmul runs on CUDA cores (#23: attention
    /// at the BF16 rate gave FP32 plans MFU 1.6).
    gemm_peak: f64,
    wide_peak: f64,
    /// Bytes per element of those matmuls.
    wide_bytes: f64,
    /// The Linear layers' peak, efficiency and bytes per element.
    lin_peak: f64,
    lin_eff: f64,
    lin_bytes: f64,
    /// Bytes per element the stack's low-precision recipe moves to quantize
    /// a Linear's activations and gradients, and its weights, forward and
    /// backward (`quantize_bytes`).
    quantize: (f64, f64),
    /// Micro-batches per step.
    m: f64,
    /// What activation offloading sends to the host, and the host link's
    /// achievable bandwidth, bytes/s.
    offload: crate::memory::Offload,
    host_bw: f64,
    /// The share of the parameters that trains (`trainable_share`).
    trainable: f64,
}

impl<'a> StepShape<'a> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        arch: &'a Architecture,
        counts: &'a ParameterCounts,
        plan: &'a Plan,
        layout: &'a Layout,
        gpu: &Gpu,
        fabric: &'a Fabric,
        eff: &'a Efficiency,
    ) -> Self {
        let gemm_peak = peak_of(gpu, plan.precision);
        // PyTorch keeps FP32 matmuls in FP32 (`allow_tf32` is off by default,
        // and the exported train.py leaves it so): no tensor cores.
        let (wide_peak, wide_bytes) = match plan.precision {
            Precision::Fp32 => (gemm_peak, 4.0),
            _ => (peak_of(gpu, Precision::Bf16), 2.0),
        };
        let (lin_peak, lin_eff, lin_bytes) = match plan.precision {
            p if p.is_low_precision() && gpu.fp8_tensor_cores => (gemm_peak, eff.fp8_gemm, 1.0),
            _ => (wide_peak, eff.gemm, wide_bytes),
        };
        let c = layout.cp.max(1) as f64;
        StepShape {
            arch,
            counts,
            plan,
            layout,
            fabric,
            eff,
            t: layout.tp.max(1) as f64,
            p: layout.pp.max(1) as f64,
            c,
            ep: layout.ep.max(1) as f64,
            h: arch.hidden as f64,
            q: arch.q_width() as f64,
            kv: arch.kv_width() as f64,
            tokens: plan.rows_per_micro_batch() as f64 * plan.seq as f64 / c,
            head_tokens: plan.logit_tokens() as f64 / c,
            generation: rollout_seconds(arch, counts, plan, layout, gpu, (fabric, eff)),
            // The last stage also runs the multi-token-prediction layers.
            layers: (layout.stages.last + plan.mtp) as f64,
            head: true,
            bw: gpu.mem_bw_tbs * 1e12 * eff.memory,
            attention_eff: attention_efficiency(arch, plan, layout, gpu) * eff.attention,
            gemm_peak,
            wide_peak,
            wide_bytes,
            lin_peak,
            lin_eff,
            lin_bytes,
            quantize: quantize_bytes(plan, gpu),
            m: plan.grad_accum.max(1) as f64,
            offload: crate::memory::offload(arch, counts, plan, layout),
            host_bw: gpu.host_link_gbs.unwrap_or(PCIE_GEN5_GBS) * 1e9 * HOST_LINK_EFFICIENCY,
            trainable: trainable_share(arch, counts, plan),
        }
    }

    /// Forward time of one GEMM `[m x k] @ [k x n]`: the roofline
    /// `max(flops / (peak * e), bytes / bandwidth)` plus the per-kernel cost
    /// `t0` that makes small GEMMs slow (SPEC §4).
    fn gemm(&self, m: f64, n: f64, k: f64, peak: f64, e: f64, bytes: f64) -> f64 {
        // A fraction of a row is real work on average (an expert that gets
        // 0.25 tokens per micro-batch still reads its weights): only an empty
        // GEMM is free (#23: sub-token experts cost nothing, HFU 2.4).
        if m <= 0.0 || n <= 0.0 || k <= 0.0 {
            return 0.0;
        }
        let compute = 2.0 * m * n * k / (peak * e);
        let memory = (m * k + k * n + m * n) * bytes / self.bw;
        compute.max(memory) + self.eff.kernel_overhead
    }

    /// A Linear layer's GEMM in the plan's precision, with the share of its
    /// operands' quantization the forward carries (a third: the callers
    /// count forward and backward as three forward GEMMs).
    fn lin(&self, m: f64, n: f64, k: f64) -> f64 {
        let (act, weight) = self.quantize;
        let cast = (act * m * (k + n) + weight * k * n) / self.bw / 3.0;
        self.gemm(m, n, k, self.lin_peak, self.lin_eff, self.lin_bytes) + cast
    }

    /// One MLP (gated: gate + up, then down) of width `f` over `m` tokens.
    fn mlp(&self, f: f64, m: f64) -> f64 {
        let up = if self.arch.mlp.is_gated() { 2.0 * f } else { f };
        self.lin(m, up / self.t, self.h) + self.lin(m, self.h, f / self.t)
    }

    /// Fraction of the layers recomputed.
    fn recomputed(&self) -> f64 {
        self.plan.checkpointing.recomputed_fraction()
    }
}

// ---- compute, per layer and micro-batch, forward -------------------------------

/// The layer's GEMMs forward: q/k/v and output projections, then the MLP or
/// the experts each token is routed to (all EP ranks' tokens reach the local
/// experts), shared experts and the router.
fn layer_gemms(s: &StepShape) -> f64 {
    let (h, t, tokens) = (s.h, s.t, s.tokens);
    let mut gemm = match s.arch.mla {
        // q, k, v fused, then o.
        None => s.lin(tokens, (s.q + 2.0 * s.kv) / t, h) + s.lin(tokens, h, s.q / t),
        // MLA: the down projections whole on every TP rank, the up
        // projections and o split (Megatron `MLASelfAttention`).
        Some(_) => s
            .arch
            .attention_linears()
            .iter()
            .map(|&(i, o, split)| {
                let o = if split { o as f64 / t } else { o as f64 };
                s.lin(tokens, o, i as f64)
            })
            .sum(),
    };
    match &s.arch.moe {
        None => gemm += s.mlp(s.arch.ffn as f64, tokens),
        Some(m) => {
            // Dense layers among the MoE ones, as the mean layer.
            let sparse = s.arch.moe_layer_share();
            let dense = (1.0 - sparse) * s.mlp(s.arch.ffn as f64, tokens);
            gemm += dense + sparse * routed_gemms(s, m);
        }
    }
    gemm
}

/// The mean decoder layer's GEMMs forward: an NVFP4 plan's BF16 layers
/// (`plan::NVFP4_BF16_LAYER_SHARE`) at the 16-bit rate, the rest in FP4.
fn mean_layer_gemms(s: &StepShape) -> f64 {
    let low = layer_gemms(s);
    if s.plan.precision != Precision::Nvfp4 || s.lin_peak == s.wide_peak {
        return low;
    }
    let wide = StepShape {
        lin_peak: s.wide_peak,
        lin_eff: s.eff.gemm,
        lin_bytes: s.wide_bytes,
        quantize: (0.0, 0.0),
        ..*s
    };
    let share = crate::plan::NVFP4_BF16_LAYER_SHARE;
    (1.0 - share) * low + share * layer_gemms(&wide)
}

/// One MoE layer's experts, shared experts and router, forward.
fn routed_gemms(s: &StepShape, m: &crate::architecture::Moe) -> f64 {
    let (h, tokens) = (s.h, s.tokens);
    let shared = m.shared as f64 * s.mlp(m.expert_ffn as f64, tokens);
    let router = s.gemm(
        tokens,
        m.experts as f64,
        h,
        s.wide_peak,
        s.eff.gemm,
        s.wide_bytes,
    );
    // The fixed cost, forward and backward, in forward-GEMM units (x 3).
    grouped_experts(s, m) + shared + router + moe_host_cost(s, m) / 3.0
}

/// Seconds an MoE layer costs per micro-batch beyond its kernels' GPU time,
/// forward and backward, whatever the token count: the dropless
/// dispatcher's host synchronisation on the token counts stops the CPU
/// from running ahead, so the launches after it show (Megatron-LM's MoE
/// guide, "CPU Overhead Bottleneck"). A fixed part, one per expert on the
/// GPU (TransformerEngine's grouped GEMMs, casts and their gradients are
/// launched expert by expert), the router and its preprocessing unless they
/// run as CUDA graphs (`moe_graphs`), and the all-to-all dispatcher's own
/// permute, sort and split launches, which DeepEP and HybridEP fuse
/// (`moe_flex`). Hugging Face's MoE block has none of these: its loop over
/// the experts runs in the fitted speed `moe`.
fn moe_host_cost(s: &StepShape, m: &crate::architecture::Moe) -> f64 {
    if s.plan.stack != Stack::Megatron {
        return s.eff.moe_layer_overhead;
    }
    let local = (m.experts as f64 / s.ep).max(1.0);
    let router = if s.plan.moe_graphs {
        0.0
    } else {
        s.eff.host.moe_router_launch
    };
    let dispatcher = if s.plan.moe_flex {
        0.0
    } else {
        s.eff.host.moe_alltoall_launch
    };
    s.eff.moe_layer_overhead + local * s.eff.host.moe_expert_launch + router + dispatcher
}

/// Tokens per expert at which a grouped GEMM runs at half its efficiency on
/// many tokens: `e(m) = e_inf * m / (m + m0)`. Measured, not fitted to any
/// training run: SimuMax's 108 B200 grouped-GEMM microbenchmarks
/// (data/b200_grouped_gemm.csv; forward, input-gradient and weight-gradient
/// GEMMs of 20-256 experts at 128-9,832 tokens each), time-weighted per
/// shape, fit `m0 = 330` with `e_inf = 0.50` of the BF16 peak, as fast as
/// SimuMax's dense GEMMs (0.488): so many tokens per expert run at dense
/// speed, and 1,024 at 0.76 of it. Measured in BF16 on B200; taken for FP8
/// and the other generations (not measured). A test refits it from the file.
pub const GROUPED_GEMM_HALF_TOKENS: f64 = 330.0;

/// The local experts as two grouped GEMMs (up/gate, then down) over the
/// tokens routed to them from the whole EP group (`tokens x ep x k /
/// experts` per expert), at `moe` of the dense efficiency, times the stated
/// load imbalance (the busiest rank sets the pace); memory-bound where the
/// experts' weights, read once, take longer. Megatron's grouped GEMMs slow
/// down with fewer tokens per expert (`GROUPED_GEMM_HALF_TOKENS`); Hugging
/// Face's MoE blocks loop over the experts with one dense GEMM each.
fn grouped_experts(s: &StepShape, m: &crate::architecture::Moe) -> f64 {
    let f = m.expert_ffn as f64 / s.t;
    let up = if s.arch.mlp.is_gated() { 2.0 * f } else { f };
    let local = (m.experts as f64 / s.ep).max(1.0);
    let per_expert = s.tokens * s.ep * m.active as f64 / m.experts as f64;
    let routed = local * per_expert * s.plan.moe_imbalance.max(1.0);
    let e = s.lin_eff * s.eff.moe * grouped_fill(s, per_expert);
    let compute = 2.0 * routed * (up + f) * s.h / (s.lin_peak * e);
    let bytes = (local * (up + f) * s.h + routed * (2.0 * s.h + up + f)) * s.lin_bytes;
    compute.max(bytes / s.bw) + 2.0 * s.eff.kernel_overhead
}

/// The share of its many-token efficiency a grouped GEMM reaches with
/// `tokens` per expert (1 for Hugging Face's per-expert dense GEMMs;
/// torchtitan's MoE runs grouped GEMMs, `torch._grouped_mm`, as Megatron's).
fn grouped_fill(s: &StepShape, tokens: f64) -> f64 {
    match s.plan.stack {
        Stack::Megatron | Stack::Torchtitan => tokens / (tokens + GROUPED_GEMM_HALF_TOKENS),
        Stack::Hf => 1.0,
    }
}

/// Bytes per element a stack's low-precision recipe moves, forward and
/// backward, to quantize a Linear's activations and output gradients, and
/// its weights, at HBM speed beside the GEMMs. TransformerEngine (Megatron,
/// the bundle's FP8) fuses its casts into the norms and GEMM epilogues:
/// none here, its cost is in the fitted FP8 efficiency. torchao's float8
/// (torchtitan) scales a whole tensor at once: an amax pass (read 2 B) and
/// a cast (read 2 B, write 1 B) per operand, and a transposed FP8 copy of
/// the input and the gradient for the weight gradient (write 1 B): 6 B per
/// activation or gradient element, 5 B per weight element
/// (`torchao/float8/float8_linear.py`: `hp_tensor_to_float8_dynamic` on
/// input, weight and grad_output). MXFP8 and NVFP4 quantize row- and
/// column-wise blocks, NVFP4 with a random Hadamard transform for the
/// weight gradient: TransformerEngine's layer profile on B300 (h 4096, ffn
/// 16384, 15,872 tokens; `docs/examples/gemm_profiling/gemm_profiling.rst`
/// at d0067d0) runs MXFP8 1.83x BF16 pre-quantized and 1.42x with its
/// quantization, NVFP4 3.48x and 1.98x: 2.0 and 2.7 ms of quantization over
/// 1.24 G elements at 6 TB/s, 9.6 and 13.2 B per element.
fn quantize_bytes(plan: &Plan, gpu: &Gpu) -> (f64, f64) {
    let low = plan.precision.is_low_precision() && gpu.fp8_tensor_cores;
    let [fp8, mxfp8, nvfp4] = TORCHAO_QUANTIZE_BYTES;
    match (plan.stack, plan.precision) {
        (Stack::Torchtitan, Precision::Fp8) if low => (fp8, fp8 - 1.0),
        (Stack::Torchtitan, Precision::Mxfp8) if low => (mxfp8, mxfp8),
        (Stack::Torchtitan, Precision::Nvfp4) if low => (nvfp4, nvfp4),
        _ => (0.0, 0.0),
    }
}

/// HBM bytes per element torchao's float8, MXFP8 and NVFP4 move to quantize
/// activations and gradients (`quantize_bytes`; float8's weights one less).
pub const TORCHAO_QUANTIZE_BYTES: [f64; 3] = [6.0, 9.6, 13.2];

/// The stack's flash-attention kernel's efficiency at the plan's shape: its
/// head size, and the sequence each kernel call sees (a context-parallel
/// ring computes `seq / cp` blocks; a sliding window bounds the keys).
fn attention_efficiency(arch: &Architecture, plan: &Plan, layout: &Layout, gpu: &Gpu) -> f64 {
    use crate::kernels::{attention_efficiency, AttentionKernel};
    let g = generation(gpu);
    let seq = plan.seq as f64 / layout.cp.max(1) as f64;
    let head_dim = arch.attention_width() / arch.heads.max(1);
    let kernel = match plan.attention {
        crate::plan::Attention::Fa2 => AttentionKernel::Fa2,
        crate::plan::Attention::Cudnn => AttentionKernel::Cudnn,
        _ => AttentionKernel::of(plan.stack, g),
    };
    attention_efficiency(kernel, g, head_dim, seq)
}

/// Attention forward. Flash: `4*s*a*d` FLOPs per query token, half skipped
/// by the causal mask (Dao 2023), at the stack's kernel's benchmarked
/// efficiency for the shape (kernels.rs; of the FP32 peak in an FP32 plan:
/// SDPA's memory-efficient kernel).
/// Eager: two batched GEMMs plus softmax over the `s x s` scores in HBM.
fn attention_forward(s: &StepShape) -> f64 {
    let t0 = s.eff.kernel_overhead;
    let width = s.arch.attention_width() as f64;
    let flops = 4.0 * s.tokens * s.arch.mean_keys_per_query(s.plan.seq) * width / s.t;
    match s.plan.attention {
        Attention::Flash | Attention::Fa2 | Attention::Cudnn => {
            flops / (s.wide_peak * s.attention_eff) + t0
        }
        Attention::Eager => {
            flops * 2.0 / (s.wide_peak * s.eff.gemm)
                + s.tokens * s.plan.seq as f64 * s.arch.heads as f64 / s.t * 2.0 * 6.0 / s.bw
                + 4.0 * t0
        }
    }
}

/// Elementwise traffic forward (norms, RoPE, residual adds, activation, an
/// MoE layer's token permutation):
/// fused kernels (Megatron/TE, or torch.compile's Inductor fusing the norm,
/// RoPE, SwiGLU and residual chains) move ~`20h + 4(q+kv) + 6f` bytes per
/// token; eager PyTorch (HF's unfused fp32 norms and separate casts, a
/// torchtitan job without compile) ~2.5x that, in more kernels.
/// Without sequence parallelism the norm/residual part runs whole on every TP rank.
fn elementwise_forward(s: &StepShape) -> f64 {
    let f_eff = s.arch.moe.as_ref().map_or(s.arch.ffn as f64, |m| {
        let sparse = s.arch.moe_layer_share();
        sparse * m.expert_ffn as f64 * (m.active + m.shared) as f64
            + (1.0 - sparse) * s.arch.ffn as f64
    });
    let (factor, kernels) = match s.plan.stack {
        Stack::Megatron => (1.0, 8.0),
        Stack::Torchtitan if s.plan.compile => (1.0, 8.0),
        Stack::Hf | Stack::Torchtitan => (2.5, 30.0),
    };
    let sp_div = if s.plan.sp { s.t } else { 1.0 };
    factor * s.tokens * (20.0 * s.h / sp_div + (4.0 * (s.q + s.kv) + 6.0 * f_eff) / s.t) / s.bw
        + s.tokens * permute_bytes_per_token(s) / s.bw
        + kernels * s.eff.kernel_overhead
}

/// An MoE layer's token permutation forward, bytes per token at its
/// memory-bound rate: `permute` copies each token's hidden state once per
/// routed expert (read `h`, write `k*h`, 16-bit) and `unpermute` sums them
/// back (read `k*h`, write `h`): `4 * (1 + k) * h` (Megatron-LM
/// `moe_utils.permute` / `unpermute`, an `index_select` and a
/// `scatter_add`; Hugging Face's expert loop indexes and `index_add_`s the
/// same rows). Under TP each rank permutes its `1/t` of the tokens.
fn permute_bytes_per_token(s: &StepShape) -> f64 {
    s.arch.moe.as_ref().map_or(0.0, |m| {
        s.arch.moe_layer_share() * 4.0 * (1.0 + m.active as f64) * s.h / s.t
    })
}

/// One decoder layer's forward pieces. They depend on the micro-batch, the
/// layout and the hardware, never on checkpointing or the loss: the search
/// times one forward per micro-batch for all of those (`throughput_reusing`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerForward {
    gemm: f64,
    attention: f64,
    elementwise: f64,
}

impl LayerForward {
    /// Equal to the bit (a NaN equals itself).
    fn same_bits(&self, other: &LayerForward) -> bool {
        let bits = |f: &LayerForward| {
            [
                f.gemm.to_bits(),
                f.attention.to_bits(),
                f.elementwise.to_bits(),
            ]
        };
        bits(self) == bits(other)
    }

    fn of(s: &StepShape) -> LayerForward {
        LayerForward {
            gemm: mean_layer_gemms(s),
            attention: attention_forward(s),
            elementwise: elementwise_forward(s),
        }
    }
}

/// Flash attention's backward does 2.5x its forward's work (Dao 2023); an
/// eager one, like GEMMs, 2x.
fn attention_train(s: &StepShape, fwd: &LayerForward) -> f64 {
    fwd.attention
        * if s.plan.attention.is_fused() {
            3.5
        } else {
            3.0
        }
}

/// Recomputation: a second forward of what checkpointing dropped. Op-level
/// SAC recomputes the elementwise ops and the GEMMs its policy drops
/// (`Plan::op_level_recomputed_gemm_share`); selective
/// recomputes the attention core where it does (eager: the scores;
/// `recomputes_core_attention`) and, with `mla_up_proj` among Megatron's
/// modules, MLA's up-projection GEMMs (the other modules recompute
/// elementwise work, not counted).
fn recompute_per_layer(s: &StepShape, fwd: &LayerForward) -> f64 {
    match s.plan.checkpointing {
        Checkpointing::Op => fwd.elementwise + s.plan.op_level_recomputed_gemm_share() * fwd.gemm,
        Checkpointing::Selective => {
            let core = if s.plan.attention == Attention::Eager
                && crate::memory::recomputes_core_attention(s.plan)
            {
                fwd.attention
            } else {
                0.0
            };
            core + mla_up_projections(s)
        }
        _ => s.recomputed() * (fwd.gemm + fwd.attention + fwd.elementwise),
    }
}

/// MLA's up projections forward, when Megatron recomputes them.
fn mla_up_projections(s: &StepShape) -> f64 {
    let recomputed = s.plan.recompute_modules.mla_up_proj && s.plan.stack == Stack::Megatron;
    match &s.arch.mla {
        Some(m) if recomputed => {
            let a = s.arch.heads as f64;
            let q_up = if m.q_lora_rank > 0 {
                s.lin(
                    s.tokens,
                    a * m.qk_head_dim() as f64 / s.t,
                    m.q_lora_rank as f64,
                )
            } else {
                0.0
            };
            let kv_out = a * (m.qk_nope_dim + m.v_head_dim) as f64 / s.t;
            q_up + s.lin(s.tokens, kv_out, m.kv_lora_rank as f64)
        }
        _ => 0.0,
    }
}

/// LM head, forward and backward (BF16, or FP32 in an FP32 plan), on the
/// last stage: once for the model and once per MTP layer, which also
/// projects `[h; h]` to `h` first.
fn lm_head(s: &StepShape) -> f64 {
    if !s.head {
        return 0.0;
    }
    let mtp = s.plan.mtp as f64;
    mtp * 3.0 * s.lin(s.head_tokens, s.h / s.t, 2.0 * s.h)
        + (1.0 + mtp)
            * 3.0
            * s.gemm(
                s.head_tokens,
                s.arch.vocab as f64 / s.t,
                s.h,
                s.wide_peak,
                s.eff.gemm,
                s.wide_bytes,
            )
}

/// The loss's elementwise traffic: plain upcasts the logits and runs
/// log-softmax forward and backward in fp32; a fused loss streams bf16 chunks.
fn loss_elementwise(s: &StepShape) -> f64 {
    if !s.head {
        return 0.0;
    }
    let elements = s.head_tokens * s.arch.vocab as f64 / s.t * (1.0 + s.plan.mtp as f64);
    match s.plan.loss {
        Loss::Plain => elements * 4.0 * 6.0 / s.bw,
        Loss::Fused => elements * 2.0 * 3.0 / s.bw,
    }
}

// ---- communication per micro-batch ------------------------------------------------

/// Bytes of one layer's bf16 activations of a micro-batch.
fn activation_bytes(s: &StepShape) -> f64 {
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
///   `async_op=True`; Megatron's async TP all-reduce), so those hide up to
///   the backward GEMMs' time; the forward's and the output-gradient
///   gathers are exposed.
/// - With TP overlap (`--tp-comm-overlap`, TE userbuffers) every exchange is
///   pipelined with its GEMM in `t` chunks: one chunk in `t` shows, and
///   whatever exceeds the layer's GEMM time.
/// - torchtitan's async TP (`enable_async_tensor_parallel`, `tp_overlap`
///   here) decomposes the gathers and reductions into chunks pipelined
///   with their matmuls (symmetric memory), as TE's userbuffers do.
/// - PyTorch DTensor TP otherwise (Hugging Face, torchtitan): all exposed.
fn tensor_parallel(s: &StepShape, gemm_per_layer: f64) -> f64 {
    if s.layout.tp <= 1 {
        return 0.0;
    }
    let link = s.fabric.link(s.layout.tp, 1);
    let one = |c: Collective| link.seconds(c, s.t, activation_bytes(s));
    let r = s.recomputed();
    let (exposed, async_backward) = if s.plan.sp {
        let (ag, rs) = (one(Collective::AllGather), one(Collective::ReduceScatter));
        (
            (4.0 + 2.0 * r) * ag + (2.0 + 2.0 * r) * rs,
            2.0 * ag + 2.0 * rs,
        )
    } else {
        let ar = one(Collective::AllReduce);
        ((2.0 + 2.0 * r) * ar, 2.0 * ar)
    };
    let all = exposed + async_backward;
    let per_layer = match s.plan.stack {
        Stack::Megatron | Stack::Torchtitan if s.plan.tp_overlap => {
            (all / s.t).max(all - gemm_per_layer)
        }
        // The backward GEMMs are two thirds of the layer's.
        Stack::Megatron => exposed + (async_backward - gemm_per_layer * 2.0 / 3.0).max(0.0),
        Stack::Hf | Stack::Torchtitan => all,
    };
    s.layers * per_layer
}

/// Context parallelism's ring: K and V chunks go round (`c-1` steps), dK and
/// dV come back, each step a send at the link's measured speed plus its
/// per-hop latency, overlapped with attention; only the excess shows (Liu et
/// al. 2023, ring attention; Megatron's `attn_mask_type` ring).
fn context_parallel(s: &StepShape, attention_train: f64) -> f64 {
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
    if s.plan.stack == Stack::Megatron {
        return 0.0;
    }
    let c = s.c;
    let out = s.tokens * s.q / s.t;
    let kv = 2.0 * s.tokens * s.kv / s.t;
    let forward = out * (12.0 + 32.5 * (c - 1.0)) + kv * 4.0 * (c - 1.0);
    let backward = out * (10.0 + 11.5 * c) + kv * (10.0 + 23.5 * c);
    let again = match s.plan.checkpointing {
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
fn expert_parallel_exposed(s: &StepShape, compute: f64) -> f64 {
    let comm = expert_parallel(s);
    if s.plan.ep_overlap && s.plan.stack == Stack::Megatron {
        (comm - compute).max(0.0)
    } else {
        comm
    }
}

// ---- the step --------------------------------------------------------------------

/// The 1F1B bubble `(p-1)/(m*vp)` of the step's compute (Narayanan et al. 2021).
fn pipeline_bubble(s: &StepShape, per_micro_batch: f64) -> f64 {
    if s.layout.pp <= 1 {
        return 0.0;
    }
    let vp = s.plan.vp.max(1) as f64;
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
    let chunks = s.plan.vp.max(1) as f64;
    s.m * 2.0 * chunks * send * (1.0 - overlap(s))
}

/// The hidden share of overlappable traffic: the calibrated one, or none
/// when the user says the run does not overlap (`overlap=0`).
fn overlap(s: &StepShape) -> f64 {
    if s.plan.overlap {
        s.eff.overlap
    } else {
        0.0
    }
}

/// Parameters of one pipeline stage on this GPU: the dense ones (split by
/// TP and PP) and the routed experts' (also by EP, each GPU holding
/// `experts/ep` of them, Megatron-Core expert parallelism).
struct StageParameters {
    dense: f64,
    experts: f64,
}

fn stage_parameters(s: &StepShape) -> StageParameters {
    let experts = s.arch.routed_params_per_layer(s.counts) * s.arch.layers as f64;
    let dense = s.counts.total as f64 - experts;
    StageParameters {
        dense: dense / (s.t * s.p),
        experts: experts / (s.p * s.layout.expert_split()),
    }
}

/// The share of the parameters that trains: under LoRA, the adapters on the
/// targeted Linears (`Architecture::lora_params`) over the model's weights.
fn trainable_share(arch: &Architecture, counts: &ParameterCounts, plan: &Plan) -> f64 {
    match plan.train {
        Training::Full => 1.0,
        _ => plan.lora_params(arch) / counts.total as f64,
    }
}

/// The data-parallel groups a stage's parameters reduce over: the dense
/// ones over DP x CP ranks `tp` apart; the routed experts over the
/// expert-data-parallel group, `ep` times smaller and `ep` times further
/// apart (Megatron's `expert_data_parallel_group`, world / (ETP x EP x PP),
/// `Layout::expert_split`, as memory/mod.rs shards their states). With EP 8 over 64
/// data-parallel ranks of 8-GPU nodes, every rank of that group sits in
/// another node, so the experts' gradients cross the network whole.
struct ReduceGroup {
    /// Parameters on this GPU.
    params: f64,
    /// Ranks holding replicas or shards of them.
    ranks: u64,
    /// Ranks of the ZeRO shard group among them.
    shard: u64,
    /// Distance between neighbouring ranks.
    stride: u64,
}

fn reduce_groups(s: &StepShape) -> [ReduceGroup; 2] {
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
fn parameter_bytes(plan: &Plan) -> f64 {
    if plan.fp8_params && plan.precision.is_low_precision() {
        1.0
    } else {
        2.0
    }
}

/// Bytes per gradient element the data-parallel reduction moves.
fn gradient_bytes(plan: &Plan) -> f64 {
    match (plan.stack, plan.precision, plan.zero) {
        (_, Precision::Fp32, _) => 4.0,
        (Stack::Hf, Precision::Bf16Pure, _) => 2.0,
        (Stack::Hf, _, 0) => 4.0,
        // Megatron reduces in the gradient buffer's dtype: fp32 unless
        // `--grad-reduce-in-bf16` (memory/states.rs, state_bytes).
        (Stack::Megatron, _, _) if !plan.grad_bf16 => 4.0,
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
    let param = parameter_bytes(s.plan);
    let gathers = s.m * 2.0 * g.params * param;
    let grads = trainable * gradient_bytes(s.plan);
    match s.plan.zero {
        0 => run(Collective::AllReduce, n, stride, grads),
        1 | 2 => {
            run(Collective::ReduceScatter, n, stride, grads)
                + run(Collective::AllGather, n, stride, trainable * param)
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
fn dp_window(s: &StepShape, per_micro_batch: f64) -> f64 {
    if s.plan.zero >= 3 || s.layout.pp > 1 {
        s.m * per_micro_batch
    } else {
        per_micro_batch
    }
}

/// The part of the data-parallel traffic that compute does not hide.
fn data_parallel_exposed(s: &StepShape, compute: f64) -> f64 {
    let comm = data_parallel(s);
    if !s.plan.overlap {
        return comm;
    }
    (comm * (1.0 - s.eff.overlap)).max(comm - compute * DP_HIDDEN_AT_MOST)
}

/// The most of the compute's length that data-parallel traffic can hide
/// behind (the first and last layers' collectives have nothing to overlap).
pub const DP_HIDDEN_AT_MOST: f64 = 0.9;

/// Optimizer step: read params, grads and states, write params and states
/// (AdamW fp32: 28 B per parameter), at HBM bandwidth, on this GPU's shard.
fn optimizer_step(s: &StepShape) -> f64 {
    // The distributed optimizer's shard spans the reduce group's ZeRO shard
    // (memory/states.rs).
    let shard = |g: &ReduceGroup| {
        if s.plan.zero >= 1 {
            g.shard as f64
        } else {
            1.0
        }
    };
    let trainable = reduce_groups(s)
        .iter()
        .map(|g| g.params * s.trainable / shard(g))
        .sum::<f64>();
    let bytes_per_param = match s.plan.optimizer {
        Optimizer::Adamw | Optimizer::AdamwForeach => 28.0,
        Optimizer::Adamw8bit => 16.0,
        Optimizer::Adafactor => 14.0,
        Optimizer::Sgd => 20.0,
    };
    // Moments read and written in bf16 (Megatron's precision-aware optimizer).
    let moments_saved = if s.plan.bf16_moments && s.plan.stack == Stack::Megatron {
        8.0
    } else {
        0.0
    };
    let bytes_per_param = bytes_per_param - moments_saved;
    trainable * bytes_per_param / s.bw + 50.0 * s.eff.kernel_overhead
}

/// Where one step's time goes: compute and communication per micro-batch,
/// times the micro-batches, plus bubble, exposed data-parallel traffic and
/// the optimizer.
fn step_time(s: &StepShape, fwd: LayerForward) -> StepTime {
    // Forward + backward: 2x forward for GEMMs and elementwise work.
    let attn_train = attention_train(s, &fwd);
    let mb_gemm = s.layers * (3.0 * fwd.gemm) + lm_head(s);
    let mb_attn = s.layers * attn_train;
    let mb_elem = s.layers * (3.0 * fwd.elementwise) + loss_elementwise(s);
    let mb_recompute = s.layers * recompute_per_layer(s, &fwd);
    let tp_comm = tensor_parallel(s, 3.0 * fwd.gemm);
    let cp_comm = context_parallel(s, attn_train);
    let ep_comm = expert_parallel_exposed(s, mb_gemm + mb_attn + mb_elem);
    let per_mb = mb_gemm + mb_attn + mb_elem + mb_recompute + tp_comm + cp_comm + ep_comm;
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
        reference: m * s.plan.scoring_forwards() as f64 * forward_without_gradients(s, &fwd),
        generation: s.generation,
    }
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
    s.layers * (fwd.gemm + fwd.attention + fwd.elementwise)
        + lm_head(s) / 3.0
        + tensor_parallel(s, 3.0 * fwd.gemm) / 2.0
}

/// GRPO's generation per step (`rollout`), and the copy of the trained
/// weights into the engine after it: under FSDP2 `full_tensor()` gathers
/// each parameter's shards (fp32 under the mixed-precision policy, BF16
/// for a LoRA base, which TRL gathers whole to merge the adapters), a
/// vLLM server receives each tensor from rank 0 (`server_sync_seconds`),
/// then vLLM's `load_weights` writes its BF16 copy.
fn rollout_seconds(
    arch: &Architecture,
    counts: &ParameterCounts,
    plan: &Plan,
    layout: &Layout,
    gpu: &Gpu,
    (fabric, eff): (&Fabric, &Efficiency),
) -> f64 {
    let Some(e) = crate::rollout::VllmEngine::of(arch, counts, plan, gpu, (fabric, layout)) else {
        return 0.0;
    };
    let generate =
        crate::rollout::generation_seconds(&e, arch, counts, plan, gpu, (eff.gemm, eff.memory));
    let bandwidth = gpu.mem_bw_tbs * 1e12 * eff.memory;
    let load = 2.0 * e.weight_bytes / bandwidth;
    let gather = if crate::memory::runs_fsdp2(plan, layout) {
        let bytes = if plan.train == Training::Full {
            4.0
        } else {
            2.0
        };
        let n = layout.shard.max(1);
        fabric.seconds(Collective::AllGather, n, 1, counts.total as f64 * bytes)
    } else {
        0.0
    };
    // Sent as trained: fp32 master weights, or a LoRA base merged in BF16.
    let sent = counts.total as f64
        * if plan.train == Training::Full {
            4.0
        } else {
            2.0
        };
    let send = crate::rollout::server_sync_seconds(&e, arch, fabric, sent);
    generate + load + gather + send
}

/// PCIe Gen5 x16, GB/s per direction: a custom GPU's host link.
const PCIE_GEN5_GBS: f64 = 64.0;

/// Host-to-device copies reach 0.87 of the link's line rate: NVIDIA's
/// NVbandwidth blog measures 55.63 GB/s `host_to_device_memcpy_ce` on PCIe
/// Gen5 x16 (64 GB/s). Taken for Gen4 and NVLink-C2C too (not measured).
const HOST_LINK_EFFICIENCY: f64 = 55.63 / 64.0;

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
    let forward = fwd.gemm + fwd.attention + fwd.elementwise;
    let backward = 2.0 * (fwd.gemm + fwd.elementwise)
        + (attention_train(s, fwd) - fwd.attention)
        + recompute_per_layer(s, fwd);
    o.layers * ((copy - forward).max(0.0) + (copy - backward).max(0.0))
}

/// Step time and rates for a resolved plan.
pub fn throughput(
    arch: &Architecture,
    counts: &ParameterCounts,
    plan: &Plan,
    layout: &Layout,
    gpu: &Gpu,
    fabric: &Fabric,
    eff: &Efficiency,
) -> Throughput {
    throughput_reusing(arch, counts, plan, layout, gpu, fabric, eff, &mut None)
}

/// `throughput`, with the layer's forward taken from `forward` when it holds
/// one, else computed and left there. Pass the same `forward` only for plans
/// that differ in checkpointing and loss alone (debug builds check it).
#[allow(clippy::too_many_arguments)]
pub fn throughput_reusing(
    arch: &Architecture,
    counts: &ParameterCounts,
    plan: &Plan,
    layout: &Layout,
    gpu: &Gpu,
    fabric: &Fabric,
    eff: &Efficiency,
    forward: &mut Option<LayerForward>,
) -> Throughput {
    let shape = StepShape::new(arch, counts, plan, layout, gpu, fabric, eff);
    let fwd = *forward.get_or_insert_with(|| LayerForward::of(&shape));
    debug_assert!(
        fwd.same_bits(&LayerForward::of(&shape)),
        "a forward reused across plans that differ in more than checkpointing and loss"
    );
    // The slowest pipeline stage sets the pace: the last (its layers, the LM
    // head and the loss) or the busiest other one (an uneven split's middle).
    let mut step = step_time(&shape, fwd);
    let other = layout.stages.first.max(layout.stages.middle);
    if layout.pp > 1 && other > layout.stages.last + plan.mtp {
        let busiest = StepShape {
            layers: other as f64,
            head: false,
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
    let rows = plan.rows_per_micro_batch();
    let tokens = rows as f64 * plan.seq as f64 * plan.grad_accum as f64 * layout.dp as f64;
    let tokens_per_step = rows
        .saturating_mul(plan.seq)
        .saturating_mul(plan.grad_accum)
        .saturating_mul(layout.dp);
    let tokens_per_second = tokens / step_seconds;
    let tokens_per_second_per_gpu = tokens_per_second / layout.gpus.max(1) as f64;
    // Recomputation repeats decoder layers, never the LM head; GRPO runs
    // the head on the completion's positions only (`Plan::logit_tokens`).
    let head_flops = 6.0 * (arch.vocab * arch.hidden) as f64;
    let head_share = shape.head_tokens / shape.tokens.max(1.0);
    let model_flops =
        model_flops_per_token(arch, counts, plan.seq) - head_flops * (1.0 - head_share.min(1.0));
    let hardware_flops = model_flops
        + (model_flops - head_flops * head_share).max(0.0) * recompute_flops_share(plan);
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
        samples_per_second: tokens_per_second / plan.tokens_per_sample() as f64,
        model_flops_per_token: model_flops,
        hardware_flops_per_token: hardware_flops,
        peak_flops,
        mfu: model_flops * tokens_per_second_per_gpu / peak_flops,
        hfu: hardware_flops * tokens_per_second_per_gpu / peak_flops,
        generation: generation(gpu),
    }
}

/// Recompute repeats a forward pass (1/3 of the training FLOPs) for the
/// dropped layers; HFU counts it, MFU does not (Korthikanti et al. 2022).
/// The share is of the decoder layers' FLOPs (the LM head is not recomputed).
fn recompute_flops_share(plan: &Plan) -> f64 {
    match plan.checkpointing {
        Checkpointing::Op => plan.op_level_recomputed_gemm_share() / 3.0,
        Checkpointing::Selective => 0.0,
        _ => plan.checkpointing.recomputed_fraction() / 3.0,
    }
}
