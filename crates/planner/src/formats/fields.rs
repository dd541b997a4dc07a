//! Fields separated by tabs, records by newlines: what the page and its
//! worker say to each other (the auto-plan's result, a pasted config.json
//! or measured line read) and the coverage table the page's labels read.
//!
//! Why not JSON: the page's wasm held a JSON reader only for these, and
//! leaving it to the worker took 23 KB gzip off the first load (#59). A
//! field holds no tab and no newline (`field` replaces them with spaces);
//! each reader states the order of its fields, and a test reads each form
//! back to the value it was written from. Messages quote a field with
//! `"{}"`, not `{:?}`: Debug's escaping brings 4 KB gzip of Unicode tables.

use crate::formats::decimal::parse_f64;
use std::fmt::Display;

/// `value` as one field: its tabs and line breaks become spaces.
pub fn field(value: impl Display) -> String {
    value.to_string().replace(['\t', '\n', '\r'], " ")
}

/// An optional number: empty when absent.
pub fn opt_field(value: Option<f64>) -> String {
    value.map(field).unwrap_or_default()
}

/// Fields joined into one record.
pub fn record<I: IntoIterator<Item = String>>(fields: I) -> String {
    fields.into_iter().collect::<Vec<_>>().join("\t")
}

/// The fields of a record (or of a whole table written as one), read in
/// order. A field that is missing or does not read gives a zero value and
/// is remembered: `done` says what went wrong first. (Readers without a
/// `Result` at each field are a third of the size in the page's wasm.)
pub struct Fields<'a> {
    rest: std::str::Split<'a, char>,
    error: Option<String>,
}

impl<'a> Fields<'a> {
    pub fn new(text: &'a str) -> Fields<'a> {
        Fields {
            rest: text.split('\t'),
            error: None,
        }
    }

    fn fail<T>(&mut self, why: String, zero: T) -> T {
        self.error.get_or_insert(why);
        zero
    }

    /// The next field, if there is one.
    pub fn more(&mut self) -> Option<&'a str> {
        self.rest.next()
    }

    /// The next field as written.
    pub fn text(&mut self) -> &'a str {
        match self.rest.next() {
            Some(t) => t,
            None => self.fail("a field is missing".into(), ""),
        }
    }

    pub fn num(&mut self) -> f64 {
        let t = self.text();
        self.number(t)
    }

    /// A number, or nothing where the field is empty.
    pub fn opt_num(&mut self) -> Option<f64> {
        match self.text() {
            "" => None,
            t => Some(self.number(t)),
        }
    }

    fn number(&mut self, t: &str) -> f64 {
        parse_f64(t).unwrap_or_else(|| self.fail(format!("not a number: \"{t}\""), 0.0))
    }

    pub fn whole(&mut self) -> u64 {
        let t = self.text();
        t.parse()
            .unwrap_or_else(|_| self.fail(format!("not a whole number: \"{t}\""), 0))
    }

    /// `1` or `0`.
    pub fn flag(&mut self) -> bool {
        match self.text() {
            "1" => true,
            "0" => false,
            t => self.fail(format!("not 1 or 0: \"{t}\""), false),
        }
    }

    /// A count, then that many items read by `item` (fewer if the fields
    /// run out).
    pub fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> T) -> Vec<T> {
        let n = self.whole();
        let mut out = Vec::new();
        for _ in 0..n {
            if self.error.is_some() {
                break;
            }
            out.push(item(self));
        }
        out
    }

    /// Mark the record as not read, for `why`.
    pub fn refuse(&mut self, why: String) {
        self.fail(why, ());
    }

    /// `value`, read from these fields, if they all read and none follows
    /// the last; else what went wrong first.
    pub fn done<T>(&mut self, value: T) -> Result<T, String> {
        if let Some(t) = self.rest.next() {
            self.fail(format!("a field too many: \"{t}\""), ());
        }
        match self.error.take() {
            None => Ok(value),
            Some(why) => Err(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_what_was_written() {
        let line = record([
            field("a\tb\nc"),
            field(0.1 + 0.2),
            opt_field(None),
            field(u64::MAX),
            field("1"),
            field(2),
            field("x"),
            field("y"),
        ]);
        let mut f = Fields::new(&line);
        assert_eq!(f.text(), "a b c");
        assert_eq!(f.num(), 0.1 + 0.2, "shortest text reads back exactly");
        assert_eq!(f.opt_num(), None);
        assert_eq!(f.whole(), u64::MAX);
        assert!(f.flag());
        assert_eq!(f.list(|f| f.text().to_string()), ["x", "y"]);
        assert_eq!(f.done(()), Ok(()));
        let mut short = Fields::new("1");
        assert_eq!(short.num(), 1.0);
        assert_eq!(short.text(), "", "a missing field reads as empty...");
        assert_eq!(
            short.done(()),
            Err("a field is missing".into()),
            "...and is said"
        );
        assert!(Fields::new("1\t2").done(()).is_err(), "so is one too many");
        let mut bad = Fields::new("2\tx");
        assert!(!bad.flag());
        assert_eq!(bad.num(), 0.0);
        assert_eq!(
            bad.done(()),
            Err("not 1 or 0: \"2\"".into()),
            "the first problem"
        );
        let mut long = Fields::new("1000000000000\ta");
        assert_eq!(
            long.list(|f| f.text().to_string()),
            ["a", ""],
            "stops where the fields end"
        );
    }
}
