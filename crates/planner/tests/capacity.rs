//! #58: capacity bought as a SageMaker training plan, and GB200
//! UltraServer placement. Facts from ../shared/data/sagemaker_at_scale.md
//! and botocore's CreateTrainingJob model; the SDKs accept the exported
//! code in tests/sdk/check.py.

use planner::launch::export::{export, Format};
use planner::model::hardware::{instance, ultraservers};
use planner::{evaluate, Plan};

const ARN: &str = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/gb200-405b";
/// The issue's plan: Llama 3.1 405B on 32 GB200 instances (128 GPUs) of
/// u-p6e-gb200x72 UltraServers.
const GB200: &str =
    "model=llama-3.1-405b&stack=megatron&instance=ml.p6e-gb200.36xlarge&nodes=32&ultraserver=72";

fn plan(q: &str) -> Plan {
    let d = Plan::from_query(q);
    assert!(d.notices.is_empty(), "{q}: {:?}", d.notices);
    d.plan
}

fn warning_codes(q: &str) -> Vec<(String, Option<(String, String)>)> {
    let r = evaluate(&plan(q));
    r.warnings
        .iter()
        .map(|w| {
            (
                w.code().to_string(),
                w.fix.as_ref().map(|(k, v)| (k.to_string(), v.clone())),
            )
        })
        .collect()
}

/// An x72 UltraServer holds 72 / 4 = 18 GB200 instances, an x36 9: 32
/// instances fill 18 + 14 (x72) or 9 + 9 + 9 + 5 (x36), in the order the
/// fabric fills its NVLink domains. A P6-B200 is no UltraServer.
#[test]
fn placement_by_hand() {
    let gb200 = instance("ml.p6e-gb200.36xlarge").unwrap();
    assert_eq!(ultraservers(gb200, 72, 32), Some(vec![18, 14]));
    assert_eq!(ultraservers(gb200, 36, 32), Some(vec![9, 9, 9, 5]));
    assert_eq!(ultraservers(gb200, 72, 18), Some(vec![18]));
    let b200 = instance("ml.p6-b200.48xlarge").unwrap();
    assert_eq!(ultraservers(b200, 72, 32), None);
}

/// The ARN travels in the link; one that is not a training plan's (or that
/// would break the generated Python) is refused beside its field.
#[test]
fn the_arn_is_read_checked_and_written_back() {
    let p = plan(&format!("{GB200}&training_plan={ARN}"));
    assert_eq!(p.launch.training_plan, ARN);
    assert!(p.to_query().contains(&format!("training_plan={ARN}")));
    for bad in [
        "arn:aws:iam::123456789012:role/Train",
        "arn:aws:sagemaker:us-east-1:12345:training-plan/x",
        "arn:aws:sagemaker:us-east-1:123456789012:training-plan/a\"b; import os",
    ] {
        let mut q = Plan::default();
        assert!(q.set("training_plan", bad).is_err(), "{bad}");
        assert!(q.launch.training_plan.is_empty());
    }
}

/// The UltraServer plan's code books the plan's capacity and places 18 + 14
/// instances, in SDK v2 (estimator arguments) and v3 (Compute's).
#[test]
fn the_export_carries_plan_and_placement() {
    let p = plan(&format!("{GB200}&training_plan={ARN}"));
    let v2 = export(&p, Format::Pytorch).code;
    assert!(v2.contains(&format!("training_plan = \"{ARN}\"")), "{v2}");
    assert!(v2.contains("    training_plan=training_plan,\n"));
    assert!(v2.contains(r#"[{"InstanceCount": 18}, {"InstanceCount": 14}]"#));
    assert!(v2.contains("    instance_placement_config=instance_placement_config,\n"));
    let v3 = export(&p, Format::ModelTrainer).code;
    assert!(v3.contains(
        "training_plan_arn=training_plan, instance_placement_config=instance_placement_config)"
    ));
    assert!(v3.contains("PlacementSpecification(instance_count=14, ultra_server_id=None)"));
    // On-demand capacity sets neither.
    let on_demand = export(&plan("model=llama-3.1-8b&nodes=4"), Format::Pytorch).code;
    assert!(
        !on_demand.contains("training_plan") || on_demand.matches("training_plan").count() == 0
    );
    assert!(!on_demand.contains("instance_placement_config"));
}

/// GB200 UltraServers are sold only as training plans: without an ARN the
/// page says so, and the code leaves `training_plan = None` to fill in.
/// With one, a P6-B200 plan of 3 instances is told plans come in 1, 2, 4,
/// 8, 16, 32 or 64 (fix: 4); 200 instances on x72 need 12 UltraServers, two
/// over the API's 10.
#[test]
fn the_page_says_what_a_plan_needs() {
    let codes = warning_codes(GB200);
    assert!(
        codes.iter().any(|(c, _)| c == "needs_training_plan"),
        "{codes:?}"
    );
    assert!(export(&plan(GB200), Format::Pytorch)
        .code
        .contains("training_plan = None"));
    let with_arn = warning_codes(&format!("{GB200}&training_plan={ARN}"));
    assert!(
        !with_arn.iter().any(|(c, _)| c.contains("training_plan")),
        "{with_arn:?}"
    );
    let b200 =
        format!("model=llama-3.1-8b&instance=ml.p6-b200.48xlarge&nodes=3&training_plan={ARN}");
    let codes = warning_codes(&b200);
    let count = codes.iter().find(|(c, _)| c == "training_plan_count");
    assert_eq!(
        count.and_then(|(_, f)| f.clone()),
        Some(("nodes".into(), "4".into())),
        "{codes:?}"
    );
    assert!(!warning_codes("model=llama-3.1-8b&nodes=3")
        .iter()
        .any(|(c, _)| c.contains("training_plan")));
    let big = "model=llama-3.1-405b&stack=megatron&instance=ml.p6e-gb200.36xlarge&nodes=200&ultraserver=72";
    assert!(warning_codes(big)
        .iter()
        .any(|(c, _)| c == "ultra_server_placement_limit"));
}
