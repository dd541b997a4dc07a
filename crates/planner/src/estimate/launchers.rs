//! What the bundle's launchers run (#37): train.py's tensor parallelism and
//! the Megatron-Bridge launcher, each one rule, read by the resolver (an
//! error with its fix), by the search (which offers no plan its export
//! refuses) and, for Megatron, by the launcher's settings file (its
//! `unsupported` field, which the launcher itself refuses to start on).

use crate::model::architecture::rope::RopeKind;
use crate::model::architecture::{Architecture, QkNorm};
use crate::model::job::Job;
use crate::model::plan::{
    Checkpointing, Engine, Optimizer, Plan, Precision, Stack, Training, TrainingStage,
};
use crate::text::{Arg, Message, Text};

/// What the launch bundle does not run of a job, each a note on its export
/// with the change that makes the bundle run it (#55: estimate first). The
/// plan keeps its figures: a setting the bundled scripts do not carry is
/// the export's limit, not the job's. None where the user brings their own
/// entry script (`entry=`), which the bundle does not judge.
/// `engine_pp` is a GRPO plan's vLLM pipeline stages (`RolloutFigures`).
pub fn export_notes(plan: &Plan, job: &Job, engine_pp: u64) -> Vec<Message> {
    let mut notes: Vec<Message> = no_engine(plan).into_iter().collect();
    if plan.bundled_hf() {
        notes.extend(train_py_notes(plan, job));
    }
    notes.extend(refusal_note(
        megatron_refusal(plan, &job.arch, Choice::of(plan)),
        Text::MegatronLauncherRefuses,
    ));
    notes.extend(refusal_note(
        grpo_refusal(plan, Choice::of(plan)).or(grpo_engine_refusal(plan, engine_pp)),
        Text::GrpoRefuses,
    ));
    if plan.saving.recovery == crate::model::plan::Recovery::Memory {
        let m = Message::new("recovery", Text::CheckpointlessNotBundled, []);
        notes.push(m.fix("recovery", "save"));
    }
    notes
}

/// grpo.py's vLLM engine runs inside one node (TRL's
/// `vllm_tensor_parallel_size`, no pipeline stages): a policy whose engine
/// needs `engine_pp` stages across nodes (NeMo RL's and verl's layout) is
/// estimated, and the export says grpo.py does not run it.
fn grpo_engine_refusal(plan: &Plan, engine_pp: u64) -> Option<Refusal> {
    (plan.engine() == Engine::Grpo && engine_pp > 1).then_some(Refusal {
        what: What::Setting("pipeline_parallel_size>1"),
        key: "gen_share",
        fix: None,
    })
}

/// A stack and training kind no engine the bundle knows runs together:
/// multi-token prediction is Megatron's (`--mtp-num-layers`); a 4-bit NF4
/// base is bitsandbytes' through PEFT, or torchao's in torchtune on PyTorch
/// FSDP2, and Megatron-Core loads neither (Megatron-Bridge's PEFT is LoRA,
/// DoRA and canonical LoRA; training_engines.md). The figures are the
/// physics of such a job, checked by nothing; the search proposes nothing.
pub fn no_engine(plan: &Plan) -> Option<Message> {
    let stack = plan.implementation.stack;
    if plan.training.mtp > 0 && stack != Stack::Megatron {
        let m = Message::new("mtp", Text::MtpNeedsMegatron, []);
        return Some(m.fix("stack", "megatron"));
    }
    if plan.training.train == Training::Qlora && stack == Stack::Megatron {
        let args: [(&'static str, Arg); 1] = [("stack", Arg::from(stack.key()))];
        let m = Message::new("train", Text::QloraNeedsHf, args);
        return Some(m.fix("stack", "hf"));
    }
    None
}

/// What the bundled train.py (and grpo.py) run of a Hugging Face plan:
/// data and tensor parallelism only, tensor parallelism as
/// `hf_tp_refusal` allows, adapters in 16 bits, and a 4-bit base unsharded.
fn train_py_notes(plan: &Plan, job: &Job) -> Vec<Message> {
    let layout = &job.layout;
    let mut notes = Vec::new();
    let degrees = [("pp", layout.pp), ("cp", layout.cp), ("ep", layout.ep)];
    if let Some((key, _)) = degrees.iter().find(|(_, d)| *d > 1) {
        let m = Message::new(key, Text::HfModelParallel, []);
        notes.push(m.fix("stack", "megatron"));
    }
    let training = (plan.training.train, plan.training.stage);
    let (precision, zero) = (plan.numerics.precision, plan.parallelism.zero);
    if let Some(r) = hf_tp_refusal(&job.arch, training, precision, zero, layout.tp) {
        notes.push(r.message(layout.tp));
    }
    if plan.hf_qlora() && zero > 0 && layout.gpus > 1 {
        let m = Message::new("zero", Text::QloraSharded, []);
        notes.push(m.fix("zero", "0"));
    }
    if !crate::model::rules::adapters_run_in(precision, plan.hf_adapters()) {
        let args: [(&'static str, Arg); 1] = [("precision", Arg::from(precision.key()))];
        let m = Message::new("precision", Text::LowPrecisionAdapters, args);
        notes.push(m.fix("precision", "bf16"));
    }
    notes
}

/// A launcher's refusal as a note on the input that asks for it, with the
/// change that makes it run.
fn refusal_note(r: Option<Refusal>, text: Text) -> Option<Message> {
    let r = r?;
    let args: [(&'static str, Arg); 1] = [("what", r.what.arg())];
    let m = Message::new(r.key, text, args);
    Some(match r.fix {
        Some((key, value)) => m.fix(key, value),
        None => m,
    })
}

/// A setting the launcher does not run: what it is, the input it belongs
/// to, and the change that makes the plan run, if one input does it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub what: What,
    pub key: &'static str,
    pub fix: Option<(&'static str, &'static str)>,
}

/// What a refusal names: a setting in the link's own words (`zero=1`), or,
/// where no one setting says it, a phrase of the catalog (#34: said in the
/// page's language, not pre-written in English).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    Setting(&'static str),
    Said(Text),
}

impl What {
    /// As a message's argument.
    pub fn arg(self) -> Arg {
        match self {
            What::Setting(s) => Arg::from(s),
            What::Said(id) => Arg::Text(id),
        }
    }

    /// In English (the Megatron launcher's settings file).
    pub fn english(self) -> &'static str {
        match self {
            What::Setting(s) => s,
            What::Said(id) => crate::text::t(crate::text::Lang::En, id),
        }
    }
}

/// The settings a search candidate chooses for itself; the rest are the
/// plan's.
#[derive(Clone, Copy, Debug)]
pub struct Choice {
    pub precision: Precision,
    pub zero: u8,
    pub pp: u64,
    pub checkpointing: Checkpointing,
}

impl Choice {
    /// The plan's own choices.
    pub fn of(plan: &Plan) -> Self {
        Choice {
            precision: plan.numerics.precision,
            zero: plan.parallelism.zero,
            pp: plan.parallelism.pp,
            checkpointing: plan.activations.checkpointing,
        }
    }
}

/// The first setting of a Megatron-Bridge plan the launcher does not run,
/// or `None` when it runs all of it (or the plan starts another engine).
/// Each is a refusal Megatron-Core or Megatron-Bridge would make at launch,
/// or a setting the launcher does not carry over as modelled: optimizers
/// Megatron-Core lacks, PyTorch's op-level checkpointing,
/// activation offloading where Megatron-Core does not run it, and layer
/// shapes its generic GPT provider does not build.
pub fn megatron_refusal(plan: &Plan, a: &Architecture, c: Choice) -> Option<Refusal> {
    if plan.engine() != Engine::MegatronBridge {
        return None;
    }
    let to_hf = to_hf(plan, a, c);
    if let Some(what) = unsupported_shape(a) {
        return Some(Refusal {
            what: What::Setting(what),
            key: "model",
            fix: to_hf,
        });
    }
    setting_rules(plan, a, c, to_hf)
        .into_iter()
        .find(|r| r.0)
        .map(|(_, what, key, fix)| Refusal {
            what: What::Setting(what),
            key,
            fix,
        })
}

/// The Hugging Face stack as a fix, where train.py runs the plan as it is:
/// not with pipeline, context or expert parallelism, multi-token
/// prediction, or a tensor-parallel layout train.py refuses (each of those
/// errors would send the plan back to stack=megatron).
fn to_hf(plan: &Plan, a: &Architecture, c: Choice) -> Option<(&'static str, &'static str)> {
    let hf_runs_it = c.pp <= 1
        && plan.parallelism.cp <= 1
        && plan.parallelism.ep <= 1
        && plan.training.mtp == 0
        && hf_tp_refusal(
            a,
            (plan.training.train, plan.training.stage),
            c.precision,
            c.zero,
            plan.parallelism.tp,
        )
        .is_none();
    hf_runs_it.then_some(("stack", "hf"))
}

/// A setting the launcher refuses: whether the plan asks for it, its name,
/// the input that asks and the change that makes the plan run.
type Rule = (bool, &'static str, &'static str, Fix);

/// The input and value that make a refused plan run.
type Fix = Option<(&'static str, &'static str)>;

/// The launcher's rules on settings, in the order they are reported.
fn setting_rules(
    plan: &Plan,
    a: &Architecture,
    c: Choice,
    to_hf: Option<(&'static str, &'static str)>,
) -> [Rule; 11] {
    let adamw = Some(("optimizer", "adamw"));
    [
        // Its training step is the next-token loss; DPO runs in train.py,
        // GRPO in grpo.py.
        (
            !plan.training.stage.next_token_loss(),
            match plan.training.stage {
                TrainingStage::Dpo => "stage=dpo",
                TrainingStage::Grpo => "stage=grpo",
                TrainingStage::Sft => "stage=sft",
            },
            "stage",
            to_hf.or(Some(("stage", "sft"))),
        ),
        (
            plan.training.optimizer == Optimizer::Adamw8bit,
            "optimizer=adamw8bit",
            "optimizer",
            adamw,
        ),
        (
            plan.training.optimizer == Optimizer::Adafactor,
            "optimizer=adafactor",
            "optimizer",
            adamw,
        ),
        (
            c.precision == Precision::Bf16Pure,
            "precision=bf16-pure",
            "precision",
            Some(("precision", "bf16")),
        ),
        (
            c.checkpointing == Checkpointing::Op,
            "ckpt=op",
            "ckpt",
            // Offloading runs without recomputation only (below).
            Some((
                "ckpt",
                if plan.activations.offload {
                    "none"
                } else {
                    "selective"
                },
            )),
        ),
        // Megatron-Core's TransformerConfig refuses its activation
        // offloading with pipeline stages or with recomputation.
        (
            plan.activations.offload && c.pp > 1,
            "offload=1 + pp>1",
            "offload",
            Some(("offload", "0")),
        ),
        (
            plan.activations.offload && c.checkpointing != Checkpointing::None,
            "offload=1 + ckpt",
            "ckpt",
            Some(("ckpt", "none")),
        ),
        // ... and without CUDA graphs (the MoE router's here).
        (
            plan.activations.offload && plan.moe.moe_graphs && a.moe.is_some(),
            "offload=1 + moe_graphs=1",
            "moe_graphs",
            Some(("moe_graphs", "0")),
        ),
        (
            plan.numerics.bf16_moments && plan.training.optimizer == Optimizer::Sgd,
            "bf16_moments=1 + optimizer=sgd",
            "bf16_moments",
            Some(("bf16_moments", "0")),
        ),
        (
            plan.numerics.bf16_moments && c.zero == 0,
            "bf16_moments=1 + zero=0",
            "bf16_moments",
            Some(("bf16_moments", "0")),
        ),
        (
            plan.numerics.fp8_params && c.precision == Precision::Nvfp4,
            "fp8_params=1 + precision=nvfp4",
            "fp8_params",
            Some(("fp8_params", "0")),
        ),
    ]
}

/// A model shape the launcher's generic GPT provider does not build:
/// Megatron-Bridge gives Gemma its own layer spec for the norms after
/// attention and MLP, Megatron-Core's QK-norm works per head (OLMo 2 norms
/// the whole projections), and Llama 4's chunked local attention is not a
/// sliding window.
fn unsupported_shape(a: &Architecture) -> Option<&'static str> {
    if a.norms_per_layer > 2 {
        Some("norms_per_layer=4 (Gemma)")
    } else if a.qk_norm == QkNorm::Full {
        Some("qk_norm=full (OLMo 2)")
    } else if a.chunked {
        Some("attention_chunk_size (Llama 4)")
    } else {
        unsupported_rope(a)
    }
}

/// Rotary scalings Megatron-Core does not compute as the config does:
/// linear interpolation, Llama 3 bands other than Megatron-Core's fixed
/// ones, and scaling other than YaRN on MLA.
fn unsupported_rope(a: &Architecture) -> Option<&'static str> {
    let s = a.rope.scaling?;
    match s.kind {
        RopeKind::Linear => Some("rope_scaling=linear"),
        RopeKind::Llama3 if a.mla.is_some() || !s.is_megatron_llama3() => {
            Some("rope_scaling=llama3")
        }
        RopeKind::Llama3 | RopeKind::Yarn => None,
    }
}

/// What the bundled train.py's tensor parallelism (PyTorch DTensor, as
/// torchtitan applies it; `apply_tensor_parallel` there) does not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HfTpRefusal {
    /// Its TP plan names a Llama-style layer's modules (`TP_LAYER`).
    Layer,
    /// PEFT's adapters are not split: LoRA trains data parallel.
    Adapters,
    /// DPO and GRPO run their reference model (and GRPO its vLLM engine)
    /// unsplit: data parallel only.
    Dpo,
    /// torchao's FP8/MX layers are not given tensor-parallel styles there.
    LowPrecision,
    /// DDP does not take DTensor weights: TP runs under FSDP2.
    NoFsdp,
}

/// The one rule for a tensor-parallel plan on the bundled train.py, read by
/// the resolver (an error) and by the search (which leaves such plans out).
pub fn hf_tp_refusal(
    arch: &Architecture,
    (train, stage): (Training, TrainingStage),
    precision: Precision,
    zero: u8,
    tp: u64,
) -> Option<HfTpRefusal> {
    if tp <= 1 {
        None
    } else if !arch.llama_style_tp(tp) {
        Some(HfTpRefusal::Layer)
    } else if train != Training::Full {
        Some(HfTpRefusal::Adapters)
    } else if !stage.next_token_loss() {
        Some(HfTpRefusal::Dpo)
    } else if precision.is_low_precision() {
        Some(HfTpRefusal::LowPrecision)
    } else if zero < 2 {
        Some(HfTpRefusal::NoFsdp)
    } else {
        None
    }
}

impl HfTpRefusal {
    pub fn message(self, tp: u64) -> Message {
        let args: [(&'static str, Arg); 1] = [("tp", Arg::from(&tp))];
        let (key, text, fix) = match self {
            HfTpRefusal::Layer => ("tp", Text::HfTpLayer, ("stack", "megatron")),
            HfTpRefusal::Adapters => ("train", Text::HfTpAdapters, ("tp", "1")),
            HfTpRefusal::Dpo => ("stage", Text::HfTpDpo, ("tp", "1")),
            HfTpRefusal::LowPrecision => {
                ("precision", Text::HfTpLowPrecision, ("precision", "bf16"))
            }
            HfTpRefusal::NoFsdp => ("zero", Text::HfTpNeedsFsdp, ("zero", "3")),
        };
        Message::new(key, text, args).fix(fix.0, fix.1)
    }
}

/// The first setting of a GRPO plan that the bundle's grpo.py does not run
/// as modelled, or `None` when it runs all of it (or the plan is not GRPO,
/// or starts a Megatron launcher, which refuses GRPO itself). grpo.py is
/// TRL's `GRPOTrainer` under the Transformers Trainer: DDP, or FSDP2 full
/// sharding through accelerate (no DeepSpeed ZeRO-1/2, no hybrid groups),
/// BF16 mixed precision (the vLLM engine generates in BF16), gradient
/// checkpointing on or off, TRL's own loss over the completion's logits,
/// LoRA through PEFT (vLLM takes the merged weights; a 4-bit base has none
/// to merge into), no offloading and no `torch.compile`.
pub fn grpo_refusal(plan: &Plan, c: Choice) -> Option<Refusal> {
    if !plan.training.stage.generates() || plan.engine() != Engine::Grpo {
        return None;
    }
    let full_reference = plan.training.rollout.beta > 0.0 && plan.training.train == Training::Full;
    let rules: [(bool, What, &'static str, Fix); 11] = [
        (
            c.zero == 1,
            What::Setting("zero=1"),
            "zero",
            Some(("zero", "3")),
        ),
        (
            c.zero == 2,
            What::Setting("zero=2"),
            "zero",
            Some(("zero", "3")),
        ),
        (
            plan.parallelism.shard.is_some() && c.zero >= 2,
            What::Said(Text::GrpoHybridSharding),
            "shard",
            Some(("shard", "")),
        ),
        (
            c.precision != Precision::Bf16,
            What::Said(Text::GrpoOtherPrecisions),
            "precision",
            Some(("precision", "bf16")),
        ),
        (
            !matches!(c.checkpointing, Checkpointing::None | Checkpointing::Full),
            What::Said(Text::GrpoOtherCheckpointing),
            "ckpt",
            Some(("ckpt", "full")),
        ),
        (
            plan.activations.offload,
            What::Setting("offload=1"),
            "offload",
            Some(("offload", "0")),
        ),
        (
            plan.implementation.loss == crate::model::plan::Loss::Fused,
            What::Setting("loss=fused"),
            "loss",
            Some(("loss", "plain")),
        ),
        (
            plan.training.train == Training::Qlora,
            What::Setting("train=qlora"),
            "train",
            Some(("train", "lora")),
        ),
        // TRL 0.24 wraps the reference in FSDP1 with FSDP2's mixed-precision
        // policy, which fails (huggingface/trl#3581): beta = 0 loads none.
        (
            full_reference && c.zero == 3,
            What::Said(Text::GrpoReferenceUnderFsdp2),
            "beta",
            Some(("beta", "0")),
        ),
        (
            plan.saving.async_save && plan.saving.save == crate::model::plan::SaveKind::Full,
            What::Setting("async_save=1"),
            "async_save",
            Some(("async_save", "0")),
        ),
        // TRL's GRPOTrainer casts the adapters to FP32 (PEFT's default).
        (
            plan.training.train != Training::Full
                && plan.lora.lora_dtype == crate::model::plan::LoraDtype::Bf16,
            What::Said(Text::GrpoBf16Adapters),
            "lora_dtype",
            Some(("lora_dtype", "fp32")),
        ),
    ];
    rules
        .into_iter()
        .find(|r| r.0)
        .map(|(_, what, key, fix)| Refusal { what, key, fix })
}
