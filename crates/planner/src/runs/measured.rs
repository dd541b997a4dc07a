//! A finished run, measured: the `TRAIN_PLANNER_MEASURED {json}` line the
//! bundle's train.py prints, read back and set beside the prediction. Time
//! and cost are then re-based on the measured speed.

use crate::estimate::report::Report;
use crate::formats::fields::{field, opt_field, record, Fields};
use crate::formats::json::{opt, req, FromJson, Json};
use crate::launch::bundle::MEASURED_TAG;
use crate::model::plan::Plan;
use crate::text::{Phrase, Text};
use serde::Serialize;

/// The format version of the line this planner reads.
pub const LINE_VERSION: u64 = 1;

/// What train.py measured (its `report_measured`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measured {
    pub v: u64,
    pub plan: String,
    pub gpu: String,
    pub world_size: u64,
    pub steps: u64,
    pub measured_steps: u64,
    pub step_time_s: Option<f64>,
    pub tokens_per_second_per_gpu: Option<f64>,
    /// Per rank, GiB; absent on CPU.
    pub max_memory_allocated_gib: Option<Vec<f64>>,
    pub max_memory_reserved_gib: Option<Vec<f64>>,
    /// The compute path the script took (a fallback says so).
    pub compute: String,
}

/// As train.py's `report_measured` writes it; fields it may leave out are
/// empty, and the line's version decides the rest.
impl FromJson for Measured {
    fn from_json(j: &Json) -> Result<Self, String> {
        Ok(Measured {
            v: req(j, "v")?,
            plan: opt(j, "plan")?.unwrap_or_default(),
            gpu: opt(j, "gpu")?.unwrap_or_default(),
            world_size: req(j, "world_size")?,
            steps: opt(j, "steps")?.unwrap_or(0),
            measured_steps: opt(j, "measured_steps")?.unwrap_or(0),
            step_time_s: opt(j, "step_time_s")?,
            tokens_per_second_per_gpu: opt(j, "tokens_per_second_per_gpu")?,
            max_memory_allocated_gib: opt(j, "max_memory_allocated_gib")?,
            max_memory_reserved_gib: opt(j, "max_memory_reserved_gib")?,
            compute: opt(j, "compute")?.unwrap_or_default(),
        })
    }
}

/// Why a pasted line cannot be compared.
#[derive(Clone, Debug, PartialEq)]
pub enum Problem {
    NotALine,
    Json(String),
    Version(u64),
    NoSpeed,
    OtherPlan(String),
}

impl Problem {
    /// What to say, rendered by the front.
    pub fn phrase(&self) -> Phrase {
        match self {
            Problem::NotALine => Phrase::new(Text::MeasuredNotALine).with("tag", MEASURED_TAG),
            Problem::Json(d) => Phrase::new(Text::MeasuredBadJson)
                .with("tag", MEASURED_TAG)
                .with("detail", d),
            Problem::Version(v) => Phrase::new(Text::MeasuredNewerVersion)
                .with("v", *v)
                .with("current", LINE_VERSION),
            Problem::NoSpeed => Phrase::new(Text::MeasuredNoSpeed),
            Problem::OtherPlan(q) => Phrase::new(Text::MeasuredOtherPlan).with("plan", q),
        }
    }
}

/// The measured line in `text` (the last one, if a whole log was pasted).
pub fn parse(text: &str) -> Result<Measured, Problem> {
    let line = text
        .lines()
        .rev()
        .find_map(|l| l.split_once(MEASURED_TAG).map(|(_, rest)| rest.trim()))
        .ok_or(Problem::NotALine)?;
    let m: Measured = crate::formats::json::read(line).map_err(Problem::Json)?;
    if m.v != LINE_VERSION {
        return Err(Problem::Version(m.v));
    }
    match (m.step_time_s, m.tokens_per_second_per_gpu) {
        (Some(s), Some(t)) if s > 0.0 && t > 0.0 && s.is_finite() && t.is_finite() => Ok(m),
        _ => Err(Problem::NoSpeed),
    }
}

/// The worker's reply to a pasted line (#59: the page's wasm holds no JSON
/// reader): `1` and what was measured, in `Measured`'s order (a list as its
/// count and numbers, after `1`, or `0` if absent), or `0` and why not
/// (`Phrase::fields`).
pub fn line_reply(text: &str) -> String {
    let m = match parse(text) {
        Ok(m) => m,
        Err(p) => return record([vec!["0".into()], p.phrase().fields()].concat()),
    };
    let list = |l: &Option<Vec<f64>>| match l {
        None => vec!["0".into()],
        Some(v) => [
            vec!["1".into(), field(v.len())],
            v.iter().map(field).collect(),
        ]
        .concat(),
    };
    let head = [
        "1".into(),
        field(m.v),
        field(&m.plan),
        field(&m.gpu),
        field(m.world_size),
        field(m.steps),
        field(m.measured_steps),
        opt_field(m.step_time_s),
        opt_field(m.tokens_per_second_per_gpu),
    ];
    let tail = [field(&m.compute)];
    let lists = [
        list(&m.max_memory_allocated_gib),
        list(&m.max_memory_reserved_gib),
    ];
    record([head.to_vec(), lists.concat(), tail.to_vec()].concat())
}

/// What `line_reply` wrote: the measured run, or why the line did not
/// read (a reply that does not read says so, as it is).
pub fn read_line_reply(reply: &str) -> Result<Measured, Phrase> {
    let mut f = Fields::new(reply);
    if !f.flag() {
        return Err(Phrase::read(&mut f).map_err(Phrase::verbatim)?);
    }
    let list = |f: &mut Fields| f.flag().then(|| f.list(Fields::num));
    let m = Measured {
        v: f.whole(),
        plan: f.text().into(),
        gpu: f.text().into(),
        world_size: f.whole(),
        steps: f.whole(),
        measured_steps: f.whole(),
        step_time_s: f.opt_num(),
        tokens_per_second_per_gpu: f.opt_num(),
        max_memory_allocated_gib: list(&mut f),
        max_memory_reserved_gib: list(&mut f),
        compute: f.text().into(),
    };
    f.done(m).map_err(Phrase::verbatim)
}

/// Measured beside predicted, and the time and cost re-based on the measured speed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub measured: Measured,
    pub predicted_tokens_per_second_per_gpu: f64,
    pub measured_tokens_per_second_per_gpu: f64,
    /// Measured / predicted speed.
    pub speed_ratio: f64,
    pub predicted_step_seconds: f64,
    pub measured_step_seconds: f64,
    pub predicted_peak_gib: f64,
    /// The largest `max_memory_reserved` over the ranks (what the allocator held).
    pub measured_peak_gib: Option<f64>,
    /// Hours for the plan's tokens at the measured speed, checkpoints as predicted.
    pub hours: f64,
    pub usd: Option<f64>,
    /// Caveats: another GPU, another world size, a fallback, no plan named.
    #[serde(serialize_with = "crate::text::said_each")]
    pub notes: Vec<Phrase>,
}

/// Compare `m` with the plan's prediction; a line measured for another plan is refused.
pub fn compare(plan: &Plan, report: &Report, m: &Measured) -> Result<Comparison, Problem> {
    let mut notes = Vec::new();
    if m.plan.is_empty() {
        notes.push(Phrase::new(Text::MeasuredNoPlan));
    } else if speed_key(&Plan::from_query(&m.plan).plan) != speed_key(plan) {
        return Err(Problem::OtherPlan(m.plan.clone()));
    }
    if !m
        .gpu
        .to_ascii_lowercase()
        .contains(&report.gpu.to_ascii_lowercase())
    {
        let p = Phrase::new(Text::MeasuredOtherGpu)
            .with("gpu", &m.gpu)
            .with("planned", &report.gpu);
        notes.push(p);
    }
    if m.world_size != report.layout.gpus {
        let p = Phrase::new(Text::MeasuredOtherWorld)
            .with("n", m.world_size)
            .with("planned", report.layout.gpus);
        notes.push(p);
    }
    if m.compute.contains("fallback") {
        notes.push(Phrase::verbatim(&m.compute));
    }
    let tps = m.tokens_per_second_per_gpu.unwrap_or(0.0);
    let predicted = report.throughput.tokens_per_second_per_gpu;
    let training_hours = plan.data.tokens / (tps * report.layout.gpus.max(1) as f64) / 3600.0;
    let hours = training_hours + report.time.checkpoint_hours;
    let gib = (1u64 << 30) as f64;
    Ok(Comparison {
        measured: m.clone(),
        predicted_tokens_per_second_per_gpu: predicted,
        measured_tokens_per_second_per_gpu: tps,
        speed_ratio: tps / predicted.max(1e-9),
        predicted_step_seconds: report.throughput.step_seconds,
        measured_step_seconds: m.step_time_s.unwrap_or(0.0),
        predicted_peak_gib: report.memory.peak_bytes_per_gpu as f64 / gib,
        measured_peak_gib: m
            .max_memory_reserved_gib
            .as_ref()
            .and_then(|v| v.iter().copied().reduce(f64::max)),
        hours,
        usd: report
            .cost
            .price_per_instance_hour
            .map(|p| p * plan.hardware.nodes.max(1) as f64 * hours),
        notes,
    })
}

/// The plan without what does not change a step's speed or memory (tokens,
/// prices, names and the auto-plan's limits): a trial
/// and the real run of one plan share it.
fn speed_key(plan: &Plan) -> String {
    let mut p = plan.clone();
    let d = Plan::default();
    p.data.tokens = d.data.tokens;
    p.hardware.price = None;
    p.hardware.spot = d.hardware.spot;
    p.auto = d.auto;
    p.launch = d.launch;
    p.to_query()
}
