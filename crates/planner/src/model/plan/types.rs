//! The plan's inputs (SPEC §2): the model, data, precision, parallelism,
//! hardware and launch settings, with their defaults.

use serde::Serialize;

pub use super::lora_targets::LoraTargets;

use super::choices::*;

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
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
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
    /// Unexpected interruptions per million GPU-hours (`fail_rate`; default
    /// the published Llama 3 405B run's, `failures::published_rate_...`).
    pub fail_rate: f64,
    /// Minutes from an interruption to training again, before reloading
    /// the last save (`restart_min`): an assumption to edit, not measured.
    pub restart_minutes: f64,
    /// Managed spot: the share of instances the spot market reclaims in a
    /// month, percent (`spot_rate`), in the unit of AWS's Spot Instance
    /// Advisor ("frequency of interruption": <5 %, 5-10 %, ... >20 %). The
    /// default 5 is the lowest band's edge: an assumption to edit.
    pub spot_rate: f64,
    /// How the job comes back from an interruption (`recovery`).
    pub recovery: Recovery,
}

impl Default for Saving {
    fn default() -> Self {
        Saving {
            save_every: 500,
            save: SaveKind::Full,
            async_save: false,
            save_bw: 1.0,
            fail_rate: crate::model::failures::published_rate_per_million_gpu_hours(),
            restart_minutes: 10.0,
            spot_rate: 5.0,
            recovery: Recovery::Save,
        }
    }
}

/// What the verdict keeps free and adds on top of the tensors: the user's
/// headroom, and the workspaces and the allocator's reserve, measured by
/// stack and GPU count unless the user gives them (`memory::allowances`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
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
    /// The SageMaker instance type, or the user's own GPU.
    pub instance: InstanceId,
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
            instance: InstanceId::Listed("ml.p6-b200.48xlarge".into()),
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
    /// The ARN of the SageMaker training plan whose capacity runs the job
    /// (empty: on-demand capacity).
    pub training_plan: String,
}

impl Default for Launch {
    fn default() -> Self {
        Launch {
            role: String::new(),
            s3: String::new(),
            job: String::new(),
            entry: "train.py".into(),
            hf_model: String::new(),
            training_plan: String::new(),
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

impl Plan {
    /// LoRA or QLoRA on the Hugging Face stack: the exported train.py
    /// trains adapters in BF16 only (TransformerEngine's FP8/FP4 Linear
    /// layers replace a full model's, not PEFT's adapters), so FP8 and FP4
    /// are errors there and the auto-plan leaves them out.
    pub fn hf_adapters(&self) -> bool {
        self.training.train != Training::Full && self.implementation.stack == Stack::Hf
    }

    /// The Hugging Face stack run by the launch bundle's own train.py (the
    /// default entry point): DDP, FSDP2 and HSDP, and DTensor tensor
    /// parallelism under FSDP2 where `launchers::hf_tp_refusal` allows it. It
    /// refuses pipeline, context and expert parallelism, so a plan with any
    /// of them is an error and the auto-plan leaves them out; a user's own
    /// entry script may run them (SMP v2, torchtitan), and is not judged.
    pub fn bundled_hf(&self) -> bool {
        self.implementation.stack == Stack::Hf && self.launch.entry == "train.py"
    }

    /// The script the launch code starts: the plan's `entry`, except that a
    /// Megatron plan left at the default `train.py` starts the bundle's
    /// Megatron-Bridge launcher (#37), and a GRPO plan the bundle's GRPO
    /// script (#38).
    pub fn launch_entry(&self) -> &str {
        if self.implementation.stack == Stack::Megatron && self.launch.entry == "train.py" {
            MEGATRON_BRIDGE_SCRIPT
        } else if self.bundled_hf() && self.training.stage.generates() {
            GRPO_SCRIPT
        } else {
            &self.launch.entry
        }
    }

    /// The engine the plan's exported launch code starts (#37): the
    /// bundle's train.py, its Megatron-Bridge launcher, or an entry point of
    /// the user's own (a torchtitan plan, or any `entry=` but the default).
    pub fn engine(&self) -> Engine {
        match self.implementation.stack {
            Stack::Megatron if self.launch_entry() == MEGATRON_BRIDGE_SCRIPT => {
                Engine::MegatronBridge
            }
            Stack::Hf if self.launch_entry() == GRPO_SCRIPT => Engine::Grpo,
            Stack::Hf if self.launch.entry == "train.py" => Engine::TrainPy,
            _ => Engine::OwnEntry,
        }
    }

    /// QLoRA on the Hugging Face stack: the exported train.py runs it
    /// unsharded (DDP; bitsandbytes' 4-bit weights under FSDP2 are not
    /// supported there), so ZeRO on several GPUs is an error and the
    /// auto-plan keeps zero=0.
    pub fn hf_qlora(&self) -> bool {
        self.training.train == Training::Qlora && self.implementation.stack == Stack::Hf
    }
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
