//! "Copy as Markdown": a short summary of the plan for a ticket or a chat —
//! model, hardware, verdict, memory, speed, time, cost, warnings and the link —
//! from the same report the page shows, in the page's language.

use crate::format::{gib, hours, num, percent, tr, usd};
use planner::model::plan::Lang;
use planner::text::{fill, render, Text};
use planner::Report;
use std::fmt::Display;

/// The Markdown summary of `report`, reopened by `link`.
pub fn markdown(r: &Report, link: &str, lang: Lang) -> String {
    let head = headline(r, lang);
    let mut out = format!("**{}**\n\n", head);
    for (label, value) in [
        (Text::MdMemory, memory_line(r, lang)),
        (Text::MdSpeed, speed_line(r, lang)),
        (Text::MdTime, time_line(r, lang)),
        (Text::MdCost, cost_line(r, lang)),
    ] {
        out += &format!("- {}: {}\n", tr(lang, label), value);
    }
    if !r.warnings.is_empty() || !r.errors.is_empty() {
        out += &format!("\n{}:\n", tr(lang, Text::MdWarnings));
        for m in r.errors.iter().chain(&r.warnings) {
            out += &format!("- {}\n", render(lang, &m.phrase));
        }
    }
    out += &format!("\n[{}]({link})\n", tr(lang, Text::MdLink));
    out
}

fn headline(r: &Report, lang: Lang) -> String {
    let (peak, budget) = (
        gib(r.memory.peak_bytes_per_gpu, lang),
        gib(r.memory.budget_bytes, lang),
    );
    let verdict = match r.verdict {
        planner::estimate::report::Verdict::Fits => Text::MdFits,
        planner::estimate::report::Verdict::Tight => Text::MdTight,
        planner::estimate::report::Verdict::DoesNotFit => Text::MdDoesNotFit,
    };
    let model = render(lang, &r.model_name);
    let args: [(&str, &dyn Display); 6] = [
        ("model", &model),
        ("instance", &r.instance),
        ("gpus", &r.layout.gpus),
        ("gpu", &r.gpu),
        ("peak", &peak),
        ("budget", &budget),
    ];
    format!(
        "{} — {}",
        fill(lang, Text::MdOn, &args),
        fill(lang, verdict, &args)
    )
}

/// The four largest terms of the per-GPU peak.
fn memory_line(r: &Report, lang: Lang) -> String {
    let mut terms = r.memory.terms.clone();
    terms.sort_by_key(|t| std::cmp::Reverse(t.1));
    terms
        .iter()
        .take(4)
        .map(|(t, b)| {
            format!(
                "{} {}",
                crate::format::term_label(t.key(), lang),
                gib(*b, lang)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn speed_line(r: &Report, lang: Lang) -> String {
    let t = &r.throughput;
    let (tps, mfu) = (
        num(t.tokens_per_second_per_gpu, 0, lang),
        percent(t.mfu, lang),
    );
    let step = crate::format::seconds(t.step_seconds, lang);
    fill(
        lang,
        Text::MdSpeedLine,
        &[("tps", &tps), ("step", &step), ("mfu", &mfu)],
    )
}

fn time_line(r: &Report, lang: Lang) -> String {
    let (time, gpu_hours) = (
        hours(r.time.total_hours, lang),
        num(r.time.gpu_hours, 0, lang),
    );
    let tokens = crate::format::tokens(r.global_batch_tokens as f64 * r.time.steps as f64, lang);
    let args: [(&str, &dyn Display); 3] = [
        ("time", &time),
        ("tokens", &tokens),
        ("gpu_hours", &gpu_hours),
    ];
    fill(lang, Text::MdTimeLine, &args)
}

fn cost_line(r: &Report, lang: Lang) -> String {
    match (r.cost.total_usd, r.cost.spot_usd) {
        (Some(a), Some(b)) => {
            let basis = crate::panels::results::price_basis(&r.cost, lang);
            let (a, b) = (usd(a, lang), usd(b, lang));
            fill(
                lang,
                Text::MdCostLine,
                &[("usd", &a), ("spot", &b), ("basis", &basis)],
            )
        }
        _ => tr(lang, Text::PriceUnknownEnterItUnder).to_string(),
    }
}
