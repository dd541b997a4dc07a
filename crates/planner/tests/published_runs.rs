//! The other stacks' published runs (#35): data/published_runs.csv holds
//! each row of the four published_2026 tables once, with the figure the
//! table printed, and every row it compares with becomes a case.

use planner::accuracy::published::{cases, excluded, PUBLISHED_RUNS_CSV};
use planner::formats::table::read_csv;
use planner::model::plan::Stack;

const TABLES: [(&str, &str); 4] = [
    (
        "torchtitan_benchmarks.csv",
        include_str!("../data/published_2026/torchtitan_benchmarks.csv"),
    ),
    (
        "nemo_automodel_perf.csv",
        include_str!("../data/published_2026/nemo_automodel_perf.csv"),
    ),
    (
        "megatron_lm_readme_h100.csv",
        include_str!("../data/published_2026/megatron_lm_readme_h100.csv"),
    ),
    (
        "olmo_core_readme_h100.csv",
        include_str!("../data/published_2026/olmo_core_readme_h100.csv"),
    ),
];

/// Every row of every table is in the normalised file once, under its own
/// file and row id, and the tokens/s per GPU it compares with is the one
/// the table printed (no figure was retyped).
#[test]
fn every_published_row_is_normalised_with_its_printed_figure() {
    let runs = read_csv(PUBLISHED_RUNS_CSV);
    let mut rows = 0;
    for (file, text) in TABLES {
        for printed in read_csv(text) {
            rows += 1;
            let id = printed.get("id");
            let mine: Vec<_> = runs
                .iter()
                .filter(|r| r.get("file") == file && r.get("row") == id)
                .collect();
            assert_eq!(mine.len(), 1, "{file} row {id}");
            let r = mine[0];
            if let Some(tps) = r.num("measured_tokens_per_s_per_gpu") {
                assert_eq!(
                    Some(tps),
                    printed.num("tokens_per_s_per_gpu"),
                    "{file} row {id}: the figure compared is the printed one"
                );
                assert!(
                    r.get("measured_basis").starts_with("printed"),
                    "{file} row {id}"
                );
            }
            assert!(
                !r.get("inferred").is_empty() || r.get("use") != "yes",
                "{file} row {id}: what was not printed is said"
            );
        }
    }
    assert_eq!(rows, runs.len(), "no row beyond the four tables");
}

/// 51 runs are compared (the torchtitan, NeMo AutoModel and OLMo-core
/// ones the model can describe, NeMo AutoModel's six current LoRA runs
/// among them since #55 timed frozen weights), 2 print only a peak memory
/// (NeMo AutoModel's checkpointing guide), the other 39 are listed with a
/// reason (the four superseded LoRA measurements among them).
#[test]
fn runs_compared_and_left_out() {
    let compared = cases();
    let left = excluded();
    assert_eq!(compared.len(), 51);
    assert_eq!(left.len(), 39);
    let lora = compared
        .iter()
        .filter(|c| c.plan.training.train == planner::model::plan::Training::Lora)
        .count();
    assert_eq!(lora, 6, "automodel_11 to automodel_16");
    assert_eq!(compared.len() + left.len() + 2, 92);
    for (id, why) in &left {
        assert!(why.len() > 20, "{id}: a reason, not a word: {why}");
    }
    // The torchtitan runs of calibration.csv are not counted twice.
    for dup in ["titan_1", "titan_3", "titan_4", "titan_11"] {
        assert!(left
            .iter()
            .any(|(id, why)| id == dup && why.contains("calibration.csv")));
    }
}

/// #35's targets, cross-validated (leave-one-model-out) on the published
/// runs and the calibration rows: every stack's median error within 10%,
/// no sequence band's signed median beyond ±10%, and torchtitan's own
/// benchmark rows within 12% at the median. docs/accuracy.md's "By stack
/// and sequence band" table prints the same figures.
#[test]
fn cross_validated_errors_meet_the_stack_and_band_targets() {
    use planner::accuracy::sequence_bands::{errors, Band};
    let rows = planner::accuracy::summary::throughput_rows();
    let errs = planner::accuracy::docs::row_errors(&rows);
    for stack in [Stack::Megatron, Stack::Torchtitan, Stack::Hf] {
        let e = errors(&errs, |r| r.stack == stack);
        assert!(e.rows > 0, "{stack:?} has no rows");
        assert!(e.median_abs <= 10.0, "{stack:?}: {e:?}");
    }
    for band in Band::ALL {
        let e = errors(&errs, |r| Band::of(r.seq) == band);
        assert!(e.rows > 0, "{band:?} has no rows");
        assert!(e.median_signed.abs() <= 10.0, "{band:?}: {e:?}");
    }
    let mut titan: Vec<f64> = rows
        .iter()
        .filter(|r| r.id.starts_with("titan_"))
        .map(|r| r.cross_validated_percent.abs())
        .collect();
    assert!(titan.len() >= 30, "{} torchtitan rows", titan.len());
    titan.sort_by(f64::total_cmp);
    let n = titan.len();
    let median = (titan[(n - 1) / 2] + titan[n / 2]) / 2.0;
    assert!(median <= 12.0, "torchtitan rows: median {median:.1}%");
}
