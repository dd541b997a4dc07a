//! The page's worker (src/bin/export_worker.rs) as the page sees it. The
//! launchers, the Megatron-Bridge settings, the ZIP writer and the
//! auto-plan's search live in that worker's wasm, not in the page's (#59:
//! the first verdict does not need them), and so does the JSON reader of a
//! pasted config.json or measured line: the code panel or the auto-plan
//! starts it when it first comes into view (a paste, when it is read), asks
//! it for each plan's code, the bundle, the search and what a paste says,
//! and keeps only the reply to its latest question of each kind.

use leptos::prelude::*;
use planner::estimate::search::{wire, Baseline, SearchResult};
use planner::launch::export::Format;
use wasm_bindgen::{closure::Closure, JsCast, JsValue};

/// The worker's loader (index.html copies it next to the worker's files).
const LOADER: &str = "export/loader.js";

/// The code panel's launch code.
#[derive(Clone, PartialEq)]
pub enum Code {
    /// Asked for, not written yet (the worker is loading).
    Writing,
    Written {
        code: String,
        filename: String,
    },
    /// The worker could not load, or refused the plan.
    Failed(String),
}

/// What the worker reads for the page (it holds the JSON reader; the
/// page's wasm does not).
#[derive(Clone, Copy)]
pub enum Read {
    /// A pasted config.json (`planner::model::plan::config_reply`).
    Config,
    /// A pasted measured line (`planner::runs::measured::line_reply`).
    Measured,
}

/// The auto-plan's search as the worker last answered it.
#[derive(Clone, PartialEq)]
pub enum Searched {
    /// Asked for; how far the worker got, where it said.
    Searching(Option<f64>),
    /// The result, and the milliseconds from the question to the answer.
    Found(Box<SearchResult>, f64),
    /// The worker could not load, or the answer did not read.
    Failed(String),
}

/// The worker, its readiness, and the questions it has not answered.
#[derive(Clone, Copy)]
pub struct Worker {
    worker: StoredValue<Option<web_sys::Worker>, LocalStorage>,
    ready: StoredValue<bool>,
    /// The latest search, code, bundle and read questions asked before
    /// the worker was ready, in the order it answers them: the auto-plan
    /// sits above the code panel, and its search is the longer wait.
    waiting: StoredValue<[Option<js_sys::Array>; 5], LocalStorage>,
    asked: StoredValue<u32>,
    /// The latest code question's id, and the bundle's with its file name.
    code_id: StoredValue<u32>,
    zip: StoredValue<Option<(u32, String)>>,
    /// The latest search's id, the user's plan it compares with, and when
    /// the worker got it (ms).
    search_id: StoredValue<(u32, Option<Baseline>, f64)>,
    /// The latest id of each `Read`.
    read_ids: StoredValue<[u32; 2]>,
    pub code: RwSignal<Code>,
    pub zip_error: RwSignal<Option<String>>,
    pub searched: RwSignal<Searched>,
    /// The reply to the latest question of each `Read` (the text it
    /// read back, or `!` and why the worker failed: `failure`); `None`
    /// until it comes. (One more signal type would cost the page 1 KB.)
    pub read: [RwSignal<Option<String>>; 2],
}

impl Default for Worker {
    fn default() -> Self {
        Worker {
            worker: StoredValue::new_local(None),
            ready: StoredValue::new(false),
            waiting: StoredValue::new_local(Default::default()),
            asked: StoredValue::new(0),
            code_id: StoredValue::new(0),
            zip: StoredValue::new(None),
            search_id: StoredValue::new((0, None, 0.0)),
            read_ids: StoredValue::new([0; 2]),
            code: RwSignal::new(Code::Writing),
            zip_error: RwSignal::new(None),
            searched: RwSignal::new(Searched::Searching(None)),
            read: [RwSignal::new(None), RwSignal::new(None)],
        }
    }
}

impl Worker {
    /// Load the worker (once).
    pub fn start(self) {
        if self.worker.with_value(Option::is_some) {
            return;
        }
        let worker = match web_sys::Worker::new(LOADER) {
            Ok(w) => w,
            Err(e) => {
                self.searched.set(Searched::Failed(describe(&e)));
                return self.code.set(Code::Failed(describe(&e)));
            }
        };
        let on_message =
            Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
                self.receive(e.data().unchecked_into())
            });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        on_message.forget();
        let on_error =
            Closure::<dyn Fn(web_sys::ErrorEvent)>::new(move |e: web_sys::ErrorEvent| {
                let failed = format!("{LOADER}: {}", e.message());
                self.code.set(Code::Failed(failed.clone()));
                self.zip_error.set(Some(failed.clone()));
                for read in self.read {
                    read.set(Some(format!("!{failed}")));
                }
                self.searched.set(Searched::Failed(failed));
            });
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        on_error.forget();
        self.worker.set_value(Some(worker));
    }

    /// Ask for the launch code of the plan `query` in `format`.
    pub fn ask_code(self, query: &str, format: Format) {
        let id = self.send(
            1,
            "code",
            query,
            [format.key().into(), JsValue::NULL, JsValue::NULL],
        );
        self.code_id.set_value(id);
    }

    /// Ask for the bundle around `script`, saved as `name` when it comes.
    pub fn ask_zip(
        self,
        query: &str,
        launcher: Format,
        script: String,
        parts: String,
        name: String,
    ) {
        let id = self.send(
            2,
            "zip",
            query,
            [launcher.key().into(), script.into(), parts.into()],
        );
        self.zip.set_value(Some((id, name)));
    }

    /// Ask for the auto-plan around the plan `query`, whose report on the
    /// page gives `base`.
    pub fn ask_search(self, query: &str, base: Baseline) {
        // The worker resolves the plan, and compares with the page's report.
        let usd = base.usd.map_or(JsValue::NULL, JsValue::from);
        let id = self.send(
            0,
            "search",
            query,
            [base.hours.into(), usd, base.fits.into()],
        );
        self.search_id
            .set_value((id, Some(base), crate::browser::now_ms()));
        // Already searching: nothing on the page changes.
        if self
            .searched
            .with_untracked(|s| *s != Searched::Searching(None))
        {
            self.searched.set(Searched::Searching(None));
        }
    }

    /// Ask the worker (started if it was not) to read `text`.
    pub fn ask_read(self, what: Read, text: &str) {
        self.start();
        let kind = match what {
            Read::Config => "config",
            Read::Measured => "measured",
        };
        let rest = [JsValue::NULL, JsValue::NULL, JsValue::NULL];
        let id = self.send(3 + what as usize, kind, text, rest);
        self.read_ids.update_value(|ids| ids[what as usize] = id);
        self.read[what as usize].set(None);
    }

    /// Post (or keep until the worker is ready) `[id, kind, query, ..rest]`
    /// in `slot`: a format, a script and the README parts, or the user's
    /// baseline, as `kind` needs.
    fn send(self, slot: usize, kind: &str, query: &str, rest: [JsValue; 3]) -> u32 {
        self.asked.update_value(|n| *n += 1);
        let id = self.asked.get_value();
        let request = js_sys::Array::of3(&id.into(), &kind.into(), &query.into());
        for s in rest {
            request.push(&s);
        }
        if self.ready.get_value() {
            self.post(&request);
        } else {
            self.waiting.update_value(|w| w[slot] = Some(request));
        }
        id
    }

    fn post(self, request: &js_sys::Array) {
        self.worker
            .with_value(|w| w.as_ref().map(|w| w.post_message(request)));
    }

    /// A reply: `["ready"]`, or an answer to a question (the module doc of
    /// src/bin/export_worker.rs), kept only if it is the latest.
    fn receive(self, reply: js_sys::Array) {
        if reply.get(0).as_string().as_deref() == Some("ready") {
            self.ready.set_value(true);
            let waiting = self
                .waiting
                .try_update_value(std::mem::take)
                .unwrap_or_default();
            waiting.iter().flatten().for_each(|r| self.post(r));
            // A search's time runs from when the worker has it.
            self.search_id
                .update_value(|(_, _, asked)| *asked = crate::browser::now_ms());
            return;
        }
        if reply.get(0).as_string().as_deref() == Some("progress") {
            if reply.get(1).as_f64() == Some(f64::from(self.search_id.get_value().0)) {
                self.searched
                    .set(Searched::Searching(reply.get(2).as_f64()));
            }
            return;
        }
        let id = reply.get(0).as_f64().unwrap_or(-1.0) as u32;
        let ok = reply.get(1).is_truthy();
        self.receive_search(id, ok, &reply);
        let ids = self.read_ids.get_value();
        for (read, _) in self.read.iter().zip(ids).filter(|(_, i)| *i == id) {
            let text = reply.get(2).as_string().unwrap_or_default();
            read.set(Some(if ok { text } else { format!("!{text}") }));
        }
        if id == self.code_id.get_value() {
            self.code.set(match ok {
                true => Code::Written {
                    code: reply.get(2).as_string().unwrap_or_default(),
                    filename: reply.get(3).as_string().unwrap_or_default(),
                },
                false => Code::Failed(reply.get(2).as_string().unwrap_or_default()),
            });
        }
        if let Some((_, name)) = self.zip.get_value().filter(|(z, _)| *z == id) {
            self.zip.set_value(None);
            match ok {
                true => {
                    let bytes = js_sys::Uint8Array::new(&reply.get(2)).to_vec();
                    crate::browser::download_bytes(&name, &bytes, "application/zip");
                    self.zip_error.set(None);
                }
                false => self.zip_error.set(reply.get(2).as_string()),
            }
        }
    }
}

impl Worker {
    /// A reply to the latest search: its result put back together against
    /// the user's plan it was asked with (`wire::decode`).
    fn receive_search(self, id: u32, ok: bool, reply: &js_sys::Array) {
        let (latest, base, asked) = self.search_id.get_value();
        let (Some(base), true) = (base, id == latest) else {
            return;
        };
        let text = reply.get(2).as_string().unwrap_or_default();
        let ms = crate::browser::now_ms() - asked;
        self.searched.set(match ok {
            true => match wire::decode(&text, &base) {
                Ok(r) => Searched::Found(Box::new(r), ms),
                Err(e) => Searched::Failed(e),
            },
            false => Searched::Failed(text),
        });
    }
}

/// Why the worker could not read, if `reply` says so (`Worker::read`),
/// said as it is.
pub fn failure(reply: &str) -> Option<planner::text::Phrase> {
    let failed = reply.strip_prefix('!')?;
    Some(planner::text::Phrase::verbatim(failed.to_string()))
}

/// Call `then` once, when `el` first comes within 600 px of the viewport
/// (at once where the browser cannot tell).
pub fn when_near_view(el: &web_sys::Element, then: impl Fn() + 'static) {
    let then = std::rc::Rc::new(then);
    let call = then.clone();
    let seen = Closure::<dyn Fn(js_sys::Array, web_sys::IntersectionObserver)>::new(
        move |entries: js_sys::Array, observer: web_sys::IntersectionObserver| {
            let near = entries.iter().any(|e| {
                e.unchecked_into::<web_sys::IntersectionObserverEntry>()
                    .is_intersecting()
            });
            if near {
                observer.disconnect();
                call();
            }
        },
    );
    let options = web_sys::IntersectionObserverInit::new();
    options.set_root_margin("600px");
    match web_sys::IntersectionObserver::new_with_options(seen.as_ref().unchecked_ref(), &options) {
        Ok(observer) => observer.observe(el),
        Err(_) => then(),
    }
    seen.forget();
}

fn describe(e: &JsValue) -> String {
    js_sys::JSON::stringify(e)
        .map(String::from)
        .unwrap_or_default()
}
