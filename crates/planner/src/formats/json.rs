//! A small JSON reader for what users paste, a `config.json` and a measured
//! line (read in the page's worker and by the CLI; the page's own wasm holds
//! no JSON reader, #59: the tables it needs are compiled in as Rust values
//! or as `fields`). serde_json's typed deserializers were about a tenth of
//! the page's wasm (#14); serde_json stays for the CLI's JSON output and the
//! tests.
//!
//! `parse` follows RFC 8259 (numbers are read as f64). Typed values come out
//! through [`FromJson`]: `req` for a field that must be there, `opt` for one
//! that may be absent or `null`.

use std::fmt::{self, Display, Write};

/// A parsed JSON value. Objects keep their keys in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

/// Where and why a text is not JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    pub line: usize,
    pub column: usize,
    pub what: &'static str,
}

impl Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at line {} column {}",
            self.what, self.line, self.column
        )
    }
}

/// Lists and objects nested deeper than this are refused rather than
/// recursed into (serde_json's limit: 127 levels read, the 128th refused).
const MAX_DEPTH: usize = 127;

/// Parse a whole text as one JSON value.
pub fn parse(text: &str) -> Result<Json, Error> {
    let mut p = Parser { text, i: 0 };
    p.skip_space();
    let v = p.value(0)?;
    p.skip_space();
    if p.i < text.len() {
        return Err(p.error("trailing characters"));
    }
    Ok(v)
}

struct Parser<'a> {
    text: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.i).copied()
    }

    /// An error at the current place (the start of its character, if the
    /// place is inside a multi-byte one).
    fn error(&self, what: &'static str) -> Error {
        let mut end = self.i.min(self.text.len());
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let before = &self.text[..end];
        let line_start = before.rfind('\n').map_or(0, |n| n + 1);
        Error {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
            what,
        }
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, Error> {
        if depth >= MAX_DEPTH && matches!(self.peek(), Some(b'{' | b'[')) {
            return Err(self.error("nested too deeply"));
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Json::Str),
            Some(b't') => self.word("true", Json::Bool(true)),
            Some(b'f') => self.word("false", Json::Bool(false)),
            Some(b'n') => self.word("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            None => Err(self.error("EOF while parsing a value")),
            Some(_) => Err(self.error("expected value")),
        }
    }

    fn word(&mut self, word: &str, v: Json) -> Result<Json, Error> {
        if self.text[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.error("expected value"))
        }
    }

    /// After a member or an element: `,` goes on, `close` ends.
    fn next_or_end(&mut self, close: u8, what: &'static str) -> Result<bool, Error> {
        self.skip_space();
        match self.peek() {
            Some(b',') => {
                self.i += 1;
                self.skip_space();
                Ok(true)
            }
            Some(c) if c == close => {
                self.i += 1;
                Ok(false)
            }
            None => Err(self.error("EOF while parsing a list or an object")),
            Some(_) => Err(self.error(what)),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, Error> {
        self.i += 1;
        self.skip_space();
        let mut members = Vec::new();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(Json::Obj(members));
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(self.error("key must be a string"));
            }
            let key = self.string()?;
            self.skip_space();
            if self.peek() != Some(b':') {
                return Err(self.error("expected `:`"));
            }
            self.i += 1;
            self.skip_space();
            members.push((key, self.value(depth + 1)?));
            if !self.next_or_end(b'}', "expected `,` or `}`")? {
                return Ok(Json::Obj(members));
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, Error> {
        self.i += 1;
        self.skip_space();
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(Json::Arr(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            if !self.next_or_end(b']', "expected `,` or `]`")? {
                return Ok(Json::Arr(items));
            }
        }
    }

    fn string(&mut self) -> Result<String, Error> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while matches!(self.peek(), Some(c) if c != b'"' && c != b'\\' && c >= 0x20) {
                self.i += 1;
            }
            out.push_str(&self.text[start..self.i]);
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    out.push(self.escape()?);
                }
                None => return Err(self.error("EOF while parsing a string")),
                Some(_) => return Err(self.error("control character in a string")),
            }
        }
    }

    /// The character after a backslash (`\n`, `\u00e9`, a surrogate pair).
    fn escape(&mut self) -> Result<char, Error> {
        let c = self
            .peek()
            .ok_or_else(|| self.error("EOF while parsing a string"))?;
        self.i += 1;
        Ok(match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => self.unicode_escape()?,
            _ => return Err(self.error("invalid escape")),
        })
    }

    /// `\uXXXX`, or a UTF-16 surrogate pair `\uD83D\uDE00`; a lone
    /// surrogate is an error, as in serde_json (RFC 8259 leaves it open).
    fn unicode_escape(&mut self) -> Result<char, Error> {
        let hi = self.hex4()?;
        let code = match hi {
            0xD800..=0xDBFF => {
                if !self.text[self.i..].starts_with("\\u") {
                    return Err(self.error("lone leading surrogate in a unicode escape"));
                }
                self.i += 2;
                let lo = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&lo) {
                    return Err(self.error("invalid surrogate pair in a unicode escape"));
                }
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            }
            _ => hi,
        };
        char::from_u32(code)
            .ok_or_else(|| self.error("lone trailing surrogate in a unicode escape"))
    }

    /// Exactly four hex digits (no sign: `u32::from_str_radix` takes `+041`).
    fn hex4(&mut self) -> Result<u32, Error> {
        let digits = self.text.as_bytes().get(self.i..self.i + 4);
        let v = match digits {
            Some(d) if d.iter().all(u8::is_ascii_hexdigit) => d
                .iter()
                .fold(0, |v, &c| v * 16 + (c as char).to_digit(16).unwrap_or(0)),
            _ => return Err(self.error("invalid unicode escape")),
        };
        self.i += 4;
        Ok(v)
    }

    /// RFC 8259's `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`,
    /// read as the nearest f64 (`decimal::parse_f64`, correctly rounded).
    fn number(&mut self) -> Result<Json, Error> {
        let start = self.i;
        if !self.number_grammar() {
            return Err(self.error("invalid number"));
        }
        match crate::formats::decimal::parse_f64(&self.text[start..self.i]) {
            Some(x) if x.is_finite() => Ok(Json::Num(x)),
            _ => Err(self.error("number out of range")),
        }
    }

    /// Steps over one number; false (where it stops) if it breaks the grammar.
    fn number_grammar(&mut self) -> bool {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.i += 1;
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return false; // no leading zeros
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return false,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !self.digits() {
                return false;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !self.digits() {
                return false;
            }
        }
        true
    }

    /// Steps over `[0-9]*`; whether there was at least one.
    fn digits(&mut self) -> bool {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i > start
    }
}

impl Json {
    /// An object's member; of repeated keys the last, as serde_json, Python
    /// and JavaScript read them.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Json::Num(x) => Some(*x),
            _ => None,
        }
    }
    /// A whole number from 0 to 2^53 (what an f64 holds exactly).
    pub fn as_u64(&self) -> Option<u64> {
        self.as_f64()
            .filter(|x| *x >= 0.0 && x.fract() == 0.0 && *x <= 9_007_199_254_740_992.0)
            .map(|x| x as u64)
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }
    pub fn as_array(&self) -> Option<&[Json]> {
        match self {
            Json::Arr(a) => Some(a),
            _ => None,
        }
    }
    pub fn is_object(&self) -> bool {
        matches!(self, Json::Obj(_))
    }
}

/// Compact JSON, as a message quotes a value.
impl Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => write!(f, "{b}"),
            Json::Num(x) => write!(f, "{x}"),
            Json::Str(s) => quoted(f, s),
            Json::Arr(a) => {
                f.write_char('[')?;
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        f.write_char(',')?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_char(']')
            }
            Json::Obj(m) => {
                f.write_char('{')?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        f.write_char(',')?;
                    }
                    quoted(f, k)?;
                    write!(f, ":{v}")?;
                }
                f.write_char('}')
            }
        }
    }
}

fn quoted(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

/// A whole text read as one typed value; the error says where or what.
pub fn read<T: FromJson>(text: &str) -> Result<T, String> {
    T::from_json(&parse(text).map_err(|e| e.to_string())?)
}

/// A typed value read from JSON; the error names what was expected.
pub trait FromJson: Sized {
    fn from_json(j: &Json) -> Result<Self, String>;
}

/// The field `key` of an object, which must be there.
pub fn req<T: FromJson>(j: &Json, key: &str) -> Result<T, String> {
    match j.get(key) {
        Some(v) => T::from_json(v).map_err(|e| format!("`{key}`: {e}")),
        None => Err(format!("missing field `{key}`")),
    }
}

/// The field `key` of an object; absent or `null` is `None`.
pub fn opt<T: FromJson>(j: &Json, key: &str) -> Result<Option<T>, String> {
    match j.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(v) => T::from_json(v)
            .map(Some)
            .map_err(|e| format!("`{key}`: {e}")),
    }
}

impl FromJson for f64 {
    fn from_json(j: &Json) -> Result<Self, String> {
        j.as_f64().ok_or_else(|| "expected a number".into())
    }
}

impl FromJson for u64 {
    fn from_json(j: &Json) -> Result<Self, String> {
        j.as_u64().ok_or_else(|| "expected a whole number".into())
    }
}

impl FromJson for u32 {
    fn from_json(j: &Json) -> Result<Self, String> {
        u64::from_json(j)?
            .try_into()
            .map_err(|_| "number out of range".into())
    }
}

impl FromJson for u8 {
    fn from_json(j: &Json) -> Result<Self, String> {
        u64::from_json(j)?
            .try_into()
            .map_err(|_| "number out of range".into())
    }
}

impl FromJson for usize {
    fn from_json(j: &Json) -> Result<Self, String> {
        u64::from_json(j)?
            .try_into()
            .map_err(|_| "number out of range".into())
    }
}

impl FromJson for bool {
    fn from_json(j: &Json) -> Result<Self, String> {
        j.as_bool().ok_or_else(|| "expected true or false".into())
    }
}

impl FromJson for String {
    fn from_json(j: &Json) -> Result<Self, String> {
        j.as_str()
            .map(str::to_string)
            .ok_or_else(|| "expected a string".into())
    }
}

impl<T: FromJson> FromJson for Vec<T> {
    fn from_json(j: &Json) -> Result<Self, String> {
        j.as_array()
            .ok_or_else(|| "expected a list".to_string())?
            .iter()
            .map(T::from_json)
            .collect()
    }
}

/// A two-element list `[a, b]`.
impl<A: FromJson, B: FromJson> FromJson for (A, B) {
    fn from_json(j: &Json) -> Result<Self, String> {
        match j.as_array() {
            Some([a, b]) => Ok((A::from_json(a)?, B::from_json(b)?)),
            _ => Err("expected a pair".into()),
        }
    }
}

/// A unit enum by its name (`"swiglu"`, `"per_head"`).
pub fn named<T>(j: &Json, from: impl Fn(&str) -> Option<T>) -> Result<T, String> {
    j.as_str()
        .and_then(from)
        .ok_or_else(|| format!("unknown name {j}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-written cases from RFC 8259, each with the value or the place of its error.
    #[test]
    fn reads_json_as_rfc_8259_writes_it() {
        let v =
            parse(r#" {"a": [1, -2.5e3, true, null], "b": "x\"\u00e9\ud83d\ude00\n"} "#).unwrap();
        assert_eq!(
            v.get("a").unwrap().as_array().unwrap()[1].as_f64(),
            Some(-2500.0)
        );
        assert_eq!(v.get("b").unwrap().as_str(), Some("x\"é😀\n"));
        assert_eq!(parse("4096").unwrap().as_u64(), Some(4096));
        assert_eq!(parse("4096.5").unwrap().as_u64(), None);
        for (text, line, column) in [
            ("{\"a\": 1,\n  }", 2, 3),
            ("[1, 2", 1, 6),
            ("01", 1, 2),
            ("{\"a\" 1}", 1, 6),
            ("[1] x", 1, 5),
            ("\"\u{1}\"", 1, 2),
            ("1e999", 1, 6),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!((e.line, e.column), (line, column), "{text:?}: {e}");
        }
        assert!(parse(&"[".repeat(200)).is_err(), "deep nesting is refused");
    }

    /// What `Display` writes parses back to the same value.
    #[test]
    fn display_round_trips() {
        let text = r#"{"k":["a\"b\\c",1.5,false,null,{}],"\u0001":[]}"#;
        let v = parse(text).unwrap();
        assert_eq!(parse(&v.to_string()).unwrap(), v);
    }

    #[test]
    fn fields_name_what_is_wrong() {
        let v = parse(r#"{"n": "x", "m": null}"#).unwrap();
        assert_eq!(
            req::<u64>(&v, "n").unwrap_err(),
            "`n`: expected a whole number"
        );
        assert_eq!(req::<u64>(&v, "z").unwrap_err(), "missing field `z`");
        assert_eq!(opt::<u64>(&v, "m"), Ok(None));
        assert_eq!(opt::<u64>(&v, "z"), Ok(None));
    }
}
