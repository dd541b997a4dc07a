//! `evaluate(&Plan) -> Report`: resolve the plan, run the models, label
//! each figure by its checks, solve for the largest micro-batch and
//! sequence, and check the plan against the field guide (warnings).

use crate::cost;
use crate::hardware;
use crate::layout::Layout;
use crate::memory;
use crate::plan::{Checkpointing, Plan, TrainingStage};
use crate::report::{
    budget_bytes, Accuracy, Figures, InstanceOption, Level, MemoryReport, NvlinkDomains, Report,
    Verdict,
};
use crate::resolve::{resolve, Resolved};
use crate::text::{Arg, Join, Phrase, Text};
use crate::throughput::{self, Fabric, Generation};
use crate::warnings;

use crate::coverage::ROWS_FOR_AN_ERROR;
use crate::envelope::{Envelope, Outside};

/// A figure checked by `stats` (the note `note_id` fills with `kind`): its
/// level inside the checks' envelope, "extrapolated" along the axes the
/// plan leaves it on, and an expected error only from `ROWS_FOR_AN_ERROR`
/// rows up.
fn checked_memory(
    r: &Resolved<'_>,
    level: Level,
    stats: &crate::coverage::MemoryStats,
    note_id: Text,
    kind: &'static str,
) -> Accuracy {
    let note = memory_note(note_id, stats, kind);
    let expected = stats.quoted_error();
    let outside = memory_outside(r, &stats.envelope, expected);
    if !outside.is_empty() {
        return extrapolated(&outside, note);
    }
    Accuracy {
        level,
        expected_error: (stats.rows >= ROWS_FOR_AN_ERROR).then_some(expected),
        note: vec![note],
    }
}

/// Where a plan leaves its memory checks' envelope, along the axes that
/// move its peak by more than `tolerance`.
fn memory_outside(r: &Resolved<'_>, env: &Envelope, tolerance: f64) -> Vec<Outside> {
    let outside = env.outside(r.plan, &r.arch, r.layout.gpus);
    material(r, env, outside, &peak_of, tolerance)
}

/// A plan's peak bytes per GPU, or `None` where it has an error.
fn peak_of(p: &Plan) -> Option<f64> {
    let (v, errors) = resolve(p);
    let m = memory::breakdown(&v.arch, &v.counts, p, &v.layout);
    errors.is_empty().then_some(m.peak_bytes as f64)
}

/// A plan's tokens/s per GPU, or `None` where it has an error.
fn speed_of(p: &Plan) -> Option<f64> {
    let (v, errors) = resolve(p);
    let t = v.throughput(&v.efficiency());
    errors.is_empty().then_some(t.tokens_per_second_per_gpu)
}

/// Where a plan leaves its speed checks' envelope, along the axes that
/// move its tokens/s per GPU by more than `tolerance`.
fn speed_outside(r: &Resolved<'_>, env: &Envelope, tolerance: f64) -> Vec<Outside> {
    let outside = env.outside(r.plan, &r.arch, r.layout.gpus);
    material(r, env, outside, &speed_of, tolerance)
}

/// The axes of `outside` that matter. The envelope's main axes (sequence,
/// micro-batch, GPUs, size, precision, training, sharding) always do, and a
/// plan outside one is named by those alone. Inside them, a setting the
/// checks never ran stays when no value they ran brings `figure` within
/// `tolerance` of the plan's own; the settings that pass one by one stay
/// too when, put back together, they move it further (#36: two MoE flags
/// each within a group's 18% moved the step 84% together).
fn material(
    r: &Resolved<'_>,
    env: &Envelope,
    outside: Vec<Outside>,
    figure: &dyn Fn(&Plan) -> Option<f64>,
    tolerance: f64,
) -> Vec<Outside> {
    let is_setting = |o: &Outside| matches!(o, Outside::Setting { .. });
    if outside.iter().any(|o| !is_setting(o)) {
        return outside.into_iter().filter(|o| !is_setting(o)).collect();
    }
    let Some(base) = (!outside.is_empty()).then(|| figure(r.plan)).flatten() else {
        return outside;
    };
    // Measured from the checked value's figure, as the checks' errors are
    // from what they measured.
    let shift = |p: &Plan| figure(p).map_or(f64::INFINITY, |f| (base / f - 1.0).abs());
    // Per setting (only settings are left): the checked value that moves
    // the figure least, and by how much.
    let nearest: Vec<_> = outside
        .into_iter()
        .filter_map(|o| {
            let Outside::Setting { key, .. } = &o else {
                return None;
            };
            let key: &'static str = key;
            let best = env
                .inside_values(r.plan, &r.arch, key)
                .into_iter()
                .filter_map(|v| Envelope::put_back(r.plan, key, &v).map(|p| (v, shift(&p))))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            Some((o, key, best))
        })
        .collect();
    let passes = |b: &Option<(String, f64)>| b.as_ref().is_some_and(|(_, d)| *d <= tolerance);
    let together = nearest
        .iter()
        .filter(|(_, _, b)| passes(b))
        .filter_map(|(_, key, b)| b.as_ref().map(|(v, _)| (key, v)))
        .try_fold(r.plan.clone(), |p, (key, v)| Envelope::put_back(&p, key, v))
        .map_or(f64::INFINITY, |p| shift(&p));
    let jointly = together > tolerance;
    let mut kept: Vec<_> = nearest
        .into_iter()
        .filter(|(_, _, b)| jointly || !passes(b))
        .map(|(o, _, b)| (b.map_or(f64::INFINITY, |(_, d)| d), o))
        .collect();
    // The settings that move the figure most first: the label names a few.
    kept.sort_by(|a, b| b.0.total_cmp(&a.0));
    kept.into_iter().map(|(_, o)| o).collect()
}

/// How many axes a label names before "and N more": a plan of a model no
/// check ran leaves a dozen settings, and the first few (those that move the
/// figure most) say enough.
const NAMED_AXES: usize = 4;

/// A checked kind of plan outside what its checks ran: no error quoted, the
/// axes named first, then what the checks showed inside.
fn extrapolated(outside: &[Outside], inside: Phrase) -> Accuracy {
    let mut axes: Vec<Phrase> = outside.iter().take(NAMED_AXES).map(outside_axis).collect();
    if outside.len() > NAMED_AXES {
        axes.push(Phrase::new(Text::AxisMoreSettings).with("n", outside.len() - NAMED_AXES));
    }
    Accuracy {
        level: Level::Extrapolated,
        expected_error: None,
        note: vec![
            Phrase::new(Text::ExtrapolatedBeyond).with("axes", Arg::List(axes, Join::Semicolon)),
            inside,
        ],
    }
}

/// One axis a plan leaves its checks' envelope on, as a phrase.
fn outside_axis(o: &Outside) -> Phrase {
    let billions = |p: &u64| Arg::Number(*p as f64 / 1e9, 1);
    let range = |id, value: Arg, lo: Arg, hi: Arg| {
        Phrase::of(id, [("value", value), ("lo", lo), ("hi", hi)])
    };
    let unchecked = |id, value: &dyn ToString, checked: &dyn ToString| {
        Phrase::new(id)
            .with("value", value.to_string())
            .with("checked", checked.to_string())
    };
    match o {
        Outside::Sequence { value, lo, hi } => {
            range(Text::AxisSequence, value.into(), lo.into(), hi.into())
        }
        Outside::MicroBatch { value, lo, hi } => {
            range(Text::AxisMicroBatch, value.into(), lo.into(), hi.into())
        }
        Outside::Gpus { value, lo, hi } => {
            range(Text::AxisGpus, value.into(), lo.into(), hi.into())
        }
        Outside::ModelSize { value, lo, hi } => range(
            Text::AxisModelSize,
            billions(value),
            billions(lo),
            billions(hi),
        ),
        Outside::Precision { value, checked } => unchecked(Text::AxisPrecision, value, checked),
        Outside::Training { value, checked } => unchecked(Text::AxisTraining, value, checked),
        Outside::Setting {
            key,
            value,
            checked,
        } => unchecked(Text::AxisSetting, value, checked).with("key", *key),
        Outside::Zero { value, checked } => unchecked(Text::AxisZero, value, checked),
        Outside::Hybrid => Phrase::new(Text::AxisHybrid),
    }
}

/// How far the memory figure is checked: HF Transformers on one GPU against
/// the CUDA steps counted under FakeTensor, FSDP2 (ZeRO-2/3) and LoRA plans
/// against the memory oracle's table (tools/oracle), the torchtitan stack
/// against torchtitan's measured runs, Megatron full training against
/// Megatron-LM's CI runs, everything else derived (data/coverage.json,
/// computed by `plan calibrate`); each within its checks' envelope.
fn accuracy(r: &Resolved<'_>) -> Accuracy {
    let c = crate::coverage::shipped();
    let stage = r.plan.stage;
    // The fine-tuning runs measured on GPUs are SFT steps.
    if let Some(a) = measured_on_gpu(r, &c.memory_gpu).filter(|_| stage == TrainingStage::Sft) {
        return a;
    }
    match checked_memory_kind(r) {
        Some(MemoryKind::SingleRank) => checked_memory(
            r,
            Level::Counted,
            &c.memory_single_rank,
            Text::MemoryCheckedSingleRank,
            "",
        ),
        Some(MemoryKind::Oracle(group, kind)) => match c.oracle(group) {
            Some(stats) => {
                let mut a =
                    checked_memory(r, Level::Counted, stats, Text::MemoryCheckedOracle, kind);
                if let Some(n) = a.note.last_mut() {
                    *n = n.clone().with("gpus", stats.envelope.gpus.1);
                }
                // The model was never changed on the DPO steps (#38): they
                // are its out-of-sample check.
                if group == "stage=dpo" {
                    a.note.push(Phrase::new(Text::MemoryOracleDpoOutOfSample));
                    return a;
                }
                if group == "stage=grpo" {
                    let text = if r.plan.rollout.gen_gpus > 0 {
                        Text::MemoryOracleGrpoServer
                    } else {
                        Text::MemoryOracleGrpoShare
                    };
                    a.note.push(Phrase::new(text));
                    return a;
                }
                // The held-out steps are data parallel: tensor parallelism has none.
                if group == "sharding=tp" {
                    a.note.push(Phrase::new(Text::MemoryOracleInSampleOnly));
                    a
                } else {
                    with_heldout(a, &c.memory_oracle_heldout)
                }
            }
            None => derived(stage),
        },
        // torchtitan's published runs of the plan's layout: measured, loosely.
        Some(MemoryKind::Torchtitan(layout)) => match c.torchtitan(layout) {
            Some(stats) => checked_memory(
                r,
                Level::Approximate,
                stats,
                Text::MemoryCheckedTorchtitan,
                layout,
            ),
            None => derived(stage),
        },
        // Megatron-LM's own CI runs: measured, on a few shapes.
        Some(MemoryKind::Megatron) if c.memory_megatron.rows > 0 => checked_memory(
            r,
            Level::Approximate,
            &c.memory_megatron,
            Text::MemoryCheckedMegatron,
            "",
        ),
        _ => derived(stage),
    }
}

/// Real fine-tuning runs on GPUs (memory_checks::gpu_memory_rows) vouch for an HF
/// data-parallel plan inside what they ran: "measured" on GPU, with their
/// worst error either way. Outside, the other checks speak.
fn measured_on_gpu(r: &Resolved<'_>, stats: &crate::coverage::MemoryStats) -> Option<Accuracy> {
    let l = &r.layout;
    let hf_dp =
        r.plan.stack == crate::plan::Stack::Hf && l.tp == 1 && l.pp == 1 && l.cp == 1 && l.ep == 1;
    let inside =
        stats.rows > 0 && memory_outside(r, &stats.envelope, stats.quoted_error()).is_empty();
    if !hf_dp || !inside {
        return None;
    }
    Some(checked_memory(
        r,
        Level::Measured,
        stats,
        Text::MemoryMeasuredOnGpu,
        "",
    ))
}

/// A median error and the worst under- and over-prediction, percent, as a
/// note writes them (one decimal, signed extremes).
fn error_figures(median: f64, under: f64, over: f64) -> [(&'static str, Arg); 3] {
    [
        ("median", Arg::Number(median, 1)),
        ("under", Arg::Signed(under, 1)),
        ("over", Arg::Signed(over, 1)),
    ]
}

/// A memory check's note: its rows, median and worst under- and
/// over-prediction, and `kind`.
fn memory_note(id: Text, stats: &crate::coverage::MemoryStats, kind: &'static str) -> Phrase {
    let figures = error_figures(stats.median, stats.under, stats.over);
    Phrase::of(id, figures)
        .with("rows", stats.rows)
        .with("kind", kind)
}

/// The oracle's table is in-sample (the memory model was changed on its
/// rows); its held-out plans are not: their error is the one to expect, and
/// the note gives both.
fn with_heldout(mut a: Accuracy, heldout: &crate::coverage::MemoryStats) -> Accuracy {
    a.note
        .push(memory_note(Text::MemoryOracleHeldOut, heldout, ""));
    let worst = heldout.under.abs().max(heldout.over.abs()) / 100.0;
    a.expected_error = a.expected_error.map(|e| e.max(worst));
    a
}

fn derived(stage: TrainingStage) -> Accuracy {
    Accuracy {
        level: Level::Derived,
        expected_error: None,
        note: vec![Phrase::new(match stage {
            TrainingStage::Sft => Text::MemoryDerived,
            TrainingStage::Dpo => Text::MemoryDerivedDpo,
            TrainingStage::Grpo => Text::MemoryDerivedGrpo,
        })],
    }
}

/// What a plan's memory figure was checked against.
enum MemoryKind {
    /// HF on one GPU: memory_examples.csv's CUDA steps.
    SingleRank,
    /// The oracle's group (`sharding=zero3`) and its name in the note.
    Oracle(&'static str, &'static str),
    /// The torchtitan stack, dense: its published runs of the plan's layout.
    Torchtitan(&'static str),
    /// The Megatron stack, full training: Megatron-LM's CI runs.
    Megatron,
}

/// The oracle runs the HF stack data parallel (FSDP2 or one GPU) and tensor
/// parallel under FSDP2, dense models, AdamW, fp32 / BF16 / pure BF16, full
/// training or LoRA, no offloading.
fn checked_memory_kind(r: &Resolved<'_>) -> Option<MemoryKind> {
    use crate::plan::{Optimizer, Stack, Training};
    let (plan, layout) = (r.plan, &r.layout);
    let hf_tp = plan.stack == Stack::Hf && layout.tp > 1;
    match plan.stage {
        TrainingStage::Dpo => return dpo_memory_kind(r),
        TrainingStage::Grpo => return grpo_memory_kind(r),
        TrainingStage::Sft => {}
    }
    let parallel = (layout.tp > 1 && !hf_tp) || layout.pp > 1 || layout.cp > 1 || layout.ep > 1;
    let full_dense = plan.train == Training::Full && r.arch.moe.is_none() && !plan.offload;
    if plan.stack == Stack::Torchtitan && full_dense {
        return Some(MemoryKind::Torchtitan(
            crate::memory_checks::torchtitan_layout(layout),
        ));
    }
    if plan.stack == Stack::Megatron && plan.train == Training::Full {
        return Some(MemoryKind::Megatron);
    }
    let hf_dense = plan.stack == Stack::Hf
        && !parallel
        && !plan.offload
        && r.arch.moe.is_none()
        && matches!(plan.optimizer, Optimizer::Adamw | Optimizer::AdamwForeach);
    if !hf_dense {
        return None;
    }
    let fsdp = memory::runs_fsdp2(plan, layout);
    match (plan.train, plan.precision) {
        (_, p) if p.is_low_precision() => None,
        (Training::Full, _) if hf_tp && fsdp => {
            Some(MemoryKind::Oracle("sharding=tp", "TP + FSDP2"))
        }
        _ if hf_tp => None,
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

/// The oracle's GRPO updates (`stage=grpo`, #38): TRL's loss on train.py's
/// model, one GPU or FSDP2, full or LoRA, BF16; what grpo.py refuses is an
/// error already. vLLM's share beside it is the setting, not counted.
fn grpo_memory_kind(r: &Resolved<'_>) -> Option<MemoryKind> {
    let (plan, l) = (r.plan, &r.layout);
    let one_or_fsdp2 = l.dp == 1 || memory::runs_fsdp2(plan, l);
    let oracle_ran = one_or_fsdp2 && r.arch.moe.is_none() && !plan.offload;
    oracle_ran.then_some(MemoryKind::Oracle("stage=grpo", "GRPO update"))
}

/// The oracle's DPO steps (`stage=dpo`, #38): train.py on the HF stack,
/// dense, AdamW, BF16 / FP32, full training or LoRA, one GPU or FSDP2, no
/// offloading. Anything else is derived.
fn dpo_memory_kind(r: &Resolved<'_>) -> Option<MemoryKind> {
    use crate::plan::{Optimizer, Stack};
    let (plan, l) = (r.plan, &r.layout);
    let data_parallel = l.tp == 1 && l.pp == 1 && l.cp == 1 && l.ep == 1;
    let one_or_fsdp2 = l.dp == 1 || memory::runs_fsdp2(plan, l);
    let oracle_ran = plan.stack == Stack::Hf
        && data_parallel
        && one_or_fsdp2
        && !plan.offload
        && r.arch.moe.is_none()
        && !plan.precision.is_low_precision()
        && plan.train != crate::plan::Training::Qlora
        && matches!(plan.optimizer, Optimizer::Adamw | Optimizer::AdamwForeach);
    oracle_ran.then_some(MemoryKind::Oracle("stage=dpo", "DPO"))
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

/// Evaluations run in this process: the page shows the count to its e2e
/// tests, which hold one edit to one evaluation (#34).
static EVALUATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many times [`evaluate`] has run in this process.
pub fn evaluations() -> u64 {
    EVALUATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Fits inside the budget, only inside the GPU, or not at all (a host
/// that cannot hold the offloaded activations never fits).
fn verdict_of(peak: u64, budget: u64, usable: u64, host_full: bool) -> Verdict {
    if peak <= budget && !host_full {
        Verdict::Fits
    } else if peak <= usable && !host_full {
        Verdict::Tight
    } else {
        Verdict::DoesNotFit
    }
}

/// The GPUs the job pays for: training's, and a GRPO plan's vLLM server's.
fn paid_gpus(r: &Resolved<'_>) -> u64 {
    let p = r.plan;
    r.layout.gpus + crate::rollout::server_gpus(p, r.instance.gpu_count, p.nodes).unwrap_or(0)
}

/// Evaluate a plan: parameters, memory, verdict, solvers, warnings.
pub fn evaluate(plan: &Plan) -> Report {
    EVALUATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (r, mut errors) = resolve(plan);
    let fabric = &r.fabric;
    let pool = crate::rollout::pool_bytes(plan, &r.gpu);
    let mem = memory::breakdown(&r.arch, &r.counts, plan, &r.layout).with_pool(pool);
    let usable = r.gpu.usable_bytes();
    let budget = budget_bytes(usable, plan.headroom);
    let offload = memory::offload(&r.arch, &r.counts, plan, &r.layout);
    let host = crate::host::offload_overflow(plan, &offload, &r.instance, r.layout.gpus);
    let host_full = host.is_some();
    errors.extend(host);
    let verdict = verdict_of(mem.peak_bytes, budget, usable, host_full);
    let (max_micro_batch, max_sequence) = largest_that_fit(&r, budget, mem.peak_bytes);
    let global_batch_sequences = (plan.micro_batch)
        .saturating_mul(plan.grad_accum)
        .saturating_mul(r.layout.dp);
    let gen = throughput::generation(&r.gpu);
    let tp = r.throughput(&r.efficiency());
    let adapters = plan.lora_params(&r.arch);
    let (time, checkpoint, cost) =
        cost::estimate(plan, &r.counts, adapters, &tp, &r.instance, paid_gpus(&r));
    let rollout = rollout_figures(&r, fabric, &tp, global_batch_sequences);
    let mut figures = Figures {
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
        fits: verdict == Verdict::Fits,
        verdict,
        max_micro_batch,
        max_sequence,
        global_batch_sequences,
        global_batch_tokens: tp.tokens_per_step,
        throughput_accuracy: throughput_accuracy(&r, gen, fabric),
        throughput: tp,
        time,
        checkpoint,
        cost,
        layers_per_pipeline_rank: r.layout.stages.per_rank(r.layout.pp),
        engine: plan.engine(),
        nvlink: nvlink_domains(&r.layout, fabric),
        rollout,
    };
    if crate::resolve::engine_error(plan).is_some() || host_full {
        // No engine trains this plan, or its host cannot hold what it
        // offloads: its figures are formulas about a job that cannot start
        // (or finish a step), with no ± from any check.
        let why = if host_full {
            Text::HostCannotHoldOffload
        } else {
            Text::NoEngineRunsThis
        };
        let unrun = || Accuracy {
            level: Level::Derived,
            expected_error: None,
            note: vec![Phrase::new(why)],
        };
        figures.memory.accuracy = unrun();
        figures.throughput_accuracy = unrun();
    }
    let warnings = warnings::check(&r, &figures, &errors, &mem);
    Report {
        figures,
        warnings,
        errors,
    }
}

/// A GRPO plan's vLLM engine, prompts and rollout tokens per second.
/// `rows` is the step's global batch of rows (`mb x ga x dp`).
fn rollout_figures(
    r: &Resolved<'_>,
    fabric: &Fabric,
    tp: &throughput::Throughput,
    rows: u64,
) -> Option<crate::report::RolloutFigures> {
    let e =
        crate::rollout::VllmEngine::of(&r.arch, &r.counts, r.plan, &r.gpu, (fabric, &r.layout))?;
    let rollout = &r.plan.rollout;
    Some(crate::report::RolloutFigures {
        vllm_tp: e.tp,
        server_gpus: e.server_gpus,
        engines: e.engines,
        rows_per_engine: e.rows as u64,
        concurrent_rows: e.concurrent as u64,
        prompts_per_step: rows / rollout.generations.max(1),
        prompts_per_second: tp.samples_per_second,
        rollout_tokens_per_second: tp.samples_per_second
            * (rollout.generations * rollout.completion) as f64,
    })
}

/// How far the speed is checked: the cross-validated error of the group of
/// published runs this plan belongs to, inside what those runs ran, or
/// "extrapolated" along the axes it leaves; a ± only from five rows of two
/// models or more (#36). Outside every checked group, "derived", with its
/// own stack's error over every kind for scale (data/coverage.json).
fn throughput_accuracy(r: &Resolved<'_>, gen: Generation, fabric: &Fabric) -> Accuracy {
    use crate::coverage::{checked_group, Group};
    let group = Group::of(r.plan, &r.arch, &r.layout, gen, fabric);
    let mut a = match checked_group(&group, &r.gpu.id) {
        Some(stats) => checked_throughput(r, stats),
        None => unchecked_throughput(r, &group),
    };
    let gb200 = r.gpu.id.starts_with("GB200");
    if gen == Generation::Blackwell && !r.plan.precision.is_low_precision() && !gb200 {
        a.note.push(Phrase::new(Text::BlackwellBf16FromGb200));
    }
    if r.plan.stage != TrainingStage::Sft {
        // No published DPO or GRPO run checks the step: its reference forward
        // and generation are derived; the SFT part's check, if any, stays as
        // a note for scale.
        a.level = Level::Derived;
        a.expected_error = None;
        let text = if r.plan.stage == TrainingStage::Dpo {
            Text::SpeedDerivedDpo
        } else {
            Text::SpeedDerivedGrpo
        };
        a.note.insert(0, Phrase::new(text));
    }
    if r.arch.moe.is_some() {
        // The label follows the plan's group, as for dense plans (#26: the
        // MoE step is costed part by part and cross-validated per model);
        // the note adds the scatter across all the MoE rows.
        a.note.push(Phrase::new(Text::MoeComputeRough));
    }
    a
}

/// A plan of a checked group: calibrated with the group's ± inside its
/// envelope and with enough rows, without one on fewer, extrapolated
/// outside.
fn checked_throughput(r: &Resolved<'_>, stats: &crate::coverage::GroupStats) -> Accuracy {
    let figures = error_figures(stats.cv_median, stats.cv_under, stats.cv_over);
    let note = |id| {
        Phrase::of(id, figures.clone())
            .with("rows", stats.rows)
            .with("models", stats.models)
            .with("group", stats.group.phrase())
    };
    let outside = speed_outside(r, &stats.envelope, stats.quoted_error());
    if !outside.is_empty() {
        extrapolated(&outside, note(Text::ThroughputChecked))
    } else if !stats.quotes_an_error() {
        Accuracy {
            level: Level::Calibrated,
            expected_error: None,
            note: vec![note(Text::ThroughputFewRows)],
        }
    } else {
        Accuracy {
            level: Level::Calibrated,
            expected_error: Some(stats.quoted_error()),
            note: vec![note(Text::ThroughputChecked)],
        }
    }
}

/// A plan of a kind no published run checked: "derived", naming its own
/// stack's cross-validated error over every kind of its runs for scale, or
/// none where the stack has no published run.
fn unchecked_throughput(r: &Resolved<'_>, group: &crate::coverage::Group) -> Accuracy {
    let note = match crate::coverage::stack_stats(r.plan.stack) {
        Some(s) => Phrase::of(
            Text::ThroughputStackOnly,
            error_figures(s.cv_median, s.cv_under, s.cv_over),
        )
        .with("rows", s.rows)
        .with("group", group.phrase())
        .with(
            "stack",
            Arg::from(crate::sequence_bands::stack_name(r.plan.stack)),
        ),
        None => Phrase::new(Text::ThroughputUnchecked),
    };
    Accuracy {
        level: Level::Derived,
        expected_error: None,
        note: vec![note],
    }
}

/// The largest micro-batch (up to 4096) and the longest sequence (in steps
/// of 128 up to 131072, at the plan's micro-batch) whose peak stays within
/// the budget, and whose offloaded activations the host holds. `peak` is the
/// plan's own peak. One working copy of the plan serves every probe of both
/// searches (a clone per probe cost more than the probe).
fn largest_that_fit(r: &Resolved<'_>, budget: u64, peak: u64) -> (u64, u64) {
    let plan = std::cell::RefCell::new(r.plan.clone());
    let pool = crate::rollout::pool_bytes(r.plan, &r.gpu);
    let peak_of = |p: &Plan| {
        memory::breakdown(&r.arch, &r.counts, p, &r.layout)
            .peak_bytes
            .saturating_add(pool)
    };
    let host_holds = |p: &Plan| {
        !p.offload || {
            let offload = memory::offload(&r.arch, &r.counts, p, &r.layout);
            crate::host::offload_overflow(p, &offload, &r.instance, r.layout.gpus).is_none()
        }
    };
    let mb = {
        let at = Probes::new(|mb| {
            let mut p = plan.borrow_mut();
            p.micro_batch = mb;
            peak_of(&p)
        });
        let x = r.plan.micro_batch.clamp(1, 4096);
        at.know(x, peak);
        largest_near(1, 4096, at.guess(x, budget, 4096), |m| {
            at.get(m) <= budget && {
                plan.borrow_mut().micro_batch = m;
                host_holds(&plan.borrow())
            }
        })
    };
    plan.borrow_mut().micro_batch = r.plan.micro_batch;
    let cp = r.layout.cp.max(1);
    let hi = 1024 / cp;
    let at = Probes::new(|steps| {
        let mut p = plan.borrow_mut();
        p.seq = steps * 128 * cp;
        peak_of(&p)
    });
    // The plan's own sequence is a known point when it lies on the grid.
    let steps = r.plan.seq / (128 * cp);
    let x = if steps >= 1 && steps <= hi && r.plan.seq == steps * 128 * cp {
        at.know(steps, peak);
        steps
    } else {
        hi.clamp(1, 64)
    };
    let seq = largest_near(1, hi, at.guess(x, budget, hi), |s| {
        at.get(s) <= budget && {
            plan.borrow_mut().seq = s * 128 * cp;
            host_holds(&plan.borrow())
        }
    });
    (mb, seq * 128 * cp)
}

/// A peak as a function of one setting, each value computed once.
struct Probes<F: Fn(u64) -> u64> {
    f: F,
    seen: std::cell::RefCell<Vec<(u64, u64)>>,
}

impl<F: Fn(u64) -> u64> Probes<F> {
    fn new(f: F) -> Self {
        Probes {
            f,
            seen: Default::default(),
        }
    }

    /// Record a value already computed.
    fn know(&self, x: u64, peak: u64) {
        self.seen.borrow_mut().push((x, peak));
    }

    fn get(&self, x: u64) -> u64 {
        let seen = self
            .seen
            .borrow()
            .iter()
            .find(|(k, _)| *k == x)
            .map(|s| s.1);
        seen.unwrap_or_else(|| {
            let p = (self.f)(x);
            self.know(x, p);
            p
        })
    }

    /// Where the peak reaches `budget`, extrapolating the local slope at `x`
    /// (the peak is piecewise linear in the micro-batch and, with flash
    /// attention, in the sequence): the first probe of `largest_near`, which
    /// finds the exact answer whatever the guess.
    fn guess(&self, x: u64, budget: u64, hi: u64) -> u64 {
        let near = if x < hi { x + 1 } else { x.saturating_sub(1) };
        if near == 0 || near == x {
            return x;
        }
        let (px, pn) = (self.get(x) as f64, self.get(near) as f64);
        let slope = (pn - px) / (near as f64 - x as f64);
        if slope <= 0.0 {
            return if px <= budget as f64 { hi } else { x };
        }
        let g = x as f64 + (budget as f64 - px) / slope;
        g.clamp(0.0, hi as f64) as u64
    }
}

/// Largest `x` in `lo..=hi` with `fits(x)`, memory being monotonic in `x`; 0
/// if none. Starts at `guess` and gallops away from it (up if it fits, down
/// if not) before bisecting, so a good guess takes two or three probes.
fn largest_near(lo: u64, hi: u64, guess: u64, fits: impl Fn(u64) -> bool) -> u64 {
    if hi < lo {
        return 0;
    }
    let g = guess.clamp(lo, hi);
    let (mut ok, mut bad);
    if fits(g) {
        // Gallop up: ok fits; look for the first that does not.
        (ok, bad) = (g, hi + 1);
        let mut step = 1;
        while ok + step <= hi {
            if fits(ok + step) {
                ok += step;
                step *= 2;
            } else {
                bad = ok + step;
                break;
            }
        }
        if bad == hi + 1 {
            if ok == hi || fits(hi) {
                return hi;
            }
            bad = hi;
        }
    } else {
        // Gallop down: bad does not fit; look for one that does.
        bad = g;
        let mut step = 1;
        loop {
            if bad - lo < step {
                if !fits(lo) {
                    return 0;
                }
                ok = lo;
                break;
            }
            if fits(bad - step) {
                ok = bad - step;
                break;
            }
            bad -= step;
            step *= 2;
        }
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
    // GRPO's vLLM share sits beside every sequence length, as in the peak.
    let pool = crate::rollout::pool_bytes(plan, &r.gpu);
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
                memory::breakdown(&r.arch, &r.counts, &p, &r.layout)
                    .peak_bytes
                    .saturating_add(pool)
            })
            .collect();
        (ck, row)
    })
    .collect()
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
        p.precision = crate::rules::nearest_supported(p.precision, gpu);
        // Tensor parallelism cannot leave the node.
        p.tp = p.tp.min(inst.gpu_count);
        let (r, errors) = resolve(&p);
        if !errors.is_empty() {
            continue;
        }
        let pool = crate::rollout::pool_bytes(&p, &r.gpu);
        let mem = memory::breakdown(&r.arch, &r.counts, &p, &r.layout).with_pool(pool);
        let usable = r.gpu.usable_bytes();
        let tp = throughput::throughput(
            &r.arch,
            &r.counts,
            &p,
            &r.layout,
            &r.gpu,
            &r.fabric,
            &throughput::efficiency(throughput::generation(&r.gpu)),
        );
        let adapters = p.lora_params(&r.arch);
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

#[cfg(test)]
mod tests {
    use super::{largest_near, material, speed_of};
    use crate::{envelope::Envelope, plan::Plan, resolve::resolve};

    /// The 70B Hopper FP8 recipe (mb2511_l70b_h100_fp8) as the only checked
    /// point; a plan off it along three settings that each move tokens/s by
    /// less than a 10% tolerance (GA 64 to 16: the bubble; TP and DP
    /// overlap off), and by more together. One by one none would be named;
    /// together all three are, the one that moves the step most first.
    #[test]
    fn settings_that_matter_together_are_named_together() {
        let recipe = "model=custom&layers=80&hidden=8192&heads=64&kv_heads=8&head_dim=128&ffn=28672&vocab=128256&tied=0&mlp=swiglu&seq=8192&mb=1&ga=64&precision=fp8&ckpt=none&grad_bf16=1&fp8_params=1&loss=fused&stack=megatron&zero=1&tp=4&pp=8&vp=5&sp=1&instance=ml.p5.48xlarge&nodes=8&tp_overlap=1&overlap=1";
        let checked = Plan::from_query(recipe).plan;
        let (c, _) = resolve(&checked);
        let env = Envelope::point(&checked, &c.arch, c.layout.gpus);
        let named = |q: &str| -> Vec<&'static str> {
            let plan = Plan::from_query(&format!("{recipe}&{q}")).plan;
            let (r, _) = resolve(&plan);
            let outside = env.outside(r.plan, &r.arch, r.layout.gpus);
            material(&r, &env, outside, &speed_of, 0.10)
                .into_iter()
                .map(|o| match o {
                    crate::envelope::Outside::Setting { key, .. } => key,
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        for one in ["ga=16", "tp_overlap=0", "overlap=0"] {
            assert_eq!(named(one), Vec::<&str>::new(), "{one} alone");
        }
        let all = named("ga=16&tp_overlap=0&overlap=0");
        assert_eq!(all.len(), 3, "{all:?}");
        let base = speed_of(&Plan::from_query(recipe).plan).unwrap();
        let off =
            speed_of(&Plan::from_query(&format!("{recipe}&ga=16&tp_overlap=0&overlap=0")).plan);
        assert!(base / off.unwrap() - 1.0 > 0.10);
    }

    /// `largest_near` against counting up: the same answer for every
    /// threshold and every guess, inside the range and outside it.
    #[test]
    fn largest_near_agrees_with_a_linear_scan() {
        for (lo, hi) in [(1u64, 1), (1, 2), (1, 64), (3, 100), (1, 1024)] {
            for limit in 0..=hi + 2 {
                let fits = |x: u64| x <= limit;
                let want = (lo..=hi).filter(|&x| fits(x)).max().unwrap_or(0);
                for guess in [0, 1, lo, limit, limit + 1, hi / 2, hi, hi + 5, u64::MAX / 4] {
                    assert_eq!(
                        largest_near(lo, hi, guess, fits),
                        want,
                        "lo {lo} hi {hi} limit {limit} guess {guess}"
                    );
                }
            }
        }
        assert_eq!(largest_near(5, 4, 5, |_| true), 0, "an empty range");
    }
}
