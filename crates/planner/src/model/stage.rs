//! One pipeline stage of a job as both per-GPU models see it: the decoder
//! layers it runs, whether it computes the LM head and the loss, and the
//! tokens one GPU puts through it per micro-batch. Memory (`memory::shape`)
//! and throughput (`throughput::shape`) build their own terms on it.

use crate::model::architecture::{Architecture, ParameterCounts};
use crate::model::layout::Layout;
use crate::model::recipe::Recipe;

/// Which pipeline stage a shape describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// No pipeline: embedding, all layers, head and loss.
    Only,
    /// First of `p` stages: embedding, `min(p, m)` micro-batches in flight.
    First,
    /// The second rank: a middle stage, `min(p-1, m)` micro-batches in
    /// flight (more loaded than the first when the embedding takes a slot).
    Second,
    /// Last stage: head, final norm, loss; one micro-batch in flight, or
    /// `(vp - 1) p + 1` chunks under the interleaved schedule.
    Last,
}

impl Stage {
    /// This stage of a pipelined layout; the whole model (`Only`) without
    /// a pipeline.
    pub fn or_only(self, layout: &Layout) -> Stage {
        if layout.pp > 1 {
            self
        } else {
            Stage::Only
        }
    }
}

/// One pipeline stage of a job, and the work one GPU does on it per
/// micro-batch.
#[derive(Clone, Copy)]
pub struct StageShape<'a> {
    pub arch: &'a Architecture,
    pub counts: &'a ParameterCounts,
    pub recipe: &'a Recipe,
    pub layout: &'a Layout,
    pub stage: Stage,
    /// Tensor-parallel degree.
    pub t: f64,
    /// Decoder layers on this stage, the multi-token-prediction layers
    /// included on the stage that computes the head.
    pub layers: f64,
    /// Multi-token-prediction layers on this stage (DeepSeek-V3 report §2.2).
    pub mtp: f64,
    /// Whether this stage computes the LM head and the loss.
    pub has_head: bool,
    /// Tokens per GPU per micro-batch (CP splits the sequence).
    pub tokens: f64,
    /// Of those, the tokens whose logits the loss takes (`Recipe::logit_tokens`).
    pub logit_tokens: f64,
}

impl<'a> StageShape<'a> {
    pub fn new(
        arch: &'a Architecture,
        counts: &'a ParameterCounts,
        recipe: &'a Recipe,
        layout: &'a Layout,
        stage: Stage,
    ) -> Self {
        let layers = match stage {
            Stage::Only => arch.layers,
            Stage::First => layout.stages.first,
            Stage::Second => layout.stages.middle,
            Stage::Last => layout.stages.last,
        } as f64;
        // The last stage also runs the multi-token-prediction layers.
        let has_head = matches!(stage, Stage::Only | Stage::Last);
        let mtp = if has_head {
            recipe.training.mtp as f64
        } else {
            0.0
        };
        let cp = layout.cp.max(1) as f64;
        StageShape {
            arch,
            counts,
            recipe,
            layout,
            stage,
            t: layout.tp.max(1) as f64,
            layers: layers + mtp,
            mtp,
            has_head,
            tokens: recipe.rows_per_micro_batch() as f64 * recipe.data.seq as f64 / cp,
            logit_tokens: recipe.logit_tokens() as f64 / cp,
        }
    }

    /// Fraction of the layers recomputed.
    pub fn recomputed(&self) -> f64 {
        self.recipe.activations.checkpointing.recomputed_fraction()
    }
}
