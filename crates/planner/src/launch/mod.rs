//! What the user takes away: SageMaker launch code for the plan and the
//! launch bundle (train.py, grpo.py, the Megatron-Bridge launcher and their
//! settings).

pub mod bundle;
pub mod export;
pub mod megatron_bridge;
