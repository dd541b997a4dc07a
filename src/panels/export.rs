//! The code panel: the planner's SageMaker launch code for the plan on
//! screen, with light syntax colouring, Copy and Download .py.

use crate::ctx::Ctx;
use crate::format::tr;
use crate::panels::inputs::NumberField;
use crate::worker::{Code, Worker};
use leptos::prelude::*;
use planner::launch::export::Format;
use planner::text::{Lang, Text};

/// A Python token class for colouring.
#[derive(Clone, Copy, PartialEq)]
enum Tok {
    Plain,
    Comment,
    Str,
    Keyword,
    Number,
}

const KEYWORDS: &[&str] = &[
    "import", "from", "if", "else", "True", "False", "None", "and", "or", "not", "with", "as",
    "def", "return", "in",
];

/// Split Python source into coloured runs. Not a parser: good enough for the
/// code the planner writes (one-line strings, `#` comments).
fn tokens(code: &str) -> Vec<(Tok, String)> {
    let mut out: Vec<(Tok, String)> = Vec::new();
    let push = |out: &mut Vec<(Tok, String)>, t: Tok, s: &str| {
        if let Some(last) = out.last_mut() {
            if last.0 == t {
                last.1.push_str(s);
                return;
            }
        }
        out.push((t, s.to_string()));
    };
    for line in code.split_inclusive('\n') {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '#' {
                let rest: String = chars[i..].iter().collect();
                push(&mut out, Tok::Comment, &rest);
                break;
            } else if c == '"' || c == '\'' {
                let mut j = i + 1;
                while j < chars.len() && chars[j] != c {
                    if chars[j] == '\\' {
                        j += 1;
                    }
                    j += 1;
                }
                let end = (j + 1).min(chars.len());
                push(
                    &mut out,
                    Tok::Str,
                    &chars[i..end].iter().collect::<String>(),
                );
                i = end;
            } else if c.is_ascii_alphabetic() || c == '_' {
                let mut j = i;
                while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
                let word: String = chars[i..j].iter().collect();
                let t = if KEYWORDS.contains(&word.as_str()) {
                    Tok::Keyword
                } else {
                    Tok::Plain
                };
                push(&mut out, t, &word);
                i = j;
            } else if c.is_ascii_digit() {
                let mut j = i;
                while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '.') {
                    j += 1;
                }
                push(
                    &mut out,
                    Tok::Number,
                    &chars[i..j].iter().collect::<String>(),
                );
                i = j;
            } else {
                push(&mut out, Tok::Plain, &c.to_string());
                i += 1;
            }
        }
    }
    out
}

/// Copy `text` to the clipboard (or the page's fallback), and say for two
/// seconds whether it worked (`copied`: 1 yes, 2 no, 0 nothing to say).
fn copy_code(text: String, copied: RwSignal<u8>) {
    let Some(w) = web_sys::window() else { return };
    let promise = w.navigator().clipboard().write_text(&text);
    leptos::task::spawn_local(async move {
        let ok = wasm_bindgen_futures::JsFuture::from(promise).await.is_ok()
            || crate::browser::copy_fallback(&text);
        copied.set(if ok { 1 } else { 2 });
        gloo::timers::future::TimeoutFuture::new(2000).await;
        copied.set(0);
    });
}

/// A format's button label.
fn format_label(f: Format) -> &'static str {
    match f {
        Format::Pytorch => "PyTorch (SDK v2)",
        Format::Huggingface => "HuggingFace (SDK v2)",
        Format::ModelTrainer => "ModelTrainer (SDK v3)",
        Format::TrainingArgs => "TrainingArguments",
        Format::Hyperpod => "HyperPod (hyp CLI)",
    }
}

#[component]
pub fn ExportPanel(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    let format = RwSignal::new(Format::Pytorch);
    let worker = ctx.worker;
    // The page evaluates each edit once; the worker writes its code from
    // the plan's link, off the page's thread.
    Effect::new(move |_| {
        let f = format.get();
        ctx.plan.with(|p| worker.ask_code(&p.to_query(), f));
    });
    let section = NodeRef::<leptos::html::Section>::new();
    Effect::new(move |_| {
        if let Some(el) = section.get() {
            crate::worker::when_near_view(&el, move || worker.start());
        }
    });
    let written = move || match worker.code.get_untracked() {
        Code::Written { code, filename } => Some((code, filename)),
        _ => None,
    };
    let copied = RwSignal::new(0u8);
    let copy = move |_| {
        if let Some((code, _)) = written() {
            copy_code(code, copied)
        }
    };
    let download = move |_| {
        if let Some((code, name)) = written() {
            crate::browser::download_bytes(&name, code.as_bytes(), "text/x-python");
        }
    };
    let download_zip = move |_| {
        let plan = ctx.plan.get_untracked();
        let launcher = match format.get_untracked() {
            Format::TrainingArgs | Format::Hyperpod => Format::Pytorch,
            f => f,
        };
        leptos::task::spawn_local(async move {
            if let Err(detail) = ask_bundle(worker, &plan, launcher).await {
                worker.zip_error.set(Some(detail));
            }
        });
    };
    let t = move |id| tr(lang.get(), id);
    view! {
        <section class="chart export" aria-labelledby="export-title" node_ref=section>
            <h2 id="export-title">{move || t(Text::LaunchItOnSageMaker)}</h2>
            <p class="engine-note" id="export-engine">{move || ctx.plan.with(|p| {
                let entry = p.launch_entry().to_string();
                planner::text::fill(lang.get(), p.engine().text(), &[("entry", &entry)])
            })}</p>
            <ul class="messages" id="export-notes">
                {move || {
                    let l = lang.get();
                    ctx.report.with(|r| r.export_notes.iter()
                        .map(|m| crate::panels::results::message_item(ctx, l, "note", m))
                        .collect_view())
                }}
            </ul>
            {launch_fields(ctx)}
            <div class="export-bar">
                <div class="formats" role="group" aria-label=move || t(Text::CodeFormat)>
                    {Format::ALL.into_iter().map(|f| view! {
                        <button type="button" id=format!("fmt-{}", f.key())
                            aria-pressed=move || (format.get() == f).to_string()
                            on:click=move |_| format.set(f)>{format_label(f)}</button>
                    }).collect_view()}
                </div>
                <div class="export-actions">
                    <button type="button" id="copy-code" on:click=copy>
                        {move || match copied.get() { 1 => t(Text::Copied), 2 => t(Text::CopyFailed), _ => t(Text::CopyButton) }}
                    </button>
                    <button type="button" id="download-code" on:click=download>{move || t(Text::DownloadPy)}</button>
                    <button type="button" id="download-bundle" on:click=download_zip
                        title=move || t(Text::BundleHint)>{move || t(Text::DownloadBundle)}</button>
                </div>
            </div>
            {move || worker.zip_error.get().map(|d| view! {
                <p class="field-error" role="alert">{planner::text::fill(lang.get(), Text::BundleFailed, &[("detail", &d)])}</p>
            })}
            {code_view(worker, lang)}
        </section>
    }
}

/// The names and paths the launch code uses, and the training plan it books.
fn launch_fields(ctx: Ctx) -> impl IntoView {
    view! {
        <div class="row3">
                <NumberField ctx=ctx key="role" label=Text::ExecutionRoleARN step="text" get=|p| p.launch.role.clone() />
                <NumberField ctx=ctx key="s3" label=Text::S3Prefix step="text" get=|p| p.launch.s3.clone() />
                <NumberField ctx=ctx key="job" label=Text::BaseJobName step="text" get=|p| p.launch.job.clone() />
                <NumberField ctx=ctx key="entry" label=Text::EntryScript step="text" get=|p| p.launch_entry().to_string() />
                <NumberField ctx=ctx key="hf_model" label=Text::HuggingFaceModelId step="text" get=|p| p.launch.hf_model.clone() />
                <NumberField ctx=ctx key="training_plan" label=Text::TrainingPlanArn step="text" get=|p| p.launch.training_plan.clone() />
        </div>
    }
}

/// The launch code, coloured; what the worker is doing while it writes it.
fn code_view(worker: Worker, lang: Signal<Lang>) -> impl IntoView {
    let t = move |id| tr(lang.get(), id);
    view! {
            <pre class="code" id="export-code" tabindex="0" aria-label=move || t(Text::GeneratedPython)
                aria-busy=move || (worker.code.get() == Code::Writing).to_string()><code>
                {move || worker.code.with(|c| match c {
                    Code::Written { code, .. } => tokens(code),
                    Code::Writing => vec![(Tok::Comment, format!("# {}", t(Text::CodeWriting)))],
                    Code::Failed(d) => vec![(Tok::Comment, format!("# {}", planner::text::fill(lang.get(), Text::CodeFailed, &[("detail", d)])))],
                }).into_iter().map(|(tok, text)| {
                    let class = match tok {
                        Tok::Plain => "",
                        Tok::Comment => "tok-c",
                        Tok::Str => "tok-s",
                        Tok::Keyword => "tok-k",
                        Tok::Number => "tok-n",
                    };
                    view! { <span class=class>{text}</span> }
                }).collect_view()}
            </code></pre>
    }
}

/// Ask the worker for the bundle as a ZIP: launch.py, the README and the
/// settings from the planner around the plan's script (train.py, or a
/// Megatron plan's Megatron-Bridge launcher) and the README's static
/// sections, both fetched from the site (they never weigh on the wasm).
async fn ask_bundle(worker: Worker, plan: &planner::Plan, launcher: Format) -> Result<(), String> {
    use planner::launch::bundle::{script_names, README_PARTS_URL, SCRIPT_SEPARATOR};
    worker.start();
    let mut script = String::new();
    for name in script_names(plan) {
        if !script.is_empty() {
            script.push(SCRIPT_SEPARATOR);
        }
        script += &crate::browser::fetch_text(&format!("bundle/{name}")).await?;
    }
    let parts = crate::browser::fetch_text(README_PARTS_URL).await?;
    worker.ask_zip(&plan.to_query(), launcher, script, parts, zip_name(plan));
    Ok(())
}

/// `<job name>-bundle.zip`.
fn zip_name(plan: &planner::Plan) -> String {
    let job = if plan.launch.job.is_empty() {
        "train-planner"
    } else {
        &plan.launch.job
    };
    format!("{job}-bundle.zip")
}
