//! Train Planner's page: turns inputs into a `planner::Plan`, asks the
//! planner for a `Report`, and draws it. No number is computed here.

pub mod app;
pub mod browser;
pub mod ctx;
pub mod format;
pub mod panels;
pub mod panic;
pub mod russian;
pub mod worker;

/// Mount the page on `<body>` (called by `main`); a page that opens in
/// Russian first fetches its catalog.
pub fn start() {
    panic::install();
    let mount = || leptos::mount::mount_to_body(app::App);
    if russian::wanted_at_start() {
        russian::load_then(mount);
    } else {
        mount();
    }
}
