//! Compute per layer and micro-batch: GEMMs, grouped experts, attention
//! by its kernel, elementwise work, recomputation, the LM head and the loss.

use super::shape::StepShape;
use crate::model::plan::{Attention, Checkpointing, Loss, Precision, Stack};

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
    if s.recipe.numerics.precision != Precision::Nvfp4 || s.lin_peak == s.wide_peak {
        return low;
    }
    let wide = StepShape {
        lin_peak: s.wide_peak,
        lin_eff: s.eff.gemm,
        lin_bytes: s.wide_bytes,
        quantize: (0.0, 0.0),
        ..*s
    };
    let share = crate::model::plan::NVFP4_BF16_LAYER_SHARE;
    (1.0 - share) * low + share * layer_gemms(&wide)
}

/// One MoE layer's experts, shared experts and router, forward.
fn routed_gemms(s: &StepShape, m: &crate::model::architecture::Moe) -> f64 {
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
fn moe_host_cost(s: &StepShape, m: &crate::model::architecture::Moe) -> f64 {
    if s.recipe.implementation.stack != Stack::Megatron {
        return s.eff.moe_layer_overhead;
    }
    let local = (m.experts as f64 / s.ep).max(1.0);
    let router = if s.recipe.moe.moe_graphs {
        0.0
    } else {
        s.eff.host.moe_router_launch
    };
    let dispatcher = if s.recipe.moe.moe_flex {
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
fn grouped_experts(s: &StepShape, m: &crate::model::architecture::Moe) -> f64 {
    let f = m.expert_ffn as f64 / s.t;
    let up = if s.arch.mlp.is_gated() { 2.0 * f } else { f };
    let local = (m.experts as f64 / s.ep).max(1.0);
    let per_expert = s.tokens * s.ep * m.active as f64 / m.experts as f64;
    let routed = local * per_expert * s.recipe.moe.moe_imbalance.max(1.0);
    let e = s.lin_eff * s.eff.moe * grouped_fill(s, per_expert);
    let compute = 2.0 * routed * (up + f) * s.h / (s.lin_peak * e);
    let bytes = (local * (up + f) * s.h + routed * (2.0 * s.h + up + f)) * s.lin_bytes;
    compute.max(bytes / s.bw) + 2.0 * s.eff.kernel_overhead
}

/// The share of its many-token efficiency a grouped GEMM reaches with
/// `tokens` per expert (1 for Hugging Face's per-expert dense GEMMs;
/// torchtitan's MoE runs grouped GEMMs, `torch._grouped_mm`, as Megatron's).
fn grouped_fill(s: &StepShape, tokens: f64) -> f64 {
    match s.recipe.implementation.stack {
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
    let flops = 4.0 * s.tokens * s.arch.mean_keys_per_query(s.recipe.data.seq) * width / s.t;
    match s.recipe.implementation.attention {
        Attention::Flash | Attention::Fa2 | Attention::Cudnn => {
            flops / (s.wide_peak * s.attention_eff) + t0
        }
        Attention::Eager => {
            flops * 2.0 / (s.wide_peak * s.eff.gemm)
                + s.tokens * s.recipe.data.seq as f64 * s.arch.heads as f64 / s.t * 2.0 * 6.0 / s.bw
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
    let (factor, kernels) = match s.recipe.implementation.stack {
        Stack::Megatron => (1.0, 8.0),
        Stack::Torchtitan if s.recipe.implementation.compile => (1.0, 8.0),
        Stack::Hf | Stack::Torchtitan => (2.5, 30.0),
    };
    let sp_div = if s.recipe.parallelism.sp { s.t } else { 1.0 };
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
    /// The base's Linear GEMMs.
    pub(super) gemm: f64,
    pub(super) attention: f64,
    pub(super) elementwise: f64,
    /// LoRA's adapters: their GEMMs and the scaled sum into the base's output.
    pub(super) adapters: f64,
    /// Their backward: two GEMMs per forward GEMM (their weights train) and
    /// the gradients' elementwise traffic (`adapter`).
    pub(super) adapters_backward: f64,
    /// QLoRA: the layer's forward beyond its GEMMs (`qlora_overhead`).
    pub(super) dequantize: f64,
    /// And its backward's.
    pub(super) dequantize_backward: f64,
}

impl LayerForward {
    /// Equal to the bit (a NaN equals itself).
    pub(super) fn same_bits(&self, other: &LayerForward) -> bool {
        let bits = |f: &LayerForward| {
            [
                f.gemm.to_bits(),
                f.attention.to_bits(),
                f.elementwise.to_bits(),
                f.adapters.to_bits(),
                f.adapters_backward.to_bits(),
                f.dequantize.to_bits(),
                f.dequantize_backward.to_bits(),
            ]
        };
        bits(self) == bits(other)
    }

    pub(super) fn of(s: &StepShape) -> LayerForward {
        let (adapters, adapters_backward) = adapters_forward_backward(s);
        let (dequantize, dequantize_backward) = qlora_overhead(s);
        LayerForward {
            gemm: mean_layer_gemms(s),
            attention: attention_forward(s),
            elementwise: elementwise_forward(s),
            adapters,
            adapters_backward,
            dequantize,
            dequantize_backward,
        }
    }

    /// The layer's forward, all of it.
    pub(super) fn total(&self) -> f64 {
        self.gemm + self.attention + self.elementwise + self.adapters + self.dequantize
    }
}

/// LoRA's adapters on one layer, forward and backward (Hu et al. 2021):
/// for each adapter (`Architecture::adapter_units`), `x A` (`tokens x in ->
/// r`) and `(x A) B` (`r -> out`) in 16 bits (PEFT's adapters run under
/// autocast, Megatron-Bridge's are BF16 Linears beside TransformerEngine's
/// FP8 base), each GEMM again twice in the backward (their weights train).
/// Thin GEMMs, memory-bound at small ranks: each re-reads the input or
/// writes an output as wide as the base's. Split over tensor parallelism as
/// the base Linear is. An MoE layer's experts each have their own adapters,
/// run on the tokens routed to them.
fn adapters_forward_backward(s: &StepShape) -> (f64, f64) {
    if s.rank <= 0.0 {
        return (0.0, 0.0);
    }
    let units = |mlp: Option<u64>, tokens: f64| -> (f64, f64) {
        s.arch
            .adapter_units(s.adapted, mlp)
            .iter()
            .map(|u| adapter(s, tokens, u))
            .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1))
    };
    let mix = |a: (f64, f64), k: f64, b: (f64, f64)| (a.0 + k * b.0, a.1 + k * b.1);
    let attention = units(None, s.tokens);
    let dense = units(Some(s.arch.ffn), s.tokens);
    let mlp = match &s.arch.moe {
        None => dense,
        Some(m) => {
            let local = (m.experts as f64 / s.ep).max(1.0);
            let per_expert = s.tokens * s.ep * m.active as f64 / m.experts as f64;
            let expert = units(Some(m.expert_ffn), per_expert);
            let shared = units(Some(m.expert_ffn), s.tokens);
            let routed = mix(mix((0.0, 0.0), local, expert), m.shared as f64, shared);
            let share = s.arch.moe_layer_share();
            mix(mix((0.0, 0.0), share, routed), 1.0 - share, dense)
        }
    };
    (attention.0 + mlp.0, attention.1 + mlp.1)
}

/// One adapter over `tokens`, forward and backward: its two thin GEMMs
/// (forward; twice each backward) and its elementwise traffic. Eager
/// (PEFT's `lora.Linear.forward`, Megatron-Bridge's `LoRALinear`): the
/// forward's `B(A x) * scaling` reads and writes `out`, `result + ...`
/// reads two and writes one (5 elements of `out` per token); the backward
/// scales the output's gradient (2 of `out`) and adds A's input gradient to
/// the base's (3 of `in`). Compiled (torch.compile, or NeMo AutoModel's
/// Triton LoRA kernels): the scaling and the sums fold into the GEMMs'
/// epilogues, which read the base's output and write the sum (2 of `out`).
/// A column-parallel base's output is split over TP; a row-parallel one's
/// comes out whole, and sequence parallelism scatters it before the sum
/// (Megatron-Bridge's `ParallelLinearAdapter`).
/// PEFT's FP32 adapters add casts (`adapter_casts`).
fn adapter(s: &StepShape, tokens: f64, u: &crate::model::architecture::AdapterUnit) -> (f64, f64) {
    let split = |x: u64, on: bool| {
        if u.split && on {
            x as f64 / s.t
        } else {
            x as f64
        }
    };
    let (inp, out) = (split(u.inp, u.row_parallel), split(u.out, !u.row_parallel));
    let gemm = |m, n, k| s.gemm(m, n, k, s.adapter_peak, s.eff.gemm, s.adapter_bytes);
    let gemms = gemm(tokens, s.rank, inp) + gemm(tokens, out, s.rank);
    // The sum runs where the base's output lives.
    let summed = if u.row_parallel && s.recipe.parallelism.sp {
        out / s.t
    } else {
        out
    };
    let fused =
        s.recipe.implementation.stack == Stack::Torchtitan && s.recipe.implementation.compile;
    let (forward, backward) = if fused {
        (2.0 * summed, 0.0)
    } else {
        (5.0 * summed, 2.0 * summed + 3.0 * inp)
    };
    let elements = |n: f64| tokens * n * s.wide_bytes / s.bw;
    let casts = tokens * adapter_casts(s, inp, out) / s.bw;
    (
        gemms + elements(forward) + casts,
        2.0 * gemms + elements(backward) + casts,
    )
}

/// Bytes per token PEFT's FP32 adapters (`lora_dtype=fp32`, its
/// `autocast_adapter_dtype`) cast, forward and again backward:
/// `lora.Linear.forward` casts the input to the adapters' dtype
/// (`_cast_input_dtype`: read 2 B, write 4 B per element of `in`); under
/// autocast `lora_A` casts it back to BF16 (read 4, write 2), in pure BF16
/// the adapters run in FP32 (`adapter_compute`) and the output comes back
/// (read 4, write 2 per element of `out`). Megatron-Bridge's adapters are
/// in the parameters' dtype and cast nothing. PEFT's 4-bit LoRA layer
/// (peft/tuners/lora/bnb.py) casts nothing itself under autocast; its input
/// arrives in FP32 there (`qlora_overhead`) and autocast casts it once.
fn adapter_casts(s: &StepShape, inp: f64, out: f64) -> f64 {
    let peft_fp32 = s.recipe.implementation.stack == Stack::Hf && s.recipe.adapter_bytes() == 4.0;
    let four_bit = s.recipe.training.train == crate::model::plan::Training::Qlora;
    match s.recipe.numerics.precision {
        _ if !peft_fp32 => 0.0,
        Precision::Fp32 => 0.0,
        Precision::Bf16Pure => 6.0 * (inp + out),
        _ if four_bit => 6.0 * inp,
        _ => 12.0 * inp,
    }
}

/// QLoRA's work beyond the GEMMs on one layer, forward and backward. Each
/// use of a frozen NF4 weight dequantizes it first (`QLORA_DEQUANTIZE_BYTES`
/// per weight on this GPU at HBM speed, a kernel per Linear): bitsandbytes
/// dequantizes in `MatMul4Bit.forward` and again in `.backward` for the
/// input's gradient, and keeps no BF16 copy. Where the residual stream is
/// FP32 (`memory::qlora_fp32_residual`: PEFT's
/// `prepare_model_for_kbit_training` turns every weight it did not quantize
/// to FP32, and autocast keeps the norms in FP32), each `Linear4bit.forward` casts its input
/// to BF16 (`x.to(compute_dtype)`: read 4 B, write 2 B per element of `in`)
/// and its output back (`.to(inp_dtype)`: read 2, write 4 per element of
/// `out`), the backward the gradients alike; and PEFT's 4-bit LoRA layer
/// clones the base's FP32 output before adding the adapters (`result =
/// result.clone()`, peft/tuners/lora/bnb.py: 8 B per element of `out`).
fn qlora_overhead(s: &StepShape) -> (f64, f64) {
    if s.dequantize <= 0.0 {
        return (0.0, 0.0);
    }
    let experts = s.arch.routed_params_per_layer(s.counts);
    let linear = (s.counts.per_layer - s.counts.norms_per_layer) as f64 - experts;
    let weights = linear / s.t + experts / s.layout.expert_split();
    let kernels = s.arch.attention_linears().len() as f64
        + s.arch.mlp.matrices() as f64
            * s.arch.moe.as_ref().map_or(1.0, |m| {
                (m.experts as f64 / s.ep).max(1.0) + m.shared as f64
            });
    let dequantize = weights * s.dequantize / s.bw + kernels * s.eff.kernel_overhead;
    if !crate::model::memory::qlora_fp32_residual(s.recipe) {
        return (dequantize, dequantize);
    }
    let (inputs, outputs, adapted) = linear_widths(s);
    let casts = s.tokens * 6.0 * (inputs + outputs) / s.bw;
    let clone = s.tokens * 8.0 * adapted / s.bw;
    (dequantize + casts + clone, dequantize + casts)
}

/// The layer's Linears per token on this GPU: their input widths summed,
/// their output widths summed, and the adapted ones' output widths (the
/// routed experts' on the tokens that reach them).
fn linear_widths(s: &StepShape) -> (f64, f64, f64) {
    let linears = s.arch.attention_linears();
    let last = linears.len() - 1;
    let (mut inputs, mut outputs, mut adapted) = (0.0, 0.0, 0.0);
    for (i, &(inp, out, split)) in linears.iter().enumerate() {
        let (inp, out) = match (split, i == last) {
            (true, true) => (inp as f64 / s.t, out as f64),
            (true, false) => (inp as f64, out as f64 / s.t),
            (false, _) => (inp as f64, out as f64),
        };
        inputs += inp;
        outputs += out;
        if s.adapted.attention_linear(i, s.arch) {
            adapted += out;
        }
    }
    let (f, routed) = match &s.arch.moe {
        Some(m) => (m.expert_ffn as f64, (m.active + m.shared) as f64),
        None => (s.arch.ffn as f64, 1.0),
    };
    let f = f / s.t;
    let [gate, up, down] = s.adapted.mlp_matrices(s.arch.mlp.is_gated());
    let ups = if s.arch.mlp.is_gated() { 2.0 } else { 1.0 };
    inputs += routed * (ups * s.h + f);
    outputs += routed * (ups * f + s.h);
    adapted += routed * ((gate as u8 + up as u8) as f64 * f + if down { s.h } else { 0.0 });
    (inputs, outputs, adapted)
}

/// Flash attention's backward does 2.5x its forward's work (Dao 2023); an
/// eager one, like GEMMs, 2x.
pub(super) fn attention_train(s: &StepShape, fwd: &LayerForward) -> f64 {
    fwd.attention
        * if s.recipe.implementation.attention.is_fused() {
            3.5
        } else {
            3.0
        }
}

/// Recomputation: a second forward of what checkpointing dropped. Op-level
/// SAC recomputes the elementwise ops and the GEMMs its policy drops
/// (`Recipe::op_level_recomputed_gemm_share`); selective
/// recomputes the attention core where it does (eager: the scores;
/// `recomputes_core_attention`) and, with `mla_up_proj` among Megatron's
/// modules, MLA's up-projection GEMMs (the other modules recompute
/// elementwise work, not counted).
pub(super) fn recompute_per_layer(s: &StepShape, fwd: &LayerForward) -> f64 {
    match s.recipe.activations.checkpointing {
        Checkpointing::Op => {
            let gemms = fwd.gemm + fwd.adapters + fwd.dequantize;
            fwd.elementwise + s.recipe.op_level_recomputed_gemm_share() * gemms
        }
        Checkpointing::Selective => {
            let core = if s.recipe.implementation.attention == Attention::Eager
                && crate::model::memory::recomputes_core_attention(s.recipe)
            {
                fwd.attention
            } else {
                0.0
            };
            core + mla_up_projections(s)
        }
        _ => s.recomputed() * fwd.total(),
    }
}

/// MLA's up projections forward, when Megatron recomputes them.
fn mla_up_projections(s: &StepShape) -> f64 {
    let recomputed = s.recipe.activations.recompute_modules.mla_up_proj
        && s.recipe.implementation.stack == Stack::Megatron;
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
/// projects `[h; h]` to `h` first. A frozen head (LoRA) computes its
/// input's gradient only (`gemm_passes`).
pub(super) fn lm_head(s: &StepShape) -> f64 {
    s.gemm_passes() * lm_head_forward(s)
}

/// The LM head's forward alone (`lm_head`).
pub(super) fn lm_head_forward(s: &StepShape) -> f64 {
    if !s.has_head {
        return 0.0;
    }
    let mtp = s.recipe.training.mtp as f64;
    mtp * s.lin(s.logit_tokens, s.h / s.t, 2.0 * s.h)
        + (1.0 + mtp)
            * s.gemm(
                s.logit_tokens,
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
    if !s.has_head {
        return 0.0;
    }
    let elements =
        s.logit_tokens * s.arch.vocab as f64 / s.t * (1.0 + s.recipe.training.mtp as f64);
    match s.recipe.implementation.loss {
        Loss::Plain => elements * 4.0 * 6.0 / s.bw,
        Loss::Fused => elements * 2.0 * 3.0 / s.bw,
    }
}
