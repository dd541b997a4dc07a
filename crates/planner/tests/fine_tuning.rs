//! Fine-tuning as it runs (#55), each figure derived by hand from what a
//! LoRA or QLoRA step computes and holds, or from a real run that ran (or
//! ran out of memory). docs/fine_tuning.md says the same in prose.

mod common;

use common::{report, term};
use planner::estimate::report::Verdict;
use planner::model::memory::Term;

/// Llama-3.1-8B's shape (its config.json): 32 layers, hidden 4,096, 32
/// query and 8 KV heads of 128, MLP 14,336, vocabulary 128,256.
const LAYERS: f64 = 32.0;
/// Its decoder layers' Linear weights: q and o 4,096 x 4,096, k and v
/// 4,096 x 1,024, gate, up and down 4,096 x 14,336, 32 times.
const LINEAR: f64 = 32.0 * (2.0 * 4096.0 * 4096.0 + 2.0 * 4096.0 * 1024.0 + 3.0 * 4096.0 * 14336.0);
/// Its untied LM head, 128,256 x 4,096 (and the embedding, the same size).
const HEAD: f64 = 128_256.0 * 4096.0;

const B200_8B: &str =
    "model=llama-3.1-8b&instance=ml.p6-b200.48xlarge&seq=4096&mb=4&ga=1&zero=3&ckpt=none&lora_targets=all-linear";

/// The model FLOPs of a token (Kaplan et al. 2020; Hu et al. 2021): a
/// trained weight 6 (forward 2, input gradient 2, weight gradient 2), a
/// frozen one 4 (no weight gradient), an adapter weight 6, attention
/// `3 x 4 x layers x s/2 x 4,096` (forward and twice backward, causal).
/// Rank-16 adapters on all seven Linears: `16 x (in + out)` each, 1,310,720
/// a layer.
#[test]
fn lora_flops_per_token_are_hand_counted() {
    assert_eq!(LINEAR, 6_979_321_856.0);
    let attention = 3.0 * 4.0 * LAYERS * 2048.0 * 4096.0;
    let adapters = LAYERS * 16.0 * (8192.0 + 5120.0 + 5120.0 + 8192.0 + 3.0 * 18_432.0);
    assert_eq!(adapters, 41_943_040.0);
    let full = 6.0 * (LINEAR + HEAD) + attention;
    let lora = 4.0 * (LINEAR + HEAD) + 6.0 * adapters + attention;
    let flops = |q: &str| report(q).figures.throughput.model_flops_per_token;
    assert!((flops(&format!("{B200_8B}&train=full")) / full - 1.0).abs() < 1e-9);
    assert!((flops(&format!("{B200_8B}&train=lora")) / lora - 1.0).abs() < 1e-9);
    // 33.49 GFLOP against 48.25: 31% less compute a token.
    assert!((lora / full - 0.6941).abs() < 1e-4, "{}", lora / full);
}

/// A frozen weight runs its forward and input-gradient GEMMs, not its
/// weight gradient: the base's GEMM time (the LM head's included, frozen
/// too) is two thirds of a full step's on every stack; the adapters are
/// timed apart (`step.adapters`).
#[test]
fn frozen_weights_pay_no_weight_gradient() {
    for stack in ["hf", "torchtitan", "megatron"] {
        let step = |train: &str| {
            report(&format!("{B200_8B}&stack={stack}&train={train}"))
                .figures
                .throughput
                .step
        };
        let (full, lora) = (step("full"), step("lora"));
        let ratio = lora.gemm / full.gemm;
        assert!((ratio - 2.0 / 3.0).abs() < 0.005, "{stack}: {ratio}");
        assert_eq!(full.adapters, 0.0);
        assert!(
            lora.adapters > 0.0 && lora.optimizer < full.optimizer,
            "{stack}"
        );
    }
}

/// #55's plan (Llama-3.1-8B, 8 x B200, 8,192 tokens, ZeRO-3, rank 16 on
/// every Linear), LoRA against full training, stack by stack. The frozen
/// base saves a third of the GEMMs (`frozen_weights_pay_no_weight_gradient`);
/// what each stack spends on the adapters decides how much of it is left:
/// - torchtitan compiles the adapters' scaling and sums into the GEMMs'
///   epilogues: the step is at least 15% shorter;
/// - Megatron-Bridge runs them eagerly (`LoRALinear`: `linear_out(linear_in(x))
///   * scale`, then the sum): at least 10% shorter;
/// - PEFT adds its FP32 adapters' casts to the eager sums and takes back
///   nearly all of it: within 5% of the full step. Adapters in BF16
///   (`lora_dtype=bf16`) make it at least 5% shorter. (The HF Trainer's
///   published runs gain less still: fms-acceleration's Mistral-7B LoRA on
///   q, k, v and o ran 5.7% shorter steps than full training, HF004 and
///   HF002, where the planner gives about 14%: docs/fine_tuning.md.)
#[test]
fn the_8b_lora_step_against_the_full_one_per_stack() {
    let q =
        "model=llama-3.1-8b&instance=ml.p6-b200.48xlarge&seq=8192&mb=1&ga=8&zero=3&lora_rank=16";
    let step = |extra: &str| {
        report(&format!("{q}&{extra}"))
            .figures
            .throughput
            .step_seconds
    };
    let shorter = |stack: &str, lora: &str| {
        1.0 - step(&format!("stack={stack}&train=lora{lora}"))
            / step(&format!("stack={stack}&train=full"))
    };
    assert!(
        shorter("torchtitan", "") >= 0.15,
        "{}",
        shorter("torchtitan", "")
    );
    assert!(
        shorter("megatron", "") >= 0.10,
        "{}",
        shorter("megatron", "")
    );
    let hf = shorter("hf", "");
    assert!((0.0..0.05).contains(&hf), "{hf}");
    assert!(shorter("hf", "&lora_dtype=bf16") >= 0.05);
}

/// PEFT keeps the adapters in FP32 (`autocast_adapter_dtype=True`) and, under
/// autocast, casts each adapted Linear's BF16 input to FP32 and back
/// (`lora.Linear.forward`: read 2 + write 4, then read 4 + write 2 bytes a
/// element), in the forward and again in the backward: 24 bytes per element
/// of the seven inputs (4,096 six times, 14,336 once), 16,384 tokens a GPU
/// and 32 layers: 489.6 GB a step, which at 60-95% of B200's 8 TB/s takes
/// 64-102 ms. The page says so, with the fix.
#[test]
fn peft_fp32_adapters_pay_for_their_casts() {
    let inputs = 6.0 * 4096.0 + 14_336.0;
    let bytes = 24.0 * inputs * 16_384.0 * LAYERS;
    assert!((bytes / 489.6e9 - 1.0).abs() < 1e-3);
    let r = |dtype: &str| report(&format!("{B200_8B}&stack=hf&train=lora&lora_dtype={dtype}"));
    let (fp32, bf16) = (r("fp32"), r("bf16"));
    let casts = fp32.figures.throughput.step.adapters - bf16.figures.throughput.step.adapters;
    let bandwidth = bytes / casts / 8e12;
    assert!((0.6..0.95).contains(&bandwidth), "{bandwidth}");
    let warning = fp32
        .warnings
        .iter()
        .find(|w| w.code() == "peft_fp32_adapter_casts")
        .expect("the casts are named");
    assert_eq!(warning.fix, Some(("lora_dtype", "bf16".to_string())));
    assert!(bf16
        .warnings
        .iter()
        .all(|w| w.code() != "peft_fp32_adapter_casts"));
}

/// bitsandbytes' NF4 with double quantization (the bundle's
/// `bnb_4bit_use_double_quant=True`): half a byte a weight, one 8-bit scale
/// per block of 64 and one FP32 scale per 256 blocks: 0.515869 bytes. PEFT's
/// `prepare_model_for_kbit_training` turns the rest (embedding, LM head, 65
/// norms of 4,096) to FP32. On one L40S: 7,804,174,336 bytes of weights.
#[test]
fn qlora_weights_are_nf4_and_their_scales_and_fp32_for_the_rest() {
    let nf4 = 0.5 + (1.0 + 4.0 / 256.0) / 64.0;
    let weights = LINEAR * nf4 + (2.0 * HEAD + 65.0 * 4096.0) * 4.0;
    assert_eq!(weights, 7_804_174_336.0);
    let r =
        report("model=llama-3.1-8b&instance=ml.g6e.xlarge&train=qlora&zero=0&seq=2048&ckpt=full");
    assert!((term(&r, Term::Weights) as f64 / weights - 1.0).abs() < 1e-6);
    // In pure BF16 train.py skips the preparation: the rest stays BF16.
    let pure = report("model=llama-3.1-8b&instance=ml.g6e.xlarge&train=qlora&zero=0&seq=2048&ckpt=full&precision=bf16-pure");
    let bf16_rest = LINEAR * nf4 + (2.0 * HEAD + 65.0 * 4096.0) * 2.0;
    assert!((term(&pure, Term::Weights) as f64 / bf16_rest - 1.0).abs() < 1e-6);
}

/// A100 80GB (80 GiB, 85.9 GB) and RTX 3090 (24 GiB, 25.77 GB) as the custom
/// GPUs the real runs had.
const A100: &str = "instance=custom&gpu_mem=85.9&gpu_bf16=312&gpu_fp8=0&gpu_bw=2.039&gpu_nvlink=600&gpu_net=400&seq=4096&ga=1&lora_rank=16&ckpt=full&attn=flash&loss=plain&optimizer=adamw&stack=hf";
const RTX3090: &str = "model=llama-2-7b&instance=custom&gpu_mem=25.77&gpu_bf16=71&gpu_fp8=0&gpu_bw=0.936&gpu_count=2&precision=bf16-pure&lora_rank=64&lora_targets=q_proj,k_proj,v_proj,gate_proj,up_proj,down_proj&lora_dtype=bf16&ckpt=full&attn=flash&loss=plain&optimizer=adamw&stack=hf&ga=1";

/// The verdict against runs that ran and runs that did not. Every
/// fine-tuning run of `memory_checks` ran on its GPU: none may be refused
/// (before #55 a flat 10% headroom, 1.25 GiB of workspaces and 5%
/// fragmentation on top refused runs like these). Two ran out of memory
/// (data/hf_stack_throughput.csv's notes): fms-acceleration's Llama-2-70B
/// QLoRA at four sequences a GPU ("bs4/GPU OOM", beside HF008) may not be
/// called a fit, and Mixtral-8x7B's LoRA on one GPU ("1-GPU variant OOM'd",
/// beside HF006) does not fit.
#[test]
fn small_gpus_get_the_verdict_the_runs_had() {
    let rows = planner::accuracy::memory_checks::GPU_MEMORY_ROWS
        .iter()
        .map(|(id, q)| (id, format!("{A100}&{q}")));
    let reserved = planner::accuracy::memory_checks::RESERVED_GPU_MEMORY_ROWS
        .iter()
        .map(|(id, q)| (id, format!("{RTX3090}&{q}")));
    for (id, q) in rows.chain(reserved) {
        let r = report(&q);
        assert_ne!(r.figures.verdict, Verdict::DoesNotFit, "{id} ran: {q}");
    }
    let oom = format!("{A100}&model=llama-2-70b&precision=bf16&train=qlora&mb=4&zero=3&gpu_count=2&lora_targets=attention");
    assert_ne!(report(&oom).figures.verdict, Verdict::Fits);
    let one = format!("{A100}&model=mixtral-8x7b&precision=bf16-pure&train=lora&mb=2&zero=0&gpu_count=1&lora_targets=attention");
    assert_eq!(report(&one).figures.verdict, Verdict::DoesNotFit);
}

/// docs/fine_tuning.md states the figures these tests check, and the
/// allocator's measured reserves as the planner holds them.
#[test]
fn the_doc_states_what_these_tests_check() {
    use planner::model::memory::allowances::*;
    let doc = include_str!("../../../docs/fine_tuning.md");
    let pct = |x: f64| format!("{:.2}%", 100.0 * x);
    for figure in [
        "33.49".to_string(),
        "48.25".to_string(),
        "41,943,040".to_string(),
        "489.6 GB".to_string(),
        "0.515869".to_string(),
        "7,804,174,336".to_string(),
        "nineteen fine-tuning runs".to_string(),
        pct(MEGATRON_CACHING),
        pct(MEGATRON_LEAST_CACHING),
        pct(PYTORCH_CACHING),
        pct(PYTORCH_FSDP_CACHING),
        pct(PYTORCH_LEAST_CACHING),
    ] {
        assert!(doc.contains(&figure), "docs/fine_tuning.md lacks {figure}");
    }
    let runs = planner::accuracy::memory_checks::GPU_MEMORY_ROWS.len()
        + planner::accuracy::memory_checks::RESERVED_GPU_MEMORY_ROWS.len();
    assert_eq!(runs, 19);
}
