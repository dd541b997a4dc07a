//! Rotary position embeddings as a model's config.json sets them
//! (`rope_theta`, `rope_scaling`). They cost no memory and no time the
//! planner counts; they are carried so that the exported Megatron-Bridge
//! launcher builds the model the plan names (#37), where Megatron-Core's
//! defaults (base 10,000, no scaling) would build another.

use crate::formats::json::{named, opt, req, FromJson, Json};
use serde::Serialize;

/// The rotary base and its scaling.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rope {
    /// `rope_theta`.
    pub theta: f64,
    /// `rope_scaling`, absent for none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scaling: Option<RopeScaling>,
}

impl Default for Rope {
    /// Transformers' `LlamaConfig` default: base 10,000, no scaling.
    fn default() -> Self {
        Rope {
            theta: 10_000.0,
            scaling: None,
        }
    }
}

/// `rope_scaling`'s kind (`rope_type`, or `type` in older configs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RopeKind {
    /// Position interpolation by `factor` (Gemma 3's global layers).
    Linear,
    /// Llama 3.1's frequency bands.
    Llama3,
    /// YaRN (DeepSeek-V3, Kimi K2, gpt-oss).
    Yarn,
}

/// The scaling's parameters; those a kind does not use are `None`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RopeScaling {
    pub kind: RopeKind,
    pub factor: f64,
    /// `original_max_position_embeddings`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_context: Option<u64>,
    /// Llama 3's `low_freq_factor` and `high_freq_factor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low_freq_factor: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high_freq_factor: Option<f64>,
    /// YaRN's `beta_fast`, `beta_slow`, `mscale`, `mscale_all_dim`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta_fast: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta_slow: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mscale: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mscale_all_dim: Option<f64>,
    /// YaRN's `truncate` (rounding the correction range to whole
    /// dimensions): Transformers' default is true; gpt-oss sets false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncate: Option<bool>,
}

impl RopeScaling {
    /// Whether Megatron-Core's Llama 3.1 scaling (`rope_scaling=True`,
    /// `_apply_scaling` in rotary_pos_embedding.py: low 1, high 4, original
    /// context 8192, only the factor a setting) computes these frequencies.
    pub fn is_megatron_llama3(&self) -> bool {
        self.kind == RopeKind::Llama3
            && self.low_freq_factor.unwrap_or(1.0) == 1.0
            && self.high_freq_factor.unwrap_or(4.0) == 4.0
            && self.original_context.unwrap_or(8192) == 8192
    }
}

impl FromJson for RopeKind {
    fn from_json(j: &Json) -> Result<Self, String> {
        named(j, |s| match s {
            "linear" => Some(RopeKind::Linear),
            "llama3" => Some(RopeKind::Llama3),
            "yarn" => Some(RopeKind::Yarn),
            _ => None,
        })
    }
}

/// As `data/models.json` writes it (what `Serialize` writes). The optional
/// numbers are read without an error of their own (one reader for all, the
/// page's size): tests/megatron_bridge.rs holds every preset's to its file.
impl FromJson for RopeScaling {
    fn from_json(j: &Json) -> Result<Self, String> {
        let number = |key| j.get(key).and_then(Json::as_f64);
        Ok(RopeScaling {
            kind: req(j, "kind")?,
            factor: req(j, "factor")?,
            original_context: j.get("original_context").and_then(Json::as_u64),
            low_freq_factor: number("low_freq_factor"),
            high_freq_factor: number("high_freq_factor"),
            beta_fast: number("beta_fast"),
            beta_slow: number("beta_slow"),
            mscale: number("mscale"),
            mscale_all_dim: number("mscale_all_dim"),
            truncate: j.get("truncate").and_then(Json::as_bool),
        })
    }
}

impl FromJson for Rope {
    fn from_json(j: &Json) -> Result<Self, String> {
        Ok(Rope {
            theta: req(j, "theta")?,
            scaling: opt(j, "scaling")?,
        })
    }
}
