//! Exact parameter counts of the presets against published figures.

use planner::model::architecture::{from_hf_config, preset, presets, Architecture};

/// (preset, total, active, source)
const PUBLISHED: &[(&str, u64, u64, &str)] = &[
    (
        "llama-3.2-1b",
        1_235_814_400,
        1_235_814_400,
        "issue #3 / HF safetensors total",
    ),
    (
        "llama-3.2-3b",
        3_212_749_824,
        3_212_749_824,
        "issue #3 / HF safetensors total",
    ),
    (
        "llama-3.1-8b",
        8_030_261_248,
        8_030_261_248,
        "SPEC §3.1, issue #3",
    ),
    (
        "llama-3.1-70b",
        70_553_706_496,
        70_553_706_496,
        "SPEC §3.1, issue #3",
    ),
    (
        "llama-3.1-405b",
        405_853_388_800,
        405_853_388_800,
        "issue #3",
    ),
    (
        "llama-2-7b",
        6_738_415_616,
        6_738_415_616,
        "meta-llama/Llama-2-7b-hf safetensors total (the model card's 7B)",
    ),
    (
        "llama-2-70b",
        68_976_648_192,
        68_976_648_192,
        "meta-llama/Llama-2-70b-hf safetensors total; MLPerf Training's LoRA model",
    ),
    (
        "qwen2.5-7b",
        7_615_616_512,
        7_615_616_512,
        "issue #3; Qwen2.5-7B card 7.61B",
    ),
    (
        "mistral-7b-v0.1",
        7_241_732_096,
        7_241_732_096,
        "issue #3; data/README.md",
    ),
    (
        "mistral-7b-v0.3",
        7_248_023_552,
        7_248_023_552,
        "data/README.md",
    ),
    (
        "mixtral-8x7b",
        46_702_792_704,
        12_879_925_248,
        "issue #3; Mixtral card 46.7B total, 12.9B active",
    ),
];

#[test]
fn presets_match_published_totals() {
    for (id, total, active, source) in PUBLISHED {
        let p = preset(id).unwrap_or_else(|| panic!("preset {id}"));
        let c = p.arch.parameter_counts();
        assert_eq!(c.total, *total, "{id} total ({source})");
        assert_eq!(c.active, *active, "{id} active ({source})");
    }
}

/// Model-card figures (billions, as rounded on the card) for the other presets:
/// every count must round to the card's figure within its stated precision.
#[test]
fn presets_match_model_cards() {
    let cards: &[(&str, f64, f64)] = &[
        ("qwen2.5-0.5b", 0.49, 0.01),
        ("qwen2.5-1.5b", 1.54, 0.01),
        ("qwen2.5-3b", 3.09, 0.01),
        ("qwen2.5-14b", 14.7, 0.1),
        ("qwen2.5-32b", 32.5, 0.3),
        ("qwen2.5-72b", 72.7, 0.1),
        ("qwen3-8b", 8.2, 0.1),
        ("qwen3-32b", 32.8, 0.1),
        ("qwen3-30b-a3b", 30.5, 0.1),
        ("mixtral-8x22b", 141.0, 1.0),
        ("gemma-2-9b", 9.24, 0.01),
        ("gemma-2-27b", 27.2, 0.1),
        ("gpt-oss-20b", 20.9, 0.1),
        ("gpt-oss-120b", 116.8, 0.1),
        ("olmo-2-7b", 7.30, 0.01),
        ("olmo-2-13b", 13.7, 0.1),
    ];
    for (id, billions, tol) in cards {
        let c = preset(id)
            .unwrap_or_else(|| panic!("preset {id}"))
            .arch
            .parameter_counts();
        let got = c.total as f64 / 1e9;
        assert!(
            (got - billions).abs() <= *tol,
            "{id}: {got:.3}B vs card {billions}B"
        );
    }
    // Qwen3-30B-A3B: 3.3B active (model card).
    let q = preset("qwen3-30b-a3b").unwrap().arch.parameter_counts();
    assert!((q.active as f64 / 1e9 - 3.3).abs() < 0.1);
}

#[test]
fn every_preset_is_valid_and_sourced() {
    assert!(presets().len() >= 27);
    for p in presets() {
        assert!(p.arch.validate().is_empty(), "{}", p.id);
        assert!(!p.source.is_empty(), "{} has a source", p.id);
    }
}

#[test]
fn hf_config_import_reads_llama_3_1_8b() {
    // meta-llama/Llama-3.1-8B config.json (the fields that shape the model).
    let cfg = r#"{"architectures":["LlamaForCausalLM"],"hidden_size":4096,"intermediate_size":14336,
        "max_position_embeddings":131072,"model_type":"llama","num_attention_heads":32,
        "num_hidden_layers":32,"num_key_value_heads":8,"tie_word_embeddings":false,"vocab_size":128256}"#;
    let a = from_hf_config(cfg).expect("valid config");
    assert_eq!(a.parameter_counts().total, 8_030_261_248);
}

/// LoRA's trainable parameters at rank 16 against PEFT 0.17.1's own count
/// (`get_peft_model(model, LoraConfig(r=16, target_modules=...))` on the meta
/// device, Transformers 4.56.2, the bundle's pinned stack): q,v is PEFT's
/// default for Llama and Qwen; all-linear is train.py's every-Linear list
/// (the MoE router excluded), with MLA's projections named as train.py
/// names them. 6,815,744 for Llama-3.1-8B q,v is also the
/// figure PEFT prints in its Llama-3 LoRA examples.
#[test]
fn lora_adapters_match_peft_counts() {
    use planner::model::plan::LoraTargets;
    let qv = LoraTargets::QV;
    let attention = LoraTargets::ATTENTION;
    let all = LoraTargets::ALL_LINEAR;
    // PEFT's own names for the same sets (q_proj,v_proj on Llama and Qwen).
    let named = LoraTargets::parse("q_proj,v_proj").expect("PEFT names");
    let cases = [
        ("llama-3.1-8b", qv, 6_815_744u64),
        ("llama-3.1-8b", named, 6_815_744),
        ("llama-3.1-8b", attention, 13_631_488),
        ("llama-3.1-8b", all, 41_943_040),
        ("qwen3-30b-a3b", qv, 6_684_672),
        ("qwen3-30b-a3b", named, 6_684_672),
        ("qwen3-30b-a3b", attention, 13_369_344),
        ("qwen3-30b-a3b", all, 843_841_536),
        // MLA: q_a/q_b as q, kv_a_proj_with_mqa/kv_b_proj as k and v (train.py's
        // sets); the first three layers' dense MLP under all-linear.
        ("deepseek-v3", qv, 74_019_840),
        ("deepseek-v3", attention, 97_006_592),
        ("deepseek-v3", all, 6_694_630_400),
    ];
    for (id, targets, peft) in cases {
        let a = &preset(id).expect(id).arch;
        let ours = a.lora_params(16, targets.adapted().on(a));
        // The mean layer blends dense and MoE layers: whole to rounding.
        assert_eq!(ours.round(), peft as f64, "{id} {}", targets.key());
    }
}

#[test]
fn hf_config_errors_name_the_problem() {
    let e = from_hf_config("{not json").unwrap_err();
    assert!(
        e.to_string().contains("not valid JSON"),
        "{}",
        e.to_string()
    );
    let e = from_hf_config(r#"{"model_type":"bert","hidden_size":768}"#).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("model_type"));
    let e = from_hf_config(r#"{"model_type":"llama","hidden_size":4096}"#).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("num_hidden_layers"));
}

/// "About N billion parameters" gives a valid shape for every N the URL
/// accepts (0.05 to 2,000 B), within 5 % of N (#25: heads = hidden/128 with
/// 8 KV heads broke at 0.5, 7, 13, 30, 70, 175, 405 and 1000 B, and 0.05 B
/// silently became Llama-3.2-1B's 1.24 B).
#[test]
fn quick_size_is_valid_and_near_the_request_from_50m_to_2t() {
    let listed = [
        0.05, 0.5, 1.0, 7.0, 13.0, 30.0, 70.0, 175.0, 400.0, 405.0, 1000.0, 2000.0,
    ];
    // 300 sizes evenly spaced in log between 0.05 and 2,000.
    let grid = (0..300).map(|i| 0.05 * (2000.0f64 / 0.05).powf(i as f64 / 299.0));
    for b in listed.into_iter().chain(grid) {
        let a = Architecture::from_billions(b);
        assert!(a.validate().is_empty(), "{b}B: {:?} {a:?}", a.validate());
        assert_eq!(
            a.heads * a.head_dim,
            a.hidden,
            "{b}B: heads x head_dim = hidden"
        );
        let got = a.parameter_counts().total as f64 / 1e9;
        assert!((got - b).abs() / b < 0.05, "asked {b}B, got {got:.3}B");
        let report = planner::evaluate(&planner::Plan::from_query(&format!("params_b={b}")).plan);
        assert!(report.errors.is_empty(), "{b}B: {:?}", report.errors);
    }
}

/// #59: the page reads a pasted config.json through its worker: the reply
/// gives the custom model the page used to build from the architecture
/// (every field, through the link's own encoding), or the key at fault and
/// why, in either language.
#[test]
fn the_worker_reads_a_config_back_exactly() {
    use planner::model::plan::{config_reply, read_config_reply, ModelChoice};
    for cfg in [
        r#"{"model_type":"qwen3_moe","hidden_size":2048,"intermediate_size":6144,"moe_intermediate_size":768,"num_attention_heads":32,"num_hidden_layers":48,"num_key_value_heads":4,"head_dim":128,"num_experts":128,"num_experts_per_tok":8,"vocab_size":151936,"tie_word_embeddings":false}"#,
        r#"{"model_type":"gemma2","hidden_size":3584,"intermediate_size":14336,"num_attention_heads":16,"num_hidden_layers":42,"num_key_value_heads":8,"head_dim":256,"hidden_activation":"gelu_pytorch_tanh","vocab_size":256000}"#,
    ] {
        let a = from_hf_config(cfg).expect("imports");
        let back = read_config_reply(&config_reply(cfg));
        assert_eq!(back, Ok(ModelChoice::of_architecture(&a)), "{cfg}");
    }
    for bad in [
        "{not json",
        r#"{"model_type":"bert","hidden_size":768}"#,
        r#"{"model_type":"llama","hidden_size":4096}"#,
    ] {
        let why = from_hf_config(bad).unwrap_err();
        let back = read_config_reply(&config_reply(bad)).unwrap_err();
        assert_eq!(back.field, why.field, "{bad}");
        let ru = planner::model::plan::Lang::Ru;
        assert_eq!(back.phrase.english(), why.phrase.english(), "{bad}");
        assert_eq!(
            planner::text::render(ru, &back.phrase),
            planner::text::render(ru, &why.phrase)
        );
    }
}

/// Importing each family's config.json gives the preset's exact count.
/// The configs are the shape fields of the models' Hugging Face config.json files.
#[test]
fn hf_config_import_matches_presets_across_families() {
    let cases = [
        (
            "mixtral-8x7b",
            r#"{"model_type":"mixtral","hidden_size":4096,"intermediate_size":14336,"num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":8,"num_local_experts":8,"num_experts_per_tok":2,"vocab_size":32000,"tie_word_embeddings":false}"#,
        ),
        (
            "qwen2.5-7b",
            r#"{"model_type":"qwen2","hidden_size":3584,"intermediate_size":18944,"num_attention_heads":28,"num_hidden_layers":28,"num_key_value_heads":4,"vocab_size":152064,"tie_word_embeddings":false}"#,
        ),
        (
            "qwen3-30b-a3b",
            r#"{"model_type":"qwen3_moe","hidden_size":2048,"intermediate_size":6144,"moe_intermediate_size":768,"num_attention_heads":32,"num_hidden_layers":48,"num_key_value_heads":4,"head_dim":128,"num_experts":128,"num_experts_per_tok":8,"vocab_size":151936,"tie_word_embeddings":false}"#,
        ),
        (
            "gemma-2-9b",
            r#"{"model_type":"gemma2","hidden_size":3584,"intermediate_size":14336,"num_attention_heads":16,"num_hidden_layers":42,"num_key_value_heads":8,"head_dim":256,"hidden_activation":"gelu_pytorch_tanh","vocab_size":256000}"#,
        ),
        (
            "gpt-oss-20b",
            r#"{"model_type":"gpt_oss","hidden_size":2880,"intermediate_size":2880,"num_attention_heads":64,"num_hidden_layers":24,"num_key_value_heads":8,"head_dim":64,"num_local_experts":32,"num_experts_per_tok":4,"vocab_size":201088,"tie_word_embeddings":false}"#,
        ),
        (
            "olmo-2-7b",
            r#"{"model_type":"olmo2","hidden_size":4096,"intermediate_size":11008,"num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":32,"vocab_size":100352,"tie_word_embeddings":false}"#,
        ),
        (
            "gemma-3-12b",
            r#"{"model_type":"gemma3","text_config":{"model_type":"gemma3_text","hidden_size":3840,"intermediate_size":15360,"num_attention_heads":16,"num_hidden_layers":48,"num_key_value_heads":8,"head_dim":256,"hidden_activation":"gelu_pytorch_tanh","vocab_size":262208}}"#,
        ),
    ];
    for (id, cfg) in cases {
        let a = from_hf_config(cfg).unwrap_or_else(|e| panic!("{id}: {e}"));
        let want = preset(id).unwrap().arch.parameter_counts();
        let got = a.parameter_counts();
        assert_eq!(got.total, want.total, "{id} total");
        assert_eq!(got.active, want.active, "{id} active");
    }
}
