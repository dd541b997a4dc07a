//! Train Planner's model: will an LLM training job fit, how fast will it run,
//! and what will it cost on SageMaker. Pure Rust, no web dependency; shared by
//! the page (wasm32), the `plan` CLI and the tests.

pub mod accuracy;
pub mod accuracy_docs;
pub mod architecture;
pub mod bundle;
pub mod calibration;
pub mod case;
pub mod compare;
pub mod cost;
pub mod coverage;
pub mod decimal;
pub mod envelope;
pub mod evaluate;
pub mod export;
pub mod fabric;
pub mod fit;
pub mod hardware;
pub mod host;
pub mod job;
pub mod json;
pub mod json_writer;
pub mod kernels;
pub mod labels;
pub mod launchers;
pub mod layout;
pub mod measured;
pub mod megatron_bridge;
pub mod memory;
pub mod memory_checks;
pub mod model_tables;
pub mod plan;
pub mod post_training;
pub mod published;
pub mod report;
pub mod resolve;
pub mod rollout;
pub mod rope;
pub mod rules;
pub mod search;
pub mod sequence_bands;
pub mod table;
pub mod text;
pub mod throughput;
pub mod warnings;
pub mod zip;

pub use evaluate::evaluate;
pub use plan::{Decoded, Plan};
pub use report::Report;
