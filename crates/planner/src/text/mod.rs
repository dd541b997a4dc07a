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

/// Declares the ids and the English catalog in one list.
macro_rules! catalog {
    ($($(#[$doc:meta])* $id:ident => $en:expr,)*) => {
        /// A user-facing text. The variant's name is its stable id.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Text {
            $($(#[$doc])* $id,)*
        }

        impl Text {
            /// Every id, in catalog order.
            pub const ALL: &'static [Text] = &[$(Text::$id,)*];
        }

        pub(super) fn english(id: Text) -> &'static str {
            match id {
                $(Text::$id => $en,)*
            }
        }
    };
}

mod en;
mod ru;

use en::english;
pub use en::Text;

/// The text of `id` in `lang`, as written in its catalog.
pub fn t(lang: Lang, id: Text) -> &'static str {
    match lang {
        Lang::En => english(id),
        Lang::Ru => ru::russian(id),
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
