//! An envelope built from checked rows, and a plan held against it.

use crate::model::architecture::Architecture;
use crate::model::plan::Plan;

use super::settings::*;
use super::types::*;

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
                vec![crate::model::plan::fmt_num(nearest)]
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
    pub(super) fn main_axes(&self, plan: &Plan, params: u64, gpus: u64) -> Vec<Outside> {
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

#[cfg(test)]
mod family_tests {
    use super::family;
    use crate::model::architecture::{Architecture, Mla, Moe};

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
