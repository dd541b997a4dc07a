//! JSON values written as text, for files the page builds (the Megatron-Bridge
//! launcher's settings). Why not serde_json's `Value` and pretty printer: they
//! added 11.9 KB gzip to the page's wasm (measured with `./dev size`), and
//! `json.rs` reads JSON only. The output is serde_json's
//! `to_string_pretty` of the same value, byte for byte (keys sorted, two
//! spaces; tests/megatron_bridge.rs compares them on exported plans and
//! hostile strings), for numbers written without an exponent: `Display`
//! writes 1e-5 as 0.00001 where serde_json writes 1e-5 (both read back the
//! same; the settings hold no such number).

use std::fmt::Write;

/// A JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(u64),
    Num(f64),
    Str(String),
    List(Vec<Value>),
    Obj(Vec<(&'static str, Value)>),
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}
impl From<u64> for Value {
    fn from(n: u64) -> Value {
        Value::Int(n)
    }
}
impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::Int(n.into())
    }
}
impl From<f64> for Value {
    fn from(x: f64) -> Value {
        Value::Num(x)
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Str(s)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(o: Option<T>) -> Value {
        o.map_or(Value::Null, Into::into)
    }
}
impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(v: Vec<T>) -> Value {
        Value::List(v.into_iter().map(Into::into).collect())
    }
}

impl Value {
    /// An object's member (`Null` where there is none).
    pub fn get(&self, key: &str) -> &Value {
        match self {
            Value::Obj(members) => members
                .iter()
                .find(|(k, _)| *k == key)
                .map_or(&Value::Null, |(_, v)| v),
            _ => &Value::Null,
        }
    }

    /// Pretty text, as serde_json's `to_string_pretty` writes it.
    pub fn pretty(&self) -> String {
        let mut s = String::new();
        self.write(&mut s, 0);
        s
    }

    fn write(&self, s: &mut String, depth: usize) {
        match self {
            Value::Null => s.push_str("null"),
            Value::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
            Value::Int(n) => {
                let _ = write!(s, "{n}");
            }
            // serde_json keeps the ".0" of whole numbers; Display drops it
            // (Debug's exponent path would cost the page's wasm more).
            Value::Num(x) if x.is_finite() => {
                let start = s.len();
                let _ = write!(s, "{x}");
                if !s[start..].contains('.') {
                    s.push_str(".0");
                }
            }
            Value::Num(_) => s.push_str("null"),
            Value::Str(t) => quote(s, t),
            Value::List(items) => {
                let items: Vec<(Option<&str>, &Value)> = items.iter().map(|v| (None, v)).collect();
                block(s, depth, ('[', ']'), &items);
            }
            Value::Obj(members) => {
                let mut sorted: Vec<(Option<&str>, &Value)> =
                    members.iter().map(|(k, v)| (Some(*k), v)).collect();
                sorted.sort_by_key(|(k, _)| *k);
                block(s, depth, ('{', '}'), &sorted);
            }
        }
    }
}

/// A list or an object: one member a line, indented, or `[]` / `{}` empty.
fn block(
    s: &mut String,
    depth: usize,
    (open, close): (char, char),
    items: &[(Option<&str>, &Value)],
) {
    s.push(open);
    if items.is_empty() {
        s.push(close);
        return;
    }
    for (i, (key, value)) in items.iter().enumerate() {
        s.push_str(if i == 0 { "\n" } else { ",\n" });
        s.push_str(&"  ".repeat(depth + 1));
        if let Some(k) = key {
            quote(s, k);
            s.push_str(": ");
        }
        value.write(s, depth + 1);
    }
    s.push('\n');
    s.push_str(&"  ".repeat(depth));
    s.push(close);
}

/// A JSON string literal (RFC 8259 §7: quote, backslash and controls escaped).
fn quote(s: &mut String, t: &str) {
    s.push('"');
    for c in t.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            '\u{8}' => s.push_str("\\b"),
            '\u{c}' => s.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}
