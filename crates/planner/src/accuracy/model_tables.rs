//! The throughput model's inputs as docs/accuracy.md prints them, computed
//! and never typed (#36: no hand-written figure in the docs): the fitted
//! parameters per GPU generation, each instance's network figures and how
//! far they reproduce the published nccl-tests runs, and the attention
//! kernels' benchmarked efficiencies.

use crate::formats::table::read_csv;
use crate::model::fabric::{Collective, Fabric, Network};
use crate::model::hardware::{self, Generation};
use crate::model::kernels::{attention_efficiency, AttentionKernel};
use crate::model::throughput::{efficiency, HOST};

/// Published nccl-tests runs (instance, nodes, collective, size, bus
/// bandwidth, source), the network's evidence (tests/network.rs).
pub const NCCL_TESTS_CSV: &str = include_str!("../../data/nccl_tests.csv");

/// The generations with fitted parameters, as the docs list them.
const GENERATIONS: [Generation; 4] = [
    Generation::Ampere,
    Generation::Hopper,
    Generation::HopperPowerCapped,
    Generation::Blackwell,
];

/// The fitted parameters per generation.
pub fn parameters_markdown() -> String {
    let mut s = String::from(
        "\n#### Fitted parameters\n\n| generation | GEMM (BF16) | GEMM (FP8) | attention's sustained share | MoE experts | MoE layer, ms per micro-batch |\n|---|---:|---:|---:|---:|---:|\n",
    );
    // No FP8 tensor cores on Ampere; no Megatron MoE run on Ampere or the
    // capped H100s: those cells are not parameters.
    let cell = |x: f64, used: bool| {
        if used {
            format!("{x:.3}")
        } else {
            "—".into()
        }
    };
    for g in GENERATIONS {
        let e = efficiency(g);
        let moe = matches!(g, Generation::Hopper | Generation::Blackwell);
        // A generation whose BF16 GEMM efficiency is a GPU's measurement
        // (Ampere's, the A100's) has no fitted one.
        let measured_on = hardware::gpus()
            .iter()
            .find(|gpu| gpu.generation == g && gpu.bf16_gemm_measured == Some(e.gemm));
        let gemm = match measured_on {
            Some(gpu) => format!(
                "{:.3} (measured on {})",
                e.gemm,
                gpu.id.split('-').next().unwrap_or(gpu.id)
            ),
            None => format!("{:.3}", e.gemm),
        };
        s += &format!(
            "| {g:?} | {gemm} | {} | {:.3} | {} | {} |\n",
            cell(e.fp8_gemm, g != Generation::Ampere),
            e.attention,
            cell(e.moe, moe),
            cell(e.moe_layer_overhead * 1e3, moe)
        );
    }
    let measured: Vec<String> = hardware::gpus()
        .iter()
        .filter_map(|gpu| gpu.bf16_gemm_measured.map(|m| format!("{} {m:.3}", gpu.id)))
        .collect();
    s += &format!(
        "\nBF16 GEMM efficiencies measured on the GPU, which no fit moves (`Gpu::bf16_gemm_measured`): {}.\n",
        measured.join(", ")
    );
    s += &format!(
        "\nThe host's launch costs per MoE layer and micro-batch (every generation): {:.3} ms per local expert, {:.3} ms for a router outside CUDA graphs, {:.3} ms for the all-to-all dispatcher over a fused one.\n",
        HOST.moe_expert_launch * 1e3,
        HOST.moe_router_launch * 1e3,
        HOST.moe_alltoall_launch * 1e3
    );
    s
}

/// The bus bandwidth, GB/s, `network` gives one nccl-tests run on
/// `instance`'s GPUs: `bytes` is nccl-tests' size (the whole gathered
/// buffer of an all-gather, each rank's buffer otherwise), and busbw is
/// algbw x (n-1)/n, x 2 for an all-reduce.
pub fn modelled_busbw(
    instance: &str,
    network: &Network,
    (nodes, per_node): (u64, u64),
    c: Collective,
    bytes: f64,
) -> f64 {
    let Some(gpu) = hardware::instance(instance).and_then(|i| hardware::gpu(i.gpu)) else {
        return 0.0;
    };
    let fabric = Fabric::new(gpu, per_node, *network);
    let n = nodes * per_node;
    let ring = (n as f64 - 1.0) / n as f64;
    let factor = if c == Collective::AllReduce {
        2.0 * ring
    } else {
        ring
    };
    factor * bytes / fabric.seconds(c, n, 1, bytes) / 1e9
}

/// A collective by its nccl-tests name.
pub fn collective(name: &str) -> Option<Collective> {
    Some(match name {
        "all_gather" => Collective::AllGather,
        "reduce_scatter" => Collective::ReduceScatter,
        "all_reduce" => Collective::AllReduce,
        "alltoall" => Collective::AllToAll,
        _ => return None,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Each instance's network figures and, where it has published runs, how
/// far the model is from them.
pub fn network_markdown() -> String {
    let rows = read_csv(NCCL_TESTS_CSV);
    let mut s = String::from(
        "\n#### The network, per instance\n\n| instance | basis | ring share of line rate | ring step, µs | all-to-all share | published runs | median error | worst |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for i in hardware::instances() {
        let Some(n) = i.nccl else { continue };
        let errors: Vec<f64> = rows
            .iter()
            .filter(|r| r.get("instance") == i.instance_type && r.get("fit") == "yes")
            .filter_map(|r| {
                let c = collective(r.get("collective"))?;
                let (nodes, per_node) = (r.num("nodes")? as u64, r.num("gpus_per_node")? as u64);
                let network = Network::of(i);
                let shape = (nodes, per_node);
                let modelled =
                    modelled_busbw(i.instance_type, &network, shape, c, r.num("size_bytes")?);
                Some(100.0 * (modelled / r.num("busbw_gbs")? - 1.0))
            })
            .collect();
        let (med, worst) = match errors.len() {
            0 => ("—".to_string(), "—".to_string()),
            _ => (
                format!("{:.1}%", median(errors.iter().map(|e| e.abs()).collect())),
                format!(
                    "{:+.1}%",
                    errors
                        .iter()
                        .copied()
                        .fold(0.0, |a: f64, b| if b.abs() > a.abs() { b } else { a })
                ),
            ),
        };
        let basis = if n.measured {
            "measured"
        } else {
            "nearest instance's"
        };
        s += &format!(
            "| {} | {basis} | {:.3} | {:.1} | {:.3} | {} | {med} | {worst} |\n",
            i.instance_type,
            n.ring,
            n.step_us,
            n.alltoall,
            errors.len()
        );
    }
    s
}

/// The attention kernels' forward-and-backward efficiency at head size
/// 128 and a few sequence lengths, as kernels.rs interpolates them.
pub fn kernels_markdown() -> String {
    let seqs = [1024.0, 4096.0, 8192.0, 16384.0, 131072.0];
    let mut s = String::from(
        "\n#### Attention kernels (head size 128, causal, forward + backward, share of the 16-bit peak)\n\n| kernel | GPU | 1K | 4K | 8K | 16K | 128K |\n|---|---|---:|---:|---:|---:|---:|\n",
    );
    let kernels = [
        (
            AttentionKernel::Fa2,
            "FlashAttention-2",
            Generation::Ampere,
            "A100",
        ),
        (
            AttentionKernel::Fa2,
            "FlashAttention-2",
            Generation::Hopper,
            "H100",
        ),
        (AttentionKernel::Cudnn, "cuDNN", Generation::Hopper, "H100"),
        (
            AttentionKernel::Fa2,
            "FlashAttention-2",
            Generation::Blackwell,
            "B200",
        ),
        (
            AttentionKernel::Cudnn,
            "cuDNN",
            Generation::Blackwell,
            "B200",
        ),
    ];
    for (k, name, g, gpu) in kernels {
        let cells: Vec<String> = seqs
            .iter()
            .map(|&q| format!("{:.3}", attention_efficiency(k, g, 128, q)))
            .collect();
        s += &format!("| {name} | {gpu} | {} |\n", cells.join(" | "));
    }
    s
}
