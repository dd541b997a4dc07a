//! A Megatron plan exports a Megatron-Bridge launcher (#37): the bundle's
//! settings file carries exactly the layout, recomputation and precision the
//! planner assumed, and the launch code starts it in the NeMo container.
//! tests/megatron/check.py validates the same files against the pinned
//! megatron-core and megatron-bridge.

use planner::launch::bundle::{files, script_name};
use planner::launch::export::{export, Format};
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
    let f = files(&plan, Format::Pytorch, &[LAUNCHER]);
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
    let paths: Vec<String> = files(&plan, Format::Pytorch, &[LAUNCHER])
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

/// Megatron-LM refuses `--tp-comm-overlap` without `--sequence-parallel`
/// (arguments.py: "Tensor parallel communication/GEMM overlap can happen
/// only when sequence parallelism is enabled") and Megatron-Bridge turns
/// the overlap off: such a plan is flagged beside `tp_overlap`, and its fix
/// (`sp=1`) is the 405B recipe, which exports both.
#[test]
fn tp_overlap_without_sequence_parallel_is_flagged_with_its_fix() {
    let without = L405B.replace("&sp=1", "");
    let errors = evaluate(&Plan::from_query(&without).plan).errors;
    let flagged: Vec<_> = errors
        .iter()
        .filter(|e| e.code() == "tp_overlap_without_sp")
        .collect();
    assert_eq!(flagged.len(), 1, "{errors:?}");
    assert_eq!(flagged[0].key, Some("tp_overlap"));
    let (key, value) = flagged[0].fix.clone().expect("a fix");
    assert_eq!((key, value.as_str()), ("sp", "1"));
    let fixed = format!("{without}&{key}={value}");
    assert!(evaluate(&Plan::from_query(&fixed).plan).errors.is_empty());
    // Without TP there is nothing to overlap or split; other stacks differ.
    for other in ["&tp=1", "&stack=torchtitan"] {
        let q = format!("{without}{other}");
        let errors = evaluate(&Plan::from_query(&q).plan).errors;
        assert!(
            errors.iter().all(|e| e.code() != "tp_overlap_without_sp"),
            "{other}"
        );
    }
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
    let q = "model=llama-3.1-8b&stack=megatron&ckpt=op&instance=ml.p5.48xlarge";
    let refusal = |q: &str| {
        let r = evaluate(&Plan::from_query(q).plan);
        assert!(r.errors.is_empty(), "{q}: estimated all the same (#55)");
        let e = r
            .export_notes
            .iter()
            .find(|e| e.code() == "megatron_launcher_refuses");
        e.map(|e| (e.key, e.fix.clone()))
    };
    let fix = |k: &'static str, v: &str| Some((k, v.to_string()));
    assert_eq!(refusal(q), Some((Some("ckpt"), fix("ckpt", "selective"))));
    assert_eq!(settings(q)["unsupported"], "ckpt=op");
    // LoRA runs since #55: no note, and the settings carry it.
    let lora = "model=llama-3.1-8b&stack=megatron&train=lora&instance=ml.p5.48xlarge";
    assert_eq!(refusal(lora), None);
    assert!(settings(lora)["unsupported"].is_null());
    // A user's own Megatron script is not judged.
    assert_eq!(refusal(&format!("{q}&entry=pretrain_gpt.py")), None);
    assert!(LAUNCHER.contains("plan.get(\"unsupported\")"));
    // Layer shapes the generic GPT provider does not build are refused too;
    // GPT-OSS's window and sinks are carried over (gpt_oss_bridge.py's values).
    let gemma = settings("model=gemma-3-27b&stack=megatron");
    assert_eq!(gemma["unsupported"], "norms_per_layer=4 (Gemma)");
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
        .all(|w| w.code() != "stack_not_bundled"));
    assert!(full.errors.is_empty(), "{:?}", full.errors);
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
        let text = planner::launch::megatron_bridge::settings_text(&plan, &evaluate(&plan));
        let value: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(
            text,
            serde_json::to_string_pretty(&value).unwrap() + "\n",
            "{q}"
        );
    }
    use planner::formats::json_writer::Value as W;
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
    use planner::model::plan::Engine;
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
        let found = planner::estimate::search::search(&Plan::from_query(q).plan);
        let offers: Vec<_> = found.pareto.iter().chain(found.fastest.iter()).collect();
        assert!(!offers.is_empty(), "{q}");
        assert!(offers.iter().all(|c| c.engine == want), "{q}");
    }
}

/// What Megatron would refuse or run differently is said up front, as a
/// note on the export on that input whose fix runs (the review of #37's
/// first cut; a note, not an error, since #55).
#[test]
fn megatron_refusals_are_notes_whose_fix_runs() {
    for (q, what, fix) in [
        ("ckpt=op", "ckpt=op", "ckpt=selective"),
        ("offload=1&ckpt=full", "offload=1 + ckpt", "ckpt=none"),
        ("offload=1&pp=2", "offload=1 + pp>1", "offload=0"),
        (
            "optimizer=adafactor",
            "optimizer=adafactor",
            "optimizer=adamw",
        ),
        (
            "precision=bf16-pure",
            "precision=bf16-pure",
            "precision=bf16",
        ),
        (
            "bf16_moments=1&zero=0",
            "bf16_moments=1 + zero=0",
            "bf16_moments=0",
        ),
    ] {
        let q = format!("model=llama-3.1-8b&stack=megatron&instance=ml.p5.48xlarge&nodes=2&{q}");
        assert_eq!(settings(&q)["unsupported"], what, "{q}");
        let r = evaluate(&Plan::from_query(&q).plan);
        assert!(r.errors.is_empty(), "{q}: {:?}", r.errors);
        let e = r
            .export_notes
            .iter()
            .find(|e| e.code() == "megatron_launcher_refuses");
        let e = e.unwrap_or_else(|| panic!("{q}: {:?}", r.export_notes));
        let (key, value) = e.fix.clone().expect("a fix");
        assert_eq!(format!("{key}={value}"), fix, "{q}");
        assert_eq!(e.key, Some(key), "{q}");
        let fixed = evaluate(&Plan::from_query(&format!("{q}&{fix}")).plan);
        assert!(
            fixed.errors.is_empty() && fixed.export_notes.is_empty(),
            "{q}&{fix}: {:?}",
            fixed.export_notes
        );
    }
}

/// The auto-plan offers none of them: what the plan leaves open it
/// chooses as the launcher runs it (selective recomputation, BF16), and
/// what it keeps (adapters) leaves nothing to offer.
#[test]
fn the_auto_plan_offers_only_what_the_launcher_runs() {
    let offers = |q: &str| {
        let found = planner::estimate::search::search(&Plan::from_query(q).plan);
        let all: Vec<_> = found.pareto.into_iter().chain(found.fastest).collect();
        all
    };
    let m = "model=llama-3.1-8b&stack=megatron";
    for q in [
        "ckpt=op",
        "precision=bf16-pure",
        "bf16_moments=1&zero=0",
        "offload=1",
    ] {
        let found = offers(&format!("{m}&{q}"));
        assert!(!found.is_empty(), "{q}");
        for c in found {
            let r = evaluate(&Plan::from_query(&c.query).plan);
            assert!(r.errors.is_empty(), "{}: {:?}", c.query, r.errors);
        }
    }
    // LoRA is offered since #55 (Megatron-Bridge's PEFT), as what it runs.
    let lora = offers(&format!("{m}&train=lora"));
    assert!(!lora.is_empty());
    for c in lora {
        let r = evaluate(&Plan::from_query(&c.query).plan);
        assert!(
            r.export_notes.is_empty(),
            "{}: {:?}",
            c.query,
            r.export_notes
        );
    }
    // Megatron's selective recomputation, not op-level.
    let found = planner::estimate::search::search(
        &Plan::from_query("model=llama-3.1-70b&stack=megatron").plan,
    );
    assert!(found.pareto.iter().all(|c| c.checkpointing != "op"));
}

/// Activation offloading runs as modelled: Llama-3.1-8B's 32 layers less
/// SMP's horizon of 2 kept on the GPU, or the layers asked for (at most all
/// but the last, which Megatron never offloads).
#[test]
fn megatron_offloads_the_layers_modelled() {
    let m = "model=llama-3.1-8b&stack=megatron";
    let layers = |q: &str| {
        settings(&format!("{m}&offload=1&{q}"))["model"]["cpu_offloading_num_layers"].clone()
    };
    assert_eq!(layers(""), 30);
    assert_eq!(layers("offload_layers=12"), 12);
    assert_eq!(layers("offload_layers=40"), 31);
    assert!(settings(m)["model"].get("cpu_offloading").is_none());
}

/// Decoder layers per pipeline rank of a Megatron-Core layout string:
/// virtual stage `i` runs on rank `i mod pp`.
fn layers_per_rank(layout: &str, pp: usize) -> Vec<usize> {
    let mut ranks = vec![0; pp];
    for (i, stage) in layout.split('|').enumerate() {
        ranks[i % pp] += stage.matches('t').count();
    }
    ranks
}

/// Ranks whose layers are not a multiple of VP go as a layout string,
/// which Megatron-Core takes for any counts.
#[test]
fn uneven_virtual_stages_go_as_a_layout_string() {
    // DeepSeek-V3's published recipe (Megatron-Bridge 25.09, calibration.csv
    // mb2509_dsv3_h100_fp8: PP 8 x VP 4, 7 layers and the embedding first,
    // 6 layers, MTP and the loss last; NVIDIA wrote it `Et|(tt|)*30mL`).
    let ds = settings("model=deepseek-v3&stack=megatron&tp=2&pp=8&vp=4&ep=64&pp_first=7&pp_last=6&mtp=1&instance=ml.p5.48xlarge&nodes=128");
    let layout = ds["model"]["pipeline_model_parallel_layout"]
        .as_str()
        .unwrap();
    let stages: Vec<&str> = layout.split('|').collect();
    assert_eq!(stages.len(), 32);
    let ranks = layers_per_rank(layout, 8);
    assert_eq!((ranks[0], ranks[7]), (7, 6));
    assert_eq!(ranks[1..7], [8; 6]);
    assert_eq!((stages[0], stages[31]), ("Et", "tmL"));
    assert_eq!(layout.matches('t').count(), 61);
    assert!(ds["model"]
        .get("num_layers_in_first_pipeline_stage")
        .is_none());
    assert_eq!(ds["unsupported"], Value::Null);
    // Ends that are multiples of VP with middle ranks that are not (32
    // layers, 6 and 8 at the ends, 9 on each middle rank): a layout string
    // too, where the two counts would fail Megatron-Core's middle check.
    let mid = settings(
        "model=llama-3.1-8b&stack=megatron&pp=4&vp=2&pp_first=6&pp_last=8&instance=ml.p5.48xlarge",
    );
    let layout = mid["model"]["pipeline_model_parallel_layout"]
        .as_str()
        .unwrap();
    assert_eq!(layers_per_rank(layout, 4), vec![6, 9, 9, 8]);
}

/// What Megatron runs is set as modelled: recomputation, dropout, FP8
/// parameter gathers.
#[test]
fn megatron_runs_what_was_modelled() {
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
}

/// RoPE as each model's config.json sets it (#37): the launcher builds it,
/// where Megatron-Core's defaults (base 10,000, no scaling, MLA's
/// `mscale_all_dim` 0.0) would build another model. Values: the config.json
/// copies data/models.json names (Llama-3.1-8B: rope_theta 500000, llama3
/// factor 8; Qwen3-8B: 1000000, none; DeepSeek-V3: 10000, yarn factor 40,
/// mscale_all_dim 1.0; gpt-oss-120b: 150000, yarn factor 32, truncate false).
#[test]
fn rope_is_the_models_own() {
    let p = |q: &str| {
        settings(&format!(
            "{q}&stack=megatron&instance=ml.p5.48xlarge&nodes=2"
        ))
    };
    let llama = p("model=llama-3.1-8b");
    assert_eq!(llama["provider"]["rotary_base"], 500_000);
    assert_eq!(llama["provider"]["rope_scaling"], true);
    assert_eq!(llama["provider"]["rope_scaling_factor"], 8.0);
    assert_eq!(llama["yarn"], Value::Null);
    let qwen = p("model=qwen3-8b");
    assert_eq!(qwen["provider"]["rotary_base"], 1_000_000);
    assert!(qwen["provider"].get("rope_scaling").is_none());
    // A custom shape's is Transformers' Llama default (base 10,000, no
    // scaling), as a quick size's; a preset with overrides keeps its own.
    let custom = p("model=custom&layers=12");
    assert_eq!(custom["provider"]["rotary_base"], 10_000);
    assert!(custom["provider"].get("rope_scaling").is_none());
    assert_eq!(p("params_b=3")["provider"]["rotary_base"], 10_000);
    assert_eq!(
        p("model=llama-3.1-8b&layers=12")["provider"]["rotary_base"],
        500_000
    );
    let ds = p("model=deepseek-v3&ep=8&pp=2");
    let m = &ds["model"];
    assert_eq!(
        (
            &m["rope_type"],
            &m["rotary_base"],
            &m["rotary_scaling_factor"]
        ),
        (
            &Value::from("yarn"),
            &Value::from(10_000.0),
            &Value::from(40.0)
        )
    );
    assert_eq!(m["mscale_all_dim"], 1.0);
    assert!(ds["provider"].get("rotary_base").is_none());
    let oss = p("model=gpt-oss-120b&ep=8");
    assert_eq!(oss["provider"]["position_embedding_type"], "yarn");
    assert_eq!(oss["provider"]["rotary_base"], 150_000);
    assert_eq!(oss["yarn"]["yarn_rotary_scaling_factor"], 32.0);
    assert_eq!(oss["yarn"]["yarn_correction_range_round_to_int"], false);
    // Every preset names the config.json its RoPE was read from.
    let models: Value =
        serde_json::from_str(include_str!("../data/models.json")).expect("models.json");
    for m in models.as_array().expect("a list") {
        let mut rope = m["rope"].clone();
        let source = rope.as_object_mut().and_then(|r| r.remove("source"));
        assert!(source.is_some_and(|s| s.as_str().is_some_and(|s| s.contains("config.json"))));
        assert!(rope["theta"].as_f64().is_some_and(|t| t >= 10_000.0));
        // Read back as written: every number of the file reaches the preset.
        let id = m["id"].as_str().unwrap();
        let preset = planner::model::architecture::preset(id).unwrap();
        assert_eq!(
            serde_json::to_value(preset.arch.rope).unwrap(),
            rope,
            "{id}"
        );
    }
}

/// Every fix of a refusal leads somewhere that runs: followed fix after
/// fix, no plan comes back to one it left (a fix to stack=hf that train.py
/// refuses with a fix to stack=megatron would), and each chain ends without
/// errors or export notes, or, where no single setting makes the bundle run
/// a plan (Gemma's layers with TP: neither the launcher nor train.py's TP
/// builds them), at a note that offers no fix and says to use one's own
/// entry script.
#[test]
fn refusal_fixes_end_in_a_plan_that_runs() {
    let starts = [
        (
            "model=gemma-2-9b&stack=megatron&tp=2",
            Some("megatron_launcher_refuses"),
        ),
        ("model=gemma-2-9b&stack=megatron", None),
        ("model=llama-3.1-8b&stack=megatron&train=lora&mtp=1", None),
        ("model=llama-3.1-8b&stack=megatron&train=lora&tp=2", None),
        ("model=llama-3.1-8b&stack=megatron&train=lora&pp=2", None),
        ("model=llama-3.1-8b&stack=megatron&offload=1&ckpt=op", None),
        (
            "model=qwen3-30b-a3b&stack=megatron&offload=1&moe_graphs=1&moe_flex=1&ep=8",
            None,
        ),
        ("model=olmo-2-7b&stack=megatron", None),
        (
            "model=llama-3.1-8b&stack=megatron&precision=bf16-pure&optimizer=adafactor",
            None,
        ),
    ];
    for (start, unfixable) in starts {
        let mut plan = Plan::from_query(&format!("{start}&instance=ml.p5.48xlarge")).plan;
        let mut seen = vec![plan.to_query()];
        let end = loop {
            let r = evaluate(&plan);
            let all: Vec<_> = r.errors.into_iter().chain(r.export_notes).collect();
            let Some((key, value)) = all.iter().find_map(|e| e.fix.clone()) else {
                break all;
            };
            plan.set(key, &value).expect("a fix is a valid setting");
            let q = plan.to_query();
            assert!(!seen.contains(&q), "{start}: the fixes come back to {q}");
            seen.push(q);
            assert!(seen.len() < 10, "{start}: no end to the fixes: {seen:?}");
        };
        let codes: Vec<String> = end.iter().map(|e| e.code().to_string()).collect();
        assert_eq!(
            codes.first().map(String::as_str),
            unfixable,
            "{start}: {seen:?}"
        );
    }
}
