//! Candidates a block need not evaluate: each is at least as slow as
//! another, at the same price per hour, that is known to fit. Inside a block
//! only the fastest plan counts (mod.rs), so skipping them changes no
//! answer; each rule is a property of the model that tests/properties.rs
//! checks on random plans.
//!
//! - Recomputation never makes a step faster where nothing is offloaded
//!   (`recomputation_never_speeds_a_step_up`): a checkpointed plan is
//!   dominated by the same plan without recomputation.
//! - A fused loss never makes a step slower (`a_fused_loss_never_slows_a_step`):
//!   a plain-loss plan is dominated by the same plan with the fused loss.
//! - ZeRO-2 takes exactly ZeRO-1's time outside GRPO and offloading
//!   (`zero_two_takes_zero_one_s_time`): a ZeRO-2 plan is dominated by the
//!   same plan under ZeRO-1, found first (the first of equals stays).
//!
//! Dominance is transitive: a candidate skipped as dominated counts as
//! covered, since what dominates it fits.

use crate::model::plan::{Checkpointing, Loss};

/// One block's candidates by (checkpointing, loss, micro-batch), as
/// `Space::inner_len` orders them.
pub(super) struct Dominance {
    losses: usize,
    mbs: usize,
    /// Where in the space no recomputation and the fused loss are.
    none: Option<usize>,
    fused: Option<usize>,
    /// Whether recomputation can be dominated (nothing is offloaded).
    recompute_rule: bool,
    /// Each candidate fits, or is dominated by one that fits.
    pub(super) covered: Vec<bool>,
    /// The same block under ZeRO-1, when this one is its ZeRO-2 twin.
    zero_one: Option<Vec<bool>>,
}

impl Dominance {
    pub(super) fn new(ckpts: &[Checkpointing], losses: &[Loss], mbs: usize) -> Dominance {
        Dominance {
            losses: losses.len(),
            mbs,
            none: ckpts.iter().position(|&c| c == Checkpointing::None),
            fused: losses.iter().position(|&l| l == Loss::Fused),
            recompute_rule: false,
            covered: vec![false; ckpts.len() * losses.len() * mbs],
            zero_one: None,
        }
    }

    /// The rules that hold for the search's plans: recomputation's where
    /// nothing is offloaded, and ZeRO-1's `covered` for its ZeRO-2 twin.
    pub(super) fn with(mut self, offload: bool, zero_one: Option<Vec<bool>>) -> Dominance {
        self.recompute_rule = !offload;
        self.zero_one = zero_one;
        self
    }

    pub(super) fn at(&self, ci: usize, li: usize, mi: usize) -> usize {
        (ci * self.losses + li) * self.mbs + mi
    }

    /// Whether the candidate is dominated by one that fits; if so it is
    /// covered too.
    pub(super) fn skips(&mut self, (ci, li, mi): (usize, usize, usize)) -> bool {
        let covered = |c: Option<usize>, l: Option<usize>| match (c, l) {
            (Some(c), Some(l)) => self.covered[self.at(c, l, mi)],
            _ => false,
        };
        let at = self.at(ci, li, mi);
        let dominated =
            (self.recompute_rule && self.none != Some(ci) && covered(self.none, Some(li)))
                || (self.fused != Some(li) && covered(Some(ci), self.fused))
                || self.zero_one.as_ref().is_some_and(|z| z[at]);
        self.covered[at] |= dominated;
        dominated
    }
}
