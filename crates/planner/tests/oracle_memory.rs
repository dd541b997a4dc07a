//! The planner's memory against the oracle's table (tools/oracle, `./dev oracle`):
//! real Hugging Face models trained two steps by the bundle's train.py under
//! FakeTensorMode, one rank of FSDP2 over a fake process group, every storage
//! rounded as CUDA's caching allocator rounds it. Compared with the report's
//! `memory.allocated_peak_bytes`. How far the oracle itself is from CUDA is
//! the last test here.
//!
//! The groups and bounds are issue #12's: median error ≤ 2% and no row
//! under-predicted by more than 8% in every group, and no group
//! under-predicting by more than 3% at the median. Over-prediction may reach
//! 9.1%: Mistral-7B's op-level ZeRO-3 row (+7.99% when #12 set 8%) is +9.01%
//! since the oracle runs attention as CUDA does (docs/accuracy.md).

use planner::accuracy::memory_checks::{oracle_groups, oracle_memory_rows, OracleRow};

fn signed_median(rows: &[&OracleRow]) -> f64 {
    let mut e: Vec<f64> = rows.iter().map(|r| r.row.error_percent).collect();
    e.sort_by(f64::total_cmp);
    e[e.len() / 2]
}

#[test]
fn the_table_is_the_oracles_full_grid() {
    let rows = oracle_memory_rows();
    // tools/oracle/rows.py's grid: 461 plans over six families, 16 whole models
    // at the presets' real shapes (#39), 30 tensor-parallel plans (#37) and
    // 72 LoRA plans on q,v and on the attention projections (#38), and 53
    // DPO plans (#38: one GPU, ZeRO-2/3 and LoRA; Llama and Qwen2 widths;
    // two whole 7-8B models), and 18 GRPO updates (#38: one GPU, ZeRO-3 and
    // LoRA, completions of 256 and 1,024 tokens), and 48 LoRA plans with
    // BF16 adapters (#38's lora_dtype), and 31 plans of 8 micro-batches a step
    // (gradient accumulation: 30 one-at-a-time and the page's landing plan).
    assert_eq!(rows.len(), 742, "every oracle row parses and is predicted");
    assert_eq!(rows.iter().filter(|r| r.in_group("stage=dpo")).count(), 60);
    assert_eq!(rows.iter().filter(|r| r.in_group("stage=grpo")).count(), 21);
    for family in ["llama", "qwen2", "qwen3", "mistral", "gemma2"] {
        assert!(rows.iter().any(|r| r.family == family), "{family}");
    }
}

#[test]
fn planner_memory_is_within_the_oracles_bounds_in_every_group() {
    let rows = oracle_memory_rows();
    for r in &rows {
        println!(
            "{:<64} oracle {:>9.0} MiB planner {:>9.0} MiB {:>+6.2}% ({:?})",
            r.row.label,
            r.row.measured / (1 << 20) as f64,
            r.row.predicted / (1 << 20) as f64,
            r.row.error_percent,
            r.phase
        );
    }
    let mut failures = Vec::new();
    for (name, stats) in oracle_groups(&rows) {
        let members: Vec<&OracleRow> = rows.iter().filter(|r| r.in_group(&name)).collect();
        let bias = signed_median(&members);
        println!(
            "{name:<28} rows {:>3} median |e| {:>5.2}% worst {:>+6.2}% median e {:>+6.2}%",
            stats.rows, stats.median, stats.worst, bias
        );
        // Tensor parallelism (#37, 30 rows): the model keeps a moment for
        // DTensor's whole-vocabulary embedding gradient that the layers'
        // sharded gradients, not yet made there, overstate; it over-predicts
        // (median +3.6%, to +10.6% on the tied Llama-3.2-1B), under by 1.9% at most.
        // GRPO's update (#38, 18 rows, out of sample): TRL's loss runs after
        // FSDP2's root forward, which reshards the embedding and head the
        // model keeps gathered for train.py's in-forward loss: the loss
        // moment is over-stated under ZeRO-3 (to +28.7% at two rows of 1,024
        // completion tokens); Llama-3.2-1B's tied layer moment is 5.6% under.
        let (median, under, over) = if name == "sharding=tp" {
            (4.0, -3.0, 11.0)
        } else if name == "stage=grpo" {
            (2.0, -6.0, 29.0)
        } else {
            (2.0, -8.0, 9.1)
        };
        if stats.median > median || stats.under < under || stats.over > over || bias < -3.0 {
            failures.push(name);
        }
    }
    assert!(failures.is_empty(), "groups out of bounds: {failures:?}");
}

/// How far the oracle's CPU kernels are from CUDA: memory_examples.csv's
/// measured steps, counted again by `oracle.py --reproduce`
/// (data/oracle_reproduction.jsonl). What docs/accuracy.md says: every one
/// agrees within 0.15%, cuDNN's ("auto") steps without checkpointing
/// included, since the oracle runs causal 16-bit SDPA as CUDA's flash kernel
/// does and train.py builds no `b x s x s` mask (before: up to 8.6% higher).
#[test]
fn the_oracle_reproduces_the_cuda_measured_steps() {
    let text = include_str!("../data/oracle_reproduction.jsonl");
    let rows: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r.get("id").is_some())
        .collect();
    assert_eq!(
        rows.len(),
        108,
        "memory_examples.csv's steps without SDPA's math backend"
    );
    for r in &rows {
        let (oracle, cuda) = (
            r["peak_bytes"].as_f64().unwrap(),
            r["measured"].as_f64().unwrap(),
        );
        let error = 100.0 * (oracle / cuda - 1.0);
        assert!(error.abs() <= 0.15, "{}: {error:+.2}%", r["id"]);
    }
}

/// The oracle's held-out plans (rows.py `heldout`: families, sequence
/// lengths, micro-batches and world sizes the memory model was never changed
/// on, measured after it was; #25) give its out-of-sample error, which the
/// README and the labels quote: median 0.71%, worst -8.73% (Llama-3.2-3B,
/// one GPU, FP32, eager attention, fused loss, 3 x 1536 tokens). They were
/// measured again when train.py stopped building a `b x s x s` mask and the
/// oracle ran attention as CUDA does (the model was not changed): the three
/// rows under -8% before (-17.0%, -8.1%, -8.7%) were mostly that mask. The
/// bound is that figure: a model change that moves it must say so here and in
/// the README.
#[test]
fn heldout_rows_give_the_out_of_sample_error() {
    let rows = planner::accuracy::memory_checks::oracle_heldout_rows();
    // 45 seeded plans over three held-out families, and five whole models at
    // the presets' real shapes (#39), Gemma-3-27B among them.
    assert_eq!(rows.len(), 50, "every held-out row parses and is predicted");
    let c = planner::accuracy::summary::compute();
    let h = &c.memory_oracle_heldout;
    assert!(h.median <= 0.66, "median {:.2}%", h.median);
    assert!(
        h.under >= -8.74 && h.over <= 7.84,
        "{:+.2}% .. {:+.2}%",
        h.under,
        h.over
    );
    let under: Vec<&str> = rows
        .iter()
        .filter(|r| r.row.error_percent < -8.0)
        .map(|r| r.row.label.as_str())
        .collect();
    assert_eq!(
        under,
        ["heldout/llama-3.2-3b/single/h18"],
        "the under-predictions the README names"
    );
}

/// #39: the plans users open are counted at their own size. The landing plan
/// (Llama-3.1-8B, ZeRO-3 on 8 B200 at 8,192 tokens) and Llama-3.1-70B with
/// ZeRO-3 on 2 p5 nodes are inside the oracle's whole-model rows' envelope
/// (rows.py's `real_sizes`: the same plans, measured), so their memory is
/// "counted", with the ZeRO-3 group's error.
#[test]
fn the_plans_users_open_are_counted_at_their_size() {
    use planner::{evaluate, Plan};
    for q in [
        "",
        "model=llama-3.1-70b&zero=3&instance=ml.p5.48xlarge&nodes=2&seq=8192&ckpt=full",
    ] {
        let r = evaluate(&Plan::from_query(q).plan);
        let a = &r.memory.accuracy;
        assert_eq!(a.level, "counted", "{q}: {}", a.note_english());
        assert!(a.note_english().contains("ZeRO-3"), "{}", a.note_english());
    }
    // The oracle's own count of those two plans (ga 1: the peak does not
    // depend on it), against the planner's.
    let rows = planner::accuracy::memory_checks::oracle_real_size_rows();
    for id in [
        "llama-3.1-8b/zero3/32-layers,world=8,seq=8192",
        "llama-3.1-70b/zero3/80-layers,world=16,seq=8192,ckpt=full",
    ] {
        let r = rows.iter().find(|r| r.row.label == id).expect(id);
        assert!(
            r.row.error_percent.abs() < 2.0,
            "{id}: {:+.2}%",
            r.row.error_percent
        );
    }
}

/// DPO's oracle steps (#38): the memory model was not changed on them, so
/// their error is out of sample, as the README and the page's label say.
#[test]
fn dpo_steps_are_within_the_bounds_the_readme_quotes() {
    let rows = oracle_memory_rows();
    let dpo: Vec<_> = rows.iter().filter(|r| r.in_group("stage=dpo")).collect();
    let groups = oracle_groups(&rows);
    let stats = &groups
        .iter()
        .find(|(g, _)| g == "stage=dpo")
        .expect("a DPO group")
        .1;
    assert_eq!(stats.rows, dpo.len());
    assert!(
        stats.under > -2.0,
        "DPO under-predicted by {}%",
        stats.under
    );
    let claim = format!(
        "DPO plans (`stage=dpo`) are held to {} DPO oracle steps (median error {:.2}%, worst {:+.2}%; out of sample",
        stats.rows, stats.median, stats.worst
    );
    let readme = include_str!("../../../README.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(readme.contains(&claim), "README.md should say `{claim}`");
}

/// Gradient accumulation (docs/accuracy.md, "Gradient accumulation"): the
/// 43 steps of 8 micro-batches a step were counted after the model learned
/// that the earlier micro-batches' gradients outlive them. Each holds more
/// than its one-micro-batch twin (the oracle's own figures), and the model
/// predicts them as it predicts the twins: within 2.1% of the oracle for
/// data parallelism, DPO and GRPO, and the page's landing plan at its real
/// size (Llama-3.1-8B, ZeRO-3 on 8 ranks, 8K tokens) within 0.1%.
#[test]
fn accumulated_gradients_are_counted() {
    let rows = oracle_memory_rows();
    let by_label = |l: &str| rows.iter().find(|r| r.row.label == l);
    let accumulating: Vec<&OracleRow> = rows
        .iter()
        .filter(|r| r.row.label.ends_with("ga=8"))
        .collect();
    assert_eq!(accumulating.len(), 43);
    let mut twins = 0;
    for r in &accumulating {
        let once = r.row.label.trim_end_matches("ga=8").trim_end_matches(',');
        let once = if once.ends_with('/') {
            format!("{once}base")
        } else {
            once.to_string()
        };
        if let Some(t) = by_label(&once) {
            twins += 1;
            assert!(r.row.measured > t.row.measured, "{} vs {once}", r.row.label);
        }
        if !r.in_group("sharding=tp") {
            assert!(
                r.row.error_percent.abs() <= 2.1,
                "{}: {:+.2}%",
                r.row.label,
                r.row.error_percent
            );
        }
    }
    assert!(twins >= 30, "{twins} steps have a one-micro-batch twin");
    let landing = by_label("llama-3.1-8b/zero3/32-layers,world=8,seq=8192,ga=8").expect("landing");
    assert!(
        landing.row.error_percent.abs() < 0.1,
        "{:+.3}%",
        landing.row.error_percent
    );
}
