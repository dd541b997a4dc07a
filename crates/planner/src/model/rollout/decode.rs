//! What one decode step of a vLLM engine costs beyond its FLOPs (#56): its
//! stream of weights and KV cache at a share of the HBM bandwidth, a fixed
//! time per layer, and at tensor parallelism two all-reduces a layer (after
//! the attention's output projection and the MLP's down projection, vLLM's
//! `RowParallelLinear`), timed by vLLM's own all-reduce as measured.
//!
//! The share and the time per layer come from two measured single-GPU
//! decode steps of Llama-3.1-8B at one concurrent request: 6.48 ms a token
//! on an H100 (3.35 TB/s; vLLM 0.21.0, InferenceBench's concurrency-sweep
//! recipe, yobitelcomm.github.io/bench) and 13.3 ms on an A100 40GB (1.555
//! TB/s; vLLM 0.23.0, johnmusgrave.com, "vLLM throughput-latency sweep on
//! NVIDIA A100"). Each step streams 16.06 GB of weights and ~0.15 GB of KV
//! cache; two GPUs of different bandwidth separate what scales with bytes
//! from what does not: bytes / (0.815 x bandwidth) + 32 layers x 17 us.
//! The tensor-parallel runs that check it are in tests/grpo.rs.

use crate::model::fabric::{Collective, Link};
use crate::model::hardware::Gpu;

/// The share of HBM bandwidth a decode step's stream of weights and KV
/// cache reaches (module docs: 0.815 from the H100 and A100 steps).
pub const STREAM_SHARE: f64 = 0.815;

/// Seconds a decoder layer costs a decode step whatever its bytes: its
/// ten-odd small kernels' (norms, rotary embedding, cache write, attention,
/// activation) shortest runs under vLLM's CUDA graphs (module docs: 17 us
/// from the H100 and A100 steps, 0.54 ms over Llama's 32 layers).
pub const LAYER_SECONDS: f64 = 17e-6;

/// vLLM's custom all-reduce on H100s over NVLink, measured: microseconds
/// for one all-reduce of 2 KiB to 4 MiB (512 to 1,048,576 fp32 elements)
/// over 2, 4 and 8 GPUs (sgl-project/sglang#2904, "unit test performance
/// in H100 (without cuda graph)", the `vllm` rows; test_trt_reduce.py times
/// 5,000 calls of `vllm_ops.all_reduce`).
const CUSTOM_AR_BYTES: [f64; 6] = [2048.0, 16384.0, 131072.0, 1048576.0, 2097152.0, 4194304.0];
const CUSTOM_AR_US: [(u64, [f64; 6]); 3] = [
    (2, [9.5, 8.8, 8.7, 12.9, 17.7, 26.6]),
    (4, [9.1, 8.5, 9.2, 20.6, 26.9, 40.2]),
    (8, [10.1, 9.3, 11.8, 24.1, 30.4, 45.0]),
];

/// vLLM's custom all-reduce serves messages up to 8 MiB
/// (`CustomAllreduce.max_size`); larger ones go to NCCL.
const CUSTOM_AR_MAX_BYTES: f64 = 8.0 * 1_048_576.0;

/// Seconds of one all-reduce of `bytes` over an engine's `tp` GPUs: vLLM's
/// custom all-reduce where the GPUs share NVLink and it serves the size
/// (the measured table, interpolated in bytes, its last slope beyond
/// 4 MiB; a TP between measured sizes takes the next one's row), else
/// NCCL's ring over the link (`Link::seconds`).
pub fn all_reduce_seconds(gpu: &Gpu, link: &Link, tp: u64, bytes: f64) -> f64 {
    if tp <= 1 {
        return 0.0;
    }
    let custom = CUSTOM_AR_US.iter().find(|(t, _)| *t >= tp);
    match custom {
        Some((_, us)) if gpu.nvlink_gbs_per_gpu.is_some() && bytes <= CUSTOM_AR_MAX_BYTES => {
            interpolate(bytes, us) * 1e-6
        }
        _ => link.seconds(Collective::AllReduce, tp as f64, bytes),
    }
}

/// `us` at `bytes` on the measured sizes: linear between them, the first
/// below them, the last segment's slope above them.
fn interpolate(bytes: f64, us: &[f64; 6]) -> f64 {
    let x = &CUSTOM_AR_BYTES;
    if bytes <= x[0] {
        return us[0];
    }
    let i = (1..x.len() - 1)
        .find(|&i| bytes <= x[i])
        .unwrap_or(x.len() - 1);
    us[i - 1] + (bytes - x[i - 1]) * (us[i] - us[i - 1]) / (x[i] - x[i - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table's own points come back, and between them a straight line:
    /// 4 GPUs at 1.5 MiB take 23.75 us, halfway from 20.6 to 26.9.
    #[test]
    fn the_measured_all_reduce_is_interpolated_in_bytes() {
        let h100 = crate::model::hardware::gpu("H100-80GB-SXM").unwrap();
        let link = Link::of_gpu(h100);
        let us = |tp, b| all_reduce_seconds(h100, &link, tp, b) * 1e6;
        assert!((us(4, 1048576.0) - 20.6).abs() < 1e-9);
        assert!((us(4, 1.5 * 1048576.0) - 23.75).abs() < 1e-9);
        assert!((us(8, 512.0) - 10.1).abs() < 1e-9);
        assert_eq!(us(1, 1048576.0), 0.0);
    }
}
