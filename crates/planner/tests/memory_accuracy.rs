//! The `hf` profile against real PyTorch training steps.
//!
//! Source: ../shared/data/memory_examples.csv (copied to data/):
//! Transformers 5.24 `LlamaForCausalLM` on torch 2.15, peak of
//! `torch.cuda.max_memory_allocated()` at the second step, counted by exact
//! allocation accounting under FakeTensorMode. Compared with the report's
//! `memory.allocated_peak_bytes`. In-sample: the profile's coefficients were
//! read off these rows, so the claim is that they stay exact, not that they
//! predict new models.

use planner::accuracy::memory_checks::{single_rank_memory_rows, MemoryRow};
use planner::accuracy::summary::compute;

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

/// Real-GPU memory (#25 item 2), from three sources: eight fine-tuning runs
/// of fms-acceleration's benchmarks on A100 80GB (hf_stack_throughput.csv
/// HF001-HF008, torch's peak allocated on rank 0), torchtune's Llama-3.2-3B
/// full fine-tune (HF021, its peak active memory) and ten of Answer.AI's
/// FSDP+QLoRA runs of Llama-2-7B on two RTX 3090s (HF064-HF073, peak
/// reserved) against the planner: median 5.5%, from -20.0% (HF001:
/// Mistral-7B, pure BF16, full fine-tuning on one GPU) to +19.8% (HF067:
/// LoRA at 2,048 tokens, reserved). #55 changed the model on ten of them
/// (`memory_checks::IN_SAMPLE_GPU_MEMORY_ROWS`: QLoRA's residual stream,
/// FP32 under autocast, BF16 in pure BF16; the allocator's reserve): on the
/// other nine, median 5.5%, from -20.0% to +10.2%. Before #55: median 11.1%,
/// from -20.0% to +17.2%, the FSDP QLoRA rows under-predicted by up to 18%.
/// HF009 (Llama-2-70B QLoRA through fms-acceleration's own bitsandbytes
/// plugin, which skips PEFT's FP32 upcast under autocast) is a path the
/// planner does not plan: +31.7%, listed apart. What the README and the
/// docs say, and what an HF plan of that kind is labelled with.
#[test]
fn real_gpu_runs_check_hf_plans_of_their_kind() {
    let rows = planner::accuracy::memory_checks::gpu_memory_rows();
    assert_eq!(rows.len(), 19, "every listed row parses");
    let c = planner::accuracy::summary::compute();
    let g = &c.memory_gpu;
    assert!((g.median - 5.5).abs() < 0.05, "median {:.2}", g.median);
    assert!(
        (g.under + 20.0).abs() < 0.05 && (g.over - 19.8).abs() < 0.05,
        "{} {}",
        g.under,
        g.over
    );
    let o = planner::accuracy::memory_checks::out_of_sample_gpu_memory();
    assert_eq!(o.rows, 9);
    assert!(
        (o.median - 5.5).abs() < 0.05 && (o.over - 10.2).abs() < 0.05,
        "out of sample {:.2} {:.2}",
        o.median,
        o.over
    );
    let off = planner::accuracy::memory_checks::off_path_gpu_memory_rows();
    assert_eq!(off.len(), 1);
    assert!((off[0].0.error_percent - 31.7).abs() < 0.05);
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    assert!(readme.contains(
        "(median error 5.5%, from -20.0% to +19.8%; on the 9 the model was never changed on 5.5%, from -20.0% to +10.2%"
    ));
    let label = |q: &str| {
        planner::evaluate(&planner::Plan::from_query(q).plan)
            .figures
            .memory
            .accuracy
    };
    let a100 =
        "instance=custom&gpu_mem=80&gpu_bf16=312&gpu_fp8=0&gpu_bw=2.039&gpu_count=2&seq=4096&ckpt=full";
    let inside = label(&format!(
        "{a100}&model=mistral-7b-v0.1&precision=bf16-pure&mb=2&zero=3"
    ));
    assert_eq!(inside.level, "measured", "{}", inside.note_english());
    assert!((inside.expected_error.unwrap() - 0.200).abs() < 0.001);
    // Eight GPUs: outside what the runs ran; the oracle's extrapolation speaks.
    let outside = label(
        "model=mistral-7b-v0.1&precision=bf16-pure&mb=2&zero=3&seq=4096&instance=ml.p4de.24xlarge",
    );
    assert_ne!(outside.level, "measured");
}
