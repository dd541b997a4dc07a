//! The plan's inputs (SPEC §2): the model, data, precision, parallelism,
//! hardware and launch settings, with their defaults.

use serde::Serialize;
use std::borrow::Cow;

pub use super::lora_targets::LoraTargets;

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
    /// The LoRA adapters' dtype.
    LoraDtype {
        /// FP32: PEFT casts adapters to it by default
        /// (`get_peft_model(..., autocast_adapter_dtype=True)`).
        Fp32 => "fp32",
        /// The base's BF16 (`autocast_adapter_dtype=False`).
        Bf16 => "bf16",
    }
);

impl Plan {
    /// Sequences per GPU per micro-batch: `mb` samples, two rows each for a
    /// DPO pair (the memory and the step run both at once); GRPO's `mb`
    /// counts rows (TRL's `per_device_train_batch_size` counts completions).
    pub fn rows_per_micro_batch(&self) -> u64 {
        match self.training.stage {
            TrainingStage::Dpo => self.data.micro_batch.saturating_mul(2),
            TrainingStage::Sft | TrainingStage::Grpo => self.data.micro_batch,
        }
    }

    /// Bytes of one adapter parameter: FP32 unless the plan keeps the
    /// adapters in a BF16 base's dtype.
    pub fn adapter_bytes(&self) -> f64 {
        let bf16 =
            self.lora.lora_dtype == LoraDtype::Bf16 && self.numerics.precision != Precision::Fp32;
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
        let rows = match self.training.stage {
            TrainingStage::Sft => 1,
            TrainingStage::Dpo => 2,
            TrainingStage::Grpo => self.training.rollout.generations,
        };
        self.data.seq.saturating_mul(rows)
    }

    /// Whether a frozen reference model runs beside the policy: DPO's, and
    /// GRPO's when its KL penalty is on (TRL loads none at `beta = 0`).
    pub fn has_reference(&self) -> bool {
        match self.training.stage {
            TrainingStage::Sft => false,
            TrainingStage::Dpo => true,
            TrainingStage::Grpo => self.training.rollout.beta > 0.0,
        }
    }

    /// Forwards without gradients per micro-batch before the update:
    /// DPO's reference; GRPO's old policy (TRL computes it whenever vLLM
    /// generates, for `vllm_importance_sampling_correction`, on by default)
    /// and its reference when `beta > 0`.
    pub fn scoring_forwards(&self) -> u64 {
        match self.training.stage {
            TrainingStage::Sft => 0,
            TrainingStage::Dpo => 1,
            TrainingStage::Grpo => 1 + u64::from(self.has_reference()),
        }
    }

    /// Of the `scoring_forwards`, those of the policy itself (its adapters
    /// on): GRPO's old policy; a reference runs the frozen base.
    pub fn policy_scoring_forwards(&self) -> u64 {
        match self.training.stage {
            TrainingStage::Grpo => 1,
            TrainingStage::Sft | TrainingStage::Dpo => 0,
        }
    }

    /// Tokens per micro-batch whose logits the loss takes: every row's, or
    /// GRPO's completions only (TRL's `logits_to_keep = C + 1`).
    pub fn logit_tokens(&self) -> u64 {
        match self.training.stage {
            TrainingStage::Grpo => self
                .data
                .micro_batch
                .saturating_mul(self.training.rollout.completion.min(self.data.seq) + 1),
            _ => self.rows_per_micro_batch().saturating_mul(self.data.seq),
        }
    }

    /// The adapters' `lora_alpha`: the plan's, or twice the rank.
    pub fn lora_alpha_or_default(&self) -> u64 {
        self.lora
            .lora_alpha
            .unwrap_or_else(|| self.lora.lora_rank.saturating_mul(2))
    }

    pub fn lora_params(&self, arch: &crate::architecture::Architecture) -> f64 {
        arch.lora_params(self.lora.lora_rank, self.adapted(arch))
    }

    /// The modules of `arch` the adapters wrap (`lora_targets`).
    ///
    /// On Megatron the adapters sit on Megatron-Core's modules: where the
    /// targets take whole fused modules (q, k and v all or none; gate and
    /// up both or neither) Megatron-Bridge's `LoRA` puts one adapter on
    /// each fused one (`fused`), else its `CanonicalLoRA` one on each
    /// Linear as PEFT does. An MLA model's gate and up are always one
    /// module there (CanonicalLoRA splits Llama-style layers only):
    /// adapting one adapts both.
    pub fn adapted(
        &self,
        arch: &crate::architecture::Architecture,
    ) -> crate::architecture::Adapted {
        let mut adapted = self.lora.lora_targets.adapted().on(arch);
        if self.implementation.stack != Stack::Megatron {
            return adapted;
        }
        let gated = arch.mlp.is_gated();
        if arch.mla.is_some() {
            let fc1 = adapted.gate || adapted.up;
            (adapted.gate, adapted.up) = (fc1, fc1);
            adapted.fused = true;
        } else {
            let a = adapted;
            adapted.fused = a.q == a.k && a.k == a.v && (a.gate == a.up || !gated);
        }
        adapted
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

/// Every input of a plan, section by section. `Plan::default()` is the
/// page's opening plan: each section's own default.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Plan {
    /// The model: a preset or a quick size, with the user's shape overrides.
    #[serde(flatten)]
    pub model: ModelChoice,
    /// What the run trains and how.
    #[serde(flatten)]
    pub training: TrainingSetup,
    /// The adapters of a LoRA or QLoRA plan.
    #[serde(flatten)]
    pub lora: Lora,
    /// What each step trains on, and the run's tokens.
    #[serde(flatten)]
    pub data: Data,
    /// The number formats of compute and states.
    #[serde(flatten)]
    pub numerics: Numerics,
    /// What the step recomputes or offloads of its activations.
    #[serde(flatten)]
    pub activations: Activations,
    /// The stack, kernels and compilation that run the step.
    #[serde(flatten)]
    pub implementation: Implementation,
    /// How the job is split across GPUs.
    #[serde(flatten)]
    pub parallelism: Parallelism,
    /// Where the job runs and what an hour of it costs.
    #[serde(flatten)]
    pub hardware: Hardware,
    /// How an MoE plan dispatches tokens to experts.
    #[serde(flatten)]
    pub moe: MoeDispatch,
    /// How the run saves checkpoints.
    #[serde(flatten)]
    pub saving: Saving,
    /// What the verdict keeps free and adds on top of the tensors.
    #[serde(flatten)]
    pub allowances: Allowances,
    /// How the exported code launches the job.
    #[serde(flatten)]
    pub launch: Launch,
    /// What the auto-plan may change and the limits it keeps to.
    #[serde(flatten)]
    pub auto: AutoPlanLimits,
}

/// How the job is split across GPUs: ZeRO/FSDP sharding, tensor, sequence, pipeline, context and expert parallelism, and what overlaps with compute.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Parallelism {
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
}

impl Default for Parallelism {
    fn default() -> Self {
        Parallelism {
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
            overlap: true,
            tp_overlap: false,
            ep_overlap: false,
        }
    }
}

/// What one step trains on and how many tokens the run sees: the sequence length, the micro-batch, gradient accumulation and the total tokens.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Data {
    pub seq: u64,
    pub micro_batch: u64,
    pub grad_accum: u64,
    /// Total training tokens.
    pub tokens: f64,
}

impl Default for Data {
    fn default() -> Self {
        Data {
            seq: 8192,
            micro_batch: 1,
            grad_accum: 8,
            tokens: 1e10,
        }
    }
}

/// The number formats a step computes and keeps its states in: the precision recipe, Megatron's gradient dtype, FP8 weights and BF16 optimizer moments.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Numerics {
    pub precision: Precision,
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
}

impl Default for Numerics {
    fn default() -> Self {
        Numerics {
            precision: Precision::Bf16,
            grad_bf16: false,
            fp8_params: false,
            bf16_moments: false,
        }
    }
}

/// How the run saves checkpoints: every how many steps, what (full states or weights), asynchronously or not, at what write bandwidth per node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Saving {
    pub save_every: u64,
    pub save: SaveKind,
    pub async_save: bool,
    /// Checkpoint destination write bandwidth per node, GB/s.
    pub save_bw: f64,
}

impl Default for Saving {
    fn default() -> Self {
        Saving {
            save_every: 500,
            save: SaveKind::Full,
            async_save: false,
            save_bw: 1.0,
        }
    }
}

/// What the verdict keeps free and adds on top of the tensors: the user's
/// headroom, and the workspaces and the allocator's reserve, measured by
/// stack and GPU count unless the user gives them (`memory::allowances`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Allowances {
    /// Share of usable GPU memory to keep free, percent (none by default:
    /// published runs use their GPUs to the last GiB, #55).
    pub headroom: f64,
    /// cuBLAS/NCCL workspaces, GiB per GPU (None: by GPU count).
    pub workspace_gib: Option<f64>,
    /// The caching allocator's reserve, percent of allocated memory (None:
    /// the measured one of the stack).
    pub fragmentation: Option<f64>,
}

impl Default for Allowances {
    fn default() -> Self {
        Allowances {
            headroom: 0.0,
            workspace_gib: None,
            fragmentation: None,
        }
    }
}

/// The adapters a LoRA or QLoRA plan trains: rank, alpha, the modules they wrap and their dtype (unused by full training).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Lora {
    pub lora_rank: u64,
    /// PEFT's `lora_alpha` (the adapters' scale is alpha / rank); None:
    /// twice the rank, what train.py has set since LoRA was exported.
    /// It moves no figure: the export carries it.
    pub lora_alpha: Option<u64>,
    /// The Linear layers LoRA adapts.
    pub lora_targets: LoraTargets,
    /// The adapters' dtype (written in the link only when BF16).
    pub lora_dtype: LoraDtype,
}

impl Default for Lora {
    fn default() -> Self {
        Lora {
            lora_rank: 16,
            lora_alpha: None,
            lora_targets: LoraTargets::ALL_LINEAR,
            lora_dtype: LoraDtype::Fp32,
        }
    }
}

/// What a step does with its activations: which it recomputes (checkpointing and, for selective, the modules) and how many layers' it offloads to the host.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Activations {
    pub checkpointing: Checkpointing,
    /// With selective recomputation, the modules Megatron recomputes beside
    /// the attention core (`--recompute-modules`).
    pub recompute_modules: RecomputeModules,
    pub offload: bool,
    /// Megatron's `--cpu-offloading-num-layers`: with `offload`, the layers
    /// per pipeline stage whose activations go to the host (None: all but
    /// SMP's horizon of 2, what the Hugging Face stack's SMP does).
    pub offload_layers: Option<u64>,
}

impl Default for Activations {
    fn default() -> Self {
        Activations {
            checkpointing: Checkpointing::None,
            recompute_modules: RecomputeModules::default(),
            offload: false,
            offload_layers: None,
        }
    }
}

/// The code that runs the step: the training stack, its attention kernel and loss, and whether torch.compile fuses it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Implementation {
    pub stack: Stack,
    pub attention: Attention,
    pub loss: Loss,
    /// torch.compile on a torchtitan job (`compile=0` turns it off): its
    /// fused elementwise kernels. Other stacks do not read it (Megatron's
    /// kernels are fused already; the bundle's train.py does not compile).
    pub compile: bool,
}

impl Default for Implementation {
    fn default() -> Self {
        Implementation {
            stack: Stack::Hf,
            attention: Attention::Flash,
            loss: Loss::Plain,
            compile: true,
        }
    }
}

/// How an MoE plan's tokens reach their experts: Megatron's flex dispatcher (DeepEP), CUDA graphs around it, and how unevenly the router loads the experts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MoeDispatch {
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
}

impl Default for MoeDispatch {
    fn default() -> Self {
        MoeDispatch {
            moe_flex: false,
            moe_graphs: false,
            moe_imbalance: 1.0,
        }
    }
}

/// What the run trains and how: full weights or adapters, the stage (SFT, DPO, GRPO and its rollouts), the optimizer and multi-token prediction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrainingSetup {
    pub train: Training,
    /// The training stage (`stage=`): SFT unless the URL says otherwise.
    pub stage: TrainingStage,
    /// GRPO's generation settings (`stage=grpo` only).
    pub rollout: Rollout,
    pub optimizer: Optimizer,
    /// Multi-token-prediction layers trained beside the model (Megatron's
    /// `--mtp-num-layers`; DeepSeek-V3 trains 1): each one more decoder
    /// layer, a `2h x h` projection and another pass of the LM head and the
    /// loss, on the last pipeline stage.
    pub mtp: u64,
}

impl Default for TrainingSetup {
    fn default() -> Self {
        TrainingSetup {
            train: Training::Full,
            stage: TrainingStage::Sft,
            rollout: Rollout::default(),
            optimizer: Optimizer::Adamw,
            mtp: 0,
        }
    }
}

/// The model a plan trains: a preset, a quick size, and the shape fields the user changed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelChoice {
    /// Preset id, or `custom`.
    #[serde(rename = "model")]
    pub preset: String,
    pub arch: ArchOverrides,
    /// Quick size in billions: derive a plausible shape (overrides `model`).
    pub params_b: Option<f64>,
}

impl ModelChoice {
    /// A shape given field by field (`model=custom`), on the default
    /// preset's other fields.
    pub fn custom() -> ModelChoice {
        ModelChoice {
            preset: "custom".into(),
            ..ModelChoice::default()
        }
    }
}

impl Default for ModelChoice {
    fn default() -> Self {
        ModelChoice {
            preset: "llama-3.1-8b".into(),
            arch: ArchOverrides::default(),
            params_b: None,
        }
    }
}

/// Where the job runs: the SageMaker instance type (or a custom GPU), how
/// many, a GB200 UltraServer's NVLink domain, and the hour's price.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hardware {
    /// The SageMaker instance type, or `custom`.
    pub instance: String,
    /// The GPU when `instance` is `custom`.
    pub custom_gpu: CustomGpu,
    pub nodes: u64,
    /// GPUs per NVLink domain of a GB200 UltraServer: 72 (u-p6e-gb200x72,
    /// 18 instances) or 36 (x36, 9 instances).
    pub ultraserver: u64,
    pub spot: bool,
    /// USD per instance-hour, overriding the catalogue.
    pub price: Option<f64>,
}

impl Default for Hardware {
    fn default() -> Self {
        Hardware {
            instance: "ml.p6-b200.48xlarge".into(),
            custom_gpu: CustomGpu::default(),
            nodes: 1,
            ultraserver: 72,
            spot: false,
            price: None,
        }
    }
}

/// How the exported code launches the job on SageMaker: names, paths and
/// the entry point. No figure reads them, except that the entry point names
/// the engine (`train.py` is the launch bundle's).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Launch {
    /// The SageMaker execution role's ARN.
    pub role: String,
    /// Where outputs and checkpoints go.
    pub s3: String,
    /// The training job's base name.
    pub job: String,
    /// The training script the launcher runs.
    pub entry: String,
    /// The Hugging Face model id the script loads.
    pub hf_model: String,
}

impl Default for Launch {
    fn default() -> Self {
        Launch {
            role: String::new(),
            s3: String::new(),
            job: String::new(),
            entry: "train.py".into(),
            hf_model: String::new(),
        }
    }
}

/// The auto-plan's inputs beside the plan: what it must keep, and the
/// budget and deadline its plans keep to. No figure of the plan reads them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AutoPlanLimits {
    /// Dimensions the search must keep as they are.
    pub locks: Locks,
    /// Spend at most this many USD.
    pub budget_usd: Option<f64>,
    /// Finish within this many hours.
    pub deadline_hours: Option<f64>,
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

#[cfg(test)]
mod tests {
    use super::fmt_num;

    /// Whole numbers below a million take a shortcut: the float formatter's
    /// own text, whatever the sign (`-0` stays `-0`).
    #[test]
    fn whole_numbers_are_written_as_the_float_formatter_writes_them() {
        let mut xs: Vec<f64> = vec![0.0, -0.0, 1.0, -1.0, 999_999.0, -999_999.0, 8192.0];
        xs.extend((0..2000).map(|i| (i * 499) as f64 - 500_000.0));
        for x in xs {
            assert_eq!(fmt_num(x), format!("{x}"), "{x:?}");
        }
        assert_eq!(fmt_num(1e6), "1e6");
        assert_eq!(fmt_num(0.5), "0.5");
    }
}
