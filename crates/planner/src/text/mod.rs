//! User-facing text, keyed by stable ids, in one catalog per language:
//! `en.rs` (which also declares the ids) and `ru.txt` (the same ids in the
//! same order, each with its translation; the catalog tests catch a missing,
//! extra or misplaced one). The planner, the page and the CLI look every
//! sentence up here; a translator reads one file per language.
//!
//! The CLI and the tests compile `ru.txt` in (feature `bundled-ru`, on by
//! default). The page leaves it out and fetches it the first time it shows
//! Russian (`load_russian`): English readers do not download it (#14).
//!
//! Templates name their values in braces, `{gpu}`; `fill` substitutes them in
//! one pass (a value is never re-read as a template) and the tests check that
//! both languages use the same names.

use serde::Serialize;
use std::fmt::Display;
use std::sync::OnceLock;

/// The languages with a catalog (the URL's `lang=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Lang {
    En,
    Ru,
}

impl Lang {
    pub const ALL: &'static [Lang] = &[Lang::En, Lang::Ru];
    /// The value used in the URL.
    pub fn key(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Ru => "ru",
        }
    }
    pub fn from_key(s: &str) -> Option<Self> {
        Lang::ALL.iter().copied().find(|l| l.key() == s)
    }
    /// The accepted values, for messages.
    pub fn keys() -> String {
        "en, ru".to_string()
    }
}

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

            /// The stable id as a string (the JSON reports' `id`).
            pub fn name(self) -> &'static str {
                const NAMES: &[&str] = &[$(stringify!($id),)*];
                NAMES[self as usize]
            }
        }

        pub(super) const ENGLISH: &str = concat!($($en, "\u{1f}",)*);
    };
}

mod en;
mod fields;
mod message;

pub use en::Text;
pub use message::{render, render_all, Arg, Join, Message, Phrase};
pub use message::{said, said_each};

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

/// The Russian catalog as the CLI and the tests compile it in.
#[cfg(feature = "bundled-ru")]
pub const RUSSIAN_CATALOG: &str = include_str!("ru.txt");

/// The Russian texts, in `Text::ALL` order, once read.
static RUSSIAN: OnceLock<Vec<String>> = OnceLock::new();

/// Each entry of a catalog file: its id and its text. Lines are
/// `Id => "text",` (a `\"` inside is a quote); `//` lines and blank lines
/// are skipped.
pub fn parse_catalog(file: &str) -> Result<Vec<(&str, String)>, String> {
    let mut out = Vec::new();
    for (n, line) in file.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let entry = line
            .split_once(" => \"")
            .and_then(|(id, rest)| Some((id, rest.strip_suffix("\",")?)));
        let (id, text) = entry.ok_or_else(|| format!("line {}: not `Id => \"text\",`", n + 1))?;
        out.push((id, text.replace("\\\"", "\"")));
    }
    Ok(out)
}

/// Read the Russian catalog (`ru.txt`, as the page fetches it). It must
/// list as many texts as there are ids; the tests check their order.
pub fn load_russian(file: &str) -> Result<(), String> {
    let texts: Vec<String> = parse_catalog(file)?.into_iter().map(|(_, t)| t).collect();
    if texts.len() != Text::ALL.len() {
        return Err(format!("{} texts for {} ids", texts.len(), Text::ALL.len()));
    }
    let _ = RUSSIAN.set(texts);
    Ok(())
}

fn russian() -> Option<&'static [String]> {
    #[cfg(feature = "bundled-ru")]
    if RUSSIAN.get().is_none() {
        load_russian(RUSSIAN_CATALOG).expect("ru.txt reads (tested)");
    }
    RUSSIAN.get().map(Vec::as_slice)
}

/// Whether Russian can be shown (always, where the catalog is compiled in).
pub fn russian_loaded() -> bool {
    russian().is_some()
}

/// The text of `id` in `lang`, as written in its catalog. Russian that is
/// not loaded yet reads as English.
pub fn t(lang: Lang, id: Text) -> &'static str {
    static EN: OnceLock<Vec<(u32, u32)>> = OnceLock::new();
    let english = || lookup(en::ENGLISH, &EN, id);
    match lang {
        Lang::En => english(),
        Lang::Ru => russian()
            .and_then(|texts| texts.get(id as usize))
            .map_or_else(english, String::as_str),
    }
}

/// The text of `id` in `lang` with each `{name}` replaced by its value.
pub fn fill(lang: Lang, id: Text, args: &[(&'static str, &dyn Display)]) -> String {
    let args = args.iter().map(|(n, v)| (*n, Arg::from(v.to_string())));
    render(lang, &Phrase::of(id, args))
}

/// The plural form of `n` among `forms` (`one|other` in English,
/// `one|few|many` in Russian, by CLDR's rules for whole numbers); a missing
/// form falls back to the last one given.
pub fn plural(lang: Lang, n: u64, forms: &str) -> &str {
    let index = match lang {
        Lang::En => usize::from(n != 1),
        Lang::Ru => match (n % 10, n % 100) {
            (1, h) if h != 11 => 0,
            (2..=4, h) if !(12..=14).contains(&h) => 1,
            _ => 2,
        },
    };
    let forms: Vec<&str> = forms.split('|').collect();
    forms[index.min(forms.len() - 1)]
}

/// The names a template expects, in order of appearance (a plural slot
/// `{n|one|other}` names `n`).
pub fn placeholders(template: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let slot = after.find('}').map(|close| {
            let name = after[..close].split('|').next().unwrap_or("");
            (close, name)
        });
        match slot {
            Some((close, name))
                if !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                names.push(name);
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    names
}

/// A number with `decimals` places and the language's separators: en
/// `12,345.6`, ru `12 345,6` (narrow no-break space, decimal comma), so a
/// sentence of the model reads as the page's figures beside it (#24).
pub fn num(x: f64, decimals: usize, lang: Lang) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    let s = format!("{:.*}", decimals, x.abs());
    let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
    let (group, point) = match lang {
        Lang::Ru => ('\u{202f}', ','),
        Lang::En => (',', '.'),
    };
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(group);
        }
        out.push(c);
    }
    if !frac.is_empty() {
        out.push(point);
        out.push_str(frac);
    }
    if x < 0.0 && out.chars().any(|c| c.is_ascii_digit() && c != '0') {
        format!("−{out}")
    } else {
        out
    }
}

/// As `num`, with a sign either way (`+1.5`, `−0.8`): errors in a note.
pub fn signed(x: f64, decimals: usize, lang: Lang) -> String {
    let n = num(x, decimals, lang);
    if n.starts_with('−') || !x.is_finite() {
        n
    } else {
        format!("+{n}")
    }
}
