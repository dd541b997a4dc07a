//! User-facing text, keyed by stable ids, in one catalog per language:
//! `en.rs` (which also declares the ids) and `ru.rs` (an exhaustive match, so
//! a missing translation does not compile). The planner, the page and the
//! CLI look every sentence up here; a translator reads one file per language.
//!
//! Templates name their values in braces, `{gpu}`; `fill` substitutes them in
//! one pass (a value is never re-read as a template) and the tests check that
//! both languages use the same names.

use crate::plan::Lang;
use std::fmt::{Display, Write};
use std::sync::OnceLock;

/// Separates the texts of a packed catalog (never part of a text).
const SEP: char = '\u{1f}';

/// Declares the ids and the English catalog in one list. The texts are packed
/// into one string (smaller in the wasm than a table of string slices).
macro_rules! catalog {
    ($($(#[$doc:meta])* $id:ident => $en:literal,)*) => {
        /// A user-facing text. The variant's name is its stable id.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Text {
            $($(#[$doc])* $id,)*
        }

        impl Text {
            /// Every id, in catalog order.
            pub const ALL: &'static [Text] = &[$(Text::$id,)*];
        }

        pub(super) const ENGLISH: &str = concat!($($en, "\u{1f}",)*);
    };
}

/// The Russian catalog, in the English catalog's order (a test checks the
/// order), packed the same way. The match below is never called: it makes a
/// missing or unknown id a compile error.
macro_rules! translations {
    ($($id:ident => $text:literal,)*) => {
        pub(super) const ORDER: &[super::Text] = &[$(super::Text::$id,)*];
        pub(super) const RUSSIAN: &str = concat!($($text, "\u{1f}",)*);
        #[allow(dead_code)]
        fn exhaustive(id: super::Text) {
            match id {
                $(super::Text::$id => {})*
            }
        }
    };
}

mod en;
mod ru;

pub use en::Text;

/// Where each text of a packed catalog starts and ends.
fn spans(packed: &'static str) -> Vec<(u32, u32)> {
    let mut out = Vec::with_capacity(Text::ALL.len());
    let mut start = 0;
    for (i, c) in packed.char_indices() {
        if c == SEP {
            out.push((start as u32, i as u32));
            start = i + c.len_utf8();
        }
    }
    out
}

fn lookup(packed: &'static str, table: &OnceLock<Vec<(u32, u32)>>, id: Text) -> &'static str {
    let spans = table.get_or_init(|| spans(packed));
    let (a, b) = spans.get(id as usize).copied().unwrap_or((0, 0));
    &packed[a as usize..b as usize]
}

/// The ids in the Russian catalog's order (equal to `Text::ALL`, tested).
pub fn russian_order() -> &'static [Text] {
    ru::ORDER
}

/// The text of `id` in `lang`, as written in its catalog.
pub fn t(lang: Lang, id: Text) -> &'static str {
    static EN: OnceLock<Vec<(u32, u32)>> = OnceLock::new();
    static RU: OnceLock<Vec<(u32, u32)>> = OnceLock::new();
    match lang {
        Lang::En => lookup(en::ENGLISH, &EN, id),
        Lang::Ru => lookup(ru::RUSSIAN, &RU, id),
    }
}

/// The plan's language (English unless it says otherwise).
pub fn lang_of(lang: Option<Lang>) -> Lang {
    lang.unwrap_or(Lang::En)
}

/// The text of `id` in `lang` with each `{name}` replaced by its value.
pub fn fill(lang: Lang, id: Text, args: &[(&str, &dyn Display)]) -> String {
    let template = t(lang, id);
    let mut out = String::with_capacity(template.len() + 16 * args.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after
            .find('}')
            .and_then(|close| Some((close, args.iter().find(|(n, _)| *n == &after[..close])?)));
        match value {
            Some((close, (_, v))) => {
                let _ = write!(out, "{v}");
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The names a template expects, in order of appearance.
pub fn placeholders(template: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close)
                if !after[..close].is_empty()
                    && after[..close]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                names.push(&after[..close]);
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    names
}
