//! The named architectures compiled in from data/models.json, and the
//! suggestions for a mistyped name.

use super::types::*;
use serde::Serialize;

/// A named architecture with its source.
#[derive(Clone, Debug, Serialize)]
pub struct Preset {
    pub id: &'static str,
    pub name: &'static str,
    /// The Hugging Face Hub repository of the weights (what train.py loads).
    pub hub: &'static str,
    /// Where the shape comes from (left out of the page's copy of the data).
    pub source: &'static str,
    #[serde(flatten)]
    pub arch: Architecture,
}

// `PRESETS`: data/models.json as Rust values, written by build.rs
// (`presets_code`): the page parses no JSON for them.
include!(concat!(env!("OUT_DIR"), "/presets.rs"));

/// Every preset of `data/models.json`, compiled in.
pub fn presets() -> &'static [Preset] {
    PRESETS
}

/// The preset with this id, if any.
pub fn preset(id: &str) -> Option<&'static Preset> {
    presets().iter().find(|p| p.id == id)
}

/// Presets whose id is closest to what a user typed (`mistral-7b`,
/// `llama3-70b`): ids compared without case or punctuation, a contained name
/// first, else the smallest edit distance (at most a third of the name).
pub fn suggest_presets(typed: &str) -> Vec<&'static str> {
    let norm = |s: &str| -> Vec<char> {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let want = norm(typed);
    if want.len() < 3 {
        return Vec::new();
    }
    let mut scored: Vec<(usize, &'static str)> = presets()
        .iter()
        .map(|p| {
            let id = norm(p.id);
            let contains = id.windows(want.len()).any(|w| w == want.as_slice());
            (
                if contains {
                    0
                } else {
                    edit_distance(&want, &id)
                },
                p.id,
            )
        })
        .filter(|(d, _)| *d <= (want.len() / 3).max(2))
        .collect();
    scored.sort();
    let best = scored.first().map_or(0, |(d, _)| *d);
    scored
        .into_iter()
        .take_while(|(d, _)| *d == best)
        .take(3)
        .map(|(_, id)| id)
        .collect()
}

/// Edit distance with insertions and deletions (a substitution is one of each).
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            // A changed character costs two (one out, one in): a name typed
            // short ("llama3-70b") is nearer its preset than a neighbour that
            // differs in a digit (llama-2-70b).
            row[j + 1] = (prev + 2 * usize::from(ca != cb))
                .min(row[j] + 1)
                .min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod preset_tests {
    use super::*;
    use crate::formats::json::FromJson;

    /// build.rs writes the presets as Rust values; the reader every other
    /// shape goes through (`FromJson`) reads the same file to the same
    /// values, field by field.
    #[test]
    fn static_presets_match_the_file() {
        let text = include_str!("../../../data/models.json");
        let file = crate::formats::json::parse(text).expect("models.json parses");
        let entries = file.as_array().expect("an array");
        assert_eq!(entries.len(), PRESETS.len());
        for (j, p) in entries.iter().zip(PRESETS) {
            let text = |k: &str| {
                j.get(k)
                    .and_then(crate::formats::json::Json::as_str)
                    .unwrap_or("")
            };
            let strings = (p.id, p.name, p.hub, p.source);
            assert_eq!(
                strings,
                (text("id"), text("name"), text("hub"), text("source"))
            );
            assert_eq!(
                p.arch,
                Architecture::from_json(j).expect("a shape"),
                "{}",
                p.id
            );
        }
    }
}
