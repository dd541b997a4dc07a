//! A panic hook that logs to the console and replaces the blank page with a
//! visible message and a way back to the default plan.
//!
//! The release build aborts on panic without running the hook (a WebAssembly
//! trap; see `build_release` in `dev`): index.html's error handler then
//! shows the same notice, from the text `install` leaves on the root element.

use planner::model::plan::Lang;
use planner::text::{t, Text};
use wasm_bindgen::JsCast;

pub fn install() {
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&format!("Train Planner panicked: {info}").into());
        show_crash_message();
    }));
    set_crash_text();
}

/// Leave the notice's text on `<html>` for index.html's handler (again once
/// the Russian catalog is loaded).
pub fn set_crash_text() {
    let root = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element());
    if let Some(root) = root {
        root.set_attribute("data-crash", &crash_text()).ok();
    }
}

/// The notice in both languages (the page's language is unknown after a
/// crash); English alone while the Russian catalog is not loaded.
fn crash_text() -> String {
    let en = t(Lang::En, Text::Crashed);
    if planner::text::russian_loaded() {
        format!("{en} / {}", t(Lang::Ru, Text::Crashed))
    } else {
        en.to_string()
    }
}

/// Put a visible "something went wrong" notice at the top of the page
/// (plain text: nothing from the panic is parsed as HTML).
pub fn show_crash_message() {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if doc.get_element_by_id("crash").is_some() {
        return;
    }
    if let Ok(el) = doc.create_element("div") {
        el.set_id("crash");
        el.set_attribute("role", "alert").ok();
        el.set_text_content(Some(&crash_text()));
        if let Some(body) = doc.body() {
            body.prepend_with_node_1(el.unchecked_ref()).ok();
        }
    }
}
