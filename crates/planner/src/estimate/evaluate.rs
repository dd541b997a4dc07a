//! `evaluate(&Plan) -> Report`: resolve the plan, run the models, label
//! each figure by its checks (labels.rs), solve for the largest micro-batch
//! and sequence (fit.rs), and check the plan against the field guide
//! (warnings.rs). The page's charts of the same job are compare.rs.

use crate::estimate::compare::{instance_options, sequence_chart, SequenceChart};
use crate::estimate::labels::{memory_accuracy, throughput_accuracy};
use crate::estimate::report::{
    budget_bytes, Accuracy, Figures, InstanceOption, Level, MemoryReport, NvlinkDomains, Report,
    Tight, Verdict,
};
use crate::estimate::warnings;
use crate::model::cost;
use crate::model::fit::largest_that_fit;
use crate::model::job::Job;
use crate::model::layout::Layout;
use crate::model::memory;
use crate::model::plan::Plan;
use crate::model::resolve::resolve;
use crate::model::throughput::{self, Fabric};
use crate::text::{Phrase, Text};

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

/// How many times a plan has been evaluated in this process: by
/// [`evaluate`], [`evaluate_with_charts`], or one chart on its own.
pub fn evaluations() -> u64 {
    EVALUATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Count one evaluation of a plan (each public entry point that resolves one).
fn count_evaluation() {
    EVALUATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// A plan's report with the page's charts of the same job: what one edit
/// on the page evaluates, once.
pub struct Evaluation {
    pub report: Report,
    /// Peak memory per GPU against sequence length, per checkpointing mode.
    pub sequence_chart: SequenceChart,
    /// The job on every training instance type.
    pub instances: Vec<InstanceOption>,
}

impl std::ops::Deref for Evaluation {
    type Target = Report;
    fn deref(&self) -> &Report {
        &self.report
    }
}

/// The sequence chart of a plan, resolved here: one evaluation of its own
/// (the page draws it from its one evaluation, [`evaluate_with_charts`]).
pub fn memory_vs_sequence(plan: &Plan, seqs: &[u64]) -> SequenceChart {
    count_evaluation();
    sequence_chart(&resolve(plan).0, seqs)
}

/// The instance comparison of a plan, resolved here: one evaluation of its own.
pub fn compare_instances(plan: &Plan) -> Vec<InstanceOption> {
    count_evaluation();
    instance_options(plan, &resolve(plan).0)
}

/// [`evaluate`], and the sequence chart at `seqs` and the instance
/// comparison drawn from the same resolved job.
pub fn evaluate_with_charts(plan: &Plan, seqs: &[u64]) -> Evaluation {
    count_evaluation();
    let (r, errors) = resolve(plan);
    Evaluation {
        report: report_of(plan, &r, errors),
        sequence_chart: sequence_chart(&r, seqs),
        instances: instance_options(plan, &r),
    }
}

/// Fits with the allocator's usual room, may run out of it (and which
/// margin it is inside of), or not at all (a host that cannot hold the
/// offloaded activations never fits). `peak` has the allocator's typical
/// reserve, `least` its least (`MemoryBreakdown::least_bytes`).
pub(crate) fn verdict_of(
    (peak, least): (u64, u64),
    budget: u64,
    usable: u64,
    host_full: bool,
) -> (Verdict, Option<Tight>) {
    if host_full || least > usable {
        (Verdict::DoesNotFit, None)
    } else if peak <= budget {
        (Verdict::Fits, None)
    } else if least <= budget {
        (Verdict::Tight, Some(Tight::Caching))
    } else {
        (Verdict::Tight, Some(Tight::Headroom))
    }
}

/// Sequences a step of `plan` takes on `layout`: micro-batch x
/// accumulation x data-parallel ranks.
pub(crate) fn global_batch_sequences(plan: &Plan, layout: &crate::model::layout::Layout) -> u64 {
    (plan.data.micro_batch)
        .saturating_mul(plan.data.grad_accum)
        .saturating_mul(layout.dp)
}

/// Evaluate a plan: parameters, memory, verdict, solvers, warnings.
pub fn evaluate(plan: &Plan) -> Report {
    count_evaluation();
    let (r, errors) = resolve(plan);
    report_of(plan, &r, errors)
}

/// The report of a resolved plan; `errors` are its resolver's.
fn report_of(plan: &Plan, r: &Job, mut errors: Vec<crate::text::Message>) -> Report {
    let recipe = &r.recipe;
    let fabric = &r.fabric;
    let mem = r.memory_with_engine();
    let usable = r.gpu.usable_bytes();
    let budget = budget_bytes(usable, plan.allowances.headroom);
    let offload = memory::offload(&r.arch, &r.counts, recipe, &r.layout);
    let host = crate::model::host::offload_overflow(recipe, &offload, &r.instance, r.layout.gpus);
    let sleep = crate::model::host::sleep_overflow(
        recipe,
        (r.host_backup_bytes(), offload.host_bytes_per_gpu()),
        &r.instance,
        r.layout.gpus,
    );
    let host_full = host.is_some() || sleep.is_some();
    errors.extend(host);
    errors.extend(sleep);
    let (verdict, tight) = verdict_of((mem.peak_bytes, mem.least_bytes), budget, usable, host_full);
    let (max_micro_batch, max_sequence) = largest_that_fit(r, budget, mem.peak_bytes);
    let global_batch_sequences = global_batch_sequences(plan, &r.layout);
    let gen = r.gpu.generation;
    let tp = r.throughput(&r.efficiency());
    let (time, checkpoint, failures, cost) = cost::estimate(plan, r, &tp);
    let rollout = rollout_figures(r, fabric, &tp, global_batch_sequences);
    let mut figures = Figures {
        model_name: r.model_name.clone(),
        parameters: r.counts.total,
        parameters_active: r.counts.active,
        architecture: r.arch.clone(),
        layout: r.layout,
        gpu: r.gpu.id.to_string(),
        instance: r.instance.instance_type.to_string(),
        memory: MemoryReport {
            peak_bytes_per_gpu: mem.peak_bytes,
            least_bytes_per_gpu: mem.least_bytes,
            allocated_peak_bytes: mem.allocated_peak_bytes,
            terms: mem.terms.clone(),
            phase: mem.phase,
            usable_bytes: usable,
            budget_bytes: budget,
            tight,
            usable_is_estimate: r.gpu.usable_is_estimate(),
            activation_bytes: mem.activation_bytes,
            assumed_bytes: mem
                .terms
                .iter()
                .filter(|(t, _)| t.is_assumed())
                .fold(0u64, |sum, (_, b)| sum.saturating_add(*b)),
            compute: memory::compute_path(recipe),
            accuracy: memory_accuracy(plan, r),
        },
        fits: verdict != Verdict::DoesNotFit,
        verdict,
        max_micro_batch,
        max_sequence,
        global_batch_sequences,
        global_batch_tokens: tp.tokens_per_step,
        throughput_accuracy: throughput_accuracy(plan, r, gen, fabric),
        throughput: tp,
        time,
        checkpoint,
        failures,
        cost,
        layers_per_pipeline_rank: r.layout.stages.per_rank(r.layout.pp),
        engine: plan.engine(),
        nvlink: nvlink_domains(&r.layout, fabric),
        rollout,
    };
    if crate::estimate::launchers::no_engine(plan).is_some() || host_full {
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
    let warnings = warnings::check(plan, r, &figures, &errors, &mem);
    let engine_pp = figures.rollout.as_ref().map_or(1, |g| g.vllm_pp);
    Report {
        figures,
        warnings,
        errors,
        export_notes: crate::estimate::launchers::export_notes(plan, r, engine_pp),
    }
}

/// A GRPO plan's vLLM engine, prompts and rollout tokens per second.
/// `rows` is the step's global batch of rows (`mb x ga x dp`).
fn rollout_figures(
    r: &Job,
    fabric: &Fabric,
    tp: &throughput::Throughput,
    rows: u64,
) -> Option<crate::estimate::report::RolloutFigures> {
    let e = crate::model::rollout::VllmEngine::of(
        &r.arch,
        &r.counts,
        &r.recipe,
        &r.gpu,
        (fabric, &r.layout),
    )?;
    let rollout = &r.recipe.training.rollout;
    Some(crate::estimate::report::RolloutFigures {
        vllm_tp: e.tp,
        vllm_pp: e.pp,
        server_gpus: e.server_gpus,
        engines: e.engines,
        rows_per_engine: e.rows as u64,
        concurrent_rows: e.concurrent as u64,
        prompts_per_step: rows / rollout.generations.max(1),
        prompts_per_second: tp.samples_per_second,
        rollout_tokens_per_second: tp.samples_per_second
            * (rollout.generations * rollout.mean_completion()) as f64,
    })
}
