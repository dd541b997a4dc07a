//! The Linear layers LoRA adapts (PEFT's `target_modules`), as a set of
//! module roles: what a `LoraConfig` names, in each family's own words, and
//! the three sets the link has always taken (`all-linear`, `attention`,
//! `q,v`).

use serde::{Serialize, Serializer};
use std::borrow::Cow;

/// A set of the decoder layer's Linear modules that carry adapters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LoraTargets(u16);

const Q: u16 = 1;
const K: u16 = 1 << 1;
const V: u16 = 1 << 2;
const O: u16 = 1 << 3;
const GATE: u16 = 1 << 4;
const UP: u16 = 1 << 5;
const DOWN: u16 = 1 << 6;
/// Multi-head latent attention's projections (DeepSeek-V3, Kimi K2).
const Q_A: u16 = 1 << 7;
const Q_B: u16 = 1 << 8;
const KV_A: u16 = 1 << 9;
const KV_B: u16 = 1 << 10;
const MLA: u16 = Q_A | Q_B | KV_A | KV_B;
const ALL: u16 = (1 << 11) - 1;

/// PEFT's module names in Transformers' Llama, Qwen, Mistral, Gemma, OLMo
/// and DeepSeek families, in the order the link writes them.
const NAMES: [(&str, u16); 11] = [
    ("q_proj", Q),
    ("k_proj", K),
    ("v_proj", V),
    ("o_proj", O),
    ("gate_proj", GATE),
    ("up_proj", UP),
    ("down_proj", DOWN),
    ("q_a_proj", Q_A),
    ("q_b_proj", Q_B),
    ("kv_a_proj_with_mqa", KV_A),
    ("kv_b_proj", KV_B),
];

/// Other names for the same modules: Mixtral's experts (`w1` gate, `w3`
/// up, `w2` down: Transformers' `MixtralBlockSparseTop2MLP`), GPT-style
/// MLPs (`fc1`, `fc2`), and Megatron-Core's fused modules as
/// Megatron-Bridge's LoRA names them (`linear_qkv`: q, k and v in one;
/// `linear_fc1`: gate and up in one), its canonical LoRA's unfused ones
/// and its MLA ones.
const ALIASES: [(&str, u16); 19] = [
    ("w1", GATE),
    ("w3", UP),
    ("w2", DOWN),
    ("fc1", UP),
    ("fc2", DOWN),
    ("linear_qkv", Q | K | V),
    ("linear_proj", O),
    ("linear_fc1", GATE | UP),
    ("linear_fc2", DOWN),
    ("linear_q", Q),
    ("linear_k", K),
    ("linear_v", V),
    ("linear_fc1_gate", GATE),
    ("linear_fc1_up", UP),
    ("linear_q_proj", Q),
    ("linear_q_down_proj", Q_A),
    ("linear_q_up_proj", Q_B),
    ("linear_kv_down_proj", KV_A),
    ("linear_kv_up_proj", KV_B),
];

/// The sets the link names by a word: every Linear (PEFT's `all-linear`,
/// the MoE router excluded), the attention block's, and `q,v` (PEFT's
/// default for Llama, Mistral, Mixtral, Qwen2/3 and Gemma:
/// peft/utils/constants.py `TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`;
/// on MLA models every query and key-value projection, as train.py has
/// always adapted them).
const SETS: [(&str, u16); 3] = [
    ("all-linear", ALL),
    ("attention", Q | K | V | O | MLA),
    ("q,v", Q | V | MLA),
];

impl LoraTargets {
    /// Every Linear of the decoder layers.
    pub const ALL_LINEAR: LoraTargets = LoraTargets(ALL);
    /// The attention projections.
    pub const ATTENTION: LoraTargets = LoraTargets(Q | K | V | O | MLA);
    /// PEFT's default q and v (`q,v`).
    pub const QV: LoraTargets = LoraTargets(Q | V | MLA);

    /// The link's text: a set's word, or PEFT's module names joined by commas.
    pub fn key(self) -> Cow<'static, str> {
        if let Some((word, _)) = SETS.iter().find(|(_, bits)| *bits == self.0) {
            return Cow::Borrowed(word);
        }
        Cow::Owned(self.module_names().join(","))
    }

    /// PEFT's names of the modules in the set, in the link's order.
    pub fn module_names(self) -> Vec<&'static str> {
        NAMES
            .iter()
            .filter(|(_, bit)| self.0 & bit != 0)
            .map(|(name, _)| *name)
            .collect()
    }

    /// Read a set's word or a list of module names, as a `LoraConfig`'s
    /// `target_modules` writes them (`q_proj,v_proj`, `["q_proj", "v_proj"]`).
    /// `Err` carries the first name not understood.
    pub fn parse(text: &str) -> Result<LoraTargets, String> {
        let text = text.trim();
        if let Some((_, bits)) = SETS.iter().find(|(word, _)| *word == text) {
            return Ok(LoraTargets(*bits));
        }
        let mut bits = 0;
        let names = text.trim_matches(|c| c == '[' || c == ']' || c == '(' || c == ')');
        for raw in names.split([',', ' ']) {
            let name = raw.trim().trim_matches(|c| c == '"' || c == '\'');
            if name.is_empty() {
                continue;
            }
            let bit = NAMES
                .iter()
                .chain(ALIASES.iter())
                .chain(SETS.iter())
                .find(|(n, _)| *n == name)
                .map(|(_, b)| *b)
                .ok_or_else(|| name.chars().take(40).collect::<String>())?;
            bits |= bit;
        }
        if bits == 0 {
            return Err(String::new());
        }
        Ok(LoraTargets(bits))
    }

    /// The accepted words and names, for messages.
    pub fn keys() -> String {
        let sets = SETS.iter().map(|(w, _)| *w);
        let names = NAMES.iter().map(|(n, _)| *n);
        sets.chain(names).collect::<Vec<_>>().join(", ")
    }

    /// The adapted modules, by role.
    pub fn adapted(self) -> crate::model::architecture::Adapted {
        let on = |bit: u16| self.0 & bit != 0;
        crate::model::architecture::Adapted {
            q: on(Q),
            k: on(K),
            v: on(V),
            o: on(O),
            gate: on(GATE),
            up: on(UP),
            down: on(DOWN),
            q_a: on(Q_A),
            q_b: on(Q_B),
            kv_a: on(KV_A),
            kv_b: on(KV_B),
            fused: false,
        }
    }

    /// The set as Megatron-Core's fused modules adapt it: `linear_qkv`
    /// adapts q, k and v together and `linear_fc1` gate and up together
    /// (Megatron-Bridge's `LoRA`; its `CanonicalLoRA` splits them), so a
    /// set with one of a fused pair takes the whole module.
    pub fn fused(self) -> LoraTargets {
        let mut bits = self.0;
        if bits & (Q | K | V) != 0 {
            bits |= Q | K | V;
        }
        if bits & (GATE | UP) != 0 {
            bits |= GATE | UP;
        }
        LoraTargets(bits)
    }
}

impl Serialize for LoraTargets {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.key())
    }
}

#[cfg(test)]
mod tests {
    use super::LoraTargets;

    /// The old words read as before and are written back the same; PEFT's
    /// names, in any order and as a Python list, read as their set.
    #[test]
    fn words_and_peft_names_round_trip() {
        for word in ["all-linear", "attention", "q,v"] {
            assert_eq!(LoraTargets::parse(word).unwrap().key(), word);
        }
        let qv = LoraTargets::parse("v_proj, q_proj").unwrap();
        assert_eq!(qv.key(), "q_proj,v_proj");
        assert_eq!(LoraTargets::parse(r#"["q_proj", "v_proj"]"#), Ok(qv));
        let every = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj";
        let seven = LoraTargets::parse(every).unwrap();
        assert_eq!(seven.key(), every);
        // Mixtral's expert names are the same roles.
        assert_eq!(
            LoraTargets::parse("w1,w2,w3").unwrap().key(),
            "gate_proj,up_proj,down_proj"
        );
        assert_eq!(LoraTargets::parse("q_proj,lm_head"), Err("lm_head".into()));
        assert_eq!(LoraTargets::parse(" , "), Err(String::new()));
    }

    /// Megatron fuses q, k and v, and gate and up: one of a pair adapts both.
    #[test]
    fn fused_pairs_take_both() {
        let qv = LoraTargets::parse("q_proj,v_proj").unwrap();
        assert_eq!(qv.fused().key(), "q_proj,k_proj,v_proj");
        let gate = LoraTargets::parse("gate_proj").unwrap();
        assert_eq!(gate.fused().key(), "gate_proj,up_proj");
        let parsed = LoraTargets::parse("linear_qkv,linear_proj,linear_fc1,linear_fc2").unwrap();
        assert_eq!(
            parsed.key(),
            "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"
        );
    }
}
