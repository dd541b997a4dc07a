//! The shape of a decoder model: attention, MLP, MoE, MLA and norms, as
//! presets, config.json and the URL give it.

use crate::formats::json::{named, opt, req, FromJson, Json};
use crate::model::architecture::rope::Rope;
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
