//! The page (wasm32) embeds the data files without their provenance: the
//! `source` and `notes` texts the model never reads at run time; and of the
//! memory oracle's groups in coverage.json only the `sharding=` and `stage=`
//! ones its labels read (the family and checkpointing groups are for the docs),
//! with the statistics only the docs quote written as 0. Native builds
//! (the CLI, the tests) embed them whole, so every entry keeps its source where
//! a test checks it. The files in data/ are never changed.

use std::{env, fs, path::Path};

/// coverage.json's statistics the page never reads (the docs and the
/// README quote them, from native builds): written as 0 on the page.
const UNREAD_ON_THE_PAGE: [&str; 3] = ["in_sample_median", "cv_worst", "worst"];

fn zero_unread(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => map.iter_mut().for_each(|(k, x)| {
            if UNREAD_ON_THE_PAGE.contains(&k.as_str()) {
                *x = serde_json::json!(0);
            } else {
                zero_unread(x);
            }
        }),
        serde_json::Value::Array(items) => items.iter_mut().for_each(zero_unread),
        _ => {}
    }
}

/// Keys holding provenance or commentary, not figures.
const PROVENANCE: [&str; 10] = [
    "source",
    "host_link",
    "notes",
    "caveats",
    "conventions",
    "generated_for",
    "generated",
    "interconnect",
    "local_nvme",
    "price_confidence",
];

fn strip(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            map.retain(|k, _| !PROVENANCE.contains(&k.as_str()));
            map.values_mut().for_each(strip);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
        serde_json::Value::Number(n) => {
            if let Some(x) = n.as_f64().filter(|x| x.fract() != 0.0) {
                *v = serde_json::json!(significant(x));
            }
        }
        _ => {}
    }
}

/// `x` to six significant digits: the page shows no figure to more (a
/// label's error to a tenth of a percent), and coverage.json's errors were
/// written to seventeen.
fn significant(x: f64) -> f64 {
    let digits = 6 - (x.abs().log10().floor() as i32 + 1);
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// The CSV without its last column (`source`); the first five columns hold no comma.
fn strip_csv(text: &str) -> String {
    text.lines()
        .map(|l| l.splitn(6, ',').take(5).collect::<Vec<_>>().join(","))
        .collect::<Vec<_>>()
        .join("\n")
}

fn main() {
    let out = env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let lean = env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32");
    let names = [
        "hardware.json",
        "models.json",
        "sagemaker_prices.csv",
        "coverage.json",
        "sdk.json",
        "attention_kernels.csv",
    ];
    for name in names {
        println!("cargo:rerun-if-changed=data/{name}");
        let text = fs::read_to_string(Path::new("data").join(name)).expect("data file");
        let text = match (lean, name.ends_with(".json")) {
            (false, _) => text,
            (true, true) => {
                let mut v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
                strip(&mut v);
                if let Some(serde_json::Value::Array(groups)) = v.get_mut("memory_oracle") {
                    groups.retain(|g| {
                        g[0].as_str()
                            .is_some_and(|n| n.starts_with("sharding=") || n.starts_with("stage="))
                    });
                }
                if name == "coverage.json" {
                    zero_unread(&mut v);
                }
                v.to_string()
            }
            (true, false) => strip_csv(&text),
        };
        fs::write(Path::new(&out).join(name), text).expect("OUT_DIR is writable");
    }
    let models = fs::read_to_string("data/models.json").expect("data/models.json");
    let models: serde_json::Value = serde_json::from_str(&models).expect("valid JSON");
    let code = presets_code(&models, !lean);
    fs::write(Path::new(&out).join("presets.rs"), code).expect("OUT_DIR is writable");
    let hardware = fs::read_to_string("data/hardware.json").expect("data/hardware.json");
    let hardware: serde_json::Value = serde_json::from_str(&hardware).expect("valid JSON");
    let code = hardware_code(&hardware, !lean);
    fs::write(Path::new(&out).join("hardware_data.rs"), code).expect("OUT_DIR is writable");
    let coverage =
        fs::read_to_string(Path::new(&out).join("coverage.json")).expect("written above");
    let coverage: serde_json::Value = serde_json::from_str(&coverage).expect("valid JSON");
    fs::write(
        Path::new(&out).join("coverage.fields"),
        coverage_fields(&coverage).join("\t"),
    )
    .expect("OUT_DIR is writable");
    let sdk = fs::read_to_string("data/sdk.json").expect("data/sdk.json");
    let sdk: serde_json::Value = serde_json::from_str(&sdk).expect("valid JSON");
    fs::write(Path::new(&out).join("sdk_data.rs"), sdk_code(&sdk)).expect("OUT_DIR is writable");
}

// ---- data/coverage.json as tab-separated fields --------------------------------------
//
// What the labels read, in coverage.rs's order (`Coverage::read`) without
// keys or JSON syntax: the page holds no JSON reader (#59, formats/fields.rs).
// tests/throughput_calibration.rs `shipped_coverage_reads_back_to_its_file`
// reads the fields back and compares them with the file.

/// One field: a number as serde_json writes it, `1`/`0` for a flag, a text
/// as it is (never with a tab: the fields' separator).
fn token(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Bool(b) => u8::from(*b).to_string(),
        serde_json::Value::String(s) => {
            assert!(
                !s.contains(['\t', '\n']),
                "a tab or newline in coverage.json: {s:?}"
            );
            s.clone()
        }
        serde_json::Value::Number(n) => n.to_string(),
        other => panic!("not a field: {other}"),
    }
}

fn tokens<'a>(v: &serde_json::Value, keys: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    keys.into_iter().map(|k| token(&v[k])).collect()
}

/// A count, then each item's fields.
fn counted(
    list: &serde_json::Value,
    item: impl Fn(&serde_json::Value) -> Vec<String>,
) -> Vec<String> {
    let items = list.as_array().expect("a list");
    let mut out = vec![items.len().to_string()];
    items.iter().for_each(|i| out.extend(item(i)));
    out
}

fn envelope_fields(e: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for k in ["seq", "micro_batch", "gpus", "params"] {
        out.extend([token(&e[k][0]), token(&e[k][1])]);
    }
    for k in ["precisions", "training", "zero"] {
        out.extend(counted(&e[k], |x| vec![token(x)]));
    }
    out.push(token(&e["hybrid"]));
    out.extend(counted(&e["settings"], |s| {
        let items = s.as_array().expect("a setting");
        match &items[..] {
            [lo, hi] if lo.is_number() => vec!["r".into(), token(lo), token(hi)],
            _ => [vec!["v".into()], counted(s, |x| vec![token(x)])].concat(),
        }
    }));
    out
}

fn group_stats_fields(g: &serde_json::Value) -> Vec<String> {
    let group = ["generation", "stack", "fp8", "layout", "nvl72", "moe"];
    let stats = [
        "rows",
        "models",
        "cv_median",
        "cv_worst",
        "cv_under",
        "cv_over",
        "in_sample_median",
    ];
    // (None yet in a coverage.json written before they were: `plan calibrate --coverage`.)
    let names = |k: &str| match g.get(k) {
        Some(list) => counted(list, |x| vec![token(x)]),
        None => vec!["0".into()],
    };
    [
        tokens(&g["group"], group),
        tokens(g, stats),
        envelope_fields(&g["envelope"]),
        names("gpu_types"),
        names("families"),
    ]
    .concat()
}

fn memory_stats_fields(m: &serde_json::Value) -> Vec<String> {
    let stats = ["rows", "median", "worst", "under", "over"];
    [tokens(m, stats), envelope_fields(&m["envelope"])].concat()
}

/// `[name, stats]` pairs.
fn named(list: &serde_json::Value, stats: fn(&serde_json::Value) -> Vec<String>) -> Vec<String> {
    counted(list, |pair| {
        [vec![token(&pair[0])], stats(&pair[1])].concat()
    })
}

fn coverage_fields(c: &serde_json::Value) -> Vec<String> {
    [
        counted(&c["gpus"], |g| vec![token(g)]),
        group_stats_fields(&c["throughput"]),
        counted(&c["groups"], group_stats_fields),
        named(&c["stacks"], group_stats_fields),
        memory_stats_fields(&c["memory_single_rank"]),
        named(&c["memory_torchtitan"], memory_stats_fields),
        named(&c["memory_oracle"], memory_stats_fields),
        memory_stats_fields(&c["memory_oracle_heldout"]),
        memory_stats_fields(&c["memory_gpu"]),
        memory_stats_fields(&c["memory_megatron"]),
        memory_stats_fields(&c["speed_b200"]),
    ]
    .concat()
}

// ---- data/sdk.json as a Rust static (export.rs's test `sdk_matches_the_file`) -------

/// `Type { field: "value", ... }` for each entry of a list of flat objects.
fn entries(list: &serde_json::Value, ty: &str, fields: &[&str]) -> String {
    let items: Vec<String> = list
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| {
            let f: Vec<String> = fields
                .iter()
                .map(|k| format!("{k}: {}", string(e, k)))
                .collect();
            format!("{ty} {{ {} }}", f.join(", "))
        })
        .collect();
    format!("&[{}]", items.join(", "))
}

fn sdk_code(sdk: &serde_json::Value) -> String {
    let (v2, v3) = (&sdk["v2"], &sdk["v3"]);
    let pt = ["version", "py", "cuda"];
    let smp = ["version", "py", "smp"];
    let hf = ["transformers", "pytorch", "py", "cuda"];
    format!(
        "static SDK: Sdk = Sdk {{ v2: SdkV2 {{ package: {}, pytorch: {}, smp_pytorch: {}, huggingface: {} }}, v3: SdkV3 {{ package: {}, pytorch: {}, smp_pytorch: {} }} }};\n",
        string(v2, "package"),
        entries(&v2["pytorch"], "Pt", &pt),
        entries(&v2["smp_pytorch"], "Smp", &smp),
        entries(&v2["huggingface"], "Hf", &hf),
        string(v3, "package"),
        entries(&v3["pytorch"], "Pt", &pt),
        entries(&v3["smp_pytorch"], "Smp", &smp),
    )
}

// ---- data/hardware.json as Rust statics ---------------------------------------------
//
// As the presets (above), for the same reason: 2 KB gzip of JSON reading
// on the page. hardware.rs's test `static_catalog_matches_the_file` reads
// the file again and compares.

fn opt_float(v: &serde_json::Value, key: &str) -> String {
    option(v.get(key).and_then(serde_json::Value::as_f64), float)
}

/// A GPU's generation as data/hardware.json names it; any other name stops
/// the build (hardware.rs `Generation`, each with its own fitted values).
fn generation_code(g: &serde_json::Value) -> String {
    let name = g["generation"].as_str().expect("gpu generation");
    assert!(
        ["Ampere", "Ada", "Hopper", "HopperPowerCapped", "Blackwell"].contains(&name),
        "unknown GPU generation {name:?} in data/hardware.json"
    );
    format!("Generation::{name}")
}

fn gpu_code(g: &serde_json::Value, with_source: bool) -> String {
    let arch = g["arch"].as_str().expect("gpu arch");
    format!(
        "    Gpu {{ id: {}, generation: {}, memory_gb: {}, usable_gib_approx: {}, mem_bw_tbs: {}, bf16_dense_tflops: {}, fp8_dense_tflops: {}, fp4_dense_tflops: {}, fp32_tflops: {}, fp8_tensor_cores: {}, fp4_tensor_cores: {}, fp8_tn_only: {}, nvlink_gbs_per_gpu: {}, host_link_gbs: {}, bf16_gemm_measured: {}, source: {} }},\n",
        string(g, "id"),
        generation_code(g),
        float(g["memory_gb"].as_f64().expect("memory_gb")),
        opt_float(g, "usable_gib_approx"),
        float(g["mem_bw_tbs"].as_f64().expect("mem_bw_tbs")),
        opt_float(g, "bf16_dense_tflops"),
        opt_float(g, "fp8_dense_tflops"),
        opt_float(g, "fp4_dense_tflops"),
        opt_float(g, "fp32_tflops"),
        flag(g, "fp8_tensor_cores"),
        flag(g, "fp4_tensor_cores"),
        !arch.contains("sm_10"),
        opt_float(g, "nvlink_gbs_per_gpu"),
        opt_float(g, "host_link_gbs"),
        opt_float(g, "bf16_gemm_efficiency_measured"),
        if with_source { string(g, "source") } else { "\"\"".into() },
    )
}

/// An instance's `network_gbps`: a number, "up to N", or absent.
fn network_code(n: Option<&serde_json::Value>) -> String {
    match n {
        Some(serde_json::Value::Number(x)) => {
            format!("Network::Gbps({})", float(x.as_f64().expect("a number")))
        }
        Some(serde_json::Value::String(s)) => {
            let up_to: f64 = s
                .trim_start_matches("up to ")
                .parse()
                .unwrap_or_else(|_| panic!("network_gbps {s:?}"));
            format!("Network::UpTo({})", float(up_to))
        }
        _ => "Network::Unknown".into(),
    }
}

fn nccl_code(n: &serde_json::Value) -> String {
    let f = |k: &str| float(n[k].as_f64().unwrap_or_else(|| panic!("nccl {k}")));
    format!(
        "Nccl {{ ring: {}, step_us: {}, tree: {}, level_us: {}, alltoall: {}, peer_us: {}, measured: {} }}",
        f("ring"),
        f("step_us"),
        f("tree"),
        f("level_us"),
        f("alltoall"),
        f("peer_us"),
        n["basis"].as_str() == Some("measured"),
    )
}

fn instance_code(i: &serde_json::Value, with_source: bool) -> String {
    format!(
        "    Instance {{ instance_type: {}, gpu: {}, gpu_count: {}, efa_supported: {}, multi_node_efa_training: {}, price_usd_hr: None, price_basis: PriceBasis::Unknown, price_as_of: String::new(), ec2_usd_hr: None, sold_by_plan_only: false, network: {}, nccl: {}, host_ram_gib: {}, source: {} }},\n",
        string(i, "instance_type"),
        string(i, "gpu"),
        uint(i, "gpu_count", None),
        flag(i, "efa_supported"),
        flag(i, "multi_node_efa_training"),
        network_code(i.get("network_gbps")),
        option(i.get("nccl").filter(|n| !n.is_null()), nccl_code),
        opt_float(i, "host_ram_gib"),
        if with_source { string(i, "source") } else { "\"\"".into() },
    )
}

/// `GPUS` and `INSTANCES`, data/hardware.json as `Gpu` and `Instance`
/// literals (prices come from the price table at run time).
fn hardware_code(h: &serde_json::Value, with_source: bool) -> String {
    let mut code = String::from("pub static GPUS: &[Gpu] = &[\n");
    for g in h["gpus"].as_array().expect("gpus") {
        code += &gpu_code(g, with_source);
    }
    code += "];\nstatic INSTANCES: &[Instance] = &[\n";
    for i in h["instances"].as_array().expect("instances") {
        code += &instance_code(i, with_source);
    }
    code + "];\n"
}

// ---- data/models.json as Rust statics -----------------------------------------------
//
// The presets are compiled in as Rust values, not parsed at run time: the
// JSON reader's code for them weighed 3.4 KB gzip on the page (#55's size
// budget), and no maintained crate writes a const expression of our own
// types from JSON. architecture.rs's `FromJson` reads the same file in a
// test (`static_presets_match_the_file`), so the two cannot drift apart.

/// `swiglu` -> `Swiglu`, `per_head` -> `PerHead`, `llama3` -> `Llama3`: the
/// variant a key names (a key without one fails to compile).
fn variant(key: &str) -> String {
    key.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn uint(v: &serde_json::Value, key: &str, default: Option<u64>) -> u64 {
    v.get(key)
        .and_then(serde_json::Value::as_u64)
        .or(default)
        .unwrap_or_else(|| panic!("models.json: `{key}` missing in {v}"))
}

fn flag(v: &serde_json::Value, key: &str) -> bool {
    v.get(key)
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// A float literal Rust reads back as the same f64.
fn float(x: f64) -> String {
    format!("{x:?}")
}

fn option<T>(x: Option<T>, f: impl Fn(T) -> String) -> String {
    x.map_or("None".into(), |x| format!("Some({})", f(x)))
}

fn string(v: &serde_json::Value, key: &str) -> String {
    format!(
        "{:?}",
        v.get(key).and_then(serde_json::Value::as_str).unwrap_or("")
    )
}

fn moe_code(m: &serde_json::Value) -> String {
    format!(
        "Moe {{ experts: {}, active: {}, shared: {}, expert_ffn: {}, router_bias: {}, dense_layers: {} }}",
        uint(m, "experts", None),
        uint(m, "active", None),
        uint(m, "shared", Some(0)),
        uint(m, "expert_ffn", None),
        flag(m, "router_bias"),
        uint(m, "dense_layers", Some(0)),
    )
}

fn mla_code(m: &serde_json::Value) -> String {
    format!(
        "Mla {{ q_lora_rank: {}, kv_lora_rank: {}, qk_nope_dim: {}, qk_rope_dim: {}, v_head_dim: {} }}",
        uint(m, "q_lora_rank", Some(0)),
        uint(m, "kv_lora_rank", None),
        uint(m, "qk_nope_dim", None),
        uint(m, "qk_rope_dim", None),
        uint(m, "v_head_dim", None),
    )
}

fn scaling_code(s: &serde_json::Value) -> String {
    let num = |k: &str| option(s.get(k).and_then(serde_json::Value::as_f64), float);
    format!(
        "crate::model::architecture::rope::RopeScaling {{ kind: crate::model::architecture::rope::RopeKind::{}, factor: {}, original_context: {}, low_freq_factor: {}, high_freq_factor: {}, beta_fast: {}, beta_slow: {}, mscale: {}, mscale_all_dim: {}, truncate: {} }}",
        variant(s["kind"].as_str().expect("scaling kind")),
        float(s["factor"].as_f64().expect("scaling factor")),
        option(s.get("original_context").and_then(serde_json::Value::as_u64), |n| n.to_string()),
        num("low_freq_factor"),
        num("high_freq_factor"),
        num("beta_fast"),
        num("beta_slow"),
        num("mscale"),
        num("mscale_all_dim"),
        option(s.get("truncate").and_then(serde_json::Value::as_bool), |b| b.to_string()),
    )
}

fn rope_code(r: Option<&serde_json::Value>) -> String {
    match r {
        None => "crate::model::architecture::rope::Rope { theta: 10_000.0, scaling: None }".into(),
        Some(r) => format!(
            "crate::model::architecture::rope::Rope {{ theta: {}, scaling: {} }}",
            float(r["theta"].as_f64().expect("rope theta")),
            option(r.get("scaling").filter(|s| !s.is_null()), scaling_code),
        ),
    }
}

fn architecture_code(p: &serde_json::Value) -> String {
    let u = |k: &str| uint(p, k, None);
    let d = |k: &str, n: u64| uint(p, k, Some(n));
    format!(
        "Architecture {{ layers: {}, hidden: {}, heads: {}, kv_heads: {}, head_dim: {}, ffn: {}, vocab: {}, tied: {}, mlp: Mlp::{}, qkv_bias: {}, o_bias: {}, mlp_bias: {}, qk_norm: QkNorm::{}, norms_per_layer: {}, attn_sinks: {}, max_context: {}, sliding_window: {}, local_layers: {}, chunked: {}, moe: {}, mla: {}, mtp_layers: {}, rope: {} }}",
        u("layers"),
        u("hidden"),
        u("heads"),
        u("kv_heads"),
        u("head_dim"),
        u("ffn"),
        u("vocab"),
        p["tied"].as_bool().expect("tied"),
        variant(p["mlp"].as_str().expect("mlp")),
        flag(p, "qkv_bias"),
        flag(p, "o_bias"),
        flag(p, "mlp_bias"),
        variant(p.get("qk_norm").and_then(serde_json::Value::as_str).unwrap_or("none")),
        d("norms_per_layer", 2),
        flag(p, "attn_sinks"),
        d("max_context", 0),
        d("sliding_window", 0),
        d("local_layers", 0),
        flag(p, "chunked"),
        option(p.get("moe").filter(|m| !m.is_null()), moe_code),
        option(p.get("mla").filter(|m| !m.is_null()), mla_code),
        d("mtp_layers", 0),
        rope_code(p.get("rope")),
    )
}

/// `PRESETS`, every preset of data/models.json as a `Preset` literal; the
/// page's copy without their `source` (`with_source` false).
fn presets_code(models: &serde_json::Value, with_source: bool) -> String {
    let mut code = String::from("pub static PRESETS: &[Preset] = &[\n");
    for p in models.as_array().expect("models.json is an array") {
        let source = if with_source {
            string(p, "source")
        } else {
            "\"\"".into()
        };
        code += &format!(
            "    Preset {{ id: {}, name: {}, hub: {}, source: {}, arch: {} }},\n",
            string(p, "id"),
            string(p, "name"),
            string(p, "hub"),
            source,
            architecture_code(p),
        );
    }
    code + "];\n"
}
