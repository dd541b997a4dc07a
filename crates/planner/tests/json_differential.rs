//! planner::formats::json against serde_json (the reference, with its correctly
//! rounded float parser): every text both accept or both refuse, and what both
//! accept reads as the same value (#25). The page reads pasted config.json
//! files and measured lines with planner::formats::json, so a difference here is a
//! misread or a crash a user can reach.
//!
//! CI runs `JSON_CASES` (default 20,000) random and mutated texts per test;
//! `./dev fuzz` runs a million.

use planner::formats::json::{self, Json};
use serde_json::Value;

/// Same value: numbers as f64 (serde_json's integers included: an f64 is
/// what planner::formats::json keeps), objects by key with the last of repeated keys.
fn same(ours: &Json, theirs: &Value) -> bool {
    match (ours, theirs) {
        (Json::Null, Value::Null) => true,
        (Json::Bool(a), Value::Bool(b)) => a == b,
        (Json::Num(a), Value::Number(b)) => Some(*a) == b.as_f64(),
        (Json::Str(a), Value::String(b)) => a == b,
        (Json::Arr(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Json::Obj(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.iter().map(|(k, _)| k).collect();
            keys.sort();
            keys.dedup();
            keys.len() == b.len()
                && keys.iter().all(|k| {
                    b.get(*k)
                        .is_some_and(|v| ours.get(k).is_some_and(|o| same(o, v)))
                })
        }
        _ => false,
    }
}

/// Both accept with the same value, or both refuse; no panic.
fn check(text: &str) -> Result<(), String> {
    let ours = json::parse(text);
    let theirs = serde_json::from_str::<Value>(text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) if same(a, b) => Ok(()),
        (Err(_), Err(_)) => Ok(()),
        _ => Err(format!("{text:?}: ours {ours:?}, serde_json {theirs:?}")),
    }
}

fn check_all<'a>(texts: impl IntoIterator<Item = &'a str>) {
    let bad: Vec<String> = texts.into_iter().filter_map(|t| check(t).err()).collect();
    assert!(
        bad.is_empty(),
        "{} differences, the first: {:#?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
}

/// Hand-written cases in the spirit of JSONTestSuite's y_/n_/i_ files
/// (structure, numbers, strings, escapes, surrogates, whitespace, nesting),
/// and the texts #25 found misread or crashing.
const TRICKY: &[&str] = &[
    // #25: a backslash before a multi-byte character crashed the reader.
    r#"{"a":"\é"}"#,
    "\"\\\u{10348}\"",
    // #25: accepted although RFC 8259 refuses them.
    "1.",
    "1.e5",
    "[1.]",
    r#""\u+041""#,
    r#""\u-041""#,
    r#""\u 041""#,
    // #25: a lone surrogate before another escape was read as U+10041.
    r#""\uD800\u0041""#,
    r#""\uD800""#,
    r#""\uDC00""#,
    r#""\uD83D\uDE00""#,
    r#""\ud83d\ude00""#,
    r#""\uDBFF\uDFFF""#,
    r#""\uD800\uD800""#,
    r#""\uD800\""#,
    r#""\uD800\u""#,
    r#""\u00e9\u0000""#,
    // numbers
    "0",
    "-0",
    "-0.0",
    "0e0",
    "0E+1",
    "0e-1",
    "1E400",
    "-1e400",
    "1e-400",
    "123456789012345678901234567890",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "9007199254740993",
    "2.2250738585072011e-308",
    "4.9406564584124654e-324",
    "1.7976931348623157e308",
    "1.7976931348623159e308",
    "0.1",
    "1e",
    "1e+",
    "-",
    "--1",
    "+1",
    ".1",
    "01",
    "-01",
    "1.0e",
    "0x10",
    "1_000",
    "Infinity",
    "NaN",
    "-Infinity",
    "1.5e-0",
    "00",
    "[-]",
    "0.000000000000000000000000000000000000000000000000000000001",
    // literals and structure
    "true",
    "false",
    "null",
    "True",
    "nul",
    "tru",
    "[]",
    "{}",
    "[,]",
    "[1,]",
    "[,1]",
    "{\"a\":1,}",
    "{,}",
    "{\"a\"}",
    "{\"a\":}",
    "{1:1}",
    "{\"a\":1 \"b\":2}",
    "[1 2]",
    "{\"a\":1,\"a\":2}",
    "{\"a\":{\"a\":[1,{\"a\":null}]},\"b\":[]}",
    "[[[[]]]]",
    "[",
    "]",
    "{",
    "}",
    "",
    " ",
    "\"",
    "\"abc",
    "abc",
    "[\"a\" , 1 ,\ttrue\n,\rnull ]",
    "\u{feff}1",
    "1 2",
    "[1]x",
    "[1] ",
    "\u{a0}1",
    "[\u{2028}]",
    "\"\u{2028}\"",
    // strings and escapes
    r#""\"\\\/\b\f\n\r\t""#,
    r#""\a""#,
    r#""\x41""#,
    r#""\'""#,
    "\"\t\"",
    "\"\u{1}\"",
    "\"\u{7f}\"",
    "\"\u{1f}\"",
    r#""\u0000""#,
    r#""\uFFFF""#,
    r#""\uFFFE""#,
    "\"é😀\"",
    r#""\u00""#,
    r#""\u00G0""#,
    r#""\UD83D""#,
    "\"\\",
    "\"\\u",
];

#[test]
fn tricky_cases_agree_with_serde_json() {
    check_all(TRICKY.iter().copied());
}

/// Nesting: both readers refuse the same depth.
#[test]
fn nesting_limit_agrees_with_serde_json() {
    for depth in [1, 64, 126, 127, 128, 129, 130, 500] {
        let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        check_all([arrays.as_str(), objects.as_str()]);
    }
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

fn cases() -> usize {
    std::env::var("JSON_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

/// Pieces JSON is made of, including near misses.
const ATOMS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "12.5",
    "1e5",
    "1E-5",
    "-0.0e+0",
    "1.",
    ".5",
    "01",
    "1e",
    "9e999",
    "123456789012345678901",
    "0.30000000000000004",
    "true",
    "false",
    "null",
    "tru",
    "\"\"",
    "\"a\"",
    "\"é\"",
    "\"\\u00e9\"",
    "\"\\uD83D\\uDE00\"",
    "\"\\uD800\"",
    "\"\\n\"",
    "\"\\é\"",
    "\"\\u+041\"",
    "\"\u{1}\"",
    "\"😀\"",
];

fn random_value(rng: &mut Rng, depth: usize) -> String {
    match rng.below(if depth > 4 { 2 } else { 5 }) {
        0 | 1 => rng.pick(ATOMS).to_string(),
        2 => {
            let n = rng.below(4);
            let items: Vec<String> = (0..n).map(|_| random_value(rng, depth + 1)).collect();
            format!("[{}]", items.join(rng.pick(&[",", ", ", " ,", ",\n"])))
        }
        3 => random_digits(rng),
        _ => {
            let n = rng.below(4);
            let members: Vec<String> = (0..n)
                .map(|_| {
                    let key = rng.pick(&["\"a\"", "\"b\"", "\"a\"", "\"\\u0061\"", "\"é\""]);
                    format!("{key}:{}", random_value(rng, depth + 1))
                })
                .collect();
            format!("{{{}}}", members.join(","))
        }
    }
}

/// A number of up to 800 significant digits, with a fraction and an exponent
/// near the ends of f64's range (#25: long mantissas were misread).
fn random_digits(rng: &mut Rng) -> String {
    let digits = |rng: &mut Rng, n: usize| -> String {
        (0..n)
            .map(|_| (b'0' + rng.below(10) as u8) as char)
            .collect()
    };
    let len = [1, 5, 17, 20, 40, 120, 800][rng.below(7)];
    let n = 1 + rng.below(len);
    let int = digits(rng, n);
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let n = rng.below(len);
    let frac = digits(rng, n);
    let sign = rng.pick(&["", "-"]);
    let exp = match rng.below(4) {
        0 => String::new(),
        _ => format!("e{}", rng.below(700) as i64 - 350),
    };
    if frac.is_empty() {
        format!("{sign}{int}{exp}")
    } else {
        format!("{sign}{int}.{frac}{exp}")
    }
}

/// One edit of a valid text: a character deleted, doubled, replaced or
/// inserted, or a slice cut off (truncated pastes).
fn mutate(rng: &mut Rng, text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return rng.pick(ATOMS).to_string();
    }
    let at = rng.below(chars.len());
    let noise = [
        '"', '\\', 'u', '{', '}', '[', ']', ',', ':', '.', 'e', '-', '+', '0', '9', ' ', 'é',
        '\u{1}', 'D', '8',
    ];
    let c = noise[rng.below(noise.len())];
    let mut out = chars.clone();
    match rng.below(5) {
        0 => {
            out.remove(at);
        }
        1 => out.insert(at, chars[at]),
        2 => out[at] = c,
        3 => out.insert(at, c),
        _ => out.truncate(at),
    }
    out.into_iter().collect()
}

#[test]
fn random_texts_agree_with_serde_json() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let texts: Vec<String> = (0..cases()).map(|_| random_value(&mut rng, 0)).collect();
    check_all(texts.iter().map(String::as_str));
}

#[test]
fn long_numbers_agree_with_serde_json() {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let texts: Vec<String> = (0..cases() / 4).map(|_| random_digits(&mut rng)).collect();
    check_all(texts.iter().map(String::as_str));
}

/// The data files the page reads, mutated once each, over and over.
#[test]
fn mutated_data_files_agree_with_serde_json() {
    let seeds = [
        include_str!("../data/models.json"),
        include_str!("../data/coverage.json"),
        r#"{"architectures":["LlamaForCausalLM"],"hidden_size":4096,"num_attention_heads":32,"num_key_value_heads":8,"rope_scaling":{"factor":8.0,"rope_type":"llama3"},"torch_dtype":"bfloat16","vocab_size":128256}"#,
        r#"{"tokens_per_second_per_gpu":1234.5,"step_seconds":2.25,"peak_bytes":80123456789,"note":"\u00e9\ud83d\ude00"}"#,
    ];
    let mut rng = Rng(0xA076_1D64_78BD_642F);
    // The big tables are long: mutate a window of them, not the whole text.
    let texts: Vec<String> = (0..cases() / 4)
        .map(|_| {
            let seed = seeds[rng.below(seeds.len())];
            let seed = if seed.len() > 600 {
                window(&mut rng, seed)
            } else {
                seed
            };
            let mut t = mutate(&mut rng, seed);
            for _ in 0..rng.below(3) {
                t = mutate(&mut rng, &t);
            }
            t
        })
        .collect();
    check_all(texts.iter().map(String::as_str));
}

/// A whole `{...}` object of a long text, found from a random place.
fn window<'a>(rng: &mut Rng, text: &'a str) -> &'a str {
    let starts: Vec<usize> = text.match_indices("{\"").map(|(i, _)| i).collect();
    if starts.is_empty() {
        return text;
    }
    let start = starts[rng.below(starts.len())];
    let mut depth = 0;
    for (i, c) in text[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[start..=start + i];
                }
            }
            _ => {}
        }
    }
    &text[start..]
}
