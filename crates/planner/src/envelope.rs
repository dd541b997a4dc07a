//! What a set of checks ran, and where a plan leaves it (#25, #36). A
//! figure is labelled by its checks only inside their envelope; outside, it
//! is "extrapolated" along the axes it leaves.
//!
//! Beside the ranges every check has (sequence, micro-batch, GPUs, model
//! size) and the choices that decide which checks apply (precision,
//! training, ZeRO stage, hybrid sharding), the envelope keeps every other
//! setting that can move a figure, as the checks ran it (`SETTINGS`: the
//! attention kernel, checkpointing, the optimizer, the model's shape and
//! family, precision x training, the MoE dispatcher, CUDA graphs, overlap
//! flags, imbalance, the pipeline's accumulation and virtual stages that
//! set its bubble, ...). A plan outside along one of those is extrapolated
//! only where putting that setting back to what the checks ran moves its
//! figure by more than the label's ± (`evaluate`'s `material`): a setting
//! the figure does not depend on is inside what the checks vouch for.

use crate::architecture::Architecture;
use crate::json::{req, FromJson, Json};
use crate::plan::{Plan, Training};
use serde::Serialize;
use std::borrow::Cow;

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
    fn join(self, other: Checked) -> Checked {
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

impl FromJson for Checked {
    fn from_json(j: &Json) -> Result<Self, String> {
        match j.as_array() {
            Some([a, b]) if a.as_f64().is_some() => {
                Ok(Checked::Range(f64::from_json(a)?, f64::from_json(b)?))
            }
            _ => Ok(Checked::Values(Vec::from_json(j)?)),
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
    /// One of `SETTINGS`: the plan's value and what the checks ran (a
    /// range, or the values, "" for unset).
    Setting {
        key: &'static str,
        value: String,
        checked: Vec<String>,
    },
}

/// How a setting is compared: a number against the checks' range, a choice
/// against the values they ran.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Range,
    Values,
}

/// One setting the envelope keeps: its URL key (or a name for one that
/// combines keys), how it compares, and its value in a resolved plan.
struct Setting {
    key: &'static str,
    kind: Kind,
    get: fn(&Plan, &Architecture) -> Value,
}

fn num(x: u64) -> Value {
    Value::Int(x)
}

fn real(x: f64) -> Value {
    Value::Real(x)
}

fn flag(b: bool) -> Value {
    Value::Word(if b { "1" } else { "0" })
}

fn opt(x: Option<u64>) -> Value {
    x.map_or(Value::Word(""), Value::Int)
}

/// A setting's value in a plan. Numbers stay numbers: the envelope checks
/// each edit's plan, and writing every number out to read it back took a
/// third of an evaluation (#34). Its text is the URL's (`fmt_num`).
enum Value {
    Int(u64),
    Real(f64),
    Word(&'static str),
    /// Two words written `a/b` (`precision_train`).
    Pair(&'static str, &'static str),
    Words(Cow<'static, str>),
}

impl Value {
    /// The value as a range compares it (`None`: not a number).
    fn number(&self) -> Option<f64> {
        match self {
            Value::Int(x) => Some(*x as f64),
            Value::Real(x) if x.is_finite() => Some(*x),
            _ => crate::decimal::parse_f64(&self.text()),
        }
    }

    /// Whether the value is `seen`, as the checks wrote it.
    fn is(&self, seen: &str) -> bool {
        match self {
            // `to_string`'s digits, read without writing `x` out.
            Value::Int(x) => {
                let canonical = seen.bytes().all(|b| b.is_ascii_digit())
                    && (seen.len() == 1 || !seen.starts_with('0'));
                canonical && seen.parse::<u64>().ok() == Some(*x)
            }
            Value::Word(w) => *w == seen,
            Value::Pair(a, b) => seen.split_once('/') == Some((*a, *b)),
            Value::Words(w) => w == seen,
            Value::Real(_) => self.text() == seen,
        }
    }

    fn text(&self) -> Cow<'static, str> {
        match self {
            Value::Int(x) => Cow::Owned(x.to_string()),
            Value::Real(x) => Cow::Owned(crate::plan::fmt_num(*x)),
            Value::Word(w) => Cow::Borrowed(w),
            Value::Pair(a, b) => Cow::Owned(format!("{a}/{b}")),
            Value::Words(w) => w.clone(),
        }
    }
}

/// The settings beside the envelope's own axes, in the URL's order. The
/// launch, cost and page keys (`tokens`, `price`, `spot`, `save_*`, `role`,
/// `s3`, `job`, `entry`, `hf_model`, `lock`, `budget`, `deadline`, `lang`,
/// `vs`, `headroom`) move no memory or speed figure, nor do the memory
/// allowances (`ws_gib`, `frag`), which the checks (allocated or reserved
/// peaks) do not cover and the verdict states apart; `model`, the custom
/// GPU's keys, `instance` and `nodes` are read through the model's shape,
/// the check group's GPUs and the GPU count (tests/envelope.rs perturbs
/// every key of the URL and holds that).
const SETTINGS: &[Setting] = &[
    Setting {
        key: "layers",
        kind: Kind::Range,
        get: |_, a| num(a.layers),
    },
    Setting {
        key: "hidden",
        kind: Kind::Range,
        get: |_, a| num(a.hidden),
    },
    Setting {
        key: "heads",
        kind: Kind::Range,
        get: |_, a| num(a.heads),
    },
    Setting {
        key: "kv_heads",
        kind: Kind::Range,
        get: |_, a| num(a.kv_heads),
    },
    Setting {
        key: "head_dim",
        kind: Kind::Range,
        get: |_, a| num(a.head_dim),
    },
    Setting {
        key: "ffn",
        kind: Kind::Range,
        get: |_, a| num(a.ffn),
    },
    Setting {
        key: "vocab",
        kind: Kind::Range,
        get: |_, a| num(a.vocab),
    },
    Setting {
        key: "tied",
        kind: Kind::Values,
        get: |_, a| flag(a.tied),
    },
    Setting {
        key: "mlp",
        kind: Kind::Values,
        get: |_, a| Value::Word(a.mlp.key()),
    },
    Setting {
        key: "experts",
        kind: Kind::Range,
        get: |_, a| num(a.moe.map_or(1, |m| m.experts as u64)),
    },
    Setting {
        key: "active_experts",
        kind: Kind::Range,
        get: |_, a| num(a.moe.map_or(1, |m| m.active as u64)),
    },
    Setting {
        key: "expert_ffn",
        kind: Kind::Range,
        get: |_, a| num(a.moe.map_or(0, |m| m.expert_ffn)),
    },
    // What no URL key changes: the attention's kind (MLA or grouped-query),
    // dense or mixture-of-experts, sliding windows, attention sinks.
    Setting {
        key: "family",
        kind: Kind::Values,
        get: |_, a| Value::Word(family(a)),
    },
    Setting {
        key: "lora_rank",
        kind: Kind::Range,
        get: |p, _| {
            num(if p.training.train == Training::Full {
                0
            } else {
                p.lora.lora_rank
            })
        },
    },
    Setting {
        key: "lora_targets",
        kind: Kind::Values,
        get: |p, _| {
            Value::Words(if p.training.train == Training::Full {
                "none".into()
            } else {
                p.lora.lora_targets.key()
            })
        },
    },
    Setting {
        key: "lora_dtype",
        kind: Kind::Values,
        get: |p, _| {
            Value::Word(if p.training.train == Training::Full {
                "none"
            } else {
                p.lora.lora_dtype.key()
            })
        },
    },
    // Precision and training kind together: every full fine-tuning run of a
    // check may be pure BF16 while its LoRA runs are mixed.
    Setting {
        key: "precision_train",
        kind: Kind::Values,
        get: |p, _| Value::Pair(p.numerics.precision.key(), p.training.train.key()),
    },
    Setting {
        key: "ga",
        kind: Kind::Range,
        get: |p, _| num(p.data.grad_accum),
    },
    Setting {
        key: "optimizer",
        kind: Kind::Values,
        get: |p, _| Value::Word(p.training.optimizer.key()),
    },
    Setting {
        key: "ckpt",
        kind: Kind::Values,
        get: |p, _| Value::Words(p.activations.checkpointing.key()),
    },
    Setting {
        key: "offload",
        kind: Kind::Values,
        get: |p, _| flag(p.activations.offload),
    },
    Setting {
        key: "offload_layers",
        kind: Kind::Values,
        get: |p, _| {
            opt(p
                .activations
                .offload_layers
                .filter(|_| p.activations.offload))
        },
    },
    Setting {
        key: "grad_bf16",
        kind: Kind::Values,
        get: |p, _| flag(p.numerics.grad_bf16),
    },
    Setting {
        key: "fp8_params",
        kind: Kind::Values,
        get: |p, _| flag(p.numerics.fp8_params),
    },
    Setting {
        key: "bf16_moments",
        kind: Kind::Values,
        get: |p, _| flag(p.numerics.bf16_moments),
    },
    Setting {
        key: "recompute_modules",
        kind: Kind::Values,
        get: |p, _| Value::Words(p.activations.recompute_modules.key()),
    },
    Setting {
        key: "mtp",
        kind: Kind::Range,
        get: |p, _| num(p.training.mtp),
    },
    Setting {
        key: "attn",
        kind: Kind::Values,
        get: |p, _| Value::Word(p.implementation.attention.key()),
    },
    Setting {
        key: "loss",
        kind: Kind::Values,
        get: |p, _| Value::Word(p.implementation.loss.key()),
    },
    Setting {
        key: "compile",
        kind: Kind::Values,
        get: |p, _| flag(p.implementation.compile),
    },
    Setting {
        key: "tp",
        kind: Kind::Range,
        get: |p, _| num(p.parallelism.tp),
    },
    Setting {
        key: "sp",
        kind: Kind::Values,
        get: |p, _| flag(p.parallelism.sp),
    },
    Setting {
        key: "pp",
        kind: Kind::Range,
        get: |p, _| num(p.parallelism.pp),
    },
    Setting {
        key: "vp",
        kind: Kind::Range,
        get: |p, _| num(p.parallelism.vp),
    },
    // The layers set on the first and last pipeline ranks move together (a
    // layout only splits the rest evenly with both), so they are one setting.
    Setting {
        key: "pp_ends",
        kind: Kind::Values,
        get: |p, _| {
            let (first, last) = (p.parallelism.pp_first, p.parallelism.pp_last);
            if first.is_none() && last.is_none() {
                return Value::Word("/");
            }
            let text = format!("{}/{}", opt(first).text(), opt(last).text());
            Value::Words(text.into())
        },
    },
    Setting {
        key: "cp",
        kind: Kind::Range,
        get: |p, _| num(p.parallelism.cp),
    },
    Setting {
        key: "ep",
        kind: Kind::Range,
        get: |p, _| num(p.parallelism.ep),
    },
    Setting {
        key: "overlap",
        kind: Kind::Values,
        get: |p, _| flag(p.parallelism.overlap),
    },
    Setting {
        key: "tp_overlap",
        kind: Kind::Values,
        get: |p, _| flag(p.parallelism.tp_overlap),
    },
    Setting {
        key: "ep_overlap",
        kind: Kind::Values,
        get: |p, _| flag(p.parallelism.ep_overlap),
    },
    Setting {
        key: "moe_flex",
        kind: Kind::Values,
        get: |p, _| flag(p.moe.moe_flex),
    },
    Setting {
        key: "moe_graphs",
        kind: Kind::Values,
        get: |p, _| flag(p.moe.moe_graphs),
    },
    Setting {
        key: "moe_imbalance",
        kind: Kind::Range,
        get: |p, _| real(p.moe.moe_imbalance),
    },
    Setting {
        key: "ultraserver",
        kind: Kind::Values,
        get: |p, _| num(p.hardware.ultraserver),
    },
];

/// The keys of `SETTINGS` (a combined one's name where it is not a URL key).
pub fn setting_keys() -> Vec<&'static str> {
    SETTINGS.iter().map(|s| s.key).collect()
}

/// What sets a model's cost beyond its shape's numbers: MLA or grouped-query
/// attention, dense or MoE layers, sliding windows, attention sinks.
fn family(a: &Architecture) -> &'static str {
    // Attention, then dense or MoE, then " sliding" and " sinks" where they apply.
    const NAMES: [&str; 16] = [
        "gqa dense",
        "gqa dense sinks",
        "gqa dense sliding",
        "gqa dense sliding sinks",
        "gqa moe",
        "gqa moe sinks",
        "gqa moe sliding",
        "gqa moe sliding sinks",
        "mla dense",
        "mla dense sinks",
        "mla dense sliding",
        "mla dense sliding sinks",
        "mla moe",
        "mla moe sinks",
        "mla moe sliding",
        "mla moe sliding sinks",
    ];
    let sliding = a.local_layers > 0 && a.sliding_window > 0;
    let bit = |on: bool, b: usize| if on { b } else { 0 };
    NAMES
        [bit(a.mla.is_some(), 8) | bit(a.moe.is_some(), 4) | bit(sliding, 2) | bit(a.attn_sinks, 1)]
}

impl Envelope {
    /// One check's point.
    pub fn point(plan: &Plan, arch: &Architecture, gpus: u64) -> Envelope {
        let params = arch.parameter_counts().total;
        let settings = SETTINGS
            .iter()
            .map(|s| {
                let v = (s.get)(plan, arch);
                match (s.kind, v.number()) {
                    (Kind::Range, Some(x)) => Checked::Range(x, x),
                    _ => Checked::Values(vec![v.text().into_owned()]),
                }
            })
            .collect();
        Envelope {
            seq: (plan.data.seq, plan.data.seq),
            micro_batch: (plan.data.micro_batch, plan.data.micro_batch),
            gpus: (gpus, gpus),
            params: (params, params),
            precisions: vec![plan.numerics.precision.key().to_string()],
            training: vec![plan.training.train.key().to_string()],
            zero: vec![zero_stage(plan, gpus)],
            hybrid: hybrid(plan, gpus),
            settings,
        }
    }

    /// The smallest envelope holding all of `points`.
    pub fn cover<'a>(points: impl IntoIterator<Item = &'a Envelope>) -> Envelope {
        let span = |a: (u64, u64), b: (u64, u64)| (a.0.min(b.0), a.1.max(b.1));
        points
            .into_iter()
            .cloned()
            .reduce(|e, p| Envelope {
                seq: span(e.seq, p.seq),
                micro_batch: span(e.micro_batch, p.micro_batch),
                gpus: span(e.gpus, p.gpus),
                params: span(e.params, p.params),
                precisions: union(&e.precisions, &p.precisions),
                training: union(&e.training, &p.training),
                zero: union(&e.zero, &p.zero),
                hybrid: e.hybrid || p.hybrid,
                settings: e
                    .settings
                    .into_iter()
                    .zip(p.settings)
                    .map(|(a, b)| a.join(b))
                    .collect(),
            })
            .unwrap_or_default()
    }

    /// The axes along which a plan leaves the envelope (none: inside): the
    /// main axes where it leaves one of them, else the settings it leaves,
    /// whether or not they move its figures (`material` in evaluate.rs keeps
    /// those that do).
    pub fn outside(&self, plan: &Plan, arch: &Architecture, gpus: u64) -> Vec<Outside> {
        let mut out = self.main_axes(plan, arch.parameter_counts().total, gpus);
        if !out.is_empty() {
            return out;
        }
        for (s, checked) in SETTINGS.iter().zip(&self.settings) {
            let v = (s.get)(plan, arch);
            if let Some(checked) = unchecked(checked, &v) {
                out.push(Outside::Setting {
                    key: s.key,
                    value: v.text().into_owned(),
                    checked,
                });
            }
        }
        out
    }

    /// The values that put `key` back inside what the checks ran: the
    /// nearest end of a range, each value of a choice (`family` and unset
    /// values have no URL value to put back).
    pub fn inside_values(&self, plan: &Plan, arch: &Architecture, key: &str) -> Vec<String> {
        let Some((s, checked)) = SETTINGS
            .iter()
            .zip(&self.settings)
            .find(|(s, _)| s.key == key && key != "family")
        else {
            return Vec::new();
        };
        match checked {
            Checked::Range(lo, hi) => {
                let x = (s.get)(plan, arch).number().unwrap_or(*lo);
                let nearest = if x < *lo { *lo } else { *hi };
                vec![crate::plan::fmt_num(nearest)]
            }
            Checked::Values(seen) => seen.iter().filter(|v| !v.is_empty()).cloned().collect(),
        }
    }

    /// `plan` with setting `key` at `value` (the combined `precision_train`
    /// and `pp_ends` set both of their keys), or `None` where the URL
    /// refuses it.
    pub fn put_back(plan: &Plan, key: &str, value: &str) -> Option<Plan> {
        let mut p = plan.clone();
        match key {
            "family" => return None,
            "precision_train" => {
                let (precision, train) = value.split_once('/')?;
                p.set("precision", precision).ok()?;
                p.set("train", train).ok()?;
            }
            "pp_ends" => {
                let (first, last) = value.split_once('/')?;
                let layers = |v: &str| v.parse::<u64>().ok();
                (p.parallelism.pp_first, p.parallelism.pp_last) = (layers(first), layers(last));
            }
            _ => p.set(key, value).ok()?,
        }
        Some(p)
    }

    /// Sequence, micro-batch, GPUs, model size, precision, training, ZeRO
    /// stage and hybrid sharding: the axes that also pick which checks apply.
    fn main_axes(&self, plan: &Plan, params: u64, gpus: u64) -> Vec<Outside> {
        let mut out = Vec::new();
        type Axis = fn(u64, u64, u64) -> Outside;
        let ranges: [(u64, (u64, u64), Axis); 3] = [
            (plan.data.seq, self.seq, |value, lo, hi| Outside::Sequence {
                value,
                lo,
                hi,
            }),
            (plan.data.micro_batch, self.micro_batch, |value, lo, hi| {
                Outside::MicroBatch { value, lo, hi }
            }),
            (gpus, self.gpus, |value, lo, hi| Outside::Gpus {
                value,
                lo,
                hi,
            }),
        ];
        for (value, (lo, hi), axis) in ranges {
            if value < lo || value > hi {
                out.push(axis(value, lo, hi));
            }
        }
        // Model size: a tenth of a range's ends either side is the same model class.
        let (lo, hi) = self.params;
        if (params as f64) < lo as f64 * 0.9 || params as f64 > hi as f64 * 1.1 {
            out.push(Outside::ModelSize {
                value: params,
                lo,
                hi,
            });
        }
        let key = plan.numerics.precision.key();
        if !self.precisions.iter().any(|p| p == key) {
            out.push(Outside::Precision {
                value: key.to_string(),
                checked: self.precisions.join(", "),
            });
        }
        let train = plan.training.train.key();
        if !self.training.iter().any(|t| t == train) {
            out.push(Outside::Training {
                value: train.to_string(),
                checked: self.training.join(", "),
            });
        }
        let zero = zero_stage(plan, gpus);
        if !self.zero.is_empty() && !self.zero.contains(&zero) {
            let checked: Vec<String> = self.zero.iter().map(|z| z.to_string()).collect();
            out.push(Outside::Zero {
                value: zero,
                checked: checked.join(", "),
            });
        }
        if hybrid(plan, gpus) && !self.hybrid {
            out.push(Outside::Hybrid);
        }
        out
    }
}

/// What the checks ran of a setting, as the link writes its values ("" for
/// unset), when `value` is not of it.
fn unchecked(checked: &Checked, value: &Value) -> Option<Vec<String>> {
    match checked {
        Checked::Range(lo, hi) => {
            let x = value.number()?;
            (x < *lo || x > *hi).then(|| {
                let (lo, hi) = (crate::plan::fmt_num(*lo), crate::plan::fmt_num(*hi));
                vec![if lo == hi { lo } else { format!("{lo}–{hi}") }]
            })
        }
        Checked::Values(seen) => (!seen.iter().any(|v| value.is(v))).then(|| seen.clone()),
    }
}

/// The ZeRO stage a plan runs: sharding matters only across GPUs, so one GPU runs none.
fn zero_stage(plan: &Plan, gpus: u64) -> u8 {
    if gpus > 1 {
        plan.parallelism.zero
    } else {
        0
    }
}

/// Whether a plan shards over a hybrid group smaller than its GPUs (HSDP).
fn hybrid(plan: &Plan, gpus: u64) -> bool {
    plan.parallelism.shard.is_some_and(|s| s > 0 && s < gpus)
}

/// The sorted values of both lists, each once.
fn union<T: Ord + Clone>(a: &[T], b: &[T]) -> Vec<T> {
    let mut v: Vec<T> = a.iter().chain(b).cloned().collect();
    v.sort();
    v.dedup();
    v
}

impl FromJson for Envelope {
    fn from_json(j: &Json) -> Result<Self, String> {
        Ok(Envelope {
            seq: req(j, "seq")?,
            micro_batch: req(j, "micro_batch")?,
            gpus: req(j, "gpus")?,
            params: req(j, "params")?,
            precisions: req(j, "precisions")?,
            training: req(j, "training")?,
            zero: req(j, "zero")?,
            hybrid: req(j, "hybrid")?,
            settings: req(j, "settings")?,
        })
    }
}

#[cfg(test)]
mod family_tests {
    use super::family;
    use crate::architecture::{Architecture, Mla, Moe};

    /// The family's name as the envelope wrote it before it was a table:
    /// attention, dense or MoE, then sliding windows and sinks.
    fn built(a: &Architecture) -> String {
        let mut f = String::from(if a.mla.is_some() { "mla" } else { "gqa" });
        f += if a.moe.is_some() { " moe" } else { " dense" };
        if a.local_layers > 0 && a.sliding_window > 0 {
            f += " sliding";
        }
        if a.attn_sinks {
            f += " sinks";
        }
        f
    }

    /// Every combination, and a window without local layers (not sliding).
    #[test]
    fn the_table_names_every_family_as_built() {
        let mla = Mla {
            q_lora_rank: 0,
            kv_lora_rank: 512,
            qk_nope_dim: 128,
            qk_rope_dim: 64,
            v_head_dim: 128,
        };
        let moe = Moe {
            experts: 8,
            active: 2,
            shared: 0,
            expert_ffn: 1024,
            router_bias: false,
            dense_layers: 0,
        };
        for bits in 0..32u32 {
            let on = |b: u32| bits & b != 0;
            let a = Architecture {
                mla: on(16).then_some(mla),
                moe: on(8).then_some(moe),
                local_layers: if on(4) { 3 } else { 0 },
                sliding_window: if on(2) { 4096 } else { 0 },
                attn_sinks: on(1),
                ..Architecture::from_billions(1.0)
            };
            assert_eq!(family(&a), built(&a), "bits {bits:05b}");
        }
    }
}
