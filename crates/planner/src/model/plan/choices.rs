//! The plan's choices: each setting with a fixed set of values (precision,
//! stage, engine, checkpointing, attention…) and its key in the URL.

use serde::Serialize;
use std::borrow::Cow;

/// Version of the query-string schema (`v=`).
pub const SCHEMA_VERSION: u32 = 1;

/// A value written as its URL key (`bf16`, `fused`): what the reports'
/// typed fields serialize to (`#[serde(serialize_with = "as_key")]`).
pub trait Keyed: Copy {
    fn url_key(self) -> &'static str;
}

/// Serializes a keyed value as its URL key.
pub fn as_key<T: Keyed, S: serde::Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(value.url_key())
}

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
        impl Keyed for $name {
            fn url_key(self) -> &'static str {
                self.key()
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
    /// The LoRA adapters' dtype.
    LoraDtype {
        /// FP32: PEFT casts adapters to it by default
        /// (`get_peft_model(..., autocast_adapter_dtype=True)`).
        Fp32 => "fp32",
        /// The base's BF16 (`autocast_adapter_dtype=False`).
        Bf16 => "bf16",
    }
);

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
    /// The completions' mean length where the user knows it; 0: every row
    /// runs to `completion`. Generation still waits for the longest row.
    pub completion_mean: u64,
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
    /// vLLM's tensor-parallel size as the user runs it (TRL's
    /// `vllm_tensor_parallel_size`, NeMo RL's `vllm_cfg.tensor_parallel_size`,
    /// verl's `rollout.tensor_model_parallel_size`); 0 lets the planner pick
    /// the smallest that leaves half the engine's share to the KV cache.
    pub gen_tp: u64,
    /// vLLM's pipeline stages as the user runs them (NeMo RL's
    /// `vllm_cfg.pipeline_parallel_size`), colocated; 0 lets the planner
    /// add stages only where the engine's TP spans the fast link and still
    /// cannot hold the weights.
    pub gen_pp: u64,
    /// vLLM's sleep mode, colocated (`vllm_enable_sleep_mode`, off): the
    /// engine offloads its weights to host memory and drops its KV cache
    /// after generating (`LLM.sleep(level=1)`), and takes them back before
    /// the next generation (`wake_up`), so training has its share back.
    pub sleep: bool,
}

/// What each stage does, one exhaustive `match` per concern: a new stage is
/// a compile error here until it answers each (#59), and the code asks
/// these, never `stage == …`.
impl TrainingStage {
    /// Whether a step is the plain next-token loss (pre-training, SFT): what
    /// the published and measured fine-tuning runs ran, and all that the
    /// Megatron-Bridge launcher and train.py's tensor parallelism run.
    pub fn next_token_loss(self) -> bool {
        match self {
            TrainingStage::Sft => true,
            TrainingStage::Dpo | TrainingStage::Grpo => false,
        }
    }

    /// Whether a step generates completions (vLLM) before it trains: the
    /// rollout's engine, its memory share and GPUs, grpo.py and its
    /// requirements (TRL, vLLM).
    pub fn generates(self) -> bool {
        match self {
            TrainingStage::Grpo => true,
            TrainingStage::Sft | TrainingStage::Dpo => false,
        }
    }

    /// Whether the loss divides the policy's logits by the sampling
    /// temperature first (TRL's GRPO loss: one more copy of the logits).
    pub fn tempers_logits(self) -> bool {
        match self {
            TrainingStage::Grpo => true,
            TrainingStage::Sft | TrainingStage::Dpo => false,
        }
    }
}

impl Default for Rollout {
    fn default() -> Self {
        Rollout {
            generations: 8,
            completion: 256,
            completion_mean: 0,
            beta: 0.0,
            gen_share: 0.3,
            gen_gpus: 0,
            gen_tp: 0,
            gen_pp: 0,
            sleep: false,
        }
    }
}

impl Rollout {
    /// Prompt tokens per row: the row less its completion.
    pub fn prompt(&self, seq: u64) -> u64 {
        seq.saturating_sub(self.completion)
    }

    /// The completions' mean length: the user's, at most `completion`.
    pub fn mean_completion(&self) -> u64 {
        match self.completion_mean {
            0 => self.completion,
            m => m.min(self.completion),
        }
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

keyed_enum!(
    /// How a job comes back from an interruption (#58).
    Recovery {
        /// Reload the last complete save: the work since it is lost.
        Save => "save",
        /// Checkpointless: the state comes back from the peers' memory
        /// (SageMaker HyperPod's in-process recovery), losing the step under
        /// way and reading no save.
        Memory => "memory",
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
    pub fn key(self) -> Cow<'static, str> {
        match self {
            Checkpointing::None => "none".into(),
            Checkpointing::Selective => "selective".into(),
            Checkpointing::Full => "full".into(),
            Checkpointing::Op => "op".into(),
            Checkpointing::Fraction(f) => fmt_num(f).into(),
        }
    }
    pub fn from_key(s: &str) -> Option<Self> {
        match s {
            "none" | "0" => Some(Checkpointing::None),
            "selective" => Some(Checkpointing::Selective),
            "full" | "1" => Some(Checkpointing::Full),
            "op" => Some(Checkpointing::Op),
            _ => match crate::formats::decimal::parse_f64(s) {
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
    pub fn key(self) -> Cow<'static, str> {
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
        match names.as_slice() {
            [] => "none".into(),
            [one] => (*one).into(),
            _ => names.join(",").into(),
        }
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
    pub mlp: Option<crate::model::architecture::Mlp>,
    pub experts: Option<u64>,
    pub active_experts: Option<u64>,
    pub expert_ffn: Option<u64>,
}

impl ArchOverrides {
    pub fn is_empty(&self) -> bool {
        *self == ArchOverrides::default()
    }
}

pub use crate::model::hardware::CustomGpu;

/// Shortest decimal that reads back to the same number (`1e10`, `0.5`, `13`).
pub fn fmt_num(x: f64) -> String {
    // A whole number below a million is its integer's digits (not -0),
    // written without the float formatter: labels write a few per edit.
    if x.fract() == 0.0 && x.abs() < 1e6 && (x != 0.0 || x.is_sign_positive()) {
        return (x as i64).to_string();
    }
    if x != 0.0 && x.fract() == 0.0 && x.abs() >= 1e6 {
        let s = format!("{x:e}");
        return s;
    }
    let s = format!("{x}");
    s
}

/// The instance a plan runs on: a SageMaker instance type of the catalogue
/// (or one the link names, which the resolver checks), or the user's own GPU
/// figures (`custom_gpu`), whose URL key is `custom`. One type, so no code
/// compares the name with the string `custom` (#59).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstanceId {
    Listed(String),
    Custom,
}

impl InstanceId {
    /// The URL value of a custom instance.
    pub const CUSTOM_KEY: &'static str = "custom";

    /// The instance a URL value names.
    pub fn parse(s: &str) -> InstanceId {
        if s == Self::CUSTOM_KEY {
            InstanceId::Custom
        } else {
            InstanceId::Listed(s.to_string())
        }
    }

    /// Its URL value: the instance type, or `custom`.
    pub fn key(&self) -> &str {
        match self {
            InstanceId::Listed(s) => s,
            InstanceId::Custom => Self::CUSTOM_KEY,
        }
    }

    pub fn is_custom(&self) -> bool {
        matches!(self, InstanceId::Custom)
    }

    /// Whether it is the listed instance type `name`.
    pub fn is(&self, name: &str) -> bool {
        matches!(self, InstanceId::Listed(s) if s == name)
    }
}

impl Serialize for InstanceId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key())
    }
}
