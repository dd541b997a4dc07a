//! The physics of one training job: the plan the user sets, the job it
//! resolves to, the model's architecture and the hardware it runs on, and
//! from them memory per GPU, step time and cost.

pub mod architecture;
pub mod cost;
pub mod fabric;
pub mod failures;
pub mod fit;
pub mod hardware;
pub mod host;
pub mod job;
pub mod kernels;
pub mod layout;
pub mod memory;
pub mod plan;
pub mod recipe;
pub mod resolve;
pub mod rollout;
pub mod rules;
pub mod stage;
pub mod throughput;
