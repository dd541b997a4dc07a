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
pub mod summary;

/// Mount the page on `<body>` (called by `main`).
pub fn start() {
    panic::install();
    leptos::mount::mount_to_body(app::App);
}
