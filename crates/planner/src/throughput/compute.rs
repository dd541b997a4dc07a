//! Compute per layer and micro-batch: GEMMs, grouped experts, attention
//! by its kernel, elementwise work, recomputation, the LM head and the loss.

use super::shape::StepShape;
use crate::plan::{Attention, Checkpointing, Loss, Precision, Stack};

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
    if s.plan.numerics.precision != Precision::Nvfp4 || s.lin_peak == s.wide_peak {
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
    if s.plan.implementation.stack != Stack::Megatron {
        return s.eff.moe_layer_overhead;
    }
    let local = (m.experts as f64 / s.ep).max(1.0);
    let router = if s.plan.moe.moe_graphs {
        0.0
    } else {
        s.eff.host.moe_router_launch
    };
    let dispatcher = if s.plan.moe.moe_flex {
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
    let routed = local * per_expert * s.plan.moe.moe_imbalance.max(1.0);
    let e = s.lin_eff * s.eff.moe * grouped_fill(s, per_expert);
    let compute = 2.0 * routed * (up + f) * s.h / (s.lin_peak * e);
    let bytes = (local * (up + f) * s.h + routed * (2.0 * s.h + up + f)) * s.lin_bytes;
    compute.max(bytes / s.bw) + 2.0 * s.eff.kernel_overhead
}

/// The share of its many-token efficiency a grouped GEMM reaches with
/// `tokens` per expert (1 for Hugging Face's per-expert dense GEMMs;
/// torchtitan's MoE runs grouped GEMMs, `torch._grouped_mm`, as Megatron's).
fn grouped_fill(s: &StepShape, tokens: f64) -> f64 {
    match s.plan.implementation.stack {
        Stack::Megatron | Stack::Torchtitan => tokens / (tokens + GROUPED_GEMM_HALF_TOKENS),
        Stack::Hf => 1.0,
    }
}

/// Attention forward. Flash: `4*s*a*d` FLOPs per query token, half skipped
/// by the causal mask (Dao 2023), at the stack's kernel's benchmarked
/// efficiency for the shape (kernels.rs; of the FP32 peak in an FP32 plan:
/// SDPA's memory-efficient kernel).
/// Eager: two batched GEMMs plus softmax over the `s x s` scores in HBM.
fn attention_forward(s: &StepShape) -> f64 {
    let t0 = s.eff.kernel_overhead;
    let width = s.arch.attention_width() as f64;
    let flops = 4.0 * s.tokens * s.arch.mean_keys_per_query(s.plan.data.seq) * width / s.t;
    match s.plan.implementation.attention {
        Attention::Flash | Attention::Fa2 | Attention::Cudnn => {
            flops / (s.wide_peak * s.attention_eff) + t0
        }
        Attention::Eager => {
            flops * 2.0 / (s.wide_peak * s.eff.gemm)
                + s.tokens * s.plan.data.seq as f64 * s.arch.heads as f64 / s.t * 2.0 * 6.0 / s.bw
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
    let (factor, kernels) = match s.plan.implementation.stack {
        Stack::Megatron => (1.0, 8.0),
        Stack::Torchtitan if s.plan.implementation.compile => (1.0, 8.0),
        Stack::Hf | Stack::Torchtitan => (2.5, 30.0),
    };
    let sp_div = if s.plan.parallelism.sp { s.t } else { 1.0 };
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
    pub(super) gemm: f64,
    pub(super) attention: f64,
    pub(super) elementwise: f64,
}

impl LayerForward {
    /// Equal to the bit (a NaN equals itself).
    pub(super) fn same_bits(&self, other: &LayerForward) -> bool {
        let bits = |f: &LayerForward| {
            [
                f.gemm.to_bits(),
                f.attention.to_bits(),
                f.elementwise.to_bits(),
            ]
        };
        bits(self) == bits(other)
    }

    pub(super) fn of(s: &StepShape) -> LayerForward {
        LayerForward {
            gemm: mean_layer_gemms(s),
            attention: attention_forward(s),
            elementwise: elementwise_forward(s),
        }
    }
}

/// Flash attention's backward does 2.5x its forward's work (Dao 2023); an
/// eager one, like GEMMs, 2x.
pub(super) fn attention_train(s: &StepShape, fwd: &LayerForward) -> f64 {
    fwd.attention
        * if s.plan.implementation.attention.is_fused() {
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
pub(super) fn recompute_per_layer(s: &StepShape, fwd: &LayerForward) -> f64 {
    match s.plan.activations.checkpointing {
        Checkpointing::Op => fwd.elementwise + s.plan.op_level_recomputed_gemm_share() * fwd.gemm,
        Checkpointing::Selective => {
            let core = if s.plan.implementation.attention == Attention::Eager
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
    let recomputed = s.plan.activations.recompute_modules.mla_up_proj
        && s.plan.implementation.stack == Stack::Megatron;
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
pub(super) fn lm_head(s: &StepShape) -> f64 {
    if !s.head {
        return 0.0;
    }
    let mtp = s.plan.training.mtp as f64;
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
pub(super) fn loss_elementwise(s: &StepShape) -> f64 {
    if !s.head {
        return 0.0;
    }
    let elements = s.head_tokens * s.arch.vocab as f64 / s.t * (1.0 + s.plan.training.mtp as f64);
    match s.plan.implementation.loss {
        Loss::Plain => elements * 4.0 * 6.0 / s.bw,
        Loss::Fused => elements * 2.0 * 3.0 / s.bw,
    }
}
