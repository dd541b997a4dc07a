//! A panic hook that logs to the console and replaces the blank page with a
//! visible message and a way back to the default plan.

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
        el.set_text_content(Some(
            "Something went wrong and the planner stopped. Reload the page, or open it without the query string to start from the default plan. Details are in the browser console. / Что-то пошло не так: перезагрузите страницу или откройте её без параметров.",
        ));
        if let Some(body) = doc.body() {
            body.prepend_with_node_1(el.unchecked_ref()).ok();
        }
    }
}
