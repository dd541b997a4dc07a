//! The labels each figure carries: which checks vouch for a plan's memory
//! and speed, with what error, and along which axes the plan leaves what
//! they ran ("extrapolated").

use crate::estimate::report::{Accuracy, Level};
use crate::model::job::Job;
use crate::model::memory;
use crate::model::plan::{Plan, TrainingStage};
use crate::model::resolve::{resolve, resolve_for};
use crate::model::throughput::{Fabric, Generation};
use crate::text::{Arg, Join, Phrase, Text};

use crate::accuracy::coverage::ROWS_FOR_AN_ERROR;
use crate::accuracy::envelope::{Envelope, Outside};

/// A figure checked by `stats` (the note `note_id` fills with `kind`): its
/// level inside the checks' envelope, "extrapolated" along the axes the
/// plan leaves it on, and an expected error only from `ROWS_FOR_AN_ERROR`
/// rows up.
fn checked_memory(
    plan: &Plan,
    r: &Job,
    level: Level,
    stats: &crate::accuracy::coverage::MemoryStats,
    note_id: Text,
    kind: &'static str,
) -> Accuracy {
    let outside = memory_outside(plan, r, &stats.envelope, stats.quoted_error());
    checked_memory_outside(outside, level, stats, note_id, kind)
}

/// [`checked_memory`] of a plan whose axes outside the checks' envelope
/// are `outside` (already found).
fn checked_memory_outside(
    outside: Vec<Outside>,
    level: Level,
    stats: &crate::accuracy::coverage::MemoryStats,
    note_id: Text,
    kind: &'static str,
) -> Accuracy {
    let note = memory_note(note_id, stats, kind);
    let expected = stats.quoted_error();
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
fn memory_outside(plan: &Plan, r: &Job, env: &Envelope, tolerance: f64) -> Vec<Outside> {
    let outside = env.outside(plan, &r.arch, r.layout.gpus);
    material(plan, r, env, outside, Figure::Peak, tolerance)
}

/// Where a plan leaves its speed checks' envelope, along the axes that
/// move its tokens/s per GPU by more than `tolerance`.
fn speed_outside(plan: &Plan, r: &Job, env: &Envelope, tolerance: f64) -> Vec<Outside> {
    let outside = env.outside(plan, &r.arch, r.layout.gpus);
    material(plan, r, env, outside, Figure::Speed, tolerance)
}

/// The figure a label vouches for: the allocated peak bytes per GPU (what
/// the memory checks measure; the verdict's allowances are stated apart),
/// or tokens/s per GPU.
#[derive(Clone, Copy)]
enum Figure {
    Peak,
    Speed,
}

impl Figure {
    /// The figure of a resolved plan, or `None` where it has an error.
    fn of_job(self, r: &Job) -> Option<f64> {
        r.valid.then(|| match self {
            Figure::Peak => r.allocated_peak_bytes() as f64,
            Figure::Speed => r.throughput(&r.efficiency()).tokens_per_second_per_gpu,
        })
    }

    /// The figure of a plan, resolved.
    #[cfg(test)]
    fn of(self, p: &Plan) -> Option<f64> {
        self.of_job(&resolve(p).0)
    }

    /// The figure of `p`, a plan `r`'s with a setting put back: resolved
    /// on `r`'s model where it names the same one (a model with an error
    /// has an error in any plan).
    fn of_put_back(self, base: &Plan, r: &Job, p: &Plan) -> Option<f64> {
        if p.model != base.model {
            return self.of_job(&resolve(p).0);
        }
        let model = (r.arch.clone(), r.model_name.clone());
        r.model_valid
            .then(|| self.of_job(&resolve_for(p, model, Vec::new()).0))
            .flatten()
    }
}

/// The axes of `outside` that matter. The envelope's main axes (sequence,
/// micro-batch, GPUs, size, precision, training, sharding) always do, and a
/// plan outside one is named by those alone. Inside them, a setting the
/// checks never ran stays when no value they ran brings `figure` within
/// `tolerance` of the plan's own; the settings that pass one by one stay
/// too when, put back together, they move it further (#36: two MoE flags
/// each within a group's 18% moved the step 84% together).
fn material(
    plan: &Plan,
    r: &Job,
    env: &Envelope,
    outside: Vec<Outside>,
    figure: Figure,
    tolerance: f64,
) -> Vec<Outside> {
    let is_setting = |o: &Outside| matches!(o, Outside::Setting { .. });
    if outside.iter().any(|o| !is_setting(o)) {
        return outside.into_iter().filter(|o| !is_setting(o)).collect();
    }
    let Some(base) = (!outside.is_empty()).then(|| figure.of_job(r)).flatten() else {
        return outside;
    };
    // Measured from the checked value's figure, as the checks' errors are
    // from what they measured.
    let shift = |p: &Plan| {
        figure
            .of_put_back(plan, r, p)
            .map_or(f64::INFINITY, |f| (base / f - 1.0).abs())
    };
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
                .inside_values(plan, &r.arch, key)
                .into_iter()
                .filter_map(|v| Envelope::put_back(plan, key, &v).map(|p| (v, shift(&p))))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            Some((o, key, best))
        })
        .collect();
    let passes = |b: &Option<(String, f64)>| b.as_ref().is_some_and(|(_, d)| *d <= tolerance);
    let passing: Vec<_> = nearest
        .iter()
        .filter(|(_, _, b)| passes(b))
        .filter_map(|(_, key, b)| b.as_ref().map(|(v, d)| (key, v, *d)))
        .collect();
    // None put back is the plan itself, and one is the plan its own shift
    // measured: only two or more are a new plan to resolve.
    let together = match passing.as_slice() {
        [] => 0.0,
        [(_, _, d)] => *d,
        _ => passing
            .iter()
            .try_fold(plan.clone(), |p, (key, v, _)| {
                Envelope::put_back(&p, key, v)
            })
            .map_or(f64::INFINITY, |p| shift(&p)),
    };
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

/// The values the checks ran of a setting, as the link writes them, an
/// unset one in the page's language.
fn checked_values(values: &[String]) -> Arg {
    let phrase = |v: &String| match v.as_str() {
        "" => Phrase::new(Text::Unset),
        _ => Phrase::verbatim(v.clone()),
    };
    Arg::List(values.iter().map(phrase).collect(), Join::Comma)
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
        } => Phrase::new(Text::AxisSetting)
            .with("value", value.clone())
            .with("checked", checked_values(checked))
            .with("key", *key),
        Outside::Zero { value, checked } => unchecked(Text::AxisZero, value, checked),
        Outside::Hybrid => Phrase::new(Text::AxisHybrid),
        Outside::GpuType { value, checked } | Outside::Family { value, checked } => {
            let id = match o {
                Outside::GpuType { .. } => Text::AxisGpuType,
                _ => Text::AxisFamily,
            };
            Phrase::new(id)
                .with("value", value.clone())
                .with("checked", checked_values(checked))
        }
    }
}

/// How far the memory figure is checked: HF Transformers on one GPU against
/// the CUDA steps counted under FakeTensor, FSDP2 (ZeRO-2/3) and LoRA plans
/// against the memory oracle's table (tools/oracle), the torchtitan stack
/// against torchtitan's measured runs, Megatron full training against
/// Megatron-LM's CI runs, everything else derived (data/coverage.json,
/// computed by `plan calibrate`); each within its checks' envelope.
pub(crate) fn memory_accuracy(plan: &Plan, r: &Job) -> Accuracy {
    let c = crate::accuracy::coverage::shipped();
    let stage = r.recipe.training.stage;
    // The fine-tuning runs measured on GPUs are SFT steps.
    if let Some(a) = measured_on_gpu(plan, r, &c.memory_gpu).filter(|_| stage.next_token_loss()) {
        return a;
    }
    match checked_memory_kind(r) {
        Some(MemoryKind::SingleRank) => {
            let a = checked_memory(
                plan,
                r,
                Level::Counted,
                &c.memory_single_rank,
                Text::MemoryCheckedSingleRank,
                "",
            );
            // Beyond those steps (one micro-batch a step, up to 1.2 B and
            // 4K tokens), the oracle's one-GPU steps may hold the plan.
            if a.level != Level::Extrapolated {
                return a;
            }
            oracle_memory(plan, r, "sharding=single", "1 GPU")
                .filter(|o| o.level != Level::Extrapolated)
                .unwrap_or(a)
        }
        Some(MemoryKind::Oracle(group, kind)) => {
            oracle_memory(plan, r, group, kind).unwrap_or_else(|| derived(stage))
        }
        // torchtitan's published runs of the plan's layout: measured, loosely.
        Some(MemoryKind::Torchtitan(layout)) => match c.torchtitan(layout) {
            Some(stats) => checked_memory(
                plan,
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
            plan,
            r,
            Level::Approximate,
            &c.memory_megatron,
            Text::MemoryCheckedMegatron,
            "",
        ),
        _ => derived(stage),
    }
}

/// The memory oracle's group `group` (its steps of `kind`) for a plan:
/// counted within its envelope, with its held-out figure where held-out
/// steps check that kind; `None` where the group has no rows.
fn oracle_memory(plan: &Plan, r: &Job, group: &str, kind: &'static str) -> Option<Accuracy> {
    let c = crate::accuracy::coverage::shipped();
    let stats = c.oracle(group)?;
    let mut a = checked_memory(
        plan,
        r,
        Level::Counted,
        stats,
        Text::MemoryCheckedOracle,
        kind,
    );
    if let Some(n) = a.note.last_mut() {
        n.args.push(("gpus", stats.envelope.gpus.1.into()));
    }
    // The model was never changed on the DPO steps (#38): they are its
    // out-of-sample check.
    if group == "stage=dpo" {
        a.note.push(Phrase::new(Text::MemoryOracleDpoOutOfSample));
        return Some(a);
    }
    if group == "stage=grpo" {
        let text = if r.recipe.training.rollout.gen_gpus > 0 {
            Text::MemoryOracleGrpoServer
        } else {
            Text::MemoryOracleGrpoShare
        };
        a.note.push(Phrase::new(text));
        return Some(a);
    }
    // The held-out steps are data parallel: tensor parallelism has none.
    if group == "sharding=tp" {
        a.note.push(Phrase::new(Text::MemoryOracleInSampleOnly));
        Some(a)
    } else {
        Some(with_heldout(a, &c.memory_oracle_heldout))
    }
}

/// Real fine-tuning runs on GPUs (memory_checks::gpu_memory_rows) vouch for an HF
/// data-parallel plan inside what they ran: "measured" on GPU, with their
/// worst error either way. Outside, the other checks speak.
fn measured_on_gpu(
    plan: &Plan,
    r: &Job,
    stats: &crate::accuracy::coverage::MemoryStats,
) -> Option<Accuracy> {
    let l = &r.layout;
    let hf_dp = r.recipe.implementation.stack == crate::model::plan::Stack::Hf
        && l.tp == 1
        && l.pp == 1
        && l.cp == 1
        && l.ep == 1;
    if !hf_dp || stats.rows == 0 {
        return None;
    }
    let outside = memory_outside(plan, r, &stats.envelope, stats.quoted_error());
    if !outside.is_empty() {
        return None;
    }
    // Inside: the envelope is not checked again.
    Some(checked_memory_outside(
        outside,
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
fn memory_note(
    id: Text,
    stats: &crate::accuracy::coverage::MemoryStats,
    kind: &'static str,
) -> Phrase {
    let figures = error_figures(stats.median, stats.under, stats.over);
    Phrase::of(id, figures)
        .with("rows", stats.rows)
        .with("kind", kind)
}

/// The oracle's table is in-sample (the memory model was changed on its
/// rows); its held-out plans are not: their error is the one to expect, and
/// the note gives both.
fn with_heldout(mut a: Accuracy, heldout: &crate::accuracy::coverage::MemoryStats) -> Accuracy {
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
fn checked_memory_kind(r: &Job) -> Option<MemoryKind> {
    use crate::model::plan::{Optimizer, Stack, Training};
    let (recipe, layout) = (&r.recipe, &r.layout);
    let hf_tp = recipe.implementation.stack == Stack::Hf && layout.tp > 1;
    match recipe.training.stage {
        TrainingStage::Dpo => return dpo_memory_kind(r),
        TrainingStage::Grpo => return grpo_memory_kind(r),
        TrainingStage::Sft => {}
    }
    let parallel = (layout.tp > 1 && !hf_tp) || layout.pp > 1 || layout.cp > 1 || layout.ep > 1;
    let full_dense = recipe.training.train == Training::Full
        && r.arch.moe.is_none()
        && !recipe.activations.offload;
    if recipe.implementation.stack == Stack::Torchtitan && full_dense {
        return Some(MemoryKind::Torchtitan(
            crate::accuracy::memory_checks::torchtitan_layout(layout),
        ));
    }
    if recipe.implementation.stack == Stack::Megatron && recipe.training.train == Training::Full {
        return Some(MemoryKind::Megatron);
    }
    let hf_dense = recipe.implementation.stack == Stack::Hf
        && !parallel
        && !recipe.activations.offload
        && r.arch.moe.is_none()
        && matches!(
            recipe.training.optimizer,
            Optimizer::Adamw | Optimizer::AdamwForeach
        );
    if !hf_dense {
        return None;
    }
    let fsdp = memory::runs_fsdp2(recipe, layout);
    match (recipe.training.train, recipe.numerics.precision) {
        (_, p) if p.is_low_precision() => None,
        (Training::Full, _) if hf_tp && fsdp => {
            Some(MemoryKind::Oracle("sharding=tp", "TP + FSDP2"))
        }
        _ if hf_tp => None,
        (Training::Full, _) if layout.dp == 1 => Some(MemoryKind::SingleRank),
        (Training::Full, _) if fsdp && recipe.parallelism.zero == 3 => {
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
fn grpo_memory_kind(r: &Job) -> Option<MemoryKind> {
    let (recipe, l) = (&r.recipe, &r.layout);
    let one_or_fsdp2 = l.dp == 1 || memory::runs_fsdp2(recipe, l);
    let oracle_ran = one_or_fsdp2 && r.arch.moe.is_none() && !recipe.activations.offload;
    oracle_ran.then_some(MemoryKind::Oracle("stage=grpo", "GRPO update"))
}

/// The oracle's DPO steps (`stage=dpo`, #38): train.py on the HF stack,
/// dense, AdamW, BF16 / FP32, full training or LoRA, one GPU or FSDP2, no
/// offloading. Anything else is derived.
fn dpo_memory_kind(r: &Job) -> Option<MemoryKind> {
    use crate::model::plan::{Optimizer, Stack};
    let (recipe, l) = (&r.recipe, &r.layout);
    let data_parallel = l.tp == 1 && l.pp == 1 && l.cp == 1 && l.ep == 1;
    let one_or_fsdp2 = l.dp == 1 || memory::runs_fsdp2(recipe, l);
    let oracle_ran = recipe.implementation.stack == Stack::Hf
        && data_parallel
        && one_or_fsdp2
        && !recipe.activations.offload
        && r.arch.moe.is_none()
        && !recipe.numerics.precision.is_low_precision()
        && recipe.training.train != crate::model::plan::Training::Qlora
        && matches!(
            recipe.training.optimizer,
            Optimizer::Adamw | Optimizer::AdamwForeach
        );
    oracle_ran.then_some(MemoryKind::Oracle("stage=dpo", "DPO"))
}

/// What checks Blackwell's dense BF16 speed off GB200 (whose own runs fit
/// it, in the plan's group): the real 8 x B200 Megatron-LM runs, named with
/// their GPU and error, on B200 and B300 alike (#57).
fn blackwell_bf16_note(gpu: &str) -> Option<Phrase> {
    let b200 = &crate::accuracy::coverage::shipped().speed_b200;
    (!gpu.starts_with("GB200") && b200.rows > 0).then(|| {
        Phrase::of(
            Text::BlackwellBf16CheckedOnB200,
            error_figures(b200.median, b200.under, b200.over),
        )
        .with("rows", b200.rows)
    })
}

/// How far the speed is checked: the cross-validated error of the group of
/// published runs this plan belongs to, inside what those runs ran, or
/// "extrapolated" along the axes it leaves; a ± only from five rows of two
/// models or more (#36). Outside every checked group, "derived", with its
/// own stack's error over every kind for scale (data/coverage.json).
pub(crate) fn throughput_accuracy(
    plan: &Plan,
    r: &Job,
    gen: Generation,
    fabric: &Fabric,
) -> Accuracy {
    use crate::accuracy::coverage::{checked_group, Group};
    let group = Group::of(plan, &r.arch, &r.layout, gen, fabric);
    let mut a = match checked_group(&group, r.gpu.id) {
        Some(stats) => checked_throughput(plan, r, stats),
        None => unchecked_throughput(r, &group),
    };
    if gen == Generation::Blackwell && !r.recipe.numerics.precision.is_low_precision() {
        a.note.extend(blackwell_bf16_note(r.gpu.id));
    }
    let derived_step = match r.recipe.training.stage {
        TrainingStage::Sft => None,
        TrainingStage::Dpo => Some(Text::SpeedDerivedDpo),
        TrainingStage::Grpo => Some(Text::SpeedDerivedGrpo),
    };
    if let Some(text) = derived_step {
        // No published DPO or GRPO run checks the step: its reference forward
        // and generation are derived; the SFT part's check, if any, stays as
        // a note for scale.
        a.level = Level::Derived;
        a.expected_error = None;
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
fn checked_throughput(
    plan: &Plan,
    r: &Job,
    stats: &crate::accuracy::coverage::GroupStats,
) -> Accuracy {
    let figures = error_figures(stats.cv_median, stats.cv_under, stats.cv_over);
    let note = |id| {
        Phrase::of(id, figures.clone())
            .with("rows", stats.rows)
            .with("models", stats.models)
            .with("group", stats.group.phrase())
    };
    let mut outside = other_kind(plan, r, stats);
    outside.extend(speed_outside(
        plan,
        r,
        &stats.envelope,
        stats.quoted_error(),
    ));
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

/// The GPU and the model family of a plan where the group's runs had
/// neither (#57: the runs' kind is what a "calibrated" label promises).
fn other_kind(plan: &Plan, r: &Job, stats: &crate::accuracy::coverage::GroupStats) -> Vec<Outside> {
    let family = crate::accuracy::case::plan_family(plan);
    let mut out = Vec::new();
    if !stats.gpu_types.iter().any(|g| g == r.gpu.id) {
        out.push(Outside::GpuType {
            value: r.gpu.id.to_string(),
            checked: stats.gpu_types.clone(),
        });
    }
    if let Some(family) = family.filter(|f| !stats.families.iter().any(|g| g == f)) {
        out.push(Outside::Family {
            value: family.to_string(),
            checked: stats.families.clone(),
        });
    }
    out
}

/// A plan of a kind no published run checked: "derived", naming its own
/// stack's cross-validated error over every kind of its runs for scale, or
/// none where the stack has no published run.
fn unchecked_throughput(r: &Job, group: &crate::accuracy::coverage::Group) -> Accuracy {
    let note = match crate::accuracy::coverage::stack_stats(r.recipe.implementation.stack) {
        Some(s) => Phrase::of(
            Text::ThroughputStackOnly,
            error_figures(s.cv_median, s.cv_under, s.cv_over),
        )
        .with("rows", s.rows)
        .with("group", group.phrase())
        .with(
            "stack",
            Arg::from(crate::accuracy::sequence_bands::stack_name(
                r.recipe.implementation.stack,
            )),
        ),
        None => Phrase::new(Text::ThroughputUnchecked),
    };
    Accuracy {
        level: Level::Derived,
        expected_error: None,
        note: vec![note],
    }
}

#[cfg(test)]
mod tests {
    use super::{material, Figure};
    use crate::{accuracy::envelope::Envelope, model::plan::Plan, model::resolve::resolve};

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
            let outside = env.outside(&plan, &r.arch, r.layout.gpus);
            material(&plan, &r, &env, outside, Figure::Speed, 0.10)
                .into_iter()
                .map(|o| match o {
                    crate::accuracy::envelope::Outside::Setting { key, .. } => key,
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        for one in ["ga=16", "tp_overlap=0", "overlap=0"] {
            assert_eq!(named(one), Vec::<&str>::new(), "{one} alone");
        }
        let all = named("ga=16&tp_overlap=0&overlap=0");
        assert_eq!(all.len(), 3, "{all:?}");
        let speed = |q: &str| Figure::Speed.of(&Plan::from_query(q).plan);
        let base = speed(recipe).unwrap();
        let off = speed(&format!("{recipe}&ga=16&tp_overlap=0&overlap=0"));
        assert!(base / off.unwrap() - 1.0 > 0.10);
    }

    /// The values a setting's checks ran, an unset one in the page's
    /// language (#34: "unset" reached a Russian page in English).
    #[test]
    fn checked_values_are_said_in_the_language() {
        use crate::model::plan::Lang;
        let checked = ["".to_string(), "4".to_string()];
        let o = super::Outside::Setting {
            key: "offload_layers",
            value: "8".into(),
            checked: checked.to_vec(),
        };
        let phrase = super::outside_axis(&o);
        let said = |lang| crate::text::render(lang, &phrase);
        let en = "offload_layers=8 not checked (checked: unset, 4)";
        assert_eq!(said(Lang::En), en);
        let (ru, unset) = (
            said(Lang::Ru),
            crate::text::t(Lang::Ru, crate::text::Text::Unset),
        );
        assert!(
            ru.contains(&format!(": {unset}, 4)")) && !ru.contains("unset"),
            "{ru}"
        );
    }
}
