//! Throughput against published runs (data/calibration.csv), and hand checks
//! of FLOPs, time and cost.

use planner::accuracy::calibration::{median_abs_error, predictions};
use planner::evaluate;
use planner::model::plan::{Data, ModelChoice, Plan, Saving};

/// Each published run's tolerances, percent: in-sample, its error when the
/// parameters were last fitted plus half a point (at least 1), so that moving
/// a calibrated constant by 5% breaks a row wherever a row can feel it (see
/// `every_calibrated_constant_is_pinned_by_a_row`, #25: with 1.5 points 27 of
/// 50 such changes broke none); and cross-validated (leave-one-architecture-
/// out), its error plus a point (at least 2). Rows over 10% say why.
const ROW_TOLERANCE: &[(&str, f64, f64)] = &[
    ("mb2511_l8b_gb200_fp8", 3.0, 3.5),
    ("mb2511_l8b_b200_fp8", 5.0, 5.5),
    ("mb2511_l8b_h100_fp8", 11.5, 12.0), // its recipe recomputes 5 of 32 layers in full; the table's FSDP run is not in the release's preset (a CLI override), timed as ZeRO-3
    ("mb2511_l70b_gb200_fp8", 2.0, 4.0),
    ("mb2511_l70b_h100_fp8", 10.5, 11.0), // Megatron-Bridge 70B on H100 (TP4 PP8 VP5): under-predicted; the interleaved bubble and PP traffic are charged in full
    ("mb2511_l405b_gb200_fp8", 4.5, 5.0),
    ("mb2511_l405b_b200_fp8", 2.5, 3.0),
    ("mb2511_l405b_h100_fp8", 7.5, 9.0),
    ("mb2511_l8b_gb300_fp8", 15.0, 15.0), // GB300 is fitted with GB200/B200 as one generation; the GB300 run is 19% faster than GB200 in the table but only FP4 and attention differ in the datasheets
    ("nemo2407_l3_8b_h100_fp8", 9.5, 10.0),
    ("nemo2407_l3_70b_h100_fp8", 2.0, 3.0),
    ("nemo2407_l2_7b_h100_fp8", 1.5, 2.0),
    ("nemo2407_l2_13b_h100_fp8", 1.0, 2.0),
    ("nemo2407_l2_70b_h100_fp8", 1.5, 2.0),
    ("nemo2407_gpt3_175b_h100_fp8_128", 10.5, 11.0), // under-predicted by 10% since #35 fits Hopper's GEMM efficiency on every stack's H100 rows (0.636 -> 0.597): OLMo-core's 13B runs pull it down
    ("nemo2407_nemotron340b_h100_fp8", 10.5, 11.0),  // as nemo2407_gpt3_175b_h100_fp8_128
    ("dgxc_l31_8b_h100_bf16_8", 4.0, 5.5),
    ("dgxc_l31_8b_h100_fp8_8", 4.0, 4.5),
    ("dgxc_l31_70b_h100_bf16_64", 2.5, 4.5),
    ("dgxc_l31_70b_h100_fp8_64", 2.0, 2.5),
    ("dgxc_nemotron15b_h100_bf16_16", 5.0, 6.5),
    ("tt_l31_8b_fsdp_8", 2.5, 4.0),
    ("tt_l31_8b_fsdp_compile_fp8_8", 3.0, 5.5),
    ("tt_l31_8b_cp1_32k", 6.5, 10.5), // cross-validated without any Llama 3.1 8B row of the 500 W part: its fit rests on the 70B and 405B runs
    ("tt_l31_70b_2d", 13.5, 14.5), // 70B TP 8 x FSDP 32 with float8 on the 500 W part: under-predicted by 13%; the same run with async TP (titan_12) is +3%
    ("tt_a100_l3_8b_sel_op", 6.0, 6.5),
    ("tt_a100_l3_70b_full", 3.5, 4.0),
    ("tt_a100_l2_13b_noac", 8.5, 9.0),
    ("tt_a100_l2_70b_full", 2.0, 2.5),
    ("korthikanti_22b_selective_sp", 4.5, 5.0),
    ("korthikanti_22b_full_recompute", 5.5, 6.0),
    ("korthikanti_175b_selective_sp", 3.0, 3.5),
    ("korthikanti_175b_full_recompute", 2.5, 3.0),
    ("dgxc_l31_405b_gb200_bf16_128", 2.0, 6.0),
    ("dgxc_l31_405b_gb200_bf16_256", 3.5, 7.5),
    ("dgxc_nemotron15b_gb200_bf16_16", 1.0, 1.5),
    // MoE: the experts' speed, an MoE layer's fixed cost and the host's
    // launch costs leave a scatter (MoeComputeRough says so on the page,
    // and each MoE group's ± quotes its own worst row), in-sample:
    // GPT-OSS-120B on 64 B200s with EP 8 (25.11) +79% where the same model
    // with EP 64 (26.02) is +1%; Qwen3-30B-A3B on 16 H100s (PP 2, one or two
    // layers per virtual stage) +60% to +77%; Qwen3-235B-A22B in 26.02 +24%
    // on B300 and -24% on B200 (NVIDIA's B300 run is 29% slower than its
    // B200 run); GPT-OSS-120B on GB200 in BF16 +24% (26.02) where 25.11's
    // is -4%.
    ("mb2511_gptoss120b_gb300_bf16", 8.5, 14.0),
    ("mb2511_gptoss120b_gb200_bf16", 6.5, 4.5),
    ("mb2511_gptoss120b_b200_bf16", 78.0, 80.0),
    ("mb2511_gptoss120b_h100_bf16", 1.0, 19.5),
    ("mb2511_qwen3_30b_gb300_fp8", 7.5, 4.5),
    ("mb2511_qwen3_30b_gb200_fp8", 14.0, 18.5),
    ("mb2511_qwen3_30b_b200_fp8", 1.0, 17.5),
    ("mb2511_qwen3_30b_h100_fp8", 80.5, 85.0),
    ("mb2511_qwen3_235b_gb300_bf16", 26.0, 29.0),
    ("mb2511_qwen3_235b_gb200_bf16", 12.0, 16.5),
    ("mb2511_qwen3_235b_b200_fp8", 1.0, 2.0),
    ("mb2511_qwen3_235b_h100_fp8", 1.0, 33.5),
    ("mb2509_dsv3_h100_fp8", 3.5, 4.0),
    ("mb2509_dsv3_b200_fp8", 1.0, 2.5),
    ("mb2511_dsv3_b200_fp8_mtp", 6.5, 5.5),
    ("mb2511_dsv3_gb200_bf16", 4.0, 6.0),
    ("mb2511_dsv3_gb200_fp8", 4.0, 3.5),
    ("mb2602_dsv3_b200_fp8", 4.5, 3.5),
    ("mb2602_dsv3_gb300_fp8", 11.5, 13.0), // DeepSeek-V3 on GB300 (26.02): under-predicted by 11% where its 25.11 run on GB200 is within 4%
    ("mb2602_dsv3_gb200_fp8", 4.5, 4.0),
    ("mb2602_dsv3_b300_fp8", 7.0, 9.0),
    ("mb2602_gptoss120b_gb300_bf16", 7.0, 13.0),
    ("mb2602_gptoss120b_gb200_bf16", 24.0, 27.5),
    ("mb2602_gptoss120b_b300_bf16", 1.0, 3.0),
    ("mb2602_gptoss120b_b200_bf16", 1.5, 3.5),
    ("mb2602_gptoss120b_h100_bf16", 21.0, 32.0),
    ("mb2602_qwen3_30b_gb300_fp8", 1.0, 4.0),
    ("mb2602_qwen3_30b_gb200_fp8", 4.0, 8.0),
    ("mb2602_qwen3_30b_b300_fp8", 2.5, 2.0),
    ("mb2602_qwen3_30b_b200_fp8", 4.5, 20.5),
    ("mb2602_qwen3_30b_h100_fp8", 69.0, 126.5),
    ("mb2602_qwen3_235b_gb300_fp8", 9.5, 13.5),
    ("mb2602_qwen3_235b_gb200_fp8", 1.0, 6.0),
    ("mb2602_qwen3_235b_b300_fp8", 24.5, 26.0),
    ("mb2602_qwen3_235b_b200_fp8", 24.5, 24.5),
    ("mb2602_qwen3_235b_h100_fp8", 3.5, 35.5),
    // The PyTorch stacks' published runs (data/published_runs.csv, #35).
    ("titan_2", 8.0, 6.5),
    ("titan_5", 16.0, 18.5), // 8B at 64K with CP 2 on the 500 W part: under-predicted by 15% (17% cross-validated) where the 128K run with CP 4 (titan_6) is over-predicted by 11% (8%): the published pair falls faster with sequence than attention's FLOPs do
    ("titan_6", 12.0, 9.0),  // as titan_5
    ("titan_8", 1.5, 4.0),
    ("titan_9", 5.5, 4.0),
    ("titan_10", 1.0, 2.0),
    ("titan_12", 7.5, 8.0),
    ("titan_13", 1.0, 4.5),
    ("titan_14", 2.5, 3.0),
    ("titan_15", 7.0, 7.0),
    ("titan_16", 8.5, 13.0), // 405B at 64K and 128K with CP (TP 8 PP 8, 1F1B, 8 micro-batches): 8% over, 12% cross-validated; the bubble is 46% of the step
    ("titan_17", 4.5, 12.0), // as titan_16
    ("titan_19", 5.0, 3.0),
    ("titan_20", 7.5, 10.5), // as titan_26
    ("titan_21", 5.5, 6.0),
    ("titan_22", 8.0, 9.0),
    ("titan_25", 4.0, 6.5),
    ("titan_26", 33.0, 37.0), // torchtitan's async TP on 8B (TP 8, FSDP 8): the model hides the TP traffic as TransformerEngine's userbuffers do and is 36% too fast; the run gained 10% over vanilla TP (titan_25, +6%); on 70B (titan_19 to 22) the same rule is within 10%
    ("titan_27", 5.0, 5.5),
    ("titan_28", 41.5, 41.5), // as titan_26, in float8
    ("titan_31", 6.0, 7.5),
    ("titan_32", 8.0, 9.0),
    ("titan_37", 57.5, 58.0), // Llama 4 Scout on 256 GB200 with EP 16 (torchtitan, May 2025): 62% too fast; the planner's MoE costs are fitted on Megatron's runs only and torchtitan's MoE of that time is slower
    ("titan_38", 83.5, 84.0), // as titan_37, in MXFP8
    ("titan_39", 5.5, 6.0),
    ("titan_40", 3.5, 4.5),
    ("titan_41", 7.0, 7.5),
    ("titan_42", 12.0, 12.5), // Qwen3 8B in NVFP4 on 4 GB200: 11% too fast where Llama 3 8B's run of the same recipe (titan_39) is within 5%
    ("titan_43", 1.0, 1.5),
    ("titan_44", 5.0, 5.5),
    ("automodel_4", 24.0, 24.5), // NeMo AutoModel's MoE on H100 (DeepEP, balanced gate): the Megatron-fitted MoE costs are 13-37% too slow for it
    ("automodel_5", 35.5, 36.0), // as automodel_4
    ("automodel_6", 28.0, 28.5), // as automodel_4
    ("automodel_7", 22.0, 19.5), // as automodel_4
    ("automodel_8", 13.0, 13.5), // as automodel_4
    ("automodel_9", 22.5, 33.0), // as automodel_4
    ("automodel_10", 1.0, 3.0),
    // NeMo AutoModel's LoRA runs (#55): frozen base weights without their
    // weight gradient, adapters in fused Triton kernels; -9% to -28% when
    // LoRA was timed as full training.
    ("automodel_11", 5.0, 5.5),
    ("automodel_12", 1.5, 3.0),
    ("automodel_13", 1.0, 3.0),
    ("automodel_14", 5.0, 5.5),
    ("automodel_15", 9.5, 8.5),
    ("automodel_16", 3.0, 3.5),
    ("olmo_1", 2.0, 2.5),
    ("olmo_2", 4.5, 5.0),
    ("olmo_3", 10.0, 10.5),
    ("olmo_4", 5.0, 6.5),
    ("olmo_5", 9.5, 10.0),
    ("olmo_6", 4.0, 5.0),
    ("olmo_7", 28.5, 29.0), // OLMo-core 13B on H100 (mb 1, no checkpointing): 28% too fast where its 7B and 8B runs are within 10%; the GPU count is not published (one node assumed)
    ("olmo_8", 35.0, 36.5), // as olmo_7, in float8
];

fn tolerances(id: &str) -> (f64, f64) {
    ROW_TOLERANCE
        .iter()
        .find(|(r, _, _)| *r == id)
        .map(|(_, t, cv)| (*t, *cv))
        .unwrap_or_else(|| panic!("{id} has no stated tolerance"))
}

fn tolerance(id: &str) -> f64 {
    tolerances(id).0
}

/// Every row within its stated tolerance; the medians the docs quote.
#[test]
fn calibration_rows_within_their_tolerances() {
    let preds = predictions();
    assert_eq!(preds.len(), ROW_TOLERANCE.len(), "one tolerance per row");
    for p in &preds {
        println!(
            "{:<34} measured {:>8.0} predicted {:>8.0} {:>+6.1}%",
            p.id, p.measured, p.predicted, p.error_percent
        );
        assert!(
            p.error_percent.abs() <= tolerance(&p.id),
            "{} is off by {:.1}% (tolerance {}%)",
            p.id,
            p.error_percent,
            tolerance(&p.id)
        );
    }
    // Cross-validated errors are bounded too (#25), row by row.
    for p in planner::accuracy::calibration::cross_validated() {
        let bound = tolerances(&p.id).1;
        assert!(
            p.error_percent.abs() <= bound,
            "{} is off by {:.1}% cross-validated (bound {bound}%)",
            p.id,
            p.error_percent
        );
    }
    let c = planner::accuracy::summary::compute();
    // With the 12 MoE rows (their scatter is the MoE note's) the medians rose
    // from 3.4% / 6.2% to 5.7% / 7.4%; leaving out every row of the same
    // model (#25) instead of one row at a time, the cross-validated one is 8.7%.
    assert!(median_abs_error(&preds) <= 6.0, "in-sample median");
    assert!(
        c.throughput.cv_median <= 9.0,
        "cross-validated median {:.1}%",
        c.throughput.cv_median
    );
}

/// A ±5% change of a calibrated constant pushes at least one row past its
/// stated in-sample tolerance, or the constant is in `UNPINNED`, which
/// docs/accuracy.md lists as not pinned by the published rows (#25: the old
/// test asked only that some row move by 1e-6, and 27 of 50 changes broke
/// no tolerance). The list is exact both ways: a constant that becomes pinned
/// leaves it, so the docs' claim follows.
#[test]
fn every_calibrated_constant_is_pinned_by_a_row() {
    use planner::accuracy::calibration::{cases, predict_with, FITTED};
    use planner::model::throughput::{efficiency, Efficiency, Generation};
    // No FP8 tensor cores on Ampere; no Megatron MoE row on Ampere or the
    // capped H100s (the Hugging Face-stack test checks Ampere's MoE rows).
    let unseen = |g: Generation, field: &str| {
        matches!(
            (g, field),
            // Ampere's GEMM efficiency is the A100's measurement
            // (hardware.json, `a100_gemm_time_is_what_the_measured_shapes_give`).
            (Generation::Ampere, "fp8_gemm" | "gemm")
                | (
                    Generation::Ampere | Generation::HopperPowerCapped,
                    "moe" | "moe_layer_overhead"
                )
                // The host's launch costs are fitted on Blackwell's rows
                // alone and taken for every generation.
                | (
                    Generation::Ampere | Generation::Hopper | Generation::HopperPowerCapped,
                    "moe_expert_launch" | "moe_router_launch" | "moe_alltoall_launch"
                )
        )
    };
    type Field = fn(&mut Efficiency) -> &mut f64;
    let fields: [(&str, Field); 11] = [
        ("moe", |e| &mut e.moe),
        ("moe_layer_overhead", |e| &mut e.moe_layer_overhead),
        ("moe_expert_launch", |e| &mut e.host.moe_expert_launch),
        ("moe_router_launch", |e| &mut e.host.moe_router_launch),
        ("moe_alltoall_launch", |e| &mut e.host.moe_alltoall_launch),
        ("gemm", |e| &mut e.gemm),
        ("fp8_gemm", |e| &mut e.fp8_gemm),
        ("attention", |e| &mut e.attention),
        ("kernel_overhead", |e| &mut e.kernel_overhead),
        ("memory", |e| &mut e.memory),
        ("overlap", |e| &mut e.overlap),
    ];
    let cases = cases();
    let mut unpinned = Vec::new();
    let mut moves = 0;
    for g in FITTED {
        let mine: Vec<_> = cases.iter().filter(|c| c.gpu.generation == g).collect();
        for (name, field) in fields {
            if unseen(g, name) {
                continue;
            }
            for factor in [0.95, 1.05] {
                moves += 1;
                let mut e = efficiency(g);
                *field(&mut e) *= factor;
                let broken = mine
                    .iter()
                    .filter(|c| predict_with(c, &e).error_percent.abs() > tolerance(&c.id))
                    .count();
                println!("{g:?}.{name} x {factor}: {broken} rows past their tolerance");
                if broken == 0 {
                    unpinned.push(format!("{g:?}.{name} x {factor}"));
                }
            }
        }
    }
    assert_eq!(unpinned, UNPINNED, "update UNPINNED and docs/accuracy.md");
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/accuracy.md"
    ))
    .expect("docs/accuracy.md");
    for u in UNPINNED {
        assert!(
            doc.contains(u),
            "docs/accuracy.md should list `{u}` as not pinned"
        );
    }
    let claim = format!(
        "{} of the {moves} such moves\nare caught",
        moves - UNPINNED.len()
    );
    assert!(
        doc.contains(&claim),
        "docs/accuracy.md should say `{claim}`"
    );
    let count = format!("These {} are not", UNPINNED.len());
    assert!(
        doc.contains(&count),
        "docs/accuracy.md should say `{count}`"
    );
}

/// Calibrated constants that a ±5% change leaves every row within its
/// tolerance: the rows do not pin them (docs/accuracy.md says so).
const UNPINNED: &[&str] = &[
    "Ampere.attention x 0.95",
    "Ampere.kernel_overhead x 0.95",
    "Ampere.kernel_overhead x 1.05",
    "Ampere.memory x 0.95",
    "Ampere.overlap x 0.95",
    "Hopper.moe_layer_overhead x 1.05",
    "Hopper.kernel_overhead x 0.95",
    "HopperPowerCapped.kernel_overhead x 0.95",
    "HopperPowerCapped.kernel_overhead x 1.05",
    "HopperPowerCapped.overlap x 0.95",
    "Blackwell.moe_layer_overhead x 1.05",
    "Blackwell.moe_router_launch x 1.05",
    "Blackwell.kernel_overhead x 1.05",
    "Blackwell.overlap x 0.95",
];

/// The fit, started from neutral values, lands on the shipped parameters:
/// they are the fit's result, not a hand-tuned copy of it.
#[test]
fn fit_from_a_neutral_start_reproduces_the_shipped_parameters() {
    use planner::model::throughput::efficiency;
    for (g, fitted, _) in planner::accuracy::calibration::fit() {
        let shipped = efficiency(g);
        let rows = planner::accuracy::calibration::cases();
        let mine = || rows.iter().filter(|c| c.gpu.generation == g);
        let has = |fp8: bool| {
            mine().any(|c| {
                c.arch.moe.is_none()
                    && (c.plan.numerics.precision == planner::model::plan::Precision::Fp8) == fp8
            })
        };
        let mut pairs = vec![("attention", fitted.attention, shipped.attention)];
        if mine().any(|c| c.arch.moe.is_some()) {
            pairs.push(("moe", fitted.moe, shipped.moe));
            // Milliseconds per MoE layer and micro-batch.
            pairs.push((
                "moe_layer_overhead x 1000",
                fitted.moe_layer_overhead * 1000.0,
                shipped.moe_layer_overhead * 1000.0,
            ));
        }
        // The host's launch costs, fitted on Blackwell's MoE rows.
        if g == planner::model::throughput::Generation::Blackwell {
            let host = planner::model::throughput::HOST;
            for (name, f, s) in [
                (
                    "moe_expert_launch",
                    fitted.host.moe_expert_launch,
                    host.moe_expert_launch,
                ),
                (
                    "moe_router_launch",
                    fitted.host.moe_router_launch,
                    host.moe_router_launch,
                ),
                (
                    "moe_alltoall_launch",
                    fitted.host.moe_alltoall_launch,
                    host.moe_alltoall_launch,
                ),
            ] {
                pairs.push((name, f * 1000.0, s * 1000.0));
            }
        }
        if has(false) {
            pairs.push(("gemm", fitted.gemm, shipped.gemm));
        }
        if has(true) {
            pairs.push(("fp8_gemm", fitted.fp8_gemm, shipped.fp8_gemm));
        }
        for (name, f, s) in pairs {
            assert!(
                (f - s).abs() <= 0.002,
                "{g:?}.{name}: fit {f:.3}, shipped {s:.3}"
            );
        }
    }
}

/// The harness reads every setting a row's notes state (`VP=5;`, `GA=64`,
/// `step_time_s=12.91`): the interleave, the accumulation and the step time.
#[test]
fn each_rows_parsed_settings_match_its_notes() {
    use planner::accuracy::calibration::{read_csv, stated, CALIBRATION_CSV};
    let rows = read_csv(CALIBRATION_CSV);
    let mut checked = 0;
    for c in planner::accuracy::calibration::cases() {
        // The other stacks' runs state their settings in columns (published_runs.rs).
        let Some(r) = rows.iter().find(|r| r.get("id") == c.id) else {
            continue;
        };
        let notes = r.get("notes");
        if let Some(vp) = stated(notes, "VP") {
            assert_eq!(c.plan.parallelism.vp, vp as u64, "{}: VP", c.id);
            checked += 1;
        }
        if let Some(ga) = stated(notes, "GA") {
            assert_eq!(c.plan.data.grad_accum, ga as u64, "{}: GA", c.id);
            checked += 1;
        }
        assert_eq!(
            c.measured_step_seconds,
            stated(notes, "step_time_s"),
            "{}",
            c.id
        );
    }
    assert!(checked >= 25, "settings checked: {checked}");
    assert_eq!(stated("x; VP=5; GA=64", "VP"), Some(5.0));
    assert_eq!(stated("NVP=3", "VP"), None, "a whole key only");
}

/// Rows left out are listed by id with a reason, in the tests and the docs.
#[test]
fn excluded_rows_are_named_with_reasons() {
    let out = planner::accuracy::calibration::excluded();
    let ids: Vec<&str> = out.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "megatron21_1p7b",
            "megatron21_7p5b",
            "megatron21_39p1b",
            "megatron21_145p6b",
            "megatron21_529p6b"
        ]
    );
    assert_eq!(
        planner::accuracy::calibration::cases().len() - planner::accuracy::published::cases().len()
            + out.len(),
        planner::accuracy::calibration::read_csv(planner::accuracy::calibration::CALIBRATION_CSV)
            .len()
    );
}

/// Megatron-Bridge's tables imply 51.5 GFLOP/token for Llama-3-8B and 449.2
/// for 70B at seq 8192 (calibration.csv notes, causal attention counted).
#[test]
fn model_flops_per_token_match_megatron_bridge() {
    for (model, gflop) in [("llama-3.1-8b", 51.5), ("llama-3.1-70b", 449.2)] {
        let r = evaluate(&Plan {
            data: Data {
                seq: 8192,
                ..Data::default()
            },
            model: ModelChoice {
                preset: model.into(),
                ..ModelChoice::default()
            },
            ..Plan::default()
        });
        let got = r.throughput.model_flops_per_token / 1e9;
        assert!(
            (got - gflop).abs() / gflop < 0.005,
            "{model}: {got:.1} vs {gflop}"
        );
        // MFU is model FLOPs x tokens/s per GPU over the dense peak.
        let mfu = r.throughput.model_flops_per_token * r.throughput.tokens_per_second_per_gpu
            / r.throughput.peak_flops;
        assert!((mfu - r.throughput.mfu).abs() < 1e-12);
    }
}

/// Full recomputation adds one forward pass of the decoder layers: HFU =
/// MFU x (1 + layers' share / 3), the LM head (6 x vocab x hidden FLOPs per
/// token) not recomputed (ignoring attention's 2.5x backward).
#[test]
fn full_recompute_raises_hfu_by_a_third() {
    let r = evaluate(&Plan::from_query("ckpt=full").plan);
    let model = r.throughput.model_flops_per_token;
    let head = 6.0 * (r.architecture.vocab * r.architecture.hidden) as f64;
    let want = 1.0 + (model - head) / model / 3.0;
    assert!((r.throughput.hfu / r.throughput.mfu - want).abs() < 1e-9);
    let none = evaluate(&Plan::default());
    assert!(r.throughput.step_seconds > none.throughput.step_seconds);
}

/// Cost: price x instances x hours; spot at the stated discount.
#[test]
fn cost_is_price_times_instance_hours() {
    let r = evaluate(
        &Plan::from_query("instance=ml.p4d.24xlarge&nodes=2&price=40&save_every=0&fail_rate=0")
            .plan,
    );
    let hours = r.time.total_hours;
    assert!((r.cost.total_usd.unwrap() - 40.0 * 2.0 * hours).abs() < 1e-6);
    assert!(
        (r.cost.spot_usd.unwrap()
            - 40.0 * 2.0 * hours * (1.0 - planner::model::cost::SPOT_DISCOUNT))
            .abs()
            < 1e-6
    );
    assert!((r.time.gpu_hours - 16.0 * hours).abs() < 1e-9);
    // 1e10 tokens at this rate:
    let expect_hours =
        (1e10 / r.throughput.tokens_per_step as f64).ceil() * r.throughput.step_seconds / 3600.0;
    assert!((hours - expect_hours).abs() / expect_hours < 1e-9);
    assert_eq!(r.cost.price_source, "user");
}

/// Prices from ../shared/data/sagemaker_prices.csv, each with its basis:
/// ml.p5.48xlarge is listed at $63.296/h (2026-09, after the June 2025 cut);
/// ml.p6-b200.48xlarge has no SageMaker price, so 1.15 x EC2 $113.9328 =
/// $131.0227, an estimate; GB200 is sold only in UltraServers.
#[test]
fn prices_come_with_their_basis() {
    let p5 = evaluate(&Plan::from_query("instance=ml.p5.48xlarge&nodes=2").plan);
    assert_eq!(p5.cost.price_per_instance_hour, Some(63.296));
    assert_eq!(
        (
            p5.cost.price_source.as_str(),
            p5.cost.price_as_of.as_deref()
        ),
        ("listed", Some("2026-09"))
    );
    let hours = p5.time.total_hours;
    assert!((p5.cost.total_usd.unwrap() - 63.296 * 2.0 * hours).abs() < 1e-6);
    let b200 = evaluate(&Plan::default());
    assert_eq!(b200.cost.price_per_instance_hour, Some(131.0227));
    assert!(
        (131.0227f64 - 1.15 * 113.9328).abs() < 0.001,
        "derived = 1.15 x EC2"
    );
    assert_eq!(b200.cost.price_source, "derived");
    let w = b200
        .warnings
        .iter()
        .find(|w| w.code() == "price_derived")
        .expect("marked as an estimate");
    assert!(
        w.english().contains("estimate") && w.english().contains("113.93"),
        "{}",
        w.english()
    );
    let gb200 = evaluate(&Plan::from_query("instance=ml.p6e-gb200.36xlarge").plan);
    assert!(gb200.cost.total_usd.is_none());
    let w = gb200
        .warnings
        .iter()
        .find(|w| w.code() == "price_unknown")
        .expect("asks for a price");
    assert!(
        w.english().contains("UltraServer") && w.english().contains("price="),
        "{}",
        w.english()
    );
    // Every catalogued instance the table prices has its price.
    for i in planner::model::hardware::instances() {
        let listed = planner::accuracy::calibration::read_csv(planner::model::hardware::PRICES_CSV)
            .into_iter()
            .find(|r| r.get("instance") == i.instance_type);
        if let Some(r) = listed.filter(|r| r.get("basis") != "unknown") {
            assert_eq!(i.price_usd_hr, r.num("usd_per_hour"), "{}", i.instance_type);
        }
    }
}

/// A full (resumable) AdamW checkpoint of Llama-3.1-8B: 4 B weights + 8 B
/// moments per parameter = 96.36 GB; async saving blocks only for staging.
#[test]
fn checkpoint_size_and_async_share() {
    let sync = evaluate(&Plan::default());
    assert_eq!(sync.checkpoint.size_bytes, 12 * 8_030_261_248);
    let asy = evaluate(&Plan {
        saving: Saving {
            async_save: true,
            ..Saving::default()
        },
        ..Plan::default()
    });
    assert!(asy.checkpoint.wall_share < sync.checkpoint.wall_share / 5.0);
    let weights = evaluate(&Plan {
        saving: Saving {
            save: planner::model::plan::SaveKind::Weights,
            ..Saving::default()
        },
        ..Plan::default()
    });
    assert_eq!(weights.checkpoint.size_bytes, 2 * 8_030_261_248);
}

/// data/coverage.json (what the labels quote), docs/accuracy.md's tables and
/// the README's figures are all the current computation's.
#[test]
fn coverage_docs_and_readme_are_current() {
    use planner::accuracy::coverage::shipped;
    use planner::accuracy::docs::markdown;
    use planner::accuracy::summary::{compute, throughput_rows};
    let c = compute();
    let json = serde_json::to_string_pretty(&c).expect("serialises");
    assert_eq!(
        json.trim(),
        planner::accuracy::coverage::COVERAGE_JSON.trim(),
        "data/coverage.json is stale: `cargo run -p planner --bin plan -- calibrate --coverage > /tmp/c.json && mv /tmp/c.json crates/planner/data/coverage.json`"
    );
    assert_eq!(shipped().groups.len(), c.groups.len());
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let doc =
        std::fs::read_to_string(format!("{root}/docs/accuracy.md")).expect("docs/accuracy.md");
    assert!(
        doc.contains(markdown(&c, &throughput_rows()).trim()),
        "docs/accuracy.md is stale: paste `cargo run -p planner --bin plan -- calibrate --markdown`"
    );
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let t = &c.throughput;
    for claim in [
        planner::accuracy::docs::readme_groups(&throughput_rows()),
        format!("{} published runs", t.rows),
        format!("cross-validated median error {:.1}%", t.cv_median),
        format!("in-sample {:.1}%", t.in_sample_median),
        format!(
            "{} PyTorch steps counted under FakeTensor",
            c.memory_single_rank.rows
        ),
        oracle_claim(&c),
    ] {
        assert!(readme.contains(&claim), "README.md should say `{claim}`");
    }
}

/// The README's figures for the memory oracle's whole table (in-sample) and
/// its held-out plans.
fn oracle_claim(c: &planner::accuracy::coverage::Coverage) -> String {
    let all = c.oracle("all").expect("the oracle's table has rows");
    let h = &c.memory_oracle_heldout;
    format!(
        "{} oracle steps (median error {:.2}%, worst {:+.2}%; in-sample: the model was changed on them) in groups by sharding, checkpointing and model family, and {} held-out oracle steps it never saw (median error {:.2}%, worst {:+.2}%",
        all.rows, all.median, all.worst, h.rows, h.median, h.worst
    )
}

/// A custom GPU entered with the H100 SXM datasheet figures behaves as
/// ml.p5.48xlarge inside a node; across nodes its network, which no
/// nccl-tests run measured, gets 80% of its line rate where p5's measured
/// 90% (hardware.json `nccl`), so it is never faster.
#[test]
fn custom_gpu_with_h100_figures_matches_p5() {
    let custom_gpu = "instance=custom&gpu_mem=80&gpu_bf16=989.4&gpu_fp8=1978.9&gpu_bw=3.35&gpu_count=8&gpu_nvlink=900&gpu_net=3200";
    let across = |q: &str| evaluate(&Plan::from_query(&format!("{q}&nodes=2")).plan);
    let (p5_2, custom_2) = (across("instance=ml.p5.48xlarge"), across(custom_gpu));
    assert!(
        custom_2.throughput.tokens_per_second_per_gpu <= p5_2.throughput.tokens_per_second_per_gpu
    );
    let p5 = evaluate(&Plan::from_query("instance=ml.p5.48xlarge&nodes=1").plan);
    let custom = evaluate(&Plan::from_query(&format!("{custom_gpu}&nodes=1")).plan);
    assert!(custom.errors.is_empty(), "{:?}", custom.errors);
    let (a, b) = (
        p5.throughput.tokens_per_second_per_gpu,
        custom.throughput.tokens_per_second_per_gpu,
    );
    assert!((a - b).abs() / a < 1e-9, "{a} vs {b}");
    assert_eq!(custom_2.layout.gpus, 16);
    assert!(
        custom.cost.total_usd.is_none(),
        "no price for a custom GPU unless entered"
    );
}

/// The instance comparison marks one fastest and one cheapest option, both fitting.
#[test]
fn instance_comparison_marks_fastest_and_cheapest() {
    let opts = planner::estimate::evaluate::compare_instances(
        &Plan::from_query("model=llama-3.1-8b&seq=4096").plan,
    );
    assert!(opts.len() >= 10);
    let fastest: Vec<_> = opts.iter().filter(|o| o.fastest).collect();
    assert_eq!(fastest.len(), 1);
    assert!(opts
        .iter()
        .filter(|o| o.fits)
        .all(|o| o.hours >= fastest[0].hours));
    let cheapest: Vec<_> = opts.iter().filter(|o| o.cheapest).collect();
    assert_eq!(cheapest.len(), 1);
    let min = opts
        .iter()
        .filter(|o| o.fits)
        .filter_map(|o| o.usd)
        .fold(f64::MAX, f64::min);
    assert_eq!(cheapest[0].usd, Some(min));
}

/// Sliding-window layers attend to their window only: gpt-oss-20b alternates
/// 12 layers with a 128-token window and 12 global layers (models.json);
/// attention FLOPs per token = 12 * a*d * (12 * w(1 - w/2s) + 12 * s/2).
#[test]
fn sliding_window_attention_flops() {
    let arch = planner::model::architecture::preset("gpt-oss-20b")
        .unwrap()
        .arch
        .clone();
    let counts = arch.parameter_counts();
    let s = 131_072.0;
    let dense = 6.0
        * (arch.layers as f64 * (counts.active_per_layer - counts.norms_per_layer) as f64
            + (arch.vocab * arch.hidden) as f64);
    let keys = 12.0 * 128.0 * (1.0 - 128.0 / (2.0 * s)) + 12.0 * s / 2.0;
    let want = dense + 12.0 * arch.q_width() as f64 * keys;
    let got = planner::model::throughput::model_flops_per_token(&arch, &counts, 131_072);
    assert!((got - want).abs() / want < 1e-12, "{got} vs {want}");
    // Without windows the attention term would be about twice as large.
    let global = planner::model::architecture::Architecture {
        sliding_window: 0,
        local_layers: 0,
        ..arch.clone()
    };
    let full = planner::model::throughput::model_flops_per_token(&global, &counts, 131_072);
    assert!((full - dense) / (got - dense) > 1.99);
    // Imported from its config.json (layer_types), the same windows come back.
    let cfg = r#"{"model_type":"gpt_oss","hidden_size":2880,"intermediate_size":2880,"num_attention_heads":64,"num_hidden_layers":4,"num_key_value_heads":8,"head_dim":64,"num_local_experts":32,"num_experts_per_tok":4,"vocab_size":201088,"sliding_window":128,"layer_types":["sliding_attention","full_attention","sliding_attention","full_attention"]}"#;
    let a = planner::model::architecture::from_hf_config(cfg).unwrap();
    assert_eq!((a.sliding_window, a.local_layers), (128, 2));
}

/// Labels come from what was checked (#15, #25): "calibrated" (throughput)
/// or "counted" / "measured" (memory) only for a kind of plan with checks on
/// that very GPU and inside what those checks ran; a checked kind outside
/// them is "extrapolated" and names the axis; everything else "derived".
#[test]
fn accuracy_labels_follow_coverage() {
    let level = |q: &str| {
        let r = evaluate(&Plan::from_query(q).plan);
        (r.throughput_accuracy.level, r.memory.accuracy.level)
    };
    // Hopper, Megatron, FP8, TP/PP: five published runs, 13-341 B on 16-128
    // GPUs, PP 4 to 8 over 16 to 64 micro-batches (PP 2 or 8 micro-batches
    // would change the bubble beyond the group's ±: extrapolated, #36).
    let hopper =
        "impl=megatron&precision=fp8&instance=ml.p5.48xlarge&nodes=4&tp=4&pp=4&ga=32&model=llama-3.1-70b&seq=4096&zero=1";
    assert_eq!(level(hopper).0, "calibrated");
    let r = evaluate(&Plan::from_query(hopper).plan);
    assert!(
        r.throughput_accuracy.note_english().contains("n = 5"),
        "{}",
        r.throughput_accuracy.note_english()
    );
    assert!(r.throughput_accuracy.expected_error.is_some());
    // The same kind on a GPU no run used: a custom one, an A10G.
    let custom = "impl=megatron&precision=bf16&instance=custom&gpu_mem=80&gpu_bf16=989&gpu_bw=3.35&gpu_count=8&gpu_nvlink=900&gpu_net=3200&nodes=2&tp=4&pp=2&model=llama-3.1-70b";
    assert_eq!(level(custom).0, "derived");
    assert_eq!(
        level("impl=megatron&instance=ml.g5.48xlarge&tp=4&pp=2").0,
        "derived"
    );
    // HF Trainer on a B200: no run; on A100s (fms-acceleration's runs, 1-2 GPUs).
    assert_eq!(level("").0, "derived");
    assert_eq!(
        level("model=mistral-7b-v0.1&instance=ml.p4de.24xlarge&precision=bf16-pure&ckpt=full&seq=4096").0,
        "extrapolated",
        "the HF rows ran on one or two GPUs, a p4de has eight"
    );
    // Memory: HF on one GPU against the FakeTensor-counted steps (<= 1.2 B,
    // 1-4K tokens); FSDP2 and LoRA against the oracle (0.5-405 B, up to 64
    // GPUs, 1-32K); the torchtitan stack against torchtitan's published
    // runs (tests/torchtitan_memory.rs), which no longer vouch for the HF
    // stack's FP8 FSDP; ZeRO-1 (DDP, which the oracle cannot fake), QLoRA,
    // FP8 and offload are derived.
    assert_eq!(
        level("model=llama-3.2-1b&zero=0&instance=ml.g6e.2xlarge&seq=4096").1,
        "counted"
    );
    assert_eq!(level("model=llama-3.2-1b&zero=3&seq=4096").1, "counted");
    assert_eq!(level("model=llama-3.2-1b&zero=2&seq=4096").1, "counted");
    // The oracle's LoRA steps ran models cut to 2-4 layers (#36) and, since
    // #39, whole 8B and 70B models (32 and 80 layers): a whole 16-layer 1B
    // model is counted; one of 200 layers is not.
    let lora = evaluate(&Plan::from_query("model=llama-3.2-1b&zero=3&train=lora&seq=4096").plan);
    assert_eq!(lora.memory.accuracy.level, "counted");
    let deep = evaluate(
        &Plan::from_query("model=llama-3.2-1b&layers=200&zero=3&train=lora&seq=4096").plan,
    );
    assert_eq!(deep.memory.accuracy.level, "extrapolated");
    assert!(deep
        .memory
        .accuracy
        .note_english()
        .contains("layers=200 not checked (checked: 2–80)"));
    assert_eq!(level("zero=3&precision=fp8").1, "derived");
    assert_eq!(
        level("zero=3&precision=fp8&stack=torchtitan&instance=ml.p5.48xlarge&mb=2&ckpt=op").1,
        "approximate"
    );
    assert_eq!(level("zero=0&instance=ml.p5.48xlarge").1, "derived");
    assert_eq!(level("zero=1").1, "derived");
    assert_eq!(
        level("model=llama-3.1-70b&train=qlora&precision=fp8&offload=1&zero=0").1,
        "derived"
    );
}

/// The odd plans #25 found labelled "measured": each now carries the label
/// its evidence supports, and names the axis it leaves its checks on.
#[test]
fn odd_plans_say_what_they_extrapolate() {
    let acc = |q: &str| {
        let r = evaluate(&Plan::from_query(q).plan);
        assert!(r.errors.is_empty(), "{q}: {:?}", r.errors);
        (r.figures.throughput_accuracy, r.figures.memory.accuracy)
    };
    let extrapolated = |a: &planner::estimate::report::Accuracy, axis: &str, q: &str| {
        assert_eq!(a.level, "extrapolated", "{q}: {}", a.note_english());
        assert!(
            a.expected_error.is_none(),
            "{q}: no error outside the checks"
        );
        assert!(
            a.note_english().contains(axis),
            "{q}: `{axis}` in {}",
            a.note_english()
        );
    };
    // Throughput.
    let q = "precision=nvfp4&impl=megatron&instance=ml.p6-b200.48xlarge&seq=8192&zero=1";
    extrapolated(&acc(q).0, "precision nvfp4 not checked", q);
    let q = "model=llama-3.1-405b&impl=megatron&precision=fp8&instance=ml.p5.48xlarge&nodes=4096&tp=8&pp=8&cp=2&seq=8192&zero=1";
    extrapolated(&acc(q).0, "32768 GPUs outside the checked 8–1024", q);
    let q = "model=llama-3.1-70b&impl=megatron&precision=fp8&instance=ml.p5.48xlarge&nodes=2&tp=4&pp=2&seq=131072&ckpt=full&zero=1";
    extrapolated(
        &acc(q).0,
        "sequence 131072 outside the checked 2048–8192",
        q,
    );
    // LoRA and offloading with PP on Megatron: the user's own entry (the
    // bundle's launcher refuses them).
    let q = "model=llama-3.1-70b&impl=megatron&precision=fp8&instance=ml.p5.48xlarge&nodes=2&tp=4&pp=2&seq=4096&train=lora&zero=1&entry=pretrain_gpt.py";
    extrapolated(&acc(q).0, "lora training not checked", q);
    let q = "model=llama-3.1-70b&impl=megatron&precision=fp8&instance=ml.p5.48xlarge&nodes=2&tp=4&pp=2&seq=4096&offload=1&zero=1&entry=pretrain_gpt.py";
    extrapolated(&acc(q).0, "offload=1 not checked (checked: 0)", q);
    // FP32 at 128K on p4de: the HF A100 rows are BF16 at 4K on 1-2 GPUs.
    let q = "precision=fp32&seq=131072&instance=ml.p4de.24xlarge&ckpt=full";
    let (t, _) = acc(q);
    assert_ne!(t.level, "calibrated", "{q}: {}", t.note_english());
    assert!(t.expected_error.is_none());
    // Memory.
    // The oracle's whole models reach 405B (#39); beyond them, extrapolated.
    let q = "params_b=800&zero=3&seq=4096&instance=ml.p5.48xlarge&nodes=8";
    extrapolated(
        &acc(q).1,
        "798.0 B parameters outside the checked 0.5–405.9 B",
        q,
    );
    let q = "model=llama-3.1-70b&zero=3&seq=131072&ckpt=full&nodes=4";
    extrapolated(
        &acc(q).1,
        "sequence 131072 outside the checked 1024–32768",
        q,
    );
    let q = "model=llama-3.2-1b&zero=3&seq=4096&nodes=128";
    extrapolated(&acc(q).1, "1024 GPUs outside the checked 2–64", q);
    // LoRA's oracle rows ran ZeRO-0 (one GPU) and ZeRO-3; none HSDP.
    let q = "model=llama-3.2-1b&zero=2&train=lora&seq=4096";
    extrapolated(&acc(q).1, "ZeRO stage 2 not checked (checked: 0, 3)", q);
    let q = "model=llama-3.2-1b&zero=3&seq=4096&nodes=2&shard=8";
    extrapolated(&acc(q).1, "hybrid sharding", q);
    // The oracle's ZeRO-3 steps ran 1-2 sequences per micro-batch: at 1 the
    // 1B plan is counted, at 16 its activations are 8x anything checked.
    let q = "model=llama-3.2-1b&zero=3&seq=4096&mb=1";
    assert_eq!(
        acc(q).1.level,
        "counted",
        "{q}: {}",
        acc(q).1.note_english()
    );
    let q = "model=llama-3.2-1b&zero=3&seq=4096&mb=16";
    extrapolated(&acc(q).1, "micro-batch 16 outside the checked 1–2", q);
}

/// GB200 on SageMaker is sold as UltraServers whose 72 (or 36) GPUs share
/// one NVLink domain (gb200_nvl72_and_uneven_pp.md §1.1). Megatron-Bridge
/// 25.11 ran Llama 3 70B FP8 with Megatron-FSDP over 64 GB200s at 4,312
/// tokens/s/GPU (calibration.csv `mb2511_l70b_gb200_fp8`); as a page plan on
/// 16 x ml.p6e-gb200.36xlarge it must land within 15%, its FSDP traffic on NVLink.
#[test]
fn gb200_ultraserver_keeps_fsdp_on_nvlink() {
    let q = "model=llama-3.1-70b&precision=fp8&impl=megatron&zero=3&instance=ml.p6e-gb200.36xlarge&nodes=16&mb=2&ga=2&seq=8192";
    let r = evaluate(&Plan::from_query(q).plan);
    let err = r.throughput.tokens_per_second_per_gpu / 4312.0 - 1.0;
    assert!(err.abs() < 0.15, "{:+.1}%", err * 100.0);
    assert_eq!((r.nvlink.gpus_per_domain, r.nvlink.domains), (72, 1));
    assert!(r.nvlink.crossing.is_empty());
    // On x36 UltraServers the 64 GPUs span two domains: DP crosses, hierarchically.
    let x36 = evaluate(&Plan::from_query(&format!("{q}&ultraserver=36")).plan);
    assert_eq!(
        (x36.nvlink.domains, x36.nvlink.crossing.clone()),
        (2, vec!["dp"])
    );
    assert!(x36.throughput.step_seconds > r.throughput.step_seconds);
    assert!(
        x36.throughput.step_seconds < 1.1 * r.throughput.step_seconds,
        "only 1/36 shards cross"
    );
    // TP 8 spans two 4-GPU trays over multi-node NVLink (NVIDIA's Nemotron-4 340B FP8 recipe).
    let tp8 = evaluate(
        &Plan::from_query("instance=ml.p6e-gb200.36xlarge&nodes=4&tp=8&impl=megatron").plan,
    );
    assert!(tp8.errors.is_empty(), "{:?}", tp8.errors);
    // Context parallelism across two p5 nodes leaves the 8-GPU domain: a warning on `cp`.
    let cp = evaluate(&Plan::from_query("instance=ml.p5.48xlarge&nodes=2&cp=16&seq=131072&impl=megatron&model=llama-3.1-70b&zero=3").plan);
    let w = cp
        .warnings
        .iter()
        .find(|w| w.code() == "crosses_nvlink_domain")
        .expect("warned");
    assert_eq!(w.key, Some("cp"));
}

/// Data-parallel overlap is a stated assumption the user can switch off:
/// NVIDIA's recipes overlap the gradient reduction and parameter gathers
/// with compute (85% of the traffic hidden, hand-set); without overlap all
/// of it shows. Tensor-parallel overlap is its own flag (`tp_overlap`).
#[test]
fn communication_overlap_is_an_explicit_assumption() {
    let q = "model=llama-3.1-70b&impl=megatron&zero=3&instance=ml.p5.48xlarge&nodes=4&tp=4&seq=8192&ga=4";
    let on = evaluate(&Plan::from_query(q).plan);
    let off = evaluate(&Plan::from_query(&format!("{q}&overlap=0")).plan);
    assert!(on.errors.is_empty() && off.errors.is_empty());
    let (a, b) = (&on.throughput.step, &off.throughput.step);
    // Overlap hides at most 85% of the data-parallel traffic, and at most
    // 90% of the compute's length of it.
    assert!(
        a.data_parallel < b.data_parallel && a.data_parallel >= b.data_parallel * 0.15 * 0.999999,
        "{} vs {}",
        b.data_parallel,
        a.data_parallel
    );
    // `overlap` is the data-parallel flag: TP's cost does not move with it.
    assert_eq!(b.tensor_parallel, a.tensor_parallel);
    assert!(off.throughput.step_seconds > on.throughput.step_seconds);
    // A link keeps the assumption.
    assert!(Plan::from_query(&format!("{q}&overlap=0"))
        .plan
        .to_query()
        .contains("overlap=0"));
}

/// Tensor parallelism at the link's measured speed (#23), by hand: without
/// SP each layer all-reduces its activations twice forward and twice
/// backward. On 4 H100s (NVLink 4: 450 GB/s at 370/450 of it, fabric.rs)
/// one all-reduce of 8192 x 8192 bf16 activations costs
/// 2 * 3/4 * 134,217,728 B / 370 GB/s + 3 hops x 5.52 us + 22.23 us
/// = 0.5441 + 0.0166 + 0.0222 ms. The Hugging Face stack exposes all four;
/// Megatron hides the backward pair beside the backward GEMMs (TE's async
/// collectives), and with `tp_overlap=1` hides more.
#[test]
fn tensor_parallel_collectives_by_hand() {
    let q =
        "model=llama-3.1-70b&instance=ml.p5.48xlarge&nodes=4&tp=4&sp=0&seq=8192&mb=1&ga=4&zero=3";
    let step = |extra: &str| {
        evaluate(&Plan::from_query(&format!("{q}{extra}")).plan)
            .figures
            .throughput
            .step
    };
    let all_reduce = 2.0 * 0.75 * 134_217_728.0 / 370e9 + 3.0 * 5.52e-6 + 22.23e-6;
    let by_hand = 80.0 * 4.0 * 4.0 * all_reduce;
    let hf = step("&impl=hf").tensor_parallel;
    assert!((hf / by_hand - 1.0).abs() < 1e-9, "{hf} vs {by_hand}");
    let megatron = step("&impl=megatron").tensor_parallel;
    assert!(
        megatron < hf && megatron >= by_hand / 2.0 * 0.999999,
        "{megatron}"
    );
    let overlapped = step("&impl=megatron&tp_overlap=1").tensor_parallel;
    assert!(
        overlapped < megatron && overlapped >= by_hand / 4.0 * 0.999999,
        "{overlapped}"
    );
}

/// The Hugging Face stack our export runs, against the usable rows of
/// ../shared/data/hf_stack_throughput.csv (A100 80GB, accelerate FSDP,
/// fms-acceleration benchmarks): median error within 10% (issue #10), every
/// row within 25%; none of these rows is used by a fit.
/// PyTorch's ring attention merges in FP32 with eager ops (#35,
/// `ring_merges` in throughput/communication.rs), derived by hand for Llama 3.1 8B at
/// 131,072 tokens, CP 4, one micro-batch, full recomputation: each rank holds
/// 32,768 tokens, so 134,217,728 output elements (32 query heads x 128) and
/// 67,108,864 K and V elements (8 KV heads x 128, twice). Per layer:
/// forward 134,217,728 x (12 + 32.5 x 3) + 67,108,864 x 4 x 3
/// = 15,502,147,584 B, run twice under full recomputation; backward
/// 134,217,728 x (10 + 11.5 x 4) + 67,108,864 x (10 + 23.5 x 4)
/// = 14,495,514,624 B; 45,499,809,792 B at 75% of 3.35 TB/s, times 32
/// layers = 0.5795 s. The ring's sends hide behind attention at this length,
/// and Megatron (TransformerEngine merges inside its kernels) pays nothing.
#[test]
fn ring_attention_merges_by_hand() {
    let q =
        "model=llama-3.1-8b&instance=ml.p5.48xlarge&nodes=1&cp=4&seq=131072&mb=1&ga=1&ckpt=full";
    let step = |stack: &str| {
        evaluate(&Plan::from_query(&format!("{q}&stack={stack}")).plan)
            .figures
            .throughput
            .step
            .context_parallel
    };
    let by_hand = 32.0 * 45_499_809_792.0 / (3.35e12 * 0.75);
    let torchtitan = step("torchtitan");
    assert!(
        (torchtitan / by_hand - 1.0).abs() < 1e-9,
        "{torchtitan} vs {by_hand}"
    );
    assert!((by_hand - 0.5795).abs() < 5e-4);
    assert_eq!(step("megatron"), 0.0);
}

#[test]
fn hugging_face_stack_rows_within_ten_percent_median() {
    use planner::accuracy::calibration::{hf_cases, median_abs_error, predict_with};
    use planner::model::throughput::efficiency;
    let preds: Vec<_> = hf_cases()
        .iter()
        .map(|c| predict_with(c, &efficiency(c.gpu.generation)))
        .collect();
    assert_eq!(preds.len(), 9, "HF001-HF009");
    for p in &preds {
        println!(
            "{} measured {:.0} predicted {:.0} {:+.1}%",
            p.id, p.measured, p.predicted, p.error_percent
        );
        // HF006, Mixtral's LoRA on the attention alone, 35% too fast since
        // #55 timed its frozen experts without their weight gradients: the
        // fms runs of LoRA and QLoRA measure the same throughput to 0.6%
        // (HF004/HF005 in pure BF16 and on an NF4 base; HF006/HF007), which
        // no GPU work explains; their `train_runtime` counts the whole run
        // (38.5% since the A100's GEMMs run at their measured efficiency).
        let bound = if p.id == "HF006" { 39.0 } else { 25.0 };
        assert!(
            p.error_percent.abs() < bound,
            "{}: {:+.1}%",
            p.id,
            p.error_percent
        );
    }
    // 8.9%: the A100's GEMMs at their measured 0.737 (#57; 0.717 fitted end
    // to end before, 7.2%); the rows sit at -11% to +39%: HF's kernels are
    // slower than the model has them.
    let median = median_abs_error(&preds);
    assert!(median <= 11.0, "median {median:.1}%");
}

/// Expert parallelism: each GPU holds `1/ep` of the routed experts, and
/// their gradients reduce over the expert-data-parallel group, `ep` times
/// smaller and `ep` times further apart (Megatron's
/// `expert_data_parallel_group`). Mixtral-8x7B (32 layers x 8 experts of
/// 3 x 4096 x 14336 parameters) on two 8-GPU nodes at EP 8, DDP with fp32
/// gradients, overlap off so all of it shows: the dense parameters
/// all-reduce over 16 ranks, the experts' eighth over 2 ranks 8 apart, one
/// per node, which crosses the network whole.
#[test]
fn expert_parameters_reduce_over_their_group() {
    use planner::model::fabric::Collective;
    let q = "model=mixtral-8x7b&impl=megatron&zero=0&instance=ml.p5.48xlarge&nodes=2&overlap=0";
    let plan = Plan::from_query(&format!("{q}&ep=8")).plan;
    let (r, errors) = planner::model::resolve::resolve(&plan);
    assert!(errors.is_empty(), "{errors:?}");
    let fabric = planner::model::fabric::Fabric::of(&r.gpu, &r.instance, plan.hardware.ultraserver);
    let eight = evaluate(&plan);
    let experts = 32.0 * 8.0 * 3.0 * 4096.0 * 14336.0;
    let dense = eight.parameters as f64 - experts;
    let want = fabric.seconds(Collective::AllReduce, 16, 1, dense * 4.0)
        + fabric.seconds(Collective::AllReduce, 2, 8, experts / 8.0 * 4.0);
    let got = eight.throughput.step.data_parallel;
    assert!((got / want - 1.0).abs() < 1e-9, "{got} vs {want}");
    assert!(fabric.crosses(2, 8) && !fabric.crosses(8, 1));
    // And the label says mixture-of-experts speed is rough.
    assert_ne!(eight.throughput_accuracy.level, "calibrated");
    assert!(eight
        .throughput_accuracy
        .note_english()
        .contains("mixture-of-experts"));
}

/// Blackwell's dense BF16 efficiency is fitted on GB200 runs only (the three
/// dgxc_*_gb200_bf16 rows), and a B200 runs its BF16 GEMMs at the speed
/// measured on it (`Gpu::bf16_gemm_measured`): a B200 or B300 BF16 plan says which,
/// and names the 31 real 8 x B200 Megatron-LM runs that check it, with
/// their GPU and error (#57); a GB200 BF16 plan and a B200 FP8 plan (fitted
/// on B200's own FP8 rows) do not. What the note says of the data holds:
/// every B200/B300 BF16 row in the fit is of one MoE model, so no dense one
/// fits it (#36).
#[test]
fn b200_bf16_plans_say_their_efficiency_comes_from_gb200() {
    let b200_bf16: Vec<_> = planner::accuracy::calibration::cases()
        .into_iter()
        .filter(|c| matches!(c.gpu.id, "B200" | "B300"))
        .filter(|c| !c.plan.numerics.precision.is_low_precision())
        .collect();
    assert!(
        b200_bf16.len() >= 3,
        "the mb2511/mb2602 GPT-OSS B200/B300 BF16 rows"
    );
    assert!(
        b200_bf16.iter().all(|c| c.arch.moe.is_some()),
        "a dense B200 BF16 row: fix the note"
    );
    let note = |q: &str| {
        evaluate(&Plan::from_query(q).plan)
            .throughput_accuracy
            .note_english()
    };
    let steps =
        planner::accuracy::b200_runs::step_stats(&planner::accuracy::b200_runs::b200_step_rows());
    let said = "B200's BF16 GEMMs run at their measured speed, other Blackwell GPUs' at the one fitted on GB200 runs";
    let named = format!("{} real Megatron-LM runs on B200", steps.rows);
    let error = format!("median error {:.1}%", steps.median);
    for q in [
        "precision=bf16",
        "precision=bf16&instance=ml.p6-b300.48xlarge",
    ] {
        let n = note(q);
        assert!(
            n.contains(said) && n.contains(&named) && n.contains(&error),
            "{q}: {n}"
        );
    }
    let gb200 = "precision=bf16&instance=ml.p6e-gb200.36xlarge&nodes=18&ultraserver=72";
    for q in ["precision=fp8", gb200] {
        assert!(!note(q).contains(said), "{q}");
    }
}

/// The page's MoE note states the leave-one-out range of the MoE rows: how
/// many, and their lowest and highest error, rounded to whole percent.
#[test]
fn moe_note_states_the_cross_validated_scatter() {
    use planner::text::{t, Text};
    let ids: Vec<String> = planner::accuracy::calibration::cases()
        .into_iter()
        .filter(|c| c.arch.moe.is_some())
        .map(|c| c.id)
        .collect();
    let errors: Vec<f64> = planner::accuracy::calibration::cross_validated()
        .into_iter()
        .filter(|p| ids.contains(&p.id))
        .map(|p| p.error_percent)
        .collect();
    let lo = errors.iter().copied().fold(f64::MAX, f64::min);
    let hi = errors.iter().copied().fold(f64::MIN, f64::max);
    let note = t(planner::model::plan::Lang::En, Text::MoeComputeRough);
    for claim in [
        format!("{} published", errors.len()),
        format!("between {:.0}% and +{:.0}%", lo, hi),
    ] {
        assert!(
            note.contains(&claim),
            "MoeComputeRough should say `{claim}`: {note}"
        );
    }
}

/// docs/accuracy.md states the MoE rows' cross-validated median per model
/// family and over all 36: each is what the harness computes, to the
/// tenth of a percent.
#[test]
fn moe_family_errors_in_the_docs_are_the_harness_figures() {
    let cv = planner::accuracy::calibration::cross_validated();
    let median = |ids: &dyn Fn(&str) -> bool| {
        let rows: Vec<_> = cv
            .iter()
            .filter(|p| p.id.starts_with("mb") && ids(&p.id))
            .cloned()
            .collect();
        (
            rows.len(),
            planner::accuracy::calibration::median_abs_error(&rows),
        )
    };
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/accuracy.md"
    ))
    .expect("docs/accuracy.md");
    let families: [(&str, &str); 4] = [
        ("GPT-OSS-120B", "_gptoss120b_"),
        ("Qwen3-30B-A3B", "_qwen3_30b_"),
        ("Qwen3-235B-A22B", "_qwen3_235b_"),
        ("DeepSeek-V3", "_dsv3_"),
    ];
    for (name, key) in families {
        let (n, m) = median(&|id: &str| id.contains(key));
        assert!(n >= 4, "{name}: {n} rows");
        let claim = format!("{name} {m:.1}%");
        assert!(
            doc.contains(&claim),
            "docs/accuracy.md should say `{claim}`"
        );
    }
    let (n, m) = median(&|id: &str| families.iter().any(|(_, k)| id.contains(k)));
    let claim = format!("all {n} rows {m:.1}%");
    assert!(
        doc.contains(&claim),
        "docs/accuracy.md should say `{claim}`"
    );
}

/// The labels read data/coverage.json as the fields build.rs writes of it
/// (`COVERAGE_FIELDS`, #59: no JSON reader on the page): what they read
/// serialises back to the very file.
#[test]
fn shipped_coverage_reads_back_to_its_file() {
    let c = planner::accuracy::coverage::shipped();
    assert!(c.throughput.rows > 0 && !c.groups.is_empty() && !c.memory_oracle.is_empty());
    let text = serde_json::to_string_pretty(c).unwrap();
    assert_eq!(
        text.trim(),
        planner::accuracy::coverage::COVERAGE_JSON.trim()
    );
}

/// `GROUPED_GEMM_HALF_TOKENS` is what SimuMax's B200 grouped-GEMM
/// microbenchmarks say (data/b200_grouped_gemm.csv, MooreThreads/SimuMax
/// @4dcaae51 `b200_bf16_ceperm.json`): each shape's forward, input- and
/// weight-gradient GEMMs time-weighted (3 / sum(1/e)), then
/// `e(m) = e_inf * m / (m + m0)` fitted by least squares in log over a grid.
/// By hand from the file: 1,024 tokens per expert run at 0.35-0.41 of the
/// peak, 9,832 at 0.44-0.46, 128 at 0.12-0.18.
#[test]
fn grouped_gemm_fall_is_the_measured_one() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/b200_grouped_gemm.csv"
    ))
    .expect("data/b200_grouped_gemm.csv");
    let mut shapes: std::collections::BTreeMap<String, (f64, Vec<f64>)> = Default::default();
    for line in text.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let key = format!("{},{},{},{},{}", f[0], f[1], f[2], f[3], f[5]);
        let m: f64 = f[1].parse().expect("m");
        let e: f64 = f[6].parse().expect("efficiency");
        shapes.entry(key).or_insert((m, vec![])).1.push(e);
    }
    let rows: usize = shapes.values().map(|(_, e)| e.len()).sum();
    assert_eq!(rows, 108, "SimuMax's 108 grouped-GEMM measurements");
    let points: Vec<(f64, f64)> = shapes
        .values()
        .map(|(m, e)| (*m, e.len() as f64 / e.iter().map(|x| 1.0 / x).sum::<f64>()))
        .collect();
    let loss = |e_inf: f64, m0: f64| {
        points
            .iter()
            .map(|(m, e)| ((e_inf * m / (m + m0)).ln() - e.ln()).powi(2))
            .sum::<f64>()
    };
    let mut best = (f64::INFINITY, 0.0, 0.0);
    for i in 0..=60 {
        let e_inf = 0.40 + 0.0025 * i as f64;
        for j in 0..=200 {
            let m0 = 5.0 * j as f64;
            let l = loss(e_inf, m0);
            if l < best.0 {
                best = (l, e_inf, m0);
            }
        }
    }
    let (_, e_inf, m0) = best;
    let shipped = planner::model::throughput::GROUPED_GEMM_HALF_TOKENS;
    assert!(
        (m0 - shipped).abs() <= 10.0,
        "the file fits m0 = {m0} tokens, the model ships {shipped}"
    );
    // Many tokens per expert run at dense speed: SimuMax's dense GEMMs
    // default to 0.488 of the peak (megatron_and_b200_facts.md §3).
    assert!((e_inf - 0.488).abs() < 0.03, "e_inf = {e_inf}");
}

/// Each MoE row's dispatcher and CUDA-graph scope come from its recipe
/// (`recipe_moe_dispatcher`, `recipe_cuda_graph_scope`): by hand from the
/// Megatron-Bridge presets, 17 rows run a fused dispatcher (HybridEP on the
/// 4 25.11 and 4 26.02 GB200/GB300 Qwen3 rows, 26.02's Qwen3-30B-A3B on
/// B300, the 2 25.11 GB200 DeepSeek-V3 rows and its 4 26.02 rows; DeepEP on
/// DeepSeek-V3's 25.09 H100 row and 26.02's Qwen3-30B-A3B on H100) and 17
/// capture the router in CUDA graphs (the 4 25.11 GB200/GB300 Qwen3 rows,
/// 25.11's Qwen3-30B-A3B on B200, GPT-OSS-120B on GB300, the 2 25.11 GB200
/// DeepSeek-V3 rows; in 26.02 the 4 Qwen3-30B-A3B Blackwell rows, the 2
/// GB200/GB300 Qwen3-235B-A22B rows, GPT-OSS-120B on GB300 and B300, and
/// DeepSeek-V3 on GB200); no dense row sets either.
#[test]
fn moe_rows_carry_their_recipes_dispatcher_and_graphs() {
    let cases = planner::accuracy::calibration::cases();
    let ids = |f: fn(&planner::accuracy::calibration::Case) -> bool| -> Vec<String> {
        cases
            .iter()
            .filter(|c| f(c))
            .map(|c| c.id.clone())
            .collect()
    };
    let flex = ids(|c| c.plan.moe.moe_flex);
    let graphs = ids(|c| c.plan.moe.moe_graphs);
    assert_eq!(flex.len(), 17, "{flex:?}");
    assert_eq!(graphs.len(), 17, "{graphs:?}");
    for id in [
        "mb2509_dsv3_h100_fp8",
        "mb2602_dsv3_b200_fp8",
        "mb2511_qwen3_235b_gb300_bf16",
    ] {
        assert!(flex.contains(&id.to_string()), "{id}");
    }
    for id in ["mb2511_gptoss120b_gb300_bf16", "mb2511_qwen3_30b_b200_fp8"] {
        assert!(graphs.contains(&id.to_string()), "{id}");
    }
    assert!(cases
        .iter()
        .filter(|c| c.arch.moe.is_none())
        .all(|c| !c.plan.moe.moe_flex && !c.plan.moe.moe_graphs));
}

/// Cross-validation by held-out group (#57, docs/accuracy.md "Held out by
/// group"): each grouping covers every row once, and holding out a row's
/// whole generation, stack or scale band is never more accurate than
/// leaving out only its model, for the group as a whole: otherwise the
/// held-out fit would be seeing its own rows.
#[test]
fn held_out_groups_cover_every_row_and_see_none_of_their_own() {
    use planner::accuracy::calibration::{
        cases, cross_validated, held_out, median_abs_error, HeldOut,
    };
    let n = cases().len();
    let loao = cross_validated();
    for by in [HeldOut::Generation, HeldOut::Stack, HeldOut::Scale] {
        let groups = held_out(by);
        let rows: usize = groups.iter().map(|g| g.predictions.len()).sum();
        assert_eq!(rows, n, "{by:?}");
        for g in &groups {
            let ids: Vec<&str> = g.predictions.iter().map(|p| p.id.as_str()).collect();
            let mine: Vec<_> = loao
                .iter()
                .filter(|p| ids.contains(&p.id.as_str()))
                .cloned()
                .collect();
            println!(
                "{by:?} {}: held out {:.1}%, one model out {:.1}%",
                g.name,
                g.median(),
                median_abs_error(&mine)
            );
            assert!(
                g.median() >= median_abs_error(&mine) - 0.5,
                "{by:?} {}: {:.1}% held out, {:.1}% one model out",
                g.name,
                g.median(),
                median_abs_error(&mine)
            );
        }
    }
}

/// A100's BF16 GEMM efficiency (`Gpu::bf16_gemm_measured`, hardware.json)
/// against SimuMax's 183 measured A100 GEMM shapes (data/a100_gemm.csv, an
/// A100 80 GB PCIe card), on the 8 published A100 runs' own GEMMs: each
/// layer's QKV, output projection, FC1 and FC2 and the LM head, forward
/// (TN), input gradient (NN) and weight gradient (NT into FP32), each at
/// the efficiency of the nearest measured shape of its layout (the least
/// sum of |ln| ratios of m, k and n; most were measured at 4,096 tokens),
/// for the stage's layers and the step's micro-batches. The planner's one
/// constant, 0.737 of the 312 TFLOP/s peak, is where the deviations' median
/// is zero: from 5.5% less GEMM time (Korthikanti et al.'s 22B at TP 8,
/// whose 768- and 3,072-wide slices run at 0.70-0.72) to 0.6% more. No
/// end-to-end row fits it (an end-to-end fit on these rows gave 0.717).
#[test]
fn a100_gemm_time_is_what_the_measured_shapes_give() {
    use planner::accuracy::calibration::cases;
    use planner::model::architecture::Mlp;
    use planner::model::throughput::{efficiency, throughput, Generation};
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/a100_gemm.csv"))
        .expect("data/a100_gemm.csv");
    let measured: Vec<([f64; 3], &str, f64)> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let shape = [0, 1, 2].map(|i| f[i].parse().expect("a dimension"));
            (shape, f[3], f[6].parse().expect("an efficiency"))
        })
        .collect();
    assert_eq!(measured.len(), 183, "SimuMax's 183 dense GEMM measurements");
    let nearest = |s: [f64; 3], layout: &str| {
        let distance = |m: &[f64; 3]| (0..3).map(|i| (s[i] / m[i]).ln().abs()).sum::<f64>();
        measured
            .iter()
            .filter(|(_, l, _)| *l == layout)
            .min_by(|a, b| distance(&a.0).total_cmp(&distance(&b.0)))
            .map(|(_, _, e)| *e)
            .expect("a measured shape of the layout")
    };
    let rows: Vec<_> = cases()
        .into_iter()
        .filter(|c| c.gpu.id.starts_with("A100"))
        .collect();
    assert_eq!(rows.len(), 8, "the published A100 rows");
    let mut deviations = Vec::new();
    for c in &rows {
        let (a, l, recipe) = (&c.arch, &c.layout, c.plan.recipe());
        let d = &recipe.data;
        let t = (d.seq * d.micro_batch / l.cp) as f64;
        let seconds =
            |s: [f64; 3], layout| 2.0 * s[0] * s[1] * s[2] / (312e12 * nearest(s, layout));
        // A Linear of `i` inputs and `o` outputs over `t` tokens, forward and backward.
        let linear = |i: f64, o: f64| {
            seconds([t, i, o], "TN") + seconds([t, o, i], "NN") + seconds([o, t, i], "NT")
        };
        let (h, tp, ffn) = (a.hidden as f64, l.tp as f64, a.ffn as f64);
        let fc1 = if a.mlp == Mlp::Swiglu { 2.0 * ffn } else { ffn };
        let layer = linear(h, (a.q_width() + 2 * a.kv_width()) as f64 / tp)
            + linear(a.q_width() as f64 / tp, h)
            + linear(h, fc1 / tp)
            + linear(ffn / tp, h);
        let head = linear(h, a.vocab as f64 / tp);
        let table = d.grad_accum as f64 * ((a.layers / l.pp) as f64 * layer + head);
        assert_eq!(
            c.gpu.bf16_gemm_measured,
            Some(0.737),
            "{}: measured",
            c.gpu.id
        );
        let eff = efficiency(Generation::Ampere).on(c.gpu);
        let counts = a.parameter_counts();
        let planned = throughput(a, &counts, &recipe, l, c.gpu, &c.fabric, &eff)
            .step
            .gemm;
        let deviation = (planned / table - 1.0) * 100.0;
        println!("{:<32} {deviation:+.1}%", c.id);
        assert!(
            (-6.0..1.0).contains(&deviation),
            "{}: {deviation:+.1}%",
            c.id
        );
        deviations.push(deviation);
    }
    deviations.sort_by(f64::total_cmp);
    let median = (deviations[3] + deviations[4]) / 2.0;
    assert!(median.abs() < 0.25, "median {median:+.2}%");
    // With no fitted GEMM constant the rows check the rest of the model:
    // from 3.1% slow to 8.0% fast, and held out as a generation, 2.5%
    // (docs/accuracy.md; 19.7% when the fit borrowed other generations').
    let predictions = planner::accuracy::calibration::predictions();
    for p in predictions
        .iter()
        .filter(|p| rows.iter().any(|c| c.id == p.id))
    {
        assert!(
            (-3.5..8.5).contains(&p.error_percent),
            "{}: {:+.1}%",
            p.id,
            p.error_percent
        );
    }
    use planner::accuracy::calibration::{held_out, HeldOut};
    let ampere = held_out(HeldOut::Generation)
        .into_iter()
        .find(|g| g.name == "Ampere")
        .expect("an Ampere fold");
    assert!(ampere.median() < 3.0, "held out: {:.1}%", ampere.median());
}
