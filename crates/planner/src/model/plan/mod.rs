//! The plan: every input of SPEC §2, and its URL query form (SPEC §8).
//!
//! One parser serves the page, the CLI and the tests. Decoding is forgiving:
//! an unknown key is ignored with a notice, a bad value keeps its default with
//! a notice naming the key; nothing panics on any input.

mod choices;
mod codec;
mod encode;
mod fields;
mod lora_targets;
mod pasted;
mod types;

pub use choices::*;
pub use codec::*;
pub use fields::*;
pub use pasted::*;
pub use types::*;
