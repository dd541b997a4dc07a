//! 31 real Megatron-LM BF16 runs on one 8 x B200 node (#57;
//! data/b200_megatron_real.csv, from SimuMax's B200 release: Megatron-LM
//! 23e00ed0, TE 2.11): each planned as its launcher ran it, its memory
//! against `max_memory_allocated`, its step against the measured one. They
//! check the model: no parameter is fitted on them (Blackwell's `tp_hidden`,
//! set from SimuMax's finding, is the one setting they are in-sample for).

use crate::accuracy::calibration::{read_csv, Row};
use crate::accuracy::coverage::{median, worst, MemoryStats};
use crate::accuracy::envelope::Envelope;
use crate::accuracy::memory_checks::MemoryRow;
use crate::model::job::Job;
use crate::model::plan::Plan;

/// The 31 real Megatron-LM BF16 runs on one 8 x B200 node, compiled in
/// (data/b200_megatron_real.csv, with their sources).
pub const B200_MEGATRON_REAL_CSV: &str = include_str!("../../data/b200_megatron_real.csv");

/// One run: its plan as its launcher ran it, the plan resolved, its row.
pub struct B200Run {
    pub plan: Plan,
    pub job: Job,
    pub row: Row,
}

/// The 8 x B200 runs, each plan decoded and resolved once.
pub fn b200_runs() -> Vec<B200Run> {
    read_csv(B200_MEGATRON_REAL_CSV)
        .into_iter()
        .filter_map(|row| {
            let decoded = Plan::from_query(row.get("query"));
            // A key the query misspells would drop a setting: no row then.
            if !decoded.notices.is_empty() {
                return None;
            }
            let (job, errors) = crate::model::resolve::resolve(&decoded.plan);
            errors.is_empty().then_some(B200Run {
                plan: decoded.plan,
                job,
                row,
            })
        })
        .collect()
}

/// The 8 x B200 runs' `torch.cuda.max_memory_allocated()` against the
/// planner's allocated peak of the fullest stage, in GiB. No memory
/// parameter is fitted on them.
pub fn b200_memory_rows() -> Vec<MemoryRow> {
    b200_runs()
        .into_iter()
        .filter_map(|B200Run { plan, job, row }| {
            let predicted = job.allocated_peak_bytes() as f64 / (1u64 << 30) as f64;
            Some(MemoryRow::new(
                row.get("id").to_string(),
                row.num("real_alloc_gib")?,
                predicted,
                Envelope::point(&plan, &job.arch, job.layout.gpus),
            ))
        })
        .collect()
}

/// One measured step against the planner's, in milliseconds, with
/// SimuMax's prediction of the same run beside it.
#[derive(Clone, Debug)]
pub struct StepRow {
    pub label: String,
    pub measured_ms: f64,
    pub predicted_ms: f64,
    pub simumax_ms: f64,
    pub error_percent: f64,
}

/// The 8 x B200 runs' measured steps against the planner's step at the
/// B200's calibrated efficiency.
pub fn b200_step_rows() -> Vec<StepRow> {
    b200_runs()
        .into_iter()
        .filter_map(|B200Run { job, row: r, .. }| {
            let measured_ms = r.num("real_step_ms")?;
            let predicted_ms = 1e3 * job.throughput(&job.efficiency()).step_seconds;
            Some(StepRow {
                label: r.get("id").to_string(),
                measured_ms,
                predicted_ms,
                simumax_ms: r.num("simumax_ms")?,
                error_percent: 100.0 * (predicted_ms - measured_ms) / measured_ms,
            })
        })
        .collect()
}

/// The step rows' errors as a label and the docs quote them: rows, median
/// of the absolute errors, the smallest and largest error (`under` and
/// `over`: both negative when every run is planned fast, as they are) and
/// the worst. No envelope: the label that quotes them names the runs.
pub fn step_stats(rows: &[StepRow]) -> MemoryStats {
    let errors = rows.iter().map(|r| r.error_percent);
    MemoryStats {
        rows: rows.len(),
        median: median(errors.clone().map(f64::abs).collect()),
        worst: worst(errors.clone()),
        under: errors.clone().fold(f64::INFINITY, f64::min),
        over: errors.fold(f64::NEG_INFINITY, f64::max),
        envelope: Envelope::default(),
    }
}
