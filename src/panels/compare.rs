//! Pin and compare: the pinned plan (`vs=` in the link) beside the current
//! one, their results and every input that differs, highlighted.

use crate::ctx::Ctx;
use crate::format::{gib, hours, percent, sig, tr, usd, verdict};
use leptos::prelude::*;
use planner::model::plan::Lang;
use planner::text::Text;
use planner::{Plan, Report};

/// Pin the plan on screen (the button in the live summary).
pub fn pin(ctx: Ctx) {
    ctx.pinned
        .set(Some(ctx.plan.with_untracked(Plan::short_query)));
}

/// Pin `query` to compare with the plan on screen (an auto-plan row's Compare).
pub fn pin_query(ctx: Ctx, query: &str) {
    let short = Plan::from_query(query).plan.short_query();
    ctx.pinned.set(Some(short));
}

#[component]
pub fn ComparePanel(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    // The pinned plan and its report, evaluated when the pin changes only
    // (the pin is its own signal: an edit of the current plan does not
    // evaluate the pinned one again, #34).
    let pinned = Memo::new_with_compare(
        move |_| {
            ctx.pinned.get().map(|q| {
                let plan = Plan::from_query(&q).plan;
                // Its report only: the pinned plan's charts are not drawn.
                let report = planner::evaluate(&plan);
                crate::ctx::show_evaluations();
                (plan, report)
            })
        },
        crate::ctx::always_changed,
    );
    let t = move |id| tr(lang.get(), id);
    let unpin = move |_| ctx.pinned.set(None);
    let swap = move |_| {
        let Some(other) = pinned.with_untracked(|p| p.as_ref().map(|(o, _)| o.clone())) else {
            return;
        };
        ctx.pinned
            .set(Some(ctx.plan.with_untracked(Plan::short_query)));
        ctx.plan.set(other);
    };
    move || {
        // Redrawn when either plan changes: the tables below read the current
        // plan and report without tracking them.
        ctx.report.track();
        pinned.with(|p| {
            p.as_ref().map(|(other, report)| {
            let rows = result_rows(report, ctx.lang.get_untracked());
            let other = other.clone();
            view! {
                <section class="chart compare" id="compare" aria-labelledby="compare-title">
                    <h2 id="compare-title">{t(Text::ComparePlans)}</h2>
                    <ResultsTable ctx=ctx pinned=rows />
                    <Differences ctx=ctx other=other />
                    <div class="compare-actions">
                        <button type="button" id="compare-open" on:click=swap>{t(Text::OpenPinned)}</button>
                        <button type="button" id="compare-unpin" on:click=unpin>{t(Text::Unpin)}</button>
                    </div>
                </section>
            }
            })
        })
    }
}

/// One row per result: what the pinned plan gives, what this one gives.
fn result_rows(r: &Report, l: Lang) -> [(Text, String); 5] {
    let verdict = verdict(r).0;
    [
        (
            verdict,
            format!(
                "{} / {}",
                gib(r.memory.peak_bytes_per_gpu, l),
                gib(r.memory.budget_bytes, l)
            ),
        ),
        (
            Text::TokensSPerGPU,
            sig(r.throughput.tokens_per_second_per_gpu, l),
        ),
        (Text::MFUHFU, percent(r.throughput.mfu, l)),
        (Text::Time, hours(r.time.total_hours, l)),
        (
            Text::Cost,
            r.cost
                .total_usd
                .map_or_else(|| tr(l, Text::PriceUnknownShort).into(), |u| usd(u, l)),
        ),
    ]
}

#[component]
fn ResultsTable(ctx: Ctx, pinned: [(Text, String); 5]) -> impl IntoView {
    let l = ctx.lang.get_untracked();
    let current = ctx.report.with(|r| result_rows(r, l));
    let rows = pinned
        .into_iter()
        .zip(current)
        .enumerate()
        .map(|(i, ((a_label, a), (b_label, b)))| {
            // The verdict row is labelled by each plan's own verdict.
            let label = if i == 0 {
                format!("{} / {}", tr(l, a_label), tr(l, b_label))
            } else {
                tr(l, a_label).to_string()
            };
            let class = if a != b { "diff" } else { "" };
            view! { <tr class=class><th scope="row">{label}</th><td>{a}</td><td>{b}</td></tr> }
        })
        .collect_view();
    view! {
        <table class="compare-table" id="compare-results">
            <thead><tr><th></th><th>{tr(l, Text::PinnedColumn)}</th><th>{tr(l, Text::CurrentColumn)}</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

#[component]
fn Differences(ctx: Ctx, other: Plan) -> impl IntoView {
    let l = ctx.lang.get_untracked();
    let diffs = ctx.plan.with_untracked(|p| other.differences(p));
    if diffs.is_empty() {
        return view! { <p class="derived" id="compare-same">{tr(l, Text::NoInputDiffers)}</p> }
            .into_any();
    }
    let rows = diffs
        .into_iter()
        .map(|(key, a, b)| {
            let id = format!("diff-{key}");
            view! { <tr class="diff" id=id><th scope="row"><code>{key}</code></th><td>{a}</td><td>{b}</td></tr> }
        })
        .collect_view();
    view! {
        <table class="compare-table" id="compare-inputs">
            <caption>{tr(l, Text::InputsThatDiffer)}</caption>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}
