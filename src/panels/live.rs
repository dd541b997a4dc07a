//! The live summary: verdict, speed, time, cost and the first error or top warning, pinned
//! at the top of the screen while the user changes any input (phones and
//! wide screens alike).

use crate::ctx::Ctx;
use crate::format::{gib, hours, sig, tr, usd, verdict};
use leptos::prelude::*;
use planner::text::{render, Text};

#[component]
pub fn LiveSummary(ctx: Ctx) -> impl IntoView {
    let report = ctx.report;
    let lang = ctx.lang;
    let t = move |id| tr(lang.get(), id);
    let v = move || report.with(|e| verdict(e));
    view! {
        <section class="live" id="live" aria-label=move || t(Text::LiveSummary)>
            <span id="live-verdict" class=move || format!("live-verdict {}", v().1)>
                <strong>{move || t(v().0)}</strong>
                " "
                {move || { let l = lang.get(); report.with(|r| format!("{} / {}",
                    gib(r.memory.peak_bytes_per_gpu, l), gib(r.memory.budget_bytes, l))) }}
            </span>
            <span class="live-item" id="live-tps">
                <span class="live-label">{move || t(Text::TokensSPerGPU)}</span>
                " "{move || report.with(|r| sig(r.throughput.tokens_per_second_per_gpu, lang.get()))}
            </span>
            <span class="live-item" id="live-time">
                <span class="live-label">{move || t(Text::Time)}</span>
                " "{move || report.with(|r| hours(r.time.total_hours, lang.get()))}
            </span>
            <span class="live-item" id="live-cost">
                <span class="live-label">{move || t(Text::Cost)}</span>
                " "{move || { let l = lang.get(); report.with(|r| r.cost.total_usd
                    .map_or_else(|| tr(l, Text::PriceUnknownShort).to_string(), |u| usd(u, l))) }}
            </span>
            <button type="button" class="live-pin" id="pin" title=move || t(Text::PinHint)
                on:click=move |_| crate::panels::compare::pin(ctx)>{move || t(Text::PinPlan)}</button>
            // An error outranks every warning: it is why a plan cannot run.
            {move || report.with(|r| {
                let error = r.errors.first().map(|e| (true, e));
                error.or(r.warnings.first().map(|w| (false, w)))
                    .map(|(is_error, m)| (is_error, render(lang.get(), &m.phrase)))
            }).map(|(is_error, m)| {
                let title = m.clone();
                let class = if is_error { "live-warning live-error" } else { "live-warning" };
                view! { <span class=class id="live-warning" title=title>{m}</span> }
            })}
        </section>
    }
}
