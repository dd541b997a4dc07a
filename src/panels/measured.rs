//! "Measured run": paste the line the bundle's train.py printed and see it
//! beside the prediction, with time and cost re-based on the measured speed.

use crate::ctx::Ctx;
use crate::format::{hours, num, seconds, tr, usd};
use crate::worker::{failure, Read};
use leptos::prelude::*;
use planner::runs::measured::{compare, read_line_reply, Comparison};
use planner::text::{render, Text};

#[component]
pub fn MeasuredPanel(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    let line = RwSignal::new(String::new());
    // The worker reads the line (the page's wasm holds no JSON reader, #59);
    // the page sets it beside its own report of the plan.
    let reply = ctx.worker.read[Read::Measured as usize];
    Effect::new(move || {
        let text = line.get();
        if !text.trim().is_empty() {
            ctx.worker.ask_read(Read::Measured, &text);
        }
    });
    let result = Memo::new_with_compare(
        move |_| {
            if line.with(|l| l.trim().is_empty()) {
                return None;
            }
            let measured = reply.with(|r| {
                let r = r.as_deref()?;
                Some(match failure(r) {
                    Some(why) => Err(why),
                    None => read_line_reply(r),
                })
            })?;
            let plan = ctx.plan.get();
            let compared = measured.and_then(|m| {
                ctx.report
                    .with(|r| compare(&plan, r, &m))
                    .map_err(|p| p.phrase())
            });
            Some(compared)
        },
        crate::ctx::always_changed,
    );
    let t = move |id| tr(lang.get(), id);
    view! {
        <section class="chart measured" aria-labelledby="measured-title">
            <h2 id="measured-title">{move || t(Text::MeasuredRun)}</h2>
            <div class="measured-input">
                <textarea id="measured-line" rows="2" spellcheck="false"
                    aria-label=move || t(Text::MeasuredPaste) placeholder=move || t(Text::MeasuredPaste)
                    prop:value=move || line.get()
                    on:input=move |ev| line.set(event_target_value(&ev))></textarea>
                <button type="button" id="measured-clear" on:click=move |_| line.set(String::new())>
                    {move || t(Text::MeasuredClear)}
                </button>
            </div>
            {move || match result.get() {
                None => ().into_any(),
                Some(Err(p)) => {
                    let msg = render(lang.get(), &p);
                    view! { <p class="field-error" id="measured-error" role="alert">{msg}</p> }.into_any()
                }
                Some(Ok(c)) => {
                    lang.track();
                    view! { <ComparisonTable ctx=ctx c=c /> }.into_any()
                }
            }}
        </section>
    }
}

#[component]
fn ComparisonTable(ctx: Ctx, c: Comparison) -> impl IntoView {
    let l = ctx.lang.get_untracked();
    let t = move |id| tr(l, id);
    let (total_hours, total_usd) = ctx
        .report
        .with_untracked(|r| (r.time.total_hours, r.cost.total_usd));
    let dash = || "—".to_string();
    let rows = [
        (
            t(Text::MeasuredSpeed),
            num(c.predicted_tokens_per_second_per_gpu, 0, l),
            format!(
                "{} ({:+.0}%)",
                num(c.measured_tokens_per_second_per_gpu, 0, l),
                (c.speed_ratio - 1.0) * 100.0
            ),
        ),
        (
            t(Text::StepTime),
            seconds(c.predicted_step_seconds, l),
            seconds(c.measured_step_seconds, l),
        ),
        (
            t(Text::MeasuredMemory),
            format!("{} GiB", num(c.predicted_peak_gib, 1, l)),
            c.measured_peak_gib
                .map_or_else(dash, |g| format!("{} GiB", num(g, 1, l))),
        ),
        (t(Text::Time), hours(total_hours, l), hours(c.hours, l)),
        (
            t(Text::Cost),
            total_usd.map_or_else(dash, |u| usd(u, l)),
            c.usd.map_or_else(dash, |u| usd(u, l)),
        ),
    ];
    view! {
        <p class="measured-note" id="measured-rebased">{t(Text::MeasuredRebased)}</p>
        <table class="measured-table" id="measured-table">
            <thead><tr><th></th><th>{t(Text::PredictedColumn)}</th><th>{t(Text::MeasuredColumn)}</th></tr></thead>
            <tbody>
                {rows.into_iter().map(|(label, p, m)| view! {
                    <tr><th scope="row">{label}</th><td>{p}</td><td>{m}</td></tr>
                }).collect_view()}
            </tbody>
        </table>
        <ul class="measured-notes">
            {c.notes.iter().map(|n| view! { <li>{render(l, n)}</li> }).collect_view()}
        </ul>
    }
}
