//! The plan: every input of SPEC §2, and its URL query form (SPEC §8).
//!
//! One parser serves the page, the CLI and the tests. Decoding is forgiving:
//! an unknown key is ignored with a notice, a bad value keeps its default with
//! a notice naming the key; nothing panics on any input.

use crate::text::{Arg, Phrase, Text};
use serde::Serialize;
use std::fmt::Display;

/// Version of the query-string schema (`v=`).
pub const SCHEMA_VERSION: u32 = 1;

/// Enums whose values appear in the URL: a stable key per variant.
macro_rules! keyed_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $key:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        pub enum $name { $($(#[$vm])* $variant),+ }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The value used in the URL.
            pub fn key(self) -> &'static str {
                match self { $($name::$variant => $key),+ }
            }
            pub fn from_key(s: &str) -> Option<Self> {
                match s { $($key => Some($name::$variant),)+ _ => None }
            }
            /// The accepted values, for messages.
            pub fn keys() -> String {
                [$($key),+].join(", ")
            }
        }
    };
}

keyed_enum!(
    /// Numeric format of weights, gradients and GEMMs (SPEC §2, §3.2).
    Precision {
        /// Everything in fp32.
        Fp32 => "fp32",
        /// BF16 mixed precision with fp32 master weights (HF `bf16=True`, Megatron).
        Bf16 => "bf16",
        /// Weights, grads and optimizer states all bf16.
        Bf16Pure => "bf16-pure",
        /// TransformerEngine FP8 (delayed or current scaling), embedding/norms/LM head in BF16.
        Fp8 => "fp8",
        /// MXFP8 block scaling (Blackwell).
        Mxfp8 => "mxfp8",
        /// NVFP4 (Blackwell).
        Nvfp4 => "nvfp4",
    }
);

/// What runs a plan's exported launch code (`Plan::engine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// The bundle's `train.py`: Hugging Face Transformers, DDP or FSDP2.
    TrainPy,
    /// The bundle's Megatron-Bridge launcher, in the NeMo Framework container.
    MegatronBridge,
    /// The bundle's `grpo.py`: TRL's `GRPOTrainer` with vLLM colocated.
    Grpo,
    /// The user's own entry script, which the bundle does not carry.
    OwnEntry,
}

impl Engine {
    /// The sentence the page shows above the launch code.
    pub fn text(self) -> crate::text::Text {
        match self {
            Engine::TrainPy => crate::text::Text::RunsOnTrainPy,
            Engine::MegatronBridge => crate::text::Text::RunsOnMegatronBridge,
            Engine::Grpo => crate::text::Text::RunsOnGrpo,
            Engine::OwnEntry => crate::text::Text::RunsOnOwnEntry,
        }
    }
}

/// The bundle's Megatron-Bridge launcher (crates/planner/bundle/), which a
/// Megatron plan's launch code starts (`megatron_bridge` writes its settings).
pub const MEGATRON_BRIDGE_SCRIPT: &str = "pretrain_megatron_bridge.py";

/// The bundle's GRPO script (crates/planner/bundle/), which a GRPO plan on
/// the Hugging Face stack starts: TRL's `GRPOTrainer` (#38).
pub const GRPO_SCRIPT: &str = "grpo.py";

/// Layers NVFP4 recipes keep in BF16 for numerical safety: about 15 % of
/// them (NVIDIA's NVFP4 pretraining recipe, arXiv 2509.25149, keeps ~15 %
/// of the linear layers in BF16; torchtitan's nvfp4.md the last 5 of 32
/// and the LM head, which the model keeps in 16 bits anyway).
pub const NVFP4_BF16_LAYER_SHARE: f64 = 0.15;

impl Precision {
    /// GEMMs run in an 8-bit or 4-bit format.
    pub fn is_low_precision(self) -> bool {
        matches!(self, Precision::Fp8 | Precision::Mxfp8 | Precision::Nvfp4)
    }
}

keyed_enum!(
    /// The Linear layers LoRA adapts (PEFT's `target_modules`).
    LoraTargets {
        /// Every Linear of the decoder layers (PEFT's `all-linear`): q, k,
        /// v, o and the MLP's matrices.
        AllLinear => "all-linear",
        /// The attention projections q, k, v and o.
        Attention => "attention",
        /// q and v: PEFT's default for Llama, Mistral, Mixtral, Qwen2/3 and
        /// Gemma (peft/utils/constants.py,
        /// `TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`).
        QV => "q,v",
    }
);

keyed_enum!(
    /// The LoRA adapters' dtype.
    LoraDtype {
        /// FP32: PEFT casts adapters to it by default
        /// (`get_peft_model(..., autocast_adapter_dtype=True)`).
        Fp32 => "fp32",
        /// The base's BF16 (`autocast_adapter_dtype=False`).
        Bf16 => "bf16",
    }
);

impl LoraTargets {
    /// The adapted layers, by kind.
    pub fn adapted(self) -> crate::architecture::Adapted {
        let (attention, mlp) = match self {
            LoraTargets::AllLinear => (true, true),
            LoraTargets::Attention => (true, false),
            LoraTargets::QV => (false, false),
        };
        crate::architecture::Adapted {
            q: true,
            k: attention,
            v: true,
            o: attention,
            mlp,
        }
    }
}

impl Plan {
    /// Sequences per GPU per micro-batch: `mb` samples, two rows each for a
    /// DPO pair (the memory and the step run both at once); GRPO's `mb`
    /// counts rows (TRL's `per_device_train_batch_size` counts completions).
    pub fn rows_per_micro_batch(&self) -> u64 {
        match self.stage {
            TrainingStage::Dpo => self.micro_batch.saturating_mul(2),
            TrainingStage::Sft | TrainingStage::Grpo => self.micro_batch,
        }
    }

    /// Bytes of one adapter parameter: FP32 unless the plan keeps the
    /// adapters in a BF16 base's dtype.
    pub fn adapter_bytes(&self) -> f64 {
        let bf16 = self.lora_dtype == LoraDtype::Bf16 && self.precision != Precision::Fp32;
        if bf16 {
            2.0
        } else {
            4.0
        }
    }

    /// The LoRA adapters' parameters on this model (`lora_rank` on the
    /// `lora_targets` Linears of every layer).
    /// Tokens one sample puts through the model: a sequence, both rows of
    /// a DPO pair, or a GRPO prompt's `generations` rows.
    pub fn tokens_per_sample(&self) -> u64 {
        let rows = match self.stage {
            TrainingStage::Sft => 1,
            TrainingStage::Dpo => 2,
            TrainingStage::Grpo => self.rollout.generations,
        };
        self.seq.saturating_mul(rows)
    }

    /// Whether a frozen reference model runs beside the policy: DPO's, and
    /// GRPO's when its KL penalty is on (TRL loads none at `beta = 0`).
    pub fn has_reference(&self) -> bool {
        match self.stage {
            TrainingStage::Sft => false,
            TrainingStage::Dpo => true,
            TrainingStage::Grpo => self.rollout.beta > 0.0,
        }
    }

    /// Forwards without gradients per micro-batch before the update:
    /// DPO's reference; GRPO's old policy (TRL computes it whenever vLLM
    /// generates, for `vllm_importance_sampling_correction`, on by default)
    /// and its reference when `beta > 0`.
    pub fn scoring_forwards(&self) -> u64 {
        match self.stage {
            TrainingStage::Sft => 0,
            TrainingStage::Dpo => 1,
            TrainingStage::Grpo => 1 + u64::from(self.has_reference()),
        }
    }

    /// Tokens per micro-batch whose logits the loss takes: every row's, or
    /// GRPO's completions only (TRL's `logits_to_keep = C + 1`).
    pub fn logit_tokens(&self) -> u64 {
        match self.stage {
            TrainingStage::Grpo => self
                .micro_batch
                .saturating_mul(self.rollout.completion.min(self.seq) + 1),
            _ => self.rows_per_micro_batch().saturating_mul(self.seq),
        }
    }

    /// The adapters' `lora_alpha`: the plan's, or twice the rank.
    pub fn lora_alpha_or_default(&self) -> u64 {
        self.lora_alpha
            .unwrap_or_else(|| self.lora_rank.saturating_mul(2))
    }

    pub fn lora_params(&self, arch: &crate::architecture::Architecture) -> f64 {
        arch.lora_params(self.lora_rank, self.lora_targets.adapted())
    }
}

keyed_enum!(
    /// Optimizer (SPEC §3.2).
    Optimizer {
        /// AdamW, fused kernel (HF Trainer's default `adamw_torch_fused`).
        Adamw => "adamw",
        /// AdamW with the multi-tensor `foreach` kernel: a parameter-sized temporary.
        AdamwForeach => "adamw-foreach",
        Adamw8bit => "adamw8bit",
        Adafactor => "adafactor",
        Sgd => "sgd",
    }
);

keyed_enum!(
    /// Attention kernel.
    Attention {
        /// A fused flash kernel, O(s) memory: the one the stack runs by
        /// default (`kernels::AttentionKernel::of`).
        Flash => "flash",
        /// FlashAttention-2 named (PyTorch SDPA's flash backend).
        Fa2 => "fa2",
        /// cuDNN's fused attention named (TransformerEngine; SDPA's cuDNN backend).
        Cudnn => "cudnn",
        /// Eager attention: materialised `s x s` scores and probabilities.
        Eager => "eager",
    }
);

impl Attention {
    /// A fused flash kernel (O(s) memory), whichever it is.
    pub fn is_fused(self) -> bool {
        self != Attention::Eager
    }
}

keyed_enum!(
    /// How the loss is computed.
    Loss {
        /// Full `s x V` logits, upcast to fp32 for the cross-entropy.
        Plain => "plain",
        /// Fused/chunked linear cross-entropy (Liger): no full logits.
        Fused => "fused",
    }
);

keyed_enum!(
    /// The training stack (`stack=`; `impl=` in older links): its kernels,
    /// the tensors it keeps, its FP8 recipe and its communication (#35).
    Stack {
        /// Hugging Face Transformers + Trainer / accelerate (what the bundle's
        /// train.py runs): fp32 params with bf16 autocast, eager RMSNorm, SDPA.
        Hf => "hf",
        /// Megatron-Core / NeMo / Megatron-Bridge with TransformerEngine:
        /// fused kernels, cuDNN attention, bf16 params, fp32 main grads.
        Megatron => "megatron",
        /// PyTorch-native FSDP2, torchtitan-style (OLMo-core, NeMo AutoModel
        /// run the same way): torch.compile's fused kernels, SDPA, torchao
        /// float8 / MXFP8 Linear layers.
        Torchtitan => "torchtitan",
    }
);

keyed_enum!(
    /// Full training or parameter-efficient fine-tuning.
    Training {
        Full => "full",
        Lora => "lora",
        Qlora => "qlora",
    }
);

keyed_enum!(
    /// The training stage: what one step computes.
    TrainingStage {
        /// Next-token loss over packed sequences (pre-training and
        /// supervised fine-tuning).
        Sft => "sft",
        /// Direct preference optimisation (Rafailov et al. 2023, arXiv
        /// 2305.18290) with TRL's sigmoid loss: each sample is a pair,
        /// prompt + chosen and prompt + rejected, run as one batch of two
        /// rows (TRL's `concatenated_forward`), with the reference model's
        /// log-probabilities from a forward without gradients.
        Dpo => "dpo",
        /// Group relative policy optimisation (Shao et al. 2024, arXiv
        /// 2402.03300) as TRL's `GRPOTrainer` runs it: each step generates
        /// `generations` completions per prompt with vLLM colocated on the
        /// training GPUs, scores them (the old policy's log-probabilities,
        /// and the reference's when `beta > 0`), then trains on the rows
        /// with the loss over the completion only. `mb` counts rows; a
        /// sample (samples/s, the cost per 1K) is a prompt and its rows.
        Grpo => "grpo",
    }
);

/// GRPO's rollouts, in TRL `GRPOConfig`'s terms (0.24.0 defaults); read
/// only at `stage=grpo`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rollout {
    /// Completions per prompt (`num_generations`, 8).
    pub generations: u64,
    /// Completion tokens per row (`max_completion_length`, 256): the end of
    /// the row of `seq` tokens, whose start is the prompt.
    pub completion: u64,
    /// The KL penalty's weight (`beta`, 0.0 since TRL 0.19): above 0 a
    /// frozen reference model and its forward.
    pub beta: f64,
    /// vLLM's share of each GPU's memory, colocated with training
    /// (`vllm_gpu_memory_utilization`, 0.3): its weights and KV cache.
    pub gen_share: f64,
    /// GPUs given to a vLLM server instead (`vllm_mode="server"`, TRL's
    /// `trl vllm-serve`), the first of the first node; 0 keeps vLLM
    /// colocated. Training runs on the other GPUs.
    pub gen_gpus: u64,
}

impl Default for Rollout {
    fn default() -> Self {
        Rollout {
            generations: 8,
            completion: 256,
            beta: 0.0,
            gen_share: 0.3,
            gen_gpus: 0,
        }
    }
}

impl Rollout {
    /// Prompt tokens per row: the row less its completion.
    pub fn prompt(&self, seq: u64) -> u64 {
        seq.saturating_sub(self.completion)
    }
}

keyed_enum!(
    /// What a checkpoint save writes.
    SaveKind {
        /// Weights + optimizer states (resumable).
        Full => "full",
        Weights => "weights",
        Adapter => "adapter",
    }
);

/// The languages live with their catalogs (`text`); plans name them.
pub use crate::text::Lang;

/// Activation checkpointing (recomputation).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Checkpointing {
    None,
    /// Megatron's "selective": recompute the modules `recompute_modules`
    /// lists (the attention core when it lists none).
    Selective,
    /// Recompute every layer from its input.
    Full,
    /// PyTorch op-level selective checkpointing (torchtitan's `selective_ac_option = "op"`):
    /// keep attention outputs and every other matmul output, recompute the rest.
    Op,
    /// Recompute this fraction of the layers (0..1).
    Fraction(f64),
}

impl Checkpointing {
    pub fn key(self) -> String {
        match self {
            Checkpointing::None => "none".into(),
            Checkpointing::Selective => "selective".into(),
            Checkpointing::Full => "full".into(),
            Checkpointing::Op => "op".into(),
            Checkpointing::Fraction(f) => fmt_num(f),
        }
    }
    pub fn from_key(s: &str) -> Option<Self> {
        match s {
            "none" | "0" => Some(Checkpointing::None),
            "selective" => Some(Checkpointing::Selective),
            "full" | "1" => Some(Checkpointing::Full),
            "op" => Some(Checkpointing::Op),
            _ => match crate::decimal::parse_f64(s) {
                Some(f) if f > 0.0 && f < 1.0 => Some(Checkpointing::Fraction(f)),
                _ => None,
            },
        }
    }
    /// Fraction of layers whose activations are recomputed.
    pub fn recomputed_fraction(self) -> f64 {
        match self {
            Checkpointing::None | Checkpointing::Selective => 0.0,
            Checkpointing::Full | Checkpointing::Op => 1.0,
            Checkpointing::Fraction(f) => f,
        }
    }
}

/// Megatron's `--recompute-modules` under selective recomputation: what each
/// one stops keeping for backward. Megatron recomputes exactly the modules
/// listed; with no list, `["core_attn"]` (`TransformerConfig.__post_init__`:
/// `checkpoint_core_attention` is `"core_attn" in recompute_modules`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RecomputeModules {
    /// The attention core: with unfused attention, its scores.
    pub core_attn: bool,
    /// MLA's up projections: q, k and v are recomputed from the latents.
    pub mla_up_proj: bool,
    /// The routed experts' activation function: its output is recomputed.
    pub moe_act: bool,
    /// The norms before attention and the MLP: their outputs are recomputed.
    pub layernorm: bool,
    /// The dense MLP: recomputed from its input.
    pub mlp: bool,
}

/// Megatron's default list: the attention core alone.
impl Default for RecomputeModules {
    fn default() -> Self {
        RecomputeModules {
            core_attn: true,
            mla_up_proj: false,
            moe_act: false,
            layernorm: false,
            mlp: false,
        }
    }
}

impl RecomputeModules {
    const NAMES: [&'static str; 5] = ["core_attn", "mla_up_proj", "moe_act", "layernorm", "mlp"];

    /// Megatron's comma-separated list (`none` for an empty one).
    pub fn key(self) -> String {
        let names = [
            (self.core_attn, "core_attn"),
            (self.mla_up_proj, "mla_up_proj"),
            (self.moe_act, "moe_act"),
            (self.layernorm, "layernorm"),
            (self.mlp, "mlp"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>();
        if names.is_empty() {
            return "none".into();
        }
        names.join(",")
    }

    /// A list names every module recomputed; an empty one is Megatron's
    /// default, `none` recomputes nothing.
    pub fn from_key(s: &str) -> Option<Self> {
        let names: Vec<&str> = s
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect();
        if names.is_empty() {
            return Some(RecomputeModules::default());
        }
        let mut m = RecomputeModules {
            core_attn: false,
            ..RecomputeModules::default()
        };
        for name in names {
            match name {
                "none" => {}
                "core_attn" => m.core_attn = true,
                "mla_up_proj" => m.mla_up_proj = true,
                "moe_act" => m.moe_act = true,
                "layernorm" => m.layernorm = true,
                "mlp" => m.mlp = true,
                _ => return None,
            }
        }
        Some(m)
    }

    pub fn keys() -> String {
        RecomputeModules::NAMES.join(", ")
    }
}

/// Custom architecture fields (override the preset's).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ArchOverrides {
    pub layers: Option<u64>,
    pub hidden: Option<u64>,
    pub heads: Option<u64>,
    pub kv_heads: Option<u64>,
    pub head_dim: Option<u64>,
    pub ffn: Option<u64>,
    pub vocab: Option<u64>,
    pub tied: Option<bool>,
    pub mlp: Option<crate::architecture::Mlp>,
    pub experts: Option<u64>,
    pub active_experts: Option<u64>,
    pub expert_ffn: Option<u64>,
}

impl ArchOverrides {
    pub fn is_empty(&self) -> bool {
        *self == ArchOverrides::default()
    }
}

pub use crate::hardware::CustomGpu;

/// Every input of a plan. `Plan::default()` is the page's opening plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// Preset id, or `custom`.
    pub model: String,
    pub arch: ArchOverrides,
    /// Quick size in billions: derive a plausible shape (overrides `model`).
    pub params_b: Option<f64>,
    pub train: Training,
    /// The training stage (`stage=`): SFT unless the URL says otherwise.
    pub stage: TrainingStage,
    /// GRPO's generation settings (`stage=grpo` only).
    pub rollout: Rollout,
    pub lora_rank: u64,
    /// PEFT's `lora_alpha` (the adapters' scale is alpha / rank); None:
    /// twice the rank, what train.py has set since LoRA was exported.
    /// It moves no figure: the export carries it.
    pub lora_alpha: Option<u64>,
    /// The Linear layers LoRA adapts.
    pub lora_targets: LoraTargets,
    /// The adapters' dtype (written in the link only when BF16).
    pub lora_dtype: LoraDtype,
    pub seq: u64,
    pub micro_batch: u64,
    pub grad_accum: u64,
    /// Total training tokens.
    pub tokens: f64,
    pub precision: Precision,
    pub optimizer: Optimizer,
    pub checkpointing: Checkpointing,
    pub offload: bool,
    /// Megatron's `--cpu-offloading-num-layers`: with `offload`, the layers
    /// per pipeline stage whose activations go to the host (None: all but
    /// SMP's horizon of 2, what the Hugging Face stack's SMP does).
    pub offload_layers: Option<u64>,
    /// Megatron's gradient buffer and reduction in bf16
    /// (`--grad-reduce-in-bf16`; Megatron-Bridge `grad_reduce_in_fp32=False`,
    /// NeMo's `grad_sync_dtype: bf16`) instead of fp32.
    pub grad_bf16: bool,
    /// Megatron's `--fp8-param-gather`: Linear weights kept only in FP8
    /// (no bf16 copy), gathered in FP8.
    pub fp8_params: bool,
    /// Megatron's precision-aware optimizer with both Adam moments in bf16
    /// (`--use-precision-aware-optimizer --exp-avg-dtype bf16
    /// --exp-avg-sq-dtype bf16`; DeepSeek-V3's recipes): 4 B of moments per
    /// parameter instead of 8.
    pub bf16_moments: bool,
    /// With selective recomputation, the modules Megatron recomputes beside
    /// the attention core (`--recompute-modules`).
    pub recompute_modules: RecomputeModules,
    /// Multi-token-prediction layers trained beside the model (Megatron's
    /// `--mtp-num-layers`; DeepSeek-V3 trains 1): each one more decoder
    /// layer, a `2h x h` projection and another pass of the LM head and the
    /// loss, on the last pipeline stage.
    pub mtp: u64,
    pub attention: Attention,
    pub loss: Loss,
    pub stack: Stack,
    /// torch.compile on a torchtitan job (`compile=0` turns it off): its
    /// fused elementwise kernels. Other stacks do not read it (Megatron's
    /// kernels are fused already; the bundle's train.py does not compile).
    pub compile: bool,
    /// ZeRO stage 0..3 (0 = DDP, 3 = FSDP full shard).
    pub zero: u8,
    /// Hybrid shard group size (None = the whole data-parallel group).
    pub shard: Option<u64>,
    pub tp: u64,
    pub sp: bool,
    pub pp: u64,
    pub vp: u64,
    /// Decoder layers on the first / last pipeline rank, where set
    /// (Megatron's `--decoder-first/last-pipeline-num-layers`).
    pub pp_first: Option<u64>,
    pub pp_last: Option<u64>,
    pub cp: u64,
    pub ep: u64,
    pub instance: String,
    /// The GPU when `instance` is `custom`.
    pub custom_gpu: CustomGpu,
    pub nodes: u64,
    /// Data-parallel communication overlapped with compute (Megatron's
    /// overlap_grad_reduce / overlap_param_gather, FSDP prefetch): NVIDIA's
    /// published recipes do; many users' runs do not.
    pub overlap: bool,
    /// Tensor-parallel collectives overlapped with the GEMMs (Megatron's
    /// `--tp-comm-overlap`, TransformerEngine userbuffers). Off by default, as
    /// in Megatron-LM: the collectives are then exposed.
    pub tp_overlap: bool,
    /// Expert-parallel all-to-alls overlapped with another micro-batch's
    /// compute (Megatron's `--overlap-moe-expert-parallel-comm`). Off by
    /// default, as in Megatron-LM.
    pub ep_overlap: bool,
    /// Tokens reach the experts through a fused dispatcher (Megatron's
    /// `--moe-token-dispatcher-type flex` with DeepEP or HybridEP) rather
    /// than the default all-to-all dispatcher's separate permute,
    /// all-to-all and sort kernels. Off by default, as in Megatron-LM.
    pub moe_flex: bool,
    /// The MoE router and its preprocessing run as CUDA graphs (Megatron's
    /// `--cuda-graph-scope moe_router moe_preprocess`), launched once
    /// instead of kernel by kernel. Off by default, as in Megatron-LM.
    pub moe_graphs: bool,
    /// Tokens the busiest expert rank gets, over the balanced share (1:
    /// force-balanced routing, as NVIDIA's benchmarks run). Real routing with
    /// an auxiliary loss is less even; the planner has no measurement of it.
    pub moe_imbalance: f64,
    /// GPUs per NVLink domain of a GB200 UltraServer: 72 (u-p6e-gb200x72,
    /// 18 instances) or 36 (x36, 9 instances).
    pub ultraserver: u64,
    pub spot: bool,
    /// USD per instance-hour, overriding the catalogue.
    pub price: Option<f64>,
    pub save_every: u64,
    pub save: SaveKind,
    pub async_save: bool,
    /// Checkpoint destination write bandwidth per node, GB/s.
    pub save_bw: f64,
    /// Share of usable GPU memory to keep free, percent.
    pub headroom: f64,
    /// cuBLAS/NCCL workspaces, GiB per GPU.
    pub workspace_gib: f64,
    /// Allocator fragmentation, percent of allocated memory.
    pub fragmentation: f64,
    pub role: String,
    pub s3: String,
    pub job: String,
    pub entry: String,
    pub hf_model: String,
    /// Auto-plan: dimensions the search must keep as they are.
    pub locks: Locks,
    /// Auto-plan: spend at most this many USD.
    pub budget_usd: Option<f64>,
    /// Auto-plan: finish within this many hours.
    pub deadline_hours: Option<f64>,
    /// A pinned plan to compare with: its short query (`vs=`), the keys that
    /// differ from the defaults.
    pub pinned: Option<String>,
}

/// What the auto-plan may not change (`lock=instance,precision`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Locks {
    pub instance: bool,
    pub nodes: bool,
    pub precision: bool,
    pub parallelism: bool,
    pub checkpointing: bool,
    pub micro_batch: bool,
}

impl Locks {
    pub const KEYS: [&'static str; 6] = [
        "instance",
        "nodes",
        "precision",
        "parallelism",
        "checkpointing",
        "mb",
    ];

    pub fn get(&self, key: &str) -> bool {
        match key {
            "instance" => self.instance,
            "nodes" => self.nodes,
            "precision" => self.precision,
            "parallelism" => self.parallelism,
            "checkpointing" => self.checkpointing,
            "mb" => self.micro_batch,
            _ => false,
        }
    }

    pub fn set(&mut self, key: &str, on: bool) -> bool {
        let slot = match key {
            "instance" => &mut self.instance,
            "nodes" => &mut self.nodes,
            "precision" => &mut self.precision,
            "parallelism" => &mut self.parallelism,
            "checkpointing" => &mut self.checkpointing,
            "mb" => &mut self.micro_batch,
            _ => return false,
        };
        *slot = on;
        true
    }

    pub fn to_value(&self) -> String {
        Self::KEYS
            .iter()
            .filter(|k| self.get(k))
            .copied()
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            model: "llama-3.1-8b".into(),
            arch: ArchOverrides::default(),
            params_b: None,
            train: Training::Full,
            stage: TrainingStage::Sft,
            rollout: Rollout::default(),
            lora_rank: 16,
            lora_alpha: None,
            lora_targets: LoraTargets::AllLinear,
            lora_dtype: LoraDtype::Fp32,
            seq: 8192,
            micro_batch: 1,
            grad_accum: 8,
            tokens: 1e10,
            precision: Precision::Bf16,
            optimizer: Optimizer::Adamw,
            checkpointing: Checkpointing::None,
            offload: false,
            offload_layers: None,
            grad_bf16: false,
            fp8_params: false,
            bf16_moments: false,
            recompute_modules: RecomputeModules::default(),
            mtp: 0,
            attention: Attention::Flash,
            loss: Loss::Plain,
            stack: Stack::Hf,
            compile: true,
            zero: 3,
            shard: None,
            tp: 1,
            sp: false,
            pp: 1,
            vp: 1,
            pp_first: None,
            pp_last: None,
            cp: 1,
            ep: 1,
            instance: "ml.p6-b200.48xlarge".into(),
            custom_gpu: CustomGpu::default(),
            nodes: 1,
            overlap: true,
            tp_overlap: false,
            ep_overlap: false,
            moe_flex: false,
            moe_graphs: false,
            moe_imbalance: 1.0,
            ultraserver: 72,
            spot: false,
            price: None,
            save_every: 500,
            save: SaveKind::Full,
            async_save: false,
            save_bw: 1.0,
            headroom: 10.0,
            workspace_gib: 1.25,
            fragmentation: 5.0,
            role: String::new(),
            s3: String::new(),
            job: String::new(),
            entry: "train.py".into(),
            hf_model: String::new(),
            locks: Locks::default(),
            budget_usd: None,
            pinned: None,
            deadline_hours: None,
        }
    }
}

/// Something the decoder ignored or corrected, tied to the key it concerns.
/// Its words are rendered when shown, in the language of that moment (#24:
/// rendered at parse time, a page opened in English kept English notices
/// after switching to Russian, whose catalog it had not fetched yet).
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    pub key: String,
    pub problem: Problem,
}

impl Notice {
    /// The English text (the CLI's stderr, logs).
    pub fn message(&self) -> String {
        self.problem.english()
    }
}

/// The JSON report's notice: its key, its English text, and its phrase.
impl Serialize for Notice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Notice", 3)?;
        st.serialize_field("key", &self.key)?;
        st.serialize_field("message", &self.message())?;
        st.serialize_field("phrase", &self.problem)?;
        st.end()
    }
}

/// Why a value was not taken: a catalog phrase, rendered when shown.
pub type Problem = Phrase;

/// The catalog's `id` with values shown as they print (keys, values typed).
fn problem(id: Text, args: &[(&'static str, &dyn Display)]) -> Problem {
    Phrase::of(id, args.iter().map(|(k, v)| (*k, Arg::Name(v.to_string()))))
}

/// The result of reading a query string.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decoded {
    pub plan: Plan,
    pub notices: Vec<Notice>,
    /// The link's language (`lang=`), the page's to show; not part of the plan.
    pub lang: Option<Lang>,
}

/// Keys whose empty value means "none" (the field was emptied).
const OPTIONAL: [&str; 9] = [
    "lora_alpha",
    "shard",
    "pp_first",
    "pp_last",
    "offload_layers",
    "price",
    "budget",
    "deadline",
    "vs",
];

/// The keys of a custom GPU (`instance=custom`).
const CUSTOM_GPU_KEYS: [&str; 7] = [
    "gpu_mem",
    "gpu_bf16",
    "gpu_fp8",
    "gpu_bw",
    "gpu_count",
    "gpu_nvlink",
    "gpu_net",
];

/// Longest value accepted for any key (a link is not a storage format).
const MAX_VALUE_LEN: usize = 512;

/// Every key the schema knows, in the order `to_query` writes them.
pub const KEYS: &[&str] = &[
    "v",
    "model",
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "ffn",
    "vocab",
    "tied",
    "mlp",
    "experts",
    "active_experts",
    "expert_ffn",
    "params_b",
    "train",
    "stage",
    "generations",
    "completion",
    "beta",
    "gen_share",
    "gen_gpus",
    "lora_rank",
    "lora_alpha",
    "lora_targets",
    "lora_dtype",
    "seq",
    "mb",
    "ga",
    "tokens",
    "precision",
    "optimizer",
    "ckpt",
    "offload",
    "offload_layers",
    "grad_bf16",
    "fp8_params",
    "bf16_moments",
    "recompute_modules",
    "mtp",
    "attn",
    "loss",
    "stack",
    "impl",
    "compile",
    "zero",
    "shard",
    "tp",
    "sp",
    "pp",
    "vp",
    "pp_first",
    "pp_last",
    "cp",
    "ep",
    "instance",
    "gpu_mem",
    "gpu_bf16",
    "gpu_fp8",
    "gpu_bw",
    "gpu_count",
    "gpu_nvlink",
    "gpu_net",
    "nodes",
    "overlap",
    "tp_overlap",
    "ep_overlap",
    "moe_flex",
    "moe_graphs",
    "moe_imbalance",
    "ultraserver",
    "spot",
    "price",
    "save_every",
    "save",
    "async_save",
    "save_bw",
    "headroom",
    "ws_gib",
    "frag",
    "role",
    "s3",
    "job",
    "entry",
    "hf_model",
    "lock",
    "budget",
    "deadline",
    "lang",
    "vs",
];

impl Plan {
    /// LoRA or QLoRA on the Hugging Face stack: the exported train.py
    /// trains adapters in BF16 only (TransformerEngine's FP8/FP4 Linear
    /// layers replace a full model's, not PEFT's adapters), so FP8 and FP4
    /// are errors there and the auto-plan leaves them out.
    pub fn hf_adapters(&self) -> bool {
        self.train != Training::Full && self.stack == Stack::Hf
    }

    /// The Hugging Face stack run by the launch bundle's own train.py (the
    /// default entry point): DDP, FSDP2 and HSDP, and DTensor tensor
    /// parallelism under FSDP2 where `launchers::hf_tp_refusal` allows it. It
    /// refuses pipeline, context and expert parallelism, so a plan with any
    /// of them is an error and the auto-plan leaves them out; a user's own
    /// entry script may run them (SMP v2, torchtitan), and is not judged.
    pub fn bundled_hf(&self) -> bool {
        self.stack == Stack::Hf && self.entry == "train.py"
    }

    /// The share of a layer's GEMMs whose outputs op-level selective
    /// checkpointing drops and the backward recomputes (forward again):
    /// - the bundle's train.py keeps every `aten.mm` output (`op_level_policy`): none;
    /// - torchtitan's policy keeps every other `mm`/`linear`
    ///   (torchtitan/distributed/activation_checkpoint.py at b5bcd76,
    ///   "Save all compute/comm ops, except every second mm/linear"): half;
    /// - under NVFP4 its quantized layers' GEMM is torchao's Triton
    ///   `nvfp4_mm_triton`, an op outside that save list, so those layers
    ///   recompute all of theirs (the published runs: Qwen3 8B on 4 GB200s
    ///   took 78.6 GiB in NVFP4 against 112.9 in BF16 and 112.6 in MXFP8,
    ///   whose `_scaled_mm` the list keeps); the recipe's BF16 layers
    ///   (`NVFP4_BF16_LAYER_SHARE`) still recompute half;
    /// - Megatron (no op-level policy of its own): half, as torchtitan.
    pub fn op_level_recomputed_gemm_share(&self) -> f64 {
        match (self.stack, self.precision) {
            (Stack::Hf, _) => 0.0,
            (Stack::Torchtitan, Precision::Nvfp4) => 1.0 - 0.5 * NVFP4_BF16_LAYER_SHARE,
            _ => 0.5,
        }
    }

    /// The script the launch code starts: the plan's `entry`, except that a
    /// Megatron plan left at the default `train.py` starts the bundle's
    /// Megatron-Bridge launcher (#37), and a GRPO plan the bundle's GRPO
    /// script (#38).
    pub fn launch_entry(&self) -> &str {
        if self.stack == Stack::Megatron && self.entry == "train.py" {
            MEGATRON_BRIDGE_SCRIPT
        } else if self.bundled_hf() && self.stage == TrainingStage::Grpo {
            GRPO_SCRIPT
        } else {
            &self.entry
        }
    }

    /// The engine the plan's exported launch code starts (#37): the
    /// bundle's train.py, its Megatron-Bridge launcher, or an entry point of
    /// the user's own (a torchtitan plan, or any `entry=` but the default).
    pub fn engine(&self) -> Engine {
        match self.stack {
            Stack::Megatron if self.launch_entry() == MEGATRON_BRIDGE_SCRIPT => {
                Engine::MegatronBridge
            }
            Stack::Hf if self.launch_entry() == GRPO_SCRIPT => Engine::Grpo,
            Stack::Hf if self.entry == "train.py" => Engine::TrainPy,
            _ => Engine::OwnEntry,
        }
    }

    /// QLoRA on the Hugging Face stack: the exported train.py runs it
    /// unsharded (DDP; bitsandbytes' 4-bit weights under FSDP2 are not
    /// supported there), so ZeRO on several GPUs is an error and the
    /// auto-plan keeps zero=0.
    pub fn hf_qlora(&self) -> bool {
        self.train == Training::Qlora && self.stack == Stack::Hf
    }

    /// Read a plan from a URL, a query string (with or without `?`), or `&`-joined pairs.
    pub fn from_query(input: &str) -> Decoded {
        let mut plan = Plan::default();
        let mut notices = Vec::new();
        let mut custom_keys = Vec::new();
        let mut lang = None;
        let query = match input.find('?') {
            Some(i) => &input[i + 1..],
            None => input,
        };
        let query = query.split('#').next().unwrap_or("");
        for pair in query.split(['&', ';']).filter(|p| !p.trim().is_empty()) {
            let (raw_key, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = percent_decode(raw_key);
            let value = percent_decode(raw_value);
            let key = key.trim();
            if value.chars().count() > MAX_VALUE_LEN {
                let key = safe_key(key);
                let args: [(&str, &dyn Display); 2] = [("key", &key), ("max", &MAX_VALUE_LEN)];
                let problem = problem(Text::ValueTooLong, &args);
                notices.push(Notice { key, problem });
                continue;
            }
            let taken = if key == "lang" {
                let f = Field {
                    key,
                    value: value.trim(),
                };
                f.one_of(Lang::from_key, Lang::keys).map(|l| lang = Some(l))
            } else {
                plan.set(key, value.trim())
            };
            if let Err(problem) = taken {
                notices.push(Notice {
                    key: safe_key(key),
                    problem,
                });
            } else if CUSTOM_GPU_KEYS.contains(&key) {
                custom_keys.push(safe_key(key));
            }
        }
        // A custom GPU's figures describe `instance=custom` only: beside a
        // known instance they would be read and silently ignored.
        if plan.instance != "custom" {
            for key in custom_keys {
                let args: [(&str, &dyn Display); 2] = [("key", &key), ("instance", &plan.instance)];
                let problem = problem(Text::CustomGpuKeyIgnored, &args);
                notices.push(Notice { key, problem });
            }
        }
        Decoded {
            plan,
            notices,
            lang,
        }
    }

    /// Set one key from its URL value; `Err` says why the value was not taken.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), Problem> {
        // An emptied optional field goes back to its default (none).
        if value.is_empty() && OPTIONAL.contains(&key) {
            self.clear(key);
            return Ok(());
        }
        let f = Field { key, value };
        let groups: [fn(&mut Plan, &Field) -> Taken; 6] = [
            Plan::set_model,
            Plan::set_training,
            Plan::set_parallelism,
            Plan::set_hardware,
            Plan::set_launch,
            Plan::set_page,
        ];
        for set in groups {
            if set(self, &f)? {
                return Ok(());
            }
        }
        let key = shorten(key);
        let args: [(&str, &dyn Display); 1] = [("key", &key)];
        Err(problem(Text::UnknownKey, &args))
    }

    /// An optional key set to nothing.
    fn clear(&mut self, key: &str) {
        match key {
            "lora_alpha" => self.lora_alpha = None,
            "shard" => self.shard = None,
            "pp_first" => self.pp_first = None,
            "pp_last" => self.pp_last = None,
            "offload_layers" => self.offload_layers = None,
            "price" => self.price = None,
            "budget" => self.budget_usd = None,
            "vs" => self.pinned = None,
            _ => self.deadline_hours = None,
        }
    }

    /// The schema version, the model and its shape.
    fn set_model(&mut self, f: &Field) -> Taken {
        let a = &mut self.arch;
        match f.key {
            "v" => {
                let v = f.int(1, 1000)?;
                if v as u32 > SCHEMA_VERSION {
                    let args: [(&str, &dyn Display); 2] = [("v", &v), ("current", &SCHEMA_VERSION)];
                    return Err(problem(Text::NewerSchema, &args));
                }
            }
            "model" => self.model = f.model()?,
            "layers" => a.layers = Some(f.int(1, 1024)?),
            "hidden" => a.hidden = Some(f.int(64, 131_072)?),
            "heads" => a.heads = Some(f.int(1, 1024)?),
            "kv_heads" => a.kv_heads = Some(f.int(1, 1024)?),
            "head_dim" => a.head_dim = Some(f.int(8, 1024)?),
            "ffn" => a.ffn = Some(f.int(64, 1_048_576)?),
            "vocab" => a.vocab = Some(f.int(16, 4_194_304)?),
            "tied" => a.tied = Some(f.flag()?),
            "mlp" => {
                let m = crate::architecture::Mlp::from_key(f.value);
                a.mlp = Some(m.ok_or_else(|| f.bad(Text::ExpectedMlp, &[]))?);
            }
            "experts" => a.experts = Some(f.int(1, 1024)?),
            "active_experts" => a.active_experts = Some(f.int(1, 1024)?),
            "expert_ffn" => a.expert_ffn = Some(f.int(16, 1_048_576)?),
            "params_b" => self.params_b = Some(f.num(0.05, 2000.0)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// What is trained, on which data, with which precision and memory savers.
    fn set_training(&mut self, f: &Field) -> Taken {
        match f.key {
            "train" => self.train = f.one_of(Training::from_key, Training::keys)?,
            "stage" => self.stage = f.one_of(TrainingStage::from_key, TrainingStage::keys)?,
            // TRL requires two completions per prompt at least.
            "generations" => self.rollout.generations = f.int(2, 1024)?,
            "completion" => self.rollout.completion = f.int(1, 131_072)?,
            "beta" => self.rollout.beta = f.num(0.0, 10.0)?,
            "gen_share" => self.rollout.gen_share = f.num(0.05, 0.95)?,
            "gen_gpus" => self.rollout.gen_gpus = f.int(0, 72)?,
            "lora_rank" => self.lora_rank = f.int(1, 4096)?,
            "lora_alpha" => self.lora_alpha = Some(f.int(1, 65_536)?),
            "lora_targets" => {
                self.lora_targets = f.one_of(LoraTargets::from_key, LoraTargets::keys)?
            }
            "lora_dtype" => self.lora_dtype = f.one_of(LoraDtype::from_key, LoraDtype::keys)?,
            "seq" => self.seq = f.int(128, 131_072)?,
            "mb" => self.micro_batch = f.int(1, 4096)?,
            "ga" => self.grad_accum = f.int(1, 65_536)?,
            "tokens" => self.tokens = f.num(1e6, 1e15)?,
            "precision" => self.precision = f.one_of(Precision::from_key, Precision::keys)?,
            "optimizer" => self.optimizer = f.one_of(Optimizer::from_key, Optimizer::keys)?,
            "ckpt" => {
                let c = Checkpointing::from_key(f.value);
                self.checkpointing = c.ok_or_else(|| f.bad(Text::ExpectedCheckpointing, &[]))?;
            }
            "offload" => self.offload = f.flag()?,
            "offload_layers" => self.offload_layers = Some(f.int(0, 1024)?),
            "grad_bf16" => self.grad_bf16 = f.flag()?,
            "fp8_params" => self.fp8_params = f.flag()?,
            "bf16_moments" => self.bf16_moments = f.flag()?,
            "recompute_modules" => {
                let m = RecomputeModules::from_key(f.value);
                let args: [(&str, &dyn Display); 1] = [("keys", &RecomputeModules::keys())];
                self.recompute_modules =
                    m.ok_or_else(|| f.bad(Text::ExpectedRecomputeModules, &args))?;
            }
            "mtp" => self.mtp = f.int(0, 8)?,
            "attn" => self.attention = f.one_of(Attention::from_key, Attention::keys)?,
            "loss" => self.loss = f.one_of(Loss::from_key, Loss::keys)?,
            // `impl=` is the key links used before #35 named the stack.
            "stack" | "impl" => self.stack = f.one_of(Stack::from_key, Stack::keys)?,
            "compile" => self.compile = f.flag()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Sharding and the parallel degrees.
    fn set_parallelism(&mut self, f: &Field) -> Taken {
        match f.key {
            "zero" => self.zero = f.int(0, 3)? as u8,
            "shard" => self.shard = Some(f.int(1, 65_536)?),
            "tp" => self.tp = f.int(1, 1024)?,
            "sp" => self.sp = f.flag()?,
            "pp" => self.pp = f.int(1, 1024)?,
            "vp" => self.vp = f.int(1, 64)?,
            "pp_first" => self.pp_first = Some(f.int(0, 1024)?),
            "pp_last" => self.pp_last = Some(f.int(0, 1024)?),
            "cp" => self.cp = f.int(1, 1024)?,
            "ep" => self.ep = f.int(1, 1024)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The instance (or a custom GPU), how many, the network and the price.
    fn set_hardware(&mut self, f: &Field) -> Taken {
        let g = &mut self.custom_gpu;
        match f.key {
            "gpu_mem" => g.memory_gb = f.num(1.0, 10_000.0)?,
            "gpu_bf16" => g.bf16_tflops = f.num(1.0, 1_000_000.0)?,
            "gpu_fp8" => g.fp8_tflops = f.num(0.0, 1_000_000.0)?,
            "gpu_bw" => g.bandwidth_tbs = f.num(0.01, 1000.0)?,
            "gpu_count" => g.per_node = f.int(1, 1024)?,
            "gpu_nvlink" => g.nvlink_gbs = f.num(0.0, 100_000.0)?,
            "gpu_net" => g.network_gbps = f.num(0.0, 1_000_000.0)?,
            "instance" => {
                let known = f.value == "custom" || crate::hardware::instance(f.value).is_some();
                self.instance = f.text(known, Text::UnknownInstance)?;
            }
            "nodes" => self.nodes = f.int(1, 4096)?,
            "overlap" => self.overlap = f.flag()?,
            "tp_overlap" => self.tp_overlap = f.flag()?,
            "ep_overlap" => self.ep_overlap = f.flag()?,
            "moe_flex" => self.moe_flex = f.flag()?,
            "moe_graphs" => self.moe_graphs = f.flag()?,
            "moe_imbalance" => self.moe_imbalance = f.num(1.0, 16.0)?,
            "ultraserver" => {
                self.ultraserver = match f.value {
                    "72" => 72,
                    "36" => 36,
                    _ => return Err(f.bad(Text::ExpectedUltraServer, &[])),
                }
            }
            "spot" => self.spot = f.flag()?,
            "price" => self.price = Some(f.num(0.0, 100_000.0)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Checkpoint saving, memory margins and the launch code's names.
    fn set_launch(&mut self, f: &Field) -> Taken {
        let v = f.value;
        match f.key {
            "save_every" => self.save_every = f.int(0, 10_000_000)?,
            "save" => self.save = f.one_of(SaveKind::from_key, SaveKind::keys)?,
            "async_save" => self.async_save = f.flag()?,
            "save_bw" => self.save_bw = f.num(0.001, 1000.0)?,
            "headroom" => self.headroom = f.num(0.0, 50.0)?,
            "ws_gib" => self.workspace_gib = f.num(0.0, 64.0)?,
            "frag" => self.fragmentation = f.num(0.0, 50.0)?,
            "role" => self.role = f.text(valid_role(v), Text::ExpectedRole)?,
            "s3" => {
                let s3 = f.text(valid_s3(v), Text::ExpectedS3)?;
                self.s3 = s3.trim_end_matches('/').to_string();
            }
            "job" => self.job = f.text(valid_job(v), Text::ExpectedJobName)?,
            "entry" => self.entry = f.text(valid_entry(v), Text::ExpectedEntry)?,
            "hf_model" => self.hf_model = f.text(valid_hf_model(v), Text::ExpectedHfModel)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The page's own state: the auto-plan's locks and limits, a pinned plan.
    fn set_page(&mut self, f: &Field) -> Taken {
        match f.key {
            "lock" => self.locks = f.locks()?,
            "budget" => self.budget_usd = Some(f.num(0.0, 1e12)?),
            "deadline" => self.deadline_hours = Some(f.num(0.0, 1e6)?),
            "vs" => {
                let pinned = Plan::from_query(f.value);
                if let Some(first) = pinned.notices.first() {
                    return Err(f.bad(Text::ExpectedPinnedPlan, &[("key", &first.key)]));
                }
                self.pinned = Some(pinned.plan.short_query());
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The plan as a query string (without `?`). Every key is written, so a
    /// link reopens exactly this plan even if a later release changes a default.
    pub fn to_query(&self) -> String {
        let mut out: Pairs = vec![("v", SCHEMA_VERSION.to_string())];
        self.model_pairs(&mut out);
        self.training_pairs(&mut out);
        self.parallelism_pairs(&mut out);
        self.hardware_pairs(&mut out);
        self.launch_pairs(&mut out);
        self.page_pairs(&mut out);
        out.iter()
            .map(|(k, v)| format!("{k}={}", percent_encode(v)))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// The model and the shape keys the user set.
    fn model_pairs(&self, out: &mut Pairs) {
        out.push(("model", self.model.clone()));
        let a = &self.arch;
        let opt_u = |v: Option<u64>| v.map(|x| x.to_string());
        for (k, v) in [
            ("layers", opt_u(a.layers)),
            ("hidden", opt_u(a.hidden)),
            ("heads", opt_u(a.heads)),
            ("kv_heads", opt_u(a.kv_heads)),
            ("head_dim", opt_u(a.head_dim)),
            ("ffn", opt_u(a.ffn)),
            ("vocab", opt_u(a.vocab)),
            ("tied", a.tied.map(|t| flag(t).to_string())),
            ("mlp", a.mlp.map(|m| m.key().to_string())),
            ("experts", opt_u(a.experts)),
            ("active_experts", opt_u(a.active_experts)),
            ("expert_ffn", opt_u(a.expert_ffn)),
            ("params_b", self.params_b.map(fmt_num)),
        ] {
            if let Some(v) = v {
                out.push((k, v));
            }
        }
    }

    /// What is trained and how.
    fn training_pairs(&self, out: &mut Pairs) {
        out.push(("train", self.train.key().into()));
        if self.stage != TrainingStage::Sft {
            out.push(("stage", self.stage.key().into()));
        }
        if self.stage == TrainingStage::Grpo {
            let r = &self.rollout;
            out.push(("generations", r.generations.to_string()));
            out.push(("completion", r.completion.to_string()));
            out.push(("beta", fmt_num(r.beta)));
            out.push(("gen_share", fmt_num(r.gen_share)));
            if r.gen_gpus > 0 {
                out.push(("gen_gpus", r.gen_gpus.to_string()));
            }
        }
        if self.train != Training::Full {
            out.push(("lora_rank", self.lora_rank.to_string()));
            if let Some(alpha) = self.lora_alpha {
                out.push(("lora_alpha", alpha.to_string()));
            }
            out.push(("lora_targets", self.lora_targets.key().into()));
            if self.lora_dtype == LoraDtype::Bf16 {
                out.push(("lora_dtype", "bf16".into()));
            }
        }
        out.push(("seq", self.seq.to_string()));
        out.push(("mb", self.micro_batch.to_string()));
        out.push(("ga", self.grad_accum.to_string()));
        out.push(("tokens", fmt_num(self.tokens)));
        out.push(("precision", self.precision.key().into()));
        out.push(("optimizer", self.optimizer.key().into()));
        out.push(("ckpt", self.checkpointing.key()));
        out.push(("offload", flag(self.offload).into()));
        if let Some(n) = self.offload_layers {
            out.push(("offload_layers", n.to_string()));
        }
        if self.grad_bf16 {
            out.push(("grad_bf16", "1".into()));
        }
        if self.fp8_params {
            out.push(("fp8_params", "1".into()));
        }
        if self.bf16_moments {
            out.push(("bf16_moments", "1".into()));
        }
        if self.recompute_modules != RecomputeModules::default() {
            out.push(("recompute_modules", self.recompute_modules.key()));
        }
        if self.mtp > 0 {
            out.push(("mtp", self.mtp.to_string()));
        }
        out.push(("attn", self.attention.key().into()));
        out.push(("loss", self.loss.key().into()));
        out.push(("stack", self.stack.key().into()));
        if self.stack == Stack::Torchtitan && !self.compile {
            out.push(("compile", "0".into()));
        }
    }

    /// Sharding and the parallel degrees.
    fn parallelism_pairs(&self, out: &mut Pairs) {
        out.push(("zero", self.zero.to_string()));
        if let Some(s) = self.shard {
            out.push(("shard", s.to_string()));
        }
        for (k, v) in [
            ("tp", self.tp),
            ("pp", self.pp),
            ("vp", self.vp),
            ("cp", self.cp),
            ("ep", self.ep),
        ] {
            out.push((k, v.to_string()));
        }
        if let Some(n) = self.pp_first {
            out.push(("pp_first", n.to_string()));
        }
        if let Some(n) = self.pp_last {
            out.push(("pp_last", n.to_string()));
        }
        out.push(("sp", flag(self.sp).into()));
    }

    /// The instance (or custom GPU), nodes, network and price.
    fn hardware_pairs(&self, out: &mut Pairs) {
        out.push(("instance", self.instance.clone()));
        if self.instance == "custom" {
            let g = &self.custom_gpu;
            out.push(("gpu_mem", fmt_num(g.memory_gb)));
            out.push(("gpu_bf16", fmt_num(g.bf16_tflops)));
            out.push(("gpu_fp8", fmt_num(g.fp8_tflops)));
            out.push(("gpu_bw", fmt_num(g.bandwidth_tbs)));
            out.push(("gpu_count", g.per_node.to_string()));
            out.push(("gpu_nvlink", fmt_num(g.nvlink_gbs)));
            out.push(("gpu_net", fmt_num(g.network_gbps)));
        }
        out.push(("nodes", self.nodes.to_string()));
        if !self.overlap {
            out.push(("overlap", "0".into()));
        }
        if self.tp_overlap {
            out.push(("tp_overlap", "1".into()));
        }
        if self.ep_overlap {
            out.push(("ep_overlap", "1".into()));
        }
        if self.moe_flex {
            out.push(("moe_flex", "1".into()));
        }
        if self.moe_graphs {
            out.push(("moe_graphs", "1".into()));
        }
        if self.moe_imbalance != 1.0 {
            out.push(("moe_imbalance", fmt_num(self.moe_imbalance)));
        }
        if crate::hardware::is_ultraserver(&self.instance) || self.ultraserver != 72 {
            out.push(("ultraserver", self.ultraserver.to_string()));
        }
        out.push(("spot", flag(self.spot).into()));
        if let Some(p) = self.price {
            out.push(("price", fmt_num(p)));
        }
    }

    /// Checkpoint saving, memory margins and the launch code's names.
    fn launch_pairs(&self, out: &mut Pairs) {
        out.push(("save_every", self.save_every.to_string()));
        out.push(("save", self.save.key().into()));
        out.push(("async_save", flag(self.async_save).into()));
        out.push(("save_bw", fmt_num(self.save_bw)));
        out.push(("headroom", fmt_num(self.headroom)));
        out.push(("ws_gib", fmt_num(self.workspace_gib)));
        out.push(("frag", fmt_num(self.fragmentation)));
        for (k, v) in [
            ("role", &self.role),
            ("s3", &self.s3),
            ("job", &self.job),
            ("entry", &self.entry),
            ("hf_model", &self.hf_model),
        ] {
            if !v.is_empty() {
                out.push((k, v.clone()));
            }
        }
    }

    /// Locks, limits and the pinned plan, when set.
    fn page_pairs(&self, out: &mut Pairs) {
        if self.locks != Locks::default() {
            out.push(("lock", self.locks.to_value()));
        }
        if let Some(b) = self.budget_usd {
            out.push(("budget", fmt_num(b)));
        }
        if let Some(d) = self.deadline_hours {
            out.push(("deadline", fmt_num(d)));
        }
        if let Some(vs) = &self.pinned {
            out.push(("vs", vs.clone()));
        }
    }
}

impl Plan {
    /// The pairs of `to_query` that differ from the default plan's, without
    /// the language and any pinned plan: what a pinned plan (`vs=`) keeps.
    pub fn short_query(&self) -> String {
        let defaults = Plan::default().to_query();
        let defaults: Vec<&str> = defaults.split('&').collect();
        self.unpinned_query()
            .split('&')
            .filter(|pair| !defaults.contains(pair) && !pair.starts_with("v="))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// The query without the language and any pinned plan: what two plans
    /// are compared on.
    fn unpinned_query(&self) -> String {
        let mut p = self.clone();
        p.pinned = None;
        p.to_query()
    }

    /// `(key, pinned value, current value)` for every key whose value differs,
    /// in the schema's order (a key one plan does not write shows as empty).
    pub fn differences(&self, other: &Plan) -> Vec<(String, String, String)> {
        let pairs = |p: &Plan| -> Vec<(String, String)> {
            p.unpinned_query()
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), percent_decode(v)))
                .collect()
        };
        let (a, b) = (pairs(self), pairs(other));
        let value = |list: &[(String, String)], k: &str| {
            list.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        KEYS.iter()
            .map(|k| (k.to_string(), value(&a, k), value(&b, k)))
            .filter(|(_, x, y)| x != y)
            .collect()
    }
}

fn flag(b: bool) -> &'static str {
    if b {
        "1"
    } else {
        "0"
    }
}

/// Shortest decimal that reads back to the same number (`1e10`, `0.5`, `13`).
pub fn fmt_num(x: f64) -> String {
    if x != 0.0 && x.fract() == 0.0 && x.abs() >= 1e6 {
        let s = format!("{x:e}");
        return s;
    }
    let s = format!("{x}");
    s
}

/// `key=value` pairs of a query string, in their order.
type Pairs = Vec<(&'static str, String)>;

/// Whether a group of keys took the key (`Ok(false)`: not one of its keys).
type Taken = Result<bool, Problem>;

/// One `key=value` pair being read, and how to say why its value was not taken.
struct Field<'a> {
    key: &'a str,
    value: &'a str,
}

impl Field<'_> {
    /// "`key`: <problem> (got `value`)", rendered when shown.
    fn bad(&self, id: Text, args: &[(&'static str, &dyn Display)]) -> Problem {
        self.framed(problem(id, args))
    }

    /// The problem inside `BadValue`'s frame: the key and the value shown.
    fn framed(&self, inner: Problem) -> Problem {
        Phrase::new(Text::BadValue)
            .with("key", self.key)
            .with("problem", inner)
            .with("value", shorten(self.value))
    }

    /// A whole number in `lo..=hi`.
    fn int(&self, lo: u64, hi: u64) -> Result<u64, Problem> {
        match crate::decimal::parse_f64(self.value) {
            Some(x) if x.fract() == 0.0 && x >= lo as f64 && x <= hi as f64 => Ok(x as u64),
            _ => Err(self.bad(Text::ExpectedWholeNumber, &[("lo", &lo), ("hi", &hi)])),
        }
    }

    /// A finite number in `lo..=hi`.
    fn num(&self, lo: f64, hi: f64) -> Result<f64, Problem> {
        match crate::decimal::parse_f64(self.value) {
            Some(x) if x.is_finite() && (lo..=hi).contains(&x) => Ok(x),
            _ => Err(self.framed(
                Phrase::new(Text::ExpectedNumber)
                    .with("lo", Arg::Real(lo))
                    .with("hi", Arg::Real(hi)),
            )),
        }
    }

    fn flag(&self) -> Result<bool, Problem> {
        match self.value {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(self.bad(Text::ExpectedFlag, &[])),
        }
    }

    /// One of an enum's URL keys.
    fn one_of<T>(&self, parse: fn(&str) -> Option<T>, keys: fn() -> String) -> Result<T, Problem> {
        parse(self.value).ok_or_else(|| self.bad(Text::ExpectedOneOf, &[("keys", &keys())]))
    }

    /// The value as text, when `valid`.
    fn text(&self, valid: bool, id: Text) -> Result<String, Problem> {
        if valid {
            Ok(self.value.to_string())
        } else {
            Err(self.bad(id, &[]))
        }
    }

    /// A preset's id or `custom`; a near miss gets "did you mean".
    fn model(&self) -> Result<String, Problem> {
        let v = self.value;
        if v == "custom" || crate::architecture::preset(v).is_some() {
            return Ok(v.to_string());
        }
        let near = crate::architecture::suggest_presets(v);
        if near.is_empty() {
            return Err(self.bad(Text::UnknownModel, &[]));
        }
        let ids = near.join(", ");
        Err(self.bad(Text::UnknownModelDidYouMean, &[("ids", &ids)]))
    }

    /// A comma-separated list of the auto-plan's lockable inputs.
    fn locks(&self) -> Result<Locks, Problem> {
        let mut locks = Locks::default();
        for k in self
            .value
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
        {
            if !locks.set(k, true) {
                return Err(self.bad(Text::ExpectedLockList, &[("keys", &Locks::KEYS.join(", "))]));
            }
        }
        Ok(locks)
    }
}

fn shorten(s: &str) -> String {
    let clean: String = s.chars().filter(|c| !c.is_control()).take(40).collect();
    if s.chars().count() > 40 {
        clean + "…"
    } else {
        clean
    }
}

fn safe_key(k: &str) -> String {
    shorten(k)
}

/// Decode `%XX` escapes and `+` as space; invalid escapes are kept as text
/// and invalid UTF-8 becomes U+FFFD.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encode everything but unreserved characters (RFC 3986) and a few that are
/// safe and readable in a query value (`:`, `/`, `,`).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:/,".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

// ---- export fields: what SageMaker accepts, nothing that could break code ----

fn all_chars(s: &str, ok: impl Fn(char) -> bool) -> bool {
    s.chars().all(ok)
}

/// An IAM role ARN or a bare role name (the SDK expands names).
pub fn valid_role(s: &str) -> bool {
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.len() <= 512
            && all_chars(n, |c| c.is_ascii_alphanumeric() || "+=,.@_-/".contains(c))
    };
    match s.strip_prefix("arn:") {
        Some(rest) => {
            let parts: Vec<&str> = rest.splitn(5, ':').collect();
            parts.len() == 5
                && parts[0].starts_with("aws")
                && all_chars(parts[0], |c| c.is_ascii_lowercase() || c == '-')
                && parts[1] == "iam"
                && parts[2].is_empty()
                && parts[3].len() == 12
                && all_chars(parts[3], |c| c.is_ascii_digit())
                && parts[4].strip_prefix("role/").is_some_and(name_ok)
        }
        None => s.len() <= 64 && name_ok(s) && !s.contains('/'),
    }
}

/// `s3://bucket[/prefix]`, bucket per S3 naming rules, prefix printable ASCII without quotes or backslashes.
pub fn valid_s3(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("s3://") else {
        return false;
    };
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    (3..=63).contains(&bucket.len())
        && all_chars(bucket, |c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-'
        })
        && bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
        && prefix.len() <= 900
        && all_chars(prefix, |c| c.is_ascii_graphic() && !"\"'\\`{}".contains(c))
}

/// SageMaker's job-name pattern: `^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`.
pub fn valid_job(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
        && all_chars(s, |c| c.is_ascii_alphanumeric() || c == '-')
}

/// A relative path to a Python script inside source_dir.
pub fn valid_entry(s: &str) -> bool {
    s.len() <= 256
        && s.ends_with(".py")
        && !s.starts_with('/')
        && !s.split('/').any(|p| p == ".." || p.is_empty())
        && s.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        && all_chars(s, |c| c.is_ascii_alphanumeric() || "_./-".contains(c))
}

/// `org/name` (or `name`) as on the Hugging Face Hub.
pub fn valid_hf_model(s: &str) -> bool {
    let part = |p: &str| {
        !p.is_empty()
            && p.len() <= 96
            && p.starts_with(|c: char| c.is_ascii_alphanumeric())
            && all_chars(p, |c| c.is_ascii_alphanumeric() || "._-".contains(c))
    };
    match s.split_once('/') {
        Some((org, name)) => part(org) && part(name),
        None => part(s),
    }
}
