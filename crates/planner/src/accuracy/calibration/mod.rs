//! Published training throughput (data/calibration.csv, a copy of
//! ../shared/data/calibration.csv) and the model's error on it.

mod fitting;
mod held_out;
mod hf_rows;
mod rows;

pub use fitting::*;
pub use held_out::*;
pub use hf_rows::*;
pub use rows::*;
