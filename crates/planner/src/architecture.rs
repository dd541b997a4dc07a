//! Model shapes: presets, custom architectures, the "N billion parameters"
//! quick size, Hugging Face `config.json` import, and exact parameter counts.
//!
//! Counting follows SPEC §3.1: attention `h*a*d + 2*h*k*d + a*d*h` (+ biases),
//! gated MLP `3*h*f` or plain `2*h*f`, norms, embedding `V*h`, LM head `V*h`
//! unless tied, final norm `h`; MoE counts every expert for the total and only
//! the routed top-k (+ shared experts) for the active count.

use crate::json::{named, opt, req, FromJson, Json};
use crate::rope::Rope;
use crate::text::{Arg, Phrase, Text};
use serde::Serialize;

/// Feed-forward block shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mlp {
    /// SiLU-gated (Llama, Qwen, Mistral): gate, up and down projections.
    Swiglu,
    /// GELU-gated (Gemma): same three matrices as SwiGLU.
    Geglu,
    /// Plain two-matrix MLP with a GELU (GPT-2/3 style).
    Gelu,
}

impl Mlp {
    /// Number of `h x f` matrices in one MLP.
    pub fn matrices(self) -> u64 {
        match self {
            Mlp::Swiglu | Mlp::Geglu => 3,
            Mlp::Gelu => 2,
        }
    }
    pub fn is_gated(self) -> bool {
        self.matrices() == 3
    }
    pub fn key(self) -> &'static str {
        match self {
            Mlp::Swiglu => "swiglu",
            Mlp::Geglu => "geglu",
            Mlp::Gelu => "gelu",
        }
    }
    pub fn from_key(s: &str) -> Option<Self> {
        match s {
            "swiglu" | "silu" => Some(Mlp::Swiglu),
            "geglu" => Some(Mlp::Geglu),
            "gelu" | "plain" => Some(Mlp::Gelu),
            _ => None,
        }
    }
}

/// Normalisation of queries and keys inside attention (Qwen3, Gemma 3, OLMo 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QkNorm {
    None,
    /// RMSNorm of size `head_dim` applied per head (Qwen3, Gemma 3): `2*d` params.
    PerHead,
    /// RMSNorm over the whole q and k projections (OLMo 2): `a*d + k*d` params.
    Full,
}

/// Mixture-of-experts feed-forward.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Moe {
    /// Routed experts per layer.
    pub experts: u32,
    /// Experts each token is routed to (top-k).
    pub active: u32,
    /// Always-on shared experts.
    pub shared: u32,
    /// Intermediate size of one expert.
    pub expert_ffn: u64,
    /// The router has a bias (gpt-oss).
    pub router_bias: bool,
    /// Layers with a dense MLP of width `ffn` instead of experts: DeepSeek-V3's
    /// first 3 (`first_k_dense_replace`), Llama 4 Maverick's every other
    /// (`interleave_moe_layer_step = 2`). The planner spreads them evenly
    /// over the pipeline stages.
    #[serde(skip_serializing_if = "is_zero")]
    pub dense_layers: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): queries through a
/// rank-`q_lora_rank` down and up projection, keys and values from one shared
/// rank-`kv_lora_rank` latent plus a decoupled RoPE key of width
/// `qk_rope_dim`; q.k runs at head dim `qk_nope_dim + qk_rope_dim`, the values
/// at `v_head_dim` (DeepSeek-V2 report §2.1; HF `DeepseekV3Attention`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Mla {
    /// 0: a full-rank query projection (DeepSeek-V2-Lite).
    pub q_lora_rank: u64,
    pub kv_lora_rank: u64,
    pub qk_nope_dim: u64,
    pub qk_rope_dim: u64,
    pub v_head_dim: u64,
}

impl Mla {
    /// The q.k head dimension (192 for DeepSeek-V3).
    pub fn qk_head_dim(&self) -> u64 {
        self.qk_nope_dim + self.qk_rope_dim
    }
}

impl FromJson for Mla {
    fn from_json(j: &Json) -> Result<Self, String> {
        Ok(Mla {
            q_lora_rank: opt(j, "q_lora_rank")?.unwrap_or(0),
            kv_lora_rank: req(j, "kv_lora_rank")?,
            qk_nope_dim: req(j, "qk_nope_dim")?,
            qk_rope_dim: req(j, "qk_rope_dim")?,
            v_head_dim: req(j, "v_head_dim")?,
        })
    }
}

/// A decoder-only transformer's shape.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Architecture {
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    /// Dense MLP intermediate size (for MoE, the expert size is in `moe`).
    pub ffn: u64,
    pub vocab: u64,
    pub tied: bool,
    pub mlp: Mlp,
    pub qkv_bias: bool,
    pub o_bias: bool,
    pub mlp_bias: bool,
    pub qk_norm: QkNorm,
    /// RMSNorm/LayerNorm weight vectors per layer (2 pre-norm; 4 for Gemma's sandwich).
    pub norms_per_layer: u64,
    /// One learned attention-sink logit per head (gpt-oss).
    pub attn_sinks: bool,
    /// Context length the model was trained for.
    pub max_context: u64,
    /// Sliding-window attention: window in tokens (0 = none) ...
    pub sliding_window: u64,
    /// ... and how many layers use it (Gemma 2/3, gpt-oss alternate local and global layers).
    pub local_layers: u64,
    /// The local layers attend within fixed chunks of `sliding_window` tokens
    /// rather than a sliding window (Llama 4: chunks of 8192 on three layers
    /// of four, the fourth global and without RoPE).
    #[serde(skip_serializing_if = "is_false")]
    pub chunked: bool,
    pub moe: Option<Moe>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mla: Option<Mla>,
    /// DeepSeek-V3's multi-token-prediction modules (one MoE layer each,
    /// `num_nextn_predict_layers`): not in the published total; the planner
    /// does not train them yet and says so.
    #[serde(skip_serializing_if = "is_zero")]
    pub mtp_layers: u64,
    /// Rotary position embeddings: no memory or time, but the exported
    /// Megatron-Bridge launcher builds them (`rope`).
    pub rope: Rope,
}

impl FromJson for Moe {
    fn from_json(j: &Json) -> Result<Self, String> {
        Ok(Moe {
            experts: req(j, "experts")?,
            active: req(j, "active")?,
            shared: opt(j, "shared")?.unwrap_or(0),
            expert_ffn: req(j, "expert_ffn")?,
            router_bias: opt(j, "router_bias")?.unwrap_or(false),
            dense_layers: opt(j, "dense_layers")?.unwrap_or(0),
        })
    }
}

impl FromJson for Mlp {
    fn from_json(j: &Json) -> Result<Self, String> {
        named(j, Mlp::from_key)
    }
}

impl FromJson for QkNorm {
    fn from_json(j: &Json) -> Result<Self, String> {
        named(j, |s| match s {
            "none" => Some(QkNorm::None),
            "per_head" => Some(QkNorm::PerHead),
            "full" => Some(QkNorm::Full),
            _ => None,
        })
    }
}

/// As `data/models.json` writes a shape (what `Serialize` writes).
impl FromJson for Architecture {
    fn from_json(j: &Json) -> Result<Self, String> {
        Ok(Architecture {
            layers: req(j, "layers")?,
            hidden: req(j, "hidden")?,
            heads: req(j, "heads")?,
            kv_heads: req(j, "kv_heads")?,
            head_dim: req(j, "head_dim")?,
            ffn: req(j, "ffn")?,
            vocab: req(j, "vocab")?,
            tied: req(j, "tied")?,
            mlp: req(j, "mlp")?,
            qkv_bias: opt(j, "qkv_bias")?.unwrap_or(false),
            o_bias: opt(j, "o_bias")?.unwrap_or(false),
            mlp_bias: opt(j, "mlp_bias")?.unwrap_or(false),
            qk_norm: opt(j, "qk_norm")?.unwrap_or(QkNorm::None),
            norms_per_layer: opt(j, "norms_per_layer")?.unwrap_or(2),
            attn_sinks: opt(j, "attn_sinks")?.unwrap_or(false),
            max_context: opt(j, "max_context")?.unwrap_or(0),
            sliding_window: opt(j, "sliding_window")?.unwrap_or(0),
            local_layers: opt(j, "local_layers")?.unwrap_or(0),
            chunked: opt(j, "chunked")?.unwrap_or(false),
            moe: opt(j, "moe")?,
            mla: opt(j, "mla")?,
            mtp_layers: opt(j, "mtp_layers")?.unwrap_or(0),
            rope: opt(j, "rope")?.unwrap_or_default(),
        })
    }
}

/// Parameter counts of one architecture, split as the memory model needs them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ParameterCounts {
    pub total: u64,
    pub active: u64,
    pub embedding: u64,
    pub lm_head: u64,
    /// All parameters of one decoder layer (every expert).
    pub per_layer: u64,
    pub attention_per_layer: u64,
    /// Dense MLP, or all experts + router + shared experts for MoE.
    pub mlp_per_layer: u64,
    /// Parameters of one routed expert.
    pub expert: u64,
    /// Parameters of one layer that every token uses (attention, norms, router, shared and top-k experts).
    pub active_per_layer: u64,
    pub norms_per_layer: u64,
}

/// The Linear layers LoRA adapts (PEFT's `target_modules`), by module:
/// q, k, v and o; the MLP's gate, up and down (every expert's, and a GPT
/// MLP's fc1 as up and fc2 as down); multi-head latent attention's query
/// and key-value down (`a`) and up (`b`) projections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adapted {
    pub q: bool,
    pub k: bool,
    pub v: bool,
    pub o: bool,
    pub gate: bool,
    pub up: bool,
    pub down: bool,
    pub q_a: bool,
    pub q_b: bool,
    pub kv_a: bool,
    pub kv_b: bool,
    /// Megatron-Core's fused modules take one adapter each (Megatron-Bridge's
    /// `LoRA`): q, k and v share one on `linear_qkv` (an MLA model keeps its
    /// projections apart), gate and up one on `linear_fc1`.
    pub fused: bool,
}

/// One LoRA adapter of a decoder layer: `A` from its Linear's input width,
/// `B` to its output width; whether tensor parallelism splits its base
/// Linear and on which side (a row-parallel Linear's input), and whether it
/// belongs to the MLP (each expert has its own).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdapterUnit {
    pub inp: u64,
    pub out: u64,
    pub split: bool,
    pub row_parallel: bool,
    pub mlp: bool,
}

impl Adapted {
    /// Whether the `i`-th of `attention_linears` is adapted: q, k, v and o
    /// by name; MLA's `[q_a, q_b, kv_a, kv_b, o]`, or `[q, kv_a, kv_b, o]`
    /// without a query down projection.
    pub fn attention_linear(self, i: usize, a: &Architecture) -> bool {
        match &a.mla {
            None => [self.q, self.k, self.v, self.o][i.min(3)],
            Some(m) if m.q_lora_rank > 0 => {
                [self.q_a, self.q_b, self.kv_a, self.kv_b, self.o][i.min(4)]
            }
            Some(_) => [self.q, self.kv_a, self.kv_b, self.o][i.min(3)],
        }
    }

    /// The adapted MLP matrices of a gated MLP (gate, up, down) or a plain
    /// one (up, down), each `(reads h, writes f)` for gate and up, the
    /// reverse for down.
    pub fn mlp_matrices(self, gated: bool) -> [bool; 3] {
        [gated && self.gate, self.up, self.down]
    }

    /// The modules of `a`'s layers among these: MLA's projections on an
    /// MLA model (and its `q_proj` where it has no query down projection),
    /// q, k and v on the others.
    pub fn on(self, a: &Architecture) -> Adapted {
        match &a.mla {
            None => Adapted {
                q_a: false,
                q_b: false,
                kv_a: false,
                kv_b: false,
                ..self
            },
            Some(m) => Adapted {
                q: self.q && m.q_lora_rank == 0,
                k: false,
                v: false,
                ..self
            },
        }
    }

    /// Whether the queries' projection is adapted (MLA's either one).
    pub fn query(self) -> bool {
        self.q || self.q_a || self.q_b
    }

    /// Whether the keys' (or values') projection is adapted: k (v), or
    /// MLA's shared key-value ones.
    pub fn key(self) -> bool {
        self.k || self.kv_a || self.kv_b
    }

    pub fn value(self) -> bool {
        self.v || self.kv_a || self.kv_b
    }

    /// Whether any module is adapted.
    pub fn any(self) -> bool {
        self.query() || self.key() || self.value() || self.o || self.any_mlp()
    }

    /// Whether any MLP matrix is adapted.
    pub fn any_mlp(self) -> bool {
        self.gate || self.up || self.down
    }
}

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

/// A named architecture with its source.
#[derive(Clone, Debug, Serialize)]
pub struct Preset {
    pub id: &'static str,
    pub name: &'static str,
    /// The Hugging Face Hub repository of the weights (what train.py loads).
    pub hub: &'static str,
    /// Where the shape comes from (left out of the page's copy of the data).
    pub source: &'static str,
    #[serde(flatten)]
    pub arch: Architecture,
}

// `PRESETS`: data/models.json as Rust values, written by build.rs
// (`presets_code`): the page parses no JSON for them.
include!(concat!(env!("OUT_DIR"), "/presets.rs"));

/// Every preset of `data/models.json`, compiled in.
pub fn presets() -> &'static [Preset] {
    PRESETS
}

/// The preset with this id, if any.
pub fn preset(id: &str) -> Option<&'static Preset> {
    presets().iter().find(|p| p.id == id)
}

/// Presets whose id is closest to what a user typed (`mistral-7b`,
/// `llama3-70b`): ids compared without case or punctuation, a contained name
/// first, else the smallest edit distance (at most a third of the name).
pub fn suggest_presets(typed: &str) -> Vec<&'static str> {
    let norm = |s: &str| -> Vec<char> {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let want = norm(typed);
    if want.len() < 3 {
        return Vec::new();
    }
    let mut scored: Vec<(usize, &'static str)> = presets()
        .iter()
        .map(|p| {
            let id = norm(p.id);
            let contains = id.windows(want.len()).any(|w| w == want.as_slice());
            (
                if contains {
                    0
                } else {
                    edit_distance(&want, &id)
                },
                p.id,
            )
        })
        .filter(|(d, _)| *d <= (want.len() / 3).max(2))
        .collect();
    scored.sort();
    let best = scored.first().map_or(0, |(d, _)| *d);
    scored
        .into_iter()
        .take_while(|(d, _)| *d == best)
        .take(3)
        .map(|(_, id)| id)
        .collect()
}

/// Edit distance with insertions and deletions (a substitution is one of each).
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            // A changed character costs two (one out, one in): a name typed
            // short ("llama3-70b") is nearer its preset than a neighbour that
            // differs in a digit (llama-2-70b).
            row[j + 1] = (prev + 2 * usize::from(ca != cb))
                .min(row[j] + 1)
                .min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Why a pasted `config.json` could not be read.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    /// The config key at fault, if one.
    pub field: Option<String>,
    /// Why, rendered by the front.
    pub phrase: Phrase,
}

impl ConfigError {
    fn new(
        field: Option<&str>,
        id: Text,
        args: impl IntoIterator<Item = (&'static str, Arg)>,
    ) -> ConfigError {
        ConfigError {
            field: field.map(str::to_string),
            phrase: Phrase::of(id, args),
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.phrase.english())
    }
}

/// Families whose Hugging Face `config.json` this importer understands.
pub const SUPPORTED_MODEL_TYPES: &[&str] = &[
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "gpt_oss",
    "olmo2",
    "deepseek_v2",
    "deepseek_v3",
    "kimi_k2",
    "llama4",
    "llama4_text",
];

/// Read a Hugging Face `config.json` (Llama, Qwen2/3, Qwen3-MoE, Mistral,
/// Mixtral, Gemma 1/2/3, gpt-oss, OLMo 2) into an architecture.
pub fn from_hf_config(text: &str) -> Result<Architecture, ConfigError> {
    let root = crate::json::parse(text).map_err(|e| {
        let args: [(&'static str, Arg); 3] = [
            ("line", Arg::from(&e.line)),
            ("column", Arg::from(&e.column)),
            ("detail", Arg::from(&e.what)),
        ];
        ConfigError::new(None, Text::ConfigNotJson, args)
    })?;
    if !root.is_object() {
        return Err(ConfigError::new(None, Text::ConfigNotObject, []));
    }
    // Gemma 3 multimodal configs nest the language model under text_config.
    let cfg = match root.get("text_config") {
        Some(text_cfg) if text_cfg.is_object() => text_cfg,
        _ => &root,
    };
    let family = model_type(&root, cfg)?;
    let c = HfConfig {
        cfg,
        family: &family,
    };
    let arch = c.architecture()?;
    if let Some((field, phrase)) = arch.validate().into_iter().next() {
        return Err(ConfigError {
            field: Some(field.to_string()),
            phrase,
        });
    }
    Ok(arch)
}

/// The config's `model_type`, one the importer understands.
fn model_type(root: &Json, cfg: &Json) -> Result<String, ConfigError> {
    let model_type = cfg
        .get("model_type")
        .or_else(|| root.get("model_type"))
        .and_then(|v| v.as_str())
        .unwrap_or("");
    let types = SUPPORTED_MODEL_TYPES.join(", ");
    if model_type.is_empty() {
        let args: [(&'static str, Arg); 1] = [("types", Arg::from(&types))];
        return Err(ConfigError::new(
            Some("model_type"),
            Text::ConfigNoModelType,
            args,
        ));
    }
    if !SUPPORTED_MODEL_TYPES.contains(&model_type) {
        let args: [(&'static str, Arg); 2] = [
            ("model_type", Arg::from(model_type.to_string())),
            ("types", Arg::from(&types)),
        ];
        let id = Text::ConfigUnsupportedModelType;
        return Err(ConfigError::new(Some("model_type"), id, args));
    }
    Ok(model_type.to_string())
}

/// A config's language-model part and its family (`model_type`).
struct HfConfig<'a> {
    cfg: &'a Json,
    family: &'a str,
}

impl HfConfig<'_> {
    /// A positive whole number, if the key is there (and not null).
    fn int(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        match self.cfg.get(key) {
            None | Some(Json::Null) => Ok(None),
            Some(v) => v.as_u64().filter(|n| *n > 0).map(Some).ok_or_else(|| {
                let args: [(&'static str, Arg); 2] = [
                    ("key", Arg::from(key.to_string())),
                    ("value", Arg::from(v.to_string())),
                ];
                ConfigError::new(Some(key), Text::ConfigNotPositiveInteger, args)
            }),
        }
    }

    /// A positive whole number that must be there.
    fn need(&self, key: &str) -> Result<u64, ConfigError> {
        self.int(key)?.ok_or_else(|| {
            ConfigError::new(
                Some(key),
                Text::ConfigMissingKey,
                [("key", Arg::from(key.to_string()))],
            )
        })
    }

    fn flag(&self, key: &str, default: bool) -> bool {
        self.cfg
            .get(key)
            .and_then(|v| v.as_bool())
            .unwrap_or(default)
    }

    fn gemma(&self) -> bool {
        self.family.starts_with("gemma")
    }

    fn architecture(&self) -> Result<Architecture, ConfigError> {
        let hidden = self.need("hidden_size")?;
        let layers = self.need("num_hidden_layers")?;
        let heads = self.need("num_attention_heads")?;
        let moe = self.moe(layers)?;
        let (sliding_window, local_layers, chunked) = match self.llama4_chunks(layers)? {
            Some((w, n)) => (w, n, true),
            None => {
                let (w, n) = self.sliding_window(layers)?;
                (w, n, false)
            }
        };
        let gpt_oss = self.family == "gpt_oss";
        Ok(Architecture {
            layers,
            hidden,
            heads,
            kv_heads: self.int("num_key_value_heads")?.unwrap_or(heads),
            head_dim: self.head_dim(hidden, heads)?,
            ffn: match &moe {
                // Llama 4: `intermediate_size` is the expert's, the dense
                // layers' is `intermediate_size_mlp`.
                Some(m) if self.llama4() => {
                    self.int("intermediate_size_mlp")?.unwrap_or(m.expert_ffn)
                }
                Some(m) => self.int("intermediate_size")?.unwrap_or(m.expert_ffn),
                None => self.need("intermediate_size")?,
            },
            vocab: self.need("vocab_size")?,
            tied: self.flag("tie_word_embeddings", self.gemma()),
            mlp: self.mlp(),
            sliding_window,
            local_layers,
            qkv_bias: match self.family {
                "qwen2" | "gpt_oss" => true,
                _ => self.flag("attention_bias", false),
            },
            o_bias: match self.family {
                "gpt_oss" => true,
                "qwen2" => false,
                _ => self.flag("attention_bias", false),
            },
            mlp_bias: gpt_oss || self.flag("mlp_bias", false),
            qk_norm: match self.family {
                "qwen3" | "qwen3_moe" | "gemma3" | "gemma3_text" => QkNorm::PerHead,
                "olmo2" => QkNorm::Full,
                _ => QkNorm::None,
            },
            norms_per_layer: if self.family == "gemma2" || self.family.starts_with("gemma3") {
                4
            } else {
                2
            },
            attn_sinks: gpt_oss,
            max_context: self.int("max_position_embeddings")?.unwrap_or(0),
            chunked,
            moe,
            mla: self.mla()?,
            mtp_layers: self.int("num_nextn_predict_layers")?.unwrap_or(0),
            // Not read: a pasted config fills only the shape's overrides,
            // and a custom shape builds the default preset's RoPE (the
            // page's size, #37).
            rope: Rope::default(),
        })
    }

    fn llama4(&self) -> bool {
        self.family.starts_with("llama4")
    }

    fn deepseek(&self) -> bool {
        matches!(self.family, "deepseek_v2" | "deepseek_v3" | "kimi_k2")
    }

    /// MLA's ranks and head dims, where the config has `kv_lora_rank`.
    fn mla(&self) -> Result<Option<Mla>, ConfigError> {
        let Some(kv_lora_rank) = self.int("kv_lora_rank")? else {
            return Ok(None);
        };
        Ok(Some(Mla {
            q_lora_rank: self.int("q_lora_rank")?.unwrap_or(0),
            kv_lora_rank,
            qk_nope_dim: self.need("qk_nope_head_dim")?,
            qk_rope_dim: self.need("qk_rope_head_dim")?,
            v_head_dim: self.need("v_head_dim")?,
        }))
    }

    /// Llama 4's chunked attention: chunks of `attention_chunk_size` on the
    /// layers that use RoPE (`no_rope_layers[i] == 1`; by default three of
    /// every four), global attention without RoPE on the others.
    fn llama4_chunks(&self, layers: u64) -> Result<Option<(u64, u64)>, ConfigError> {
        if !self.llama4() {
            return Ok(None);
        }
        let Some(chunk) = self.int("attention_chunk_size")? else {
            return Ok(None);
        };
        let listed = self.cfg.get("no_rope_layers").and_then(|v| v.as_array());
        let chunked = match listed {
            Some(flags) if !flags.is_empty() => {
                flags.iter().filter(|f| f.as_u64() == Some(1)).count() as u64
            }
            _ => {
                let every = self.int("no_rope_layer_interval")?.unwrap_or(4).max(1);
                layers - layers / every
            }
        };
        Ok(Some((chunk, chunked)))
    }

    /// `head_dim`, else `hidden / heads` where that divides.
    fn head_dim(&self, hidden: u64, heads: u64) -> Result<u64, ConfigError> {
        if let Some(d) = self.int("head_dim")? {
            return Ok(d);
        }
        if !hidden.is_multiple_of(heads) {
            let args: [(&'static str, Arg); 2] =
                [("heads", Arg::from(&heads)), ("hidden", Arg::from(&hidden))];
            let id = Text::ConfigHeadsDoNotDivideHidden;
            return Err(ConfigError::new(Some("head_dim"), id, args));
        }
        Ok(hidden / heads)
    }

    /// GELU-gated for Gemma, plain GELU otherwise, else SwiGLU.
    fn mlp(&self) -> Mlp {
        let act = self
            .cfg
            .get("hidden_activation")
            .or_else(|| self.cfg.get("hidden_act"))
            .and_then(|v| v.as_str())
            .unwrap_or("silu");
        match (act.starts_with("gelu"), self.gemma()) {
            (true, true) => Mlp::Geglu,
            (true, false) => Mlp::Gelu,
            (false, _) => Mlp::Swiglu,
        }
    }

    /// The experts of Mixtral, Qwen3-MoE, gpt-oss, DeepSeek-V2/V3, Kimi K2
    /// and Llama 4, with their shared experts and dense layers.
    fn moe(&self, layers: u64) -> Result<Option<Moe>, ConfigError> {
        let families = matches!(self.family, "mixtral" | "qwen3_moe" | "gpt_oss");
        if !families && !self.deepseek() && !self.llama4() {
            return Ok(None);
        }
        let experts = self
            .int("num_local_experts")?
            .or(self.int("num_experts")?)
            .or(self.int("n_routed_experts")?)
            .ok_or_else(|| {
                ConfigError::new(Some("num_local_experts"), Text::ConfigNoExpertCount, [])
            })?;
        let active = self
            .int("num_experts_per_tok")?
            .or(self.int("experts_per_token")?)
            .ok_or_else(|| {
                let key = "num_experts_per_tok";
                ConfigError::new(
                    Some(key),
                    Text::ConfigMissingKey,
                    [("key", Arg::from(key.to_string()))],
                )
            })?;
        let expert_ffn = match self.int("moe_intermediate_size")? {
            Some(f) => f,
            None => self.need("intermediate_size")?,
        };
        let (shared, dense_layers) = if self.llama4() {
            // One shared expert per MoE layer; MoE every `step` layers.
            let step = self.int("interleave_moe_layer_step")?.unwrap_or(1).max(1);
            (1, layers - layers / step)
        } else {
            let shared = self.int("n_shared_experts")?.unwrap_or(0);
            (
                shared,
                self.int("first_k_dense_replace")?.unwrap_or(0).min(layers),
            )
        };
        Ok(Some(Moe {
            experts: experts as u32,
            active: active as u32,
            shared: shared as u32,
            expert_ffn,
            router_bias: self.family == "gpt_oss",
            dense_layers,
        }))
    }

    /// Sliding windows and how many layers use them: Mistral v0.1 (all
    /// layers), Gemma 2 (every other layer), Gemma 3 (5 local : 1 global),
    /// gpt-oss (`layer_types`), Qwen only if enabled.
    fn sliding_window(&self, layers: u64) -> Result<(u64, u64), ConfigError> {
        let window = self.int("sliding_window")?.unwrap_or(0);
        let qwen_off = self.family.starts_with("qwen") && !self.flag("use_sliding_window", false);
        if window == 0 || qwen_off {
            return Ok((0, 0));
        }
        let types = self.cfg.get("layer_types").and_then(|v| v.as_array());
        let local = match (types, self.family) {
            (Some(types), _) => types
                .iter()
                .filter(|t| t.as_str() == Some("sliding_attention"))
                .count() as u64,
            (None, "gemma2" | "gpt_oss") => layers.div_ceil(2),
            (None, "gemma3" | "gemma3_text") => {
                let pattern = self.int("sliding_window_pattern")?.unwrap_or(6).max(1);
                layers - layers / pattern
            }
            (None, "mistral" | "mixtral") => layers,
            _ => 0,
        };
        Ok((if local > 0 { window } else { 0 }, local))
    }
}

#[cfg(test)]
mod preset_tests {
    use super::*;

    /// build.rs writes the presets as Rust values; the reader every other
    /// shape goes through (`FromJson`) reads the same file to the same
    /// values, field by field.
    #[test]
    fn static_presets_match_the_file() {
        let text = include_str!("../data/models.json");
        let file = crate::json::parse(text).expect("models.json parses");
        let entries = file.as_array().expect("an array");
        assert_eq!(entries.len(), PRESETS.len());
        for (j, p) in entries.iter().zip(PRESETS) {
            let text = |k: &str| j.get(k).and_then(crate::json::Json::as_str).unwrap_or("");
            let strings = (p.id, p.name, p.hub, p.source);
            assert_eq!(
                strings,
                (text("id"), text("name"), text("hub"), text("source"))
            );
            assert_eq!(
                p.arch,
                Architecture::from_json(j).expect("a shape"),
                "{}",
                p.id
            );
        }
    }
}
