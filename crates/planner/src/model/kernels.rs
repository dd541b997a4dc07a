//! Kernel efficiency by shape (#35): what a flash-attention kernel reaches,
//! forward and backward, by kernel, GPU architecture, head size and sequence
//! length, read from published kernel microbenchmarks
//! (data/attention_kernels.csv, each row with its source) and interpolated.
//! It replaces the one attention efficiency per GPU generation the model
//! used to fit to training runs.
//!
//! Efficiencies count FLOPs as the FlashAttention papers do (and as
//! `throughput::model_flops_per_token` does): `4 s^2 d h` forward, halved
//! under the causal mask, backward 2.5x forward; so a row is `3.5 x forward
//! FLOPs / (forward + backward time)` over the dense 16-bit peak.

use crate::model::hardware::Generation;
use crate::model::plan::Stack;

/// The attention kernels the stacks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttentionKernel {
    /// FlashAttention-2: what PyTorch's SDPA runs (its flash backend) up to
    /// torch 2.10, which prefers cuDNN only with a bundled cuDNN newer than
    /// 9.15 (pytorch `sdp_utils.cpp` `check_prefer_cudnn_attention`, after
    /// pytorch#138522 made cuDNN opt-in); the bundle's train.py pins torch 2.8.
    Fa2,
    /// cuDNN's fused attention: what TransformerEngine runs for Megatron on
    /// Hopper and Blackwell (FA3-class on H100, FA4-class on B200).
    Cudnn,
}

impl AttentionKernel {
    /// The kernel a benchmark row names (`fa2`, `cudnn`).
    fn from_key(key: &str) -> Option<AttentionKernel> {
        match key {
            "fa2" => Some(AttentionKernel::Fa2),
            "cudnn" => Some(AttentionKernel::Cudnn),
            _ => None,
        }
    }

    /// The kernel a stack runs by default on a generation: cuDNN's on
    /// Hopper and Blackwell for Megatron (TransformerEngine) and torchtitan
    /// (which puts SDPA's cuDNN backend first since pytorch/torchtitan#1000,
    /// March 2025); FlashAttention-2 on Ampere and Ada, and for the Hugging
    /// Face stack, whose train.py pins torch 2.8 (SDPA's flash backend first).
    pub fn of(stack: Stack, generation: Generation) -> AttentionKernel {
        let cudnn_gpu = matches!(
            generation,
            Generation::Hopper | Generation::HopperPowerCapped | Generation::Blackwell
        );
        if stack != Stack::Hf && cudnn_gpu {
            AttentionKernel::Cudnn
        } else {
            AttentionKernel::Fa2
        }
    }
}

/// The architecture whose benchmarks stand for a generation: Ada (no
/// published attention benchmark) runs FlashAttention-2's Ampere kernels.
/// The GPU architectures the kernel benchmarks name (`arch` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KernelArch {
    Ampere,
    Hopper,
    Blackwell,
}

impl KernelArch {
    fn from_key(key: &str) -> Option<KernelArch> {
        match key {
            "ampere" => Some(KernelArch::Ampere),
            "hopper" => Some(KernelArch::Hopper),
            "blackwell" => Some(KernelArch::Blackwell),
            _ => None,
        }
    }
}

fn arch(generation: Generation) -> KernelArch {
    match generation {
        Generation::Ampere | Generation::Ada => KernelArch::Ampere,
        Generation::Hopper | Generation::HopperPowerCapped => KernelArch::Hopper,
        Generation::Blackwell => KernelArch::Blackwell,
    }
}

/// The published benchmarks, compiled in.
const ATTENTION_CSV: &str = include_str!(concat!(env!("OUT_DIR"), "/attention_kernels.csv"));

/// One benchmarked curve: a kernel on an architecture at one head size,
/// its (sequence, efficiency) points in the file's order.
struct Curve {
    kernel: AttentionKernel,
    arch: KernelArch,
    head_dim: u64,
    points: Vec<(f64, f64)>,
}

/// The published benchmarks by curve, read once: the search times millions
/// of plans, and one pass over every point per plan cost a third of it.
fn curves() -> &'static [Curve] {
    static CURVES: std::sync::OnceLock<Vec<Curve>> = std::sync::OnceLock::new();
    CURVES.get_or_init(|| {
        let mut curves: Vec<Curve> = Vec::new();
        for l in ATTENTION_CSV.lines().skip(1) {
            let f: Vec<&str> = l.split(',').collect();
            let num = |i: usize| f.get(i).and_then(|v| crate::formats::decimal::parse_f64(v));
            let (Some(d), Some(seq), Some(e)) = (num(2), num(3), num(4)) else {
                continue;
            };
            let (Some(k), Some(a)) = (AttentionKernel::from_key(f[0]), KernelArch::from_key(f[1]))
            else {
                continue;
            };
            let d = d as u64;
            match curves
                .iter_mut()
                .find(|c| c.kernel == k && c.arch == a && c.head_dim == d)
            {
                Some(c) => c.points.push((seq, e)),
                None => curves.push(Curve {
                    kernel: k,
                    arch: a,
                    head_dim: d,
                    points: vec![(seq, e)],
                }),
            }
        }
        curves
    })
}

/// Fraction of the dense 16-bit peak the kernel reaches, forward and
/// backward, at `seq` tokens per sequence and head size `head_dim`:
/// interpolated linearly in log2 of the sequence between benchmarked
/// lengths (512 to 16K, and on B200 to 128K, where SimuMax measured
/// TransformerEngine's kernel; held at the ends), and between head sizes 64
/// and 128 (held beyond them).
pub fn attention_efficiency(
    kernel: AttentionKernel,
    generation: Generation,
    head_dim: u64,
    seq: f64,
) -> f64 {
    // The auto-plan asks this for every candidate it times, nearly always
    // with the arguments it gave last (one sequence, a few GPUs): the last
    // answer is kept. The curves never change, so it is the same figure.
    type Key = (AttentionKernel, Generation, u64, u64);
    thread_local! {
        static LAST: std::cell::Cell<Option<(Key, f64)>> = const { std::cell::Cell::new(None) };
    }
    let key = (kernel, generation, head_dim, seq.to_bits());
    if let Some((k, e)) = LAST.get() {
        if k == key {
            return e;
        }
    }
    let e = curve_efficiency(kernel, generation, head_dim, seq);
    LAST.set(Some((key, e)));
    e
}

/// `attention_efficiency`, computed.
fn curve_efficiency(
    kernel: AttentionKernel,
    generation: Generation,
    head_dim: u64,
    seq: f64,
) -> f64 {
    let (k, a) = (kernel, arch(generation));
    let x = seq.max(1.0);
    let curve = |d: u64| -> Option<f64> {
        let c = curves()
            .iter()
            .find(|c| c.head_dim == d && c.kernel == k && c.arch == a)?;
        interpolate(c.points.iter().copied(), x)
    };
    let (lo, hi) = (curve(64), curve(128));
    match (lo, hi) {
        (Some(lo), Some(hi)) => {
            let t = ((head_dim as f64 - 64.0) / 64.0).clamp(0.0, 1.0);
            lo + t * (hi - lo)
        }
        (Some(e), None) | (None, Some(e)) => e,
        (None, None) => 0.3,
    }
}

/// Piecewise-linear `y(log2 x)` through the points, held at the ends: the
/// nearest point at or below `x` and at or above it, found in one pass (an
/// edit's evaluation reads this for every layer shape, #34).
fn interpolate(pts: impl Iterator<Item = (f64, f64)>, x: f64) -> Option<f64> {
    let (mut below, mut above) = (None::<(f64, f64)>, None::<(f64, f64)>);
    for (px, py) in pts {
        if px <= x && below.is_none_or(|b| px > b.0) {
            below = Some((px, py));
        }
        if px >= x && above.is_none_or(|a| px < a.0) {
            above = Some((px, py));
        }
    }
    match (below, above) {
        (Some((x0, y0)), Some((x1, y1))) if x1 > x0 => {
            let (l0, l1) = (x0.log2(), x1.log2());
            Some(y0 + (y1 - y0) * (x.log2() - l0) / (l1 - l0))
        }
        (Some((_, y)), _) | (None, Some((_, y))) => Some(y),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One efficiency per kernel, architecture, head size and sequence:
    /// `interpolate` reads the nearest point either side, so a second at
    /// the same length would be ignored (the file's sources never agree).
    #[test]
    fn each_benchmark_point_is_listed_once() {
        let mut seen = std::collections::BTreeSet::new();
        for c in curves() {
            for (seq, _) in &c.points {
                let key = (
                    format!("{:?} {:?}", c.kernel, c.arch),
                    c.head_dim,
                    *seq as u64,
                );
                assert!(seen.insert(key.clone()), "{key:?} listed twice");
            }
        }
        // Every data row of the file is read.
        assert_eq!(seen.len(), ATTENTION_CSV.lines().skip(1).count());
    }

    /// FA2 on A100 at head dim 128, causal: 173 TFLOP/s at 4K and 189 at 16K
    /// of 312 (FA2 paper Fig. 4), so 8K interpolates to 182 / 312 exactly as
    /// measured there (0.583).
    #[test]
    fn a100_fa2_reads_the_published_bars() {
        let e = |s: f64| attention_efficiency(AttentionKernel::Fa2, Generation::Ampere, 128, s);
        assert!((e(4096.0) - 173.0 / 312.0).abs() < 1e-3);
        assert!((e(8192.0) - 182.0 / 312.0).abs() < 1e-3);
        // Beyond the benchmarks the curve is held, not extrapolated.
        assert_eq!(e(131072.0), e(16384.0));
        // Between 4K and 8K it lies between them.
        assert!(e(6000.0) > e(4096.0) && e(6000.0) < e(8192.0));
    }

    /// PyTorch's SDPA (FA2) runs at about a third of H100's peak at 8K,
    /// TransformerEngine's cuDNN near half (FA2 paper Fig. 7: 308 of 989;
    /// FA3 paper Figs. 5-6, cuDNN 9.1).
    #[test]
    fn stacks_run_their_own_kernels_on_hopper() {
        let sdpa = AttentionKernel::of(Stack::Hf, Generation::Hopper);
        let te = AttentionKernel::of(Stack::Megatron, Generation::Hopper);
        assert_eq!((sdpa, te), (AttentionKernel::Fa2, AttentionKernel::Cudnn));
        let fa2 = attention_efficiency(sdpa, Generation::Hopper, 128, 8192.0);
        let cudnn = attention_efficiency(te, Generation::Hopper, 128, 8192.0);
        assert!((fa2 - 308.0 / 989.0).abs() < 1e-3, "{fa2}");
        assert!(cudnn > 0.45 && cudnn < 0.5, "{cudnn}");
    }

    /// TransformerEngine's cuDNN kernel on B200 as SimuMax timed it
    /// (configs/system/b200_bf16_ceperm.json): a Llama 70B layer's 64 heads
    /// at 4K, forward 0.8715 and backward 0.7294 of peak counting dense
    /// FLOPs, so 3.5 / (2 / 0.8715 + 5 / 0.7294) = 0.383 counting causal
    /// ones (the mean over the GQA ratios measured); 16 heads at 32K,
    /// 3.5 / (2 / 1.1654 + 5 / 0.8717) = 0.470.
    #[test]
    fn b200_cudnn_reads_the_measured_kernel() {
        let te = AttentionKernel::of(Stack::Megatron, Generation::Blackwell);
        let e = |seq: f64| attention_efficiency(te, Generation::Blackwell, 128, seq);
        let by_hand = 3.5 / (2.0 / 0.8715 + 5.0 / 0.7294);
        assert!((e(4096.0) - by_hand).abs() < 1e-3, "{}", e(4096.0));
        let long = 3.5 / (2.0 / 1.1654 + 5.0 / 0.8717);
        assert!((e(32768.0) - long).abs() < 1e-3, "{}", e(32768.0));
        // Between the measured lengths, log-linear; beyond 128K, held.
        assert!(e(8192.0) > e(4096.0) && e(8192.0) < e(32768.0));
        assert_eq!(e(262144.0), e(131072.0));
    }
}
