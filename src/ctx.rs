//! The page's shared state, handed to every panel: the plan, the typed
//! values the parser refused, the language shown and the report. Panels
//! import it from here, not from the app that assembles them.

use crate::format::tr;
use leptos::prelude::*;
use planner::estimate::evaluate::Evaluation;
use planner::text::{render, Lang, Text};
use planner::Plan;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

/// Shared state handed to every component.
#[derive(Clone, Copy)]
pub struct Ctx {
    pub plan: RwSignal<Plan>,
    /// Messages for fields whose typed value was rejected, by URL key.
    /// Typed values the parser refused, by key; rendered in the language of
    /// the moment (#24), so switching to Russian translates them too.
    pub field_errors: RwSignal<BTreeMap<String, planner::model::plan::Problem>>,
    /// The language the reader chose (the link's `lang=`, or a button).
    pub chosen_lang: RwSignal<Option<Lang>>,
    /// The language shown: the chosen one, else the browser's.
    pub lang: Signal<Lang>,
    /// The plan's one evaluation: its report (`Deref`) and charts.
    pub report: Memo<Evaluation>,
    /// A plan pinned to compare with (`vs=` in the link), its short query:
    /// the page's, not part of the plan.
    pub pinned: RwSignal<Option<String>>,
    /// The page's worker: the launch code, the bundle and the auto-plan.
    pub worker: crate::worker::Worker,
}

impl Ctx {
    /// Apply a typed value through the same parser the URL uses; a rejected
    /// value is reported beside its field and the plan keeps its old value.
    pub fn set(&self, key: &str, value: &str) {
        let mut p = self.plan.get_untracked();
        match p.set(key, value.trim()) {
            Ok(()) => {
                // A field's `input` and `change` both apply its value: the
                // second, the same plan, is no edit and evaluates nothing
                // (#34). Compared by link, which holds every input: a
                // derived `PartialEq` of `Plan` costs the page 1.1 KB.
                if self
                    .plan
                    .with_untracked(|old| old.to_query() != p.to_query())
                {
                    self.plan.set(p);
                }
                self.field_errors.update(|e| {
                    e.remove(key);
                });
            }
            Err(problem) => {
                self.field_errors.update(|e| {
                    e.insert(key.to_string(), problem);
                });
            }
        }
    }

    /// The message for a field: a rejected typed value, else a planner error about its key.
    pub fn error(&self, key: &'static str) -> impl Fn() -> Option<String> + Copy + 'static {
        let errs = self.field_errors;
        let report = self.report;
        let lang = self.lang;
        move || {
            let lang = lang.get();
            errs.with(|e| e.get(key).map(|p| render(lang, p)))
                .or_else(|| {
                    report.with(|r| {
                        r.errors
                            .iter()
                            .find(|m| m.key == Some(key))
                            .map(|m| render(lang, &m.phrase))
                    })
                })
        }
    }

    pub fn t(&self, id: Text) -> impl Fn() -> &'static str + Copy + 'static {
        let lang = self.lang;
        move || tr(lang.get(), id)
    }
}

/// Searches the page has run, and evaluations (every `planner::evaluate`,
/// the planner's own count), shown on `<body>` as `data-searches` and
/// `data-evaluations`: the e2e checks that switching the language runs
/// neither (#24) and that one edit runs one evaluation (#34).
static SEARCHES: AtomicU32 = AtomicU32::new(0);

fn show(attribute: &str, n: u64) {
    if let Some(body) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.body())
    {
        body.set_attribute(attribute, &n.to_string()).ok();
    }
}

/// The sequence chart's lengths: the page evaluates its curves with the plan.
pub const SEQS: [u64; 8] = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072];

/// The page's one evaluation of an edit: the report and both charts,
/// its count shown.
pub fn evaluate_page(plan: &Plan) -> Evaluation {
    let evaluation = planner::estimate::evaluate::evaluate_with_charts(plan, &SEQS);
    show_evaluations();
    evaluation
}

/// Show how many evaluations have run (after any that did not pass
/// through [`evaluate_page`]).
pub fn show_evaluations() {
    show(
        "data-evaluations",
        planner::estimate::evaluate::evaluations(),
    );
}

/// Count one auto-plan search started.
pub fn count_search() {
    let n = SEARCHES.fetch_add(1, Ordering::Relaxed) + 1;
    show("data-searches", u64::from(n));
}

/// A memo comparator that calls every new value a change (no `PartialEq`
/// of a whole report or comparison in the page).
pub fn always_changed<T>(_: Option<&T>, _: Option<&T>) -> bool {
    true
}
