//! How far the model is from measurements, computed and never typed: the
//! throughput rows of data/calibration.csv and the published runs, in-sample
//! and cross-validated (leave-one-model-out), grouped by what a plan looks
//! like, and with the memory checks' statistics (memory_checks.rs) the
//! whole `Coverage`.
//!
//! `plan calibrate --coverage` writes the result to data/coverage.json, which
//! the report's accuracy labels read (coverage.rs); a test recomputes it and
//! fails when the file, docs/accuracy.md or the README's figures fall out of
//! date.

use crate::accuracy::calibration::{
    cases, cross_validated, hf_cases, predict_with, predictions, Case,
};
use crate::accuracy::coverage::{median, under_over, worst, Coverage, Group, GroupStats};
use crate::accuracy::envelope::Envelope;
use crate::accuracy::memory_checks::{
    gpu_memory_rows, megatron_memory_rows, memory_stats, oracle_groups, oracle_heldout_rows,
    oracle_memory_rows, single_rank_memory_rows, torchtitan_groups, torchtitan_memory_rows,
};
use serde::Serialize;

/// One published run against the model.
#[derive(Clone, Debug, Serialize)]
pub struct ThroughputRow {
    pub id: String,
    pub group: Group,
    pub measured: f64,
    /// With the shipped parameters, which were fitted on this row too.
    pub in_sample_percent: f64,
    /// With parameters fitted on the other rows of its generation.
    pub cross_validated_percent: f64,
    /// What the run was: sequence, GPUs, model size, precision, training.
    pub point: Envelope,
    /// The GPU it ran on and its model's family (`case::model_family`).
    pub gpu: String,
    pub family: String,
}

/// Every throughput row, in-sample and cross-validated. The Hugging Face
/// stack's rows come last: no fit uses them, so their error is out of sample
/// either way.
pub fn throughput_rows() -> Vec<ThroughputRow> {
    let cases = cases();
    let cv = cross_validated();
    let mut rows: Vec<ThroughputRow> = cases
        .iter()
        .zip(predictions())
        .zip(cv)
        .map(|((c, p), v)| ThroughputRow {
            id: c.id.clone(),
            group: Group::of_case(c),
            measured: p.measured,
            in_sample_percent: p.error_percent,
            cross_validated_percent: v.error_percent,
            point: case_point(c),
            gpu: c.gpu.id.to_string(),
            family: c.family.clone(),
        })
        .collect();
    for c in hf_cases() {
        let p = predict_with(&c, &crate::model::throughput::efficiency(c.gpu.generation));
        rows.push(ThroughputRow {
            id: c.id.clone(),
            group: Group::of_case(&c),
            measured: p.measured,
            in_sample_percent: p.error_percent,
            cross_validated_percent: p.error_percent,
            point: case_point(&c),
            gpu: c.gpu.id.to_string(),
            family: c.family.clone(),
        });
    }
    rows
}

fn case_point(c: &Case) -> Envelope {
    Envelope::point(&c.plan, &c.arch, c.layout.gpus)
}

fn stats(group: Group, rows: &[&ThroughputRow]) -> GroupStats {
    let (cv_under, cv_over) = under_over(rows.iter().map(|r| r.cross_validated_percent));
    let mut models: Vec<u64> = rows.iter().map(|r| r.point.params.0).collect();
    models.sort_unstable();
    models.dedup();
    let each = |f: fn(&ThroughputRow) -> &String| {
        let mut v: Vec<String> = rows.iter().map(|r| f(r).clone()).collect();
        v.sort();
        v.dedup();
        v
    };
    GroupStats {
        group,
        rows: rows.len(),
        models: models.len(),
        gpu_types: each(|r| &r.gpu),
        families: each(|r| &r.family),
        cv_under,
        cv_over,
        envelope: Envelope::cover(rows.iter().map(|r| &r.point)),
        cv_median: median(
            rows.iter()
                .map(|r| r.cross_validated_percent.abs())
                .collect(),
        ),
        cv_worst: worst(rows.iter().map(|r| r.cross_validated_percent)),
        in_sample_median: median(rows.iter().map(|r| r.in_sample_percent.abs()).collect()),
    }
}

/// Rows grouped by kind of plan, in `Group` order.
pub fn group_stats(rows: &[ThroughputRow]) -> Vec<GroupStats> {
    let mut groups: Vec<Group> = rows.iter().map(|r| r.group).collect();
    groups.sort();
    groups.dedup();
    groups
        .into_iter()
        .map(|g| stats(g, &rows.iter().filter(|r| r.group == g).collect::<Vec<_>>()))
        .collect()
}

/// Rows grouped by one field (GPU generation, parallel layout, stack), for the docs.
pub fn stats_by<K: PartialEq + Copy>(
    rows: &[ThroughputRow],
    key: impl Fn(&Group) -> K,
) -> Vec<(K, GroupStats)> {
    let mut keys: Vec<K> = Vec::new();
    for r in rows {
        if !keys.contains(&key(&r.group)) {
            keys.push(key(&r.group));
        }
    }
    keys.into_iter()
        .map(|k| {
            let mine: Vec<&ThroughputRow> = rows.iter().filter(|r| key(&r.group) == k).collect();
            (k, stats(mine[0].group, &mine))
        })
        .collect()
}

/// Compute everything (leave-one-architecture-out fits: a second or so in release).
pub fn compute() -> Coverage {
    let rows = throughput_rows();
    let all: Vec<&ThroughputRow> = rows.iter().collect();
    let total = stats(rows[0].group, &all);
    let mut gpus: Vec<String> = cases().iter().map(|c| c.gpu.id.to_string()).collect();
    gpus.sort();
    gpus.dedup();
    Coverage {
        gpus,
        throughput: total,
        groups: group_stats(&rows),
        stacks: stats_by(&rows, |g| g.stack),
        memory_single_rank: memory_stats(&single_rank_memory_rows()),
        memory_torchtitan: torchtitan_groups(&torchtitan_memory_rows()),
        memory_oracle: oracle_groups(&oracle_memory_rows()),
        memory_oracle_heldout: memory_stats(
            &oracle_heldout_rows()
                .into_iter()
                .map(|r| r.row)
                .collect::<Vec<_>>(),
        ),
        memory_gpu: memory_stats(&gpu_memory_rows()),
        memory_megatron: memory_stats(&megatron_memory_rows()),
        speed_b200: crate::accuracy::b200_runs::step_stats(
            &crate::accuracy::b200_runs::b200_step_rows(),
        ),
    }
}
