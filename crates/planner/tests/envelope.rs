//! #36: a label promises only what its checks covered. Every input key of
//! the URL is perturbed on plans the checks vouch for (published runs inside
//! their own group's envelope, with a ±): where the new value is one the
//! group's runs never ran and the figure moves by more than the label's ±,
//! the label must change. Keys that move no figure must move none.

use planner::model::plan::{
    Attention, Loss, Optimizer, Precision, SaveKind, Stack, Training, KEYS,
};
use planner::{evaluate, Plan, Report};

/// Keys that move neither memory nor speed (launch, cost and page state).
const NO_FIGURE: &[&str] = &[
    "v",
    "tokens",
    // PEFT's scale: the export carries it, no figure reads it.
    "lora_alpha",
    "spot",
    "price",
    "save_every",
    "save",
    "async_save",
    "save_bw",
    "fail_rate",
    "restart_min",
    "spot_rate",
    "recovery",
    "headroom",
    // The memory allowances: the labels vouch for the allocated peak, which
    // the checks measure; the verdict adds these apart (#55).
    "ws_gib",
    "frag",
    "role",
    "s3",
    "job",
    "entry",
    "hf_model",
    "training_plan",
    "lock",
    "budget",
    "deadline",
    "lang",
    "vs",
];

/// Values to try for `key` beside the base plan's `current`.
fn perturbations(key: &str, current: Option<&str>) -> Vec<String> {
    let split = |s: String| s.split(", ").map(str::to_string).collect::<Vec<_>>();
    let listed = match key {
        "precision" => split(Precision::keys()),
        "train" => split(Training::keys()),
        "optimizer" => split(Optimizer::keys()),
        "attn" => split(Attention::keys()),
        "loss" => split(Loss::keys()),
        "stack" | "impl" => split(Stack::keys()),
        "save" => split(SaveKind::keys()),
        "mlp" => vec!["swiglu".into(), "geglu".into(), "gelu".into()],
        "ckpt" => ["none", "selective", "full", "op", "0.5"]
            .map(String::from)
            .to_vec(),
        "recompute_modules" => ["core_attn", "mlp", "moe_act,layernorm"]
            .map(String::from)
            .to_vec(),
        "model" => ["llama-3.1-8b", "qwen2.5-72b", "mixtral-8x7b", "gemma-2-9b"]
            .map(String::from)
            .to_vec(),
        "instance" => [
            "ml.p5.48xlarge",
            "ml.p4de.24xlarge",
            "ml.p6-b200.48xlarge",
            "ml.g6e.48xlarge",
        ]
        .map(String::from)
        .to_vec(),
        "lang" => vec!["en".into(), "ru".into()],
        "lock" => vec!["instance,precision".into()],
        "role" => vec!["arn:aws:iam::123456789012:role/Train".into()],
        "s3" => vec!["s3://bucket/runs".into()],
        "job" => vec!["job-1".into()],
        "entry" => vec!["torchtitan/train.py".into()],
        "hf_model" => vec!["meta-llama/Llama-3.1-8B".into()],
        "training_plan" => {
            vec!["arn:aws:sagemaker:us-east-1:123456789012:training-plan/gb200-405b".into()]
        }
        "vs" => vec!["tp=2".into()],
        _ => Vec::new(),
    };
    if !listed.is_empty() {
        return listed;
    }
    let n = current.and_then(|c| c.parse::<f64>().ok()).unwrap_or(1.0);
    let fmt = |x: f64| {
        if x.fract() == 0.0 {
            format!("{}", x as i64)
        } else {
            format!("{x}")
        }
    };
    let mut v: Vec<String> = [0.0, 1.0, n + 1.0, 2.0 * n, (n / 2.0).floor(), 10.0 * n]
        .into_iter()
        .map(fmt)
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The value of `key` in a plan's link, if it writes one.
fn value_of(query: &str, key: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.to_string())
}

/// The model's shape keys: a preset's link writes none, so they are read
/// from the resolved model.
const SHAPE: &[&str] = &[
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "ffn",
    "vocab",
    "tied",
    "mlp",
    "experts",
    "active_experts",
    "expert_ffn",
];

/// What a plan runs for `key`: its link's value, or its model's for a shape key.
fn effective(plan: &Plan, key: &str) -> Option<String> {
    if !SHAPE.contains(&key) {
        return value_of(&plan.to_query(), key);
    }
    let a = planner::model::resolve::resolve(plan).0.arch;
    let moe = a.moe;
    Some(match key {
        "layers" => a.layers.to_string(),
        "hidden" => a.hidden.to_string(),
        "heads" => a.heads.to_string(),
        "kv_heads" => a.kv_heads.to_string(),
        "head_dim" => a.head_dim.to_string(),
        "ffn" => a.ffn.to_string(),
        "vocab" => a.vocab.to_string(),
        "tied" => (a.tied as u8).to_string(),
        "mlp" => a.mlp.key().to_string(),
        "experts" => moe.map_or(1, |m| m.experts as u64).to_string(),
        "active_experts" => moe.map_or(1, |m| m.active as u64).to_string(),
        _ => moe.map_or(0, |m| m.expert_ffn).to_string(),
    })
}

/// `plan` with `key` set to `value` (None: not written), if that is a valid
/// plan.
fn with_value(plan: &Plan, key: &str, value: &Option<String>) -> Option<Plan> {
    let mut pairs: Vec<String> = plan
        .to_query()
        .split('&')
        .filter(|p| !p.starts_with(&format!("{key}=")))
        .map(str::to_string)
        .collect();
    if let Some(v) = value {
        pairs.push(format!("{key}={v}"));
    }
    let d = Plan::from_query(&pairs.join("&"));
    d.notices.is_empty().then_some(d.plan)
}

/// The runs' values of `key` nearest `value`: all of a choice's, the nearer
/// end of a number's range; None when `value` is among or between them.
fn nearest_ran(runs: &[Plan], key: &str, value: &Option<String>) -> Option<Vec<Option<String>>> {
    let mut seen: Vec<Option<String>> = runs.iter().map(|p| effective(p, key)).collect();
    seen.sort();
    seen.dedup();
    if seen.contains(value) {
        return None;
    }
    let nums: Vec<f64> = seen
        .iter()
        .flatten()
        .filter_map(|s| s.parse().ok())
        .collect();
    match value.as_deref().map(str::parse::<f64>) {
        Some(Ok(x)) if nums.len() == seen.len() && !nums.is_empty() => {
            let lo = nums.iter().copied().fold(f64::MAX, f64::min);
            let hi = nums.iter().copied().fold(f64::MIN, f64::max);
            if x >= lo && x <= hi {
                return None;
            }
            let end = if x < lo { lo } else { hi };
            let end = seen
                .iter()
                .find(|s| s.as_deref().and_then(|v| v.parse::<f64>().ok()) == Some(end))
                .cloned()
                .flatten();
            Some(vec![end])
        }
        _ => Some(seen),
    }
}

fn label(r: &Report, memory: bool) -> (String, Option<u64>, String) {
    let a = if memory {
        &r.memory.accuracy
    } else {
        &r.throughput_accuracy
    };
    (
        a.level.to_string(),
        a.expected_error.map(|e| (e * 1e6) as u64),
        a.note_english(),
    )
}

/// Every key of `base` perturbed: a figure that a value its checks'
/// runs (`runs`) never ran moves beyond the ± of everything they ran
/// (the nearest end of a number's range, every value of a choice, the rest
/// of the plan kept) changes the label; a key of `NO_FIGURE` moves nothing.
/// Returns the failures.
fn perturb(base: &str, runs: &[Plan], memory: bool) -> Vec<String> {
    let plan = Plan::from_query(base).plan;
    let r0 = evaluate(&plan);
    let figure = |p: &Plan| {
        let r = evaluate(p);
        r.errors.is_empty().then(|| {
            if memory {
                r.memory.allocated_peak_bytes as f64
            } else {
                r.throughput.tokens_per_second_per_gpu
            }
        })
    };
    let f0 = figure(&plan).expect("a valid base");
    let l0 = label(&r0, memory);
    let tolerance = if memory {
        r0.memory.accuracy.expected_error
    } else {
        r0.throughput_accuracy.expected_error
    }
    .expect("a base plan with a ±");
    let query = plan.to_query();
    let mut failures = Vec::new();
    for key in KEYS {
        for value in perturbations(key, value_of(&query, key).as_deref()) {
            let d = Plan::from_query(&format!("{query}&{key}={value}"));
            if !d.notices.is_empty() || d.plan == plan {
                continue;
            }
            let Some(f) = figure(&d.plan) else { continue };
            if NO_FIGURE.contains(key) {
                assert_eq!(f, f0, "{key}={value} moves the figure of {base}");
                continue;
            }
            let Some(nearest) = nearest_ran(runs, key, &effective(&d.plan, key)) else {
                continue;
            };
            let covered = nearest.iter().any(|v| {
                with_value(&d.plan, key, v)
                    .and_then(|p| figure(&p))
                    .is_some_and(|g| (f / g - 1.0).abs() <= tolerance)
            });
            if !covered && label(&evaluate(&d.plan), memory) == l0 {
                failures.push(format!(
                    "{key}={value}: {:+.1}% from the base, beyond ±{:.1}% of what its runs ran, label unchanged ({}) on {base}",
                    100.0 * (f / f0 - 1.0),
                    100.0 * tolerance,
                    l0.0
                ));
            }
        }
    }
    failures
}

/// Speed: one published run of every group that quotes a ±, perturbed key
/// by key against its group's runs.
#[test]
fn every_key_moves_the_speed_label_when_it_leaves_the_checks() {
    use planner::accuracy::coverage::{shipped, Group};
    let cases = planner::accuracy::calibration::cases();
    let mut bases = 0;
    let mut failures = Vec::new();
    for g in shipped().groups.iter().filter(|g| g.quotes_an_error()) {
        let rows: Vec<&planner::accuracy::calibration::Case> = cases
            .iter()
            .filter(|c| Group::of_case(c) == g.group)
            .collect();
        let links: Vec<String> = rows.iter().map(|c| c.link()).collect();
        let runs: Vec<Plan> = links.iter().map(|q| Plan::from_query(q).plan).collect();
        // The first run the page itself labels with the group's ±.
        let Some(base) = links.iter().find(|q| {
            let r = evaluate(&Plan::from_query(q).plan);
            r.errors.is_empty() && r.throughput_accuracy.expected_error.is_some()
        }) else {
            continue;
        };
        bases += 1;
        failures.extend(perturb(base, &runs, false));
    }
    assert!(bases >= 5, "{bases} groups with a calibrated run");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every key of the URL is one the envelope reads, one the check groups
/// read (size, GPUs, hardware, layout), or one that moves no figure.
#[test]
fn every_key_has_a_place() {
    let elsewhere = [
        "model",
        "params_b",
        "seq",
        "mb",
        "precision",
        "train",
        // DPO plans have their own memory check (the oracle's `stage=dpo`
        // group) and a derived speed label (evaluate.rs); GRPO plans, and
        // so their rollout keys, are labelled derived in both.
        "stage",
        "generations",
        "completion",
        "completion_mean",
        "beta",
        "gen_share",
        "gen_gpus",
        "gen_tp",
        "gen_pp",
        "sleep",
        "zero",
        "shard",
        "stack",
        "impl",
        "instance",
        "gpu_mem",
        "gpu_bf16",
        "gpu_fp8",
        "gpu_bw",
        "gpu_count",
        "gpu_nvlink",
        "gpu_net",
        "nodes",
    ];
    // Read together as one setting.
    let pairs = ["pp_first", "pp_last"];
    let settings = planner::accuracy::envelope::setting_keys();
    assert!(settings.contains(&"pp_ends"));
    for key in KEYS {
        assert!(
            settings.contains(key)
                || elsewhere.contains(key)
                || NO_FIGURE.contains(key)
                || pairs.contains(key),
            "{key} has no place in the labels' envelopes"
        );
    }
}

/// Memory: torchtitan's published data-parallel runs (their `max_reserved`),
/// the memory check with the most runs whose plans are links, perturbed key
/// by key against those runs.
#[test]
fn every_key_moves_the_memory_label_when_it_leaves_the_checks() {
    use planner::accuracy::memory_checks::{torchtitan_layout, torchtitan_memory_rows};
    let runs: Vec<Plan> = torchtitan_memory_rows()
        .iter()
        .filter(|(layout, _)| *layout == "data parallel")
        .filter_map(|(_, row)| planner::accuracy::published::case_of(&row.label))
        .filter(|c| torchtitan_layout(&c.layout) == "data parallel")
        .map(|c| Plan::from_query(&c.link()).plan)
        .collect();
    assert_eq!(runs.len(), 19);
    let base = runs
        .iter()
        .map(|p| p.to_query())
        .find(|q| {
            let r = evaluate(&Plan::from_query(q).plan);
            r.errors.is_empty() && r.memory.accuracy.expected_error.is_some()
        })
        .expect("a run its own label quotes a ± for");
    let failures = perturb(&base, &runs, true);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
