//! What the auto-plan returns: each plan it keeps and the front they form,
//! each put together (`Candidate::of`) from its plan, what it offers and the
//! user's own plan: by the search, and by the page from the search's wire
//! form (`wire`).

use crate::estimate::report::Report;
use crate::model::plan::{Checkpointing, Plan};
use crate::text::{Arg, Join, Phrase, Text};
use serde::Serialize;

/// One plan that fits, with its key numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Candidate {
    /// The whole plan as a query string: apply it by opening `?{query}`.
    pub query: String,
    pub instance: String,
    pub gpu: String,
    pub nodes: u64,
    pub gpus: u64,
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub ep: u64,
    pub zero: u8,
    pub micro_batch: u64,
    pub grad_accum: u64,
    #[serde(serialize_with = "crate::model::plan::as_key")]
    pub precision: crate::model::plan::Precision,
    pub checkpointing: String,
    #[serde(serialize_with = "crate::model::plan::as_key")]
    pub loss: crate::model::plan::Loss,
    pub peak_bytes_per_gpu: u64,
    pub tokens_per_second: f64,
    pub mfu: f64,
    pub hours: f64,
    pub usd: Option<f64>,
    /// Why it wins, against the user's plan (in JSON its English, id and
    /// arguments).
    #[serde(serialize_with = "crate::text::said")]
    pub why: Phrase,
    /// What runs its exported launch code.
    pub engine: crate::model::plan::Engine,
}

/// What the search found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchResult {
    /// Size of the space searched (every combination of the dimensions).
    pub candidates: u64,
    /// Combinations fully evaluated (memory; throughput and cost when they fit).
    pub evaluated: u64,
    /// Combinations ruled out by a bound or an invalid layout without evaluation.
    pub pruned: u64,
    pub fitting: u64,
    /// Non-dominated plans in (hours, USD), fastest first.
    pub pareto: Vec<Candidate>,
    pub fastest: Option<Candidate>,
    pub cheapest: Option<Candidate>,
    pub best_under_budget: Option<Candidate>,
    pub best_under_deadline: Option<Candidate>,
    /// The plan on the fewest GPUs (a vLLM server's included), the fastest
    /// of those: "how many GPUs does this job need?" (#56).
    pub fewest_gpus: Option<Candidate>,
}

/// The user's own plan, which every candidate is compared with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Baseline {
    pub hours: f64,
    pub usd: Option<f64>,
    pub fits: bool,
}

impl Baseline {
    pub fn of(user: &Report) -> Baseline {
        Baseline {
            hours: user.time.total_hours,
            usd: user.cost.total_usd,
            fits: user.fits,
        }
    }
}

/// Where a candidate runs and what it offers, as the search timed it.
#[derive(Clone, Debug, PartialEq)]
pub struct Offer {
    pub instance: String,
    pub gpu: String,
    /// Every GPU of its instances.
    pub gpus: u64,
    pub peak_bytes_per_gpu: u64,
    pub tokens_per_second: f64,
    pub mfu: f64,
    pub hours: f64,
    pub usd: Option<f64>,
}

impl Candidate {
    /// The candidate of plan `p`, offering `offer`, against the user's `base`.
    pub fn of(p: &Plan, offer: Offer, base: &Baseline) -> Candidate {
        let short = offer.instance.trim_start_matches("ml.");
        let what = plan_summary(p, short);
        let speed = base.hours / offer.hours.max(1e-12);
        let vs = why(base, speed, &offer);
        Candidate {
            query: p.to_query(),
            nodes: p.hardware.nodes,
            tp: p.parallelism.tp,
            pp: p.parallelism.pp,
            cp: p.parallelism.cp,
            ep: p.parallelism.ep,
            zero: p.parallelism.zero,
            micro_batch: p.data.micro_batch,
            grad_accum: p.data.grad_accum,
            precision: p.numerics.precision,
            checkpointing: p.activations.checkpointing.key().into_owned(),
            loss: p.implementation.loss,
            why: Phrase::new(Text::CandidateWhy)
                .with("what", what)
                .with("vs", vs),
            engine: p.engine(),
            instance: offer.instance,
            gpu: offer.gpu,
            gpus: offer.gpus,
            peak_bytes_per_gpu: offer.peak_bytes_per_gpu,
            tokens_per_second: offer.tokens_per_second,
            mfu: offer.mfu,
            hours: offer.hours,
            usd: offer.usd,
        }
    }

    /// What it offers, as `Candidate::of` took it.
    pub fn offer(&self) -> Offer {
        Offer {
            instance: self.instance.clone(),
            gpu: self.gpu.clone(),
            gpus: self.gpus,
            peak_bytes_per_gpu: self.peak_bytes_per_gpu,
            tokens_per_second: self.tokens_per_second,
            mfu: self.mfu,
            hours: self.hours,
            usd: self.usd,
        }
    }
}

/// Why a candidate wins, against the user's own plan: speed and cost
/// ratios, or that it fits where the user's plan does not.
fn why(base: &Baseline, speed: f64, offer: &Offer) -> Phrase {
    let mut parts = vec![];
    if speed > 1.05 {
        parts.push(Phrase::new(Text::TimesFaster).with("x", Arg::Number(speed, 1)));
    } else if speed < 0.95 {
        parts.push(Phrase::new(Text::TimesSlower).with("x", Arg::Number(1.0 / speed, 1)));
    }
    if let (Some(u), Some(usd)) = (base.usd, offer.usd) {
        let d = 1.0 - usd / u;
        if d > 0.02 {
            parts
                .push(Phrase::new(Text::PercentCheaper).with("percent", Arg::Number(d * 100.0, 0)));
        } else if d < -0.02 {
            parts
                .push(Phrase::new(Text::PercentDearer).with("percent", Arg::Number(-d * 100.0, 0)));
        }
    }
    if !base.fits {
        let mut said = vec![Phrase::new(Text::FitsUnlikeYours)];
        if let Some(usd) = offer.usd {
            let cost = Phrase::new(Text::CostForHours)
                .with("usd", Arg::Number(usd, 0))
                .with("hours", Arg::Number(offer.hours, 1));
            said.push(cost);
        }
        Phrase::verbatim(Arg::List(said, Join::Nothing))
    } else if parts.is_empty() {
        Phrase::new(Text::OnAParWithYours)
    } else {
        Phrase::new(Text::ComparedWithYours).with("parts", Arg::List(parts, Join::And))
    }
}

/// A candidate in a few words (`2 × p5.48xlarge, BF16 + ckpt full, ZeRO-3,
/// mb 2`), as a phrase of the catalog: each optional part is its own text,
/// or nothing.
fn plan_summary(p: &Plan, instance: &str) -> Phrase {
    let part = |on: bool, phrase: Phrase| -> Arg {
        if on {
            Arg::from(phrase)
        } else {
            Arg::List(vec![], Join::Nothing)
        }
    };
    // A fraction of layers is a number the page's language writes (0,5).
    let mode = match p.activations.checkpointing {
        Checkpointing::Fraction(f) => Arg::Real(f),
        c => Arg::from(c.key()),
    };
    let ckpt = Phrase::new(Text::CandidateCkpt).with("mode", mode);
    let hybrid = Phrase::new(Text::CandidateHybrid).with("group", p.parallelism.shard.unwrap_or(0));
    let parallel = Phrase::new(Text::CandidateParallel)
        .with("tp", p.parallelism.tp)
        .with("pp", p.parallelism.pp)
        .with("cp", p.parallelism.cp)
        .with("ep", p.parallelism.ep);
    // Where vLLM runs: a server's GPUs, or colocated and asleep while training.
    let rollout = &p.training.rollout;
    let server = match rollout.gen_gpus {
        0 => Phrase::new(Text::CandidateAsleep),
        k => Phrase::new(Text::CandidateServer).with("gpus", k),
    };
    Phrase::new(Text::CandidatePlan)
        .with("nodes", p.hardware.nodes)
        .with("instance", instance.to_string())
        .with("precision", p.numerics.precision.key().to_ascii_uppercase())
        .with(
            "ckpt",
            part(p.activations.checkpointing != Checkpointing::None, ckpt),
        )
        .with("zero", Arg::Count(u64::from(p.parallelism.zero)))
        .with("hybrid", part(p.parallelism.shard.is_some(), hybrid))
        .with(
            "parallel",
            part(
                p.parallelism.tp * p.parallelism.pp * p.parallelism.cp * p.parallelism.ep > 1,
                parallel,
            ),
        )
        .with("mb", p.data.micro_batch)
        .with(
            "server",
            part(rollout.gen_gpus > 0 || rollout.sleep, server),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{render, Lang};

    /// A candidate's summary is a phrase, not English text (#34): the same
    /// plan reads in both catalogs, every optional part present or absent.
    #[test]
    fn plan_summaries_render_in_each_language() {
        let q = "nodes=2&zero=3&shard=8&ckpt=full&tp=2&stage=grpo&gen_gpus=1";
        let full = plan_summary(&Plan::from_query(q).plan, "p5.48xlarge");
        assert_eq!(
            render(Lang::En, &full),
            "2 × p5.48xlarge, BF16 + ckpt full, ZeRO-3 (hybrid 8), TP2 PP1 CP1 EP1, mb 1, vLLM server 1 GPU"
        );
        let ru = render(Lang::Ru, &full);
        let server = Phrase::new(Text::CandidateServer).with("gpus", 1u64);
        let hybrid = Phrase::new(Text::CandidateHybrid).with("group", 8u64);
        assert!(ru != render(Lang::En, &full), "{ru}");
        assert!(ru.contains(&render(Lang::Ru, &server)), "{ru}");
        assert!(ru.contains(&render(Lang::Ru, &hybrid)), "{ru}");
        let bare = plan_summary(&Plan::from_query("ckpt=none").plan, "p5.48xlarge");
        assert_eq!(
            render(Lang::En, &bare),
            "1 × p5.48xlarge, BF16, ZeRO-3, mb 1"
        );
        // vLLM colocated in sleep mode says so; a server's GPUs sleep never.
        let asleep = plan_summary(&Plan::from_query("stage=grpo&sleep=1").plan, "p5.48xlarge");
        assert!(render(Lang::En, &asleep).ends_with("mb 1, vLLM asleep in training"));
        let awake = plan_summary(&Plan::from_query("stage=grpo").plan, "p5.48xlarge");
        assert!(render(Lang::En, &awake).ends_with("mb 1"));
        // Half the layers recomputed: a number with the language's mark.
        let half = plan_summary(&Plan::from_query("ckpt=0.5").plan, "p5.48xlarge");
        assert!(render(Lang::En, &half).contains("ckpt 0.5"));
        assert!(render(Lang::Ru, &half).contains("ckpt 0,5"));
    }
}
