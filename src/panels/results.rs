//! The verdict, the memory breakdown, speed, time and cost, and the warnings.

use crate::ctx::Ctx;
use crate::format::{
    gb, gib, hours, num, params, percent, seconds, sig, term_label, tokens, tr, usd, verdict,
};
use leptos::prelude::*;
use planner::model::memory::Phase;
use planner::model::plan::Lang;
use planner::text::{render, render_all, Arg, Phrase, Text};

#[component]
pub fn Results(ctx: Ctx) -> impl IntoView {
    let report = ctx.report;
    let lang = ctx.lang;
    let t = move |id| tr(lang.get(), id);
    view! {
        <section class="results" aria-label=move || t(Text::Results)>
            <div class=move || format!("verdict {}", report.with(|r| verdict(r).1)) id="verdict" aria-live="polite">
                <span class="verdict-word">{move || t(report.with(|r| verdict(r).0))}</span>
                <span class="verdict-detail" id="peak">
                    {move || { let l = lang.get(); report.with(|r| format!("{} {} {} {} ({} {} {})",
                        gib(r.memory.peak_bytes_per_gpu, l), tr(l, Text::WordOf), gib(r.memory.budget_bytes, l), tr(l, Text::BudgetPerGPU),
                        gib(r.memory.usable_bytes, l), tr(l, if r.memory.usable_is_estimate { Text::UsableEstimatedOn } else { Text::UsableOn }), r.gpu)) }}
                </span>
            </div>
            <MemoryBar ctx=ctx />
            <dl class="stats">
                <Stat ctx=ctx id="model-name" label=Text::Model value=|_, r, l| render(l, &r.model_name) />
                <Stat ctx=ctx id="params" label=Text::Parameters value=|_, r, l| if r.parameters == r.parameters_active { params(r.parameters, l) } else { format!("{} ({} {})", params(r.parameters, l), params(r.parameters_active, l), tr(l, Text::WordActive)) } />
                <Stat ctx=ctx id="gpus" label=Text::Gpus value=|_, r, l| gpus_line(r, l) />
                <Show when=move || report.with(|r| r.layout.pp > 1)>
                    <Stat ctx=ctx id="pp-layers" label=Text::LayersPerPipelineRank value=|_, r, l| {
                        let s = &r.layout.stages;
                        let ends = if s.embedding_and_loss_slots { tr(l, Text::EmbeddingAndLossSlots) } else { "" };
                        format!("{} | {} × {} | {}{}", s.first, s.middle, r.layout.pp.saturating_sub(2), s.last, ends)
                    } />
                </Show>
                <Stat ctx=ctx id="nvlink" label=Text::NvlinkDomains value=|_, r, l| {
                    let n = &r.nvlink;
                    let crossing = if n.crossing.is_empty() { tr(l, Text::NoGroupCrosses).to_string() } else { n.crossing.join(", ").to_ascii_uppercase() };
                    format!("{} × {} GPU — {}: {}", n.domains, n.gpus_per_domain, tr(l, Text::CrossingDomains), crossing)
                } />
                <Stat ctx=ctx id="tps-gpu" label=Text::TokensSPerGPU value=|_, r, l| sig(r.throughput.tokens_per_second_per_gpu, l) />
                <Stat ctx=ctx id="tps" label=Text::TokensSWholeJob value=|ctx, r, l| format!("{} ({} {})", tokens(r.throughput.tokens_per_second, l), sig(r.throughput.samples_per_second, l), tr(l, samples_unit(ctx))) />
                <Stat ctx=ctx id="step" label=Text::StepTime value=|_, r, l| step_split(&r.throughput, l) />
                <Show when=move || report.with(|r| r.rollout.is_some())>
                    <Stat ctx=ctx id="rollout" label=Text::RolloutTokensS value=|_, r, l| r.rollout.as_ref().map(|g| rollout_line(g, l)).unwrap_or_default() />
                </Show>
                <Stat ctx=ctx id="mfu" label=Text::MFUHFU value=|_, r, l| format!("{} / {}", percent(r.throughput.mfu, l), percent(r.throughput.hfu, l)) />
                <Stat ctx=ctx id="time" label=Text::TimeToTrain value=|_, r, l| format!("{} ({} {}, {} {})", hours(r.time.total_hours, l), num(r.time.steps as f64, 0, l), tr(l, Text::WordSteps), sig(r.time.gpu_hours, l), tr(l, Text::GPUHours)) />
                <Stat ctx=ctx id="cost" label=Text::CostOnDemandSpot value=|ctx, r, l| match (r.cost.total_usd, r.cost.spot_usd) {
                    (Some(a), Some(b)) => format!("{} / {} ({}; {})", usd(a, l), usd(b, l), unit_cost(ctx, r.cost.usd_per_million_tokens.unwrap_or(0.0), l), price_basis(&r.cost, l)),
                    _ => tr(l, Text::PriceUnknownEnterItUnder).to_string(),
                } />
                <Stat ctx=ctx id="checkpoint" label=Text::Checkpoint value=|_, r, l| format!("{} {} {}, {} {}",
                    gb(r.checkpoint.size_bytes, l), tr(l, Text::PerSave), seconds(r.checkpoint.seconds_per_save, l),
                    percent(r.checkpoint.wall_share, l), tr(l, Text::OfWallTime)) />
                <Stat ctx=ctx id="failures" label=Text::Interruptions value=|_, r, l| failures_line(&r.failures, l) />
                <Stat ctx=ctx id="max-mb" label=Text::LargestMicroBatchThatFits value=|_, r, l| if r.max_micro_batch == 0 { tr(l, Text::NoMicroBatchFits).to_string() } else { r.max_micro_batch.to_string() } />
                <Stat ctx=ctx id="max-seq" label=Text::LongestSequenceThatFits value=|_, r, l| if r.max_sequence == 0 { tr(l, Text::NoSequenceFits).to_string() } else { num(r.max_sequence as f64, 0, l) } />
            </dl>
            <p class=move || report.with(|r| format!("accuracy accuracy-{}", r.throughput_accuracy.level)) id="throughput-accuracy">
                {move || { let l = lang.get(); report.with(|r| accuracy_line(&r.throughput_accuracy, Text::SpeedAndCostAreExpected, Text::SpeedAndCostUnchecked, l)) }}</p>
            <Messages ctx=ctx />
        </section>
    }
}

/// The step's time; for DPO the part its reference model's forward takes,
/// for LoRA its adapters', for QLoRA its dequantizing, for GRPO its
/// generation, scoring, update and refit.
fn step_split(t: &planner::model::throughput::Throughput, l: Lang) -> String {
    let step = seconds(t.step_seconds, l);
    if t.step.generation > 0.0 {
        let s = &t.step;
        let p = Phrase::of(
            Text::OfWhichGenerationScoring,
            [
                ("step", Arg::from(step)),
                ("gen", Arg::from(seconds(s.generation, l))),
                ("score", Arg::from(seconds(s.reference, l))),
                ("update", Arg::from(seconds(s.update(), l))),
                ("refit", Arg::from(seconds(s.refit, l))),
            ],
        );
        return render(l, &p);
    }
    // The parts a plan's stage or adapters add, each where it has one.
    let parts: Vec<String> = [
        (t.step.reference, Text::OfWhichReferenceForward),
        (t.step.adapters, Text::OfWhichAdapters),
        (t.step.dequantize, Text::OfWhichDequantize),
    ]
    .iter()
    .filter(|(s, _)| *s > 0.0)
    .map(|(s, id)| format!("{} {}", tr(l, *id), seconds(*s, l)))
    .collect();
    if parts.is_empty() {
        return step;
    }
    format!("{step} ({})", parts.join("; "))
}

/// The training GPUs and their layout, and a GRPO plan's vLLM server GPUs.
fn gpus_line(r: &planner::estimate::report::Report, l: Lang) -> String {
    let line = format!(
        "{} × {} (DP {}, TP {}, PP {}, CP {})",
        r.layout.gpus, r.gpu, r.layout.dp, r.layout.tp, r.layout.pp, r.layout.cp
    );
    match r.rollout.as_ref().map_or(0, |g| g.server_gpus) {
        0 => line,
        k => format!("{line} + {k} {}", tr(l, Text::ForTheVllmServer)),
    }
}

/// GRPO's rollout tokens per second and the vLLM engine that makes them.
fn rollout_line(g: &planner::estimate::report::RolloutFigures, l: Lang) -> String {
    let text = if g.server_gpus > 0 {
        Text::RolloutServer
    } else {
        Text::RolloutEngine
    };
    // An engine's GPUs: its TP times its pipeline stages across nodes.
    let gpus = g.vllm_tp * g.vllm_pp;
    let engine = Phrase::of(
        text,
        [
            ("tp", Arg::from(&gpus)),
            ("concurrent", Arg::from(&g.concurrent_rows)),
            ("rows", Arg::from(&g.rows_per_engine)),
            ("gpus", Arg::from(&g.server_gpus)),
            ("engines", Arg::from(&g.engines)),
        ],
    );
    format!(
        "{} ({})",
        sig(g.rollout_tokens_per_second, l),
        render(l, &engine)
    )
}

/// The cost of a unit of work: a million tokens, or a thousand DPO
/// preference pairs or GRPO prompts (`cost::usd_per_thousand_samples`).
fn unit_cost(ctx: Ctx, per_million_tokens: f64, l: Lang) -> String {
    use planner::model::plan::TrainingStage;
    let unit = match ctx.plan.with(|p| p.training.stage) {
        TrainingStage::Sft => {
            return format!(
                "{} {}",
                usd(per_million_tokens, l),
                tr(l, Text::Per1MTokens)
            )
        }
        TrainingStage::Dpo => Text::Per1KPairs,
        TrainingStage::Grpo => Text::Per1KPrompts,
    };
    let per_thousand = ctx
        .plan
        .with(|p| planner::model::cost::usd_per_thousand_samples(p, per_million_tokens));
    format!("{} {}", usd(per_thousand, l), tr(l, unit))
}

/// What one sample is: a sequence, or a DPO preference pair (two rows).
fn samples_unit(ctx: Ctx) -> Text {
    match ctx.plan.with(|p| p.training.stage) {
        planner::model::plan::TrainingStage::Sft => Text::SamplesS,
        planner::model::plan::TrainingStage::Dpo => Text::PairsS,
        planner::model::plan::TrainingStage::Grpo => Text::PromptsS,
    }
}

/// How one figure of the results list is written from the evaluation.
type Figure = fn(Ctx, &planner::estimate::evaluate::Evaluation, Lang) -> String;

/// One figure of the results list. Its value is a plain function, not a
/// generic closure: one copy of the component serves every figure (#59:
/// the generic one was compiled once per figure, 7 KB of the page).
#[component]
fn Stat(ctx: Ctx, id: &'static str, label: Text, value: Figure) -> impl IntoView {
    let l = move || ctx.lang.get();
    view! {
        <dt>{move || tr(l(), label)}</dt>
        <dd id=id>{move || ctx.report.with(|r| value(ctx, r, l()))}</dd>
    }
}

#[component]
fn MemoryBar(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    view! {
        <div class="membar-wrap">
            {move || {
                let l = lang.get();
                ctx.report.with(|r| {
                    let m = &r.memory;
                    let scale = (m.peak_bytes_per_gpu.max(m.usable_bytes)) as f64;
                    let pct = |b: u64| 100.0 * b as f64 / scale;
                    let segments = m.terms.iter().filter(|(_, b)| *b > 0).map(|(t, b)| {
                        let key = t.key();
                        let title = format!("{}: {}", term_label(key, l), gib(*b, l));
                        view! { <div class=format!("seg seg-{key}") style=format!("width:{:.3}%", pct(*b)) title=title></div> }
                    }).collect_view();
                    let rows = m.terms.iter().filter(|(_, b)| *b > 0).map(|(t, b)| {
                        let key = t.key();
                        let name = if t.is_assumed() {
                            format!("{} ({})", term_label(key, l), tr(l, Text::AssumedMark))
                        } else {
                            term_label(key, l).to_string()
                        };
                        view! { <tr><td><span class=format!("swatch seg-{key}") aria-hidden="true"></span>{name}</td><td class="num">{gib(*b, l)}</td></tr> }
                    }).collect_view();
                    let assumed = planner::text::fill(l, Text::AssumedTermsNote, &[("gib", &gib(m.assumed_bytes, l))]);
                    let aria = format!("{} {} / {} {}", tr(l, Text::PeakMemory), gib(m.peak_bytes_per_gpu, l), gib(m.usable_bytes, l), tr(l, Text::WordUsable));
                    view! {
                        <div class="membar" role="img" aria-label=aria>
                            {segments}
                            <div class="cap usable" style=format!("left:{:.3}%", pct(m.usable_bytes)) title=tr(l, Text::UsableMemory)></div>
                            <div class="cap budget" style=format!("left:{:.3}%", pct(m.budget_bytes)) title=tr(l, Text::BudgetUsableMinusHeadroom)></div>
                        </div>
                        <table class="terms" id="terms">
                            <caption>{format!("{} ({})", tr(l, Text::PerGPUMemoryAtThe), phase_label(m.phase, l))}</caption>
                            <tbody>{rows}</tbody>
                            <tfoot><tr><th>{tr(l, Text::Total)}</th><th class="num">{gib(m.peak_bytes_per_gpu, l)}</th></tr></tfoot>
                        </table>
                        <p class="derived" id="assumed">{assumed}</p>
                        <p class=format!("accuracy accuracy-{}", m.accuracy.level) id="accuracy">
                            {accuracy_line(&m.accuracy, Text::MemoryExpectedWithin, Text::MemoryUnchecked, l)}
                        </p>
                    }
                })
            }}
        </div>
    }
}

fn phase_label(p: Phase, l: Lang) -> &'static str {
    match p {
        Phase::RootAllGather => tr(l, Text::RootAllGatherPhase),
        Phase::LossForward => tr(l, Text::LossForwardPhase),
        Phase::LossBackward => tr(l, Text::StartOfBackwardLossBuffers),
        Phase::LayerBackward => tr(l, Text::RecomputingACheckpointedLayer),
        Phase::LayerReduceScatter => tr(l, Text::LayerReduceScatterPhase),
        Phase::EndOfBackward => tr(l, Text::EndOfBackwardAllGradients),
        Phase::OptimizerStep => tr(l, Text::OptimizerStep),
        Phase::Generation => tr(l, Text::GenerationPhase),
    }
}

/// Errors, warnings and what the launch bundle does not run (notes); where
/// one setting fixes a message, a button applies it.
#[component]
fn Messages(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    view! {
        <ul class="messages" id="messages">
            {move || {
                let l = lang.get();
                ctx.report.with(|r| {
                    let errors = r.errors.iter().map(|m| ("error", m));
                    let warnings = r.warnings.iter().map(|m| ("warning", m));
                    let notes = r.export_notes.iter().map(|m| ("note", m));
                    errors.chain(warnings).chain(notes)
                        .map(|(class, m)| message_item(ctx, l, class, m))
                        .collect_view()
                })
            }}
        </ul>
    }
}

/// One message as a list item of `class` (error, warning, note), with its
/// fix as a button. A note says first that it is about the launch bundle.
pub(crate) fn message_item(
    ctx: Ctx,
    l: Lang,
    class: &'static str,
    m: &planner::estimate::report::Message,
) -> impl IntoView {
    let fix = m.fix.clone();
    let lead = (class == "note").then(|| view! { <b>{tr(l, Text::ExportNoteLead)}" "</b> });
    view! {
        <li class=class data-code=m.code()>
            <span>{lead}{render(l, &m.phrase)}</span>
            {fix.map(|(key, value)| {
                let label = format!("{} {key}={value}", tr(l, Text::Apply));
                view! { <button type="button" class="fix" data-fix=format!("{key}={value}") on:click=move |_| ctx.set(key, &value)>{label}</button> }
            })}
        </li>
    }
}

/// "Expected within ±X%: what it was checked against." A figure whose
/// evidence supports no error (derived, extrapolated, too few checks) gets no
/// ± at all: the page never shows precision it does not have.
fn accuracy_line(
    a: &planner::estimate::report::Accuracy,
    checked: Text,
    derived: Text,
    l: Lang,
) -> String {
    match a.expected_error {
        Some(e) => format!(
            "{} ±{}: {}.",
            tr(l, checked),
            percent(e, l),
            render_all(l, &a.note)
        ),
        None => format!("{}: {}.", tr(l, derived), render_all(l, &a.note)),
    }
}

/// Where the hourly price comes from, beside every cost (SPEC §8).
pub fn price_basis(cost: &planner::model::cost::Cost, l: Lang) -> String {
    let as_of = cost.price_as_of.clone().unwrap_or_default();
    match cost.price_source.as_str() {
        "listed" => planner::text::fill(l, Text::PriceBasisListed, &[("as_of", &as_of)]),
        "derived" => tr(l, Text::PriceBasisDerived).to_string(),
        _ => tr(l, Text::PriceBasisUser).to_string(),
    }
}

/// Interruptions in the time to train: how many, how often, what they cost
/// (#58), or that the job would not finish.
fn failures_line(f: &planner::model::failures::Failures, l: Lang) -> String {
    match (f.expected_interruptions, f.mtbf_hours, f.lost_hours) {
        _ if f.never_finishes => tr(l, Text::InterruptionsNever).to_string(),
        (Some(n), Some(mtbf), Some(lost)) => format!(
            "≈{} {} {}, +{} ({} {})",
            num(n, if n < 10.0 { 1 } else { 0 }, l),
            tr(l, Text::InterruptionsExpected),
            hours(mtbf, l),
            hours(lost, l),
            percent(f.wall_share, l),
            tr(l, Text::OfWallTime)
        ),
        _ => "—".into(),
    }
}
