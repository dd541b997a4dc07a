//! `evaluate(&Plan) -> Report`: resolve the plan, check it, run the models.

use crate::architecture::{self, Architecture, Moe, ParameterCounts};
use crate::cost::{self, Checkpointing as CheckpointCost, Cost, Time};
use crate::hardware::{self, Gpu, Instance};
use crate::memory::{self, Layout, Phase};
use crate::plan::{Checkpointing, Plan, Precision};
use crate::throughput::{self, Fabric, Generation, Throughput};
use crate::warnings;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use std::borrow::Cow;

/// A problem or advice with a stable code, tied to the input key it concerns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Message {
    pub code: &'static str,
    /// The plan key (URL key) the message is about, where there is one.
    pub key: Option<&'static str>,
    pub message: String,
    /// A single setting that fixes it: (URL key, value).
    pub fix: Option<(&'static str, String)>,
}

/// The memory section of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryReport {
    pub peak_bytes_per_gpu: u64,
    pub allocated_peak_bytes: u64,
    #[serde(serialize_with = "terms_as_map")]
    pub terms: Vec<(memory::Term, u64)>,
    pub phase: Phase,
    /// What the GPU lets a process allocate.
    pub usable_bytes: u64,
    /// Usable memory minus the user's headroom: a plan fits under this.
    pub budget_bytes: u64,
    pub usable_is_estimate: bool,
    pub activation_bytes: u64,
    /// How far this kind of plan has been checked against measurements.
    pub accuracy: Accuracy,
}

/// How much to trust the memory figure, by what it was checked against.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Accuracy {
    /// `measured` (checked row by row), `approximate` (checked, larger error) or `derived` (formulas only).
    pub level: &'static str,
    /// Expected relative error, as a fraction (e.g. 0.02).
    pub expected_error: f64,
    /// What it was checked against, in the plan's language.
    pub note: &'static str,
}

fn accuracy(plan: &Plan, layout: &Layout) -> Accuracy {
    use crate::plan::Implementation;
    let ru = plan.lang == Some(crate::plan::Lang::Ru);
    let parallel = layout.tp > 1 || layout.pp > 1 || layout.cp > 1 || layout.ep > 1;
    match (plan.implementation, plan.zero, parallel) {
        (Implementation::Hf, 0, false) => Accuracy {
            level: "measured",
            expected_error: 0.02,
            note: tr(ru, "HF Transformers + Trainer on one data-parallel rank: matches 120 measured PyTorch steps (median error 0.0%, worst 6.6%)", "HF Transformers + Trainer на одном ранге: совпадает со 120 измеренными шагами PyTorch (медианная ошибка 0,0%, худшая 6,6%)"),
        },
        (Implementation::Hf, _, false) => Accuracy {
            level: "approximate",
            expected_error: 0.15,
            note: tr(ru, "FSDP/ZeRO sharding: within 13% of torchtitan's measured 8B peaks, usually below them; keep 10-15% headroom", "шардирование FSDP/ZeRO: в пределах 13% от измеренных пиков torchtitan для 8B, обычно ниже них; держите запас 10-15%"),
        },
        _ => Accuracy {
            level: "derived",
            expected_error: 0.2,
            note: tr(ru, "tensor/pipeline/context/expert parallelism and the Megatron profile follow the published formulas (Korthikanti et al. 2022, Narayanan et al. 2021) but are not checked against a measurement here", "тензорный, конвейерный, контекстный и экспертный параллелизм и профиль Megatron следуют опубликованным формулам (Korthikanti et al. 2022, Narayanan et al. 2021), но здесь не сверены с измерениями"),
        },
    }
}

fn terms_as_map<S: Serializer>(terms: &[(memory::Term, u64)], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(terms.len()))?;
    for (t, b) in terms {
        map.serialize_entry(t.key(), b)?;
    }
    map.end()
}

/// Everything the page, the CLI and the tests show about a plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub model_name: String,
    pub parameters: u64,
    pub parameters_active: u64,
    pub architecture: Architecture,
    pub layout: Layout,
    pub gpu: String,
    pub instance: String,
    pub memory: MemoryReport,
    pub fits: bool,
    /// Largest micro-batch that fits (0 if not even 1).
    pub max_micro_batch: u64,
    /// Longest sequence (multiple of 128, up to 131072) that fits at this micro-batch.
    pub max_sequence: u64,
    pub global_batch_sequences: u64,
    pub global_batch_tokens: u64,
    pub throughput: Throughput,
    /// How far the throughput figure has been checked against measurements.
    pub throughput_accuracy: Accuracy,
    pub time: Time,
    pub checkpoint: CheckpointCost,
    pub cost: Cost,
    pub warnings: Vec<Message>,
    pub errors: Vec<Message>,
}

/// The plan with its model, hardware and layout resolved.
pub struct Resolved<'a> {
    pub plan: &'a Plan,
    pub arch: Architecture,
    pub model_name: String,
    pub counts: ParameterCounts,
    pub gpu: Cow<'static, Gpu>,
    pub instance: Cow<'static, Instance>,
    pub layout: Layout,
}

/// Build the architecture the plan names: preset, quick size, then overrides.
pub fn resolve_architecture(plan: &Plan) -> (Architecture, String) {
    let (mut arch, mut name) = match plan.params_b {
        Some(b) => (
            Architecture::from_billions(b),
            format!("~{b}B (derived shape)"),
        ),
        None => match architecture::preset(&plan.model) {
            Some(p) => (p.arch.clone(), p.name.clone()),
            None => {
                let p =
                    architecture::preset(&Plan::default().model).expect("default preset exists");
                (p.arch.clone(), "custom".to_string())
            }
        },
    };
    let o = &plan.arch;
    if !o.is_empty() {
        name = format!("{name} (custom)");
    }
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

fn err(code: &'static str, key: &'static str, message: String) -> Message {
    Message {
        code,
        key: Some(key),
        message,
        fix: None,
    }
}

/// The English or the Russian text.
pub fn tr<T>(ru: bool, en: T, ru_text: T) -> T {
    if ru {
        ru_text
    } else {
        en
    }
}

/// Resolve and validate. Errors never stop the evaluation: the planner falls
/// back to the nearest valid value so the rest of the page keeps working.
pub fn resolve(plan: &Plan) -> (Resolved<'_>, Vec<Message>) {
    let ru = plan.lang == Some(crate::plan::Lang::Ru);
    let mut errors = Vec::new();
    let (arch, model_name) = resolve_architecture(plan);
    if plan.arch.hidden.is_some()
        && plan.arch.head_dim.is_none()
        && arch.heads > 0
        && arch.hidden % arch.heads != 0
    {
        errors.push(err(
            "heads_do_not_divide_hidden",
            "heads",
            tr(
                ru,
                format!(
                    "heads ({}) must divide hidden ({}) when no head_dim is given",
                    arch.heads, arch.hidden
                ),
                format!(
                    "heads ({}) должно делить hidden ({}), если head_dim не задан",
                    arch.heads, arch.hidden
                ),
            ),
        ));
    }
    for (key, message) in arch.validate_in(ru) {
        errors.push(err("invalid_architecture", key, message));
    }
    let counts = arch.parameter_counts();
    let (gpu, instance): (Cow<'static, Gpu>, Cow<'static, Instance>) = if plan.instance == "custom"
    {
        let (g, i) = hardware::custom(&plan.custom_gpu);
        (Cow::Owned(g), Cow::Owned(i))
    } else {
        let instance = hardware::instance(&plan.instance)
            .or_else(|| hardware::instance(&Plan::default().instance))
            .expect("default instance exists");
        let gpu = hardware::gpu(&instance.gpu).expect("every instance names a catalogued GPU");
        (Cow::Borrowed(gpu), Cow::Borrowed(instance))
    };
    let gpus = instance.gpu_count * plan.nodes.max(1);
    if plan.nodes > 1 && !instance.multi_node_efa_training {
        errors.push(err(
            "no_multi_node",
            "nodes",
            tr(
                ru,
                format!("{} does not support multi-node EFA training; use 1 node or another instance type", instance.instance_type),
                format!("{} не поддерживает многоузловое обучение через EFA: возьмите 1 узел или другой тип инстанса", instance.instance_type),
            ),
        ));
    }
    let (mut tp, mut pp, mut cp, mut ep) = (
        plan.tp.max(1),
        plan.pp.max(1),
        plan.cp.max(1),
        plan.ep.max(1),
    );
    if arch.heads > 0 && (arch.heads % tp != 0 || arch.kv_heads % tp != 0) {
        errors.push(err(
            "tp_does_not_divide_heads",
            "tp",
            tr(
                ru,
                format!(
                    "tensor parallel degree {tp} must divide heads ({}) and kv_heads ({})",
                    arch.heads, arch.kv_heads
                ),
                format!(
                    "степень тензорного параллелизма {tp} должна делить heads ({}) и kv_heads ({})",
                    arch.heads, arch.kv_heads
                ),
            ),
        ));
        tp = 1;
    }
    if tp > instance.gpu_count {
        errors.push(err(
            "tp_exceeds_node",
            "tp",
            tr(
                ru,
                format!(
                    "tensor parallelism ({tp}) should stay inside one node ({} GPUs)",
                    instance.gpu_count
                ),
                format!(
                    "тензорный параллелизм ({tp}) должен помещаться в один узел ({} GPU)",
                    instance.gpu_count
                ),
            ),
        ));
    }
    if arch.layers > 0 && arch.layers % pp != 0 {
        errors.push(err(
            "pp_does_not_divide_layers",
            "pp",
            tr(
                ru,
                format!(
                    "pipeline degree {pp} must divide the number of layers ({})",
                    arch.layers
                ),
                format!(
                    "степень конвейерного параллелизма {pp} должна делить число слоёв ({})",
                    arch.layers
                ),
            ),
        ));
        pp = 1;
    }
    if !plan.seq.is_multiple_of(cp) {
        errors.push(err(
            "cp_does_not_divide_seq",
            "cp",
            tr(
                ru,
                format!("context parallel degree {cp} must divide the sequence length ({})", plan.seq),
                format!("степень контекстного параллелизма {cp} должна делить длину последовательности ({})", plan.seq),
            ),
        ));
        cp = 1;
    }
    match &arch.moe {
        Some(m) if !(m.experts as u64).is_multiple_of(ep) => {
            errors.push(err(
                "ep_does_not_divide_experts",
                "ep",
                tr(
                    ru,
                    format!(
                        "expert parallel degree {ep} must divide the number of experts ({})",
                        m.experts
                    ),
                    format!(
                        "степень экспертного параллелизма {ep} должна делить число экспертов ({})",
                        m.experts
                    ),
                ),
            ));
            ep = 1;
        }
        None if ep > 1 => {
            errors.push(err(
                "ep_without_moe",
                "ep",
                tr(
                    ru,
                    "expert parallelism needs a mixture-of-experts model".into(),
                    "экспертный параллелизм нужен только для моделей MoE".into(),
                ),
            ));
            ep = 1;
        }
        _ => {}
    }
    if tp * pp * cp > gpus || !gpus.is_multiple_of(tp * pp * cp) {
        errors.push(err(
            "parallel_degrees_exceed_gpus",
            "tp",
            tr(
                ru,
                format!(
                    "tp x pp x cp = {} must divide the number of GPUs ({gpus})",
                    tp * pp * cp
                ),
                format!(
                    "tp x pp x cp = {} должно делить число GPU ({gpus})",
                    tp * pp * cp
                ),
            ),
        ));
        tp = 1;
        pp = 1;
        cp = 1;
    }
    let dp = gpus / (tp * pp * cp);
    if ep > dp * tp {
        errors.push(err(
            "ep_exceeds_gpus",
            "ep",
            tr(
                ru,
                format!(
                    "expert parallel degree {ep} exceeds the GPUs available for it ({})",
                    dp * tp
                ),
                format!(
                    "степень экспертного параллелизма {ep} больше числа доступных GPU ({})",
                    dp * tp
                ),
            ),
        ));
        ep = 1;
    }
    let shard = match plan.shard {
        Some(s) if s > dp || !dp.is_multiple_of(s) => {
            errors.push(err(
                "shard_does_not_divide_dp",
                "shard",
                tr(
                    ru,
                    format!("hybrid shard group {s} must divide the data-parallel degree ({dp})"),
                    format!("группа гибридного шардирования {s} должна делить степень параллелизма данных ({dp})"),
                ),
            ));
            dp
        }
        Some(s) => s,
        None => dp,
    };
    if plan.precision.is_low_precision() && !gpu.fp8_tensor_cores {
        let mut e = err(
            "fp8_unsupported",
            "precision",
            tr(
                ru,
                format!(
                    "{} has no FP8 tensor cores: {} is impossible on it; use bf16",
                    gpu.id,
                    plan.precision.key()
                ),
                format!(
                    "у {} нет тензорных ядер FP8: {} на нём невозможен; используйте bf16",
                    gpu.id,
                    plan.precision.key()
                ),
            ),
        );
        e.fix = Some(("precision", "bf16".into()));
        errors.push(e);
    } else if matches!(plan.precision, Precision::Mxfp8 | Precision::Nvfp4) && !gpu.fp4_tensor_cores
    {
        let mut e = err(
            "blackwell_only",
            "precision",
            tr(
                ru,
                format!("{} needs Blackwell block-scaled tensor cores, which {} lacks; use fp8", plan.precision.key(), gpu.id),
                format!("{} требует блочного масштабирования Blackwell, которого у {} нет; используйте fp8", plan.precision.key(), gpu.id),
            ),
        );
        e.fix = Some(("precision", "fp8".into()));
        errors.push(e);
    }
    if plan.vp > 1 && pp == 1 {
        let mut e = err(
            "vp_without_pp",
            "vp",
            tr(
                ru,
                "interleaving (vp > 1) needs pipeline parallelism (pp > 1)".into(),
                "чередование (vp > 1) требует конвейерного параллелизма (pp > 1)".into(),
            ),
        );
        e.fix = Some(("vp", "1".into()));
        errors.push(e);
    }
    let layout = Layout {
        gpus,
        tp,
        pp,
        cp,
        ep,
        dp,
        shard,
    };
    (
        Resolved {
            plan,
            arch,
            model_name,
            counts,
            gpu,
            instance,
            layout,
        },
        errors,
    )
}

/// Evaluate a plan: parameters, memory, verdict, solvers, warnings.
pub fn evaluate(plan: &Plan) -> Report {
    let (r, errors) = resolve(plan);
    let mem = memory::breakdown(&r.arch, &r.counts, plan, &r.layout);
    let usable = r.gpu.usable_bytes();
    let budget = budget_bytes(usable, plan.headroom);
    let fits = mem.peak_bytes <= budget;
    let max_micro_batch = max_micro_batch(&r, budget);
    let max_sequence = max_sequence(&r, budget);
    let global_batch_sequences = plan.micro_batch * plan.grad_accum * r.layout.dp;
    let gen = throughput::generation(&r.gpu);
    let tp = throughput::throughput(
        &r.arch,
        &r.counts,
        plan,
        &r.layout,
        &r.gpu,
        &Fabric::of(&r.gpu, &r.instance),
        &throughput::efficiency(gen),
    );
    let adapters = r.arch.lora_params_per_layer(plan.lora_rank) * r.arch.layers as f64;
    let (time, checkpoint, cost) =
        cost::estimate(plan, &r.counts, adapters, &tp, &r.instance, r.layout.gpus);
    let mut report = Report {
        model_name: r.model_name.clone(),
        parameters: r.counts.total,
        parameters_active: r.counts.active,
        architecture: r.arch.clone(),
        layout: r.layout,
        gpu: r.gpu.id.clone(),
        instance: r.instance.instance_type.clone(),
        memory: MemoryReport {
            peak_bytes_per_gpu: mem.peak_bytes,
            allocated_peak_bytes: mem.allocated_peak_bytes,
            terms: mem.terms.clone(),
            phase: mem.phase,
            usable_bytes: usable,
            budget_bytes: budget,
            usable_is_estimate: r.gpu.usable_is_estimate(),
            activation_bytes: mem.activation_bytes,
            accuracy: accuracy(plan, &r.layout),
        },
        fits,
        max_micro_batch,
        max_sequence,
        global_batch_sequences,
        global_batch_tokens: global_batch_sequences * plan.seq,
        throughput_accuracy: throughput_accuracy(gen, plan),
        throughput: tp,
        time,
        checkpoint,
        cost,
        warnings: Vec::new(),
        errors,
    };
    report.warnings = warnings::check(&r, &report, &mem);
    report
}

fn throughput_accuracy(gen: Generation, plan: &Plan) -> Accuracy {
    use crate::plan::Implementation;
    let ru = plan.lang == Some(crate::plan::Lang::Ru);
    let bf16 = !plan.precision.is_low_precision();
    match gen {
        Generation::Ada => Accuracy {
            level: "derived",
            expected_error: 0.3,
            note: tr(ru, "no published measurement for L4/L40S: Hopper's fitted efficiencies are assumed", "для L4/L40S нет опубликованных измерений: взяты эффективности, подобранные для Hopper"),
        },
        Generation::Blackwell if bf16 || plan.implementation == Implementation::Hf => Accuracy {
            level: "approximate",
            expected_error: 0.2,
            note: tr(ru, "Blackwell is calibrated on Megatron-Bridge FP8 runs only (median error 7%); BF16 and HF-stack efficiency are carried over from Hopper", "Blackwell откалиброван только на запусках Megatron-Bridge в FP8 (медианная ошибка 7%); эффективность BF16 и стека HF перенесена с Hopper"),
        },
        _ => Accuracy {
            level: "measured",
            expected_error: 0.1,
            note: tr(ru, "calibrated on 33 published runs (NeMo, Megatron-Bridge, DGX Cloud, torchtitan, Megatron papers): median error 3.5%, worst 22%", "откалибровано на 33 опубликованных запусках (NeMo, Megatron-Bridge, DGX Cloud, torchtitan, статьи Megatron): медианная ошибка 3,5%, худшая 22%"),
        },
    }
}

/// Usable memory minus the headroom percentage.
pub fn budget_bytes(usable: u64, headroom_percent: f64) -> u64 {
    (usable as f64 * (1.0 - headroom_percent.clamp(0.0, 100.0) / 100.0)) as u64
}

/// Largest micro-batch (up to 4096) whose peak stays within the budget.
fn max_micro_batch(r: &Resolved<'_>, budget: u64) -> u64 {
    // One working copy of the plan for the whole search (no clone per probe).
    let p = std::cell::RefCell::new(r.plan.clone());
    let fits = |mb: u64| {
        let mut p = p.borrow_mut();
        p.micro_batch = mb;
        memory::breakdown(&r.arch, &r.counts, &p, &r.layout).peak_bytes <= budget
    };
    largest(1, 4096, fits)
}

/// Longest sequence, in steps of 128 up to 131072, that fits at this micro-batch.
fn max_sequence(r: &Resolved<'_>, budget: u64) -> u64 {
    let cp = r.layout.cp.max(1);
    let p = std::cell::RefCell::new(r.plan.clone());
    let fits = |steps: u64| {
        let mut p = p.borrow_mut();
        p.seq = steps * 128 * cp;
        memory::breakdown(&r.arch, &r.counts, &p, &r.layout).peak_bytes <= budget
    };
    largest(1, 1024 / cp, fits) * 128 * cp
}

/// Largest `x` in `lo..=hi` with `fits(x)`, memory being monotonic in `x`; 0 if none.
/// Gallops up from `lo` and then bisects, so small answers (the usual case)
/// take a handful of probes.
fn largest(lo: u64, hi: u64, fits: impl Fn(u64) -> bool) -> u64 {
    if hi < lo || !fits(lo) {
        return 0;
    }
    let (mut ok, mut step) = (lo, 1u64);
    let mut bad = hi + 1;
    while ok + step <= hi {
        if fits(ok + step) {
            ok += step;
            step *= 2;
        } else {
            bad = ok + step;
            break;
        }
    }
    if bad == hi + 1 && ok < hi {
        // Galloping overshot the range: the answer lies in ok..=hi.
        if fits(hi) {
            return hi;
        }
        bad = hi;
    }
    while bad - ok > 1 {
        let mid = ok + (bad - ok) / 2;
        if fits(mid) {
            ok = mid;
        } else {
            bad = mid;
        }
    }
    ok
}

/// Peak memory per GPU at each sequence length, for each checkpointing mode (chart data).
pub fn memory_vs_sequence(plan: &Plan, seqs: &[u64]) -> Vec<(Checkpointing, Vec<u64>)> {
    let (r, _) = resolve(plan);
    [
        Checkpointing::None,
        Checkpointing::Selective,
        Checkpointing::Full,
    ]
    .into_iter()
    .map(|ck| {
        let mut p = plan.clone();
        p.checkpointing = ck;
        let row = seqs
            .iter()
            .map(|&s| {
                p.seq = s;
                memory::breakdown(&r.arch, &r.counts, &p, &r.layout).peak_bytes
            })
            .collect();
        (ck, row)
    })
    .collect()
}

/// The same job on another instance type.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InstanceOption {
    pub instance: String,
    pub gpu: String,
    pub nodes: u64,
    pub gpus: u64,
    /// The precision used (FP8 falls back to BF16 where the GPU has none).
    pub precision: &'static str,
    pub fits: bool,
    pub peak_bytes_per_gpu: u64,
    pub usable_bytes: u64,
    pub budget_bytes: u64,
    pub tokens_per_second: f64,
    pub hours: f64,
    pub usd: Option<f64>,
    pub spot_usd: Option<f64>,
    pub price_source: String,
    /// The fastest of the options that fit.
    pub fastest: bool,
    /// The cheapest of the options that fit and have a price.
    pub cheapest: bool,
}

/// This job on every multi-GPU training instance type, at the same number
/// of GPUs where the instance size allows it (at least one instance).
pub fn compare_instances(plan: &Plan) -> Vec<InstanceOption> {
    let (r0, _) = resolve(plan);
    let total_gpus = r0.layout.gpus;
    let mut out = Vec::new();
    for inst in hardware::instances() {
        if inst.gpu_count < 4 && inst.instance_type != plan.instance {
            continue;
        }
        let Some(gpu) = hardware::gpu(&inst.gpu) else {
            continue;
        };
        let mut p = plan.clone();
        if inst.instance_type != plan.instance {
            // The user's price override is for their own instance type.
            p.price = None;
        }
        p.instance = inst.instance_type.clone();
        p.nodes = total_gpus.div_ceil(inst.gpu_count).max(1);
        if !inst.multi_node_efa_training {
            p.nodes = 1;
        }
        if p.precision.is_low_precision() && !gpu.fp8_tensor_cores
            || matches!(p.precision, Precision::Mxfp8 | Precision::Nvfp4) && !gpu.fp4_tensor_cores
        {
            p.precision = if gpu.fp8_tensor_cores {
                Precision::Fp8
            } else {
                Precision::Bf16
            };
        }
        // Tensor parallelism cannot leave the node.
        p.tp = p.tp.min(inst.gpu_count);
        let (r, errors) = resolve(&p);
        if !errors.is_empty() {
            continue;
        }
        let mem = memory::breakdown(&r.arch, &r.counts, &p, &r.layout);
        let usable = r.gpu.usable_bytes();
        let tp = throughput::throughput(
            &r.arch,
            &r.counts,
            &p,
            &r.layout,
            &r.gpu,
            &Fabric::of(&r.gpu, &r.instance),
            &throughput::efficiency(throughput::generation(&r.gpu)),
        );
        let adapters = r.arch.lora_params_per_layer(p.lora_rank) * r.arch.layers as f64;
        let (time, _, cost) =
            cost::estimate(&p, &r.counts, adapters, &tp, &r.instance, r.layout.gpus);
        out.push(InstanceOption {
            instance: inst.instance_type.clone(),
            gpu: inst.gpu.clone(),
            nodes: p.nodes,
            gpus: r.layout.gpus,
            precision: p.precision.key(),
            fits: mem.peak_bytes <= budget_bytes(usable, p.headroom),
            peak_bytes_per_gpu: mem.peak_bytes,
            usable_bytes: usable,
            budget_bytes: budget_bytes(usable, p.headroom),
            tokens_per_second: tp.tokens_per_second,
            hours: time.total_hours,
            usd: cost.total_usd,
            spot_usd: cost.spot_usd,
            price_source: cost.price_source,
            fastest: false,
            cheapest: false,
        });
    }
    // Fitting options first, fastest first; then mark the fastest and the cheapest.
    out.sort_by(|a, b| b.fits.cmp(&a.fits).then(a.hours.total_cmp(&b.hours)));
    if let Some(first) = out.first_mut().filter(|o| o.fits) {
        first.fastest = true;
    }
    if let Some(c) = out
        .iter_mut()
        .filter(|o| o.fits && o.usd.is_some())
        .min_by(|a, b| {
            a.usd
                .unwrap_or(f64::MAX)
                .total_cmp(&b.usd.unwrap_or(f64::MAX))
        })
    {
        c.cheapest = true;
    }
    out
}
