//! What the model says, as facts: a catalog id and typed arguments (#24).
//! The model builds a `Phrase`; a front renders it with `render` in the
//! language of the moment, with that language's number format and plural
//! forms. Nothing below the fronts writes a sentence.

use super::{num, plural, signed, t, Lang, Text};
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use std::borrow::Cow;
use std::fmt::Write;

const GIB: f64 = (1u64 << 30) as f64;

/// One value of a phrase, typed so that each language formats it.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A whole count, in digits without grouping (`8`, `1024`); it also
    /// picks a plural form (`{n|one|few|many}`).
    Count(u64),
    /// A decimal with this many places, in the language's format.
    Number(f64, u8),
    /// As `Number`, signed either way (`+1.5`, `−0.8`).
    Signed(f64, u8),
    /// A decimal as short as it reads exactly (`0.5`, `1000000`), with the
    /// language's decimal mark.
    Real(f64),
    /// Bytes, shown in GiB with one decimal.
    Bytes(u64),
    /// Verbatim: a name, a key, a value the user typed (the catalog's own
    /// words borrowed: most phrases name a fixed key or kind).
    Name(Cow<'static, str>),
    /// A phrase of the catalog, in the same language.
    Text(Text),
    /// Phrases, each rendered and joined.
    List(Vec<Phrase>, Join),
}

/// How the phrases of a list are joined.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Join {
    /// Side by side.
    Nothing,
    /// `a; b` (an accuracy note's parts, the axes it leaves).
    Semicolon,
    /// `a, b` (the values a check ran).
    Comma,
    /// `a and b`, in the language.
    And,
}

impl From<u64> for Arg {
    fn from(n: u64) -> Arg {
        Arg::Count(n)
    }
}

impl From<usize> for Arg {
    fn from(n: usize) -> Arg {
        Arg::Count(n as u64)
    }
}

impl From<u32> for Arg {
    fn from(n: u32) -> Arg {
        Arg::Count(n.into())
    }
}

impl From<&'static str> for Arg {
    fn from(s: &'static str) -> Arg {
        Arg::Name(Cow::Borrowed(s))
    }
}

impl From<Cow<'static, str>> for Arg {
    fn from(s: Cow<'static, str>) -> Arg {
        Arg::Name(s)
    }
}

impl From<String> for Arg {
    fn from(s: String) -> Arg {
        Arg::Name(Cow::Owned(s))
    }
}

impl From<&String> for Arg {
    fn from(s: &String) -> Arg {
        Arg::Name(Cow::Owned(s.clone()))
    }
}

impl From<Text> for Arg {
    fn from(id: Text) -> Arg {
        Arg::Text(id)
    }
}

impl From<Phrase> for Arg {
    fn from(p: Phrase) -> Arg {
        Arg::List(vec![p], Join::Nothing)
    }
}

/// A sentence of the catalog with its values, not yet in any language.
#[derive(Clone, Debug, PartialEq)]
pub struct Phrase {
    pub id: Text,
    pub args: Vec<(&'static str, Arg)>,
}

impl Phrase {
    pub fn new(id: Text) -> Phrase {
        Phrase { id, args: vec![] }
    }

    /// `text` as it is (a name, a value, a message from elsewhere).
    pub fn verbatim(text: impl Into<Arg>) -> Phrase {
        Phrase::new(Text::Verbatim).with("text", text)
    }

    /// The phrase with one more named value.
    pub fn with(mut self, name: &'static str, value: impl Into<Arg>) -> Phrase {
        self.args.push((name, value.into()));
        self
    }

    /// The value named `name`, if the phrase has one.
    pub fn arg(&self, name: &str) -> Option<&Arg> {
        self.args.iter().find(|(n, _)| *n == name).map(|(_, a)| a)
    }

    /// The English text (the CLI's JSON `message`, logs, tests).
    pub fn english(&self) -> String {
        render(Lang::En, self)
    }
}

/// Phrases joined by `; ` (an accuracy note's parts).
pub fn render_all(lang: Lang, phrases: &[Phrase]) -> String {
    let parts: Vec<String> = phrases.iter().map(|p| render(lang, p)).collect();
    parts.join("; ")
}

/// The phrase in `lang`: its template with each `{name}` replaced by its
/// value in the language's format, and each `{name|form|...}` by the plural
/// form its count takes (`plural`). A value is never re-read as a template.
pub fn render(lang: Lang, phrase: &Phrase) -> String {
    let template = t(lang, phrase.id);
    let mut out = String::with_capacity(template.len() + 16 * phrase.args.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let slot = after.find('}').map(|close| (close, &after[..close]));
        let Some((close, slot)) = slot else {
            out.push('{');
            rest = after;
            continue;
        };
        let (name, forms) = slot.split_once('|').unwrap_or((slot, ""));
        match phrase.arg(name) {
            Some(Arg::Count(n)) if !forms.is_empty() => out.push_str(plural(lang, *n, forms)),
            Some(arg) if forms.is_empty() => write_arg(&mut out, lang, arg),
            _ => {
                out.push('{');
                rest = after;
                continue;
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

fn write_arg(out: &mut String, lang: Lang, arg: &Arg) {
    match arg {
        Arg::Count(n) => {
            let _ = write!(out, "{n}");
        }
        Arg::Number(x, places) => out.push_str(&num(*x, *places as usize, lang)),
        Arg::Signed(x, places) => out.push_str(&signed(*x, *places as usize, lang)),
        Arg::Bytes(b) => out.push_str(&num(*b as f64 / GIB, 1, lang)),
        Arg::Real(x) => {
            let s = x.to_string();
            out.push_str(&match lang {
                Lang::Ru => s.replace('.', ","),
                Lang::En => s,
            });
        }
        Arg::Name(s) => out.push_str(s),
        Arg::Text(id) => out.push_str(t(lang, *id)),
        Arg::List(items, join) => {
            for (i, p) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(match join {
                        Join::Nothing => "",
                        Join::Semicolon => "; ",
                        Join::Comma => ", ",
                        Join::And => t(lang, Text::And),
                    });
                }
                out.push_str(&render(lang, p));
            }
        }
    }
}

/// In JSON, a phrase is its id and its values: counts and numbers as JSON
/// numbers, names as strings, catalog phrases as their ids.
impl Serialize for Phrase {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Phrase", 2)?;
        st.serialize_field("id", self.id.name())?;
        st.serialize_field("args", &Args(&self.args))?;
        st.end()
    }
}

struct Args<'a>(&'a [(&'static str, Arg)]);

impl Serialize for Args<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, arg) in self.0 {
            map.serialize_entry(name, arg)?;
        }
        map.end()
    }
}

impl Serialize for Arg {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Arg::Count(n) | Arg::Bytes(n) => s.serialize_u64(*n),
            Arg::Number(x, _) | Arg::Signed(x, _) | Arg::Real(x) => s.serialize_f64(*x),
            Arg::Name(v) => s.serialize_str(v),
            Arg::Text(id) => s.serialize_str(id.name()),
            Arg::List(items, _) => items.serialize(s),
        }
    }
}

macro_rules! arg_from_ref {
    ($($t:ty),*) => {$(
        impl From<&$t> for Arg {
            fn from(v: &$t) -> Arg {
                v.clone().into()
            }
        }
    )*};
}

arg_from_ref!(u64, u32, usize, &'static str, Text);

impl Phrase {
    /// The catalog's `id` with these values.
    pub fn of(id: Text, args: impl IntoIterator<Item = (&'static str, Arg)>) -> Phrase {
        // Room for the few `with`s that usually follow (a label's note
        // takes three more): growing the list cost more than the phrase.
        let mut all = Vec::with_capacity(6);
        all.extend(args);
        Phrase { id, args: all }
    }
}

impl Text {
    /// The stable code of a message with this text (reports' `code`), None
    /// for a text no message uses. One table, so that the page does not
    /// carry every id's name to derive them: each code is the id in
    /// snake_case (digits kept with their letters), except the codes older
    /// than their texts, which scripts already match on (the test below
    /// holds every other to its id).
    pub fn code(self) -> Option<&'static str> {
        Some(match self {
            Text::BlackwellOnly => "blackwell_only",
            Text::CheckpointOverhead => "checkpoint_overhead",
            Text::InterruptionsCost => "interruptions_cost",
            Text::InterruptionsNeverFinish => "interruptions_never_finish",
            Text::CountsSaturated => "counts_saturated",
            Text::CpDoesNotDivideSeq => "cp_does_not_divide_seq",
            Text::CrossesNvlinkDomain => "crosses_nvlink_domain",
            Text::CustomFp8AboveBf16 => "custom_fp8_above_twice_bf16",
            Text::DimsNotMultipleOf64 => "dims_not_multiple_of_64",
            Text::EagerAttentionLongSequence => "eager_attention_long_sequence",
            Text::EpDoesNotDivideExperts => "ep_does_not_divide_experts",
            Text::EpExceedsGpus => "ep_exceeds_gpus",
            Text::EpWithoutMoe => "ep_without_moe",
            Text::Fp32Slow => "fp32_slow",
            Text::Fp8KeepBf16 => "fp8_keep_bf16",
            Text::Fp8SmallModel => "fp8_small_model",
            Text::Fp8Unsupported => "fp8_unsupported",
            Text::GrpoCompletionTooLong => "grpo_completion_too_long",
            Text::GrpoMeanOverLongest => "grpo_mean_over_longest",
            Text::GrpoEngineTooSmall => "grpo_engine_too_small",
            Text::GrpoGenGpus => "grpo_gen_gpus",
            Text::GrpoGenTp => "grpo_gen_tp",
            Text::GrpoGenPp => "grpo_gen_pp",
            Text::GrpoGroupsSplit => "grpo_groups_split",
            Text::GrpoRefuses => "grpo_launcher_refuses",
            Text::GrpoServerTooSmall => "grpo_server_too_small",
            Text::HeadsDoNotDivideHidden => "heads_do_not_divide_hidden",
            Text::HfModelParallel => "hf_model_parallel",
            Text::HfTpAdapters => "hf_tp_adapters",
            Text::HfTpDpo => "hf_tp_dpo",
            Text::HfTpLayer => "hf_tp_layer",
            Text::HfTpLowPrecision => "hf_tp_low_precision",
            Text::HfTpNeedsFsdp => "hf_tp_needs_fsdp",
            Text::ActiveExpertsOutOfRange
            | Text::ExpertFfnNotPositive
            | Text::KvHeadsDoNotDivideHeads
            | Text::NotPositiveWhole => "invalid_architecture",
            Text::JobShorterThanAStep => "job_shorter_than_a_step",
            Text::LongSequenceWithoutCheckpointing => "long_sequence_without_checkpointing",
            Text::LoraTargetsNotInModel => "lora_targets_not_in_model",
            Text::LowPrecisionAdapters => "low_precision_adapters",
            Text::MegatronLauncherRefuses => "megatron_launcher_refuses",
            Text::MemoryUnderused => "memory_underused",
            Text::MicroBatchOneLowUtilisation => "micro_batch_one_low_utilisation",
            Text::MoeLaunchBound => "moe_launch_bound",
            Text::MtpNeedsMegatron => "mtp_needs_megatron",
            Text::NetworkBound => "network_bound",
            Text::NoEfaAcrossNodes => "no_efa_across_nodes",
            Text::NoNetwork => "no_network",
            Text::OffloadExceedsHost => "offload_exceeds_host",
            Text::SleepExceedsHost => "sleep_exceeds_host",
            Text::PhasesExceedHost => "phases_exceed_host",
            Text::OverBudget => "over_budget",
            Text::ParallelDegreesExceedGpus => "parallel_degrees_exceed_gpus",
            Text::PeftFp32AdapterCasts => "peft_fp32_adapter_casts",
            Text::PpDoesNotDivideLayers => "pp_does_not_divide_layers",
            Text::PpExceedsLayers => "pp_exceeds_layers",
            Text::PpSplitInvalid => "pp_split_invalid",
            Text::NeedsTrainingPlan => "needs_training_plan",
            Text::TrainingPlanCount => "training_plan_count",
            Text::UltraServerPlacementLimit => "ultra_server_placement_limit",
            Text::PriceDated => "price_dated",
            Text::CheckpointlessNotBundled => "checkpointless_not_bundled",
            Text::PriceDerived => "price_derived",
            Text::PriceTrainingPlansOnly | Text::PriceUltraServerOnly | Text::PriceUnknown => {
                "price_unknown"
            }
            Text::QloraNeedsHf => "qlora_needs_hf",
            Text::QloraSharded => "qlora_sharded",
            Text::SelectiveNoopWithFlash => "selective_noop_with_flash",
            Text::SequenceBeyondContext => "sequence_beyond_context",
            Text::ShardDoesNotDivideDp => "shard_does_not_divide_dp",
            Text::StackNotBundled => "stack_not_bundled",
            Text::TpDoesNotDivideHeads => "tp_does_not_divide_heads",
            Text::TpExceedsNode => "tp_exceeds_node",
            Text::TpOverlapWithoutSp => "tp_overlap_without_sp",
            Text::VpWithoutPp => "vp_without_pp",
            _ => return None,
        })
    }
}

/// `CamelCase` as `snake_case`: an underscore before each capital but the
/// first (what a message's code is, from its id).
#[cfg(test)]
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// A problem or advice with a stable code, tied to the input key it concerns:
/// the one message type of reports, link notices and imports (#24).
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// The plan key (URL key) the message is about, where there is one.
    pub key: Option<&'static str>,
    /// What it says, rendered by the front.
    pub phrase: Phrase,
    /// A single setting that fixes it: (URL key, value).
    pub fix: Option<(&'static str, String)>,
}

impl Message {
    /// The catalog's `id` with `args`, about the URL key `key`.
    pub fn new(
        key: &'static str,
        id: Text,
        args: impl IntoIterator<Item = (&'static str, Arg)>,
    ) -> Message {
        debug_assert!(id.code().is_some(), "{id:?} has no message code");
        Message {
            key: Some(key),
            phrase: Phrase::of(id, args),
            fix: None,
        }
    }

    /// The one setting that fixes it.
    pub fn fix(mut self, key: &'static str, value: impl Into<String>) -> Message {
        self.fix = Some((key, value.into()));
        self
    }

    /// What the message is about, typed: its text's id.
    pub fn id(&self) -> Text {
        self.phrase.id
    }

    /// The stable code scripts match on (the JSON's `code`).
    pub fn code(&self) -> &'static str {
        self.phrase.id.code().unwrap_or("message")
    }

    /// What it says in English (the JSON's `message`, logs, tests).
    pub fn english(&self) -> String {
        self.phrase.english()
    }
}

/// In JSON: the code, the key, the English `message` (as before #24), the
/// phrase's `id` and `args` for scripts to match on, and the fix.
impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Message", 6)?;
        st.serialize_field("code", self.code())?;
        st.serialize_field("key", &self.key)?;
        st.serialize_field("message", &self.phrase.english())?;
        st.serialize_field("id", self.phrase.id.name())?;
        st.serialize_field("args", &Args(&self.phrase.args))?;
        st.serialize_field("fix", &self.fix)?;
        st.end()
    }
}

impl From<&Arg> for Arg {
    fn from(a: &Arg) -> Arg {
        a.clone()
    }
}

/// A phrase as a report's JSON carries it: its English text for a reader,
/// and its id and arguments for a program or another language (#34).
struct Said<'a>(&'a Phrase);

impl Serialize for Said<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Said", 3)?;
        st.serialize_field("text", &self.0.english())?;
        st.serialize_field("id", self.0.id.name())?;
        st.serialize_field("args", &Args(&self.0.args))?;
        st.end()
    }
}

/// `#[serde(serialize_with = "said")]`: a phrase with its English text, id
/// and arguments (a model's name, a candidate's why).
pub fn said<S: Serializer>(p: &Phrase, s: S) -> Result<S::Ok, S::Error> {
    Said(p).serialize(s)
}

/// `#[serde(serialize_with = "said_each")]`: phrases, each as `said` writes it.
pub fn said_each<S: Serializer>(ps: &[Phrase], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ps.iter().map(Said))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes reports have always carried (tests/data/golden_reports.jsonl
    /// holds them): derived from the text id, digits kept with their letters,
    /// and the older family codes kept.
    #[test]
    fn codes_follow_their_texts() {
        let older = [
            (Text::NotPositiveWhole, "invalid_architecture"),
            (Text::KvHeadsDoNotDivideHeads, "invalid_architecture"),
            (Text::ActiveExpertsOutOfRange, "invalid_architecture"),
            (Text::ExpertFfnNotPositive, "invalid_architecture"),
            (Text::GrpoRefuses, "grpo_launcher_refuses"),
            (Text::CustomFp8AboveBf16, "custom_fp8_above_twice_bf16"),
            (Text::PriceUltraServerOnly, "price_unknown"),
            (Text::PriceTrainingPlansOnly, "price_unknown"),
            (Text::DimsNotMultipleOf64, "dims_not_multiple_of_64"),
        ];
        let mut coded = 0;
        for &id in Text::ALL {
            let Some(code) = id.code() else { continue };
            coded += 1;
            match older.iter().find(|(t, _)| *t == id) {
                Some((_, old)) => assert_eq!(code, *old, "{id:?}"),
                None => assert_eq!(code, snake_case(id.name()), "{id:?}"),
            }
        }
        assert!(coded >= 60, "{coded} message texts");
        assert_eq!(Text::Fp8SmallModel.code(), Some("fp8_small_model"));
        assert_eq!(Text::CandidateWhy.code(), None);
        let m = Message::new("tp", Text::HfTpLayer, []);
        assert_eq!((m.id(), m.code()), (Text::HfTpLayer, "hf_tp_layer"));
    }
}
