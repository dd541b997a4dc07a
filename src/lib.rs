//! Train Planner's page: turns inputs into a `planner::Plan`, asks the
//! planner for a `Report`, and draws it. No number is computed here.

pub mod app;
pub mod autoplan;
pub mod charts;
pub mod compare;
pub mod export;
pub mod format;
pub mod inputs;
pub mod live;
pub mod measured;
pub mod panic;
pub mod results;
pub mod russian;
pub mod summary;

/// Mount the page on `<body>` (called by `main`); a page that opens in
/// Russian first fetches its catalog.
pub fn start() {
    panic::install();
    if !russian::wanted_at_start() || planner::text::russian_loaded() {
        leptos::mount::mount_to_body(app::App);
        return;
    }
    wasm_bindgen_futures::spawn_local(async {
        if let Err(e) = russian::load().await {
            web_sys::console::error_1(&format!("Russian catalog: {e}").into());
        }
        leptos::mount::mount_to_body(app::App);
    });
}
