//! A pasted config.json as the page's worker reads it (#59: the page's
//! wasm holds no JSON reader): the model it gives, written as a link writes
//! a model, or the key at fault and why, for the page to render in its
//! language.

use super::choices::ArchOverrides;
use super::types::{ModelChoice, Plan};
use crate::formats::fields::{field, record, Fields};
use crate::model::architecture::{from_hf_config, Architecture, ConfigError};
use crate::text::Phrase;

impl ModelChoice {
    /// A custom model of the shape of `a`, every field given.
    pub fn of_architecture(a: &Architecture) -> ModelChoice {
        ModelChoice {
            params_b: None,
            preset: "custom".into(),
            arch: ArchOverrides {
                layers: Some(a.layers),
                hidden: Some(a.hidden),
                heads: Some(a.heads),
                kv_heads: Some(a.kv_heads),
                head_dim: Some(a.head_dim),
                ffn: Some(a.moe.map_or(a.ffn, |m| m.expert_ffn)),
                vocab: Some(a.vocab),
                tied: Some(a.tied),
                mlp: Some(a.mlp),
                experts: a.moe.map(|m| m.experts as u64),
                active_experts: a.moe.map(|m| m.active as u64),
                expert_ffn: a.moe.map(|m| m.expert_ffn),
            },
        }
    }
}

/// The worker's reply to a pasted config.json: `1` and the model's link,
/// or `0`, the key at fault (empty if none) and why (`Phrase::fields`).
pub fn config_reply(text: &str) -> String {
    match from_hf_config(text) {
        Ok(a) => {
            let model = ModelChoice::of_architecture(&a);
            let query = Plan {
                model,
                ..Plan::default()
            }
            .to_query();
            record(["1".into(), field(query)])
        }
        Err(e) => {
            let at = field(e.field.unwrap_or_default());
            record([vec!["0".into(), at], e.phrase.fields()].concat())
        }
    }
}

/// The model, or why not, that `config_reply` wrote (a reply that does
/// not read says so, as it is).
pub fn read_config_reply(reply: &str) -> Result<ModelChoice, ConfigError> {
    let unread = |why: String| ConfigError {
        field: None,
        phrase: Phrase::verbatim(why),
    };
    let mut f = Fields::new(reply);
    match f.text() {
        "1" => {
            let query = f.text();
            let query = f.done(query).map_err(unread)?;
            Ok(Plan::from_query(query).plan.model)
        }
        "0" => {
            let at = f.text();
            let phrase = Phrase::read(&mut f).map_err(unread)?;
            let field = (!at.is_empty()).then(|| at.to_string());
            Err(ConfigError { field, phrase })
        }
        t => Err(unread(format!("not a config reply: \"{t}\""))),
    }
}
