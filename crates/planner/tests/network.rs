//! The network between nodes as NCCL uses it (#35): the published nccl-tests
//! runs of data/nccl_tests.csv (p5, p5en, p6-b200, p6-b300 over EFA), each
//! reproduced from the instance's fitted figures in data/hardware.json
//! (`nccl`), and the FSDP scaling the published multi-node runs show.

use planner::accuracy::model_tables;
use planner::formats::table::read_csv;
use planner::model::fabric::{Collective, Network};
use planner::model::hardware::{self, Nccl};

use planner::accuracy::model_tables::NCCL_TESTS_CSV;

/// One published nccl-tests figure.
struct Run {
    instance: String,
    nodes: u64,
    per_node: u64,
    collective: Collective,
    bytes: f64,
    busbw: f64,
    fit: bool,
    source: String,
}

fn runs() -> Vec<Run> {
    read_csv(NCCL_TESTS_CSV)
        .iter()
        .map(|r| Run {
            instance: r.get("instance").to_string(),
            nodes: r.num("nodes").expect("nodes") as u64,
            per_node: r.num("gpus_per_node").expect("gpus") as u64,
            collective: model_tables::collective(r.get("collective")).expect("a collective"),
            bytes: r.num("size_bytes").expect("size"),
            busbw: r.num("busbw_gbs").expect("busbw"),
            fit: r.get("fit") == "yes",
            source: r.get("source").to_string(),
        })
        .collect()
}

/// The bus bandwidth `network` gives one run (model_tables.rs).
fn modelled(run: &Run, network: &Network) -> f64 {
    let shape = (run.nodes, run.per_node);
    model_tables::modelled_busbw(&run.instance, network, shape, run.collective, run.bytes)
}

fn shipped(instance: &str) -> Network {
    Network::of(hardware::instance(instance).expect("catalogued"))
}

fn error_percent(run: &Run, network: &Network) -> f64 {
    100.0 * (modelled(run, network) / run.busbw - 1.0)
}

/// Every published bus bandwidth at the plateau (each rank's share of the
/// buffer, which every ring step moves, at least 64 MiB: there the figure
/// is the network's, not its latency's) is reproduced within 10 %; over every run the fit uses, the
/// median error is under 5 %, three in four are within 10 % (96 of 121 when
/// this was written) and none is
/// beyond 40 % (the outliers are mid-size runs that fall between their
/// neighbours, e.g. p5 all-gather of 1 GiB on 8 nodes at 224 GB/s between
/// 261 at 512 MiB and 294 at 2 GiB).
#[test]
fn published_nccl_tests_are_reproduced() {
    let runs = runs();
    let mut errors = Vec::new();
    for r in runs.iter().filter(|r| r.fit) {
        let e = error_percent(r, &shipped(&r.instance));
        // Each rank's share of the buffer: what every ring step moves.
        let per_rank = r.bytes / (r.nodes * r.per_node) as f64;
        println!(
            "{:<22} {:>2} nodes {:?} {:>6} MiB: published {:>6.1} GB/s, modelled {:>+6.1}% ({})",
            r.instance,
            r.nodes,
            r.collective,
            r.bytes / 1048576.0,
            r.busbw,
            e,
            r.source
        );
        if per_rank >= 64.0 * 1048576.0 {
            assert!(
                e.abs() <= 10.0,
                "{} {:?}: {e:+.1}%",
                r.instance,
                r.collective
            );
        }
        assert!(
            e.abs() <= 40.0,
            "{} {:?}: {e:+.1}%",
            r.instance,
            r.collective
        );
        errors.push(e.abs());
    }
    errors.sort_by(f64::total_cmp);
    let median = errors[errors.len() / 2];
    let within = errors.iter().filter(|e| **e <= 10.0).count();
    println!(
        "median {median:.1}%, {within} of {} within 10%",
        errors.len()
    );
    assert!(median < 5.0, "median {median:.1}%");
    assert!(
        within * 4 >= errors.len() * 3,
        "{within} of {}",
        errors.len()
    );
}

/// The runs the fit leaves out (2-node all-reduces, where NCCL's tree beats
/// the network rate) are never over-promised: the planner's figure is the
/// slower ring's, below the published one.
#[test]
fn two_node_trees_are_not_over_promised() {
    for r in runs().iter().filter(|r| !r.fit) {
        assert_eq!((r.nodes, r.collective), (2, Collective::AllReduce));
        let e = error_percent(r, &shipped(&r.instance));
        assert!(e < 0.0, "{}: {e:+.1}%", r.source);
    }
}

/// p5's figures are what a fit to its runs gives: coordinate descent from
/// neutral values within physical bounds lands within 3 % of each shipped
/// parameter (latencies within 10 %), and its error is no better than the
/// shipped figures' by more than a rounding.
#[test]
fn p5_figures_are_the_fit_to_its_runs() {
    let rows: Vec<Run> = runs()
        .into_iter()
        .filter(|r| r.fit && r.instance == "ml.p5.48xlarge")
        .collect();
    let per_gpu = shipped("ml.p5.48xlarge").per_gpu;
    let loss = |n: &Nccl| -> f64 {
        let net = Network::measured(n, per_gpu);
        rows.iter()
            .map(|r| (modelled(r, &net) / r.busbw).ln().abs())
            .sum()
    };
    let bounds = [
        (0.5, 1.0),
        (1.0, 30.0),
        (0.3, 1.0),
        (5.0, 300.0),
        (0.3, 1.0),
        (0.0, 30.0),
    ];
    let get =
        |n: &Nccl, i: usize| [n.ring, n.step_us, n.tree, n.level_us, n.alltoall, n.peer_us][i];
    let set = |n: &mut Nccl, i: usize, v: f64| match i {
        0 => n.ring = v,
        1 => n.step_us = v,
        2 => n.tree = v,
        3 => n.level_us = v,
        4 => n.alltoall = v,
        _ => n.peer_us = v,
    };
    let mut fit = Nccl {
        ring: 0.85,
        step_us: 9.0,
        tree: 0.6,
        level_us: 60.0,
        alltoall: 0.8,
        peer_us: 5.0,
        measured: true,
    };
    let mut best = loss(&fit);
    for _ in 0..400 {
        let mut improved = false;
        for (i, (lo, hi)) in bounds.iter().enumerate() {
            for f in [0.8, 0.9, 0.95, 0.98, 0.995, 1.005, 1.02, 1.05, 1.1, 1.25] {
                let mut t = fit;
                let v = (get(&t, i) * f).clamp(*lo, *hi);
                set(&mut t, i, v);
                let l = loss(&t);
                if l < best - 1e-12 {
                    (fit, best) = (t, l);
                    improved = true;
                }
            }
        }
        if !improved {
            break;
        }
    }
    let ours = hardware::instance("ml.p5.48xlarge")
        .and_then(|i| i.nccl)
        .expect("p5 figures");
    println!("fit {fit:?}\nshipped {ours:?}");
    for i in 0..6 {
        let tolerance = if matches!(i, 1 | 3 | 5) { 0.10 } else { 0.03 };
        let (a, b) = (get(&fit, i), get(&ours, i));
        assert!(
            (a / b - 1.0).abs() <= tolerance,
            "parameter {i}: fit {a} shipped {b}"
        );
    }
    assert!(loss(&ours) <= best * 1.01, "{} vs {best}", loss(&ours));
}

/// Each instance's network cites where its figures come from, and the
/// instances without runs of their own say so.
#[test]
fn every_network_figure_has_a_source() {
    let measured: Vec<&str> = hardware::instances()
        .iter()
        .filter(|i| i.nccl.is_some_and(|n| n.measured))
        .map(|i| i.instance_type)
        .collect();
    assert_eq!(
        measured,
        [
            "ml.p5.48xlarge",
            "ml.p5en.48xlarge",
            "ml.p6-b200.48xlarge",
            "ml.p6-b300.48xlarge"
        ]
    );
    let published: Vec<String> = runs().into_iter().map(|r| r.instance).collect();
    for m in measured {
        assert!(published.iter().any(|p| p == m), "{m} has no published run");
    }
    // A G-family instance has none: 80 % of its line rate, p5's latencies.
    let g6e = shipped("ml.g6e.48xlarge");
    assert!(!g6e.measured && g6e.ring == 0.8);
}

/// An FSDP plan on p5 loses no more tokens/s per GPU from 1 to 16 nodes
/// than torchtitan's published FSDP runs of Llama 3.1 8B lost from 8 to 128
/// H100s (5,762 to 5,605, -2.7 %; torchtitan benchmarks
/// llama3_h100_202412_torchtitan.md Tables 1 and 3). Before #35 the network
/// was one GPU's eighth: the 70B plan fell from 888 to 394 tokens/s/GPU on
/// two nodes.
#[test]
fn fsdp_scales_across_p5_nodes_as_published() {
    let published = 5605.0 / 5762.0;
    for base in [
        "model=llama-3.1-8b&zero=3&seq=8192&mb=2&ga=1&ckpt=selective",
        "model=llama-3.1-70b&zero=3&ckpt=full&mb=1&ga=1&seq=4096",
    ] {
        let tps = |nodes: u64| {
            let q = format!("{base}&instance=ml.p5.48xlarge&nodes={nodes}");
            let plan = planner::Plan::from_query(&q).plan;
            planner::evaluate(&plan)
                .throughput
                .tokens_per_second_per_gpu
        };
        let one = tps(1);
        for nodes in [2, 4, 8, 16] {
            let ratio = tps(nodes) / one;
            println!("{base} nodes={nodes}: {ratio:.3} of one node");
            assert!(ratio >= published, "{base} on {nodes} nodes: {ratio:.3}");
        }
    }
}

/// Megatron reduce-scatters and all-gathers its gradient buffer bucket by
/// bucket (`overlap_grad_reduce`), `max(40M, 1M x DP x CP)` parameters each
/// (megatron/core/distributed `DistributedDataParallelConfig.bucket_size`),
/// and every bucket's collective pays the ring's latency, which grows with
/// the ranks (#57: small steps on many GPUs). By hand, Llama 3.1 8B (8.03 B
/// parameters) in FP8 with CP 2 on 8 p5 nodes: DP x CP = 64 ranks, 64 M
/// parameters a bucket, 126 buckets, so 125 more collectives of each kind
/// than one for the whole buffer; each crosses 63 ring steps of p5's
/// fitted 8.8 us plus the fixed 25.56 us (reduce-scatter) or 23.1 us
/// (all-gather): 125 x 1.1575 ms = 144.7 ms more traffic, of which the
/// overlap leaves 15 % exposed (one micro-batch's 0.31 s hides the rest).
#[test]
fn megatron_pays_each_buckets_latency() {
    let base = "model=llama-3.1-8b&instance=ml.p5.48xlarge&nodes=8&stack=megatron&precision=fp8&fp8_params=1&zero=1&ckpt=none&loss=fused&seq=8192&mb=1&ga=1&cp=2";
    let dp = |extra: &str| {
        let plan = planner::Plan::from_query(&format!("{base}{extra}")).plan;
        planner::evaluate(&plan).throughput.step.data_parallel
    };
    // Without the overlap Megatron runs one collective for the whole buffer.
    let whole = dp("&overlap=0");
    let per_bucket = 63.0 * 8.8e-6 * 2.0 + 25.56e-6 + 23.1e-6;
    let expected = 0.15 * (whole + 125.0 * per_bucket);
    let got = dp("&overlap=1");
    println!("whole {whole:.4} s, bucketed and overlapped {got:.4} s, by hand {expected:.4} s");
    assert!((got / expected - 1.0).abs() < 0.01, "{got} vs {expected}");
}
