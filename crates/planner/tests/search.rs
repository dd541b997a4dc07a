//! The auto-plan against brute force, and its locks.

use planner::estimate::search::{search, Search};
use planner::model::plan::{Plan, Precision};

fn front(r: &planner::estimate::search::SearchResult) -> Vec<(String, u64, u64)> {
    let mut v: Vec<_> = r
        .pareto
        .iter()
        .map(|c| {
            (
                c.query.clone(),
                (c.hours * 1e9) as u64,
                c.usd.map_or(u64::MAX, |u| (u * 1e6) as u64),
            )
        })
        .collect();
    v.sort();
    v
}

/// On a space small enough to enumerate, the pruned search returns exactly
/// the Pareto front of an exhaustive evaluation of every candidate.
#[test]
fn pruned_search_equals_brute_force() {
    for q in [
        "model=llama-3.1-8b&instance=ml.p5.48xlarge&price=55&lock=instance",
        "model=qwen2.5-14b&seq=32768&instance=ml.p4de.24xlarge&price=40&lock=instance,checkpointing&ckpt=full",
        "model=llama-3.1-70b&instance=ml.p5en.48xlarge&price=63.3&lock=instance&tokens=1e9",
        // One 32.9 GB GPU (27.2 GiB budget), 4 sequences a step, ZeRO-0:
        // micro-batch 2 (27.4 GiB, gradients accumulated) overflows, 4 in one
        // micro-batch (27.0 GiB) fits: the bound must not stop at 2.
        "model=llama-3.2-1b&seq=8192&mb=1&ga=4&ckpt=full&loss=fused&instance=custom&gpu_mem=32.9&gpu_count=1&nodes=1&lock=instance,precision,nodes",
        // Megatron: pipelines, context parallelism and its three recomputations.
        "model=llama-3.1-70b&seq=32768&impl=megatron&instance=ml.p5.48xlarge&price=55&lock=instance,nodes&nodes=4",
    ] {
        let plan = Plan::from_query(q).plan;
        let fast = Search::new(&plan).finish();
        let mut brute = Search::new(&plan);
        brute.use_bounds = false;
        let slow = brute.finish();
        assert_eq!(fast.candidates, slow.candidates);
        assert!(fast.evaluated < slow.evaluated, "{q}: bounds prune something");
        assert!(!slow.pareto.is_empty(), "{q}: something fits");
        assert_eq!(front(&fast), front(&slow), "{q}");
        let fewest = |r: &planner::estimate::search::SearchResult| {
            r.fewest_gpus.as_ref().map(|c| (c.gpus, c.query.clone()))
        };
        assert_eq!(fewest(&fast), fewest(&slow), "{q}");
        assert!(fast.fitting <= slow.fitting);
        println!("{q}: {} candidates, {} evaluated with bounds vs {} without, front of {}", fast.candidates, fast.evaluated, slow.evaluated, fast.pareto.len());
    }
}

/// The candidate's plan, reopened from its link: the same peak and time.
fn reopens_as_offered(c: &planner::estimate::search::Candidate) -> planner::Report {
    let rep = planner::evaluate(&Plan::from_query(&c.query).plan);
    let peak = rep.memory.peak_bytes_per_gpu;
    assert_eq!(peak, c.peak_bytes_per_gpu, "{}", c.query);
    let hours = rep.time.total_hours;
    assert!((hours - c.hours).abs() / c.hours < 1e-9, "{}", c.query);
    rep
}

#[test]
fn locks_are_respected() {
    let r = search(
        &Plan::from_query(
            "precision=bf16&instance=ml.p6-b200.48xlarge&lock=precision,instance&price=100",
        )
        .plan,
    );
    assert!(!r.pareto.is_empty());
    for c in &r.pareto {
        assert_eq!(c.precision, planner::model::plan::Precision::Bf16);
        assert_eq!(c.instance, "ml.p6-b200.48xlarge");
        let p = Plan::from_query(&c.query).plan;
        assert_eq!(p.numerics.precision, Precision::Bf16);
    }
    let r = search(&Plan::from_query("nodes=2&mb=1&lock=nodes,mb").plan);
    assert!(r.pareto.iter().all(|c| c.nodes == 2 && c.micro_batch == 1));
}

/// Every plan the search returns fits when evaluated on its own, keeps the
/// user's global batch, and the page shows the same time.
#[test]
fn results_fit_and_keep_the_global_batch() {
    let plan =
        Plan::from_query("model=llama-3.1-8b&seq=8192&mb=1&ga=8&price=60&impl=megatron").plan;
    let user = planner::evaluate(&plan);
    let r = search(&plan);
    assert!(
        r.candidates >= 100_000,
        "a full Megatron search covers at least 100,000 candidates: {}",
        r.candidates
    );
    for c in offered(&r) {
        // The search reuses a layout's peak across instance types.
        let rep = reopens_as_offered(c);
        assert!(rep.fits, "{} fits", c.query);
        assert_eq!(
            rep.global_batch_tokens, user.global_batch_tokens,
            "{}",
            c.query
        );
    }
    // Budget and deadline picks.
    let cheapest = r.cheapest.clone().unwrap();
    let mut limited = plan.clone();
    limited.auto.budget_usd = Some(cheapest.usd.unwrap() * 1.5);
    limited.auto.deadline_hours = Some(cheapest.hours * 0.5);
    let with_budget = search(&limited);
    let b = with_budget.best_under_budget.unwrap();
    assert!(b.usd.unwrap() <= cheapest.usd.unwrap() * 1.5 && b.hours <= cheapest.hours);
    let d = with_budget.best_under_deadline.unwrap();
    assert!(d.hours <= cheapest.hours * 0.5);
}

/// #26: for an MoE model the search also chooses the expert-parallel degree
/// (one that divides the experts and comes out of DP x CP). DeepSeek-V3 on
/// 256 B200 (32 x p6-b200 locked) gets a plan that fits, with experts spread
/// over several GPUs, and reopening it gives the same plan and figures.
#[test]
fn moe_search_chooses_expert_parallelism() {
    let q = "model=deepseek-v3&impl=megatron&instance=ml.p6-b200.48xlarge&nodes=32&lock=instance,nodes&seq=4096&ga=256";
    let r = search(&Plan::from_query(q).plan);
    let best = r.fastest.expect("a DeepSeek-V3 plan fits on 256 B200");
    assert!(best.ep > 1, "{}", best.why.english());
    assert_eq!(256 % best.ep, 0);
    let rep = planner::evaluate(&Plan::from_query(&best.query).plan);
    assert!(rep.fits && rep.errors.is_empty(), "{}", best.query);
    assert_eq!(rep.layout.ep, best.ep);
    assert!((rep.time.total_hours - best.hours).abs() / best.hours < 1e-9);
    // A dense model keeps EP 1 and searches no EP axis.
    let dense = search(&Plan::from_query("model=llama-3.1-8b&lock=instance").plan);
    assert!(dense.pareto.iter().all(|c| c.ep == 1));
}

/// The search computes a layout's memory once for every instance type with
/// as many GPUs per node: that holds only while memory reads no hardware.
/// The same BF16 plan peaks at the same bytes on every 8-GPU instance.
#[test]
fn memory_does_not_depend_on_the_instance_type() {
    let eight: Vec<_> = planner::model::hardware::instances()
        .iter()
        .filter(|i| i.gpu_count == 8 && i.multi_node_efa_training)
        .collect();
    assert!(
        eight.len() >= 5,
        "{} 8-GPU training instance types",
        eight.len()
    );
    let peak = |instance: &str| {
        let q = format!(
            "model=llama-3.1-70b&precision=bf16&zero=3&tp=2&nodes=2&ckpt=full&instance={instance}"
        );
        planner::evaluate(&Plan::from_query(&q).plan)
            .memory
            .peak_bytes_per_gpu
    };
    let first = peak(eight[0].instance_type);
    for i in &eight {
        assert_eq!(peak(i.instance_type), first, "{}", i.instance_type);
    }
}

/// Where the price is unknown every plan costs "unknown": the best plan
/// under a deadline is then the fastest one that meets it, not whichever
/// came first (ml.p5e.48xlarge has no listed SageMaker price).
#[test]
fn unknown_prices_pick_the_fastest_under_a_deadline() {
    let q = "model=llama-3.1-8b&instance=ml.p5e.48xlarge&lock=instance&deadline=1000";
    let r = search(&Plan::from_query(q).plan);
    let fastest = r.fastest.expect("a plan fits");
    assert!(fastest.usd.is_none(), "the price is unknown");
    let best = r
        .best_under_deadline
        .expect("the fastest meets the deadline");
    assert_eq!(best.query, fastest.query);
}

/// A plan on the user's own GPU searches that GPU: the page used to say
/// "searched 0 candidates" for every custom instance, because the search
/// looked the custom type up in the SageMaker catalogue. Two 24 GB cards
/// (an RTX 3090 pair), Llama-3.1-8B LoRA at 2,048 tokens: every plan found
/// stays on the custom GPU, and evaluated on its own it fits and has no
/// error.
#[test]
fn a_custom_gpu_searches_its_own_hardware() {
    let q = "model=llama-3.1-8b&train=lora&lora_rank=64&instance=custom&gpu_mem=24&gpu_bf16=71&gpu_fp8=0&gpu_bw=0.936&gpu_count=2&seq=2048&mb=4&zero=3&ckpt=full&price=1.5";
    let r = search(&Plan::from_query(q).plan);
    assert!(
        r.candidates > 0 && !r.pareto.is_empty(),
        "{} candidates",
        r.candidates
    );
    for c in offered(&r) {
        assert_eq!(c.instance, "custom");
        let report = planner::evaluate(&Plan::from_query(&c.query).plan);
        assert!(report.fits && report.errors.is_empty(), "{}", c.query);
        assert_eq!(report.gpu, "Custom GPU");
    }
}

/// The error `code` of the plan `q`, where it has one: its field and fix.
type Flagged = (Option<&'static str>, Option<(&'static str, String)>);
fn error_of(q: &str, code: &str) -> Option<Flagged> {
    planner::evaluate(&Plan::from_query(q).plan)
        .errors
        .into_iter()
        .find(|e| e.code() == code)
        .map(|e| (e.key, e.fix))
}

/// The export note `code` of the plan `q` (what the launch bundle does not
/// run, #55), where it has one: its field and fix; never an error.
fn note_of(q: &str, code: &str) -> Option<Flagged> {
    let r = planner::evaluate(&Plan::from_query(q).plan);
    assert!(
        r.errors.iter().all(|e| e.code() != code),
        "{q}: {code} is not an error"
    );
    r.export_notes
        .into_iter()
        .find(|e| e.code() == code)
        .map(|e| (e.key, e.fix))
}

/// The plans a search offers: its Pareto front and its fastest.
fn offered(
    r: &planner::estimate::search::SearchResult,
) -> impl Iterator<Item = &planner::estimate::search::Candidate> {
    r.pareto.iter().chain(r.fastest.iter())
}

fn fix(key: &'static str, value: &str) -> Option<(&'static str, String)> {
    Some((key, value.to_string()))
}

/// The exported train.py runs LoRA and QLoRA in BF16 only (it refuses FP8
/// and FP4 with adapters), so the planner estimates that plan with a note
/// on its export, with the fix (#55), and the auto-plan never proposes it;
/// Megatron plans keep their low precisions.
#[test]
fn adapters_never_train_in_low_precision_on_the_hf_stack() {
    let code = "low_precision_adapters";
    assert_eq!(
        note_of("train=lora&precision=fp8", code),
        Some((Some("precision"), fix("precision", "bf16")))
    );
    let r = search(&Plan::from_query("model=llama-3.1-8b&train=lora&price=60").plan);
    assert!(r.fastest.is_some());
    assert!(offered(&r).all(|c| c.precision == planner::model::plan::Precision::Bf16));
    assert_eq!(
        note_of("train=lora&precision=fp8&impl=megatron", code),
        None
    );
}

/// Dense FP8 is twice dense BF16 on every NVIDIA GPU with FP8 tensor cores
/// (H100: 989 and 1,979 TFLOP/s). A custom GPU given an RTX 3090's BF16
/// (71) beside the form's H100 FP8 default is an error on `gpu_fp8`, fixed
/// to 142; without it the auto-plan chose FP8 there, 28 times faster.
#[test]
fn a_custom_fp8_rate_above_twice_bf16_is_an_error() {
    let base = "model=llama-3.1-8b&instance=custom&gpu_mem=24&gpu_count=2";
    let code = "custom_fp8_above_twice_bf16";
    assert_eq!(
        error_of(&format!("{base}&gpu_bf16=71"), code),
        Some((Some("gpu_fp8"), fix("gpu_fp8", "142")))
    );
    for ok in [
        "gpu_bf16=989",
        "gpu_bf16=71&gpu_fp8=142",
        "gpu_bf16=71&gpu_fp8=0",
    ] {
        assert_eq!(error_of(&format!("{base}&{ok}"), code), None, "{ok}");
    }
}

/// The exported train.py runs QLoRA unsharded on several GPUs (it refuses
/// ZeRO/FSDP with bitsandbytes' 4-bit weights), so a sharded HF QLoRA plan
/// (FSDP + QLoRA runs: Answer.AI's) is estimated with a note on the export
/// and the fix zero=0, one GPU has none, and the auto-plan proposes zero=0
/// only.
#[test]
fn hf_qlora_is_planned_unsharded() {
    let q = "model=qwen2.5-7b&train=qlora";
    let code = "qlora_sharded";
    assert_eq!(
        note_of(&format!("{q}&zero=3&instance=ml.p4d.24xlarge"), code),
        Some((Some("zero"), fix("zero", "0")))
    );
    assert_eq!(
        note_of(&format!("{q}&zero=0&instance=ml.p4d.24xlarge"), code),
        None
    );
    assert_eq!(
        note_of(&format!("{q}&zero=3&instance=ml.g5.2xlarge"), code),
        None
    );
    let r = search(&Plan::from_query(&format!("{q}&price=40")).plan);
    assert!(r.fastest.is_some());
    for c in offered(&r) {
        assert_eq!(c.zero, 0, "{}", c.query);
    }
}

/// The bundled train.py runs data parallelism and tensor parallelism
/// (DTensor TP under FSDP2, #37): an HF plan with pipeline, context or expert
/// parallelism is estimated with a note on the export (#55) on the first
/// such field with the fix stack=megatron; TP has a note only where
/// train.py refuses it (a layer
/// that is not Llama-style, adapters, FP8/FP4, DDP), each with its fix. The
/// auto-plan offers HF plans with TP where they win, and none it refuses. A
/// user's own entry script is not judged.
#[test]
fn the_bundled_hf_stack_is_planned_data_and_tensor_parallel() {
    let code = |q: &str| note_of(q, "hf_model_parallel");
    let megatron = fix("stack", "megatron");
    assert_eq!(code("model=llama-3.1-70b&tp=2"), None);
    assert_eq!(
        code("model=llama-3.1-70b&pp=2&seq=32768&cp=2"),
        Some((Some("pp"), megatron.clone()))
    );
    assert_eq!(
        code("model=mixtral-8x7b&ep=8"),
        Some((Some("ep"), megatron.clone()))
    );
    assert_eq!(code("model=llama-3.1-70b&pp=2&impl=megatron"), None);
    assert_eq!(
        code("model=llama-3.1-70b&pp=2&entry=src/train_smp.py"),
        None
    );
    let refusals = [
        ("model=qwen3-8b&tp=2", "hf_tp_layer", "tp", megatron),
        (
            "model=llama-3.1-70b&tp=2&train=lora",
            "hf_tp_adapters",
            "train",
            fix("tp", "1"),
        ),
        (
            "model=llama-3.1-70b&tp=2&precision=fp8",
            "hf_tp_low_precision",
            "precision",
            fix("precision", "bf16"),
        ),
        (
            "model=llama-3.1-70b&tp=2&zero=1",
            "hf_tp_needs_fsdp",
            "zero",
            fix("zero", "3"),
        ),
    ];
    for (q, c, key, want) in refusals {
        assert_eq!(note_of(q, c), Some((Some(key), want)), "{q}");
    }
    let fine = planner::evaluate(&Plan::from_query("model=llama-3.1-70b&tp=4&sp=1&nodes=4").plan);
    assert!(fine.errors.is_empty(), "{:?}", fine.errors);
    let r = search(&Plan::from_query("model=llama-3.1-70b&seq=32768&price=60").plan);
    assert!(r.fastest.is_some());
    for c in offered(&r) {
        assert_eq!((c.pp, c.cp, c.ep), (1, 1, 1), "{}", c.query);
        let rep = planner::evaluate(&Plan::from_query(&c.query).plan);
        assert!(rep.errors.is_empty(), "{}: {:?}", c.query, rep.errors);
    }
    // 70B at 32K tokens: TP 2-8 inside the node is among the best plans.
    assert!(offered(&r).any(|c| c.tp > 1), "no TP offered");
}

/// torchtitan splits the layers over its pipeline stages as evenly as they
/// go (`generate_split_points`): Qwen2.5-7B's 28 layers run on 8 stages
/// (4 or 3 each; the planner holds 4 on every rank), where Megatron splits neither 28 nor 28 + 2 slots by 8. The
/// resolver took the plan; the search split every stack as Megatron does
/// and offered nothing (#34: the rule was written twice). Now it offers the
/// plan, and it reopens with the same peak and time.
#[test]
fn torchtitan_pipelines_are_searched_as_torchtitan_splits_them() {
    let q = "model=qwen2.5-7b&stack=torchtitan&seq=8192&mb=1&ga=16&ckpt=full&zero=3&pp=8\
             &instance=ml.p5.48xlarge&nodes=2&price=55\
             &lock=instance,nodes,precision,checkpointing,parallelism";
    let plan = Plan::from_query(q).plan;
    assert!(
        planner::evaluate(&plan).errors.is_empty(),
        "{q}: the resolver runs it"
    );
    let r = search(&plan);
    let piped: Vec<_> = offered(&r).filter(|c| c.pp == 8).collect();
    assert!(!piped.is_empty(), "{q}: the pipeline plan is offered");
    for c in piped {
        reopens_as_offered(c);
    }
}

/// torchtitan puts at least one layer on each stage: a 4-layer model on 8
/// stages is an error whose fix, 4 stages of one layer, runs; the search
/// offers no such plan either (it reads the same `rules::pipeline_stages`).
#[test]
fn torchtitan_needs_a_layer_per_stage() {
    let model = "model=custom&layers=4&hidden=1024&heads=8&kv_heads=8&ffn=4096&vocab=32000";
    let q = |pp: u64| format!("{model}&stack=torchtitan&pp={pp}");
    let r = planner::evaluate(&Plan::from_query(&q(8)).plan);
    let e = r.errors.iter().find(|e| e.code() == "pp_exceeds_layers");
    let fix = e.and_then(|e| e.fix.clone());
    assert_eq!(fix, Some(("pp", "4".to_string())), "{:?}", r.errors);
    assert!(planner::evaluate(&Plan::from_query(&q(4)).plan)
        .errors
        .is_empty());
}

/// #59: the page's auto-plan comes from the worker as `wire` text; put back
/// together against the page's own report of the plan, it is the search's
/// result exactly: every count, link, figure and why (a user plan that fits
/// and one that does not, a budget and a deadline, a GRPO server, no price).
/// The worker searches from the plan's link and the baseline the page sent
/// (`Search::resolved`, without a report of its own): the same result.
#[test]
fn the_wire_form_puts_the_result_back_exactly() {
    use planner::estimate::search::{wire, Baseline, Search};
    for q in [
        "model=llama-3.1-8b&seq=8192&price=60&impl=megatron&budget=5000&deadline=200",
        "model=llama-3.1-70b&seq=32768&instance=ml.g5.48xlarge",
        "model=qwen2.5-7b&stage=grpo&gen_gpus=1&instance=ml.p5.48xlarge&lock=instance",
        "model=custom&params_b=3&instance=custom&gpu_mem=48&gpu_bf16=300",
    ] {
        let plan = Plan::from_query(q).plan;
        let user = planner::evaluate(&plan);
        let r = search(&plan);
        assert!(!r.pareto.is_empty(), "{q}: something fits");
        let base = Baseline::of(&user);
        assert_eq!(
            Search::resolved(&plan, base).finish(),
            r,
            "{q}: the worker's"
        );
        let text = wire::encode(&r);
        assert_eq!(wire::decode(&text, &base), Ok(r), "{q}");
    }
    assert!(wire::decode("[1,2]", &Baseline::of(&planner::evaluate(&Plan::default()))).is_err());
}
