//! The auto-plan panel: the planner's search, run in the page's worker
//! (src/worker.rs) so the page stays responsive and its wasm stays small,
//! asked again whenever the plan changes.

use crate::ctx::Ctx;
use crate::format::{hours, num, percent, tokens, tr, usd};
use crate::panels::inputs::NumberField;
use crate::worker::Searched;
use leptos::prelude::*;
use planner::estimate::search::{Baseline, Candidate, SearchResult};
use planner::model::plan::Locks;
use planner::text::{render, Lang, Text};

#[component]
pub fn AutoPlan(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    let worker = ctx.worker;
    // The last result stays shown while the next one is searched.
    let result = RwSignal::new(None::<SearchResult>);
    let elapsed = RwSignal::new(0.0f64);
    // Search on every new evaluation (every change of the plan), in the
    // worker; a newer question makes the worker's older answer stale.
    Effect::new(move |_| {
        let base = ctx.report.with(|e| Baseline::of(e));
        let query = ctx.plan.with_untracked(|p| p.to_query());
        crate::ctx::count_search();
        worker.ask_search(&query, base);
    });
    Effect::new(move |_| {
        if let Searched::Found(r, ms) = worker.searched.get() {
            elapsed.set(ms);
            result.set(Some(*r));
        }
    });
    let section = NodeRef::<leptos::html::Section>::new();
    Effect::new(move |_| {
        if let Some(el) = section.get() {
            crate::worker::when_near_view(&el, move || worker.start());
        }
    });
    let t = move |id| tr(lang.get(), id);
    view! {
        <section class="chart autoplan" aria-labelledby="autoplan-title" node_ref=section>
            <h2 id="autoplan-title">{move || t(Text::AutoPlanTheBestPlans)}</h2>
            <p class="derived">{move || t(
                Text::SearchesInstanceTypeAndCount,
            )}</p>
            <div class="locks" role="group" aria-label=move || t(Text::KeepAsIs)>
                <span class="locks-label">{move || t(Text::KeepLabel)}</span>
                {Locks::KEYS.iter().map(|&key| {
                    let id = format!("lock-{key}");
                    let for_id = id.clone();
                    let label = match key {
                        "instance" => Text::InstanceType,
                        "nodes" => Text::LockInstanceCount,
                        "precision" => Text::LockPrecision,
                        "parallelism" => Text::ParallelismAndSharding,
                        "checkpointing" => Text::Checkpointing,
                        _ => Text::MicroBatch,
                    };
                    view! {
                        <label class="lock" for=for_id>
                            <input type="checkbox" id=id prop:checked=move || ctx.plan.with(|p| p.auto.locks.get(key))
                                on:change=move |ev| {
                                    let on = event_target_checked(&ev);
                                    let mut locks = ctx.plan.with_untracked(|p| p.auto.locks);
                                    locks.set(key, on);
                                    ctx.set("lock", &locks.to_value());
                                } />
                            {move || tr(lang.get(), label)}
                        </label>
                    }
                }).collect_view()}
            </div>
            <div class="row2">
                <NumberField ctx=ctx key="budget" label=Text::BudgetUSDOptional step="any" get=|p| p.auto.budget_usd.map(|x| x.to_string()).unwrap_or_default() />
                <NumberField ctx=ctx key="deadline" label=Text::DeadlineHoursOptional step="any" get=|p| p.auto.deadline_hours.map(|x| x.to_string()).unwrap_or_default() />
            </div>
            <p class="search-status" id="search-status" role="status">{move || {
                let l = lang.get();
                let counts = result.with(|r| r.as_ref().map(|r| (r.candidates, r.evaluated, r.fitting)));
                let state = worker.searched.with(|s| match s {
                    Searched::Searching(p) => Err(*p),
                    Searched::Failed(why) => Ok(Some(why.clone())),
                    Searched::Found(..) => Ok(None),
                });
                match (state, counts) {
                    (Err(Some(p)), _) => format!("{} {}", tr(l, Text::Searching), percent(p, l)),
                    (Ok(Some(why)), _) => why,
                    (Ok(None), Some((c, e, f))) => format!("{} {} {} ({} {}, {} {}) {} {} {}",
                        tr(l, Text::WordSearched), num(c as f64, 0, l), tr(l, Text::WordCandidates),
                        num(e as f64, 0, l), tr(l, Text::WordEvaluated), num(f as f64, 0, l), tr(l, Text::WordFit),
                        tr(l, Text::WordIn), num(elapsed.get(), 0, l), tr(l, Text::UnitMs)),
                    _ => tr(l, Text::Searching).to_string(),
                }
            }}</p>
            // A new language re-renders the ranked plans; it searches nothing (#24).
            {move || {
                let l = lang.get();
                result.get().map(|r| view! { <Ranked ctx=ctx result=r l=l /> })
            }}
        </section>
    }
}

#[component]
fn Ranked(ctx: Ctx, result: SearchResult, l: Lang) -> impl IntoView {
    if result.pareto.is_empty() {
        return view! { <p class="empty" id="autoplan-empty">{tr(l, Text::NoPlanInTheSearch)}</p> }
            .into_any();
    }
    // One row a plan, with every pick it is ("cheapest, fewest GPUs").
    let mut rows: Vec<(Vec<Text>, Candidate)> = Vec::new();
    let picks = [
        (Text::Fastest, &result.fastest),
        (Text::Cheapest, &result.cheapest),
        (Text::FewestGpus, &result.fewest_gpus),
        (Text::BestInBudget, &result.best_under_budget),
        (Text::CheapestByDeadline, &result.best_under_deadline),
    ];
    let named = picks
        .into_iter()
        .filter_map(|(t, c)| Some((t, c.as_ref()?)));
    let pareto = result.pareto.iter().map(|c| (Text::Pareto, c));
    for (pick, c) in named.chain(pareto) {
        match rows.iter_mut().find(|(_, r)| r.query == c.query) {
            Some((p, _)) if pick != Text::Pareto => p.push(pick),
            Some(_) => {}
            None => rows.push((vec![pick], c.clone())),
        }
    }
    rows.truncate(8);
    let table = rows.into_iter().enumerate().map(|(i, (picks, c))| {
        let pick = picks.iter().map(|p| tr(l, *p)).collect::<Vec<_>>().join(", ");
        let query = c.query.clone();
        let apply = move |_| {
            ctx.plan.set(planner::Plan::from_query(&query).plan);
        };
        let compare_query = c.query.clone();
        let compare = move |_| crate::panels::compare::pin_query(ctx, &compare_query);
        view! {
            <tr>
                <td>{pick}</td>
                <td class="why">{render(l, &c.why)}</td>
                <td class="num">{hours(c.hours, l)}</td>
                <td class="num">{c.usd.map(|u| usd(u, l)).unwrap_or_else(|| "—".into())}</td>
                <td class="num">{tokens(c.tokens_per_second, l)}</td>
                <td class="row-actions">
                    <button type="button" class="apply" id=format!("apply-{i}") on:click=apply>{tr(l, Text::Apply)}</button>
                    <button type="button" class="compare-row" id=format!("compare-{i}") on:click=compare>{tr(l, Text::CompareButton)}</button>
                </td>
            </tr>
        }
    }).collect_view();
    view! {
        <div class="table-scroll">
            <table class="ranked" id="autoplan-table">
                <thead><tr>
                    <th>{tr(l, Text::Pick)}</th><th>{tr(l, Text::PlanAndWhyItWins)}</th>
                    <th>{tr(l, Text::Time)}</th><th>{tr(l, Text::Cost)}</th><th>{tr(l, Text::TokensS)}</th><th></th>
                </tr></thead>
                <tbody>{table}</tbody>
            </table>
        </div>
        <Pareto result=result lang=l />
    }.into_any()
}

/// Time against cost of the non-dominated plans (log-log).
#[component]
fn Pareto(result: SearchResult, lang: Lang) -> impl IntoView {
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
        let title = format!("{}: {}, {}", render(lang, &c.why), hours(c.hours, lang), usd(c.usd.unwrap_or(0.0), lang));
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
            aria-label=tr(lang, Text::ParetoFrontTimeToTrain)>
            <line class="grid" x1=left y1=h - bottom x2=w - right y2=h - bottom />
            <line class="grid" x1=left y1=top x2=left y2=h - bottom />
            <path class="series line-full" d=path />
            {dots}
            <text class="tick" x=sx(first.0) y=h - bottom + 14.0 text-anchor="middle">{hours(first.0, lang)}</text>
            <text class="tick" x=sx(last.0) y=h - bottom + 14.0 text-anchor="end">{hours(last.0, lang)}</text>
            <text class="tick" x=left - 4.0 y=sy(first.1) + 4.0 text-anchor="end">{usd(first.1, lang)}</text>
            <text class="tick" x=left - 4.0 y=sy(last.1) + 4.0 text-anchor="end">{usd(last.1, lang)}</text>
            <text class="axis" x=(left + w - right) / 2.0 y=h - 4.0 text-anchor="middle">{tr(lang, Text::TimeToTrainLog)}</text>
            <text class="axis" x=12.0 y=(top + h - bottom) / 2.0 text-anchor="middle" transform=format!("rotate(-90 12 {})", (top + h - bottom) / 2.0)>{tr(lang, Text::CostUSDLog)}</text>
        </svg>
    }.into_any()
}
