//! GRPO (#38), derived by hand from what TRL 0.24.0's `GRPOTrainer` holds
//! and runs (docs/research/post_training/trl_facts.md §6-9): the update
//! takes the logits of the completion only (`logits_to_keep = C + 1`) and
//! divides them by the temperature into a new fp32 tensor; a colocated vLLM
//! engine keeps `gen_share` of every GPU; the reference exists only when
//! `beta > 0`; every step decodes `completion` tokens, each step reading the
//! engine's weights.

mod common;

use common::{error, report, term};
use planner::model::memory::Term;
use planner::model::plan::Plan;

/// The logits-and-loss buffers at the start of backward.
fn logits(q: &str) -> u64 {
    let d = Plan::from_query(q);
    let (r, _) = planner::model::resolve::resolve(&d.plan);
    planner::model::memory::breakdown(&r.arch, &r.counts, &d.plan.recipe(), &r.layout).logits_bytes
}

/// Llama-3.1-8B on one H100 (79.1 GiB usable, hardware.json), DDP.
const ONE_H100: &str = "model=llama-3.1-8b&instance=ml.p5.4xlarge&zero=0&ckpt=full&stage=grpo";

/// The loss's buffers: 4 micro-batch rows x (256 + 1) kept positions x
/// 128,256 vocabulary x 16 B (the plain HF loss's 12 B per fp32 logit, and
/// the 4 B temperature-divided copy) = 2,109,554,688 B, whatever the row's
/// length; SFT over the same rows keeps 4 x 2,048 x 128,256 x 12 B.
#[test]
fn only_the_completion_s_logits_are_kept() {
    let q = format!("{ONE_H100}&seq=2048&completion=256&mb=4&ga=2");
    assert!(report(&q).errors.is_empty(), "{:?}", report(&q).errors);
    assert_eq!(logits(&q), 4 * 257 * 128_256 * 16);
    let sft = "model=llama-3.1-8b&instance=ml.p5.4xlarge&zero=0&ckpt=full&seq=2048&mb=4&ga=2";
    assert_eq!(logits(sft), 4 * 2048 * 128_256 * 12);
}

/// vLLM's share: 0.3 x 79.1 GiB = 0.3 x 84,932,978,278 B, in the peak.
#[test]
fn the_vllm_share_is_held_beside_the_step() {
    let r = report(&format!("{ONE_H100}&seq=2048&completion=256&mb=4&ga=2"));
    let usable = (79.1 * (1u64 << 30) as f64) as u64;
    assert_eq!(term(&r, Term::Generation), (0.3 * usable as f64) as u64);
    let half = report(&format!(
        "{ONE_H100}&seq=2048&completion=256&mb=4&ga=2&gen_share=0.5"
    ));
    let grown = half.figures.memory.peak_bytes_per_gpu - r.figures.memory.peak_bytes_per_gpu;
    assert_eq!(
        grown,
        (0.5 * usable as f64) as u64 - (0.3 * usable as f64) as u64
    );
}

/// TRL loads no reference at beta = 0 (its default since 0.19); above it, a
/// whole BF16 copy, 8,030,261,248 x 2 B, beside DDP's replicas (under FSDP2
/// TRL 0.24 cannot wrap it: an error), none under LoRA.
#[test]
fn a_reference_only_with_a_kl_penalty() {
    let p5 =
        "model=llama-3.1-8b&instance=ml.p5.48xlarge&zero=0&ckpt=full&stage=grpo&seq=2048&mb=4&ga=2";
    assert_eq!(term(&report(p5), Term::Reference), 0);
    let kl = report(&format!("{p5}&beta=0.04"));
    assert_eq!(term(&kl, Term::Reference), 16_060_522_496);
    assert_eq!(
        term(
            &report(&format!("{p5}&beta=0.04&train=lora")),
            Term::Reference
        ),
        0
    );
    // Scoring is one forward without gradients (the old policy), two with the reference.
    let (a, b) = (
        report(p5).figures.throughput.step.reference,
        kl.figures.throughput.step.reference,
    );
    assert!((b / a - 2.0).abs() < 1e-9, "{a} {b}");
}

/// Decoding is bound by memory bandwidth: each of the 1,024 steps reads the
/// engine's 16,060,522,496 B of BF16 weights (and a little KV cache), so
/// one row takes at least 1,024 x 16.06 GB / 3.35 TB/s = 4.91 s, and with
/// the KV cache of its mean context (1,536 tokens x 131,072 B) and the
/// achievable share of the bandwidth not twice that.
#[test]
fn decoding_reads_the_weights_every_token() {
    let r = report(&format!(
        "{ONE_H100}&seq=2048&completion=1024&mb=1&ga=2&generations=2&gen_share=0.5"
    ));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let g = r
        .figures
        .rollout
        .as_ref()
        .expect("a GRPO plan has rollout figures");
    assert_eq!((g.vllm_tp, g.rows_per_engine, g.concurrent_rows), (1, 2, 2));
    let floor = 1024.0 * (16_060_522_496.0 + 2.0 * 1536.0 * 131_072.0) / 3.35e12;
    let t = r.figures.throughput.step.generation;
    assert!(t > floor && t < 1.5 * floor, "{t} against {floor}");
}

/// Qwen2.5-7B's 15.23 GB of BF16 weights are more than half of 0.3 x 79.1
/// GiB (12.74 GB): the engine spans two GPUs (TRL's
/// `vllm_tensor_parallel_size`), each generating for both ranks.
#[test]
fn the_engine_splits_until_the_kv_cache_has_room() {
    let r = report("model=qwen2.5-7b&stage=grpo&seq=1280&completion=1024&mb=4&ga=8&instance=ml.p5.48xlarge&zero=3&ckpt=full");
    let g = r.figures.rollout.as_ref().unwrap();
    assert_eq!((g.vllm_tp, g.rows_per_engine), (2, 64));
    // 8 GPUs x 4 x 8 rows = 256 rows, 32 prompts of 8; prompts/s are samples/s.
    assert_eq!(g.prompts_per_step, 32);
    let t = &r.figures.throughput;
    assert!((g.prompts_per_second - 32.0 / t.step_seconds).abs() < 1e-9);
    assert!((g.rollout_tokens_per_second - 32.0 * 8.0 * 1024.0 / t.step_seconds).abs() < 1e-6);
}

#[test]
fn rollouts_that_trl_would_refuse_are_errors_and_what_grpo_py_refuses_notes() {
    // 3 rows on one GPU do not make groups of 8: ga=8 does.
    let r = report(&format!("{ONE_H100}&seq=2048&mb=3&ga=1"));
    assert_eq!(
        error(&r, "grpo_groups_split").unwrap().fix,
        Some(("ga", "8".into()))
    );
    // The completion is the row's end: it must leave a prompt.
    let r = report(&format!("{ONE_H100}&seq=1024&completion=1024&mb=8&ga=1"));
    assert_eq!(
        error(&r, "grpo_completion_too_long").unwrap().fix,
        Some(("completion", "512".into()))
    );
    // Llama-3.1-70B's 141 GB of BF16 weights cannot fit any vLLM share of one 48 GB L40S.
    let r = report("model=llama-3.1-70b&stage=grpo&instance=ml.g6e.2xlarge&zero=0&mb=8&ga=1");
    assert_eq!(error(&r, "grpo_engine_too_small").unwrap().fix, None);
    // grpo.py runs DDP or FSDP2 in BF16 with TRL's loss; Megatron's launcher
    // no GRPO: notes on the export, the plan estimated (#55).
    for (q, code, fix) in [
        ("zero=2", "grpo_launcher_refuses", ("zero", "3")),
        (
            "precision=fp8",
            "grpo_launcher_refuses",
            ("precision", "bf16"),
        ),
        ("loss=fused", "grpo_launcher_refuses", ("loss", "plain")),
        ("train=qlora", "grpo_launcher_refuses", ("train", "lora")),
        (
            "stack=megatron",
            "megatron_launcher_refuses",
            ("stack", "hf"),
        ),
        ("zero=3&beta=0.04", "grpo_launcher_refuses", ("beta", "0")),
        ("async_save=1", "grpo_launcher_refuses", ("async_save", "0")),
    ] {
        let r = report(&format!(
            "model=llama-3.1-8b&instance=ml.p5.48xlarge&stage=grpo&mb=8&ga=1&{q}"
        ));
        let e = common::note(&r, code).unwrap_or_else(|| panic!("{q}: {:?}", r.export_notes));
        assert_eq!(e.fix, Some((fix.0, fix.1.into())), "{q}");
        assert!(r.errors.is_empty(), "{q}: {:?}", r.errors);
    }
    // Brought to an own script, the KL-regularised plan has no note left.
    let r = report(
        "model=llama-3.1-8b&instance=ml.p5.48xlarge&stage=grpo&mb=8&ga=1&zero=3&beta=0.04&entry=own.py",
    );
    assert!(
        r.errors.is_empty() && r.export_notes.is_empty(),
        "{:?}",
        r.export_notes
    );
}

/// The auto-plan offers only what grpo.py runs, and every plan it offers
/// is one the resolver accepts.
#[test]
fn the_search_offers_only_runnable_grpo_plans() {
    let d = Plan::from_query(
        "model=llama-3.1-8b&stage=grpo&seq=2048&completion=512&mb=4&ga=2&instance=ml.p5.48xlarge",
    );
    let result = planner::estimate::search::search(&d.plan);
    assert!(!result.pareto.is_empty());
    for c in &result.pareto {
        let r = report(&c.query);
        assert!(r.errors.is_empty(), "{}: {:?}", c.query, r.errors);
        assert!(c.zero == 0 || c.zero == 3, "{}", c.query);
        assert!(c.query.contains("loss=plain"), "{}", c.query);
    }
}

/// vLLM splits the attention heads evenly over its tensor-parallel GPUs:
/// Qwen2.5-7B's 28 heads take 1, 2 or 4, never 8. At a 0.05 share of an
/// H100 (4.25 GB) its 15.23 GB of weights would want 8; the engine stops at
/// 4 (3.81 GB a GPU), and the little KV cache left runs its 128 rows in waves.
#[test]
fn the_engine_splits_the_heads_evenly() {
    let q = "model=qwen2.5-7b&stage=grpo&seq=1280&completion=1024&mb=4&ga=8&instance=ml.p5.48xlarge&zero=3&gen_share=0.05";
    let r = report(q);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let g = r.figures.rollout.as_ref().unwrap();
    assert_eq!((g.vllm_tp, g.rows_per_engine), (4, 128));
    assert!(g.concurrent_rows >= 1 && g.concurrent_rows < 128, "{g:?}");
}

/// vLLM keeps MLA's compressed cache whole on every GPU of an engine, and
/// copies KV heads where there are fewer than GPUs: Llama-3.1-8B's 8 KV heads
/// of 128 over 2 GPUs are 32 x 2 x 4 x 128 x 2 B = 65,536 B a token each, and
/// over 16 GPUs still one head a GPU (16,384 B).
#[test]
fn the_kv_cache_splits_by_heads() {
    let arch = &planner::model::architecture::preset("llama-3.1-8b")
        .unwrap()
        .arch;
    assert_eq!(
        planner::model::rollout::kv_bytes_per_token(arch, 2),
        65_536.0
    );
    assert_eq!(
        planner::model::rollout::kv_bytes_per_token(arch, 16),
        16_384.0
    );
}

/// Qwen2.5-7B with vLLM as a server on 4 of a p5's 8 GPUs (TRL's
/// `vllm_mode="server"`): training runs on the other 4 with no vLLM share
/// in their memory; the server's 15.23 GB of weights fit half of 0.9 x 79.1
/// GiB (38.2 GB) on one GPU, so it runs 4 engines of one GPU, each taking
/// one training rank's 4 x 8 rows; 4 ranks x 32 rows make 16 prompts of 8;
/// GPU-hours count all 8 GPUs.
#[test]
fn a_vllm_server_takes_gpus_of_its_own() {
    let q = "model=qwen2.5-7b&stage=grpo&seq=1280&completion=1024&mb=4&ga=8&instance=ml.p5.48xlarge&zero=3&ckpt=full&gen_gpus=4";
    let r = report(q);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.figures.layout.gpus, 4);
    assert_eq!(term(&r, Term::Generation), 0);
    let g = r.figures.rollout.as_ref().unwrap();
    let shape = (g.server_gpus, g.vllm_tp, g.engines, g.rows_per_engine);
    assert_eq!(shape, (4, 1, 4, 32));
    assert_eq!(g.prompts_per_step, 16);
    let t = &r.figures.time;
    assert!((t.gpu_hours - 8.0 * t.total_hours).abs() <= 1e-9 * t.gpu_hours);
}

/// After each step rank 0 sends every tensor to the server
/// (`update_named_param`): Qwen2.5-7B's 7,615,616,512 fp32 master weights
/// over NVLink 4's 370 GB/s, and 28 x (4 projections + 3 biases + 2 norms +
/// 3 MLP matrices) + embedding, final norm and head = 339 requests at 1 ms.
#[test]
fn the_server_receives_every_tensor_after_a_step() {
    let q = "model=qwen2.5-7b&stage=grpo&seq=1280&completion=1024&mb=4&ga=8&instance=ml.p5.48xlarge&zero=3&gen_gpus=4";
    let d = Plan::from_query(q);
    let (r, _) = planner::model::resolve::resolve(&d.plan);
    let fabric = planner::model::fabric::Fabric::of(&r.gpu, &r.instance, 0);
    let e = planner::model::rollout::VllmEngine::of(
        &r.arch,
        &r.counts,
        &d.plan.recipe(),
        &r.gpu,
        (&fabric, &r.layout),
    )
    .unwrap();
    assert_eq!(planner::model::rollout::state_dict_tensors(&r.arch), 339);
    let bytes = 7_615_616_512.0 * 4.0;
    let s = planner::model::rollout::server_sync_seconds(&e, &r.arch, &fabric, bytes);
    let want = bytes / 370e9 + 0.339;
    assert!((s - want).abs() < 1e-9, "{s} against {want}");
}

/// A server runs beside training on one node: not on all its GPUs (fix:
/// half), not across nodes (fix: colocated); a server too small for one
/// row of Llama-3.1-70B (141 GB of weights on one GPU) is fixed by the
/// fewest GPUs that hold it: 2 (70.5 GB each of 0.9 x 79.1 GiB).
#[test]
fn a_server_that_cannot_run_is_an_error_with_its_fix() {
    let base = "model=qwen2.5-7b&stage=grpo&instance=ml.p5.48xlarge&mb=8&ga=1";
    let whole = report(&format!("{base}&gen_gpus=8"));
    let fix = error(&whole, "grpo_gen_gpus").unwrap().fix.clone();
    assert_eq!(fix, Some(("gen_gpus", "4".into())));
    let two = report(&format!("{base}&gen_gpus=2&nodes=2"));
    let fix = error(&two, "grpo_gen_gpus").unwrap().fix.clone();
    assert_eq!(fix, Some(("gen_gpus", "0".into())));
    let big = report("model=llama-3.1-70b&stage=grpo&train=lora&zero=0&instance=ml.p5.48xlarge&gen_gpus=1&mb=1&ga=8");
    let fix = error(&big, "grpo_server_too_small").unwrap().fix.clone();
    assert_eq!(fix, Some(("gen_gpus", "2".into())));
}

/// The auto-plan weighs a vLLM server against colocating it: where a 0.05
/// share of each GPU cannot hold Llama-3.1-70B's engine, only plans with a
/// server fit, and it offers them.
#[test]
fn the_search_offers_a_server_where_colocating_cannot_run() {
    let d = Plan::from_query(
        "model=llama-3.1-70b&stage=grpo&train=lora&seq=2048&completion=1024&mb=2&ga=4&instance=ml.p5.48xlarge&gen_share=0.05&lock=instance,nodes",
    );
    let result = planner::estimate::search::search(&d.plan);
    assert!(!result.pareto.is_empty());
    for c in &result.pareto {
        let r = report(&c.query);
        assert!(r.errors.is_empty(), "{}: {:?}", c.query, r.errors);
        let g = r.figures.rollout.as_ref().unwrap();
        assert!(g.server_gpus > 0, "{}", c.query);
    }
}

/// An asynchronous save is staged by the GPUs that hold the shards: the 4
/// training GPUs copy Qwen2.5-7B's 15,231,233,024 bytes of BF16 weights to
/// the host at 20 GB/s each (`ASYNC_STAGING_GBPS`): 0.19 s; the vLLM
/// server's 4 GPUs hold none. The report counted all 8 (0.095 s) where the
/// search and the instance comparison counted 4, so the three gave the same
/// plan different times (#34: one estimate from the job now).
#[test]
fn the_training_gpus_stage_an_asynchronous_save() {
    let q =
        "model=qwen2.5-7b&stage=grpo&seq=1280&completion=1024&mb=4&ga=8&instance=ml.p5.48xlarge\
             &zero=3&ckpt=full&gen_gpus=4&save=weights&async_save=1&save_every=10";
    let r = report(q);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let c = &r.figures.checkpoint;
    assert_eq!(c.size_bytes, 15_231_233_024);
    let staged = c.size_bytes as f64 / (4.0 * 20e9);
    assert!(
        (c.blocking_seconds_per_save - staged).abs() < 1e-12,
        "{c:?}"
    );
    let t = &r.figures.time;
    assert!((t.gpu_hours - 8.0 * t.total_hours).abs() <= 1e-9 * t.gpu_hours);
    let e = planner::estimate::evaluate::evaluate_with_charts(&Plan::from_query(q).plan, &[]);
    let own = e
        .instances
        .iter()
        .find(|o| o.instance == "ml.p5.48xlarge")
        .unwrap();
    assert!(
        (own.hours - t.total_hours).abs() <= 1e-12 * t.total_hours,
        "{} vs {}",
        own.hours,
        t.total_hours
    );
}
