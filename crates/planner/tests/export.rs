//! Launch-code decisions that need no Python (the SDK checks are in tests/sdk).

use planner::launch::export::{export, py_str, sdk_packages, Format};
use planner::{evaluate, Plan};

fn code(q: &str, f: Format) -> String {
    export(&Plan::from_query(q).plan, f).code
}

/// Blackwell needs CUDA >= 12.8, i.e. PyTorch >= 2.7.1 (../shared/data/README.md).
#[test]
fn blackwell_gets_a_cuda_12_8_image_and_no_smp() {
    let c = code(
        "instance=ml.p6-b200.48xlarge&shard=8&nodes=2",
        Format::Pytorch,
    );
    assert!(c.contains("framework_version=\"2.8.0\""), "{c}");
    assert!(!c.contains("smdistributed"));
    assert!(
        c.contains("SMP v2 has no image for this GPU"),
        "the fallback is said"
    );
    let h = code("instance=ml.p6-b200.48xlarge", Format::Huggingface);
    assert!(
        h.contains("pytorch_version=\"2.8.0\"") && h.contains("transformers_version=\"4.56.2\"")
    );
}

/// SMP v2's newest image is PyTorch 2.5.1 (SDK image_uri_config/pytorch-smp.json).
#[test]
fn hopper_with_hybrid_sharding_uses_smp_v2() {
    let c = code(
        "instance=ml.p5.48xlarge&shard=8&nodes=2&offload=1",
        Format::Pytorch,
    );
    assert!(c.contains("framework_version=\"2.5.1\"") && c.contains("py_version=\"py311\""));
    assert!(
        c.contains("\"hybrid_shard_degree\": 8")
            && c.contains("\"sm_activation_offloading\": True")
    );
    let m = code(
        "instance=ml.p5.48xlarge&shard=8&nodes=2",
        Format::ModelTrainer,
    );
    assert!(
        m.contains("framework=\"pytorch-smp\"") && m.contains("smp=SMP(hybrid_shard_degree=8)")
    );
}

#[test]
fn numbers_in_the_code_match_the_report() {
    let q = "model=llama-3.1-70b&instance=ml.p5en.48xlarge&nodes=4&mb=2&ga=4&spot=1&price=63.3";
    let r = evaluate(&Plan::from_query(q).plan);
    let c = code(q, Format::Pytorch);
    assert!(c.contains(&format!("\"max_steps\": {},", r.time.steps)));
    assert!(c.contains("instance_count=4,") && c.contains("\"per_device_train_batch_size\": 2,"));
    assert!(c.contains("\"gradient_accumulation_steps\": 4,"));
    let max_run =
        ((r.time.total_hours * 3600.0 * 1.25 + 3600.0).ceil() as u64).clamp(3600, 28 * 24 * 3600);
    assert!(c.contains(&format!("max_run={max_run},")));
    assert!(
        c.contains("use_spot_instances=True,")
            && c.contains(&format!("max_wait={},", (max_run * 2).min(28 * 24 * 3600)))
    );
}

#[test]
fn fp8_training_args_carry_a_real_te_recipe() {
    let hopper = code(
        "instance=ml.p5.48xlarge&precision=fp8",
        Format::TrainingArgs,
    );
    assert!(hopper.contains("DelayedScaling(fp8_format=Format.HYBRID"));
    let blackwell = code("precision=mxfp8", Format::TrainingArgs);
    assert!(blackwell.contains("MXFP8BlockScaling(fp8_format=Format.E4M3)"));
    // The seed article's fp8_enable_intermediate does not exist (SPEC §1).
    assert!(
        !hopper.contains("fp8_enable_intermediate") && !blackwell.contains("keep_checkpoint_max")
    );
}

#[test]
fn string_literals_escape_everything() {
    assert_eq!(py_str("plain"), "\"plain\"");
    assert_eq!(py_str("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
    assert_eq!(py_str("é🦙"), "\"\\xe9\\U0001f999\"");
    let (v2, v3) = sdk_packages();
    assert!(v2.starts_with("sagemaker==2.") && v3.starts_with("sagemaker==3."));
}
