//! Speed of one plan evaluation (`cargo bench -p planner --bench evaluate`).
//! A plain bench binary: times many iterations and prints ns per call.

use planner::estimate::evaluate::evaluate_with_charts;
use planner::model::memory::breakdown;
use planner::model::resolve::resolve;
use planner::{evaluate, Plan};
use std::hint::black_box;
use std::time::Instant;

/// Nanoseconds per call: the fastest of ten batches of `iters / 10` calls
/// (after one batch of warm-up). This machine shares its cores: a mean over
/// all calls moved by 1.7x between two runs of the same build, the fastest
/// batch (the run least disturbed) by far less.
fn time<F: FnMut()>(name: &str, iters: u32, mut f: F) -> f64 {
    let batch = (iters / 10).max(1);
    for _ in 0..batch {
        f();
    }
    let mut ns = f64::INFINITY;
    for _ in 0..10 {
        let start = Instant::now();
        for _ in 0..batch {
            f();
        }
        ns = ns.min(start.elapsed().as_nanos() as f64 / batch as f64);
    }
    println!("{name:<48} {ns:>10.0} ns/iter");
    ns
}

/// The page's sequence chart lengths (src/ctx.rs).
const SEQS: [u64; 8] = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072];

fn main() {
    // `cargo test --benches` runs this with --test-ish flags; keep it quick then.
    let quick = std::env::args().any(|a| a == "--test");
    let iters = if quick { 100 } else { 200_000 };
    let plans = [
        Plan::default(),
        Plan::from_query("model=llama-3.1-70b&seq=131072&precision=fp8&ckpt=full&nodes=4&zero=3")
            .plan,
        Plan::from_query("model=mixtral-8x22b&tp=4&pp=4&ep=2&nodes=4&impl=megatron").plan,
    ];
    // The auto-plan over the whole space around the default plan.
    let default = Plan::from_query("price=60").plan;
    let searches = if quick { 1 } else { 10 };
    let mut result = None;
    let ns = time("auto-plan search (default plan)", searches, || {
        result = Some(black_box(planner::estimate::search::search(black_box(
            &default,
        ))));
    });
    if let Some(r) = result {
        println!(
            "  {} candidates ({} evaluated, {} pruned by bounds): {:.1} M candidates/s, {:.1} ms per search",
            r.candidates,
            r.evaluated,
            r.pruned,
            r.candidates as f64 / ns * 1e3,
            ns / 1e6
        );
    }
    for plan in &plans {
        let (r, _) = resolve(plan);
        time(
            &format!("memory breakdown ({})", r.model_name.english()),
            iters,
            || {
                black_box(breakdown(
                    black_box(&r.arch),
                    &r.counts,
                    &(black_box(plan)).recipe(),
                    &r.layout,
                ));
            },
        );
        time(
            &format!(
                "resolve (model, hardware, layout) ({})",
                r.model_name.english()
            ),
            iters / 10,
            || {
                black_box(resolve(black_box(plan)));
            },
        );
        time(
            &format!("full evaluate incl. solvers ({})", r.model_name.english()),
            iters / 10,
            || {
                black_box(evaluate(black_box(plan)));
            },
        );
        // What one edit costs the page: the report and both charts, from
        // one resolved job (#34).
        time(
            &format!("page evaluation with charts ({})", r.model_name.english()),
            iters / 100,
            || {
                black_box(evaluate_with_charts(black_box(plan), &SEQS));
            },
        );
    }
}
