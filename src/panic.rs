//! A panic hook that logs to the console and replaces the blank page with a
//! visible message and a way back to the default plan.

use planner::plan::Lang;
use planner::text::{t, Text};
use wasm_bindgen::JsCast;

pub fn install() {
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&format!("Train Planner panicked: {info}").into());
        show_crash_message();
    }));
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
        // The page's language is unknown here: both, as the catalogs have them.
        let text = format!(
            "{} / {}",
            t(Lang::En, Text::Crashed),
            t(Lang::Ru, Text::Crashed)
        );
        el.set_text_content(Some(&text));
        if let Some(body) = doc.body() {
            body.prepend_with_node_1(el.unchecked_ref()).ok();
        }
    }
}
