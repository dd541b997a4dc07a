//! SDK v2: the `PyTorch` and `HuggingFace` estimators, and the matching
//! `transformers.TrainingArguments`.

use super::context::*;
use super::python::*;
use crate::model::plan::{Checkpointing, Loss, Precision};
use std::fmt::Write;

pub(super) fn estimator(
    c: &Ctx<'_>,
    class: &str,
    versions: &[(&str, String)],
    distribution: &str,
) -> String {
    let p = c.plan;
    let mut s = format!("estimator = {class}(\n");
    let _ = writeln!(s, "    entry_point={},", entry(p));
    let _ = writeln!(s, "    source_dir=\"scripts\",");
    let _ = writeln!(s, "    role=role,");
    let _ = writeln!(
        s,
        "    instance_type={},",
        py_str(p.hardware.instance.key())
    );
    let _ = writeln!(s, "    instance_count={},", p.hardware.nodes);
    for a in capacity_arguments(c, "training_plan", "instance_placement_config") {
        let _ = writeln!(s, "    {a},");
    }
    for (k, v) in versions {
        let _ = writeln!(s, "    {k}={v},");
    }
    s.push_str(&launch_argument(c, "distribution", distribution));
    let _ = writeln!(s, "    hyperparameters=hyperparameters,");
    let _ = writeln!(
        s,
        "    base_job_name={} + (\"-trial\" if TRIAL else \"\"),",
        job_name(p)
    );
    let _ = writeln!(s, "    checkpoint_s3_uri=s3_prefix + \"/checkpoints\",");
    let _ = writeln!(s, "    checkpoint_local_path=\"/opt/ml/checkpoints\",");
    let _ = writeln!(s, "    output_path=s3_prefix + \"/output\",");
    spot_lines(c, &mut s);
    let _ = writeln!(s, "    sagemaker_session=session,");
    s.push_str(")\n\n");
    s
}

pub(super) fn pytorch(c: &Ctx<'_>) -> String {
    let sdk = &sdk().v2;
    let mut s = header(
        c,
        &format!(
            "SageMaker Python SDK v2 PyTorch estimator ({})",
            sdk.package
        ),
    );
    let (version, py, note) = if c.smp {
        let v = &sdk.smp_pytorch[0];
        (
            v.version,
            v.py,
            format!("SMP v2 {} image (PyTorch {})", v.smp, v.version),
        )
    } else {
        let v = &sdk.pytorch[0];
        (
            v.version,
            v.py,
            format!(
                "PyTorch {} ({}){}",
                v.version,
                v.cuda,
                if c.blackwell {
                    ": Blackwell needs CUDA >= 12.8"
                } else {
                    ""
                }
            ),
        )
    };
    if nemo(c.plan) {
        let _ = writeln!(
            s,
            "# Image: the NeMo Framework container (Megatron-Bridge), from your ECR"
        );
    } else {
        let _ = writeln!(s, "# Image: {note}");
    }
    if let Some(n) = c.smp_fallback_note().filter(|_| !nemo(c.plan)) {
        let _ = writeln!(s, "# {n}");
    }
    s.push_str("import sys\n\nimport sagemaker\nfrom sagemaker.pytorch import PyTorch\n\n");
    if nemo(c.plan) {
        s.push_str(NEMO_IMAGE);
        s.push('\n');
    }
    s.push_str(&preamble(c, "sagemaker.Session()"));
    s.push_str(&capacity(c, false));
    s.push('\n');
    s.push_str(&hyperparameters(c));
    s.push('\n');
    let distribution = if c.smp {
        let params = smp_parameters(c)
            .iter()
            .map(|(k, v)| format!("{}: {v}", py_str(k)))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "{{\n        \"torch_distributed\": {{\"enabled\": True}},\n        \"smdistributed\": {{\"modelparallel\": {{\"enabled\": True, \"parameters\": {{{params}}}}}}},\n    }}"
        )
    } else {
        "{\"torch_distributed\": {\"enabled\": True}}".into()
    };
    let versions = if nemo(c.plan) {
        vec![("image_uri", "NEMO_IMAGE_URI".to_string())]
    } else {
        vec![
            ("framework_version", py_str(version)),
            ("py_version", py_str(py)),
        ]
    };
    s.push_str(&estimator(c, "PyTorch", &versions, &distribution));
    s.push_str("if __name__ == \"__main__\":\n    estimator.fit({\"train\": s3_prefix + \"/data/train\"}, wait=False)\n");
    s
}

pub(super) fn huggingface(c: &Ctx<'_>) -> String {
    let sdk = &sdk().v2;
    let v = &sdk.huggingface[0];
    let mut s = header(
        c,
        &format!(
            "SageMaker Python SDK v2 HuggingFace estimator ({})",
            sdk.package
        ),
    );
    let _ = writeln!(
        s,
        "# Image: transformers {} + PyTorch {} ({}){}",
        v.transformers,
        v.pytorch,
        v.cuda,
        if c.blackwell {
            ": Blackwell needs CUDA >= 12.8"
        } else {
            ""
        }
    );
    if c.smp_wanted {
        let _ = writeln!(s, "# The HuggingFace estimator runs plain torchrun + FSDP here; for SMP v2 use the PyTorch export.");
    }
    s.push_str("import sys\n\nimport sagemaker\nfrom sagemaker.huggingface import HuggingFace\n\n");
    s.push_str(&preamble(c, "sagemaker.Session()"));
    s.push_str(&capacity(c, false));
    s.push('\n');
    s.push_str(&hyperparameters(c));
    s.push('\n');
    s.push_str(&estimator(
        c,
        "HuggingFace",
        &[
            ("transformers_version", py_str(v.transformers)),
            ("pytorch_version", py_str(v.pytorch)),
            ("py_version", py_str(v.py)),
        ],
        "{\"torch_distributed\": {\"enabled\": True}}",
    ));
    s.push_str("if __name__ == \"__main__\":\n    estimator.fit({\"train\": s3_prefix + \"/data/train\"}, wait=False)\n");
    s
}

pub(super) fn training_args(c: &Ctx<'_>) -> String {
    let p = c.plan;
    let r = c.report;
    let mut s = header(c, "transformers.TrainingArguments for train.py");
    s.push_str("from transformers import TrainingArguments\n\n");
    s.push_str("args = TrainingArguments(\n");
    let _ = writeln!(s, "    output_dir=\"/opt/ml/checkpoints\",");
    let _ = writeln!(s, "    per_device_train_batch_size={},", p.data.micro_batch);
    let _ = writeln!(s, "    gradient_accumulation_steps={},", p.data.grad_accum);
    let _ = writeln!(s, "    max_steps={},", r.time.steps);
    let _ = writeln!(
        s,
        "    bf16={},",
        py_bool(!matches!(p.numerics.precision, Precision::Fp32))
    );
    let ck = !matches!(
        p.activations.checkpointing,
        Checkpointing::None | Checkpointing::Selective
    );
    let _ = writeln!(s, "    gradient_checkpointing={},", py_bool(ck));
    if ck {
        let _ = writeln!(
            s,
            "    gradient_checkpointing_kwargs={{\"use_reentrant\": False}},"
        );
    }
    let _ = writeln!(s, "    optim={},", py_str(hf_optim(p.training.optimizer)));
    let fsdp = fsdp_value(p);
    if !fsdp.is_empty() && r.layout.dp > 1 {
        let _ = writeln!(s, "    fsdp={},", py_str(fsdp));
        let _ = writeln!(
            s,
            "    fsdp_config={{\"backward_prefetch\": \"backward_pre\", \"forward_prefetch\": True, \"use_orig_params\": True, \"activation_checkpointing\": False}},"
        );
    }
    if p.implementation.loss == Loss::Fused {
        let _ = writeln!(
            s,
            "    use_liger_kernel=True,  # fused linear cross-entropy: no full logits"
        );
    }
    let _ = writeln!(s, "    save_strategy=\"steps\",");
    let _ = writeln!(s, "    save_steps={},", p.saving.save_every.max(1));
    let _ = writeln!(s, "    logging_steps=10,");
    let _ = writeln!(s, "    report_to=\"none\",");
    s.push_str(")\n");
    if p.numerics.precision.is_low_precision() {
        s.push_str("\n# FP8 with TransformerEngine: wrap the forward pass; the embedding, norms and LM head\n");
        s.push_str("# stay in BF16 (TransformerEngine only converts the te.Linear/te.LayerNormMLP layers you use).\n");
        s.push_str("from transformer_engine.common.recipe import Format");
        match (p.numerics.precision, c.blackwell) {
            (Precision::Mxfp8, _) => {
                s.push_str(", MXFP8BlockScaling\n\nfp8_recipe = MXFP8BlockScaling(fp8_format=Format.E4M3)\n");
            }
            (Precision::Nvfp4, _) => {
                s.push_str(", NVFP4BlockScaling\n\nfp8_recipe = NVFP4BlockScaling()\n");
            }
            (_, true) => {
                s.push_str(", Float8CurrentScaling\n\nfp8_recipe = Float8CurrentScaling(fp8_format=Format.HYBRID)\n");
            }
            _ => {
                s.push_str(", DelayedScaling\n\nfp8_recipe = DelayedScaling(fp8_format=Format.HYBRID, amax_history_len=16, amax_compute_algo=\"max\")\n");
            }
        }
        s.push_str("# In the training step:\n#   import transformer_engine.pytorch as te\n#   with te.fp8_autocast(enabled=True, fp8_recipe=fp8_recipe):\n#       loss = model(**batch).loss\n");
    }
    s
}
