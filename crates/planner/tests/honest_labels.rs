//! #36: the nine plans an audit found labelled beyond their evidence, each
//! with the issue's own query (`P report '...'`), and what an honest answer
//! is for it.

use planner::{evaluate, search::search, Plan};

fn report(q: &str) -> planner::Report {
    let d = Plan::from_query(q);
    assert!(d.notices.is_empty(), "{q}: {:?}", d.notices);
    evaluate(&d.plan)
}

/// Case 8a: Megatron does not run QLoRA (its PEFT is LoRA/DoRA; the 4-bit
/// NF4 base is bitsandbytes' in Hugging Face PEFT). The plan is an error
/// with a fix, its figures carry no ±, and the search proposes nothing.
#[test]
fn megatron_qlora_is_an_error_with_a_fix() {
    let q = "model=llama-3.1-70b&stack=megatron&train=qlora&instance=ml.p5.48xlarge&nodes=2&tp=8";
    let r = report(q);
    let e = r
        .errors
        .iter()
        .find(|m| m.code == "qlora_needs_hf")
        .expect("an error for Megatron + QLoRA");
    assert_eq!(e.fix, Some(("stack", "hf".to_string())));
    assert_eq!(r.throughput_accuracy.level, "derived");
    assert_eq!(r.throughput_accuracy.expected_error, None);
    assert_eq!(r.memory.accuracy.expected_error, None);
    let s = search(&Plan::from_query(q).plan);
    assert_eq!(s.candidates, 0);
    assert!(s.fastest.is_none());
    // The fix gives a plan without the error.
    let fixed = report(&format!("{q}&stack=hf&tp=1&zero=0"));
    assert!(fixed.errors.iter().all(|m| m.code != "qlora_needs_hf"));
}

/// Case 8b: B300's usable memory is the device's own figure: nvidia-smi
/// reports 275,040 MiB (268.6 GiB) on the "NVIDIA B300 SXM6 AC" that
/// p6-b300 carries; AWS's "2.1 TB per 8 GPUs" is the same 8 x 268 GiB.
/// Less the 0.6 GiB H200's measured usable figure sits under its total:
/// 268.0 GiB, measured, not 288 GB x 0.985 estimated.
#[test]
fn b300_usable_memory_is_the_devices() {
    let r = report("model=llama-3.1-8b&instance=ml.p6-b300.48xlarge");
    let gib = r.memory.usable_bytes as f64 / (1u64 << 30) as f64;
    assert!((gib - 268.0).abs() < 0.05, "{gib}");
    assert!(!r.memory.usable_is_estimate);
    // GB200 has no measured figure: the report says it is an estimate.
    let g = report("model=llama-3.1-8b&instance=ml.p6e-gb200.36xlarge");
    assert!(g.memory.usable_is_estimate);
}

/// Case 6: Megatron-Bridge v0.3.0 has the 405B GB200 FP8 layout
/// (`LLAMA31_405B_PRETRAIN_CONFIG_GB200_FP8_CS_V2`: 256 GPUs, TP 4, PP 16,
/// VP 4, no recomputation, no offload), which NVIDIA published running at
/// 813 tok/s/GPU. The planner now finds it inside the GPU: B200's FP8 GEMMs
/// take any layout, so TransformerEngine keeps no transposed FP8 weight,
/// and the first rank's lighter chunk (the embedding's slot) holds the
/// most micro-batches.
#[test]
fn llama_405b_gb200_fp8_recipe_fits_the_gpu() {
    let q = "model=custom&layers=126&hidden=16384&heads=128&kv_heads=8&head_dim=128&ffn=53248&vocab=128256&tied=0&mlp=swiglu&seq=8192&mb=1&ga=384&precision=fp8&ckpt=none&grad_bf16=1&fp8_params=1&loss=fused&stack=megatron&zero=1&tp=4&pp=16&vp=4&sp=1&instance=ml.p6e-gb200.36xlarge&nodes=64&tp_overlap=1&ultraserver=72";
    let r = report(q);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(
        r.memory.peak_bytes_per_gpu <= r.memory.usable_bytes,
        "{} > {}",
        r.memory.peak_bytes_per_gpu,
        r.memory.usable_bytes
    );
    assert_eq!(r.verdict, "tight");
}

/// Case 1: offloading all 80 layers of the 70B GB200 plan keeps about
/// 1.07 TiB of activations in a 4-GPU node's host (960 GiB of RAM, of which
/// an assumed 80% can be pinned): an error with a fix (56 layers), "does not
/// fit", and no ± on its figures. With the fix it fits.
#[test]
fn offload_beyond_the_hosts_memory_is_an_error_with_a_fix() {
    let q = "model=llama-3.1-70b&impl=megatron&precision=fp8&instance=ml.p6e-gb200.36xlarge&nodes=16&ultraserver=72&zero=3&seq=8192&mb=2&ga=2&fp8_params=1&grad_bf16=1&loss=fused&offload=1&offload_layers=80";
    let r = report(q);
    let e = r
        .errors
        .iter()
        .find(|m| m.code == "offload_exceeds_host")
        .expect("the host cannot hold 79 offloaded layers");
    let (key, value) = e.fix.clone().expect("a fix");
    assert_eq!(key, "offload_layers");
    assert!(!r.fits);
    assert_eq!(r.verdict, "does_not_fit");
    assert_eq!(r.throughput_accuracy.expected_error, None);
    assert_eq!(r.memory.accuracy.expected_error, None);
    // 79 layers (Megatron never offloads the last) need 1,067.7 GiB: a
    // layer 13.5 GiB per node, so 768 GiB holds 56.
    assert_eq!(value, "56");
    let fixed = report(&format!("{q}&offload_layers={value}"));
    assert!(fixed.errors.is_empty(), "{:?}", fixed.errors);
    assert!(fixed.fits);
    let one_more = report(&format!("{q}&offload_layers=57"));
    assert!(one_more
        .errors
        .iter()
        .any(|m| m.code == "offload_exceeds_host"));
}

/// Case 1: a layer's offloaded activations cross the host link beside the
/// next layer's compute only, so over PCIe (about 56 GB/s) offloading costs
/// time on every plan of a grid, where the old whole-step window hid most of
/// it; over GB200's NVLink-C2C (about 390 GB/s) a 70B layer's copy fits
/// behind its neighbour's compute.
#[test]
fn offload_costs_time_where_the_link_is_slower_than_a_layer() {
    let mut costly = 0;
    let mut pairs = 0;
    for model in ["llama-3.1-8b", "llama-3.1-70b", "qwen2.5-32b"] {
        for seq in [4096, 16384] {
            for mb in [1, 4] {
                let q = format!("model={model}&instance=ml.p5.48xlarge&nodes=4&zero=3&seq={seq}&mb={mb}&ckpt=none");
                let off = report(&q);
                let on = report(&format!("{q}&offload=1"));
                pairs += 1;
                assert!(on.throughput.step_seconds >= off.throughput.step_seconds);
                if on.throughput.step.offload > 0.0 {
                    costly += 1;
                }
            }
        }
    }
    assert_eq!(costly, pairs, "every PCIe offload pays");
    let q = "model=llama-3.1-70b&impl=megatron&precision=fp8&instance=ml.p6e-gb200.36xlarge&nodes=16&ultraserver=72&zero=3&seq=8192&mb=2&ga=2&fp8_params=1&grad_bf16=1&loss=fused&offload=1&offload_layers=56";
    assert_eq!(report(q).throughput.step.offload, 0.0);
}

/// Case 5: every MoE row of Megatron-Bridge's 26.02 table is in the fit
/// (../shared/data/moe_models_2026.md: "any MoE row of releases up to 26.02
/// are the ones to fit"), and the label of the run the audit quoted
/// (Qwen3-235B-A22B on 256 B200, 3,805 tok/s/GPU published) quotes a ± that
/// covers the planner's own miss on it.
#[test]
fn the_2602_moe_rows_are_fitted_and_their_groups_quote_their_scatter() {
    let ids: Vec<String> = planner::calibration::cases()
        .into_iter()
        .map(|c| c.id)
        .filter(|id| id.starts_with("mb2602_"))
        .collect();
    assert_eq!(ids.len(), 19, "the 26.02 table's MoE rows: {ids:?}");
    let case = planner::calibration::cases()
        .into_iter()
        .find(|c| c.id == "mb2602_qwen3_235b_b200_fp8")
        .expect("the row");
    assert_eq!(case.measured_tokens_per_s_per_gpu, 3805.0);
    let r = report(&case.link());
    let predicted = r.throughput.tokens_per_second_per_gpu;
    let miss = (predicted / 3805.0 - 1.0).abs();
    let quoted = r
        .throughput_accuracy
        .expected_error
        .unwrap_or(f64::INFINITY);
    assert!(
        quoted >= miss,
        "{predicted:.0} tok/s is {:.1}% off; the label quotes ±{:.1}%",
        miss * 100.0,
        quoted * 100.0
    );
}
