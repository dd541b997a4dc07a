//! The verdict, the memory breakdown, speed, time and cost, and the warnings.

use crate::app::Ctx;
use crate::format::{
    gb, gib, hours, num, params, percent, seconds, sig, term_label, tokens, tr, usd,
};
use leptos::prelude::*;
use planner::memory::Phase;
use planner::plan::Lang;

#[component]
pub fn Results(ctx: Ctx) -> impl IntoView {
    let report = ctx.report;
    let lang = ctx.lang;
    let t = move |en, ru| tr(lang.get(), en, ru);
    view! {
        <section class="results" aria-label=move || t("Results", "Результаты")>
            <div class=move || if report.with(|r| r.fits) { "verdict fits" } else { "verdict nofit" } id="verdict" aria-live="polite">
                <span class="verdict-word">{move || if report.with(|r| r.fits) { t("Fits", "Помещается") } else { t("Does not fit", "Не помещается") }}</span>
                <span class="verdict-detail" id="peak">
                    {move || { let l = lang.get(); report.with(|r| format!("{} {} {} {} ({} {} {})",
                        gib(r.memory.peak_bytes_per_gpu, l), tr(l, "of", "из"), gib(r.memory.budget_bytes, l), tr(l, "budget per GPU", "бюджета на GPU"),
                        gib(r.memory.usable_bytes, l), tr(l, "usable on", "доступно на"), r.gpu)) }}
                </span>
            </div>
            <MemoryBar ctx=ctx />
            <dl class="stats">
                <Stat lang=lang id="model-name" label=("Model", "Модель") value=move |_l| report.with(|r| r.model_name.clone()) />
                <Stat lang=lang id="params" label=("Parameters", "Параметры") value=move |l| report.with(|r| if r.parameters == r.parameters_active { params(r.parameters, l) } else { format!("{} ({} {})", params(r.parameters, l), params(r.parameters_active, l), tr(l, "active", "активных")) }) />
                <Stat lang=lang id="gpus" label=("GPUs", "GPU") value=move |_l| report.with(|r| format!("{} × {} (DP {}, TP {}, PP {}, CP {})", r.layout.gpus, r.gpu, r.layout.dp, r.layout.tp, r.layout.pp, r.layout.cp)) />
                <Stat lang=lang id="tps-gpu" label=("Tokens/s per GPU", "Токенов/с на GPU") value=move |l| report.with(|r| sig(r.throughput.tokens_per_second_per_gpu, l)) />
                <Stat lang=lang id="tps" label=("Tokens/s, whole job", "Токенов/с на всё задание") value=move |l| report.with(|r| format!("{} ({} {})", tokens(r.throughput.tokens_per_second, l), sig(r.throughput.samples_per_second, l), tr(l, "samples/s", "примеров/с"))) />
                <Stat lang=lang id="step" label=("Step time", "Время шага") value=move |l| report.with(|r| seconds(r.throughput.step_seconds, l)) />
                <Stat lang=lang id="mfu" label=("MFU / HFU", "MFU / HFU") value=move |l| report.with(|r| format!("{} / {}", percent(r.throughput.mfu, l), percent(r.throughput.hfu, l))) />
                <Stat lang=lang id="time" label=("Time to train", "Время обучения") value=move |l| report.with(|r| format!("{} ({} {}, {} {})", hours(r.time.total_hours, l), num(r.time.steps as f64, 0, l), tr(l, "steps", "шагов"), sig(r.time.gpu_hours, l), tr(l, "GPU-hours", "GPU-часов"))) />
                <Stat lang=lang id="cost" label=("Cost on-demand / spot", "Стоимость on-demand / spot") value=move |l| report.with(|r| match (r.cost.total_usd, r.cost.spot_usd) {
                    (Some(a), Some(b)) => format!("{} / {} ({} {})", usd(a, l), usd(b, l), usd(r.cost.usd_per_million_tokens.unwrap_or(0.0), l), tr(l, "per 1M tokens", "за 1 млн токенов")),
                    _ => tr(l, "price unknown: enter it under Hardware", "цена неизвестна: введите её в разделе «Железо»").to_string(),
                }) />
                <Stat lang=lang id="checkpoint" label=("Checkpoint", "Чекпоинт") value=move |l| report.with(|r| format!("{} {} {}, {} {}",
                    gb(r.checkpoint.size_bytes, l), tr(l, "per save,", "на сохранение,"), seconds(r.checkpoint.seconds_per_save, l),
                    percent(r.checkpoint.wall_share, l), tr(l, "of wall time", "времени"))) />
                <Stat lang=lang id="max-mb" label=("Largest micro-batch that fits", "Наибольший micro-batch, который влезает") value=move |l| report.with(|r| if r.max_micro_batch == 0 { tr(l, "none", "никакой").to_string() } else { r.max_micro_batch.to_string() }) />
                <Stat lang=lang id="max-seq" label=("Longest sequence that fits", "Самая длинная последовательность, которая влезает") value=move |l| report.with(|r| if r.max_sequence == 0 { tr(l, "none", "никакая").to_string() } else { num(r.max_sequence as f64, 0, l) }) />
            </dl>
            <p class="accuracy" id="throughput-accuracy">{move || { let l = lang.get(); report.with(|r| format!("{} ±{}: {}.",
                tr(l, "Speed and cost are expected within", "Скорость и стоимость — с ожидаемой ошибкой"),
                percent(r.throughput_accuracy.expected_error, l), r.throughput_accuracy.note)) }}</p>
            <Messages ctx=ctx />
        </section>
    }
}

#[component]
fn Stat<F>(
    lang: Signal<Lang>,
    id: &'static str,
    label: (&'static str, &'static str),
    value: F,
) -> impl IntoView
where
    F: Fn(Lang) -> String + Send + Sync + 'static,
{
    let l = move || lang.get();
    view! {
        <dt>{move || tr(l(), label.0, label.1)}</dt>
        <dd id=id>{move || value(l())}</dd>
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
                        view! { <tr><td><span class=format!("swatch seg-{key}") aria-hidden="true"></span>{term_label(key, l)}</td><td class="num">{gib(*b, l)}</td></tr> }
                    }).collect_view();
                    let aria = format!("{} {} / {} {}", tr(l, "Peak memory", "Пиковая память"), gib(m.peak_bytes_per_gpu, l), gib(m.usable_bytes, l), tr(l, "usable", "доступно"));
                    view! {
                        <div class="membar" role="img" aria-label=aria>
                            {segments}
                            <div class="cap usable" style=format!("left:{:.3}%", pct(m.usable_bytes)) title=tr(l, "usable memory", "доступная память")></div>
                            <div class="cap budget" style=format!("left:{:.3}%", pct(m.budget_bytes)) title=tr(l, "budget (usable minus headroom)", "бюджет (доступно минус запас)")></div>
                        </div>
                        <table class="terms" id="terms">
                            <caption>{format!("{} ({})", tr(l, "Per-GPU memory at the peak", "Память на GPU в пике"), phase_label(m.phase, l))}</caption>
                            <tbody>{rows}</tbody>
                            <tfoot><tr><th>{tr(l, "Total", "Всего")}</th><th class="num">{gib(m.peak_bytes_per_gpu, l)}</th></tr></tfoot>
                        </table>
                        <p class=format!("accuracy accuracy-{}", m.accuracy.level) id="accuracy">
                            {format!("{} ±{}: {}.", tr(l, "Memory expected within", "Память — с ожидаемой ошибкой"), percent(m.accuracy.expected_error, l), m.accuracy.note)}
                        </p>
                    }
                })
            }}
        </div>
    }
}

fn phase_label(p: Phase, l: Lang) -> &'static str {
    match p {
        Phase::LossBackward => tr(
            l,
            "start of backward, loss buffers alive",
            "начало backward, буферы loss живы",
        ),
        Phase::LayerBackward => tr(
            l,
            "recomputing a checkpointed layer",
            "пересчёт слоя с checkpointing",
        ),
        Phase::EndOfBackward => tr(
            l,
            "end of backward, all gradients alive",
            "конец backward, все градиенты живы",
        ),
        Phase::OptimizerStep => tr(l, "optimizer step", "шаг оптимизатора"),
    }
}

/// Errors and warnings; where one setting fixes a message, a button applies it.
#[component]
fn Messages(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    view! {
        <ul class="messages" id="messages">
            {move || {
                let l = lang.get();
                ctx.report.with(|r| {
                    let errors = r.errors.iter().map(|m| (true, m.clone()));
                    let warnings = r.warnings.iter().map(|m| (false, m.clone()));
                    errors.chain(warnings).map(|(is_error, m)| {
                        let fix = m.fix.clone();
                        view! {
                            <li class=if is_error { "error" } else { "warning" } data-code=m.code>
                                <span>{m.message.clone()}</span>
                                {fix.map(|(key, value)| {
                                    let label = format!("{} {key}={value}", tr(l, "Apply", "Применить"));
                                    view! { <button type="button" class="fix" data-fix=format!("{key}={value}") on:click=move |_| ctx.set(key, &value)>{label}</button> }
                                })}
                            </li>
                        }
                    }).collect_view()
                })
            }}
        </ul>
    }
}
