//! The launch-code worker: the SageMaker code and the bundle of a plan,
//! written in a Web Worker of their own so that their code (the launchers,
//! the Megatron-Bridge settings, the ZIP writer) is not in the page's wasm
//! (#59: the first verdict does not need them). The page starts it when the
//! code panel first comes into view (src/panels/export.rs).
//!
//! A request is an array `[id, kind, query, format, script, readme_parts]`:
//! `kind` is "code" (the launch code in `format`) or "zip" (the bundle with
//! `format` as its launcher, around the fetched `script`). The reply is
//! `[id, true, code or ZIP bytes, file name]`, or `[id, false, message]`.
//! The worker says `["ready"]` once it listens.

#[cfg(target_arch = "wasm32")]
fn main() {
    use wasm_bindgen::{closure::Closure, JsCast};
    let scope: web_sys::DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let reply_to = scope.clone();
    let on_message =
        Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            let request: js_sys::Array = e.data().unchecked_into();
            let reply = match answer(&request) {
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

/// The code or the bundle one request asks for, with its file name.
#[cfg(target_arch = "wasm32")]
fn answer(request: &js_sys::Array) -> Result<(wasm_bindgen::JsValue, String), String> {
    use planner::launch::{bundle, export};
    let text = |i| request.get(i).as_string().unwrap_or_default();
    let plan = planner::Plan::from_query(&text(2)).plan;
    let format = export::Format::from_key(&text(3)).ok_or("unknown format")?;
    let report = planner::estimate::evaluate::evaluate(&plan);
    if text(1) != "zip" {
        let e = export::export_of(&plan, &report, format);
        return Ok((e.code.into(), e.filename));
    }
    if !bundle::readme_parts_loaded() {
        bundle::load_readme_parts(text(5));
    }
    let files = bundle::files_of(&plan, &report, format, &text(4));
    let bytes = js_sys::Uint8Array::from(bundle::zip(&files).as_slice());
    Ok((bytes.into(), String::new()))
}

/// Native builds (clippy, tests) have no worker to be.
#[cfg(not(target_arch = "wasm32"))]
fn main() {}
