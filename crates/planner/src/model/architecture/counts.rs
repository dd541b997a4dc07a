//! Exact parameter counts (SPEC §3.1) and the Linears an adapter wraps.

use super::presets::preset;
use super::types::*;
use crate::model::architecture::rope::Rope;
use crate::text::{Phrase, Text};

impl Architecture {
    /// A Llama-style decoder layer: the modules the bundle's train.py splits
    /// for tensor parallelism (`TP_LAYER` there: q/k/v/o, gate/up/down and
    /// two RMSNorms; Llama, Mistral, Qwen2), with a vocabulary its
    /// embedding and LM head split evenly over `tp`.
    pub fn llama_style_tp(&self, tp: u64) -> bool {
        self.moe.is_none()
            && self.mla.is_none()
            && self.qk_norm == QkNorm::None
            && self.norms_per_layer == 2
            && self.mlp == Mlp::Swiglu
            && !self.attn_sinks
            && !self.o_bias
            && !self.mlp_bias
            && self.vocab.is_multiple_of(tp)
    }

    /// A plain dense decoder: no biases, two pre-norms per layer, no QK-norm,
    /// `head_dim = hidden / heads` (Llama, GPT and the calibration shapes).
    #[allow(clippy::too_many_arguments)]
    pub fn dense(
        layers: u64,
        hidden: u64,
        heads: u64,
        kv_heads: u64,
        ffn: u64,
        vocab: u64,
        tied: bool,
        mlp: Mlp,
    ) -> Architecture {
        Architecture {
            layers,
            hidden,
            heads,
            kv_heads,
            head_dim: hidden / heads.max(1),
            ffn,
            vocab,
            tied,
            mlp,
            qkv_bias: false,
            o_bias: false,
            mlp_bias: false,
            qk_norm: QkNorm::None,
            norms_per_layer: 2,
            attn_sinks: false,
            max_context: 0,
            sliding_window: 0,
            local_layers: 0,
            chunked: false,
            moe: None,
            mla: None,
            mtp_layers: 0,
            rope: Rope::default(),
        }
    }

    /// Keys each query attends to on average, per layer, under causal masking
    /// at sequence length `s`: `s/2` for global layers; for a window `w < s`,
    /// `w * (1 - w/(2s))`. Flash kernels skip the masked blocks.
    pub fn mean_keys_per_query(&self, s: u64) -> f64 {
        let s = s as f64;
        let global = s / 2.0;
        let w = self.sliding_window as f64;
        let local = if w <= 0.0 || w >= s {
            global
        } else if self.chunked {
            // Causal within each chunk: (w + 1) / 2 keys per query when the
            // chunks tile the sequence; w / 2 at the planner's scale.
            w / 2.0
        } else {
            w * (1.0 - w / (2.0 * s))
        };
        let l = self.layers.max(1) as f64;
        let nl = (self.local_layers as f64).min(l);
        (nl * local + (l - nl) * global) / l
    }

    /// `a*d`, the width of the queries (MLA: at the q.k head dim).
    pub fn q_width(&self) -> u64 {
        match &self.mla {
            Some(m) => self.heads * m.qk_head_dim(),
            None => self.heads * self.head_dim,
        }
    }
    /// `k*d`, the width of each of the key and value projections (MLA: the
    /// mean of the per-head keys' and values' widths, so that K and V
    /// together are `2 x kv_width`).
    pub fn kv_width(&self) -> u64 {
        match &self.mla {
            Some(m) => self.heads * (m.qk_head_dim() + m.v_head_dim) / 2,
            None => self.kv_heads * self.head_dim,
        }
    }
    /// The width attention's two matmuls run at, per query and key: q.k at
    /// the q.k head dim and p.v at the value head dim, averaged (`4 x keys x
    /// width` FLOPs per query forward).
    pub fn attention_width(&self) -> u64 {
        match &self.mla {
            Some(m) => self.heads * (m.qk_head_dim() + m.v_head_dim) / 2,
            None => self.q_width(),
        }
    }

    /// The attention block's Linear layers as `(in, out, split over TP)`:
    /// q, k, v and o; MLA's down projections (duplicated on every TP rank in
    /// Megatron), their up projections and o.
    pub fn attention_linears(&self) -> Vec<(u64, u64, bool)> {
        let h = self.hidden;
        match &self.mla {
            None => vec![
                (h, self.q_width(), true),
                (h, self.kv_width(), true),
                (h, self.kv_width(), true),
                (self.q_width(), h, true),
            ],
            Some(m) => {
                let a = self.heads;
                let mut v = Vec::with_capacity(5);
                if m.q_lora_rank > 0 {
                    v.push((h, m.q_lora_rank, false));
                    v.push((m.q_lora_rank, a * m.qk_head_dim(), true));
                } else {
                    v.push((h, a * m.qk_head_dim(), true));
                }
                v.push((h, m.kv_lora_rank + m.qk_rope_dim, false));
                v.push((m.kv_lora_rank, a * (m.qk_nope_dim + m.v_head_dim), true));
                v.push((a * m.v_head_dim, h, true));
                v
            }
        }
    }

    /// Routed experts' parameters per decoder layer, on average over the
    /// layers (dense layers have none).
    pub fn routed_params_per_layer(&self, counts: &ParameterCounts) -> f64 {
        self.moe.as_ref().map_or(0.0, |m| {
            m.experts as f64 * counts.expert as f64 * self.moe_layer_share()
        })
    }

    /// The routed experts' share of the decoder layers (1 without dense layers).
    pub fn moe_layer_share(&self) -> f64 {
        match &self.moe {
            Some(m) => {
                let l = self.layers.max(1);
                (l - m.dense_layers.min(l)) as f64 / l as f64
            }
            None => 0.0,
        }
    }

    fn mlp_block(&self, f: u64, bias: bool) -> u64 {
        let h = self.hidden;
        let weights = self.mlp.matrices() * h * f;
        let biases = if bias {
            // gate/up (or fc1) biases of size f each, down bias of size h
            (self.mlp.matrices() - 1) * f + h
        } else {
            0
        };
        weights + biases
    }

    /// Parameters of one layer's attention block.
    fn attention_params(&self) -> u64 {
        if let Some(m) = &self.mla {
            // The Linear layers plus the RMSNorms on the two latents
            // (`q_a_layernorm`, `kv_a_layernorm`).
            let linears: u64 = self.attention_linears().iter().map(|(i, o, _)| i * o).sum();
            return linears + m.q_lora_rank + m.kv_lora_rank;
        }
        let h = self.hidden;
        let (q, kv) = (self.q_width(), self.kv_width());
        let mut attention = h * q + 2 * h * kv + q * h;
        if self.qkv_bias {
            attention += q + 2 * kv;
        }
        if self.o_bias {
            attention += h;
        }
        attention += match self.qk_norm {
            QkNorm::None => 0,
            QkNorm::PerHead => 2 * self.head_dim,
            QkNorm::Full => q + kv,
        };
        if self.attn_sinks {
            attention += self.heads;
        }
        attention
    }

    /// Exact parameter counts (SPEC §3.1). With dense layers among MoE ones
    /// the per-layer figures are the mean over the decoder layers; the totals
    /// are exact.
    pub fn parameter_counts(&self) -> ParameterCounts {
        let h = self.hidden;
        let attention = self.attention_params();
        let norms = self.norms_per_layer * h;
        let dense_mlp = self.mlp_block(self.ffn, self.mlp_bias);
        let layers = self.layers.max(1);
        // (all MLP parameters, the active ones, one expert) summed over the layers.
        let (mlp, active_mlp, expert) = match &self.moe {
            None => (dense_mlp * layers, dense_mlp * layers, 0),
            Some(moe) => {
                let expert = self.mlp_block(moe.expert_ffn, self.mlp_bias);
                let router = h * moe.experts as u64
                    + if moe.router_bias {
                        moe.experts as u64
                    } else {
                        0
                    };
                let shared = moe.shared as u64 * expert;
                let dense = moe.dense_layers.min(layers);
                let sparse = layers - dense;
                (
                    sparse * (moe.experts as u64 * expert + router + shared) + dense * dense_mlp,
                    sparse * (moe.active as u64 * expert + router + shared) + dense * dense_mlp,
                    expert,
                )
            }
        };
        let decoder = layers * (attention + norms) + mlp;
        let decoder_active = layers * (attention + norms) + active_mlp;
        let embedding = self.vocab * h;
        let lm_head = if self.tied { 0 } else { self.vocab * h };
        let final_norm = h;
        ParameterCounts {
            total: decoder + embedding + lm_head + final_norm,
            active: decoder_active + embedding + lm_head + final_norm,
            embedding,
            lm_head,
            per_layer: decoder / layers,
            attention_per_layer: attention,
            mlp_per_layer: mlp / layers,
            expert,
            active_per_layer: decoder_active / layers,
            norms_per_layer: norms,
        }
    }

    /// LoRA adapter parameters of the mean layer at `rank`: `r * (in + out)`
    /// for each adapted Linear (`Adapted`: q, k, v, o, and the MLP matrices
    /// of every expert, or of the dense MLP on an MoE model's dense layers,
    /// DeepSeek-V3's first three).
    pub fn lora_params_per_layer(&self, rank: u64, adapted: Adapted) -> f64 {
        self.adapter_params(rank, adapted, |m| m.experts + m.shared)
    }

    /// The adapter parameters one token passes through in the mean layer:
    /// an MoE layer's only on its `active` routed experts and the shared
    /// ones (the FLOPs convention of `active_per_layer`).
    pub fn lora_active_params_per_layer(&self, rank: u64, adapted: Adapted) -> f64 {
        self.adapter_params(rank, adapted, |m| m.active + m.shared)
    }

    /// `r * (in + out)` over the adapters (`adapter_units`), with
    /// `experts(moe)` MLPs on an MoE layer.
    fn adapter_params(&self, rank: u64, adapted: Adapted, experts: fn(&Moe) -> u32) -> f64 {
        let r = rank as f64;
        let sum = |units: &[AdapterUnit]| -> f64 {
            units.iter().map(|u| r * (u.inp + u.out) as f64).sum()
        };
        let attention = sum(&self.adapter_units(adapted, None));
        let dense = sum(&self.adapter_units(adapted, Some(self.ffn)));
        let mlp = match &self.moe {
            None => dense,
            Some(m) => {
                let moe = sum(&self.adapter_units(adapted, Some(m.expert_ffn))) * experts(m) as f64;
                let share = self.moe_layer_share();
                share * moe + (1.0 - share) * dense
            }
        };
        attention + mlp
    }

    /// The adapters of the attention block (`mlp` None), or of one MLP of
    /// width `f` (the dense MLP, one expert or one shared expert).
    pub fn adapter_units(&self, a: Adapted, mlp: Option<u64>) -> Vec<AdapterUnit> {
        let unit = |inp, out, split, row_parallel, mlp| AdapterUnit {
            inp,
            out,
            split,
            row_parallel,
            mlp,
        };
        let Some(f) = mlp else {
            let linears = self.attention_linears();
            let last = linears.len() - 1;
            let mut units: Vec<AdapterUnit> = linears
                .iter()
                .enumerate()
                .filter(|(i, _)| a.attention_linear(*i, self))
                .map(|(i, &(inp, out, split))| unit(inp, out, split, i == last, false))
                .collect();
            if a.fused && self.mla.is_none() && (a.q || a.k || a.v) {
                // One adapter on linear_qkv: its input once, q, k and v out.
                units.retain(|u| u.row_parallel);
                let qkv = self.q_width() + 2 * self.kv_width();
                units.insert(0, unit(self.hidden, qkv, true, false, false));
            }
            return units;
        };
        let h = self.hidden;
        let [gate, up, down] = a.mlp_matrices(self.mlp.is_gated());
        let mut units = Vec::with_capacity(3);
        if a.fused && self.mlp.is_gated() && (gate || up) {
            units.push(unit(h, 2 * f, true, false, true));
        } else {
            for on in [gate, up] {
                if on {
                    units.push(unit(h, f, true, false, true));
                }
            }
        }
        if down {
            units.push(unit(f, h, true, true, true));
        }
        units
    }

    /// LoRA adapter parameters of the whole model (every decoder layer).
    pub fn lora_params(&self, rank: u64, adapted: Adapted) -> f64 {
        self.lora_params_per_layer(rank, adapted) * self.layers as f64
    }

    /// Check the shape for values that make no sense; each message names its field.
    pub fn validate(&self) -> Vec<(&'static str, Phrase)> {
        let mut errs = Vec::new();
        for (key, v) in [
            ("layers", self.layers),
            ("hidden", self.hidden),
            ("heads", self.heads),
            ("kv_heads", self.kv_heads),
            ("head_dim", self.head_dim),
            ("ffn", self.ffn),
            ("vocab", self.vocab),
        ] {
            if v == 0 {
                errs.push((key, Phrase::new(Text::NotPositiveWhole).with("key", key)));
            }
        }
        if self.heads > 0 && self.kv_heads > 0 && !self.heads.is_multiple_of(self.kv_heads) {
            let p = Phrase::new(Text::KvHeadsDoNotDivideHeads)
                .with("kv_heads", self.kv_heads)
                .with("heads", self.heads);
            errs.push(("kv_heads", p));
        }
        if let Some(moe) = &self.moe {
            if moe.experts == 0 || moe.active == 0 || moe.active > moe.experts {
                let p = Phrase::new(Text::ActiveExpertsOutOfRange)
                    .with("active", moe.active)
                    .with("experts", moe.experts);
                errs.push(("active_experts", p));
            }
            if moe.expert_ffn == 0 {
                errs.push(("expert_ffn", Phrase::new(Text::ExpertFfnNotPositive)));
            }
        }
        errs
    }

    /// A plausible Llama-style dense shape with about `billions` x 10^9
    /// parameters, valid for every size from 0.05 to 2,000 B (#25).
    ///
    /// Follows the Llama 3 family's proportions: head_dim 128 (64 below a
    /// width of 1024, as in SmolLM and Qwen2.5-0.5B), as many KV heads as
    /// divide the heads up to 8 (widths from 1024 are multiples of 512, from
    /// 2048 of 1024, so 4 or 8), SwiGLU with `f ≈ 3.5 h` rounded to 256, vocab 128,256 (32,000
    /// below 0.5 B, where Llama 3's would be most of the model), embeddings
    /// tied below a width of 4096. Of the widths whose depth lands within 3 %
    /// of the request, the one whose width/depth ratio is nearest Llama 3's
    /// (about 128: 2048/16, 4096/32, 8192/80, 16384/126; smaller models are
    /// deeper for their width, Qwen2.5-0.5B 896/24) wins.
    pub fn from_billions(billions: f64) -> Architecture {
        let billions = billions.clamp(0.05, 2000.0);
        let target = (billions * 1e9) as u64;
        let vocab = if target < 500_000_000 {
            32_000
        } else {
            128_256
        };
        let aspect = 128.0 * billions.min(1.0).sqrt();
        let widths = (2..8)
            .map(|i| i * 128)
            .chain([1024, 1536])
            .chain((2..=32).map(|i| i * 1024));
        let shapes: Vec<Architecture> = widths
            .filter_map(|hidden| Self::sized(hidden, vocab, target))
            .collect();
        let error =
            |a: &Architecture| a.parameter_counts().total.abs_diff(target) as f64 / target as f64;
        let off_aspect = |a: &Architecture| (a.hidden as f64 / a.layers as f64 / aspect).ln().abs();
        let near = shapes.iter().filter(|a| error(a) <= 0.03);
        near.min_by(|a, b| off_aspect(a).total_cmp(&off_aspect(b)))
            .or_else(|| shapes.iter().min_by(|a, b| error(a).total_cmp(&error(b))))
            .cloned()
            .unwrap_or_else(|| preset("llama-3.2-1b").expect("preset").arch.clone())
    }

    /// The Llama-like shape of width `hidden` whose depth lands closest to
    /// `target` parameters, if it has at least one layer.
    fn sized(hidden: u64, vocab: u64, target: u64) -> Option<Architecture> {
        let head_dim = if hidden < 1024 { 64 } else { 128 };
        let heads = hidden / head_dim;
        let kv_heads = [8, 4, 2, 1]
            .into_iter()
            .find(|k| heads.is_multiple_of(*k))
            .unwrap_or(1);
        let ffn = ((hidden as f64 * 3.5 / 256.0).round() as u64).max(1) * 256;
        let proto = Architecture {
            head_dim,
            max_context: 131_072,
            ..Architecture::dense(
                1,
                hidden,
                heads,
                kv_heads,
                ffn,
                vocab,
                hidden < 4096,
                Mlp::Swiglu,
            )
        };
        let pc = proto.parameter_counts();
        let fixed = pc.embedding + pc.lm_head + hidden;
        if fixed >= target {
            return None;
        }
        let layers = ((target - fixed) as f64 / pc.per_layer as f64)
            .round()
            .max(1.0) as u64;
        let aspect = hidden as f64 / layers as f64;
        (16.0..=320.0)
            .contains(&aspect)
            .then_some(Architecture { layers, ..proto })
    }
}
