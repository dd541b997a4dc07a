//! The resumable walk over the space: prune by bounds, evaluate, keep the
//! front (see mod.rs for why nothing on the front is missed).

use crate::model::architecture::{Architecture, ParameterCounts};
use crate::model::plan::InstanceId;

use super::dominance::Dominance;
use super::results::*;
use super::space::*;
use crate::estimate::launchers;
use crate::model::hardware::Gpu;
use crate::model::layout::Layout;
use crate::model::memory;
use crate::model::plan::{Plan, Precision};
use crate::model::recipe::Recipe;
use crate::model::rules;
use crate::model::throughput::{self};

/// A resumable search.
pub struct Search {
    base: Plan,
    /// The base plan's recipe, which the models read.
    base_recipe: Recipe,
    work: Plan,
    arch: Architecture,
    counts: ParameterCounts,
    space: Space,
    next_outer: usize,
    global_sequences: u64,
    /// The fastest plan within the budget and the cheapest by the deadline
    /// of all blocks' fastest fitting plans (`SearchResult`).
    under_budget: Option<Found>,
    by_deadline: Option<Found>,
    /// The fastest of the blocks' plans on the fewest GPUs (`gpus_of`).
    fewest: Option<Found>,
    pareto: Vec<Found>,
    fitting: u64,
    peaks: PeakCache,
    evaluated: u64,
    pruned: u64,
    /// Prune by bounds (off only in tests, to compare with brute force).
    pub use_bounds: bool,
    /// The user's own plan, which every candidate is compared with.
    user: Baseline,
    adapters: f64,
    /// The training FLOPs of the whole run (`beaten`'s ideal time).
    run_flops: f64,
    /// Whether the launchers refuse each precision, ZeRO stage and pipeline
    /// degree of the space (`refusal_index`), asked once per search
    /// rather than once per block.
    refused: Vec<bool>,
    /// Each instance type's last ZeRO-1 block and what it covered
    /// (`Dominance`), for its ZeRO-2 twin.
    zero_one: Vec<Option<([usize; 9], Vec<bool>)>>,
}
impl Search {
    /// The full space around `plan`, respecting its locks.
    pub fn new(plan: &Plan) -> Search {
        Search::around(plan, &crate::estimate::evaluate::evaluate(plan))
    }

    /// The space around `plan`, whose report `user` the caller already has
    /// (the page's one evaluation of an edit serves its search too, #34).
    pub fn around(plan: &Plan, user: &crate::estimate::report::Report) -> Search {
        let shape = (user.architecture.clone(), user.global_batch_sequences);
        Search::against(plan, shape, Baseline::of(user))
    }

    /// The space around `plan`, its candidates compared with `user`, where
    /// no report of it is at hand (the page's worker, which sends the
    /// candidates' offers back, not their comparisons: `wire`). It resolves
    /// the plan only: the report's solvers, warnings and labels were a
    /// tenth of a fresh worker's search.
    pub fn resolved(plan: &Plan, user: Baseline) -> Search {
        let (job, _) = crate::model::resolve::resolve(plan);
        let global = crate::estimate::evaluate::global_batch_sequences(plan, &job.layout);
        Search::against(plan, (job.arch, global), user)
    }

    /// The space around `plan`, whose model resolved to `arch` and whose
    /// step takes `global_sequences`.
    fn against(
        plan: &Plan,
        (arch, global_sequences): (Architecture, u64),
        user: Baseline,
    ) -> Search {
        // The user's own plan: the resolved shape, its global batch, and the baseline to beat.
        let counts = arch.parameter_counts();
        let base_recipe = plan.recipe();
        let arch_adapters = base_recipe.lora_params(&arch);
        let global_sequences = global_sequences.max(1);
        let mut work = plan.clone();
        work.parallelism.shard = None;
        let space = Space::around(plan, &arch);
        let mut search = Search {
            base: plan.clone(),
            base_recipe,
            work,
            arch,
            counts,
            space,
            next_outer: 0,
            global_sequences,
            under_budget: None,
            by_deadline: None,
            fewest: None,
            pareto: Vec::new(),
            fitting: 0,
            peaks: PeakCache::default(),
            evaluated: 0,
            pruned: 0,
            use_bounds: true,
            adapters: arch_adapters,
            run_flops: 0.0,
            user,
            refused: Vec::new(),
            zero_one: Vec::new(),
        };
        // Where the search picks the layout it sizes vLLM's engines too: the
        // user's size may not run on the GPUs it tries.
        if !plan.auto.locks.parallelism {
            for r in [
                &mut search.base.training.rollout,
                &mut search.work.training.rollout,
                &mut search.base_recipe.training.rollout,
            ] {
                (r.gen_tp, r.gen_pp) = (0, 0);
            }
        }
        search.refused = search.refusals();
        search.run_flops = throughput::recipe_model_flops_per_token(
            &search.arch,
            &search.counts,
            &search.base_recipe,
        ) * plan.data.tokens;
        search
    }

    /// `launcher_refuses` for every precision, ZeRO stage, pipeline degree
    /// and checkpointing of the space, in `refusal_index` order (then the
    /// checkpointing's).
    fn refusals(&self) -> Vec<bool> {
        let s = &self.space;
        let n = s.precisions.len() * s.zeros.len() * s.pps.len() * s.ckpts.len();
        let mut refused = Vec::with_capacity(n);
        for &precision in &s.precisions {
            for &(zero, _) in &s.zeros {
                for &pp in &s.pps {
                    for &checkpointing in &s.ckpts {
                        let choice = launchers::Choice {
                            precision,
                            zero,
                            pp,
                            checkpointing,
                        };
                        refused.push(self.launcher_refuses(choice));
                    }
                }
            }
        }
        refused
    }

    /// Where a block's precision, ZeRO stage and pipeline degree sit in
    /// `refused`, counted in runs of the space's checkpointings.
    fn refusal_index(&self, o: [usize; 9]) -> usize {
        let s = &self.space;
        (o[2] * s.zeros.len() + o[7]) * s.pps.len() + o[4]
    }

    /// Whether the launchers refuse each checkpointing of a block, in the
    /// space's order.
    fn refused_checkpointings(&self, o: [usize; 9]) -> &[bool] {
        let n = self.space.ckpts.len();
        let at = self.refusal_index(o) * n;
        &self.refused[at..at + n]
    }

    /// Size of the space.
    pub fn candidates(&self) -> u64 {
        (self.space.outer_len() * self.space.inner_len()) as u64
    }

    /// Fraction done, 0..1.
    pub fn progress(&self) -> f64 {
        self.next_outer as f64 / self.space.outer_len().max(1) as f64
    }

    pub fn is_done(&self) -> bool {
        self.next_outer >= self.space.outer_len()
    }

    /// Work through at least `candidates` more combinations; true when finished.
    pub fn run(&mut self, candidates: u64) -> bool {
        let inner = self.space.inner_len().max(1) as u64;
        let blocks = candidates.div_ceil(inner).max(1) as usize;
        let end = (self.next_outer + blocks).min(self.space.outer_len());
        if self.next_outer >= end {
            return self.is_done(); // an empty space (no engine trains the plan)
        }
        let mut o = self.space.outer(self.next_outer);
        while self.next_outer < end {
            self.block(o);
            self.next_outer += 1;
            self.space.advance(&mut o);
        }
        self.is_done()
    }

    /// Run to the end.
    pub fn finish(&mut self) -> SearchResult {
        while !self.run(100_000) {}
        self.result()
    }

    /// One outer block: a layout on an instance type at a precision, tried
    /// with every checkpointing, loss and micro-batch.
    fn block(&mut self, o: [usize; 9]) {
        let inner = self.space.inner_len() as u64;
        let info = &self.space.instances[o[0]];
        let (nodes, precision) = (self.space.nodes[o[1]], self.space.precisions[o[2]]);
        let Some(layout) = self.layout(o) else {
            self.pruned += inner;
            return;
        };
        let all_gpus = nodes * info.instance.gpu_count;
        if self.use_bounds
            && self.beaten(&info.gpu, info.price, precision, (nodes, layout.gpus))
            && !self.may_be_fewest(all_gpus, layout.gpus, precision, &info.gpu)
        {
            self.pruned += inner;
            return;
        }
        let (instance, (zero, hybrid)) = (&info.instance, self.space.zeros[o[7]]);
        let w = &mut self.work;
        if !w.hardware.instance.is(instance.instance_type) {
            w.hardware.instance = InstanceId::Listed(instance.instance_type.to_string());
        }
        w.hardware.nodes = nodes;
        w.numerics.precision = precision;
        (
            w.parallelism.tp,
            w.parallelism.pp,
            w.parallelism.cp,
            w.parallelism.sp,
            w.parallelism.vp,
            w.parallelism.ep,
        ) = (layout.tp, layout.pp, layout.cp, layout.tp > 1, 1, layout.ep);
        w.parallelism.zero = zero;
        w.parallelism.shard = hybrid.then_some(layout.shard);
        let server = self.space.servers[o[8]];
        w.training.rollout.gen_gpus = server.gpus(instance.gpu_count, nodes).unwrap_or(0);
        w.training.rollout.sleep = server.asleep();
        self.inner(o, &layout);
    }

    /// The block's layout, or None where it cannot run (or repeats another).
    fn layout(&self, o: [usize; 9]) -> Option<Layout> {
        let s = &self.space;
        let (instance, gpu) = (&s.instances[o[0]].instance, &s.instances[o[0]].gpu);
        let (nodes, precision, tp, pp, cp, ep, (zero, hybrid)) = (
            s.nodes[o[1]],
            s.precisions[o[2]],
            s.tps[o[3]],
            s.pps[o[4]],
            s.cps[o[5]],
            s.eps[o[6]],
            s.zeros[o[7]],
        );
        let gpn = instance.gpu_count;
        let server = s.servers[o[8]].gpus(gpn, nodes)?;
        let gpus = gpn * nodes - server;
        let arch = &self.arch;
        // Uneven splits too, as the stack makes them (Megatron counts the
        // embedding and loss as slots; torchtitan splits as evenly as it goes).
        let stack = self.base.implementation.stack;
        let stages = rules::pipeline_stages(stack, arch.layers, pp, 1)?;
        let valid = rules::nodes_run(instance, nodes)
            && rules::tp_in_domain(tp, s.instances[o[0]].fabric.gpus_per_domain)
            && rules::tp_splits_heads(arch, tp)
            && rules::cp_splits_sequence(self.base.data.seq, cp)
            && rules::ep_splits_experts(arch, ep)
            && rules::degrees_tile(gpus, tp, pp, cp)
            && rules::precision_unsupported(precision, gpu).is_none();
        let b = &self.base;
        let bundled_hf_refuses = || {
            b.bundled_hf()
                && launchers::hf_tp_refusal(
                    arch,
                    (b.training.train, b.training.stage),
                    precision,
                    zero,
                    tp,
                )
                .is_some()
        };
        if !valid || bundled_hf_refuses() || self.refused_checkpointings(o).iter().all(|&r| r) {
            return None;
        }
        let tiled = Layout::tiled(gpus, [tp, pp, cp, ep], stages, gpu.fp8_tn_only);
        let dp = tiled.dp;
        // Hybrid sharding groups the data-parallel ranks of one node.
        let shard = if hybrid {
            (gpn / (tp * cp).min(gpn)).max(1)
        } else {
            dp
        };
        // ZeRO over one rank is DDP, and a hybrid group as large as the whole is full sharding: count each once.
        // grpo.py shards over every rank (`launchers::grpo_refusal`: no hybrid groups).
        let grpo_hybrid = hybrid && b.training.stage.generates();
        let repeats = (zero > 0 && dp < 2)
            || grpo_hybrid
            || (hybrid && (shard >= dp || shard < 2 || !rules::shard_divides_dp(shard, dp)));
        if repeats || !self.global_sequences.is_multiple_of(dp) {
            return None;
        }
        let layout = Layout { shard, ..tiled };
        // GRPO: a vLLM engine whose share cannot hold its weights and a row's
        // KV cache does not start (the resolver's `grpo_engine_too_small`).
        let fabric = &s.instances[o[0]].fabric;
        let placement = (fabric, &layout);
        let engine = crate::model::rollout::VllmEngine::placed(
            arch,
            &self.counts,
            &self.base_recipe,
            gpu,
            placement,
            server,
        );
        if engine.is_some_and(|e| !e.runs()) {
            return None;
        }
        // Offers keep the experts' TP at the dense TP (Megatron-Core's default).
        (layout.expert_tensor_parallel() == Some(tp)).then_some(layout)
    }

    /// Whether a plan already found is both faster and cheaper than this
    /// block could ever be: its ideal time at every GPU's dense peak.
    fn beaten(
        &self,
        gpu: &Gpu,
        price: Option<f64>,
        precision: Precision,
        (nodes, gpus): (u64, u64),
    ) -> bool {
        if self.pareto.is_empty() {
            return false;
        }
        let hours = self.ideal_hours(gpu, precision, gpus);
        let usd = price.map_or(f64::INFINITY, |p| p * nodes as f64 * hours);
        self.pareto.iter().any(|f| f.hours <= hours && f.usd <= usd)
    }

    /// Whether a block on `all_gpus` could still hold the plan on the fewest
    /// GPUs: fewer than the fewest found, or as many and its ideal time
    /// (`training` GPUs at their dense peak) under that plan's.
    fn may_be_fewest(&self, all_gpus: u64, training: u64, precision: Precision, gpu: &Gpu) -> bool {
        let Some(f) = self.fewest else {
            return true;
        };
        let fewest = gpus_of(&self.space, &f);
        let ideal = self.ideal_hours(gpu, precision, training);
        all_gpus < fewest || (all_gpus == fewest && ideal < f.hours)
    }

    /// The run's hours on `gpus` GPUs at their dense peak: no plan on them
    /// is faster.
    fn ideal_hours(&self, gpu: &Gpu, precision: Precision, gpus: u64) -> f64 {
        let peak = rules::dense_peak_flops(gpu, precision);
        self.run_flops / (gpus as f64 * peak) / 3600.0
    }

    /// Whether the bundle's Megatron-Bridge or GRPO launcher refuses a
    /// candidate's precision, ZeRO stage, pipeline and checkpointing with the
    /// plan's other settings (`launchers`).
    fn launcher_refuses(&self, choice: launchers::Choice) -> bool {
        let b = &self.base;
        launchers::megatron_refusal(b, &self.arch, choice).is_some()
            || launchers::grpo_refusal(b, choice).is_some()
    }

    /// Whether the working plan offloads more activations than the block's
    /// instance can hold in host memory (`host::offload_overflow`).
    fn host_overflows(&self, o: [usize; 9], layout: &Layout, recipe: &Recipe) -> bool {
        let sleeping = crate::model::rollout::engine_sleeps(recipe);
        if !recipe.activations.offload && !sleeping {
            return false;
        }
        let offload = memory::offload(&self.arch, &self.counts, recipe, layout);
        let info = &self.space.instances[o[0]];
        let instance = &info.instance;
        let engine = crate::model::rollout::VllmEngine::of(
            &self.arch,
            &self.counts,
            recipe,
            &info.gpu,
            (&info.fabric, layout),
        );
        let held = memory::HeldOnHost::of(&self.arch, &self.counts, recipe, layout);
        let backup = engine.map_or(0.0, |e| e.weight_bytes) + held.bytes();
        crate::model::host::overflows(recipe, &offload, backup, instance, layout.gpus)
    }

    /// The first micro-batch after `mbs[mi]` (ascending) that may fit when
    /// `mbs[mi]` does not: larger ones need more memory while they still
    /// accumulate gradients, but the one of a single micro-batch a step
    /// sheds the earlier micro-batches' gradients (`memory::moments`) where
    /// no buffer holds them, so it is tried; past the end when none is left.
    fn next_after_overflow(
        &self,
        mbs: &[u64],
        mi: usize,
        layout: &Layout,
        recipe: &Recipe,
    ) -> usize {
        let ends_accumulation = |m: u64| m * layout.dp == self.global_sequences;
        if ends_accumulation(mbs[mi]) || memory::gradients_held(recipe, layout) {
            return mbs.len();
        }
        (mi + 1..mbs.len())
            .find(|&j| ends_accumulation(mbs[j]))
            .unwrap_or(mbs.len())
    }

    /// Every checkpointing, loss and micro-batch on the block's layout.
    fn inner(&mut self, o: [usize; 9], layout: &Layout) {
        let s = &self.space;
        let colocated = matches!(s.servers[o[8]], Server::Colocated { .. });
        let budget = s.instances[o[0]].budget;
        let pool = if colocated { s.instances[o[0]].pool } else { 0 };
        let (ckpts, losses, mbs) = (s.ckpts.clone(), s.losses.clone(), s.mbs.clone());
        let key = s.layout_key(o);
        if self.use_bounds && self.states_overflow(key, layout, budget.saturating_sub(pool)) {
            self.pruned += self.space.inner_len() as u64;
            return;
        }
        let s = &self.space;
        let mut peaks = self.peaks.take(key, s.inner_len());
        // One layer forward per micro-batch serves every checkpointing and loss.
        let mut forwards = vec![None; mbs.len()];
        let mut best: Option<Found> = None;
        let generating = self.generating(layout, pool);
        let offload = self.base.activations.offload;
        let mut dom =
            Dominance::new(&ckpts, &losses, mbs.len()).with(offload, self.zero_one_twin(o));
        let gpu = self.space.instances[o[0]].gpu.clone();
        let dp = layout.dp;
        for (ci, &ck) in ckpts.iter().enumerate() {
            if self.refused_checkpointings(o)[ci] {
                self.pruned += (losses.len() * mbs.len()) as u64;
                continue;
            }
            for (li, &loss) in losses.iter().enumerate() {
                // Micro-batches ascending: once one overflows, skip to the
                // one that ends accumulation (or stop).
                let mut skip_below = 0;
                for (mi, &mb) in mbs.iter().enumerate() {
                    if mi < skip_below
                        || !self.global_sequences.is_multiple_of(mb * dp)
                        || (self.use_bounds && dom.skips((ci, li, mi)))
                    {
                        self.pruned += 1;
                        continue;
                    }
                    let w = &mut self.work;
                    w.activations.checkpointing = ck;
                    w.implementation.loss = loss;
                    w.data.micro_batch = mb;
                    w.data.grad_accum = self.global_sequences / (mb * dp);
                    let recipe = w.recipe();
                    self.evaluated += 1;
                    let (arch, counts) = (&self.arch, &self.counts);
                    let at = dom.at(ci, li, mi);
                    let training = *peaks[at].get_or_insert_with(|| {
                        memory::peak_estimate(arch, counts, &recipe, layout)
                    });
                    // The engine's share on top, or asleep, its own moment.
                    let peak = generating.map_or(training + pool as f64, |g| training.max(g));
                    if !fits(peak, budget, || {
                        let m = memory::breakdown(arch, counts, &recipe, layout);
                        memory::with_engine(m, (arch, counts), &recipe, layout, &gpu).peak_bytes
                    }) {
                        if self.use_bounds {
                            skip_below = self.next_after_overflow(&mbs, mi, layout, &recipe);
                        }
                        continue;
                    }
                    if self.host_overflows(o, layout, &recipe) {
                        continue;
                    }
                    dom.covered[at] = true;
                    let f = self.timed(o, [ci, li, mi], (layout, &recipe), peak, &mut forwards[mi]);
                    self.fitting += 1;
                    // Same price per hour: the fastest is also the cheapest (the first of equals stays).
                    if best.is_none_or(|b| f.hours < b.hours) {
                        best = Some(f);
                    }
                }
            }
        }
        self.peaks.put(key, peaks);
        self.keep_zero_one(o, dom.covered);
        if let Some(f) = best {
            self.found_fit(f);
        }
    }

    /// Whether the layout's model states alone overflow `budget`
    /// (`memory::states_floor`, less a margin for the peak's rounding of
    /// each term to whole bytes): then no candidate of the block fits.
    fn states_overflow(&mut self, key: (usize, usize), layout: &Layout, budget: u64) -> bool {
        let (arch, counts, work) = (&self.arch, &self.counts, &self.work);
        let floor = self.peaks.floor(key, || {
            memory::states_floor(arch, counts, &work.recipe(), layout)
        });
        floor - 64.0 > budget as f64
    }

    /// Where the space's ZeRO-1 and ZeRO-2 blocks are (`zeros`), when they
    /// take the same time: not for GRPO or offloading.
    fn zero_twins(&self) -> Option<(usize, usize)> {
        let b = &self.base;
        if b.training.stage.generates() || b.activations.offload {
            return None;
        }
        let at = |z: (u8, bool)| self.space.zeros.iter().position(|&x| x == z);
        Some((at((1, false))?, at((2, false))?))
    }

    /// What the ZeRO-1 twin of a ZeRO-2 block covered (`Dominance`).
    fn zero_one_twin(&mut self, o: [usize; 9]) -> Option<Vec<bool>> {
        let (one, two) = self.zero_twins()?;
        if o[7] != two {
            return None;
        }
        let (kept, covered) = self.zero_one.get_mut(o[0])?.take()?;
        let mut twin = o;
        twin[7] = one;
        (kept == twin).then_some(covered)
    }

    /// Keep a ZeRO-1 block's `covered` for its ZeRO-2 twin.
    fn keep_zero_one(&mut self, o: [usize; 9], covered: Vec<bool>) {
        if self.zero_twins().is_some_and(|(one, _)| o[7] == one) {
            if self.zero_one.len() <= o[0] {
                self.zero_one.resize(o[0] + 1, None);
            }
            self.zero_one[o[0]] = Some((o, covered));
        }
    }

    /// The plan in `work`, which fits at `peak`, timed and priced as the page
    /// would (checkpoint saving included). `at` is its checkpointing, loss and
    /// micro-batch index; `recipe` the plan's; `forward` its micro-batch's
    /// layer forward.
    fn timed(
        &self,
        o: [usize; 9],
        at: [usize; 3],
        (layout, recipe): (&Layout, &Recipe),
        peak: f64,
        forward: &mut Option<throughput::LayerForward>,
    ) -> Found {
        let i = &self.space.instances[o[0]];
        let (w, counts) = (&self.work, &self.counts);
        let tp = throughput::throughput_reusing(
            &self.arch, counts, recipe, layout, &i.gpu, &i.fabric, &i.eff, forward,
        );
        let (time, _, _) = crate::model::cost::time(w, counts, self.adapters, &tp, layout.gpus);
        let hours = time.total_hours;
        let nodes = self.space.nodes[o[1]] as f64;
        Found {
            hours,
            usd: i.price.map_or(f64::INFINITY, |p| p * nodes * hours),
            idx: [
                o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], o[8], at[0], at[1], at[2],
            ],
            peak,
            tps: tp.tokens_per_second,
            mfu: tp.mfu,
            ga: w.data.grad_accum,
        }
    }

    fn found_fit(&mut self, f: Found) {
        let space = &self.space;
        keep_better(&mut self.fewest, f, |x| gpus_of(space, x) as f64);
        let auto = &self.base.auto;
        if auto.budget_usd.is_some_and(|b| f.usd <= b) {
            keep_better(&mut self.under_budget, f, |x| x.hours);
        }
        if auto.deadline_hours.is_some_and(|d| f.hours <= d) {
            keep_better(&mut self.by_deadline, f, |x| x.usd);
        }
        if self
            .pareto
            .iter()
            .any(|p| p.hours <= f.hours && p.usd <= f.usd)
        {
            return;
        }
        self.pareto
            .retain(|p| !(f.hours <= p.hours && f.usd <= p.usd));
        self.pareto.push(f);
    }

    fn plan_of(&self, f: &Found) -> Plan {
        let s = &self.space;
        let i = f.idx;
        let mut p = self.base.clone();
        p.hardware.instance =
            InstanceId::Listed(s.instances[i[0]].instance.instance_type.to_string());
        p.hardware.nodes = s.nodes[i[1]];
        p.numerics.precision = s.precisions[i[2]];
        p.parallelism.tp = s.tps[i[3]];
        p.parallelism.pp = s.pps[i[4]];
        p.parallelism.cp = s.cps[i[5]];
        p.parallelism.sp = p.parallelism.tp > 1;
        p.parallelism.vp = 1;
        p.parallelism.ep = s.eps[i[6]];
        let (zero, hybrid) = s.zeros[i[7]];
        p.parallelism.zero = zero;
        let gpn = s.instances[i[0]].instance.gpu_count;
        p.parallelism.shard =
            hybrid.then(|| (gpn / (p.parallelism.tp * p.parallelism.cp).min(gpn)).max(1));
        p.training.rollout.gen_gpus = s.servers[i[8]].gpus(gpn, p.hardware.nodes).unwrap_or(0);
        p.training.rollout.sleep = s.servers[i[8]].asleep();
        p.activations.checkpointing = s.ckpts[i[9]];
        p.implementation.loss = s.losses[i[10]];
        p.data.micro_batch = s.mbs[i[11]];
        p.data.grad_accum = f.ga;
        if p.hardware.instance != self.base.hardware.instance {
            p.hardware.price = None;
        }
        p
    }

    fn candidate(&self, f: &Found) -> Candidate {
        let p = self.plan_of(f);
        let info = &self.space.instances[f.idx[0]];
        let offer = Offer {
            instance: info.instance.instance_type.to_string(),
            gpu: info.gpu.id.to_string(),
            gpus: p.hardware.nodes * info.instance.gpu_count,
            peak_bytes_per_gpu: self.peak_of(f, &p),
            tokens_per_second: f.tps,
            mfu: f.mfu,
            hours: f.hours,
            usd: f.usd.is_finite().then_some(f.usd),
        };
        Candidate::of(&p, offer, &self.user)
    }

    /// A found plan's peak in whole bytes (`memory::breakdown`; the walk
    /// kept `memory::peak_estimate`'s), its engine's share included.
    fn peak_of(&self, f: &Found, plan: &Plan) -> u64 {
        let o: [usize; 9] = std::array::from_fn(|i| f.idx[i]);
        let (gpu, recipe) = (&self.space.instances[o[0]].gpu, plan.recipe());
        let shape = (&self.arch, &self.counts);
        self.layout(o).map_or(f.peak as u64, |layout| {
            let m = memory::breakdown(&self.arch, &self.counts, &recipe, &layout);
            memory::with_engine(m, shape, &recipe, &layout, gpu).peak_bytes
        })
    }

    /// GRPO in vLLM's sleep mode, colocated: the bytes of the moment it
    /// generates (the model states, the CUDA context and its `pool`), which
    /// the peak is at least (`MemoryBreakdown::with_sleeping_pool`).
    fn generating(&self, layout: &Layout, pool: u64) -> Option<f64> {
        if pool == 0 {
            return None;
        }
        let recipe = self.work.recipe();
        if !crate::model::rollout::engine_sleeps(&recipe) {
            return None;
        }
        let (arch, counts) = (&self.arch, &self.counts);
        let resident = memory::generating_residents(arch, counts, &recipe, layout);
        Some(memory::generating_bytes(&resident, pool) as f64)
    }

    /// The ranked result so far.
    pub fn result(&self) -> SearchResult {
        let mut pareto = self.pareto.clone();
        pareto.sort_by(|a, b| a.hours.total_cmp(&b.hours).then(a.usd.total_cmp(&b.usd)));
        SearchResult {
            candidates: self.candidates(),
            evaluated: self.evaluated,
            pruned: self.pruned,
            fitting: self.fitting,
            fastest: pareto.first().map(|f| self.candidate(f)),
            cheapest: pareto
                .iter()
                .filter(|f| f.usd.is_finite())
                .min_by(|a, b| a.usd.total_cmp(&b.usd))
                .map(|f| self.candidate(f)),
            best_under_budget: self.under_budget.map(|f| self.candidate(&f)),
            best_under_deadline: self.by_deadline.map(|f| self.candidate(&f)),
            fewest_gpus: self.fewest.map(|f| self.candidate(&f)),
            pareto: pareto.iter().map(|f| self.candidate(f)).collect(),
        }
    }
}

/// Search the whole space around `plan` (native callers, tests, the CLI).
pub fn search(plan: &Plan) -> SearchResult {
    Search::new(plan).finish()
}

/// Whether a plan whose peak `memory::peak_estimate` puts at `estimate`
/// fits in `budget`, the `exact` peak asked where the estimate is too
/// close to tell (`memory::peak_estimate_slack`) or not a number.
fn fits(estimate: f64, budget: u64, exact: impl FnOnce() -> u64) -> bool {
    let margin = memory::peak_estimate_slack(estimate);
    if !estimate.is_finite() || (estimate - budget as f64).abs() <= margin {
        return exact() <= budget;
    }
    estimate < budget as f64
}

/// A found plan's GPUs, a vLLM server's included: its nodes' whole instances.
fn gpus_of(space: &Space, f: &Found) -> u64 {
    space.nodes[f.idx[1]] * space.instances[f.idx[0]].instance.gpu_count
}

/// Keep `f` in `best` if it is better by `key`; ties (equal cost where the
/// price is unknown or zero) go to the faster plan, then the cheaper, then
/// the first found.
fn keep_better(best: &mut Option<Found>, f: Found, key: impl Fn(&Found) -> f64) {
    let better = best.is_none_or(|b| {
        key(&f)
            .total_cmp(&key(&b))
            .then(f.hours.total_cmp(&b.hours))
            .then(f.usd.total_cmp(&b.usd))
            .is_lt()
    });
    if better {
        *best = Some(f);
    }
}
