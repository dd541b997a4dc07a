//! The step's moments: every term of one stage, the overheads on top
//! (SPEC §3.4), and the totals at each moment whose largest is the peak.

use super::activations::{
    autocast_casts, dequantized_weight, eager_backward_extra, full_layer_bytes,
    in_flight_micro_batches, mlp_backward_transient, recompute_working_set, saved_activations,
    scores_per_token, SavedActivations,
};
use super::loss::{
    accumulated_gradients, final_norm, foreach_temporaries, head_gradient, head_gradient_in_loss,
    logits_and_loss, persistent_gradient_buffer, tied_embedding_gradient, LOSS_FORWARD_SHARE,
};
use super::parts::{Phase, Term};
use super::shape::MemoryShape;
use super::sharding::{fsdp2_units, Fsdp2Units};
use super::states::{
    adapters, gradients, master_weights, optimizer_states, reference_weights, unsharded_unit,
    weight_copies, weights,
};

// ---- overheads (SPEC §3.4) ----------------------------------------------------

// ---- the step's moments ------------------------------------------------------

/// Every term of one stage, before the peak is taken.
pub(super) struct Terms {
    pub(super) weights: f64,
    pub(super) gradients: f64,
    pub(super) master: f64,
    pub(super) optimizer: f64,
    pub(super) copies: f64,
    pub(super) adapters: f64,
    pub(super) reference: f64,
    pub(super) unsharded: f64,
    pub(super) fsdp: Fsdp2Units,
    /// One layer's saved activations and, of them, its scores (none when
    /// layers are recomputed).
    pub(super) freed_by_layer: (f64, f64),
    pub(super) saved: SavedActivations,
    pub(super) recompute: f64,
    pub(super) eager_backward: f64,
    pub(super) mlp_backward: f64,
    /// QLoRA: one 4-bit Linear's weight dequantized to BF16.
    pub(super) dequantized: f64,
    pub(super) casts: f64,
    pub(super) final_norm: f64,
    pub(super) logits: f64,
    pub(super) head_grad: f64,
    pub(super) head_grad_in_loss: f64,
    pub(super) tied_grad: f64,
    pub(super) foreach: f64,
    /// Gradients alive during the backward's early moments: Megatron keeps
    /// one gradient buffer (fp32 `main_grad`) allocated for the whole step.
    pub(super) grads_during_backward: f64,
    /// The earlier micro-batches' gradients, alive through the last one's
    /// forward and backward (gradient accumulation, where no buffer holds
    /// them anyway).
    pub(super) accumulated: f64,
    /// Decoder layers on this stage.
    pub(super) layers: f64,
}

impl Terms {
    pub(super) fn of(s: &MemoryShape) -> Terms {
        let weights = weights(s);
        Terms {
            weights,
            gradients: gradients(s),
            master: master_weights(s),
            optimizer: optimizer_states(s),
            copies: weight_copies(s),
            adapters: adapters(s),
            reference: reference_weights(s),
            unsharded: unsharded_unit(s),
            fsdp: fsdp2_units(s),
            freed_by_layer: if s.recomputed() == 0.0 {
                let n = in_flight_micro_batches(s);
                (full_layer_bytes(s) * n, s.tokens * scores_per_token(s) * n)
            } else {
                (0.0, 0.0)
            },
            saved: saved_activations(s),
            recompute: recompute_working_set(s),
            eager_backward: eager_backward_extra(s),
            mlp_backward: mlp_backward_transient(s),
            dequantized: dequantized_weight(s),
            casts: autocast_casts(s),
            final_norm: final_norm(s),
            logits: logits_and_loss(s),
            head_grad: head_gradient(s),
            head_grad_in_loss: head_gradient_in_loss(s),
            tied_grad: tied_embedding_gradient(s),
            foreach: foreach_temporaries(s, weights),
            grads_during_backward: persistent_gradient_buffer(s),
            accumulated: accumulated_gradients(s),
            layers: s.layers,
        }
    }

    /// The last layer's recompute and backward, early in the backward.
    fn layer_backward(&self) -> f64 {
        let a = &self.saved;
        self.states()
            + self.unsharded
            + self.fsdp.layer
            + self.casts
            + a.activations
            + a.scores
            + self.recompute
            + self.eager_backward.max(self.mlp_backward)
            + self.dequantized
            + self.grads_with(self.head_grad)
    }

    /// The gradients alive beside a `transient` one still being computed:
    /// Megatron's and DDP's buffer holds it; accumulated gradients do not
    /// (autograd adds the new gradient into them, then frees it).
    fn grads_with(&self, transient: f64) -> f64 {
        transient.max(self.grads_during_backward) + self.accumulated
    }

    /// A layer's reduce-scatter, early or late in backward (`scatter_is_late`):
    /// the gradients alive, and the activations and scores kept beside the
    /// layer's recompute and eager attention's backward.
    fn scatter_parts(&self) -> (f64, f64, f64) {
        let (a, freed) = (&self.saved, self.freed_by_layer);
        if self.scatter_is_late(self.layer_backward()) {
            let one = self.layers.max(1.0);
            let grads = self.head_grad + self.late_gradients();
            (grads, a.activations / one, a.scores / one)
        } else {
            let grads = self.grads_with(self.head_grad);
            (
                grads,
                a.activations - (freed.0 - freed.1),
                a.scores - freed.1,
            )
        }
    }

    /// FSDP2, the first decoder layer's backward (the last to run) while
    /// the second's gradient is reduce-scattered: every other layer's
    /// sharded gradient is reduced and kept, one layer's activations are
    /// left. With a long model on few ranks the sharded gradients outgrow
    /// the activations and this is the peak (oracle:
    /// `llama-3.1-70b/zero3/80-layers,world=16,...`: 78 sharded gradients,
    /// the fp32 reduce-scatter input, the layer's recompute).
    pub(super) fn late_scatter(&self) -> f64 {
        if self.fsdp.scatter == 0.0 || self.layers < 2.0 {
            return 0.0;
        }
        self.states()
            + self.unsharded
            + self.fsdp.layer
            + self.fsdp.scatter
            + self.casts
            + self.late_activations()
            + self.recompute
            + self.eager_backward.max(self.mlp_backward)
            - self.mlp_gone_at_scatter()
            + self.dequantized
            + self.head_grad
            + self.late_gradients()
    }

    /// The sharded gradients of all but the last two layers to run (all of
    /// them when earlier micro-batches made them).
    fn late_gradients(&self) -> f64 {
        if self.accumulated > 0.0 {
            return self.accumulated;
        }
        self.gradients * (self.layers - 2.0) / self.layers
    }

    /// One layer's saved activations and scores.
    fn late_activations(&self) -> f64 {
        (self.saved.activations + self.saved.scores) / self.layers
    }

    /// A layer's reduce-scatter: early in backward (all activations, few
    /// gradients) or at its end (all gradients, one layer's activations),
    /// whichever holds more.
    fn scatter_is_late(&self, layer_backward: f64) -> bool {
        self.late_scatter() > self.post_backward(layer_backward)
    }

    /// The states term by term (`states`), in the breakdown's order.
    pub(super) fn resident(&self) -> Vec<(Term, f64)> {
        let mut terms = vec![
            (Term::Weights, self.weights),
            (Term::MasterWeights, self.master),
            (Term::OptimizerStates, self.optimizer),
            (Term::WeightCopies, self.copies),
            (Term::Adapters, self.adapters),
        ];
        if self.reference > 0.0 {
            terms.push((Term::Reference, self.reference));
        }
        terms
    }

    /// States alive at every moment (gradients come and go).
    pub(super) fn states(&self) -> f64 {
        self.weights + self.master + self.optimizer + self.copies + self.adapters + self.reference
    }

    /// FSDP2, the end of forward: the loss's forward buffers (logits, their
    /// fp32 copy, log-softmax: 10 of the backward's 12 B per element) with
    /// what FSDP2 still holds; it matters for ZeRO-2 alone.
    pub(super) fn loss_forward(&self) -> f64 {
        if self.fsdp.forward == 0.0 {
            return 0.0;
        }
        let a = &self.saved;
        self.states()
            + self.accumulated
            + self.fsdp.forward
            + self.casts
            + a.activations
            + a.scores
            + self.final_norm
            + self.logits * LOSS_FORWARD_SHARE
    }

    /// FSDP2, a layer's backward while the previous layer's gradient is
    /// reduce-scattered: that layer's saved activations (when not
    /// recomputed) are freed, and without recomputation the scatter's
    /// buffers are gone before the MLP's gradients grow (oracle:
    /// `mistral-7b/zero3/*`).
    pub(super) fn post_backward(&self, layer_backward: f64) -> f64 {
        if self.fsdp.scatter == 0.0 {
            return 0.0;
        }
        layer_backward + self.fsdp.scatter - self.freed_by_layer.0 - self.mlp_gone_at_scatter()
    }

    /// The MLP's backward gradients beyond eager attention's, and whether
    /// they coexist with the previous layer's reduce-scatter.
    pub(super) fn mlp_gone_at_scatter(&self) -> f64 {
        if self.freed_by_layer.0 > 0.0 {
            self.mlp_beyond_eager()
        } else {
            0.0
        }
    }

    pub(super) fn mlp_beyond_eager(&self) -> f64 {
        (self.mlp_backward - self.eager_backward).max(0.0)
    }

    /// Bytes alive at each of the step's moments: the loss's backward
    /// (grads freed by `zero_grad(set_to_none=True)`, but for the earlier
    /// micro-batches' under gradient accumulation), the last checkpointed
    /// layer's recompute, the end of backward, the optimizer step.
    pub(super) fn totals(&self) -> [(Phase, f64); 7] {
        let (t, a) = (self, &self.saved);
        let states = t.states();
        let layer_backward = t.layer_backward();
        [
            (Phase::RootAllGather, states + t.accumulated + t.fsdp.start),
            (Phase::LossForward, self.loss_forward()),
            (
                Phase::LossBackward,
                states
                    + t.unsharded
                    + t.fsdp.loss
                    + t.casts
                    + a.activations
                    + a.scores
                    + t.final_norm
                    + t.logits
                    + t.grads_with(t.head_grad_in_loss),
            ),
            (Phase::LayerBackward, layer_backward),
            (
                Phase::LayerReduceScatter,
                self.post_backward(layer_backward).max(self.late_scatter()),
            ),
            (
                Phase::EndOfBackward,
                states + t.gradients + t.unsharded + t.fsdp.end + t.tied_grad,
            ),
            (Phase::OptimizerStep, states + t.gradients + t.foreach),
        ]
    }

    /// `totals` adds each moment up by hand (it runs for every candidate of
    /// the auto-plan, where collecting `at`'s terms costs ~45% of the search);
    /// debug builds (every test) hold each moment to the sum of its terms.
    #[cfg(debug_assertions)]
    pub(super) fn check_totals(&self, moments: &[(Phase, f64)]) {
        for &(phase, total) in moments {
            if total == 0.0 {
                continue; // a moment FSDP2 alone has
            }
            let sum: f64 = self.at(phase).iter().map(|(_, b)| b).sum();
            // Rounding only: terms rounded to whole bytes part the sums by a
            // few bytes, f64 sums at 4096 x 128K tokens by 1.5e-9, and a
            // moment that subtracts freed buffers from ~1e17-byte ones (1,024
            // experts of width 1M at micro-batch 4096) by their last bits.
            let scale = self.saved.activations + self.mlp_backward + self.freed_by_layer.0;
            let tolerance = 1e-8 * sum.abs() + 16.0 + 1e-13 * scale.abs();
            debug_assert!(
                (total - sum).abs() <= tolerance,
                "{phase:?}: {total} vs {sum}"
            );
        }
    }

    /// The terms alive at `phase`, in the breakdown's order.
    pub(super) fn at(&self, phase: Phase) -> Vec<(Term, f64)> {
        let (t, a) = (self, &self.saved);
        let scatter = if phase == Phase::LayerReduceScatter {
            t.scatter_parts()
        } else {
            (0.0, 0.0, 0.0)
        };
        let (grads, copies, more): (f64, f64, &[(Term, f64)]) = match phase {
            Phase::RootAllGather => (
                t.accumulated,
                t.copies,
                &[(Term::UnshardedUnit, t.fsdp.start)],
            ),
            Phase::LossForward => (
                t.accumulated,
                t.copies + t.casts,
                &[
                    (Term::UnshardedUnit, t.fsdp.forward),
                    (Term::Activations, a.activations + t.final_norm),
                    (Term::AttentionScores, a.scores),
                    (Term::LogitsAndLoss, t.logits * LOSS_FORWARD_SHARE),
                ],
            ),
            Phase::LossBackward => (
                t.grads_with(t.head_grad_in_loss),
                t.copies + t.casts,
                &[
                    (Term::UnshardedUnit, t.unsharded + t.fsdp.loss),
                    (Term::Activations, a.activations + t.final_norm),
                    (Term::AttentionScores, a.scores),
                    (Term::LogitsAndLoss, t.logits),
                ],
            ),
            Phase::LayerBackward => (
                t.grads_with(t.head_grad),
                t.copies + t.casts,
                &[
                    (Term::UnshardedUnit, t.unsharded + t.fsdp.layer),
                    (Term::Activations, a.activations + t.recompute),
                    (Term::AttentionScores, a.scores + t.eager_backward),
                    (Term::Transient, t.mlp_beyond_eager() + t.dequantized),
                ],
            ),
            Phase::LayerReduceScatter => (
                scatter.0,
                t.copies + t.casts,
                &[
                    (
                        Term::UnshardedUnit,
                        t.unsharded + t.fsdp.layer + t.fsdp.scatter,
                    ),
                    (Term::Activations, scatter.1 + t.recompute),
                    (Term::AttentionScores, scatter.2 + t.eager_backward),
                    (
                        Term::Transient,
                        t.mlp_beyond_eager() - t.mlp_gone_at_scatter() + t.dequantized,
                    ),
                ],
            ),
            Phase::EndOfBackward => (
                t.gradients,
                t.copies,
                &[
                    (Term::UnshardedUnit, t.unsharded + t.fsdp.end),
                    (Term::Transient, t.tied_grad),
                ],
            ),
            Phase::OptimizerStep => (t.gradients, t.copies, &[(Term::Transient, t.foreach)]),
            // The states alone (`resident`): vLLM's share is the breakdown's.
            Phase::Generation => (0.0, t.copies, &[]),
        };
        let mut terms = Vec::with_capacity(16);
        terms.extend_from_slice(&[
            (Term::Weights, t.weights),
            (Term::Gradients, grads),
            (Term::MasterWeights, t.master),
            (Term::OptimizerStates, t.optimizer),
            (Term::WeightCopies, copies),
            (Term::Adapters, t.adapters),
        ]);
        if t.reference > 0.0 {
            terms.push((Term::Reference, t.reference));
        }
        terms.extend_from_slice(more);
        terms
    }
}
