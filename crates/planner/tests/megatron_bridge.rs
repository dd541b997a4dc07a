//! A Megatron plan exports a Megatron-Bridge launcher (#37): the bundle's
//! settings file carries exactly the layout, recomputation and precision the
//! planner assumed, and the launch code starts it in the NeMo container.
//! tests/megatron/check.py validates the same files against the pinned
//! megatron-core and megatron-bridge.

use planner::bundle::{files, script_name};
use planner::export::{export, Format};
use planner::{evaluate, Plan};
use serde_json::Value;

const LAUNCHER: &str = include_str!("../bundle/pretrain_megatron_bridge.py");

/// NVIDIA's Llama 3.1 405B FP8 recipe on H100 (Megatron-Bridge 25.11
/// performance summary; calibration.csv mb2511_l405b_h100_fp8): TP 8, PP 8
/// with VP 8, CP 2, sequence parallel, the distributed optimizer, FP8 with
/// FP8 parameter gathers, bf16 gradient reduction, TP overlap.
const L405B: &str = "model=custom&layers=126&hidden=16384&heads=128&kv_heads=8&head_dim=128&ffn=53248&vocab=128256&mlp=swiglu&seq=8192&mb=1&ga=64&precision=fp8&ckpt=none&grad_bf16=1&fp8_params=1&loss=fused&stack=megatron&zero=1&tp=8&pp=8&vp=8&cp=2&sp=1&instance=ml.p5.48xlarge&nodes=128&tp_overlap=1";

fn settings(q: &str) -> Value {
    let plan = Plan::from_query(q).plan;
    let f = files(&plan, Format::Pytorch, LAUNCHER);
    let json = f
        .iter()
        .find(|f| f.path == "scripts/megatron_bridge_plan.json")
        .expect("a Megatron plan's bundle carries its settings");
    serde_json::from_str(&json.text).expect("valid JSON")
}

#[test]
fn a_megatron_bundle_carries_the_launcher_not_train_py() {
    let plan = Plan::from_query(L405B).plan;
    assert_eq!(script_name(&plan), "pretrain_megatron_bridge.py");
    let paths: Vec<String> = files(&plan, Format::Pytorch, LAUNCHER)
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(
        paths,
        [
            "README.md",
            "launch.py",
            "scripts/pretrain_megatron_bridge.py",
            "scripts/megatron_bridge_plan.json"
        ]
    );
    for format in [Format::Pytorch, Format::Huggingface] {
        let code = export(&plan, format).code;
        assert!(
            code.contains("entry_point=\"pretrain_megatron_bridge.py\""),
            "{code}"
        );
        assert!(code.contains("image_uri=NEMO_IMAGE_URI"), "{code}");
        assert!(!code.contains("framework_version"), "{code}");
    }
    let mt = export(&plan, Format::ModelTrainer).code;
    assert!(
        mt.contains("training_image = NEMO_IMAGE_URI")
            && mt.contains("entry_script=\"pretrain_megatron_bridge.py\"")
    );
    // The Hugging Face stack keeps train.py.
    let hf = Plan::from_query("model=llama-3.1-8b").plan;
    assert_eq!(script_name(&hf), "train.py");
}

#[test]
fn the_405b_recipe_is_exported_as_planned() {
    let s = settings(L405B);
    let r = evaluate(&Plan::from_query(L405B).plan);
    let m = &s["model"];
    assert_eq!(m["tensor_model_parallel_size"], 8);
    assert_eq!(m["pipeline_model_parallel_size"], 8);
    assert_eq!(m["virtual_pipeline_model_parallel_size"], 8);
    assert_eq!(m["context_parallel_size"], 2);
    assert_eq!(m["sequence_parallel"], true);
    assert_eq!(m["tp_comm_overlap"], true);
    // 126 layers on 64 chunks: the embedding and the loss each take a slot.
    assert!(r.layout.stages.embedding_and_loss_slots);
    assert_eq!(m["account_for_embedding_in_pipeline_split"], true);
    assert_eq!(m["account_for_loss_in_pipeline_split"], true);
    assert_eq!(m["recompute_granularity"], Value::Null);
    let mp = &s["mixed_precision"];
    assert_eq!(
        (mp["fp8"].as_str(), mp["fp8_recipe"].as_str()),
        (Some("hybrid"), Some("tensorwise"))
    );
    assert_eq!(mp["fp8_param_gather"], true);
    assert_eq!(mp["grad_reduce_in_fp32"], false);
    assert_eq!(s["ddp"]["use_distributed_optimizer"], true);
    assert_eq!(s["ddp"]["use_megatron_fsdp"], false);
    // 1,024 GPUs / (8 x 8 x 2) = 8 data-parallel ranks x mb 1 x ga 64.
    assert_eq!(s["train"]["global_batch_size"], 512);
    assert_eq!(s["train"]["train_iters"], r.time.steps);
}

#[test]
fn recomputation_and_moe_are_exported_as_planned() {
    // DeepSeek-V3 on B200 as its 26.02 recipe (calibration.csv mb2602_dsv3_b200_fp8).
    let s = settings("model=deepseek-v3&seq=4096&mb=1&ga=256&precision=fp8&ckpt=selective&bf16_moments=1&recompute_modules=mla_up_proj&mtp=1&stack=megatron&zero=1&pp=16&ep=8&pp_first=4&pp_last=1&instance=ml.p6-b200.48xlarge&nodes=32&moe_flex=1");
    let m = &s["model"];
    assert_eq!(s["mla"], true);
    assert_eq!(m["recompute_granularity"], "selective");
    assert_eq!(m["recompute_modules"], serde_json::json!(["mla_up_proj"]));
    assert_eq!(
        (
            m["num_layers_in_first_pipeline_stage"].as_u64(),
            m["num_layers_in_last_pipeline_stage"].as_u64()
        ),
        (Some(4), Some(1))
    );
    assert_eq!(m["num_moe_experts"], 256);
    assert_eq!(m["moe_router_topk"], 8);
    assert_eq!(m["moe_token_dispatcher_type"], "flex");
    assert_eq!(m["mtp_num_layers"], 1);
    let freq = m["moe_layer_freq"].as_array().expect("dense layers first");
    assert_eq!(freq.iter().filter(|v| *v == 0).count(), 3);
    assert_eq!(s["optimizer"]["exp_avg_dtype"], "torch.bfloat16");
    // Full recomputation of half of each stage's 16 layers, as blocks.
    let h = settings("model=llama-3.1-8b&stack=megatron&ckpt=0.5&pp=2&instance=ml.p5.48xlarge");
    assert_eq!(
        (
            h["model"]["recompute_granularity"].as_str(),
            h["model"]["recompute_method"].as_str(),
            h["model"]["recompute_num_layers"].as_u64()
        ),
        (Some("full"), Some("block"), Some(8))
    );
}

#[test]
fn what_the_launcher_does_not_run_is_said_and_refused() {
    let q = "model=llama-3.1-8b&stack=megatron&train=lora&instance=ml.p5.48xlarge";
    let r = evaluate(&Plan::from_query(q).plan);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.code == "megatron_launcher_unsupported"));
    assert_eq!(settings(q)["unsupported"], "train=lora");
    assert!(LAUNCHER.contains("plan.get(\"unsupported\")"));
    // Layer shapes the generic GPT provider does not build are refused too;
    // GPT-OSS's window and sinks are carried over (gpt_oss_bridge.py's values).
    let gemma = settings("model=gemma-3-27b&stack=megatron");
    assert_eq!(
        gemma["unsupported"],
        "norms after attention and MLP (Gemma)"
    );
    let oss = settings("model=gpt-oss-120b&stack=megatron&ep=8&instance=ml.p5.48xlarge&nodes=2");
    let m = &oss["model"];
    assert_eq!(
        (
            &m["window_size"],
            &m["window_attn_skip_freq"],
            &m["softmax_type"]
        ),
        (
            &serde_json::json!([128, 0]),
            &serde_json::json!(2),
            &serde_json::json!("learnable")
        )
    );
    // A plan with errors is refused, not launched as something else.
    let bad = settings("model=llama-3.1-8b&stack=megatron&pp=4&vp=3&instance=ml.p5.48xlarge");
    assert!(bad["errors"].as_array().is_some_and(|e| !e.is_empty()));
    assert!(LAUNCHER.contains("plan.get(\"errors\")"));
    // A full Megatron plan is bundled: no "not bundled" warning any more.
    let full = evaluate(&Plan::from_query(L405B).plan);
    assert!(full
        .warnings
        .iter()
        .all(|w| w.code != "stack_not_bundled" && w.code != "megatron_launcher_unsupported"));
}

/// The settings file is serde_json's pretty text of its own value, byte
/// for byte (`json_writer` is hand-written to keep serde_json's serializer
/// out of the page's wasm), for the plans above and hostile strings.
#[test]
fn the_settings_text_is_serde_jsons() {
    let plans = [
        L405B,
        "model=deepseek-v3&stack=megatron&pp=16&ep=8&pp_first=4&pp_last=1&instance=ml.p6-b200.48xlarge&nodes=32&bf16_moments=1",
        "model=llama-3.1-8b&stack=megatron&precision=nvfp4&instance=ml.p6-b200.48xlarge&ckpt=0.5&pp=2",
        "model=mixtral-8x7b&stack=megatron&ep=8&moe_graphs=1&ckpt=selective&recompute_modules=none&instance=ml.p5.48xlarge&shard=2&nodes=2",
        "model=llama-3.1-8b&stack=megatron&pp=4&vp=3&job=a%22b%5Cc",
    ];
    for q in plans {
        let plan = Plan::from_query(q).plan;
        let text = planner::megatron_bridge::settings_text(&plan, &evaluate(&plan));
        let value: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(
            text,
            serde_json::to_string_pretty(&value).unwrap() + "\n",
            "{q}"
        );
    }
    use planner::json_writer::Value as W;
    for s in [
        "a\"b",
        "back\\slash",
        "new\nline\ttab\r",
        "\u{1}\u{1f}\u{7f}",
        "ünïcødé 日本 🦙",
        "\u{2028}",
        "",
    ] {
        let w = W::Obj(vec![(
            "k",
            W::List(vec![
                W::Str(s.into()),
                W::Null,
                W::Num(0.5),
                W::Num(1.0),
                W::Int(7),
            ]),
        )]);
        let text = w.pretty();
        let v: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(v["k"][0], s);
        assert_eq!(text, serde_json::to_string_pretty(&v).unwrap(), "{s:?}");
    }
    assert_eq!(W::List(vec![]).pretty(), "[]");
    assert_eq!(W::Obj(vec![]).pretty(), "{}");
}

/// Every plan says what runs its export, in the report and in the
/// auto-plan's offers (#37 item 3).
#[test]
fn every_plan_and_offer_names_its_engine() {
    use planner::plan::Engine;
    let engine = |q: &str| evaluate(&Plan::from_query(q).plan).engine;
    assert_eq!(engine("model=llama-3.1-8b"), Engine::TrainPy);
    assert_eq!(engine(L405B), Engine::MegatronBridge);
    assert_eq!(
        engine("model=llama-3.1-8b&stack=torchtitan"),
        Engine::OwnEntry
    );
    assert_eq!(
        engine("model=llama-3.1-8b&entry=src/train_fsdp.py"),
        Engine::OwnEntry
    );
    assert_eq!(
        engine("model=llama-3.1-8b&stack=megatron&entry=pretrain_gpt.py"),
        Engine::OwnEntry
    );
    let json = serde_json::to_value(evaluate(&Plan::from_query(L405B).plan)).unwrap();
    assert_eq!(json["engine"], "megatron-bridge");
    for (q, want) in [
        ("model=llama-3.1-70b&stack=megatron", Engine::MegatronBridge),
        ("model=llama-3.1-8b", Engine::TrainPy),
    ] {
        let found = planner::search::search(&Plan::from_query(q).plan);
        let offers: Vec<_> = found.pareto.iter().chain(found.fastest.iter()).collect();
        assert!(!offers.is_empty(), "{q}");
        assert!(offers.iter().all(|c| c.engine == want), "{q}");
    }
}

/// What Megatron would refuse or run differently is refused up front, and
/// what it runs is set as modelled (the review of #37's first cut).
#[test]
fn megatron_runs_what_was_modelled_or_refuses() {
    for (q, what) in [
        ("ckpt=op", "ckpt=op"),
        ("offload=1", "offload=1"),
        ("precision=bf16-pure", "precision=bf16-pure"),
        (
            "bf16_moments=1&zero=0",
            "bf16_moments=1 without the distributed Adam",
        ),
        (
            "pp=4&vp=2&pp_first=7&pp_last=7",
            "pp_first/pp_last that are not multiples of vp",
        ),
    ] {
        let s = settings(&format!(
            "model=llama-3.1-8b&stack=megatron&instance=ml.p5.48xlarge&nodes=2&{q}"
        ));
        assert_eq!(s["unsupported"], what, "{q}");
    }
    // Block recomputation counts a model chunk's layers: a quarter of 32
    // layers on PP 4 x VP 2 is 1 of each 4-layer chunk.
    let s =
        settings("model=llama-3.1-8b&stack=megatron&pp=4&vp=2&ckpt=0.25&instance=ml.p5.48xlarge");
    assert_eq!(s["model"]["recompute_num_layers"], 1);
    // No dropout, as modelled; FP8 gathers only under an FP8 recipe.
    assert_eq!(s["model"]["hidden_dropout"], 0.0);
    assert_eq!(s["model"]["attention_dropout"], 0.0);
    let bf16 = settings("model=llama-3.1-8b&stack=megatron&fp8_params=1&instance=ml.p5.48xlarge");
    assert_eq!(bf16["mixed_precision"]["fp8_param_gather"], false);
    let mx = settings("model=llama-3.1-8b&stack=megatron&precision=mxfp8&fp8_params=1&instance=ml.p6-b200.48xlarge");
    assert_eq!(
        mx["mixed_precision"]["reuse_grad_buf_for_mxfp8_param_ag"],
        true
    );
    assert_eq!(mx["dataset"]["sequence_length"], 8192);
    // The auto-plan offers Megatron's selective recomputation, not op-level.
    let found =
        planner::search::search(&Plan::from_query("model=llama-3.1-70b&stack=megatron").plan);
    assert!(found.pareto.iter().all(|c| c.checkpointing != "op"));
}
