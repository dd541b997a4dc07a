//! #26: the MoE models people train in 2026, DeepSeek-V3, Kimi K2 and Llama 4,
//! with multi-head latent attention, dense layers among the MoE ones and
//! chunked attention (../shared/data/moe_models_2026.md).

use planner::model::architecture::{from_hf_config, preset};
use planner::{evaluate, Plan};

/// Parameters by hand from each config, layer by layer:
///
/// DeepSeek-V3 attention (MLA): q_a 7168 x 1536 + norm 1536 + q_b 1536 x
/// (128 x 192) + kv_a 7168 x 576 + norm 512 + kv_b 512 x (128 x 256) + o
/// (128 x 128) x 7168 = 187,107,328; norms 2 x 7168. An MoE layer adds 257
/// SwiGLU experts of 3 x 7168 x 2048 (256 routed + 1 shared) and a router
/// 256 x 7168; a dense layer 3 x 7168 x 18432. 58 MoE + 3 dense layers,
/// embedding and head 129,280 x 7168 each, final norm 7168: 671,026,404,352
/// (DeepSeek's report: 671 B). Active: 8 routed + 1 shared expert per MoE
/// layer: 37,552,282,624 (37 B).
///
/// Kimi K2: MLA with 64 heads (101,124,096), 384 experts, 1 dense layer,
/// vocab 163,840: 1,026,408,209,408 total (Moonshot: "1 T", the issue
/// ~1.04 T), 32,861,477,888 active (32 B).
///
/// Llama 4 Scout: GQA 40 / 8 heads of 128 (62,914,560), 16 experts + 1
/// shared of 3 x 5120 x 8192 and a router in all 48 layers, vocab 202,048
/// untied: 107,769,861,120 (Meta: 109 B with the vision encoder),
/// 17,172,894,720 active (17 B).
///
/// Llama 4 Maverick: 24 MoE layers of 128 experts + 1 shared, 24 dense of
/// 3 x 5120 x 16384: 400,711,848,960 (~400 B), 17,184,691,200 active (17 B).
#[test]
fn presets_match_their_published_totals() {
    for (id, total, active, published_total, published_active) in [
        ("deepseek-v3", 671_026_404_352, 37_552_282_624, 671e9, 37e9),
        ("kimi-k2", 1_026_408_209_408, 32_861_477_888, 1.04e12, 32e9),
        (
            "llama-4-scout",
            107_769_861_120,
            17_172_894_720,
            109e9,
            17e9,
        ),
        (
            "llama-4-maverick",
            400_711_848_960,
            17_184_691_200,
            400e9,
            17e9,
        ),
    ] {
        let c = preset(id).expect(id).arch.parameter_counts();
        assert_eq!((c.total, c.active), (total, active), "{id}");
        let near = |x: u64, published: f64| (x as f64 / published - 1.0).abs() < 0.03;
        assert!(near(c.total, published_total), "{id} total {}", c.total);
        assert!(near(c.active, published_active), "{id} active {}", c.active);
    }
}

/// DeepSeek-V3's own config.json (the keys its architecture reads, as in
/// deepseek-ai/DeepSeek-V3) imports to the preset's architecture.
#[test]
fn deepseek_v3_config_imports_as_the_preset() {
    let config = r#"{
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
        "hidden_size": 7168, "intermediate_size": 18432, "num_hidden_layers": 61,
        "num_attention_heads": 128, "num_key_value_heads": 128, "vocab_size": 129280,
        "max_position_embeddings": 163840, "hidden_act": "silu", "tie_word_embeddings": false,
        "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1,
        "first_k_dense_replace": 3, "moe_layer_freq": 1, "moe_intermediate_size": 2048,
        "n_group": 8, "topk_group": 4, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid",
        "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "num_nextn_predict_layers": 1,
        "attention_bias": false, "rms_norm_eps": 1e-06
    }"#;
    let imported = from_hf_config(config).expect("imports");
    let mut want = preset("deepseek-v3").unwrap().arch.clone();
    // The config has no head_dim: the importer takes hidden / heads, which
    // MLA does not read (its head dims are the MLA fields).
    want.head_dim = imported.head_dim;
    // RoPE is not imported (a pasted config fills the shape's overrides only).
    assert_eq!(imported.rope, Default::default());
    want.rope = Default::default();
    assert_eq!(imported, want);
    assert_eq!(
        imported.parameter_counts(),
        preset("deepseek-v3").unwrap().arch.parameter_counts()
    );
}

/// Llama 4's config nests the text model; chunked attention on the RoPE
/// layers, an MoE layer every `interleave_moe_layer_step`.
#[test]
fn llama_4_maverick_config_imports_as_the_preset() {
    let config = r#"{
        "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
        "text_config": {
            "model_type": "llama4_text", "hidden_size": 5120, "num_hidden_layers": 48,
            "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
            "intermediate_size": 8192, "intermediate_size_mlp": 16384,
            "num_local_experts": 128, "num_experts_per_tok": 1,
            "interleave_moe_layer_step": 2, "vocab_size": 202048,
            "attention_chunk_size": 8192, "max_position_embeddings": 1048576,
            "tie_word_embeddings": false, "hidden_act": "silu", "use_qk_norm": false
        }
    }"#;
    let imported = from_hf_config(config).expect("imports");
    // RoPE is not imported (a pasted config fills the shape's overrides only).
    let mut want = preset("llama-4-maverick").unwrap().arch.clone();
    want.rope = Default::default();
    assert_eq!(imported, want);
}

/// Each preset opens on the page and gives a plan; DeepSeek-V3 on 256 B200
/// as Megatron-Bridge 26.02 ran it (PP 16, EP 8, MXFP8; 61 layers split 3 +
/// 14 x 4 + 2) fits.
#[test]
fn presets_plan_on_the_page() {
    for id in [
        "deepseek-v3",
        "kimi-k2",
        "llama-4-scout",
        "llama-4-maverick",
    ] {
        let r = evaluate(&Plan::from_query(&format!("model={id}&impl=megatron")).plan);
        assert!(r.throughput.tokens_per_second_per_gpu > 0.0, "{id}");
        assert!(r.throughput.mfu > 0.0 && r.throughput.mfu <= 1.0, "{id}");
    }
    let q = "model=deepseek-v3&impl=megatron&precision=mxfp8&fp8_params=1&grad_bf16=1\
             &instance=ml.p6-b200.48xlarge&nodes=32&pp=16&pp_first=3&pp_last=2&ep=8&seq=4096&mb=1&ga=256&zero=1";
    let d = Plan::from_query(q);
    assert!(d.notices.is_empty(), "{:?}", d.notices);
    let r = evaluate(&d.plan);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    println!(
        "DeepSeek-V3 on 256 B200: {:.1} GiB of {:.1} usable, {:.0} tok/s/GPU",
        r.memory.peak_bytes_per_gpu as f64 / (1u64 << 30) as f64,
        r.memory.usable_bytes as f64 / (1u64 << 30) as f64,
        r.throughput.tokens_per_second_per_gpu
    );
    assert_ne!(r.verdict, planner::estimate::report::Verdict::DoesNotFit);
}

/// Chunked attention: a query sees the keys of its own chunk, `w / 2` on
/// average, however long the sequence; the global (NoPE) layers see `s / 2`.
#[test]
fn chunked_layers_see_their_chunk() {
    let a = &preset("llama-4-scout").unwrap().arch;
    let s = 131_072.0;
    let want = (36.0 * 8192.0 / 2.0 + 12.0 * s / 2.0) / 48.0;
    assert!((a.mean_keys_per_query(131_072) - want).abs() < 1e-6);
}

/// Megatron's `--recompute-modules` (#23: model what the recipes ran):
/// `mla_up_proj` stops keeping MLA's q, k and v, by hand `2 x 128 x 192`
/// bytes of q, `2 x 2 x 128 x 160` of k and v (their mean head dim) =
/// 131,072 B per token and layer: 4,096 tokens x 61 layers = 32,749,125,632 B
/// with one micro-batch in flight; and recomputes the up projections, so the
/// step takes longer. The list reads back as written; an unknown module is
/// refused with the names.
#[test]
fn recompute_modules_drop_what_they_recompute() {
    let base = "model=deepseek-v3&impl=megatron&ckpt=selective&seq=4096&mb=1&ga=1&instance=ml.p6-b200.48xlarge&nodes=32&ep=64";
    let plain = evaluate(&Plan::from_query(base).plan);
    let d = Plan::from_query(&format!("{base}&recompute_modules=mla_up_proj,moe_act"));
    assert!(d.notices.is_empty(), "{:?}", d.notices);
    assert!(d
        .plan
        .to_query()
        .contains("recompute_modules=mla_up_proj,moe_act"));
    let only_mla =
        evaluate(&Plan::from_query(&format!("{base}&recompute_modules=mla_up_proj")).plan);
    let dropped = plain.memory.activation_bytes - only_mla.memory.activation_bytes;
    assert_eq!(dropped, 131_072 * 4096 * 61);
    assert!(only_mla.throughput.step.recompute > plain.throughput.step.recompute);
    let bad = Plan::from_query(&format!("{base}&recompute_modules=attention"));
    assert_eq!(bad.notices.len(), 1);
    assert!(bad.notices[0].message().contains("mla_up_proj"));
}

/// Qwen3-30B-A3B in FP8 on one 8 x B200 node at EP 8, micro-batch 1, 4
/// micro-batches, no recomputation, Megatron's default dispatcher.
const QWEN3_30B_ON_8_B200: &str = "model=qwen3-30b-a3b&impl=megatron&precision=fp8&ckpt=none\
    &seq=4096&mb=1&ga=4&instance=ml.p6-b200.48xlarge&nodes=1&ep=8&zero=1";

/// The host's launch costs per MoE layer and micro-batch (#26): with the
/// fused dispatcher (`moe_flex=1`) a step of Qwen3-30B-A3B on 8 B200s (48
/// MoE layers, 4 micro-batches, no recomputation) saves by hand 48 x 4 x
/// `HOST.moe_alltoall_launch` = 192 x 3.689 ms = 0.708 s of its compute, and
/// with the router in CUDA graphs (`moe_graphs=1`) 192 x 1.355 ms = 0.260 s;
/// both read back from the link. Hugging Face's MoE block has neither.
#[test]
fn fused_dispatcher_and_router_graphs_save_their_launch_costs() {
    use planner::model::throughput::HOST;
    let base = QWEN3_30B_ON_8_B200;
    let compute = |extra: &str| {
        let d = Plan::from_query(&format!("{base}{extra}"));
        assert!(d.notices.is_empty(), "{:?}", d.notices);
        assert!(d.plan.to_query().contains(extra), "{extra} reads back");
        evaluate(&d.plan).throughput.step.gemm
    };
    let plain = compute("");
    let flex = compute("&moe_flex=1");
    let graphs = compute("&moe_graphs=1");
    assert!((plain - flex - 192.0 * HOST.moe_alltoall_launch).abs() < 1e-9);
    assert!((plain - graphs - 192.0 * HOST.moe_router_launch).abs() < 1e-9);
    assert!((192.0 * HOST.moe_alltoall_launch - 0.708).abs() < 0.001);
    let hf = "model=qwen3-30b-a3b&impl=hf&seq=4096&mb=1&ga=4&instance=ml.p6-b200.48xlarge&nodes=1";
    let hf_plain = evaluate(&Plan::from_query(hf).plan).throughput.step.gemm;
    let hf_flex = evaluate(&Plan::from_query(&format!("{hf}&moe_flex=1&moe_graphs=1")).plan)
        .throughput
        .step
        .gemm;
    assert_eq!(hf_plain, hf_flex);
}

/// A Megatron MoE plan that launches its kernels from the host says how
/// much of the step the fused dispatcher and router CUDA graphs would save,
/// and offers `moe_flex=1`; the figure is the step timed both ways. Plans
/// with both on, and Hugging Face's, say nothing.
#[test]
fn launch_bound_moe_plans_offer_the_fused_dispatcher() {
    let base = QWEN3_30B_ON_8_B200;
    let launch_bound = |q: &str| {
        evaluate(&Plan::from_query(q).plan)
            .warnings
            .into_iter()
            .find(|w| w.code() == "moe_launch_bound")
    };
    let w = launch_bound(base).expect("the all-to-all dispatcher warns");
    assert_eq!(w.fix, Some(("moe_flex", "1".to_string())));
    let step = |q: &str| evaluate(&Plan::from_query(q).plan).throughput.step_seconds;
    let saved = 1.0 - step(&format!("{base}&moe_flex=1&moe_graphs=1")) / step(base);
    let said = format!("{:.0}%", 100.0 * saved);
    let text = planner::text::render(planner::model::plan::Lang::En, &w.phrase);
    assert!(text.contains(&said), "{said} in {text}");
    assert!(saved > 0.05, "{saved}");
    let graphs_only = launch_bound(&format!("{base}&moe_flex=1")).expect("router outside graphs");
    assert_eq!(graphs_only.fix, Some(("moe_graphs", "1".to_string())));
    assert!(launch_bound(&format!("{base}&moe_flex=1&moe_graphs=1")).is_none());
    assert!(launch_bound("model=qwen3-30b-a3b&impl=hf&instance=ml.p6-b200.48xlarge").is_none());
}

/// An MoE plan's speed label follows its group's evidence, as a dense
/// plan's does (#26: no blanket ±50%): DeepSeek-V3 on 256 B200 in FP8 as
/// Megatron-Bridge ran it is in the group "Blackwell, Megatron, FP8, TP/PP,
/// MoE" (its three B200 runs and Qwen3-235B-A22B's) and inside its
/// envelope, so it is "calibrated" at that group's worst cross-validated
/// error; the note still states the scatter over all MoE rows.
#[test]
fn moe_speed_labels_follow_their_group() {
    let q = "model=deepseek-v3&impl=megatron&precision=fp8&fp8_params=1&grad_bf16=1\
             &instance=ml.p6-b200.48xlarge&nodes=32&pp=16&pp_first=3&pp_last=2&ep=8&seq=4096&mb=1&ga=256&zero=1";
    let report = evaluate(&Plan::from_query(q).plan);
    let a = &report.throughput_accuracy;
    let coverage = planner::accuracy::summary::compute();
    let group = coverage
        .groups
        .iter()
        .find(|g| {
            g.group.moe
                && g.group.fp8
                && g.group
                    .name()
                    .contains("Blackwell, Megatron, FP8, TP/PP, MoE")
        })
        .expect("the group has rows");
    assert!(group.rows >= 3, "{}", group.rows);
    let worst = group.cv_under.abs().max(group.cv_over.abs()).max(5.0) / 100.0;
    assert_eq!(a.level, "calibrated");
    assert_eq!(a.expected_error, Some(worst));
    assert!(a
        .note_english()
        .contains("mixture-of-experts speed is rough"));
}
