//! Second check of the memory model, for FSDP: the torchtitan rows of
//! ../shared/data/calibration.csv that report peak memory (torchtitan logs
//! `max_reserved`, i.e. allocated memory plus allocator fragmentation).
//! Source: pytorch/torchtitan benchmarks (Llama 3.1 8B, 8 x H100 96 GB 500 W).

use planner::accuracy::{excluded_memory_rows, fsdp_memory_rows};

/// Each row's stated tolerance. The planner models the HF stack that
/// train.py runs (checked against the oracle's table); torchtitan's FSDP2
/// differs: its op-level policy keeps every other matmul output where
/// train.py keeps all of them, and its loss and casts are its own.
const TOLERANCE: &[(&str, f64)] = &[
    ("tt_l31_8b_fsdp_8", 15.0),
    // torch.compile fuses elementwise ops and saves fewer activations: not modelled.
    ("tt_l31_8b_fsdp_compile_fp8_8", 25.0),
    ("tt_l31_8b_cp1_32k", 25.0),
];

#[test]
fn torchtitan_fsdp_rows_within_bounds() {
    let rows = fsdp_memory_rows();
    assert_eq!(rows.len(), TOLERANCE.len());
    for r in &rows {
        let tol = TOLERANCE
            .iter()
            .find(|(id, _)| *id == r.label)
            .expect("stated")
            .1;
        println!(
            "{:<32} measured {:>6.1} GiB  predicted {:>6.1} GiB  {:>+6.1}%",
            r.label, r.measured, r.predicted, r.error_percent
        );
        assert!(
            r.error_percent.abs() <= tol,
            "{}: {:+.1}%",
            r.label,
            r.error_percent
        );
    }
    // The 70B 2D row is left out, by id, with its reason.
    let out = excluded_memory_rows();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, "tt_l31_70b_2d");
}
