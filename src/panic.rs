//! A panic hook that logs to the console and replaces the blank page with a
//! visible message and a way back to the default plan.

use wasm_bindgen::JsCast;

pub fn install() {
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&format!("Train Planner panicked: {info}").into());
        let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
            return;
        };
        if let Ok(el) = doc.create_element("div") {
            el.set_id("crash");
            el.set_attribute("role", "alert").ok();
            // Plain text only: nothing from the panic message is parsed as HTML.
            el.set_text_content(Some(
                "Something went wrong and the planner stopped. Reload the page, or open it without the query string to start from the default plan. Details are in the browser console.",
            ));
            if let Some(body) = doc.body() {
                body.prepend_with_node_1(el.unchecked_ref()).ok();
            }
        }
    }));
}
