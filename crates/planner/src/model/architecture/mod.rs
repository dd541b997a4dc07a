//! Model shapes: presets, custom architectures, the "N billion parameters"
//! quick size, Hugging Face `config.json` import, and exact parameter counts.
//!
//! Counting follows SPEC §3.1: attention `h*a*d + 2*h*k*d + a*d*h` (+ biases),
//! gated MLP `3*h*f` or plain `2*h*f`, norms, embedding `V*h`, LM head `V*h`
//! unless tied, final norm `h`; MoE counts every expert for the total and only
//! the routed top-k (+ shared experts) for the active count.

mod counts;
mod hf_config;
mod presets;
pub mod rope;
mod types;

pub use hf_config::*;
pub use presets::*;
pub use types::*;
