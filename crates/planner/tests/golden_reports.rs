//! Behaviour lock for refactors: the JSON report (and the URL notices, in both
//! languages) of 50 varied plans must stay byte-identical to
//! `tests/data/golden_reports.jsonl`, which was written by the code before
//! the change. A change that is meant to move numbers regenerates the file
//! with `UPDATE_GOLDEN=1 cargo test -p planner --test golden_reports` and says
//! why in its commit.

use planner::estimate::evaluate::{compare_instances, memory_vs_sequence};
use planner::model::plan::{Lang, Plan};
use planner::text::render;

/// Presets, precisions, checkpointing, kernels, sharding, every parallel
/// layout, PEFT, MoE, custom shapes and GPUs, bad values, both languages.
const PLANS: [&str; 50] = [
    "",
    "lang=ru",
    "model=llama-3.2-1b&seq=2048&mb=4&precision=fp8",
    "model=llama-3.2-3b&precision=bf16-pure&optimizer=adamw8bit",
    "model=llama-3.1-70b&seq=32768&ckpt=full&nodes=4&zero=3",
    "model=llama-3.1-70b&seq=131072&precision=fp8&ckpt=full&nodes=4&zero=3&lang=ru",
    "model=llama-3.1-405b&tp=8&pp=9&nodes=16&precision=fp8&impl=megatron&ckpt=selective",
    "model=llama-3.1-405b&tp=8&pp=8&vp=4&nodes=16&impl=megatron",
    "model=qwen2.5-7b&train=lora&lora_rank=16&instance=ml.g5.2xlarge",
    "model=qwen2.5-72b&train=qlora&instance=ml.p4d.24xlarge&precision=bf16",
    "model=mixtral-8x7b&ep=8&impl=megatron&nodes=2",
    "model=mixtral-8x22b&ep=4&tp=2&nodes=4&zero=1",
    "model=qwen3-30b-a3b&ep=8&precision=mxfp8",
    "model=gpt-oss-20b&seq=131072&ckpt=full&loss=fused",
    "model=gpt-oss-120b&nodes=2&zero=3&shard=8",
    "model=gemma-2-9b&attn=eager&seq=4096",
    "model=gemma-3-27b&seq=16384&ckpt=op&instance=ml.p5.48xlarge",
    "model=mistral-7b-v0.3&precision=fp32&instance=ml.g6e.xlarge",
    "model=olmo-2-13b&zero=2&instance=ml.p4de.24xlarge",
    "model=llama-3.1-8b&attn=eager&ckpt=selective&impl=megatron&seq=4096",
    "model=llama-3.1-8b&zero=1&offload=1&seq=65536",
    "model=llama-3.1-8b&cp=4&seq=131072&impl=megatron&sp=1&tp=2",
    "model=llama-3.1-8b&optimizer=adamw_foreach&mb=2",
    "model=llama-3.1-8b&optimizer=adafactor&precision=bf16-pure",
    "model=llama-3.1-8b&optimizer=sgd&ckpt=0.5",
    "model=llama-3.1-8b&precision=nvfp4&instance=ml.p6-b200.48xlarge",
    "model=llama-3.1-8b&precision=fp8&instance=ml.p4d.24xlarge",
    "model=llama-3.1-8b&precision=mxfp8&instance=ml.p5.48xlarge",
    "model=llama-3.1-8b&mb=64&seq=8192",
    "model=llama-3.1-8b&tp=3",
    "model=llama-3.1-8b&pp=5",
    "model=llama-3.1-8b&cp=3",
    "model=llama-3.1-8b&ep=2",
    "model=mixtral-8x7b&ep=3&vp=2",
    "model=llama-3.1-8b&shard=3",
    "model=llama-3.1-8b&kv_heads=32&tp=16&nodes=2",
    "model=llama-3.1-8b&instance=ml.g5.xlarge&nodes=2",
    "model=nope&seq=abc&mb=-1&zero=9&unknown_key=1",
    "params_b=13&seq=4096",
    "params_b=175&nodes=8&zero=3&ckpt=full",
    "layers=40&hidden=5120&heads=40&kv_heads=8&ffn=13824&vocab=32000",
    "hidden=5000&heads=7",
    "experts=16&active_experts=2&expert_ffn=2048&ep=32",
    "instance=custom&gpu_mem=80&gpu_bf16=989.4&gpu_fp8=1978.9&gpu_bw=3.35&gpu_count=8&gpu_nvlink=900&gpu_net=3200&nodes=2",
    "instance=ml.p5.48xlarge&nodes=2&price=55&spot=1&save_every=100&async_save=1",
    "instance=ml.p4d.24xlarge&save_every=10&save=full",
    "instance=ml.g6.12xlarge&model=llama-3.2-3b&train=lora&save=adapter&lang=ru",
    "model=llama-3.1-70b&instance=ml.p5en.48xlarge&nodes=8&tp=8&pp=2&zero=1&lang=ru&headroom=5",
    "model=llama-3.1-8b&seq=131072&mb=1&lang=ru&fragmentation=10&workspace=2",
    "v=9&model=llama-3.1-8b&role=bad%20role&s3=nope&lang=ru",
];

fn golden_line(query: &str) -> String {
    let d = Plan::from_query(query);
    let notices: Vec<(String, String, String)> = d
        .notices
        .iter()
        .map(|n| {
            (
                n.key.clone(),
                render(Lang::En, &n.problem),
                render(Lang::Ru, &n.problem),
            )
        })
        .collect();
    let report = planner::evaluate(&d.plan);
    let chart = memory_vs_sequence(&d.plan, &[1024, 8192, 65536]);
    let chart: Vec<Vec<u64>> = chart.into_iter().map(|(_, v)| v).collect();
    serde_json::json!({
        "query": query,
        "normalised": d.plan.to_query(),
        "notices": notices,
        "report": report,
        "sequence_chart": chart,
    })
    .to_string()
}

fn golden_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden_reports.jsonl")
}

#[test]
fn fifty_reports_are_byte_identical() {
    let lines: Vec<String> = PLANS.iter().map(|q| golden_line(q)).collect();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(golden_path(), lines.join("\n") + "\n").expect("writes the golden file");
        return;
    }
    let want = std::fs::read_to_string(golden_path()).expect("tests/data/golden_reports.jsonl");
    let want: Vec<&str> = want.lines().collect();
    assert_eq!(want.len(), PLANS.len(), "one golden line per plan");
    for (i, (got, want)) in lines.iter().zip(&want).enumerate() {
        assert!(
            got == want,
            "plan {i} `{}` changed:\n got  {}\n want {}",
            PLANS[i],
            &got[..got.len().min(600)],
            &want[..want.len().min(600)]
        );
    }
}

/// The instance comparison of three plans, exactly as before.
#[test]
fn instance_comparisons_are_unchanged() {
    let path = golden_path().with_file_name("golden_comparisons.json");
    let got = serde_json::json!([
        compare_instances(&Plan::default()),
        compare_instances(&Plan::from_query("model=llama-3.1-70b&seq=16384&ckpt=full").plan),
        compare_instances(&Plan::from_query("model=mixtral-8x7b&precision=fp8&lang=ru").plan),
    ])
    .to_string();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &got).expect("writes the golden file");
        return;
    }
    let want = std::fs::read_to_string(&path).expect("tests/data/golden_comparisons.json");
    assert!(got == want.trim_end(), "instance comparisons changed");
}
