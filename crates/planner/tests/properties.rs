//! Invariants of the memory model over arbitrary plans (proptest).

use planner::evaluate;
use planner::model::architecture::presets;
use planner::model::hardware::instances;
use planner::model::layout::Layout;
use planner::model::memory::{
    breakdown, most_model_states, peak_estimate, peak_estimate_slack, states_floor,
};
use planner::model::plan::{Checkpointing, Plan};
use planner::model::resolve::resolve;
use planner::text::Text;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// What the bundle's launchers do not run (`launchers::export_notes`): the
/// texts of its notes, none of which may be an error.
const EXPORT_LIMITS: &[Text] = &[
    Text::GrpoRefuses,
    Text::HfModelParallel,
    Text::HfTpAdapters,
    Text::HfTpDpo,
    Text::HfTpLayer,
    Text::HfTpLowPrecision,
    Text::HfTpNeedsFsdp,
    Text::LowPrecisionAdapters,
    Text::MegatronLauncherRefuses,
    Text::MtpNeedsMegatron,
    Text::QloraNeedsHf,
    Text::QloraSharded,
];

/// An arbitrary plan, built through the URL parser as a user's link would be.
fn any_plan() -> impl Strategy<Value = Plan> {
    let n_presets = presets().len();
    let n_inst = instances().len();
    (
        (0..n_presets, 7u32..=17, 0u64..=4, 0u64..=6, 0usize..6, 0usize..5),
        (0usize..5, 0u8..=3, 0u32..=3, 0u32..=2, 0u32..=1, 0..n_inst),
        (1u64..=4, any::<bool>(), any::<bool>(), any::<bool>(), 0usize..3, any::<bool>()),
    )
        .prop_map(|(a, b, c)| {
            let (model, seq_log, mb_log, ga_log, precision, optimizer) = a;
            let (ckpt, zero, tp_log, pp_log, cp_log, inst) = b;
            let (nodes, eager, fused, megatron, train, offload) = c;
            let q = format!(
                "model={}&seq={}&mb={}&ga={}&precision={}&optimizer={}&ckpt={}&zero={zero}&tp={}&pp={}&cp={}&instance={}&nodes={nodes}&attn={}&loss={}&impl={}&train={}&offload={}",
                presets()[model].id,
                1u64 << seq_log,
                1u64 << mb_log,
                1u64 << ga_log,
                ["fp32", "bf16", "bf16-pure", "fp8", "mxfp8", "nvfp4"][precision],
                ["adamw", "adamw-foreach", "adamw8bit", "adafactor", "sgd"][optimizer],
                ["none", "selective", "full", "0.5", "op"][ckpt],
                1u64 << tp_log,
                1u64 << pp_log,
                1u64 << cp_log,
                if inst == 0 { "custom" } else { &instances()[inst].instance_type },
                if eager { "eager" } else { "flash" },
                if fused { "fused" } else { "plain" },
                if megatron { "megatron" } else { "hf" },
                ["full", "lora", "qlora"][train],
                offload as u8,
            );
            Plan::from_query(&q).plan
        })
}

/// `key=value` for one URL key, or nothing (the key's default).
fn key(k: &'static str, values: impl Strategy<Value = String> + 'static) -> BoxedStrategy<String> {
    prop::option::of(values)
        .prop_map(move |v| v.map(|v| format!("{k}={v}")).unwrap_or_default())
        .boxed()
}

/// Whole numbers over a key's accepted range, spread over its orders of magnitude.
fn whole(lo: u64, hi: u64) -> impl Strategy<Value = String> {
    prop_oneof![
        Just(lo),
        Just(hi),
        (0.0f64..1.0).prop_map(move |x| {
            let (l, h) = ((lo.max(1) as f64).ln(), (hi as f64).ln());
            ((l + x * (h - l)).exp().round() as u64).clamp(lo, hi)
        })
    ]
    .prop_map(|v| v.to_string())
}

/// Real numbers over a key's accepted range, ends included.
fn real(lo: f64, hi: f64) -> impl Strategy<Value = String> {
    prop_oneof![Just(lo), Just(hi), lo..hi].prop_map(|v| v.to_string())
}

fn one_of(options: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(options).prop_map(str::to_string)
}

/// Any link the URL parser accepts: every key of the schema, each absent or
/// anywhere in its accepted range (extremes included).
fn any_link() -> impl Strategy<Value = String> {
    let keys: Vec<BoxedStrategy<String>> = model_keys()
        .into_iter()
        .chain(training_keys())
        .chain(layout_and_hardware_keys())
        .collect();
    keys.prop_map(|pairs| {
        pairs
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("&")
    })
}

/// The model: a preset and every shape key.
fn model_keys() -> Vec<BoxedStrategy<String>> {
    let models: Vec<String> = presets().iter().map(|p| p.id.to_string()).collect();
    vec![
        key("model", prop::sample::select(models)),
        key("layers", whole(1, 1024)),
        key("hidden", whole(64, 131_072)),
        key("heads", whole(1, 1024)),
        key("kv_heads", whole(1, 1024)),
        key("head_dim", whole(8, 1024)),
        key("ffn", whole(64, 1_048_576)),
        key("vocab", whole(16, 4_194_304)),
        key("tied", one_of(&["0", "1"])),
        key("mlp", one_of(&["swiglu", "geglu", "gelu"])),
        key("experts", whole(1, 1024)),
        key("active_experts", whole(1, 1024)),
        key("expert_ffn", whole(16, 1_048_576)),
        key("params_b", real(0.05, 2000.0)),
    ]
}

/// What is trained and how: data, precision, memory savers, kernels.
fn training_keys() -> Vec<BoxedStrategy<String>> {
    vec![
        key("train", one_of(&["full", "lora", "qlora"])),
        key("stage", one_of(&["sft", "dpo", "grpo"])),
        key("generations", whole(2, 1024)),
        key("completion", whole(1, 131_072)),
        key("beta", real(0.0, 10.0)),
        key("gen_share", real(0.05, 0.95)),
        key("lora_rank", whole(1, 4096)),
        key("seq", whole(128, 131_072)),
        key("mb", whole(1, 4096)),
        key("ga", whole(1, 65_536)),
        key("tokens", real(1e6, 1e15)),
        key(
            "precision",
            one_of(&["fp32", "bf16", "bf16-pure", "fp8", "mxfp8", "nvfp4"]),
        ),
        key(
            "optimizer",
            one_of(&["adamw", "adamw-foreach", "adamw8bit", "adafactor", "sgd"]),
        ),
        key(
            "ckpt",
            one_of(&["none", "selective", "full", "op", "0.25", "0.5"]),
        ),
        key("offload", one_of(&["0", "1"])),
        key("offload_layers", whole(0, 1024)),
        key("grad_bf16", one_of(&["0", "1"])),
        key("fp8_params", one_of(&["0", "1"])),
        key("bf16_moments", one_of(&["0", "1"])),
        key(
            "recompute_modules",
            one_of(&[
                "core_attn",
                "none",
                "mla_up_proj",
                "moe_act,layernorm",
                "mlp",
            ]),
        ),
        key("mtp", whole(0, 8)),
        key("attn", one_of(&["flash", "eager"])),
        key("loss", one_of(&["plain", "fused"])),
        key("impl", one_of(&["hf", "megatron"])),
    ]
}

/// Parallelism, hardware, price, checkpoints and the page's settings.
fn layout_and_hardware_keys() -> Vec<BoxedStrategy<String>> {
    let insts: Vec<String> = instances()
        .iter()
        .map(|i| i.instance_type.to_string())
        .chain(["custom".to_string()])
        .collect();
    vec![
        key("zero", whole(0, 3)),
        key("shard", whole(1, 65_536)),
        key("tp", whole(1, 1024)),
        key("sp", one_of(&["0", "1"])),
        key("pp", whole(1, 1024)),
        key("vp", whole(1, 64)),
        key("cp", whole(1, 1024)),
        key("ep", whole(1, 1024)),
        key("instance", prop::sample::select(insts)),
        key("nodes", whole(1, 4096)),
        key("ultraserver", one_of(&["36", "72"])),
        key("overlap", one_of(&["0", "1"])),
        key("tp_overlap", one_of(&["0", "1"])),
        key("ep_overlap", one_of(&["0", "1"])),
        key("moe_flex", one_of(&["0", "1"])),
        key("moe_graphs", one_of(&["0", "1"])),
        key("moe_imbalance", real(1.0, 16.0)),
        key("gpu_mem", real(1.0, 10_000.0)),
        key("gpu_bf16", real(1.0, 1_000_000.0)),
        key("gpu_fp8", real(0.0, 1_000_000.0)),
        key("gpu_bw", real(0.01, 1000.0)),
        key("gpu_count", whole(1, 1024)),
        key("gpu_nvlink", real(0.0, 100_000.0)),
        key("gpu_net", real(0.0, 1_000_000.0)),
        key("spot", one_of(&["0", "1"])),
        key("price", real(0.0, 100_000.0)),
        key("save_every", whole(0, 10_000_000)),
        key("save", one_of(&["full", "weights", "adapter"])),
        key("async_save", one_of(&["0", "1"])),
        key("save_bw", real(0.001, 1000.0)),
        key("headroom", real(0.0, 50.0)),
        key("ws_gib", real(0.0, 64.0)),
        key("frag", real(0.0, 50.0)),
        key("lang", one_of(&["en", "ru"])),
    ]
}

fn with(plan: &Plan, edit: impl Fn(&mut Plan)) -> Plan {
    let mut p = plan.clone();
    edit(&mut p);
    p
}

proptest! {
    // Failures are saved beside this file and replayed first on every run.
    #![proptest_config(ProptestConfig {
        cases: 400,
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel("proptest-regressions"))),
        .. ProptestConfig::default()
    })]

    /// Every number of the report is finite for every link the parser accepts
    /// (issue #15: overflow and division by zero from accepted values).
    #[test]
    fn every_accepted_link_gives_finite_numbers(link in any_link()) {
        let decoded = Plan::from_query(&link);
        // A custom GPU's key beside a known instance is read, and said to be ignored.
        let ignored = |n: &planner::model::plan::Notice| n.problem.id == planner::text::Text::CustomGpuKeyIgnored;
        prop_assert!(decoded.notices.iter().all(ignored), "{:?}", decoded.notices);
        let r = evaluate(&decoded.plan);
        let t = &r.throughput;
        let s = &t.step;
        for (name, x) in [
            ("step_seconds", t.step_seconds), ("tokens/s/GPU", t.tokens_per_second_per_gpu),
            ("tokens/s", t.tokens_per_second), ("samples/s", t.samples_per_second),
            ("mfu", t.mfu), ("hfu", t.hfu), ("flops/token", t.model_flops_per_token),
            ("gemm", s.gemm), ("attention", s.attention), ("elementwise", s.elementwise),
            ("recompute", s.recompute), ("tp", s.tensor_parallel), ("cp", s.context_parallel),
            ("ep", s.expert_parallel), ("bubble", s.pipeline_bubble), ("dp", s.data_parallel),
            ("optimizer", s.optimizer), ("total_hours", r.time.total_hours),
            ("gpu_hours", r.time.gpu_hours), ("ckpt share", r.checkpoint.wall_share),
            ("ckpt seconds", r.checkpoint.seconds_per_save),
        ] {
            prop_assert!(x.is_finite() && x >= 0.0, "{} = {} for {}", name, x, link);
        }
        for x in [r.cost.total_usd, r.cost.spot_usd, r.cost.usd_per_million_tokens].into_iter().flatten() {
            prop_assert!(x.is_finite() && x >= 0.0, "cost {} for {}", x, link);
        }
        let m = &r.memory;
        prop_assert!(m.peak_bytes_per_gpu > 0 && m.allocated_peak_bytes <= m.peak_bytes_per_gpu);
        prop_assert!(serde_json::to_string(&r).is_ok());
    }

    #[test]
    fn every_output_is_finite_and_consistent(plan in any_plan()) {
        let r = evaluate(&plan);
        let m = &r.memory;
        prop_assert!(m.peak_bytes_per_gpu > 0);
        prop_assert_eq!(m.terms.iter().map(|(_, b)| b).sum::<u64>(), m.peak_bytes_per_gpu);
        prop_assert!(m.allocated_peak_bytes <= m.peak_bytes_per_gpu);
        prop_assert!(m.budget_bytes <= m.usable_bytes);
        prop_assert!(m.least_bytes_per_gpu <= m.peak_bytes_per_gpu);
        // A plan fits (runs) when what it needs at least is within the GPU
        // and its host holds what it offloads (an `offload_exceeds_host`
        // error when not); the verdict says "fits" when its peak with the
        // allocator's usual cache is within the budget, else "tight" (#55).
        let host_full = r.errors.iter().any(|e| e.code() == "offload_exceeds_host");
        prop_assert_eq!(r.fits, m.least_bytes_per_gpu <= m.usable_bytes && !host_full);
        let comfortable = m.peak_bytes_per_gpu <= m.budget_bytes && !host_full;
        prop_assert_eq!(r.verdict == planner::estimate::report::Verdict::Fits, comfortable);
        prop_assert_eq!(m.tight.is_some(), r.verdict == planner::estimate::report::Verdict::Tight);
        prop_assert!(r.parameters_active <= r.parameters);
        // The JSON report always serialises.
        prop_assert!(serde_json::to_string(&r).is_ok());
    }

    /// #55, estimate first: a plan is refused only for what stops the job
    /// itself (physics, PEFT's, TRL's or the GPU's own limits), never for
    /// what the bundled scripts do not carry; that is a note on the export.
    /// Every plan without an error has a step, a speed and a cost.
    #[test]
    fn only_what_cannot_run_is_refused(plan in any_plan()) {
        let r = evaluate(&plan);
        for e in &r.errors {
            prop_assert!(!EXPORT_LIMITS.contains(&e.id()), "{:?} refuses {}", e.id(), plan.to_query());
        }
        for n in &r.export_notes {
            prop_assert!(EXPORT_LIMITS.contains(&n.id()), "{:?} is no export limit", n.id());
        }
        if r.errors.is_empty() {
            let t = &r.throughput;
            prop_assert!(t.step_seconds > 0.0 && t.tokens_per_second_per_gpu > 0.0, "{}", plan.to_query());
            prop_assert!(r.time.total_hours > 0.0);
        }
    }

    #[test]
    fn url_round_trip_is_exact(plan in any_plan()) {
        let decoded = Plan::from_query(&plan.to_query());
        prop_assert!(decoded.notices.is_empty(), "{:?}", decoded.notices);
        prop_assert_eq!(decoded.plan, plan);
    }

    #[test]
    fn more_sharding_never_raises_model_states(plan in any_plan(), stage in 0u8..3) {
        let (r, _) = resolve(&plan);
        let states = |zero: u8, shard: u64| {
            let p = with(&plan, |p| p.parallelism.zero = zero);
            let layout = Layout { shard, ..r.layout };
            most_model_states(&r.arch, &r.counts, &p.recipe(), &layout)
        };
        let g = r.layout.dp;
        if g < 2 {
            return Ok(()); // nothing to shard over
        }
        // A higher ZeRO stage over the same group...
        prop_assert!(states(stage + 1, g) <= states(stage, g), "zero {} -> {}", stage, stage + 1);
        // ...and a larger group at the same stage.
        if g % 2 == 0 && stage >= 1 {
            prop_assert!(states(stage, g) <= states(stage, g / 2));
        }
    }

    #[test]
    fn full_checkpointing_keeps_no_more_activations(plan in any_plan()) {
        // Offloading keeps about two layers on the GPU without checkpointing;
        // a recomputed layer's working set (LoRA's casts among it) can exceed that.
        if plan.activations.offload {
            return Ok(());
        }
        let (r, _) = resolve(&plan);
        let act = |ck: Checkpointing| {
            let p = with(&plan, |p| p.activations.checkpointing = ck);
            breakdown(&r.arch, &r.counts, &p.recipe(), &r.layout).activation_bytes
        };
        prop_assert!(act(Checkpointing::Full) <= act(Checkpointing::None));
    }

    #[test]
    fn memory_grows_with_micro_batch_and_sequence(plan in any_plan()) {
        let (r, _) = resolve(&plan);
        let peak = |p: &Plan| breakdown(&r.arch, &r.counts, &p.recipe(), &r.layout).peak_bytes;
        let base = peak(&plan);
        prop_assert!(peak(&with(&plan, |p| p.data.micro_batch *= 2)) >= base);
        if plan.data.seq * 2 <= 131_072 {
            prop_assert!(peak(&with(&plan, |p| p.data.seq *= 2)) >= base);
        }
    }

    #[test]
    fn solvers_return_the_exact_boundary(plan in any_plan()) {
        let r = evaluate(&plan);
        // The largest that fit with the allocator's usual cache (#55).
        let fits = |p: &Plan| evaluate(p).verdict == planner::estimate::report::Verdict::Fits;
        let mb = r.max_micro_batch;
        if mb > 0 {
            prop_assert!(fits(&with(&plan, |p| p.data.micro_batch = mb)));
        }
        if mb < 4096 {
            prop_assert!(!fits(&with(&plan, |p| p.data.micro_batch = mb + 1)));
        }
        let cp = r.layout.cp;
        let seq = r.max_sequence;
        if seq > 0 {
            prop_assert!(fits(&with(&plan, |p| p.data.seq = seq)));
        }
        if seq + 128 * cp <= 131_072 {
            prop_assert!(!fits(&with(&plan, |p| p.data.seq = seq + 128 * cp)));
        }
    }
}

/// Random links for the physical bounds: 100,000 in CI (#23), more with
/// `PHYSICAL_CASES`; the same ones every run (a fixed seed, so CI cannot
/// flake), others with `PHYSICAL_SEED`.
fn physical_cases() -> u32 {
    std::env::var("PHYSICAL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

fn physical_seed() -> proptest::test_runner::RngSeed {
    let seed = std::env::var("PHYSICAL_SEED")
        .ok()
        .and_then(|v| v.parse().ok());
    proptest::test_runner::RngSeed::Fixed(seed.unwrap_or(23_25))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: physical_cases(),
        rng_seed: physical_seed(),
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel("proptest-regressions"))),
        .. ProptestConfig::default()
    })]

    /// Physics, not just finiteness (#23, #25): no plan computes faster than
    /// its GPUs' peak (MFU <= HFU <= 1, so tokens/s/GPU <= peak / FLOPs per
    /// token and a step takes at least its FLOPs / peak), and per-GPU memory
    /// holds at least the model states, and offloading activations is never
    /// faster than keeping them. MFU 1.6 in FP32 got through a test that
    /// checked only that numbers were finite.
    #[test]
    fn no_plan_beats_physics(link in any_link()) {
        let plan = Plan::from_query(&link).plan;
        let r = evaluate(&plan);
        let t = &r.throughput;
        let slack = 1.0 + 1e-9;
        prop_assert!(t.mfu <= t.hfu * slack, "MFU {} > HFU {} for {}", t.mfu, t.hfu, link);
        prop_assert!(t.hfu <= slack, "HFU {} for {}", t.hfu, link);
        prop_assert!(
            t.tokens_per_second_per_gpu * t.model_flops_per_token <= t.peak_flops * slack,
            "{} tokens/s/GPU x {} FLOP/token > peak {} for {}",
            t.tokens_per_second_per_gpu, t.model_flops_per_token, t.peak_flops, link
        );
        let tokens_per_gpu = t.tokens_per_second_per_gpu * t.step_seconds;
        prop_assert!(
            t.step_seconds * slack >= tokens_per_gpu * t.hardware_flops_per_token / t.peak_flops,
            "step {} s under its FLOPs / peak for {}", t.step_seconds, link
        );
        let (res, _) = resolve(&plan);
        let b = breakdown(&res.arch, &res.counts, &plan.recipe(), &res.layout);
        prop_assert!(b.model_state_bytes <= b.peak_bytes, "peak under the model states for {}", link);
        let kept = evaluate(&with(&plan, |p| p.activations.offload = false)).throughput.step_seconds;
        let offloaded = evaluate(&with(&plan, |p| p.activations.offload = true)).throughput.step_seconds;
        prop_assert!(offloaded >= kept, "offload {} s < {} s for {}", offloaded, kept, link);
    }
}

proptest! {
// Five evaluations a case: a smaller sample than the physics' above.
#![proptest_config(ProptestConfig {
    cases: 4_000,
    rng_seed: physical_seed(),
    failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel("proptest-regressions"))),
    .. ProptestConfig::default()
})]

/// Recomputing activations never makes a step faster, where none are
/// offloaded (offloading fewer bytes to the host can outrun the
/// recomputation: Llama-3.1-8B with eager attention, 127 s a step
/// offloading every activation, 10 s recomputing all): the search counts
/// a checkpointed plan without timing it where the same plan without
/// recomputation fits (#59, estimate/search/walk.rs `inner`).
#[test]
fn recomputation_never_speeds_a_step_up(link in any_link()) {
    use planner::model::plan::Checkpointing;
    let plan = with(&Plan::from_query(&link).plan, |p| p.activations.offload = false);
    let step = |c: Checkpointing| {
        evaluate(&with(&plan, |p| p.activations.checkpointing = c)).throughput.step_seconds
    };
    let none = step(Checkpointing::None);
    for c in [
        Checkpointing::Selective,
        Checkpointing::Op,
        Checkpointing::Full,
        Checkpointing::Fraction(0.5),
    ] {
        let t = step(c);
        prop_assert!(t >= none * (1.0 - 1e-12), "{:?} {} s < none {} s for {}", c, t, none, link);
    }
}

/// A fused loss never makes a step slower: it streams the logits in bf16
/// once each way (6 B per logit) where the plain loss moves them in fp32
/// three times each way (24 B), and nothing else in the step depends on the
/// loss; a longer micro-batch hides at most 0.9 of its growth of
/// data-parallel traffic (`DP_HIDDEN_AT_MOST`), so the whole step still
/// grows with it. The search does not try the plain loss where the fused
/// one fits (estimate/search/walk.rs `inner`).
#[test]
fn a_fused_loss_never_slows_a_step(link in any_link()) {
    use planner::model::plan::Loss;
    let plan = Plan::from_query(&link).plan;
    let run = |l: Loss| evaluate(&with(&plan, |p| p.implementation.loss = l));
    let (plain, fused) = (run(Loss::Plain), run(Loss::Fused));
    let (p, f) = (plain.throughput.step_seconds, fused.throughput.step_seconds);
    prop_assert!(f <= p * (1.0 + 1e-12), "fused {} s > plain {} s for {}", f, p, link);
    let (p, f) = (plain.time.total_hours, fused.time.total_hours);
    prop_assert!(f <= p * (1.0 + 1e-12), "fused {} h > plain {} h for {}", f, p, link);
}

/// The model states' floor (`memory::states_floor`) is under the peak of
/// every plan of the layout, whatever the micro-batch, accumulation,
/// checkpointing and loss it was taken with: the auto-plan skips a layout
/// whose floor is over the budget (estimate/search/walk.rs `inner`).
#[test]
fn the_states_floor_is_under_every_peak(link in any_link()) {
    use planner::model::plan::{Checkpointing, Loss};
    let plan = Plan::from_query(&link).plan;
    let (res, _) = resolve(&plan);
    let peak = breakdown(&res.arch, &res.counts, &plan.recipe(), &res.layout).peak_bytes;
    for (mb, ga, ck, loss) in [
        (1, 1, Checkpointing::Full, Loss::Fused),
        (32, 8, Checkpointing::None, Loss::Plain),
        (4, 2, Checkpointing::Selective, Loss::Fused),
    ] {
        let other = with(&plan, |p| {
            (p.data.micro_batch, p.data.grad_accum) = (mb, ga);
            (p.activations.checkpointing, p.implementation.loss) = (ck, loss);
        });
        let floor = states_floor(&res.arch, &res.counts, &other.recipe(), &res.layout);
        prop_assert!(floor - 64.0 <= peak as f64, "floor {} over peak {} for {}", floor, peak, link);
    }
}

/// The auto-plan's peak estimate (`memory::peak_estimate`, its terms
/// neither listed nor rounded) is within `peak_estimate_slack` of the
/// breakdown's peak in whole bytes: the walk asks the exact peak only where
/// the two are that close to the budget (estimate/search/walk.rs `fits`).
#[test]
fn the_peak_estimate_is_the_peak(link in any_link()) {
    let plan = Plan::from_query(&link).plan;
    let (res, _) = resolve(&plan);
    let recipe = plan.recipe();
    let peak = breakdown(&res.arch, &res.counts, &recipe, &res.layout).peak_bytes as f64;
    let estimate = peak_estimate(&res.arch, &res.counts, &recipe, &res.layout);
    let off = (estimate - peak).abs();
    prop_assert!(off <= peak_estimate_slack(estimate), "estimate {} vs peak {} for {}", estimate, peak, link);
}

/// vLLM's sleep mode never needs more of a GPU than the engine awake:
/// asleep the peak is the larger of training's alone and the generating
/// moment (the fullest stage's model states, the CUDA context and the
/// share), both under training's peak with the share on top
/// (`memory::with_engine`), on any GRPO plan with vLLM colocated.
#[test]
fn sleeping_never_needs_more_memory(link in any_link()) {
    use planner::model::plan::TrainingStage;
    let awake = with(&Plan::from_query(&link).plan, |p| {
        p.training.stage = TrainingStage::Grpo;
        p.training.rollout.gen_gpus = 0;
        p.training.rollout.sleep = false;
    });
    let asleep = with(&awake, |p| p.training.rollout.sleep = true);
    let (a, s) = (evaluate(&awake), evaluate(&asleep));
    let (a, s) = (a.figures.memory.peak_bytes_per_gpu, s.figures.memory.peak_bytes_per_gpu);
    prop_assert!(s <= a.saturating_add(64), "asleep {} over awake {} for {}", s, a, link);
}

/// ZeRO-2 takes exactly ZeRO-1's time: both reduce-scatter the gradients
/// and all-gather the updated parameters once a step (Megatron's
/// distributed optimizer and Megatron-FSDP's `optim_grads`; DeepSpeed's
/// stages 1 and 2), and the optimizer updates the same shard; only memory
/// differs. (Not for GRPO, where FSDP2's ZeRO-2 gathers the weights for
/// the engine, `rollout_seconds`, nor with activations offloaded, whose
/// bytes differ.) The search does not try a ZeRO-2 plan
/// where the same plan under ZeRO-1 fits (estimate/search/walk.rs `inner`).
#[test]
fn zero_two_takes_zero_one_s_time(link in any_link()) {
    let plan = with(&Plan::from_query(&link).plan, |p| p.activations.offload = false);
    if plan.training.stage.generates() {
        return Ok(());
    }
    let run = |z: u8| evaluate(&with(&plan, |p| {
        p.parallelism.zero = z;
        p.parallelism.shard = None;
    }));
    let (one, two) = (run(1), run(2));
    prop_assert_eq!(one.throughput.step_seconds, two.throughput.step_seconds, "{}", link);
    prop_assert_eq!(one.time.total_hours, two.time.total_hours, "{}", link);
}}

/// Issue #15's three links: values the parser accepts that overflowed u64 or
/// divided by a zero network. Each gives finite numbers or a clear error.
#[test]
fn accepted_extremes_give_finite_numbers_or_an_error() {
    let big = evaluate(
        &Plan::from_query("instance=custom&gpu_count=1024&nodes=4096&mb=4096&seq=131072&ga=65536")
            .plan,
    );
    assert!(big.throughput.step_seconds.is_finite() && big.throughput.tokens_per_second > 0.0);
    assert_eq!(
        big.throughput.tokens_per_step,
        u64::MAX,
        "saturates, never wraps"
    );
    let huge = evaluate(&Plan::from_query("params_b=2000&mb=4096&seq=131072&attn=eager").plan);
    assert!(!huge.fits && huge.memory.peak_bytes_per_gpu > 1 << 60);
    assert!(huge.time.total_hours.is_finite());
    let no_net = evaluate(&Plan::from_query("instance=custom&gpu_net=0&nodes=2").plan);
    assert!(no_net.throughput.step_seconds.is_finite());
    let e = no_net
        .errors
        .iter()
        .find(|e| e.code() == "no_network")
        .expect("a clear error");
    assert_eq!(e.key, Some("gpu_net"));
    assert_eq!(no_net.layout.gpus, 8, "computed for one node");
}

/// #25's extremes get words, not silent absurd figures: a job shorter than
/// one step (it pays for the whole step, and its cost per million tokens is
/// over the step's tokens), a network too slow to matter, a saturated count.
#[test]
fn extremes_get_words() {
    let codes = |q: &str| -> Vec<String> {
        evaluate(&Plan::from_query(q).plan)
            .warnings
            .iter()
            .map(|w| w.code().to_string())
            .collect()
    };
    // Default plan: 8 x 1 x 8 x 8192 = 524,288 tokens per step.
    let short = evaluate(&Plan::from_query("tokens=1e6&ga=64").plan);
    assert!(short
        .warnings
        .iter()
        .any(|w| w.code() == "job_shorter_than_a_step"));
    assert_eq!(short.time.steps, 1);
    let per_m = short.cost.usd_per_million_tokens.unwrap();
    let whole = short.cost.total_usd.unwrap() / (short.throughput.tokens_per_step as f64 / 1e6);
    assert!((per_m - whole).abs() <= 1e-9 * whole, "{per_m} vs {whole}");
    assert!(!codes("").contains(&"job_shorter_than_a_step".to_string()));
    // 1e-7 GB/s between two custom nodes: 5.4e11 hours, and a warning.
    assert!(
        codes("instance=custom&gpu_net=0.0000001&nodes=2").contains(&"network_bound".to_string())
    );
    assert!(!codes("nodes=2").contains(&"network_bound".to_string()));
    // 4096 x 131072 x 65536 x 4096 tokens per step overflow u64.
    let big = "instance=custom&gpu_count=1024&nodes=4096&mb=4096&seq=131072&ga=65536";
    assert!(codes(big).contains(&"counts_saturated".to_string()));
    assert!(!codes("").contains(&"counts_saturated".to_string()));
}

proptest! {
    // Each case runs a whole search (milliseconds to a tenth of a second).
    #![proptest_config(ProptestConfig {
        cases: 48,
        rng_seed: proptest::test_runner::RngSeed::Fixed(37),
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel("proptest-regressions"))),
        .. ProptestConfig::default()
    })]

    /// #37: the auto-plan offers no plan its export refuses. Since #55 the
    /// exported engines' refusals (train.py's `resolve_setup` and
    /// `apply_tensor_parallel`, the Megatron-Bridge launcher's unsupported
    /// settings, grpo.py's) are notes on the export, not errors; every
    /// offer of a search from any plan evaluates without an error and
    /// without such a note.
    #[test]
    fn the_auto_plan_offers_only_plans_their_export_runs(plan in any_plan()) {
        let found = planner::estimate::search::search(&plan);
        for c in found.pareto.iter().chain(found.fastest.iter()) {
            let r = evaluate(&Plan::from_query(&c.query).plan);
            let codes: Vec<String> = r.errors.iter().map(|e| e.code().to_string()).collect();
            prop_assert!(codes.is_empty(), "{} offers {}: {:?}", plan.to_query(), c.query, codes);
            let notes: Vec<Text> = r.export_notes.iter().map(|n| n.id()).collect();
            prop_assert!(notes.is_empty(), "{} offers {}: {:?}", plan.to_query(), c.query, notes);
        }
    }
}
