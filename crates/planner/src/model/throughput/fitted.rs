//! The fitted efficiency of each GPU generation (docs/accuracy.md: fitted
//! by `plan calibrate --fit`, and a test holds these to the fit) and the
//! host's launch costs.

use crate::model::hardware::Generation;
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
    /// The share of TransformerEngine's asynchronous backward tensor-parallel
    /// collectives (the input re-gather beside the data-gradient GEMM, the
    /// input-gradient reduction beside the weight-gradient GEMM) that hides
    /// behind those GEMMs without TP overlap (`communication::tensor_parallel`).
    pub tp_hidden: f64,
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

impl Efficiency {
    /// The efficiency on `gpu`: its generation's, with the BF16 GEMM
    /// efficiency measured on the GPU itself where there is one
    /// (`Gpu::bf16_gemm_measured`), which no end-to-end fit then moves (#57:
    /// a constant fitted end to end only where no measurement exists). B200
    /// (HGX, 1,000 W): 0.486 of its peak, from SimuMax's GEMM benchmarks on
    /// the 31 real 8 x B200 runs' shapes; the fit on GB200 rows (1,200 W
    /// parts) lands higher, at 0.510 of their 2,500.
    pub fn on(&self, gpu: &crate::model::hardware::Gpu) -> Efficiency {
        Efficiency {
            gemm: gpu.bf16_gemm_measured.unwrap_or(self.gemm),
            ..*self
        }
    }
}

/// The host's launch costs of an MoE layer per micro-batch, forward and
/// backward (`moe_host_cost`), fitted on the 14 Blackwell MoE rows (DGX
/// B200's x86 hosts and GB200/GB300's Grace) with each row's dispatcher
/// and CUDA-graph scope from its recipe (calibration.csv), and taken for
/// every generation: they are the CPU's and the software's, not the GPU's.
/// 0.14 ms per expert on the GPU (~30 launches of ~5 µs), 1.4 ms for a
/// router and preprocessing outside CUDA graphs, 3.7 ms for the all-to-all
/// dispatcher over DeepEP/HybridEP.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct HostCosts {
    /// Seconds per MoE layer and micro-batch per expert on the GPU: their
    /// grouped GEMMs' per-expert launches.
    pub moe_expert_launch: f64,
    /// Seconds per MoE layer and micro-batch when the router and its
    /// preprocessing are not CUDA graphs (`MoeDispatch::moe_graphs`).
    pub moe_router_launch: f64,
    /// Seconds per MoE layer and micro-batch the all-to-all dispatcher costs
    /// over a fused one (`MoeDispatch::moe_flex`).
    pub moe_alltoall_launch: f64,
}

pub const HOST: HostCosts = HostCosts {
    moe_expert_launch: 0.000136,
    moe_router_launch: 0.001355,
    moe_alltoall_launch: 0.003689,
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
        tp_hidden: 1.0,
        moe: 1.0,
        moe_layer_overhead: 0.0,
        host: HOST,
    };
    match generation {
        // Nothing fitted: an A100 runs its BF16 GEMMs at the efficiency
        // measured on one (`Gpu::bf16_gemm_measured`, 0.737: SimuMax's A100
        // GEMM benchmarks on the 8 published A100 runs' shapes), which the
        // A10G, with no measurement of its own, takes too. Those 8 rows
        // (torchtitan 2024, Korthikanti et al. 2022) only check it; an
        // end-to-end fit on them gave 0.717.
        Generation::Ampere => Efficiency {
            gemm: 0.737,
            // No Megatron MoE row: the experts run as fast as dense GEMMs
            // (1.0), which the two Hugging Face-stack MoE rows on A100 check.
            ..hand_set
        },
        // Ada has no calibration row: Hopper's fitted values, stated as uncertain.
        Generation::Ada => efficiency(Generation::Hopper),
        // Fitted on the dense H100 rows (NeMo 24.07, DGX Cloud recipes,
        // Megatron-Bridge, OLMo-core, NeMo AutoModel); the experts' speed
        // (0.83 of dense GEMMs on many tokens, beyond the measured fall with
        // few) and an MoE layer's fixed cost (1.72 ms per micro-batch, beside
        // the host's launch costs, `HOST`) on its Megatron MoE rows.
        Generation::Hopper => Efficiency {
            gemm: 0.609,
            fp8_gemm: 0.485,
            moe: 0.833,
            moe_layer_overhead: 0.001720,
            ..hand_set
        },
        // Fitted on torchtitan's rows of 500 W H100s; attention sustains
        // 0.64 of its kernel's benchmarked speed at full clocks.
        Generation::HopperPowerCapped => Efficiency {
            gemm: 0.480,
            fp8_gemm: 0.452,
            attention: 0.641,
            ..hand_set
        },
        // Fitted on 9 rows: 6 Megatron-Bridge 25.11 FP8 runs (B200, GB200,
        // GB300) and 3 DGX Cloud BF16 runs (GB200: Llama 3.1 405B on 128
        // and 256 GPUs, Nemotron-4 15B on 16). BF16 GEMM lands at 0.510 on
        // the GB200, GB300 and B300 rows; a B200 runs its BF16 GEMMs at the
        // efficiency measured on it instead (`Gpu::bf16_gemm_measured`, 0.486).
        // On 14 Megatron-Bridge MoE rows (25.09 to 26.02) the experts run at
        // 0.94 of dense GEMMs on many tokens (SimuMax's grouped-GEMM
        // microbenchmarks measure as fast) and an MoE layer costs 0.23 ms
        // per micro-batch whatever its size, beside the host's launch costs
        // (`HOST`, fitted on the same rows).
        //
        // On Blackwell the asynchronous backward TP collectives hide nothing
        // (`tp_hidden` 0, its bound), as SimuMax's maintainers found on B200
        // (TP communication counted exposed, MooreThreads/SimuMax#5). No
        // calibration row runs Blackwell TP without TP overlap; the 31 real
        // 8 x B200 Megatron-LM runs that do (b200_megatron_real.csv) would
        // choose 0 from either model alone (tests/b200_megatron_real.rs), so
        // they are in-sample for this one setting. Ampere's and Hopper's
        // Megatron rows without TP overlap (Korthikanti et al. 2022, NeMo
        // 24.07 175B and 340B) are calibrated hiding them all.
        Generation::Blackwell => Efficiency {
            tp_hidden: 0.0,
            gemm: 0.510,
            fp8_gemm: 0.480,
            moe: 0.936,
            moe_layer_overhead: 0.000233,
            kernel_overhead: 5e-6,
            ..hand_set
        },
    }
}
