//! The page's charts of the same job: memory against sequence length for
//! each checkpointing mode, and the job on every training instance type.

use crate::estimate::report::{budget_bytes, InstanceOption};
use crate::model::cost;
use crate::model::hardware;
use crate::model::job::Job;
use crate::model::memory;
use crate::model::plan::Checkpointing;
use crate::model::plan::{InstanceId, Plan};
use crate::model::resolve::resolve_for;

/// The sequence chart's data: peak memory per GPU at each sequence length,
/// for each checkpointing mode.
pub type SequenceChart = Vec<(Checkpointing, Vec<u64>)>;

/// Peak memory per GPU at each sequence length, for each checkpointing
/// mode, of the resolved job (its model, hardware and layout).
pub fn sequence_chart(r: &Job, seqs: &[u64]) -> SequenceChart {
    // GRPO's vLLM share sits beside every sequence length, as in the peak.
    let shape = (&r.arch, &r.counts);
    [
        Checkpointing::None,
        Checkpointing::Selective,
        Checkpointing::Op,
        Checkpointing::Full,
    ]
    .into_iter()
    .map(|ck| {
        let mut p = r.recipe;
        p.activations.checkpointing = ck;
        let row = seqs
            .iter()
            .map(|&s| {
                p.data.seq = s;
                let m = memory::breakdown(&r.arch, &r.counts, &p, &r.layout);
                memory::with_engine(m, shape, &p, &r.layout, &r.gpu).peak_bytes
            })
            .collect();
        (ck, row)
    })
    .collect()
}

/// This job on every multi-GPU training instance type, at the same number
/// of GPUs where the instance size allows it (at least one instance). The
/// job's model is reused; each instance resolves its hardware and layout.
pub fn instance_options(plan: &Plan, r0: &Job) -> Vec<InstanceOption> {
    // A model with an error has it on every instance: no option runs.
    if !r0.model_valid {
        return Vec::new();
    }
    let total_gpus = r0.layout.gpus;
    let mut out = Vec::new();
    for inst in hardware::instances() {
        if inst.gpu_count < 4 && !plan.hardware.instance.is(inst.instance_type) {
            continue;
        }
        let Some(gpu) = hardware::gpu(inst.gpu) else {
            continue;
        };
        let mut p = plan.clone();
        if !plan.hardware.instance.is(inst.instance_type) {
            // The user's price override is for their own instance type.
            p.hardware.price = None;
        }
        p.hardware.instance = InstanceId::Listed(inst.instance_type.to_string());
        p.hardware.nodes = total_gpus.div_ceil(inst.gpu_count).max(1);
        if !inst.multi_node_efa_training {
            p.hardware.nodes = 1;
        }
        p.numerics.precision = crate::model::rules::nearest_supported(p.numerics.precision, gpu);
        // Tensor parallelism cannot leave the node.
        p.parallelism.tp = p.parallelism.tp.min(inst.gpu_count);
        let model = (r0.arch.clone(), r0.model_name.clone());
        let (r, errors) = resolve_for(&p, model, Vec::new());
        if !errors.is_empty() {
            continue;
        }
        let mem = r.memory_with_engine();
        let usable = r.gpu.usable_bytes();
        let tp = r.throughput(&r.efficiency());
        let (time, _, _, cost) = cost::estimate(&p, &r, &tp);
        out.push(InstanceOption {
            instance: inst.instance_type.to_string(),
            gpu: inst.gpu.to_string(),
            nodes: p.hardware.nodes,
            gpus: r.layout.gpus,
            precision: p.numerics.precision,
            fits: mem.peak_bytes <= budget_bytes(usable, p.allowances.headroom),
            peak_bytes_per_gpu: mem.peak_bytes,
            usable_bytes: usable,
            budget_bytes: budget_bytes(usable, p.allowances.headroom),
            tokens_per_second: tp.tokens_per_second,
            hours: time.total_hours,
            usd: cost.total_usd,
            spot_usd: cost.spot_usd,
            price_source: cost.price_source,
            fastest: false,
            cheapest: false,
        });
    }
    // Fitting options first, fastest first; then mark the fastest and the cheapest.
    out.sort_by(|a, b| b.fits.cmp(&a.fits).then(a.hours.total_cmp(&b.hours)));
    if let Some(first) = out.first_mut().filter(|o| o.fits) {
        first.fastest = true;
    }
    if let Some(c) = out
        .iter_mut()
        .filter(|o| o.fits && o.usd.is_some())
        .min_by(|a, b| {
            a.usd
                .unwrap_or(f64::MAX)
                .total_cmp(&b.usd.unwrap_or(f64::MAX))
        })
    {
        c.cheapest = true;
    }
    out
}
