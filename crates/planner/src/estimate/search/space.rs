//! The space the auto-plan walks: instance types and counts, parallel
//! degrees, precisions and checkpointing around the user's plan, and the
//! memory peaks a block shares.

use crate::model::architecture::Architecture;

use crate::estimate::report::budget_bytes;
use crate::model::hardware::{self, Gpu, Instance};
use crate::model::plan::{Checkpointing, Loss, Plan, Precision};
use crate::model::rules;
use crate::model::throughput::{self, Efficiency, Fabric};
use std::borrow::Cow;

#[derive(Clone, Copy, Debug)]
pub(super) struct Found {
    pub(super) hours: f64,
    pub(super) usd: f64, // f64::INFINITY when the price is unknown
    pub(super) idx: [usize; 12],
    /// `memory::peak_estimate`'s, the engine's share included.
    pub(super) peak: f64,
    pub(super) tps: f64,
    pub(super) mfu: f64,
    pub(super) ga: u64,
}

pub(super) struct InstanceInfo {
    pub(super) instance: Cow<'static, Instance>,
    pub(super) gpu: Cow<'static, Gpu>,
    pub(super) fabric: Fabric,
    pub(super) eff: Efficiency,
    pub(super) price: Option<f64>,
    pub(super) budget: u64,
    /// GRPO: the colocated vLLM engine's share of each GPU (`rollout`).
    pub(super) pool: u64,
    /// Which of the distinct (GPUs per node, FP8 kept transposed) classes
    /// this instance type is in: instance types of one class share peaks.
    pub(super) per_node_class: usize,
}

/// The dimensions and their values.
pub(super) struct Space {
    pub(super) instances: Vec<InstanceInfo>,
    pub(super) nodes: Vec<u64>,
    pub(super) precisions: Vec<Precision>,
    pub(super) tps: Vec<u64>,
    pub(super) pps: Vec<u64>,
    pub(super) cps: Vec<u64>,
    /// Expert-parallel degrees (MoE models only; 1 for dense ones).
    pub(super) eps: Vec<u64>,
    /// ZeRO stage, and whether sharding is hybrid (one node's data-parallel ranks).
    pub(super) zeros: Vec<(u8, bool)>,
    /// Where GRPO's vLLM runs (one `Colocated` for other stages).
    pub(super) servers: Vec<Server>,
    pub(super) ckpts: Vec<Checkpointing>,
    pub(super) losses: Vec<Loss>,
    pub(super) mbs: Vec<u64>,
}

/// Where GRPO's vLLM engine runs: on the training GPUs, or as a server
/// on GPUs of its own (`gen_gpus`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Server {
    /// On the training GPUs; `asleep` in vLLM's sleep mode between
    /// generations (`Rollout::sleep`).
    Colocated { asleep: bool },
    /// This many GPUs of a single node.
    Gpus(u64),
}

impl Server {
    /// Its `gen_gpus` on `nodes` nodes of `gpn` GPUs, or `None` where it
    /// cannot run (`rollout::server_gpus`).
    pub(super) fn gpus(self, gpn: u64, nodes: u64) -> Option<u64> {
        match self {
            Server::Colocated { .. } => Some(0),
            Server::Gpus(k) => (nodes == 1 && k < gpn).then_some(k),
        }
    }

    /// Whether vLLM sleeps while training (`Rollout::sleep`).
    pub(super) fn asleep(self) -> bool {
        self == Server::Colocated { asleep: true }
    }
}

impl Space {
    /// The outer dimensions' sizes: instance, nodes, precision, tp, pp, cp, ep, zero, server.
    pub(super) fn outer_dims(&self) -> [usize; 9] {
        [
            self.instances.len(),
            self.nodes.len(),
            self.precisions.len(),
            self.tps.len(),
            self.pps.len(),
            self.cps.len(),
            self.eps.len(),
            self.zeros.len(),
            self.servers.len(),
        ]
    }
    pub(super) fn outer_len(&self) -> usize {
        self.outer_dims().iter().product()
    }
    pub(super) fn inner_len(&self) -> usize {
        self.ckpts.len() * self.losses.len() * self.mbs.len()
    }
    /// Decode an outer block number into indices (instance, nodes,
    /// precision, tp, pp, cp, ep, zero, server). The instance type varies
    /// fastest: one layout's blocks on every instance type come one after
    /// another, so the memory peaks they share are kept for that layout
    /// only (`PeakCache`), not for the whole search (~13 MB for Megatron's
    /// 70B space, whose first touch in a fresh worker cost more time than
    /// the peaks saved).
    pub(super) fn outer(&self, mut n: usize) -> [usize; 9] {
        let dims = self.outer_dims();
        let mut idx = [0; 9];
        for i in std::iter::once(0).chain((1..9).rev()) {
            idx[i] = n % dims[i];
            n /= dims[i];
        }
        idx
    }

    /// The block after `o` in `outer`'s order (wrapping to the first after
    /// the last): `outer(n + 1)` without its divisions.
    pub(super) fn advance(&self, o: &mut [usize; 9]) {
        let dims = self.outer_dims();
        for i in std::iter::once(0).chain((1..9).rev()) {
            o[i] += 1;
            if o[i] < dims[i] {
                return;
            }
            o[i] = 0;
        }
    }

    /// A block's layout and precision without its instance type, and the
    /// instance type's `per_node_class`: blocks with the same key have the
    /// same memory peaks.
    pub(super) fn layout_key(&self, o: [usize; 9]) -> (usize, usize) {
        let dims = self.outer_dims();
        let layout = dims[1..]
            .iter()
            .zip(&o[1..])
            .fold(0, |key, (&d, &i)| key * d + i);
        (layout, self.instances[o[0]].per_node_class)
    }
}

/// The memory peaks of the current layout's blocks (`Space::layout_key`),
/// by `per_node_class`; `None` where a smaller budget stopped the
/// micro-batches before that one. And the layout's floor under them
/// (`memory::states_floor`).
pub(super) struct PeakCache {
    layout: usize,
    by_class: Vec<Vec<Option<f64>>>,
    floors: Vec<Option<f64>>,
}

impl Default for PeakCache {
    fn default() -> Self {
        PeakCache {
            layout: usize::MAX,
            by_class: Vec::new(),
            floors: Vec::new(),
        }
    }
}

impl PeakCache {
    /// Forget the peaks of another layout, and make room for `class`.
    fn enter(&mut self, (layout, class): (usize, usize)) {
        if layout != self.layout {
            self.layout = layout;
            self.by_class.iter_mut().for_each(Vec::clear);
            self.floors.iter_mut().for_each(|f| *f = None);
        }
        if class >= self.by_class.len() {
            self.by_class.resize(class + 1, Vec::new());
            self.floors.resize(class + 1, None);
        }
    }

    /// The layout's floor, computed once.
    pub(super) fn floor(&mut self, key: (usize, usize), floor: impl FnOnce() -> f64) -> f64 {
        self.enter(key);
        *self.floors[key.1].get_or_insert_with(floor)
    }

    pub(super) fn take(&mut self, key: (usize, usize), len: usize) -> Vec<Option<f64>> {
        self.enter(key);
        let peaks = std::mem::take(&mut self.by_class[key.1]);
        if peaks.is_empty() {
            vec![None; len]
        } else {
            peaks
        }
    }

    pub(super) fn put(&mut self, (_, class): (usize, usize), peaks: Vec<Option<f64>>) {
        self.by_class[class] = peaks;
    }
}

pub(super) const TP: [u64; 4] = [1, 2, 4, 8];
pub(super) const PP: [u64; 4] = [1, 2, 4, 8];
pub(super) const NODES: [u64; 6] = [1, 2, 4, 8, 16, 32];
pub(super) const MB: [u64; 6] = [1, 2, 4, 8, 16, 32];
/// Expert-parallel degrees tried for an MoE model (those dividing its experts).
pub(super) const EP: [u64; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

impl Space {
    /// The axes searched around `plan`: each locked one keeps the plan's value.
    pub(super) fn around(plan: &Plan, arch: &Architecture) -> Space {
        let locks = plan.auto.locks;
        let nodes = if locks.nodes {
            vec![plan.hardware.nodes]
        } else {
            NODES.to_vec()
        };
        let precisions = precisions_around(plan);
        let (tps, pps, cps) = degrees_around(plan);
        let eps = match &arch.moe {
            _ if locks.parallelism => vec![plan.parallelism.ep.max(1)],
            _ if plan.bundled_hf() => vec![1],
            Some(_) => EP
                .into_iter()
                .filter(|e| rules::ep_splits_experts(arch, *e))
                .collect(),
            None => vec![1],
        };
        let zeros = if locks.parallelism {
            vec![(plan.parallelism.zero, plan.parallelism.shard.is_some())]
        } else if plan.hf_qlora() {
            vec![(0, false)]
        } else {
            vec![(0, false), (1, false), (2, false), (3, false), (3, true)]
        };
        let ckpts = checkpointings_around(plan);
        let servers = servers_around(plan);
        // grpo.py computes TRL's own loss (`launchers::grpo_refusal`).
        // The fused loss first: where it fits, the plain one is not tried
        // (`Search::inner`).
        let losses = if plan.training.stage.generates() {
            vec![Loss::Plain]
        } else {
            vec![Loss::Fused, Loss::Plain]
        };
        let mbs = if locks.micro_batch {
            vec![plan.data.micro_batch]
        } else {
            MB.to_vec()
        };
        // A stack no engine trains this way has no plan to search for.
        let no_engine = crate::estimate::launchers::no_engine(plan).is_some();
        Space {
            instances: if no_engine {
                Vec::new()
            } else {
                candidate_instances(plan)
            },
            nodes,
            precisions,
            tps,
            pps,
            cps,
            eps,
            zeros,
            servers,
            ckpts,
            losses,
            mbs,
        }
    }
}

/// The precisions tried: the plan's when locked, else BF16, FP8 and the
/// plan's own (the exported train.py runs adapters in BF16 only).
pub(super) fn precisions_around(plan: &Plan) -> Vec<Precision> {
    let locks = plan.auto.locks;
    if locks.precision {
        vec![plan.numerics.precision]
    } else {
        let mut v = vec![Precision::Bf16, Precision::Fp8];
        if !v.contains(&plan.numerics.precision) {
            v.push(plan.numerics.precision);
        }
        v.retain(|&p| rules::adapters_run_in(p, plan.hf_adapters()));
        v
    }
}

/// The tensor, pipeline and context degrees tried (context parallelism
/// from 16K tokens up).
pub(super) fn degrees_around(plan: &Plan) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let locks = plan.auto.locks;
    if locks.parallelism {
        (
            vec![plan.parallelism.tp],
            vec![plan.parallelism.pp],
            vec![plan.parallelism.cp],
        )
    } else if plan.bundled_hf() {
        // The bundled train.py runs TP (checked per block: `hf_tp_refusal`) and no PP or CP.
        (TP.to_vec(), vec![1], vec![1])
    } else {
        let cps = if plan.data.seq >= 16_384 {
            vec![1, 2, 4]
        } else {
            vec![1]
        };
        (TP.to_vec(), PP.to_vec(), cps)
    }
}

/// The activation checkpointing tried on the plan's stack.
pub(super) fn checkpointings_around(plan: &Plan) -> Vec<Checkpointing> {
    let locks = plan.auto.locks;
    if locks.checkpointing {
        vec![plan.activations.checkpointing]
    } else if plan.implementation.stack == crate::model::plan::Stack::Megatron
        && plan.activations.offload
    {
        // Megatron-Core offloads activations only without recomputation.
        vec![Checkpointing::None]
    } else if plan.implementation.stack == crate::model::plan::Stack::Megatron {
        // Op-level checkpointing is PyTorch's; Megatron's middle ground
        // is selective recomputation, which its launcher runs (#37).
        vec![
            Checkpointing::None,
            Checkpointing::Selective,
            Checkpointing::Full,
        ]
    } else {
        vec![Checkpointing::None, Checkpointing::Op, Checkpointing::Full]
    }
}

/// GRPO's vLLM colocated, awake or in sleep mode, or a server on 1, 2 or
/// 4 of one node's GPUs; kept where the user set it (and for other
/// stages, colocated). On the Megatron stack (NeMo RL) a colocated engine
/// always sleeps (`rollout::engine_sleeps`): one colocated choice.
pub(super) fn servers_around(plan: &Plan) -> Vec<Server> {
    let grpo = plan.training.stage.generates();
    if !grpo || plan.auto.locks.parallelism {
        return vec![match plan.training.rollout.gen_gpus {
            0 => Server::Colocated {
                asleep: grpo && plan.training.rollout.sleep,
            },
            k => Server::Gpus(k),
        }];
    }
    let mut servers = vec![
        Server::Colocated { asleep: false },
        Server::Colocated { asleep: true },
        Server::Gpus(1),
        Server::Gpus(2),
        Server::Gpus(4),
    ];
    if plan.implementation.stack == crate::model::plan::Stack::Megatron {
        servers.remove(1);
    }
    servers
}

/// The instance types tried: the plan's own when locked, the user's custom
/// GPU when the plan has one (it is the only hardware the user described),
/// else the multi-GPU training instances and the smallest size of each GPU.
pub(super) fn candidate_instances(plan: &Plan) -> Vec<InstanceInfo> {
    if plan.hardware.instance.is_custom() {
        let (gpu, instance) = hardware::custom(&plan.hardware.custom_gpu);
        return vec![instance_info(plan, Cow::Owned(instance), Cow::Owned(gpu))];
    }
    let locks = plan.auto.locks;
    let all = hardware::instances();
    let smallest_of_its_gpu = |i: &Instance| {
        all.iter()
            .find(|j| j.gpu == i.gpu)
            .is_some_and(|j| j.instance_type == i.instance_type)
    };
    let mut infos: Vec<InstanceInfo> = all
        .iter()
        .filter(|i| {
            if locks.instance {
                plan.hardware.instance.is(i.instance_type)
            } else {
                // Multi-GPU training instances, plus the smallest size of each GPU.
                i.gpu_count >= 4
                    || plan.hardware.instance.is(i.instance_type)
                    || smallest_of_its_gpu(i)
            }
        })
        .filter_map(|i| {
            let gpu = hardware::gpu(i.gpu)?;
            Some(instance_info(plan, Cow::Borrowed(i), Cow::Borrowed(gpu)))
        })
        .collect();
    // Peaks depend on the GPUs per node and on whether FP8 weights are kept
    // transposed too (`Gpu::fp8_tn_only`), not on the GPU's speed.
    let mut per_node: Vec<(u64, bool)> = Vec::new();
    for info in &mut infos {
        let n = (info.instance.gpu_count, info.gpu.fp8_tn_only);
        info.per_node_class = per_node.iter().position(|&m| m == n).unwrap_or_else(|| {
            per_node.push(n);
            per_node.len() - 1
        });
    }
    infos
}

/// One instance type as the search times it: its fabric, efficiency,
/// price (the user's for the plan's own type) and memory budget.
pub(super) fn instance_info(
    plan: &Plan,
    instance: Cow<'static, Instance>,
    gpu: Cow<'static, Gpu>,
) -> InstanceInfo {
    let price = if plan.hardware.instance.is(instance.instance_type) {
        plan.hardware.price.or(instance.price_usd_hr)
    } else {
        instance.price_usd_hr
    };
    InstanceInfo {
        fabric: Fabric::of(&gpu, &instance, plan.hardware.ultraserver),
        eff: throughput::efficiency(gpu.generation),
        price,
        budget: budget_bytes(gpu.usable_bytes(), plan.allowances.headroom),
        pool: crate::model::rollout::pool_bytes(&plan.recipe(), &gpu),
        per_node_class: 0,
        instance,
        gpu,
    }
}

#[cfg(test)]
mod tests {
    use super::Space;
    use crate::model::plan::Plan;

    /// `advance` walks the blocks in `outer`'s order, every one once.
    #[test]
    fn advance_steps_as_outer_counts() {
        let plan = Plan::from_query("model=llama-3.1-70b&seq=32768&impl=megatron").plan;
        let arch = crate::estimate::evaluate::evaluate(&plan)
            .architecture
            .clone();
        let space = Space::around(&plan, &arch);
        let mut o = space.outer(0);
        let mut seen = std::collections::HashSet::new();
        for n in 0..space.outer_len() {
            assert_eq!(o, space.outer(n), "block {n}");
            assert!(seen.insert(o));
            space.advance(&mut o);
        }
        assert_eq!(o, space.outer(0));
        assert!(space.outer_len() > 10_000);
    }
}
