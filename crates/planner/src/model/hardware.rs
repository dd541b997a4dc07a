//! GPUs and SageMaker training instances, read from `data/hardware.json`
//! (a copy of ../shared/data/hardware.json; every entry names its source).

use crate::formats::json::{req, FromJson, Json};
use serde::Serialize;
use std::sync::OnceLock;

/// One GPU model. Peaks are dense (non-sparse) TFLOP/s per GPU.
#[derive(Clone, Debug, Serialize)]
pub struct Gpu {
    pub id: &'static str,
    /// Its generation, from data/hardware.json (`generation`): which fitted
    /// efficiencies it runs at. A user-entered GPU gets Hopper's.
    #[serde(skip)]
    pub generation: Generation,
    /// Marketed memory in decimal GB.
    pub memory_gb: f64,
    /// What `nvidia-smi`/PyTorch can allocate, in GiB, where known.
    pub usable_gib_approx: Option<f64>,
    pub mem_bw_tbs: f64,
    pub bf16_dense_tflops: Option<f64>,
    pub fp8_dense_tflops: Option<f64>,
    pub fp4_dense_tflops: Option<f64>,
    pub fp32_tflops: Option<f64>,
    pub fp8_tensor_cores: bool,
    pub fp4_tensor_cores: bool,
    /// Whether its FP8 GEMMs take only the TN layout, so TransformerEngine
    /// keeps a transposed copy of each per-tensor-scaled FP8 weight beside
    /// the row-wise one: every GPU but sm_100/sm_103 (TE
    /// `is_non_tn_fp8_gemm_supported`: `(10,0) <= cc < (12,0)` or `>= (13,0)`;
    /// on B200/B300 "FP8 transpose is neither needed nor supported").
    #[serde(skip)]
    pub fp8_tn_only: bool,
    pub nvlink_gbs_per_gpu: Option<f64>,
    /// The link to host memory, GB/s per direction at line rate (PCIe Gen4
    /// or Gen5 x16, or GB200's NVLink-C2C): what activation offloading uses.
    pub host_link_gbs: Option<f64>,
    /// The share of the BF16 dense peak its GEMMs reach in microbenchmarks
    /// on the training runs' shapes, where measured (data/hardware.json
    /// `bf16_gemm_efficiency_measured`, with its source): it replaces the
    /// generation's fitted GEMM efficiency (`Efficiency::on`).
    pub bf16_gemm_measured: Option<f64>,
    pub source: &'static str,
}

impl Gpu {
    /// Bytes a training process can use on this GPU. Where the data gives no
    /// measured figure, 1.5% of the marketed size is taken off for ECC and
    /// driver reservations (the median gap of the GPUs that have one).
    pub fn usable_bytes(&self) -> u64 {
        match self.usable_gib_approx {
            Some(gib) => (gib * GIB as f64) as u64,
            None => (self.memory_gb * 1e9 * 0.985) as u64,
        }
    }
    /// Whether the usable figure is measured or estimated.
    pub fn usable_is_estimate(&self) -> bool {
        self.usable_gib_approx.is_none()
    }
}

/// One SageMaker training instance type.
#[derive(Clone, Debug, Serialize)]
pub struct Instance {
    pub instance_type: &'static str,
    pub gpu: &'static str,
    pub gpu_count: u64,
    pub efa_supported: bool,
    pub multi_node_efa_training: bool,
    /// On-demand SageMaker training price, USD per instance-hour, us-east-1,
    /// from data/sagemaker_prices.csv (hardware.json's recalled prices are
    /// superseded and ignored).
    #[serde(skip)]
    pub price_usd_hr: Option<f64>,
    /// Where the price comes from.
    #[serde(skip)]
    pub price_basis: PriceBasis,
    /// When a listed price was read (or the EC2 price a derived one is based on).
    #[serde(skip)]
    pub price_as_of: String,
    /// The EC2 on-demand price a derived price multiplies.
    #[serde(skip)]
    pub ec2_usd_hr: Option<f64>,
    /// The price table says it has no on-demand price (training plans only).
    #[serde(skip)]
    pub sold_by_plan_only: bool,
    /// Network bandwidth per instance in Gbit/s: a number, "up to N", or absent.
    #[serde(skip)]
    pub network: Network,
    /// How NCCL used its network in published nccl-tests runs, where one
    /// was found (its own, or the nearest instance's).
    #[serde(skip)]
    pub nccl: Option<Nccl>,
    /// The node's RAM, GiB (hardware.json `host_ram_gib`, AWS's instance
    /// pages): what activation offloading can fill.
    #[serde(skip)]
    pub host_ram_gib: Option<f64>,
    pub source: &'static str,
}

/// An instance's network as hardware.json states it (`network_gbps`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Network {
    /// A sustained figure, Gbit/s.
    Gbps(f64),
    /// "up to N" Gbit/s (burst credits).
    UpTo(f64),
    /// Not stated.
    Unknown,
}

/// Of a node's RAM, the share pinned offload buffers can take: the rest is
/// for the OS, the data loader workers and each rank's own process. An
/// assumption, not a measurement: the error that quotes it says so.
pub const OFFLOADABLE_HOST_SHARE: f64 = 0.8;

impl Instance {
    /// Bytes of host memory activation offloading can use on one node.
    pub fn offloadable_host_bytes(&self) -> Option<f64> {
        self.host_ram_gib
            .map(|g| g * OFFLOADABLE_HOST_SHARE * (1u64 << 30) as f64)
    }
}

/// An instance's network as NCCL's collectives used it in published
/// nccl-tests runs (hardware.json `nccl`, each with its source; fitted by
/// tests/network.rs to data/nccl_tests.csv): `fabric::Network::measured`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Nccl {
    pub ring: f64,
    pub step_us: f64,
    pub tree: f64,
    pub level_us: f64,
    pub alltoall: f64,
    pub peer_us: f64,
    /// Fitted to this instance's runs; false: the nearest instance's figures.
    pub measured: bool,
}

impl FromJson for Nccl {
    fn from_json(j: &Json) -> Result<Self, String> {
        Ok(Nccl {
            ring: req(j, "ring")?,
            step_us: req(j, "step_us")?,
            tree: req(j, "tree")?,
            level_us: req(j, "level_us")?,
            alltoall: req(j, "alltoall")?,
            peer_us: req(j, "peer_us")?,
            measured: req::<String>(j, "basis")? == "measured",
        })
    }
}

/// The instance whose fitted NCCL figures stand in where no run was
/// published (latencies and tree; `Network::nominal`).
pub const NCCL_REFERENCE: &str = "ml.p5.48xlarge";

impl Instance {
    /// Sustained network bandwidth per instance, Gbit/s ("up to N" counts as N/4,
    /// the burst-credit baseline of such instances). Unknown: 100 Gbit/s for an
    /// EFA instance (the smallest EFA size AWS sells), else 10.
    /// Line rate per GPU and direction between nodes, bytes/s: the
    /// instance's network shared by its GPUs.
    pub fn network_per_gpu(&self) -> f64 {
        self.network_gbps() / 8.0 * 1e9 / self.gpu_count.max(1) as f64
    }

    pub fn network_gbps(&self) -> f64 {
        let unknown = if self.efa_supported { 100.0 } else { 10.0 };
        match self.network {
            Network::Gbps(n) => n,
            Network::UpTo(n) => n / 4.0,
            Network::Unknown => unknown,
        }
    }
}

/// Where an instance's hourly price comes from (sagemaker_prices.csv, SPEC §8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceBasis {
    /// Read from a copy of the AWS price list or pricing page, dated.
    Listed,
    /// No SageMaker price found: 1.15 x the EC2 on-demand price, an estimate.
    Derived,
    /// Sold only through training plans / capacity blocks (GB200: UltraServers).
    #[default]
    Unknown,
}

impl PriceBasis {
    pub fn key(self) -> &'static str {
        match self {
            PriceBasis::Listed => "listed",
            PriceBasis::Derived => "derived",
            PriceBasis::Unknown => "unknown",
        }
    }
}

/// SageMaker on-demand training prices (../shared/data/sagemaker_prices.csv).
pub const PRICES_CSV: &str = include_str!(concat!(env!("OUT_DIR"), "/sagemaker_prices.csv"));

/// Fill each instance's price from the price table.
fn price_instances(instances: &mut [Instance]) {
    let rows = crate::formats::table::read_csv(PRICES_CSV);
    for i in instances.iter_mut() {
        let Some(r) = rows.iter().find(|r| r.get("instance") == i.instance_type) else {
            continue;
        };
        i.price_basis = match r.get("basis") {
            "listed" => PriceBasis::Listed,
            "derived" => PriceBasis::Derived,
            _ => PriceBasis::Unknown,
        };
        i.price_usd_hr = r
            .num("usd_per_hour")
            .filter(|_| i.price_basis != PriceBasis::Unknown);
        i.price_as_of = r.get("as_of").to_string();
        i.ec2_usd_hr = r.num("ec2_usd_per_hour");
        i.sold_by_plan_only = i.price_basis == PriceBasis::Unknown;
    }
}

/// ml.p6e-gb200.36xlarge is sold only inside P6e-GB200 UltraServers, whose
/// 36 or 72 GPUs share one NVLink domain (shared/data/gb200_nvl72_and_uneven_pp.md §1.1).
pub fn is_ultraserver(instance_type: &str) -> bool {
    // A plain scan for its first byte, then the rest: `str::contains` sets
    // up a two-way searcher, and comparing every window calls memcmp; every
    // resolve asks twice.
    let b = instance_type.as_bytes();
    (0..b.len().saturating_sub(4)).any(|i| b[i] == b'g' && &b[i..i + 5] == b"gb200")
}

/// The instances a job places on each UltraServer it spans, filled in
/// order as `Fabric::of` fills its NVLink domains of `ultraserver_gpus`
/// GPUs; `None` off UltraServers.
pub fn ultraservers(instance: &Instance, ultraserver_gpus: u64, nodes: u64) -> Option<Vec<u64>> {
    if !is_ultraserver(instance.instance_type) {
        return None;
    }
    let per = (ultraserver_gpus / instance.gpu_count.max(1)).max(1);
    Some(
        (0..nodes.div_ceil(per))
            .map(|k| per.min(nodes - k * per))
            .collect(),
    )
}

/// The most UltraServers one training job is placed on (botocore's
/// CreateTrainingJob model: `PlacementSpecifications`, at most 10).
pub const MAX_ULTRASERVERS: usize = 10;

/// The instance counts a SageMaker training plan offers
/// (shared/data/sagemaker_at_scale.md, from the training-plan docs).
pub const TRAINING_PLAN_COUNTS: [u64; 7] = [1, 2, 4, 8, 16, 32, 64];

/// 2^30 bytes.
pub const GIB: u64 = 1 << 30;

/// A GPU that is not in the catalogue (`instance=custom`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CustomGpu {
    /// Memory per GPU, decimal GB.
    pub memory_gb: f64,
    /// Dense BF16 peak, TFLOP/s.
    pub bf16_tflops: f64,
    /// Dense FP8 peak, TFLOP/s (0: no FP8 tensor cores).
    pub fp8_tflops: f64,
    /// HBM bandwidth, TB/s.
    pub bandwidth_tbs: f64,
    /// GPUs per node.
    pub per_node: u64,
    /// NVLink bandwidth per GPU, bidirectional GB/s (0: PCIe only).
    pub nvlink_gbs: f64,
    /// Network per node, Gbit/s.
    pub network_gbps: f64,
}

impl Default for CustomGpu {
    /// H100 SXM-like figures (data/hardware.json).
    fn default() -> Self {
        CustomGpu {
            memory_gb: 80.0,
            bf16_tflops: 989.4,
            fp8_tflops: 1978.9,
            bandwidth_tbs: 3.35,
            per_node: 8,
            nvlink_gbs: 900.0,
            network_gbps: 3200.0,
        }
    }
}

/// A GPU and an instance type built from the plan's custom figures.
pub fn custom(c: &CustomGpu) -> (Gpu, Instance) {
    let fp8 = c.fp8_tflops > 0.0;
    let gpu = Gpu {
        id: "Custom GPU",
        generation: Generation::Hopper,
        memory_gb: c.memory_gb,
        usable_gib_approx: None,
        mem_bw_tbs: c.bandwidth_tbs,
        bf16_dense_tflops: Some(c.bf16_tflops),
        fp8_dense_tflops: fp8.then_some(c.fp8_tflops),
        fp4_dense_tflops: None,
        fp32_tflops: Some(c.bf16_tflops / 16.0),
        fp8_tensor_cores: fp8,
        fp4_tensor_cores: false,
        // Nothing says which GEMM layouts it takes: both copies, the larger memory.
        fp8_tn_only: true,
        nvlink_gbs_per_gpu: (c.nvlink_gbs > 0.0).then_some(c.nvlink_gbs),
        host_link_gbs: None,
        bf16_gemm_measured: None,
        source: "entered by the user",
    };
    let instance = Instance {
        instance_type: "custom",
        gpu: gpu.id,
        gpu_count: c.per_node.max(1),
        efa_supported: true,
        multi_node_efa_training: true,
        price_usd_hr: None,
        price_basis: PriceBasis::Unknown,
        price_as_of: String::new(),
        ec2_usd_hr: None,
        sold_by_plan_only: false,
        network: Network::Gbps(c.network_gbps),
        nccl: None,
        host_ram_gib: None,
        source: "entered by the user",
    };
    (gpu, instance)
}

pub fn gpus() -> &'static [Gpu] {
    GPUS
}

/// Every instance type, priced from the price table.
pub fn instances() -> &'static [Instance] {
    static PRICED: OnceLock<Vec<Instance>> = OnceLock::new();
    PRICED.get_or_init(|| {
        let mut instances = INSTANCES.to_vec();
        price_instances(&mut instances);
        instances
    })
}

// `GPUS` and `INSTANCES`: data/hardware.json as Rust values, written by
// build.rs (`hardware_code`): the page parses no JSON for them.
include!(concat!(env!("OUT_DIR"), "/hardware_data.rs"));

pub fn instance(instance_type: &str) -> Option<&'static Instance> {
    instances()
        .iter()
        .find(|i| i.instance_type == instance_type)
}

pub fn gpu(id: &str) -> Option<&'static Gpu> {
    gpus().iter().find(|g| g.id == id)
}

/// GPU generations, each with its own fitted efficiencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Generation {
    Ampere,
    Ada,
    Hopper,
    /// H100 parts capped at 500 W (torchtitan's benchmarks): lower sustained clocks.
    HopperPowerCapped,
    Blackwell,
}

impl Generation {
    /// Its name as its `Debug` writes it (`HopperPowerCapped`): the
    /// checked groups' names in coverage.json and the labels.
    pub fn name(self) -> &'static str {
        match self {
            Generation::Ampere => "Ampere",
            Generation::Ada => "Ada",
            Generation::Hopper => "Hopper",
            Generation::HopperPowerCapped => "HopperPowerCapped",
            Generation::Blackwell => "Blackwell",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Generation;

    /// The names the checked groups were written with (coverage.json) are
    /// the generations' `Debug` names.
    #[test]
    fn generation_names_are_their_debug_names() {
        use Generation::*;
        for g in [Ampere, Ada, Hopper, HopperPowerCapped, Blackwell] {
            assert_eq!(g.name(), format!("{g:?}"));
        }
    }

    /// The scan is `str::contains("gb200")`, on every instance of the
    /// catalogue and on the edges of a short or a repeated name.
    #[test]
    fn ultraservers_are_the_gb200_instances() {
        let names = super::instances().iter().map(|i| i.instance_type);
        let edges = [
            "",
            "gb20",
            "gb200",
            "ggb200",
            "xgb20",
            "ml.p6e-gb200.36xlarge",
        ];
        for name in names.chain(edges) {
            assert_eq!(
                super::is_ultraserver(name),
                name.contains("gb200"),
                "{name}"
            );
        }
    }
}

#[cfg(test)]
mod catalog_tests {
    use super::*;
    use crate::formats::json::opt;

    /// build.rs writes the catalogue as Rust values; read again from the
    /// file, field by field, it is the same.
    #[test]
    fn static_catalog_matches_the_file() {
        let file =
            crate::formats::json::parse(include_str!("../../data/hardware.json")).expect("parses");
        let gpus = file.get("gpus").and_then(Json::as_array).expect("gpus");
        assert_eq!(gpus.len(), GPUS.len());
        for (j, g) in gpus.iter().zip(GPUS) {
            let f = |k: &str| opt::<f64>(j, k).expect("a number");
            let b = |k: &str| opt::<bool>(j, k).expect("a flag").unwrap_or(false);
            assert_eq!(g.id, req::<String>(j, "id").unwrap());
            assert_eq!(g.generation.name(), req::<String>(j, "generation").unwrap());
            assert_eq!(
                g.source,
                opt::<String>(j, "source").unwrap().unwrap_or_default()
            );
            assert_eq!(Some(g.memory_gb), f("memory_gb"));
            assert_eq!(Some(g.mem_bw_tbs), f("mem_bw_tbs"));
            assert_eq!(g.usable_gib_approx, f("usable_gib_approx"));
            assert_eq!(g.bf16_dense_tflops, f("bf16_dense_tflops"));
            assert_eq!(g.fp8_dense_tflops, f("fp8_dense_tflops"));
            assert_eq!(g.fp4_dense_tflops, f("fp4_dense_tflops"));
            assert_eq!(g.fp32_tflops, f("fp32_tflops"));
            assert_eq!(g.nvlink_gbs_per_gpu, f("nvlink_gbs_per_gpu"));
            assert_eq!(g.host_link_gbs, f("host_link_gbs"));
            assert_eq!(g.bf16_gemm_measured, f("bf16_gemm_efficiency_measured"));
            assert_eq!(g.fp8_tensor_cores, b("fp8_tensor_cores"));
            assert_eq!(g.fp4_tensor_cores, b("fp4_tensor_cores"));
            let arch: String = req(j, "arch").unwrap();
            assert_eq!(g.fp8_tn_only, !arch.contains("sm_10"), "{}", g.id);
        }
        let instances = file
            .get("instances")
            .and_then(Json::as_array)
            .expect("instances");
        assert_eq!(instances.len(), INSTANCES.len());
        for (j, i) in instances.iter().zip(INSTANCES) {
            assert_eq!(i.instance_type, req::<String>(j, "instance_type").unwrap());
            assert_eq!(i.gpu, req::<String>(j, "gpu").unwrap());
            assert_eq!(i.gpu_count, req::<u64>(j, "gpu_count").unwrap());
            assert_eq!(
                i.source,
                opt::<String>(j, "source").unwrap().unwrap_or_default()
            );
            let b = |k: &str| opt::<bool>(j, k).expect("a flag").unwrap_or(false);
            assert_eq!(i.efa_supported, b("efa_supported"));
            assert_eq!(i.multi_node_efa_training, b("multi_node_efa_training"));
            assert_eq!(i.host_ram_gib, opt::<f64>(j, "host_ram_gib").unwrap());
            assert_eq!(
                i.nccl,
                opt::<Nccl>(j, "nccl").unwrap(),
                "{}",
                i.instance_type
            );
            let network = match j.get("network_gbps") {
                Some(Json::Num(n)) => Network::Gbps(*n),
                Some(Json::Str(s)) => {
                    Network::UpTo(s.trim_start_matches("up to ").parse().expect("up to N"))
                }
                _ => Network::Unknown,
            };
            assert_eq!(i.network, network, "{}", i.instance_type);
        }
    }
}
