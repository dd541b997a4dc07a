//! The plan written back as its URL query: every key it sets, the short
//! form a link carries, and the keys where two plans differ.

use super::choices::{fmt_num, RecomputeModules, SCHEMA_VERSION};
use super::choices::{LoraDtype, Recovery, Stack, Training, TrainingStage};
use super::codec::{percent_decode, percent_encode, KEYS};
use super::types::{Locks, Plan, Saving};

impl Plan {
    /// The plan as a query string (without `?`). Every key is written, so a
    /// link reopens exactly this plan even if a later release changes a default.
    pub fn to_query(&self) -> String {
        let mut out: Pairs = vec![("v", SCHEMA_VERSION.to_string())];
        self.model_pairs(&mut out);
        self.training_pairs(&mut out);
        self.parallelism_pairs(&mut out);
        self.hardware_pairs(&mut out);
        self.launch_pairs(&mut out);
        self.page_pairs(&mut out);
        out.iter()
            .map(|(k, v)| format!("{k}={}", percent_encode(v)))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// The model and the shape keys the user set.
    fn model_pairs(&self, out: &mut Pairs) {
        out.push(("model", self.model.preset.clone()));
        let a = &self.model.arch;
        let opt_u = |v: Option<u64>| v.map(|x| x.to_string());
        for (k, v) in [
            ("layers", opt_u(a.layers)),
            ("hidden", opt_u(a.hidden)),
            ("heads", opt_u(a.heads)),
            ("kv_heads", opt_u(a.kv_heads)),
            ("head_dim", opt_u(a.head_dim)),
            ("ffn", opt_u(a.ffn)),
            ("vocab", opt_u(a.vocab)),
            ("tied", a.tied.map(|t| flag(t).to_string())),
            ("mlp", a.mlp.map(|m| m.key().to_string())),
            ("experts", opt_u(a.experts)),
            ("active_experts", opt_u(a.active_experts)),
            ("expert_ffn", opt_u(a.expert_ffn)),
            ("params_b", self.model.params_b.map(fmt_num)),
        ] {
            if let Some(v) = v {
                out.push((k, v));
            }
        }
    }

    /// What is trained and how.
    fn training_pairs(&self, out: &mut Pairs) {
        out.push(("train", self.training.train.key().into()));
        match self.training.stage {
            // The default stage: the link leaves it out.
            TrainingStage::Sft => {}
            s @ (TrainingStage::Dpo | TrainingStage::Grpo) => out.push(("stage", s.key().into())),
        }
        // The rollout's keys, for a stage that generates.
        if self.training.stage.generates() {
            let r = &self.training.rollout;
            out.push(("generations", r.generations.to_string()));
            out.push(("completion", r.completion.to_string()));
            if r.completion_mean > 0 {
                out.push(("completion_mean", r.completion_mean.to_string()));
            }
            out.push(("beta", fmt_num(r.beta)));
            out.push(("gen_share", fmt_num(r.gen_share)));
            if r.gen_gpus > 0 {
                out.push(("gen_gpus", r.gen_gpus.to_string()));
            }
            if r.gen_tp > 0 {
                out.push(("gen_tp", r.gen_tp.to_string()));
            }
            if r.gen_pp > 0 {
                out.push(("gen_pp", r.gen_pp.to_string()));
            }
            if r.sleep {
                out.push(("sleep", "1".into()));
            }
        }
        if self.training.train != Training::Full {
            out.push(("lora_rank", self.lora.lora_rank.to_string()));
            if let Some(alpha) = self.lora.lora_alpha {
                out.push(("lora_alpha", alpha.to_string()));
            }
            out.push(("lora_targets", self.lora.lora_targets.key().into_owned()));
            if self.lora.lora_dtype == LoraDtype::Bf16 {
                out.push(("lora_dtype", "bf16".into()));
            }
        }
        out.push(("seq", self.data.seq.to_string()));
        out.push(("mb", self.data.micro_batch.to_string()));
        out.push(("ga", self.data.grad_accum.to_string()));
        out.push(("tokens", fmt_num(self.data.tokens)));
        out.push(("precision", self.numerics.precision.key().into()));
        out.push(("optimizer", self.training.optimizer.key().into()));
        out.push(("ckpt", self.activations.checkpointing.key().into_owned()));
        out.push(("offload", flag(self.activations.offload).into()));
        if let Some(n) = self.activations.offload_layers {
            out.push(("offload_layers", n.to_string()));
        }
        if self.numerics.grad_bf16 {
            out.push(("grad_bf16", "1".into()));
        }
        if self.numerics.fp8_params {
            out.push(("fp8_params", "1".into()));
        }
        if self.numerics.bf16_moments {
            out.push(("bf16_moments", "1".into()));
        }
        if self.activations.recompute_modules != RecomputeModules::default() {
            out.push((
                "recompute_modules",
                self.activations.recompute_modules.key().into_owned(),
            ));
        }
        if self.training.mtp > 0 {
            out.push(("mtp", self.training.mtp.to_string()));
        }
        out.push(("attn", self.implementation.attention.key().into()));
        out.push(("loss", self.implementation.loss.key().into()));
        out.push(("stack", self.implementation.stack.key().into()));
        if self.implementation.stack == Stack::Torchtitan && !self.implementation.compile {
            out.push(("compile", "0".into()));
        }
    }

    /// Sharding and the parallel degrees.
    fn parallelism_pairs(&self, out: &mut Pairs) {
        out.push(("zero", self.parallelism.zero.to_string()));
        if let Some(s) = self.parallelism.shard {
            out.push(("shard", s.to_string()));
        }
        for (k, v) in [
            ("tp", self.parallelism.tp),
            ("pp", self.parallelism.pp),
            ("vp", self.parallelism.vp),
            ("cp", self.parallelism.cp),
            ("ep", self.parallelism.ep),
        ] {
            out.push((k, v.to_string()));
        }
        if let Some(n) = self.parallelism.pp_first {
            out.push(("pp_first", n.to_string()));
        }
        if let Some(n) = self.parallelism.pp_last {
            out.push(("pp_last", n.to_string()));
        }
        out.push(("sp", flag(self.parallelism.sp).into()));
    }

    /// The instance (or custom GPU), nodes, network and price.
    fn hardware_pairs(&self, out: &mut Pairs) {
        out.push(("instance", self.hardware.instance.key().to_string()));
        if self.hardware.instance.is_custom() {
            let g = &self.hardware.custom_gpu;
            out.push(("gpu_mem", fmt_num(g.memory_gb)));
            out.push(("gpu_bf16", fmt_num(g.bf16_tflops)));
            out.push(("gpu_fp8", fmt_num(g.fp8_tflops)));
            out.push(("gpu_bw", fmt_num(g.bandwidth_tbs)));
            out.push(("gpu_count", g.per_node.to_string()));
            out.push(("gpu_nvlink", fmt_num(g.nvlink_gbs)));
            out.push(("gpu_net", fmt_num(g.network_gbps)));
        }
        out.push(("nodes", self.hardware.nodes.to_string()));
        if !self.parallelism.overlap {
            out.push(("overlap", "0".into()));
        }
        if self.parallelism.tp_overlap {
            out.push(("tp_overlap", "1".into()));
        }
        if self.parallelism.ep_overlap {
            out.push(("ep_overlap", "1".into()));
        }
        if self.moe.moe_flex {
            out.push(("moe_flex", "1".into()));
        }
        if self.moe.moe_graphs {
            out.push(("moe_graphs", "1".into()));
        }
        if self.moe.moe_imbalance != 1.0 {
            out.push(("moe_imbalance", fmt_num(self.moe.moe_imbalance)));
        }
        if crate::model::hardware::is_ultraserver(self.hardware.instance.key())
            || self.hardware.ultraserver != 72
        {
            out.push(("ultraserver", self.hardware.ultraserver.to_string()));
        }
        out.push(("spot", flag(self.hardware.spot).into()));
        if let Some(p) = self.hardware.price {
            out.push(("price", fmt_num(p)));
        }
    }

    /// Checkpoint saving, memory margins and the launch code's names.
    fn launch_pairs(&self, out: &mut Pairs) {
        out.push(("save_every", self.saving.save_every.to_string()));
        out.push(("save", self.saving.save.key().into()));
        out.push(("async_save", flag(self.saving.async_save).into()));
        out.push(("save_bw", fmt_num(self.saving.save_bw)));
        out.push(("fail_rate", fmt_num(self.saving.fail_rate)));
        out.push(("restart_min", fmt_num(self.saving.restart_minutes)));
        // Written where they count (a spot plan; checkpointless recovery), so
        // that every other link stays as it was.
        if self.hardware.spot || self.saving.spot_rate != Saving::default().spot_rate {
            out.push(("spot_rate", fmt_num(self.saving.spot_rate)));
        }
        if self.saving.recovery != Recovery::Save {
            out.push(("recovery", self.saving.recovery.key().into()));
        }
        out.push(("headroom", fmt_num(self.allowances.headroom)));
        if let Some(gib) = self.allowances.workspace_gib {
            out.push(("ws_gib", fmt_num(gib)));
        }
        if let Some(percent) = self.allowances.fragmentation {
            out.push(("frag", fmt_num(percent)));
        }
        for (k, v) in [
            ("role", &self.launch.role),
            ("s3", &self.launch.s3),
            ("job", &self.launch.job),
            ("entry", &self.launch.entry),
            ("hf_model", &self.launch.hf_model),
            ("training_plan", &self.launch.training_plan),
        ] {
            if !v.is_empty() {
                out.push((k, v.clone()));
            }
        }
    }

    /// Locks, limits and the pinned plan, when set.
    fn page_pairs(&self, out: &mut Pairs) {
        if self.auto.locks != Locks::default() {
            out.push(("lock", self.auto.locks.to_value()));
        }
        if let Some(b) = self.auto.budget_usd {
            out.push(("budget", fmt_num(b)));
        }
        if let Some(d) = self.auto.deadline_hours {
            out.push(("deadline", fmt_num(d)));
        }
    }
}

impl Plan {
    /// The pairs of `to_query` that differ from the default plan's, without
    /// the schema version: what a pinned plan (`vs=`) keeps.
    pub fn short_query(&self) -> String {
        let defaults = Plan::default().to_query();
        let defaults: Vec<&str> = defaults.split('&').collect();
        self.to_query()
            .split('&')
            .filter(|pair| !defaults.contains(pair) && !pair.starts_with("v="))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// `(key, pinned value, current value)` for every key whose value differs,
    /// in the schema's order (a key one plan does not write shows as empty).
    pub fn differences(&self, other: &Plan) -> Vec<(String, String, String)> {
        let pairs = |p: &Plan| -> Vec<(String, String)> {
            p.to_query()
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), percent_decode(v)))
                .collect()
        };
        let (a, b) = (pairs(self), pairs(other));
        let value = |list: &[(String, String)], k: &str| {
            list.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        KEYS.iter()
            .map(|k| (k.to_string(), value(&a, k), value(&b, k)))
            .filter(|(_, x, y)| x != y)
            .collect()
    }
}

fn flag(b: bool) -> &'static str {
    if b {
        "1"
    } else {
        "0"
    }
}

/// `key=value` pairs of a query string, in their order.
type Pairs = Vec<(&'static str, String)>;
