//! The links a job's collectives run over, and what one collective costs on
//! them: bytes at the link's measured bus bandwidth for that collective, plus
//! a fixed and a per-hop latency (#23: collectives at measured speed); and the
//! network between nodes as NCCL uses it (#35): rings with a channel per NIC,
//! so a ring that spans nodes crosses each node boundary on all of them.
//!
//! Sources (../shared/data/megatron_and_b200_facts.md):
//! - NVLink 5 (B200, GB200, B300, GB300): SimuMax v1.2 at 4dcaae51,
//!   `configs/system/b200_bf16_ceperm.json`, a linear fit to nccl-tests on
//!   8 x B200: bus bandwidth as a share of 900 GiB/s, per-hop and fixed
//!   latency per collective; cost formula from `simumax/core/config.py`
//!   (`compute_net_op_time`).
//! - NVLink 4 (H100, H200): ~370 GB/s effective all-gather / reduce-scatter
//!   bus bandwidth of 450 GB/s (NCCL maintainer, NVIDIA/nccl-tests#212).
//!   Latencies not published: NVLink 5's are taken.
//! - Older links: 80% of the line rate (NCCL's usual bus bandwidth, not
//!   measured here), NVLink 5's latencies.
//! - The network: each instance's `nccl` entry in data/hardware.json, fitted
//!   to published nccl-tests runs over EFA (data/nccl_tests.csv, which a test
//!   reproduces); instances without a run take the nearest one's, and say so.

use crate::model::hardware::{Gpu, Instance, Nccl};
use serde::Serialize;

/// The collectives a training step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collective {
    AllGather,
    ReduceScatter,
    AllReduce,
    AllToAll,
}

impl Collective {
    fn index(self) -> usize {
        self as usize
    }

    /// Bytes each rank sends per byte of its buffer, over `n` ranks (NCCL's
    /// bus-bandwidth convention: an all-reduce is a reduce-scatter plus an
    /// all-gather).
    fn traffic(self, n: f64) -> f64 {
        let ring = (n - 1.0) / n;
        match self {
            Collective::AllReduce => 2.0 * ring,
            _ => ring,
        }
    }
}

/// One kind of link as measured: per-direction line rate per GPU, and per
/// collective (all-gather, reduce-scatter, all-reduce, all-to-all) the share
/// of it the bus bandwidth reaches, the latency per hop and the fixed latency.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Link {
    /// Bytes/s per GPU and direction.
    pub line_rate: f64,
    pub efficiency: [f64; 4],
    /// Seconds per hop and per collective.
    pub hop_latency: [f64; 4],
    pub fixed_latency: [f64; 4],
}

const GIB: f64 = 1_073_741_824.0;
const US: f64 = 1e-6;

/// SimuMax's nccl-tests fit on 8 x B200 (see the module's sources). The
/// all-to-all has no per-hop term there: its 51.1 us was measured on 2 ranks.
const NVLINK5_EFFICIENCY: [f64; 4] = [0.6735, 0.6731, 0.7424, 0.5968];
const NVLINK5_HOP: [f64; 4] = [9.18 * US, 8.03 * US, 5.52 * US, 0.0];
const NVLINK5_FIXED: [f64; 4] = [23.1 * US, 25.56 * US, 22.23 * US, 51.1 * US];

impl Link {
    /// NVLink 5: 900 GiB/s per GPU and direction at SimuMax's efficiencies.
    pub const NVLINK5: Link = Link {
        line_rate: 900.0 * GIB,
        efficiency: NVLINK5_EFFICIENCY,
        hop_latency: NVLINK5_HOP,
        fixed_latency: NVLINK5_FIXED,
    };

    /// NVLink 4: 450 GB/s line rate; all-gather and reduce-scatter at ~370
    /// GB/s (nccl-tests#212), the all-reduce's ring at the same share, the
    /// all-to-all at NVLink 5's share of its line rate.
    pub const NVLINK4: Link = Link {
        line_rate: 450e9,
        efficiency: [370.0 / 450.0, 370.0 / 450.0, 370.0 / 450.0, 0.5968],
        hop_latency: NVLINK5_HOP,
        fixed_latency: NVLINK5_FIXED,
    };

    /// A link with no per-collective measurement: 80% of `line_rate` for
    /// every collective, NVLink 5's latencies.
    pub fn nominal(line_rate: f64) -> Link {
        Link {
            line_rate,
            efficiency: [0.8; 4],
            hop_latency: NVLINK5_HOP,
            fixed_latency: NVLINK5_FIXED,
        }
    }

    /// The GPU's link to the other GPUs of its NVLink domain (PCIe through
    /// the host without NVLink: ~20 GB/s effective for collectives).
    pub fn of_gpu(gpu: &Gpu) -> Link {
        match gpu.nvlink_gbs_per_gpu {
            Some(bidir) if bidir >= 1800.0 => Link::NVLINK5,
            Some(bidir) if bidir >= 900.0 => Link::NVLINK4,
            Some(bidir) => Link::nominal(bidir / 2.0 * 1e9),
            None => Link::nominal(25e9),
        }
    }

    /// Bus bandwidth of one collective, bytes/s.
    pub fn bus_bandwidth(&self, c: Collective) -> f64 {
        self.line_rate * self.efficiency[c.index()]
    }

    /// Seconds of one collective of `bytes` per rank over `n` ranks:
    /// `traffic * bytes / bus bandwidth + hops * per-hop + fixed`.
    pub fn seconds(&self, c: Collective, n: f64, bytes: f64) -> f64 {
        if n <= 1.0 {
            return 0.0;
        }
        let i = c.index();
        c.traffic(n) * bytes / self.bus_bandwidth(c)
            + (n - 1.0) * self.hop_latency[i]
            + self.fixed_latency[i]
    }

    /// The slower of two links (a collective that spans both runs at the slower).
    fn slower<'a>(&'a self, other: &'a Link) -> &'a Link {
        if self.bus_bandwidth(Collective::AllGather) <= other.bus_bandwidth(Collective::AllGather) {
            self
        } else {
            other
        }
    }
}

/// The network between NVLink domains as NCCL's collectives use it (#35).
/// A ring runs one channel per NIC, so a ring that spans nodes crosses each
/// node boundary on all of the NICs its ranks' GPUs own: its bus bandwidth
/// is the ranks' share of the node's network, not one GPU's. Each ring step
/// adds a latency across the network; an all-reduce takes NCCL's tree where
/// that is faster (few bytes on many nodes); an all-to-all crosses on each
/// GPU's own NICs (NCCL cannot spread one GPU's peers over another's,
/// NVIDIA/nccl-tests#119). Fitted to each instance's published nccl-tests runs
/// (hardware.json `nccl`, data/nccl_tests.csv).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Network {
    /// Bytes/s per GPU and direction at line rate: the node's NICs shared by its GPUs.
    pub per_gpu: f64,
    /// A ring's bus bandwidth as a share of the line rate it crosses nodes on.
    pub ring: f64,
    /// Seconds each ring step adds across the network.
    pub step: f64,
    /// The tree all-reduce's bandwidth as a share of the ring's.
    pub tree: f64,
    /// Seconds per level of the tree, up and down.
    pub level: f64,
    /// An all-to-all's bus bandwidth as a share of each GPU's own line rate.
    pub alltoall: f64,
    /// Seconds per peer of an all-to-all.
    pub peer: f64,
    /// Fitted to this instance's own runs (false: the nearest instance's, or nominal).
    pub measured: bool,
}

impl Network {
    /// An instance's network between nodes: its GPUs' share of its line
    /// rate, as NCCL used it in the published runs (`nccl`), else nominal.
    pub fn of(instance: &Instance) -> Network {
        let per_gpu = instance.network_per_gpu();
        match &instance.nccl {
            Some(n) => Network::measured(n, per_gpu),
            None => Network::nominal(per_gpu),
        }
    }

    /// The network published figures describe at `per_gpu` bytes/s of line
    /// rate per GPU.
    pub fn measured(n: &Nccl, per_gpu: f64) -> Network {
        Network {
            per_gpu,
            ring: n.ring,
            step: n.step_us * 1e-6,
            tree: n.tree,
            level: n.level_us * 1e-6,
            alltoall: n.alltoall,
            peer: n.peer_us * 1e-6,
            measured: n.measured,
        }
    }

    /// An instance with no published run: 80% of line rate (the share
    /// NCCL's bus bandwidth usually reaches), p5's fitted latencies and tree.
    pub fn nominal(per_gpu: f64) -> Network {
        let reference = crate::model::hardware::instance(crate::model::hardware::NCCL_REFERENCE)
            .and_then(|i| i.nccl)
            .expect("the reference instance has measured NCCL figures (tests/network.rs)");
        Network {
            ring: 0.8,
            alltoall: 0.8,
            measured: false,
            ..Network::measured(&reference, per_gpu)
        }
    }

    /// The network as one GPU's link: what point-to-point sends (pipeline,
    /// context-parallel rings) and tensor-parallel groups that leave the
    /// domain get.
    pub fn link(&self) -> Link {
        let r = self.ring;
        Link {
            line_rate: self.per_gpu,
            efficiency: [r, r, r, self.alltoall],
            hop_latency: [self.step, self.step, self.step, self.peer],
            fixed_latency: NVLINK5_FIXED,
        }
    }

    /// Seconds of one collective of `bytes` per rank over `n` ranks spread
    /// `d` to a domain, with `intra` inside the domains: a ring at the
    /// slower of the domain's link and the ranks' share of the network (an
    /// all-reduce at the faster of that ring and NCCL's tree); an all-to-all
    /// sends the `(n - d) / n` of its buffer bound for other domains on each
    /// GPU's own share.
    pub fn seconds(&self, c: Collective, n: u64, d: u64, bytes: f64, intra: &Link) -> f64 {
        let (nf, df) = (n as f64, d.clamp(1, n) as f64);
        let fixed = intra.fixed_latency[c.index()];
        if c == Collective::AllToAll {
            let crossing = bytes * (nf - df) / nf;
            return crossing / (self.per_gpu * self.alltoall) + (nf - 1.0) * self.peer + fixed;
        }
        let bw = (df * self.per_gpu * self.ring).min(intra.line_rate);
        let steps = if c == Collective::AllReduce {
            2.0 * (nf - 1.0)
        } else {
            nf - 1.0
        };
        let ring = c.traffic(nf) * bytes / bw + steps * self.step + fixed;
        if c != Collective::AllReduce {
            return ring;
        }
        let domains = (nf / df).ceil();
        let tree = c.traffic(nf) * bytes / (bw * self.tree)
            + 2.0 * domains.log2() * self.level
            + 2.0 * (df - 1.0) * intra.hop_latency[c.index()]
            + fixed;
        ring.min(tree)
    }
}

/// The links a job's collectives run over.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Fabric {
    /// GPUs that share the fast intra-node link (8 on a p5/p6 node, 72 on an NVL72).
    pub gpus_per_domain: u64,
    /// The link inside a domain.
    pub intra: Link,
    /// The network between domains.
    pub network: Network,
    /// Collectives across domains are hierarchical (multi-node NVLink domains).
    pub hierarchical: bool,
    /// One GPU's link beyond the domain: the slower of the network's and
    /// the domain's (`link`), built once with the fabric (the auto-plan
    /// asks for it three times per plan it times).
    #[serde(skip)]
    beyond: Link,
}

impl Fabric {
    /// NVLink (or PCIe) inside the instance; the instance's network between
    /// instances. `ultraserver` GPUs share one NVLink domain on a GB200
    /// UltraServer; elsewhere the domain is the instance.
    pub fn of(gpu: &Gpu, instance: &Instance, ultraserver: u64) -> Fabric {
        let per_node = instance.gpu_count.max(1);
        let network = Network::of(instance);
        if crate::model::hardware::is_ultraserver(instance.instance_type) {
            Fabric {
                hierarchical: true,
                ..Fabric::new(gpu, ultraserver.max(per_node), network)
            }
        } else {
            Fabric::new(gpu, per_node, network)
        }
    }

    /// `gpus_per_domain` GPUs on the GPU's link, and `network` beyond it.
    pub fn new(gpu: &Gpu, gpus_per_domain: u64, network: Network) -> Fabric {
        let intra = Link::of_gpu(gpu);
        Fabric {
            gpus_per_domain,
            intra,
            network,
            hierarchical: false,
            beyond: *network.link().slower(&intra),
        }
    }

    /// Seconds of one collective of `bytes` per rank over `n` ranks `stride`
    /// GPUs apart. Inside a domain it runs on the domain's link; across
    /// domains as NCCL runs it over the network (`Network::seconds`), or, on
    /// an UltraServer, hierarchically: the `d` ranks of each domain exchange
    /// over NVLink, and only each rank's `1/d` share crosses the network, on
    /// its own NICs (NCCL with MNNVL; gb200_nvl72_and_uneven_pp.md §5).
    pub fn seconds(&self, c: Collective, n: u64, stride: u64, bytes: f64) -> f64 {
        if n <= 1 {
            return 0.0;
        }
        let d = (self.gpus_per_domain / stride.max(1)).clamp(1, n);
        if !self.crosses(n, stride) {
            return self.intra.seconds(c, n as f64, bytes);
        }
        if self.hierarchical && d > 1 && c != Collective::AllToAll {
            let k = n.div_ceil(d);
            return self.intra.seconds(c, d as f64, bytes)
                + self.network.seconds(c, k, 1, bytes / d as f64, &self.intra);
        }
        self.network.seconds(c, n, d, bytes, &self.intra)
    }

    /// Whether a group of `n` ranks `stride` GPUs apart leaves the NVLink domain.
    pub fn crosses(&self, n: u64, stride: u64) -> bool {
        n > 1 && n * stride > self.gpus_per_domain
    }

    /// The link one rank of a group of `n` ranks `stride` GPUs apart sends
    /// on: the domain's, or its GPU's share of the network.
    pub fn link(&self, n: u64, stride: u64) -> &Link {
        if n * stride <= self.gpus_per_domain {
            &self.intra
        } else {
            &self.beyond
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SimuMax's cost of an all-gather of 1 GiB over 8 B200s, by hand:
    /// 7/8 GiB / (0.6735 * 900 GiB/s) + 7 * 9.18 us + 23.1 us = 1.5309 ms.
    #[test]
    fn nvlink5_all_gather_by_hand() {
        let t = Link::NVLINK5.seconds(Collective::AllGather, 8.0, GIB);
        let by_hand = 0.875 / (0.6735 * 900.0) + 7.0 * 9.18e-6 + 23.1e-6;
        assert!((t - by_hand).abs() < 1e-12, "{t} vs {by_hand}");
        assert!((t - 1.5309e-3).abs() < 1e-6, "{t}");
    }

    /// A single rank moves nothing; an all-reduce moves twice an all-gather's bytes.
    #[test]
    fn traffic_follows_nccl_bus_bandwidth() {
        assert_eq!(Link::NVLINK5.seconds(Collective::AllReduce, 1.0, GIB), 0.0);
        let l = Link::nominal(100e9);
        let ag = l.seconds(Collective::AllGather, 4.0, 1e9)
            - l.fixed_latency[0]
            - 3.0 * l.hop_latency[0];
        let ar = l.seconds(Collective::AllReduce, 4.0, 1e9)
            - l.fixed_latency[2]
            - 3.0 * l.hop_latency[2];
        assert!((ar / ag - 2.0).abs() < 1e-12);
    }
}
