//! What can run: the layout and precision rules. The resolver reports a
//! plan that breaks one as an error (with its message, in resolve.rs); the
//! search offers no plan that breaks one; the instance comparison moves a
//! plan's precision to one the GPU runs (#34: each rule was written in two
//! or three of those places).

use crate::architecture::Architecture;
use crate::hardware::Gpu;
use crate::plan::Precision;

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
    use crate::hardware;

    /// Hand facts: Llama 3.1 8B has 32 query and 8 KV heads; A100 has no
    /// FP8 tensor cores, H100 has FP8 but no block scaling, B200 both;
    /// a p5 is one 8-GPU NVLink domain, a GB200 UltraServer's is 72 GPUs.
    #[test]
    fn rules_on_known_hardware_and_models() {
        let arch = &crate::architecture::preset("llama-3.1-8b").unwrap().arch;
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
            crate::fabric::Fabric::of(hardware::gpu(gpu).unwrap(), i, 72).gpus_per_domain
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
}
