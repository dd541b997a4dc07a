//! GRPO's rollouts (#38): the vLLM engine TRL's `GRPOTrainer` runs beside
//! training on the same GPUs (`vllm_mode="colocate"`), what it holds and how
//! long it takes to generate a step's completions. From TRL 0.24.0's source
//! (docs/research/post_training/trl_facts.md §6-7):
//!
//! - every rank generates its own `mb x ga` rows once per optimizer step
//!   (`steps_per_generation = gradient_accumulation_steps`); an engine of
//!   `vllm_tensor_parallel_size` GPUs gathers its ranks' prompts;
//! - the engine is `LLM(gpu_memory_utilization = gen_share, max_num_seqs =
//!   its rows, max_num_batched_tokens = 4096)`: a BF16 copy of the weights
//!   and a KV cache inside `gen_share` of each GPU's memory;
//! - after every optimizer step the trained weights are copied into it
//!   (`_move_model_to_vllm`), gathered parameter by parameter under FSDP2.
//!
//! Decoding is bound by memory bandwidth: each of the `completion` steps
//! reads the engine's weights once and the running rows' KV cache (Pope et
//! al. 2022, "Efficiently Scaling Transformer Inference", §2), or by its
//! GEMMs at large batches, whichever is longer. Rows beyond what the KV
//! cache holds wait for a later wave.

use crate::architecture::{Architecture, ParameterCounts};
use crate::hardware::Gpu;
use crate::plan::{Plan, TrainingStage};

/// vLLM's tensor-parallel size: the smallest power of two that divides the
/// GPUs of the fast link (TRL needs the world to divide into engines) and
/// the attention heads (vLLM splits them evenly), and that
/// leaves half the share to the KV cache, or the largest such size when
/// none does (the engine may then hold too little cache: `runs`).
fn engine_tp(arch: &Architecture, weights: f64, pool: f64, gpus_per_node: u64) -> u64 {
    let sizes: Vec<u64> = (0..7)
        .map(|i| 1u64 << i)
        .filter(|t| gpus_per_node.max(1).is_multiple_of(*t) && arch.heads.is_multiple_of(*t))
        .collect();
    sizes
        .iter()
        .copied()
        .find(|t| weights / *t as f64 <= pool / 2.0)
        .or(sizes.last().copied())
        .unwrap_or(1)
}

/// The GPUs an engine may span: those that share the fast link (vLLM's
/// tensor parallelism runs inside it), at most the plan's.
pub fn engine_gpus(fabric: &crate::fabric::Fabric, layout: &crate::memory::Layout) -> u64 {
    fabric.gpus_per_domain.min(layout.gpus).max(1)
}

/// vLLM's share of each GPU's memory on a GRPO plan (`gen_share` of what
/// CUDA reports, which `gpu_memory_utilization` takes a fraction of), or 0.
pub fn pool_bytes(plan: &Plan, gpu: &Gpu) -> u64 {
    if plan.stage == TrainingStage::Grpo {
        (plan.rollout.gen_share * gpu.usable_bytes() as f64) as u64
    } else {
        0
    }
}

/// vLLM's own buffers inside its share besides weights and KV cache (the
/// profile run's activations at `max_num_batched_tokens = 4096` and the
/// sampler's logits): taken as 4096 tokens x hidden x 16 B plus the rows'
/// fp32 logits. vLLM measures them at start; this is an allowance.
fn engine_buffers(arch: &Architecture, rows: f64) -> f64 {
    4096.0 * arch.hidden as f64 * 16.0 + rows * arch.vocab as f64 * 4.0
}

/// Bytes of BF16 KV cache per token on each of an engine's `tp` GPUs: the
/// keys and values of every layer, their KV heads split over the GPUs and
/// copied where there are fewer heads than GPUs (`2 x layers x
/// ceil(kv_heads / tp) x head_dim x 2 B`); or MLA's compressed latent and
/// RoPE key, which vLLM keeps whole on every GPU (`layers x (kv_lora_rank +
/// qk_rope_dim) x 2 B`).
pub fn kv_bytes_per_token(arch: &Architecture, tp: u64) -> f64 {
    let l = arch.layers as f64;
    match &arch.mla {
        Some(m) => l * (m.kv_lora_rank + m.qk_rope_dim) as f64 * 2.0,
        None => {
            let heads = arch.kv_heads.max(1).div_ceil(tp.max(1));
            l * 2.0 * (heads * arch.kv_width() / arch.kv_heads.max(1)) as f64 * 2.0
        }
    }
}

/// One colocated vLLM engine of a GRPO plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VllmEngine {
    /// GPUs per engine (`vllm_tensor_parallel_size`, `engine_tp`).
    pub tp: u64,
    /// Its share of each GPU's memory, bytes.
    pub pool_bytes: f64,
    /// BF16 weights per GPU of the engine.
    pub weight_bytes: f64,
    /// Rows it generates per step (`mb x ga x tp`).
    pub rows: f64,
    /// Rows its KV cache holds at once at full length (at most `rows`).
    pub concurrent: f64,
}

impl VllmEngine {
    /// The engine of a GRPO plan on `gpu` with `gpus_per_node` GPUs a node,
    /// or `None` for another stage.
    pub fn of(
        arch: &Architecture,
        counts: &ParameterCounts,
        plan: &Plan,
        gpu: &Gpu,
        gpus_per_node: u64,
    ) -> Option<VllmEngine> {
        if plan.stage != TrainingStage::Grpo {
            return None;
        }
        let pool = pool_bytes(plan, gpu) as f64;
        let weights = counts.total as f64 * 2.0;
        let tp = engine_tp(arch, weights, pool, gpus_per_node);
        let rows = (plan.micro_batch * plan.grad_accum * tp) as f64;
        let per_gpu = weights / tp as f64;
        let row_kv = plan.seq as f64 * kv_bytes_per_token(arch, tp);
        let room = pool - per_gpu - engine_buffers(arch, rows) / tp as f64;
        Some(VllmEngine {
            tp,
            pool_bytes: pool,
            weight_bytes: per_gpu,
            rows,
            concurrent: (room / row_kv).floor().clamp(0.0, rows),
        })
    }

    /// Whether its KV cache holds one whole row (vLLM refuses to start
    /// otherwise: "not enough KV cache space").
    pub fn runs(&self) -> bool {
        self.concurrent >= 1.0
    }

    /// The smallest share (in steps of 0.05, at most 0.95) whose KV cache
    /// holds the engine's rows at once, or `None` past 0.95.
    pub fn share_for_all_rows(&self, arch: &Architecture, plan: &Plan, gpu: &Gpu) -> Option<f64> {
        let tp = self.tp as f64;
        let need = self.weight_bytes
            + engine_buffers(arch, self.rows) / tp
            + self.rows * plan.seq as f64 * kv_bytes_per_token(arch, self.tp);
        let share = (need / gpu.usable_bytes() as f64 * 20.0).ceil() / 20.0;
        (share <= 0.95).then_some(share.max(0.05))
    }
}

/// Seconds one engine takes to generate its rows: each wave's prefill (the
/// prompts' GEMMs and causal attention) and `completion` decode steps, each
/// the longer of reading the weights and the running rows' KV cache at
/// `memory_eff` of the HBM bandwidth, and its GEMMs at `gemm_eff` of the
/// BF16 peak.
pub fn generation_seconds(
    e: &VllmEngine,
    arch: &Architecture,
    counts: &ParameterCounts,
    plan: &Plan,
    gpu: &Gpu,
    (gemm_eff, memory_eff): (f64, f64),
) -> f64 {
    if !e.runs() {
        return 0.0;
    }
    let tp = e.tp as f64;
    let waves = (e.rows / e.concurrent).ceil();
    let n = e.rows / waves;
    let c = plan.rollout.completion as f64;
    let p = plan.rollout.prompt(plan.seq) as f64;
    let flops_per_token = 2.0 * counts.active as f64;
    let attention_width = arch.attention_width() as f64 * arch.layers as f64;
    let peak = gpu.bf16_dense_tflops.unwrap_or(1.0) * 1e12 * gemm_eff * tp;
    let bandwidth = gpu.mem_bw_tbs * 1e12 * memory_eff;
    // Causal attention over the prompt: 2 matmuls of p^2/2 keys x width.
    let prefill = n * (p * flops_per_token + 2.0 * p * p * attention_width) / peak;
    let mean_context = p + c / 2.0;
    let kv = n * mean_context * kv_bytes_per_token(arch, e.tp);
    let read = (e.weight_bytes + kv) / bandwidth;
    let compute = n * (flops_per_token + 4.0 * mean_context * attention_width) / peak;
    waves * (prefill + c * read.max(compute))
}
