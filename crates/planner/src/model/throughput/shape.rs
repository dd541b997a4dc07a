//! What every cost of one step reads: the plan, the layout, the hardware,
//! and the work one GPU does per micro-batch.

use super::fitted::Efficiency;
use crate::model::architecture::{Architecture, ParameterCounts};
use crate::model::fabric::Collective;
use crate::model::fabric::Fabric;
use crate::model::hardware::Gpu;
use crate::model::layout::Layout;
use crate::model::plan::Precision;
use crate::model::plan::{Stack, Training};
use crate::model::recipe::Recipe;
use crate::model::rules;
use crate::model::stage::{Stage, StageShape};

/// What every cost of one step reads: the plan, the layout, the hardware,
/// and the work one GPU does per micro-batch.
#[derive(Clone, Copy)]
pub(super) struct StepShape<'a> {
    /// The pipeline stage timed (the last, or the busiest other one), its
    /// layers and its tokens (`stage::StageShape`).
    pub(super) base: StageShape<'a>,
    pub(super) fabric: &'a Fabric,
    pub(super) eff: &'a Efficiency,
    /// Pipeline-, context- and expert-parallel degrees.
    pub(super) p: f64,
    pub(super) c: f64,
    pub(super) ep: f64,
    pub(super) h: f64,
    pub(super) q: f64,
    pub(super) kv: f64,
    /// GRPO: the engine generating the step's completions, and the trained
    /// weights copied into it after the step (`rollout_seconds`), seconds.
    pub(super) generation: f64,
    pub(super) refit: f64,
    /// Achievable HBM bandwidth, bytes/s.
    pub(super) bw: f64,
    /// The stack's flash-attention kernel's share of the 16-bit peak at this
    /// shape (kernels.rs), times the generation's sustained share of it.
    pub(super) attention_eff: f64,
    /// Dense peak of the plan's GEMM dtype, and of the matmuls low precision
    /// leaves in 16 bits (attention, LM head, router): BF16's, or FP32's in
    /// an FP32 plan, whose every matmul runs on CUDA cores (#23: attention
    /// at the BF16 rate gave FP32 plans MFU 1.6).
    pub(super) gemm_peak: f64,
    pub(super) wide_peak: f64,
    /// Bytes per element of those matmuls.
    pub(super) wide_bytes: f64,
    /// The Linear layers' peak, efficiency and bytes per element.
    pub(super) lin_peak: f64,
    pub(super) lin_eff: f64,
    pub(super) lin_bytes: f64,
    /// Bytes per element the stack's low-precision recipe moves to quantize
    /// a Linear's activations and gradients, and its weights, forward and
    /// backward (`quantize_bytes`).
    pub(super) quantize: (f64, f64),
    /// Micro-batches per step.
    pub(super) m: f64,
    /// What activation offloading sends to the host, and the host link's
    /// achievable bandwidth, bytes/s.
    pub(super) offload: crate::model::memory::Offload,
    pub(super) host_bw: f64,
    /// The share of the parameters that trains (`trainable_share`).
    pub(super) trainable: f64,
    /// The base's Linear weights are frozen (LoRA, QLoRA): their backward
    /// computes the input's gradient only (`gemm_passes`).
    pub(super) frozen: bool,
    /// The Linears that carry adapters, and their rank (LoRA, QLoRA).
    pub(super) adapted: crate::model::architecture::Adapted,
    pub(super) rank: f64,
    /// QLoRA: HBM bytes per base weight element of one dequantization
    /// (`QLORA_DEQUANTIZE_BYTES`), 0 otherwise.
    pub(super) dequantize: f64,
    /// The adapters' GEMMs: dense peak and bytes per element
    /// (`adapter_compute`).
    pub(super) adapter_peak: f64,
    pub(super) adapter_bytes: f64,
}

impl<'a> StepShape<'a> {
    /// The step of `recipe`'s rows; GRPO's generation and refit come from
    /// `rollout`'s (the plan as asked: its rows may be longer, `throughput`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        arch: &'a Architecture,
        counts: &'a ParameterCounts,
        recipe: &'a Recipe,
        layout: &'a Layout,
        gpu: &Gpu,
        fabric: &'a Fabric,
        eff: &'a Efficiency,
        rollout: &Recipe,
    ) -> Self {
        let gemm_peak = rules::dense_peak_flops(gpu, recipe.numerics.precision);
        // PyTorch keeps FP32 matmuls in FP32 (`allow_tf32` is off by default,
        // and the exported train.py leaves it so): no tensor cores.
        let (wide_peak, wide_bytes) = match recipe.numerics.precision {
            Precision::Fp32 => (gemm_peak, 4.0),
            _ => (rules::dense_peak_flops(gpu, Precision::Bf16), 2.0),
        };
        let (lin_peak, lin_eff, lin_bytes) = match recipe.numerics.precision {
            p if rules::low_precision_gemms(p, gpu) => (gemm_peak, eff.fp8_gemm, 1.0),
            _ => (wide_peak, eff.gemm, wide_bytes),
        };
        let c = layout.cp.max(1) as f64;
        let stage = Stage::Last.or_only(layout);
        let rollout = rollout_seconds(arch, counts, rollout, layout, gpu, (fabric, eff));
        StepShape {
            base: StageShape::new(arch, counts, recipe, layout, stage),
            fabric,
            eff,
            p: layout.pp.max(1) as f64,
            c,
            ep: layout.ep.max(1) as f64,
            h: arch.hidden as f64,
            q: arch.q_width() as f64,
            kv: arch.kv_width() as f64,
            generation: rollout.0,
            refit: rollout.1,
            bw: gpu.mem_bw_tbs * 1e12 * eff.memory,
            attention_eff: attention_efficiency(arch, recipe, layout, gpu) * eff.attention,
            gemm_peak,
            wide_peak,
            wide_bytes,
            lin_peak,
            lin_eff,
            lin_bytes,
            quantize: quantize_bytes(recipe, gpu),
            m: recipe.data.grad_accum.max(1) as f64,
            offload: crate::model::memory::offload(arch, counts, recipe, layout),
            host_bw: host_bandwidth(gpu),
            trainable: trainable_share(arch, counts, recipe),
            frozen: recipe.training.train != Training::Full,
            adapted: recipe.adapted(arch),
            rank: match recipe.training.train {
                Training::Full => 0.0,
                _ => recipe.lora.lora_rank as f64,
            },
            dequantize: match recipe.training.train {
                Training::Qlora => QLORA_DEQUANTIZE_BYTES,
                _ => 0.0,
            },
            adapter_peak: adapter_compute(recipe, gpu, (wide_peak, wide_bytes)).0,
            adapter_bytes: adapter_compute(recipe, gpu, (wide_peak, wide_bytes)).1,
        }
    }

    /// GEMMs per forward GEMM of a Linear in training: forward, the input's
    /// gradient and the weight's (3), or without the weight's where the
    /// weight is frozen (2): autograd computes no gradient for a tensor
    /// that does not require one (PyTorch's `mm` backward computes each
    /// operand's gradient only if `needs_input_grad`; TransformerEngine's
    /// `Linear` skips `wgrad` when the weight does not require grad).
    pub(super) fn gemm_passes(&self) -> f64 {
        if self.frozen {
            2.0
        } else {
            3.0
        }
    }

    /// Forward time of one GEMM `[m x k] @ [k x n]`: the roofline
    /// `max(flops / (peak * e), bytes / bandwidth)` plus the per-kernel cost
    /// `t0` that makes small GEMMs slow (SPEC §4).
    pub(super) fn gemm(&self, m: f64, n: f64, k: f64, peak: f64, e: f64, bytes: f64) -> f64 {
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
    pub(super) fn lin(&self, m: f64, n: f64, k: f64) -> f64 {
        let (act, weight) = self.quantize;
        let cast = (act * m * (k + n) + weight * k * n) / self.bw / 3.0;
        self.gemm(m, n, k, self.lin_peak, self.lin_eff, self.lin_bytes) + cast
    }

    /// One MLP (gated: gate + up, then down) of width `f` over `m` tokens.
    pub(super) fn mlp(&self, f: f64, m: f64) -> f64 {
        let up = if self.arch.mlp.is_gated() { 2.0 * f } else { f };
        self.lin(m, up / self.t, self.h) + self.lin(m, self.h, f / self.t)
    }
}

impl<'a> std::ops::Deref for StepShape<'a> {
    type Target = StageShape<'a>;

    fn deref(&self) -> &StageShape<'a> {
        &self.base
    }
}

/// Where the adapters' GEMMs run: in 16 bits under autocast (PEFT casts
/// the FP32 adapters' weights to the autocast dtype), but in FP32 in a pure
/// BF16 plan with FP32 adapters: with no autocast, PEFT's
/// `lora.Linear.forward` casts the input to the adapters' FP32
/// (`_cast_input_dtype`), so `A` and `B` run as FP32 GEMMs (PyTorch keeps
/// TF32 off for matmuls) on 4-byte operands.
fn adapter_compute(recipe: &Recipe, gpu: &Gpu, wide: (f64, f64)) -> (f64, f64) {
    let fp32_adapters =
        recipe.numerics.precision == Precision::Bf16Pure && recipe.adapter_bytes() == 4.0;
    if fp32_adapters {
        (rules::dense_peak_flops(gpu, Precision::Fp32), 4.0)
    } else {
        wide
    }
}

/// The share of the parameters that trains: under LoRA, the adapters on the
/// targeted Linears (`Architecture::lora_params`) over the model's weights.
pub(super) fn trainable_share(
    arch: &Architecture,
    counts: &ParameterCounts,
    recipe: &Recipe,
) -> f64 {
    match recipe.training.train {
        Training::Full => 1.0,
        _ => recipe.lora_params(arch) / counts.total as f64,
    }
}

/// The stack's flash-attention kernel's efficiency at the plan's shape: its
/// head size, and the sequence each kernel call sees (a context-parallel
/// ring computes `seq / cp` blocks; a sliding window bounds the keys).
pub(super) fn attention_efficiency(
    arch: &Architecture,
    recipe: &Recipe,
    layout: &Layout,
    gpu: &Gpu,
) -> f64 {
    use crate::model::kernels::{attention_efficiency, AttentionKernel};
    let g = gpu.generation;
    let seq = recipe.data.seq as f64 / layout.cp.max(1) as f64;
    let head_dim = arch.attention_width() / arch.heads.max(1);
    let kernel = match recipe.implementation.attention {
        crate::model::plan::Attention::Fa2 => AttentionKernel::Fa2,
        crate::model::plan::Attention::Cudnn => AttentionKernel::Cudnn,
        _ => AttentionKernel::of(recipe.implementation.stack, g),
    };
    attention_efficiency(kernel, g, head_dim, seq)
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
pub(super) fn quantize_bytes(recipe: &Recipe, gpu: &Gpu) -> (f64, f64) {
    let low = rules::low_precision_gemms(recipe.numerics.precision, gpu);
    let [fp8, mxfp8, nvfp4] = TORCHAO_QUANTIZE_BYTES;
    match (recipe.implementation.stack, recipe.numerics.precision) {
        (Stack::Torchtitan, Precision::Fp8) if low => (fp8, fp8 - 1.0),
        (Stack::Torchtitan, Precision::Mxfp8) if low => (mxfp8, mxfp8),
        (Stack::Torchtitan, Precision::Nvfp4) if low => (nvfp4, nvfp4),
        _ => (0.0, 0.0),
    }
}

/// GRPO's generation per step (`rollout`), and the refit: the copy of the
/// trained weights into the engine after the step. Under FSDP2
/// `full_tensor()` gathers each parameter's shards (fp32 under the
/// mixed-precision policy, BF16 for a LoRA base, which TRL gathers whole to
/// merge the adapters); a model-parallel policy (Megatron's TP, PP and
/// EP: NeMo RL, verl) all-gathers its BF16 shards over the model-parallel
/// ranks to make whole tensors (NeMo RL's `refit_policy_generation`); a
/// vLLM server receives each tensor from rank 0 (`server_sync_seconds`);
/// then vLLM's `load_weights` writes its BF16 copy.
pub(super) fn rollout_seconds(
    arch: &Architecture,
    counts: &ParameterCounts,
    recipe: &Recipe,
    layout: &Layout,
    gpu: &Gpu,
    (fabric, eff): (&Fabric, &Efficiency),
) -> (f64, f64) {
    let Some(e) =
        crate::model::rollout::VllmEngine::of(arch, counts, recipe, gpu, (fabric, layout))
    else {
        return (0.0, 0.0);
    };
    let generate = crate::model::rollout::generation_seconds(
        &e,
        (arch, counts),
        recipe,
        gpu,
        (&fabric.intra, eff.gemm),
    );
    let bandwidth = gpu.mem_bw_tbs * 1e12 * eff.memory;
    let load = 2.0 * e.weight_bytes / bandwidth;
    // As trained: fp32 master weights, or a LoRA base merged in BF16.
    let trained = counts.total as f64
        * if recipe.training.train == Training::Full {
            4.0
        } else {
            2.0
        };
    let model_parallel = layout.tp * layout.pp * layout.ep.max(1);
    let gather = if crate::model::memory::runs_fsdp2(recipe, layout) {
        let n = layout.shard.max(1);
        fabric.seconds(Collective::AllGather, n, 1, trained)
    } else if model_parallel > 1 {
        let bytes = counts.total as f64 * 2.0;
        fabric.seconds(Collective::AllGather, model_parallel, 1, bytes)
    } else {
        0.0
    };
    let send = crate::model::rollout::server_sync_seconds(&e, arch, fabric, trained);
    // vLLM's sleep mode (level 1): its weights go to pinned host memory after
    // generating and come back before the next (its KV cache is dropped);
    // under NeMo RL the policy's states make the same round trip, and the
    // reference's parameters come in for their pass.
    let sleeps = crate::model::rollout::engine_sleeps(recipe);
    let engine = if sleeps { 2.0 * e.weight_bytes } else { 0.0 };
    let swaps = crate::model::memory::HeldOnHost::of(arch, counts, recipe, layout).swapped();
    let wake = (engine + swaps) / host_bandwidth(gpu);
    (generate, load + gather + send + wake)
}

/// Bytes per second of copies between a GPU and host memory.
fn host_bandwidth(gpu: &Gpu) -> f64 {
    gpu.host_link_gbs.unwrap_or(PCIE_GEN5_GBS) * 1e9 * HOST_LINK_EFFICIENCY
}

/// Host-to-device copies reach 0.87 of the link's line rate: NVIDIA's
/// NVbandwidth blog measures 55.63 GB/s `host_to_device_memcpy_ce` on PCIe
/// Gen5 x16 (64 GB/s). Taken for Gen4 and NVLink-C2C too (not measured).
pub(super) const HOST_LINK_EFFICIENCY: f64 = 55.63 / 64.0;

/// PCIe Gen5 x16, GB/s per direction: a custom GPU's host link.
pub(super) const PCIE_GEN5_GBS: f64 = 64.0;

/// HBM bytes per base weight element QLoRA's dequantization moves each
/// time a frozen Linear is used (forward, recomputation, input gradient):
/// bitsandbytes' `dequantize_4bit` (`kDequantizeBlockwise`) reads the
/// packed NF4 weight (0.5 B) and its double-quantized absmax (one 8-bit
/// absmax per 64 weights and one FP32 constant per 256 of those: 0.016 B)
/// and writes the BF16 weight (2 B) that the GEMM then reads
/// (bitsandbytes `MatMul4Bit.forward` / `.backward`, `functional.py`).
pub const QLORA_DEQUANTIZE_BYTES: f64 = 0.5 + (1.0 + 4.0 / 256.0) / 64.0 + 2.0;

/// HBM bytes per element torchao's float8, MXFP8 and NVFP4 move to quantize
/// activations and gradients (`quantize_bytes`; float8's weights one less).
pub const TORCHAO_QUANTIZE_BYTES: [f64; 3] = [6.0, 9.6, 13.2];
