//! Inline SVG charts: memory against sequence length for each checkpointing
//! mode, and this job's time and cost across instance types.

use crate::app::Ctx;
use crate::format::{gib, hours, num, tr, usd, GIB};
use leptos::prelude::*;
use planner::plan::Checkpointing;
use planner::report::{compare_instances, memory_vs_sequence};
use planner::text::Text;

const SEQS: [u64; 8] = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072];

#[component]
pub fn SequenceChart(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    let series = Memo::new(move |_| ctx.plan.with(|p| memory_vs_sequence(p, &SEQS)));
    let (w, h, left, right, top, bottom) = (640.0, 280.0, 56.0, 16.0, 16.0, 44.0);
    view! {
        <section class="chart" aria-labelledby="seq-chart-title">
            <h2 id="seq-chart-title">{move || tr(lang.get(), Text::MemoryPerGPUAgainstSequence)}</h2>
            {move || {
                let l = lang.get();
                let usable = ctx.report.with(|r| r.memory.usable_bytes) as f64 / GIB;
                let budget = ctx.report.with(|r| r.memory.budget_bytes) as f64 / GIB;
                let data = series.get();
                let max_val = data.iter().flat_map(|(_, v)| v.iter()).map(|b| *b as f64 / GIB).fold(0.0, f64::max);
                // Keep the capacity line in view; clip curves far above it.
                let y_max = nice_ceiling(max_val.min(usable * 3.0).max(usable * 1.15));
                let x = move |s: u64| left + ((s as f64).log2() - 10.0) / 7.0 * (w - left - right);
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
                let cur = ctx.plan.with(|p| p.seq).clamp(1024, 131072);
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
                        <line class="now-line" x1=x(cur) y1=top x2=x(cur) y2=h - bottom />
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
    let mag = 10f64.powf(x.log10().floor());
    for m in [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if m * mag >= x {
            return m * mag;
        }
    }
    10.0 * mag
}

#[component]
pub fn InstanceChart(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    let options = Memo::new(move |_| ctx.plan.with(compare_instances));
    view! {
        <section class="chart scroll" aria-labelledby="inst-chart-title">
            <h2 id="inst-chart-title">{move || tr(lang.get(), Text::TheSameJobOnOther)}</h2>
            {move || {
                let l = lang.get();
                let opts = options.get();
                let max_h = opts.iter().filter(|o| o.fits).map(|o| o.hours).fold(0.0, f64::max).max(1e-9);
                let row_h = 26.0;
                let (w, label_w, bar_w) = (640.0, 250.0, 210.0);
                let h = row_h * opts.len() as f64 + 8.0;
                let current = ctx.plan.with(|p| p.instance.clone());
                let rows = opts.iter().enumerate().map(|(i, o)| {
                    let yy = 4.0 + i as f64 * row_h;
                    let bar = if o.fits { o.hours / max_h * bar_w } else { 0.0 };
                    let mut tags = Vec::new();
                    if o.fastest { tags.push(tr(l, Text::Fastest)); }
                    if o.cheapest { tags.push(tr(l, Text::Cheapest)); }
                    let right = if o.fits {
                        let approx = if o.price_source == "derived" { "≈" } else { "" };
                        let cost = o.usd.map(|u| format!("{approx}{}", usd(u, l))).unwrap_or_else(|| tr(l, Text::PriceUnknownShort).to_string());
                        format!("{} · {}{}", hours(o.hours, l), cost, if tags.is_empty() { String::new() } else { format!(" · {}", tags.join(", ")) })
                    } else {
                        format!("{}: {} > {} {}", tr(l, Text::DoesNotFitInline), gib(o.peak_bytes_per_gpu, l), gib(o.budget_bytes, l), tr(l, Text::WordBudget))
                    };
                    let label = format!("{} × {}{}", o.nodes, o.instance.trim_start_matches("ml."), if o.precision != ctx.plan.with(|p| p.precision.key()) { format!(" ({})", o.precision) } else { String::new() });
                    let class = format!("inst-row{}{}", if o.fits { "" } else { " nofit" }, if o.instance == current { " current" } else { "" });
                    view! {
                        <g class=class>
                            <text class="inst-label" x=label_w - 8.0 y=yy + 17.0 text-anchor="end">{label}</text>
                            <rect class="inst-bar" x=label_w y=yy + 5.0 width=format!("{bar:.1}") height=row_h - 10.0 rx="2" />
                            <text class="inst-value" x=label_w + bar + 6.0 y=yy + 17.0>{right}</text>
                        </g>
                    }
                }).collect_view();
                view! {
                    <svg class="chart-svg" id="instance-chart" viewBox=format!("0 0 {w} {h}") role="img"
                        aria-label=tr(l, Text::TimeToTrainAndCost)>
                        {rows}
                    </svg>
                }
            }}
        </section>
    }
}
