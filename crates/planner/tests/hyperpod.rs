//! #58: the SageMaker HyperPod export, each field derived by hand from the
//! plan and ../shared/data/sagemaker_at_scale.md; tests/sdk/check.py
//! validates and renders it through the pinned sagemaker-hyperpod.

use planner::launch::export::hyperpod::efa_interfaces;
use planner::launch::export::{export, Format};
use planner::Plan;

fn yaml(q: &str) -> String {
    let d = Plan::from_query(q);
    assert!(d.notices.is_empty(), "{:?}", d.notices);
    export(&d.plan, Format::Hyperpod).code
}

/// 8B FSDP on 4 P6-B200 nodes: 4 replicas, `hyperpodrun` with 8 processes
/// per node, 8 EFA interfaces (AWS: 8 x 400 Gb/s per P6-B200), no topology.
#[test]
fn eight_b_on_four_b200_nodes() {
    let y = yaml("model=llama-3.1-8b&instance=ml.p6-b200.48xlarge&nodes=4&zero=3");
    assert!(y.starts_with("# template: hyp-pytorch-job\n# version: 1.1\n"));
    for line in [
        "replica_count: 4",
        "tasks_per_node: \"8\"",
        "  - \"--nnodes=4\"",
        "  - \"--nproc-per-node=8\"",
        "  - \"/opt/train-planner/scripts/train.py\"",
        "efa: 8",
        "max_retry: 3",
        "    mount_path: /opt/ml/checkpoints",
    ] {
        assert!(y.lines().any(|l| l.starts_with(line)), "{line} in\n{y}");
    }
    assert!(!y.contains("topology"));
}

/// The 405B plan on 32 GB200 instances spans two x72 UltraServers (18 + 14):
/// pods prefer packing by UltraServer; 18 fit one, which is then required.
/// 4 GPUs per instance; never an EFA request.
#[test]
fn gb200_ultraservers() {
    let q = "model=llama-3.1-405b&stack=megatron&instance=ml.p6e-gb200.36xlarge&ultraserver=72";
    let two = yaml(&format!("{q}&nodes=32"));
    assert!(two.contains("preferred_topology: topology.k8s.aws/ultraserver-id"));
    assert!(
        two.contains("  - \"--nproc-per-node=4\"") && two.contains("pretrain_megatron_bridge.py")
    );
    assert!(!two.contains("efa"), "{two}");
    let one = yaml(&format!("{q}&nodes=18"));
    assert!(one.contains("required_topology: topology.k8s.aws/ultraserver-id"));
}

/// EFA interfaces as sagemaker-hyperpod allocates them (tests/sdk compares
/// the whole catalogue).
#[test]
fn efa_by_instance() {
    for (t, n) in [
        ("ml.p5.48xlarge", 32),
        ("ml.p5en.48xlarge", 16),
        ("ml.p6-b200.48xlarge", 8),
        ("ml.p4d.24xlarge", 4),
        ("ml.p5.4xlarge", 1),
        ("ml.g6e.48xlarge", 4),
        ("ml.g6e.2xlarge", 0),
        ("ml.p6e-gb200.36xlarge", 0),
    ] {
        assert_eq!(efa_interfaces(t), n, "{t}");
    }
}
