//! SageMaker launch code for a plan: pure string building.
//!
//! Formats: the SDK v2 `PyTorch` and `HuggingFace` estimators, SDK v3
//! `ModelTrainer`, and the matching `transformers.TrainingArguments` (with a
//! TransformerEngine recipe for FP8). Framework versions come from the SDK's
//! own image_uri_config (data/sdk.json). Every user-typed string goes through
//! `py_str`, so nothing typed can leave its literal.

use crate::evaluate::evaluate;
use crate::plan::{
    Attention, Checkpointing, Loss, Optimizer, Plan, Precision, Training, TrainingStage,
};
use crate::report::{Report, Verdict};
use crate::throughput::Generation;
use serde::Serialize;
use std::fmt::Write;

/// The code formats a plan exports to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Format {
    Pytorch,
    Huggingface,
    ModelTrainer,
    TrainingArgs,
}

impl Format {
    pub const ALL: [Format; 4] = [
        Format::Pytorch,
        Format::Huggingface,
        Format::ModelTrainer,
        Format::TrainingArgs,
    ];
    pub fn key(self) -> &'static str {
        match self {
            Format::Pytorch => "pytorch",
            Format::Huggingface => "huggingface",
            Format::ModelTrainer => "modeltrainer",
            Format::TrainingArgs => "training-args",
        }
    }
    pub fn from_key(s: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.key() == s)
    }
}

struct Pt {
    version: &'static str,
    py: &'static str,
    cuda: &'static str,
}
struct Smp {
    version: &'static str,
    py: &'static str,
    smp: &'static str,
}
struct Hf {
    transformers: &'static str,
    pytorch: &'static str,
    py: &'static str,
    cuda: &'static str,
}
struct SdkV2 {
    package: &'static str,
    pytorch: &'static [Pt],
    smp_pytorch: &'static [Smp],
    huggingface: &'static [Hf],
}
struct SdkV3 {
    package: &'static str,
    pytorch: &'static [Pt],
    smp_pytorch: &'static [Smp],
}
struct Sdk {
    v2: SdkV2,
    v3: SdkV3,
}

// `SDK`: data/sdk.json as Rust values, written by build.rs (`sdk_code`).
include!(concat!(env!("OUT_DIR"), "/sdk_data.rs"));

fn sdk() -> &'static Sdk {
    &SDK
}

/// The SDK packages the generated code is written for.
pub fn sdk_packages() -> (&'static str, &'static str) {
    (sdk().v2.package, sdk().v3.package)
}

/// A Python string literal that holds exactly `s`: double-quoted, with
/// backslashes, quotes and every non-printable or non-ASCII character escaped.
pub fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Text for a `#` comment: printable ASCII only, one line.
fn comment(s: &str) -> String {
    s.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect()
}

/// The launch code, and what the generator decided on the user's behalf.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Export {
    pub format: Format,
    pub code: String,
    pub filename: String,
}

struct Ctx<'a> {
    plan: &'a Plan,
    report: &'a Report,
    blackwell: bool,
    smp_wanted: bool,
    smp: bool,
    gpus_per_node: u64,
    /// GPUs of GRPO's vLLM server: grpo.py then starts it and torchrun
    /// itself, one process per instance (no SageMaker distribution).
    server_gpus: u64,
}

impl Ctx<'_> {
    fn smp_fallback_note(&self) -> Option<&'static str> {
        (self.smp_wanted && !self.smp).then_some(
            "SMP v2 has no image for this GPU (its newest is PyTorch 2.5.1 / CUDA 12.4; Blackwell needs CUDA >= 12.8): using plain torchrun + FSDP; configure hybrid sharding and activation offloading in train.py",
        )
    }
}

fn ctx<'a>(plan: &'a Plan, report: &'a Report) -> Ctx<'a> {
    let gpu = crate::hardware::instance(&plan.hardware.instance)
        .and_then(|i| crate::hardware::gpu(i.gpu));
    let blackwell = report.throughput.generation == Generation::Blackwell;
    // train.py runs tensor parallelism itself (DTensor, #37): SMP v2 only for
    // hybrid sharding and activation offloading.
    // grpo.py shards through accelerate and refuses hybrid groups and offloading.
    let grpo = plan.engine() == crate::plan::Engine::Grpo;
    let smp_wanted = (plan.parallelism.shard.is_some() || plan.activations.offload) && !grpo;
    // SMP v2 images run on ml.p4d, ml.p4de and ml.p5* (Ampere/Hopper).
    let smp_instance = ["ml.p4d.", "ml.p4de.", "ml.p5.", "ml.p5e.", "ml.p5en."]
        .iter()
        .any(|p| plan.hardware.instance.starts_with(p));
    let smp = smp_wanted && !blackwell && smp_instance && gpu.is_some();
    let server = report.rollout.as_ref().map_or(0, |g| g.server_gpus);
    let gpus_per_node = (report.layout.gpus + server) / plan.hardware.nodes.max(1);
    Ctx {
        plan,
        report,
        blackwell,
        smp_wanted,
        smp,
        gpus_per_node,
        server_gpus: server,
    }
}

/// Seconds SageMaker lets the job run: predicted time plus 25% and an hour, within SageMaker's 28 days.
fn max_run(c: &Ctx<'_>) -> u64 {
    let predicted = c.report.time.total_hours * 3600.0;
    ((predicted * 1.25 + 3600.0).ceil() as u64).clamp(3600, 28 * 24 * 3600)
}

fn header(c: &Ctx<'_>, title: &str) -> String {
    let r = c.report;
    let p = c.plan;
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let mut h = String::new();
    let _ = writeln!(h, "# {title}, generated by Train Planner.");
    let _ = writeln!(h, "# Plan: ?{}", comment(&p.to_query()));
    let _ = writeln!(
        h,
        "# {} on {} x {} ({} x {}{}): {} - {:.1} GiB of a {:.1} GiB budget per GPU",
        comment(&r.model_name.english()),
        p.hardware.nodes,
        comment(&r.instance),
        r.layout.gpus + c.server_gpus,
        comment(&r.gpu),
        match c.server_gpus {
            0 => String::new(),
            k => format!(", vLLM's server on {k} of them"),
        },
        match r.verdict {
            Verdict::Fits => "fits",
            Verdict::Tight => "TIGHT (may run out of memory)",
            Verdict::DoesNotFit => "DOES NOT FIT",
        },
        gib(r.memory.peak_bytes_per_gpu),
        gib(r.memory.budget_bytes)
    );
    let cost = comment(&cost_words(r));
    let _ = writeln!(
        h,
        "# Predicted: {:.0} tokens/s per GPU, MFU {:.0}%, {:.1} h for {:.3e} tokens, {cost}",
        r.throughput.tokens_per_second_per_gpu,
        r.throughput.mfu * 100.0,
        r.time.total_hours,
        p.data.tokens
    );
    // What the bundle does not run of this plan (#55): the code below is
    // the plan's, but the bundled script refuses these at launch.
    for note in &r.export_notes {
        let fix = note.fix.as_ref().map_or(String::new(), |(k, v)| {
            format!(" (the bundle runs it with {k}={v})")
        });
        let text = note.phrase.english();
        let _ = writeln!(
            h,
            "# NOT COVERED by the bundle: {}{}",
            comment(&text),
            comment(&fix)
        );
    }
    h
}

/// The predicted cost with its price basis, as the launch header and the
/// bundle's README state it.
pub(crate) fn cost_words(r: &Report) -> String {
    match r.cost.total_usd {
        Some(u) => format!(
            "${u:.0} on-demand (price: {})",
            match r.cost.price_source.as_str() {
                "listed" => format!(
                    "listed, as of {}",
                    r.cost.price_as_of.as_deref().unwrap_or("?")
                ),
                "derived" =>
                    "an ESTIMATE, 1.15 x the EC2 on-demand price; SageMaker lists none".into(),
                other => other.to_string(),
            }
        ),
        None => "cost unknown (no on-demand price: enter the price you pay)".into(),
    }
}

fn hf_optim(o: Optimizer) -> &'static str {
    match o {
        Optimizer::Adamw => "adamw_torch_fused",
        Optimizer::AdamwForeach => "adamw_torch",
        Optimizer::Adamw8bit => "adamw_bnb_8bit",
        Optimizer::Adafactor => "adafactor",
        Optimizer::Sgd => "sgd",
    }
}

fn fsdp_value(p: &Plan) -> &'static str {
    match (p.parallelism.zero, p.parallelism.shard.is_some()) {
        (3, true) => "hybrid_shard auto_wrap",
        (3, false) => "full_shard auto_wrap",
        (1 | 2, _) => "shard_grad_op auto_wrap",
        _ => "",
    }
}

/// Hyperparameters passed to train.py, in the script's own names: each one
/// carries a planner setting, so the script trains exactly what was modelled.
pub fn hyperparameter_items(plan: &Plan, report: &Report) -> Vec<(&'static str, String)> {
    let p = plan;
    let r = report;
    if nemo(p) {
        // The Megatron-Bridge launcher reads every setting from its file;
        // the launch passes the plan's link and the trial's length.
        return vec![
            ("plan", py_str(&p.to_query())),
            ("max_steps", r.time.steps.to_string()),
        ];
    }
    let mut items: Vec<(&'static str, String)> = Vec::new();
    if let Some(id) = model_id(p, r) {
        items.push(("model_id", py_str(id)));
    }
    items.push(("plan", py_str(&p.to_query())));
    items.push(("max_seq_length", p.data.seq.to_string()));
    items.push((
        "per_device_train_batch_size",
        p.data.micro_batch.to_string(),
    ));
    items.push(("gradient_accumulation_steps", p.data.grad_accum.to_string()));
    items.push(("max_steps", r.time.steps.to_string()));
    items.push(("precision", py_str(p.numerics.precision.key())));
    items.push(("checkpointing", py_str(&p.activations.checkpointing.key())));
    if p.activations.offload {
        items.push(("activation_offloading", "True".into()));
    }
    items.push(("zero_stage", p.parallelism.zero.to_string()));
    items.push(("shard_degree", r.layout.shard.to_string()));
    items.push(("planned_world_size", r.layout.gpus.to_string()));
    for (k, v) in [
        ("tp", r.layout.tp),
        ("pp", r.layout.pp),
        ("cp", r.layout.cp),
        ("ep", r.layout.ep),
    ] {
        if v > 1 {
            items.push((k, v.to_string()));
        }
    }
    if r.layout.tp > 1 {
        items.push(("sequence_parallel", py_bool(p.parallelism.sp)));
    }
    items.push((
        "attn_implementation",
        py_str(match p.implementation.attention {
            Attention::Flash | Attention::Fa2 | Attention::Cudnn => "sdpa",
            Attention::Eager => "eager",
        }),
    ));
    items.push(("loss", py_str(p.implementation.loss.key())));
    items.push(("optim", py_str(p.training.optimizer.key())));
    items.push(("train_mode", py_str(p.training.train.key())));
    if p.training.stage != TrainingStage::Sft {
        items.push(("stage", py_str(p.training.stage.key())));
    }
    if let Some(g) = &r.rollout {
        // grpo.py's GRPOConfig, as the planner modelled the rollouts (#38).
        let o = &p.training.rollout;
        items.push(("num_generations", o.generations.to_string()));
        items.push(("max_completion_length", o.completion.to_string()));
        items.push(("beta", crate::plan::fmt_num(o.beta)));
        let share = if g.server_gpus > 0 {
            crate::rollout::SERVER_SHARE
        } else {
            o.gen_share
        };
        items.push(("vllm_gpu_memory_utilization", crate::plan::fmt_num(share)));
        items.push(("vllm_tensor_parallel_size", g.vllm_tp.to_string()));
        if g.server_gpus > 0 {
            // grpo.py starts `trl vllm-serve` on these GPUs and torchrun on the rest.
            items.push(("vllm_server_gpus", g.server_gpus.to_string()));
        }
    }
    if p.training.train != Training::Full {
        items.push(("lora_r", p.lora.lora_rank.to_string()));
        items.push(("lora_alpha", p.lora_alpha_or_default().to_string()));
        items.push(("lora_targets", py_str(&p.lora.lora_targets.key())));
        if p.lora.lora_dtype == crate::plan::LoraDtype::Bf16 {
            items.push(("lora_dtype", py_str("bf16")));
        }
    }
    items.push(("save_steps", p.saving.save_every.max(1).to_string()));
    items.push(("save", py_str(p.saving.save.key())));
    if p.saving.async_save {
        items.push(("async_save", "True".into()));
    }
    items.push(("output_dir", py_str("/opt/ml/checkpoints")));
    items
}

/// The weights train.py loads: the plan's Hugging Face model, or the preset's
/// Hub repository when the shape is the preset's own (not a custom one).
pub(crate) fn model_id<'a>(p: &'a Plan, r: &Report) -> Option<&'a str> {
    if !p.launch.hf_model.is_empty() {
        return Some(&p.launch.hf_model);
    }
    crate::architecture::preset(&p.model.preset)
        .filter(|m| m.name == r.model_name.english() && !m.hub.is_empty())
        .map(|m| m.hub)
}

/// The hyperparameters as a Python dict, and the trial switch: `python launch.py --trial`
/// runs a few dozen steps on the same instances before the real job.
fn hyperparameters(c: &Ctx<'_>) -> String {
    let mut s = String::from("hyperparameters = {\n");
    for (k, v) in hyperparameter_items(c.plan, c.report) {
        let _ = writeln!(s, "    {}: {v},", py_str(k));
    }
    s.push_str("}\n");
    s.push_str("# A short trial first, on the same instances: python launch.py --trial\n");
    let _ = writeln!(s, "TRIAL = \"--trial\" in sys.argv");
    let _ = writeln!(s, "if TRIAL:");
    let _ = writeln!(s, "    hyperparameters[\"max_steps\"] = {TRIAL_STEPS}");
    s
}

/// Steps of the trial run (the field guide: iterate on short runs before the full job).
pub const TRIAL_STEPS: u64 = 30;

fn py_bool(b: bool) -> String {
    if b { "True" } else { "False" }.into()
}

/// `role`, the S3 prefix and the session, as Python lines.
fn preamble(c: &Ctx<'_>, session: &str) -> String {
    let p = c.plan;
    let mut s = String::new();
    let _ = writeln!(s, "session = {session}");
    if p.launch.role.is_empty() {
        let _ = writeln!(
            s,
            "role = sagemaker.get_execution_role()  # or your SageMaker execution role ARN"
        );
    } else {
        let _ = writeln!(s, "role = {}", py_str(&p.launch.role));
    }
    if p.launch.s3.is_empty() {
        let _ = writeln!(
            s,
            "s3_prefix = \"s3://\" + session.default_bucket() + \"/train-planner\""
        );
    } else {
        let _ = writeln!(s, "s3_prefix = {}", py_str(&p.launch.s3));
    }
    s
}

fn job_name(p: &Plan) -> String {
    py_str(if p.launch.job.is_empty() {
        "train-planner"
    } else {
        &p.launch.job
    })
}

fn entry(p: &Plan) -> String {
    py_str(if p.launch.entry.is_empty() {
        "train.py"
    } else {
        p.launch_entry()
    })
}

/// A Megatron plan launched through the bundle's Megatron-Bridge launcher:
/// it runs in the NeMo Framework container, from the user's ECR (#37).
fn nemo(p: &Plan) -> bool {
    p.engine() == crate::plan::Engine::MegatronBridge
}

/// The NeMo container's URI, which the user pushes to ECR (bundle README).
const NEMO_IMAGE: &str = "import os\n\n# The NeMo Framework container in your ECR (the bundle's README says how to push it).\nNEMO_IMAGE_URI = os.environ.get(\"NEMO_IMAGE_URI\") or sys.exit(\"set NEMO_IMAGE_URI to your ECR copy of the NeMo Framework container (README.md)\")\n";

fn smp_parameters(c: &Ctx<'_>) -> Vec<(&'static str, String)> {
    let p = c.plan;
    let mut v = vec![(
        "hybrid_shard_degree",
        p.parallelism
            .shard
            .unwrap_or(c.report.layout.dp)
            .to_string(),
    )];
    if p.activations.offload {
        v.push(("sm_activation_offloading", "True".into()));
        v.push(("activation_loading_horizon", "2".into()));
    }
    v
}

/// Spot jobs may wait for capacity: twice max_run, within SageMaker's 28 days, never below max_run.
fn max_wait(run: u64) -> u64 {
    (run * 2).min(28 * 24 * 3600).max(run)
}

fn spot_lines(c: &Ctx<'_>, out: &mut String) {
    let run = max_run(c);
    let _ = writeln!(
        out,
        "    max_run={run},  # predicted {:.1} h + 25% + 1 h",
        c.report.time.total_hours
    );
    if c.plan.hardware.spot {
        let wait = max_wait(run);
        let _ = writeln!(out, "    use_spot_instances=True,");
        let _ = writeln!(
            out,
            "    max_wait={wait},  # >= max_run; spot capacity may take time"
        );
    } else {
        let _ = writeln!(out, "    use_spot_instances=False,");
    }
}

/// The SDK v2 estimator call shared by the PyTorch and HuggingFace exports.
/// The SDK's distribution argument: `value`, or None for a GRPO plan with
/// a vLLM server, whose grpo.py starts the server and torchrun itself.
fn launch_argument(c: &Ctx<'_>, key: &str, value: &str) -> String {
    if c.server_gpus > 0 {
        format!("    # grpo.py starts vLLM's server and torchrun itself: one process per instance.\n    {key}=None,\n")
    } else {
        format!("    {key}={value},\n")
    }
}

fn estimator(c: &Ctx<'_>, class: &str, versions: &[(&str, String)], distribution: &str) -> String {
    let p = c.plan;
    let mut s = format!("estimator = {class}(\n");
    let _ = writeln!(s, "    entry_point={},", entry(p));
    let _ = writeln!(s, "    source_dir=\"scripts\",");
    let _ = writeln!(s, "    role=role,");
    let _ = writeln!(s, "    instance_type={},", py_str(&p.hardware.instance));
    let _ = writeln!(s, "    instance_count={},", p.hardware.nodes);
    for (k, v) in versions {
        let _ = writeln!(s, "    {k}={v},");
    }
    s.push_str(&launch_argument(c, "distribution", distribution));
    let _ = writeln!(s, "    hyperparameters=hyperparameters,");
    let _ = writeln!(
        s,
        "    base_job_name={} + (\"-trial\" if TRIAL else \"\"),",
        job_name(p)
    );
    let _ = writeln!(s, "    checkpoint_s3_uri=s3_prefix + \"/checkpoints\",");
    let _ = writeln!(s, "    checkpoint_local_path=\"/opt/ml/checkpoints\",");
    let _ = writeln!(s, "    output_path=s3_prefix + \"/output\",");
    spot_lines(c, &mut s);
    let _ = writeln!(s, "    sagemaker_session=session,");
    s.push_str(")\n\n");
    s
}

fn pytorch(c: &Ctx<'_>) -> String {
    let sdk = &sdk().v2;
    let mut s = header(
        c,
        &format!(
            "SageMaker Python SDK v2 PyTorch estimator ({})",
            sdk.package
        ),
    );
    let (version, py, note) = if c.smp {
        let v = &sdk.smp_pytorch[0];
        (
            v.version,
            v.py,
            format!("SMP v2 {} image (PyTorch {})", v.smp, v.version),
        )
    } else {
        let v = &sdk.pytorch[0];
        (
            v.version,
            v.py,
            format!(
                "PyTorch {} ({}){}",
                v.version,
                v.cuda,
                if c.blackwell {
                    ": Blackwell needs CUDA >= 12.8"
                } else {
                    ""
                }
            ),
        )
    };
    if nemo(c.plan) {
        let _ = writeln!(
            s,
            "# Image: the NeMo Framework container (Megatron-Bridge), from your ECR"
        );
    } else {
        let _ = writeln!(s, "# Image: {note}");
    }
    if let Some(n) = c.smp_fallback_note().filter(|_| !nemo(c.plan)) {
        let _ = writeln!(s, "# {n}");
    }
    s.push_str("import sys\n\nimport sagemaker\nfrom sagemaker.pytorch import PyTorch\n\n");
    if nemo(c.plan) {
        s.push_str(NEMO_IMAGE);
        s.push('\n');
    }
    s.push_str(&preamble(c, "sagemaker.Session()"));
    s.push('\n');
    s.push_str(&hyperparameters(c));
    s.push('\n');
    let distribution = if c.smp {
        let params = smp_parameters(c)
            .iter()
            .map(|(k, v)| format!("{}: {v}", py_str(k)))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "{{\n        \"torch_distributed\": {{\"enabled\": True}},\n        \"smdistributed\": {{\"modelparallel\": {{\"enabled\": True, \"parameters\": {{{params}}}}}}},\n    }}"
        )
    } else {
        "{\"torch_distributed\": {\"enabled\": True}}".into()
    };
    let versions = if nemo(c.plan) {
        vec![("image_uri", "NEMO_IMAGE_URI".to_string())]
    } else {
        vec![
            ("framework_version", py_str(version)),
            ("py_version", py_str(py)),
        ]
    };
    s.push_str(&estimator(c, "PyTorch", &versions, &distribution));
    s.push_str("if __name__ == \"__main__\":\n    estimator.fit({\"train\": s3_prefix + \"/data/train\"}, wait=False)\n");
    s
}

fn huggingface(c: &Ctx<'_>) -> String {
    let sdk = &sdk().v2;
    let v = &sdk.huggingface[0];
    let mut s = header(
        c,
        &format!(
            "SageMaker Python SDK v2 HuggingFace estimator ({})",
            sdk.package
        ),
    );
    let _ = writeln!(
        s,
        "# Image: transformers {} + PyTorch {} ({}){}",
        v.transformers,
        v.pytorch,
        v.cuda,
        if c.blackwell {
            ": Blackwell needs CUDA >= 12.8"
        } else {
            ""
        }
    );
    if c.smp_wanted {
        let _ = writeln!(s, "# The HuggingFace estimator runs plain torchrun + FSDP here; for SMP v2 use the PyTorch export.");
    }
    s.push_str("import sys\n\nimport sagemaker\nfrom sagemaker.huggingface import HuggingFace\n\n");
    s.push_str(&preamble(c, "sagemaker.Session()"));
    s.push('\n');
    s.push_str(&hyperparameters(c));
    s.push('\n');
    s.push_str(&estimator(
        c,
        "HuggingFace",
        &[
            ("transformers_version", py_str(v.transformers)),
            ("pytorch_version", py_str(v.pytorch)),
            ("py_version", py_str(v.py)),
        ],
        "{\"torch_distributed\": {\"enabled\": True}}",
    ));
    s.push_str("if __name__ == \"__main__\":\n    estimator.fit({\"train\": s3_prefix + \"/data/train\"}, wait=False)\n");
    s
}

/// The ModelTrainer's image, looked up by the SDK's own `image_uris.retrieve`.
fn image_lookup(c: &Ctx<'_>, version: &str, py: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "training_image = image_uris.retrieve(");
    // SMP v2 images live under their own framework key (pytorch-smp, CUDA 12.4).
    let _ = writeln!(
        s,
        "    framework={},",
        py_str(if c.smp { "pytorch-smp" } else { "pytorch" })
    );
    let _ = writeln!(s, "    region=session.boto_region_name,");
    let _ = writeln!(s, "    version={},", py_str(version));
    let _ = writeln!(s, "    py_version={},", py_str(py));
    let _ = writeln!(
        s,
        "    instance_type={},",
        py_str(&c.plan.hardware.instance)
    );
    let _ = writeln!(s, "    image_scope=\"training\",");
    if c.smp {
        let _ = writeln!(s, "    container_version=\"cu124\",");
    }
    s.push_str(")\n\n");
    s
}

/// What the ModelTrainer's image is, for the launch code's header.
fn trainer_image_note(c: &Ctx<'_>, version: &str) -> String {
    if nemo(c.plan) {
        "the NeMo Framework container (Megatron-Bridge), from your ECR".into()
    } else if c.smp {
        format!("PyTorch {version} with SMP v2")
    } else if c.blackwell {
        format!("PyTorch {version}: Blackwell needs CUDA >= 12.8")
    } else {
        format!("PyTorch {version}")
    }
}

fn modeltrainer(c: &Ctx<'_>) -> String {
    let sdk = &sdk().v3;
    let p = c.plan;
    let mut s = header(
        c,
        &format!("SageMaker Python SDK v3 ModelTrainer ({})", sdk.package),
    );
    let (version, py) = if c.smp {
        (sdk.smp_pytorch[0].version, sdk.smp_pytorch[0].py)
    } else {
        (sdk.pytorch[0].version, sdk.pytorch[0].py)
    };
    let _ = writeln!(s, "# Image: {}", trainer_image_note(c, version));
    if let Some(n) = c.smp_fallback_note() {
        let _ = writeln!(s, "# {n}");
    }
    s.push_str("import sys\n\nfrom sagemaker.core import image_uris\n");
    s.push_str("from sagemaker.core.helper.session_helper import Session, get_execution_role\n");
    s.push_str("from sagemaker.train import ModelTrainer\n");
    s.push_str("from sagemaker.core.training.configs import CheckpointConfig, Compute, OutputDataConfig, SourceCode, StoppingCondition\n");
    s.push_str(if c.smp {
        "from sagemaker.train.distributed import SMP, Torchrun\n\n"
    } else {
        "from sagemaker.train.distributed import Torchrun\n\n"
    });
    s.push_str(
        &preamble(c, "Session()").replace("sagemaker.get_execution_role()", "get_execution_role()"),
    );
    s.push('\n');
    s.push_str(&hyperparameters(c));
    s.push('\n');
    if nemo(p) {
        s.push_str(NEMO_IMAGE);
        s.push_str("training_image = NEMO_IMAGE_URI\n\n");
    } else {
        s.push_str(&image_lookup(c, version, py));
    }
    let distributed = if c.smp {
        let params = smp_parameters(c)
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "Torchrun(process_count_per_node={}, smp=SMP({params}))",
            c.gpus_per_node
        )
    } else {
        format!("Torchrun(process_count_per_node={})", c.gpus_per_node)
    };
    let run = max_run(c);
    s.push_str("trainer = ModelTrainer(\n");
    let _ = writeln!(s, "    training_image=training_image,");
    let _ = writeln!(
        s,
        "    source_code=SourceCode(source_dir=\"scripts\", entry_script={}),",
        entry(p)
    );
    let _ = writeln!(
        s,
        "    compute=Compute(instance_type={}, instance_count={}, enable_managed_spot_training={}),",
        py_str(&p.hardware.instance),
        p.hardware.nodes,
        py_bool(p.hardware.spot)
    );
    s.push_str(&launch_argument(c, "distributed", &distributed));
    let _ = writeln!(s, "    hyperparameters=hyperparameters,");
    let _ = writeln!(s, "    role=role,");
    let _ = writeln!(
        s,
        "    base_job_name={} + (\"-trial\" if TRIAL else \"\"),",
        job_name(p)
    );
    let _ = writeln!(s, "    checkpoint_config=CheckpointConfig(s3_uri=s3_prefix + \"/checkpoints\", local_path=\"/opt/ml/checkpoints\"),");
    let _ = writeln!(
        s,
        "    output_data_config=OutputDataConfig(s3_output_path=s3_prefix + \"/output\"),"
    );
    if p.hardware.spot {
        let wait = max_wait(run);
        let _ = writeln!(s, "    stopping_condition=StoppingCondition(max_runtime_in_seconds={run}, max_wait_time_in_seconds={wait}),");
    } else {
        let _ = writeln!(
            s,
            "    stopping_condition=StoppingCondition(max_runtime_in_seconds={run}),"
        );
    }
    let _ = writeln!(s, "    sagemaker_session=session,");
    s.push_str(")\n\n");
    s.push_str("if __name__ == \"__main__\":\n    trainer.train(wait=False)\n");
    s
}

fn training_args(c: &Ctx<'_>) -> String {
    let p = c.plan;
    let r = c.report;
    let mut s = header(c, "transformers.TrainingArguments for train.py");
    s.push_str("from transformers import TrainingArguments\n\n");
    s.push_str("args = TrainingArguments(\n");
    let _ = writeln!(s, "    output_dir=\"/opt/ml/checkpoints\",");
    let _ = writeln!(s, "    per_device_train_batch_size={},", p.data.micro_batch);
    let _ = writeln!(s, "    gradient_accumulation_steps={},", p.data.grad_accum);
    let _ = writeln!(s, "    max_steps={},", r.time.steps);
    let _ = writeln!(
        s,
        "    bf16={},",
        py_bool(!matches!(p.numerics.precision, Precision::Fp32))
    );
    let ck = !matches!(
        p.activations.checkpointing,
        Checkpointing::None | Checkpointing::Selective
    );
    let _ = writeln!(s, "    gradient_checkpointing={},", py_bool(ck));
    if ck {
        let _ = writeln!(
            s,
            "    gradient_checkpointing_kwargs={{\"use_reentrant\": False}},"
        );
    }
    let _ = writeln!(s, "    optim={},", py_str(hf_optim(p.training.optimizer)));
    let fsdp = fsdp_value(p);
    if !fsdp.is_empty() && r.layout.dp > 1 {
        let _ = writeln!(s, "    fsdp={},", py_str(fsdp));
        let _ = writeln!(
            s,
            "    fsdp_config={{\"backward_prefetch\": \"backward_pre\", \"forward_prefetch\": True, \"use_orig_params\": True, \"activation_checkpointing\": False}},"
        );
    }
    if p.implementation.loss == Loss::Fused {
        let _ = writeln!(
            s,
            "    use_liger_kernel=True,  # fused linear cross-entropy: no full logits"
        );
    }
    let _ = writeln!(s, "    save_strategy=\"steps\",");
    let _ = writeln!(s, "    save_steps={},", p.saving.save_every.max(1));
    let _ = writeln!(s, "    logging_steps=10,");
    let _ = writeln!(s, "    report_to=\"none\",");
    s.push_str(")\n");
    if p.numerics.precision.is_low_precision() {
        s.push_str("\n# FP8 with TransformerEngine: wrap the forward pass; the embedding, norms and LM head\n");
        s.push_str("# stay in BF16 (TransformerEngine only converts the te.Linear/te.LayerNormMLP layers you use).\n");
        s.push_str("from transformer_engine.common.recipe import Format");
        match (p.numerics.precision, c.blackwell) {
            (Precision::Mxfp8, _) => {
                s.push_str(", MXFP8BlockScaling\n\nfp8_recipe = MXFP8BlockScaling(fp8_format=Format.E4M3)\n");
            }
            (Precision::Nvfp4, _) => {
                s.push_str(", NVFP4BlockScaling\n\nfp8_recipe = NVFP4BlockScaling()\n");
            }
            (_, true) => {
                s.push_str(", Float8CurrentScaling\n\nfp8_recipe = Float8CurrentScaling(fp8_format=Format.HYBRID)\n");
            }
            _ => {
                s.push_str(", DelayedScaling\n\nfp8_recipe = DelayedScaling(fp8_format=Format.HYBRID, amax_history_len=16, amax_compute_algo=\"max\")\n");
            }
        }
        s.push_str("# In the training step:\n#   import transformer_engine.pytorch as te\n#   with te.fp8_autocast(enabled=True, fp8_recipe=fp8_recipe):\n#       loss = model(**batch).loss\n");
    }
    s
}

/// The launch code of `plan` in `format`.
pub fn export(plan: &Plan, format: Format) -> Export {
    export_of(plan, &evaluate(plan), format)
}

/// The launch code of `plan` in `format`, from its report (the page's:
/// one evaluation per edit serves the results and the export, #34).
pub fn export_of(plan: &Plan, report: &Report, format: Format) -> Export {
    let c = ctx(plan, report);
    let code = match format {
        Format::Pytorch => pytorch(&c),
        // The NeMo container is not a Hugging Face image: the PyTorch
        // estimator runs it.
        Format::Huggingface if nemo(plan) => pytorch(&c),
        Format::Huggingface => huggingface(&c),
        Format::ModelTrainer => modeltrainer(&c),
        Format::TrainingArgs => training_args(&c),
    };
    let filename = match format {
        Format::TrainingArgs => "training_args.py".into(),
        f => format!("launch_{}.py", f.key().replace('-', "_")),
    };
    Export {
        format,
        code,
        filename,
    }
}

#[cfg(test)]
mod sdk_tests {
    use super::*;
    use crate::json::Json;

    /// build.rs writes data/sdk.json as Rust values; read again, the file
    /// holds the same versions in the same order.
    #[test]
    fn sdk_matches_the_file() {
        let file = crate::json::parse(include_str!("../data/sdk.json")).expect("parses");
        let rows = |v: &str, list: &str, keys: &[&str]| -> Vec<Vec<String>> {
            let items = file
                .get(v)
                .and_then(|x| x.get(list))
                .and_then(Json::as_array);
            items
                .expect("a list")
                .iter()
                .map(|e| {
                    keys.iter()
                        .map(|k| e.get(k).and_then(Json::as_str).unwrap().to_string())
                        .collect()
                })
                .collect()
        };
        let pt = |l: &[Pt]| -> Vec<Vec<String>> {
            l.iter()
                .map(|p| vec![p.version.into(), p.py.into(), p.cuda.into()])
                .collect()
        };
        let smp = |l: &[Smp]| -> Vec<Vec<String>> {
            l.iter()
                .map(|p| vec![p.version.into(), p.py.into(), p.smp.into()])
                .collect()
        };
        let s = sdk();
        assert_eq!(
            pt(s.v2.pytorch),
            rows("v2", "pytorch", &["version", "py", "cuda"])
        );
        assert_eq!(
            pt(s.v3.pytorch),
            rows("v3", "pytorch", &["version", "py", "cuda"])
        );
        assert_eq!(
            smp(s.v2.smp_pytorch),
            rows("v2", "smp_pytorch", &["version", "py", "smp"])
        );
        assert_eq!(
            smp(s.v3.smp_pytorch),
            rows("v3", "smp_pytorch", &["version", "py", "smp"])
        );
        let hf: Vec<Vec<String>> =
            s.v2.huggingface
                .iter()
                .map(|h| {
                    vec![
                        h.transformers.into(),
                        h.pytorch.into(),
                        h.py.into(),
                        h.cuda.into(),
                    ]
                })
                .collect();
        assert_eq!(
            hf,
            rows(
                "v2",
                "huggingface",
                &["transformers", "pytorch", "py", "cuda"]
            )
        );
        let package = |v: &str| {
            file.get(v)
                .and_then(|x| x.get("package"))
                .and_then(Json::as_str)
        };
        assert_eq!(Some(s.v2.package), package("v2"));
        assert_eq!(Some(s.v3.package), package("v3"));
    }
}
