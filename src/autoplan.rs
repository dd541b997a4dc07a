//! The auto-plan panel: the planner's search, run in small chunks between
//! frames so the page stays responsive, re-run whenever the plan changes.

use crate::app::Ctx;
use crate::format::{hours, num, percent, tokens, tr, usd};
use crate::inputs::NumberField;
use leptos::prelude::*;
use planner::plan::Locks;
use planner::search::{Candidate, Search, SearchResult};

fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

/// Candidates per step; steps run until a slice of ~8 ms is used.
const CHUNK: u64 = 2_000;

#[component]
pub fn AutoPlan(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    let result = RwSignal::new(None::<SearchResult>);
    let progress = RwSignal::new(None::<f64>);
    let elapsed = RwSignal::new(0.0f64);
    let generation = StoredValue::new(0u64);
    // Re-run on every change of the plan; a newer run cancels an older one.
    Effect::new(move |_| {
        let plan = ctx.plan.with(|p| {
            let mut q = p.clone();
            q.lang = Some(lang.get());
            q
        });
        generation.update_value(|g| *g += 1);
        let me = generation.get_value();
        leptos::task::spawn_local(async move {
            let start = now_ms();
            let mut search = Search::new(&plan);
            loop {
                // Work for up to ~8 ms, then give the frame back.
                let slice = now_ms();
                let mut done = search.run(CHUNK);
                while !done && now_ms() - slice < 8.0 {
                    done = search.run(CHUNK);
                }
                let spent = now_ms() - start;
                if generation.get_value() != me {
                    return;
                }
                if done {
                    elapsed.set(spent);
                    progress.set(None);
                    result.set(Some(search.result()));
                    return;
                }
                if spent > 100.0 {
                    progress.set(Some(search.progress()));
                }
                gloo::timers::future::TimeoutFuture::new(0).await;
            }
        });
    });
    let t = move |en, ru| tr(lang.get(), en, ru);
    view! {
        <section class="chart autoplan" aria-labelledby="autoplan-title">
            <h2 id="autoplan-title">{move || t("Auto-plan: the best plans that fit", "Автоплан: лучшие планы, которые помещаются")}</h2>
            <p class="derived">{move || t(
                "Searches instance type and count, parallelism, ZeRO stage, micro-batch (keeping your global batch), precision, checkpointing and loss, with the same model as above.",
                "Перебирает тип и число инстансов, параллелизм, стадию ZeRO, micro-batch (сохраняя ваш глобальный батч), точность, checkpointing и loss той же моделью, что выше.",
            )}</p>
            <div class="locks" role="group" aria-label=move || t("Keep as is", "Не менять")>
                <span class="locks-label">{move || t("Keep:", "Не менять:")}</span>
                {Locks::KEYS.iter().map(|&key| {
                    let id = format!("lock-{key}");
                    let for_id = id.clone();
                    let label = match key {
                        "instance" => ("instance type", "тип инстанса"),
                        "nodes" => ("instance count", "число инстансов"),
                        "precision" => ("precision", "точность"),
                        "parallelism" => ("parallelism and sharding", "параллелизм и шардирование"),
                        "checkpointing" => ("checkpointing", "checkpointing"),
                        _ => ("micro-batch", "micro-batch"),
                    };
                    view! {
                        <label class="lock" for=for_id>
                            <input type="checkbox" id=id prop:checked=move || ctx.plan.with(|p| p.locks.get(key))
                                on:change=move |ev| {
                                    let on = event_target_checked(&ev);
                                    let mut locks = ctx.plan.with_untracked(|p| p.locks);
                                    locks.set(key, on);
                                    ctx.set("lock", &locks.to_value());
                                } />
                            {move || tr(lang.get(), label.0, label.1)}
                        </label>
                    }
                }).collect_view()}
            </div>
            <div class="row2">
                <NumberField ctx=ctx key="budget" label=("Budget, USD (optional)", "Бюджет, USD (необязательно)") step="any" get=|p| p.budget_usd.map(|x| x.to_string()).unwrap_or_default() />
                <NumberField ctx=ctx key="deadline" label=("Deadline, hours (optional)", "Срок, часов (необязательно)") step="any" get=|p| p.deadline_hours.map(|x| x.to_string()).unwrap_or_default() />
            </div>
            <p class="search-status" id="search-status" role="status">{move || {
                let l = lang.get();
                match (progress.get(), result.with(|r| r.as_ref().map(|r| (r.candidates, r.evaluated, r.fitting)))) {
                    (Some(p), _) => format!("{} {}", tr(l, "Searching…", "Поиск…"), percent(p, l)),
                    (None, Some((c, e, f))) => format!("{} {} {} ({} {}, {} {}) {} {} {}",
                        tr(l, "Searched", "Перебрано"), num(c as f64, 0, l), tr(l, "candidates", "вариантов"),
                        num(e as f64, 0, l), tr(l, "evaluated", "посчитано"), num(f as f64, 0, l), tr(l, "fit", "помещаются"),
                        tr(l, "in", "за"), num(elapsed.get(), 0, l), tr(l, "ms", "мс")),
                    _ => tr(l, "Searching…", "Поиск…").to_string(),
                }
            }}</p>
            {move || result.get().map(|r| view! { <Ranked ctx=ctx result=r /> })}
        </section>
    }
}

#[component]
fn Ranked(ctx: Ctx, result: SearchResult) -> impl IntoView {
    let lang = ctx.lang;
    let l = lang.get_untracked();
    if result.pareto.is_empty() {
        return view! { <p class="empty" id="autoplan-empty">{tr(l, "No plan in the search space fits. Unlock a dimension or use a smaller sequence.", "Ни один план не помещается. Снимите ограничения или уменьшите длину последовательности.")}</p> }.into_any();
    }
    let mut rows: Vec<(&'static str, &'static str, Candidate)> = Vec::new();
    if let Some(c) = result.fastest.clone() {
        rows.push(("fastest", "быстрее всех", c));
    }
    if let Some(c) = result.cheapest.clone() {
        rows.push(("cheapest", "дешевле всех", c));
    }
    if let Some(c) = result.best_under_budget.clone() {
        rows.push(("best in budget", "лучший в бюджете", c));
    }
    if let Some(c) = result.best_under_deadline.clone() {
        rows.push(("cheapest by deadline", "дешевле всех в срок", c));
    }
    for c in &result.pareto {
        if !rows.iter().any(|(_, _, r)| r.query == c.query) {
            rows.push(("Pareto", "Парето", c.clone()));
        }
    }
    rows.truncate(8);
    let table = rows.into_iter().enumerate().map(|(i, (en, ru, c))| {
        let query = c.query.clone();
        let apply = move |_| {
            let d = planner::Plan::from_query(&query);
            let mut p = d.plan;
            p.lang = ctx.plan.with_untracked(|q| q.lang);
            ctx.plan.set(p);
        };
        view! {
            <tr>
                <td>{tr(l, en, ru)}</td>
                <td class="why">{c.why.clone()}</td>
                <td class="num">{hours(c.hours, l)}</td>
                <td class="num">{c.usd.map(|u| usd(u, l)).unwrap_or_else(|| "—".into())}</td>
                <td class="num">{tokens(c.tokens_per_second, l)}</td>
                <td><button type="button" class="apply" id=format!("apply-{i}") on:click=apply>{tr(l, "Apply", "Применить")}</button></td>
            </tr>
        }
    }).collect_view();
    view! {
        <div class="table-scroll">
            <table class="ranked" id="autoplan-table">
                <thead><tr>
                    <th>{tr(l, "Pick", "Выбор")}</th><th>{tr(l, "Plan, and why it wins", "План и чем он лучше")}</th>
                    <th>{tr(l, "Time", "Время")}</th><th>{tr(l, "Cost", "Стоимость")}</th><th>{tr(l, "Tokens/s", "Токенов/с")}</th><th></th>
                </tr></thead>
                <tbody>{table}</tbody>
            </table>
        </div>
        <Pareto result=result lang=l />
    }.into_any()
}

/// Time against cost of the non-dominated plans (log-log).
#[component]
fn Pareto(result: SearchResult, lang: planner::plan::Lang) -> impl IntoView {
    let pts: Vec<&Candidate> = result.pareto.iter().filter(|c| c.usd.is_some()).collect();
    if pts.len() < 2 {
        return view! { <span></span> }.into_any();
    }
    let (w, h, left, bottom, top, right) = (640.0, 200.0, 60.0, 36.0, 10.0, 20.0);
    let lx = |x: f64| x.max(1e-6).log10();
    let (h0, h1) = pts.iter().fold((f64::MAX, f64::MIN), |(a, b), c| {
        (a.min(lx(c.hours)), b.max(lx(c.hours)))
    });
    let (c0, c1) = pts.iter().fold((f64::MAX, f64::MIN), |(a, b), c| {
        (
            a.min(lx(c.usd.unwrap_or(1.0))),
            b.max(lx(c.usd.unwrap_or(1.0))),
        )
    });
    let sx = move |v: f64| left + (lx(v) - h0) / (h1 - h0).max(1e-9) * (w - left - right);
    let sy = move |v: f64| top + (1.0 - (lx(v) - c0) / (c1 - c0).max(1e-9)) * (h - top - bottom);
    let path = pts
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                "{}{:.1},{:.1}",
                if i == 0 { "M" } else { "L" },
                sx(c.hours),
                sy(c.usd.unwrap_or(1.0))
            )
        })
        .collect::<String>();
    let dots = pts.iter().map(|c| {
        let title = format!("{}: {}, {}", c.why, hours(c.hours, lang), usd(c.usd.unwrap_or(0.0), lang));
        view! { <circle class="pareto-dot" cx=sx(c.hours) cy=sy(c.usd.unwrap_or(1.0)) r="5"><title>{title}</title></circle> }
    }).collect_view();
    let first = pts
        .first()
        .map(|c| (c.hours, c.usd.unwrap_or(0.0)))
        .unwrap_or_default();
    let last = pts
        .last()
        .map(|c| (c.hours, c.usd.unwrap_or(0.0)))
        .unwrap_or_default();
    view! {
        <svg class="chart-svg" id="pareto-chart" viewBox=format!("0 0 {w} {h}") role="img"
            aria-label=tr(lang, "Pareto front: time to train against cost, log scales", "Фронт Парето: время обучения и стоимость, логарифмические шкалы")>
            <line class="grid" x1=left y1=h - bottom x2=w - right y2=h - bottom />
            <line class="grid" x1=left y1=top x2=left y2=h - bottom />
            <path class="series line-full" d=path />
            {dots}
            <text class="tick" x=sx(first.0) y=h - bottom + 14.0 text-anchor="middle">{hours(first.0, lang)}</text>
            <text class="tick" x=sx(last.0) y=h - bottom + 14.0 text-anchor="end">{hours(last.0, lang)}</text>
            <text class="tick" x=left - 4.0 y=sy(first.1) + 4.0 text-anchor="end">{usd(first.1, lang)}</text>
            <text class="tick" x=left - 4.0 y=sy(last.1) + 4.0 text-anchor="end">{usd(last.1, lang)}</text>
            <text class="axis" x=(left + w - right) / 2.0 y=h - 4.0 text-anchor="middle">{tr(lang, "time to train (log)", "время обучения (лог.)")}</text>
            <text class="axis" x=12.0 y=(top + h - bottom) / 2.0 text-anchor="middle" transform=format!("rotate(-90 12 {})", (top + h - bottom) / 2.0)>{tr(lang, "cost, USD (log)", "стоимость, USD (лог.)")}</text>
        </svg>
    }.into_any()
}
