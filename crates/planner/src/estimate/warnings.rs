//! The seed articles' field guide as rules (SPEC §6). Each warning says why
//! and which setting fixes it; `fix` is a single `key=value` where one exists.
//! A rule is one function returning its message, and one line in `RULES`.

use crate::estimate::report::Figures;
use crate::model::job::Job;
use crate::model::memory::{MemoryBreakdown, Term};
use crate::model::plan::{Attention, Checkpointing, Loss, Plan, Precision, Stack};
use crate::model::resolve::Message;
use crate::model::throughput::{Efficiency, HostCosts};
use crate::text::{Arg, Text};

/// What every rule reads.
pub struct Context<'a> {
    pub plan: &'a Plan,
    pub r: &'a Job,
    pub figures: &'a Figures,
    pub errors: &'a [Message],
    pub mem: &'a MemoryBreakdown,
}

impl Context<'_> {
    fn plan(&self) -> &Plan {
        self.plan
    }

    fn warn(
        &self,
        key: &'static str,
        id: Text,
        args: impl IntoIterator<Item = (&'static str, Arg)>,
    ) -> Message {
        Message::new(key, id, args)
    }
}

type Rule = fn(&Context) -> Option<Message>;

/// Every rule, in the order the warnings are shown.
const RULES: &[Rule] = &[
    over_budget,
    memory_underused,
    fp8_small_model,
    fp8_keep_bf16,
    selective_noop_with_flash,
    long_sequence_without_checkpointing,
    eager_attention_long_sequence,
    dims_not_multiple_of_64,
    sequence_beyond_context,
    micro_batch_one_low_utilisation,
    checkpoint_overhead,
    interruptions,
    crosses_nvlink_domain,
    stack_not_bundled,
    training_plan,
    price_unknown,
    price_derived,
    price_dated,
    fp32_slow,
    job_shorter_than_a_step,
    network_bound,
    no_efa,
    moe_launch_bound,
    peft_fp32_adapter_casts,
    counts_saturated,
];

/// All rules that apply to this plan, drawn from its finished figures and
/// its errors.
pub fn check(
    plan: &Plan,
    r: &Job,
    figures: &Figures,
    errors: &[Message],
    mem: &MemoryBreakdown,
) -> Vec<Message> {
    let c = Context {
        plan,
        r,
        figures,
        errors,
        mem,
    };
    RULES.iter().filter_map(|rule| rule(&c)).collect()
}

/// A term's name inside a sentence.
fn term_name(term: Term) -> Text {
    match term {
        Term::Activations => Text::InlineActivations,
        Term::AttentionScores => Text::InlineAttentionScores,
        Term::LogitsAndLoss => Text::InlineLogitsAndLoss,
        Term::OptimizerStates => Text::InlineOptimizerStates,
        Term::Weights => Text::InlineWeights,
        Term::Gradients => Text::InlineGradients,
        // GRPO's colocated vLLM share is not the model's states.
        Term::Generation => Text::VllmEngineMemory,
        _ => Text::InlineModelStates,
    }
}

/// The one setting most likely to bring the largest term under the budget.
fn over_budget_fix(c: &Context, term: Term) -> (Option<(&'static str, String)>, Text) {
    let plan = c.plan();
    let act = matches!(term, Term::Activations | Term::AttentionScores);
    if term == Term::AttentionScores && plan.implementation.attention == Attention::Eager {
        (Some(("attn", "flash".into())), Text::FixFlashAttention)
    } else if act && plan.activations.checkpointing != Checkpointing::Full {
        (Some(("ckpt", "full".into())), Text::FixFullCheckpointing)
    } else if term == Term::LogitsAndLoss && plan.implementation.loss == Loss::Plain {
        (Some(("loss", "fused".into())), Text::FixFusedLoss)
    } else if plan.data.micro_batch > 1
        && matches!(
            term,
            Term::Activations | Term::LogitsAndLoss | Term::AttentionScores
        )
    {
        let mb = c.figures.max_micro_batch.max(1);
        (Some(("mb", mb.to_string())), Text::FixLowerMicroBatch)
    } else if plan.parallelism.zero < 3 && c.figures.layout.dp > 1 {
        (Some(("zero", "3".into())), Text::FixShardStates)
    } else {
        (None, Text::FixMoreHardware)
    }
}

/// Over the budget: name the term that blows up, and the setting that fixes it.
fn over_budget(c: &Context) -> Option<Message> {
    // `fits` is also false when the host cannot hold what a plan offloads:
    // that has its own error, and the GPU may well have room (#36).
    let m = &c.figures.memory;
    if c.figures.fits || m.peak_bytes_per_gpu <= m.budget_bytes {
        return None;
    }
    let (term, bytes) = c
        .mem
        .terms
        .iter()
        .copied()
        .max_by_key(|(_, b)| *b)
        .unwrap_or((Term::Weights, 0));
    let (fix, fix_text) = over_budget_fix(c, term);
    let key = fix.as_ref().map(|f| f.0).unwrap_or("nodes");
    let peak = Arg::Bytes(c.figures.memory.peak_bytes_per_gpu);
    let budget = Arg::Bytes(c.figures.memory.budget_bytes);
    let term_gib = Arg::Bytes(bytes);
    let args: [(&'static str, Arg); 5] = [
        ("peak", Arg::from(&peak)),
        ("budget", Arg::from(&budget)),
        ("term", Arg::Text(term_name(term))),
        ("term_gib", Arg::from(&term_gib)),
        ("fix", Arg::Text(fix_text)),
    ];
    let mut m = c.warn(key, Text::OverBudget, args);
    m.fix = fix;
    Some(m)
}

/// Under 70% of the budget: a larger micro-batch keeps the GPUs busier.
fn memory_underused(c: &Context) -> Option<Message> {
    let (plan, f) = (c.plan(), c.figures);
    let budget = f.memory.budget_bytes as f64;
    let peak = f.memory.peak_bytes_per_gpu as f64;
    if !f.fits || peak >= 0.7 * budget || f.max_micro_batch <= plan.data.micro_batch {
        return None;
    }
    let mb = f
        .max_micro_batch
        .min(plan.data.micro_batch * 2)
        .max(plan.data.micro_batch + 1);
    let percent = Arg::Number(100.0 * peak / budget, 0);
    let args: [(&'static str, Arg); 2] = [
        ("percent", Arg::from(&percent)),
        ("max_mb", Arg::from(&f.max_micro_batch)),
    ];
    Some(
        c.warn("mb", Text::MemoryUnderused, args)
            .fix("mb", mb.to_string()),
    )
}

/// FP8 below ~7B parameters gains little.
fn fp8_small_model(c: &Context) -> Option<Message> {
    (c.plan().numerics.precision.is_low_precision() && c.figures.parameters < 7_000_000_000).then(
        || {
            c.warn("precision", Text::Fp8SmallModel, [])
                .fix("precision", "bf16")
        },
    )
}

/// FP8 on the embedding, norms and LM head risks divergence.
fn fp8_keep_bf16(c: &Context) -> Option<Message> {
    c.plan()
        .numerics
        .precision
        .is_low_precision()
        .then(|| c.warn("precision", Text::Fp8KeepBf16, []))
}

/// Selective recomputation saves nothing with flash attention.
fn selective_noop_with_flash(c: &Context) -> Option<Message> {
    let plan = c.plan();
    (plan.activations.checkpointing == Checkpointing::Selective
        && plan.implementation.attention.is_fused())
    .then(|| {
        c.warn("ckpt", Text::SelectiveNoopWithFlash, [])
            .fix("ckpt", "none")
    })
}

/// No checkpointing at 32K tokens and more, and it does not fit.
fn long_sequence_without_checkpointing(c: &Context) -> Option<Message> {
    let plan = c.plan();
    if plan.data.seq < 32_768
        || plan.activations.checkpointing != Checkpointing::None
        || c.figures.fits
    {
        return None;
    }
    let gib = Arg::Bytes(c.mem.saved_activation_bytes);
    let args: [(&'static str, Arg); 2] =
        [("seq", Arg::from(&plan.data.seq)), ("gib", Arg::from(&gib))];
    Some(
        c.warn("ckpt", Text::LongSequenceWithoutCheckpointing, args)
            .fix("ckpt", "full"),
    )
}

/// Eager attention at 4K tokens and more.
fn eager_attention_long_sequence(c: &Context) -> Option<Message> {
    let plan = c.plan();
    if plan.implementation.attention != Attention::Eager || plan.data.seq < 4096 {
        return None;
    }
    let gib = Arg::Bytes(c.mem.get(Term::AttentionScores));
    let args: [(&'static str, Arg); 1] = [("gib", Arg::from(&gib))];
    Some(
        c.warn("attn", Text::EagerAttentionLongSequence, args)
            .fix("attn", "flash"),
    )
}

/// Model dimensions off the tensor cores' tile sizes (SPEC §1).
fn dims_not_multiple_of_64(c: &Context) -> Option<Message> {
    let arch = &c.r.arch;
    let misaligned: Vec<String> = [
        ("hidden", arch.hidden),
        ("ffn", arch.ffn),
        ("head_dim", arch.head_dim),
    ]
    .iter()
    .filter(|(_, v)| v % 64 != 0)
    .map(|(k, v)| format!("{k}={v}"))
    .collect();
    if misaligned.is_empty() {
        return None;
    }
    let dims = misaligned.join(", ");
    let args: [(&'static str, Arg); 1] = [("dims", Arg::from(&dims))];
    Some(c.warn("hidden", Text::DimsNotMultipleOf64, args))
}

/// A sequence longer than the model was trained on.
fn sequence_beyond_context(c: &Context) -> Option<Message> {
    let (plan, arch) = (c.plan(), &c.r.arch);
    if arch.max_context == 0 || plan.data.seq <= arch.max_context {
        return None;
    }
    let args: [(&'static str, Arg); 2] = [
        ("seq", Arg::from(&plan.data.seq)),
        ("context", Arg::from(&arch.max_context)),
    ];
    Some(
        c.warn("seq", Text::SequenceBeyondContext, args)
            .fix("seq", arch.max_context.to_string()),
    )
}

/// Micro-batch 1 on a large model at low utilisation.
fn micro_batch_one_low_utilisation(c: &Context) -> Option<Message> {
    let f = c.figures;
    if c.plan().data.micro_batch != 1
        || f.parameters <= 30_000_000_000
        || f.throughput.mfu >= 0.3
        || f.max_micro_batch <= 1
    {
        return None;
    }
    let billions = Arg::Number(f.parameters as f64 / 1e9, 0);
    let mfu = Arg::Number(f.throughput.mfu * 100.0, 0);
    let args: [(&'static str, Arg); 2] =
        [("billions", Arg::from(&billions)), ("mfu", Arg::from(&mfu))];
    Some(
        c.warn("mb", Text::MicroBatchOneLowUtilisation, args)
            .fix("mb", "2"),
    )
}

/// Checkpoint saving over 3% of wall time.
fn checkpoint_overhead(c: &Context) -> Option<Message> {
    let (plan, ck) = (c.plan(), &c.figures.checkpoint);
    if ck.wall_share <= 0.03 {
        return None;
    }
    let (key, value, fix_text) = if plan.saving.async_save {
        (
            "save_every",
            (plan.saving.save_every * 4).to_string(),
            Text::FixSaveLessOften,
        )
    } else {
        ("async_save", "1".to_string(), Text::FixSaveAsync)
    };
    let gb = Arg::Number(ck.size_bytes as f64 / 1e9, 0);
    let seconds = Arg::Number(ck.seconds_per_save, 0);
    let percent = Arg::Number(ck.wall_share * 100.0, 1);
    let args: [(&'static str, Arg); 4] = [
        ("gb", Arg::from(&gb)),
        ("seconds", Arg::from(&seconds)),
        ("percent", Arg::from(&percent)),
        ("fix", Arg::Text(fix_text)),
    ];
    Some(c.warn(key, Text::CheckpointOverhead, args).fix(key, value))
}

/// Interruptions that cost over 1% of the wall time where another save
/// interval (Young's) costs clearly less, or that never let the job finish
/// (#58); the fix is that interval.
fn interruptions(c: &Context) -> Option<Message> {
    let (plan, f) = (c.plan(), &c.figures.failures);
    let best = f.best_save_every?;
    let now = plan.saving.save_every;
    let total = c.figures.time.total_hours;
    let best_hours = f.best_total_hours?;
    let clearly_better = best_hours < 0.99 * total && (now == 0 || best.abs_diff(now) * 4 > now);
    if !f.never_finishes && (f.wall_share <= 0.01 || !clearly_better) {
        return None;
    }
    let count = Arg::Number(f.expected_interruptions.unwrap_or(0.0), 0);
    let mtbf = Arg::Number(f.mtbf_hours.unwrap_or(0.0), 1);
    let percent = Arg::Number(f.wall_share * 100.0, 1);
    let best_arg = Arg::Number(best as f64, 0);
    let hours = Arg::Number(best_hours, 0);
    let args: [(&'static str, Arg); 5] = [
        ("count", Arg::from(&count)),
        ("mtbf", Arg::from(&mtbf)),
        ("percent", Arg::from(&percent)),
        ("best", Arg::from(&best_arg)),
        ("hours", Arg::from(&hours)),
    ];
    let text = if f.never_finishes {
        Text::InterruptionsNeverFinish
    } else {
        Text::InterruptionsCost
    };
    Some(
        c.warn("save_every", text, args)
            .fix("save_every", best.to_string()),
    )
}

/// TP, CP or EP traffic leaving the NVLink domain runs on the network, an
/// order of magnitude slower (900 GB/s NVLink vs 50 GB/s EFA per GPU on p6e).
fn crosses_nvlink_domain(c: &Context) -> Option<Message> {
    let nv = &c.figures.nvlink;
    let tp_error = c.errors.iter().any(|e| e.id() == Text::TpExceedsNode);
    let groups: Vec<&str> = nv
        .crossing
        .iter()
        .copied()
        .filter(|g| matches!(*g, "cp" | "ep") || (*g == "tp" && !tp_error))
        .collect();
    let key = *groups.first()?;
    let names = groups.join(", ").to_ascii_uppercase();
    let args: [(&'static str, Arg); 2] = [
        ("groups", Arg::from(&names)),
        ("gpus", Arg::from(&nv.gpus_per_domain)),
    ];
    Some(c.warn(key, Text::CrossesNvlinkDomain, args))
}

/// The launch bundle carries train.py (Hugging Face Transformers) and a
/// Megatron-Bridge launcher (#37): a torchtitan plan is launched through the
/// user's own torchtitan entry point, which the warning names.
fn stack_not_bundled(c: &Context) -> Option<Message> {
    let p = c.plan();
    let entry = match p.implementation.stack {
        Stack::Hf | Stack::Megatron => return None,
        _ if p.launch.entry != "train.py" => return None,
        Stack::Torchtitan => "torchtitan/train.py",
    };
    let args: [(&'static str, Arg); 1] = [("stack", Arg::from(p.implementation.stack.key()))];
    Some(
        c.warn("entry", Text::StackNotBundled, args)
            .fix("entry", entry),
    )
}

/// Capacity bought as a training plan (#58): an instance sold only that way
/// needs the plan's ARN in the launch code; plans come in 1 to 64 instances
/// by powers of two; a job spans at most 10 UltraServers.
fn training_plan(c: &Context) -> Option<Message> {
    use crate::model::hardware::{ultraservers, MAX_ULTRASERVERS, TRAINING_PLAN_COUNTS};
    let (plan, i) = (c.plan(), &c.r.instance);
    let nodes = plan.hardware.nodes;
    if plan.hardware.instance.is_custom() {
        return None;
    }
    let servers = ultraservers(i, plan.hardware.ultraserver, nodes);
    if let Some(s) = servers.as_ref().filter(|s| s.len() > MAX_ULTRASERVERS) {
        let max = Arg::from(s[0] * MAX_ULTRASERVERS as u64);
        let args: [(&'static str, Arg); 2] = [("max", max), ("count", Arg::from(nodes))];
        return Some(c.warn("nodes", Text::UltraServerPlacementLimit, args));
    }
    if plan.launch.training_plan.is_empty() {
        if !i.sold_by_plan_only && servers.is_none() {
            return None;
        }
        let args: [(&'static str, Arg); 1] = [("instance", Arg::from(&c.figures.instance))];
        return Some(c.warn("training_plan", Text::NeedsTrainingPlan, args));
    }
    if servers.is_some() || TRAINING_PLAN_COUNTS.contains(&nodes) {
        return None;
    }
    let up = *TRAINING_PLAN_COUNTS.iter().find(|&&n| n >= nodes)?;
    let args: [(&'static str, Arg); 2] = [("nodes", Arg::from(nodes)), ("up", Arg::from(up))];
    Some(
        c.warn("nodes", Text::TrainingPlanCount, args)
            .fix("nodes", up.to_string()),
    )
}

/// No price known: say how the instance is sold, and ask for the price paid.
fn price_unknown(c: &Context) -> Option<Message> {
    if c.figures.cost.total_usd.is_some() {
        return None;
    }
    let i = &c.r.instance;
    let id = if i.instance_type.contains("gb200") {
        Text::PriceUltraServerOnly
    } else if i.sold_by_plan_only {
        Text::PriceTrainingPlansOnly
    } else {
        Text::PriceUnknown
    };
    let args: [(&'static str, Arg); 1] = [("instance", Arg::from(&c.figures.instance))];
    Some(c.warn("price", id, args))
}

/// A derived price is an estimate: 1.15 x the EC2 on-demand price.
fn price_derived(c: &Context) -> Option<Message> {
    let cost = &c.figures.cost;
    let ec2 = c.r.instance.ec2_usd_hr?;
    let usd = cost.price_per_instance_hour?;
    if cost.price_source != "derived" {
        return None;
    }
    let (usd, ec2) = (Arg::Number(usd, 2), Arg::Number(ec2, 2));
    let args: [(&'static str, Arg); 3] = [
        ("instance", Arg::from(&c.figures.instance)),
        ("usd", Arg::from(&usd)),
        ("ec2", Arg::from(&ec2)),
    ];
    Some(c.warn("price", Text::PriceDerived, args))
}

/// A listed price read before AWS's June 2025 P-family price cut may be stale
/// or withdrawn (sagemaker_prices.csv: the P3 prices date from 2021).
fn price_dated(c: &Context) -> Option<Message> {
    let cost = &c.figures.cost;
    let as_of = cost.price_as_of.as_deref()?;
    let year: u32 = as_of.get(..4)?.parse().ok()?;
    if cost.price_source != "listed" || year >= 2025 {
        return None;
    }
    let args: [(&'static str, Arg); 2] = [
        ("instance", Arg::from(&c.figures.instance)),
        ("as_of", Arg::from(as_of.to_string())),
    ];
    Some(c.warn("price", Text::PriceDated, args))
}

/// FP32 training.
fn fp32_slow(c: &Context) -> Option<Message> {
    (c.plan().numerics.precision == Precision::Fp32).then(|| {
        c.warn("precision", Text::Fp32Slow, [])
            .fix("precision", "bf16")
    })
}

/// Fewer tokens than one step trains (#25: a one-token job cost $9.9e11 per
/// million tokens without a word): the job runs one whole step.
fn job_shorter_than_a_step(c: &Context) -> Option<Message> {
    let step = c.figures.throughput.tokens_per_step;
    if c.plan().data.tokens >= step as f64 {
        return None;
    }
    let args: [(&'static str, Arg); 2] = [
        ("tokens", Arg::Real(c.plan().data.tokens)),
        ("step", Arg::from(&step)),
    ];
    Some(c.warn("tokens", Text::JobShorterThanAStep, args))
}

/// Share of a step above which the GPUs mostly wait on the network.
const NETWORK_BOUND_SHARE: f64 = 0.8;

/// A step spent mostly waiting on exposed communication (#25: a 1e-7 GB/s
/// network gave 5.4e11 hours without a word).
fn network_bound(c: &Context) -> Option<Message> {
    let t = &c.figures.throughput;
    let s = &t.step;
    let comm = s.tensor_parallel
        + s.context_parallel
        + s.expert_parallel
        + s.data_parallel
        + s.pipeline_bubble;
    let share = comm / t.step_seconds;
    if share.is_nan() || share <= NETWORK_BOUND_SHARE {
        return None;
    }
    let percent = Arg::Number(100.0 * share, 0);
    let args: [(&'static str, Arg); 1] = [("share", Arg::from(&percent))];
    Some(c.warn("nodes", Text::NetworkBound, args))
}

/// Nodes of an instance without EFA train together as SageMaker runs any
/// multi-instance job: NCCL crosses nodes over TCP sockets on the
/// instance's ENA network (its `network_gbps`, at the nominal 80% NCCL
/// reaches), which no published run here measures. The estimate stands;
/// the warning says where its network figure comes from.
fn no_efa(c: &Context) -> Option<Message> {
    let (plan, r) = (c.plan(), c.r);
    if plan.hardware.nodes <= 1 || r.instance.efa_supported || plan.hardware.instance.is_custom() {
        return None;
    }
    let args: [(&'static str, Arg); 2] = [
        ("instance", Arg::from(&r.instance.instance_type)),
        ("gbps", Arg::Number(r.instance.network_gbps(), 0)),
    ];
    Some(c.warn("nodes", Text::NoEfaAcrossNodes, args))
}

/// Share of a step an MoE plan's avoidable host launch costs must reach
/// before the page suggests the fix.
const MOE_LAUNCH_SHARE: f64 = 0.05;

/// A Megatron MoE plan with the all-to-all dispatcher or a router outside
/// CUDA graphs spends part of each step launching kernels from the host
/// (#26: 3.1 ms per MoE layer and micro-batch for the dispatcher, 1.5 ms for
/// the router, `throughput::HOST`); the fused dispatcher and CUDA graphs
/// save it. The step is timed again without those costs to say how much.
fn moe_launch_bound(c: &Context) -> Option<Message> {
    let (plan, r) = (c.plan(), c.r);
    let megatron = plan.implementation.stack == Stack::Megatron;
    if !megatron || r.arch.moe.is_none() || (plan.moe.moe_flex && plan.moe.moe_graphs) {
        return None;
    }
    // The fused dispatcher and router graphs take their launch costs away.
    let eff = r.efficiency();
    let fused = Efficiency {
        host: HostCosts {
            moe_router_launch: 0.0,
            moe_alltoall_launch: 0.0,
            ..eff.host
        },
        ..eff
    };
    let t = r.throughput(&fused);
    let share = 1.0 - t.step_seconds / c.figures.throughput.step_seconds;
    if share.is_nan() || share <= MOE_LAUNCH_SHARE {
        return None;
    }
    let key = if plan.moe.moe_flex {
        "moe_graphs"
    } else {
        "moe_flex"
    };
    // Megatron-Core runs no CUDA graphs beside activation offloading.
    if key == "moe_graphs" && plan.activations.offload {
        return None;
    }
    let percent = Arg::Number(100.0 * share, 0);
    let args: [(&'static str, Arg); 1] = [("share", Arg::from(&percent))];
    Some(c.warn(key, Text::MoeLaunchBound, args).fix(key, "1"))
}

/// The share of a step above which PEFT's casts to FP32 adapters are named.
const ADAPTER_CASTS_SHARE: f64 = 0.05;

/// PEFT keeps LoRA's adapters in FP32 by default (`autocast_adapter_dtype`)
/// and casts every adapted Linear's input to them and back
/// (`compute::adapter_casts`): on the Hugging Face stack that can cost more
/// than the adapters' own GEMMs (#55). The step is timed again with the
/// adapters in BF16 to say how much.
fn peft_fp32_adapter_casts(c: &Context) -> Option<Message> {
    let (plan, r) = (c.plan(), c.r);
    let fp32_adapters = plan.hf_adapters() && r.recipe.adapter_bytes() == 4.0;
    if !fp32_adapters || plan.numerics.precision == Precision::Fp32 || !c.errors.is_empty() {
        return None;
    }
    let mut bf16 = r.recipe;
    bf16.lora.lora_dtype = crate::model::plan::LoraDtype::Bf16;
    let (arch, counts, layout) = (&r.arch, &r.counts, &r.layout);
    let eff = r.efficiency();
    let t =
        crate::model::throughput::throughput(arch, counts, &bf16, layout, &r.gpu, &r.fabric, &eff);
    let share = 1.0 - t.step_seconds / c.figures.throughput.step_seconds;
    if share.is_nan() || share <= ADAPTER_CASTS_SHARE {
        return None;
    }
    let args: [(&'static str, Arg); 1] = [("share", Arg::Number(100.0 * share, 0))];
    Some(
        c.warn("lora_dtype", Text::PeftFp32AdapterCasts, args)
            .fix("lora_dtype", "bf16"),
    )
}

/// A count past what its integer holds is a floor, not a figure (#25:
/// tokens per step printed u64::MAX as if exact).
fn counts_saturated(c: &Context) -> Option<Message> {
    let saturated = c.figures.throughput.tokens_per_step == u64::MAX
        || c.figures.memory.peak_bytes_per_gpu == u64::MAX;
    saturated.then(|| c.warn("mb", Text::CountsSaturated, []))
}

#[cfg(test)]
mod tests {
    /// `render` is what every rule's message is shown with; values stay verbatim.
    #[test]
    fn render_keeps_values_verbatim() {
        use crate::text::{render, Lang, Phrase, Text};
        let p = Phrase::new(Text::PriceUnknown).with("instance", "{gpu}");
        assert_eq!(
            render(Lang::En, &p),
            "no SageMaker price is known for {gpu}: enter the hourly price you pay (price=) to see the cost"
        );
    }
}
