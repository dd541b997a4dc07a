//! The page's worker: the SageMaker code and the bundle of a plan, the
//! auto-plan's search and the readers of pasted JSON, run in a Web Worker of their own so that their code
//! (the launchers, the Megatron-Bridge settings, the ZIP writer, the
//! search's walk) is not in the page's wasm (#59: the first verdict does
//! not need them) and the search never holds the page's thread. The page
//! starts it when the code panel or the auto-plan first comes into view
//! (src/worker.rs).
//!
//! A request is an array `[id, kind, query, format, script, readme_parts]`:
//! `kind` is "code" (the launch code in `format`), "zip" (the bundle with
//! `format` as its launcher, around the fetched scripts, joined by
//! `bundle::SCRIPT_SEPARATOR`) or "search" (the
//! auto-plan around the plan, `[id, "search", query, hours, usd, fits]`,
//! the user's plan as the page reported it: `Baseline`, `usd` null
//! without a price); "config" and
//! "measured" read a pasted config.json or measured line, `[id, kind, text]`
//! (the page holds no JSON reader). The reply is `[id, true, payload, file
//! name]`, the payload being the code, the ZIP's bytes, the search's wire
//! text or what was read, or `[id, false, message]`; a long search says `["progress", id, share]`
//! on the way. The worker says `["ready"]` once it listens.

#[cfg(target_arch = "wasm32")]
fn main() {
    use wasm_bindgen::{closure::Closure, JsCast};
    let scope: web_sys::DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let reply_to = scope.clone();
    let on_message =
        Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            let request: js_sys::Array = e.data().unchecked_into();
            let reply = match answer(&request, &reply_to) {
                Ok((payload, name)) => {
                    js_sys::Array::of4(&request.get(0), &true.into(), &payload, &name.into())
                }
                Err(message) => js_sys::Array::of3(&request.get(0), &false.into(), &message.into()),
            };
            reply_to.post_message(&reply).ok();
        });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    scope
        .post_message(&js_sys::Array::of1(&"ready".into()))
        .ok();
}

/// The code, the bundle or the search one request asks for, with its file name.
#[cfg(target_arch = "wasm32")]
fn answer(
    request: &js_sys::Array,
    scope: &web_sys::DedicatedWorkerGlobalScope,
) -> Result<(wasm_bindgen::JsValue, String), String> {
    use planner::launch::{bundle, export};
    let text = |i| request.get(i).as_string().unwrap_or_default();
    match text(1).as_str() {
        "config" => {
            return Ok((
                planner::model::plan::config_reply(&text(2)).into(),
                String::new(),
            ))
        }
        "measured" => {
            return Ok((
                planner::runs::measured::line_reply(&text(2)).into(),
                String::new(),
            ))
        }
        _ => {}
    }
    let plan = planner::Plan::from_query(&text(2)).plan;
    if text(1) == "search" {
        let base = planner::estimate::search::Baseline {
            hours: request.get(3).as_f64().unwrap_or(f64::NAN),
            usd: request.get(4).as_f64(),
            fits: request.get(5).is_truthy(),
        };
        let result = search(&plan, base, |share| {
            let said = js_sys::Array::of3(&"progress".into(), &request.get(0), &share.into());
            scope.post_message(&said).ok();
        });
        return Ok((
            planner::estimate::search::wire::encode(&result).into(),
            String::new(),
        ));
    }
    let report = planner::estimate::evaluate::evaluate(&plan);
    let format = export::Format::from_key(&text(3)).ok_or("unknown format")?;
    if text(1) != "zip" {
        let e = export::export_of(&plan, &report, format);
        return Ok((e.code.into(), e.filename));
    }
    if !bundle::readme_parts_loaded() {
        bundle::load_readme_parts(text(5));
    }
    let scripts = text(4);
    let scripts: Vec<&str> = scripts.split(bundle::SCRIPT_SEPARATOR).collect();
    let files = bundle::files_of(&plan, &report, format, &scripts);
    let bytes = js_sys::Uint8Array::from(bundle::zip(&files).as_slice());
    Ok((bytes.into(), String::new()))
}

/// The auto-plan around `plan`, saying how far it got every ~100 ms.
#[cfg(target_arch = "wasm32")]
fn search(
    plan: &planner::Plan,
    base: planner::estimate::search::Baseline,
    progress: impl Fn(f64),
) -> planner::estimate::search::SearchResult {
    let now = || js_sys::Date::now();
    let mut search = planner::estimate::search::Search::resolved(plan, base);
    let mut said = now();
    while !search.run(20_000) {
        if now() - said > 100.0 {
            progress(search.progress());
            said = now();
        }
    }
    search.result()
}

/// Native builds (clippy, tests) have no worker to be.
#[cfg(not(target_arch = "wasm32"))]
fn main() {}
