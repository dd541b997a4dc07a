//! The plan's URL query form (SPEC §8): every key, the forgiving decoder
//! (an unknown key ignored with a notice, a bad value kept at its default
//! with a notice naming the key) and the encoder.

use super::choices::{
    Attention, LoraDtype, Loss, Optimizer, Precision, SaveKind, Stack, Training, TrainingStage,
};
use super::choices::{Checkpointing, InstanceId, RecomputeModules, Recovery, SCHEMA_VERSION};
use super::fields::{
    valid_entry, valid_hf_model, valid_job, valid_role, valid_s3, valid_training_plan,
};
use super::types::{Locks, LoraTargets, Plan};
use crate::text::{Arg, Lang, Phrase, Text};
use serde::Serialize;
use std::fmt::Display;

/// Something the decoder ignored or corrected, tied to the key it concerns.
/// Its words are rendered when shown, in the language of that moment (#24:
/// rendered at parse time, a page opened in English kept English notices
/// after switching to Russian, whose catalog it had not fetched yet).
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    pub key: String,
    pub problem: Problem,
}

impl Notice {
    /// The English text (the CLI's stderr, logs).
    pub fn message(&self) -> String {
        self.problem.english()
    }
}

/// The JSON report's notice: its key, its English text, and its phrase.
impl Serialize for Notice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Notice", 3)?;
        st.serialize_field("key", &self.key)?;
        st.serialize_field("message", &self.message())?;
        st.serialize_field("phrase", &self.problem)?;
        st.end()
    }
}

/// Why a value was not taken: a catalog phrase, rendered when shown.
pub type Problem = Phrase;

/// The catalog's `id` with values shown as they print (keys, values typed).
fn problem(id: Text, args: &[(&'static str, &dyn Display)]) -> Problem {
    Phrase::of(id, args.iter().map(|(k, v)| (*k, Arg::from(v.to_string()))))
}

/// The result of reading a query string.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decoded {
    pub plan: Plan,
    pub notices: Vec<Notice>,
    /// The link's language (`lang=`), the page's to show; not part of the plan.
    pub lang: Option<Lang>,
    /// The link's pinned plan (`vs=`) as its short query: the page's to
    /// compare with; not part of the plan.
    pub pinned: Option<String>,
}

/// A link's pinned plan (`vs=`): its short query, `None` for an empty value
/// (unpinned), or the first problem of a plan that does not decode.
fn pinned_plan(value: &str) -> Result<Option<String>, Problem> {
    if value.is_empty() {
        return Ok(None);
    }
    let pinned = Plan::from_query(value);
    if let Some(first) = pinned.notices.first() {
        let f = Field { key: "vs", value };
        return Err(f.bad(Text::ExpectedPinnedPlan, &[("key", &first.key)]));
    }
    Ok(Some(pinned.plan.short_query()))
}

/// A plan's link query with its pinned plan (`vs=`) after it, as the page
/// writes it to the address bar.
pub fn with_pinned(query: String, pinned: Option<&str>) -> String {
    match pinned {
        Some(vs) => format!("{query}&vs={}", percent_encode(vs)),
        None => query,
    }
}

/// Keys whose empty value means "none" (the field was emptied).
const OPTIONAL: [&str; 11] = [
    "lora_alpha",
    "completion_mean",
    "ws_gib",
    "frag",
    "shard",
    "pp_first",
    "pp_last",
    "offload_layers",
    "price",
    "budget",
    "deadline",
];

/// The keys of a custom GPU (`instance=custom`).
const CUSTOM_GPU_KEYS: [&str; 7] = [
    "gpu_mem",
    "gpu_bf16",
    "gpu_fp8",
    "gpu_bw",
    "gpu_count",
    "gpu_nvlink",
    "gpu_net",
];

/// Longest value accepted for any key (a link is not a storage format).
const MAX_VALUE_LEN: usize = 512;

/// Every key the schema knows, in the order `to_query` writes them.
pub const KEYS: &[&str] = &[
    "v",
    "model",
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "ffn",
    "vocab",
    "tied",
    "mlp",
    "experts",
    "active_experts",
    "expert_ffn",
    "params_b",
    "train",
    "stage",
    "generations",
    "completion",
    "completion_mean",
    "beta",
    "gen_share",
    "gen_gpus",
    "gen_tp",
    "gen_pp",
    "sleep",
    "lora_rank",
    "lora_alpha",
    "lora_targets",
    "lora_dtype",
    "seq",
    "mb",
    "ga",
    "tokens",
    "precision",
    "optimizer",
    "ckpt",
    "offload",
    "offload_layers",
    "grad_bf16",
    "fp8_params",
    "bf16_moments",
    "recompute_modules",
    "mtp",
    "attn",
    "loss",
    "stack",
    "impl",
    "compile",
    "zero",
    "shard",
    "tp",
    "sp",
    "pp",
    "vp",
    "pp_first",
    "pp_last",
    "cp",
    "ep",
    "instance",
    "gpu_mem",
    "gpu_bf16",
    "gpu_fp8",
    "gpu_bw",
    "gpu_count",
    "gpu_nvlink",
    "gpu_net",
    "nodes",
    "overlap",
    "tp_overlap",
    "ep_overlap",
    "moe_flex",
    "moe_graphs",
    "moe_imbalance",
    "ultraserver",
    "spot",
    "price",
    "save_every",
    "save",
    "async_save",
    "save_bw",
    "fail_rate",
    "restart_min",
    "spot_rate",
    "recovery",
    "headroom",
    "ws_gib",
    "frag",
    "role",
    "s3",
    "job",
    "entry",
    "hf_model",
    "training_plan",
    "lock",
    "budget",
    "deadline",
    "lang",
    "vs",
];

impl Plan {
    /// Read a plan from a URL, a query string (with or without `?`), or `&`-joined pairs.
    pub fn from_query(input: &str) -> Decoded {
        let mut plan = Plan::default();
        let mut notices = Vec::new();
        let mut custom_keys = Vec::new();
        let mut lang = None;
        let mut pinned = None;
        let query = match input.find('?') {
            Some(i) => &input[i + 1..],
            None => input,
        };
        let query = query.split('#').next().unwrap_or("");
        for pair in query.split(['&', ';']).filter(|p| !p.trim().is_empty()) {
            let (raw_key, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = percent_decode(raw_key);
            let value = percent_decode(raw_value);
            let key = key.trim();
            if value.chars().count() > MAX_VALUE_LEN {
                let key = safe_key(key);
                let args: [(&str, &dyn Display); 2] = [("key", &key), ("max", &MAX_VALUE_LEN)];
                let problem = problem(Text::ValueTooLong, &args);
                notices.push(Notice { key, problem });
                continue;
            }
            let taken = if key == "lang" {
                let f = Field {
                    key,
                    value: value.trim(),
                };
                f.one_of(Lang::from_key, Lang::keys).map(|l| lang = Some(l))
            } else if key == "vs" {
                pinned_plan(value.trim()).map(|p| pinned = p)
            } else {
                plan.set(key, value.trim())
            };
            if let Err(problem) = taken {
                notices.push(Notice {
                    key: safe_key(key),
                    problem,
                });
            } else if CUSTOM_GPU_KEYS.contains(&key) {
                custom_keys.push(safe_key(key));
            }
        }
        // A custom GPU's figures describe `instance=custom` only: beside a
        // known instance they would be read and silently ignored.
        if !plan.hardware.instance.is_custom() {
            for key in custom_keys {
                let args: [(&str, &dyn Display); 2] =
                    [("key", &key), ("instance", &plan.hardware.instance.key())];
                let problem = problem(Text::CustomGpuKeyIgnored, &args);
                notices.push(Notice { key, problem });
            }
        }
        Decoded {
            plan,
            notices,
            lang,
            pinned,
        }
    }

    /// Set one key from its URL value; `Err` says why the value was not taken.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), Problem> {
        // An emptied optional field goes back to its default (none).
        if value.is_empty() && OPTIONAL.contains(&key) {
            self.clear(key);
            return Ok(());
        }
        let f = Field { key, value };
        let groups: [fn(&mut Plan, &Field) -> Taken; 6] = [
            Plan::set_model,
            Plan::set_training,
            Plan::set_parallelism,
            Plan::set_hardware,
            Plan::set_launch,
            Plan::set_page,
        ];
        for set in groups {
            if set(self, &f)? {
                return Ok(());
            }
        }
        let key = shorten(key);
        let args: [(&str, &dyn Display); 1] = [("key", &key)];
        Err(problem(Text::UnknownKey, &args))
    }

    /// An optional key set to nothing.
    fn clear(&mut self, key: &str) {
        match key {
            "lora_alpha" => self.lora.lora_alpha = None,
            "completion_mean" => self.training.rollout.completion_mean = 0,
            "shard" => self.parallelism.shard = None,
            "pp_first" => self.parallelism.pp_first = None,
            "pp_last" => self.parallelism.pp_last = None,
            "offload_layers" => self.activations.offload_layers = None,
            "price" => self.hardware.price = None,
            "budget" => self.auto.budget_usd = None,
            "ws_gib" => self.allowances.workspace_gib = None,
            "frag" => self.allowances.fragmentation = None,
            _ => self.auto.deadline_hours = None,
        }
    }

    /// The schema version, the model and its shape.
    fn set_model(&mut self, f: &Field) -> Taken {
        let a = &mut self.model.arch;
        match f.key {
            "v" => {
                let v = f.int(1, 1000)?;
                if v as u32 > SCHEMA_VERSION {
                    let args: [(&str, &dyn Display); 2] = [("v", &v), ("current", &SCHEMA_VERSION)];
                    return Err(problem(Text::NewerSchema, &args));
                }
            }
            "model" => self.model.preset = f.model()?,
            "layers" => a.layers = Some(f.int(1, 1024)?),
            "hidden" => a.hidden = Some(f.int(64, 131_072)?),
            "heads" => a.heads = Some(f.int(1, 1024)?),
            "kv_heads" => a.kv_heads = Some(f.int(1, 1024)?),
            "head_dim" => a.head_dim = Some(f.int(8, 1024)?),
            "ffn" => a.ffn = Some(f.int(64, 1_048_576)?),
            "vocab" => a.vocab = Some(f.int(16, 4_194_304)?),
            "tied" => a.tied = Some(f.flag()?),
            "mlp" => {
                let m = crate::model::architecture::Mlp::from_key(f.value);
                a.mlp = Some(m.ok_or_else(|| f.bad(Text::ExpectedMlp, &[]))?);
            }
            "experts" => a.experts = Some(f.int(1, 1024)?),
            "active_experts" => a.active_experts = Some(f.int(1, 1024)?),
            "expert_ffn" => a.expert_ffn = Some(f.int(16, 1_048_576)?),
            "params_b" => self.model.params_b = Some(f.num(0.05, 2000.0)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// What is trained, on which data, with which precision and memory savers.
    fn set_training(&mut self, f: &Field) -> Taken {
        match f.key {
            "train" => self.training.train = f.one_of(Training::from_key, Training::keys)?,
            "stage" => {
                self.training.stage = f.one_of(TrainingStage::from_key, TrainingStage::keys)?
            }
            // TRL requires two completions per prompt at least.
            "generations" => self.training.rollout.generations = f.int(2, 1024)?,
            "completion" => self.training.rollout.completion = f.int(1, 131_072)?,
            "completion_mean" => self.training.rollout.completion_mean = f.int(1, 131_072)?,
            "beta" => self.training.rollout.beta = f.num(0.0, 10.0)?,
            "gen_share" => self.training.rollout.gen_share = f.num(0.05, 0.95)?,
            "gen_gpus" => self.training.rollout.gen_gpus = f.int(0, 72)?,
            "gen_tp" => self.training.rollout.gen_tp = f.int(0, 72)?,
            "gen_pp" => self.training.rollout.gen_pp = f.int(0, 128)?,
            "sleep" => self.training.rollout.sleep = f.flag()?,
            "lora_rank" => self.lora.lora_rank = f.int(1, 4096)?,
            "lora_alpha" => self.lora.lora_alpha = Some(f.int(1, 65_536)?),
            "lora_targets" => {
                self.lora.lora_targets = LoraTargets::parse(f.value).map_err(|name| {
                    let keys = LoraTargets::keys();
                    match name.is_empty() {
                        true => f.bad(Text::ExpectedOneOf, &[("keys", &keys)]),
                        false => {
                            f.bad(Text::UnknownLoraModule, &[("name", &name), ("keys", &keys)])
                        }
                    }
                })?
            }
            "lora_dtype" => {
                self.lora.lora_dtype = f.one_of(LoraDtype::from_key, LoraDtype::keys)?
            }
            "seq" => self.data.seq = f.int(128, 131_072)?,
            "mb" => self.data.micro_batch = f.int(1, 4096)?,
            "ga" => self.data.grad_accum = f.int(1, 65_536)?,
            "tokens" => self.data.tokens = f.num(1e6, 1e15)?,
            "precision" => {
                self.numerics.precision = f.one_of(Precision::from_key, Precision::keys)?
            }
            "optimizer" => {
                self.training.optimizer = f.one_of(Optimizer::from_key, Optimizer::keys)?
            }
            "ckpt" => {
                let c = Checkpointing::from_key(f.value);
                self.activations.checkpointing =
                    c.ok_or_else(|| f.bad(Text::ExpectedCheckpointing, &[]))?;
            }
            "offload" => self.activations.offload = f.flag()?,
            "offload_layers" => self.activations.offload_layers = Some(f.int(0, 1024)?),
            "grad_bf16" => self.numerics.grad_bf16 = f.flag()?,
            "fp8_params" => self.numerics.fp8_params = f.flag()?,
            "bf16_moments" => self.numerics.bf16_moments = f.flag()?,
            "recompute_modules" => {
                let m = RecomputeModules::from_key(f.value);
                let args: [(&str, &dyn Display); 1] = [("keys", &RecomputeModules::keys())];
                self.activations.recompute_modules =
                    m.ok_or_else(|| f.bad(Text::ExpectedRecomputeModules, &args))?;
            }
            "mtp" => self.training.mtp = f.int(0, 8)?,
            "attn" => {
                self.implementation.attention = f.one_of(Attention::from_key, Attention::keys)?
            }
            "loss" => self.implementation.loss = f.one_of(Loss::from_key, Loss::keys)?,
            // `impl=` is the key links used before #35 named the stack.
            "stack" | "impl" => {
                self.implementation.stack = f.one_of(Stack::from_key, Stack::keys)?
            }
            "compile" => self.implementation.compile = f.flag()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Sharding and the parallel degrees.
    fn set_parallelism(&mut self, f: &Field) -> Taken {
        match f.key {
            "zero" => self.parallelism.zero = f.int(0, 3)? as u8,
            "shard" => self.parallelism.shard = Some(f.int(1, 65_536)?),
            "tp" => self.parallelism.tp = f.int(1, 1024)?,
            "sp" => self.parallelism.sp = f.flag()?,
            "pp" => self.parallelism.pp = f.int(1, 1024)?,
            "vp" => self.parallelism.vp = f.int(1, 64)?,
            "pp_first" => self.parallelism.pp_first = Some(f.int(0, 1024)?),
            "pp_last" => self.parallelism.pp_last = Some(f.int(0, 1024)?),
            "cp" => self.parallelism.cp = f.int(1, 1024)?,
            "ep" => self.parallelism.ep = f.int(1, 1024)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The instance (or a custom GPU), how many, the network and the price.
    fn set_hardware(&mut self, f: &Field) -> Taken {
        let g = &mut self.hardware.custom_gpu;
        match f.key {
            "gpu_mem" => g.memory_gb = f.num(1.0, 10_000.0)?,
            "gpu_bf16" => g.bf16_tflops = f.num(1.0, 1_000_000.0)?,
            "gpu_fp8" => g.fp8_tflops = f.num(0.0, 1_000_000.0)?,
            "gpu_bw" => g.bandwidth_tbs = f.num(0.01, 1000.0)?,
            "gpu_count" => g.per_node = f.int(1, 1024)?,
            "gpu_nvlink" => g.nvlink_gbs = f.num(0.0, 100_000.0)?,
            "gpu_net" => g.network_gbps = f.num(0.0, 1_000_000.0)?,
            "instance" => {
                let id = InstanceId::parse(f.value);
                let known = id.is_custom() || crate::model::hardware::instance(f.value).is_some();
                f.text(known, Text::UnknownInstance)?;
                self.hardware.instance = id;
            }
            "nodes" => self.hardware.nodes = f.int(1, 4096)?,
            "overlap" => self.parallelism.overlap = f.flag()?,
            "tp_overlap" => self.parallelism.tp_overlap = f.flag()?,
            "ep_overlap" => self.parallelism.ep_overlap = f.flag()?,
            "moe_flex" => self.moe.moe_flex = f.flag()?,
            "moe_graphs" => self.moe.moe_graphs = f.flag()?,
            "moe_imbalance" => self.moe.moe_imbalance = f.num(1.0, 16.0)?,
            "ultraserver" => {
                self.hardware.ultraserver = match f.value {
                    "72" => 72,
                    "36" => 36,
                    _ => return Err(f.bad(Text::ExpectedUltraServer, &[])),
                }
            }
            "spot" => self.hardware.spot = f.flag()?,
            "price" => self.hardware.price = Some(f.num(0.0, 100_000.0)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Checkpoint saving, memory margins and the launch code's names.
    fn set_launch(&mut self, f: &Field) -> Taken {
        let v = f.value;
        match f.key {
            "save_every" => self.saving.save_every = f.int(0, 10_000_000)?,
            "save" => self.saving.save = f.one_of(SaveKind::from_key, SaveKind::keys)?,
            "async_save" => self.saving.async_save = f.flag()?,
            "save_bw" => self.saving.save_bw = f.num(0.001, 1000.0)?,
            "fail_rate" => self.saving.fail_rate = f.num(0.0, 1_000_000.0)?,
            "restart_min" => self.saving.restart_minutes = f.num(0.0, 10_000.0)?,
            "spot_rate" => self.saving.spot_rate = f.num(0.0, 100.0)?,
            "recovery" => self.saving.recovery = f.one_of(Recovery::from_key, Recovery::keys)?,
            "headroom" => self.allowances.headroom = f.num(0.0, 50.0)?,
            "ws_gib" => self.allowances.workspace_gib = Some(f.num(0.0, 64.0)?),
            "frag" => self.allowances.fragmentation = Some(f.num(0.0, 50.0)?),
            "role" => self.launch.role = f.text(valid_role(v), Text::ExpectedRole)?,
            "s3" => {
                let s3 = f.text(valid_s3(v), Text::ExpectedS3)?;
                self.launch.s3 = s3.trim_end_matches('/').to_string();
            }
            "job" => self.launch.job = f.text(valid_job(v), Text::ExpectedJobName)?,
            "entry" => self.launch.entry = f.text(valid_entry(v), Text::ExpectedEntry)?,
            "hf_model" => {
                self.launch.hf_model = f.text(valid_hf_model(v), Text::ExpectedHfModel)?
            }
            "training_plan" => {
                let arn = valid_training_plan(v);
                self.launch.training_plan = f.text(arn, Text::ExpectedTrainingPlan)?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The auto-plan's locks and limits.
    fn set_page(&mut self, f: &Field) -> Taken {
        match f.key {
            "lock" => self.auto.locks = f.locks()?,
            "budget" => self.auto.budget_usd = Some(f.num(0.0, 1e12)?),
            "deadline" => self.auto.deadline_hours = Some(f.num(0.0, 1e6)?),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Whether a group of keys took the key (`Ok(false)`: not one of its keys).
type Taken = Result<bool, Problem>;

/// One `key=value` pair being read, and how to say why its value was not taken.
struct Field<'a> {
    key: &'a str,
    value: &'a str,
}

impl Field<'_> {
    /// "`key`: <problem> (got `value`)", rendered when shown.
    fn bad(&self, id: Text, args: &[(&'static str, &dyn Display)]) -> Problem {
        self.framed(problem(id, args))
    }

    /// The problem inside `BadValue`'s frame: the key and the value shown.
    fn framed(&self, inner: Problem) -> Problem {
        Phrase::new(Text::BadValue)
            .with("key", self.key.to_string())
            .with("problem", inner)
            .with("value", shorten(self.value))
    }

    /// A whole number in `lo..=hi`.
    fn int(&self, lo: u64, hi: u64) -> Result<u64, Problem> {
        match crate::formats::decimal::parse_f64(self.value) {
            Some(x) if x.fract() == 0.0 && x >= lo as f64 && x <= hi as f64 => Ok(x as u64),
            _ => Err(self.bad(Text::ExpectedWholeNumber, &[("lo", &lo), ("hi", &hi)])),
        }
    }

    /// A finite number in `lo..=hi`.
    fn num(&self, lo: f64, hi: f64) -> Result<f64, Problem> {
        match crate::formats::decimal::parse_f64(self.value) {
            Some(x) if x.is_finite() && (lo..=hi).contains(&x) => Ok(x),
            _ => Err(self.framed(
                Phrase::new(Text::ExpectedNumber)
                    .with("lo", Arg::Real(lo))
                    .with("hi", Arg::Real(hi)),
            )),
        }
    }

    fn flag(&self) -> Result<bool, Problem> {
        match self.value {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(self.bad(Text::ExpectedFlag, &[])),
        }
    }

    /// One of an enum's URL keys.
    fn one_of<T>(&self, parse: fn(&str) -> Option<T>, keys: fn() -> String) -> Result<T, Problem> {
        parse(self.value).ok_or_else(|| self.bad(Text::ExpectedOneOf, &[("keys", &keys())]))
    }

    /// The value as text, when `valid`.
    fn text(&self, valid: bool, id: Text) -> Result<String, Problem> {
        if valid {
            Ok(self.value.to_string())
        } else {
            Err(self.bad(id, &[]))
        }
    }

    /// A preset's id or `custom`; a near miss gets "did you mean".
    fn model(&self) -> Result<String, Problem> {
        let v = self.value;
        if v == "custom" || crate::model::architecture::preset(v).is_some() {
            return Ok(v.to_string());
        }
        let near = crate::model::architecture::suggest_presets(v);
        if near.is_empty() {
            return Err(self.bad(Text::UnknownModel, &[]));
        }
        let ids = near.join(", ");
        Err(self.bad(Text::UnknownModelDidYouMean, &[("ids", &ids)]))
    }

    /// A comma-separated list of the auto-plan's lockable inputs.
    fn locks(&self) -> Result<Locks, Problem> {
        let mut locks = Locks::default();
        for k in self
            .value
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
        {
            if !locks.set(k, true) {
                return Err(self.bad(Text::ExpectedLockList, &[("keys", &Locks::KEYS.join(", "))]));
            }
        }
        Ok(locks)
    }
}

fn shorten(s: &str) -> String {
    let clean: String = s.chars().filter(|c| !c.is_control()).take(40).collect();
    if s.chars().count() > 40 {
        clean + "…"
    } else {
        clean
    }
}

fn safe_key(k: &str) -> String {
    shorten(k)
}

/// Decode `%XX` escapes and `+` as space; invalid escapes are kept as text
/// and invalid UTF-8 becomes U+FFFD.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encode everything but unreserved characters (RFC 3986) and a few that are
/// safe and readable in a query value (`:`, `/`, `,`).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:/,".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
