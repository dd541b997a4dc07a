//! One evaluation per edit (#34): the page's `evaluate_with_charts` gives
//! the report `evaluate` gives and the charts `memory_vs_sequence` and
//! `compare_instances` draw on their own, from one resolved job, and counts
//! once. One test in its own binary: the count is per process.

use planner::estimate::evaluate::{compare_instances, memory_vs_sequence};
use planner::estimate::evaluate::{evaluate_with_charts, evaluations};
use planner::Plan;

#[test]
fn the_page_evaluation_is_the_three_evaluations_it_replaces() {
    let seqs = [1024, 4096, 32768, 131072];
    // Presets, a custom shape with a model error (no instance option then),
    // a GRPO plan (vLLM's share in every chart point), a GB200 UltraServer.
    for q in [
        "",
        "model=llama-3.1-70b&seq=16384&ckpt=full&zero=3&nodes=2",
        "model=mixtral-8x7b&precision=fp8&tp=2&ep=4",
        "model=custom&hidden=4000&heads=7",
        "stage=grpo&gen_gpus=2",
        "instance=ml.p6e-gb200.36xlarge&tp=8&model=llama-3.1-405b",
    ] {
        let plan = Plan::from_query(q).plan;
        let before = evaluations();
        let page = evaluate_with_charts(&plan, &seqs);
        assert_eq!(evaluations(), before + 1, "{q}: one evaluation");
        let report = planner::evaluate(&plan);
        assert_eq!(
            serde_json::to_string(&page.report).unwrap(),
            serde_json::to_string(&report).unwrap(),
            "{q}: the report"
        );
        assert_eq!(page.sequence_chart, memory_vs_sequence(&plan, &seqs), "{q}");
        assert_eq!(page.instances, compare_instances(&plan), "{q}");
        // Each of the three on its own is an evaluation too.
        assert_eq!(evaluations(), before + 4, "{q}: counted");
    }
    let custom = evaluate_with_charts(
        &Plan::from_query("model=custom&hidden=4000&heads=7").plan,
        &seqs,
    );
    assert!(!custom.errors.is_empty() && custom.instances.is_empty());
    let default = evaluate_with_charts(&Plan::default(), &seqs);
    assert!(default.instances.len() > 5, "{}", default.instances.len());
}
