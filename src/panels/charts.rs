//! Inline SVG charts: memory against sequence length for each checkpointing
//! mode, and this job's time and cost across instance types.

use crate::ctx::{Ctx, SEQS};
use crate::format::{gib, hours, num, tr, usd, GIB};
use leptos::prelude::*;
use planner::estimate::report::InstanceOption;
use planner::model::plan::Checkpointing;
use planner::model::plan::Lang;
use planner::text::Text;

#[component]
pub fn SequenceChart(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    let series = Memo::new(move |_| ctx.report.with(|e| e.sequence_chart.clone()));
    // Memos, so that the chart is redrawn only when its curves or lines move.
    let caps = Memo::new(move |_| {
        ctx.report
            .with(|r| (r.memory.usable_bytes, r.memory.budget_bytes))
    });
    let cur = Memo::new(move |_| ctx.plan.with(|p| p.data.seq).clamp(1024, 131072));
    let (w, h, left, right, top, bottom) = (640.0, 280.0, 56.0, 16.0, 16.0, 44.0);
    let x = move |s: u64| left + ((s as f64).log2() - 10.0) / 7.0 * (w - left - right);
    view! {
        <section class="chart" aria-labelledby="seq-chart-title">
            <h2 id="seq-chart-title">{move || tr(lang.get(), Text::MemoryPerGPUAgainstSequence)}</h2>
            {move || {
                let l = lang.get();
                let (usable, budget) = caps.get();
                let (usable, budget) = (usable as f64 / GIB, budget as f64 / GIB);
                let data = series.get();
                let max_val = data.iter().flat_map(|(_, v)| v.iter()).map(|b| *b as f64 / GIB).fold(0.0, f64::max);
                // Keep the capacity line in view; clip curves far above it.
                let y_max = nice_ceiling(max_val.min(usable * 3.0).max(usable * 1.15));
                let y = move |g: f64| top + (1.0 - (g / y_max).min(1.05)) * (h - top - bottom);
                let y_ticks: Vec<f64> = (0..=4).map(|i| y_max * i as f64 / 4.0).collect();
                let lines = data.iter().map(|(ck, values)| {
                    let d = values.iter().zip(SEQS).enumerate().map(|(i, (b, s))| format!("{}{:.1},{:.1}", if i == 0 { "M" } else { "L" }, x(s), y(*b as f64 / GIB))).collect::<String>();
                    let (class, name) = match ck {
                        Checkpointing::None => ("line-none", tr(l, Text::NoCheckpointing)),
                        Checkpointing::Selective => ("line-selective", tr(l, Text::LegendSelective)),
                        Checkpointing::Op => ("line-op", tr(l, Text::LegendOp)),
                        _ => ("line-full", tr(l, Text::FullCheckpointing)),
                    };
                    let last = values.last().copied().unwrap_or(0);
                    let title = format!("{name}: {} @ 128K", gib(last, l));
                    view! { <path class=format!("series {class}") d=d><title>{title}</title></path> }
                }).collect_view();
                let legend = [("line-none", tr(l, Text::LegendNone)), ("line-selective", tr(l, Text::LegendSelective)), ("line-op", tr(l, Text::LegendOp)), ("line-full", tr(l, Text::LegendFull))]
                    .into_iter().enumerate().map(|(i, (class, name))| {
                        let lx = left + 10.0 + i as f64 * 118.0;
                        view! {
                            <line class=format!("series {class}") x1=lx y1=top + 8.0 x2=lx + 22.0 y2=top + 8.0 />
                            <text class="legend" x=lx + 28.0 y=top + 12.0>{name}</text>
                        }
                    }).collect_view();
                view! {
                    <svg class="chart-svg" id="seq-chart" viewBox=format!("0 0 {w} {h}") role="img"
                        aria-label=tr(l, Text::PeakMemoryPerGPUFor)>
                        {y_ticks.iter().map(|g| view! {
                            <line class="grid" x1=left y1=y(*g) x2=w - right y2=y(*g) />
                            <text class="tick" x=left - 6.0 y=y(*g) + 4.0 text-anchor="end">{num(*g, 0, l)}</text>
                        }).collect_view()}
                        {SEQS.iter().map(|s| view! {
                            <text class="tick" x=x(*s) y=h - bottom + 16.0 text-anchor="middle">{format!("{}K", s / 1024)}</text>
                        }).collect_view()}
                        <line class="cap-line" x1=left y1=y(usable) x2=w - right y2=y(usable) />
                        <text class="cap-label" x=w - right - 4.0 y=y(usable) - 5.0 text-anchor="end">{format!("{} {}", tr(l, Text::WordUsable), num(usable, 0, l))}</text>
                        <line class="budget-line" x1=left y1=y(budget) x2=w - right y2=y(budget) />
                        <line class="now-line" x1=move || x(cur.get()) y1=top x2=move || x(cur.get()) y2=h - bottom />
                        {lines}
                        {legend}
                        <text class="axis" x=(left + w - right) / 2.0 y=h - 6.0 text-anchor="middle">{tr(l, Text::SequenceLengthTokensLogScale)}</text>
                        <text class="axis" x=14.0 y=(top + h - bottom) / 2.0 text-anchor="middle" transform=format!("rotate(-90 14 {})", (top + h - bottom) / 2.0)>{tr(l, Text::GiBPerGPU)}</text>
                    </svg>
                }
            }}
        </section>
    }
}

fn nice_ceiling(x: f64) -> f64 {
    let x = x.max(1.0);
    // The power of ten at or below x, by multiplication: `powf` would link
    // libm's 4 KB exp table into the page.
    let mut mag = 1.0;
    while mag * 10.0 <= x {
        mag *= 10.0;
    }
    for m in [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if m * mag >= x {
            return m * mag;
        }
    }
    10.0 * mag
}

const ROW_H: f64 = 26.0;
const LABEL_W: f64 = 250.0;

/// One bar of the instance chart, as drawn.
#[derive(Clone, PartialEq)]
struct InstanceRow {
    class: String,
    label: String,
    /// The bar's length in px; 0 when the job does not fit.
    bar: f64,
    /// Time and cost, or why it does not fit.
    outcome: String,
}

#[component]
pub fn InstanceChart(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    // The rows are a memo of the evaluation's options: a new evaluation
    // redraws only the rows that changed.
    let rows = Memo::new(move |_| {
        let l = lang.get();
        let (current, precision) = ctx
            .plan
            .with(|p| (p.hardware.instance.key().to_string(), p.numerics.precision));
        ctx.report
            .with(|e| instance_rows(&e.instances, &current, precision, l))
    });
    // The bars are drawn once per number of rows, and each attribute follows
    // its own row: a new plan then changes lengths and labels, not elements.
    // (Redrawing every bar would, in the release build's erased components,
    // remove and re-set every attribute of every bar on each keystroke.)
    let count = Memo::new(move |_| rows.with(Vec::len));
    let view_box = move || format!("0 0 640 {}", ROW_H * count.get() as f64 + 8.0);
    view! {
        <section class="chart scroll" aria-labelledby="inst-chart-title">
            <h2 id="inst-chart-title">{move || tr(lang.get(), Text::TheSameJobOnOther)}</h2>
            <svg class="chart-svg" id="instance-chart" viewBox=view_box role="img"
                aria-label=move || tr(lang.get(), Text::TimeToTrainAndCost)>
                {move || (0..count.get()).map(|i| instance_bar(rows, i)).collect_view()}
            </svg>
        </section>
    }
}

/// Bar `i`, each attribute bound to row `i` of `rows`.
fn instance_bar(rows: Memo<Vec<InstanceRow>>, i: usize) -> impl IntoView {
    let y = ROW_H * i as f64 + 4.0;
    let field = move |f: fn(&InstanceRow) -> String| {
        move || rows.with(|v| v.get(i).map(f).unwrap_or_default())
    };
    let bar = move || rows.with(|v| v.get(i).map_or(0.0, |r| r.bar));
    view! {
        <g class=field(|r| r.class.clone())>
            <text class="inst-label" x=LABEL_W - 8.0 y=y + 17.0 text-anchor="end">{field(|r| r.label.clone())}</text>
            <rect class="inst-bar" x=LABEL_W y=y + 5.0 width=move || format!("{:.1}", bar()) height=ROW_H - 10.0 rx="2" />
            <text class="inst-value" x=move || LABEL_W + bar() + 6.0 y=y + 17.0>{field(|r| r.outcome.clone())}</text>
        </g>
    }
}

/// One row per instance type, in the planner's order.
fn instance_rows(
    opts: &[InstanceOption],
    current: &str,
    precision: planner::model::plan::Precision,
    l: Lang,
) -> Vec<InstanceRow> {
    let max_h = opts
        .iter()
        .filter(|o| o.fits)
        .map(|o| o.hours)
        .fold(0.0, f64::max)
        .max(1e-9);
    opts.iter()
        .map(|o| InstanceRow {
            class: format!(
                "inst-row{}{}",
                if o.fits { "" } else { " nofit" },
                if o.instance == current {
                    " current"
                } else {
                    ""
                }
            ),
            label: format!(
                "{} × {}{}",
                o.nodes,
                o.instance.trim_start_matches("ml."),
                if o.precision != precision {
                    format!(" ({})", o.precision.key())
                } else {
                    String::new()
                }
            ),
            bar: if o.fits { o.hours / max_h * 210.0 } else { 0.0 },
            outcome: instance_outcome(o, l),
        })
        .collect()
}

/// "12.3 h · $456 · fastest", or "does not fit: 90 GiB > 80 GiB budget".
fn instance_outcome(o: &InstanceOption, l: Lang) -> String {
    if !o.fits {
        return format!(
            "{}: {} > {} {}",
            tr(l, Text::DoesNotFitInline),
            gib(o.peak_bytes_per_gpu, l),
            gib(o.budget_bytes, l),
            tr(l, Text::WordBudget)
        );
    }
    let mut tags = Vec::new();
    if o.fastest {
        tags.push(tr(l, Text::Fastest));
    }
    if o.cheapest {
        tags.push(tr(l, Text::Cheapest));
    }
    let approx = if o.price_source == "derived" {
        "≈"
    } else {
        ""
    };
    let cost = o
        .usd
        .map(|u| format!("{approx}{}", usd(u, l)))
        .unwrap_or_else(|| tr(l, Text::PriceUnknownShort).to_string());
    format!(
        "{} · {}{}",
        hours(o.hours, l),
        cost,
        if tags.is_empty() {
            String::new()
        } else {
            format!(" · {}", tags.join(", "))
        }
    )
}
