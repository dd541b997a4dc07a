//! What a set of checks ran, and where a plan leaves it (#25, #36). A
//! figure is labelled by its checks only inside their envelope; outside, it
//! is "extrapolated" along the axes it leaves.
//!
//! Beside the ranges every check has (sequence, micro-batch, GPUs, model
//! size) and the choices that decide which checks apply (precision,
//! training, ZeRO stage, hybrid sharding), the envelope keeps every other
//! setting that can move a figure, as the checks ran it (`SETTINGS`: the
//! attention kernel, checkpointing, the optimizer, the model's shape and
//! family, precision x training, the MoE dispatcher, CUDA graphs, overlap
//! flags, imbalance, the pipeline's accumulation and virtual stages that
//! set its bubble, ...). A plan outside along one of those is extrapolated
//! only where putting that setting back to what the checks ran moves its
//! figure by more than the label's ± (`evaluate`'s `material`): a setting
//! the figure does not depend on is inside what the checks vouch for.

mod check;
mod settings;
mod types;

pub use settings::*;
pub use types::*;
