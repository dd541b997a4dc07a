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
//! With `gen_gpus` > 0 vLLM runs as a server instead (`vllm_mode="server"`,
//! `trl vllm-serve` on the first `gen_gpus` GPUs of a single node, at its
//! default `--gpu-memory-utilization 0.9`, split into `--data-parallel-size`
//! engines of `--tensor-parallel-size` GPUs): the main process gathers every
//! rank's prompts and the server generates them all; after each step rank 0
//! sends each trained tensor to it (`VLLMClient.update_named_param`: an
//! HTTP request, then an NCCL broadcast to the server's GPUs).
//!
//! Decoding is bound by memory bandwidth: each of the `completion` steps
//! reads the engine's weights once and the running rows' KV cache (Pope et
//! al. 2022, "Efficiently Scaling Transformer Inference", §2), or by its
//! GEMMs at large batches, whichever is longer. Rows beyond what the KV
//! cache holds wait for a later wave.

use crate::model::architecture::{Architecture, ParameterCounts};
use crate::model::fabric::{Fabric, Link};
use crate::model::hardware::Gpu;
use crate::model::layout::Layout;
use crate::model::plan::TrainingSetup;
use crate::model::recipe::Recipe;

pub mod decode;

/// Whether vLLM runs a tensor-parallel size of `t` on an engine of
/// `gpus` GPUs: `t` divides them (TRL builds its engines from consecutive
/// ranks) and the attention heads (`ModelConfig.verify_with_parallel_config`),
/// and splits the KV heads evenly or copies each to a whole number of GPUs
/// (`QKVParallelLinear`: `total_num_kv_heads % tp == 0`, else `tp %
/// total_num_kv_heads == 0`).
pub fn tp_runs(arch: &Architecture, t: u64, gpus: u64) -> bool {
    let kv = arch.kv_heads.max(1);
    t >= 1
        && gpus.max(1).is_multiple_of(t)
        && arch.heads.is_multiple_of(t)
        && (kv.is_multiple_of(t) || t.is_multiple_of(kv))
}

/// vLLM's tensor-parallel size on `gpus` GPUs: the user's (`Rollout::gen_tp`)
/// where it runs (`tp_runs`); else the smallest power of two that runs and
/// leaves half the share to the KV cache, or the largest such size when
/// none does (the engine may then hold too little cache: `runs`).
fn engine_tp(arch: &Architecture, asked: u64, (weights, pool): (f64, f64), gpus: u64) -> u64 {
    if asked > 0 && tp_runs(arch, asked, gpus) {
        return asked;
    }
    let sizes: Vec<u64> = (0..7)
        .map(|i| 1u64 << i)
        .filter(|t| tp_runs(arch, *t, gpus))
        .collect();
    sizes
        .iter()
        .copied()
        .find(|t| weights / *t as f64 <= pool / 2.0)
        .or(sizes.last().copied())
        .unwrap_or(1)
}

/// The GPUs a colocated engine may span: those that share the fast link
/// (vLLM's tensor parallelism runs inside it), at most the plan's.
pub fn engine_gpus(fabric: &Fabric, layout: &Layout) -> u64 {
    fabric.gpus_per_domain.min(layout.gpus).max(1)
}

/// vLLM's pipeline-parallel size (`pipeline_parallel_size`): 1 where the
/// engine's TP holds the weights in half the share; else, where TP spans
/// the fast link, the smallest power of two of stages, one fast-link
/// domain each, that does (NeMo RL and verl run vLLM's PP across nodes for
/// the policies one node cannot hold), at most `stages` and a layer a
/// stage; the largest such when none does.
fn engine_pp(arch: &Architecture, weights_per_tp: f64, pool: f64, stages: u64) -> u64 {
    let most = stages.min(arch.layers).max(1);
    let mut pp = 1;
    while weights_per_tp / pp as f64 > pool / 2.0 && pp * 2 <= most {
        pp *= 2;
    }
    pp
}

/// Whether vLLM runs `pp` pipeline stages of `tp` GPUs colocated on
/// `gpus` training GPUs: the engines tile them (each engine takes `tp x pp`
/// consecutive ranks) and every stage holds a layer at least.
pub fn pp_runs(arch: &Architecture, (tp, pp): (u64, u64), gpus: u64) -> bool {
    pp >= 1 && pp <= arch.layers && gpus.is_multiple_of(tp.max(1) * pp)
}

/// Rows a step generates in all: every data-parallel rank's `mb x ga`
/// (TRL's `steps_per_generation = gradient_accumulation_steps`; NeMo RL's
/// and verl's global batch of prompts times their generations). Tensor,
/// pipeline and context-parallel ranks share their rows.
fn step_rows(recipe: &Recipe, layout: &Layout) -> f64 {
    (recipe.data.micro_batch * recipe.data.grad_accum * layout.dp.max(1)) as f64
}

/// `trl vllm-serve`'s `--gpu-memory-utilization` default (TRL 0.24.0
/// `trl/scripts/vllm_serve.py`), which grpo.py keeps.
pub const SERVER_SHARE: f64 = 0.9;

/// Seconds per tensor sent to a vLLM server besides its bytes: one HTTP
/// request on a kept-alive connection and an NCCL barrier
/// (`update_named_param`). An allowance, not measured.
const SERVER_REQUEST_SECONDS: f64 = 1e-3;

/// The GPUs of a GRPO plan's vLLM server, or 0 when vLLM is colocated (or
/// the plan is not GRPO). `Err` carries the nearest count that runs: a
/// server runs beside training on one node, on fewer than its GPUs
/// (grpo.py starts both there; several nodes keep vLLM colocated).
pub fn server_gpus(training: &TrainingSetup, gpus_per_node: u64, nodes: u64) -> Result<u64, u64> {
    let k = training.rollout.gen_gpus;
    if !training.stage.generates() || k == 0 {
        return Ok(0);
    }
    let gpn = gpus_per_node.max(1);
    match nodes {
        _ if nodes > 1 || gpn < 2 => Err(0),
        _ if k < gpn => Ok(k),
        _ => Err(gpn / 2),
    }
}

/// Whether a colocated engine sleeps while training runs (level 1: its
/// weights to pinned host memory, its KV cache dropped) and wakes to
/// generate: TRL's `vllm_enable_sleep_mode` (`Rollout::sleep`), and always
/// under NeMo RL, which the Megatron stack's GRPO plans (vLLM built with
/// `enable_sleep_mode=True`, `sleep(level=1)` after every generation:
/// nemo_rl/models/generation/vllm/vllm_worker.py).
pub fn engine_sleeps(recipe: &Recipe) -> bool {
    let r = &recipe.training;
    r.stage.generates() && r.rollout.gen_gpus == 0 && (r.rollout.sleep || states_offloaded(recipe))
}

/// Whether the policy's states leave the GPU while vLLM generates: NeMo
/// RL's colocated Megatron worker moves its optimizer states and parameters
/// to host memory and frees its gradient buffers before vLLM's KV cache
/// wakes (`offload_before_refit`, `offload_after_refit`), and brings them
/// back for the logprob passes and training (`prepare_for_lp_inference`,
/// `prepare_for_training`); TRL keeps them.
pub fn states_offloaded(recipe: &Recipe) -> bool {
    let r = &recipe.training;
    r.stage.generates()
        && r.rollout.gen_gpus == 0
        && recipe.implementation.stack == crate::model::plan::Stack::Megatron
}

/// vLLM's share of each training GPU's memory on a GRPO plan (`gen_share`
/// of what CUDA reports, which `gpu_memory_utilization` takes a fraction
/// of), or 0 (another stage, or vLLM on its own GPUs).
pub fn pool_bytes(recipe: &Recipe, gpu: &Gpu) -> u64 {
    if recipe.training.stage.generates() && recipe.training.rollout.gen_gpus == 0 {
        (recipe.training.rollout.gen_share * gpu.usable_bytes() as f64) as u64
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

impl crate::model::job::Job {
    /// BF16 weights per GPU of its vLLM engine (0 without one): what sleep
    /// mode backs up in host memory.
    pub fn engine_weight_bytes(&self) -> f64 {
        let placement = (&self.fabric, &self.layout);
        VllmEngine::of(&self.arch, &self.counts, &self.recipe, &self.gpu, placement)
            .map_or(0.0, |e| e.weight_bytes)
    }
}

/// One vLLM engine of a GRPO plan: colocated with training, or one of a
/// server's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VllmEngine {
    /// Tensor-parallel GPUs per stage (`vllm_tensor_parallel_size`, `engine_tp`).
    pub tp: u64,
    /// Pipeline stages across nodes (`engine_pp`): the engine has `tp x pp` GPUs.
    pub pp: u64,
    /// Engines generating at once: one per `tp x pp` training GPUs
    /// colocated, the server's `--data-parallel-size` otherwise.
    pub engines: u64,
    /// GPUs of the vLLM server (0: colocated).
    pub server_gpus: u64,
    /// Its share of each GPU's memory, bytes.
    pub pool_bytes: f64,
    /// BF16 weights per GPU of the engine.
    pub weight_bytes: f64,
    /// Rows it generates per step: its share of the step's rows (`step_rows`).
    pub rows: f64,
    /// Rows its KV cache holds at once at full length (at most `rows`).
    pub concurrent: f64,
}

impl VllmEngine {
    /// The engine of a GRPO plan on `gpu` whose training runs on `layout`,
    /// or `None` for another stage. `layout.gpus` are the training GPUs.
    pub fn of(
        arch: &Architecture,
        counts: &ParameterCounts,
        recipe: &Recipe,
        gpu: &Gpu,
        placement: (&Fabric, &Layout),
    ) -> Option<VllmEngine> {
        Self::placed(
            arch,
            counts,
            recipe,
            gpu,
            placement,
            recipe.training.rollout.gen_gpus,
        )
    }

    /// The engine with `server` GPUs of a vLLM server (0: colocated), as if
    /// the plan's `gen_gpus` were that: the search and the resolver's fix
    /// try counts without copying the plan.
    pub fn placed(
        arch: &Architecture,
        counts: &ParameterCounts,
        recipe: &Recipe,
        gpu: &Gpu,
        (fabric, layout): (&Fabric, &Layout),
        server: u64,
    ) -> Option<VllmEngine> {
        if !recipe.training.stage.generates() {
            return None;
        }
        let weights = counts.total as f64 * 2.0;
        let asked = recipe.training.rollout.gen_tp;
        let (pool, tp, pp, engines);
        if server == 0 {
            pool = recipe.training.rollout.gen_share * gpu.usable_bytes() as f64;
            let domain = engine_gpus(fabric, layout);
            tp = engine_tp(arch, asked, (weights, pool), domain);
            // The user's stages where they run; else stages only once TP
            // spans the fast link's GPUs.
            let stages = if tp == domain { layout.gpus / tp } else { 1 };
            let asked = recipe.training.rollout.gen_pp;
            pp = match asked > 0 && pp_runs(arch, (tp, asked), layout.gpus) {
                true => asked,
                false => engine_pp(arch, weights / tp as f64, pool, stages),
            };
            engines = (layout.gpus / (tp * pp)).max(1);
        } else {
            pool = SERVER_SHARE * gpu.usable_bytes() as f64;
            tp = engine_tp(arch, asked, (weights, pool), server);
            pp = 1;
            engines = (server / tp).max(1);
        }
        let rows = (step_rows(recipe, layout) / engines as f64).ceil();
        let per_gpu = weights / (tp * pp) as f64;
        let row_kv = recipe.data.seq as f64 * kv_bytes_per_token(arch, tp) / pp as f64;
        let room = pool - per_gpu - engine_buffers(arch, rows) / tp as f64;
        Some(VllmEngine {
            tp,
            pp,
            engines,
            server_gpus: server,
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
    pub fn share_for_all_rows(
        &self,
        arch: &Architecture,
        recipe: &Recipe,
        gpu: &Gpu,
    ) -> Option<f64> {
        let tp = self.tp as f64;
        let need = self.weight_bytes
            + engine_buffers(arch, self.rows) / tp
            + self.rows * recipe.data.seq as f64 * kv_bytes_per_token(arch, self.tp)
                / self.pp as f64;
        let share = (need / gpu.usable_bytes() as f64 * 20.0).ceil() / 20.0;
        (share <= 0.95).then_some(share.max(0.05))
    }
}

/// Seconds one engine takes to generate its rows: each wave's prefill (the
/// prompts' GEMMs and causal attention) and `completion` decode steps (the
/// wave waits for its longest row), the longer of reading the weights every
/// step and the rows' KV cache at the decode stream's share of the HBM
/// bandwidth (`decode::STREAM_SHARE`) and their GEMMs at the efficiency's
/// share of the BF16 peak, plus what each step costs beyond its bytes
/// (`decode_step_overheads`); the rows' tokens are their mean length's
/// (`Rollout::mean_completion`). Pipeline stages run one after another
/// within a step, so a step reads every stage's weights: vLLM's PP holds a
/// policy one node cannot, and decodes no faster. (A MoE engine reads every
/// expert: at RL's batches nearly all are chosen, 87 % of DeepSeek-V3's 256
/// at 64 rows with uniform routing.)
pub fn generation_seconds(
    e: &VllmEngine,
    (arch, counts): (&Architecture, &ParameterCounts),
    recipe: &Recipe,
    gpu: &Gpu,
    (link, gemm_eff): (&Link, f64),
) -> f64 {
    if !e.runs() {
        return 0.0;
    }
    let tp = e.tp as f64;
    let waves = (e.rows / e.concurrent).ceil();
    let n = e.rows / waves;
    let rollout = &recipe.training.rollout;
    let (c, m) = (rollout.completion as f64, rollout.mean_completion() as f64);
    let p = rollout.prompt(recipe.data.seq) as f64;
    let flops_per_token = 2.0 * counts.active as f64;
    let attention_width = arch.attention_width() as f64 * arch.layers as f64;
    let peak = gpu.bf16_dense_tflops.unwrap_or(1.0) * 1e12 * gemm_eff * tp;
    let bandwidth = gpu.mem_bw_tbs * 1e12 * decode::STREAM_SHARE;
    // Causal attention over the prompt: 2 matmuls of p^2/2 keys x width.
    let prefill = n * (p * flops_per_token + 2.0 * p * p * attention_width) / peak;
    // The wave decodes until its longest row ends at `c` (every step reads
    // the weights); its rows make `n x m` tokens, each reading its context's
    // KV cache and doing its GEMMs: with `m = c` the per-step roofline.
    let mean_context = p + m / 2.0;
    let kv = n * m * mean_context * kv_bytes_per_token(arch, e.tp);
    let read = (c * e.weight_bytes * e.pp as f64 + kv) / bandwidth;
    let compute = n * m * (flops_per_token + 4.0 * mean_context * attention_width) / peak;
    let overheads = decode_step_overheads(e, arch, gpu, link, (n * p, n * m / c));
    waves * (prefill + read.max(compute) + c * overheads.0 + overheads.1)
}

/// What a decode step costs beyond its bytes and FLOPs, and what the
/// prefill's all-reduces cost, for a wave of `prompt_tokens` in all and
/// `running` rows on average per step: every layer's fixed time
/// (`decode::LAYER_SECONDS`), and at tensor parallelism two all-reduces a
/// layer of the running rows' hidden states in BF16
/// (`decode::all_reduce_seconds`), every stage's layers in turn.
fn decode_step_overheads(
    e: &VllmEngine,
    arch: &Architecture,
    gpu: &Gpu,
    link: &Link,
    (prompt_tokens, running): (f64, f64),
) -> (f64, f64) {
    use decode::{all_reduce_seconds, LAYER_SECONDS};
    let layers = arch.layers as f64;
    let row = arch.hidden as f64 * 2.0;
    let fixed = layers * LAYER_SECONDS;
    let step = 2.0 * layers * all_reduce_seconds(gpu, link, e.tp, running * row);
    let prefill = 2.0 * layers * all_reduce_seconds(gpu, link, e.tp, prompt_tokens * row);
    (fixed + step, prefill)
}

/// Seconds a server takes to receive the trained weights after a step:
/// rank 0 sends every tensor of the model (`state_dict`, `bytes` in all)
/// to the server's GPUs over the node's NVLink, one request per tensor.
pub fn server_sync_seconds(
    e: &VllmEngine,
    arch: &Architecture,
    fabric: &Fabric,
    bytes: f64,
) -> f64 {
    if e.server_gpus == 0 {
        return 0.0;
    }
    let bandwidth = fabric
        .intra
        .bus_bandwidth(crate::model::fabric::Collective::AllGather);
    bytes / bandwidth + state_dict_tensors(arch) as f64 * SERVER_REQUEST_SECONDS
}

/// Tensors in a decoder's `state_dict`: per layer the attention's four
/// projections (and q, k and v biases), two norms and either the MLP's
/// three matrices or a router and three per expert (a shared expert's
/// three too); the embedding, the final norm and an untied head.
pub fn state_dict_tensors(arch: &Architecture) -> u64 {
    let mlp = match &arch.moe {
        Some(m) => 1 + 3 * u64::from(m.experts + m.shared),
        None => 3,
    };
    let biases = if arch.qkv_bias { 3 } else { 0 };
    arch.layers * (4 + biases + 2 + mlp) + 2 + u64::from(!arch.tied)
}
