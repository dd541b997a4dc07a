//! The sharing contract (SPEC §8): forgiving decode, exact round trip, and
//! export strings that cannot carry code.

use planner::model::plan::{
    valid_entry, valid_hf_model, valid_job, valid_role, valid_s3, with_pinned, Lang, Plan,
};

#[test]
fn full_urls_and_bare_queries_read_the_same() {
    let a = Plan::from_query("https://planner.example/?model=qwen2.5-7b&seq=4096#top").plan;
    let b = Plan::from_query("model=qwen2.5-7b&seq=4096").plan;
    assert_eq!(a, b);
    assert_eq!(a.model.preset, "qwen2.5-7b");
    assert_eq!(a.data.seq, 4096);
}

#[test]
fn bad_values_keep_defaults_and_name_the_key() {
    let d = Plan::from_query("seq=abc&mb=2&model=nope&foo=1&zero=9");
    assert_eq!(d.plan.data.seq, Plan::default().data.seq);
    assert_eq!(d.plan.data.micro_batch, 2);
    let keys: Vec<_> = d.notices.iter().map(|n| n.key.as_str()).collect();
    assert_eq!(keys, ["seq", "model", "foo", "zero"]);
    assert!(d
        .notices
        .iter()
        .all(|n| n.message().contains(&format!("`{}`", n.key))));
    assert!(d
        .notices
        .iter()
        .all(|n| !planner::text::render(Lang::Ru, &n.problem).is_empty()));
}

#[test]
fn truncated_and_oversized_input_never_panics() {
    for q in [
        "seq=",
        "=",
        "&&&",
        "%",
        "%E0%A4%A",
        "seq=8192&precisi",
        "v=99",
        "nodes=-3",
        "tokens=1e400",
        "seq=1e5",
    ] {
        let _ = planner::evaluate(&Plan::from_query(q).plan);
    }
    let long = format!("job={}", "a".repeat(100_000));
    let d = Plan::from_query(&long);
    assert_eq!(d.notices.len(), 1);
    assert!(d.plan.launch.job.is_empty());
}

#[test]
fn round_trip_keeps_every_key() {
    let q = "model=mixtral-8x7b&train=lora&stage=dpo&lora_rank=64&lora_alpha=16&lora_targets=attention&seq=32768&mb=2&ga=16&tokens=5e9&precision=fp8&optimizer=adamw8bit&ckpt=0.25&offload=1&attn=flash&loss=fused&impl=megatron&zero=2&shard=4&tp=2&pp=2&vp=2&cp=2&ep=4&sp=1&instance=ml.p5en.48xlarge&nodes=4&spot=1&price=63.3&save_every=250&save=weights&async_save=1&save_bw=2.5&headroom=7&ws_gib=2&frag=8&role=arn:aws:iam::123456789012:role/SageMakerRole&s3=s3://my-bucket/runs/a&job=llama-ft&entry=src/train.py&hf_model=meta-llama/Llama-3.1-8B&lang=ru";
    let d = Plan::from_query(q);
    assert!(d.notices.is_empty(), "{:?}", d.notices);
    let again = Plan::from_query(&d.plan.to_query());
    assert!(again.notices.is_empty());
    assert_eq!(again.plan, d.plan);
}

#[test]
fn export_fields_accept_real_values_and_refuse_code() {
    assert!(valid_role(
        "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-2024"
    ));
    assert!(valid_role("SageMakerRole"));
    assert!(!valid_role("arn:aws:iam::123:role/x"));
    assert!(!valid_role("x\")\nimport os"));
    assert!(valid_s3("s3://my-bucket/runs/2026-11"));
    assert!(!valid_s3("s3://My_Bucket/x"));
    assert!(!valid_s3("s3://bucket/a\"b"));
    assert!(!valid_s3("https://bucket/x"));
    assert!(valid_job("llama-3-ft"));
    assert!(!valid_job("-bad"));
    assert!(!valid_job("a'b"));
    assert!(valid_entry("train.py") && valid_entry("scripts/train_fsdp.py"));
    assert!(!valid_entry("../etc/x.py") && !valid_entry("/abs.py") && !valid_entry("a b.py"));
    assert!(valid_hf_model("meta-llama/Llama-3.1-8B"));
    assert!(!valid_hf_model("<script>"));
}

/// `plan::KEYS` lists the schema: every key a link carries is in it, and the
/// parser knows every key in it.
#[test]
fn the_key_list_is_the_schema() {
    let q = "model=mixtral-8x7b&layers=30&params_b=7&train=qlora&shard=4&instance=custom&gpu_mem=96&price=9&role=R&s3=s3://bkt/x&job=j&entry=t.py&hf_model=a/b&lock=instance,mb&budget=100&deadline=10&lang=en";
    let p = Plan::from_query(q).plan;
    for pair in p.to_query().split('&') {
        let key = pair.split('=').next().unwrap();
        assert!(
            planner::model::plan::KEYS.contains(&key),
            "{key} is written but not listed"
        );
    }
    for key in planner::model::plan::KEYS {
        // The link reads `lang=` beside the plan (#24: not part of it).
        let err = Plan::from_query(&format!("{key}=%01"))
            .notices
            .first()
            .map(|n| n.message())
            .unwrap_or_default();
        assert!(
            !err.contains("unknown key"),
            "{key} is listed but not parsed"
        );
    }
}

/// Names users naturally type get "did you mean" from the presets, in both
/// languages; a name like no preset gets the plain message.
#[test]
fn unknown_model_names_get_suggestions() {
    let notice = |q: &str, lang| {
        let d = Plan::from_query(q);
        d.notices
            .first()
            .map(|n| planner::text::render(lang, &n.problem))
            .unwrap_or_default()
    };
    use planner::model::plan::Lang::{En, Ru};
    assert!(
        notice("model=mistral-7b", En).contains("did you mean mistral-7b-v0.1, mistral-7b-v0.3?")
    );
    assert!(notice("model=llama3-70b", En).contains("did you mean llama-3.1-70b?"));
    assert!(notice("model=llama3-70b", Ru).contains("может быть, llama-3.1-70b?"));
    assert!(!notice("model=nope", En).contains("did you mean"));
}

/// A shape typed over a preset is named custom, with the preset of its size as a hint.
#[test]
fn custom_shapes_are_named_custom() {
    use planner::text::{render, Lang};
    let name = |q: &str, lang| {
        let r = planner::evaluate(&Plan::from_query(q).plan);
        render(lang, &r.model_name)
    };
    // Llama 3.1 405B's shape typed over the default 8B preset.
    let shape = "layers=126&hidden=16384&heads=128&kv_heads=8&ffn=53248";
    assert_eq!(name(shape, Lang::En), "custom (close to Llama-3.1-405B)");
    assert_eq!(name(shape, Lang::Ru), "своя (близка к Llama-3.1-405B)");
    assert_eq!(name("model=llama-3.1-70b", Lang::Ru), "Llama-3.1-70B");
}

/// An emptied optional field (the page's "empty: ..." inputs) means none,
/// without a notice; an emptied required one is still an error.
#[test]
fn emptied_optional_fields_mean_none() {
    let d = Plan::from_query("shard=4&shard=&pp_first=7&pp_first=&price=30&price=");
    assert!(d.notices.is_empty(), "{:?}", d.notices);
    assert_eq!(
        (
            d.plan.parallelism.shard,
            d.plan.parallelism.pp_first,
            d.plan.hardware.price
        ),
        (None, None, None)
    );
    assert_eq!(Plan::from_query("mb=").notices.len(), 1);
}

/// A pinned plan rides in the link as `vs=`, beside the plan (the page's
/// state, not the plan's): its short query survives the round trip, a
/// malformed one is a notice, and the differences name the keys.
#[test]
fn a_pinned_plan_survives_the_link() {
    let mut p = Plan::from_query("model=llama-3.1-70b&nodes=2").plan;
    let vs = p.short_query();
    assert_eq!(vs, "model=llama-3.1-70b&nodes=2");
    p.set("precision", "fp8").unwrap();
    let link = with_pinned(p.to_query(), Some(&vs));
    assert!(
        link.ends_with("&vs=model%3Dllama-3.1-70b%26nodes%3D2"),
        "{link}"
    );
    let back = Plan::from_query(&link);
    assert!(back.notices.is_empty(), "{:?}", back.notices);
    assert_eq!(back.plan, p);
    assert_eq!(back.pinned.as_deref(), Some(vs.as_str()));
    let pinned = Plan::from_query(&vs).plan;
    assert_eq!(
        pinned.differences(&p),
        vec![(
            "precision".to_string(),
            "bf16".to_string(),
            "fp8".to_string()
        )]
    );
    // The plan's own link and its short query hold no pin.
    assert!(!p.to_query().contains("vs=") && !back.plan.short_query().contains("vs="));
    let bad = Plan::from_query("model=llama-3.1-8b&vs=model%3Dnope");
    assert_eq!(bad.notices.len(), 1, "a broken pinned plan is reported");
    assert!(bad.notices[0].message().contains("vs"));
    assert_eq!(bad.pinned, None, "and nothing is pinned");
    assert_eq!(
        bad.plan.model.preset, "llama-3.1-8b",
        "the current plan stays"
    );
    let emptied = Plan::from_query(&format!("{link}&vs="));
    assert_eq!(emptied.pinned, None, "an empty vs unpins");
    assert_eq!(emptied.plan, p);
}

/// `stage=` (#38): an SFT plan's link does not write it (links from before
/// keep their bytes); DPO's does; a wrong value keeps the other settings.
#[test]
fn the_training_stage_travels_only_when_it_is_not_sft() {
    use planner::model::plan::TrainingStage;
    let sft = Plan::from_query("model=llama-3.1-8b&seq=4096").plan;
    assert!(!sft.to_query().contains("stage="));
    let dpo = Plan::from_query("model=llama-3.1-8b&seq=4096&stage=dpo");
    assert_eq!(dpo.plan.training.stage, TrainingStage::Dpo);
    assert!(dpo.plan.to_query().contains("&stage=dpo&"));
    let bad = Plan::from_query("model=llama-3.1-8b&seq=4096&stage=ppo");
    assert_eq!(bad.plan.training.stage, TrainingStage::Sft);
    assert_eq!(bad.plan.data.seq, 4096);
    assert_eq!(bad.notices.len(), 1, "{:?}", bad.notices);
    // GRPO's rollout keys travel with stage=grpo only, and round-trip.
    assert!(!dpo.plan.to_query().contains("generations="));
    let q = "model=llama-3.1-8b&seq=4096&stage=grpo&generations=16&completion=1536&beta=0.04&gen_share=0.45";
    let grpo = Plan::from_query(q).plan;
    let r = &grpo.training.rollout;
    assert_eq!(
        (r.generations, r.completion, r.beta, r.gen_share),
        (16, 1536, 0.04, 0.45)
    );
    let written = grpo.to_query();
    assert!(
        written.contains("&stage=grpo&generations=16&completion=1536&beta=0.04&gen_share=0.45&")
    );
    assert_eq!(Plan::from_query(&written).plan, grpo);
    // TRL needs two completions per prompt; a bad value keeps the rest.
    let one = Plan::from_query("model=llama-3.1-8b&stage=grpo&generations=1&completion=300");
    assert_eq!(
        (
            one.plan.training.rollout.generations,
            one.plan.training.rollout.completion
        ),
        (8, 300)
    );
    assert_eq!(one.notices.len(), 1, "{:?}", one.notices);
}

/// `lora_alpha` (#38): PEFT's scale travels in the link and the export;
/// left empty it is twice the rank, what train.py always set.
#[test]
fn lora_alpha_travels_and_defaults_to_twice_the_rank() {
    use planner::estimate::evaluate::evaluate;
    use planner::launch::export::hyperparameter_items;
    let alpha_of = |q: &str| {
        let p = Plan::from_query(q).plan;
        let items = hyperparameter_items(&p, &evaluate(&p));
        items
            .into_iter()
            .find(|(k, _)| *k == "lora_alpha")
            .map(|(_, v)| v)
    };
    assert_eq!(alpha_of("train=lora&lora_rank=32").as_deref(), Some("64"));
    assert_eq!(
        alpha_of("train=lora&lora_rank=32&lora_alpha=16").as_deref(),
        Some("16")
    );
    assert_eq!(alpha_of("train=full&lora_alpha=16"), None);
    let mut p = Plan::from_query("train=lora&lora_alpha=16").plan;
    p.set("lora_alpha", "").unwrap();
    assert_eq!(
        p.lora.lora_alpha, None,
        "an emptied field goes back to twice the rank"
    );
}

/// A custom GPU's keys beside a known instance were read and silently
/// ignored (the published DPO rows' `gpu_count=1` on ml.p5.48xlarge ran on
/// eight GPUs): now each says so, and the plan keeps the instance's GPUs.
#[test]
fn custom_gpu_keys_beside_a_known_instance_say_they_are_ignored() {
    let d = Plan::from_query("model=llama-3.1-8b&instance=ml.p5.48xlarge&gpu_count=1&gpu_mem=40");
    let keys: Vec<_> = d.notices.iter().map(|n| n.key.as_str()).collect();
    assert_eq!(keys, ["gpu_count", "gpu_mem"]);
    assert!(d.notices[0]
        .message()
        .contains("ignored with ml.p5.48xlarge"));
    let custom = Plan::from_query("model=llama-3.1-8b&gpu_count=4&instance=custom&gpu_mem=80");
    assert!(custom.notices.is_empty(), "{:?}", custom.notices);
    assert_eq!(custom.plan.hardware.custom_gpu.per_node, 4);
}

/// `lora_dtype` (#38): the adapters in FP32 (PEFT's default) or in the BF16
/// base's dtype travel in the link (written only when BF16) and the export.
/// Llama-3.1-8B's 6,815,744 q,v adapter parameters (PEFT's count,
/// parameters.rs) on one GPU hold weights, grads and AdamW's two moments at
/// 16 B each in FP32, 54,525,952 B less in BF16 (8 B each); an FP32 plan
/// keeps FP32 adapters; GRPO's trainer refuses BF16 ones.
#[test]
fn lora_dtype_travels_and_halves_the_adapters() {
    use planner::estimate::evaluate::evaluate;
    use planner::launch::export::hyperparameter_items;
    let q = "model=llama-3.1-8b&train=lora&lora_targets=q,v&zero=0&instance=ml.p5.4xlarge";
    let adapters = |q: &str| {
        let r = evaluate(&Plan::from_query(q).plan);
        r.figures
            .memory
            .terms
            .iter()
            .filter(|(t, _)| *t == planner::model::memory::Term::Adapters)
            .map(|(_, b)| *b)
            .sum::<u64>()
    };
    assert_eq!(adapters(q), 6_815_744 * 16);
    let bf16 = format!("{q}&lora_dtype=bf16");
    assert_eq!(adapters(&bf16), 6_815_744 * 8);
    assert_eq!(adapters(&format!("{bf16}&precision=fp32")), 6_815_744 * 16);
    let p = Plan::from_query(&bf16).plan;
    assert!(p.to_query().contains("lora_dtype=bf16"));
    assert!(!Plan::from_query(q).plan.to_query().contains("lora_dtype"));
    let items = hyperparameter_items(&p, &evaluate(&p));
    assert!(
        items
            .iter()
            .any(|(k, v)| *k == "lora_dtype" && v == "\"bf16\""),
        "{items:?}"
    );
    let grpo = evaluate(&Plan::from_query(&format!("{bf16}&stage=grpo&mb=8&ga=1")).plan);
    let e = grpo
        .export_notes
        .iter()
        .find(|e| e.code() == "grpo_launcher_refuses")
        .expect("a note on the export");
    assert_eq!(e.fix, Some(("lora_dtype", "fp32".into())));
}
