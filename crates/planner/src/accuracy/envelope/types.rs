//! What a label's envelope holds: each setting's checked values and why a
//! plan falls outside them.

use crate::formats::fields::Fields;
use serde::Serialize;

/// What a set of checks covered.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Envelope {
    pub seq: (u64, u64),
    /// Sequences per micro-batch (activations grow with it).
    pub micro_batch: (u64, u64),
    pub gpus: (u64, u64),
    /// Total parameters of the model.
    pub params: (u64, u64),
    /// Precision URL keys (`bf16`, `fp8`, ...).
    pub precisions: Vec<String>,
    /// Training URL keys (`full`, `lora`, `qlora`).
    pub training: Vec<String>,
    /// ZeRO stages the checks ran, and whether some sharded over a hybrid
    /// group smaller than the data-parallel ranks (HSDP).
    pub zero: Vec<u8>,
    pub hybrid: bool,
    /// What the checks ran of each of `SETTINGS`, in its order (the JSON
    /// names no key: a few KB less on the page).
    pub settings: Vec<Checked>,
}

/// What checks ran of one setting.
#[derive(Clone, Debug, PartialEq)]
pub enum Checked {
    /// A number's range.
    Range(f64, f64),
    /// A choice's values, sorted.
    Values(Vec<String>),
}

impl Checked {
    pub(super) fn join(self, other: Checked) -> Checked {
        match (self, other) {
            (Checked::Range(a, b), Checked::Range(c, d)) => Checked::Range(a.min(c), b.max(d)),
            (Checked::Values(a), Checked::Values(b)) => Checked::Values(union(&a, &b)),
            (a, _) => a,
        }
    }
}

/// In JSON: `[lo, hi]` for a range (whole numbers without a decimal point),
/// the values for a choice.
impl Serialize for Checked {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Checked::Range(lo, hi) => {
                let n = |x: f64| {
                    if x.fract() == 0.0 && x.abs() < 1e15 {
                        serde_json::json!(x as i64)
                    } else {
                        serde_json::json!(x)
                    }
                };
                [n(*lo), n(*hi)].serialize(s)
            }
            Checked::Values(v) => v.serialize(s),
        }
    }
}

impl Envelope {
    /// The fields build.rs wrote (its `envelope_fields`), in this order.
    pub(crate) fn read(f: &mut Fields) -> Envelope {
        let mut pair = || (f.whole(), f.whole());
        let (seq, micro_batch, gpus, params) = (pair(), pair(), pair(), pair());
        let text = |f: &mut Fields| f.text().to_string();
        Envelope {
            seq,
            micro_batch,
            gpus,
            params,
            precisions: f.list(text),
            training: f.list(text),
            zero: f.list(|f| f.whole() as u8),
            hybrid: f.flag(),
            settings: f.list(|f| match f.text() {
                "r" => Checked::Range(f.num(), f.num()),
                "v" => Checked::Values(f.list(text)),
                t => {
                    f.refuse(format!("not a range or values: \"{t}\""));
                    Checked::Values(Vec::new())
                }
            }),
        }
    }
}

/// Where a plan leaves an envelope: its value and what was checked.
#[derive(Clone, Debug, PartialEq)]
pub enum Outside {
    Sequence {
        value: u64,
        lo: u64,
        hi: u64,
    },
    MicroBatch {
        value: u64,
        lo: u64,
        hi: u64,
    },
    Gpus {
        value: u64,
        lo: u64,
        hi: u64,
    },
    ModelSize {
        value: u64,
        lo: u64,
        hi: u64,
    },
    Precision {
        value: String,
        checked: String,
    },
    Training {
        value: String,
        checked: String,
    },
    Zero {
        value: u8,
        checked: String,
    },
    Hybrid,
    /// The plan's GPU, which no run of the group ran on, and theirs.
    GpuType {
        value: String,
        checked: Vec<String>,
    },
    /// The plan's model family, of which the group ran no model, and theirs.
    Family {
        value: String,
        checked: Vec<String>,
    },
    /// One of `SETTINGS`: the plan's value and what the checks ran (a
    /// range, or the values, "" for unset).
    Setting {
        key: &'static str,
        value: String,
        checked: Vec<String>,
    },
}

/// The sorted values of both lists, each once.
pub(super) fn union<T: Ord + Clone>(a: &[T], b: &[T]) -> Vec<T> {
    let mut v: Vec<T> = a.iter().chain(b).cloned().collect();
    v.sort();
    v.dedup();
    v
}
