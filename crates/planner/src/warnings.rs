//! The seed articles' field guide as rules (SPEC §6). Each warning says why
//! and which setting fixes it; `fix` is a single `key=value` where one exists.

use crate::memory::{MemoryBreakdown, Term};
use crate::plan::{Attention, Checkpointing, Loss, Precision};
use crate::report::{Message, Report, Resolved};

fn warn(code: &'static str, key: &'static str, message: String) -> Message {
    Message {
        code,
        key: Some(key),
        message,
    }
}

/// All rules that apply to this plan.
pub fn check(r: &Resolved<'_>, report: &Report, mem: &MemoryBreakdown) -> Vec<Message> {
    let plan = r.plan;
    let arch = &r.arch;
    let mut out = Vec::new();
    let budget = report.memory.budget_bytes as f64;
    let peak = report.memory.peak_bytes_per_gpu as f64;
    if !report.fits {
        // Name the term that blows up.
        let (term, bytes) = mem
            .terms
            .iter()
            .copied()
            .max_by_key(|(_, b)| *b)
            .unwrap_or((Term::Weights, 0));
        let fix = if matches!(term, Term::Activations | Term::AttentionScores)
            && plan.checkpointing != Checkpointing::Full
        {
            "turn on full activation checkpointing (ckpt=full)"
        } else if term == Term::LogitsAndLoss && plan.loss == Loss::Plain {
            "use a fused cross-entropy (loss=fused)"
        } else if plan.micro_batch > 1
            && matches!(
                term,
                Term::Activations | Term::LogitsAndLoss | Term::AttentionScores
            )
        {
            "lower the micro-batch (mb)"
        } else {
            "shard more (zero=3, more GPUs or nodes) or use tensor/pipeline parallelism"
        };
        out.push(warn(
            "over_budget",
            "mb",
            format!(
                "needs {:.1} GiB per GPU but the budget is {:.1} GiB; the largest term is {} ({:.1} GiB): {fix}",
                peak / GIB,
                budget / GIB,
                term.key().replace('_', " "),
                bytes as f64 / GIB
            ),
        ));
    } else if peak < 0.7 * budget && report.max_micro_batch > plan.micro_batch {
        out.push(warn(
            "memory_underused",
            "mb",
            format!(
                "uses only {:.0}% of the memory budget: raise the micro-batch (up to {} fits) for better GPU utilisation",
                100.0 * peak / budget,
                report.max_micro_batch
            ),
        ));
    }
    if plan.precision.is_low_precision() && report.parameters < 7_000_000_000 {
        out.push(warn(
            "fp8_small_model",
            "precision",
            "FP8 gains little below ~7B parameters: the GEMMs are too small to be compute-bound, and the casts cost bandwidth".into(),
        ));
    }
    if plan.precision.is_low_precision() {
        out.push(warn(
            "fp8_keep_bf16",
            "precision",
            "keep the embedding, norms and LM head in BF16 (TransformerEngine does this by default): FP8 there risks loss divergence".into(),
        ));
    }
    if plan.checkpointing == Checkpointing::Selective && plan.attention == Attention::Flash {
        out.push(warn(
            "selective_noop_with_flash",
            "ckpt",
            "selective recomputation only drops the attention scores, which flash attention never stores: it saves nothing here".into(),
        ));
    }
    if plan.seq >= 32_768 && plan.checkpointing == Checkpointing::None && !report.fits {
        out.push(warn(
            "long_sequence_without_checkpointing",
            "ckpt",
            format!("at {} tokens the activations alone are {:.1} GiB per GPU: turn on activation checkpointing", plan.seq, mem.get(Term::Activations) as f64 / GIB),
        ));
    }
    if plan.attention == Attention::Eager && plan.seq >= 4096 {
        out.push(warn(
            "eager_attention_long_sequence",
            "attn",
            format!(
                "eager attention stores {:.1} GiB of s x s scores: use flash/SDPA attention",
                mem.get(Term::AttentionScores) as f64 / GIB
            ),
        ));
    }
    let misaligned: Vec<String> = [
        ("hidden", arch.hidden),
        ("ffn", arch.ffn),
        ("head_dim", arch.head_dim),
    ]
    .iter()
    .filter(|(_, v)| v % 64 != 0)
    .map(|(k, v)| format!("{k}={v}"))
    .collect();
    if !misaligned.is_empty() {
        out.push(warn(
            "dims_not_multiple_of_64",
            "hidden",
            format!(
                "{} not a multiple of 64: tensor-core GEMMs run below peak",
                misaligned.join(", ")
            ),
        ));
    }
    if arch.max_context > 0 && plan.seq > arch.max_context {
        out.push(warn(
            "sequence_beyond_context",
            "seq",
            format!("sequence {} is longer than the model's trained context ({}): quality needs long-context training (RoPE scaling)", plan.seq, arch.max_context),
        ));
    }
    if plan.micro_batch == 1 && report.parameters > 30_000_000_000 && report.throughput.mfu < 0.3 {
        out.push(warn(
            "micro_batch_one_low_utilisation",
            "mb",
            format!(
                "micro-batch 1 on a {:.0}B model runs at {:.0}% MFU: a larger micro-batch (or more accumulation) amortises communication and kernel overheads",
                report.parameters as f64 / 1e9,
                report.throughput.mfu * 100.0
            ),
        ));
    }
    let ck = &report.checkpoint;
    if ck.wall_share > 0.03 {
        let fix = if plan.async_save {
            "save less often (raise save_every)"
        } else {
            "save asynchronously (async_save=1) or less often"
        };
        out.push(warn(
            "checkpoint_overhead",
            if plan.async_save { "save_every" } else { "async_save" },
            format!(
                "saving checkpoints ({:.0} GB each, {:.0} s per save) takes {:.1}% of wall time: {fix}",
                ck.size_bytes as f64 / 1e9,
                ck.seconds_per_save,
                ck.wall_share * 100.0
            ),
        ));
    }
    if report.cost.total_usd.is_none() {
        out.push(warn(
            "price_unknown",
            "price",
            format!("no SageMaker price is known for {}: enter the hourly price you pay (price=) to see the cost", report.instance),
        ));
    } else if report.cost.price_source.contains("recalled")
        || report.cost.price_source.contains("UNCERTAIN")
    {
        out.push(warn(
            "price_uncertain",
            "price",
            format!("the catalogue price for {} is recalled, not verified: check the SageMaker pricing page and enter yours (price=)", report.instance),
        ));
    }
    if matches!(plan.precision, Precision::Fp32) {
        out.push(warn(
            "fp32_slow",
            "precision",
            "FP32 training runs far below tensor-core peak and doubles memory: use bf16".into(),
        ));
    }
    out
}

const GIB: f64 = (1u64 << 30) as f64;
