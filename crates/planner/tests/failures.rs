//! #58: interruptions in the time to train, each figure derived by hand
//! from ../shared/data/sagemaker_at_scale.md ("Failures at scale").

use planner::model::failures::{
    failures, published_rate_per_million_gpu_hours, Reliability, Saves,
};
use planner::{evaluate, Plan};

/// Meta's Llama 3 405B snapshot: 419 unexpected interruptions in 54 days on
/// 16,384 H100s: 16,384 x 54 x 24 = 21,233,664 GPU-hours, so 419 /
/// 21.233664 = 19.733 per million GPU-hours (one per 50,677 GPU-hours).
#[test]
fn the_default_rate_is_the_published_run() {
    let rate = published_rate_per_million_gpu_hours();
    assert!((rate - 19.733).abs() < 0.001, "{rate}");
    assert_eq!(Plan::default().saving.fail_rate, rate);
}

/// A job of 1,000 steps of 10 s saving every 100 steps (20 s each, 60 s to
/// read back), on GPUs that fail once per 10,000 s (360 per million
/// GPU-hours on 1,000 GPUs: 360e-6 x 1,000 / 3,600 = 1e-4 per s), 120 s to
/// restart. By hand: W0 = 10,000 + 10 x 20 = 10,200 s; each interruption
/// loses 120 + 60 + (1,000 + 20) / 2 = 690 s; W = 10,200 / (1 - 0.069) =
/// 10,956.0 s; 1.0956 interruptions; Young's interval sqrt(2 x 20 / 1e-4) =
/// 632.5 s, 63 steps.
#[test]
fn a_small_job_by_hand() {
    let saves = Saves {
        step_seconds: 10.0,
        steps: 1000,
        every: 100,
        blocking_seconds: 20.0,
        reload_seconds: 60.0,
        in_memory: false,
    };
    let r = Reliability {
        rate_per_million_gpu_hours: 360.0,
        gpus: 1000,
        restart_seconds: 120.0,
        spot_per_instance_hour: 0.0,
        instances: 125,
    };
    let f = failures(&saves, &r);
    let wall = 10_200.0 / (1.0 - 1e-4 * 690.0);
    assert!((f.lost_hours.unwrap() - (wall - 10_200.0) / 3600.0).abs() < 1e-9);
    assert!((f.expected_interruptions.unwrap() - 1e-4 * wall).abs() < 1e-9);
    assert!((f.hours_per_interruption - 690.0 / 3600.0).abs() < 1e-12);
    assert!((f.mtbf_hours.unwrap() - 10_000.0 / 3600.0).abs() < 1e-9);
    assert_eq!(f.best_save_every, Some(63));
    assert!(!f.never_finishes);
    // A job that never saves loses half the whole run per interruption:
    // 120 + 60 + 10,000 / 2 = 5,180 s, W = 10,000 / (1 - 0.518).
    let never = failures(&Saves { every: 0, ..saves }, &r);
    let wall = 10_000.0 / (1.0 - 1e-4 * 5_180.0);
    assert!((never.lost_hours.unwrap() - (wall - 10_000.0) / 3600.0).abs() < 1e-9);
    // Interruptions every 1,000 s against 5,180 s lost to each: it never ends.
    let stuck = failures(
        &Saves { every: 0, ..saves },
        &Reliability {
            rate_per_million_gpu_hours: 3600.0,
            ..r
        },
    );
    assert!(stuck.never_finishes && stuck.lost_hours.is_none());
    // Checkpointless recovery (the peers' memory): each interruption loses
    // the restart and half a step, 120 + 10 / 2 = 125 s, and reads no save:
    // W = 10,200 / (1 - 1e-4 x 125); no save interval to offer.
    let memory = failures(
        &Saves {
            in_memory: true,
            ..saves
        },
        &r,
    );
    let wall = 10_200.0 / (1.0 - 1e-4 * 125.0);
    assert!((memory.lost_hours.unwrap() - (wall - 10_200.0) / 3600.0).abs() < 1e-9);
    assert!((memory.hours_per_interruption - 125.0 / 3600.0).abs() < 1e-12);
    assert_eq!(memory.best_save_every, None);
    // Managed spot adds its own rate: 125 instances, 20 % of them reclaimed
    // a month (AWS's Spot Instance Advisor band 15-20 %), 0.2 / 730 per
    // instance-hour: 125 x 0.2 / 730 / 3600 = 9.513e-6 per s on top of 1e-4.
    let spot = Reliability {
        spot_per_instance_hour: 0.2 / 730.0,
        ..r
    };
    let lambda = 1e-4 + 125.0 * 0.2 / 730.0 / 3600.0;
    let f = failures(&saves, &spot);
    assert!((f.mtbf_hours.unwrap() - 1.0 / lambda / 3600.0).abs() < 1e-9);
    let wall = 10_200.0 / (1.0 - lambda * 690.0);
    assert!((f.lost_hours.unwrap() - (wall - 10_200.0) / 3600.0).abs() < 1e-9);
}

/// A spot plan counts the spot market's interruptions at `spot_rate` (5 %
/// of instances a month by default); on-demand capacity does not; the link
/// writes the rate only for spot plans, and `recovery=memory` travels too.
#[test]
fn spot_and_checkpointless_plans() {
    let q = "model=llama-3.1-70b&instance=ml.p5.48xlarge&nodes=16&tokens=1e11&save_every=200";
    let on_demand = evaluate(&Plan::from_query(q).plan);
    let spot_q = format!("{q}&spot=1&spot_rate=20");
    let spot_plan = Plan::from_query(&spot_q).plan;
    let spot = evaluate(&spot_plan);
    // MTBF by hand: 128 GPUs at 19.73 per million GPU-hours plus 16
    // instances at 0.2 / 730 per hour.
    let rate = 128.0 * planner::model::failures::published_rate_per_million_gpu_hours() / 1e6
        + 16.0 * 0.2 / 730.0;
    let mtbf = spot.failures.mtbf_hours.unwrap();
    assert!((mtbf - 1.0 / rate).abs() < 1e-6 * mtbf, "{mtbf}");
    assert!(spot.time.failure_hours > on_demand.time.failure_hours);
    assert!(spot_plan.to_query().contains("spot_rate=20"));
    assert!(!Plan::from_query(q).plan.to_query().contains("spot_rate"));
    let memory = Plan::from_query(&format!("{spot_q}&recovery=memory")).plan;
    assert!(memory.to_query().contains("recovery=memory"));
    let m = evaluate(&memory);
    assert!(m.time.failure_hours < spot.time.failure_hours);
    assert_eq!(m.failures.best_save_every, None);
}

/// The plan: Llama 3.1 405B on 512 GPUs (64 p5) for 15T tokens.
/// Its interruptions follow from its own step and save figures by hand,
/// the time to train includes them, and the warning offers Young's
/// interval as the fix.
#[test]
fn a_405b_plan_on_512_gpus_counts_its_interruptions() {
    let q = "model=llama-3.1-405b&instance=ml.p5.48xlarge&nodes=64&stack=megatron&precision=fp8&fp8_params=1&tp=8&pp=8&vp=4&zero=1&seq=8192&mb=1&ga=64&ckpt=full&tokens=15000000000000";
    let r = evaluate(&Plan::from_query(q).plan);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.layout.gpus, 512);
    let (step, steps) = (r.throughput.step_seconds, r.time.steps);
    let delta = r.checkpoint.blocking_seconds_per_save;
    let lambda = 19.733e-6 * 512.0 / 3600.0;
    let lost_each = 600.0 + r.checkpoint.seconds_per_save + (500.0 * step + delta) / 2.0;
    let base = steps as f64 * step + (steps / 500) as f64 * delta;
    let wall = base / (1.0 - lambda * lost_each);
    let f = &r.failures;
    assert!((f.lost_hours.unwrap() - (wall - base) / 3600.0).abs() / f.lost_hours.unwrap() < 1e-3);
    assert!((f.expected_interruptions.unwrap() - lambda * wall).abs() < 0.5);
    assert!((r.time.total_hours - wall / 3600.0).abs() / r.time.total_hours < 1e-6);
    // MTBF of 512 GPUs: 10^6 / (19.733 x 512) = 98.98 h.
    assert!((f.mtbf_hours.unwrap() - 98.98).abs() < 0.01);
    let best = ((2.0 * delta / lambda).sqrt() / step).round() as u64;
    assert_eq!(f.best_save_every, Some(best));
    // 500 steps against Young's interval: far enough apart to offer it.
    assert!(best.abs_diff(500) * 4 > 500, "best {best}");
    let fix = r
        .warnings
        .iter()
        .find_map(|w| w.fix.clone().filter(|(k, _)| *k == "save_every"))
        .expect("the interval fix");
    assert_eq!(fix.1, best.to_string());
    assert!(
        f.wall_share > 0.01,
        "at 512 GPUs over a year, interruptions cost over 1%: {}",
        f.wall_share
    );
}

/// On one 8-GPU node the failure share is under 1%: 8 GPUs fail once per
/// 10^6 / (19.733 x 8) = 6,335 h, against about ten minutes lost to each.
#[test]
fn eight_gpus_lose_under_one_percent() {
    let r = evaluate(&Plan::from_query("model=llama-3.1-8b&instance=ml.p6-b200.48xlarge").plan);
    assert_eq!(r.layout.gpus, 8);
    let f = &r.failures;
    assert!((f.mtbf_hours.unwrap() - 1e6 / (19.733 * 8.0)).abs() < 0.5);
    assert!(f.wall_share < 0.01, "{}", f.wall_share);
    let lambda = 1.0 / (f.mtbf_hours.unwrap() * 3600.0);
    let share = lambda * f.hours_per_interruption * 3600.0;
    assert!(
        (f.wall_share - share).abs() < 1e-9,
        "{} vs {share}",
        f.wall_share
    );
    assert!(!r
        .warnings
        .iter()
        .any(|w| w.fix.as_ref().is_some_and(|(k, _)| *k == "save_every")));
}

/// The two inputs travel in the link and are kept within bounds.
#[test]
fn the_inputs_round_trip() {
    let d = Plan::from_query("fail_rate=5&restart_min=30");
    assert!(d.notices.is_empty(), "{:?}", d.notices);
    assert_eq!(d.plan.saving.fail_rate, 5.0);
    assert_eq!(d.plan.saving.restart_minutes, 30.0);
    let again = Plan::from_query(&d.plan.to_query()).plan;
    assert_eq!(again, d.plan);
    let bad = Plan::from_query("fail_rate=-1");
    assert!(!bad.notices.is_empty());
    assert_eq!(bad.plan.saving.fail_rate, Plan::default().saving.fail_rate);
}
