//! The formats, the SDK versions compiled in from data/sdk.json, and Python
//! literals that no typed string can leave.

use serde::Serialize;
use std::fmt::Write;

/// The code formats a plan exports to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Format {
    Pytorch,
    Huggingface,
    ModelTrainer,
    TrainingArgs,
    /// A SageMaker HyperPod (EKS) job's config.yaml for `hyp create`.
    Hyperpod,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Pytorch,
        Format::Huggingface,
        Format::ModelTrainer,
        Format::TrainingArgs,
        Format::Hyperpod,
    ];
    pub fn key(self) -> &'static str {
        match self {
            Format::Pytorch => "pytorch",
            Format::Huggingface => "huggingface",
            Format::ModelTrainer => "modeltrainer",
            Format::TrainingArgs => "training-args",
            Format::Hyperpod => "hyperpod",
        }
    }
    pub fn from_key(s: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.key() == s)
    }
}

pub(super) struct Pt {
    pub(super) version: &'static str,
    pub(super) py: &'static str,
    pub(super) cuda: &'static str,
}
pub(super) struct Smp {
    pub(super) version: &'static str,
    pub(super) py: &'static str,
    pub(super) smp: &'static str,
}
pub(super) struct Hf {
    pub(super) transformers: &'static str,
    pub(super) pytorch: &'static str,
    pub(super) py: &'static str,
    pub(super) cuda: &'static str,
}
pub(super) struct SdkV2 {
    pub(super) package: &'static str,
    pub(super) pytorch: &'static [Pt],
    pub(super) smp_pytorch: &'static [Smp],
    pub(super) huggingface: &'static [Hf],
}
pub(super) struct SdkV3 {
    pub(super) package: &'static str,
    pub(super) pytorch: &'static [Pt],
    pub(super) smp_pytorch: &'static [Smp],
}
pub(super) struct Sdk {
    pub(super) v2: SdkV2,
    pub(super) v3: SdkV3,
}

// `SDK`: data/sdk.json as Rust values, written by build.rs (`sdk_code`).
include!(concat!(env!("OUT_DIR"), "/sdk_data.rs"));

pub(super) fn sdk() -> &'static Sdk {
    &SDK
}

/// The SDK packages the generated code is written for.
pub fn sdk_packages() -> (&'static str, &'static str) {
    (sdk().v2.package, sdk().v3.package)
}

/// A Python string literal that holds exactly `s`: double-quoted, with
/// backslashes, quotes and every non-printable or non-ASCII character escaped.
pub fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Text for a `#` comment: printable ASCII only, one line.
pub(super) fn comment(s: &str) -> String {
    s.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect()
}

pub(super) fn py_bool(b: bool) -> String {
    if b { "True" } else { "False" }.into()
}
