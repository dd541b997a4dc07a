//! Component tests in headless Chromium (wasm-bindgen-test).
#![cfg(target_arch = "wasm32")]

use train_planner_web::app::App;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn document() -> web_sys::Document {
    web_sys::window().unwrap().document().unwrap()
}

/// Mount the page as if opened with `query` (the page keeps its plan in the URL).
fn mount(query: &str) -> web_sys::HtmlElement {
    let w = web_sys::window().unwrap();
    let path = w.location().pathname().unwrap();
    w.history()
        .unwrap()
        .replace_state_with_url(
            &wasm_bindgen::JsValue::NULL,
            "",
            Some(&format!("{path}{query}")),
        )
        .unwrap();
    let host: web_sys::HtmlElement = document().create_element("div").unwrap().unchecked_into();
    document().body().unwrap().append_child(&host).unwrap();
    leptos::mount::mount_to(host.clone(), App).forget();
    host
}

fn find(host: &web_sys::HtmlElement, selector: &str) -> web_sys::Element {
    host.query_selector(selector)
        .unwrap()
        .unwrap_or_else(|| panic!("{selector} exists"))
}

fn text(host: &web_sys::HtmlElement, selector: &str) -> String {
    find(host, selector).text_content().unwrap_or_default()
}

fn type_into(host: &web_sys::HtmlElement, selector: &str, value: &str) {
    let input: web_sys::HtmlInputElement = find(host, selector).unchecked_into();
    input.set_value(value);
    input
        .dispatch_event(&web_sys::Event::new("input").unwrap())
        .unwrap();
}

fn click(host: &web_sys::HtmlElement, selector: &str) {
    let el: web_sys::HtmlElement = find(host, selector).unchecked_into();
    el.click();
}

fn gib(s: &str) -> f64 {
    s.split(" GiB")
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap()
}

#[wasm_bindgen_test]
async fn default_plan_shows_llama_8b_and_a_verdict() {
    let host = mount("?lang=en");
    leptos::task::tick().await;
    // Llama-3.1-8B has 8,030,261,248 parameters (SPEC §3.1).
    assert_eq!(text(&host, "#params"), "8.03 B");
    assert!(
        text(&host, "#verdict").contains("Fits"),
        "{}",
        text(&host, "#verdict")
    );
    assert!(!text(&host, "#tps-gpu").is_empty());
    host.remove();
}

#[wasm_bindgen_test]
async fn longer_sequence_raises_peak_memory() {
    let host = mount("?lang=en");
    leptos::task::tick().await;
    let before = text(&host, "#peak");
    type_into(&host, "#seq", "131072");
    leptos::task::tick().await;
    let after = text(&host, "#peak");
    assert!(
        gib(&after) > 4.0 * gib(&before),
        "131072 tokens need far more than 8192: {before} -> {after}"
    );
    // 8B at 128K without checkpointing does not fit a B200 (activations alone exceed 179 GiB).
    assert!(text(&host, "#verdict").contains("Does not fit"));
    let url = web_sys::window().unwrap().location().search().unwrap();
    assert!(
        url.contains("seq=131072"),
        "the URL follows the plan: {url}"
    );
    host.remove();
}

#[wasm_bindgen_test]
async fn bad_value_shows_message_beside_field_and_keeps_plan() {
    let host = mount("?lang=en");
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

#[wasm_bindgen_test]
async fn russian_translates_labels_and_numbers() {
    let host = mount("?seq=131072&ckpt=full&lang=en");
    leptos::task::tick().await;
    assert!(text(&host, "#verdict").contains("Does not fit"));
    click(&host, "#lang-ru");
    leptos::task::tick().await;
    let v = text(&host, "#verdict");
    assert!(v.contains("Не помещается"), "{v}");
    // Russian decimal comma: "250,1 ГиБ"
    assert!(
        text(&host, "#peak").contains(",") && text(&host, "#peak").contains("ГиБ"),
        "{}",
        text(&host, "#peak")
    );
    assert!(
        text(&host, "#messages").contains("бюджете"),
        "warnings are translated"
    );
    host.remove();
}

#[wasm_bindgen_test]
async fn clicking_a_warning_applies_its_fix() {
    // 8B at 128K with full checkpointing: 187 GiB of plain logits break the budget.
    let host = mount("?seq=131072&ckpt=full&lang=en");
    leptos::task::tick().await;
    assert!(text(&host, "#verdict").contains("Does not fit"));
    click(&host, "li[data-code=over_budget] button.fix");
    leptos::task::tick().await;
    assert!(
        text(&host, "#verdict").contains("Fits"),
        "{}",
        text(&host, "#verdict")
    );
    let url = web_sys::window().unwrap().location().search().unwrap();
    assert!(url.contains("loss=fused"), "{url}");
    host.remove();
}

// A pasted config.json is read by the page's worker, which this runner
// does not serve: e2e/e2e.mjs tests it on the built page (#59).

/// The page's coverage (build.rs's lean fields, six significant digits, the
/// docs-only groups left out) reads whole: a field that did not read would
/// leave every label "derived" without a word (#59).
#[wasm_bindgen_test]
fn the_page_reads_the_coverage_its_labels_quote() {
    use planner::accuracy::coverage::{Coverage, COVERAGE_FIELDS};
    let mut f = planner::formats::fields::Fields::new(COVERAGE_FIELDS);
    let c = Coverage::read(&mut f);
    assert_eq!(f.done(()), Ok(()));
    assert!(c.throughput.rows > 0 && !c.groups.is_empty() && !c.stacks.is_empty());
    assert!(c
        .memory_oracle
        .iter()
        .all(|(g, _)| g.starts_with("sharding=") || g.starts_with("stage=")));
    assert_eq!(planner::accuracy::coverage::shipped(), &c);
}

#[wasm_bindgen_test]
fn crash_message_is_visible_text() {
    train_planner_web::panic::show_crash_message();
    train_planner_web::panic::show_crash_message(); // once only
    let crash = document()
        .get_element_by_id("crash")
        .expect("a visible message");
    assert_eq!(crash.get_attribute("role").as_deref(), Some("alert"));
    assert!(crash
        .text_content()
        .unwrap()
        .contains("Something went wrong"));
    assert_eq!(
        document()
            .body()
            .unwrap()
            .inner_html()
            .matches("id=\"crash\"")
            .count(),
        1
    );
    crash.remove();
}

/// The live summary names why a plan cannot run before any warning (#36:
/// an offload the host cannot hold showed an FP8 hint there instead).
#[wasm_bindgen_test]
async fn live_summary_shows_the_error_first() {
    let host = mount("?model=llama-3.1-70b&impl=megatron&precision=fp8&instance=ml.p6e-gb200.36xlarge&nodes=16&ultraserver=72&zero=3&seq=8192&mb=2&ga=2&fp8_params=1&grad_bf16=1&loss=fused&offload=1&offload_layers=80&lang=en");
    leptos::task::tick().await;
    let live = text(&host, "#live-warning");
    assert!(live.contains("host memory"), "{live}");
    let class = find(&host, "#live-warning")
        .get_attribute("class")
        .unwrap_or_default();
    assert!(class.contains("live-error"), "{class}");
    host.remove();
}
