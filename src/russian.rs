//! The Russian catalog is not in the wasm (#14): the page fetches
//! `lang/ru.txt` (a copy of `crates/planner/src/text/ru.txt`) the first time
//! it shows Russian, before mounting when the link or the browser asks for
//! Russian, or when the reader presses RU. Until then, and if the fetch
//! fails, Russian texts read as English.

use crate::ctx::Ctx;
use leptos::prelude::Set;
use planner::model::plan::Plan;
use planner::text::Lang;

/// Where Trunk copies the catalog (index.html).
pub const URL: &str = "lang/ru.txt";

/// Fetch and read the catalog, once.
pub async fn load() -> Result<(), String> {
    if planner::text::russian_loaded() {
        return Ok(());
    }
    let file = crate::browser::fetch_text(URL).await?;
    planner::text::load_russian(&file)?;
    crate::panic::set_crash_text();
    Ok(())
}

/// Whether the page opens in Russian: the link says `lang=ru`, or says no
/// language and the browser prefers Russian.
pub fn wanted_at_start() -> bool {
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    let linked = Plan::from_query(&search).lang;
    linked.unwrap_or_else(crate::browser::browser_lang) == Lang::Ru
}

/// Run `then` once the catalog is loaded: at once if it is, else after
/// fetching it (a failed fetch is logged, and Russian reads as English).
pub fn load_then(then: impl FnOnce() + 'static) {
    if planner::text::russian_loaded() {
        return then();
    }
    wasm_bindgen_futures::spawn_local(async move {
        if let Err(e) = load().await {
            web_sys::console::error_1(&format!("Russian catalog: {e}").into());
        }
        then();
    });
}

/// Switch the page to `lang`, fetching the Russian catalog first if needed.
pub fn switch(ctx: Ctx, lang: Lang) {
    match lang {
        Lang::En => ctx.chosen_lang.set(Some(lang)),
        Lang::Ru => load_then(move || ctx.chosen_lang.set(Some(lang))),
    }
}
