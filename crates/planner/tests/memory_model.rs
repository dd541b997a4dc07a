//! Hand-derived checks of the memory terms for parallelism and profiles.

use planner::estimate::report::Verdict;
use planner::evaluate;
use planner::model::architecture::{preset, Architecture, Mlp};
use planner::model::layout::{Layout, Stages};
use planner::model::memory::{breakdown, Term};
use planner::model::plan::{
    Activations, Checkpointing, Data, Implementation, ModelChoice, Numerics, Parallelism, Plan,
    Precision, Stack,
};
use planner::model::resolve::resolve;

/// A layout of `gpus` for a model of `layers`, split evenly over `pp` stages.
fn layout(gpus: u64, tp: u64, pp: u64, dp: u64, layers: u64) -> Layout {
    Layout {
        stages: Stages::even(layers, pp),
        fp8_tn_only: true,
        gpus,
        tp,
        pp,
        cp: 1,
        ep: 1,
        dp,
        shard: dp,
    }
}

/// Korthikanti et al. 2022 (arXiv 2205.05198) eq. 1: a GPT layer keeps
/// `s*b*h*(34 + 5*a*s/h)` bytes. With flash attention the `5as/h` scores go,
/// and without dropout its two 1-byte masks (2h) go too: 32h per token, plus
/// flash attention's fp32 logsumexp (4a). The megatron profile must give exactly that.
#[test]
fn megatron_profile_matches_korthikanti_without_dropout() {
    let (h, a, layers, s, b) = (6144u64, 48u64, 4u64, 2048u64, 2u64);
    let arch = Architecture {
        max_context: 2048,
        ..Architecture::dense(layers, h, a, a, 4 * h, 51200, true, Mlp::Gelu)
    };
    let plan = Plan {
        parallelism: Parallelism {
            zero: 0,
            ..Parallelism::default()
        },
        data: Data {
            seq: s,
            micro_batch: b,
            ..Data::default()
        },
        numerics: Numerics {
            precision: Precision::Bf16,
            ..Numerics::default()
        },
        implementation: Implementation {
            stack: Stack::Megatron,
            ..Implementation::default()
        },
        ..Plan::default()
    };
    let m = breakdown(
        &arch,
        &arch.parameter_counts(),
        &plan.recipe(),
        &layout(1, 1, 1, 1, layers),
    );
    let per_layer = s * b * (32 * h + 4 * a);
    let final_norm = s * b * 4 * h;
    assert_eq!(m.saved_activation_bytes, layers * per_layer + final_norm);
}

/// Korthikanti et al. 2022 §5 (Table 2): selective recomputation drops the
/// attention core's `5as/h` term, leaving `34sbh/t` with TP + SP; here, as
/// above without dropout, `(32h + 4a)sb/t`. With unfused attention it saves
/// exactly the scores: Korthikanti's `5as^2b` bytes per layer less
/// dropout's mask and output (3as^2b), so the softmax's bf16 output,
/// `2as^2b` (Megatron-Core's `DotProductAttention`: the product with v saves
/// that same tensor).
#[test]
fn selective_recomputation_drops_the_attention_scores() {
    let (h, a, layers, s, b, t) = (6144u64, 48u64, 4u64, 2048u64, 2u64, 8u64);
    let arch = Architecture {
        max_context: 2048,
        ..Architecture::dense(layers, h, a, a, 4 * h, 51200, true, Mlp::Gelu)
    };
    let plan = |ckpt| Plan {
        implementation: Implementation {
            stack: Stack::Megatron,
            attention: planner::model::plan::Attention::Eager,
            ..Implementation::default()
        },
        numerics: Numerics {
            precision: Precision::Bf16,
            ..Numerics::default()
        },
        activations: Activations {
            checkpointing: ckpt,
            ..Activations::default()
        },
        data: Data {
            seq: s,
            micro_batch: b,
            ..Data::default()
        },
        parallelism: Parallelism {
            zero: 0,
            tp: t,
            sp: true,
            ..Parallelism::default()
        },
        ..Plan::default()
    };
    let m = |ckpt| {
        breakdown(
            &arch,
            &arch.parameter_counts(),
            &plan(ckpt).recipe(),
            &layout(t, t, 1, 1, layers),
        )
    };
    let (none, selective) = (m(Checkpointing::None), m(Checkpointing::Selective));
    let final_norm = s * b * 4 * h / t;
    assert_eq!(
        selective.saved_activation_bytes,
        layers * s * b * (32 * h + 4 * a) / t + final_norm
    );
    let scores = none.get(Term::AttentionScores) - selective.get(Term::AttentionScores);
    assert_eq!(scores, layers * 2 * a * s * s * b / t);
    // The peak falls (here to the end of backward, where the gradients live).
    assert!(selective.peak_bytes < none.peak_bytes);
}

/// Sequence parallelism with tensor parallelism divides every activation by t
/// (Korthikanti §4.2.2); without SP the norm/residual part stays whole.
#[test]
fn tensor_and_sequence_parallel_divide_activations() {
    let arch = preset("llama-3.1-70b").unwrap().arch.clone();
    let c = arch.parameter_counts();
    let base = Plan {
        parallelism: Parallelism {
            zero: 0,
            ..Parallelism::default()
        },
        implementation: Implementation {
            stack: Stack::Megatron,
            ..Implementation::default()
        },
        model: ModelChoice {
            preset: "llama-3.1-70b".into(),
            ..ModelChoice::default()
        },
        ..Plan::default()
    };
    let act = |tp: u64, sp: bool| {
        let p = Plan {
            parallelism: Parallelism {
                tp,
                sp,
                ..base.parallelism
            },
            ..base.clone()
        };
        breakdown(
            &arch,
            &c,
            &p.recipe(),
            &layout(8, tp, 1, 8 / tp, arch.layers),
        )
        .saved_activation_bytes as f64
    };
    let ratio = act(1, false) / act(8, true);
    assert!(
        (ratio - 8.0).abs() < 1e-6,
        "TP8+SP divides activations by 8, got {ratio}"
    );
    let no_sp = act(8, false);
    assert!(
        no_sp > act(8, true) * 1.5,
        "without SP the LayerNorm part is replicated"
    );
}

/// 1F1B: the first stage of p keeps p micro-batches of L/p layers in flight,
/// i.e. as many layer-activations as the whole model without pipelining
/// (Narayanan et al. 2021; SPEC §3.3).
#[test]
fn pipeline_first_stage_holds_p_microbatches() {
    let arch = preset("llama-3.1-70b").unwrap().arch.clone();
    let c = arch.parameter_counts();
    let plan = Plan {
        parallelism: Parallelism {
            zero: 0,
            ..Parallelism::default()
        },
        data: Data {
            grad_accum: 16,
            ..Data::default()
        },
        implementation: Implementation {
            stack: Stack::Megatron,
            loss: planner::model::plan::Loss::Fused,
            ..Implementation::default()
        },
        ..Plan::default()
    };
    let layer_act = |pp: u64, vp: u64| {
        let p = Plan {
            parallelism: Parallelism {
                pp,
                vp,
                ..plan.parallelism
            },
            ..plan.clone()
        };
        let m = breakdown(
            &arch,
            &c,
            &p.recipe(),
            &layout(8, 1, pp, 8 / pp, arch.layers),
        );
        m.saved_activation_bytes as f64
    };
    let tokens = 8192.0;
    let final_norm = tokens * 4.0 * 8192.0;
    let whole = layer_act(1, 1) - final_norm;
    let first_stage = layer_act(4, 1);
    assert!(
        (first_stage / whole - 1.0).abs() < 1e-9,
        "p=4: {first_stage} vs {whole}"
    );
    // Interleaving with vp=2 multiplies by 1 + (p-1)/(p*vp) = 1.375.
    assert!((layer_act(4, 2) / first_stage - 1.375).abs() < 1e-9);
}

/// ZeRO-1 (Megatron distributed optimizer) on 8 GPUs: bf16 weights 2 B and
/// fp32 main grads 4 B stay whole; master (4 B) and AdamW (8 B) split by 8.
#[test]
fn megatron_distributed_optimizer_states() {
    let p = Plan {
        parallelism: Parallelism {
            zero: 1,
            ..Parallelism::default()
        },
        implementation: Implementation {
            stack: Stack::Megatron,
            ..Implementation::default()
        },
        ..Plan::default()
    };
    let r = evaluate(&p);
    let n = 8_030_261_248u64;
    let terms: std::collections::HashMap<_, _> = r.memory.terms.iter().copied().collect();
    assert_eq!(terms[&Term::Weights], 2 * n);
    assert_eq!(terms[&Term::OptimizerStates], (8 * n) / 8);
    assert_eq!(terms[&Term::MasterWeights], (4 * n) / 8);
}

/// The largest micro-batch and sequence that fit: their peak, with the
/// allocator's usual cache, within the budget (a verdict of `Fits`), and one
/// more does not.
#[test]
fn solvers_find_the_boundary() {
    let plan = Plan {
        data: Data {
            seq: 4096,
            ..Data::default()
        },
        ..Plan::default()
    };
    let fits = |mb: u64, seq: u64| {
        let p = Plan {
            data: Data {
                micro_batch: mb,
                seq,
                ..plan.data
            },
            ..plan.clone()
        };
        evaluate(&p).verdict == Verdict::Fits
    };
    let r = evaluate(&plan);
    let mb = r.max_micro_batch;
    assert!(mb >= 1);
    assert!(fits(mb, 4096) && !fits(mb + 1, 4096));
    let s = r.max_sequence;
    assert!((128..131_072).contains(&s));
    let one = plan.data.micro_batch;
    assert!(fits(one, s) && !fits(one, s + 128));
}

/// SPEC §3.3: plain logits peak at ~10-12 bytes per element: 42 GB for
/// V=128256, s=4096, b=8 (our HF profile: 12 B, measured in memory_examples.csv).
#[test]
fn logits_term_at_128k_vocab() {
    let plan = Plan {
        parallelism: Parallelism {
            zero: 0,
            ..Parallelism::default()
        },
        data: Data {
            seq: 4096,
            micro_batch: 8,
            ..Data::default()
        },
        ..Plan::default()
    };
    let (r, _) = resolve(&plan);
    let m = breakdown(&r.arch, &r.counts, &plan.recipe(), &r.layout);
    assert_eq!(m.logits_bytes, 12 * 4096 * 8 * 128_256);
    let fused = breakdown(
        &r.arch,
        &r.counts,
        &(Plan {
            implementation: Implementation {
                loss: planner::model::plan::Loss::Fused,
                ..plan.implementation
            },
            ..plan.clone()
        })
        .recipe(),
        &r.layout,
    );
    assert!(fused.logits_bytes * 8 <= m.logits_bytes);
}

#[test]
fn fp8_on_ampere_is_an_error_naming_precision() {
    let plan = Plan::from_query("precision=fp8&instance=ml.p4d.24xlarge").plan;
    let r = evaluate(&plan);
    assert!(r
        .errors
        .iter()
        .any(|e| e.code() == "fp8_unsupported" && e.key == Some("precision")));
}

#[test]
fn inconsistent_parallelism_is_reported_not_panicking() {
    for q in [
        "tp=3",
        "pp=7",
        "tp=8&pp=8&nodes=1",
        "ep=2",
        "shard=3",
        "cp=3&seq=1000",
        "layers=0",
        "kv_heads=5",
    ] {
        let d = Plan::from_query(q);
        let r = evaluate(&d.plan);
        assert!(
            !r.errors.is_empty() || !d.notices.is_empty(),
            "{q} must be reported"
        );
        assert!(r.memory.peak_bytes_per_gpu > 0, "{q} still evaluates");
    }
    let _ = Checkpointing::Full;
}

/// The sequence chart shows what each option really saves: with eager
/// attention selective recomputation drops the scores; with flash it saves
/// nothing (SPEC §3.3); op-level SAC keeps less than none and more than full.
#[test]
fn sequence_chart_lines_show_each_options_savings() {
    let seqs = [32768];
    let at = |q: &str| -> Vec<(Checkpointing, u64)> {
        planner::estimate::evaluate::memory_vs_sequence(&Plan::from_query(q).plan, &seqs)
            .into_iter()
            .map(|(c, v)| (c, v[0]))
            .collect()
    };
    let eager = at("attn=eager&impl=megatron&zero=3");
    let modes: Vec<Checkpointing> = eager.iter().map(|(c, _)| *c).collect();
    assert_eq!(
        modes,
        [
            Checkpointing::None,
            Checkpointing::Selective,
            Checkpointing::Op,
            Checkpointing::Full
        ]
    );
    let (none, selective, op, full) = (eager[0].1, eager[1].1, eager[2].1, eager[3].1);
    assert!(selective < none && full < op && op < none, "{eager:?}");
    let flash = at("attn=flash&impl=megatron&zero=3");
    assert_eq!(
        flash[0].1, flash[1].1,
        "selective is a no-op with flash attention"
    );
}

/// Llama 3.1 405B has 126 layers; NVIDIA runs it at PP 16 x VP 4 (GB200,
/// B200) and PP 8 x VP 8 (H100) by counting the embedding and the loss as
/// pipeline slots: 128 slots, the first and last ranks one layer short
/// (shared/data/gb200_nvl72_and_uneven_pp.md §3.2).
#[test]
fn llama_405b_pipelines_split_as_megatron_does() {
    let report = |q: &str| evaluate(&Plan::from_query(q).plan);
    let r = report("model=llama-3.1-405b&impl=megatron&precision=fp8&tp=4&pp=16&vp=4&instance=ml.p6-b200.48xlarge&nodes=32");
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let ranks = &r.layers_per_pipeline_rank;
    assert_eq!((ranks.len(), ranks[0], ranks[1], ranks[15]), (16, 7, 8, 7));
    assert_eq!(ranks.iter().sum::<u64>(), 126);
    assert!(r.layout.stages.embedding_and_loss_slots);
    let h100 = report("model=llama-3.1-405b&impl=megatron&precision=fp8&tp=8&pp=8&vp=8&cp=2&instance=ml.p5.48xlarge&nodes=128");
    assert!(h100.errors.is_empty(), "{:?}", h100.errors);
    assert_eq!(
        h100.layers_per_pipeline_rank,
        [15, 16, 16, 16, 16, 16, 16, 15]
    );
    // Explicit first/last-rank counts: 15 + 6 x 16 + 15.
    let explicit = report("model=llama-3.1-405b&impl=megatron&tp=8&pp=8&pp_first=15&pp_last=15&instance=ml.p5.48xlarge&nodes=8");
    assert!(explicit.errors.is_empty(), "{:?}", explicit.errors);
    assert_eq!(explicit.layers_per_pipeline_rank[1], 16);
    // A degree Megatron cannot split names the nearest ones it can.
    let bad = report("model=llama-3.1-405b&pp=5");
    let e = bad
        .errors
        .iter()
        .find(|e| e.code() == "pp_does_not_divide_layers")
        .expect("error");
    assert!(e.english().contains("pp=4, pp=6"), "{}", e.english());
}

/// Every published configuration of calibration.csv is accepted by the page
/// as published: its shape as custom fields (an MoE row's as its preset,
/// with its expert parallelism), its parallel layout and its recipe's
/// settings on the SageMaker instance with its GPU (`Case::link`).
#[test]
fn every_published_recipe_is_accepted() {
    let mut moe_rows = 0;
    for c in planner::accuracy::calibration::cases() {
        let q = c.link();
        let d = Plan::from_query(&q);
        if c.arch.moe.is_some() {
            moe_rows += 1;
            assert_ne!(
                d.plan.model.preset, "custom",
                "{}: an MoE row opens its preset",
                c.id
            );
        }
        assert!(d.notices.is_empty(), "{}: {:?}", c.id, d.notices);
        let r = evaluate(&d.plan);
        assert!(r.errors.is_empty(), "{}: {:?}", c.id, r.errors);
        assert_eq!(
            r.layout.stages, c.layout.stages,
            "{}: the harness and the page split alike",
            c.id
        );
    }
    assert_eq!(
        moe_rows, 44,
        "the 36 Megatron-Bridge MoE rows (25.09 to 26.02) and the PyTorch stacks' 8 are checked too"
    );
}

/// Megatron-LM's `theoretical_memory_usage.py`: weights and optimizer take
/// `6 + 12/dp` bytes per parameter with the distributed optimizer (bf16
/// weights 2, fp32 grads 4, fp32 master and Adam moments 12 sharded), and
/// it adds them to the activations: the gradient buffer lives through the
/// whole step, so they coexist at the peak.
#[test]
fn megatron_gradient_buffer_coexists_with_activations() {
    let r = evaluate(
        &Plan::from_query("impl=megatron&zero=1&instance=ml.p5.48xlarge&seq=4096&precision=bf16")
            .plan,
    );
    let m = &r.memory;
    let states: u64 = ["weights", "gradients", "master_weights", "optimizer_states"]
        .iter()
        .map(|k| {
            m.terms
                .iter()
                .find(|(t, _)| t.key() == *k)
                .map_or(0, |(_, b)| *b)
        })
        .sum();
    // TransformerEngine's cached placeholder weight gradients (BF16, one
    // per distinct Linear shape of Llama 3.1 8B: QKV 4096 x 6144, proj
    // 4096², FC1 4096 x 28,672, FC2 14,336 x 4096), which
    // theoretical_memory_usage.py predates.
    let placeholders =
        2.0 * (4096.0 * 6144.0 + 4096.0 * 4096.0 + 4096.0 * 28_672.0 + 14_336.0 * 4096.0);
    assert_eq!(placeholders, 436_207_616.0);
    let megatron = r.parameters as f64 * (6.0 + 12.0 / 8.0) + placeholders;
    assert!(
        (states as f64 / megatron - 1.0).abs() < 1e-6,
        "{states} vs {megatron}"
    );
    let act = m
        .terms
        .iter()
        .find(|(t, _)| t.key() == "activations")
        .map_or(0, |(_, b)| *b);
    assert!(act > 0, "peak while activations are alive ({:?})", m.phase);
}

/// Context parallelism "divides the activations of all layers" along the
/// sequence (NeMo Framework user guide, Long context: Context Parallelism,
/// docs.nvidia.com/nemo-framework/user-guide/latest/longcontext/contextparallel.html),
/// unlike sequence parallelism, which splits only some. So, derived by hand:
/// Llama 3.1 70B at TP 8 and CP 2 on 16K tokens holds exactly the activations
/// (and the loss's logits) of CP 1 on 8K, and half those of CP 1 on 16K; the
/// model states do not change. (#10 found the planner 1.5-2x high with CP.)
#[test]
fn context_parallelism_splits_every_layers_activations() {
    let mem = |q: &str| {
        let r = evaluate(
            &Plan::from_query(&format!(
                "model=llama-3.1-70b&impl=megatron&tp=8&instance=ml.p5.48xlarge&{q}"
            ))
            .plan,
        );
        assert!(r.errors.is_empty(), "{q}: {:?}", r.errors);
        let term = |k: Term| {
            r.memory
                .terms
                .iter()
                .find(|(t, _)| *t == k)
                .map_or(0, |x| x.1)
        };
        (
            term(Term::Activations),
            term(Term::LogitsAndLoss),
            term(Term::OptimizerStates),
        )
    };
    let cp2 = mem("cp=2&seq=16384&nodes=2");
    let cp1_half = mem("cp=1&seq=8192&nodes=1");
    let cp1_full = mem("cp=1&seq=16384&nodes=1");
    assert_eq!((cp2.0, cp2.1), (cp1_half.0, cp1_half.1));
    assert_eq!(cp2.0 * 2, cp1_full.0);
    assert_eq!(cp2.1 * 2, cp1_full.1);
    assert!(
        (cp2.2 * 2).abs_diff(cp1_full.2) <= 1,
        "{cp2:?} vs {cp1_full:?}"
    );
}

/// The verdict says which of its bytes are assumptions (#25): the CUDA
/// context, the workspaces and fragmentation the user can set, summed.
#[test]
fn the_verdict_names_its_assumed_terms() {
    let r = evaluate(&Plan::from_query("ws_gib=2&frag=10").plan);
    let m = &r.memory;
    let term = |k: Term| m.terms.iter().find(|(t, _)| *t == k).map_or(0, |x| x.1);
    let assumed = term(Term::CudaContext) + term(Term::Workspaces) + term(Term::Fragmentation);
    assert_eq!(m.assumed_bytes, assumed);
    assert_eq!(term(Term::Workspaces), 2 << 30, "ws_gib=2");
    assert!(m.assumed_bytes < m.peak_bytes_per_gpu);
    assert!(Term::Fragmentation.is_assumed() && !Term::Activations.is_assumed());
}
