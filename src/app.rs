//! The page. State is one `Plan` signal; the report and the charts are memos
//! of planner functions; the URL follows the plan through `replaceState`.

use crate::ctx::Ctx;
use crate::format::tr;
use crate::panels::autoplan::AutoPlan;
use crate::panels::charts::{InstanceChart, SequenceChart};
use crate::panels::compare::ComparePanel;
use crate::panels::export::ExportPanel;
use crate::panels::inputs::Inputs;
use crate::panels::live::LiveSummary;
use crate::panels::measured::MeasuredPanel;
use crate::panels::results::Results;
use leptos::prelude::*;
use planner::model::plan::with_pinned;
use planner::text::{render, Lang, Text};
use planner::{Decoded, Plan};
use std::collections::BTreeMap;

/// Read the plan (and the language it asks for) from the page's query string.
fn initial_plan() -> Decoded {
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    Plan::from_query(&search)
}

fn replace_url(query: &str) {
    if let Some(w) = web_sys::window() {
        if let Ok(h) = w.history() {
            let url = format!("{}?{query}", w.location().pathname().unwrap_or_default());
            h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url))
                .ok();
        }
    }
}

#[component]
pub fn App() -> impl IntoView {
    let Decoded {
        plan: plan0,
        notices,
        lang: linked_lang,
        pinned,
    } = initial_plan();
    let plan = RwSignal::new(plan0);
    let browser = crate::browser::browser_lang();
    // The language is not part of the plan (#24): switching it re-renders
    // the page's texts and evaluates nothing.
    let chosen_lang = RwSignal::new(linked_lang);
    let lang: Signal<Lang> = Memo::new(move |_| chosen_lang.get().unwrap_or(browser)).into();
    // A new report is a change: comparing two reports field by field would
    // cost more page than it saves (#24).
    let report = Memo::new_with_compare(
        move |_| plan.with(crate::ctx::evaluate_page),
        crate::ctx::always_changed,
    );
    let ctx = Ctx {
        plan,
        field_errors: RwSignal::new(BTreeMap::new()),
        chosen_lang,
        lang,
        report,
        pinned: RwSignal::new(pinned),
        worker: crate::worker::Worker::default(),
    };
    Effect::new(move |_| {
        let query = plan.with(|p| p.to_query());
        let query = ctx.pinned.with(|vs| with_pinned(query, vs.as_deref()));
        match chosen_lang.get() {
            Some(l) => replace_url(&format!("{query}&lang={}", l.key())),
            None => replace_url(&query),
        }
    });
    Effect::new(move |_| {
        if let Some(doc) = web_sys::window().and_then(|w| w.document()) {
            if let Some(el) = doc.document_element() {
                el.set_attribute("lang", if lang.get() == Lang::Ru { "ru" } else { "en" })
                    .ok();
            }
        }
    });
    let notices = StoredValue::new(notices);
    let t = move |id| tr(lang.get(), id);
    view! {
        <header class="top">
            <div class="brand">
                <h1>"Train Planner"</h1>
                <p class="tagline">
                    {move || t(
                        Text::WillYourLLMTrainingJob,
                    )}
                </p>
            </div>
            <div class="top-actions">
                <CopyButton ctx=ctx id="copy-link" label=Text::CopyLink done=Text::LinkCopied what=page_link />
                <CopyButton ctx=ctx id="copy-markdown" label=Text::CopyAsMarkdown done=Text::MarkdownCopied what=plan_markdown />
                <div class="lang" role="group" aria-label=format!("{} / {}", tr(Lang::En, Text::Language), tr(Lang::Ru, Text::Language))>
                    <button type="button" id="lang-en" aria-pressed=move || (lang.get() == Lang::En).to_string()
                        on:click=move |_| crate::russian::switch(ctx, Lang::En)>"EN"</button>
                    <button type="button" id="lang-ru" aria-pressed=move || (lang.get() == Lang::Ru).to_string()
                        on:click=move |_| crate::russian::switch(ctx, Lang::Ru)>"RU"</button>
                </div>
            </div>
        </header>
        <Show when=move || notices.with_value(|n| !n.is_empty())>
            <div class="notices" role="status" id="notices">
                <strong>{move || t(Text::PartsOfTheLinkCould)}</strong>
                <ul>
                    {move || notices.with_value(|n| n.iter().map(|n| {
                        let text = render(lang.get(), &n.problem);
                        view! { <li>{text}</li> }
                    }).collect_view())}
                </ul>
            </div>
        </Show>
        <main class="layout">
            <LiveSummary ctx=ctx />
            <Inputs ctx=ctx />
            <div class="output">
                <ComparePanel ctx=ctx />
                <Results ctx=ctx />
                <AutoPlan ctx=ctx />
                <SequenceChart ctx=ctx />
                <InstanceChart ctx=ctx />
                <ExportPanel ctx=ctx />
                <MeasuredPanel ctx=ctx />
            </div>
        </main>
        <footer class="foot">
            {move || t(
                Text::NumbersComeFromOnePlanning,
            )}
        </footer>
    }
}

/// "Copy link": the Clipboard API, with a textarea fallback, and feedback.
/// A button that copies `what(ctx)` to the clipboard and says so for two seconds.
#[component]
fn CopyButton(
    ctx: Ctx,
    id: &'static str,
    label: Text,
    done: Text,
    what: fn(&Ctx) -> String,
) -> impl IntoView {
    let state = RwSignal::new(0u8); // 0 idle, 1 copied, 2 failed
    let (t, copied, failed) = (
        ctx.t(label),
        ctx.t(done),
        ctx.t(Text::CopyFailedUseTheAddress),
    );
    let on_click = move |_| {
        let Some(w) = web_sys::window() else { return };
        let text = what(&ctx);
        let promise = w.navigator().clipboard().write_text(&text);
        leptos::task::spawn_local(async move {
            let ok = wasm_bindgen_futures::JsFuture::from(promise).await.is_ok()
                || crate::browser::copy_fallback(&text);
            state.set(if ok { 1 } else { 2 });
            gloo::timers::future::TimeoutFuture::new(2000).await;
            state.set(0);
        });
    };
    view! {
        <button type="button" class="copy-link" id=id on:click=on_click>
            {move || match state.get() { 1 => copied(), 2 => failed(), _ => t() }}
        </button>
        <span class="sr-only" role="status">{move || if state.get() == 1 { copied() } else { "" }}</span>
    }
}

/// The page's address: the whole plan.
fn page_link(_: &Ctx) -> String {
    web_sys::window()
        .and_then(|w| w.location().href().ok())
        .unwrap_or_default()
}

/// The plan as a short Markdown summary with its link.
fn plan_markdown(ctx: &Ctx) -> String {
    let lang = ctx.lang.get_untracked();
    ctx.report
        .with_untracked(|r| crate::panels::summary::markdown(r, &page_link(ctx), lang))
}
