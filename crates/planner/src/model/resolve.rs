//! Resolve a plan: its model, hardware and parallel layout, each checked,
//! with a message per problem tied to the input it concerns. Errors never
//! stop the evaluation: each step falls back to the nearest valid value.

use crate::model::architecture::{self, Architecture, Moe};
use crate::model::fabric::Fabric;
use crate::model::hardware::{self, Gpu, Instance};
use crate::model::job::Job;
use crate::model::layout::{Layout, Stages};
use crate::model::plan::{Plan, Stack, Training};
use crate::model::recipe::Recipe;
use crate::model::rules::{self, Unsupported};
pub use crate::text::Message;
use crate::text::{Arg, Phrase, Text};
use std::borrow::Cow;

/// Build the architecture the plan names: preset, quick size, then overrides.
pub fn resolve_architecture(plan: &Plan) -> (Architecture, Phrase) {
    let (mut arch, name) = match plan.model.params_b {
        Some(b) => (
            Architecture::from_billions(b),
            Phrase::new(Text::DerivedShape).with("billions", Arg::Real(b)),
        ),
        None => match architecture::preset(&plan.model.preset) {
            Some(p) => (p.arch.clone(), Phrase::verbatim(p.name)),
            None => {
                let p = architecture::preset(&Plan::default().model.preset)
                    .expect("default preset exists");
                // A custom shape's RoPE is Transformers' Llama default, as
                // a quick size's: not the default preset's own scaling.
                let arch = Architecture {
                    rope: crate::model::architecture::rope::Rope::default(),
                    ..p.arch.clone()
                };
                (arch, Phrase::new(Text::CustomModel))
            }
        },
    };
    let o = &plan.model.arch;
    // Changing hidden or heads without head_dim keeps d = h / a.
    let derive_head_dim = o.head_dim.is_none() && (o.hidden.is_some() || o.heads.is_some());
    arch.layers = o.layers.unwrap_or(arch.layers);
    arch.hidden = o.hidden.unwrap_or(arch.hidden);
    arch.heads = o.heads.unwrap_or(arch.heads);
    arch.kv_heads = o.kv_heads.unwrap_or(arch.kv_heads);
    arch.ffn = o.ffn.unwrap_or(arch.ffn);
    arch.vocab = o.vocab.unwrap_or(arch.vocab);
    arch.tied = o.tied.unwrap_or(arch.tied);
    arch.mlp = o.mlp.unwrap_or(arch.mlp);
    if let Some(d) = o.head_dim {
        arch.head_dim = d;
    } else if derive_head_dim && arch.heads > 0 {
        arch.head_dim = arch.hidden / arch.heads;
    }
    if o.experts.is_some() || o.active_experts.is_some() || o.expert_ffn.is_some() {
        let base = arch.moe.unwrap_or(Moe {
            experts: 8,
            active: 2,
            shared: 0,
            expert_ffn: arch.ffn,
            router_bias: false,
            dense_layers: 0,
        });
        arch.moe = Some(Moe {
            experts: o.experts.map_or(base.experts, |e| e as u32),
            active: o.active_experts.map_or(base.active, |a| a as u32),
            expert_ffn: o.expert_ffn.unwrap_or(base.expert_ffn),
            ..base
        });
        if o.experts == Some(1) && o.active_experts.unwrap_or(1) == 1 {
            arch.moe = None;
        }
    }
    (arch, name)
}

/// Resolve and validate. Errors never stop the evaluation: each step falls
/// back to the nearest valid value so the rest of the page keeps working.
pub fn resolve(plan: &Plan) -> (Job, Vec<Message>) {
    let mut errors = Vec::new();
    let model = resolve_model(plan, &mut errors);
    resolve_for(plan, model, errors)
}

/// The plan's hardware and layout, each checked, for a model already
/// resolved (`errors`: its messages, kept first): the instance comparison
/// times one model on every instance type without resolving it again.
pub fn resolve_for(
    plan: &Plan,
    (arch, model_name): (Architecture, Phrase),
    mut errors: Vec<Message>,
) -> (Job, Vec<Message>) {
    let model_valid = errors.is_empty();
    let counts = arch.parameter_counts();
    let (gpu, instance) = resolve_hardware(plan, &mut errors);
    let fabric = Fabric::of(&gpu, &instance, plan.hardware.ultraserver);
    let layout = resolve_layout(plan, &arch, (&gpu, &instance, &fabric), &mut errors);
    check_precision(plan, &gpu, &mut errors);
    check_parallel_flags(plan, &layout, &mut errors);
    let recipe = plan.recipe();
    check_adapters(&recipe, &arch, &mut errors);
    check_rollout(
        &recipe,
        (&arch, &counts),
        &gpu,
        (&fabric, &layout),
        &mut errors,
    );
    let job = Job {
        recipe,
        arch,
        model_name,
        counts,
        gpu,
        instance,
        layout,
        fabric,
        valid: errors.is_empty(),
        model_valid,
        peak: Default::default(),
    };
    (job, errors)
}

/// Flags that need another parallelism: interleaving needs a pipeline;
/// Megatron's TP communication overlap needs sequence parallelism
/// (Megatron-LM asserts it: megatron/training/arguments.py, "Tensor parallel
/// communication/GEMM overlap can happen only when sequence parallelism is
/// enabled"; Megatron-Bridge turns the overlap off instead).
fn check_parallel_flags(plan: &Plan, layout: &Layout, errors: &mut Vec<Message>) {
    let p = &plan.parallelism;
    if p.vp > 1 && layout.pp == 1 {
        errors.push(Message::new("vp", Text::VpWithoutPp, []).fix("vp", "1"));
    }
    let megatron = plan.implementation.stack == Stack::Megatron;
    if megatron && p.tp_overlap && layout.tp > 1 && !p.sp {
        errors.push(Message::new("tp_overlap", Text::TpOverlapWithoutSp, []).fix("sp", "1"));
    }
}

/// The model: preset or quick size with the user's overrides, validated.
fn resolve_model(plan: &Plan, errors: &mut Vec<Message>) -> (Architecture, Phrase) {
    let (arch, mut model_name) = resolve_architecture(plan);
    if !plan.model.arch.is_empty() {
        model_name = custom_name(&arch, &plan.model.preset);
    }
    if plan.model.arch.hidden.is_some()
        && plan.model.arch.head_dim.is_none()
        && arch.heads > 0
        && arch.hidden % arch.heads != 0
    {
        let args: [(&'static str, Arg); 2] = [
            ("heads", Arg::from(&arch.heads)),
            ("hidden", Arg::from(&arch.hidden)),
        ];
        errors.push(Message::new("heads", Text::HeadsDoNotDivideHidden, args));
    }
    for (key, phrase) in arch.validate() {
        errors.push(Message {
            key: Some(key),
            phrase,
            fix: None,
        });
    }
    (arch, model_name)
}

/// A shape the user edited is "custom", with a preset of its size (within
/// 15% of its parameters) as a hint: the one it started from if still that
/// size, else the nearest. A 405B shape typed over the 8B preset is not
/// "Llama-3.1-8B".
fn custom_name(arch: &Architecture, base: &str) -> Phrase {
    let total = arch.parameter_counts().total as f64;
    let near =
        |p: &&architecture::Preset| (preset_total(p.id) / total).ln().abs() < 0.15f64.ln_1p();
    let nearest = architecture::preset(base)
        .filter(near)
        .map(|p| (p, 0.0))
        .or_else(|| {
            architecture::presets()
                .iter()
                .filter(near)
                .map(|p| (p, (preset_total(p.id) / total).ln().abs()))
                .min_by(|a, b| a.1.total_cmp(&b.1))
        });
    match nearest {
        Some((p, _)) => Phrase::new(Text::CustomModelNear).with("name", Arg::from(&p.name)),
        None => Phrase::new(Text::CustomModel),
    }
}

/// A preset's parameter count, computed once per preset.
fn preset_total(id: &str) -> f64 {
    static TOTALS: std::sync::OnceLock<Vec<(&str, f64)>> = std::sync::OnceLock::new();
    TOTALS
        .get_or_init(|| {
            architecture::presets()
                .iter()
                .map(|p| (p.id, p.arch.parameter_counts().total as f64))
                .collect()
        })
        .iter()
        .find(|(i, _)| *i == id)
        .map_or(f64::NAN, |(_, n)| *n)
}

type Hardware = (Cow<'static, Gpu>, Cow<'static, Instance>);

/// The GPU and the instance: a catalogued SageMaker type or the user's custom GPU.
fn resolve_hardware(plan: &Plan, errors: &mut Vec<Message>) -> Hardware {
    let (gpu, instance): Hardware = if plan.hardware.instance.is_custom() {
        check_custom_fp8(&plan.hardware.custom_gpu, errors);
        let (g, i) = hardware::custom(&plan.hardware.custom_gpu);
        (Cow::Owned(g), Cow::Owned(i))
    } else {
        let instance = hardware::instance(plan.hardware.instance.key())
            .or_else(|| hardware::instance(Plan::default().hardware.instance.key()))
            .expect("default instance exists");
        let gpu = hardware::gpu(instance.gpu).expect("every instance names a catalogued GPU");
        (Cow::Borrowed(gpu), Cow::Borrowed(instance))
    };
    if plan.hardware.nodes > 1 && instance.network_gbps() <= 0.0 {
        let m = Message::new("gpu_net", Text::NoNetwork, []);
        errors.push(m.fix("nodes", "1"));
    }
    (gpu, instance)
}

/// LoRA on modules the model has: PEFT refuses a `target_modules` that
/// names none of them ("Target modules ... not found in the base model"),
/// and nothing would train.
fn check_adapters(plan: &Recipe, arch: &Architecture, errors: &mut Vec<Message>) {
    if plan.training.train == Training::Full || plan.adapted(arch).any() {
        return;
    }
    let args: [(&'static str, Arg); 1] = [("targets", Arg::from(plan.lora.lora_targets.key()))];
    let m = Message::new("lora_targets", Text::LoraTargetsNotInModel, args);
    errors.push(m.fix("lora_targets", "all-linear"));
}

/// A GRPO plan's rollouts as TRL runs them: a completion shorter than the
/// row, whole groups of `generations` rows in the step's global batch
/// (`GRPOConfig.__post_init__` raises otherwise), and a vLLM engine whose
/// share holds its weights and one row's KV cache.
fn check_rollout(
    plan: &Recipe,
    (arch, counts): (&Architecture, &crate::model::architecture::ParameterCounts),
    gpu: &Gpu,
    (fabric, layout): (&Fabric, &Layout),
    errors: &mut Vec<Message>,
) {
    if !plan.training.stage.generates() {
        return;
    }
    let r = &plan.training.rollout;
    if r.completion >= plan.data.seq {
        let args: [(&'static str, Arg); 2] = [
            ("completion", Arg::from(&r.completion)),
            ("seq", Arg::from(&plan.data.seq)),
        ];
        let m = Message::new("completion", Text::GrpoCompletionTooLong, args);
        errors.push(m.fix("completion", (plan.data.seq / 2).max(1).to_string()));
    }
    if r.completion_mean > r.completion {
        let args: [(&'static str, Arg); 2] = [
            ("mean", Arg::from(&r.completion_mean)),
            ("completion", Arg::from(&r.completion)),
        ];
        let m = Message::new("completion_mean", Text::GrpoMeanOverLongest, args);
        errors.push(m.fix("completion_mean", r.completion.to_string()));
    }
    let rows_per_ga = plan.data.micro_batch.saturating_mul(layout.dp);
    let rows = rows_per_ga.saturating_mul(plan.data.grad_accum);
    if !rows.is_multiple_of(r.generations) {
        let args: [(&'static str, Arg); 3] = [
            ("dp", Arg::from(&layout.dp)),
            ("rows", Arg::from(&rows)),
            ("generations", Arg::from(&r.generations)),
        ];
        let m = Message::new("ga", Text::GrpoGroupsSplit, args);
        // The next accumulation that makes whole groups (ga x generations does).
        let ga = (plan.data.grad_accum..=plan.data.grad_accum.saturating_mul(r.generations)).find(
            |ga| {
                rows_per_ga
                    .saturating_mul(*ga)
                    .is_multiple_of(r.generations)
            },
        );
        errors.push(match ga {
            Some(ga) => m.fix("ga", ga.to_string()),
            None => m,
        });
    }
    let Some(engine) =
        crate::model::rollout::VllmEngine::of(arch, counts, plan, gpu, (fabric, layout))
    else {
        return;
    };
    if r.gen_tp > 0 && engine.tp != r.gen_tp {
        errors.push(gen_tp_wont_run(plan, arch, &engine, (fabric, layout)));
    }
    if r.gen_pp > 0 && engine.pp != r.gen_pp {
        errors.push(gen_pp_wont_run(plan, arch, &engine, layout));
    }
    if !engine.runs() {
        let args: [(&'static str, Arg); 3] = [
            ("share", Arg::Real(r.gen_share)),
            ("tp", Arg::from(&engine.tp)),
            ("seq", Arg::from(&plan.data.seq)),
        ];
        if engine.server_gpus > 0 {
            let fix = larger_server(plan, (arch, counts), (gpu, fabric), layout);
            errors.push(server_too_small(plan, &engine, fix));
            return;
        }
        let m = Message::new("gen_share", Text::GrpoEngineTooSmall, args);
        errors.push(match engine.share_for_all_rows(arch, plan, gpu) {
            Some(share) => m.fix("gen_share", crate::model::plan::fmt_num(share)),
            None => m,
        });
    }
}

/// A vLLM tensor-parallel size the engine cannot run (`rollout::tp_runs`),
/// with the size the planner runs instead as its fix.
fn gen_tp_wont_run(
    plan: &Recipe,
    arch: &Architecture,
    engine: &crate::model::rollout::VllmEngine,
    (fabric, layout): (&Fabric, &Layout),
) -> Message {
    let gpus = match engine.server_gpus {
        0 => crate::model::rollout::engine_gpus(fabric, layout),
        k => k,
    };
    let args: [(&'static str, Arg); 4] = [
        ("gen_tp", Arg::from(&plan.training.rollout.gen_tp)),
        ("gpus", Arg::from(&gpus)),
        ("heads", Arg::from(&arch.heads)),
        ("kv_heads", Arg::from(&arch.kv_heads)),
    ];
    let m = Message::new("gen_tp", Text::GrpoGenTp, args);
    m.fix("gen_tp", engine.tp.to_string())
}

/// vLLM pipeline stages the engine cannot run (`rollout::pp_runs`; a
/// server runs none), with the stages the planner runs instead as its fix.
fn gen_pp_wont_run(
    plan: &Recipe,
    arch: &Architecture,
    engine: &crate::model::rollout::VllmEngine,
    layout: &Layout,
) -> Message {
    let gpus = match engine.server_gpus {
        0 => layout.gpus,
        k => k,
    };
    let args: [(&'static str, Arg); 4] = [
        ("gen_pp", Arg::from(&plan.training.rollout.gen_pp)),
        ("tp", Arg::from(&engine.tp)),
        ("gpus", Arg::from(&gpus)),
        ("layers", Arg::from(&arch.layers)),
    ];
    let m = Message::new("gen_pp", Text::GrpoGenPp, args);
    m.fix("gen_pp", engine.pp.to_string())
}

/// A vLLM server too small for one row of the plan, with its fix.
fn server_too_small(
    plan: &Recipe,
    engine: &crate::model::rollout::VllmEngine,
    fix: Option<u64>,
) -> Message {
    let args: [(&'static str, Arg); 3] = [
        ("gpus", Arg::from(&engine.server_gpus)),
        ("tp", Arg::from(&engine.tp)),
        ("seq", Arg::from(&plan.data.seq)),
    ];
    let m = Message::new("gen_gpus", Text::GrpoServerTooSmall, args);
    match fix {
        Some(k) => m.fix("gen_gpus", k.to_string()),
        None => m,
    }
}

/// The fewest server GPUs above the plan's whose engine holds a row, while
/// training keeps one GPU of the node at least.
fn larger_server(
    plan: &Recipe,
    (arch, counts): (&Architecture, &crate::model::architecture::ParameterCounts),
    (gpu, fabric): (&Gpu, &crate::model::fabric::Fabric),
    layout: &Layout,
) -> Option<u64> {
    let all = layout.gpus + plan.training.rollout.gen_gpus;
    (plan.training.rollout.gen_gpus + 1..all).find(|&k| {
        let l = Layout {
            gpus: all - k,
            ..*layout
        };
        crate::model::rollout::VllmEngine::placed(arch, counts, plan, gpu, (fabric, &l), k)
            .is_some_and(|e| e.runs())
    })
}

/// Dense FP8 runs at twice dense BF16 on every NVIDIA GPU with FP8 tensor
/// cores (H100, H200, L4, L40S, B200, B300 data sheets). A custom GPU above
/// that holds a sparse figure or the page's H100 default left beside a
/// smaller GPU's BF16 (an RTX 3090's 71 TFLOP/s with 1,979 FP8), and the
/// auto-plan would run everything in FP8, 28 times faster.
fn check_custom_fp8(c: &hardware::CustomGpu, errors: &mut Vec<Message>) {
    if c.fp8_tflops > 2.0 * c.bf16_tflops * 1.001 {
        let args: [(&'static str, Arg); 2] = [
            ("fp8", Arg::Number(c.fp8_tflops, 0)),
            ("bf16", Arg::Number(c.bf16_tflops, 0)),
        ];
        let fix = format!("{}", 2.0 * c.bf16_tflops);
        let m = Message::new("gpu_fp8", Text::CustomFp8AboveBf16, args);
        errors.push(m.fix("gpu_fp8", fix));
    }
}

/// The parallel layout: each degree checked against the model and the GPUs,
/// an invalid one falling back to 1.
fn resolve_layout(
    plan: &Plan,
    arch: &Architecture,
    (gpu, instance, fabric): (&Gpu, &Instance, &Fabric),
    errors: &mut Vec<Message>,
) -> Layout {
    // Without a network between them, nodes cannot train together: one node.
    let nodes = if instance.network_gbps() > 0.0 {
        plan.hardware.nodes.max(1)
    } else {
        1
    };
    let gpus = instance.gpu_count * nodes - resolve_server(plan, instance, nodes, errors);
    let mut tp = resolve_tp(plan, arch, fabric.gpus_per_domain, errors);
    let (mut pp, mut stages) = resolve_pp(plan, arch, errors);
    let mut cp = resolve_cp(plan, errors);
    let mut ep = resolve_ep(plan, arch, errors);
    if !rules::degrees_tile(gpus, tp, pp, cp) {
        let product = tp * pp * cp;
        let args: [(&'static str, Arg); 2] =
            [("product", Arg::from(&product)), ("gpus", Arg::from(&gpus))];
        errors.push(Message::new("tp", Text::ParallelDegreesExceedGpus, args));
        (tp, pp, cp) = (1, 1, 1);
        stages = Stages::even(arch.layers, 1);
    }
    let ranks = Layout::tiled(gpus, [tp, pp, cp, ep], stages, gpu.fp8_tn_only);
    let dp = ranks.dp;
    if ranks.expert_tensor_parallel().is_none() {
        let available = dp * cp * tp;
        let args: [(&'static str, Arg); 2] =
            [("ep", Arg::from(&ep)), ("available", Arg::from(&available))];
        errors.push(Message::new("ep", Text::EpExceedsGpus, args));
        ep = 1;
    }
    let shard = resolve_shard(plan, dp, errors);
    Layout { ep, shard, ..ranks }
}

/// GRPO's vLLM server GPUs (`gen_gpus`), which training leaves; 0 with
/// an error and its fix where the count cannot run.
fn resolve_server(plan: &Plan, instance: &Instance, nodes: u64, errors: &mut Vec<Message>) -> u64 {
    let gpn = instance.gpu_count;
    crate::model::rollout::server_gpus(&plan.training, gpn, nodes).unwrap_or_else(|fix| {
        let args: [(&'static str, Arg); 2] = [
            ("gen_gpus", Arg::from(&plan.training.rollout.gen_gpus)),
            ("gpn", Arg::from(&gpn)),
        ];
        let m = Message::new("gen_gpus", Text::GrpoGenGpus, args);
        errors.push(m.fix("gen_gpus", fix.to_string()));
        0
    })
}

/// Tensor parallelism splits heads and kv heads, and should stay in one
/// NVLink domain (`domain` GPUs: the instance, or a GB200 UltraServer's).
fn resolve_tp(plan: &Plan, arch: &Architecture, domain: u64, errors: &mut Vec<Message>) -> u64 {
    let mut tp = plan.parallelism.tp.max(1);
    if !rules::tp_splits_heads(arch, tp) {
        let args: [(&'static str, Arg); 3] = [
            ("tp", Arg::from(&tp)),
            ("heads", Arg::from(&arch.heads)),
            ("kv_heads", Arg::from(&arch.kv_heads)),
        ];
        errors.push(Message::new("tp", Text::TpDoesNotDivideHeads, args));
        tp = 1;
    }
    if !rules::tp_in_domain(tp, domain) {
        let args: [(&'static str, Arg); 2] = [("tp", Arg::from(&tp)), ("gpus", Arg::from(&domain))];
        errors.push(Message::new("tp", Text::TpExceedsNode, args));
    }
    tp
}

/// Pipeline stages as Megatron splits them: evenly, with the embedding and
/// loss counted as slots, or with explicit first/last-rank layer counts;
/// as torchtitan splits them, as evenly as they go.
fn resolve_pp(plan: &Plan, arch: &Architecture, errors: &mut Vec<Message>) -> (u64, Stages) {
    let (pp, vp, layers) = (
        plan.parallelism.pp.max(1),
        plan.parallelism.vp.max(1),
        arch.layers,
    );
    if pp == 1 || layers == 0 {
        return (pp, Stages::even(layers, pp));
    }
    let stack = plan.implementation.stack;
    let explicit = plan.parallelism.pp_first.is_some() || plan.parallelism.pp_last.is_some();
    let stages = if explicit && stack != Stack::Torchtitan {
        Stages::explicit(
            layers,
            pp,
            plan.parallelism.pp_first,
            plan.parallelism.pp_last,
        )
    } else {
        rules::pipeline_stages(stack, layers, pp, vp)
    };
    if let Some(s) = stages {
        return (pp, s);
    }
    if stack == Stack::Torchtitan {
        let args: [(&'static str, Arg); 2] =
            [("pp", Arg::from(&pp)), ("layers", Arg::from(&layers))];
        let m = Message::new("pp", Text::PpExceedsLayers, args);
        errors.push(m.fix("pp", layers.to_string()));
        return (1, Stages::even(layers, 1));
    }
    let nearest = nearest_pipeline_degrees(layers, pp, vp);
    let args: [(&'static str, Arg); 5] = [
        ("pp", Arg::from(&pp)),
        ("vp", Arg::from(&vp)),
        ("layers", Arg::from(&layers)),
        ("slots", Arg::Count(layers + 2)),
        ("nearest", Arg::from(&nearest)),
    ];
    let (key, id) = if explicit {
        ("pp_first", Text::PpSplitInvalid)
    } else {
        ("pp", Text::PpDoesNotDivideLayers)
    };
    errors.push(Message::new(key, id, args));
    (1, Stages::even(layers, 1))
}

/// The two pipeline degrees closest to `pp` that Megatron can split `layers` over.
fn nearest_pipeline_degrees(layers: u64, pp: u64, vp: u64) -> String {
    let mut valid: Vec<u64> = (2..=layers.min(1024))
        .filter(|&q| Stages::megatron(layers, q, vp).is_some())
        .collect();
    valid.sort_by_key(|&q| (q.abs_diff(pp), q));
    valid.truncate(2);
    valid.sort_unstable();
    valid
        .iter()
        .map(|q| format!("pp={q}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Context parallelism splits the sequence evenly.
fn resolve_cp(plan: &Plan, errors: &mut Vec<Message>) -> u64 {
    let cp = plan.parallelism.cp.max(1);
    if !rules::cp_splits_sequence(plan.data.seq, cp) {
        let args: [(&'static str, Arg); 2] =
            [("cp", Arg::from(&cp)), ("seq", Arg::from(&plan.data.seq))];
        errors.push(Message::new("cp", Text::CpDoesNotDivideSeq, args));
        return 1;
    }
    cp
}

/// Expert parallelism splits the experts of a mixture-of-experts model.
fn resolve_ep(plan: &Plan, arch: &Architecture, errors: &mut Vec<Message>) -> u64 {
    let ep = plan.parallelism.ep.max(1);
    match &arch.moe {
        Some(m) if !rules::ep_splits_experts(arch, ep) => {
            let args: [(&'static str, Arg); 2] =
                [("ep", Arg::from(&ep)), ("experts", Arg::from(&m.experts))];
            errors.push(Message::new("ep", Text::EpDoesNotDivideExperts, args));
            1
        }
        None if ep > 1 => {
            errors.push(Message::new("ep", Text::EpWithoutMoe, []));
            1
        }
        _ => ep,
    }
}

/// The hybrid shard group divides the data-parallel ranks (all of them by default).
fn resolve_shard(plan: &Plan, dp: u64, errors: &mut Vec<Message>) -> u64 {
    match plan.parallelism.shard {
        Some(s) if !rules::shard_divides_dp(s, dp) => {
            let args: [(&'static str, Arg); 2] = [("shard", Arg::from(&s)), ("dp", Arg::from(&dp))];
            errors.push(Message::new("shard", Text::ShardDoesNotDivideDp, args));
            dp
        }
        Some(s) => s,
        None => dp,
    }
}

/// FP8 needs FP8 tensor cores; MXFP8 and NVFP4 need Blackwell's block scaling.
fn check_precision(plan: &Plan, gpu: &Gpu, errors: &mut Vec<Message>) {
    let precision = plan.numerics.precision.key();
    let args: [(&'static str, Arg); 2] = [
        ("gpu", Arg::from(&gpu.id)),
        ("precision", Arg::from(&precision)),
    ];
    match rules::precision_unsupported(plan.numerics.precision, gpu) {
        Some(Unsupported::NoFp8) => errors
            .push(Message::new("precision", Text::Fp8Unsupported, args).fix("precision", "bf16")),
        Some(Unsupported::NoBlockScaling) => errors
            .push(Message::new("precision", Text::BlackwellOnly, args).fix("precision", "fp8")),
        None => {}
    }
}
