//! The launch bundle of a plan: `launch.py`, the training script it names,
//! the script's pinned requirements and a README with the prediction.
//!
//! The training script itself (`bundle/train.py`) is one file for every plan:
//! the launcher's hyperparameters carry the plan into it. The CLI embeds it;
//! the page fetches it on demand, so it never weighs on the page's wasm.

use crate::evaluate::evaluate;
use crate::export::{export_of, hyperparameter_items, sdk_packages, Format, TRIAL_STEPS};
use crate::plan::{Optimizer, Plan, Precision, Training};
use crate::report::{Report, Verdict};
use std::fmt::Write;

/// Versions the bundle's script is tested with in CI (tests/bundle), the
/// ones of the SDK's newest Hugging Face image (data/sdk.json).
pub const TRANSFORMERS: &str = "transformers==4.56.2";
pub const PEFT: &str = "peft==0.17.1";
pub const BITSANDBYTES: &str = "bitsandbytes==0.50.2";
/// torchao's release built against PyTorch 2.8 (its FP8 and MXFP8 training).
pub const TORCHAO: &str = "torchao==0.13.0";
/// GRPO plans' grpo.py: TRL's GRPOTrainer (tests/trl), and the vLLM its
/// `vllm` extra pins (0.10.2, built against PyTorch 2.8).
pub const TRL: &str = "trl==0.24.0";
pub const VLLM: &str = "vllm==0.10.2";

/// The line a finished run prints, which `measured::parse` reads back.
pub const MEASURED_TAG: &str = "TRAIN_PLANNER_MEASURED";

/// One file of the bundle: its path inside the bundle and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    pub path: String,
    pub text: String,
}

/// The launcher formats a bundle can carry (TrainingArguments is not a launcher).
pub fn launchers() -> [Format; 3] {
    [Format::Pytorch, Format::Huggingface, Format::ModelTrainer]
}

/// The static script a plan's bundle carries, by its name under
/// `crates/planner/bundle/` (and the site's `bundle/`): the Hugging Face
/// stack's `train.py`, or a Megatron plan's Megatron-Bridge launcher.
pub fn script_name(plan: &Plan) -> &'static str {
    if megatron_bundle(plan) {
        crate::megatron_bridge::SCRIPT
    } else if plan.engine() == crate::plan::Engine::Grpo {
        crate::plan::GRPO_SCRIPT
    } else {
        "train.py"
    }
}

/// A Megatron plan launched by the bundle's own launcher (not the user's).
fn megatron_bundle(plan: &Plan) -> bool {
    plan.engine() == crate::plan::Engine::MegatronBridge
}

/// The bundle's files, in a fixed order. `script` is the text of the
/// static script `script_name(plan)` names.
pub fn files(plan: &Plan, launcher: Format, script: &str) -> Vec<File> {
    files_of(plan, &evaluate(plan), launcher, script)
}

/// As `files`, from the plan's report (the page's: its download evaluates
/// nothing again, #34).
pub fn files_of(plan: &Plan, report: &Report, launcher: Format, script: &str) -> Vec<File> {
    let entry = entry_path(plan);
    let mut files = vec![
        File {
            path: "README.md".into(),
            text: readme(plan, report, launcher, &entry),
        },
        File {
            path: "launch.py".into(),
            text: export_of(plan, report, launcher).code,
        },
        File {
            path: format!("scripts/{entry}"),
            text: script.to_string(),
        },
    ];
    if megatron_bundle(plan) {
        files.push(File {
            path: format!("scripts/{}", crate::megatron_bridge::SETTINGS_FILE),
            text: crate::megatron_bridge::settings_text(plan, report),
        });
    } else {
        files.push(File {
            path: "scripts/requirements.txt".into(),
            text: requirements(plan, launcher),
        });
    }
    files
}

/// The bundle as one ZIP archive (what the page downloads and `--out x.zip` writes).
pub fn zip(files: &[File]) -> Vec<u8> {
    let entries: Vec<(&str, &[u8])> = files
        .iter()
        .map(|f| (f.path.as_str(), f.text.as_bytes()))
        .collect();
    crate::zip::archive(&entries)
}

/// Where the entry script goes under `scripts/`: the plan's `entry` when it is a
/// plain relative path, else `train.py` (a bundle never writes outside itself).
pub fn entry_path(plan: &Plan) -> String {
    let e = plan.launch_entry().trim();
    let plain = !e.is_empty()
        && e.ends_with(".py")
        && e.split('/').all(|part| {
            !part.is_empty()
                && part != ".."
                && part != "."
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        });
    if plain {
        e.to_string()
    } else {
        "train.py".into()
    }
}

/// What the image lacks, pinned: transformers on the PyTorch images, PEFT for
/// adapters, bitsandbytes for 4-bit bases and 8-bit AdamW, torchao for FP8.
pub fn requirements(plan: &Plan, launcher: Format) -> String {
    let mut lines =
        vec!["# Installed by SageMaker before the script starts; the versions CI trains with."];
    if launcher != Format::Huggingface {
        lines.push(TRANSFORMERS);
    }
    if plan.training.train != Training::Full {
        lines.push(PEFT);
    }
    if plan.training.train == Training::Qlora || plan.training.optimizer == Optimizer::Adamw8bit {
        lines.push(BITSANDBYTES);
    }
    if matches!(plan.numerics.precision, Precision::Fp8 | Precision::Mxfp8) {
        lines.push(TORCHAO);
    }
    if plan.training.stage == crate::plan::TrainingStage::Grpo {
        lines.extend([TRL, VLLM]);
    }
    lines.join("\n") + "\n"
}

fn readme(plan: &Plan, r: &Report, launcher: Format, entry: &str) -> String {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let mut s = String::new();
    let name = r.model_name.english();
    let _ = writeln!(s, "# {name} on {} x {}\n", plan.hardware.nodes, r.instance);
    let _ = writeln!(
        s,
        "Generated by Train Planner for the plan `?{}`.\n",
        plan.to_query()
    );
    s.push_str("## What the planner predicted\n\n");
    let _ = writeln!(s, "| | predicted |\n|---|---|");
    let _ = writeln!(
        s,
        "| memory per GPU | {:.1} GiB of a {:.1} GiB budget ({}) |",
        gib(r.memory.peak_bytes_per_gpu),
        gib(r.memory.budget_bytes),
        r.verdict.key().replace('_', " ")
    );
    let _ = writeln!(
        s,
        "| speed | {:.0} tokens/s per GPU, MFU {:.0}% |",
        r.throughput.tokens_per_second_per_gpu,
        r.throughput.mfu * 100.0
    );
    let _ = writeln!(s, "| step time | {:.2} s |", r.throughput.step_seconds);
    let _ = writeln!(
        s,
        "| time | {:.1} h for {} steps |",
        r.time.total_hours, r.time.steps
    );
    let _ = writeln!(s, "| cost | {} |\n", crate::export::cost_words(r));
    if r.verdict == Verdict::Tight {
        s.push_str("**Tight**: the plan fits only if PyTorch's caching allocator gives back what it usually caches (or only inside the headroom you asked for), and may run out of memory: `python launch.py --trial` shows it in minutes. `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` lets the allocator use the last GiB.\n\n");
    } else if !r.fits {
        s.push_str("**The planner says this plan does not fit in GPU memory**: the job would run out of memory. Change the plan before launching it.\n\n");
    }
    if megatron_bundle(plan) {
        s.push_str(&megatron_readme(launcher, entry));
        return s;
    }
    let _ = writeln!(s, "{}", run_steps(launcher, entry, plan.training.stage));
    s.push_str(if plan.engine() == crate::plan::Engine::Grpo {
        GRPO_SUPPORT
    } else {
        SUPPORT
    });
    s.push_str("\n## Hyperparameters\n\nEach one carries a planner setting into the script:\n\n");
    for (k, v) in hyperparameter_items(plan, r) {
        if k != "plan" {
            let _ = writeln!(s, "- `{k}` = `{}`", v.trim_matches('"'));
        }
    }
    s
}

/// The SageMaker SDK package a launcher format needs (v3 for ModelTrainer).
fn sdk_package(launcher: Format) -> &'static str {
    let (sdk_v2, sdk_v3) = sdk_packages();
    if launcher == Format::ModelTrainer {
        sdk_v3
    } else {
        sdk_v2
    }
}

fn run_steps(launcher: Format, entry: &str, stage: crate::plan::TrainingStage) -> String {
    let sdk = sdk_package(launcher);
    let data = match stage {
        crate::plan::TrainingStage::Sft => {
            "JSON Lines \
files with a `text` field, or a dataset saved with `datasets.save_to_disk` that has an \
`input_ids` column. Texts are tokenized and packed into the planned sequence length."
        }
        crate::plan::TrainingStage::Dpo => {
            "JSON Lines \
files of preference pairs, each line with `prompt`, `chosen` and `rejected` (TRL's preference \
format). Prompt + chosen and prompt + rejected each fill one row of the planned sequence length \
(padded; a long pair keeps the end of its prompt), and only the completions are scored."
        }
        crate::plan::TrainingStage::Grpo => {
            "JSON Lines \
files of prompts, each line with `prompt` (and any other field, which the reward function \
receives by name). Each prompt is left-truncated to the planned prompt length (the sequence \
length less the completion length); the reward is `rewards.py`'s `reward` if you add one to \
`scripts/`, else the bundled format reward."
        }
    };
    format!(
        "## Run it\n\n\
1. `pip install {sdk}`, with AWS credentials and a SageMaker execution role.\n\
2. Upload the training data to `s3_prefix + \"/data/train\"` (see `launch.py`): {data}\n\
3. A trial first, on the same instances: `python launch.py --trial` runs {TRIAL_STEPS} steps.\n\
4. The job's log ends with one line that starts with `{MEASURED_TAG}`. Paste it into the \
planner's page (\"Measured run\"), or run `plan report '<plan>' --measured '<line>'`: it shows \
measured against predicted and re-bases the time and cost on the measured speed.\n\
5. Then the real run: `python launch.py`. A restarted job (managed spot) resumes from the newest \
complete checkpoint in `/opt/ml/checkpoints`; the trained model (or adapter) lands in the job's \
`model.tar.gz`.\n\n\
`scripts/{entry}` runs as well by hand: `torchrun --nproc_per_node N scripts/{entry} --model_id \
<hub id or dir> --data_dir <dir> --max_seq_length 4096 --max_steps 20 ...` \
(`python scripts/{entry} --help` lists every setting).\n"
    )
}

const SUPPORT: &str = "## What the script does and does not do\n\n\
- Data parallelism: DDP, ZeRO-1 (DDP + ZeroRedundancyOptimizer), FSDP2 without resharding \
after forward (ZeRO-2) or with it (ZeRO-3), and hybrid sharding (HSDP) over the plan's shard group.\n\
- Tensor parallelism (`tp`, inside a node) under FSDP2 across, through PyTorch's DTensor \
(`parallelize_module`, as torchtitan applies it): column-parallel q/k/v/gate/up, row-parallel \
o/down, the embedding and the LM head split over the vocabulary with a vocabulary-parallel loss, \
and with `sequence_parallel` the norms and the residual stream split along the sequence. \
Llama-style dense layers (Llama, Mistral, Qwen2), full training in fp32 or BF16, ZeRO-2/3.\n\
- Pipeline, context and expert parallelism need Megatron-Core (a plan with `stack=megatron` \
gets a Megatron-Bridge launcher instead of this script): the script stops with a message when \
the plan asks for them.\n\
- Proven where: the data-parallel layouts (DDP, ZeRO-1, FSDP2, HSDP 2 x 2) and FSDP 2 x TP 2 \
with and without sequence parallelism train on CPU with gloo in this project's tests (PyTorch \
2.8), on 4 ranks as one process does; their memory is counted by the project's memory oracle. \
NCCL, the GPU kernels (flash attention, FP8) and the speed need a GPU: the trial run measures \
them.\n- Precision: fp32, BF16 (fp32 weights; FSDP gathers BF16 copies, otherwise autocast), pure BF16, \
and FP8 / MXFP8 through torchao on GPUs that have them (embedding, norms and LM head stay in BF16). \
Where FP8 is unavailable it stops and says why; `--fp8_fallback True` trains in BF16 instead. \
NVFP4 training is not wired yet.\n\
- Activation checkpointing: none, selective (the attention core, as Megatron's), full, \
op-level (keeps matmul and attention outputs), or a fraction of the layers; activation offloading \
to host memory.\n\
- Loss: plain (full fp32 logits, as Hugging Face computes it) or fused (chunks of 1,024 tokens, \
never the full logits).\n\
- LoRA and QLoRA through PEFT (rank and target modules as planned); QLoRA with \
ZeRO/FSDP sharding is not supported.\n\
- DPO (`--stage dpo`): TRL's sigmoid loss (beta 0.1, `--beta`) over the chosen and rejected \
rows of each pair in one batch; the reference model's log-probabilities come first, without \
gradients, from a frozen BF16 copy sharded as the policy is, or under LoRA from the base with \
its adapters off. Data parallel only (no `tp`). It runs in this script's loop, not TRL's \
`DPOTrainer`, because TRL 0.24 wraps a frozen reference in FSDP1 under FSDP2 and fails \
(huggingface/trl#3581); a test holds its pairs, log-probabilities, loss and gradients equal to \
`DPOTrainer`'s.\n\
- Not yet: packing with document masks (documents are concatenated with an end-of-text token), \
learning-rate schedules beyond a constant rate, evaluation.\n";

const GRPO_SUPPORT: &str = "## What the script does and does not do\n\n\
- TRL 0.24.0's `GRPOTrainer`: each optimizer step generates `num_generations` completions per \
prompt with a vLLM engine inside `vllm_gpu_memory_utilization` of every training GPU \
(`vllm_mode=\"colocate\"`, over `vllm_tensor_parallel_size` GPUs), scores them (the old \
policy's log-probabilities, and a frozen reference's when `beta > 0`), and trains with TRL's \
`dapo` loss over the completions, as the planner modelled the step.\n\
- With `vllm_server_gpus` (the plan's `gen_gpus`), vLLM runs as a server instead \
(`vllm_mode=\"server\"`): SageMaker runs `grpo.py` once on the instance, which starts \
`trl vllm-serve` on the first `vllm_server_gpus` GPUs (`--data_parallel_size` engines of \
`vllm_tensor_parallel_size`, at `--gpu_memory_utilization 0.9`), waits for it to answer, \
trains under torchrun on the other GPUs and stops the server at the end. One instance only.\n\
- Data parallelism: DDP, or FSDP2 full sharding through accelerate; BF16 mixed precision; \
gradient checkpointing on or off; full training or LoRA through PEFT. Anything else the plan \
asks for (ZeRO-1/2, hybrid sharding, tensor or pipeline parallelism, FP8/FP4, QLoRA, offloading, \
a fused loss) stops the script with one line saying why.\n\
- Proven where: one step on two CPU processes (DDP, Transformers generating, since vLLM and \
accelerate's FSDP need GPUs) in this project's tests, and the `GRPOConfig` it builds on the \
planned world size holds the planner's settings; the server's and torchrun's command lines are \
checked against the plan and TRL's own argument parser. vLLM, FSDP2 and the speed need a GPU: the \
trial run measures them.\n";

/// How a Megatron plan's bundle runs, and what was proven where.
fn megatron_readme(launcher: Format, entry: &str) -> String {
    let sdk = sdk_package(launcher);
    let settings = crate::megatron_bridge::SETTINGS_FILE;
    format!(
        "## Run it\n\n\
This plan trains with Megatron-Bridge in NVIDIA's NeMo Framework container: `scripts/{entry}` \
builds Megatron-Bridge's `ConfigContainer` from `scripts/{settings}`, which holds every setting \
the planner assumed (parallel layout with the pipeline's first and last stages, recomputation, \
activation offloading, precision, optimizer and distributed optimizer, overlap, MoE dispatcher, \
micro and global batch, sequence) and the model's rotary embeddings as its config.json sets \
them, under the names of the configuration classes that take them.\n\n\
1. Build NVIDIA's NeMo Framework container for SageMaker and push it to your ECR: pick a tag \
of `nvcr.io/nvidia/nemo` whose release notes list Megatron-Bridge 0.3.1 or newer; SageMaker's \
script mode needs its training toolkit in the image, so build from a two-line Dockerfile, \
`FROM nvcr.io/nvidia/nemo:<tag>` and `RUN pip install sagemaker-training`, tag the image as \
`<account>.dkr.ecr.<region>.amazonaws.com/nemo-sagemaker:<tag>`, log in with \
`aws ecr get-login-password | docker login --username AWS --password-stdin <account>.dkr.ecr.<region>.amazonaws.com` \
and `docker push`. Set `NEMO_IMAGE_URI` to that URI before running `launch.py`.\n\
2. `pip install {sdk}`, with AWS credentials and a SageMaker execution role.\n\
3. Tokenize the training data into Megatron's indexed format (Megatron-LM's \
`tools/preprocess_data.py`, in the container) and upload the `.bin`/`.idx` pairs to \
`s3_prefix + \"/data/train\"`. Every pair found there is used.\n\
4. A trial first: `python launch.py --trial` trains {TRIAL_STEPS} iterations; Megatron-Bridge logs \
its throughput per iteration.\n\
5. Then the real run: `python launch.py`. Checkpoints go to `/opt/ml/checkpoints`, which \
SageMaker syncs with `s3_prefix + \"/checkpoints\"`; a restarted job resumes from them.\n\
6. A LoRA plan fine-tunes `hf_model` (the settings file's) with Megatron-Bridge's `LoRA` or \
`CanonicalLoRA` (its `peft` group): the launcher converts the Hugging Face weights to Megatron's \
format once with Megatron-Bridge's `AutoBridge` on each node, or reads a converted checkpoint \
from a `pretrained` channel (`--pretrained_checkpoint`); the base stays frozen in the plan's \
precision, the adapters train in BF16 with FP32 optimizer states.\n\n\
## What was proven where\n\n\
- In the planner's CI, on a CPU: `python scripts/{entry} --check` builds Megatron-Core's own \
`TransformerConfig` (or `MLATransformerConfig`), `OptimizerConfig` and \
`DistributedDataParallelConfig` from this file with the pinned megatron-core 0.16.1, whose \
constructors validate the layout, recomputation and precision; the Megatron-Bridge groups' \
names are checked against the pinned megatron-bridge 0.3.1's source (it does not import without \
a GPU's TransformerEngine). Run `--check` yourself after editing the settings file.\n\
- Needs GPUs: the training itself, and a LoRA plan's conversion of its Hugging Face weights. \
Not run here (the planner says so in a note on the export, and the launcher refuses): \
activation offloading with pipeline stages or recomputation (Megatron-Core refuses \
both), op-level checkpointing, pure BF16, 8-bit and Adafactor optimizers, Gemma's, OLMo 2's and \
Llama 4's layer shapes; nor the `TRAIN_PLANNER_MEASURED` line the Hugging Face stack's script \
prints.\n"
    )
}
