//! DPO (#38), derived by hand from what a DPO step holds and runs (TRL's
//! DPOTrainer: `concatenated_forward` puts the chosen and rejected rows of
//! each pair in one batch; the reference's log-probabilities come from a
//! forward without gradients of a frozen copy, or under LoRA of the base
//! with its adapters off).

mod common;

use common::{report, term};
use planner::estimate::evaluate::evaluate;
use planner::launch::export::hyperparameter_items;
use planner::model::memory::Term;
use planner::model::plan::Plan;

/// The report's error `code`, which it must have.
const P5: &str = "model=llama-3.1-8b&instance=ml.p5.48xlarge&zero=3&seq=2048&ckpt=full";

/// Llama-3.1-8B's 8,030,261,248 parameters in BF16 over FSDP2's 8 shards:
/// 8,030,261,248 x 2 / 8 = 2,007,565,312 bytes.
#[test]
fn the_reference_is_a_bf16_copy_sharded_as_the_weights() {
    let r = report(&format!("{P5}&stage=dpo&mb=1"));
    assert_eq!(r.figures.parameters, 8_030_261_248);
    assert_eq!(term(&r, Term::Reference), 2_007_565_312);
    // On one GPU without sharding: the whole copy.
    let one = report("model=llama-3.1-8b&instance=ml.p5.4xlarge&zero=0&seq=2048&stage=dpo");
    assert_eq!(term(&one, Term::Reference), 16_060_522_496);
    // FP32 plans keep it in FP32.
    let fp32 = report(&format!("{P5}&stage=dpo&precision=fp32"));
    assert_eq!(term(&fp32, Term::Reference), 4_015_130_624);
}

#[test]
fn lora_s_reference_is_the_base_without_its_adapters_no_copy() {
    let r = report(&format!("{P5}&stage=dpo&train=lora"));
    assert_eq!(term(&r, Term::Reference), 0);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
}

/// A pair is two rows in one batch: DPO at micro-batch 1 keeps the
/// activations and logits SFT keeps at micro-batch 2, and its step is that
/// step plus the reference's forward.
#[test]
fn a_pair_is_two_rows_and_a_reference_forward() {
    let dpo = report(&format!("{P5}&stage=dpo&mb=1"));
    let sft = report(&format!("{P5}&mb=2"));
    for t in [Term::Activations, Term::LogitsAndLoss] {
        assert_eq!(term(&dpo, t), term(&sft, t), "{t:?}");
    }
    let (d, s) = (&dpo.figures.throughput.step, &sft.figures.throughput.step);
    assert_eq!(s.reference, 0.0);
    assert!((d.total() - d.reference - s.total()).abs() < 1e-9 * s.total());
    // A forward is a third of a layer's GEMMs forward + backward; with full
    // recomputation the step runs 4 forwards' worth, the reference one more.
    let ratio = d.reference / (d.gemm + d.attention + d.elementwise);
    assert!(
        (0.28..0.38).contains(&ratio),
        "reference / forward+backward = {ratio}"
    );
    // Tokens count both rows; samples are pairs.
    assert_eq!(
        dpo.figures.throughput.tokens_per_step,
        sft.figures.throughput.tokens_per_step
    );
    let t = &dpo.figures.throughput;
    assert!(
        (t.samples_per_second * 2.0 * 2048.0 - t.tokens_per_second).abs()
            < 1e-6 * t.tokens_per_second
    );
    assert_eq!(
        dpo.figures.global_batch_tokens,
        2 * dpo.figures.global_batch_sequences * 2048
    );
}

#[test]
fn the_export_runs_dpo_and_sft_exports_stay_as_they_were() {
    let q = format!("{P5}&stage=dpo");
    let plan = Plan::from_query(&q).plan;
    let items = hyperparameter_items(&plan, &evaluate(&plan));
    assert!(
        items.contains(&("stage", "\"dpo\"".to_string())),
        "{items:?}"
    );
    let sft = Plan::from_query(P5).plan;
    assert!(!hyperparameter_items(&sft, &evaluate(&sft))
        .iter()
        .any(|(k, _)| *k == "stage"));
}

/// What no engine of the bundle runs is a note on the export with its
/// fix, and the plan is estimated all the same (#55): the Megatron-Bridge
/// launcher trains the next-token loss, and train.py's DPO is data parallel.
#[test]
fn dpo_where_no_engine_runs_it_is_estimated_with_a_note() {
    let megatron = report("model=llama-3.1-8b&stage=dpo&stack=megatron&tp=2");
    let e = common::note(&megatron, "megatron_launcher_refuses").expect("a note");
    assert_eq!(e.key, Some("stage"));
    assert!(megatron.errors.is_empty() && megatron.throughput.step.reference > 0.0);
    let tp = report("model=llama-3.1-8b&stage=dpo&tp=2&zero=3");
    let e = common::note(&tp, "hf_tp_dpo").expect("a note");
    assert_eq!(
        e.fix.as_ref().map(|f| (f.0, f.1.as_str())),
        Some(("tp", "1"))
    );
    assert!(tp.errors.is_empty() && tp.layout.tp == 2);
}

/// The reference forward is executed, not modelled (#55): DPO's hardware
/// FLOPs add one forward of the frozen copy to the model FLOPs of the
/// policy's forward and backward. A full DPO plan's forward is a third of
/// its training pass (2 of 6 per weight, 1 of 3 attention passes):
/// hardware = 4/3 x model, 64.33 GFLOP a token against 48.25 for
/// Llama-3.1-8B at 4,096 tokens; MFU counts the model FLOPs, HFU both.
/// Under LoRA the reference is the base without its adapters: 2 per base
/// weight and one attention forward on top of LoRA's training pass.
#[test]
fn the_reference_forward_counts_in_hardware_flops_only() {
    let q = "model=llama-3.1-8b&instance=ml.p6-b200.48xlarge&seq=4096&mb=1&ga=8&zero=3&stage=dpo";
    let t = report(q).figures.throughput;
    assert!((t.hardware_flops_per_token / t.model_flops_per_token - 4.0 / 3.0).abs() < 1e-9);
    assert!((t.model_flops_per_token / 48.249_176_064e9 - 1.0).abs() < 1e-9);
    assert!((t.hfu / t.mfu - 4.0 / 3.0).abs() < 1e-9);
    let lora = report(&format!("{q}&train=lora&lora_targets=all-linear"))
        .figures
        .throughput;
    // 2 x (6,979,321,856 + 525,336,576) + 4 x 32 x 2,048 x 4,096.
    let reference = 2.0 * 7_504_658_432.0 + 1_073_741_824.0;
    let extra = lora.hardware_flops_per_token - lora.model_flops_per_token;
    assert!((extra / reference - 1.0).abs() < 1e-9, "{extra}");
}
