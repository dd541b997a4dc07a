//! A phrase as fields (`formats::fields`): how the page's worker says why a
//! pasted config.json or measured line did not read, for the page to render
//! in its language (#59). Its text, then each value as `name kind value…`:
//! `c` count, `n`/`s` number and places, `r` real, `b` bytes, `a` a name,
//! `t` a text. A list of phrases goes as its English text. A text goes as
//! its place in the catalog (the page and its worker are one build): its
//! name would bring the 16 KB table of names into the page.

use super::{t, Arg, Lang, Phrase, Text};
use crate::formats::fields::{field, Fields};

impl Phrase {
    /// The phrase's fields, to be `record`ed.
    pub fn fields(&self) -> Vec<String> {
        let mut out = vec![field(self.id as usize)];
        for (name, arg) in &self.args {
            let value: Vec<String> = match arg {
                Arg::Count(n) => vec!["c".into(), field(n)],
                Arg::Number(x, p) => vec!["n".into(), field(x), field(p)],
                Arg::Signed(x, p) => vec!["s".into(), field(x), field(p)],
                Arg::Real(x) => vec!["r".into(), field(x)],
                Arg::Bytes(b) => vec!["b".into(), field(b)],
                Arg::Name(s) => vec!["a".into(), field(s)],
                Arg::Text(id) => vec!["t".into(), field(*id as usize)],
                Arg::List(..) => vec![
                    "a".into(),
                    field(super::render(
                        Lang::En,
                        &Phrase::of(Text::Verbatim, [("text", arg.clone())]),
                    )),
                ],
            };
            out.push(field(name));
            out.extend(value);
        }
        out
    }

    /// The phrase `fields` wrote, to the end of `f`. A value its template
    /// does not name is left out (it could not be shown).
    pub fn read(f: &mut Fields) -> Result<Phrase, String> {
        let mut p = Phrase::new(text_at(f));
        while let Some(name) = f.more() {
            let arg = match f.text() {
                "c" => Arg::Count(f.whole()),
                "n" => Arg::Number(f.num(), f.whole() as u8),
                "s" => Arg::Signed(f.num(), f.whole() as u8),
                "r" => Arg::Real(f.num()),
                "b" => Arg::Bytes(f.whole()),
                "a" => Arg::from(f.text().to_string()),
                "t" => Arg::Text(text_at(f)),
                k => return Err(format!("no value kind \"{k}\"")),
            };
            if let Some(name) = slot_named(p.id, name) {
                p.args.push((name, arg));
            }
        }
        f.done(p)
    }
}

/// The text at the next field's place in the catalog.
fn text_at(f: &mut Fields) -> Text {
    let at = f.whole();
    Text::ALL.get(at as usize).copied().unwrap_or_else(|| {
        f.refuse(format!("no text {at}"));
        Text::Verbatim
    })
}

/// `name` as the English template of `id` spells it, `{name}` or `{name|…}`
/// (both catalogs name the same values: the catalog tests).
fn slot_named(id: Text, name: &str) -> Option<&'static str> {
    let template = t(Lang::En, id);
    template.match_indices(name).find_map(|(at, _)| {
        let end = at + name.len();
        let open = template[..at].ends_with('{');
        let close = template[end..].starts_with(['}', '|']);
        (open && close).then(|| &template[at..end])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::fields::record;

    #[test]
    fn a_phrase_reads_back_from_its_fields() {
        let p = Phrase::new(Text::ConfigNotJson)
            .with("line", 3u64)
            .with("column", 14u64)
            .with("detail", "expected `,`\tor `}`");
        let text = record(p.fields());
        let back = Phrase::read(&mut Fields::new(&text)).expect("reads");
        let mut want = p.clone();
        want.args[2].1 = Arg::from("expected `,` or `}`");
        assert_eq!(back, want, "a tab in a value becomes a space");
        assert_eq!(back.english(), want.english());
        assert!(Phrase::read(&mut Fields::new("100000")).is_err());
    }
}
