//! Component tests in headless Chromium (wasm-bindgen-test).
#![cfg(target_arch = "wasm32")]

use train_planner_web::app::App;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn document() -> web_sys::Document {
    web_sys::window().unwrap().document().unwrap()
}

fn mount() -> web_sys::HtmlElement {
    // Each test starts from the default plan: the page keeps its plan in the URL.
    let w = web_sys::window().unwrap();
    let path = w.location().pathname().unwrap();
    w.history()
        .unwrap()
        .replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&path))
        .unwrap();
    let host: web_sys::HtmlElement = document().create_element("div").unwrap().unchecked_into();
    document().body().unwrap().append_child(&host).unwrap();
    let handle = leptos::mount::mount_to(host.clone(), App);
    handle.forget();
    host
}

fn text(host: &web_sys::HtmlElement, selector: &str) -> String {
    host.query_selector(selector)
        .unwrap()
        .unwrap_or_else(|| panic!("{selector} exists"))
        .text_content()
        .unwrap_or_default()
}

fn type_into(host: &web_sys::HtmlElement, selector: &str, value: &str) {
    let input: web_sys::HtmlInputElement = host
        .query_selector(selector)
        .unwrap()
        .unwrap()
        .unchecked_into();
    input.set_value(value);
    let ev = web_sys::Event::new("input").unwrap();
    input.dispatch_event(&ev).unwrap();
}

#[wasm_bindgen_test]
async fn default_plan_shows_llama_8b_and_a_verdict() {
    let host = mount();
    leptos::task::tick().await;
    // Llama-3.1-8B has 8,030,261,248 parameters (SPEC §3.1).
    assert_eq!(text(&host, "#params"), "8.03 B");
    assert!(
        text(&host, "#verdict").starts_with("Fits"),
        "{}",
        text(&host, "#verdict")
    );
    host.remove();
}

#[wasm_bindgen_test]
async fn longer_sequence_raises_peak_memory() {
    let host = mount();
    leptos::task::tick().await;
    let before = text(&host, "#peak");
    type_into(&host, "#seq", "131072");
    leptos::task::tick().await;
    let after = text(&host, "#peak");
    assert_ne!(
        before, after,
        "the peak must change with the sequence length"
    );
    let gib = |s: &str| s.split(" GiB").next().unwrap().parse::<f64>().unwrap();
    assert!(
        gib(&after) > 4.0 * gib(&before),
        "131072 tokens need far more than 8192: {before} -> {after}"
    );
    // 8B at 128K without checkpointing does not fit a B200 (activations alone exceed 179 GiB).
    assert!(text(&host, "#verdict").starts_with("Does not fit"));
    host.remove();
}

#[wasm_bindgen_test]
async fn bad_value_shows_message_beside_field_and_keeps_plan() {
    let host = mount();
    leptos::task::tick().await;
    let before = text(&host, "#peak");
    type_into(&host, "#mb", "0");
    leptos::task::tick().await;
    let msg = text(&host, "#mb-error");
    assert!(msg.contains("mb"), "message names the key: {msg}");
    assert_eq!(
        text(&host, "#peak"),
        before,
        "the rest of the plan keeps working"
    );
    host.remove();
}
