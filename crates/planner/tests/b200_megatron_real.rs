//! The Megatron stack against 31 real Megatron-LM BF16 runs on one 8 x B200
//! node (#57; data/b200_megatron_real.csv, from SimuMax's B200 release:
//! Megatron-LM 23e00ed0, TE 2.11, NGC PyTorch 26.01): Llama 3 70B cut to 12
//! layers and 405B cut to 4, at TP 1-8, PP 1-2, CP 4-8 and 4K-128K tokens,
//! each planned as its launcher ran it. No parameter is fitted on them.

use planner::accuracy::b200_runs::{
    b200_memory_rows, b200_runs, b200_step_rows, B200Run, B200_MEGATRON_REAL_CSV,
};
use planner::model::memory::{last_stage_breakdown, Term};
use planner::model::throughput::Efficiency;
use planner::{evaluate, Plan};

const GIB: f64 = (1u64 << 30) as f64;

/// `torch.cuda.max_memory_allocated()` of every run within ±3% (the issue's
/// bound), none of them planned short by more than 2%.
#[test]
fn every_run_memory_within_three_percent() {
    let rows = b200_memory_rows();
    assert_eq!(rows.len(), 31, "every run of the file is planned");
    for r in &rows {
        println!(
            "{:<52} measured {:>7.2} GiB  predicted {:>7.2} GiB  {:>+5.1}%",
            r.label, r.measured, r.predicted, r.error_percent
        );
        assert!(
            (-2.0..=3.0).contains(&r.error_percent),
            "{}: {:+.1}%",
            r.label,
            r.error_percent
        );
    }
}

/// TransformerEngine's cached placeholder weight gradients, by hand for
/// 405B at TP 1: one per distinct Linear shape, in BF16, kept for the run.
/// Fused QKV 16,384 x (128 + 2 x 16) x 128, proj 16,384², FC1 16,384 x 2 x
/// 53,248, FC2 53,248 x 16,384: 3,221,225,472 elements, 6.0 GiB. Beside them
/// the last stage's fp32 main gradients: 4 B x (2 layers of 3,221,258,240,
/// the 128,256 x 16,384 head and the final norm).
#[test]
fn the_405b_last_stage_holds_six_gib_of_wgrad_placeholders() {
    let q = "layers=4&hidden=16384&heads=128&kv_heads=16&ffn=53248&vocab=128256&mlp=swiglu&tied=0&stack=megatron&precision=bf16&instance=ml.p6-b200.48xlarge&tp=1&sp=0&cp=1&pp=2&zero=1&mb=1&ga=4&seq=4096&ckpt=none&attn=flash&loss=plain&overlap=0";
    let (job, errors) = planner::model::resolve::resolve(&Plan::from_query(q).plan);
    assert!(errors.is_empty());
    let m = last_stage_breakdown(&job.arch, &job.counts, &job.recipe, &job.layout);
    let gradients = m
        .terms
        .iter()
        .find(|(t, _)| *t == Term::Gradients)
        .map(|(_, b)| *b)
        .expect("a gradients term");
    let layer = 2 * 16_384 * 16_384 + 2 * 16_384 * 2_048 + 3 * 16_384 * 53_248 + 2 * 16_384;
    let stage_params: u64 = 2 * layer + 128_256 * 16_384 + 16_384;
    let placeholders = gradients as f64 - 4.0 * stage_params as f64;
    assert!(
        (placeholders / GIB - 6.0).abs() < 0.01,
        "{:.3} GiB",
        placeholders / GIB
    );
}

/// Every run ran, so none is said not to fit.
#[test]
fn no_b200_run_is_said_not_to_fit() {
    let runs = planner::formats::table::read_csv(B200_MEGATRON_REAL_CSV);
    assert_eq!(runs.len(), 31);
    for r in runs {
        let report = evaluate(&Plan::from_query(r.get("query")).plan);
        assert!(report.fits, "{}", r.get("id"));
    }
}

/// The measured steps against the planner's (docs/accuracy.md's table),
/// B200's BF16 GEMMs at their measured efficiency (`Gpu::bf16_gemm_measured`, from
/// GEMM microbenchmarks, not from these steps): from 13.1% fast to 3.5%
/// slow, median |error| 7.0% (SimuMax v1.2 on the same runs: 5.5%; 9.3%
/// with Blackwell's GEMM efficiency fitted on GB200 runs, 10.9% before
/// Megatron's gradient-buffer passes were counted, `gradient_buffer_bytes`).
/// The per-operation times are measured ones (GEMMs and attention from
/// SimuMax's B200 tables, collectives from nccl-tests); what is left is
/// per-layer time the model does not see on this launcher, and the bound
/// says so.
#[test]
fn b200_step_times_within_their_measured_bound() {
    let rows = b200_step_rows();
    assert_eq!(rows.len(), 31);
    for r in &rows {
        println!(
            "{:<52} measured {:>8.1} ms  predicted {:>8.1} ms  {:>+5.1}%  (SimuMax {:>8.1} ms)",
            r.label, r.measured_ms, r.predicted_ms, r.error_percent, r.simumax_ms
        );
        assert!(
            (-14.0..4.0).contains(&r.error_percent),
            "{}: {:+.1}%",
            r.label,
            r.error_percent
        );
    }
    let mut e: Vec<f64> = rows.iter().map(|r| r.error_percent.abs()).collect();
    e.sort_by(f64::total_cmp);
    let median = e[e.len() / 2];
    assert!(median < 7.5, "median {median:.1}%");
}

/// Blackwell's `tp_hidden` (0: TransformerEngine's asynchronous backward
/// TP collectives hide nothing) is what the tensor-parallel runs of either
/// model choose alone, among 0, 1/4, 1/2, 3/4 and 1, by mean |ln error|.
#[test]
fn either_model_alone_chooses_exposed_tensor_parallel() {
    let runs = b200_runs();
    for model in ["llama3-70b", "llama3-405b"] {
        let error = |hidden: f64| -> f64 {
            let mine: Vec<f64> = runs
                .iter()
                .filter(|r| r.row.get("model") == model && r.job.layout.tp > 1)
                .map(|B200Run { job, row: r, .. }| {
                    let eff = Efficiency {
                        tp_hidden: hidden,
                        ..job.efficiency()
                    };
                    let predicted = job.throughput(&eff).step_seconds * 1e3;
                    (predicted / r.num("real_step_ms").expect("a step"))
                        .ln()
                        .abs()
                })
                .collect();
            assert_eq!(
                mine.len(),
                11,
                "{model}: TP 2, 4, 8 at three accumulations, CP rows"
            );
            mine.iter().sum::<f64>() / mine.len() as f64
        };
        let best = [0.0, 0.25, 0.5, 0.75, 1.0]
            .into_iter()
            .min_by(|a, b| error(*a).total_cmp(&error(*b)))
            .expect("five choices");
        assert_eq!(best, 0.0, "{model}");
    }
}

/// B200's BF16 GEMM efficiency (`Gpu::bf16_gemm_measured`) against SimuMax's 514
/// measured B200 GEMM shapes (data/b200_gemm.csv, per-operation
/// microbenchmarks), on the 31 runs' own GEMMs: each decoder layer's QKV,
/// output projection, FC1 and FC2 and the LM head, forward (TN), input
/// gradient (NN) and weight gradient (NT), at the measured efficiency of
/// their exact shape, for the stage's layers and the step's micro-batches.
/// Summed per run, the planner's one constant (0.486 of the 2,250 TFLOP/s
/// peak) is where the signed deviations' median is zero: from 3.6% less
/// GEMM time (405B, 128K tokens over CP 4 at TP 2) to 5.9% more (70B at
/// TP 8, whose 1,280- and 1,024-column QKV and projection GEMMs run at
/// 0.59-0.63), median |deviation| 0.7%. (Blackwell's fitted 0.502 gave 3.2%
/// less GEMM time than the measured shapes.)
#[test]
fn b200_gemm_time_is_what_the_measured_shapes_give() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/b200_gemm.csv"))
        .expect("data/b200_gemm.csv");
    let mut measured = std::collections::HashMap::new();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .collect();
    assert_eq!(lines.len(), 514, "SimuMax's 514 dense GEMM measurements");
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        // The runs accumulate weight gradients into FP32 `main_grad` (82
        // weight-gradient shapes were also measured into BF16).
        if f[3] == "NT" && f[5] != "fp32" {
            continue;
        }
        let shape: [u64; 3] = [0, 1, 2].map(|i| f[i].parse().expect("a dimension"));
        let e: f64 = f[6].parse().expect("an efficiency");
        assert!(measured.insert((shape, f[3].to_string()), e).is_none());
    }
    let seconds = |[m, k, n]: [u64; 3], layout: &str| {
        let e = measured
            .get(&([m, k, n], layout.to_string()))
            .unwrap_or_else(|| panic!("{m} x {k} x {n} {layout} was measured"));
        2.0 * (m * k * n) as f64 / (2250e12 * e)
    };
    // A Linear of `i` inputs and `o` outputs over `t` tokens, forward and backward.
    let linear = |t: u64, i: u64, o: u64| {
        seconds([t, i, o], "TN") + seconds([t, o, i], "NN") + seconds([o, t, i], "NT")
    };
    let mut deviations = Vec::new();
    for run in b200_runs() {
        let (a, l, d) = (&run.job.arch, &run.job.layout, &run.job.recipe.data);
        let t = d.seq * d.micro_batch / l.cp;
        let layer = linear(t, a.hidden, (a.q_width() + 2 * a.kv_width()) / l.tp)
            + linear(t, a.q_width() / l.tp, a.hidden)
            + linear(t, a.hidden, 2 * a.ffn / l.tp)
            + linear(t, a.ffn / l.tp, a.hidden);
        let head = linear(t, a.hidden, a.vocab / l.tp);
        let table = d.grad_accum as f64 * ((a.layers / l.pp) as f64 * layer + head);
        let planned = run.job.throughput(&run.job.efficiency()).step.gemm;
        let deviation = (planned / table - 1.0) * 100.0;
        println!(
            "{:<52} planner {:>8.1} ms  measured shapes {:>8.1} ms  {deviation:+.1}%",
            run.row.get("id"),
            planned * 1e3,
            table * 1e3
        );
        assert!(
            (-4.0..6.5).contains(&deviation),
            "{}: {deviation:+.1}%",
            run.row.get("id")
        );
        deviations.push(deviation);
    }
    deviations.sort_by(f64::total_cmp);
    let signed = deviations[deviations.len() / 2];
    assert!(signed.abs() < 0.5, "signed median {signed:+.1}%");
    let mut sizes: Vec<f64> = deviations.iter().map(|d| d.abs()).collect();
    sizes.sort_by(f64::total_cmp);
    let median = sizes[sizes.len() / 2];
    assert!(median < 1.0, "median {median:.1}%");
}
