//! The settings an envelope checks, each read from a plan the same way
//! for the rows and for the plan a label describes.

use crate::model::architecture::Architecture;
use crate::model::plan::{Plan, Training};
use std::borrow::Cow;

use super::types::*;

/// How a setting is compared: a number against the checks' range, a choice
/// against the values they ran.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Kind {
    Range,
    Values,
}

/// One setting the envelope keeps: its URL key (or a name for one that
/// combines keys), how it compares, and its value in a resolved plan.
pub(super) struct Setting {
    pub(super) key: &'static str,
    pub(super) kind: Kind,
    pub(super) get: fn(&Plan, &Architecture) -> Value,
}

pub(super) fn num(x: u64) -> Value {
    Value::Int(x)
}

pub(super) fn real(x: f64) -> Value {
    Value::Real(x)
}

pub(super) fn flag(b: bool) -> Value {
    Value::Word(if b { "1" } else { "0" })
}

pub(super) fn opt(x: Option<u64>) -> Value {
    x.map_or(Value::Word(""), Value::Int)
}

/// A setting's value in a plan. Numbers stay numbers: the envelope checks
/// each edit's plan, and writing every number out to read it back took a
/// third of an evaluation (#34). Its text is the URL's (`fmt_num`).
pub(super) enum Value {
    Int(u64),
    Real(f64),
    Word(&'static str),
    /// Two words written `a/b` (`precision_train`).
    Pair(&'static str, &'static str),
    Words(Cow<'static, str>),
}

impl Value {
    /// The value as a range compares it (`None`: not a number).
    pub(super) fn number(&self) -> Option<f64> {
        match self {
            Value::Int(x) => Some(*x as f64),
            Value::Real(x) if x.is_finite() => Some(*x),
            _ => crate::formats::decimal::parse_f64(&self.text()),
        }
    }

    /// Whether the value is `seen`, as the checks wrote it.
    pub(super) fn is(&self, seen: &str) -> bool {
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

    pub(super) fn text(&self) -> Cow<'static, str> {
        match self {
            Value::Int(x) => Cow::Owned(x.to_string()),
            Value::Real(x) => Cow::Owned(crate::model::plan::fmt_num(*x)),
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
pub(super) const SETTINGS: &[Setting] = &[
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
pub(super) fn family(a: &Architecture) -> &'static str {
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

/// What the checks ran of a setting, as the link writes its values ("" for
/// unset), when `value` is not of it.
pub(super) fn unchecked(checked: &Checked, value: &Value) -> Option<Vec<String>> {
    match checked {
        Checked::Range(lo, hi) => {
            let x = value.number()?;
            (x < *lo || x > *hi).then(|| {
                let (lo, hi) = (
                    crate::model::plan::fmt_num(*lo),
                    crate::model::plan::fmt_num(*hi),
                );
                vec![if lo == hi { lo } else { format!("{lo}–{hi}") }]
            })
        }
        Checked::Values(seen) => (!seen.iter().any(|v| value.is(v))).then(|| seen.clone()),
    }
}

/// The ZeRO stage a plan runs: sharding matters only across GPUs, so one GPU runs none.
pub(super) fn zero_stage(plan: &Plan, gpus: u64) -> u8 {
    if gpus > 1 {
        plan.parallelism.zero
    } else {
        0
    }
}

/// Whether a plan shards over a hybrid group smaller than its GPUs (HSDP).
pub(super) fn hybrid(plan: &Plan, gpus: u64) -> bool {
    plan.parallelism.shard.is_some_and(|s| s > 0 && s < gpus)
}
