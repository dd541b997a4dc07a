//! Hugging Face `config.json` import: the model types read and the
//! fields each one names.

use super::types::*;
use crate::formats::json::Json;
use crate::model::architecture::rope::Rope;
use crate::text::{Arg, Phrase, Text};

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
    let root = crate::formats::json::parse(text).map_err(|e| {
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
