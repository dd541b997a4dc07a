//! SDK v3: the `ModelTrainer` and the image the SDK's own lookup picks.

use super::context::*;
use super::python::*;
use std::fmt::Write;

/// The ModelTrainer's image, looked up by the SDK's own `image_uris.retrieve`.
pub(super) fn image_lookup(c: &Ctx<'_>, version: &str, py: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "training_image = image_uris.retrieve(");
    // SMP v2 images live under their own framework key (pytorch-smp, CUDA 12.4).
    let _ = writeln!(
        s,
        "    framework={},",
        py_str(if c.smp { "pytorch-smp" } else { "pytorch" })
    );
    let _ = writeln!(s, "    region=session.boto_region_name,");
    let _ = writeln!(s, "    version={},", py_str(version));
    let _ = writeln!(s, "    py_version={},", py_str(py));
    let _ = writeln!(
        s,
        "    instance_type={},",
        py_str(c.plan.hardware.instance.key())
    );
    let _ = writeln!(s, "    image_scope=\"training\",");
    if c.smp {
        let _ = writeln!(s, "    container_version=\"cu124\",");
    }
    s.push_str(")\n\n");
    s
}

/// What the ModelTrainer's image is, for the launch code's header.
pub(super) fn trainer_image_note(c: &Ctx<'_>, version: &str) -> String {
    if nemo(c.plan) {
        "the NeMo Framework container (Megatron-Bridge), from your ECR".into()
    } else if c.smp {
        format!("PyTorch {version} with SMP v2")
    } else if c.blackwell {
        format!("PyTorch {version}: Blackwell needs CUDA >= 12.8")
    } else {
        format!("PyTorch {version}")
    }
}

pub(super) fn modeltrainer(c: &Ctx<'_>) -> String {
    let sdk = &sdk().v3;
    let p = c.plan;
    let mut s = header(
        c,
        &format!("SageMaker Python SDK v3 ModelTrainer ({})", sdk.package),
    );
    let (version, py) = if c.smp {
        (sdk.smp_pytorch[0].version, sdk.smp_pytorch[0].py)
    } else {
        (sdk.pytorch[0].version, sdk.pytorch[0].py)
    };
    let _ = writeln!(s, "# Image: {}", trainer_image_note(c, version));
    if let Some(n) = c.smp_fallback_note() {
        let _ = writeln!(s, "# {n}");
    }
    s.push_str("import sys\n\nfrom sagemaker.core import image_uris\n");
    s.push_str("from sagemaker.core.helper.session_helper import Session, get_execution_role\n");
    s.push_str("from sagemaker.train import ModelTrainer\n");
    s.push_str("from sagemaker.core.training.configs import CheckpointConfig, Compute, OutputDataConfig, SourceCode, StoppingCondition\n");
    if c.ultraservers.is_some() {
        s.push_str(
            "from sagemaker.core.shapes import InstancePlacementConfig, PlacementSpecification\n",
        );
    }
    s.push_str(if c.smp {
        "from sagemaker.train.distributed import SMP, Torchrun\n\n"
    } else {
        "from sagemaker.train.distributed import Torchrun\n\n"
    });
    s.push_str(
        &preamble(c, "Session()").replace("sagemaker.get_execution_role()", "get_execution_role()"),
    );
    s.push_str(&capacity(c, true));
    s.push('\n');
    s.push_str(&hyperparameters(c));
    s.push('\n');
    if nemo(p) {
        s.push_str(NEMO_IMAGE);
        s.push_str("training_image = NEMO_IMAGE_URI\n\n");
    } else {
        s.push_str(&image_lookup(c, version, py));
    }
    let distributed = if c.smp {
        let params = smp_parameters(c)
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "Torchrun(process_count_per_node={}, smp=SMP({params}))",
            c.gpus_per_node
        )
    } else {
        format!("Torchrun(process_count_per_node={})", c.gpus_per_node)
    };
    let run = max_run(c);
    s.push_str("trainer = ModelTrainer(\n");
    let _ = writeln!(s, "    training_image=training_image,");
    let _ = writeln!(
        s,
        "    source_code=SourceCode(source_dir=\"scripts\", entry_script={}),",
        entry(p)
    );
    s.push_str(&compute_line(c));
    s.push_str(&launch_argument(c, "distributed", &distributed));
    let _ = writeln!(s, "    hyperparameters=hyperparameters,");
    let _ = writeln!(s, "    role=role,");
    let _ = writeln!(
        s,
        "    base_job_name={} + (\"-trial\" if TRIAL else \"\"),",
        job_name(p)
    );
    let _ = writeln!(s, "    checkpoint_config=CheckpointConfig(s3_uri=s3_prefix + \"/checkpoints\", local_path=\"/opt/ml/checkpoints\"),");
    let _ = writeln!(
        s,
        "    output_data_config=OutputDataConfig(s3_output_path=s3_prefix + \"/output\"),"
    );
    s.push_str(&stopping_line(run, p.hardware.spot));
    let _ = writeln!(s, "    sagemaker_session=session,");
    s.push_str(")\n\n");
    s.push_str("if __name__ == \"__main__\":\n    trainer.train(wait=False)\n");
    s
}

/// `compute=Compute(...)`: the instances, spot, and the training plan's
/// capacity and UltraServer placement where the plan has them.
fn compute_line(c: &Ctx<'_>) -> String {
    let h = &c.plan.hardware;
    let capacity: String = capacity_arguments(c, "training_plan_arn", "instance_placement_config")
        .iter()
        .map(|a| format!(", {a}"))
        .collect();
    format!(
        "    compute=Compute(instance_type={}, instance_count={}, enable_managed_spot_training={}{capacity}),\n",
        py_str(h.instance.key()),
        h.nodes,
        py_bool(h.spot)
    )
}

/// `stopping_condition=...`: `max_run` seconds, and a spot job's wait.
fn stopping_line(run: u64, spot: bool) -> String {
    match spot {
        true => format!(
            "    stopping_condition=StoppingCondition(max_runtime_in_seconds={run}, max_wait_time_in_seconds={}),\n",
            max_wait(run)
        ),
        false => format!("    stopping_condition=StoppingCondition(max_runtime_in_seconds={run}),\n"),
    }
}
