//! A SageMaker HyperPod (EKS) job for the plan: the `config.yaml` that
//! `hyp create` reads in a directory `hyp init hyp-pytorch-job` made
//! (sagemaker-hyperpod 3.12.0, template hyperpod-pytorch-job-template 1.1;
//! its keys are `PyTorchJobConfig`'s fields). Facts:
//! ../shared/data/sagemaker_at_scale.md. tests/sdk/check.py renders it
//! through the pinned packages, offline.
//!
//! The job runs the bundle's script with `hyperpodrun`, the HyperPod
//! elastic agent's torchrun (pip `hyperpod-elastic-agent`, in the image),
//! one process per GPU; the arguments are the hyperparameters the SageMaker
//! launchers pass, so the script trains the same plan.

use super::context::{header_of, hyperparameter_items};
use crate::estimate::report::Report;
use crate::model::plan::Plan;
use std::fmt::Write;

/// Where the image holds the bundle's `scripts/` folder.
pub const SCRIPTS_DIR: &str = "/opt/train-planner/scripts";

/// EFA interfaces a pod of each instance type requests: what sagemaker-hyperpod
/// 3.12.0 allocates (`training/constants.py`, INSTANCE_RESOURCES; tests/sdk
/// compares every catalogue instance). 0 for ml.p6e-gb200.36xlarge: the
/// package refuses an EFA request there.
pub fn efa_interfaces(instance_type: &str) -> u64 {
    let size = instance_type.rsplit('.').next().unwrap_or("");
    let family = instance_type.split('.').nth(1).unwrap_or("");
    match (family, size) {
        ("p5" | "p5e", "48xlarge") => 32,
        ("p5en" | "p6-b300", "48xlarge") => 16,
        ("p6-b200", "48xlarge") => 8,
        ("p4d" | "p4de", _) | ("g6e" | "g7e", "48xlarge") => 4,
        ("g6e" | "g7e", "24xlarge") => 2,
        ("p6e-gb200", _) => 0,
        ("p5", _) => 1,
        (_, "xlarge" | "2xlarge" | "4xlarge") => 0,
        ("g5" | "g6" | "g6e" | "g7e", _) => 1,
        _ => 0,
    }
}

/// The job's `config.yaml`, its comments saying how to run it.
pub fn config_yaml(plan: &Plan, report: &Report) -> String {
    let h = &plan.hardware;
    let server = report.rollout.as_ref().map_or(0, |g| g.server_gpus);
    let gpus_per_node = (report.layout.gpus + server) / h.nodes.max(1);
    let mut s = String::from("# template: hyp-pytorch-job\n# version: 1.1\n");
    s.push_str(&header_of(
        plan,
        report,
        "SageMaker HyperPod (EKS) job for hyp create",
    ));
    s.push_str(RUN_IT);
    let job = if plan.launch.job.is_empty() {
        "train-planner"
    } else {
        &plan.launch.job
    };
    let _ = writeln!(s, "job_name: {job}");
    let _ = writeln!(s, "image: 123456789012.dkr.ecr.us-east-1.amazonaws.com/train-planner:latest  # yours: see above");
    let script = format!("{SCRIPTS_DIR}/{}", super::context::entry_path(plan));
    // grpo.py with a vLLM server starts the server and torchrun itself.
    let command: Vec<String> = match server {
        0 => vec![
            "hyperpodrun".into(),
            format!("--nnodes={}", h.nodes),
            format!("--nproc-per-node={gpus_per_node}"),
            script,
        ],
        _ => vec!["python3".into(), script],
    };
    let _ = writeln!(s, "command:");
    for c in &command {
        let _ = writeln!(s, "  - {}", yaml_str(c));
    }
    let _ = writeln!(s, "args:");
    for (k, v) in hyperparameter_items(plan, report) {
        let _ = writeln!(s, "  - \"--{k}\"");
        let _ = writeln!(s, "  - {}", yaml_value(&v));
    }
    let _ = writeln!(
        s,
        "environment:\n  PYTORCH_CUDA_ALLOC_CONF: \"expandable_segments:True\""
    );
    let _ = writeln!(s, "instance_type: {}", h.instance.key());
    let _ = writeln!(s, "replica_count: {}", h.nodes);
    let tasks = if server > 0 { 1 } else { gpus_per_node };
    let _ = writeln!(s, "tasks_per_node: \"{tasks}\"");
    let _ = writeln!(
        s,
        "accelerators: {gpus_per_node}\naccelerators_limit: {gpus_per_node}"
    );
    match efa_interfaces(h.instance.key()) {
        0 => {}
        n => {
            let _ = writeln!(s, "efa: {n}\nefa_limit: {n}");
        }
    }
    if let Some(servers) = crate::model::hardware::instance(h.instance.key())
        .and_then(|i| crate::model::hardware::ultraservers(i, h.ultraserver, h.nodes))
    {
        // One UltraServer holds the whole job: require it; else prefer
        // packing pods by UltraServer, as the NVLink domains were planned.
        let key = if servers.len() == 1 {
            "required_topology"
        } else {
            "preferred_topology"
        };
        let _ = writeln!(s, "{key}: topology.k8s.aws/ultraserver-id");
    }
    s.push_str(CHECKPOINTS);
    let _ = writeln!(s, "deep_health_check_passed_nodes_only: true");
    let _ = writeln!(
        s,
        "# Auto-resume: the operator restarts the job from its last checkpoint."
    );
    let _ = writeln!(s, "max_retry: 3");
    s
}

const RUN_IT: &str = "\
# Run it: hyp init hyp-pytorch-job my-job && cp this-file my-job/config.yaml && cd my-job && hyp create
# The image: the plan's training container (the SageMaker launch code names it) with
# `pip install hyperpod-elastic-agent` (hyperpodrun) and the bundle's scripts/ in /opt/train-planner/scripts.
";

/// The script saves where the SageMaker launchers sync from
/// (`--output_dir /opt/ml/checkpoints`); on HyperPod that must be shared
/// storage for a restarted job to resume.
const CHECKPOINTS: &str = "\
# Checkpoints on the cluster's shared FSx for Lustre volume (claim fsx-claim in AWS's
# HyperPod EKS set-up; yours may differ), so that a restarted job resumes from them.
volume:
  - name: checkpoints
    type: pvc
    mount_path: /opt/ml/checkpoints
    claim_name: fsx-claim
    read_only: false
";

/// A YAML double-quoted scalar: the Python literal `py_str` writes uses the
/// escapes YAML reads the same way (`\\\"`, `\\\\`, `\\n`, `\\xNN`, `\\uNNNN`).
fn yaml_str(s: &str) -> String {
    super::python::py_str(s)
}

/// A hyperparameter as the string argument it becomes (SageMaker passes
/// every hyperparameter as text too).
fn yaml_value(v: &str) -> String {
    if v.starts_with('"') {
        v.to_string()
    } else {
        yaml_str(v)
    }
}
