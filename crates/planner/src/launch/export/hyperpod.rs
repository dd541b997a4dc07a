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

use super::context::{entry_path, header, hyperparameter_items, Ctx};
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
pub(super) fn config_yaml(c: &Ctx<'_>) -> String {
    let plan = c.plan;
    let mut s = String::from("# template: hyp-pytorch-job\n# version: 1.1\n");
    s.push_str(&header(c, "SageMaker HyperPod (EKS) job for hyp create"));
    s.push_str(RUN_IT);
    let job = if plan.launch.job.is_empty() {
        "train-planner"
    } else {
        &plan.launch.job
    };
    let _ = writeln!(s, "job_name: {job}");
    let _ = writeln!(s, "image: 123456789012.dkr.ecr.us-east-1.amazonaws.com/train-planner:latest  # yours: see above");
    container(c, &mut s);
    resources(c, &mut s);
    s.push_str(CHECKPOINTS);
    let _ = writeln!(s, "deep_health_check_passed_nodes_only: true");
    let _ = writeln!(
        s,
        "# Auto-resume: the operator restarts the job from its last checkpoint."
    );
    let _ = writeln!(s, "max_retry: 3");
    s
}

/// The command (the script under `hyperpodrun`, one process per GPU; grpo.py
/// with a vLLM server starts the server and torchrun itself), its arguments
/// and environment.
fn container(c: &Ctx<'_>, s: &mut String) {
    let script = format!("{SCRIPTS_DIR}/{}", entry_path(c.plan));
    let command: Vec<String> = match c.server_gpus {
        0 => vec![
            "hyperpodrun".into(),
            format!("--nnodes={}", c.plan.hardware.nodes),
            format!("--nproc-per-node={}", c.gpus_per_node),
            script,
        ],
        _ => vec!["python3".into(), script],
    };
    let _ = writeln!(s, "command:");
    for part in &command {
        let _ = writeln!(s, "  - {}", yaml_str(part));
    }
    let _ = writeln!(s, "args:");
    for (k, v) in hyperparameter_items(c.plan, c.report) {
        let _ = writeln!(s, "  - \"--{k}\"");
        let _ = writeln!(s, "  - {}", yaml_value(&v));
    }
    let _ = writeln!(
        s,
        "environment:\n  PYTORCH_CUDA_ALLOC_CONF: \"expandable_segments:True\""
    );
}

/// Instances, GPUs and EFA per pod, and the UltraServer topology: one
/// UltraServer holding the whole job is required; across several, pods
/// prefer packing by UltraServer, as the NVLink domains were planned.
fn resources(c: &Ctx<'_>, s: &mut String) {
    let h = &c.plan.hardware;
    let _ = writeln!(s, "instance_type: {}", h.instance.key());
    let _ = writeln!(s, "replica_count: {}", h.nodes);
    let tasks = if c.server_gpus > 0 {
        1
    } else {
        c.gpus_per_node
    };
    let _ = writeln!(s, "tasks_per_node: \"{tasks}\"");
    let gpus = c.gpus_per_node;
    let _ = writeln!(s, "accelerators: {gpus}\naccelerators_limit: {gpus}");
    if let n @ 1.. = efa_interfaces(h.instance.key()) {
        let _ = writeln!(s, "efa: {n}\nefa_limit: {n}");
    }
    if let Some(servers) = &c.ultraservers {
        let key = if servers.len() == 1 {
            "required_topology"
        } else {
            "preferred_topology"
        };
        let _ = writeln!(s, "{key}: topology.k8s.aws/ultraserver-id");
    }
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
