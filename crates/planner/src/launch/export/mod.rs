//! SageMaker launch code for a plan: pure string building.
//!
//! Formats: the SDK v2 `PyTorch` and `HuggingFace` estimators, SDK v3
//! `ModelTrainer`, and the matching `transformers.TrainingArguments` (with a
//! TransformerEngine recipe for FP8), and a SageMaker HyperPod job's
//! `config.yaml` (`hyperpod`). Framework versions come from the SDK's
//! own image_uri_config (data/sdk.json). Every user-typed string goes through
//! `py_str`, so nothing typed can leave its literal.

mod code;
mod context;
mod estimators;
pub mod hyperpod;
mod model_trainer;
mod python;

pub use code::*;
pub use context::*;
pub use python::*;
