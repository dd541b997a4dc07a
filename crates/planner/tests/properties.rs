//! Invariants of the memory model over arbitrary plans (proptest).

use planner::architecture::presets;
use planner::hardware::instances;
use planner::memory::{breakdown, Layout};
use planner::plan::{Checkpointing, Plan};
use planner::report::{evaluate, resolve};
use proptest::prelude::*;

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

fn with(plan: &Plan, edit: impl Fn(&mut Plan)) -> Plan {
    let mut p = plan.clone();
    edit(&mut p);
    p
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn every_output_is_finite_and_consistent(plan in any_plan()) {
        let r = evaluate(&plan);
        let m = &r.memory;
        prop_assert!(m.peak_bytes_per_gpu > 0);
        prop_assert_eq!(m.terms.iter().map(|(_, b)| b).sum::<u64>(), m.peak_bytes_per_gpu);
        prop_assert!(m.allocated_peak_bytes <= m.peak_bytes_per_gpu);
        prop_assert!(m.budget_bytes <= m.usable_bytes);
        prop_assert_eq!(r.fits, m.peak_bytes_per_gpu <= m.budget_bytes);
        prop_assert!(r.parameters_active <= r.parameters);
        // The JSON report always serialises.
        prop_assert!(serde_json::to_string(&r).is_ok());
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
            let p = with(&plan, |p| p.zero = zero);
            let layout = Layout { shard, ..r.layout };
            breakdown(&r.arch, &r.counts, &p, &layout).model_state_bytes
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
        let (r, _) = resolve(&plan);
        let act = |ck: Checkpointing| {
            let p = with(&plan, |p| p.checkpointing = ck);
            breakdown(&r.arch, &r.counts, &p, &r.layout).activation_bytes
        };
        prop_assert!(act(Checkpointing::Full) <= act(Checkpointing::None));
    }

    #[test]
    fn memory_grows_with_micro_batch_and_sequence(plan in any_plan()) {
        let (r, _) = resolve(&plan);
        let peak = |p: &Plan| breakdown(&r.arch, &r.counts, p, &r.layout).peak_bytes;
        let base = peak(&plan);
        prop_assert!(peak(&with(&plan, |p| p.micro_batch *= 2)) >= base);
        if plan.seq * 2 <= 131_072 {
            prop_assert!(peak(&with(&plan, |p| p.seq *= 2)) >= base);
        }
    }

    #[test]
    fn solvers_return_the_exact_boundary(plan in any_plan()) {
        let r = evaluate(&plan);
        let fits = |p: &Plan| evaluate(p).fits;
        let mb = r.max_micro_batch;
        if mb > 0 {
            prop_assert!(fits(&with(&plan, |p| p.micro_batch = mb)));
        }
        if mb < 4096 {
            prop_assert!(!fits(&with(&plan, |p| p.micro_batch = mb + 1)));
        }
        let cp = r.layout.cp;
        let seq = r.max_sequence;
        if seq > 0 {
            prop_assert!(fits(&with(&plan, |p| p.seq = seq)));
        }
        if seq + 128 * cp <= 131_072 {
            prop_assert!(!fits(&with(&plan, |p| p.seq = seq + 128 * cp)));
        }
    }
}
