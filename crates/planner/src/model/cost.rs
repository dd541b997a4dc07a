//! Time to train, GPU-hours, USD, the cost of saving checkpoints, and the
//! interruptions a job of its size expects (`failures`).

use crate::model::architecture::ParameterCounts;
use crate::model::failures::{failures, Failures, Reliability, Saves};
use crate::model::hardware::Instance;
use crate::model::job::Job;
use crate::model::plan::{Plan, Precision, SaveKind, Training};
use crate::model::throughput::Throughput;
use serde::Serialize;

/// SageMaker managed spot training typically bills 60-70% below on-demand;
/// we assume 65% off. The real discount varies by region and hour.
pub const SPOT_DISCOUNT: f64 = 0.65;

/// Host staging bandwidth per GPU for an asynchronous save (PCIe, GB/s).
const ASYNC_STAGING_GBPS: f64 = 20.0;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Checkpointing {
    /// Bytes written per save, whole job.
    pub size_bytes: u64,
    /// Seconds one save takes to reach the destination.
    pub seconds_per_save: f64,
    /// Seconds of training blocked per save (all of it when synchronous).
    pub blocking_seconds_per_save: f64,
    pub saves: u64,
    /// Share of wall time spent blocked on saving.
    pub wall_share: f64,
    /// The same share if saving were synchronous (for comparison).
    pub wall_share_sync: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Time {
    pub steps: u64,
    pub training_hours: f64,
    pub checkpoint_hours: f64,
    /// Hours interruptions add: restarts, reloads and lost work (#58).
    pub failure_hours: f64,
    /// Training, saves and interruptions; the job's whole wall time.
    pub total_hours: f64,
    pub gpu_hours: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cost {
    /// USD per instance-hour used (the user's override, else the price table's).
    pub price_per_instance_hour: Option<f64>,
    /// `user`, `listed`, `derived` (an estimate: 1.15 x EC2) or `unknown` (SPEC §8).
    pub price_source: String,
    /// When a listed price was read; the EC2 price list's date for a derived one.
    pub price_as_of: Option<String>,
    pub total_usd: Option<f64>,
    pub spot_usd: Option<f64>,
    pub usd_per_million_tokens: Option<f64>,
}

/// Whether a checkpoint holds the adapters only: their save, or any save
/// of a LoRA or QLoRA plan.
fn saves_adapters(plan: &Plan) -> bool {
    plan.saving.save == SaveKind::Adapter || plan.training.train != Training::Full
}

/// Bytes one checkpoint writes for this plan.
pub fn checkpoint_bytes(plan: &Plan, counts: &ParameterCounts, adapter_params: f64) -> u64 {
    let p = counts.total as f64;
    let bytes = match plan.saving.save {
        _ if saves_adapters(plan) => {
            adapter_params
                * 2.0
                * if plan.saving.save == SaveKind::Full {
                    8.0
                } else {
                    1.0
                }
        }
        // bf16 (or fp32) weights, as exported for inference
        SaveKind::Weights => {
            p * if plan.numerics.precision == Precision::Fp32 {
                4.0
            } else {
                2.0
            }
        }
        // resumable: fp32 weights (or bf16 + fp32 master) and optimizer states
        _ => {
            p * (4.0
                + match plan.training.optimizer {
                    crate::model::plan::Optimizer::Adamw
                    | crate::model::plan::Optimizer::AdamwForeach => 8.0,
                    crate::model::plan::Optimizer::Adamw8bit => 2.0,
                    crate::model::plan::Optimizer::Adafactor => 0.1,
                    crate::model::plan::Optimizer::Sgd => 4.0,
                })
        }
    };
    bytes as u64
}

/// Time, checkpoint overhead and cost of a resolved job at its step time.
/// The training GPUs stage an asynchronous save; the GPU-hours count every
/// GPU paid for, a GRPO plan's vLLM server's too (the report, the instance
/// comparison and the search read the same time, #34).
pub fn estimate(plan: &Plan, job: &Job, tp: &Throughput) -> (Time, Checkpointing, Failures, Cost) {
    // Only a checkpoint of the adapters reads their size.
    let adapters = match saves_adapters(plan) {
        true => job.recipe.lora_params(&job.arch),
        false => 0.0,
    };
    let (mut time, ckpt, failures) = time(plan, &job.counts, adapters, tp, job.layout.gpus);
    time.gpu_hours = time.total_hours * paid_gpus(plan, job) as f64;
    let cost = price(plan, &job.instance, tp, time.total_hours);
    (time, ckpt, failures, cost)
}

/// The GPUs the job pays for: training's, and a GRPO plan's vLLM server's.
fn paid_gpus(plan: &Plan, job: &Job) -> u64 {
    let (nodes, gpn) = (plan.hardware.nodes, job.instance.gpu_count);
    job.layout.gpus
        + crate::model::rollout::server_gpus(&job.recipe.training, gpn, nodes).unwrap_or(0)
}

/// The job's wall-clock time: its steps, the checkpoints it saves and the
/// interruptions its GPUs expect (the search ranks on this alone, for every
/// plan it times, so at scale a plan that saves faster can win).
pub fn time(
    plan: &Plan,
    counts: &ParameterCounts,
    adapter_params: f64,
    tp: &Throughput,
    gpus: u64,
) -> (Time, Checkpointing, Failures) {
    let steps = (plan.data.tokens / tp.tokens_per_step.max(1) as f64)
        .ceil()
        .max(1.0) as u64;
    let training_seconds = steps as f64 * tp.step_seconds;
    let size = checkpoint_bytes(plan, counts, adapter_params);
    // Every node writes its shard in parallel at the destination bandwidth.
    let write_bw = plan.saving.save_bw * 1e9 * plan.hardware.nodes.max(1) as f64;
    let seconds_per_save = size as f64 / write_bw;
    let staging = size as f64 / (gpus.max(1) as f64 * ASYNC_STAGING_GBPS * 1e9);
    let blocking = if plan.saving.async_save {
        staging.min(seconds_per_save)
    } else {
        seconds_per_save
    };
    let saves = steps.checked_div(plan.saving.save_every).unwrap_or(0);
    let interval = plan.saving.save_every.max(1) as f64 * tp.step_seconds;
    let share = |block: f64| {
        if saves == 0 {
            0.0
        } else {
            block / (interval + block)
        }
    };
    let checkpoint_seconds = saves as f64 * blocking;
    let failures = failures(
        &Saves {
            step_seconds: tp.step_seconds,
            steps,
            every: plan.saving.save_every,
            blocking_seconds: blocking,
            reload_seconds: seconds_per_save,
            in_memory: plan.saving.recovery == crate::model::plan::Recovery::Memory,
        },
        &Reliability {
            rate_per_million_gpu_hours: plan.saving.fail_rate,
            gpus,
            restart_seconds: plan.saving.restart_minutes * 60.0,
            spot_per_instance_hour: spot_per_instance_hour(plan),
            instances: plan.hardware.nodes,
        },
    );
    // A job that never finishes keeps its time without interruptions; the
    // report's failures say why it cannot be trusted.
    let failure_hours = failures.lost_hours.unwrap_or(0.0);
    let total_hours = (training_seconds + checkpoint_seconds) / 3600.0 + failure_hours;
    let time = Time {
        steps,
        training_hours: training_seconds / 3600.0,
        checkpoint_hours: checkpoint_seconds / 3600.0,
        failure_hours,
        total_hours,
        gpu_hours: total_hours * gpus as f64,
    };
    let ckpt = Checkpointing {
        size_bytes: size,
        seconds_per_save,
        blocking_seconds_per_save: blocking,
        saves,
        wall_share: share(blocking),
        wall_share_sync: share(seconds_per_save),
    };
    (time, ckpt, failures)
}

/// What `total_hours` costs on `nodes` instances, and where the price comes from.
fn price(plan: &Plan, instance: &Instance, tp: &Throughput, total_hours: f64) -> Cost {
    let (price, source, as_of) = match (plan.hardware.price, instance.price_usd_hr) {
        (Some(p), _) => (Some(p), "user", None),
        (None, Some(p)) => (
            Some(p),
            instance.price_basis.key(),
            Some(instance.price_as_of.clone()).filter(|d| !d.is_empty()),
        ),
        (None, None) => (None, "unknown", None),
    };
    let total = price.map(|p| p * plan.hardware.nodes.max(1) as f64 * total_hours);
    Cost {
        price_per_instance_hour: price,
        price_source: source.to_string(),
        price_as_of: as_of,
        total_usd: total,
        spot_usd: total.map(|t| t * (1.0 - SPOT_DISCOUNT)),
        // A job shorter than a step still trains (and pays for) the whole step.
        usd_per_million_tokens: total
            .map(|t| t / (plan.data.tokens.max(tp.tokens_per_step as f64) / 1e6)),
    }
}

/// The cost of a thousand samples (sequences, or DPO pairs of two rows) at
/// `usd_per_million_tokens`.
pub fn usd_per_thousand_samples(plan: &Plan, usd_per_million_tokens: f64) -> f64 {
    usd_per_million_tokens * plan.recipe().tokens_per_sample() as f64 * 1e3 / 1e6
}

/// Managed spot's interruptions per instance-hour: the monthly share of
/// instances reclaimed (`spot_rate`, percent) over the 730 hours of an
/// average month (8,760 / 12); none on on-demand capacity.
fn spot_per_instance_hour(plan: &Plan) -> f64 {
    match plan.hardware.spot {
        true => plan.saving.spot_rate / 100.0 / 730.0,
        false => 0.0,
    }
}
