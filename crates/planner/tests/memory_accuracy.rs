//! The `hf` profile against real PyTorch training steps.
//!
//! Source: ../shared/data/memory_examples.csv (copied to data/):
//! Transformers 5.24 `LlamaForCausalLM` on torch 2.15, peak of
//! `torch.cuda.max_memory_allocated()` at the second step, counted by exact
//! allocation accounting under FakeTensorMode. Compared with the report's
//! `memory.allocated_peak_bytes`. In-sample: the profile's coefficients were
//! read off these rows, so the claim is that they stay exact, not that they
//! predict new models.

use planner::accuracy::{compute, single_rank_memory_rows, MemoryRow};

/// Rows allowed more than 0.5%, and why.
fn tolerance(r: &MemoryRow) -> (f64, &'static str) {
    if r.label.contains(" math ") {
        (7.0, "SDPA's math backend, modelled as eager attention (it keeps fewer score copies): over-predicts")
    } else if r.label.starts_with("llama3.2-1b")
        && r.label.contains(" ac1 auto adamw_fused")
        && (r.label.contains("b4 s1024") || r.label.contains("b1 s4096"))
    {
        (
            4.0,
            "checkpointed step whose peak falls in the forward: UNDER-predicts by 3.5%",
        )
    } else {
        (0.5, "")
    }
}

#[test]
fn hf_profile_matches_measured_peaks() {
    let rows = single_rank_memory_rows();
    assert_eq!(
        rows.len(),
        120,
        "memory_examples.csv has 120 measured steps"
    );
    let mut exceptions = 0;
    for r in &rows {
        let (tol, why) = tolerance(r);
        println!(
            "{:<52} measured {:>9.0} MiB predicted {:>9.0} MiB {:>+6.2}% {why}",
            r.label,
            r.measured / (1 << 20) as f64,
            r.predicted / (1 << 20) as f64,
            r.error_percent
        );
        assert!(
            r.error_percent.abs() <= tol,
            "{}: {:+.2}% (tolerance {tol}%)",
            r.label,
            r.error_percent
        );
        exceptions += (r.error_percent.abs() > 0.5) as usize;
    }
    assert_eq!(
        exceptions, 5,
        "beyond 0.5%: three math rows and two forward-peak rows"
    );
    // What docs/accuracy.md and the page's label quote.
    let c = compute();
    assert!(
        c.memory_single_rank.median < 0.1,
        "median {:.3}%",
        c.memory_single_rank.median
    );
    assert!(c.memory_single_rank.worst.abs() < 7.0);
}
