//! What the page asks of the browser: its language, the clipboard and the
//! site's own files.

use planner::model::plan::Lang;
use wasm_bindgen::JsCast;

/// The browser's preferred language, when the link does not say.
pub fn browser_lang() -> Lang {
    let nav = web_sys::window().map(|w| w.navigator());
    let l = nav.and_then(|n| n.language()).unwrap_or_default();
    if l.to_ascii_lowercase().starts_with("ru") {
        Lang::Ru
    } else {
        Lang::En
    }
}

/// Copy through a temporary textarea where the Clipboard API is refused.
pub fn copy_fallback(text: &str) -> bool {
    use wasm_bindgen::JsCast;
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return false;
    };
    let Ok(el) = doc.create_element("textarea") else {
        return false;
    };
    let area: web_sys::HtmlTextAreaElement = el.unchecked_into();
    area.set_value(text);
    let Some(body) = doc.body() else { return false };
    if body.append_child(&area).is_err() {
        return false;
    }
    area.select();
    let html: &web_sys::HtmlDocument = doc.unchecked_ref();
    let ok = html.exec_command("copy").unwrap_or(false);
    area.remove();
    ok
}

/// A file of the site, as text.
pub async fn fetch_text(url: &str) -> Result<String, String> {
    use wasm_bindgen_futures::JsFuture;
    let window = web_sys::window().ok_or("no window")?;
    let failed = |e: wasm_bindgen::JsValue| {
        format!(
            "{url}: {}",
            js_sys::JSON::stringify(&e)
                .map(String::from)
                .unwrap_or_default()
        )
    };
    let response: web_sys::Response = JsFuture::from(window.fetch_with_str(url))
        .await
        .map_err(failed)?
        .unchecked_into();
    if !response.ok() {
        return Err(format!("{url}: HTTP {}", response.status()));
    }
    let text = JsFuture::from(response.text().map_err(failed)?)
        .await
        .map_err(failed)?;
    text.as_string().ok_or_else(|| format!("{url}: not text"))
}

/// Milliseconds since the page started (`performance.now()`), or 0.
pub fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

/// Save `bytes` as the file `name` through a temporary object URL.
pub fn download_bytes(name: &str, bytes: &[u8], mime: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &opts) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    if let Ok(el) = doc.create_element("a") {
        let a: web_sys::HtmlAnchorElement = el.unchecked_into();
        a.set_href(&url);
        a.set_download(name);
        a.click();
    }
    web_sys::Url::revoke_object_url(&url).ok();
}
