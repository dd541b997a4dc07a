//! The code panel: the planner's SageMaker launch code for the plan on
//! screen, with light syntax colouring, Copy and Download .py.

use crate::ctx::Ctx;
use crate::format::tr;
use crate::panels::inputs::NumberField;
use leptos::prelude::*;
use planner::launch::export::{export_of, Format};
use planner::text::Text;
use wasm_bindgen::JsCast;

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
    }
}

#[component]
pub fn ExportPanel(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    let format = RwSignal::new(Format::Pytorch);
    // The page's one evaluation of the plan serves the export too (#34).
    let code = Memo::new(move |_| {
        let f = format.get();
        let code = ctx.plan.with(|p| ctx.report.with(|r| export_of(p, r, f)));
        crate::ctx::show_evaluations();
        code
    });
    let copied = RwSignal::new(0u8);
    let copy = move |_| copy_code(code.with_untracked(|e| e.code.clone()), copied);
    let download = move |_| {
        let (text, name) = code.with_untracked(|e| (e.code.clone(), e.filename.clone()));
        download_file(&name, &text);
    };
    let bundle_error = RwSignal::new(None::<String>);
    let download_zip = move |_| {
        let plan = ctx.plan.get_untracked();
        let launcher = match format.get_untracked() {
            Format::TrainingArgs => Format::Pytorch,
            f => f,
        };
        leptos::task::spawn_local(async move {
            match bundle_zip(ctx, &plan, launcher).await {
                Ok(bytes) => {
                    bundle_error.set(None);
                    download_bytes(&zip_name(&plan), &bytes, "application/zip");
                }
                Err(detail) => bundle_error.set(Some(detail)),
            }
        });
    };
    let t = move |id| tr(lang.get(), id);
    view! {
        <section class="chart export" aria-labelledby="export-title">
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
            <div class="row3">
                <NumberField ctx=ctx key="role" label=Text::ExecutionRoleARN step="text" get=|p| p.launch.role.clone() />
                <NumberField ctx=ctx key="s3" label=Text::S3Prefix step="text" get=|p| p.launch.s3.clone() />
                <NumberField ctx=ctx key="job" label=Text::BaseJobName step="text" get=|p| p.launch.job.clone() />
                <NumberField ctx=ctx key="entry" label=Text::EntryScript step="text" get=|p| p.launch_entry().to_string() />
                <NumberField ctx=ctx key="hf_model" label=Text::HuggingFaceModelId step="text" get=|p| p.launch.hf_model.clone() />
            </div>
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
            {move || bundle_error.get().map(|d| view! {
                <p class="field-error" role="alert">{planner::text::fill(lang.get(), Text::BundleFailed, &[("detail", &d)])}</p>
            })}
            <pre class="code" id="export-code" tabindex="0" aria-label=move || t(Text::GeneratedPython)><code>
                {move || code.with(|e| tokens(&e.code)).into_iter().map(|(tok, text)| {
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
        </section>
    }
}

/// The bundle as a ZIP: launch.py, the README and the settings from the
/// planner, and the plan's script (train.py, or a Megatron plan's
/// Megatron-Bridge launcher) and the README's static sections fetched from
/// the site (they never weigh on the wasm).
/// The files come from the page's report (#34: the download evaluates
/// nothing again; a clone of the report would cost the page 1.4 KB), unless
/// the plan changed while the script was fetched.
async fn bundle_zip(ctx: Ctx, plan: &planner::Plan, launcher: Format) -> Result<Vec<u8>, String> {
    use planner::launch::bundle::{files, files_of, zip};
    let name = planner::launch::bundle::script_name(plan);
    let script = crate::browser::fetch_text(&format!("bundle/{name}")).await?;
    if !planner::launch::bundle::readme_parts_loaded() {
        let parts = crate::browser::fetch_text(planner::launch::bundle::README_PARTS_URL).await?;
        planner::launch::bundle::load_readme_parts(parts);
    }
    let same = ctx
        .plan
        .with_untracked(|now| now.to_query() == plan.to_query());
    Ok(zip(&match same {
        true => ctx
            .report
            .with_untracked(|e| files_of(plan, &e.report, launcher, &script)),
        false => files(plan, launcher, &script),
    }))
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

/// Save `text` as a file through a temporary object URL.
fn download_file(name: &str, text: &str) {
    download_bytes(name, text.as_bytes(), "text/x-python");
}

fn download_bytes(name: &str, bytes: &[u8], mime: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &opts) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    if let Ok(el) = doc.create_element("a") {
        let a: web_sys::HtmlAnchorElement = el.unchecked_into();
        a.set_href(&url);
        a.set_download(name);
        a.click();
    }
    web_sys::Url::revoke_object_url(&url).ok();
}
