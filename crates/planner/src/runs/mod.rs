//! Finished runs set beside the estimate: the line the bundle's train.py
//! prints when it ends, and published post-training (DPO, GRPO) runs.

pub mod measured;
pub mod post_training;
pub mod readme;
