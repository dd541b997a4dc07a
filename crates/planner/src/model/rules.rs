//! What can run: the layout and precision rules. The resolver reports a
//! plan that breaks one as an error (with its message, in resolve.rs); the
//! search offers no plan that breaks one; the instance comparison moves a
//! plan's precision to one the GPU runs (#34: each rule was written in two
//! or three of those places).

use crate::model::architecture::Architecture;
use crate::model::hardware::{Gpu, Instance};
use crate::model::layout::Stages;
use crate::model::plan::{Precision, Stack};

/// More than one node runs only on an instance SageMaker trains across
/// nodes (EFA).
pub fn nodes_run(instance: &Instance, nodes: u64) -> bool {
    nodes <= 1 || instance.multi_node_efa_training
}

/// Tensor parallelism stays inside one NVLink domain of `domain` GPUs (the
/// instance, or a GB200 UltraServer's 72).
pub fn tp_in_domain(tp: u64, domain: u64) -> bool {
    tp <= domain
}

/// Tensor parallelism splits the attention heads and the KV heads evenly.
pub fn tp_splits_heads(arch: &Architecture, tp: u64) -> bool {
    arch.heads.is_multiple_of(tp) && arch.kv_heads.is_multiple_of(tp)
}

/// Context parallelism splits the sequence evenly.
pub fn cp_splits_sequence(seq: u64, cp: u64) -> bool {
    seq.is_multiple_of(cp)
}

/// Expert parallelism splits the experts evenly (a dense model has none to
/// split: only EP 1).
pub fn ep_splits_experts(arch: &Architecture, ep: u64) -> bool {
    match &arch.moe {
        Some(m) => (m.experts as u64).is_multiple_of(ep),
        None => ep <= 1,
    }
}

/// TP x PP x CP ranks tile the GPUs: their product divides the GPU count.
pub fn degrees_tile(gpus: u64, tp: u64, pp: u64, cp: u64) -> bool {
    let product = tp * pp * cp;
    product <= gpus && gpus.is_multiple_of(product)
}

/// A hybrid shard group divides the data-parallel ranks.
pub fn shard_divides_dp(shard: u64, dp: u64) -> bool {
    shard >= 1 && shard <= dp && dp.is_multiple_of(shard)
}

/// The pipeline split a stack runs without explicit first/last counts:
/// torchtitan as evenly as the layers go (`generate_split_points`: any
/// degree up to one layer a stage), Megatron evenly or with the embedding
/// and loss as slots (`Stages::megatron`), else None.
pub fn pipeline_stages(stack: Stack, layers: u64, pp: u64, vp: u64) -> Option<Stages> {
    if stack == Stack::Torchtitan {
        (pp <= layers.max(1)).then(|| Stages::even(layers, pp))
    } else {
        Stages::megatron(layers, pp, vp)
    }
}

/// Why a GPU cannot compute in a precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsupported {
    /// FP8 (and the block-scaled formats) need FP8 tensor cores.
    NoFp8,
    /// MXFP8 and NVFP4 need Blackwell's block-scaled tensor cores.
    NoBlockScaling,
}

/// Why the GPU cannot compute in `precision`, or None where it can.
pub fn precision_unsupported(precision: Precision, gpu: &Gpu) -> Option<Unsupported> {
    if precision.is_low_precision() && !gpu.fp8_tensor_cores {
        Some(Unsupported::NoFp8)
    } else if matches!(precision, Precision::Mxfp8 | Precision::Nvfp4) && !gpu.fp4_tensor_cores {
        Some(Unsupported::NoBlockScaling)
    } else {
        None
    }
}

/// Whether the Linear layers' GEMMs run in the plan's low precision: FP8
/// and the block-scaled formats on FP8 tensor cores only.
pub fn low_precision_gemms(precision: Precision, gpu: &Gpu) -> bool {
    precision.is_low_precision() && gpu.fp8_tensor_cores
}

/// The exported train.py runs LoRA and QLoRA adapters in BF16 only.
pub fn adapters_run_in(precision: Precision, hf_adapters: bool) -> bool {
    !(hf_adapters && precision.is_low_precision())
}

/// The GPU's dense peak in FLOP/s for `precision`'s GEMMs, from the
/// datasheet figures in hardware.rs: a format the GPU lacks falls back to
/// the next wider it has (FP32 without a figure to 1/16 of BF16).
pub fn dense_peak_flops(gpu: &Gpu, precision: Precision) -> f64 {
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

/// `precision` where the GPU runs it, else the nearest it runs: FP8 on FP8
/// tensor cores, BF16 otherwise.
pub fn nearest_supported(precision: Precision, gpu: &Gpu) -> Precision {
    match precision_unsupported(precision, gpu) {
        None => precision,
        Some(_) if gpu.fp8_tensor_cores => Precision::Fp8,
        Some(_) => Precision::Bf16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::hardware;

    /// Hand facts: Llama 3.1 8B has 32 query and 8 KV heads; A100 has no
    /// FP8 tensor cores, H100 has FP8 but no block scaling, B200 both;
    /// a p5 is one 8-GPU NVLink domain, a GB200 UltraServer's is 72 GPUs.
    #[test]
    fn rules_on_known_hardware_and_models() {
        let arch = &crate::model::architecture::preset("llama-3.1-8b")
            .unwrap()
            .arch;
        assert!(tp_splits_heads(arch, 8) && !tp_splits_heads(arch, 16));
        assert!(ep_splits_experts(arch, 1) && !ep_splits_experts(arch, 2));
        assert!(cp_splits_sequence(8192, 4) && !cp_splits_sequence(8192, 3));
        assert!(
            degrees_tile(16, 2, 2, 2) && !degrees_tile(12, 8, 1, 1) && !degrees_tile(4, 8, 1, 1)
        );
        let gpu = |id| hardware::gpu(id).unwrap();
        let (a100, h100, b200) = (gpu("A100-80GB"), gpu("H100-80GB-SXM"), gpu("B200"));
        assert_eq!(
            precision_unsupported(Precision::Fp8, a100),
            Some(Unsupported::NoFp8)
        );
        assert_eq!(nearest_supported(Precision::Nvfp4, a100), Precision::Bf16);
        assert_eq!(
            precision_unsupported(Precision::Nvfp4, h100),
            Some(Unsupported::NoBlockScaling)
        );
        assert_eq!(nearest_supported(Precision::Mxfp8, h100), Precision::Fp8);
        assert_eq!(nearest_supported(Precision::Nvfp4, b200), Precision::Nvfp4);
        let domain = |instance, gpu| {
            let i = hardware::instance(instance).unwrap();
            crate::model::fabric::Fabric::of(hardware::gpu(gpu).unwrap(), i, 72).gpus_per_domain
        };
        let gb200 = "GB200 (B200 in NVL72)";
        assert_eq!(
            (
                domain("ml.p5.48xlarge", "H100-80GB-SXM"),
                domain("ml.p6e-gb200.36xlarge", gb200)
            ),
            (8, 72)
        );
    }

    /// Hand facts: Llama 3.1 8B's 32 layers over 3 stages: torchtitan
    /// splits 11/11/10 (`generate_split_points`; the planner holds its
    /// largest stage, 11, on every rank), Megatron neither evenly (32 % 3)
    /// nor with the embedding and loss as slots (34 % 3); over 2 stages
    /// both split 16/16. A hybrid group of 8 divides 16 ranks, of 6
    /// does not; a p4d trains across nodes, a g5.2xlarge does not.
    #[test]
    fn pipelines_shards_and_nodes() {
        let stages = |stack, pp| pipeline_stages(stack, 32, pp, 1).map(|s| s.per_rank(pp));
        assert_eq!(stages(Stack::Torchtitan, 3), Some(vec![11, 11, 11]));
        assert_eq!(stages(Stack::Megatron, 3), None);
        assert_eq!(stages(Stack::Megatron, 2), stages(Stack::Torchtitan, 2));
        assert_eq!(
            stages(Stack::Torchtitan, 33),
            None,
            "a stage without a layer"
        );
        assert!(shard_divides_dp(8, 16) && !shard_divides_dp(6, 16) && !shard_divides_dp(32, 16));
        let instance = |id| hardware::instance(id).unwrap();
        assert!(nodes_run(instance("ml.p4d.24xlarge"), 4));
        assert!(
            nodes_run(instance("ml.g5.2xlarge"), 1) && !nodes_run(instance("ml.g5.2xlarge"), 2)
        );
        assert!(tp_in_domain(8, 8) && !tp_in_domain(16, 8));
    }

    /// Datasheet peaks (hardware.json): H100 SXM 989.4 dense BF16 and 1978.9
    /// FP8 TFLOP/s, no FP4 (NVFP4 falls back to FP8); A100 has no FP8 (its
    /// BF16 312); B200 runs FP8 GEMMs on tensor cores, A100 does not.
    #[test]
    fn peaks_and_low_precision_gemms() {
        let gpu = |id| hardware::gpu(id).unwrap();
        let (a100, h100, b200) = (gpu("A100-80GB"), gpu("H100-80GB-SXM"), gpu("B200"));
        let tf = |g, p| dense_peak_flops(g, p) / 1e12;
        assert_eq!(tf(h100, Precision::Bf16), 989.4);
        assert_eq!(tf(h100, Precision::Nvfp4), 1978.9);
        assert_eq!(tf(a100, Precision::Fp8), 312.0);
        assert_eq!(tf(b200, Precision::Fp32), 75.0);
        assert!(low_precision_gemms(Precision::Fp8, b200));
        assert!(!low_precision_gemms(Precision::Fp8, a100));
        assert!(!low_precision_gemms(Precision::Bf16, b200));
        assert!(adapters_run_in(Precision::Bf16, true) && !adapters_run_in(Precision::Fp8, true));
        assert!(adapters_run_in(Precision::Fp8, false));
    }
}
