//! `evaluate(&Plan) -> Report`: resolve the plan, check it, run the models.

use crate::architecture::{self, Architecture, Moe, ParameterCounts};
use crate::cost::{self, Checkpointing as CheckpointCost, Cost, Time};
use crate::hardware::{self, Gpu, Instance};
use crate::memory::{self, Layout, Phase, Stages};
use crate::plan::{Checkpointing, Implementation, Lang, Plan, Precision};
use crate::text::{fill, lang_of, num, signed, t, Text};
use crate::throughput::{self, Fabric, Generation, Throughput};
use crate::warnings;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use std::borrow::Cow;
use std::fmt::Display;

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
    /// Of the peak, the bytes the verdict assumes rather than counts
    /// (`Term::is_assumed`: CUDA context, workspaces, fragmentation).
    pub assumed_bytes: u64,
    /// How the GEMMs get their weights (`memory::compute_path`), as train.py reports it.
    pub compute: &'static str,
    /// How far this kind of plan has been checked against measurements.
    pub accuracy: Accuracy,
}

/// How much to trust a figure, by what it was checked against (#25).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Accuracy {
    /// `measured` (against real GPU runs), `counted` (PyTorch steps counted
    /// under FakeTensor), `calibrated` (fitted on published runs and
    /// cross-validated), `approximate` (checked, with a large error),
    /// `extrapolated` (a checked kind of plan, outside what the checks ran)
    /// or `derived` (formulas only).
    pub level: &'static str,
    /// Expected relative error as a fraction (e.g. 0.02), where the evidence
    /// supports one: at least three checks, and the plan inside them.
    pub expected_error: Option<f64>,
    /// What it was checked against, in the plan's language.
    pub note: String,
}

/// Checks of this many rows or more quote an expected error.
const ROWS_FOR_AN_ERROR: usize = 3;

/// A figure checked by `stats` (the note `note_id` fills with `kind`): its
/// level inside the checks' envelope, "extrapolated" along the axes the
/// plan leaves it on, and an expected error only from three rows up.
fn checked_memory(
    r: &Resolved<'_>,
    level: &'static str,
    stats: &crate::accuracy::MemoryStats,
    note_id: Text,
    kind: &str,
) -> Accuracy {
    let lang = lang_of(r.plan.lang);
    let note = memory_note(lang, note_id, stats, kind);
    let outside = stats
        .envelope
        .outside(r.plan, r.counts.total, r.layout.gpus);
    if !outside.is_empty() {
        return extrapolated(lang, &outside, note);
    }
    let expected = stats.under.abs().max(stats.over.abs()).max(2.0) / 100.0;
    Accuracy {
        level,
        expected_error: (stats.rows >= ROWS_FOR_AN_ERROR).then_some(expected),
        note,
    }
}

/// A checked kind of plan outside what its checks ran: no error quoted, the
/// axes named first, then what the checks showed inside.
fn extrapolated(lang: Lang, outside: &[crate::accuracy::Outside], inside: String) -> Accuracy {
    let axes: Vec<String> = outside.iter().map(|o| outside_axis(lang, o)).collect();
    let axes = axes.join("; ");
    Accuracy {
        level: "extrapolated",
        expected_error: None,
        note: format!(
            "{}; {}",
            fill(lang, Text::ExtrapolatedBeyond, &[("axes", &axes)]),
            inside
        ),
    }
}

/// One axis a plan leaves its checks' envelope on, as a phrase.
fn outside_axis(lang: Lang, o: &crate::accuracy::Outside) -> String {
    use crate::accuracy::Outside;
    let billions = |p: &u64| num(*p as f64 / 1e9, 1, lang);
    match o {
        Outside::Sequence { value, lo, hi } => fill(
            lang,
            Text::AxisSequence,
            &[("value", value), ("lo", lo), ("hi", hi)],
        ),
        Outside::Gpus { value, lo, hi } => fill(
            lang,
            Text::AxisGpus,
            &[("value", value), ("lo", lo), ("hi", hi)],
        ),
        Outside::ModelSize { value, lo, hi } => {
            let (v, l, h) = (billions(value), billions(lo), billions(hi));
            fill(
                lang,
                Text::AxisModelSize,
                &[("value", &v), ("lo", &l), ("hi", &h)],
            )
        }
        Outside::Precision { value, checked } => fill(
            lang,
            Text::AxisPrecision,
            &[("value", value), ("checked", checked)],
        ),
        Outside::Training { value, checked } => fill(
            lang,
            Text::AxisTraining,
            &[("value", value), ("checked", checked)],
        ),
        Outside::Offload => t(lang, Text::AxisOffload).to_string(),
        Outside::Zero { value, checked } => fill(
            lang,
            Text::AxisZero,
            &[("value", value), ("checked", checked)],
        ),
        Outside::Hybrid => t(lang, Text::AxisHybrid).to_string(),
    }
}

/// How far the memory figure is checked: HF Transformers on one GPU against
/// the CUDA steps counted under FakeTensor, FSDP2 (ZeRO-2/3) and LoRA plans
/// against the memory oracle's table (tools/oracle), FP8 FSDP against
/// torchtitan's measured runs, everything else derived (data/coverage.json,
/// computed by `plan calibrate`); each within its checks' envelope.
fn accuracy(r: &Resolved<'_>) -> Accuracy {
    let lang = lang_of(r.plan.lang);
    let c = crate::accuracy::shipped();
    if let Some(a) = measured_on_gpu(r, &c.memory_gpu) {
        return a;
    }
    match checked_memory_kind(r) {
        Some(MemoryKind::SingleRank) => checked_memory(
            r,
            "counted",
            &c.memory_single_rank,
            Text::MemoryCheckedSingleRank,
            "",
        ),
        Some(MemoryKind::Oracle(group, kind)) => match c.oracle(group) {
            Some(stats) => with_heldout(
                r,
                checked_memory(r, "counted", stats, Text::MemoryCheckedOracle, kind),
                &c.memory_oracle_heldout,
            ),
            None => derived(lang),
        },
        // Real GPU runs, median 13 % over three: measured, but loosely.
        Some(MemoryKind::TorchtitanFp8) => checked_memory(
            r,
            "approximate",
            &c.memory_fsdp,
            Text::MemoryCheckedSharded,
            "",
        ),
        None => derived(lang),
    }
}

/// Real fine-tuning runs on GPUs (accuracy::gpu_memory_rows) vouch for an HF
/// data-parallel plan inside what they ran: "measured" on GPU, with their
/// worst error either way. Outside, the other checks speak.
fn measured_on_gpu(r: &Resolved<'_>, stats: &crate::accuracy::MemoryStats) -> Option<Accuracy> {
    let l = &r.layout;
    let hf_dp = r.plan.implementation == crate::plan::Implementation::Hf
        && l.tp == 1
        && l.pp == 1
        && l.cp == 1
        && l.ep == 1;
    let inside = stats.rows > 0
        && stats
            .envelope
            .outside(r.plan, r.counts.total, l.gpus)
            .is_empty();
    if !hf_dp || !inside {
        return None;
    }
    Some(checked_memory(
        r,
        "measured",
        stats,
        Text::MemoryMeasuredOnGpu,
        "",
    ))
}

/// A median error and the worst under- and over-prediction, percent, as a
/// note writes them (one decimal, signed extremes, the language's format).
fn error_figures(lang: Lang, median: f64, under: f64, over: f64) -> (String, String, String) {
    (
        num(median, 1, lang),
        signed(under, 1, lang),
        signed(over, 1, lang),
    )
}

/// A memory check's note: its rows, median and worst under- and
/// over-prediction in the language's number format, and `kind`.
fn memory_note(lang: Lang, id: Text, stats: &crate::accuracy::MemoryStats, kind: &str) -> String {
    let (median, under, over) = error_figures(lang, stats.median, stats.under, stats.over);
    let args: [(&str, &dyn Display); 5] = [
        ("rows", &stats.rows),
        ("median", &median),
        ("under", &under),
        ("over", &over),
        ("kind", &kind),
    ];
    fill(lang, id, &args)
}

/// The oracle's table is in-sample (the memory model was changed on its
/// rows); its held-out plans are not: their error is the one to expect, and
/// the note gives both.
fn with_heldout(
    r: &Resolved<'_>,
    mut a: Accuracy,
    heldout: &crate::accuracy::MemoryStats,
) -> Accuracy {
    let lang = lang_of(r.plan.lang);
    let held = memory_note(lang, Text::MemoryOracleHeldOut, heldout, "");
    a.note = format!("{}; {held}", a.note);
    let worst = heldout.under.abs().max(heldout.over.abs()) / 100.0;
    a.expected_error = a.expected_error.map(|e| e.max(worst));
    a
}

fn derived(lang: Lang) -> Accuracy {
    Accuracy {
        level: "derived",
        expected_error: None,
        note: t(lang, Text::MemoryDerived).to_string(),
    }
}

/// What a plan's memory figure was checked against.
enum MemoryKind {
    /// HF on one GPU: memory_examples.csv's CUDA steps.
    SingleRank,
    /// The oracle's group (`sharding=zero3`) and its name in the note.
    Oracle(&'static str, &'static str),
    /// FP8 FSDP: torchtitan's measured runs only.
    TorchtitanFp8,
}

/// The oracle runs the HF stack data parallel (FSDP2 or one GPU), dense
/// models, AdamW, fp32 / BF16 / pure BF16, full training or LoRA, no offloading.
fn checked_memory_kind(r: &Resolved<'_>) -> Option<MemoryKind> {
    use crate::plan::{Implementation, Optimizer, Training};
    let (plan, layout) = (r.plan, &r.layout);
    let parallel = layout.tp > 1 || layout.pp > 1 || layout.cp > 1 || layout.ep > 1;
    let hf_dense = plan.implementation == Implementation::Hf
        && !parallel
        && !plan.offload
        && r.arch.moe.is_none()
        && matches!(plan.optimizer, Optimizer::Adamw | Optimizer::AdamwForeach);
    if !hf_dense {
        return None;
    }
    let fsdp = memory::runs_fsdp2(plan, layout);
    match (plan.train, plan.precision) {
        (Training::Full, Precision::Fp8) if fsdp && plan.zero == 3 => {
            Some(MemoryKind::TorchtitanFp8)
        }
        (_, p) if p.is_low_precision() => None,
        (Training::Full, _) if layout.dp == 1 => Some(MemoryKind::SingleRank),
        (Training::Full, _) if fsdp && plan.zero == 3 => {
            Some(MemoryKind::Oracle("sharding=zero3", "ZeRO-3 / FSDP2"))
        }
        (Training::Full, _) if fsdp => Some(MemoryKind::Oracle("sharding=zero2", "ZeRO-2 / FSDP2")),
        (Training::Lora, _) if fsdp || layout.dp == 1 => {
            Some(MemoryKind::Oracle("sharding=lora", "LoRA"))
        }
        _ => None,
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
    /// "fits" under the budget (usable memory less the headroom); "tight"
    /// above the budget but inside the GPU's usable memory (published
    /// recipes run there: #23); "does_not_fit" beyond it.
    pub verdict: &'static str,
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
    /// Decoder layers on each pipeline rank, first to last.
    pub layers_per_pipeline_rank: Vec<u64>,
    /// The NVLink domains the job spans and the groups that leave one.
    pub nvlink: NvlinkDomains,
    pub warnings: Vec<Message>,
    pub errors: Vec<Message>,
}

/// How a job sits on its NVLink domains (an 8-GPU instance, or a GB200
/// UltraServer's 36 or 72 GPUs).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NvlinkDomains {
    pub gpus_per_domain: u64,
    /// Domains the job's GPUs span.
    pub domains: u64,
    /// Parallel groups whose collectives leave a domain: `tp`, `cp`, `ep`, `dp`, `pp`.
    pub crossing: Vec<&'static str>,
}

/// Megatron's rank order (TP innermost, then CP, DP, PP): each group's size
/// and the distance between its ranks, checked against the domain.
fn nvlink_domains(layout: &Layout, fabric: &Fabric) -> NvlinkDomains {
    let l = layout;
    let groups = [
        ("tp", l.tp, 1),
        ("cp", l.cp, l.tp),
        ("ep", l.ep, l.tp),
        ("dp", l.dp, l.tp * l.cp),
        ("pp", l.pp, l.tp * l.cp * l.dp),
    ];
    NvlinkDomains {
        gpus_per_domain: fabric.gpus_per_domain,
        domains: l.gpus.div_ceil(fabric.gpus_per_domain.max(1)),
        crossing: groups
            .iter()
            .filter(|(_, n, stride)| fabric.crosses(*n, *stride))
            .map(|(name, _, _)| *name)
            .collect(),
    }
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
    let (mut arch, name) = match plan.params_b {
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

impl Message {
    /// A message from the catalog, in `lang`, about the URL key `key`.
    pub fn new(
        lang: Lang,
        code: &'static str,
        key: &'static str,
        id: Text,
        args: &[(&str, &dyn Display)],
    ) -> Message {
        Message {
            code,
            key: Some(key),
            message: fill(lang, id, args),
            fix: None,
        }
    }

    /// The one setting that fixes it.
    pub fn fix(mut self, key: &'static str, value: impl Into<String>) -> Message {
        self.fix = Some((key, value.into()));
        self
    }
}

/// Resolve and validate. Errors never stop the evaluation: each step falls
/// back to the nearest valid value so the rest of the page keeps working.
pub fn resolve(plan: &Plan) -> (Resolved<'_>, Vec<Message>) {
    let lang = lang_of(plan.lang);
    let mut errors = Vec::new();
    let (arch, model_name) = resolve_model(plan, lang, &mut errors);
    let counts = arch.parameter_counts();
    let (gpu, instance) = resolve_hardware(plan, lang, &mut errors);
    let layout = resolve_layout(plan, &arch, &instance, lang, &mut errors);
    check_precision(plan, &gpu, lang, &mut errors);
    if plan.vp > 1 && layout.pp == 1 {
        errors
            .push(Message::new(lang, "vp_without_pp", "vp", Text::VpWithoutPp, &[]).fix("vp", "1"));
    }
    if plan.mtp > 0 && plan.implementation != Implementation::Megatron {
        let m = Message::new(
            lang,
            "mtp_needs_megatron",
            "mtp",
            Text::MtpNeedsMegatron,
            &[],
        );
        errors.push(m.fix("impl", "megatron"));
    }
    let resolved = Resolved {
        plan,
        arch,
        model_name,
        counts,
        gpu,
        instance,
        layout,
    };
    (resolved, errors)
}

/// The model: preset or quick size with the user's overrides, validated.
fn resolve_model(plan: &Plan, lang: Lang, errors: &mut Vec<Message>) -> (Architecture, String) {
    let (arch, mut model_name) = resolve_architecture(plan);
    if !plan.arch.is_empty() {
        model_name = custom_name(&arch, &plan.model, lang);
    }
    if plan.arch.hidden.is_some()
        && plan.arch.head_dim.is_none()
        && arch.heads > 0
        && arch.hidden % arch.heads != 0
    {
        let args: [(&str, &dyn Display); 2] = [("heads", &arch.heads), ("hidden", &arch.hidden)];
        errors.push(Message::new(
            lang,
            "heads_do_not_divide_hidden",
            "heads",
            Text::HeadsDoNotDivideHidden,
            &args,
        ));
    }
    for (key, message) in arch.validate_in(lang) {
        errors.push(Message {
            code: "invalid_architecture",
            key: Some(key),
            message,
            fix: None,
        });
    }
    (arch, model_name)
}

/// A shape the user edited is "custom", with a preset of its size (within
/// 15% of its parameters) as a hint: the one it started from if still that
/// size, else the nearest. A 405B shape typed over the 8B preset is not
/// "Llama-3.1-8B".
fn custom_name(arch: &Architecture, base: &str, lang: Lang) -> String {
    let total = arch.parameter_counts().total as f64;
    let near =
        |p: &&architecture::Preset| (preset_total(&p.id) / total).ln().abs() < 0.15f64.ln_1p();
    let nearest = architecture::preset(base)
        .filter(near)
        .map(|p| (p, 0.0))
        .or_else(|| {
            architecture::presets()
                .iter()
                .filter(near)
                .map(|p| (p, (preset_total(&p.id) / total).ln().abs()))
                .min_by(|a, b| a.1.total_cmp(&b.1))
        });
    match nearest {
        Some((p, _)) => fill(lang, Text::CustomModelNear, &[("name", &p.name)]),
        None => t(lang, Text::CustomModel).to_string(),
    }
}

/// A preset's parameter count, computed once per preset.
fn preset_total(id: &str) -> f64 {
    static TOTALS: std::sync::OnceLock<Vec<(String, f64)>> = std::sync::OnceLock::new();
    TOTALS
        .get_or_init(|| {
            architecture::presets()
                .iter()
                .map(|p| (p.id.clone(), p.arch.parameter_counts().total as f64))
                .collect()
        })
        .iter()
        .find(|(i, _)| i == id)
        .map_or(f64::NAN, |(_, n)| *n)
}

type Hardware = (Cow<'static, Gpu>, Cow<'static, Instance>);

/// The GPU and the instance: a catalogued SageMaker type or the user's custom GPU.
fn resolve_hardware(plan: &Plan, lang: Lang, errors: &mut Vec<Message>) -> Hardware {
    let (gpu, instance): Hardware = if plan.instance == "custom" {
        let (g, i) = hardware::custom(&plan.custom_gpu);
        (Cow::Owned(g), Cow::Owned(i))
    } else {
        let instance = hardware::instance(&plan.instance)
            .or_else(|| hardware::instance(&Plan::default().instance))
            .expect("default instance exists");
        let gpu = hardware::gpu(&instance.gpu).expect("every instance names a catalogued GPU");
        (Cow::Borrowed(gpu), Cow::Borrowed(instance))
    };
    if plan.nodes > 1 && !instance.multi_node_efa_training {
        let args: [(&str, &dyn Display); 1] = [("instance", &instance.instance_type)];
        errors.push(Message::new(
            lang,
            "no_multi_node",
            "nodes",
            Text::NoMultiNode,
            &args,
        ));
    } else if plan.nodes > 1 && instance.network_gbps() <= 0.0 {
        let m = Message::new(lang, "no_network", "gpu_net", Text::NoNetwork, &[]);
        errors.push(m.fix("nodes", "1"));
    }
    (gpu, instance)
}

/// The parallel layout: each degree checked against the model and the GPUs,
/// an invalid one falling back to 1.
fn resolve_layout(
    plan: &Plan,
    arch: &Architecture,
    instance: &Instance,
    lang: Lang,
    errors: &mut Vec<Message>,
) -> Layout {
    // Without a network between them, nodes cannot train together: one node.
    let nodes = if instance.network_gbps() > 0.0 {
        plan.nodes.max(1)
    } else {
        1
    };
    let gpus = instance.gpu_count * nodes;
    let mut tp = resolve_tp(plan, arch, instance, lang, errors);
    let (mut pp, mut stages) = resolve_pp(plan, arch, lang, errors);
    let mut cp = resolve_cp(plan, lang, errors);
    let mut ep = resolve_ep(plan, arch, lang, errors);
    if tp * pp * cp > gpus || !gpus.is_multiple_of(tp * pp * cp) {
        let product = tp * pp * cp;
        let args: [(&str, &dyn Display); 2] = [("product", &product), ("gpus", &gpus)];
        errors.push(Message::new(
            lang,
            "parallel_degrees_exceed_gpus",
            "tp",
            Text::ParallelDegreesExceedGpus,
            &args,
        ));
        (tp, pp, cp) = (1, 1, 1);
        stages = Stages::even(arch.layers, 1);
    }
    let dp = gpus / (tp * pp * cp);
    if ep > dp * tp {
        let available = dp * tp;
        let args: [(&str, &dyn Display); 2] = [("ep", &ep), ("available", &available)];
        errors.push(Message::new(
            lang,
            "ep_exceeds_gpus",
            "ep",
            Text::EpExceedsGpus,
            &args,
        ));
        ep = 1;
    }
    let shard = resolve_shard(plan, dp, lang, errors);
    Layout {
        gpus,
        tp,
        pp,
        cp,
        ep,
        dp,
        shard,
        stages,
    }
}

/// Tensor parallelism splits heads and kv heads, and should stay in one node.
fn resolve_tp(
    plan: &Plan,
    arch: &Architecture,
    instance: &Instance,
    lang: Lang,
    errors: &mut Vec<Message>,
) -> u64 {
    let mut tp = plan.tp.max(1);
    if arch.heads > 0 && (!arch.heads.is_multiple_of(tp) || !arch.kv_heads.is_multiple_of(tp)) {
        let args: [(&str, &dyn Display); 3] = [
            ("tp", &tp),
            ("heads", &arch.heads),
            ("kv_heads", &arch.kv_heads),
        ];
        errors.push(Message::new(
            lang,
            "tp_does_not_divide_heads",
            "tp",
            Text::TpDoesNotDivideHeads,
            &args,
        ));
        tp = 1;
    }
    // TP's all-reduces want NVLink: one instance, or a GB200 UltraServer's domain.
    let domain = if crate::hardware::is_ultraserver(&instance.instance_type) {
        plan.ultraserver.max(instance.gpu_count)
    } else {
        instance.gpu_count
    };
    if tp > domain {
        let args: [(&str, &dyn Display); 2] = [("tp", &tp), ("gpus", &domain)];
        errors.push(Message::new(
            lang,
            "tp_exceeds_node",
            "tp",
            Text::TpExceedsNode,
            &args,
        ));
    }
    tp
}

/// Pipeline stages as Megatron splits them: evenly, with the embedding and
/// loss counted as slots, or with explicit first/last-rank layer counts.
fn resolve_pp(
    plan: &Plan,
    arch: &Architecture,
    lang: Lang,
    errors: &mut Vec<Message>,
) -> (u64, Stages) {
    let (pp, vp, layers) = (plan.pp.max(1), plan.vp.max(1), arch.layers);
    if pp == 1 || layers == 0 {
        return (pp, Stages::even(layers, pp));
    }
    let explicit = plan.pp_first.is_some() || plan.pp_last.is_some();
    let stages = if explicit {
        Stages::explicit(layers, pp, plan.pp_first, plan.pp_last)
    } else {
        Stages::megatron(layers, pp, vp)
    };
    if let Some(s) = stages {
        return (pp, s);
    }
    let nearest = nearest_pipeline_degrees(layers, pp, vp);
    let args: [(&str, &dyn Display); 5] = [
        ("pp", &pp),
        ("vp", &vp),
        ("layers", &layers),
        ("slots", &(layers + 2)),
        ("nearest", &nearest),
    ];
    let (code, key, id) = if explicit {
        ("pp_split_invalid", "pp_first", Text::PpSplitInvalid)
    } else {
        (
            "pp_does_not_divide_layers",
            "pp",
            Text::PpDoesNotDivideLayers,
        )
    };
    errors.push(Message::new(lang, code, key, id, &args));
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
fn resolve_cp(plan: &Plan, lang: Lang, errors: &mut Vec<Message>) -> u64 {
    let cp = plan.cp.max(1);
    if !plan.seq.is_multiple_of(cp) {
        let args: [(&str, &dyn Display); 2] = [("cp", &cp), ("seq", &plan.seq)];
        errors.push(Message::new(
            lang,
            "cp_does_not_divide_seq",
            "cp",
            Text::CpDoesNotDivideSeq,
            &args,
        ));
        return 1;
    }
    cp
}

/// Expert parallelism splits the experts of a mixture-of-experts model.
fn resolve_ep(plan: &Plan, arch: &Architecture, lang: Lang, errors: &mut Vec<Message>) -> u64 {
    let ep = plan.ep.max(1);
    match &arch.moe {
        Some(m) if !(m.experts as u64).is_multiple_of(ep) => {
            let args: [(&str, &dyn Display); 2] = [("ep", &ep), ("experts", &m.experts)];
            errors.push(Message::new(
                lang,
                "ep_does_not_divide_experts",
                "ep",
                Text::EpDoesNotDivideExperts,
                &args,
            ));
            1
        }
        None if ep > 1 => {
            errors.push(Message::new(
                lang,
                "ep_without_moe",
                "ep",
                Text::EpWithoutMoe,
                &[],
            ));
            1
        }
        _ => ep,
    }
}

/// The hybrid shard group divides the data-parallel ranks (all of them by default).
fn resolve_shard(plan: &Plan, dp: u64, lang: Lang, errors: &mut Vec<Message>) -> u64 {
    match plan.shard {
        Some(s) if s > dp || !dp.is_multiple_of(s) => {
            let args: [(&str, &dyn Display); 2] = [("shard", &s), ("dp", &dp)];
            errors.push(Message::new(
                lang,
                "shard_does_not_divide_dp",
                "shard",
                Text::ShardDoesNotDivideDp,
                &args,
            ));
            dp
        }
        Some(s) => s,
        None => dp,
    }
}

/// FP8 needs FP8 tensor cores; MXFP8 and NVFP4 need Blackwell's block scaling.
fn check_precision(plan: &Plan, gpu: &Gpu, lang: Lang, errors: &mut Vec<Message>) {
    let precision = plan.precision.key();
    let args: [(&str, &dyn Display); 2] = [("gpu", &gpu.id), ("precision", &precision)];
    if plan.precision.is_low_precision() && !gpu.fp8_tensor_cores {
        errors.push(
            Message::new(
                lang,
                "fp8_unsupported",
                "precision",
                Text::Fp8Unsupported,
                &args,
            )
            .fix("precision", "bf16"),
        );
    } else if matches!(plan.precision, Precision::Mxfp8 | Precision::Nvfp4) && !gpu.fp4_tensor_cores
    {
        errors.push(
            Message::new(
                lang,
                "blackwell_only",
                "precision",
                Text::BlackwellOnly,
                &args,
            )
            .fix("precision", "fp8"),
        );
    }
}

/// Evaluate a plan: parameters, memory, verdict, solvers, warnings.
pub fn evaluate(plan: &Plan) -> Report {
    let (r, errors) = resolve(plan);
    let fabric = Fabric::of(&r.gpu, &r.instance, plan.ultraserver);
    let mem = memory::breakdown(&r.arch, &r.counts, plan, &r.layout);
    let usable = r.gpu.usable_bytes();
    let budget = budget_bytes(usable, plan.headroom);
    let fits = mem.peak_bytes <= budget;
    let verdict = if fits {
        "fits"
    } else if mem.peak_bytes <= usable {
        "tight"
    } else {
        "does_not_fit"
    };
    let max_micro_batch = max_micro_batch(&r, budget);
    let max_sequence = max_sequence(&r, budget);
    let global_batch_sequences = (plan.micro_batch)
        .saturating_mul(plan.grad_accum)
        .saturating_mul(r.layout.dp);
    let gen = throughput::generation(&r.gpu);
    let tp = throughput::throughput(
        &r.arch,
        &r.counts,
        plan,
        &r.layout,
        &r.gpu,
        &fabric,
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
            assumed_bytes: mem
                .terms
                .iter()
                .filter(|(t, _)| t.is_assumed())
                .fold(0u64, |sum, (_, b)| sum.saturating_add(*b)),
            compute: memory::compute_path(plan),
            accuracy: accuracy(&r),
        },
        fits,
        verdict,
        max_micro_batch,
        max_sequence,
        global_batch_sequences,
        global_batch_tokens: global_batch_sequences.saturating_mul(plan.seq),
        throughput_accuracy: throughput_accuracy(&r, gen, &fabric),
        throughput: tp,
        time,
        checkpoint,
        cost,
        layers_per_pipeline_rank: r.layout.stages.per_rank(r.layout.pp),
        nvlink: nvlink_domains(&r.layout, &fabric),
        warnings: Vec::new(),
        errors,
    };
    report.warnings = warnings::check(&r, &report, &mem);
    report
}

/// How far the speed is checked: the cross-validated error of the group of
/// published runs this plan belongs to, inside what those runs ran
/// (sequence, GPUs, model size, precision, training, offloading), or
/// "extrapolated" along the axes it leaves; outside every checked group,
/// "derived" with the nearest group's error for scale (data/coverage.json).
fn throughput_accuracy(r: &Resolved<'_>, gen: Generation, fabric: &Fabric) -> Accuracy {
    use crate::accuracy::{checked_group, Group};
    let lang = lang_of(r.plan.lang);
    let group = Group::of(r.plan, &r.arch, &r.layout, gen, fabric);
    let Some((stats, exact)) = checked_group(&group, &r.gpu.id) else {
        return Accuracy {
            level: "derived",
            expected_error: None,
            note: t(lang, Text::ThroughputUnchecked).to_string(),
        };
    };
    let (median, under, over) = error_figures(lang, stats.cv_median, stats.cv_under, stats.cv_over);
    let name = stats.group.name();
    let args: [(&str, &dyn Display); 5] = [
        ("rows", &stats.rows),
        ("group", &name),
        ("median", &median),
        ("under", &under),
        ("over", &over),
    ];
    let outside = stats
        .envelope
        .outside(r.plan, r.counts.total, r.layout.gpus);
    let mut a = if !exact {
        Accuracy {
            level: "derived",
            expected_error: None,
            note: fill(lang, Text::ThroughputNearest, &args),
        }
    } else if !outside.is_empty() {
        extrapolated(lang, &outside, fill(lang, Text::ThroughputChecked, &args))
    } else if stats.rows < ROWS_FOR_AN_ERROR {
        Accuracy {
            level: "calibrated",
            expected_error: None,
            note: fill(lang, Text::ThroughputFewRows, &args),
        }
    } else {
        let worst = stats.cv_under.abs().max(stats.cv_over.abs());
        Accuracy {
            level: "calibrated",
            expected_error: Some(worst.max(5.0) / 100.0),
            note: fill(lang, Text::ThroughputChecked, &args),
        }
    };
    let gb200 = r.gpu.id.starts_with("GB200");
    if gen == Generation::Blackwell && !r.plan.precision.is_low_precision() && !gb200 {
        a.note = format!("{}; {}", a.note, t(lang, Text::BlackwellBf16FromGb200));
    }
    if r.arch.moe.is_some() {
        // One factor per generation cannot follow these runs' scatter.
        if a.level == "calibrated" {
            a.level = "approximate";
        }
        a.expected_error = a.expected_error.map(|e| e.max(0.5));
        a.note = format!("{}; {}", a.note, t(lang, Text::MoeComputeRough));
    }
    a
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
        Checkpointing::Op,
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
            &Fabric::of(&r.gpu, &r.instance, p.ultraserver),
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
