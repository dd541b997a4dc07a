//! #23: the published Megatron / NeMo / DGX Cloud runs of calibration.csv
//! ran, so the page, given what each recipe set (the `recipe_*` columns, read
//! from each recipe at its table's release, `recipe_source` saying where),
//! must find that each fits its GPU.

use planner::estimate::report::Verdict;
use planner::{evaluate, Plan};

/// Rows the test cannot hold the model to, each with why. The test fails
/// when one of them fits after all, so the list only shrinks.
const UNCHECKED: &[(&str, &str)] = &[
    (
        "nemo2407_nemotron340b_h100_fp8",
        "recipe not found: the table's PP 8 VP 12 is not in NeMo-Framework-Launcher 24.07 (first in \
         630e6544, December 2024), and that yaml trains in BF16",
    ),
    (
        "mb2511_gptoss120b_h100_bf16",
        "the table's micro-batch 4 disagrees with the release's preset (1) and with the \
         table's own GA column: with the recipe's recompute modules (layernorm, moe_act) \
         modelled, micro-batch 4 needs 98.7 GiB",
    ),
];

const GIB: f64 = 1_073_741_824.0;

/// Each checked recipe's peak, on the page, is below its GPU's usable memory.
#[test]
fn every_published_recipe_fits_its_gpu() {
    let mut checked = 0;
    let mut within_headroom = 0;
    for c in planner::accuracy::calibration::cases() {
        // The PyTorch stacks' rows are FSDP benchmarks with measured memory:
        // their own tests hold them (torchtitan_memory.rs).
        if c.plan.implementation.stack != planner::model::plan::Stack::Megatron {
            continue;
        }
        let d = Plan::from_query(&c.link());
        assert!(d.notices.is_empty(), "{}: {:?}", c.id, d.notices);
        let r = evaluate(&d.plan);
        let m = &r.memory;
        let fits_gpu = r.fits;
        println!(
            "{:<34} peak {:>6.1} GiB  budget {:>6.1}  usable {:>6.1}  {}",
            c.id,
            m.peak_bytes_per_gpu as f64 / GIB,
            m.budget_bytes as f64 / GIB,
            m.usable_bytes as f64 / GIB,
            r.verdict.key(),
        );
        match UNCHECKED.iter().find(|(id, _)| *id == c.id) {
            Some((_, why)) => {
                assert!(
                    !fits_gpu,
                    "{} fits now: drop it from UNCHECKED ({why})",
                    c.id
                );
                continue;
            }
            None => assert!(
                fits_gpu,
                "{}: a run that ran does not fit: {}",
                c.id,
                c.link()
            ),
        }
        checked += 1;
        within_headroom += usize::from(r.verdict == Verdict::Fits);
    }
    // 62 published recipes are held to this, and all 62 come out "fits"
    // with the allowances #55 measured (Megatron's allocator reserve of
    // 4.7%, no flat headroom). With the flat 10% headroom, 1.25 GiB and 5%
    // before, 6 of these runs that ran were "tight": Llama 3 70B on 64
    // GB200 (FSDP, 40 layers offloaded), Llama 3 8B on 8 H100 (NeMo 24.07,
    // CP 2), Llama 3.1 405B on 128 GB200 (DGX Cloud) and on 256 GB200 in FP8
    // (Megatron-Bridge v0.3.0's LLAMA31_405B_PRETRAIN_CONFIG_GB200_FP8_CS_V2),
    // DeepSeek-V3 on 256 GB200 in BF16 and Qwen3-30B-A3B on 16 H100 in FP8.
    assert_eq!(checked, 62);
    assert_eq!(within_headroom, 62);
    // Whitespace-normalised: the docs wrap their sentences anywhere.
    let docs = include_str!("../../../docs/accuracy.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let claim = format!(
        "{checked} of the {} Megatron, NeMo and DGX Cloud rows are held to this",
        checked + UNCHECKED.len()
    );
    assert!(
        docs.contains(&claim),
        "docs/accuracy.md should say `{claim}`"
    );
    let headroom = format!(
        "{within_headroom} of them come out \"fits\" with the measured allowances, and {} \"tight\"",
        checked - within_headroom
    );
    assert!(
        docs.contains(&headroom),
        "docs/accuracy.md should say `{headroom}`"
    );
}

/// Rows whose recipe was not found say so, and only those are excused.
#[test]
fn unchecked_rows_say_why() {
    for c in planner::accuracy::calibration::cases() {
        let listed = UNCHECKED.iter().any(|(id, _)| *id == c.id);
        if !c.recipe_found() {
            assert!(
                listed || {
                    let r = evaluate(&Plan::from_query(&c.link()).plan);
                    r.memory.peak_bytes_per_gpu <= r.memory.usable_bytes
                },
                "{}: recipe not found and not listed",
                c.id
            );
        }
    }
}
