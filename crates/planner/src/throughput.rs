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
use crate::hardware::{Gpu, Instance};
use crate::memory::Layout;
use crate::plan::{
    Attention, Checkpointing, Implementation, Loss, Optimizer, Plan, Precision, Training,
};
use serde::Serialize;

/// GPU generations, each with its own fitted efficiencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Generation {
    Ampere,
    Ada,
    Hopper,
    /// H100 parts capped at 500 W (torchtitan's benchmarks): lower sustained clocks.
    HopperPowerCapped,
    Blackwell,
}

pub fn generation(gpu: &Gpu) -> Generation {
    let id = gpu.id.as_str();
    if id.starts_with("Custom") {
        // A user-entered GPU gets the fitted Hopper values.
        Generation::Hopper
    } else if id.contains("500W") {
        Generation::HopperPowerCapped
    } else if id.starts_with('H') {
        Generation::Hopper
    } else if id.starts_with("A1") {
        Generation::Ampere
    } else if id.starts_with('L') {
        Generation::Ada
    } else {
        Generation::Blackwell
    }
}

/// Fitted efficiency parameters of one GPU generation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Efficiency {
    /// Achievable fraction of the dense BF16 peak on large GEMMs.
    pub gemm: f64,
    /// Achievable fraction of the FP8 (and FP4) dense peak on large GEMMs.
    pub fp8_gemm: f64,
    /// Fixed cost per kernel, seconds.
    pub kernel_overhead: f64,
    /// Flash-attention throughput as a fraction of the BF16 peak.
    pub attention: f64,
    /// Achievable fraction of HBM bandwidth for elementwise kernels.
    pub memory: f64,
    /// Fraction of data-parallel / FSDP communication hidden behind compute.
    pub overlap: f64,
}

/// The calibrated parameters (see docs/accuracy.md for the fit and its error).
pub fn efficiency(generation: Generation) -> Efficiency {
    match generation {
        // Fitted (`plan calibrate --fit`) on 8 A100 rows: torchtitan 2024, Megatron 2022.
        Generation::Ampere => Efficiency {
            gemm: 0.72,
            fp8_gemm: 0.0,
            kernel_overhead: 6e-6,
            attention: 0.70,
            memory: 0.75,
            overlap: 0.85,
        },
        // Ada has no calibration row: Hopper's fitted values, stated as uncertain.
        Generation::Ada => efficiency(Generation::Hopper),
        // Fitted on 16 H100 rows: NeMo 24.07, DGX Cloud recipes, Megatron-Bridge 25.11.
        Generation::Hopper => Efficiency {
            gemm: 0.74,
            fp8_gemm: 0.63,
            kernel_overhead: 6e-6,
            attention: 0.30,
            memory: 0.75,
            overlap: 0.85,
        },
        // Fitted on torchtitan's 4 rows of 500 W H100s.
        Generation::HopperPowerCapped => Efficiency {
            gemm: 0.50,
            fp8_gemm: 0.48,
            kernel_overhead: 6e-6,
            attention: 0.25,
            memory: 0.75,
            overlap: 0.85,
        },
        // FP8 fitted on 5 Megatron-Bridge rows (B200, GB200, GB300); no BF16 row, so
        // BF16 GEMM efficiency is Hopper's.
        Generation::Blackwell => Efficiency {
            gemm: 0.74,
            fp8_gemm: 0.71,
            kernel_overhead: 5e-6,
            attention: 0.25,
            memory: 0.75,
            overlap: 0.85,
        },
    }
}

/// The links a job's collectives run over.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Fabric {
    /// GPUs that share the fast intra-node link (8 on a p5/p6 node, 72 on an NVL72).
    pub gpus_per_domain: u64,
    /// Intra-domain bandwidth per GPU and direction, bytes/s.
    pub intra_bw: f64,
    /// Inter-node bandwidth per GPU and direction, bytes/s.
    pub inter_bw: f64,
}

impl Fabric {
    /// NVLink (half of the bidirectional figure) or PCIe inside the instance;
    /// the instance's network shared by its GPUs between instances.
    pub fn of(gpu: &Gpu, instance: &Instance) -> Fabric {
        let intra_bw = match gpu.nvlink_gbs_per_gpu {
            Some(bidir) => bidir / 2.0 * 1e9 * 0.8,
            // PCIe Gen4/Gen5 x16 through the host: ~20 GB/s effective for collectives.
            None => 20e9,
        };
        let inter_bw = instance.network_gbps() / 8.0 * 1e9 / instance.gpu_count.max(1) as f64 * 0.8;
        Fabric {
            gpus_per_domain: instance.gpu_count.max(1),
            intra_bw,
            inter_bw,
        }
    }
    /// Bandwidth of a collective over `n` ranks that sit `stride` GPUs apart.
    fn bw(&self, n: u64, stride: u64) -> f64 {
        if n * stride <= self.gpus_per_domain {
            self.intra_bw
        } else {
            self.inter_bw.min(self.intra_bw)
        }
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
        12.0 * arch.layers as f64 * arch.mean_keys_per_query(seq) * arch.q_width() as f64;
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
    let t = layout.tp.max(1) as f64;
    let p = layout.pp.max(1) as f64;
    let c = layout.cp.max(1) as f64;
    let ep = layout.ep.max(1) as f64;
    let h = arch.hidden as f64;
    let q = arch.q_width() as f64;
    let kv = arch.kv_width() as f64;
    let a = arch.heads as f64;
    let s = plan.seq as f64;
    let b = plan.micro_batch as f64;
    let tokens = b * s / c;
    let layers = (arch.layers as f64 / p).ceil();
    let bw = gpu.mem_bw_tbs * 1e12 * eff.memory;

    let gemm_peak = peak_of(gpu, plan.precision);
    let bf16_peak = peak_of(gpu, Precision::Bf16);
    let (lin_peak, lin_eff, lin_bytes) = match plan.precision {
        Precision::Fp32 => (gemm_peak, eff.gemm, 4.0),
        p if p.is_low_precision() && gpu.fp8_tensor_cores => (gemm_peak, eff.fp8_gemm, 1.0),
        _ => (bf16_peak, eff.gemm, 2.0),
    };
    let t0 = eff.kernel_overhead;
    // Forward time of one GEMM [m x k] @ [k x n].
    let gemm = |m: f64, n: f64, k: f64, peak: f64, e: f64, bytes: f64| -> f64 {
        if m < 1.0 || n < 1.0 || k < 1.0 {
            return 0.0;
        }
        let compute = 2.0 * m * n * k / (peak * e);
        let memory = (m * k + k * n + m * n) * bytes / bw;
        compute.max(memory) + t0
    };
    let lin = |m: f64, n: f64, k: f64| gemm(m, n, k, lin_peak, lin_eff, lin_bytes);

    // ---- one layer, forward, one micro-batch ---------------------------------
    let gated = arch.mlp.is_gated();
    let mut layer_gemm = lin(tokens, (q + 2.0 * kv) / t, h) + lin(tokens, h, q / t);
    let mlp = |f: f64, m: f64| {
        let up = if gated { 2.0 * f } else { f };
        lin(m, up / t, h) + lin(m, h, f / t)
    };
    let mut moe_a2a_bytes = 0.0;
    match &arch.moe {
        None => layer_gemm += mlp(arch.ffn as f64, tokens),
        Some(m) => {
            let local = (m.experts as f64 / ep).max(1.0);
            // Tokens reaching each local expert, from all EP ranks.
            let per_expert = tokens * ep * m.active as f64 / m.experts as f64;
            layer_gemm += local * mlp(m.expert_ffn as f64, per_expert);
            layer_gemm += m.shared as f64 * mlp(m.expert_ffn as f64, tokens);
            layer_gemm += gemm(tokens, m.experts as f64, h, bf16_peak, eff.gemm, 2.0);
            if ep > 1.0 {
                moe_a2a_bytes = tokens * m.active as f64 * h * 2.0 * (ep - 1.0) / ep;
            }
        }
    }
    // Flash attention: 4*s*a*d FLOPs per query token forward, half skipped by
    // the causal mask; backward does 2.5x the forward's work.
    let attn_flops = 4.0 * tokens * arch.mean_keys_per_query(plan.seq) * q / t;
    let attn_fwd = match plan.attention {
        Attention::Flash => attn_flops / (bf16_peak * eff.attention) + t0,
        // Eager: two batched GEMMs plus softmax over the s x s scores in HBM.
        Attention::Eager => {
            attn_flops * 2.0 / (bf16_peak * eff.gemm)
                + tokens * s * a / t * 2.0 * 6.0 / bw
                + 4.0 * t0
        }
    };
    // Elementwise traffic per token (norms, RoPE, residual adds, activation):
    // fused kernels (Megatron/TE) move ~20h + 4(q+kv) + 6f bytes forward; HF's
    // unfused fp32 norms and separate casts ~2.5x that, in more kernels.
    let f_eff = arch.moe.as_ref().map_or(arch.ffn as f64, |m| {
        m.expert_ffn as f64 * (m.active + m.shared) as f64
    });
    let (elem_factor, elem_kernels) = match plan.implementation {
        Implementation::Megatron => (1.0, 8.0),
        Implementation::Hf => (2.5, 30.0),
    };
    // Without sequence parallelism the norm/residual part runs whole on every TP rank.
    let sp_div = if plan.sp { t } else { 1.0 };
    let elem_fwd = elem_factor * tokens * (20.0 * h / sp_div + (4.0 * (q + kv) + 6.0 * f_eff) / t)
        / bw
        + elem_kernels * t0;

    // Forward + backward (2x forward for GEMMs, 2.5x for flash attention, 2x elementwise).
    let layer_train_gemm = 3.0 * layer_gemm;
    let layer_train_attn = attn_fwd
        * if plan.attention == Attention::Flash {
            3.5
        } else {
            3.0
        };
    let layer_train_elem = 3.0 * elem_fwd;
    // Recomputation (a second forward of what was dropped).
    let frac = plan.checkpointing.recomputed_fraction();
    let layer_recompute = match plan.checkpointing {
        Checkpointing::Op => elem_fwd + 0.5 * layer_gemm,
        Checkpointing::Selective => {
            if plan.attention == Attention::Eager {
                attn_fwd
            } else {
                0.0
            }
        }
        _ => frac * (layer_gemm + attn_fwd + elem_fwd),
    };

    // LM head and loss on the last stage.
    let v = arch.vocab as f64;
    let head_gemm = 3.0 * gemm(tokens, v / t, h, bf16_peak, eff.gemm, 2.0);
    let loss_elem = match plan.loss {
        // logits upcast, log-softmax forward and backward in fp32
        Loss::Plain => tokens * v / t * 4.0 * 6.0 / bw,
        Loss::Fused => tokens * v / t * 2.0 * 3.0 / bw,
    };

    let mb_gemm = layers * layer_train_gemm + head_gemm;
    let mb_attn = layers * layer_train_attn;
    let mb_elem = layers * layer_train_elem + loss_elem;
    let mb_recompute = layers * layer_recompute;

    // ---- communication per micro-batch ------------------------------------------
    let act_bytes = tokens * h * 2.0;
    let tp_comm = if layout.tp > 1 {
        // Per layer, in units of one all-gather of the activations:
        // without SP 2 all-reduces forward and 2 backward (= 8); with SP 2
        // all-gathers + 2 reduce-scatters forward, as many backward, plus the
        // input all-gathers again for the weight gradients (= 10). Recomputing
        // a layer repeats its forward collectives.
        let units = if plan.sp { 10.0 } else { 8.0 } + 4.0 * frac;
        let per_layer = units * (t - 1.0) / t * act_bytes / fabric.bw(layout.tp, 1);
        // TransformerEngine/AsyncTP overlap part of it with the GEMMs.
        let hidden = if plan.implementation == Implementation::Megatron {
            0.3
        } else {
            0.0
        };
        layers * per_layer * (1.0 - hidden)
    } else {
        0.0
    };
    let cp_comm = if layout.cp > 1 {
        // K and V chunks go round the ring (c-1 steps), dK and dV come back:
        // overlapped with attention, only the excess shows.
        let per_layer =
            3.0 * (c - 1.0) * tokens * kv / t * 2.0 * 2.0 / fabric.bw(layout.cp, layout.tp);
        layers * (per_layer - layer_train_attn).max(0.0)
    } else {
        0.0
    };
    let ep_comm = layers * 4.0 * moe_a2a_bytes / fabric.bw(layout.ep, layout.tp) * 0.5;

    // ---- the step ------------------------------------------------------------------
    let m = plan.grad_accum.max(1) as f64;
    let vp = plan.vp.max(1) as f64;
    let per_mb = mb_gemm + mb_attn + mb_elem + mb_recompute + tp_comm + cp_comm + ep_comm;
    let bubble = if layout.pp > 1 {
        (p - 1.0) / (m * vp) * m * per_mb
    } else {
        0.0
    };
    let pp_p2p = if layout.pp > 1 {
        m * 2.0 * act_bytes / t / fabric.bw(2, layout.tp * layout.cp * layout.dp)
            * (1.0 - eff.overlap)
    } else {
        0.0
    };
    let compute_total = m * per_mb;

    // Data parallel: gradient reduction and (ZeRO-3) parameter gathers.
    let stage_params =
        counts.total as f64 / (t * p * if arch.moe.is_some() { ep.min(2.0) } else { 1.0 });
    let trainable = match plan.train {
        Training::Full => stage_params,
        // LoRA adapters: a fraction of a percent; count 1%.
        _ => stage_params * 0.01,
    };
    let dp = layout.dp as f64;
    let grad_bytes = match (plan.implementation, plan.precision, plan.zero) {
        (_, Precision::Fp32, _) => 4.0,
        (Implementation::Hf, Precision::Bf16Pure, _) => 2.0,
        (Implementation::Hf, _, 0) => 4.0,
        _ => 2.0,
    };
    let dp_bw = fabric.bw(layout.dp, layout.tp * layout.cp);
    let g = (layout.shard.max(1) as f64).min(dp);
    let dp_comm = if layout.dp > 1 {
        let ring = (dp - 1.0) / dp;
        match plan.zero {
            0 => 2.0 * ring * trainable * grad_bytes / dp_bw,
            1 | 2 => ring * trainable * (grad_bytes + 2.0) / dp_bw,
            // all-gather forward and backward per micro-batch, reduce-scatter per step
            _ if g >= dp => {
                (m * 2.0 * ring * stage_params * 2.0 + ring * trainable * grad_bytes) / dp_bw
            }
            // Hybrid shard: gathers and reduce-scatter inside the shard group,
            // then an all-reduce of the shards across the dp/g replicas.
            _ => {
                let gr = (g - 1.0) / g;
                let inside = (m * 2.0 * gr * stage_params * 2.0 + gr * trainable * grad_bytes)
                    / fabric.bw(layout.shard, layout.tp * layout.cp);
                let replicas = dp / g;
                let across = 2.0 * (replicas - 1.0) / replicas * trainable / g * grad_bytes / dp_bw;
                inside + across
            }
        }
    } else {
        0.0
    };
    let dp_exposed = (dp_comm * (1.0 - eff.overlap)).max(dp_comm - compute_total * 0.9);

    // Optimizer: read params, grads and states, write params and states.
    let shard = if plan.zero >= 1 {
        layout.shard.max(1) as f64
    } else {
        1.0
    };
    let opt_bytes_per_param = match plan.optimizer {
        Optimizer::Adamw | Optimizer::AdamwForeach => 28.0,
        Optimizer::Adamw8bit => 16.0,
        Optimizer::Adafactor => 14.0,
        Optimizer::Sgd => 20.0,
    };
    let optimizer = trainable / shard * opt_bytes_per_param / bw + 50.0 * t0;

    let step = StepTime {
        gemm: m * mb_gemm,
        attention: m * mb_attn,
        elementwise: m * mb_elem,
        recompute: m * mb_recompute,
        tensor_parallel: m * tp_comm,
        context_parallel: m * cp_comm,
        expert_parallel: m * ep_comm,
        pipeline_bubble: bubble + pp_p2p,
        data_parallel: dp_exposed,
        optimizer,
    };
    let step_seconds = step.total().max(1e-9);
    let tokens_per_step = plan.micro_batch * plan.seq * plan.grad_accum * layout.dp;
    let tokens_per_second = tokens_per_step as f64 / step_seconds;
    let tokens_per_second_per_gpu = tokens_per_second / layout.gpus.max(1) as f64;
    let model_flops = model_flops_per_token(arch, counts, plan.seq);
    // Recompute repeats a forward pass (1/3 of the training FLOPs) for the dropped layers.
    let recompute_share = match plan.checkpointing {
        Checkpointing::Op => 0.5 / 3.0,
        Checkpointing::Selective => 0.0,
        _ => frac / 3.0,
    };
    let hardware_flops = model_flops * (1.0 + recompute_share);
    let peak_flops = gemm_peak;
    Throughput {
        step_seconds,
        step,
        tokens_per_step,
        tokens_per_second_per_gpu,
        tokens_per_second,
        samples_per_second: tokens_per_second / plan.seq as f64,
        model_flops_per_token: model_flops,
        hardware_flops_per_token: hardware_flops,
        peak_flops,
        mfu: model_flops * tokens_per_second_per_gpu / peak_flops,
        hfu: hardware_flops * tokens_per_second_per_gpu / peak_flops,
        generation: generation(gpu),
    }
}
